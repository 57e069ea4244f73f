import os

import lit.formats

config.name = "a800c"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".a8ir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.a8_bin_dir), "tests", "lit")
# A8_LIT_FILTER_ERRORS=1 (the sanitizer run) keeps only the bad-input tests.
config.substitutions.append(("%a800c-opt", os.path.join(config.a8_bin_dir, "a800c-opt")))
config.substitutions.append(("%a800c", os.path.join(config.a8_bin_dir, "a800c")))
config.substitutions.append(("%models", os.path.join(config.a8_src_root, "models")))
config.substitutions.append(("FileCheck", config.filecheck))
config.environment["PATH"] = os.pathsep.join([config.a8_bin_dir, config.environment.get("PATH", "")])
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "A8_NODE_TEST_DIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
