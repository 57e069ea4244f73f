// Plan files at memory speed: the hardware CRC-32C against the table, the streamed write against
// the one-string serialisation, zero state and working copies made at load (Buffer.init_cast_of).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compiler/plan/plan_file.h"
#include "compiler/support/hash.h"
#include "kernels/common/float16.h"
#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/plan_proto_util.h"

namespace a8 {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(PlanStreamTest, Crc32cEqualsTheTableAtEveryLengthAndAlignment) {
  // The hardware path interleaves three streams of 8 KiB: lengths around 24 KiB and its
  // multiples cross from one path to the other.
  const std::vector<uint8_t> data = RandomBytes(100'000, 1);
  for (size_t n :
       {0, 1, 7, 8, 9, 63, 64, 65, 4096, 24575, 24576, 24577, 49151, 49152, 49160, 73729, 99'000}) {
    for (size_t offset : {0, 1, 3, 7}) {
      for (uint32_t seed : {0u, 0xE3069283u}) {
        EXPECT_EQ(Crc32c(data.data() + offset, n, seed),
                  Crc32cPortable(data.data() + offset, n, seed))
            << "n=" << n << " offset=" << offset << " seed=" << seed;
      }
    }
  }
  // Incremental over an uneven split == one shot, whichever path each piece takes.
  EXPECT_EQ(Crc32c(data.data() + 30'001, 69'999, Crc32c(data.data(), 30'001)),
            Crc32c(data.data(), 100'000));
}

TEST(PlanStreamTest, Crc32cCatchesEveryFlippedBitOfALargeBuffer) {
  std::vector<uint8_t> data = RandomBytes(3 * 8192 * 3 + 17, 2);  // the three-stream path
  const uint32_t good = Crc32c(data.data(), data.size());
  for (size_t i = 0; i < data.size(); i += 61) {
    for (int bit = 0; bit < 8; bit += 3) {
      data[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_NE(Crc32c(data.data(), data.size()), good) << "byte " << i << " bit " << bit;
      data[i] ^= static_cast<uint8_t>(1u << bit);
    }
  }
}

TEST(PlanStreamTest, ContentHashIsXxh3) {
  // XXH3-64 reference values (xxHash's own test vectors, seed 0).
  EXPECT_EQ(ContentHash(""), "xxh3:2d06800538d394c2");
  EXPECT_EQ(ContentHash("a"), "xxh3:e6c632b61e964e1f");
  EXPECT_EQ(ContentHash("a800c").size(), 5u + 16u);
}

TEST(PlanStreamTest, ContentHasherInPiecesEqualsOneShot) {
  const std::vector<uint8_t> data = RandomBytes(3'000'001, 4);
  const std::string_view all(reinterpret_cast<const char*>(data.data()), data.size());
  ContentHasher h;
  for (size_t at = 0, piece = 1; at < all.size(); at += piece, piece = piece * 3 + 7) {
    h.Update(all.substr(at, piece));
  }
  EXPECT_EQ(h.Finish(), ContentHash(all));
  ContentHasher empty;
  EXPECT_EQ(empty.Finish(), ContentHash(""));
}

// w f32[3,4] (a parameter with its value), w.f16 made from it at load, m f32[3,4] zero state.
PlanFile CastPlan() {
  PlanFile pf;
  plan::Plan& p = pf.plan;
  testing::SetPlanHeader(p, "test", "m.onnx", "xxh3:0000000000000000", "cpu", "amp");
  p.mutable_scaler()->set_mode("none");
  auto add = [&](const char* name, plan::DType dtype, std::vector<int64_t> dims,
                 plan::Buffer::Region region, plan::Buffer::Role role, uint64_t offset, int first,
                 int last) {
    return testing::AddPlanBuffer(p, name, dtype, dims, region, role, offset, first, last);
  };
  add("x", plan::F32, {3, 4}, plan::Buffer::ARENA, plan::Buffer::INPUT, 0, -1, 0);
  add("y", plan::F32, {3, 4}, plan::Buffer::ARENA, plan::Buffer::OUTPUT, 64, 0, 1);
  plan::Buffer* w =
      add("w", plan::F32, {3, 4}, plan::Buffer::PERSISTENT, plan::Buffer::PARAMETER, 0, -1, 1);
  w->set_has_init(true);
  w->set_blob_offset(0);
  add("w.f16", plan::F16, {3, 4}, plan::Buffer::PERSISTENT, plan::Buffer::STATE, 64, -1, 1)
      ->set_init_cast_of(2);
  add("m", plan::F32, {3, 4}, plan::Buffer::PERSISTENT, plan::Buffer::STATE, 128, -1, 1);
  p.set_arena_bytes(128);
  p.set_arena_lower_bound(128);
  p.set_persistent_bytes(192);
  std::vector<float> values = {1.0f,  -2.5f, 3.14159265f, 65504.0f, 70000.0f, 1e-8f,
                               -0.0f, 0.1f,  1.0f / 3,    -7.25f,   6e-5f,    2.0009765f};
  pf.blob.resize(48);
  std::memcpy(pf.blob.data(), values.data(), 48);
  p.set_blob_bytes(48);
  testing::AddPlanKernel(p, "Add:f32,f32->f32", "Add", 14, {0, 2}, {1}, "add0");
  testing::BindPlanIo(p, "x", 0, "y", 1);
  return pf;
}

TEST(PlanStreamTest, WritePlanFileStreamsTheSameBytesAsSerializePlan) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("a8_stream_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "m.plan").string();
  PlanFile pf = CastPlan();
  ASSERT_TRUE(WritePlanFile(pf, path).ok());
  std::ifstream in(path, std::ios::binary);
  std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto whole = SerializePlan(pf);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(written, *whole);
  auto head = SerializePlanHead(pf);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(*head + std::string(pf.blob.begin(), pf.blob.end()), *whole);
  fs::remove_all(dir);
}

TEST(PlanStreamTest, WorkingCopyAndZeroStateAreMadeAtLoad) {
  PlanFile pf = CastPlan();
  ASSERT_TRUE(ValidatePlan(pf, "cast").ok()) << ValidatePlan(pf, "cast").message();
  auto bytes = SerializePlan(pf);
  ASSERT_TRUE(bytes.ok());
  auto back = ParsePlan(*bytes, "cast.plan");
  ASSERT_TRUE(back.ok()) << back.status().message();
  auto ex = Executor::Create(std::move(*back), MakeCpuBackend());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  const float* w = reinterpret_cast<const float*>(pf.blob.data());
  const uint16_t* copy = reinterpret_cast<const uint16_t*>((*ex)->BufferData(3));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(copy[i], FloatToHalfBits(w[i])) << i;
  const uint8_t* m = (*ex)->BufferData(4);
  for (int i = 0; i < 48; ++i) EXPECT_EQ(m[i], 0) << i;
}

TEST(PlanStreamTest, HostileInitCastIsAnError) {
  struct Case {
    const char* what;
    std::function<void(PlanFile*)> edit;
    const char* error;
  };
  const Case cases[] = {
      {"out of range", [](PlanFile* pf) { pf->plan.mutable_buffers(3)->set_init_cast_of(99); },
       "buffer 3 ('w.f16'): init_cast_of 99 is not another buffer id"},
      {"negative", [](PlanFile* pf) { pf->plan.mutable_buffers(3)->set_init_cast_of(-1); },
       "init_cast_of -1 is not another buffer id"},
      {"itself", [](PlanFile* pf) { pf->plan.mutable_buffers(3)->set_init_cast_of(3); },
       "init_cast_of 3 is not another buffer id"},
      {"from the arena", [](PlanFile* pf) { pf->plan.mutable_buffers(3)->set_init_cast_of(0); },
       "the source must be a PERSISTENT F32 buffer"},
      {"from zero state of other dims",
       [](PlanFile* pf) {
         pf->plan.mutable_buffers(4)->mutable_type()->set_dims(0, 1);
         pf->plan.mutable_buffers(4)->set_bytes(16);
         pf->plan.mutable_buffers(3)->set_init_cast_of(4);
       },
       "the source must be a PERSISTENT F32 buffer of the same dims"},
      {"an f32 copy", [](PlanFile* pf) { pf->plan.mutable_buffers(4)->set_init_cast_of(2); },
       "rounds F32 to F16 or BF16 only"},
      {"with its own value too",
       [](PlanFile* pf) { pf->plan.mutable_buffers(3)->set_has_init(true); },
       "only a parameter or state without has_init"},
  };
  for (const Case& c : cases) {
    PlanFile pf = CastPlan();
    c.edit(&pf);
    Status s = ValidatePlan(pf, "h.plan");
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << c.what;
    EXPECT_NE(s.message().find(c.error), std::string::npos) << c.what << ": " << s.message();
  }
}

}  // namespace
}  // namespace a8
