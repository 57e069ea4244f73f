#!/usr/bin/env python3
"""Runs the official ONNX backend node tests through a800c.

For every case in the supported list (supported_node_tests.txt, explicit and reviewed), a800c
must:
  1. import the model and print it as IR      (a800c model.onnx --emit=ir -o -)
  2. export it back to ONNX                   (a800c model.onnx --emit=onnx -o out.onnx)
  3. produce an ONNX model that onnx.checker accepts,
  4. whose graph outputs have the expected shapes and dtypes (a800c's own shape inference),
  5. and that onnxruntime runs to the expected outputs (the case's rtol/atol). Where onnxruntime
     has no kernel for the exported model (NOT_IMPLEMENTED: bf16 kernels, ops newer than it), the
     values are checked instead by a800c's CPU backend against the case's own reference outputs
     (output_*.pb, written by onnx's reference implementation) at the same tolerance, as --run-cpu
     does (a800c-run: --run-cpu's, else the one beside a800c); the summary counts those cases.
A case whose shapes, axes or pads arrive as graph inputs is compiled with `--bind NAME=FILE.npy`
for each input that a800c's error names (its "freeze graph input 'NAME' with --bind" hint), the
array taken from the test data set (one compile per data set). Every other case is counted as
skipped. `--all` tries every case instead and prints why each
unsupported one fails, with its class (node_test_reasons.py: the excluded classes, such as strings
or ai.onnx.ml, then the work left, such as a missing op), and counts the classes;
`--write-reasons FILE` writes that list; `--write-supported` rewrites the supported list.

`--run-cpu A800C_RUN` also runs every supported case on a800c's CPU backend: compile the model to
a plan (a800c model.onnx -o x.plan), write each input as .npy (one batch: the plan's batch is the
array's first dim, so one step uses the whole array), run
`a800c-run x.plan --backend=cpu --steps=1 --input NAME=FILE.npy ... --output-dir D`, and compare
each NAME.npy with the expected output (the case's rtol/atol; integers and bools exactly). A
supported case that cannot run on the CPU backend yet must be listed, with the reason, in
cpu_unsupported_node_tests.txt; every other CPU failure fails the run. The CPU counts (run,
passed, failed, listed) are printed apart from the import/export counts;
`--write-cpu-unsupported` rewrites that list from a run (review the diff).

The cases whose outputs are random draws (random_outputs.py RANDOM_CASES: Bernoulli,
training-mode Dropout) are checked by properties instead of values, on onnxruntime and on the
CPU backend (dtype and shape exactly, values by the distribution's properties); the summary
counts them.

    python3 tests/onnx/run_node_tests.py --a800c build/bin/a800c --data DIR [--all] [-j N]
        [--run-cpu build/bin/a800c-run] [-k REGEX]

`--compare-backend BACKEND` (with --run-cpu) also runs each plan that passes on the CPU backend
on `--backend=cpu --reference` and on BACKEND (cuda-emu), with the same inputs, and requires
bit-identical outputs (node_backend_parity.py): one compile per case serves both checks.

`-k REGEX` keeps only the cases whose name matches (re.search), supported and not, to iterate on
a few (`-k '^test_(attention|rotary)'`); the counts are then of those cases.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import node_backend_parity  # noqa: E402
import node_test_reasons  # noqa: E402
import random_outputs  # noqa: E402

ort.set_default_logger_severity(3)
HERE = os.path.dirname(os.path.abspath(__file__))
TRAINING_DOMAIN = "ai.onnx.preview.training"
SUPPORTED = os.path.join(HERE, "supported_node_tests.txt")
CPU_UNSUPPORTED = os.path.join(HERE, "cpu_unsupported_node_tests.txt")
# a800c's hint when a shape-like operand is a graph input (shape_rules_common.cc, ConstantData).
BIND_HINT = re.compile(r"freeze graph input '(.+?)' with --bind=")
# case -> the graph inputs it binds (found by run_case, used by run_cpu_case).
BINDS = {}
# onnxruntime's words for "no kernel for this op/type" (NOT_IMPLEMENTED; bf16 arrays it cannot take
# or, in its Python binding, return; ReduceMax of an empty bool set, which ONNX defines), as
# opposed to a model it rejects: only those cases fall back to the case's own reference outputs.
ORT_NO_KERNEL = re.compile(r"NOT_IMPLEMENTED|Could not find an implementation|"
                           r"can.t be converted to MLDataType|is not defined for empty set|"
                           r"No corresponding Numpy type for Tensor Type\. bfloat16")
# Cases where onnxruntime computes something else than the ONNX spec (and onnx's reference, which
# wrote the expected outputs): checked like ORT_NO_KERNEL's cases, against the reference outputs
# on the CPU backend.
ORT_DEVIATES = {
    "test_maxunpool_export_with_output_shape":
        "onnxruntime's MaxUnpool indexes the output_shape tensor; the spec indexes the inferred "
        "one and pads it to output_shape",
}
# case -> onnxruntime's message, for the cases whose values were checked against the case's
# reference outputs (output_*.pb) on a800c's CPU backend because onnxruntime has no kernel.
REFERENCE_CHECKED = {}
# The cases whose values were checked by properties (random_outputs.py), not against output_*.pb.
RANDOM_CHECKED = set()
# --compare-backend: case -> None (bit-identical on every data set) or why not.
PARITY = {}


def load_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def save_npy(path, array):
    """.npy for a800c: a bf16 array as its bits (<u2), which a800c-run reads for a bf16 input."""
    if array.dtype.name == "bfloat16":
        array = array.view(np.uint16)
    np.save(path, array)


def data_sets(case_dir):
    """The case's test_data_set_* folders, in order."""
    return sorted(glob.glob(os.path.join(case_dir, "test_data_set_*")))


