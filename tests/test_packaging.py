"""What `pip install .` puts on a user's machine: the kernels and the default network travel
inside the wheel, and the installed engine finds its network with no -w."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from paths import REPO


def test_the_wheel_carries_kernels_and_the_default_network(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(tmp_path), str(REPO)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("leelaz-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for kernel in (REPO / "kernels").glob("*.cl"):
        assert f"leelaz/kernels/{kernel.name}" in names
    shipped = sorted(p.name for p in (REPO / "weights").glob("*.gz"))
    assert shipped, "weights/ ships no network"
    for net in shipped:
        assert f"leelaz/weights/{net}" in names

    # Unpacked as site-packages would hold it, away from the checkout: the engine finds the
    # network through the installed leelaz.weights, not through the repository.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import leelaz.cli as c; from leelaz.config import EngineConfig; "
            "print(c.find_weights(EngineConfig()))")
    found = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                           text=True, env={"PYTHONPATH": str(site), "HOME": str(tmp_path)},
                           check=True).stdout.strip()
    assert found == str(site / "leelaz" / "weights" / shipped[0])
