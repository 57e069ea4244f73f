// The IR text parser's value rules (grammar in printer.h): types, integers and floats, tensor data
// and its elements, attribute values and lists.
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include "compiler/ir/op_table.h"
#include "compiler/ir/parser_internal.h"
#include "kernels/common/float16.h"

namespace a8::ir_text {

StatusOr<TensorType> Parser::ParseType() {
  A8_ASSIGN_OR_RETURN(Token dtype, ExpectKind(TokKind::kIdent, "a type such as f32[2,3]"));
  auto parsed = ParseDTypeName(dtype.text);
  if (!parsed.ok()) return ErrorAt(dtype, parsed.status().message());
  TensorType type{*parsed, {}};
  A8_RETURN_IF_ERROR(ExpectPunct('['));
  if (!TakePunct(']')) {
    do {
      A8_ASSIGN_OR_RETURN(Token dim, ExpectKind(TokKind::kInt, "a dimension"));
      A8_ASSIGN_OR_RETURN(int64_t d, ParseInt(dim));
      if (d < 0) return ErrorAt(dim, fmt::format("negative dimension {}", d));
      type.dims.push_back(d);
    } while (TakePunct(','));
    A8_RETURN_IF_ERROR(ExpectPunct(']'));
  }
  return type;
}

StatusOr<int64_t> Parser::ParseInt(const Token& t) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec != std::errc() || end != t.text.data() + t.text.size()) {
    return ErrorAt(t, fmt::format("integer '{}' is out of range for i64", t.text));
  }
  return v;
}

StatusOr<double> Parser::ParseFloating(bool as_float32, const std::string& what) {
  Token t = Take();
  bool negative = false;
  Token start = t;
  if (t.IsPunct('-') && Peek().kind == TokKind::kIdent) {
    negative = true;
    t = Take();
  }
  if (t.kind == TokKind::kIdent && (t.text == "inf" || t.text == "nan")) {
    double v = t.text == "inf" ? std::numeric_limits<double>::infinity()
                               : std::numeric_limits<double>::quiet_NaN();
    return negative ? -v : v;
  }
  if (negative || (t.kind != TokKind::kFloat && t.kind != TokKind::kInt)) {
    return ErrorAt(start, fmt::format("expected {}, found {}", what, DescribeToken(start)));
  }
  const char* b = t.text.data();
  const char* e = b + t.text.size();
  std::from_chars_result r;
  double v = 0;
  if (as_float32) {
    float f = 0;
    r = std::from_chars(b, e, f);
    v = f;
  } else {
    r = std::from_chars(b, e, v);
  }
  if (r.ec != std::errc() || r.ptr != e) {
    return ErrorAt(
        t, fmt::format("number '{}' is out of range for {}", t.text, as_float32 ? "f32" : "f64"));
  }
  return v;
}

StatusOr<std::shared_ptr<TensorData>> Parser::ParseData(const TensorType& type) {
  if (Peek().IsPunct('<')) {
    Take();
    if (!Peek().Is(TokKind::kIdent, "elided")) return Expected("'elided'");
    Take();
    A8_RETURN_IF_ERROR(ExpectPunct('>'));
    return std::shared_ptr<TensorData>();
  }
  const Token& open = Peek();
  A8_RETURN_IF_ERROR(ExpectPunct('['));
  auto n = type.NumElements();
  if (!n.ok()) return ErrorAt(open, fmt::format("{}: {}", type.ToString(), n.status().message()));
  // Read the literals before allocating, so a huge type with a short list is an error, not an
  // allocation.
  size_t first = pos_;
  int64_t count = 0;
  if (!Peek().IsPunct(']')) {
    while (!Peek().IsPunct(']') && Peek().kind != TokKind::kEof) {
      if (Peek().IsPunct(',')) ++count;
      Take();
    }
    ++count;
  }
  if (count != *n) {
    return ErrorAt(
        open, fmt::format("{} has {} elements but the data has {}", type.ToString(), *n, count));
  }
  pos_ = first;
  auto data = TensorData::Make(type);
  for (int64_t i = 0; i < *n; ++i) {
    if (i) A8_RETURN_IF_ERROR(ExpectPunct(','));
    A8_RETURN_IF_ERROR(ParseElement(data.get(), i));
  }
  A8_RETURN_IF_ERROR(ExpectPunct(']'));
  return data;
}

