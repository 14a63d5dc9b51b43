"""Real clients drive the engine as a subprocess: Sabaki through its own GTP library, and a
session that talks and parses the way Lizzie 0.7.4 does (Sabaki's enginesyncer.js; Leelaz.java).

- Sabaki: tests/clients/sabaki_session.js runs @sabaki/gtp's Controller and
  ControllerStateTracker against `python -m leelaz` (start-up burst, pipelined sync with
  undo, lz-analyze B 50 parsed by Sabaki's rules and aborted by protocol_version,
  lz-genmove_analyze's play line, quit). scripts/install_test_deps.sh installs the library
  with npm; without it the test is skipped, and fails with LEELAZ_STRICT_TESTS=1 (CI).
- Lizzie: numbered commands, stderr merged into stdout (Lizzie's redirectErrorStream), every
  `=`/`?` line's id read with Java's Integer.parseInt, `info` lines read as MoveData.fromInfo
  does (Integer.parseInt on the numbers), ` -> ` lines matched against its summary pattern,
  `lz-analyze 10` with no colour stopped by `name`, avoid tags, genmove under
  `time_settings 0 2 1`, lz-genmove_analyze's play line.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import need

from leelaz.gtp.client import GtpClient

CLIENTS = Path(__file__).resolve().parent / "clients"
ENGINE = [sys.executable, "-m", "leelaz"]
JAVA_INT = re.compile(r"[+-]?\d+")
#: Lizzie's MoveData.fromSummary patterns (LZ 0.17 with LCB first, then 0.15/0.16), used
#: with Matcher.matches() on the trimmed line.
LIZZIE_SUMMARY = (
    re.compile(r" *(\w\d*) -> *(\d+) \(V: ([^%)]+)%\) \(LCB: ([^%)]+)%\) \([^\)]+\) "
               r"PV: (.+).*"),
    re.compile(r" *(\w\d*) -> *(\d+) \(V: ([^%)]+)%\) \([^\)]+\) PV: (.+).*"))


#: The Debian binary (an assert build: NDEBUG unset) prints this at tree reuse, and so do we;
#: Lizzie would read it as a summary line while thinking and throw. Release builds of LZ 0.17
#: do not print it. Tolerated here as the one known exception (see MoveData.fromSummary above).


# ---- Sabaki ---------------------------------------------------------------------------------

def test_sabaki_session(random_weights):
    need("Node.js", shutil.which("node") is not None, "sudo apt-get install nodejs npm")
    need("Sabaki's GTP library", (CLIENTS / "node_modules" / "@sabaki" / "gtp").is_dir(),
         "cd tests/clients && npm install")
    net = random_weights(1, 8)
    proc = subprocess.run(
        ["node", "sabaki_session.js", *ENGINE, "-g", "--cpu-only", "--lagbuffer", "0", "-w",
         net], cwd=CLIENTS, capture_output=True, text=True, timeout=180)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no report from sabaki_session.js: {proc.stdout!r} {proc.stderr[-2000:]!r}")
    failed = [f"{c['name']}: {c['detail']}" for c in report["checks"] if not c["ok"]]
    assert not failed, "\n".join(failed)
    assert report["ok"] and proc.returncode == 0
    assert len(report["checks"]) >= 20


# ---- Lizzie ---------------------------------------------------------------------------------

def java_int(text: str) -> int:
    """Integer.parseInt: a sign and digits, within 32 bits, else NumberFormatException."""
    if not JAVA_INT.fullmatch(text) or not -2**31 <= int(text) < 2**31:
        raise ValueError(f"NumberFormatException: {text!r}")
    return int(text)


def lizzie_move_data(piece: str) -> dict:
    """MoveData.fromInfo: split on single spaces, key/value pairs until `pv`, the rest is the
    variation; visits, winrate (and lcb, prior in later versions) through Integer.parseInt."""
    data = piece.strip().split(" ")
    move = {"pv": []}
    i = 0
    while i < len(data):
        key = data[i]
        if key == "pv":
            move["pv"] = data[i + 1:]
            break
        value = data[i + 1]  # ArrayIndexOutOfBoundsException in Java when missing
        if key == "move":
            move["move"] = value
        elif key in ("visits", "winrate", "lcb", "prior", "order"):
            move[key] = java_int(value)
        i += 2
    return move


def lizzie_info(line: str) -> list[dict]:
    """Leelaz.parseInfo(line.substring(5)): split on " info "."""
    return [lizzie_move_data(v) for v in line[5:].split(" info ") if v.strip()]


class Lizzie:
    """The engine as Lizzie runs it: merged stdout/stderr, numbered commands, a reader that
    checks every line the way Leelaz.parseLine would read it."""

    def __init__(self, argv: list[str]):
        self.problems: list[str] = []
        self.summaries: list[re.Match] = []
        self.client = GtpClient(argv, stderr="stdout", numbered=True, on_line=self._check)

    @property
    def number(self) -> int:
        """The id of the last command sent."""
        return self.client.number

    def send(self, command: str) -> int:
        return self.client.send(command)

    def next_line(self, timeout: float = 60) -> str:
        return self.client.next_line(timeout)

    def _check(self, line: str) -> None:
        """What would throw or mislead in Lizzie's parseLine."""
        text = line.rstrip("\n")
        if text.startswith("Tuning"):
            self.problems.append(f"a line starting with Tuning: {text!r}")
        if text.startswith("info"):
            try:
                lizzie_info(text)
            except (ValueError, IndexError) as exc:
                self.problems.append(f"info line Lizzie cannot parse ({exc}): {text[:200]!r}")
        elif " -> " in text:
            m = LIZZIE_SUMMARY[0].fullmatch(text.strip()) or \
                LIZZIE_SUMMARY[1].fullmatch(text.strip())
            if m is None:
                self.problems.append(f"' -> ' line not in dump_stats format: {text!r}")
            else:
                float(m.group(3))  # Double.parseDouble
                self.summaries.append(m)
        elif text.startswith(("=", "?")):
            try:
                java_int(text.strip().split(" ")[0][1:].strip())
            except ValueError:
                self.problems.append(f"reply line without a numeric id: {text!r}")

    def reply(self, number: int, timeout: float = 60) -> tuple[str, list[str]]:
        """Lines up to the reply `=number ...` / `?number ...` (the lines before it are
        returned too: info lines, stderr); then the rest of the reply to its blank line."""
        answer = self.client.read_reply(None, timeout)
        head = answer.lines[0].strip()  # Lizzie trims: `=3 ` (LZ's empty reply) reads as `=3`
        assert head.split(" ")[0][1:] == str(number), (head, number)
        return "\n".join([head] + answer.lines[1:]), answer.before

    def ask(self, command: str, timeout: float = 60) -> str:
        return self.reply(self.send(command), timeout)[0]

    def analysis(self, command: str, until_infos: int, stop: str = "name") -> list[list[dict]]:
        """Start an analysis, read until `until_infos` info lines arrived, stop it with `stop`;
        returns the parsed info lines. The analysis reply must be `=id` then info lines then
        a blank line, before the stop command's reply."""
        number = self.send(command)
        head = self.next_line().rstrip("\n")
        while not head.startswith(("=", "?")):  # stderr lines of the start (NN eval, ...)
            head = self.next_line().rstrip("\n")
        assert head == f"={number}", head
        infos: list[list[dict]] = []
        while len(infos) < until_infos:
            line = self.next_line()
            if line.startswith("info"):
                infos.append(lizzie_info(line.rstrip("\n")))
        stop_number = self.send(stop)
        while True:  # more info lines may come until the engine reads the stop command
            line = self.next_line(30)
            if line == "\n":
                break
            if line.startswith("info"):
                infos.append(lizzie_info(line.rstrip("\n")))
            else:
                assert not line.startswith(("=", "?")), line
        self.stop_reply = self.reply(stop_number)[0]
        return infos

    def close(self) -> int:
        return self.client.close(timeout=10)


