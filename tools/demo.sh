#!/usr/bin/env bash
# The main job on the bundled examples, as far as a800c reaches today: the compiler (import,
# shape inference, canonicalization, scheduling, memory planning, IR dumps, ONNX export, plans),
# the CPU reference runtime (inference plans) and training: the MLP trained on scikit-learn's
# handwritten digits to >= 95% test accuracy in mixed precision (amp, a800c's default, with
# dynamic loss scaling), and the training-step time of each example model.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh >/dev/null
tools/configure_build.sh
ninja -C build -j "${A8_JOBS:-$(nproc)}" a800c a800c-opt a800c-run a800c-inspect models digits \
  >/dev/null
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
echo "== Each model through a800c in fp32: back to ONNX (run in onnxruntime), and compiled to a"
echo "   plan (batch 32) that a800c-run runs on the CPU backend; both against the original model"
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
    subprocess.run(["build/bin/a800c", model, "--batch=32", "--precision=fp32", "--emit=onnx",
                    "-o", exported], check=True)
    onnx_err = rel_err(ort.InferenceSession(exported).run(None, feed)[0], want)
    subprocess.run(["build/bin/a800c", model, "--batch=32", "--precision=fp32", "-o", plan], check=True)
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
echo "== Training the MLP on the handwritten digits (scikit-learn's copy, 1437 train / 360 test):"
echo "   AdamW, lr 1e-3, batch 32, 10 epochs in a shuffled order, evaluated on the test set;"
echo "   mixed precision by default (amp: GEMMs in FP16, loss and optimizer in FP32, FP32 master"
echo "   weights) with PyTorch-style dynamic loss scaling"
$a800c build/models/mlp.onnx --loss=cross_entropy --optimizer=adamw --lr=1e-3 --batch=32 \
  -o "$out/mlp_train.plan"
d=build/data
build/bin/a800c-run "$out/mlp_train.plan" --input x=$d/digits_train_x.npy \
  --input labels=$d/digits_train_y.npy --shuffle --seed=1 --epochs=10 \
  --eval-input x=$d/digits_test_x.npy --eval-input labels=$d/digits_test_y.npy --eval-every=110 \
  --log-every=44 --metrics="$out/mlp_train.jsonl" --checkpoint="$out/mlp_train.safetensors" |
  tee "$out/mlp_train.log" | sed 's/^/   /'
python3 - "$out/mlp_train.log" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
acc = float(re.findall(r"accuracy ([0-9.]+)%", log)[-1])
steps, wall = re.search(r"trained (\d+) steps? .* in ([0-9.]+) s", log).groups()
print(f"   MLP on digits: test accuracy {acc:.2f}% after {steps} steps, {wall} s of training")
scaler = re.search(r"final loss scale ([0-9.e+]+), (\d+) updates? skipped", log)
if scaler:
    print(f"   loss scaler: final scale {scaler.group(1)}, {scaler.group(2)} updates skipped")
if acc < 95.0:
    sys.exit(f"demo: the MLP reached only {acc:.2f}% test accuracy (95% expected)")
PY
echo
echo "== Training-step time of each example model on the CPU backend (batch 32, AdamW, fp32:"
echo "   the CPU backend emulates FP16, so amp is slower here; synthetic data, 30 steps)"
for m in mlp cnn bert; do
  $a800c build/models/$m.onnx --loss=cross_entropy --optimizer=adamw --batch=32 --precision=fp32 \
    -o "$out/${m}_train.plan"
  build/bin/a800c-run "$out/${m}_train.plan" --synthetic --steps=30 --log-every=30 | tail -n 1 |
    sed "s/^a800c-run:/   $m:/"
done
echo
echo "== A Llama from the model zoo (LlamaForCausalLM as PyTorch's dynamo exporter writes it:"
echo "   RMSNorm, rotary, SwiGLU, grouped-query attention), 20 AdamW steps in amp against PyTorch's"
echo "   own fp32 curve (models/zoo/llama/loss_adamw.npy)"
z=models/zoo/llama
$a800c $z/model.onnx --loss=cross_entropy --class-axis=-1 --optimizer=adamw --lr=1e-3 \
  --weight-decay=0.01 -o "$out/llama.plan"
build/bin/a800c-run "$out/llama.plan" --input input_ids=$z/input_ids.npy \
  --input labels=$z/labels.npy --steps=20 --log-every=20 --metrics="$out/llama.jsonl" | tail -n 1 |
  sed 's/^a800c-run:/  /'
python3 - "$out/llama.jsonl" $z/loss_adamw.npy <<'EOF'
import json, sys
import numpy as np
a = [json.loads(line)["loss"] for line in open(sys.argv[1])]
b = np.load(sys.argv[2])
worst = max(abs(x - y) / y for x, y in zip(a, b))
print(f"   loss {a[0]:.4f} -> {a[-1]:.4f} (PyTorch fp32: {b[0]:.4f} -> {b[-1]:.4f}); "
      f"largest step difference {worst:.1e}")
EOF
echo
echo "== Data parallel: the same training on 2 processes (mpirun -np 2), batch 16 each, one"
echo "   loss scaler for both ranks, parameters checked byte-identical at the end"
$a800c build/models/mlp.onnx --loss=cross_entropy --optimizer=adamw --lr=1e-3 --batch=16 \
  -o "$out/mlp_dp.plan"
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
mpirun --oversubscribe "${root[@]}" -np 2 build/bin/a800c-run "$out/mlp_dp.plan" \
  --input x=$d/digits_train_x.npy --input labels=$d/digits_train_y.npy --shuffle --seed=1 \
  --epochs=10 --eval-input x=$d/digits_test_x.npy --eval-input labels=$d/digits_test_y.npy \
  --log-every=1000 | grep -E "data parallel|identical|eval at step 440|trained" | sed 's/^/   /'
echo
echo "== The CUDA backend: $(build/bin/a800c-run --list-kernels --backend=cuda | head -n 1)."
echo "   The MLP in amp, 20 steps, on the CPU and through the CUDA kernels' own code run on the"
echo "   host (--backend=cuda-emu; on a GPU machine --backend=cuda runs it on the GPU):"
$a800c build/models/mlp.onnx --loss=cross_entropy --optimizer=adamw --lr=1e-3 --batch=32 \
  -o "$out/mlp_cuda.plan"
for be in cpu cuda-emu; do
  ref=(); [ "$be" = cpu ] && ref=(--reference)  # the CPU's reference kernels: cuda-emu's bits
  build/bin/a800c-run "$out/mlp_cuda.plan" --backend=$be "${ref[@]}" --synthetic --seed=3 --steps=20 \
    --log-every=20 | tail -n 1 | sed 's/^a800c-run:/  /' | sed 's/ in [0-9.]* s: median [0-9.]* ms\/step//'
done
echo
echo "Outputs in $out/. On a GPU: tools/gpu-check.sh is the check and benchmark (the first run,"
echo "on an H200, is in tools/bench/RESULTS.md)."
