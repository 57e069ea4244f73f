#!/usr/bin/env bash
# CPU training step of the example models (fp32, AdamW, synthetic data): compiles each model as a
# training plan and prints a800c-run's median and p90 step time over STEPS steps (after 5 warm-up
# steps that are not timed): a800c's own progress. The same step against PyTorch eager and
# onnxruntime-training: tools/bench/train_vs_peers.py.
#
#   tools/bench/cpu_train_step.sh [BATCH=32] [STEPS=50]
set -euo pipefail
cd "$(dirname "$0")/../.."
batch=${1:-32}
steps=${2:-50}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-6s %6s %12s %12s\n' model batch "median ms" "p90 ms"
for m in mlp cnn bert; do
  build/bin/a800c "build/models/$m.onnx" --loss=cross_entropy --optimizer=adamw --precision=fp32 \
    --batch="$batch" -o "$out/$m.plan"
  build/bin/a800c-run "$out/$m.plan" --synthetic --steps=$((steps + 5)) \
    --metrics="$out/$m.jsonl" > /dev/null
  python3 - "$out/$m.jsonl" "$m" "$batch" <<'PY'
import json, sys
ms = sorted(json.loads(l)["step_ms"] for l in open(sys.argv[1]).readlines()[5:])
print(f"{sys.argv[2]:<6} {sys.argv[3]:>6} {ms[len(ms) // 2]:>12.3f} {ms[int(len(ms) * 0.9)]:>12.3f}")
PY
done
