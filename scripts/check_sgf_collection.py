#!/usr/bin/env python3
"""Parse every game of SGF collections and report how many parse, how many are skipped and why.

Usage:
    python scripts/check_sgf_collection.py [PATHS...] [--jobs 2] [--replay] [--limit N]

PATHS are .sgf/.sgf.gz files or folders of them (default: ../shared/data/tygem-9d). Each game
goes through leelaz.game.sgf (the parser) and the root and main-line checks of
leelaz.game.sgf_replay (GM, SZ, points, setup); with --replay the whole main line is also
played on the board, as loadsgf does (about 10 ms a game). Games are counted as:
  ok                   loads (what loadsgf accepts)
  skipped: <reason>    the SgfError, with numbers and bracketed values generalised
and, among the games that load, what dump_supervised would still leave out (no main-line move,
RE missing, a draw or void, or a win on time).
Uses the public API only. Files are shared among --jobs worker processes.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

from leelaz.game.sgf import SgfError, SgfGame, games_in_text, parse_game, read_text
from leelaz.game.sgf_replay import mainline_moves, start_state, state_from_sgf, winner

DEFAULT_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "tygem-9d"


def reason(error: SgfError) -> str:
    """The kind of an error: its message without file, game, places, values and numbers."""
    text = str(error)
    text = re.sub(r"^.*?: game \d+: ", "", text)
    text = re.sub(r"^[^:]*\.sgf(\.gz)?: ", "", text)
    text = re.sub(r" at (line \d+, )?offset \d+: .*$", "", text)
    text = re.sub(r"\[[^\]]*\]", "[..]", text)
    return re.sub(r"\d+", "N", text)


def check_game(game: SgfGame, replay: bool) -> tuple[str, str | None]:
    """('ok' or 'skipped: why', what dump_supervised would leave out or None)."""
    try:
        if replay:
            state_from_sgf(game)
        else:
            start_state(game)
        moves = mainline_moves(game)
    except SgfError as exc:
        return "skipped: " + reason(exc), None
    if not moves:
        return "ok", "no main-line move"
    result = game.root.get("RE")
    if result is None:
        return "ok", "no RE"
    if winner(game) is None:
        return "ok", "RE with Time" if "Time" in result else "RE not B+/W+"
    return "ok", None


def check_file(args: tuple[str, bool, int]) -> tuple[str, Counter, Counter, dict[str, str]]:
    path, replay, limit = args
    outcomes: Counter = Counter()
    supervised: Counter = Counter()
    examples: dict[str, str] = {}
    try:
        text = read_text(path)
    except SgfError as exc:
        outcomes["skipped: unreadable file"] += 1
        examples["skipped: unreadable file"] = str(exc)
        return path, outcomes, supervised, examples
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if limit:   # the first lines: exactly `limit` games in one-game-per-line collections
        lines = lines[:limit]
    if all(ln.lstrip().startswith("(") for ln in lines):
        items = _line_games(lines, path)   # one game per line: one game in memory at a time
    else:
        items = iter(games_in_text("\n".join(lines), path))
    for item in items:
        if isinstance(item, SgfError):
            outcome, left_out = "skipped: " + reason(item), None
            examples.setdefault(outcome, str(item))
        else:
            outcome, left_out = check_game(item, replay)
            if outcome != "ok":
                examples.setdefault(outcome, item.source)
        outcomes[outcome] += 1
        if left_out:
            supervised[left_out] += 1
    return path, outcomes, supervised, examples


def _line_games(lines: list[str], path: str):
    """Each line parsed as one game, or its SgfError (a line that is not exactly one
    whole game, such as a truncated one, is an error here rather than dropped)."""
    for i, line in enumerate(lines):
        source = f"{path}: game {i + 1}"
        try:
            yield parse_game(line, source, whole=True)
        except SgfError as exc:
            yield exc


def collection_files(paths: list[str]) -> list[str]:
    files: list[str] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(str(f) for f in p.iterdir() if f.name.endswith((".sgf", ".sgf.gz")))
        else:
            files.append(str(p))
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[str(DEFAULT_DIR)])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--replay", action="store_true",
                        help="also play every main line on the board (slow)")
    parser.add_argument("--limit", type=int, default=0,
                        help="only the first N lines of each file (0: all)")
    args = parser.parse_args(argv)
    files = collection_files(args.paths)
    if not files:
        print("no SGF files found", file=sys.stderr)
        return 2
    start = time.monotonic()
    total: Counter = Counter()
    supervised: Counter = Counter()
    examples: dict[str, str] = {}
    work = [(f, args.replay, args.limit) for f in files]
    with Pool(args.jobs) as pool:
        for path, outcomes, left_out, ex in pool.imap_unordered(check_file, work):
            games = sum(outcomes.values())
            print(f"{Path(path).name}: {games} games, {outcomes['ok']} ok", flush=True)
            total += outcomes
            supervised += left_out
            for k, v in ex.items():
                examples.setdefault(k, v)
    games = sum(total.values())
    print(f"\n{len(files)} files, {games} games in {time.monotonic() - start:.0f} s"
          f" ({'parse, root and main-line checks' + (', replay' if args.replay else '')})")
    print(f"  ok (loads): {total['ok']}")
    for outcome, n in sorted(total.items(), key=lambda kv: -kv[1]):
        if outcome != "ok":
            print(f"  {outcome}: {n}    e.g. {examples.get(outcome, '')}")
    kept = total["ok"] - sum(supervised.values())
    print(f"  of the games that load, dump_supervised would use {kept}; it would leave out:")
    for why, n in sorted(supervised.items(), key=lambda kv: -kv[1]):
        print(f"    {why}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
