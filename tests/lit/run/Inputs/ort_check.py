#!/usr/bin/env python3
"""ort_check.py: inputs for a800c-run and a comparison of its outputs with onnxruntime's.

  ort_check.py inputs MODEL BATCH DIR     writes DIR/NAME.npy for every graph input (seeded:
                                          floats N(0,1), integers in [0, 8), masks in {0, 1})
  ort_check.py compare MODEL INDIR OUTDIR runs onnxruntime on INDIR's inputs and checks every
               [scaled]                   OUTDIR/NAME.npy within 1e-5 relative (fp32), element by
                                          element, or with `scaled` relative to the output's
                                          largest magnitude (for outputs that onnxruntime computes
                                          with cancellation, e.g. 1 + erf(x) for negative x)
  ort_check.py load MODEL                 onnxruntime loads MODEL and runs it once on seeded
                                          inputs (batch 2); prints 'loads'
Exits 0 and prints 'ok: N outputs' on success; skips (prints 'skipped') without onnxruntime."""
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4, "tools"))
from graph_inputs import feed_inputs  # noqa: E402


def make_inputs(model_path, batch, out):
    model = onnx.load(model_path)
    rng = np.random.default_rng(1234)
    os.makedirs(out, exist_ok=True)
    for name, dims, dtype in feed_inputs(model, batch):
        if np.issubdtype(dtype, np.floating):
            a = rng.standard_normal(dims).astype(dtype)
        elif "mask" in name:
            a = rng.integers(0, 2, dims).astype(dtype)
        else:
            a = rng.integers(0, 8, dims).astype(dtype)
        np.save(os.path.join(out, name + ".npy"), a)


def compare(model_path, indir, outdir, scaled=False):
    try:
        import onnxruntime as ort
    except ImportError:
        print("skipped: no onnxruntime")
        return 0
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(os.path.join(indir, i.name + ".npy")) for i in sess.get_inputs()}
    want = sess.run(None, feeds)
    bad = 0
    for meta, w in zip(sess.get_outputs(), want):
        got = np.load(os.path.join(outdir, meta.name + ".npy"))
        if got.shape != w.shape or got.dtype != w.dtype:
            print(f"{meta.name}: got {got.dtype}{got.shape}, onnxruntime {w.dtype}{w.shape}")
            bad += 1
            continue
        if not np.all(np.isfinite(got)) or np.count_nonzero(got) == 0:
            print(f"{meta.name}: not finite or all zero")
            bad += 1
        floor = np.maximum(np.abs(w).max(), 1e-3) if scaled else np.maximum(np.abs(w), 1e-3)
        err = np.abs(got.astype(np.float64) - w) / floor
        if err.max() > 1e-5:
            print(f"{meta.name}: max relative error {err.max():.3g} > 1e-5")
            bad += 1
    if bad:
        return 1
    print(f"ok: {len(want)} outputs")
    return 0


def load(model_path):
    import tempfile
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as tmp:
        make_inputs(model_path, 2, tmp)
        sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        feeds = {i.name: np.load(os.path.join(tmp, i.name + ".npy")) for i in sess.get_inputs()}
        sess.run(None, feeds)
    print("loads")
    return 0


def main():
    if sys.argv[1] == "load":
        return load(sys.argv[2])
    if sys.argv[1] == "inputs":
        make_inputs(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return 0
    return compare(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:] == ["scaled"])


if __name__ == "__main__":
    sys.exit(main())
