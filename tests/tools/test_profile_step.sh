#!/usr/bin/env bash
# tools/device/profile-step.sh with echo in place of plumb and ncu: the command lines it runs (the timeline's
# launch count and streams, each KERNELS entry's mangled-name filter, skip, count and streams) and its step log.
#   test_profile_step.sh PATH/TO/profile-step.sh
set -uo pipefail
script=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/model"
failures=0
# expect FILE TEXT: FILE holds TEXT.
expect() {
  if ! grep -qF -- "$2" "$1"; then
    echo "test_profile_step: file '$(basename "$1")' lacks the expected text; expected '$2', got:"
    sed 's/^/  /' "$1"
    failures=$((failures + 1))
  fi
}
OUT="$work/out" PLUMB=/bin/echo NCU=echo MODEL="$work/model" STREAMS=8 LAUNCHES=123 \
  KERNELS="gate:lanes_kernelILi2ELi1E:195:2:32 norm:residual_norm_kernelILi8E:7:1:1" "$script" >/dev/null
expect "$work/out/steps.txt" "timeline rc=0"
expect "$work/out/steps.txt" "stalls-gate rc=0"
expect "$work/out/steps.txt" "stalls-norm rc=0"
zcat "$work/out/timeline.log.gz" >"$work/timeline.txt"
expect "$work/timeline.txt" "--metrics gpu__time_duration.sum --csv --cache-control none --clock-control none"
expect "$work/timeline.txt" "--launch-count 123 /bin/echo bench $work/model --backend cuda --streams 8 "
expect "$work/out/stalls-gate.log" "--kernel-name-base mangled -k regex:lanes_kernelILi2ELi1E --launch-skip 195 --launch-count 2"
expect "$work/out/stalls-gate.log" "--streams 32 "
expect "$work/out/stalls-norm.log" "-k regex:residual_norm_kernelILi8E --launch-skip 7 --launch-count 1"
expect "$work/out/stalls-norm.log" "--streams 1 "
# A missing checkpoint is written first (4-bit g64 with BITS=4).
OUT="$work/out4" PLUMB=/bin/echo NCU=echo MODEL="$work/missing" BITS=4 "$script" >/dev/null
expect "$work/out4/make-model.log" "make-tiny gemma4 $work/missing --geometry 12b --bits 4 --group 64"
if ((failures)); then
  echo "test_profile_step: $failures checks failed"
  exit 1
fi
echo "test_profile_step: 10 checks passed"
