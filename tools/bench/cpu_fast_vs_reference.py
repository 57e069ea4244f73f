#!/usr/bin/env python3
"""Training step of CNNs on the CPU backend: the fast mode (oneDNN GEMMs and convolutions) against
`a800c-run --reference` (today's reference kernels), side by side in one run.

Models: the example CNN (build/models/cnn.onnx, 1x8x8 images, `--batch`) and the zoo's ResNet-18
layout (models/zoo/resnet18/model_ts.onnx, 3x32x32, batch 8). Each is compiled as a training
plan (cross entropy, AdamW) in each `--precisions`, then `--rounds` rounds alternate a800c-run
fast and `--reference` (`--synthetic`, `--steps` steps after 3 warm-up steps,
OMP_NUM_THREADS=THREADS). Prints the median step in ms of each side and the speedup, and the
load average before and after.

    python3 tools/bench/cpu_fast_vs_reference.py --build build [--threads 1] [--rounds 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32, help="the example CNN's batch")
    ap.add_argument("--precisions", default="fp32,bf16")
    args = ap.parse_args()
    models = {"cnn": (os.path.join(args.build, "models", "cnn.onnx"), [f"--batch={args.batch}"]),
              "resnet18": (os.path.join(ROOT, "models", "zoo", "resnet18", "model_ts.onnx"), [])}
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS="1")
    print(f"load average before: {os.getloadavg()}")
    print(f"{args.threads} thread(s), {args.rounds} rounds x {args.steps} steps, median ms")
    print(f"{'model':<10}{'precision':<10}{'reference':>11}{'fast':>9}{'speedup':>9}")
    with tempfile.TemporaryDirectory() as work:
        for name, (model, flags) in models.items():
            for precision in args.precisions.split(","):
                plan = os.path.join(work, f"{name}.{precision}.plan")
                subprocess.run([os.path.join(args.build, "bin", "a800c"), model, "-o", plan,
                                "--loss=cross_entropy", "--optimizer=adamw",
                                f"--precision={precision}", *flags],
                               check=True, capture_output=True)
                times = {"reference": [], "fast": []}
                for _ in range(args.rounds):
                    for side in times:
                        metrics = os.path.join(work, "m.jsonl")
                        subprocess.run([os.path.join(args.build, "bin", "a800c-run"), plan,
                                        "--backend=cpu", "--synthetic", f"--steps={args.steps + 3}",
                                        f"--metrics={metrics}"] +
                                       (["--reference"] if side == "reference" else []),
                                       check=True, capture_output=True, env=env)
                        with open(metrics) as f:
                            times[side] += [json.loads(l)["step_ms"] for l in f if l.strip()][3:]
                ref, fast = statistics.median(times["reference"]), statistics.median(times["fast"])
                print(f"{name:<10}{precision:<10}{ref:>11.3f}{fast:>9.3f}{ref / fast:>9.2f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
