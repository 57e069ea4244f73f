"""a800c's own spread, measured as autocast_spread.py measures PyTorch's: the zoo model's curve in
a800c from the same N starting points (seed 0: the zoo's; seeds 1..N-1: every parameter times
1 + 1e-6 * randn from torch's generator of that seed, in named_parameters() order, the very
weights autocast_spread.py starts PyTorch from), each curve's largest relative step deviation
from PyTorch's float32 curve (a step the loss scaler skips is compared with the loss after as
many updates, as tests/e2e/zoo.py does). Run by hand in the torch venv (torch for the generator,
onnx to write the perturbed models), after building a800c:

    /work/venv-torch/bin/python models/zoo/a800c_spread.py gpt2 --precision amp -n 8 \\
        [--exporter torchscript] [--bin build/bin] [-- --fp16-ops=Pow]

Flags after `--` go to every compile (a policy to compare, e.g. --fp16-ops=Pow runs GELU's
chain in fp16 as PyTorch's CPU autocast does)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import numpy_helper

ZOO = os.path.dirname(os.path.abspath(__file__))
OPTIMIZERS = {
    "sgd": ["--optimizer=sgd", "--lr=0.1"],
    "adamw": ["--optimizer=adamw", "--lr=1e-3", "--beta1=0.9", "--beta2=0.999", "--eps=1e-8",
              "--weight-decay=0.01"],
}


def perturb(model_path, params_path, seed, rel, out):
    """Writes the model with each named parameter (params.txt order) times 1 + rel * randn,
    drawn as autocast_spread.perturbed_curve draws it."""
    model = onnx.load(model_path)
    inits = {t.name: t for t in model.graph.initializer}
    gen = torch.Generator().manual_seed(seed)
    with open(params_path) as f:
        for line in f:
            if not line.strip():
                continue
            _, held = line.split()
            t = inits[held]
            value = numpy_helper.to_array(t)
            # drawn in the initializer's shape: where it holds the parameter transposed (a
            # TorchScript MatMul weight), the same draws land on other elements
            factor = (1 + rel * torch.randn(value.shape, generator=gen)).numpy()
            t.CopyFrom(numpy_helper.from_array((value * factor).astype(np.float32), held))
    onnx.save(model, out)


def run_curve(bin_dir, model_path, name, meta, precision, optimizer, flags, work):
    plan, metrics = os.path.join(work, "p.plan"), os.path.join(work, "m.jsonl")
    axis = ["--class-axis=-1"] if meta["class_axis"] is not None else []
    subprocess.run([os.path.join(bin_dir, "a800c"), model_path, "-o", plan,
                    f"--precision={precision}", "--loss=cross_entropy", *axis,
                    *OPTIMIZERS[optimizer], *flags], check=True, capture_output=True)
    inputs = [f"--input={n}={os.path.join(ZOO, name, n + '.npy')}" for n in meta["inputs"]]
    subprocess.run([os.path.join(bin_dir, "a800c-run"), plan, "--backend=cpu", *inputs,
                    f"--input=labels={os.path.join(ZOO, name, 'labels.npy')}", "--steps=20",
                    f"--metrics={metrics}"], check=True, capture_output=True)
    rows = [json.loads(line) for line in open(metrics)]
    losses = np.array([r["loss"] for r in rows])
    skipped = np.array([bool(r.get("skipped", False)) for r in rows])
    ref = np.load(os.path.join(ZOO, name, f"loss_{optimizer}.npy"))
    updates = np.concatenate([[0], np.cumsum(~skipped)[:-1]])
    return float((np.abs(losses - ref[updates]) / np.abs(ref[updates])).max()), int(skipped.sum())


def main():
    argv = sys.argv[1:]
    flags = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--precision", default="amp")
    parser.add_argument("--optimizer", choices=list(OPTIMIZERS), default="sgd")
    parser.add_argument("--exporter", choices=["dynamo", "torchscript"], default="dynamo")
    parser.add_argument("-n", type=int, default=8)
    parser.add_argument("--rel", type=float, default=1e-6)
    parser.add_argument("--bin", default=os.path.join(ZOO, "..", "..", "build", "bin"))
    args = parser.parse_args(argv)
    with open(os.path.join(ZOO, args.model, "meta.json")) as f:
        meta = json.load(f)
    export = meta["exporters"][args.exporter]
    params = "params.txt" if args.exporter == "dynamo" else "params_ts.txt"
    devs = []
    with tempfile.TemporaryDirectory() as work:
        for seed in range(args.n):
            model = os.path.join(work, "m.onnx")
            perturb(os.path.join(ZOO, args.model, export["file"]),
                    os.path.join(ZOO, args.model, params), seed, 0.0 if seed == 0 else args.rel,
                    model)
            dev, skipped = run_curve(args.bin, model, args.model, meta, args.precision,
                                     args.optimizer, flags, work)
            devs.append(dev)
            print(f"  a800c {args.model} ({args.exporter}) {args.precision} {args.optimizer}, "
                  f"seed {seed}: {dev:.1e}" + (f" ({skipped} skipped)" if skipped else ""),
                  flush=True)
    print(f"  a800c {args.model} ({args.exporter}) {args.precision} {args.optimizer}"
          f"{' ' + ' '.join(flags) if flags else ''}: min {min(devs):.1e}, median "
          f"{np.median(devs):.1e}, max {max(devs):.1e} over {args.n} starting points")


if __name__ == "__main__":
    main()
