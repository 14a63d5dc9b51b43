"""play_match (the gating match, games batched in one process) with the lz-gate settings.

The shipped network against itself must not be promoted (no decision, or H0, within the cap);
against a random network it must pass H1 as soon as the server's rule allows (101 games).
To keep 101 games cheap on two cores, the random network's policy bias on pass is +50, so it
passes at every move, and games stop after 10 moves, where Tromp-Taylor scores them: the
shipped net's few stones own the board. The match, colours, scoring and SPRT are the real ones.
"""

from __future__ import annotations

import json
import os

import pytest

from paths import REPO
from leelaz.backends.random_weights import random_tensors
from leelaz.backends.weights_writer import write_weights
from leelaz.selfplay import sprt
from leelaz.selfplay.match import a_is_black, play_match, tally
from leelaz.selfplay.runner import SelfplayError
from leelaz.tools import run_verb

SHIPPED = str(REPO / "weights" / "leelaz-6x128.txt.gz")


#: Index of the policy FC bias among a 1-block network's tensors (file order): input conv (4),
#: the block's two convs (8), the policy conv (4), the policy FC weights, then its bias.
POLICY_FC_BIAS = 4 + 8 + 4 + 1


@pytest.fixture(scope="module")
def passing_net(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("nets") / "passer-1x8.txt")
    tensors = random_tensors(1, 8, 7)
    assert tensors[POLICY_FC_BIAS].shape == (362,)
    tensors[POLICY_FC_BIAS][361] = 50.0  # pass, always
    write_weights(path, tensors, 1)
    return path


def _result_json(folder):
    with open(os.path.join(folder, "result.json")) as f:
        return json.load(f)


def test_shipped_net_against_itself_is_not_promoted(tmp_path, capsys):
    """Through the verb: `leelaz match --preset lz-gate --sprt ... --json`."""
    out = str(tmp_path / "self")
    code = run_verb(["match", "--preset", "lz-gate", "--weights1", SHIPPED, "--weights2",
                     SHIPPED, "--out", out, "--games", "4", "--sprt", "-v", "2", "--parallel",
                     "4", "-s", "1", "--cpu-only", "--max-moves", "40", "--json"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["games"] == 4 and printed["wins"] + printed["losses"] == 4
    assert printed["draws"] == 0
    assert printed["decision"] in (None, sprt.H0)
    saved = _result_json(out)
    assert saved["games"] == 4 and saved["wins"] == printed["wins"]
    assert saved["decision"] == printed["decision"]
    assert saved["llr"] == pytest.approx(sprt.llr(printed["wins"], printed["losses"]))
    result = play_match(SHIPPED, SHIPPED, out, max_games=4, visits=2, parallel=4, seed=1,
                        cpu_only=True, progress=False, max_moves=40)  # nothing left to play
    assert (result.wins, result.losses) == (printed["wins"], printed["losses"])
    # colours alternate: A is Black in games 0 and 2
    sgfs = sorted(n for n in os.listdir(out) if n.endswith(".sgf"))
    assert [a_is_black(int(n.split("-")[0])) for n in sgfs] == [True, False, True, False]
    assert tally(out) == (result.wins, result.losses)
    assert result.moves == 0  # the rerun resumed: the cap was reached, nothing was played


def test_a_folder_of_another_match_is_refused(tmp_path, passing_net):
    out = str(tmp_path / "m")
    play_match(SHIPPED, passing_net, out, max_games=1, visits=2, parallel=1, seed=1,
               cpu_only=True, progress=False, max_moves=4)
    with pytest.raises(SelfplayError, match="another match"):
        play_match(passing_net, SHIPPED, out, max_games=2, visits=2, parallel=1,
                   cpu_only=True, progress=False, max_moves=4)


def test_shipped_net_against_a_random_net_passes_h1(tmp_path, passing_net):
    out = str(tmp_path / "gate")
    result = play_match(SHIPPED, passing_net, out, max_games=400, visits=1, parallel=2,
                        seed=2, cpu_only=True, progress=False, max_moves=10)
    assert result.decision == sprt.H1
    # the server passes on the LLR only after more than 100 games; the games in flight
    # when it decided finish and count
    assert 101 <= result.games <= 101 + 2
    assert result.wins >= 67
    assert _result_json(out)["decision"] == "H1"
    sgfs = [n for n in os.listdir(out) if n.endswith(".sgf")]
    assert len(sgfs) == result.games
    # the shipped net won with either colour
    for n in sgfs:
        text = open(os.path.join(out, n)).read()
        assert ("RE[B+" in text) == a_is_black(int(n.split("-")[0])), text
