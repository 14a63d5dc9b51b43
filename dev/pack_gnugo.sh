#!/usr/bin/env bash
# Pack GNU Go 3.8 (Debian's gnugo) with the libraries a CUDA machine may lack into .gnugo/
# (bin/gnugo, lib/), so dev/strength_gpu.sh can play against it there. .gnugo/ is
# git-excluded; copy it to that machine with the checkout. Run there as
#   LD_LIBRARY_PATH=$PWD/.gnugo/lib .gnugo/bin/gnugo --mode gtp --level 10
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/games/gnugo ]; then
  apt-get update -qq && apt-get install -y -qq gnugo
fi
rm -rf .gnugo && mkdir -p .gnugo/bin .gnugo/lib
cp /usr/games/gnugo .gnugo/bin/
# Everything ldd names except the C library itself (libc, libm, the loader, vdso).
ldd /usr/games/gnugo | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|ld-linux[^/]*)\.so' \
  | while read -r l; do cp -L "$l" .gnugo/lib/; done
grep -qx '/.gnugo/' .git/info/exclude 2>/dev/null || echo /.gnugo/ >> .git/info/exclude
LD_LIBRARY_PATH=$PWD/.gnugo/lib .gnugo/bin/gnugo --version | head -1
ls .gnugo/lib
du -sh .gnugo
