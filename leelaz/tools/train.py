"""`leelaz train`: train a Leela Zero network on game records and export it as a weights file.

Owns: the verb's command line (one option per TrainConfig field; `--data` and `--val` take
several files, folders or glob patterns after one flag). Imports: click, training
training.train_config, leelaz.install_hints; training.trainer (PyTorch) only when a run starts,
so `--help` works without PyTorch and a missing PyTorch is one line saying what to install.
"""

from __future__ import annotations

import click

from leelaz.tools import ToolError
from leelaz.install_hints import torch_install_hint
from leelaz.training.train_config import TrainConfig, TrainingError

D = TrainConfig(data=[], out_dir="")  # the defaults
#: Options that take every following argument up to the next option.
LIST_OPTIONS = ("--data", "--val", "--val-external")
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
EPILOG = """\b
Data: *.gz Leela Zero chunks (selfplay, dump_supervised, dump_training), *.npz.xz game packs
(scripts/prepare_gpu_data.py), *.sgf / *.sgf.gz collections (one game a line). A folder gives
its chunks (else its games): `--data DIR` after `leelaz selfplay --out DIR`; *.debug.* files
are skipped. Give --steps or --seconds (or both: whichever ends first).
Examples (docs/recipe.md: self-play, train, play in three commands):
  leelaz train --data sp --blocks 2 --filters 32 --steps 200 --out run
  leelaz train --data train-0.npz.xz --val val.npz.xz --blocks 6 --filters 128 \\
      --batch 1024 --lr 0.002 --seconds 450 --out runs/6x128
weights/README.md gives the exact commands behind the shipped network.
"""


def expand_lists(args: list[str]) -> list[str]:
    """`--data a b --x` -> `--data a --data b --x`: several files after one flag."""
    out: list[str] = []
    current = None
    for arg in args:
        if arg.startswith("-"):
            current = arg if arg in LIST_OPTIONS else None
            if current is None:
                out.append(arg)
        elif current is not None:
            out += [current, arg]
        else:
            out.append(arg)
    return out


class ListCommand(click.Command):
    def parse_args(self, ctx, args):
        return super().parse_args(ctx, expand_lists(list(args)))


@click.command(cls=ListCommand, context_settings=CONTEXT, epilog=EPILOG,
               short_help="Train a network on game records, export a weights file.")
@click.option("--data", multiple=True, required=True, metavar="PATH...",
              help="Training data: files, folders or glob patterns (several after one --data).")
@click.option("--val", multiple=True, metavar="PATH...",
              help="Held-out data, as --data (default: a part of --data, see --val-fraction).")
@click.option("--val-fraction", type=click.FloatRange(0, 1, max_open=True),
              default=D.val_fraction, show_default=True,
              help="Without --val: the fraction of games (positions, for chunks) held out.")
@click.option("--sgf-loader", type=click.Choice(["fast", "supervised"]), default=D.sgf_loader,
              show_default=True,
              help="SGF files: our replay of plain game lines, or the GameState iterator.")
@click.option("--val-games", type=click.IntRange(0, None), default=D.val_games,
              show_default=True, help="Cap on held-out games replayed.")
@click.option("--val-positions", type=click.IntRange(1, None), default=D.val_positions,
              show_default=True, help="Held-out positions each evaluation looks at.")
@click.option("--blocks", type=click.IntRange(0, None), default=D.blocks, show_default=True,
              help="Residual blocks of the network.")
@click.option("--filters", type=click.IntRange(1, None), default=D.filters, show_default=True,
              help="Filters (channels) of each convolution.")
@click.option("--batch", type=click.IntRange(1, None), default=D.batch, show_default=True,
              help="Positions per training step.")
@click.option("--steps", type=click.IntRange(0, None), default=D.steps,
              help="Steps to train (0: until --seconds). --steps or --seconds is required.")
@click.option("--seconds", type=click.FloatRange(0, None), default=D.seconds,
              help="Seconds to train (0: until --steps).")
@click.option("--lr", type=float, default=D.lr, show_default=True, help="Peak learning rate.")
@click.option("--lr-final", type=float, default=D.lr_final, show_default=True,
              help="Learning rate at the end of the cosine decay.")
@click.option("--warmup", type=click.FloatRange(0, 1), default=D.warmup, show_default=True,
              help="Linear warm-up of the learning rate, as a fraction of the run.")
@click.option("--optimizer", type=click.Choice(["sgd", "adamw"]), default=D.optimizer,
              show_default=True, help="SGD with Nesterov momentum, or AdamW.")
@click.option("--momentum", type=float, default=D.momentum, show_default=True,
              help="SGD momentum / Adam beta1.")
@click.option("--l2", type=float, default=D.l2, show_default=True,
              help="Weight decay of conv/FC weights (SGD: L2; AdamW: decoupled).")
