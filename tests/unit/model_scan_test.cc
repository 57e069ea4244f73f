// ModelScanTest: StripInitializerData finds the float initializers' raw_data in a serialized model
// and leaves exactly those bytes out of the message; a mapped model file imports to the same IR
// as the parsed message.
#include "compiler/onnx/model_scan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <memory>
#include <utility>

#include "compiler/onnx/importer.h"
#include "compiler/support/hash.h"
#include "tests/unit/onnx_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::ParseModelText;
using ::a8::testing::RandomFloats;
using ::a8::testing::TempDir;

constexpr char kModel[] = R"(<ir_version: 8, opset_import: ["" : 13]>
m (float[2, 300] x) => (float[2, 4] y)
<float[300, 4] w = {0}, float[4] b = {0}, int64[2] shape = {2, 4}>
{
  h = MatMul (x, w)
  s = Add (h, b)
  y = Reshape (s, shape)
}
)";

// kModel with w and b given random values as raw_data (and shape's int64 values as raw_data too).
onnx::ModelProto ModelWithRawData() {
  onnx::ModelProto m = ParseModelText(kModel);
  uint32_t seed = 1;
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    std::string raw;
    if (t.data_type() == onnx::TensorProto::FLOAT) {
      int64_t n = 1;
      for (int64_t d : t.dims()) n *= d;
      std::vector<float> v = RandomFloats(static_cast<size_t>(n), seed++);
      raw.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
      t.clear_float_data();
    } else {
      const int64_t v[2] = {2, 4};
      raw.assign(reinterpret_cast<const char*>(v), sizeof(v));
      t.clear_int64_data();
    }
    t.set_raw_data(raw);
  }
  return m;
}

TEST(ModelScanTest, LeavesOutTheFloatRawDataAndFindsItAgain) {
  const onnx::ModelProto m = ModelWithRawData();
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  auto stripped = StripInitializerData(bytes);
  ASSERT_TRUE(stripped.has_value());
  ASSERT_EQ(stripped->raw_data.size(), 3u);
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(stripped->message));
  for (int i = 0; i < 3; ++i) {
    const onnx::TensorProto& t = m.graph().initializer(i);
    const onnx::TensorProto& u = back.graph().initializer(i);
    EXPECT_EQ(u.name(), t.name());
    if (t.data_type() == onnx::TensorProto::FLOAT) {
      // Out of the message, and a view of the scanned bytes holding exactly the tensor's data.
      EXPECT_FALSE(u.has_raw_data()) << t.name();
      ASSERT_TRUE(stripped->raw_data[i].has_value()) << t.name();
      EXPECT_EQ(*stripped->raw_data[i], t.raw_data()) << t.name();
      EXPECT_GE(stripped->raw_data[i]->data(), bytes.data());
      EXPECT_LE(stripped->raw_data[i]->data() + stripped->raw_data[i]->size(),
                bytes.data() + bytes.size());
    } else {
      EXPECT_EQ(u.raw_data(), t.raw_data()) << "integer tensors stay in the message";
      EXPECT_FALSE(stripped->raw_data[i].has_value());
    }
  }
  // Everything else is as it was: put the raw data back and compare the messages.
  for (int i = 0; i < 3; ++i) {
    if (stripped->raw_data[i]) {
      back.mutable_graph()->mutable_initializer(i)->set_raw_data(
          std::string(*stripped->raw_data[i]));
    }
  }
  EXPECT_EQ(back.SerializeAsString(), bytes);
}

TEST(ModelScanTest, BytesItCannotWalkAreLeftToProtobuf) {
  std::string bytes;
  ASSERT_TRUE(ModelWithRawData().SerializeToString(&bytes));
  EXPECT_FALSE(StripInitializerData(bytes.substr(0, bytes.size() - 7)).has_value());
  EXPECT_FALSE(StripInitializerData(std::string("\x0b\x01\x02", 3)).has_value());  // a group
  EXPECT_FALSE(StripInitializerData(std::string("\x3a\xff\xff\xff\x0f", 5)).has_value());
  auto empty = StripInitializerData("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->message.empty());
}

TEST(ModelScanTest, AMappedFileImportsAsTheParsedMessage) {
  const onnx::ModelProto m = ModelWithRawData();
  TempDir dir;
  const std::string path = dir.Write("m.onnx", m.SerializeAsString());
  std::string hash_a, hash_b;
  ImportOptions a, b;
  a.model_hash = &hash_a;
  b.model_hash = &hash_b;
  auto from_file = ImportOnnxFile(path, a);
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  auto from_bytes = ImportOnnxBytes(bytes, path, dir.path(), b);
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status().message();
  for (const char* name : {"w", "b", "shape"}) {
    const Value* x = (*from_file)->FindValue(name);
    const Value* y = (*from_bytes)->FindValue(name);
    ASSERT_TRUE(x != nullptr && y != nullptr && x->data() && y->data()) << name;
    EXPECT_EQ(x->role(), y->role()) << name;
    EXPECT_EQ(x->data()->bytes, y->data()->bytes) << name;
  }
  EXPECT_EQ(hash_a, ContentHash(bytes));  // hashed from the mapping, in chunks
  // A float weight is a view of the mapped file where its bytes start at a multiple of 4, else a
  // copy: either way its data is aligned for typed reads. The parsed message's weights are
  // copies (its strings go away with it).
  for (const char* name : {"w", "b"}) {
    const TensorBytes& bytes = (*from_file)->FindValue(name)->data()->bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % 4, 0u) << name;
    EXPECT_FALSE((*from_bytes)->FindValue(name)->data()->bytes.is_view()) << name;
  }
}

// TensorBytes: a view keeps its owner alive and shares it when copied; the first write copies
// the viewed bytes and lets the owner go, leaving them as they were.
TEST(TensorBytesTest, AViewIsSharedUntilWrittenThenCopied) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::vector<uint8_t>{1, 2, 3, 4, 5});
  std::weak_ptr<std::vector<uint8_t>> alive = owned;
  TensorData viewed;
  viewed.bytes = TensorBytes::View(owned->data(), owned->size(), owned);
  owned.reset();  // the view keeps it
  ASSERT_FALSE(alive.expired());
  const TensorData& w = viewed;  // reads through a const path never copy
  EXPECT_TRUE(w.bytes.is_view());
  EXPECT_EQ(w.bytes.size(), 5u);
  EXPECT_EQ(w.bytes[4], 5);

  TensorData edited = w;  // shares the view
  EXPECT_TRUE(edited.bytes.is_view());
  EXPECT_EQ(std::as_const(edited).bytes.data(), w.bytes.data());
  edited.mutable_data<uint8_t>()[0] = 9;  // copies first
  EXPECT_FALSE(edited.bytes.is_view());
  EXPECT_TRUE(w.bytes.is_view());
  EXPECT_EQ(w.bytes[0], 1);
  EXPECT_EQ(edited.bytes[0], 9);
  EXPECT_FALSE(edited.bytes == w.bytes);
  edited.bytes.assign(w.bytes.begin(), w.bytes.end());
  EXPECT_TRUE(edited.bytes == w.bytes);

  viewed.bytes.assign(3, 0);  // the last view lets its owner go
  EXPECT_TRUE(alive.expired());
  EXPECT_EQ(w.bytes.size(), 3u);
}

}  // namespace
}  // namespace a8
