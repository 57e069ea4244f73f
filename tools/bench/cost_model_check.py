#!/usr/bin/env python3
"""How well `a800c-inspect --cost=cpu` predicts what `a800c-run` measures on this machine.

    python3 tools/bench/cost_model_check.py [--models mlp,cnn,bert,bert12] [--repeats 2]
        [--device cpu|a800|a100|h100|h200|auto] [--backend cpu|cuda] [--threads N]
        [--steps 6] [--warmup 2] [--batch 8] [--precision amp] [--bin build/bin] [--json FILE]
        [--bert12 hidden=256,heads=4,seq=64,ffn=1024,vocab=8000 | --bert-base]

For each model: compile a training plan (cross-entropy, AdamW, --precision), then alternately
(A B A B, --repeats times) calibrate and predict (`a800c-inspect PLAN --cost=cpu --format=json`:
the calibration is part of each A) and train with a trace (`a800c-run PLAN --synthetic
--steps=WARMUP+STEPS --trace=... --trace-steps=WARMUP:`). Per kernel: the predicted time (median
of the repeats) against the measured one (median over every traced step of every repeat). Prints
the Spearman rank correlation of the per-kernel times, the predicted and measured step times and
their ratio, the ten costliest kernels of each side and how many they share, and the load
average (the machine is shared: the ratio moves with it).

Models: the examples of `build/models` (target `models`: mlp, cnn, bert) and a 12-layer BERT made
by models/make_models.py (`bert12`; its width from --bert12, or BERT-base's with --bert-base as
tools/bench/compile_scaling.py builds it: hidden 768, 12 heads, sequence 128, FFN 3072).
The issue's bar: predicted step within 2x of the measured one, Spearman >= 0.8.
On a GPU (tools/gpu-check.sh run, step e): --device auto --backend cuda predicts with the
datasheet peaks of the GPU nvidia-smi names and measures kernels by CUDA events.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BERT_BASE = dict(hidden=768, heads=12, seq=128, ffn=3072, vocab=30522)


def ranks(values):
    """Average ranks (ties share the mean of their positions), 1-based."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va > 0 and vb > 0 else float("nan")


ENV = dict(os.environ)


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=ENV)
    if p.returncode != 0:
        sys.exit(f"cost_model_check: {' '.join(map(str, cmd))}: exit {p.returncode}\n"
                 f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def gpu_device():
    """The --cost name of the GPU nvidia-smi names (H200 -> h200, ...)."""
    p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                       capture_output=True, text=True)
    name = p.stdout.strip().splitlines()[0].lower() if p.returncode == 0 and p.stdout else ""
    for dev in ("a800", "a100", "h100", "h200"):
        if dev in name:
            return dev
    sys.exit(f"cost_model_check: no --cost device for the GPU '{name or 'none'}' "
             "(a800, a100, h100, h200)")


def model_path(name, args, work):
    if name in ("mlp", "cnn", "bert"):
        return os.path.join(args.models, f"{name}.onnx")
    if name != "bert12":
        sys.exit(f"cost_model_check: unknown model {name} (mlp, cnn, bert, bert12)")
    width = {k: str(v) for k, v in BERT_BASE.items()} if args.bert_base else dict(
        kv.split("=") for kv in args.bert12.split(","))
    path = os.path.join(work, "bert12.onnx")
    run([sys.executable, os.path.join(ROOT, "models", "make_models.py"), "--out", work, "--only",
         "bert", "--bert-layers", "12", "--bert-hidden", width["hidden"], "--bert-heads", width["heads"], "--bert-seq", width["seq"],
         "--bert-ffn", width["ffn"], "--bert-vocab", width["vocab"]])
    # make_models.py names a sized BERT bert_L<layers>_H<hidden>_S<seq>.onnx.
    made = os.path.join(work, f"bert_L12_H{width['hidden']}_S{width['seq']}.onnx")
    os.replace(made, path)
    return path


