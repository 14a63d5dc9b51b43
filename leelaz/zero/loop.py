"""The generation loop of `leelaz zero`: self-play -> train -> gate -> promote, resumable.

One generation, as Leela Zero's server and autogtp did it between them, on one run folder:
1. self-play with the best network until the generation has `games_per_gen` finished games
   (split into one job per worker, each job in its own folder, so a rerun or a Ray retry of a
   job resumes exactly its own games);
2. go on with the run's one training (DIR/train/run: model, optimizer state, step count and
   snapshot average, never restarted from the best network; the learning rate a schedule of
   the run's total steps) on a window of the newest games' chunks, counted in positions and
   growing with the run (KataGo's window; `window` games when given), for `reuse` draws per
   new position (or `steps`); one game in `holdout` of each generation is never trained on
   and the newest generation's are the validation set, with the fixed `val_sgf` games; the
   candidate is the exported average of the recent snapshots (Leela Zero's SWA). The window,
   the validation games and the step target are fixed in train/gNNNN before training
   starts, so a resumed trainer sees the same data and stops at the same step;
3. gate: a match candidate vs best decided by the run's rule (leelaz.zero.gate: the server's
   SPRT, Elo 0/35, alpha = beta = 0.05; a win rate over N games, KataGo's; or none, minigo and
   KataGo's style: every candidate is promoted); played by
   one job per worker into one folder (each its shard of the games; the SPRT's stop is the
   folder's, so together they are one match), the number of jobs fixed once as self-play's;
4. promote: `best` names the candidate if it passed (H1), else it stays. The gate decides
   only which network plays self-play: the training goes on either way.

The generation record (generations/NNNN.json) is rewritten after each phase and is the only
place that says a phase is done; `best` is rewritten before the record says "done", so a kill
between the two repeats an idempotent promotion. Everything a phase produced before the kill
is found again from its files: finished games from their SGFs, the trainer from its
checkpoint, the match from its SGFs. `generations` counts all generations of the run, so the
same command rerun after a kill (or a time limit) goes on until the run has that many.

Imports: leelaz.zero.rundir, leelaz.zero.jobs (JobFailed, the reported figures), leelaz.files,
leelaz.progress.
"""

from __future__ import annotations

import json
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from leelaz.files import write_text_atomic
from leelaz.selfplay.sprt import MIN_GAMES_TO_PASS
from leelaz.zero import gate as gate_rules
from leelaz.zero.jobs import SUMMED, JobFailed
from leelaz.zero.rundir import RunDir, RunInfo, finished_games


#: The window's c: every position up to this many (KataGo's 250k rows, for far bigger runs).
WINDOW_MIN = 100_000


@dataclass(frozen=True)
class Settings:
    """How the loop plays and trains; may change between invocations of the same run
    (a generation keeps the values it started a phase with)."""

    visits: int = 1601  # self-play visits per move (autogtp's -v 1601)
    match_visits: int = 1600  # gating match visits (the server's 1600)
    games_per_gen: int = 64  # new self-play games before each training
    generations: int | None = None  # stop when the run has this many; None = never
    window: int | None = None  # games (newest first); None: window_size() of the positions
    window_min: int = WINDOW_MIN  # positions: the window holds everything up to this many
    steps: int | None = 100  # training steps per generation; None: reuse x new positions
    reuse: float = 4.0  # steps=None: samples drawn per new position over its life
    batch: int = 64  # training batch size
    lr: float | None = None  # the run's constant learning rate; None: DEFAULT_LR
    lr_schedule: str | None = None  # "LR[,STEP:LR...]" by the run's total steps (wins over lr)
    warmup_steps: int = 100  # the run's first steps ramp the learning rate up
    swa_snapshots: int = 16  # snapshots a generation into the average (~1 generation); 0: none
    holdout: int = 16  # one game in N of each generation is validation, never trained on
    val_sgf: tuple[str, ...] = ()  # a fixed external validation set (e.g. 9-dan games)
    val_games: int = 500  # games of val_sgf used
    checkpoint_seconds: float | None = None  # how often the trainer saves; None: its default
    gate: bool = True  # False: promote every candidate (no match)
    gate_rule: str = "lz"  # the gate's rule (leelaz.zero.gate): lz, winrate:P:N or none
    match_games: int = 400  # the server's cap on a gating match
    parallel: int = 8  # games in flight per worker, their leaves batched together
    max_moves: int | None = None  # end games after this many moves; None: autogtp's 722
    dumbpass: bool = True  # -d (autogtp, the server): pass only as the search picks it
    noise: bool = True  # -n (autogtp): Dirichlet noise at self-play roots
    # KataGo's self-play additions (leelaz.selfplay.play_selfplay): the share of moves given
    # the full search and recorded, the visits of the others (0: a full search's / 8),
    # forced playouts with target pruning (k; 0: off), and resignation only once the
    # run's no-resign games show it is safe.
    full_share: float = 1.0
    cheap_visits: int = 0
    forced_k: float = 0.0
    checked_resign: bool = False
    workers: int = 1  # self-play jobs at once
    cpu_only: bool = False
    on_cpu: bool = False  # self-play's network runs on the CPU (no GPU, or --cpu-only)
    gpus: tuple[int, ...] = ()
    network_backend: str = "auto"  # --backend: auto (OpenCL/NumPy) or torch
    progress: bool = True
    selfplay_only: bool = False  # stop after the current generation's self-play


