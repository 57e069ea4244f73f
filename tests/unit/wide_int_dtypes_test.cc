// The 16-, 32- and 64-bit integer dtypes (i16, u16, u32, u64) outside the kernels: ONNX import of
// their tensors (typed fields and raw data), the IR text, the plan file (new enum values, old
// values unchanged so that plans written before read the same) and the kernel catalog's error
// for an op that does not take one. The .npy round trips are in npy_test.cc, the kernels in
// device_wide_int_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/printer.h"
#include "compiler/plan/kernel_catalog.h"
#include "compiler/plan/plan_file.h"
#include "tests/unit/onnx_test_util.h"
#include "tests/unit/runtime_test_util.h"

namespace a8 {
namespace {

using B = plan::Buffer;

// The plan's dtype numbers are a8::DType's; the ones plans were written with before stay put.
static_assert(plan::F32 == 0 && plan::F16 == 1 && plan::BF16 == 2 && plan::F64 == 3 &&
              plan::I64 == 4 && plan::I32 == 5 && plan::I8 == 6 && plan::U8 == 7 &&
              plan::BOOL == 8);
static_assert(plan::I16 == static_cast<int>(DType::kI16) &&
              plan::U16 == static_cast<int>(DType::kU16) &&
              plan::U32 == static_cast<int>(DType::kU32) &&
              plan::U64 == static_cast<int>(DType::kU64));

const DType kNew[] = {DType::kI16, DType::kU16, DType::kU32, DType::kU64};

TEST(WideIntDtypesTest, NamesSizesAndOnnxTypes) {
  const char* names[] = {"i16", "u16", "u32", "u64"};
  const size_t sizes[] = {2, 2, 4, 8};
  const int onnx[] = {onnx::TensorProto::INT16, onnx::TensorProto::UINT16,
                      onnx::TensorProto::UINT32, onnx::TensorProto::UINT64};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(DTypeName(kNew[i]), names[i]);
    EXPECT_EQ(*ParseDTypeName(names[i]), kNew[i]);
    EXPECT_EQ(DTypeSize(kNew[i]), sizes[i]);
    EXPECT_EQ(DTypeToOnnx(kNew[i]), onnx[i]);
    EXPECT_EQ(*DTypeFromOnnx(onnx[i]), kNew[i]);
    EXPECT_TRUE(IsInteger(kNew[i]));
    EXPECT_FALSE(IsFloat(kNew[i]));
  }
  EXPECT_FALSE(IsUnsigned(DType::kI16));
  EXPECT_TRUE(IsUnsigned(DType::kU64));
}

// Every new dtype in a plan: written, read back, the same dtypes and kernel names; a plan that
// uses only the old dtypes serializes to the bytes it always did (no new field is written).
TEST(WideIntDtypesTest, PlanRoundTripsEachNewDtype) {
  testing::PlanBuilder pb;
  for (DType t : kNew) {
    const std::string n(DTypeName(t));
    const int a = pb.Buffer("a_" + n, t, {3}, B::INPUT);
    const int b = pb.Buffer("b_" + n, t, {3}, B::INPUT);
    const int y = pb.Buffer("y_" + n, t, {3}, B::OUTPUT);
    pb.Kernel("Add", {a, b}, {y});
  }
  PlanFile pf = pb.Finish();
  ASSERT_TRUE(ValidatePlan(pf, "wide").ok()) << ValidatePlan(pf, "wide").message();
  auto bytes = SerializePlan(pf);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = ParsePlan(*bytes, "wide.plan");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->plan.buffers_size(), 12);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(back->plan.buffers(i).type().dtype(), static_cast<int>(kNew[i / 3]));
  EXPECT_EQ(back->plan.kernels(0).name(), "Add:i16,i16->i16");
  EXPECT_EQ(back->plan.kernels(3).name(), "Add:u64,u64->u64");
}

// An op whose kernels do not take the dtype: one error naming the kernel, before anything runs.
TEST(WideIntDtypesTest, AnOpWithoutTheDtypeIsOneClearError) {
  testing::PlanBuilder pb;
  const int x = pb.Buffer("x", DType::kU16, {4}, B::INPUT);
  const int y = pb.Buffer("y", DType::kU16, {4}, B::OUTPUT);
  pb.Kernel("Exp", {x}, {y});
  Status s = ValidatePlan(pb.Finish(), "exp.plan");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("Exp:u16->u16"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("u16"), std::string::npos) << s.message();
}

// Initializers in ONNX's typed fields (int32_data for 16-bit types, uint64_data for u32/u64) and
// in raw_data import to their values; the IR text prints u64 above INT64_MAX unsigned.
TEST(WideIntDtypesTest, ImportsTypedFieldsAndRawData) {
  onnx::ModelProto m = testing::ParseModelText(R"(<ir_version: 8, opset_import: ["" : 14]>
g (uint64[2] x, int16[2] p, uint32[1] s) => (uint64[2] y, int16[2] q, uint32[1] t) {
  y = Add (x, w)
  q = Add (p, c)
  t = Add (s, r)
})");
  onnx::TensorProto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::UINT64);
  w->add_dims(2);
  w->add_uint64_data(18446744073709551615ull);
  w->add_uint64_data(7);
  onnx::TensorProto* c = m.mutable_graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::INT16);
  c->add_dims(2);
  c->add_int32_data(-32768);
  c->add_int32_data(32767);
  onnx::TensorProto* r = m.mutable_graph()->add_initializer();
  r->set_name("r");
  r->set_data_type(onnx::TensorProto::UINT32);
  r->add_dims(1);
  const uint32_t raw = 4000000000u;
  r->set_raw_data(&raw, sizeof(raw));
  auto g = ImportOnnxModel(m, "wide.onnx", "", {});
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::string ir = PrintIrToString(**g);
  EXPECT_NE(ir.find("u64[2]"), std::string::npos) << ir;
  EXPECT_NE(ir.find("18446744073709551615"), std::string::npos) << ir;
  EXPECT_NE(ir.find("-32768"), std::string::npos) << ir;
  EXPECT_NE(ir.find("4000000000"), std::string::npos) << ir;
}

// A typed field out of the dtype's range is an error naming the tensor and the element.
TEST(WideIntDtypesTest, OutOfRangeTypedFieldsAreErrors) {
  onnx::ModelProto m = testing::ParseModelText(R"(<ir_version: 8, opset_import: ["" : 14]>
g (uint32[1] x) => (uint32[1] y) { y = Add (x, w) })");
  onnx::TensorProto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::UINT32);
  w->add_dims(1);
  w->add_uint64_data(4294967296ull);
  auto g = ImportOnnxModel(m, "bad.onnx", "", {});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("uint64_data[0] = 4294967296 is out of range for u32"),
            std::string::npos)
      << g.status().message();
}

}  // namespace
}  // namespace a8
