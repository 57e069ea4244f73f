#!/usr/bin/env python3
"""CPU forward step, fp32, batch 32: a800c's CPU backend against onnxruntime.

For each example model (build/models/{mlp,cnn,bert}.onnx): compile it once
(`a800c MODEL -o m.plan --batch=32`, fp32), then alternate `--rounds` times, in the same run on
the same machine:
  a800c:  a800c-run m.plan --backend=cpu --synthetic --steps=N --metrics=F.jsonl
          (per-step `step_ms` from the metrics file; without --metrics support, the median
          from its timing summary line);
  ort:    onnxruntime InferenceSession on the original model, CPUExecutionProvider,
          intra_op_num_threads = THREADS, inter_op_num_threads = 1, sequential execution,
          N timed `run` calls on seeded random inputs of the same shapes.
The first `--warmup` steps of every round are dropped on both sides. Both sides use THREADS
threads (default: the CPU count; a800c-run gets OMP_NUM_THREADS=THREADS and OPENBLAS_NUM_THREADS=1:
a800c calls OpenBLAS single-threaded and splits GEMMs over its own pool, and an OpenBLAS started
with more threads keeps an unused one spin-yielding for its first ~0.1 s, most of a short run).
Prints the median step time of each and the ratio a800c/ort (the issue's goal: <= 2).

    python3 tools/bench/cpu_forward.py [--build build] [--steps 50] [--rounds 5] [--threads T]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper


def a800c_steps(a800c_run, plan, steps, warmup, threads, work):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1")
    help_text = subprocess.run([a800c_run, "--help"], capture_output=True, text=True).stdout
    cmd = [a800c_run, plan, "--backend=cpu", "--synthetic", f"--steps={steps + warmup}",
           "--seed=0"]
    metrics = os.path.join(work, "metrics.jsonl")
    if "--metrics" in help_text:
        if os.path.exists(metrics):
            os.remove(metrics)
        cmd.append(f"--metrics={metrics}")
    if "--threads" in help_text:
        cmd.append(f"--threads={threads}")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    if os.path.exists(metrics):
        ms = [json.loads(l)["step_ms"] for l in open(metrics) if l.strip()]
        return ms[warmup:]
    # The timing summary: a line with "median" and a number in ms.
    m = re.search(r"median[^0-9]*([0-9.]+)\s*ms", r.stdout + r.stderr)
    if not m:
        raise RuntimeError(f"no timing summary in a800c-run's output:\n{r.stdout[-500:]}")
    return [float(m.group(1))]


def ort_steps(model_path, batch, steps, warmup, threads, seed=0):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    model = onnx.load(model_path)
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in sess.get_inputs():
        shape = [d if isinstance(d, int) else batch for d in vi.shape]
        if vi.type == "tensor(float)":
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        elif vi.name == "input_ids":
            feeds[vi.name] = rng.integers(0, 1000, size=shape, dtype=np.int64)
        else:
            feeds[vi.name] = np.ones(shape, np.int64)
    del model
    ms = []
    for i in range(steps + warmup):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        if i >= warmup:
            ms.append((time.perf_counter() - t0) * 1000)
    return ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="build folder (bin/, models/)")
    ap.add_argument("--models", default="mlp,cnn,bert")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=50, help="timed steps per round and side")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    a800c = os.path.join(args.build, "bin", "a800c")
    a800c_run = os.path.join(args.build, "bin", "a800c-run")
    ort.set_default_logger_severity(3)
    h = subprocess.run([a800c, "--help"], capture_output=True, text=True).stdout
    flags = ["--precision=fp32"] if "--precision" in h else []
    print(f"CPU forward step, fp32, batch {args.batch}, {args.threads} threads, "
          f"{args.rounds} interleaved rounds x {args.steps} steps (median step time)")
    worst = 0.0
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            model = os.path.join(args.build, "models", name + ".onnx")
            plan = os.path.join(work, name + ".plan")
            subprocess.run([a800c, model, "-o", plan, f"--batch={args.batch}"] + flags,
                           check=True)
            a, o = [], []
            for _ in range(args.rounds):
                a += a800c_steps(a800c_run, plan, args.steps, args.warmup, args.threads, work)
                o += ort_steps(model, args.batch, args.steps, args.warmup, args.threads)
            ma, mo = statistics.median(a), statistics.median(o)
            worst = max(worst, ma / mo)
            print(f"  {name:5s} a800c {ma:8.3f} ms   onnxruntime {mo:8.3f} ms   "
                  f"ratio a800c/ort {ma / mo:5.2f}")
    print(f"worst ratio: {worst:.2f} (goal: <= 2.00)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
