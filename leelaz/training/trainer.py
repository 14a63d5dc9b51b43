"""Training a Leela Zero network: the loop behind `leelaz train` and the Zero loop's `train()`.

Owns: `train(...)` (the programmatic entry point) and `run(config)` with the loop; the
settings are training.train_config's. Imports: torch, numpy, training.dataset,
training.continuous, training.export, training.torch_model (LeelaNet.from_file starts from an
existing network), training.train_config, leelaz.progress.

Data: Leela Zero training chunks (`*.gz` but not `*.sgf.gz`: dump_supervised / dump_training
output), game packs (`*.npz.xz`, scripts/prepare_gpu_data.py) and SGF collections (`*.sgf`,
`*.sgf.gz`; with sgf_loader "supervised" through training.supervised's GameState replay
instead: setup stones and handicap included, time/forfeit games kept for the policy only).
Without val, val_fraction of the games (of the positions, for chunks) is held out.

Loss: policy cross-entropy + value_weight * value MSE (tanh scale, targets +-1); weight decay on
conv/FC weights only (AdamW by default, decoupled; "sgd": Nesterov SGD with L2). Each batch gets
a random symmetry per sample; the batch of a step depends on the seed and the step alone
(continuous.BatchOrder). Schedule: linear warm-up then cosine decay to lr_final over
`steps` or `seconds` (whichever ends first), so a run cut by time still ends annealed; or,
with lr_schedule, the run's learning rate by its total step (the Zero loop's one continuing
training). With swa_every the exported file is the average of the snapshots (Leela Zero's SWA,
batch-norm statistics recomputed). On CUDA: bf16 autocast and channels_last.

Every checkpoint_seconds (and checkpoint_steps), and at the end, the weights file and then the
model (checkpoint.pt: optimizer state, counters, snapshot average) are written atomically to
out_dir (export_name may be an absolute path elsewhere). Two ways to go on from a checkpoint:
- `resume_from=PATH` (`leelaz train --resume`): a warm restart; `steps` more steps, the
  schedule starts again.
- `continue_run=True` (`train(..., resume=True)`, the default there): out_dir's own
  checkpoint, if any, and `steps` is the run's total, so a killed run is finished rather than
  repeated, and a finished one returns at once. The schedule, the optimizer and the batches
  go on where they were: resumed, the run draws the batches the uninterrupted run drew.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, fields

import numpy as np
import torch

from leelaz.progress import progress
from leelaz.training.continuous import (BatchOrder, SnapshotAverage, parse_lr_schedule,
                                        recompute_batch_norm, scheduled_lr)
from leelaz.training.dataset import ChunkPositions, GamePack, PositionSet, read_sgf_collection
from leelaz.training.export import export_weights
from leelaz.training.torch_model import LeelaNet, loss_terms
from leelaz.training.train_config import TrainConfig, TrainingError, TrainResult

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.jsonl"


def train(data: list[str], out_dir: str, *, blocks: int, filters: int,
          init_weights: str | None = None, steps: int, batch: int = 256, lr: float = 0.002,
          seed: int = 0, device: str = "auto", resume: bool = True, progress: bool = False,
          **more) -> TrainResult:
    """Train on `data` (chunk files, game packs or SGF collections) for `steps` steps in all.

    With `resume`, out_dir's checkpoint (if any) is continued up to `steps`; `init_weights`
    starts a new run from an existing network. `more` sets any other TrainConfig field
    (val, val_fraction, seconds, workers, quiet, ...). Raises TrainingError on bad input.
    """
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(more) - known)
    if unknown:
        raise TypeError(f"train() got unknown settings: {', '.join(unknown)}")
    more.setdefault("quiet", True)
    config = TrainConfig(data=list(data), out_dir=out_dir, blocks=blocks, filters=filters,
                         init_weights=init_weights, steps=steps, batch=batch, lr=lr, seed=seed,
                         device=device, continue_run=resume, progress=progress, **more)
    return run(config)


def run(config: TrainConfig) -> TrainResult:
    """Train as `config` says; returns where the network went and how far it got."""
    if config.steps <= 0 and config.seconds <= 0:
        raise TrainingError("give a number of steps or seconds")
    if not config.data:
        raise TrainingError("no training data given")
    if config.lr_schedule is not None:
        try:
            parse_lr_schedule(config.lr_schedule)
        except ValueError as exc:
            raise TrainingError(f"learning-rate schedule {config.lr_schedule!r}: {exc}") \
                from None
    return _Run(config).go()


def _log(config: TrainConfig, message: str) -> None:
    if not config.quiet:
        print(message, file=sys.stderr, flush=True)


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


# ---- data ---------------------------------------------------------------------------------

def is_chunk(path: str) -> bool:
    return path.endswith(".gz") and not path.endswith(".sgf.gz")


def load_pack(paths: list[str]) -> GamePack:
    games, packs = [], []
    for p in paths:
        if p.endswith(".npz.xz"):
            packs.append(p)
        else:
            games += read_sgf_collection(p)
    parts = [GamePack.load(p) for p in packs]
    if games:
        parts.append(GamePack.from_games(games))
    if not parts:
        raise TrainingError("no game data given")
    return GamePack(np.concatenate([p.moves for p in parts]),
                    np.concatenate([p.lengths for p in parts]),
                    np.concatenate([p.winner for p in parts]),
                    np.concatenate([p.use_value for p in parts]))


def _split_chunk_positions(train: ChunkPositions, fraction: float):
    """Hold out the last positions (one chunk file cannot be split by whole files)."""
    n = len(train)
    cut = max(1, int(n * fraction))
    val = ChunkPositions.__new__(ChunkPositions)
    val.__dict__.update(train.__dict__)
    for name in ("planes", "policy", "z"):
        full = getattr(train, name)
        setattr(val, name, full[n - cut:])
        setattr(train, name, full[:n - cut])
    return train, val


def load_sets(c: TrainConfig, device: torch.device):
    """(train positions, validation positions) on `device`."""
    missing = [p for p in c.data + c.val + c.val_external if not os.path.isfile(p)]
    if missing:
        raise TrainingError(f"{missing[0]}: no such file")
    t0 = time.time()
    chunks = [p for p in c.data if is_chunk(p)]
    if chunks:
        if len(chunks) != len(c.data):
            raise TrainingError("mix either chunk files or games in the data, not both")
        train = ChunkPositions(chunks, device)
        if c.val:
            val = ChunkPositions(c.val, device)
        else:
            train, val = _split_chunk_positions(train, c.val_fraction)
        if len(train) == 0:
            raise TrainingError("the chunk files hold no positions to train on")
        _log(c, f"chunks: {len(train)} train / {len(val)} val positions")
        return train, val
    if c.sgf_loader == "supervised":
        return load_supervised(c, device)
    pack = load_pack(c.data)
    if c.val:
        val_pack = load_pack(c.val)
    else:
        order = np.random.default_rng(c.seed).permutation(pack.games)
        cut = max(1, int(pack.games * c.val_fraction))
        val_pack, pack = pack.select(np.sort(order[:cut])), pack.select(np.sort(order[cut:]))
    if c.val_games and val_pack.games > c.val_games:
        val_pack = val_pack.select(np.arange(c.val_games))
    train = PositionSet.from_pack(pack, workers=c.workers)
    val = PositionSet.from_pack(val_pack, workers=c.workers)
    _log(c, f"replayed {pack.games} train games -> {len(train)} positions "
         f"({train.dropped_games} cut at an illegal move), {val_pack.games} val games -> "
         f"{len(val)} positions in {time.time() - t0:.1f} s")
    return train.to(device), val.to(device)


def load_supervised(c: TrainConfig, device: torch.device):
    """SGF collections through the supervised iterator (GameState + input planes rules)."""
    from leelaz.training.supervised import iter_games, iter_games_parallel

    def games(paths):
        if c.workers > 1:
            return list(iter_games_parallel(paths, c.workers, unreliable="zero"))
        return list(iter_games(paths, unreliable="zero"))

    t0 = time.time()
    train_games = games(c.data)
    if c.val:
        val_games = games(c.val)
    else:
        order = np.random.default_rng(c.seed).permutation(len(train_games))
        cut = max(1, int(len(train_games) * c.val_fraction))
        val_games = [train_games[i] for i in sorted(order[:cut])]
        train_games = [train_games[i] for i in sorted(order[cut:])]
    if c.val_games:
        val_games = val_games[:c.val_games]
    train = PositionSet.from_game_arrays(train_games)
    val = PositionSet.from_game_arrays(val_games)
    _log(c, f"supervised iterator: {len(train_games)} train games -> {len(train)} positions, "
         f"{len(val_games)} val games -> {len(val)} positions in {time.time() - t0:.1f} s")
    return train.to(device), val.to(device)


def load_external(c: TrainConfig, device: torch.device):
    """The fixed external validation set (games: SGF collections or packs, first val_games
    of them), or None."""
    if not c.val_external:
        return None
    pack = load_pack(c.val_external)
    if c.val_games and pack.games > c.val_games:
        pack = pack.select(np.arange(c.val_games))
    return PositionSet.from_pack(pack, workers=c.workers).to(device)


# ---- schedule, evaluation, checkpoints ------------------------------------------------------

def learning_rate(c: TrainConfig, fraction_done: float) -> float:
    """Linear warm-up over the first `warmup` fraction, then cosine down to lr_final (never
    above lr: a learning rate of 0 learns nothing)."""
    if fraction_done < c.warmup:
        return c.lr * max(fraction_done / c.warmup, 0.02)
    x = min(1.0, (fraction_done - c.warmup) / max(1e-9, 1.0 - c.warmup))
    final = min(c.lr_final, c.lr)
    return final + 0.5 * (c.lr - final) * (1.0 + math.cos(math.pi * x))


def autocast(device: torch.device, enabled: bool):
    if device.type == "cuda" and enabled:
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


@torch.no_grad()
def evaluate(net, val, sample: torch.Tensor, batch: int, device, amp: bool) -> dict:
    """Policy top-1, policy cross-entropy and value MSE (tanh scale) at identity symmetry."""
    net.eval()
    correct = ce = sq = sq_n = 0.0
    for i in range(0, len(sample), batch):
        planes, target, z, mask = val.batch(sample[i:i + batch])
        if device.type == "cuda":
            planes = planes.contiguous(memory_format=torch.channels_last)
        with autocast(device, amp):
            logits, value = net(planes)
        logits = logits.float()
        correct += (logits.argmax(1) == target.argmax(1)).sum().item()
        ce += -(target * torch.log_softmax(logits, 1)).sum().item()
        sq += (((value.float() - z) ** 2) * mask).sum().item()
        sq_n += mask.sum().item()
    net.train()
    n = max(len(sample), 1)
    return {"val_top1": correct / n, "val_policy_ce": ce / n,
            "val_value_mse": sq / max(sq_n, 1.0), "val_positions": len(sample)}


def save_checkpoint(path: str, net, optimizer, counters: dict, config: TrainConfig,
                    swa: SnapshotAverage | None = None) -> None:
    """Model, optimizer, counters (and the snapshot average), written atomically."""
    tmp = f"{path}.tmp{os.getpid()}"
    torch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict(),
                "counters": counters, "args": asdict(config),
                "swa": swa.state_dict() if swa is not None else None,
                "blocks": net.blocks, "filters": net.filters}, tmp)
    os.replace(tmp, path)


def plain_copy(net: LeelaNet) -> LeelaNet:
    """The network as export expects it (float32 on the CPU); a copy when it lives elsewhere."""
    first = next(net.parameters())
    if first.device.type == "cpu" and first.dtype == torch.float32:
        return net
    copy = LeelaNet(net.blocks, net.filters)
    copy.load_state_dict({k: v.detach().float().cpu() for k, v in net.state_dict().items()})
    return copy


# ---- the run ------------------------------------------------------------------------------

class _Run:
    """One training run: the network, its optimizer, the data and the counters."""

    def __init__(self, config: TrainConfig):
        c = self.config = config
        self.device = pick_device(c.device)
        self.amp = self.device.type == "cuda" and c.amp
        os.makedirs(c.out_dir, exist_ok=True)
        self.export_path = os.path.join(c.out_dir, c.export_name
                                        or f"leelaz-{c.blocks}x{c.filters}.txt.gz")
        self.ckpt_path = os.path.join(c.out_dir, CHECKPOINT)
        self.metrics_path = os.path.join(c.out_dir, METRICS)
        self.counters = {"step": 0, "samples": 0, "train_seconds": 0.0, "runs": 0}
        self.last_metrics: dict | None = None
        torch.manual_seed(c.seed)
        self.net = LeelaNet(c.blocks, c.filters)
        self.optimizer_state = None
        self.swa_state = None
        self.schedule = parse_lr_schedule(c.lr_schedule) if c.lr_schedule is not None else None
        self._start_from()
        self.swa = SnapshotAverage(self.net, c.swa_max) if c.swa_every else None
        if self.swa is not None and self.swa_state is not None:
            self.swa.load_state_dict(self.swa_state)

    def _start_from(self) -> None:
        """Checkpoint (continued or warm restart), an existing network, or random."""
        c = self.config
        checkpoint = c.resume_from
        if c.continue_run and os.path.isfile(self.ckpt_path):
            checkpoint = self.ckpt_path
        if checkpoint:
            ck = torch.load(checkpoint, map_location="cpu")
            if (ck["blocks"], ck["filters"]) != (c.blocks, c.filters):
                raise TrainingError(f"{checkpoint} is {ck['blocks']}x{ck['filters']}, "
                                    f"not {c.blocks}x{c.filters}")
            self.net.load_state_dict(ck["model"])
            self.counters.update(ck["counters"])
            if checkpoint == self.ckpt_path and c.continue_run:
                self.optimizer_state = ck.get("optimizer")
                self.swa_state = ck.get("swa")
            _log(c, f"resumed {checkpoint}: step {self.counters['step']}, "
                 f"{self.counters['samples']} samples")
        elif c.init_weights:
            try:  # beta restored from the file (train mode must see the same network)
                net = LeelaNet.from_file(c.init_weights)  # WeightsError names the file
            except ValueError as exc:
                raise TrainingError(str(exc)) from None
            if (net.blocks, net.filters) != (c.blocks, c.filters):
                raise TrainingError(f"{c.init_weights} is {net.blocks}x{net.filters},"
                                    f" not {c.blocks}x{c.filters}")
            self.net = net
            _log(c, f"starting from {c.init_weights}")

    def result(self) -> TrainResult:
        return TrainResult(self.export_path, self.ckpt_path, self.counters["step"],
                           self.counters["samples"], self.last_metrics)

    def steps_left(self) -> int | None:
        """Steps this run still has to make (None: bounded by time only)."""
        c = self.config
        if not c.steps:
            return None
        return c.steps - self.counters["step"] if c.continue_run else c.steps

    def go(self) -> TrainResult:
        c = self.config
        left = self.steps_left()
        if left is not None and left <= 0:  # a finished run: make sure its file is there
            if not os.path.isfile(self.export_path):
                train_set = load_sets(c, self.device)[0] if self.swa is not None else None
                self._export(train_set)
            return self.result()
        self.counters["runs"] += 1
        train_set, val_set = load_sets(c, self.device)  # before CUDA: the replay forks
        self.external = load_external(c, self.device)
        self._prepare(val_set)
        self._loop(train_set, left)
        return self.result()

    def _prepare(self, val_set) -> None:
        c, device = self.config, self.device
        if device.type == "cuda":
            torch.backends.cudnn.benchmark = True
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        self.net.to(device)
        if device.type == "cuda":
            self.net = self.net.to(memory_format=torch.channels_last)
        decay, no_decay = self.net.weight_decay_parameters()
        groups = [{"params": decay, "weight_decay": c.l2},
                  {"params": no_decay, "weight_decay": 0.0}]
        if c.optimizer == "sgd":
            self.opt = torch.optim.SGD(groups, lr=c.lr, momentum=c.momentum, nesterov=True)
        else:  # AdamW's decay is decoupled and multiplied by lr: l2 is its coefficient
            self.opt = torch.optim.AdamW(groups, lr=c.lr, betas=(c.momentum, 0.999))
        if self.optimizer_state is not None:
            self.opt.load_state_dict(self.optimizer_state)
        self.val = val_set
        vgen = torch.Generator(device="cpu").manual_seed(12345)  # the same sample every run
        n_val = min(c.val_positions, len(val_set))
        self.val_sample = torch.randperm(len(val_set), generator=vgen)[:n_val].to(device)
        if self.external is not None:
            n_ext = min(c.val_positions, len(self.external))
            self.external_sample = torch.randperm(len(self.external),
                                                  generator=vgen)[:n_ext].to(device)

    def _fraction_done(self, step_in_run: int, seconds: float) -> float:
        c = self.config
        parts = []
        if c.steps:
            done = self.counters["step"] if c.continue_run else step_in_run
            parts.append(done / c.steps)
        if c.seconds:
            parts.append(seconds / c.seconds)
        return max(parts)

    def _report(self, extra: dict) -> None:
        c = self.config
        m = evaluate(self.net, self.val, self.val_sample, 4 * c.batch, self.device, self.amp)
        if self.external is not None:  # a fixed set (e.g. strong human games): ext_*
            ext = evaluate(self.net, self.external, self.external_sample, 4 * c.batch,
                           self.device, self.amp)
            m.update({"ext_" + k[len("val_"):]: v for k, v in ext.items()})
        m.update(extra)
        m.update({"step": self.counters["step"], "samples": self.counters["samples"]})
        with open(self.metrics_path, "a") as f:
            f.write(json.dumps(m) + "\n")
        self.last_metrics = m
        _log(c, " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in m.items()))

    def _checkpoint(self, train_set) -> None:
        """The weights file first, then the checkpoint: a checkpoint that says a run is
        finished is never newer than its file."""
        self._export(train_set)
        save_checkpoint(self.ckpt_path, self.net, self.opt, self.counters, self.config,
                        self.swa)

    def _export(self, train_set) -> None:
        """The network, or with swa_every the average of its snapshots, with batch-norm
        statistics recomputed on `bn_batches` training batches (Leela Zero's swa_recalc_bn);
        a run with no snapshot yet exports the network itself."""
        if self.swa is None or self.swa.count == 0:
            export_weights(plain_copy(self.net), self.export_path)
            return
        c = self.config
        avg = self.swa.network(plain_copy(self.net)).to(self.device)

        def batches():
            order = BatchOrder(c.seed + 1, len(train_set), self.device)
            for i in range(c.bn_batches):
                yield train_set.batch(*order.at(self.counters["step"] + i, c.batch))[0]
        with autocast(self.device, False):
            recompute_batch_norm(avg, batches())
        export_weights(plain_copy(avg), self.export_path)

    def _step(self, planes, target, z, mask) -> torch.Tensor:
        """One optimizer step; returns (policy loss, value loss, top-1) without syncing."""
        c = self.config
        if self.device.type == "cuda":
            planes = planes.contiguous(memory_format=torch.channels_last)
        with autocast(self.device, self.amp):
            logits, value = self.net(planes)
        policy_loss, value_loss = loss_terms(logits, value, target, z, mask)
        loss = policy_loss + c.value_weight * value_loss
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            acc = (logits.argmax(1) == target.argmax(1)).float().mean()
            return torch.stack([policy_loss.detach(), value_loss.detach(), acc])

    def _lr(self, fraction_done: float) -> float:
        """The run's schedule at its current step, or warm-up and cosine over this call."""
        c = self.config
        if self.schedule is not None:
            return scheduled_lr(self.schedule, self.counters["step"], c.warmup_steps)
        return learning_rate(c, fraction_done)

    def _loop(self, train_set, left: int | None) -> None:
        c, device = self.config, self.device
        order = BatchOrder(c.seed, len(train_set), device)
        step_in_run = 0
        t_start = time.time()
        last_eval = last_ckpt = t_start
        sums, sums_n = torch.zeros(3, device=device), 0
        lr = c.lr
        self.net.train()
        with progress(left, "training", unit="step", enabled=c.progress) as bar:
            while (done := self._fraction_done(step_in_run, time.time() - t_start)) < 1.0:
                lr = self._lr(done)
                for g in self.opt.param_groups:
                    g["lr"] = lr
                # The batch of the run's step: the same after any resume (continuous.py).
                idx, sym = order.at(self.counters["step"], c.batch)
                sums += self._step(*train_set.batch(idx, sym))
                sums_n += 1
                step_in_run += 1
                self.counters["step"] += 1
                self.counters["samples"] += len(idx)
                step = self.counters["step"]
                if self.swa is not None and step % c.swa_every == 0:
                    self.swa.add(self.net)
                bar.update(1)
                now = time.time()
                if now - last_eval >= c.eval_seconds or (c.eval_steps
                                                         and step % c.eval_steps == 0):
                    self._report(self._train_figures(sums, sums_n, lr, step_in_run, t_start))
                    sums.zero_()
                    sums_n = 0
                    last_eval = time.time()
                if now - last_ckpt >= c.checkpoint_seconds or (
                        c.checkpoint_steps and step % c.checkpoint_steps == 0):
                    self.counters["train_seconds"] += now - last_ckpt
                    self._checkpoint(train_set)
                    last_ckpt = time.time()
        self.counters["train_seconds"] += time.time() - last_ckpt
        final = self._train_figures(sums, sums_n, lr, step_in_run, t_start)
        self._report({**final, "final": True})
        self._checkpoint(train_set)
        _log(c, f"wrote {self.ckpt_path} and {self.export_path} "
             f"({os.path.getsize(self.export_path)} bytes); {self.counters['step']} steps, "
             f"{self.counters['samples']} samples in all")

    def _train_figures(self, sums, sums_n: int, lr: float, steps: int, t_start: float) -> dict:
        s = (sums / max(sums_n, 1)).tolist()
        return {"lr": lr, "train_policy_ce": s[0], "train_value_mse": s[1], "train_top1": s[2],
                "pos_per_s": steps * self.config.batch / max(1e-9, time.time() - t_start)}
