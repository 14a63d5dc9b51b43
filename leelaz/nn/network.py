"""The network as the search sees it: positions in, (policy, winrate) out (src/Network.cpp).

Owns: `Network`, `Evaluation`, `BatchEvaluations` (a batch's answers as arrays). Imports:
numpy, nn.features, nn.symmetry, nn.cache, backends (registry, weights), game.coords.

`Network.evaluate(states, symmetry=None)` gathers the input planes of every state, applies a
symmetry per evaluation (random, a given one, or all 8 averaged), makes **one** backend call
for the whole batch, then softmaxes the policy, maps it back to board order, turns a version-2 (Black's) value into the side to move's, and fills the cache.
Cache look-ups (exact hash, then, early in the game, the 7 symmetric hashes with the policy
remapped) happen first; states found there never reach the backend. As in Leela Zero the cache
is written by every evaluation and read unless the caller says not to (heatmap, netbench).
With dynamic komi the key is the board hash mixed with the network komi (`cache_key`), so
positions told a komi other than 7.5 never meet the standard ones (the fork empties the cache
on every komi change instead); trial evaluations at a komi under test neither read nor write.
`Network.submit(...)` does the same in two halves: it hands the batch to the backend and
returns; `.result()` waits, decodes and caches (the search pipelines batches with it).
`Network.submit_histories(...)` is `submit` for positions given as arrays (the compiled
search's leaves: hashes, sides to move, input histories), answered as arrays; the same
cache, symmetry draws and decoding (`decode_rows`), so both give the same numbers.
"""

from __future__ import annotations

import os
import random
from typing import NamedTuple

import numpy as np

from leelaz.backends import create_backend
from leelaz.backends.base import Backend, NetWeights
from leelaz.backends.weights import load_weights
from leelaz.game.coords import NUM_INTERSECTIONS, WHITE
from leelaz.memory import MAX_CACHE_ENTRIES
from leelaz.nn.cache import NNCache
from leelaz.nn.features import (input_planes_batch, packed_histories, packed_inputs,
                                planes_from_histories)
from leelaz.nn.symmetry import (NUM_SYMMETRIES, remap_cached_policy, symmetry_hashes_batch,
                                untransform_policies)

