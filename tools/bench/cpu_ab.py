#!/usr/bin/env python3
"""CPU step time of two a800c builds side by side: a change against its base, in one run.

For each example model and each mode (`forward`: an inference plan, as tools/bench/cpu_forward.py
compiles it; `train`: a training step, as tools/bench/cpu_train_step.sh compiles it: AdamW, cross
entropy), both in `--precision` (default fp32; until this option the forward plans took a800c's
default, amp), both builds compile their own plan, then `--rounds` rounds alternate A, B, A, B:
each round runs `a800c-run PLAN --backend=cpu --synthetic --steps=N --metrics=F` and keeps the
per-step `step_ms` after `--warmup` steps, and the run's CPU time (user + system, from
getrusage) divided by its steps. Prints, per model and mode, the median of all kept steps of A
and of B and the ratio B/A (below 1: B is faster), the same for the CPU time per step (steadier
than wall time on a loaded machine: time spent preempted does not count; it includes the plan
load, the same on both sides), the 90th percentile of the kept steps of each, and the load
average before and after. a800c-run gets OPENBLAS_NUM_THREADS=1 unless `--blas-env=inherit`
(then it runs with this environment's, as a user's run does: for start-up effects).

    python3 tools/bench/cpu_ab.py --a /work/main/build --b build [--rounds 4] [--steps 30]
        [--precision fp32|amp|fp16|bf16] [--models mlp,cnn,bert,PATH.onnx]

A model given as a path to an .onnx file (e.g. precision_table.py's models, written to its
`--work` folder) is compiled from that file by both builds.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

MODES = {
    "forward": [],
    "train": ["--loss=cross_entropy", "--optimizer=adamw"],
}


def model_path(build, model):
    """An example model by name (BUILD/models/NAME.onnx), or any ONNX file by its path."""
    return model if model.endswith(".onnx") else os.path.join(build, "models", f"{model}.onnx")


def compile_plan(build, model, mode, batch, precision, out):
    cmd = [os.path.join(build, "bin", "a800c"), model_path(build, model),
           f"--batch={batch}", f"--precision={precision}", "-o", out] + MODES[mode]
    subprocess.run(cmd, check=True, capture_output=True)


def run_steps(build, plan, steps, warmup, threads, metrics, blas_env):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if blas_env == "single":
        env["OPENBLAS_NUM_THREADS"] = "1"
    cmd = [os.path.join(build, "bin", "a800c-run"), plan, "--backend=cpu", "--synthetic",
           f"--steps={steps + warmup}", f"--metrics={metrics}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(metrics) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["step_ms"] for r in rows[warmup:]], 1000 * cpu_s / (steps + warmup)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="build folder of the base (bin/, models/)")
    ap.add_argument("--b", required=True, help="build folder of the change")
    ap.add_argument("--models", default="mlp,cnn,bert")
    ap.add_argument("--modes", default="forward,train")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--precision", default="fp32", help="a800c --precision of both plans")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--blas-env", choices=["single", "inherit"], default="single",
                    help="OPENBLAS_NUM_THREADS=1 for a800c-run, or this environment's")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}; precision {args.precision}")
    print(f"{'model':<6} {'mode':<8} {'A median ms':>12} {'B median ms':>12} {'B/A':>6} "
          f"{'A cpu ms':>9} {'B cpu ms':>9} {'B/A':>6} {'A p90':>7} {'B p90':>7}")
    with tempfile.TemporaryDirectory() as work:
        for model in args.models.split(","):
            name = os.path.splitext(os.path.basename(model))[0]
            for mode in args.modes.split(","):
                plans = {}
                for side, build in (("a", args.a), ("b", args.b)):
                    plans[side] = os.path.join(work, f"{name}.{mode}.{side}.plan")
                    compile_plan(build, model, mode, args.batch, args.precision, plans[side])
                times = {"a": [], "b": []}
                cpu = {"a": [], "b": []}
                for _ in range(args.rounds):
                    for side, build in (("a", args.a), ("b", args.b)):
                        steps, cpu_ms = run_steps(build, plans[side], args.steps, args.warmup,
                                                  args.threads, os.path.join(work, "m.jsonl"),
                                                  args.blas_env)
                        times[side] += steps
                        cpu[side].append(cpu_ms)
                ma, mb = statistics.median(times["a"]), statistics.median(times["b"])
                ca, cb = statistics.median(cpu["a"]), statistics.median(cpu["b"])
                pa, pb = (statistics.quantiles(times[s], n=10)[-1] for s in ("a", "b"))
                print(f"{name:<6} {mode:<8} {ma:>12.3f} {mb:>12.3f} {mb / ma:>6.3f} "
                      f"{ca:>9.3f} {cb:>9.3f} {cb / ca:>6.3f} {pa:>7.3f} {pb:>7.3f}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
