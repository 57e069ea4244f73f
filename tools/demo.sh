#!/usr/bin/env bash
# The main job on the bundled examples, as far as a800c reaches today: the compiler (import,
# shape inference, canonicalization, scheduling, memory planning, IR dumps, ONNX export, plans)
# and the CPU reference runtime (inference plans). Training and mixed precision come with the
# next issues; this script grows with them.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh >/dev/null
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j "${A8_JOBS:-$(nproc)}" a800c a800c-opt a800c-run a800c-inspect models >/dev/null
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
echo "== Each model through a800c: back to ONNX (run in onnxruntime), and compiled to a plan"
echo "   (batch 32) that a800c-run runs on the CPU backend; both against the original model"
python3 - "$out" <<'PY'
import subprocess, sys
import numpy as np
import onnxruntime as ort
out = sys.argv[1]
rng = np.random.default_rng(1)
feeds = {
    "mlp": {"x": rng.standard_normal((32, 64)).astype(np.float32)},
    "cnn": {"x": rng.standard_normal((32, 1, 8, 8)).astype(np.float32)},
    "bert": {"input_ids": rng.integers(0, 1000, (32, 16)),
             "attention_mask": (rng.random((32, 16)) > 0.2).astype(np.int64)},
}
def rel_err(got, want):
    return np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-3)
for name, feed in feeds.items():
    model, exported, plan = f"build/models/{name}.onnx", f"{out}/{name}.a8.onnx", f"{out}/{name}.plan"
    want = ort.InferenceSession(model).run(None, feed)[0]
    subprocess.run(["build/bin/a800c", model, "--batch=32", "--emit=onnx", "-o", exported], check=True)
    onnx_err = rel_err(ort.InferenceSession(exported).run(None, feed)[0], want)
    subprocess.run(["build/bin/a800c", model, "--batch=32", "-o", plan], check=True)
    args = ["build/bin/a800c-run", plan, "--backend=cpu", "--steps=20", "--output-dir", f"{out}/{name}.out"]
    for k, v in feed.items():
        np.save(f"{out}/{name}.{k}.npy", v)
        args += ["--input", f"{k}={out}/{name}.{k}.npy"]
    timing = subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()
    plan_err = rel_err(np.load(f"{out}/{name}.out/logits.npy"), want)
    print(f"{name:5s} exported ONNX: max rel. error {onnx_err:.1e}; plan on the CPU backend: "
          f"max rel. error {plan_err:.1e}\n      {timing.splitlines()[-1]}")
PY
echo
echo "== What the MLP plan holds (a800c-inspect, first lines)"
build/bin/a800c-inspect "$out/mlp.plan" | sed -n '1,16p'
echo
echo "Outputs in $out/. Not yet: training, --precision and the loss scaler (issues 4-5), CUDA (6)."
