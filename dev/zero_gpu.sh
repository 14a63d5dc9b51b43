#!/usr/bin/env bash
# On a CUDA machine, from the repo root: the Zero loop of issue 16.
#
#   bash dev/zero_gpu.sh loop        `leelaz zero` from a seeded random net; rerun it in the
#                                    next run: it resumes the same DIR until GENERATIONS
#   bash dev/zero_gpu.sh final       the best network against the starting random one,
#                                    FINAL_GAMES games without SPRT (the >= 95% check),
#                                    as WORKERS shard processes (MAX_MOVES caps a game),
#                                    at MATCH_VISITS, with DUMBPASS as the loop
#   bash dev/zero_gpu.sh ray 1 4 8   self-play throughput on Ray with K workers (one GPU,
#                                    1/K of it each): --selfplay-only, one DIR per K
#
# DIR lives on the machine (/tmp/zero-*), which may not keep it between runs. Each run packs the state without the games (run.json, best, generations/,
# the start, best and newest candidate networks, log.txt, the table and plot) into
# $OUT/<dir>.tar.gz (one file to copy back), so unpacking it here and `leelaz zero <dir> --status` redraws the table and the
# Elo plot; and on a fresh machine, put that tar.gz into the checkout's .zero-state/ and
# bring .zero-state along: the run goes on from it (the games of earlier generations are gone, so the
# next window holds only new ones; a generation in progress replays its phase). Each run also
# returns our OpenCL tuning file ($OUT/opencl_tuning.json): put it into .zero-state/ too, and
# a fresh machine skips the tuning before the loop (about two minutes).
# Every run stops at BUDGET seconds (the loop is killed there, as a kill -9 would: the next
# run continues where it stopped).
#
# Needs .whl/ (pyopencl wheels, cp312, as for dev/bench_gpu.sh) in the checkout. For `ray`,
# also Ray 2.60.0 (cp312) and the needs the machine may lack: its wheel (79 MB) is copied in
# parts where a transfer is limited to 64 MiB, `split -b 36M ray-2.60.0-cp312-*.whl
# ray.part-`: .whl-ray1/ holds ray.part-aa, .whl-ray2/ holds ray.part-ab, ray.part-ac and
# deps/ (msgpack, jsonschema and its needs, the aiohttp helpers, multidict<7, packaging,
# filelock; `pip download --no-deps` for cp312).
# Bring .whl-ray1 in one run and .whl-ray2 in the next: every run copies what it finds there
# to /tmp/rayparts, which the machine keeps between runs, and `ray` joins the parts.
# The recipe (issue 16; the CPU evidence is in docs/log.md): a uniform start (START:
# the seeded random tower with both heads' last layer zero, uniform policy, value 0.5: Leela
# Zero's all-zero start), so generation 1's self-play is random play; being random, it needs no
# search, so it runs at FIRST_VISITS (2) for FIRST_GAMES (600) games played to the end (no
# --max-moves cut: a random game scored at move 250 is noise); its candidate learns the value
# of a position from those outcomes and beats the start through its 16-visit search. Later
# generations play GAMES at VISITS, where the search with a value head improves the moves.
# Generation 1 plays with -d (autogtp's: the random games end by the passes the noise
# draws); later generations and `final` play without it (DUMBPASS=0: Leela Zero's engine pass
# rules, never a pass that loses on the board's score): with -d, weak networks pass early and
# the outcome is the komi, not the play (on the CPU, generation 1 against the start: 72-29
# with -d, 40-0 without).
# SIZE is 2x16: with it the run of 2026-11-26 promoted generations 1 and 3 and won the final
# 60-0; a 6x64 network's candidates after generation 1 all lost (docs/log.md).
# Env: EXTRA (more `leelaz zero` flags for `loop`, e.g. --max-moves 300), SIZE (2x16), SEED (1),
# START (uniform; random: peaked random heads), DUMBPASS (0; 1: autogtp's -d after gen 1),
# FIRST_VISITS (2), FIRST_GAMES (600),
# VISITS (16), MATCH_VISITS (16), GAMES (300 per generation after the first),
# WINDOW (1200 games), STEPS (800), BATCH (256), PARALLEL (24), WORKERS (14),
# GENERATIONS (2), MATCH_GAMES (400), FINAL_GAMES (60), RAY_GAMES (64 per worker),
# BACKEND (auto: OpenCL, tuned once before the loop; torch: cuDNN, no tuning),
# LR (the trainer's peak learning rate; empty: its default, 0.002), NOISE (1; 0: --no-noise),
# BUDGET (560 s for the whole run; `ray` skips a K that would start with under 90 s left),
# OUT (/tmp/zero-out).
# LOCAL=1 is the dry run on a machine without a GPU (--cpu-only, tiny settings from the env),
# e.g. LOCAL=1 SIZE=1x8 FIRST_GAMES=4 VISITS=2 MATCH_VISITS=2 GAMES=4 STEPS=4 BATCH=16 \
#      PARALLEL=2 WORKERS=2 GENERATIONS=2 MATCH_GAMES=4 FINAL_GAMES=2 RAY_GAMES=2 \
#      EXTRA="--max-moves 60" bash dev/zero_gpu.sh loop
set -u
MODE=${1:-}; shift || true
SIZE=${SIZE:-2x16}; SEED=${SEED:-1}; START=${START:-uniform}; DUMBPASS=${DUMBPASS:-0}
FIRST_VISITS=${FIRST_VISITS:-2}; FIRST_GAMES=${FIRST_GAMES:-600}
VISITS=${VISITS:-16}; MATCH_VISITS=${MATCH_VISITS:-16}
GAMES=${GAMES:-300}; WINDOW=${WINDOW:-1200}; STEPS=${STEPS:-800}; BATCH=${BATCH:-256}
PARALLEL=${PARALLEL:-24}; WORKERS=${WORKERS:-14}; GENERATIONS=${GENERATIONS:-2}
MATCH_GAMES=${MATCH_GAMES:-400}; FINAL_GAMES=${FINAL_GAMES:-60}; RAY_GAMES=${RAY_GAMES:-64}
BUDGET=${BUDGET:-560}; LOCAL=${LOCAL:-0}; BACKEND=${BACKEND:-auto}; NOISE=${NOISE:-1}; LR=${LR:-}
OUT=${OUT:-/tmp/zero-out}; mkdir -p "$OUT"
DIR=/tmp/zero-$SIZE-s$SEED${START:+-$START}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

