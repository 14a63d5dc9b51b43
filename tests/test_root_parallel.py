"""Several search processes on one position (--search-processes): the merge of root
statistics against values computed independently, the position deltas sent to helpers, the
default policy, and real helper processes searching beside the engine's tree."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from leelaz.batching import search_processes
from leelaz.config import EngineConfig
from leelaz.game.coords import BLACK, PASS, WHITE
from leelaz.game.state import GameState
from leelaz.search.merge import combine, merged_root, root_report
from leelaz.search.node import M2_START, UCTNode
from leelaz.search.params import SearchParams
from leelaz.search.stats import snapshot


def _fed(values) -> UCTNode:
    node = UCTNode()
    for v in values:
        node.update(v)
    return node


def test_combine_equals_one_node_fed_every_value():
    rng = random.Random(5)
    values = [rng.random() for _ in range(300)]
    cuts = [0, 40, 41, 190, 300]
    parts = [_fed(values[a:b]) for a, b in zip(cuts, cuts[1:])]
    n, w, m2 = parts[0].visits, parts[0].black_wins, parts[0].m2
    for p in parts[1:]:
        n, w, m2 = combine(n, w, m2, p.visits, p.black_wins, p.m2)
    assert n == 300
    assert w == pytest.approx(sum(values), abs=1e-9)
    expected_m2 = float(np.var(values) * len(values)) + M2_START  # independent: numpy
    assert m2 == pytest.approx(expected_m2, rel=1e-9)
    empty = UCTNode()
    assert combine(0, 0.0, M2_START, n, w, m2) == (n, w, m2)
    assert combine(n, w, m2, empty.visits, empty.black_wins, empty.m2) == (n, w, m2)


def _tree(children: dict[int, list[float]], prior=None) -> UCTNode:
    """A root (Black to move) whose children got the given playout values (Black's side)."""
    root = UCTNode()
    root.expanded = True
    root.psa_ratio = 0.0
    root.update(0.5)  # the root's own evaluation
    for i, (move, values) in enumerate(children.items()):
        child = UCTNode(move, (prior or {}).get(move, 0.1 * (i + 1)))
        for v in values:
            child.update(v)
            root.update(v)
        root.children.append(child)
    return root


def test_merged_root_sums_each_move_and_leaves_the_trees_alone():
    rng = random.Random(7)
    draws = {m: [rng.random() for _ in range(rng.randrange(3, 30))] for m in (60, 61, 62, 63)}
    own = _tree({60: draws[60][:2], 61: draws[61][:5], 62: []})
    other = _tree({60: draws[60][2:], 61: draws[61][5:], 63: draws[63]})
    before = [(c.move, c.visits, c.black_wins, c.m2) for c in own.children]
    shadow = merged_root(own, [root_report(other, BLACK)])
    assert [(c.move, c.visits, c.black_wins, c.m2) for c in own.children] == before
    assert [c.move for c in shadow.children] == [60, 61, 62, 63]  # own order, new ones last
    for c in shadow.children:
        values = draws.get(c.move, []) if c.move != 62 else []
        assert c.visits == len(values)
        if values:
            assert c.black_wins == pytest.approx(sum(values))
            assert c.m2 == pytest.approx(float(np.var(values) * len(values)) + M2_START)
    assert shadow.visits == own.visits + other.visits
    # The merged snapshot reads as one tree's: visits add up, Q is the pooled mean.
    result = snapshot(shadow, WHITE, 0)
    by_move = {m.move: m for m in result.children}
    assert by_move[63].winrate == pytest.approx(1 - sum(draws[63]) / len(draws[63]))
    assert result.root_visits == sum(m.visits for m in result.children) + 2  # two roots


def test_merged_pv_comes_from_the_tree_with_most_visits():
    own = _tree({60: [0.5] * 3, 61: [0.4] * 9})
    grand = UCTNode(100)
    grand.update(0.6)
    own.children[1].children = [grand]  # 61's own subtree: 61 100
    own.children[1].psa_ratio = 0.0
    other = _tree({60: [0.5] * 8, 61: [0.4] * 2})
    report = list(root_report(other, BLACK))
    report[3] = tuple(c[:5] + ((c[0], 200, 201) if c[0] == 60 else c[5],) for c in report[3])
    shadow = merged_root(own, [tuple(report)])
    pv = {m.move: m.pv for m in snapshot(shadow, BLACK, 0).children}
    assert pv[60] == [60, 200, 201]  # the helper had 8 visits to the own 3
    assert pv[61] == [61, 100]  # the own tree had 9 to 2
    assert merged_root(own, []) is own


def _random_game(seed: int, moves: int) -> list[GameState]:
    """The states of a game of random legal moves, with a `set_to_move` and an undo."""
    rng = random.Random(seed)
    state, states = GameState(), []
    for i in range(moves):
        legal = state.legal_moves(state.to_move) + [PASS]
        state.play(state.to_move, rng.choice(legal))
        if i == moves // 2:
            state.set_to_move(1 - state.to_move)
        if i == moves // 3:
            state.undo()
        states.append(state.copy())
    return states


def _same(a: GameState, b: GameState) -> bool:
    return ([x.hash for x in a.history] == [x.hash for x in b.history]
            and a.moves() == b.moves() and a.to_move == b.to_move
            and a.seen_positions() == b.seen_positions() and a.komi == b.komi
            and a.board.ko_hash == b.board.ko_hash and a.passes == b.passes)


def test_position_deltas_rebuild_each_state():
    import pickle

    states = _random_game(3, 80)
    sent = None  # what the helper holds: unpickled copies, as over the pipe
    last = None
    for st in states[::7]:
        delta = st.delta_since(last) if last is not None else None
        if delta is None:
            sent = pickle.loads(pickle.dumps(st))
        else:
            sent = sent.with_delta(pickle.loads(pickle.dumps(delta)))
            # only the positions after the shared history travel, the live one included
            assert len(delta[1]) == len(st.history) - delta[0]
            assert delta[0] >= min(len(last.history), len(st.history)) - 2  # undo: one less
        last = st
        assert _same(sent, st)
    fresh = GameState()  # clear_board: nothing shared, the whole state goes again
    assert fresh.delta_since(states[-1]) is None


def test_several_trees_by_default_on_a_device_only():
    assert search_processes(EngineConfig()) == 1  # the host: one tree, as Leela Zero
    assert search_processes(EngineConfig(), on_device=True, hw=16) == 8
    assert search_processes(EngineConfig(), on_device=True, hw=64) == 8
    assert search_processes(EngineConfig(), on_device=True, hw=6) == 3
    assert search_processes(EngineConfig(), on_device=True, hw=1) == 1
    for limited in (EngineConfig(visits=200), EngineConfig(playouts=50),
                    EngineConfig(benchmark=True)):
        assert search_processes(limited, on_device=True, hw=16) == 1
    assert search_processes(EngineConfig(search_processes=3)) == 3
    assert search_processes(EngineConfig(search_processes=1), on_device=True, hw=16) == 1


def test_only_a_gpu_backend_counts_as_a_device():
    from types import SimpleNamespace as NS

    from leelaz.root_parallel.pool import runs_on_gpu

    cl_gpu, cl_cpu = NS(type=4), NS(type=2)  # CL_DEVICE_TYPE_GPU / _CPU bits
    assert runs_on_gpu(NS(backend=NS(asynchronous=True, device=cl_gpu)))
    assert not runs_on_gpu(NS(backend=NS(asynchronous=True, device=cl_cpu)))
    assert runs_on_gpu(NS(backend=NS(asynchronous=True, device=NS(type="cuda"))))
    assert not runs_on_gpu(NS(backend=NS(asynchronous=False, device=None)))  # NumPy
    assert not runs_on_gpu(object())  # an evaluator without a backend


def test_the_server_takes_torch_on_cuda_only_when_left_to_choose(monkeypatch):
    """The server opens the engine's plan (nn/loading.py), quietly: PyTorch in half
    precision where torch sees CUDA and the engine was left to choose, else the engine's own
    choice."""
    from leelaz.backends import device_choice
    from leelaz.nn.loading import choose

    weights = object()  # only its presence matters before the backend loads
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: True)
    chosen = choose(EngineConfig(), weights).quietly()
    assert (chosen.backend, chosen.precision, chosen.quiet) == ("torch", "half", True)
    given = choose(EngineConfig(precision="single", precision_given=True), weights).quietly()
    assert given.precision == "single"
    for own in (EngineConfig(cpu_only=True), EngineConfig(gpus=(1,)),
                EngineConfig(network_backend="torch", precision="single")):
        assert choose(own, weights).quietly() == choose(own.with_(quiet=True), None)
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: False)
    monkeypatch.setattr(device_choice, "preferred_backend", lambda *a: "opencl")
    assert choose(EngineConfig(), weights).quietly() == choose(EngineConfig(quiet=True), None)


