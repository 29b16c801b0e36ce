#!/usr/bin/env bash
# Installs Plumb's build and test dependencies on Debian 12; safe to run again. Nothing else is downloaded at build time.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates clang-format
  nlohmann-json3-dev libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev
  libpcre2-dev libutf8proc-dev libpng-dev libjpeg62-turbo-dev libwebp-dev
  libcli11-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-jinja2
)
# Node.js may come from another source than Debian (its npm then conflicts with Debian's): only a missing command asks
# for Debian's packages.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages for the tests against real peers, pinned by package-lock.json.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
