#!/usr/bin/env python3
"""Writes the committed seed corpora of the libFuzzer targets (tests/fuzz/corpus/TARGET/).

    python3 tests/fuzz/make_seeds.py [--a800c build/bin/a800c]

import: the lit tests' ONNX text models (tests/lit/**/*.onnxtxt) as binary ONNX, plus a tiny BERT-style
        encoder from models/make_models.py; plan: plans a800c compiles from the MLP (inference and
        training; only with --a800c); npy: every dtype and header version the reader takes;
        safetensors: checkpoint-like files with their crc32c metadata; ir: the lit tests' IR
        texts. Deterministic: the same inputs give the same files.
"""
import argparse
import glob
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.parser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    with open(os.path.join(OUT, target, name), "wb") as f:
        f.write(data)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def safetensors_bytes(tensors, metadata, checksums=True):
    """The a800c writer's layout: name order, sorted keys, header padded to 8 bytes."""
    import json
    meta = dict(metadata)
    if checksums:
        for name, arr in tensors.items():
            meta["crc32c:" + name] = "%08x" % crc32c(arr.tobytes())
        crc = 0
        for k in sorted(meta):
            crc = crc32c(k.encode() + b"\0", crc)
            crc = crc32c(meta[k].encode() + b"\0", crc)
        meta["crc32c:__metadata__"] = "%08x" % crc
    names = {np.dtype("float32"): "F32", np.dtype("float16"): "F16", np.dtype("float64"): "F64",
             np.dtype("int64"): "I64", np.dtype("int32"): "I32", np.dtype("int8"): "I8",
             np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL"}
    header, at, data = {}, 0, b""
    for name in sorted(tensors):
        arr = tensors[name]
        raw = arr.tobytes()
        header[name] = {"dtype": names[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [at, at + len(raw)]}
        at += len(raw)
        data += raw
    if meta:
        header["__metadata__"] = meta
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return len(text).to_bytes(8, "little") + text + data


def import_seeds():
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "lit", "**", "*.onnxtxt"),
                                 recursive=True)):
        with open(path) as f:
            text = "".join(l for l in f if not l.lstrip().startswith("#"))
        try:
            model = onnx.parser.parse_model(text)
        except Exception as e:  # a test of the parser's own errors
            print(f"skip {path}: {e}", file=sys.stderr)
            continue
        write("import", os.path.basename(path).replace(".onnxtxt", ".onnx"),
              model.SerializeToString())
    sys.path.insert(0, os.path.join(ROOT, "models"))
    import make_models
    write("import", "bert_tiny.onnx",
          make_models.make_bert(1, hidden=8, heads=2, seq=4, vocab=16).SerializeToString())


def npy_seeds():
    import io
    rng = np.random.default_rng(7)
    arrays = {
        "f4": rng.standard_normal((2, 3)).astype("<f4"),
        "f2": rng.standard_normal((4,)).astype("<f2"),
        "f8": rng.standard_normal((1, 2, 2)).astype("<f8"),
        "i8": np.arange(6, dtype="<i8").reshape(3, 2),
        "i4": np.arange(3, dtype="<i4"),
        "i1": np.array([-1, 2], dtype="i1"),
        "u1": np.array([1, 255], dtype="u1"),
        "b1": np.array([True, False, True]),
        "u2_bf16": np.array([0x3F80, 0xC000], dtype="<u2"),
        "scalar": np.array(1.5, dtype="<f4"),
        "empty": np.zeros((0, 3), dtype="<f4"),
    }
    for name, arr in arrays.items():
        buf = io.BytesIO()
        np.save(buf, arr)
        write("npy", name + ".npy", buf.getvalue())
    for version in [(2, 0), (3, 0)]:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, arrays["f4"], version=version)
        write("npy", "f4_v%d.npy" % version[0], buf.getvalue())


def safetensors_seeds():
    rng = np.random.default_rng(11)
    meta = {"format": "a800c-checkpoint", "format_version": "2", "model_name": "mlp",
            "model_hash": "fnv1a64:0123456789abcdef", "plan_hash": "fnv1a64:fedcba9876543210",
            "precision": "amp", "seed": "42", "step": "3", "shuffle": "1"}
    tensors = {
        "fc1.weight": rng.standard_normal((4, 3)).astype(np.float32),
        "fc1.bias": np.zeros(4, dtype=np.float32),
        "fc1.weight.adam_m": rng.standard_normal((4, 3)).astype(np.float16),
        "a8.step": np.array([3], dtype=np.int64),
        "a8.control": np.array([1, 0], dtype=np.int32),
        "mask": np.array([True, False]),
        "bytes": np.array([1, 2, 3], dtype=np.uint8),
        "small": np.array([-1], dtype=np.int8),
        "wide": np.array([0.5], dtype=np.float64),
    }
    write("safetensors", "checkpoint.safetensors", safetensors_bytes(tensors, meta))
    write("safetensors", "no_checksums.safetensors",
          safetensors_bytes({"w": tensors["fc1.weight"]}, {}, checksums=False))
    write("safetensors", "empty.safetensors", safetensors_bytes({}, {"format": "x"}))


def ir_seeds():
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "lit", "**", "*.a8ir"),
                                 recursive=True)):
        with open(path) as f:
            text = "".join(l for l in f if not l.lstrip().startswith("//"))
        write("ir", os.path.basename(path), text.encode())


def plan_seeds(a800c):
    """Small plans (the lit tests' MLP and fusion models): inference, training with the loss
    scaler, accumulation and clipping, fp32 SGD."""
    import tempfile
    lit = os.path.join(ROOT, "tests", "lit")
    runs = {
        "mlp_infer.plan": ["Inputs/mlp.onnxtxt", "--batch=2"],
        "mlp_train.plan": ["Inputs/mlp.onnxtxt", "--batch=2", "--loss=mse", "--logits=y",
                           "--accumulate=2", "--clip-grad-norm=1"],
        "fuse_train_fp32.plan": ["passes/fuse.onnxtxt", "--batch=3", "--precision=fp32",
                                 "--loss=mse", "--logits=a", "--optimizer=sgd"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, *flags) in runs.items():
            out = os.path.join(tmp, name)
            r = subprocess.run([a800c, os.path.join(lit, model), *flags, "-o", out],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"skip {name}: {r.stderr.strip()}", file=sys.stderr)
                continue
            with open(out, "rb") as f:
                write("plan", name, f.read())
        # A real checkpoint for the safetensors target: the amp MLP with Adam after 2 steps.
        run = os.path.join(os.path.dirname(a800c), "a800c-run")
        plan, ckpt = os.path.join(tmp, "adam.plan"), os.path.join(tmp, "c.safetensors")
        subprocess.run([a800c, os.path.join(lit, "Inputs/mlp.onnxtxt"), "--batch=2", "--loss=mse",
                        "--logits=y", "--optimizer=adam", "-o", plan], check=True)
        subprocess.run([run, plan, "--synthetic", "--steps=2", f"--checkpoint={ckpt}"],
                       check=True, capture_output=True)
        with open(ckpt, "rb") as f:
            write("safetensors", "a800c_checkpoint.safetensors", f.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a800c", help="a800c binary, for the plan seeds")
    args = ap.parse_args()
    import_seeds()
    npy_seeds()
    safetensors_seeds()
    ir_seeds()
    if args.a800c:
        plan_seeds(args.a800c)


if __name__ == "__main__":
    main()
