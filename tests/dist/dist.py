#!/usr/bin/env python3
"""Data parallel on the CPU backend over MPI (issue 7): `mpirun --oversubscribe -np N a800c-run`.

    python3 tests/dist/dist.py CASE --bin build/bin --models build/models --data build/data
                               [--backend cuda]

With --backend cuda (ctest label gpu) every case runs on the CUDA backend, the ranks reducing over
NCCL, one GPU per rank: it exits 77 (skipped) on a machine with fewer than 2 GPUs, and the
4-rank runs are skipped with fewer than 4.

- identical:   the MLP trains 50 steps on 2 and on 4 ranks, in fp32 and amp: every rank ends
               with byte-identical parameters and loss-scaler state (a800c-run checks it across
               ranks after the last step and fails naming the ranks that differ).
- equivalence: 2 ranks with batch 16 each against 1 rank with batch 32, on the digits in the same
               shuffled order, 40 SGD steps at lr 0.1 (SGD, not Adam: Adam's normalized update
               would hide a sum in place of a mean), fp32 and amp: the weights (max |w| ~0.95)
               agree within BOUND. The runs sum the same per-sample gradients in another order
               (one GEMM over 32 samples against two over 16 and an average): in fp32 a few float
               ulps a step, measured 9e-8 after 40 steps (bound 1e-5). In amp each rank's FP16
               gradient is rounded on its own (2^-11 relative), 6e-6 after one step and 1.4e-5
               after seven; then a ReLU whose input sits within that noise of 0 flips for some
               sample and moves a bias gradient by ~1/batch, and the trajectories drift: measured
               7e-3 after 40 steps (bound 2e-2). A lost rank or a sum in place of the mean moves
               the weights by ~lr * |g| per step, 0.1 and more after 40 steps.
- accumulate:  the same with --accumulate=2 (2 ranks x 8 against 1 rank x 16, fp32): each rank
               accumulates its own micro-steps, and the window's sum is averaged across ranks
               once, at the update step (the all-reduce runs every 2nd step only).
- inf_one_rank: amp, no shuffle, the samples only rank 1 reads at step 3 are 1e5 (finite in
               FP32, Inf in FP16): every rank skips that step (the all-reduced gradient carries
               the Inf to all), the scale halves on every rank (checked equal across ranks by
               a800c-run) and rank 0's metrics say skipped at step 3 only.
- killed:      rank 1 dies by SIGKILL before step 5 (A8_TEST_KILL_RANK / A8_TEST_KILL_STEP):
               the run exits non-zero (mpirun stops the others at once), never hangs; then rank 1
               hangs instead (A8_TEST_HANG=1): rank 0's all-reduce times out after
               --collective-timeout=5 s with an error naming the rank and the collective, and
               the run exits non-zero.
- other_plan:  rank 1 loads a different plan: a clear error at start, before any step.
- torchrun:    the same run launched torchrun-style (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
               no mpirun: a800c-run bootstraps over TCP) ends with a checkpoint byte-identical to
               the mpirun run's (2 ranks: the mean (a + b) / 2 is the same float either way); a
               rank killed by SIGKILL makes rank 0 fail at once naming it; RANK/WORLD_SIZE without
               MASTER_ADDR is a clear error.
"""
import argparse
import json
import os
import subprocess
import sys
import shutil
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from case_main import mpirun  # noqa: E402

ARGS = None
BOUND = {"fp32": 1e-5, "amp": 2e-2}


def a800c(model, plan, *flags):
    subprocess.run([os.path.join(ARGS.bin, "a800c"), os.path.join(ARGS.models, model), "-o", plan,
                    *flags], check=True)


def run_bin():
    """a800c-run and the backend flag (--backend cuda: NCCL between the ranks)."""
    return os.path.join(ARGS.bin, "a800c-run"), f"--backend={ARGS.backend}"


