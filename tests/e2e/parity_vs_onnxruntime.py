#!/usr/bin/env python3
"""End-to-end parity: a800c's CPU backend against onnxruntime, in fp32.

For each model (the three examples build/models/{mlp,cnn,bert}.onnx and the onnx-light-style
models built here with the onnx Python API: a LeNet-like conv net with AveragePool, a GPT-2-style
block with a causal mask (Trilu + Where) and a fused QKV projection cut by Split, and a
data-movement model with Concat/Slice/Gather/Expand/Pad):
  1. compile:  a800c MODEL -o m.plan --batch=B   (plus --precision=fp32 where a800c has it)
  2. write seeded random inputs (one batch: the array's first dim is B) as .npy files,
  3. run:      a800c-run m.plan --backend=cpu --steps=1 --input NAME=FILE.npy ... --output-dir D
  4. run the original model in onnxruntime (CPU) on the same arrays,
  5. compare every graph output; and run step 3 again with --poison-freed, which must give
     bit-identical outputs (no buffer is read after its arena bytes were reused).

Metric (per output tensor, computed in float64):
    err = max_i |a800c_i - ort_i| / max(max_i |ort_i|, 1e-3)
i.e. the largest absolute difference relative to the largest reference magnitude (floored at
1e-3 so an all-near-zero output is judged by an absolute 1e-8). A float output passes when
err <= 1e-5; integer and bool outputs must be equal; shapes and dtypes must be equal. The
element-wise error max_i |d_i| / max(|ort_i|, 1e-3) is printed too, for information only.

    python3 tests/e2e/parity_vs_onnxruntime.py --a800c build/bin/a800c \
        --a800c-run build/bin/a800c-run --models build/models [--work DIR] [-k NAME]

Exit 0 when every model passes, 1 otherwise (a model that fails to compile or run is a failure).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from graph_inputs import feed_inputs  # noqa: E402

ort.set_default_logger_severity(3)
TOL = 1e-5
OPSET = [helper.make_opsetid("", 17)]


def _init(rng, name, shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def lenet(seed=1):
    """LeNet-like: Conv/Relu/AveragePool x2, Flatten, Gemm/Relu, Gemm, Softmax; x[N,1,16,16]."""
    rng = np.random.default_rng(seed)
    inits = [_init(rng, "c1.w", [4, 1, 5, 5]), _init(rng, "c1.b", [4]),
             _init(rng, "c2.w", [8, 4, 3, 3]), _init(rng, "c2.b", [8]),
             _init(rng, "f1.w", [32, 8 * 3 * 3], 0.1), _init(rng, "f1.b", [32]),
             _init(rng, "f2.w", [10, 32], 0.2), _init(rng, "f2.b", [10])]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "c1.w", "c1.b"], ["c1"], pads=[2, 2, 2, 2], name="conv1"),
        n("Relu", ["c1"], ["r1"], name="relu1"),
        n("AveragePool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        n("Conv", ["p1", "c2.w", "c2.b"], ["c2"], name="conv2"),
        n("Relu", ["c2"], ["r2"], name="relu2"),
        n("AveragePool", ["r2"], ["p2"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
          count_include_pad=0, name="pool2"),
        n("Flatten", ["p2"], ["f"], axis=1, name="flatten"),
        n("Gemm", ["f", "f1.w", "f1.b"], ["h"], transB=1, name="fc1"),
        n("Relu", ["h"], ["hr"], name="relu3"),
        n("Gemm", ["hr", "f2.w", "f2.b"], ["logits"], transB=1, name="fc2"),
        n("Softmax", ["logits"], ["probs"], axis=-1, name="softmax"),
    ]
    g = helper.make_graph(
        nodes, "lenet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10]),
         helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])], inits)
    return helper.make_model(g, opset_imports=OPSET, producer_name="parity")


def gpt2_block(seed=2, t=8, c=16, heads=2):
    """GPT-2-style pre-LN block: LN, fused QKV MatMul + Split, causal mask via Trilu + Where,
    Softmax attention, output projection, residual, LN, tanh-GELU MLP, residual; x[N,T,C]."""
    rng = np.random.default_rng(seed)
    d = c // heads
    inits = [
        numpy_helper.from_array((1 + 0.1 * rng.standard_normal(c)).astype(np.float32), "ln1.g"),
        _init(rng, "ln1.b", [c], 0.1), _init(rng, "qkv.w", [c, 3 * c]),
        _init(rng, "qkv.b", [3 * c], 0.1), _init(rng, "proj.w", [c, c]), _init(rng, "proj.b", [c]),
        numpy_helper.from_array((1 + 0.1 * rng.standard_normal(c)).astype(np.float32), "ln2.g"),
        _init(rng, "ln2.b", [c], 0.1), _init(rng, "fc.w", [c, 4 * c]), _init(rng, "fc.b", [4 * c]),
        _init(rng, "out.w", [4 * c, c]), _init(rng, "out.b", [c]),
        _const("split", [c, c, c]), _const("heads_shape", [0, 0, heads, d]),
        _const("merge_shape", [0, 0, c]),
        numpy_helper.from_array(np.ones((t, t), np.float32), "ones"),
        numpy_helper.from_array(np.array(1.0 / np.sqrt(d), np.float32), "scale"),
        numpy_helper.from_array(np.array(-1e9, np.float32), "neg"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(3.0, np.float32), "three"),
        numpy_helper.from_array(np.array(0.044715, np.float32), "k"),
        numpy_helper.from_array(np.array(np.sqrt(2 / np.pi), np.float32), "sqrt2pi"),
    ]
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln1.g", "ln1.b"], ["ln1"], axis=-1, epsilon=1e-5,
          name="ln1"),
        n("MatMul", ["ln1", "qkv.w"], ["qkv0"], name="qkv_mm"),
        n("Add", ["qkv0", "qkv.b"], ["qkv"], name="qkv_bias"),
        n("Split", ["qkv", "split"], ["q0", "k0", "v0"], axis=-1, name="split_qkv"),
        n("Reshape", ["q0", "heads_shape"], ["q1"], name="q_heads"),
        n("Reshape", ["k0", "heads_shape"], ["k1"], name="k_heads"),
        n("Reshape", ["v0", "heads_shape"], ["v1"], name="v_heads"),
        n("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3], name="q_t"),
        n("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1], name="k_t"),
        n("Transpose", ["v1"], ["v"], perm=[0, 2, 1, 3], name="v_t"),
        n("MatMul", ["q", "kt"], ["s0"], name="scores"),
        n("Mul", ["s0", "scale"], ["s1"], name="scale"),
        n("Trilu", ["ones"], ["tri"], upper=0, name="causal_tri"),
        n("Cast", ["tri"], ["mask"], to=TensorProto.BOOL, name="causal_bool"),
        n("Where", ["mask", "s1", "neg"], ["s2"], name="causal_where"),
        n("Softmax", ["s2"], ["att"], axis=-1, name="softmax"),
        n("MatMul", ["att", "v"], ["o0"], name="att_v"),
        n("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3], name="o_t"),
        n("Reshape", ["o1", "merge_shape"], ["o2"], name="merge_heads"),
        n("MatMul", ["o2", "proj.w"], ["o3"], name="proj_mm"),
        n("Add", ["o3", "proj.b"], ["o4"], name="proj_bias"),
        n("Add", ["x", "o4"], ["r1"], name="residual1"),
        n("LayerNormalization", ["r1", "ln2.g", "ln2.b"], ["ln2"], axis=-1, epsilon=1e-5,
          name="ln2"),
        n("MatMul", ["ln2", "fc.w"], ["f0"], name="fc_mm"),
        n("Add", ["f0", "fc.b"], ["f1"], name="fc_bias"),
        # gelu_tanh(f) = 0.5 f (1 + tanh(sqrt(2/pi) (f + 0.044715 f^3)))
        n("Pow", ["f1", "three"], ["g0"], name="gelu_pow"),
        n("Mul", ["g0", "k"], ["g1"], name="gelu_k"),
        n("Add", ["f1", "g1"], ["g2"], name="gelu_add"),
        n("Mul", ["g2", "sqrt2pi"], ["g3"], name="gelu_scale"),
        n("Tanh", ["g3"], ["g4"], name="gelu_tanh"),
        n("Add", ["g4", "one"], ["g5"], name="gelu_one"),
        n("Mul", ["f1", "g5"], ["g6"], name="gelu_mul"),
        n("Mul", ["g6", "half"], ["g7"], name="gelu_half"),
        n("MatMul", ["g7", "out.w"], ["m0"], name="out_mm"),
        n("Add", ["m0", "out.b"], ["m1"], name="out_bias"),
        n("Add", ["r1", "m1"], ["y"], name="residual2"),
    ]
    g = helper.make_graph(
        nodes, "gpt2_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", t, c])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", t, c])], inits)
    return helper.make_model(g, opset_imports=OPSET, producer_name="parity")


def data_movement(seed=3):
    """Concat, Slice, Gather, Expand, Pad (and an Add to mix them); x[N,4,6]."""
    rng = np.random.default_rng(seed)
    inits = [_const("starts", [1]), _const("ends", [5]), _const("axes", [2]),
             _const("pads", [0, 0, 1, 0, 0, 1]),
             numpy_helper.from_array(np.array(0.5, np.float32), "pad_value"),
             _const("idx", [3, 0, 7, 2, 2]),
             _init(rng, "col", [5, 1], 1.0), _const("expand_shape", [5, 6])]
    n = helper.make_node
    nodes = [
        n("Slice", ["x", "starts", "ends", "axes"], ["s"], name="slice"),
        n("Pad", ["s", "pads", "pad_value"], ["p"], mode="constant", name="pad"),
        n("Concat", ["x", "p"], ["c"], axis=1, name="concat"),
        n("Gather", ["c", "idx"], ["g"], axis=1, name="gather"),
        n("Expand", ["col", "expand_shape"], ["e"], name="expand"),
        n("Add", ["g", "e"], ["y"], name="add"),
    ]
    g = helper.make_graph(
        nodes, "data_movement",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5, 6]),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, ["N", 8, 6])], inits)
    return helper.make_model(g, opset_imports=OPSET, producer_name="parity")


BUILT = {"lenet": (lenet, 4), "gpt2_block": (gpt2_block, 3), "data_movement": (data_movement, 5)}
EXAMPLES = {"mlp": 32, "cnn": 32, "bert": 32}


def random_inputs(model, batch, seed):
    """Seeded random arrays for every graph input that is not an initializer."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape, dtype in feed_inputs(model, batch):
        if name == "input_ids":
            a = rng.integers(0, 1000, size=shape, dtype=np.int64)
        elif name == "attention_mask":
            a = (rng.random(shape) < 0.8).astype(dtype)
            a[..., 0] = 1
        elif np.issubdtype(dtype, np.floating):
            a = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            a = rng.random(shape) < 0.5
        else:
            a = rng.integers(0, 4, size=shape).astype(dtype)
        feeds[name] = a
    return feeds


