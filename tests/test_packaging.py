"""What `pip install .` puts on a user's machine: the kernels and the default network travel
inside the wheel, and the installed engine finds its network with no -w."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from paths import REPO


def _clean_source(dest):
    """The checkout's files without build leftovers: setuptools reuses a stale build/ folder,
    which would carry modules the package list no longer (or never) names."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"],
                            capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout
        shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                  ".git", ".venv"))
        return dest
    for name in listed.stdout.splitlines():
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def test_the_wheel_carries_kernels_and_the_default_network(tmp_path):
    source = _clean_source(tmp_path / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(tmp_path), str(source)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("leelaz-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for kernel in (REPO / "kernels").glob("*.cl"):
        assert f"leelaz/kernels/{kernel.name}" in names
    shipped = sorted(p.name for p in (REPO / "weights").glob("*.gz"))
    assert shipped, "weights/ ships no network"
    for net in shipped:
        assert f"leelaz/weights/{net}" in names
    # Every module of the source tree is in the wheel (the package list is written by hand).
    for module in (REPO / "leelaz").rglob("*.py"):
        assert module.relative_to(REPO).as_posix() in names, module

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
    # And the installed engine answers GTP, importing everything a session needs.
    done = subprocess.run([sys.executable, "-m", "leelaz", "--gtp", "--cpu-only", "-v", "2"],
                          input="name\ngenmove b\nquit\n", cwd=tmp_path, capture_output=True,
                          text=True, env={"PYTHONPATH": str(site), "HOME": str(tmp_path)},
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("= Leela Zero\n\n= ")