# ---------------------------------------------------------------------- real helper processes
def _numpy_plan(cfg):
    """The engine's plan for `cfg` (--cpu-only: NumPy), which helpers and the server open."""
    from leelaz.nn.loading import choose

    assert cfg.cpu_only
    return choose(cfg, None)


@pytest.fixture(params=["own networks", "network server"])
def pool(request, random_weights):
    from leelaz.nn.network import Network
    from leelaz.backends.remote import NetworkServer
    from leelaz.root_parallel.pool import MultiTreeSearch
    from leelaz.root_parallel.helper import HelperProcess

    path = random_weights(1, 8)
    cfg = EngineConfig(cpu_only=True, seed=11)
    server = None
    if request.param == "network server":
        server = NetworkServer(_numpy_plan(cfg), path, 2)
    helpers = [HelperProcess(_numpy_plan(cfg), path, i,
                             server=server.client(i) if server else None) for i in range(2)]
    if server is not None:
        server.release_clients()
    search = MultiTreeSearch(Network.from_file(path, backend="numpy", seed=11),
                             SearchParams(batch_size=4, quiet=True), rng=11, helpers=helpers,
                             server=server)
    deadline = time.monotonic() + 120
    while not all(h.ready for h in helpers):
        assert time.monotonic() < deadline, [h.failure for h in helpers]
        for h in helpers:
            h.read()
        time.sleep(0.05)
    yield search
    search.close()
    for h in helpers:
        assert not h.process.is_alive()
    assert server is None or not server.process.is_alive()


