"""How much does one PyTorch autocast curve tell? Runs PyTorch's own SGD curve of a zoo model in
bfloat16 (or float16) autocast from N starting points that differ from the zoo's by a relative
1e-6 per weight (far below what moves the float32 curve: that is printed too), and prints each
curve's largest relative step deviation from the zoo's float32 curve (loss_sgd.npy), as
meta.json's pytorch_autocast_vs_fp32 control measures it once. Run by hand in the torch venv:

    /work/venv-torch/bin/python models/zoo/autocast_spread.py t5 --dtype bf16 -n 8

If the deviations spread over a wide range, a bound of 3x one sample of them is a draw, not a
property of the model (README's model zoo section, "Reading the deviations")."""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_zoo  # noqa: E402


def perturbed_curve(name, seed, rel, dtype):
    fresh = make_zoo.fresh

    def perturbed(n):
        model = fresh(n)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1 + rel * torch.randn(p.shape, generator=gen))
        return model

    make_zoo.fresh = perturbed
    try:
        inputs, labels = make_zoo.data(make_zoo.MODELS[name][1])
        return make_zoo.curve(name, inputs, labels, make_zoo.OPTIMIZERS["sgd"], autocast=dtype)
    finally:
        make_zoo.fresh = fresh


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    parser.add_argument("-n", type=int, default=8)
    parser.add_argument("--rel", type=float, default=1e-6)
    args = parser.parse_args()
    ref = np.load(os.path.join(make_zoo.ZOO, args.model, "loss_sgd.npy"))
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    dev = lambda c: float((np.abs(c - ref) / ref).max())  # noqa: E731
    print(f"{args.model} SGD, starting points perturbed by {args.rel:g} relative:")
    print(f"  float32, seed 1: {dev(perturbed_curve(args.model, 1, args.rel, None)):.1e} "
          "from the zoo's float32 curve")
    devs = []
    for seed in range(args.n):
        rel = 0.0 if seed == 0 else args.rel
        devs.append(dev(perturbed_curve(args.model, seed, rel, dtype)))
        print(f"  {args.dtype} autocast, seed {seed}{' (unperturbed)' if seed == 0 else ''}: "
              f"{devs[-1]:.1e}")
    print(f"  {args.dtype}: min {min(devs):.1e}, median {np.median(devs):.1e}, "
          f"max {max(devs):.1e} over {len(devs)} starting points")


if __name__ == "__main__":
    main()
