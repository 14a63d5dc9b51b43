"""The verbs of `leelaz` (leelaz/tools/): dispatch only on an exact verb name as the first
argument, so every engine command line (including a weights file named like a verb) still
starts the engine; each verb's --help; one-line errors; `leelaz weights`."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from leelaz.backends.random_weights import random_tensors
from leelaz.backends.weights import load_weights
from leelaz.cli import run
from leelaz.tools import VERBS

REPO = Path(__file__).resolve().parent.parent


def leelaz(*args, cwd=None, stdin="", timeout=120) -> subprocess.CompletedProcess:
    """`python -m leelaz ARGS` on this checkout, as a user would start it."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "leelaz", *args], input=stdin, text=True,
                          capture_output=True, cwd=cwd, env=env, timeout=timeout)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_has_help(verb):
    done = leelaz(verb, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Usage: leelaz {verb} ")


def test_engine_help_names_every_verb():
    done = leelaz("--help")
    assert done.returncode == 0, done.stderr
    for verb in VERBS:
        assert re.search(rf"\b{re.escape(verb)}\b", done.stdout.split("Verbs:")[1]), verb


def test_a_weights_file_named_like_a_verb_starts_the_engine(tmp_path, random_weights):
    for verb in VERBS:
        (tmp_path / verb).write_bytes(Path(random_weights(1, 8)).read_bytes())
    for verb in sorted(VERBS)[:2]:
        done = leelaz("-g", "-w", verb, "--noponder", cwd=tmp_path, stdin="name\nquit\n")
        assert done.returncode == 0, done.stderr
        assert "1 blocks" in done.stderr or "8 channels" in done.stderr
        assert done.stdout.startswith("= Leela Zero\n\n"), done.stdout


def test_a_verb_after_an_engine_flag_is_not_a_verb(capsys):
    """Only argv[0] selects a verb: `leelaz -q match` is the engine refusing a stray argument."""
    assert run(["-q", "weights"], stdin=None) == 1
    assert "ERROR" in capsys.readouterr().err


def test_the_engine_does_not_import_the_tools():
    code = ("import sys, leelaz.cli; from leelaz.cli import parse_args; parse_args(['-g']);"
            "print(sorted(m for m in sys.modules if m.startswith('leelaz.tools.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.stdout.strip() == "[]", done.stderr


def test_bad_input_is_one_error_line_and_a_nonzero_status(tmp_path):
    done = leelaz("weights", "info", str(tmp_path / "missing.txt"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"ERROR: {tmp_path / 'missing.txt'}: file not found"]
    done = leelaz("weights", "random", "--blocks", "x", "-o", str(tmp_path / "n.txt"))
    assert done.returncode == 2
    assert done.stderr.startswith("ERROR: Invalid value for '--blocks'")


def test_weights_random_info_convert(tmp_path):
    gz = tmp_path / "net.txt.gz"
    done = leelaz("weights", "random", "--blocks", "2", "--filters", "16", "--seed", "3",
                  "--tame", "-o", str(gz))
    assert done.returncode == 0, done.stderr
    net = load_weights(gz)
    assert (net.blocks, net.filters, net.version) == (2, 16, 1)
    # tame: the second convolution of each block has a fifth of the first one's spread
    expected = random_tensors(2, 16, 3, tame=True)
    assert np.array_equal(net.input_conv.weights.reshape(-1),
                          np.float32(np.char.mod("%.6g", expected[0]).astype(np.float64)))
    plain = random_tensors(2, 16, 3)
    ratio = np.std(expected[8]) / np.std(plain[8])
    assert ratio == pytest.approx(0.2, rel=1e-6)
    assert np.array_equal(expected[4], plain[4])

    text = tmp_path / "net.txt"
    assert leelaz("weights", "convert", str(gz), str(text)).returncode == 0
    assert text.read_bytes() == gzip.decompress(gz.read_bytes())
    again = tmp_path / "again.gz"
    assert leelaz("weights", "convert", str(text), str(again)).returncode == 0
    assert gzip.decompress(again.read_bytes()) == text.read_bytes()

    done = leelaz("weights", "info", str(gz), str(text))
    assert done.stdout.splitlines() == [f"{gz}: version 1, 2 blocks x 16 filters, gzip",
                                        f"{text}: version 1, 2 blocks x 16 filters, text"]


def test_weights_random_uniform_is_a_uniform_policy_and_even_value(tmp_path, lz_binary):
    """--uniform: the file is the plain random net of the same seed with the last layer of
    each head zero, and the C++ Leela Zero binary sees a uniform policy and a winrate of 0.5
    (per-mille heatmaps) on the empty board and after a few moves."""
    plain, uniform = tmp_path / "plain.txt", tmp_path / "uniform.txt"
    for path, extra in ((plain, []), (uniform, ["--uniform"])):
        done = leelaz("weights", "random", "--blocks", "1", "--filters", "8", "--seed", "4",
                      *extra, "-o", str(path))
        assert done.returncode == 0, done.stderr
    a, b = plain.read_text().splitlines(), uniform.read_text().splitlines()
    assert len(a) == len(b) == 1 + 4 * 3 + 6 + 8  # version, 3 convs, policy head, value head
    zeroed = {1 + 12 + 4, 1 + 12 + 5, len(a) - 2, len(a) - 1}  # policy FC w, b; value FC2 w, b
    for i, (x, y) in enumerate(zip(a, b)):
        if i in zeroed:
            assert set(y.split()) == {"0"} and len(y.split()) == len(x.split()), i
            assert set(x.split()) != {"0"}, i
        else:
            assert x == y, i
    commands = ["heatmap", "play b Q16", "play w D4", "play b C3", "heatmap", "quit"]
    out = subprocess.run([lz_binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-w",
                          str(uniform)], input="\n".join(commands) + "\n", text=True,
                         capture_output=True, timeout=120)
    maps = re.findall(r"((?:(?: *\d+ ){19}\n){19})pass: (\d+)\nwinrate: ([0-9.]+)",
                      out.stdout + out.stderr)
    assert len(maps) == 2, out.stdout + out.stderr
    per_mille = int(1000 / 362)  # 2.76 per mille for every legal move and for pass
    for (board, pass_, winrate), stones in zip(maps, (0, 3)):
        assert sorted(int(v) for v in board.split()) == [0] * stones + [per_mille] * (361 - stones)
        assert int(pass_) == per_mille
        assert float(winrate) == 0.5


def test_weights_random_uniform_policy_within_a_millionth(tmp_path):
    """Our network on a --uniform net: every move's prior 1/362 and the value 0.5 to 1e-6,
    in varied positions (the tower's random features reach neither head's output)."""
    from leelaz.backends.numpy_backend import NumpyBackend
    from leelaz.game.coords import BLACK, WHITE
    from leelaz.game.state import GameState
    from leelaz.nn.network import Network

    path = tmp_path / "uniform.txt.gz"
    assert leelaz("weights", "random", "--blocks", "2", "--filters", "16", "--uniform",
                  "-o", str(path)).returncode == 0
    weights = load_weights(str(path))
    net = Network(weights, NumpyBackend(weights, threads=1), seed=1)
    rng = np.random.default_rng(3)
    states = []
    for n in (0, 5, 40):
        state = GameState()
        for i in range(n):
            color = BLACK if i % 2 == 0 else WHITE
            legal = [v for v in range(441) if state.is_legal(color, v)]
            state.play(color, int(rng.choice(legal)))
        states.append(state)
    for ev in net.evaluate(states, symmetry=0):
        assert np.abs(ev.policy.astype(np.float64) - 1 / 362).max() < 1e-6
        assert abs(ev.winrate - 0.5) < 1e-6


def test_dump_supervised_verb_writes_what_the_gtp_command_writes(tygem_dir, tmp_path):
    """Each file is dumped as `dump_supervised FILE OUT/NAME` would, seeded per file; a
    missing file is one error line."""
    from leelaz.training.supervised import dump_supervised

    with gzip.open(tygem_dir / "tygem-9d-2011-12.sgf.gz", "rt") as f:
        lines = [next(f) for _ in range(40)]
    (tmp_path / "a.sgf").write_text("".join(lines[:35]))
    (tmp_path / "b.sgf").write_text("".join(lines[35:]))
    out = tmp_path / "out"
    done = leelaz("dump-supervised", str(tmp_path / "a.sgf"), str(tmp_path / "b.sgf"),
                  "-o", str(out), "--seed", "5", "-j", "2")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["a.0.gz", "a.1.gz", "b.0.gz"]
    mine = tmp_path / "mine"
    mine.mkdir()
    for seed, name in enumerate("ab", 5):
        dump_supervised(str(tmp_path / f"{name}.sgf"), str(mine / name), log=lambda _: None,
                        seed=seed)
    for chunk in out.iterdir():
        assert gzip.decompress(chunk.read_bytes()) == \
            gzip.decompress((mine / chunk.name).read_bytes())
    assert "40 games, 40 dumped" in done.stderr

    done = leelaz("dump-supervised", str(tmp_path / "missing.sgf"), "-o", str(out))
    assert done.returncode == 1
    assert done.stderr.strip() == f"ERROR: {tmp_path / 'missing.sgf'}: no such file"


def _figures(text: str, row: str) -> list[float]:
    """The numbers of the last table row that starts with `row`."""
    line = [x for x in text.splitlines() if x.split()[:1] == [row]][-1]
    return [float(x.replace(",", "")) for x in line.split()[1:]]


def test_bench_analyze_reads_both_engines_info_lines(lz_binary, random_weights):
    done = leelaz("bench", "analyze", "-w", random_weights(1, 8), "--seconds", "0.6",
                  "--moves", "40,200", "--interval", "10")
    assert done.returncode == 0, done.stderr
    ours, reference, ratio = _figures(done.stdout, "mean")
    assert ours > 0 and reference > 0
    # The ratio is printed with two decimals, from visits/s before their rounding to integers.
    assert ratio == pytest.approx(ours / reference, rel=0.01, abs=0.0051)
    assert len([x for x in done.stdout.splitlines() if "visits in" in x]) == 4


def _bench_analyze(tmp_path, *args):
    """`leelaz bench analyze` on a two-move game at moves 1 and 2, with the module's engine
    start and measurement replaced by the caller; asserts exit 0."""
    from click.testing import CliRunner

    from leelaz.tools.bench import analyze

    game = tmp_path / "g.sgf"
    game.write_text("(;SZ[19];B[pd];W[dp])")
    done = CliRunner().invoke(analyze.command, ["--game", str(game), "--moves", "1,2", *args])
    assert done.exit_code == 0, done.output
    return done


def test_bench_analyze_starts_fresh_engines_every_round(monkeypatch, tmp_path):
    """A second analysis of a position in the same engine would replay the first one's tree
    from the network cache: each round must measure engines started for it, closed after."""
    from leelaz.tools.bench import analyze

    class Engine:
        def __init__(self, name):
            self.name, self.closed, self.moves = name, False, []

        def close(self, timeout=None):
            self.closed = True

    started = []

    def start(name, argv, log=None):
        started.append(Engine(name))
        return started[-1]

    def measure(engine, game, move, seconds, interval):
        assert not engine.closed
        engine.moves.append(move)
        return {"visits": 10, "seconds": 1.0, "rate": 10.0}

    monkeypatch.setattr(analyze, "start_engine", start)
    monkeypatch.setattr(analyze, "analyze_once", measure)
    done = _bench_analyze(tmp_path, "--rounds", "3", "--ours", "a", "--reference", "b")
    assert [e.name for e in started] == ["leelaz", "LZ 0.17"] * 3
    assert all(e.closed and e.moves == [1, 2] for e in started)


def test_bench_analyze_compares_to_the_best_reference_after_warming_up(monkeypatch, tmp_path):
    """Several reference settings: the ratio is ours over the best of them; --warmup runs an
    untimed analysis on every engine before the timed positions."""
    from leelaz.tools.bench import analyze

    class Engine:
        def __init__(self, name):
            self.name, self.warm = name, False

        def close(self, timeout=None):
            pass

    rates = {"leelaz": 30.0, "LZ 0.17 #1": 10.0, "LZ 0.17 #2": 20.0}

    def measure(engine, game, move, seconds, interval):
        assert engine.warm  # warmed before any timed position
        return {"visits": 1, "seconds": 1.0, "rate": rates[engine.name]}

    def warm_up(engine, seconds, interval):
        assert seconds == 2.0
        engine.warm = True

    monkeypatch.setattr(analyze, "start_engine", lambda name, argv, log=None: Engine(name))
    monkeypatch.setattr(analyze, "analyze_once", measure)
    monkeypatch.setattr(analyze, "warm_up", warm_up)
    done = _bench_analyze(tmp_path, "--warmup", "2", "--ours", "a", "--reference", "b",
                          "--reference", "c")
    assert _figures(done.output, "mean") == [30.0, 10.0, 20.0, 1.5]


def test_bench_analyze_keeps_the_logs_and_reports_the_servers_line(monkeypatch, tmp_path):
    """--log-dir: each engine's stderr goes to its own file, and the network server's line
    of each round is printed after the table."""
    from leelaz.tools.bench import analyze

    logs, rounds = {}, []

    class Engine:
        def close(self, timeout=None):
            pass

    def start(name, argv, log=None):
        logs[name] = log
        with open(log, "a") as f:
            f.write("Thinking...\n")
            if name == "leelaz":
                rounds.append(name)
                f.write(f"Network server (torch): 900 evaluations in {len(rounds)} calls\n")
        return Engine()

    monkeypatch.setattr(analyze, "start_engine", start)
    monkeypatch.setattr(analyze, "analyze_once",
                        lambda *a: {"visits": 1, "seconds": 1.0, "rate": 1.0})
    done = _bench_analyze(tmp_path, "--rounds", "2", "--ours", "a", "--reference", "b",
                          "--log-dir", str(tmp_path / "logs"))
    assert logs == {"leelaz": str(tmp_path / "logs" / "leelaz.log"),
                    "LZ 0.17": str(tmp_path / "logs" / "LZ-0.17.log")}
    reported = [x for x in done.output.splitlines() if "Network server" in x]
    assert reported == [f"leelaz: Network server (torch): 900 evaluations in {n} calls"
                        for n in (1, 2)]


def test_bench_genmove_reads_both_engines_statistics_lines(lz_binary, random_weights):
    """Playouts and visits a move from each engine's stderr line after its genmoves on the
    clock; the last column is each engine's playouts over ours."""
    done = leelaz("bench", "genmove", "-w", random_weights(1, 8), "--moves", "40,41",
                  "--genmoves", "2", "--clock", "0 1 5")
    assert done.returncode == 0, done.stderr
    ours, reference = _figures(done.stdout, "leelaz"), _figures(done.stdout, "LZ")
    assert ours[0] == 4 and reference[1] == 4  # moves ("LZ 0.17" splits into two words)
    assert ours[1] > 0 and reference[2] > 0 and ours[2] >= ours[1]  # visits >= playouts
    assert 0.15 <= ours[3] <= 0.6 and 0.15 <= reference[4] <= 0.6  # 1 s for 5 moves
    # The ratio is printed with two decimals, from means the table rounds to a tenth under
    # 1,000 and to integers above: each displayed mean is off by up to half its last digit.
    ratio = reference[2] / ours[1]
    slack = sum((0.05 if x < 1000 else 0.5) / x for x in (reference[2], ours[1]))
    assert reference[5] == pytest.approx(ratio, abs=0.0051 + ratio * slack)
    lines = [x for x in done.stdout.splitlines() if x.startswith("  move ")]
    assert len(lines) == 4  # each position on each engine
    bad = leelaz("bench", "genmove", "-w", random_weights(1, 8), "--clock", "1 2")
    assert bad.returncode == 1 and "--clock like '0 1 2'" in bad.stderr


def test_bench_engine_and_search_run(lz_binary, random_weights):
    done = leelaz("bench", "engine", "-w", random_weights(1, 8), "-v", "60", "--runs", "1")
    assert done.returncode == 0, done.stderr
    assert _figures(done.stdout, "leelaz")[0] >= 60 and _figures(done.stdout, "LZ")[1] >= 60
    done = leelaz("bench", "search", "-v", "100", "--batch", "1,8", "--runs", "1")
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^instant\s+benchmark\s+(\d+)\s+(\d+)\s", done.stdout, re.M)
    assert [int(b) for b, _ in rows] == [1, 8] and min(int(n) for _, n in rows) >= 99
    done = leelaz("bench", "search", "-v", "100", "--batch", "8", "--runs", "1", "--at", "40,120")
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^instant\s+move (\d+)\s+8\s+(\d+)\s", done.stdout, re.M)
    assert [int(m) for m, _ in rows] == [40, 120] and min(int(n) for _, n in rows) >= 99
    done = leelaz("bench", "search", "--at", "0")
    assert done.returncode == 2 and "positive integers" in done.stderr
    done = leelaz("bench", "net", "-w", "x8")
    assert done.returncode == 1 and "BLOCKSxFILTERS" in done.stderr


def test_bench_startup_runs(lz_binary, random_weights):
    """The start-up benchmark's table: one first start, then each kind per run, and the ratio
    of a later start to the reference's --cpu-only start computed from the medians shown."""
    done = leelaz("bench", "startup", "-w", random_weights(1, 8), "--runs", "1")
    assert done.returncode == 0, done.stderr
    medians = dict(re.findall(r"^(leelaz later start|LZ 0\.17 --cpu-only)\s+([\d.]+)",
                              done.stdout, re.M))
    ratio = float(re.search(r"later start / LZ 0\.17 --cpu-only: ([\d.]+)x",
                            done.stdout).group(1))
    assert ratio == pytest.approx(float(medians["leelaz later start"])
                                  / float(medians["LZ 0.17 --cpu-only"]), rel=0.1)  # 3 decimals
    assert re.search(r"^leelaz first start\s+[\d.]+\s+[\d.]+$", done.stdout, re.M)


def test_quality_reads_the_top_move_and_scores_agreement():
    from leelaz.tools.bench.quality import agreement, top_line

    line = ("info move Q16 visits 40 winrate 4812 prior 1200 lcb 4700 order 1 pv Q16 D4 "
            "info move d4 visits 52 winrate 5023 prior 1500 lcb 4900 order 0 pv D4 Q16 "
            "info move pass visits 1 winrate 100 prior 10 lcb 0 order 2 pv pass")
    assert top_line(line) == ("D4", 0.5023, 52)
    assert top_line("info move C3 visits 7 winrate 9000 prior 1 pv C3") == ("C3", 0.9, 7)
    assert top_line("") is None
    truth = [("D4", 0.50, 900), ("Q16", 0.40, 800), None, ("C3", 0.70, 700)]
    answers = [("D4", 0.47, 100), ("R4", 0.45, 120), ("D4", 0.5, 90), ("C3", 0.70, 110)]
    got = agreement(truth, answers)
    assert (got["agree"], got["positions"]) == (2, 4)
    low, high = got["interval"]  # Wilson's for 2 of 4, the textbook value: 0.150-0.850
    assert (round(low, 3), round(high, 3)) == (0.150, 0.850)
    assert got["winrate_error"] == pytest.approx((0.03 + 0.05 + 0.0) / 3)
    assert got["visits"] == pytest.approx((100 + 120 + 110) / 3)


_FAKE_ANALYST = r"""
import sys
move, answer = 0, sys.argv[1]
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "quit":
        print("= \n", flush=True)
        break
    if words[0] == "loadsgf":
        move = int(words[2])
    if words[0] == "lz-analyze":  # one line, then the blank line of a finished analysis
        top = answer if answer != "echo" else "ABCDEFGHJ"[move % 9] + str(1 + move % 19)
        print("=", flush=True)
        print(f"info move {top} visits {move} winrate {100 * (move % 100)} prior 1 lcb 1 "
              f"order 0 pv {top} info move T19 visits 1 winrate 0 prior 1 lcb 0 order 1 pv T19",
              flush=True)
        print("", flush=True)
        continue
    print("= \n", flush=True)
"""


def test_bench_analyze_quality_scores_answers_against_the_long_search(tmp_path):
    """Fake engines whose answer is a function of the position: the same one as the long
    search agrees everywhere with no winrate difference; one that always answers A1 never
    agrees; the visits shown are the fake's (the move number) plus the second move's one."""
    script = tmp_path / "analyst.py"
    script.write_text(_FAKE_ANALYST)
    echo, contrary = (f"{sys.executable} {script} {answer}" for answer in ("echo", "A1"))
    games = REPO / "tests" / "fixtures" / "tygem-9d" / "tygem-9d-2011-12.sgf.gz"
    done = leelaz("bench", "analyze", "--quality", "--positions", "4", "--seconds", "0.3",
                  "--long-seconds", "0.3", "--game", str(games), "--ours", echo, "--ours",
                  contrary, "--reference", "none", "--long-search", echo, "-w", "1x8")
    assert done.returncode == 0, done.stderr
    moves = [int(m) for m in re.findall(r"^  position \d+/4 \(move (\d+)\)", done.stdout, re.M)]
    assert len(moves) == 4 and all(20 < m <= 251 for m in moves)
    rows = {name: row for name, *row in re.findall(
        r"^(leelaz #\d)\s+(\d+)/(\d+)\s+\S+\s+\S+\s+(\S+)\s+(\d+)", done.stdout, re.M)}
    assert rows["leelaz #1"][:3] == ["4", "4", "0.0"]
    assert rows["leelaz #2"][:2] == ["0", "4"]
    shown = sum(moves) / 4 + 1  # the top move's visits are the move number, plus T19's one
    assert int(rows["leelaz #1"][3]) == round(shown)


def test_bench_startup_times_the_first_two_moves(tmp_path, random_weights):
    """--genmove: each kind's two replies, timed from the spawn, the second after the first
    (an engine that answers the second move a known time after the first)."""
    fake = tmp_path / "fake_engine.py"
    fake.write_text("import sys, time\nfor line in sys.stdin:\n"
                    "    if line.startswith('genmove w'): time.sleep(0.3)\n"
                    "    if line.startswith('genmove'): print('= D4\\n', flush=True)\n"
                    "    if line.startswith('quit'): break\n")
    engine = f"{sys.executable} {fake}"
    done = leelaz("bench", "startup", "--genmove", "50", "--runs", "1", "-w",
                  random_weights(1, 8), "--ours", engine, "--reference", engine)
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^(leelaz core, numba cached|leelaz core, fresh cache|leelaz Python "
                      r"search|LZ 0\.17 --cpu-only)\s+([\d.]+)\s+([\d.]+)", done.stdout, re.M)
    assert len(rows) == 4
    assert all(float(second) - float(first) >= 0.3 for _, first, second in rows)


def test_bench_lines_name_the_cpu(tmp_path):
    """The figures of a CPU run name the processor (the first `model name` of cpuinfo)."""
    from leelaz.tools.bench import common

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu\n\n"
                    "processor\t: 1\nmodel name\t: Other CPU\n")
    assert common.cpu_name(str(info)) == "Test CPU 9000"
    assert common.cpu_name(str(tmp_path / "missing"))  # Python's guess, never empty
    line = common.load_line()
    assert re.fullmatch(r"load average \d+\.\d on \d+ CPUs \(.+\)", line), line
