"""The command line: every flag of Leela Zero 0.17 (read from the binary's own --help), value
forms, validation, start-up lines and the log file."""

from __future__ import annotations

import io
import re
import subprocess

import pytest

from leelaz import __version__
from leelaz.batching import play_batch_size, resolve_threads, search_batch_size
from leelaz.cli import UsageProblem, parse_args, run
from leelaz.config import EngineConfig

# A value for each flag that takes one (Leela Zero's --help says `arg`).
VALUES = {"threads": "2", "playouts": "10", "visits": "10", "lagbuffer": "50",
          "resignpct": "5", "weights": "net.txt", "logfile": "log.txt", "timemanage": "off",
          "gpu": "0", "batchsize": "4", "precision": "single", "seed": "7", "randomcnt": "3",
          "randomvisits": "2", "randomtemp": "0.5"}


def lz_flags(lz_binary) -> list[tuple[str | None, str, bool]]:
    """(short, long, takes_value) for every option in the binary's --help."""
    text = subprocess.run([lz_binary, "--help"], capture_output=True, text=True).stdout
    flags = []
    for m in re.finditer(r"^  (?:-(\w) \[ )?--([\w-]+)(?: \])?( arg)?", text, re.M):
        flags.append((m.group(1), m.group(2), m.group(3) is not None))
    return flags


def test_every_lz_flag_is_accepted(lz_binary):
    flags = lz_flags(lz_binary)
    assert len(flags) >= 25
    for short, long, takes_value in flags:
        if long == "help":
            continue
        extra = ["--noponder"] if long == "playouts" else []
        if long == "full-tuner":
            extra = ["--precision", "single"]
        value = [VALUES[long.replace("-", "")]] if takes_value else []
        assert parse_args([f"--{long}", *value, *extra]) is not None, long
        if short:
            assert parse_args([f"-{short}", *value, *extra]) is not None, short


def test_value_forms():
    cfg = parse_args(["-g", "-t4", "-p2500", "--noponder", "--visits=300", "-r", "5",
                      "--gpu", "1", "--gpu=2", "-s", "18446744073709551615", "-m30",
                      "--randomtemp=0.8", "-b0", "--timemanage=fast", "-w", "x.txt", "-q",
                      "-n", "-d", "--cpu-only"])
    assert cfg == EngineConfig(
        weights="x.txt", gtp=True, quiet=True, lagbuffer=0, timemanage="fast", ponder=False,
        resignpct=5, playouts=2500, visits=300, threads=4, seed=2**64 - 1, seed_given=True,
        noise=True, dumbpass=True, randomcnt=30, randomtemp=0.8, cpu_only=True, gpus=(1, 2),
        command_line=cfg.command_line)
    assert cfg.command_line[:2] == ("-g", "-t4")


def test_defaults_are_lz_defaults():
    cfg = parse_args(["-s", "1"])
    assert (cfg.threads, cfg.playouts, cfg.visits, cfg.lagbuffer, cfg.resignpct) == \
        (0, 0, 0, 100, -1)
    assert (cfg.timemanage, cfg.effective_timemanage, cfg.ponder, cfg.randomcnt,
            cfg.randomvisits, cfg.randomtemp, cfg.batchsize, cfg.precision) == \
        ("auto", "on", True, 0, 1, 1.0, 0, "auto")
    assert parse_args(["-n"]).effective_timemanage == "no_pruning"


def test_random_seed_goes_into_the_sgf_comment():
    cfg = parse_args(["-g"])
    assert not cfg.seed_given and 0 <= cfg.seed < 2**64
    assert cfg.sgf_options_comment == f"Leela Zero options: -g --seed {cfg.seed}"
    assert parse_args(["-g", "-s", "3"]).sgf_options_comment == "Leela Zero options: -g -s 3"


