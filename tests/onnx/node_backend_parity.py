"""Backend parity of the supported ONNX node tests: run_node_tests.py --run-cpu A800C_RUN
--compare-backend BACKEND.

Every case of supported_node_tests.txt that runs on the CPU backend (all but the cases listed in
cpu_unsupported_node_tests.txt) is compiled once per data set by the CPU run (run_cpu_case), and
that plan is also run with `a800c-run x.plan --steps=1` on `--backend=cpu --reference` (the CPU's
reference kernels, which are written to give cuda-emu's bits; the fast ones are not: vectorised
exp, other summation orders) and on `--backend=BACKEND` (cuda-emu: the CUDA kernels' code on the
host), with the same inputs. Every output must be bit-identical: same dtype, shape and bytes (NaN
payloads included). The expected values are checked by the CPU run itself; here only the two
backends' bits are compared.

The helpers (first_line) are run_node_tests.py's, passed in as `h`.
"""
import os
import subprocess

import numpy as np


def _compare(got_dir, want_dir, out_names, backend):
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


def check_plan(h, a800c_run, backend, plan, inputs, workdir, tag, out_names):
    """None when `plan` run for one step on `--backend=cpu --reference` and on `--backend=BACKEND`
    with the same `inputs` (a800c-run --input flags) gives the same bits for every output, else
    why. `tag` names the run's output folders under `workdir`."""
    dirs = {}
    for b in ("cpu", backend):
        dirs[b] = os.path.join(workdir, f"{tag}.{b}")
        os.makedirs(dirs[b], exist_ok=True)
        mode = ["--reference"] if b == "cpu" else []
        r = subprocess.run([a800c_run, plan, f"--backend={b}", "--steps=1"] + mode + inputs +
                           [f"--output-dir={dirs[b]}"], capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0:
            return f"run on {b} (exit {r.returncode}): " + h.first_line(r.stderr, "")
    return _compare(dirs[backend], dirs["cpu"], out_names, backend)
