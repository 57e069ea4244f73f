#!/usr/bin/env python3
"""Fails on a source file longer than the limit (ctest `file_sizes`, label lint).

docs/ARCHITECTURE.md's rule: no source file over 600 lines. A file that grows past it is split
where its parts have names of their own (a family of tests, a helper header), not cut at the
line. Every tracked or untracked, not ignored, file with a source ending counts: C++ and CUDA
(.h .cc .cu .cuh), Python, shell, CMake.

  tools/check_file_sizes.py [--root DIR] [--max-lines N]
"""
import argparse
import subprocess
import sys
from pathlib import Path

SOURCE_ENDINGS = (".h", ".cc", ".cu", ".cuh", ".py", ".sh", ".cmake", "CMakeLists.txt")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--max-lines", type=int, default=600)
    args = ap.parse_args()
    root = Path(args.root)
    files = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard"],
        check=True, capture_output=True, text=True).stdout.split("\n")
    sizes = []
    for f in files:
        path = root / f
        if not f.endswith(SOURCE_ENDINGS) or not path.is_file():
            continue
        with open(path, "rb") as fh:
            sizes.append((sum(1 for _ in fh), f))
    if not sizes:
        print("check_file_sizes: error: no source files found under " + str(root), file=sys.stderr)
        return 1
    over = sorted((s for s in sizes if s[0] > args.max_lines), reverse=True)
    for lines, f in over:
        print(f"check_file_sizes: error: {f}: {lines} lines, over {args.max_lines}: split it",
              file=sys.stderr)
    if over:
        return 1
    lines, f = max(sizes)
    print(f"check_file_sizes: {len(sizes)} source files, none over {args.max_lines} lines "
          f"(the longest: {f}, {lines})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
