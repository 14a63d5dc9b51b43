"""What a newcomer meets first: `leelaz --version`, the engine's first stderr line, the
default network, `leelaz --help` and the verbs' help."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys

import click
import pytest

from paths import REPO

import leelaz
from leelaz.tools import VERBS

DYN_KOMI_FLAGS = ("--handicap", "--nonslack", "--target-komi", "--max-wr", "--min-wr",
                  "--wr-margin", "--max-komi", "--min-komi", "--adj-positions", "--adj-pct",
                  "--num-adj", "--pos", "--neg", "--fixed-symmetry", "--tg-sure-backup",
                  "--tg-orig-policy", "--tg-dyn-fpu", "--tg-auto-pn")


def leelaz_run(args, home=None, cwd=None, input_text="", columns=80, argv0=None):
    """`python -m leelaz ARGS` (or the program argv0) with this checkout's package."""
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS=str(columns))
    if home is not None:
        env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"),
                   XDG_CACHE_HOME=str(home / "cache"))
    command = [argv0] if argv0 else [sys.executable, "-m", "leelaz"]
    return subprocess.run(command + list(args), input=input_text, capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


# ---- --version ------------------------------------------------------------------------------

def test_version_names_the_program_and_the_gtp_it_speaks(lz_binary, random_weights):
    done = leelaz_run(["--version"])
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == f"leelaz {leelaz.__version__}"
    # The GTP identity it states is the C++ Leela Zero 0.17's, as both answer it.
    net = random_weights(1, 8)
    theirs = subprocess.run([lz_binary, "-g", "--cpu-only", "-w", net], input="name\nversion\n",
                            capture_output=True, text=True, timeout=60).stdout
    ours = leelaz_run(["-g", "-q", "--cpu-only", "-w", net], input_text="name\nversion\n").stdout
    assert ours == theirs and ours.startswith("= Leela Zero\n\n= 0.17\n\n")
    assert lines[1] == "Speaks the GTP of Leela Zero 0.17 (name: Leela Zero, version: 0.17) " \
                       "and takes its flags."


def _pyproject() -> dict:
    """pyproject.toml as TOML (tomllib; Python 3.10 has tomli beside pip's vendored copy)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_version_has_one_owner():
    """The installed package's version is leelaz.__version__: pyproject.toml leaves the
    version to setuptools' reading of that attribute instead of writing it a second time."""
    from importlib.metadata import version
    pyproject = _pyproject()
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "leelaz.__version__"}
    assert version("leelaz") == leelaz.__version__


