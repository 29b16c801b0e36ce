#!/usr/bin/env bash
# On the GPU machine: builds every target of the tree it runs in with the CUDA backend, then runs, each step
# under its own time limit so that the logs of the steps that ran always come back: the whole ctest suite (CUDA
# tests included), the kernel contract on CUDA, the exactness suite on CUDA, the CUDA tests, exactness suite and
# contract matmul forms again with the tiled matmul alone, the exactness suite with grouped matmuls off, the
# exactness suite and matmul forms with 4-bit weights read from their packed rows (no decode layout), the
# kernel benchmarks, plumb bench at Gemma 4 12B geometry (4-bit g64 with the lane engine section, and bf16; each
# also with the tiled matmul alone and with CUDA graphs off), the server under 32 streaming clients
# (tools/bench/serve_load.py) and transformers on the same bf16 weights. STEPS picks steps:
# OUT=dir STEPS="build ctest contract exactness tiled ungrouped ring opsbench bench4 bench4t bench4e serve bench16
#   bench16t bench16e hf ab4 ab16 profile4 profile16 trees opsab opsncu" this-script
# (cudatests: test_cuda alone, for a call that runs no ctest; not in the default steps, whose ctest runs it)
# (profile4 and profile16: plumb bench --profile, each op's device time a forward at 1 and 32 streams, eager,
# on the 4-bit or bf16 checkpoint; not in the default steps)
# (ab4 and ab16: tools/bench/ab_bench.py on the 4-bit or bf16 checkpoint, AB_VARIANTS="name:SWITCH=V,... name2"
# alternated over AB_ROUNDS rounds, default 3, with BENCH_ARGS; not in the default steps; a variant's switch
# plumb=PATH runs another build, such as a tree of tools/device/build-trees.sh)
# (trees: tools/device/build-trees.sh with TREES, into TREES_DIR, default /tmp/plumb-trees; opsab: plumb_cuda_bench
# OPS_SECTION, default attention-prompt, alternated over this build and each tree of TREES for OPS_ROUNDS
# rounds, default 3, one log a run; neither is in the default steps)
# (opsncu: Nsight Compute on this build's plumb_cuda_bench OPS_SECTION, NCU_COUNT launches, default 1, whose
# mangled name matches the regex NCU_KERNEL after NCU_SKIP of them: stall reasons and sections in
# opsncu-details.log and the source page, CUDA lines beside SASS with their samples, as CSV in
# opsncu-source.log; CMAKE_EXTRA=-DCMAKE_CUDA_FLAGS=-lineinfo gives the CUDA lines; not in the default steps)
# (BUILD_TARGETS limits the build to those targets, such as "plumb test_cuda test_exactness" for a call
# that runs no ctest; PLUMB=path/to/plumb uses a plumb built elsewhere; BENCH_ARGS and HF_ARGS pass options
# to the benches; PACK=file.tgz packs the logs into one file after every step, for a machine that returns few
# files.)
# Needs .debs/ from tools/device/fetch-debs.sh (run where apt works). Writes OUT/steps.txt and one log a step.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-$PWD/out/validate}
steps=${STEPS:-build ctest contract exactness tiled ungrouped ring opsbench bench4 bench4t bench4e serve bench16 bench16t bench16e hf}
models=${MODELS:-/tmp/plumb-models}
mkdir -p "$out" "$models"

