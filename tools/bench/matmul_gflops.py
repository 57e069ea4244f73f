#!/usr/bin/env python3
"""GFLOP/s of one MatMul plan on the CPU backend against PyTorch, side by side in one run.

Builds a one-MatMul ONNX model (Y = A @ B, SIZE x SIZE; A a graph input; B a weight, an
initializer of the same dtype, as a layer's, or with `--b=input` a second graph input that gets
new data every step), compiles it in fp32 (`--precision=fp32`) and bf16 (`--precision=bf16`, A
and B bf16, so the plan is the MatMul alone with no casts, as PyTorch multiplies bf16 tensors),
then alternates `--rounds` rounds of: a800c-run (fast kernels, and with `--reference` when asked)
and PyTorch (`torch.matmul` on tensors of the same dtype, `torch.set_num_threads(THREADS)`, in
the Python of `--torch-python`).

a800c's time is each step's `step_ms` from `--metrics` after `--warmup` steps (the step is the
one MatMul kernel; input filling is outside it); PyTorch's is each call's time after the same
warmup. The inputs come from .npy files (`--input`): each step copies them in, which leaves them
in the cache as PyTorch's tensors are. (`--synthetic` would generate new values each step
through a double-precision temporary, which evicts the caches: 1024^3 bf16 best steps 2.4-2.9
ms against 1.7-1.8 with `--input`, load 15.) Prints the median GFLOP/s (2 SIZE^3 / time) of each
side and the ratio a800c/PyTorch, the same from each side's best step, and the load average
before and after.

    python3 tools/bench/matmul_gflops.py --build build [--threads 1] [--rounds 4] [--steps 40]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

TORCH_SCRIPT = r"""
import sys, time, json, torch
size, dtype, steps, warmup, threads = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)
dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
g = torch.Generator().manual_seed(0)
a = torch.randn(size, size, generator=g).to(dt)
b = torch.randn(size, size, generator=g).to(dt)
times = []
with torch.no_grad():
    for i in range(steps + warmup):
        t0 = time.perf_counter()
        y = torch.matmul(a, b)
        t1 = time.perf_counter()
        if i >= warmup:
            times.append((t1 - t0) * 1e3)
print(json.dumps({"ms": times, "version": torch.__version__}))
"""


def bf16_bits(x):
    """float32 array -> its bf16 rounding (nearest even) as uint16 bits."""
    import numpy as np
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def save_inputs(folder, size, elem_type, b_kind):
    """The graph inputs as .npy files (bf16 as uint16 bits); returns the --input flags."""
    import numpy as np
    rng = np.random.default_rng(0)
    flags = []
    for name in ["A"] + (["B"] if b_kind == "input" else []):
        x = rng.standard_normal((size, size)).astype(np.float32)
        path = os.path.join(folder, f"{name}.{elem_type}.npy")
        np.save(path, bf16_bits(x) if elem_type == "bf16" else x)
        flags.append(f"--input={name}={path}")
    return flags


def make_model(path, size, elem_type, b_kind):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    t = {"fp32": TensorProto.FLOAT, "bf16": TensorProto.BFLOAT16}[elem_type]
    inputs = [helper.make_tensor_value_info("A", t, [size, size])]
    initializers = []
    if b_kind == "input":
        inputs.append(helper.make_tensor_value_info("B", t, [size, size]))
    else:
        b = np.random.default_rng(1).standard_normal((size, size)).astype(np.float32)
        if elem_type == "bf16":
            initializers.append(helper.make_tensor("B", t, [size, size],
                                                   bf16_bits(b).tobytes(), raw=True))
        else:
            initializers.append(numpy_helper.from_array(b, "B"))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["Y"], name="matmul")], "matmul", inputs,
        [helper.make_tensor_value_info("Y", t, [size, size])], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


def run_a800c(build, plan, inputs, steps, warmup, threads, metrics, reference):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1")
    cmd = [os.path.join(build, "bin", "a800c-run"), plan, "--backend=cpu", *inputs,
           f"--steps={steps + warmup}", f"--metrics={metrics}"]
    if reference:
        cmd.append("--reference")
    p = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    banner = next((l for l in p.stdout.splitlines() if "backend cpu" in l), "")
    with open(metrics) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["step_ms"] for r in rows[warmup:]], banner


def run_torch(python, size, dtype, steps, warmup, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([python, "-c", TORCH_SCRIPT, str(size), dtype, str(steps), str(warmup),
                        str(threads)], check=True, capture_output=True, text=True, env=env)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["ms"], out["version"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build", help="build folder (bin/)")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--b", choices=["weight", "input"], default="weight",
                    help="B as a weight (an initializer, packed once) or a graph input (new "
                    "data every step, packed every step)")
    ap.add_argument("--reference", action="store_true",
                    help="also run a800c-run --reference (the reference kernels)")
    ap.add_argument("--torch-python", default="/work/venv-torch/bin/python",
                    help="a Python with torch (optional; without it only a800c runs)")
    args = ap.parse_args()
    have_torch = os.path.exists(args.torch_python)
    flops = 2.0 * args.size ** 3
    print(f"load average before: {os.getloadavg()}")
    print(f"MatMul {args.size}^3 (B a graph {args.b}), {args.threads} thread(s), {args.rounds} "
          f"rounds x {args.steps} steps, medians")
    with tempfile.TemporaryDirectory() as work:
        sides = ["a800c"] + (["a800c-ref"] if args.reference else []) + \
            (["torch"] if have_torch else [])
        rows = []
        for dtype in args.dtypes.split(","):
            model = os.path.join(work, f"matmul.{dtype}.onnx")
            plan = os.path.join(work, f"matmul.{dtype}.plan")
            make_model(model, args.size, dtype, args.b)
            inputs = save_inputs(work, args.size, dtype, args.b)
            subprocess.run([os.path.join(args.build, "bin", "a800c"), model, "-o", plan,
                            f"--precision={dtype}"], check=True, capture_output=True)
            times = {s: [] for s in sides}
            banner = version = ""
            for _ in range(args.rounds):
                for side in sides:
                    if side == "torch":
                        t, version = run_torch(args.torch_python, args.size, dtype, args.steps,
                                               args.warmup, args.threads)
                    else:
                        t, b = run_a800c(args.build, plan, inputs, args.steps, args.warmup,
                                         args.threads, os.path.join(work, "m.jsonl"),
                                         side == "a800c-ref")
                        banner = banner or (b if side == "a800c" else "")
                    times[side] += t
            gf = {s: flops / (statistics.median(times[s]) * 1e-3) / 1e9 for s in sides}
            best = {s: flops / (min(times[s]) * 1e-3) / 1e9 for s in sides}
            rows.append((dtype, gf, best))
            if banner:
                print(banner)
        header = f"{'dtype':<6}" + "".join(f"{s + ' GFLOP/s':>20}" for s in sides)
        if have_torch:
            header += f"{'a800c/torch':>13}"
        print(header)
        for dtype, gf, best in rows:
            line = f"{dtype:<6}" + "".join(f"{gf[s]:>20.1f}" for s in sides)
            if have_torch:
                line += f"{gf['a800c'] / gf['torch']:>13.2f}"
            print(line)
        # On a loaded machine the medians move by several times between runs; the best step
        # says what the code does when it has a core to itself.
        print("best step, GFLOP/s:")
        for dtype, gf, best in rows:
            line = f"{dtype:<6}" + "".join(f"{best[s]:>20.1f}" for s in sides)
            if have_torch:
                line += f"{best['a800c'] / best['torch']:>13.2f}"
            print(line)
        if have_torch:
            print(f"torch {version}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
