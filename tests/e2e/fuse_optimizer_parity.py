#!/usr/bin/env python3
"""fuse-optimizer keeps every bit: each example model, compiled for training in fp16 and amp
with the `plan` pipeline and with the same pipeline less `fuse-optimizer`, trains STEPS AdamW
steps on the same batches on the CPU backend (fast kernels, then --reference); the two plans'
losses, skipped steps and final checkpoints (parameters, moments, working copies, scaler state)
must be identical to the byte.

    python3 tests/e2e/fuse_optimizer_parity.py mlp --bin build/bin --models build/models

The fused plan must hold a8.CheckFinite and, in fp16, a8.AdamUpdate with a working copy
(copy_to), else it would compare a plan with itself. The initial scale 2^19 makes the first
steps overflow (skipped steps are compared too; not all may be skipped).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from fuse_parity import feeds, parse_model_args

STEPS = 5
BATCH = 8
ARGS = None


def plan_passes():
    out = subprocess.run([os.path.join(ARGS.bin, "a800c"), "--list-passes"], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        words = line.split()
        if len(words) > 1 and words[0] == "plan":
            return words[1].split(",")
    sys.exit("a800c --list-passes: no `plan` pipeline")


def train(work, model, mode, fold, reference):
    tag = f"{model}.{mode}.{'fold' if fold else 'nofold'}.{'ref' if reference else 'fast'}"
    plan = os.path.join(work, f"{tag}.plan")
    passes = [p for p in plan_passes() if fold or p != "fuse-optimizer"]
    flags = ["--loss=cross_entropy", "--optimizer=adamw", "--lr=1e-3", f"--batch={BATCH}",
             f"--precision={mode}", "--init-scale=524288", f"--passes={','.join(passes)}"]
    subprocess.run([os.path.join(ARGS.bin, "a800c"), os.path.join(ARGS.models, f"{model}.onnx"),
                    "-o", plan, *flags], check=True, capture_output=True)
    shown = subprocess.run([os.path.join(ARGS.bin, "a800c-inspect"), plan], check=True,
                           capture_output=True, text=True).stdout
    run_flags = []
    for name, value in feeds(model, BATCH * STEPS, seed=11).items():
        path = os.path.join(work, f"{model}.{name}.npy")
        np.save(path, value)
        run_flags += ["--input", f"{name}={path}"]
    if reference:
        run_flags.append("--reference")
    metrics = os.path.join(work, f"{tag}.jsonl")
    ckpt = os.path.join(work, f"{tag}.safetensors")
    p = subprocess.run([os.path.join(ARGS.bin, "a800c-run"), plan, "--backend=cpu", *run_flags,
                        f"--steps={STEPS}", f"--metrics={metrics}", f"--checkpoint={ckpt}"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"a800c-run {tag} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    with open(metrics) as f:
        steps = [(r["loss"], r["skipped"]) for r in map(json.loads, f)]
    with open(ckpt, "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        data = f.read()
    tensors = {k: data[v["data_offsets"][0]:v["data_offsets"][1]]
               for k, v in header.items() if k != "__metadata__"}
    return shown, steps, tensors


def main():
    global ARGS
    ARGS = parse_model_args(__doc__)
    with tempfile.TemporaryDirectory(prefix="a8_fuse_optimizer_parity_") as work:
        for mode in ("fp16", "amp"):
            for reference in (False, True):
                shown, fold, fold_ckpt = train(work, ARGS.model, mode, True, reference)
                plain_shown, plain, plain_ckpt = train(work, ARGS.model, mode, False, reference)
                assert "a8.CheckFinite" in shown, f"{mode}: nothing folded"
                assert "a8.CheckFinite" not in plain_shown
                if mode == "fp16":
                    assert "a8.AdamUpdate:f32,f16,f32,f32,f32,f32->f32,f32,f32,f16" in shown, \
                        f"{mode}: no working copy folded"
                assert fold == plain, f"{ARGS.model} {mode}: losses {fold} vs {plain}"
                assert not all(s for _, s in fold), f"{mode}: every step was skipped"
                assert fold_ckpt.keys() == plain_ckpt.keys()
                differ = [k for k in fold_ckpt if fold_ckpt[k] != plain_ckpt[k]]
                assert not differ, f"{ARGS.model} {mode}: checkpoint tensors differ: {differ[:5]}"
                kind = "reference" if reference else "fast"
                print(f"{ARGS.model} {mode} ({kind}): {len(fold)} steps, losses and "
                      f"{len(fold_ckpt)} checkpoint tensors identical; skipped "
                      f"{sum(s for _, s in fold)}")


if __name__ == "__main__":
    main()
