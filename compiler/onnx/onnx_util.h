// ONNX TensorProto/AttributeProto <-> a800c TensorData/Attribute, shared by the importer and the
// exporter.
//
// Reading accepts every encoding ONNX allows for the dtypes a800c supports: `raw_data`, the typed
// fields (float_data; int32_data for f16/bf16 bit patterns, bool, i8, u8, i32; int64_data;
// double_data) and external data. Every count is checked before anything is allocated, so a
// hostile model cannot make the importer allocate from a declared size alone:
// - dims must be non-negative and their product must fit int64;
// - the data must hold exactly the declared number of elements;
// - external data: `location` relative, no `..` component, the resolved file (symlinks
//   followed) inside the model's folder, `offset`/`length` inside the file, and `length` equal to
//   the tensor's byte size.
// Errors name the tensor (`what`, e.g. "initializer 'w'") and the field or key.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "compiler/ir/attribute.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace onnx {
class AttributeProto;
class TensorProto;
class TypeProto;
}  // namespace onnx

namespace a8 {

// `model_dir` is the folder external data resolves against; "" rejects external data.
// `raw_data`, when given, is the tensor's raw_data held outside the message (model_scan.h);
// with `raw_owner` (what keeps that memory alive, a file mapping) the tensor's bytes are a view
// of it, else a copy. External data is a view of the external file, mapped. Bytes that do not
// start at a multiple of the element size are copied either way (typed reads need alignment).
StatusOr<std::shared_ptr<TensorData>> TensorFromOnnx(
    const onnx::TensorProto& t, const std::string& what, const std::string& model_dir,
    const std::string_view* raw_data = nullptr, std::shared_ptr<const void> raw_owner = nullptr);

// Writes `data` as a TensorProto with `raw_data` (little-endian, bool one byte per element).
void TensorToOnnx(const TensorData& data, const std::string& name, onnx::TensorProto* t);

// An ONNX attribute as an IR attribute; `where` names the node. Subgraphs (GRAPH, GRAPHS),
// sparse tensors, type protos and function attribute references are Unsupported. Tensors follow
// TensorFromOnnx (external data resolved against `model_dir`).
StatusOr<Attribute> AttributeFromOnnx(const onnx::AttributeProto& a, const std::string& where,
                                      const std::string& model_dir);

// Writes attribute `name` of node `n` (named in errors) into `p`.
Status AttributeToOnnx(const Node& n, const std::string& name, const Attribute& a,
                       onnx::AttributeProto* p);

// Sets `type` to a tensor type with static dims.
void TensorTypeToOnnx(const TensorType& t, onnx::TypeProto* type);

// "tensor", "sequence", "map", "optional", "sparse_tensor" or "unknown": for error messages.
std::string OnnxTypeCaseName(const onnx::TypeProto& type);

}  // namespace a8
