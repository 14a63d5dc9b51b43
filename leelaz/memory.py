"""Memory accounting, all of it, in Leela Zero 0.17's own figures (src/NNCache.cpp, GTP.cpp).

Owns: what the tree, the network cache and the network are said to cost (Leela Zero's
estimates, not what Python really spends: GUIs and lz-setoption users compare the figures with
Leela Zero's), how a memory budget is split between cache and tree (`split_memory`, Leela
Zero's set_max_memory), how much of each expansion the tree keeps as it fills
(`min_psa_ratio`), the cache size chosen from -p/-v, and the lz-memory_report text.
Imports: stdlib only; anyone may import it (the search sizes its tree with it, the cache its
entries, the GTP commands split and report with it). The network's own size needs its weights'
shapes: nn/network.py `Network.estimated_size`.
"""

from __future__ import annotations

from typing import NamedTuple

MIB = 1024 * 1024
#: Bytes per child slot and per visited (inflated) node in Leela Zero's tree accounting.
CHILD_BYTES = 8
NODE_BYTES = 64
#: Leela Zero's estimate per network cache entry.
CACHE_ENTRY_BYTES = 1468
#: Bounds of the cache size chosen from playouts/visits (clamp(3 * min(playouts, visits))).
MIN_CACHE_ENTRIES = 6000
MAX_CACHE_ENTRIES = 150000
#: Charged for the engine itself besides the weights: Leela Zero's OpenCL-capable builds
#: count 85 MiB per GPU, even with --cpu-only.
GPU_OVERHEAD_BYTES = 85 * MIB
#: Leela Zero's start-up budget (GTP::setup_default_parameters), of which DEFAULT_CACHE_PCT
#: percent goes to the cache, until `maximum memory use` is set.
DEFAULT_MAX_MEMORY_BYTES = 5_200_000_000
DEFAULT_CACHE_PCT = 10
#: The tree's own limit before any split (lz-setoption memory sets it).
DEFAULT_MAX_TREE_BYTES = 4_598_000_000


def tree_bytes(nodes: int, visits: int) -> int:
    """The tree's size: 8 B per child slot, 64 B per root visit (a visited node)."""
    return CHILD_BYTES * nodes + NODE_BYTES * visits


def min_psa_ratio(used_bytes: int, max_tree_bytes: int) -> float:
    """How much of each expansion to keep as the tree fills its memory (Leela Zero's
    get_min_psa_ratio): everything below 50%, priors >= 0.1% of the best below 95%, >= 1%
    below 100%, nothing when full."""
    full = used_bytes / max(1, max_tree_bytes)
    if full <= 0.5:
        return 0.0
    if full <= 0.95:
        return 0.001
    return 0.01 if full < 1.0 else 2.0


def cache_entries_for(playouts: int, visits: int) -> int:
    """Leela Zero's set_size_from_playouts: clamp(3 * min(playouts, visits), 6000, 150000);
    limits of 0 (none) are ignored."""
    limits = [n for n in (playouts, visits) if n > 0]
    wanted = 3 * min(limits) if limits else MAX_CACHE_ENTRIES
    return min(max(wanted, MIN_CACHE_ENTRIES), MAX_CACHE_ENTRIES)


class MemorySplit(NamedTuple):
    max_tree_bytes: int  # the tree's limit (the search's max_tree_bytes)
    cache_entries: int  # the network cache's size
    line: str  # Leela Zero's `Setting max tree size ...` line


def split_memory(total: int, cache_pct: int, network_bytes: int) -> MemorySplit:
    """Leela Zero's set_max_memory: what the network (plus GPU_OVERHEAD_BYTES) leaves of
    `total` bytes, split between cache (`cache_pct` percent) and tree, each charged 10%
    overhead. Raises ValueError with Leela Zero's message when something does not fit."""
    base = network_bytes + GPU_OVERHEAD_BYTES
    if total < base:
        raise ValueError(f"Not enough memory for network. {base // MIB} MiB required.")
    usable = total - base
    cache = usable * cache_pct // 100
    entries = cache * 10 // 11 // CACHE_ENTRY_BYTES
    if entries < MIN_CACHE_ENTRIES:
        raise ValueError("Not enough memory for cache.")
    tree = usable - cache
    if tree < 100 * MIB:
        raise ValueError("Not enough memory for search tree.")
    return MemorySplit(tree * 10 // 11, entries,
                       f"Setting max tree size to {tree // MIB} MiB and cache size to "
                       f"{cache // MIB} MiB.")


def memory_report_text(network_bytes: int, tree_size: int, cache_size: int) -> str:
    """lz-memory_report's text: tree and cache get 10% overhead; integer MiB."""
    base = network_bytes + GPU_OVERHEAD_BYTES
    tree = tree_size * 11 // 10
    cache = cache_size * 11 // 10
    total = base + tree + cache
    return (f"Estimated total memory consumption: {total // MIB} MiB.\n"
            f"Network with overhead: {base // MIB} MiB / Search tree: {tree // MIB} MiB / "
            f"Network cache: {cache // MIB}\n")
