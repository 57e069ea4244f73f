#include "compiler/onnx/onnx_util.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>

#include "base/enum_names.h"

namespace a8 {
namespace {

namespace fs = std::filesystem;

// `out` = n bytes from `src`. A large tensor's pages are made in one call before the copy
// (MADV_POPULATE_WRITE, Linux 5.14; advice only) instead of one fault per 4 KiB page as the copy
// first touches them: a fifth less system time for BERT-base's weights (transparent huge pages
// measured better on some runs and several times worse on others, from compaction).
void AssignBytes(std::vector<uint8_t>* out, const uint8_t* src, size_t n) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  constexpr uintptr_t kPage = 4096;
  out->clear();
  out->reserve(n);
  if (n >= (size_t{1} << 20)) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(out->data());
    const uintptr_t begin = (at + kPage - 1) / kPage * kPage, end = (at + n) / kPage * kPage;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
  }
  out->assign(src, src + n);
}

// `n` bytes at `p` as a tensor's bytes: a view that `owner` keeps alive when there is an owner
// and `p` is aligned to `align` (the element size: TensorData::data<T>() reads them as T), else
// a copy. Weights inside a protobuf message start at any byte, so some are copied.
TensorBytes ViewOrCopy(const uint8_t* p, size_t n, size_t align,
                       std::shared_ptr<const void> owner) {
  if (owner != nullptr && reinterpret_cast<uintptr_t>(p) % align == 0) {
    return TensorBytes::View(p, n, std::move(owner));
  }
  std::vector<uint8_t> copy;
  AssignBytes(&copy, p, n);
  return TensorBytes(std::move(copy));
}

StatusOr<int64_t> ParseNonNegative(const std::string& what, const std::string& key,
                                   const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < 0) {
    return InvalidInput("{}: external data key '{}' must be a non-negative integer, got '{}'", what,
                        key, text);
  }
  return v;
}

// True when `p` is `base` or lies below it (both canonical).
bool IsInside(const fs::path& base, const fs::path& p) {
  auto b = base.begin(), e = base.end();
  auto q = p.begin();
  for (; b != e; ++b, ++q) {
    if (b->empty()) continue;  // a trailing separator
    if (q == p.end() || *q != *b) return false;
  }
  return true;
}

Status ReadExternalData(const onnx::TensorProto& t, const std::string& what,
                        const std::string& model_dir, int64_t expected_bytes, size_t align,
                        TensorBytes* out) {
  std::string location;
  std::optional<int64_t> offset, length;
  for (const onnx::StringStringEntryProto& kv : t.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      A8_ASSIGN_OR_RETURN(offset, ParseNonNegative(what, "offset", kv.value()));
    } else if (kv.key() == "length") {
      A8_ASSIGN_OR_RETURN(length, ParseNonNegative(what, "length", kv.value()));
    } else if (kv.key() != "checksum") {
      return InvalidInput(
          "{}: unknown external data key '{}' (expected location, offset, "
          "length, checksum)",
          what, kv.key());
    }
  }
  if (location.empty()) return InvalidInput("{}: external data key 'location' is missing", what);
  if (model_dir.empty()) {
    return InvalidInput(
        "{}: external data '{}' cannot be resolved: the model was not read from "
        "a file",
        what, location);
  }
  const fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    return InvalidInput(
        "{}: external data key 'location' must be a path relative to the model's "
        "folder, got '{}'",
        what, location);
  }
  for (const fs::path& part : rel) {
    if (part == "..") {
      return InvalidInput("{}: external data key 'location' must not contain '..', got '{}'", what,
                          location);
    }
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::path(model_dir), ec);
  if (ec)
    return InvalidInput("{}: cannot resolve the model's folder '{}': {}", what, model_dir,
                        ec.message());
  // weakly_canonical follows symlinks, so a link that points out of the folder is caught here.
  const fs::path file = fs::weakly_canonical(base / rel, ec);
  if (ec)
    return InvalidInput("{}: cannot resolve external data '{}': {}", what, location, ec.message());
  if (!IsInside(base, file) || file == base) {
    return InvalidInput(
        "{}: external data key 'location' '{}' resolves to '{}', outside the "
        "model's folder '{}'",
        what, location, file.string(), base.string());
  }
  if (!fs::is_regular_file(file, ec)) {
    return InvalidInput(
        "{}: external data key 'location': '{}' does not exist or is not a "
        "regular file",
        what, location);
  }
  const uintmax_t file_size = fs::file_size(file, ec);
  if (ec || file_size > static_cast<uintmax_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidInput("{}: cannot read the size of external data file '{}'", what, location);
  }
  const int64_t size = static_cast<int64_t>(file_size);
  const int64_t off = offset.value_or(0);
  if (off > size) {
    return InvalidInput("{}: external data key 'offset' is {}, past the end of '{}' ({} bytes)",
                        what, off, location, size);
  }
  if (length && *length > size - off) {
    return InvalidInput(
        "{}: external data key 'length' is {}: offset {} + length runs past the "
        "end of '{}' ({} bytes)",
        what, *length, off, location, size);
  }
  const int64_t len = length.value_or(size - off);
  if (len != expected_bytes) {
    return InvalidInput(
        "{}: external data key 'length' gives {} bytes{}, but the tensor needs {} "
        "bytes",
        what, len, length ? "" : " (offset to end of file)", expected_bytes);
  }
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidInput("{}: cannot open external data file '{}'", what, location);
  if (len == 0) {
    close(fd);
    out->clear();
    return Status::Ok();
  }
  // Mapped and kept mapped: the tensor's bytes are a view of the file (TensorBytes), unmapped
  // when the last holder lets go; nothing is read here, the plan writer reads them once. (An
  // offset that is not a multiple of the element size is copied instead, and unmapped now.)
  const int64_t page = sysconf(_SC_PAGESIZE);
  const int64_t map_off = off / page * page;
  const size_t map_len = static_cast<size_t>(off - map_off + len);
  void* map = mmap(nullptr, map_len, PROT_READ, MAP_PRIVATE, fd, map_off);
  close(fd);
  if (map == MAP_FAILED) {
    return InvalidInput("{}: could not read {} bytes at offset {} of '{}'", what, len, off,
                        location);
  }
  madvise(map, map_len, MADV_SEQUENTIAL);
  std::shared_ptr<const void> mapping(
      map, [map_len](const void* m) { munmap(const_cast<void*>(m), map_len); });
  *out = ViewOrCopy(static_cast<const uint8_t*>(map) + (off - map_off), static_cast<size_t>(len),
                    align, std::move(mapping));
  return Status::Ok();
}