def open_case(case_dir):
    """(the model's path, the model, the case's tolerance.json, the model's output names)."""
    model_path = os.path.join(case_dir, "model.onnx")
    original = onnx.load(model_path)
    tol = json.load(open(os.path.join(case_dir, "tolerance.json")))
    return model_path, original, tol, [o.name for o in original.graph.output]


def bind_flags(case_dir, ds, names, workdir, tag):
    """--bind flags for the graph inputs `names`, with the arrays of data set `ds`."""
    model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
    all_in = [i.name for i in model.graph.input]
    flags = []
    for n in names:
        p = os.path.join(ds, f"input_{all_in.index(n)}.pb")
        npy = os.path.join(workdir, f"{os.path.basename(case_dir)}.{tag}.bind.{all_in.index(n)}.npy")
        save_npy(npy, load_tensor(p))  # a bf16 array as its bits, as --bind reads it
        flags.append(f"--bind={n}={npy}")
    return flags


def find_binds(a800c, case_dir, workdir):
    """The graph inputs that a800c asks to freeze (its --bind hint), with data set 0's arrays:
    (names, stderr of the last import). Stops when an import passes or gives no new hint."""
    model_path = os.path.join(case_dir, "model.onnx")
    datasets = data_sets(case_dir)
    model = onnx.load(model_path, load_external_data=False)
    all_in = [i.name for i in model.graph.input]
    names = []
    while True:
        flags = bind_flags(case_dir, datasets[0], names, workdir, "probe") if names else []
        r = subprocess.run([a800c, model_path, "--precision=fp32", "--emit=ir", "-o", "-"]
                           + flags, capture_output=True, text=True, timeout=120)
        hint = BIND_HINT.search(r.stderr) if r.returncode != 0 and datasets else None
        if hint is None or hint.group(1) in names or hint.group(1) not in all_in:
            return names, r
        names.append(hint.group(1))


def import_error(r):
    """The message of a failed import (--emit=ir) run, or None."""
    if r.returncode == 0:
        return None
    return "import: " + r.stderr.strip().splitlines()[-1] if r.stderr.strip() else \
        f"import: exit {r.returncode}"


