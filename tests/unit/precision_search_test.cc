// The search of a800c debug-precision (runtime/core/precision_search.h) against oracles whose
// culprits are known: every position of one and two culprits for many n, the documented bounds
// on the number of runs, the evidence, and the guided phase.
#include "runtime/core/precision_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace a8 {
namespace {

int CeilLog2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

// A run passes iff every culprit is in FP32; with `guide`, a failing run blames the first
// culprit (in index order) still in low precision, as a diagnosed overflow does.
struct Oracle {
  std::set<int> culprits;
  bool guide = false;
  int runs = 0;

  Fp32SetOutcome Outcome(const std::set<int>& fp32) const {
    Fp32SetOutcome o;
    o.passes = std::includes(fp32.begin(), fp32.end(), culprits.begin(), culprits.end());
    if (!o.passes && guide) {
      for (int c : culprits) {
        if (fp32.count(c) == 0) {
          o.suspect = c;
          break;
        }
      }
    }
    return o;
  }
  Fp32SetTest Test() {
    return [this](const std::set<int>& fp32) -> StatusOr<Fp32SetOutcome> {
      ++runs;
      return Outcome(fp32);
    };
  }
};

void CheckResult(const Oracle& oracle, const Fp32SearchResult& r) {
  EXPECT_EQ(std::set<int>(r.fp32.begin(), r.fp32.end()), oracle.culprits);
  EXPECT_EQ(r.with, oracle.culprits);
  EXPECT_EQ(r.tests, oracle.runs);
  for (int c : r.fp32) {
    ASSERT_EQ(r.without.count(c), 1u) << c;
    const std::set<int>& without = r.without.at(c);
    EXPECT_EQ(without.count(c), 0u);
    EXPECT_FALSE(oracle.Outcome(without).passes);
    for (int other : r.fp32) {
      if (other != c) {
        EXPECT_EQ(without.count(other), 1u) << c << " " << other;
      }
    }
  }
}

TEST(PrecisionSearchTest, FindsEverySingleCulpritWithinTwoLog2NRuns) {
  for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 64, 100}) {
    for (int c = 0; c < n; ++c) {
      Oracle oracle{{c}};
      auto r = FindMinimalFp32Set(n, oracle.Outcome({}), oracle.Test());
      ASSERT_TRUE(r.ok()) << r.status().message();
      CheckResult(oracle, *r);
      // Plus the first failing run and the fp32 reference: 2 ceil(log2 n) + 2 in all.
      EXPECT_LE(r->tests, std::max(2 * CeilLog2(n), 1)) << "n " << n << " culprit " << c;
    }
  }
}

TEST(PrecisionSearchTest, FindsEveryPairOfCulpritsWithinTwoLog2NPlusOneRuns) {
  for (int n : {2, 3, 5, 8, 13, 16, 24, 33}) {
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        Oracle oracle{{a, b}};
        auto r = FindMinimalFp32Set(n, oracle.Outcome({}), oracle.Test());
        ASSERT_TRUE(r.ok()) << r.status().message();
        CheckResult(oracle, *r);
        EXPECT_LE(r->tests, 2 * CeilLog2(n) + 1) << "n " << n << " culprits " << a << "," << b;
      }
    }
  }
}

TEST(PrecisionSearchTest, FindsManyCulpritsWithinDTimesLog2NPlusOneMinusOne) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 60);
    const int d = 1 + static_cast<int>(rng() % std::min(n, 6));
    Oracle oracle;
    while (static_cast<int>(oracle.culprits.size()) < d)
      oracle.culprits.insert(static_cast<int>(rng() % n));
    auto r = FindMinimalFp32Set(n, oracle.Outcome({}), oracle.Test());
    ASSERT_TRUE(r.ok()) << r.status().message();
    CheckResult(oracle, *r);
    const int bound = d == 1 ? std::max(2 * CeilLog2(n), 1) : d * (CeilLog2(n) + 1) - 1;
    EXPECT_LE(r->tests, bound) << "n " << n << " d " << d;
  }
}

TEST(PrecisionSearchTest, GuidedRunsFindDiagnosedCulpritsInAFewRuns) {
  for (const std::set<int>& culprits : {std::set<int>{17}, std::set<int>{3, 40}}) {
    Oracle oracle{culprits, /*guide=*/true};
    auto r = FindMinimalFp32Set(50, oracle.Outcome({}), oracle.Test());
    ASSERT_TRUE(r.ok()) << r.status().message();
    CheckResult(oracle, *r);
    // One run per culprit, then one run per culprit to show each is needed (the first one's
    // evidence is the first failing run).
    EXPECT_EQ(r->tests, 2 * static_cast<int>(culprits.size()) - 1);
  }
}

TEST(PrecisionSearchTest, AWrongSuspectIsDroppedAgain) {
  // The first failing run blames node 5, which is harmless; node 9 is the culprit.
  Oracle oracle{{9}};
  Fp32SetTest test = [&](const std::set<int>& fp32) -> StatusOr<Fp32SetOutcome> {
    ++oracle.runs;
    return oracle.Outcome(fp32);
  };
  Fp32SetOutcome start = oracle.Outcome({});
  start.suspect = 5;
  auto r = FindMinimalFp32Set(12, start, test);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->fp32, std::vector<int>{9});
}

TEST(PrecisionSearchTest, ADeviationNoNodeFixesIsAnError) {
  Fp32SetTest never = [](const std::set<int>&) -> StatusOr<Fp32SetOutcome> {
    return Fp32SetOutcome{};
  };
  auto r = FindMinimalFp32Set(6, Fp32SetOutcome{}, never);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("even with 6 of the 6 low-precision nodes in FP32"),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(FindMinimalFp32Set(6, Fp32SetOutcome{true, {}}, never).ok());
}

}  // namespace
}  // namespace a8
