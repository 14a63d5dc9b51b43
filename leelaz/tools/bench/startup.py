"""`leelaz bench startup`: how long a start takes until `protocol_version` is answered.

Owns: the start-up benchmark. Imports: stdlib, click, tools.bench.common.

Measured in one run, alternating so that a busy machine slows them alike: leelaz's first
start (no caches: the backend race and the weights text), its later starts (the backend
choice and the parsed network cached, backends.choice_cache and weights_cache), its
--cpu-only start, and the C++ Leela Zero 0.17's --cpu-only start. The medians are printed
with the ratio of a later start to Leela Zero's --cpu-only one (TARGET_RATIO at most).
--genmove measures instead the replies of a fresh process's first two genmoves (the compiled
search core's loading and first compilation included, see search/core/run.py). The
caches go to a temporary XDG_DATA_HOME, so the user's are untouched; byte-compiled modules
are allowed (as for an installed package) even where PYTHONDONTWRITEBYTECODE is set.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import click

from leelaz.tools import ToolError
from leelaz.tools.bench.common import (CONTEXT, load_line, network_file, ours_command,
                                       reference_binary, say, split_command, table)
from leelaz.tools.options import weights_option

SHIPPED = Path(__file__).resolve().parents[3] / "weights" / "leelaz-6x128.txt.gz"
REFERENCE_NAME = "LZ 0.17 --cpu-only"
#: The start-up target: a later start within this many times Leela Zero's --cpu-only start.
TARGET_RATIO = 2.5


def seconds_to_answer(argv: list[str], env: dict, timeout: float = 300,
                      commands: tuple[str, ...] = ("protocol_version",)) -> list[float]:
    """Seconds from spawning argv to reading its answer to each of `commands`, sent one
    after the other as each answer arrives."""
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env)
    except OSError as exc:
        raise ToolError(f"{argv[0]}: {exc}") from None
    elapsed = []
    for command in commands:
        proc.stdin.write(command + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        while line and not line.startswith("="):
            line = proc.stdout.readline()
        if not line:
            proc.kill()
            raise ToolError(f"{' '.join(argv)} ended without answering {command}")
        elapsed.append(time.perf_counter() - start)
    proc.communicate("quit\n", timeout=timeout)
    return elapsed


def first_moves(base: list[str], reference: list[str] | None, env: dict, visits: int,
                runs: int) -> None:
    """--genmove: seconds from spawning to the replies of two genmoves sent back to back
    (a fresh process's first moves, no opponent's time between them), for the engine's
    default search (the compiled core: numba's cache filled, and a fresh cache each start,
    as after an install), the Python search, and Leela Zero."""
    moves = ("genmove b", "genmove w")
    programs = {"leelaz core, numba cached": (base, env),
                "leelaz core, fresh cache": (base, None),
                "leelaz Python search": (base, dict(env, LEELAZ_SEARCH_CORE="python"))}
    if reference:
        programs[REFERENCE_NAME] = (reference, env)
    # numba's cache filled: this start's first search waits for the kernels (compiled and
    # cached if they were not), where a quit would stop their compilation
    seconds_to_answer(base, dict(env, LEELAZ_SEARCH_CORE_WAIT="1"), commands=moves[:1])
    times: dict[str, list] = {}
    for _ in range(runs):
        for name, (argv, program_env) in programs.items():
            fresh = None
            if program_env is None:
                fresh = tempfile.mkdtemp(prefix="leelaz-bench-numba-")
                program_env = dict(env, NUMBA_CACHE_DIR=fresh)
            try:
                times.setdefault(name, []).append(seconds_to_answer(argv + ["-v", str(visits)],
                                                                    program_env,
                                                                    commands=moves))
            finally:
                if fresh is not None:
                    shutil.rmtree(fresh, ignore_errors=True)
    rows = [[name, f"{statistics.median(t[0] for t in ts):.3f}",
             f"{statistics.median(t[1] for t in ts):.3f}",
             " ".join(f"{a:.2f}/{b:.2f}" for a, b in ts)] for name, ts in times.items()]
    say(table(["start", "first reply s", "second reply s", "each run s"], rows))


@click.command("startup", context_settings=CONTEXT)
@weights_option("The network both engines load (BxF: a seeded random net).",
                default=str(SHIPPED), metavar="FILE|BxF", show_default=True)
@click.option("--runs", type=click.IntRange(1, None), default=7, show_default=True,
              help="Starts of each kind, alternating; the medians count.")
@click.option("--ours", default=None, metavar="CMD",
              help="Our command line before the flags (default: this Python's -m leelaz).")
@click.option("--reference", default=None, metavar="CMD",
              help="The reference's command line (default: the installed Leela Zero 0.17; "
                   "'none' to measure ours only).")
@click.option("--genmove", "genmove_visits", type=click.IntRange(0, None), default=0,
              metavar="VISITS", help="Instead: the time to the replies of a fresh process's "
              "first two genmoves at VISITS visits, --cpu-only (compiled core with numba's "
              "cache filled or fresh, the Python search, LZ).")
def command(weights, runs, ours, reference, genmove_visits) -> None:
    """Start-up time to the first answer: first and later starts, --cpu-only, and LZ's."""
    path = network_file(weights)
    data = tempfile.mkdtemp(prefix="leelaz-bench-startup-")
    env = dict(os.environ, XDG_DATA_HOME=data)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    base = (split_command(ours) if ours else ours_command()) + ["--gtp", "--noponder",
                                                                "-w", path]
    programs = {"leelaz later start": base, "leelaz --cpu-only": base + ["--cpu-only"]}
    if reference != "none":
        ref = split_command(reference) if reference else [reference_binary() or ""]
        if ref[0]:
            programs[REFERENCE_NAME] = ref + ["--gtp", "--noponder", "--cpu-only", "-w", path]
        else:
            say("no Leela Zero 0.17 installed here: measuring ours only")
    say(f"network {path}; {runs} starts of each, alternating ({load_line()} at start)")
    if genmove_visits:
        try:
            first_moves(base + ["--cpu-only"], programs.get(REFERENCE_NAME), env,
                        genmove_visits, runs)
        finally:
            shutil.rmtree(data, ignore_errors=True)
        return
    try:
        subprocess.run(base[:3] + ["--help"], env=env, capture_output=True)  # byte-compile
        times = {"leelaz first start": [seconds_to_answer(base, env)[0]]}
        for _ in range(runs):
            for name, argv in programs.items():
                times.setdefault(name, []).append(seconds_to_answer(argv, env)[0])
    finally:
        shutil.rmtree(data, ignore_errors=True)
    medians = {name: statistics.median(t) for name, t in times.items()}
    rows = [[name, f"{medians[name]:.3f}", " ".join(f"{x:.3f}" for x in t)]
            for name, t in times.items()]
    say(table(["start", "median s", "each run s"], rows))
    if REFERENCE_NAME in medians:
        ratio = medians["leelaz later start"] / medians[REFERENCE_NAME]
        say(f"later start / {REFERENCE_NAME}: {ratio:.2f}x (target: at most {TARGET_RATIO}x; "
            f"{load_line()} now)")
