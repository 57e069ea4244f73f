#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace a8::testing {

// Removes the paths UniqueTempPath handed out when the test program ends: all of them when
// every test passed, none when one failed (they are kept for a look, and listed).
class TempPathCleaner : public ::testing::EmptyTestEventListener {
 public:
  static TempPathCleaner& Get() {
    // Owned by gtest's listener list once appended; appended on first use, from a test body.
    static TempPathCleaner* cleaner = [] {
      auto* c = new TempPathCleaner;
      ::testing::UnitTest::GetInstance()->listeners().Append(c);
      return c;
    }();
    return *cleaner;
  }
  void Add(const std::string& path) { paths_.push_back(path); }
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    if (!unit.Passed()) {
      std::fprintf(stderr, "a test failed: its temp files are kept (%zu paths, first %s)\n",
                   paths_.size(), paths_.empty() ? "-" : paths_.front().c_str());
      return;
    }
    for (const std::string& p : paths_) {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
    }
  }

 private:
  std::vector<std::string> paths_;
};

// A path under the test temp folder that no other test process uses. ctest runs every test in
// its own process, many at a time, so a fixed name ("/tmp/x.npy") would let two tests overwrite
// each other's file mid-read. The name carries the test's own name and the process id. What a
// test writes there (a file, or a folder) is removed when the program ends (TempPathCleaner).
inline std::string UniqueTempPath(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = info != nullptr ? std::string(info->test_suite_name()) + "." + info->name()
                                     : std::string("no_test");
  for (char& ch : test) {
    if (ch == '/') ch = '_';
  }
  std::string path =
      ::testing::TempDir() + "/a8_" + test + "_" + std::to_string(getpid()) + "_" + name;
  TempPathCleaner::Get().Add(path);
  return path;
}

}  // namespace a8::testing
