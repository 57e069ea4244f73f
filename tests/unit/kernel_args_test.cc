// KernelArgs' attribute getters (runtime/core/kernel_args.h): a missing attribute takes the op
// table's default, the one place an ONNX default is written; and every process of the unit tests
// checks, after its tests, that no entry read an attribute the table gives no default.
#include "runtime/core/kernel_args.h"

#include <gtest/gtest.h>

#include <string>

namespace a8 {
namespace {

// After the tests of a process: no one-argument getter met an attribute without a table default.
class UndeclaredAttributeReadsCheck : public ::testing::Environment {
 public:
  void TearDown() override {
    const std::string reads = TakeUndeclaredAttributeReads();
    EXPECT_EQ(reads, "") << "entries read these attributes with a one-argument getter, but the "
                            "op table gives them no default: pass a default or test attr() first";
  }
};
::testing::Environment* const kUndeclaredAttributeReadsCheck =
    ::testing::AddGlobalTestEnvironment(new UndeclaredAttributeReadsCheck);

KernelArgs ArgsOf(const plan::Kernel& k) { return KernelArgs(&k, {}, {}, {}); }

TEST(KernelArgsTest, AMissingAttributeTakesTheOpTableDefault) {
  plan::Kernel onehot, pad, leaky;
  onehot.set_op("OneHot");
  pad.set_op("Pad");
  leaky.set_op("LeakyRelu");
  EXPECT_EQ(ArgsOf(onehot).Int("axis"), -1);
  EXPECT_EQ(ArgsOf(pad).Str("mode"), "constant");
  EXPECT_EQ(ArgsOf(leaky).Float("alpha"), 0.01f);
  plan::Attribute* axis = onehot.add_attrs();
  axis->set_name("axis");
  axis->set_i(2);
  EXPECT_EQ(ArgsOf(onehot).Int("axis"), 2);

  plan::Kernel control;  // a qualified op: the learning-rate schedule
  control.set_op("a8.TrainControl");
  EXPECT_EQ(ArgsOf(control).Str("schedule"), "constant");
  EXPECT_EQ(TakeUndeclaredAttributeReads(), "");
}

TEST(KernelArgsTest, AReadWithoutATableDefaultIsRecorded) {
  EXPECT_EQ(TakeUndeclaredAttributeReads(), "");  // none before, from this process's other tests
  plan::Kernel pad, unknown;
  pad.set_op("Pad");
  unknown.set_op("a8.NoSuchOp");
  EXPECT_EQ(ArgsOf(pad).Int("pads_count"), 0);
  EXPECT_EQ(ArgsOf(unknown).Str("mode"), "");
  // With its own default the entry is fine.
  EXPECT_EQ(ArgsOf(pad).Int("pads_count", 7), 7);
  EXPECT_EQ(TakeUndeclaredAttributeReads(), "Pad.pads_count, a8.NoSuchOp.mode");
}

}  // namespace
}  // namespace a8
