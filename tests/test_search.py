"""UCTSearch with fake evaluators: batching, virtual loss bookkeeping, limits, superko at the
root, terminal scoring, pass/resign rules, tree reuse and reproducibility."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import tree_nodes as walk
from fake_evaluator import AsyncHashEvaluator, FakeEvaluator, HashEvaluator
from leelaz.game.coords import BLACK, PASS, RESIGN, WHITE, vertex
from leelaz.game.state import GameState
from leelaz.search.node import ACTIVE, INVALID
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch


def make_search(evaluator=None, seed=1, **params) -> tuple[UCTSearch, list[str]]:
    lines: list[str] = []
    params.setdefault("timemanage", "off")
    search = UCTSearch(evaluator or HashEvaluator(), SearchParams(**params), rng=seed,
                       log=lines.append)
    return search, lines


def assert_no_pending_virtual_loss(search: UCTSearch) -> None:
    for n in walk(search.root):
        assert n.virtual_loss == 0


def assert_visits_consistent(search: UCTSearch) -> None:
    """Every expanded node has one more visit than its children together (its own eval),
    except that terminal visits and INVALID children do not add up that way."""
    for n in walk(search.root):
        if n.expanded and n.children:
            assert n.visits >= sum(c.visits for c in n.children)


def pass_preferring_policy(state):
    p = np.full(362, 0.1 / 361, dtype=np.float32)
    p[361] = 0.9
    return p


# ------------------------------------------------------------------ batching & bookkeeping
@pytest.mark.parametrize("batch", [1, 4, 16])
def test_no_virtual_loss_left_and_one_call_per_batch(batch):
    ev = HashEvaluator()
    search, _ = make_search(ev, batch_size=batch, max_visits=150)
    result = search.think(GameState(), BLACK, time_limit_cs=100000)
    assert_no_pending_virtual_loss(search)
    assert_visits_consistent(search)
    assert result.root_visits == 150  # the visit cap is met exactly
    assert max(ev.batches) <= batch
    # One evaluation for the root, then one per non-terminal playout, all in batches.
    assert ev.evaluations == result.playouts + 1
    if batch > 1:
        assert ev.calls < ev.evaluations  # really batched


def test_a_move_on_the_clock_uses_the_play_batch_and_pondering_the_search_batch():
    ev = HashEvaluator()
    search, _ = make_search(ev, batch_size=12, play_batch_size=3, max_visits=600)
    search.think(GameState(), BLACK, time_limit_cs=100000)
    assert max(ev.batches) == 3
    ev.batches.clear()
    search.reset()
    search.ponder(GameState(), should_stop=lambda: False)  # the visit cap ends it
    assert max(ev.batches) == 12
    ev.batches.clear()
    search.reset()
    search.params = dataclasses.replace(search.params, play_batch_size=0)
    search.think(GameState(), BLACK, time_limit_cs=100000)  # 0: the search batch
    assert max(ev.batches) == 12


@pytest.mark.parametrize("batch", [1, 8])
def test_pipelined_search_keeps_the_books(batch):
    """With an asynchronous evaluator one batch stays in flight while the next is collected
    (batch > 1 only); caps are still met exactly and no virtual loss is left over."""
    ev = AsyncHashEvaluator()
    search, _ = make_search(ev, batch_size=batch, max_visits=300)
    result = search.think(GameState(), BLACK, time_limit_cs=100000)
    assert_no_pending_virtual_loss(search)
    assert_visits_consistent(search)
    assert result.root_visits == 300
    assert ev.outstanding == 0
    assert ev.max_outstanding == (2 if batch > 1 else 1)
    assert ev.evaluations == result.playouts + 1
    # The tree keeps growing on reuse, with the same books.
    state = GameState()
    state.play(BLACK, result.move)
    search.params = dataclasses.replace(search.params, max_visits=400)
    result = search.think(state, WHITE, time_limit_cs=100000)
    assert_no_pending_virtual_loss(search)
    assert_visits_consistent(search)
    assert result.root_visits == 400


class InFlightWatch(AsyncHashEvaluator):
    """Records, at every submit, the leaves then waiting (this batch included) and the root's
    visits; `asynchronous` as asked."""

    def __init__(self, asynchronous: bool):
        super().__init__()
        self.asynchronous = asynchronous
        self.search = None
        self.waiting = 0
        self.seen: list[tuple[int, int]] = []

    def submit(self, states):
        watch, inner = self, super().submit(states)
        self.waiting += len(states)
        self.seen.append((self.waiting, self.search.root.visits))

        class Pending:
            def result(self):
                watch.waiting -= len(states)
                return inner.result()
        return Pending()


@pytest.mark.parametrize("pipelined", [False, True])
def test_leaves_in_flight_ramp_up_with_the_tree(pipelined):
    """At most max(10, root visits / visits_per_pending_leaf) leaves wait for the network at
    once, so a batch of 32 does not make a 200-visit search blind (10 being Leela Zero's
    default number of playouts in flight); the cap then lets the full batch (two of them when
    pipelined) through."""
    ev = InFlightWatch(pipelined)
    search, _ = make_search(ev, batch_size=32, max_visits=1500, visits_per_pending_leaf=16,
                            min_pending_leaves=10)
    ev.search = search
    search.think(GameState(), BLACK, time_limit_cs=100000)
    assert ev.seen[0] == (10, 1)  # ten leaves at once from the first visit on
    for waiting, visits in ev.seen[1:]:
        assert waiting <= max(10, visits // 16), (waiting, visits)
    assert max(waiting for waiting, visits in ev.seen if visits < 160) == 10
    assert max(waiting for waiting, _ in ev.seen) == (64 if pipelined else 32)


def test_leaves_in_flight_start_at_one_without_a_floor():
    """With min_pending_leaves=1 the ramp starts from a single leaf at a time."""
    ev = InFlightWatch(True)
    search, _ = make_search(ev, batch_size=32, max_visits=400, visits_per_pending_leaf=16,
                            min_pending_leaves=1)
    ev.search = search
    search.think(GameState(), BLACK, time_limit_cs=100000)
    for waiting, visits in ev.seen:
        assert waiting <= max(1, visits // 16), (waiting, visits)
    assert_no_pending_virtual_loss(search)


def test_pipelined_search_error_leaves_a_usable_engine():
    """An evaluation that fails while another batch is in flight propagates, and the next
    search starts clean."""
    class Failing(AsyncHashEvaluator):
        calls_left = 5

        def submit(self, states):
            Failing.calls_left -= 1
            if Failing.calls_left == 0:
                raise RuntimeError("device lost")
            return super().submit(states)

    ev = Failing()
    search, _ = make_search(ev, batch_size=8, max_visits=300)
    with pytest.raises(RuntimeError, match="device lost"):
        search.think(GameState(), BLACK, time_limit_cs=100000)
    result = search.think(GameState(), BLACK, time_limit_cs=100000)
    assert result.root_visits == 300
    assert_no_pending_virtual_loss(search)


def test_playout_limit_counts_this_search_only():
    search, _ = make_search(max_playouts=40, batch_size=8)
    state = GameState()
    result = search.think(state, BLACK, time_limit_cs=100000)
    assert result.playouts == 40
    assert result.root_visits == 41  # + the root's own evaluation


def test_reproducible_with_seed_and_noise():
    def run(seed):
        search, _ = make_search(HashEvaluator(), seed=seed, noise=True, max_visits=120)
        result = search.think(GameState(), BLACK, time_limit_cs=100000)
        return [(c.move, c.visits, round(c.prior, 7)) for c in result.children]

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_noise_changes_root_priors_but_keeps_their_sum():
    search, _ = make_search(HashEvaluator(), noise=True, max_visits=2)
    result = search.think(GameState(), BLACK, time_limit_cs=100000)
    assert sum(c.prior for c in result.children) == pytest.approx(1.0, abs=1e-5)
    plain, _ = make_search(HashEvaluator(), max_visits=2)
    base = {c.move: c.prior for c in plain.think(GameState(), BLACK,
                                                 time_limit_cs=100000).children}
    assert any(abs(base[c.move] - c.prior) > 1e-4 for c in result.children)


# ------------------------------------------------------------------ root preparation
def ko_then_passes() -> tuple[GameState, int]:
    """Black takes a ko, both pass; White's recapture is legal but repeats a position."""
    s = GameState()
    for x, y in ((1, 2), (0, 1), (1, 0)):
        s.play(BLACK, vertex(x, y))
    for x, y in ((2, 2), (1, 1), (3, 1), (2, 0)):
        s.play(WHITE, vertex(x, y))
    s.play(BLACK, vertex(2, 1))  # captures (1, 1): a ko
    s.play(WHITE, PASS)
    s.play(BLACK, PASS)
    s.set_passes(0)  # as kgs-genmove_cleanup does
    return s, vertex(1, 1)


