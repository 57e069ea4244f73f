#!/usr/bin/env python3
"""Mixed-precision training parity on the CPU backend (PRECISION.md, issue 5).

    python3 tests/e2e/precision.py mlp_digits --bin build/bin --models build/models --data build/data

- mlp_digits: the MLP on scikit-learn's digits, trained exactly as tests/e2e/training.py's
              mlp_digits (adamw, lr 1e-3, batch 32, 10 epochs, seed 1), in fp32, amp, fp16 and
              bf16: amp and fp16 reach within 1 percentage point of the fp32 test accuracy, bf16
              (8-bit mantissa) within 2. The bound is the issue's; on 360 test samples one point
              is 3.6 samples, which is what rounding GEMM inputs to half can move.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

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


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=["mlp_digits"])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--data", required=True)
    ARGS = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        globals()[f"case_{ARGS.case}"](work)


if __name__ == "__main__":
    main()
