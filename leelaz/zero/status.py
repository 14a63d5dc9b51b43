"""`leelaz zero DIR --status`: the generation table and a PNG plot of Elo over generations.

Elo of a candidate over the best it played: 400 log10(p / (1 - p)) with p its score share
(draws count half), the usual logistic model. A shut-out (p = 0 or 1) has no finite estimate,
so it is shown as the bound computed as if one more game had been drawn (p = (W + D/2 + 1/2)
/ (N + 1)) and marked with '>' or '<'. The run's Elo curve is the sum of the promoted
candidates' estimates along the chain of best networks, starting at 0 for the first network
(as Leela Zero's graph did; SPRT stops early on good streaks, so these sums lean high).
Without gating there is no match and so no estimate.

The fixed ladder's table and panels and the loop's health per generation come from
leelaz.zero.ladder.

The estimate is selfplay/sprt.py's `elo_with_draws`, the one owner of Elo arithmetic.

Imports: leelaz.zero.rundir, leelaz.zero.ladder, leelaz.files, leelaz.selfplay.sprt;
matplotlib (optional, only for the plot).
"""

from __future__ import annotations

import os

from leelaz.files import atomic_open
from leelaz.selfplay.sprt import elo_with_draws
from leelaz.zero.rundir import RunDir


def rows(run: RunDir) -> list[dict]:
    """One row per generation plus the starting network (generation 0)."""
    info = run.info()
    out = [{"gen": 0, "network": info.start, "games": None, "steps": None, "score": "",
            "llr": None, "elo": None, "mark": "", "promoted": True, "best_elo": 0.0,
            "state": "start", "rate": None}]
    best_elo = 0.0
    for r in run.generations():
        sp, tr, gate = r.get("selfplay", {}), r.get("train", {}), r.get("gate", {})
        estimate = None
        if gate.get("done") and gate.get("gated"):
            estimate = elo_with_draws(gate["wins"], gate["losses"], gate.get("draws", 0))
        candidate_elo = best_elo + estimate[0] if estimate else None
        if r.get("promoted") and estimate:
            best_elo = candidate_elo
        state = ("done" if r.get("done") else "gating" if tr.get("done") else
                 "training" if sp.get("done") else "self-play")
        score = ""
        if gate.get("done") and gate.get("gated"):
            score = f"{gate['wins']}-{gate['losses']}" + (f"-{gate['draws']}"
                                                          if gate.get("draws") else "")
        out.append({"gen": r["gen"], "network": tr.get("candidate", ""),
                    "games": sp.get("games"), "steps": tr.get("steps_done"), "score": score,
                    "llr": gate.get("llr") if gate.get("gated") and
                    gate.get("rule", "lz") == "lz" else None,  # other rules: no SPRT
                    "elo": candidate_elo, "mark": estimate[1] if estimate else "",
                    "promoted": r.get("promoted") if r.get("done") else None,
                    "best_elo": best_elo, "state": state,
                    "rate": (3600 * sp["played"] / sp["seconds"]
                             if sp.get("done") and sp.get("seconds") else None)})
    return out


def table(run: RunDir) -> str:
    """The generation table as text."""
    info = run.info()
    lines = [f"run {run.root}: {info.size} network, started from {info.start[:12]}, "
             f"best now {run.best_id()[:12]}",
             f"{'gen':>4}  {'network':12}  {'games':>6}  {'games/h':>7}  {'steps':>6}  "
             f"{'match':>9}  {'LLR':>6}  {'Elo':>7}  promoted"]
    for row in rows(run):
        def cell(value, fmt):
            width = "".join(ch for ch in fmt if ch.isdigit() or ch == ".").split(".")[0]
            return format(value, fmt) if value is not None else format("-", ">" + width)
        promoted = {True: "yes", False: "no", None: f"({row['state']})"}[row["promoted"]]
        if row["gen"] == 0:
            promoted = "(start)"
        elo_text = "-" if row["elo"] is None else f"{row['mark']}{row['elo']:+.0f}"
        lines.append(f"{row['gen']:>4}  {row['network'][:12] or '-':12}  "
                     f"{cell(row['games'], '>6')}  {cell(row['rate'], '>7.0f')}  "
                     f"{cell(row['steps'], '>6')}  {row['score'] or '-':>9}  "
                     f"{cell(row['llr'], '>6.2f')}  {elo_text:>7}  {promoted}")
    # The fixed ladder and the loop's health (leelaz.zero.ladder), when there are any.
    from leelaz.zero.ladder import health_lines, ladder_lines
    lines += ladder_lines(run) + health_lines(run)
    return "\n".join(lines)


def plot(run: RunDir, path: str | os.PathLike | None = None) -> str:
    """Write the Elo plot (PNG) atomically; returns its path. ImportError without
    matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    path = os.fspath(path or run.root / "status.png")
    data = rows(run)
    # With a ladder, two more panels: its Elo against self-play games and hours.
    from leelaz.zero.ladder import ladder_rows, plot_ladder
    if any(r["elo"] is not None for r in ladder_rows(run)):
        fig, (ax, *ladder_axes) = plt.subplots(1, 3, figsize=(18, 4.5), dpi=100)
        plot_ladder(run, ladder_axes)
        fig.subplots_adjust(left=0.05, right=0.98, wspace=0.35)
    else:
        fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    if not any(r["elo"] is not None for r in data[1:]):  # nothing gated: nothing to step
        _plot_held_out(run, ax)
        return _save(fig, path, plt)
    ax.step([r["gen"] for r in data], [r["best_elo"] for r in data], where="post",
            label="best network", color="tab:blue")
    for promoted, colour, label in ((True, "tab:green", "candidate promoted"),
                                    (False, "tab:red", "candidate rejected")):
        pts = [r for r in data[1:] if r["elo"] is not None and r["promoted"] is promoted]
        if pts:
            ax.scatter([r["gen"] for r in pts], [r["elo"] for r in pts], color=colour,
                       label=label, zorder=3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("generation")
    ax.set_ylabel("Elo over the first network")
    ax.set_title(f"leelaz zero {run.root.name} ({run.info().size})")
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    return _save(fig, path, plt)


def _plot_held_out(run: RunDir, ax) -> None:
    """A run without gating has no match Elo: its first panel shows what the trainer measured
    on the fixed external games instead (policy top-1 and cross-entropy per generation)."""
    from matplotlib.ticker import MaxNLocator

    from leelaz.zero.ladder import held_out_metrics

    points = [(r["gen"], held_out_metrics(r)) for r in run.generations()]
    points = [(gen, m) for gen, m in points if "top1" in m]
    ax.set_title(f"leelaz zero {run.root.name} ({run.info().size}): held-out games")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("generation")
    ax.grid(alpha=0.3)
    if not points:
        ax.text(0.5, 0.5, "no gating matches and no held-out games (--val-sgf)",
                ha="center", va="center", transform=ax.transAxes)
        return
    ax.plot([g for g, _ in points], [100 * m["top1"] for _, m in points], "o-",
            color="tab:blue", label="policy top-1 (%)")
    ax.set_ylabel("policy top-1 on the held-out games (%)")
    if all("ce" in m for _, m in points):
        twin = ax.twinx()
        twin.plot([g for g, _ in points], [m["ce"] for _, m in points], "s--",
                  color="tab:gray", label="policy cross-entropy")
        twin.set_ylabel("policy cross-entropy")
    ax.legend(loc="upper left")


def _save(fig, path: str, plt) -> str:
    try:
        with atomic_open(path, "wb") as f:  # whole or not at all, with the user's umask
            fig.savefig(f, format="png")
    finally:
        plt.close(fig)
    return path
