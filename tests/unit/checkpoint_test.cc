// Checkpoints: the safetensors layout (round trip of every dtype, sorted and aligned, the same
// bytes for the same state), every malformed file an error naming the file and the tensor, and
// save / restore on a training executor: a restored run continues bit-exactly, a checkpoint of
// another plan is refused, and a refused checkpoint changes nothing.
#include "runtime/core/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/temp_path_util.h"
#include "tests/unit/train_executor_util.h"
#include "tests/unit/training_test_util.h"

namespace a8 {
namespace {

using testing::BuildTrainPlan;
using testing::MakeTrainExecutor;
using testing::PersistentBytes;
using testing::RandomNormals;
using testing::TrainPlanOptions;
using testing::TrainStep;

std::string_view Bytes(const void* p, size_t n) { return {static_cast<const char*>(p), n}; }

uint64_t HeaderLength(const std::string& file) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<uint8_t>(file[i])} << (8 * i);
  return n;
}

TEST(CheckpointTest, SafetensorsRoundTripsEveryDtype) {
  std::vector<float> f32 = RandomNormals(6, 1);
  std::vector<double> f64 = {1.5, -2.25, 3e100};
  std::vector<int64_t> i64 = {-1, 1LL << 40};
  std::vector<int32_t> i32 = {7, -7, 9};
  std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x7bff}, bf16 = {0x3f80, 0x4049};
  std::vector<int8_t> i8 = {-128, 127, 3};
  std::vector<uint8_t> u8 = {255, 0}, b = {1, 0, 1};
  std::vector<SafetensorsTensor> in = {
      {"w.f32", DType::kF32, {2, 3}, Bytes(f32.data(), 24)},
      {"a.f64", DType::kF64, {3}, Bytes(f64.data(), 24)},
      {"step", DType::kI64, {2}, Bytes(i64.data(), 16)},
      {"i32", DType::kI32, {3, 1}, Bytes(i32.data(), 12)},
      {"h", DType::kF16, {3}, Bytes(f16.data(), 6)},
      {"bf", DType::kBF16, {1, 2}, Bytes(bf16.data(), 4)},
      {"i8", DType::kI8, {3}, Bytes(i8.data(), 3)},
      {"u8", DType::kU8, {2}, Bytes(u8.data(), 2)},
      {"mask", DType::kBool, {3}, Bytes(b.data(), 3)},
      {"scalar", DType::kF64, {}, Bytes(f64.data(), 8)},
      {"empty", DType::kF32, {0, 4}, ""},
  };
  std::map<std::string, std::string> meta = {{"step", "12"}, {"note", "x\"y"}};
  auto bytes = SerializeSafetensors(in, meta);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  uint64_t n = HeaderLength(*bytes);
  EXPECT_EQ(n % 8, 0u) << "the data starts 8-byte aligned";
  EXPECT_EQ((*bytes)[8], '{');
  // The same tensors in another order give the same bytes.
  std::vector<SafetensorsTensor> reversed(in.rbegin(), in.rend());
  EXPECT_EQ(*SerializeSafetensors(reversed, meta), *bytes);

  auto file = ParseSafetensors(*bytes, "t.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->metadata, meta);
  ASSERT_EQ(file->tensors.size(), in.size());
  std::map<std::string, const SafetensorsTensor*> got;
  std::string previous;
  for (const SafetensorsTensor& t : file->tensors) {
    EXPECT_LT(previous, t.name) << "data laid out in name order";
    previous = t.name;
    got[t.name] = &t;
  }
  for (const SafetensorsTensor& t : in) {
    ASSERT_TRUE(got.count(t.name)) << t.name;
    EXPECT_EQ(got[t.name]->dtype, t.dtype) << t.name;
    EXPECT_EQ(got[t.name]->shape, t.shape) << t.name;
    EXPECT_EQ(got[t.name]->data, t.data) << t.name;
  }
}

TEST(CheckpointTest, SerializeRejectsDuplicateNamesAndWrongSizes) {
  float v[2] = {1, 2};
  auto message = [](const std::vector<SafetensorsTensor>& tensors) {
    auto bytes = SerializeSafetensors(tensors, {});
    return bytes.ok() ? std::string("ok") : bytes.status().message();
  };
  EXPECT_THAT(message({{"a", DType::kF32, {2}, Bytes(v, 8)}, {"a", DType::kF32, {2}, Bytes(v, 8)}}),
              ::testing::HasSubstr("tensor name 'a' is empty, reserved or not unique"));
  EXPECT_THAT(message({{"a", DType::kF32, {3}, Bytes(v, 8)}}),
              ::testing::HasSubstr("tensor 'a': 8 bytes for"));
  EXPECT_THAT(message({{"__metadata__", DType::kF32, {2}, Bytes(v, 8)}}),
              ::testing::HasSubstr("tensor name '__metadata__' is empty, reserved or not unique"));
}