@pytest.fixture
def lizzie(random_weights):
    # Lizzie's default engine command is `leelaz --gtp --lagbuffer 0 --weights FILE`.
    client = Lizzie([*ENGINE, "--gtp", "--lagbuffer", "0", "--cpu-only", "--weights",
                     random_weights(1, 8)])
    yield client
    client.close()


def _moves(infos: list[list[dict]]) -> set[str]:
    return {m["move"] for line in infos for m in line}


def test_lizzie_session(lizzie):
    assert lizzie.ask("name") == "=1 Leela Zero"
    version = lizzie.ask("version").split(" ")[1]
    assert java_int(version.split(".")[1]) >= 15  # Lizzie's version check
    assert lizzie.ask("boardsize 19") == "=3"
    assert lizzie.ask("komi 7.5") == "=4"
    for command in ("play B Q16", "play W D4", "play B Q3", "undo", "play B R4"):
        assert lizzie.ask(command) == f"={lizzie.number}"

    # Pondering: no colour, 10 cs, stopped by `name`; White is to move.
    infos = lizzie.analysis("lz-analyze 10", until_infos=4)
    assert lizzie.stop_reply == f"={lizzie.number} Leela Zero"
    last = infos[-1]
    assert last and all(m["visits"] > 0 and 0 <= m["winrate"] <= 10000 for m in last)
    assert not _moves(infos) & {"Q16", "D4", "R4"}  # occupied points
    assert sum(m["visits"] for m in infos[-1]) > sum(m["visits"] for m in infos[0])

    # Lizzie's avoid tags: the favourite moves of the first analysis never come back.
    best = sorted(last, key=lambda m: -m["visits"])[:4]
    avoid = ",".join(m["move"] for m in best)
    again = lizzie.analysis(f"lz-analyze 10 avoid w {avoid} 30 avoid b {avoid} 30",
                            until_infos=3)
    assert again and not _moves(again) & {m["move"] for m in best}

    # Playing against the engine: time_settings 0 2 1, genmove; the ` -> ` lines on the merged
    # stderr are what Lizzie shows while the engine thinks.
    assert lizzie.ask("time_settings 0 2 1") == f"={lizzie.number}"
    started = time.monotonic()
    reply, _ = lizzie.reply(lizzie.send("genmove w"), timeout=60)
    assert time.monotonic() - started < 10
    move = reply.split(" ")[1]
    assert re.fullmatch(r"[A-HJ-T](1[0-9]|[1-9])|pass|resign", move)
    assert len(lizzie.summaries) >= 2, lizzie.problems[:3]
    assert all(m.re is LIZZIE_SUMMARY[0] for m in lizzie.summaries)  # read with the LCB

    # lz-genmove_analyze: info lines, `play X`, pondering, stopped by `name`.
    number = lizzie.send("lz-genmove_analyze b 10")
    lines = []
    while True:
        line = lizzie.next_line()
        lines.append(line.rstrip("\n"))
        if line.startswith("play "):
            break
    assert f"={number}" in lines and any(x.startswith("info") for x in lines)
    played = lines[-1].split(" ")[1]
    assert re.fullmatch(r"[A-HJ-T](1[0-9]|[1-9])|pass|resign", played)
    stop = lizzie.send("name")
    while lizzie.next_line(30) != "\n":
        pass
    assert lizzie.reply(stop)[0] == f"={stop} Leela Zero"

    history = lizzie.ask("move_history")
    assert history.split("\n")[:2] == [f"={lizzie.number} black {played}", f"white {move}"]
    assert lizzie.problems == []
