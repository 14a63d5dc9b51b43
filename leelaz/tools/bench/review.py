"""`leelaz bench review`: `leelaz review` of several games against the same work done the
way GoReviewPartner drives Leela Zero 0.17 (one process, position after position).

Owns: that measurement. Imports: gtp.client, review.games (reading the games), tools.bench.common.

Ours: `leelaz review GAMES -v N` as a subprocess, start-up and writing included, every
position of every game searched with N visits, the searches in flight batched together; by
default each game's tree kept from one position to the next (review/analyse.py), as the
reference keeps its own, so both do the same work; `--ours-args "--cpu-only --fresh"`
measures the fresh-tree mode (every position from N new visits).
The reference: one Leela Zero process (`--gtp --noponder -v N --timemanage off`, as
GoReviewPartner starts it but with a visit cap instead of its clock), for each game
`clear_board`, `komi`, the handicap stones, then at each position `genmove`, `undo` and the
game's move (GoReviewPartner's own loop, leela_zero_analysis.py), and `genmove` at the last
position; its start is timed too. The reference reuses its tree from one position to the
next (genmove after play; the run says how many new playouts a position it made), as ours
does by default; against `--fresh` the comparison leans its way. Both get the same
network file and games; the figure is positions per second and the ratio of the wall times.
Each side's CPU seconds (its processes' user + system time) are shown too: on a machine
shared with other work the wall times follow the others' load, so a comparison is made of
alternating runs (the lines say the load average), and the CPU seconds say what each side
itself spent.
"""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import click

from leelaz.tools import ToolError
from leelaz.tools.bench.common import (CONTEXT, load_line, network_file, ours_command,
                                       reference_binary, say, split_command, table)

GAME = Path(__file__).resolve().parent / "game-9d.sgf"


def _games(source: str, count: int, folder: Path) -> list[Path]:
    """The first `count` games of `source` (an SGF file or collection, .gz too, or a folder),
    one file each in `folder`."""
    from leelaz.game.sgf import format_game
    from leelaz.review.games import InputProblem, collect_games

    problems: list[str] = []
    try:
        games, _ = collect_games([Path(source)], problems.append)
    except InputProblem as exc:
        raise ToolError(str(exc)) from None
    if len(games) < count:
        raise ToolError(f"{source}: {len(games)} usable games, {count} asked for")
    paths = []
    for i, game in enumerate(games[:count]):
        path = folder / f"game{i + 1:02d}.sgf"
        path.write_text(format_game(game.game))
        paths.append(path)
    return paths


