#!/usr/bin/env python3
"""expect_exit.py CODE CMD [ARGS...]: runs CMD, passes its stdout and stderr through, and exits 0
when CMD exited with status CODE, else 1 (with a note on stderr). lit's `not` accepts any
non-zero status; the error tests use this to tell bad input (2) from a failed run (1)."""
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: expect_exit.py CODE CMD [ARGS...]\n")
        return 1
    expected = int(sys.argv[1])
    proc = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sys.stdout.buffer.write(proc.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(proc.stderr)
    if proc.returncode != expected:
        sys.stderr.write(f"expect_exit.py: expected exit status {expected}, got {proc.returncode}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