// A file with header `json` and `data_bytes` bytes of data.
std::string RawFile(const std::string& json, size_t data_bytes) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + std::string(data_bytes, '\x01');
}

TEST(CheckpointTest, MalformedFilesAreErrorsNamingFileAndTensor) {
  struct Case {
    std::string bytes;
    std::vector<std::string> want;
  };
  auto entry = [](const std::string& dtype, const std::string& shape, const std::string& off) {
    return R"({"w":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + off +
           "}";
  };
  std::vector<Case> cases = {
      {"abc", {"too short"}},
      {RawFile("{}", 0).substr(0, 8) + "{", {"header length"}},
      {RawFile("not json", 0), {"not a JSON object"}},
      {RawFile("[1,2]", 0), {"not a JSON object"}},
      {RawFile(entry("F33", "[2]", "[0,8]") + "}", 8), {"'w'", "dtype 'F33'"}},
      {RawFile(entry("F32", "[2]", "[0,12]") + "}", 8), {"'w'", "outside the data"}},
      {RawFile(entry("F32", "[3]", "[0,8]") + "}", 8), {"'w'", "needs 12"}},
      {RawFile(entry("F32", "[-2]", "[0,8]") + "}", 8), {"'w'", "not a dimension"}},
      {RawFile(entry("F32", "[2]", "[0]") + "}", 8), {"'w'", "data_offsets"}},
      {RawFile(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8), {"'w'", "'dtype'"}},
      {RawFile(entry("F32", "[2]", "[4,12]") + "}", 12), {"'w'", "gap"}},
      {RawFile(entry("F32", "[2]", "[0,8]") +
                   R"(,"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               12),
       {"'v'", "overlap"}},
      {RawFile(entry("F32", "[2]", "[0,8]") + "}", 9), {"hold 8 bytes", "9 bytes of data"}},
      {RawFile(R"({"__metadata__":{"step":3}})", 0), {"__metadata__ 'step'"}},
  };
  for (const Case& c : cases) {
    auto f = ParseSafetensors(c.bytes, "bad.safetensors");
    ASSERT_FALSE(f.ok()) << c.want[0];
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(f.status().message().find("bad.safetensors"), std::string::npos);
    for (const std::string& w : c.want)
      EXPECT_NE(f.status().message().find(w), std::string::npos)
          << "'" << w << "' not in: " << f.status().message();
  }
}

TEST(CheckpointTest, RestoredRunContinuesBitExactly) {
  auto straight = MakeTrainExecutor();
  for (uint32_t s = 0; s < 4; ++s) TrainStep(*straight, s);
  auto first = MakeTrainExecutor();
  for (uint32_t s = 0; s < 2; ++s) TrainStep(*first, s);
  CheckpointInfo info;
  info.seed = 5;
  info.extra["shuffle"] = "true";
  std::string path = a8::testing::UniqueTempPath("checkpoint.safetensors");
  ASSERT_TRUE(SaveCheckpoint(*first, info, path).ok());

  auto resumed = MakeTrainExecutor();
  auto got = LoadCheckpoint(*resumed, path);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->step, 2);
  EXPECT_EQ(got->seed, 5u);
  EXPECT_EQ(got->extra, info.extra);
  EXPECT_EQ(resumed->step(), 2);
  EXPECT_EQ(PersistentBytes(*resumed), PersistentBytes(*first));
  for (uint32_t s = 2; s < 4; ++s) TrainStep(*resumed, s);
  EXPECT_EQ(PersistentBytes(*resumed), PersistentBytes(*straight));
  auto a = SerializeCheckpoint(*resumed, info), b = SerializeCheckpoint(*straight, info);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b) << "byte-identical checkpoints";
}

