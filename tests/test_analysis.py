"""lz-analyze tag grammar and the `info move` line, against UCTSearch::output_analysis and
lines printed by the Leela Zero 0.17 binary."""

from __future__ import annotations

import re
import subprocess

import pytest

from leelaz.game.coords import BLACK, PASS, RESIGN, WHITE, parse_gtp_vertex
from leelaz.gtp.analysis import AnalyzeTags, format_info_line, parse_analyze_tags
from leelaz.search.result import MoveInfo, SearchResult


def v(text):
    return parse_gtp_vertex(text)


def tags(text, to_move=BLACK, move_num=0) -> AnalyzeTags:
    return parse_analyze_tags(text.split(), to_move, move_num)


# ------------------------------------------------------------------ grammar
def test_defaults_are_the_side_to_move_and_no_interval():
    t = tags("", to_move=WHITE)
    assert (t.who, t.interval_cs, t.min_moves, t.has_move_restrictions) == (WHITE, 0, 0, False)


@pytest.mark.parametrize("text,who,interval,minmoves", [
    ("50", BLACK, 50, 0), ("b 50", BLACK, 50, 0), ("w", WHITE, 0, 0), ("white 10", WHITE, 10, 0),
    ("interval 25 black", BLACK, 25, 0), ("10 minmoves 5 w", WHITE, 10, 5),
    ("minmoves 3 interval 7", BLACK, 7, 3)])
def test_tokens_in_any_order(text, who, interval, minmoves):
    t = tags(text)
    assert (t.who, t.interval_cs, t.min_moves) == (who, interval, minmoves)


@pytest.mark.parametrize("text", [
    "foo", "b 10 x", "interval", "interval x", "minmoves", "10x", "avoid b d4",
    "avoid b d4 0", "avoid x d4 1", "avoid b z99 1", "avoid b d4:e 1", "avoid b d4e5:f6 1",
    "avoid b pass:d4 1", "allow w d4 1 avoid w q16 1", "avoid w q16 1 allow w d4 1",
    "avoid b d4,,q16 1"])
def test_bad_tags_are_rejected(text):
    with pytest.raises(ValueError, match="cannot parse analyze tags"):
        tags(text)


def test_allow_with_avoid_of_pass_is_fine_and_colours_are_separate():
    t = tags("allow b d4 1 avoid b pass 1 avoid w q16 1")
    assert t.has_move_restrictions


def test_rectangles_expand_to_every_point():
    t = tags("avoid b a1:c2,q16 3", move_num=10)
    avoided = sorted(mv for _, mv, _ in t.avoid)
    expected = sorted(v(p) for p in ("a1", "b1", "c1", "a2", "b2", "c2", "q16"))
    assert avoided == expected
    # UNTIL 3 at move 10: moves 10, 11 and 12 are covered.
    assert {until for _, _, until in t.avoid} == {12}
    # Reversed corners and a two-digit row (colon at index 3).
    t2 = tags("avoid w c10:a9 1")
    assert sorted(mv for _, mv, _ in t2.avoid) == sorted(
        v(p) for p in ("a9", "b9", "c9", "a10", "b10", "c10"))


def test_avoid_and_allow_semantics():
    t = tags("avoid b d4,pass 2 allow w q16,r16 1", move_num=5)
    assert not t.is_allowed(BLACK, v("d4"), 5)
    assert not t.is_allowed(BLACK, v("d4"), 6)
    assert t.is_allowed(BLACK, v("d4"), 7)  # expired
    assert not t.is_allowed(BLACK, PASS, 5)
    assert t.is_allowed(WHITE, v("d4"), 5) is False  # White's allow list is in force
    assert t.is_allowed(WHITE, v("q16"), 5)
    assert t.is_allowed(WHITE, PASS, 5) and t.is_allowed(WHITE, RESIGN, 5)
    assert t.is_allowed(WHITE, v("d4"), 6)  # allow expired
    assert t.is_allowed(BLACK, v("q16"), 5)


