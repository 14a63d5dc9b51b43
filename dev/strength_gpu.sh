#!/usr/bin/env bash
# On a CUDA machine, from the repo root: a strength match of leelaz
# against C++ Leela Zero 0.17 or GNU Go 3.8, many games at once (leelaz match --jobs),
# within one run of about 10 minutes (no new game after LIMIT s; the match is cut at HARD s).
# A longer match is split: run again with FIRST=<games so far> and combine the
# SGF tars with `leelaz match --tally DIR...`.
#
#   bash dev/strength_gpu.sh parity   ours -v 200 -t 1 vs LZ -v 200 -t 1 --batchsize 1
#   bash dev/strength_gpu.sh batch    ours -v 200 (default threads/batch) vs LZ -t 1
#   bash dev/strength_gpu.sh gnugo    ours -v 400 vs GNU Go --level 10, komi 7.5
#   bash dev/strength_gpu.sh handicap ours as White giving STONES (5) to GNU Go --level 10,
#                                     komi 0.5, -v 800; DYN=1: with --handicap -r 0 --target-komi 0
#   bash dev/strength_gpu.sh nonslack even games vs GNU Go --level 10 --never-resign, komi 7.5,
#                                     -v 800 -r 0, colours alternating; DYN=1: with --nonslack
#                                     (the match prints the mean margin with its interval)
#   bash dev/strength_gpu.sh equaltime ours vs LZ, both at their defaults (no -v), -b 0, the
#                                     same clock: time_settings $CLOCK ("0 1 2", 0.5 s a move)
#
# handicap and nonslack are scored by GNU Go (REFEREE, `final_score` with --chinese-rules:
# dead stones removed, White gets the komi and no point per handicap stone), since margins
# and close handicap games depend on dead stones that Tromp-Taylor counts as alive. At 800
# visits a dynamic-komi search collects the 200 positions of each colour an adjustment needs
# (--adj-positions) within the first half of its visits; at 400 it rarely would.
#
# Needs .whl/ (pyopencl wheels, cp312), .lzpack/ (dev/pack_reference_gpu.sh) and .gnugo/
# (dev/pack_gnugo.sh) in the checkout. Env: GAMES (100/100/50), JOBS (14), FIRST (0), LIMIT (480),
# HARD (560), VISITS (200/200/400/800/800), STONES (5), DYN (0), EXTRA1 / EXTRA2 (more args for ours / the reference),
# CODE (a folder with another checkout of leelaz, e.g. `git worktree add .old REV`, for ours),
# OPENING (args for both LZ engines, default "-m 10 --precision single"; ours only "-m 10"
# against GNU Go), OUT (/tmp/strength-out),
# SPRT=1 (stop when SPRT(0,35) decides; off by default so that every run plays its games:
# `leelaz match --tally DIR... --sprt` gives the LLR of the combined runs).
# LOCAL=1 is the dry run for a machine without a GPU: --cpu-only engines, /usr/games binaries,
# e.g. LOCAL=1 VISITS=2 GAMES=2 JOBS=2 bash dev/strength_gpu.sh parity
# Results: $OUT/<mode>-<FIRST>.txt (the games and the summary) and $OUT/<mode>-<FIRST>.tar.gz
# (the SGFs, game-NNN.sgf by absolute number).
set -u
MODE=${1:-}
case "$MODE" in
  parity|batch) GAMES=${GAMES:-100}; VISITS=${VISITS:-200} ;;
  gnugo) GAMES=${GAMES:-50}; VISITS=${VISITS:-400} ;;
  handicap|nonslack) GAMES=${GAMES:-100}; VISITS=${VISITS:-800} ;;
  equaltime) GAMES=${GAMES:-60}; VISITS=0 ;;
  *) echo "usage: $0 parity|batch|gnugo|handicap|nonslack|equaltime" >&2; exit 2 ;;
esac
JOBS=${JOBS:-14}; FIRST=${FIRST:-0}; LIMIT=${LIMIT:-480}; HARD=${HARD:-560}
EXTRA1=${EXTRA1:-}; EXTRA2=${EXTRA2:-}; LOCAL=${LOCAL:-0}; SPRT=${SPRT:-0}
# Without -m the games are not independent: at 200 visits both engines replay the same few
# games (a first 100-game run gave 28 distinct move sequences), random symmetries notwithstanding.
# Both sides play the first 10 moves in proportion to visits, as LZ's self-play does, and
# both run fp32, so that precision is not a difference between them.
OPENING=${OPENING:--m 10 --precision single}
OUT=${OUT:-/tmp/strength-out}; mkdir -p "$OUT"
NET=$PWD/weights/leelaz-6x128.txt.gz
STONES=${STONES:-5}; DYN=${DYN:-0}
TAG=$MODE$([ "$DYN" = 1 ] && echo -dyn)-$FIRST
W=/tmp/match-$TAG; rm -rf "$W"; mkdir -p "$W/sgf" "$W/logs"  # two matches may run side by side
REPORT=$OUT/$TAG.txt
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

