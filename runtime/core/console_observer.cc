#include "runtime/core/console_observer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>

namespace a8 {

std::string JsonNumber(double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : "null"; }

Status ConsoleObserver::OnStep(const StepRecord& r) {
  if (metrics_ != nullptr) {
    *metrics_ << fmt::format(
        "{{\"step\": {}, {}\"loss\": {}, \"scale\": {}, \"skipped\": {}, \"lr\": {}, "
        "\"step_ms\": {:.4f}",
        r.step, rank_ >= 0 ? fmt::format("\"rank\": {}, ", rank_) : "", JsonNumber(r.loss),
        JsonNumber(r.scale), r.skipped ? "true" : "false", JsonNumber(r.lr), r.step_ms);
    if (r.has_grad_norm) *metrics_ << ", \"grad_norm\": " << JsonNumber(r.grad_norm);
    *metrics_ << "}\n";
    metrics_->flush();  // a killed run keeps the steps it finished
    if (!*metrics_) return Internal("--metrics: cannot write");
  }
  if (bar_) {
    auto now = std::chrono::steady_clock::now();
    if (r.step == total_ || now - drawn_ > std::chrono::milliseconds(100)) {
      drawn_ = now;
      double done = static_cast<double>(r.step - first_) /
                    static_cast<double>(std::max<int64_t>(total_ - first_, 1));
      int filled = static_cast<int>(done * 30);
      std::cout << fmt::format("\r\033[K[{}{}] {}/{}  loss {:.4f}  lr {:.2e}  {:.2f} ms/step",
                               std::string(filled, '#'), std::string(30 - filled, '.'), r.step,
                               total_, r.loss, r.lr, r.step_ms)
                << std::flush;
      open_line_ = true;
    }
  } else if (lines_ && (r.step % log_every_ == 0 || r.step == total_)) {
    std::cout << fmt::format("step {}/{}: loss {:.6f}, lr {:.3e}, {:.3f} ms{}\n", r.step, total_,
                             r.loss, r.lr, r.step_ms,
                             r.has_grad_norm ? fmt::format(", grad norm {:.4f}", r.grad_norm) : "");
  }
  return Status::Ok();
}

void ConsoleObserver::OnEval(const EvalResult& e) {
  EndLine();
  std::cout << fmt::format("eval at step {}: {} samples, loss {:.6f}", e.step, e.samples, e.loss);
  if (e.has_accuracy)
    std::cout << fmt::format(", accuracy {:.2f}% ({}/{})", 100 * e.accuracy, e.correct, e.samples);
  std::cout << "\n";
}

void ConsoleObserver::OnSave(const std::string& path, int64_t step) {
  EndLine();
  std::cout << fmt::format("checkpoint {} at step {}\n", path, step);
}

void ConsoleObserver::EndLine() {
  if (open_line_) std::cout << "\n";
  open_line_ = false;
}

}  // namespace a8
