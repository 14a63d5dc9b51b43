"""Oracle test: our engine and C++ Leela Zero 0.17 give the same board replies.

For a fixed sample of 200 games from the tygem collections, plus handicap, setup, clock and
pass-heavy games written here as SGF, both engines run `loadsgf FILE N` at several N and must
then agree byte for byte on the loadsgf reply, the `showboard` text on stderr, `final_score`,
`final_status_list alive` and `printsgf` (apart from DT and the options comment, which carry
the date and the command line). Handicap placement (`fixed_handicap`, and
`place_free_handicap` up to the 25 stones that need no search) is compared the same way.
One Leela Zero process serves the whole module. Leela Zero lower-cases file names, so the
files live under a lower-case temporary folder.
"""

from __future__ import annotations

import gzip
import random
import re
import shutil
import tempfile

import pytest

from gtp_session import LzProcess, Session
from leelaz.config import EngineConfig

GAMES = 200
FILES = 4  # collections sampled (the first FILES months, GAMES / FILES games from each)

CONSTRUCTED = {
    # Handicap 3 with AB in the root, then moves with passes in the middle.
    "handicap": "(;GM[1]FF[4]SZ[19]KM[0.5]HA[3]AB[dd][pp][dp];W[pd];B[qf];W[];B[nc];W[tt]"
                ";B[qq];W[cc])",
    # HA in the root but the stones in the first child (LZ takes that child's AB).
    "ha-child-ab": "(;GM[1]FF[4]SZ[19]KM[0.5]HA[2];AB[dd][pp];W[dp];B[pd])",
    # White setup stones and PL: the start position has both colours, White to move.
    "setup-pl": "(;GM[1]FF[4]SZ[19]KM[7.5]AB[dd][de]AW[ed][ee]PL[W];W[qq];B[qp];W[pp])",
    # Pass-heavy: both sides pass repeatedly, stones in between, two passes at the end.
    "passes": "(;GM[1]FF[4]SZ[19]KM[7.5];B[pd];W[];B[];W[dd];B[tt];W[tt];B[dp];W[];B[];W[pp]"
              ";B[];W[])",
    # Captures and a ko fight in the corner.
    "ko": "(;GM[1]FF[4]SZ[19]KM[6.5];B[ba];W[ca];B[ab];W[bb];B[cb];W[ac];B[da];W[aa];B[ba]"
          ";W[pp];B[aa];W[dd])",
    # Japanese byo-yomi clock and clock fields.
    "byoyomi": "(;GM[1]FF[4]SZ[19]KM[6.5]TM[600]OT[5x30 byo-yomi]BL[550]WL[580];B[pd];W[dd])",
    "canadian": "(;GM[1]FF[4]SZ[19]TM[300]OT[25/600 Canadian];B[pd];W[dd];B[pp])",
    # No KM (komi 7.5 by default), a comment with brackets, white moves first.
    "plain": "(;GM[1]FF[3]SZ[19]AB[jj]C[a [bracket\\] comment];W[aa];B[ab])",
    # FF[3] long property names: the binary does not read AddBlack as AB.
    # Not loadable: 9x9, a setup stone on an opponent stone.
    "size9": "(;GM[1]FF[4]SZ[9];B[ee])",
    "setup-clash": "(;GM[1]FF[4]SZ[19]AB[dd]AW[dd];B[pp])",
}
#: Files the binary loads as an empty game, where we answer `? cannot load file` and leave
#: the game as it was (LZ-DIFF, sgf.py: no game in the file).
NOT_SGF = {"garbage": "this is not an sgf file", "empty": "", "binary": "\x00\xff\x01;B[aa]"}


