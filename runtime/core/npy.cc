#include "runtime/core/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/enum_names.h"

namespace a8 {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// A tiny parser for the header's Python dict literal: {'key': value, ...} where a value is a
// quoted string, True/False, or a tuple of non-negative integers.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& s) : s_(s) {}

  void SkipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool String(std::string* out) {
    SkipSpace();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return false;
    char q = s_[i_++];
    size_t end = s_.find(q, i_);
    if (end == std::string::npos) return false;
    *out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return true;
  }
  bool Word(std::string* out) {
    SkipSpace();
    size_t b = i_;
    while (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]))) ++i_;
    *out = s_.substr(b, i_ - b);
    return !out->empty();
  }
  bool Tuple(std::vector<int64_t>* dims) {
    if (!Eat('(')) return false;
    while (true) {
      if (Eat(')')) return true;
      SkipSpace();
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return false;
      int64_t v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return false;
        v = v * 10 + (s_[i_++] - '0');
      }
      // numpy may write "3L" in Python 2 era files.
      if (i_ < s_.size() && s_[i_] == 'L') ++i_;
      dims->push_back(v);
      if (Eat(',')) continue;
      if (Eat(')')) return true;
      return false;
    }
  }
  bool AtEnd() {
    SkipSpace();
    return i_ == s_.size();
  }

 private:
  const std::string& s_;
  size_t i_ = 0;
};

StatusOr<DType> DescrToDType(const std::string& d, const std::string& source, bool bf16) {
  struct Entry {
    const char* names[3];
    DType dtype;
  };
  static const Entry kTable[] = {
      {{"<f4", "=f4", nullptr}, DType::kF32}, {{"<f2", "=f2", nullptr}, DType::kF16},
      {{"<f8", "=f8", nullptr}, DType::kF64}, {{"<i8", "=i8", nullptr}, DType::kI64},
      {{"<i4", "=i4", nullptr}, DType::kI32}, {{"|i1", "<i1", "=i1"}, DType::kI8},
      {{"|u1", "<u1", "=u1"}, DType::kU8},    {{"|b1", "<b1", "=b1"}, DType::kBool},
      {{"<i2", "=i2", nullptr}, DType::kI16}, {{"<u4", "=u4", nullptr}, DType::kU32},
      {{"<u8", "=u8", nullptr}, DType::kU64},
  };
  for (const Entry& e : kTable)
    for (const char* n : e.names)
      if (n != nullptr && d == n) return e.dtype;
  // <u2: u16, or the bit patterns of bf16 when the caller reads a bf16 input.
  if (d == "<u2" || d == "=u2") return bf16 ? DType::kBF16 : DType::kU16;
  return InvalidInput(
      "{}: descr: unsupported dtype '{}' (supported: <f4 <f2 <f8 <i8 <i4 <i2 |i1 <u8 <u4 <u2 "
      "|u1 |b1; <u2 holds bf16 for a bf16 input)",
      source, d);
}

uint64_t ReadLE(const std::string& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

}  // namespace

const char* NpyDescr(DType dtype) {
  // Each descr is a literal, so the view's data is a NUL-terminated string.
  static constexpr EnumName<DType> kDescrs[] = {
      {DType::kF32, "<f4"},  {DType::kF16, "<f2"}, {DType::kBF16, "<u2"}, {DType::kF64, "<f8"},
      {DType::kI64, "<i8"},  {DType::kI32, "<i4"}, {DType::kI8, "|i1"},   {DType::kU8, "|u1"},
      {DType::kBool, "|b1"}, {DType::kI16, "<i2"}, {DType::kU16, "<u2"},  {DType::kU32, "<u4"},
      {DType::kU64, "<u8"}};
  return NameIn(kDescrs, dtype, "?").data();
}

