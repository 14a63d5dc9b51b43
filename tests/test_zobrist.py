"""Leela Zero's RNG and Zobrist hashes: golden values and the binary as the oracle.

Golden values come from outside our code: the RNG outputs from the reference C code of
xoroshiro128+/splitmix64 (Blackman & Vigna), the hashes from `showboard` of the C++ Leela Zero
0.17 binary. The live tests replay random games (captures, suicides, ko recaptures, passes) in
the binary and compare every `showboard` byte for byte, which covers hash, ko-hash, prisoners,
pass count, side to move, last-move marker and clock lines.

`lz_session` and `replay` are also used by tests/test_state.py.
"""

from __future__ import annotations

import random
import subprocess

import pytest

from leelaz.game.coords import (ALL_VERTICES, BLACK, EMPTY, PASS, WHITE, gtp_vertex,
                                parse_color, parse_gtp_vertex)
from leelaz.game.display import showboard_text
from leelaz.game.handicap import place_fixed_handicap, place_free_handicap
from leelaz.game.state import GameState
from leelaz.game.zobrist import (BLACK_TO_MOVE, HASH_INIT, ZOBRIST, ZOBRIST_KO, ZOBRIST_PASS,
                                 ZOBRIST_PRIS, Xoroshiro128Plus)


# ----------------------------------------------------------------------------- oracle helpers
def lz_session(lz_binary: str, weights: str, commands: list[str]) -> tuple[list[str], list[str]]:
    """Run the reference on `commands`; return (reply texts, showboard stderr blocks)."""
    text = "\n".join(commands) + "\n"
    proc = subprocess.run([lz_binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-p", "1",
                           "-w", weights], input=text, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    replies = [r[2:] for r in proc.stdout.split("\n\n") if r.startswith(("=", "?"))]
    boards = []
    for chunk in proc.stderr.split("\nPasses: ")[1:]:
        end = chunk.index("\n", chunk.index("\nWhite time: ") + 1) + 2  # the line, a blank line
        boards.append("\nPasses: " + chunk[:end])  # (search output may follow)
    return replies, boards


def replay(state: GameState, command: str, reply: str = "") -> None:
    """Apply one GTP command (as the reference understood it, given its reply) to `state`."""
    words = command.split()
    if words[0] == "play":
        state.play(parse_color(words[1]), parse_gtp_vertex(words[2]))
    elif words[0] == "genmove":
        color = parse_color(words[1])
        state.set_to_move(color)
        state.play(color, parse_gtp_vertex(reply))
    elif words[0] == "undo":
        state.undo()
    elif words[0] == "clear_board":
        state.reset()
    elif words[0] == "komi":
        state.komi = float(words[1])
    elif words[0] == "fixed_handicap":
        place_fixed_handicap(state, int(words[1]))
    elif words[0] == "place_free_handicap":
        place_free_handicap(state, int(words[1]))
    elif words[0] not in ("showboard", "final_score", "final_status_list"):
        raise AssertionError(f"replay does not know {command!r}")


def random_commands(seed: int, length: int, any_empty: bool) -> list[str]:
    """A random game as GTP play commands. any_empty: any empty point (suicide and ko
    recapture included, which GTP play accepts), else only legal moves; 3% passes."""
    rng = random.Random(seed)
    state = GameState()
    commands = []
    for _ in range(length):
        color = rng.choice((BLACK, WHITE)) if rng.random() < 0.1 else state.to_move
        if any_empty:
            moves = [v for v in ALL_VERTICES if state.board.square[v] == EMPTY]
        else:
            moves = state.legal_moves(color)
        move = PASS if rng.random() < 0.03 or not moves else rng.choice(moves)
        state.play(color, move)
        commands.append(f"play {'bw'[color]} {gtp_vertex(move)}")
    return commands


# ----------------------------------------------------------------------------- RNG
@pytest.mark.parametrize("seed, expected", [
    (5489, [0x65979669460C8DD4, 0x9B3B93D8CB634CF9, 0x0D7C591FB374D2CB, 0xDD988ED63776E102]),
    (1, [0xEF4BD8F4FD3BBDDF, 0x21EE1AB9B8C0EB40, 0xA8801C5C431BAA83, 0x4F0FB094D3743603]),
    (2**64 - 1, [0x429B7C1ECE079D57, 0x14130E9556C6EC8B, 0x5BD4E091BB879B41,
                 0x9972DDBFEBF02617]),
])
def test_xoroshiro_matches_reference_c_code(seed, expected):
    rng = Xoroshiro128Plus(seed)
    assert [rng.next_u64() for _ in range(4)] == expected


def test_randint_and_random_reduce_one_draw():
    a, b = Xoroshiro128Plus(7), Xoroshiro128Plus(7)
    for n in (2, 8, 361, 1000003):
        assert a.randint(n) == b.next_u64() % n
    x = a.random()
    assert x == (b.next_u64() >> 40) / 2**24 and 0.0 <= x < 1.0


def test_tables_are_the_first_draws_of_seed_5489():
    rng = Xoroshiro128Plus(5489)
    assert ZOBRIST[0][0] == rng.next_u64() == 0x65979669460C8DD4
    assert ZOBRIST[0][1] == rng.next_u64()
    assert len(ZOBRIST) == 4 and all(len(t) == 441 for t in ZOBRIST)
    assert len(ZOBRIST_KO) == 441 and [len(t) for t in ZOBRIST_PRIS] == [882, 882]
    assert len(ZOBRIST_PASS) == 5
    keys = ZOBRIST[0] + ZOBRIST[1] + ZOBRIST[2] + ZOBRIST_KO + ZOBRIST_PASS
    assert len(set(keys)) == len(keys)


# ----------------------------------------------------------------------------- golden hashes
# (hash, ko-hash) printed by the reference's showboard after each sequence.
GOLDEN = [
    ([], (0x9A930BE1616C538E, 0xA14C933E7669946D)),
    (["b d4", "w q16"], (0xB0B4D9E9AE8F3B3F, 0x8B6B4136B98AFCDC)),
    (["b d4", "w q16", "b pass"], (0x87C19C3832BC92AD, 0x8B6B4136B98AFCDC)),
    # B E10 takes D10: one prisoner and a ko point at D10.
    (["b d11", "w e11", "b c10", "w f10", "b d9", "w e9", "b a1", "w d10", "b e10"],
     (0x8967E3474AC12D06, 0x9FF43391502522DE)),
    (["b d11", "w e11", "b c10", "w f10", "b d9", "w e9", "b a1", "w d10", "b e10", "w pass"],
     (0xC8B183BCDC7428E6, 0x9FF43391502522DE)),
    # Two passes later White retakes: the stones repeat move 8 (superko), prisoners 1 each.
    (["b d11", "w e11", "b c10", "w f10", "b d9", "w e9", "b a1", "w d10", "b e10", "w pass",
      "b pass", "w d10"], (0xE1C0558D4E6F27D9, 0x6D6423585ACEA3E8)),
]


@pytest.mark.parametrize("moves, expected", GOLDEN)
def test_hash_equals_reference(moves, expected):
    state = GameState()
    for m in moves:
        replay(state, "play " + m)
    assert (state.board.hash, state.board.ko_hash) == expected


def test_fixed_handicap_hash_equals_reference():
    state = GameState()
    place_fixed_handicap(state, 4)
    assert (state.board.hash, state.board.ko_hash) == (0x19C257CCE16DEDFE, 0x89D064DE5DA581D0)


def test_empty_board_hash_formula():
    """FullBoard::calc_hash's formula, computed here independently of Board."""
    ko_hash = HASH_INIT
    for v in ALL_VERTICES:
        ko_hash ^= ZOBRIST[EMPTY][v]
    full = ko_hash ^ ZOBRIST_PRIS[0][0] ^ ZOBRIST_PRIS[1][0] ^ BLACK_TO_MOVE ^ ZOBRIST_KO[0]
    board = GameState().board
    assert (board.hash, board.ko_hash) == (full, ko_hash)


# ----------------------------------------------------------------------------- invariants
def test_incremental_hash_equals_hash_from_scratch():
    state = GameState()
    for cmd in random_commands(3, 300, any_empty=True):
        replay(state, cmd)
        b = state.board
        assert b.ko_hash == b.calc_ko_hash()
        # A fresh hash has no pass term; moves carry pass[0] ^ pass[passes].
        assert b.hash == b.calc_hash() ^ ZOBRIST_PASS[0] ^ ZOBRIST_PASS[b.passes]


def test_transposition_same_hash():
    a, b = GameState(), GameState()
    for m in ["b d4", "w q16", "b d16", "w q4"]:
        replay(a, "play " + m)
    for m in ["b d16", "w q4", "b d4", "w q16"]:
        replay(b, "play " + m)
    assert a.board.hash == b.board.hash and a.board.ko_hash == b.board.ko_hash


def test_ko_point_and_side_to_move_change_full_hash_only():
    ko = GameState()
    for m in GOLDEN[3][0]:
        replay(ko, "play " + m)
    assert ko.ko_move == parse_gtp_vertex("d10")
    other = ko.copy()
    other.set_to_move(BLACK)
    assert other.board.ko_hash == ko.board.ko_hash
    assert other.board.hash == ko.board.hash ^ BLACK_TO_MOVE
    other.set_to_move(WHITE)
    assert other.board.hash == ko.board.hash


# ----------------------------------------------------------------------------- live oracle
@pytest.mark.parametrize("seed", [11, 12])
def test_showboard_equals_reference_through_random_game(lz_binary, random_weights, seed):
    """Every showboard of a random game, suicides and ko recaptures included, byte for byte."""
    commands = []
    for cmd in random_commands(seed, 320, any_empty=True):
        commands += [cmd, "showboard"]
    replies, boards = lz_session(lz_binary, random_weights(1, 8), commands)
    assert len(boards) == len(commands) // 2
    assert all(r == "" for r in replies)
    state = GameState()
    for cmd, expected in zip(commands[::2], boards):
        replay(state, cmd)
        assert showboard_text(state) == expected, cmd
