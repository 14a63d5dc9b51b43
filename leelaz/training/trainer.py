"""Training a Leela Zero network: the loop behind `leelaz train` and the Zero loop's `train()`.

Owns: `train(...)` (the programmatic entry point) and `run(config)` with the loop; the
settings are training.train_config's. Imports: torch, numpy, training.dataset,
training.continuous, training.data_files, training.export, training.torch_model
(LeelaNet.from_file starts from an existing network), training.train_config, leelaz.files,
leelaz.progress.

Data: Leela Zero training chunks (`*.gz` but not `*.sgf.gz`: dump_supervised / dump_training
output), game packs (`*.npz.xz`, scripts/prepare_gpu_data.py) and SGF collections (`*.sgf`,
`*.sgf.gz`; with sgf_loader "supervised" through training.supervised's GameState replay
instead: setup stones and handicap included, time/forfeit games kept for the policy only),
named as files, folders or glob patterns (training.data_files: self-play folders work).
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
out_dir (export_name may be an absolute path elsewhere), the checkpoint recording the weights
file's sha256, so a kill between the two never leaves a finished checkpoint beside an older
weights file; temporaries that killed runs left are removed at start. A loss or network that
stops being finite ends the run with one line and no export; so does data with nothing to
train on (an untrained network is never exported). Checkpoints are read with weights_only=True.
Two ways to go on from a checkpoint:
- `resume_from=PATH` (`leelaz train --resume`): a warm restart; `steps` more steps, the
  schedule starts again.
- `continue_run=True` (`train(..., resume=True)`, the default there): out_dir's own
  checkpoint, if any, and `steps` is the run's total, so a killed run is finished rather than
  repeated, and a finished one returns at once. The schedule, the optimizer and the batches
  go on where they were: resumed, the run draws the batches the uninterrupted run drew.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from dataclasses import asdict, fields, replace

import numpy as np
import torch

from leelaz import files
from leelaz.progress import progress
from leelaz.training.continuous import BatchOrder, SnapshotAverage, recompute_batch_norm
from leelaz.training.data_files import check_pack, expand_data, reading
from leelaz.training.dataset import ChunkPositions, GamePack, PositionSet, read_sgf_collection
from leelaz.training.export import export_weights
from leelaz.training.torch_model import LeelaNet, loss_terms
from leelaz.training.train_config import (TrainConfig, TrainingError, TrainResult,
                                          parse_lr_schedule, scheduled_lr)

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.jsonl"
#: Steps between checks that the loss is still finite (each check waits for the device).
FINITE_CHECK_STEPS = 16
#: Where a training invocation's wall time goes (time_<phase> in its metrics): the window and
#: held-out sets read and put on the device, the optimizer steps, the evaluations on held-out
#: positions, the exports with their checkpoints. The Zero loop's generation record keeps
#: them beside the job's whole time (process start, torch's import and CUDA's are the rest).
PHASES = ("load", "steps", "eval", "export")


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
            with reading(p):
                games += read_sgf_collection(p)
    parts = []
    for p in packs:
        with reading(p):
            parts.append(check_pack(GamePack.load(p)))
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
    c = replace(c, data=expand_data(c.data), val=expand_data(c.val))
    missing = [p for p in c.val_external if not os.path.isfile(p)]
    if missing:
        raise TrainingError(f"{missing[0]}: no such file")
    t0 = time.time()
    chunks = [p for p in c.data if is_chunk(p)]
    if chunks:
        if len(chunks) != len(c.data):
            games = next(p for p in c.data if not is_chunk(p))
            raise TrainingError(f"--data mixes chunk files ({chunks[0]}) and games ({games}): "
                                "give one kind (a self-play folder gives its chunks)")
        train = ChunkPositions(chunks, device)
        if c.val:
            val = ChunkPositions(c.val, device)
        else:
            train, val = _split_chunk_positions(train, c.val_fraction)
        if len(train) == 0:
            raise TrainingError("no positions to train on: the chunk files of --data hold "
                                + (f"{len(val)}, all held out for validation (give more data, "
                                   "or --val FILES)" if not c.val else "none"))
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
    if len(train) == 0:
        raise TrainingError(no_positions(pack.games, val_pack.games))
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
    if not any(len(g) for g in train_games):
        raise TrainingError(no_positions(len(train_games), len(val_games)))
    train = PositionSet.from_game_arrays(train_games)
    val = PositionSet.from_game_arrays(val_games) if any(len(g) for g in val_games) else \
        PositionSet.from_pack(GamePack.from_games([]))  # nothing held out: empty, as packs give
    _log(c, f"supervised iterator: {len(train_games)} train games -> {len(train)} positions, "
         f"{len(val_games)} val games -> {len(val)} positions in {time.time() - t0:.1f} s")
    return train.to(device), val.to(device)


def no_positions(train_games: int, held_out: int) -> str:
    """Why a run has nothing to train on: an untrained network must never be exported."""
    return (f"no positions to train on: {train_games} game(s) with moves left after holding "
            f"out {held_out} for validation (give more games, or --val FILES)")


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
                    export: dict | None = None, swa: SnapshotAverage | None = None) -> None:
    """Model, optimizer, counters and the snapshot average, written completely or not at all
    (leelaz.files: its temporary file is removed on any error). `export`: the name and sha256
    of the weights file written from this very run, so that a finished run can tell its own
    export."""
    with files.atomic_open(path, "wb") as f:
        torch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict(),
                    "counters": counters, "args": asdict(config),
                    "swa": swa.state_dict() if swa is not None else None,
                    "blocks": net.blocks, "filters": net.filters, "export": export}, f)


#: Keys every checkpoint holds (save_checkpoint).
CHECKPOINT_KEYS = ("model", "counters", "blocks", "filters")


def load_checkpoint(path: str) -> dict:
    """A checkpoint.pt, read with `weights_only=True` (tensors and plain data only: a file
    from elsewhere cannot run code); TrainingError naming the file when it is missing or not
    one of ours."""
    if not os.path.isfile(path):
        raise TrainingError(f"{path}: no such checkpoint file")
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001  (pickle, zip and torch errors alike)
        reason = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else \
            type(exc).__name__
        raise TrainingError(f"{path}: not a leelaz training checkpoint ({reason})") from None
    if not isinstance(ck, dict) or any(k not in ck for k in CHECKPOINT_KEYS):
        raise TrainingError(f"{path}: not a leelaz training checkpoint (no model and "
                            "counters in it)")
    return ck


def file_sha256(path: str) -> str | None:
    """The file's sha256 (hex), or None when it cannot be read."""
    import hashlib
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def prepare_out_dir(folder: str) -> None:
    """Create the output folder and make sure files can be written there, before any data is
    read: a file in its place, a read-only folder or a full disk is one line now, not a
    traceback after the data has loaded."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise TrainingError(f"--out {folder}: a file, not a folder")
    try:
        os.makedirs(folder, exist_ok=True)
        with files.atomic_open(os.path.join(folder, ".write-test"), "w") as f:
            f.write("leelaz train\n")
        os.unlink(os.path.join(folder, ".write-test"))
    except OSError as exc:
        raise TrainingError(f"--out {folder}: cannot write there: "
                            f"{exc.strerror or exc}") from None


def sweep_temporaries(*targets: str) -> list[str]:
    """Remove what killed runs left beside the checkpoint and the weights file: atomic_open's
    hidden temporary files, and older versions' `checkpoint.pt.tmpPID` of processes that are
    gone (each is checkpoint-sized; on a full disk they kept it full across reruns)."""
    import glob
    import re
    removed = []
    for target in targets:
        stale = files.stale_temporaries(glob.escape(target))
        for path in glob.glob(glob.escape(target) + ".tmp*"):
            m = re.fullmatch(r"\.tmp(\d+)", path[len(target):])
            if m and not _process_alive(int(m.group(1))):
                stale.append(path)
        for path in stale:
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # our own leftovers cannot be in progress: we are just starting
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def diverged(what: str, step: int) -> TrainingError:
    """The one line a run ends with when its loss or weights stop being finite numbers."""
    return TrainingError(f"training diverged at step {step}: {what} not finite; stopped "
                         "without exporting this run's network (try a lower --lr)")


def plain_copy(net: LeelaNet) -> LeelaNet:
    """The network as export expects it (float32 on the CPU); a copy when it lives elsewhere."""
    first = next(net.parameters())
    if first.device.type == "cpu" and first.dtype == torch.float32:
        return net
    copy = LeelaNet(net.blocks, net.filters)
    copy.load_state_dict({k: v.detach().float().cpu() for k, v in net.state_dict().items()})
    return copy


# ---- the run ------------------------------------------------------------------------------


def metrics_line(m: dict) -> str:
    """One line of metrics.jsonl. A non-finite figure (a diverging loss) is written as null:
    Python's bare NaN and Infinity are not JSON, and other readers refuse the line."""
    return json.dumps({k: None if isinstance(v, float) and not math.isfinite(v) else v
                       for k, v in m.items()}, allow_nan=False) + "\n"

