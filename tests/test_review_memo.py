"""The review's memo of network answers (leelaz/review/memo.py): a row evaluated once is
answered again without the network, a row asked for twice in one round goes once, and a
review with the memo finds exactly what it finds without it while sending fewer rows.

The unit tests' network is a stand-in whose answer to a row is a fixed function of that row
alone (computed row by row, so a batch's composition cannot change it): what the memo relies
on. The review test runs the shipped network, with and without the memo. The equality of the
review's numbers with lz-analyze's, the memo included, is tests/test_review.py's.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from leelaz.backends.base import Backend
from leelaz.review.memo import MemoBackend, RowMemo
from leelaz.backends.mux import RoundBatch, SharedBackend
from paths import REPO

NET = str(REPO / "weights" / "leelaz-6x128.txt.gz")


class RowFunction(Backend):
    """Logits and value as a seeded random projection of each row, one row at a time;
    counts the rows it was sent."""

    name = "row-function"

    def __init__(self, weights=None, seed: int = 3):
        self.weights = weights
        rng = np.random.default_rng(seed)
        self.project = rng.standard_normal((18 * 361, 363)).astype(np.float32) * 0.05
        self.rows = 0

    def forward(self, planes):
        planes = np.asarray(planes, np.float32).reshape(len(planes), -1)
        self.rows += len(planes)
        out = np.stack([row @ self.project for row in planes])
        return out[:, :362].copy(), (1 / (1 + np.exp(-out[:, 362]))).astype(np.float32)


def _planes(seed: int, rows: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random((rows, 18, 19, 19)) < 0.3).astype(np.float32)


def _views(count: int, memo: RowMemo):
    network = RowFunction()
    batch = RoundBatch(network)
    return network, batch, [MemoBackend(SharedBackend(batch), memo) for _ in range(count)]


def test_a_row_evaluated_once_is_answered_from_the_memo():
    memo = RowMemo(100)
    network, batch, (first, second) = _views(2, memo)
    x, y, z = _planes(1, 3)
    a = first.submit(np.stack([x, y]))
    batch.send()
    a_logits, a_values = a.result()
    b = second.submit(np.stack([y, z]))
    batch.send()
    b_logits, b_values = b.result()
    assert network.rows == 3  # x, y, then z alone
    assert (memo.asked, memo.sent) == (4, 3)
    direct_logits, direct_values = RowFunction().forward(np.stack([x, y, z]))
    assert np.array_equal(a_logits, direct_logits[:2]) and np.array_equal(a_values,
                                                                          direct_values[:2])
    assert np.array_equal(b_logits, direct_logits[1:]) and np.array_equal(b_values,
                                                                          direct_values[1:])


def test_a_row_asked_for_twice_in_one_round_goes_once():
    memo = RowMemo(100)
    network, batch, (first, second) = _views(2, memo)
    x, y = _planes(2, 2)
    a = first.submit(np.stack([x, y]))
    b = second.submit(np.stack([y]))
    batch.send()
    assert batch.rows == 2 and network.rows == 2
    assert np.array_equal(b.result()[0][0], a.result()[0][1])
    assert b.result()[1][0] == a.result()[1][1]
    c = second.submit(np.stack([y, x]))  # both known now: nothing is sent
    batch.send()
    assert network.rows == 2 and np.array_equal(c.result()[0], a.result()[0][::-1])


def test_the_memo_keeps_its_newest_rows():
    memo = RowMemo(2)
    network, batch, (view,) = _views(1, memo)
    rows = _planes(3, 3)
    for row in rows:
        view.submit(row[None]).result()
    assert len(memo) == 2 and network.rows == 3
    view.submit(rows[2:]).result()  # the newest: still known
    assert network.rows == 3
    view.submit(rows[:1]).result()  # the oldest went
    assert network.rows == 4
    off = RowMemo(0)
    network, batch, (view,) = _views(1, off)
    view.submit(rows[:1]).result()
    view.submit(rows[:1]).result()
    assert network.rows == 2 and len(off) == 0


def _game_positions(tygem_dir, folder, first: int, count: int):
    """`count` consecutive positions of the fixture's first 9-dan game, from move `first`."""
    from leelaz.review.games import collect_games
    source = sorted(tygem_dir.glob("*.sgf.gz"))[0]
    with gzip.open(source, "rt", encoding="utf-8", errors="replace") as f:
        (folder / "game.sgf").write_text(f.readline())
    games, failed = collect_games([folder / "game.sgf"], lambda line: None)
    assert not failed
    return games[0].positions[first:first + count]


def _review(positions, memo_rows):
    """The positions' analyses on the shipped network (NumPy), the memo and the rows the
    network was sent."""
    from leelaz.review.analyse import ReviewSettings, analyse
    from leelaz.selfplay.runner import EngineSide

    side = EngineSide(NET, cpu_only=True, gpus=(), precision="auto", batch_rows=16)
    found = {}
    settings = ReviewSettings(visits=16, seed=5, parallel=16, memo_rows=memo_rows,
                              reuse=False)  # the memo's case: each position's own tree
    memo = analyse([list(enumerate(positions))], side, settings,
                   lambda key, analysis: found.__setitem__(key, analysis))
    return [found[k] for k in range(len(positions))], memo, side.rows


def test_a_review_with_the_memo_finds_what_it_finds_without(tygem_dir, tmp_path):
    """On the real network, where position n+1's tree repeats position n's: fewer rows
    reach the network, and every position's analysis is the same (the winrate to the last
    bits that BLAS's blocking of a batch moves, as lz-analyze's 4 digits show it)."""
    positions = _game_positions(tygem_dir, tmp_path, 40, 16)
    assert len(positions) == 16
    with_memo, memo, sent = _review(positions, 10_000)
    without, _, sent_without = _review(positions, 0)
    assert [(a.to_move, a.visits, a.best, a.pv) for a in with_memo] == \
        [(a.to_move, a.visits, a.best, a.pv) for a in without]
    assert [a.winrate for a in with_memo] == pytest.approx([a.winrate for a in without],
                                                           abs=1e-6)
    assert memo.asked == sent_without
    assert memo.sent == sent < sent_without


def test_the_analysis_engines_clear_cache_empties_the_memo(random_weights):
    """`leelaz analysis`: a position asked for again is answered from the memo, with the
    same numbers; after `clear_cache` its rows reach the network again."""
    import io
    import json

    from leelaz.review.analyse import ReviewSettings
    from leelaz.review.json_engine import JsonEngine
    from leelaz.selfplay.runner import EngineSide

    side = EngineSide(random_weights(1, 8), cpu_only=True, gpus=(), precision="auto",
                      batch_rows=4, backend=RowFunction)
    out = io.StringIO()
    engine = JsonEngine(side, ReviewSettings(visits=12, seed=1, parallel=4), out)

    def serve(query: dict) -> int:
        engine.handle(json.dumps(query))
        while engine.waiting or engine.flying:
            engine.step()
        return side.backend.rows

    query = {"moves": [["B", "Q16"], ["W", "D4"]], "rules": "chinese", "maxVisits": 12}
    first = serve({"id": "a", **query})
    assert first > 0
    assert serve({"id": "b", **query}) == first
    serve({"id": "cc", "action": "clear_cache"})
    assert serve({"id": "c", **query}) == 2 * first
    replies = {r["id"]: r for r in map(json.loads, out.getvalue().splitlines())}
    assert replies["cc"] == {"id": "cc", "action": "clear_cache"}
    assert replies["a"]["moveInfos"] == replies["b"]["moveInfos"] == replies["c"]["moveInfos"]
