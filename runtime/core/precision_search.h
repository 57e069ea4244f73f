// The search of `a800c debug-precision`: which of n low-precision nodes must run in FP32 for a
// training run to match its FP32 reference. It knows nothing of plans: a test takes a set of
// candidate indices to force into FP32 and says whether that run passes (and, when it fails,
// which candidate its diagnostics point at: the node that first produced a non-finite value).
//
// Assumption (monotone, as in delta debugging): forcing more nodes into FP32 never turns a
// passing run into a failing one, and forcing all n passes (checked, never only assumed, before
// a result is returned).
//
// The search, in three phases:
// A. Guided: while the failing run names a suspect that is not yet in the set, add it and test
//    again. An overflow names the node whose output first became Inf or NaN, so d such nodes take
//    d runs. This is what finds exactly the node that overflows in amp, where forcing any node of
//    an FP16 follow-chain (the MatMul that starts it, the Relu after it) into FP32 makes the whole
//    chain FP32 and so would fix it too (PRECISION.md: follow ops take their inputs' type).
// B. Bisection, when a failing run names no new suspect (a loss that drifts without a non-finite
//    value): with the set F found so far in FP32 and the rest R in the caller's order, a binary
//    search for the shortest prefix R[0..j) with F + R[0..j) passing; R[j-1] is then needed
//    (F + R[0..j-1) fails). It joins F, and the next round searches R[0..j-1) the same way. The
//    second round's range includes the empty prefix, so it also proves that F passes alone; later
//    rounds first test F alone and search only if it fails. With L = ceil(log2 n) and the failing
//    first run known: one culprit costs at most L + L runs, two at most 2L + 1, d >= 2 at most
//    d(L + 1) - 1. Plain ddmin has no such bound (its worst case is quadratic in n).
// C. Minimal: every member must have a failing run that held all the other members in FP32 but
//    not it (the "without" evidence); a member without one gets that run, and is dropped if the
//    run passes.
//
// Every distinct set is run once (results are cached by set).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "compiler/ir/status.h"

namespace a8 {

struct Fp32SetOutcome {
  bool passes = false;
  std::optional<int> suspect;  // a failing run's diagnosis: the candidate index it blames
};

using Fp32SetTest = std::function<StatusOr<Fp32SetOutcome>(const std::set<int>& fp32)>;

struct Fp32SearchProgress {
  const char* phase = "";  // "guided", "bisect", "minimize"
  int round = 0;
  int left = 0;   // candidates still in range
  int tests = 0;  // runs so far (not counting the first failing run)
};

struct Fp32SearchResult {
  std::vector<int> fp32;  // the minimal set, in the order found
  // Per member: a failing tested set that holds every other member but not it (the empty set is
  // the first failing run).
  std::map<int, std::set<int>> without;
  std::set<int> with;  // the tested passing set the result is (== fp32 as a set)
  int tests = 0;       // distinct runs the search made (not counting the first failing run)
};

// `n` candidates, in the order bisection tries them; `first` is the outcome of the run with none
// in FP32, which must fail. Errors: a test's error, or a run with every candidate in FP32 that
// still fails (the deviation then does not come from these nodes' precision).
StatusOr<Fp32SearchResult> FindMinimalFp32Set(
    int n, const Fp32SetOutcome& first, const Fp32SetTest& test,
    const std::function<void(const Fp32SearchProgress&)>& progress = nullptr);

}  // namespace a8
