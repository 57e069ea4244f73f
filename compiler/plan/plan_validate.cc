// Plan validation (plan_file.h: ValidatePlan): sizes, buffers, kernels against the catalog and
// the op table's shape rules, and bindings; the training fields are checked in
// plan_training_check.cc. The reader and the writer both run it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "compiler/ir/op_table.h"
#include "compiler/ir/types.h"
#include "compiler/plan/kernel_catalog.h"
#include "compiler/plan/plan_file.h"

namespace a8 {
namespace {

// No region, blob or message may exceed this (64 TiB): sizes stay far from overflow and a
// hostile plan cannot ask the runtime for an absurd allocation that wraps.
constexpr uint64_t kMaxBytes = uint64_t{1} << 46;
constexpr int kMaxRank = 64;

bool ValidDType(int d) { return plan::DType_IsValid(d); }
DType ToDType(int d) { return static_cast<DType>(d); }

Status CheckBuffer(const PlanFile& pf, int i, const std::string& src) {
  const plan::Plan& p = pf.plan;
  const plan::Buffer& b = p.buffers(i);
  const std::string where = src + ": " + PlanBufferWhere(b, i);
  const int64_t num_kernels = p.kernels_size();
  if (b.id() != i) return InvalidInput("{}: id is {}, expected its index {}", where, b.id(), i);
  if (b.name().empty()) return InvalidInput("{}: the name is empty", where);
  if (!ValidDType(b.type().dtype())) {
    return InvalidInput("{}: type.dtype {} is not a dtype", where, b.type().dtype());
  }
  if (b.type().dims_size() > kMaxRank) {
    return InvalidInput("{}: type has rank {}, more than {}", where, b.type().dims_size(),
                        kMaxRank);
  }
  TensorType type{ToDType(b.type().dtype()), {b.type().dims().begin(), b.type().dims().end()}};
  for (size_t d = 0; d < type.dims.size(); ++d) {
    if (type.dims[d] < 0) {
      return InvalidInput("{}: type.dims[{}] is negative ({})", where, d, type.dims[d]);
    }
  }
  auto elems = type.NumElements();
  if (!elems.ok())
    return InvalidInput("{}: type {}: {}", where, type.ToString(), elems.status().message());
  const uint64_t size = DTypeSize(type.dtype);
  if (static_cast<uint64_t>(*elems) > kMaxBytes / size) {
    return InvalidInput("{}: type {} is larger than {} bytes", where, type.ToString(), kMaxBytes);
  }
  const uint64_t bytes = static_cast<uint64_t>(*elems) * size;
  if (b.bytes() != bytes) {
    return InvalidInput("{}: bytes is {}, but type {} has {} bytes", where, b.bytes(),
                        type.ToString(), bytes);
  }
  const bool arena = b.region() == plan::Buffer::ARENA;
  if (!arena && b.region() != plan::Buffer::PERSISTENT) {
    return InvalidInput("{}: region {} is not ARENA or PERSISTENT", where, b.region());
  }
  if (b.role() < plan::Buffer::INTERMEDIATE || b.role() > plan::Buffer::CONSTANT) {
    return InvalidInput("{}: role {} is not a role", where, b.role());
  }
  const bool arena_role = b.role() == plan::Buffer::INTERMEDIATE ||
                          b.role() == plan::Buffer::INPUT || b.role() == plan::Buffer::OUTPUT;
  // A state update written in place: a kernel's result in the bytes of the parameter or state
  // it replaces (checked against Plan.updates by CheckTraining).
  const bool update_in_place = !arena && b.role() != plan::Buffer::INPUT && arena_role &&
                               b.alias_of() >= 0 && b.alias_of() < p.buffers_size() &&
                               b.alias_of() != i;
  if (update_in_place) {
    const plan::Buffer& t = p.buffers(b.alias_of());
    if (t.region() != plan::Buffer::PERSISTENT ||
        (t.role() != plan::Buffer::PARAMETER && t.role() != plan::Buffer::STATE) ||
        t.offset() != b.offset() || t.bytes() != b.bytes()) {
      return InvalidInput(
          "{}: a persistent result must share the offset and size of the "
          "parameter or state it updates (alias_of {})",
          where, b.alias_of());
    }
    if (b.first() < 0 || b.last() != num_kernels) {
      return InvalidInput(
          "{}: an update in place must be defined by a kernel and live to the "
          "end, not [{}, {}]",
          where, b.first(), b.last());
    }
    return Status::Ok();
  }
  if (arena != arena_role) {
    return InvalidInput("{}: a {} buffer must be in the {} region", where,
                        PlanBufferRoleName(b.role()), arena_role ? "ARENA" : "PERSISTENT");
  }
  if (b.offset() % p.alignment() != 0) {
    return InvalidInput("{}: offset {} is not a multiple of the alignment {}", where, b.offset(),
                        p.alignment());
  }
  const uint64_t region_bytes = arena ? p.arena_bytes() : p.persistent_bytes();
  if (b.offset() > region_bytes || bytes > region_bytes - b.offset()) {
    return InvalidInput("{}: offset {} + {} bytes is outside the {} ({} bytes)", where, b.offset(),
                        bytes, arena ? "arena" : "persistent region", region_bytes);
  }
  if (b.first() < -1 || b.first() > num_kernels || b.last() < -1 || b.last() > num_kernels ||
      b.first() > b.last()) {
    return InvalidInput("{}: live range [{}, {}] is outside [-1, {}] or reversed", where, b.first(),
                        b.last(), num_kernels);
  }
  if (!arena && (b.first() != -1 || b.last() != num_kernels)) {
    return InvalidInput("{}: a persistent buffer must live [-1, {}], not [{}, {}]", where,
                        num_kernels, b.first(), b.last());
  }
  if (b.role() == plan::Buffer::INPUT && b.first() != -1) {
    return InvalidInput("{}: an input must be live from -1, not {}", where, b.first());
  }
  if (b.role() != plan::Buffer::INPUT && arena && b.first() == -1) {
    return InvalidInput("{}: a {} buffer must be defined by a kernel (first is -1)", where,
                        PlanBufferRoleName(b.role()));
  }
  if (b.role() == plan::Buffer::OUTPUT && b.last() != num_kernels) {
    return InvalidInput("{}: an output must be live to the end ({}), not {}", where, num_kernels,
                        b.last());
  }
  if (b.has_init()) {
    if (arena) return InvalidInput("{}: an ARENA buffer cannot have an initial value", where);
    if (b.blob_offset() % kPlanAlignment != 0) {
      return InvalidInput("{}: blob_offset {} is not a multiple of {}", where, b.blob_offset(),
                          kPlanAlignment);
    }
    if (b.blob_offset() > pf.BlobSize() || bytes > pf.BlobSize() - b.blob_offset()) {
      return InvalidInput("{}: blob_offset {} + {} bytes is outside the blob ({} bytes)", where,
                          b.blob_offset(), bytes, pf.BlobSize());
    }
    if (bytes > 0 && pf.BlobBytes(b.blob_offset(), bytes) == nullptr) {
      return InvalidInput("{}: blob_offset {} + {} bytes is not in one piece of the blob", where,
                          b.blob_offset(), bytes);
    }
  } else if (b.blob_offset() != 0) {
    return InvalidInput("{}: blob_offset {} without has_init", where, b.blob_offset());
  }
  if (b.alias_of() != -1) {
    if (b.alias_of() < 0 || b.alias_of() >= p.buffers_size() || b.alias_of() == i) {
      return InvalidInput("{}: alias_of {} is not another buffer id", where, b.alias_of());
    }
    const plan::Buffer& t = p.buffers(b.alias_of());
    if (!arena || t.region() != plan::Buffer::ARENA) {
      return InvalidInput("{}: alias_of {}: only ARENA buffers can alias", where, b.alias_of());
    }
  }
  return Status::Ok();
}

// Buffer.init_cast_of: a PERSISTENT F16/BF16 buffer without a blob value, made at load from
// another PERSISTENT buffer's F32 value of the same dims.
Status CheckInitCast(const plan::Plan& p, int i, const std::string& src) {
  const plan::Buffer& b = p.buffers(i);
  if (!b.has_init_cast_of()) return Status::Ok();
  const std::string where = src + ": " + PlanBufferWhere(b, i);
  const int m = b.init_cast_of();
  if (m < 0 || m >= p.buffers_size() || m == i) {
    return InvalidInput("{}: init_cast_of {} is not another buffer id", where, m);
  }
  const plan::Buffer& master = p.buffers(m);
  if (b.region() != plan::Buffer::PERSISTENT || b.has_init() ||
      (b.role() != plan::Buffer::STATE && b.role() != plan::Buffer::PARAMETER)) {
    return InvalidInput(
        "{}: init_cast_of {}: only a parameter or state without has_init is made from another "
        "buffer",
        where, m);
  }
  if ((b.type().dtype() != plan::F16 && b.type().dtype() != plan::BF16) ||
      master.type().dtype() != plan::F32) {
    return InvalidInput("{}: init_cast_of {}: rounds F32 to F16 or BF16 only", where, m);
  }
  if (master.region() != plan::Buffer::PERSISTENT || master.has_init_cast_of() ||
      !std::equal(b.type().dims().begin(), b.type().dims().end(), master.type().dims().begin(),
                  master.type().dims().end())) {
    return InvalidInput(
        "{}: init_cast_of {} ('{}'): the source must be a PERSISTENT F32 buffer of the same dims "
        "with its own value",
        where, m, master.name());
  }
  return Status::Ok();
}

// Kernel.tf32_inputs is exactly what lower writes: in a tf32 plan, the f32 inputs among the
// op's OpDef::tf32_inputs; in any other plan, none. (So a tf32 plan written before the field
// existed, which lists none, is an error rather than a plan that silently runs in full FP32.)
Status CheckTf32Inputs(const plan::Plan& p, const plan::Kernel& kernel, const KernelSignature& sig,
                       const std::string& where) {
  std::vector<int> want;
  const OpDef* def = FindQualifiedOp(kernel.op());
  if (p.precision() == "tf32" && def != nullptr) {
    for (int i : def->tf32_inputs) {
      if (i < static_cast<int>(sig.inputs.size()) && sig.inputs[i] == DType::kF32)
        want.push_back(i);
    }
  }
  const std::vector<int> got(kernel.tf32_inputs().begin(), kernel.tf32_inputs().end());
  if (got == want) return Status::Ok();
  if (p.precision() != "tf32") {
    return InvalidInput(
        "{}: tf32_inputs [{}] in a '{}' plan (only --precision=tf32 reads "
        "operands as TF32)",
        where, fmt::join(got, ", "), p.precision());
  }
  return InvalidInput(
      "{}: tf32_inputs [{}], expected [{}] (the f32 inputs that op '{}' "
      "multiplies; a tf32 plan from an older a800c lists none: recompile it)",
      where, fmt::join(got, ", "), fmt::join(want, ", "), kernel.op());
}

Status CheckKernelEntry(const plan::Plan& p, int k, const std::string& src) {
  const plan::Kernel& kernel = p.kernels(k);
  const std::string where = fmt::format("{}: kernel {} ('{}')", src, k, kernel.name());
  auto sig = ParseKernelName(kernel.name());
  if (!sig.ok()) return sig.status().WithContext(where);
  A8_RETURN_IF_ERROR(CheckKernel(*sig).WithContext(where));
  if (kernel.op() != sig->op) {
    return InvalidInput("{}: op '{}' does not match the kernel name", where, kernel.op());
  }
  if (kernel.version() <= 0)
    return InvalidInput("{}: version {} is not >= 1", where, kernel.version());
  auto check_ids = [&](const char* side, const auto& ids, size_t expected,
                       auto dtype_at) -> Status {
    if (static_cast<size_t>(ids.size()) != expected) {
      return InvalidInput("{}: has {} {}, the name has {}", where, ids.size(), side, expected);
    }
    for (int j = 0; j < ids.size(); ++j) {
      const int id = ids[j];
      std::optional<DType> want = dtype_at(j);
      if (id == -1 && !want) continue;
      if (id < 0 || id >= p.buffers_size()) {
        return InvalidInput("{}: {}[{}]: buffer id {} is out of range [0, {})", where, side, j, id,
                            p.buffers_size());
      }
      const plan::Buffer& b = p.buffers(id);
      if (!want) {
        return InvalidInput("{}: {}[{}] is buffer {}, but the name says `_`", where, side, j, id);
      }
      if (ToDType(b.type().dtype()) != *want) {
        return InvalidInput("{}: {}[{}]: buffer {} ('{}') is {}, the kernel name says {}", where,
                            side, j, id, b.name(), DTypeName(ToDType(b.type().dtype())),
                            DTypeName(*want));
      }
      if (b.region() != plan::Buffer::ARENA) continue;
      bool output = side[0] == 'o';
      if (output && b.first() != k) {
        return InvalidInput("{}: {}[{}]: buffer {} ('{}') is defined by kernel {}, not {}", where,
                            side, j, id, b.name(), b.first(), k);
      }
      if (!output && (b.first() >= k || b.last() < k)) {
        return InvalidInput("{}: {}[{}]: buffer {} ('{}') is live [{}, {}], not at kernel {}",
                            where, side, j, id, b.name(), b.first(), b.last(), k);
      }
    }
    return Status::Ok();
  };
  A8_RETURN_IF_ERROR(check_ids("inputs", kernel.inputs(), sig->inputs.size(),
                               [&](int j) { return sig->inputs[j]; }));
  A8_RETURN_IF_ERROR(check_ids("outputs", kernel.outputs(), sig->outputs.size(),
                               [&](int j) { return std::optional<DType>(sig->outputs[j]); }));
  A8_RETURN_IF_ERROR(CheckTf32Inputs(p, kernel, *sig, where));
  for (int a = 0; a < kernel.attrs_size(); ++a) {
    const plan::Attribute& attr = kernel.attrs(a);
    if (attr.name().empty()) return InvalidInput("{}: attrs[{}] has no name", where, a);
    if (a > 0 && !(kernel.attrs(a - 1).name() < attr.name())) {
      return InvalidInput("{}: attribute '{}' is out of order or repeated", where, attr.name());
    }
    if (attr.value_case() == plan::Attribute::VALUE_NOT_SET) {
      return InvalidInput("{}: attribute '{}' has no value", where, attr.name());
    }
    if (attr.value_case() == plan::Attribute::kTensorBuffer) {
      int id = attr.tensor_buffer();
      if (id < 0 || id >= p.buffers_size() || p.buffers(id).role() != plan::Buffer::CONSTANT) {
        return InvalidInput("{}: attribute '{}': tensor_buffer {} is not a constant buffer", where,
                            attr.name(), id);
      }
    }
  }
  return Status::Ok();
}

// The kernel's output types are what its op's shape rule gives for its input types, attributes
// and constant inputs: a kernel never reads or writes outside its buffers. The check runs the op
// table's rule on a view of the kernel (an OpNode: no graph).
Status CheckKernelShapes(const PlanFile& pf, int k, const std::string& src,
                         std::map<int, TensorDataPtr>* constants) {
  const plan::Plan& p = pf.plan;
  const plan::Kernel& kernel = p.kernels(k);
  const std::string where = fmt::format("{}: kernel {} ('{}')", src, k, kernel.name());
  const size_t dot = kernel.op().rfind('.');
  const std::string domain = dot == std::string::npos ? "" : kernel.op().substr(0, dot);
  const std::string name = dot == std::string::npos ? kernel.op() : kernel.op().substr(dot + 1);
  const OpDef* def = FindOp(domain, name);
  if (def == nullptr || def->infer == nullptr) {
    return InvalidInput("{}: op '{}' has no shape rule", where, kernel.op());
  }
  auto type_of = [&](int id) {
    const plan::TensorType& t = p.buffers(id).type();
    return TensorType{ToDType(t.dtype()), {t.dims().begin(), t.dims().end()}};
  };
  // The bytes of a CONSTANT buffer with an initial value (shape-like inputs, tensor attributes).
  auto data_of = [&](int id) -> TensorDataPtr {
    const plan::Buffer& b = p.buffers(id);
    if (b.role() != plan::Buffer::CONSTANT || !b.has_init()) return nullptr;
    auto it = constants->find(id);
    if (it != constants->end()) return it->second;
    auto d = std::make_shared<TensorData>();
    d->type = type_of(id);
    const uint8_t* at = pf.BlobBytes(b.blob_offset(), b.bytes());  // CheckBuffer: in one piece
    if (at != nullptr) d->bytes.assign(at, at + b.bytes());
    (*constants)[id] = d;
    return d;
  };
  // The kernel as the op registry sees a node (op_node.h): its operands' types and constant data
  // from the plan's buffers, named b<id>; a buffer read twice is one operand.
  const int n_values = kernel.inputs_size() + kernel.outputs_size();
  std::vector<std::string> names;
  std::vector<TensorType> types;
  std::vector<TensorDataPtr> datas;
  std::vector<OpValue> values;
  names.reserve(n_values);  // never grows past this: the OpValues point into these vectors
  types.reserve(n_values);
  datas.reserve(n_values);
  values.reserve(n_values);
  auto add_value = [&](std::string value_name, int id, TensorDataPtr data, bool fed) {
    names.push_back(std::move(value_name));
    types.push_back(type_of(id));
    datas.push_back(std::move(data));
    values.emplace_back(&names.back(), &types.back(), &datas.back(), fed);
    return &values.back();
  };
  std::map<int, const OpValue*> by_id;
  std::vector<const OpValue*> inputs;
  for (int id : kernel.inputs()) {
    if (id < 0) {
      inputs.push_back(nullptr);
      continue;
    }
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      const plan::Buffer::Role role = p.buffers(id).role();
      TensorDataPtr data = data_of(id);
      // Fed each step, as a graph input is: no data, neither a parameter nor state.
      const bool fed = !data && role != plan::Buffer::PARAMETER && role != plan::Buffer::STATE;
      it = by_id.emplace(id, add_value(fmt::format("b{}", id), id, std::move(data), fed)).first;
    }
    inputs.push_back(it->second);
  }
  std::map<std::string, Attribute> attrs;
  for (const plan::Attribute& a : kernel.attrs()) {
    switch (a.value_case()) {
      case plan::Attribute::kI:
        attrs[a.name()] = Attribute(a.i());
        break;
      case plan::Attribute::kF:
        attrs[a.name()] = Attribute(a.f());
        break;
      case plan::Attribute::kS:
        attrs[a.name()] = Attribute(a.s());
        break;
      case plan::Attribute::kInts:
        attrs[a.name()] =
            Attribute(std::vector<int64_t>(a.ints().values().begin(), a.ints().values().end()));
        break;
      case plan::Attribute::kFloats:
        attrs[a.name()] =
            Attribute(std::vector<float>(a.floats().values().begin(), a.floats().values().end()));
        break;
      case plan::Attribute::kStrings:
        attrs[a.name()] = Attribute(
            std::vector<std::string>(a.strings().values().begin(), a.strings().values().end()));
        break;
      case plan::Attribute::kTensorBuffer: {
        TensorDataPtr d = data_of(a.tensor_buffer());
        if (!d) {
          return InvalidInput("{}: attribute '{}': tensor_buffer {} has no initial value", where,
                              a.name(), a.tensor_buffer());
        }
        attrs[a.name()] = Attribute(d);
        break;
      }
      case plan::Attribute::VALUE_NOT_SET:
        break;  // rejected by CheckKernelEntry
    }
  }
  std::vector<const OpValue*> outputs;
  for (int j = 0; j < kernel.outputs_size(); ++j) {
    outputs.push_back(add_value(fmt::format("out{}", j), kernel.outputs(j), nullptr, false));
  }
  const OpNode node(domain, name, kernel.node().empty() ? "kernel" : kernel.node(),
                    /*version=*/0, std::move(inputs), outputs, &attrs);
  Status s = CheckNodeAgainstOpDef(node, *def);
  std::vector<TensorType> inferred;
  if (s.ok()) s = def->infer(node, &inferred);
  if (!s.ok()) return InvalidInput("{}: {}", where, s.message());
  for (size_t j = 0; j < inferred.size() && j < outputs.size(); ++j) {
    if (inferred[j] != outputs[j]->type()) {
      return InvalidInput(
          "{}: outputs[{}] is buffer {} of type {}, but the kernel's inputs and "
          "attributes give {}",
          where, j, kernel.outputs(j), outputs[j]->type().ToString(), inferred[j].ToString());
    }
  }
  return Status::Ok();
}

Status CheckBindings(const plan::Plan& p, bool inputs, const std::string& src) {
  const auto& list = inputs ? p.inputs() : p.outputs();
  const char* side = inputs ? "inputs" : "outputs";
  std::set<std::string> names;
  for (int i = 0; i < list.size(); ++i) {
    const plan::Binding& b = list[i];
    const std::string where = fmt::format("{}: {}[{}] ('{}')", src, side, i, b.name());
    if (b.name().empty()) return InvalidInput("{}: the name is empty", where);
    if (!names.insert(b.name()).second) return InvalidInput("{}: the name is repeated", where);
    if (b.buffer() < 0 || b.buffer() >= p.buffers_size()) {
      return InvalidInput("{}: buffer id {} is out of range [0, {})", where, b.buffer(),
                          p.buffers_size());
    }
    if (inputs && p.buffers(b.buffer()).role() != plan::Buffer::INPUT) {
      return InvalidInput("{}: buffer {} is not an input buffer", where, b.buffer());
    }
  }
  return Status::Ok();
}

Status CheckSizeField(const std::string& src, const char* field, uint64_t v) {
  if (v > kMaxBytes) return InvalidInput("{}: {} {} is larger than {}", src, field, v, kMaxBytes);
  return Status::Ok();
}

}  // namespace

