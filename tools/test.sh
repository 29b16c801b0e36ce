#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: dependencies, build (CPU backend; CUDA compiled when nvcc
# exists), lint, and every ctest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
build=${PLUMB_BUILD_DIR:-build}
jobs=${PLUMB_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLUMB_TESTS=ON ${PLUMB_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
tools/lint.sh
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 1800
