#!/usr/bin/env python3
"""Fused vs unfused plans on the CPU backend (issue 6, "Fusion pass").

    python3 tests/e2e/fuse_parity.py mlp --bin build/bin --models build/models

Each example model (mlp, cnn, bert) is compiled for training twice, with the `fuse` pass and with
--no-fuse, in fp32 and in amp (--loss-scale=dynamic --init-scale=1024, so no step is skipped and
the two runs update alike), trained STEPS AdamW steps on the same fixed random batches, and
compared: every step's loss, and the last step's logits.

The fused plan must contain fused kernels (a8.FusedMatMul / a8.FusedElementwise), else the test
would compare a plan with itself.

Tolerances, relative to the loss (per step) and to max|logits| (logits):
- fp32 1e-4: the fused kernels do the same float math; what differs is the order of the GEMM
  sums (bias added after the product instead of inside the GEMM), and libm's erfc where the
  unfused f32 Gelu uses a polynomial (5e-7 relative); measured below 1e-5 after 5 steps.
- amp 2e-2: the fused kernels drop the f16 roundings of intermediate results (MatMul -> f16 ->
  Add -> f16 -> Gelu), each up to 2^-11 relative, which the following layers and 5 Adam updates
  carry on; a wrong epilogue, a missing bias or a lost gradient moves the loss by far more.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

STEPS = 5
BATCH = 8
TOLERANCE = {"fp32": 1e-4, "amp": 2e-2}
ARGS = None


def feeds(model, n=BATCH * STEPS, seed=7):
    """n rows of fixed random inputs for an example model (fuse_optimizer_parity.py too)."""
    rng = np.random.default_rng(seed)
    if model == "mlp":
        return {"x": rng.standard_normal((n, 64)).astype(np.float32),
                "labels": rng.integers(0, 10, n)}
    if model == "cnn":
        return {"x": rng.standard_normal((n, 1, 8, 8)).astype(np.float32),
                "labels": rng.integers(0, 10, n)}
    return {"input_ids": rng.integers(0, 1000, (n, 16)),
            "attention_mask": (rng.random((n, 16)) > 0.1).astype(np.int64),
            "labels": rng.integers(0, 2, n)}


def train(work, model, mode, fused):
    tag = f"{model}.{mode}.{'fused' if fused else 'unfused'}"
    plan = os.path.join(work, f"{tag}.plan")
    flags = ["--loss=cross_entropy", "--optimizer=adamw", "--lr=1e-3", f"--batch={BATCH}",
             f"--precision={mode}"]
    if mode == "amp":
        flags += ["--loss-scale=dynamic", "--init-scale=1024"]
    if not fused:
        flags.append("--no-fuse")
    subprocess.run([os.path.join(ARGS.bin, "a800c"), os.path.join(ARGS.models, f"{model}.onnx"),
                    "-o", plan, *flags], check=True)
    ir = subprocess.run([os.path.join(ARGS.bin, "a800c"),
                         os.path.join(ARGS.models, f"{model}.onnx"), "--emit=ir", "-o", "-",
                         *flags], check=True, capture_output=True, text=True).stdout
    run_flags = []
    for name, value in feeds(model).items():
        path = os.path.join(work, f"{model}.{name}.npy")
        np.save(path, value)
        run_flags += ["--input", f"{name}={path}"]
    metrics = os.path.join(work, f"{tag}.jsonl")
    out = os.path.join(work, f"{tag}.out")
    p = subprocess.run([os.path.join(ARGS.bin, "a800c-run"), plan, *run_flags,
                        f"--steps={STEPS}", f"--metrics={metrics}", f"--output-dir={out}"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"a800c-run {tag} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    with open(metrics) as f:
        steps = [json.loads(line) for line in f]
    return ir.count("a8.Fused"), steps, np.load(os.path.join(out, "logits.npy"))


def parse_model_args(doc):
    """MODEL --bin DIR --models DIR, the arguments of the example-model parity scripts."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("model", choices=["mlp", "cnn", "bert"])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--models", required=True)
    return parser.parse_args()


def main():
    global ARGS
    ARGS = parse_model_args(__doc__)
    with tempfile.TemporaryDirectory(prefix="a8_fuse_parity_") as work:
        for mode in ("fp32", "amp"):
            n_fused, fused, logits_f = train(work, ARGS.model, mode, True)
            n_plain, plain, logits_p = train(work, ARGS.model, mode, False)
            assert n_fused > 0, f"{ARGS.model} {mode}: the fused plan has no fused kernel"
            assert n_plain == 0, f"{ARGS.model} {mode}: --no-fuse still fused {n_plain} nodes"
            tol = TOLERANCE[mode]
            assert len(fused) == len(plain) == STEPS
            worst = 0.0
            for a, b in zip(fused, plain):
                assert a["skipped"] == b["skipped"], (a, b)
                rel = abs(a["loss"] - b["loss"]) / max(abs(b["loss"]), 1e-6)
                worst = max(worst, rel)
                assert rel <= tol, f"{ARGS.model} {mode} step {a['step']}: {a['loss']} vs {b['loss']}"
            scale = max(float(np.abs(logits_p).max()), 1e-6)
            dl = float(np.abs(logits_f.astype(np.float64) - logits_p).max()) / scale
            print(f"{ARGS.model} {mode}: {n_fused} fused kernels; max relative loss difference "
                  f"{worst:.2e}, logits {dl:.2e} (tolerance {tol:g})")
            assert dl <= tol, f"{ARGS.model} {mode}: logits differ by {dl:.2e} of max|logits|"


if __name__ == "__main__":
    main()
