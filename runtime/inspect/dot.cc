// `a800c-inspect --format=dot [--dot-depth=N]`: the plan as a Graphviz picture (see inspect.h).
//
// Kernels are grouped by the ONNX name scope of their node ("/bert/encoder/layer.0/attention/
// MatMul" is in scope bert/encoder/layer.0/attention; a gradient or cast node derived from it,
// "<node>.grad", in the same scope; a name without '/' splits at '.'), with the scope components
// every scoped kernel shares left out. Depth 0 draws every kernel and buffer, nested in one cluster
// per scope. Depth N >= 1 draws one box per scope cut at N components (with its kernel count and
// its most frequent ops) and the data flowing between boxes; parameters and optimizer state are
// left out (the box says how many it reads), so a BERT at depth 1 is a handful of boxes.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/types.h"
#include "runtime/inspect/inspect.h"

namespace a8 {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string Shape(const plan::TensorType& t) {
  std::string s = std::string(DTypeName(static_cast<DType>(t.dtype()))) + "[";
  for (int i = 0; i < t.dims_size(); ++i) s += (i ? "x" : "") + std::to_string(t.dims(i));
  return s + "]";
}

// The scope components of a node name: "/a/b/MatMul" -> {a, b} (the exporters' name scopes);
// a name without '/' is split at '.': "layer0.q.matmul" -> {layer0, q}. The last component (the
// node's own name, with derived suffixes such as ".grad") is not a scope.
std::vector<std::string> ScopeOf(const std::string& node) {
  const char sep = node.find('/') != std::string::npos ? '/' : '.';
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t at = node.find(sep, start);
    if (at == std::string::npos) break;
    if (at > start) parts.push_back(node.substr(start, at - start));
    start = at + 1;
  }
  return parts;
}

std::string Join(const std::vector<std::string>& parts, size_t n) {
  std::string s;
  for (size_t i = 0; i < std::min(n, parts.size()); ++i) s += (i ? "/" : "") + parts[i];
  return s;
}

struct Scopes {
  std::vector<std::vector<std::string>> of_kernel;  // relative to the common prefix
};

Scopes KernelScopes(const plan::Plan& p) {
  Scopes s;
  std::vector<std::string> common;
  bool first = true;
  for (const plan::Kernel& k : p.kernels()) {
    std::vector<std::string> scope = ScopeOf(k.node());
    s.of_kernel.push_back(scope);
    if (scope.empty()) continue;
    if (first) {
      common = scope;
      first = false;
      continue;
    }
    size_t n = 0;
    while (n < common.size() && n < scope.size() && common[n] == scope[n]) ++n;
    common.resize(n);
  }
  for (auto& scope : s.of_kernel) {
    if (scope.size() >= common.size() && !common.empty()) {
      scope.erase(scope.begin(), scope.begin() + static_cast<std::ptrdiff_t>(common.size()));
    }
  }
  return s;
}

bool IsWeightLike(const plan::Buffer& b) {
  return b.region() == plan::Buffer::PERSISTENT && b.role() != plan::Buffer::INPUT &&
         b.role() != plan::Buffer::OUTPUT;
}

std::string BufferNode(const plan::Buffer& b) {
  const bool persistent = b.region() == plan::Buffer::PERSISTENT;
  return fmt::format(
      "  b{} [shape={}, label=\"{}\\n{} {}\"{}];\n", b.id(), persistent ? "note" : "ellipse",
      Escape(b.name()), PlanBufferRoleName(b.role()), Escape(Shape(b.type())),
      b.role() == plan::Buffer::INPUT || b.role() == plan::Buffer::OUTPUT ? ", style=bold" : "");
}

// Depth 0: every kernel, in nested clusters by scope; every buffer at the top level.
std::string FullDot(const plan::Plan& p, const Scopes& scopes) {
  std::string o = "digraph plan {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  for (const plan::Buffer& b : p.buffers()) o += BufferNode(b);
  // A tree of scopes; kernels sit in their deepest scope.
  std::map<std::string, std::vector<int>> kernels_in;
  std::set<std::string> all_scopes;
  for (int i = 0; i < p.kernels_size(); ++i) {
    const auto& scope = scopes.of_kernel[i];
    kernels_in[Join(scope, scope.size())].push_back(i);
    for (size_t n = 1; n <= scope.size(); ++n) all_scopes.insert(Join(scope, n));
  }
  int cluster = 0;
  auto kernel_line = [&](int i) {
    const plan::Kernel& k = p.kernels(i);
    return fmt::format(
        "k{} [shape=box, style=filled, fillcolor=\"#dde8f5\", label=\"[{}] {}\\n{}{}\"];\n", i, i,
        Escape(k.op()), Escape(k.name()), k.why().empty() ? "" : "\\nwhy: " + Escape(k.why()));
  };
  // Emits scope `prefix` (already opened) and its children, recursively, in name order.
  std::function<void(const std::string&, int)> emit = [&](const std::string& prefix, int indent) {
    const std::string pad(static_cast<size_t>(indent) * 2, ' ');
    for (int i : kernels_in[prefix]) o += pad + kernel_line(i);
    for (const std::string& s : all_scopes) {
      const bool child = prefix.empty() ? s.find('/') == std::string::npos
                                        : s.rfind(prefix + "/", 0) == 0 &&
                                              s.find('/', prefix.size() + 1) == std::string::npos;
      if (!child) continue;
      o += fmt::format("{}subgraph cluster_{} {{\n{}  label=\"{}\";\n", pad, cluster++, pad,
                       Escape(s.substr(s.rfind('/') == std::string::npos ? 0 : s.rfind('/') + 1)));
      emit(s, indent + 1);
      o += pad + "}\n";
    }
  };
  emit("", 1);
  for (int i = 0; i < p.kernels_size(); ++i) {
    const plan::Kernel& k = p.kernels(i);
    for (int id : k.inputs()) {
      if (id >= 0 && id < p.buffers_size()) o += fmt::format("  b{} -> k{};\n", id, i);
    }
    for (int id : k.outputs()) {
      if (id >= 0 && id < p.buffers_size()) o += fmt::format("  k{} -> b{};\n", i, id);
    }
  }
  return o + "}\n";
}

