// .npy reading and writing: round trips of every dtype, files written by numpy itself, and clear
// errors for malformed headers, truncated data, Fortran order and unsupported dtypes.
#include "runtime/core/npy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/unit/temp_path_util.h"

namespace a8 {
namespace {

std::string Header(const std::string& dict, int major = 1) {
  std::string h = dict + "\n";
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  uint32_t n = static_cast<uint32_t>(h.size());
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>(n >> 8);
  if (major > 1) out += std::string("\0\0", 2);
  return out + h;
}

// Makes a fresh temporary folder named after `name` and runs the numpy statements `saves` in
// python3 with d bound to the folder's path; returns the folder, or "" where numpy is missing or
// the statements failed.
std::string SaveWithNumpy(const std::string& name, const std::string& saves) {
  std::string dir = a8::testing::UniqueTempPath(name);
  std::filesystem::create_directories(dir);
  std::string cmd = "python3 -c \"import numpy as np; d='" + dir + "'; " + saves + "\"";
  return std::system(cmd.c_str()) == 0 ? dir : "";
}

TEST(NpyTest, RoundTripsEveryDtype) {
  std::mt19937 rng(7);
  for (DType t : kAllDTypes) {
    std::vector<int64_t> dims = {3, 1, 5};
    std::vector<uint8_t> data(15 * DTypeSize(t));
    for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
    if (t == DType::kBool)
      for (uint8_t& b : data) b &= 1;
    std::string bytes = SerializeNpy(t, dims, data.data());
    EXPECT_EQ(bytes.find("\n") % 64, 63u) << "header padded to 64 bytes";
    auto arr = ParseNpy(bytes, "t.npy", t == DType::kBF16);
    ASSERT_TRUE(arr.ok()) << DTypeName(t) << ": " << arr.status().message();
    EXPECT_EQ(arr->dtype, t);
    EXPECT_EQ(arr->dims, dims);
    EXPECT_EQ(arr->data, data);
  }
}

TEST(NpyTest, ScalarsAndEmptyArrays) {
  float v = 2.5f;
  auto s = ParseNpy(SerializeNpy(DType::kF32, {}, &v), "s.npy");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->dims.empty());
  EXPECT_EQ(s->data.size(), 4u);
  auto e = ParseNpy(SerializeNpy(DType::kI64, {0, 3}, nullptr), "e.npy");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->dims, (std::vector<int64_t>{0, 3}));
}

// `<u2` is u16, and the bits of bf16 only where the caller reads a bf16 input.
TEST(NpyTest, U2IsU16AndBf16OnlyWhenAsked) {
  uint16_t v[2] = {0x3f80, 0xc000};
  std::string bytes = SerializeNpy(DType::kBF16, {2}, v);
  EXPECT_NE(bytes.find("'<u2'"), std::string::npos);
  auto bf = ParseNpy(bytes, "b.npy", true);
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ(bf->dtype, DType::kBF16);
  auto u16 = ParseNpy(bytes, "b.npy", false);
  ASSERT_TRUE(u16.ok()) << u16.status().message();
  EXPECT_EQ(u16->dtype, DType::kU16);
  EXPECT_EQ(u16->data, bf->data);
  EXPECT_EQ(SerializeNpy(DType::kU16, {2}, v), bytes);
}

