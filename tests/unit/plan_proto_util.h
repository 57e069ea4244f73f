// Plan messages written field by field for the tests of the plan file, the cost model and
// a800c-inspect (independent of lower and of runtime_test_util.h's PlanBuilder, so each test
// states exactly the fields it checks).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "compiler/ir/types.h"
#include "compiler/plan/plan_file.h"

namespace a8::testing {

// The plan's header: the current format, 64-byte alignment and the given names.
inline void SetPlanHeader(plan::Plan& p, const std::string& compiler_version,
                          const std::string& model_name, const std::string& model_hash,
                          const std::string& target, const std::string& precision) {
  p.set_format_version(kPlanFormatVersion);
  p.set_compiler_version(compiler_version);
  p.set_model_name(model_name);
  p.set_model_hash(model_hash);
  p.set_target(target);
  p.set_precision(precision);
  p.set_alignment(64);
}

// Appends a buffer whose id is its index, sized by its dtype and dims, aliasing nothing.
inline plan::Buffer* AddPlanBuffer(plan::Plan& p, const std::string& name, plan::DType dtype,
                                   const std::vector<int64_t>& dims, plan::Buffer::Region region,
                                   plan::Buffer::Role role, uint64_t offset, int first, int last) {
  plan::Buffer* b = p.add_buffers();
  b->set_id(p.buffers_size() - 1);
  b->set_name(name);
  b->mutable_type()->set_dtype(dtype);
  uint64_t n = 1;
  for (int64_t d : dims) {
    b->mutable_type()->add_dims(d);
    n *= static_cast<uint64_t>(d);
  }
  b->set_bytes(n * DTypeSize(static_cast<DType>(dtype)));
  b->set_region(region);
  b->set_role(role);
  b->set_offset(offset);
  b->set_first(first);
  b->set_last(last);
  b->set_alias_of(-1);
  return b;
}

// Appends a kernel reading buffers `inputs` and writing `outputs`, for the node `node`.
inline plan::Kernel* AddPlanKernel(plan::Plan& p, const std::string& name, const std::string& op,
                                   int version, std::initializer_list<int> inputs,
                                   std::initializer_list<int> outputs, const std::string& node) {
  plan::Kernel* k = p.add_kernels();
  k->set_name(name);
  k->set_op(op);
  k->set_version(version);
  for (int i : inputs) k->add_inputs(i);
  for (int o : outputs) k->add_outputs(o);
  k->set_node(node);
  return k;
}

// Binds one model input and one model output to their buffers.
inline void BindPlanIo(plan::Plan& p, const std::string& input, int input_buffer,
                       const std::string& output, int output_buffer) {
  plan::Binding* in = p.add_inputs();
  in->set_name(input);
  in->set_buffer(input_buffer);
  plan::Binding* out = p.add_outputs();
  out->set_name(output);
  out->set_buffer(output_buffer);
}

}  // namespace a8::testing