def _trees_in(result) -> int:
    """How many trees a merged result adds up: each root has one visit of its own."""
    return result.root_visits - sum(c.visits for c in result.children)


def _ponder(search, state, seconds: float, **kwargs):
    stop_at = time.monotonic() + seconds
    return search.ponder(state, should_stop=lambda: time.monotonic() > stop_at, **kwargs)


def test_helpers_search_the_same_position_in_analysis_only(pool):
    state = GameState()
    state.play(BLACK, 72)
    # A move on the clock is the engine's tree alone: the helpers never see the position.
    result = pool.think(state, WHITE, time_limit_cs=100, use_clock=False)
    assert _trees_in(result) == 1 and result.root_visits == pool.root.visits
    assert all(h.sent is None for h in pool.helpers)
    state.play(WHITE, result.move)
    snapshots = []
    result = _ponder(pool, state, 1.5, on_progress=snapshots.append, progress_interval_cs=20)
    assert _trees_in(result) == 3
    assert result.root_visits > pool.root.visits  # the helpers' visits are in it
    assert snapshots and all(_trees_in(s) in (1, 2, 3) for s in snapshots)
    assert all(h.sent is not None for h in pool.helpers)
    # The next position reuses each tree: a delta goes to the helpers, and they still count.
    state.play(BLACK, max(result.children, key=lambda c: c.visits).move)
    result = _ponder(pool, state, 1.0)
    assert _trees_in(result) == 3
    assert _trees_in(pool.think(state, WHITE, time_limit_cs=50, use_clock=False)) == 1


