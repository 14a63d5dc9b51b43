"""The units of work of the Zero loop, run by a worker: plain functions of a dict.

The same functions run in a local child process (local_executor.py) and as Ray tasks or in the
trainer actor (ray_executor.py), so the two modes differ only in where a job runs. A spec is a
dict of plain values (paths, counts, seeds) so that it pickles anywhere; a job returns a small
dict too, but the files it writes are the truth: the loop counts games from their SGFs and
reads the match from result.json, never from a return value alone.

Every job is idempotent under retry: self-play resumes the games already finished in its own
folder (play_selfplay counts them towards its target), a match's shard plays only its games
that have no SGF yet, the trainer resumes from its checkpoint. A job killed mid-way therefore
loses only the games in flight.

Imports: leelaz.selfplay and leelaz.training.trainer (inside the functions: a worker imports
only what its job needs; torch is loaded only by the trainer).
"""

from __future__ import annotations

import os


#: Self-play figures a job reports, summed over a generation's jobs (throughput in the log).
SUMMED = ("games_this_run", "moves", "playouts", "evaluations", "network_calls")


class JobFailed(Exception):
    """A job failed for good (raised by the executors); the first line says which and why."""


class SharedFolderMissing(RuntimeError):
    """The run folder is not visible where the job runs (a Ray node without the shared disk)."""


def _check_run_folder(spec: dict) -> None:
    marker = os.path.join(spec["run_dir"], "run.json")
    if not os.path.isfile(marker):
        raise SharedFolderMissing(
            f"the run folder {spec['run_dir']} is not visible on this worker's machine: with "
            "Ray on several machines it must be on a filesystem all nodes share")


def _optional(spec: dict, *names: str) -> dict:
    """The settings of `names` that the spec gives (None: leave the callee's default)."""
    return {name: spec[name] for name in names if spec.get(name) is not None}


def selfplay_job(spec: dict) -> dict:
    """Play this job's share of a generation's self-play games into spec['out_dir']."""
    from leelaz.selfplay import play_selfplay

    _check_run_folder(spec)
    os.makedirs(spec["out_dir"], exist_ok=True)
    summary = play_selfplay(spec["weights"], spec["out_dir"], spec["games"],
                            visits=spec["visits"], parallel=spec["parallel"],
                            seed=spec["seed"], cpu_only=spec["cpu_only"],
                            gpus=tuple(spec["gpus"]), progress=spec.get("progress", False),
                            resign_evidence=tuple(spec.get("resign_evidence", ())),
                            **_optional(spec, "max_moves", "network_backend",
                                        "dumbpass", "noise", "full_share", "cheap_visits",
                                        "forced_k", "checked_resign"))
    report = {name: getattr(summary, name) for name in SUMMED if hasattr(summary, name)}
    report["backend"] = str(getattr(summary, "backend", "") or "")
    return report


def match_job(spec: dict) -> dict:
    """Play shard spec['shard'] of spec['shards'] of the gating match (candidate = A, best =
    B) into spec['out_dir'] with SPRT; the result is the folder's (every shard's games)."""
    from leelaz.selfplay import play_match

    _check_run_folder(spec)
    os.makedirs(spec["out_dir"], exist_ok=True)
    result = play_match(spec["candidate"], spec["best"], spec["out_dir"],
                        max_games=spec["max_games"], sprt=spec.get("sprt", True),
                        visits=spec["visits"],
                        parallel=spec["parallel"], seed=spec["seed"],
                        cpu_only=spec["cpu_only"], gpus=tuple(spec["gpus"]),
                        progress=spec.get("progress", False),
                        shard=(spec.get("shard", 0), spec.get("shards", 1)),
                        **_optional(spec, "max_moves", "network_backend", "dumbpass"))
    return {"wins": int(result.wins), "losses": int(result.losses), "draws": int(result.draws),
            "games": int(result.games), "llr": float(result.llr), "decision": result.decision,
            "played": int(result.played), "moves": int(getattr(result, "moves", 0))}


def train_job(spec: dict) -> dict:
    """Go on with the run's training in spec['out_dir'] up to spec['steps'] steps in all on
    the window's chunks (from spec['init_weights'] when it has no checkpoint yet), and export
    the candidate to spec['export_name'] (resumable: a rerun continues the checkpoint)."""
    from leelaz.training.trainer import train

    _check_run_folder(spec)
    kwargs = _optional(spec, "lr", "checkpoint_seconds", "export_name", "lr_schedule",
                       "warmup_steps", "swa_every", "val", "val_external", "val_games",
                       "checkpoint_steps", "eval_steps", "eval_seconds", "bn_batches")
    result = train(spec["data"], spec["out_dir"], blocks=spec["blocks"],
                   filters=spec["filters"], init_weights=spec["init_weights"],
                   steps=spec["steps"], batch=spec["batch"], seed=spec["seed"],
                   device=spec.get("device", "auto"), resume=True,
                   progress=spec.get("progress", False), **kwargs)
    metrics = {k: v for k, v in (result.metrics or {}).items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"weights_path": os.fspath(result.weights_path), "steps_done": int(result.steps_done),
            "metrics": metrics}


class TrainerActor:
    """The trainer as one Ray actor (it holds the GPU share it was given while it trains)."""

    def train(self, spec: dict) -> dict:
        return train_job(spec)


#: Job names -> functions, so an executor can be told a job by name.
JOBS = {"selfplay": selfplay_job, "match": match_job, "train": train_job}
