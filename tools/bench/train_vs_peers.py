#!/usr/bin/env python3
"""The fp32 training step of the example models against PyTorch eager and onnxruntime-training.

    python3 tools/bench/train_vs_peers.py --build build \\
        [--torch-python /work/venv-torch/bin/python] [--ort-python /work/venv-ortt/bin/python] \\
        [--models mlp,cnn,bert] [--batches 32,256] [--threads 1,2] [--rounds 3] [--steps 30]

The models are `models/make_models.py`'s examples (mlp, the small CNN, the 2-layer BERT-style
encoder), written into the work folder; each side trains the same parameters (the ones
`a800c --list-params` says a800c trains) from the same initial weights with AdamW (lr `--lr`,
betas 0.9/0.999, eps 1e-8, weight decay `--weight-decay`) and mean cross entropy, on one seeded
dataset of `--dataset-batches` batches saved as .npy (batch b is rows [(b mod D) * B, + B)):
- a800c: `a800c MODEL --batch=B --precision=fp32 --loss=cross_entropy --optimizer=adamw`, run by
  `a800c-run PLAN --backend=cpu --input ...` (default fast mode) with OMP_NUM_THREADS=T; the step
  time is `step_ms` from `--metrics`.
- PyTorch eager: the module written op for op in `precision_table.py`'s worker (same weights),
  `torch.set_num_threads(T)`, fused CPU AdamW; the step time is forward + loss + backward +
  optimizer step (perf_counter).
- onnxruntime-training: `onnxruntime.training.artifacts.generate_artifacts` on the same ONNX file
  (CrossEntropyLoss, AdamW), then the on-device training API (`Module`, `Optimizer`) with
  `intra_op_num_threads` = T; the step time is the training call + `Optimizer.step` +
  `lazy_reset_grad`. It needs the `onnxruntime-training-cpu` wheel (PyPI; it imports torch too,
  and its optimizer graphs need onnx <= 1.16), which cannot share an environment with plain
  onnxruntime: `python3 -m venv V && V/bin/pip install onnxruntime-training-cpu torch
  onnx==1.16.2 "numpy<2"`, then `--ort-python V/bin/python`.

Each run is its own process of `--warmup` + `--steps` steps; the sides alternate within each
round (a800c, PyTorch, ORT, a800c, ...), `--rounds` rounds. The table gives the median step time
of each side over every timed step of every round and a800c's time over each peer's (below 1:
a800c is faster), with the load average before and after. The peers are optional: a side whose
Python is not given (or cannot import what it needs) is left out with a note. Nothing here is
needed by the build or the tests.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import precision_table as pt  # noqa: E402  (the PyTorch worker and a800c runner)

# name -> (the PyTorch worker's model name, its arch, the float inputs' shapes, classes)
MODELS = {
    "mlp": ("mlp", {}, {"x": (64,)}, 10),
    "cnn": ("small-cnn", {}, {"x": (1, 8, 8)}, 10),
    "bert": ("bert", {"layers": 2, "hidden": 64, "heads": 4, "seq": 16}, None, 2),
}


def build_model(name, work):
    import onnx
    sys.path.insert(0, os.path.join(ROOT, "models"))
    import make_models
    path = os.path.join(work, f"{name}.onnx")
    if name == "bert":
        arch = MODELS[name][1]
        model = make_models.make_bert(arch["layers"], hidden=arch["hidden"],
                                      heads=arch["heads"], seq=arch["seq"])
    else:
        model = {"mlp": make_models.make_mlp, "cnn": make_models.make_cnn}[name]()
    onnx.save(model, path)
    return path


def make_data(name, batch, batches, rng, work):
    import numpy as np
    n = batch * batches
    _, arch, shapes, classes = MODELS[name]
    if name == "bert":
        seq = arch["seq"]
        mask = np.ones((n, seq), np.int64)
        for i, length in enumerate(rng.integers(seq // 2, seq + 1, n)):
            mask[i, length:] = 0
        data = {"input_ids": rng.integers(0, 1000, (n, seq)).astype(np.int64),
                "attention_mask": mask}
    else:
        data = {key: rng.standard_normal((n, *shape)).astype(np.float32)
                for key, shape in shapes.items()}
    data["labels"] = rng.integers(0, classes, n).astype(np.int64)
    files = {}
    for key, array in data.items():
        files[key] = os.path.join(work, f"{name}.b{batch}.{key}.npy")
        np.save(files[key], array)
    return files


def trained_params(args, onnx_path, batch):
    """The initializers a800c trains, from `a800c --list-params`."""
    cmd = [os.path.join(args.build, "bin", "a800c"), onnx_path, f"--batch={batch}",
           "--list-params"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"train_vs_peers.py: error: {' '.join(cmd)}:\n{r.stderr}")
    rows = [line.split() for line in r.stdout.splitlines()[1:]]  # past the header
    return [row[0] for row in rows if len(row) > 3 and row[2] == "trained" and "[" in row[1]]


def run_ort(args, spec, nthreads, steps):
    job = dict(spec, threads=nthreads, steps=steps, lr=args.lr, weight_decay=args.weight_decay)
    r = subprocess.run([args.ort_python, os.path.abspath(__file__), "--ort-worker",
                        json.dumps(job)], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS=str(nthreads)))
    if r.returncode != 0:
        return None, None, r.stderr.strip().splitlines()[-1:] or ["no message"]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["step_ms"], out["loss"], None


def ort_worker(job):
    """Runs under --ort-python: trains with onnxruntime-training's on-device API."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnxruntime.training import artifacts
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    art = job["ort_artifacts"]
    if not os.path.exists(os.path.join(art, "optimizer_model.onnx")):
        model = onnx.load(job["onnx"])
        # onnxruntime's LayerNormalization gradient reads the forward's saved mean and inverse
        # standard deviation: name the node's two optional outputs (the same math).
        for node in model.graph.node:
            if node.op_type == "LayerNormalization" and len(node.output) == 1:
                node.output.extend([f"{node.name}.saved_mean", f"{node.name}.saved_inv_std"])
        os.makedirs(art, exist_ok=True)
        frozen = [t.name for t in model.graph.initializer if t.name not in job["trained"]]
        artifacts.generate_artifacts(model, requires_grad=job["trained"], frozen_params=frozen,
                                     loss=artifacts.LossType.CrossEntropyLoss,
                                     optimizer=artifacts.OptimType.AdamW,
                                     artifact_directory=art)
    options = ort.SessionOptions()
    options.intra_op_num_threads = job["threads"]
    options.inter_op_num_threads = 1
    state = CheckpointState.load_checkpoint(os.path.join(art, "checkpoint"))
    module = Module(os.path.join(art, "training_model.onnx"), state,
                    os.path.join(art, "eval_model.onnx"), device="cpu", session_options=options)
    opt = Optimizer(os.path.join(art, "optimizer_model.onnx"), module)
    opt.set_learning_rate(job["lr"])
    module.train()
    data = {k: np.load(v) for k, v in job["data"].items()}
    batch = job["batch"]
    batches = data["labels"].shape[0] // batch
    inputs = [k for k in job["data"] if k != "labels"]
    times, losses = [], []
    for step in range(job["steps"]):
        lo = (step % batches) * batch
        feeds = [data[k][lo:lo + batch] for k in inputs] + [data["labels"][lo:lo + batch]]
        start = time.perf_counter()
        loss = module(*feeds)
        opt.step()
        module.lazy_reset_grad()
        times.append((time.perf_counter() - start) * 1e3)
        losses.append(float(loss))
    print(json.dumps({"step_ms": times, "loss": losses}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="the build folder (bin/a800c, bin/a800c-run)")
    ap.add_argument("--torch-python", default=None, help="a Python with torch, onnx and numpy")
    ap.add_argument("--ort-python", default=None,
                    help="a Python with onnxruntime-training-cpu, onnx and numpy")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--models", default="mlp,cnn,bert")
    ap.add_argument("--batches", default="32,256")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30, help="timed steps a run, after --warmup")
    ap.add_argument("--dataset-batches", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--ort-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ort_worker:
        return ort_worker(json.loads(args.ort_worker))
    import numpy as np
    for tool in ("a800c", "a800c-run"):
        if not os.path.exists(os.path.join(args.build, "bin", tool)):
            raise SystemExit(f"train_vs_peers.py: error: --build {args.build}: no bin/{tool}")
    for name in args.models.split(","):
        if name not in MODELS:
            raise SystemExit(f"train_vs_peers.py: error: --models: unknown model '{name}' "
                             f"({', '.join(MODELS)})")
    no_torch = pt.torch_available(args.torch_python)
    no_ort = pt.python_can(args.ort_python, "onnxruntime.training.api, onnx, numpy",
                           "--ort-python")
    sides = ["a800c"] + ([] if no_torch else ["torch"]) + ([] if no_ort else ["ort"])
    print(f"load average before: {os.getloadavg()}, {os.cpu_count()} CPUs")
    for side, why in (("PyTorch", no_torch), ("onnxruntime-training", no_ort)):
        if why:
            print(f"note: {side} left out ({why})")
    started = time.time()
    work = args.work or tempfile.mkdtemp(prefix="train_vs_peers.")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    batches = [int(b) for b in args.batches.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    pt_args = argparse.Namespace(build=args.build, torch_python=args.torch_python, lr=args.lr,
                                 weight_decay=args.weight_decay, torch_profile=None)
    specs = {}
    for name in args.models.split(","):
        onnx_path = build_model(name, work)
        for batch in batches:
            spec = specs[(name, batch)] = {
                "model": MODELS[name][0], "onnx": onnx_path, "batch": batch,
                "data": make_data(name, batch, args.dataset_batches, rng, work),
                "arch": MODELS[name][1], "trained": trained_params(args, onnx_path, batch),
                "ort_artifacts": os.path.join(work, f"{name}.ort")}
            pt.compile_plan(pt_args, spec, "fp32", os.path.join(work, f"{name}.b{batch}.plan"))

    times, failed, first_loss = {}, {}, {}
    steps = args.warmup + args.steps
    for rnd in range(args.rounds):
        for nthreads in threads:
            for key, spec in specs.items():
                for side in sides:
                    if (key, side) in failed:
                        continue
                    if side == "a800c":
                        ms, loss = pt.run_a800c(pt_args, spec, "fp32", nthreads, steps, work)
                    elif side == "torch":
                        ms, loss = pt.run_torch(pt_args, spec, "torch-fp32", nthreads, steps)
                    else:
                        ms, loss, why = run_ort(args, spec, nthreads, steps)
                        if ms is None:
                            failed[(key, side)] = why
                            continue
                    first_loss.setdefault((key, side), loss[0])
                    times.setdefault((key, nthreads, side), []).extend(ms[args.warmup:])
        print(f"round {rnd + 1}/{args.rounds} done, load average {os.getloadavg()}", flush=True)

    names = {"a800c": "a800c", "torch": "PyTorch eager", "ort": "onnxruntime-training"}
    print(f"\nfp32 training step, median ms ({args.rounds} rounds x {args.steps} steps after "
          f"{args.warmup} warm-up steps a run); ratio = a800c / peer (below 1: a800c faster)")
    head = ("| model | batch | threads |" + "".join(f" {names[s]} |" for s in sides) +
            "".join(f" a800c / {names[s]} |" for s in sides[1:]))
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for (name, batch), spec in specs.items():
        for nthreads in threads:
            med = {s: statistics.median(times[((name, batch), nthreads, s)]) for s in sides
                   if ((name, batch), nthreads, s) in times}
            cells = [f"{med[s]:.3f}" if s in med else "failed" for s in sides]
            cells += [f"{med['a800c'] / med[s]:.2f}" if s in med else "-" for s in sides[1:]]
            print(f"| {name} | {batch} | {nthreads} | " + " | ".join(cells) + " |")
    print("\nthe first step's loss (the same model, weights and data on every side):")
    for (name, batch) in specs:
        cells = [f"{names[s]} {first_loss[((name, batch), s)]:.5f}" for s in sides
                 if ((name, batch), s) in first_loss]
        print(f"  {name} batch {batch}: " + ", ".join(cells))
    for ((name, batch), side), why in failed.items():
        print(f"note: {names[side]} failed on {name} batch {batch}: {' '.join(why)}")
    print(f"\nload average after: {os.getloadavg()}; {time.time() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
