"""gpu_bench.py's PyTorch side: the two models, their ONNX export and PyTorch's own training
step, each run in a worker process of its own (`gpu_bench.py --worker ...`), which prints its
result as one `GPU_BENCH_RESULT {json}` line. torch is imported only here, inside the functions.
"""
import json
import time

from gpu_bench_common import LR, MODELS, SEED, WEIGHT_DECAY, first_line


def build_model(name):
    import torch
    torch.manual_seed(SEED)
    model = _build(name)
    # The TorchScript exporter merges initializers of equal values in eval mode (its
    # deduplicate-initializers pass): every fresh BatchNorm's weight, bias, running mean and
    # variance (ones and zeros) and every LayerNorm's would become one tensor through Identity
    # nodes, tying parameters that PyTorch trains apart (a800c warns about it; a running
    # statistic merged with a bias gets its own state in build-training). A little seeded noise
    # on each constant-valued tensor keeps them apart, on both sides alike.
    g = torch.Generator().manual_seed(SEED + 2)
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point() and t.numel() > 1 and bool((t == t.flatten()[0]).all()):
                t.add_(torch.empty(t.shape).uniform_(-0.01, 0.01, generator=g))
    return model


def _build(name):
    import torch
    from torch import nn
    if name == "resnet50":
        import torchvision
        return torchvision.models.resnet50(weights=None, num_classes=1000)

    class Layer(nn.Module):
        def __init__(self, hidden, heads, ffn, seq):
            super().__init__()
            self.heads, self.dim, self.seq, self.hidden = heads, hidden // heads, seq, hidden
            self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
            self.o = nn.Linear(hidden, hidden)
            self.ln1, self.ln2 = nn.LayerNorm(hidden, eps=1e-12), nn.LayerNorm(hidden, eps=1e-12)
            self.ff1, self.ff2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
            self.gelu = nn.GELU()

        def split(self, x):
            # Constant shapes (-1 for the batch): no Shape/Gather chains in the export.
            return x.view(-1, self.seq, self.heads, self.dim).transpose(1, 2)

        def forward(self, h):
            q, k, v = self.split(self.q(h)), self.split(self.k(h)), self.split(self.v(h))
            p = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * self.dim ** -0.5, dim=-1)
            ctx = torch.matmul(p, v).transpose(1, 2).reshape(-1, self.seq, self.hidden)
            h = self.ln1(h + self.o(ctx))
            return self.ln2(h + self.ff2(self.gelu(self.ff1(h))))

    class BertEncoder(nn.Module):
        def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, seq=128,
                     classes=2):
            super().__init__()
            self.tok = nn.Embedding(vocab, hidden)
            self.pos = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
            self.ln = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList(Layer(hidden, heads, ffn, seq) for _ in range(layers))
            self.pool = nn.Linear(hidden, hidden)
            self.cls = nn.Linear(hidden, classes)

        def forward(self, ids):
            h = self.ln(self.tok(ids) + self.pos)
            for layer in self.layers:
                h = layer(h)
            return self.cls(torch.tanh(self.pool(h[:, 0])))

    return BertEncoder()


def example_input(name, batch, device):
    import torch
    g = torch.Generator(device="cpu").manual_seed(SEED + 1)
    if name == "resnet50":
        x = torch.randn(batch, 3, 224, 224, generator=g)
        y = torch.randint(0, 1000, (batch,), generator=g)
    else:
        x = torch.randint(0, 30522, (batch, 128), generator=g)
        y = torch.randint(0, 2, (batch,), generator=g)
    return x.to(device), y.to(device)


def worker_export(args):
    """Exports args.model to args.onnx; prints which exporter worked."""
    import torch
    # Traced on the GPU where there is one: ResNet-50's forward at batch 128 is slow on a CPU.
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = build_model(args.model).to(dev).eval()
    x, _ = example_input(args.model, MODELS[args.model]["batch"], dev)
    name = "x" if args.model == "resnet50" else "input_ids"
    errors = []
    try:
        torch.onnx.export(model, (x,), args.onnx, opset_version=17, dynamo=False,
                          training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                          input_names=[name], output_names=["logits"])
        return {"exporter": "torchscript (dynamo=False)"}
    except Exception as e:  # noqa: BLE001 -- any failure falls back to the other exporter
        errors.append(f"dynamo=False: {first_line(repr(e))}")
    try:
        prog = torch.onnx.export(model, (x,), dynamo=True, opset_version=17,
                                 input_names=[name], output_names=["logits"])
        prog.save(args.onnx, external_data=False)
        return {"exporter": "dynamo", "note": errors[0]}
    except Exception as e:  # noqa: BLE001
        errors.append(f"dynamo=True: {first_line(repr(e))}")
    raise RuntimeError("; ".join(errors))


def worker_torch(args):
    """PyTorch AMP training steps of args.model, eager or compiled; prints the result.
    --worker-device=cpu (a self-test of this code without a GPU, at --worker-batch): bf16
    autocast, no scaler, no memory figures."""
    import torch
    import torch.nn.functional as F
    dev = args.worker_device
    cuda = dev == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = True
        torch.cuda.reset_peak_memory_stats()
    model = build_model(args.model).to(dev).train()
    x, y = example_input(args.model, args.worker_batch or MODELS[args.model]["batch"], dev)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY, fused=cuda)
    scaler = torch.amp.GradScaler(dev, enabled=cuda)
    fwd = torch.compile(model) if args.mode == "compile" else model
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev, dtype=torch.float16 if cuda else torch.bfloat16):
            loss = F.cross_entropy(fwd(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    times, t_first, warm_s = [], time.perf_counter(), 0.0
    for i in range(args.warmup + args.steps):
        sync()
        t0 = time.perf_counter()
        loss = step()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
        if i == args.warmup - 1:
            warm_s = time.perf_counter() - t_first
    return {"step_ms": times[args.warmup:], "warmup_s": warm_s,
            "peak_bytes": torch.cuda.max_memory_allocated() if cuda else 0,
            "reserved_bytes": torch.cuda.max_memory_reserved() if cuda else 0,
            "final_loss": float(loss.detach())}


def worker_main(args):
    try:
        out = worker_export(args) if args.worker == "export" else worker_torch(args)
        out["ok"] = True
    except Exception as e:  # noqa: BLE001 -- reported to the parent, which records it
        out = {"ok": False, "error": first_line(f"{type(e).__name__}: {e}")}
    print("GPU_BENCH_RESULT " + json.dumps(out), flush=True)
    return 0
