#!/usr/bin/env bash
# The main job on the bundled examples, as far as a800c reaches today (the compiler front end:
# import, shape inference, canonicalization, IR dumps, ONNX export). Training, mixed precision
# and the runtime come with the next issues; this script grows with them.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh >/dev/null
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j "${A8_JOBS:-$(nproc)}" a800c a800c-opt models >/dev/null
a800c=build/bin/a800c
out=build/demo
mkdir -p "$out"

echo "== $($a800c --version)"
echo
echo "== The MLP, every pass dump (a800c build/models/mlp.onnx --batch=32 --emit=ir --print-ir-after-all)"
$a800c build/models/mlp.onnx --batch=32 --emit=ir -o "$out/mlp.a8ir" --print-ir-after-all
echo
echo "== The BERT-style encoder: what canonicalize folded (--pass-timing)"
$a800c build/models/bert.onnx --batch=32 --emit=ir -o "$out/bert.a8ir" --pass-timing
grep -c ' = ' "$out/bert.a8ir" | xargs echo "nodes and values in the IR:"
echo
echo "== Round trip: each model through a800c and back to ONNX, run in onnxruntime"
for m in mlp cnn bert; do
  $a800c build/models/$m.onnx --batch=8 --emit=onnx -o "$out/$m.a8.onnx"
done
python3 - "$out" <<'PY'
import sys
import numpy as np
import onnxruntime as ort
out = sys.argv[1]
rng = np.random.default_rng(0)
feeds = {
    "mlp": {"x": rng.standard_normal((8, 64)).astype(np.float32)},
    "cnn": {"x": rng.standard_normal((8, 1, 8, 8)).astype(np.float32)},
    "bert": {"input_ids": rng.integers(0, 1000, (8, 16)),
             "attention_mask": (rng.random((8, 16)) > 0.2).astype(np.int64)},
}
for name, feed in feeds.items():
    want = ort.InferenceSession(f"build/models/{name}.onnx").run(None, feed)[0]
    got = ort.InferenceSession(f"{out}/{name}.a8.onnx").run(None, feed)[0]
    err = np.max(np.abs(got - want) / (np.abs(want) + 1e-6))
    print(f"{name:5s} logits {list(got.shape)}: max relative difference to the original {err:.2e}")
PY
echo
echo "Outputs in $out/. Not yet: training, --precision, plans and a800c-run (issues 3-5)."