template <typename Field>
Status CheckCount(const std::string& what, const char* field, const Field& f, int64_t n,
                  const TensorType& type) {
  if (static_cast<int64_t>(f.size()) != n) {
    return InvalidInput("{}: holds {} values in {}, but its type {} has {} elements", what,
                        f.size(), field, type.ToString(), n);
  }
  return Status::Ok();
}

// Copies int32_data into narrower elements (their bits as U, the unsigned type of their size),
// checking each value is in [lo, hi].
template <typename U>
Status NarrowInt32(const std::string& what, const onnx::TensorProto& t, int64_t lo, int64_t hi,
                   TensorData* d) {
  U* dst = d->mutable_data<U>();
  for (int i = 0; i < t.int32_data_size(); ++i) {
    const int64_t v = t.int32_data(i);
    if (v < lo || v > hi) {
      return InvalidInput("{}: int32_data[{}] = {} is out of range for {}", what, i, v,
                          DTypeName(d->type.dtype));
    }
    dst[i] = static_cast<U>(v);
  }
  return Status::Ok();
}

// The element types narrower than 32 bits, which TensorProto keeps in int32_data, and the values
// each holds (f16 and bf16: their 16-bit patterns, in the low half).
struct Int32DataRange {
  DType dtype;
  int64_t lo, hi;
};
constexpr Int32DataRange kInt32DataRanges[] = {
    {DType::kI8, -128, 127},      {DType::kU8, 0, 255},     {DType::kBool, 0, 1},
    {DType::kI16, -32768, 32767}, {DType::kU16, 0, 0xffff}, {DType::kF16, 0, 0xffff},
    {DType::kBF16, 0, 0xffff}};

