// Datasets: batching along axis 0, the epoch order (identity or a permutation that depends only
// on seed and epoch), the dropped incomplete batch, wrapped batches for evaluation, and the
// errors before training starts, each naming the flag, the file and the input.
#include "runtime/core/dataset.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/runtime_test_util.h"
#include "tests/unit/temp_path_util.h"

namespace a8 {
namespace {

using testing::PlanBuilder;
using Role = plan::Buffer;
using Files = std::vector<std::pair<std::string, std::string>>;

// A training plan with inputs x f32[B,3] and labels y i64[B] (no kernels: only the binding
// matters here).
PlanFile TwoInputPlan(int64_t batch) {
  PlanBuilder pb;
  pb.Buffer("x", DType::kF32, {batch, 3}, Role::INPUT);
  pb.Buffer("y", DType::kI64, {batch}, Role::INPUT);
  PlanFile f = pb.Finish();
  f.plan.set_training(true);
  f.plan.mutable_train()->set_labels("y");
  f.plan.mutable_train()->set_step_buffer(-1);
  f.plan.mutable_train()->set_control_buffer(-1);
  return f;
}

std::string Path(const std::string& name) { return a8::testing::UniqueTempPath(name); }

// x[i] = (i, i + 0.25, i + 0.5), y[i] = i: a sample's index can be read back from either.
void WriteData(int64_t n, const std::string& tag) {
  std::vector<float> x;
  std::vector<int64_t> y(static_cast<size_t>(n));
  std::iota(y.begin(), y.end(), 0);
  for (int64_t i = 0; i < n; ++i)
    for (float d : {0.0f, 0.25f, 0.5f}) x.push_back(static_cast<float>(i) + d);
  ASSERT_TRUE(WriteNpyFile(Path(tag + "_x.npy"), DType::kF32, {n, 3}, x.data()).ok());
  ASSERT_TRUE(WriteNpyFile(Path(tag + "_y.npy"), DType::kI64, {n}, y.data()).ok());
}

struct Fixture {
  std::unique_ptr<Executor> ex;
  Dataset data;
};

Fixture Load(int64_t batch, int64_t n, const std::string& tag, DatasetOptions opts = {}) {
  WriteData(n, tag);
  auto ex = Executor::Create(TwoInputPlan(batch), MakeCpuBackend());
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  auto d = Dataset::Load((*ex)->plan(), {{"x", Path(tag + "_x.npy")}, {"y", Path(tag + "_y.npy")}},
                         opts);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return {std::move(ex).value(), std::move(d).value()};
}

// The sample indices in the bound batch, checking that x and y stay paired.
std::vector<int64_t> Batch(const Executor& ex) {
  const float* x = reinterpret_cast<const float*>(ex.BufferData(0));
  const int64_t* y = reinterpret_cast<const int64_t*>(ex.BufferData(1));
  int64_t b = ex.plan().buffers(1).type().dims(0);
  std::vector<int64_t> out;
  for (int64_t j = 0; j < b; ++j) {
    EXPECT_EQ(x[3 * j], static_cast<float>(y[j]));
    EXPECT_EQ(x[3 * j + 2], static_cast<float>(y[j]) + 0.5f);
    out.push_back(y[j]);
  }
  return out;
}

TEST(DatasetTest, IdentityOrderDropsTheIncompleteBatch) {
  Fixture f = Load(4, 10, "identity");
  EXPECT_EQ(f.data.samples(), 10);
  EXPECT_EQ(f.data.batch(), 4);
  EXPECT_EQ(f.data.batches_per_epoch(), 2);
  std::vector<std::vector<int64_t>> want = {
      {0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 2, 3}};
  for (int64_t b = 0; b < 5; ++b) {
    ASSERT_TRUE(f.data.FillTrainBatch(b, false, 0, *f.ex).ok());
    EXPECT_EQ(Batch(*f.ex), want[b]) << b;
  }
}

TEST(DatasetTest, ShuffleDependsOnlyOnSeedAndEpoch) {
  Fixture a = Load(3, 11, "shuffle_a"), b = Load(3, 11, "shuffle_b");
  ASSERT_EQ(a.data.batches_per_epoch(), 3);
  // Batch 7 first (as a resumed run would), then in order: the same batches either way.
  ASSERT_TRUE(b.data.FillTrainBatch(7, true, 42, *b.ex).ok());
  std::vector<int64_t> seven = Batch(*b.ex);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t i = 0; i < 9; ++i) {
    ASSERT_TRUE(a.data.FillTrainBatch(i, true, 42, *a.ex).ok());
    batches.push_back(Batch(*a.ex));
  }
  EXPECT_EQ(batches[7], seven);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> perm = EpochPermutation(11, 42, epoch);
    std::set<int64_t> seen;
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(batches[epoch * 3 + j][k], perm[j * 3 + k]);
        seen.insert(batches[epoch * 3 + j][k]);
      }
    EXPECT_EQ(seen.size(), 9u) << "no sample twice in an epoch";
  }
  EXPECT_NE(batches[0], batches[3]) << "each epoch has its own order";
  ASSERT_TRUE(a.data.FillTrainBatch(0, true, 43, *a.ex).ok());
  EXPECT_NE(Batch(*a.ex), batches[0]) << "another seed, another order";
}

