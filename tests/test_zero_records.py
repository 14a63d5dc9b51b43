"""`leelaz zero` on run folders it did not write: lost run.json, damaged or hostile records,
a full disk, a stored command line, a missing PyTorch.

The folders are made by a real `leelaz zero DIR --generations 0` (a 1x8 network, nothing
played) and then damaged by hand, as a user, a copy or a colleague would; every check reads
the folder with the test's own code. The loop runs as a subprocess, as a user runs it.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import requires
from test_zero import TINY, ZERO, _env, _one_line_error, best, tree_digest, zero

SHA_RE = "0123456789abcdef"


def _made(tmp_path: Path, name: str = "run", *args: str) -> Path:
    run = tmp_path / name
    made = zero(run, *TINY, "--generations", "0", *args)
    assert made.returncode == 0, made.stderr
    return run


def _outside_files(top: Path, run: Path) -> list[str]:
    """Files and folders under `top` but not under `run`."""
    return sorted(str(p.relative_to(top)) for p in top.rglob("*")
                  if run not in p.parents and p != run)


# ---- D1: a folder that lost its run.json -----------------------------------------------------

def test_a_run_without_run_json_is_refused_not_created_over(tmp_path):
    run = _made(tmp_path)
    (run / "generations").mkdir()
    (run / "generations" / "0001.json").write_text(json.dumps(
        {"gen": 1, "best": best(run), "done": False, "started": ""}))
    (run / "run.json").unlink()
    before = tree_digest(run)
    _one_line_error(zero(run, *TINY, "--generations", "1"), "no run.json", "best",
                    "networks/", "generations/")
    assert tree_digest(run) == before  # best not replaced, nothing created

    # Only `best` and networks/ (a run that never played): still a run, still refused.
    shutil.rmtree(run / "generations")
    _one_line_error(zero(run, *TINY, "--generations", "0"), "no run.json", "best")
    assert "run.json" not in os.listdir(run)


def test_an_interrupted_creation_is_created_again(tmp_path):
    """A creation killed before run.json (its `.creating` mark still there) is ours: the
    rerun finishes it. Killed for real, as soon as networks/ appears."""
    run = tmp_path / "run"
    proc = subprocess.Popen(ZERO + [str(run), "--size", "6x64", "--generations", "0", "-q",
                                    "--cpu-only"], env=_env(), stderr=subprocess.PIPE)
    while not (run / "networks").is_dir() and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if (run / "run.json").exists():
        pytest.skip("the creation finished before the kill (a very fast disk)")
    again = zero(run, "--size", "6x64", "--generations", "0", "-q", "--cpu-only")
    assert again.returncode == 0, again.stderr
    info = json.loads((run / "run.json").read_text())
    assert (info["blocks"], info["filters"]) == (6, 64) and best(run) == info["start"]
    assert not (run / ".creating").exists()


# ---- S1: records that point outside DIR --------------------------------------------------------

def test_a_best_of_dot_dots_never_leads_outside(tmp_path):
    top = tmp_path / "a" / "b"
    run = _made(top, "run")
    hostile = "../../../../" + "0" * 52
    (run / "generations").mkdir()
    (run / "generations" / "0001.json").write_text(json.dumps(
        {"gen": 1, "best": hostile, "done": False, "started": ""}))
    _one_line_error(zero(run, *TINY, "--generations", "1", "--games-per-gen", "1"),
                    "0001.json", "not a network id", "--repair")
    assert _outside_files(tmp_path, run) == ["a", "a/b"]
    (run / "best").write_text(hostile + "\n")
    (run / "generations" / "0001.json").unlink()
    _one_line_error(zero(run, *TINY, "--generations", "1", "--games-per-gen", "1"),
                    str(run / "best"), "damaged")
    assert _outside_files(tmp_path, run) == ["a", "a/b"]


def test_an_absolute_gate_dir_is_refused(tmp_path):
    run = _made(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".victim.sgf.tmp").write_text("a file a sweep must not delete")
    start = best(run)
    (run / "generations").mkdir()
    (run / "generations" / "0001.json").write_text(json.dumps(
        {"gen": 1, "best": start, "done": False, "started": "",
         "selfplay": {"dir": "selfplay/g0001", "jobs": [0], "visits": 2, "seconds": 0.0,
                      "played": 0, "games": 0, "done": True},
         "train": {"candidate": start, "steps_done": 4, "done": True, "steps": 4,
                   "batch": 16, "window_games": 0, "seconds": 0.0},
         "gate": {"gated": True, "dir": str(outside), "max_games": 2, "visits": 2,
                  "seconds": 0.0}}))
    _one_line_error(zero(run, *TINY, "--generations", "1"), "0001.json", "gate.dir",
                    "outside")
    assert sorted(os.listdir(outside)) == [".victim.sgf.tmp"]
    # A symbolic link inside DIR that leads out is refused the same way.
    (run / "matches").symlink_to(outside)
    record = json.loads((run / "generations" / "0001.json").read_text())
    record["gate"]["dir"] = "matches/g0001"
    (run / "generations" / "0001.json").write_text(json.dumps(record))
    _one_line_error(zero(run, *TINY, "--generations", "1"), str(run / "matches"),
                    "symbolic link")
    assert sorted(os.listdir(outside)) == [".victim.sgf.tmp"]
    (run / "matches").unlink()  # one level down: the record's folder itself a link
    (run / "matches").mkdir()
    (run / "matches" / "g0001").symlink_to(outside)
    _one_line_error(zero(run, *TINY, "--generations", "1"), "gate.dir", "symbolic link")
    assert sorted(os.listdir(outside)) == [".victim.sgf.tmp"]


def test_a_link_out_of_dir_is_refused_before_anything_is_written(tmp_path):
    """`best` (or a generation record) a symbolic link to a file outside DIR: the loop
    would write through it; refused with one line, the file outside untouched."""
    run = _made(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text((run / "best").read_text())
    (run / "best").unlink()
    (run / "best").symlink_to(victim)
    before = victim.read_bytes()
    _one_line_error(zero(run, *TINY, "--generations", "0"), "best", "symbolic link")
    assert victim.read_bytes() == before
    _one_line_error(zero(run, "--repair"), "best", "symbolic link")
    assert victim.read_bytes() == before


# ---- damaged records: one line, and a way out ----------------------------------------------------

@pytest.mark.parametrize("damage, words", [
    (b"[1, 2, 3]", ("0001.json", "list")),
    (b'{"gen": 1}', ("0001.json", "'best'")),
    (b"\x00\xff\xfe binary", ("0001.json", "damaged")),
    (b'{"gen": 1, "best": "%s", "selfplay": {"jobs": "many", "dir": "s", "visits": 1, '
     b'"seconds": 0, "played": 0}}', ("0001.json", "jobs")),
])
def test_a_damaged_record_is_one_line_and_repair_gets_out(tmp_path, damage, words):
    run = _made(tmp_path)
    (run / "generations").mkdir()
    if b"%s" in damage:
        damage = damage.replace(b"%s", best(run).encode())
    (run / "generations" / "0001.json").write_bytes(damage)
    _one_line_error(zero(run, *TINY, "--generations", "1"), *words, "--repair")
    fixed = zero(run, "--repair")
    assert fixed.returncode == 0, fixed.stderr
    assert sorted(os.listdir(run / "generations")) == ["0001.json.damaged"]
    assert (run / "generations" / "0001.json.damaged").read_bytes() == damage
    again = zero(run, *TINY, "--generations", "0")
    assert again.returncode == 0, again.stderr


def test_a_binary_best_is_one_line_and_repair_rewrites_it(tmp_path):
    run = _made(tmp_path)
    start = json.loads((run / "run.json").read_text())["start"]
    (run / "best").write_bytes(b"\x89PNG\x00\xff")
    _one_line_error(zero(run, *TINY, "--generations", "1"), str(run / "best"), "--repair")
    fixed = zero(run, "--repair")
    assert fixed.returncode == 0, fixed.stderr
    assert best(run) == start  # no generation yet: the start is the best
    assert hashlib.sha256(__import__("gzip").decompress(
        (run / "networks" / f"{start}.gz").read_bytes())).hexdigest() == start


@pytest.mark.parametrize("text, word", [("[]", "list"), ('{"blocks": 1}', "filters"),
                                        ('{"blocks": 1, "filters": 8, "seed": 1, '
                                         '"start": "../x"}', "start")])
def test_a_damaged_run_json_is_one_line(tmp_path, text, word):
    run = _made(tmp_path)
    (run / "run.json").write_text(text)
    _one_line_error(zero(run, *TINY, "--generations", "0"), "run.json", word)


# ---- full disk and memory: one line -------------------------------------------------------------

def _limit_file_size(limit: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_no_room_for_the_starting_network_is_one_line(tmp_path):
    """Files may not grow past 64 KiB (the kernel's RLIMIT_FSIZE: a write past it fails with
    EFBIG, as one on a full disk fails with ENOSPC): the 6x64 start cannot be written."""
    run = tmp_path / "run"
    result = subprocess.run(ZERO + [str(run), "--size", "6x64", "--generations", "0", "-q",
                                    "--cpu-only"], env=_env(), capture_output=True, text=True,
                            timeout=120, preexec_fn=_limit_file_size(64 << 10))
    _one_line_error(result, str(run) + os.sep, ".gz: File too large")
    assert [p.name for p in run.iterdir() if p.name.endswith(".gz")] == []


def test_a_full_disk_mid_generation_is_one_line(tmp_path):
    """A real full filesystem (a 16 MiB tmpfs) under a run: whatever phase meets it, the
    loop stops with one line, and the rerun on a disk with room finishes the generation."""
    requires("torch")  # the run trains
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        run = _made(disk)
        filler = disk / "filler"
        with open(filler, "wb", buffering=0) as f:  # fill the disk, then free 8 KiB
            try:
                while True:
                    f.write(b"\1" * 4096)
            except OSError:
                pass
        os.truncate(filler, filler.stat().st_size - (8 << 10))
        result = zero(run, *TINY, "--games-per-gen", "2", "--generations", "1")
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 1 and lines[-1].startswith("ERROR: "), result.stderr
        assert "No space left on device" in lines[-1] and str(run) in lines[-1]
        assert [line for line in lines if line.startswith("ERROR")] == lines[-1:]
        assert "Traceback" not in result.stderr
        filler.unlink()
        again = zero(run, *TINY, "--games-per-gen", "2", "--generations", "1")
        assert again.returncode == 0, again.stderr
    finally:
        subprocess.run(["umount", "-l", str(disk)])


def test_a_size_beyond_memory_is_one_line(tmp_path):
    _one_line_error(zero(tmp_path / "run", "--size", "100000x100000", "--generations", "0",
                         "-q", "--cpu-only"), "--size 100000x100000", "memory")


# ---- the stored command line --------------------------------------------------------------------

def test_a_bare_rerun_keeps_the_options_and_a_change_is_said(tmp_path):
    run = _made(tmp_path, "run", "-v", "3", "--match-games", "6")
    bare = zero(run, "--generations", "0", "-q")
    assert bare.returncode == 0, bare.stderr
    assert "at 3 visits" in bare.stderr and "1601" not in bare.stderr
    changed = zero(run, "-v", "5", "--generations", "0", "-q")
    assert changed.returncode == 0, changed.stderr
    said = [line for line in changed.stderr.splitlines() if line.startswith("changed:")]
    assert said == [f"changed: --visits 5 (was 3 in {run / 'settings.json'})"]
    assert "at 5 visits" in changed.stderr
    stored = json.loads((run / "settings.json").read_text())
    assert stored["visits"] == 5 and stored["match_games"] == 6 and stored["cpu_only"] is True
    # The gate's rule is stored as given (--no-gate as its older spelling, --gate none), and
    # a later --gate replaces it, said aloud.
    assert json.loads((run / "settings.json").read_text())["gate"] == "lz"  # TINY's
    ungated = zero(run, "--no-gate", "--generations", "0", "-q").stderr
    assert f"changed: --gate none (was lz in {run / 'settings.json'})" in ungated
    assert json.loads((run / "settings.json").read_text())["gate"] == "none"
    assert "no gating" in zero(run, "--generations", "0", "-q").stderr
    gated = zero(run, "--gate", "lz", "--generations", "0", "-q").stderr
    assert "SPRT gating" in gated
    assert f"changed: --gate lz (was none in {run / 'settings.json'})" in gated
    assert "SPRT gating" in zero(run, "--generations", "0", "-q").stderr


def test_damaged_settings_are_one_line(tmp_path):
    run = _made(tmp_path)
    (run / "settings.json").write_text('{"visits": "many"}')
    _one_line_error(zero(run, "--generations", "0"), "settings.json", "delete it")


# ---- PyTorch is checked before anything starts ---------------------------------------------------

def test_zero_without_torch_says_so_before_self_play(tmp_path, monkeypatch, capsys):
    """find_spec answers as on a machine without PyTorch: the run stops at once with the
    install line for this machine, before DIR exists (before self-play)."""
    import importlib.util

    from leelaz.install_hints import torch_install_hint
    from leelaz.tools import run_verb

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    run = tmp_path / "run"
    code = run_verb(["zero", str(run), *TINY, "--games-per-gen", "1", "--generations", "1"])
    err = capsys.readouterr().err
    assert code == 1 and not run.exists(), err
    assert err.strip() == ("ERROR: leelaz zero trains its networks with PyTorch, which is not "
                           f"installed: {torch_install_hint()}")


def test_one_torch_hint_right_for_the_machine(monkeypatch):
    from leelaz import install_hints

    monkeypatch.setattr(install_hints, "nvidia_gpu_present", lambda: False)
    assert install_hints.torch_install_hint() == \
        "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    monkeypatch.setattr(install_hints, "nvidia_gpu_present", lambda: True)
    assert install_hints.torch_install_hint() == "pip install 'leelaz[torch]'"


def test_every_option_has_a_help_text():
    from leelaz.tools.zero import command

    missing = [p.name for p in command.params
               if getattr(p, "help", None) is None and p.param_type_name == "option"]
    assert missing == []


# ---- status.png follows the umask ----------------------------------------------------------------

def test_the_status_plot_follows_the_umask(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot needs matplotlib (leelaz[zero])")
    from leelaz.zero.rundir import RunDir
    from leelaz.zero.status import plot

    run = _made(tmp_path)
    old = os.umask(0o022)
    try:
        path = plot(RunDir(run))
    finally:
        os.umask(old)
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o644)
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [n for n in os.listdir(run) if n.endswith(".tmp")] == []


def test_a_ray_without_token_authentication_is_refused(tmp_path):
    """A Ray older than 2.59 starts its private cluster without token authentication: one
    line saying which version is needed, before DIR is touched."""
    fake = tmp_path / "oldray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("__version__ = '2.51.0'\n")
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(fake.parent), env["PYTHONPATH"]])
    run = tmp_path / "run"
    result = subprocess.run(ZERO + [str(run), *TINY, "--ray", "auto", "--generations", "1"],
                            env=env, capture_output=True, text=True, timeout=60)
    _one_line_error(result, "Ray 2.59 or newer", "not 2.51.0")
    assert not run.exists()


def test_metrics_lines_hold_no_bare_nan():
    """A diverging run's figures: null in metrics.jsonl, which a strict JSON reader parses."""
    pytest.importorskip("torch", reason="the trainer needs PyTorch")
    from leelaz.training.trainer import metrics_line

    def strict(constant):
        raise ValueError(f"bare {constant} in metrics.jsonl")
    line = metrics_line({"step": 3, "loss": float("nan"), "mse": float("inf"), "acc": 0.5})
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line, parse_constant=strict) == {"step": 3, "loss": None, "mse": None,
                                                        "acc": 0.5}


