"""One Go position: stones, strings, liberties, captures, ko point, passes and hashes.

Owns: `Board` (Leela Zero's FastBoard + FullBoard, plus the per-position fields of FastState:
side to move, ko point, pass count, last move; the ko point and the pass count are part of the
full hash, so they live beside it), the suicide and true-eye tests, and Tromp-Taylor area
scoring.
Imports: game.coords, game.zobrist.

Data structure, as Leela Zero keeps it: a mailbox with a border of INVAL, and for every stone a
pointer `next` to the next stone of its string (a cycle) and `parent`, the string's root. Only
the root's slots of `libs` (liberties) and `stones` (size) are meaningful. Merging two strings
points the smaller one's stones at the larger one's root (the new stone's string wins ties) and
splices the two cycles by swapping the roots' `next` pointers, so the order in which stones are
walked from a root is exactly LZ's (GTP `final_status_list alive` prints it).

A worked example on a 5x5 board (the real board is 19x19 in a 21x21 mailbox, same scheme).
Mailbox vertices (stride 7) and the position after B b3, W c3, B b4, W d3, B c4:

        42 43 44 45 46 47 48            # # # # # # #
        35 36 37 38 39 40 41         5  # . . . . . #
        28 29 30 31 32 33 34         4  # . X X . . #
        21 22 23 24 25 26 27         3  # . X O O . #
        14 15 16 17 18 19 20         2  # . . . . . #
         7  8  9 10 11 12 13         1  # . . . . . #
         0  1  2  3  4  5  6            # # # # # # #
                                          a b c d e

    vertex  point  colour  parent  next  libs[root]  stones[root]
      23     b3      X       30     30
      30     b4      X       30     31       6           3      (a3 a4 b2 b5 c5 d4)
      31     c4      X       30     23
      24     c3      O       25     25
      25     d3      O       25     24       4           2      (c2 d2 d4 e3)

B b4 joined b3 (sizes 1 and 1: the new stone's string is root 30, next[23] and next[30]
swapped). B c4 joined the 2-stone string (the larger one stays root 30). Walking from the root:
30 -> 31 -> 23 -> 30, so LZ lists the black string as `B4 C4 B3`.

Hot path: `copy()` and `play_move()` run on every step of every playout. The arrays are
bytearray/array('h') so that a copy is a handful of memcpy's, loops are unrolled over the four
neighbours, and attributes are read into locals once.
"""

from __future__ import annotations

from array import array

from leelaz.game.coords import (ALL_VERTICES, BLACK, EMPTY, INVAL, NO_VERTEX, NUM_INTERSECTIONS,
                                NUM_VERTICES, PASS, STRIDE, WHITE, Color, Vertex)
from leelaz.game.zobrist import (BLACK_TO_MOVE, HASH_INIT, STONE_DELTA, SYM_STONE_DELTA, ZOBRIST,
                                 ZOBRIST_KO, ZOBRIST_PASS, ZOBRIST_PRIS)

#: Consecutive passes are counted up to this (LZ caps the counter, and the pass keys, at 4).
MAX_PASSES = 4

_N = STRIDE  # vertical neighbour offset


def _fresh_square() -> bytearray:
    square = bytearray([INVAL]) * NUM_VERTICES
    for v in ALL_VERTICES:
        square[v] = EMPTY
    return square


def _fresh_empty() -> tuple[array, array]:
    """LZ's initial empty list: column by column (A1, A2, ..., A19, B1, ...)."""
    empty = array("h", [0] * NUM_INTERSECTIONS)
    empty_idx = array("h", [0] * NUM_VERTICES)
    i = 0
    for x in range(19):
        for y in range(19):
            v = (y + 1) * STRIDE + x + 1
            empty[i] = v
            empty_idx[v] = i
            i += 1
    return empty, empty_idx


