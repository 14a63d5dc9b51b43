#!/usr/bin/env bash
# On a CUDA machine, from the repo root: issue 18's measurement,
# `leelaz bench analyze` (lz-analyze visits/s at moves 40, 120 and 200 of the 9-dan game),
# ours against Leela Zero 0.17's settings, all engines of a round started together and
# measured in turn, position by position.
#
#   NET=shipped-6x128|20x256|40x256 bash dev/analyze_gpu.sh
#   QUALITY=40 bash dev/analyze_gpu.sh    `bench analyze --quality`: at 40 positions of the
#                                         2011-12 9-dan games, the same engines' top move after
#                                         SECS against Leela Zero's best setting after LONG (8) s
#
# Needs .whl/ (pyopencl wheels, cp312) and .lzpack/ (dev/pack_reference_gpu.sh) in the checkout. Random nets
# (tame, seeded) are made here. Env: OURS (';'-separated extra argument sets for ours; the
# first is the one whose ratio the table gives: "" = the default), LZ_SETTINGS
# (";"-separated, "" = Leela Zero's default), SECS (4), WARMUP (10: untimed lz-analyze of
# the empty board after start-up, while our helper processes load), ROUNDS (1), GPU (0:
# CUDA_VISIBLE_DEVICES), CORES (taskset list, default all), TUNE (1: our OpenCL tuning
# first; 0 where only the PyTorch default runs), OUT (/tmp/analyze-out). The
# engines' stderr goes to $OUT/logs-$NET/, and the report ends with each of our engines'
# network server line (its mean batch: the batch sizes the search used).
set -u
NET=${NET:-shipped-6x128}; OURS=${OURS-""}; SECONDS_EACH=${SECS:-4}
LZ_SETTINGS=${LZ_SETTINGS-";-t 32 --batchsize 16;-t 64 --batchsize 32"}
WARMUP=${WARMUP:-10}; ROUNDS=${ROUNDS:-1}; GPU=${GPU:-0}; CORES=${CORES:-}
QUALITY=${QUALITY:-0}; LONG=${LONG:-8}; TUNE=${TUNE:-1}
OUT=${OUT:-/tmp/analyze-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 CUDA_VISIBLE_DEVICES=$GPU
mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
[ -d /tmp/site/pyopencl ] || python3 -m pip install -q --no-index --no-deps --no-compile \
  --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
export HOME=/tmp/analyzehome-$GPU; mkdir -p $HOME/.local/share/leela-zero $HOME/.local/share/leelaz
cp .lzpack/leelaz_opencl_tuning $HOME/.local/share/leela-zero/ 2>/dev/null
cp .gpu/opencl_tuning.json $HOME/.local/share/leelaz/ 2>/dev/null
PIN=(); [ -n "$CORES" ] && PIN=(taskset -c "$CORES")
W=/tmp/nets; mkdir -p $W
case "$NET" in
  shipped-6x128) [ -f $W/$NET.txt ] || python3 -c "import gzip,shutil;shutil.copyfileobj(\
gzip.open('weights/leelaz-6x128.txt.gz'),open('$W/$NET.txt','wb'))" ;;
  *) [ -f $W/$NET.txt ] || python3 -m leelaz weights random --tame --blocks ${NET%x*} \
       --filters ${NET#*x} -o $W/$NET.txt.tmp && mv $W/$NET.txt.tmp $W/$NET.txt ;;
esac
LZ="env LD_LIBRARY_PATH=$PWD/.lzpack/lib $PWD/.lzpack/leelaz --gtp --noponder -w $W/$NET.txt"
REPORT=$OUT/analyze-$NET.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$REPORT"
if [ "$TUNE" = 1 ]; then  # our OpenCL kernels' tuning (--backend opencl, --gpu N)
  "${PIN[@]}" python3 -m leelaz --tune-only -w $W/$NET.txt > /tmp/tune-$NET.log 2>&1
  echo "our tune-only: rc $?, $SECONDS s" | tee -a "$REPORT"
fi
args=()
IFS=';' read -ra ours <<< "$OURS"; [ ${#ours[@]} -gt 0 ] || ours=("")
for a in "${ours[@]}"; do args+=(--ours "python3 -m leelaz --gtp --noponder -w $W/$NET.txt $a"); done
IFS=';' read -ra theirs <<< "$LZ_SETTINGS"; [ ${#theirs[@]} -gt 0 ] || theirs=("")
for a in "${theirs[@]}"; do args+=(--reference "$LZ $a"); done
if [ "$QUALITY" -gt 0 ]; then
  "${PIN[@]}" python3 -m leelaz bench analyze -w $W/$NET.txt --quality --positions "$QUALITY" \
    --seconds "$SECONDS_EACH" --long-seconds "$LONG" --long-search "$LZ -t 32 --batchsize 16" \
    --game tests/fixtures/tygem-9d/tygem-9d-2011-12.sgf.gz --log-dir "$OUT/logs-$NET" \
    "${args[@]}" 2>&1 | tee -a "$REPORT"
else
  "${PIN[@]}" python3 -m leelaz bench analyze -w $W/$NET.txt --seconds "$SECONDS_EACH" \
    --warmup "$WARMUP" --rounds "$ROUNDS" --log-dir "$OUT/logs-$NET" "${args[@]}" 2>&1 \
    | tee -a "$REPORT"
fi
cp $HOME/.local/share/leela-zero/leelaz_opencl_tuning "$OUT/" 2>/dev/null
cp $HOME/.local/share/leelaz/opencl_tuning.json "$OUT/opencl_tuning-$NET.json" 2>/dev/null
echo "== $NET done in $SECONDS s" | tee -a "$REPORT"