def test_a_visit_limit_keeps_the_helpers_idle(pool):
    import dataclasses

    pool.params = dataclasses.replace(pool.params, max_visits=50)
    result = _ponder(pool, GameState(), 60.0)  # the limit ends it, as it ends lz-analyze
    assert _trees_in(result) == 1 and result.root_visits <= 50


def test_a_dead_helper_is_dropped(pool):
    pool.helpers[0].process.kill()
    pool.helpers[0].process.join(10)
    result = _ponder(pool, GameState(), 1.0)
    assert _trees_in(result) in (1, 2)  # the engine went on: its tree, maybe the live helper
    assert len(pool.helpers) == 1
    assert _trees_in(_ponder(pool, GameState(), 1.0)) == 2


def test_engine_with_search_processes_answers_and_quits(random_weights):
    import subprocess
    import sys

    net = random_weights(1, 8)
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "leelaz", "--gtp", "--noponder", "--cpu-only", "-w", net,
         "--search-processes", "3", "-s", "5"],
        input="time_settings 0 1 1\ngenmove b\nlz-analyze 10\n", text=True,
        capture_output=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "Searching in 3 processes, one tree each." in done.stderr
    assert done.stdout.startswith("= \n\n= ")
    assert time.monotonic() - began < 120


def test_helpers_end_when_the_engine_is_killed(random_weights):
    """SIGKILL leaves the helpers no quit message: they see their pipe close and exit."""
    import os
    import signal
    import subprocess
    import sys

    net = random_weights(1, 8)
    engine = subprocess.Popen(
        [sys.executable, "-m", "leelaz", "--gtp", "--noponder", "--cpu-only", "-w", net,
         "--search-processes", "3", "-v", "20"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        engine.stdin.write("genmove b\n")
        engine.stdin.flush()
        assert engine.stdout.readline().startswith("= ")
        children = [p for p in os.listdir("/proc") if p.isdigit() and _parent(p) == engine.pid]
        assert len(children) >= 2  # the two helpers (and perhaps spawn's tracker)
    finally:
        engine.send_signal(signal.SIGKILL)
        engine.wait(30)
    _assert_all_exit(children)


def _assert_all_exit(pids: list[str], seconds: float = 30) -> None:
    """Every process in `pids` is gone (or a zombie) within `seconds`."""
    deadline = time.monotonic() + seconds
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in alive if _state(p) not in (None, "Z")]
    assert not alive


def _stat(pid: str) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state first), None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _parent(pid: str) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def _state(pid: str) -> str | None:
    fields = _stat(pid)
    return fields[0] if fields else None


# ---------------------------------------------------------------------- the network server
class _RowSums:
    """A backend whose answer for a row depends on that row alone, computed independently of
    the server: logits[j] = j + the row's sum of inputs, value = the sum. It records its calls
    (rows per call) and fails a call holding a row whose inputs sum to -1."""

    name = "rowsums"
    precision = None
    max_batch = None
    device = None
    weights = None

    def __init__(self, packed: bool, max_batch=None):
        self.packed = packed
        self.max_batch = max_batch
        self.calls: list[int] = []

    @property
    def accepts_packed_inputs(self):
        return self.packed

    def _answer(self, sums):
        from leelaz.backends.base import Done

        if (sums == -1).any():
            raise ValueError("a poisoned row")
        sums = np.asarray(sums, dtype=np.float32)
        self.calls.append(len(sums))
        return Done((np.arange(362, dtype=np.float32)[None, :] + sums[:, None], sums))

    def submit(self, planes):
        return self._answer(planes.reshape(len(planes), -1).sum(axis=1))

    def submit_packed(self, packed, batch):
        from leelaz.backends.base import PACKED_ROW

        boxes = np.frombuffer(packed[:batch * PACKED_ROW], dtype=np.uint8)
        return self._answer(boxes.reshape(batch, PACKED_ROW).sum(axis=1).astype(np.float32))