class _Run:
    """One training run: the network, its optimizer, the data and the counters."""

    def __init__(self, config: TrainConfig):
        c = self.config = config
        self.device = pick_device(c.device)
        self.amp = self.device.type == "cuda" and c.amp
        prepare_out_dir(c.out_dir)
        self.export_path = os.path.join(c.out_dir, c.export_name
                                        or f"leelaz-{c.blocks}x{c.filters}.txt.gz")
        self.ckpt_path = os.path.join(c.out_dir, CHECKPOINT)
        for path in sweep_temporaries(self.ckpt_path, self.export_path):
            _log(c, f"removed {path}, left by an interrupted run")
        self.checkpoint_export: dict | None = None  # what the loaded checkpoint exported
        self.metrics_path = os.path.join(c.out_dir, METRICS)
        self.counters = {"step": 0, "samples": 0, "train_seconds": 0.0, "runs": 0}
        self.last_metrics: dict | None = None
        #: Wall seconds of this invocation by phase (PHASES), reported as time_<phase>.
        self.phases = dict.fromkeys(PHASES, 0.0)
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
            ck = load_checkpoint(checkpoint)
            if (ck["blocks"], ck["filters"]) != (c.blocks, c.filters):
                raise TrainingError(f"{checkpoint} is {ck['blocks']}x{ck['filters']}, "
                                    f"not {c.blocks}x{c.filters}")
            try:
                self.net.load_state_dict(ck["model"])
            except (RuntimeError, TypeError, ValueError) as exc:
                raise TrainingError(f"{checkpoint}: its model does not fit a "
                                    f"{c.blocks}x{c.filters} network "
                                    f"({str(exc).splitlines()[0][:120]})") from None
            self.counters.update(ck["counters"])
            self.checkpoint_export = ck.get("export")
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
            self._ensure_export()
            return self.result()
        self.counters["runs"] += 1
        with self._phase("load"):
            train_set, val_set = load_sets(c, self.device)  # before CUDA: the replay forks
            self.external = load_external(c, self.device)
            self._prepare(val_set)
        self._loop(train_set, left)
        if self.last_metrics is not None:  # the final export's time too, for the caller
            self.last_metrics.update(self.phase_figures())
        return self.result()

    @contextlib.contextmanager
    def _phase(self, name: str):
        """Count the block's wall time to phase `name`. The device's queue is drained at both
        ends, so that steps still running on a GPU are not counted to the next phase."""
        self._sync()
        began = time.perf_counter()
        try:
            yield
        finally:
            self._sync()
            self.phases[name] += time.perf_counter() - began

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def phase_figures(self) -> dict:
        """time_<phase>: this invocation's wall seconds in each phase so far."""
        return {f"time_{name}": round(seconds, 3) for name, seconds in self.phases.items()}

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
        with self._phase("eval"):
            self._evaluate_and_log(extra)

    def _evaluate_and_log(self, extra: dict) -> None:
        c = self.config
        m = evaluate(self.net, self.val, self.val_sample, 4 * c.batch, self.device, self.amp)
        if self.external is not None:  # a fixed set (e.g. strong human games): ext_*
            ext = evaluate(self.net, self.external, self.external_sample, 4 * c.batch,
                           self.device, self.amp)
            m.update({"ext_" + k[len("val_"):]: v for k, v in ext.items()})
        m.update(extra)
        m.update({"step": self.counters["step"], "samples": self.counters["samples"]})
        m.update(self.phase_figures())
        if not all(math.isfinite(v) for v in m.values() if isinstance(v, float)):
            raise diverged("the loss is", self.counters["step"])
        try:
            with open(self.metrics_path, "a") as f:
                f.write(metrics_line(m))
        except OSError as exc:
            raise TrainingError(f"cannot write {self.metrics_path}: {exc.strerror or exc}") \
                from None
        self.last_metrics = m
        _log(c, " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in m.items()))

    def _checkpoint(self, train_set) -> None:
        """The weights file first, then the checkpoint that records it: a kill between the two
        leaves an older checkpoint, which a continued run trains on from, never a finished
        checkpoint beside an older weights file."""
        with self._phase("export"):
            self._export_and_save(train_set)

    def _export_and_save(self, train_set) -> None:
        export = self._export(train_set)
        try:
            save_checkpoint(self.ckpt_path, self.net, self.opt, self.counters, self.config,
                            export, self.swa)
        except OSError as exc:
            raise TrainingError(f"cannot write {self.ckpt_path}: {exc.strerror or exc}") \
                from None

    def _export(self, train_set) -> dict:
        """Write the weights file (only a finite network): the network, or with swa_every the
        average of its snapshots, with batch-norm statistics recomputed on `bn_batches`
        training batches (Leela Zero's swa_recalc_bn); a run with no snapshot yet exports the
        network itself. Returns the file's name and sha256."""
        c = self.config
        if self.swa is None or self.swa.count == 0:
            net = plain_copy(self.net)
        else:
            avg = self.swa.network(plain_copy(self.net)).to(self.device)

            def batches():
                order = BatchOrder(c.seed + 1, len(train_set), self.device)
                for i in range(c.bn_batches):
                    yield train_set.batch(*order.at(self.counters["step"] + i, c.batch))[0]
            with autocast(self.device, False):
                recompute_batch_norm(avg, batches())
            net = plain_copy(avg)
        if not all(bool(torch.isfinite(t).all()) for t in net.state_dict().values()
                   if t.is_floating_point()):
            raise diverged("the network's weights are", self.counters["step"])
        try:
            export_weights(net, self.export_path)
        except OSError as exc:
            raise TrainingError(f"cannot write {self.export_path}: {exc.strerror or exc}") \
                from None
        return {"name": os.path.basename(self.export_path),
                "sha256": file_sha256(self.export_path)}

    def _ensure_export(self) -> None:
        """A finished run's weights file is its checkpoint's network: written again unless it
        is the very file exported with the checkpoint (an older leelaz, killed between its
        checkpoint and its export, left the previous export beside a finished checkpoint).
        With snapshots the average's batch-norm statistics need the training data."""
        record = self.checkpoint_export or {}
        if record.get("sha256") is None or record.get("sha256") != \
                file_sha256(self.export_path):
            needs_data = self.swa is not None and self.swa.count > 0
            self._export(load_sets(self.config, self.device)[0] if needs_data else None)

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
        loop_began = time.perf_counter()
        other_before = self.phases["eval"] + self.phases["export"]
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
                if step_in_run % FINITE_CHECK_STEPS == 0 and not bool(torch.isfinite(sums).all()):
                    raise diverged("the loss is", self.counters["step"] + 1)
                self.counters["step"] += 1
                self.counters["samples"] += len(idx)
                step = self.counters["step"]
                if self.swa is not None and step % c.swa_every == 0:
                    self.swa.add(self.net)
                bar.update(1)
                now = time.time()
                if not c.steps and step_in_run % FINITE_CHECK_STEPS == 1:  # bounded by time
                    bar.set_postfix_str(f"{max(0.0, c.seconds - (now - t_start)):.0f} s left")
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
        self._sync()  # the loop's time, less the evaluations and exports inside it
        self.phases["steps"] += (time.perf_counter() - loop_began - self.phases["eval"]
                                 - self.phases["export"] + other_before)
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
