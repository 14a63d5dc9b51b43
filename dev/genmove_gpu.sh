#!/usr/bin/env bash
# On a CUDA machine, from the repo root: playouts a move on the clock
# (`leelaz bench genmove`: time_settings 0 1 2, six genmoves from moves 40, 120 and 200 of the
# 9-dan game), our settings against Leela Zero 0.17's, all engines started together and
# measured in turn, position by position. What equal-time games turn on (issue 18).
#
#   OURS=";--search-processes 1" bash dev/genmove_gpu.sh
#
# Needs .whl/ (pyopencl wheels, cp312) and .lzpack/ (dev/pack_reference_gpu.sh) in the checkout. Env: OURS
# (';'-separated extra argument sets for ours, "" = the default), LZ_SETTINGS (';'-separated,
# "" = Leela Zero's default), MOVES (40,120,200), GENMOVES (6), CLOCK ("0 1 2"), WARMUP (10 s
# of untimed lz-analyze after the start), PROFILE (an argument set for ours run once more
# under cProfile, its 40 costliest functions written to the report), GPU (0), CORES (taskset
# list), TUNE (1: our OpenCL tuning first; 0 where only the PyTorch default runs), OUT
# (/tmp/genmove-out). The engines' stderr goes to $OUT/logs.
set -u
OURS=${OURS-""}; LZ_SETTINGS=${LZ_SETTINGS-""}; MOVES=${MOVES:-40,120,200}
GENMOVES=${GENMOVES:-6}; CLOCK=${CLOCK:-0 1 2}; WARMUP=${WARMUP:-10}; PROFILE=${PROFILE-}
GPU=${GPU:-0}; CORES=${CORES:-}; TUNE=${TUNE:-1}; OUT=${OUT:-/tmp/genmove-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 CUDA_VISIBLE_DEVICES=$GPU
mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
[ -d /tmp/site/pyopencl ] || python3 -m pip install -q --no-index --no-deps --no-compile \
  --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
export HOME=/tmp/genmovehome-$GPU
mkdir -p $HOME/.local/share/leela-zero $HOME/.local/share/leelaz
cp .lzpack/leelaz_opencl_tuning $HOME/.local/share/leela-zero/ 2>/dev/null
cp .gpu/opencl_tuning.json $HOME/.local/share/leelaz/ 2>/dev/null
PIN=(); [ -n "$CORES" ] && PIN=(taskset -c "$CORES")
NET=$PWD/weights/leelaz-6x128.txt.gz
LZ="env LD_LIBRARY_PATH=$PWD/.lzpack/lib $PWD/.lzpack/leelaz --gtp --noponder -b 0 -w $NET"
OURS_CMD="python3 -m leelaz --gtp --noponder -b 0 -w $NET"
REPORT=$OUT/genmove.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$REPORT"
if [ "$TUNE" = 1 ]; then
  "${PIN[@]}" python3 -m leelaz --tune-only -w $NET > /tmp/tune-genmove.log 2>&1
  echo "our tune-only: rc $?, $SECONDS s" | tee -a "$REPORT"
fi
args=()
IFS=';' read -ra ours <<< "$OURS"; [ ${#ours[@]} -gt 0 ] || ours=("")
for a in "${ours[@]}"; do args+=(--ours "$OURS_CMD $a"); done
IFS=';' read -ra theirs <<< "$LZ_SETTINGS"; [ ${#theirs[@]} -gt 0 ] || theirs=("")
for a in "${theirs[@]}"; do args+=(--reference "$LZ $a"); done
"${PIN[@]}" python3 -m leelaz bench genmove -w $NET --moves "$MOVES" --genmoves "$GENMOVES" \
  --clock "$CLOCK" --warmup "$WARMUP" --log-dir "$OUT/logs" "${args[@]}" 2>&1 | tee -a "$REPORT"
if [ -n "$PROFILE" ]; then
  echo "== under cProfile: $OURS_CMD $PROFILE" | tee -a "$REPORT"
  "${PIN[@]}" python3 -m leelaz bench genmove -w $NET --moves "$MOVES" --genmoves "$GENMOVES" \
    --clock "$CLOCK" --warmup "$WARMUP" --reference none \
    --ours "python3 -m cProfile -o $OUT/genmove.prof -m leelaz --gtp --noponder -b 0 -w $NET \
$PROFILE" 2>&1 | tee -a "$REPORT"
  python3 -c "import pstats, sys; s = pstats.Stats('$OUT/genmove.prof', stream=sys.stdout)
s.sort_stats('tottime').print_stats(40); s.sort_stats('cumtime').print_stats(40)" \
    >> "$REPORT" 2>&1
fi
cp $HOME/.local/share/leelaz/opencl_tuning.json "$OUT/" 2>/dev/null
echo "== done in $SECONDS s" | tee -a "$REPORT"