def _serve_in_thread(backend, clients: int, start: bool = True):
    import threading
    from multiprocessing import Pipe

    from leelaz.backends.remote import RemoteBackend, serve

    pairs = [Pipe() for _ in range(clients)]
    counters = {}
    thread = threading.Thread(
        target=lambda: counters.update(serve(backend, [s for _, s in pairs])))
    if start:
        thread.start()
    hello = {"name": backend.name, "packed": backend.packed, "precision": None}
    return [RemoteBackend(c, hello) for c, _ in pairs], thread, counters


def _expected(sums):
    sums = np.asarray(sums, dtype=np.float32)
    return np.arange(362, dtype=np.float32)[None, :] + sums[:, None], sums


def test_the_server_answers_every_client_its_own_rows_in_one_call():
    backend = _RowSums(packed=False)
    clients, thread, counters = _serve_in_thread(backend, 3, start=False)
    rng = np.random.default_rng(3)
    # (small batches: the requests sit in the pipes' buffers until the server starts)
    batches = [rng.integers(0, 3, (n, 18, 19, 19)).astype(np.float32) for n in (1, 2, 1)]
    # Every client sends two requests before the server starts: it finds the three first
    # requests waiting together (one call), then the three second ones; each client gets
    # its answers in order.
    first = [c.submit(b) for c, b in zip(clients, batches)]
    second = [c.submit(b[::-1].copy()) for c, b in zip(clients, batches)]
    thread.start()
    sent = list(zip(first, batches)) + list(zip(second, [b[::-1] for b in batches]))
    for pending, planes in sent:
        logits, values = pending.result()
        want_logits, want_values = _expected(planes.reshape(len(planes), -1).sum(axis=1))
        np.testing.assert_array_equal(logits, want_logits)
        np.testing.assert_array_equal(values, want_values)
    for c in clients:
        c.conn.close()
    thread.join(10)
    assert not thread.is_alive()
    assert counters["rows"] == 8
    assert backend.calls == [4, 4]  # requests that waited together went in one call


def test_the_server_never_waits_on_a_client_that_is_sending_its_next_request():
    """Self-play's worker sends its next batch before it reads the answer to the last one.
    With a GPU's batches (hundreds of rows: an answer of 363 floats a row is far more than a
    pipe holds), a server that wrote the answer while the client wrote its next request
    would wait on the client as the client waited on it: both stop for good."""
    import threading
    import time

    from leelaz.backends.base import PACKED_ROW

    backend = _RowSums(packed=True)
    clients, thread, counters = _serve_in_thread(backend, 2)
    rows = 600  # an answer of 871 kB, a request of 2.1 MB: several times a pipe's buffer
    rng = np.random.default_rng(5)
    requests = [rng.integers(0, 4, rows * (PACKED_ROW + 2), dtype=np.uint8).tobytes()
                for _ in range(3)]
    want = [np.frombuffer(r[:rows * PACKED_ROW], dtype=np.uint8).reshape(rows, PACKED_ROW)
            .sum(axis=1).astype(np.float32) for r in requests]
    got: dict = {}

    def play(index, client):
        # Three requests, each sent before the last one's answer is read, with a pause
        # between them (the trees' walk for the next batch) in which the server answers.
        pendings = []
        for r in requests:
            pendings.append(client.submit_packed(r, rows))
            time.sleep(0.2)
        got[index] = [p.result()[1] for p in pendings]

    players = [threading.Thread(target=play, args=(i, c), daemon=True)
               for i, c in enumerate(clients)]
    for player in players:
        player.start()
    for player in players:
        player.join(30)
    assert not any(p.is_alive() for p in players), "the server and a client wait on each other"
    for index in range(len(clients)):
        for values, expected in zip(got[index], want):
            np.testing.assert_array_equal(values, expected)
    for c in clients:
        c.conn.close()
    thread.join(10)
    assert not thread.is_alive()
    assert counters["rows"] == 2 * 3 * rows


