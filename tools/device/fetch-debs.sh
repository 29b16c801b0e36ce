#!/usr/bin/env bash
# Downloads (does not install) the Debian packages the GPU machine lacks into .debs/, which travels with a device run.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .debs
cd .debs
apt-get download libcpp-httplib-dev libcpp-httplib0.11 libbrotli-dev libbrotli1 libpcre2-dev libpcre2-8-0 \
  libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2 libwebp-dev libwebp7 libwebpdemux2 \
  libwebpmux3 libssl-dev zlib1g-dev 2>&1 | grep -v '^Get:' || true
ls
