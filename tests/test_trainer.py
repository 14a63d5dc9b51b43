"""The trainer: replay, symmetries, end-to-end training on a tiny slice, and the exported file.

Oracles: the C++ binary (its dump_supervised planes for the replay; its heatmap for an exported
network), the naive float64 network of tests/oracle.py and the NumPy backend reading the file
through load_weights, and symmetries computed here with NumPy rotations.
"""

from __future__ import annotations

import gzip
import os
import subprocess

import numpy as np
import pytest
from conftest import requires

torch = requires("torch")

from leelaz.backends.numpy_backend import NumpyBackend  # noqa: E402
from leelaz.backends.weights import load_weights  # noqa: E402
from leelaz.nn.symmetry import SYMMETRY_TABLE  # noqa: E402
from leelaz.training import dataset  # noqa: E402
from leelaz.training.export import export_weights  # noqa: E402
from leelaz.training.torch_model import LeelaNet  # noqa: E402

import oracle  # noqa: E402
from leelaz.tools import train as train_script  # noqa: E402


def first_games(tygem_dir, n: int, month: str = "2011-12") -> list[str]:
    lines = []
    with gzip.open(tygem_dir / f"tygem-9d-{month}.sgf.gz", "rt") as f:
        for line in f:
            lines.append(line)
            if len(lines) == n:
                break
    return lines