def test_the_server_joins_packed_positions_and_respects_max_batch():
    from leelaz.nn.features import packed_inputs

    backend = _RowSums(packed=True, max_batch=4)
    clients, thread, _ = _serve_in_thread(backend, 2, start=False)
    rng = random.Random(8)
    games = []
    for n in (3, 3):
        states = []
        for _ in range(n):
            state = GameState()
            for _ in range(rng.randrange(1, 30)):
                state.play(state.to_move, rng.choice(state.legal_moves(state.to_move)))
            states.append(state)
        games.append(states)
    pendings = [c.submit_packed(packed_inputs(s, [0] * len(s)), len(s))
                for c, s in zip(clients, games)]
    thread.start()
    from leelaz.backends.base import PACKED_ROW

    for pending, states in zip(pendings, games):
        own = np.frombuffer(packed_inputs(states, [0] * len(states))[:len(states) * PACKED_ROW],
                            dtype=np.uint8).reshape(len(states), PACKED_ROW).sum(axis=1)
        logits, values = pending.result()
        np.testing.assert_array_equal(values, own.astype(np.float32))
    for c in clients:
        c.conn.close()
    thread.join(10)
    assert backend.calls == [3, 3]  # two requests of 3 waited together: two calls of <= 4


def test_a_failed_call_reaches_its_clients_and_the_server_goes_on():
    backend = _RowSums(packed=False)
    clients, thread, _ = _serve_in_thread(backend, 1)
    poisoned = np.zeros((1, 18, 19, 19), dtype=np.float32)
    poisoned[0, 0, 0, 0] = -1
    with pytest.raises(RuntimeError, match="a poisoned row"):
        clients[0].submit(poisoned).result()
    fine = np.ones((2, 18, 19, 19), dtype=np.float32)
    np.testing.assert_array_equal(clients[0].submit(fine).result()[1], [18 * 361] * 2)
    clients[0].conn.close()
    thread.join(10)
    assert not thread.is_alive()


def test_planes_and_packed_positions_waiting_together_go_in_calls_of_their_own():
    """A packed-capable server also takes planes: the engine's tree on the server sends
    planes when its own backend takes nothing else (ServedBackend), beside helpers that send
    packed positions. Each kind goes in its own call, and each client gets its rows' answers
    (values: the rows' input sums, computed here independently)."""
    from leelaz.backends.base import PACKED_ROW
    from leelaz.nn.features import packed_inputs

    backend = _RowSums(packed=True)
    clients, thread, counters = _serve_in_thread(backend, 2, start=False)
    states = [GameState() for _ in range(3)]
    for i, state in enumerate(states):
        for move in range(i + 1):
            state.play(state.to_move, state.legal_moves(state.to_move)[7 * move])
    packed = packed_inputs(states, [0] * 3)
    planes = np.random.default_rng(5).integers(0, 2, (2, 18, 19, 19)).astype(np.float32)
    from_packed = clients[0].submit_packed(packed, 3)
    from_planes = clients[1].submit(planes)
    thread.start()
    boxes = np.frombuffer(packed[:3 * PACKED_ROW], dtype=np.uint8).reshape(3, PACKED_ROW)
    try:
        np.testing.assert_array_equal(from_packed.result()[1], boxes.sum(axis=1))
        np.testing.assert_array_equal(from_planes.result()[1],
                                      planes.reshape(2, -1).sum(axis=1))
    finally:  # the server ends with its clients, failed or not
        for c in clients:
            c.conn.close()
        thread.join(10)
    assert sorted(backend.calls) == [2, 3] and counters["calls"] == 2


