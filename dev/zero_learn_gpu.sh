#!/usr/bin/env bash
# On a CUDA machine, from the repo root: the from-scratch learning run, resumed call after call.
#
#   BUDGET=480 bash dev/zero_learn_gpu.sh        play, train and promote until BUDGET seconds,
#                                                then pack the run's state into $OUT
#   LADDER=600 BUDGET=... bash dev/zero_learn_gpu.sh   the same, but stop self-play LADDER
#                                                seconds before BUDGET and play the fixed ladder
#                                                (resumable pair by pair) in the time left
#
# The recipe (docs/performance.md, "The Zero loop"): a 6x64 network from Leela Zero's all-zero
# start (uniform policy, value 0.5).
# - Generation 1 is random play: 8 visits with root noise, every move recorded, forced playouts
#   pruned. The pruning drops the first descent's single visit to the first child (all priors
#   tie on this start); at 2 visits without it every target was that one corner point and the
#   next networks filled the board in scan order. GEN1_GAMES is small and the window's minimum
#   (WINDOW_MIN positions) too, so that these 700-move random games leave the window soon.
# - Later generations: 100 visits on a quarter of the moves (recorded, with noise and forced
#   playouts, k = 2), 16 on the rest (not recorded); resignation only once the run's no-resign
#   games show it is safe; no gate (every candidate plays self-play; the fixed ladder, `leelaz
#   zero DIR --ladder`, measures progress).
# - One continuing training (DIR/train/run), each new position drawn about REUSE times.
# - The fixed validation set is the bundled 2011-12 9-dan games.
#
# State: DIR (/tmp/z6x64) lives on the machine and survives between calls only while it stays
# warm. Each call packs what a resumed run needs (records, settings, the networks in use, the
# trainer's state, the newest generation's games) as $OUT/z6x64.tar.gz.part-* (15 MB parts:
# $OUT brings back 16 MB a file). Put those parts into the checkout's .zero-state/ and carry
# .zero-state: a cold machine restores DIR from them (the window then holds only the two newest
# generations' games and what follows; more would not fit the 64 MB a call carries).
# Carry .whl/ (cp312 wheels of pyopencl, pytools, platformdirs, siphash24, click, tqdm,
# typing_extensions: the GPU image has torch and numpy).
# Env: BUDGET (480 s), DIR (/tmp/z6x64), SIZE (6x64), WORKERS (8), PARALLEL (96), VISITS (100),
# CHEAP (16), SHARE (0.25), GAMES (256), REUSE (2), GEN1_GAMES (128), WINDOW_MIN (40000),
# LADDER (0), LADDER_VISITS (100), LADDER_GAMES (20), LADDER_LEVELS (1,10). Carry .gnugo/
# (dev/pack_gnugo.sh) for the ladder's GNU Go rungs.
set -u
BUDGET=${BUDGET:-480}; DIR=${DIR:-/tmp/z6x64}; SIZE=${SIZE:-6x64}; WORKERS=${WORKERS:-8}
PARALLEL=${PARALLEL:-96}; VISITS=${VISITS:-100}; CHEAP=${CHEAP:-16}; SHARE=${SHARE:-0.25}
GAMES=${GAMES:-256}; REUSE=${REUSE:-2}; OUT=${OUT:-/tmp/zero-out}; mkdir -p "$OUT"
LADDER=${LADDER:-0}; LADDER_VISITS=${LADDER_VISITS:-100}; LADDER_GAMES=${LADDER_GAMES:-20}
LADDER_LEVELS=${LADDER_LEVELS:-1,10}; GEN1_GAMES=${GEN1_GAMES:-128}; WINDOW_MIN=${WINDOW_MIN:-40000}
NAME=$(basename "$DIR")
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
if [ ! -f "$DIR/run.json" ] && ls .zero-state/"$NAME".tar.gz.part-* >/dev/null 2>&1; then
  mkdir -p "$(dirname "$DIR")"
  cat .zero-state/"$NAME".tar.gz.part-* | tar -xzf - -C "$(dirname "$DIR")" && echo "restored $DIR"
fi
nvidia-smi --query-gpu=name --format=csv,noheader
ZERO="python3 -m leelaz zero $DIR --size $SIZE --start uniform --seed 1 --backend torch
  --workers $WORKERS --parallel $PARALLEL --batch 256 --no-dumbpass --gate none --reuse $REUSE
  --window-min $WINDOW_MIN --val-sgf tests/fixtures/tygem-9d/tygem-9d-2011-12.sgf.gz -q"
PLAY_END=$((BUDGET - LADDER))
if [ ! -f "$DIR/generations/0002.json" ]; then  # generation 1: random play
  timeout -s KILL $((PLAY_END - SECONDS)) $ZERO -v 8 --full-share 1 --cheap-visits 0 \
    --forced-playouts 2 --games-per-gen "$GEN1_GAMES" --generations 1 --reuse 1
  echo "generation 1: exit $? at ${SECONDS} s"
fi
LEFT=$((PLAY_END - SECONDS))
if [ $LEFT -gt 30 ]; then
  timeout -s KILL $LEFT $ZERO -v "$VISITS" --full-share "$SHARE" --cheap-visits "$CHEAP" \
    --forced-playouts 2 --checked-resign --games-per-gen "$GAMES"
  echo "later generations: exit $? at ${SECONDS} s (137: stopped at BUDGET; run again)"
fi
LEFT=$((BUDGET - SECONDS))
if [ "$LADDER" -gt 0 ] && [ $LEFT -gt 30 ]; then
  [ -x .gnugo/bin/gnugo ] && GNUGO="--gnugo $PWD/.gnugo/bin/gnugo" || GNUGO=""
  LD_LIBRARY_PATH=$PWD/.gnugo/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout -s KILL $LEFT python3 -m leelaz zero "$DIR" --ladder --ladder-visits "$LADDER_VISITS" \
    --ladder-games "$LADDER_GAMES" --gnugo-levels "$LADDER_LEVELS" --ladder-jobs "$WORKERS" $GNUGO -q
  echo "ladder: exit $? at ${SECONDS} s (137: stopped at BUDGET; run again)"
fi
python3 -m leelaz zero "$DIR" --status 2>&1 | tail -30
tail -20 "$DIR/log.txt"
(cd "$(dirname "$DIR")" && python3 - "$NAME" <<'PY' > /tmp/keep.txt
import glob, json, os, sys
d = sys.argv[1]
keep = ["run.json", "best", "settings.json", "generations", "log.txt", "train/run", "ladder"]
shas = {json.load(open(f"{d}/run.json"))["start"], open(f"{d}/best").read().strip()}
records = sorted(glob.glob(f"{d}/generations/*.json"))
for path in records:
    shas.add(json.load(open(path)).get("train", {}).get("candidate", ""))
keep += [f"networks/{s}.gz" for s in sorted(shas) if s]
for path in records[-2:]:  # the two newest generations' games: a cold restore's window
    keep.append(json.load(open(path)).get("selfplay", {}).get("dir", "-"))
print("\n".join(f"{d}/{k}" for k in keep if os.path.exists(f"{d}/{k}")))
PY
tar -czf - -T /tmp/keep.txt | split -b 15M - "$OUT/$NAME.tar.gz.part-")
ls -la "$OUT"
