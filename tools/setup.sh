#!/usr/bin/env bash
# Installs every system and Python package the build, the tests and the demo need.
# Idempotent and non-interactive: packages already present are not fetched again.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config python3 python3-pip
  libonnx-dev libprotobuf-dev protobuf-compiler       # ONNX protobuf classes + text parser
  libgtest-dev libgmock-dev                           # unit tests
  llvm-14-tools                                       # FileCheck, not
  clang-14 libclang-rt-14-dev                         # the libFuzzer target
  libcli11-dev libfmt-dev nlohmann-json3-dev          # CLI, formatting, JSON
  libopenblas-dev                                     # CPU GEMM (the reference)
  libdnnl-dev ocl-icd-opencl-dev                      # CPU GEMM fast path (oneDNN: AMX, AVX-512;
                                                      # its CMake config asks for OpenCL)
  libxxhash-dev                                       # the model hash (XXH3, header-only use)
  libopenmpi-dev openmpi-bin                          # data parallel on CPUs
)
# The Python packages of the test helpers. onnx is pinned: compiler/ir/onnx_versions.inc and
# tests/onnx/supported_node_tests.txt were generated from this version. scikit-learn ships the
# digits data set (models/make_digits.py); safetensors reads checkpoints in the e2e tests. onnxconverter-common is the peer of tools/bench/precision_vs_converter.py.
# perfetto loads a800c-run --trace files in tests/e2e/trace.py (its trace processor binary is
# downloaded on first use; without network that part of the test is skipped, saying why).
PIP_PACKAGES=(onnx==1.23.2 onnxruntime==1.32.0 "numpy>=1.26,<3" lit==18.1.8 scikit-learn==1.9.1
              safetensors==0.8.0 onnxconverter-common==1.16.0 perfetto==0.59.1)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" - "${PIP_PACKAGES[@]}" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
from packaging.requirements import Requirement
for spec in sys.argv[1:]:
    r = Requirement(spec)
    if not r.specifier.contains(version(r.name), prereleases=True):
        sys.exit(1)
PY
  echo "setup: installing Python packages ${PIP_PACKAGES[*]}"
  "$PYTHON" -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}" \
    || "$PYTHON" -m pip install -q --break-system-packages "${PIP_PACKAGES[@]}"
fi
echo "setup: ok"
