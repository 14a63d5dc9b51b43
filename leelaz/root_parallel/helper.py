"""A helper search process: its own tree, searching what the engine sends.

Owns: `HelperProcess` (the engine's handle on one helper: start, send, read its reports) and
`helper_main` (the helper's whole life). Imports: search.search, search.merge,
backends.remote and .processes; the network is opened from the engine's
LoadPlan it is handed (nn/loading.py: the engine's own choice of backend, pickled to the new
process). With the network server, the helper's Network
(its own cache and symmetries) sends its batches to the server (a RemoteBackend) instead of
holding a backend.

Protocol (tuples over one multiprocessing pipe). Engine to helper: ("search", seq, kind,
position, params) searches a position for its side to move until ("stop", seq): kind "state"
sends the GameState, kind "delta" what game/state.GameState.delta_since gives against the last
position sent (a move's few positions instead of the whole game's); ("report",) asks for the
root statistics now; ("reset",) drops the tree; ("quit",) ends it. Helper to engine: ("ready",)
once its network is loaded, ("failed", text) if it cannot load one, ("report", seq, report)
when asked and ("final", seq, report) after a stop, each report a search/merge.root_report.

The helper searches in `ponder` mode (no budget, no early stop): the engine's own search
keeps the clock and decides when everyone stops. It keeps its tree between searches, as the
engine does, so a game's next move reuses the subtree. It never writes to stdout (the GTP
stream): its fd 1 is pointed at stderr, and its diagnostics are off. When the engine goes away
the pipe closes and the helper ends.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sys
import time

from leelaz.search.merge import RootReport, root_report
from leelaz.processes import end_process


class HelperProcess:
    """The engine's handle on one helper process (see the module docstring)."""

    def __init__(self, plan, weights_path: str, index: int, server=None):
        ctx = multiprocessing.get_context("spawn")  # no fork: the engine has threads
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=helper_main,
                                   args=(child, plan, weights_path, index, server),
                                   name=f"leelaz-search-{index}", daemon=True)
        self.process.start()
        child.close()
        self.ready = False
        self.dead = False
        self.failure = ""
        self.seq = 0  # the search it was last given
        self.report: RootReport | None = None  # its latest report of that search
        self.final = False  # the report is its last of that search
        self.asked = False  # a report request is outstanding
        self.sent = None  # the last position it was sent (deltas are made against it)

    def read(self) -> None:
        """Take every message waiting (never blocks)."""
        try:
            while not self.dead and self.conn.poll():
                self._take(self.conn.recv())
        except (EOFError, OSError):
            self._died("it exited")

    def wait_final(self, deadline: float) -> None:
        """Block until the last report of the current search arrives, or `deadline`
        (time.monotonic()); a helper that misses it is stopped and not used again."""
        try:
            while not self.dead and not self.final:
                left = deadline - time.monotonic()
                if left <= 0 or not self.conn.poll(left):
                    self.close()
                    self._died("it did not stop in time")
                    return
                self._take(self.conn.recv())
        except (EOFError, OSError):
            self._died("it exited")

    def _take(self, msg) -> None:
        kind = msg[0]
        if kind == "ready":
            self.ready = True
        elif kind == "failed":
            self._died(msg[1])
        elif kind in ("report", "final") and msg[1] == self.seq:
            self.report, self.asked = msg[2], False
            self.final = self.final or kind == "final"

    def send(self, *msg) -> bool:
        try:
            self.conn.send(msg)
            return True
        except (OSError, ValueError):
            self.read()  # a last message may say why it ended
            self._died("it exited")
            return False

    def search(self, seq: int, state, params) -> None:
        self.seq, self.report, self.final, self.asked = seq, None, False, False
        delta = state.delta_since(self.sent) if self.sent is not None else None
        self.sent = state
        if delta is None:
            self.send("search", seq, "state", state, params)
        else:
            self.send("search", seq, "delta", delta, params)

    def ask(self) -> None:
        """Ask for a report unless one is on its way; the answer comes after its batch."""
        if not self.asked and not self.final:
            self.asked = self.send("report")

    def _died(self, why: str) -> None:
        self.dead, self.ready = True, False
        self.failure = self.failure or why

    def close(self, timeout: float = 2.0) -> None:
        """Ask it to quit; terminate it if it does not."""
        end_process(self.process, self.conn, timeout)
        self._died("closed")


def helper_main(conn, plan, weights_path: str, index: int, server=None) -> None:
    """The helper process: open the network (`plan.open_network(path)`; with `server`, a
    connection to the network server, around a RemoteBackend on it), then serve searches
    until quit or the pipe closes."""
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stdout is the engine's GTP stream
    try:
        search = _load(plan, weights_path, index, server)
    except Exception as exc:  # noqa: BLE001 - any failure is reported, the engine goes on
        _send(conn, "failed", f"{type(exc).__name__}: {exc}")
        return
    if not _send(conn, "ready"):
        return
    last = None  # the position last searched, which deltas move on from
    try:
        while True:
            msg = conn.recv()
            if msg[0] == "quit":
                return
            if msg[0] == "reset":
                search.reset()
            elif msg[0] == "search":
                _, seq, kind, position, params = msg
                last = position if kind == "state" else last.with_delta(position)
                if not _search(conn, search, seq, last, params):
                    return
            # a late "stop" or "report" of a finished search needs nothing
    except (EOFError, OSError, KeyboardInterrupt):
        return  # the engine is gone


def _load(plan, weights_path: str, index: int, server=None):
    """This helper's network and search: the engine's plan, quiet, with its own seeds."""
    from leelaz.search.search import UCTSearch

    seed = None if plan.seed is None else (plan.seed + 7919 * (index + 1)) % (1 << 64)
    plan = plan.quietly(seed=seed)  # a helper never talks
    if server is not None:
        from leelaz.backends.remote import RemoteBackend
        network = plan.open_network(weights_path, backend=RemoteBackend.connect(server))
    else:
        network = plan.open_network(weights_path)
    return UCTSearch(network, rng=seed, log=lambda text: None)


def _search(conn, search, seq: int, state, params) -> bool:
    """One search until ("stop", seq); False when the engine quit or went away."""
    search.params = dataclasses.replace(params, quiet=True)
    going = {"on": True, "quit": False}

    def should_stop() -> bool:
        while conn.poll():
            msg = conn.recv()
            if msg[0] == "report":
                run = search.current
                if run is not None and not _send(conn, "report", seq, run.root_report()):
                    going["on"] = False
            elif msg[0] == "quit" or (msg[0] == "stop" and msg[1] == seq):
                going["on"] = False
                going["quit"] = msg[0] == "quit"
        return not going["on"]

    try:  # its tree left partly written, as GTP's lz-analyze: the reports read the arrays,
        # the final one (below) the root's children and their principal variations
        search.ponder(state, should_stop=should_stop, defer_tree=True)
    except (EOFError, OSError):
        return False
    except RuntimeError as exc:  # the network server went away or failed: say why, end
        _send(conn, "failed", str(exc))
        return False
    if going["quit"]:
        return False
    root = search.root
    report = root_report(root, state.to_move) if root is not None else None
    return _send(conn, "final", seq, report)


def _send(conn, *msg) -> bool:
    try:
        conn.send(msg)
        return True
    except (OSError, ValueError):
        return False