if [ "$LOCAL" = 1 ]; then
  CPU=--cpu-only
  LZ="/usr/games/leelaz --cpu-only"
  GNUGO=/usr/games/gnugo
else
  CPU=
  mkdir -p /tmp/icd && echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
  export OCL_ICD_VENDORS=/tmp/icd
  # Installed once per warm machine (a second script started beside this one skips it).
  [ -d /tmp/site/pyopencl ] || python3 -m pip install -q --no-index --no-deps --no-compile \
    --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
  # Leela Zero finds its OpenCL tuning under $HOME; ours caches its own there too.
  export HOME=/tmp/strengthhome; mkdir -p $HOME/.local/share/leela-zero
  cp .lzpack/leelaz_opencl_tuning $HOME/.local/share/leela-zero/ 2>/dev/null
  # Ours: a file from an earlier run ($OUT/opencl_tuning.json, put into .gnugo/) spares the
  # tuning on a cold machine.
  mkdir -p $HOME/.local/share/leelaz
  [ -f $HOME/.local/share/leelaz/opencl_tuning.json ] || cp .gnugo/opencl_tuning.json \
    $HOME/.local/share/leelaz/ 2>/dev/null
  LZ="env LD_LIBRARY_PATH=$PWD/.lzpack/lib $PWD/.lzpack/leelaz"
  GNUGO="env LD_LIBRARY_PATH=$PWD/.gnugo/lib $PWD/.gnugo/bin/gnugo"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
fi

case "$MODE" in
  parity) OURS_ARGS="-t 1 $OPENING"; NAME2=lz-0.17
          ENGINE2="$LZ -g -w $NET --noponder -v $VISITS -t 1 --batchsize 1 $OPENING $EXTRA2" ;;
  batch)  OURS_ARGS="$OPENING"; NAME2=lz-0.17
          ENGINE2="$LZ -g -w $NET --noponder -v $VISITS -t 1 --batchsize 1 $OPENING $EXTRA2" ;;
  gnugo)  OURS_ARGS="${OPENING%% --precision*}"; NAME2=gnugo-3.8
          ENGINE2="$GNUGO --mode gtp --level 10 --chinese-rules" ;;
  handicap) OURS_ARGS="${OPENING%% --precision*}"; NAME2=gnugo-3.8
          [ "$DYN" = 1 ] && OURS_ARGS="$OURS_ARGS --handicap -r 0 --target-komi 0"
          ENGINE2="$GNUGO --mode gtp --level 10 --chinese-rules" ;;
  # Margins need games played to the end: GNU Go resigns hopeless games unless told not to,
  # and neither side may resign (-r 0 in both arms, so that --nonslack is the one difference).
  nonslack) OURS_ARGS="${OPENING%% --precision*} -r 0"; NAME2=gnugo-3.8
          [ "$DYN" = 1 ] && OURS_ARGS="$OURS_ARGS --nonslack"
          ENGINE2="$GNUGO --mode gtp --level 10 --chinese-rules --never-resign" ;;
  equaltime) OURS_ARGS="${OPENING%% --precision*} -b 0"; NAME2=lz-0.17
          ENGINE2="$LZ -g -w $NET --noponder ${OPENING%% --precision*} -b 0 $EXTRA2" ;;
esac
CLOCK=${CLOCK:-0 1 2}; CLOCK_ARGS=()
[ "$MODE" = equaltime ] && CLOCK_ARGS=(--time-settings "$CLOCK")
case "$MODE" in
  equaltime) KOMI=7.5; GAME_ARGS=""; REFEREE=${REFEREE:-} ;;
  handicap) KOMI=0.5; GAME_ARGS="--handicap $STONES --engine1-colour white"
            REFEREE=${REFEREE:-$GNUGO --mode gtp --chinese-rules} ;;
  nonslack) KOMI=7.5; GAME_ARGS=""; REFEREE=${REFEREE:-$GNUGO --mode gtp --chinese-rules} ;;
  *) KOMI=7.5; GAME_ARGS=""; REFEREE=${REFEREE:-} ;;
