// The kernel ABI every backend shares: a kernel's bound operands (TensorArg: dtype, dims from the
// plan's static types, address) and attributes (KernelArgs), and the operand checks and attribute
// decoders that the CPU entries (runtime/cpu/ops_*.cc) and the device entries
// (runtime/device/ops_*.cc) both use, so that both reject a bad plan with the same message.
//
// Attribute getters take the op table's ONNX default for a missing optional attribute (the same
// default plan validation's shape rules read), so a plan that omits one runs as it was checked.
// Shape-like operands (Reshape's shape, Slice's starts...) are CONSTANT buffers whose bytes are
// already in the persistent region (TensorArg::host_data on a device backend); output dims come
// from the output buffers' types.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/ir/types.h"
#include "compiler/plan/plan.pb.h"
#include "kernels/common/kernel_types.h"
#include "kernels/common/optim_math.h"
#include "runtime/core/backend.h"

namespace a8 {

class Attribute;  // compiler/ir/attribute.h: an op table default

struct TensorArg {
  bool present = false;  // false for an absent optional input/output
  DType dtype = DType::kF32;
  Dims dims;
  uint8_t* data = nullptr;
  // A host copy of the bytes of a CONSTANT buffer where `data` is device memory (the device
  // backends set it; null otherwise): host setup code reads shape-like operands through it.
  const uint8_t* host = nullptr;
  // A 4-D activation the CPU backend's fast mode stores NHWC (dims stay [N, C, H, W]; only the
  // kernels that take it see one: runtime/cpu/channels_last.h).
  bool channels_last = false;
  const uint8_t* host_data() const { return host != nullptr ? host : data; }
  int64_t count() const { return NumElements(dims); }
  size_t bytes() const { return static_cast<size_t>(count()) * DTypeSize(dtype); }
};

class KernelArgs {
 public:
  KernelArgs(const plan::Kernel* kernel, std::vector<TensorArg> in, std::vector<TensorArg> out,
             std::vector<TensorArg> tensor_attrs)
      : kernel_(kernel),
        in_(std::move(in)),
        out_(std::move(out)),
        tensor_attrs_(std::move(tensor_attrs)) {}

  const plan::Kernel& kernel() const { return *kernel_; }
  int num_inputs() const { return static_cast<int>(in_.size()); }
  int num_outputs() const { return static_cast<int>(out_.size()); }
  bool has_in(int i) const { return i < num_inputs() && in_[i].present; }
  bool has_out(int i) const { return i < num_outputs() && out_[i].present; }
  // in(i)/out(i) of an absent operand is a TensorArg with present = false.
  const TensorArg& in(int i) const { return i < num_inputs() ? in_[i] : absent_; }
  const TensorArg& out(int i) const { return i < num_outputs() ? out_[i] : absent_; }
  // The bytes of operand i, or null when it is absent.
  const void* in_data(int i) const { return has_in(i) ? in_[i].data : nullptr; }
  void* out_data(int i) const { return has_out(i) ? out_[i].data : nullptr; }
  // Operand i itself, or null when it is absent (an optional operand passed on as a pointer).
  const TensorArg* in_or_null(int i) const { return has_in(i) ? &in_[i] : nullptr; }

