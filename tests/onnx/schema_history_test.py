#!/usr/bin/env python3
"""Every version of every ONNX op a800c supports, from onnx's schema history, against onnxruntime.

For each op that `a800c --list-ops` lists in ai.onnx (plus the ops with a case that a800c
imports as a few other ops: PRelu, ReduceLogSum, Upsample, ...) and
each since_version of it in `onnx.defs.get_all_schemas_with_history()`, a one-node model at that
opset (schema_history_cases.py: the version's own form, legacy attributes included) is
  1. run by onnxruntime (the reference; ORT accepts most old opsets),
  2. compiled by a800c (import upgrades it to the op's canonical form) and run on the CPU
     backend (`a800c-run --backend=cpu`),
and every output must match ORT's (floats: rtol 1e-4, atol 1e-5; others exactly). The random
ops (schema_history_cases.RANDOM) match ORT's dtypes and shapes, and their values are checked by
properties (random_outputs.check_op: range, moments, exact Bernoulli draws at p 0 and 1).

Where ORT refuses the version (it has no kernel for most opset-1 and opset-6 forms), the
reference is ORT on the same model converted to the lowest newer opset ORT runs by onnx's version
converter (onnx/version_converter, whose adapters are the reference list for the upgrades) or,
where the converter refuses too (legacy broadcasting at an inner axis, Cast-1, Pad-1, Split-1,
Tile-1), on the spec's next form of the case written by hand
(schema_history_cases.spec_equivalent): outcome `pass-converted`. Where ORT deviates from the
ONNX spec, the reference is onnx's ReferenceEvaluator (ORT_DEVIATIONS, each with the deviation).

Outcomes: `pass`, `pass-converted`, `pass-random` (a random op onnxruntime has no kernel for:
dtypes and shapes from onnx's inference, values by properties); `ort-refuses` (no reference runs: listed with ORT's reason
and what a800c does with the model, not compared); `refused` (a800c gives one error: allowed only
for the versions in EXPECTED_REFUSALS, each with its reason, and such an entry must still fail);
anything else (a wrong result, a crash, an unexpected refusal, a version without a case) fails.

    python3 tests/onnx/schema_history_test.py --a800c build/bin/a800c \
        --a800c-run build/bin/a800c-run [-j 2] [-v] [--op NAME]
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import defs, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_outputs  # noqa: E402
import schema_history_cases as cases  # noqa: E402

ort.set_default_logger_severity(3)

# (op, version) -> why a800c refuses it (with one error naming the node, the op and the version).
EXPECTED_REFUSALS = {
    ("GroupNormalization", 18): "scale and bias per group (version 21 has them per channel); "
                                "a800c imports version 21 only",
}


# (op, version) -> how ORT deviates from the spec there; onnx's ReferenceEvaluator is the reference.
ORT_DEVIATIONS = {
    ("Dropout", 7): "ORT's inference mask is all zeros (the spec and onnx's reference: all ones)",
    ("Dropout", 10): "ORT's inference mask is all false (the spec and onnx's reference: true)",
    ("Attention", 23): "ORT's causal mask in qk_matmul_output (mode 2) is the lowest float, not "
                       "-inf (the spec and onnx's reference: -inf)",
}


def imports_op(a800c, op, v, workdir):
    """Whether a800c imports `op` at all (the ops it decomposes are not in --list-ops): the
    newest version's case, unless a800c says the op is not supported."""
    model, _, _ = make_model(op, v, cases.build(op, v))
    path = os.path.join(workdir, f"probe_{op}.onnx")
    onnx.save(model, path)
    r = subprocess.run([a800c, path, "--precision=fp32", "--emit=ir", "-o", os.devnull],
                       capture_output=True, text=True, timeout=120)
    return f"op '{op}' of ai.onnx is not supported by a800c" not in r.stderr


def supported_ops(a800c, workdir):
    """The ai.onnx ops of --list-ops, and the ops with a case that a800c imports otherwise."""
    out = subprocess.run([a800c, "--list-ops"], capture_output=True, text=True, check=True).stdout
    ops = set()
    for line in out.splitlines()[1:]:
        name = line.split()[0] if line.split() else ""
        if name and "." not in name:
            ops.add(name)
    newest = histories(cases.CASE_OPS - ops)
    ops |= {op for op, vs in newest.items() if imports_op(a800c, op, vs[-1], workdir)}
    return sorted(ops)


def histories(ops):
    h = {}
    for s in defs.get_all_schemas_with_history():
        if s.domain == "" and s.name in ops:
            h.setdefault(s.name, set()).add(s.since_version)
    return {op: sorted(vs) for op, vs in h.items()}