def test_version_gives_a_command_a_gui_can_run(tmp_path):
    """From a console script found by a relative path (as a venv's bin/leelaz), --version
    prints its absolute path, and that command starts the engine from anywhere."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "leelaz"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(REPO)!r})\n"
                      "from leelaz.cli import main\nmain()\n")
    script.chmod(0o755)
    done = leelaz_run(["--version"], cwd=tmp_path, argv0=os.path.join("venv", "bin", "leelaz"))
    assert done.returncode == 0, done.stderr
    command = done.stdout.splitlines()[-1].removeprefix("Command for a GUI: ")
    assert command == str(script)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    gui = subprocess.run([command, "-g", "-q"], input="name\n", capture_output=True,
                         text=True, cwd=elsewhere, timeout=120)
    assert gui.stdout == "= Leela Zero\n\n\n"
    module = leelaz_run(["--version"]).stdout.splitlines()[-1]
    assert module == f"Command for a GUI: {sys.executable} -m leelaz"


# ---- the first stderr line and the default network -----------------------------------------

def test_first_stderr_line_names_the_weights_file(random_weights, tmp_path):
    net = random_weights(1, 8)
    shutil.copy(net, tmp_path / "net.txt")
    done = leelaz_run(["-g", "--cpu-only", "-t", "1", "-w", "net.txt"], home=tmp_path,
                      cwd=tmp_path, input_text="name\n")
    assert done.returncode == 0 and done.stdout == "= Leela Zero\n\n\n"
    lines = done.stderr.splitlines()
    assert lines[0] == f"leelaz {leelaz.__version__}: weights {tmp_path / 'net.txt'} " \
                       "(1 blocks x 8 filters)"
    assert lines[1] == "Using 1 thread(s)."  # then Leela Zero's own lines


def _first_line(home):
    done = leelaz_run(["-g", "--cpu-only", "-t", "1"], home=home, input_text="quit\n")
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()[0]


def test_the_default_network_rule_as_help_states_it(random_weights, tmp_path):
    """Without -w: Leela Zero's ~/.local/share/leela-zero/best-network if it is a file, else
    the network shipped in weights/; --help says exactly that."""
    shipped = sorted((REPO / "weights").glob("*.gz"))[0]
    lz_default = tmp_path / ".local" / "share" / "leela-zero" / "best-network"
    help_text = "".join(leelaz_run(["--help"], home=tmp_path).stdout.split())  # unwrapped
    rule = (f"Without -w: {lz_default} (Leela Zero's default) if that file exists, else the "
            f"network shipped with leelaz ({shipped.name}).")
    assert "".join(rule.split()) in help_text
    assert _first_line(tmp_path) == \
        f"leelaz {leelaz.__version__}: weights {shipped} (6 blocks x 128 filters)"
    lz_default.parent.mkdir(parents=True)
    lz_default.mkdir()  # a folder there is not a network
    assert f"weights {shipped} " in _first_line(tmp_path)
    lz_default.rmdir()
    shutil.copy(random_weights(1, 8), lz_default)
    assert _first_line(tmp_path) == \
        f"leelaz {leelaz.__version__}: weights {lz_default} (1 blocks x 8 filters)"


# ---- leelaz --help --------------------------------------------------------------------------

def test_help_puts_the_verbs_first_on_one_screen():
    lines = leelaz_run(["--help"]).stdout.splitlines()
    first_flag = next(i for i, line in enumerate(lines) if line.strip().startswith("-"))
    verbs = lines.index("Verbs:")
    assert verbs < first_flag <= 24  # the verbs, each with its summary, on the first screen
    for name in VERBS:
        row = next(line for line in lines[verbs:first_flag] if line.split()[:1] == [name])
        summary = row.split(None, 1)[1]
        assert len(summary) > 20
        command = importlib.import_module(VERBS[name]).command
        assert command.get_short_help_str(limit=200).startswith(summary.rstrip("."))


def test_help_keeps_dynamic_komi_under_its_own_heading():
    lines = leelaz_run(["--help"]).stdout.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("Dynamic komi"))
    flags = [re.match(r"\s+(?:-\w, )?(--[\w-]+)", line) for line in lines]
    before = {m.group(1) for m in flags[:heading] if m}
    after = {m.group(1) for m in flags[heading:] if m}
    assert after == set(DYN_KOMI_FLAGS) and not before & set(DYN_KOMI_FLAGS)
    assert {"--gtp", "--weights", "--noponder", "--backend"} <= before


def _commands(command, path):
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, path + [name])
    else:
        yield path, command


def _all_verb_commands(verbs=tuple(VERBS)):
    for verb in verbs:
        yield from _commands(importlib.import_module(VERBS[verb]).command, [verb])


def test_required_options_are_marked_in_every_verbs_help():
    marked = 0
    for path, command in _all_verb_commands():
        required = [p for p in command.params if isinstance(p, click.Option) and p.required]
        if not required:
            continue
        text = leelaz_run([*path, "--help"]).stdout
        for option in required:
            # The option's entry: its line and the wrapped lines under it.
            entry = re.search(rf"^  {re.escape(', '.join(option.opts))} .*?(?=^  \S|\Z)",
                              text, re.M | re.S).group(0)
            assert "[required]" in entry, (path, option.opts)
            marked += 1
    assert marked >= 1  # `leelaz weights random -o` at least


def test_every_bench_and_weights_option_has_a_help_text():
    for path, command in _all_verb_commands(("bench", "weights")):
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help and len(param.help) > 5, (path, param.opts)


# ---- no tracker numbers in what users read --------------------------------------------------

def test_bench_startup_prints_no_tracker_numbers(tmp_path, random_weights):
    """`bench startup`'s summary states its target, not where the target came from."""
    fake = tmp_path / "fake_engine.py"
    fake.write_text("import sys\nfor line in sys.stdin:\n"
                    "    if line.startswith('protocol_version'): print('= 2\\n', flush=True)\n"
                    "    if line.startswith('quit'): break\n")
    engine = f"{sys.executable} {fake}"
    done = leelaz_run(["bench", "startup", "--runs", "1", "-w", random_weights(1, 8),
                       "--ours", engine, "--reference", engine])
    assert done.returncode == 0, done.stderr
    ratio = [line for line in done.stdout.splitlines() if line.startswith("later start / ")]
    assert len(ratio) == 1 and "target: at most 2.5x" in ratio[0]
    assert not re.search(r"\b(issue|session)s? ?#?\d", done.stdout + done.stderr, re.I)
