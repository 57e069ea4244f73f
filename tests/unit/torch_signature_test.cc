// TorchSignatureTest: the dynamo exporter's graph signature (GraphProto.metadata_props) makes a
// float BUFFER constant on import (Llama's rotary inv_freq), except BatchNormalization's running
// statistics, which training updates as state (compiler/onnx/torch_signature.h).
#include "compiler/onnx/torch_signature.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include "compiler/ir/graph.h"
#include "tests/unit/onnx_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::ParseModelText;

constexpr char kSignature[] =
    "\n# inputs\n"
    "p_w: PARAMETER target='w'\n"
    "b_rot_inv_freq: BUFFER target='rot_inv_freq' persistent=False\n"
    "b_bn_running_mean: BUFFER target='bn_running_mean' persistent=True\n"
    "b_bn_running_var: BUFFER target='bn_running_var' persistent=True\n"
    "x: USER_INPUT\n\n# outputs\ny: USER_OUTPUT\n";

// GraphProto.metadata_props entry {key, value}: through the field where the linked onnx knows it
// (IR 10), else as the unknown field 16 that protobuf keeps on parse.
void AddGraphMetadata(onnx::GraphProto* g, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto e;
  e.set_key(key);
  e.set_value(value);
  const google::protobuf::FieldDescriptor* f = g->GetDescriptor()->FindFieldByNumber(16);
  if (f != nullptr) {
    g->GetReflection()->AddMessage(g, f)->ParseFromString(e.SerializeAsString());
  } else {
    g->GetReflection()->MutableUnknownFields(g)->AddLengthDelimited(16, e.SerializeAsString());
  }
}

onnx::ModelProto Model() {
  return ParseModelText(
      "<ir_version: 10, opset_import: [\"\" : 17]>\n"
      "g (float[2, 3] x) => (float[2, 3] y)\n"
      "<float[3] w = {1, 2, 3}, float[3] rot_inv_freq = {0.5, 0.25, 0.125},\n"
      " float[3] s = {1, 1, 1}, float[3] b = {0, 0, 0},\n"
      " float[3] bn_running_mean = {0, 0.1, 0.2}, float[3] bn_running_var = {1, 1.1, 1.2}>\n"
      "{ a = Mul (x, w)\n  r = Mul (a, rot_inv_freq)\n"
      "  y = BatchNormalization (r, s, b, bn_running_mean, bn_running_var) }");
}

TEST(TorchSignatureTest, ParsesTheBufferLines) {
  EXPECT_EQ(ParseTorchSignatureBuffers(kSignature),
            (std::set<std::string>{"rot_inv_freq", "bn_running_mean", "bn_running_var"}));
  EXPECT_TRUE(ParseTorchSignatureBuffers("").empty());
  EXPECT_TRUE(ParseTorchSignatureBuffers("p_w: PARAMETER target='w'\n").empty());
}

TEST(TorchSignatureTest, ReadsTheGraphMetadata) {
  onnx::ModelProto m = Model();
  EXPECT_TRUE(TorchExportBuffers(m.graph()).empty());
  AddGraphMetadata(m.mutable_graph(), "pkg.torch.export.ExportedProgram.range_constraints", "{}");
  AddGraphMetadata(m.mutable_graph(), kTorchGraphSignatureKey, kSignature);
  EXPECT_EQ(TorchExportBuffers(m.graph()).count("rot_inv_freq"), 1u);
  // It survives serialization (the importer parses a copy of the file's bytes).
  onnx::ModelProto again;
  ASSERT_TRUE(again.ParseFromString(m.SerializeAsString()));
  EXPECT_EQ(TorchExportBuffers(again.graph()).size(), 3u);
}

TEST(TorchSignatureTest, BufferIsConstantButRunningStatisticsAreNot) {
  onnx::ModelProto m = Model();
  auto plain = ImportOnnxModel(m, "test.onnx", "", {});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ((*plain)->FindValue("rot_inv_freq")->role(), ValueRole::kParameter);

  AddGraphMetadata(m.mutable_graph(), kTorchGraphSignatureKey, kSignature);
  auto g = ImportOnnxModel(m, "test.onnx", "", {});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->FindValue("rot_inv_freq")->role(), ValueRole::kConstant);
  EXPECT_EQ((*g)->FindValue("w")->role(), ValueRole::kParameter);
  EXPECT_EQ((*g)->FindValue("bn_running_mean")->role(), ValueRole::kParameter);
  EXPECT_EQ((*g)->FindValue("bn_running_var")->role(), ValueRole::kParameter);
}

}  // namespace
}  // namespace a8
