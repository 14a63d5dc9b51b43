"""Board: captures, merges, suicide, eyes, scoring, and the string/liberty bookkeeping checked
against a brute-force flood fill written here, independently of board.py.

String stone order and final_status_list come from the C++ Leela Zero binary.
"""

from __future__ import annotations

import pytest

from leelaz.game.board import Board
from leelaz.game.coords import (ALL_VERTICES, BLACK, DIRECTIONS, EMPTY, INVAL, NO_VERTEX, PASS,
                                WHITE, gtp_vertex, parse_gtp_vertex)
from leelaz.game.state import GameState
from test_zobrist import lz_session, random_commands, replay

V = parse_gtp_vertex


def board_from(diagram: str, to_move: int = BLACK) -> Board:
    """A Board from an ASCII diagram of the top-left corner (X black, O white, . empty).

    The first line is row 19, each character a column from A. Stones are placed as moves,
    so nothing on the diagram may be capturable."""
    board = Board()
    for r, line in enumerate(diagram.split()):
        for x, ch in enumerate(line):
            if ch in "XO":
                color = BLACK if ch == "X" else WHITE
                board.play_move(color, V(f"{'ABCDEFGHJKLMNOPQRST'[x]}{19 - r}"))
    board.set_to_move(to_move)
    return board


def flood(board: Board, v: int) -> tuple[set[int], set[int]]:
    """Stones and liberties of the string at v, by plain flood fill."""
    color = board.square[v]
    stones, libs, todo = {v}, set(), [v]
    while todo:
        p = todo.pop()
        for d in DIRECTIONS:
            n = p + d
            if board.square[n] == EMPTY:
                libs.add(n)
            elif board.square[n] == color and n not in stones:
                stones.add(n)
                todo.append(n)
    return stones, libs


def check_invariants(board: Board) -> None:
    """Every string's root, size, liberties and cycle, and the empty list, against flood fill."""
    done: set[int] = set()
    for v in ALL_VERTICES:
        if board.square[v] == EMPTY or v in done:
            continue
        stones, libs = flood(board, v)
        done |= stones
        root = board.parent[v]
        assert root in stones
        assert all(board.parent[s] == root for s in stones)
        assert board.stones[root] == len(stones)
        assert board.libs[root] == len(libs)
        walk = board.string_stones(v)
        assert len(walk) == len(stones) and set(walk) == stones
    empties = {v for v in ALL_VERTICES if board.square[v] == EMPTY}
    listed = board.empty[:board.empty_cnt]
    assert len(listed) == len(empties) == board.empty_cnt and set(listed) == empties
    assert all(board.empty_idx[v] == i for i, v in enumerate(listed))
    assert sum(1 for v in range(441) if board.square[v] == INVAL) == 441 - 361


# ----------------------------------------------------------------------------- structure
def test_docstring_example_lists():
    """The worked example of board.py's docstring, on the big board."""
    b = Board()
    for color, move in [(BLACK, "B3"), (WHITE, "C3"), (BLACK, "B4"), (WHITE, "D3"), (BLACK, "C4")]:
        b.play_move(color, V(move))
    b3, b4, c4, c3, d3 = (V(m) for m in ("B3", "B4", "C4", "C3", "D3"))
    assert [b.parent[v] for v in (b3, b4, c4)] == [b4] * 3
    assert (b.next[b3], b.next[b4], b.next[c4]) == (b4, c4, b3)
    assert (b.libs[b4], b.stones[b4]) == (6, 3)
    assert (b.parent[c3], b.parent[d3], b.next[c3], b.next[d3]) == (d3, d3, d3, c3)
    assert (b.libs[d3], b.stones[d3]) == (4, 2)
    assert [gtp_vertex(v) for v in b.string_stones(b3)] == ["B4", "C4", "B3"]


def test_merge_order_equals_reference():
    """final_status_list of the reference for this sequence: `D5 C5 D6 E5 D4`, `Q16 Q17`."""
    b = Board()
    for color, move in [(BLACK, "D4"), (BLACK, "C5"), (WHITE, "Q17"), (BLACK, "E5"),
                        (BLACK, "D6"), (WHITE, "Q16"), (BLACK, "D5")]:
        b.play_move(color, V(move))
    assert " ".join(gtp_vertex(v) for v in b.string_stones(V("E5"))) == "D5 C5 D6 E5 D4"
    assert " ".join(gtp_vertex(v) for v in b.string_stones(V("Q17"))) == "Q16 Q17"
    check_invariants(b)


