#!/usr/bin/env bash
# Pack the C++ Leela Zero 0.17 (Debian's leela-zero) with its libraries into .lzpack/, so it
# runs on a CUDA machine beside leelaz. .lzpack/ is
# git-excluded; copy it to that machine with the checkout. dev/bench_gpu.sh runs it there.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/lib/leelaz/bin/leelaz ]; then
  apt-get update -qq && apt-get install -y -qq leela-zero
fi
rm -rf .lzpack && mkdir -p .lzpack/lib .lzpack/sys
cp /usr/lib/leelaz/bin/leelaz .lzpack/
for l in libboost_program_options.so.1.74.0 libboost_filesystem.so.1.74.0 libOpenCL.so.1 libz.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$l" .lzpack/lib/
done
# Fallback if the CUDA machine's glibc refuses the binary: start it through this loader.
for l in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 libpthread.so.0; do
  cp -L "/lib/x86_64-linux-gnu/$l" .lzpack/sys/
done
cp .lzpack/lib/* .lzpack/sys/
grep -qx '/.lzpack/' .git/info/exclude 2>/dev/null || echo /.lzpack/ >> .git/info/exclude
du -sh .lzpack
