// Checks a run makes before its first step: every output path (output_paths.h) and the plan's
// --target against the backend (plan_target.h).
#include "runtime/core/output_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/core/plan_target.h"
#include "tests/unit/temp_path_util.h"

namespace a8 {
namespace {

namespace fs = std::filesystem;

TEST(OutputPathsTest, FilesNeedAnExistingFolderAndFoldersAWritableAncestor) {
  const fs::path dir = testing::UniqueTempPath("outputs");
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  EXPECT_TRUE(CheckOutputPaths({{"--checkpoint", (dir / "ck.safetensors").string()},
                                {"--metrics", ""},
                                {"--output-dir", (dir / "new" / "deeper").string(), true}})
                  .ok());
  struct Bad {
    OutputPath path;
    const char* message;
  };
  const Bad bad[] = {
      {{"--checkpoint", (dir / "missing" / "ck.safetensors").string()}, "no such folder"},
      {{"--metrics", dir.string()}, "is a folder"},
      {{"--metrics", (dir / "file" / "m.jsonl").string()}, "is not a folder"},
      {{"--output-dir", (dir / "file").string(), true}, "is not a folder"},
      {{"--output-dir", (dir / "file" / "out").string(), true}, "cannot be created"},
  };
  for (const Bad& b : bad) {
    Status s = CheckOutputPaths({b.path});
    ASSERT_FALSE(s.ok()) << b.path.path;
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
    EXPECT_EQ(s.message().rfind(b.path.flag + " " + b.path.path + ": ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(b.message), std::string::npos) << s.message();
  }
  fs::remove_all(dir);
}

TEST(PlanTargetTest, APlanRunsOnlyOnTheBackendOfItsTarget) {
  for (const char* backend : {"cpu", "cuda", "cuda-emu"}) {
    EXPECT_TRUE(CheckPlanTarget("any", backend).ok());
    EXPECT_TRUE(CheckPlanTarget("", backend).ok());
  }
  EXPECT_TRUE(CheckPlanTarget("cpu", "cpu").ok());
  EXPECT_TRUE(CheckPlanTarget("sm_80", "cuda").ok());
  EXPECT_TRUE(CheckPlanTarget("sm_90", "cuda-emu").ok());
  Status s = CheckPlanTarget("cpu", "cuda");
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("--target=cpu"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--backend=cpu"), std::string::npos) << s.message();
  s = CheckPlanTarget("sm_90", "cpu");
  EXPECT_NE(s.message().find("--backend=cuda"), std::string::npos) << s.message();
  EXPECT_FALSE(CheckPlanTarget("sm_70", "cuda").ok());
}

}  // namespace
}  // namespace a8
