#!/usr/bin/env bash
# The whole test suite: setup, build, every test. `.ci/run` calls this.
#   1. the main build (CUDA parts too when nvcc is found): unit tests, lit, ONNX node tests,
#      shapes vs onnx, GPU tests (skipped, with the reason, without a GPU);
#   2. a sanitizer build (-fsanitize=address,undefined): unit tests and the bad-input tests
#      (tests/lit/errors: malformed models, flags, plans, .npy files);
#   3. short libFuzzer runs of every target (tools/fuzz.sh: the importer, the plan, .npy and
#      safetensors readers, the IR parser) when clang is present, from the same tree as 2.
# Environment: A8_JOBS (default: nproc), A8_FUZZ_SECONDS (default 30; 0 skips the fuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${A8_JOBS:-$(nproc)}
fuzz_seconds=${A8_FUZZ_SECONDS:-30}

tools/setup.sh

# The builds are sized for a 2-core machine from a cold start (tools/configure_build.sh says how).
echo "== build"
tools/configure_build.sh
ninja -C build -j "$jobs"

# The sanitizer tree (one clang tree for the sanitizer tests and the fuzzers:
# tools/configure_build.sh says why) builds beside ctest at the lowest priority, on the CPU time
# ctest leaves idle (about a sixth of it on 2 cores); its output goes to a log, printed on failure.
san=$(tools/configure_build.sh --sanitizers)
fuzz_targets=()
if [ "$fuzz_seconds" != 0 ] && [ "$san" = build-fuzz ]; then
  fuzz_targets=(a8_import_fuzzer a8_plan_fuzzer a8_npy_fuzzer a8_safetensors_fuzzer a8_ir_fuzzer)
fi
san_log=$san/build.log
nice -n 19 ninja -C "$san" -j "$jobs" a8_unit_tests a8_cpu_kernel_tests a800c a800c-opt \
  a800c-run a800c-inspect models "${fuzz_targets[@]}" >"$san_log" 2>&1 &
san_build=$!
trap 'kill "$san_build" 2>/dev/null || true' EXIT

echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== sanitizer build (address, undefined): unit tests and bad-input tests"
if ! wait "$san_build"; then
  tail -n 60 "$san_log"
  echo "== the sanitizer build failed (the whole log: $san_log)"
  exit 1
fi
trap - EXIT
tail -n 1 "$san_log"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
# The unit tests in two shards beside the kernel tests, each to its log (printed on failure):
# single-threaded at -O0 under the sanitizers, they took 3.5 minutes one after the other.
logs=$san/test-logs
mkdir -p "$logs"
# run_logged NAME GTEST_BINARY: runs the binary (--gtest_brief) in the background, to $logs/NAME.log
run_logged() {
  local name=$1
  shift
  "$@" --gtest_brief=1 >"$logs/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
}
pids=()
names=()
GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=0 run_logged unit-0 "$san/bin/a8_unit_tests"
GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=1 run_logged unit-1 "$san/bin/a8_unit_tests"
run_logged cpu-kernels "$san/bin/a8_cpu_kernel_tests"
failed=0
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    tail -n 3 "$logs/${names[$i]}.log"
  else
    echo "== ${names[$i]} failed ($logs/${names[$i]}.log):"
    cat "$logs/${names[$i]}.log"
    failed=1
  fi
done
[ "$failed" = 0 ]
lit -sv "$san/tests/lit" --filter 'errors/'

if [ ${#fuzz_targets[@]} != 0 ]; then
  echo "== libFuzzer: every target (tools/fuzz.sh), ${fuzz_seconds}s each, concurrently"
  A8_JOBS=$jobs tools/fuzz.sh "$(awk -v s="$fuzz_seconds" 'BEGIN { print s / 60 }')"
fi
echo "== all tests passed"
