"""dump_supervised against C++ Leela Zero 0.17, and the trainer's iterator against both.

The input: 20 tygem games (resignations, scores, time losses `W+T`, forfeits `B+F`) plus the
constructed games of fixtures/supervised_edge_cases.sgf (handicap, setup stones with and without
PL, passes, `Time` results, draws, void, no result, no moves, ko recapture, suicide, occupied
point, the mover's own stone, 9x9, GM[2], a B node where W is due, two W nodes, variations, a
comment node and an empty node mid-game, no SZ, captures).
Leela Zero keeps 35 of them: not a multiple of 32 (that would make it abort), and more than one
chunk. Leela Zero shuffles, so outputs are compared as multisets of 19-line records.
"""

from __future__ import annotations

import collections
import gzip
import os
import re

import numpy as np
import pytest

import chunk_parser
from lz_training_oracle import lz_dump_supervised, lz_folder  # noqa: F401 (fixture)
from paths import FIXTURES
from leelaz.training import supervised
from leelaz.game.coords import policy_slot
from leelaz.training.records import format_fields, one_hot

EDGE_CASES = FIXTURES / "supervised_edge_cases.sgf"
#: Games per kind of tygem result: R resignation, S score, T time, F forfeit.
TYGEM_PICK = {"R": 6, "S": 6, "T": 4, "F": 4}
_TYGEM_KINDS = sum(TYGEM_PICK.values())
#: What Leela Zero keeps of the edge cases (checked against the binary when this was written;
#: the test below checks it again through the records).
EDGE_KEPT = {"handicap", "setup-pl", "setup-no-pl", "pl-white", "passes", "tygem-time",
             "tygem-forfeit", "ko-legal", "two-blacks", "variations", "comment-node", "no-size",
             "captures", "gap", "two-whites"}


def _tygem_games(tygem_dir) -> list[str]:
    wanted = dict(TYGEM_PICK)
    out = []
    with gzip.open(tygem_dir / "tygem-9d-2010-03.sgf.gz", "rt") as f:
        for line in f:
            result = re.search(r"RE\[([^\]]*)\]", line).group(1)
            kind = result[2] if result[2] in "RTF" else "S"
            if wanted[kind]:
                wanted[kind] -= 1
                out.append(line.strip())
            if not any(wanted.values()):
                return out
    raise AssertionError("not enough tygem games of each kind")


@pytest.fixture(scope="module")
def oracle(lz_binary, tygem_dir, random_weights, tmp_path_factory):
    """The mixed collection, Leela Zero's output on it, and ours."""
    from lz_training_oracle import lower_case_folder
    import shutil
    folder = lower_case_folder()
    games = _tygem_games(tygem_dir) + EDGE_CASES.read_text().splitlines()
    sgf = os.path.join(folder, "mixed.sgf")
    with open(sgf, "w") as f:
        f.write("\n".join(games) + "\n")
    chatter, lz_paths = lz_dump_supervised(lz_binary, random_weights(1, 8), sgf,
                                           os.path.join(folder, "lz"))
    lz_blocks = [b for p in lz_paths for b in chunk_parser.record_blocks(chunk_parser.read_text(p))]
    logged: list[str] = []
    stats = supervised.dump_supervised(sgf, os.path.join(folder, "ours"), log=logged.append,
                                       seed=3)
    our_chunks = [chunk_parser.record_blocks(chunk_parser.read_text(p)) for p in stats.chunks]
    yield {"sgf": sgf, "games": games, "chatter": chatter, "lz_paths": lz_paths,
           "lz": collections.Counter(lz_blocks), "logged": logged, "stats": stats,
           "ours": collections.Counter(b for c in our_chunks for b in c)}
    shutil.rmtree(folder, ignore_errors=True)


def test_same_records_as_leela_zero(oracle):
    lz, ours = oracle["lz"], oracle["ours"]
    assert sum(lz.values()) > 3000
    missing, extra = lz - ours, ours - lz
    assert not missing and not extra, f"{sum(missing.values())} records only in LZ's output, " \
                                      f"{sum(extra.values())} only in ours"
    for block in list(ours)[:50]:
        chunk_parser.decode(block)  # and every record is well-formed