def test_larger_string_absorbs_smaller():
    b = board_from("""
        XXX.X
    """)
    big = b.parent[V("A19")]
    b.play_move(BLACK, V("D19"))
    assert b.parent[V("E19")] == big and b.stones[big] == 5 and b.libs[big] == 6


# ----------------------------------------------------------------------------- captures
def test_corner_capture_counts_prisoner_and_frees_liberties():
    b = board_from("""
        OX
        X.
    """)
    # A19 was captured when A18 was placed.
    assert b.square[V("A19")] == EMPTY and b.prisoners == [1, 0]
    assert b.string_liberties(V("B19")) == 3
    assert b.ko_move == NO_VERTEX  # A18 had an empty neighbour: no ko
    check_invariants(b)


def test_capture_of_two_strings_at_once():
    b = board_from("""
        O.OX
        XOX.
    """)
    b.play_move(BLACK, V("B19"))
    assert b.square[V("A19")] == EMPTY and b.square[V("C19")] == EMPTY
    assert b.square[V("B18")] == WHITE and b.prisoners == [2, 0]
    assert b.ko_move == NO_VERTEX
    check_invariants(b)


def test_group_capture():
    b = board_from("""
        OOX
        XXX
    """)
    assert b.prisoners == [2, 0] and b.square[V("A19")] == b.square[V("B19")] == EMPTY
    assert b.string_liberties(V("C19")) == 7
    check_invariants(b)


def test_simple_ko_point():
    b = board_from("""
        .XO.
        XO.O
        .XO.
    """)
    b.play_move(BLACK, V("C18"))  # takes B18, and C18 is left with one liberty: ko at B18
    assert b.square[V("B18")] == EMPTY and b.prisoners == [1, 0]
    assert b.ko_move == V("B18") and b.to_move == WHITE
    assert not b.is_legal(WHITE, V("B18"))
    assert b.is_legal(WHITE, PASS)
    b.play_move(WHITE, PASS)
    assert b.ko_move == NO_VERTEX
    assert b.is_legal(WHITE, V("B18"))  # the ko is over: it would take C18 back
    check_invariants(b)


def test_multi_stone_suicide_removed_without_prisoners():
    b = board_from("""
        O.X.
        XXX.
    """)
    assert b.is_suicide(WHITE, V("B19"))
    black_libs = b.string_liberties(V("C19"))
    b.play_move(WHITE, V("B19"))
    assert b.square[V("A19")] == b.square[V("B19")] == EMPTY
    assert b.prisoners == [0, 0]
    assert b.string_liberties(V("C19")) == black_libs + 1  # A19 freed, B19 given back
    check_invariants(b)


def test_is_suicide():
    b = board_from("""
        .X
        X.
    """)
    assert b.is_suicide(WHITE, V("A19"))
    assert not b.is_suicide(BLACK, V("A19"))
    assert not b.is_suicide(WHITE, V("B18"))


def test_no_liberty_move_that_captures_is_not_suicide():
    b = board_from("""
        .XO
        XO.
    """)
    assert b.string_liberties(V("B19")) == 1
    assert not b.is_suicide(WHITE, V("A19"))
    b.play_move(WHITE, V("A19"))
    assert b.square[V("B19")] == EMPTY and b.prisoners == [0, 1]
    check_invariants(b)


def test_is_eye():
    b = board_from("""
        .X.X.
        XXXX.
        .....
    """)
    assert b.is_eye(BLACK, V("A19"))        # corner, no opponent diagonal
    assert b.is_eye(BLACK, V("C19"))        # edge, no opponent diagonal
    assert not b.is_eye(WHITE, V("A19"))
    assert not b.is_eye(BLACK, V("E19"))    # a neighbour is empty
    c = board_from("""
        .....
        .XXX.
        .X.X.
        .XXO.
    """)
    assert c.is_eye(BLACK, V("C17"))        # one opponent diagonal in the middle is allowed
    d = board_from("""
        X.XO
        OX..
    """)
    assert not d.is_eye(BLACK, V("B19"))    # on the edge no opponent diagonal is allowed


