"""SGF text: reading game collections into trees of nodes, and writing Leela Zero's printsgf text.

Owns: splitting a collection into games the way Leela Zero does, a tolerant parser for one game
(nodes, multi-valued properties, escapes, variations), reading .sgf and .sgf.gz files, the
`SgfError` raised for anything malformed, the printsgf layout (src/SGFTree.cpp), and writing a
parsed tree back (`format_game`: every property, comment and variation kept, for tools that
annotate a game, such as `leelaz review`), the layout of `leelaz match`'s games
(`format_match_game`), and reading a root property or the moves of a plain record straight
from the text, without building a tree (`root_property`, `text_winner`, `plain_record`).
Replaying a game onto a board lives in game/sgf_replay.py, which is the only caller that needs
GameState; this module knows nothing about boards.
Imports: stdlib, files (bounded reading) and game.coords only.

What is tolerated, because real files do it (as Leela Zero's reader does):
- text before the first `(` and between games (headers, a byte-order mark, blank lines);
- missing closing parentheses at the end of the text;
- whitespace anywhere between tokens, and escapes (`\\]`, `\\\\`) inside values; an escaped
  line break is removed (SGF's soft line break).
- lower-case letters inside property names, as FF[3] files write them: the upper-case
  letters make the name (`AddBlack` is AB) and a name with no upper-case letter is dropped.
  LZ-DIFF: the binary keeps `AddBlack` as a name of its own, so it ignores such properties.
Everything else (an unterminated value, a property without a value, a node outside a game
tree, stray characters) is an SgfError naming the file, the game and the offending text;
Leela Zero skips stray characters silently instead.

Speed: the collections hold 221,901 games, so parsing is a hot path. Texts without `\\`
(nearly all) take a path that splits at `]` and does one step per value; anything unusual
there is handed to the general token-by-token parser, which also gives error positions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from leelaz.files import FileTooLarge, NotRegularFile, read_bounded
from leelaz.game.coords import BLACK, Color, PASS, Vertex, sgf_vertex


class SgfError(ValueError):
    """Malformed or unsupported SGF; the message says where (file, game) and what."""


# ---- splitting a collection --------------------------------------------------------------

#: Characters that matter while splitting: parentheses, brackets, escapes.
_SPLIT = re.compile(r"[()\[\]\\]")


def split_games(text: str) -> list[str]:
    """The games of a collection, each from its top-level `(` to the matching `)`.

    Like Leela Zero: parentheses inside `[...]` values and characters after a `\\` do not
    count. If no complete game is found, the text from the first `(` is returned as the one
    game (files whose closing parenthesis is missing); if there is no `(` at all, none.
    """
    games: list[str] = []
    depth = 0
    in_value = False
    start = -1
    skip_until = -1
    for m in _SPLIT.finditer(text):
        pos = m.start()
        if pos < skip_until:
            continue
        c = m.group()
        if c == "\\":
            skip_until = pos + 2
        elif in_value:
            if c == "]":
                in_value = False
        elif c == "[":
            in_value = True
        elif c == "(":
            if depth == 0:
                start = pos
            depth += 1
        elif c == ")" and depth > 0:
            depth -= 1
            if depth == 0:
                games.append(text[start:pos + 1])
    if not games:
        first = text.find("(")
        if first >= 0:
            games.append(text[first:])
    return games


# ---- the tree -----------------------------------------------------------------------------

@dataclass(slots=True)
class SgfNode:
    """One node: its properties (name -> list of values, in file order) and its children.

    The first child continues the main line; the others are variations.
    """
    props: dict[str, list[str]] = field(default_factory=dict)
    children: list[SgfNode] = field(default_factory=list)

    def get(self, name: str, default: str | None = None) -> str | None:
        """First value of a property, or default when the node does not have it."""
        values = self.props.get(name)
        return values[0] if values else default

    def values(self, name: str) -> list[str]:
        """All values of a property (several for AB[dd][pp]), or []."""
        return self.props.get(name, [])

    def __contains__(self, name: str) -> bool:
        return name in self.props

    def move(self) -> tuple[Color, str] | None:
        """The node's move as (colour, SGF point text), or None. B wins over W when a broken
        node has both, as in Leela Zero (its properties are sorted by name)."""
        for color, name in ((BLACK, "B"), (1 - BLACK, "W")):
            values = self.props.get(name)
            if values:
                return color, values[0]
        return None


@dataclass(slots=True)
class SgfGame:
    """One game of a collection: its root node and where it came from (for messages)."""
    root: SgfNode
    source: str = "<text>"

    def mainline(self) -> list[SgfNode]:
        """The root and then the first child of each node, to the end."""
        nodes = [self.root]
        while nodes[-1].children:
            nodes.append(nodes[-1].children[0])
        return nodes

    def error(self, message: str) -> SgfError:
        return SgfError(f"{self.source}: {message}")


# ---- parsing one game -----------------------------------------------------------------------

#: One token after optional whitespace: a value, a property name, `;`, `(`, `)`, or anything
#: else (an error). findall gives a tuple per token, which keeps the Python loop short.
_TOKEN = re.compile(r"""\s*(?:
    (\[[^\\\]]*(?:\\.[^\\\]]*)*\])   # 1: a value with its brackets
  | ([A-Za-z]+)                          # 2: a property name
  | ([;()])                              # 3: punctuation
  | (\S))                               # 4: anything else