Status ReadTypedFields(const onnx::TensorProto& t, const std::string& what, int64_t n,
                       TensorData* d) {
  const TensorType& type = d->type;
  for (const Int32DataRange& r : kInt32DataRanges) {
    if (r.dtype != type.dtype) continue;
    A8_RETURN_IF_ERROR(CheckCount(what, "int32_data", t.int32_data(), n, type));
    return DTypeSize(type.dtype) == 1 ? NarrowInt32<uint8_t>(what, t, r.lo, r.hi, d)
                                      : NarrowInt32<uint16_t>(what, t, r.lo, r.hi, d);
  }
  // A field whose elements are the tensor's as they are.
  auto copy = [&](const char* field, const auto& values) {
    A8_RETURN_IF_ERROR(CheckCount(what, field, values, n, type));
    if (n) std::memcpy(d->bytes.data(), values.data(), n * sizeof(*values.data()));
    return Status::Ok();
  };
  switch (type.dtype) {
    case DType::kF32:
      return copy("float_data", t.float_data());
    case DType::kF64:
      return copy("double_data", t.double_data());
    case DType::kI64:
      return copy("int64_data", t.int64_data());
    case DType::kI32:
      return copy("int32_data", t.int32_data());
    case DType::kU64:
      return copy("uint64_data", t.uint64_data());
    case DType::kU32: {
      A8_RETURN_IF_ERROR(CheckCount(what, "uint64_data", t.uint64_data(), n, type));
      uint32_t* dst = d->mutable_data<uint32_t>();
      for (int i = 0; i < t.uint64_data_size(); ++i) {
        if (t.uint64_data(i) > 0xffffffffu) {
          return InvalidInput("{}: uint64_data[{}] = {} is out of range for u32", what, i,
                              t.uint64_data(i));
        }
        dst[i] = static_cast<uint32_t>(t.uint64_data(i));
      }
      return Status::Ok();
    }
    default:
      break;
  }
  return Internal("{}: unhandled dtype", what);
}

// Models older than IR 2 leave `type` unset; it follows from the field that holds the value.
onnx::AttributeProto::AttributeType AttributeTypeOf(const onnx::AttributeProto& a) {
  using AP = onnx::AttributeProto;
  if (a.type() != AP::UNDEFINED) return a.type();
  if (a.has_f()) return AP::FLOAT;
  if (a.has_i()) return AP::INT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.has_g()) return AP::GRAPH;
  if (a.floats_size()) return AP::FLOATS;
  if (a.ints_size()) return AP::INTS;
  if (a.strings_size()) return AP::STRINGS;
  if (a.graphs_size()) return AP::GRAPHS;
  return AP::UNDEFINED;
}

}  // namespace

StatusOr<std::shared_ptr<TensorData>> TensorFromOnnx(const onnx::TensorProto& t,
                                                     const std::string& what,
                                                     const std::string& model_dir,
                                                     const std::string_view* raw_data,
                                                     std::shared_ptr<const void> raw_owner) {
  auto dtype = DTypeFromOnnx(t.data_type());
  if (!dtype.ok()) return dtype.status().WithContext(what);
  if (t.has_segment()) return Unsupported("{}: segmented tensors are not supported", what);
  TensorType type{*dtype, std::vector<int64_t>(t.dims().begin(), t.dims().end())};
  auto n = CheckedProduct(type.dims);
  if (!n.ok()) return n.status().WithContext(what);
  const int64_t elem_size = static_cast<int64_t>(DTypeSize(type.dtype));
  if (*n > std::numeric_limits<int64_t>::max() / elem_size) {
    return InvalidInput("{}: {} elements of {} overflow the byte count", what, *n,
                        DTypeName(type.dtype));
  }
  const int64_t nbytes = *n * elem_size;

  auto d = std::make_shared<TensorData>();
  d->type = type;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    A8_RETURN_IF_ERROR(
        ReadExternalData(t, what, model_dir, nbytes, static_cast<size_t>(elem_size), &d->bytes));
  } else if (raw_data != nullptr || t.has_raw_data()) {
    const std::string_view raw = raw_data != nullptr ? *raw_data : std::string_view(t.raw_data());
    if (static_cast<int64_t>(raw.size()) != nbytes) {
      return InvalidInput("{}: raw_data has {} bytes, but its type {} needs {} bytes", what,
                          raw.size(), type.ToString(), nbytes);
    }
    // A view of the mapped model file where there is one (and the bytes are aligned).
    d->bytes = ViewOrCopy(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(),
                          static_cast<size_t>(elem_size),
                          raw_data != nullptr ? std::move(raw_owner) : nullptr);
  } else {
    // Typed fields: the count check in ReadTypedFields runs before this buffer is filled, and
    // the buffer is no larger than the field that must hold as many values.
    const int64_t available = t.float_data_size() + t.int32_data_size() + t.int64_data_size() +
                              t.double_data_size() + t.uint64_data_size();
    if (*n > available) {
      return InvalidInput("{}: holds {} values, but its type {} has {} elements", what, available,
                          type.ToString(), *n);
    }
    d->bytes.assign(static_cast<size_t>(nbytes), 0);
    A8_RETURN_IF_ERROR(ReadTypedFields(t, what, *n, d.get()));
  }
  if (type.dtype == DType::kBool &&
      std::any_of(std::as_const(d->bytes).begin(), std::as_const(d->bytes).end(),
                  [](uint8_t b) { return b > 1; })) {
    for (uint8_t& b : d->bytes) b = b != 0;  // a view is copied first
  }
  return d;
}

