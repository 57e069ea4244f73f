#!/usr/bin/env python3
"""Checkpoints that cannot lie and keep what matters (issue 18), end to end on the CPU backend.

    python3 tests/e2e/checkpoints.py CASE --bin build/bin --models build/models --data build/data

- bitflip:  an amp MLP with Adam (parameters, moments, the loss scaler's state, the step) saves a
            checkpoint; Python's safetensors reads it and every crc32c in its metadata is the
            CRC-32C of that tensor's bytes. Then one bit is flipped in each tensor in turn (a
            random bit, seeded): a800c-run --resume and a800c-inspect both refuse it (exit 2)
            naming the tensor; a flipped bit in the recorded seed is refused as corrupt metadata.
- nonfinite: NaN in a weight, then Inf in an Adam moment (the checksums made right, as a run
            that diverged would have written them): --resume refuses (exit 2) naming the tensor
            and the count; a800c-inspect warns; --allow-nonfinite resumes.
- torn:     the writer is killed halfway through a checkpoint (test hook): its temporary file
            stays; the next start with the same --checkpoint removes it and says so. A
            checkpoint cut short is skipped by --resume=auto with a warning, which resumes from
            the older step-numbered one instead.
- steps:    --steps at or below the checkpoint's step (and --epochs likewise, once an epoch is
            done) is an error that says so, and nothing trains.
- keep:     --keep-checkpoints=2 --save-every=1 keeps the newest two step-numbered checkpoints
            and the latest under the plain name; with --keep-best and an eval set, the one of
            the lowest eval loss stays too, whatever its age.
"""
import json
import os
import random
import struct
import subprocess
import sys
import time

import numpy as np

from case_main import run_case

ARGS = None
TABLE = []


def crc32c(data):
    if not TABLE:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
            TABLE.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def a800c(model, plan, *flags):
    subprocess.run([os.path.join(ARGS.bin, "a800c"), model, "-o", plan, *flags], check=True)