""", re.S | re.X)

_ESCAPE = re.compile(r"\\(\r\n|\n\r|\n|\r|.)", re.S)


def _unescape(raw: str) -> str:
    """Value text without its brackets and escapes; an escaped line break is removed (an SGF
    soft line break), any other escaped character is kept as itself."""
    if "\\" not in raw:
        return raw
    return _ESCAPE.sub(lambda m: "" if m.group(1) in ("\n", "\r", "\r\n", "\n\r") else m.group(1),
                       raw)


def _prop_name(ident: str) -> str:
    """FF[3]-style `AddBlack` -> `AB`: the upper-case letters of the identifier."""
    if ident.isupper():
        return ident
    return "".join(c for c in ident if c.isupper())


def _snippet(text: str, pos: int) -> str:
    piece = text[pos:pos + 20].replace("\n", "\\n")
    return repr(piece + ("..." if len(text) > pos + 20 else ""))


def parse_game(text: str, source: str = "<text>", whole: bool = False) -> SgfGame:
    """Parse the first game tree in text (normally one element of split_games).

    Text before the first `(` and after the game's closing `)` is ignored, and so is a
    missing closing `)` at the end, unless `whole` asks for the text to be exactly one
    complete game (one line of a one-game-per-line collection). Raises SgfError, with source
    in the message, for anything it cannot make sense of.
    """
    game, alone, closed = _parse(text, source)
    if whole and not closed:
        raise SgfError(f"{source}: the game is not closed (a ')' is missing)")
    if whole and not alone:
        raise SgfError(f"{source}: text after the end of the game")
    return game


class _Bad(Exception):
    """Raised inside the tree builder; turned into an SgfError with a position."""


class _Builder:
    """Builds the node tree from tokens; shared by the fast and the general tokenizer."""

    def __init__(self) -> None:
        self.root: SgfNode | None = None
        # One entry per open '(': [node the sequence hangs from, last node of the sequence].
        self.stack: list[list[SgfNode | None]] = []
        self.props: dict[str, list[str]] | None = None   # properties of the current node
        self.values: list[str] | None = None             # the list receiving values
        self.need_value = False                          # a name and no value yet
        self.prop = ""                                   # the last property name read
        self.closed = False                              # the game's last ')' was seen

    def name(self, ident: str) -> None:
        if self.need_value:
            raise _Bad(f"property {self.prop} has no value")
        if self.props is None:
            raise _Bad(f"property {ident!r} outside a node")
        name = ident if ident.isupper() else _prop_name(ident)
        self.prop = name or ident
        self.values = self.props.setdefault(name, []) if name else []
        self.need_value = True

    def punct(self, c: str) -> None:
        if self.need_value:
            raise _Bad(f"property {self.prop} has no value")
        stack = self.stack
        if c == ";":
            if not stack:
                raise _Bad("node outside a game tree")
            node = SgfNode()
            top = stack[-1]
            if top[1] is None:
                if self.root is not None:
                    raise _Bad("a second root node")
                self.root = node
            else:
                top[1].children.append(node)
            top[1] = node
            self.props = node.props
        elif c == "(":
            parent = stack[-1][1] if stack else None
            if stack and parent is None:
                raise _Bad("variation before any node")
            stack.append([parent, parent])
            self.props = None
        else:
            stack.pop()
            self.props = None
            if not stack:
                self.closed = True
        self.values = None

    def finish(self, source: str) -> SgfGame:
        if self.need_value:
            raise SgfError(f"{source}: property {self.prop} has no value (the text ends)")
        if self.root is None:
            raise SgfError(f"{source}: no node in the game (empty game tree)")
        return SgfGame(self.root, source)


#: A run of structure between values: whitespace, names and punctuation only.
_STRUCTURE = re.compile(r"\s*(?:([A-Za-z]+)|([;()]))")


def _parse(text: str, source: str) -> tuple[SgfGame, bool, bool]:
    """(game, whether only whitespace follows it, whether its closing `)` was there)."""
    start = text.find("(")
    if start < 0:
        raise SgfError(f"{source}: no game (no '(' in the text)")
    if "\\" not in text:
        try:
            return _parse_moves_run(text, start, source) or _parse_fast(text, start, source)
        except _Bad:
            pass                      # the general path finds the same error and its place
    return _parse_general(text, start, source)


#: A game's tail made only of plain move nodes and its closing `)`: `;B[pd];W[dd])`.
_MOVES_RUN = re.compile(r"(?:;[BW]\[[a-z]{0,2}\])+\)\s*\Z")
_RUN_MOVE = re.compile(r";([BW])\[([a-z]{0,2})\]")


def _parse_moves_run(text: str, start: int, source: str) -> tuple[SgfGame, bool, bool] | None:
    """The commonest shape, a root and a plain run of moves to the end (every game of the
    shared collections): the head goes through _parse_fast, the run through one findall.
    None when the text is not like that; _Bad when the head is malformed."""
    m = _MOVES_RUN.search(text, text.find(";", start) + 1)   # the root stays in the head
    if m is None:
        return None
    try:
        game, _, closed = _parse_fast(text[:m.start()] + ")", start, source)
    except SgfError:
        return None
    if not closed:
        return None                     # the head had open variations: not this shape
    node = game.root
    while node.children:
        node = node.children[0]
    for color, point in _RUN_MOVE.findall(m.group()):
        child = SgfNode({color: [point]})
        node.children.append(child)
        node = child
    return game, True, True


def _parse_fast(text: str, start: int, source: str) -> tuple[SgfGame, bool, bool]:
    """The parse of a text without escapes, one step per value rather than per token.

    Without `\\`, every `]` ends a value, and in each piece between two `]` the first `[`
    starts that value; what comes before it is structure (names, `;`, `(`, `)`). Anything
    unusual raises _Bad, and the caller redoes the text with the general parser.
    """
    b = _Builder()
    pieces = text[start:].split("]")
    last = len(pieces) - 1
    for k in range(last):
        pre, bracket, value = pieces[k].partition("[")
        if not bracket:
            raise _Bad("']' outside a value")
        if pre:
            if pre.isalpha():
                b.name(pre)
            elif (pre[0] == ";" and pre[1:].isalpha() and pre[1:].isupper()
                  and not b.need_value and b.stack and b.stack[-1][1] is not None):
                node = SgfNode()               # the common case: ";B" starts a move node
                top = b.stack[-1]
                top[1].children.append(node)
                top[1] = node
                b.props = node.props
                b.values = node.props[pre[1:]] = []
                b.prop = pre[1:]
                b.need_value = True
            else:
                _structure(b, pre)
        if b.values is None:
            raise _Bad("value without a property name")   # also: values after the game
        b.values.append(value)
        b.need_value = False
    _structure(b, pieces[last])
    return b.finish(source), True, b.closed


def _structure(b: _Builder, pre: str) -> None:
    """Feed the names and punctuation of a piece of structure to the builder."""
    pos = 0
    n = len(pre)
    while pos < n:
        m = _STRUCTURE.match(pre, pos)
        if m is None:
            if pre[pos:].strip():
                raise _Bad("unexpected character")
            return
        if b.closed:
            raise _Bad("text after the game")       # the general parser says where
        if m.group(1):
            b.name(m.group(1))
        else:
            b.punct(m.group(2))
        pos = m.end()


def _parse_general(text: str, start: int, source: str) -> tuple[SgfGame, bool, bool]:
    """The parse of any text, one token at a time (handles escapes, gives error places)."""
    tokens = _TOKEN.findall(text, start)
    b = _Builder()
    i = 0
    try:
        for i, (value, ident, punct, bad) in enumerate(tokens):
            if value:
                if b.values is None:
                    raise _Bad("value without a property name")
                b.values.append(_unescape(value[1:-1]))
                b.need_value = False
            elif ident:
                b.name(ident)
            elif punct:
                b.punct(punct)
                if b.closed:
                    break
            elif bad == "[":
                raise _Bad("unterminated property value")
            else:
                raise _Bad(f"unexpected {bad!r}")
    except _Bad as exc:
        raise _fail(text, start, i, source, str(exc)) from None
    return b.finish(source), i + 1 >= len(tokens), b.closed


def _offset(text: str, start: int, k: int) -> int:
    """Offset in text of the end of token k-1 (for error messages only)."""
    pos = start
    for _ in range(k):
        pos = _TOKEN.match(text, pos).end()
    return pos


def _fail(text: str, start: int, k: int, source: str, what: str) -> SgfError:
    m = _TOKEN.match(text, _offset(text, start, k))
    pos = m.start(m.lastindex) if m and m.lastindex else len(text)
    line = text.count("\n", 0, pos) + 1
    where = f"line {line}, offset {pos}" if line > 1 else f"offset {pos}"
    return SgfError(f"{source}: {what} at {where}: {_snippet(text, pos)}")


# ---- collections and files -------------------------------------------------------------------

def parse_collection(text: str, source: str = "<text>") -> list[SgfGame]:
    """Every game of a collection; SgfError on the first bad game, or when there is none."""
    games = []
    for item in games_in_text(text, source):
        if isinstance(item, SgfError):
            raise item
        games.append(item)
    if not games:
        raise SgfError(f"{source}: no SGF game found")
    return games


def games_in_text(text: str, source: str = "<text>") -> list[SgfGame | SgfError]:
    """Each game of the text, or the SgfError it raised, in order.

    Collections with one game per line (the shared data) are parsed line by line, which
    skips the character scan of split_games; if any line turns out not to be exactly one
    whole game, the text is split the general way instead.
    """
    lines = _game_lines(text)
    if lines is not None:
        out: list[SgfGame | SgfError] = []
        for i, line in enumerate(lines):
            try:
                game, alone, closed = _parse(line, f"{source}: game {i + 1}")
            except SgfError as exc:
                out.append(exc)
                continue
            if not (closed and alone):
                break
            out.append(game)
        else:
            return out
    out = []
    for i, game_text in enumerate(split_games(text)):
        try:
            out.append(parse_game(game_text, f"{source}: game {i + 1}"))
        except SgfError as exc:
            out.append(exc)
    return out


def _game_lines(text: str) -> list[str] | None:
    """The non-empty lines, when each starts with `(` and ends with `)`; else None."""
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines or not all(ln[0] == "(" and ln[-1] == ")" for ln in lines):
        return None
    return lines


#: The most SGF text a collection may hold (dump_supervised, the trainer): a month of 9-dan
#: tygem games is 14 MB; parsing costs about a hundred times the text in memory.
COLLECTION_MAX_BYTES = 256 << 20
#: The most a file for loadsgf may hold (one game; a long one with comments is well under
#: 1 MB): a 50 MB SGF took 4.8 GB and 34 s, with GTP blocked.
GAME_MAX_BYTES = 8 << 20


def read_text(path: str | Path, limit: int = COLLECTION_MAX_BYTES) -> str:
    """The text of an SGF file, plain or gzip (recognised by its first bytes, not its name).

    Only a regular file is read (a FIFO or /dev/zero is an error, not a hang), and at most
    `limit` bytes of text, counted after decompression (a gzip bomb stops there).
    UTF-8 is tried first and Latin-1 otherwise, which keeps every ASCII character (all the
    structure of SGF) in place whatever the real encoding. OSError becomes SgfError.
    """
    try:
        data = read_bounded(path, limit)
    except NotRegularFile:
        raise SgfError(f"{path}: cannot read: not a regular file") from None
    except FileTooLarge:
        raise SgfError(f"{path}: cannot read: more than {limit >> 20} MiB of SGF text") from None
    except (OSError, ValueError) as exc:
        raise SgfError(f"{path}: cannot read: {exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_file(path: str | Path) -> list[SgfGame]:
    """All games of an SGF file (plain or .gz); SgfError naming the file if any is bad."""
    return parse_collection(read_text(path), str(path))


def read_first_game(path: str | Path, limit: int = GAME_MAX_BYTES) -> SgfGame:
    """Game 0 of a file, as loadsgf uses it; the other games are not parsed."""
    text = read_text(path, limit)
    games = split_games(text)
    if not games:
        raise SgfError(f"{path}: no SGF game found")
    return parse_game(games[0], str(path))


def iter_file_games(path: str | Path) -> list[SgfGame | SgfError]:
    """Each game of a file in order, or the SgfError that game raised, so that one bad game
    does not stop the reading of a collection (dump_supervised, check_sgf_collection)."""
    return games_in_text(read_text(path), str(path))


# ---- writing a parsed tree back ----------------------------------------------------------------

def escape_value(text: str) -> str:
    """A property value as SGF writes it: `\\` and `]` escaped, everything else as it is."""
    return text.replace("\\", "\\\\").replace("]", "\\]")


def _node_text(node: SgfNode) -> str:
    return ";" + "".join(name + "".join(f"[{escape_value(v)}]" for v in values)
                         for name, values in node.props.items())


def format_game(game: SgfGame) -> str:
    """The SGF text of a parsed game: its nodes, with their properties in file order, and
    its variations (first child = main line), one node per line. `parse_game` of the text
    gives the same tree back. Iterative, so that a long game or deep variations never meet
    Python's recursion limit."""
    parts: list[str] = []
    stack: list[SgfNode | None] = [game.root]  # None closes a tree
    while stack:
        node = stack.pop()
        if node is None:
            parts.append(")")
            continue
        parts.append("(")
        while True:
            parts.append(_node_text(node) + "\n")
            if len(node.children) != 1:
                break
            node = node.children[0]
        stack.append(None)
        stack.extend(reversed(node.children))
    return "".join(parts) + "\n"


