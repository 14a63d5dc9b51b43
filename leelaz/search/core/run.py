"""A search call's batches on the compiled core: `CoreRun`, a SearchRun whose descents,
board play, expansion and backups run in core/kernels.py over core/arrays.py's tree.

Owns: `CoreRun`, `covers` (which calls the core runs; the others are the Python search's)
and `core_enabled` / `kernels` / `compile_here` (the switch, and numba loaded once, its first
compilation in a child process). Imports: numpy, subprocess, search.run (SearchRun, whose loop
rules, limits, time management and reports it keeps), search.root, search.core.arrays,
search.core.leaf_inputs, and search.core.kernels lazily (numba).

A batch: one `collect` call (every descent of the batch, terminal playouts backed up), the
leaves for the evaluator made of the kernels' arrays (core/leaf_inputs.py: their input
history, side to move and hash, no Python Board; early in the game and with a network komi
GameStates of Python Boards, one copy + play a leaf, as the Python search makes them), one
evaluator call, then
`expansion_keys`, NumPy's row sort and `attach` (children and backups): three compiled calls
a batch whatever its size. With an asynchronous evaluator the batch is left on the
device while the next is collected, as SearchRun does. Everything before the first batch
(the root: reuse, evaluation, superko, noise) and after the last (statistics, the move
choice) is the Python search's code on the UCTNode tree the core writes back: all of it,
or for GTP's calls only the rows those read (`partial_write_back`), the rest carried in the
arrays to the next call.

Covered: `UCTSearch.think` (genmove, lz-genmove_analyze), `UCTSearch.ponder` (pondering,
lz-analyze) and a driver's steps after `UCTSearch.start_move` (self-play: `collect`, `apply`
or `apply_evaluations`, `after_batch`, which writes the tree back when it stops the run, then
`finish`), at any batch size, noise, time management (pruning included), tree reuse (through
the conversions; the last call's arrays, `kept_tree`, give the next call's through
`CoreTree.from_kept`), move restrictions (avoid/allow: the leaves' expansion filters their points
as SearchRun.expand does), progress reports (the UCTNodes are brought up to date before each
snapshot, writing only the rows changed since the last), memory limits (the run hands its
tree back to the Python search once memory pressure trims expansions, see `_hand_over`). Not
covered, so the Python search runs: the dynamic-komi modes and dynamic FPU, and
`UCTSearch.start`'s other drivers (review). Self-play's forced playouts are
`kernels.forced_child`. `covers` decides;
tests/test_search_core.py checks each fallback.

A call begun before the kernels are ready runs its batches on the Python search and switches
to the core between two batches once they are (`_hand_over_or_switch`).

The switch: the core runs where it covers the call once its kernels are ready (compiled
once per install, off the clock: see `kernels`); LEELAZ_SEARCH_CORE=python forces the Python
search, its reference; without numba one stderr line says the search is pure Python.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from leelaz.game.coords import ALL_VERTICES, BLACK, WHITE
from leelaz.search import run as search_run
from leelaz.search.core import report as core_report
from leelaz.search.core.arrays import CoreTree, NotCovered
from leelaz.search.core.leaf_inputs import HISTORY, LeafInputs
from leelaz.search.lcb import TABLE_SIZE, t_quantiles
from leelaz.search.node import RootSelector
from leelaz.search.root import prepare_root
from leelaz.search.run import _LEAF, LeafBatch, SearchRun
from leelaz.search.timemanage import playouts_left

CORE_VARIABLE = "LEELAZ_SEARCH_CORE"
#: =1: the first search waits for the kernels instead of running on the Python search
#: (tests and benchmarks that must measure the core from the start).
WAIT_VARIABLE = "LEELAZ_SEARCH_CORE_WAIT"
#: The longest descent the core follows (a path never gets near it in a real game).
MAX_DEPTH = 1024
#: Node rows added since the last write-back after which the tree is written back between
#: two batches, in a run that writes back every row (not `partial_write_back`). Why:
#: progress reports read the arrays (core/report.py), so without this the whole search's
#: nodes would be written back at its end, while the GUI waits for the answer to the
#: command that stopped lz-analyze (about 7 us a node: seconds after a long analysis on a
#: GPU); so the end writes at most about this many.
WRITE_BACK_ROWS = 2048
#: A run limited to at most this many playouts (self-play's, a visit-limited genmove's)
#: has its arrays sized for them at its start (`CoreRun._reserve_for`).
RESERVE_PLAYOUTS = 50_000
_MASK64 = (1 << 64) - 1

_kernels = None  # core/kernels once compiled (or loaded from numba's cache) and warmed up
_module = None  # core/kernels once imported
_loading: threading.Thread | None = None
_said_missing = False


def core_enabled() -> bool:
    """The core runs unless LEELAZ_SEARCH_CORE=python asks for the Python search, its
    reference (and then numba is never loaded); without numba, or while the kernels are
    not ready, `kernels()` is None and the Python search runs anyway."""
    return os.environ.get(CORE_VARIABLE, "compiled") != "python"


def kernels(wait: bool = False):
    """search/core/kernels once ready, else None (the Python search serves meanwhile).

    The first call starts a background thread (`_load`) that waits until no move is on the
    clock (`on_clock`), then imports numba and readies
    every kernel for the exact argument types a search passes, by running a small search
    on the core. numba keeps the machine code on disk (kernels.CACHE), so only a fresh
    install compiles, and it does so in a child process of low priority (`_compile_apart`)
    while this one keeps searching in Python on its own core: the compiler, which holds
    the GIL for some 10 s, never slows a move on the clock. Later processes, and this one
    once the child is done, only load the cached code. `wait` blocks until the thread is
    done (tests, benchmarks). Without numba: None, and one line on stderr saying so."""
    global _loading, _hurry
    if _kernels is None and _loading is None:
        _loading = threading.Thread(target=_load, name="leelaz-core-compile", daemon=True)
        _loading.start()
        atexit.register(_stop_loading)  # never tear the interpreter down under the compiler
    if (wait or os.environ.get(WAIT_VARIABLE) == "1") and _loading is not None:
        _hurry = True
        _loading.join()
    return _kernels


#: How long no move may have been on the clock before the loading begins.
IDLE_SECONDS = 0.25
_clocked = 0  # moves on the clock now (genmove's searches)
_clock_free_since = 0.0  # time.monotonic() when the last one ended
_hurry = False  # someone waits for the kernels: no waiting for a quiet moment


def on_clock(active: bool) -> None:
    """A move's search begins (True) or ends (False) on the clock (UCTSearch.think).

    Why: importing numba and loading the cached kernels take about 0.7 s of a core, most
    of it holding the GIL; begun while a move is searched, they would slow it (its
    second reply came 0.4 s later when two genmoves were sent back to back, `leelaz bench
    startup --genmove`). So `_load` begins only once no move has been on the clock for
    IDLE_SECONDS: in a game, during the opponent's time."""
    global _clocked, _clock_free_since
    _clocked += 1 if active else -1
    if not active:
        _clock_free_since = time.monotonic()