TEST(CheckpointTest, APlanWithoutAStepBufferGetsItsStepFromTheMetadata) {
  auto first = MakeTrainExecutor({.step_buffer = false});
  for (uint32_t s = 0; s < 3; ++s) TrainStep(*first, s);
  auto bytes = SerializeCheckpoint(*first, {});
  ASSERT_TRUE(bytes.ok());
  auto resumed = MakeTrainExecutor({.step_buffer = false});
  auto got = RestoreCheckpoint(*resumed, *bytes, "c.safetensors");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(resumed->step(), 3);
}

TEST(CheckpointTest, TheFileHoldsParametersStateAndMetadata) {
  auto ex = MakeTrainExecutor();
  TrainStep(*ex, 1);
  auto bytes = SerializeCheckpoint(*ex, {.seed = 9});
  ASSERT_TRUE(bytes.ok());
  auto file = ParseSafetensors(*bytes, "c");
  ASSERT_TRUE(file.ok());
  std::vector<std::string> names;
  for (const SafetensorsTensor& t : file->tensors) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"W", "step"}));
  EXPECT_EQ(file->metadata.at("format"), kCheckpointFormat);
  EXPECT_EQ(file->metadata.at("format_version"), "2");
  EXPECT_EQ(file->metadata.at("step"), "1");
  EXPECT_EQ(file->metadata.at("seed"), "9");
  EXPECT_EQ(file->metadata.at("plan_hash"), PlanHash(ex->plan()));
  EXPECT_EQ(file->metadata.at("model_hash"), ex->plan().model_hash());
}

TEST(CheckpointTest, RefusedCheckpointsNameTheProblemAndChangeNothing) {
  auto source = MakeTrainExecutor();
  TrainStep(*source, 1);
  std::string good = *SerializeCheckpoint(*source, {});
  auto file = *ParseSafetensors(good, "c");
  // Rebuilds the checkpoint with `edit` applied to its tensors and metadata.
  auto rebuild = [&](auto edit) {
    std::vector<SafetensorsTensor> tensors = file.tensors;
    std::map<std::string, std::string> meta;
    for (const auto& [k, v] : file.metadata)
      if (k.rfind(kSafetensorsCrcPrefix, 0) != 0) meta[k] = v;
    edit(tensors, meta);
    AddSafetensorsChecksums(tensors, &meta);  // valid checksums: the checks behind them run
    return *SerializeSafetensors(tensors, meta);
  };
  using T = std::vector<SafetensorsTensor>;
  using M = std::map<std::string, std::string>;
  int64_t step7 = 7;
  float five[5] = {};
  struct Case {
    std::string bytes;
    std::vector<std::string> want;
  };
  TrainPlanOptions other;
  other.n = 5;
  std::vector<Case> cases = {
      {*SerializeCheckpoint(*MakeTrainExecutor(other), {}),
       {"another plan", "resume with the plan"}},
      {rebuild([](T&, M& m) { m.erase("format"); }), {"not an a800c checkpoint"}},
      {rebuild([](T&, M& m) { m["format_version"] = "3"; }), {"version 3 is newer"}},
      {rebuild([](T&, M& m) { m["step"] = "x"; }), {"'step' 'x'"}},
      {rebuild([](T& t, M&) { t.pop_back(); }), {"tensor 'step'", "missing"}},
      {rebuild([&](T& t, M&) {
         t.push_back({"extra", DType::kF32, {5}, Bytes(five, 20)});
       }),
       {"tensor 'extra'", "not a parameter or state"}},
      {rebuild([](T& t, M&) {
         t[0].shape = {2, 2};
       }),
       {"tensor 'W'", "F32 [2,2]", "F32 [4]"}},
      {rebuild([&](T& t, M&) { t[1].data = Bytes(&step7, 8); }), {"holds step 7", "says 1"}},
  };
  auto target = MakeTrainExecutor();
  TrainStep(*target, 2);
  std::string before = PersistentBytes(*target);
  for (const Case& c : cases) {
    auto got = RestoreCheckpoint(*target, c.bytes, "c.safetensors");
    ASSERT_FALSE(got.ok()) << c.want[0];
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidInput);
    for (const std::string& w : c.want)
      EXPECT_NE(got.status().message().find(w), std::string::npos)
          << "'" << w << "' not in: " << got.status().message();
    EXPECT_EQ(PersistentBytes(*target), before) << c.want[0];
    EXPECT_EQ(target->step(), 1);
  }
  EXPECT_FALSE(LoadCheckpoint(*target, a8::testing::UniqueTempPath("no_such.safetensors")).ok());
}

}  // namespace
}  // namespace a8
