"""a800c-run --trace (issue 16): the Chrome/Perfetto trace of a run, checked end to end.

Cases (one ctest each):
  cpu        the amp MLP on the CPU backend, steps 1:3 of 4: one "step N" slice per traced step,
             one slice per plan kernel in each (named by its ONNX nodes, with op, types and bytes),
             inside its step, on the thread; the loss scale, skipped-update and arena counters;
             a8.AllReduce* as "collective" slices. Then the same file through the perfetto
             package's TraceProcessor (slice count and names), which needs its
             trace_processor_shell binary: where that cannot be had (it downloads it on first use,
             and this machine reaches no download site) that part is skipped with the reason.
  emu        the CUDA backend's host emulation: the kernels on the "CUDA stream" track, timed by
             its events; an inference plan: kernels and arena, no scaler counters.
  dist       mpirun -np 2: one merged file, pid = rank, both ranks' kernels and collectives.
"""
import json
import os
import shutil
import subprocess
import sys

from case_main import run_case

ARGS = None


def run(*cmd, check=True, env=None):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                       timeout=240)
    if check and p.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))}: exit {p.returncode}\n{p.stdout[-3000:]}\n"
                 f"{p.stderr[-3000:]}")
    return p


def compile_mlp(work, *flags):
    plan = os.path.join(work, "mlp.plan")
    run(os.path.join(ARGS.bin, "a800c"), os.path.join(ARGS.models, "mlp.onnx"), "-o", plan,
        "--batch=8", *flags)
    return plan


def plan_kernels(plan):
    p = run(os.path.join(ARGS.bin, "a800c-inspect"), plan, "--format=json")
    return json.loads(p.stdout)["kernels"]


def slice_name(k):
    return " + ".join(k["onnx_nodes"]) if k["onnx_nodes"] else k["node"] or k["kernel"]


def check_steps(events, kernels, steps, pid=0, track_kind="thread"):
    """Per traced step: its slice, and one slice per kernel inside it, in plan order."""
    mine = [e for e in events if e.get("pid") == pid]
    step_slices = [e for e in mine if e.get("cat") == "step"]
    assert [e["name"] for e in step_slices] == [f"step {s}" for s in steps], step_slices
    runs = [e for e in mine if e.get("cat") in ("kernel", "collective")]
    assert len(runs) == len(kernels) * len(steps), (len(runs), len(kernels), steps)
    tracks = {e["tid"]: e["args"]["name"] for e in mine if e.get("name") == "thread_name"}
    for i, s in enumerate(steps):
        step = step_slices[i]
        chunk = runs[i * len(kernels):(i + 1) * len(kernels)]
        for k, e in zip(kernels, chunk):
            assert e["ph"] == "X" and e["name"] == slice_name(k), (e, k)
            a = e["args"]
            assert a["step"] == s and a["index"] == k["index"] and a["op"] == k["op"], e
            assert a["kernel"] == k["kernel"] and a["onnx_nodes"] == k["onnx_nodes"], e
            assert len(a["inputs"]) == len(k["inputs"]) and a["bytes"] > 0, e
            want = "collective" if k["op"].startswith("a8.AllReduce") else "kernel"
            assert e["cat"] == want, e
            assert e["dur"] >= 0 and e["ts"] >= step["ts"] - 1, (e, step)
            assert e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 1, (e, step)
            assert tracks[e["tid"]].startswith(track_kind), (tracks, e)
    return runs


def counters(events, name, pid=0):
    return [e for e in events if e["ph"] == "C" and e["name"] == name and e["pid"] == pid]


def perfetto_check(path, want_slices, want_names):
    """The same trace through Perfetto's trace processor, where its binary can be had."""
    try:
        from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    except ImportError as e:
        print(f"perfetto part skipped: the perfetto package is not installed ({e})")
        return
    try:
        config = TraceProcessorConfig(bin_path=os.environ.get("A8_TRACE_PROCESSOR") or None,
                                      load_timeout=30)
        tp = TraceProcessor(trace=path, config=config)
    except Exception as e:  # noqa: BLE001 - any failure to obtain or start the binary
        reason = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        print("perfetto part skipped: TraceProcessor could not start (it downloads "
              f"trace_processor_shell on first use; set A8_TRACE_PROCESSOR to a local copy): "
              f"{reason[:300]}")
        return
    try:
        rows = list(tp.query("select name, category from slice where category in "
                             "('kernel', 'collective') order by ts"))
        assert len(rows) == want_slices, (len(rows), want_slices)
        assert sorted(r.name for r in rows) == sorted(want_names)
        steps = list(tp.query("select count(*) as n from slice where category = 'step'"))
        print(f"perfetto: {len(rows)} kernel slices and {steps[0].n} step slices loaded")
    finally:
        tp.close()


