#!/usr/bin/env python3
"""Mixed-precision training parity on the CPU backend (PRECISION.md, issue 5).

    python3 tests/e2e/precision.py mlp_digits --bin build/bin --models build/models --data build/data

- mlp_digits: the MLP on scikit-learn's digits, trained exactly as tests/e2e/training.py's
              mlp_digits (adamw, lr 1e-3, batch 32, 10 epochs, seed 1), in fp32, amp, fp16 and
              bf16: amp and fp16 reach within 1 percentage point of the fp32 test accuracy, bf16
              (8-bit mantissa) within 2. The bound is the issue's; on 360 test samples one point
              is 3.6 samples, which is what rounding GEMM inputs to half can move.
- cnn_curve, bert_curve: the CNN and the BERT-style model memorise 64 fixed random samples
              (tests/e2e/training.py's loss_halves data, same seed and shuffling) in fp32 and in amp
              with --loss-scale=dynamic: every epoch's mean amp loss is within
              max(0.05, 10% of fp32) of fp32, and both at least halve their loss. FP16 rounds each
              GEMM/conv input and output to 2^-11 relative (~5e-4, a few ulps per layer), which
              moves a loss by ~1e-3 relative; the bound leaves room for that to compound over
              hundreds of AdamW steps, while a wrong gradient, a missing unscale or a dropped update
              moves whole epochs by far more. The curves compare step for step only if no step is
              skipped, so the tracked run starts at --init-scale=1024 (the default 65536 overflows
              BERT's step 2 gradients in half, a legitimate skip that shifts the trajectory by one
              update); a second amp run at the default scale checks the scaler instead: it still
              halves the loss, skips at most a few steps, and ends at 65536 * 0.5^skipped.
- emit_onnx:  each example model's forward, compiled with --precision=amp --batch=4, as ONNX
              (--emit=onnx) passes onnx.checker (full_check), holds Casts and FP16 values, runs in
              onnxruntime and matches a800c-run on the plan compiled with the same flags, on the
              same random inputs, within 4e-3 * max|logits| (both run the same FP16 graph; they
              differ only in where FP16 kernels round and accumulate, a few half ulps of 2^-11 per
              layer; measured <= 7e-4), and both lie within 1e-2 * max|logits| of fp32
              onnxruntime on the original model (measured <= 1e-3).
- overflow:   Inf injected for real, in amp and in fp16 (FP16 working copies): the MLP trains two
              clean digits batches (checkpoint A), then one batch of x = 1e5, finite in FP32 but
              Inf once cast to FP16 (checkpoint B). That step is skipped: every parameter, FP32
              master, FP16 working copy and Adam moment in B is byte-identical to A, Adam's update
              count (a8.updates, its bias correction) does not move while the step counter does,
              the scale halves and the growth tracker resets; the metrics say `skipped`.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np

from case_main import run_case

ARGS = None


def a800c(model, plan, *flags):
    subprocess.run([os.path.join(ARGS.bin, "a800c"), model, "-o", plan, *flags], check=True)


def run(plan, *flags):
    p = subprocess.run([os.path.join(ARGS.bin, "a800c-run"), plan, *flags], capture_output=True,
                       text=True)
    if p.returncode != 0:
        sys.exit(f"a800c-run {' '.join(flags)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def data(name):
    return os.path.join(ARGS.data, f"digits_{name}.npy")


def case_mlp_digits(work):
    accuracy = {}
    for mode in ("fp32", "amp", "fp16", "bf16"):
        plan = os.path.join(work, f"mlp.{mode}.plan")
        a800c(os.path.join(ARGS.models, "mlp.onnx"), plan, "--loss=cross_entropy",
              "--optimizer=adamw", "--lr=1e-3", "--batch=32", f"--precision={mode}")
        p = run(plan, "--input", f"x={data('train_x')}", "--input", f"labels={data('train_y')}",
                "--shuffle", "--seed=1", "--epochs=10", "--eval-input", f"x={data('test_x')}",
                "--eval-input", f"labels={data('test_y')}", "--eval-every=110")
        evals = re.findall(r"accuracy ([0-9.]+)%", p.stdout)
        accuracy[mode] = float(evals[-1])
        print(f"mlp_digits {mode}: {accuracy[mode]:.2f}% test accuracy")
    for mode, bound in (("amp", 1.0), ("fp16", 1.0), ("bf16", 2.0)):
        gap = accuracy["fp32"] - accuracy[mode]
        assert gap <= bound, f"{mode}: {accuracy[mode]}% is {gap:.2f} points below fp32"


# The amp loss curve tracks fp32 when every epoch's mean loss is within
# max(CURVE_ABS, CURVE_REL * fp32) (the reason is in the module docstring). Measured: CNN within
# 1e-2, BERT within 2e-3 (init scale 1024, no step skipped).
CURVE_ABS, CURVE_REL = 0.05, 0.10


def memorise(work, name, feeds, epochs, plan_flags, run_flags=()):
    """Trains `name` on `feeds`; returns the JSONL metrics of every step."""
    plan = os.path.join(work, f"{name}.plan")
    a800c(os.path.join(ARGS.models, f"{name.split('.')[0]}.onnx"), plan, "--loss=cross_entropy",
          "--batch=16", *plan_flags)
    flags = []
    for k, v in feeds.items():
        np.save(os.path.join(work, f"{name}.{k}.npy"), v)
        flags += ["--input", f"{k}={work}/{name}.{k}.npy"]
    m = os.path.join(work, f"{name}.jsonl")
    run(plan, *flags, f"--epochs={epochs}", "--shuffle", "--seed=1", f"--metrics={m}",
        *run_flags)
    with open(m) as f:
        return [json.loads(line) for line in f]


def epoch_means(steps, epochs):
    return np.array([r["loss"] for r in steps]).reshape(epochs, -1).mean(axis=1)


def curve_case(work, name, feeds, epochs, opt_flags):
    fp32 = memorise(work, f"{name}.fp32", feeds, epochs, [*opt_flags, "--precision=fp32"])
    amp = memorise(work, f"{name}.amp", feeds, epochs,
                   [*opt_flags, "--precision=amp", "--loss-scale=dynamic", "--init-scale=1024"])
    ref, low = epoch_means(fp32, epochs), epoch_means(amp, epochs)
    print(f"{name} fp32 epoch losses: {np.array2string(ref, precision=4)}")
    print(f"{name} amp  epoch losses: {np.array2string(low, precision=4)}")
    skipped = sum(r["skipped"] for r in amp)
    assert skipped == 0, f"{name}: amp skipped {skipped} steps at scale 1024"
    gap = np.abs(low - ref)
    bound = np.maximum(CURVE_ABS, CURVE_REL * ref)
    worst = int(np.argmax(gap / bound))
    print(f"{name}: max |amp - fp32| = {gap.max():.2e}; worst epoch {worst}: {gap[worst]:.2e} "
          f"(bound {bound[worst]:.2e})")
    assert np.all(gap <= bound), f"{name}: amp epoch {worst} loss {low[worst]} vs fp32 {ref[worst]}"
    for mode, curve in (("fp32", ref), ("amp", low)):
        assert curve[-1] <= 0.5 * curve[0], f"{name} {mode}: the loss did not halve: {curve}"
    # The default scale: overflowing steps are skipped and halve the scale; it never grows here
    # (growth interval 2000 > the steps run), so the final scale is 65536 * 0.5^skipped.
    steps = memorise(work, f"{name}.amp_default", feeds, epochs,
                     [*opt_flags, "--precision=amp", "--loss-scale=dynamic"])
    curve = epoch_means(steps, epochs)
    skipped = sum(r["skipped"] for r in steps)
    print(f"{name} amp (init scale 65536): {skipped} skipped, final scale {steps[-1]['scale']}, "
          f"loss {curve[0]:.4f} -> {curve[-1]:.4f}")
    assert skipped <= 4, f"{name}: {skipped} steps skipped"
    assert steps[-1]["scale"] == 65536 * 0.5**skipped, steps[-1]
    assert curve[-1] <= 0.5 * curve[0], f"{name} amp (default scale): the loss did not halve"


def training_feeds(name):
    rng = np.random.default_rng(3)  # tests/e2e/training.py's loss_halves data
    cnn = {"x": rng.standard_normal((64, 1, 8, 8)).astype(np.float32),
           "labels": rng.integers(0, 10, 64)}
    bert = {"input_ids": rng.integers(0, 1000, (64, 16)),
            "attention_mask": (rng.random((64, 16)) > 0.1).astype(np.int64),
            "labels": rng.integers(0, 2, 64)}
    return {"cnn": cnn, "bert": bert}[name]


def case_cnn_curve(work):
    curve_case(work, "cnn", training_feeds("cnn"), 60, ["--optimizer=adamw", "--lr=3e-3"])


def case_bert_curve(work):
    curve_case(work, "bert", training_feeds("bert"), 20, ["--optimizer=adamw", "--lr=1e-3"])


# |a800c - onnxruntime| on the same emitted FP16 graph, and |either - fp32|, relative to
# max|fp32 logits| (reasons in the module docstring).
EMIT_VS_ORT, EMIT_VS_FP32 = 4e-3, 1e-2


def case_emit_onnx(work):
    import onnx
    import onnxruntime as ort
    rng = np.random.default_rng(11)
    feeds = {"mlp": {"x": rng.standard_normal((4, 64)).astype(np.float32)},
             "cnn": {"x": rng.standard_normal((4, 1, 8, 8)).astype(np.float32)},
             "bert": {"input_ids": rng.integers(0, 1000, (4, 16)),
                      "attention_mask": (rng.random((4, 16)) > 0.1).astype(np.int64)}}
    for name, feed in feeds.items():
        source = os.path.join(ARGS.models, f"{name}.onnx")
        emitted, plan = os.path.join(work, f"{name}.amp.onnx"), os.path.join(work, f"{name}.plan")
        a800c(source, emitted, "--precision=amp", "--batch=4", "--emit=onnx")
        a800c(source, plan, "--precision=amp", "--batch=4")
        model = onnx.load(emitted)
        onnx.checker.check_model(model, full_check=True)
        casts = [n for n in model.graph.node if n.op_type == "Cast"]
        to_f16 = [n for n in casts
                  if any(a.name == "to" and a.i == onnx.TensorProto.FLOAT16 for a in n.attribute)]
        assert to_f16, f"{name}: the emitted amp model casts nothing to FP16"
        flags = []
        for k, v in feed.items():
            np.save(os.path.join(work, f"{name}.{k}.npy"), v)
            flags += ["--input", f"{k}={work}/{name}.{k}.npy"]
        out = os.path.join(work, f"{name}.out")
        run(plan, *flags, "--output-dir", out)
        ours = np.load(os.path.join(out, "logits.npy")).astype(np.float64)
        sessions = [ort.InferenceSession(p, providers=["CPUExecutionProvider"])
                    for p in (emitted, source)]
        theirs, ref = (s.run(None, feed)[0].astype(np.float64) for s in sessions)
        assert ours.shape == theirs.shape == ref.shape, (ours.shape, theirs.shape, ref.shape)
        scale = float(np.abs(ref).max())
        vs_ort = float(np.abs(ours - theirs).max()) / scale
        vs_fp32 = max(float(np.abs(ours - ref).max()), float(np.abs(theirs - ref).max())) / scale
        print(f"emit_onnx {name}: {len(casts)} Casts ({len(to_f16)} to f16); a800c vs "
              f"onnxruntime {vs_ort:.2e}, vs fp32 {vs_fp32:.2e} (of max|logits| {scale:.3f})")
        assert vs_ort <= EMIT_VS_ORT, f"{name}: a800c vs onnxruntime {vs_ort} > {EMIT_VS_ORT}"
        assert vs_fp32 <= EMIT_VS_FP32, f"{name}: amp vs fp32 {vs_fp32} > {EMIT_VS_FP32}"


def case_overflow(work):
    from safetensors.numpy import load_file
    x = np.load(data("train_x"))[:64]
    y = np.load(data("train_y"))[:64]
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "y.npy"), y)
    np.save(os.path.join(work, "big.npy"), np.full((32, x.shape[1]), 1e5, dtype=np.float32))
    np.save(os.path.join(work, "big_y.npy"), y[:32])
    for mode in ("amp", "fp16"):
        plan = os.path.join(work, f"mlp.{mode}.plan")
        a800c(os.path.join(ARGS.models, "mlp.onnx"), plan, "--loss=cross_entropy",
              "--optimizer=adamw", "--batch=32", f"--precision={mode}")
        a, b = os.path.join(work, f"{mode}.a.safetensors"), os.path.join(work, f"{mode}.b.safetensors")
        run(plan, "--input", f"x={work}/x.npy", "--input", f"labels={work}/y.npy", "--steps=2",
            f"--checkpoint={a}")
        m = os.path.join(work, f"{mode}.jsonl")
        run(plan, "--input", f"x={work}/big.npy", "--input", f"labels={work}/big_y.npy",
            f"--resume={a}", "--steps=3", f"--checkpoint={b}", f"--metrics={m}")
        before, after = load_file(a), load_file(b)
        assert before.keys() == after.keys(), f"{mode}: checkpoints hold different tensors"
        kept = [k for k in before if not k.startswith("a8.")]
        assert any(k.endswith(".exp_avg") for k in kept) and (
            mode != "fp16" or any(k.endswith(".f16") for k in kept)), f"{mode}: {sorted(kept)}"
        for k in kept:
            assert before[k].tobytes() == after[k].tobytes(), f"{mode}: '{k}' changed on a skipped step"
        assert after["a8.updates"] == before["a8.updates"], f"{mode}: Adam's update count moved"
        assert after["a8.step"] == before["a8.step"] + 1, f"{mode}: the step counter did not move"
        assert after["a8.scale"] == before["a8.scale"] / 2, f"{mode}: scale {after['a8.scale']}"
        assert after["a8.growth_tracker"] == 0, f"{mode}: growth tracker {after['a8.growth_tracker']}"
        with open(m) as f:
            last = [json.loads(line) for line in f][-1]
        assert last["skipped"] >= 1, f"{mode}: metrics {last}"
        print(f"overflow {mode}: step skipped, {len(kept)} tensors byte-identical, scale "
              f"{before['a8.scale']} -> {after['a8.scale']}, updates {before['a8.updates']}")


if __name__ == "__main__":
    run_case(globals(), "a8_precision_")
