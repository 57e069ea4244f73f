// Builds small plans in memory for the runtime tests (no compiler involved): buffers with
// explicit or sequential offsets, kernels named from their dtypes, live ranges and bindings
// derived from the kernel list by Finish().
#pragma once

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/kernel_catalog.h"
#include "compiler/plan/plan_file.h"
#include "tests/unit/random_util.h"

namespace a8::testing {

class PlanBuilder {
 public:
  // Adds a buffer; PERSISTENT ones with `init` get their bytes in the blob. `offset` < 0 places
  // it after the previous buffer of its region (64-byte aligned).
  int Buffer(const std::string& name, DType dtype, const std::vector<int64_t>& dims,
             plan::Buffer::Role role, const void* init = nullptr, int64_t offset = -1,
             int alias_of = -1) {
    plan::Buffer* b = file_.plan.add_buffers();
    int id = file_.plan.buffers_size() - 1;
    b->set_id(id);
    b->set_name(name);
    b->mutable_type()->set_dtype(static_cast<plan::DType>(dtype));
    uint64_t n = 1;
    for (int64_t d : dims) {
      b->mutable_type()->add_dims(d);
      n *= static_cast<uint64_t>(d);
    }
    b->set_bytes(n * DTypeSize(dtype));
    bool persistent = role == plan::Buffer::PARAMETER || role == plan::Buffer::STATE ||
                      role == plan::Buffer::CONSTANT;
    b->set_region(persistent ? plan::Buffer::PERSISTENT : plan::Buffer::ARENA);
    b->set_role(role);
    uint64_t& end = persistent ? persistent_ : arena_;
    uint64_t at = offset >= 0 ? static_cast<uint64_t>(offset) : (end + 63) / 64 * 64;
    b->set_offset(at);
    end = std::max(end, at + b->bytes());
    b->set_alias_of(alias_of);
    if (persistent && init != nullptr) {
      size_t blob_at = (file_.blob.size() + 63) / 64 * 64;
      file_.blob.resize(blob_at + b->bytes());
      std::memcpy(file_.blob.data() + blob_at, init, b->bytes());
      b->set_has_init(true);
      b->set_blob_offset(blob_at);
    }
    return id;
  }

  plan::Kernel* Kernel(const std::string& op, const std::vector<int>& inputs,
                       const std::vector<int>& outputs) {
    plan::Kernel* k = file_.plan.add_kernels();
    k->set_op(op);
    k->set_version(1);
    k->set_node(op + "_" + std::to_string(file_.plan.kernels_size() - 1));
    KernelSignature sig;
    sig.op = op;
    for (int i : inputs) {
      k->add_inputs(i);
      if (i < 0)
        sig.inputs.push_back(std::nullopt);
      else
        sig.inputs.push_back(static_cast<DType>(file_.plan.buffers(i).type().dtype()));
    }
    for (int o : outputs) {
      k->add_outputs(o);
      sig.outputs.push_back(static_cast<DType>(file_.plan.buffers(o).type().dtype()));
    }
    k->set_name(KernelName(sig));
    return k;
  }

  static void Int(plan::Kernel* k, const std::string& name, int64_t v) {
    plan::Attribute* a = k->add_attrs();
    a->set_name(name);
    a->set_i(v);
  }
  static void Float(plan::Kernel* k, const std::string& name, float v) {
    plan::Attribute* a = k->add_attrs();
    a->set_name(name);
    a->set_f(v);
  }
  static void Ints(plan::Kernel* k, const std::string& name, const std::vector<int64_t>& v) {
    plan::Attribute* a = k->add_attrs();
    a->set_name(name);
    for (int64_t x : v) a->mutable_ints()->add_values(x);
  }

  // Derives live ranges (unless `keep_ranges`), sizes and bindings; sorts attributes.
  PlanFile Finish(bool keep_ranges = false) {
    plan::Plan& p = file_.plan;
    int nk = p.kernels_size();
    p.set_format_version(kPlanFormatVersion);
    p.set_alignment(64);
    p.set_target("any");
    p.set_precision("fp32");
    p.set_model_name("test");
    p.mutable_scaler()->set_mode("none");
    p.set_compiler_version("test");
    p.set_model_hash("fnv1a64:0000000000000000");
    for (int k = 0; k < nk; ++k) {
      auto* attrs = p.mutable_kernels(k)->mutable_attrs();
      std::sort(
          attrs->begin(), attrs->end(),
          [](const plan::Attribute& a, const plan::Attribute& b) { return a.name() < b.name(); });
    }
    if (!keep_ranges) {
      for (plan::Buffer& b : *p.mutable_buffers()) {
        bool pre = b.region() == plan::Buffer::PERSISTENT || b.role() == plan::Buffer::INPUT;
        int first = pre ? -1 : nk, last = -1;
        for (int k = 0; k < nk; ++k) {
          for (int o : p.kernels(k).outputs())
            if (o == b.id()) first = std::min(first, k);
          for (int i : p.kernels(k).inputs())
            if (i == b.id()) last = k;
        }
        if (b.region() == plan::Buffer::PERSISTENT || b.role() == plan::Buffer::OUTPUT) last = nk;
        b.set_first(first);
        b.set_last(std::max(last, first));
      }
    }
    p.clear_inputs();
    p.clear_outputs();
    for (const plan::Buffer& b : p.buffers()) {
      plan::Binding* bind = nullptr;
      if (b.role() == plan::Buffer::INPUT) bind = p.add_inputs();
      if (b.role() == plan::Buffer::OUTPUT) bind = p.add_outputs();
      if (bind != nullptr) {
        bind->set_name(b.name());
        bind->set_buffer(b.id());
      }
    }
    p.set_arena_bytes((arena_ + 63) / 64 * 64);
    p.set_arena_lower_bound(p.arena_bytes());
    p.set_persistent_bytes((persistent_ + 63) / 64 * 64);
    file_.blob.resize((file_.blob.size() + 63) / 64 * 64);
    p.set_blob_bytes(file_.blob.size());
    return file_;
  }

 private:
  PlanFile file_;
  uint64_t arena_ = 0, persistent_ = 0;
};

}  // namespace a8::testing
