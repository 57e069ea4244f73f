// Checkpoints that cannot lie (issue 18): the CRC-32C of every tensor and of the metadata, every
// single-bit flip anywhere in a checkpoint refused (naming the tensor when it is in one) with the
// executor unchanged, NaN/Inf in the parameters or state refused unless allowed, and the files
// beside a checkpoint: step-numbered ones kept and pruned, the stale temporaries of a killed
// writer removed, --resume=auto taking the newest that restores. Also the progress mode.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "compiler/plan/plan_file.h"
#include "runtime/core/checkpoint.h"
#include "runtime/core/checkpoint_files.h"
#include "runtime/core/progress.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/temp_path_util.h"
#include "tests/unit/train_executor_util.h"
#include "tests/unit/training_test_util.h"

namespace a8 {
namespace {

namespace fs = std::filesystem;
using testing::BuildTrainPlan;
using testing::MakeTrainExecutor;
using testing::PersistentBytes;
using testing::RandomFloats;
using testing::TrainStep;

bool Has(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(CheckpointIntegrityTest, ChecksumsAreCrc32cOfEachTensorAndTheMetadata) {
  std::vector<float> w = {1, 2, 3};
  SafetensorsTensor t{"w", DType::kF32, {3}, {reinterpret_cast<const char*>(w.data()), 12}};
  std::map<std::string, std::string> meta = {{"step", "4"}};
  AddSafetensorsChecksums({t}, &meta);
  EXPECT_EQ(meta.at("crc32c:w"), fmt::format("{:08x}", Crc32c(w.data(), 12)));
  EXPECT_EQ(meta.at("crc32c:__metadata__").size(), 8u);
  auto file = ParseSafetensors(*SerializeSafetensors({t}, meta), "f");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(VerifySafetensorsChecksums(*file, "f").ok());
  // A checksum for a tensor the file does not hold is refused too.
  std::map<std::string, std::string> extra = {{"crc32c:gone", "00000000"}};
  AddSafetensorsChecksums({t}, &extra);
  auto orphan = ParseSafetensors(*SerializeSafetensors({t}, extra), "f");
  Status s = VerifySafetensorsChecksums(*orphan, "f");
  EXPECT_TRUE(Has(s, "'crc32c:gone'")) << s.message();
}

TEST(CheckpointIntegrityTest, EverySingleBitFlipIsRefusedAndChangesNothing) {
  auto source = MakeTrainExecutor();
  TrainStep(*source, 1);
  TrainStep(*source, 2);
  const std::string good = *SerializeCheckpoint(*source, {.seed = 3, .extra = {{"shuffle", "1"}}});
  auto file = *ParseSafetensors(good, "c");
  const size_t data_at = good.size() - [&] {
    size_t n = 0;
    for (const SafetensorsTensor& t : file.tensors) n += t.data.size();
    return n;
  }();
  auto target = MakeTrainExecutor();
  TrainStep(*target, 9);
  const std::string before = PersistentBytes(*target);
  ASSERT_TRUE(RestoreCheckpoint(*MakeTrainExecutor(), good, "c.safetensors").ok());
  int refused = 0;
  for (size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      auto got = RestoreCheckpoint(*target, bad, "c.safetensors");
      ASSERT_FALSE(got.ok()) << "a flip of bit " << bit << " of byte " << byte << " passed";
      ++refused;
      if (byte >= data_at) {  // in a tensor's data: the error names that tensor
        for (const SafetensorsTensor& t : file.tensors) {
          const size_t at = static_cast<size_t>(t.data.data() - file.bytes->data());
          if (byte >= at && byte < at + t.data.size()) {
            EXPECT_TRUE(Has(got.status(), "tensor '" + t.name + "': checksum mismatch"))
                << got.status().message();
          }
        }
      }
    }
  }
  EXPECT_EQ(refused, static_cast<int>(good.size() * 8));
  EXPECT_EQ(PersistentBytes(*target), before);
  EXPECT_EQ(target->step(), 1);
}

TEST(CheckpointIntegrityTest, AHeaderWithANulByteIsRefused) {
  // nlohmann's parser stops at a NUL and would ignore what follows: "{}\0junk" parsed as {}.
  std::string text = std::string("{}") + '\0' + "junk!!";
  std::string file(8, '\0');
  file[0] = static_cast<char>(text.size());
  auto got = ParseSafetensors(file + text, "nul.safetensors");
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(Has(got.status(), "nul.safetensors: the header holds a NUL byte"))
      << got.status().message();
  std::string path = a8::testing::UniqueTempPath("nul.safetensors");
  Spit(path, file + text);
  EXPECT_FALSE(ReadSafetensorsMetadata(path).ok());
  fs::remove(path);
}

TEST(CheckpointIntegrityTest, NonFiniteParametersOrStateAreRefusedUnlessAllowed) {
  auto source = MakeTrainExecutor();
  TrainStep(*source, 1);
  auto file = *ParseSafetensors(*SerializeCheckpoint(*source, {}), "c");
  std::vector<float> w(4);
  std::memcpy(w.data(), file.tensors[0].data.data(), 16);
  ASSERT_EQ(file.tensors[0].name, "W");
  w[1] = std::numeric_limits<float>::quiet_NaN();
  w[3] = -std::numeric_limits<float>::infinity();
  std::vector<SafetensorsTensor> tensors = file.tensors;
  tensors[0].data = {reinterpret_cast<const char*>(w.data()), 16};
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : file.metadata)
    if (k.rfind(kSafetensorsCrcPrefix, 0) != 0) meta[k] = v;
  AddSafetensorsChecksums(tensors, &meta);
  const std::string bytes = *SerializeSafetensors(tensors, meta);
  auto target = MakeTrainExecutor();
  auto got = RestoreCheckpoint(*target, bytes, "nan.safetensors");
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(Has(got.status(), "tensor 'W' (parameter of the plan) holds 2 non-finite values"))
      << got.status().message();
  EXPECT_TRUE(Has(got.status(), "first at element 1")) << got.status().message();
  EXPECT_TRUE(Has(got.status(), "--allow-nonfinite")) << got.status().message();
  EXPECT_EQ(target->step(), 0);
  auto allowed = RestoreCheckpoint(*target, bytes, "nan.safetensors", {.allow_nonfinite = true});
  ASSERT_TRUE(allowed.ok()) << allowed.status().message();
  EXPECT_EQ(target->step(), 1);
}

TEST(CheckpointIntegrityTest, CountsNonFiniteInEveryFloatDtype) {
  uint16_t f16[] = {0x3c00, 0x7c00, 0xfe00, 0x7bff};  // 1, inf, nan, max
  uint16_t bf16[] = {0x7f80, 0x3f80, 0x7fc1};
  double f64[] = {1e308, std::numeric_limits<double>::quiet_NaN()};
  int32_t i32[] = {-1, 0x7f800000};  // not a float: never counted
  auto count = [](DType d, const void* p, size_t n) {
    return CountNonFinite({"t", d, {}, {static_cast<const char*>(p), n}});
  };
  EXPECT_EQ(count(DType::kF16, f16, sizeof f16).count, 2);
  EXPECT_EQ(count(DType::kF16, f16, sizeof f16).first, 1);
  EXPECT_EQ(count(DType::kBF16, bf16, sizeof bf16).count, 2);
  EXPECT_EQ(count(DType::kF64, f64, sizeof f64).count, 1);
  EXPECT_EQ(count(DType::kI32, i32, sizeof i32).count, 0);
}

TEST(CheckpointIntegrityTest, VersionOneFilesWithoutChecksumsStillRestore) {
  auto source = MakeTrainExecutor();
  TrainStep(*source, 1);
  auto file = *ParseSafetensors(*SerializeCheckpoint(*source, {}), "c");
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : file.metadata)
    if (k.rfind(kSafetensorsCrcPrefix, 0) != 0) meta[k] = v;
  meta["format_version"] = "1";
  auto target = MakeTrainExecutor();
  EXPECT_TRUE(RestoreCheckpoint(*target, *SerializeSafetensors(file.tensors, meta), "v1").ok());
  meta["format_version"] = "2";  // version 2 without checksums: refused
  auto got = RestoreCheckpoint(*target, *SerializeSafetensors(file.tensors, meta), "v2");
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(Has(got.status(), "this file has none")) << got.status().message();
}

class CheckpointFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = a8::testing::UniqueTempPath("ckdir");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ + "/ck.safetensors";
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Trains `ex` to `step` and saves it as the run would, with an eval loss when given.
  void SaveAt(Executor& ex, int64_t step, bool numbered, double eval_loss = -1) {
    while (ex.step() < step) TrainStep(ex, static_cast<uint32_t>(ex.step()));
    CheckpointInfo info;
    if (eval_loss >= 0) info.extra["eval_loss"] = fmt::format("{}", eval_loss);
    ASSERT_TRUE(WriteCheckpointFiles(path_, step, numbered, *SerializeCheckpoint(ex, info)).ok());
  }
  std::vector<std::string> Names() {
    std::vector<std::string> n;
    for (const auto& e : fs::directory_iterator(dir_)) n.push_back(e.path().filename().string());
    std::sort(n.begin(), n.end());
    return n;
  }
  std::string dir_, path_;
};

TEST_F(CheckpointFilesTest, StepNumberedPaths) {
  EXPECT_EQ(StepCheckpointPath("d/ck.safetensors", 12), "d/ck.step-12.safetensors");
  EXPECT_EQ(StepCheckpointPath("ck", 3), "./ck.step-3");
}

TEST_F(CheckpointFilesTest, StaleTemporariesOfThisCheckpointAreRemovedAndNothingElse) {
  for (const char* name : {".ck.safetensors.tmp.AbC123", ".ck.step-7.safetensors.tmp.x1y2z3",
                           ".ck.safetensors.tmp.link", ".other.safetensors.tmp.Q1w2e3",
                           "ck.safetensors", ".ck.safetensors", "ck.step-7.safetensors"})
    Spit(dir_ + "/" + name, "x");
  auto removed = RemoveStaleTempFiles(path_);
  ASSERT_TRUE(removed.ok()) << removed.status().message();
  EXPECT_EQ(removed->size(), 3u);
  EXPECT_EQ(Names(), (std::vector<std::string>{".ck.safetensors", ".other.safetensors.tmp.Q1w2e3",
                                               "ck.safetensors", "ck.step-7.safetensors"}));
}