def _wait_for_quiet() -> None:
    while not _hurry and not _exiting and (
            _clocked > 0 or time.monotonic() - _clock_free_since < IDLE_SECONDS):
        time.sleep(0.05)


def _stop_loading() -> None:
    """At exit: a compiling child is stopped (its work is lost, not the cache's: numba
    writes each file whole), then the thread is joined."""
    global _exiting
    with _child_lock:
        _exiting = True
        if _child is not None and _child.poll() is None:
            _child.kill()
    if _loading is not None:
        _loading.join()


def _load() -> None:
    global _kernels, _module, _said_missing
    _wait_for_quiet()
    if _exiting:
        return
    try:
        k = importlib.import_module("leelaz.search.core.kernels")
    except ImportError:
        if not _said_missing:
            _said_missing = True
            sys.stderr.write("leelaz: numba is not installed, so the search runs in pure "
                             "Python (pip install numba)\n")
            sys.stderr.flush()
        return
    except Exception as error:  # a broken numba install: never fatal
        sys.stderr.write(f"leelaz: the compiled search core is unavailable ({error}); the "
                         f"search runs in pure Python\n")
        sys.stderr.flush()
        return
    _module = k
    try:
        if k.CACHE and not _cached(k):
            _compile_apart()
        if _exiting:
            return
        _warm_up()
    except Exception as error:  # never fatal: the Python search serves
        sys.stderr.write(f"leelaz: the compiled search core is unavailable ({error}); the "
                         f"search runs in pure Python\n")
        sys.stderr.flush()
        return
    _kernels = k


def _after_fork() -> None:
    """A forked child (a helper search process, a self-play worker) has no loading thread
    nor child of its parent's: it starts its own when asked, unless the kernels it
    inherited are ready."""
    global _loading, _child, _child_lock, _clocked
    _child, _child_lock, _clocked = None, threading.Lock(), 0
    if _kernels is None:
        _loading = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _cached(k) -> bool:
    """Whether numba's disk cache holds every kernel compiled for this source (its index
    files, read as numba reads them: a changed source leaves them empty). Functions inlined
    into others have none. Any doubt (numba's internals moved): not cached."""
    from numba.core.registry import CPUDispatcher

    try:
        kernels_ = [f for f in vars(k).values() if isinstance(f, CPUDispatcher)
                    and f.targetoptions.get("inline") != "always"]
        return bool(kernels_) and all(f._cache._cache_file._load_index() for f in kernels_)
    except Exception:
        return False


_child = None  # the compiling child process, while it runs
_exiting = False  # the interpreter is exiting: no child is started, no warm-up follows
_child_lock = threading.Lock()


