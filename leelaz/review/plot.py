"""The winrate plot of a review: Black's winrate against the move number, the largest drops
marked. A PNG drawn with matplotlib (the `tools`/`zero` extra); without it, no plot.

Owns: `plot_available`, `write_plot`. Imports: matplotlib (lazily), files, review.report.
"""

from __future__ import annotations

from leelaz.files import atomic_open
from leelaz.game.coords import BLACK, WHITE
from leelaz.review.report import GameReport


def plot_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


#: Points a drop's label moves further from the curve when it would sit on the label of a
#: drop close before it (same side), so that a cluster of mistakes stays readable.
LABEL_STEP = 10
#: Moves within which two labels of one side are close enough to be staggered.
LABEL_NEAR = 5


def write_plot(report: GameReport, path) -> None:
    """Draw the plot and write it to `path` atomically. Each of the largest drops is the
    swing itself (a segment from the winrate before the move to the one after) with a marker
    and its move number: Black's below the curve (they pull it down), White's above."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(report.black_winrates)))
    ys = [100.0 * w for w in report.black_winrates]
    ax.grid(True, color="0.92", linewidth=0.6)
    ax.fill_between(xs, ys, 50, color="0.85")
    ax.plot(xs, ys, color="black", linewidth=1.1, label="Black's winrate")
    ax.axhline(50, color="0.5", linewidth=0.6, linestyle="--")
    for color, style, paint, below in ((BLACK, "v", "red", True), (WHITE, "^", "blue", False)):
        drops = sorted(report.drops(color), key=lambda m: m.move.number)
        level, last = 0, None
        for i, m in enumerate(drops):
            n = m.move.number
            ax.plot([n, n], [ys[n - 1], ys[n]], color=paint, linewidth=1.6)
            ax.plot([n], [ys[n]], style, color=paint, markersize=6, label=None if i else
                    f"{'Black' if color == BLACK else 'White'}'s largest drops")
            level = level + 1 if last is not None and n - last < LABEL_NEAR else 0
            last = n
            offset = 8 + LABEL_STEP * level
            ax.annotate(str(n), (n, ys[n]), textcoords="offset points",
                        xytext=(0, -offset if below else offset), ha="center",
                        va="top" if below else "bottom", fontsize=8, color=paint)
    black, white = report.players
    budget = (f"{report.visits} visits" if report.visits is not None
              else f"{report.seconds:g} s")
    ax.set_title(f"{black} (B) – {white} (W), {budget} a position", fontsize=10, loc="left")
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=8,
              frameon=False, borderaxespad=0.2)
    ax.set_xlabel("move")
    ax.set_ylabel("Black's winrate (%)")
    ax.set_xlim(0, max(1, len(xs) - 1))
    ax.set_ylim(0, 100)
    fig.tight_layout()
    with atomic_open(path, "wb") as f:
        fig.savefig(f, format="png")