def make_model(op, v, case):
    """The one-node model of `case` at opset `v`, output types from onnx's shape inference."""
    opset = helper.make_opsetid("", v)
    try:
        ir = helper.find_min_ir_version_for([opset])
    except ValueError:  # opsets no onnx release shipped as its newest (2, 4): IR 3
        ir = 3
    in_names, graph_inputs, inits, feeds = [], [], [], {}
    for k, (arr, is_init) in enumerate(case.inputs):
        if arr is None:
            in_names.append("")
            continue
        name = f"in{k}"
        in_names.append(name)
        t = helper.np_dtype_to_tensor_dtype(arr.dtype)
        if is_init:
            inits.append(numpy_helper.from_array(arr, name))
            if ir < 4:  # before IR 4 every initializer is also a graph input
                graph_inputs.append(helper.make_tensor_value_info(name, t, arr.shape))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, t, arr.shape))
            feeds[name] = arr
    out_names = [f"out{k}" for k in range(case.outputs)]
    node = helper.make_node(op, in_names, out_names, name=f"{op}_{v}", **case.attrs)
    outs = [helper.make_empty_tensor_value_info(n) for n in out_names]
    graph = helper.make_graph([node], f"{op}_{v}", graph_inputs, outs, inits)
    model = helper.make_model(graph, opset_imports=[opset], ir_version=ir)
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for k, n in enumerate(out_names):
        if n in types and types[n].type.HasField("tensor_type"):
            model.graph.output[k].CopyFrom(types[n])
    return model, feeds, out_names


def run_ort(model, feeds, out_names):
    """ORT's outputs, or (None, ORT's reason)."""
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(out_names, feeds), None
    except Exception as e:
        msg = str(e).strip().splitlines()
        return None, (msg[0] if msg else type(e).__name__)[:200]


def run_converted(model, v, feeds, out_names):
    """ORT's outputs on `model` converted to the lowest newer opset ORT runs, and that opset."""
    from onnx import version_converter
    for target in range(v + 1, 19):
        try:
            converted = version_converter.convert_version(model, target)
        except Exception:
            continue
        want, _ = run_ort(converted, feeds, out_names)
        if want is not None:
            return want, target
    return None, None


def run_spec_equivalent(op, v, case, out_names):
    """ORT's outputs on the hand-written equivalent (schema_history_cases.spec_equivalent)."""
    eq = cases.spec_equivalent(op, v, case)
    if eq is None:
        return None, None
    model, feeds, _ = make_model(op, eq[0], eq[1])
    want, _ = run_ort(model, feeds, out_names)
    return want, eq[0]


def a800c_alone(a800c, model, model_path):
    """What a800c does with a model no reference runs: 'compiles' or its error."""
    onnx.save(model, model_path)
    r = subprocess.run([a800c, model_path, "--precision=fp32", "--emit=ir", "-o", os.devnull],
                       capture_output=True, text=True, timeout=120)
    lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
    return "imports" if r.returncode == 0 else (lines[-1] if lines else "fails")[-200:]


