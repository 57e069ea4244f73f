#!/usr/bin/env python3
"""a800c debug-precision end to end (issue 16): a model with planted FP16-fragile nodes.

    python3 tests/e2e/debug_precision.py one --bin build/bin

The model: ten layers of MatMul + Add + Relu (width 16, batch 8), so about thirty nodes run in
FP16 under amp. At a planted layer, the Relu's output is multiplied by 6e4 (`scale_upK`),
reshaped, divided by 6e4 again (`scale_downK`) and reshaped back: exact in FP32, but in FP16 the
product of any value above 1.1 overflows (65504 is FP16's largest), a few nodes deep and far from
the output. Any node of that FP16 chain in FP32 fixes it (amp: follow ops take their inputs'
type), but only the Mul is the node that overflows.

- one: one planted layer. debug-precision must name exactly `scale_up3`, within
       2 * ceil(log2 n) + 2 training runs (n: the low-precision nodes it reports), and the policy
       it writes, given to a800c --policy, must make the amp loss curve of a800c-run match fp32
       within the tolerance (while amp without it gives a non-finite loss).
- two: two planted layers (2 and 7); both Muls must be named, and nothing else.
- fused: the planted Mul is followed by an Add of 1, and the two are one a8.FusedElementwise
         computing in float: the kernel's FP16 output overflows, and the diagnosis must still name
         the Mul (the member whose result no longer fits FP16), not the Add that ends the kernel.
- bisect: one planted layer that multiplies by 1e-4 twice before the reshape and divides twice
         after it: in FP16 the product (1e-8 of the value) rounds to zero. Run with
         --search=bisect (the backward pass's overflow would otherwise name a node at once), so
         this checks the bisection end to end. On data a linear teacher labels, fp32 learns
         and the zeroed amp run does not. Any node of the planted FP16 chain fixes it (from the
         MatMul that starts it to the Reshape that ends it), so the search may name any one of
         them, and must name only one, within the bound.
- clean: no planted layer: amp already follows fp32, no node is named, two runs.

Every case also runs --compare=activations; with an overflow, the first output of the first step
that differs without bound from fp32 must be the planted Mul's.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ARGS = None
TRAIN = ["--loss=cross_entropy", "--optimizer=adam", "--lr=1e-2"]
STEPS = 12
TOLERANCE = 0.05


def make_model(path, planted, layers=10, width=16, batch=8, scale=6e4, underflow=False,
               fused=False):
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    h = "x"
    for i in range(layers):
        w = (rng.standard_normal((width, width)) * np.sqrt(2 / width)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array(np.zeros(width, np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [h, f"w{i}"], [f"mm{i}"], name=f"matmul{i}"),
                  helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"add{i}"], name=f"add{i}"),
                  helper.make_node("Relu", [f"add{i}"], [f"relu{i}"], name=f"relu{i}")]
        h = f"relu{i}"
        if i in planted:
            big = numpy_helper.from_array(np.array(scale, np.float32), f"big{i}")
            s3 = numpy_helper.from_array(np.array([batch, 4, width // 4], np.int64), f"s3_{i}")
            s2 = numpy_helper.from_array(np.array([batch, width], np.int64), f"s2_{i}")
            nodes += [
                helper.make_node("Constant", [], [f"big{i}"], name=f"const{i}", value=big),
                helper.make_node("Constant", [], [f"s3_{i}"], name=f"shape3_{i}", value=s3),
                helper.make_node("Constant", [], [f"s2_{i}"], name=f"shape2_{i}", value=s2),
                helper.make_node("Mul", [h, f"big{i}"], [f"up{i}"], name=f"scale_up{i}")]
            up, down = f"up{i}", f"down{i}"
            if underflow:  # a second Mul by the same scale before the reshape, a second Div after
                nodes.append(helper.make_node("Mul", [up, f"big{i}"], [f"upb{i}"],
                                              name=f"scale_up_again{i}"))
                up = f"upb{i}"
            if fused:  # + 1 after the Mul: the two become one a8.FusedElementwise
                one = numpy_helper.from_array(np.array(1.0, np.float32), f"one{i}")
                nodes += [helper.make_node("Constant", [], [f"one{i}"], name=f"const_one{i}",
                                           value=one),
                          helper.make_node("Add", [up, f"one{i}"], [f"sh{i}"], name=f"shift{i}")]
                up = f"sh{i}"
            nodes += [
                helper.make_node("Reshape", [up, f"s3_{i}"], [f"r{i}"], name=f"split{i}"),
                helper.make_node("Div", [f"r{i}", f"big{i}"], [f"down{i}"],
                                 name=f"scale_down{i}")]
            if underflow:
                nodes.append(helper.make_node("Div", [down, f"big{i}"], [f"downb{i}"],
                                              name=f"scale_down_again{i}"))
                down = f"downb{i}"
            nodes.append(helper.make_node("Reshape", [down, f"s2_{i}"], [f"back{i}"],
                                          name=f"merge{i}"))
            h = f"back{i}"
    wout = (rng.standard_normal((width, 4)) / 4).astype(np.float32)
    inits.append(numpy_helper.from_array(wout, "wout"))
    nodes.append(helper.make_node("MatMul", [h, "wout"], ["logits"], name="head"))
    graph = helper.make_graph(
        nodes, "fragile", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, width])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def tool(name, *args):
    p = subprocess.run([os.path.join(ARGS.bin, name), *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{name} {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout


def losses(tmp, model, data, tag, *flags):
    plan = os.path.join(tmp, f"{tag}.plan")
    metrics = os.path.join(tmp, f"{tag}.jsonl")
    tool("a800c", model, "-o", plan, *TRAIN, *flags)
    tool("a800c-run", plan, *data, f"--steps={STEPS}", f"--metrics={metrics}")
    with open(metrics) as f:
        return [json.loads(line)["loss"] for line in f]


def deviation(curve, ref):
    worst = 0.0
    for a, b in zip(curve, ref):
        if a is None or not math.isfinite(a):
            return math.inf
        worst = max(worst, abs(a - b) / max(abs(b), 1e-3))
    return worst


def teacher_data(tmp, samples=96, width=16):
    """Inputs whose labels a linear teacher gives, so that fp32 learns within a few steps."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((samples, width)).astype(np.float32)
    labels = np.argmax(x @ rng.standard_normal((width, 4)), axis=1).astype(np.int64)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "labels.npy"), labels)
    return [f"--input=x={os.path.join(tmp, 'x.npy')}",
            f"--input=labels={os.path.join(tmp, 'labels.npy')}"]


