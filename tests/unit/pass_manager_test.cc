// PassManagerTest: ordering, --stop-after, unknown passes, dump banners and files, timing,
// fixed-point passes and verifier failures, with small test passes added through AddPass.
#include "compiler/pass/pass_manager.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler/ir/op_table.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "passes/pipelines.h"
#include "passes/registry.h"

namespace a8 {
namespace {

// Appends its name to a shared log each time it runs; reports a change `changes` times.
class RecordingPass : public Pass {
 public:
  RecordingPass(std::string name, std::vector<std::string>* log, int changes = 0)
      : name_(std::move(name)), log_(log), changes_left_(changes) {}
  StatusOr<bool> Run(Graph&) override {
    log_->push_back(name_);
    stats()["widgets"] += 3;
    if (changes_left_ > 0) {
      --changes_left_;
      return true;
    }
    return false;
  }

 private:
  std::string name_;
  std::vector<std::string>* log_;
  int changes_left_;
};

// Adds a node with an op the op table does not know: the verifier must reject the result.
class BreakGraphPass : public Pass {
 public:
  StatusOr<bool> Run(Graph& g) override {
    Value* x = g.inputs().front();
    g.AddNode("NoSuchOp", "", {x}, {{"broken", x->type()}});
    return true;
  }
};

// Always reports a change: a fixed-point pass with this bug must not hang the compiler.
class NeverConvergesPass : public Pass {
 public:
  StatusOr<bool> Run(Graph&) override { return true; }
};

// x -> Relu -> Relu -> y with random static dims, so a dump is not trivially the same text.
std::unique_ptr<Graph> MakeGraph() {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int64_t> dim(1, 97);
  TensorType t{DType::kF32, {dim(rng), dim(rng)}};
  auto g = std::make_unique<Graph>();
  g->name = "test";
  g->opsets[""] = 17;
  const OpDef* relu = FindOp("", "Relu");
  Value* x = g->AddInput("x", t);
  Node* a = g->AddNode("Relu", "", {x}, {{"h", t}}, {}, "relu_a");
  Node* b = g->AddNode("Relu", "", {a->output(0)}, {{"y", t}}, {}, "relu_b");
  if (relu != nullptr) {
    a->set_version(relu->canonical);
    b->set_version(relu->canonical);
  }
  g->AddOutput(b->output(0));
  return g;
}

PassManager MakeManager(PassManagerOptions opts, std::vector<std::string>* log,
                        const std::vector<std::string>& names) {
  opts.registry = &RegisteredPasses();
  PassManager pm(std::move(opts));
  for (const std::string& n : names) pm.AddPass(n, std::make_unique<RecordingPass>(n, log));
  return pm;
}

TEST(PassManagerTest, RunsPassesInOrder) {
  std::vector<std::string> log;
  PassManager pm = MakeManager({}, &log, {"c", "a", "b", "a"});
  auto g = MakeGraph();
  ASSERT_TRUE(pm.Run(*g).ok());
  EXPECT_EQ(log, (std::vector<std::string>{"c", "a", "b", "a"}));
  EXPECT_EQ(pm.pass_names(), (std::vector<std::string>{"c", "a", "b", "a"}));
}

TEST(PassManagerTest, StopAfterRunsUpToAndIncludingThePass) {
  std::vector<std::string> log;
  PassManagerOptions opts;
  opts.stop_after = "b";
  PassManager pm = MakeManager(opts, &log, {"a", "b", "c"});
  auto g = MakeGraph();
  ASSERT_TRUE(pm.Run(*g).ok());
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b"}));
}

TEST(PassManagerTest, StopAfterAnUnknownPassIsAnError) {
  std::vector<std::string> log;
  PassManagerOptions opts;
  opts.stop_after = "no-such-pass";
  PassManager pm = MakeManager(opts, &log, {"a"});
  auto g = MakeGraph();
  Status s = pm.Run(*g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("--stop-after=no-such-pass: unknown pass"), std::string::npos)
      << s.message();
  EXPECT_TRUE(log.empty());
}

TEST(PassManagerTest, StopAfterAPassNotInThePipelineIsAnError) {
  ASSERT_NE(FindPass("dce"), nullptr);
  std::vector<std::string> log;
  PassManagerOptions opts;
  opts.stop_after = "dce";
  PassManager pm = MakeManager(opts, &log, {"a", "b"});
  auto g = MakeGraph();
  Status s = pm.Run(*g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is not in the pipeline (a,b)"), std::string::npos) << s.message();
  EXPECT_TRUE(log.empty());
}

TEST(PassManagerTest, WithoutARegistryNoPassIsKnownByName) {
  // The manager sits below the passes: it knows only the registry its caller hands it.
  PassManager pm({});
  Status s = pm.AddPasses({"dce"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("unknown pass 'dce' (known: none)"), std::string::npos) << s.message();
}

TEST(PassManagerTest, UnknownPassNameIsAnErrorListingTheKnownOnes) {
  PassManagerOptions opts;
  opts.registry = &RegisteredPasses();
  PassManager pm(opts);
  Status s = pm.AddPasses({"shape-inference", "no-such-pass"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.ExitCode(), 2);
  EXPECT_NE(s.message().find("unknown pass 'no-such-pass'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("canonicalize"), std::string::npos) << s.message();
  // Nothing was added: a bad list leaves the manager as it was.
  EXPECT_TRUE(pm.pass_names().empty());
}

TEST(PassManagerTest, UnknownPrintIrAfterNameIsAnError) {
  std::vector<std::string> log;
  PassManagerOptions opts;
  opts.print_after = {"bogus"};
  PassManager pm = MakeManager(opts, &log, {"a"});
  auto g = MakeGraph();
  Status s = pm.Run(*g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--print-ir-after=bogus"), std::string::npos) << s.message();
}

TEST(PassManagerTest, PrintAfterAllPrintsABannerAndTheIrAfterEveryPass) {
  std::vector<std::string> log;
  std::ostringstream dump;
  PassManagerOptions opts;
  opts.print_after_all = true;
  opts.print_before = {"b"};
  opts.dump_stream = &dump;
  PassManager pm = MakeManager(opts, &log, {"a", "b"});
  auto g = MakeGraph();
  ASSERT_TRUE(pm.Run(*g).ok());
  std::string text = dump.str();
  std::string ir = PrintIrToString(*g);
  std::string expected = "// -----// IR Dump After a //----- //\n" + ir +
                         "// -----// IR Dump Before b //----- //\n" + ir +
                         "// -----// IR Dump After b //----- //\n" + ir;
  EXPECT_EQ(text, expected);
}

TEST(PassManagerTest, PrintAfterSelectedPassesOnly) {
  std::vector<std::string> log;
  std::ostringstream dump;
  PassManagerOptions opts;
  opts.print_after = {"b"};
  opts.dump_stream = &dump;
  PassManager pm = MakeManager(opts, &log, {"a", "b", "c"});
  auto g = MakeGraph();
  ASSERT_TRUE(pm.Run(*g).ok());
  EXPECT_EQ(dump.str().find("IR Dump After a"), std::string::npos);
  EXPECT_NE(dump.str().find("// -----// IR Dump After b //----- //\n"), std::string::npos);
  EXPECT_EQ(dump.str().find("IR Dump After c"), std::string::npos);
}

TEST(PassManagerTest, VerifierFailureNamesThePass) {
  PassManagerOptions opts;
  opts.verify_each = true;
  std::vector<std::string> log;
  PassManager pm = MakeManager(opts, &log, {"a"});
  pm.AddPass("break-graph", std::make_unique<BreakGraphPass>());
  pm.AddPass("after", std::make_unique<RecordingPass>("after", &log));
  auto g = MakeGraph();
  Status s = pm.Run(*g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.ExitCode(), 1);
  EXPECT_EQ(s.message().rfind("after pass 'break-graph': ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("NoSuchOp"), std::string::npos) << s.message();
  EXPECT_EQ(log, (std::vector<std::string>{"a"}));  // nothing runs after the failure
}

TEST(PassManagerTest, WithoutVerifyEachABrokenGraphIsNotReported) {
  PassManager pm({});
  pm.AddPass("break-graph", std::make_unique<BreakGraphPass>());
  auto g = MakeGraph();
  EXPECT_TRUE(pm.Run(*g).ok());
}

// Options that report --pass-timing to `timing`.
PassManagerOptions TimingOptions(std::ostringstream* timing) {
  PassManagerOptions opts;
  opts.pass_timing = true;
  opts.timing_stream = timing;
  return opts;
}

TEST(PassManagerTest, FixedPointPassRunsUntilNoChange) {
  std::vector<std::string> log;
  std::ostringstream timing;
  PassManager pm(TimingOptions(&timing));
  pm.AddPass("fp", std::make_unique<RecordingPass>("fp", &log, 4), PassRepeat::kFixedPoint);
  pm.AddPass("once", std::make_unique<RecordingPass>("once", &log, 4), PassRepeat::kOnce);
  auto g = MakeGraph();
  ASSERT_TRUE(pm.Run(*g).ok());
  EXPECT_EQ(log, (std::vector<std::string>{"fp", "fp", "fp", "fp", "fp", "once"}));
  // The counters accumulate over the iterations and are reported with the iteration count.
  EXPECT_NE(timing.str().find("iterations=5 widgets=15"), std::string::npos) << timing.str();
}

TEST(PassManagerTest, FixedPointPassThatNeverConvergesIsAnInternalError) {
  PassManager pm({});
  pm.AddPass("spin", std::make_unique<NeverConvergesPass>(), PassRepeat::kFixedPoint);
  auto g = MakeGraph();
  Status s = pm.Run(*g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("'spin' did not reach a fixed point"), std::string::npos);
}

TEST(PassManagerTest, PassTimingReportsEveryPassAndTheTotal) {
  std::vector<std::string> log;
  std::ostringstream timing;
  PassManager pm = MakeManager(TimingOptions(&timing), &log, {"first-pass", "second-pass"});
  auto g = MakeGraph();
  ASSERT_TRUE(pm.Run(*g).ok());
  std::string t = timing.str();
  size_t first = t.find("first-pass");
  size_t second = t.find("second-pass");
  size_t total = t.find("total");
  ASSERT_NE(first, std::string::npos) << t;
  ASSERT_NE(second, std::string::npos) << t;
  ASSERT_NE(total, std::string::npos) << t;
  EXPECT_LT(first, second);
  EXPECT_LT(second, total);
  EXPECT_NE(t.find("widgets=3"), std::string::npos) << t;
  EXPECT_NE(t.find("100.0%"), std::string::npos) << t;
}

TEST(PassManagerTest, DumpDirWritesOneParsableFilePerPass) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("a8_pm_test_" + std::to_string(std::random_device{}())) / "nested";
  std::vector<std::string> log;
  PassManagerOptions opts;
  opts.dump_dir = dir.string();
  opts.stop_after = "b";
  PassManager pm = MakeManager(opts, &log, {"a", "b", "c"});
  auto g = MakeGraph();
  ASSERT_TRUE(pm.Run(*g).ok());
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"00-input.a8ir", "01-a.a8ir", "02-b.a8ir"}));
  for (const std::string& f : files) {
    std::ifstream in(dir / f);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = ParseIr(text.str(), f);
    ASSERT_TRUE(parsed.ok()) << f << ": " << parsed.status().message();
    EXPECT_EQ(PrintIrToString(**parsed), PrintIrToString(*g));
  }
  std::filesystem::remove_all(dir.parent_path());
}

TEST(PassManagerTest, RegistryHasUniqueNamedPassesAndPipelinesUseThem) {
  std::set<std::string> names;
  for (const PassInfo& info : RegisteredPasses()) {
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate pass " << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
    ASSERT_TRUE(info.create) << info.name;
    EXPECT_NE(info.create(), nullptr) << info.name;
    EXPECT_EQ(FindPass(info.name), &info);
  }
  for (const char* expected :
       {"shape-inference", "canonicalize", "dce", "cse", "expand-gradient", "fold-batchnorm",
        "fuse-gelu", "build-training", "assign-precision", "pin-fp32", "insert-casts", "fold-casts",
        "loss-scaling", "bucket-gradients", "fuse-optimizer"}) {
    EXPECT_EQ(names.count(expected), 1u) << expected;
  }
  EXPECT_EQ(FindPass("no-such-pass"), nullptr);
  for (const PipelineInfo& p : Pipelines()) {
    for (const std::string& n : p.passes) EXPECT_EQ(names.count(n), 1u) << p.name << ": " << n;
  }
  EXPECT_EQ(DefaultCompilePipeline(),
            (std::vector<std::string>{"shape-inference", "expand-gradient", "canonicalize",
                                      "fold-batchnorm", "fuse-gelu", "build-training",
                                      "assign-precision", "pin-fp32", "insert-casts", "fold-casts",
                                      "loss-scaling", "fuse", "bucket-gradients",
                                      "fuse-optimizer"}));
}

}  // namespace
}  // namespace a8
