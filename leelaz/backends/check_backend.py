"""The `check` backend: another backend whose answers are compared with a reference's.

Owns: `CheckBackend`, `SelfCheckError` and `check_error`, the one measure of disagreement.
Imports: numpy, backends.base, and backends.numpy_backend lazily (the default reference); an
inner backend given by name is made with the registry's `create_backend`, which the registry
hands it.

As lc0's `check` network: wrap a backend under test (`inner`, by registry name or as an
object) and a reference (NumPy by default); a batch is re-run on the reference with probability
`probability` (1.0: every batch), and a disagreement beyond `tolerance` (L2 over the softmaxed
policy and the value) raises SelfCheckError. Answers are always the inner backend's.
"""

from __future__ import annotations

import numpy as np

from leelaz.backends.base import Backend, NetWeights, Pending


class SelfCheckError(RuntimeError):
    """A backend's evaluation disagreed with its reference beyond tolerance."""


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits.astype(np.float64) - np.max(logits))
    return e / e.sum()


def check_error(policy_logits: np.ndarray, value: float, ref_logits: np.ndarray,
                ref_value: float) -> float:
    """L2 distance between two answers for one position, over priors, pass and value."""
    got = np.append(_softmax(policy_logits), value)
    want = np.append(_softmax(ref_logits), ref_value)
    return float(np.sqrt(np.sum((got - want) ** 2)))


def raise_if_apart(error: float, tolerance: float, what: str) -> None:
    """SelfCheckError (`what` names the check) when `error` exceeds `tolerance`; NaN fails."""
    if not error <= tolerance:
        raise SelfCheckError(f"{what} mismatch: L2 error {error:.4g} over priors, "
                             f"pass and value (tolerance {tolerance}).")


class CheckBackend(Backend):
    """`inner`'s answers, checked against `reference`'s; see the module docstring."""

    name = "check"

    def __init__(self, weights: NetWeights, inner: Backend | str = "numpy",
                 reference: Backend | None = None, probability: float = 1.0,
                 tolerance: float = 0.2, seed: int | None = None, create=None, **options):
        """`create` is the registry's create_backend (backends/__init__.py passes it: this
        module cannot import the registry, which imports it), for an `inner` given by name."""
        self.weights = weights
        if isinstance(inner, str):
            if create is None:
                raise TypeError(f"CheckBackend: inner backend {inner!r} by name needs the "
                                "registry's create_backend (create=)")
            inner = create(inner, weights, **options)
        self.inner = inner
        if reference is None:
            from leelaz.backends.numpy_backend import NumpyBackend

            reference = NumpyBackend(weights)
        self.reference = reference
        self.probability = probability
        self.tolerance = tolerance
        self.checked = 0  # positions compared so far
        self._rng = np.random.default_rng(seed)

    @property
    def asynchronous(self) -> bool:  # type: ignore[override]
        return self.inner.asynchronous

    @property
    def precision(self) -> str | None:  # type: ignore[override]
        return self.inner.precision

    @property
    def device(self):  # type: ignore[override]
        return self.inner.device

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.submit(planes).result()

    def submit(self, planes: np.ndarray) -> Pending:
        return _Checked(self, planes, self.inner.submit(planes))

    def _compare(self, planes: np.ndarray, policy: np.ndarray, value: np.ndarray) -> None:
        if not len(planes) or self._rng.random() >= self.probability:
            return
        ref_policy, ref_value = self.reference.forward(planes)
        for i in range(len(planes)):
            raise_if_apart(check_error(policy[i], value[i], ref_policy[i], ref_value[i]),
                           self.tolerance, f"{self.inner.name} check against {self.reference.name}")
        self.checked += len(planes)


class _Checked:
    def __init__(self, backend: CheckBackend, planes: np.ndarray, pending: Pending):
        self._backend, self._planes, self._pending = backend, planes, pending

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        policy, value = self._pending.result()
        self._backend._compare(self._planes, policy, value)
        return policy, value