def _compile_apart() -> None:
    """Fill numba's cache in a child process of low priority (`compile_here`); returns
    when it is done. If it fails, the caller's warm-up compiles in this process."""
    global _child
    root = str(Path(__file__).resolve().parents[3])  # the folder holding leelaz/
    code = (f"import sys; sys.path.insert(0, {root!r}); "
            f"from leelaz.search.core import run; run.compile_here()")
    try:
        with _child_lock:
            if _exiting:
                return
            _child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      preexec_fn=_lower_priority if os.name == "posix"
                                      else None)
        _child.wait()
    except OSError:
        pass
    finally:
        _child = None


def _lower_priority() -> None:
    try:
        os.nice(10)
    except OSError:
        pass


def compile_here() -> None:
    """The child of `_compile_apart`: compile every kernel into numba's cache."""
    global _module
    importlib.import_module("leelaz.search.search")  # registers SEARCH_CLASS
    _module = importlib.import_module("leelaz.search.core.kernels")
    _warm_up()


class _Uniform:
    """The warm-up's evaluator: a uniform policy and an even value, at once."""

    asynchronous = False
    reads_boards_before = 0  # its leaves are LeafInputs' (kernels.leaf_hashes, leaf_histories)

    def evaluate(self, states, symmetry=None):
        policy = np.full(362, 1.0 / 362, dtype=np.float32)
        return [_Evaluation(policy, 0.5) for _ in states]

    def submit(self, states, symmetry=None):
        return _Answered(self.evaluate(states))


class _Evaluation:
    def __init__(self, policy, winrate):
        self.policy = policy
        self.winrate = winrate


class _Answered:
    def __init__(self, evals):
        self.evals = evals

    def result(self):
        return self.evals


#: The search class (UCTSearch), registered by leelaz.search.search, which imports this
#: module: the warm-up needs a search, and the core never imports its user back.
SEARCH_CLASS = None


def _warm_up() -> None:
    """A small search on the core, which compiles (or loads) each kernel for the argument
    types of every real search."""
    from leelaz.game.state import GameState
    from leelaz.search.params import SearchParams
    from leelaz.search.run import Limits, Progress

    if SEARCH_CLASS is None:  # a caller that asked for the kernels before any search
        importlib.import_module("leelaz.search.search")  # registers SEARCH_CLASS
    search = SEARCH_CLASS(_Uniform(), SearchParams(max_visits=40, batch_size=4, quiet=True,
                                                   timemanage="off"), rng=1)
    run = CoreRun.replacing(search.start(GameState()))
    run.prepare()
    run._take_tree()  # on the core, which is not ready (`_kernels`) until this is done
    assert run.tree is not None
    run.run(Limits(40, 40, 10**9), Progress())
    t = run.tree
    _module.tree_stats(int(t.nodes_used[0]), t.visits, t.expanded, t.first, t.count,
                       t.inflated, t.cnode)  # a genmove's statistics (search._dump_stats)
    _module.root_contention(True, 0, True, int(t.first[0]), int(t.inflated[0]), t.cnode,
                            t.visits, t.wins, t.m2, t.status, _quantiles(2))  # time management
    core_report.snapshot(t, _module, BLACK, 0, _quantiles(2), 0.1)  # progress reports
    CoreTree.from_kept(t, run.root, _module)  # the next call's reused tree (both kernels)


def tree_stats_counts(run, root) -> tuple | None:
    """stats.tree_stats_counts for `root` counted on the core's arrays (kernels.tree_stats),
    when `run` is a CoreRun whose tree is `root`'s and was written back; else None (the
    walk over the UCTNodes counts). A move's tree at a GPU's sizes: ~25 ms of Python walk
    before the reply, against well under a millisecond."""
    tree = getattr(run, "tree", None)
    if _kernels is None or tree is None or not tree.objects or tree.objects[0] is not root:
        return None
    n = int(tree.nodes_used[0])
    counts = _kernels.tree_stats(n, tree.visits, tree.expanded, tree.first, tree.count,
                                 tree.inflated, tree.cnode)
    return tuple(int(c) for c in counts)


def covers(search, *, restrictions=None, on_progress=None, pondering=False) -> bool:
    """Whether a call with these features runs on a CoreRun (see the module docstring):
    genmove, lz-genmove_analyze, pondering and lz-analyze, with or without move
    restrictions and progress reports, self-play's forced playouts; not the dynamic-komi
    modes or dynamic FPU. The kernels must be ready, or loading: a CoreRun starts on
    the Python batches and switches to the core when they are (`CoreRun.run`).

    When the loading starts: a genmove never starts it (`start_loading`, once the move is
    answered, does), so that neither the first reply nor its move waits on numba; pondering
    and lz-analyze, which no clock waits for, start it at once."""
    if not (core_enabled() and search.dynamic_komi is None
            and not search.params.dynamic_fpu):
        return False
    if pondering or os.environ.get(WAIT_VARIABLE) == "1":
        kernels()
    return _kernels is not None or (_loading is not None and _loading.is_alive())


