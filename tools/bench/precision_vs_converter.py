#!/usr/bin/env python3
"""Mixed precision on forward graphs: a800c amp against onnxconverter-common (issue 5).

For each model (BUILD/models/{mlp,cnn,bert,bert12}.onnx; bert12 is made with
models/make_models.py --bert-layers 12 when missing or older than the script) at batch B (default 8), converts the forward
graph with:
  a800c amp    a800c MODEL --precision=amp  --emit=onnx --batch=B -o OUT
  a800c fp16   a800c MODEL --precision=fp16 --emit=onnx --batch=B -o OUT   (extra row)
  occ fp16     onnxconverter_common.float16.convert_float_to_float16(m, keep_io_types=True)
  occ auto-mp  onnxconverter_common.auto_mixed_precision.auto_convert_mixed_precision(
                   m, feed, rtol=RTOL, atol=ATOL, keep_io_types=True)
               one row per RTOL/ATOL pair of --amp-tols (default 0.01/0.001, the tolerance of
               its docstring, where it converts every node of these models, and 0.001/0.0001,
               where it keeps some in fp32); it runs in a child process and is skipped with a
               printed reason after --amp-timeout seconds (its search at 0.001/0.0001 on bert12
               ran 6 min on this 2-core VM and then failed its own final validation).
The peers get the original model with its dynamic batch dim fixed to B (and names given to
unnamed nodes: auto_mixed_precision blocks nodes by name, so unnamed nodes would all be blocked
or converted together). Then, per converted model:
  casts        Cast nodes in total, split into casts of activations and casts of weights (a cast
               whose input is an initializer or a Constant node's output);
  fp16 share   share of the GEMM/conv FLOPs (MatMul/Gemm 2*M*N*K, Conv
               2*N*Cout*outHW*Cin/group*kHW, from shapes after onnx.shape_inference, and where
               that leaves a shape unknown, from an onnxruntime run of the same model) in nodes
               whose first input is float16;
  error        max |y - y_fp32| over all outputs and --batches input batches against
               onnxruntime (CPU) on the fp32 original model, and that divided by max |y_fp32|;
  ort          whether onnxruntime loads and runs the model.
Inputs are seeded (batch i uses seed SEED+i): floats N(0,1), integer ids uniform in [0, vocab)
where vocab is the first dim of the Gather table that reads them, masks (inputs named *mask*)
ones with a random tail of zeros in each row (at most half the row). Prints a markdown table,
per model the cast ratios a800c amp / peer, the issue's goals, and how many GEMM/conv nodes
onnxruntime's CPU provider really runs on fp16 data (it computes the others in fp32 between
Casts it inserts itself, so the error column measures fp16 storage, not fp16 arithmetic).

    python3 tools/bench/precision_vs_converter.py [--build build] [--models mlp,cnn,bert,bert12]
        [--batch 8] [--seed 0] [--batches 4] [--amp-tols 0.01:0.001,0.001:0.0001]
        [--amp-timeout 60] [--details]
"""
import argparse
import collections
import contextlib
import copy
import io
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from graph_inputs import feed_inputs  # noqa: E402

GEMM_OPS = ("MatMul", "Gemm", "Conv")


