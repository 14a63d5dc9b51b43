"""Network.evaluate: symmetries, averaging, version-2 flip, batching and the cache (Network.cpp)."""

from __future__ import annotations

import numpy as np
import pytest

from leelaz.backends.base import Backend
from leelaz.backends.numpy_backend import NumpyBackend
from leelaz.backends.random_weights import random_tensors
from leelaz.backends.weights import load_weights
from leelaz.backends.weights_writer import write_weights
from leelaz.game.coords import BLACK, PASS, WHITE, parse_gtp_vertex
from leelaz.game.state import GameState
from leelaz.nn.cache import NNCache
from leelaz.nn.network import Network
from leelaz.nn.symmetry import INVERSE, SYMMETRY_TABLE, symmetric_xy, symmetry_hash

MOVES = ["D4", "Q16", "C17", "R3", "K10", "F3"]


class CountingBackend(Backend):
    """Wraps a backend and records the batch size of every forward call."""

    name = "counting"

    def __init__(self, inner):
        self.inner = inner
        self.calls: list[int] = []

    def forward(self, planes):
        self.calls.append(planes.shape[0])
        return self.inner.forward(planes)


@pytest.fixture(scope="module")
def weights(random_weights):
    return load_weights(random_weights(1, 16, seed=21))


def make_net(weights, **options):
    return Network(weights, CountingBackend(NumpyBackend(weights, threads=1)), seed=5, **options)