def check(planted, expected, underflow=False, fused=False):
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "fragile.onnx")
        if underflow:
            make_model(model, planted, scale=1e-4, underflow=True)
            data = teacher_data(tmp)
        else:
            make_model(model, planted, fused=fused)
            data = ["--synthetic"]
        policy = os.path.join(tmp, "policy.json")
        out = tool("a800c", "debug-precision", model, *TRAIN, *data, f"--steps={STEPS}",
                   f"--tolerance={TOLERANCE}", "-o", policy,
                   *(["--search=bisect"] if underflow else []), "--compare=activations")
        print(out)
        if expected and not underflow and not fused:
            # The first step's activations: the first output that differs without bound from
            # fp32 is the planted Mul's.
            rows = [l.split() for l in out.splitlines() if "max |diff|" in l]
            first_inf = next(r for r in rows if r[3] == "inf")
            if first_inf[0] != f"up{min(planted)}" or f"(scale_up{min(planted)})" not in first_inf:
                sys.exit(f"--compare=activations: first unbounded difference at {first_inf}")
        with open(policy) as f:
            p = json.load(f)
        found = [e["node"] for e in p["evidence"]]
        if underflow:  # any one node of the planted FP16 chain fixes it
            if len(found) != 1 or found[0] not in expected:
                sys.exit(f"debug-precision named {found}, expected one of {expected}")
        elif sorted(found) != sorted(expected):
            sys.exit(f"debug-precision named {found}, expected {expected}")
        n = p["debug_precision"]["low_precision_nodes"]
        runs = p["debug_precision"]["training_runs"]
        bound = 2 * math.ceil(math.log2(n)) + 2
        if n < 25:
            sys.exit(f"only {n} low-precision nodes: the model should have dozens")
        if runs > bound:
            sys.exit(f"{runs} training runs, more than 2 ceil(log2 {n}) + 2 = {bound}")
        if f"{runs} training runs" not in out:
            sys.exit(f"the report does not say '{runs} training runs'")
        for e in p["evidence"]:
            if e["deviation_with"] is None or e["deviation_with"] > TOLERANCE:
                sys.exit(f"evidence {e}: the run with it in FP32 is not within tolerance")
            if e["deviation_without"] is not None and e["deviation_without"] <= TOLERANCE:
                sys.exit(f"evidence {e}: the run without it passes")
        ref = losses(tmp, model, data, "fp32", "--precision=fp32")
        amp = losses(tmp, model, data, "amp", "--precision=amp")
        fixed = losses(tmp, model, data, "fixed", "--precision=amp", f"--policy={policy}")
        if expected and deviation(amp, ref) <= TOLERANCE:
            sys.exit(f"amp without the policy already matches fp32: {amp} vs {ref}")
        d = deviation(fixed, ref)
        if d > TOLERANCE:
            sys.exit(f"amp with the policy deviates by {d} from fp32: {fixed} vs {ref}")
        print(f"ok: {found} in {runs} runs (bound {bound}, n {n}); amp with the policy deviates "
              f"{d:.2g} from fp32")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["one", "two", "fused", "clean", "bisect"])
    ap.add_argument("--bin", required=True)
    ARGS = ap.parse_args()
    if ARGS.case == "one":
        check({3}, ["scale_up3"])
    elif ARGS.case == "two":
        check({2, 7}, ["scale_up2", "scale_up7"])
    elif ARGS.case == "fused":
        check({3}, ["scale_up3"], fused=True)
    elif ARGS.case == "bisect":
        chain = ["matmul3", "add3", "relu3", "scale_up3", "scale_up_again3", "split3",
                 "scale_down3", "scale_down_again3", "merge3"]
        check({3}, chain, underflow=True)
    else:
        check(set(), [])


if __name__ == "__main__":
    main()
