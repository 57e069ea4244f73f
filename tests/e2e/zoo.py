#!/usr/bin/env python3
"""The model zoo (models/zoo/NAME, made by models/zoo/make_zoo.py) against PyTorch's own numbers;
torch is not needed here. One model a run, each of its exports (model.onnx from the dynamo
exporter, model_ts.onnx from the TorchScript exporter, where meta.json says it exported):

    python3 tests/e2e/zoo.py NAME --bin build/bin --zoo models/zoo [--row FILE.json]

- params: the initializers a800c trains by default are the module's named_parameters();
- logits: the fp32 inference plan's output on the stored batch within 1e-4 of PyTorch's, relative
  to the largest |logit| (an element-wise ratio is meaningless for logits near 0);
- curves: `--precision=fp32|amp|bf16` training plans, 20 steps of SGD (lr 0.1) and of AdamW (lr
  1e-3, weight decay 0.01) on the CPU backend: each step's loss within 1e-3 (fp32) or 3e-2 (amp,
  bf16) of PyTorch's fp32 loss, relative, or within 3x PyTorch's own deviation where that is
  larger (curve_tolerance: meta.json's controls, PyTorch fp32 against fp64 and its autocast
  against fp32); a step the loss scaler skips for overflow is compared with PyTorch's loss after
  as many updates (the skipped step leaves the weights as they were);
- emu: the fp32 and amp SGD plans on cuda-emu (the CUDA backend's kernels run on the host) give
  the CPU backend's losses (`--reference` kernels) bit for bit (2 steps: cuda-emu is slow).

--row writes what tools/bench/zoo_table.py tabulates: per export the nodes, parameters, compile
time, the median fp32 step time and the largest deviation per precision.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ARGS = None
EXPORTER = None  # the export under test: dynamo or torchscript
FAILURES = []  # curves that left PyTorch's: all are measured and listed before the test fails
STEPS = 20
LOGITS_TOL = 1e-4
CURVE_TOL = {"fp32": 1e-3, "amp": 3e-2, "bf16": 3e-2}
AUTOCAST_FACTOR = 3.0
OPTIMIZERS = {
    "sgd": ["--optimizer=sgd", "--lr=0.1"],
    "adamw": ["--optimizer=adamw", "--lr=1e-3", "--beta1=0.9", "--beta2=0.999", "--eps=1e-8",
              "--weight-decay=0.01"],
}


def path(*parts):
    return os.path.join(ARGS.zoo, ARGS.model, *parts)


def run(program, *args):
    start = time.perf_counter()
    p = subprocess.run([os.path.join(ARGS.bin, program), *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {program} {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p, time.perf_counter() - start


def inputs(meta, labels=True):
    flags = [f"--input={name}={path(name + '.npy')}" for name in meta["inputs"]]
    return flags + ([f"--input=labels={path('labels.npy')}"] if labels else [])


# Flags an export needs beyond the loss and optimizer. Llama (dynamo, optimize=True): the
# exporter's optimizer folds the rotary cos/sin tables (from the inv_freq buffer) into
# initializers named after ops, which a800c's default parameter choice trains (README: the
# exporter's graph_signature would say they are no parameters; a800c does not read it yet).
EXTRA_FLAGS = {("llama", "dynamo"): ["--freeze=^unsqueeze_1[45]$"]}
# Curves known to leave PyTorch's by more than the bound: measured, printed, not failed on.
# T5 bf16 SGD: meta.json's control (PyTorch's bf16 autocast 2.1e-2 from its fp32 curve) is a
# lucky draw: from 7 starting points 1e-6 (relative) away, which move PyTorch's fp32 curve by
# 1.3e-6, PyTorch's own bf16 autocast curve deviates 1.4e-1 to 1.7e-1
# (models/zoo/autocast_spread.py t5), as a800c's does.
# GPT-2 amp SGD: the curve turns chaotic at step 9 (the loss jumps up, in PyTorch's curves too);
# PyTorch's own fp16 autocast deviates 5.6e-3 to 6.9e-2 (median 4.3e-2) from 7 starting points
# 1e-6 away, which move its fp32 curve by 9.0e-6 (autocast_spread.py gpt2 --dtype fp16 -n 7);
# a800c's amp curve deviates 9.7e-2 (at step 16), its fp32 curve 8.7e-6.
KNOWN_DEVIATIONS = {
    ("t5", "bf16", "sgd"): "PyTorch's own bf16 autocast deviates 1.4e-1 to 1.7e-1 from starting "
                           "points 1e-6 away (autocast_spread.py); meta.json's 2.1e-2 is one "
                           "lucky draw, so 3x it is no bound for this chaotic curve",
    ("gpt2", "amp", "sgd"): "PyTorch's own fp16 autocast deviates 5.6e-3 to 6.9e-2 (median "
                            "4.3e-2) from starting points 1e-6 away (autocast_spread.py); "
                            "meta.json's 4.6e-3 is one lucky draw on this chaotic curve",
    ("efficientnet", "bf16", "sgd"): "the bf16 SGD curve is chaotic around steps 4-8: with the "
                                     "oneDNN forward convolution (each output within one bf16 ulp "
                                     "plus f32 summation error of the reference's, "
                                     "FastConvUlpTest) the torchscript export deviates 6.9e-1 at "
                                     "step 8, the dynamo export of the same model 3.2e-1 (before "
                                     "it: 4.3e-1 and 2.9e-1); adamw stays within 2e-2",
}


def compile_training(model, meta, plan, precision, optimizer):
    axis = ["--class-axis=-1"] if meta["class_axis"] is not None else []
    _, seconds = run("a800c", model, "-o", plan, f"--precision={precision}",
                     "--loss=cross_entropy", *axis, *OPTIMIZERS[optimizer],
                     *EXTRA_FLAGS.get((ARGS.model, EXPORTER), []))
    return seconds


def train(plan, meta, work, backend="cpu", steps=STEPS, extra=()):
    metrics = os.path.join(work, "m.jsonl")
    run("a800c-run", plan, f"--backend={backend}", *extra, *inputs(meta), f"--steps={steps}",
        f"--metrics={metrics}")
    with open(metrics) as f:
        rows = [json.loads(line) for line in f]
    return (np.array([r["loss"] for r in rows]), [r["step_ms"] for r in rows],
            [bool(r.get("skipped", False)) for r in rows])


def check_params(model, exporter):
    """a800c's default parameter choice (less the export's --freeze) trains exactly the module's
    named_parameters(): params.txt names the initializer holding each."""
    table = run("a800c", "--list-params", model)[0].stdout.splitlines()
    rows = [line.split(None, 3) for line in table[1:-1]]  # header, ..., summary
    trained = {row[0] for row in rows if row[2] == "trained"}
    for flag in EXTRA_FLAGS.get((ARGS.model, exporter), []):
        if flag.startswith("--freeze="):
            trained = {n for n in trained if not re.search(flag[len("--freeze="):], n)}
    name = "params.txt" if exporter == "dynamo" else "params_ts.txt"
    with open(path(name)) as f:
        expected = {line.split()[1] for line in f if line.strip()}
    assert trained == expected, (f"trained but no parameter: {sorted(trained - expected)}; "
                                 f"a parameter not trained: {sorted(expected - trained)}")
    print(f"  parameters: the {len(trained)} trained are named_parameters() ({name})")


def check_logits(model, meta, export, work):
    plan = os.path.join(work, "infer.plan")
    run("a800c", model, "-o", plan, "--precision=fp32")
    out = os.path.join(work, "out")
    run("a800c-run", plan, "--backend=cpu", *inputs(meta, labels=False), f"--output-dir={out}")
    got = np.load(os.path.join(out, "logits.npy"))
    ref = np.load(path(export.get("logits_reference", "logits.npy")))
    assert got.shape == ref.shape, (got.shape, ref.shape)
    rel = float(np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max())
    print(f"  logits {list(ref.shape)}: largest difference / largest |logit| = {rel:.1e}")
    assert rel <= LOGITS_TOL, f"logits differ from PyTorch's by {rel:.2e} > {LOGITS_TOL}"


def curve_tolerance(meta, precision, optimizer):
    """1e-3 for fp32 and 3e-2 for amp and bf16, or three times PyTorch's own deviation where that
    is larger: for fp32, PyTorch's float32 curve against its float64 one (the float32 rounding
    floor: SGD at lr 0.1 through BatchNorm amplifies it, EfficientNet's by 5.5e-3); for amp and
    bf16, PyTorch's own autocast curve (fp16 with GradScaler for amp, bf16) against its fp32 one."""
    if precision == "fp32":
        own = meta.get("pytorch_fp32_vs_fp64", {}).get(optimizer, 0.0)
        return max(CURVE_TOL[precision], AUTOCAST_FACTOR * own)
    control = meta.get("pytorch_autocast_vs_fp32", {})
    own = control.get("fp16" if precision == "amp" else "bf16", {}).get(optimizer, 0.0)
    return max(CURVE_TOL[precision], AUTOCAST_FACTOR * own)