def test_superko_move_is_removed_at_the_root():
    state, recapture = ko_then_passes()
    assert state.is_legal(WHITE, recapture)
    trial = state.copy()
    trial.play(WHITE, recapture)
    assert trial.superko()  # the test is meaningful
    search, _ = make_search(FakeEvaluator(), max_visits=30)
    result = search.think(state, WHITE, time_limit_cs=100000)
    moves = {c.move for c in result.children}
    assert recapture not in moves and len(moves) > 300
    assert result.move != recapture


def test_nn_eval_line_and_stats_lines():
    search, lines = make_search(FakeEvaluator(value_fn=lambda s: 0.25), max_visits=20)
    search.think(GameState(), BLACK, time_limit_cs=100000)
    text = "".join(lines)
    assert "Thinking at most 1000.0 seconds...\n" in text
    assert "NN eval=0.250000\n" in text
    assert " -> " in text and "average depth" in text
    assert "20 visits, " in text and " playouts, " in text


# ------------------------------------------------------------------ terminal scoring
def test_two_passes_score_exactly_and_are_never_expanded():
    # Black passed on an empty board; White's pass ends the game: W wins by komi.
    state = GameState()
    state.play(BLACK, PASS)
    search, _ = make_search(FakeEvaluator(policy_fn=pass_preferring_policy), dumbpass=True,
                            max_visits=50)
    result = search.think(state, WHITE, time_limit_cs=100000)
    pass_node = next(c for c in search.root.children if c.move == PASS)
    assert pass_node.visits > 0
    assert pass_node.raw_eval(WHITE) == 1.0
    assert not pass_node.expanded and pass_node.children == []
    assert_no_pending_virtual_loss(search)
    assert result.move == PASS