if [ "$LOCAL" = 1 ]; then
  CPU=--cpu-only
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  CPU=
  mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
  export OCL_ICD_VENDORS=/tmp/icd
  # Installed once per warm machine (a second script started beside this one skips it).
  [ -d /tmp/site/pyopencl ] || python3 -m pip install -q --no-index --no-deps --no-compile \
    --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
  export HOME=/tmp/zerohome; mkdir -p $HOME  # the OpenCL tuning cache, kept while warm
  mkdir -p /tmp/rayparts && cp -r .whl-ray1/. .whl-ray2/. /tmp/rayparts/ 2>/dev/null  # kept while warm
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.cuda.is_available())'
  # Tune OpenCL once for this network size and batch (PARALLEL games x 6 leaves), so that the
  # WORKERS processes of the first phase find it cached instead of all tuning at once.
  # A tuning file from an earlier run (.zero-state/opencl_tuning.json) spares it.
  mkdir -p $HOME/.local/share/leelaz
  [ -f .zero-state/opencl_tuning.json ] && [ ! -f $HOME/.local/share/leelaz/opencl_tuning.json ] \
    && cp .zero-state/opencl_tuning.json $HOME/.local/share/leelaz/
  if [ "$MODE" != ray ] && [ "$BACKEND" != torch ] && [ ! -f $HOME/pretuned-$SIZE-$PARALLEL ]; then
    python3 -m leelaz weights random --blocks ${SIZE%x*} --filters ${SIZE#*x} -o /tmp/pretune.txt 2>/dev/null
    python3 -m leelaz selfplay -w /tmp/pretune.txt --games $PARALLEL --parallel $PARALLEL -v 1 \
      --out /tmp/pretune-games -q > /dev/null 2>&1 && touch $HOME/pretuned-$SIZE-$PARALLEL
    echo "OpenCL tuned for $SIZE, batch $((PARALLEL * 6)): $SECONDS s"
  fi
fi
ZERO="python3 -m leelaz zero"; BACKFLAG="--backend $BACKEND"
if [ "$DUMBPASS" = 1 ]; then PASSFLAG=--dumbpass; else PASSFLAG=--no-dumbpass; fi

save_state() {  # a run folder without its games, to $OUT/<its name>.tar.gz (+ status.txt/png)
  local d=$1 name=$(basename "$1")
  $ZERO "$d" --status -q > "$d/status.txt" 2>&1; cat "$d/status.txt"
  # Of the networks only those a resumed run needs: the start, the best and the newest
  # generation's candidate (its gate may be in progress); rejected ones would push the tar
  # past the 16 MiB a returned file may have (6x64: 3 MB each).
  local nets=$(python3 - "$d" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
shas = {json.load(open(f"{d}/run.json"))["start"], open(f"{d}/best").read().strip()}
records = sorted(glob.glob(f"{d}/generations/*.json"))
if records:
    shas.add(json.load(open(records[-1])).get("train", {}).get("candidate", ""))
print(" ".join(f"{os.path.basename(d)}/networks/{s}.gz" for s in sorted(shas)
               if s and os.path.exists(f"{d}/networks/{s}.gz")))
PY
)
  tar -czf "$OUT/$name.tar.gz" -C "$(dirname "$d")" $nets \
    $(cd "$(dirname "$d")" && ls -d "$name"/{run.json,best,generations,log.txt,status.txt,status.png} 2>/dev/null)
  cp "$d/status.txt" "$OUT/$name-status.txt"; cp "$d/status.png" "$OUT/$name-status.png" 2>/dev/null
  cp $HOME/.local/share/leelaz/opencl_tuning.json "$OUT/" 2>/dev/null  # for .zero-state/
}

restore_state() {  # a cold machine: start again from a carried .zero-state/<name>.tar.gz
  local d=$1 from=.zero-state/$(basename "$1").tar.gz
  if [ ! -f "$d/run.json" ] && [ -f "$from" ]; then
    mkdir -p "$(dirname "$d")" && tar -xzf "$from" -C "$(dirname "$d")" && chmod -R u+w "$d" && echo "restored $d from $from"
  fi
}

case "$MODE" in
  loop)
    restore_state $DIR
    # Generation 1 (FIRST_GAMES at FIRST_VISITS), then the rest (GAMES at VISITS), each
    # within what is left of BUDGET; a finished generation 1 makes the first command a no-op.
    for PHASE in first rest; do
      if [ $PHASE = first ]; then G=1 V=$FIRST_VISITS N=$FIRST_GAMES P=--dumbpass; else
        G=$GENERATIONS V=$VISITS N=$GAMES P=$PASSFLAG; fi
      LEFT=$((BUDGET - SECONDS))
      [ $LEFT -gt 10 ] || break
      timeout -s KILL $LEFT $ZERO $DIR --size $SIZE --seed $SEED ${START:+--start $START} \
        -v $V --match-visits $MATCH_VISITS --games-per-gen $N --window $WINDOW \
        --steps $STEPS --batch $BATCH --parallel $PARALLEL --workers $WORKERS \
        --generations $G --match-games $MATCH_GAMES $P $BACKFLAG ${LR:+--lr $LR} \
        $([ "$NOISE" = 1 ] || echo --no-noise) ${EXTRA:-} $CPU -q
      RC=$?
      echo "$PHASE: exit status $RC (137: stopped at BUDGET; run again to continue)"
      [ $RC = 0 ] || break
    done
    save_state $DIR ;;
  final)
    restore_state $DIR
    # WORKERS processes, each a shard of the one match (play_match's shard=(s, W)), as the
    # loop's gating runs: one process alone is limited by its Python thread.
    for S in $(seq 0 $((WORKERS - 1))); do
      timeout -s KILL $((BUDGET - SECONDS)) python3 - "$DIR" "$FINAL_GAMES" "$MATCH_VISITS" "$PARALLEL" \
          "$LOCAL" "$S" "$WORKERS" "${MAX_MOVES:-0}" "$DUMBPASS" "$BACKEND" <<'EOF' &