def gpu_count():
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True) \
        if shutil.which("nvidia-smi") else None
    return 0 if p is None or p.returncode != 0 else len(p.stdout.strip().splitlines())


def too_many_ranks(n):
    """On GPUs a run needs one GPU per rank (NCCL takes no two ranks on one device)."""
    if ARGS.backend == "cuda" and n > gpu_count():
        print(f"skipped: {n} ranks need {n} GPUs, this machine has {gpu_count()}")
        return True
    return False


def must(p, what):
    if p.returncode != 0:
        sys.exit(f"{what}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def case_identical(work):
    for mode in ("fp32", "amp"):
        plan = os.path.join(work, f"mlp.{mode}.plan")
        a800c("mlp.onnx", plan, "--loss=cross_entropy", "--batch=8", f"--precision={mode}")
        for n in (2, 4):
            if too_many_ranks(n):
                continue
            p = must(mpirun(n, *run_bin(), plan, "--synthetic", "--steps=50", "--log-every=50"),
                     f"{mode} on {n} ranks")
            over = "NCCL" if ARGS.backend == "cuda" else "MPI"
            assert f"data parallel: {n} ranks over {over}" in p.stdout, p.stdout
            assert f"identical on all {n} ranks" in p.stdout, p.stdout
            print(f"identical: {mode}, {n} ranks: parameters and scaler state byte-identical")


def load(path):
    from safetensors.numpy import load_file
    return load_file(path)


def case_equivalence(work):
    x = os.path.join(ARGS.data, "digits_train_x.npy")
    y = os.path.join(ARGS.data, "digits_train_y.npy")
    for mode in ("fp32", "amp"):
        ckpt = {}
        for ranks, batch in ((1, 32), (2, 16)):
            plan = os.path.join(work, f"mlp.{mode}.{batch}.plan")
            a800c("mlp.onnx", plan, "--loss=cross_entropy", f"--batch={batch}",
                  f"--precision={mode}", "--optimizer=sgd", "--lr=0.1")
            ckpt[ranks] = os.path.join(work, f"{mode}.{ranks}.safetensors")
            cmd = [*run_bin(), plan, "--input", f"x={x}", "--input", f"labels={y}", "--shuffle",
                   "--seed=3", "--steps=40", f"--checkpoint={ckpt[ranks]}"]
            if ranks == 1:
                must(subprocess.run(cmd, capture_output=True, text=True), f"{mode} 1 rank")
            else:
                must(mpirun(ranks, *cmd), f"{mode} {ranks} ranks")
        one, two = load(ckpt[1]), load(ckpt[2])
        weights = [k for k in one if not k.startswith("a8.") and "exp_avg" not in k
                   and not k.endswith(".f16")]
        worst = max(float(np.max(np.abs(one[k].astype(np.float64) - two[k]))) for k in weights)
        print(f"equivalence: {mode}: 2 ranks x 16 vs 1 rank x 32 after 40 steps: max |dw| "
              f"{worst:.2e} (bound {BOUND[mode]:.0e})")
        assert worst <= BOUND[mode], f"{mode}: {worst} > {BOUND[mode]}"


def case_accumulate(work):
    # --accumulate=2: the ranks' window sums are averaged at the update, so 2 ranks x 8 x 2
    # micro-steps match 1 rank x 16 x 2 as the plain case does (fp32, same bound).
    x = os.path.join(ARGS.data, "digits_train_x.npy")
    y = os.path.join(ARGS.data, "digits_train_y.npy")
    ckpt = {}
    for ranks, batch in ((1, 16), (2, 8)):
        plan = os.path.join(work, f"mlp.acc.{batch}.plan")
        a800c("mlp.onnx", plan, "--loss=cross_entropy", f"--batch={batch}", "--precision=fp32",
              "--optimizer=sgd", "--lr=0.1", "--accumulate=2")
        ckpt[ranks] = os.path.join(work, f"acc.{ranks}.safetensors")
        cmd = [*run_bin(), plan, "--input", f"x={x}", "--input", f"labels={y}", "--shuffle",
               "--seed=3", "--steps=40", f"--checkpoint={ckpt[ranks]}"]
        if ranks == 1:
            must(subprocess.run(cmd, capture_output=True, text=True), "accumulate 1 rank")
        else:
            must(mpirun(ranks, *cmd), f"accumulate {ranks} ranks")
    one, two = load(ckpt[1]), load(ckpt[2])
    weights = [k for k in one if not k.startswith("a8.") and "grad_acc" not in k]
    worst = max(float(np.max(np.abs(one[k].astype(np.float64) - two[k]))) for k in weights)
    print(f"accumulate: 2 ranks x 8 x 2 micro-steps vs 1 rank x 16 x 2 after 40 micro-steps: "
          f"max |dw| {worst:.2e} (bound {BOUND['fp32']:.0e})")
    assert worst <= BOUND["fp32"], worst


def case_inf_one_rank(work):
    x = np.load(os.path.join(ARGS.data, "digits_train_x.npy"))[:256].copy()
    y = np.load(os.path.join(ARGS.data, "digits_train_y.npy"))[:256]
    # Step 3 (0-based) of 2 ranks x batch 16: global positions 96..127; rank 1 takes the odd ones.
    x[97:128:2] = 1e5
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "y.npy"), y)
    plan = os.path.join(work, "mlp.amp.plan")
    a800c("mlp.onnx", plan, "--loss=cross_entropy", "--batch=16", "--precision=amp")
    metrics = os.path.join(work, "m.jsonl")
    p = must(mpirun(2, *run_bin(), plan, "--input", f"x={work}/x.npy", "--input",
                    f"labels={work}/y.npy", "--steps=6", f"--metrics={metrics}"),
             "inf on rank 1")
    assert "identical on all 2 ranks" in p.stdout, p.stdout
    with open(metrics) as f:
        rows = [json.loads(line) for line in f]
    skipped = [r["step"] for r in rows if r["skipped"]]
    assert skipped == [4], f"skipped steps {skipped} (expected the 4th step only)"
    assert all(r["rank"] == 0 for r in rows), rows[0]
    assert rows[-1]["scale"] == 32768, rows[-1]
    print(f"inf_one_rank: step 4 skipped on every rank, scale 65536 -> {rows[-1]['scale']:g}, "
          "equal on both ranks")