def case_cpu(work):
    plan = compile_mlp(work, "--loss=cross_entropy", "--precision=amp")
    kernels = plan_kernels(plan)
    trace = os.path.join(work, "cpu.json")
    run(os.path.join(ARGS.bin, "a800c-run"), plan, "--backend=cpu", "--synthetic", "--steps=4",
        f"--trace={trace}", "--trace-steps=1:3")
    events = json.load(open(trace))["traceEvents"]
    runs = check_steps(events, kernels, [1, 2])
    assert any(e["cat"] == "collective" for e in runs), "no a8.AllReduce slice"
    scale = counters(events, "loss scale")
    assert len(scale) == 2 and all(e["args"]["value"] > 0 for e in scale), scale
    skipped = counters(events, "skipped updates")
    assert len(skipped) == 2 and skipped[0]["args"]["value"] <= skipped[1]["args"]["value"]
    arena = counters(events, "arena bytes")
    info = json.loads(run(os.path.join(ARGS.bin, "a800c-inspect"), plan,
                          "--format=json").stdout)["memory"]
    assert arena and max(e["args"]["bytes"] for e in arena) <= info["arena_bytes"], (arena, info)
    print(f"cpu: {len(runs)} kernel slices over 2 steps, {len(scale)} scale counters, "
          f"arena peak {max(e['args']['bytes'] for e in arena)} of {info['arena_bytes']} bytes")
    perfetto_check(trace, len(runs), [slice_name(k) for k in kernels] * 2)


def case_emu(work):
    plan = compile_mlp(work, "--loss=cross_entropy", "--precision=amp")
    kernels = plan_kernels(plan)
    trace = os.path.join(work, "emu.json")
    run(os.path.join(ARGS.bin, "a800c-run"), plan, "--backend=cuda-emu", "--synthetic",
        "--steps=2", f"--trace={trace}")
    events = json.load(open(trace))["traceEvents"]
    check_steps(events, kernels, [0, 1], track_kind="CUDA stream")
    infer = os.path.join(work, "infer.plan")
    run(os.path.join(ARGS.bin, "a800c"), os.path.join(ARGS.models, "mlp.onnx"), "-o", infer,
        "--batch=8")
    trace = os.path.join(work, "infer.json")
    run(os.path.join(ARGS.bin, "a800c-run"), infer, "--backend=cpu", "--synthetic", "--steps=3",
        f"--trace={trace}", "--trace-steps=2:")
    events = json.load(open(trace))["traceEvents"]
    check_steps(events, plan_kernels(infer), [2])
    assert not counters(events, "loss scale") and counters(events, "arena bytes")
    print("emu: kernels on the CUDA stream track; inference: one traced step, no scaler counters")


def case_dist(work):
    if shutil.which("mpirun") is None:
        sys.exit("mpirun not found (tools/setup.sh installs Open MPI)")
    plan = compile_mlp(work, "--loss=cross_entropy", "--precision=amp")
    kernels = plan_kernels(plan)
    trace = os.path.join(work, "dist.json")
    cmd = ["mpirun", "--oversubscribe", "-np", "2"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    run(*cmd, os.path.join(ARGS.bin, "a800c-run"), plan, "--backend=cpu", "--synthetic",
        "--steps=3", f"--trace={trace}", "--trace-steps=1:3", env=env)
    assert not os.path.exists(os.path.join(work, "dist.rank1.json"))
    events = json.load(open(trace))["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {0: "rank 0", 1: "rank 1"}, names
    for rank in (0, 1):
        runs = check_steps(events, kernels, [1, 2], pid=rank)
        assert sum(e["cat"] == "collective" for e in runs) > 0
    print(f"dist: one file, ranks 0 and 1 as processes, {len(kernels)} kernels a step each")
    perfetto_check(trace, 2 * 2 * len(kernels), [slice_name(k) for k in kernels] * 4)


if __name__ == "__main__":
    run_case(globals(), "a8_trace_", data=False)