import json, os, sys
from leelaz.selfplay import play_match
run, backend = sys.argv[1], sys.argv[-1]
games, visits, parallel, local, s, w, max_moves, dumbpass = map(int, sys.argv[2:-1])
best = open(os.path.join(run, "best")).read().strip()
start = json.load(open(os.path.join(run, "run.json")))["start"]
net = lambda sha: os.path.join(run, "networks", sha + ".gz")
play_match(net(best), net(start), os.path.join(run, "final-vs-start"), max_games=games,
           sprt=False, visits=visits, parallel=parallel, seed=7, cpu_only=bool(local),
           progress=False, shard=(s, w), max_moves=max_moves or None, dumbpass=bool(dumbpass),
           network_backend=backend)
EOF
    done
    wait
    python3 - "$DIR" <<'EOF' | tee -a $OUT/final.txt
import json, os, sys
path = os.path.join(sys.argv[1], "final-vs-start", "result.json")
if not os.path.exists(path):
    sys.exit("final: no result yet (the match stopped at BUDGET); run `final` again: it resumes")
r = json.load(open(path))
best = open(os.path.join(sys.argv[1], "best")).read().strip()
start = json.load(open(os.path.join(sys.argv[1], "run.json")))["start"]
print(f"best {best[:12]} vs start {start[:12]}: {r['wins']}-{r['losses']} of {r['games']} "
      f"games, score {r['wins'] / max(r['games'], 1):.1%} (need >= 95%)")
