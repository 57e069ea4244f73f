#!/usr/bin/env bash
# The check of a lent GPU machine (issue 6, "GPU check and benchmark"), in two halves:
#
#   tools/gpu-check.sh bundle   HERE, on the build machine: a Release CUDA build in build-gpu,
#                               then gpu-bundle/ with everything the GPU machine lacks (the
#                               stripped binaries, the example models, the test and benchmark
#                               scripts, and the shared libraries of our system packages that
#                               ldd names: onnx, protobuf, fmt, OpenBLAS, Open MPI, ...); bin/
#                               and lib/ travel packed (payload.tar.xz), `run` unpacks them.
#   tools/gpu-check.sh run      THERE, from the repository root, with gpu-bundle carried
#                               (device tool: run, carry ["gpu-bundle"]); under 10 minutes:
#                                 a. a8_gpu_tests (the ctest label gpu binary)
#                                 b. tests/e2e/backend_parity.py --backend cuda --steps 20
#                                 c. a one-rank torchrun-style a800c-run and the NCCL smoke
#                                 d. tools/bench/gpu_bench.py (a800c vs PyTorch; with
#                                    --profile amp unless A8_BENCH_ARGS says otherwise: the
#                                    op split of a traced amp step, $OUT/gpu_profile.md)
#                                 e. tools/bench/cost_model_check.py: a800c-inspect --cost for
#                                    the GPU nvidia-smi names against the kernel times of
#                                    a800c-run --trace (CUDA events), per kernel and per step
#                               Logs to $OUT/gpu-check.log, a summary to stdout; the benchmark
#                               to $OUT/gpu_bench.json and $OUT/gpu_bench.md.
#
# The GPU machine has CUDA 13 (/usr/local/cuda), python3 with torch, torchvision, onnx, numpy,
# safetensors and the pip packages nvidia-cudnn-cu13 / nvidia-nccl-cu13 / nvidia-cublas, but
# none of our system libraries and no package manager: hence the bundle.
# Environment (bundle): A8_JOBS (default 2), A8_GPU_BUILD_TYPE (default Release).
# Environment (run): OUT (default ./gpu-check-out), A8_BENCH_BUDGET_S (default 360, cut to what
# is left of the 10 minutes), A8_SKIP (comma list of steps to skip: tests,parity,smoke,bench,
# cost), A8_BENCH_ARGS (gpu_bench.py's arguments instead of the default "--profile amp", e.g.
# "--models bert --precisions amp --systems a800c --profile amp"). The first H200 run took 51 s
# for steps a, b (cut short), c and e and 261 s for d without the profile (two traced runs more).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

BUNDLE=gpu-bundle
BUILD=build-gpu
# What the bundle carries goes through the device tool, which takes 64 MiB in all.
LIMIT_BYTES=$((64 * 1024 * 1024))

die() {
  echo "gpu-check: $*" >&2
  exit 1
}

# ---- bundle ------------------------------------------------------------------------------------

# Libraries the GPU machine has itself (the C runtime, the C++ runtime of its compiler) or gets
# from CUDA and its pip packages (the driver, cudart, cuBLAS, cuDNN, NCCL): never bundled. The
# rest of what ldd names is ours to bring.
system_lib() {
  case "$1" in
    linux-vdso.so* | ld-linux*.so* | libc.so* | libm.so* | libdl.so* | libpthread.so* | \
      librt.so* | libutil.so* | libresolv.so* | libstdc++.so* | libgcc_s.so* | libcuda.so* | \
      libcudart.so* | libcublas*.so* | libcudnn*.so* | libnccl*.so* | libnvidia*.so* | \
      libnvrtc*.so* | libnvJitLink*.so*)
      return 0 ;;
  esac
  return 1
}