def _children_cpu() -> float:
    """User + system seconds of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


#: Leela Zero's line after each search (src/UCTSearch.cpp): "400 visits, 141562 nodes, 332
#: playouts, 119 n/s"; the playouts are the search's new visits.
PLAYOUTS_LINE = re.compile(r"^\d+ visits, \d+ nodes, (\d+) playouts", re.M)


def _reference_review(argv: list[str], games: list[Path],
                      timeout: float) -> tuple[float, int, int]:
    """GoReviewPartner's loop on one Leela Zero process: (seconds, positions searched,
    new playouts as its stderr counts them; the rest of each search's visits it kept from
    the search of the position before)."""
    from leelaz.game.coords import BLACK, gtp_vertex
    from leelaz.gtp.client import GtpClient, GtpFailure
    from leelaz.review.games import collect_games

    reviews, _ = collect_games(games, lambda line: None)
    began = time.monotonic()
    positions = 0
    stderr: list[str] = []
    try:
        with GtpClient(argv, name="leelaz", stderr="capture") as lz:
            for review in reviews:
                start = review.positions[0]
                lz.ask("clear_board", timeout)
                lz.ask(f"komi {start.komi}", timeout)
                stones = [v for v in range(len(start.board.square))
                          if start.board.square[v] == BLACK]
                if stones:
                    lz.ask("set_free_handicap " + " ".join(gtp_vertex(v) for v in stones),
                           timeout)
                for move in review.moves:
                    color = "bw"[move.color]
                    lz.ask(f"genmove {color}", timeout)
                    lz.ask("undo", timeout)
                    lz.ask(f"play {color} {gtp_vertex(move.vertex)}", timeout)
                    stderr.append(lz.take_stderr())
                    positions += 1
                last = review.positions[-1]
                lz.ask(f"genmove {'bw'[last.to_move]}", timeout)
                stderr.append(lz.take_stderr())
                positions += 1
            lz.ask("quit", timeout)
            stderr.append(lz.take_stderr())
    except (OSError, GtpFailure) as exc:
        raise ToolError(f"{argv[0]}: {exc}") from None
    playouts = sum(int(n) for n in PLAYOUTS_LINE.findall("".join(stderr)))
    return time.monotonic() - began, positions, playouts


@click.command("review", context_settings=CONTEXT)
@click.option("--sgf", "source", default=str(GAME), show_default=True, metavar="FILE|DIR",
              help="The games (a collection, .gz too, or a folder of SGF files).")
@click.option("--games", type=click.IntRange(1, None), default=1, show_default=True,
              help="How many of its games.")
@click.option("-w", "--weights", default="6x128", show_default=True, metavar="FILE|BxF",
              help="The network both load (BxF: a seeded random net).")
@click.option("-v", "--visits", type=click.IntRange(1, None), default=400, show_default=True,
              help="Visits per position.")
@click.option("--ours", default=None, metavar="CMD",
              help="Our command line before `review` (default: this Python's -m leelaz).")
@click.option("--reference", default=None, metavar="CMD",
              help="The reference's command line before its flags (default: the installed "
                   "Leela Zero 0.17; 'none' to measure ours only).")
@click.option("--ours-args", default="--cpu-only", show_default=True,
              help="More flags for `leelaz review`.")
@click.option("--ref-args", default="--cpu-only", show_default=True,
              help="More flags for the reference.")
@click.option("--timeout", type=click.FloatRange(1, None), default=3600, show_default=True,
              help="Seconds either engine may take to answer one command before the run "
                   "stops.")
def command(source, games, weights, visits, ours, reference, ours_args, ref_args,
            timeout) -> None:
    """A whole-game review: `leelaz review` against GoReviewPartner's way with Leela Zero."""
    from leelaz.review.games import collect_games

    path = network_file(weights)
    folder = Path(tempfile.mkdtemp(prefix="leelaz-bench-review-"))
    try:
        files = _games(source, games, folder)
        ours_argv = ((split_command(ours) if ours else ours_command())
                     + ["review", *map(str, files), "-o", str(folder / "out"), "-q", "-w",
                        path, "-v", str(visits)]
                     + (split_command(ours_args) if ours_args.strip() else []))
        say(f"{games} game(s) of {source}, network {path}, {visits} visits a position "
            f"({load_line()} at start)")
        rows = []
        began, cpu = time.monotonic(), _children_cpu()
        run = subprocess.run(ours_argv, capture_output=True, text=True, timeout=timeout)
        ours_seconds = time.monotonic() - began
        ours_cpu = _children_cpu() - cpu
        if run.returncode != 0:
            tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
            raise ToolError(f"leelaz review failed (status {run.returncode}): {tail}")
        positions = sum(len(g.positions) for g in collect_games(files, lambda x: None)[0])
        rows.append(["leelaz review", positions, f"{ours_seconds:.1f}", f"{ours_cpu:.1f}",
                     f"{positions / ours_seconds:.2f}"])
        ref_seconds = None
        if reference != "none":
            ref = split_command(reference) if reference else [reference_binary() or ""]
            if ref[0]:
                ref_argv = ref + ["--gtp", "--noponder", "-v", str(visits), "--timemanage",
                                  "off", "-w", path] + (split_command(ref_args)
                                                        if ref_args.strip() else [])
                cpu = _children_cpu()
                ref_seconds, ref_positions, ref_playouts = _reference_review(ref_argv, files,
                                                                             timeout)
                ref_cpu = _children_cpu() - cpu
                rows.append(["LZ 0.17, GoReviewPartner's loop", ref_positions,
                             f"{ref_seconds:.1f}", f"{ref_cpu:.1f}",
                             f"{ref_positions / ref_seconds:.2f}"])
            else:
                say("no Leela Zero 0.17 installed here: measuring ours only")
        fresh = "--fresh" in ours_args.split()
        say(f"leelaz review: {visits} visits a position, "
            + ("each from a fresh tree (as lz-analyze in a fresh engine)" if fresh else
               "each game's tree kept from one position to the next (as the engine after "
               "`play`)"))
        if ref_seconds is not None:
            say(f"Leela Zero: {ref_playouts / max(1, ref_positions):.0f} new playouts a "
                f"position; it kept the rest of each position's {visits} visits from the "
                f"search of the position before")
        say(table(["review", "positions", "seconds", "CPU seconds", "positions/s"], rows))
        if ref_seconds is not None:
            say(f"leelaz review is {ref_seconds / ours_seconds:.2f}x as fast "
                f"({ref_cpu / max(ours_cpu, 1e-9):.2f}x in CPU seconds; {load_line()} now)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
