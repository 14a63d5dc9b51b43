"""Fixtures shared by the whole suite: reference binaries, the 9-dan games, seeded random
weights.

A test that needs a reference program asks for the fixture; it is skipped on a developer
machine without it, and fails in CI (CI is set there), where .ci/run installs it.
"""

from __future__ import annotations

import os

import pytest

from leelaz.backends.random_weights import make_random_weights
from paths import TYGEM_FIXTURE, gnugo_binary, leelaz_binary


def _require(what: str, present: bool) -> None:
    if present:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI; .ci/run should have installed it")
    pytest.skip(f"{what} is not installed here")


@pytest.fixture(scope="session")
def lz_binary() -> str:
    """Path of the C++ Leela Zero 0.17 binary (the oracle)."""
    path = leelaz_binary()
    _require("/usr/games/leelaz (apt-get install leela-zero)", path is not None)
    return path


@pytest.fixture(scope="session")
def gnugo() -> str:
    """Path of GNU Go 3.8."""
    path = gnugo_binary()
    _require("/usr/games/gnugo (apt-get install gnugo)", path is not None)
    return path


@pytest.fixture(scope="session")
def tygem_dir():
    """The folder of 9-dan game collections: the fixture committed in tests/fixtures (the
    first games of four months, see its README), so the oracle tests read the same games in
    every clone."""
    return TYGEM_FIXTURE


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
