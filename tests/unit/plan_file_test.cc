// The plan file: layout, checksum, round trip, and the reader's validation of hostile files.
#include "compiler/plan/plan_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "passes/lowering/lower.h"
#include "tests/unit/plan_proto_util.h"

namespace a8 {
namespace {

// A small valid plan (by hand, independent of lower): x -> Relu -> h -> Gemm(h, w, b) -> y.
PlanFile SmallPlan(uint32_t seed) {
  std::mt19937 rng(seed);
  PlanFile pf;
  plan::Plan& p = pf.plan;
  testing::SetPlanHeader(p, "test", "m.onnx", "fnv1a64:0000000000000000", "cpu", "fp32");
  p.mutable_scaler()->set_mode("none");
  auto add = [&](const char* name, std::vector<int64_t> dims, plan::Buffer::Region region,
                 plan::Buffer::Role role, uint64_t offset, int first, int last) {
    return testing::AddPlanBuffer(p, name, plan::F32, dims, region, role, offset, first, last);
  };
  add("x", {2, 3}, plan::Buffer::ARENA, plan::Buffer::INPUT, 0, -1, 0);
  add("h", {2, 3}, plan::Buffer::ARENA, plan::Buffer::INTERMEDIATE, 64, 0, 1);
  add("y", {2, 4}, plan::Buffer::ARENA, plan::Buffer::OUTPUT, 0, 1, 2);
  plan::Buffer* w = add("w", {3, 4}, plan::Buffer::PERSISTENT, plan::Buffer::PARAMETER, 0, -1, 2);
  plan::Buffer* b = add("b", {4}, plan::Buffer::PERSISTENT, plan::Buffer::PARAMETER, 64, -1, 2);
  w->set_has_init(true);
  w->set_blob_offset(0);
  b->set_has_init(true);
  b->set_blob_offset(64);
  p.set_arena_bytes(128);
  p.set_arena_lower_bound(128);
  p.set_persistent_bytes(128);
  pf.blob.resize(80);
  for (uint8_t& byte : pf.blob) byte = static_cast<uint8_t>(rng());
  p.set_blob_bytes(80);
  testing::AddPlanKernel(p, "Relu:f32->f32", "Relu", 6, {0}, {1}, "relu0")->add_onnx_nodes("relu0");
  plan::Kernel* gemm =
      testing::AddPlanKernel(p, "Gemm:f32,f32,f32->f32", "Gemm", 7, {1, 3, 4}, {2}, "gemm0");
  plan::Attribute* alpha = gemm->add_attrs();
  alpha->set_name("alpha");
  alpha->set_f(0.5f);
  plan::Attribute* trans = gemm->add_attrs();
  trans->set_name("transB");
  trans->set_i(0);
  testing::BindPlanIo(p, "x", 0, "y", 2);
  return pf;
}

void PutLe(std::string* s, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) (*s)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Packs a message and blob into a plan file by the layout of plan_file.h, written here
// independently and without validation, so a hostile message gets a valid header and CRC.
std::string Pack(const plan::Plan& p, const std::vector<uint8_t>& blob,
                 uint32_t version = kPlanFormatVersion) {
  std::string message = p.SerializeAsString();
  const uint64_t blob_offset = (64 + message.size() + 63) / 64 * 64;
  std::string out(64, '\0');
  std::memcpy(out.data(), "A800CPLN", 8);
  PutLe(&out, 8, version, 4);
  PutLe(&out, 12, 64, 4);
  PutLe(&out, 16, message.size(), 8);
  PutLe(&out, 24, blob_offset, 8);
  PutLe(&out, 32, blob.size(), 8);
  out += message;
  out.resize(blob_offset, '\0');
  out.append(blob.begin(), blob.end());
  PutLe(&out, 40, Crc32c(out.data() + 64, out.size() - 64), 4);
  return out;
}

TEST(PlanFileTest, ChecksumAndHash) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  // Incremental == one shot.
  EXPECT_EQ(Crc32c("6789", 4, Crc32c("12345", 5)), 0xE3069283u);
  EXPECT_EQ(Fnv1a64Hex(""), "cbf29ce484222325");
  EXPECT_EQ(Fnv1a64Hex("a"), "af63dc4c8601ec8c");
}

TEST(PlanFileTest, SerializeMatchesTheLayoutAndRoundTrips) {
  PlanFile pf = SmallPlan(1);
  ASSERT_TRUE(ValidatePlan(pf, "small").ok()) << ValidatePlan(pf, "small").message();
  auto bytes = SerializePlan(pf);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(*bytes, Pack(pf.plan, pf.blob));
  EXPECT_EQ(bytes->size() % 64, (80 % 64));
  auto back = ParsePlan(*bytes, "small.plan");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->plan.SerializeAsString(), pf.plan.SerializeAsString());
  EXPECT_EQ(back->blob, pf.blob);
}

