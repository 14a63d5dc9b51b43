"""Every coordinate system of the engine, and the only place that converts between them.

Owns: colours, special moves, and conversions vertex <-> (x, y) <-> index <-> GTP text <-> SGF.
Imports: stdlib only.

Five ways to name a point, shown for the lower-left corner A1, the upper-right corner T19 and pass:

    system        what it is                                   A1     T19    pass
    ------------  -------------------------------------------  -----  -----  -----
    (x, y)        column, row; (0, 0) is A1 (row 1 at bottom)   (0,0)  (18,18) -
    vertex        mailbox slot in a 21x21 board with a border:  22     418    PASS (-1)
                  (y + 1) * 21 + (x + 1); Leela Zero's numbering
    index         intersection number y * 19 + x (0..360);      0      360    -
                  the order of input planes and policy outputs
    policy slot   index, plus 361 for pass (POTENTIAL_MOVES)    0      360    361
    GTP text      column letter without I, then the row         A1     T19    pass
    SGF           column 'a'+x, row 'a'+(18-y); pass is "tt"    as     sa     tt

Leela Zero's vocabulary is kept: NUM_VERTICES (mailbox size), NUM_INTERSECTIONS (361),
POTENTIAL_MOVES (362). Colours use Leela Zero's numbers (BLACK 0, WHITE 1, EMPTY 2, INVAL 3),
because the Zobrist tables are indexed by them.
"""

from __future__ import annotations

BOARD_SIZE = 19
#: Side of the mailbox: one border slot on each side of the board.
STRIDE = BOARD_SIZE + 2
NUM_VERTICES = STRIDE * STRIDE
NUM_INTERSECTIONS = BOARD_SIZE * BOARD_SIZE
POTENTIAL_MOVES = NUM_INTERSECTIONS + 1
#: Policy slot of pass.
PASS_INDEX = NUM_INTERSECTIONS

Vertex = int
Color = int

BLACK: Color = 0
WHITE: Color = 1
EMPTY: Color = 2
INVAL: Color = 3

PASS: Vertex = -1
RESIGN: Vertex = -2
NO_VERTEX: Vertex = 0

#: Neighbour offsets in Leela Zero's order: up a row (lower y), right, down a row, left.
DIRECTIONS = (-STRIDE, 1, STRIDE, -1)

GTP_COLUMNS = "ABCDEFGHJKLMNOPQRST"


def opponent(color: Color) -> Color:
    """The other player; only for BLACK and WHITE."""
    return 1 - color


def symmetric_xy(x: int, y: int, s: int) -> tuple[int, int]:
    """(x, y) under board symmetry s, 0..7, numbered as Leela Zero numbers them
    (Network::get_symmetry): if s & 4 swap x and y; if s & 2 mirror x; if s & 1 mirror y."""
    if s & 4:
        x, y = y, x
    if s & 2:
        x = BOARD_SIZE - 1 - x
    if s & 1:
        y = BOARD_SIZE - 1 - y
    return x, y


def vertex(x: int, y: int) -> Vertex:
    """Mailbox vertex of the point in column x, row y (both 0-based, A1 = (0, 0))."""
    return (y + 1) * STRIDE + (x + 1)


def xy(v: Vertex) -> tuple[int, int]:
    """(x, y) of an on-board vertex."""
    return v % STRIDE - 1, v // STRIDE - 1


