#!/usr/bin/env bash
# On the GPU machine: where one decode step's device time goes, and why chosen kernels stall. Builds plumb (or
# uses PLUMB), writes the 12B-geometry checkpoint (BITS=4 for 4-bit g64, else bf16), then
#   timeline: every launch's gpu__time_duration, eager (PLUMB_CUDA_GRAPHS=0), summed per forward by
#             tools/bench/nsight_step.py into OUT/step_-N.txt (-1 and -2: the 16-token prompt's forwards; -3
#             and -4: the last decode steps at STREAMS streams);
#   stalls:   for each "NAME:REGEX:SKIP:COUNT:STREAMS" in KERNELS, the stall reasons (cycles per issued
#             instruction) and the speed-of-light, scheduler and source sections of COUNT launches whose mangled
#             name matches REGEX, after SKIP of them, in a bench at STREAMS streams.
# Mangled names, because the demangled ones print template arguments as (int)32. A 12B step has 4 matmul
# launches a layer and the head, so SKIP 195 of the decode kernel lands on the second step's first gate and up
# at 32 streams; at 1 stream 195 landed on the sliding o projection, the launch before it, so take 196 there.
# (NCU=path when ncu is not on PATH; PLUMB=path uses a plumb built elsewhere; MODEL=dir reuses a checkpoint.)
#   OUT=dir BITS=4 KERNELS="gateup32:lanes_kernelILi2ELi1E:195:2:32" tools/device/profile-step.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-$PWD/out/profile}
streams=${STREAMS:-32}
mkdir -p "$out"
# shellcheck source=tools/device/step.sh
source tools/device/step.sh
if [ -z "${PLUMB:-}" ]; then
  prefix=$(tools/device/unpack-debs.sh "$PWD/.prefix" | tail -1)
  step configure 120 cmake -S . -B build-profile -G Ninja -DPLUMB_CUDA=ON -DPLUMB_TESTS=OFF "$prefix" || exit 1
  step build 300 ninja -C build-profile plumb || exit 1
fi
plumb=${PLUMB:-$PWD/build-profile/src/cli/plumb}
model=${MODEL:-/tmp/plumb-profile-model}
bits=()
[ "${BITS:-16}" = 4 ] && bits=(--bits 4 --group 64)
[ -d "$model" ] || step make-model 240 "$plumb" make-tiny gemma4 "$model" --geometry 12b "${bits[@]}" || exit 1
ncu=${NCU:-ncu}
# bench_at STREAMS: the bench command in `run`.
bench_at() { run=("$plumb" bench "$model" --backend cuda --streams "$1" --decode-steps 2 --repeats 1 --prompts 16); }

# The checkpoint's load (the decode layout's kernels), a solo 1-stream run and the streams' run all launch:
# the count covers them with room.
bench_at "$streams"
PLUMB_CUDA_GRAPHS=0 step timeline 300 "$ncu" --metrics gpu__time_duration.sum --csv --cache-control none \
  --clock-control none --launch-count "${LAUNCHES:-7500}" "${run[@]}"
if grep -q '^"' "$out/timeline.log"; then  # ncu's CSV rows are quoted
  for s in -1 -2 -3 -4; do
    python3 tools/bench/nsight_step.py "$out/timeline.log" --step=$s --top 25 >"$out/step_$s.txt" 2>&1
  done
fi
gzip -f "$out/timeline.log"

stalls=(--metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' --section SpeedOfLight
  --section WarpStateStats --section SchedulerStats --section SourceCounters --section LaunchStats)
for entry in ${KERNELS:-}; do
  IFS=: read -r name regex skip count kernel_streams <<<"$entry"
  bench_at "$kernel_streams"
  PLUMB_CUDA_GRAPHS=0 step "stalls-$name" 200 "$ncu" --kernel-name-base mangled -k "regex:$regex" \
    --launch-skip "$skip" --launch-count "$count" "${stalls[@]}" "${run[@]}"
done
exit 0