TEST(PlanFileTest, WriteAndReadFileAtomically) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("a8_plan_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "m.plan").string();
  PlanFile pf = SmallPlan(2);
  ASSERT_TRUE(WritePlanFile(pf, path).ok());
  auto back = ReadPlanFile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  // The blob stays in the file's mapping: one piece, the bytes written.
  ASSERT_EQ(back->BlobSize(), pf.blob.size());
  ASSERT_EQ(back->pieces.size(), 1u);
  const uint8_t* mapped = back->BlobBytes(0, pf.blob.size());
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(std::vector<uint8_t>(mapped, mapped + pf.blob.size()), pf.blob);
  // An invalid plan is not written, and the existing file stays as it was.
  const std::string before = *SerializePlan(pf);
  PlanFile bad = pf;
  bad.plan.mutable_kernels(0)->set_name("Frob:f32->f32");
  Status s = WritePlanFile(bad, path);
  EXPECT_FALSE(s.ok());
  std::ifstream in(path, std::ios::binary);
  std::string now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(now, before);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);  // no temporary left behind
  auto missing = ReadPlanFile((dir / "none.plan").string());
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidInput);
  fs::remove_all(dir);
}

TEST(PlanFileTest, EveryFlippedByteIsACleanError) {
  const std::string good = *SerializePlan(SmallPlan(3));
  std::mt19937 rng(3);
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t mask : {uint8_t{0xff}, static_cast<uint8_t>(1u << (rng() % 8))}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      auto r = ParsePlan(bad, "flip.plan");
      ASSERT_FALSE(r.ok()) << "byte " << i << " mask " << int(mask);
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
      EXPECT_EQ(r.status().message().rfind("flip.plan: ", 0), 0u) << r.status().message();
      if (i >= 64) {
        EXPECT_NE(r.status().message().find("crc32c"), std::string::npos)
            << "byte " << i << ": " << r.status().message();
      }
    }
  }
}

TEST(PlanFileTest, EveryTruncationIsACleanError) {
  const std::string good = *SerializePlan(SmallPlan(4));
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = ParsePlan(good.substr(0, n), "cut.plan");
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  }
  auto longer = ParsePlan(good + std::string(1, '\0'), "long.plan");
  EXPECT_FALSE(longer.ok());
}

