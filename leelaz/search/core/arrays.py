"""The compiled core's tree: node and child tiers as NumPy arrays, their growth, and the
conversions from and to the Python tree (search/node.py's UCTNode).

Owns: `CoreTree`. Imports: numpy, ctypes (libc's madvise, `_tier`), search.node (UCTNode, the
statuses, M2_START).

Why two tiers (Leela Zero's UCTNodePointer and UCTNode): most children are never visited, so
a child is a compact row (move int16, prior float32, node index or -1: 10 bytes), and only a
selected child gets a node row (its statistics, its own children's range: 86 bytes).

Why conversions: the core runs a search's batches; everything before and after them (tree
reuse, the root's preparation and noise, the move choice, statistics, LCB, resignation,
principal variations) is the Python search's own code on UCTNodes. `from_root` copies the
prepared root's tree in; `to_root` writes the grown tree back into the same root object
(the nodes that came in keep their identity, their positions too). `from_kept` makes
from_root's arrays for the next call from the last call's arrays, kept in step with the
UCTNodes, reading only the root and its children from the UCTNodes.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from array import array

import numpy as np

from leelaz.search.node import M2_START, UCTNode

_NODE_FIELDS = (("visits", np.int64), ("wins", np.float64), ("m2", np.float64),
                ("vl", np.int64), ("prior", np.float64), ("net", np.float64),
                ("status", np.int8), ("expanded", np.bool_), ("first", np.int64),
                ("count", np.int64), ("inflated", np.int64), ("nmove", np.int16))
_CHILD_FIELDS = (("cnode", np.int32), ("cmove", np.int16), ("cprior", np.float32))
#: The node fields whose change since the last write-back marks a row to write (`to_root`).
_WATCHED = ("visits", "vl", "status", "expanded", "inflated")
#: Those of them whose change means the node's children are to be written too.
_SPAN_FIELDS = ("expanded", "inflated")
#: Those whose -1 marks a row the UCTNodes do not hold yet (no row has -1 there).
_UNSET = ("visits", "inflated")


#: How much a tier grows when it runs out, and the room `from_root` leaves: a move at a GPU's
#: speed adds about as many nodes as it reused, each growth copies the tier and touches new
#: pages (about 6 ms at a few million child rows), and rows not yet used cost address space
#: only. Doubling grew the tiers 2-3 times a move (12 times in a first move).
GROWTH = 4

#: int32 -1 (no node row) for the most children a node has, as bytes (`from_root`).
_NO_NODES = memoryview(np.full(362, -1, np.int32).tobytes())


def _madvise():
    """libc's madvise where there is one (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_MADVISE = _madvise()
_MADV_NOHUGEPAGE = 15  # linux/mman.h
_PAGE = mmap.PAGESIZE
#: NumPy advises huge pages for arrays of this many bytes or more (numpy/_core/src/
#: multiarray/alloc.c), and only such tiers are marked: a mark on a smaller one, inside
#: malloc's heap, would split the heap's mapping for little (a self-play tree at 400 visits
#: has tiers of 0.3-1.2 MB).
_ADVISED_BYTES = 1 << 22