// The 16-, 32- and 64-bit integer dtypes against numpy, both ways, values at their limits.
TEST(NpyTest, WideIntegersMatchNumpy) {
  if (std::system("python3 -c 'import numpy' 2>/dev/null") != 0) GTEST_SKIP() << "no numpy";
  const std::string dir =
      SaveWithNumpy("numpy_ints",
                    "np.save(d+'/i2.npy', np.array([-32768, 32767], dtype=np.int16)); "
                    "np.save(d+'/u2.npy', np.array([65535, 1], dtype=np.uint16)); "
                    "np.save(d+'/u4.npy', np.array([4294967295, 2], dtype=np.uint32)); "
                    "np.save(d+'/u8.npy', np.array([18446744073709551615, 3], dtype=np.uint64))");
  ASSERT_NE(dir, "");
  struct Case {
    const char* file;
    DType dtype;
    uint64_t first;  // element 0's bits
  };
  for (const Case& c : {Case{"i2", DType::kI16, 0x8000}, Case{"u2", DType::kU16, 0xffff},
                        Case{"u4", DType::kU32, 0xffffffffu}, Case{"u8", DType::kU64, ~0ull}}) {
    auto arr = ReadNpyFile(dir + "/" + c.file + ".npy");
    ASSERT_TRUE(arr.ok()) << c.file << ": " << arr.status().message();
    EXPECT_EQ(arr->dtype, c.dtype) << c.file;
    EXPECT_EQ(arr->dims, (std::vector<int64_t>{2})) << c.file;
    uint64_t first = 0;
    std::memcpy(&first, arr->data.data(), DTypeSize(c.dtype));
    EXPECT_EQ(first, c.first) << c.file;
    // numpy reads ours back as the same dtype and values.
    const std::string ours = dir + "/ours_" + c.file + ".npy";
    ASSERT_TRUE(WriteNpyFile(ours, c.dtype, arr->dims, arr->data.data()).ok());
    std::string check = "python3 -c \"import numpy as np; a = np.load('" + ours +
                        "'); b = " + "np.load('" + dir + "/" + c.file +
                        ".npy'); assert a.dtype == b.dtype " + "and (a == b).all()\"";
    EXPECT_EQ(std::system(check.c_str()), 0) << c.file;
  }
}

TEST(NpyTest, ReadsFilesWrittenByNumpy) {
  if (std::system("python3 -c 'import numpy' 2>/dev/null") != 0) GTEST_SKIP() << "no numpy";
  const std::string dir =
      SaveWithNumpy("numpy",
                    "np.save(d+'/f4.npy', np.arange(12, dtype=np.float32).reshape(3,4) / 8); "
                    "np.save(d+'/f2.npy', np.array([1.5, -2], dtype=np.float16)); "
                    "np.save(d+'/i8.npy', np.arange(-3, 3, dtype=np.int64).reshape(2, 3)); "
                    "np.save(d+'/b1.npy', np.array([[True, False]])); "
                    "np.save(d+'/u1.npy', np.array(7, dtype=np.uint8)); "
                    "np.save(d+'/big.npy', np.zeros(3, dtype='>f4')); "
                    "np.save(d+'/fo.npy', np.asfortranarray(np.ones((2, 3), dtype=np.float32))); "
                    "np.save(d+'/c8.npy', np.zeros(2, dtype=np.complex64)); "
                    "np.lib.format.write_array(open(d+'/v3.npy','wb'), np.ones(2, dtype=np.int32), "
                    "version=(3, 0))");
  ASSERT_NE(dir, "");
  auto f4 = ReadNpyFile(dir + "/f4.npy");
  ASSERT_TRUE(f4.ok()) << f4.status().message();
  EXPECT_EQ(f4->dims, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(reinterpret_cast<const float*>(f4->data.data())[11], 11.0f / 8);
  auto f2 = ReadNpyFile(dir + "/f2.npy");
  ASSERT_TRUE(f2.ok());
  EXPECT_EQ(f2->dtype, DType::kF16);
  EXPECT_EQ(reinterpret_cast<const uint16_t*>(f2->data.data())[0], 0x3e00);
  auto i8 = ReadNpyFile(dir + "/i8.npy");
  ASSERT_TRUE(i8.ok());
  EXPECT_EQ(reinterpret_cast<const int64_t*>(i8->data.data())[0], -3);
  auto b1 = ReadNpyFile(dir + "/b1.npy");
  ASSERT_TRUE(b1.ok());
  EXPECT_EQ(b1->dtype, DType::kBool);
  EXPECT_EQ(b1->data, (std::vector<uint8_t>{1, 0}));
  auto u1 = ReadNpyFile(dir + "/u1.npy");
  ASSERT_TRUE(u1.ok());
  EXPECT_TRUE(u1->dims.empty());
  auto v3 = ReadNpyFile(dir + "/v3.npy");
  ASSERT_TRUE(v3.ok()) << v3.status().message();
  EXPECT_EQ(v3->dtype, DType::kI32);
  auto big = ReadNpyFile(dir + "/big.npy");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("'>f4'"), std::string::npos) << big.status().message();
  EXPECT_NE(big.status().message().find("big.npy"), std::string::npos);
  auto fo = ReadNpyFile(dir + "/fo.npy");
  ASSERT_FALSE(fo.ok());
  EXPECT_NE(fo.status().message().find("fortran_order"), std::string::npos);
  auto c8 = ReadNpyFile(dir + "/c8.npy");
  ASSERT_FALSE(c8.ok());
  EXPECT_NE(c8.status().message().find("'<c8'"), std::string::npos);
  // And numpy reads what we write.
  int32_t v[6] = {1, -2, 3, -4, 5, -6};
  ASSERT_TRUE(WriteNpyFile(dir + "/ours.npy", DType::kI32, {2, 3}, v).ok());
  std::string check = "python3 -c \"import numpy as np; a = np.load('" + dir +
                      "/ours.npy'); assert a.dtype == np.int32 and a.shape == (2, 3) and "
                      "a[1, 2] == -6 and a.flags.c_contiguous\"";
  EXPECT_EQ(std::system(check.c_str()), 0);
}

