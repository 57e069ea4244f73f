#!/usr/bin/env python3
"""The seed's precision table on this machine: training steps per second of a ResNet-style CNN
(3x64x64 images) and of a BERT-base-width encoder (hidden 768, 4 layers, seq 128, batch 8) in
a800c fp32 / amp / fp16 / bf16 (a800c-run on the CPU backend, default fast mode) and PyTorch eager
fp32 and `torch.autocast("cpu", dtype=torch.bfloat16)`, one and two threads, side by side in
one run; then the final loss of `--loss-steps` steps in each mode.

    python3 tools/bench/precision_table.py --build build [--torch-python /work/venv-torch/bin/python]
        [--threads 1,2] [--rounds 2] [--steps 5] [--loss-steps 200] [--models cnn,bert]

Both models are built here with the onnx Python API (the BERT-style graph is
`models/make_models.py`'s `make_bert` at the requested size; the CNN is a ResNet-style graph
written below), and the PyTorch side is a module of the same architecture, written out op for op,
whose parameters are the ONNX file's initializers: same model, same weights. The data is one
seeded dataset of `--dataset-batches` batches (random images or token ids, random labels), saved
as .npy and fed to a800c-run with `--input` (no shuffle: batch b is rows [(b mod D) * B, + B)) and
to PyTorch in the same order. Optimizer: AdamW (lr `--lr`, default 2e-5, betas 0.9/0.999, eps
1e-8, weight decay `--weight-decay`; PyTorch's fused CPU AdamW where it has one) on every float
initializer, in both; loss: mean cross entropy.

Timing: `--rounds` rounds; in each, for each thread count and model, every mode runs once in its
own process (a800c-run with OMP_NUM_THREADS; PyTorch with torch.set_num_threads) for
`--warmup` + `--steps` steps, alternating the modes (A B C ... A B C ...). The median of the
timed steps' times (a800c: `step_ms` from `--metrics`; PyTorch: perf_counter around forward,
backward and the optimizer step) over all rounds gives steps/s; the speedup is against the same
side's fp32 (the PyTorch autocast column also against a800c bf16). Loss: one run per mode of
`--loss-steps` steps on `--loss-threads` threads; the table gives the loss of the last step and
the mean of the last 10.

PyTorch is optional: the PyTorch columns are skipped, with a note, when `--torch-python` is not
given or cannot import torch. It runs in its own interpreter (this script re-runs itself there
with `--torch-worker`), so the a800c side needs only numpy and onnx.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
A8_MODES = ["fp32", "amp", "fp16", "bf16"]
TORCH_MODES = ["torch-fp32", "torch-bf16"]


# ---------------------------------------------------------------------------------------------
# Models and data (a800c side: numpy + onnx)


def make_cnn(width, classes=10):
    """ResNet-style: stem conv, then three stages (a residual block each; stages 2 and 3 start
    with a stride-2 conv doubling the channels), GlobalAveragePool, Gemm. BatchNormalization in
    training mode (batch statistics), as PyTorch's train()."""
    import numpy as np
    from onnx import TensorProto, helper
    sys.path.insert(0, os.path.join(ROOT, "models"))
    from make_models import Builder
    b = Builder(7)

    def conv_bn(x, cin, cout, prefix, stride=1, relu=True):
        w = b.weight(f"{prefix}.conv.weight", [cout, cin, 3, 3])
        y = b.op("Conv", [x, w], name=f"{prefix}.conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                 strides=[stride, stride])
        y = b.op("BatchNormalization",
                 [y, b.const(f"{prefix}.bn.scale", np.ones(cout, np.float32)),
                  b.const(f"{prefix}.bn.bias", np.zeros(cout, np.float32)),
                  b.const(f"{prefix}.bn.mean", np.zeros(cout, np.float32)),
                  b.const(f"{prefix}.bn.var", np.ones(cout, np.float32))],
                 [f"{prefix}.bn.y", f"{prefix}.bn.running_mean", f"{prefix}.bn.running_var"],
                 name=f"{prefix}.bn", epsilon=1e-5, momentum=0.9, training_mode=1)[0]
        return b.op("Relu", [y], name=f"{prefix}.relu") if relu else y

    def block(x, c, prefix):
        r = conv_bn(x, c, c, f"{prefix}.a")
        r = conv_bn(r, c, c, f"{prefix}.b", relu=False)
        return b.op("Relu", [b.op("Add", [x, r], name=f"{prefix}.add")], name=f"{prefix}.out")

    h = conv_bn("x", 3, width, "stem")
    h = block(h, width, "stage1")
    h = conv_bn(h, width, 2 * width, "down2", stride=2)
    h = block(h, 2 * width, "stage2")
    h = conv_bn(h, 2 * width, 4 * width, "down3", stride=2)
    h = block(h, 4 * width, "stage3")
    h = b.op("GlobalAveragePool", [h], name="gap")
    h = b.op("Flatten", [h], name="flatten", axis=1)
    b.op("Gemm", [h, b.weight("fc.weight", [classes, 4 * width], transposed=True),
                  b.const("fc.bias", np.zeros(classes, np.float32))], ["logits"], name="fc",
         transB=1)
    return b.model("cnn64", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 64, 64])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])])


