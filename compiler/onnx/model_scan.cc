#include "compiler/onnx/model_scan.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace a8 {
namespace {

// Protobuf wire types and the field numbers of onnx.proto walked here.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
constexpr uint64_t kModelGraph = 7, kGraphInitializer = 5, kTensorDataType = 2, kTensorRawData = 9;
// TensorProto.DataType values of the float types (FLOAT, FLOAT16, DOUBLE, BFLOAT16).
bool IsFloatOnnxType(uint64_t t) { return t == 1 || t == 10 || t == 11 || t == 16; }

bool ReadVarint(std::string_view s, size_t* at, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *at < s.size(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(s[(*at)++]);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

struct Field {
  uint64_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;       // a varint's value
  std::string_view payload;  // a length-delimited field's bytes
  std::string_view whole;    // the field as it is encoded: key and value
};

// The next field of the message `s` at `*at`; false on bytes this walk does not take.
bool NextField(std::string_view s, size_t* at, Field* f) {
  const size_t start = *at;
  uint64_t key;
  if (!ReadVarint(s, at, &key)) return false;
  f->number = key >> 3;
  f->wire = static_cast<uint32_t>(key & 7);
  if (f->number == 0) return false;
  switch (f->wire) {
    case kVarint:
      if (!ReadVarint(s, at, &f->varint)) return false;
      break;
    case kFixed64:
    case kFixed32: {
      const size_t n = f->wire == kFixed64 ? 8 : 4;
      if (s.size() - *at < n) return false;
      *at += n;
      break;
    }
    case kLengthDelimited: {
      uint64_t n;
      if (!ReadVarint(s, at, &n) || n > s.size() - *at) return false;
      f->payload = s.substr(*at, static_cast<size_t>(n));
      *at += static_cast<size_t>(n);
      break;
    }
    default:  // groups (deprecated) and invalid wire types
      return false;
  }
  f->whole = s.substr(start, *at - start);
  return true;
}

void PutMessageField(std::string* out, uint64_t number, std::string_view message) {
  PutVarint(out, number << 3 | kLengthDelimited);
  PutVarint(out, message.size());
  out->append(message);
}

// A TensorProto without its raw_data when it is a float tensor (`*raw` then holds it).
bool StripTensor(std::string_view s, std::string* out, std::optional<std::string_view>* raw) {
  uint64_t data_type = 0;
  std::optional<std::string_view> last_raw;
  Field f;
  for (size_t at = 0; at < s.size();) {
    if (!NextField(s, &at, &f)) return false;
    if (f.number == kTensorDataType && f.wire == kVarint) data_type = f.varint;
    if (f.number == kTensorRawData && f.wire == kLengthDelimited) last_raw = f.payload;
  }
  const bool strip = last_raw.has_value() && IsFloatOnnxType(data_type);
  for (size_t at = 0; at < s.size();) {
    NextField(s, &at, &f);
    if (strip && f.number == kTensorRawData && f.wire == kLengthDelimited) continue;
    out->append(f.whole);
  }
  if (strip) *raw = last_raw;
  return true;
}

bool StripGraph(std::string_view s, std::string* out,
                std::vector<std::optional<std::string_view>>* raws) {
  Field f;
  std::string tensor;
  for (size_t at = 0; at < s.size();) {
    if (!NextField(s, &at, &f)) return false;
    if (f.number != kGraphInitializer || f.wire != kLengthDelimited) {
      out->append(f.whole);
      continue;
    }
    tensor.clear();
    std::optional<std::string_view> raw;
    if (!StripTensor(f.payload, &tensor, &raw)) return false;
    raws->push_back(raw);
    PutMessageField(out, kGraphInitializer, tensor);
  }
  return true;
}

}  // namespace

std::optional<ModelWithoutWeights> StripInitializerData(std::string_view model) {
  ModelWithoutWeights m;
  Field f;
  std::string graph;
  // A repeated `graph` field merges (its initializers follow one another): kept in order.
  for (size_t at = 0; at < model.size();) {
    if (!NextField(model, &at, &f)) return std::nullopt;
    if (f.number != kModelGraph || f.wire != kLengthDelimited) {
      m.message.append(f.whole);
      continue;
    }
    graph.clear();
    if (!StripGraph(f.payload, &graph, &m.raw_data)) return std::nullopt;
    PutMessageField(&m.message, kModelGraph, graph);
  }
  return m;
}

void DropMappedPages(std::string_view bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(bytes.data()) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size()) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace a8
