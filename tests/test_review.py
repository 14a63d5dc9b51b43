"""`leelaz review` against the engine itself: each position's numbers are what `lz-analyze`
reports for it, the report's drops are the drops of those numbers, the annotated SGF keeps the
original game and Sabaki's own SGF parser reads it; bad input is one line and exit 1.

The reference drives our GTP engine as a user would, one way for each of the review's modes.
`--fresh`: for each position a freshly started engine (`-g -t 1 -v N -s SEED --cpu-only`),
`loadsgf FILE n`, then `lz-analyze 100000`, whose single `info` line (sent when the search
stops at N visits) gives the best move, its winrate and its line. The tree kept (the
default): the game cut into stretches as `--trees` says, a freshly started engine per
stretch, `loadsgf FILE n` of its first position, then at each position `lz-analyze 100000`
and the game's next move with `play`, so each search starts from the subtree the last one
left and stops at N root visits, the kept ones counted. Each run of
the review is a subprocess (`python -m leelaz review`) on a folder holding a 9-dan game, a
handmade handicap game with comments and variations, and a broken file, so the two good
games' searches share the network calls.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need
from paths import REPO

NET = str(REPO / "weights" / "leelaz-6x128.txt.gz")
VISITS = 8
SEED = 7
#: The tree-kept run's visits: enough that a position's search often starts below them.
KEPT_VISITS = 24
CLIENTS = Path(__file__).resolve().parent / "clients"

#: Handicap 2, komi 0.5, comments on the root and on moves, markup, a pass, a variation.
HANDMADE = """(;GM[1]FF[4]CA[UTF-8]SZ[19]KM[0.5]HA[2]PB[Student]PW[Teacher]RE[W+3.5]
C[A teaching game \\] with a bracket]AB[dp][pd]
;W[qp]C[White approaches]
;B[oq]
(;W[dd]C[main line]
;B[fc]
;W[cf]
;B[qo]
;W[po]
;B[pn]TR[pn]
;W[on]
;B[pm]
;W[dj]
;B[]C[Black passes]
;W[jj])
(;W[cc]C[a variation];B[dc]))
"""
BROKEN = "(;GM[1]FF[4]SZ[19];B[pd];W[pd])\n"  # a move on an occupied point


def _env(tmp: Path, **extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(tmp / "data"), **extra}


def _review(args: list[str], tmp: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "leelaz", "review", *args], text=True,
                          capture_output=True, env=_env(tmp, **env), timeout=600)


def _tygem_game(tygem_dir) -> str:
    import gzip
    source = sorted(tygem_dir.glob("*.sgf.gz"))[0]
    with gzip.open(source, "rt", encoding="utf-8", errors="replace") as f:
        return f.readline()


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory, tygem_dir):
    """(games folder, output folder, the run) of one review of the folder."""
    tmp = tmp_path_factory.mktemp("review")
    games = tmp / "games"
    games.mkdir()
    (games / "ninedan.sgf").write_text(_tygem_game(tygem_dir))
    (games / "handmade.sgf").write_text(HANDMADE)
    (games / "broken.sgf").write_text(BROKEN)
    out = tmp / "out"
    run = _review([str(games), "-o", str(out), "-w", NET, "--cpu-only", "-v", str(VISITS),
                   "-s", str(SEED), "--json", "--variation-drop", "3", "-q", "--fresh"], tmp)
    return games, out, run


@pytest.fixture(scope="module")
def reviewed_kept(reviewed):
    """(games folder, output folder, the run) of the review of the same folder in the
    default mode, the tree kept from each position to the next."""
    games, out, _ = reviewed
    out = out.parent / "out-kept"
    run = _review([str(games), "-o", str(out), "-w", NET, "--cpu-only", "-v", str(KEPT_VISITS),
                   "-s", str(SEED), "--json", "-q"], out.parent)
    return games, out, run


def _engine(visits: int):
    """Our GTP engine as `leelaz -g -t 1 -v VISITS -s SEED --cpu-only -w NET` starts it."""
    from leelaz.backends import create_backend
    from leelaz.backends.weights import load_weights
    from leelaz.cli import build_engine, parse_args
    from leelaz.nn.network import Network

    weights = load_weights(NET)
    cfg = parse_args(["-g", "--cpu-only", "-t", "1", "-v", str(visits), "--noponder",
                      "-s", str(SEED), "-w", NET])
    return build_engine(cfg, out=io.StringIO(), err=io.StringIO(),
                        network=Network(weights, create_backend("numpy", weights), seed=SEED))


def _analyze(engine) -> tuple[str, str, int, list[str], int, int]:
    """lz-analyze's single info line at N visits: (side to move, best move, winrate x 10000,
    line, the root's visits as the engine's tree holds them, the search's new playouts)."""
    from leelaz.gtp.protocol import parse_line

    to_move = "BW"[engine.session.state.to_move]
    start = engine.out.tell()
    engine.execute(parse_line("lz-analyze 100000"))
    engine.out.seek(start)
    reply = engine.out.read()
    assert reply.startswith("=\ninfo move ") and reply.count("\n") == 3, reply
    first = reply.split("info move ")[1].split()
    assert first[1::2][:6] == ["visits", "winrate", "prior", "lcb", "order", "pv"]
    search = engine.session.search
    return to_move, first[0], int(first[4]), first[12:], search.root.visits, search.playouts


