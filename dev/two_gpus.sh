#!/usr/bin/env bash
# On a CUDA machine of two GPUs (nvidia-h200-x2: 32 cores), from the repo root: what several
# GPUs buy, each stage in one run against Leela Zero 0.17 on the same machine.
#
#   STAGES="startup analyze selfplay" OUT=$OUT bash dev/two_gpus.sh
#
# startup:  seconds to the first answer (`protocol_version`) and to a first `genmove` at one
#           visit, ours (PyTorch, the default on NVIDIA) against Leela Zero on OpenCL, both on
#           GPU 0, RUNS starts each, alternating (tools/bench/startup.seconds_to_answer).
# analyze:  `dev/analyze_gpu.sh` per network of NETS: one tree's lz-analyze visits/s (ours
#           with --search-processes 1) on --gpu 0, --gpu 1, --gpu 0 --gpu 1 (default batch:
#           32 a GPU) and --gpu 0 --gpu 1 -t 32 (32 split over both), against Leela Zero's
#           best one-GPU setting (-t 32 --batchsize 16) and its two-GPU one (--gpu 0 --gpu 1
#           -t 64 --batchsize 16).
# selfplay: `leelaz bench selfplay` at 1601 visits on the shipped net: one GPU on 16 cores
#           (a one-GPU machine's share), one GPU on all 32, both GPUs on all 32 (workers
#           dealt over them, selfplay/workers.worker_devices).
#
# zero:     dev/zero_learn_gpu.sh's run (DIR /tmp/z6c, restored from .zero-state/) resumed until
#           BUDGET + ZERO_EXTRA s, 24 self-play workers dealt over both GPUs; its log's
#           games/hour against the same run's generations on one GPU.
#
# On a machine of one GPU the same stages measure one tree against Leela Zero's best one-GPU
# settings: GPUS=0 OURS=";--search-processes 1" LZ_SETTINGS="-t 32 --batchsize 16;-t 64
# --batchsize 32" SP_RUNS="0 0-15 16".
#
# Needs .whl/ and .lzpack/ (dev/pack_reference_gpu.sh) in the checkout (and .zero-state/ for
# zero). Env: STAGES, NETS ("shipped-6x128 20x256 40x256"), OURS (';'-separated argument
# sets for ours), GPUS (the analyze stage's CUDA_VISIBLE_DEVICES, "0,1"), LZ_SETTINGS (its
# ';'-separated Leela Zero settings), SECS (3 s a position), RUNS (3), SP_SECS (45), SP_RUNS
# (';'-separated "CUDA_VISIBLE_DEVICES CORES WORKERS"), ZERO_EXTRA (0), OUT. numba's kernels
# of the search core are compiled before the first stage (a user's first start fills the
# same cache). Each stage is skipped once BUDGET (540 s) is spent; the logs come back as
# one tar.
set -u
STAGES=${STAGES:-"startup analyze selfplay"}; NETS=${NETS:-"shipped-6x128 20x256 40x256"}
SECS=${SECS:-3}; RUNS=${RUNS:-3}; SP_SECS=${SP_SECS:-45}; BUDGET=${BUDGET:-540}
SP_RUNS=${SP_RUNS:-"0 0-15 16;0 0-31 32;0,1 0-31 32"}; ZERO_EXTRA=${ZERO_EXTRA:-0}
ONE="--search-processes 1"
OURS=${OURS-"$ONE --gpu 0;$ONE --gpu 1;$ONE --gpu 0 --gpu 1;$ONE --gpu 0 --gpu 1 -t 32"}
GPUS=${GPUS:-0,1}
LZ_SETTINGS=${LZ_SETTINGS:-"--gpu 0 -t 32 --batchsize 16;--gpu 0 --gpu 1 -t 64 --batchsize 16"}
OUT=${OUT:-/tmp/two-gpus-out}; mkdir -p "$OUT/logs"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
[ -d /tmp/site/pyopencl ] || python3 -m pip install -q --no-index --no-deps --no-compile \
  --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