def start_loading() -> None:
    """After a genmove's search, off its clock: start loading the kernels (`kernels`)
    unless the Python search is asked for."""
    if core_enabled() and _loading is None:
        kernels()


def _signed(h: int) -> int:
    h &= _MASK64
    return h - (1 << 64) if h >= 1 << 63 else h


_VERTEX_OF_SLOT = np.array(list(ALL_VERTICES), dtype=np.int64)
_TIE_RANK = np.append(np.arange(1, 362), 0).astype(np.int64)
_DELTA = None


def _delta() -> np.ndarray:
    """The stones-only hash's change for a stone of each colour at each vertex."""
    global _DELTA
    if _DELTA is None:
        from leelaz.game.zobrist import STONE_DELTA
        _DELTA = np.array([[_signed(h) for h in row] for row in STONE_DELTA], dtype=np.int64)
    return _DELTA


class _Buffers:
    """One batch's leaves in the kernels' layout: their positions, paths and colours."""

    def __init__(self, size: int):
        self.size = size
        self.sq = np.zeros((size, 441), np.uint8)
        self.par = np.zeros((size, 441), np.int16)
        self.nxt = np.zeros((size, 441), np.int16)
        self.libs = np.zeros((size, 441), np.int16)
        self.stn = np.zeros((size, 441), np.int16)
        self.meta = np.zeros((size, 5), np.int64)  # kernels' KO .. PRISONERS + 1
        self.hist = np.zeros((size, HISTORY, 441), np.uint8)  # kernels.collect's lhist
        self.paths = np.zeros((size, MAX_DEPTH), np.int64)
        self.lengths = np.zeros(size, np.int64)
        self.colors = np.zeros(size, np.int64)
        self.counters = np.zeros(2, np.int64)


class CoreBatch(LeafBatch):
    """A LeafBatch whose leaves' paths live in `buffers` (node rows). For an evaluator that
    takes arrays (`submit_histories`), `histories` holds the leaves (LeafInputs.histories)
    and `leaves` is only their count, `range(n)`: no object is made a leaf."""

    __slots__ = ("buffers", "histories", "inputs")

    @property
    def states(self) -> list:
        """The leaves' states, for a driver that evaluates the batch itself."""
        if self.histories is None:
            return LeafBatch.states.fget(self)
        n = len(self.leaves)
        return [st for _, st, _ in
                self.inputs.as_states(self.histories, self.buffers.lengths[:n])]


def _board_rows(board):
    """A Python Board as the kernels' one-row board arrays."""
    sq = np.frombuffer(bytes(board.square), np.uint8).reshape(1, -1).copy()
    par = np.array(board.parent, np.int16).reshape(1, -1)
    nxt = np.array(board.next, np.int16).reshape(1, -1)
    libs = np.array(board.libs, np.int16).reshape(1, -1)
    stn = np.array(board.stones, np.int16).reshape(1, -1)
    meta = np.array([[board.ko_move, board.passes, _signed(board.ko_hash),
                      board.prisoners[BLACK], board.prisoners[WHITE]]], np.int64)
    return sq, par, nxt, libs, stn, meta


