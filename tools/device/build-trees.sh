#!/usr/bin/env bash
# On the GPU machine: builds variants of the tree it runs in, so that whole trees can be timed against each
# other in one call with no switch left in the code. A variant is NAME:PATCH[:PATCH...], the tree with its
# patches applied in order: +FILE forward (a branch, `git diff main next/x`), -FILE reversed (commits this
# tree has that the variant should not, `git diff BASE HEAD`). Patches are made where git is: the machine's
# copy of the tree has no history. Each variant is copied to TREES_DIR/NAME (build folders, the prefix, out/
# and node_modules/ left behind), patched, configured with CMAKE_ARGS and the .debs prefix, and TARGETS built
# in TREES_DIR/NAME/build; the variants build one after another. Prints "NAME DIR" a variant built and exits 1
# when any failed (its log is TREES_DIR/NAME.log).
#   TREES="base:-out/src/session.patch next:+out/src/next.patch" TARGETS="plumb plumb_cuda_bench" \
#     tools/device/build-trees.sh
# Then, for plumb bench: tools/bench/ab_bench.py --plumb build/src/cli/plumb --variant new \
#   --variant base:plumb=TREES_DIR/base/build/src/cli/plumb ...
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
trees=${TREES:?build-trees.sh needs TREES="NAME:+PATCH|-PATCH[:...] ..."}
dir=${TREES_DIR:-/tmp/plumb-trees}
targets=${TARGETS:-plumb plumb_cuda_bench}
cmake_args=${CMAKE_ARGS:--DCMAKE_BUILD_TYPE=Release -DPLUMB_CUDA=ON -DPLUMB_TESTS=OFF}
prefix=$(tools/device/unpack-debs.sh "$root/.prefix" | tail -1) || exit 1
mkdir -p "$dir"

# build_tree NAME PATCHES...: copies, patches, configures and builds one variant (output to its log).
build_tree() {
  local name=$1 patch file
  shift
  rm -rf "${dir:?}/$name"
  mkdir -p "$dir/$name"
  tar cf - --exclude='./build*' --exclude=./.prefix --exclude=./out --exclude=./node_modules --exclude=./.git \
    --exclude=./.debs . |
    tar xf - -C "$dir/$name" || return 1
  for patch in "$@"; do
    file=$root/${patch:1}
    case $patch in
      +*) (cd "$dir/$name" && patch -s -p1 <"$file") || { echo "patch '$file' does not apply"; return 1; } ;;
      -*) (cd "$dir/$name" && patch -s -R -p1 <"$file") || { echo "patch '$file' does not reverse"; return 1; } ;;
      *) echo "patch '$patch' has no direction; expected +FILE or -FILE"; return 1 ;;
    esac
  done
  # shellcheck disable=SC2086  # the arguments and targets are lists
  cmake -S "$dir/$name" -B "$dir/$name/build" -G Ninja $cmake_args "$prefix" &&
    ninja -C "$dir/$name/build" -j"$(nproc)" $targets
}

failed=0
for tree in $trees; do
  name=${tree%%:*}
  IFS=: read -r -a patches <<<"${tree#*:}"
  [ "$name" = "$tree" ] && patches=()
  if [ -z "$name" ] || [[ $name == */* ]]; then
    echo "build-trees: variant '$tree' has no usable name; expected NAME:+PATCH|-PATCH[:...]" >&2
    failed=1
    continue
  fi
  if build_tree "$name" "${patches[@]}" >"$dir/$name.log" 2>&1; then
    echo "$name $dir/$name"
  else
    echo "build-trees: variant '$name' did not build; expected its targets, see $dir/$name.log" >&2
    tail -5 "$dir/$name.log" >&2
    failed=1
  fi
done
exit $failed
