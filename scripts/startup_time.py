"""How long a start takes until `protocol_version` is answered: leelaz's first start (no
caches), its later starts (the backend choice and the parsed network cached), its
--cpu-only start, and the C++ Leela Zero 0.17 binary's --cpu-only start, in one run.

    python3 scripts/startup_time.py [-w NET] [--rounds 7] [--lz /usr/games/leelaz]

Rounds alternate the programs so that a busy machine slows them alike; the medians are
printed with the ratio the acceptance of issue 13 asks about (later start / C++ --cpu-only,
to stay within 2.5). The caches go to a temporary XDG_DATA_HOME, so the user's are untouched.
Byte-compiled modules are allowed (as for an installed package) even where
PYTHONDONTWRITEBYTECODE is set.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def time_to_answer(argv: list[str], env: dict) -> float:
    """Seconds from spawning argv to reading its `= 2` answer to protocol_version."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    proc.stdin.write("protocol_version\n")
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line or line.startswith("= 2"):
            break
    elapsed = time.perf_counter() - start
    if not line:
        raise RuntimeError(f"{argv[0]} ended without answering protocol_version")
    proc.communicate("quit\n", timeout=60)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-w", "--weights", default=str(REPO / "weights" / "leelaz-6x128.txt.gz"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--lz", default=shutil.which("leelaz", path="/usr/games") or "")
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="leelaz-startup-")
    env = dict(os.environ, XDG_DATA_HOME=data, PYTHONPATH=str(REPO))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    ours = [sys.executable, "-m", "leelaz", "--gtp", "--noponder", "-w", args.weights]
    subprocess.run(ours[:3] + ["--help"], env=env, capture_output=True)  # byte-compile once
    times: dict[str, list[float]] = {"leelaz first start": [time_to_answer(ours, env)]}
    programs = {"leelaz later start": ours, "leelaz --cpu-only": ours + ["--cpu-only"]}
    if args.lz:
        programs["Leela Zero 0.17 --cpu-only"] = [args.lz, "--gtp", "--noponder", "--cpu-only",
                                                  "-w", args.weights]
    for _ in range(args.rounds):
        for name, argv in programs.items():
            times.setdefault(name, []).append(time_to_answer(argv, env))
    shutil.rmtree(data, ignore_errors=True)
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, t in times.items():
        print(f"{name:28s} median {medians[name]:6.3f} s  (" +
              " ".join(f"{x:.3f}" for x in t) + ")")
    lz = medians.get("Leela Zero 0.17 --cpu-only")
    if lz:
        print(f"later start / Leela Zero --cpu-only: {medians['leelaz later start'] / lz:.2f}x "
              "(issue 13 asks for at most 2.5x)")


if __name__ == "__main__":
    main()
