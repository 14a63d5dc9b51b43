"""`leelaz bench search`: the search in this process, and where its time goes.

Owns: the in-process search benchmark. Imports: game/, nn/, search/, backends/, tools.bench.common.

`--benchmark`'s position and settings (b R16, w D4, b C3; White to move; no clock) searched for
--visits visits at each --batch size; with --at, the positions of the 9-dan game of `bench
analyze` at those moves instead (what a move in a real game costs: deeper trees, fuller
boards). Without -w the network is instant: it answers at once,
asynchronously as the OpenCL backend does, with seeded random logits peaked like a trained
network's policy and random values, so the tree has a trained network's shape rather than a
random net's degenerate chains, and the figure is the search's own cost per playout (on a fast
GPU the engine waits on this Python, not on the device). With -w the real network runs too
(NumPy unless --backend), and the time spent in the network's calls (submitting and waiting)
is split from the rest. The best of --runs is printed; --profile adds cProfile's top
functions by own time for one more run (profiling slows the search). The search is the
engine's default, the compiled core (ready before the first search), or the Python search
with LEELAZ_SEARCH_CORE=python.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time

import click

from leelaz.tools.bench.common import CONTEXT, IntList, load_line, network_file, say, table
from leelaz.tools.options import weights_option

BENCHMARK_MOVES = (("b", "r16"), ("w", "d4"), ("b", "c3"))


class _TimedNetwork:
    """The network with the time of its calls (submit and the wait for the result) added up."""

    def __init__(self, network):
        self.network = network
        self.seconds = 0.0
        self.calls = 0
        self.positions = 0

    def __getattr__(self, name):
        return getattr(self.network, name)

    def submit(self, states, *args, **kwargs):
        began = time.perf_counter()
        try:
            return _TimedPending(self, self.network.submit(states, *args, **kwargs))
        finally:
            self.seconds += time.perf_counter() - began
            self.calls += 1
            self.positions += len(states)

    def evaluate(self, states, *args, **kwargs):
        began = time.perf_counter()
        try:
            return self.network.evaluate(states, *args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - began


class _TimedPending:
    def __init__(self, owner: _TimedNetwork, pending):
        self.owner, self.pending = owner, pending

    def result(self):
        began = time.perf_counter()
        try:
            return self.pending.result()
        finally:
            self.owner.seconds += time.perf_counter() - began


def benchmark_position():
    from leelaz.game.coords import parse_color, parse_gtp_vertex
    from leelaz.game.state import GameState

    state = GameState()
    for color, move in BENCHMARK_MOVES:
        state.play(parse_color(color), parse_gtp_vertex(move))
    return state


def make_network(weights: str | None, backend: str):
    from leelaz.nn.network import Network

    if weights is None:
        import types

        from leelaz.backends import create_backend
        return Network(types.SimpleNamespace(version=1), create_backend("random", None, seed=1),
                       seed=1)
    return Network.from_file(weights, backend=backend, seed=1)


def game_position(move: int):
    """The 9-dan game of `bench analyze` as `loadsgf GAME move` leaves it."""
    from leelaz.game.sgf_replay import state_from_sgf
    from leelaz.tools.bench.analyze import DEFAULT_GAME

    return state_from_sgf(DEFAULT_GAME, move)


def one_search(network, visits: int, batch: int, profiler=None, at: int | None = None) -> dict:
    """One search of the benchmark position (or the game's at move `at`): playouts,
    seconds, network seconds."""
    from leelaz.game.coords import WHITE
    from leelaz.nn.cache import NNCache
    from leelaz.search.params import SearchParams
    from leelaz.search.search import UCTSearch

    network.cache = NNCache(150_000)
    timed = _TimedNetwork(network)
    params = SearchParams(max_visits=visits, batch_size=batch, quiet=True, timemanage="off")
    search = UCTSearch(timed, params, rng=1)
    state = benchmark_position() if at is None else game_position(at)
    began, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    search.think(state, WHITE if at is None else state.to_move, use_clock=False)
    if profiler is not None:
        profiler.disable()
    return {"playouts": max(1, search.playouts), "seconds": time.perf_counter() - began,
            "cpu": time.process_time() - cpu, "net": timed.seconds, "calls": timed.calls}


@click.command("search", context_settings=CONTEXT)
@weights_option("A network to search with (default: an instant one, no network cost).",
                metavar="FILE|BxF")
@click.option("--backend", type=click.Choice(["numpy", "opencl"]), default="numpy",
              show_default=True, help="Backend for -w.")
@click.option("-v", "--visits", type=click.IntRange(1, None), default=3200, show_default=True,
              help="Visits of each search.")
@click.option("--batch", "batches", type=IntList(), default="32", show_default=True,
              help="Leaves per network call, e.g. 1,8,32.")
@click.option("--runs", type=click.IntRange(1, None), default=3, show_default=True,
              help="Searches per batch size; the fastest counts.")
@click.option("--at", "moves", type=IntList(), default=None,
              help="Search the 9-dan game's positions at these moves, e.g. 40,120,200, "
                   "instead of --benchmark's.")
@click.option("--profile", is_flag=True, help="cProfile's top functions for one more search.")
def command(weights, backend, visits, batches, runs, moves, profile) -> None:
    """The search's playouts per second and its cost outside the network, in this process."""
    path = network_file(weights) if weights else None
    network = make_network(path, backend)
    name = path or "instant"
    from leelaz.search.core import run as core

    from leelaz.search import expansion

    # The compiled code from the first search, as a warm engine has it: numba's import in a
    # background thread holds the interpreter, and a search timed beside it measured a third
    # of its speed (LEELAZ_SEARCH_CORE=python: 6-9k against 17k playouts/s here).
    expansion.wait_compiled()
    if core.core_enabled():
        core.kernels(wait=True)
    rows = []
    for at in moves or (None,):
        where = "benchmark" if at is None else f"move {at}"
        for batch in batches:
            best = min((one_search(network, visits, batch, at=at) for _ in range(runs)),
                       key=lambda r: r["seconds"])
            n, s = best["playouts"], best["seconds"]
            outside = s - best["net"]
            rows.append([name, where, batch, n, n / s, n / max(best["cpu"], 1e-9),
                         f"{outside / n * 1e6:.1f}", f"{best['net'] / n * 1e6:.1f}"])
            say(f"{name} {where} batch {batch}: {n} playouts in {s:.3f} s = {n / s:,.0f}/s; "
                f"{outside / n * 1e6:.1f} us a playout outside the network, "
                f"{best['net'] / n * 1e6:.1f} us in it ({best['calls']} calls)")
    say(load_line())
    say(table(["network", "position", "batch", "playouts", "playouts/s", "per CPU-s",
               "us/playout outside net", "us/playout in net"], rows))
    if profile:
        profiler = cProfile.Profile()
        one_search(network, visits, batches[0], profiler, at=moves[0] if moves else None)
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
        say(text.getvalue())
