#!/usr/bin/env python3
"""Training end to end on the CPU backend: a800c compiles a training plan, a800c-run trains it.

    python3 tests/e2e/training.py CASE --bin build/bin --models build/models --data build/data

One CASE a ctest test (tests/CMakeLists.txt, label e2e):
- mlp_digits:  the MLP on scikit-learn's digits reaches >= 95% test accuracy; NumPy recomputes
               the accuracy from the checkpoint's weights (read with Python's safetensors).
- loss_halves: the CNN and the BERT-style model each memorise 64 fixed random samples: the mean
               training loss of the last epoch is at most half that of the first.
- accumulate:  --accumulate=4 with batch 8 trains the same weights as batch 32 (the same samples
               in the same order), within float32 rounding (bound below).
- resume:      N steps, save, resume to 2N == 2N straight: checkpoint files byte for byte and the
               losses of steps N+1..2N, with --shuffle and a Dropout model (its masks come from
               the seed and the step).
- kill:        SIGKILL while a checkpoint is being written leaves the previous one intact. The
               test hook A8_TEST_PAUSE_MID_WRITE_MS (compiler/support/file_io.cc) makes the
               writer pause with half the bytes written; the test kills it there, then checks
               that the old file is byte-identical, Python reads it and a800c-run resumes.
- bad_input:   wrong labels dtype or shape, too few samples, arrays of different lengths, an
               unknown input, a checkpoint of another plan: exit 2 with the message, before any
               step runs.
- safetensors: the checkpoint file read by Python's safetensors and by hand (the layout).
"""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time

import numpy as np

from case_main import run_case

ARGS = None


def a800c(model, plan, *flags):
    # These cases test the training machinery against float64 math: FP32 unless a case asks for
    # another mode (tests/e2e/precision.py covers the mixed modes).
    if not any(f.startswith("--precision") for f in flags):
        flags = (*flags, "--precision=fp32")
    subprocess.run([os.path.join(ARGS.bin, "a800c"), model, "-o", plan, *flags], check=True)


