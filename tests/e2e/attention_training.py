#!/usr/bin/env python3
"""Training through Attention and RotaryEmbedding end to end on the CPU backend.

    python3 tests/e2e/attention_training.py --bin build/bin

The model: x [N, 6, 8] -> Q, K, V projections -> RotaryEmbedding-23 on Q and K (3-D, position
ids into cos/sin caches) -> Attention-23 (2 query heads, 1 KV head: grouped-query, causal, a
bool padding mask as a graph input) -> mean over the sequence -> a linear layer to 3 classes.
a800c imports both ops as decompositions (compiler/onnx/import_decompose_attention.cc), so their
gradients come from the ops they are made of. Checked:
  1. the gradient: one plain-SGD step (batch 16, lr 1) moves each weight by -dL/dw, L the mean
     cross-entropy; dL/dw is recomputed for every element of every weight (the projections and
     the rotary cos/sin caches, gathered by position) by central finite differences in float64
     with onnx's ReferenceEvaluator on the same model in double;
  2. the first step's loss (a800c-run's metrics) equals the reference's loss, and the CUDA
     backend's kernel code on the host (--backend=cuda-emu) takes the same step;
  3. training: AdamW memorises 64 random samples: the mean loss of the last epoch is at most a
     quarter of the first's.
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

S, E, HQ, HKV, D, C, MAX_POS = 6, 8, 2, 1, 4, 3, 16
WEIGHTS = {"wq": (E, HQ * D), "wk": (E, HKV * D), "wv": (E, HKV * D), "wo": (HQ * D, C)}


def make_model(dtype, weights):
    """The classifier in `dtype` (np.float32 or np.float64), the weights (projections and the
    rotary cos/sin caches, all trained) as initializers."""
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inits = [numpy_helper.from_array(w.astype(dtype), n) for n, w in weights.items()]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "seq_axis"))
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("RotaryEmbedding", ["q", "cos", "sin", "pos"], ["q_rot"],
                         num_heads=HQ),
        helper.make_node("RotaryEmbedding", ["k", "cos", "sin", "pos"], ["k_rot"],
                         num_heads=HKV, interleaved=1),
        helper.make_node("Attention", ["q_rot", "k_rot", "v", "mask"], ["attended"],
                         q_num_heads=HQ, kv_num_heads=HKV, is_causal=1),
        helper.make_node("ReduceMean", ["attended", "seq_axis"], ["pooled"], keepdims=0),
        helper.make_node("MatMul", ["pooled", "wo"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes, "attention_classifier",
        [helper.make_tensor_value_info("x", t, ["N", S, E]),
         helper.make_tensor_value_info("pos", TensorProto.INT64, ["N", S]),
         helper.make_tensor_value_info("mask", TensorProto.BOOL, [S, S])],
        [helper.make_tensor_value_info("logits", t, ["N", C])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    return m


def cross_entropy(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(labels)), labels].mean())


def reference_loss(weights, feeds, labels):
    m = make_model(np.float64, weights)
    (logits,) = ReferenceEvaluator(m).run(None, feeds)
    return cross_entropy(logits, labels)


def tool(args, *cmd):
    p = subprocess.run([os.path.join(args.bin, cmd[0]), *cmd[1:]], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def train(args, work, model_path, feeds, flags, run_flags, compile_plan=True):
    plan = os.path.join(work, "model.plan")
    if compile_plan:
        tool(args, "a800c", model_path, "-o", plan, "--precision=fp32", "--loss=cross_entropy",
             "--batch=16", *flags)
    inputs = []
    for k, v in feeds.items():
        np.save(os.path.join(work, f"{k}.npy"), v)
        inputs += ["--input", f"{k}={work}/{k}.npy"]
    metrics = os.path.join(work, "metrics.jsonl")
    ckpt = os.path.join(work, "out.safetensors")
    tool(args, "a800c-run", plan, *inputs, f"--metrics={metrics}", f"--checkpoint={ckpt}",
         *run_flags)
    from safetensors.numpy import load_file
    with open(metrics) as f:
        return [json.loads(line)["loss"] for line in f], load_file(ckpt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    weights = {n: (rng.standard_normal(s) * 0.5).astype(np.float32) for n, s in WEIGHTS.items()}
    angles = np.arange(MAX_POS)[:, None] / 10000 ** (np.arange(D // 2)[None, :] * 2 / D)
    weights["cos"] = np.cos(angles).astype(np.float32)
    weights["sin"] = np.sin(angles).astype(np.float32)
    n = 64
    x = rng.standard_normal((n, S, E)).astype(np.float32)
    pos = np.stack([rng.permutation(MAX_POS)[:S] for _ in range(n)]).astype(np.int64)
    mask = np.ones((S, S), bool)
    mask[:, 0] = False  # key 0 is padding: query 0 (causal: only key 0) attends to nothing
    labels = rng.integers(0, C, n).astype(np.int64)
    feeds = {"x": x, "pos": pos, "labels": labels}

    with tempfile.TemporaryDirectory(prefix="a8_e2e_attention_") as work:
        model_path = os.path.join(work, "model.onnx")
        # The mask is a constant of the model (a800c takes per-step inputs along the batch).
        model = make_model(np.float32, weights)
        model.graph.input.pop()
        model.graph.initializer.append(numpy_helper.from_array(mask, "mask"))
        onnx.save(model, model_path)

        # 1 and 2: one SGD step with lr 1 on the first 16 samples.
        losses, after = train(args, work, model_path, feeds, ["--optimizer=sgd", "--lr=1"],
                              ["--steps=1"])
        batch = {"x": x[:16].astype(np.float64), "pos": pos[:16], "mask": mask}
        w64 = {k: v.astype(np.float64) for k, v in weights.items()}
        ref = reference_loss(w64, batch, labels[:16])
        assert abs(losses[0] - ref) <= 1e-5 * (1 + abs(ref)), (losses[0], ref)
        eps, worst, checked, largest = 1e-5, 0.0, 0, 0.0
        for name, w in w64.items():
            got = (weights[name].astype(np.float64) - after[name].astype(np.float64))
            for idx in np.ndindex(w.shape):
                plus, minus = dict(w64), dict(w64)
                plus[name], minus[name] = w.copy(), w.copy()
                plus[name][idx] += eps
                minus[name][idx] -= eps
                numeric = (reference_loss(plus, batch, labels[:16]) -
                           reference_loss(minus, batch, labels[:16])) / (2 * eps)
                err = abs(got[idx] - numeric)
                largest = max(largest, abs(numeric))
                worst = max(worst, err / (1e-4 + 1e-3 * abs(numeric)))
                assert err <= 1e-4 + 1e-3 * abs(numeric), \
                    f"d(loss)/d({name}){list(idx)}: a800c {got[idx]}, finite differences {numeric}"
                checked += 1
        assert largest > 1e-2, "the gradients are all about zero: the check would be vacuous"
        print(f"gradients: {checked} weight elements match finite differences (largest |g| "
              f"{largest:.3g}, worst error {worst:.2g} of the bound |err| <= 1e-4 + 1e-3 |g|); "
              f"step-1 loss {losses[0]:.6f} vs reference {ref:.6f}")

        # The CUDA backend's kernel code on the host takes the same step.
        emu_losses, emu = train(args, work, model_path, feeds, [],
                                ["--steps=1", "--backend=cuda-emu"], compile_plan=False)
        worst_emu = max(float(np.max(np.abs(emu[k].astype(np.float64) - after[k])))
                        for k in weights)
        assert worst_emu <= 1e-6 and abs(emu_losses[0] - losses[0]) <= 1e-6, \
            (worst_emu, emu_losses[0], losses[0])
        print(f"cuda-emu: the same step, max |w_emu - w_cpu| = {worst_emu:.2g}")

        # 3: AdamW memorises the 64 samples.
        epochs = 60
        losses, _ = train(args, work, model_path, feeds, ["--optimizer=adamw", "--lr=1e-2"],
                          [f"--epochs={epochs}", "--shuffle"])
        per_epoch = len(losses) // epochs
        first, last = np.mean(losses[:per_epoch]), np.mean(losses[-per_epoch:])
        print(f"training: mean loss {first:.4f} (first epoch) -> {last:.4f} (epoch {epochs})")
        assert last <= 0.25 * first, "the loss did not fall to a quarter"
    print("attention_training: ok")


if __name__ == "__main__":
    main()