esac
OURS_ARGS="$CPU $OURS_ARGS $EXTRA1"
# CODE: engine1 runs the leelaz of that folder (a git worktree of another commit, carried
# along) instead of this checkout's: two commits compared in the same run.
OURS="python3 -m leelaz"
[ -n "${CODE:-}" ] && OURS="env PYTHONSAFEPATH=1 PYTHONPATH=$PWD/$CODE${PYTHONPATH:+:$PYTHONPATH} $OURS"
ENGINE1="$OURS -g -w $NET --noponder $([ "$VISITS" = 0 ] || echo -v $VISITS) $OURS_ARGS"

{
  echo "== $TAG: games $((FIRST + 1))..$((FIRST + GAMES)), jobs $JOBS, limit ${LIMIT}s, hard ${HARD}s"
  echo "engine1 (leelaz): $ENGINE1"
  echo "engine2 ($NAME2): $ENGINE2"
} | tee "$REPORT"
if [ "$LOCAL" != 1 ]; then
  # Fill our OpenCL tuner cache once, so that parallel engines start without tuning.
  $OURS --tune-only -w "$NET" $OURS_ARGS > "$W/logs/tune.log" 2>&1
  echo "tune-only: rc $?, $SECONDS s" | tee -a "$REPORT"
fi

# The match gets SIGINT at HARD s: it stops recording, prints its summary and kills the
# engines (they run in their own sessions); unfinished games are lost.
timeout -s INT -k 20 $((HARD - SECONDS)) python3 -m leelaz match \
  --engine1 "$ENGINE1" --engine2 "$ENGINE2" --name1 leelaz --name2 "$NAME2" \
  --games "$GAMES" --first-game "$FIRST" --jobs "$JOBS" --time-limit "$(( LIMIT > SECONDS + 1 ? LIMIT - SECONDS : 1 ))" \
  --komi "$KOMI" $GAME_ARGS --referee "$REFEREE" \
  ${CLOCK_ARGS[@]+"${CLOCK_ARGS[@]}"} \
  --sgf-dir "$W/sgf" --log-dir "$W/logs" $([ "$SPRT" = 1 ] && echo --sprt) 2>&1 | tee -a "$REPORT"
echo "match: rc ${PIPESTATUS[0]}, $SECONDS s" | tee -a "$REPORT"

# Same moves in two games would mean the engines are deterministic and the games not
# independent samples.
python3 - "$W/sgf" <<'PY' | tee -a "$REPORT"
import glob, re, sys
games = [re.sub(r"^\(;[^;]*", "", open(p).read()) for p in glob.glob(sys.argv[1] + "/game-*.sgf")]
print(f"distinct move sequences: {len(set(games))} of {len(games)} games")
PY
# What each engine searched a move (their stderr's "N visits, M nodes, P playouts" lines),
# and our network server's mean batch: what equal time meant in these games.
python3 - "$W/logs" "$NAME2" <<'PY' | tee -a "$REPORT"
import os, re, sys
for log, name in (("engine1.log", "leelaz"), ("engine2.log", sys.argv[2])):
    path = os.path.join(sys.argv[1], log)
    text = open(path, errors="replace").read() if os.path.exists(path) else ""
    rows = [(int(v), int(p)) for v, p in re.findall(r"^(\d+) visits, \d+ nodes, (\d+) playouts", text, re.M)]
    if rows:
        print(f"{name}: {len(rows)} moves, mean {sum(v for v, _ in rows) / len(rows):,.0f} visits "
              f"and {sum(p for _, p in rows) / len(rows):,.0f} playouts a move")
    for line in re.findall(r"^Network server \(.*$", text, re.M)[-3:]:
        print(f"{name}: {line}")
PY
grep -hiE "error|traceback|exception" "$W"/logs/*.log 2>/dev/null | sort | uniq -c | sort -rn \
  | head -5 | sed 's/^/log: /' | tee -a "$REPORT"
tar -C "$W" -czf "$OUT/$TAG.tar.gz" sgf
[ "$LOCAL" = 1 ] || cp $HOME/.local/share/leelaz/opencl_tuning.json "$OUT/" 2>/dev/null
echo "== wrote $REPORT and $OUT/$TAG.tar.gz ($(ls "$W"/sgf | wc -l) SGFs) in $SECONDS s"