def game(moves=MOVES, s=None):
    g = GameState()
    for i, text in enumerate(moves):
        v = parse_gtp_vertex(text)
        if s is not None:
            x, y = symmetric_xy(v % 21 - 1, v // 21 - 1, s)
            v = (y + 1) * 21 + x + 1
        g.play(BLACK if i % 2 == 0 else WHITE, v)
    return g


def test_outputs_are_probabilities(weights):
    ev = make_net(weights).evaluate([game()], symmetry=0)[0]
    assert ev.policy.dtype == np.float32 and ev.policy.shape == (362,)
    assert abs(float(ev.policy.sum()) - 1) < 1e-5 and ev.policy.min() > 0
    assert 0 < ev.winrate < 1


@pytest.mark.parametrize("s", range(8))
def test_symmetry_s_equals_identity_on_the_mirrored_game(weights, s):
    """Under symmetry s the net sees exactly the mirrored game's identity input (get_symmetry)."""
    net = make_net(weights)
    a = net.evaluate([game()], symmetry=s, read_cache=False)[0]
    # game(s=t) puts the stone of point i on T_t(i); the net under s reads point T_s(i) at i.
    b = net.evaluate([game(s=INVERSE[s])], symmetry=0, read_cache=False)[0]
    np.testing.assert_allclose(a.policy[SYMMETRY_TABLE[s]], b.policy[:361], rtol=1e-5)
    assert a.policy[361] == pytest.approx(b.policy[361], rel=1e-5)
    assert a.winrate == pytest.approx(b.winrate, abs=1e-6)


def test_average_is_the_mean_of_the_eight(weights):
    net = make_net(weights)
    singles = [net.evaluate([game()], symmetry=s, read_cache=False)[0] for s in range(8)]
    net.backend.calls.clear()
    avg = net.evaluate([game()], symmetry="average", read_cache=False)[0]
    assert net.backend.calls == [8]
    np.testing.assert_allclose(avg.policy, np.mean([e.policy for e in singles], axis=0),
                               rtol=1e-5)
    assert avg.winrate == pytest.approx(np.mean([e.winrate for e in singles]), abs=1e-6)


def test_one_forward_per_batch_and_cache_hits(weights):
    net = make_net(weights)
    states = [game(MOVES[:n]) for n in range(1, 6)]
    first = net.evaluate(states)
    assert net.backend.calls == [5]
    again = net.evaluate(states + [game(MOVES)])
    assert net.backend.calls == [5, 1]  # only the new position reached the backend
    for a, b in zip(first, again):
        assert a is b
    net.evaluate(states, symmetry=0, read_cache=False)
    assert net.backend.calls == [5, 1, 5]


def test_cache_key_ignores_history_and_passes_change_it(weights):
    net = make_net(weights)
    a = game(["D4", "Q16", "C5"])
    b = game(["C5", "Q16", "D4"])  # same stones, other history
    net.evaluate([a])
    net.evaluate([b])
    assert net.backend.calls == [1]
    c = game(["D4", "Q16", "C5"])  # not self-symmetric: no symmetric hit (no pass term)
    c.play(WHITE, PASS)
    c.play(BLACK, PASS)
    net.evaluate([c])
    assert net.backend.calls == [1, 1]


def test_symmetric_lookup_in_the_opening(weights):
    original = game()
    for s in (1, 4, 6):
        net = make_net(weights)
        ev = net.evaluate([original], symmetry=3)[0]
        mirror = game(s=s)
        assert any(symmetry_hash(mirror.board, t) == original.board.hash for t in range(1, 8))
        hit = net.evaluate([mirror])[0]
        assert net.backend.calls == [1]
        fresh = net.evaluate([mirror], symmetry="average", read_cache=False)[0]
        # The hit is the original's evaluation moved onto the mirror's points: stones agree.
        assert hit.winrate == ev.winrate
        assert sorted(hit.policy) == pytest.approx(sorted(ev.policy))
        differ = [i for i in range(361) if fresh.policy[i] != hit.policy[i]]
        assert differ  # a random net is not symmetric: the hit is not a fresh evaluation
    # Off when asked (-n, -m), and past move 30.
    net2 = make_net(weights, symmetric_lookups=False)
    net2.evaluate([original])
    net2.evaluate([game(s=1)])
    assert net2.backend.calls == [1, 1]


def test_symmetric_lookup_only_before_move_30(weights):
    moves = [f"{c}{r}" for c in "ABCDEFGH" for r in (1, 3, 5, 7)][:30]
    net = make_net(weights)
    net.evaluate([game(moves)])
    net.evaluate([game(moves, s=1)])
    assert net.backend.calls == [1, 1]
    net.evaluate([game(moves[:29])])
    net.evaluate([game(moves[:29], s=1)])
    assert net.backend.calls == [1, 1, 1]


def test_version_2_value_is_blacks(tmp_path):
    tensors = random_tensors(1, 8, 4)
    paths = []
    for version in (1, 2):
        paths.append(str(tmp_path / f"v{version}.txt"))
        write_weights(paths[-1], tensors, version)
    v1, v2 = (Network.from_file(p, backend_options={"threads": 1}) for p in paths)
    black_to_move, white_to_move = game(MOVES[:2]), game(MOVES[:3])
    for state, flipped in ((black_to_move, False), (white_to_move, True)):
        a = v1.evaluate([state], symmetry=0)[0]
        b = v2.evaluate([state], symmetry=0)[0]
        want = 1 - a.winrate if flipped else a.winrate
        assert b.winrate == pytest.approx(want, abs=1e-6)
        np.testing.assert_array_equal(a.policy, b.policy)


def test_random_symmetry_is_seeded_and_varies(weights):
    runs = []
    for _ in range(2):
        net = make_net(weights)
        runs.append([net.evaluate([game()], read_cache=False)[0].winrate for _ in range(12)])
    assert runs[0] == runs[1]
    assert len(set(runs[0])) > 1


def test_random_symmetries_are_randranges_draws(weights):
    """The batched draw gives what random.randrange(8) gives on the same seeded generator,
    in order, across consecutive batches of any size (an empty one included)."""
    import random

    net = make_net(weights)
    oracle = random.Random(5)  # make_net's seed
    for count in (1, 7, 32, 0, 300):
        assert net.random_symmetries(count) == [oracle.randrange(8) for _ in range(count)]


def test_bad_symmetry(weights):
    with pytest.raises(ValueError):
        make_net(weights).evaluate([game()], symmetry=8)


def test_cache_is_fifo_and_bounded():
    cache = NNCache(3)
    for k in range(5):
        cache.insert(k, f"v{k}")
    assert len(cache) == 3 and cache.lookup(0) is None and cache.lookup(1) is None
    cache.lookup(2)  # a look-up does not refresh
    cache.insert(2, "other")  # nor does inserting a present key
    assert cache.lookup(2) == "v2"
    cache.insert(9, "v9")
    assert cache.lookup(2) is None and cache.lookup(9) == "v9"
    assert cache.estimated_bytes() == 3 * 1468
    cache.resize(1)
    assert len(cache) == 1 and cache.lookup(9) == "v9"
    cache.set_size_from_playouts(100, 0)
    assert cache.size == 6000
    cache.set_size_from_playouts(0, 0)
    assert cache.size == 150000


def test_the_batch_calls_of_the_cache_are_its_single_calls():
    """insert_many / lookup_many against insert / lookup one pair at a time on a second cache:
    the same entries, evictions, answers and counters, repeated keys included."""
    import random

    rng = random.Random(4)
    batched, single = NNCache(40), NNCache(40)
    for _ in range(60):
        keys = [rng.randrange(120) for _ in range(rng.randrange(0, 12))]
        values = [f"v{k}-{rng.random()}" for k in keys]
        batched.insert_many(keys, values)
        for k, v in zip(keys, values):
            single.insert(k, v)
        probe = [rng.randrange(120) for _ in range(rng.randrange(0, 12))]
        assert batched.lookup_many(probe) == [single.lookup(k) for k in probe]
        assert list(batched._entries.items()) == list(single._entries.items())
        assert (batched.hits, batched.lookups) == (single.hits, single.lookups)
    assert 0 < single.hits < single.lookups
    empty = NNCache(0)
    empty.insert_many([1, 2], ["a", "b"])
    assert len(empty) == 0


# ---------------------------------------------------------------------- GTP: heatmap & co
import io  # noqa: E402
import re  # noqa: E402

from leelaz.gtp import network_commands  # noqa: E402
from leelaz.gtp.engine import GtpEngine  # noqa: E402
from leelaz.gtp.protocol import GtpError  # noqa: E402


@pytest.mark.parametrize("args, want", [((), [0]), (("3",), [3]), (("3x",), [3]),
                                        (("all",), list(range(8))), (("avg",), ["average"]),
                                        (("average",), ["average"]), (("07",), [7]),
                                        (("+2",), [2]), (("-0",), [0])])
def test_heatmap_arguments(args, want):
    assert network_commands.parse_symmetry(args) == want


@pytest.mark.parametrize("bad", ["x", "8", "-1", "12", "", "allx"])
def test_heatmap_bad_arguments(bad):
    with pytest.raises(GtpError):
        network_commands.parse_symmetry((bad,))


def session(weights, lines, state=None):
    out, err = io.StringIO(), io.StringIO()
    engine = GtpEngine(state=state, out=out, err=err)
    engine.network = Network(weights, NumpyBackend(weights, threads=1), seed=3)
    network_commands.register(engine)
    engine.feed(line + "\n" for line in lines)
    engine.end_input()
    engine.run()
    return out.getvalue(), err.getvalue(), engine


def test_heatmap_layout_and_errors_keep_serving(weights):
    out, err, engine = session(weights, ["heatmap", "heatmap x", "heatmap all", "heatmap 9",
                                         "1 heatmap avg"], state=game(["D4", "Q16"]))
    assert out == "= \n\n? symmetry must be a number 0..7, all, average or avg\n\n= \n\n" \
                  "? symmetry must be a number 0..7, all, average or avg\n\n=1 \n\n\n"
    blocks = re.findall(r"((?:(?:[ \d]{3}\d? ){19}\n){19})pass: (\d+)\nwinrate: (\d\.\d{6})\n",
                        err)
    assert len(blocks) == 10 and err.count("\n") == 10 * 21
    rows = blocks[0][0].splitlines()
    assert all(len(r) == 19 * 4 and r.endswith(" ") for r in rows)
    assert rows[15].split()[3] == "0"  # D4 (row 4 is the 16th line), a stone
    assert rows[3].split()[15] == "0"  # Q16
    ev = engine.network.evaluate([engine.state], symmetry=0, read_cache=False)[0]
    assert int(rows[0].split()[0]) == int(np.float32(ev.policy[18 * 19]) * np.float32(1000))
    assert blocks[0][2] == "%f" % ev.winrate


def test_netbench_and_memory_report(weights):
    out, err, engine = session(weights, ["netbench 6", "netbench 5 2", "netbench x",
                                         "lz-memory_report"])
    replies = out.split("\n\n")
    assert replies[0] == "= " and replies[1] == "= " and replies[2] == "? syntax error"
    assert re.search(r"^    6 evaluations in +\d+\.\d\d seconds -> \d+ n/s$", err, re.M)
    assert re.search(r"^    5 evaluations in", err, re.M)
    assert engine.network.evaluations == 11
    assert replies[3].startswith("= Estimated total memory consumption: 86 MiB.\n"
                                 "Network with overhead: 86 MiB / Search tree: 0 MiB / "
                                 "Network cache: 0")


def test_memory_report_arithmetic():
    mib = 1024 * 1024
    text = network_commands.memory_report_text(10 * mib, 100 * mib, 50 * mib)
    assert text == ("Estimated total memory consumption: 260 MiB.\n"
                    "Network with overhead: 95 MiB / Search tree: 110 MiB / Network cache: 55\n")


def test_cached_policy_cannot_be_changed_in_place(weights):
    net = make_net(weights)
    ev = net.evaluate([game()])[0]
    with pytest.raises(ValueError):
        ev.policy[0] = 1.0


# ---------------------------------------------------------------------- batched = one at a time
import random  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from leelaz.nn.features import input_planes  # noqa: E402
from leelaz.nn.network import softmax  # noqa: E402
from leelaz.nn.symmetry import transform_planes, untransform_policy  # noqa: E402


class RowwiseBackend(Backend):
    """Outputs that depend on each row alone (elementwise numpy, no BLAS), and not symmetric
    (a bias per point), so any mix-up of rows or symmetries shows."""

    name = "rowwise"
    BIAS = np.random.default_rng(8).normal(size=361)

    def forward(self, planes):
        p = planes.reshape(len(planes), 18, 361).astype(np.float64)
        logits = np.empty((len(planes), 362), np.float32)
        logits[:, :361] = 2 * p[:, 0] - p[:, 8] + 0.5 * p[:, 1] + self.BIAS * (1 + p[:, 16])
        logits[:, 361] = 0.25
        value = (0.2 + 0.5 * p[:, 0].mean(axis=1) + 0.1 * p[:, 9, :19].mean(axis=1))
        return logits, value.astype(np.float32)


def reference(states, symmetry, seed, version):
    """Leaf by leaf, as Network did before it batched: planes, backend, decode per state."""
    rng = random.Random(seed)
    backend = RowwiseBackend()
    out = []
    for state in states:
        syms = list(range(8)) if symmetry == "average" else \
            [rng.randrange(8) if symmetry is None else symmetry]
        policy, value = np.zeros(362), 0.0
        for s in syms:
            planes = transform_planes(input_planes(state), s).astype(np.float32)
            logits, values = backend.forward(planes.reshape(1, 18, 19, 19))
            policy += untransform_policy(softmax(logits)[0], s)
            value += float(values[0])
        policy /= len(syms)
        value /= len(syms)
        if version == 2 and state.to_move == WHITE:
            value = 1.0 - value
        out.append((policy.astype(np.float32), value))
    return out


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("symmetry", [None, 6, "average"])
def test_a_batch_decodes_as_one_state_at_a_time(symmetry, version):
    states = [game(MOVES[:n]) for n in range(len(MOVES) + 1)]
    states += [game(MOVES[:3], s=5), game(MOVES, s=2)]
    net = Network(SimpleNamespace(version=version), RowwiseBackend(), seed=9)
    got = net.evaluate(states, symmetry=symmetry, read_cache=False)
    for ev, (policy, value) in zip(got, reference(states, symmetry, 9, version)):
        assert ev.policy.dtype == np.float32 and not ev.policy.flags.writeable
        assert np.array_equal(ev.policy, policy)
        assert ev.winrate == value and type(ev.winrate) is float
    assert not np.shares_memory(got[0].policy, got[1].policy)
    assert net.evaluations == len(states) * (8 if symmetry == "average" else 1)


def test_mirrored_hit_policy_is_read_only(weights):
    net = make_net(weights)
    net.evaluate([game()])
    hit = net.evaluate([game(s=4)])[0]
    assert net.backend.calls == [1] and not hit.policy.flags.writeable


def test_first_of_several_keys_counts_like_single_lookups():
    cache = NNCache(10)
    cache.insert(5, "five")
    cache.insert(7, "seven")
    assert cache.lookup_first([1, 7, 5]) == (1, "seven")
    assert (cache.lookups, cache.hits) == (2, 1)
    assert cache.lookup_first([1, 2, 3]) is None
    assert (cache.lookups, cache.hits) == (5, 1)