# ---- reading a game's text without a tree ----------------------------------------------------

_ROOT_PROPERTY = r"(?<![A-Z]){key}\[((?:\\.|[^\]\\])*)\]"
_WINNER = re.compile(r"RE\[([BW])\+")


def root_property(text: str, key: str) -> str | None:
    """The (unescaped) value of the first `KEY[...]` in a game's text, or None: a root property
    of a file we wrote (one game, properties named once), read without parsing the game."""
    found = re.search(_ROOT_PROPERTY.format(key=key), text)
    return re.sub(r"\\(.)", r"\1", found.group(1)) if found else None


def text_winner(text: str) -> str | None:
    """'B' or 'W' from a game text's RE (`B+...`, `W+...`; case-sensitive), None for no
    winner: how a folder of our own games is counted without parsing each one."""
    found = _WINNER.search(text)
    return found.group(1) if found else None


_PLAIN_MOVE = re.compile(r";\s*([BW])\[([a-s]{0,2}|tt)\]")
_PLAIN_RESULT = re.compile(r"RE\[([^\]]*)\]")


def plain_record(text: str) -> tuple[list[tuple[str, str]], str] | None:
    """(moves as (colour letter, SGF point) pairs, RE value) of a plain 19x19 record without
    setup stones, handicap or variations (the tygem-9d form, one game a line), or None when
    the record is something else (parse it with `parse_game`). Hot path: the trainer reads
    whole collections this way; a pass is the point `` or `tt`, as written."""
    if "AB[" in text or "AW[" in text or ("SZ[" in text and "SZ[19]" not in text):
        return None
    if text.count("(;") != 1:  # variations: parse_game's main line
        return None
    found = _PLAIN_RESULT.search(text)
    return _PLAIN_MOVE.findall(text), (found.group(1) if found else "")


