#!/usr/bin/env python3
"""Checks a800c's shape inference against onnx's on the example models.

a800c imports each model with --batch=B, runs its pipeline and exports ONNX with value_info for
every value; onnx.shape_inference infers the original model with the batch dim bound to B. Every
value both know (by name) must have the same dtype and dims. Folded values (constants) are only
in onnx's result and are not compared.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import shape_inference


def types_of(model):
    out = {}
    for vi in list(model.graph.value_info) + list(model.graph.output) + list(model.graph.input):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        out[vi.name] = (t.elem_type, dims)
    return out


def bind_batch(model, batch):
    for vi in list(model.graph.input) + list(model.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if dims and not dims[0].HasField("dim_value"):
            dims[0].Clear()
            dims[0].dim_value = batch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a800c", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--batch", type=int, default=3)
    args = ap.parse_args()
    failures = 0
    compared = 0
    with tempfile.TemporaryDirectory() as work:
        for name in ("mlp", "cnn", "bert"):
            path = os.path.join(args.models, f"{name}.onnx")
            out = os.path.join(work, f"{name}.onnx")
            subprocess.run([args.a800c, path, f"--batch={args.batch}", "--precision=fp32", "--emit=onnx",
                            "-o", out],
                           check=True)
            ours = types_of(onnx.load(out))
            original = onnx.load(path)
            bind_batch(original, args.batch)
            theirs = types_of(shape_inference.infer_shapes(original, strict_mode=True,
                                                           data_prop=True))
            n = 0
            for value, t in sorted(ours.items()):
                if value not in theirs:
                    continue
                n += 1
                if theirs[value] != t:
                    print(f"{name}: '{value}': a800c {t}, onnx {theirs[value]}")
                    failures += 1
            print(f"{name}: {n} values compared")
            compared += n
            if n == 0:
                failures += 1
    print(f"shapes-vs-onnx: {compared - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
