// Initial values kept where ReadPlanFile put them (runtime/core/initial_values.h): which buffers
// stay in the plan's memory and which fall back to the copy, and an AdamW amp training plan that
// trains to the same bytes whether its weights stay in the file's memory or are copied.
#include "runtime/core/initial_values.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/plan/plan_file.h"
#include "driver/driver.h"
#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/plan_proto_util.h"
#include "tests/unit/temp_path_util.h"

namespace a8 {
namespace {

// Persistent buffers: w (init, offset 0, 64 bytes), w.next (w's in-place update result, offset
// 16, 32 bytes), m (zero state, offset 64), blob = w's 64 bytes as one writable piece.
PlanFile ThreeBuffers(std::shared_ptr<std::vector<uint8_t>>* memory) {
  PlanFile pf;
  plan::Plan& p = pf.plan;
  auto add = [&](const char* name, uint64_t offset, int64_t elems) {
    return testing::AddPlanBuffer(p, name, plan::F32, {elems}, plan::Buffer::PERSISTENT,
                                  plan::Buffer::STATE, offset, -1, 0);
  };
  plan::Buffer* w = add("w", 0, 16);
  w->set_has_init(true);
  w->set_blob_offset(0);
  add("w.next", 16, 8);
  add("m", 64, 16);
  *memory = std::make_shared<std::vector<uint8_t>>(64, 7);
  pf.pieces.push_back(PlanBlobPiece{0, std::span<const uint8_t>((*memory)->data(), 64), *memory,
                                    /*writable=*/true});
  pf.pieces_size = 64;
  return pf;
}

TEST(InitialValuesTest, BuffersInsideOneWithAValueStayWithIt) {
  std::shared_ptr<std::vector<uint8_t>> memory;
  PlanFile pf = ThreeBuffers(&memory);
  uint8_t* const base = memory->data();
  memory.reset();  // the PlanFile holds the only reference
  auto where = InitialValuesInPlace(pf);
  ASSERT_TRUE(where.has_value());
  ASSERT_EQ(where->size(), 3u);
  EXPECT_EQ((*where)[0], base);
  EXPECT_EQ((*where)[1], base + 16);
  EXPECT_EQ((*where)[2], nullptr);  // zero state: in the region
}

TEST(InitialValuesTest, FallsBackToTheCopy) {
  {  // another holder of the memory would see the executor's writes
    std::shared_ptr<std::vector<uint8_t>> memory;
    PlanFile pf = ThreeBuffers(&memory);
    EXPECT_FALSE(InitialValuesInPlace(pf).has_value());
    memory.reset();
    EXPECT_TRUE(InitialValuesInPlace(pf).has_value());
    PlanFile copy = pf;
    EXPECT_FALSE(InitialValuesInPlace(pf).has_value());
  }
  {  // memory that is not the plan's own (the compiler's tensors)
    std::shared_ptr<std::vector<uint8_t>> memory;
    PlanFile pf = ThreeBuffers(&memory);
    memory.reset();
    pf.pieces[0].writable = false;
    EXPECT_FALSE(InitialValuesInPlace(pf).has_value());
  }
  {  // a buffer partly inside the one with a value
    std::shared_ptr<std::vector<uint8_t>> memory;
    PlanFile pf = ThreeBuffers(&memory);
    memory.reset();
    pf.plan.mutable_buffers(2)->set_offset(48);
    EXPECT_FALSE(InitialValuesInPlace(pf).has_value());
    pf.plan.mutable_buffers(2)->set_offset(64);
    pf.plan.mutable_buffers(1)->set_offset(40);  // 40 + 32 > 64
    EXPECT_FALSE(InitialValuesInPlace(pf).has_value());
  }
  {  // a blob copied into the PlanFile (ParsePlan): no pieces
    PlanFile pf;
    pf.blob.assign(64, 0);
    EXPECT_FALSE(InitialValuesInPlace(pf).has_value());
  }
}

// net (x f32[4, 8]) -> y f32[4, 5]: MatMul, Add, Relu, MatMul; weights deterministic, not zeros.
std::string Model() {
  auto values = [](int n, int salt) {
    std::string out;
    for (int i = 0; i < n; ++i) {
      out += (i ? ", " : "") + std::to_string(0.05 * ((i * 7 + salt) % 13 - 6));
    }
    return out;
  };
  return std::string(R"(<
  ir_version: 8,
  opset_import: ["" : 17]
>
net (float[4, 8] x) => (float[4, 5] y)
<float[8, 16] w1 = {)") +
         values(128, 1) + "}, float[16] b1 = {" + values(16, 2) + "}, float[16, 5] w2 = {" +
         values(80, 3) + R"(}>
{
  h = MatMul(x, w1)
  hb = Add(h, b1)
  r = Relu(hb)
  y = MatMul(r, w2)
}
)";
}

// Three AdamW amp steps from `file`; the bytes of every persistent buffer after them.
std::vector<std::vector<uint8_t>> Train(PlanFile file, bool expect_in_place) {
  // The span only: a copy of the piece would hold its memory too (and the executor would copy).
  const std::span<const uint8_t> blob = file.pieces.at(0).bytes;
  auto ex = Executor::Create(std::move(file), MakeCpuBackend(), {});
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  if (!ex.ok()) return {};
  const plan::Plan& p = (*ex)->plan();
  for (const plan::Buffer& b : p.buffers()) {
    if (!b.has_init()) continue;
    const bool inside = (*ex)->BufferData(b.id()) >= blob.data() &&
                        (*ex)->BufferData(b.id()) < blob.data() + blob.size();
    EXPECT_EQ(inside, expect_in_place) << b.name();
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(4 * 8);
  std::vector<int64_t> labels = {0, 3, 4, 1};
  for (int step = 0; step < 3; ++step) {
    for (float& v : x) v = u(rng);
    EXPECT_TRUE((*ex)->SetInput("x", x.data(), x.size() * sizeof(float)).ok());
    for (const plan::Binding& in : p.inputs()) {
      if (in.name() != "x") {
        EXPECT_TRUE((*ex)->SetInput(in.name(), labels.data(), labels.size() * 8).ok());
      }
    }
    Status s = (*ex)->Run();
    EXPECT_TRUE(s.ok()) << s.message();
  }
  std::vector<std::vector<uint8_t>> out;
  for (const plan::Buffer& b : p.buffers()) {
    if (b.region() != plan::Buffer::PERSISTENT) continue;
    std::vector<uint8_t> bytes(b.bytes());
    EXPECT_TRUE((*ex)->ReadBuffer(b.id(), bytes.data()).ok());
    out.push_back(std::move(bytes));
  }
  return out;
}

TEST(InitialValuesTest, TrainingInPlaceEqualsTrainingOnACopy) {
  const std::string model = testing::UniqueTempPath("net.onnxtxt");
  const std::string plan_path = testing::UniqueTempPath("net.plan");
  std::ofstream(model) << Model();
  CompileOptions opts;
  opts.model = model;
  opts.output = plan_path;
  TrainingConfig t;
  t.loss = "cross_entropy";
  t.optimizer = "adamw";
  t.lr = 0.01f;
  opts.config.training = t;
  opts.config.precision = PrecisionConfig{};  // amp: FP16 working copies made at load
  Status s = Compile(opts, std::cout, [](const std::string&) {});
  ASSERT_TRUE(s.ok()) << s.message();

  auto in_place = ReadPlanFile(plan_path);
  ASSERT_TRUE(in_place.ok()) << in_place.status().message();
  ASSERT_EQ(in_place->pieces.size(), 1u);
  EXPECT_TRUE(in_place->pieces[0].writable);
  auto copied = ReadPlanFile(plan_path);
  ASSERT_TRUE(copied.ok());
  PlanFile holder = *copied;  // a second holder: the executor must copy
  const std::vector<std::vector<uint8_t>> a = Train(std::move(in_place).value(), true);
  const std::vector<std::vector<uint8_t>> b = Train(std::move(copied).value(), false);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  // The holder's blob still has the initial values: the copying executor never wrote into it.
  auto fresh = ReadPlanFile(plan_path);
  ASSERT_TRUE(fresh.ok());
  ASSERT_EQ(holder.pieces.size(), 1u);
  EXPECT_EQ(std::memcmp(holder.pieces[0].bytes.data(), fresh->pieces[0].bytes.data(),
                        fresh->pieces[0].bytes.size()),
            0);
  // And training changed the weights (the comparison above is not of two untouched copies).
  bool changed = false;
  for (const plan::Buffer& buf : fresh->plan.buffers()) {
    if (!buf.has_init() || buf.role() != plan::Buffer::PARAMETER) continue;
    int k = 0;
    for (const plan::Buffer& c : fresh->plan.buffers()) {
      if (c.region() != plan::Buffer::PERSISTENT) continue;
      if (c.id() == buf.id()) {
        const uint8_t* init = fresh->BlobBytes(buf.blob_offset(), buf.bytes());
        changed |= std::memcmp(init, a[k].data(), buf.bytes()) != 0;
      }
      ++k;
    }
  }
  EXPECT_TRUE(changed);
}

}  // namespace
}  // namespace a8
