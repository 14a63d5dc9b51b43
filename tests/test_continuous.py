"""Continuous training: one run across generations, resumed after a kill as if never killed.

Oracles: an uninterrupted run at the same seed (its loss curve, optimizer state and exported
file must be reproduced exactly by a run killed with SIGKILL and started again), figures
computed here (the schedule, the snapshot average, the window's arithmetic), and the run
folder's own files (which chunks were trained on, which held out).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import requires  # noqa: E402

torch = requires("torch")

from leelaz.training.continuous import BatchOrder, SnapshotAverage  # noqa: E402
from leelaz.training.train_config import parse_lr_schedule, scheduled_lr  # noqa: E402
from leelaz.training.torch_model import LeelaNet  # noqa: E402
from leelaz.zero import loop as zero_loop  # noqa: E402
from paths import REPO  # noqa: E402
from test_trainer import first_games  # noqa: E402

STEPS = 160
EVERY = 10  # checkpoint, report and snapshot period (steps)


@pytest.fixture(scope="module")
def chunks(tygem_dir, tmp_path_factory):
    """Training chunks of three 9-dan games (dump_supervised), and of a fourth for validation."""
    from leelaz.training.supervised import dump_supervised

    folder = tmp_path_factory.mktemp("chunks")
    games = first_games(tygem_dir, 4)
    out = []
    for name, lines in (("train", games[:3]), ("val", games[3:])):
        sgf = folder / f"{name}.sgf"
        sgf.write_text("".join(lines))
        dump_supervised(str(sgf), str(folder / name), log=lambda _: None, seed=1)
        out.append(sorted(str(p) for p in folder.glob(f"{name}.*.gz")))
    assert out[0] and out[1]
    return out[0], out[1]

def job_spec(root: Path, chunks, start: str) -> dict:
    """A generation's training job as the loop writes it (train/run continues; the
    candidate goes to the generation's folder)."""
    (root / "run.json").write_text("{}")
    data, val = chunks
    return dict(run_dir=str(root), data=data, val=val, out_dir=str(root / "train" / "run"),
                export_name=str(root / "train" / "g0001" / "leelaz-1x8.txt.gz"),
                blocks=1, filters=8, init_weights=start, steps=STEPS, batch=16,
                lr_schedule="0.01,80:0.003", warmup_steps=20, swa_every=EVERY,
                checkpoint_steps=EVERY, eval_steps=EVERY, eval_seconds=1e9,
                checkpoint_seconds=1e9, bn_batches=4, seed=5, device="cpu")


def start_job(spec: dict, folder: Path) -> subprocess.Popen:
    path = folder / "spec.json"
    path.write_text(json.dumps(spec))
    code = ("import json, sys; from leelaz.zero.jobs import train_job; "
            "print(json.dumps(train_job(json.load(open(sys.argv[1])))))")
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-c", code, str(path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def checkpoint_step(path: Path) -> int:
    try:
        return torch.load(path, map_location="cpu")["counters"]["step"]
    except (OSError, EOFError, RuntimeError, KeyError):
        return 0  # not there yet (it is replaced atomically, never seen half-written)