_EMPTY_SQUARE = _fresh_square()
_EMPTY_LIST, _EMPTY_IDX = _fresh_empty()
_ZEROS = array("h", [0] * NUM_VERTICES)
_EMPTY_KO_HASH = HASH_INIT
for _v in ALL_VERTICES:
    _EMPTY_KO_HASH ^= ZOBRIST[EMPTY][_v]
del _v


class Board:
    """A 19x19 position. Callers treat a Board that sits in a GameState's history as frozen;
    `play_move` is only called on a fresh `copy()`."""

    __slots__ = ("square", "next", "parent", "libs", "stones", "empty", "empty_idx",
                 "empty_cnt", "prisoners", "to_move", "hash", "ko_hash", "ko_move", "passes",
                 "last_move", "sym_stones")

    def __init__(self) -> None:
        self.square = _EMPTY_SQUARE[:]      # colour per vertex: BLACK/WHITE/EMPTY, INVAL border
        self.next = _ZEROS[:]               # next stone of the same string (a cycle)
        self.parent = _ZEROS[:]             # root of the stone's string; 0 on empty points
        self.libs = _ZEROS[:]               # liberties of the string, valid at its root
        self.stones = _ZEROS[:]             # stones in the string, valid at its root
        self.empty = _EMPTY_LIST[:]         # the empty points, first empty_cnt slots used
        self.empty_idx = _EMPTY_IDX[:]      # position of each empty point in `empty`
        self.empty_cnt = NUM_INTERSECTIONS  # number of empty points
        self.prisoners = [0, 0]             # stones captured by Black, by White
        self.to_move = BLACK                # side to move
        self.ko_move = NO_VERTEX            # point the side to move may not take back, or 0
        self.passes = 0                     # consecutive passes, capped at MAX_PASSES
        self.last_move = NO_VERTEX          # last move played (PASS possible), 0 before any
        self.ko_hash = _EMPTY_KO_HASH       # stones only (positional superko)
        self.sym_stones = 0                 # the stones' terms of the 8 symmetric hashes, packed
        self.hash = self.calc_hash()        # stones, prisoners, side to move, ko, passes

    def copy(self) -> Board:
        """An independent copy (hot path: seven memcpy's and a few attribute stores)."""
        b = _new_board(Board)
        b.square = self.square[:]
        b.next = self.next[:]
        b.parent = self.parent[:]
        b.libs = self.libs[:]
        b.stones = self.stones[:]
        b.empty = self.empty[:]
        b.empty_idx = self.empty_idx[:]
        b.empty_cnt = self.empty_cnt
        b.prisoners = self.prisoners[:]
        b.to_move = self.to_move
        b.hash = self.hash
        b.ko_hash = self.ko_hash
        b.sym_stones = self.sym_stones
        b.ko_move = self.ko_move
        b.passes = self.passes
        b.last_move = self.last_move
        return b

    # ------------------------------------------------------------------ hashes
    def calc_hash(self) -> int:
        """The full hash computed from scratch (LZ's calc_hash; no pass term, see play_move)."""
        h = self.calc_ko_hash()
        h ^= ZOBRIST_PRIS[BLACK][self.prisoners[BLACK]] ^ ZOBRIST_PRIS[WHITE][self.prisoners[WHITE]]
        if self.to_move == BLACK:
            h ^= BLACK_TO_MOVE
        return h ^ ZOBRIST_KO[self.ko_move]

    def calc_ko_hash(self) -> int:
        """The stones-only hash computed from scratch."""
        h = HASH_INIT
        square = self.square
        for v in ALL_VERTICES:
            h ^= ZOBRIST[square[v]][v]
        return h

    def set_to_move(self, color: Color) -> None:
        """Change the side to move, keeping the full hash in step (LZ's FullBoard)."""
        if color != self.to_move:
            self.hash ^= BLACK_TO_MOVE
        self.to_move = color

    # ------------------------------------------------------------------ moves
    def play_move(self, color: Color, vertex: Vertex) -> None:
        """Play a stone or a pass for `color`, whoever is to move (LZ's FastState::play_move).

        The caller has checked that a stone goes on an empty point. Then the other colour is to
        move. The hash takes the ko point, the side to move and pass[old]^pass[new] along.
        """
        h = self.hash ^ ZOBRIST_KO[self.ko_move]
        passes = self.passes
        if vertex == PASS:
            ko = NO_VERTEX
            new_passes = passes + 1 if passes < MAX_PASSES else MAX_PASSES
        else:
            self.hash = h
            ko = self._place(color, vertex)
            h = self.hash
            new_passes = 0
        h ^= ZOBRIST_KO[ko]
        if self.to_move == color:
            h ^= BLACK_TO_MOVE
        self.hash = h ^ ZOBRIST_PASS[passes] ^ ZOBRIST_PASS[new_passes]
        self.ko_move = ko
        self.to_move = 1 - color
        self.passes = new_passes
        self.last_move = vertex

    def _place(self, color: Color, v: Vertex) -> Vertex:
        """Put a stone on empty point v: liberties, captures, merges, suicide; return the ko
        point (the single captured stone, if the stone went into an opponent's eye) or 0.
        Hot path (LZ's FullBoard::update_board)."""
        square = self.square
        parent = self.parent
        libs = self.libs

        # Take v out of the empty list: the last entry moves into its slot.
        empty = self.empty
        empty_idx = self.empty_idx
        cnt = self.empty_cnt - 1
        self.empty_cnt = cnt
        last = empty[cnt]
        i = empty_idx[v]
        empty[i] = last
        empty_idx[last] = i

        delta = STONE_DELTA[color][v]
        self.hash ^= delta
        self.ko_hash ^= delta
        self.sym_stones ^= SYM_STONE_DELTA[color][v]
        square[v] = color
        parent[v] = v
        self.next[v] = v
        self.stones[v] = 1

        # Every neighbouring string loses v as a liberty (once per string).
        own = 0
        lib = 0
        seen0 = seen1 = seen2 = -1
        for n in (v - _N, v + 1, v + _N, v - 1):
            s = square[n]
            if s == EMPTY:
                lib += 1
            elif s != INVAL:
                if s == color:
                    own = 1
                r = parent[n]
                if r != seen0 and r != seen1 and r != seen2:
                    libs[r] -= 1
                    if seen0 < 0:
                        seen0 = r
                    elif seen1 < 0:
                        seen1 = r
                    else:
                        seen2 = r
        libs[v] = lib
        if seen0 < 0:
            return NO_VERTEX  # quiet move into open space: nothing to capture or merge

        # Captures and merges, neighbour by neighbour in LZ's order.
        opp = 1 - color
        captured = 0
        captured_at = NO_VERTEX
        stones = self.stones
        for n in (v - _N, v + 1, v + _N, v - 1):
            s = square[n]
            if s == opp:
                if libs[parent[n]] <= 0:
                    captured += self._remove_string(n)
                    captured_at = n
            elif s == color:
                ip = parent[v]
                aip = parent[n]
                if ip != aip:
                    if stones[ip] >= stones[aip]:
                        self._merge(ip, aip)
                    else:
                        self._merge(aip, ip)

        if captured:
            pris = self.prisoners
            old = pris[color]
            pris[color] = old + captured
            self.hash ^= ZOBRIST_PRIS[color][old] ^ ZOBRIST_PRIS[color][old + captured]
        elif libs[parent[v]] == 0:
            self._remove_string(v)  # suicide: the string goes, nobody gets prisoners
            return NO_VERTEX
        if captured == 1 and not lib and not own:
            return captured_at
        return NO_VERTEX

    def _merge(self, ip: Vertex, aip: Vertex) -> None:
        """String `aip` joins string `ip`: count aip's liberties that ip lacks, repoint parents,
        splice the two cycles (LZ's merge_strings)."""
        square = self.square
        parent = self.parent
        nxt = self.next
        self.stones[ip] += self.stones[aip]
        lib = self.libs[ip]
        pos = aip
        while True:
            for n in (pos - _N, pos + 1, pos + _N, pos - 1):
                if square[n] == EMPTY and parent[n - _N] != ip and parent[n + 1] != ip \
                        and parent[n + _N] != ip and parent[n - 1] != ip:
                    lib += 1
            parent[pos] = ip
            pos = nxt[pos]
            if pos == aip:
                break
        self.libs[ip] = lib
        nxt[aip], nxt[ip] = nxt[ip], nxt[aip]

    def _remove_string(self, start: Vertex) -> int:
        """Take the string through `start` off the board, walking from `start`; the removed
        points join the empty list in that order and give liberties back to the strings
        around them. Returns the number of stones (LZ's remove_string)."""
        square = self.square
        parent = self.parent
        libs = self.libs
        nxt = self.next
        empty = self.empty
        empty_idx = self.empty_idx
        cnt = self.empty_cnt
        color = square[start]
        other = 1 - color
        delta = STONE_DELTA[color]
        sym_delta = SYM_STONE_DELTA[color]
        h = 0
        sym = 0
        removed = 0
        pos = start
        while True:
            square[pos] = EMPTY
            parent[pos] = NO_VERTEX
            h ^= delta[pos]
            sym ^= sym_delta[pos]
            empty_idx[pos] = cnt
            empty[cnt] = pos
            cnt += 1
            removed += 1
            seen0 = seen1 = seen2 = -1
            for n in (pos - _N, pos + 1, pos + _N, pos - 1):
                if square[n] == other:
                    r = parent[n]
                    if r != seen0 and r != seen1 and r != seen2:
                        libs[r] += 1
                        if seen0 < 0:
                            seen0 = r
                        elif seen1 < 0:
                            seen1 = r
                        else:
                            seen2 = r
            pos = nxt[pos]
            if pos == start:
                break
        self.empty_cnt = cnt
        self.hash ^= h
        self.ko_hash ^= h
        self.sym_stones ^= sym
        return removed

    # ------------------------------------------------------------------ queries
    def is_suicide(self, color: Color, v: Vertex) -> bool:
        """A stone of `color` on empty v would have no liberty: no empty neighbour, no own
        string with more than one liberty, no opponent string it captures."""
        square = self.square
        parent = self.parent
        libs = self.libs
        for n in (v - _N, v + 1, v + _N, v - 1):
            s = square[n]
            if s == EMPTY:
                return False
            if s == color:
                if libs[parent[n]] > 1:
                    return False
            elif s != INVAL and libs[parent[n]] <= 1:
                return False
        return True

    def ko_hash_after(self, color: Color, v: Vertex) -> int:
        """The stones-only hash after a stone of `color` on empty v, without playing it:
        what `copy()` + `play_move` would leave in `ko_hash` (the root's superko test,
        search/root.py, for every child). The stone's term, then each opponent string whose
        only liberty is v (captured), or, when nothing is captured and the stone would have
        no liberty, the stone and the own strings it joins (suicide, which `_place` allows)."""
        square = self.square
        parent = self.parent
        libs = self.libs
        h = self.ko_hash ^ STONE_DELTA[color][v]
        opp = 1 - color
        captured: list[Vertex] = []
        own: list[Vertex] = []
        breathes = False
        for n in (v - _N, v + 1, v + _N, v - 1):
            s = square[n]
            if s == EMPTY:
                breathes = True
            elif s == opp:
                r = parent[n]
                if libs[r] <= 1 and r not in captured:
                    captured.append(r)
            elif s == color:
                r = parent[n]
                if libs[r] > 1:
                    breathes = True
                elif r not in own:
                    own.append(r)
        if captured:
            for r in captured:
                h ^= self._string_terms(r, opp)
        elif not breathes:  # suicide: the stone and the strings it joined go
            h ^= STONE_DELTA[color][v]
            for r in own:
                h ^= self._string_terms(r, color)
        return h

    def _string_terms(self, start: Vertex, color: Color) -> int:
        """The XOR of the stone terms of the string through `start`."""
        delta = STONE_DELTA[color]
        nxt = self.next
        h = 0
        pos = start
        while True:
            h ^= delta[pos]
            pos = nxt[pos]
            if pos == start:
                break
        return h

    def is_legal(self, color: Color, v: Vertex) -> bool:
        """LZ's engine legality without superko: pass, or an empty point that is not the ko
        point and not suicide."""
        if v == PASS:
            return True
        return (self.square[v] == EMPTY and v != self.ko_move
                and not self.is_suicide(color, v))

    def is_eye(self, color: Color, v: Vertex) -> bool:
        """True eye of `color` (LZ's is_eye; used for NOPASS and playouts): all four neighbours
        are `color` or edge, and the diagonals hold at most one opponent stone, none if v is on
        the edge. v itself is not looked at."""
        square = self.square
        for n in (v - _N, v + 1, v + _N, v - 1):
            s = square[n]
            if s != color and s != INVAL:
                return False
        opp = 1 - color
        bad = 0
        edge = False
        for n in (v - _N - 1, v - _N + 1, v + _N - 1, v + _N + 1):
            s = square[n]
            if s == opp:
                bad += 1
            elif s == INVAL:
                edge = True
        return bad == 0 if edge else bad <= 1

    def string_stones(self, v: Vertex) -> list[Vertex]:
        """The stones of the string at v, walked from its root (LZ's get_string order)."""
        start = self.parent[v]
        nxt = self.next
        out = [start]
        pos = nxt[start]
        while pos != start:
            out.append(pos)
            pos = nxt[pos]
        return out

    def string_liberties(self, v: Vertex) -> int:
        """Liberties of the string at v."""
        return self.libs[self.parent[v]]

    def stone_count(self, color: Color) -> int:
        return self.square.count(color)

    def area_counts(self) -> tuple[int, int]:
        """(Black, White): stones of that colour plus the empty points that reach one of them
        through empty points (LZ's calc_reach_color).

        Hot path (every terminal leaf, and every leaf that may pass because it is winning):
        the flood runs on whole boards at once as Python integers with one byte per mailbox
        point, a point's neighbours being the bytes 1 and STRIDE away; the border is never
        empty, so nothing leaks across a row's end. A dozen big-integer operations per step
        of the flood, instead of a Python loop over every point."""
        square = self.square
        empty = int.from_bytes(square.translate(_IS_COLOUR[EMPTY]), "little")
        return _reach(square, BLACK, empty), _reach(square, WHITE, empty)

    def area_score(self, komi: float) -> float:
        """Tromp-Taylor area score: Black minus White minus komi (no dead stones removed)."""
        black, white = self.area_counts()
        return black - white - komi

    def __repr__(self) -> str:
        rows = []
        for y in range(18, -1, -1):
            rows.append("".join("XO.#"[self.square[(y + 1) * STRIDE + x + 1]] for x in range(19)))
        return "Board(\n" + "\n".join(rows) + ")"


_new_board = object.__new__

#: bytes.translate tables: _IS_COLOUR[c] maps a square byte to 1 where it holds c, else 0.
_IS_COLOUR = [bytes(int(i == c) for i in range(256)) for c in range(INVAL + 1)]
_ROW_BITS = 8 * STRIDE


def _reach(square: bytearray, color: Color, empty: int) -> int:
    """The stones of `color` and the empty points they reach (see Board.area_counts): one byte
    per point, grown through `empty` until nothing changes."""
    reach = int.from_bytes(square.translate(_IS_COLOUR[color]), "little")
    while True:
        grown = reach | (((reach << 8) | (reach >> 8) | (reach << _ROW_BITS)
                          | (reach >> _ROW_BITS)) & empty)
        if grown == reach:
            return reach.bit_count()
        reach = grown