def test_genmove_after_two_passes_passes():
    state = GameState()
    state.play(BLACK, PASS)
    state.play(WHITE, PASS)
    search, _ = make_search(FakeEvaluator(), max_visits=50)
    result = search.think(state, BLACK, time_limit_cs=100000)
    assert result.move == PASS


# ------------------------------------------------------------------ pass rules
def test_opponent_passed_and_passing_wins_so_pass():
    state = GameState(komi=7.5)
    state.play(BLACK, PASS)  # White is ahead by komi on an empty board
    search, lines = make_search(FakeEvaluator(), max_visits=30)
    assert search.think(state, WHITE, time_limit_cs=100000).move == PASS
    assert "Passing wins, I'll pass out.\n" in lines


def test_opponent_passed_and_passing_loses_so_play_on():
    state = GameState(komi=7.5)
    state.play(WHITE, PASS)
    search, lines = make_search(FakeEvaluator(), max_visits=30)
    assert search.think(state, BLACK, time_limit_cs=100000).move not in (PASS, RESIGN)
    assert "Passing loses, I'll play on.\n" in lines


def test_dumbpass_turns_the_pass_heuristics_off():
    state = GameState(komi=7.5)
    state.play(BLACK, PASS)
    search, _ = make_search(FakeEvaluator(), max_visits=30, dumbpass=True)
    assert search.think(state, WHITE, time_limit_cs=100000).move not in (PASS, RESIGN)


