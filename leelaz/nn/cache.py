"""The network cache (reference doc 3.9): evaluations keyed by 64-bit position hash.

Owns: `NNCache`. Imports: stdlib only.

Like Leela Zero's NNCache: a bounded map with FIFO eviction (the oldest insertion goes first;
look-ups do not refresh an entry), inserting a key already present changes nothing, and the key
is the position hash, which does not cover history. Leela Zero counts 1468 bytes per entry for
its memory figures; so do we (ENTRY_SIZE), whatever Python really spends.
"""

from __future__ import annotations

from collections import OrderedDict

ENTRY_SIZE = 1468
#: Bounds of the size chosen from playouts/visits (LZ: clamp(3 * min(playouts, visits))).
MIN_CACHE_COUNT = 6000
MAX_CACHE_COUNT = 150000


class NNCache:
    """Bounded FIFO map hash -> value (an Evaluation); not thread-safe by itself."""

    def __init__(self, size: int = MAX_CACHE_COUNT):
        self._entries: OrderedDict[int, object] = OrderedDict()
        self._size = max(0, int(size))
        self.hits = 0
        self.lookups = 0

    @property
    def size(self) -> int:
        """The most entries kept."""
        return self._size

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: int):
        """The entry for `key`, or None."""
        self.lookups += 1
        value = self._entries.get(key)
        if value is not None:
            self.hits += 1
        return value

    def lookup_first(self, keys):
        """(position in `keys`, entry) of the first key present, or None; counts as that many
        `lookup` calls. Hot path: one call for the 7 mirrored keys of a new leaf."""
        get = self._entries.get
        for n, key in enumerate(keys):
            value = get(key)
            if value is not None:
                self.lookups += n + 1
                self.hits += 1
                return n, value
        self.lookups += len(keys)
        return None

    def insert(self, key: int, value) -> None:
        """Add an entry unless present; evict the oldest ones beyond the size."""
        if self._size == 0 or key in self._entries:
            return
        self._entries[key] = value
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def resize(self, size: int) -> None:
        """Set the bound, evicting the oldest entries if needed (LZ's NNCache::resize)."""
        self._size = max(0, int(size))
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def estimated_bytes(self) -> int:
        """Bytes as LZ counts them: entries x 1468."""
        return len(self._entries) * ENTRY_SIZE

    def set_size_from_playouts(self, playouts: int, visits: int) -> None:
        """LZ's set_size_from_playouts: clamp(3 * min(playouts, visits), 6000, 150000)."""
        limits = [n for n in (playouts, visits) if n > 0]
        wanted = 3 * min(limits) if limits else MAX_CACHE_COUNT
        self.resize(min(max(wanted, MIN_CACHE_COUNT), MAX_CACHE_COUNT))