TEST(DatasetTest, EpochPermutationIsPinned) {
  // std::seed_seq and std::mt19937_64 are fully specified, and the shuffle is ours: the order
  // is the same with every standard library, so checkpoints resume anywhere.
  std::vector<int64_t> p = EpochPermutation(10, 42, 3);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(10);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_EQ(p, EpochPermutation(10, 42, 3));
  EXPECT_EQ(p, (std::vector<int64_t>{6, 5, 2, 1, 0, 3, 7, 4, 8, 9}));
}

TEST(DatasetTest, WrappedBatchesPadWithTheFirstSamples) {
  Fixture f = Load(4, 10, "wrapped", {.flag = "--eval-input"});
  std::vector<std::vector<int64_t>> want = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}};
  for (int64_t b = 0; b < 3; ++b) {
    ASSERT_TRUE(f.data.FillWrapped(b, false, 0, *f.ex).ok());
    EXPECT_EQ(Batch(*f.ex), want[b]) << b;
  }
}

TEST(DatasetTest, InferenceAllowsFewerSamplesThanABatch) {
  Fixture f = Load(4, 3, "inference", {.training = false});
  ASSERT_TRUE(f.data.FillWrapped(1, false, 0, *f.ex).ok());
  EXPECT_EQ(Batch(*f.ex), (std::vector<int64_t>{1, 2, 0, 1}));
}

struct ErrorCase {
  const char* name;
  Files files;
  std::vector<std::string> want;  // substrings of the message
};

