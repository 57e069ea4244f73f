// Compiles an example model (build/models, or $A8_MODELS_DIR as ctest sets it) as a training
// plan through the driver, for tests that inspect or run real training plans.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "compiler/plan/plan_file.h"
#include "driver/driver.h"

namespace a8::testing {

inline std::string ModelsDir() {
  if (const char* env = std::getenv("A8_MODELS_DIR")) return env;
  return "build/models";
}

// `model` ("mlp") at `batch`, trained with `training`; a GoogleTest failure and an empty plan
// when it does not compile.
inline PlanFile CompileTrainingPlan(const std::string& model, int64_t batch,
                                    const TrainingConfig& training) {
  CompileOptions opts;
  opts.model = ModelsDir() + "/" + model + ".onnx";
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("a8_compile_test_util_" + std::to_string(::getpid()) + ".plan"))
                              .string();
  opts.output = out;
  opts.import.batch = batch;
  opts.config.training = training;
  std::ostringstream stdout_stream;
  Status s = Compile(opts, stdout_stream, [](const std::string&) {});
  EXPECT_TRUE(s.ok()) << s.message();
  auto pf = ReadPlanFile(out);
  EXPECT_TRUE(pf.ok()) << pf.status().message();
  std::filesystem::remove(out);
  return pf.ok() ? std::move(pf).value() : PlanFile{};
}

}  // namespace a8::testing