TEST(PlanFileTest, FutureFormatVersion) {
  PlanFile pf = SmallPlan(5);
  std::string header_only = *SerializePlan(pf);
  PutLe(&header_only, 8, kPlanFormatVersion + 1, 4);
  auto r = ParsePlan(header_only, "new.plan");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("format version 4 is newer than this a800c reads (3)"),
            std::string::npos)
      << r.status().message();
  // A plan of format 1 (its working copies and zero state stored as bytes) is not read.
  std::string old = *SerializePlan(pf);
  PutLe(&old, 8, 1, 4);
  r = ParsePlan(old, "old.plan");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("format version 1 is not one this a800c reads (2 to 3)"),
            std::string::npos)
      << r.status().message();
  // Header and message both from the future, with a valid checksum.
  pf.plan.set_format_version(kPlanFormatVersion + 1);
  r = ParsePlan(Pack(pf.plan, pf.blob, kPlanFormatVersion + 1), "new.plan");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("format version 4 is newer"), std::string::npos);
  // A message whose version disagrees with the header.
  r = ParsePlan(Pack(pf.plan, pf.blob), "mixed.plan");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("format_version"), std::string::npos);
  // Format 2 (it also carried a copy of the scaler settings, now ignored) is still read.
  pf.plan.set_format_version(2);
  r = ParsePlan(Pack(pf.plan, pf.blob, 2), "v2.plan");
  EXPECT_TRUE(r.ok()) << r.status().message();
}

struct HostileCase {
  const char* what;
  void (*mutate)(PlanFile*);
  const char* expect;
};

