#!/usr/bin/env bash
# Configures the builds that tools/test.sh, tools/demo.sh and tools/fuzz.sh share, sized for a
# 2-core machine from a cold start (CI clones afresh: no ccache hits). Extra arguments go to cmake.
#
#   tools/configure_build.sh [CMAKE_ARG...]
#       build/, the main build (test.sh and demo.sh: one configuration, so running one after the
#       other rebuilds nothing): unity batches (A800C_UNITY), -O2 without debug info (the same
#       code and warnings as RelWithDebInfo's -O2 -g at about half the compile time), and the
#       device code compiled once, to PTX for compute_80 (A800C_CUDA_ARCHITECTURES=80-virtual;
#       the default build makes sm_80 and sm_90 code).
#
#   tools/configure_build.sh --sanitizers [CMAKE_ARG...]
#       the sanitizer tree (address + undefined, CUDA off, unity, -O0 with line tables), and
#       prints its folder. With clang-14 that is build-fuzz/, which also builds the libFuzzer
#       targets (A800C_FUZZ): one tree serves test.sh's sanitizer tests and fuzz.sh's runs, where
#       two trees compiled every library twice. At -O0 clang-14 compiles the largest kernel batch
#       in 31 s against GCC's 70 s (the fuzz tree's -O1/-O3 took 309 s). Without clang it is
#       build-asan/ (GCC, no fuzzers).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != --sanitizers ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
    -DA800C_UNITY=ON -DA800C_CUDA_ARCHITECTURES=80-virtual "$@" >/dev/null
  exit
fi
shift
common=(-G Ninja -DCMAKE_BUILD_TYPE=Debug -DA800C_SANITIZE=ON -DA800C_CUDA=OFF -DA800C_UNITY=ON
  -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DCMAKE_C_FLAGS_DEBUG="-O0 -g1")
if command -v clang++-14 >/dev/null; then
  # Warnings are the main (GCC) build's to enforce; clang-14 warns where GCC does not
  # (-Wtarget-clones-mixed-specifiers on the kernels' multiversioned functions).
  cmake -S . -B build-fuzz "${common[@]}" -DA800C_FUZZ=ON -DA800C_WERROR=OFF \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 "$@" >/dev/null
  echo build-fuzz
else
  cmake -S . -B build-asan "${common[@]}" "$@" >/dev/null
  echo build-asan
fi
