"""SGF parser and printsgf layout: real games from the tygem collections checked against an
independent regular-expression reading, the parser's tolerance and its errors on malformed
text, splitting collections as Leela Zero does, files plain and gzip."""

from __future__ import annotations

import gzip
import re
from itertools import islice

import pytest

from leelaz.game import sgf
from leelaz.game.coords import BLACK, PASS, WHITE, parse_gtp_vertex
from leelaz.game.sgf import SgfError, format_printsgf, parse_game, split_games

#: The moves of a plain one-line game, read with nothing but a regular expression (no escapes
#: and no variations in the tygem records, which the test checks first).
_MOVE = re.compile(r";\s*([BW])\[([a-z]{0,2})\]")


def _sample_lines(tygem_dir, files=2, per_file=150):
    paths = sorted(tygem_dir.glob("*.sgf.gz"))
    assert paths, f"no collections in {tygem_dir}"
    picked = [paths[0], paths[len(paths) // 2], paths[-1]][:files]
    lines = []
    for path in picked:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines += [(path.name, ln.strip()) for ln in islice(f, per_file) if ln.strip()]
    return lines


# ---- real games ---------------------------------------------------------------------------

def test_tygem_sample_moves_match_regex_reading(tygem_dir):
    lines = _sample_lines(tygem_dir)
    assert len(lines) >= 200
    for name, line in lines:
        assert "\\" not in line and line.count("(;") == 1, "sample is not plain"
        game = parse_game(line, name)
        root = game.root
        assert root.get("GM") == "1" and root.get("SZ") == "19"
        assert root.get("RE") is not None
        got = [(n.move()[0], n.move()[1]) for n in game.mainline()[1:]]
        expected = [(BLACK if c == "B" else WHITE, p) for c, p in _MOVE.findall(line)]
        assert got == expected, f"{name}: {root.get('GN')}"


def test_fast_and_general_paths_agree_on_real_games(tygem_dir):
    for name, line in _sample_lines(tygem_dir, files=1, per_file=60):
        general = sgf._parse_general(line, 0, name)
        for path in (sgf._parse_fast, sgf._parse_moves_run):
            fast = path(line, 0, name)
            assert _tree(fast[0].root) == _tree(general[0].root)
            assert fast[1:] == general[1:] == (True, True)


@pytest.mark.parametrize("text", [
    "(;GM[1]C[x;B[pd];W[dd])",            # a move run that starts inside a value
    "(;GM[1]C[x;B[pd]];W[dd])",
    "(;GM[1];C[hi];B[pd];W[dd])\n",
    "(;GM[1](;B[aa];W[bb])(;B[cc];W[dd]))",
    "(;GM[1];B[aa](;W[bb])(;W[cc];B[dd]))",
    "(;GM[1];B[aa];W[bb]",                # no closing paren
    "(;GM[1]PB[a(b)];B[aa];W[bb])  ",
    "(;B[aa];W[bb])",                      # a move in the root node
    "(;B[aa])",
])
def test_all_paths_agree_on_awkward_texts(text):
    def result(parse):
        try:
            got = parse(text, 0, "t")
        except (SgfError, sgf._Bad):
            return "error"
        return None if got is None else (_tree(got[0].root), got[1], got[2])
    general = result(sgf._parse_general)
    assert result(lambda *a: sgf._parse(text, "t")) == general
    fast = result(sgf._parse_fast)
    assert fast in (general, "error")     # the fast path may hand a text on, never differ
    run = result(sgf._parse_moves_run)
    assert run in (general, "error", None)


def test_read_file_on_a_collection(tygem_dir, tmp_path):
    lines = [ln for _, ln in _sample_lines(tygem_dir, files=1, per_file=40)]
    plain = tmp_path / "games.sgf.gz"          # plain text despite the name
    plain.write_text("\n".join(lines) + "\n")
    packed = tmp_path / "games.sgf"             # gzip despite the name
    packed.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    a, b = sgf.read_file(plain), sgf.read_file(packed)
    assert len(a) == len(b) == len(lines)
    assert [_tree(g.root) for g in a] == [_tree(g.root) for g in b]
    assert a[3].source == f"{plain}: game 4"


def _tree(node):
    return (node.props, [_tree(c) for c in node.children])


# ---- the tree -----------------------------------------------------------------------------

def test_properties_values_escapes_whitespace():
    game = parse_game("(;GM[1]FF[4]AB[dd][pd]\n  [dp] C[a \\] b (c) \\\\ [d\\]]\n;B[qq] ;W[])")
    root = game.root
    assert root.values("AB") == ["dd", "pd", "dp"]
    assert root.get("C") == "a ] b (c) \\ [d]"
    assert root.get("XX") is None and root.values("XX") == [] and "AB" in root
    moves = [n.move() for n in game.mainline()[1:]]
    assert moves == [(BLACK, "qq"), (WHITE, "")]


def test_soft_line_break_is_removed():
    assert parse_game("(;C[one\\\ntwo])").root.get("C") == "onetwo"


def test_ff3_lower_case_names():
    game = parse_game("(;GaMe[1]SiZe[19]AddBlack[aa][bb];Black[cc];White[dd];b[ee])")
    assert game.root.props == {"GM": ["1"], "SZ": ["19"], "AB": ["aa", "bb"]}
    nodes = game.mainline()
    assert nodes[1].props == {"B": ["cc"]} and nodes[2].props == {"W": ["dd"]}
    assert nodes[3].props == {}          # no upper-case letter: the property is dropped


def test_variations_main_line_is_first_child():
    game = parse_game("(;GM[1];B[aa](;W[bb];B[cc](;W[dd])(;W[ee]))(;W[ff]))")
    assert [n.move()[1] for n in game.mainline()[1:]] == ["aa", "bb", "cc", "dd"]
    first = game.root.children[0]
    assert [c.get("W") for c in first.children] == ["bb", "ff"]
    assert [c.get("W") for c in first.children[0].children[0].children] == ["dd", "ee"]


def test_b_wins_over_w_in_a_broken_node():
    assert parse_game("(;W[aa]B[bb])").root.move() == (BLACK, "bb")


def test_missing_closing_parentheses_are_tolerated():
    game = parse_game("(;GM[1];B[pd](;W[dd];B[pp]")
    assert [n.move()[1] for n in game.mainline()[1:]] == ["pd", "dd", "pp"]


def test_text_around_the_game_is_ignored():
    game = parse_game("\ufeffsome header\n(;GM[1];B[pd])\n(;GM[1];B[aa])")
    assert game.mainline()[1].get("B") == "pd"


# ---- errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("text,words", [
    ("(;GM[1]SZ[19];B[pd];W[d", "unterminated property value at offset 21"),
    ("hello world", "no game"),
    ("", "no game"),
    ("(;GM[1];B[pd]%;W[dd])", "unexpected '%' at offset 13"),
    ("(;GM[1];B;W[aa])", "property B has no value"),
    ("(;GM[1];B", "property B has no value (the text ends)"),
    ("()", "no node in the game"),
    ("(;GM[1];B[pd]]", "unexpected ']'"),
    ("([aa];B[pd])", "value without a property name"),
    ("(B[aa];B[pd])", "property 'B' outside a node"),
    ("(;GM[1]\n;B[pd]\n;W[dd] ~)", "line 3, offset 22"),
])
def test_malformed_text_gives_clear_errors(text, words):
    with pytest.raises(SgfError) as err:
        parse_game(text, "bad.sgf")
    message = str(err.value)
    assert message.startswith("bad.sgf: ") and words in message, message