def sample_games(tygem_dir) -> list[str]:
    files = sorted(tygem_dir.glob("*.sgf.gz"))[:FILES]
    games = []
    for i, path in enumerate(files):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            lines = [line for line in f if line.startswith("(")]
        games += random.Random(i).sample(lines, GAMES // FILES)
    return games


@pytest.fixture(scope="module")
def folder():
    path = tempfile.mkdtemp(prefix="lzoracle")
    assert path == path.lower()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def weights(random_weights):
    return random_weights(1, 8)


@pytest.fixture(scope="module")
def lz(lz_binary, weights):
    process = LzProcess(lz_binary, weights)
    yield process
    process.close()


@pytest.fixture(scope="module")
def ours(weights):
    return Session(EngineConfig(weights=weights, seed=1, seed_given=True))


def normal_sgf(reply: str) -> str:
    reply = re.sub(r"DT\[[^\]]*\]", "DT[]", reply)
    return re.sub(r"\nC\[Leela Zero options:[^\]]*\]", "\nC[]", reply)


def compare_position(lz, ours, where: str) -> None:
    """Everything the board commands report about the current position, in both engines."""
    assert ours.ask("showboard")[1] == lz.showboard(), where
    for command in ("final_score", "final_status_list alive", "move_history", "last_move"):
        assert ours.reply(command) == lz.ask(command), f"{where}: {command}"
    assert normal_sgf(ours.reply("printsgf")) == normal_sgf(lz.ask("printsgf")), where


def load_both(lz, ours, path: str, n: int | None) -> str:
    command = f"loadsgf {path}" + ("" if n is None else f" {n}")
    reply = lz.ask(command)
    assert ours.reply(command) == reply, command
    return reply


def move_count(sgf: str) -> int:
    return len(re.findall(r";\s*[BW]\[", sgf))


def test_tygem_games(tygem_dir, folder, lz, ours):
    games = sample_games(tygem_dir)
    assert len(games) == GAMES
    rng = random.Random(17)
    for i, game in enumerate(games):
        path = f"{folder}/game{i}.sgf"
        with open(path, "w", encoding="utf-8") as f:
            f.write(game)
        moves = move_count(game)
        ns = [rng.randint(1, moves + 1), None]
        if i % 10 == 0:  # now and then: N=0 (everything) and N past the end
            ns += [0, moves + 5]
        for n in ns:
            assert load_both(lz, ours, path, n) == "= \n\n", (i, n)
            compare_position(lz, ours, f"game {i} ({game[:60]}...) at {n}")


@pytest.mark.parametrize("name", sorted(CONSTRUCTED))
def test_constructed_games(name, folder, lz, ours):
    path = f"{folder}/{name}.sgf"
    with open(path, "w", encoding="utf-8") as f:
        f.write(CONSTRUCTED[name])
    lz.ask("clear_board")
    ours.reply("clear_board")
    for n in (None, 1, 2, 3, 4, 6, 9, 30):
        reply = load_both(lz, ours, path, n)
        compare_position(lz, ours, f"{name} at {n} ({reply.strip()})")


def test_ff3_long_property_names_are_read_where_the_binary_drops_them(folder, lz, ours):
    """LZ-DIFF: old FF[3] files spell setup as AddBlack; we read it as AB (sgf.py), the binary
    ignores the property and loses the stone. Both facts are checked, so neither can drift."""
    path = f"{folder}/ff3-names.sgf"
    with open(path, "w", encoding="utf-8") as f:
        f.write("(;GM[1]FF[3]SZ[19]AddBlack[jj];W[aa];B[ab])")
    lz.ask("clear_board")
    ours.reply("clear_board")
    assert lz.ask(f"loadsgf {path}") == ours.reply(f"loadsgf {path}") == "= \n\n"
    def k10(board_text: str) -> str:
        row = next(line for line in board_text.splitlines() if line.strip().startswith("10 "))
        return row.split()[1 + 9].strip("()")  # tokens: label, a..t (no i), label

    assert k10(ours.ask("showboard")[1]) == "X"
    assert k10(lz.showboard()) == "+"  # an empty star point


@pytest.mark.parametrize("command", [f"fixed_handicap {k}" for k in range(0, 11)]
                         + [f"place_free_handicap {k}" for k in range(0, 26)]
                         + ["set_free_handicap d4 q16", "set_free_handicap a1 b2 c3 t19 k10",
                            "set_free_handicap"])
def test_handicap_placement(command, lz, ours):
    for engine in (lz, ours):
        engine.ask("clear_board")
        engine.ask("komi 7.5")
    assert ours.reply(command) == lz.ask(command)
    compare_position(lz, ours, command)
    for move in ("play w q3", "play b r3"):
        assert ours.reply(move) == lz.ask(move)
    compare_position(lz, ours, command + " and two moves")


@pytest.mark.parametrize("name", sorted(NOT_SGF))
def test_unreadable_file_leaves_the_game_alone(name, folder):
    ours = Session()
    path = f"{folder}/{name}.sgf"
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(NOT_SGF[name])
    for line in ("clear_board", "komi 0.5", "play b d4", "play w q16"):
        ours.reply(line)
    before = ours.ask("showboard")[1], ours.reply("printsgf"), ours.reply("move_history")
    assert ours.reply(f"loadsgf {path}") == "? cannot load file\n\n"
    assert ours.reply(f"loadsgf {folder}/missing.sgf 3") == "? cannot load file\n\n"
    assert (ours.ask("showboard")[1], ours.reply("printsgf"), ours.reply("move_history")) \
        == before


@pytest.mark.parametrize("commands", [
    ("time_settings 100 30 5",),
    ("time_settings 100 30 5", "time_left b 20 3", "time_left w 0 0"),
    ("time_settings 0 10 1", "play b d4"),
    ("time_settings 0 10 0",),
    ("time_settings 300 0 0", "time_left w 125 0"),
    ("kgs-time_settings none",),
    ("kgs-time_settings absolute 90",),
    ("kgs-time_settings canadian 60 300 25", "time_left w 0 0", "time_left b 200 7"),
    ("kgs-time_settings byoyomi 60 30 5", "time_left b 0 0", "time_left w 12 3"),
])
def test_clock_commands(commands, lz, ours):
    """The clock as showboard and printsgf report it after time commands."""
    for engine in (lz, ours):
        engine.ask("clear_board")
        engine.ask("komi 7.5")
    for command in commands:
        assert ours.reply(command) == lz.ask(command), command
    compare_position(lz, ours, " / ".join(commands))
