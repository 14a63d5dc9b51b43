"""Fake evaluators for search tests: deterministic, instant, and they count their calls.

`FakeEvaluator(policy_fn, value_fn)` answers each state with policy_fn(state) (362 floats;
uniform by default) and value_fn(state) (winrate for the side to move; 0.5 by default).
It records the size of every batch it was given, so tests can check the one-call-per-batch rule.
They declare the search's Evaluator seam (search/search.py): `submit(states).result()`,
`evaluate(states)` and `asynchronous`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

POTENTIAL_MOVES = 362


@dataclass
class FakeEvaluation:
    policy: np.ndarray
    winrate: float


def uniform_policy(state) -> np.ndarray:
    return np.full(POTENTIAL_MOVES, 1.0 / POTENTIAL_MOVES, dtype=np.float32)


def half(state) -> float:
    return 0.5


class _Answered:
    def __init__(self, evals):
        self._evals = evals

    def result(self):
        return self._evals


class FakeEvaluator:
    asynchronous = False

    def __init__(self, policy_fn=uniform_policy, value_fn=half):
        self.policy_fn = policy_fn
        self.value_fn = value_fn
        self.batches: list[int] = []

    @property
    def calls(self) -> int:
        return len(self.batches)

    @property
    def evaluations(self) -> int:
        return sum(self.batches)

    # What the GTP commands ask of a network besides evaluations (memory figures).
    def weights_bytes(self) -> int:
        return 0

    def set_cache_size(self, entries: int) -> None:
        pass

    def submit(self, states):
        """Answered at once (a synchronous evaluator)."""
        return _Answered(self.evaluate(states))

    def evaluate(self, states, symmetry=None):
        self.batches.append(len(states))
        return [FakeEvaluation(np.asarray(self.policy_fn(s), dtype=np.float32),
                               float(self.value_fn(s))) for s in states]


class HashEvaluator(FakeEvaluator):
    """Pseudo-random but reproducible outputs keyed by the position hash (a stand-in for a
    real network: different positions get different, fixed answers)."""

    def __init__(self, seed: int = 0):
        super().__init__(self._policy, self._value)
        self.seed = seed

    def _rng(self, state):
        return np.random.default_rng((state.board.hash ^ self.seed) & 0xFFFFFFFF)

    def _policy(self, state):
        p = self._rng(state).random(POTENTIAL_MOVES).astype(np.float32) ** 4
        return p / p.sum()

    def _value(self, state):
        return float(self._rng(state).random() * 0.6 + 0.2)


class AsyncHashEvaluator(HashEvaluator):
    """HashEvaluator that answers through submit(...).result(), like a GPU network: the
    search keeps one batch in flight. Records the most batches ever outstanding at once."""

    asynchronous = True

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self.outstanding = 0
        self.max_outstanding = 0

    def submit(self, states):
        evaluator = self
        states = list(states)
        self.outstanding += 1
        self.max_outstanding = max(self.max_outstanding, self.outstanding)

        class Pending:
            def result(self):
                evaluator.outstanding -= 1
                return evaluator.evaluate(states)
        return Pending()