StatusOr<NpyArray> ParseNpy(const std::string& bytes, const std::string& source,
                            bool bf16_from_u2) {
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    return InvalidInput("{}: not a .npy file (bad magic)", source);
  int major = static_cast<uint8_t>(bytes[6]);
  int minor = static_cast<uint8_t>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    return InvalidInput("{}: unsupported .npy format version {}.{}", source, major, minor);
  size_t len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes) return InvalidInput("{}: truncated header", source);
  uint64_t header_len = ReadLE(bytes, 8, static_cast<int>(len_bytes));
  size_t data_at = 8 + len_bytes;
  if (header_len > bytes.size() - data_at)
    return InvalidInput("{}: header length {} is past the end of the file ({} bytes)", source,
                        header_len, bytes.size());
  std::string header = bytes.substr(data_at, header_len);
  data_at += header_len;

  HeaderParser p(header);
  std::string descr;
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  std::vector<int64_t> dims;
  if (!p.Eat('{')) return InvalidInput("{}: header: expected a dict", source);
  while (!p.Eat('}')) {
    std::string key;
    if (!p.String(&key) || !p.Eat(':'))
      return InvalidInput("{}: header: malformed dict entry", source);
    if (key == "descr") {
      if (!p.String(&descr))
        return InvalidInput(
            "{}: descr: expected a simple dtype string (structured dtypes are not "
            "supported)",
            source);
      have_descr = true;
    } else if (key == "fortran_order") {
      std::string w;
      if (!p.Word(&w) || (w != "True" && w != "False"))
        return InvalidInput("{}: fortran_order: expected True or False", source);
      fortran = w == "True";
      have_order = true;
    } else if (key == "shape") {
      if (!p.Tuple(&dims)) return InvalidInput("{}: shape: expected a tuple of integers", source);
      have_shape = true;
    } else {
      return InvalidInput("{}: header: unexpected key '{}'", source, key);
    }
    if (!p.Eat(',')) {
      if (!p.Eat('}')) return InvalidInput("{}: header: malformed dict", source);
      break;
    }
  }
  if (!p.AtEnd()) return InvalidInput("{}: header: trailing characters after the dict", source);
  if (!have_descr || !have_order || !have_shape)
    return InvalidInput("{}: header: missing '{}'", source,
                        !have_descr   ? "descr"
                        : !have_order ? "fortran_order"
                                      : "shape");
  if (fortran)
    return InvalidInput(
        "{}: fortran_order: Fortran-order arrays are not supported (save with "
        "numpy.ascontiguousarray)",
        source);
  A8_ASSIGN_OR_RETURN(DType dtype, DescrToDType(descr, source, bf16_from_u2));
  uint64_t count = 1;
  for (int64_t d : dims) {
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / 16 / static_cast<uint64_t>(d))
      return InvalidInput("{}: shape: element count overflows", source);
    count *= static_cast<uint64_t>(d);
  }
  uint64_t want = count * DTypeSize(dtype);
  uint64_t have = bytes.size() - data_at;
  if (have != want)
    return InvalidInput("{}: data: {} bytes, but shape and descr '{}' need {}", source, have, descr,
                        want);
  NpyArray out;
  out.dtype = dtype;
  out.dims = std::move(dims);
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_at), bytes.end());
  return out;
}

StatusOr<NpyArray> ReadNpyFile(const std::string& path, bool bf16_from_u2) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput("{}: cannot open file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return InvalidInput("{}: read error", path);
  return ParseNpy(ss.str(), path, bf16_from_u2);
}

StatusOr<TensorDataPtr> ReadNpyTensor(const std::string& path) {
  A8_ASSIGN_OR_RETURN(NpyArray array, ReadNpyFile(path));
  auto data = std::make_shared<TensorData>();
  data->type = TensorType{array.dtype, std::move(array.dims)};
  data->bytes = std::move(array.data);
  return TensorDataPtr(std::move(data));
}

std::string SerializeNpy(DType dtype, const std::vector<int64_t>& dims, const void* data) {
  std::string shape = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    shape += std::to_string(dims[i]);
    if (dims.size() == 1 || i + 1 < dims.size()) shape += ",";
    if (i + 1 < dims.size()) shape += " ";
  }
  shape += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   NpyDescr(dtype), shape);
  bool v2 = header.size() + 11 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  uint32_t n = static_cast<uint32_t>(header.size());
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  out += header;
  size_t count = 1;
  for (int64_t d : dims) count *= static_cast<size_t>(d);
  out.append(static_cast<const char*>(data), count * DTypeSize(dtype));
  return out;
}

Status WriteNpyFile(const std::string& path, DType dtype, const std::vector<int64_t>& dims,
                    const void* data) {
  std::string bytes = SerializeNpy(dtype, dims, data);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidInput("{}: cannot create file", path);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Internal("{}: write failed", path);
  return Status::Ok();
}

}  // namespace a8
