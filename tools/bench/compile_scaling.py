#!/usr/bin/env python3
"""How a800c's compile time and memory grow with model size, next to onnxruntime opening the
same model.

    python3 tools/bench/compile_scaling.py [--layers 12,24,48,96] [--repeats 3]
        [--a800c build/bin/a800c] [--work DIR] [--keep] [--hf] [--first-step]

For each layer count it makes a BERT-style graph at BERT-base width (hidden 768, 12 heads,
sequence 128, FFN 3072, vocabulary 30522) with models/make_models.py (weights as external data
past 1 GiB, as protobuf's 2 GiB limit requires), then, alternating in one run (a800c inference,
a800c training, onnxruntime, then again), measures:
- the wall time, CPU time (user + system) and peak RSS of `a800c MODEL --batch=8 -o PLAN`
  (inference) and of `a800c MODEL --batch=8 --loss=cross_entropy --optimizer=adamw
  --precision=amp -o PLAN` (training), each in its own process (wait4's rusage of that process;
  CPU time depends less on the machine's load than wall time);
- the plan's bytes and the weight bytes (the model's float initializers);
- the per-pass split of the training compile (`--pass-timing`: wall and thread CPU time,
  the median of the repeats);
- onnxruntime's InferenceSession creation on the same forward graph (CPU provider, default
  options), in its own process: wall and CPU time of the creation, peak RSS of the process;
- with --first-step, on the first graph's training plan: the seconds from launching
  `a800c-run PLAN --backend=cpu --synthetic --steps=1 --trace=T` to the start of its first step.
Then the growth from the smallest to the others (time ratio, and the slope of a line fitted to
time against layers) for every pass and for the whole compile. Medians of the repeats.

--hf also compiles Hugging Face BertForSequenceClassification exports (torch and transformers
needed; never in CI) at 12 and 24 layers. The machine's load is printed with the results: run it
on an idle machine.
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = dict(hidden=768, heads=12, seq=128, ffn=3072, vocab=30522)
TRAIN_FLAGS = ["--loss=cross_entropy", "--optimizer=adamw", "--precision=amp"]
# wall ms, %, [the thread's CPU ms,] pass (binaries before the CPU column match too)
PASS_LINE = re.compile(r"^\s*([0-9.]+)\s+[0-9.]+%\s+(?:([0-9.]+)\s+)?(\S+)")

ORT_SNIPPET = r"""
import os, sys, time
t0 = time.perf_counter()
import onnxruntime as ort
t1 = time.perf_counter()
c1 = os.times()
so = ort.SessionOptions()
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
t2 = time.perf_counter()
c2 = os.times()
cpu = (c2.user - c1.user) + (c2.system - c1.system)
print(f"{t2 - t1:.6f} {t1 - t0:.6f} {cpu:.6f}")
"""


def first_step(a800c, plan, work):
    """a800c-run PLAN --steps=1 on the CPU with synthetic data and --trace: seconds from the
    launch to the start of the first step (the trace's step event, on the same monotonic clock
    as time.monotonic), the step's own seconds, and the whole run's."""
    run = os.path.join(os.path.dirname(a800c), "a800c-run")
    trace = os.path.join(work, "first_step.json")
    t0 = time.monotonic()
    p = subprocess.run([run, plan, "--backend=cpu", "--synthetic", "--steps=1",
                        f"--trace={trace}"], capture_output=True, text=True)
    total = time.monotonic() - t0
    if p.returncode != 0:
        print(f"compile_scaling: a800c-run failed: {p.stderr.strip()}")
        return None
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    os.remove(trace)
    step = next(e for e in events if e.get("cat") == "step")
    return {"to_first_step_s": step["ts"] / 1e6 - t0, "step_s": step["dur"] / 1e6,
            "run_s": total, "load": os.getloadavg()[0]}


def run_with_rusage(cmd, cpu=None):
    """Runs cmd in its own process; returns (wall s, peak RSS bytes, stdout, stderr, rc).
    With `cpu` (a list), appends the process's user + system CPU seconds to it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if cpu is not None:
            cpu.append(usage.ru_utime + usage.ru_stime)
        out.seek(0)
        err.seek(0)
        return (wall, usage.ru_maxrss * 1024, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), p.returncode)


