"""Line preprocessing and reply format (GTP::execute), checked against the binary's
behaviour as recorded there, plus our one deliberate difference: file names keep their case."""

from __future__ import annotations

import pytest

from leelaz.gtp.protocol import EXIT, Command, clean, parse_line, serialize


@pytest.mark.parametrize("raw,expected", [
    ("name\n", Command(None, "name")),
    ("name\r\n", Command(None, "name")),
    ("NAME", Command(None, "name")),
    ("8 version", Command("8", "version")),
    ("007 version", Command("7", "version")),
    ("0 version", Command("0", "version")),
    ("play B D4", Command(None, "play", ("b", "d4"), "B D4")),
    ("play\tb\t\td4", Command(None, "play", ("b", "d4"), "b d4")),
    ("pl\x01ay b\x7f d4", Command(None, "play", ("b", "d4"), "b d4")),
    ("11  name", Command("11", "name")),      # double space collapsed before the id is read
    ("12name", Command("12", "ame")),         # one character after the id is skipped
    ("list_commands foo", Command(None, "list_commands", ("foo",), "foo")),
])
def test_parse(raw, expected):
    assert parse_line(raw) == expected


@pytest.mark.parametrize("raw", ["", "\n", "\r\n", "\x01\x02", "# comment", "#", "#play b d4"])
def test_no_reply_lines(raw):
    assert parse_line(raw) is None


def test_exit_only_when_exact():
    assert parse_line("exit") is EXIT
    assert parse_line("EXIT\n") is EXIT
    assert parse_line("7 exit") == Command("7", "exit")
    assert parse_line("exit now").name == "exit" and parse_line("exit now") is not EXIT


def test_comment_after_id_is_a_command():
    # LZ: `5 #x` -> `?5 unknown command` (comments count only at the start of a line)
    assert parse_line("5 #x") == Command("5", "#x")


def test_whitespace_line_is_an_empty_command():
    assert parse_line("   ") == Command(None, "")
    assert parse_line("\t") == Command(None, "")
    assert parse_line("\t\t") == Command(None, "")


def test_leading_space_hides_the_id():
    # LZ answers ` 10 name` and `\tname` with `? unknown command`: the name is empty.
    assert parse_line(" 10 name") == Command(None, "", ("10", "name"), "10 name")
    assert parse_line("\tname").name == ""


def test_file_names_keep_their_case():
    assert parse_line("printsgf /tmp/MyGame.sgf").args == ("/tmp/MyGame.sgf",)
    assert parse_line("LOADSGF /x/Y.sgf 12").args == ("/x/Y.sgf", "12")
    assert parse_line("3 dump_training B /Tmp/Out").args == ("B", "/Tmp/Out")
    assert parse_line("play B D4 loadsgf").args == ("b", "d4", "loadsgf")


def test_only_ascii_is_lower_cased():
    # std::tolower in the C locale leaves non-ASCII alone
    assert parse_line("play Ä Ö").args == ("Ä", "Ö")


def test_huge_id_is_kept_as_digits():
    ident = "9" * 5000
    assert parse_line(ident + " name") == Command(ident, "name")


def test_clean_collapses_any_whitespace_run():
    assert clean("a \t b\r\n") == "a b"
    assert clean(" a ") == " a "


@pytest.mark.parametrize("ok,ident,text,wire", [
    (True, None, "", "= \n\n"),
    (True, "8", "0.17", "=8 0.17\n\n"),
    (False, None, "illegal move", "? illegal move\n\n"),
    (False, "7", "unknown command", "?7 unknown command\n\n"),
    (True, None, "a\nb", "= a\nb\n\n"),
])
def test_serialize(ok, ident, text, wire):
    assert serialize(ok, ident, text) == wire
