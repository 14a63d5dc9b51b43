"""Fixtures shared by the whole suite: reference binaries, the 9-dan games, seeded random
weights, a scripted GTP engine, a position from its moves, a search tree's nodes, a self-play
game's files; and the one way a test says what optional software it needs.

A test that needs something beyond `pip install -e '.[test]'` (a reference program, PyTorch,
Ray, numba, an OpenCL device, Node.js) asks for it through `need()`, `requires()` or a fixture
here. Without it the test is skipped with a one-line reason naming the install; with
LEELAZ_STRICT_TESTS=1 (set by .ci/run, after scripts/install_test_deps.sh installed
everything) it fails instead, so that CI never passes by skipping. Test modules import the
helpers with `from conftest import need, requires`.
"""

from __future__ import annotations

import gzip
import importlib
import os
import sys
from types import ModuleType
from typing import NoReturn

import pytest

from leelaz.backends.random_weights import make_random_weights
from leelaz.game.coords import BLACK, parse_gtp_vertex
from leelaz.game.state import GameState
from paths import TYGEM_FIXTURE, gnugo_binary, leelaz_binary

#: The project's own switch: set to 1, a missing requirement fails instead of skipping.
STRICT_VARIABLE = "LEELAZ_STRICT_TESTS"
#: The one command that installs everything the full suite needs.
INSTALL_ALL = "bash scripts/install_test_deps.sh"
#: Optional modules: (name in messages, the command that installs just that).
OPTIONAL_MODULES = {
    "torch": ("PyTorch", "pip install torch --index-url https://download.pytorch.org/whl/cpu"),
    "ray": ("Ray", "pip install -e '.[zero]'"),
    "matplotlib": ("matplotlib", "pip install -e '.[zero]'"),
    "numba": ("numba", "pip install numba"),
    "pyopencl": ("pyopencl", "pip install -e ."),
}


def strict() -> bool:
    """LEELAZ_STRICT_TESTS=1: missing requirements fail (CI) instead of skipping."""
    return os.environ.get(STRICT_VARIABLE, "") not in ("", "0")


def need(what: str, present: bool, install: str) -> None:
    """Skip the test (or, at import, the module) unless `present`; fail in strict mode.

    `what` names the requirement ("PyTorch", "/usr/games/leelaz"), `install` the command
    that installs only it; the reason also names INSTALL_ALL, which installs everything."""
    if not present:
        missing(what, install)


def missing(what: str, install: str) -> NoReturn:
    """need()'s skip, or its failure in strict mode."""
    if strict():
        pytest.fail(f"needs {what}, missing with {STRICT_VARIABLE}=1 "
                    f"({INSTALL_ALL} installs it)", pytrace=False)
    pytest.skip(f"needs {what}: {INSTALL_ALL} or {install}", allow_module_level=True)


def requires(module: str) -> ModuleType:
    """Import and return an optional module (a key of OPTIONAL_MODULES), or skip the test
    (at module level: the module) with `need()`'s reason."""
    what, install = OPTIONAL_MODULES[module]
    try:
        return importlib.import_module(module)
    except ImportError:
        pass  # said outside the handler: one line, without the ImportError's traceback
    missing(what, install)


@pytest.fixture(scope="session")
def lz_binary() -> str:
    """Path of the C++ Leela Zero 0.17 binary (the oracle)."""
    path = leelaz_binary()
    need("/usr/games/leelaz (Leela Zero 0.17)", path is not None,
         "sudo apt-get install leela-zero")
    return path


@pytest.fixture(scope="session")
def gnugo() -> str:
    """Path of GNU Go 3.8."""
    path = gnugo_binary()
    need("/usr/games/gnugo (GNU Go)", path is not None, "sudo apt-get install gnugo")
    return path


@pytest.fixture(scope="session")
def tygem_dir():
    """The folder of 9-dan game collections: the fixture committed in tests/fixtures (the
    first games of four months, see its README), so the oracle tests read the same games in
    every clone."""
    return TYGEM_FIXTURE


@pytest.fixture(scope="session")
def weights_2x32(random_weights):
    """The OpenCL tests' network, loaded (NetWeights): 2 residual blocks of 32 filters, seed 5;
    small enough for PoCL on 2 cores. Shared by the session: nothing writes to NetWeights."""
    from leelaz.backends.weights import load_weights

    return load_weights(random_weights(2, 32, seed=5))


@pytest.fixture(scope="session")
def random_weights(tmp_path_factory):
    """make(blocks, filters, seed=1, version=1, gz=False) -> path of a seeded random network.

    Files are made once per session and shared; the same arguments give the same bytes.
    """
    folder = tmp_path_factory.mktemp("weights")
    made: dict[tuple, str] = {}

    def make(blocks: int, filters: int, seed: int = 1, version: int = 1, gz: bool = False) -> str:
        key = (blocks, filters, seed, version, gz)
        if key not in made:
            name = f"net-{blocks}x{filters}-s{seed}-v{version}.txt" + (".gz" if gz else "")
            path = str(folder / name)
            # tame: the residual blocks' second convolutions at 0.2, as the fixtures always had
            make_random_weights(path, blocks, filters, seed, tame=True, version=version)
            made[key] = path
        return made[key]

    return make


@pytest.fixture
def fake(tmp_path, request):
    """fake(behaviour) -> the command line of a scripted GTP engine: the test module's `FAKE`
    script (each module scripts its own engine), run by this Python with one behaviour word."""
    path = tmp_path / "fake_engine.py"
    path.write_text(request.module.FAKE)
    return lambda behaviour: f"{sys.executable} {path} {behaviour}"


def position(moves: str) -> GameState:
    """The position after `moves` (GTP vertices, space-separated), Black first, alternating."""
    state = GameState()
    color = BLACK
    for move in moves.split():
        state.play(color, parse_gtp_vertex(move))
        color = 1 - color
    return state


def tree_nodes(root):
    """Every node of a search tree below and including `root`, depth first."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def debug_game(folder, name, resign_pct, winrates, result):
    """A game as selfplay writes it: the debug file (dump_debug's layout) and the SGF."""
    lines = ["2", f"{resign_pct} net.txt"] + [f"0.5 0.5 {w} 10" for w in winrates]
    with gzip.open(os.path.join(folder, name + ".debug.txt.0.gz"), "wt") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, name + ".sgf"), "w") as f:
        f.write(f"(;GM[1]FF[4]SZ[19]KM[7.5]RE[{result}];B[dd])\n")