def machine_defaults(has_gpu: bool) -> dict:
    """Defaults sized for the machine: on a GPU many games in flight per worker (the batch
    that feeds it), bigger generations and batches; on CPUs small ones, so that a generation
    takes minutes rather than hours. Steps: None, from the new positions (steps_for)."""
    if has_gpu:
        return dict(games_per_gen=256, parallel=64, steps=None, batch=256)
    return dict(games_per_gen=32, parallel=8, steps=None, batch=64)


def match_parallel(parallel: int, shards: int) -> int:
    """Games in flight per shard of a gating match: no more than `parallel`, and no more than
    the shards together need to reach the first game at which the SPRT may pass a candidate
    (game MIN_GAMES_TO_PASS + 1). The SPRT reads the games in index order, so a first wave
    dealing the whole match at once plays the games past an early decision for nothing, and
    every shard's games share its rounds, so they all finish later (docs/performance.md)."""
    return max(1, min(parallel, math.ceil((MIN_GAMES_TO_PASS + 1) / max(1, shards))))


#: The default window, in generations' worth of games, where a window in games is asked for
#: (tools/zero.py); without one the window is counted in positions (window_size).
WINDOW_GENERATIONS = 8
#: Above this many visits, self-play on the CPU is said to be slow before the first generation
#: whose pace is known (`leelaz selfplay`'s own estimate measures the network instead).
CPU_QUICK_VISITS = 100
#: The run's constant learning rate when none is given (AdamW, batch 64-256).
DEFAULT_LR = 0.001
#: KataGo's window (python/shuffle.py): all rows up to c, then growing as
#: c * (1 + beta * ((N / c)^alpha - 1) / alpha) with N the run's rows so far.
WINDOW_ALPHA = 0.65
WINDOW_BETA = 0.4
#: One record of a Leela Zero training chunk is 19 lines (training/records.py).
RECORD_LINES = 19


def window_size(total: int, minimum: int) -> int:
    """Positions in the window when the run has `total`: all of them up to `minimum`, then
    KataGo's sub-linear growth, so the window follows the run without holding the first,
    weakest games for ever."""
    if total <= minimum:
        return total
    grown = ((total / minimum) ** WINDOW_ALPHA - 1.0) / WINDOW_ALPHA
    return int(minimum * (1.0 + WINDOW_BETA * grown))


def chunk_positions(path) -> int:
    """Records in a (gzip) training chunk, counted by its lines."""
    import gzip

    try:
        with gzip.open(path, "rb") as f:
            return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b"")) \
                // RECORD_LINES
    except (OSError, EOFError):
        return 0