# ---- writing: leelaz match's games ------------------------------------------------------------

def format_match_game(*, komi: float, black: str, white: str, result: str, ending: str,
                      comment: str, handicap: int = 0, handicap_stones: Sequence[Vertex] = (),
                      moves: Sequence[tuple[str, str]] = ()) -> str:
    """`leelaz match`'s SGF of one game: root properties (GM FF CA SZ KM RU PB PW RE, GC the
    ending, C the reason, HA and AB with a handicap) then the moves, ten a line.
    moves: (colour letter, SGF point) pairs, a pass as the empty point of FF[4]."""
    head = (f"(;GM[1]FF[4]CA[UTF-8]SZ[19]KM[{komi:g}]RU[Chinese]"
            f"PB[{escape_value(black)}]PW[{escape_value(white)}]RE[{escape_value(result)}]"
            f"GC[{escape_value(ending)}]C[{escape_value(comment)}]")
    if handicap:
        stones = "".join(f"[{sgf_vertex(v)}]" for v in handicap_stones)
        head += f"HA[{handicap}]AB{stones}"
    body = "".join(f";{c}[{point}]" + ("\n" if i % 10 == 9 else "")
                   for i, (c, point) in enumerate(moves))
    return head + "\n" + body + ")\n"


# ---- writing: Leela Zero's printsgf ----------------------------------------------------------

