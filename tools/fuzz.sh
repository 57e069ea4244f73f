#!/usr/bin/env bash
# Builds and runs a800c's libFuzzer targets in build-fuzz (tools/configure_build.sh --sanitizers:
# clang-14, CUDA off, -O0, address + undefined sanitizers, the importer's, plan's and readers'
# libraries instrumented for coverage):
#   import       the ONNX importer, shape inference and the verifier  (tests/fuzz/import_fuzzer.cc)
#   plan         the plan reader and validator, and the writer's round trip
#   npy          the .npy reader and the writer's round trip
#   safetensors  the safetensors reader (checkpoints), its checksums and the writer's round trip
#   ir           the IR text parser, the verifier and the printer's round trip
#
#   tools/fuzz.sh [MINUTES [TARGET...]]     run the targets (default: all) concurrently for MINUTES
#                                           each (default 1; fractions allowed: 0.5)
#   tools/fuzz.sh --repro TARGET FILE...    run a target once on crash files, to reproduce them
#
# Each target starts from its committed seeds (tests/fuzz/corpus/TARGET) and dictionary
# (tests/fuzz/TARGET.dict) and grows its corpus under build-fuzz/corpus/TARGET, kept between runs.
# Logs go to build-fuzz/fuzz-logs/TARGET.log, crash/leak/timeout files to
# build-fuzz/findings/TARGET/ (a target stops at its first). The summary lists, per target:
# seconds, executions, coverage edges when the corpus was loaded and at the end, corpus size and
# findings. Exit 1 when any target found something. Environment: A8_JOBS (build jobs, default
# nproc), A8_FUZZ_NICE (default 0), A8_FUZZ_LOGS (the log folder, default build-fuzz/fuzz-logs).
set -euo pipefail
cd "$(dirname "$0")/.."
all_targets=(import plan npy safetensors ir)
jobs=${A8_JOBS:-$(nproc)}
nice_level=${A8_FUZZ_NICE:-0}
out=build-fuzz
logs=${A8_FUZZ_LOGS:-$out/fuzz-logs}

configure_and_build() {
  # The one sanitizer tree (tools/configure_build.sh --sanitizers): build-fuzz when clang-14 is
  # there; tools/test.sh builds its unit tests in it too.
  local dir
  dir=$(tools/configure_build.sh --sanitizers)
  if [ "$dir" != "$out" ]; then
    echo "fuzz.sh: error: libFuzzer needs clang++-14 (tools/setup.sh installs it)" >&2
    exit 2
  fi
  ninja -C "$out" -j "$jobs" $(printf 'a8_%s_fuzzer ' "$@")
}

fuzzer_flags() {  # TARGET
  echo -dict=tests/fuzz/$1.dict -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048
}

if [ "${1:-}" = "--repro" ]; then
  [ $# -ge 3 ] || { echo "usage: tools/fuzz.sh --repro TARGET FILE..." >&2; exit 2; }
  target=$2
  shift 2
  configure_and_build "$target"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1} UBSAN_OPTIONS=print_stacktrace=1
  exec "$out/bin/a8_${target}_fuzzer" $(fuzzer_flags "$target") -runs=1 "$@"
fi

minutes=${1:-1}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
seconds=$(awk -v m="$minutes" 'BEGIN { s = int(m * 60 + 0.5); print (s < 1 ? 1 : s) }')
for t in "${targets[@]}"; do
  [ -f "tests/fuzz/${t}_fuzzer.cc" ] || { echo "fuzz.sh: error: unknown target '$t'" >&2; exit 2; }
done

configure_and_build "${targets[@]}"
mkdir -p "$logs"
touch "$logs/.started"  # findings newer than this are this run's
pids=()
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t" "$out/findings/$t"
  # The committed seeds join the grown corpus (libFuzzer reads both, writes to the first).
  nice -n "$nice_level" "$out/bin/a8_${t}_fuzzer" $(fuzzer_flags "$t") \
    -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/findings/$t/" \
    "$out/corpus/$t" "tests/fuzz/corpus/$t" >"$logs/$t.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

found=0
printf '%-12s %8s %12s %10s %8s %8s %9s\n' target seconds executions cov_start cov_end corpus findings
for t in "${targets[@]}"; do
  log="$logs/$t.log"
  start=$(grep -m1 -o 'INITED cov: [0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  end=$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | grep -o '[0-9]*$' || echo '?')
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  corpus=$(find "$out/corpus/$t" -type f | wc -l)
  findings=$(find "$out/findings/$t" -type f -newer "$logs/.started" | wc -l)
  [ "$findings" = 0 ] || found=1
  printf '%-12s %8s %12s %10s %8s %8s %9s\n' "$t" "$seconds" "$execs" "$start" "$end" "$corpus" \
    "$findings"
done
if [ "$found" != 0 ]; then
  echo "fuzz.sh: findings under $out/findings (logs: $logs); reproduce one with" \
    "tools/fuzz.sh --repro TARGET FILE" >&2
  for t in "${targets[@]}"; do grep -h -A12 '==ERROR\|runtime error\|deadly signal' \
    "$logs/$t.log" | head -n 30 >&2 || true; done
  exit 1
fi
