// The importer's external data: tensors stored beside the model file (offsets, lengths and paths
// checked). The rest of the importer's tests are importer_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "compiler/onnx/importer.h"
#include "tests/unit/onnx_test_util.h"

namespace a8::testing {
namespace {

using ::testing::HasSubstr;

class ImporterExternalDataTest : public ::testing::Test {
 protected:
  // Writes model.onnx with initializer `w` (f32[3,4]) stored externally with the given keys.
  std::string WriteModel(const std::vector<std::pair<std::string, std::string>>& keys) {
    onnx::ModelProto m = ParseModelText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 4] y) { y = MatMul (x, w) })");
    onnx::TensorProto* w = m.mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(3);
    w->add_dims(4);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : keys) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    std::string bytes;
    EXPECT_TRUE(m.SerializeToString(&bytes));
    return dir_.Write("model.onnx", bytes);
  }
  std::string WeightBytes(size_t extra_before) {
    std::string bytes(extra_before, 'z');
    bytes.append(reinterpret_cast<const char*>(weights_.data()), weights_.size() * 4);
    return bytes;
  }
  std::string ErrorFor(const std::vector<std::pair<std::string, std::string>>& keys) {
    auto g = ImportOnnxFile(WriteModel(keys));
    EXPECT_FALSE(g.ok());
    return g.ok() ? std::string() : g.status().message();
  }

  TempDir dir_;
  TempDir outside_;
  std::vector<float> weights_ = RandomFloats(12, 7);
};

TEST_F(ImporterExternalDataTest, ReadsDataAtOffset) {
  dir_.Write("w.bin", WeightBytes(16) + "trailing");
  auto g = ImportOnnxFile(WriteModel({{"location", "w.bin"}, {"offset", "16"}, {"length", "48"}}));
  ASSERT_TRUE(g.ok()) << g.status().message();
  Value* w = (*g)->FindValue("w");
  ASSERT_NE(w->data(), nullptr);
  ASSERT_EQ(w->data()->bytes.size(), 48u);
  EXPECT_EQ(std::memcmp(w->data()->bytes.data(), weights_.data(), 48), 0);
  // A view of the external file, mapped, not a copy: still there once the file is removed.
  EXPECT_TRUE(w->data()->bytes.is_view());
  std::filesystem::remove(dir_.path() + "/w.bin");
  EXPECT_EQ(std::memcmp(w->data()->bytes.data(), weights_.data(), 48), 0);

  std::filesystem::create_directory(dir_.path() + "/sub");
  dir_.Write("sub/w.bin", WeightBytes(0));
  g = ImportOnnxFile(WriteModel({{"location", "sub/w.bin"}}));
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_FLOAT_EQ((*g)->FindValue("w")->data()->data<float>()[5], weights_[5]);
}

TEST_F(ImporterExternalDataTest, RejectsPathsOutsideTheModelFolder) {
  std::string outside_file = outside_.Write("secret.bin", WeightBytes(0));
  EXPECT_THAT(ErrorFor({{"location", "../x"}}),
              HasSubstr("initializer 'w': external data key 'location' must not contain '..'"));
  EXPECT_THAT(ErrorFor({{"location", "/etc/passwd"}}),
              HasSubstr("external data key 'location' must be a path relative to the model's "
                        "folder, got '/etc/passwd'"));
  std::filesystem::create_symlink(outside_file, dir_.path() + "/link.bin");
  EXPECT_THAT(ErrorFor({{"location", "link.bin"}}), HasSubstr("outside the model's folder"));
  EXPECT_THAT(ErrorFor({{"location", "nothere.bin"}}), HasSubstr("does not exist"));
}

TEST_F(ImporterExternalDataTest, RejectsBadOffsetsAndLengths) {
  dir_.Write("short.bin", WeightBytes(0).substr(0, 40));
  EXPECT_THAT(ErrorFor({{"location", "short.bin"}, {"length", "48"}}),
              HasSubstr("external data key 'length' is 48: offset 0 + length runs past the end"));
  EXPECT_THAT(ErrorFor({{"location", "short.bin"}}),
              HasSubstr("gives 40 bytes (offset to end of file), but the tensor needs 48 bytes"));
  dir_.Write("w.bin", WeightBytes(0));
  EXPECT_THAT(ErrorFor({{"location", "w.bin"}, {"offset", "100"}}),
              HasSubstr("external data key 'offset' is 100, past the end"));
  EXPECT_THAT(ErrorFor({{"location", "w.bin"}, {"offset", "-4"}}),
              HasSubstr("external data key 'offset' must be a non-negative integer"));
  EXPECT_THAT(ErrorFor({{"location", "w.bin"}, {"length", "44"}}),
              HasSubstr("gives 44 bytes, but the tensor needs 48 bytes"));
  EXPECT_THAT(ErrorFor({{"location", "w.bin"}, {"mode", "x"}}),
              HasSubstr("unknown external data key 'mode'"));
  // In-memory models have no folder to resolve against.
  std::string bytes;
  {
    std::ifstream in(WriteModel({{"location", "w.bin"}}), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_THAT(ImportOnnxBytes(bytes, "mem", "").status().message(),
              HasSubstr("the model was not read from a file"));
}

}  // namespace
}  // namespace a8::testing
