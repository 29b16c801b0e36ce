#!/usr/bin/env bash
# On the GPU machine: unpacks .debs/*.deb into a private prefix (never into /) and prints the CMake arguments to use it.
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=${1:-$PWD/.prefix}
mkdir -p "$prefix"
for deb in .debs/*.deb; do dpkg -x "$deb" "$prefix"; done
# pkg-config files carry prefix=/usr; point them at the private prefix.
for pc in "$prefix"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
  sed -i "s|^prefix=/usr|prefix=$prefix/usr|" "$pc"
done
echo "-DPLUMB_PREFIX=$prefix"