def curve(folder: Path) -> dict[int, tuple]:
    """step -> (train policy CE, train value MSE, val policy CE, lr): the last report of
    each step (a run killed after a report and before its checkpoint repeats the report)."""
    out = {}
    for line in (folder / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        out[m["step"]] = (m["train_policy_ce"], m["train_value_mse"], m["val_policy_ce"],
                          m["lr"])
    return out


def test_a_generation_killed_with_sigkill_resumes_its_training_exactly(chunks, tmp_path,
                                                                       random_weights):
    start = random_weights(1, 8, seed=4)
    whole = tmp_path / "whole"
    whole.mkdir()
    proc = start_job(job_spec(whole, chunks, start), whole)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["steps_done"] == STEPS

    killed = tmp_path / "killed"
    killed.mkdir()
    spec = job_spec(killed, chunks, start)
    ckpt = killed / "train" / "run" / "checkpoint.pt"
    proc = start_job(spec, killed)
    deadline = time.monotonic() + 300
    while checkpoint_step(ckpt) < 3 * EVERY:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    at_kill = checkpoint_step(ckpt)
    assert 0 < at_kill < STEPS, "the kill must land mid-training"
    proc = start_job(spec, killed)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["steps_done"] == STEPS

    a = torch.load(whole / "train" / "run" / "checkpoint.pt", map_location="cpu")
    b = torch.load(ckpt, map_location="cpu")
    assert a["counters"]["step"] == b["counters"]["step"] == STEPS
    assert b["counters"]["runs"] == 2  # it really was started twice
    # The optimizer went on where it was: Adam's step count is the run's, its moments equal.
    for state_a, state_b in zip(a["optimizer"]["state"].values(),
                                b["optimizer"]["state"].values()):
        assert int(state_a["step"]) == int(state_b["step"]) == STEPS
        assert torch.equal(state_a["exp_avg"], state_b["exp_avg"])
        assert torch.equal(state_a["exp_avg_sq"], state_b["exp_avg_sq"])
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    assert a["swa"]["count"] == b["swa"]["count"] == STEPS // EVERY

    # The loss curve continues: every report after the resume equals the uninterrupted one.
    curve_a, curve_b = curve(whole / "train" / "run"), curve(killed / "train" / "run")
    assert set(curve_a) == set(curve_b) == set(range(EVERY, STEPS + 1, EVERY))
    for step in curve_a:
        assert curve_b[step] == pytest.approx(curve_a[step], rel=1e-6, abs=1e-7), step
    assert curve_a[STEPS][3] == pytest.approx(0.003) and curve_a[EVERY][3] < 0.01
    candidate = Path(spec["export_name"])
    assert candidate.read_bytes() == (whole / "train" / "g0001" / "leelaz-1x8.txt.gz"
                                      ).read_bytes()


def test_the_learning_rate_is_the_runs_schedule_and_bad_ones_are_refused():
    schedule = parse_lr_schedule("0.002,1000:0.0005, 3000:0.0001")
    assert schedule == [(0, 0.002), (1000, 0.0005), (3000, 0.0001)]
    assert [scheduled_lr(schedule, s) for s in (0, 999, 1000, 2999, 3000, 10**6)] == \
        [0.002, 0.002, 0.0005, 0.0005, 0.0001, 0.0001]
    assert scheduled_lr(schedule, 4, warmup_steps=10) == pytest.approx(0.002 * 5 / 10)
    for bad in ("", "x", "0.1,5", "0.1,5:0.2,5:0.1", "0.1,5:-1", "5:0.1", "nan"):
        with pytest.raises(ValueError):
            parse_lr_schedule(bad)


def test_batches_depend_on_the_step_only_and_cover_every_position_once_a_pass():
    order = BatchOrder(seed=3, n=50, device="cpu")
    stream = torch.cat([order.at(step, 16)[0] for step in range(25)])  # 400 samples, 8 passes
    for p in range(8):
        assert sorted(stream[50 * p:50 * (p + 1)].tolist()) == list(range(50))
    fresh = BatchOrder(seed=3, n=50, device="cpu")  # a resumed run starts at step 17
    idx, sym = fresh.at(17, 16)
    assert torch.equal(idx, order.at(17, 16)[0]) and torch.equal(sym, order.at(17, 16)[1])


def test_the_snapshot_average_is_leela_zeros_swa():
    """avg_n = avg_{n-1} + (w_n - avg_{n-1}) / min(n, max_n), computed here by hand."""
    net = LeelaNet(1, 4)
    average = SnapshotAverage(net, max_n=2)
    values = [1.0, 3.0, 7.0]
    for v in values:
        with torch.no_grad():
            net.value_fc2.bias.fill_(v)
        average.add(net)
    expected = 1.0
    expected = expected + (3.0 - expected) / 2
    expected = expected + (7.0 - expected) / 2
    assert average.params["value_fc2.bias"].item() == pytest.approx(expected)


def test_the_window_grows_slower_than_the_run():
    assert zero_loop.window_size(50_000, 100_000) == 50_000
    assert zero_loop.window_size(100_000, 100_000) == 100_000
    grown = zero_loop.window_size(1_000_000, 100_000)
    assert grown == int(100_000 * (1 + 0.4 * (10 ** 0.65 - 1) / 0.65))
    assert 100_000 < grown < 400_000
    assert zero_loop.steps_for(51_200, 4.0, 256) == 800


def test_the_trainer_says_where_its_time_goes(chunks, tmp_path, monkeypatch):
    """time_<phase> in the metrics: each phase gets its own time and no other's. The trainer's
    phase clock is replaced by one that moves only by known amounts, added by each step, each
    evaluation and each export (oracle: those amounts times the counts the run's settings
    fix, computed here); the loop's log line gives the job's rest."""
    import types

    from leelaz.training import trainer

    clock = [0.0]
    monkeypatch.setattr(trainer, "time", types.SimpleNamespace(
        time=time.time, perf_counter=lambda: clock[0]))
    ticks = {"_step": 0.03, "_evaluate_and_log": 0.2, "_export_and_save": 0.1}
    for name, tick in ticks.items():
        original = getattr(trainer._Run, name)

        def ticking(self, *args, _original=original, _tick=tick):
            clock[0] += _tick
            return _original(self, *args)
        monkeypatch.setattr(trainer._Run, name, ticking)
    data, val = chunks
    result = trainer.train(data, str(tmp_path / "run"), blocks=1, filters=8, steps=12,
                           batch=16, seed=3, device="cpu", val=val, eval_steps=4,
                           eval_seconds=1e9, checkpoint_steps=6, checkpoint_seconds=1e9)
    m = result.metrics
    steps, reports, exports = 12, 12 // 4 + 1, 12 // 6 + 1  # each period's, then the final
    assert set(trainer.PHASES) == {"load", "steps", "eval", "export"}
    assert m["time_load"] == 0
    assert m["time_steps"] == pytest.approx(steps * 0.03)
    assert m["time_eval"] == pytest.approx(reports * 0.2)
    assert m["time_export"] == pytest.approx(exports * 0.1)
    line = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    # The last line is written during the last evaluation, before the last export.
    assert line["time_eval"] == pytest.approx((reports - 1) * 0.2)
    assert line["time_export"] == pytest.approx((exports - 1) * 0.1)
    shown = zero_loop.training_phases({"load": 1.0, "steps": 2.5}, 5.0)
    assert shown == ": load 1.0 s, steps 2.5 s, start and the rest 1.5 s"
    assert zero_loop.training_phases({}, 5.0) == ""


class InProcess:
    """The loop's executor, running the training job in this process (the job is the same
    function the local and Ray executors run)."""

    name = "inprocess"

    def train(self, spec: dict) -> dict:
        from leelaz.zero.jobs import train_job

        return train_job({**spec, "device": "cpu", "bn_batches": 2})


def fake_generation(run, gen: int, best: str, game_chunks: list[str]) -> dict:
    """A generation whose self-play is done: one chunk and one SGF per game."""
    import shutil

    folder = run.selfplay_dir(gen, best) / "j00"
    folder.mkdir(parents=True)
    for i, chunk in enumerate(game_chunks):
        shutil.copy(chunk, folder / f"{i:06d}-{gen:08d}.txt.0.gz")
        (folder / f"{i:06d}-{gen:08d}.sgf").write_text("(;GM[1])")
    record = {"gen": gen, "best": best, "done": False,
              "selfplay": {"dir": str(folder.parent.relative_to(run.root)), "done": True,
                           "games": len(game_chunks)}}
    run.save_generation(record)
    return record


def test_the_loop_goes_on_with_one_training_across_generations(tygem_dir, tmp_path,
                                                               random_weights):
    """Two generations: the second continues the first's training (step count, optimizer
    state) even though its best network is still the start; one game in `holdout` of the
    newest generation is validation and never trained on; the fixed external games are
    reported per generation; steps follow the new positions."""
    from leelaz.training.dataset import ChunkPositions
    from leelaz.training.supervised import dump_supervised
    from leelaz.zero.loop import Settings, ZeroLoop
    from leelaz.zero.rundir import RunDir

    games = first_games(tygem_dir, 6)
    per_game = []
    for i, line in enumerate(games[:4]):
        sgf = tmp_path / f"g{i}.sgf"
        sgf.write_text(line)
        dump_supervised(str(sgf), str(tmp_path / f"g{i}"), log=lambda _: None, seed=1)
        per_game.append(str(tmp_path / f"g{i}.0.gz"))
    external = tmp_path / "external.sgf"
    external.write_text("".join(games[4:6]))

    run = RunDir(tmp_path / "run")
    run.root.mkdir()
    info = run.create(random_weights(1, 8, seed=6), 1, 8, seed=3)
    settings = Settings(steps=None, reuse=0.05, batch=16, holdout=2, swa_snapshots=2,
                        lr=0.01, warmup_steps=5, val_sgf=(str(external),), val_games=2,
                        window_min=10**6, progress=False)
    loop = ZeroLoop(run, info, settings, InProcess(), say=lambda _: None)

    first = fake_generation(run, 1, info.start, per_game[:2])
    loop.train(first)
    tr1 = first["train"]
    trained, held = [per_game[0]], [per_game[1]]  # game 1 of 2 (index % 2 == 1) held out
    new = len(ChunkPositions(trained, "cpu"))
    assert tr1["new_positions"] == new and tr1["val_chunks"] == 1
    assert tr1["steps"] == max(1, math.ceil(0.05 * new / 16))
    assert tr1["target_step"] == tr1["steps_done"] == tr1["steps"]
    window = (run.train_dir(1) / "window.txt").read_text().split()
    assert [run.root / w for w in window] == [run.selfplay_dir(1, info.start) / "j00" /
                                              "000000-00000001.txt.0.gz"]
    assert len(ChunkPositions(held, "cpu")) > 0
    metrics = tr1["metrics"]
    assert 0 <= metrics["val_top1"] <= 1 and 0 <= metrics["ext_top1"] <= 1
    assert metrics["ext_policy_ce"] > 0 and metrics["val_value_mse"] >= 0

    # Generation 2: the candidate was rejected, best is still the start; training goes on.
    second = fake_generation(run, 2, info.start, per_game[2:4])
    loop.train(second)
    tr2 = second["train"]
    assert tr2["target_step"] == tr2["steps_done"] == tr1["steps"] + tr2["steps"]
    ck = torch.load(run.root / "train" / "run" / "checkpoint.pt", map_location="cpu")
    assert ck["counters"]["step"] == tr2["target_step"] and ck["counters"]["runs"] == 2
    adam_steps = {int(s["step"]) for s in ck["optimizer"]["state"].values()}
    assert adam_steps == {tr2["target_step"]}  # one optimizer, never restarted
    assert tr2["candidate"] != tr1["candidate"]
    window = (run.train_dir(2) / "window.txt").read_text().split()
    assert len(window) == 2  # gen 2's game 0 and gen 1's game 0; no held-out game
    assert all("000001-" not in w for w in window)

    # The loop killed after the trainer finished, before the record said so: the rerun
    # trains nothing more and takes the same candidate and figures.
    again = json.loads(json.dumps(second))
    again["train"].pop("done")
    loop.train(again)
    assert again["train"]["steps_done"] == tr2["steps_done"]
    assert again["train"]["candidate"] == tr2["candidate"]
    assert again["train"]["metrics"] == tr2["metrics"]
    # Where generation 2's training time went stays the first call's: the second trained
    # nothing and had nothing to say.
    assert set(tr2["phases"]) == {"load", "steps", "eval", "export"}
    assert again["train"]["phases"] == tr2["phases"]
    assert 0 < sum(tr2["phases"].values()) <= tr2["seconds"]


@pytest.mark.parametrize("args", [
    ["train", "--data", "x.sgf", "--out", "{dir}", "--steps", "1", "--lr-schedule", "0.1,5"],
    ["train", "--data", "x.sgf", "--out", "{dir}", "--steps", "1", "--val-external", "no.sgf"],
    ["zero", "{dir}", "--lr-schedule", "0.01,100:fast"],
    ["zero", "{dir}", "--reuse", "0"],
    ["zero", "{dir}", "--val-sgf", "no-such.sgf"],
])
def test_bad_values_of_the_new_options_are_one_line_and_exit_1(args, tmp_path, capsys,
                                                               monkeypatch):
    from leelaz.tools import run_verb

    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.sgf").write_text("(;GM[1]SZ[19];B[pd];W[dp])\n")
    folder = tmp_path / "out"
    assert run_verb([a.replace("{dir}", str(folder)) for a in args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ERROR: "), err
    assert not (folder / "run.json").exists()