def build_models(args, work):
    """Writes each model's ONNX file and dataset; returns {name: spec}."""
    import numpy as np
    import onnx
    sys.path.insert(0, os.path.join(ROOT, "models"))
    from make_models import make_bert
    rng = np.random.default_rng(args.seed)
    specs = {}
    for name in args.models.split(","):
        if name == "cnn":
            model, batch = make_cnn(args.cnn_width), args.cnn_batch
            n = batch * args.dataset_batches
            data = {"x": rng.standard_normal((n, 3, 64, 64)).astype(np.float32),
                    "labels": rng.integers(0, 10, n).astype(np.int64)}
            arch = {"width": args.cnn_width}
        elif name == "bert":
            model = make_bert(args.bert_layers, hidden=args.bert_hidden, heads=args.bert_heads,
                              seq=args.bert_seq, vocab=args.bert_vocab, ffn=args.bert_ffn)
            batch = args.bert_batch
            n = batch * args.dataset_batches
            mask = np.ones((n, args.bert_seq), np.int64)
            for i, length in enumerate(rng.integers(args.bert_seq // 2, args.bert_seq + 1, n)):
                mask[i, length:] = 0  # padded tails, as real batches have
            data = {"input_ids": rng.integers(0, args.bert_vocab, (n, args.bert_seq)).astype(np.int64),
                    "attention_mask": mask, "labels": rng.integers(0, 2, n).astype(np.int64)}
            arch = {"layers": args.bert_layers, "hidden": args.bert_hidden,
                    "heads": args.bert_heads, "seq": args.bert_seq}
        else:
            raise SystemExit(f"precision_table.py: error: --models: unknown model '{name}' "
                             "(cnn, bert)")
        path = os.path.join(work, f"{name}.onnx")
        onnx.save(model, path)
        files = {}
        for key, array in data.items():
            files[key] = os.path.join(work, f"{name}.{key}.npy")
            np.save(files[key], array)
        specs[name] = {"model": name, "onnx": path, "batch": batch, "data": files, "arch": arch}
    return specs


def compile_plan(args, spec, mode, plan):
    """A training plan of spec's model: AdamW with the bench's settings, cross entropy."""
    cmd = [os.path.join(args.build, "bin", "a800c"), spec["onnx"], "-o", plan,
           f"--batch={spec['batch']}", "--loss=cross_entropy", "--optimizer=adamw",
           f"--lr={args.lr}", "--beta1=0.9", "--beta2=0.999", "--eps=1e-8",
           f"--weight-decay={args.weight_decay}", f"--precision={mode}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{os.path.basename(sys.argv[0])}: error: {' '.join(cmd)}:\n{r.stderr}")
    spec.setdefault("plans", {})[mode] = plan


def compile_plans(args, specs, work):
    for name, spec in specs.items():
        for mode in A8_MODES:
            compile_plan(args, spec, mode, os.path.join(work, f"{name}.{mode}.plan"))


def run_a800c(args, spec, mode, threads, steps, work):
    """(per-step ms, per-step losses) of one a800c-run process."""
    metrics = os.path.join(work, "m.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = [os.path.join(args.build, "bin", "a800c-run"), spec["plans"][mode], "--backend=cpu",
           f"--steps={steps}", f"--metrics={metrics}"]
    for key, path in spec["data"].items():
        cmd += ["--input", f"{key}={path}"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"precision_table.py: error: {' '.join(cmd)}:\n{r.stderr[-3000:]}")
    with open(metrics) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [row["step_ms"] for row in rows], [row["loss"] for row in rows]


def run_torch(args, spec, mode, threads, steps):
    job = dict(spec, mode=mode, threads=threads, steps=steps, lr=args.lr,
               weight_decay=args.weight_decay, profile=args.torch_profile)
    r = subprocess.run([args.torch_python, os.path.abspath(__file__), "--torch-worker",
                        json.dumps(job)], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    if r.returncode != 0:
        raise SystemExit(f"precision_table.py: error: PyTorch {mode}:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["step_ms"], out["loss"]


def python_can(python, modules, flag="--torch-python"):
    """None when `python` imports `modules` (comma-separated), else why not."""
    if not python:
        return f"no {flag} given"
    try:
        r = subprocess.run([python, "-c", f"import {modules}"], capture_output=True, text=True,
                           timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{python}: {e}"
    if r.returncode != 0:
        return f"{python} cannot import {modules}"
    return None


def torch_available(python):
    return python_can(python, "torch, onnx, numpy")


# ---------------------------------------------------------------------------------------------
# PyTorch side (runs under --torch-python)


def torch_worker(job):
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    import torch.nn.functional as F
    torch.set_num_threads(job["threads"])
    torch.manual_seed(0)
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(job["onnx"]).graph.initializer}
    # The parameters a800c trains (job["trained"], from `a800c --list-params`) when given; else
    # every float initializer but BatchNormalization's running statistics.
    trained = job.get("trained") or [k for k, v in inits.items() if v.dtype == np.float32
                                     and not k.endswith((".bn.mean", ".bn.var"))]
    params = {k: torch.nn.Parameter(torch.from_numpy(inits[k].copy())) for k in trained}
    P = params
    C = {k: torch.from_numpy(v.copy()) for k, v in inits.items() if k not in params}
    arch = job["arch"]

    if job["model"] == "mlp":  # models/make_models.py's make_mlp
        def forward(x):
            h = F.relu(F.linear(x, P["fc1.weight"], P["fc1.bias"]))
            h = F.relu(F.linear(h, P["fc2.weight"], P["fc2.bias"]))
            return F.linear(h, P["fc3.weight"], P["fc3.bias"])
        inputs = ["x"]
    elif job["model"] == "small-cnn":  # make_cnn
        # Its BatchNormalization is the inference form, as exporters write it; a training plan
        # (a800c's, onnxruntime-training's) normalises with the batch's statistics and updates
        # the running ones (ONNX momentum 0.9 is PyTorch's 0.1), as PyTorch's train() does.
        def conv_bn_stats(x, prefix, relu=True):
            y = F.conv2d(x, P[f"{prefix}.conv.weight"], padding=1)
            y = F.batch_norm(y, C[f"{prefix}.bn.mean"], C[f"{prefix}.bn.var"],
                             P[f"{prefix}.bn.scale"], P[f"{prefix}.bn.bias"], training=True,
                             momentum=0.1, eps=1e-5)
            return F.relu(y) if relu else y

        def forward(x):
            h = conv_bn_stats(x, "stem")
            r = conv_bn_stats(conv_bn_stats(h, "block1.a"), "block1.b", relu=False)
            h = F.max_pool2d(F.relu(h + r), 2)
            h = conv_bn_stats(h, "block2").mean(dim=(2, 3))
            return F.linear(h, P["fc.weight"], P["fc.bias"])
        inputs = ["x"]
    elif job["model"] == "cnn":
        def conv_bn(x, prefix, stride=1, relu=True):
            y = F.conv2d(x, P[f"{prefix}.conv.weight"], stride=stride, padding=1)
            y = F.batch_norm(y, None, None, P[f"{prefix}.bn.scale"], P[f"{prefix}.bn.bias"],
                             training=True, eps=1e-5)
            return F.relu(y) if relu else y

        def block(x, prefix):
            r = conv_bn(conv_bn(x, f"{prefix}.a"), f"{prefix}.b", relu=False)
            return F.relu(x + r)

        def forward(x):
            h = block(conv_bn(x, "stem"), "stage1")
            h = block(conv_bn(h, "down2", stride=2), "stage2")
            h = block(conv_bn(h, "down3", stride=2), "stage3")
            h = h.mean(dim=(2, 3))
            return h @ P["fc.weight"].t() + P["fc.bias"]
        inputs = ["x"]
    else:
        import math
        hidden, heads, seq = arch["hidden"], arch["heads"], arch["seq"]
        d = hidden // heads

        def ln(x, name):
            return F.layer_norm(x, (hidden,), P[f"{name}.gamma"], P[f"{name}.beta"], eps=1e-12)

        def forward(ids, mask):
            n = ids.shape[0]
            h = ln(P["embeddings.token"][ids] + P["embeddings.position"], "embed.ln")
            keep = mask.bool()[:, None, None, :]
            for i in range(arch["layers"]):
                p = f"layer{i}"

                def dense(x, name):
                    return x @ P[f"{p}.{name}.weight"] + P[f"{p}.{name}.bias"]

                def split(x):
                    return x.reshape(n, seq, heads, d).transpose(1, 2)
                q, k, v = (split(dense(h, name)) for name in ("q", "k", "v"))
                s = (q @ k.transpose(-1, -2)) / math.sqrt(d)
                s = torch.where(keep, s, torch.tensor(-1e4, dtype=s.dtype))
                c = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(n, seq, hidden)
                h = ln(h + dense(c, "out"), f"{p}.ln1")
                f = dense(h, "ffn1")
                g = f * (torch.erf(f / math.sqrt(2.0)) + 1.0) * 0.5
                h = ln(h + dense(g, "ffn2"), f"{p}.ln2")
            return h.mean(dim=1) @ P["classifier.weight"].t() + P["classifier.bias"]
        inputs = ["input_ids", "attention_mask"]

    data = {k: torch.from_numpy(np.load(v)) for k, v in job["data"].items()}
    batch, batches = job["batch"], data["labels"].shape[0] // job["batch"]
    opt_args = dict(lr=job["lr"], betas=(0.9, 0.999), eps=1e-8, weight_decay=job["weight_decay"])
    try:  # the fused CPU AdamW (torch >= 2.4) is PyTorch's fastest; the foreach one otherwise
        opt = torch.optim.AdamW(list(params.values()), fused=True, **opt_args)
    except (RuntimeError, TypeError):
        opt = torch.optim.AdamW(list(params.values()), **opt_args)
    times, losses = [], []
    for step in range(job["steps"]):
        lo = (step % batches) * batch
        feeds = [data[k][lo:lo + batch] for k in inputs]
        labels = data["labels"][lo:lo + batch]
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if job["mode"] == "torch-bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = forward(*feeds)
                loss = F.cross_entropy(logits.float(), labels)
        else:
            loss = F.cross_entropy(forward(*feeds), labels)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - start) * 1e3)
        losses.append(loss.item())
    if job.get("profile"):  # --torch-profile: a torch.profiler table of two more steps
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for step in range(2):
                feeds = [data[k][:batch] for k in inputs]
                opt.zero_grad(set_to_none=True)
                with torch.autocast("cpu", dtype=torch.bfloat16,
                                    enabled=job["mode"] == "torch-bf16"):
                    loss = F.cross_entropy(forward(*feeds).float(), data["labels"][:batch])
                loss.backward()
                opt.step()
        with open(f"{job['profile']}.{job['model']}.{job['mode']}.{job['threads']}.txt", "w") as f:
            f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
    print(json.dumps({"step_ms": times, "loss": losses}))


# ---------------------------------------------------------------------------------------------


def fmt_rate(ms):
    return f"{1e3 / ms:.2f}" if ms else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="the build folder (bin/a800c, bin/a800c-run)")
    ap.add_argument("--torch-python", default=None,
                    help="a Python with torch (e.g. /work/venv-torch/bin/python); "
                         "without it the PyTorch columns are skipped")
    ap.add_argument("--torch-profile", default=None, metavar="PREFIX",
                    help="also write a torch.profiler table of two extra steps of each PyTorch "
                         "run to PREFIX.MODEL.MODE.THREADS.txt")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--models", default="cnn,bert")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4, help="timed steps a run, after --warmup")
    ap.add_argument("--loss-steps", type=int, default=200, help="0: no loss runs")
    ap.add_argument("--loss-threads", type=int, default=2)
    ap.add_argument("--dataset-batches", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--cnn-batch", type=int, default=16)
    ap.add_argument("--cnn-width", type=int, default=32, help="stage-1 channels (then 2x, 4x)")
    ap.add_argument("--bert-batch", type=int, default=8)
    ap.add_argument("--bert-layers", type=int, default=4)
    ap.add_argument("--bert-hidden", type=int, default=768)
    ap.add_argument("--bert-heads", type=int, default=12)
    ap.add_argument("--bert-seq", type=int, default=128)
    ap.add_argument("--bert-ffn", type=int, default=3072)
    ap.add_argument("--bert-vocab", type=int, default=30522)
    ap.add_argument("--torch-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(json.loads(args.torch_worker))
    for tool in ("a800c", "a800c-run"):
        if not os.path.exists(os.path.join(args.build, "bin", tool)):
            raise SystemExit(f"precision_table.py: error: --build {args.build}: no bin/{tool} "
                             "(build the a800c and a800c-run targets)")
    no_torch = torch_available(args.torch_python)
    modes = A8_MODES + ([] if no_torch else TORCH_MODES)
    threads = [int(t) for t in args.threads.split(",")]
    started = time.time()
    print(f"load average before: {os.getloadavg()}, {os.cpu_count()} CPUs")
    if no_torch:
        print(f"note: PyTorch columns skipped ({no_torch})")
    work = args.work or tempfile.mkdtemp(prefix="precision_table.")
    os.makedirs(work, exist_ok=True)
    specs = build_models(args, work)
    compile_plans(args, specs, work)

    def run(spec, mode, nthreads, steps):
        if mode in A8_MODES:
            return run_a800c(args, spec, mode, nthreads, steps, work)
        return run_torch(args, spec, mode, nthreads, steps)

    times = {}  # (model, threads, mode) -> timed step ms over all rounds
    for rnd in range(args.rounds):
        for nthreads in threads:
            for name, spec in specs.items():
                for mode in modes:
                    ms, _ = run(spec, mode, nthreads, args.warmup + args.steps)
                    times.setdefault((name, nthreads, mode), []).extend(ms[args.warmup:])
        print(f"round {rnd + 1}/{args.rounds} done, load average {os.getloadavg()}", flush=True)

    print(f"\nsteps/s (median of {args.rounds} rounds x {args.steps} steps after {args.warmup} "
          "warm-up steps a run); x = speedup over the same side's fp32")
    head = "| model | threads |" + "".join(f" {m} |" for m in modes)
    print(head + (" a800c bf16 / torch-bf16 (steps/s) |" if not no_torch else ""))
    print("|" + "---|" * (head.count("|") - 1 + (0 if no_torch else 1)))
    for name in specs:
        for nthreads in threads:
            med = {m: statistics.median(times[(name, nthreads, m)]) for m in modes}
            cells = []
            for m in modes:
                base = med["torch-fp32" if m.startswith("torch") else "fp32"]
                cells.append(f"{fmt_rate(med[m])} ({base / med[m]:.2f}x)")
            row = f"| {name} | {nthreads} | " + " | ".join(cells) + " |"
            if not no_torch:
                row += f" {med['torch-bf16'] / med['bf16']:.2f}x |"
            print(row)

    if args.loss_steps > 0:
        print(f"\nloss after {args.loss_steps} steps ({args.loss_threads} threads; last step / "
              "mean of the last 10)")
        print("| model |" + "".join(f" {m} |" for m in modes))
        print("|" + "---|" * (len(modes) + 1))
        for name, spec in specs.items():
            cells = []
            for mode in modes:
                _, loss = run(spec, mode, args.loss_threads, args.loss_steps)
                tail = loss[-10:]
                cells.append(f"{loss[-1]:.4f} / {sum(tail) / len(tail):.4f}")
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nload average after: {os.getloadavg()}; {time.time() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
