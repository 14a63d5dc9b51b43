"""The network's answers shared between the positions of a review, row by row.

Owns: `RowMemo` (input rows already evaluated, by their bytes' digest, and their answers)
and `MemoBackend` (a position's view of the round's backend that asks the memo first).
Imports: hashlib, collections, numpy, backends.base (the seam).

Why: a review searches every position of a game, and position n+1's tree repeats much of
position n's (the subtree of the move played). A position's search must still be the one a
freshly started engine runs (review/analyse.py): its own cache, and its own random symmetry
for each evaluation, drawn from the seed. So the positions cannot share a Network cache as
Leela Zero's one process does (a hit would hand a position an answer computed under another
symmetry, and change its numbers). What they can share is the answer to the same input: the
planes of a row (position, history, side to move and symmetry all in it) determine the
network's output, so a row whose planes were evaluated already, by any position, is answered
from the memo and never sent. The answer is the one evaluating the row again gives, up to
the last bits that BLAS's blocking of a batch moves (a row's answer depends on the rows
beside it in nothing else, as with the round's batches themselves, so a position's numbers
stay lz-analyze's: tests/test_review.py). Rows asked for twice in the same round go once.
Only a leaf whose symmetry matches comes back, so the saving is modest: on the shipped
6x128, 6% of the rows of a whole 9-dan game at 16 visits a position, 8.5% and 6.5% of its
first 60 moves' at 100 and 400 visits.

A row is known by the 16-byte BLAKE2b digest of its planes' bytes (a collision among a
review's million rows has odds of about 2^-88). Packed inputs (a GPU building its own
planes) pass through: the memo is for the CPU, where the network is the whole cost.
The memo keeps the newest `capacity` answers (oldest out first).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np

from leelaz.backends.base import Backend


class RowMemo:
    """Answers (policy logits row, value) by row digest, newest `capacity` kept; counters
    `asked` (rows asked for) and `sent` (rows that reached the backend)."""

    def __init__(self, capacity: int):
        self.capacity = max(0, int(capacity))
        self._answers: OrderedDict[bytes, tuple[np.ndarray, float]] = OrderedDict()
        self._in_flight: dict[bytes, tuple[object, int]] = {}  # digest -> (share, row)
        self.asked = 0
        self.sent = 0

    def __len__(self) -> int:
        return len(self._answers)

    def clear(self) -> None:
        """Forget every answer kept (rows under way in the current round stay shared)."""
        self._answers.clear()

    def keep(self, digest: bytes, logits: np.ndarray, value) -> None:
        answers = self._answers
        if digest in answers or not self.capacity:
            return
        answers[digest] = (logits.copy(), value)
        while len(answers) > self.capacity:
            answers.popitem(last=False)


def row_digests(planes: np.ndarray) -> list[bytes]:
    """The digest of each row of `planes` (float32 [B, 18, 19, 19]). Hot path: once per row
    asked for, a few tens of microseconds against the milliseconds of a row's forward pass."""
    rows = np.ascontiguousarray(planes).reshape(len(planes), -1)
    return [hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in rows]


class _Answer:
    """A submit's answer: each row from the memo, from this submit's own share of the round,
    or from the share of another position that asked for the same row in the same round."""

    __slots__ = ("_memo", "_digests", "_sources", "_answer")

    def __init__(self, memo: RowMemo, digests, sources):
        self._memo = memo
        self._digests = digests
        self._sources = sources  # per row: (logits, value) or (share, row in its answer)
        self._answer = None

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if self._answer is not None:
            return self._answer
        memo, digests = self._memo, self._digests
        rows = len(self._sources)
        logits_out = np.empty((rows, 362), np.float32)
        values_out = np.empty(rows, np.float32)
        for i, (first, second) in enumerate(self._sources):
            if isinstance(first, np.ndarray):  # from the memo
                logits_out[i], values_out[i] = first, second
                continue
            logits, values = first.result()  # a share of a round's call: ours or another's
            logits_out[i], values_out[i] = logits[second], values[second]
            memo.keep(digests[i], logits[second], values[second])
            memo._in_flight.pop(digests[i], None)
        self._answer = (logits_out, values_out)
        self._memo = self._sources = self._digests = None
        return self._answer


class MemoBackend(Backend):
    """A position's view of the round's backend (backends.mux.SharedBackend) that
    answers from `memo` the rows evaluated before, and parks only the others."""

    asynchronous = False

    def __init__(self, shared: Backend, memo: RowMemo):
        self.shared = shared
        self.memo = memo
        self.name = shared.name
        self.weights = shared.weights

    @property
    def accepts_packed_inputs(self) -> bool:
        return self.shared.accepts_packed_inputs

    def submit_packed(self, packed: bytes, batch: int):
        return self.shared.submit_packed(packed, batch)

    def forward(self, planes: np.ndarray):
        return self.submit(planes).result()

    def submit(self, planes: np.ndarray) -> _Answer:
        memo = self.memo
        digests = row_digests(planes)
        memo.asked += len(digests)
        sources: list = [None] * len(digests)
        own: list[int] = []
        answers, in_flight = memo._answers, memo._in_flight
        for i, digest in enumerate(digests):
            known = answers.get(digest)
            if known is not None:
                sources[i] = known
            elif digest in in_flight:
                sources[i] = in_flight[digest]
            else:
                own.append(i)
        if own:
            share = self.shared.submit(planes if len(own) == len(digests) else planes[own])
            memo.sent += len(own)
            for k, i in enumerate(own):
                sources[i] = in_flight[digests[i]] = (share, k)
        return _Answer(memo, digests, sources)