# shellcheck source=tools/device/step.sh
source tools/device/step.sh
wanted() { [[ " $steps " == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv >"$out/gpu.txt" 2>&1
if wanted build; then
  prefix=$(tools/device/unpack-debs.sh "$PWD/.prefix" | tail -1)
  # shellcheck disable=SC2086  # CMAKE_EXTRA may be several arguments
  step configure 120 cmake -S . -B build-validate -G Ninja -DPLUMB_CUDA=ON ${CMAKE_EXTRA:-} "$prefix" || exit 1
  # shellcheck disable=SC2086  # BUILD_TARGETS may be several targets
  step build 400 ninja -C build-validate ${BUILD_TARGETS:-} || exit 1
fi
plumb=${PLUMB:-$PWD/build-validate/src/cli/plumb}
if wanted ctest; then
  step ctest 240 ctest --test-dir build-validate -j16 --output-on-failure --timeout 200
  grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest.log" | tail -20 >"$out/ctest-summary.txt"
fi
# The whole contract took longer than 165 s on the H200 at 40592e5 (63 forms, 48 controls).
wanted contract && step contract 360 "$plumb" contract --backend cuda
wanted cudatests && step test-cuda 180 build-validate/tests/cuda/test_cuda
wanted exactness && step exactness 120 build-validate/tests/engine/test_exactness --backend cuda
# The tiled matmul alone (PLUMB_CUDA_DECODE_MATMUL=0, the decode matmul off): the CUDA tests, the exactness
# suite and the contract's matmul forms again.
if wanted tiled; then
  PLUMB_CUDA_DECODE_MATMUL=0 step test-cuda-tiled 180 build-validate/tests/cuda/test_cuda
  PLUMB_CUDA_DECODE_MATMUL=0 step exactness-tiled 120 build-validate/tests/engine/test_exactness --backend cuda
  PLUMB_CUDA_DECODE_MATMUL=0 step contract-tiled 240 "$plumb" contract --backend cuda --only matmul
  PLUMB_CUDA_DECODE_MATMUL=0 step contract-tiled-group 120 "$plumb" contract --backend cuda --only matmul_group
fi
# Grouped matmuls off (PLUMB_CUDA_MATMUL_GROUP=0, each member its own launch): the exactness suite again.
wanted ungrouped &&
  PLUMB_CUDA_MATMUL_GROUP=0 step exactness-ungrouped 120 build-validate/tests/engine/test_exactness --backend cuda
# 4-bit weights without the decode layout (PLUMB_CUDA_DECODE_LAYOUT=0, the decode kernel reads the packed rows):
# the exactness suite and the matmul forms again.
if wanted ring; then
  PLUMB_CUDA_DECODE_LAYOUT=0 step exactness-ring 120 build-validate/tests/engine/test_exactness --backend cuda
  PLUMB_CUDA_DECODE_LAYOUT=0 step contract-ring 240 "$plumb" contract --backend cuda --only matmul
fi
wanted opsbench && step opsbench 120 build-validate/src/cuda/plumb_cuda_bench
trees_dir=${TREES_DIR:-/tmp/plumb-trees}
wanted trees && TREES_DIR=$trees_dir TARGETS=${TARGETS:-plumb plumb_cuda_bench} step trees 900 tools/device/build-trees.sh
if wanted opsab; then
  for round in $(seq "${OPS_ROUNDS:-3}"); do
    # shellcheck disable=SC2086  # the section may be several words
    step "opsab-this-$round" 120 build-validate/src/cuda/plumb_cuda_bench ${OPS_SECTION:-attention-prompt}
    for tree in ${TREES:?opsab needs TREES}; do
      # shellcheck disable=SC2086
      step "opsab-${tree%%:*}-$round" 120 "$trees_dir/${tree%%:*}/build/src/cuda/plumb_cuda_bench" \
        ${OPS_SECTION:-attention-prompt}
    done
  done
fi
if wanted opsncu; then
  ncu=${NCU:-ncu}
  report=$out/opsncu
  # shellcheck disable=SC2086  # the section may be several words
  step opsncu-report 600 "$ncu" --kernel-name-base mangled -k "regex:${NCU_KERNEL:?opsncu needs NCU_KERNEL}" \
    --launch-skip "${NCU_SKIP:-0}" --launch-count "${NCU_COUNT:-1}" --set full --import-source yes \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' -f -o "$report" \
    build-validate/src/cuda/plumb_cuda_bench ${OPS_SECTION:-matmul-prompt}
  step opsncu-details 120 "$ncu" --import "$report.ncu-rep" --page details --csv
  step opsncu-source 120 "$ncu" --import "$report.ncu-rep" --page source --print-source cuda,sass --csv
  gzip -f "$out/opsncu-source.log"
fi
# bench NAME DECODE [GRAPHS]: plumb bench on $model with the decode matmul (1) or the tiled matmul alone (0),
# and CUDA graphs off (0) or on (1, the default).
bench() {
  local name=$1 decode=$2 graphs=${3:-1}
  PLUMB_CUDA_DECODE_MATMUL=$decode PLUMB_CUDA_GRAPHS=$graphs step "$name" 300 "$plumb" bench "$model" \
    --backend cuda ${BENCH_ARGS:-} --json "$out/$name.json"
}
# ab NAME: the A/B of AB_VARIANTS on $model (tools/bench/ab_bench.py), its runs under $out/NAME.
ab() {
  local variants=()
  for v in ${AB_VARIANTS:?ab4 and ab16 need AB_VARIANTS}; do variants+=(--variant "$v"); done
  step "$1" 590 python3 tools/bench/ab_bench.py --plumb "$plumb" --model "$model" --out "$out/$1" \
    --rounds "${AB_ROUNDS:-3}" --json "$out/$1.json" "${variants[@]}" -- ${BENCH_ARGS:-}
}
# profile NAME: each op's device time per forward at 1 and 32 streams (events around every launch, so eager).
profile() {
  step "$1" 200 "$plumb" bench "$model" --backend cuda --profile --streams 1,32 --prompts 2048 --repeats 1 \
    --json "$out/$1.json"
}
if wanted bench4 || wanted bench4t || wanted bench4e || wanted serve || wanted ab4 || wanted profile4; then
  model=$models/12b-4bit
  step make-4bit 120 "$plumb" make-tiny gemma4 "$model" --geometry 12b --bits 4 --group 64 && {
    wanted bench4 && BENCH_ARGS="${BENCH_ARGS:-} --engine-streams 1,8,32" bench bench-4bit 1
    wanted bench4t && bench bench-4bit-tiled 0
    wanted bench4e && BENCH_ARGS="${BENCH_ARGS:-} --engine-streams 1,8,32" bench bench-4bit-eager 1 0
    wanted serve && step serve 200 python3 tools/bench/serve_load.py --plumb "$plumb" --model "$model" \
      --backend cuda --cover-vocab --context 4096 --clients 32 --requests 2 --max-tokens 128 --warmup 32 \
      --check-solo --solo-sample 4 --json "$out/serve-load.json"
    wanted ab4 && ab ab-4bit
    wanted profile4 && profile profile-4bit
  }
  rm -rf "$model"
fi
if wanted bench16 || wanted bench16t || wanted bench16e || wanted hf || wanted ab16 || wanted profile16; then
  model=$models/12b-bf16
  step make-bf16 180 "$plumb" make-tiny gemma4 "$model" --geometry 12b && {
    wanted bench16 && bench bench-bf16 1
    wanted bench16t && bench bench-bf16-tiled 0
    wanted bench16e && bench bench-bf16-eager 1 0
    wanted hf && step hf 300 python3 tools/reference/hf_bench.py "$model" ${HF_ARGS:-} --json "$out/hf.json"
    wanted ab16 && ab ab-bf16
    wanted profile16 && profile profile-bf16
  }
  rm -rf "$model"
fi
exit 0