def torch_eval(net: LeelaNet, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(policy probabilities [B,362], winrate [B] in [0,1]) from the trainer's forward pass."""
    net.eval()
    with torch.no_grad():
        logits, value = net(torch.from_numpy(planes.astype(np.float32)))
    return torch.softmax(logits.double(), 1).numpy(), (1.0 + value.double().numpy()) / 2.0


def randomize_batch_norm(net: LeelaNet, seed: int = 3) -> None:
    """Give every BN non-trivial statistics and shifts so that a file-format slip shows."""
    g = torch.Generator().manual_seed(seed)
    for m in net.modules():
        if hasattr(m, "beta"):
            n = m.beta.numel()
            m.beta.data = torch.randn(n, generator=g) * 0.3
            m.bn.running_mean = torch.randn(n, generator=g) * 0.2
            m.bn.running_var = torch.rand(n, generator=g) + 0.5


# ---------------------------------------------------------------------------------------------


def test_replay_matches_the_binarys_dump_supervised(lz_binary, tygem_dir, tmp_path,
                                                    random_weights):
    """Every (planes, move, outcome) record the C++ engine dumps for three games, and no other,
    comes out of our replay and batch assembly at identity symmetry."""
    sgf = tmp_path / "games.sgf"
    games = [g for g in first_games(tygem_dir, 12) if "+T]" not in g and "+F]" not in g][:3]
    sgf.write_text("".join(games))
    subprocess.run([lz_binary, "--cpu-only", "-q", "-w", random_weights(1, 8)],
                   input=f"dump_supervised {sgf} {tmp_path}/out\nquit\n", text=True,
                   capture_output=True, timeout=120, cwd=tmp_path)
    planes, policy, z = dataset.read_chunk(str(tmp_path / "out.0.gz"))
    theirs = sorted((planes[i].tobytes(), int(policy[i].argmax()), float(z[i]))
                    for i in range(len(z)))

    pack = dataset.GamePack.from_games(dataset.read_sgf_collection(str(sgf)))
    ps = dataset.PositionSet.from_pack(pack).to("cpu")
    p, t, zz, mask = ps.batch(torch.arange(len(ps)))
    ours = sorted((p[i].numpy().astype(np.uint8).reshape(18, 361).tobytes(),
                   int(t[i].argmax()), float(zz[i])) for i in range(len(ps)))
    assert len(theirs) > 300
    assert ours == theirs
    assert float(mask.min()) == 1.0

    # The trainer also reads chunk files (soft targets, positions held out from the end).
    out = tmp_path / "run"
    assert train_script.main(["--data", str(tmp_path / "out.0.gz"), "--blocks", "1",
                              "--filters", "8", "--batch", "16", "--steps", "3", "--out",
                              str(out), "--no-progress", "--device", "cpu"]) == 0
    assert load_weights(str(out / "leelaz-1x8.txt.gz")).blocks == 1


def test_replay_handles_captures_ko_and_illegal_moves():
    """A capture empties the point, an immediate ko recapture and a suicide end the game."""
    def slot(x, y):
        return y * 19 + x
    # Black surrounds a white stone at (1,0) on the edge and captures it.
    moves = [slot(0, 0), slot(1, 0), slot(1, 1), slot(5, 5), slot(2, 0)]
    rows, n = dataset.replay_boards(moves)
    assert n == 5
    last = np.frombuffer(rows, np.uint8).reshape(n, 361)[-1]
    assert last[slot(1, 0)] == 1  # before the capturing move White is still there
    after, _ = dataset.replay_boards(moves + [dataset.PASS_INDEX])
    board = np.frombuffer(after, np.uint8).reshape(-1, 361)[-1]
    assert board[slot(1, 0)] == 2 and board[slot(2, 0)] == 0
    # Ko: B (1,0),(0,1),(2,1)... build a standard ko shape and try to retake at once.
    ko = [slot(1, 1), slot(2, 1), slot(0, 2), slot(3, 2), slot(1, 3), slot(2, 3),
          slot(2, 2), slot(1, 2)]  # White (1,2) captures Black (2,2): ko
    _, n = dataset.replay_boards(ko)
    assert n == len(ko)
    _, n = dataset.replay_boards(ko + [slot(2, 2)])  # immediate retake is illegal
    assert n == len(ko)
    _, n = dataset.replay_boards([slot(3, 3), slot(3, 3)])  # occupied
    assert n == 1
    # Suicide: White plays into Black's eye at the corner.
    _, n = dataset.replay_boards([slot(1, 0), dataset.PASS_INDEX, slot(0, 1), slot(0, 0)])
    assert n == 3


def test_symmetries_rotate_planes_and_targets_together():
    """Symmetry s of a batch equals the NumPy transform of Network::get_symmetry (the oracle's
    table, tests/oracle.py) applied to the identity batch, and the policy target follows the stone that was played."""
    moves = [3 * 19 + 15, 15 * 19 + 3, 16 * 19 + 15, 2 * 19 + 2, 4 * 19 + 16]
    pack = dataset.GamePack(np.array(moves, np.uint16), np.array([5], np.int32),
                            np.array([1], np.int8), np.array([True]))
    ps = dataset.PositionSet.from_pack(pack).to("cpu")
    idx = torch.tensor([4])
    base, base_t, _, _ = ps.batch(idx)
    base = base[0].numpy().reshape(18, 361)
    table = oracle.symmetry_table()
    for s in range(8):
        planes, target, _, _ = ps.batch(idx, torch.tensor([s]))
        want = base[:, table[s]].reshape(18, 19, 19)
        assert np.array_equal(planes[0].numpy(), want), s
        out_slot = int(target[0].argmax())
        # The output slot's board point under s is the move actually played.
        assert SYMMETRY_TABLE[s][out_slot] == moves[4]


def test_export_matches_the_naive_network_and_the_numpy_backend(tmp_path):
    """The file holds BN beta in the bias line (beta*sqrt(var+eps)), variances, version 1:
    the engine's reading of it gives the trainer's policy and value."""
    torch.manual_seed(0)
    net = LeelaNet(2, 16)
    randomize_batch_norm(net)
    path = str(tmp_path / "net.txt.gz")
    export_weights(net, path)
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    assert lines[0] == "1" and len(lines) == 1 + 4 + 8 * 2 + 14
    assert len(lines[2].split()) == 16
    rng = np.random.default_rng(0)
    planes = np.zeros((3, 18, 19, 19), np.float32)
    planes[:, :16] = rng.random((3, 16, 19, 19)) < 0.2
    planes[:, 16] = 1
    p_torch, v_torch = torch_eval(net, planes)
    weights = load_weights(path)
    logits, v_naive = oracle.forward(weights, planes)
    assert np.abs(oracle.softmax(logits) - p_torch).max() < 1e-4
    assert np.abs(v_naive - v_torch).max() < 1e-4
    logits, v_np = NumpyBackend(weights, threads=1).forward(planes)
    assert np.abs(oracle.softmax(logits) - p_torch).max() < 1e-3
    assert np.abs(v_np - v_torch).max() < 1e-3


def test_train_end_to_end_resume_and_load_in_engine(tygem_dir, tmp_path):
    """Train a 1x8 net for a few steps from an SGF slice, resume it, and check that the
    exported weights evaluate like the trainer's own forward pass in our engine."""
    sgf = tmp_path / "slice.sgf"
    sgf.write_text("".join(first_games(tygem_dir, 4)))
    out = tmp_path / "run"
    common = ["--data", str(sgf), "--blocks", "1", "--filters", "8", "--batch", "32",
              "--out", str(out), "--workers", "1", "--val-positions", "200", "--no-progress",
              "--val-fraction", "0.25", "--device", "cpu"]
    assert train_script.main(common + ["--steps", "6"]) == 0
    assert train_script.main(common + ["--steps", "4", "--resume", str(out / "checkpoint.pt")]) == 0
    ck = torch.load(out / "checkpoint.pt", weights_only=True)
    assert ck["counters"]["step"] == 10 and ck["counters"]["samples"] == 320
    metrics = [line for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 2 and '"val_top1"' in metrics[-1]

    net = LeelaNet(1, 8)
    net.load_state_dict(ck["model"])
    pack = dataset.GamePack.from_games(dataset.read_sgf_collection(str(sgf)))
    ps = dataset.PositionSet.from_pack(pack).to("cpu")
    planes = ps.batch(torch.arange(0, len(ps), max(1, len(ps) // 16)))[0].numpy()
    p_torch, v_torch = torch_eval(net, planes)
    logits, v_np = NumpyBackend(load_weights(str(out / "leelaz-1x8.txt.gz"))).forward(planes)
    assert np.abs(oracle.softmax(logits) - p_torch).max() < 1e-3
    assert np.abs(v_np - v_torch).max() < 1e-3


def heatmap(lz_binary: str, weights: str, moves: list[str]) -> tuple[np.ndarray, int, float]:
    """The binary's heatmap after `moves`: (int(policy*1000) [361] by index, pass, winrate)."""
    cmds = "".join(f"play {c} {m}\n" for c, m in zip("bw" * 200, moves)) + "heatmap\nquit\n"
    r = subprocess.run([lz_binary, "--cpu-only", "-w", weights, "--noponder", "-t", "1"],
                       input=cmds, text=True, capture_output=True, timeout=120)
    lines = r.stderr.splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("pass:")) - 19
    grid = np.zeros(361, int)
    for row, line in enumerate(lines[start:start + 19]):
        y = 18 - row
        grid[y * 19:(y + 1) * 19] = [int(v) for v in line.split()]
    passes = int(lines[start + 19].split()[1])
    winrate = float(lines[start + 20].split()[1])
    return grid, passes, winrate


def test_exported_file_loads_in_the_binary_and_its_heatmap_agrees(lz_binary, tmp_path):
    torch.manual_seed(1)
    net = LeelaNet(2, 16)
    randomize_batch_norm(net, seed=5)
    with torch.no_grad():  # a sharper policy than the initial one, so rounding is exercised
        net.policy_fc.weight.mul_(4.0)
    path = str(tmp_path / "net.txt.gz")
    export_weights(net, path)
    gtp = ["D4", "Q16", "D16", "Q4", "C3", "R17"]
    cols = "ABCDEFGHJKLMNOPQRST"
    slots = [(int(m[1:]) - 1) * 19 + cols.index(m[0]) for m in gtp]
    rows, n = dataset.replay_boards(slots + [dataset.PASS_INDEX])
    pack = dataset.GamePack(np.array(slots + [361], np.uint16), np.array([7], np.int32),
                            np.array([0], np.int8), np.array([False]))
    ps = dataset.PositionSet.from_pack(pack).to("cpu")
    planes = ps.batch(torch.tensor([len(slots)]))[0].numpy()  # position after the 6 moves
    p_torch, v_torch = torch_eval(net, planes)
    grid, passes, winrate = heatmap(lz_binary, path, gtp)
    board = np.frombuffer(rows, np.uint8).reshape(-1, 361)[len(slots)]
    want = np.where(board == 2, np.floor(p_torch[0, :361] * 1000), 0)
    assert np.abs(grid - want).max() <= 1
    assert abs(passes - int(p_torch[0, 361] * 1000)) <= 1
    assert abs(winrate - v_torch[0]) < 1e-3
    assert grid.sum() > 500  # a real distribution was compared


SHIPPED = os.path.join(os.path.dirname(__file__), "..", "weights", "leelaz-6x128.txt.gz")


def test_shipped_network_agrees_with_the_binary_and_predicts_held_out_moves(lz_binary,
                                                                            tygem_dir):
    """The default network: the C++ engine loads it and its heatmap matches our NumPy
    backend's; on held-out games (month 2011-12, never trained on) it predicts 9-dan moves."""
    weights = load_weights(SHIPPED)
    assert (weights.blocks, weights.filters, weights.version) == (6, 128, 1)
    backend = NumpyBackend(weights)
    gtp = ["Q16", "D4", "Q3", "C16", "E16"]
    cols = "ABCDEFGHJKLMNOPQRST"
    slots = [(int(m[1:]) - 1) * 19 + cols.index(m[0]) for m in gtp]
    pack = dataset.GamePack(np.array(slots + [0], np.uint16), np.array([len(slots) + 1], np.int32),
                            np.array([0], np.int8), np.array([False]))
    ps = dataset.PositionSet.from_pack(pack).to("cpu")
    planes = ps.batch(torch.tensor([len(slots)]))[0].numpy()
    logits, value = backend.forward(planes)
    policy = oracle.softmax(logits.astype(np.float64))[0]
    grid, passes, winrate = heatmap(lz_binary, SHIPPED, gtp)
    board = ps.boards[len(slots)].numpy()
    want = np.where(board == 2, np.floor(policy[:361] * 1000), 0)
    assert np.abs(grid - want).max() <= 1
    assert abs(winrate - float(value[0])) < 1e-3
    assert grid.max() > 100  # a trained network is confident about some move

    # Move prediction on held-out positions (three games no other test reads).
    games = dataset.read_sgf_collection(str(tygem_dir / "tygem-9d-2011-12.sgf.gz"))[50:53]
    held = dataset.PositionSet.from_pack(dataset.GamePack.from_games(games)).to("cpu")
    planes, target, _, _ = held.batch(torch.arange(len(held)))
    logits, _ = backend.forward(planes.numpy())
    top1 = float((logits.argmax(1) == target.numpy().argmax(1)).mean())
    assert len(held) > 300 and top1 > 0.40


def test_supervised_iterator_gives_the_same_batches_as_the_fast_replay(tygem_dir, tmp_path):
    """Positions through the engine's GameState (training.supervised) and through our own
    replay are the same planes, targets and outcomes; time/forfeit games train policy only."""
    from leelaz.training.supervised import iter_games
    sgf = tmp_path / "slice.sgf"
    sgf.write_text("".join(first_games(tygem_dir, 6, "2010-01")))  # the first is B+F
    slow = dataset.PositionSet.from_game_arrays(iter_games([str(sgf)], unreliable="zero"))
    pack = dataset.GamePack.from_games(dataset.read_sgf_collection(str(sgf)))
    fast = dataset.PositionSet.from_pack(pack)
    assert len(slow) == len(fast) > 500
    idx = torch.arange(len(fast))
    sym = torch.arange(len(fast)) % 8
    a, b = slow.to("cpu").batch(idx, sym), fast.to("cpu").batch(idx, sym)
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    assert 0 < float(b[3].mean()) < 1  # the forfeit game's positions have no value target
    out = tmp_path / "run"
    assert train_script.main(["--data", str(sgf), "--sgf-loader", "supervised", "--blocks", "1",
                              "--filters", "8", "--batch", "16", "--steps", "3", "--out",
                              str(out), "--workers", "1", "--no-progress", "--device",
                              "cpu"]) == 0
    assert (out / "leelaz-1x8.txt.gz").exists()


def test_from_weights_then_export_gives_the_same_network(random_weights, tmp_path):
    """Load a Leela Zero file into the trainer's model and export it: the reloaded network
    (and the model's own forward pass) equals the file's, through the independent oracle."""
    source = random_weights(2, 16, seed=7)
    weights = load_weights(source)
    net = LeelaNet.from_weights(weights)
    path = str(tmp_path / "again.txt")
    export_weights(net, path)
    again = load_weights(path)
    pairs = [(weights.input_conv, again.input_conv), (weights.policy_conv, again.policy_conv),
             (weights.value_conv, again.value_conv)]
    pairs += [pair for a, b in zip(weights.tower, again.tower) for pair in zip(a, b)]
    for a, b in pairs:
        for name in ("weights", "mean", "scale"):
            np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=2e-5,
                                       atol=1e-6)
    for name in ("policy_fc_w", "policy_fc_b", "value_fc1_w", "value_fc1_b", "value_fc2_w",
                 "value_fc2_b"):
        np.testing.assert_allclose(getattr(again, name), getattr(weights, name), rtol=2e-5,
                                   atol=1e-6)
    planes = (np.random.default_rng(3).random((4, 18, 19, 19)) < 0.3).astype(np.float32)
    planes[:, 16] = 1
    planes[:, 17] = 0
    logits, v_naive = oracle.forward(weights, planes)
    p_torch, v_torch = torch_eval(net, planes)
    assert np.abs(oracle.softmax(logits) - p_torch).max() < 1e-4
    assert np.abs(v_naive - v_torch).max() < 1e-4


def test_version_2_networks_are_refused_for_training(random_weights):
    with pytest.raises(ValueError, match="version 2"):
        LeelaNet.from_weights(load_weights(random_weights(1, 8, version=2)))


def test_train_function_on_chunks_continues_and_starts_from_weights(tygem_dir, tmp_path,
                                                                      random_weights):
    """The Zero loop's entry point: chunks from dump_supervised, a network to start from,
    a killed run continued up to its total, a finished run returning at once."""
    from leelaz.training.supervised import dump_supervised
    from leelaz.training.trainer import train

    sgf = tmp_path / "slice.sgf"
    sgf.write_text("".join(first_games(tygem_dir, 3)))
    dump_supervised(str(sgf), str(tmp_path / "chunk"), log=lambda _: None, seed=1)
    chunks = sorted(str(p) for p in tmp_path.glob("chunk.*.gz"))
    assert chunks
    start = random_weights(1, 8, seed=2)
    out = tmp_path / "run"
    settings = dict(blocks=1, filters=8, batch=16, device="cpu", val_positions=50,
                    val_fraction=0.1, init_weights=start)
    first = train(chunks, str(out), steps=3, **settings)
    assert first.steps_done == 3 and first.samples == 48
    assert load_weights(first.weights_path).blocks == 1
    more = train(chunks, str(out), steps=5, **settings)  # continues: 2 more steps
    assert more.steps_done == 5 and more.samples == 80
    done = train(chunks, str(out), steps=5, **settings)  # finished: nothing to do
    assert done.steps_done == 5 and done.metrics is None
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2

    # A fresh run from the start network with lr 0: the weights it exports are the start
    # network's (only batch norm's running statistics move during a training step).
    still = train(chunks, str(tmp_path / "still"), steps=1, lr=0.0, lr_final=0.0,
                  **settings)
    a, b = load_weights(start), load_weights(still.weights_path)
    for x, y in [(a.input_conv, b.input_conv), *zip(a.tower[0], b.tower[0])]:
        np.testing.assert_allclose(y.weights, x.weights, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(b.policy_fc_w, a.policy_fc_w, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(b.value_fc2_b, a.value_fc2_b, rtol=2e-5, atol=1e-7)


def test_train_verb_says_what_is_wrong(tmp_path):
    assert train_script.main(["--data", str(tmp_path / "none.gz"), "--steps", "1", "--out",
                              str(tmp_path / "o"), "--no-progress"]) == 1
    assert train_script.main(["--data", "x.gz", "--out", str(tmp_path / "o")]) == 2
