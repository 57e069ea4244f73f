"""How much rounding does one amp (or bf16) step inject into the gradients, a800c against PyTorch's
own autocast? Runs one SGD step (lr 0.1) of a zoo model's dynamo export in a800c (fp32 and the
low precision, --checkpoint) and recovers each parameter's gradient as (p0 - p1) / lr; computes
PyTorch's float32 gradient and its autocast one (float16 with the loss scaled by 65536 as
GradScaler's first step, or bfloat16) on the same batch; prints per parameter the relative error
(norms) of a800c's and PyTorch's low-precision gradient against PyTorch's float32 one, their
ratio, and the floor under the recovered gradient (float32 rounding of p0 and p1: a ratio is
meaningful only well above it, not for LayerNorm weights near 1). Run by hand in the torch venv
after building a800c:

    /work/venv-torch/bin/python models/zoo/step_gradient_error.py gpt2 [--precision amp|bf16]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_zoo  # noqa: E402

LR = 0.1


def a800c_step(bin_dir, name, meta, precision, work):
    plan, ckpt = os.path.join(work, "p.plan"), os.path.join(work, f"{precision}.safetensors")
    axis = ["--class-axis=-1"] if meta["class_axis"] is not None else []
    zoo = os.path.join(make_zoo.ZOO, name)
    subprocess.run([os.path.join(bin_dir, "a800c"), os.path.join(zoo, "model.onnx"), "-o", plan,
                    f"--precision={precision}", "--loss=cross_entropy", *axis,
                    "--optimizer=sgd", f"--lr={LR}"], check=True, capture_output=True)
    inputs = [f"--input={n}={os.path.join(zoo, n + '.npy')}" for n in meta["inputs"]]
    subprocess.run([os.path.join(bin_dir, "a800c-run"), plan, *inputs,
                    f"--input=labels={os.path.join(zoo, 'labels.npy')}", "--steps=1",
                    f"--checkpoint={ckpt}"], check=True, capture_output=True)
    return load_file(ckpt)


def torch_grads(name, autocast):
    inputs, labels = make_zoo.data(make_zoo.MODELS[name][1])
    model = make_zoo.fresh(name).train()
    args = [torch.from_numpy(v) for v in inputs.values()]
    scale = 65536.0 if autocast == torch.float16 else 1.0
    with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=bool(autocast)):
        logits = model(*args).float()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             torch.from_numpy(labels).reshape(-1),
                                             ignore_index=-100)
    (loss * scale).backward()
    return {n: p.grad.double().numpy() / scale for n, p in model.named_parameters()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--precision", choices=["amp", "bf16"], default="amp")
    parser.add_argument("--bin", default=os.path.join(make_zoo.ZOO, "..", "..", "build", "bin"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    import json
    with open(os.path.join(make_zoo.ZOO, args.model, "meta.json")) as f:
        meta = json.load(f)
    with open(os.path.join(make_zoo.ZOO, args.model, "params.txt")) as f:
        held = dict(line.split() for line in f if line.strip())
    p0 = {n: p.detach().numpy() for n, p in make_zoo.fresh(args.model).named_parameters()}
    g32 = torch_grads(args.model, None)
    glow = torch_grads(args.model, torch.float16 if args.precision == "amp" else torch.bfloat16)
    with tempfile.TemporaryDirectory() as work:
        a8 = a800c_step(args.bin, args.model, meta, args.precision, work)
    if all(np.array_equal(a8[held[n]].reshape(p0[n].shape), p0[n]) for n in p0):
        sys.exit(f"{args.model}: a800c's loss scaler skipped the step (overflow at the initial "
                 "scale): no gradient to recover")
    ratios = []
    for name, g in g32.items():
        norm = np.linalg.norm(g)
        p1 = a8[held[name]].astype(np.float64).reshape(p0[name].shape)
        ga = (p0[name].astype(np.float64) - p1) / LR
        floor = np.linalg.norm(np.spacing(np.abs(p0[name]))) / LR / norm
        ea, et = np.linalg.norm(ga - g) / norm, np.linalg.norm(glow[name] - g) / norm
        usable = min(ea, et) > 10 * floor
        if usable:
            ratios.append(ea / et)
        print(f"{name:48s} a800c {ea:.1e}  PyTorch {et:.1e}  ratio {ea / et:.2f}  "
              f"(floor {floor:.1e}{'' if usable else ', too close: left out'})")
    print(f"a800c {args.precision} / PyTorch autocast gradient error, {len(ratios)} parameters: "
          f"min {min(ratios):.2f}, median {np.median(ratios):.2f}, max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
