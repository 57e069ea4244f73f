// Helpers shared by the importer and exporter tests: models from ONNX text, temp folders.
#pragma once

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "compiler/onnx/importer.h"

namespace a8::testing {

// Parses ONNX text syntax; a parse failure fails the test.
inline onnx::ModelProto ParseModelText(const std::string& text) {
  onnx::ModelProto m;
  auto status = onnx::OnnxParser::Parse(m, text.c_str());
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage() << "\n" << text;
  return m;
}

inline StatusOr<std::unique_ptr<Graph>> ImportText(const std::string& text,
                                                   const ImportOptions& opts = {}) {
  return ImportOnnxModel(ParseModelText(text), "test.onnxtxt", "", opts);
}

// The error of importing `text`, which is expected to fail (a success fails the test).
inline Status ImportError(const std::string& text, const ImportOptions& opts = {}) {
  auto g = ImportText(text, opts);
  EXPECT_FALSE(g.ok());
  return g.ok() ? Status::Ok() : g.status();
}

// How many nodes of `op` the graph has.
inline int CountOps(const Graph& g, const std::string& op) {
  int n = 0;
  for (Node* node : g.NodeList()) n += node->op() == op;
  return n;
}

inline std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "a8_onnx_XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) ? tmpl : std::string();
    EXPECT_FALSE(path_.empty());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& bytes) const {
    std::string p = (std::filesystem::path(path_) / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace a8::testing