TEST_F(CheckpointFilesTest, KeepsTheNewestKAndTheBest) {
  auto ex = MakeTrainExecutor();
  SaveAt(*ex, 1, true, 0.5);
  SaveAt(*ex, 2, true, 0.25);  // the best
  SaveAt(*ex, 3, true, 0.75);
  SaveAt(*ex, 4, true);
  SaveAt(*ex, 5, true);
  double best = 0;
  ASSERT_TRUE(BestEvalLoss(path_, &best));
  EXPECT_EQ(best, 0.25);
  auto removed = PruneCheckpoints(path_, 2, /*keep_best=*/true);
  ASSERT_TRUE(removed.ok()) << removed.status().message();
  EXPECT_EQ(Names(), (std::vector<std::string>{"ck.safetensors", "ck.step-2.safetensors",
                                               "ck.step-4.safetensors", "ck.step-5.safetensors"}));
  ASSERT_TRUE(PruneCheckpoints(path_, 1, /*keep_best=*/false).ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"ck.safetensors", "ck.step-5.safetensors"}));
  // The latest under the plain name is the step-5 checkpoint's bytes.
  EXPECT_EQ(Slurp(path_), Slurp(dir_ + "/ck.step-5.safetensors"));
}

TEST_F(CheckpointFilesTest, AutoResumeTakesTheNewestThatRestores) {
  auto target = MakeTrainExecutor();
  auto none = ResumeNewest(*target, path_, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->path, "");  // a first start
  auto ex = MakeTrainExecutor();
  SaveAt(*ex, 2, true);
  const std::string at2 = PersistentBytes(*ex);
  SaveAt(*ex, 3, true);
  // The newest is torn (cut short), and the latest under the plain name is the same file.
  const std::string newest = dir_ + "/ck.step-3.safetensors";
  std::string bytes = Slurp(newest);
  fs::remove(newest);
  fs::remove(path_);
  Spit(newest, bytes.substr(0, bytes.size() - 5));
  auto got = ResumeNewest(*target, path_, {});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->path, dir_ + "/ck.step-2.safetensors");
  EXPECT_EQ(target->step(), 2);
  EXPECT_EQ(PersistentBytes(*target), at2);
  ASSERT_EQ(got->warnings.size(), 1u);
  EXPECT_NE(got->warnings[0].find("ck.step-3.safetensors"), std::string::npos) << got->warnings[0];
  // Nothing restores: an error listing why, not a silent fresh start over the user's files.
  fs::remove(dir_ + "/ck.step-2.safetensors");
  auto fresh = MakeTrainExecutor();
  auto bad = ResumeNewest(*fresh, path_, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Has(bad.status(), "none of the 1 checkpoint file")) << bad.status().message();
  EXPECT_EQ(fresh->step(), 0);
}

TEST(ProgressTest, ABarOnlyOnATerminalOutsideALauncher) {
  char plain[] = "HOME=/root";
  char ompi[] = "OMPI_COMM_WORLD_RANK=0";
  char pmi[] = "PMI_RANK=1";
  char* alone[] = {plain, nullptr};
  char* mpi[] = {plain, ompi, nullptr};
  char* hydra[] = {pmi, nullptr};
  EXPECT_EQ(*ChooseProgress("", true, alone), ProgressMode::kBar);
  EXPECT_EQ(*ChooseProgress("", false, alone), ProgressMode::kLines);
  EXPECT_EQ(*ChooseProgress("", true, mpi), ProgressMode::kLines);
  EXPECT_EQ(*ChooseProgress("", true, hydra), ProgressMode::kLines);
  EXPECT_EQ(*ChooseProgress("bar", false, mpi), ProgressMode::kBar);
  EXPECT_EQ(*ChooseProgress("none", true, alone), ProgressMode::kNone);
  EXPECT_FALSE(ChooseProgress("fancy", true, alone).ok());
}

}  // namespace
}  // namespace a8
