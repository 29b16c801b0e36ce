#!/usr/bin/env bash
# Fails on a source file over 600 lines, on clang-format drift, and on a CUDA kernel that does not wait for
# the kernel ahead of it.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
mapfile -t sources < <(git ls-files --cached --others --exclude-standard -- \
  'src/*.cpp' 'src/*.hpp' 'src/*.cu' 'src/*.cuh' 'tests/*.cpp' 'tests/*.hpp' 'bench/*.cpp' 'bench/*.hpp' \
  'tools/*.py' 'tests/*.mjs' 'tests/*.js' 'src/*.in')
for file in "${sources[@]}"; do
  [ -f "$file" ] || continue
  lines=$(wc -l <"$file")
  if [ "$lines" -gt 600 ]; then
    echo "lint: file '$file' is too long; expected at most 600 lines, got $lines"
    status=1
  fi
done
# CUDA kernels may start before the kernel ahead of them ends (src/cuda/dependent_launch.cuh): each kernel
# must wait for it, and launches go through launch_dependent (the cluster-launched draw kernels excepted).
# A header the file includes whose kernel body waits (a body shared by two files) counts as one wait.
for file in src/cuda/*.cu; do
  kernels=$(grep -c '__global__' "$file" || true)
  [ "$(basename "$file")" = k_embed.cu ] && kernels=$((kernels - 1))  # probe_kernel is never launched
  waits=$(grep -c 'wait_for_previous_kernel();' "$file" || true)
  for header in $(sed -n 's|^#include "\(cuda/[a-z_0-9]*\.cuh\)"$|src/\1|p' "$file"); do
    grep -q 'wait_for_previous_kernel();' "$header" && waits=$((waits + 1))
  done
  if [ "$waits" -lt "$kernels" ]; then
    echo "lint: file '$file' has kernels that do not wait for the kernel ahead; expected $kernels waits, got $waits"
    status=1
  fi
  if [ "$(basename "$file")" != k_sample.cu ] && grep -q '<<<' "$file"; then
    echo "lint: file '$file' launches with <<< >>>; expected launch_dependent (src/cuda/dependent_launch.cuh)"
    status=1
  fi
done
formatted=()
for file in "${sources[@]}"; do
  case "$file" in *.cpp|*.hpp|*.cu|*.cuh) [ -f "$file" ] && formatted+=("$file") ;; esac
done
if ((${#formatted[@]})); then
  if ! clang-format --dry-run -Werror "${formatted[@]}" 2>/tmp/plumb-lint.$$; then
    grep -E '^[^ ].*(warning|error):' /tmp/plumb-lint.$$ | sed 's/^/lint: clang-format drift: /' | head -40
    echo "lint: run 'clang-format -i' on the files above"
    status=1
  fi
  rm -f /tmp/plumb-lint.$$
fi
[ "$status" -eq 0 ] && echo "lint: ${#sources[@]} files ok"
exit "$status"
