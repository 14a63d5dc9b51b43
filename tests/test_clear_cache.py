"""clear_cache (Leela Zero's `next` branch, src/GTP.cpp): the network cache is emptied, so a
position seen before goes to the network again; list_commands shows the command.

The backend counts the rows it is sent: after `clear_board` the same position is answered
from the cache (no row), after `clear_cache` it is evaluated again.
"""

from __future__ import annotations

import io

from leelaz.backends.random_backend import RandomBackend
from leelaz.backends.weights import load_weights
from leelaz.cli import build_engine, parse_args
from leelaz.gtp.protocol import parse_line
from leelaz.nn.network import Network


class CountingBackend(RandomBackend):
    """Seeded random outputs; counts the positions it evaluates."""

    def __init__(self):
        super().__init__(asynchronous=False)
        self.rows = 0

    def forward(self, planes):
        self.rows += len(planes)
        return super().forward(planes)


def _engine(weights_path):
    cfg = parse_args(["-g", "--cpu-only", "-t", "1", "-v", "5", "--noponder", "-s", "3"])
    backend = CountingBackend()
    engine = build_engine(cfg, out=io.StringIO(), err=io.StringIO(),
                          network=Network(load_weights(weights_path), backend, seed=3))
    return engine, backend


def _ask(engine, line: str) -> str:
    start = engine.out.tell()
    engine.execute(parse_line(line))
    engine.out.seek(start)
    return engine.out.read()


def _rows_for_analysis(engine, backend) -> int:
    """Rows the network is sent for `play b d4` + a 5-visit lz-analyze on a fresh tree."""
    before = backend.rows
    assert _ask(engine, "clear_board") == "= \n\n"
    assert _ask(engine, "play b d4") == "= \n\n"
    assert _ask(engine, "lz-analyze 100000").startswith("=\ninfo move ")
    return backend.rows - before


def test_clear_cache_makes_a_repeated_position_go_to_the_network_again(random_weights):
    engine, backend = _engine(random_weights(1, 8))
    first = _rows_for_analysis(engine, backend)
    assert first >= 1
    assert _rows_for_analysis(engine, backend) == 0  # every position from the cache
    assert _ask(engine, "clear_cache") == "= \n\n"
    assert _rows_for_analysis(engine, backend) >= 1  # the root at least, evaluated again
    assert _rows_for_analysis(engine, backend) == 0  # and cached again


def test_clear_cache_is_listed_and_known(random_weights):
    engine, _ = _engine(random_weights(1, 8))
    assert "\nclear_cache\n" in _ask(engine, "list_commands")
    assert _ask(engine, "known_command clear_cache") == "= true\n\n"


def test_clear_cache_without_a_network_is_harmless():
    cfg = parse_args(["-g", "--cpu-only"])
    engine = build_engine(cfg, out=io.StringIO(), err=io.StringIO(), network=None)
    assert _ask(engine, "clear_cache") == "= \n\n"