def steps_for(new_positions: int, reuse: float, batch: int) -> int:
    """Training steps for a generation that adds `new_positions`: each position is drawn
    about `reuse` times over its life in the window, whatever the window's size (a position
    stays about window/new generations and is drawn steps*batch/window times in each), which
    caps the reuse of a sample as KataGo does (4-8) and Leela Zero's one position in 16
    (DOWN_SAMPLE, training/tf/parse.py) did."""
    return max(1, math.ceil(reuse * new_positions / max(1, batch)))



def training_phases(phases: dict, seconds: float) -> str:
    """`: load 4.0 s, steps 12.1 s, ...` for the log, from the trainer's seconds by phase
    (its time_<phase> figures, training/trainer.py PHASES) and the job's whole time; the
    rest is the job's start (a fresh process, torch's import, CUDA's start). Empty when the
    trainer gave none (a job that had finished before the loop was killed, asked again)."""
    if not phases:
        return ""
    rest = seconds - sum(phases.values())
    return ": " + ", ".join(f"{name} {v:.1f} s" for name, v in phases.items()) + \
        f", start and the rest {max(0.0, rest):.1f} s"

class _Bar:
    """leelaz.progress's bar (tqdm on a terminal, else nothing), moved to absolute counts."""

    def __init__(self, total: int, desc: str, initial: int, enabled: bool):
        from leelaz.progress import progress

        self._bar = progress(total, desc, unit="game", enabled=enabled, initial=initial)
        self._n = initial

    def update_to(self, n: int) -> None:
        if n != self._n:
            self._bar.update(n - self._n)
            self._n = n

    def close(self) -> None:
        self._bar.close()