class CoreRun(SearchRun):
    """SearchRun with the batches on the compiled core (see the module docstring)."""

    #: Set by UCTSearch's think and ponder with defer_tree=True (GTP's genmoves,
    #: lz-analyze, pondering): no write-backs while the run goes on, and at its end only
    #: the rows the move choice and the statistics read (`_write_back`); the next call on
    #: the core takes the rest along in its arrays (UCTSearch.start, CoreTree.from_kept),
    #: and a reader of the whole tree writes it first (UCTSearch.complete_tree,
    #: SearchRun.write_kept_tree). Why: writing the UCTNodes took 47-70 ms of each 515 ms
    #: move here, and 6.2 us of the 52.7 a playout of one tree's analysis on an H200
    #: (docs/log.md).
    partial_write_back = False

    @classmethod
    def replacing(cls, run: SearchRun) -> CoreRun:
        """The core run in place of a Python one made by UCTSearch.start."""
        core = cls.__new__(cls)
        core.__dict__.update(run.__dict__)
        core.tree = None
        return core

    def prepare(self) -> None:
        prepare_root(self)  # the Python search's: reuse, root evaluation, superko, noise
        self.tree = None
        self._may_switch = True  # to the core, when its kernels are ready (`run`)
        self.root_selector = None
        if _kernels is not None:
            self._take_tree()
        else:  # the Python search's batches read the whole tree and change it
            self.core_kept = None
            self.write_kept_tree()
        if self.tree is None:  # the Python search's batches until the core takes the tree
            self.root_selector = RootSelector(self.root)

    def _take_tree(self) -> None:
        """The tree into the core's arrays (at `prepare`, or between two batches when the
        kernels get ready); the root children the RootSelector touched stay touched (at
        `prepare`, with no selector made, those a new one would touch: a move of self-play
        made one only for that, a sort of ~360 children)."""
        kept, self.core_kept = self.core_kept, None
        tree = None if kept is None else CoreTree.from_kept(kept, self.root, _kernels)
        if tree is not None:
            self.kept_unwritten = None  # its rows came along with what is left to write
        else:
            self.write_kept_tree()  # from_root reads the UCTNodes
        del kept  # the last search's arrays and nodes: free them before this one grows
        try:
            self.tree = tree if tree is not None else CoreTree.from_root(self.root)
        except NotCovered:
            self._may_switch = False
            return
        if self.root_selector is not None:
            touched = {id(c) for c in self.root_selector.touched_children()}
        else:
            touched = {id(c) for c in self.root.children if RootSelector.touches(c)}
        self.root_selector = None
        self._k = _module
        self._root_board = _board_rows(self.root_state.board)
        self._seen = np.array(sorted(_signed(h) for h in self.seen), dtype=np.int64)
        self._hashes = np.zeros(MAX_DEPTH, np.int64)
        self._keys = np.zeros((16, 362), np.int64)
        self._touched = np.array([id(c) in touched for c in self.root.children] or [False],
                                 dtype=np.bool_)
        self._pool = [_Buffers(16), _Buffers(16)]
        # Move restrictions (avoid/allow) as rows of allowed slots, one per (colour, move
        # number) met; row 0 allows everything (no restrictions).
        self._allowed = np.ones((1, 361), np.bool_)
        self._allowed_rows: dict[tuple[int, int], int] = {}
        self._next_buffers = 0
        self._report_buffers: dict = {}  # core/report.py's rows between two reports
        # The Python positions of the nodes below the root, where the evaluator's leaves are
        # GameStates (LeafInputs.for_root says when); the root's is the root state's.
        self._boards = [u.board if u is not None else None for u in self.tree.objects]
        self._boards[0] = None
        self._leaf_inputs = LeafInputs.for_root(self.root_state, self.color, self.evaluator)
        # Leaves as arrays where the evaluator takes them (nn/network.py submit_histories)
        self._by_histories = hasattr(self.evaluator, "submit_histories")

    def _switch(self) -> None:
        """The kernels got ready during the run: finish the batch in flight on the Python
        search, then go on on the core with the tree as it is."""
        self._drain()
        self._take_tree()

    # ------------------------------------------------------------------ the loop
    def begin(self, limits, progress) -> None:
        super().begin(limits, progress)
        self._early_stop = _SyncedEarlyStop(self._early_stop)
        if self.tree is not None:
            self._reserve_for(limits)

    def _reserve_for(self, limits) -> None:
        """Room for all the nodes and children a run of at most RESERVE_PLAYOUTS playouts
        can add (a playout adds a node and at most 362 children), made once. Why: a
        self-play move started from a small reused tree grew its child tier two or three
        times, each growth copying every row (14% of a self-play process's time here)."""
        t = self.tree
        left = min(limits.playouts - self.playouts, limits.visits - int(t.visits[0]))
        if 0 < left <= RESERVE_PLAYOUTS:
            t.reserve(left + 1, 362 * (left + 1), exactly=True)

    def _hand_over_or_switch(self) -> None:
        """Before a batch: memory pressure hands the tree to the Python search; kernels
        that got ready take it to the core."""
        if self.tree is not None:
            if self.min_psa_ratio() > 0.0:
                self._hand_over()
        elif self._may_switch and _kernels is not None and self.min_psa_ratio() <= 0.0:
            self._switch()

    # ------------------------------------------------------------------ the steps
    # (a driver's own loop: self-play's, see SearchRun's module docstring)
    def collect(self, limit: int):
        self._hand_over_or_switch()
        if self.tree is None:
            return super().collect(limit)
        return self.core_collect(limit)

    def apply(self, batch) -> None:
        if isinstance(batch, CoreBatch):
            self.core_apply(batch)
        else:
            super().apply(batch)

    def apply_evaluations(self, batch, evals) -> None:
        if not isinstance(batch, CoreBatch):
            super().apply_evaluations(batch, evals)
            return
        if len(evals) != len(batch.leaves):
            self.forget(batch)
            raise ValueError(f"evaluator answered {len(evals)} of {len(batch.leaves)} states")
        self._core_expand(batch, evals)

    def expands_plainly(self, batch) -> bool:
        """A core batch is expanded by the kernels (`apply`), never by expand_together."""
        return not isinstance(batch, CoreBatch) and super().expands_plainly(batch)

    def after_batch(self, did: int) -> bool:
        """SearchRun's rules; when they stop the run and no batch is in flight, the tree is
        written back for `UCTSearch.finish` (a driver's steps end there). While the run
        goes on, the tree is written back once WRITE_BACK_ROWS nodes were added since the
        last time, so that the run's end has little left to write."""
        go_on = super().after_batch(did)
        t = self.tree
        if t is None:
            return go_on
        if not go_on and self.in_flight is None:
            self._write_back(read_only=self.partial_write_back)
        elif (go_on and not self.partial_write_back
              and int(t.nodes_used[0]) - t.rows_written() >= WRITE_BACK_ROWS):
            self._write_back()
        return go_on

    # ------------------------------------------------------------------ run
    def run(self, limits, progress) -> None:
        self.begin(limits, progress)
        pipelined = self.batch_size > 1 and self.evaluator.asynchronous
        if pipelined:  # as SearchRun.run: the expansion's kernels, should the run hand over
            search_run.request_compiled()
        self.in_flight = None
        gc.collect()
        try:
            while True:
                self._hand_over_or_switch()
                if self.tree is None:
                    if pipelined:
                        did = self._step_pipelined(self.next_batch_size(pipelined=True))
                    else:
                        did = self._step(self.next_batch_size())
                elif pipelined:
                    did = self._core_step_pipelined(self.next_batch_size(pipelined=True))
                else:
                    did = self._core_step(self.next_batch_size())
                gc.freeze()  # as SearchRun.run: the positions made stay out of the collector
                if not self.after_batch(did):
                    break
            if self.tree is not None:
                self._core_drain()
            else:
                self._drain()
        finally:
            if self.tree is not None:
                self._write_back(read_only=self.partial_write_back)
            self.in_flight = None
        if progress.interval_cs and progress.on_progress and self.progress_shown == 0:
            self.gather_reports(False)  # as SearchRun.run: one report at least
            progress.on_progress(self.snapshot())

    def current_root(self):
        if self.tree is not None:
            self._write_back()
        return self.root

    def kept_tree(self) -> CoreTree | None:
        """The tree to keep for the next call's `CoreTree.from_kept` (UCTSearch._end): the
        arrays, if the run ended on the core with no batch in flight (every row written
        back into the UCTNodes, or those its end reads: `unwritten_tree`)."""
        t = self.tree
        if t is None or self.in_flight is not None:
            return None
        return t

    def unwritten_tree(self) -> tuple | None:
        """(the arrays, the nodes' positions) when the run ended with only the rows its end
        reads written back (`partial_write_back`), for UCTSearch to hand to the next call
        or to write (complete_tree). None when every row is written."""
        t = self.tree
        if t is None or self.in_flight is not None or t.in_sync():
            return None
        return t, self._boards

    def snapshot(self, move=None, root=None):
        """SearchRun.snapshot (progress reports: lz-analyze, lz-genmove_analyze): read from
        the arrays (core/report.py) while the core holds the tree and no other process's
        tree is merged in; else on the UCTNodes, brought up to date first."""
        if self.tree is not None and root is None:
            if not self.merges_reports():
                t = self.tree
                result = core_report.snapshot(
                    t, self._k, self.color, self.root_state.move_num,
                    _quantiles(int(t.visits[0])), self.params.lcb_min_visit_ratio, move=move,
                    playouts=self.playouts, nodes=self.nodes,
                    elapsed=self.elapsed(), buffers=self._report_buffers)
                if result is not None:
                    return result
            self._write_back()
        return super().snapshot(move, root)

    def root_report(self):
        """SearchRun.root_report read from the arrays while the core holds the tree
        (core/report.py): a helper process reports without writing its tree back."""
        if self.tree is not None:
            t = self.tree
            report = core_report.root_report(t, self._k, self.color,
                                             _quantiles(int(t.visits[0])),
                                             buffers=self._report_buffers)
            if report is not None:
                return report
        return super().root_report()

    def _hand_over(self) -> None:
        """Memory pressure: the tree goes back to the Python search for the rest of the run
        (its expansions are trimmed, and re-expanded when memory frees up)."""
        self._core_drain()
        self._write_back()
        self.root_selector = RootSelector(self.root)
        self.tree = None
        self._may_switch = False

    def _write_back(self, read_only: bool = False) -> None:
        """The arrays into the UCTNodes; `read_only`: only the rows the end of the call
        reads (core/report.rows_read), when the chains fit its buffer."""
        spans = None
        if read_only:
            t = self.tree
            spans = core_report.rows_read(t, self._k, self.color,
                                          _quantiles(int(t.visits[0])),
                                          self.params.lcb_min_visit_ratio,
                                          buffers=self._report_buffers)
        self.tree.to_root(self._boards, spans)
        self._sync_root()

    def _sync_root(self) -> None:
        t = self.tree
        root = self.root
        root.visits = int(t.visits[0])
        root.black_wins = float(t.wins[0])
        root.m2 = float(t.m2[0])

    # ------------------------------------------------------------------ one batch
    def _buffers(self, limit: int) -> _Buffers:
        i = self._next_buffers
        self._next_buffers = 1 - i
        if self._pool[i].size < limit:
            self._pool[i] = _Buffers(max(limit, 2 * self._pool[i].size))
        return self._pool[i]

    def core_collect(self, limit: int) -> CoreBatch:
        """Up to `limit` descents in one kernel call; the leaves' GameStates for the
        evaluator."""
        t = self.tree
        p = self.params
        buf = self._buffers(limit)
        t.reserve(2 * limit, 0)  # a descent inflates at most one node: its last
        rsq, rpar, rnxt, rlibs, rstn, rmeta = self._root_board
        used_before = int(t.nodes_used[0])
        self._k.collect(limit, self.color, p.root_fpu_reduction(), p.fpu_reduction, p.c_puct,
                        p.log_puct, p.log_const, p.virtual_loss, float(p.forced_playouts_k),
                        self.root_state.scoring_komi, self._seen, _delta(),
                        t.visits, t.wins, t.m2, t.vl, t.prior, t.net, t.status, t.expanded,
                        t.first, t.count, t.inflated, t.cnode, t.cmove, t.cprior,
                        t.nodes_used, t.nmove,
                        rsq, rpar, rnxt, rlibs, rstn, rmeta,
                        buf.sq, buf.par, buf.nxt, buf.libs, buf.stn, buf.meta,
                        buf.paths, buf.lengths, buf.colors, self._hashes, buf.counters,
                        self._touched, buf.hist)
        grown = int(t.nodes_used[0]) - used_before
        if grown:
            self._boards += [None] * grown
        leaves_n, done = int(buf.counters[0]), int(buf.counters[1])
        self.playouts += done
        histories = None
        if not leaves_n:
            leaves = []
        elif self._leaf_inputs is None:
            leaves = self._python_states(buf, leaves_n)
        elif self._by_histories:
            histories = self._leaf_inputs.histories(buf, leaves_n, self._k)
            leaves = range(leaves_n)
        else:
            leaves = self._leaf_inputs.states(buf, leaves_n, self._k)
        batch = CoreBatch(leaves, done, 0.0)
        batch.buffers = buf
        batch.histories = histories
        batch.inputs = self._leaf_inputs
        return batch

    def submit(self, batch) -> None:
        """SearchRun.submit; a batch of arrays (`CoreBatch.histories`) goes to the
        evaluator's `submit_histories`."""
        histories = getattr(batch, "histories", None)
        if histories is None:
            super().submit(batch)
            return
        fixed = self.params.fixed_symmetry
        self.submit_timed(batch, lambda: self.evaluator.submit_histories(
            *histories, symmetry=fixed if fixed >= 0 else None))

    def _python_states(self, buf: _Buffers, n: int) -> list[tuple]:
        """The leaves as the Python search makes them: each path's positions as Python Boards
        (kept on the nodes up to the search's budget, a copy + play for each new one), the
        GameState by `extended`. Where LeafInputs cannot serve (leaf_inputs.for_root)."""
        leaves = []
        boards = self._boards
        nmove = self.tree.nmove
        root_state = self.root_state
        root_board = root_state.board
        root_color = self.color
        for i in range(n):
            path = buf.paths[i, 1:buf.lengths[i]].tolist()
            positions = []
            board = root_board
            color = root_color
            for nd in path:
                after = boards[nd]
                if after is None:
                    after = board.copy()
                    after.play_move(color, int(nmove[nd]))
                    if self.boards_left > 0:
                        self.boards_left -= 1
                        boards[nd] = after
                positions.append(after)
                board = after
                color = 1 - color
            leaves.append((None, root_state.extended(positions), _LEAF))
        return leaves

    def forget(self, batch) -> None:
        if not isinstance(batch, CoreBatch):
            super().forget(batch)
            return
        buf, vl, t = batch.buffers, self.params.virtual_loss, self.tree
        for i in range(len(batch.leaves)):
            for nd in buf.paths[i, :buf.lengths[i]].tolist():
                t.vl[nd] -= vl

    def core_apply(self, batch: CoreBatch) -> None:
        """Wait for the batch's evaluations, then expand and back up: the children's keys in
        one kernel call, their order by NumPy, the children and the backups in another."""
        self._core_expand(batch, self._evaluations(batch))

    def _core_expand(self, batch: CoreBatch, evals) -> None:
        n = len(batch.leaves)
        policies = getattr(evals, "policies", None)  # a BatchEvaluations: arrays already
        if policies is not None:
            winrates = evals.winrates
        else:
            policies = np.concatenate([ev.policy for ev in evals]).reshape(n, 362)
            winrates = np.array([float(ev.winrate) for ev in evals], dtype=np.float64)
        policies = policies.astype(np.float32, copy=False)
        t, buf, p = self.tree, batch.buffers, self.params
        t.reserve(0, 362 * n)
        keys = self._keys if len(self._keys) >= n else np.zeros((n, 362), np.int64)
        self._keys = keys
        keys = keys[:n]
        values = np.zeros(n, np.float64)
        k = self._k
        allowed_rows = self._allowed_of(buf, n)  # (may add rows to self._allowed)
        k.expansion_keys(n, policies, winrates, p.dumbpass, self.root_state.scoring_komi,
                         buf.sq, buf.par, buf.libs, buf.meta, buf.colors, self._allowed,
                         allowed_rows, _VERTEX_OF_SLOT, _TIE_RANK, keys)
        keys.sort(axis=1)  # NumPy's sort: see kernels.expansion_keys
        made = k.attach(n, keys, winrates, p.virtual_loss, t.visits, t.wins, t.m2, t.vl,
                        t.net, t.expanded, t.first, t.count, t.inflated, t.cnode, t.cmove,
                        t.cprior, t.children_used, buf.paths, buf.lengths, buf.colors,
                        _VERTEX_OF_SLOT, values)
        self.nodes += int(made)
        self.playouts += n
        self.root.visits = int(t.visits[0])

    def _allowed_of(self, buf: _Buffers, n: int) -> np.ndarray:
        """Each leaf's row of `_allowed`: what SearchRun.expand's restrictions.is_allowed
        lets its side play at its move number (all 0 without restrictions)."""
        rows = np.zeros(n, np.int64)
        r = self.restrictions
        if r is None or not r.has_move_restrictions:
            return rows
        move_num = self.root_state.move_num
        known = self._allowed_rows
        for i, (color, length) in enumerate(zip(buf.colors[:n].tolist(),
                                                buf.lengths[:n].tolist())):
            key = (color, move_num + length - 1)  # the leaf's: one move a node below the root
            row = known.get(key)
            if row is None:
                allowed = r.is_allowed
                mask = np.array([allowed(color, int(v), key[1]) for v in _VERTEX_OF_SLOT[:361]],
                                np.bool_)
                self._allowed = np.vstack((self._allowed, mask))
                row = known[key] = len(self._allowed) - 1
            rows[i] = row
        return rows

    def _core_step(self, limit: int) -> int:
        batch = self.core_collect(limit)
        if batch.leaves:
            self.submit(batch)
            self.core_apply(batch)
        self.root.visits = int(self.tree.visits[0])
        return batch.done + len(batch.leaves)

    def _core_step_pipelined(self, limit: int) -> int:
        batch = self.core_collect(limit) if limit > 0 else None
        if batch is not None and batch.leaves:
            self.submit(batch)
        did = batch.done if batch is not None else 0
        did += len(batch.leaves) if batch is not None else 0
        self.root.visits = int(self.tree.visits[0])
        return did + self._core_drain(batch if batch is not None and batch.leaves else None)

    def _core_drain(self, replacement=None) -> int:
        batch, self.in_flight = self.in_flight, replacement
        if batch is None:
            return 0
        self.core_apply(batch)
        return len(batch.leaves)

    def next_batch_size(self, pipelined: bool = False) -> int:
        if self.tree is not None:
            self.root.visits = int(self.tree.visits[0])
        return super().next_batch_size(pipelined)

    def log_playouts(self) -> None:
        if self.params.quiet or self.tree is None:
            super().log_playouts()
            return
        self._write_back()
        super().log_playouts()