# ------------------------------------------------------------------ info lines
def info(move, visits, winrate, prior, lcb, pv=None) -> MoveInfo:
    return MoveInfo(move=v(move), visits=visits, winrate=winrate, prior=prior, lcb=lcb,
                    pv=[v(m) for m in (pv or [move])])


def test_info_line_format_and_integer_truncation():
    result = SearchResult(color=BLACK, move_num=0, children=[
        info("q16", 80, 0.44056, 0.18289, 0.43799, ["q16", "d4", "c3"]),
        info("d4", 5, 0.5, 0.1, -1e6 + 1)])
    line = format_info_line(result)
    assert line == ("info move Q16 visits 80 winrate 4405 prior 1828 lcb 4379 order 0 pv Q16 D4 C3"
                    " info move D4 visits 5 winrate 5000 prior 1000 lcb 0 order 1 pv D4\n")


def test_unvisited_moves_only_up_to_minmoves_in_child_order():
    children = [info("d4", 0, 0.0, 0.3, -1e6), info("q16", 3, 0.6, 0.2, 0.1),
                info("c3", 0, 0.0, 0.1, -1e6), info("r4", 0, 0.0, 0.05, -1e6)]
    result = SearchResult(color=BLACK, move_num=0, children=children)
    assert format_info_line(result).count("info move") == 1
    line = format_info_line(result, min_moves=3)
    assert re.findall(r"info move (\S+)", line) == ["Q16", "D4", "C3"]
    assert " pv D4 info" in line and line.endswith("pv C3\n")


def test_sorting_lcb_only_when_both_have_enough_visits():
    # max visits 100: 10% = 10. A (50 visits, LCB .40) vs B (30 visits, LCB .45): LCB decides.
    # C has 8 visits (< 10% of max): ordered by visits after them. D/E tie on visits: winrate.
    children = [info("a1", 50, 0.5, 0.1, 0.40), info("b1", 30, 0.5, 0.1, 0.45),
                info("c1", 8, 0.9, 0.1, 0.80), info("d1", 100, 0.3, 0.1, 0.20),
                info("e1", 8, 0.95, 0.1, 0.10)]
    line = format_info_line(SearchResult(color=BLACK, move_num=0, children=children))
    assert re.findall(r"info move (\S+)", line) == ["B1", "A1", "D1", "E1", "C1"]
    assert re.findall(r"order (\d+)", line) == ["0", "1", "2", "3", "4"]


def test_empty_result_prints_nothing():
    assert format_info_line(SearchResult(color=BLACK, move_num=0)) == ""


# ------------------------------------------------------------------ against the binary
INFO_RE = re.compile(r"^info move (\S+) visits (\d+) winrate (\d+) prior (\d+) lcb (\d+) "
                     r"order (\d+) pv ((?:\S+ )*\S+)$")


def split_entries(line: str) -> list[str]:
    return ["info" + part.rstrip(" ") for part in line.split("info")[1:]]


def test_binary_info_line_has_the_same_shape(lz_binary, random_weights, tmp_path):
    """The reference's line parses with our format's grammar, entry by entry, and ours does
    too; both join entries with one space and end without one."""
    net = random_weights(1, 8)
    proc = subprocess.run(
        [lz_binary, "--cpu-only", "-g", "-t", "1", "-w", net, "-v", "40", "-s", "1",
         "--noponder"], input="lz-analyze 1 minmoves 3\nquit\n", capture_output=True,
        text=True, timeout=120)
    lines = [ln for ln in proc.stdout.split("\n") if ln.startswith("info ")]
    assert lines, proc.stdout
    reference = lines[-1]
    assert not reference.endswith(" ") and "  " not in reference
    for entry in split_entries(reference):
        assert INFO_RE.match(entry), entry
    ours = format_info_line(SearchResult(color=BLACK, move_num=0, children=[
        info("a5", 26, 0.5087, 0.0117, 0.4868, ["a5", "s5"]), info("m17", 1, 0.4776, 0.009, -1e6)]))
    assert ours.endswith("\n") and not ours.endswith(" \n") and "  " not in ours
    for entry in split_entries(ours.rstrip("\n")):
        assert INFO_RE.match(entry), entry