def check(name, args, work):
    model = model_path(name, args, work)
    plan = os.path.join(work, f"{name}.plan")
    run([os.path.join(args.bin, "a800c"), model, "-o", plan, f"--batch={args.batch}",
         "--loss=cross_entropy", "--optimizer=adamw", f"--precision={args.precision}"])
    predicted, measured, steps_pred, steps_meas = {}, {}, [], []
    names, ops = {}, {}
    for rep in range(args.repeats):
        cost = json.loads(run([os.path.join(args.bin, "a800c-inspect"), plan,
                               f"--cost={args.device}", "--format=json"]))
        steps_pred.append(cost["step"]["predicted_ms"])
        for k in cost["kernels"]:
            predicted.setdefault(k["index"], []).append(k["predicted_us"])
            names[k["index"]], ops[k["index"]] = k["name"], k["op"]
        trace = os.path.join(work, f"{name}.{rep}.json")
        total = args.warmup + args.steps
        run([os.path.join(args.bin, "a800c-run"), plan, f"--backend={args.backend}", "--synthetic",
             f"--steps={total}", f"--trace={trace}", f"--trace-steps={args.warmup}:",
             "--progress=none"])
        for e in json.load(open(trace))["traceEvents"]:
            if e.get("cat") in ("kernel", "collective"):
                measured.setdefault(e["args"]["index"], []).append(e["dur"])
            elif e.get("cat") == "step":
                steps_meas.append(e["dur"] / 1000)
    idx = sorted(predicted)
    p = [statistics.median(predicted[i]) for i in idx]
    m = [statistics.median(measured.get(i, [0.0])) for i in idx]
    rho = spearman(p, m)
    step_p, step_m = statistics.median(steps_pred), statistics.median(steps_meas)
    top_p = sorted(idx, key=lambda i: -p[idx.index(i)])[:10]
    top_m = sorted(idx, key=lambda i: -m[idx.index(i)])[:10]
    load = os.getloadavg()[0]
    print(f"\n{name} on {args.device} ({len(idx)} kernels, --precision={args.precision}, "
          f"batch {args.batch}, "
          f"{args.repeats} x {args.steps} traced steps):")
    print(f"  step: predicted {step_p:.3f} ms, measured {step_m:.3f} ms (median of traced "
          f"steps), predicted/measured {step_p / step_m:.2f}")
    print(f"  per-kernel Spearman rank correlation {rho:.3f}; ten costliest shared: "
          f"{len(set(top_p) & set(top_m))}/10; load average {load:.2f}")
    print(f"  {'kernel':>6} {'op':<28} {'pred us':>10} {'meas us':>10}  name")
    for i in top_m:
        j = idx.index(i)
        print(f"  {i:>6} {ops[i]:<28} {p[j]:>10.2f} {m[j]:>10.2f}  {names[i][:60]}")
    ok = rho >= 0.8 and 0.5 <= step_p / step_m <= 2.0
    return dict(model=name, kernels=len(idx), spearman=rho, predicted_ms=step_p,
                measured_ms=step_m, ratio=step_p / step_m, top10_shared=len(set(top_p) &
                                                                            set(top_m)),
                load=load, within_bar=ok)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", dest="model_list", default="mlp,cnn,bert,bert12")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6, help="traced steps a repeat")
    ap.add_argument("--warmup", type=int, default=2, help="untraced steps first")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--precision", default="amp")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--models-dir", dest="models", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--bert12", default="hidden=256,heads=4,seq=64,ffn=1024,vocab=8000")
    ap.add_argument("--bert-base", action="store_true", help="bert12 at BERT-base width")
    ap.add_argument("--device", default="cpu",
                    help="--cost device: cpu, a800, a100, h100, h200, or auto (the GPU that "
                         "nvidia-smi names)")
    ap.add_argument("--backend", default=None,
                    help="a800c-run --backend (default: cpu for --device=cpu, else cuda)")
    ap.add_argument("--threads", type=int, default=0,
                    help="OMP_NUM_THREADS and OPENBLAS_NUM_THREADS for the calibration and the "
                         "run alike (default: the CPU backend's own choice, every core)")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    models_arg = [m for m in args.model_list.split(",") if m]
    if args.device == "auto":
        args.device = gpu_device()
    args.backend = args.backend or ("cpu" if args.device == "cpu" else "cuda")
    if args.threads > 0:
        ENV["OMP_NUM_THREADS"] = ENV["OPENBLAS_NUM_THREADS"] = str(args.threads)
    print(f"cost_model_check: {os.cpu_count()} CPUs, "
          f"{args.threads or 'all'} threads, load average {os.getloadavg()[0]:.2f}")
    results = []
    with tempfile.TemporaryDirectory() as work:
        for name in models_arg:
            results.append(check(name, args, work))
    print("\nsummary: model, kernels, Spearman, predicted/measured step, within the bar "
          "(Spearman >= 0.8, ratio in [0.5, 2])")
    for r in results:
        print(f"  {r['model']:<8} {r['kernels']:>5} {r['spearman']:>8.3f} {r['ratio']:>8.2f}  "
              f"{'yes' if r['within_bar'] else 'NO'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