def test_same_games_kept_and_the_same_messages(oracle):
    stats, chatter, logged = oracle["stats"], oracle["chatter"], oracle["logged"]
    assert stats.games_in_file == len(oracle["games"])
    assert f"Total games in file: {stats.games_in_file}" in chatter
    assert stats.games_dumped == sum(TYGEM_PICK.values()) + len(EDGE_KEPT) == 35
    # LZ writes a chunk per 32 kept games and the partial one: the same number of files
    assert len(stats.chunks) == len(oracle["lz_paths"]) == 2
    not_found = sorted(l for l in chatter if l.startswith("Mainline move not found"))
    assert not_found == ["Mainline move not found: 352", "Mainline move not found: 400",
                         "Mainline move not found: 404"]
    assert sorted(l for l in logged if l.startswith("Mainline")) == not_found
    assert logged[0] == f"Total games in file: {stats.games_in_file}"
    assert logged[-1] == f"Dumped {stats.positions} training positions."


def test_each_edge_case_decided_as_leela_zero_does(oracle):
    """Per game: its records are all in LZ's output if we keep it (and LZ has no records that
    no kept game of ours explains, by the multiset test)."""
    from leelaz.game.sgf import parse_game
    lz = oracle["lz"]
    kept = set()
    for text in EDGE_CASES.read_text().splitlines():
        name = re.search(r"GN\[([^\]]*)\]", text).group(1)
        try:
            game_text, _ = supervised.one_game(parse_game(text))
        except supervised.SkipGame:
            continue
        except Exception as err:  # a parse failure is a skip too
            if isinstance(err, ValueError):
                continue
            raise
        blocks = chunk_parser.record_blocks(game_text)
        assert not collections.Counter(blocks) - lz, f"{name}: records LZ did not write"
        kept.add(name)
    assert kept == EDGE_KEPT


