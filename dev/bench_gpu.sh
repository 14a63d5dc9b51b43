#!/usr/bin/env bash
# On a CUDA machine, from the repo root: NVIDIA OpenCL set-up, the OpenCL tests, our
# evals/s table, and C++ Leela Zero 0.17 --benchmark on the same random networks.
#
#   bash dev/bench_gpu.sh [STAGES]     STAGES from: test ours chooser lz  (default: all)
#
# Needs .whl/ (pyopencl and its pure-Python needs, cp312) and .lzpack/ (dev/
# pack_reference_gpu.sh) in the checkout. Nets are generated here with leelaz weights random --tame
# (seeded: the same bytes every time). Env: NETS ("10x128 20x256 40x256"), BATCHES,
# SECONDS_PER (timing per batch size), LZ_RUNS (NET:ARGS;...), BUDGET (seconds for the whole
# script; stages that would start too late are skipped), OURS_UNTIL, OURS_ARGS. Results: $OUT.
set -u
STAGES=${*:-test ours chooser lz}
OUT=${OUT:-/tmp/bench-out}; mkdir -p "$OUT"
NETS=${NETS:-"10x128 20x256 40x256"}
BATCHES=${BATCHES:-"1 2 4 8 16 32 64 128 256"}
SECONDS_PER=${SECONDS_PER:-0.6}
BUDGET=${BUDGET:-520}
OURS_UNTIL=${OURS_UNTIL:-$BUDGET}  # elapsed second by which our benchmark must end
LZ_RUNS=${LZ_RUNS:-"20x256:;20x256:-t 32 --batchsize 16;10x128:-t 32 --batchsize 16;40x256:"}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/pyopencl-*.whl .whl/pytools-*.whl .whl/platformdirs-*.whl \
  .whl/siphash24-*.whl .whl/typing_extensions-*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
left() { echo $((BUDGET - SECONDS)); }

W=/tmp/nets; mkdir -p $W
for n in $NETS; do
  [ -f $W/$n.txt ] || python3 -m leelaz weights random --tame --blocks ${n%x*} --filters ${n#*x} \
    -o $W/$n.txt &
done
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total,driver_version --format=csv | tee $OUT/gpu.txt
python3 -c "import pyopencl as cl
for p in cl.get_platforms():
    for d in p.get_devices(): print(p.name, '|', d.name, '|', d.version, '| CUs', d.max_compute_units, '| MHz', d.max_clock_frequency, '| fp16', 'cl_khr_fp16' in d.extensions)" | tee -a $OUT/gpu.txt

if [[ " $STAGES " == *" test "* ]]; then
  echo "== tests ($(left) s left)"
  timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/test_opencl_backend.py 2>&1 \
    | tail -15 | tee $OUT/tests.txt
fi
wait  # the networks
ls -la $W

if [[ " $STAGES " == *" ours "* ]]; then
  echo "== ours ($(left) s left)"
  for n in $NETS; do
    until=$(( OURS_UNTIL - SECONDS ))
    [ "$until" -gt 30 ] || { echo "skipped $n: out of time"; continue; }
    LEELAZ_TUNER_VERBOSE=${VERBOSE:-1} timeout $until python3 -m leelaz bench net --backend opencl \
      -w $W/$n.txt --batches ${BATCHES// /,} --seconds $SECONDS_PER --no-reference --profile \
      ${OURS_ARGS:-} 2>&1 | tee -a $OUT/ours.txt
  done
  cp ~/.local/share/leelaz/opencl_tuning.json $OUT/ 2>/dev/null
fi

if [[ " $STAGES " == *" chooser "* ]]; then
  echo "== backend chooser, precision auto ($(left) s left)"
  n=${NETS%% *}
  timeout 120 python3 -c "from leelaz.backends.weights import load_weights
from leelaz.config import EngineConfig
from leelaz.nn.loading import choose
w = load_weights('$W/$n.txt')
b = choose(EngineConfig(network_backend='opencl'), w, batch_size=64).open_backend(w)
print('chose', b.name, getattr(b, 'precision', ''))" 2>&1 | tee $OUT/chooser.txt
fi

if [[ " $STAGES " == *" lz "* ]]; then
  echo "== reference ($(left) s left)"
  export HOME=/tmp/lzhome; mkdir -p $HOME/.local/share/leela-zero
  [ -f .lzpack/leelaz_opencl_tuning ] && cp .lzpack/leelaz_opencl_tuning $HOME/.local/share/leela-zero/
  IFS=';' read -ra runs <<< "$LZ_RUNS"
  for run in "${runs[@]}"; do
    n=${run%%:*}; args=${run#*:}
    [ "$(left)" -gt 30 ] || { echo "skipped lz $n $args: out of time"; continue; }
    echo "-- lz $n $args" | tee -a $OUT/lz.txt
    LD_LIBRARY_PATH=$PWD/.lzpack/lib timeout $(( $(left) - 10 )) .lzpack/leelaz --benchmark \
      -w $W/$n.txt $args > /tmp/lz.log 2>&1
    grep -iE "n/s|precision|tuner|Device name|error|mismatch|fp16|fp32|batch" /tmp/lz.log \
      | tail -12 | tee -a $OUT/lz.txt
  done
  [ -n "${LZ_TUNING_BACK:-}" ] && cp $HOME/.local/share/leela-zero/leelaz_opencl_tuning $OUT/
fi
echo "== done in $SECONDS s"