def test_pass_allowed_only_when_winning_on_net_and_board():
    # White on an empty board, net value 0.9 for the side to move: pass becomes a child.
    ev = FakeEvaluator(policy_fn=pass_preferring_policy, value_fn=lambda s: 0.9)
    search, _ = make_search(ev, max_visits=5)
    result = search.think(GameState(), WHITE, time_limit_cs=100000)
    assert PASS in {c.move for c in result.children}
    # Black is behind by komi on the board: no pass child.
    search, _ = make_search(ev, max_visits=5)
    result = search.think(GameState(), BLACK, time_limit_cs=100000)
    assert PASS not in {c.move for c in result.children}


def test_nopass_avoids_a_winning_pass():
    ev = FakeEvaluator(policy_fn=pass_preferring_policy, value_fn=lambda s: 0.9)
    search, _ = make_search(ev, max_visits=20)
    assert search.think(GameState(), WHITE, time_limit_cs=100000).move == PASS
    search, lines = make_search(ev, max_visits=20)
    move = search.think(GameState(), WHITE, time_limit_cs=100000, nopass=True).move
    assert move not in (PASS, RESIGN)
    assert "Preferring not to pass.\n" in lines


# ------------------------------------------------------------------ resign rules
def late_game_state(handicap: int = 0) -> GameState:
    """92 moves without captures: Black fills rows 1-5 from the left, White rows 15-19."""
    s = GameState()
    black = [vertex(x, y) for y in range(0, 5) for x in range(19)][:46]
    white = [vertex(x, y) for y in range(14, 19) for x in range(19)][:46]
    for b, w in zip(black, white):
        s.play(BLACK, b)
        s.play(WHITE, w)
    s.handicap = handicap
    return s


def black_wins_with(p: float):
    """value_fn: Black's winrate is p whoever is to move."""
    return lambda s: p if s.to_move == BLACK else 1.0 - p


def test_resigns_when_hopeless_late_in_the_game():
    search, lines = make_search(FakeEvaluator(value_fn=black_wins_with(0.05)), max_visits=20)
    assert search.think(late_game_state(), BLACK, time_limit_cs=100000).move == RESIGN
    assert any(line.startswith("Eval (") and "looks bad. Resigning." in line for line in lines)


def test_never_resigns_with_r0_or_early_or_above_threshold():
    ev = FakeEvaluator(value_fn=black_wins_with(0.05))
    search, _ = make_search(ev, max_visits=20, resign_pct=0)
    assert search.think(late_game_state(), BLACK, time_limit_cs=100000).move != RESIGN
    search, _ = make_search(ev, max_visits=20)
    assert search.think(GameState(), BLACK, time_limit_cs=100000).move != RESIGN  # move 0
    search, _ = make_search(FakeEvaluator(value_fn=black_wins_with(0.15)), max_visits=20)
    assert search.think(late_game_state(), BLACK, time_limit_cs=100000).move != RESIGN
    # -r 20: 15% is now low enough.
    search, _ = make_search(FakeEvaluator(value_fn=black_wins_with(0.15)), max_visits=20,
                            resign_pct=20)
    assert search.think(late_game_state(), BLACK, time_limit_cs=100000).move == RESIGN


def test_white_with_handicap_uses_the_blended_threshold():
    # Move 92, h = 4: f = 92 / 216.6 = 0.4248; blend = f*0.1 + (1-f)*0.1/5 = 0.05398.
    ev_6 = FakeEvaluator(value_fn=black_wins_with(0.94))  # White at 6%: above the blend
    search, _ = make_search(ev_6, max_visits=20)
    assert search.think(late_game_state(4), WHITE, time_limit_cs=100000).move != RESIGN
    ev_5 = FakeEvaluator(value_fn=black_wins_with(0.95))  # White at 5%: below it
    search, _ = make_search(ev_5, max_visits=20)
    assert search.think(late_game_state(4), WHITE, time_limit_cs=100000).move == RESIGN


