#!/usr/bin/env python3
"""Train a Leela Zero network on game records and export it as a weights file.

Data (--data, --val; each a list of paths):
  *.npz.xz      game packs from scripts/prepare_gpu_data.py (fast: replayed in a process pool)
  *.sgf, *.sgf.gz  SGF collections (replayed the same way; with --sgf-loader supervised,
                through training.supervised's GameState replay instead: any SGF, setup
                stones and handicap included, time/forfeit games kept for the policy only)
  other *.gz    Leela Zero training chunks (dump_supervised / dump_training output)
Without --val, --val-fraction of the games (whole games) is held out.

Loss: policy cross-entropy + value-weight * value MSE (tanh scale, targets +-1); weight decay
on conv/FC weights only (AdamW by default: decoupled, 0.01; --optimizer sgd: Nesterov SGD
with L2, use e.g. --lr 0.05 --l2 1e-4). Time and forfeit games (B+T, W+T, B+F, W+F) train the
policy only: their value target is masked. Each batch gets a random symmetry per sample.
Schedule: linear warm-up then cosine decay to --lr-final, over --steps or --seconds (whichever
ends first), so a run cut by time still ends annealed. On CUDA: bf16 autocast, channels_last.

Every --checkpoint-seconds the model (checkpoint.pt) and the weights file are written
atomically to --out; --resume continues from a checkpoint (weights and counters; the LR
schedule starts again, a warm restart). Metrics every --eval-seconds on a fixed sample of
--val-positions held-out positions: policy top-1, policy cross-entropy, value MSE.

    python scripts/train.py --data .devdata/train-0.npz.xz --val .devdata/val.npz.xz \\
        --blocks 6 --filters 128 --batch 1024 --lr 0.002 --seconds 450 --out runs/6x128

weights/README.md gives the exact commands behind the shipped network.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

from leelaz.training.dataset import (ChunkPositions, GamePack, PositionSet, read_sgf_collection)
from leelaz.training.export import export_weights
from leelaz.training.torch_model import LeelaNet, loss_terms


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Data


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
        raise SystemExit("no game data given")
    return GamePack(np.concatenate([p.moves for p in parts]),
                    np.concatenate([p.lengths for p in parts]),
                    np.concatenate([p.winner for p in parts]),
                    np.concatenate([p.use_value for p in parts]))


def load_sets(a, device):
    """(train positions, validation positions) on `device`."""
    t0 = time.time()
    train_chunks = [p for p in a.data if is_chunk(p)]
    if train_chunks:
        if len(train_chunks) != len(a.data):
            raise SystemExit("mix either chunk files or games in --data, not both")
        train = ChunkPositions(train_chunks, device)
        if a.val:
            val = ChunkPositions(a.val, device)
        else:  # hold out whole chunk files is impossible with one file: hold out positions
            n = len(train)
            cut = max(1, int(n * a.val_fraction))
            val = ChunkPositions.__new__(ChunkPositions)
            val.__dict__.update(train.__dict__)
            idx = torch.arange(n, device=train.device)
            for name in ("planes", "policy", "z"):
                full = getattr(train, name)
                setattr(val, name, full[idx[n - cut:]])
                setattr(train, name, full[idx[:n - cut]])
        log(f"chunks: {len(train)} train / {len(val)} val positions")
        return train, val
    if a.sgf_loader == "supervised":
        return load_supervised(a, device)
    pack = load_pack(a.data)
    if a.val:
        val_pack = load_pack(a.val)
    else:
        rng = np.random.default_rng(a.seed)
        order = rng.permutation(pack.games)
        cut = max(1, int(pack.games * a.val_fraction))
        val_pack, pack = pack.select(np.sort(order[:cut])), pack.select(np.sort(order[cut:]))
    if a.val_games and val_pack.games > a.val_games:
        val_pack = val_pack.select(np.arange(a.val_games))
    train = PositionSet.from_pack(pack, workers=a.workers)
    val = PositionSet.from_pack(val_pack, workers=a.workers)
    log(f"replayed {pack.games} train games -> {len(train)} positions "
        f"({train.dropped_games} cut at an illegal move), {val_pack.games} val games -> "
        f"{len(val)} positions in {time.time() - t0:.1f} s")
    return train.to(device), val.to(device)


def load_supervised(a, device):
    """SGF collections through the supervised iterator (GameState + input planes rules)."""
    from leelaz.training.supervised import iter_games, iter_games_parallel

    def games(paths):
        if a.workers > 1:
            return list(iter_games_parallel(paths, a.workers, unreliable="zero"))
        return list(iter_games(paths, unreliable="zero"))

    t0 = time.time()
    train_games = games(a.data)
    if a.val:
        val_games = games(a.val)
    else:
        order = np.random.default_rng(a.seed).permutation(len(train_games))
        cut = max(1, int(len(train_games) * a.val_fraction))
        val_games = [train_games[i] for i in sorted(order[:cut])]
        train_games = [train_games[i] for i in sorted(order[cut:])]
    if a.val_games:
        val_games = val_games[:a.val_games]
    train = PositionSet.from_game_arrays(train_games)
    val = PositionSet.from_game_arrays(val_games)
    log(f"supervised iterator: {len(train_games)} train games -> {len(train)} positions, "
        f"{len(val_games)} val games -> {len(val)} positions in {time.time() - t0:.1f} s")
    return train.to(device), val.to(device)


# ---------------------------------------------------------------------------------------------
# Schedule, evaluation, checkpoints


def learning_rate(a, progress: float) -> float:
    """Linear warm-up over the first warmup fraction, then cosine down to lr_final."""
    if progress < a.warmup:
        return a.lr * max(progress / a.warmup, 0.02)
    x = min(1.0, (progress - a.warmup) / max(1e-9, 1.0 - a.warmup))
    return a.lr_final + 0.5 * (a.lr - a.lr_final) * (1.0 + math.cos(math.pi * x))


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
        idx = sample[i:i + batch]
        planes, target, z, mask = val.batch(idx)
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
    n = len(sample)
    return {"val_top1": correct / n, "val_policy_ce": ce / n,
            "val_value_mse": sq / max(sq_n, 1.0), "val_positions": n}


def save_checkpoint(path: str, net, counters: dict, args: dict) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    torch.save({"model": net.state_dict(), "counters": counters, "args": args,
                "blocks": net.blocks, "filters": net.filters}, tmp)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 1)[1])
    p.add_argument("--data", nargs="+", required=True)
    p.add_argument("--val", nargs="*", default=[])
    p.add_argument("--val-fraction", type=float, default=0.05)
    p.add_argument("--sgf-loader", choices=("fast", "supervised"), default="fast",
                   help="SGF files: our replay of plain game lines, or the GameState iterator")
    p.add_argument("--val-games", type=int, default=2000, help="cap on held-out games replayed")
    p.add_argument("--val-positions", type=int, default=50000)
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--filters", type=int, default=128)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--steps", type=int, default=0, help="0: until --seconds")
    p.add_argument("--seconds", type=float, default=0, help="0: until --steps")
    p.add_argument("--lr", type=float, default=0.002, help="peak learning rate")
    p.add_argument("--lr-final", type=float, default=0.00001)
    p.add_argument("--warmup", type=float, default=0.04, help="fraction of the run")
    p.add_argument("--optimizer", choices=("sgd", "adamw"), default="adamw",
                   help="SGD with Nesterov momentum, or AdamW")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum / Adam beta1")
    p.add_argument("--l2", type=float, default=0.01,
                   help="weight decay of conv/FC weights (SGD: L2; AdamW: decoupled)")
    p.add_argument("--value-weight", type=float, default=1.0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--no-amp", action="store_true")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, help="folder for checkpoint.pt, weights, metrics")
    p.add_argument("--export-name", default=None, help="default: leelaz-BxF.txt.gz")
    p.add_argument("--resume", default=None, help="checkpoint.pt to start from")
    p.add_argument("--eval-seconds", type=float, default=120)
    p.add_argument("--eval-steps", type=int, default=0, help="also evaluate every N steps")
    p.add_argument("--checkpoint-seconds", type=float, default=150)
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if not a.steps and not a.seconds:
        p.error("give --steps or --seconds")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    torch.manual_seed(a.seed)
    device = torch.device(a.device)
    amp = device.type == "cuda" and not a.no_amp
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    os.makedirs(a.out, exist_ok=True)
    export_path = os.path.join(a.out, a.export_name or f"leelaz-{a.blocks}x{a.filters}.txt.gz")
    ckpt_path = os.path.join(a.out, "checkpoint.pt")
    metrics_path = os.path.join(a.out, "metrics.jsonl")

    counters = {"step": 0, "samples": 0, "train_seconds": 0.0, "runs": 0}
    net = LeelaNet(a.blocks, a.filters)
    if a.resume:
        ck = torch.load(a.resume, map_location="cpu")
        if (ck["blocks"], ck["filters"]) != (a.blocks, a.filters):
            raise SystemExit(f"{a.resume} is {ck['blocks']}x{ck['filters']}, "
                             f"not {a.blocks}x{a.filters}")
        net.load_state_dict(ck["model"])
        counters.update(ck["counters"])
        log(f"resumed {a.resume}: step {counters['step']}, {counters['samples']} samples")
    counters["runs"] += 1
    train, val = load_sets(a, device)  # before CUDA starts: the replay forks workers
    net.to(device)
    if device.type == "cuda":
        net = net.to(memory_format=torch.channels_last)
    gen = torch.Generator(device=device).manual_seed(a.seed + counters["runs"])
    vgen = torch.Generator(device="cpu").manual_seed(12345)  # the same sample every run
    n_val = min(a.val_positions, len(val))
    val_sample = torch.randperm(len(val), generator=vgen)[:n_val].to(device)

    decay, no_decay = net.weight_decay_parameters()
    groups = [{"params": decay, "weight_decay": a.l2}, {"params": no_decay, "weight_decay": 0.0}]
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(groups, lr=a.lr, momentum=a.momentum, nesterov=True)
    else:  # AdamW's decay is decoupled and multiplied by lr: --l2 is its coefficient
        opt = torch.optim.AdamW(groups, lr=a.lr, betas=(a.momentum, 0.999))

    def progress_of(step: int, seconds: float) -> float:
        parts = []
        if a.steps:
            parts.append(step / a.steps)
        if a.seconds:
            parts.append(seconds / a.seconds)
        return max(parts)

    def report(step_in_run: int, extra: dict) -> None:
        m = evaluate(net, val, val_sample, 4 * a.batch, device, amp)
        m.update(extra)
        m.update({"step": counters["step"], "samples": counters["samples"]})
        with open(metrics_path, "a") as f:
            f.write(json.dumps(m) + "\n")
        log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in m.items()))

    def checkpoint() -> None:
        save_checkpoint(ckpt_path, net, counters, vars(a))
        export_weights(_plain(net), export_path)

    try:
        from tqdm import tqdm
        bar = None if a.no_progress else tqdm(total=a.steps or None, unit="step",
                                             mininterval=5, file=sys.stderr)
    except ImportError:
        bar = None

    n_train = len(train)
    perm = torch.randperm(n_train, device=device, generator=gen)
    cursor = 0
    step_in_run = 0
    t_start = time.time()
    last_eval = last_ckpt = t_start
    run_seconds = 0.0
    sums = torch.zeros(3, device=device)
    sums_n = 0
    net.train()
    while True:
        progress = progress_of(step_in_run, run_seconds)
        if progress >= 1.0:
            break
        lr = learning_rate(a, progress)
        for g in opt.param_groups:
            g["lr"] = lr
        if cursor + a.batch > n_train:
            perm = torch.randperm(n_train, device=device, generator=gen)
            cursor = 0
        idx = perm[cursor:cursor + a.batch]
        cursor += a.batch
        sym = torch.randint(0, 8, (len(idx),), device=device, generator=gen)
        planes, target, z, mask = train.batch(idx, sym)
        if device.type == "cuda":
            planes = planes.contiguous(memory_format=torch.channels_last)
        with autocast(device, amp):
            logits, value = net(planes)
        policy_loss, value_loss = loss_terms(logits, value, target, z, mask)
        loss = policy_loss + a.value_weight * value_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            acc = (logits.argmax(1) == target.argmax(1)).float().mean()
            sums += torch.stack([policy_loss.detach(), value_loss.detach(), acc])
        sums_n += 1
        step_in_run += 1
        counters["step"] += 1
        counters["samples"] += len(idx)
        if bar is not None:
            bar.update(1)
        now = time.time()
        run_seconds = now - t_start
        if now - last_eval >= a.eval_seconds or (a.eval_steps and step_in_run % a.eval_steps == 0):
            s = (sums / max(sums_n, 1)).tolist()
            extra = {"lr": lr, "train_policy_ce": s[0], "train_value_mse": s[1],
                     "train_top1": s[2],
                     "pos_per_s": step_in_run * a.batch / max(1e-9, run_seconds)}
            sums.zero_()
            sums_n = 0
            report(step_in_run, extra)
            last_eval = time.time()
        if now - last_ckpt >= a.checkpoint_seconds:
            counters["train_seconds"] += now - last_ckpt
            checkpoint()
            last_ckpt = time.time()
    if bar is not None:
        bar.close()
    counters["train_seconds"] += time.time() - last_ckpt
    s = (sums / max(sums_n, 1)).tolist()
    report(step_in_run, {"lr": learning_rate(a, 1.0), "train_policy_ce": s[0],
                         "train_value_mse": s[1], "train_top1": s[2],
                         "pos_per_s": step_in_run * a.batch / max(1e-9, time.time() - t_start),
                         "final": True})
    checkpoint()
    log(f"wrote {ckpt_path} and {export_path} ({os.path.getsize(export_path)} bytes); "
        f"{counters['step']} steps, {counters['samples']} samples in all")
    return 0


def _plain(net: LeelaNet) -> LeelaNet:
    """The network as export expects it (float32 on the CPU); a copy when it lives elsewhere."""
    first = next(net.parameters())
    if first.device.type == "cpu" and first.dtype == torch.float32:
        return net
    copy = LeelaNet(net.blocks, net.filters)
    copy.load_state_dict({k: v.detach().float().cpu() for k, v in net.state_dict().items()})
    return copy


if __name__ == "__main__":
    sys.exit(main())
