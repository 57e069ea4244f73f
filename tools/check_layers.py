#!/usr/bin/env python3
"""Fails on an #include that runs from a lower layer to a higher one (ctest `layers`).

The layer table below is the one docs/ARCHITECTURE.md section 1 describes. Every quoted include
`#include "a/b/..."` of a tracked source under base/, compiler/, driver/, kernels/, passes/ and
runtime/ is an edge from the including file's layer to the included file's layer. An edge is
wrong when

  - it runs upward (the target's rank is higher than the source's), or
  - it is one of the FORBIDDEN edges (allowed by rank, but the design keeps them apart),

unless it is listed in KNOWN_DEBTS (a debt of docs/ARCHITECTURE.md "Known debts", with the
reason). A listed debt that no longer occurs is also an error, so the list shrinks as debts are
paid instead of hiding new ones. tools/ and tests/ sit above everything and are not checked.

  tools/check_layers.py [--root DIR] [--list]   (--list prints every edge with its verdict)
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

# (path prefix, rank): the longest matching prefix wins. Same rank = sideways.
LAYERS = [
    ("base/", 0),  # Status and the dtype enum (the rest of the base layer is still in compiler/ir)
    ("kernels/common/", 0),  # header-only A8_HD math and FP16/BF16 conversion (the future base/)
    ("compiler/ir/", 1),  # Status, dtypes, the IR, the op table
    ("compiler/support/", 1),  # atomic file writes, hashes
    ("kernels/cpu/", 1),  # CPU kernels (a8cpukernels)
    ("kernels/device/", 1),  # the shared device bodies (A8_HD), host or CUDA launch
    ("kernels/emu/", 1),
    ("kernels/cuda/", 1),
    ("compiler/onnx/", 2),
    ("compiler/pass/", 2),
    ("compiler/plan/", 2),
    ("passes/", 3),
    ("driver/", 4),  # options -> load -> passes -> emit: above the passes it runs (a8driver)
    ("runtime/comm/", 5),
    ("runtime/core/", 5),
    ("runtime/cpu/", 5),  # the kernel ABI (registry.h) and the CPU's own entries
    ("runtime/device/", 6),  # the CUDA backend; its host build is a8devemu, above a8runtime
    ("runtime/cpu/cpu_backend.", 7),  # runs runtime/device's entries on the host (a8cpubackend)
    ("runtime/inspect/", 8),  # a800c-inspect's views; --cost times kernels on the CPU backend
]

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

# (source prefix, target prefix): why it is still there. Keep in step with ARCHITECTURE.md.
KNOWN_DEBTS = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+/[^"]+)"', re.M)


def rank_of(path):
    best = None
    for prefix, rank in LAYERS:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, rank)
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
         "base", "compiler", "driver", "kernels", "passes", "runtime"],
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
            forbidden = bool(matching(FORBIDDEN, f, target))
            debts = matching(KNOWN_DEBTS.keys(), f, target)
            verdict = "ok"
            if upward or forbidden:
                if debts:
                    used_debts.update(debts)
                    verdict = "known debt"
                else:
                    verdict = "UPWARD" if upward else "FORBIDDEN"
                    errors.append(f"{f}:{line_no}: includes {target}: {verdict.lower()} "
                                  f"(layer {src[0]} rank {src[1]} -> {dst[0]} rank {dst[1]})")
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
