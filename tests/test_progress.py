"""leelaz.progress: a line with an estimate every 30 s when stderr is a log, and tqdm, the
bar on a terminal, a dependency of the package."""

from __future__ import annotations

import re

from paths import REPO


def test_progress_in_a_log_is_a_line_every_30_seconds_with_an_estimate(capsys, monkeypatch):
    import leelaz.progress as progress_module
    now = [1000.0]
    monkeypatch.setattr(progress_module, "_clock", lambda: now[0])
    # 2 games finished by an earlier run: counted, but not in this run's pace
    with progress_module.progress(10, "selfplay", unit="games", initial=2) as bar:
        now[0] += 20
        bar.update(1)
        now[0] += 20
        bar.update(1)  # 40 s: 2 games of this run in 39.9 s, 6 to go: 119.7 s
        now[0] += 10
        bar.set_postfix_str("3.0 moves/s")
        now[0] += 21
        bar.update(2)
        bar.say("a line of the verb")
    out, err = capsys.readouterr()
    assert out == "a line of the verb\n"
    assert err.splitlines() == [
        "selfplay: 4/10 games (40%), 40 s elapsed, about 2 min 0 s left",
        # 71 s: 4 games of this run in 70.9 s, 4 to go: 70.9 s
        "selfplay: 6/10 games (60%), 1 min 11 s elapsed, about 1 min 11 s left, 3.0 moves/s"]


def test_progress_is_silent_when_disabled(capsys):
    from leelaz.progress import progress
    with progress(3, "games", enabled=False) as bar:
        bar.update(3)
    assert capsys.readouterr() == ("", "")


def test_tqdm_is_a_dependency_not_an_extra():
    from test_help import _pyproject
    project = _pyproject()["project"]
    assert any(re.match(r"tqdm\b", d) for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert {"tools", "train", "zero", "torch"} <= set(extras)  # old install lines still work
    assert not any(d.startswith("tqdm") for deps in extras.values() for d in deps)


def test_on_a_terminal_earlier_work_is_tqdms_initial_not_its_rate(monkeypatch):
    """A resumed run's finished games show in the count, and tqdm's rate (so its estimate)
    is this run's: (n - initial) / elapsed."""
    import io
    import sys

    from leelaz.progress import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr(sys, "stderr", Terminal())
    bar = progress(10, "selfplay", unit="game", initial=4)
    shown = bar.bar.format_dict
    assert (shown["n"], shown["total"], shown["initial"]) == (4, 10, 4)
    bar.close()
    assert "4/10" in sys.stderr.getvalue()
