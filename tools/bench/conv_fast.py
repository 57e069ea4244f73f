#!/usr/bin/env python3
"""One Conv plan on the CPU backend: the fast path (oneDNN, kernels/cpu/onednn_conv.h) against
today's kernels (`a800c-run --reference`), side by side in one run.

For each shape (N, C, HxW, M; 3x3, pad 1, stride 1) and dtype (fp32, bf16: X declared and W
stored in that dtype, so the plan is the Conv alone) builds a one-Conv ONNX model, compiles it, and
alternates `--rounds` rounds of a800c-run with and without `--reference` (X from an .npy file,
`--steps` steps after 3 warm-up steps, OMP_NUM_THREADS=THREADS). Prints each side's best and
median step in ms, the speedup of the medians, and the load average before and after.

    python3 tools/bench/conv_fast.py --build build [--threads 1] [--rounds 2] [--steps 15]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul_gflops import bf16_bits  # noqa: E402

# name: (N, C, H=W, M). cnn*: the example CNN's block convs (models/make_models.py); r*: ResNet
# stages at 64x64 input; stem: a 3-channel first layer.
SHAPES = {"cnn1_b32": (32, 16, 8, 16), "cnn2_b32": (32, 16, 4, 32), "cnn1_b256": (256, 16, 8, 16),
          "stem": (8, 3, 64, 64), "r64": (8, 64, 32, 64), "r128": (8, 128, 16, 128),
          "r256": (8, 256, 8, 256)}


def make(folder, name, dtype):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    n, c, hw, m = SHAPES[name]
    t = TensorProto.FLOAT if dtype == "fp32" else TensorProto.BFLOAT16
    w = np.random.default_rng(1).standard_normal((m, c, 3, 3)).astype(np.float32) * 0.1
    init = (numpy_helper.from_array(w, "W") if dtype == "fp32" else
            helper.make_tensor("W", t, list(w.shape), bf16_bits(w).tobytes(), raw=True))
    graph = helper.make_graph(
        [helper.make_node("Conv", ["X", "W"], ["Y"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1])], "conv",
        [helper.make_tensor_value_info("X", t, [n, c, hw, hw])],
        [helper.make_tensor_value_info("Y", t, [n, m, hw, hw])], initializer=[init])
    model = os.path.join(folder, f"{name}.{dtype}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    x = np.random.default_rng(0).standard_normal((n, c, hw, hw)).astype(np.float32)
    xpath = os.path.join(folder, f"{name}.{dtype}.x.npy")
    np.save(xpath, x if dtype == "fp32" else bf16_bits(x))
    return model, xpath


def run(build, plan, xpath, steps, threads, reference, metrics):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1")
    cmd = [os.path.join(build, "bin", "a800c-run"), plan, "--backend=cpu", f"--input=X={xpath}",
           f"--steps={steps + 3}", f"--metrics={metrics}"] + (["--reference"] if reference else [])
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    with open(metrics) as f:
        return [json.loads(line)["step_ms"] for line in f if line.strip()][3:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    print(f"{args.threads} thread(s), {args.rounds} rounds x {args.steps} steps; ms")
    print(f"{'shape':<10}{'dtype':<6}{'today best':>11}{'median':>9}{'oneDNN best':>12}"
          f"{'median':>9}{'speedup':>9}")
    with tempfile.TemporaryDirectory() as work:
        for name in args.shapes.split(","):
            for dtype in ("fp32", "bf16"):
                model, xpath = make(work, name, dtype)
                plan = model.replace(".onnx", ".plan")
                subprocess.run([os.path.join(args.build, "bin", "a800c"), model, "-o", plan,
                                f"--precision={dtype}"], check=True, capture_output=True)
                times = {True: [], False: []}
                for _ in range(args.rounds):
                    for reference in (True, False):
                        times[reference] += run(args.build, plan, xpath, args.steps,
                                                args.threads, reference,
                                                os.path.join(work, "m.jsonl"))
                ref, fast = statistics.median(times[True]), statistics.median(times[False])
                print(f"{name:<10}{dtype:<6}{min(times[True]):>11.3f}{ref:>9.3f}"
                      f"{min(times[False]):>12.3f}{fast:>9.3f}{ref / fast:>9.2f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