void TensorToOnnx(const TensorData& data, const std::string& name, onnx::TensorProto* t) {
  t->Clear();
  t->set_name(name);
  t->set_data_type(DTypeToOnnx(data.type.dtype));
  for (int64_t dim : data.type.dims) t->add_dims(dim);
  t->set_raw_data(data.bytes.data(), data.bytes.size());
}

void TensorTypeToOnnx(const TensorType& t, onnx::TypeProto* type) {
  type->Clear();
  onnx::TypeProto::Tensor* tt = type->mutable_tensor_type();
  tt->set_elem_type(DTypeToOnnx(t.dtype));
  onnx::TensorShapeProto* shape = tt->mutable_shape();
  for (int64_t d : t.dims) shape->add_dim()->set_dim_value(d);
}

StatusOr<Attribute> AttributeFromOnnx(const onnx::AttributeProto& a, const std::string& where,
                                      const std::string& model_dir) {
  using AP = onnx::AttributeProto;
  if (!a.ref_attr_name().empty()) {
    return Unsupported("{}: attribute '{}' refers to a function attribute ('{}')", where, a.name(),
                       a.ref_attr_name());
  }
  const AP::AttributeType type = AttributeTypeOf(a);
  switch (type) {
    case AP::FLOAT:
      return Attribute(a.f());
    case AP::INT:
      return Attribute(static_cast<int64_t>(a.i()));
    case AP::STRING:
      return Attribute(a.s());
    case AP::FLOATS:
      return Attribute(std::vector<float>(a.floats().begin(), a.floats().end()));
    case AP::INTS:
      return Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case AP::STRINGS:
      return Attribute(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case AP::TENSOR: {
      const std::string what = fmt::format("{}: attribute '{}'", where, a.name());
      A8_ASSIGN_OR_RETURN(auto data, TensorFromOnnx(a.t(), what, model_dir));
      return Attribute(TensorDataPtr(std::move(data)));
    }
    case AP::GRAPH:
    case AP::GRAPHS:
      return Unsupported("{}: attribute '{}' is a subgraph; control flow is not supported", where,
                         a.name());
    case AP::UNDEFINED:
      return InvalidInput("{}: attribute '{}' has no type and no value", where, a.name());
    default:
      return Unsupported("{}: attribute '{}' has type {}, which a800c does not support", where,
                         a.name(), AP::AttributeType_Name(type));
  }
}

Status AttributeToOnnx(const Node& n, const std::string& name, const Attribute& a,
                       onnx::AttributeProto* p) {
  using AP = onnx::AttributeProto;
  p->set_name(name);
  switch (a.kind()) {
    case AttrKind::kInt:
      p->set_type(AP::INT);
      p->set_i(a.i());
      break;
    case AttrKind::kFloat:
      p->set_type(AP::FLOAT);
      p->set_f(a.f());
      break;
    case AttrKind::kString:
      p->set_type(AP::STRING);
      p->set_s(a.s());
      break;
    case AttrKind::kInts:
      p->set_type(AP::INTS);
      for (int64_t v : a.ints()) p->add_ints(v);
      break;
    case AttrKind::kFloats:
      p->set_type(AP::FLOATS);
      for (float v : a.floats()) p->add_floats(v);
      break;
    case AttrKind::kStrings:
      p->set_type(AP::STRINGS);
      for (const std::string& v : a.strings()) p->add_strings(v);
      break;
    case AttrKind::kTensor:
      if (!a.tensor()) return Internal("{}: attribute '{}' has no tensor", n.Where(), name);
      p->set_type(AP::TENSOR);
      TensorToOnnx(*a.tensor(), "", p->mutable_t());
      break;
  }
  return Status::Ok();
}

std::string OnnxTypeCaseName(const onnx::TypeProto& type) {
  using T = onnx::TypeProto;
  static constexpr EnumName<T::ValueCase> kNames[] = {{T::kTensorType, "tensor"},
                                                      {T::kSequenceType, "sequence"},
                                                      {T::kMapType, "map"},
                                                      {T::kOptionalType, "optional"},
                                                      {T::kSparseTensorType, "sparse_tensor"}};
  return std::string(NameIn(kNames, type.value_case(), "unknown"));
}

}  // namespace a8