WEIGHT_BYTES_SNIPPET = r"""
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
total = 0
for t in m.graph.initializer:
    if t.data_type == onnx.TensorProto.FLOAT:
        n = 1
        for d in t.dims:
            n *= d
        total += 4 * n
print(total)
"""


def weight_bytes(model_path):
    # In its own process: loading the model here would raise this process's peak RSS, which
    # every child forked from it starts its own rusage peak from (Linux carries ru_maxrss across
    # fork and exec), and the children's figures would be this process's.
    out = subprocess.run([sys.executable, "-c", WEIGHT_BYTES_SNIPPET, model_path], check=True,
                         capture_output=True, text=True).stdout
    return int(out)


def make_model(layers, work):
    external = layers * 28.3e6 + 98e6 > 1.0e9  # bytes of float weights, roughly
    name = f"bert_L{layers}_H{BASE['hidden']}_S{BASE['seq']}.onnx"
    path = os.path.join(work, name)
    if not os.path.exists(path):
        cmd = [sys.executable, os.path.join(ROOT, "models", "make_models.py"), "--out", work,
               "--only", "bert", "--bert-layers", str(layers), "--bert-hidden",
               str(BASE["hidden"]), "--bert-heads", str(BASE["heads"]), "--bert-seq",
               str(BASE["seq"]), "--bert-ffn", str(BASE["ffn"]), "--bert-vocab",
               str(BASE["vocab"])]
        if external:
            cmd.append("--external-data")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return path


def make_hf(layers, work):
    """A Hugging Face BertForSequenceClassification export, or None without torch."""
    try:
        import torch
        from transformers import BertConfig, BertForSequenceClassification
    except ImportError:
        return None
    path = os.path.join(work, f"hf_bert_L{layers}.onnx")
    if not os.path.exists(path):
        cfg = BertConfig(num_hidden_layers=layers)
        model = BertForSequenceClassification(cfg).eval()
        ids = torch.ones(8, BASE["seq"], dtype=torch.long)
        mask = torch.ones(8, BASE["seq"], dtype=torch.long)
        torch.onnx.export(model, (ids, mask), path, input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], dynamic_axes={"input_ids": {0: "N"},
                                                                 "attention_mask": {0: "N"}},
                          opset_version=17, dynamo=False)
    return path


def parse_passes(stderr, cpu=False):
    """Seconds per pass: wall time, or with `cpu` the pass's thread CPU time (None when the
    binary does not report it)."""
    passes = {}
    in_report = False
    for line in stderr.splitlines():
        if "Pass execution timing report" in line:
            in_report = True
            continue
        if not in_report:
            continue
        m = PASS_LINE.match(line)
        if m and m.group(3) not in ("total", "pass"):
            if cpu and m.group(2) is None:
                return None
            ms = float(m.group(2) if cpu else m.group(1))
            passes[m.group(3)] = passes.get(m.group(3), 0.0) + ms / 1000.0
    return passes


