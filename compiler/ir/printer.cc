// The IR text printer (format in printer.h). Everything is printed in a fixed order (graph values
// in creation order, nodes in program order, attributes sorted by name) and floats in their
// shortest round-trip form, so the same graph always gives the same bytes.
#include "compiler/ir/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>
#include <vector>

#include "kernels/common/float16.h"

namespace a8 {
namespace {

bool IsBareNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '/' || c == '-';
}

// `"..."` with C escapes; bytes >= 0x80 (UTF-8) are kept as they are.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += fmt::format("\\x{:02x}", u);
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

// `%name`, or `%"odd name"` when the name has characters outside [A-Za-z0-9_.:/-] or is empty.
std::string Sigiled(char sigil, const std::string& name) {
  bool bare = !name.empty();
  for (char c : name) bare = bare && IsBareNameChar(c);
  return bare ? sigil + name : sigil + Quote(name);
}

std::string ValueRef(const Value* v) { return v ? Sigiled('%', v->name()) : "_"; }

// A float literal that the parser reads back bit-exactly and as a float (never as an int).
template <typename T>
std::string FormatFloating(T f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  std::string s = fmt::format("{}", f);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Element i of `d` as its IR literal (d's size has been checked against its type).
std::string FormatElement(const TensorData& d, int64_t i) {
  switch (d.type.dtype) {
    case DType::kF32:
      return FormatFloating(d.data<float>()[i]);
    case DType::kF16:
      return FormatFloating(HalfBitsToFloat(d.data<uint16_t>()[i]));
    case DType::kBF16:
      return FormatFloating(BFloat16BitsToFloat(d.data<uint16_t>()[i]));
    case DType::kF64:
      return FormatFloating(d.data<double>()[i]);
    case DType::kBool:
      return d.data<uint8_t>()[i] != 0 ? "true" : "false";
    case DType::kU64:
      return fmt::format("{}", d.data<uint64_t>()[i]);
    default:
      return fmt::format("{}", d.GetInt64(i));
  }
}

// `[e0, e1, ...]` (flat, row-major), or `<elided>` beyond `max_elements` (negative: no limit).
// Data whose size disagrees with its type (an invalid graph) is shown as such, not read.
std::string FormatData(const TensorData& d, int64_t max_elements) {
  auto n = d.type.NumElements();
  if (!n.ok() || static_cast<uint64_t>(*n) * DTypeSize(d.type.dtype) != d.bytes.size()) {
    return fmt::format("<invalid data: {} bytes>", d.bytes.size());
  }
  if (max_elements >= 0 && *n > max_elements) return "<elided>";
  std::string out = "[";
  for (int64_t i = 0; i < *n; ++i) {
    if (i) out += ", ";
    out += FormatElement(d, i);
  }
  out += "]";
  return out;
}

template <typename T, typename F>
std::string FormatList(const std::vector<T>& v, std::string_view empty, F format) {
  if (v.empty()) return std::string(empty);
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += format(v[i]);
  }
  return out + "]";
}

std::string FormatAttribute(const Attribute& a) {
  switch (a.kind()) {
    case AttrKind::kInt:
      return fmt::format("{}", a.i());
    case AttrKind::kFloat:
      return FormatFloating(a.f());
    case AttrKind::kString:
      return Quote(a.s());
    case AttrKind::kInts:
      return FormatList(a.ints(), "ints[]", [](int64_t x) { return fmt::format("{}", x); });
    case AttrKind::kFloats:
      return FormatList(a.floats(), "floats[]", [](float x) { return FormatFloating(x); });
    case AttrKind::kStrings:
      return FormatList(a.strings(), "strings[]", [](const std::string& s) { return Quote(s); });
    case AttrKind::kTensor:
      if (!a.tensor()) return "tensor<null>";
      // Tensor attributes are part of the node's meaning: always printed in full.
      return fmt::format("tensor<{}: {}>", a.tensor()->type.ToString(),
                         FormatData(*a.tensor(), -1));
  }
  return "?";
}

std::string AttrName(const std::string& name) {
  bool bare = !name.empty() && !(name[0] >= '0' && name[0] <= '9') && name[0] != '.';
  for (char c : name) {
    bare = bare && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.');
  }
  return bare ? name : Quote(name);
}

// The trailing `memory {...} {...}` block; entries by (first, name) so it reads in program order.
void PrintMemoryPlan(const MemoryPlan& plan, std::ostream& os) {
  os << "  memory {alignment=" << plan.alignment << ", arena=" << plan.arena_bytes
     << ", lower_bound=" << plan.lower_bound << "} {\n";
  std::vector<std::pair<int, const std::string*>> order;
  for (const auto& [name, a] : plan.values) order.emplace_back(a.first, &name);
  std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    return std::tie(x.first, *x.second) < std::tie(y.first, *y.second);
  });
  for (const auto& [first, name] : order) {
    const BufferAssignment& a = plan.values.at(*name);
    os << "    " << Sigiled('%', *name) << " offset=" << a.offset << " bytes=" << a.bytes
       << " live=[" << a.first << ", " << a.last << "]";
    if (!a.alias_of.empty()) os << " alias=" << Sigiled('%', a.alias_of);
    os << "\n";
  }
  os << "  }\n";
}

}  // namespace

std::string PrintNode(const Node& n, bool types_known) {
  std::string out;
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (i) out += ", ";
    out += ValueRef(n.output(i));
  }
  if (n.num_outputs() > 0) out += " = ";
  out += n.qualified_op();
  out += "(";
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (i) out += ", ";
    out += ValueRef(n.input(i));
  }
  out += ")";
  if (!n.attrs().empty()) {
    out += " {";
    bool first = true;
    for (const auto& [name, value] : n.attrs()) {
      if (!first) out += ", ";
      first = false;
      out += AttrName(name) + "=" + FormatAttribute(value);
    }
    out += "}";
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    out += i ? ", " : " : ";
    out += n.output(i) && types_known ? n.output(i)->type().ToString() : "?";
  }
  if (!n.name().empty()) out += " loc(" + Quote(n.name()) + ")";
  return out;
}

void PrintIr(const Graph& g, std::ostream& os, const PrintOptions& opts) {
  os << "graph " << Sigiled('@', g.name) << " opsets {";
  bool first = true;
  for (const auto& [domain, version] : g.opsets) {
    if (!first) os << ", ";
    first = false;
    os << Quote(domain) << " = " << version;
  }
  os << "} {\n";
  for (const Value* v : g.graph_values()) {
    os << "  " << ValueRoleName(v->role()) << " " << ValueRef(v) << " : " << v->type().ToString();
    if (v->role() != ValueRole::kInput) {
      os << " = " << (v->data() ? FormatData(*v->data(), opts.max_inline_elements) : "<elided>");
    }
    os << "\n";
  }
  for (const Node* n : g.nodes()) os << "  " << PrintNode(*n, opts.types_known) << "\n";
  for (const Value* v : g.outputs()) os << "  output " << ValueRef(v) << "\n";
  for (const Graph::StateUpdate& u : g.updates()) {
    os << "  update " << ValueRef(u.target) << " = " << ValueRef(u.value) << "\n";
  }
  if (g.memory_plan) PrintMemoryPlan(*g.memory_plan, os);
  os << "}\n";
}

std::string PrintIrToString(const Graph& g, const PrintOptions& opts) {
  std::ostringstream os;
  PrintIr(g, os, opts);
  return os.str();
}

}  // namespace a8