def case_killed(work):
    plan = os.path.join(work, "mlp.plan")
    a800c("mlp.onnx", plan, "--loss=cross_entropy", "--batch=8")
    t0 = time.monotonic()
    p = mpirun(2, *run_bin(), plan, "--synthetic", "--steps=1000000", "--collective-timeout=20",
               timeout=150, env={"A8_TEST_KILL_RANK": "1", "A8_TEST_KILL_STEP": "5"})
    took = time.monotonic() - t0
    assert p.returncode != 0, p.stdout
    assert took < 120, f"took {took:.0f} s"
    print(f"killed: rank 1 killed at step 5; the run exited {p.returncode} after {took:.1f} s")
    t0 = time.monotonic()
    p = mpirun(2, *run_bin(), plan, "--synthetic", "--steps=1000000", "--collective-timeout=5",
               timeout=150, env={"A8_TEST_KILL_RANK": "1", "A8_TEST_KILL_STEP": "5",
                                 "A8_TEST_HANG": "1"})
    took = time.monotonic() - t0
    assert p.returncode != 0, p.stdout
    line = next((l for l in p.stderr.splitlines() if "collective-timeout" in l), None)
    assert line is not None, p.stderr[-2000:]
    assert "rank 0 of 2" in line and "gradient bucket" in line, line
    assert took < 120, f"took {took:.0f} s"
    print(f"killed: rank 1 hung at step 5; after {took:.1f} s: {line}")