def _reference_kept(path: Path) -> list[tuple[str, str, int, list[str], int, int]]:
    """`_analyze` at each position of the game's main line, as `leelaz review --help` says
    the kept trees go: the n positions cut into min(8, n // 8) stretches (at least one), the
    k-th from position k*n // count; each stretch in ONE engine, its first position loaded
    with `loadsgf`, then the game's moves given with `play` between the searches (so the
    engine's tree goes on from each search to the next)."""
    from leelaz.game.coords import gtp_vertex, parse_sgf_vertex
    from leelaz.game.sgf import read_first_game
    from leelaz.gtp.protocol import parse_line

    nodes = read_first_game(path).mainline()
    moves = [(i, node.move()) for i, node in enumerate(nodes) if node.move() is not None]
    stops = [1] + [i + 1 for i, _ in moves]  # loadsgf's move number of each position
    n = len(stops)
    count = max(1, min(8, n // 8))
    firsts = [k * n // count for k in range(count)]
    found = []
    for p in range(n):
        if p in firsts:
            engine = _engine(KEPT_VISITS)
            engine.execute(parse_line(f"loadsgf {path} {stops[p]}"))
        else:
            color, text = moves[p - 1][1]
            at = engine.out.tell()
            engine.execute(parse_line(f"play {'BW'[color]} "
                                      f"{gtp_vertex(parse_sgf_vertex(text))}"))
            engine.out.seek(at)
            assert engine.out.read() == "= \n\n"
        found.append(_analyze(engine))
    return found


def _reference(path: Path) -> list[tuple[str, str, int, list[str], int, int]]:
    """`_analyze` at each position of the game's main line (the start, then after each
    move) in a freshly started engine."""
    from leelaz.game.sgf import read_first_game
    from leelaz.gtp.protocol import parse_line

    nodes = read_first_game(path).mainline()
    stops = [1] + [i + 1 for i in range(1, len(nodes)) if nodes[i].move() is not None]
    found = []
    for stop in stops:
        engine = _engine(VISITS)
        engine.execute(parse_line(f"loadsgf {path} {stop}"))
        found.append(_analyze(engine))
    return found


@pytest.fixture(scope="module")
def references(reviewed):
    games, _, _ = reviewed
    return {name: _reference(games / f"{name}.sgf") for name in ("ninedan", "handmade")}


@pytest.fixture(scope="module")
def references_kept(reviewed_kept):
    games, _, _ = reviewed_kept
    return {name: _reference_kept(games / f"{name}.sgf") for name in ("ninedan", "handmade")}


@pytest.fixture(params=["fresh", "kept"])
def mode(request):
    """(the review's run, the engine's numbers) of one mode."""
    if request.param == "fresh":
        return request.getfixturevalue("reviewed"), request.getfixturevalue("references")
    return (request.getfixturevalue("reviewed_kept"),
            request.getfixturevalue("references_kept"))


def _json(out: Path, name: str) -> dict:
    return json.loads((out / f"{name}.review.json").read_text())


# ---- the run ------------------------------------------------------------------------------

def test_a_broken_game_is_one_line_and_the_others_are_reviewed(reviewed):
    _, out, run = reviewed
    assert run.returncode == 1, run.stderr
    plots = importlib.util.find_spec("matplotlib") is not None
    errors = [line for line in run.stderr.splitlines() if line.strip()
              and (plots or not line.startswith("matplotlib is not installed"))]
    assert len(errors) == 1 and errors[0].startswith("ERROR: ") and "broken.sgf" in errors[0]
    assert "Traceback" not in run.stderr
    for name in ("ninedan", "handmade"):
        for suffix in ("sgf", "md", "json") + (("png",) if plots else ()):
            assert (out / f"{name}.review.{suffix}").is_file()
    assert not list(out.glob("broken*"))
    summaries = run.stdout.splitlines()
    assert len(summaries) == 2 and all("largest drop" in s for s in summaries)


@pytest.mark.parametrize("name", ["ninedan", "handmade"])
def test_each_position_is_what_lz_analyze_reports(mode, name):
    (_, out, run), references = mode
    assert run.returncode == 1, run.stderr  # the broken game
    data = _json(out, name)
    positions = data["positions"]
    ref = references[name]
    assert len(positions) == len(ref) > 10
    ours = [(p["to_move"], p["best"], int(p["winrate"] * 10000), p["pv"], p["visits"])
            for p in positions]
    assert ours == [r[:5] for r in ref]
    visits = data["visits"]
    assert visits in (VISITS, KEPT_VISITS) and all(p["visits"] >= visits for p in positions)


def test_the_kept_tree_searches_from_the_visits_kept(reviewed, reviewed_kept,
                                                     references_kept):
    """The mode's point: the engine the review matches began its searches with visits kept
    (each position's N root visits, fewer new playouts), and the review says which mode it
    ran."""
    _, out, _ = reviewed_kept
    ref = references_kept["ninedan"]
    assert all(visits == KEPT_VISITS for *_, visits, _ in ref)
    new = sum(playouts for *_, playouts in ref)
    assert new < 0.8 * KEPT_VISITS * len(ref)
    data = _json(out, "ninedan")
    assert data["tree"] == "kept" and _json(reviewed[1], "ninedan")["tree"] == "fresh"


def _drops_from(ref, moves_colors) -> dict[str, list[tuple[int, float]]]:
    """Each side's five largest drops, (move number, winrate lost), from the reference."""
    def mover(k, color):  # position k's winrate for `color`
        side, _, win = ref[k][:3]
        return win / 10000 if side == color else 1 - win / 10000

    drops = {"B": [], "W": []}
    for k, color in enumerate(moves_colors, 1):
        lost = mover(k - 1, color) - mover(k, color)
        if lost > 0:
            drops[color].append((k, lost))
    return {c: sorted(d, key=lambda x: (-x[1], x[0]))[:5] for c, d in drops.items()}


@pytest.mark.parametrize("name", ["ninedan", "handmade"])
def test_the_largest_drops_are_those_of_the_reference_numbers(mode, name):
    (_, out, _), references = mode
    data = _json(out, name)
    colors = [m["color"] for m in data["moves"]]
    expected = _drops_from(references[name], colors)
    for color in ("B", "W"):
        reported = [(m["move"], m["winrate_lost"]) for m in data["largest_drops"][color]]
        assert len(reported) == len(expected[color])
        for (n, lost), (n_ref, lost_ref) in zip(reported, expected[color]):
            assert abs(lost - lost_ref) < 2e-4  # the reference's numbers are truncated
            if n != n_ref:  # only a tie within that precision may swap two moves
                assert any(m == n and abs(x - lost_ref) < 2e-4 for m, x in expected[color])
        for m in data["largest_drops"][color]:
            ref_before = references[name][m["move"] - 1]
            assert m["preferred"] == ref_before[1] and m["pv"] == ref_before[3]
    md = (out / f"{name}.review.md").read_text()
    for color in ("B", "W"):
        for m in data["largest_drops"][color]:
            assert f"| {m['move']} | {m['played']} | {m['preferred']} |" in md


# ---- the annotated SGF -------------------------------------------------------------------

def _walk_same(original, annotated, problems: list[str], where="root") -> None:
    """Every property and child of `original` is in `annotated`, in order (iterative)."""
    stack = [(original, annotated, where)]
    while stack:
        a, b, at = stack.pop()
        for name, values in a.props.items():
            if name == "C":
                if not b.get("C", "").startswith(values[0]):
                    problems.append(f"{at}: comment lost")
            elif b.props.get(name) != values:
                problems.append(f"{at}: {name}{values} became {b.props.get(name)}")
        if len(b.children) < len(a.children):
            problems.append(f"{at}: children lost")
        for i, (ca, cb) in enumerate(zip(a.children, b.children)):
            stack.append((ca, cb, f"{at}/{i}"))


@pytest.mark.parametrize("name", ["ninedan", "handmade"])
def test_the_annotated_sgf_keeps_the_original_game(reviewed, name):
    from leelaz.game.sgf import read_first_game
    games, out, _ = reviewed
    original = read_first_game(games / f"{name}.sgf")
    annotated = read_first_game(out / f"{name}.review.sgf")
    problems: list[str] = []
    _walk_same(original.root, annotated.root, problems)
    assert problems == []
    data = _json(out, name)
    line = annotated.mainline()
    assert len(line) == len(original.mainline())
    move_nodes = [n for n in line[1:] if n.move() is not None]
    assert len(move_nodes) == len(data["moves"])
    for node, m in zip(move_nodes, data["moves"]):
        assert "winrate" in node.get("C") and "points" not in node.get("C")
        assert node.move()[0] == "BW".index(m["color"])


def test_mistakes_get_the_preferred_line_as_a_variation(reviewed):
    from leelaz.game.sgf import read_first_game
    games, out, _ = reviewed
    data = _json(out, "ninedan")
    line = read_first_game(out / f"{'ninedan'}.review.sgf").mainline()
    mistakes = [m for m in data["moves"]
                if m["winrate_lost"] > 0.03 and m["preferred"] != m["played"]]
    assert mistakes
    for m in mistakes:
        parent = line[m["move"] - 1]  # a tygem game: node k holds move k
        assert len(parent.children) == 2
        variation = parent.children[1]
        assert variation.move()[0] == "BW".index(m["color"])
        assert "Mistake: winrate lost" in line[m["move"]].get("C")


def test_sabaki_reads_the_annotated_sgf(reviewed):
    need("Node.js", shutil.which("node") is not None, "sudo apt-get install nodejs npm")
    need("Sabaki's SGF library", (CLIENTS / "node_modules" / "@sabaki" / "sgf").is_dir(),
         "cd tests/clients && npm install")
    _, out, _ = reviewed
    for name in ("ninedan", "handmade"):
        run = subprocess.run(["node", str(CLIENTS / "sabaki_sgf.js"),
                              str(out / f"{name}.review.sgf")], capture_output=True, text=True,
                             timeout=60, cwd=CLIENTS)
        assert run.returncode == 0, run.stderr
        seen = json.loads(run.stdout)
        data = _json(out, name)
        assert seen["games"] == 1
        # Sabaki's graph: SBKV on every node of the line, Black's winrate in percent.
        moves = [n for n in seen["mainline"] if "B" in n or "W" in n]
        assert len(moves) == len(data["moves"])
        position = 0
        for n in seen["mainline"]:
            if "B" in n or "W" in n:
                position += 1
            assert float(n["SBKV"][0]) == pytest.approx(100 * data["black_winrate"][position],
                                                         abs=0.006)
        if name == "handmade":
            assert seen["mainline"][0]["C"] == ["A teaching game ] with a bracket"]
            assert seen["mainline"][0]["HA"] == ["2"]
            assert seen["mainline"][0]["AB"] == ["dp", "pd"]
            assert any(b["depth"] == 2 and b["children"][1]["W"] == ["cc"]
                       for b in seen["branches"])


def test_format_game_round_trips_real_games(tygem_dir):
    import gzip

    from leelaz.game.sgf import format_game, parse_game, games_in_text
    source = sorted(tygem_dir.glob("*.sgf.gz"))[0]
    with gzip.open(source, "rt", encoding="utf-8", errors="replace") as f:
        texts = [f.readline() for _ in range(20)] + [HANDMADE]
    for text in texts:
        game = parse_game(text)
        again = games_in_text(format_game(game))
        assert len(again) == 1
        problems: list[str] = []
        _walk_same(game.root, again[0].root, problems)
        _walk_same(again[0].root, game.root, problems)
        assert problems == []


# ---- bad input ------------------------------------------------------------------------------

def _bad(tmp_path, args) -> subprocess.CompletedProcess:
    run = _review([*args, "-w", NET, "--cpu-only", "-v", "2"], tmp_path)
    assert run.returncode == 1, (run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), run.stderr
    assert run.stdout == ""
    return run


def test_a_missing_file(tmp_path):
    run = _bad(tmp_path, [str(tmp_path / "nothere.sgf"), "-o", str(tmp_path / "out")])
    assert "nothere.sgf" in run.stderr and not (tmp_path / "out").exists()


def test_a_file_that_is_not_an_sgf(tmp_path):
    (tmp_path / "notes.sgf").write_text("just some text\n")
    run = _bad(tmp_path, [str(tmp_path / "notes.sgf"), "-o", str(tmp_path / "out")])
    assert "notes.sgf" in run.stderr and not (tmp_path / "out").exists()


def test_a_folder_without_sgf_files(tmp_path):
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "readme.txt").write_text("no games\n")
    run = _bad(tmp_path, [str(tmp_path / "games"), "-o", str(tmp_path / "out")])
    assert "games" in run.stderr and not (tmp_path / "out").exists()


def test_an_output_folder_that_cannot_be_written(tmp_path):
    (tmp_path / "game.sgf").write_text(HANDMADE)
    (tmp_path / "a-file").write_text("")
    run = _bad(tmp_path, [str(tmp_path / "game.sgf"), "-o", str(tmp_path / "a-file" / "out")])
    assert "a-file" in run.stderr
    assert (tmp_path / "a-file").read_text() == ""
    assert {p.name for p in tmp_path.iterdir()} <= {"a-file", "data", "game.sgf"}


def test_without_matplotlib_one_line_and_no_plot(tmp_path):
    blocker = tmp_path / "block"
    (blocker / "matplotlib").mkdir(parents=True)
    (blocker / "matplotlib" / "__init__.py").write_text("raise ImportError('blocked')\n")
    (tmp_path / "game.sgf").write_text(HANDMADE)
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "leelaz", "review", str(tmp_path / "game.sgf"),
                          "-o", str(out), "-w", NET, "--cpu-only", "-v", "2", "-q"],
                         text=True, capture_output=True, timeout=600,
                         env=_env(tmp_path, PYTHONPATH=f"{blocker}{os.pathsep}{REPO}"))
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip().splitlines() == [
        "matplotlib is not installed: no winrate plot (pip install 'leelaz[zero]' or "
        "matplotlib)"]
    assert sorted(p.name for p in out.iterdir()) == ["game.review.md", "game.review.sgf"]


def test_seconds_instead_of_visits(tmp_path):
    (tmp_path / "game.sgf").write_text(HANDMADE)
    out = tmp_path / "out"
    run = _review([str(tmp_path / "game.sgf"), "-o", str(out), "-w", NET, "--cpu-only",
                   "--seconds", "0.02", "--json", "-q"], tmp_path)
    assert run.returncode == 0, run.stderr
    data = _json(out, "game")
    assert data["seconds"] == 0.02 and data["visits"] is None
    assert len(data["positions"]) == 14 and all(p["visits"] >= 1 for p in data["positions"])
    assert "0.02 s a position" in run.stdout
    both = _review([str(tmp_path / "game.sgf"), "-o", str(out), "-v", "5", "--seconds", "1"],
                   tmp_path)
    assert both.returncode == 1 and both.stderr.startswith("ERROR: give --visits or --seconds")