def test_a_client_whose_server_failed_to_load_says_why():
    from multiprocessing import Pipe

    from leelaz.backends.remote import RemoteBackend

    ours, theirs = Pipe()
    theirs.send(("failed", "OSError: no such file"))
    with pytest.raises(RuntimeError, match="no such file"):
        RemoteBackend.connect(ours)
    theirs.close()
    with pytest.raises(RuntimeError, match="went away"):
        RemoteBackend.connect(ours)


def test_a_served_call_goes_to_the_own_backend_when_the_server_fails():
    from multiprocessing import Pipe

    from leelaz.backends.remote import RemoteBackend, ServedBackend

    own = _RowSums(packed=False)
    said = []
    ours, theirs = Pipe()
    served = ServedBackend(RemoteBackend(ours, {"name": "torch", "packed": True}), own,
                           said.append)
    assert served.name == "torch" and not served.accepts_packed_inputs  # own takes planes
    planes = np.random.default_rng(4).integers(0, 2, (3, 18, 19, 19)).astype(np.float32)
    pending = served.submit(planes)  # sent; the server goes away before answering
    theirs.close()
    logits, values = pending.result()
    want_logits, want_values = _expected(planes.reshape(3, -1).sum(axis=1))
    np.testing.assert_array_equal(logits, want_logits)
    np.testing.assert_array_equal(values, want_values)
    assert not served.served and served.name == "rowsums"
    assert len(said) == 1 and "own network" in said[0]
    np.testing.assert_array_equal(served.forward(planes)[1], want_values)  # own from now on
    assert own.calls == [3, 3]


def test_the_engines_tree_moves_onto_the_server_and_back(random_weights):
    """Once the server is ready the engine's Network evaluates there in analysis (the same
    numbers as its own backend: the same weights), and on its own backend on the clock;
    when the server dies it goes back to its own, and the helper, which has no network of
    its own, is dropped."""
    from leelaz.nn.features import input_planes
    from leelaz.nn.network import Network
    from leelaz.root_parallel.helper import HelperProcess
    from leelaz.backends.remote import NetworkServer, ServedBackend
    from leelaz.root_parallel.pool import MultiTreeSearch

    path = random_weights(1, 8)
    cfg = EngineConfig(cpu_only=True, seed=3)
    server = NetworkServer(_numpy_plan(cfg), path, 1, engine_client=True)
    helpers = [HelperProcess(_numpy_plan(cfg), path, 0, server=server.client(0))]
    server.release_clients()
    network = Network.from_file(path, backend="numpy", seed=3)
    own = network.backend
    said = []
    search = MultiTreeSearch(network, SearchParams(batch_size=4), rng=3,
                             log=said.append, helpers=helpers, server=server)
    try:
        deadline = time.monotonic() + 120
        while not server.engine_conn.poll(0.05):
            assert time.monotonic() < deadline
        state = GameState()
        search.think(state, BLACK, time_limit_cs=30, use_clock=False)
        assert network.backend is own  # on the clock: its own network
        _ponder(search, state, 0.3)
        served = network.backend
        assert isinstance(served, ServedBackend) and served.served and served.own is own
        assert ("The engine's tree evaluates on the network server in analysis (numpy).\n"
                in said)
        search.think(state, BLACK, time_limit_cs=30, use_clock=False)
        assert network.backend is own
        rng = random.Random(2)
        rows = []
        for _ in range(3):
            for _ in range(6):
                state.play(state.to_move, rng.choice(state.legal_moves(state.to_move)))
            rows.append(input_planes(state).reshape(18, 19, 19).astype(np.float32))
        planes = np.stack(rows)
        want = own.forward(planes)
        got = served.forward(planes)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        server.process.kill()
        server.process.join(10)
        got = served.forward(planes)
        np.testing.assert_array_equal(got[1], want[1])
        assert not served.served
        assert any("goes back to its own network" in line for line in said)
        result = _ponder(search, state, 0.5)
        assert result.root_visits > 1 and network.backend is served
        # The helper's batches failed too: it said why and was dropped.
        assert search.helpers == []
        assert ("search process leelaz-search-0 dropped: the network server went away\n"
                in said)
    finally:
        search.close()