def test_a_failed_job_names_the_file_and_the_way_out(tmp_path):
    """The best network's file damaged (a bad disk): every rerun's self-play would fail the
    same way, so the one line names the file and says how to get the run going again."""
    requires("torch")  # the run trains
    run = _made(tmp_path)
    net = run / "networks" / f"{best(run)}.gz"
    net.write_bytes(b"\x1f\x8b garbage")
    result = zero(run, *TINY, "--games-per-gen", "1", "--generations", "1")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 1 and lines[-1].startswith("ERROR: "), result.stderr
    assert [line for line in lines if line.startswith("ERROR")] == lines[-1:]
    assert str(net) in lines[-1] and "self-play failed" in lines[-1]
    assert f"into {run / 'best'}" in lines[-1] and str(run / "log.txt") in lines[-1]


def test_selfplay_says_how_long_at_the_last_pace(tmp_path):
    """Before a generation's self-play: its games at the newest finished generation's pace at
    the same visits (generation 1: 2 games in an hour, generation 2: 3 in half an hour)."""
    from test_zero import _fabricate

    from leelaz.zero.loop import Settings, ZeroLoop
    from leelaz.zero.rundir import RunDir

    run = tmp_path / "run"
    _fabricate(run)
    for gen, visits in ((1, 2), (2, 3)):
        path = run / "generations" / f"{gen:04d}.json"
        record = json.loads(path.read_text())
        record["selfplay"].update(visits=visits, jobs=[record["selfplay"]["games"]])
        path.write_text(json.dumps(record))
    loop = ZeroLoop(RunDir(run), RunDir(run).info(), Settings(), executor=None, say=print)
    assert loop._selfplay_estimate(3, 3, 6) == "about 60 min at generation 2's pace"
    assert loop._selfplay_estimate(3, 2, 6) == "about 3.0 h at generation 1's pace"
    assert loop._selfplay_estimate(2, 2, 1) == "about 30 min at generation 1's pace"
    assert loop._selfplay_estimate(3, 7, 6) == ""  # no generation at 7 visits
