// The text and JSON views of a800c-inspect --cost (cost.h).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "runtime/inspect/cost.h"
#include "runtime/inspect/inspect.h"

namespace a8 {
namespace {

using Json = nlohmann::ordered_json;

// The name a trace gives the kernel (runtime/core/trace.h): its ONNX nodes.
std::string KernelLabel(const plan::Kernel& k) {
  std::string onnx;
  for (const std::string& n : k.onnx_nodes()) onnx += (onnx.empty() ? "" : " + ") + n;
  return !onnx.empty() ? onnx : !k.node().empty() ? k.node() : k.name();
}

// Kernel indices by predicted time, costliest first (the earlier kernel wins a tie).
std::vector<int> ByCost(const PlanPrediction& p) {
  std::vector<int> order(p.kernels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return p.kernels[a].seconds > p.kernels[b].seconds; });
  return order;
}

std::string Si(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::abs(v) >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[i], unit);
}

std::string Mib(uint64_t bytes) {
  return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

std::string CostText(const PlanFile& file, const PlanPrediction& p) {
  const plan::Plan& plan = file.plan;
  const DevicePeaks& d = p.device;
  std::string out = fmt::format("cost on {}: {}\n  source: {}\n", d.name, d.description, d.source);
  out += fmt::format(
      "  peaks: tensor f16 {}, bf16 {}, tf32 {}; fp32 matmul {}; vector {}; memory {}{}; "
      "overhead {:.2f} us a kernel{}\n",
      Si(d.tensor_f16, "FLOP/s"), Si(d.tensor_bf16, "FLOP/s"), Si(d.tensor_tf32, "FLOP/s"),
      Si(d.fp32, "FLOP/s"), Si(d.vector, "FLOP/s"), Si(d.memory_bw, "B/s"),
      d.cache_bw > 0 ? fmt::format(" ({} for up to {} of bytes)", Si(d.cache_bw, "B/s"),
                                   Si(d.cache_bytes, "B"))
                     : "",
      d.overhead_s * 1e6,
      d.nvlink_bw > 0 ? fmt::format("; NVLink {}", Si(d.nvlink_bw, "B/s")) : "");
  if (!d.family_flops.empty()) {
    std::vector<std::string> parts;
    for (const auto& [family, flops] : d.family_flops)
      parts.push_back(fmt::format("{} {}", CostFamilyName(family), Si(flops, "FLOP/s")));
    out += fmt::format(
        "  measured one-thread rates: {}; {:.2f} ns an f16/bf16 element, {:.2f} ns an element "
        "moved; {:.1f} us more for a kernel split over {} threads; {:.0f}% of a core for this "
        "process now\n",
        fmt::join(parts, ", "), d.half_element_s * 1e9, d.movement_element_s * 1e9,
        d.parallel_wake_s * 1e6, d.threads, 100 * d.cpu_share);
  }
  out += fmt::format(
      "step: predicted {:.4f} ms, {} FLOP, MFU {:.1f}% of the {} peak ({}), peak memory {} "
      "(arena {} + persistent {})\n",
      p.step_s * 1e3, Si(p.flops, ""), 100 * p.mfu, p.mfu_dtype, Si(p.mfu_peak, "FLOP/s"),
      Mib(p.peak_memory), Mib(plan.arena_bytes()), Mib(plan.persistent_bytes()));
  out += fmt::format("\nkernels ({}):\n", p.kernels.size());
  out += fmt::format("  {:>4}  {:<14} {:<5} {:>10} {:>10} {:>8} {:<7} {:>10}  {}\n", "#", "family",
                     "dtype", "FLOP", "bytes", "FLOP/B", "bound", "time us", "kernel");
  for (const KernelPrediction& k : p.kernels) {
    const plan::Kernel& kern = plan.kernels(k.kernel);
    out += fmt::format("  {:>4}  {:<14} {:<5} {:>10} {:>10} {:>8.2f} {:<7} {:>10.3f}  {} ({})\n",
                       k.kernel, CostFamilyName(k.cost.family), DTypeName(k.cost.dtype),
                       Si(k.cost.flops, ""), Si(k.cost.bytes, ""), k.intensity,
                       k.compute_bound ? "compute" : "memory", k.seconds * 1e6, kern.name(),
                       KernelLabel(kern));
  }
  out += "\nthe ten costliest kernels:\n";
  const std::vector<int> order = ByCost(p);
  for (size_t i = 0; i < std::min<size_t>(10, order.size()); ++i) {
    const KernelPrediction& k = p.kernels[order[i]];
    const plan::Kernel& kern = plan.kernels(k.kernel);
    out += fmt::format("  {:>2}. kernel {:>4} {:>10.3f} us {:>5.1f}%  {} {} ({})\n", i + 1,
                       k.kernel, k.seconds * 1e6, p.step_s > 0 ? 100 * k.seconds / p.step_s : 0,
                       kern.op(), DTypeName(k.cost.dtype), KernelLabel(kern));
  }
  return out;
}

std::string CostJson(const PlanFile& file, const PlanPrediction& p) {
  const plan::Plan& plan = file.plan;
  const DevicePeaks& d = p.device;
  Json j;
  j["schema_version"] = kInspectSchemaVersion;
  j["device"] = {{"name", d.name},
                 {"description", d.description},
                 {"source", d.source},
                 {"tensor_f16_flops", d.tensor_f16},
                 {"tensor_bf16_flops", d.tensor_bf16},
                 {"tensor_tf32_flops", d.tensor_tf32},
                 {"fp32_flops", d.fp32},
                 {"vector_flops", d.vector},
                 {"memory_bytes_per_s", d.memory_bw},
                 {"cache_bytes_per_s", d.cache_bw},
                 {"cache_bytes", d.cache_bytes},
                 {"nvlink_bytes_per_s", d.nvlink_bw},
                 {"kernel_overhead_us", d.overhead_s * 1e6},
                 {"half_element_ns", d.half_element_s * 1e9},
                 {"movement_element_ns", d.movement_element_s * 1e9},
                 {"threads", d.threads},
                 {"parallel_penalty_us", d.parallel_wake_s * 1e6},
                 {"cpu_share", d.cpu_share}};
  Json families = Json::object();
  for (const auto& [family, flops] : d.family_flops)
    families[std::string(CostFamilyName(family))] = flops;
  j["device"]["family_flops"] = std::move(families);
  j["step"] = {{"predicted_ms", p.step_s * 1e3},
               {"flops", p.flops},
               {"mfu", p.mfu},
               {"mfu_peak_dtype", p.mfu_dtype},
               {"mfu_peak_flops", p.mfu_peak},
               {"peak_memory_bytes", p.peak_memory},
               {"arena_bytes", plan.arena_bytes()},
               {"persistent_bytes", plan.persistent_bytes()}};
  Json kernels = Json::array();
  for (const KernelPrediction& k : p.kernels) {
    const plan::Kernel& kern = plan.kernels(k.kernel);
    kernels.push_back({{"index", k.kernel},
                       {"name", KernelLabel(kern)},
                       {"kernel", kern.name()},
                       {"op", kern.op()},
                       {"family", std::string(CostFamilyName(k.cost.family))},
                       {"dtype", std::string(DTypeName(k.cost.dtype))},
                       {"flops", k.cost.flops},
                       {"bytes", k.cost.bytes},
                       {"intensity", k.intensity},
                       {"bound", k.compute_bound ? "compute" : "memory"},
                       {"predicted_us", k.seconds * 1e6}});
  }
  j["kernels"] = std::move(kernels);
  Json top = Json::array();
  const std::vector<int> order = ByCost(p);
  for (size_t i = 0; i < std::min<size_t>(10, order.size()); ++i)
    top.push_back(p.kernels[order[i]].kernel);
  j["top10"] = std::move(top);
  return j.dump(2) + "\n";
}

}  // namespace a8