  const plan::Attribute* attr(const std::string& name) const;
  // The plan's value of attribute `name`, else its default in the op table (AttrSpec of the
  // kernel's op, compiler/ir/op_table.h: the one place an ONNX default is written), else 0 or ""
  // (an attribute without a default: test attr(name) first where its absence means something).
  int64_t Int(const std::string& name) const;
  float Float(const std::string& name) const;
  std::string Str(const std::string& name) const;
  // The plan's value, else `dflt`: for attributes the op table does not declare for the op (the
  // a8 ops' own settings) or declares without a default.
  int64_t Int(const std::string& name, int64_t dflt) const;
  float Float(const std::string& name, float dflt) const;
  std::string Str(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> Ints(const std::string& name) const;    // empty when missing
  const TensorArg* TensorAttr(const std::string& name) const;  // null when missing

  // The values of integer input `i` (i64 or i32; an absent input gives an empty list).
  StatusOr<std::vector<int64_t>> ConstInts(int i) const;

  StepInfo step;

  // A copy whose inputs all have a host view (TensorArg::host = data), as a device entry that
  // runs on host memory (the CPU backend's shared bodies) may read any operand.
  KernelArgs WithHostInputs() const;

 private:
  // The op table's default of attribute `name` of the kernel's op; null where there is none.
  const Attribute* TableDefault(const std::string& name) const;

  const plan::Kernel* kernel_;
  std::vector<TensorArg> in_, out_, tensor_attrs_;
  TensorArg absent_;
};

// The attributes read with a one-argument getter (KernelArgs::Int(name)...) while absent from the
// plan and without a default in the op table, as "op.attr, ..." (sorted), since the last call:
// empty unless an entry reads an attribute the table gives no default (tests/unit checks it after
// the tests of every process, kernel_args_test.cc).
std::string TakeUndeclaredAttributeReads();

// Operand checks shared by the CPU and CUDA entries. Operands of one kernel must agree in element
// count (the compiler's shape rules guarantee it for plans it writes; a hand-edited plan gets an
// error, not an out-of-bounds access); input i must be a `dtype` scalar.
Status RequireSameCount(const KernelArgs& a, const TensorArg& t, const TensorArg& like,
                        const char* what);
Status RequireScalar(const KernelArgs& a, int i, DType dtype, const char* what);
// Input 0 and output 0 hold the same number of bytes (Copy, BitCast) or of elements (Cast).
Status RequireSameBytesInOut(const KernelArgs& a);
Status RequireSameCountInOut(const KernelArgs& a);
// The indices operand `idx` of `op` is i64 or i32; else an error of kind `code` (GatherND and
// the scatters say InvalidInput, a8.GatherGrad Unsupported, as the CPU's GatherGrad kernel does).
Status RequireIndexDType(const TensorArg& idx, const char* op,
                         StatusCode code = StatusCode::kInvalidInput);
// `t` (named `what` in the message) has at least `min_rank` dims.
Status CheckRank(const KernelArgs& a, const TensorArg& t, const char* what, size_t min_rank);
// The spatial dims of an [N, C, d...] tensor (none below rank 3).
Dims SpatialDims(const Dims& d);
// The ONNX preview-training optimizers' operands: R (an f32 or f64 scalar), T (an i64 scalar),
// then `groups` groups of n tensors (X, G, states...) and (groups - 1) groups of outputs, each
// group member's tensors and outputs of one dtype and size.
Status CheckOnnxOptimizerOperands(const KernelArgs& a, int groups);
// a8.TrainControl's and a8.UpdateScale's operand and attribute checks and attributes (the CPU
// and CUDA entries read their scalar inputs themselves: the host or the device).
StatusOr<cpu::TrainControlParams> TrainControlOperands(const KernelArgs& a);
StatusOr<cpu::UpdateScaleParams> UpdateScaleOperands(const KernelArgs& a);
// a8.SgdUpdate's / a8.AdamUpdate's operand checks (the control vector, input 2, is f32[kCtlSize];
// every tensor has the parameter's size; SGD's momentum buffer comes as input 3 and output 1
// together, and momentum needs it; Adam's optional scale, input 5, is an f32 scalar and its
// optional working copy, output 3, f16 or bf16 of an f32 parameter) and attributes.
StatusOr<cpu::SgdParams> SgdUpdateOperands(const KernelArgs& a);
StatusOr<cpu::AdamParams> AdamUpdateOperands(const KernelArgs& a);
// Conv / ConvTranspose / a8.ConvGradFilter geometry from the operands' dims and the attributes.
StatusOr<ConvParams> ConvParamsOf(const KernelArgs& a, bool transpose);
// a8.FusedConv(X, W, B?, Z?){Conv's, activation}: Conv's geometry, whether the activation is
// Relu ("relu"; "none": none), and Z (when present) Y's size and dtype.
struct FusedConvArgs {
  ConvParams conv;
  bool relu = false;
};
StatusOr<FusedConvArgs> FusedConvOperands(const KernelArgs& a);
// a8.FusedMatMul(A, B, bias?, aux?){epilogue, approximate, trans_b} -> (Y, out1?): Y [m, n] is
// A [..., k] as [m, k] times B [k, n] ([n, k] with trans_b); bias [n], aux and out1 Y's size
// (out1 [n] when it is the bias gradient), every operand of A's dtype. Both backends' checks.
StatusOr<FusedMatMulParams> FusedMatMulOperands(const KernelArgs& a);
// a8.UnscaleCheckFinite(scale, g_1..g_n) -> (o_1..o_n, found_inf): scale an f32 scalar, each
// gradient present and of a float dtype with an f32 output of its size, found_inf an f32 scalar.
// Returns n.
StatusOr<int> UnscaleCheckFiniteOperands(const KernelArgs& a);
// The tensors of a multi-tensor kernel, in operand order.
struct TensorList {
  std::vector<DType> dtypes;
  std::vector<int64_t> counts;
  std::vector<const void*> data;
};
// a8.GlobalNormSq(x_1..x_n) -> sum and a8.CheckFinite(x_1..x_n) -> found_inf: each x present
// and of a float dtype, the result one f32.
StatusOr<TensorList> FloatsToScalarOperands(const KernelArgs& a);
// a8.ConvGradFilter(dY, X){kernel_shape, strides, dilations, pads, group}: the forward's
// ConvParams (X of rank >= 3), with dY checked against the convolution's output dims.
StatusOr<ConvParams> ConvGradFilterParams(const KernelArgs& a);
// Pad's `pads` given for `axes` only (opset 18) as the full [begins..., ends...] of a rank-`rank`
// tensor; `pads` unchanged when `axes` is empty.
Status ExpandPadAxes(int64_t rank, const std::vector<int64_t>& axes, std::vector<int64_t>* pads);
// A pool kernel's attributes (kernel_shape, strides, dilations, pads, ceil_mode,
// count_include_pad, storage_order) for an input of `x_dims` [N, C, d...] (rank >= 3, checked
// by the caller) of `dtype`; PoolOutputDims validates the geometry.
PoolParams PoolParamsFromKernel(const KernelArgs& a, const Dims& x_dims, DType dtype);
// The output spatial dims of a convolution (transposed or not) or a pool, or InvalidInput when
// the geometry is inconsistent. One rule for every backend: the CPU kernels' own
// (kernels/cpu/conv.h ConvOutputSpatial, pool.h PoolOutputSpatial).
StatusOr<Dims> ConvOutputDims(const ConvParams& p, bool transpose);
StatusOr<Dims> PoolOutputDims(const PoolParams& p);
// The first element of operand `t` as a float, read from `bytes`, the operand's bytes that host
// code may read (a device entry's HostBytes), for the host-side checks of a device entry; false
// when `bytes` is null or `t` is absent or empty.
bool HostFloat(const TensorArg& t, const uint8_t* bytes, float* v);
// The plan buffer `id` as a kernel operand (absent for id < 0), at `buffers[id]`.
TensorArg BindBuffer(const plan::Plan& plan, const std::vector<uint8_t*>& buffers, int id);

// "f32,f16,bf16,f64" for the --list-kernels listing.
std::string DTypeList(const std::vector<DType>& types);

// The LossParams of a loss kernel or its gradient (ops_nn.cc): scores of `scores_dims`
// [N, C, d...], input 0's dtype, labels at input `labels_input`, the `reduction` and
// `ignore_index` attributes.
StatusOr<LossParams> LossParamsFromKernel(const KernelArgs& a, const Dims& scores_dims,
                                          int labels_input);

// Dtype sets.
inline const std::vector<DType> kFloatTypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};
inline const std::vector<DType> kNumericTypes = DTypeVector(kNumericDTypes);
inline const std::vector<DType> kAllTypes = DTypeVector(kAllDTypes);
inline const std::vector<DType> kIntegerTypes = DTypeVector(kIntegerDTypes);

// BitCast from `in` to `out` (of one width) as a Cast between these two dtypes: the unsigned
// integer of that width to itself (a bit-exact copy), or u8 -> bool for a bool output, so that
// every byte but 0 reads as true (1), as a bool must be stored.
inline std::pair<DType, DType> BitCastAsCast(DType in, DType out) {
  if (out == DType::kBool) return {in == DType::kBool ? DType::kBool : DType::kU8, DType::kBool};
  switch (DTypeSize(in)) {
    case 8:
      return {DType::kU64, DType::kU64};
    case 4:
      return {DType::kU32, DType::kU32};
    case 2:
      return {DType::kU16, DType::kU16};
    default:
      return {DType::kU8, DType::kU8};
  }
}

}  // namespace a8
