"""What the benchmark modes share: the reference binary, seeded random networks, alternating
runs, command lines as text, and the table printer.

Owns: those helpers. Imports: stdlib, backends.random_weights, tools.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import sys
import tempfile

import click

from leelaz.backends.random_weights import make_random_weights
from leelaz.tools import ToolError

#: Where Debian's leela-zero package puts the C++ Leela Zero 0.17.
REFERENCE_PATHS = ("/usr/games/leelaz", "/usr/lib/leelaz/bin/leelaz")
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
NETS_FOLDER = os.path.join(tempfile.gettempdir(), "leelaz-bench-nets")


class IntList(click.ParamType):
    """`1,8,32` -> (1, 8, 32): positive integers, comma-separated."""

    name = "N,N,..."

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            numbers = tuple(int(x) for x in str(value).split(",") if x.strip())
        except ValueError:
            self.fail(f"{value!r} is not a comma-separated list of integers", param, ctx)
        if not numbers or min(numbers) < 1:
            self.fail(f"{value!r}: give positive integers", param, ctx)
        return numbers


def reference_binary() -> str | None:
    """The C++ Leela Zero 0.17 if it is installed (never our own `leelaz` script)."""
    for path in REFERENCE_PATHS:
        if os.access(path, os.X_OK):
            return path
    return None


def ours_command() -> list[str]:
    """How to start this leelaz: the same Python and the same package as this process."""
    return [sys.executable, "-m", "leelaz"]


def split_command(text: str) -> list[str]:
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ToolError(f"cannot read the command line {text!r}: {exc}") from None
    if not argv:
        raise ToolError("an empty command line")
    return argv


def parse_net(text: str) -> tuple[int, int]:
    """`6x128` -> (6, 128)."""
    try:
        blocks, filters = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise ToolError(f"{text!r} is not BLOCKSxFILTERS (e.g. 6x128)") from None
    if blocks < 0 or filters < 1:
        raise ToolError(f"{text!r}: a network needs blocks >= 0 and filters >= 1")
    return blocks, filters


def random_net(spec: str, folder: str = NETS_FOLDER) -> str:
    """A seeded random network (tame, seed 1) for `BxF`, made once and kept in `folder`."""
    blocks, filters = parse_net(spec)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"bench-{blocks}x{filters}-s1-tame.txt")
    if not os.path.exists(path):
        make_random_weights(path, blocks, filters, 1, tame=True)
    return path


def network_file(spec: str) -> str:
    """A weights file name as given, or a random `BxF` net; a missing file is an error."""
    if os.path.exists(spec):
        return spec
    if "x" in spec.lower() and spec.lower().replace("x", "").isdigit():
        return random_net(spec)
    raise ToolError(f"{spec}: no such weights file (or give BLOCKSxFILTERS for a random net)")


def load_line() -> str:
    """The machine as a figure needs it: the load while it was measured and the CPU it ran
    on (CPU figures differ several-fold between machines: docs/performance.md)."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs ({cpu_name()})"


def cpu_name(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The processor's model name as the kernel gives it (Linux), else Python's guess."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def table(header: list[str], rows: list[list]) -> str:
    """A plain text table, numbers right-aligned."""
    cells = [[str(c) for c in header]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for r in cells:
        lines.append("  ".join(c.rjust(w) if _numeric(c) else c.ljust(w)
                               for c, w in zip(r, widths)).rstrip())
    return "\n".join(lines)


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"
    return str(value)


def _numeric(text: str) -> bool:
    return text.replace(",", "").replace(".", "").replace("x", "").isdigit()


def say(text: str) -> None:
    click.echo(text)


def engine_commands(ours: tuple, reference: tuple, flags: list[str]) -> list[tuple[str, list]]:
    """(name, argv) for each engine of a bench that runs GTP engines side by side: each of
    `ours` (else this Python's leelaz with `flags`), then each of `reference` (else the
    installed Leela Zero 0.17 with `flags`, if any; ("none",): no reference). Several of a
    kind are numbered: "leelaz #1", "leelaz #2"."""
    def label(name, i, given):
        return f"{name} #{i + 1}" if len(given) > 1 else name

    commands = [(label("leelaz", i, ours), split_command(cmd)) for i, cmd in enumerate(ours)]
    commands = commands or [("leelaz", ours_command() + flags)]
    if reference != ("none",):
        binary = reference_binary()
        if reference:
            commands += [(label("LZ 0.17", i, reference), split_command(cmd))
                         for i, cmd in enumerate(reference)]
        elif binary:
            commands.append(("LZ 0.17", [binary, *flags]))
        else:
            say("no Leela Zero 0.17 installed here: measuring ours only")
    for name, argv in commands:
        say(f"{name}: {' '.join(argv)}")
    return commands


def log_files(log_dir: str, names) -> dict[str, str]:
    """A stderr log file name in `log_dir` (made if missing) for each engine name; {} without
    a folder. A folder that cannot be made is a ToolError naming it."""
    if not log_dir:
        return {}
    try:
        os.makedirs(log_dir, exist_ok=True)
    except OSError as exc:
        raise ToolError(f"--log-dir {log_dir}: {exc.strerror or exc}") from None
    return {name: os.path.join(log_dir, re.sub(r"[^\w.-]+", "-", name) + ".log")
            for name in names}
