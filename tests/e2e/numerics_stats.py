#!/usr/bin/env python3
"""a800c-run --numerics-stats end to end (issue 16): values checked, not only the format.

    python3 tests/e2e/numerics_stats.py --bin build/bin

The model (amp without loss scaling, batch 8, 4 classes):
    logits = enc/in(x @ enc.w_in) + tiny/mul(tiny.b * 1e-5) + planted/in(z @ planted.w)
- tiny.b's gradient is 1e-5 times the batch sum of the logits' gradient: a few 1e-6, which FP16
  holds only as subnormals (or zero): the planted tiny gradient;
- z is all zero (--input z=zeros.npy), so planted.w changes nothing and its gradient is zero;
  planted.w holds known values: a quarter 1e-9 (zero in FP16), a quarter 1e-6 (subnormal), a
  quarter 4e4 (within 2x of 65504) and a quarter 0.5, which SGD leaves as they are.

Checked, for the steps sampled with --steps=4 --every=2 (1, 2 and 4):
- one line each, with the scale the step ran with (1: no loss scaling);
- params: the shares of every group after step 4 equal those numpy computes from the checkpoint
  saved at step 4 (the FP32 masters, classified as FP16 would hold them), and planted's are the
  planted quarters at every step;
- gradients: tiny's are all subnormal or zero in FP16 (some subnormal), planted's all zero,
  enc's mostly normal;
- activations: the planted group (z @ w) is all zero, the tiny group (1e-5 * b) all subnormal;
- headroom_log2 == log2(65504 / (scale * grad_max_abs)).
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ARGS = None


def tool(name, *args):
    p = subprocess.run([os.path.join(ARGS.bin, name), *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{name} {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout


def make_model(path):
    rng = np.random.default_rng(0)
    w_in = (rng.standard_normal((16, 4)) / 4).astype(np.float32)
    planted = np.full((16, 4), 0.5, np.float32)
    flat = planted.reshape(-1)
    flat[0:16] = 1e-9
    flat[16:32] = 1e-6
    flat[32:48] = 4e4
    c = numpy_helper.from_array(np.array(1e-5, np.float32), "c")
    nodes = [
        helper.make_node("MatMul", ["x", "enc.w_in"], ["a"], name="enc/in"),
        helper.make_node("Constant", [], ["c"], name="tiny/const", value=c),
        helper.make_node("Mul", ["tiny.b", "c"], ["t"], name="tiny/mul"),
        helper.make_node("MatMul", ["z", "planted.w"], ["p"], name="planted/in"),
        helper.make_node("Add", ["a", "t"], ["at"], name="sum/first"),
        helper.make_node("Add", ["at", "p"], ["logits"], name="sum/second"),
    ]
    graph = helper.make_graph(
        nodes, "tiny_grad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [8, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [8, 4])],
        [numpy_helper.from_array(w_in, "enc.w_in"),
         numpy_helper.from_array(np.ones(4, np.float32), "tiny.b"),
         numpy_helper.from_array(planted, "planted.w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def fp16_shares(values):
    a = np.abs(values.astype(np.float64))
    n = a.size
    near = np.count_nonzero(~(a < 32752.0))
    zero = np.count_nonzero(a <= 2.0 ** -25)
    sub = np.count_nonzero((a > 2.0 ** -25) & (a < 2.0 ** -14))
    return {"values": n, "zero": zero / n, "subnormal": sub / n, "near_overflow": near / n}


def read_checkpoint(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], np.float32).reshape(t["shape"])
    return out


def close(a, b, what):
    if abs(a - b) > 1e-12:
        sys.exit(f"{what}: {a} != {b}")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ARGS = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model, plan = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "m.plan")
        stats, ckpt = os.path.join(tmp, "stats.jsonl"), os.path.join(tmp, "c.safetensors")
        make_model(model)
        zeros = os.path.join(tmp, "zeros.npy")
        np.save(zeros, np.zeros((16, 16), np.float32))
        tool("a800c", model, "-o", plan, "--loss=cross_entropy", "--optimizer=sgd", "--lr=1e-3",
             "--precision=amp", "--loss-scale=none")
        tool("a800c-run", plan, "--synthetic", f"--input=z={zeros}", "--steps=4",
             f"--numerics-stats={stats}", "--every=2", f"--checkpoint={ckpt}")
        with open(stats) as f:
            lines = [json.loads(line) for line in f]
        if [l["step"] for l in lines] != [1, 2, 4]:
            sys.exit(f"sampled steps {[l['step'] for l in lines]}, expected [1, 2, 4]")
        first, last = lines[0], lines[-1]
        if first["scale"] != 1:
            sys.exit(f"step 1 ran with scale {first['scale']}, expected 1")
        weights = read_checkpoint(ckpt)
        for group, name in (("enc", "enc.w_in"), ("tiny", "tiny.b"), ("planted", "planted.w")):
            want = fp16_shares(weights[name])
            got = last["params"][group]
            for key in ("values", "zero", "subnormal", "near_overflow"):
                close(got[key], want[key], f"step 4 params[{group}][{key}]")
        for l in lines:
            planted = l["params"]["planted"]
            for key, share in (("zero", 0.25), ("subnormal", 0.25), ("near_overflow", 0.25),
                               ("grad_zero", 1.0)):
                close(planted[key], share, f"step {l['step']} params[planted][{key}]")
            tiny, enc = l["params"]["tiny"], l["params"]["enc"]
            if tiny["grad_subnormal"] + tiny["grad_zero"] != 1.0 or tiny["grad_subnormal"] == 0:
                sys.exit(f"step {l['step']}: tiny.b's gradient should be subnormal in FP16: {tiny}")
            if enc["grad_subnormal"] + enc["grad_zero"] > 0.5:
                sys.exit(f"step {l['step']}: enc's gradient should be mostly normal: {enc}")
            acts = l["activations"]
            close(acts["planted"]["zero"], 1.0, "activations[planted][zero]")
            close(acts["tiny"]["subnormal"], 1.0, "activations[tiny][subnormal]")
        for l in lines:
            want = math.log2(65504 / (l["scale"] * l["grad_max_abs"]))
            if abs(l["headroom_log2"] - want) > 1e-9:
                sys.exit(f"headroom_log2 {l['headroom_log2']} != {want}")
        print(f"ok: {len(lines)} lines; step 1: tiny {first['params']['tiny']}; "
              f"headroom {first['headroom_log2']:.2f} bits")


if __name__ == "__main__":
    main()
