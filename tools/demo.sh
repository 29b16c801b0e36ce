#!/usr/bin/env bash
# The main job on the embedded default: build Plumb, write a tiny checkpoint and describe it.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
build=${PLUMB_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLUMB_TESTS=OFF ${PLUMB_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)" --target plumb
plumb="$build/src/cli/plumb"
model="$build/demo/tiny-gemma4"
"$plumb" make-tiny gemma4 "$model"
"$plumb" info "$model"