def fit_slope(xs, ys):
    """Least-squares slope of ys against xs (seconds per layer)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def mib(b):
    return b / (1 << 20)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="12,24,48,96")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--a800c", default=os.path.join(ROOT, "build", "bin", "a800c"))
    ap.add_argument("--work", default=None, help="folder for the models and plans "
                    "(default: a temporary folder, deleted at the end)")
    ap.add_argument("--keep", action="store_true", help="keep the models and plans")
    ap.add_argument("--hf", action="store_true", help="also Hugging Face exports (torch)")
    ap.add_argument("--no-ort", action="store_true", help="skip onnxruntime")
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--first-step", action="store_true",
                    help="also time a800c-run from launch to the start of the first training "
                    "step on the first graph's training plan (CPU backend, synthetic data; the "
                    "step itself takes tens of seconds at BERT-base size)")
    args = ap.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="a8_compile_scaling_")
    os.makedirs(work, exist_ok=True)
    graphs = []
    for layers in [int(x) for x in args.layers.split(",")]:
        graphs.append((f"bert-base-width L{layers}", layers, make_model(layers, work)))
    if args.hf:
        for layers in (12, 24):
            path = make_hf(layers, work)
            if path is None:
                print("--hf: torch or transformers is not installed: no Hugging Face exports")
                break
            graphs.append((f"HF BertForSequenceClassification L{layers}", layers, path))

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    # A child's peak RSS starts from this process's (see weight_bytes): the floor of the figures.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"this script's own peak RSS, the floor of every peak RSS below: {mib(own):.0f} MiB")
    results = []
    for label, layers, model in graphs:
        r = {"graph": label, "layers": layers, "model": os.path.basename(model),
             "weight_bytes": weight_bytes(model), "inference": [], "training": [], "ort": [],
             "passes": [], "passes_cpu": []}
        plan_inf = os.path.join(work, "inf.plan")
        plan_train = os.path.join(work, "train.plan")
        for _ in range(args.repeats):  # A B C, A B C, ...: the load drifts over all alike
            cpu = []
            wall, rss, _, err, rc = run_with_rusage(
                [args.a800c, model, "--batch=8", "-o", plan_inf], cpu)
            if rc != 0:
                sys.exit(f"compile_scaling: a800c (inference) failed on {model}:\n{err}")
            r["inference"].append((wall, rss, cpu[-1]))
            r["inference_plan_bytes"] = os.path.getsize(plan_inf)
            wall, rss, _, err, rc = run_with_rusage(
                [args.a800c, model, "--batch=8", *TRAIN_FLAGS, "--pass-timing", "-o",
                 plan_train], cpu)
            if rc != 0:
                sys.exit(f"compile_scaling: a800c (training) failed on {model}:\n{err}")
            r["training"].append((wall, rss, cpu[-1]))
            r["passes"].append(parse_passes(err))
            r["passes_cpu"].append(parse_passes(err, cpu=True))
            r["training_plan_bytes"] = os.path.getsize(plan_train)
            if not args.no_ort:
                wall, rss, out, err, rc = run_with_rusage(
                    [sys.executable, "-c", ORT_SNIPPET, model], cpu)
                if rc != 0:
                    print(f"compile_scaling: onnxruntime failed on {model}: "
                          f"{err.strip().splitlines()[-1:]}")
                    r["ort"].append((float("nan"), rss, float("nan"), float("nan")))
                else:
                    session_s, import_s, session_cpu = (float(x) for x in out.split())
                    r["ort"].append((session_s, rss, wall, session_cpu))
        if args.first_step and not results:
            r["first_step"] = first_step(args.a800c, plan_train, work)
        for p in (plan_inf, plan_train):
            if os.path.exists(p):
                os.remove(p)
        results.append(r)
        print_graph(r)
        sys.stdout.flush()

    print_growth([r for r in results if r["graph"].startswith("bert-base-width")])
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if not args.keep and args.work is None:
        shutil.rmtree(work)


def med(rows, i):
    return statistics.median(row[i] for row in rows)


def print_graph(r):
    w = r["weight_bytes"]
    print(f"\n{r['graph']} ({r['model']}): weights {mib(w):.0f} MiB")
    for kind in ("inference", "training"):
        wall, rss, cpu = med(r[kind], 0), med(r[kind], 1), med(r[kind], 2)
        plan = r[f"{kind}_plan_bytes"]
        print(f"  a800c {kind:<9}  {wall:7.2f} s (CPU {cpu:5.2f} s)  peak RSS {mib(rss):7.0f} MiB "
              f"({rss / w:4.2f}x weights)  plan {mib(plan):7.0f} MiB ({plan / w:4.2f}x weights)")
    if r["ort"]:
        print(f"  onnxruntime session  {med(r['ort'], 0):7.2f} s (CPU {med(r['ort'], 3):5.2f} s)  "
              f"peak RSS {mib(med(r['ort'], 1)):7.0f} MiB  (process wall {med(r['ort'], 2):.2f} s)")
        ratio = med(r["training"], 0) / med(r["ort"], 0)
        cpu_ratio = med(r["training"], 2) / med(r["ort"], 3)
        print(f"  training compile / onnxruntime session: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU "
              f"(compile: the whole process; onnxruntime: the session creation)")
    if r.get("first_step"):
        f = r["first_step"]
        print(f"  a800c-run training plan: first step starts {f['to_first_step_s']:.2f} s after "
              f"launch (the step takes {f['step_s']:.1f} s; load {f['load']:.1f})")
    passes = pass_medians(r)
    top = sorted(passes.items(), key=lambda kv: -kv[1])
    print("  passes (training, s): " + ", ".join(f"{k} {v:.3f}" for k, v in top[:8]) +
          f"; all passes {sum(passes.values()):.3f}")


def pass_medians(r, key="passes"):
    runs = [run for run in r.get(key, []) if run is not None]
    names = sorted({k for run in runs for k in run})
    return {k: statistics.median(run.get(k, 0.0) for run in runs) for k in names}


def print_growth(rs):
    if len(rs) < 2:
        return
    rs = sorted(rs, key=lambda r: r["layers"])
    first = rs[0]
    xs = [r["layers"] for r in rs]
    print(f"\ngrowth against L{first['layers']} (time ratio; slope in ms per layer):")
    rows = {"whole training compile": [med(r["training"], 0) for r in rs],
            "whole inference compile": [med(r["inference"], 0) for r in rs]}
    per_pass = [pass_medians(r) for r in rs]
    rows["all passes"] = [sum(p.values()) for p in per_pass]
    for name in sorted({k for p in per_pass for k in p}):
        ys = [p.get(name, 0.0) for p in per_pass]
        if max(ys) >= 0.005:  # passes under 5 ms everywhere are noise
            rows[name] = ys
    header = "  ".join(f"L{r['layers']:>3}" for r in rs[1:])
    print(f"  {'':<26}{header}   slope")
    for name, ys in rows.items():
        ratios = "  ".join(f"{y / ys[0]:5.2f}x" if ys[0] > 0 else "    -" for y in ys[1:])
        print(f"  {name:<26}{ratios}   {1000 * fit_slope(xs, ys):8.2f}")
    # Every pass, wall and thread CPU time (ms, medians of the repeats) and the growth of each.
    per_cpu = [pass_medians(r, "passes_cpu") for r in rs]
    has_cpu = all(per_cpu)
    print(f"\nevery pass (ms, medians; wall{' / thread CPU' if has_cpu else ''}), growth against "
          f"L{first['layers']}:")
    for name in [k for k in per_pass[0] if all(k in p for p in per_pass)]:
        cols = []
        for i, r in enumerate(rs):
            cell = f"L{r['layers']} {1000 * per_pass[i][name]:.2f}"
            if has_cpu:
                cell += f"/{1000 * per_cpu[i].get(name, 0.0):.2f}"
            cols.append(cell)
        growth = []
        for i in range(1, len(rs)):
            g = per_pass[i][name] / per_pass[0][name] if per_pass[0][name] > 0 else float("nan")
            cell = f"{g:.2f}x"
            if has_cpu and per_cpu[0].get(name, 0.0) > 0:
                cell += f"/{per_cpu[i].get(name, 0.0) / per_cpu[0][name]:.2f}x"
            growth.append(cell)
        print(f"  {name:<18} " + "  ".join(cols) + "  growth " + "  ".join(growth))


if __name__ == "__main__":
    main()
