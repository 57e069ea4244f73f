#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace a8::testing {

// A path under the test temp folder that no other test process uses. ctest runs every test in
// its own process, many at a time, so a fixed name ("/tmp/x.npy") would let two tests overwrite
// each other's file mid-read. The name carries the test's own name and the process id.
inline std::string UniqueTempPath(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = info != nullptr ? std::string(info->test_suite_name()) + "." + info->name()
                                     : std::string("no_test");
  for (char& ch : test) {
    if (ch == '/') ch = '_';
  }
  return ::testing::TempDir() + "/a8_" + test + "_" + std::to_string(getpid()) + "_" + name;
}

}  // namespace a8::testing
