#!/usr/bin/env bash
# Data parallel on the CPU backend (issue 7), two measurements in one run:
#  1. the MPI communicator's all-reduce bus bandwidth over message sizes (nccl-tests' busbw =
#     algbw * 2(n-1)/n), on 2 and 4 ranks (build/bin/a8-allreduce-bench);
#  2. the training-step time of the BERT-style model (AdamW, fp32, batch 8 a rank, synthetic data)
#     on 1, 2 and 4 ranks, with overlap on (--bucket-mb=0.05: several buckets, each all-reduced
#     while backward goes on) and off (--bucket-mb=1000: one bucket, after the whole backward).
#
#   tools/bench/dist_bench.sh [BUILD=build] [STEPS=40]
#
# Ranks are processes with OMP_NUM_THREADS=1 each; more ranks than cores oversubscribe
# (mpirun --oversubscribe), so on a small machine the step time measures contention too.
set -euo pipefail
build=${1:-build}
steps=${2:-40}
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
mpi() { OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpirun --oversubscribe "${root[@]}" "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== all-reduce bus bandwidth (MPI, f32, in place, pack/unpack of the bucket included)"
for n in 2 4; do
  mpi -np "$n" "$build/bin/a8-allreduce-bench" --max-bytes $((16 << 20)) --iters 10
done

echo
echo "== BERT-style training step, fp32, batch 8 a rank, median of $steps steps (rank 0's figure)"
printf "%-6s %-12s %s\n" ranks overlap "median ms/step"
for overlap in on off; do
  mb=$([ $overlap = on ] && echo 0.05 || echo 1000)
  "$build/bin/a800c" "$build/models/bert.onnx" --loss=cross_entropy --optimizer=adamw --batch=8 --precision=fp32 \
    --bucket-mb="$mb" -o "$work/bert.$overlap.plan"
  buckets=$("$build/bin/a800c-inspect" "$work/bert.$overlap.plan" |
    sed -n 's/.*gradient buckets (data parallel all-reduce): \([0-9]*\)/\1/p')
  for n in 1 2 4; do
    if [ "$n" = 1 ]; then
      out=$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$build/bin/a800c-run" "$work/bert.$overlap.plan" \
        --synthetic --steps="$steps" --log-every="$steps")
    else
      out=$(mpi -np "$n" "$build/bin/a800c-run" "$work/bert.$overlap.plan" --synthetic \
        --steps="$steps" --log-every="$steps")
    fi
    ms=$(echo "$out" | sed -n 's/.*median \([0-9.]*\) ms\/step.*/\1/p')
    printf "%-6s %-12s %s\n" "$n" "$overlap ($buckets buckets)" "$ms"
  done
done