std::string PlanBufferWhere(const plan::Buffer& b, int id) {
  return fmt::format("buffer {} ('{}')", id, b.name());
}

Status ValidatePlan(const PlanFile& pf, const std::string& src) {
  const plan::Plan& p = pf.plan;
  if (p.format_version() > kPlanFormatVersion) {
    return InvalidInput(
        "{}: format_version: format version {} is newer than this a800c reads "
        "({})",
        src, p.format_version(), kPlanFormatVersion);
  }
  if (p.format_version() < kPlanOldestReadVersion) {
    return InvalidInput(
        "{}: format_version: {} is not a plan format version (this a800c reads {} to {})", src,
        p.format_version(), kPlanOldestReadVersion, kPlanFormatVersion);
  }
  if (p.alignment() != kPlanAlignment) {
    return InvalidInput("{}: alignment is {}, expected {}", src, p.alignment(), kPlanAlignment);
  }
  static const std::set<std::string> kTargets = {"any", "cpu", "sm_80", "sm_90"};
  if (kTargets.count(p.target()) == 0) {
    return InvalidInput("{}: target '{}' is not one of any, cpu, sm_80, sm_90", src, p.target());
  }
  static const std::set<std::string> kModes = {"none", "static", "dynamic"};
  if (kModes.count(p.scaler().mode()) == 0) {
    return InvalidInput("{}: scaler.mode '{}' is not one of none, static, dynamic", src,
                        p.scaler().mode());
  }
  A8_RETURN_IF_ERROR(CheckSizeField(src, "arena_bytes", p.arena_bytes()));
  A8_RETURN_IF_ERROR(CheckSizeField(src, "persistent_bytes", p.persistent_bytes()));
  if (p.arena_bytes() % kPlanAlignment != 0 || p.persistent_bytes() % kPlanAlignment != 0) {
    return InvalidInput("{}: arena_bytes {} and persistent_bytes {} must be multiples of {}", src,
                        p.arena_bytes(), p.persistent_bytes(), kPlanAlignment);
  }
  if (p.arena_lower_bound() > p.arena_bytes()) {
    return InvalidInput("{}: arena_lower_bound {} is larger than arena_bytes {}", src,
                        p.arena_lower_bound(), p.arena_bytes());
  }
  if (p.blob_bytes() != pf.BlobSize()) {
    return InvalidInput("{}: blob_bytes is {}, but the blob has {} bytes", src, p.blob_bytes(),
                        pf.BlobSize());
  }
  for (size_t i = 0; i < pf.pieces.size(); ++i) {
    const PlanBlobPiece& piece = pf.pieces[i];
    const uint64_t end = i + 1 < pf.pieces.size() ? pf.pieces[i + 1].offset : pf.pieces_size;
    if (!pf.blob.empty() || piece.offset > end || piece.bytes.size() > end - piece.offset) {
      return InvalidInput("{}: blob piece {} ({} bytes at {}) overlaps the next or the end ({})",
                          src, i, piece.bytes.size(), piece.offset, end);
    }
  }
  std::set<std::string> names;
  for (int i = 0; i < p.buffers_size(); ++i) {
    A8_RETURN_IF_ERROR(CheckBuffer(pf, i, src));
    A8_RETURN_IF_ERROR(CheckInitCast(p, i, src));
    if (!names.insert(p.buffers(i).name()).second) {
      return InvalidInput("{}: {}: the name is used by an earlier buffer", src,
                          PlanBufferWhere(p.buffers(i), i));
    }
  }
  for (int k = 0; k < p.kernels_size(); ++k) A8_RETURN_IF_ERROR(CheckKernelEntry(p, k, src));
  std::map<int, TensorDataPtr> constants;
  for (int k = 0; k < p.kernels_size(); ++k) {
    A8_RETURN_IF_ERROR(CheckKernelShapes(pf, k, src, &constants));
  }
  // Every arena buffer defined by a kernel is one of that kernel's outputs.
  std::vector<char> defined(p.buffers_size(), 0);
  for (const plan::Kernel& k : p.kernels()) {
    for (int id : k.outputs()) defined[id] = 1;
  }
  for (int i = 0; i < p.buffers_size(); ++i) {
    const plan::Buffer& b = p.buffers(i);
    if (b.region() == plan::Buffer::ARENA && b.first() >= 0 && !defined[i]) {
      return InvalidInput("{}: {}: first is kernel {}, which does not write it", src,
                          PlanBufferWhere(b, i), b.first());
    }
  }
  A8_RETURN_IF_ERROR(CheckBindings(p, true, src));
  A8_RETURN_IF_ERROR(CheckBindings(p, false, src));
  return ValidateTrainingFields(p, src);
}

}  // namespace a8
