#!/usr/bin/env python3
"""Training through LSTM, GRU, RNN and LinearAttention end to end on the CPU backend.

    python3 tests/e2e/rnn_training.py --bin build/bin

Each model: x [16, 5, 3] -> the recurrent op (its weights trained) -> the last hidden state ->
a linear layer -> y [16, 1]; the task: y = 0.3 * the sum of x[:, :, 0] over time. a800c imports
the recurrent ops unrolled (compiler/onnx/import_decompose_rnn.cc,
import_decompose_linear_attention.cc), so training through them is autodiff through the ops they
are made of. Checked, per model:
  1. the first step's MSE loss (a800c-run's metrics) equals the loss of onnx's ReferenceEvaluator
     on the same model and batch (rtol 1e-5);
  2. Adam in fp32 and in amp: the mean loss of the last 20 steps is at most a tenth of the first
     step's;
  3. the CUDA backend's kernel code on the host (--backend=cuda-emu) gives the CPU backend's
     losses over the first 20 steps (rtol 1e-4: sums in another order).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

B, S, I, H = 16, 5, 3, 8


def make_model(kind, rng):
    inits = {"wo": (rng.standard_normal((H, 1)) * 0.3).astype(np.float32),
             "ax0": np.array([0], np.int64), "ax1": np.array([1], np.int64)}
    nodes = []
    if kind == "linear_attention":  # q, k, v projections, gated delta rule, the last output
        for n in ("wq", "wk", "wv", "wd", "wb"):
            cols = H if n in ("wq", "wk", "wv") else (H if n == "wd" else 1)
            inits[n] = (rng.standard_normal((I, cols)) * 0.3).astype(np.float32)
            nodes.append(helper.make_node("MatMul", ["x", n], [n[1:] + "_in"]))
        nodes += [helper.make_node("Sigmoid", ["b_in"], ["beta"]),
                  helper.make_node("Relu", ["d_in"], ["d_pos"]),
                  helper.make_node("Neg", ["d_pos"], ["decay"]),
                  helper.make_node("LinearAttention", ["q_in", "k_in", "v_in", "", "decay", "beta"],
                                   ["o"], q_num_heads=2, kv_num_heads=2),
                  helper.make_node("ReduceMean", ["o", "ax1"], ["h"], keepdims=0)]
    else:
        gates = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
        inits["W"] = (rng.standard_normal((1, gates * H, I)) * 0.3).astype(np.float32)
        inits["R"] = (rng.standard_normal((1, gates * H, H)) * 0.3).astype(np.float32)
        inits["B"] = np.zeros((1, 2 * gates * H), np.float32)
        nodes += [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
                  helper.make_node(kind.upper(), ["xt", "W", "R", "B"], ["", "yh"],
                                   hidden_size=H),
                  helper.make_node("Squeeze", ["yh", "ax0"], ["h"])]
    nodes.append(helper.make_node("MatMul", ["h", "wo"], ["y"]))
    graph = helper.make_graph(
        nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, I])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, 1])],
        [numpy_helper.from_array(v, n) for n, v in inits.items()])
    opset = 27 if kind == "linear_attention" else 22
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def tool(args, *cmd):
    p = subprocess.run([os.path.join(args.bin, cmd[0]), *cmd[1:]], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="a8_e2e_rnn_") as work:
        for kind in ("lstm", "gru", "rnn", "linear_attention"):
            rng = np.random.default_rng(5)
            model = make_model(kind, rng)
            path = os.path.join(work, kind + ".onnx")
            onnx.save(model, path)
            x = rng.standard_normal((256, S, I)).astype(np.float32)
            y = (0.3 * x[:, :, 0].sum(axis=1, keepdims=True)).astype(np.float32)
            np.save(os.path.join(work, "x.npy"), x)
            np.save(os.path.join(work, "y.npy"), y)
            (ref,) = ReferenceEvaluator(model).run(None, {"x": x[:B]})
            ref_loss = float(((ref - y[:B]) ** 2).mean())
            for precision in ("fp32", "amp"):
                plan = os.path.join(work, f"{kind}.{precision}.plan")
                metrics = os.path.join(work, f"{kind}.{precision}.jsonl")
                tool(args, "a800c", path, "-o", plan, f"--precision={precision}", "--loss=mse",
                     "--optimizer=adam", "--lr=0.01")
                tool(args, "a800c-run", plan, "--backend=cpu", "--input", f"x={work}/x.npy",
                     "--input", f"labels={work}/y.npy", "--steps=300", f"--metrics={metrics}")
                with open(metrics) as f:
                    losses = [json.loads(line)["loss"] for line in f]
                emu_metrics = os.path.join(work, f"{kind}.{precision}.emu.jsonl")
                tool(args, "a800c-run", plan, "--backend=cuda-emu", "--input", f"x={work}/x.npy",
                     "--input", f"labels={work}/y.npy", "--steps=20", f"--metrics={emu_metrics}")
                with open(emu_metrics) as f:
                    emu = [json.loads(line)["loss"] for line in f]
                if not np.allclose(emu, losses[:20], rtol=1e-4, atol=1e-7):
                    failures.append(f"{kind} {precision}: cuda-emu losses {emu[:3]}.. differ "
                                    f"from the CPU's {losses[:3]}..")
                last = float(np.mean(losses[-20:]))
                print(f"{kind} {precision}: first loss {losses[0]:.5f} (reference "
                      f"{ref_loss:.5f}), mean of the last 20 {last:.5f}")
                if precision == "fp32" and not np.isclose(losses[0], ref_loss, rtol=1e-5):
                    failures.append(f"{kind}: first loss {losses[0]} != reference {ref_loss}")
                if not last <= losses[0] / 10:
                    failures.append(f"{kind} {precision}: the loss fell from {losses[0]} to only "
                                    f"{last}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