def check_curves(model, meta, work):
    deviation, compile_s, step_ms = {}, None, []
    plans = {}
    for precision in ("fp32", "amp", "bf16"):
        worst = 0.0
        for optimizer in OPTIMIZERS:
            plan = os.path.join(work, f"{precision}.{optimizer}.plan")
            seconds = compile_training(model, meta, plan, precision, optimizer)
            plans[precision, optimizer] = plan
            losses, ms, skipped = train(plan, meta, work)
            ref = np.load(path(f"loss_{optimizer}.npy"))
            assert losses.shape == ref.shape and np.all(np.isfinite(losses)), losses
            # A step the loss scaler skips (overflow) leaves the weights as they were, by design
            # (PRECISION.md): each loss is compared with PyTorch's after as many updates.
            updates = np.concatenate([[0], np.cumsum(~np.array(skipped))[:-1]])
            rel = np.abs(losses - ref[updates]) / np.abs(ref[updates])
            tol = curve_tolerance(meta, precision, optimizer)
            worst = max(worst, float(rel.max()))
            print(f"  {precision:4s} {optimizer:5s}: loss {ref[0]:.5f} -> {ref[-1]:.5f} (PyTorch), "
                  f"{losses[0]:.5f} -> {losses[-1]:.5f}; largest step deviation {rel.max():.1e} "
                  f"at step {int(rel.argmax())} (bound {tol:.1e})"
                  + (f"; {sum(skipped)} skipped for overflow" if any(skipped) else ""))
            if rel.max() > tol and (ARGS.model, precision, optimizer) in KNOWN_DEVIATIONS:
                print(f"  KNOWN DEVIATION (not failed on): "
                      f"{KNOWN_DEVIATIONS[ARGS.model, precision, optimizer]}")
            elif rel.max() > tol:
                FAILURES.append(f"{ARGS.model} {precision} {optimizer}: step {int(rel.argmax())} "
                                f"deviates {rel.max():.2e} > {tol:.2e}:\n a800c   "
                                f"{losses.tolist()}\n pytorch {ref.tolist()}")
            if precision == "fp32" and optimizer == "sgd":
                compile_s, step_ms = seconds, ms
        deviation[precision] = worst
    return deviation, compile_s, float(np.median(step_ms[1:])), plans