def test_area_score_counts_stones_and_reached_points():
    b = board_from("""
        .X.O.
        XX.OO
    """)
    black, white = b.area_counts()
    # A19 reaches only Black; every other empty point (E19 too, through F19) reaches both.
    reach_both = 361 - 6 - 1
    assert (black, white) == (3 + 1 + reach_both, 3 + reach_both)
    assert b.area_score(7.5) == -6.5
    lone = Board()
    lone.play_move(BLACK, V("K10"))
    assert lone.area_score(0.5) == 360.5


def reach_by_search(board: Board, color: int) -> int:
    """Stones of `color` plus the empty points reaching one, by a plain search from each."""
    count = 0
    for v in ALL_VERTICES:
        if board.square[v] == color:
            count += 1
        elif board.square[v] == EMPTY:
            seen, todo = {v}, [v]
            while todo and all(board.square[p] != color for p in todo):
                p = todo.pop()
                for d in DIRECTIONS:
                    n = p + d
                    if n not in seen and board.square[n] in (EMPTY, color):
                        if board.square[n] == color:
                            todo = [n]
                            break
                        seen.add(n)
                        todo.append(n)
            count += bool(todo)
    return count


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_area_counts_equal_a_plain_search_through_random_games(seed):
    state = GameState()
    for i, cmd in enumerate(random_commands(seed, 300, any_empty=True)):
        replay(state, cmd)
        if i % 25 == 0:
            b = state.board
            assert b.area_counts() == (reach_by_search(b, BLACK), reach_by_search(b, WHITE))


# ----------------------------------------------------------------------------- random games
@pytest.mark.parametrize("seed, any_empty", [(1, False), (2, True), (3, True)])
def test_invariants_hold_through_random_games(seed, any_empty):
    state = GameState()
    for cmd in random_commands(seed, 330, any_empty=any_empty):
        replay(state, cmd)
        check_invariants(state.board)
    assert state.board.prisoners[BLACK] + state.board.prisoners[WHITE] > 0


def test_string_order_equals_reference(lz_binary, random_weights):
    """final_status_list alive after a random game: every string, in LZ's walk order."""
    commands = random_commands(21, 280, any_empty=True) + ["final_status_list alive"]
    replies, _ = lz_session(lz_binary, random_weights(1, 8), commands)
    state = GameState()
    for cmd in commands[:-1]:
        replay(state, cmd)
    b = state.board
    strings = {" ".join(gtp_vertex(v) for v in b.string_stones(s))
               for s in ALL_VERTICES if b.square[s] != EMPTY}
    assert replies[-1] == "\n".join(sorted(strings))
    assert any(len(s.split()) > 3 for s in strings)


def test_ko_hash_after_a_move_is_what_playing_it_leaves():
    """Board.ko_hash_after (the root's superko test) against copy() + play_move, for both
    colours at every empty point of positions of random games full of captures, suicides
    and kos (a pass now and then), the suicide and capture cases counted so that neither
    goes untested."""
    import random

    rng = random.Random(5)
    kinds = {"capture": 0, "suicide": 0, "plain": 0}
    for _ in range(4):
        board = Board()
        color = BLACK
        for move in range(260):
            empty = [v for v in ALL_VERTICES if board.square[v] == EMPTY]
            if move % 20 == 19:
                for c in (BLACK, WHITE):
                    for v in empty:
                        after = board.copy()
                        after.play_move(c, v)
                        assert board.ko_hash_after(c, v) == after.ko_hash, (move, c, v)
                        if after.prisoners != board.prisoners:
                            kinds["capture"] += 1
                        elif after.square[v] == EMPTY:
                            kinds["suicide"] += 1
                        else:
                            kinds["plain"] += 1
            v = rng.choice(empty + [PASS]) if empty else PASS
            board.play_move(color, v)
            color = 1 - color
    assert min(kinds.values()) > 20, kinds
