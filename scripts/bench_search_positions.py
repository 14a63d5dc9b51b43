"""The search's own cost per playout on real mid-game positions, with a real network's priors.

    python scripts/bench_search_positions.py [--sgf GAME] [--moves 40,120,200] [--visits 3200]
        [--batch 32] [--runs 3] [--table FILE] [--profile]

The default game is `leelaz bench analyze`'s (leelaz/tools/bench/game-9d.sgf, a 9-dan game).

What lz-analyze users feel on a fast GPU is the search's Python, not the device (issue 18).
This measures that Python on the positions they analyse: `loadsgf GAME MOVE` at each --moves,
then one think of --visits visits (no clock, no time management) at --batch leaves per batch.
Times are the process's CPU time, which a busy shared machine disturbs less than the wall
clock; the best of --runs counts.

The network's answers are the shipped network's (-w), so the trees have a trained network's
shape, yet cost nothing: the first run evaluates every position the search sends with the NumPy
backend and keeps the answers in --table (keyed by the packed input row: the position's 8
mailboxes, side to move and symmetry); later runs answer from the table at once, through the
packed-input path the OpenCL backend uses. The search is deterministic for a given seed, so a
later run meets exactly the rows the first one recorded ("misses" counts any that it did not:
a search that changed its choices). The table look-ups' time is left out of the figure; the
input encoding, the cache and the decoding of the answers stay in, as on a GPU.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import os
import pstats
import time
from pathlib import Path

import numpy as np

from leelaz.backends import create_backend
from leelaz.backends.base import HISTORY_LENGTH, Backend, Done
from leelaz.backends.weights import load_weights
from leelaz.game.coords import NUM_VERTICES
from leelaz.game.sgf_replay import state_from_sgf
from leelaz.nn.cache import NNCache
from leelaz.nn.features import SYMMETRIC_POINTS, planes_from_colours
from leelaz.nn.network import Network
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch

ROW = HISTORY_LENGTH * NUM_VERTICES
DEFAULT_GAME = Path(__file__).resolve().parents[1] / "leelaz" / "tools" / "bench" / "game-9d.sgf"
DEFAULT_TABLE = Path.home() / ".cache" / "leelaz" / "bench-search-table.npz"


class TableBackend(Backend):
    """Answers packed positions from a table, evaluating (and recording) the ones it lacks with
    `reference` (the NumPy backend); `seconds` is the time spent in here."""

    asynchronous = True

    def __init__(self, table: dict, reference=None):
        self.table = table
        self.reference = reference
        self.misses = 0
        self.seconds = 0.0

    @property
    def accepts_packed_inputs(self) -> bool:
        return True

    def forward(self, planes):
        raise NotImplementedError("packed inputs only")

    def submit_packed(self, packed: bytes, batch: int):
        began = time.process_time()
        pairs = packed[batch * ROW:]
        keys = [hashlib.blake2b(packed[i * ROW:(i + 1) * ROW] + pairs[2 * i:2 * i + 2],
                                digest_size=16).digest() for i in range(batch)]
        missing = [i for i, k in enumerate(keys) if k not in self.table]
        if missing:
            self.misses += len(missing)
            if self.reference is None:
                raise KeyError(f"{len(missing)} positions not in the table")
            mail = np.frombuffer(packed[:batch * ROW], dtype=np.uint8).reshape(
                batch, HISTORY_LENGTH, NUM_VERTICES)
            colours = np.stack([mail[i][:, SYMMETRIC_POINTS[pairs[2 * i + 1]]] for i in missing])
            to_move = np.frombuffer(pairs, dtype=np.uint8)[0::2][missing]
            planes = planes_from_colours(colours, to_move, np.empty(
                (len(missing), 18, 361), dtype=np.float32))
            logits, values = self.reference.forward(planes.reshape(-1, 18, 19, 19))
            for j, i in enumerate(missing):
                self.table[keys[i]] = (np.array(logits[j], dtype=np.float32), float(values[j]))
        answers = [self.table[k] for k in keys]
        out = (np.stack([a[0] for a in answers]), np.array([a[1] for a in answers],
                                                          dtype=np.float32))
        self.seconds += time.process_time() - began
        return Done(out)


def load_table(path: str) -> dict:
    if not path or not os.path.exists(path):
        return {}
    data = np.load(path)
    return {k.tobytes(): (p, float(v)) for k, p, v in
            zip(data["keys"], data["logits"], data["values"])}


def save_table(path: str, table: dict) -> None:
    keys = np.array([np.frombuffer(k, dtype=np.uint8) for k in table])
    logits = np.stack([v[0] for v in table.values()])
    values = np.array([v[1] for v in table.values()], dtype=np.float32)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp.npz"
    np.savez(tmp, keys=keys, logits=logits, values=values)
    os.replace(tmp, path)


def one_search(network, backend, state, visits: int, batch: int, profiler=None) -> dict:
    network.cache = NNCache(150_000)
    network._rng.seed(1)
    params = SearchParams(max_visits=visits, batch_size=batch, quiet=True, timemanage="off")
    search = UCTSearch(network, params, rng=1)
    backend.seconds = 0.0
    began = time.process_time()
    if profiler is not None:
        profiler.enable()
    result = search.think(state, state.to_move, use_clock=False)
    if profiler is not None:
        profiler.disable()
    seconds = time.process_time() - began
    return {"playouts": max(1, search.playouts), "seconds": seconds - backend.seconds,
            "move": result.move, "visits": search.root.visits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sgf", default=str(DEFAULT_GAME))
    parser.add_argument("--moves", default="40,120,200")
    parser.add_argument("-w", "--weights", default="weights/leelaz-6x128.txt.gz")
    parser.add_argument("--visits", type=int, default=3200)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--table", default=str(DEFAULT_TABLE),
                        help="the recorded answers (made on the first run)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    weights = load_weights(args.weights)
    table = load_table(args.table)
    backend = TableBackend(table, create_backend("numpy", weights))
    network = Network(weights, backend, seed=1)
    moves = [int(m) for m in args.moves.split(",")]
    states = {m: state_from_sgf(args.sgf, m) for m in moves}
    total_p = total_s = 0.0
    for m in moves:
        before = len(table)
        runs = [one_search(network, backend, states[m], args.visits, args.batch)
                for _ in range(args.runs)]
        best = min(runs, key=lambda r: r["seconds"])
        n, s = best["playouts"], best["seconds"]
        total_p += n
        total_s += s
        print(f"move {m}: {n} playouts, {s / n * 1e6:.1f} us per playout outside the network "
              f"(best of {args.runs}); move {best['move']}, {best['visits']} root visits; "
              f"{len(table) - before} rows recorded")
        if len(table) > before:
            save_table(args.table, table)
    print(f"all: {total_s / total_p * 1e6:.1f} us per playout, misses {backend.misses}")
    if args.profile:
        profiler = cProfile.Profile()
        for m in moves:
            one_search(network, backend, states[m], args.visits, args.batch, profiler)
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
        print(text.getvalue())


if __name__ == "__main__":
    main()
