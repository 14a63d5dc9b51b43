"""Several backends as one: each batch is split across the devices that repeated --gpu ids name.

Owns: MultiDeviceBackend, the split of a batch into contiguous chunks (one per device, equal
sizes, the first devices taking the remainder), as float planes or as packed positions
(`split_packed`, the inverse of backends/mux.join_packed) when every part builds its planes
itself, submitting every chunk before waiting on any so that the devices compute at the same
time, and joining the answers in the batch's order.
Leela Zero 0.17 runs one network per --gpu id and lets its worker threads feed them; here the
search hands over whole batches, so the split happens inside the batch instead.
Imports: numpy, backends.base. It never builds a backend: device_choice does (one OpenCL or
PyTorch backend per id) and wraps them.
"""

from __future__ import annotations

import numpy as np

from leelaz.backends.base import PACKED_KOMI_BYTES, PACKED_ROW, Backend, Pending


def split_sizes(batch: int, parts: int) -> list[int]:
    """Chunk sizes for `batch` rows over at most `parts` backends: equal, the first ones take
    the remainder; a batch smaller than `parts` uses only its first `batch` backends (one row
    each). An empty batch is one empty chunk, so the answer still has the right shapes."""
    used = max(1, min(parts, batch))
    base, extra = divmod(batch, used)
    return [base + (i < extra) for i in range(used)]


def split_packed(packed: bytes, batch: int, sizes: list[int]) -> list[bytes]:
    """`batch` positions in nn/features.packed_inputs' layout (every position's boxes, then
    every (side, symmetry) pair, then the dynamic-komi section when there is one) as
    consecutive chunks of `sizes` positions, each in the same layout."""
    pairs_at = batch * PACKED_ROW
    komi_at = batch * (PACKED_ROW + 2)
    with_komi = len(packed) > komi_at
    chunks, start = [], 0
    for size in sizes:
        end = start + size
        chunk = packed[start * PACKED_ROW:end * PACKED_ROW] + \
            packed[pairs_at + 2 * start:pairs_at + 2 * end]
        if with_komi:
            chunk += packed[komi_at + PACKED_KOMI_BYTES * start:komi_at + PACKED_KOMI_BYTES * end]
        chunks.append(chunk)
        start = end
    return chunks


class MultiDeviceBackend(Backend):
    """Backend.forward/submit over several backends (typically one OpenCLBackend per device).

    The capabilities the rest of the program reads (name, device, precision, weights) come
    from the parts, so the start-up code and the search see one backend.
    """

    def __init__(self, backends: list[Backend]):
        if not backends:
            raise ValueError("MultiDeviceBackend needs at least one backend")
        self.parts = list(backends)
        self.name = self.parts[0].name
        #: The search pipelines only when every part returns from submit before it is done.
        self.asynchronous = all(b.asynchronous for b in self.parts)

    @property
    def devices(self) -> list:
        return [b.device for b in self.parts]

    @property
    def device(self):
        """The first part's device (what callers that expect one device look at)."""
        return self.devices[0]

    @property
    def precision(self) -> str | None:
        """The parts' precision, or their precisions joined by commas when they differ."""
        found = [b.precision for b in self.parts]
        return found[0] if len(set(found)) == 1 else ",".join(map(str, found))

    @property
    def weights(self):
        return self.parts[0].weights

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate a batch on all the devices at once; see backends/base.py for the shapes."""
        return self.submit(planes).result()

    def submit(self, planes: np.ndarray) -> _Joined:
        """Start every chunk on its backend, then return without waiting for any."""
        pending, start = [], 0
        for backend, size in zip(self.parts, split_sizes(len(planes), len(self.parts))):
            pending.append(backend.submit(planes[start:start + size]))
            start += size
        return _Joined(pending)

    @property
    def accepts_packed_inputs(self) -> bool:
        """Packed positions when every part takes them (PyTorch's and OpenCL's on a GPU), so
        that several GPUs cost the host no more than one: 3.5 kB a position, not 26 kB."""
        return all(b.accepts_packed_inputs for b in self.parts)

    def submit_packed(self, packed: bytes, batch: int) -> _Joined:
        """As submit, for `batch` positions in nn/features.packed_inputs' layout."""
        sizes = split_sizes(batch, len(self.parts))
        chunks = split_packed(packed, batch, sizes)
        return _Joined([backend.submit_packed(chunk, size)
                        for backend, chunk, size in zip(self.parts, chunks, sizes)])


class _Joined:
    """The chunks of one batch under way: `result()` waits for each and concatenates."""

    def __init__(self, pending: list[Pending]):
        self.pending = pending

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        answers = [p.result() for p in self.pending]
        if len(answers) == 1:
            return answers[0]
        return (np.concatenate([policy for policy, _ in answers]),
                np.concatenate([value for _, value in answers]))