def index(v: Vertex) -> int:
    """Intersection index 0..360 (plane and policy order) of an on-board vertex."""
    return (v // STRIDE - 1) * BOARD_SIZE + v % STRIDE - 1


def vertex_from_index(i: int) -> Vertex:
    """Vertex of intersection index i (0..360)."""
    return (i // BOARD_SIZE + 1) * STRIDE + i % BOARD_SIZE + 1


def policy_slot(v: Vertex) -> int:
    """Policy slot 0..361 of a move: its index, or 361 for pass."""
    return PASS_INDEX if v == PASS else index(v)


def move_from_policy_slot(slot: int) -> Vertex:
    """Inverse of policy_slot."""
    return PASS if slot == PASS_INDEX else vertex_from_index(slot)


def on_board(x: int, y: int) -> bool:
    return 0 <= x < BOARD_SIZE and 0 <= y < BOARD_SIZE


#: Every on-board vertex in index order (A1, B1, ..., T1, A2, ...): the vertex of each index.
ALL_VERTICES: tuple[Vertex, ...] = tuple(vertex_from_index(i) for i in range(NUM_INTERSECTIONS))
#: The vertex of each policy slot, pass last (move_from_policy_slot as a table).
VERTEX_OF_SLOT: tuple[Vertex, ...] = ALL_VERTICES + (PASS,)
#: The policy slot of each vertex, NUM_VERTICES + 1 long so that PASS (-1) indexes its last
#: entry, 361 (policy_slot as a table; border vertices read 0 and are never asked for).
SLOT_OF_VERTEX: tuple[int, ...] = tuple(
    [dict(zip(ALL_VERTICES, range(NUM_INTERSECTIONS))).get(v, 0) for v in range(NUM_VERTICES)]
    + [PASS_INDEX])


def parse_color(text: str) -> Color:
    """GTP colour (b, black, w, white; any case) -> BLACK or WHITE; ValueError otherwise."""
    t = text.lower()
    if t in ("b", "black"):
        return BLACK
    if t in ("w", "white"):
        return WHITE
    raise ValueError(f"not a colour: {text!r}")


def color_name(color: Color) -> str:
    """'black' or 'white', as last_move and move_history print it."""
    return "black" if color == BLACK else "white"


def parse_gtp_vertex(text: str) -> Vertex:
    """GTP vertex text -> vertex, PASS or RESIGN; ValueError for anything off the board.

    Like Leela Zero, case is ignored and characters after the row number are ignored
    (`a19x` is A19). Unlike Leela Zero, row 0 (`a0`) is an error rather than a border slot.
    """
    t = text.lower()
    if t == "pass":
        return PASS
    if t == "resign":
        return RESIGN
    if len(t) < 2 or not ("a" <= t[0] <= "z") or t[0] == "i" or not t[1].isdigit():
        raise ValueError(f"not a vertex: {text!r}")
    x = ord(t[0]) - ord("a")
    if t[0] > "i":
        x -= 1
    digits = 1
    while digits + 1 < len(t) and t[digits + 1].isdigit():
        digits += 1
    y = int(t[1:1 + digits]) - 1  # huge numbers are simply off the board
    if not on_board(x, y):
        raise ValueError(f"vertex off the board: {text!r}")
    return vertex(x, y)


def gtp_vertex(v: Vertex) -> str:
    """Vertex -> GTP text in upper case (`D4`), `pass` or `resign`."""
    if v == PASS:
        return "pass"
    if v == RESIGN:
        return "resign"
    x, y = xy(v)
    return f"{GTP_COLUMNS[x]}{y + 1}"


def sgf_vertex(v: Vertex) -> str:
    """Vertex -> SGF point (`dp`), pass -> `tt`."""
    if v == PASS:
        return "tt"
    x, y = xy(v)
    return chr(ord("a") + x) + chr(ord("a") + BOARD_SIZE - 1 - y)


def parse_sgf_vertex(text: str) -> Vertex:
    """SGF point -> vertex; an empty value or `tt` is PASS; ValueError when off the board."""
    if text == "" or text == "tt":
        return PASS
    if len(text) != 2:
        raise ValueError(f"not an SGF point: {text!r}")
    x = ord(text[0]) - ord("a")
    y = BOARD_SIZE - 1 - (ord(text[1]) - ord("a"))
    if not on_board(x, y):
        raise ValueError(f"SGF point off the board: {text!r}")
    return vertex(x, y)
