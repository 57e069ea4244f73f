#!/usr/bin/env bash
# The whole test suite: setup, build, every test. `.ci/run` calls this.
#   1. the main build (CUDA parts too when nvcc is found): unit tests, lit, ONNX node tests,
#      shapes vs onnx, GPU tests (skipped, with the reason, without a GPU);
#   2. a sanitizer build (-fsanitize=address,undefined): unit tests and the bad-input tests
#      (tests/lit/errors: malformed models, flags, plans, .npy files);
#   3. short libFuzzer runs of the importer and the plan reader (when clang is present).
# Environment: A8_JOBS (default: nproc), A8_FUZZ_SECONDS (default 30; 0 skips the fuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${A8_JOBS:-$(nproc)}
fuzz_seconds=${A8_FUZZ_SECONDS:-30}

tools/setup.sh

echo "== build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j "$jobs"

echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== sanitizer build (address, undefined): unit tests and bad-input tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DA800C_SANITIZE=ON -DA800C_CUDA=OFF \
  >/dev/null
ninja -C build-asan -j "$jobs" a8_unit_tests a800c a800c-opt a800c-run a800c-inspect models
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
build-asan/bin/a8_unit_tests --gtest_brief=1
lit -sv build-asan/tests/lit --filter 'errors/'

if [ "$fuzz_seconds" != 0 ] && command -v clang++-14 >/dev/null; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DA800C_FUZZ=ON \
    -DA800C_CUDA=OFF -DA800C_WERROR=OFF -DA800C_SANITIZE=ON \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
  ninja -C build-fuzz -j "$jobs" a8_import_fuzzer a8_plan_fuzzer
  mkdir -p build-fuzz/corpus/import build-fuzz/corpus/plan
  cp build/models/*.onnx build-fuzz/corpus/import/
  build/bin/a800c build/models/mlp.onnx --batch=2 -o build-fuzz/corpus/plan/mlp.plan
  # A training plan too: updates, updates in place, the Training message.
  build/bin/a800c build/models/mlp.onnx --batch=2 --loss=cross_entropy --accumulate=2 \
    --clip-grad-norm=1 -o build-fuzz/corpus/plan/mlp_train.plan
  for target in import plan; do
    echo "== libFuzzer: $target, ${fuzz_seconds}s"
    build-fuzz/bin/a8_${target}_fuzzer -max_total_time="$fuzz_seconds" -timeout=10 \
      -rss_limit_mb=4096 -print_final_stats=1 build-fuzz/corpus/$target 2>&1 | tail -n 6
  done
fi
echo "== all tests passed"