TEST(PlanFileTest, HostileMessagesWithValidChecksum) {
  const HostileCase cases[] = {
      {"offset out of range", [](PlanFile* pf) { pf->plan.mutable_buffers(1)->set_offset(128); },
       "buffer 1 ('h'): offset 128 + 24 bytes is outside the arena (128 bytes)"},
      {"unaligned offset", [](PlanFile* pf) { pf->plan.mutable_buffers(1)->set_offset(8); },
       "is not a multiple of the alignment"},
      {"negative dim",
       [](PlanFile* pf) { pf->plan.mutable_buffers(1)->mutable_type()->set_dims(0, -2); },
       "buffer 1 ('h'): type.dims[0] is negative (-2)"},
      {"dims product overflow",
       [](PlanFile* pf) {
         auto* t = pf->plan.mutable_buffers(1)->mutable_type();
         t->set_dims(0, int64_t{1} << 40);
         t->set_dims(1, int64_t{1} << 40);
       },
       "overflows int64"},
      {"huge buffer",
       [](PlanFile* pf) {
         pf->plan.mutable_buffers(1)->mutable_type()->set_dims(0, int64_t{1} << 50);
       },
       "is larger than"},
      {"bytes disagree", [](PlanFile* pf) { pf->plan.mutable_buffers(1)->set_bytes(4); },
       "bytes is 4, but type f32[2,3] has 24 bytes"},
      {"bad dtype",
       [](PlanFile* pf) {
         pf->plan.mutable_buffers(0)->mutable_type()->set_dtype(static_cast<plan::DType>(42));
       },
       "type.dtype 42 is not a dtype"},
      {"unknown kernel name",
       [](PlanFile* pf) {
         pf->plan.mutable_kernels(0)->set_name("Frob:f32->f32");
         pf->plan.mutable_kernels(0)->set_op("Frob");
       },
       "kernel 0 ('Frob:f32->f32'): kernel 'Frob:f32->f32': unknown kernel op 'Frob'"},
      {"malformed kernel name", [](PlanFile* pf) { pf->plan.mutable_kernels(0)->set_name("Relu"); },
       "kernel 0 ('Relu'): kernel name 'Relu': no ':'"},
      {"kernel/buffer dtype mismatch",
       [](PlanFile* pf) { pf->plan.mutable_kernels(0)->set_name("Relu:f16->f16"); },
       "inputs[0]: buffer 0 ('x') is f32, the kernel name says f16"},
      {"kernel op disagrees", [](PlanFile* pf) { pf->plan.mutable_kernels(0)->set_op("Abs"); },
       "op 'Abs' does not match the kernel name"},
      {"buffer id out of range",
       [](PlanFile* pf) { pf->plan.mutable_kernels(1)->set_inputs(1, 99); },
       "kernel 1 ('Gemm:f32,f32,f32->f32'): inputs[1]: buffer id 99 is out of range [0, 5)"},
      {"negative buffer id", [](PlanFile* pf) { pf->plan.mutable_kernels(1)->set_inputs(0, -7); },
       "buffer id -7 is out of range"},
      {"input count", [](PlanFile* pf) { pf->plan.mutable_kernels(1)->add_inputs(0); },
       "has 4 inputs, the name has 3"},
      {"live range out of range", [](PlanFile* pf) { pf->plan.mutable_buffers(1)->set_last(9); },
       "buffer 1 ('h'): live range [0, 9] is outside [-1, 2]"},
      {"read outside its live range",
       [](PlanFile* pf) { pf->plan.mutable_buffers(1)->set_last(0); },
       "buffer 1 ('h') is live [0, 0], not at kernel 1"},
      {"defined by another kernel", [](PlanFile* pf) { pf->plan.mutable_buffers(1)->set_first(1); },
       "is defined by kernel 1, not 0"},
      {"blob offset outside the blob",
       [](PlanFile* pf) { pf->plan.mutable_buffers(4)->set_blob_offset(128); },
       "buffer 4 ('b'): blob_offset 128 + 16 bytes is outside the blob (80 bytes)"},
      {"blob offset huge",
       [](PlanFile* pf) { pf->plan.mutable_buffers(4)->set_blob_offset(~uint64_t{63}); },
       "is outside the blob"},
      {"arena init", [](PlanFile* pf) { pf->plan.mutable_buffers(0)->set_has_init(true); },
       "an ARENA buffer cannot have an initial value"},
      {"role in wrong region",
       [](PlanFile* pf) { pf->plan.mutable_buffers(3)->set_region(plan::Buffer::ARENA); },
       "a parameter buffer must be in the PERSISTENT region"},
      {"id not index", [](PlanFile* pf) { pf->plan.mutable_buffers(2)->set_id(7); },
       "buffer 2 ('y'): id is 7, expected its index 2"},
      {"duplicate name", [](PlanFile* pf) { pf->plan.mutable_buffers(2)->set_name("x"); },
       "the name is used by an earlier buffer"},
      {"alias out of range", [](PlanFile* pf) { pf->plan.mutable_buffers(1)->set_alias_of(5); },
       "alias_of 5 is not another buffer id"},
      {"binding out of range", [](PlanFile* pf) { pf->plan.mutable_outputs(0)->set_buffer(5); },
       "outputs[0] ('y'): buffer id 5 is out of range [0, 5)"},
      {"input binding to a parameter",
       [](PlanFile* pf) { pf->plan.mutable_inputs(0)->set_buffer(3); },
       "buffer 3 is not an input buffer"},
      {"blob size", [](PlanFile* pf) { pf->plan.set_blob_bytes(81); },
       "blob_bytes is 81, but the blob has 80 bytes"},
      {"arena too big", [](PlanFile* pf) { pf->plan.set_arena_bytes(~uint64_t{0}); },
       "arena_bytes 18446744073709551615 is larger than"},
      {"alignment", [](PlanFile* pf) { pf->plan.set_alignment(0); }, "alignment is 0, expected 64"},
      {"target", [](PlanFile* pf) { pf->plan.set_target("tpu"); }, "target 'tpu'"},
      {"scaler", [](PlanFile* pf) { pf->plan.mutable_scaler()->set_mode("wild"); },
       "scaler.mode 'wild'"},
      {"unsorted attrs",
       [](PlanFile* pf) { pf->plan.mutable_kernels(1)->mutable_attrs(1)->set_name("aaa"); },
       "attribute 'aaa' is out of order or repeated"},
      {"attr without value",
       [](PlanFile* pf) { pf->plan.mutable_kernels(1)->mutable_attrs(1)->clear_i(); },
       "attribute 'transB' has no value"},
      {"tensor attr not constant",
       [](PlanFile* pf) { pf->plan.mutable_kernels(1)->mutable_attrs(1)->set_tensor_buffer(3); },
       "tensor_buffer 3 is not a constant buffer"},
      {"output shape inconsistent with the kernel",
       [](PlanFile* pf) {
         plan::Buffer* y = pf->plan.mutable_buffers(2);
         y->mutable_type()->set_dims(1, 5);
         y->set_bytes(40);
       },
       "kernel 1 ('Gemm:f32,f32,f32->f32'): outputs[0] is buffer 2 of type f32[2,5], but the "
       "kernel's inputs and attributes give f32[2,4]"},
      {"attribute the op does not have",
       [](PlanFile* pf) { pf->plan.mutable_kernels(1)->mutable_attrs(1)->set_name("zzz"); },
       "unknown attribute 'zzz'"},
  };
  for (const HostileCase& c : cases) {
    PlanFile pf = SmallPlan(6);
    c.mutate(&pf);
    auto r = ParsePlan(Pack(pf.plan, pf.blob), "bad.plan");
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << c.what;
    EXPECT_EQ(r.status().message().rfind("bad.plan: ", 0), 0u) << c.what;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << c.what << ": " << r.status().message();
    // The writer refuses it too (an internal error: the compiler made it).
    auto w = SerializePlan(pf);
    ASSERT_FALSE(w.ok()) << c.what;
    EXPECT_EQ(w.status().code(), StatusCode::kInternal);
  }
}