class _SyncedEarlyStop:
    """timemanage.EarlyStop on the core's root children: the non-contenders counted (and
    pruned) on the arrays by kernels.root_contention, then EarlyStop's own decision. Why:
    after every batch of a search's second half, copying ~360 root children into their
    UCTNodes and back for the Python count was a quarter of a self-play process's time."""

    def __init__(self, inner):
        self.inner = inner  # (no reference to the run: no cycle for the collector)

    def keep_searching(self, run, limits, elapsed_cs) -> bool:
        inner = self.inner
        t = run.tree
        if t is None or inner.mode == "off":
            return inner.keep_searching(run, limits, elapsed_cs)
        left = playouts_left(run, limits, elapsed_cs)
        if run.root.visits - 1 <= left and not inner.pruned_some:
            return True  # EarlyStop's own fast path: no child is looked at
        lo, inflated = int(t.first[0]), int(t.inflated[0])
        pruned = _kernels.root_contention(run.color != BLACK, left,
                                          inner.mode != "no_pruning", lo, inflated, t.cnode,
                                          t.visits, t.wins, t.m2, t.status,
                                          _quantiles(int(t.visits[0])))
        return inner.decide(run, limits, elapsed_cs, pruned)


_T_QUANTILES = np.zeros(0)


def _quantiles(visits: int) -> np.ndarray:
    """lcb.t_quantiles up to what `visits` root visits need (grown as searches grow)."""
    global _T_QUANTILES
    top = min(visits, TABLE_SIZE)
    if len(_T_QUANTILES) <= top:
        _T_QUANTILES = t_quantiles(max(top, 2 * len(_T_QUANTILES)))
    return _T_QUANTILES

