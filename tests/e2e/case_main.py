"""What the case-based test scripts share (tests/e2e/training.py, checkpoints.py, precision.py,
trace.py and tests/dist/restart.py, dist.py): the command line `SCRIPT CASE --bin DIR --models DIR --data DIR`
that runs the script's function case_CASE(work) in a fresh temporary folder, and mpirun."""
import argparse
import os
import subprocess
import tempfile
import time


def run_case(module_globals, prefix, data=True):
    """Parses the command line, sets the module's ARGS (ARGS.work: the temporary folder) and runs
    the case named on it, printing how long it took. `prefix` starts the folder's name; without
    `data` the script takes no --data."""
    cases = {k[5:]: v for k, v in module_globals.items() if k.startswith("case_")}
    parser = argparse.ArgumentParser(description=module_globals["__doc__"].splitlines()[0])
    parser.add_argument("case", choices=sorted(cases))
    parser.add_argument("--bin", required=True)
    parser.add_argument("--models", required=True)
    if data:
        parser.add_argument("--data", required=True)
    args = parser.parse_args()
    module_globals["ARGS"] = args
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{args.case}_") as work:
        args.work = work
        start = time.time()
        cases[args.case](work)
        print(f"{args.case}: ok in {time.time() - start:.1f} s")


def mpirun(np_, *cmd, timeout=120, env=None):
    """Runs `cmd` on np_ ranks (oversubscribed; as root where the tests run as root)."""
    base = ["mpirun", "--oversubscribe", "-np", str(np_)]
    if os.geteuid() == 0:
        base.append("--allow-run-as-root")
    e = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1", **(env or {}))
    return subprocess.run(base + list(cmd), capture_output=True, text=True, timeout=timeout, env=e)