Status Parser::ParseElement(TensorData* d, int64_t i) {
  DType dt = d->type.dtype;
  std::string what = fmt::format("a {} element", DTypeName(dt));
  if (IsFloat(dt)) {
    Token at = Peek();
    A8_ASSIGN_OR_RETURN(double v, ParseFloating(dt != DType::kF64, what));
    float f = static_cast<float>(v);
    switch (dt) {
      case DType::kF64:
        d->mutable_data<double>()[i] = v;
        break;
      case DType::kF32:
        d->mutable_data<float>()[i] = f;
        break;
      case DType::kF16: {
        uint16_t h = FloatToHalfBits(f);
        if (std::isfinite(f) && (h & 0x7c00u) == 0x7c00u) {
          return ErrorAt(at, fmt::format("{} is out of range for f16", at.text));
        }
        d->mutable_data<uint16_t>()[i] = h;
        break;
      }
      default: {
        uint16_t b = FloatToBFloat16Bits(f);
        if (std::isfinite(f) && (b & 0x7f80u) == 0x7f80u) {
          return ErrorAt(at, fmt::format("{} is out of range for bf16", at.text));
        }
        d->mutable_data<uint16_t>()[i] = b;
      }
    }
    return Status::Ok();
  }
  Token t = Take();
  if (dt == DType::kBool) {
    if (t.Is(TokKind::kIdent, "true") || t.Is(TokKind::kInt, "1")) {
      d->mutable_data<uint8_t>()[i] = 1;
    } else if (t.Is(TokKind::kIdent, "false") || t.Is(TokKind::kInt, "0")) {
      d->mutable_data<uint8_t>()[i] = 0;
    } else {
      return ErrorAt(t, fmt::format("expected true or false, found {}", DescribeToken(t)));
    }
    return Status::Ok();
  }
  if (t.kind != TokKind::kInt) {
    return ErrorAt(t, fmt::format("expected {}, found {}", what, DescribeToken(t)));
  }
  if (dt == DType::kU64) {  // above INT64_MAX: parsed unsigned
    uint64_t u = 0;
    const char* end = t.text.data() + t.text.size();
    auto [ptr, ec] = std::from_chars(t.text.data(), end, u);
    if (ec != std::errc() || ptr != end) {
      return ErrorAt(t, fmt::format("{} is out of range for u64", t.text));
    }
    d->mutable_data<uint64_t>()[i] = u;
    return Status::Ok();
  }
  A8_ASSIGN_OR_RETURN(int64_t v, ParseInt(t));
  auto check = [&](int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi) {
      return ErrorAt(t, fmt::format("{} is out of range for {}", v, DTypeName(dt)));
    }
    return Status::Ok();
  };
  switch (dt) {
    case DType::kI64:
      d->mutable_data<int64_t>()[i] = v;
      break;
    case DType::kI32:
      A8_RETURN_IF_ERROR(
          check(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
      d->mutable_data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DType::kI8:
      A8_RETURN_IF_ERROR(check(-128, 127));
      d->mutable_data<int8_t>()[i] = static_cast<int8_t>(v);
      break;
    case DType::kI16:
      A8_RETURN_IF_ERROR(check(-32768, 32767));
      d->mutable_data<int16_t>()[i] = static_cast<int16_t>(v);
      break;
    case DType::kU16:
      A8_RETURN_IF_ERROR(check(0, 0xffff));
      d->mutable_data<uint16_t>()[i] = static_cast<uint16_t>(v);
      break;
    case DType::kU32:
      A8_RETURN_IF_ERROR(check(0, 0xffffffffll));
      d->mutable_data<uint32_t>()[i] = static_cast<uint32_t>(v);
      break;
    default:
      A8_RETURN_IF_ERROR(check(0, 255));
      d->mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
  return Status::Ok();
}

StatusOr<Attribute> Parser::ParseAttrValue() {
  const Token& t = Peek();
  switch (t.kind) {
    case TokKind::kInt: {
      Token tok = Take();
      A8_ASSIGN_OR_RETURN(int64_t v, ParseInt(tok));
      return Attribute(v);
    }
    case TokKind::kString:
      return Attribute(Take().text);
    case TokKind::kFloat: {
      A8_ASSIGN_OR_RETURN(double v, ParseFloating(true, "a float"));
      return Attribute(static_cast<float>(v));
    }
    default:
      break;
  }
  if (t.IsPunct('-') || t.Is(TokKind::kIdent, "inf") || t.Is(TokKind::kIdent, "nan")) {
    A8_ASSIGN_OR_RETURN(double v, ParseFloating(true, "an attribute value"));
    return Attribute(static_cast<float>(v));
  }
  if (t.IsPunct('[')) return ParseAttrList(std::nullopt);
  if (t.kind == TokKind::kIdent && Peek(1).IsPunct('[')) {
    static const std::pair<std::string_view, AttrKind> kKinds[] = {
        {"ints", AttrKind::kInts}, {"floats", AttrKind::kFloats}, {"strings", AttrKind::kStrings}};
    for (const auto& [word, kind] : kKinds) {
      if (t.text == word) {
        Take();
        return ParseAttrList(kind);
      }
    }
  }
  if (t.Is(TokKind::kIdent, "tensor") && Peek(1).IsPunct('<')) {
    Take();
    Take();
    A8_ASSIGN_OR_RETURN(TensorType type, ParseType());
    A8_RETURN_IF_ERROR(ExpectPunct(':'));
    if (!Peek().IsPunct('[')) return Expected("'[' (tensor attributes are never elided)");
    A8_ASSIGN_OR_RETURN(std::shared_ptr<TensorData> data, ParseData(type));
    A8_RETURN_IF_ERROR(ExpectPunct('>'));
    return Attribute(TensorDataPtr(std::move(data)));
  }
  return Expected("an attribute value (int, float, \"string\", list or tensor<...>)");
}

// `[...]` after an optional kind word. Without one, the literals decide: strings if the first is
// a string, floats if any is a float, else ints; an empty list needs the kind word.
StatusOr<Attribute> Parser::ParseAttrList(std::optional<AttrKind> forced) {
  const Token& open = Peek();
  A8_RETURN_IF_ERROR(ExpectPunct('['));
  size_t first = pos_;
  std::optional<AttrKind> kind = forced;
  if (!kind) {
    if (Peek().IsPunct(']')) {
      return ErrorAt(open, "an empty list needs its kind: ints[], floats[] or strings[]");
    }
    kind = Peek().kind == TokKind::kString ? AttrKind::kStrings : AttrKind::kInts;
    for (size_t i = first;
         kind == AttrKind::kInts && !toks_[i].IsPunct(']') && toks_[i].kind != TokKind::kEof; ++i) {
      const Token& e = toks_[i];
      if (e.kind == TokKind::kFloat || e.IsPunct('-') || e.Is(TokKind::kIdent, "inf") ||
          e.Is(TokKind::kIdent, "nan")) {
        kind = AttrKind::kFloats;
      }
    }
  }
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  if (!Peek().IsPunct(']')) {
    do {
      if (*kind == AttrKind::kStrings) {
        A8_ASSIGN_OR_RETURN(Token s, ExpectKind(TokKind::kString, "a string"));
        strings.push_back(s.text);
      } else if (*kind == AttrKind::kFloats) {
        A8_ASSIGN_OR_RETURN(double v, ParseFloating(true, "a float"));
        floats.push_back(static_cast<float>(v));
      } else {
        A8_ASSIGN_OR_RETURN(Token i, ExpectKind(TokKind::kInt, "an integer"));
        A8_ASSIGN_OR_RETURN(int64_t v, ParseInt(i));
        ints.push_back(v);
      }
    } while (TakePunct(','));
  }
  A8_RETURN_IF_ERROR(ExpectPunct(']'));
  if (*kind == AttrKind::kStrings) return Attribute(std::move(strings));
  if (*kind == AttrKind::kFloats) return Attribute(std::move(floats));
  return Attribute(std::move(ints));
}

}  // namespace a8::ir_text
