#include "runtime/inspect/inspect.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/ir/types.h"
#include "compiler/plan/plan_scaler.h"

namespace a8 {
namespace {

// The data-parallel gradient buckets (bucket-gradients): one per a8.AllReduceStart kernel.
struct BucketInfo {
  int64_t id = 0;
  std::string wire;
  int gradients = 0;
  uint64_t bytes = 0;
  int start_kernel = 0;    // the kernel that starts its all-reduce
  std::string after_node;  // the node that produced its last gradient, just before the start
};

std::vector<BucketInfo> Buckets(const plan::Plan& p) {
  std::vector<BucketInfo> out;
  for (int k = 0; k < p.kernels_size(); ++k) {
    const plan::Kernel& kern = p.kernels(k);
    if (kern.op() != "a8.AllReduceStart") continue;
    BucketInfo b;
    b.wire = "f32";
    for (const plan::Attribute& a : kern.attrs()) {
      if (a.name() == "bucket") b.id = a.i();
      if (a.name() == "dtype") b.wire = a.s();
    }
    for (int in : kern.inputs()) {
      if (in < 0) continue;
      ++b.gradients;
      b.bytes += p.buffers(in).bytes();
    }
    b.start_kernel = k;
    b.after_node = k > 0 ? p.kernels(k - 1).node() : "";
    out.push_back(b);
  }
  return out;
}

using Json = nlohmann::ordered_json;

std::string DTypeStr(int d) {
  if (d < 0 || d > static_cast<int>(DType::kBool)) return fmt::format("dtype{}", d);
  return std::string(DTypeName(static_cast<DType>(d)));
}

const char* RegionName(plan::Buffer::Region r) {
  return r == plan::Buffer::PERSISTENT ? "persistent" : "arena";
}

std::string ShapeStr(const plan::TensorType& t) {
  std::string s = DTypeStr(t.dtype()) + "[";
  for (int i = 0; i < t.dims_size(); ++i) s += (i ? "x" : "") + std::to_string(t.dims(i));
  return s + "]";
}

std::string BufName(const plan::Plan& p, int id) {
  if (id < 0) return "_";
  if (id >= p.buffers_size()) return fmt::format("#{}", id);
  return p.buffers(id).name();
}

uint64_t RoundUp(uint64_t v, uint64_t a) { return a == 0 ? v : (v + a - 1) / a * a; }

double Ratio(const plan::Plan& p) {
  if (p.arena_lower_bound() == 0) return p.arena_bytes() == 0 ? 1.0 : 0.0;
  return static_cast<double>(p.arena_bytes()) / static_cast<double>(p.arena_lower_bound());
}

std::string FloatStr(float f) { return fmt::format("{}", f); }

std::string AttrValueStr(const plan::Plan& p, const plan::Attribute& a) {
  auto join = [](const auto& vals, auto fn) {
    std::string s = "[";
    bool first = true;
    for (const auto& v : vals) {
      s += (first ? "" : ",") + fn(v);
      first = false;
    }
    return s + "]";
  };
  switch (a.value_case()) {
    case plan::Attribute::kI:
      return std::to_string(a.i());
    case plan::Attribute::kF:
      return FloatStr(a.f());
    case plan::Attribute::kS:
      return "\"" + a.s() + "\"";
    case plan::Attribute::kInts:
      return join(a.ints().values(), [](int64_t v) { return std::to_string(v); });
    case plan::Attribute::kFloats:
      return join(a.floats().values(), [](float v) { return FloatStr(v); });
    case plan::Attribute::kStrings:
      return join(a.strings().values(), [](const std::string& v) { return "\"" + v + "\""; });
    case plan::Attribute::kTensorBuffer:
      return "tensor:" + BufName(p, a.tensor_buffer());
    default:
      return "?";
  }
}

Json AttrValueJson(const plan::Plan& p, const plan::Attribute& a) {
  switch (a.value_case()) {
    case plan::Attribute::kI:
      return a.i();
    case plan::Attribute::kF:
      return static_cast<double>(a.f());
    case plan::Attribute::kS:
      return a.s();
    case plan::Attribute::kInts: {
      Json j = Json::array();
      for (int64_t v : a.ints().values()) j.push_back(v);
      return j;
    }
    case plan::Attribute::kFloats: {
      Json j = Json::array();
      for (float v : a.floats().values()) j.push_back(static_cast<double>(v));
      return j;
    }
    case plan::Attribute::kStrings: {
      Json j = Json::array();
      for (const std::string& v : a.strings().values()) j.push_back(v);
      return j;
    }
    case plan::Attribute::kTensorBuffer:
      return Json{{"tensor_buffer", a.tensor_buffer()}, {"name", BufName(p, a.tensor_buffer())}};
    default:
      return nullptr;
  }
}

// The dtype signature part of a kernel name ("f32,f32->f32"), or "" when the name has no ':'.
std::string Signature(const std::string& kernel_name) {
  size_t c = kernel_name.rfind(':');
  return c == std::string::npos ? "" : kernel_name.substr(c + 1);
}

}  // namespace

StatusOr<InspectFormat> ParseInspectFormat(std::string_view name) {
  if (name == "text") return InspectFormat::kText;
  if (name == "json") return InspectFormat::kJson;
  if (name == "dot") return InspectFormat::kDot;
  return InvalidInput("--format: unknown format '{}' (expected text, json or dot)", name);
}

LiveSet LargestLiveSet(const plan::Plan& p) {
  const int n = p.kernels_size();
  // The root of each in-place chain (alias_of followed to a buffer that aliases nothing; bounded
  // so a malformed cycle cannot loop).
  std::vector<int> root(p.buffers_size());
  for (int i = 0; i < p.buffers_size(); ++i) {
    int r = i;
    for (int hops = 0; hops < p.buffers_size(); ++hops) {
      int next = p.buffers(r).alias_of();
      if (next < 0 || next >= p.buffers_size()) break;
      r = next;
    }
    root[i] = r;
  }
  LiveSet best;
  bool have = false;
  for (int k = (n == 0 ? -1 : 0); k < std::max(n, 0); ++k) {
    LiveSet cur;
    cur.kernel = k;
    std::vector<bool> counted(p.buffers_size(), false);
    for (const plan::Buffer& b : p.buffers()) {
      if (b.region() != plan::Buffer::ARENA) continue;
      if (b.first() > k || b.last() < k) continue;
      cur.buffers.push_back(b.id());
      const int r = root[b.id()];
      if (counted[r]) continue;
      counted[r] = true;
      uint64_t bytes = 0;  // a chain's bytes: its largest member
      for (int i = 0; i < p.buffers_size(); ++i) {
        if (root[i] == r) bytes = std::max(bytes, RoundUp(p.buffers(i).bytes(), p.alignment()));
      }
      cur.bytes += bytes;
    }
    if (!have || cur.bytes > best.bytes) {
      best = std::move(cur);
      have = true;
    }
    if (n == 0) break;
  }
  return best;
}

RoleTotals TotalsForRole(const plan::Plan& p, plan::Buffer::Role role) {
  RoleTotals t;
  for (const plan::Buffer& b : p.buffers()) {
    if (b.role() != role) continue;
    ++t.count;
    t.bytes += b.bytes();
  }
  return t;
}

std::string InspectText(const PlanFile& pf) {
  const plan::Plan& p = pf.plan;
  std::string o;
  auto line = [&o](const std::string& s) { o += s + "\n"; };
  line(fmt::format("plan: {} (format {}, compiled by {})",
                   p.model_name().empty() ? "<unnamed>" : p.model_name(), p.format_version(),
                   p.compiler_version()));
  line(fmt::format("  model hash: {}", p.model_hash()));
  line(fmt::format("  target: {}  precision: {}  training: {}", p.target(), p.precision(),
                   p.training() ? "yes" : "no"));
  const StatusOr<PlanScaler> scaler = PlanScalerOf(pf);
  if (!scaler.ok()) {
    line(fmt::format("  loss scaler: {} ({})", p.scaler().mode(), scaler.status().message()));
  } else if (scaler->mode == "none") {
    line("  loss scaler: none");
  } else if (scaler->mode == "static") {
    line(fmt::format("  loss scaler: static (scale {})", scaler->init_scale));
  } else {
    const cpu::UpdateScaleParams& u = scaler->update;
    line(
        fmt::format("  loss scaler: {} (init {}, growth {} every {} steps, backoff {}, "
                    "range [{}, {}])",
                    scaler->mode, scaler->init_scale, u.growth_factor, u.growth_interval,
                    u.backoff_factor, u.min_scale, u.max_scale));
  }
  for (const auto& b : p.inputs())
    line(fmt::format("  input {}: {}", b.name(), ShapeStr(p.buffers(b.buffer()).type())));
  for (const auto& b : p.outputs())
    line(fmt::format("  output {}: {}", b.name(), ShapeStr(p.buffers(b.buffer()).type())));
  RoleTotals params = TotalsForRole(p, plan::Buffer::PARAMETER);
  RoleTotals state = TotalsForRole(p, plan::Buffer::STATE);
  RoleTotals consts = TotalsForRole(p, plan::Buffer::CONSTANT);
  line(fmt::format("  parameters: {} ({} bytes)  state: {} ({} bytes)  constants: {} ({} bytes)",
                   params.count, params.bytes, state.count, state.bytes, consts.count,
                   consts.bytes));

  if (p.training()) {
    const plan::Training& t = p.train();
    line("");
    line("training:");
    line(fmt::format("  loss: {} ({}){}{}", t.loss(), t.loss_kind(),
                     t.logits().empty() ? "" : "  logits: " + t.logits(),
                     t.labels().empty() ? "" : "  labels: " + t.labels()));
    std::string opt = fmt::format("  optimizer: {}  lr {}", t.optimizer(), t.lr());
    if (t.optimizer() == "momentum" || t.optimizer() == "nesterov") {
      opt += fmt::format("  momentum {}", t.momentum());
    }
    if (t.optimizer() == "adam" || t.optimizer() == "adamw") {
      opt += fmt::format("  betas ({}, {})  eps {}", t.beta1(), t.beta2(), t.eps());
    }
    if (t.optimizer() != "onnx") opt += fmt::format("  weight decay {}", t.weight_decay());
    line(opt);
    if (t.optimizer() != "onnx") {
      line(fmt::format(
          "  schedule: {}{}  accumulate: {}  clip grad norm: {}", t.lr_schedule(),
          t.lr_schedule() == "cosine"
              ? fmt::format(" (warm-up {}, total {})", t.warmup_steps(), t.total_steps())
              : "",
          t.accumulate(), t.clip_grad_norm() > 0 ? fmt::format("{}", t.clip_grad_norm()) : "off"));
    }
    std::string trainable;
    for (const std::string& n : t.trainable()) trainable += (trainable.empty() ? "" : ", ") + n;
    line(fmt::format("  trainable: {} ({})", t.trainable_size(), trainable));
    if (t.frozen_size() > 0) {
      std::string frozen;
      for (const std::string& n : t.frozen()) frozen += (frozen.empty() ? "" : ", ") + n;
      line(fmt::format("  frozen: {} ({})", t.frozen_size(), frozen));
    }
    line(fmt::format("  eval step: {} of {} kernels", t.eval_kernels_size(), p.kernels_size()));
  }
  if (std::vector<BucketInfo> buckets = Buckets(p); !buckets.empty()) {
    line(fmt::format("  gradient buckets (data parallel all-reduce): {}", buckets.size()));
    for (const BucketInfo& b : buckets) {
      line(fmt::format(
          "    bucket {}: {} gradients, {} bytes, {} on the wire, starts at kernel "
          "{} of {} (after {})",
          b.id, b.gradients, b.bytes, b.wire, b.start_kernel, p.kernels_size(), b.after_node));
    }
  }
  if (p.updates_size() > 0) {
    line(fmt::format("  updates after each step: {}", p.updates_size()));
    for (const plan::Update& u : p.updates()) {
      line(fmt::format("    {} <- {}", BufName(p, u.target()), BufName(p, u.source())));
    }
  }

  line("");
  line("memory:");
  line(fmt::format("  arena: {} bytes  lower bound: {} bytes  ratio: {:.4f}", p.arena_bytes(),
                   p.arena_lower_bound(), Ratio(p)));
  line(fmt::format("  persistent: {} bytes  blob: {} bytes  alignment: {}", p.persistent_bytes(),
                   p.blob_bytes(), p.alignment()));
  LiveSet peak = LargestLiveSet(p);
  line(fmt::format("  largest live set: {} bytes at kernel {} ({} buffers)", peak.bytes,
                   peak.kernel, peak.buffers.size()));
  for (int id : peak.buffers) {
    const plan::Buffer& b = p.buffers(id);
    line(fmt::format("    {} {} {} bytes{}", b.name(), ShapeStr(b.type()), b.bytes(),
                     b.alias_of() >= 0 ? " (alias of " + BufName(p, b.alias_of()) + ")" : ""));
  }

  line("");
  line(fmt::format("buffers: {}", p.buffers_size()));
  for (const plan::Buffer& b : p.buffers()) {
    std::string extra;
    if (b.alias_of() >= 0) extra += " alias_of=" + BufName(p, b.alias_of());
    if (b.has_init()) extra += fmt::format(" init@{}", b.blob_offset());
    if (b.has_init_cast_of()) extra += " init=cast(" + BufName(p, b.init_cast_of()) + ")";
    line(fmt::format("  %{} {} {} {} {} offset={} bytes={} live=[{},{}]{}", b.id(), b.name(),
                     PlanBufferRoleName(b.role()), RegionName(b.region()), ShapeStr(b.type()),
                     b.offset(), b.bytes(), b.first(), b.last(), extra));
  }

  line("");
  int casts = 0;
  for (const plan::Kernel& k : p.kernels()) casts += (k.op() == "Cast") ? 1 : 0;
  line(fmt::format("kernels: {} ({} casts)", p.kernels_size(), casts));
  for (int i = 0; i < p.kernels_size(); ++i) {
    const plan::Kernel& k = p.kernels(i);
    std::string ins, outs;
    for (int id : k.inputs()) ins += (ins.empty() ? "" : ", ") + BufName(p, id);
    for (int id : k.outputs()) outs += (outs.empty() ? "" : ", ") + BufName(p, id);
    line(fmt::format("  [{}] {} = {}({})  kernel {} v{}", i, outs, k.op(), ins, k.name(),
                     k.version()));
    std::string nodes;
    for (const std::string& n : k.onnx_nodes()) nodes += (nodes.empty() ? "" : ", ") + n;
    line(fmt::format("      node: {}{}", k.node().empty() ? "<unnamed>" : k.node(),
                     nodes.empty() || (k.onnx_nodes_size() == 1 && k.onnx_nodes(0) == k.node())
                         ? ""
                         : "  onnx: " + nodes));
    if (!k.why().empty()) line("      why: " + k.why());
    if (k.attrs_size() > 0) {
      std::string attrs;
      for (const plan::Attribute& a : k.attrs()) {
        attrs += (attrs.empty() ? "" : " ") + a.name() + "=" + AttrValueStr(p, a);
      }
      line("      attrs: " + attrs);
    }
  }
  return o;
}

std::string InspectJson(const PlanFile& pf) {
  const plan::Plan& p = pf.plan;
  Json j;
  j["schema_version"] = kInspectSchemaVersion;
  j["plan"] = {{"format_version", p.format_version()},
               {"compiler_version", p.compiler_version()},
               {"model_name", p.model_name()},
               {"model_hash", p.model_hash()},
               {"target", p.target()},
               {"precision", p.precision()},
               {"training", p.training()},
               {"alignment", p.alignment()}};
  // The scaler's settings from where the plan stores them (plan_scaler.h); a plan without a
  // scaler, or a static one, reports zeros for what it does not have, as before.
  const StatusOr<PlanScaler> scaler = PlanScalerOf(pf);
  PlanScaler s = scaler.ok() ? *scaler : PlanScaler{};
  if (s.mode != "dynamic") s.update = cpu::UpdateScaleParams{0, 0, 0, 0, 0, 0};
  if (s.mode == "none") s.init_scale = 0;
  j["scaler"] = {{"mode", s.mode},
                 {"init_scale", static_cast<double>(s.init_scale)},
                 {"growth_factor", static_cast<double>(s.update.growth_factor)},
                 {"backoff_factor", static_cast<double>(s.update.backoff_factor)},
                 {"growth_interval", s.update.growth_interval},
                 {"min_scale", static_cast<double>(s.update.min_scale)},
                 {"max_scale", static_cast<double>(s.update.max_scale)}};
  if (p.training()) {
    const plan::Training& t = p.train();
    j["training"] = {
        {"loss", t.loss()},
        {"loss_kind", t.loss_kind()},
        {"logits", t.logits()},
        {"labels", t.labels()},
        {"optimizer", t.optimizer()},
        {"lr", static_cast<double>(t.lr())},
        {"momentum", static_cast<double>(t.momentum())},
        {"beta1", static_cast<double>(t.beta1())},
        {"beta2", static_cast<double>(t.beta2())},
        {"eps", static_cast<double>(t.eps())},
        {"weight_decay", static_cast<double>(t.weight_decay())},
        {"clip_grad_norm", static_cast<double>(t.clip_grad_norm())},
        {"accumulate", t.accumulate()},
        {"lr_schedule", t.lr_schedule()},
        {"warmup_steps", t.warmup_steps()},
        {"total_steps", t.total_steps()},
        {"trainable", std::vector<std::string>(t.trainable().begin(), t.trainable().end())},
        {"frozen", std::vector<std::string>(t.frozen().begin(), t.frozen().end())},
        {"eval_kernels", std::vector<int>(t.eval_kernels().begin(), t.eval_kernels().end())}};
  }
  {
    Json buckets = Json::array();
    for (const BucketInfo& b : Buckets(p)) {
      buckets.push_back({{"bucket", b.id},
                         {"gradients", b.gradients},
                         {"bytes", b.bytes},
                         {"dtype", b.wire},
                         {"start_kernel", b.start_kernel},
                         {"after_node", b.after_node}});
    }
    j["buckets"] = buckets;
  }
  {
    Json updates = Json::array();
    for (const plan::Update& u : p.updates()) {
      updates.push_back({{"target", u.target()}, {"source", u.source()}});
    }
    j["updates"] = updates;
  }
  auto bindings = [&p](const auto& list) {
    Json a = Json::array();
    for (const plan::Binding& b : list) {
      a.push_back({{"name", b.name()}, {"buffer", b.buffer()}});
    }
    return a;
  };
  j["inputs"] = bindings(p.inputs());
  j["outputs"] = bindings(p.outputs());
  for (auto [key, role] :
       {std::pair{"parameters", plan::Buffer::PARAMETER}, std::pair{"state", plan::Buffer::STATE},
        std::pair{"constants", plan::Buffer::CONSTANT}}) {
    RoleTotals t = TotalsForRole(p, role);
    j[key] = {{"count", t.count}, {"bytes", t.bytes}};
  }
  LiveSet peak = LargestLiveSet(p);
  Json live = Json::array();
  for (int id : peak.buffers) live.push_back(BufName(p, id));
  j["memory"] = {
      {"arena_bytes", p.arena_bytes()},
      {"lower_bound", p.arena_lower_bound()},
      {"ratio", Ratio(p)},
      {"persistent_bytes", p.persistent_bytes()},
      {"blob_bytes", p.blob_bytes()},
      {"largest_live_set", {{"kernel", peak.kernel}, {"bytes", peak.bytes}, {"buffers", live}}}};
  Json bufs = Json::array();
  for (const plan::Buffer& b : p.buffers()) {
    Json shape = Json::array();
    for (int64_t d : b.type().dims()) shape.push_back(d);
    Json jb = {{"id", b.id()},
               {"name", b.name()},
               {"role", PlanBufferRoleName(b.role())},
               {"region", RegionName(b.region())},
               {"dtype", DTypeStr(b.type().dtype())},
               {"shape", shape},
               {"offset", b.offset()},
               {"bytes", b.bytes()},
               {"first", b.first()},
               {"last", b.last()},
               {"alias_of", b.alias_of() >= 0 ? Json(BufName(p, b.alias_of())) : Json(nullptr)},
               {"has_init", b.has_init()}};
    if (b.has_init()) jb["blob_offset"] = b.blob_offset();
    if (b.has_init_cast_of()) jb["init_cast_of"] = BufName(p, b.init_cast_of());
    bufs.push_back(std::move(jb));
  }
  j["buffers"] = std::move(bufs);
  Json kernels = Json::array();
  for (int i = 0; i < p.kernels_size(); ++i) {
    const plan::Kernel& k = p.kernels(i);
    Json ins = Json::array(), outs = Json::array(), nodes = Json::array();
    for (int id : k.inputs()) ins.push_back(id < 0 ? Json(nullptr) : Json(BufName(p, id)));
    for (int id : k.outputs()) outs.push_back(BufName(p, id));
    for (const std::string& n : k.onnx_nodes()) nodes.push_back(n);
    Json attrs = Json::object();
    for (const plan::Attribute& a : k.attrs()) attrs[a.name()] = AttrValueJson(p, a);
    kernels.push_back({{"index", i},
                       {"op", k.op()},
                       {"kernel", k.name()},
                       {"signature", Signature(k.name())},
                       {"version", k.version()},
                       {"node", k.node()},
                       {"onnx_nodes", nodes},
                       {"why", k.why()},
                       {"inputs", ins},
                       {"outputs", outs},
                       {"attrs", attrs}});
  }
  j["kernels"] = std::move(kernels);
  return j.dump(2) + "\n";
}

std::string Inspect(const PlanFile& plan, InspectFormat format) {
  switch (format) {
    case InspectFormat::kJson:
      return InspectJson(plan);
    case InspectFormat::kDot:
      return InspectDot(plan);
    case InspectFormat::kText:
    default:
      return InspectText(plan);
  }
}

}  // namespace a8
