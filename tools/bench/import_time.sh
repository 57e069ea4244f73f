#!/usr/bin/env bash
# Time to import and canonicalize the BERT-style example at 12 layers: the median of 5 runs of
# `a800c bert12.onnx --batch=32 --emit=ir` (import, shape-inference, canonicalize, print), with
# the per-pass split of the median run from --pass-timing.
#   tools/bench/import_time.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
model=$build/models/bert12.onnx
[ "$model" -nt models/make_models.py ] || python3 models/make_models.py --out "$build/models" --only bert --bert-layers 12 >/dev/null
python3 - "$build/bin/a800c" "$model" <<'PY'
import statistics, subprocess, sys, time
a800c, model = sys.argv[1], sys.argv[2]
times = []
for _ in range(5):
    t0 = time.perf_counter()
    subprocess.run([a800c, model, "--batch=32", "--emit=ir", "-o", "/dev/null"], check=True)
    times.append((time.perf_counter() - t0) * 1000)
print(f"a800c import+canonicalize, BERT-style 12 layers, batch 32: median {statistics.median(times):.1f} ms "
      f"(runs: {', '.join(f'{t:.1f}' for t in times)})")
subprocess.run([a800c, model, "--batch=32", "--emit=ir", "-o", "/dev/null", "--pass-timing"], check=True)
PY
