#!/usr/bin/env python3
"""A restart that loses nothing, and plain output, under mpirun (issue 18).

    python3 tests/dist/restart.py CASE --bin build/bin --models build/models --data build/data

- kills:    a 2-rank run of the MLP on the digits (shuffled, amp, Adam, a checkpoint every 2 steps,
            the newest 3 kept) is killed ten times in a row: each time a random rank dies by
            SIGKILL before a random step, 1 to 6 past the last checkpoint (A8_TEST_KILL_RANK /
            A8_TEST_KILL_STEP; the random generator is seeded, the seed printed), and the same
            command is relaunched with --resume=auto. The final checkpoint equals an
            uninterrupted run's, bit for bit.
- progress: mpirun gives rank 0 a pseudo-terminal even with the output captured: the run prints
            plain "step k/N" lines, no bar and no escape codes; --progress=bar forces the bar
            (the test sees its escape codes) and --progress=none leaves the step lines out.
"""
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from case_main import mpirun, run_case  # noqa: E402

ARGS = None
STEPS = 40


def plan_for(work):
    plan = os.path.join(work, "mlp.plan")
    subprocess.run([os.path.join(ARGS.bin, "a800c"), os.path.join(ARGS.models, "mlp.onnx"), "-o",
                    plan, "--loss=cross_entropy", "--optimizer=adam", "--batch=8",
                    "--precision=amp"], check=True)
    return plan


def train_cmd(plan, ckpt):
    return [os.path.join(ARGS.bin, "a800c-run"), plan,
            "--input", f"x={ARGS.data}/digits_train_x.npy",
            "--input", f"labels={ARGS.data}/digits_train_y.npy", "--shuffle", "--seed=5",
            f"--steps={STEPS}", f"--checkpoint={ckpt}", "--save-every=2", "--keep-checkpoints=3",
            "--resume=auto", "--collective-timeout=30"]


def saved_step(ckpt):
    if not os.path.exists(ckpt):
        return 0
    from safetensors import safe_open
    with safe_open(ckpt, "np") as f:
        return int(f.metadata()["step"])


def case_kills(work):
    plan = plan_for(work)
    straight = os.path.join(work, "straight", "c.safetensors")
    os.makedirs(os.path.dirname(straight))
    p = mpirun(2, *train_cmd(plan, straight))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no checkpoint" in p.stdout and "starting at step 0" in p.stdout, p.stdout
    ckpt = os.path.join(work, "killed", "c.safetensors")
    os.makedirs(os.path.dirname(ckpt))
    seed = int(os.environ.get("A8_TEST_KILL_SEED", "18"))
    rng = random.Random(seed)
    kills = []
    for i in range(10):
        at = saved_step(ckpt)
        if at >= STEPS - 1:
            break
        # A random rank, at a random step within the next few past the last checkpoint (so that
        # the ten kills spread over the run).
        rank, step = rng.randrange(2), min(at + 1 + rng.randrange(6), STEPS - 1)
        t0 = time.monotonic()
        p = mpirun(2, *train_cmd(plan, ckpt), timeout=150,
                   env={"A8_TEST_KILL_RANK": str(rank), "A8_TEST_KILL_STEP": str(step)})
        assert p.returncode != 0, f"kill {i}: rank {rank} at step {step} did not stop the run"
        took = time.monotonic() - t0
        kills.append(f"rank {rank} before step {step} (from {at}, {took:.1f} s)")
    assert len(kills) == 10, f"ran out of steps after {len(kills)} kills: raise STEPS"
    at = saved_step(ckpt)
    p = mpirun(2, *train_cmd(plan, ckpt))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"at step {at}" in p.stdout and f"step {at} -> {STEPS}" in p.stdout, p.stdout
    with open(straight, "rb") as a, open(ckpt, "rb") as b:
        assert a.read() == b.read(), "the final checkpoint differs from the uninterrupted run's"
    left = sorted(f for f in os.listdir(os.path.dirname(ckpt)))
    assert not [f for f in left if ".tmp." in f], left
    print(f"kills (seed {seed}): " + "; ".join(kills))
    print(f"kills: relaunched with --resume=auto after each; the final checkpoint (step {STEPS})"
          f" equals the uninterrupted run's bit for bit; files left: {left}")


def case_progress(work):
    plan = plan_for(work)
    base = [os.path.join(ARGS.bin, "a800c-run"), plan, "--synthetic", "--steps=6",
            "--log-every=2"]
    p = mpirun(2, *base)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "\x1b[" not in p.stdout and "\r" not in p.stdout, repr(p.stdout)
    lines = [l for l in p.stdout.splitlines() if l.startswith("step ")]
    assert [l.split(":")[0] for l in lines] == ["step 2/6", "step 4/6", "step 6/6"], p.stdout
    print("progress: plain lines under mpirun:", lines)
    p = mpirun(2, *base, "--progress=bar")
    assert p.returncode == 0 and "\x1b[K[" in p.stdout, repr(p.stdout)  # the pty turns \r to \n
    p = mpirun(2, *base, "--progress=none")
    assert p.returncode == 0 and "trained 6 steps" in p.stdout, p.stdout
    assert not [l for l in p.stdout.splitlines() if l.startswith("step ")], p.stdout
    print("progress: --progress=bar draws the bar, --progress=none prints no step lines")


def main():
    run_case(globals(), "a8_restart_")


if __name__ == "__main__":
    main()
