"""The way back into training: a network read from a file is the same network in train mode.

Training runs batch norm in train mode, on the batch's statistics. Leela Zero's
`training/tf/tfprocess.py` (`replace_weights`) therefore reads a file back with the file's mean
and variance and beta = bias / sqrt(var + eps); folding the bias into the mean instead (what
the engine does) is the same network in eval mode only. The oracles here: the shipped network's
own eval-mode figures on held-out 9-dan games (month 2011-12, never trained on) and the
shipped file's bytes.
"""

from __future__ import annotations

import gzip

import pytest

from conftest import requires  # noqa: E402

torch = requires("torch")

from leelaz.backends.weights import load_weights  # noqa: E402
from leelaz.training import dataset  # noqa: E402
from leelaz.training.export import export_weights  # noqa: E402
from leelaz.training.torch_model import LeelaNet  # noqa: E402
from leelaz.tools import train as train_script  # noqa: E402
from paths import REPO  # noqa: E402

SHIPPED = str(REPO / "weights" / "leelaz-6x128.txt.gz")
#: Held-out games: 40 of 2011-12 (the month the shipped network never saw; the fixture's
#: tests/fixtures/tygem-9d holds its first 60), so that the positions of one batch come from
#: many games, as in training.
HELD_OUT = (10, 50)
POSITIONS = 256
BATCH = 128


def held_out_lines(tygem_dir, first: int, end: int) -> list[str]:
    lines = []
    with gzip.open(tygem_dir / "tygem-9d-2011-12.sgf.gz", "rt") as f:
        for i, line in enumerate(f):
            if i >= end:
                break
            if i >= first:
                lines.append(line)
    return lines


@pytest.fixture(scope="module")
def held_out(tygem_dir):
    """(positions on the CPU, a fixed random sample of POSITIONS of them)."""
    games = [dataset.parse_sgf_line(line) for line in held_out_lines(tygem_dir, *HELD_OUT)]
    pack = dataset.GamePack.from_games([g for g in games if g])
    positions = dataset.PositionSet.from_pack(pack).to("cpu")
    sample = torch.randperm(len(positions), generator=torch.Generator().manual_seed(0))
    return positions, sample[:POSITIONS]


def figures(net: LeelaNet, held_out, train_mode: bool) -> dict:
    """Policy cross-entropy, top-1 and value MSE over the sample, in batches of BATCH."""
    positions, sample = held_out
    net.train(train_mode)
    ce = top1 = sq = sq_n = 0.0
    with torch.no_grad():
        for i in range(0, len(sample), BATCH):
            planes, target, z, mask = positions.batch(sample[i:i + BATCH])
            logits, value = net(planes)
            ce += -(target * torch.log_softmax(logits, 1)).sum().item()
            top1 += (logits.argmax(1) == target.argmax(1)).sum().item()
            sq += (((value - z) ** 2) * mask).sum().item()
            sq_n += mask.sum().item()
    net.eval()
    return {"ce": ce / len(sample), "top1": top1 / len(sample), "mse": sq / sq_n}


@pytest.fixture(scope="module")
def shipped_eval(held_out) -> dict:
    """The shipped file's eval-mode figures: the reference both tests compare with."""
    return file_figures(SHIPPED, held_out)


def file_figures(path: str, held_out) -> dict:
    """The figures of a weights file in eval mode (from_weights: the engine's folded form,
    which tests/test_trainer.py checks against the NumPy backend and the binary)."""
    return figures(LeelaNet.from_weights(load_weights(path)), held_out, train_mode=False)


def trainer_start(path: str, tmp_path) -> LeelaNet:
    """The network the trainer starts from with --init-weights (no data is read)."""
    from leelaz.training.train_config import TrainConfig
    from leelaz.training.trainer import _Run

    config = TrainConfig(data=["unused"], out_dir=str(tmp_path / "start"), init_weights=path,
                         blocks=6, filters=128, device="cpu", steps=1, quiet=True)
    return _Run(config).net


def test_the_shipped_network_in_train_mode_is_the_same_network(held_out, shipped_eval,
                                                               tmp_path):
    """Batch statistics of a realistic batch replace the running ones: with beta restored the
    policy cross-entropy stays within 2% of eval mode's (folding the bias into the mean
    instead gave 3.7 against 1.65: every learned shift was lost)."""
    evaluation = shipped_eval
    training = figures(trainer_start(SHIPPED, tmp_path), held_out, train_mode=True)
    assert 1.0 < evaluation["ce"] < 2.5 and evaluation["top1"] > 0.4  # a real 9-dan model
    assert abs(training["ce"] - evaluation["ce"]) < 0.02 * evaluation["ce"], (evaluation,
                                                                                training)
    assert abs(training["top1"] - evaluation["top1"]) < 0.03
    assert abs(training["mse"] - evaluation["mse"]) < 0.05


def test_export_load_export_gives_the_shipped_bytes(tmp_path):
    """The shipped file was written by our exporter: reading it for training and writing it
    again gives its text byte for byte, and so does a second round."""
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    export_weights(LeelaNet.from_file(SHIPPED), str(first))
    export_weights(LeelaNet.from_file(str(first)), str(second))
    shipped = gzip.open(SHIPPED).read()
    assert first.read_bytes() == shipped
    assert second.read_bytes() == shipped


def test_training_at_learning_rate_zero_exports_the_same_network(held_out, shipped_eval,
                                                                 tygem_dir, tmp_path):
    """`leelaz train --init-weights FILE --lr 0`: the weights cannot move, only batch norm's
    running statistics follow the batches; they must follow the network's own statistics, so
    the exported file plays as the one it started from (held-out top-1, policy cross-entropy
    and value MSE)."""
    data = tmp_path / "data.sgf"
    data.write_text("".join(held_out_lines(tygem_dir, 0, 10)))  # not the held-out games
    out = tmp_path / "run"
    assert train_script.main([
        "--data", str(data), "--val", str(data), "--val-games", "2", "--val-positions", "32",
        "--init-weights", SHIPPED, "--lr", "0", "--lr-final", "0", "--steps", "8",
        "--batch", "16", "--out", str(out), "--workers", "1", "--device", "cpu",
        "--no-progress"]) == 0
    before = shipped_eval
    after = file_figures(str(out / "leelaz-6x128.txt.gz"), held_out)
    assert abs(after["top1"] - before["top1"]) <= 0.02, (before, after)
    assert abs(after["mse"] - before["mse"]) <= 0.02, (before, after)
    assert abs(after["ce"] - before["ce"]) <= 0.02, (before, after)