SUMMARY=$OUT/summary.txt
nvidia-smi -L | tee -a $SUMMARY; nproc | sed 's/^/cores: /' | tee -a $SUMMARY
git log -1 --format='commit %h' 2>/dev/null | tee -a $SUMMARY
left() { [ $SECONDS -lt $BUDGET ] || { echo "-- budget spent, skipping $1" | tee -a $SUMMARY; return 1; }; }
W=/tmp/nets; mkdir -p $W
python3 -c "import gzip,shutil;shutil.copyfileobj(gzip.open('weights/leelaz-6x128.txt.gz'),\
open('$W/shipped-6x128.txt','wb'))"
printf 'genmove b\nquit\n' | LEELAZ_SEARCH_CORE_WAIT=1 python3 -m leelaz --gtp --cpu-only -v 50 \
  -w $W/shipped-6x128.txt > /dev/null 2>&1
echo "numba's kernels compiled and cached: rc $?, $SECONDS s" | tee -a $SUMMARY

for stage in $STAGES; do
  left $stage || continue
  echo "== $stage at $SECONDS s" | tee -a $SUMMARY
  case $stage in
    startup)
      HOME=/tmp/starthome; mkdir -p $HOME/.local/share/leela-zero
      HOME=$HOME CUDA_VISIBLE_DEVICES=0 python3 - "$W/shipped-6x128.txt" "$RUNS" <<'EOF' 2>&1 | tee -a $SUMMARY
import os, statistics, sys
from leelaz.tools.bench.startup import seconds_to_answer
net, runs = sys.argv[1], int(sys.argv[2])
lz = ["env", f"LD_LIBRARY_PATH={os.getcwd()}/.lzpack/lib", ".lzpack/leelaz"]
programs = {"leelaz (PyTorch, GPU 0)": ["python3", "-m", "leelaz"],
            "Leela Zero 0.17 (OpenCL, GPU 0)": lz}
times = {name: [] for name in programs}
seconds_to_answer(lz + ["--gtp", "--noponder", "-w", net], dict(os.environ))  # its tuning
for _ in range(runs):
    for name, argv in programs.items():
        times[name].append(seconds_to_answer(
            argv + ["--gtp", "--noponder", "-v", "1", "-w", net], dict(os.environ),
            commands=("protocol_version", "genmove b")))
for name, got in times.items():
    print(f"{name}: first answer {statistics.median(t[0] for t in got):.2f} s, first genmove "
          f"{statistics.median(t[1] for t in got):.2f} s (medians of {runs}: {got})")
EOF
      ;;
    analyze)
      for net in $NETS; do
        left "analyze $net" || break
        NET=$net GPU=$GPUS SECS=$SECS WARMUP=5 OUT=$OUT/logs OURS="$OURS" \
          LZ_SETTINGS="$LZ_SETTINGS" \
          bash dev/analyze_gpu.sh > $OUT/logs/analyze-run-$net.txt 2>&1
        grep -vE "^\s*$" $OUT/logs/analyze-$net.txt | tail -25 >> $SUMMARY
      done
      ;;
    selfplay)
      SP=(python3 -m leelaz bench selfplay -w $W/shipped-6x128.txt -v 1601 --seconds $SP_SECS
          --parallel 128 --reference "" --no-peak)
      IFS=';' read -ra runs <<< "$SP_RUNS"
      for run in "${runs[@]}"; do
        set -- $run
        left "selfplay $run" || break
        echo "-- GPUs $1, cores $2, $3 workers" | tee -a $SUMMARY
        CUDA_VISIBLE_DEVICES=$1 taskset -c $2 "${SP[@]}" --workers $3 > $OUT/logs/selfplay-$1-$3.txt 2>&1
        grep -E "moves/s|leelaz" $OUT/logs/selfplay-$1-$3.txt | tail -4 | tee -a $SUMMARY
      done
      ;;
    zero)  # the learning run of dev/zero_learn_gpu.sh resumed, its self-play on both GPUs
      BUDGET=$((BUDGET + ZERO_EXTRA - SECONDS)) DIR=/tmp/z6c WORKERS=24 PARALLEL=64 GAMES=256 \
        OUT=$OUT bash dev/zero_learn_gpu.sh > $OUT/logs/zero.txt 2>&1
      grep -E "games/hour|promoted|candidate" /tmp/z6c/log.txt | tail -6 | tee -a $SUMMARY
      ;;
  esac
done
echo "== done in $SECONDS s" | tee -a $SUMMARY
tar -czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $OUT/logs
