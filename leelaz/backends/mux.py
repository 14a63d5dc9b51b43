"""Many callers' rows in one backend call: the backend seam that callers share (lc0's mux).

Owns: `RoundBatch` (the rows many callers park, and the one backend call that evaluates
them: the one place where callers' batches are joined, planes by concatenation and packed
positions by `join_packed`) and `SharedBackend` (what each caller's
`nn.network.Network` is given as its backend). Imports: numpy, backends.base (the seam, and
the packed layout's sizes).

Who parks here: self-play's and review's games (selfplay/runner.py, one RoundBatch per group
of games, sent once a round) and the network server (backends/remote.py, one RoundBatch for
every client's waiting requests).

Why at the backend seam: every game keeps its own `Network` (its own cache and its own random
symmetries, seeded per game, as a fresh Leela Zero process per game has), so a game's
evaluations do not depend on the games beside it. Each Network answers its cache hits itself
and hands its misses to `SharedBackend.submit` (planes) or `submit_packed` (the positions
packed for a device that builds the planes, as on OpenCL), which only parks the rows in the
round's batch; `send()` (the runner, once every game of the group has collected its
leaves) joins all parked rows into ONE backend call, and each game's `result()` is its slice
of the answer. A `result()` asked before `send()` sends the batch at once, so a Network
used out of turn is answered all the same.

Single-threaded: the runner (selfplay/runner.py) calls everything from one loop. With an
asynchronous backend it keeps two groups of games, each with its own RoundBatch, so that
one group's call is on the device while the other group walks its trees.
"""

from __future__ import annotations

import numpy as np

from leelaz.backends.base import PACKED_KOMI_BYTES, PACKED_ROW, Backend


def join_packed(parts) -> bytes:
    """Several packed submits, `(packed bytes, positions)` pairs, as one, in
    nn/features.packed_inputs' layout: every position's boxes, then every (side, symmetry)
    pair, then, when any part has it (dynamic komi), the colour-plane section, zeros
    (unflagged rows) for the parts without one. Callers that join batches of several
    networks (self-play's rounds, the network server) share it through RoundBatch."""
    boxes = b"".join(p[:n * PACKED_ROW] for p, n in parts)
    pairs = b"".join(p[n * PACKED_ROW:n * (PACKED_ROW + 2)] for p, n in parts)
    if all(len(p) == n * (PACKED_ROW + 2) for p, n in parts):
        return boxes + pairs
    komi = b"".join(p[n * (PACKED_ROW + 2):] or bytes(PACKED_KOMI_BYTES * n) for p, n in parts)
    return boxes + pairs + komi


class _Call:
    """The rows parked during one round, then the backend call that evaluates them."""

    __slots__ = ("parts", "rows", "packed", "pending", "answer")

    def __init__(self):
        self.parts: list = []  # (planes or packed bytes, positions), in parking order
        self.rows = 0
        self.packed = False  # its parts are packed positions (else planes)
        self.pending = None  # the backend's Pending once sent
        self.answer = None  # (policy logits, values) once waited for


class _Share:
    """One caller's rows of a call: its Pending (`result()` gives its slice). `call` is the
    call they went in, the same object for every share of one backend call."""

    __slots__ = ("_batch", "call", "_start", "_end")

    def __init__(self, batch: "RoundBatch", call: _Call, start: int, end: int):
        self._batch = batch
        self.call = call
        self._start = start
        self._end = end

    def result(self):
        call = self.call
        if call.answer is None:
            if call.pending is None:  # asked before the round ended: send it now
                self._batch.send()
            call.answer = call.pending.result()
        policy, value = call.answer
        return policy[self._start:self._end], value[self._start:self._end]


class RoundBatch:
    """The rows many callers park (the Networks of a group of games during a round, the
    network server's clients); `send()` evaluates them in one backend call. `max_rows` (0:
    no limit; also the backend's max_batch) sends a call early once that many rows wait.
    Counters: `calls`, `rows` (evals/s, mean batch)."""

    def __init__(self, backend: Backend, max_rows: int = 0):
        self.backend = backend
        limits = [n for n in (max_rows, backend.max_batch) if n]
        self.max_rows = min(limits) if limits else 0
        self.packed = bool(backend.accepts_packed_inputs)
        self._open = _Call()
        self.calls = 0
        self.rows = 0

    def park(self, part, rows: int) -> _Share:
        """Park `rows` positions (planes, an array; or packed positions, bytes) for this
        round's call. A call holds one kind: planes parked beside packed positions (a
        server's client whose own backend takes planes) go in a call of their own."""
        call = self._open
        packed = not isinstance(part, np.ndarray)
        if call.rows and (packed != call.packed
                          or (self.max_rows and call.rows + rows > self.max_rows)):
            self.send()
            call = self._open
        call.packed = packed
        start = call.rows
        call.parts.append((part, rows))
        call.rows += rows
        return _Share(self, call, start, call.rows)

    def send(self) -> None:
        """One backend call for the rows parked since the last send (none: nothing)."""
        call, self._open = self._open, _Call()
        if not call.rows:
            return
        if call.packed:
            call.pending = self.backend.submit_packed(join_packed(call.parts), call.rows)
        else:
            parts = [p for p, _ in call.parts]
            planes = parts[0] if len(parts) == 1 else np.concatenate(parts)
            call.pending = self.backend.submit(planes)
        call.parts = []
        self.calls += 1
        self.rows += call.rows


class SharedBackend(Backend):
    """A game's view of the shared backend: the Backend seam, parked in a RoundBatch.

    Not asynchronous for the search: the runner, not the search, overlaps the device's work
    with the trees' (two groups of games)."""

    asynchronous = False

    def __init__(self, batch: RoundBatch):
        self.batch = batch
        self.name = batch.backend.name
        self.weights = batch.backend.weights

    @property
    def accepts_packed_inputs(self) -> bool:
        return self.batch.packed

    def forward(self, planes: np.ndarray):
        return self.submit(planes).result()

    def submit(self, planes: np.ndarray) -> _Share:
        return self.batch.park(planes, len(planes))

    def submit_packed(self, packed: bytes, batch: int) -> _Share:
        return self.batch.park(packed, batch)