def run(plan, *flags, check=True):
    """a800c-run; returns the CompletedProcess (stdout and stderr as text)."""
    p = subprocess.run([os.path.join(ARGS.bin, "a800c-run"), plan, *flags], capture_output=True,
                       text=True)
    if check and p.returncode != 0:
        sys.exit(f"a800c-run {' '.join(flags)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def model(name):
    return os.path.join(ARGS.models, name)


def data(name):
    return os.path.join(ARGS.data, f"digits_{name}.npy")


def metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def checkpoint(path):
    from safetensors.numpy import load_file
    return load_file(path)


def digits_inputs(split, flag="--input"):
    return [flag, f"x={data(split + '_x')}", flag, f"labels={data(split + '_y')}"]


def case_mlp_digits(work):
    plan = os.path.join(work, "mlp.plan")
    a800c(model("mlp.onnx"), plan, "--loss=cross_entropy", "--optimizer=adamw", "--lr=1e-3",
          "--batch=32")
    ckpt = os.path.join(work, "mlp.safetensors")
    p = run(plan, *digits_inputs("train"), "--shuffle", "--seed=1", "--epochs=10",
            *digits_inputs("test", "--eval-input"), "--eval-every=110",
            f"--checkpoint={ckpt}", f"--metrics={work}/m.jsonl")
    print(p.stdout)
    evals = re.findall(r"accuracy ([0-9.]+)% \((\d+)/(\d+)\)", p.stdout)
    accuracy, correct, total = float(evals[-1][0]), int(evals[-1][1]), int(evals[-1][2])
    assert accuracy >= 95.0, f"test accuracy {accuracy}% < 95%"
    assert len(metrics(f"{work}/m.jsonl")) == 10 * (1437 // 32)
    # The same accuracy from the checkpoint's weights in NumPy (float64).
    w = checkpoint(ckpt)
    x, y = np.load(data("test_x")).astype(np.float64), np.load(data("test_y"))
    h = x
    for i in (1, 2, 3):
        h = h @ w[f"fc{i}.weight"].T.astype(np.float64) + w[f"fc{i}.bias"]
        if i < 3:
            h = np.maximum(h, 0)
    numpy_correct = int((h.argmax(1) == y).sum())
    assert (numpy_correct, len(y)) == (correct, total), (numpy_correct, correct, total)
    print(f"mlp_digits: {accuracy:.2f}% test accuracy; NumPy agrees ({numpy_correct}/{len(y)})")


def memorise(name, plan_flags, feeds, epochs):
    """Trains `name` on 64 fixed samples; returns (first epoch, last epoch) mean losses."""
    work = ARGS.work
    plan = os.path.join(work, f"{name}.plan")
    a800c(model(f"{name}.onnx"), plan, "--loss=cross_entropy", "--batch=16", *plan_flags)
    flags = []
    for k, v in feeds.items():
        np.save(os.path.join(work, f"{name}.{k}.npy"), v)
        flags += ["--input", f"{k}={work}/{name}.{k}.npy"]
    m = f"{work}/{name}.jsonl"
    run(plan, *flags, f"--epochs={epochs}", "--shuffle", f"--metrics={m}")
    losses = [r["loss"] for r in metrics(m)]
    per_epoch = len(losses) // epochs
    return np.mean(losses[:per_epoch]), np.mean(losses[-per_epoch:])


def case_loss_halves(work):
    rng = np.random.default_rng(3)
    cnn = {"x": rng.standard_normal((64, 1, 8, 8)).astype(np.float32),
           "labels": rng.integers(0, 10, 64)}
    bert = {"input_ids": rng.integers(0, 1000, (64, 16)),
            "attention_mask": (rng.random((64, 16)) > 0.1).astype(np.int64),
            "labels": rng.integers(0, 2, 64)}
    for name, feeds, flags, epochs in (("cnn", cnn, ["--optimizer=adamw", "--lr=3e-3"], 60),
                                       ("bert", bert, ["--optimizer=adamw", "--lr=1e-3"], 40)):
        first, last = memorise(name, flags, feeds, epochs)
        print(f"{name}: mean training loss {first:.4f} (first epoch) -> {last:.4f} "
              f"(epoch {epochs})")
        assert last <= 0.5 * first, f"{name}: the loss did not halve"


# Bound on |w_accumulated - w_batched| / (1 + |w|) after 8 updates: the same mean gradient,
# summed in another order (4 means of 8 vs one mean of 32), so float32 rounding only (measured:
# about 3e-8 for both).
ACCUMULATE_BOUND = {"sgd": 1e-6, "adamw": 1e-6}


def case_accumulate(work):
    x, y = np.load(data("train_x"))[:256], np.load(data("train_y"))[:256]
    np.save(f"{work}/x.npy", x)
    np.save(f"{work}/y.npy", y)
    feeds = ["--input", f"x={work}/x.npy", "--input", f"labels={work}/y.npy"]
    for opt, lr in (("sgd", "0.1"), ("adamw", "1e-3")):
        weights = {}
        for batch, acc, steps in ((8, 4, 32), (32, 1, 8)):
            plan = f"{work}/{opt}_{batch}.plan"
            a800c(model("mlp.onnx"), plan, "--loss=cross_entropy", f"--optimizer={opt}",
                  f"--lr={lr}", f"--batch={batch}", f"--accumulate={acc}")
            ckpt = f"{work}/{opt}_{batch}.safetensors"
            run(plan, *feeds, f"--steps={steps}", f"--checkpoint={ckpt}")
            weights[batch] = checkpoint(ckpt)
        worst = 0.0
        for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
                     "fc3.bias"):
            a, b = weights[8][name].astype(np.float64), weights[32][name].astype(np.float64)
            worst = max(worst, float(np.max(np.abs(a - b) / (1 + np.abs(b)))))
        moved = float(np.max(np.abs(weights[32]["fc1.weight"] - weights[8]["fc1.weight"])))
        print(f"accumulate ({opt}): max |w_acc - w_batch| / (1 + |w|) = {worst:.2e} "
              f"(bound {ACCUMULATE_BOUND[opt]:.0e}), max abs {moved:.2e}")
        assert worst <= ACCUMULATE_BOUND[opt], f"{opt}: {worst} > {ACCUMULATE_BOUND[opt]}"


def dropout_mlp(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n)
             for n, s in (("w1", (64, 32)), ("w2", (32, 10)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Dropout", ["r", "ratio"], ["d"], name="drop"),
             helper.make_node("MatMul", ["d", "w2"], ["logits"])]
    inits.append(numpy_helper.from_array(np.array(0.3, np.float32), "ratio"))
    graph = helper.make_graph(nodes, "dropout_mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                             ["N", 10])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def case_resume(work):
    dropout_mlp(f"{work}/dropout_mlp.onnx")
    plan = f"{work}/resume.plan"
    a800c(f"{work}/dropout_mlp.onnx", plan, "--loss=cross_entropy", "--optimizer=adamw",
          "--lr=1e-3", "--batch=32")
    common = [*digits_inputs("train"), "--shuffle", "--seed=7"]
    n = 60  # past the end of the first epoch (44 batches), so the shuffled order changes
    run(plan, *common, f"--steps={2 * n}", f"--checkpoint={work}/straight.safetensors",
        f"--metrics={work}/straight.jsonl")
    run(plan, *common, f"--steps={n}", f"--checkpoint={work}/half.safetensors",
        f"--metrics={work}/resumed.jsonl")
    p = run(plan, *common, f"--steps={2 * n}", f"--resume={work}/half.safetensors",
            f"--checkpoint={work}/resumed.safetensors", f"--metrics={work}/resumed.jsonl")
    assert f"resumed from {work}/half.safetensors at step {n}" in p.stdout, p.stdout
    with open(f"{work}/straight.safetensors", "rb") as f1, \
            open(f"{work}/resumed.safetensors", "rb") as f2:
        assert f1.read() == f2.read(), "the resumed checkpoint differs from the straight one"
    straight = [(r["step"], r["loss"]) for r in metrics(f"{work}/straight.jsonl")]
    resumed = [(r["step"], r["loss"]) for r in metrics(f"{work}/resumed.jsonl")]
    assert straight == resumed, "the losses of the resumed run differ"
    # The resumed run may leave out --seed (it comes from the checkpoint) but not change it.
    run(plan, *digits_inputs("train"), "--shuffle", f"--steps={n + 1}",
        f"--resume={work}/half.safetensors")
    p = run(plan, *digits_inputs("train"), "--shuffle", "--seed=8", f"--steps={n + 1}",
            f"--resume={work}/half.safetensors", check=False)
    assert p.returncode == 2 and "--seed=7" in p.stderr, p.stderr
    print(f"resume: {n} + {n} steps == {2 * n} straight (checkpoint bytes and losses)")


def case_kill(work):
    plan = f"{work}/bert.plan"
    a800c(model("bert.onnx"), plan, "--loss=cross_entropy", "--optimizer=adamw", "--batch=4")
    ckpt = f"{work}/bert.safetensors"
    tmp_prefix = ".bert.safetensors.tmp."
    # A first checkpoint to protect.
    run(plan, "--synthetic", "--steps=2", f"--checkpoint={ckpt}")
    with open(ckpt, "rb") as f:
        before = f.read()
    # The writer pauses with half of the next checkpoint written (test hook of file_io.cc), and
    # is killed then: deterministic, whatever the machine's load.
    env = dict(os.environ, A8_TEST_PAUSE_MID_WRITE_MS="10000")
    proc = subprocess.Popen([os.path.join(ARGS.bin, "a800c-run"), plan, "--synthetic",
                             f"--resume={ckpt}", "--steps=4", f"--checkpoint={ckpt}",
                             "--save-every=1"], stdout=subprocess.DEVNULL, env=env)
    deadline = time.time() + 60
    leftover = []
    while time.time() < deadline and not leftover:
        leftover = [f for f in os.listdir(work) if f.startswith(tmp_prefix)]
        time.sleep(0.01)
    assert leftover, "the writer never started a checkpoint"
    time.sleep(0.2)  # inside the pause: half the bytes are in the temporary file
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = os.path.getsize(os.path.join(work, leftover[0]))
    assert 0 < partial < len(before) * 2, partial
    with open(ckpt, "rb") as f:
        assert f.read() == before, "the previous checkpoint changed"
    # It is whole: Python reads it and a800c-run resumes from it.
    from safetensors import safe_open
    with safe_open(ckpt, "np") as f:
        step = int(f.metadata()["step"])
    assert step == 2, step
    p = run(plan, "--synthetic", f"--resume={ckpt}", f"--steps={step + 1}")
    assert f"at step {step}" in p.stdout and "trained 1 step" in p.stdout, p.stdout
    print(f"kill: SIGKILL with {partial} bytes of the next checkpoint written; the checkpoint "
          f"at step {step} is intact and resumes")


def case_bad_input(work):
    plan = f"{work}/mlp.plan"
    a800c(model("mlp.onnx"), plan, "--loss=cross_entropy", "--batch=32")
    other = f"{work}/mlp16.plan"
    a800c(model("mlp.onnx"), other, "--loss=cross_entropy", "--batch=16")
    x, y = np.load(data("train_x")), np.load(data("train_y"))
    np.save(f"{work}/y_f32.npy", y.astype(np.float32))
    np.save(f"{work}/y_2d.npy", np.stack([y, y], 1))
    np.save(f"{work}/x_10.npy", x[:10])
    np.save(f"{work}/y_10.npy", y[:10])
    np.save(f"{work}/x_100.npy", x[:100])
    run(other, *digits_inputs("train"), "--steps=2", f"--checkpoint={work}/other.safetensors")
    good_x, good_y = f"x={data('train_x')}", f"labels={data('train_y')}"
    cases = [
        ("labels dtype", ["--input", good_x, "--input", f"labels={work}/y_f32.npy"],
         "dtype: the file holds f32, the plan's input is i64 ('labels' is the labels)"),
        ("labels shape", ["--input", good_x, "--input", f"labels={work}/y_2d.npy"],
         "shape: the file holds [1437,2], the plan's input is [32]"),
        ("fewer samples than a batch",
         ["--input", f"x={work}/x_10.npy", "--input", f"labels={work}/y_10.npy"],
         "10 samples, fewer than one batch of 32"),
        ("lengths differ", ["--input", f"x={work}/x_100.npy", "--input", good_y],
         "1437 samples, but"),
        ("unknown input",
         ["--input", good_x, "--input", good_y, "--input", f"nope={work}/x_10.npy"],
         "the plan has no input 'nope' (inputs: x, labels)"),
        ("missing labels", ["--input", good_x], "input 'labels' (the labels): no data"),
        ("checkpoint of another plan",
         ["--input", good_x, "--input", good_y, f"--resume={work}/other.safetensors"],
         "the checkpoint was written for another plan"),
        ("eval set of the wrong dtype",
         ["--input", good_x, "--input", good_y, "--eval-input", good_x, "--eval-input",
          f"labels={work}/y_f32.npy"], "--eval-input labels="),
        ("eval every without an eval set", ["--input", good_x, "--input", good_y,
                                            "--eval-every=5"], "needs --eval-input"),
    ]
    for what, flags, want in cases:
        p = run(plan, *flags, check=False)
        assert p.returncode == 2, f"{what}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
        assert p.stderr.startswith("a800c-run: error: ") and want in p.stderr, \
            f"{what}: '{want}' not in: {p.stderr}"
        assert "step" not in p.stdout, f"{what}: a step ran before the error:\n{p.stdout}"
        print(f"bad input ({what}): {p.stderr.strip()}")


def case_safetensors(work):
    plan = f"{work}/mlp.plan"
    a800c(model("mlp.onnx"), plan, "--loss=cross_entropy", "--optimizer=adam", "--batch=32")
    ckpt = f"{work}/c.safetensors"
    run(plan, *digits_inputs("train"), "--steps=5", f"--checkpoint={ckpt}")
    from safetensors import safe_open
    with safe_open(ckpt, "np") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    assert meta["format"] == "a800c-checkpoint" and meta["step"] == "5", meta
    assert meta["model_hash"].startswith("xxh3:") and meta["plan_hash"].startswith("fnv1a64:")
    # By hand: u64 header length, JSON, then the tensors tiling the data in name order.
    raw = open(ckpt, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header.pop("__metadata__") == meta
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
              "F64": np.float64}
    end = 0
    for name in sorted(header):
        e = header[name]
        assert e["data_offsets"][0] == end, name
        end = e["data_offsets"][1]
        a = np.frombuffer(raw[8 + n + e["data_offsets"][0]:8 + n + end],
                          dtypes[e["dtype"]]).reshape(e["shape"])
        assert np.array_equal(a, tensors[name]), name
    assert 8 + n + end == len(raw)
    assert set(header) == set(tensors)
    for p in ("fc1.weight", "fc1.weight.exp_avg", "fc1.weight.exp_avg_sq"):
        assert p in tensors, f"{p} missing: {sorted(tensors)}"
    print(f"safetensors: {len(tensors)} tensors, metadata {sorted(meta)}")


if __name__ == "__main__":
    run_case(globals(), "a8_e2e_")