bundle() {
  local jobs=${A8_JOBS:-2} type=${A8_GPU_BUILD_TYPE:-Release}
  echo "== configure $BUILD ($type, CUDA)"
  # A800C_WERROR=OFF: the host compiler's -O3 warnings (GCC 12's false -Wrestrict in std::string
  # concatenation) must not stop a build whose job is to run on the GPU; CI is the warnings gate.
  # A8_GPU_BUILD_TYPE=RelWithDebInfo reuses the ccache of the usual builds (much faster here;
  # the binaries are stripped either way).
  cmake -S . -B "$BUILD" -G Ninja -DA800C_CUDA=ON -DCMAKE_BUILD_TYPE="$type" \
    -DA800C_WERROR=OFF >/dev/null || die "cmake failed"
  echo "== build (ninja -j $jobs)"
  ninja -C "$BUILD" -j "$jobs" a800c a800c-run a800c-inspect a8_gpu_tests models ||
    die "the CUDA build failed"

  echo "== assemble $BUNDLE/"
  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/models"
  local b
  for b in a800c a800c-run a800c-inspect a8_gpu_tests; do
    cp "$BUILD/bin/$b" "$BUNDLE/bin/$b"
    strip --strip-unneeded "$BUNDLE/bin/$b"
  done
  # The example models the parity test and the smoke run use (bert12 is the compile benchmark's).
  local m
  for m in mlp cnn bert; do
    cp "$BUILD/models/$m.onnx" "$BUNDLE/models/" || die "$BUILD/models/$m.onnx is missing"
  done
  cp tests/e2e/backend_parity.py tools/bench/gpu_bench.py tools/bench/gpu_bench_common.py \
    tools/bench/gpu_bench_torch.py tools/bench/cost_model_check.py \
    tools/gpu-check.sh "$BUNDLE/"

  # Every library the binaries load that the GPU machine lacks, found by ldd (which follows the
  # dependencies of dependencies: libmpi's open-rte, open-pal, hwloc, libevent, ...).
  local path name
  while read -r name path; do
    system_lib "$name" && continue
    [ -f "$path" ] || die "ldd names $name but not where it is"
    # -L: Debian's libopenblas.so.0 is an alternatives symlink; bring the file itself.
    cp -L "$path" "$BUNDLE/lib/$name"
    strip --strip-unneeded "$BUNDLE/lib/$name" 2>/dev/null || true
  done < <(for b in "$BUNDLE"/bin/*; do ldd "$b"; done |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
  for b in "$BUNDLE"/bin/*; do
    if ldd "$b" | grep -q "not found"; then
      ldd "$b" | grep "not found" >&2
      die "$b: a library was not found here"
    fi
  done

  echo "== $BUNDLE/ contents (before packing)"
  (cd "$BUNDLE" && find . -type f -printf '%s\t%p\n' | sort -rn |
    awk -F'\t' '{printf "%10.2f MiB  %s\n", $1 / 1048576, $2}')
  # Unpacked, OpenBLAS (every CPU's kernels in one .so, ~35 MiB) and a800c-run (the CUDA kernels
  # for sm_80 and sm_90, ~35 MiB) alone pass 64 MiB; xz packs bin/ and lib/ to ~13 MiB. `run`
  # unpacks them there with python3's tarfile (no xz binary needed).
  echo "== pack bin/ and lib/ into $BUNDLE/payload.tar.xz"
  tar -C "$BUNDLE" -cf - bin lib | xz -9 -T "$jobs" >"$BUNDLE/payload.tar.xz" || die "xz failed"
  rm -rf "${BUNDLE:?}/bin" "${BUNDLE:?}/lib"
  local total
  total=$(du -sb "$BUNDLE" | cut -f1)
  awk -v t="$total" -v b="$BUNDLE" \
    'BEGIN {printf "gpu-check: %s/ is %.2f MiB (%d bytes; the device tool carries 64 MiB)\n", b,
            t / 1048576, t}'
  if [ "$total" -gt "$LIMIT_BYTES" ]; then
    die "$BUNDLE/ is over 64 MiB: the device tool cannot carry it"
  fi
  echo "device tool: run with carry [\"$BUNDLE\"] and command: tools/gpu-check.sh run"
}

# Unpacks gpu-bundle/payload.tar.xz (bin/, lib/) where `bundle` left it packed.
unpack() {
  [ -f "$BUNDLE/payload.tar.xz" ] || return 0
  [ -x "$BUNDLE/bin/a800c-run" ] && [ "$BUNDLE/bin/a800c-run" -nt "$BUNDLE/payload.tar.xz" ] &&
    return 0
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$BUNDLE/payload.tar.xz" "$BUNDLE" || die "cannot unpack $BUNDLE/payload.tar.xz"
  touch "$BUNDLE/bin/a800c-run"
}

# ---- run ---------------------------------------------------------------------------------------

# The lib folders of the pip packages nvidia-cudnn-cu13, nvidia-nccl-cu13 and nvidia-cublas
# (under site-packages/nvidia/...), as a colon list.
pip_cuda_libs() {
  python3 - <<'EOF' 2>/dev/null
import glob, importlib.util, os
dirs = []
spec = importlib.util.find_spec("nvidia")
for base in (spec.submodule_search_locations if spec else []):
    for so in sorted(glob.glob(os.path.join(base, "**", "lib*.so*"), recursive=True)):
        if os.path.basename(so).startswith(("libcudnn", "libnccl", "libcublas")):
            d = os.path.dirname(so)
            if d not in dirs:
                dirs.append(d)
print(":".join(dirs))
EOF
}

LOG=""
declare -a SUMMARY=()

log() { echo "$*" >>"$LOG"; }

# step NAME TIMEOUT_S COMMAND...: runs COMMAND under a timeout, its output to the log, and
# notes the outcome for the summary.
step() {
  local name=$1 limit=$2
  shift 2
  local t0 rc
  t0=$(date +%s)
  log ""
  log "==== $name (limit ${limit}s): $*"
  echo "-- $name ..."
  timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
  rc=$?
  local dt=$(($(date +%s) - t0))
  local verdict=ok
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    verdict="TIMED OUT after ${limit}s"
  elif [ "$rc" = 77 ]; then
    verdict="skipped (exit 77)"
  elif [ "$rc" != 0 ]; then
    verdict="FAILED (exit $rc)"
  fi
  log "==== $name: $verdict in ${dt}s"
  SUMMARY+=("$(printf '%-28s %-22s %4ss' "$name" "$verdict" "$dt")")
  echo "   $name: $verdict (${dt}s)"
  return "$rc"
}

skipped() { [[ ",${A8_SKIP:-}," == *",$1,"* ]]; }

run() {
  unpack
  [ -x "$BUNDLE/bin/a800c-run" ] || die "no $BUNDLE/bin/a800c-run: run 'tools/gpu-check.sh bundle' \
here first and carry $BUNDLE"
  OUT=${OUT:-$PWD/gpu-check-out}
  mkdir -p "$OUT"
  LOG=$OUT/gpu-check.log
  : >"$LOG"
  local started
  started=$(date +%s)

  # Only the a800c processes get this path: PyTorch (the benchmark's other side) loads its own
  # CUDA libraries, which /usr/local/cuda/lib64 first in the path could replace with others.
  local pip_libs a8_ld
  pip_libs=$(pip_cuda_libs)
  a8_ld="$PWD/$BUNDLE/lib:/usr/local/cuda/lib64${pip_libs:+:$pip_libs}"
  a8_ld="$a8_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local bin=$PWD/$BUNDLE/bin

  {
    echo "gpu-check run, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(hostname)"
    echo "LD_LIBRARY_PATH for a800c: $a8_ld"
    echo "---- nvidia-smi"
    nvidia-smi 2>&1 || echo "(nvidia-smi failed)"
    echo "---- versions"
    nvcc --version 2>&1 | tail -1 || /usr/local/cuda/bin/nvcc --version 2>&1 | tail -1
    python3 -c 'import sys, torch
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda",
      torch.version.cuda)' 2>&1
    LD_LIBRARY_PATH=$a8_ld "$bin/a800c-run" --version 2>&1
    echo "---- ldd a800c-run (log only)"
    LD_LIBRARY_PATH=$a8_ld ldd "$bin/a800c-run" 2>&1
  } 2>&1 | tee -a "$LOG" | sed '/^---- ldd/,$d'

  if ! skipped tests; then
    # NcclTimeoutTest aborts a communicator: a process of its own (tests/gpu/nccl_test.cc).
    step "a. a8_gpu_tests" 150 env LD_LIBRARY_PATH="$a8_ld" "$bin/a8_gpu_tests" \
      --gtest_filter='-NcclTimeoutTest.*'
    step "a. NcclTimeoutTest" 60 env LD_LIBRARY_PATH="$a8_ld" "$bin/a8_gpu_tests" \
      --gtest_filter='NcclTimeoutTest.*'
    # gtest's closing counts of both processes.
    local counts='^\[(=+\] [0-9]+ tests? from .* ran|  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test)'
    grep -E "$counts" "$LOG" | sed 's/^/   /'
    grep -E '^\[  FAILED  \] [A-Za-z]' "$LOG" | sort -u | sed 's/^/   /'

  fi

  if ! skipped parity; then
    # PYTHONUNBUFFERED: a timed-out step still leaves what it printed in the log.
    step "b. backend_parity cuda" 200 env LD_LIBRARY_PATH="$a8_ld" PYTHONUNBUFFERED=1 \
      python3 "$BUNDLE/backend_parity.py" --backend cuda --steps 20 --bin "$bin" \
      --models "$BUNDLE/models"
  fi

  if ! skipped smoke; then
    # One rank under the torchrun-style variables: a800c-run's CreateCommunicator returns no
    # communicator for WORLD_SIZE=1 (runtime/comm/comm_tcp.cc), so NCCL is never created on one
    # rank; this checks the launch path and a CUDA training run, and the NCCL tests below (a
    # one-rank NCCL world, the bootstrap, the buckets) are the NCCL smoke.
    local smoke=$OUT/smoke
    mkdir -p "$smoke"
    step "c. compile mlp" 60 env LD_LIBRARY_PATH="$a8_ld" "$bin/a800c" \
      "$BUNDLE/models/mlp.onnx" -o "$smoke/mlp.plan" --batch=32 --loss=cross_entropy \
      --optimizer=adamw --precision=amp
    step "c. a800c-run 1 rank torchrun" 60 env LD_LIBRARY_PATH="$a8_ld" RANK=0 WORLD_SIZE=1 \
      LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 \
      "$bin/a800c-run" "$smoke/mlp.plan" --backend=cuda --synthetic --steps=50 \
      --metrics="$smoke/mlp.jsonl"
    step "c. NCCL smoke (a8_gpu_tests)" 90 env LD_LIBRARY_PATH="$a8_ld" "$bin/a8_gpu_tests" \
      --gtest_filter='Nccl*:-NcclTimeoutTest.*'
    rm -rf "$smoke"
  fi

  if ! skipped cost; then
    # The cost model of the GPU this is (a800c-inspect --cost=h200 ...) against CUDA-event
    # kernel times of traced steps; before the benchmark, which takes what time is left.
    step "e. cost model vs trace" 150 env LD_LIBRARY_PATH="$a8_ld" PYTHONUNBUFFERED=1 \
      python3 "$BUNDLE/cost_model_check.py" --device auto --backend cuda --models mlp,cnn,bert \
      --repeats 1 --steps 10 --warmup 3 --batch 32 --bin "$bin" --models-dir "$BUNDLE/models" \
      --json "$OUT/cost_model_check.json"
    grep -A4 "^summary:" "$LOG" | sed 's/^/   /'
  fi

  if ! skipped bench; then
    local budget=${A8_BENCH_BUDGET_S:-360}
    # What is left of the 10 minutes, less a margin for the summary.
    local left=$((570 - ($(date +%s) - started)))
    [ "$left" -lt "$budget" ] && budget=$left
    if [ "$budget" -lt 60 ]; then
      SUMMARY+=("d. gpu_bench                  skipped: ${budget}s left of the 10 minutes")
    else
      step "d. gpu_bench" $((budget + 45)) env PYTHONUNBUFFERED=1 python3 "$BUNDLE/gpu_bench.py" \
        --bin "$bin" --a8-ld-path "$a8_ld" --out "$OUT" --budget-s "$budget" \
        ${A8_BENCH_ARGS:---profile amp}
      [ -f "$OUT/gpu_bench.md" ] && cat "$OUT/gpu_bench.md"
      [ -f "$OUT/gpu_profile.md" ] && cat "$OUT/gpu_profile.md"
    fi
  fi

  echo ""
  echo "== gpu-check summary ($(($(date +%s) - started))s; log $LOG)"
  printf '%s\n' "${SUMMARY[@]}" | tee -a "$LOG"
  local failed
  failed=$(printf '%s\n' "${SUMMARY[@]}" | grep -c -E "FAILED|TIMED OUT")
  [ "$failed" = 0 ]
}

case "${1:-}" in
  bundle) bundle ;;
  run) run ;;
  *)
    echo "usage: tools/gpu-check.sh bundle|run   (see the comment at the top)" >&2
    exit 2
    ;;
esac
