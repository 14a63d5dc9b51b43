"""`leelaz review GAME.sgf|DIR`: the verb's command line (leelaz/review/ does the work).

Owns: the click command `command` (registered in leelaz/tools/__init__.py), the order of
the work (inputs, output folder, network, searches, outputs per game as its last position
finishes) and its messages; the options it shares with `leelaz analysis`
(`network_options`, `search_options`) and the network both load (`load_network`).
Imports: click, tools (ToolError), review.*, selfplay.runner (EngineSide: the network and its
batches), files, progress, config (the default network).

Bad input is one `ERROR:` line and exit status 1, before anything is written: a missing
path, a file with no SGF game, a folder without SGF files, an output folder that cannot be
written, a bad network. In a folder (or a collection), a game that cannot be read or
replayed gets its line and the others are reviewed; the exit status is then 1. Every file
is written whole or not at all (leelaz/files.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from leelaz.config import BACKEND_CHOICES, BACKEND_HELP, PRECISION_CHOICES
from leelaz.review import DEFAULT_PARALLEL, DEFAULT_TREES
from leelaz.tools import ToolError

UINT64_MAX = 2**64 - 1
#: Visits per position by default: a 250-move game is 251 searches, all batched together.
DEFAULT_VISITS = 200
PLOT_MISSING = ("matplotlib is not installed: no winrate plot "
                "(pip install 'leelaz[zero]' or matplotlib)")


class Interrupted(ToolError):
    """Ctrl-C: one line, exit status 130 (the games finished so far are written)."""

    exit_code = 130


def _output_folder(out_dir: str) -> Path:
    """The output folder, created if needed; ToolError when it cannot be written."""
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise ToolError(f"-o {out_dir}: not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".leelaz-review-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ToolError(f"-o {out_dir}: cannot write there ({exc.strerror or exc})") from None
    return path


def load_network(weights, cpu_only, gpu, precision, backend, parallel):
    """The network file loaded once and its backend, batches of up to `parallel` rows (one
    per position in flight); ToolError for a missing or bad file or a backend that cannot
    run."""
    from leelaz.selfplay.runner import EngineSide, SelfplayError
    if weights is None:
        from leelaz.config import EngineConfig, find_weights
        weights = find_weights(EngineConfig())
        if weights is None:
            raise ToolError("no network: give -w FILE")
    try:
        return EngineSide(weights, cpu_only=cpu_only, gpus=tuple(gpu), precision=precision,
                          batch_rows=parallel, network_backend=backend)
    except SelfplayError as exc:
        raise ToolError(str(exc)) from None


def _stack(*options):
    """One decorator applying `options` in the order --help lists them."""
    def apply(function):
        for option in reversed(options):
            function = option(function)
        return function
    return apply


#: The options of `leelaz review` and `leelaz analysis` that say how positions are searched:
#: their numbers are those of the engine's lz-analyze with the same seed (one definition).
search_options = _stack(
    click.option("--parallel", type=click.IntRange(1, None), default=DEFAULT_PARALLEL,
                 show_default=True,
                 help="Positions searched at once, their leaves in one network call."),
    click.option("-s", "--seed", type=click.IntRange(0, UINT64_MAX), default=1,
                 show_default=True, help="Seed: a position's numbers are those of "
                 "`leelaz -g -t 1 -v N -s SEED` running lz-analyze on it."),
)

#: The network and where it runs, as the engine takes them, for both verbs.
network_options = _stack(
    click.option("-w", "--weights", default=None, metavar="FILE", help="Network weights."),
    click.option("--cpu-only", is_flag=True, help="NumPy, no OpenCL."),
    click.option("--gpu", type=click.IntRange(0, None), multiple=True, metavar="ID",
                 help="ID of the device(s) to use (repeatable)."),
    click.option("--backend", type=click.Choice(BACKEND_CHOICES), default="auto",
                 show_default=True, help=BACKEND_HELP),
    click.option("--precision", type=click.Choice(PRECISION_CHOICES), default="auto"),
)


@click.command("review", short_help="Review whole games: annotated SGF, winrate plot, report.",
               context_settings={"help_option_names": ["-h", "--help"],
                                           "max_content_width": 100})
@click.argument("paths", nargs=-1, required=True, metavar="GAME.sgf|DIR...")
@click.option("-o", "--out", "out_dir", default=".", show_default=True, metavar="DIR",
              help="Folder for NAME.review.sgf / .md / .png (and .json).")
@click.option("-v", "--visits", type=click.IntRange(1, None), default=None,
              help=f"Visits per position.  [default: {DEFAULT_VISITS}]")
@click.option("--seconds", type=click.FloatRange(0, None, min_open=True), default=None,
              help="Instead of --visits: about this many seconds per position.")
@search_options
@click.option("--reuse/--fresh", "reuse", default=True, show_default=True,
              help="--reuse: a game's positions in order on kept trees (see --trees), as "
              "the engine searches them after `play`: N visits counting those kept from the "
              "position before (Leela Zero's -v); the faster on the CPU. --fresh: each "
              "position from a fresh tree, as lz-analyze right after `loadsgf` (nearly twice "
              "the network work, but every position of every game in flight at once).")
@click.option("--trees", type=click.IntRange(1, None), default=DEFAULT_TREES,
              show_default=True,
              help="With --reuse: each game cut into this many stretches of consecutive "
              "positions (none shorter than 8), each on its own tree, searched at once so "
              "that one game fills a batch; a stretch's first position is searched from a "
              "fresh tree (1: one tree for the whole game).")
@click.option("--variation-drop", type=click.FloatRange(0, 100), default=10.0,
              show_default=True, help="Add the engine's line as a variation where the "
              "played move lost more than this much winrate (percentage points).")
@click.option("--top", type=click.IntRange(1, None), default=5, show_default=True,
              help="Largest drops listed per side.")
@click.option("--json", "write_json", is_flag=True, help="Also write NAME.review.json.")
@network_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def command(paths, out_dir, visits, seconds, parallel, seed, reuse, trees, variation_drop, top,
            write_json, weights, cpu_only, gpu, backend, precision, quiet) -> int:
    """Review whole games: search every position of each game's main line and write an
    annotated SGF (comments, Sabaki's winrate graph, variations), a winrate plot and a
    report per game."""
    from leelaz.review.analyse import ReviewSettings, analyse
    from leelaz.review.games import InputProblem, collect_games

    if visits is not None and seconds is not None:
        raise ToolError("give --visits or --seconds, not both")
    problems: list[str] = []
    try:
        games, failed = collect_games([Path(p) for p in paths], problems.append)
    except InputProblem as exc:
        raise ToolError(str(exc)) from None
    if not games:
        for line in problems[:-1]:
            click.echo(line, err=True)
        raise ToolError(problems[-1][len("ERROR: "):] if problems else "no game to review")
    for line in problems:
        click.echo(line, err=True)
    out = _output_folder(out_dir)
    settings = ReviewSettings(visits=visits or DEFAULT_VISITS, seconds=seconds, seed=seed,
                              parallel=parallel, reuse=reuse, trees=trees)
    side = load_network(weights, cpu_only, gpu, precision, backend, settings.parallel)
    writer = _Writer(games, out, settings, side.weights_path, variation_drop / 100.0, top,
                     write_json)
    jobs = [[((g, p), state) for p, state in enumerate(game.positions)]
            for g, game in enumerate(games)]
    from leelaz.progress import progress
    with progress(sum(map(len, jobs)), "review", unit="pos", enabled=not quiet) as bar:
        writer.bar = bar
        try:
            analyse(jobs, side, settings, writer.done)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted: {writer.written} of {len(games)} games written")\
                from None
        except OSError as exc:
            raise ToolError(f"cannot write the review: {exc.strerror or exc} "
                            f"({getattr(exc, 'filename', '') or out})") from None
    if not writer.plots:
        click.echo(PLOT_MISSING, err=True)
    return 1 if failed else 0


class _Writer:
    """Collects the positions' analyses; writes a game's files when its last one arrives."""

    def __init__(self, games, out: Path, settings, network: str, variation_drop: float,
                 top: int, write_json: bool):
        from leelaz.review.plot import plot_available
        self.games = games
        self.out = out
        self.settings = settings
        self.network = network
        self.variation_drop = variation_drop
        self.top = top
        self.write_json = write_json
        self.plots = plot_available()
        self.analyses = [[None] * len(g.positions) for g in games]
        self.left = [len(g.positions) for g in games]
        self.written = 0
        self.bar = None

    def done(self, key, analysis) -> None:
        g, p = key
        self.analyses[g][p] = analysis
        self.left[g] -= 1
        if self.bar is not None:
            self.bar.update(1)
        if self.left[g] == 0:
            self._write(g)

    def _write(self, g: int) -> None:
        from leelaz.files import write_text_atomic
        from leelaz.game.sgf import format_game
        from leelaz.review.annotate import annotate
        from leelaz.review.moves import black_winrates, review_moves
        from leelaz.review.plot import write_plot
        from leelaz.review.report import GameReport, as_json, markdown, summary_line

        game, analyses = self.games[g], self.analyses[g]
        s = self.settings
        winrates = black_winrates(analyses)
        moves = review_moves(game, analyses)
        report = GameReport(game, winrates, moves, None if s.seconds else s.visits,
                            s.seconds, s.seed, self.network, self.top, analyses,
                            tree_kept=s.reuse)
        stem = self.out / f"{game.stem}.review"
        plot_name = None
        if self.plots:
            plot_name = f"{game.stem}.review.png"
            write_plot(report, self.out / plot_name)
        write_text_atomic(f"{stem}.md", markdown(report, plot_name))
        if self.write_json:
            write_text_atomic(f"{stem}.json", as_json(report))
        sgf = format_game(annotate(game, winrates, moves, self.variation_drop))
        write_text_atomic(f"{stem}.sgf", sgf)
        self.written += 1
        self.analyses[g] = None  # the memory goes with the written game
        line = summary_line(report)
        if self.bar is not None:
            self.bar.say(line)
        else:
            click.echo(line)
