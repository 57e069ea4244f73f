#!/usr/bin/env bash
# Configures build/, the main build that tools/test.sh and tools/demo.sh share (one configuration,
# so running one after the other rebuilds nothing). Sized for a 2-core machine from a cold start
# (CI clones afresh: no ccache hits): unity batches (A800C_UNITY), -O2 without debug info (the
# same code and warnings as RelWithDebInfo's -O2 -g at about half the compile time), and the
# device code compiled once, to PTX for compute_80 (A800C_CUDA_ARCHITECTURES=80-virtual; the
# default build makes sm_80 and sm_90 code). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
  -DA800C_UNITY=ON -DA800C_CUDA_ARCHITECTURES=80-virtual "$@" >/dev/null