// Depth N >= 1: one box per scope cut at N components; data between boxes.
std::string CollapsedDot(const plan::Plan& p, const Scopes& scopes, int depth) {
  std::map<std::string, int> group_id;  // scope -> box index, in first-kernel order
  std::vector<std::string> group_name;
  std::vector<int> group_of(static_cast<size_t>(p.kernels_size()));
  for (int i = 0; i < p.kernels_size(); ++i) {
    const std::string g = Join(scopes.of_kernel[i], static_cast<size_t>(depth));
    auto [it, inserted] = group_id.emplace(g, static_cast<int>(group_name.size()));
    if (inserted) group_name.push_back(g);
    group_of[i] = it->second;
  }
  const size_t n = group_name.size();
  std::vector<std::map<std::string, int>> ops(n);
  std::vector<int> kernels(n, 0);
  std::vector<std::set<int>> weights(n);
  std::vector<int> producer(static_cast<size_t>(p.buffers_size()), -1);
  for (int i = 0; i < p.kernels_size(); ++i) {
    const plan::Kernel& k = p.kernels(i);
    ++kernels[group_of[i]];
    ++ops[group_of[i]][k.op()];
    for (int id : k.outputs()) {
      if (id >= 0 && id < p.buffers_size()) producer[id] = group_of[i];
    }
  }
  std::string o = "digraph plan {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  std::set<std::pair<std::string, std::string>> edges;
  std::set<int> io_buffers;
  for (int i = 0; i < p.kernels_size(); ++i) {
    const plan::Kernel& k = p.kernels(i);
    const std::string to = fmt::format("g{}", group_of[i]);
    for (int id : k.inputs()) {
      if (id < 0 || id >= p.buffers_size()) continue;
      const plan::Buffer& b = p.buffers(id);
      if (b.role() == plan::Buffer::INPUT) {
        io_buffers.insert(id);
        edges.emplace(fmt::format("b{}", id), to);
      } else if (IsWeightLike(b) && producer[id] < 0) {
        weights[group_of[i]].insert(id);
      } else if (producer[id] >= 0 && producer[id] != group_of[i]) {
        edges.emplace(fmt::format("g{}", producer[id]), to);
      }
    }
    for (int id : k.outputs()) {
      if (id >= 0 && id < p.buffers_size() && p.buffers(id).role() == plan::Buffer::OUTPUT) {
        io_buffers.insert(id);
        edges.emplace(to, fmt::format("b{}", id));
      }
    }
  }
  for (int id : io_buffers) o += BufferNode(p.buffers(id));
  for (size_t g = 0; g < n; ++g) {
    std::vector<std::pair<int, std::string>> top;
    for (const auto& [op, count] : ops[g]) top.emplace_back(-count, op);
    std::sort(top.begin(), top.end());
    std::string summary;
    for (size_t i = 0; i < std::min<size_t>(3, top.size()); ++i) {
      summary += fmt::format("{}{} x{}", i ? ", " : "", top[i].second, -top[i].first);
    }
    if (top.size() > 3) summary += ", ...";
    o += fmt::format(
        "  g{} [shape=box3d, style=filled, fillcolor=\"#dde8f5\", label=\"{}\\n{} kernel{}, {} "
        "weight buffer{}\\n{}\"];\n",
        g, Escape(group_name[g].empty() ? "(top level)" : group_name[g]), kernels[g],
        kernels[g] == 1 ? "" : "s", weights[g].size(), weights[g].size() == 1 ? "" : "s",
        Escape(summary));
  }
  for (const auto& [from, to] : edges) o += fmt::format("  {} -> {};\n", from, to);
  return o + "}\n";
}

}  // namespace

std::string InspectDot(const PlanFile& pf, int depth) {
  const plan::Plan& p = pf.plan;
  const Scopes scopes = KernelScopes(p);
  return depth <= 0 ? FullDot(p, scopes) : CollapsedDot(p, scopes, depth);
}

}  // namespace a8