def case_other_plan(work):
    a, b = os.path.join(work, "a.plan"), os.path.join(work, "b.plan")
    a800c("mlp.onnx", a, "--loss=cross_entropy", "--batch=8")
    a800c("mlp.onnx", b, "--loss=cross_entropy", "--batch=8", "--lr=0.5")
    base = ["mpirun", "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    p = subprocess.run(base + ["-np", "1", *run_bin(), a, "--synthetic", "--steps=5", ":",
                               "-np", "1", *run_bin(), b, "--synthetic", "--steps=5"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0, p.stdout
    assert "run different plans" in p.stderr, p.stderr
    assert "step 1/" not in p.stdout, p.stdout
    print("other_plan: " + next(l for l in p.stderr.splitlines() if "different plans" in l))


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(n, cmd, extra_env=None, timeout=120):
    """Starts n ranks with torchrun's variables; returns their CompletedProcess-like results."""
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **(extra_env or {}))
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        o, e = p.communicate(timeout=timeout)
        out.append((p.returncode, o, e))
    return out


def case_torchrun(work):
    plan = os.path.join(work, "mlp.plan")
    a800c("mlp.onnx", plan, "--loss=cross_entropy", "--batch=8", "--precision=amp")
    x = os.path.join(ARGS.data, "digits_train_x.npy")
    y = os.path.join(ARGS.data, "digits_train_y.npy")
    common = [plan, "--input", f"x={x}", "--input", f"labels={y}", "--shuffle", "--steps=30"]
    tcp_ckpt, mpi_ckpt = os.path.join(work, "tcp.safetensors"), os.path.join(work, "mpi.safetensors")
    res = torchrun(2, [*run_bin(), *common, f"--checkpoint={tcp_ckpt}"])
    for rc, o, e in res:
        assert rc == 0, f"{rc}\n{o}\n{e}"
    assert "2 ranks over TCP (launched torchrun-style" in res[0][1], res[0][1]
    assert "identical on all 2 ranks" in res[0][1], res[0][1]
    must(mpirun(2, *run_bin(), *common, f"--checkpoint={mpi_ckpt}"), "mpirun")
    a, b = load(tcp_ckpt), load(mpi_ckpt)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), f"'{k}' differs between TCP and MPI"
    print(f"torchrun: 2 ranks over TCP, 30 amp steps: checkpoint byte-identical to mpirun's "
          f"({len(a)} tensors)")
    t0 = time.monotonic()
    res = torchrun(2, [*run_bin(), plan, "--synthetic", "--steps=1000000"],
                   {"A8_TEST_KILL_RANK": "1", "A8_TEST_KILL_STEP": "5"})
    took = time.monotonic() - t0
    assert res[0][0] != 0 and res[1][0] != 0, res
    line = next((l for l in res[0][2].splitlines() if "closed its connection" in l), None)
    assert line is not None and "rank 1" in line, res[0][2]
    print(f"torchrun: rank 1 killed at step 5; rank 0 stopped after {took:.1f} s: {line}")
    env = dict(os.environ, RANK="0", WORLD_SIZE="2")
    env.pop("MASTER_ADDR", None)
    p = subprocess.run([*run_bin(), plan, "--synthetic"], env=env, capture_output=True, text=True)
    assert p.returncode == 2 and "MASTER_ADDR" in p.stderr, (p.returncode, p.stderr)
    print("torchrun: " + p.stderr.strip())


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", choices=["identical", "equivalence", "inf_one_rank", "killed",
                                     "other_plan", "torchrun", "accumulate"])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"],
                    help="cuda: the CUDA backend with NCCL (label gpu; exits 77, ctest's skip, "
                         "without two GPUs)")
    ARGS = ap.parse_args()
    if ARGS.backend == "cuda" and gpu_count() < 2:
        print(f"SKIPPED: data parallel on the CUDA backend needs 2 GPUs, found {gpu_count()}")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as work:
        globals()[f"case_{ARGS.case}"](work)


if __name__ == "__main__":
    main()