@click.option("--value-weight", type=float, default=D.value_weight, show_default=True,
              help="Weight of the value loss (MSE) beside the policy loss (cross-entropy).")
@click.option("--device", default=D.device, show_default=True,
              help="auto (CUDA when there is one), cpu, cuda, cuda:1, ...")
@click.option("--no-amp", is_flag=True, help="No bf16 autocast on CUDA.")
@click.option("--workers", type=click.IntRange(1, None), default=D.workers, show_default=True,
              help="Processes replaying SGF games.")
@click.option("--seed", type=int, default=D.seed, show_default=True,
              help="Seed of the initial network, the batches and the held-out split.")
@click.option("--out", "out_dir", required=True, metavar="DIR",
              help="Folder for checkpoint.pt, the weights file and metrics.jsonl.")
@click.option("--export-name", default=None, metavar="NAME",
              help="Name of the weights file in --out (default: leelaz-BxF.txt.gz).")
@click.option("--init-weights", default=None, metavar="FILE",
              help="Start from this Leela Zero weights file (version 1; batch norm's shift "
                   "restored as Leela Zero's tfprocess.py does). With --continue: only while "
                   "--out has no checkpoint yet.")
@click.option("--resume", "resume_from", default=None, metavar="CHECKPOINT",
              help="Start from a checkpoint.pt: its weights and counters, --steps more steps, "
                   "the schedule starting again (a warm restart).")
@click.option("--continue", "continue_run", is_flag=True,
              help="Go on from --out's checkpoint.pt until --steps steps in all (a killed run "
                   "is finished, not repeated).")
@click.option("--lr-schedule", default=None, metavar="LR[,STEP:LR...]",
              help="The run's learning rate by its total step count, e.g. 0.002,20000:0.0005 "
                   "(no warm-up or cosine; with --continue the schedule goes on across calls).")
@click.option("--warmup-steps", type=click.IntRange(0, None), default=D.warmup_steps,
              help="With --lr-schedule: ramp the learning rate up over the run's first N steps.")
@click.option("--checkpoint-steps", type=click.IntRange(0, None), default=D.checkpoint_steps,
              help="Also save the checkpoint and the weights every N steps.")
@click.option("--swa-every", type=click.IntRange(0, None), default=D.swa_every,
              help="Export an average of snapshots taken every N steps (Leela Zero's SWA; "
                   "batch-norm statistics recomputed) instead of the network itself.")
@click.option("--swa-max", type=click.IntRange(1, None), default=D.swa_max, show_default=True,
              help="The average weighs about the last N snapshots.")
@click.option("--bn-batches", type=click.IntRange(1, None), default=D.bn_batches,
              show_default=True, help="Batches that recompute the average's batch-norm "
                                      "statistics.")
@click.option("--val-external", multiple=True, metavar="FILE...",
              help="A fixed held-out set of games (SGF or packs), reported as ext_* metrics.")
@click.option("--eval-seconds", type=click.FloatRange(0, None, min_open=True),
              default=D.eval_seconds, show_default=True,
              help="Evaluate on the held-out positions (metrics.jsonl) this often.")
@click.option("--eval-steps", type=click.IntRange(0, None), default=D.eval_steps,
              help="Also evaluate every N steps.")
@click.option("--checkpoint-seconds", type=click.FloatRange(0, None, min_open=True),
              default=D.checkpoint_seconds, show_default=True,
              help="Write the weights file and checkpoint.pt this often (and at the end).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def command(data, val, no_amp, no_progress, **options) -> int:
    """Train a Leela Zero network on game records and export it as a weights file."""
    if not options["steps"] and not options["seconds"]:
        raise click.UsageError("give --steps or --seconds")
    options["val_external"] = list(options["val_external"])
    config = TrainConfig(data=list(data), val=list(val), amp=not no_amp,
                         progress=not no_progress, **options)
    try:
        from leelaz.training.trainer import run
    except ImportError as exc:
        if "torch" not in str(exc):
            raise
        raise ToolError("leelaz train needs PyTorch, which is not installed: "
                        f"{torch_install_hint()}") from None
    from leelaz.backends.weights import WeightsError

    try:
        run(config)
    except (TrainingError, WeightsError) as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:  # a file the trainer writes or reads without naming it itself
        where = f"{exc.filename}: " if exc.filename else ""
        raise ToolError(f"{where}{exc.strerror or exc}") from None
    except EOFError as exc:  # never click's `Aborted.` (Ctrl-C's) for a file that ends early
        raise ToolError(f"a file ended early: {exc}") from None
    return 0


def main(argv: list[str] | None = None) -> int:
    """`leelaz train ARGS` as a function (tests): returns the exit status."""
    import sys

    from leelaz.tools import run_verb

    return run_verb(["train", *(sys.argv[1:] if argv is None else argv)])