TEST(NpyTest, RejectsMalformedHeaders) {
  const char* bad[] = {
      "{'descr': '<f4', 'fortran_order': False}",                            // no shape
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,3}",             // unclosed tuple
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }",          // negative dim
      "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }",           // bad bool
      "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",  // structured
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",     // unknown key
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }",
      "{'descr: '<f4'",
      "",
  };
  for (const char* h : bad) {
    auto r = ParseNpy(Header(h) + std::string(8, '\0'), "m.npy");
    ASSERT_FALSE(r.ok()) << h;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(r.status().message().rfind("m.npy: ", 0), 0u) << r.status().message();
  }
  EXPECT_FALSE(ParseNpy("not numpy at all", "m.npy").ok());
  EXPECT_FALSE(ParseNpy(std::string("\x93NUMPY\x01\x00\xff\xff", 10), "m.npy").ok());
  EXPECT_FALSE(ParseNpy(std::string("\x93NUMPY\x04\x00\x00\x00", 10), "m.npy").ok());
}

TEST(NpyTest, ChecksTheDataLength) {
  std::string h = Header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  auto shorter = ParseNpy(h + std::string(23, '\0'), "t.npy");
  ASSERT_FALSE(shorter.ok());
  EXPECT_NE(shorter.status().message().find("23 bytes"), std::string::npos)
      << shorter.status().message();
  EXPECT_FALSE(ParseNpy(h + std::string(25, '\0'), "t.npy").ok());
  EXPECT_TRUE(ParseNpy(h + std::string(24, '\0'), "t.npy").ok());
  // Version 2 header.
  std::string h2 = Header("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", 2);
  EXPECT_TRUE(ParseNpy(h2 + "abc", "t.npy").ok());
  // Truncated at every length: an error, never a crash.
  std::string full = h + std::string(24, '\0');
  for (size_t n = 0; n < full.size(); ++n) EXPECT_FALSE(ParseNpy(full.substr(0, n), "t.npy").ok());
}

TEST(NpyTest, MissingFileIsAnError) {
  auto r = ReadNpyFile("/nonexistent/x.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/x.npy"), std::string::npos);
}

}  // namespace
}  // namespace a8
