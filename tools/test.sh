#!/usr/bin/env bash
# The whole test suite: setup, build, every test. `.ci/run` calls this.
#   1. the main build (CUDA parts too when nvcc is found): unit tests, lit, ONNX node tests,
#      shapes vs onnx, GPU tests (skipped, with the reason, without a GPU);
#   2. a sanitizer build (-fsanitize=address,undefined): unit tests and the bad-input tests
#      (tests/lit/errors: malformed models, flags, plans, .npy files);
#   3. short libFuzzer runs of every target (tools/fuzz.sh: the importer, the plan, .npy and
#      safetensors readers, the IR parser) when clang is present.
# Environment: A8_JOBS (default: nproc), A8_FUZZ_SECONDS (default 30; 0 skips the fuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${A8_JOBS:-$(nproc)}
fuzz_seconds=${A8_FUZZ_SECONDS:-30}

tools/setup.sh

# The builds are sized for a 2-core machine from a cold start (tools/configure_build.sh says how);
# the sanitizer build keeps line tables only (-g1: enough for its stack traces).
echo "== build"
tools/configure_build.sh
ninja -C build -j "$jobs"

echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== sanitizer build (address, undefined): unit tests and bad-input tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DA800C_SANITIZE=ON -DA800C_CUDA=OFF \
  -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DA800C_UNITY=ON >/dev/null
ninja -C build-asan -j "$jobs" a8_unit_tests a8_cpu_kernel_tests a800c a800c-opt a800c-run \
  a800c-inspect models
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
build-asan/bin/a8_unit_tests --gtest_brief=1
build-asan/bin/a8_cpu_kernel_tests --gtest_brief=1
lit -sv build-asan/tests/lit --filter 'errors/'

if [ "$fuzz_seconds" != 0 ] && command -v clang++-14 >/dev/null; then
  echo "== libFuzzer: every target (tools/fuzz.sh), ${fuzz_seconds}s each, concurrently"
  A8_JOBS=$jobs tools/fuzz.sh "$(awk -v s="$fuzz_seconds" 'BEGIN { print s / 60 }')"
fi
echo "== all tests passed"
