#!/usr/bin/env python3
"""Fails on an #include that runs from a lower layer to a higher one (ctest `layers`).

The layer table below is the one docs/ARCHITECTURE.md section 1 describes. Every quoted include
`#include "a/b/..."` of a tracked source under base/, compiler/, driver/, kernels/, passes/ and
runtime/, and of the runtime's programs (CHECKED_TOOLS), is an edge from the including file's
layer to the included file's layer. An edge is wrong when

  - it runs upward (the target's rank is higher than the source's), or
  - it is one of the FORBIDDEN edges (allowed by rank, but the design keeps them apart), or
  - it runs from the runtime to a compiler layer above the plan library and the op registry
    (FORBIDDEN_LAYERS: the runtime sits beside the compiler, not above it),

unless it is listed in KNOWN_DEBTS (a debt of docs/ARCHITECTURE.md "Known debts", with the
reason). A listed debt that no longer occurs is also an error, so the list shrinks as debts are
paid instead of hiding new ones. The rest of tools/, and tests/, sit above everything and are not
checked. The same layers as link dependencies: a8_forbid_links in the top-level CMakeLists.txt.

  tools/check_layers.py [--root DIR] [--list]   (--list prints every edge with its verdict)
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

# (path prefix, rank, layer): the longest matching prefix wins. Same rank = sideways.
LAYERS = [
    ("base/", 0, "base"),  # Status, the dtype enum, enum names, the version line
    ("kernels/common/", 0, "base"),  # header-only A8_HD math and FP16/BF16 conversion
    # The op registry (a8ops): the op table, shape rules, types, attributes and OpNode, the view
    # of a node they work on. No IR graph: the plan library validates with it.
    ("compiler/ir/status.h", 1, "registry"),  # forwarding headers to base/
    ("compiler/ir/dtype_enum.h", 1, "registry"),
    ("compiler/ir/types.", 1, "registry"),
    ("compiler/ir/attribute.", 1, "registry"),
    ("compiler/ir/tensor_bytes.h", 1, "registry"),  # TensorData::bytes (owned or a view)
    ("compiler/ir/op_node.", 1, "registry"),
    ("compiler/ir/op_table", 1, "registry"),  # op_table.h, op_table*.cc, op_table_builder.h
    ("compiler/ir/onnx_versions.inc", 1, "registry"),
    ("compiler/ir/shape_rules", 1, "registry"),
    ("compiler/support/", 1, "support"),  # atomic file writes, hashes (a8support)
    ("kernels/cpu/", 1, "kernels"),  # CPU kernels (a8cpukernels)
    ("kernels/device/", 1, "kernels"),  # the shared device bodies (A8_HD), host or CUDA launch
    ("kernels/emu/", 1, "kernels"),
    ("kernels/cuda/", 1, "kernels"),
    ("compiler/plan/", 2, "plan"),  # schema, reader/writer, validation (a8plan): registry + support
    ("compiler/ir/", 3, "ir"),  # the IR graph, text, verifier, configs (a8compiler)
    ("compiler/onnx/", 4, "compiler"),
    ("compiler/pass/", 4, "compiler"),
    ("passes/", 5, "passes"),
    ("driver/", 6, "driver"),  # options -> load -> passes -> emit: above the passes it runs
    ("runtime/comm/", 7, "runtime"),
    ("runtime/core/", 7, "runtime"),
    ("runtime/cpu/", 7, "runtime"),  # the CPU's own entries
    ("runtime/device/", 8, "runtime"),  # the CUDA backend; its host build is a8devemu
    ("runtime/cpu/cpu_backend.", 9, "runtime"),  # runs runtime/device's entries on the host
    ("runtime/inspect/", 10, "runtime"),  # a800c-inspect's views; --cost times the CPU backend
    # `a800c debug-precision` (a8precisiondebug): compiles through the driver, trains on the CPU
    # backend, so above both.
    ("runtime/core/precision_", 11, "debug-precision"),
    # The runtime's programs (a800c-run, a800c-inspect) and the flag helpers they include.
    ("tools/a800c_run.", 12, "runtime-program"),
    ("tools/a800c_inspect.", 12, "runtime-program"),
    ("tools/run_backends.", 12, "runtime-program"),
    ("tools/cli_common.h", 12, "runtime-program"),
]
# The tools/ files above that are checked (the rest of tools/ sits above everything).
CHECKED_TOOLS = ["tools/a800c_run.cc", "tools/a800c_inspect.cc", "tools/run_backends.cc",
                 "tools/run_backends.h", "tools/cli_common.h"]

# Edges the design forbids whatever the ranks say: (source prefix, target prefix).
FORBIDDEN = [
    ("base/", "kernels/"),  # the base layer is below everything
    ("kernels/", "compiler/"),  # kernels get Status and dtypes from a base layer, not the compiler
    ("compiler/", "kernels/cpu/"),
    ("compiler/", "kernels/device/"),
    ("runtime/device/", "kernels/cpu/"),  # the CUDA backend never needs the CPU's kernels
    ("runtime/device/", "runtime/cpu/"),  # ... nor the CPU backend (the ABI belongs in core)
    # ... nor through the kernel ABI it includes (its vocabulary is kernels/common/kernel_types.h)
    ("runtime/core/kernel_args.h", "kernels/cpu/"),
]

# Layers the runtime and its programs never include, whatever the ranks say: the runtime sits
# beside the compiler on the plan library and the registry, not above the compiler
# (a800c-run links no compiler library: the CMake check a8_forbid_links says the same).
RUNTIME_NEVER = ["ir", "compiler", "passes", "driver", "debug-precision"]
FORBIDDEN_LAYERS = [(src, dst) for src in ("runtime", "runtime-program") for dst in RUNTIME_NEVER]

# (source prefix, target prefix): why it is still there. Keep in step with ARCHITECTURE.md.
KNOWN_DEBTS = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+/[^"]+)"', re.M)


def rank_of(path):
    """(prefix, rank, layer) of the longest LAYERS prefix of `path`, or None."""
    best = None
    for entry in LAYERS:
        if path.startswith(entry[0]) and (best is None or len(entry[0]) > len(best[0])):
            best = entry
    return best


def matching(pairs, src, dst):
    return [p for p in pairs if src.startswith(p[0]) and dst.startswith(p[1])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    root = Path(args.root)
    files = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard",
         "base", "compiler", "driver", "kernels", "passes", "runtime", *CHECKED_TOOLS],
        check=True, capture_output=True, text=True).stdout.split()
    errors, used_debts = [], set()
    for f in sorted(files):
        if not f.endswith((".h", ".cc", ".cu")) or not (root / f).exists():
            continue
        src = rank_of(f)
        if src is None:
            errors.append(f"{f}: no layer in the table (add its folder to LAYERS)")
            continue
        text = (root / f).read_text(errors="replace")
        for line_no, target in ((text[: m.start()].count("\n") + 1, m.group(1))
                                for m in INCLUDE.finditer(text)):
            dst = rank_of(target)
            if dst is None:
                if not target.startswith(("tools/", "tests/")):
                    continue  # generated or third-party headers (build/..., onnx/...)
                errors.append(f"{f}:{line_no}: includes {target} from tools/ or tests/")
                continue
            upward = dst[1] > src[1]
            forbidden = bool(matching(FORBIDDEN, f, target)) or (src[2], dst[2]) in FORBIDDEN_LAYERS
            debts = matching(KNOWN_DEBTS.keys(), f, target)
            verdict = "ok"
            if upward or forbidden:
                if debts:
                    used_debts.update(debts)
                    verdict = "known debt"
                else:
                    verdict = "UPWARD" if upward else "FORBIDDEN"
                    errors.append(f"{f}:{line_no}: includes {target}: {verdict.lower()} "
                                  f"(layer {src[2]} {src[0]} rank {src[1]} -> {dst[2]} {dst[0]} "
                                  f"rank {dst[1]})")
            if args.list:
                print(f"{verdict:18} {f} -> {target}")
    for debt in sorted(set(KNOWN_DEBTS) - used_debts):
        errors.append(f"known debt {debt[0]} -> {debt[1]} no longer occurs: remove it from "
                      "KNOWN_DEBTS and from docs/ARCHITECTURE.md Known debts")
    for e in errors:
        print(f"check_layers: error: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"check_layers: {len(files)} files, no include runs from a lower layer to a higher one "
          f"({len(used_debts)} known debts remain)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