TEST(PlanFileTest, HostileHeaders) {
  const std::string good = *SerializePlan(SmallPlan(7));
  auto expect = [&](std::string bytes, const char* msg) {
    auto r = ParsePlan(bytes, "h.plan");
    ASSERT_FALSE(r.ok()) << msg;
    EXPECT_NE(r.status().message().find(msg), std::string::npos) << r.status().message();
  };
  std::string s = good;
  s[0] = 'X';
  expect(s, "not an a800c plan file");
  s = good;
  PutLe(&s, 16, ~uint64_t{0}, 8);
  expect(s, "message_bytes");
  s = good;
  PutLe(&s, 24, 1u << 30, 8);
  expect(s, "blob_offset");
  s = good;
  PutLe(&s, 32, ~uint64_t{0} - 8, 8);
  expect(s, "does not end at the file size");
  s = good;
  PutLe(&s, 12, 128, 4);
  expect(s, "header_bytes is 128");
  s = good;
  PutLe(&s, 8, 0, 4);
  expect(s, "format version 0");
  expect("", "less than the 64-byte plan header");
  // Garbage message bytes with a valid checksum.
  std::string junk = good.substr(0, 64) + std::string(64, '\xff');
  PutLe(&junk, 16, 64, 8);
  PutLe(&junk, 24, 128, 8);
  PutLe(&junk, 32, 0, 8);
  PutLe(&junk, 40, Crc32c(junk.data() + 64, 64), 4);
  expect(junk, "not a valid a8.plan.Plan message");
}