def import_export(a800c, model_path, flags, out_path, imported=False):
    """Imports (--emit=ir; skipped when `imported`) and exports (--emit=onnx) with `flags`;
    returns an error or None."""
    if not imported:
        r = subprocess.run([a800c, model_path, "--precision=fp32", "--emit=ir", "-o", "-"]
                           + flags, capture_output=True, text=True, timeout=120)
        if import_error(r):
            return import_error(r)
    r = subprocess.run([a800c, model_path, "--precision=fp32", "--emit=onnx", "-o", out_path]
                       + flags, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return "export: " + (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    return None


def reference_check(a800c, a800c_run, case_dir, workdir, ort_message):
    """When onnxruntime has no kernel for the exported model (or deviates from the spec,
    ORT_DEVIATES): a800c's own output on the CPU backend against the case's reference outputs, at
    the case's tolerance. (ok, message)."""
    name = os.path.basename(case_dir)
    if not (ORT_NO_KERNEL.search(ort_message) or name in ORT_DEVIATES) or not a800c_run:
        return False, ort_message
    h = subprocess.run([a800c, "--help"], capture_output=True, text=True).stdout
    flags = ["--precision=fp32"] if "--precision" in h else []
    ok, msg = run_cpu_case(a800c, a800c_run, flags, case_dir, workdir)
    if not ok:
        return False, f"{ort_message}; the CPU backend against the reference outputs: {msg}"
    REFERENCE_CHECKED[name] = ort_message
    return True, "ok (onnxruntime has no kernel: checked against the reference outputs on the CPU)"


def run_case(a800c, case_dir, workdir, a800c_run=None):
    """Returns (ok, message). `a800c_run`: for the cases onnxruntime has no kernel for."""
    name = os.path.basename(case_dir)
    if os.path.exists(os.path.join(case_dir, "NOT_TENSORS")):
        return False, "inputs or outputs are not tensors"
    # The probe is data set 0's import step.
    binds, probe = find_binds(a800c, case_dir, workdir)
    BINDS[name] = binds
    if import_error(probe):
        return False, import_error(probe)
    model_path, original, tol, out_names = open_case(case_dir)
    in_names = [i.name for i in original.graph.input]
    exported = None
    for k, ds in enumerate(data_sets(case_dir)):
        # Bound inputs are part of the compiled model: one compile per data set.
        if exported is None or binds:
            out_path = os.path.join(workdir, f"{name}.{k}.onnx")
            err = import_export(a800c, model_path,
                                bind_flags(case_dir, ds, binds, workdir, str(k)), out_path,
                                imported=k == 0)
            if err:
                return False, err
            try:
                exported = onnx.load(out_path)
                onnx.checker.check_model(exported)
            except Exception as e:
                return False, f"onnx.checker: {str(e).splitlines()[0][:200]}"
            # onnxruntime has no ai.onnx.preview.training kernels: a model that keeps such nodes
            # after a800c (the optimizers) is checked for shapes and dtypes here and for values
            # by --run-cpu.
            if name in ORT_DEVIATES:
                return reference_check(a800c, a800c_run, case_dir, workdir,
                                       f"onnxruntime deviates: {ORT_DEVIATES[name]}")
            runs_in_ort = all(n.domain != TRAINING_DOMAIN for n in exported.graph.node)
            try:
                sess = ort.InferenceSession(out_path, providers=["CPUExecutionProvider"]) \
                    if runs_in_ort else None
            except Exception as e:
                return reference_check(a800c, a800c_run, case_dir, workdir,
                                       f"onnxruntime load: {str(e).splitlines()[0][:200]}")
            exported_outputs = {o.name: o for o in exported.graph.output}
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
        if sess is None:
            continue
        try:
            got = sess.run(out_names, {k: v for k, v in feeds.items()
                                       if k in {i.name for i in sess.get_inputs()}})
        except Exception as e:
            return reference_check(a800c, a800c_run, case_dir, workdir,
                                   f"onnxruntime run: {str(e).splitlines()[0][:200]}")
        if random_outputs.is_random_case(name):
            ok, msg = random_outputs.check(name, original, feeds, got)
            if not ok:
                return False, "onnxruntime: " + msg
            RANDOM_CHECKED.add(name)
            continue
        for n, g, want in zip(out_names, got, expected):
            if want.dtype.kind in "fc":
                ok = np.allclose(g.astype(np.float64), want.astype(np.float64),
                                 rtol=tol["rtol"], atol=tol["atol"], equal_nan=True)
            else:
                ok = np.array_equal(g, want)
            if not ok:
                return False, f"output '{n}' differs from the expected values"
    return True, "ok"


def read_cpu_unsupported():
    """{case: reason} from cpu_unsupported_node_tests.txt ("case  # reason" lines)."""
    out = {}
    if not os.path.exists(CPU_UNSUPPORTED):
        return out
    for line in open(CPU_UNSUPPORTED):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition("#")
        out[name.strip()] = reason.strip()
    return out


def map_cases(fn, cases, j):
    """{case: fn(case)} over j threads; fn returns (ok, message), and an exception (a timeout or
    a harness bug) is a failure with its message."""
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=j) as pool:
        futs = {pool.submit(fn, c): c for c in cases}
        for f in concurrent.futures.as_completed(futs):
            c = futs[f]
            try:
                results[c] = f.result()
            except Exception as e:
                results[c] = (False, f"harness: {type(e).__name__}: {str(e)[:200]}")
    return results


def first_line(text, fallback):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:300] if lines else fallback


