#!/usr/bin/env python3
"""ONNX's own training format end to end: a model whose TrainingInfoProto holds the step.

Builds a linear regression whose algorithm graph computes an MSE loss, differentiates it with
ai.onnx.preview.training.Gradient, updates W and B with ai.onnx.preview.training.Momentum (and,
in a second model, Adam) and counts steps in T, with update_binding for W, B, the moments and T.
a800c compiles it with no training flags; a800c-run trains it for a few steps on fixed data; the
final W and B (written by --output-dir: the algorithm's outputs are plan outputs) must match a
float64 NumPy run of the same step, using the ONNX reference formulas (onnx's own test helpers
apply_momentum / apply_adam), within float32 rounding.

    python3 tests/e2e/onnx_training_info.py --bin build/bin
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test.case.node.adam import apply_adam
from onnx.backend.test.case.node.momentum import apply_momentum

TRAINING = "ai.onnx.preview.training"
N, D = 8, 3
STEPS = 5


def build(optimizer):
    rng = np.random.default_rng(0)
    w0 = rng.uniform(-1, 1, (D, 1)).astype(np.float32)
    b0 = np.array([0.1], np.float32)
    inference = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"]),
         helper.make_node("Add", ["XW", "B"], ["P"])],
        "linreg",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [N, D])],
        [helper.make_tensor_value_info("P", TensorProto.FLOAT, [N, 1])],
        [numpy_helper.from_array(w0, "W"), numpy_helper.from_array(b0, "B")])
    moments = ["V_W", "V_B"] if optimizer == "momentum" else ["M_W", "M_B", "H_W", "H_B"]
    state_inits = [numpy_helper.from_array(np.zeros_like(a), n)
                   for n, a in zip(moments, [w0, b0] * (len(moments) // 2))]
    nodes = [
        helper.make_node("Sub", ["P", "Y"], ["E"]),
        helper.make_node("Mul", ["E", "E"], ["E2"]),
        helper.make_node("ReduceMean", ["E2"], ["L"], keepdims=0),
        helper.make_node("Gradient", ["W", "B"], ["dW", "dB"], domain=TRAINING, xs=["W", "B"],
                         y="L"),
    ]
    new = ["W_new", "B_new"] + [m + "_new" for m in moments]
    if optimizer == "momentum":
        nodes.append(helper.make_node("Momentum", ["R", "T", "W", "B", "dW", "dB"] + moments, new,
                                      domain=TRAINING, alpha=0.9, beta=0.5, mode="standard",
                                      norm_coefficient=0.01))
    else:
        nodes.append(helper.make_node("Adam", ["R", "T", "W", "B", "dW", "dB"] + moments, new,
                                      domain=TRAINING, alpha=0.9, beta=0.999, epsilon=1e-6,
                                      norm_coefficient=0.01, norm_coefficient_post=0.02))
    nodes.append(helper.make_node("Add", ["T", "One"], ["T_new"]))
    algorithm = helper.make_graph(
        nodes, "step",
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [N, 1])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in new] +
        [helper.make_tensor_value_info("T_new", TensorProto.INT64, [])],
        [numpy_helper.from_array(np.array(0.05, np.float32), "R"),
         numpy_helper.from_array(np.array(0, np.int64), "T"),
         numpy_helper.from_array(np.array(1, np.int64), "One")] + state_inits)
    info = onnx.TrainingInfoProto()
    info.algorithm.CopyFrom(algorithm)
    for target in ["W", "B"] + moments + ["T"]:
        b = info.update_binding.add()
        b.key, b.value = target, target + "_new"
    model = helper.make_model(inference, opset_imports=[helper.make_opsetid("", 17),
                                                       helper.make_opsetid(TRAINING, 1)])
    model.training_info.append(info)
    return model, w0, b0


def reference(optimizer, w, b, x, y):
    w, b = w.astype(np.float64), b.astype(np.float64)
    state = [np.zeros_like(w), np.zeros_like(b)] * (1 if optimizer == "momentum" else 2)
    for t in range(STEPS):
        e = x @ w + b - y
        dw = x.T @ (2 * e / e.size)
        db = (2 * e / e.size).sum(axis=0)
        if optimizer == "momentum":
            w, state[0] = apply_momentum(0.05, t, w, dw, state[0], 0.01, 0.9, 0.5)
            b, state[1] = apply_momentum(0.05, t, b, db, state[1], 0.01, 0.9, 0.5)
        else:
            w, state[0], state[2] = apply_adam(0.05, t, w, dw, state[0], state[2], 0.01, 0.02,
                                               0.9, 0.999, 1e-6)
            b, state[1], state[3] = apply_adam(0.05, t, b, db, state[1], state[3], 0.01, 0.02,
                                               0.9, 0.999, 1e-6)
    return w, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    a800c, run = os.path.join(args.bin, "a800c"), os.path.join(args.bin, "a800c-run")
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (N, D)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype(np.float32)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "x.npy"), x)
        np.save(os.path.join(tmp, "y.npy"), y)
        for optimizer in ["momentum", "adam"]:
            model, w0, b0 = build(optimizer)
            onnx.checker.check_model(model)
            path = os.path.join(tmp, optimizer + ".onnx")
            onnx.save(model, path)
            plan = os.path.join(tmp, optimizer + ".plan")
            out = os.path.join(tmp, optimizer + "_out")
            subprocess.run([a800c, path, "-o", plan, "--precision=fp32"], check=True)
            subprocess.run([run, plan, "--backend=cpu", f"--steps={STEPS}", "--input",
                            "X=" + os.path.join(tmp, "x.npy"), "--input",
                            "Y=" + os.path.join(tmp, "y.npy"), "--output-dir", out],
                           check=True, stdout=subprocess.DEVNULL)
            # The outputs of the last step are W_new/B_new: the values after STEPS updates.
            w = np.load(os.path.join(out, "W_new.npy"))
            b = np.load(os.path.join(out, "B_new.npy"))
            t = np.load(os.path.join(out, "T_new.npy"))
            rw, rb = reference(optimizer, w0, b0, x, y)
            ok = (np.allclose(w, rw, rtol=1e-5, atol=1e-6) and np.allclose(b, rb, rtol=1e-5,
                                                                          atol=1e-6)
                  and int(t) == STEPS)
            print(f"{optimizer}: W {w.ravel()} reference {rw.ravel()}; T {int(t)}: "
                  f"{'ok' if ok else 'MISMATCH'}")
            failures += 0 if ok else 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