# ------------------------------------------------------------------ tree reuse
def test_tree_is_reused_after_the_moves_played():
    search, lines = make_search(HashEvaluator(), max_visits=200)
    state = GameState()
    first = search.think(state, BLACK, time_limit_cs=100000)
    state.play(BLACK, first.move)
    best_child = search.root.find_child(first.move)
    reply = best_child.best_child(WHITE)
    kept = reply.visits
    assert kept > 0
    state.play(WHITE, reply.move)
    second = search.think(state, BLACK, time_limit_cs=100000)
    assert not any(" -> " in line and "PV:" not in line for line in lines)  # Lizzie's rule
    assert second.playouts == 200 - kept - (0 if kept else 1)
    assert_no_pending_virtual_loss(search)


def test_reuse_falls_back_to_a_fresh_tree_when_komi_changes():
    search, _ = make_search(HashEvaluator(), max_visits=50)
    state = GameState()
    search.think(state, BLACK, time_limit_cs=100000)
    state.komi = 0.5
    result = search.think(state, BLACK, time_limit_cs=100000)
    assert result.playouts == 49


# ------------------------------------------------------------------ limits and stopping
def test_time_limit_and_should_stop():
    search, _ = make_search(HashEvaluator())
    calls = []

    def stop():
        calls.append(1)
        return len(calls) >= 3

    result = search.think(GameState(), BLACK, time_limit_cs=100000, should_stop=stop)
    assert len(calls) == 3 and result.playouts <= 3 * 8


def test_early_stop_when_no_alternative_can_catch_up():
    def peaked(state):
        p = np.full(362, 0.1 / 361, dtype=np.float32)
        p[3 * 19 + 3] = 0.9  # D4
        return p

    d4 = vertex(3, 3)

    def d4_wins(state):  # Black's winrate 0.7 once Black holds D4, else 0.4
        black = 0.7 if state.board.square[d4] == BLACK else 0.4
        return black if state.to_move == BLACK else 1.0 - black

    search, lines = make_search(FakeEvaluator(policy_fn=peaked, value_fn=d4_wins),
                                timemanage="on", max_visits=400)
    result = search.think(GameState(), BLACK, time_limit_cs=100000)
    assert result.move == vertex(3, 3)
    assert result.root_visits < 400
    assert any(line.endswith("s left, stopping early.\n") for line in lines)
    assert all(c.status == ACTIVE for c in search.root.children)