def _continues(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Record b is the position after record a: b's history planes are a's planes one step
    older, the colours swapped when the side to move changed (it does not after a skipped
    node, see the gap case)."""
    if a[16] != b[16]:
        history = b[1:8] == a[8:15] and b[9:16] == a[0:7]
    else:
        history = b[1:8] == a[0:7] and b[9:16] == a[8:15]
    slot = a[17].split(" ").index("1")
    if slot == 361:
        return history
    placed = chunk_parser.decode_plane(b[0])[slot] or chunk_parser.decode_plane(b[8])[slot]
    return history and bool(placed)


def test_chunks_hold_32_games(oracle):
    """Our first chunk holds 32 whole games: every record that does not continue the one
    before it starts a game."""
    blocks = chunk_parser.record_blocks(chunk_parser.read_text(oracle["stats"].chunks[0]))
    starts = 1 + sum(1 for a, b in zip(blocks, blocks[1:]) if not _continues(a, b))
    assert starts == 32


# --------------------------------------------------------------------------------------------
# the trainer's iterator


def _arrays_as_records(g) -> list[tuple[str, ...]]:
    planes = g.planes()
    text = "".join(format_fields(planes[t], int(g.to_move[t]), one_hot(int(g.slots[t])),
                                 int(g.result[t])) for t in range(len(g)))
    return chunk_parser.record_blocks(text)


def test_iterator_with_lz_rules_gives_leela_zeros_positions(oracle):
    stats = supervised.DumpStats()
    games = list(supervised.iter_games([oracle["sgf"]], unreliable="lz", stats=stats))
    assert len(games) == 35
    ours = collections.Counter(b for g in games for b in _arrays_as_records(g))
    assert ours == oracle["lz"]


def test_iterator_planes_are_input_planes(oracle):
    """The vectorised planes equal nn.features.input_planes on every position (the one
    encoding), for handicap, setup, passes and ordinary games."""
    from leelaz.game.sgf import parse_game
    from leelaz.nn.features import input_planes
    texts = [t for t in oracle["games"]
             if re.search(r"GN\[(handicap|setup-pl|passes|captures|ko-legal|gap|two-whites)\]", t)]
    texts.append(oracle["games"][0])
    for text in texts:
        g = supervised.trainer_game(parse_game(text), unreliable="lz")
        planes = g.planes()
        packed = g.planes(packed=True)
        for t, (st, label) in enumerate(supervised.positions(parse_game(text))):
            expected = np.asarray(input_planes(st), np.uint8).reshape(18, 361)
            assert np.array_equal(planes[t], expected), f"position {t}"
            assert np.array_equal(np.unpackbits(packed[t], axis=1, count=361), expected)
            assert g.to_move[t] == st.to_move
            assert g.slots[t] == policy_slot(label)
        assert t + 1 == len(g)


def test_trainer_drops_time_and_forfeit_results(oracle):
    stats = supervised.DumpStats()
    games = list(supervised.iter_games([oracle["sgf"]], stats=stats))
    # LZ's 35 minus 4 W+T/B+T and 4 forfeits from tygem, and the two edge cases W+T and W+F;
    # plus RE[ B+R], whose leading space makes LZ drop it
    assert len(games) == 35 - 8 - 2 + 1
    assert stats.games_dumped == len(games)
    zero = list(supervised.iter_games([oracle["sgf"]], unreliable="zero"))
    # and with result 0: those 10 and the two RE[W+Time]/RE[B+Time] games LZ drops
    assert len(zero) == 26 + 12
    assert sum(1 for g in zero if not g.result.any()) == 12
    assert all(set(np.unique(g.result)) <= {-1, 1} for g in games)


def test_iter_positions_and_sgf_games(oracle):
    first = next(supervised.iter_positions([oracle["sgf"]]))
    planes, slot, to_move, result = first
    assert planes.shape == (18, 361) and planes.dtype == np.uint8
    assert to_move == 0 and planes[16].all() and not planes[:16].any()
    assert 0 <= slot <= 361 and result in (1, -1)
    games = list(supervised.sgf_games(oracle["sgf"]))
    # no setup stones and Black first: the tygem games and most constructed ones
    assert len(games) >= 20
    assert all(isinstance(r, str) for _, r in games)


# --------------------------------------------------------------------------------------------
# where we do not copy Leela Zero: no abort, messages off stdout


def _plain_game(i: int) -> str:
    return f"(;GM[1]SZ[19]RE[B+R];B[{chr(97 + i % 19)}a];W[{chr(97 + i % 19)}s])"


@pytest.mark.parametrize("kept", [0, 32, 64])
def test_multiples_of_32_do_not_abort(tmp_path, kept):
    sgf = tmp_path / "g.sgf"
    sgf.write_text("\n".join([_plain_game(i) for i in range(kept)]
                             + ["(;GM[1]SZ[19]RE[0];B[aa])"]) + "\n")
    stats = supervised.dump_supervised(str(sgf), str(tmp_path / "out"), log=lambda s: None)
    assert stats.games_dumped == kept
    assert len(stats.chunks) == kept // 32
    for p in stats.chunks:
        assert len(chunk_parser.parse_chunk(p)) == 64  # 32 games of 2 positions


def test_gtp_dump_supervised_replies_after_the_chunks(tmp_path):
    from gtp_session import make_engine, run_script, split_replies
    from leelaz.gtp import training_commands
    sgf = tmp_path / "Games.sgf"  # case is kept, unlike Leela Zero
    sgf.write_text(EDGE_CASES.read_text())
    engine, out, err = make_engine(register_board=False)
    training_commands.register(engine)
    stdout, stderr = run_script(
        f"1 dump_supervised {sgf} {tmp_path}/Out\n"
        f"2 dump_supervised {tmp_path}/missing.sgf {tmp_path}/x\n"
        "3 dump_supervised onlyone\n"
        f"4 dump_training b {tmp_path}/t\n"
        f"5 dump_training purple {tmp_path}/t\n", engine)
    replies = split_replies(stdout)
    assert replies[0] == "=1 "
    assert replies[1].startswith("?2 ")
    assert replies[2] == "?3 syntax not understood"
    assert replies[3].startswith("?4 ")  # empty buffer: a reply, not an abort
    assert replies[4] == "?5 syntax not understood"
    assert len(replies) == 5
    assert "Mainline move not found" in stderr and "Total games in file: 31" in stderr
    assert sorted(os.listdir(tmp_path)) == ["Games.sgf", "Out.0.gz"]
    assert len(chunk_parser.parse_chunk(str(tmp_path / "Out.0.gz"))) == 60


def test_fast_records_equal_the_gamestate_path(oracle):
    """one_game (vectorised planes from the loader's boards) writes exactly what the
    position-by-position path through GameState and input_planes writes."""
    from leelaz.game.sgf import parse_game
    compared = 0
    for text in oracle["games"][:4] + oracle["games"][_TYGEM_KINDS:]:
        game = parse_game(text)
        try:
            fast, n = supervised.one_game(game)
        except supervised.SkipGame:
            continue
        winner = supervised.lz_winner(game.root.get("RE"))
        assert supervised.game_text(game, winner) == (fast, n)
        compared += 1
    assert compared == 4 + len(EDGE_KEPT)


def test_parallel_iterator_gives_the_same_games(oracle):
    one = list(supervised.iter_games([oracle["sgf"]], unreliable="lz"))
    stats = supervised.DumpStats()
    two = list(supervised.iter_games_parallel([oracle["sgf"]], 2, unreliable="lz",
                                              parts_per_file=3, stats=stats))

    def key(g):
        return g.slots.tobytes(), g.boards.tobytes(), g.result.tobytes()

    assert sorted(map(key, one)) == sorted(map(key, two))
    assert stats.games_dumped == len(one) == 35