def test_a_long_analysis_moves_onto_the_server_once_it_is_ready(random_weights):
    """A ponder (lz-analyze) that began before the server was ready moves the engine's
    tree onto it at a progress report, and goes on searching there."""
    import threading
    from multiprocessing import Pipe

    from leelaz.nn.network import Network
    from leelaz.backends.remote import RemoteBackend, ServedBackend, serve
    from leelaz.root_parallel.pool import MultiTreeSearch

    path = random_weights(1, 8)
    network = Network.from_file(path, backend="numpy", seed=3)
    ours, theirs = Pipe()
    counters = {}
    thread = threading.Thread(target=lambda: counters.update(
        serve(Network.from_file(path, backend="numpy").backend, [theirs])))
    thread.start()

    class LateServer:
        """Ready at the third look (the call's start is the first)."""
        engine_conn = True
        looks = 0

        def engine_backend(self, own, log=None):
            self.looks += 1
            if self.looks < 3:
                return None
            self.engine_conn = None
            return ServedBackend(RemoteBackend(ours, {"name": "numpy", "packed": False}),
                                 own, log)

        def close(self):
            ours.close()

    server = LateServer()
    search = MultiTreeSearch(network, SearchParams(batch_size=4, quiet=True), rng=3,
                             helpers=[], server=server)
    snapshots = []
    stop_at = time.monotonic() + 2.0
    search.ponder(GameState(), should_stop=lambda: time.monotonic() > stop_at,
                  on_progress=snapshots.append, progress_interval_cs=10)
    assert server.looks == 3 and isinstance(network.backend, ServedBackend)
    swapped_at = snapshots[1].root_visits  # the third look came with the second report
    assert search.root.visits > swapped_at
    search.close()
    thread.join(10)
    assert not thread.is_alive() and counters["rows"] > 0  # its batches went there


_SERVER_SCRIPT = """
import sys, time
from leelaz.config import EngineConfig
from leelaz.nn.network import Network
from leelaz.search.params import SearchParams
from leelaz.root_parallel.pool import make_search
from tests.test_root_parallel import _numpy_plan

if __name__ == "__main__":
    path = sys.argv[1]
    cfg = EngineConfig(cpu_only=True, seed=5, search_processes=3)
    search = make_search(Network.from_file(path, backend="numpy"), cfg, path,
                         SearchParams(batch_size=2, quiet=True), plan=_numpy_plan(cfg),
                         shared_network=True)
    deadline = time.monotonic() + 120
    while not all(h.ready for h in search.helpers) and time.monotonic() < deadline:
        for h in search.helpers:
            h.read()
        time.sleep(0.05)
    print(search.server.process.pid, *[h.process.pid for h in search.helpers], flush=True)
    time.sleep(600)
"""


def test_the_server_and_helpers_end_when_the_engine_is_killed(random_weights, tmp_path):
    """SIGKILL leaves no quit message: the server sees its control pipe close, the helpers
    their engine pipe; all of them exit."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "engine.py"
    script.write_text(_SERVER_SCRIPT)
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    engine = subprocess.Popen([sys.executable, str(script), random_weights(1, 8)], cwd=root,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    try:
        children = engine.stdout.readline().split()
        assert len(children) == 3, "the server and two helpers started"
        assert all(_state(p) not in (None, "Z") for p in children)
    finally:
        engine.send_signal(signal.SIGKILL)
        engine.wait(30)
    _assert_all_exit(children)