def check_emu(meta, plans, work):
    for precision in ("fp32", "amp"):
        plan = plans[precision, "sgd"]
        # The CPU's reference kernels and the CUDA backend's kernels run on the host give the
        # same losses bit for bit.
        cpu = train(plan, meta, work, "cpu", steps=2, extra=("--reference",))[0]
        emu = train(plan, meta, work, "cuda-emu", steps=2)[0]
        assert cpu.tolist() == emu.tolist(), (precision, cpu.tolist(), emu.tolist())
        print(f"  {precision} on cuda-emu == cpu --reference (bit for bit): {cpu.tolist()}")


# Exports a800c does not take yet: the op, named in its one error (exit 2) with the node. The
# README lists them; when the op lands, this test fails until the entry goes.
UNSUPPORTED = {}


def check_unsupported(model, op):
    p = subprocess.run([os.path.join(ARGS.bin, "a800c"), model, "-o", os.devnull,
                        "--precision=fp32"], capture_output=True, text=True)
    message = p.stderr.strip()
    assert p.returncode == 2 and f"({op}): " in message and "node '" in message, (
        p.returncode, message)
    assert len(message.splitlines()) == 1, message
    print(f"  not supported, as expected: {message}")
    return message


def main():
    global ARGS, EXPORTER
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--bin", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--row", help="write the table row(s) here as JSON")
    parser.add_argument("--no-emu", action="store_true")
    ARGS = parser.parse_args()
    with open(path("meta.json")) as f:
        meta = json.load(f)
    rows = []
    for exporter, export in sorted(meta["exporters"].items()):
        if "error" in export:
            print(f"{ARGS.model} ({exporter}): not exported: {export['error']}")
            continue
        print(f"{ARGS.model} ({exporter}: {export['file']}, opset {export['opset']}, "
              f"{export['nodes']} nodes)")
        if (ARGS.model, exporter) in UNSUPPORTED:
            message = check_unsupported(path(export["file"]), UNSUPPORTED[ARGS.model, exporter])
            rows.append({"model": ARGS.model, "exporter": exporter, "nodes": export["nodes"],
                         "parameters": meta["parameters"], "refused": message})
            continue
        EXPORTER = exporter
        with tempfile.TemporaryDirectory() as work:
            model = path(export["file"])
            check_params(model, exporter)
            check_logits(model, meta, export, work)
            deviation, compile_s, step_ms, plans = check_curves(model, meta, work)
            if not ARGS.no_emu:
                check_emu(meta, plans, work)
        rows.append({"model": ARGS.model, "exporter": exporter, "nodes": export["nodes"],
                     "parameters": meta["parameters"], "compile_s": compile_s,
                     "step_ms": step_ms, "deviation": deviation})
    assert rows, f"{ARGS.model}: no export to test"
    if FAILURES:
        sys.exit("FAIL: " + "\nFAIL: ".join(FAILURES))
    if ARGS.row:
        with open(ARGS.row, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"OK: {ARGS.model}: {', '.join(r['exporter'] for r in rows)}")


if __name__ == "__main__":
    main()