def test_full_board_answers_pass():
    state = GameState()
    for i in range(361):
        x, y = i % 19, i // 19
        if (x + y) % 3 != 0:  # leave single-point eyes so nothing is captured
            state.play(BLACK if (x // 3) % 2 == 0 else WHITE, vertex(x, y))
    search, _ = make_search(FakeEvaluator(), max_visits=40)
    result = search.think(state, BLACK, time_limit_cs=100000)
    move = result.move
    assert move in (PASS, RESIGN) or state.is_legal(BLACK, move)


def test_params_are_replaceable_between_searches():
    search, _ = make_search(HashEvaluator(), max_visits=30)
    search.think(GameState(), BLACK, time_limit_cs=100000)
    search.params = dataclasses.replace(search.params, max_visits=60)
    search.reset()
    assert search.think(GameState(), BLACK, time_limit_cs=100000).root_visits == 60


# ------------------------------------------------------------------ random play (-m)
def test_random_moves_sample_by_visits_only_early():
    def chosen(seed, random_count, temp=10.0):
        search, _ = make_search(HashEvaluator(), seed=seed, max_visits=150,
                                random_count=random_count, random_temp=temp)
        result = search.think(GameState(), BLACK, time_limit_cs=100000)
        most = max(result.children, key=lambda c: c.visits)
        return result.move, result.children, most

    picks = set()
    for seed in range(8):
        move, children, most = chosen(seed, random_count=1)
        visits = {c.move: c.visits for c in children}
        assert visits[move] > 1  # only moves above --randomvisits are ever sampled
        picks.add(move)
    assert len(picks) > 1  # the hot temperature spreads the choice
    # Move number 0 is not below -m 0: the best move is played, whatever the seed.
    assert len({chosen(seed, random_count=0)[0] for seed in range(4)}) == 1


# ------------------------------------------------------------------ the clock
def test_budget_comes_from_the_clock_and_the_search_is_charged():
    from leelaz.game.timecontrol import TimeControl

    now = [1000.0]
    state = GameState()
    state.time_control = TimeControl(main_cs=60 * 100, clock=lambda: now[0])
    # With --timemanage off, 72 + 60 moves are expected: (6000 - 100) / 132 = 44 cs.
    assert state.time_control.max_time_for_move(0, BLACK, timemanage=False) == 44

    class SlowFake(FakeEvaluator):
        def evaluate(self, states, symmetry=None):
            now[0] += 0.1  # each batch costs 10 cs of (fake) clock time
            return super().evaluate(states, symmetry)

    ev = SlowFake()
    # The visit cap bounds the batches (and so the fake charge) whatever this machine's speed.
    search, lines = make_search(ev, max_visits=200)
    result = search.think(state, BLACK)
    assert "Thinking at most 0.4 seconds...\n" in lines
    assert result.playouts > 0
    assert state.time_control.remaining_cs[BLACK] == 6000 - 10 * ev.calls  # charged
    assert state.time_control.remaining_cs[WHITE] == 6000


def test_a_failing_evaluator_leaves_a_usable_search():
    class Flaky(HashEvaluator):
        fail = True

        def evaluate(self, states, symmetry=None):
            if len(self.batches) == 3 and self.fail:
                self.fail = False
                self.batches.append(0)
                raise RuntimeError("device lost")
            return super().evaluate(states, symmetry)

    ev = Flaky()
    search, _ = make_search(ev, max_visits=50, batch_size=4)
    state = GameState()
    with pytest.raises(RuntimeError):
        search.think(state, BLACK, time_limit_cs=100000)
    assert state.time_control._started[BLACK] is None  # the clock was stopped
    result = search.think(state, BLACK, time_limit_cs=100000)
    assert result.root_visits == 50
    assert_no_pending_virtual_loss(search)


def test_memory_pressure_trims_expansions_and_freed_memory_completes_them():
    def steep(state):  # priors 1, 1/2, 1/3, ...: many fall under 0.1% of the best
        p = 1.0 / np.arange(1, 363, dtype=np.float64) ** 2
        return (p / p.sum()).astype(np.float32)

    ev = FakeEvaluator(policy_fn=steep)
    search, _ = make_search(ev, max_visits=60, max_tree_bytes=200_000)
    search.think(GameState(), BLACK, time_limit_cs=100000)
    trimmed = [n for n in walk(search.root) if n.expanded and n.psa_ratio > 0]
    assert trimmed, "the tree should have passed half of its memory"
    for n in trimmed:
        assert n.child_count() < 361
    assert_no_pending_virtual_loss(search)
    # Plenty of memory again: searching on (the tree is reused) completes trimmed nodes
    # that playouts pass through, appending their missing children.
    before = {id(n): n.child_count() for n in trimmed}
    search.params = dataclasses.replace(search.params, max_tree_bytes=10**12,
                                        max_visits=search.root.visits + 300)
    search.think(GameState(), BLACK, time_limit_cs=100000)
    completed = [n for n in walk(search.root) if id(n) in before and n.psa_ratio == 0.0]
    assert completed
    assert all(n.child_count() > before[id(n)] for n in completed)
    assert_no_pending_virtual_loss(search)


def test_a_search_where_no_descent_can_finish_gives_up(monkeypatch):
    from leelaz.search.node import RootSelector, UCTNode

    monkeypatch.setenv("LEELAZ_SEARCH_CORE", "python")  # the selection patched is Python's
    monkeypatch.setattr(UCTNode, "select_child", lambda self, *args: None)
    monkeypatch.setattr(RootSelector, "select", lambda self, *args: None)
    search, _ = make_search(FakeEvaluator())  # no visit cap, a huge time budget
    result = search.think(GameState(), BLACK, time_limit_cs=10**9)
    assert result.playouts == 0 and result.move not in (None, RESIGN)
    assert_no_pending_virtual_loss(search)


def test_result_best_and_pv_follow_lz_order_even_in_snapshots():
    from leelaz.search.result import MoveInfo, SearchResult

    children = [MoveInfo(vertex(0, 0), 0, 0.0, 0.5, -1e6, [vertex(0, 0)]),
                MoveInfo(vertex(1, 0), 30, 0.6, 0.2, 0.55, [vertex(1, 0), vertex(2, 2)]),
                MoveInfo(vertex(2, 0), 40, 0.5, 0.2, 0.45, [vertex(2, 0)])]
    result = SearchResult(color=BLACK, move_num=0, children=children)
    assert result.best() is children[1]  # both above max(2, 4): the higher LCB wins
    assert result.pv == [vertex(1, 0), vertex(2, 2)]
    assert SearchResult(color=BLACK, move_num=0).pv == []


def _tree_signature(search: UCTSearch) -> list:
    return [(n.move, n.visits, n.black_wins, n.status, len(n.children)) for n in walk(search.root)]


def _pass_then_retake(state) -> np.ndarray:
    """Black likes to pass, White to retake the ko at B2 (slot 20): a superko repeat that
    only shows up two moves below the root."""
    p = np.full(362, 0.1 / 361, dtype=np.float32)
    p[361 if state.to_move == BLACK else 20] = 0.9
    return p


def _search_twice(keep: int, monkeypatch) -> tuple[list, list, UCTSearch]:
    """A ko fight searched twice, with tree reuse, keeping at most `keep` positions."""
    import leelaz.search.search as search_module
    monkeypatch.setattr(search_module, "MAX_KEPT_BOARDS", keep)
    state, _ = ko_then_passes()
    state.undo()  # Black's pass: Black to move, the ko just taken, White passed
    state.set_passes(0)
    search, _ = make_search(FakeEvaluator(policy_fn=_pass_then_retake,
                                          value_fn=lambda s: 0.4 + 0.01 * (s.move_num % 7)),
                            max_visits=300, batch_size=4, dumbpass=True)
    search.think(state, BLACK, time_limit_cs=100000)
    signature = _tree_signature(search)
    mine = search.root.children[0]  # the most visited move, and the reply it expects
    state.play(BLACK, mine.move)
    state.play(WHITE, next(c for c in mine.children if c.status == ACTIVE).move)
    search.think(state, BLACK, time_limit_cs=100000)
    return signature, _tree_signature(search), search


def test_a_search_leaves_no_cyclic_garbage():
    """The search freezes what is alive for the cyclic collector after every batch
    (search/run.py), which is only safe while it makes no reference cycles. The engine's
    network with the instant backend, so that its batches, cache and answers are covered."""
    import gc

    from leelaz.backends import create_backend
    from leelaz.nn.network import Network
    network = Network(None, create_backend("random", None, seed=1), seed=1)
    search, _ = make_search(network, batch_size=8, max_visits=300)
    state = GameState()
    gc.unfreeze()  # earlier searches in this process froze their garbage too
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):  # fresh trees, reused trees, the last one dropped
            result = search.think(state, state.to_move)
            state.play(state.to_move, result.move)
        search.reset()
        gc.unfreeze()
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_kept_positions_change_nothing_but_the_speed(monkeypatch):
    """Descents that take positions from the nodes build the same trees (visits, values,
    superko repeats marked INVALID) as descents that replay every move, over a reused tree."""
    replayed = _search_twice(0, monkeypatch)
    assert not any(n.board is not None for n in walk(replayed[2].root))
    for keep in (7, 20_000):
        kept = _search_twice(keep, monkeypatch)
        assert kept[:2] == replayed[:2]
    assert any(status == INVALID for _, _, _, status, _ in replayed[0])  # superko was met


@pytest.mark.parametrize("evaluator, batch, dynamic_fpu", [
    (HashEvaluator, 1, False), (HashEvaluator, 8, False), (AsyncHashEvaluator, 32, False),
    (AsyncHashEvaluator, 16, True)])
def test_kept_child_scores_change_nothing_but_the_speed(evaluator, batch, dynamic_fpu,
                                                        monkeypatch):
    """Inner nodes selecting through ChildScores (run.py, here every node with a child) build
    exactly the trees select_child builds: visits, values and statuses of every node, over
    tree reuse, terminal leaves backed up during a collection, and repetitions found on
    replay (no positions kept, so a reused tree's visited child can turn INVALID)."""
    import leelaz.search.run as run_module

    def trees(threshold):
        monkeypatch.setattr(run_module, "KEPT_SCORES_CHILDREN", threshold)
        ko = _search_twice(0, monkeypatch)[:2]
        search, _ = make_search(evaluator(), batch_size=batch, max_visits=400, dumbpass=True,
                                dynamic_fpu=dynamic_fpu)
        state = GameState()
        signatures = []
        for _ in range(3):
            result = search.think(state, state.to_move, time_limit_cs=100000)
            signatures.append(_tree_signature(search))
            state.play(state.to_move, result.move)
        return ko, signatures

    plain = trees(10**9)
    assert trees(1) == plain
    assert any(status == INVALID for _, _, _, status, _ in plain[0][0])  # superko was met


def test_kept_positions_stay_within_their_limit(monkeypatch):
    *_, search = _search_twice(25, monkeypatch)
    assert 0 < sum(n.board is not None for n in walk(search.root)) <= 25
    assert_no_pending_virtual_loss(search)


def _tree_stats_by_definition(root) -> list[str]:
    """The tree statistics lines from their definition, recursively: every child slot of
    every node reached through visited children is a node at its depth; a node with more
    than one visit is a non-leaf, and its visited children are its children."""
    slots = []  # the depth of every node and child slot counted

    def visit(node, depth):
        slots.append(depth)
        children = node.children_moves()
        visited = [c for c in node.children if c.visits > 0]
        slots.extend([depth + 1] * (len(children) - len(visited)))
        counts = [(node.visits > 1, len(visited))]
        for c in visited:
            counts += visit(c, depth + 1)
        return counts
    counts = visit(root, 0)
    non_leaf = sum(n for n, _ in counts)
    children = sum(k for _, k in counts)
    lines = [f"{sum(slots) / len(slots):.1f} average depth, {max(slots)} max depth\n"]
    if non_leaf:
        lines.append(f"{non_leaf} non leaf nodes, {children / non_leaf:.2f} average children\n")
    return lines


@pytest.mark.parametrize("moves", ["", "Q16 D4 C16", "Q16 D4 C16 E17 R4 Q3 C14 F3"])
def test_tree_statistics_follow_their_definition(moves):
    from leelaz.game.coords import parse_gtp_vertex
    from leelaz.search import stats

    state = GameState()
    for move in moves.split():
        state.play(state.to_move, parse_gtp_vertex(move))
    search, _ = make_search(HashEvaluator(seed=3), max_visits=400, batch_size=8)
    search.think(state, state.to_move, use_clock=False)
    lines = stats.tree_stats_lines(search.root)
    assert lines == _tree_stats_by_definition(search.root)
    assert int(lines[1].split()[0]) > 10  # a real tree: many nodes searched more than once
