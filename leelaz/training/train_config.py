"""The settings and the outcome of a training run, without PyTorch.

Owns: TrainConfig (every option of `leelaz train`, with its default), TrainResult,
TrainingError and the run's learning-rate schedule (parse_lr_schedule, scheduled_lr). Imports: stdlib only, so `leelaz train --help` works where PyTorch is not
installed and tells what to install.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


class TrainingError(ValueError):
    """Bad training input (no data, mixed data kinds, a checkpoint of another shape)."""


@dataclass
class TrainConfig:
    """Every setting of a training run; `leelaz train` has one option per field."""

    data: list[str]
    out_dir: str
    blocks: int = 6
    filters: int = 128
    steps: int = 0  # 0: until seconds
    seconds: float = 0.0  # 0: until steps
    batch: int = 1024
    lr: float = 0.002  # peak learning rate
    lr_final: float = 0.00001
    warmup: float = 0.04  # fraction of the run
    optimizer: str = "adamw"  # or "sgd"
    momentum: float = 0.9  # SGD momentum / Adam beta1
    l2: float = 0.01  # weight decay of conv/FC weights (SGD: L2; AdamW: decoupled)
    value_weight: float = 1.0
    val: list[str] = field(default_factory=list)
    val_fraction: float = 0.05
    val_games: int = 2000  # cap on held-out games replayed
    val_positions: int = 50000
    sgf_loader: str = "fast"  # or "supervised"
    device: str = "auto"
    amp: bool = True  # bf16 autocast on CUDA
    workers: int = os.cpu_count() or 1
    seed: int = 1
    export_name: str | None = None  # default: leelaz-BxF.txt.gz
    init_weights: str | None = None  # start from this Leela Zero weights file
    resume_from: str | None = None  # warm restart from this checkpoint
    continue_run: bool = False  # go on from out_dir's checkpoint up to `steps` in all
    # One continuing run (leelaz.training.continuous): the learning rate as a function of the
    # run's total step ("LR[,STEP:LR...]", no cosine), a linear ramp over its first steps, a
    # checkpoint every N steps, and an average of snapshots taken every N steps exported.
    lr_schedule: str | None = None
    warmup_steps: int = 0
    checkpoint_steps: int = 0
    swa_every: int = 0  # 0: export the network itself
    swa_max: int = 16  # Leela Zero's swa_max_n
    bn_batches: int = 16  # batches that recompute the average's batch-norm statistics
    val_external: list[str] = field(default_factory=list)  # a fixed set, reported as ext_*
    eval_seconds: float = 120.0
    eval_steps: int = 0  # also evaluate every N steps
    checkpoint_seconds: float = 150.0
    progress: bool = True
    quiet: bool = False


@dataclass
class TrainResult:
    weights_path: str  # the Leela Zero weights file, written atomically in out_dir
    checkpoint_path: str
    steps_done: int  # all steps of this network, earlier runs included
    samples: int
    metrics: dict | None = None  # the last evaluation (None when no step was needed)


# ---- the run's learning rate (torch-free, so the verbs can check it before torch loads) ----

def parse_lr_schedule(text: str) -> list[tuple[int, float]]:
    """`LR[,STEP:LR...]` -> [(0, LR), (STEP, LR), ...]: LR from step 0, each later LR from its
    STEP of the run on (steps increasing). ValueError saying what is wrong."""
    parts = [p.strip() for p in (text or "").split(",")]
    if not parts or not parts[0]:
        raise ValueError("give LR or LR,STEP:LR,... (e.g. 0.001 or 0.002,20000:0.0005)")
    schedule: list[tuple[int, float]] = []
    for i, part in enumerate(parts):
        step_text, sep, lr_text = part.rpartition(":")
        if (i == 0) == bool(sep):
            raise ValueError(f"{part!r}: the first entry is a learning rate, the others "
                             "STEP:LR")
        try:
            step = int(step_text) if sep else 0
            lr = float(lr_text)
        except ValueError:
            raise ValueError(f"{part!r} is not {'STEP:LR' if sep else 'a number'}") from None
        if not lr >= 0.0 or lr == float("inf"):
            raise ValueError(f"{part!r}: a learning rate is a finite number >= 0")
        if schedule and step <= schedule[-1][0]:
            raise ValueError(f"{part!r}: the steps must increase")
        schedule.append((step, lr))
    return schedule


def scheduled_lr(schedule: list[tuple[int, float]], step: int, warmup_steps: int = 0) -> float:
    """The learning rate at the run's step `step` (0-based), ramped up linearly over the
    run's first `warmup_steps` (a fresh optimizer's first moments are noise)."""
    lr = schedule[0][1]
    for start, value in schedule:
        if step >= start:
            lr = value
    if warmup_steps and step < warmup_steps:
        lr *= (step + 1) / warmup_steps
    return lr