TEST(PlanFileTest, LoweredPlanRoundTrips) {
  // A lowered plan (kernels with defaults filled in) survives the file.
  PlanFile pf = SmallPlan(8);
  auto bytes = SerializePlan(pf);
  ASSERT_TRUE(bytes.ok());
  auto again = SerializePlan(*ParsePlan(*bytes, "x"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*bytes, *again);
}

// A plan whose blob is larger than one direct read (8 MiB) and not a multiple of the 4 KiB
// block: SmallPlan plus an unused parameter of `floats` elements after w and b.
PlanFile LargePlan(uint32_t seed, int64_t floats) {
  PlanFile pf = SmallPlan(seed);
  plan::Plan& p = pf.plan;
  plan::Buffer* big = p.add_buffers();
  big->set_id(p.buffers_size() - 1);
  big->set_name("big");
  big->mutable_type()->set_dtype(plan::F32);
  big->mutable_type()->add_dims(floats);
  big->set_bytes(static_cast<uint64_t>(floats) * 4);
  big->set_region(plan::Buffer::PERSISTENT);
  big->set_role(plan::Buffer::PARAMETER);
  big->set_offset(128);
  big->set_first(-1);
  big->set_last(2);
  big->set_alias_of(-1);
  big->set_has_init(true);
  big->set_blob_offset(128);
  p.set_persistent_bytes((128 + big->bytes() + 63) / 64 * 64);
  std::mt19937 rng(seed);
  pf.blob.resize(128 + big->bytes());
  for (uint8_t& byte : pf.blob) byte = static_cast<uint8_t>(rng());
  p.set_blob_bytes(pf.blob.size());
  return pf;
}

// Drops the file's pages from the page cache (they are clean: the writer synced them); false
// when the file system cannot be read with O_DIRECT (then ReadPlanFile always maps).
bool EvictAndCanReadDirect(const std::string& path) {
  const int direct = open(path.c_str(), O_RDONLY | O_DIRECT);
  if (direct < 0) return false;
  close(direct);
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return true;
}

// The share of the file's pages in the page cache.
double CachedShare(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  struct stat st;
  fstat(fd, &st);
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  mincore(map, size, resident.data());
  munmap(map, size);
  size_t cached = 0;
  for (unsigned char r : resident) cached += r & 1;
  return static_cast<double>(cached) / static_cast<double>(resident.size());
}

// A plan not in the page cache is read with O_DIRECT (the page cache stays empty) and its
// checksum computed as the chunks arrive: the bytes come back exactly, and a flipped byte in the
// first chunk, across the chunk boundary or in the last partial block is still a crc32c error.
TEST(PlanFileTest, UncachedPlanIsReadDirectAndChecked) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("a8_plan_direct_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "big.plan").string();
  const PlanFile pf = LargePlan(9, (int64_t{3} << 20) + 25);  // 12 MiB + 100 bytes of weights
  ASSERT_TRUE(ValidatePlan(pf, "big").ok()) << ValidatePlan(pf, "big").message();
  ASSERT_TRUE(WritePlanFile(pf, path).ok());
  if (!EvictAndCanReadDirect(path)) {
    fs::remove_all(dir);
    GTEST_SKIP() << "the temporary folder's file system refuses O_DIRECT";
  }
  ASSERT_LT(CachedShare(path), 0.5);
  {
    auto back = ReadPlanFile(path);
    ASSERT_TRUE(back.ok()) << back.status().message();
    ASSERT_EQ(back->BlobSize(), pf.blob.size());
    const uint8_t* bytes = back->BlobBytes(0, pf.blob.size());
    ASSERT_NE(bytes, nullptr);
    EXPECT_TRUE(std::equal(pf.blob.begin(), pf.blob.end(), bytes));
    EXPECT_EQ(back->plan.SerializeAsString(), pf.plan.SerializeAsString());
  }
  EXPECT_LT(CachedShare(path), 0.5) << "read through the page cache, not with O_DIRECT";

  const uint64_t size = fs::file_size(path);
  for (uint64_t at : {uint64_t{100}, (uint64_t{8} << 20) - 1, uint64_t{8} << 20, size - 1}) {
    const int fd = open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char byte = 0;
    ASSERT_EQ(pread(fd, &byte, 1, static_cast<off_t>(at)), 1);
    const char flipped = static_cast<char>(byte ^ 0x10);
    ASSERT_EQ(pwrite(fd, &flipped, 1, static_cast<off_t>(at)), 1);
    close(fd);
    ASSERT_TRUE(EvictAndCanReadDirect(path));
    auto bad = ReadPlanFile(path);
    ASSERT_FALSE(bad.ok()) << "byte " << at;
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(bad.status().message().find("crc32c"), std::string::npos)
        << "byte " << at << ": " << bad.status().message();
    const int fix = open(path.c_str(), O_RDWR);
    ASSERT_EQ(pwrite(fix, &byte, 1, static_cast<off_t>(at)), 1);
    close(fix);
  }
  ASSERT_TRUE(EvictAndCanReadDirect(path));
  EXPECT_TRUE(ReadPlanFile(path).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace a8