def fix_batch(model, batch):
    """A copy of `model` with the first dim of every graph input/output fixed to `batch` where it
    is symbolic, and a name for every unnamed node."""
    m = copy.deepcopy(model)
    for vi in list(m.graph.input) + list(m.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if len(dims) and not dims[0].HasField("dim_value"):
            dims[0].Clear()
            dims[0].dim_value = batch
    used = {n.name for n in m.graph.node if n.name}
    for i, n in enumerate(m.graph.node):
        if not n.name:
            name = f"{n.op_type}_{i}"
            while name in used:
                name += "_"
            n.name = name
            used.add(name)
    return m


def make_feed(model, batch, seed):
    """Seeded inputs for every graph input that is not an initializer."""
    rng = np.random.default_rng(seed)
    inits = {t.name: t for t in model.graph.initializer}
    vocab = {}
    for n in model.graph.node:
        if n.op_type == "Gather" and n.input[0] in inits and len(n.input) > 1:
            vocab[n.input[1]] = inits[n.input[0]].dims[0]
    feed = {}
    for name, shape, dtype in feed_inputs(model, batch):
        if np.issubdtype(dtype, np.floating):
            feed[name] = rng.standard_normal(shape).astype(dtype)
        elif "mask" in name.lower():
            mask = np.ones(shape, dtype)
            if len(shape) == 2 and shape[1] > 1:
                for row in range(shape[0]):
                    zeros = int(rng.integers(0, shape[1] // 2 + 1))
                    mask[row, shape[1] - zeros:] = 0
            feed[name] = mask
        else:
            high = vocab.get(name, 2)
            feed[name] = rng.integers(0, high, size=shape).astype(dtype)
    return feed


def value_types(model):
    """name -> (elem_type, shape or None) after ONNX shape inference."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # An unknown domain: use what the model declares.
        inferred = model
    g = inferred.graph
    out = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        shape = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            shape = None if None in dims else dims
        out[vi.name] = (tt.elem_type, shape)
    for t in g.initializer:
        out[t.name] = (t.data_type, list(t.dims))
    return g, out


def gemm_flops(node, types):
    """FLOPs of a MatMul/Gemm/Conv node, or None when a shape is unknown."""
    def shape(i):
        return types.get(node.input[i], (0, None))[1] if i < len(node.input) else None
    out = types.get(node.output[0], (0, None))[1]
    a, b = shape(0), shape(1)
    if out is None or a is None or b is None:
        return None
    if node.op_type == "MatMul":
        return 2 * int(np.prod(out, dtype=np.int64)) * a[-1]
    if node.op_type == "Gemm":
        trans_a = next((at.i for at in node.attribute if at.name == "transA"), 0)
        return 2 * int(np.prod(out, dtype=np.int64)) * (a[0] if trans_a else a[1])
    # Conv: W is [Cout, Cin/group, k...], so per output element Cin/group * prod(k) MACs.
    return 2 * int(np.prod(out, dtype=np.int64)) * int(np.prod(b[1:], dtype=np.int64))


def ort_types(model, feed):
    """name -> (elem_type, shape) of every node output, from an onnxruntime run of the model
    with all of them made graph outputs: for the shapes that ONNX shape inference leaves
    unknown (a Reshape whose target comes from a Shape->Gather->Concat subgraph)."""
    m = copy.deepcopy(model)
    del m.graph.output[:]
    names = [o for n in m.graph.node for o in n.output if o]
    for name in names:
        m.graph.output.add().name = name
    values = run_ort(m.SerializeToString(), feed)
    return {name: (onnx.helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
            for name, v in zip(names, values)}


def analyse(model, feed):
    """Cast counts and GEMM/conv FLOP split of a model."""
    g, types = value_types(model)
    if any(n.op_type in GEMM_OPS and gemm_flops(n, types) is None for n in g.node):
        try:
            types = {**ort_types(model, feed), **{k: v for k, v in types.items()
                                                 if v[1] is not None}}
        except Exception:  # Keep the unknown ones unknown; the table marks them.
            pass
    weights = {t.name for t in g.initializer}
    weights |= {o for n in g.node if n.op_type == "Constant" for o in n.output}
    casts = [n for n in g.node if n.op_type == "Cast"]
    weight_casts = sum(1 for n in casts if n.input[0] in weights)
    total = fp16 = 0
    unknown = 0
    for n in g.node:
        if n.op_type not in GEMM_OPS:
            continue
        f = gemm_flops(n, types)
        if f is None:
            unknown += 1
            continue
        total += f
        if types.get(n.input[0], (0, None))[0] == TensorProto.FLOAT16:
            fp16 += f
    return {"casts": len(casts), "act_casts": len(casts) - weight_casts,
            "weight_casts": weight_casts, "flops": total, "fp16_flops": fp16,
            "unknown_flops": unknown}


def run_ort(model_bytes, feed):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


def ort_fp16_gemms(model_bytes, work):
    """(GEMM/conv nodes that onnxruntime's CPU provider runs on float16 inputs, all GEMM/conv
    nodes), from the graph it saves at ORT_DISABLE_ALL: it still inserts Casts to float around
    every node that has no float16 CPU kernel, so this says what the error column measures."""
    path = os.path.join(work, "ort_saved.onnx")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.optimized_model_filepath = path
    ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    g, types = value_types(onnx.load(path))
    gemms = [n for n in g.node if n.op_type in GEMM_OPS]
    fp16 = sum(1 for n in gemms if types.get(n.input[0], (0, None))[0] == TensorProto.FLOAT16)
    return fp16, len(gemms)


def run_a800c(a800c, model_path, precision, batch, out_path):
    cmd = [a800c, model_path, f"--precision={precision}", "--emit=onnx", f"--batch={batch}",
           "-o", out_path]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"a800c exit {r.returncode}: {r.stderr.strip()[-300:]}")
    return onnx.load(out_path)


def occ_fp16(model):
    from onnxconverter_common import float16
    with warnings.catch_warnings():  # "-10000.0 will be truncated": the mask fill, exact.
        warnings.simplefilter("ignore")
        return float16.convert_float_to_float16(copy.deepcopy(model), keep_io_types=True)


def _auto_mp_child(model_bytes, feed, rtol, atol, out_path):
    from onnxconverter_common import auto_mixed_precision
    model = onnx.load_from_string(model_bytes)
    # It prints every attempt; keep the table readable. Its failure goes to the parent.
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            converted = auto_mixed_precision.auto_convert_mixed_precision(
                model, feed, rtol=rtol, atol=atol, keep_io_types=True)
        onnx.save(converted, out_path)
    except Exception as e:
        with open(out_path + ".err", "w") as f:
            f.write(f"{type(e).__name__}: {e}")


def occ_auto_mp(model, feed, rtol, atol, timeout, out_path):
    """Runs auto_convert_mixed_precision in a child process so that a slow search can be cut
    off at `timeout` seconds."""
    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=_auto_mp_child,
                    args=(model.SerializeToString(), feed, rtol, atol, out_path))
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.terminate()
        p.join()
        raise TimeoutError(f"skipped: > {timeout:.0f} s")
    if not os.path.exists(out_path):
        why = f"exit {p.exitcode}"
        if os.path.exists(out_path + ".err"):
            why = open(out_path + ".err").read().splitlines()[0][:100]
        raise RuntimeError(f"auto_convert_mixed_precision failed ({why})")
    return onnx.load(out_path)


DTYPE_NAMES = {TensorProto.FLOAT: "f32", TensorProto.FLOAT16: "f16", TensorProto.BFLOAT16: "bf16",
               TensorProto.INT64: "i64", TensorProto.INT32: "i32", TensorProto.BOOL: "bool"}


def cast_details(model):
    """One line per Cast of an a800c model (types, producer -> Cast -> consumers), and flags for
    casts that look removable: a cast of a cast, a round trip, two casts of one value to one
    type, a cast of a constant that is not a trained weight."""
    g, types = value_types(model)
    producer = {o: n for n in g.node for o in n.output}
    consumers = collections.defaultdict(list)
    for n in g.node:
        for i in n.input:
            consumers[i].append(n)
    inits = {t.name: t for t in g.initializer}
    lines = []
    seen = collections.Counter()
    for n in g.node:
        if n.op_type != "Cast":
            continue
        src = n.input[0]
        to = next(a.i for a in n.attribute if a.name == "to")
        seen[(src, to)] += 1
        frm = DTYPE_NAMES.get(types.get(src, (0, None))[0], "?")
        prod = "init" if src in inits else producer[src].op_type if src in producer else "input"
        cons = ",".join(c.op_type for c in consumers[n.output[0]]) or "output"
        flags = []
        if prod == "Cast":
            flags.append("cast of a cast")
        if any(c.op_type == "Cast" for c in consumers[n.output[0]]):
            flags.append("feeds a cast")
        if src in inits and len(inits[src].dims) == 0:
            flags.append("scalar constant")
        flag = f"  <- {', '.join(flags)}" if flags else ""
        lines.append(f"    {frm}->{DTYPE_NAMES.get(to, to)} {prod:>18} -> Cast -> {cons} "
                     f"[{src}]{flag}")
    dups = sum(c - 1 for c in seen.values() if c > 1)
    if dups:
        lines.append(f"    {dups} duplicate cast(s) of the same value to the same type")
    return lines


def convert_and_measure(make, feeds, refs, ref_max, work):
    """Runs one converter; returns its row's figures (or the reason it has none)."""
    res = {}
    t0 = time.perf_counter()
    try:
        model = make()
    except Exception as e:  # Report and go on: one failure must not hide the other rows.
        res["secs"] = time.perf_counter() - t0
        res["error"] = str(e).splitlines()[0][:140] if str(e) else type(e).__name__
        return res, None
    res["secs"] = time.perf_counter() - t0
    res["analysis"] = analyse(model, feeds[0])
    try:
        data = model.SerializeToString()
        res["err"] = max(float(np.max(np.abs(y.astype(np.float64) - r)))
                         for feed, ref in zip(feeds, refs)
                         for y, r in zip(run_ort(data, feed), ref))
        res["rel"] = res["err"] / ref_max
        res["ort"] = "runs"
        res["ort_fp16_gemms"] = ort_fp16_gemms(data, work)
    except Exception as e:
        res["ort"] = f"fails: {str(e).splitlines()[0][:80]}"
    return res, model


def fmt_row(model_name, conv, res):
    if "analysis" not in res:
        return f"| {model_name} | {conv} | - | - | - | - | - | - | - | {res['error']} | " \
               f"{res['secs']:.1f} |"
    a = res["analysis"]
    share = 100.0 * a["fp16_flops"] / a["flops"] if a["flops"] else float("nan")
    share_s = f"{share:.2f}%" + ("*" if a["unknown_flops"] else "")
    err_s = f"{res['err']:.2e}" if "err" in res else "-"
    rel_s = f"{res['rel']:.2e}" if "rel" in res else "-"
    return (f"| {model_name} | {conv} | {a['casts']} | {a['act_casts']} | {a['weight_casts']} | "
            f"{share_s} | {a['flops'] / 1e6:.1f} | {err_s} | {rel_s} | {res['ort']} | "
            f"{res['secs']:.1f} |")


def goal_lines(name, results, orig_casts):
    """The issue's goals for a800c amp against each onnxconverter-common row."""
    amp = results["a800c amp"]
    peers = [k for k in results if k.startswith("occ") and "analysis" in results[k]]
    if "analysis" not in amp:
        return [f"{name}: a800c amp failed: {amp['error']}"]
    a = amp["analysis"]
    ratios = ", ".join(f"/ {p} {a['casts']}/{results[p]['analysis']['casts']} = "
                       f"{a['casts'] / max(results[p]['analysis']['casts'], 1):.2f}"
                       for p in peers)
    lines = [f"{name}: casts a800c amp {ratios} (the original model has {orig_casts} Cast)"]
    share = a["fp16_flops"] / a["flops"] if a["flops"] else 0.0
    verdicts = [f"fp16 share {100 * share:.2f}% ({'met' if share >= 0.99 else 'NOT met'})"]
    for p in peers:
        pa = results[p]["analysis"]
        casts_ok = 2 * a["casts"] <= pa["casts"]
        text = f"vs {p}: casts {'met' if casts_ok else 'NOT met'}"
        if "err" in amp and "err" in results[p]:
            err_ok = amp["err"] <= results[p]["err"]
            text += f", error {'met' if err_ok else 'NOT met'} ({amp['err']:.2e} vs " \
                    f"{results[p]['err']:.2e})"
        verdicts.append(text)
    lines.append(f"{name}: goals: " + "; ".join(verdicts))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="build dir with bin/ and models/")
    ap.add_argument("--models", default="mlp,cnn,bert,bert12")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batches", type=int, default=4,
                    help="input batches (seeds SEED, SEED+1, ...) the max error is taken over")
    ap.add_argument("--amp-tols", default="0.01:0.001,0.001:0.0001",
                    help="auto_mixed_precision rtol:atol pairs, one table row each")
    ap.add_argument("--amp-timeout", type=float, default=60,
                    help="seconds after which an auto_mixed_precision search is skipped")
    ap.add_argument("--details", action="store_true",
                    help="list every Cast of a800c's models (producer -> Cast -> consumers)")
    args = ap.parse_args()

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a800c = os.path.join(args.build, "bin", "a800c")
    models_dir = os.path.join(args.build, "models")
    tols = [tuple(float(x) for x in t.split(":")) for t in args.amp_tols.split(",") if t]
    t_start = time.perf_counter()
    rows, notes, details = [], [], []
    with tempfile.TemporaryDirectory(prefix="a8benchp") as work:
        for name in args.models.split(","):
            path = os.path.join(models_dir, f"{name}.onnx")
            maker = os.path.join(root, "models", "make_models.py")
            stale = not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(maker)
            if stale and name.startswith("bert") and name[4:].isdigit():
                subprocess.run([sys.executable, maker,
                                "--out", models_dir, "--only", "bert", "--bert-layers",
                                name[4:]], check=True, capture_output=True)
            original = onnx.load(path)
            fixed = fix_batch(original, args.batch)
            feeds = [make_feed(fixed, args.batch, args.seed + i) for i in range(args.batches)]
            fixed_bytes = fixed.SerializeToString()
            refs = [run_ort(fixed_bytes, f) for f in feeds]
            ref_max = max(float(np.max(np.abs(r))) for ref in refs for r in ref)
            orig_casts = sum(1 for n in original.graph.node if n.op_type == "Cast")

            def a800c_maker(precision):
                out = os.path.join(work, f"{name}_{precision}.onnx")
                return lambda: run_a800c(a800c, path, precision, args.batch, out)

            def auto_mp_maker(rtol, atol):
                out = os.path.join(work, f"{name}_automp_{rtol}_{atol}.onnx")
                return lambda: occ_auto_mp(fixed, feeds[0], rtol, atol, args.amp_timeout, out)

            converters = [("a800c amp", a800c_maker("amp")), ("a800c fp16", a800c_maker("fp16")),
                          ("occ fp16", lambda: occ_fp16(fixed))]
            converters += [(f"occ auto-mp {rtol:g}/{atol:g}", auto_mp_maker(rtol, atol))
                           for rtol, atol in tols]
            results = {}
            for conv, make in converters:
                res, model = convert_and_measure(make, feeds, refs, ref_max, work)
                results[conv] = res
                rows.append(fmt_row(name, conv, res))
                if args.details and model is not None and conv.startswith("a800c"):
                    details.append(f"{name}, {conv}:")
                    details.extend(cast_details(model))
                print(f"  {name} {conv}: {res['secs']:.1f} s", file=sys.stderr, flush=True)
            notes.extend(goal_lines(name, results, orig_casts))
            notes.append(f"{name}: GEMM/conv nodes onnxruntime CPU runs on fp16 inputs (the rest "
                         f"it runs in fp32 between its own inserted Casts): " + ", ".join(
                             f"{k} {r['ort_fp16_gemms'][0]}/{r['ort_fp16_gemms'][1]}"
                             for k, r in results.items() if "ort_fp16_gemms" in r))

    print(f"batch {args.batch}; casts = Cast nodes (act: input not an initializer/Constant); "
          f"fp16 = share of GEMM/conv FLOPs whose first input is float16 (* = some shapes "
          f"unknown); MFLOP = GEMM/conv MFLOP found; err = max |y - y_fp32| against onnxruntime "
          f"on the fp32 model over {args.batches} seeded batches (seed {args.seed}+i), rel = err /"
          f" max |y_fp32|; occ auto-mp RTOL/ATOL = its tolerances (validated on batch 0)")
    print()
    print("| model | converter | casts | act | weight | fp16 | MFLOP | max err | rel err | ort | "
          "s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(r)
    print()
    for n in notes + details:
        print(n)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