def compile_flags(a800c):
    h = subprocess.run([a800c, "--help"], capture_output=True, text=True).stdout
    return ["--precision=fp32"] if "--precision" in h else []


def check(name, model_path, batch, args, work):
    """Returns (ok, lines)."""
    model = onnx.load(model_path)
    plan = os.path.join(work, name + ".plan")
    cmd = [args.a800c, model_path, "-o", plan, f"--batch={batch}"] + compile_flags(args.a800c)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return False, [f"compile failed (exit {r.returncode}): {' '.join(cmd)}", r.stderr.strip()]
    feeds = random_inputs(model, batch, seed=args.seed)
    outdir = os.path.join(work, name + ".out")
    os.makedirs(outdir, exist_ok=True)
    cmd = [args.a800c_run, plan, "--backend=cpu", "--steps=1", f"--seed={args.seed}",
           f"--output-dir={outdir}"]
    for k, v in feeds.items():
        p = os.path.join(work, f"{name}.{k}.npy")
        np.save(p, v)
        cmd += ["--input", f"{k}={p}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return False, [f"a800c-run failed (exit {r.returncode}): {' '.join(cmd)}",
                       r.stderr.strip()]
    # The same run with freed arena bytes poisoned (NaN) must give bit-identical outputs: a
    # buffer read after its bytes were reused would show up here.
    poisoned = None
    if "--poison-freed" in subprocess.run([args.a800c_run, "--help"], capture_output=True,
                                          text=True).stdout:
        poisoned = outdir + ".poisoned"
        os.makedirs(poisoned, exist_ok=True)
        pcmd = [c if not c.startswith("--output-dir=") else f"--output-dir={poisoned}"
                for c in cmd] + ["--poison-freed"]
        r = subprocess.run(pcmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            return False, [f"a800c-run --poison-freed failed (exit {r.returncode})",
                           r.stderr.strip()]
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    refs = sess.run(out_names, feeds)
    ok, lines = True, []
    for o, ref in zip(out_names, refs):
        path = os.path.join(outdir, o + ".npy")
        if not os.path.exists(path):
            return False, lines + [f"{o}: a800c-run wrote no {path}"]
        got = np.load(path)
        if poisoned is not None:
            pgot = np.load(os.path.join(poisoned, o + ".npy"))
            if pgot.tobytes() != got.tobytes():
                ok = False
                lines.append(f"{o}: differs when freed arena bytes are poisoned (--poison-freed)")
        if got.shape != ref.shape or got.dtype != ref.dtype:
            ok = False
            lines.append(f"{o}: a800c {got.dtype}{list(got.shape)} vs onnxruntime "
                         f"{ref.dtype}{list(ref.shape)}")
            continue
        if ref.dtype.kind != "f":
            same = np.array_equal(got, ref)
            ok &= same
            lines.append(f"{o}: {ref.dtype}{list(ref.shape)} {'equal' if same else 'DIFFERENT'}")
            continue
        g64, r64 = got.astype(np.float64), ref.astype(np.float64)
        diff = np.abs(g64 - r64)
        err = float(diff.max() / max(float(np.abs(r64).max()), 1e-3)) if diff.size else 0.0
        elem = float((diff / np.maximum(np.abs(r64), 1e-3)).max()) if diff.size else 0.0
        if not np.isfinite(err):
            err = float("inf")
        good = err <= TOL
        ok &= good
        lines.append(f"{o}: {ref.dtype}{list(ref.shape)} err {err:.3e} (element-wise {elem:.3e}) "
                     f"{'ok' if good else 'FAIL (> %g)' % TOL}")
    return ok, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a800c", required=True)
    ap.add_argument("--a800c-run", dest="a800c_run", required=True)
    ap.add_argument("--models", required=True, help="folder with mlp.onnx, cnn.onnx, bert.onnx")
    ap.add_argument("--work", help="keep plans, inputs and outputs here (default: a temp dir)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("-k", action="append", help="only these models (repeatable)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        todo = []
        for name, batch in EXAMPLES.items():
            todo.append((name, os.path.join(args.models, name + ".onnx"), batch))
        for name, (build, batch) in BUILT.items():
            path = os.path.join(work, name + ".onnx")
            m = build()
            onnx.checker.check_model(m, full_check=True)
            onnx.save(m, path)
            todo.append((name, path, batch))
        failed, ran = [], 0
        for name, path, batch in todo:
            if args.k and name not in args.k:
                continue
            ran += 1
            try:
                ok, lines = check(name, path, batch, args, work)
            except Exception as e:  # a harness error is a failure, never a pass
                ok, lines = False, [f"harness: {type(e).__name__}: {e}"]
            print(f"{'PASS' if ok else 'FAIL'}: {name} (batch {batch})")
            for l in lines:
                print("    " + l)
            if not ok:
                failed.append(name)
        print(f"e2e parity: {ran - len(failed)} passed, {len(failed)} failed"
              + (f" ({', '.join(failed)})" if failed else ""))
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
