"""The Zero loop: self-play with the best network, train a candidate, gate it, promote it.

`leelaz zero DIR` (leelaz/tools/zero.py) joins the pieces that exist on their own: self-play
and SPRT matches (leelaz.selfplay) and the trainer (leelaz.training.trainer). This package owns
only the orchestration, one file per idea:

- rundir.py: the run folder (its layout, the networks named by sha256, `best`, the
  per-generation records, the log, the lock) and every rule for writing it safely.
- loop.py: the generation loop (self-play until enough games, train on a window of recent
  chunks, gate with SPRT, promote), resumable after a kill at any moment.
- jobs.py: the units of work a worker runs (a share of a generation's self-play, a match,
  a training run): plain functions, the same under both executors.
- local_executor.py: runs jobs in local processes, retrying one whose process died.
- ray_executor.py: runs the same jobs as Ray tasks (self-play, matches) and a Ray actor (the
  trainer), on one machine or a cluster.
- status.py: the generation table and the Elo plot of `leelaz zero DIR --status`.

Imports: leelaz.files, leelaz.backends.weights (a network's size), and, inside the jobs only,
leelaz.selfplay and leelaz.training.trainer. Ray, matplotlib and tqdm are optional (the
`zero` extra) and imported where they are used.
"""