# The least tolerance a low-precision output is compared at: torch.testing.assert_close's defaults
# for bf16 and f16 (the cases' own rtol/atol are written for float outputs; a800c computes bf16
# ops in bf16 where onnx's reference rounds once at the end).
LOW_PRECISION_TOL = {"bfloat16": (1.6e-2, 1e-5), "float16": (1e-3, 1e-5)}


def run_cpu_case(a800c, a800c_run, compile_flags, case_dir, workdir, compare_backend=None):
    """Compiles the case to a plan and runs it on the CPU backend. Returns (ok, message). With
    `compare_backend` (cuda-emu), each plan that passes also runs on `--backend=cpu --reference`
    and on that backend, whose outputs must be bit-identical (node_backend_parity.py); the
    verdict goes to PARITY, apart from the CPU's."""
    name = os.path.basename(case_dir)
    if os.path.exists(os.path.join(case_dir, "NOT_TENSORS")):
        return False, "inputs or outputs are not tensors"
    binds = BINDS.get(name, [])
    model_path, original, tol, out_names = open_case(case_dir)
    inits = {i.name for i in original.graph.initializer}
    in_names = [i.name for i in original.graph.input if i.name not in inits and i.name not in binds]
    all_in = [i.name for i in original.graph.input]
    plan = None
    for k, ds in enumerate(data_sets(case_dir)):
        # Bound inputs are part of the plan: one compile per data set.
        if plan is None or binds:
            plan = os.path.join(workdir, f"{name}.{k}.plan")
            flags = compile_flags + bind_flags(case_dir, ds, binds, workdir, f"cpu{k}")
            r = subprocess.run([a800c, model_path, "-o", plan] + flags, capture_output=True,
                               text=True, timeout=120)
            if r.returncode != 0:
                return False, "compile: " + first_line(r.stderr, f"exit {r.returncode}")
        cmd = [a800c_run, plan, "--backend=cpu", "--steps=1"]
        for j, n in enumerate(all_in):
            p = os.path.join(ds, f"input_{j}.pb")
            if os.path.exists(p) and n in in_names:
                npy = os.path.join(workdir, f"{name}.{k}.input_{j}.npy")
                save_npy(npy, load_tensor(p))
                cmd += ["--input", f"{n}={npy}"]
        outdir = os.path.join(workdir, f"{name}.{k}.out")
        os.makedirs(outdir, exist_ok=True)
        cmd.append(f"--output-dir={outdir}")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            return False, f"run (exit {r.returncode}): " + first_line(r.stderr, "no message")
        run_inputs = cmd[4:-1]  # the --input flags
        random_got = []
        for j, n in enumerate(out_names):
            want = load_tensor(os.path.join(ds, f"output_{j}.pb"))
            path = os.path.join(outdir, n + ".npy")
            if not os.path.exists(path):
                return False, f"output '{n}': a800c-run wrote no {n}.npy"
            got = np.load(path)
            if want.dtype.name == "bfloat16" and got.dtype == np.uint16:
                got = got.view(want.dtype)  # a800c-run writes bf16 as its bits (<u2)
            if got.shape != want.shape or got.dtype != want.dtype:
                return False, (f"output '{n}': {got.dtype}{list(got.shape)}, expected "
                               f"{want.dtype}{list(want.shape)}")
            if random_outputs.is_random_case(name):
                random_got.append(got)
                continue
            if want.dtype.kind in "fc" or want.dtype.name == "bfloat16":
                rtol, atol = LOW_PRECISION_TOL.get(want.dtype.name, (0, 0))
                ok = np.allclose(got.astype(np.float64), want.astype(np.float64),
                                 rtol=max(rtol, tol["rtol"]), atol=max(atol, tol["atol"]),
                                 equal_nan=True)
            else:
                ok = np.array_equal(got, want)
            if not ok:
                d = np.abs(got.astype(np.float64) - want.astype(np.float64))
                return False, (f"output '{n}' differs from the expected values (max abs diff "
                               f"{np.nanmax(d) if d.size else 0:.3g})")
        if random_got:
            inputs = {n: load_tensor(os.path.join(ds, f"input_{j}.pb"))
                      for j, n in enumerate(all_in)
                      if os.path.exists(os.path.join(ds, f"input_{j}.pb"))}
            ok, msg = random_outputs.check(name, original, inputs, random_got)
            if not ok:
                return False, msg
            RANDOM_CHECKED.add(name)
        if compare_backend:
            why = node_backend_parity.check_plan(sys.modules[__name__], a800c_run,
                                                 compare_backend, plan, run_inputs, workdir,
                                                 f"{name}.{k}", out_names)
            if why is not None:
                PARITY[name] = f"data set {k}: {why}"
                compare_backend = None  # one verdict per case
    if compare_backend:
        PARITY[name] = None
    return True, "ok"


