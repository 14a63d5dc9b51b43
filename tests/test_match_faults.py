"""`leelaz match` when its files fail: a full disk under the SGFs or under lz-gate's folder,
an `--sgf-dir` that cannot be one, a truncated SGF given to `--tally`. Each is one line naming
the file and a non-zero exit; a game that was not stored is not counted."""

from __future__ import annotations

import os
import subprocess
import sys

from paths import REPO
from test_match import FAKE

ENV = dict(os.environ, PYTHONPATH=str(REPO))

#: `leelaz match ARGS` with the SGF writer failing as a full disk does from its Nth file on
FULL_DISK_FROM = """
import errno, sys
import leelaz.tools.match as m
real, calls = m.write_text_atomic, [0]
def failing(path, text):
    calls[0] += 1
    if calls[0] >= int(sys.argv[1]):
        raise OSError(errno.ENOSPC, "No space left on device", path)
    real(path, text)
m.write_text_atomic = failing
sys.exit(m.main(sys.argv[2:]))
"""

#: `leelaz ARGS` under a file size limit: every write past `limit` bytes fails (EFBIG), as a
#: full disk would
SIZE_LIMITED = """
import resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from leelaz.tools import run_verb
sys.exit(run_verb(sys.argv[2:]))
"""


def _engines(tmp_path, one="play", two="resign") -> list[str]:
    path = tmp_path / "fake_engine.py"
    path.write_text(FAKE)
    return ["--engine1", f"{sys.executable} {path} {one}",
            "--engine2", f"{sys.executable} {path} {two}", "--timeout", "10",
            "--move-timeout", "10"]


def _error_line(done) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), done.stderr
    return lines[0]


def test_a_failed_sgf_write_stops_the_match_and_counts_only_stored_games(tmp_path):
    sgf = tmp_path / "sgf"
    done = subprocess.run([sys.executable, "-c", FULL_DISK_FROM, "2",
                           *_engines(tmp_path), "--games", "4", "--sgf-dir", str(sgf)],
                          capture_output=True, text=True, env=ENV, timeout=120)
    assert done.returncode == 1
    line = _error_line(done)
    assert f"cannot write {sgf / 'game-002.sgf'}: No space left on device" in line
    assert sorted(os.listdir(sgf)) == ["game-001.sgf"]
    assert "game 1:" in done.stdout and "game 2:" not in done.stdout
    assert "game 3:" not in done.stdout and "game 4:" not in done.stdout
    # the final summary counts the one stored game (engine 2 resigned it)
    assert done.stdout.strip().splitlines()[-1].startswith("engine1: 1/1 = 100.0%"), done.stdout


def test_an_sgf_dir_that_cannot_be_a_folder_is_one_line(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for folder in (a_file, a_file / "sub"):
        done = subprocess.run([sys.executable, "-m", "leelaz", "match", *_engines(tmp_path),
                               "--games", "1", "--sgf-dir", str(folder)],
                              capture_output=True, text=True, env=ENV, timeout=120)
        assert done.returncode == 1
        line = _error_line(done)
        assert line.startswith(f"ERROR: --sgf-dir {folder}: "), line
        assert "game 1:" not in done.stdout


def test_a_disk_full_from_the_first_sgf_counts_no_game(tmp_path):
    sgf = tmp_path / "sgf"
    done = subprocess.run([sys.executable, "-c", SIZE_LIMITED, "0", "match",
                           *_engines(tmp_path), "--games", "1", "--sgf-dir", str(sgf)],
                          capture_output=True, text=True, env=ENV, timeout=120)
    # a limit of 0 bytes lets the start's probe (an empty file) through; the first SGF fails
    assert done.returncode == 1
    line = _error_line(done)
    assert str(sgf / "game-001.sgf") in line and "File too large" in line
    assert os.listdir(sgf) == []
    assert done.stdout.strip().splitlines()[-1].startswith("engine1: 0/0"), done.stdout


def test_tally_refuses_a_truncated_sgf(tmp_path):
    sgf = tmp_path / "sgf"
    done = subprocess.run([sys.executable, "-m", "leelaz", "match",
                           *_engines(tmp_path, "play", "play"), "--games", "2",
                           "--max-moves", "20", "--sgf-dir", str(sgf)],
                          capture_output=True, text=True, env=ENV, timeout=120)
    assert done.returncode == 0, done.stderr
    second = sgf / "game-002.sgf"
    text = second.read_text()
    assert "RE[" in text[:len(text) // 2]  # the result survives the cut: it would count
    second.write_text(text[:len(text) // 2])
    done = subprocess.run([sys.executable, "-m", "leelaz", "match", "--tally", str(sgf),
                           "--name1", "engine1"],
                          capture_output=True, text=True, env=ENV, timeout=120)
    assert done.returncode == 1
    line = _error_line(done)
    assert str(second) in line and "truncated" in line


def test_lz_gate_on_a_full_disk_is_one_line(tmp_path, random_weights):
    out = tmp_path / "gate"
    done = subprocess.run([sys.executable, "-c", SIZE_LIMITED, "200", "match", "--preset",
                           "lz-gate", "--weights1", random_weights(1, 8, seed=1),
                           "--weights2", random_weights(1, 8, seed=2), "--out", str(out),
                           "--games", "2", "-v", "2", "--cpu-only"],
                          capture_output=True, text=True, env=ENV, timeout=120)
    assert done.returncode == 1
    line = _error_line(done)
    assert line.startswith(f"ERROR: cannot write the match to {out}: ") and "File too large" in line