#: A policy's entries: the 361 points, then pass.
POLICY_SIZE = NUM_INTERSECTIONS + 1
#: Symmetric cache look-ups only while move_num < this: LZ's opening_moves(19) / 2 = (361/6)/2.
SYMMETRIC_LOOKUP_MOVES = (NUM_INTERSECTIONS // 6) // 2
AVERAGE = "average"


class Evaluation(NamedTuple):
    """The network's verdict on a position (immutable; a named tuple because one is made
    for every evaluated leaf, and a frozen dataclass costs several times more to build)."""

    policy: np.ndarray  # float32 [362] probabilities in board index order, 361 = pass; read-only
    winrate: float  # the side to move's winning chance, 0..1


class Network:
    """Weights + a backend + the cache, evaluating GameStates in batches."""

    def __init__(self, weights: NetWeights | None, backend: Backend, *,
                 cache_size: int = MAX_CACHE_ENTRIES,
                 seed: int | None = None, symmetric_lookups: bool = True):
        self.weights = weights
        self.backend = backend
        self.cache = NNCache(cache_size)
        #: Off with -n (noise) or -m > 0 (random moves), as in LZ.
        self.symmetric_lookups = symmetric_lookups
        self._rng = random.Random(seed)
        self.evaluations = 0  # rows sent to the backend (netbench and statistics)

    @classmethod
    def from_file(cls, path: str | os.PathLike, backend: str = "numpy",
                  backend_options: dict | None = None, **options) -> Network:
        """Load a weights file and build the named backend for it."""
        weights = load_weights(path)
        return cls(weights, create_backend(backend, weights, **(backend_options or {})),
                   **options)

    @property
    def version(self) -> int:
        """The weights file's version; 1 for a backend without weights (the `random` one
        answers for the side to move)."""
        return self.weights.version if self.weights is not None else 1

    # ------------------------------------------------------------------ evaluation
    @property
    def reads_boards_before(self) -> int:
        """The move number below which `evaluate` reads more of a state than its input
        history, side to move, komi and hash: its whole Board, for the mirrored cache
        lookups (`_probe`). The compiled search's leaves carry no Board
        (search/core/leaf_inputs.py) and are made as GameStates below it."""
        return SYMMETRIC_LOOKUP_MOVES if self.symmetric_lookups else 0

    @property
    def asynchronous(self) -> bool:
        """The backend computes while Python goes on (submit returns before the answer)."""
        return self.backend.asynchronous

    def evaluate(self, states, symmetry: int | str | None = None,
                 read_cache: bool = True, write_cache: bool = True) -> list[Evaluation]:
        """Evaluate a batch of GameStates.

        symmetry: None = a random one per evaluation, 0..7 = that one, "average" (or "avg") =
        the mean of all 8, or a list with one 0..7 per state. read_cache=False skips the
        look-up (heatmap, netbench); results are cached unless write_cache=False.
        """
        return self.submit(states, symmetry, read_cache, write_cache).result()

    def submit(self, states, symmetry: int | str | None = None,
               read_cache: bool = True, write_cache: bool = True) -> PendingEvaluations:
        """Start evaluating a batch (see `evaluate`); `.result()` gives the Evaluations.

        Cache hits are answered now; the misses go to the backend in one submit, so with an
        asynchronous backend the caller can prepare the next batch while this one runs."""
        states = list(states)
        results = self._probe(states) if read_cache else [None] * len(states)
        todo = [i for i, hit in enumerate(results) if hit is None]
        pending = None
        if todo:
            if isinstance(symmetry, (list, tuple)):  # one per state: the misses' ones
                symmetry = [symmetry[i] for i in todo]
            pending = self._submit([states[i] for i in todo], symmetry)
        return PendingEvaluations(self, states, results, todo, pending, write_cache)

    def _probe(self, states) -> list[Evaluation | None]:
        """Exact cache hits, else (early in the game) hits on a mirrored position (src/NNCache.cpp).

        Hot path: the mirrors' hashes of all the batch's early misses are computed together.
        Nothing enters the cache before `result()`, so probing the whole batch first finds
        what probing one state after the other would."""
        lookup = self.cache.lookup
        results = [lookup(state.board.hash if state.net_komi is None else cache_key(state))
                   for state in states]
        if not self.symmetric_lookups:
            return results
        early = [i for i, hit in enumerate(results)
                 if hit is None and states[i].move_num < SYMMETRIC_LOOKUP_MOVES]
        if not early:
            return results
        lookup_first = self.cache.lookup_first
        for i, hashes in zip(early, symmetry_hashes_batch([states[i].board for i in early])):
            mirrors = hashes[1:]  # the 7 mirrors, 1..7, as LZ tries them
            if states[i].net_komi is not None:
                komi = komi_key(states[i].stm_komi)
                mirrors = [h ^ komi for h in mirrors]
            found = lookup_first(mirrors)
            if found is not None:
                s, hit = found[0] + 1, found[1]
                policy = remap_cached_policy(hit.policy, s)
                policy.setflags(write=False)
                results[i] = Evaluation(policy, hit.winrate)
        return results

    def _symmetries(self, count: int, symmetry) -> list[list[int]]:
        """The symmetries to run for each of `count` positions (random ones drawn in order:
        seeded runs and the Leela Zero comparisons depend on that sequence)."""
        if symmetry is None:
            return [[s] for s in self.random_symmetries(count)]
        if isinstance(symmetry, (list, tuple)):  # one per state (dynamic komi's records)
            if len(symmetry) != count or not all(0 <= int(s) < NUM_SYMMETRIES
                                                 for s in symmetry):
                raise ValueError(f"need {count} symmetries 0..7, not {symmetry!r}")
            return [[int(s)] for s in symmetry]
        if symmetry in (AVERAGE, "avg"):
            return [list(range(NUM_SYMMETRIES)) for _ in range(count)]
        s = int(symmetry)
        if not 0 <= s < NUM_SYMMETRIES:
            raise ValueError(f"symmetry must be 0..7, 'average' or None, not {symmetry!r}")
        return [[s] for _ in range(count)]

    def random_symmetries(self, count: int) -> list[int]:
        """`count` draws of `random.randrange(NUM_SYMMETRIES)` from this network's generator,
        the same numbers in the same order, made as randrange makes them (4 random bits,
        drawn again while 8 or more) without its two Python calls a draw. Hot path: one
        draw a leaf, 2 us of a GPU's playout through randrange."""
        bits = self._rng.getrandbits
        width = NUM_SYMMETRIES.bit_length()
        drawn = []
        for _ in range(count):
            s = bits(width)
            while s >= NUM_SYMMETRIES:
                s = bits(width)
            drawn.append(s)
        return drawn

    def _submit(self, states, symmetry) -> tuple:
        """One backend submit for every (state, symmetry) row: a state's rows are consecutive
        (one row, or 8 when averaging). Hot path: the planes of all rows in one batch call,
        or, for a backend that builds them on its device, the packed positions."""
        plan = self._symmetries(len(states), symmetry)
        syms = [s for row_syms in plan for s in row_syms]
        rows = states if len(syms) == len(states) else \
            [state for state, row_syms in zip(states, plan) for _ in row_syms]
        if self.backend.accepts_packed_inputs:  # the device builds the planes
            pending = self.backend.submit_packed(packed_inputs(rows, syms), len(syms))
        else:
            planes = np.empty((len(syms), 18, NUM_INTERSECTIONS), dtype=np.float32)
            input_planes_batch(rows, planes, syms)
            pending = self.backend.submit(planes.reshape(len(syms), 18, 19, 19))
        self.evaluations += len(syms)
        return states, syms, pending

    def _decode(self, states, syms, logits, values) -> list[Evaluation]:
        """Softmax, undo each row's symmetry, average the rows of a state, fix the value's
        side: `decode_rows` for GameStates, one Evaluation each."""
        per = len(syms) // len(states)
        white = [state.to_move == WHITE for state in states] if self.version == 2 else None
        policies, values = self.decode_rows(syms, logits, values, per, white)
        return [Evaluation(policy, value) for policy, value in zip(policies, values.tolist())]

    def decode_rows(self, syms, logits, values, per: int = 1, white=None):
        """(policies float32 [n, 362] read-only, winrates float64 [n]) from the backend's
        rows: softmax, each row's symmetry undone, a state's `per` consecutive rows averaged,
        a version-2 (Black's) value turned into the side to move's (`white`: a flag per
        state, needed for version 2 only).

        Hot path: whole-batch numpy, in the same operations as one row at a time."""
        policies = untransform_policies(softmax(logits), syms)
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if per > 1:
            policies, values = _average_rows(policies, values, per)
        if self.version == 2:  # version 2 gives Black's chance
            values = np.where(np.asarray(white, dtype=bool), 1.0 - values, values)
        policies = policies.astype(np.float32, copy=False)  # a new array either way
        policies.setflags(write=False)  # rows shared with the cache: copy before changing one
        return policies, values

    def submit_histories(self, hashes, to_move, histories, symmetry: int | None = None,
                         write_cache: bool = True) -> PendingRows:
        """`submit` for positions given as arrays instead of GameStates (the compiled
        search's leaves, search/core/leaf_inputs.py): `hashes` their full board hashes (the
        cache keys), `to_move` uint8 [n], `histories` uint8 [n, 8, 441] (each one's last 8
        mailboxes, newest first, INVAL before the game). No network komi, no mirrored cache
        lookups (`reads_boards_before` says from which move number a caller may use this);
        symmetry None (a random one each, drawn as `submit` draws them) or one 0..7.
        `.result()` gives `BatchEvaluations`, arrays instead of one Evaluation a position.

        Why: on a GPU one tree's host time went to a Python object per leaf, made by the
        search and taken apart again here; a batch stays in the arrays the search's kernels
        made, from its descent to the expansion."""
        hits = self.cache.lookup_many(hashes)
        todo = [i for i, hit in enumerate(hits) if hit is None]
        pending = None
        if todo:
            m = len(todo)
            if m < len(hits):
                to_move, histories = to_move[todo], histories[todo]
            syms = self.random_symmetries(m) if symmetry is None else \
                [s for (s,) in self._symmetries(m, symmetry)]
            if self.backend.accepts_packed_inputs:  # the device builds the planes
                pending = self.backend.submit_packed(
                    packed_histories(histories, to_move, syms), m)
            else:
                planes = np.empty((m, 18, NUM_INTERSECTIONS), dtype=np.float32)
                planes_from_histories(histories, to_move, syms, planes)
                pending = self.backend.submit(planes.reshape(m, 18, 19, 19))
            self.evaluations += m
            pending = (syms, np.asarray(to_move), pending)
        return PendingRows(self, hashes, hits, todo, pending, write_cache)

    # ------------------------------------------------------------------ memory figures
    def set_cache_size(self, entries: int) -> None:
        """Bound the cache (lz-setoption memory, --cache size); the oldest entries go."""
        self.cache.resize(entries)

    def weights_bytes(self) -> int:
        """The network's bytes in LZ's accounting (what lz-memory_report calls base, less 85 MiB)."""
        return self.estimated_size()

    def estimated_size(self) -> int:
        """Bytes of the network as LZ 0.17 counts them (Network::get_estimated_size):
        3x3 filters in Winograd form (36 per 9), the BN vectors, the heads and FCs."""
        w = self.weights
        convs3 = [w.input_conv] + [c for block in w.tower for c in block]
        floats = sum(36 * c.weights.shape[0] * c.weights.shape[1] for c in convs3)
        floats += sum(3 * c.outputs for c in convs3)  # biases (zeroed), means, stddevs
        for conv in (w.policy_conv, w.value_conv):
            floats += conv.weights.size + 3 * conv.outputs
        floats += w.policy_fc_w.size + w.policy_fc_b.size
        floats += w.value_fc1_w.size + w.value_fc1_b.size
        floats += w.value_fc2_w.size + w.value_fc2_b.size
        return 4 * floats


class PendingEvaluations:
    """A batch under way: `result()` waits for the backend, decodes and caches (once)."""

    def __init__(self, network: Network, states, results, todo, pending, write_cache=True):
        self._network = network
        self._write_cache = write_cache
        self._states = states
        self._results = results
        self._todo = todo
        self._pending = pending

    def result(self) -> list[Evaluation]:
        if self._pending is not None:
            states, syms, pending = self._pending
            self._pending = None
            logits, values = pending.result()
            net = self._network
            insert = net.cache.insert
            for i, ev in zip(self._todo, net._decode(states, syms, logits, values)):
                self._results[i] = ev
                if self._write_cache:
                    insert(cache_key(self._states[i]), ev)
        return self._results


class BatchEvaluations:
    """A batch's evaluations as arrays (`Network.submit_histories`): `policies` float32
    [n, 362] (read-only; row i is position i's policy in board index order, 361 = pass) and
    `winrates` float64 [n] (the side to move's)."""

    __slots__ = ("policies", "winrates")

    def __init__(self, policies: np.ndarray, winrates: np.ndarray):
        self.policies = policies
        self.winrates = winrates

    def __len__(self) -> int:
        return len(self.winrates)


class PendingRows:
    """A `submit_histories` batch under way: `result()` waits for the backend, decodes,
    caches (once) and puts the cache hits' rows among the rest."""

    def __init__(self, network: Network, hashes, hits, todo, pending, write_cache: bool):
        self._network = network
        self._hashes = hashes
        self._hits = hits
        self._todo = todo
        self._pending = pending
        self._write_cache = write_cache
        self._answer: BatchEvaluations | None = None

    def result(self) -> BatchEvaluations:
        if self._answer is not None:
            return self._answer
        net, hits, todo = self._network, self._hits, self._todo
        n = len(hits)
        policies = winrates = None
        if self._pending is not None:
            syms, to_move, pending = self._pending
            self._pending = None
            logits, values = pending.result()
            white = to_move == WHITE if net.version == 2 else None
            policies, winrates = net.decode_rows(syms, logits, values, 1, white)
            if self._write_cache:
                hashes = self._hashes
                net.cache.insert_many([hashes[i] for i in todo],
                                      list(map(Evaluation, policies, winrates.tolist())))
        if len(todo) < n:  # cache hits: their rows put in place
            full = np.empty((n, POLICY_SIZE), dtype=np.float32)
            rates = np.empty(n, dtype=np.float64)
            for i, hit in enumerate(hits):
                if hit is not None:
                    full[i] = hit.policy
                    rates[i] = hit.winrate
            if todo:
                full[todo] = policies
                rates[todo] = winrates
            full.setflags(write=False)
            policies, winrates = full, rates
        self._answer = BatchEvaluations(policies, winrates)
        return self._answer


def komi_key(stm_komi: float) -> int:
    """A 64-bit term mixed into the cache key of a position told komi `stm_komi` (dynamic
    komi); 0 for 7.5, whose planes are the standard ones."""
    if stm_komi == 7.5:
        return 0
    bits = int(np.float32(stm_komi).view(np.uint32))
    return ((bits + 1) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF


def cache_key(state) -> int:
    """The cache key of `state`: its board hash, mixed with its network komi if it has one."""
    if state.net_komi is None:
        return state.board.hash
    return state.board.hash ^ komi_key(state.stm_komi)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax (max subtracted, temperature 1), in float32 as Leela Zero's
    Network::softmax computes it (src/Network.cpp), in place in a copy: the same operations
    as exp(x - max) / sum, row by row or for a whole batch. Why not float64: the policy is
    float32 from the backend and in the tree, and float64's exp cost 2.9 us a row here
    against 1.4 us for the whole float32 softmax, on every evaluated leaf."""
    x = np.array(logits, dtype=np.float32)
    x -= x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    return x


def _average_rows(policies: np.ndarray, values: np.ndarray, per: int):
    """The mean of each state's `per` consecutive rows, summed in row order from zero and then
    divided, exactly as adding one row at a time would (numpy's pairwise sum would not)."""
    n = len(values) // per
    policies = policies.reshape(n, per, -1)
    values = values.reshape(n, per)
    policy_sum = np.zeros((n, policies.shape[2]))
    value_sum = np.zeros(n)
    for k in range(per):
        policy_sum += policies[:, k]
        value_sum += values[:, k]
    return policy_sum / per, value_sum / per
