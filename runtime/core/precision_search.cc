#include "runtime/core/precision_search.h"

#include <algorithm>

namespace a8 {
namespace {

class Search {
 public:
  Search(int n, const Fp32SetOutcome& first, const Fp32SetTest& test,
         const std::function<void(const Fp32SearchProgress&)>& progress)
      : n_(n), test_(test), progress_(progress) {
    cache_[{}] = first;
  }

  StatusOr<Fp32SearchResult> Run() {
    std::set<int> fp32;
    std::vector<int> order;  // the members, in the order found
    Fp32SetOutcome last = cache_.at({});
    // A: follow the failing runs' suspects.
    int round = 0;
    while (!last.passes && last.suspect && *last.suspect >= 0 && *last.suspect < n_ &&
           fp32.count(*last.suspect) == 0) {
      fp32.insert(*last.suspect);
      order.push_back(*last.suspect);
      Report("guided", ++round, n_ - static_cast<int>(fp32.size()));
      A8_ASSIGN_OR_RETURN(last, Test(fp32));
    }
    // B: bisect the rest, in the caller's order.
    if (!last.passes) {
      std::vector<int> rest;
      for (int i = 0; i < n_; ++i)
        if (fp32.count(i) == 0) rest.push_back(i);
      bool empty_prefix_fails = true;  // F alone is known to fail
      for (int b_round = 1;; ++b_round) {
        Report("bisect", b_round, static_cast<int>(rest.size()));
        if (rest.empty()) break;
        // The shortest prefix j in [lo, hi] with F + rest[0..j) passing; F + rest is assumed to.
        int lo = empty_prefix_fails ? 1 : 0, hi = static_cast<int>(rest.size());
        while (lo < hi) {
          const int mid = lo + (hi - lo) / 2;
          A8_ASSIGN_OR_RETURN(Fp32SetOutcome o, Test(With(fp32, rest, mid)));
          if (o.passes) {
            hi = mid;
          } else {
            lo = mid + 1;
          }
          Report("bisect", b_round, hi - lo);
        }
        if (lo == 0) break;  // F passes alone (tested: the prefix 0 was in range)
        const int culprit = rest[lo - 1];
        fp32.insert(culprit);
        order.push_back(culprit);
        rest.resize(lo - 1);
        if (b_round == 1) {
          empty_prefix_fails = false;  // the next round's range includes F alone
          continue;
        }
        A8_ASSIGN_OR_RETURN(Fp32SetOutcome o, Test(fp32));
        if (o.passes) break;
        empty_prefix_fails = true;
      }
    }
    // The result must have passed in a real run (bisection's first round only assumed that every
    // candidate in FP32 passes).
    A8_ASSIGN_OR_RETURN(Fp32SetOutcome final_outcome, Test(fp32));
    if (!final_outcome.passes) {
      return Internal(
          "even with {} of the {} low-precision nodes in FP32 the run does not match the FP32 "
          "reference: the deviation does not come from these nodes' precision",
          fp32.size(), n_);
    }
    // C: each member needs a failing run without it that holds all the others.
    Fp32SearchResult r;
    for (int member : order) {
      std::set<int> others = fp32;
      others.erase(member);
      std::optional<std::set<int>> evidence = FailingWithout(member, others);
      if (!evidence) {
        Report("minimize", 1, static_cast<int>(fp32.size()));
        A8_ASSIGN_OR_RETURN(Fp32SetOutcome o, Test(others));
        if (o.passes) {
          fp32 = others;  // not needed after all
          continue;
        }
        evidence = others;
      }
      r.without[member] = *evidence;
    }
    for (int member : order)
      if (fp32.count(member) > 0) r.fp32.push_back(member);
    // Members dropped after another's evidence was chosen: the evidence still holds (it held
    // every other member of a larger set).
    for (auto it = r.without.begin(); it != r.without.end();) {
      it = fp32.count(it->first) > 0 ? std::next(it) : r.without.erase(it);
    }
    r.with = fp32;
    if (!cache_.at(fp32).passes) return Internal("debug-precision: the final set did not pass");
    r.tests = tests_;
    return r;
  }

 private:
  static std::set<int> With(const std::set<int>& fp32, const std::vector<int>& rest, int prefix) {
    std::set<int> s = fp32;
    s.insert(rest.begin(), rest.begin() + prefix);
    return s;
  }

  StatusOr<Fp32SetOutcome> Test(const std::set<int>& fp32) {
    auto it = cache_.find(fp32);
    if (it != cache_.end()) return it->second;
    A8_ASSIGN_OR_RETURN(Fp32SetOutcome o, test_(fp32));
    ++tests_;
    cache_[fp32] = o;
    return o;
  }

  // The smallest failing cached set that holds `others` and not `member`.
  std::optional<std::set<int>> FailingWithout(int member, const std::set<int>& others) const {
    std::optional<std::set<int>> best;
    for (const auto& [set, o] : cache_) {
      if (o.passes || set.count(member) > 0) continue;
      if (!std::includes(set.begin(), set.end(), others.begin(), others.end())) continue;
      if (!best || set.size() < best->size()) best = set;
    }
    return best;
  }

  void Report(const char* phase, int round, int left) const {
    if (progress_) progress_({phase, round, left, tests_});
  }

  const int n_;
  const Fp32SetTest& test_;
  const std::function<void(const Fp32SearchProgress&)>& progress_;
  std::map<std::set<int>, Fp32SetOutcome> cache_;
  int tests_ = 0;
};

}  // namespace

StatusOr<Fp32SearchResult> FindMinimalFp32Set(
    int n, const Fp32SetOutcome& first, const Fp32SetTest& test,
    const std::function<void(const Fp32SearchProgress&)>& progress) {
  if (n <= 0) return InvalidInput("debug-precision: no low-precision nodes to search");
  if (first.passes) return InvalidInput("debug-precision: the low-precision run already passes");
  Search s(n, first, test, progress);
  return s.Run();
}

}  // namespace a8
