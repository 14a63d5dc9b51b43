#!/usr/bin/env bash
# On a CUDA machine, from the repo root: `leelaz bench selfplay` -- self-play moves/s of
# leelaz (--parallel games batched per process, --workers processes) against the C++ Leela
# Zero 0.17 driven as autogtp drives it (K processes of `-g -q --noponder -v 1601 -r 5 -m 30 -n
# -d -t 6 --batchsize 5` playing genmove loops, a fresh process per game), same net, same GPU,
# same run; then the backend alone at the best configuration's mean batch (evals/s reached
# against the backend's peak).
#
#   bash dev/bench_selfplay_gpu.sh          (with .whl/ and .lzpack/; results under $OUT)
#
# Env: NET (shipped | BxF, a tame random net), VISITS (1601), SECS (seconds per
# configuration, 60), PARALLEL and WORKERS (comma lists for ours), REFK (comma list of
# reference process counts; empty = no reference), EXTRA (more `leelaz bench selfplay` flags).
set -u
OUT=${OUT:-/tmp/bench-out}; mkdir -p "$OUT"
NET=${NET:-shipped}
VISITS=${VISITS:-1601}
SECS=${SECS:-60}
PARALLEL=${PARALLEL:-32}
WORKERS=${WORKERS:-1,4,8}
REFK=${REFK-4,8}
EXTRA=${EXTRA:-}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
export HOME=/tmp/benchhome; mkdir -p $HOME/.local/share/leela-zero
cp .lzpack/leelaz_opencl_tuning $HOME/.local/share/leela-zero/ 2>/dev/null
export LD_LIBRARY_PATH=$PWD/.lzpack/lib  # the reference's libraries (the same ICD loader)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
nproc | sed 's/^/cores: /' | tee -a $OUT/gpu.txt

if [ "$NET" = shipped ]; then
  W=/tmp/shipped-6x128.txt
  python3 -c "import gzip,shutil;shutil.copyfileobj(gzip.open('weights/leelaz-6x128.txt.gz'),open('$W','wb'))"
else
  W=/tmp/$NET.txt
  [ -f $W ] || python3 -m leelaz weights random --blocks ${NET%x*} --filters ${NET#*x} --tame \
    -o $W || exit 1
fi
ref=(--reference "")
[ -n "$REFK" ] && ref=(--reference .lzpack/leelaz --reference-k "$REFK")
python3 -m leelaz bench selfplay -w $W -v $VISITS --seconds $SECS --parallel $PARALLEL \
  --workers $WORKERS "${ref[@]}" $EXTRA 2>&1 | tee $OUT/selfplay-$NET.txt
echo "== done in $SECONDS s"