TEST(DatasetTest, BadDataIsAnErrorNamingFileAndInput) {
  WriteData(10, "good");
  WriteData(9, "short");
  WriteData(2, "tiny");
  std::vector<float> yf(10, 1.0f);
  ASSERT_TRUE(WriteNpyFile(Path("yf.npy"), DType::kF32, {10}, yf.data()).ok());
  std::vector<int64_t> y2(20, 0);
  ASSERT_TRUE(WriteNpyFile(Path("y2.npy"), DType::kI64, {10, 2}, y2.data()).ok());
  std::vector<float> x4(40, 0.0f);
  ASSERT_TRUE(WriteNpyFile(Path("x4.npy"), DType::kF32, {10, 4}, x4.data()).ok());
  const std::string gx = Path("good_x.npy"), gy = Path("good_y.npy");
  std::vector<ErrorCase> cases = {
      {"unknown input", {{"x", gx}, {"y", gy}, {"z", gx}}, {"--input z=", "no input 'z'", "x, y"}},
      {"missing input", {{"x", gx}}, {"input 'y' (the labels): no data", "--input y=FILE.npy"}},
      {"labels dtype",
       {{"x", gx}, {"y", Path("yf.npy")}},
       {"yf.npy", "the file holds f32, the plan's input is i64 ('y' is the labels)"}},
      {"labels shape",
       {{"x", gx}, {"y", Path("y2.npy")}},
       {"y2.npy", "[10,2]", "each sample must be []"}},
      {"sample shape", {{"x", Path("x4.npy")}, {"y", gy}}, {"x4.npy", "[10,4]", "[4,3]", "[3]"}},
      {"lengths differ",
       {{"x", gx}, {"y", Path("short_y.npy")}},
       {"short_y.npy", "9 samples", "holds 10"}},
      {"fewer than a batch",
       {{"x", Path("tiny_x.npy")}, {"y", Path("tiny_y.npy")}},
       {"tiny_x.npy", "2 samples, fewer than one batch of 4"}},
      {"given twice", {{"x", gx}, {"x", gx}, {"y", gy}}, {"given twice"}},
      {"no such file", {{"x", Path("nope.npy")}, {"y", gy}}, {"nope.npy"}},
  };
  PlanFile plan = TwoInputPlan(4);
  for (const ErrorCase& c : cases) {
    auto d = Dataset::Load(plan.plan, c.files, {});
    ASSERT_FALSE(d.ok()) << c.name;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidInput) << c.name;
    for (const std::string& w : c.want)
      EXPECT_NE(d.status().message().find(w), std::string::npos)
          << c.name << ": '" << w << "' not in: " << d.status().message();
  }
  // --synthetic leaves the missing input to the caller.
  EXPECT_TRUE(Dataset::Load(plan.plan, {{"x", gx}}, {.allow_missing = true}).ok());
}

// A plan compiled for a zero-size input (first dim 0, as ONNX allows): the file must hold
// exactly that shape and is bound whole (no samples to batch); a file with samples, or of another
// shape, is an error, so real data is checked as before.
TEST(DatasetTest, ZeroSizeInputIsBoundWholeWhenTheFileHoldsExactlyItsShape) {
  PlanBuilder pb;
  pb.Buffer("z", DType::kF32, {0, 5}, Role::INPUT);
  pb.Buffer("s", DType::kF32, {2}, Role::INPUT);
  PlanFile plan = pb.Finish();
  std::vector<float> rows(15, 1.0f), s = {3.0f, 4.0f};
  ASSERT_TRUE(WriteNpyFile(Path("z0.npy"), DType::kF32, {0, 5}, rows.data()).ok());
  ASSERT_TRUE(WriteNpyFile(Path("z3.npy"), DType::kF32, {3, 5}, rows.data()).ok());
  ASSERT_TRUE(WriteNpyFile(Path("z04.npy"), DType::kF32, {0, 4}, rows.data()).ok());
  ASSERT_TRUE(WriteNpyFile(Path("s.npy"), DType::kF32, {2}, s.data()).ok());
  auto ex = Executor::Create(PlanFile(plan), MakeCpuBackend());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  for (bool training : {true, false}) {
    auto d = Dataset::Load(plan.plan, {{"z", Path("z0.npy")}, {"s", Path("s.npy")}},
                           {.training = training});
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_TRUE(d->Has("z"));
    ASSERT_TRUE(d->FillWrapped(3, false, 0, **ex).ok());
    ASSERT_TRUE(d->FillTrainBatch(3, false, 0, **ex).ok());
    const float* sv = reinterpret_cast<const float*>((*ex)->BufferData(1));
    EXPECT_EQ(sv[0], 3.0f);
    EXPECT_EQ(sv[1], 4.0f);
  }
  for (const char* bad : {"z3.npy", "z04.npy"}) {
    auto d = Dataset::Load(plan.plan, {{"z", Path(bad)}, {"s", Path("s.npy")}}, {});
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find("zero-size along the first axis: the file must hold "
                                        "exactly that shape"),
              std::string::npos)
        << d.status().message();
    EXPECT_NE(d.status().message().find(bad), std::string::npos) << d.status().message();
  }
}

}  // namespace
}  // namespace a8
