// FileIoTest: WriteFileAtomically's streamed form (O_DIRECT where the file system takes it): the
// file holds the pieces with its start rewritten by final_head, `observe` sees every byte from
// observe_from on once and in order, whatever the piece and staging-buffer boundaries.
#include "compiler/support/file_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace a8 {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(FileIoTest, StreamedWriteObservesEveryByteAndRewritesTheHead) {
  const fs::path dir = fs::temp_directory_path() / ("a8_file_io_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "f.bin").string();
  std::mt19937 rng(7);
  // Sizes around the 4 KiB block and the 4 MiB staging buffer, and an empty piece.
  for (const std::vector<size_t>& sizes :
       std::vector<std::vector<size_t>>{{100},
                                        {64, 4032},
                                        {64, 4033, 0, 17},
                                        {1000, (size_t{4} << 20) - 1000, 1},
                                        {64, (size_t{9} << 20) + 123, 4096}}) {
    std::vector<std::string> pieces;
    std::string expected;
    for (size_t n : sizes) {
      std::string p(n, '\0');
      for (char& c : p) c = static_cast<char>(rng());
      expected += p;
      pieces.push_back(std::move(p));
    }
    std::vector<std::string_view> views(pieces.begin(), pieces.end());
    std::string observed;
    WriteStream stream;
    stream.observe_from = 10;
    stream.observe = [&observed](std::string_view b) { observed.append(b); };
    stream.final_head = [] { return std::string("HEAD"); };
    ASSERT_TRUE(WriteFileAtomically(path, views, stream).ok());
    EXPECT_EQ(observed, expected.substr(std::min<size_t>(10, expected.size())));
    expected.replace(0, 4, "HEAD");
    const std::string written = ReadAll(path);
    EXPECT_EQ(written.size(), expected.size());
    EXPECT_TRUE(written == expected) << "sizes[0] " << sizes[0];
  }
  // No temporary is left beside the file.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace a8
