// An Executor on the CPU backend over the tiny training plan of training_test_util.h, one step of
// it on seeded input, and the bytes of everything a checkpoint saves: what the checkpoint tests
// compare before and after a save, a resume or a refused file.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/training_test_util.h"

namespace a8::testing {

inline std::unique_ptr<Executor> MakeTrainExecutor(const TrainPlanOptions& o = {}) {
  auto ex = Executor::Create(BuildTrainPlan(o), MakeCpuBackend());
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  return std::move(ex).value();
}

inline void TrainStep(Executor& ex, uint32_t seed) {
  std::vector<float> x = RandomNormals(4, seed);
  ASSERT_TRUE(ex.SetInput("x", x.data(), 16).ok());
  ASSERT_TRUE(ex.Run().ok());
}

inline std::string PersistentBytes(const Executor& ex) {
  std::string out;
  for (int id : ex.checkpoint_buffers())
    out.append(reinterpret_cast<const char*>(ex.BufferData(id)), ex.plan().buffers(id).bytes());
  return out;
}

}  // namespace a8::testing