def test_file_errors_name_the_file_and_game(tmp_path):
    path = tmp_path / "two.sgf"
    path.write_text("(;GM[1];B[pd])\n(;GM[1];W[d)\n")
    with pytest.raises(SgfError, match=r"two\.sgf: game 2: unterminated"):
        sgf.read_file(path)
    items = sgf.iter_file_games(path)
    assert not isinstance(items[0], SgfError) and isinstance(items[1], SgfError)
    with pytest.raises(SgfError, match=r"missing\.sgf: cannot read"):
        sgf.read_file(tmp_path / "missing.sgf")
    (tmp_path / "empty.sgf").write_text("no games here\n")
    with pytest.raises(SgfError, match=r"empty\.sgf: no SGF game found"):
        sgf.read_file(tmp_path / "empty.sgf")
    (tmp_path / "broken.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(SgfError, match=r"broken\.gz: cannot read"):
        sgf.read_file(tmp_path / "broken.gz")


def test_latin1_file_still_parses(tmp_path):
    path = tmp_path / "old.sgf"
    path.write_bytes("(;GM[1]PB[M\u00fcller];B[pd])".encode("latin-1"))
    assert sgf.read_file(path)[0].root.get("PB") == "M\u00fcller"


# ---- splitting collections ------------------------------------------------------------------

def test_split_games_like_leela_zero():
    text = "junk (;GM[1]C[a (paren) and \\] escaped (];B[aa])\n\n(;GM[1];W[bb])trailing"
    assert split_games(text) == ["(;GM[1]C[a (paren) and \\] escaped (];B[aa])",
                                 "(;GM[1];W[bb])"]
    # an escaped ')' inside a value does not end the game
    assert split_games("(;C[x\\)];B[aa])(;B[bb])") == ["(;C[x\\)];B[aa])", "(;B[bb])"]
    # no complete game: the whole text from the first '(' (a missing closing paren)
    assert split_games("header (;GM[1];B[aa]") == ["(;GM[1];B[aa]"]
    # a truncated game after complete ones is dropped, as Leela Zero drops it
    assert split_games("(;B[aa])(;B[bb]") == ["(;B[aa])"]
    assert split_games("no game") == []


def test_collection_lines_that_are_not_whole_games_fall_back_to_split():
    text = "(;GM[1]\n(;B[aa])\n(;B[bb]))\n"          # one game with variations over lines
    games = sgf.parse_collection(text)
    assert len(games) == 1 and len(games[0].root.children) == 2
    text = "(;GM[1];B[aa])(;GM[1];B[bb])\n(;GM[1];B[cc])\n"   # two games on one line
    assert [g.mainline()[1].get("B") for g in sgf.parse_collection(text)] == ["aa", "bb", "cc"]


# ---- printsgf layout ------------------------------------------------------------------------

# Printed by /usr/games/leelaz 0.17 (`-w /tmp/net.txt`, options shortened) after:
# fixed_handicap 3, play w q4, play b d10, play w pass, play b resign.
BINARY_HANDICAP_RESIGN = (
    "(;GM[1]FF[4]RU[Chinese]DT[2026-11-22]SZ[19]KM[7.5]TM[3600]BL[3600]WL[3600]"
    "PB[Leela Zero 0.17 abcdefgh]PW[Human]HA[3]RE[W+Resign]\n"
    "C[Leela Zero options: -w /tmp/w/abcdefghijklmnop.txt]\n"
    "AB[dp][dd][pd]\n"
    ";W[pp];B[dj];W[tt])\n")
# ... and after ten moves q16 d4 q4 d16 k10 c3 r3 c17 r17 pass, then a black pass.
BINARY_ELEVEN_MOVES = (
    "(;GM[1]FF[4]RU[Chinese]DT[2026-11-22]SZ[19]KM[7.5]TM[3600]BL[3600]WL[3600]"
    "PB[Leela Zero 0.17 net.txt]PW[Human]RE[W+6.5]\n"
    "C[Leela Zero options: -w /tmp/net.txt]\n"
    ";B[pd];W[dp];B[pp];W[dd];B[jj];W[cq];B[qq];W[cc];B[qc];W[tt]\n"
    ";B[tt])\n")


def _v(names):
    return [PASS if n == "pass" else parse_gtp_vertex(n) for n in names.split()]


def test_format_printsgf_handicap_and_resign():
    moves = list(zip([WHITE, BLACK, WHITE], _v("q4 d10 pass")))
    text = format_printsgf(komi=7.5, clock_sgf="TM[3600]BL[3600]WL[3600]",
                           weights_path="/tmp/w/abcdefghijklmnop.txt", result="W+Resign",
                           options=" -w /tmp/w/abcdefghijklmnop.txt", date="2026-11-22",
                           setup_black=_v("d4 d16 q16"), moves=moves)
    assert text == BINARY_HANDICAP_RESIGN


def test_format_printsgf_newline_every_ten_moves():
    names = _v("q16 d4 q4 d16 k10 c3 r3 c17 r17 pass pass")
    moves = [(i % 2 == 1 and WHITE or BLACK, v) for i, v in enumerate(names)]
    text = format_printsgf(komi=7.5, clock_sgf="TM[3600]BL[3600]WL[3600]",
                           weights_path="/tmp/net.txt", result="W+6.5",
                           options=" -w /tmp/net.txt", date="2026-11-22", moves=moves)
    assert text == BINARY_ELEVEN_MOVES
    # exactly ten moves: the newline after the tenth, then ')' (no empty line)
    text10 = format_printsgf(komi=7.5, clock_sgf="", weights_path="n", result="0", options="",
                             date="d", moves=moves[:10])
    assert text10.endswith(";W[tt]\n)\n") and "\n\n" not in text10


def test_result_text_and_player_name():
    assert sgf.result_text(3.5) == "B+3.5"
    assert sgf.result_text(-0.5) == "W+0.5"
    assert sgf.result_text(0.0) == "0"
    assert sgf.engine_player_name("C:\\nets\\0123456789.gz") == "Leela Zero 0.17 01234567"
    assert sgf.engine_player_name("") == "Leela Zero 0.17"


def test_printsgf_text_parses_back():
    moves = [(BLACK, v) if i % 2 == 0 else (WHITE, v)
             for i, v in enumerate(_v("q16 d4 q4 d16 k10 c3 r3 c17 r17 pass a1 t19 pass"))]
    text = format_printsgf(komi=0.5, clock_sgf="TM[60]OT[5/30 Canadian]OB[3]BL[30]WL[60]",
                           weights_path="x", result="B+Resign", options=" -x", date="d",
                           setup_black=_v("d4 q16"), moves=moves)
    game = parse_game(text)
    root = game.root
    assert root.get("KM") == "0.5" and root.get("HA") == "2" and root.get("OB") == "3"
    assert root.values("AB") == ["dp", "pd"] and root.get("RE") == "B+Resign"
    assert root.get("C") == "Leela Zero options: -x"
    back = [n.move() for n in game.mainline()[1:]]
    from leelaz.game.coords import parse_sgf_vertex
    assert [(c, parse_sgf_vertex(p)) for c, p in back] == moves


def test_whole_asks_for_exactly_one_complete_game():
    assert parse_game("(;GM[1];B[aa])  \n", whole=True).mainline()[1].get("B") == "aa"
    with pytest.raises(SgfError, match="a '\\)' is missing"):
        parse_game("(;GM[1];B[aa]", "x", whole=True)
    with pytest.raises(SgfError, match="text after the end of the game"):
        parse_game("(;GM[1];B[aa])(;GM[1])", "x", whole=True)
