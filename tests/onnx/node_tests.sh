#!/usr/bin/env bash
# ctest entry: generate the ONNX node tests (once per build tree) and run the supported ones.
set -euo pipefail
a800c=$1 data=$2
here=$(cd "$(dirname "$0")" && pwd)
stamp="$data/.onnx-$(python3 -c 'import onnx; print(onnx.__version__)')"
if [ ! -f "$stamp" ]; then
  python3 "$here/gen_node_tests.py" "$data"
  touch "$stamp"
fi
exec python3 "$here/run_node_tests.py" --a800c "$a800c" --data "$data" -j 2