def tool(name, *args, check=True):
    p = subprocess.run([os.path.join(ARGS.bin, name), *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"{name} {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def run(plan, *flags, check=True, env=None):
    return tool("a800c-run", plan, *flags, check=check)


def digits(split):
    return ["--input", f"x={ARGS.data}/digits_{split}_x.npy",
            "--input", f"labels={ARGS.data}/digits_{split}_y.npy"]


def read(path):
    """(header length, header dict with __metadata__, raw bytes)."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return n, json.loads(raw[8:8 + n]), raw


def write_with_checksums(path, header, raw_data):
    """Writes a safetensors file with a800c's checksums recomputed over `raw_data`."""
    meta = {k: v for k, v in header["__metadata__"].items() if not k.startswith("crc32c:")}
    for name, e in header.items():
        if name != "__metadata__":
            meta["crc32c:" + name] = "%08x" % crc32c(raw_data[e["data_offsets"][0]:
                                                             e["data_offsets"][1]])
    blob = b"".join(k.encode() + b"\0" + meta[k].encode() + b"\0" for k in sorted(meta))
    meta["crc32c:__metadata__"] = "%08x" % crc32c(blob)
    header = dict(header, __metadata__=meta)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + raw_data)


def expect_refused(plan, ckpt, want, extra=()):
    p = run(plan, "--synthetic", f"--resume={ckpt}", "--steps=100", *extra, check=False)
    assert p.returncode == 2, f"exit {p.returncode}: {p.stdout}{p.stderr}"
    assert p.stderr.startswith("a800c-run: error: "), p.stderr
    for w in want:
        assert w in p.stderr, f"'{w}' not in: {p.stderr}"
    assert "trained" not in p.stdout, p.stdout
    return p.stderr.strip()


def amp_plan(work):
    plan = f"{work}/mlp.plan"
    a800c(f"{ARGS.models}/mlp.onnx", plan, "--loss=cross_entropy", "--optimizer=adam",
          "--batch=8", "--precision=amp")
    return plan


def case_bitflip(work):
    plan = amp_plan(work)
    ckpt = f"{work}/c.safetensors"
    run(plan, "--synthetic", "--steps=3", f"--checkpoint={ckpt}")
    from safetensors import safe_open
    with safe_open(ckpt, "np") as f:
        meta = f.metadata()
        names = sorted(f.keys())
    n, header, raw = read(ckpt)
    data = raw[8 + n:]
    for name in names:
        b, e = header[name]["data_offsets"]
        assert meta["crc32c:" + name] == "%08x" % crc32c(data[b:e]), name
    assert meta["format_version"] == "2" and "crc32c:__metadata__" in meta
    print(f"bitflip: Python's safetensors reads {len(names)} tensors; the crc32c of each matches")
    rng = random.Random(18)
    for name in names:
        b, e = header[name]["data_offsets"]
        at = 8 + n + rng.randrange(b, e)
        bad = bytearray(raw)
        bad[at] ^= 1 << rng.randrange(8)
        path = f"{work}/flip.safetensors"
        open(path, "wb").write(bad)
        msg = expect_refused(plan, path, [f"tensor '{name}': checksum mismatch"])
        p = tool("a800c-inspect", path, check=False)
        assert p.returncode == 2 and f"tensor '{name}': checksum mismatch" in p.stderr, p.stderr
        print(f"bitflip in {name} (byte {at}): {msg}")
    # The seed in the metadata: "seed":"0" -> "1".
    at = raw.index(b'"seed":"0"') + len('"seed":"')
    bad = bytearray(raw)
    bad[at] ^= 1
    open(f"{work}/seed.safetensors", "wb").write(bad)
    print("bitflip in the seed:",
          expect_refused(plan, f"{work}/seed.safetensors", ["checksum mismatch in __metadata__"]))
    p = tool("a800c-inspect", ckpt)
    assert "checksums: the metadata and all" in p.stdout, p.stdout
    j = json.loads(tool("a800c-inspect", ckpt, "--format=json").stdout)
    assert j["checksums"] == "verified" and len(j["tensors"]) == len(names), j


def case_nonfinite(work):
    plan = amp_plan(work)
    ckpt = f"{work}/c.safetensors"
    run(plan, "--synthetic", "--steps=3", f"--checkpoint={ckpt}")
    n, header, raw = read(ckpt)
    data = bytearray(raw[8 + n:])
    moments = [k for k in header if k.startswith("fc1.weight") and k != "fc1.weight"]
    assert moments, sorted(header)
    for name, values in (("fc1.weight", [np.nan, np.nan, np.nan]), (moments[0], [np.inf])):
        d = bytearray(data)
        b, e = header[name]["data_offsets"]
        assert header[name]["dtype"] == "F32", header[name]
        for i, v in enumerate(values):
            d[b + 4 * (3 * i + 1):b + 4 * (3 * i + 2)] = struct.pack("<f", v)
        path = f"{work}/bad.safetensors"
        write_with_checksums(path, header, bytes(d))
        k = len(values)
        msg = expect_refused(plan, path, [f"tensor '{name}'",
                                          f"holds {k} non-finite value{'s' if k > 1 else ''}",
                                          "--allow-nonfinite"])
        print(f"nonfinite in {name}: {msg}")
        p = tool("a800c-inspect", path)
        assert "warning: 1 tensor hold NaN or Inf" in p.stdout, p.stdout
        p = run(plan, "--synthetic", f"--resume={path}", "--steps=4", "--allow-nonfinite")
        assert "resumed from" in p.stdout and "trained 1 step" in p.stdout, p.stdout


def case_torn(work):
    plan = amp_plan(work)
    ckpt = f"{work}/c.safetensors"
    run(plan, "--synthetic", "--steps=2", f"--checkpoint={ckpt}", "--keep-checkpoints=3",
        "--save-every=1")
    env = dict(os.environ, A8_TEST_PAUSE_MID_WRITE_MS="10000")
    proc = subprocess.Popen([os.path.join(ARGS.bin, "a800c-run"), plan, "--synthetic",
                             "--resume=auto", "--steps=4", f"--checkpoint={ckpt}",
                             "--keep-checkpoints=3", "--save-every=1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.time() + 60
    leftover = []
    while time.time() < deadline and not leftover:
        leftover = [f for f in os.listdir(work) if ".tmp." in f]
        time.sleep(0.01)
    assert leftover, "the writer never started a checkpoint"
    time.sleep(0.2)
    proc.kill()
    proc.wait()
    leftover = [f for f in os.listdir(work) if ".tmp." in f]
    assert leftover, os.listdir(work)
    p = run(plan, "--synthetic", "--resume=auto", "--steps=3", f"--checkpoint={ckpt}",
            "--keep-checkpoints=3", "--save-every=1")
    assert all(f"removed {work}/{f}, left by a checkpoint write that was killed" in p.stderr
               for f in leftover), p.stderr
    assert not [f for f in os.listdir(work) if ".tmp." in f], os.listdir(work)
    assert f"resumed from {work}/c.step-2.safetensors at step 2" in p.stdout, p.stdout
    print(f"torn: the killed writer's {leftover} removed at the next start")
    # The newest checkpoint cut short: --resume=auto warns and takes the one before.
    newest = f"{work}/c.step-3.safetensors"
    raw = open(newest, "rb").read()
    os.remove(ckpt)  # the plain name is a link to the same file
    open(newest, "wb").write(raw[:len(raw) // 2])
    p = run(plan, "--synthetic", "--resume=auto", "--steps=4", f"--checkpoint={ckpt}",
            "--keep-checkpoints=3", "--save-every=1")
    assert "warning: --resume=auto: skipping a checkpoint: " + newest in p.stderr, p.stderr
    assert f"resumed from {work}/c.step-2.safetensors at step 2" in p.stdout, p.stdout
    print("torn: " + p.stderr.strip().splitlines()[0])


def case_steps(work):
    plan = amp_plan(work)
    ckpt = f"{work}/c.safetensors"
    run(plan, *digits("train"), "--steps=5", f"--checkpoint={ckpt}")
    for flags, want in ((["--steps=5"], "--steps 5: the checkpoint"),
                        (["--steps=3"], "--steps 3: the checkpoint"),
                        (["--epochs=1", f"--checkpoint={ckpt}"], None),
                        (["--epochs=1"], "--epochs 1 (179 steps): the checkpoint")):
        p = run(plan, *digits("train"), f"--resume={ckpt}", *flags, check=False)
        if want is None:  # one epoch is 179 batches of 8: past step 5, it trains
            assert p.returncode == 0 and "step 5 -> 179" in p.stdout, p.stdout + p.stderr
            continue
        assert p.returncode == 2, p.stdout + p.stderr
        at = 179 if "epochs" in want else 5
        assert want in p.stderr and f"already at step {at}" in p.stderr and \
            f"give more than {at} steps" in p.stderr, p.stderr
        assert "trained" not in p.stdout, p.stdout
        print(f"steps: {p.stderr.strip()}")


def case_keep(work):
    plan = amp_plan(work)
    ckpt = f"{work}/k.safetensors"
    run(plan, "--synthetic", "--steps=6", f"--checkpoint={ckpt}", "--save-every=1",
        "--keep-checkpoints=2")
    files = sorted(f for f in os.listdir(work) if f.startswith("k."))
    assert files == ["k.safetensors", "k.step-5.safetensors", "k.step-6.safetensors"], files
    assert open(ckpt, "rb").read() == open(f"{work}/k.step-6.safetensors", "rb").read()
    # --keep-best: evaluations every step; the lowest eval loss's checkpoint is kept. At lr 0.05
    # the eval loss falls until step 3 and rises at steps 4 and 5, so the best is not the newest.
    plan = f"{work}/lr.plan"
    a800c(f"{ARGS.models}/mlp.onnx", plan, "--loss=cross_entropy", "--optimizer=adam",
          "--batch=8", "--precision=amp", "--lr=0.05")
    best = f"{work}/b.safetensors"
    last = 5
    p = run(plan, *digits("train"), "--eval-input",
            f"x={ARGS.data}/digits_test_x.npy", "--eval-input",
            f"labels={ARGS.data}/digits_test_y.npy", "--eval-every=1", f"--steps={last}",
            "--save-every=2", f"--checkpoint={best}", "--keep-checkpoints=1", "--keep-best")
    losses = {}
    for line in p.stdout.splitlines():
        if line.startswith("eval at step "):
            step = int(line.split()[3].rstrip(":"))
            losses[step] = float(line.split("loss ")[1].split(",")[0])
    files = sorted(f for f in os.listdir(work) if f.startswith("b.step-"))
    kept = {int(f.split("step-")[1].split(".")[0]) for f in files}
    low = min(losses.values())
    best_steps = {s for s, v in losses.items() if v == low}  # printed to 6 decimals: ties
    assert last in kept and kept & best_steps and len(kept) <= 2, (kept, losses)
    want = min(kept & best_steps)
    assert want != last, f"the best is the newest: the test shows nothing ({losses})"
    from safetensors import safe_open
    with safe_open(f"{work}/b.step-{want}.safetensors", "np") as f:
        assert abs(float(f.metadata()["eval_loss"]) - losses[want]) < 1e-5, f.metadata()
    print(f"keep: newest 2 of 6 kept; best eval loss {losses[want]:.6f} at step {want} kept "
          f"beside the newest: {files}")


if __name__ == "__main__":
    run_case(globals(), "a8_ckpt_")
