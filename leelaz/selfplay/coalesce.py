"""One network call for the leaves of many games: the backend seam shared by game threads.

Owns: `BatchCoalescer` (the shared batcher in front of one backend) and `MemberBackend` (what
each game's `nn.network.Network` is given as its backend). Imports: numpy, threading,
backends.base (the seam, and the size of a packed position).

Why here, at the backend seam: every game keeps its own `Network` (its own cache and its own
random symmetries, seeded per game, as a fresh Leela Zero process per game has) and its own
`UCTSearch`, driven through the public `think()`. Only the rows that miss the game's cache
reach `MemberBackend.submit`, which parks them with the coalescer and blocks the game's thread
in `result()`. A game joins the coalescer while it searches and leaves after; when every
member is waiting (or `max_rows` rows are parked), the thread that completed the set joins
all parked rows into ONE backend call, hands each member its slice and wakes them. So with K
games in flight the network sees batches of about K x the search's own batch, and no game
ever waits for one that is busy in Python.

With an asynchronous backend (OpenCL) the members are split over two coalescers (`groups`):
while one group's batch runs on the device, the other group's threads walk their trees, so
the device and Python overlap as the search's own pipelining does. Backend submits are
serialized by one lock; read-backs are not (the device queue is in order).

`cancel()` wakes everyone with `SelfplayStopped` (Ctrl-C: the games in flight are dropped).
"""

from __future__ import annotations

import threading

import numpy as np

from leelaz.backends.base import PACKED_KOMI_BYTES, PACKED_ROW, Backend


class SelfplayStopped(Exception):
    """The run is stopping (Ctrl-C, an error in another game): drop this game."""


class _Request:
    """Rows parked by one member: planes or packed bytes, and where the answer goes."""

    __slots__ = ("rows", "planes", "packed", "answer", "error", "done")

    def __init__(self, rows: int, planes=None, packed: bytes | None = None):
        self.rows = rows
        self.planes = planes
        self.packed = packed
        self.answer = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class _Parked:
    """The pending evaluation handed back to the member's Network."""

    __slots__ = ("_request",)

    def __init__(self, request: _Request):
        self._request = request

    def result(self):
        request = self._request
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.answer


class _Group:
    """Members that are batched together, and their parked requests."""

    def __init__(self):
        self.members = 0
        self.parked: list[_Request] = []
        self.rows = 0


class BatchCoalescer:
    """Gathers the backend calls of the games of one process into one call per round.

    `backend` is the real backend (shared, tuned for big batches). `max_rows` dispatches early
    once that many rows are parked. Counters: `calls`, `rows` (for evals/s and the mean
    batch size)."""

    def __init__(self, backend, max_rows: int = 4096, groups: int | None = None):
        self.backend = backend
        self.max_rows = max(1, max_rows)
        self.groups = [_Group() for _ in range(groups or (2 if backend.asynchronous else 1))]
        self.packed = bool(backend.accepts_packed_inputs)
        self._cond = threading.Condition()
        self._submit_lock = threading.Lock()
        self._stopped: BaseException | None = None
        self.calls = 0
        self.rows = 0

    # ---- membership (a game joins while it searches) ----------------------------------
    def member(self, slot: int) -> "MemberBackend":
        """The backend to give the Network of the game in `slot` (slots spread over groups)."""
        return MemberBackend(self, self.groups[slot % len(self.groups)])

    def join(self, group: _Group) -> None:
        with self._cond:
            if self._stopped is not None:
                raise SelfplayStopped(str(self._stopped))
            group.members += 1

    def leave(self, group: _Group) -> None:
        with self._cond:
            group.members -= 1
            batch = self._take_if_ready(group)
        if batch:
            self._dispatch(batch)

    def cancel(self, reason: BaseException | None = None) -> None:
        """Stop: every parked and future request fails with SelfplayStopped."""
        with self._cond:
            self._stopped = reason or SelfplayStopped("stopped")
            parked = [r for g in self.groups for r in g.parked]
            for g in self.groups:
                g.parked, g.rows = [], 0
        for request in parked:
            request.error = SelfplayStopped(str(self._stopped))
            request.done.set()

    # ---- requests ----------------------------------------------------------------------
    def park(self, group: _Group, request: _Request) -> _Parked:
        with self._cond:
            if self._stopped is not None:
                raise SelfplayStopped(str(self._stopped))
            group.parked.append(request)
            group.rows += request.rows
            batch = self._take_if_ready(group)
        if batch:
            self._dispatch(batch)
        return _Parked(request)

    def _take_if_ready(self, group: _Group) -> list[_Request] | None:
        """Under the lock: the parked requests, if every member waits or the batch is full."""
        if not group.parked:
            return None
        if len(group.parked) < group.members and group.rows < self.max_rows:
            return None
        batch, group.parked, group.rows = group.parked, [], 0
        return batch

    def _dispatch(self, batch: list[_Request]) -> None:
        """One backend call for the batch; each request gets its rows (or the error)."""
        try:
            with self._submit_lock:
                pending, total = self._submit(batch)
            policy, value = pending.result()
            start = 0
            for request in batch:
                end = start + request.rows
                request.answer = (policy[start:end], value[start:end])
                start = end
            self.calls += 1
            self.rows += total
        except BaseException as exc:  # noqa: BLE001 - handed to every waiting game
            for request in batch:
                request.error = exc
        for request in batch:
            request.done.set()

    def _submit(self, batch: list[_Request]):
        total = sum(r.rows for r in batch)
        backend = self.backend
        if self.packed:
            boxes = b"".join(r.packed[:r.rows * PACKED_ROW] for r in batch)
            pairs = b"".join(r.packed[r.rows * PACKED_ROW:r.rows * (PACKED_ROW + 2)]
                             for r in batch)
            packed = boxes + pairs
            if any(len(r.packed) > r.rows * (PACKED_ROW + 2) for r in batch):
                # dynamic komi: the colour-plane section, zeros (unflagged) where absent
                packed += b"".join(r.packed[r.rows * (PACKED_ROW + 2):]
                                   or bytes(PACKED_KOMI_BYTES * r.rows) for r in batch)
            return backend.submit_packed(packed, total), total
        planes = batch[0].planes if len(batch) == 1 else \
            np.concatenate([r.planes for r in batch])
        return backend.submit(planes), total


class MemberBackend(Backend):
    """A game's view of the shared backend: the Backend seam, parked with the coalescer.

    Not asynchronous for the search (its `result()` is where the game waits for the round),
    so each game's search runs plain collect / evaluate / back up batches."""

    asynchronous = False

    def __init__(self, coalescer: BatchCoalescer, group: _Group):
        self.coalescer = coalescer
        self.group = group
        self.name = coalescer.backend.name
        self.weights = coalescer.backend.weights

    @property
    def accepts_packed_inputs(self) -> bool:
        return self.coalescer.packed

    def searching(self) -> "_Membership":
        """`with member.searching(): search.think(...)`: counted as a member meanwhile."""
        return _Membership(self)

    def forward(self, planes: np.ndarray):
        return self.submit(planes).result()

    def submit(self, planes: np.ndarray) -> _Parked:
        return self.coalescer.park(self.group, _Request(len(planes), planes=planes))

    def submit_packed(self, packed: bytes, batch: int) -> _Parked:
        return self.coalescer.park(self.group, _Request(batch, packed=packed))


class _Membership:
    def __init__(self, member: MemberBackend):
        self.member = member

    def __enter__(self):
        self.member.coalescer.join(self.member.group)
        return self

    def __exit__(self, *exc):
        self.member.coalescer.leave(self.member.group)
        return False
