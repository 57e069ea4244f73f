#!/usr/bin/env python3
"""Exports scikit-learn's bundled handwritten digits set (no download) as .npy files.

    python3 models/make_digits.py [--out DIR] [--test N] [--seed S]

Writes DIR/digits_{train,test}_{x,y}.npy: x f32[N,64] (the 8x8 images, pixel values 0..16
scaled to [0, 1]), y i64[N] (the digit). The split is a fixed seeded permutation of the 1797
samples: 360 test samples, the other 1437 for training. mlp.onnx (models/make_models.py) takes
x f32[N,64]; cnn.onnx takes the same images as f32[N,1,8,8] (reshape the x arrays).
"""
import argparse
import os

import numpy as np
from sklearn.datasets import load_digits


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/data")
    parser.add_argument("--test", type=int, default=360, help="test samples (default 360)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split (default 0)")
    args = parser.parse_args()
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(args.seed).permutation(len(y))
    test, train = order[: args.test], order[args.test :]
    os.makedirs(args.out, exist_ok=True)
    for split, idx in (("train", train), ("test", test)):
        np.save(os.path.join(args.out, f"digits_{split}_x.npy"), np.ascontiguousarray(x[idx]))
        np.save(os.path.join(args.out, f"digits_{split}_y.npy"), np.ascontiguousarray(y[idx]))
    print(f"digits: {len(train)} train, {len(test)} test samples in {args.out}")


if __name__ == "__main__":
    main()