def _tier(size: int, dtype) -> np.ndarray:
    """An array for a tier, its rows unset (a row is written before it is read), that the
    kernel is told never to back with huge pages (MADV_NOHUGEPAGE).

    Why: NumPy advises the kernel to back large arrays with huge pages, and that advice
    stays on heap memory after the array is freed (numpy/numpy#31590). With transparent
    huge pages at `madvise` and their `defrag` at `madvise` (common defaults), a page fault
    in advised memory waits while the kernel compacts memory into a huge page: on a KVM
    guest a new tier's first writes took 36.7 us a 4 KB page with the advice and 3.4
    without, and `from_root` took over 100 ms on 6-14 of 66 moves at 0.5 s a move (up to
    450 ms) against 1-3 of 66 without (docs/log.md, 2026-12-02). The descents measured no
    slower without huge pages."""
    array_ = np.empty(size, dtype)
    if _MADVISE is not None and array_.nbytes >= _ADVISED_BYTES:
        start = -(-array_.ctypes.data // _PAGE) * _PAGE  # whole pages inside the array
        end = (array_.ctypes.data + array_.nbytes) // _PAGE * _PAGE
        if end > start:
            _MADVISE(start, end - start, _MADV_NOHUGEPAGE)  # advice only: never fatal
    return array_


class NotCovered(Exception):
    """A tree the core does not handle yet (a memory-trimmed node): the Python search runs."""


class CoreTree:
    """The arrays; `nodes_used[0]` and `children_used[0]` are the rows in use (the kernels
    append to them). Node 0 is the root."""

    def __init__(self, nodes: int = 1024, children: int = 16384):
        for name, dtype in _NODE_FIELDS:
            setattr(self, name, _tier(nodes, dtype))
        for name, dtype in _CHILD_FIELDS:
            setattr(self, name, _tier(children, dtype))
        self.nodes_used = np.zeros(1, np.int64)
        self.children_used = np.zeros(1, np.int64)
        self.objects: list[UCTNode | None] = []  # node row -> the UCTNode it came from
        self._written: tuple = tuple(np.zeros(0, getattr(self, name).dtype)
                                     for name in _WATCHED)

    def reserve(self, nodes: int, children: int, exactly: bool = False) -> None:
        """Room for `nodes` more node rows and `children` more child rows (GROWTH times
        the rows there are, when they run out; `exactly` that room, for a run that knows
        how much it will add)."""
        growth = 1 if exactly else GROWTH
        need = int(self.nodes_used[0]) + nodes
        if need > len(self.visits):
            size = max(need, growth * len(self.visits))
            for name, _ in _NODE_FIELDS:
                old = getattr(self, name)
                new = _tier(size, old.dtype)
                new[:len(old)] = old
                setattr(self, name, new)
        need = int(self.children_used[0]) + children
        if need > len(self.cnode):
            size = max(need, growth * len(self.cnode))
            for name, _ in _CHILD_FIELDS:
                old = getattr(self, name)
                new = _tier(size, old.dtype)
                new[:len(old)] = old
                setattr(self, name, new)

    # ------------------------------------------------------------------ in
    @classmethod
    def from_root(cls, root: UCTNode) -> CoreTree:
        """The tree under `root` (breadth first); raises NotCovered for a node expanded
        under memory pressure (its deeper expansion is the Python search's).

        Hot path (a reused tree at every move: thousands of nodes with ~250 children
        each): a node's uninflated children go in as its compact arrays' bytes, joined
        once for the whole tree, never as one Python value per child."""
        nodes: list[UCTNode] = [root]
        stats = []  # per node: visits, wins, m2, vl, prior, net, status, expanded, move
        firsts, counts, inflateds = [], [], []
        node_parts: list = []  # int32 bytes: a child's node row, -1 for an uninflated one
        move_parts: list = []  # int16 bytes: the children's moves
        prior_parts: list = []  # float32 bytes: their priors
        m = 0  # child rows so far
        i = 0
        while i < len(nodes):
            u = nodes[i]
            i += 1
            if u.psa_ratio > 0.0 and u.expanded:
                raise NotCovered("a node expanded under memory pressure")
            stats.append(_node_stats(u))
            if not u.expanded:
                firsts.append(0)
                counts.append(0)
                inflateds.append(0)
                continue
            kids = u.children
            moves = u._moves
            inflated = len(kids)
            count = len(moves) if moves else inflated
            firsts.append(m)
            counts.append(count)
            inflateds.append(inflated)
            m += count
            if inflated:
                node_parts.append(array("i", range(len(nodes), len(nodes) + inflated)))
                move_parts.append(array("h", [c.move for c in kids]))
                prior_parts.append(array("f", [c.prior for c in kids]))
                nodes += kids
            if count > inflated:  # the uninflated rest, straight from the compact arrays
                node_parts.append(_NO_NODES[:4 * (count - inflated)])
                move_parts.append(moves[inflated:] if inflated else moves)
                prior_parts.append(u._priors[inflated:] if inflated else u._priors)
        n = len(nodes)
        tree = cls(max(1024, GROWTH * n), max(16384, GROWTH * m))
        tree._write_stats(stats)
        tree.first[:n] = firsts
        tree.count[:n] = counts
        tree.inflated[:n] = inflateds
        if m:
            tree.cnode[:m] = np.frombuffer(b"".join(node_parts), np.int32)
            tree.cmove[:m] = np.frombuffer(b"".join(move_parts), np.int16)
            tree.cprior[:m] = np.frombuffer(b"".join(prior_parts), np.float32)
        tree.nodes_used[0] = n
        tree.children_used[0] = m
        tree.objects = nodes
        tree._remember_written()
        return tree

    @classmethod
    def from_kept(cls, kept: CoreTree, root: UCTNode, kernels) -> CoreTree | None:
        """`from_root(root)`, the same rows, with the nodes below the root's children copied
        from `kept` by two compiled calls (`kernels.subtree_order`, `copy_subtrees`)
        instead of read from the UCTNodes: `kept` is the last search's tree, written back
        into these UCTNodes at its end and not changed since (UCTSearch keeps it from one
        call to the next; any other search in between drops it). Where that write-back was
        of some rows only (`to_root`'s `spans`; UCTSearch.start then wrote the way to
        `root`, it and its children, `write_for_reuse`), the rows below keep what is still
        to write, and a later write-back writes it. `root` is a node of it
        two moves down at most; the root and its children, which `prepare_root` changed
        (inflated, noise, superko, time management's pruning undone), come from the
        UCTNodes. None when `root` is not found there or a root child disagrees with its
        row (the caller uses from_root).

        Why: at 0.5 s a move from_root took 27-46 ms a move on average (up to 153) of the
        515, a node at a time; this 9-10 ms (docs/performance.md, docs/log.md 2026-12-02)."""
        if root._moves or (root.psa_ratio > 0.0 and root.expanded):
            return None
        objects = kept.objects
        at = _row_of(kept, root)
        if at < 0:
            return None
        written = kept._written_rows(int(kept.nodes_used[0]))
        if any(getattr(kept, name)[at] != before[at] for name, before in zip(_WATCHED, written)):
            return None  # the root's UCTNode is behind its row (UCTSearch.start writes it)
        lo, inf = int(kept.first[at]), int(kept.inflated[at]) if kept.expanded[at] else 0
        rows = {id(objects[r]): r for r in kept.cnode[lo:lo + inf].tolist()}
        kids = root.children
        k = len(kids)
        starts = np.full(k, -1, np.int64)
        for i, c in enumerate(kids):
            r = rows.get(id(c), -1)
            if r < 0:
                if c.expanded or c.children:
                    return None  # a child the last search did not make: not fresh
                continue
            if (c.visits != kept.visits[r] or c.expanded != kept.expanded[r]
                    or len(c.children) != kept.inflated[r]
                    or (len(c._moves) if c._moves else len(c.children)) != kept.count[r]
                    or (c.psa_ratio > 0.0 and c.expanded)):
                return None
            starts[i] = r
        order = np.empty(int(kept.nodes_used[0]) + k, np.int64)
        n, below = kernels.subtree_order(starts, kept.expanded, kept.first, kept.count,
                                         kept.inflated, kept.cnode, order)
        tree = cls(max(1024, GROWTH * (n + 1)), max(16384, GROWTH * (k + below)))
        m = kernels.copy_subtrees(order, n, k, 1, k, kept.visits, kept.wins, kept.m2,
                                  kept.vl, kept.prior, kept.net, kept.status, kept.expanded,
                                  kept.first, kept.count, kept.inflated, kept.nmove,
                                  kept.cnode, kept.cmove, kept.cprior, tree.visits, tree.wins,
                                  tree.m2, tree.vl, tree.prior, tree.net, tree.status,
                                  tree.expanded, tree.first, tree.count, tree.inflated,
                                  tree.nmove, tree.cnode, tree.cmove, tree.cprior)
        # The root and its children from the UCTNodes, as from_root reads them (a child's
        # expansion is its row's, checked above).
        tree._write_stats([_node_stats(u) for u in [root, *kids]])
        tree.first[0] = 0
        tree.count[0] = k if root.expanded else 0
        tree.inflated[0] = k if root.expanded else 0
        if k:
            tree.cnode[:k] = np.arange(1, k + 1, dtype=np.int32)
            tree.cmove[:k] = [c.move for c in kids]
            tree.cprior[:k] = np.array([c.prior for c in kids], np.float32)
        tree.nodes_used[0] = n + 1
        tree.children_used[0] = m
        below = order[k:n]
        tree.objects = [root, *kids, *[objects[r] for r in below.tolist()]]
        tree._remember_written()
        # The rows below the root's children hold in their UCTNodes what they held in the
        # kept tree's: all of it when that was written back whole, else what a later
        # write-back is still to write (to_root's `spans`).
        for name, before, now in zip(_WATCHED, written, tree._written):
            now[k + 1:] = before[below]
        return tree

    def _write_stats(self, stats: list[tuple]) -> None:
        """Rows 0 .. len(stats) - 1's statistics from `_node_stats` tuples."""
        n = len(stats)
        for name, col in zip(_STAT_FIELDS, zip(*stats)):
            getattr(self, name)[:n] = col

    # ------------------------------------------------------------------ out
    def rows_written(self) -> int:
        """The node rows the UCTNodes know of since the last write-back (or `from_root`):
        all of them written, unless that write-back was given `spans`."""
        return len(self._written[0])

    def in_sync(self) -> bool:
        """Whether the UCTNodes hold every row as it is now (`to_root` would write none)."""
        n = int(self.nodes_used[0])
        return n == self.rows_written() and all(
            np.array_equal(getattr(self, name)[:n], before)
            for name, before in zip(_WATCHED, self._written))

    def _remember_written(self) -> None:
        """What the UCTNodes hold now (see `to_root`)."""
        n = int(self.nodes_used[0])
        self._written = tuple(getattr(self, name)[:n].copy() for name in _WATCHED)

    def _written_rows(self, n: int) -> tuple:
        """The watched fields as the UCTNodes hold them, for `n` rows: a row they do not
        hold yet has visits and inflated -1 (values no row has), so it differs from any."""
        old = self._written
        grow = n - len(old[0])
        if grow <= 0:
            return old
        return tuple(np.concatenate((before, np.full(grow, -1 if name in _UNSET else 0,
                                                     before.dtype)))
                     for name, before in zip(_WATCHED, old))

    def write_for_reuse(self, moves, boards=None) -> int:
        """Where only the rows a search's end reads were written back (to_root's `spans`):
        write the rows down the played `moves` from the root, the row they reach and its
        children, which the tree reuse and the next root's preparation read (search/root.py
        `advance`, `prepare_root`; `from_kept` checks them). Returns that row, or -1 when a
        move is not an inflated child on the way (the tree is not reused)."""
        path = [0]
        r = 0
        for move in moves:  # search/root.moves_since
            if not self.expanded[r]:
                return -1
            lo = int(self.first[r])
            at = np.flatnonzero(self.cmove[lo:lo + int(self.inflated[r])] == move)
            if not len(at):
                return -1
            r = int(self.cnode[lo + int(at[0])])
            path.append(r)
        rows = np.array(path, np.int64)
        self.to_root(boards, np.concatenate((rows, self._children_of(rows[-1:]))))
        return r

    def nodes_below(self, row: int, kernels) -> int:
        """search/stats.count_nodes of row `row`'s node, on the arrays: its child slots and
        those of every visited node below it. Why: after a write-back of some rows only,
        the UCTNodes below are behind their rows (and the walk took ~4.5 ms a move here)."""
        order = np.empty(int(self.nodes_used[0]) + 1, np.int64)
        n, _ = kernels.subtree_order(np.array([row], np.int64), self.expanded, self.first,
                                     self.count, self.inflated, self.cnode, order)
        rows = order[1:n]
        own = int(self.count[row]) if self.expanded[row] else 0
        counted = rows[(self.visits[rows] > 0) & self.expanded[rows]]
        return own + int(self.count[counted].sum())

    def _children_of(self, rows: np.ndarray) -> np.ndarray:
        """The node rows of the inflated children of the expanded ones among `rows`."""
        rows = rows[self.expanded[rows]]
        counts = self.inflated[rows]
        total = int(counts.sum())
        if not total:
            return np.zeros(0, np.int64)
        starts = self.first[rows]
        at = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(total)
        return self.cnode[at].astype(np.int64)

    def to_root(self, boards=None, spans=None) -> UCTNode:
        """Write the arrays back as UCTNodes: the objects that came in are updated in place,
        new nodes are made; `boards[row]`, where given, becomes a node's kept position.
        Returns the root (the same object as `from_root`'s).

        Only the rows changed since the last write (or `from_root`) are written: a node's
        statistics change only with its visits, virtual loss or status, its children only
        with its expansion or inflation, and its position is kept when a descent passes it
        (which adds virtual loss). So lz-analyze's reports, a write each, cost what changed,
        not the tree.

        `spans`: the node rows whose children a reader is about to read (core/report.py
        `rows_read`); then only their own children and their inflated children's
        statistics are written, and the other rows wait for a later write-back without
        `spans` (`in_sync` is False until then). Why: the end of a genmove reads a few
        hundred of the thousands of nodes its search made (docs/log.md, 2026-12-02)."""
        n = int(self.nodes_used[0])
        objects = self.objects
        objects += [None] * (n - len(objects))
        old = self._written_rows(n)
        differs = np.zeros(n, np.bool_)
        respan = np.zeros(n, np.bool_)  # expanded or inflated since: children to write
        for name, before in zip(_WATCHED, old):
            changed = getattr(self, name)[:n] != before
            differs |= changed
            if name in _SPAN_FIELDS:
                respan |= changed
        if spans is not None:
            spans = np.asarray(spans, np.int64)
            read = np.zeros(n, np.bool_)
            read[spans] = True
            respan &= read
            read[self._children_of(spans)] = True
            differs &= read
        rows = np.flatnonzero(differs)
        keep = boards is not None
        fields = zip(rows.tolist(), self.visits[rows].tolist(), self.wins[rows].tolist(),
                     self.m2[rows].tolist(), self.vl[rows].tolist(),
                     self.prior[rows].tolist(), self.net[rows].tolist(),
                     self.status[rows].tolist(), self.nmove[rows].tolist())
        for nd, visits, wins, m2, vl, prior, net, status, move in fields:
            u = objects[nd]
            if u is None:
                u = objects[nd] = UCTNode(move, prior)
                if keep and nd < len(boards):
                    u.board = boards[nd]
            else:
                u.prior = prior
                if keep and u.board is None and nd < len(boards):
                    u.board = boards[nd]
            u.visits = visits
            u.black_wins = wins
            u.m2 = m2
            u.virtual_loss = vl
            u.net_eval = net
            u.status = status
        # Only a new row, or one expanded or inflated since, has children to write: the rest
        # (most changed rows: a path's nodes with a visit more) keep theirs.
        respanned = np.flatnonzero(respan)
        expanded = respanned[self.expanded[respanned]]
        children = zip(expanded.tolist(), self.first[expanded].tolist(),
                       self.count[expanded].tolist(), self.inflated[expanded].tolist())
        empty_moves, empty_priors = array("h"), array("f")
        cnode = self.cnode
        # Each node's compact arrays straight from the tiers' bytes (one copy each: most
        # changed rows are new leaves with ~250 children and none inflated)
        move_bytes = memoryview(self.cmove).cast("B")
        prior_bytes = memoryview(self.cprior).cast("B")
        for nd, lo, k, inf in children:
            u = objects[nd]
            u.expanded = True
            u.psa_ratio = 0.0
            u.children = [objects[c] for c in cnode[lo:lo + inf].tolist()] if inf else []
            if inf < k:
                u._moves = moves = array("h")
                moves.frombytes(move_bytes[2 * lo:2 * (lo + k)])
                u._priors = priors = array("f")
                priors.frombytes(prior_bytes[4 * lo:4 * (lo + k)])
            else:
                u._moves = empty_moves
                u._priors = empty_priors
        del move_bytes, prior_bytes  # the tiers may grow (reserve) once these are gone
        if spans is None:
            self._remember_written()
        else:  # what was written is remembered; the rest keeps what the UCTNodes hold
            for name, before in zip(_WATCHED, old):
                at = respanned if name in _SPAN_FIELDS else rows
                before[at] = getattr(self, name)[at]
            self._written = old
        return objects[0]


#: The node fields `from_root` and `from_kept` read from a UCTNode, in `_node_stats`' order.
_STAT_FIELDS = ("visits", "wins", "m2", "vl", "prior", "net", "status", "expanded", "nmove")


def _node_stats(u: UCTNode) -> tuple:
    return (u.visits, u.black_wins, u.m2, u.virtual_loss, u.prior, u.net_eval, u.status,
            u.expanded, u.move)


def _row_of(kept: CoreTree, node: UCTNode) -> int:
    """The row of `node` in `kept`: its root, or a node one or two moves below; -1 if not."""
    objects = kept.objects
    level = [0]
    for depth in range(3):
        below = []
        for r in level:
            if objects[r] is node:
                return r
            if depth < 2 and kept.expanded[r]:
                lo = int(kept.first[r])
                below += kept.cnode[lo:lo + int(kept.inflated[r])].tolist()
        level = below
    return -1


assert M2_START == 1e-4  # kernels.M2_START repeats it
