"""Running C++ Leela Zero 0.17 as the oracle for training data (dump_supervised, dump_training).

Leela Zero's quirks that this copes with:
- it lower-cases every GTP line, so file names must be lower case (we use our own folder);
- dump_supervised prints `Total games in file`, `Shuffling...done.`, `Mainline move not found`
  and `Dumped N training positions.` on stdout, in the middle of the GTP stream;
- it aborts (SIGABRT) when the last chunk would be empty (dumped games a multiple of 32, or an
  empty dump_training buffer), so callers choose inputs that avoid that and we check the code.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest


def lower_case_folder() -> str:
    """A fresh folder whose path is all lower case (Leela Zero lower-cases file names)."""
    path = tempfile.mkdtemp(prefix="lzoracle", dir="/tmp")
    assert path == path.lower()
    return path


@pytest.fixture
def lz_folder():
    """A lower-case scratch folder for Leela Zero's files, removed afterwards."""
    path = lower_case_folder()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_lz(lz_binary: str, weights: str, commands: list[str], timeout: float = 120,
           extra_args: tuple[str, ...] = ()) -> tuple[int, str, str]:
    """Feed GTP lines to Leela Zero; (return code, stdout, stderr)."""
    for c in commands:
        assert c == c.lower() or c.startswith("loadsgf"), f"Leela Zero lower-cases {c!r}"
    args = [lz_binary, "-g", "--cpu-only", "-w", weights, "--noponder", "-t", "1",
            *extra_args]
    proc = subprocess.run(args, input="\n".join(commands + ["quit"]) + "\n",
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def lz_dump_supervised(lz_binary: str, weights: str, sgf_path: str, out_prefix: str):
    """Run dump_supervised; (stdout lines that are not GTP replies, the chunk paths written)."""
    code, out, err = run_lz(lz_binary, weights, [f"dump_supervised {sgf_path} {out_prefix}"])
    assert code == 0, f"leelaz exited with {code} (an empty last chunk aborts it): {err[-500:]}"
    chatter = [l for l in out.splitlines() if l and not l.startswith("=")]
    folder, base = os.path.split(out_prefix)
    paths = sorted((os.path.join(folder, f) for f in os.listdir(folder)
                    if f.startswith(base + ".") and f.endswith(".gz")),
                   key=lambda p: int(p[len(out_prefix) + 1:-3]))
    return chatter, paths
