"""GTP commands that look at the network itself: heatmap, lz-memory_report, netbench, clear_cache.

Owns: `register(engine)` and the four handlers. Imports: gtp.protocol, nn.network (names only),
leelaz.memory, stdlib, numpy. Reads the session's network (a Network, set by the composition
root), state and, for the memory report, search when there is one.

Output follows Leela Zero 0.17 (src/GTP.cpp, show_heatmap): heatmaps go to stderr as 19 rows of
`%3d ` (row 19 first; int(policy * 1000) on empty points, 0 on stones), `pass: %d`,
`winrate: %f`, and the GTP reply is empty. Where Leela Zero aborts (`heatmap x`) or has
undefined behaviour (`heatmap 9`), we reply `? ...` and keep serving.
"""

from __future__ import annotations

import time

import numpy as np

from leelaz.game.coords import BOARD_SIZE, EMPTY, NUM_INTERSECTIONS, vertex
from leelaz.game.numbers import leading_int
from leelaz.gtp.protocol import GtpError
from leelaz.memory import memory_report_text
from leelaz.nn.network import AVERAGE

NETBENCH_DEFAULT = 1600


def _network(engine):
    network = engine.session.network
    if network is None:
        raise GtpError("no network loaded")
    return network


def parse_symmetry(args) -> list:
    """heatmap's argument -> the list of symmetries to show (each an int or "average").

    No argument: [0]. `all`: 0..7. `average`/`avg`: the mean of all 8. Otherwise like C++ stoi:
    leading digits count (`3x` is 3); anything else, or a number above 7, is an error.
    """
    if not args:
        return [0]
    arg = args[0]
    if arg == "all":
        return list(range(8))
    if arg in ("average", "avg"):
        return [AVERAGE]
    value = leading_int(arg)  # as C++ stoi reads it
    if value is None or not 0 <= value <= 7:
        raise GtpError("symmetry must be a number 0..7, all, average or avg")
    return [value]


def heatmap_text(state, policy: np.ndarray, winrate: float) -> str:
    """LZ's show_heatmap layout for one evaluation (policy float32 [362] in board order)."""
    per_mille = (np.asarray(policy, np.float32) * np.float32(1000)).astype(np.int64)
    square = state.board.square
    lines = []
    for y in range(BOARD_SIZE - 1, -1, -1):
        row = []
        for x in range(BOARD_SIZE):
            value = per_mille[y * BOARD_SIZE + x] if square[vertex(x, y)] == EMPTY else 0
            row.append("%3d " % value)
        lines.append("".join(row))
    lines.append("pass: %d" % per_mille[NUM_INTERSECTIONS])
    lines.append("winrate: %f" % winrate)
    return "\n".join(lines) + "\n"


def heatmap(engine, cmd) -> str:
    network = _network(engine)
    symmetries = parse_symmetry(cmd.args)
    state = engine.session.state
    for symmetry in symmetries:
        ev = network.evaluate([state], symmetry=symmetry, read_cache=False)[0]
        engine.diag(heatmap_text(state, ev.policy, ev.winrate))
    return ""


def _tree_bytes(engine) -> int:
    """The search tree's size in LZ's accounting (0 before any search exists)."""
    search = engine.session.search
    return search.tree_bytes() if search is not None else 0


def memory_report(engine, cmd) -> str:
    network = _network(engine)
    return memory_report_text(network.estimated_size(), _tree_bytes(engine),
                              network.cache.estimated_bytes())


def netbench(engine, cmd) -> str:
    """`netbench [N] [B]`: N uncached evaluations of the current position, random symmetries,
    in batches of B (default: the engine's batch size, at least 1; LZ has no B)."""
    network = _network(engine)
    try:
        count = int(cmd.args[0]) if cmd.args else NETBENCH_DEFAULT
        batch = int(cmd.args[1]) if len(cmd.args) > 1 else \
            max(1, engine.session.config.batchsize or 1)
    except ValueError:
        raise GtpError("syntax error") from None
    if count < 0 or batch < 1:
        raise GtpError("syntax error")
    state = engine.session.state
    start = time.perf_counter()
    done = 0
    while done < count:
        n = min(batch, count - done)
        network.evaluate([state] * n, symmetry=None, read_cache=False)
        done += n
    elapsed = time.perf_counter() - start
    rate = int(count / elapsed) if elapsed > 0 else 0
    engine.diag("%5d evaluations in %5.2f seconds -> %d n/s\n" % (count, elapsed, rate))
    return ""


def clear_cache(engine, cmd) -> str:
    """Empty the network cache (Leela Zero's `next` branch, src/GTP.cpp: `clear_cache` calls
    Network::nncache_clear): every position is evaluated by the network again, as after a
    restart, for instance to see a fresh random symmetry. The tree is left alone (as there):
    positions it already holds are not evaluated again until it is cleared (clear_board).
    Without a network there is nothing to clear and the reply is still empty."""
    network = engine.session.network
    if network is not None:
        network.cache.clear()
    return ""


def register(engine) -> None:
    """Add heatmap, lz-memory_report, clear_cache and the hidden netbench to the engine."""
    engine.add_command("heatmap", lambda cmd: heatmap(engine, cmd))
    engine.add_command("lz-memory_report", lambda cmd: memory_report(engine, cmd))
    engine.add_command("clear_cache", lambda cmd: clear_cache(engine, cmd))
    engine.add_command("netbench", lambda cmd: netbench(engine, cmd), hidden=True)