EOF
    cp "$DIR/final-vs-start/result.json" "$OUT/final-vs-start.json" 2>/dev/null ;;
  ray)
    if [ "$LOCAL" != 1 ] && ! python3 -c 'import ray' 2>/dev/null; then
      if [ -f /tmp/rayparts/ray.part-aa ] && [ -f /tmp/rayparts/ray.part-ac ]; then
        cat /tmp/rayparts/ray.part-* > /tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
          --target /tmp/site /tmp/ray-*.whl /tmp/rayparts/deps/*.whl || exit 1
      else
        echo "no Ray: bring .whl-ray1/ and .whl-ray2/ (see the header)"; exit 1
      fi
    fi
    for K in ${*:-1 4 8}; do
      R=/tmp/zero-ray$K; LEFT=$((BUDGET - SECONDS))
      if [ $LEFT -lt 90 ]; then
        echo "workers $K: skipped, ${LEFT}s left (run it again later)"; continue
      fi
      timeout -s KILL $LEFT $ZERO $R --size $SIZE --seed $SEED -v $VISITS \
        --games-per-gen $((RAY_GAMES * K)) --parallel $PARALLEL --ray auto --workers $K \
        --selfplay-only $BACKFLAG $CPU -q 2>&1 | grep -v WARNING
      grep "self-play games" $R/log.txt | tail -1 | sed "s/^/workers $K: /" | tee -a $OUT/ray.txt
      save_state $R
    done ;;
  *) echo "usage: $0 loop|final|ray [K...]" >&2; exit 2 ;;
esac
