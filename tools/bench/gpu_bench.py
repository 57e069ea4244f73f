#!/usr/bin/env python3
"""Training throughput and peak GPU memory: a800c against PyTorch on one GPU, in one run.

    python3 tools/bench/gpu_bench.py --bin gpu-bundle/bin --out OUT [--a8-ld-path PATH]
        [--budget-s 300] [--models resnet50,bert] [--warmup 3] [--steps 15]
    python3 tools/bench/gpu_bench.py --dry-run-cpu --bin build/bin --out /tmp/b
        (no torch, no GPU: a800c's side only, on build/models/bert.onnx, --backend=cpu, 1+2 steps)

Models (synthetic data, fixed batch, seeded weights; every constant-valued tensor, such as a fresh
BatchNorm's or LayerNorm's ones and zeros, gets +-0.01 of seeded noise: see build_model):
- resnet50: torchvision's ResNet-50, batch 128, 3x224x224, 1000 classes;
- bert: a BERT-base-style encoder (BertEncoder below: 12 post-LN layers, hidden 768, 12 heads,
  FFN 3072, exact GELU, vocab 30522, sequence 128, pooler on the first token, 2 classes), batch 32.
Systems: a800c in fp32, tf32, amp and fp16 (`a800c MODEL.onnx --loss=cross_entropy
--optimizer=adamw --lr=1e-3 --weight-decay=0.01 --precision=P`, then `a800c-run --backend=cuda
--synthetic --steps=W+N --metrics FILE`); PyTorch eager AMP (autocast fp16 + GradScaler) and
torch.compile AMP (the model compiled, default mode), both with AdamW(lr=1e-3,
weight_decay=0.01, fused=True). The a800c models are exported from the same modules
(torch.onnx.export, opset 17, the TorchScript exporter first, else the dynamo exporter; the
inference graph with a `logits` output, eval mode so BatchNorm is the inference op, which a800c
turns into the training one, and TrainingMode.PRESERVE so the exporter does not fold it into
the convolutions), so both sides train the same network from the same initial weights.

Timing: W warm-up steps (excluded; they hold torch.compile's compilation, cuDNN's autotuning and
a800c's CUDA-graph capture), then N timed steps for everyone. PyTorch: synchronize, clock, step,
synchronize, clock, per step. a800c: `step_ms` of each step from --metrics (a800c-run times
Executor::Run plus its read-back of the step state, a device-to-host copy that waits for the
step). steps/s = N / (sum of the N step times).
Memory: PyTorch's torch.cuda.max_memory_allocated(); a800c's peak device bytes where a800c-run
prints them (`peak device memory ... (N bytes)`); for every configuration also the peak of
nvidia-smi's memory.used sampled every 50 ms during the process, less the reading before it
(it counts the CUDA context, cuBLAS/cuDNN workspaces and the allocator's cache).
Each configuration runs in its own process under a timeout; a failure is recorded with its
error's first line and the run goes on. Results go to OUT/gpu_bench.json and OUT/gpu_bench.md,
rewritten after every configuration.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from gpu_bench_common import LR, MODELS, WEIGHT_DECAY, first_line
from gpu_bench_torch import worker_main

PRECISIONS = ["amp", "fp16", "tf32", "fp32"]
# Per-process limits (seconds), each also cut to what is left of --budget-s.
LIMITS = {"export": 150, "compile": 150, "a800c-run": 150, "torch-eager": 120,
          "torch-compile": 240}


# ---- the parent: configurations, a800c, nvidia-smi, the table --------------------------------

def error_line(stderr, stdout=""):
    """The first line that looks like the error, else the last line printed."""
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"error|Error|ERROR|FAILED|not supported|Unsupported|out of memory", ln):
            return ln[:300]
    return lines[-1][:300] if lines else "(no output)"


class GpuMemSampler:
    """The peak of nvidia-smi's memory.used (MiB) while a process runs, less the reading
    before it; None where nvidia-smi is not there."""

    def __init__(self, enabled):
        self.enabled = enabled and shutil.which("nvidia-smi") is not None
        self.peak = None
        self.base = None

    def _query(self):
        p = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,"
                            "nounits", "-i", "0"], capture_output=True, text=True, timeout=20)
        return float(p.stdout.split()[0])

    def __enter__(self):
        if not self.enabled:
            return self
        try:
            self.base = self._query()
        except Exception:  # noqa: BLE001 -- memory sampling is best effort
            self.enabled = False
            return self
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0",
             "-lms", "50"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        return self

    def _read(self):
        for line in self.proc.stdout:
            try:
                v = float(line.strip())
            except ValueError:
                continue
            self.peak = v if self.peak is None else max(self.peak, v)

    def __exit__(self, *exc):
        if self.enabled:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.thread.join(timeout=5)

    def delta_mib(self):
        if not self.enabled or self.peak is None:
            return None
        return max(self.peak - self.base, 0.0)


class Bench:
    def __init__(self, args):
        self.args = args
        self.deadline = time.monotonic() + args.budget_s
        self.results = []
        self.meta = {}
        self.a8_env = dict(os.environ)
        if args.a8_ld_path:
            self.a8_env["LD_LIBRARY_PATH"] = args.a8_ld_path

    def limit(self, kind):
        return min(LIMITS[kind], self.deadline - time.monotonic())

    def run(self, cmd, kind, env=None, sample=True):
        """Runs cmd under the limit of `kind`; returns (returncode or 'timeout', stdout, stderr,
        seconds, nvidia-smi delta MiB)."""
        limit = self.limit(kind)
        if limit < 15:
            return "budget", "", "", 0.0, None
        t0 = time.monotonic()
        with GpuMemSampler(sample and not self.args.dry_run_cpu) as smi:
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=env)
                rc, out, err = p.returncode, p.stdout, p.stderr
            except subprocess.TimeoutExpired as e:
                rc = "timeout"
                out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else ""
                err = f"timed out after {limit:.0f} s (the limit of {kind})"
        return rc, out, err, time.monotonic() - t0, smi.delta_mib()

    def record(self, **row):
        base = {"status": "ok", "error": None, "steps_per_s": None, "samples_per_s": None,
                "median_step_ms": None, "peak_mib": None, "peak_source": None, "smi_mib": None,
                "compile_s": None, "timed_steps": self.args.steps,
                "warmup_steps": self.args.warmup}
        base.update(row)
        self.results.append(base)
        shown = base["error"] or (f"{base['steps_per_s']:.2f} steps/s"
                                  if base["steps_per_s"] else "")
        print(f"  {base['model']:9} {base['system']:26} {base['status']:8} {shown}", flush=True)
        self.write()

    def failed(self, model, system, what, rc, out, err):
        if rc == "budget":
            return self.record(model=model, system=system, status="not run",
                               error="the time budget (--budget-s) was spent")
        line = err if rc == "timeout" else error_line(err, out)
        if not line.startswith(what):
            line = f"{what}: {line}"
        return self.record(model=model, system=system, status="failed", error=line)

    def throughput(self, model, step_ms):
        total_s = sum(step_ms) / 1e3
        sps = len(step_ms) / total_s if total_s > 0 else None
        med = sorted(step_ms)[len(step_ms) // 2]
        return {"steps_per_s": sps, "samples_per_s": sps * self.batch(model) if sps else None,
                "median_step_ms": med}

    def batch(self, model):
        return self.args.batch if self.args.dry_run_cpu else MODELS[model]["batch"]

    # -- a800c
    def a800c(self, model, onnx, precision, work):
        a = self.args
        system = f"a800c {precision}"
        plan = os.path.join(work, f"{model}.{precision}.plan")
        cmd = [os.path.join(a.bin, "a800c"), onnx, "-o", plan, "--loss=cross_entropy",
               "--optimizer=adamw", f"--lr={LR}", f"--weight-decay={WEIGHT_DECAY}",
               f"--precision={precision}"]
        if a.dry_run_cpu:
            cmd.append(f"--batch={a.batch}")
        rc, out, err, secs, _ = self.run(cmd, "compile", env=self.a8_env, sample=False)
        if rc != 0:
            return self.failed(model, system, "a800c", rc, out, err)
        compile_s = secs
        metrics = os.path.join(work, f"{model}.{precision}.jsonl")
        cmd = [os.path.join(a.bin, "a800c-run"), plan, f"--backend={a.backend}", "--synthetic",
               f"--steps={a.warmup + a.steps}", f"--metrics={metrics}",
               f"--log-every={a.warmup + a.steps}"]
        rc, out, err, secs, smi = self.run(cmd, "a800c-run", env=self.a8_env)
        if rc != 0:
            return self.failed(model, system, "a800c-run", rc, out, err)
        with open(metrics) as f:
            step_ms = [json.loads(line)["step_ms"] for line in f if line.strip()]
        if precision in a.profile.split(","):
            self.profile(model, precision, plan, work)
        os.remove(plan)
        if len(step_ms) < a.warmup + a.steps:
            return self.record(model=model, system=system, status="failed",
                               error=f"a800c-run: {len(step_ms)} metrics lines, expected "
                                     f"{a.warmup + a.steps}")
        # The line a800c-run prints at the end once it reports Backend::peak_device_bytes().
        m = re.search(r"peak device memory[^\n]*?\((\d+) bytes\)", out)
        peak = int(m.group(1)) / 2**20 if m else None
        self.record(model=model, system=system, compile_s=compile_s, smi_mib=smi,
                    peak_mib=peak, peak_source="a800c-run" if m else None,
                    **self.throughput(model, step_ms[a.warmup:]))

    def profile(self, model, precision, plan, work):
        """A traced run of the plan (CUDA events around each kernel, a800c-run --trace): the
        time of each op type and of the costliest kernels, per step, appended to
        OUT/gpu_profile.md. Tracing syncs around every kernel, so the traced step is longer than
        a graph-replayed one; the split between kernels is what this is for."""
        a = self.args
        steps = 3
        trace = os.path.join(work, f"{model}.{precision}.trace.json")
        cmd = [os.path.join(a.bin, "a800c-run"), plan, f"--backend={a.backend}", "--synthetic",
               f"--steps={a.warmup + steps}", f"--trace={trace}",
               f"--trace-steps={a.warmup}:", "--progress=none"]
        rc, out, err, secs, _ = self.run(cmd, "a800c-run", env=self.a8_env, sample=False)
        lines = [f"## {model}, a800c {precision}: {steps} traced steps", ""]
        if rc != 0:
            lines += [f"trace run failed: {error_line(err, out)}", ""]
        else:
            by_op, by_kernel, step_us = {}, {}, []
            for e in json.load(open(trace))["traceEvents"]:
                if e.get("cat") == "step":
                    step_us.append(e["dur"])
                elif e.get("cat") in ("kernel", "collective"):
                    ar = e["args"]
                    by_op.setdefault(ar["op"], []).append(e["dur"])
                    k = by_kernel.setdefault(ar["index"], {"name": e["name"], "op": ar["op"],
                                                           "types": ar.get("inputs", []),
                                                           "dur": []})
                    k["dur"].append(e["dur"])
            os.remove(trace)
            n = max(len(step_us), 1)
            total = sum(sum(v) for v in by_op.values()) / n
            lines += [f"traced step (median) {sorted(step_us)[len(step_us) // 2] / 1e3:.2f} ms; "
                      f"kernel time {total / 1e3:.2f} ms a step in "
                      f"{sum(len(v) for v in by_op.values()) // n} kernels", "",
                      "| op | kernels | ms a step | share |", "|---|---|---|---|"]
            for op, d in sorted(by_op.items(), key=lambda kv: -sum(kv[1]))[:20]:
                lines.append(f"| {op} | {len(d) // n} | {sum(d) / n / 1e3:.3f} | "
                             f"{100 * sum(d) / n / total:.1f}% |")
            lines += ["", "| kernel | op | inputs | us (median) |", "|---|---|---|---|"]
            top = sorted(by_kernel.values(), key=lambda k: -sorted(k["dur"])[len(k["dur"]) // 2])
            for k in top[:25]:
                med = sorted(k["dur"])[len(k["dur"]) // 2]
                lines.append(f"| {k['name'][:60]} | {k['op']} | {' '.join(k['types'])[:70]} | "
                             f"{med:.1f} |")
            lines.append("")
        with open(os.path.join(a.out, "gpu_profile.md"), "a") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines[:3]), flush=True)

    # -- PyTorch
    def worker(self, kind, extra):
        a = self.args
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", *extra,
               f"--warmup={a.warmup}", f"--steps={a.steps}", "--out", a.out, "--bin", a.bin]
        rc, out, err, secs, smi = self.run(cmd, kind, sample=kind != "export")
        res = None
        for line in out.splitlines():
            if line.startswith("GPU_BENCH_RESULT "):
                res = json.loads(line[len("GPU_BENCH_RESULT "):])
        return rc, out, err, secs, smi, res

    def torch_side(self, model, mode):
        system = f"PyTorch {'eager' if mode == 'eager' else 'torch.compile'} AMP"
        rc, out, err, secs, smi, res = self.worker(f"torch-{mode}",
                                                   ["torch", "--model", model, "--mode", mode])
        if res is None or not res["ok"]:
            if res is not None:
                return self.record(model=model, system=system, status="failed",
                                   error=res["error"])
            return self.failed(model, system, "worker", rc, out, err)
        self.record(model=model, system=system, smi_mib=smi, peak_mib=res["peak_bytes"] / 2**20,
                    peak_source="torch.cuda.max_memory_allocated",
                    compile_s=res["warmup_s"] if mode == "compile" else None,
                    **self.throughput(model, res["step_ms"]))

    def export(self, model, work):
        onnx = os.path.join(work, f"{model}.onnx")
        rc, out, err, secs, _, res = self.worker("export", ["export", "--model", model,
                                                            "--onnx", onnx])
        if res is not None and res["ok"]:
            self.meta.setdefault("exporters", {})[model] = res["exporter"]
            print(f"  {model}: exported with {res['exporter']} in {secs:.1f} s "
                  f"({os.path.getsize(onnx) / 2**20:.1f} MiB)", flush=True)
            return onnx, None
        why = res["error"] if res is not None else (err if rc == "timeout"
                                                    else error_line(err, out))
        if rc == "budget":
            why = "the time budget (--budget-s) was spent"
        return None, f"export: {why}"

    def write(self):
        a = self.args
        with open(os.path.join(a.out, "gpu_bench.json"), "w") as f:
            json.dump({"meta": self.meta, "results": self.results}, f, indent=1)
        with open(os.path.join(a.out, "gpu_bench.md"), "w") as f:
            f.write(self.markdown())

    def markdown(self):
        m = self.meta
        lines = [f"GPU benchmark, {m.get('date')}: {m.get('gpu')}, driver {m.get('driver')}, "
                 f"torch {m.get('torch')} (CUDA {m.get('torch_cuda')}, cuDNN "
                 f"{m.get('torch_cudnn')}), {m.get('nvcc')}, {m.get('a800c')}; "
                 f"{self.args.warmup} warm-up + {self.args.steps} timed steps each.", ""]
        for name, desc in m.get("models", {}).items():
            lines.append(f"- {name}: {desc}")
        lines += ["", "| model | system | steps/s | samples/s | median ms/step | peak memory MiB "
                  "| nvidia-smi MiB | warm-up/compile s | note |",
                  "|---|---|---|---|---|---|---|---|---|"]

        def num(v, fmt):
            return format(v, fmt) if isinstance(v, (int, float)) else "-"
        for r in self.results:
            note = f"{r['status']}: {r['error']}" if r["status"] != "ok" else ""
            if r["status"] == "ok" and r["peak_mib"] is None and r["system"].startswith("a800c"):
                note = "peak: a800c-run prints none yet"
            lines.append(
                f"| {r['model']} | {r['system']} | {num(r['steps_per_s'], '.2f')} | "
                f"{num(r['samples_per_s'], '.1f')} | {num(r['median_step_ms'], '.2f')} | "
                f"{num(r['peak_mib'], '.0f')} | {num(r['smi_mib'], '.0f')} | "
                f"{num(r['compile_s'], '.1f')} | {note.replace('|', '/')} |")
        lines += ["", "peak memory: torch.cuda.max_memory_allocated() for PyTorch, a800c-run's "
                  "peak device bytes for a800c; nvidia-smi: peak memory.used during the process "
                  "less the reading before it (CUDA context, library workspaces and caches "
                  "included). warm-up/compile s: a800c's compile time; torch.compile's warm-up "
                  "steps (compilation included).", ""]
        return "\n".join(lines)

    def versions(self):
        a = self.args
        m = self.meta
        m["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        m["host"] = platform.node()
        m["python"] = platform.python_version()
        m["models"] = ({"bert (dry run)": f"{a.onnx}, batch {a.batch}"} if a.dry_run_cpu else
                       {k: MODELS[k]["desc"] for k in a.models.split(",")})
        m["backend"] = a.backend
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                "--format=csv,noheader", "-i", "0"], capture_output=True,
                               text=True, timeout=30).stdout.strip()
            m["gpu"], m["driver"], m["gpu_memory"] = [s.strip() for s in q.split(",")]
        except Exception:  # noqa: BLE001 -- no GPU (the dry run)
            m["gpu"], m["driver"] = "no GPU (nvidia-smi absent or failed)", "-"
        try:
            import torch
            m["torch"], m["torch_cuda"] = torch.__version__, torch.version.cuda
            m["torch_cudnn"] = torch.backends.cudnn.version()
            import torchvision
            m["torchvision"] = torchvision.__version__
        except Exception as e:  # noqa: BLE001
            m.setdefault("torch", f"not available ({type(e).__name__})")
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        try:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
            m["nvcc"] = first_line(out.splitlines()[-2] if len(out.splitlines()) > 1 else out)
        except Exception:  # noqa: BLE001
            m["nvcc"] = "nvcc not found"
        out = subprocess.run([os.path.join(a.bin, "a800c"), "--version"], capture_output=True,
                             text=True, env=self.a8_env)
        m["a800c"] = first_line(out.stdout or out.stderr)

    def main(self):
        a = self.args
        self.versions()
        print(f"gpu_bench: {self.meta.get('gpu')}, torch {self.meta.get('torch')}, budget "
              f"{a.budget_s:.0f} s", flush=True)
        self.write()
        with tempfile.TemporaryDirectory(prefix="gpu_bench.") as work:
            if a.dry_run_cpu:
                for p in a.precisions.split(","):
                    self.a800c("bert", a.onnx, p, work)
                for system in ("PyTorch eager AMP", "PyTorch torch.compile AMP"):
                    self.record(model="bert", system=system, status="skipped",
                                error="dry run: no torch, no GPU")
                return 0
            models = a.models.split(",")
            onnx = {}
            for model in models:
                onnx[model] = self.export(model, work)
            # The cheap baselines first, then a800c, then torch.compile (slowest to start), so
            # that a spent budget costs the fewest rows.
            systems = a.systems.split(",")
            for model in models:
                if "eager" in systems:
                    self.torch_side(model, "eager")
            for model in models if "a800c" in systems else []:
                path, why = onnx[model]
                for p in a.precisions.split(","):
                    if path is None:
                        self.record(model=model, system=f"a800c {p}", status="failed", error=why)
                    else:
                        self.a800c(model, path, p, work)
            for model in models:
                if "compile" in systems:
                    self.torch_side(model, "compile")
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="folder of a800c and a800c-run")
    ap.add_argument("--out", required=True, help="folder for gpu_bench.json and gpu_bench.md")
    ap.add_argument("--a8-ld-path", default="",
                    help="LD_LIBRARY_PATH for the a800c processes only (PyTorch keeps its own)")
    ap.add_argument("--budget-s", type=float, default=300, help="the whole run (default 300)")
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    # Few steps: a800c-run draws ResNet-50's synthetic batch (19M normals) on the host each
    # step, about half a second, and the whole run has ~5 minutes.
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--backend", default="cuda", help="a800c-run's backend (default cuda)")
    ap.add_argument("--profile", default="",
                    help="comma list of precisions to trace once more after their timed run: "
                         "the time of each op type and the costliest kernels, to "
                         "OUT/gpu_profile.md")
    ap.add_argument("--systems", default="eager,a800c,compile",
                    help="comma list of what to run: eager (PyTorch eager AMP), a800c, compile "
                         "(torch.compile AMP, the slowest to start); default all three")
    ap.add_argument("--dry-run-cpu", action="store_true",
                    help="a800c's side only, on --onnx with --backend=cpu, 1+2 steps: checks "
                         "the command lines and the table without torch or a GPU")
    ap.add_argument("--onnx", default="build/models/bert.onnx", help="--dry-run-cpu's model")
    ap.add_argument("--batch", type=int, default=4, help="--dry-run-cpu's batch")
    ap.add_argument("--worker", choices=["export", "torch"], help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=["eager", "compile"], help=argparse.SUPPRESS)
    ap.add_argument("--worker-device", default="cuda", help=argparse.SUPPRESS)
    ap.add_argument("--worker-batch", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_main(args)
    if args.dry_run_cpu:
        args.backend, args.warmup, args.steps = "cpu", 1, 2
    for m in args.models.split(","):
        if m not in MODELS:
            ap.error(f"--models: unknown model {m} (known: {', '.join(MODELS)})")
    os.makedirs(args.out, exist_ok=True)
    args.bin = os.path.abspath(args.bin)
    args.out = os.path.abspath(args.out)
    return Bench(args).main()


if __name__ == "__main__":
    sys.exit(main())
