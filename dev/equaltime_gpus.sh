#!/usr/bin/env bash
# On a CUDA machine of several GPUs (e.g. four or eight H100s), from the repo root: many equal-time matches at once, PER single-game matches a GPU, each pinned to CORES
# cores of the GPU's 16 (`dev/strength_gpu.sh equaltime`, JOBS=1), then each setting's games
# tallied together (`leelaz match --tally`).
#
#   CONFIGS=";-t 16" PER=4 CORES=4 BASE=0 bash dev/equaltime_gpus.sh
#
# Needs .whl/, .lzpack/ and .gnugo/ in the checkout (see strength_gpu.sh). CONFIGS: ';'-separated EXTRA1
# argument sets for ours ("" = the default), handed to the matches round robin; a set that
# starts with @DIR runs the leelaz of folder DIR (strength_gpu.sh's CODE: a git worktree of
# another commit, copied along), e.g. CONFIGS=";@.old" for this commit against that; BASE: the
# first game number of this run (settings are BASE + 1000 * index apart, so that runs and
# settings never share a game number); OUT (/tmp/equaltime-out). Our OpenCL tuning is made
# once per setting before the matches start (.gpu/opencl_tuning.json, if there, seeds it),
# Leela Zero's once for all (seeded by .lzpack/leelaz_opencl_tuning; the result is
# $OUT/lz_opencl_tuning);
# the matches stop starting games HARD - 85 s after that and are cut at HARD s (BUDGET, 555 s
# by default, less the tuning), so the whole run fits in 600 s; a caller that spent time
# before this script gives BUDGET as what is left of its 555 s.
set -u
IFS=';' read -ra CF <<< "${CONFIGS-}"; [ ${#CF[@]} -gt 0 ] || CF=("")
N=$(nvidia-smi -L | wc -l); PER=${PER:-3}; CORES=${CORES:-5}; BASE=${BASE:-0}
OUT=${OUT:-/tmp/equaltime-out}; mkdir -p "$OUT/eq"
T0=$(date +%s)
mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
[ -d /tmp/site/pyopencl ] || python3 -m pip install -q --no-index --no-deps --no-compile \
  --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
# strength_gpu.sh's HOME: one tuning file for every match, filled here, one setting at a time.
TUNED=/tmp/strengthhome/.local/share/leelaz
mkdir -p $TUNED /tmp/strengthhome/.local/share/leela-zero
[ -f $TUNED/opencl_tuning.json ] || cp .gpu/opencl_tuning.json $TUNED/ 2>/dev/null
code_of() { case "$1" in @*) c=${1%% *}; echo "${c#@}" ;; esac; }
args_of() { case "$1" in @*) [ "${1#* }" = "$1" ] || echo "${1#* }" ;; *) echo "$1" ;; esac; }
# Leela Zero's OpenCL tuning for this network at its settings (EXTRA2), made once here: each
# match's first start would otherwise tune at the same time as the others (60-100 s for 128
# channels). strength_gpu.sh copies .lzpack/leelaz_opencl_tuning to its HOME, so the result
# goes there (and to $OUT, to be carried to the next run in .lzpack/).
LZHOME=/tmp/lztunehome; mkdir -p $LZHOME/.local/share/leela-zero
cp .lzpack/leelaz_opencl_tuning $LZHOME/.local/share/leela-zero/ 2>/dev/null
HOME=$LZHOME timeout 240 env LD_LIBRARY_PATH=$PWD/.lzpack/lib .lzpack/leelaz --tune-only --noponder \
  -w weights/leelaz-6x128.txt.gz ${EXTRA2:-} > "$OUT/eq/lz-tune.log" 2>&1
echo "Leela Zero's tune-only: rc $?, $(( $(date +%s) - T0 )) s"
cp $LZHOME/.local/share/leela-zero/leelaz_opencl_tuning .lzpack/ 2>/dev/null
cp .lzpack/leelaz_opencl_tuning "$OUT/lz_opencl_tuning" 2>/dev/null
for c in "${CF[@]}"; do
  HOME=/tmp/strengthhome PYTHONSAFEPATH=1 PYTHONPATH=/tmp/site:$PWD/$(code_of "$c"):$PWD \
    timeout 150 python3 -m leelaz --tune-only -w weights/leelaz-6x128.txt.gz -m 10 -b 0 \
    $(args_of "$c") > "$OUT/eq/tune.log" 2>&1
  echo "tune '$c': rc $?, $(( $(date +%s) - T0 )) s"
  # numba's cache of the setting's compiled search core, filled once as a user's first run
  # fills it, so that no match's first moves search in Python while four compilers run.
  printf 'genmove b\nquit\n' | LEELAZ_SEARCH_CORE_WAIT=1 PYTHONSAFEPATH=1 \
    PYTHONPATH=/tmp/site:$PWD/$(code_of "$c"):$PWD timeout 150 python3 -m leelaz --gtp \
    --cpu-only -v 50 -w weights/leelaz-6x128.txt.gz > "$OUT/eq/core-warm.log" 2>&1
  echo "search core of '$c' ready: rc $?, $(( $(date +%s) - T0 )) s"
done
nvidia-smi -L
EL=$(( $(date +%s) - T0 )); HARD=${HARD:-$(( ${BUDGET:-555} - EL ))}; LIMIT=${LIMIT:-$(( HARD - 85 ))}
echo "$N GPUs, $PER matches each on $CORES cores; limit $LIMIT s, hard $HARD s"
i=0
for g in $(seq 0 $((N - 1))); do
  for m in $(seq 0 $((PER - 1))); do
    c=$((i % ${#CF[@]})); lo=$((g * 16 + m * CORES)); hi=$((lo + CORES - 1))
    first=$((BASE + c * 1000 + i * 10))
    taskset -c $lo-$hi env CUDA_VISIBLE_DEVICES=$g JOBS=1 GAMES=10 FIRST=$first LIMIT=$LIMIT \
      HARD=$HARD CODE="$(code_of "${CF[$c]}")" EXTRA1="$(args_of "${CF[$c]}")" OUT="$OUT/eq" \
      bash dev/strength_gpu.sh equaltime \
      > "$OUT/eq/run-$first.out" 2>&1 &
    i=$((i + 1)); sleep 1
  done
done
wait
for c in $(seq 0 $((${#CF[@]} - 1))); do
  dirs=()
  for f in "$OUT"/eq/equaltime-*.tar.gz; do
    n=$(basename "$f" .tar.gz); n=${n#equaltime-}
    [ $(( (n - BASE) / 1000 )) = "$c" ] || continue
    mkdir -p /tmp/tally-$n && tar -C /tmp/tally-$n -xzf "$f" && dirs+=(/tmp/tally-$n/sgf)
  done
  echo "== setting $c: '${CF[$c]}'"
  [ ${#dirs[@]} -gt 0 ] && PYTHONPATH=/tmp/site:$PWD python3 -m leelaz match --tally \
    "${dirs[@]}" --name1 leelaz 2>&1 | tail -4
done
for f in "$OUT"/eq/equaltime-*.txt; do
  echo "-- $f"; grep -E "moves, mean|Network server|distinct|^leelaz: [0-9]+/|log:" "$f"
done
# The tuning made here seeds the next run's (copy it to .gpu/opencl_tuning.json).
cp $TUNED/opencl_tuning.json "$OUT/" 2>/dev/null
# The SGF tars in one file, one thing to copy back.
(cd "$OUT/eq" && tar -czf "$OUT/sgfs.tar.gz" equaltime-*.tar.gz && rm -f equaltime-*.tar.gz)
