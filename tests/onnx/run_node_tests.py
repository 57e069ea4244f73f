#!/usr/bin/env python3
"""Runs the official ONNX backend node tests through a800c.

For every case in the supported list (supported_node_tests.txt, explicit and reviewed), a800c
must:
  1. import the model and print it as IR      (a800c model.onnx --emit=ir -o -)
  2. export it back to ONNX                   (a800c model.onnx --emit=onnx -o out.onnx)
  3. produce an ONNX model that onnx.checker accepts,
  4. whose graph outputs have the expected shapes and dtypes (a800c's own shape inference),
  5. and that onnxruntime runs to the expected outputs (the case's rtol/atol).
Every other case is counted as skipped. `--all` tries every case instead and prints why each
unsupported one fails; `--write-supported` rewrites the list from such a run.

    python3 tests/onnx/run_node_tests.py --a800c build/bin/a800c --data DIR [--all] [-j N]
"""
import argparse
import concurrent.futures
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ort.set_default_logger_severity(3)
HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORTED = os.path.join(HERE, "supported_node_tests.txt")


def load_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def run_case(a800c, case_dir, workdir):
    """Returns (ok, message)."""
    name = os.path.basename(case_dir)
    if os.path.exists(os.path.join(case_dir, "NOT_TENSORS")):
        return False, "inputs or outputs are not tensors"
    model_path = os.path.join(case_dir, "model.onnx")
    r = subprocess.run([a800c, model_path, "--emit=ir", "-o", "-"], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        return False, "import: " + r.stderr.strip().splitlines()[-1] if r.stderr.strip() else \
            f"import: exit {r.returncode}"
    out_path = os.path.join(workdir, name + ".onnx")
    r = subprocess.run([a800c, model_path, "--emit=onnx", "-o", out_path], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        return False, "export: " + (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    try:
        exported = onnx.load(out_path)
        onnx.checker.check_model(exported)
    except Exception as e:
        return False, f"onnx.checker: {str(e).splitlines()[0][:200]}"
    original = onnx.load(model_path)
    tol = json.load(open(os.path.join(case_dir, "tolerance.json")))
    try:
        sess = ort.InferenceSession(out_path, providers=["CPUExecutionProvider"])
    except Exception as e:
        return False, f"onnxruntime load: {str(e).splitlines()[0][:200]}"
    in_names = [i.name for i in original.graph.input]
    out_names = [o.name for o in original.graph.output]
    exported_outputs = {o.name: o for o in exported.graph.output}
    for ds in sorted(glob.glob(os.path.join(case_dir, "test_data_set_*"))):
        feeds = {}
        for j, n in enumerate(in_names):
            p = os.path.join(ds, f"input_{j}.pb")
            if os.path.exists(p):
                feeds[n] = load_tensor(p)
        expected = [load_tensor(os.path.join(ds, f"output_{j}.pb")) for j in range(len(out_names))]
        for n, want in zip(out_names, expected):
            o = exported_outputs.get(n)
            if o is None:
                return False, f"exported model lacks output '{n}'"
            dims = [d.dim_value for d in o.type.tensor_type.shape.dim]
            if list(want.shape) != dims:
                return False, f"shape of '{n}': a800c {dims}, expected {list(want.shape)}"
            dtype = onnx.helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type)
            if np.dtype(dtype) != want.dtype:
                return False, f"dtype of '{n}': a800c {np.dtype(dtype)}, expected {want.dtype}"
        try:
            got = sess.run(out_names, {k: v for k, v in feeds.items()
                                       if k in {i.name for i in sess.get_inputs()}})
        except Exception as e:
            return False, f"onnxruntime run: {str(e).splitlines()[0][:200]}"
        for n, g, want in zip(out_names, got, expected):
            if want.dtype.kind in "fc":
                ok = np.allclose(g.astype(np.float64), want.astype(np.float64),
                                 rtol=tol["rtol"], atol=tol["atol"], equal_nan=True)
            else:
                ok = np.array_equal(g, want)
            if not ok:
                return False, f"output '{n}' differs from the expected values"
    return True, "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a800c", required=True)
    ap.add_argument("--data", required=True, help="folder written by gen_node_tests.py")
    ap.add_argument("--all", action="store_true", help="try every case, not only the supported")
    ap.add_argument("--write-supported", action="store_true")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("-v", action="store_true", help="print every case")
    args = ap.parse_args()

    cases = sorted(os.listdir(os.path.join(args.data, "node")))
    supported = [l.strip() for l in open(SUPPORTED) if l.strip() and not l.startswith("#")]
    missing = sorted(set(supported) - set(cases))
    if missing:
        print(f"supported cases missing from the generated data: {missing[:10]}")
        return 1
    todo = cases if args.all else supported
    results = {}
    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        futs = {pool.submit(run_case, args.a800c, os.path.join(args.data, "node", c), work): c
                for c in todo}
        for f in concurrent.futures.as_completed(futs):
            c = futs[f]
            try:
                results[c] = f.result()
            except Exception as e:  # a timeout or a harness bug: a failure, never a skip
                results[c] = (False, f"harness: {e}")
    failed = [c for c in supported if not results[c][0]]
    for c in sorted(results):
        ok, msg = results[c]
        if args.v or (not ok and c in supported) or (args.all and not ok):
            tag = "PASS" if ok else ("FAIL" if c in supported else "UNSUPPORTED")
            print(f"{tag}: {c}: {msg}")
    if args.all:
        newly = sorted(c for c, (ok, _) in results.items() if ok and c not in supported)
        print(f"passing but not in the supported list: {len(newly)}")
        if args.write_supported:
            passing = sorted(c for c, (ok, _) in results.items() if ok)
            with open(SUPPORTED, "w") as f:
                f.write("# ONNX backend node tests that a800c must pass (tests/onnx/run_node_tests.py).\n")
                f.write("# Regenerate with --all --write-supported, then review the diff.\n")
                f.write("\n".join(passing) + "\n")
    ran = len(supported)
    passed = ran - len(failed)
    print(f"ONNX node tests: {len(cases)} cases, {ran} supported and run, {passed} passed, "
          f"{len(failed)} failed, {len(cases) - ran} skipped (unsupported)")
    print(f"node-tests: {passed} passed, {len(failed)} failed, {len(cases) - ran} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