class ZeroLoop:
    """Runs generations on a RunDir with an executor (local processes or Ray)."""

    def __init__(self, run: RunDir, info: RunInfo, settings: Settings, executor,
                 say: Callable[[str], None]):
        self.run, self.info, self.s, self.executor = run, info, settings, executor
        self._say = say

    def say(self, line: str) -> None:
        self.run.log(line)
        self._say(line)

    # ---- the loop -------------------------------------------------------------------------
    def run_until_done(self) -> int:
        """Run generations until the run has `generations` of them; the number finished now."""
        finished = 0
        while True:
            records = self.run.generations()
            done = sum(1 for r in records if r.get("done"))
            if self.s.generations is not None and done >= self.s.generations:
                return finished
            if records and not records[-1].get("done"):
                record = records[-1]
                self.say(f"generation {record['gen']}: resuming")
            else:
                record = self._new_generation(records[-1]["gen"] + 1 if records else 1)
            if self.s.selfplay_only:
                if not record.get("selfplay", {}).get("done"):
                    self.selfplay(record)
                return finished
            self.generation(record)
            finished += 1

    def _new_generation(self, gen: int) -> dict:
        record = {"gen": gen, "best": self.run.best(), "done": False,
                  "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self.run.save_generation(record)
        self.say(f"generation {gen}: self-play with {record['best'][:12]}")
        return record

    def generation(self, record: dict) -> None:
        with self._way_out(record, "self-play"):
            if not record.get("selfplay", {}).get("done"):
                self.selfplay(record)
        with self._way_out(record, "training"):
            if not record.get("train", {}).get("done"):
                self.train(record)
        with self._way_out(record, "gating match"):
            if not record.get("gate", {}).get("done"):
                self.gate(record)
        self.promote(record)

    @contextmanager
    def _way_out(self, record: dict, phase: str):
        """A job that failed for good says where the details are and how to get out of a
        run that would fail the same way on every rerun (a broken network, say)."""
        try:
            yield
        except JobFailed as exc:
            first, _, rest = str(exc).partition("\n")
            gen = record["gen"]
            redo = [self.run.generation_path(gen)]
            if phase != "self-play":
                redo.append(self.run.train_dir(gen))
            raise JobFailed(
                f"generation {gen}'s {phase} failed: {first}; details in "
                f"{self.run.root / 'log.txt'}. Rerun to retry; if it fails the same way, "
                f"delete {' and '.join(str(p) for p in redo)} to play generation {gen} "
                "again from its games, or write an earlier network's id (networks/) into "
                f"{self.run.root / 'best'}" + ("\n" + rest if rest else "")) from None

    def _seed(self, gen: int, part: int) -> int:
        return (self.info.seed * 1_000_003 + gen * 1_009 + part) % 2**63

    # ---- 1. self-play ---------------------------------------------------------------------
    def selfplay(self, record: dict) -> None:
        gen, best = record["gen"], record["best"]
        folder = self.run.inside(self.run.selfplay_dir(gen, best), "self-play folder")
        sp = record.setdefault("selfplay", {})
        if "jobs" not in sp:  # fixed once: a rerun with other --workers resumes the same jobs
            n, k = self.s.games_per_gen, max(1, min(self.s.workers, self.s.games_per_gen))
            sp.update(dir=str(folder.relative_to(self.run.root)), visits=self.s.visits,
                      dumbpass=self.s.dumbpass, noise=self.s.noise,
                      full_share=self.s.full_share, cheap_visits=self.s.cheap_visits,
                      forced_k=self.s.forced_k, checked_resign=self.s.checked_resign,
                      jobs=[n // k + (1 if i < n % k else 0) for i in range(k)],
                      seconds=0.0, played=0)
            self.run.save_generation(record)
        specs = [dict(run_dir=str(self.run.root), weights=str(self.run.network_path(best)),
                      out_dir=str(folder / f"j{i:02d}"), games=games, visits=sp["visits"],
                      parallel=self.s.parallel, seed=self._seed(gen, i),
                      cpu_only=self.s.cpu_only, gpus=list(self.s.gpus),
                      max_moves=self.s.max_moves, network_backend=self.s.network_backend,
                      dumbpass=sp.get("dumbpass", True), noise=sp.get("noise", True),
                      full_share=sp.get("full_share", 1.0),
                      cheap_visits=sp.get("cheap_visits", 0), forced_k=sp.get("forced_k", 0.0),
                      checked_resign=sp.get("checked_resign", False),
                      resign_evidence=self._resign_evidence(gen))
                 for i, games in enumerate(sp["jobs"])]
        target = sum(sp["jobs"])
        before = len(finished_games(folder))
        estimate = self._selfplay_estimate(gen, sp["visits"], target - before)
        if estimate:
            self.say(f"generation {gen}: {target - before} self-play games to play, "
                     f"{estimate}")
        elif self.s.on_cpu and sp["visits"] > CPU_QUICK_VISITS and target > before:
            self.say(f"generation {gen}: {target - before} self-play games at {sp['visits']} "
                     "visits on the CPU: with a network of Leela Zero's size a move takes "
                     "seconds (the shipped 6x128: about 13 s at 1601 visits on 2 cores), so a "
                     "generation can take hours; for a first run try -v 16 --games-per-gen 8")
        start = time.monotonic()
        bar = _Bar(target, f"gen {gen} self-play", before, self.s.progress)
        try:
            results = self.executor.run("selfplay", specs,
                                        tick=lambda: bar.update_to(len(finished_games(folder))))
        finally:
            bar.close()
        games = len(finished_games(folder))
        if games < target:
            raise JobFailed(f"generation {gen}: self-play ended with {games} of {target} "
                            f"games in {folder}")
        seconds = time.monotonic() - start
        for name in SUMMED:  # what the jobs report of this call (retried jobs: last try)
            sp[name] = sp.get(name, 0) + sum(r.get(name, 0) for r in results)
        backends = {r.get("backend") for r in results} - {"", None}
        sp["backends"] = sorted(set(sp.get("backends", [])) | backends)
        sp.update(games=games, seconds=sp["seconds"] + seconds,
                  played=sp["played"] + games - before, done=True)
        self.run.save_generation(record)
        per_second = 1.0 / sp["seconds"] if sp["seconds"] > 0 else 0.0
        self.say(f"generation {gen}: {games} self-play games ({games - before} now, in "
                 f"{seconds:.0f} s; {3600 * sp['played'] * per_second:.0f} games/hour, "
                 f"{sp['moves'] * per_second:.1f} moves/s, "
                 f"{sp['playouts'] * per_second:.0f} playouts/s; "
                 f"{', '.join(sp['backends']) or 'backend not reported'})")

    def _resign_evidence(self, gen: int, generations: int = 4) -> list[str]:
        """The job folders of the last `generations` generations' self-play before `gen`:
        their no-resign games decide whether checked resignation may resign."""
        earlier = [r for r in self.run.generations() if r["gen"] < gen][-generations:]
        folders = []
        for record in earlier:
            folder = self.run.root / record.get("selfplay", {}).get("dir", "-")
            if folder.is_dir():
                folders += sorted(str(p) for p in folder.iterdir() if p.is_dir())
        return folders

    def _selfplay_estimate(self, gen: int, visits: int, games: int) -> str:
        """`about 12 min at generation 3's pace`: the newest finished self-play at the same
        visits, its games per second (all workers together); '' without one."""
        for record in reversed(self.run.generations()):
            sp = record.get("selfplay", {})
            if record["gen"] < gen and sp.get("done") and sp.get("visits") == visits \
                    and sp.get("played") and sp.get("seconds"):
                seconds = games * sp["seconds"] / sp["played"]
                shown = f"{seconds / 3600:.1f} h" if seconds >= 5400 else \
                    f"{max(1, round(seconds / 60))} min"
                return f"about {shown} at generation {record['gen']}'s pace"
        return ""

    # ---- 2. training ----------------------------------------------------------------------
    def held_out(self, index: int) -> bool:
        """Whether game `index` (in finished_games order) of a generation is validation."""
        return self.s.holdout > 0 and index % self.s.holdout == self.s.holdout - 1

    def _games(self, record: dict, held_out: bool) -> list:
        folder = self.run.root / record.get("selfplay", {}).get("dir", "-")
        return [chunks for i, (_sgf, chunks) in enumerate(finished_games(folder))
                if self.held_out(i) == held_out]

    def window(self, gen: int, positions: int | None = None) -> tuple[list[str], int]:
        """Chunks of the newest finished games up to generation `gen` (relative to DIR) that
        are not held out, and how many games they are: `window` games, or without it games
        until they hold `positions`."""
        chunks: list[str] = []
        games = counted = 0
        for record in reversed([r for r in self.run.generations() if r["gen"] <= gen]):
            for game_chunks in reversed(self._games(record, held_out=False)):
                if self.s.window is not None and games >= self.s.window:
                    return chunks, games
                if self.s.window is None and positions is not None and counted >= positions:
                    return chunks, games
                chunks += [str(c.relative_to(self.run.root)) for c in game_chunks]
                counted += sum(chunk_positions(c) for c in game_chunks) \
                    if self.s.window is None else 0
                games += 1
        return chunks, games

    def validation(self, record: dict) -> list[str]:
        """The held-out games' chunks of generation `record` (relative to DIR)."""
        return [str(c.relative_to(self.run.root))
                for game_chunks in self._games(record, held_out=True) for c in game_chunks]

    def _previous_train(self, gen: int) -> dict:
        earlier = [r for r in self.run.generations() if r["gen"] < gen]
        return earlier[-1].get("train", {}) if earlier else {}

    def train(self, record: dict) -> None:
        """Go on with the run's one training (DIR/train/run: model, optimizer state, step
        count, snapshot average) up to this generation's total step count, and take its
        exported average as the candidate: never a restart from the best network, and the
        learning rate is the run's schedule at its total step (Leela Zero's training never
        restarted either, training/tf/tfprocess.py). The window, the validation games and
        the step target are fixed in the record before training starts, so a trainer killed
        and started again sees the same data and stops at the same step."""
        gen, best = record["gen"], record["best"]
        folder = self.run.inside(self.run.train_dir(gen), "training folder")
        folder.mkdir(parents=True, exist_ok=True)
        tr = record.setdefault("train", {})
        window_file, val_file = folder / "window.txt", folder / "val.txt"
        if "target_step" not in tr or not window_file.is_file() or not val_file.is_file():
            before = self._previous_train(gen)
            new = sum(chunk_positions(self.run.root / c)
                      for c in self._newest_chunks(record))
            total = before.get("positions_total", 0) + new
            size = window_size(total, self.s.window_min)
            chunks, games = self.window(gen, size)
            val = self.validation(record)
            write_text_atomic(window_file, "".join(c + "\n" for c in chunks))
            write_text_atomic(val_file, "".join(c + "\n" for c in val))
            steps = self.s.steps or steps_for(new, self.s.reuse, self.s.batch)
            tr.update(steps=steps, batch=self.s.batch, window_games=games,
                      window_chunks=len(chunks), window_positions=size, new_positions=new,
                      positions_total=total, val_chunks=len(val), seconds=0.0,
                      target_step=before.get("target_step", 0) + steps,
                      lr_schedule=self.s.lr_schedule or repr(self.s.lr or DEFAULT_LR),
                      swa_every=max(1, steps // self.s.swa_snapshots)
                      if self.s.swa_snapshots else 0)
            self.run.save_generation(record)
        data = [str(self.run.root / c) for c in window_file.read_text().split("\n") if c]
        val = [str(self.run.root / c) for c in val_file.read_text().split("\n") if c]
        self.say(f"generation {gen}: training {tr['steps']} steps (batch {tr['batch']}, up to "
                 f"step {tr['target_step']} of the run) on {tr['window_games']} games")
        spec = dict(run_dir=str(self.run.root), data=data, out_dir=str(self.run.root / "train"
                                                                         / "run"),
                    export_name=str(folder / f"leelaz-{self.info.size}.txt.gz"),
                    blocks=self.info.blocks, filters=self.info.filters,
                    init_weights=str(self.run.network_path(best)), steps=tr["target_step"],
                    batch=tr["batch"], lr_schedule=tr["lr_schedule"],
                    warmup_steps=self.s.warmup_steps, swa_every=tr["swa_every"],
                    val=val, val_external=list(self.s.val_sgf), val_games=self.s.val_games,
                    seed=self.info.seed, checkpoint_seconds=self.s.checkpoint_seconds,
                    progress=self.s.progress and self.executor.name == "local")
        start = time.monotonic()
        result = self.executor.train(spec)
        candidate = self.run.add_network(result["weights_path"])
        fresh = result.get("metrics") or {}
        reported = fresh or self._final_report(result["steps_done"])
        metrics = {k: v for k, v in reported.items() if k.startswith(("val_", "ext_", "train_"))}
        # Where this call's time went (a finished job asked again reports none: kept as was).
        phases = {k[len("time_"):]: v for k, v in fresh.items() if k.startswith("time_")}
        seconds = time.monotonic() - start
        tr.update(candidate=candidate, steps_done=result["steps_done"], done=True,
                  seconds=tr["seconds"] + seconds, metrics=metrics)
        if phases:
            tr["phases"] = phases
        self.run.save_generation(record)
        self.say(f"generation {gen}: training took {seconds:.0f} s"
                 + training_phases(phases, seconds))
        shown = " ".join(f"{k} {metrics[k]:.3f}" for k in ("val_top1", "val_policy_ce",
                                                           "val_value_mse", "ext_top1",
                                                           "ext_policy_ce", "ext_value_mse")
                         if k in metrics)
        self.say(f"generation {gen}: candidate {candidate[:12]} after "
                 f"{result['steps_done']} steps" + (f" ({shown})" if shown else ""))

    def _final_report(self, step: int) -> dict:
        """The trainer's last report at `step` from its metrics.jsonl: a trainer that had
        finished before the loop was killed reports nothing when asked again."""
        try:
            lines = (self.run.root / "train" / "run" / "metrics.jsonl").read_text().splitlines()
            last = json.loads(lines[-1]) if lines else {}
        except (OSError, ValueError):
            return {}
        return last if last.get("step") == step else {}

    def _newest_chunks(self, record: dict) -> list[str]:
        """This generation's training chunks (held-out games excluded), relative to DIR."""
        return [str(c.relative_to(self.run.root))
                for game_chunks in self._games(record, held_out=False) for c in game_chunks]

    # ---- 3. gating ------------------------------------------------------------------------
    def gate(self, record: dict) -> None:
        gen, best, candidate = record["gen"], record["best"], record["train"]["candidate"]
        gate = record.setdefault("gate", {})
        if "gated" not in gate:
            folder = self.run.inside(self.run.match_dir(gen, candidate, best), "match folder")
            rule = gate_rules.parse(self.s.gate_rule if self.s.gate else "none")
            gate.update(gated=rule.plays_match, rule=rule.text,
                        dir=str(folder.relative_to(self.run.root)),
                        max_games=rule.match_games(self.s.match_games),
                        visits=self.s.match_visits, dumbpass=self.s.dumbpass, seconds=0.0)
            self.run.save_generation(record)
        rule = gate_rules.parse(gate.get("rule", "lz"))  # the generation keeps its rule
        if not gate["gated"]:
            gate["done"] = True
            self.run.save_generation(record)
            return
        if "shards" not in gate:  # fixed once, as self-play's jobs: a rerun resumes the same
            gate["shards"] = max(1, min(self.s.workers, (gate["max_games"] + 1) // 2))
            self.run.save_generation(record)
        folder = self.run.root / gate["dir"]
        self.say(f"generation {gen}: match {candidate[:12]} (candidate) vs "
                 f"{best[:12]} (best), {rule.describe()}, at most {gate['max_games']} games")
        # One match played by `shards` jobs at once into one folder, as self-play is: each
        # job plays its share of the games (selfplay/network_match.py's shards), and every
        # job stops starting games once the SPRT has decided on the games of them all.
        specs = [dict(run_dir=str(self.run.root), out_dir=str(folder),
                      candidate=str(self.run.network_path(candidate)),
                      best=str(self.run.network_path(best)),
                      max_games=gate["max_games"], visits=gate["visits"],
                      parallel=(match_parallel(self.s.parallel, gate["shards"])
                                if rule.sequential else self.s.parallel),
                      sprt=rule.sequential,
                      seed=self._seed(gen, 777),
                      shard=shard, shards=gate["shards"],
                      cpu_only=self.s.cpu_only, gpus=list(self.s.gpus),
                      max_moves=self.s.max_moves, network_backend=self.s.network_backend,
                      dumbpass=gate.get("dumbpass", True))
                 for shard in range(gate["shards"])]
        start = time.monotonic()
        bar = _Bar(gate["max_games"], f"gen {gen} match", 0, self.s.progress)

        def tick() -> None:
            bar.update_to(len(list(folder.rglob("[!.]*.sgf"))) if folder.is_dir() else 0)
        try:
            results = self.executor.run("match", specs, tick=tick)
        finally:
            bar.close()
        # Each job returns the folder's result when it ended; the folder only gains games, so
        # the one that saw the most is the last, which holds every job's games.
        result = dict(max(results, key=lambda r: (r.get("played", r["games"]), r["games"])))
        result["moves"] = sum(r.get("moves", 0) for r in results)
        if not rule.sequential:  # a match of fixed length: the rule, not the SPRT, decides
            result["decision"] = rule.decide(result["wins"], result["losses"],
                                             result["draws"])
        gate.update(result, done=True, seconds=gate["seconds"] + time.monotonic() - start)
        self.run.save_generation(record)
        self.say(f"generation {gen}: match {result['wins']}-{result['losses']}"
                 f"{'-%d' % result['draws'] if result['draws'] else ''} in "
                 f"{result['games']} games, LLR {result['llr']:.2f}, "
                 f"decision {result['decision'] or 'none'}"
                 + (f" ({result['played']} games played: the decision fell at game "
                    f"{result['games']} in their order)"
                    if result.get("played", 0) > result["games"] else ""))

    # ---- 4. promotion ---------------------------------------------------------------------
    def promote(self, record: dict) -> None:
        gate, candidate = record["gate"], record["train"]["candidate"]
        promoted = (not gate["gated"]) or gate.get("decision") == "H1"
        if promoted:
            self.run.set_best(candidate)  # before "done": a kill here repeats this, harmlessly
        record.update(promoted=promoted, done=True,
                      finished=time.strftime("%Y-%m-%dT%H:%M:%S"))
        self.run.save_generation(record)
        self.say(f"generation {record['gen']}: "
                 + (f"promoted {candidate[:12]}" if promoted
                    else f"rejected {candidate[:12]}; best stays {record['best'][:12]}"))
