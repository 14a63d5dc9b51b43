"""`leelaz analysis`, the JSON-lines engine, driven with queries written from KataGo's own
documented examples (KataGo's analysis-engine protocol document): every final reply equals what
`lz-analyze` reports for the same position and visits in a freshly started engine
(`-g -t 1 -v N -s SEED`, the position given by `loadsgf`), priorities order the work,
`terminate` ends a query with exactly one final reply per turn, and malformed JSON, unknown
fields and bad moves each get an error reply while the other queries finish.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paths import REPO

NET = str(REPO / "weights" / "leelaz-6x128.txt.gz")
SEED = 5

#: KataGo's documented example (a 2-stone position given as initialStones), then others.
QUERIES = [
    {"id": "foo", "initialStones": [["B", "Q4"], ["B", "C4"]],
     "moves": [["W", "P5"], ["B", "P6"]], "rules": "tromp-taylor", "komi": 7.5,
     "boardXSize": 19, "boardYSize": 19, "analyzeTurns": [0, 1, 2], "maxVisits": 8},
    {"id": "bar", "moves": [["B", "Q16"], ["W", "D4"], ["B", "Q3"]], "rules": "chinese",
     "komi": 6.5, "maxVisits": 12, "includePolicy": True},
    {"id": "during", "moves": [["B", "D16"]], "rules": "chinese", "maxVisits": 40,
     "reportDuringSearchEvery": 0.01},
]
BAD = [
    ("{\"id\": \"broken\", \"moves\": [", None, None),
    (json.dumps({"id": "unknown", "moves": [], "rules": "chinese", "fancy": 1}), "unknown",
     "fancy"),
    (json.dumps({"id": "illegal", "moves": [["B", "D4"], ["W", "D4"]], "rules": "chinese"}),
     "illegal", "moves"),
    (json.dumps({"id": "offboard", "moves": [["B", "Z99"]], "rules": "chinese"}), "offboard",
     "moves"),
    (json.dumps({"id": "turns", "moves": [], "rules": "chinese", "analyzeTurns": [3]}),
     "turns", "analyzeTurns"),
]


def _serve(lines: list[str], *args: str) -> list[dict]:
    run = subprocess.run([sys.executable, "-m", "leelaz", "analysis", "-w", NET, "--cpu-only",
                          "-s", str(SEED), *args], input="".join(x + "\n" for x in lines),
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


def _sgf(query: dict) -> str:
    """The query's game as an SGF, so that `loadsgf` gives the engine the same position
    (setup stones without history, then the moves)."""
    root = f"(;GM[1]FF[4]SZ[19]KM[{query.get('komi', 7.5)}]"
    stones = [v for c, v in query.get("initialStones", []) if c == "B"]
    if stones:
        root += "AB" + "".join(f"[{_sgf_point(v)}]" for v in stones)
        root += f"PL[{query['moves'][0][0] if query['moves'] else 'W'}]"
    return root + "".join(f";{c}[{_sgf_point(v)}]" for c, v in query["moves"]) + ")"


def _sgf_point(text: str) -> str:
    from leelaz.game.coords import parse_gtp_vertex, sgf_vertex
    return sgf_vertex(parse_gtp_vertex(text))


def _lz_analyze(query: dict, turn: int, tmp: Path) -> list[dict]:
    """lz-analyze's entries for the query's turn: a fresh engine per position."""
    from leelaz.backends import create_backend
    from leelaz.backends.weights import load_weights
    from leelaz.cli import build_engine, parse_args
    from leelaz.gtp.protocol import parse_line
    from leelaz.nn.network import Network

    path = tmp / f"{query['id']}.sgf"
    path.write_text(_sgf(query))
    weights = load_weights(NET)
    cfg = parse_args(["-g", "--cpu-only", "-t", "1", "-v", str(query["maxVisits"]),
                      "--noponder", "-s", str(SEED), "-w", NET])
    engine = build_engine(cfg, out=io.StringIO(), err=io.StringIO(),
                          network=Network(weights, create_backend("numpy", weights),
                                          seed=SEED))
    engine.execute(parse_line(f"loadsgf {path} {turn + 1}"))
    start = engine.out.tell()
    engine.execute(parse_line("lz-analyze 100000"))
    engine.out.seek(start)
    reply = engine.out.read()
    assert reply.startswith("=\ninfo move "), reply
    entries = []
    for chunk in reply.strip().split("info ")[1:]:
        words = chunk.split()
        pv = words[words.index("pv") + 1:]
        values = dict(zip(words[0:11:2], words[1:12:2]))
        entries.append({"move": values["move"], "visits": int(values["visits"]),
                        "winrate": int(values["winrate"]), "prior": int(values["prior"]),
                        "lcb": int(values["lcb"]), "order": int(values["order"]), "pv": pv})
    return entries


@pytest.fixture(scope="module")
def served():
    lines = [json.dumps(q) for q in QUERIES] + [line for line, _, _ in BAD] + [
        json.dumps({"id": "v", "action": "query_version"}),
        json.dumps({"id": "cc", "action": "clear_cache"})]
    return _serve(lines, "--winrates-as", "SIDETOMOVE")


def _finals(replies, qid):
    return {r["turnNumber"]: r for r in replies
            if r.get("id") == qid and "turnNumber" in r and not r["isDuringSearch"]}


def test_every_final_reply_is_lz_analyzes(served, tmp_path):
    for query in QUERIES[:2]:
        finals = _finals(served, query["id"])
        turns = query.get("analyzeTurns", [len(query["moves"])])
        assert sorted(finals) == sorted(turns)
        for turn in turns:
            reply = finals[turn]
            ours = [{"move": m["move"], "visits": m["visits"],
                     "winrate": int(m["winrate"] * 10000), "prior": int(m["prior"] * 10000),
                     "lcb": int(m["lcb"] * 10000), "order": m["order"], "pv": m["pv"]}
                    for m in reply["moveInfos"]]
            assert ours == _lz_analyze(query, turn, tmp_path), (query["id"], turn)
            assert reply["rootInfo"]["visits"] >= query["maxVisits"]
            assert reply["noScore"] is True and "scoreLead" not in reply
            assert "scoreLead" not in reply["moveInfos"][0]


def test_the_policy_is_the_networks_in_katagos_layout(served):
    reply = _finals(served, "bar")[3]
    policy = reply["policy"]
    assert len(policy) == 362
    legal = [p for p in policy if p >= 0]
    assert sum(legal) == pytest.approx(1.0, abs=1e-4)  # the three stones' points are -1
    assert policy.count(-1.0) == 3
    from leelaz.game.coords import parse_gtp_vertex, xy

    def slot(move):  # row-major from A19
        x, y = xy(parse_gtp_vertex(move))
        return (18 - y) * 19 + x

    assert [policy[slot(m)] for m in ("Q16", "D4", "Q3")] == [-1.0, -1.0, -1.0]
    for info in reply["moveInfos"]:
        if info["move"] != "pass":
            assert policy[slot(info["move"])] >= 0


def test_reports_during_the_search_then_exactly_one_final(served):
    mine = [r for r in served if r.get("id") == "during"]
    assert len([r for r in mine if not r["isDuringSearch"]]) == 1
    assert mine[-1]["isDuringSearch"] is False
    during = [r for r in mine if r["isDuringSearch"]]
    assert during, "no report during a 40-visit search every 10 ms"
    assert all(r["rootInfo"]["visits"] <= mine[-1]["rootInfo"]["visits"] for r in during)


def test_bad_queries_get_an_error_and_the_others_finish(served):
    errors = [r for r in served if "error" in r]
    assert len(errors) == len(BAD)
    for line, qid, field_name in BAD:
        match = [e for e in errors if e.get("id") == qid]
        assert len(match) == 1, (qid, errors)
        if field_name:
            assert match[0]["field"] == field_name
    assert all(not any(r.get("id") == qid and "turnNumber" in r for r in served)
               for _, qid, _ in BAD if qid)
    version = [r for r in served if r.get("action") == "query_version"]
    assert version == [{"id": "v", "action": "query_version", "version": "0.17",
                        "git_hash": "<omitted>"}]
    assert {"id": "cc", "action": "clear_cache"} in served


def test_priorities_and_terminate():
    """One position at a time: the highest priority first (the blocker, whether or not the
    others have been read when it starts), then high before low; terminate
    ends 'long' with one final reply per turn (partial results or noResults)."""
    lines = [json.dumps({"id": "blocker", "moves": [], "rules": "chinese", "maxVisits": 30,
                         "priority": 10}),
             json.dumps({"id": "low", "moves": [], "rules": "chinese", "maxVisits": 2,
                         "priority": -1}),
             json.dumps({"id": "high", "moves": [["B", "Q16"]], "rules": "chinese",
                         "maxVisits": 2, "priority": 5}),
             json.dumps({"id": "long", "moves": [["B", "Q16"]], "rules": "chinese",
                         "maxVisits": 100000, "analyzeTurns": [0, 1], "priority": -5}),
             json.dumps({"id": "stop", "action": "terminate", "terminateId": "long"})]
    replies = _serve(lines, "--parallel", "1")
    finals = [r["id"] for r in replies if "turnNumber" in r and not r["isDuringSearch"]]
    assert finals.index("blocker") < finals.index("high") < finals.index("low")
    assert {"id": "stop", "action": "terminate", "terminateId": "long"} in replies
    long = [r for r in replies if r.get("id") == "long"]
    assert sorted(r["turnNumber"] for r in long) == [0, 1]
    for r in long:
        assert r["isDuringSearch"] is False
        assert r.get("noResults") is True or r["rootInfo"]["visits"] < 100000


def test_winrates_are_blacks_by_default():
    query = json.dumps({"id": "w", "moves": [["B", "Q16"]], "rules": "chinese",
                        "maxVisits": 4})
    black = _serve([query])[-1]
    side = _serve([query], "--winrates-as", "SIDETOMOVE")[-1]
    assert black["rootInfo"]["currentPlayer"] == "W"
    assert black["rootInfo"]["winrate"] == 1.0 - side["rootInfo"]["winrate"]
    assert black["moveInfos"][0]["winrate"] == 1.0 - side["moveInfos"][0]["winrate"]