def result_text(score: float) -> str:
    """RE value for a final score (Black minus White): `B+3.5`, `W+0.5`, `0`."""
    if score > 0:
        return f"B+{score:.1f}"
    if score < 0:
        return f"W+{-score:.1f}"
    return "0"


def engine_player_name(weights_path: str, version: str = "0.17") -> str:
    """`Leela Zero 0.17 <first 8 characters of the weights file's base name>`."""
    name = f"Leela Zero {version}"
    base = re.split(r"[\\/]", weights_path)[-1] if weights_path else ""
    if weights_path:
        name += " " + base[:8]
    return name


def format_printsgf(*, komi: float, clock_sgf: str, weights_path: str, result: str,
                    options: str, date: str, setup_black: Sequence[Vertex] = (),
                    moves: Sequence[tuple[Color, Vertex]] = ()) -> str:
    """The text printsgf writes, in Leela Zero's exact layout (SGFTree::state_to_string).

    komi: KM; clock_sgf: TimeControl.to_sgf(); weights_path: the -w argument (the player name
    uses its base name's first 8 characters); result: the RE value; options: the text after
    `Leela Zero options:` (the argv, each argument preceded by a space); date: YYYY-MM-DD;
    setup_black: the black stones of the anchored start position in Leela Zero's order
    (column by column from A, each column from row 1; white setup stones are not written);
    moves: (colour, vertex) since the start position, pass as PASS.
    The `\\n\\n` that Leela Zero collapses are already collapsed here: the text is final.
    """
    head = (f"(;GM[1]FF[4]RU[Chinese]DT[{date}]SZ[19]KM[{komi:.1f}]{clock_sgf}"
            f"PB[{engine_player_name(weights_path)}]PW[Human]")
    body = ""
    if setup_black:
        head += f"HA[{len(setup_black)}]"
        body = "AB" + "".join(f"[{sgf_vertex(v)}]" for v in setup_black)
    head += f"RE[{result}]\nC[Leela Zero options:{options}]\n"
    body += "\n"
    for i, (color, v) in enumerate(moves, 1):
        body += f";{'B' if color == BLACK else 'W'}[{sgf_vertex(v)}]"
        if i % 10 == 0:
            body += "\n"
    text = head + body + ")\n"
    while "\n\n" in text:
        text = text.replace("\n\n", "\n")
    return text


__all__ = [
    "PASS", "SgfError", "SgfGame", "SgfNode", "engine_player_name", "escape_value",
    "format_game", "format_match_game", "format_printsgf",
    "games_in_text", "iter_file_games", "parse_collection", "parse_game", "plain_record",
    "read_file", "read_first_game", "read_text", "result_text", "root_property", "split_games",
    "text_winner",
]
