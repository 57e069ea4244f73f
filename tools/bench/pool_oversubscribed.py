#!/usr/bin/env python3
"""The CPU training step with one core busy: one thread against two, two builds side by side.

Starts a busy loop (`yes > /dev/null`, pinned to the last CPU with taskset when there is one),
then, --rounds times, runs the training step of each example model (fp32, AdamW, synthetic
data, --batch) with OMP_NUM_THREADS=1 and =2 under each a800c-run given (--bin, one or more
build bin directories, e.g. the main tree's and a branch's), alternating A1 A2 B1 B2 A1 A2 ...
so all see the same machine state. Each run's figure is the median per-step `step_ms` of its
--metrics (after --warmup untimed steps); the table shows the median over rounds and the ratio
of two threads to one (the issue's bar: at most 1.2 with one core busy).

  python3 tools/bench/pool_oversubscribed.py --bin /tmp/main-bin --bin build/bin \
      --bin build/bin,A8_CPU_CHUNKS_PER_THREAD=1

A --bin of the form DIR,VAR=VALUE,... runs that build with those environment variables set
(e.g. the pool's A8_CPU_CHUNKS_PER_THREAD and A8_CPU_POOL_ADAPTIVE, kernels/cpu/parallel.cc).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def split_bin(spec):
    parts = spec.split(",")
    return parts[0], dict(p.split("=", 1) for p in parts[1:])


def step_ms(spec, plan, threads, steps, warmup, out):
    run_bin, extra = split_bin(spec)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1", **extra)
    metrics = os.path.join(out, "m.jsonl")
    subprocess.run([os.path.join(run_bin, "a800c-run"), plan, "--synthetic",
                    f"--steps={steps + warmup}", f"--metrics={metrics}"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        ms = [json.loads(line)["step_ms"] for line in f.readlines()[warmup:]]
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", action="append", required=True,
                    help="a build's bin directory (a800c, a800c-run); repeat to compare")
    ap.add_argument("--models-dir", default="build/models")
    ap.add_argument("--models", default="mlp,cnn,bert")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-busy", action="store_true", help="do not start the busy loop")
    args = ap.parse_args()

    out = tempfile.mkdtemp()
    busy = None
    try:
        plans = {}
        for b, run_bin in enumerate(args.bin):
            for m in args.models.split(","):
                plan = os.path.join(out, f"{m}.{b}.plan")
                subprocess.run([os.path.join(split_bin(run_bin)[0], "a800c"),
                                os.path.join(args.models_dir, f"{m}.onnx"),
                                "--loss=cross_entropy", "--optimizer=adamw", "--precision=fp32",
                                f"--batch={args.batch}", "-o", plan], check=True)
                plans[(b, m)] = plan
        if not args.no_busy:
            cmd = ["yes"]
            cpus = sorted(os.sched_getaffinity(0))
            if shutil.which("taskset") and len(cpus) > 1:
                cmd = ["taskset", "-c", str(cpus[-1])] + cmd
            busy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        times = {}
        for _ in range(args.rounds):
            for m in args.models.split(","):
                for b, run_bin in enumerate(args.bin):
                    for t in (1, 2):
                        times.setdefault((b, m, t), []).append(
                            step_ms(run_bin, plans[(b, m)], t, args.steps, args.warmup, out))
        print(f"load average at the end: {os.getloadavg()}; busy loop: {not args.no_busy}")
        print(f"{'model':<6} {'build':<40} {'1 thread ms':>12} {'2 threads ms':>13} {'2T/1T':>7}")
        for m in args.models.split(","):
            for b, run_bin in enumerate(args.bin):
                t1 = statistics.median(times[(b, m, 1)])
                t2 = statistics.median(times[(b, m, 2)])
                print(f"{m:<6} {run_bin[-40:]:<40} {t1:>12.3f} {t2:>13.3f} {t2 / t1:>7.2f}")
    finally:
        if busy is not None:
            busy.terminate()
            busy.wait()
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
