"""The root of a search: tree reuse, root preparation and Dirichlet noise.

Owns: `advance` (Leela Zero's advance_to_new_rootstate: walk the kept tree down the moves
played since the last search, `moves_since`), `prepare_root` (expand the root if needed, inflate every child,
drop superko repeats and an avoided pass, add noise with -n), `root_needs_evaluation`,
`dirichlet_noise`, and the small helpers about the root (`kept_boards`, `to_move`). Imports:
game.coords, search.node, search.expansion (FLT_MIN).

The root's selection, `RootSelector`, is search/select.py's, beside the plain selection and
the one PUCT score they share (tests/test_select.py keeps them equal).
"""

from __future__ import annotations

from leelaz.game.coords import PASS
from leelaz.search.expansion import FLT_MIN
from leelaz.search.node import ACTIVE, INVALID, UCTNode


def moves_since(old_state, new_state) -> list[int] | None:
    """The moves played from `old_state` to `new_state`, each in turn (none for the same
    position); None when the tree searched from `old_state` cannot serve `new_state`: no
    old state, another komi (or network komi), an undo, another game, a move out of turn."""
    if (old_state is None or old_state.komi != new_state.komi
            or old_state.net_komi != new_state.net_komi):
        return None
    depth = new_state.move_num - old_state.move_num
    if depth < 0 or depth >= len(new_state.history):
        return None
    if depth == 0:
        return [] if new_state.board.hash == old_state.board.hash else None
    if new_state.history[-1 - depth].hash != old_state.board.hash:
        return None
    moves = []
    expected = old_state.to_move
    for color, move in new_state.moves()[-depth:]:
        if color != expected:
            return None
        moves.append(move)
        expected = 1 - expected
    return moves if expected == new_state.to_move else None


def advance(old_state, root: UCTNode | None, new_state) -> UCTNode | None:
    """The node of `new_state` in the tree searched from `old_state`, reached by the moves
    played since (Leela Zero's advance_to_new_rootstate); None when anything does not match:
    no old tree, `moves_since` none, a move not in the tree."""
    node = root
    moves = moves_since(old_state, new_state)
    if node is None or moves is None:
        return None
    for move in moves:
        node = node.find_child(move)
        if node is None:
            return None
    node.status = ACTIVE
    node.virtual_loss = 0
    return node


def prepare_root(run) -> None:
    """Expand the root if needed, inflate all children, remove superko repeats and an
    avoided pass, add Dirichlet noise with -n; prints `NN eval=`. `run` is the SearchRun
    (search/run.py) being prepared; root.py does not import run.py, which imports it."""
    root, root_state, color = run.root, run.root_state, run.color
    had_children = root.has_children()
    if root_needs_evaluation(root, root_state):
        ev = run.evaluator.evaluate([root_state])[0]
        black = run.expand(root, root_state, ev)
        if not had_children:
            root.update(black)
    run.log(f"NN eval={root.net_eval_for(color):f}\n")
    root.inflate_all()
    kept = []
    seen = root_state.seen_positions()
    board = root_state.board
    for child in root.children:
        if child.move != PASS:
            # What `root_state.copy()`, `play` and `superko()` would find, without copying
            # the game's history or the board for every child: the position after the move
            # repeats one of the game's (`seen`: every position so far, this one included).
            # A reused tree's child keeps that position already; the others' stones-only
            # hash comes from the board without playing (Board.ko_hash_after), and their
            # positions are made when a descent first reaches them.
            after = child.board
            h = after.ko_hash if after is not None else board.ko_hash_after(color, child.move)
            if h in seen:
                continue
        if child.status == INVALID:
            child.status = ACTIVE
        kept.append(child)
    r = run.restrictions
    if (r is not None and r.has_move_restrictions and len(kept) > 1
            and not r.is_allowed(color, PASS, root_state.move_num)):
        kept = [c for c in kept if c.move != PASS]
    root.children = kept
    run.seen = seen
    if run.params.noise:
        dirichlet_noise(root, run.rng, run.params.dirichlet_alpha, run.params.dirichlet_epsilon)


def root_needs_evaluation(root: UCTNode, root_state) -> bool:
    """Whether `prepare_root` evaluates the root: a new or memory-cut root of a game that is
    not over. A driver batching several games asks first, and sends the root's position in
    its network call, so the evaluation `prepare_root` asks for is then in the cache."""
    return (not root.expanded or root.psa_ratio > 0) and root_state.passes < 2


def dirichlet_noise(root: UCTNode, rng, alpha: float, epsilon: float) -> None:
    """P <- (1 - eps) P + eps eta, eta ~ Dir(alpha) over the root's children (-n)."""
    eta = [rng.gammavariate(alpha, 1.0) for _ in root.children]
    total = sum(eta)
    if total < FLT_MIN:  # as Leela Zero tests it
        return
    for child, e in zip(root.children, eta):
        child.prior = child.prior * (1 - epsilon) + epsilon * (e / total)


def kept_boards(root: UCTNode) -> int:
    """How many positions a (reused) tree keeps on its nodes."""
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        for c in node.children:
            if c.board is not None:
                count += 1
            if c.visits:
                stack.append(c)
    return count


def to_move(state, color: int):
    """A copy of `state` with `color` to move (genmove COLOR may break alternation)."""
    st = state.copy()
    if st.to_move != color:
        st.set_to_move(color)
    return st
