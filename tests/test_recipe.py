"""docs/recipe.md's three commands (self-play, train, play) run as written, and chain.

The ```sh block is taken from the document itself, so the test breaks when the document and
the program drift apart. `leelaz` on PATH is this checkout's (a two-line shim), HOME an empty
folder, so no user network or cache takes part. Oracles: the weights reader (the network
loads, at the size the document asks for), the chunk reader (one record per move of each SGF
game, checked against the SGFs themselves), and the GTP vertex grammar of an empty board,
where every vertex is legal.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

from conftest import requires

requires("torch")

from leelaz.backends.weights import load_weights  # noqa: E402
from leelaz.training.dataset import read_chunk  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "docs" / "recipe.md"
#: A GTP reply to genmove on an empty board: a vertex (no column I) or pass.
GENMOVE_REPLY = re.compile(r"^= ([A-HJ-T](?:1[0-9]|[1-9])|pass)$")


def recipe_commands() -> list[str]:
    """The lines of the document's one ```sh block."""
    blocks = re.findall(r"^```sh\n(.*?)^```$", RECIPE.read_text(), re.M | re.S)
    assert len(blocks) == 1, "docs/recipe.md must hold exactly one ```sh block"
    return [line for line in blocks[0].splitlines() if line.strip()]


def test_the_recipe_runs_as_written_and_each_step_leaves_what_it_says(tmp_path):
    commands = recipe_commands()
    assert [c.split()[1] if c.startswith("leelaz") else "echo" for c in commands] == \
        ["selfplay", "train", "echo"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "leelaz"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m leelaz "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHONPATH=str(REPO),
               HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"))
    outputs = []
    for command in commands:
        got = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=work, env=env,
                             capture_output=True, text=True, timeout=600)
        assert got.returncode == 0, (command, got.stdout, got.stderr)
        assert "Traceback" not in got.stderr, got.stderr
        outputs.append(got)

    # 1. self-play: the games asked for, each with its chunk, one record per move.
    sp = work / "sp"
    games = sorted(sp.glob("*.sgf"))
    wanted = int(re.search(r"--games (\d+)", commands[0]).group(1))
    assert len(games) == wanted
    for sgf in games:
        chunk = sgf.with_name(sgf.name[:-4] + ".txt.0.gz")
        moves = len(re.findall(r";[BW]\[", sgf.read_text()))
        planes, policy, z = read_chunk(str(chunk))
        assert len(z) == moves > 0
        assert abs(policy.sum(axis=1) - 1).max() < 1e-3
        assert sgf.with_name(sgf.name[:-4] + ".debug.txt.0.gz").exists()

    # 2. train: a network of the size asked for, that the engine's reader loads.
    blocks = int(re.search(r"--blocks (\d+)", commands[1]).group(1))
    filters = int(re.search(r"--filters (\d+)", commands[1]).group(1))
    net = work / "run" / "net.txt.gz"
    weights = load_weights(str(net))
    assert (weights.blocks, weights.filters) == (blocks, filters)
    with gzip.open(net, "rt") as f:
        assert f.readline().strip() == "1"
    steps = int(re.search(r"--steps (\d+)", commands[1]).group(1))
    assert f"{steps} steps" in outputs[1].stderr

    # 3. play: the engine on the new network answers one legal move.
    replies = [line for line in outputs[2].stdout.splitlines() if line.strip()]
    assert len(replies) == 1 and GENMOVE_REPLY.match(replies[0]), outputs[2].stdout
    assert f"...{filters} channels...{blocks} blocks." in outputs[2].stderr  # LZ's start line
