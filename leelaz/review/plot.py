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


def write_plot(report: GameReport, path) -> None:
    """Draw the plot and write it to `path` atomically."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(report.black_winrates)))
    ys = [100.0 * w for w in report.black_winrates]
    ax.fill_between(xs, ys, 50, color="0.85")
    ax.plot(xs, ys, color="black", linewidth=1.2, label="Black's winrate")
    ax.axhline(50, color="0.5", linewidth=0.6, linestyle="--")
    for color, style in ((BLACK, "v"), (WHITE, "^")):
        for i, m in enumerate(report.drops(color)):
            n = m.move.number
            ax.plot([n], [ys[n]], style, color="red" if color == BLACK else "blue",
                    markersize=6, label=None if i else
                    f"{'Black' if color == BLACK else 'White'}'s largest drops")
            ax.annotate(str(n), (n, ys[n]), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize=7)
    black, white = report.players
    ax.set_title(f"{black} (B) – {white} (W): Black's winrate", fontsize=9)
    ax.legend(loc="upper right", fontsize=7)
    ax.set_xlabel("move")
    ax.set_ylabel("Black's winrate (%)")
    ax.set_xlim(0, max(1, len(xs) - 1))
    ax.set_ylim(0, 100)
    fig.tight_layout()
    with atomic_open(path, "wb") as f:
        fig.savefig(f, format="png")
