"""`leelaz train` under faults: kills, bad and truncated files, full disks, diverging runs.

Each test names the fault and what the user must get: the right network after a kill, or one
line naming the file and a non-zero exit (never a traceback, never Ctrl-C's `Aborted.`), and
no weights file that is untrained, stale or not finite. Expected networks are computed
independently: the checkpoint's own model exported again, compared byte for byte.
"""

from __future__ import annotations

import ast
import gzip
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import requires  # noqa: E402

torch = requires("torch")

from leelaz.backends.weights import WeightsError, load_weights  # noqa: E402
from leelaz.backends.weights_writer import write_weights  # noqa: E402
from leelaz.tools import train as train_script  # noqa: E402
from leelaz.training import records  # noqa: E402
from leelaz.training.export import export_weights, network_tensors  # noqa: E402
from leelaz.training.torch_model import LeelaNet  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SMALL = ["--blocks", "1", "--filters", "8", "--batch", "16", "--device", "cpu",
         "--no-progress", "--workers", "1", "--val-positions", "50"]
#: One plain game (no handicap, no setup), as one line of an SGF collection.
GAME = "(;GM[1]FF[4]SZ[19]KM[7.5]RE[B+R];B[pd];W[dp];B[pp];W[dd];B[fq];W[cn];B[jp])\n"


def chunk_text(count: int, seed: int = 0) -> str:
    """`count` records of random planes, a few-move policy that sums to 1, alternate turns."""
    rng = np.random.default_rng(seed)
    parts = []
    for i in range(count):
        planes = (rng.random((16, 361)) < 0.1).astype(np.uint8)
        probs = np.zeros(362, np.float32)
        probs[rng.choice(362, 4, replace=False)] = [0.5, 0.25, 0.125, 0.125]
        parts.append(records.format_fields(planes, i % 2, probs, 1 if rng.random() < .5 else -1))
    return "".join(parts)


def write_chunk(path: Path, text: str) -> Path:
    with gzip.open(path, "wt") as f:
        f.write(text)
    return path


def with_bad_probability(text: str, record: int, value: str) -> str:
    """The chunk's text with one probability of `record` replaced by `value`."""
    lines = text.splitlines()
    words = lines[record * records.RECORD_LINES + 17].split(" ")
    words[100] = value
    lines[record * records.RECORD_LINES + 17] = " ".join(words)
    return "\n".join(lines) + "\n"


def train(capsys, *args) -> tuple[int, list[str]]:
    """Run the verb in-process: (exit status, stderr lines)."""
    code = train_script.main([str(a) for a in args])
    return code, capsys.readouterr().err.strip().splitlines()


def one_error_line(lines: list[str]) -> str:
    """The run's one error line (the lines before it are the trainer's progress log)."""
    errors = [line for line in lines if line.startswith("ERROR")]
    assert len(errors) == 1 and errors[0] == lines[-1], lines
    assert not any("Traceback" in line or line == "Aborted." for line in lines), lines
    return errors[0]


def exported_from_checkpoint(checkpoint: Path, tmp_path: Path) -> bytes:
    """The bytes the checkpoint's model exports to (the export is deterministic)."""
    ck = torch.load(checkpoint, map_location="cpu", weights_only=True)
    net = LeelaNet(ck["blocks"], ck["filters"])
    net.load_state_dict(ck["model"])
    path = tmp_path / "expected.txt.gz"
    export_weights(net, str(path))
    return path.read_bytes()


def verb_subprocess(code: str, args: list, env: dict | None = None, timeout: int = 300):
    """`leelaz train ARGS` in a child Python that first runs `code` (fault injection)."""
    script = code + "\nfrom leelaz.tools import run_verb\nsys.exit(run_verb(sys.argv[1:]))\n"
    full_env = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-c", script, "train", *map(str, args)],
                          capture_output=True, text=True, env=full_env, timeout=timeout)


