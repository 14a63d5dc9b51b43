"""A measurement, not part of leelaz: where one tree's lz-analyze spends its host time, phase
by phase, in microseconds a playout.

The search runs in this process as lz-analyze runs it (a ponder with a report every
INTERVAL centiseconds, each formatted as an info line), SECS seconds at moves 40 / 120 / 200
of the 9-dan game of `bench analyze`, batches of BATCH leaves, on either the instant
network of `bench search` taking packed positions as a GPU's backend does ("instant": the
host's ceiling), or a real network file on the backend the engine would choose (on an
NVIDIA machine PyTorch on CUDA: then "backend submit" and "wait" show what the device
costs the host). Each position's line also gives the time from the stop (should_stop's
True) to the ponder's return: what a GUI waits for the answer to the command that stopped
lz-analyze. The phases are timed by wrapping the methods that run them, which adds
about a microsecond a call.

    PYTHONPATH=$PWD python3 dev/host_costs_probe.py [instant|WEIGHTS] [SECS] [BATCH] [INTERVAL]
"""

from __future__ import annotations

import collections
import inspect
import sys
import time
import types

import numpy as np

from leelaz.backends.base import Done
from leelaz.backends.random_backend import RandomBackend
from leelaz.gtp.analysis import format_info_line
from leelaz.nn import network as nn_network
from leelaz.nn.cache import NNCache
from leelaz.search import expansion
from leelaz.search.core import leaf_inputs
from leelaz.search.core import run as core_run
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch
from leelaz.tools.bench.search import game_position

SPENT: collections.Counter = collections.Counter()
#: The parts in the order they were wrapped: each "of it" line under its whole.
LABELS: list[str] = []


class _PackedInstant(RandomBackend):
    """The instant network taking packed positions, as the GPU backends do."""

    @property
    def accepts_packed_inputs(self) -> bool:
        return True

    def submit_packed(self, packed, batch):
        return Done(self.forward(np.empty((batch, 1))))


def _timed(owner, name: str, label: str) -> None:
    original = getattr(owner, name)
    LABELS.append(label)

    def timed(*args, **kwargs):
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - began
    setattr(owner, name, timed)


def _network(which: str):
    if which == "instant":
        return nn_network.Network(types.SimpleNamespace(version=1), _PackedInstant(None, seed=1),
                                  seed=1)
    from leelaz.config import EngineConfig
    from leelaz.nn.loading import choose, read_weights

    weights = read_weights(which)
    plan = choose(EngineConfig(weights=which), weights, batch_size=32)  # the engine's rule
    return plan.open_network(which, weights=weights)


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "instant"
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    interval = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    network = _network(which)
    backend = network.backend
    print(f"network {which}, backend {getattr(backend, 'name', type(backend).__name__)}",
          flush=True)
    expansion.wait_compiled()
    core_run.kernels(wait=True)
    _timed(core_run.CoreRun, "core_collect", "collect (kernel + leaves)")
    _timed(leaf_inputs.LeafInputs, "histories", "  of it the leaves' arrays")
    _timed(core_run.CoreRun, "submit", "submit")
    _timed(type(backend), "submit_packed", "  of it the backend's submit")
    _timed(nn_network.PendingRows, "result", "result (wait + decode + cache)")
    _timed(type(network), "decode_rows", "  of it the decode")
    _timed(core_run.CoreRun, "_core_expand", "expand + backup")
    _timed(core_run.CoreRun, "snapshot", "progress reports")
    _timed(core_run.CoreRun, "_write_back", "write-backs")
    # As GTP's lz-analyze asks (where the code has it): the tree left partly written
    as_gtp = ({"defer_tree": True}
              if "defer_tree" in inspect.signature(UCTSearch.ponder).parameters else {})
    for warm in (True, False):
        SPENT.clear()
        playouts = 0
        began_all = time.perf_counter()
        for at in (40, 120, 200):
            network.cache = NNCache(400_000)
            search = UCTSearch(network, SearchParams(batch_size=batch, quiet=True), rng=1)
            state = game_position(at)
            began = time.monotonic()
            stopped = []

            def should_stop() -> bool:
                if time.monotonic() - began <= secs:
                    return False
                stopped.append(time.monotonic())
                return True

            search.ponder(state, should_stop=should_stop, on_progress=format_info_line,
                          progress_interval_cs=interval, **as_gtp)
            ended = time.monotonic()
            seconds = stopped[0] - began
            playouts += search.playouts
            if not warm:
                print(f"move {at}: {search.playouts} playouts, "
                      f"{search.playouts / seconds:,.0f}/s; from the stop to the return "
                      f"{1000 * (ended - stopped[0]):.0f} ms", flush=True)
        total = time.perf_counter() - began_all
    print(f"{playouts / total:,.0f} playouts/s over the three; us a playout:")
    for label in LABELS:
        print(f"  {label:34s} {SPENT[label] / playouts * 1e6:7.1f}")
    print(f"  {'(all)':34s} {total / playouts * 1e6:7.1f}")


if __name__ == "__main__":
    main()
