"""Self-play that carries more information per game than Leela Zero's: which moves get a full,
recorded search, the forced playouts taken back out of a recorded target, and each game's komi.

Owns: `full_search` (playout-cap randomisation's draw), `prune_forced` (policy-target pruning),
`game_komi` (komi randomisation). Imports: stdlib, search.node (`forced_visits`, the one
formula the search and the pruning share), search.result.

All three come from KataGo (Wu, "Accelerating Self-Play Learning in Go", 2019, sections 3.1
and 3.2; komi randomisation from its self-play). None changes what a chunk is: a recorded move
is written by the same recorder in Leela Zero's v1 format; the others are simply not recorded,
a pruned target is still a visit distribution, and a game's komi decides its winner as it does
in any game.

The draws are functions of the game's seed (and the move number), like the no-resign draw in
settings.py, so a rerun with the same run seed plays and records the same moves, and a test
can tell which moves must be in a chunk.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

from leelaz.search.node import forced_visits
from leelaz.search.result import SearchResult

#: The komi the networks are trained around (Leela Zero's, autogtp's).
BASE_KOMI = 7.5


def _uniform(*key) -> float:
    """A number in [0, 1) drawn from `key` (stable across runs and machines)."""
    digest = hashlib.sha256(":".join(str(k) for k in key).encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


def full_search(game_seed: int, move_num: int, share: float) -> bool:
    """Whether the search before move `move_num` (0 = the game's first) is a full one: with
    noise, and recorded. `share` 1 makes every search full (Leela Zero)."""
    if share >= 1.0:
        return True
    return _uniform("full-search", game_seed, move_num) < share


def prune_forced(result: SearchResult, k: float) -> SearchResult:
    """The result with the forced playouts taken out of every root child but the most visited
    one (the first of equals): each loses floor(forced_visits(prior, total, k)) visits, never
    going below 0, `total` being the children's visits at the end of the search; a child left
    with a single playout is pruned outright, as KataGo does. The priors are those the search
    used (noise included), as they were when the playouts were forced.

    Why the single playouts: the search's first descent from a fresh root finds every child's
    exploration term zero (no parent visits yet) and takes the first child in order (Leela
    Zero's strict `value > best_value`), so some child always gets one visit whatever it is
    worth. Under Leela Zero's 1,601 visits that is noise; under a small search it is a share
    of the target, and on a start whose priors tie (the uniform start) it is the same corner
    point in every position, which the next network learns to play."""
    children = result.children
    if k <= 0 or not children:
        return result
    total = sum(c.visits for c in children)
    best = max(range(len(children)), key=lambda i: (children[i].visits, -i))
    pruned = []
    for i, c in enumerate(children):
        if i != best and c.visits:  # a child without visits has none to lose (most of them)
            left = max(0, c.visits - math.floor(forced_visits(c.prior, total, k)))
            if left == 1:
                left = 0
            if left != c.visits:
                c = dataclasses.replace(c, visits=left)
        pruned.append(c)
    return dataclasses.replace(result, children=pruned)


def game_komi(game_seed: int, spread: float) -> float:
    """The game's komi: BASE_KOMI plus a whole number of points drawn from a normal
    distribution of standard deviation `spread` (so komi stays x.5: no draws), 0 = none."""
    if spread <= 0:
        return BASE_KOMI
    u1 = max(_uniform("komi-1", game_seed), 1e-300)
    u2 = _uniform("komi-2", game_seed)
    normal = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)  # Box-Muller
    return BASE_KOMI + round(spread * normal)