@pytest.fixture
def chunks(tmp_path) -> list[Path]:
    """Two chunk files of 40 records each (named one by one: --data's plain form)."""
    folder = tmp_path / "chunks"
    folder.mkdir()
    return [write_chunk(folder / f"c.{n}.gz", chunk_text(40, seed=n)) for n in range(2)]


# ---- D2: the weights file is never older than a finished checkpoint ---------------------------

KILL_AFTER_CHECKPOINT = """
import os, signal, sys
from leelaz.training import trainer
real = trainer.save_checkpoint
def save(path, net, optimizer, counters, config, *more, **named):
    real(path, net, optimizer, counters, config, *more, **named)
    if counters["step"] >= int(os.environ["KILL_AT_STEP"]):
        os.kill(os.getpid(), signal.SIGKILL)
trainer.save_checkpoint = save
"""


def test_a_kill_right_after_the_last_checkpoint_leaves_its_own_weights_file(chunks, tmp_path,
                                                                          capsys):
    """SIGKILL just after the final checkpoint is renamed into place: `--continue` then finds
    the run finished, and the weights file it returns is that checkpoint's network."""
    out = tmp_path / "run"
    args = ["--data", *chunks, "--out", out, "--steps", "4", "--checkpoint-seconds", "1e-9",
            *SMALL]
    killed = verb_subprocess(KILL_AFTER_CHECKPOINT, args, env={"KILL_AT_STEP": "4"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert torch.load(out / "checkpoint.pt", weights_only=True)["counters"]["step"] == 4
    code, lines = train(capsys, *args, "--continue")
    assert code == 0, lines
    want = exported_from_checkpoint(out / "checkpoint.pt", tmp_path)
    assert (out / "leelaz-1x8.txt.gz").read_bytes() == want


def test_the_zero_loops_entry_point_replaces_a_stale_weights_file(chunks, tmp_path):
    """A finished run folder whose weights file is older than its checkpoint (what a kill
    between the two writes left before): train() re-exports the checkpoint's network instead
    of returning the stale file."""
    from leelaz.training.trainer import train as train_fn

    data = [str(p) for p in chunks]
    settings = dict(blocks=1, filters=8, batch=16, device="cpu", val_positions=50)
    out = tmp_path / "run"
    first = train_fn(data, str(out), steps=2, **settings)
    stale = Path(first.weights_path).read_bytes()
    done = train_fn(data, str(out), steps=4, **settings)
    assert done.steps_done == 4
    Path(done.weights_path).write_bytes(stale)  # the older export beside the final checkpoint
    again = train_fn(data, str(out), steps=4, **settings)
    assert again.steps_done == 4 and again.metrics is None  # nothing trained
    want = exported_from_checkpoint(out / "checkpoint.pt", tmp_path)
    assert want != stale
    assert Path(again.weights_path).read_bytes() == want


# ---- D3: nothing non-finite is trained on or published ----------------------------------------

@pytest.mark.parametrize("value", ["nan", "inf", "-0.25", "1e+30"])
def test_chunks_with_bad_probabilities_are_refused_naming_file_and_record(tmp_path, capsys,
                                                                          value):
    bad = write_chunk(tmp_path / "bad.0.gz", with_bad_probability(chunk_text(8), 5, value))
    code, lines = train(capsys, "--data", bad, "--out", tmp_path / "run", "--steps", "2",
                        *SMALL)
    assert code == 1
    line = one_error_line(lines)
    assert str(bad) in line and "record 5" in line, line
    assert not list((tmp_path / "run").glob("*.txt.gz"))


def test_the_record_reader_refuses_probabilities_summing_past_one():
    text = chunk_text(1)
    lines = text.splitlines()
    lines[17] = " ".join(["0.5"] * 3 + ["0"] * 359)
    with pytest.raises(records.RecordError, match="sum to 1.5"):
        list(records.parse_records("\n".join(lines)))
    assert len(list(records.parse_records(text))) == 1  # LZ's own sums pass


def test_a_diverging_run_stops_with_one_line_and_exports_nothing(chunks, tmp_path, capsys):
    out = tmp_path / "run"
    code, lines = train(capsys, "--data", *chunks, "--out", out, "--steps", "40",
                        "--optimizer", "sgd", "--lr", "1e30", "--warmup", "0", *SMALL)
    assert code == 1
    assert "diverged" in one_error_line(lines)
    assert not list(out.glob("*.txt.gz")) and not (out / "checkpoint.pt").exists()
    metrics = out / "metrics.jsonl"
    assert not metrics.exists() or "NaN" not in metrics.read_text()


def test_the_weights_writer_refuses_a_network_that_is_not_finite(tmp_path):
    torch.manual_seed(0)
    net = LeelaNet(1, 8)
    path = tmp_path / "net.txt.gz"
    export_weights(net, str(path))
    before = path.read_bytes()
    for bad in (float("nan"), float("inf"), 1e39):  # 1e39: beyond float32, reads as inf
        tensors = network_tensors(net)
        tensors[7] = tensors[7].copy()
        tensors[7][3] = bad
        with pytest.raises(WeightsError, match="line 9"):
            write_weights(path, tensors)
        assert path.read_bytes() == before
        with pytest.raises(WeightsError):
            write_weights(tmp_path / "new.txt", tensors)
        assert not (tmp_path / "new.txt").exists()
    tensors = network_tensors(net)
    tensors[3] = -np.abs(tensors[3]) - 1  # a negative variance: loads as nan
    with pytest.raises(WeightsError, match="variance"):
        write_weights(path, tensors)
    assert path.read_bytes() == before and load_weights(str(path)).filters == 8


# ---- D7: checkpoint temporaries ---------------------------------------------------------------

def gone_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_leftover_checkpoint_temporaries_are_swept_on_start(chunks, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    old = out / f"checkpoint.pt.tmp{gone_pid()}"  # an older leelaz's, its process killed
    hidden = out / ".checkpoint.pt.k1ll3d00.tmp"  # atomic_open's, its process killed
    other = out / "notes.tmp"
    for path in (old, hidden, other):
        path.write_bytes(b"x" * 1000)
    code, lines = train(capsys, "--data", *chunks, "--out", out, "--steps", "1", *SMALL)
    assert code == 0, lines
    assert not old.exists() and not hidden.exists() and other.exists()


def test_a_failed_checkpoint_write_leaves_no_temporary(chunks, tmp_path, capsys, monkeypatch):
    """torch.save fails half way (a full disk): one line naming checkpoint.pt, exit 1, and no
    checkpoint-sized temporary file left behind."""
    from leelaz.training import trainer

    def full_disk(obj, f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)):  # a path: torch.save opens it itself
            with open(f, "wb") as opened:
                opened.write(b"x" * 100000)
        else:
            f.write(b"x" * 100000)
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(trainer.torch, "save", full_disk)
    out = tmp_path / "run"
    code, lines = train(capsys, "--data", *chunks, "--out", out, "--steps", "1", *SMALL)
    assert code == 1
    line = one_error_line(lines)
    assert str(out / "checkpoint.pt") in line and "No space left" in line
    assert not [p.name for p in out.iterdir() if "tmp" in p.name]


def test_a_full_disk_is_one_line_and_leaves_no_partial_file(chunks, tmp_path):
    """A file size limit makes the first large write fail as a full disk would."""
    limit = "import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))"
    out = tmp_path / "run"
    got = verb_subprocess(limit, ["--data", *chunks, "--out", out, "--steps", "2", *SMALL])
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 1, got.stderr
    line = one_error_line(lines)
    assert line.startswith(f"ERROR: cannot write {out}"), line
    assert not [p.name for p in out.iterdir() if "tmp" in p.name]
    assert not list(out.glob("*.txt.gz"))


# ---- D9: nothing to train on ------------------------------------------------------------------

@pytest.mark.parametrize("loader", ["fast", "supervised"])
def test_one_game_all_held_out_fails_instead_of_exporting_an_untrained_net(tmp_path, capsys,
                                                                           loader):
    sgf = tmp_path / "one.sgf"
    sgf.write_text(GAME)
    out = tmp_path / "run"
    code, lines = train(capsys, "--data", sgf, "--out", out, "--steps", "2",
                        "--sgf-loader", loader, *SMALL)
    assert code == 1
    assert "no positions to train on" in one_error_line(lines)
    assert not list(out.glob("*.txt.gz"))


# ---- S2: checkpoints are read as data, never as code -------------------------------------------

def test_every_torch_load_passes_weights_only_true():
    calls = []
    for path in (REPO / "leelaz").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "load" and getattr(node.func.value, "id", "") == "torch":
                named = {k.arg: k.value for k in node.keywords}
                ok = isinstance(named.get("weights_only"), ast.Constant) \
                    and named["weights_only"].value is True
                calls.append((f"{path.relative_to(REPO)}:{node.lineno}", ok))
    assert calls and all(ok for _, ok in calls), calls


def test_the_torch_extras_require_a_torch_whose_weights_only_is_safe():
    """weights_only=True could still run code before torch 2.6 (CVE-2025-32434)."""
    text = (REPO / "pyproject.toml").read_text()
    bounds = re.findall(r'"torch>=([\d.]+)"', text)
    assert bounds and all(tuple(map(int, b.split("."))) >= (2, 6) for b in bounds), bounds


class RunsCode:
    def __reduce__(self):
        return (os.system, (f"touch {os.environ['MARKER']}",))


def test_resume_from_a_missing_or_foreign_file_is_one_line(chunks, tmp_path, capsys,
                                                           monkeypatch, random_weights):
    marker = tmp_path / "code-ran"
    monkeypatch.setenv("MARKER", str(marker))
    hostile = tmp_path / "hostile.pt"
    torch.save({"model": RunsCode(), "counters": {}, "blocks": 1, "filters": 8}, hostile)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(os.urandom(5000))
    plain = tmp_path / "plain.pt"
    torch.save({"just": "data"}, plain)
    for path, reason in [(tmp_path / "none.pt", "no such"),
                         (random_weights(1, 8), "not a leelaz training checkpoint"),
                         (garbage, "not a leelaz training checkpoint"),
                         (plain, "not a leelaz training checkpoint"),
                         (hostile, "not a leelaz training checkpoint")]:
        code, lines = train(capsys, "--data", *chunks, "--out", tmp_path / "run", "--steps",
                            "1", "--resume", path, *SMALL)
        assert code == 1
        line = one_error_line(lines)
        assert str(path) in line and reason in line, line
    assert not marker.exists()


# ---- C-items and U1: bad files are one line naming the file -----------------------------------

def test_a_truncated_chunk_or_sgf_is_one_line_not_aborted(tmp_path, capsys):
    """EOFError must not become click's `Aborted.` (exit 130, Ctrl-C's)."""
    whole = gzip.compress(chunk_text(20).encode())
    chunk = tmp_path / "cut.0.gz"
    chunk.write_bytes(whole[:len(whole) // 2])
    games = gzip.compress((GAME * 20).encode())
    sgf = tmp_path / "cut.sgf.gz"
    sgf.write_bytes(games[:len(games) // 2])
    for path, loader in [(chunk, "fast"), (sgf, "fast"), (sgf, "supervised")]:
        code, lines = train(capsys, "--data", path, "--out", tmp_path / "run", "--steps", "1",
                            "--sgf-loader", loader, *SMALL)
        assert code == 1, (path, loader, lines)
        assert str(path) in one_error_line(lines)


@pytest.mark.parametrize("content", [b"not gzip at all", gzip.compress(b"2\nnot a record\n"),
                                     gzip.compress(b"\xff\xfe" * 500)])
def test_a_corrupt_chunk_is_one_line_naming_it(tmp_path, capsys, content):
    bad = tmp_path / "bad.3.gz"
    bad.write_bytes(content)
    good = write_chunk(tmp_path / "good.0.gz", chunk_text(10))
    code, lines = train(capsys, "--data", good, bad, "--out", tmp_path / "run", "--steps", "1",
                        *SMALL)
    assert code == 1
    assert str(bad) in one_error_line(lines)


def test_out_that_is_a_file_or_cannot_be_written_is_one_line(chunks, tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out in (a_file, a_file / "below"):
        code, lines = train(capsys, "--data", *chunks, "--out", out, "--steps", "1", *SMALL)
        assert code == 1
        assert str(a_file) in one_error_line(lines)
    assert a_file.read_text() == "x"


def test_out_in_a_read_only_folder_is_one_line_before_any_training(chunks, tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() == 0:  # root writes through permission bits: a read-only filesystem
        got = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs",
                              str(folder)], capture_output=True)
        if got.returncode:
            pytest.skip("root, and no read-only mount possible here: " + got.stderr.decode())
    else:
        folder.chmod(0o555)
    try:
        code, lines = train(capsys, "--data", *chunks, "--out", folder / "run", "--steps",
                            "1", *SMALL)
        code2, lines2 = train(capsys, "--data", *chunks, "--out", folder, "--steps", "1",
                              *SMALL)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(folder)])
        else:
            folder.chmod(0o755)
    assert code == 1 and code2 == 1
    assert str(folder) in one_error_line(lines) and str(folder) in one_error_line(lines2)
    assert not any("chunks:" in line for line in lines + lines2)  # refused before reading


# ---- self-play output as --data ---------------------------------------------------------------

def selfplay_folder(folder: Path) -> int:
    """A folder laid out as `leelaz selfplay --out` leaves it (selfplay/store.py); the number
    of training records in its chunks."""
    folder.mkdir()
    total = 0
    for n, count in enumerate((12, 20)):
        name = f"{n:06d}-0badcafe"
        write_chunk(folder / f"{name}.txt.0.gz", chunk_text(count, seed=n))
        total += count
        with gzip.open(folder / f"{name}.debug.txt.0.gz", "wt") as f:
            f.write("2\n5 net.txt.gz\n0.5 0.5 0.5 2\n")  # dump_debug's layout
        (folder / f"{name}.sgf").write_text(GAME)
    (folder / ".0badcafe.pid").write_text("1 host\n")
    (folder / ".000002-0badcafe.txt.0.gz.tmp").write_bytes(b"\x1f\x8b half")
    return total


def test_train_reads_a_selfplay_folder_or_glob_and_skips_debug_files(tmp_path, capsys):
    sp = tmp_path / "sp"
    total = selfplay_folder(sp)
    for n, data in enumerate([[sp], sorted(sp.glob("*.gz")), [f"{sp}/*.gz"]]):
        code, lines = train(capsys, "--data", *data, "--out", tmp_path / f"run{n}",
                            "--steps", "1", *SMALL)
        assert code == 0, (data, lines)
        held = [line for line in lines if line.startswith("chunks:")][0]
        train_n, val_n = map(int, re.match(r"chunks: (\d+) train / (\d+) val", held).groups())
        assert train_n + val_n == total


def test_bad_data_arguments_are_one_line_naming_them(tmp_path, capsys):
    sp = tmp_path / "sp"
    selfplay_folder(sp)
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [([empty], str(empty)), ([tmp_path / "none"], "none"),
             ([f"{tmp_path}/*.nothing"], "*.nothing"),
             ([sp / "000000-0badcafe.txt.0.gz", sp / "000000-0badcafe.sgf"], "mixes")]
    for data, named in cases:
        code, lines = train(capsys, "--data", *data, "--out", tmp_path / "run", "--steps", "1",
                            *SMALL)
        assert code == 1
        assert named in one_error_line(lines)


# ---- the verb's command line --------------------------------------------------------------

def test_every_train_option_has_help_and_required_ones_are_marked(capsys):
    import click
    options = [p for p in train_script.command.params if isinstance(p, click.Option)]
    assert [o.name for o in options if not o.help] == []
    assert train_script.main(["--help"]) == 0
    text = capsys.readouterr().out
    for o in options:
        if o.required:
            block = text.split(o.opts[0], 1)[1].split("\n  --", 1)[0]
            assert "[required]" in block, o.opts


def test_without_pytorch_the_one_install_hint_for_cpu_and_gpu(tmp_path, chunks):
    from leelaz.install_hints import CPU_TORCH, GPU_TORCH, torch_install_hint
    got = verb_subprocess("import sys; sys.modules['torch'] = None",
                          ["--data", *chunks, "--out", tmp_path / "run", "--steps", "1"])
    assert got.returncode == 1
    assert got.stderr.strip() == ("ERROR: leelaz train needs PyTorch, which is not installed: "
                                  f"{torch_install_hint()}")
    assert CPU_TORCH.endswith("--index-url https://download.pytorch.org/whl/cpu")
    assert torch_install_hint() in (CPU_TORCH, GPU_TORCH) and "leelaz[train]" not in GPU_TORCH


class RecordingBar:
    """Stands in for leelaz.progress's bar: what the trainer told it."""

    def __init__(self, total, desc, unit="it", enabled=True):
        self.total, self.unit, self.count, self.postfix = total, unit, 0, []

    def update(self, n=1):
        self.count += n

    def set_postfix_str(self, text):
        self.postfix.append(text)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def test_progress_counts_steps_toward_the_total_or_says_the_time_left(chunks, tmp_path,
                                                                      monkeypatch):
    """A bar of --steps steps (tqdm gives the estimate from it); bounded by --seconds only,
    the bar says the seconds left."""
    from leelaz.training import trainer
    bars = []
    monkeypatch.setattr(trainer, "progress", lambda *a, **k: bars.append(RecordingBar(*a, **k))
                        or bars[-1])
    small = [a for a in SMALL if a != "--no-progress"]
    assert train_script.main(["--data", *map(str, chunks), "--out", str(tmp_path / "a"),
                              "--steps", "5", *small]) == 0
    assert (bars[0].total, bars[0].unit, bars[0].count) == (5, "step", 5)
    assert train_script.main(["--data", *map(str, chunks), "--out", str(tmp_path / "b"),
                              "--seconds", "0.5", *small]) == 0
    assert bars[1].total is None and bars[1].count >= 1
    assert bars[1].postfix and re.fullmatch(r"\d+ s left", bars[1].postfix[0])


def test_a_game_pack_with_a_move_off_the_board_or_a_bad_winner_is_one_line(tmp_path, capsys):
    from leelaz.training.dataset import GamePack
    good = GamePack.from_games([([72, 288, 300, 60], "B+R"), ([72, 288], "W+3.5")])
    bad_move = GamePack(good.moves.copy(), good.lengths, good.winner, good.use_value)
    bad_move.moves[2] = 999
    bad_winner = GamePack(good.moves, good.lengths, np.array([1, 7], np.int8), good.use_value)
    short = GamePack(good.moves[:5], good.lengths, good.winner, good.use_value)
    for n, pack in enumerate([bad_move, bad_winner, short]):
        path = tmp_path / f"bad{n}.npz.xz"
        pack.save(str(path))
        code, lines = train(capsys, "--data", path, "--out", tmp_path / "run", "--steps", "1",
                            *SMALL)
        assert code == 1, lines
        assert str(path) in one_error_line(lines)
