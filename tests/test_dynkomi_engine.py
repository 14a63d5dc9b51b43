"""Dynamic komi through the engine: start-up errors, `dyn_komi_test` over GTP, the start-up
--pos/--neg test, the game's komi across clear_board/komi, and an adjustment in a real search
(fake network whose winrate is a closed-form function of the komi it is told).
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

from leelaz.backends.random_weights import random_tensors
from leelaz.backends.weights_writer import write_weights
from leelaz.cli import run
from leelaz.config import resolve_dyn_komi
from leelaz.game.coords import BLACK, WHITE, parse_gtp_vertex
from leelaz.game.state import GameState
from leelaz.search.dynkomi_search import DynamicKomi
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch


def start(argv, script=""):
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, stdin=io.StringIO(script), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def flat_net(tmp_path_factory):
    """A network whose value head answers tanh(0): winrate 0.5 at every komi, so
    dyn_komi_test scores both halves 0.5 (1 - 0.5 and + w(300)): unusable."""
    tensors = random_tensors(1, 8, seed=3)
    tensors[-2][:] = 0.0  # value FC2 weights
    tensors[-1][:] = 0.0  # value FC2 bias
    path = str(tmp_path_factory.mktemp("flat") / "flat.txt")
    write_weights(path, tensors)
    return path


# ---- start-up ------------------------------------------------------------------------------
@pytest.mark.parametrize("argv,needle", [
    (["--target-komi", "nan"], "--target-komi must be a finite number"),
    (["--max-wr", ".05", "--min-wr", ".1"], "--max-wr (0.05) is below --min-wr (0.1)"),
    (["--handicap", "--max-wr", "0.01"], "--max-wr (0.01) is below --min-wr (0.06)"),
    (["--pos", "--neg"], "Cannot set both --pos and --neg."),
    (["--adj-pct", "0"], "--adj-pct"),
])
def test_bad_values_one_line_and_exit_1(argv, needle):
    code, out, err = start(["-g", *argv])
    assert code == 1 and out == ""
    assert err.splitlines()[0].startswith("ERROR: ") and needle in err.splitlines()[0]


def test_unusable_network_stops_a_mode_at_start_up(flat_net):
    code, out, err = start(["-g", "--cpu-only", "-w", flat_net, "--handicap",
                            "--target-komi", "0"], "name\n")
    assert code == 1 and out == ""
    assert "Weight file is unusable for dynamic komi. Sorry." in err
    assert err.splitlines()[-1].startswith("ERROR: the network is unusable for dynamic komi")


def test_flags_given_by_the_user_win_over_the_start_up_test(flat_net):
    for extra in (["--pos"], ["--tg-auto-pn"]):
        code, out, err = start(["-g", "--cpu-only", "-w", flat_net, "--handicap", *extra],
                               "name\n")
        assert code == 0 and out.startswith("= Leela Zero\n\n"), extra


# ---- dyn_komi_test over GTP ---------------------------------------------------------------------
def test_dyn_komi_test_replies_with_its_code_and_prints_the_table(flat_net):
    code, out, err = start(["-g", "--cpu-only", "-w", flat_net],
                           "dyn_komi_test\ndyn_komi_test 3\ndyn_komi_test x\n"
                           "dyn_komi_test 8\nknown_command dyn_komi_test\n")
    assert code == 0
    assert out.split("\n\n")[:5] == ["= 1", "= 1", "? syntax not understood",
                                     "? syntax not understood", "= false"]
    rows = [line for line in err.splitlines() if " | " in line and line[-1].isdigit()]
    assert len(rows) == 2 * 1201
    komis = [float(r.split(" | ")[0]) for r in rows[:1201]]
    assert komis[0] == -300.0 and komis[600] == 0.0 and komis[-1] == 300.0
    assert {r.split(" | ")[1] for r in rows} == {"0.500000"}
    assert err.count("Negative komi total score: 5.000000e-01") == 2
    assert err.count("Weight file is unusable for dynamic komi. Sorry.") == 2


def test_without_flags_list_commands_is_leela_zeros(flat_net):
    _, plain, _ = start(["-g", "--cpu-only", "-w", flat_net], "list_commands\n")
    assert "dyn_komi_test" not in plain
    _, mode, _ = start(["-g", "--cpu-only", "-w", flat_net, "--nonslack", "--pos"],
                       "list_commands\n")
    assert "dyn_komi_test" in mode


def test_target_komi_sets_scoring_and_planes_and_clear_board_resets_them(flat_net):
    from leelaz.cli import build_engine, parse_args
    cfg = parse_args(["-g", "--cpu-only", "--handicap", "--target-komi", "0", "--pos"])
    engine = build_engine(cfg, out=io.StringIO(), err=io.StringIO(), network=None)
    state = engine.state
    assert (state.komi, state.stm_komi, state.opp_komi) == (0.0, 0.0, 0.0)
    assert not state.score_handicap
    state.set_net_komi(16.845703, 11.850586)
    engine.state.komi = 0.5  # what `komi 0.5` does
    assert (engine.state.stm_komi, engine.state.opp_komi) == (16.845703, 11.850586)
    engine.state.reset()
    engine.notify("clear_board")
    assert (engine.state.komi, engine.state.stm_komi, engine.state.opp_komi) == (0.5, 0.0, 0.0)


# ---- an adjustment inside a search ------------------------------------------------------------
def sigma(x):
    return 1.0 / (1.0 + math.exp(-x))


class KomiNet:
    """White's winrate is sigma((k - 40)/10) with Black to move and sigma((k - 35)/10) with
    White to move, k being the komi the position is told; uniform policy. Supports the
    Network calls the search makes (per-state symmetries, cache flags)."""

    asynchronous = False

    def __init__(self):
        self.trial_batches = []

    def submit(self, states, symmetry=None):
        evals = self.evaluate(states, symmetry)
        return type("Done", (), {"result": lambda self: evals})()

    def white(self, state):
        k = state.stm_komi
        return sigma((k - 40) / 10) if state.to_move == BLACK else sigma((k - 35) / 10)

    def evaluate(self, states, symmetry=None, read_cache=True, write_cache=True):
        if not write_cache:
            self.trial_batches.append(len(states))
        policy = np.full(362, 1 / 362, np.float32)
        out = []
        for st in states:
            w = self.white(st)
            out.append(type("Ev", (), {"policy": policy,
                                       "winrate": w if st.to_move == WHITE else 1 - w})())
        return out


def test_a_genmove_adjusts_both_turns_to_the_doc_example():
    """Root White to move at komi 0: White's winrate ~ .03 < .06 triggers; the White-turn komi
    steps up to E = .09 at 11.8505859375 (T7 G's curve) and the Black-turn komi to
    16.845703125 (T7 A's curve); the tree is rebuilt and the game keeps the new komi."""
    p = resolve_dyn_komi({"handicap": True, "target_komi": 0.0, "adj_positions": 8})
    logs = []
    net = KomiNet()
    search = UCTSearch(net, SearchParams(batch_size=4, max_visits=150, timemanage="off"),
                       rng=1, log=logs.append)
    search.dynamic_komi = DynamicKomi(p, logs.append)
    state = GameState(komi=0.0)
    state.set_net_komi(0.0, 0.0)
    state.score_handicap = False
    state.play(BLACK, parse_gtp_vertex("d4"))
    search.think(state, WHITE, time_limit_cs=100000)
    text = "".join(logs)
    assert "komi=11.850586\nopp_komi=16.845703\n" in text
    assert state.stm_komi == 11.8505859375 and state.opp_komi == 16.845703125
    assert net.trial_batches and set(net.trial_batches) == {p.kept_positions}
    assert search.root.visits <= 150
    # the root's winrate is now the one at the new komi: near the target
    assert abs(search.root.raw_eval(WHITE) - 0.09) < 0.03


def test_dynamic_fpu_starts_unvisited_children_from_the_running_mean():
    """Parent: network value .9 for Black, running mean .1; child A visited once (Q = .5),
    child B unvisited, priors .5 each. U = c_puct sqrt(N ln(.015 N + 1.7)) P / (1 + n) with
    N = 1: .1836 P/(1+n). Leela Zero's FPU .9 - .25 sqrt(.5) = .723 makes B best
    (.723 + .092 > .5 + .046); from the running mean, .1 - .177 < .5, A is best."""
    from leelaz.search.node import UCTNode
    a, b = parse_gtp_vertex("d4"), parse_gtp_vertex("q16")
    policy = np.zeros(362, np.float32)
    policy[[72, 300]] = 0.5  # d4 = index 3*19+3, q16 = 15*19+15
    parent = UCTNode()
    parent.create_children([a, b], policy, False, 0.9)
    parent.inflate_all()
    visited = next(c for c in parent.children if c.move == a)
    visited.update(0.5)
    parent.update(0.1)
    args = (BLACK, 0.25, 0.5, 0.015, 1.7)
    assert parent.select_child(*args).move == b
    assert parent.select_child(*args, dynamic_fpu=True).move == a


@pytest.mark.parametrize("chain,expected,playouts", [
    ("PXC", {"P": 2, "X": 1, "C": 1}, 2),
    ("PXCD", {"P": 3, "X": 2, "C": 1, "D": 1}, 3),
])
def test_sure_backup_accounting(chain, expected, playouts):
    """Doc T9 (--pos, sure backup): X (and C in the longer chain) invalid, the last valid."""
    from leelaz.search.node import UCTNode
    from leelaz.search.node import backup
    p = resolve_dyn_komi({"handicap": True, "pos": True})
    dk = DynamicKomi(p, lambda text: None)
    nodes = {name: UCTNode() for name in chain}
    path = [nodes[name] for name in chain]
    for depth in range(1, len(chain) - 1):  # each invalid leaf: expanded, no visit, owes one
        dk.owe(path[depth])
    for node in path:
        node.virtual_loss += 3
    backup(path, 0.25, 3)
    made = 1 + dk.pay_debts(path, 0.25)
    assert {name: nodes[name].visits for name in chain} == expected
    assert made == playouts and not dk.debts
    assert all(node.black_wins == 0.25 * node.visits for node in path)
    off = DynamicKomi(p.with_(sure_backup=False), lambda text: None)
    off.owe(path[1])
    assert not off.debts


def test_an_invalid_root_takes_its_value_from_the_first_child():
    """--pos, White to move told 10 (> 7.5): the root's own value is discarded; it takes
    1 - W of the position after its first move (Black to move, told the opp komi 0):
    Black's winrate there is 1 - sigma(-4), so the root's value for Black is that."""
    p = resolve_dyn_komi({"handicap": True, "target_komi": 0.0, "pos": True, "num_adj": 0})
    search = UCTSearch(KomiNet(), SearchParams(batch_size=1, max_visits=1, timemanage="off"),
                       rng=1, log=lambda text: None)
    search.dynamic_komi = DynamicKomi(p, lambda text: None)
    state = GameState(komi=0.0)
    state.play(BLACK, parse_gtp_vertex("d4"))
    state.set_net_komi(10.0, 0.0)
    search.think(state, WHITE, time_limit_cs=100000)
    assert search.root.net_eval == pytest.approx(1.0 - sigma(-4.0))
    assert search.root.net_eval != pytest.approx(1.0 - sigma(-2.5))  # its own value