def run_case(a800c, a800c_run, op, v, workdir):
    """Returns (outcome, message)."""
    case = cases.build(op, v)
    if case is None:
        return "fail", "no case in schema_history_cases.py"
    tag = f"{op}_{v}"
    try:
        model, feeds, out_names = make_model(op, v, case)
    except Exception as e:  # the case itself is wrong for this version
        return "fail", f"building the model: {type(e).__name__}: {str(e)[:200]}"
    model_path = os.path.join(workdir, tag + ".onnx")
    passed = "pass"
    if (op, v) in ORT_DEVIATIONS:
        from onnx.reference import ReferenceEvaluator
        want = ReferenceEvaluator(model).run(out_names, feeds)
        if op == "Dropout" and v < 10:  # the reference's mask is bool; before 10 it has X's type
            want[1] = want[1].astype(want[0].dtype)
    else:
        want, err = run_ort(model, feeds, out_names)
        if want is None:
            want, target = run_converted(model, v, feeds, out_names)
            passed = f"pass-converted (onnx's converter to opset {target})"
            if want is None:
                want, target = run_spec_equivalent(op, v, case, out_names)
                passed = f"pass-converted (the spec's form at opset {target}, by hand)"
            if want is None and op in cases.RANDOM:
                # No values to compare anyway: the dtypes and shapes onnx's inference gives.
                want = [np.zeros([d.dim_value for d in o.type.tensor_type.shape.dim],
                                 helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type))
                        for o in model.graph.output]
                passed = "pass-random"
            if want is None:
                return "ort-refuses", err + "; a800c: " + a800c_alone(a800c, model, model_path)
    # Outputs onnx's shape inference could not type (Reshape-1, Dropout-7's mask) get the
    # reference's types.
    for k, w in enumerate(want):
        if not model.graph.output[k].type.HasField("tensor_type"):
            w = np.asarray(w)
            model.graph.output[k].CopyFrom(helper.make_tensor_value_info(
                out_names[k], helper.np_dtype_to_tensor_dtype(w.dtype), w.shape))
    onnx.save(model, model_path)
    plan = os.path.join(workdir, tag + ".plan")
    r = subprocess.run([a800c, model_path, "--precision=fp32", "-o", plan], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
        return "refused", (lines[-1] if lines else f"exit {r.returncode}")[:300]
    cmd = [a800c_run, plan, "--backend=cpu", "--steps=1"]
    for name, arr in feeds.items():
        npy = os.path.join(workdir, f"{tag}.{name}.npy")
        np.save(npy, arr)
        cmd += ["--input", f"{name}={npy}"]
    outdir = os.path.join(workdir, tag + ".out")
    os.makedirs(outdir, exist_ok=True)
    cmd.append(f"--output-dir={outdir}")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
        return "fail", f"a800c-run exit {r.returncode}: " + (lines[-1] if lines else "")[:300]
    for name, w in zip(out_names, want):
        path = os.path.join(outdir, name + ".npy")
        if not os.path.exists(path):
            return "fail", f"a800c-run wrote no {name}.npy"
        got, w = np.load(path), np.asarray(w)
        if got.shape != w.shape or got.dtype != w.dtype:
            return "fail", (f"{name}: {got.dtype}{list(got.shape)}, reference "
                            f"{w.dtype}{list(w.shape)}")
        if op in cases.RANDOM:
            err = random_outputs.check_op(op, case.attrs, [a for a, _ in case.inputs], got)
            if err:
                return "fail", f"{name}: {err}"
            continue
        if w.dtype.kind in "fc":
            ok = np.allclose(got, w, rtol=1e-4, atol=1e-5, equal_nan=True)
        else:
            ok = np.array_equal(got, w)
        if not ok:
            d = np.abs(got.astype(np.float64) - w.astype(np.float64))
            return "fail", f"{name} differs from the reference (max abs diff {np.nanmax(d):.3g})"
    if op in cases.RANDOM:
        return passed, ("dtypes and shapes as " + ("onnx's inference gives (onnxruntime has no "
                        "kernel)" if passed == "pass-random" else "onnxruntime's") +
                        ", values checked by properties")
    return passed, "matches the reference"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a800c", required=True)
    p.add_argument("--a800c-run", required=True)
    p.add_argument("-j", type=int, default=2)
    p.add_argument("-v", action="store_true", help="print every case")
    p.add_argument("--op", action="append", help="only these ops")
    args = p.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        ops = supported_ops(args.a800c, work)
        if args.op:
            ops = [o for o in ops if o in args.op]
        hist = histories(ops)
        todo = [(op, v) for op in ops for v in hist.get(op, [])]
        futs = {pool.submit(run_case, args.a800c, args.a800c_run, op, v, work): (op, v)
                for op, v in todo}
        for f in concurrent.futures.as_completed(futs):
            try:
                results[futs[f]] = f.result()
            except Exception as e:  # a timeout or a harness bug: a failure
                results[futs[f]] = ("fail", f"harness: {type(e).__name__}: {str(e)[:200]}")
    failures = 0
    counts = {}
    for key in sorted(results):
        outcome, msg = results[key]
        expected = EXPECTED_REFUSALS.get(key)
        if outcome.startswith("pass-converted"):
            outcome, msg = "pass-converted", outcome[len("pass-converted "):]
        if outcome == "refused" and expected is None:
            outcome = "fail"
            msg = "unexpected refusal: " + msg
        elif outcome.startswith("pass") and expected is not None:
            outcome = "fail"
            msg = f"passes now: remove it from EXPECTED_REFUSALS ({expected})"
        counts[outcome] = counts.get(outcome, 0) + 1
        failures += outcome == "fail"
        if args.v or not outcome.startswith("pass"):
            why = f" [{expected}]" if outcome == "refused" else ""
            print(f"{outcome.upper():12} {key[0]}-{key[1]}: {msg}{why}")
    total = len(results)
    print(f"\nversions of supported ops: {total} ({len(ops)} ops)")
    print(f"  covered (a800c matches onnxruntime):  {counts.get('pass', 0)}")
    print(f"  covered, reference a converted model: {counts.get('pass-converted', 0)}")
    print(f"  random, no onnxruntime kernel:        {counts.get('pass-random', 0)}")
    print(f"  onnxruntime refuses (not compared):   {counts.get('ort-refuses', 0)}")
    print(f"  refused by a800c, listed:             {counts.get('refused', 0)}")
    print(f"  failed:                               {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
