"""How much does one PyTorch autocast curve tell? Runs PyTorch's own curve of a zoo model in
bfloat16 (or float16 with GradScaler) autocast from N starting points: the zoo's own (seed 0) and
N-1 that differ from it by a relative 1e-6 per weight (far below what moves the float32 curve:
that is printed too), and prints each curve's largest relative step deviation from the zoo's
float32 curve (loss_OPTIMIZER.npy), measured as tests/e2e/zoo.py measures a800c's (a step
GradScaler skips is compared with the float32 loss after as many updates). Run by hand in the
torch venv:

    /work/venv-torch/bin/python models/zoo/autocast_spread.py t5 --dtype bf16 -n 8
    /work/venv-torch/bin/python models/zoo/autocast_spread.py --store -n 5 [MODEL ...]

--store (every model, both dtypes, both optimizers unless --dtype/--optimizer say one) writes the
N deviations into meta.json's `pytorch_autocast_spread` (with n and rel), from which the zoo
test bounds a800c's amp and bf16 curves: on a chaotic curve (SGD at lr 0.1) one autocast run is
a draw, and a bound of a multiple of one draw is luck, not a property of the model (README's
model zoo section, "Reading the deviations")."""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_zoo  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def perturbed_curve(name, optimizer, seed, rel, dtype):
    """The curve from the zoo's start with every weight times (1 + rel * randn(seed)); its
    deviation from the zoo's float32 curve."""
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
        skipped = []
        losses = make_zoo.curve(name, inputs, labels, make_zoo.OPTIMIZERS[optimizer],
                                autocast=dtype, skipped=skipped)
    finally:
        make_zoo.fresh = fresh
    ref = np.load(os.path.join(make_zoo.ZOO, name, f"loss_{optimizer}.npy"))
    return make_zoo.deviation(losses, ref, skipped), sum(skipped)


def spread(name, optimizer, low, n, rel):
    devs = []
    for seed in range(n):
        dev, skipped = perturbed_curve(name, optimizer, seed, 0.0 if seed == 0 else rel,
                                       DTYPES[low])
        devs.append(dev)
        print(f"  {name} {low} {optimizer}, seed {seed}{' (unperturbed)' if seed == 0 else ''}: "
              f"{dev:.1e}" + (f" ({skipped} steps skipped)" if skipped else ""), flush=True)
    print(f"  {name} {low} {optimizer}: min {min(devs):.1e}, median {np.median(devs):.1e}, "
          f"max {max(devs):.1e} over {n} starting points", flush=True)
    return devs


def store(name, low, optimizer, devs, n, rel):
    """Merges one entry into meta.json (re-read each time: runs may be split by model)."""
    path = os.path.join(make_zoo.ZOO, name, "meta.json")
    with open(path) as f:
        meta = json.load(f)
    entry = meta.setdefault("pytorch_autocast_spread", {})
    if entry.get("n", n) != n or entry.get("rel", rel) != rel:
        entry.clear()
    entry.update(n=n, rel=rel)
    entry.setdefault(low, {})[optimizer] = devs
    with open(path, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--dtype", choices=list(DTYPES))
    parser.add_argument("--optimizer", choices=list(make_zoo.OPTIMIZERS))
    parser.add_argument("-n", type=int, default=8)
    parser.add_argument("--rel", type=float, default=1e-6)
    parser.add_argument("--store", action="store_true", help="write meta.json's spread")
    args = parser.parse_args()
    torch.set_num_threads(1)
    models = args.models or list(make_zoo.MODELS)
    optimizers = [args.optimizer] if args.optimizer else list(make_zoo.OPTIMIZERS)
    lows = [args.dtype] if args.dtype else list(DTYPES)
    for optimizer in optimizers:
        for name in models:
            if not args.store:
                print(f"  float32, seed 1: "
                      f"{perturbed_curve(name, optimizer, 1, args.rel, None)[0]:.1e} from the "
                      "zoo's float32 curve")
            for low in lows:
                devs = spread(name, optimizer, low, args.n, args.rel)
                if args.store:
                    store(name, low, optimizer, devs, args.n, args.rel)


if __name__ == "__main__":
    main()
