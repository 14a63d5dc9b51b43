"""A backend that is still being opened: the engine answers GTP while PyTorch starts.

Owns: `DeferredBackend`. Imports: stdlib threading, backends.base.

Why: on an NVIDIA GPU the engine's network runs through PyTorch, and importing torch,
starting CUDA and capturing the CUDA graphs take 4-6 s (dev/torch_start_probe.py), where
Leela Zero 0.17 answers its first command after half a second. Most of what a GUI sends
first (`name`, `protocol_version`, `list_commands`, `boardsize`, `komi`, `play` ...) needs no
network, so the engine opens the backend in a thread of its own and answers those at once;
the first command that evaluates a position (`genmove`, `lz-analyze`, `heatmap` ...) waits
for the thread, exactly as it would have waited at start-up. lc0 loads its network on the
first search for the same reason.

Every capability and method is the opened backend's: reading one waits until the opener is
done (and raises what it raised, every time, so a failure reaches each caller as the plain
backend's would). The two things known before (`weights`, `expected_on_gpu`) are given by
the caller: root parallelism decides at start-up whether the search runs on a GPU
(root_parallel/pool.runs_on_gpu) and must not wait for that.
"""

from __future__ import annotations

import atexit
import threading

from leelaz.backends.base import Backend, NetWeights


#: The openers still running: a quit (or any exit) waits for them, so that the interpreter
#: is never torn down under torch's import or CUDA's start.
_OPENING: set[threading.Thread] = set()


def _wait_for_openers() -> None:
    for thread in list(_OPENING):
        thread.join()


atexit.register(_wait_for_openers)


class DeferredBackend(Backend):
    """The backend `opener()` returns, opened in a daemon thread begun at construction."""

    def __init__(self, opener, *, weights: NetWeights | None, expected_on_gpu: bool):
        self.weights = weights
        #: What runs_on_gpu answers while the opener runs (afterwards the backend's own).
        self.expected_on_gpu = expected_on_gpu
        self._backend: Backend | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._open, args=(opener,),
                                        name="leelaz-backend-open", daemon=True)
        _OPENING.add(self._thread)
        self._thread.start()

    def _open(self, opener) -> None:
        try:
            self._backend = opener()
        except BaseException as exc:  # noqa: BLE001 - handed to every caller (`opened`)
            self._error = exc
        finally:
            _OPENING.discard(self._thread)

    def wait(self) -> None:
        """Until the opener is done, whatever it gave (the engine's quit waits so)."""
        self._thread.join()

    @property
    def ready(self) -> bool:
        """The opener is done (the backend opened, or it failed); never waits."""
        return not self._thread.is_alive()

    def opened(self) -> Backend:
        """The backend, once the opener is done; raises what the opener raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._backend

    # Backend's capabilities, the opened backend's
    @property
    def name(self) -> str:
        return self.opened().name

    @property
    def asynchronous(self) -> bool:
        return self.opened().asynchronous

    @property
    def max_batch(self):
        return self.opened().max_batch

    @property
    def precision(self):
        return self.opened().precision

    @property
    def device(self):
        return self.opened().device

    @property
    def accepts_packed_inputs(self) -> bool:
        return self.opened().accepts_packed_inputs

    def forward(self, planes):
        return self.opened().forward(planes)

    def submit(self, planes):
        return self.opened().submit(planes)

    def submit_packed(self, packed: bytes, batch: int):
        return self.opened().submit_packed(packed, batch)

    def __getattr__(self, name: str):
        """Anything else a backend has (a GPU backend's own methods and figures)."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.opened(), name)
