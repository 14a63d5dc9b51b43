#!/usr/bin/env bash
# On a CUDA machine, from the repo root: the whole engine's --benchmark (search + network,
# visits/s) against C++ Leela Zero 0.17's --benchmark on the same networks, GPU and run.
#
#   bash dev/bench_engine_gpu.sh        (with .whl/ and .lzpack/; results under $OUT)
#
# Needs .whl/ (pyopencl and its pure-Python needs, cp312) and .lzpack/ (made by
# dev/pack_reference_gpu.sh, with Leela Zero's tuning file for the GPU). Random nets are
# generated here with leelaz weights random --tame (seeded); the shipped network is measured
# too, because random nets give degenerate trees. Env: NETS, OURS_ARGS and LZ_ARGS
# (';'-separated argument sets), ROUNDS (each round runs every net and setting once, so the
# two engines alternate and drift in the machine's speed hits both), BUDGET (seconds).
set -u
OUT=${OUT:-/tmp/bench-out}; mkdir -p "$OUT"
NETS=${NETS:-"10x128 20x256"}
OURS_ARGS=${OURS_ARGS-"-t 16;-t 32;-t 64"}  # set but empty: the default only
LZ_ARGS=${LZ_ARGS-";-t 32 --batchsize 16"}
ROUNDS=${ROUNDS:-1}
BUDGET=${BUDGET:-450}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
left() { echo $((BUDGET - SECONDS)); }

W=/tmp/nets; mkdir -p $W
for n in $NETS; do
  [ -f $W/$n.txt ] || python3 -m leelaz weights random --tame --blocks ${n%x*} --filters ${n#*x} \
    -o $W/$n.txt 2>/dev/null &
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
wait
python3 -c "import gzip,shutil;shutil.copyfileobj(gzip.open('weights/leelaz-6x128.txt.gz'),open('$W/shipped-6x128.txt','wb'))"

export HOME=/tmp/benchhome; mkdir -p $HOME/.local/share/leela-zero
cp .lzpack/leelaz_opencl_tuning $HOME/.local/share/leela-zero/ 2>/dev/null
IFS=';' read -ra ours <<< "$OURS_ARGS"
IFS=';' read -ra theirs <<< "$LZ_ARGS"
[ ${#ours[@]} -gt 0 ] || ours=("")
[ ${#theirs[@]} -gt 0 ] || theirs=("")
for round in $(seq "$ROUNDS"); do
for n in shipped-6x128 $NETS; do
  for args in "${ours[@]}"; do
    [ "$(left)" -gt 40 ] || { echo "skipped leelaz $n $args: out of time"; continue; }
    line=$(timeout $(( $(left) - 20 )) python3 -m leelaz --benchmark -w $W/$n.txt $args 2>&1 \
           | tee /tmp/ours.log | grep -E "visits, .* n/s" | tail -1)
    echo "leelaz     $n [$args] round $round: $line" | tee -a $OUT/engine.txt
    grep -iE "OpenCL:|Selected device|error" /tmp/ours.log | head -3 >> $OUT/ours-startup.txt
  done
  for args in "${theirs[@]}"; do
    [ "$(left)" -gt 40 ] || { echo "skipped lz $n $args: out of time"; continue; }
    line=$(LD_LIBRARY_PATH=$PWD/.lzpack/lib timeout $(( $(left) - 20 )) .lzpack/leelaz \
           --benchmark -w $W/$n.txt $args 2>&1 | tee /tmp/lz.log | grep -E "visits, .* n/s" | tail -1)
    echo "lz-0.17    $n [$args] round $round: $line" | tee -a $OUT/engine.txt
  done
done
done
echo "== done in $SECONDS s"