@pytest.mark.parametrize("argv,message", [
    (["--foo"], "--foo"),
    (["-g", "stray"], "Unrecognized argument: stray"),
    (["-p", "100"], "--noponder"),
    (["-t", "x"], "threads"),
    (["-t", "-1"], "threads"),
    (["-r", "101"], "resignpct"),
    (["-r", "-2"], "resignpct"),
    (["--timemanage", "sometimes"], "timemanage"),
    (["--precision", "double"], "precision"),
    (["--full-tuner"], "precision"),
    (["-s", "-1"], "seed"),
    (["-s", str(2**64)], "seed"),
    (["--randomtemp", "0"], "randomtemp"),
    (["-w"], "-w"),
    (["--gpu", "a"], "gpu"),
])
def test_bad_command_lines(argv, message):
    with pytest.raises(UsageProblem, match=re.escape(message)):
        parse_args(argv)
    err = io.StringIO()
    assert run(argv, stdin=io.StringIO(""), stdout=io.StringIO(), stderr=err) == 1
    assert err.getvalue().startswith("ERROR: ")


def test_help_lists_every_flag(capsys):
    assert run(["--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--gtp", "--weights", "--threads", "--playouts", "--visits", "--resignpct",
                 "--logfile", "--quiet", "--lagbuffer", "--timemanage", "--noponder",
                 "--benchmark", "--cpu-only", "--gpu", "--full-tuner", "--tune-only",
                 "--batchsize", "--precision", "--noise", "--seed", "--dumbpass",
                 "--randomcnt", "--randomvisits", "--randomtemp"):
        assert flag in text


def session(argv, script="name\n", home=None, monkeypatch=None):
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, stdin=io.StringIO(script), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def no_default_net(tmp_path, monkeypatch):
    """No network at Leela Zero's default path, none shipped: start without one."""
    import leelaz.cli
    monkeypatch.setattr(leelaz.cli, "DEFAULT_WEIGHTS", str(tmp_path / "none"))
    monkeypatch.setattr(leelaz.cli, "find_weights", lambda cfg: cfg.weights)
    return tmp_path


def test_startup_lines_like_lz(lz_binary, random_weights, no_default_net):
    lz = subprocess.run([lz_binary, "--cpu-only", "-g", "-t", "1", "-s", "5", "-w",
                         random_weights(1, 8)], input="quit\n", capture_output=True,
                        text=True, timeout=30)
    code, out, err = session(["--cpu-only", "-g", "-t", "1", "-s", "5"])
    assert code == 0 and out == "= Leela Zero\n\n\n"
    assert err.splitlines()[0] == f"leelaz {__version__}: no network weights"  # ours only
    assert err.splitlines()[1:3] == lz.stderr.splitlines()[:2] == \
        ["Using 1 thread(s).", "RNG seed: 5"]
    assert "only commands that need no network" in err


def test_startup_lines_with_a_network_like_lz(lz_binary, random_weights):
    net = random_weights(1, 8)
    lz = subprocess.run([lz_binary, "--cpu-only", "-g", "-t", "1", "-s", "5", "-w", net],
                        input="quit\n", capture_output=True, text=True, timeout=30)
    code, out, err = session(["--cpu-only", "-g", "-t", "1", "-s", "5", "-w", net],
                             "name\nprintsgf\n")
    assert code == 0
    lz_lines, ours = lz.stderr.splitlines(), err.splitlines()
    assert ours[0] == f"leelaz {__version__}: weights {net} (1 blocks x 8 filters)"
    assert ours[1:6] == lz_lines[:2] + ours[3:4] + lz_lines[3:5]
    assert ours[3].startswith("BLAS Core: ")  # only the library differs
    assert "PB[Leela Zero 0.17 net-1x8-]" in out
    theirs = subprocess.run([lz_binary, "--cpu-only", "-g", "-t", "1", "-s", "5", "-w", net],
                            input="printsgf\n", capture_output=True, text=True, timeout=30)
    comment = [x for x in theirs.stdout.splitlines() if x.startswith("C[")]
    assert comment == [x for x in out.splitlines() if x.startswith("C[")] == \
        [f"C[Leela Zero options: --cpu-only -g -t 1 -s 5 -w {net}]"]


def test_bad_weights_file_is_an_error(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n1 2 3\n")
    code, out, err = session(["-g", "--cpu-only", "-w", str(bad)])
    assert code == 1 and str(bad) in err and out == ""


def test_quiet_prints_nothing_on_stderr(no_default_net):
    assert session(["-g", "-q"]) == (0, "= Leela Zero\n\n\n", "")


def test_without_gtp_the_licence_goes_to_stdout(no_default_net):
    code, out, _ = session(["-q"])
    assert out.startswith(f"leelaz {__version__} (Leela Zero 0.17 in Python).")
    assert out.endswith("Leela: = Leela Zero\n\nLeela: \n")


def test_missing_weights_file_is_an_error(tmp_path):
    code, out, err = session(["-g", "-w", str(tmp_path / "missing.txt")])
    assert code == 1 and f"Could not open weights file: {tmp_path / 'missing.txt'}" in err


def test_log_file(tmp_path, no_default_net):
    log = tmp_path / "session.log"
    code, out, err = session(["-g", "-t", "1", "--cpu-only", "-s", "9", "-l", str(log)],
                             "name\n3 bogus\n")
    assert err.startswith(f"leelaz {__version__}: no network weights\nLogging to {log}.\n")
    text = log.read_text()
    assert text.startswith(f"leelaz {__version__}: no network weights\n"
                           "Using 1 thread(s).\nRNG seed: 9\n")
    assert ">>name\n= Leela Zero\n\n>>3 bogus\n?3 unknown command\n\n" in text
    # append mode, as in Leela Zero
    session(["-g", "-q", "-l", str(log)], "version\n")
    assert log.read_text().startswith(text) and log.read_text().endswith(">>version\n= 0.17\n\n\n")


def test_thread_and_batch_resolution():
    assert resolve_threads(EngineConfig(cpu_only=True), hw=8) == (8, 1)
    assert resolve_threads(EngineConfig(cpu_only=True, threads=20), hw=8) == (8, 1)
    assert resolve_threads(EngineConfig(cpu_only=True, threads=3), hw=8) == (3, 1)
    assert resolve_threads(EngineConfig(), hw=8) == (10, 5)
    assert resolve_threads(EngineConfig(gpus=(0, 1)), hw=8) == (20, 5)
    assert resolve_threads(EngineConfig(threads=7), hw=8) == (7, 4)
    assert resolve_threads(EngineConfig(batchsize=8), hw=8) == (16, 8)
    with pytest.raises(ValueError):
        resolve_threads(EngineConfig(threads=2, batchsize=4), hw=8)


def test_search_batch_size_defaults():
    """Leela Zero's thread count when -t or --batchsize is given; without them 32 leaves on
    OpenCL, and with --cpu-only at least two leaves per NumPy worker (min(2, CPUs) workers)."""
    assert search_batch_size(EngineConfig(cpu_only=True, threads=2), hw=2) == 2
    assert search_batch_size(EngineConfig(cpu_only=True, threads=1), hw=8) == 1
    assert search_batch_size(EngineConfig(cpu_only=True, batchsize=3), hw=2) == 2
    assert search_batch_size(EngineConfig(cpu_only=True), hw=1) == 2
    assert search_batch_size(EngineConfig(cpu_only=True), hw=2) == 4
    assert search_batch_size(EngineConfig(cpu_only=True), hw=8) == 8
    assert search_batch_size(EngineConfig(), hw=2) == 32
    assert search_batch_size(EngineConfig(threads=4), hw=2) == 4


def test_play_batch_size_is_smaller_on_a_gpu_by_default_only():
    """A move on the clock collects 16 leaves on OpenCL when neither -t nor --batchsize is
    given; otherwise the same as the search's batch (the flags, and --cpu-only, decide)."""
    assert play_batch_size(EngineConfig(), hw=16) == 16
    assert play_batch_size(EngineConfig(threads=24), hw=16) == 24
    assert play_batch_size(EngineConfig(batchsize=8), hw=16) == 16  # LZ: 2 x 8 threads
    assert play_batch_size(EngineConfig(cpu_only=True), hw=2) == 4
    assert play_batch_size(EngineConfig(cpu_only=True, threads=1), hw=2) == 1


def test_default_batches_are_per_gpu():
    """Several --gpu ids split each batch over the devices (backends/demux.py), so the
    default batches grow with them, as Leela Zero's default threads do (2 x 5 per --gpu):
    each GPU gets the rows one GPU alone gets. Given -t or --batchsize, they decide."""
    two = EngineConfig(gpus=(0, 1))
    assert resolve_threads(two, hw=32) == (20, 5)  # Leela Zero's own figure for two GPUs
    assert search_batch_size(two, hw=32) == 2 * search_batch_size(EngineConfig(), hw=32) == 64
    assert play_batch_size(two, hw=32) == 2 * play_batch_size(EngineConfig(), hw=32) == 32
    assert search_batch_size(EngineConfig(gpus=(0, 1), threads=32), hw=32) == 32
    assert play_batch_size(EngineConfig(gpus=(1,)), hw=32) == 16


@pytest.mark.parametrize("blocks, filters", [(2, 32), (6, 64)])
def test_startup_memory_split_like_lz(lz_binary, random_weights, blocks, filters):
    """At start-up Leela Zero splits its default 5,200,000,000 bytes (10% cache) and says so;
    setting only the cache percentage later splits that same budget."""
    net = random_weights(blocks, filters)
    script = "lz-setoption name percentage of memory for cache value 20\nquit\n"
    lz = subprocess.run([lz_binary, "--cpu-only", "-g", "-w", net], input=script,
                        capture_output=True, text=True, timeout=60)
    code, out, err = session(["--cpu-only", "-g", "-w", net], script=script)

    def memory_lines(text):
        return [x for x in text.splitlines() if x.startswith("Setting max tree size")]
    assert code == lz.returncode == 0
    assert len(memory_lines(lz.stderr)) == 1
    assert memory_lines(err) == memory_lines(lz.stderr)
    assert out.splitlines()[0] == lz.stdout.splitlines()[0]
    assert out.splitlines()[0].startswith("= Setting max tree size to ")


# ---- --benchmark ----------------------------------------------------------------------------

def test_benchmark_defaults_are_the_ones_lz_help_gives(lz_binary):
    """Leela Zero's --help: 'Default args: -v3200 --noponder -m0 -t1 -s1'; plus quiet, no
    noise and timemanage off (Leela.cpp). All but -t1, which the binary does not apply: its
    --benchmark keeps the default thread count (on an H100 it overshoots 3200 visits by
    about ten, as ten threads do, and runs at the speed of -t 10 --batchsize 5)."""
    text = " ".join(subprocess.run([lz_binary, "--help"], capture_output=True,
                                   text=True).stdout.split())
    defaults = re.search(r"--benchmark Test network and exit\. Default args: ([^.]*)\.", text)
    assert defaults.group(1).split() == ["-v3200", "--noponder", "-m0", "-t1", "-s1"]
    cfg = parse_args(["--benchmark", "-n", "-m", "5", "-s", "9", "--timemanage", "on"])
    assert (cfg.visits, cfg.ponder, cfg.randomcnt, cfg.threads, cfg.seed) == \
        (3200, False, 0, 0, 1)
    assert (cfg.quiet, cfg.noise, cfg.timemanage) == (True, False, "off")
    assert parse_args(["--benchmark", "-v", "7"]).visits == 7
    assert parse_args(["--benchmark", "-p", "7", "--noponder"]).visits == 0
    assert parse_args(["--benchmark", "-t", "2"]).threads == 2


def _benchmark_lines(text: str) -> list[str]:
    """The stderr of a benchmark with the numbers that depend on the search blanked."""
    lines = []
    for line in text.splitlines():
        line = re.sub(r"^NN eval=\d\.\d{6}$", "NN eval=X", line)
        line = re.sub(r"^ *\S+ -> .*", "MOVE", line)
        line = re.sub(r"^\d+\.\d average depth, \d+ max depth$", "DEPTH", line)
        line = re.sub(r"^\d+ non leaf nodes, \d+\.\d\d average children$", "CHILDREN", line)
        line = re.sub(r" \d+ nodes, (.*) \d+ n/s$", r" N nodes, \1 R n/s", line)
        lines.append(line)
    return [x for x in lines if x != "batch stats: 0 0"]  # LZ's OpenCL scheduler, at exit


@pytest.mark.parametrize("limits", [["-v", "40"], ["-p", "30", "--noponder"]])
def test_benchmark_like_lz(lz_binary, random_weights, limits):
    net = random_weights(1, 8)
    argv = ["--cpu-only", "--benchmark", "-w", net, "-t", "1", *limits]
    lz = subprocess.run([lz_binary, *argv], capture_output=True, text=True, timeout=60)
    code, out, err = session(argv, script="")
    assert (lz.returncode, lz.stdout) == (code, out) == (0, "")
    theirs, ours = _benchmark_lines(lz.stderr), _benchmark_lines(err)
    assert theirs[:3] == ["Thinking at most 2678400.0 seconds...", "NN eval=X", ""]
    assert ours[:3] == theirs[:3]
    assert "MOVE" in ours and "DEPTH" in ours and "CHILDREN" in ours
    assert [x for x in ours if x != "MOVE"][-2:] == [x for x in theirs if x != "MOVE"][-2:]
    visits = "40 visits, N nodes, 39 playouts" if limits[0] == "-v" else \
        "31 visits, N nodes, 30 playouts"
    assert theirs[-2] == f"{visits}, R n/s"


def test_benchmark_playouts_need_noponder_as_in_lz(lz_binary, random_weights):
    argv = ["--cpu-only", "--benchmark", "-w", random_weights(1, 8), "-p", "30"]
    lz = subprocess.run([lz_binary, *argv], capture_output=True, text=True, timeout=60)
    code, _, err = session(argv, script="")
    assert lz.returncode == code == 1
    assert "Add --noponder" in lz.stdout and "--noponder" in err


def test_benchmark_needs_a_network(no_default_net):
    code, out, err = session(["--benchmark", "--cpu-only"], script="")
    assert code == 1 and out == "" and "network" in err


CONSOLE_SCRIPT = "play b q16\nplay w d4\nfoo\nundo\nshowboard\nkomi 6.5\nquit\n"


def _boards(err: str) -> list[str]:
    return re.findall(r"Passes: .*?White time: [^\n]*\n", err, re.S)


def test_console_mode_like_lz(lz_binary, random_weights):
    """Without -g: a `Leela: ` prompt on stdout before each command and the position on
    stderr before each prompt, as the binary does (only the licence text differs)."""
    net = random_weights(1, 8)
    argv = ["--cpu-only", "-t", "1", "-s", "5", "--noponder", "-w", net]
    lz = subprocess.run([lz_binary] + argv, input=CONSOLE_SCRIPT, capture_output=True,
                        text=True, timeout=60)
    code, out, err = session(argv, CONSOLE_SCRIPT)
    assert code == 0
    lz_after_banner = lz.stdout.split("\n\n", 1)[1]
    assert out.split("\n\n", 1)[1] == lz_after_banner
    assert lz_after_banner.startswith("Leela: = \n\nLeela: = \n\nLeela: ? unknown command")
    assert _boards(err) == _boards(lz.stderr) and len(_boards(err)) == 8  # 7 prompts + showboard
    quiet = session(argv + ["-q"], CONSOLE_SCRIPT)[2]
    assert quiet == ""


def test_gtp_mode_has_no_prompt(random_weights):
    code, out, err = session(["-g", "--cpu-only", "-w", random_weights(1, 8)], "name\n")
    assert out == "= Leela Zero\n\n\n" and "Passes:" not in err
