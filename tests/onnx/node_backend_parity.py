"""Backend parity of the supported ONNX node tests: run_node_tests.py --compare-backend BACKEND.

Every case of supported_node_tests.txt that runs on the CPU backend (all but the cases listed in
cpu_unsupported_node_tests.txt) is compiled once per data set (`a800c model.onnx -o x.plan
--precision=fp32`, with `--bind` for the graph inputs a800c asks to freeze) and run with
`a800c-run x.plan --steps=1` on `--backend=cpu --reference` (the CPU's reference kernels, which
are written to give cuda-emu's bits; the fast ones are not: vectorised exp, other summation
orders) and on `--backend=BACKEND` (cuda-emu: the CUDA kernels' code on the host). Every output
must be bit-identical: same dtype, shape and bytes (NaN payloads included). The case's expected values are not looked at (onnx_node_tests checks them);
onnxruntime is not run, which keeps the pass to a few minutes on 2 cores.

The helpers (bind discovery, .npy writing) are run_node_tests.py's, passed in as `h`, so both
runs feed a800c the same arrays.
"""
import glob
import os
import subprocess
import tempfile

import numpy as np
import onnx


def _compare(name, got_dir, want_dir, out_names, backend):
    """None when every output of `backend` (got_dir) has the CPU's (want_dir) bits, else why."""
    for n in out_names:
        paths = [os.path.join(d, n + ".npy") for d in (want_dir, got_dir)]
        for p in paths:
            if not os.path.exists(p):
                return f"output '{n}': a800c-run wrote no {os.path.basename(p)}"
        want, got = (np.load(p) for p in paths)
        if got.dtype != want.dtype or got.shape != want.shape:
            return (f"output '{n}': {backend} gives {got.dtype}{list(got.shape)}, the CPU "
                    f"{want.dtype}{list(want.shape)}")
        if got.tobytes() != want.tobytes():
            g = got.reshape(-1).view(np.uint8).reshape(got.size, -1)
            w = want.reshape(-1).view(np.uint8).reshape(want.size, -1)
            differ = np.any(g != w, axis=1)
            first = int(np.argmax(differ))
            return (f"output '{n}': {int(differ.sum())} of {got.size} elements differ from the "
                    f"CPU's bits (first at flat index {first}: {backend} "
                    f"{got.reshape(-1)[first]!r}, CPU {want.reshape(-1)[first]!r})")
    return None


def parity_case(h, a800c, a800c_run, backend, case_dir, workdir):
    """(ok, message) of one case: its outputs on `backend` against the CPU backend's."""
    name = os.path.basename(case_dir)
    if os.path.exists(os.path.join(case_dir, "NOT_TENSORS")):
        return False, "inputs or outputs are not tensors"
    model_path = os.path.join(case_dir, "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    all_in = [i.name for i in model.graph.input]
    out_names = [o.name for o in model.graph.output]
    binds = None  # found on the first compile that asks for them
    plan = None
    for k, ds in enumerate(sorted(glob.glob(os.path.join(case_dir, "test_data_set_*")))):
        if plan is None or binds:
            plan = os.path.join(workdir, f"{name}.{k}.plan")
            cmd = [a800c, model_path, "--precision=fp32", "-o", plan]
            flags = h.bind_flags(case_dir, ds, binds, workdir, f"par{k}") if binds else []
            r = subprocess.run(cmd + flags, capture_output=True, text=True, timeout=120)
            if r.returncode != 0 and binds is None and h.BIND_HINT.search(r.stderr):
                binds, _ = h.find_binds(a800c, case_dir, workdir)
                flags = h.bind_flags(case_dir, ds, binds, workdir, f"par{k}")
                r = subprocess.run(cmd + flags, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                return False, "compile: " + h.first_line(r.stderr, f"exit {r.returncode}")
            binds = binds or []
        inputs = []
        for j, n in enumerate(all_in):
            p = os.path.join(ds, f"input_{j}.pb")
            if os.path.exists(p) and n not in inits and n not in binds:
                npy = os.path.join(workdir, f"{name}.{k}.input_{j}.npy")
                h.save_npy(npy, h.load_tensor(p))
                inputs += ["--input", f"{n}={npy}"]
        dirs = {}
        for b in ("cpu", backend):
            dirs[b] = os.path.join(workdir, f"{name}.{k}.{b}")
            os.makedirs(dirs[b], exist_ok=True)
            mode = ["--reference"] if b == "cpu" else []
            r = subprocess.run([a800c_run, plan, f"--backend={b}", "--steps=1"] + mode + inputs +
                               [f"--output-dir={dirs[b]}"], capture_output=True, text=True,
                               timeout=300)
            if r.returncode != 0:
                return False, f"run on {b} (exit {r.returncode}): " + h.first_line(r.stderr, "")
        why = _compare(name, dirs[backend], dirs["cpu"], out_names, backend)
        if why is not None:
            return False, f"data set {k}: {why}"
    return True, "ok"


def run_all(h, args, cases):
    """Runs parity_case over `cases` (supported, not listed as not runnable on the CPU); prints
    the failures (every case with -v) and the counts; returns the number of failures."""
    listed = h.read_cpu_unsupported()
    todo = [c for c in cases if c not in listed]
    with tempfile.TemporaryDirectory() as work:
        results = h.map_cases(lambda c: parity_case(h, args.a800c, args.run_cpu,
                                                    args.compare_backend,
                                                    os.path.join(args.data, "node", c), work),
                              todo, args.j)
    failed = sorted(c for c, (ok, _) in results.items() if not ok)
    for c in sorted(results):
        ok, msg = results[c]
        if args.v or not ok:
            print(f"{args.compare_backend} {'PASS' if ok else 'FAIL'}: {c}: {msg}")
    print(f"backend parity (cpu --reference vs {args.compare_backend}, bit-identical outputs): "
          f"{len(results)} run, {len(results) - len(failed)} identical, {len(failed)} failed, "
          f"{len(cases) - len(todo)} listed as not runnable on the CPU "
          f"(cpu_unsupported_node_tests.txt)")
    return len(failed)
