"""The network cache (src/NNCache.cpp): evaluations keyed by 64-bit position hash.

Owns: `NNCache`. Imports: stdlib, leelaz.memory.

Like Leela Zero's NNCache: a bounded map with FIFO eviction (the oldest insertion goes first;
look-ups do not refresh an entry), inserting a key already present changes nothing, and the key
is the position hash, which does not cover history. Its size in bytes and the size chosen from
-p/-v are Leela Zero's figures, from leelaz/memory.py.
"""

from __future__ import annotations

from collections import OrderedDict

from leelaz.memory import CACHE_ENTRY_BYTES, MAX_CACHE_ENTRIES, cache_entries_for


class NNCache:
    """Bounded FIFO map hash -> value (an Evaluation); not thread-safe by itself."""

    def __init__(self, size: int = MAX_CACHE_ENTRIES):
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

    def lookup_many(self, keys) -> list:
        """`lookup` of each key in order (as many look-ups counted) in one call. Hot path: a
        batch's leaves (the compiled search's, nn/network.py submit_histories)."""
        found = list(map(self._entries.get, keys))
        self.lookups += len(found)
        self.hits += len(found) - found.count(None)
        return found

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

    def insert_many(self, keys, values) -> None:
        """`insert` of each (key, value) pair in order, in one call (a batch's evaluations)."""
        if self._size == 0:
            return
        entries, size = self._entries, self._size
        for key, value in zip(keys, values):
            if key not in entries:
                entries[key] = value
                if len(entries) > size:  # at once, as `insert`: a key evicted here is new again
                    entries.popitem(last=False)

    def resize(self, size: int) -> None:
        """Set the bound, evicting the oldest entries if needed (LZ's NNCache::resize)."""
        self._size = max(0, int(size))
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def estimated_bytes(self) -> int:
        """Bytes as LZ counts them: entries x 1468."""
        return len(self._entries) * CACHE_ENTRY_BYTES

    def set_size_from_playouts(self, playouts: int, visits: int) -> None:
        """LZ's set_size_from_playouts (memory.cache_entries_for)."""
        self.resize(cache_entries_for(playouts, visits))
