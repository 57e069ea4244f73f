#!/usr/bin/env bash
# ctest entry: generate the ONNX node tests (once per build tree) and run the supported ones.
# Arguments after the first two go to run_node_tests.py (ctest: --compare-backend cuda-emu).
set -euo pipefail
a800c=$1 data=$2
here=$(cd "$(dirname "$0")" && pwd)
# The stamp names the onnx version and the generator's own version (bump it when the generator
# changes what it writes).
stamp="$data/.onnx-$(python3 -c 'import onnx; print(onnx.__version__)')-gen2"
if [ ! -f "$stamp" ]; then
  python3 "$here/gen_node_tests.py" "$data"
  touch "$stamp"
fi
# The CPU backend run (--run-cpu) needs a800c-run beside a800c.
run=$(dirname "$a800c")/a800c-run
cpu=()
if [ -x "$run" ]; then cpu=(--run-cpu "$run"); else echo "no $run: the CPU backend run is skipped"; fi
exec python3 "$here/run_node_tests.py" --a800c "$a800c" --data "$data" -j 2 "${cpu[@]}" "${@:3}"
