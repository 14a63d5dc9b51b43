"""`leelaz bench engine`: `leelaz --benchmark` against Leela Zero 0.17's `--benchmark`.

Owns: the whole-engine benchmark. Imports: stdlib, tools.bench.common.

Both programs search the benchmark position (b R16, w D4, b C3; White to move, no clock, seed
1, timemanage off) for the same number of visits with the same arguments on the same network
file, alternately, --runs times; the best run of each counts, since a shared machine's load
varies. The speed is each program's own `N visits, N nodes, N playouts, R n/s` line (start-up
excluded). Both command lines can be replaced (`--ours`, `--reference`): on a GPU machine, e.g.
`--reference ".lzpack/leelaz"` and extra flags for either side with --ours-args/--ref-args.
"""

from __future__ import annotations

import re
import subprocess
import time

import click

from leelaz.tools import ToolError
from leelaz.tools.bench.common import (CONTEXT, load_line, network_file, ours_command,
                                       reference_binary, say, split_command, table)
from leelaz.tools.options import weights_option

STATS = re.compile(r"^(\d+) visits, (\d+) nodes, (\d+) playouts, (\d+) n/s$", re.M)


def run_benchmark(argv: list[str], timeout: float) -> dict:
    """Run one `--benchmark` command; its stats line as numbers, plus the wall time."""
    began = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolError(f"{argv[0]}: {exc}") from None
    wall = time.monotonic() - began
    m = STATS.search(proc.stderr)
    if proc.returncode != 0 or m is None:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise ToolError(f"{' '.join(argv)} failed (status {proc.returncode}): {tail[0]}")
    visits, nodes, playouts, rate = (int(x) for x in m.groups())
    return {"visits": visits, "nodes": nodes, "playouts": playouts, "nps": rate, "wall": wall}


@click.command("engine", context_settings=CONTEXT)
@weights_option("The network both engines load (BxF: a seeded random net).",
                default="6x128", metavar="FILE|BxF", show_default=True)
@click.option("-v", "--visits", type=click.IntRange(1, None), default=3200, show_default=True,
              help="Visits of each --benchmark search (both engines' -v).")
@click.option("-t", "--threads", type=click.IntRange(1, None), default=2, show_default=True,
              help="Both engines' -t.")
@click.option("--runs", type=click.IntRange(1, None), default=3, show_default=True,
              help="Runs of each engine, alternating; the best counts.")
@click.option("--ours", default=None, metavar="CMD",
              help="Our command line before the flags (default: this Python's -m leelaz).")
@click.option("--reference", default=None, metavar="CMD",
              help="The reference's command line before the flags (default: the installed "
                   "Leela Zero 0.17; 'none' to measure ours only).")
@click.option("--ours-args", default="--cpu-only", show_default=True,
              help="More flags for ours.")
@click.option("--ref-args", default="--cpu-only", show_default=True,
              help="More flags for the reference.")
@click.option("--timeout", type=click.FloatRange(1, None), default=1800, show_default=True,
              help="Seconds one run may take before the bench gives up.")
def command(weights, visits, threads, runs, ours, reference, ours_args, ref_args,
            timeout) -> None:
    """Whole-engine visits per second: --benchmark of both engines, alternating."""
    path = network_file(weights)
    common = ["--benchmark", "-w", path, "-t", str(threads)]
    if visits != 3200:
        common += ["-v", str(visits)]
    engines = [("leelaz", (split_command(ours) if ours else ours_command()) + common
                + (split_command(ours_args) if ours_args.strip() else []))]
    if reference != "none":
        ref = split_command(reference) if reference else [reference_binary() or ""]
        if ref[0]:
            engines.append(("LZ 0.17", ref + common
                            + (split_command(ref_args) if ref_args.strip() else [])))
        else:
            say("no Leela Zero 0.17 installed here: measuring ours only")
    say(f"network {path}; {visits} visits, -t {threads}; best of {runs} runs each, "
        f"alternating ({load_line()} at start)")
    best: dict[str, dict] = {}
    for i in range(runs):
        for name, argv in engines:
            r = run_benchmark(argv, timeout)
            say(f"  run {i + 1} {name:8s} {r['visits']} visits, {r['playouts']} playouts, "
                f"{r['nps']} n/s ({r['wall']:.1f} s wall)")
            if name not in best or r["nps"] > best[name]["nps"]:
                best[name] = r
    rows = [[name, r["visits"], r["playouts"], r["nps"]] for name, r in best.items()]
    say(table(["engine", "visits", "playouts", "best n/s"], rows))
    if len(best) == 2:
        ratio = best["leelaz"]["nps"] / max(best["LZ 0.17"]["nps"], 1)
        say(f"ratio leelaz / LZ 0.17: {ratio:.2f} ({load_line()} now)")
