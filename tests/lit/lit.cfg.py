import os
import sys

import lit.formats

config.name = "a800c"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".a8ir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.a8_bin_dir), "tests", "lit")
config.substitutions.append(("%a800c-opt", os.path.join(config.a8_bin_dir, "a800c-opt")))
config.substitutions.append(("%a800c-run", os.path.join(config.a8_bin_dir, "a800c-run")))
config.substitutions.append(("%a800c-inspect", os.path.join(config.a8_bin_dir, "a800c-inspect")))
config.substitutions.append(("%a800c", os.path.join(config.a8_bin_dir, "a800c")))
config.substitutions.append(("%models", config.a8_models))
config.substitutions.append(("FileCheck", config.filecheck))
# Shared inputs (not tests themselves), and a checker of exact exit statuses (2: bad input, 1:
# a failed run) where lit's `not` accepts any failure.
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(
    ("%expect_exit",
     f'"{sys.executable}" ' + os.path.join(config.test_source_root, "Inputs", "expect_exit.py")))
config.environment["PATH"] = os.pathsep.join([config.a8_bin_dir, config.environment.get("PATH", "")])
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "A8_NODE_TEST_DIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Tests of what a800c-run does without a GPU (the CUDA backend's error, the auto fallback).
if not os.path.exists("/dev/nvidia0") and not os.path.exists("/dev/nvidiactl"):
    config.available_features.add("no-gpu")
