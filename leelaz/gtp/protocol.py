"""GTP line protocol: one input line -> Command, one reply -> text. No I/O, no game state.

Owns: Leela Zero 0.17's line preprocessing (GTP::execute), the Command value, GtpError,
and reply serialization. Imports: stdlib only.

Preprocessing, as GTP::execute does it, one character at a time:
- TAB becomes a space; other control characters (0-8, 10-31, 127; so CR and LF too) are dropped.
- ASCII letters are lower-cased, unless the raw line contains `loadsgf` (case-sensitive).
  Unlike Leela Zero, the *arguments* of the commands in KEEP_CASE (file names: loadsgf,
  printsgf, dump_training, ...) always keep their original case, so `printsgf /tmp/MyGame.sgf`
  writes MyGame.sgf, not mygame.sgf.
- Two whitespace characters in a row collapse to one (leading and trailing spaces stay).
- Empty result: no command, no reply. A result starting with `#` is a comment: no reply.
  Exactly `exit`: the engine stops with no reply.
- Id: when the first character is a digit, the digits are the id and exactly one following
  character is skipped (so `12name` is command `ame` with id 12, as in Leela Zero).

Then, unlike Leela Zero's prefix matching, the command name is the text before the first space
and is matched exactly by the engine; the remaining tokens are the arguments. A line that
starts with a space (or has only spaces) has the empty name and gets `? unknown command`, as
in Leela Zero.

Replies: `=` or `?`, the id if any, a space, the text, then `\\n\\n` (`=8 0.17\\n\\n`, `= \\n\\n`).
Newlines inside the text are sent as they are.
"""

from __future__ import annotations

import re

from dataclasses import dataclass

#: Commands whose arguments keep their case (they name files, or carry free text).
KEEP_CASE = frozenset({"loadsgf", "printsgf", "dump_training", "dump_supervised", "dump_debug",
                       "save_training", "load_training", "kgs-chat"})

_DROPPED = {c for c in range(32) if c != 9} | {127}
_FILTER = {**{c: None for c in _DROPPED}, 9: " "}
_WHITESPACE_RUN = re.compile(r"(\s)\s+")  # \s is str.isspace() for str patterns
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


class GtpError(Exception):
    """Raised by a handler: the reply is `? message`. The message is the canonical text."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Command:
    """One parsed command line.

    id: the numeric id as text without leading zeros (`"7"`), or None. Kept as text so a
    thousand-digit id cannot overflow anything; Leela Zero prints it as an integer.
    name: the command word, lower-cased. args: the argument tokens (lower-cased unless the
    command is in KEEP_CASE). text: everything after the name with its case kept (for
    commands that take free text).
    """

    id: str | None
    name: str
    args: tuple[str, ...] = ()
    text: str = ""


#: Returned by parse_line for a line that is exactly `exit`.
EXIT = Command(None, "exit")


def clean(raw: str) -> str:
    """Leela Zero's character filter, without the lower-casing: a tab becomes a space,
    control characters are dropped, and of consecutive whitespace only the first is kept.

    Linear and in C: after translate, ASCII text has no whitespace but spaces, whose runs
    are halved by str.replace until none is left (a few passes even for a long run);
    other text (unicode spaces) goes through one regular expression. Per character in
    Python this cost seconds per megabyte of a long line."""
    text = raw.translate(_FILTER)
    if not text.isascii():
        return _WHITESPACE_RUN.sub(r"\1", text)
    while "  " in text:
        text = text.replace("  ", " ")
    return text


def ascii_lower(text: str) -> str:
    """Lower-case A-Z only, like std::tolower in the C locale (unicode is left alone)."""
    return text.translate(_ASCII_LOWER)


def _split_id(line: str) -> tuple[str | None, str]:
    if not line or not line[0].isdigit() or not line[0].isascii():
        return None, line
    end = 0
    while end < len(line) and line[end].isascii() and line[end].isdigit():
        end += 1
    ident = line[:end].lstrip("0") or "0"
    return ident, line[end + 1:]


def parse_line(raw: str) -> Command | None:
    """One raw input line -> Command; None for a line with no reply (empty or comment);
    EXIT for `exit`."""
    kept = clean(raw)
    lowered = ascii_lower(kept)
    if lowered == "":
        return None
    if lowered == "exit":
        return EXIT
    if lowered.startswith("#"):
        return None
    ident, rest = _split_id(kept)
    name, _, text = rest.partition(" ")
    name = ascii_lower(name)
    text = text.strip()
    args = tuple(text.split())
    if name not in KEEP_CASE:
        args = tuple(ascii_lower(a) for a in args)
    return Command(ident, name, args, text)


def reply_head(ok: bool, ident: str | None) -> str:
    """`=`/`?` plus the id: the start of every reply (streamed replies send it alone)."""
    return ("=" if ok else "?") + (ident or "")


def serialize(ok: bool, ident: str | None, text: str) -> str:
    """A complete reply: `=id text\\n\\n` or `?id text\\n\\n`."""
    return f"{reply_head(ok, ident)} {text}\n\n"