def run_cpu_all(args, cases_ok):
    """Runs run_cpu_case over cases_ok; prints and returns the number of unexpected failures."""
    listed = read_cpu_unsupported()
    h = subprocess.run([args.a800c, "--help"], capture_output=True, text=True).stdout
    flags = ["--precision=fp32"] if "--precision" in h else []
    with tempfile.TemporaryDirectory() as work:
        results = map_cases(lambda c: run_cpu_case(args.a800c, args.run_cpu, flags,
                                                   os.path.join(args.data, "node", c), work,
                                                   args.compare_backend),
                            cases_ok, args.j)
    failed = sorted(c for c, (ok, _) in results.items() if not ok and c not in listed)
    expected_fail = sorted(c for c, (ok, _) in results.items() if not ok and c in listed)
    now_pass = sorted(c for c, (ok, _) in results.items() if ok and c in listed)
    for c in sorted(results):
        ok, msg = results[c]
        if args.v or c in failed:
            print(f"CPU {'PASS' if ok else 'FAIL'}: {c}: {msg}")
    for c in now_pass:
        print(f"CPU note: {c} passes now; remove it from cpu_unsupported_node_tests.txt")
    if args.write_cpu_unsupported:
        with open(CPU_UNSUPPORTED, "w") as f:
            f.write("# Supported ONNX node tests (supported_node_tests.txt) that import and export\n"
                    "# but do not run on a800c's CPU backend yet, each with the reason\n"
                    "# (tests/onnx/run_node_tests.py --run-cpu; rewrite with\n"
                    "# --write-cpu-unsupported, then review the diff).\n")
            for c in sorted(c for c, (ok, _) in results.items() if not ok):
                f.write(f"{c}  # {results[c][1]}\n")
    passed = sum(1 for ok, _ in results.values() if ok)
    print(f"CPU backend: {len(results)} run, {passed} passed, {len(failed)} failed, "
          f"{len(expected_fail)} listed as not runnable yet (cpu_unsupported_node_tests.txt)")
    parity_failed = 0
    if args.compare_backend:
        b = args.compare_backend
        parity_failed = sum(1 for why in PARITY.values() if why is not None)
        for c in sorted(PARITY):
            if args.v or PARITY[c] is not None:
                print(f"{b} {'PASS' if PARITY[c] is None else 'FAIL'}: {c}: {PARITY[c] or 'ok'}")
        print(f"backend parity (cpu --reference vs {b}, bit-identical outputs): {len(PARITY)} "
              f"run (the cases that pass on the CPU), {len(PARITY) - parity_failed} identical, "
              f"{parity_failed} failed")
    return 0 if args.write_cpu_unsupported else len(failed) + parity_failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a800c", required=True)
    ap.add_argument("--data", required=True, help="folder written by gen_node_tests.py")
    ap.add_argument("--all", action="store_true", help="try every case, not only the supported")
    ap.add_argument("--write-supported", action="store_true")
    ap.add_argument("--write-reasons", metavar="FILE",
                    help="with --all: write each unsupported case with its class and message")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("-v", action="store_true", help="print every case")
    ap.add_argument("-k", metavar="REGEX",
                    help="only the cases whose name matches REGEX (re.search), to iterate on a few")
    ap.add_argument("--run-cpu", metavar="A800C_RUN",
                    help="also run the supported cases on the CPU backend with this a800c-run")
    ap.add_argument("--write-cpu-unsupported", action="store_true",
                    help="with --run-cpu: rewrite cpu_unsupported_node_tests.txt from this run")
    ap.add_argument("--compare-backend", metavar="BACKEND",
                    help="with --run-cpu: also run each plan that passes on the CPU on "
                         "--backend=cpu --reference and on BACKEND (cuda-emu), and require "
                         "bit-identical outputs (node_backend_parity.py)")
    args = ap.parse_args()

    cases = sorted(os.listdir(os.path.join(args.data, "node")))
    supported = [l.strip() for l in open(SUPPORTED) if l.strip() and not l.startswith("#")]
    if args.k:
        if args.write_supported or args.write_cpu_unsupported:
            print("-k cannot be combined with --write-supported or --write-cpu-unsupported")
            return 2
        cases = [c for c in cases if re.search(args.k, c)]
        supported = [c for c in supported if re.search(args.k, c)]
    missing = sorted(set(supported) - set(cases))
    if missing:
        print(f"supported cases missing from the generated data: {missing[:10]}")
        return 1
    if args.compare_backend and not args.run_cpu:
        print("--compare-backend needs --run-cpu (the a800c-run to use)")
        return 2
    todo = cases if args.all else supported
    # The cases onnxruntime has no kernel for are run on the CPU backend (a800c-run: --run-cpu's,
    # else the one beside a800c) against their reference outputs.
    beside = os.path.join(os.path.dirname(args.a800c), "a800c-run")
    a800c_run = args.run_cpu or (beside if os.access(beside, os.X_OK) else None)
    results = {}
    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        futs = {pool.submit(run_case, args.a800c, os.path.join(args.data, "node", c), work,
                            a800c_run): c
                for c in todo}
        for f in concurrent.futures.as_completed(futs):
            c = futs[f]
            try:
                results[c] = f.result()
            except Exception as e:  # a timeout or a harness bug: a failure, never a skip
                results[c] = (False, f"harness: {e}")
    failed = [c for c in supported if not results[c][0]]
    # The class of each unsupported case (node_test_reasons.py).
    classes = {c: node_test_reasons.classify(os.path.join(args.data, "node", c), msg)
               for c, (ok, msg) in results.items() if not ok and c not in supported}
    for c in sorted(results):
        ok, msg = results[c]
        if args.v or (not ok and c in supported) or (args.all and not ok):
            tag = "PASS" if ok else ("FAIL" if c in supported else "UNSUPPORTED")
            why = f"[{classes[c]}] " if c in classes else ""
            print(f"{tag}: {c}: {why}{msg}")
    if args.all:
        print("\n".join(node_test_reasons.summarize(classes)))
        if args.write_reasons:
            with open(args.write_reasons, "w") as f:
                f.write("# ONNX node tests a800c does not pass, each with its class "
                        "(tests/onnx/node_test_reasons.py) and message.\n")
                for c in sorted(classes):
                    f.write(f"{c}  # {classes[c]}: {results[c][1]}\n")
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
    reference = sorted(c for c in REFERENCE_CHECKED if results.get(c, (False,))[0])
    print(f"checked against the cases' reference outputs on the CPU backend (onnxruntime has no "
          f"kernel): {len(reference)} of the passing cases")
    for c in reference if args.v else []:
        print(f"  {c}: {REFERENCE_CHECKED[c]}")
    cpu_failed = 0
    if args.run_cpu:
        cpu_failed = run_cpu_all(args, [c for c in supported if results[c][0]])
    randoms = sorted(c for c in RANDOM_CHECKED if results.get(c, (False,))[0])
    print(f"checked by properties (random outputs, random_outputs.py): {len(randoms)} of the "
          f"passing cases")
    return 1 if failed or cpu_failed else 0


if __name__ == "__main__":
    sys.exit(main())
