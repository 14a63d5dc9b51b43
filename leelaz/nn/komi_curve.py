"""`dyn_komi_test`: is a network's winrate monotone in its komi? (docs/dynamic-komi.md §5)

Owns: the fork's test (`komi_test`: the komi grid, the sums of the rises, the verdict and the
lines it prints) and `network_curve`, the side-to-move winrate of a position as a function of
the network komi, evaluated in batches. Imports: numpy, game.coords, nn.network (evaluate).

The fork walks k = -300.0 ... 0.0 and 0.5 ... 300.0 in steps of 0.5. In each half, every rise
of the winrate w(k) over w(previous k) is added to a score (a monotone decreasing curve adds
nothing) and its komi listed; the negative half starts from 1 - w(-300.5) (the curve should
start at 1), the positive half ends with + w(300) (it should end at 0). Sums are float32, as in
the fork. A score <= 0.05 is good; the verdict codes say which half (if any) is usable:
0 good, 1 unusable, 2 use --neg (only the negative half is good), 3 use --pos.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from leelaz.game.coords import BLACK

GOOD, UNUSABLE, USE_NEG, USE_POS = 0, 1, 2, 3
THRESHOLD = 0.05
START = -300.5
NEGATIVE = tuple(-300.0 + 0.5 * i for i in range(601))  # -300.0 .. 0.0
POSITIVE = tuple(0.5 + 0.5 * i for i in range(600))  # 0.5 .. 300.0
GRID = (START,) + NEGATIVE + POSITIVE

VERDICTS = {
    GOOD: "Weight file is of good quality for dynamic komi!",
    UNUSABLE: "Weight file is unusable for dynamic komi. Sorry.",
    USE_NEG: "Weight file is of mediocre quality for dynamic komi. Use with the option --neg.",
    USE_POS: "Weight file is of mediocre quality for dynamic komi. Use with the option --pos.",
}


@dataclass(frozen=True)
class KomiTest:
    """The result of the test: w at every komi of GRID, the two scores, the rises, the code."""

    winrates: tuple[float, ...]  # w(k) for k in GRID
    neg: float  # negative-half score
    pos: float  # positive-half score
    rising: tuple[float, ...]  # komis where w rose
    code: int  # GOOD, UNUSABLE, USE_NEG or USE_POS

    @property
    def verdict(self) -> str:
        return VERDICTS[self.code]

    def lines(self) -> list[str]:
        """What the fork prints (on stderr): the table, the rises, the scores, the verdict."""
        out = ["komi | winrate", "---- | ----"]
        out += [f"{k:f} | {w:f}" for k, w in zip(GRID[1:], self.winrates[1:])]
        out.append("在以下贴目值附近胜率是上升的：Winrate increasing near "
                   + "".join(f"{k:4.1f}, " for k in self.rising) + ".")
        out.append(f"Negative komi total score: {self.neg:e}")
        out.append(f"Positive komi total score: {self.pos:e}")
        out.append(self.verdict)
        return out


def verdict(neg: float, pos: float) -> int:
    good_neg, good_pos = neg <= THRESHOLD, pos <= THRESHOLD
    if good_neg and good_pos:
        return GOOD
    if not good_neg and not good_pos:
        return UNUSABLE
    return USE_NEG if good_neg else USE_POS


def komi_test(curve: Callable[[Sequence[float]], Sequence[float]]) -> KomiTest:
    """Run the test on `curve(komis) -> winrates` (called once, with all of GRID)."""
    w = [float(x) for x in curve(GRID)]
    if len(w) != len(GRID):
        raise ValueError(f"the curve answered {len(w)} of {len(GRID)} komis")
    f32 = np.float32
    rising = []
    neg = f32(1.0) - f32(w[0])
    for i in range(1, len(NEGATIVE) + 1):
        if w[i] > w[i - 1]:
            neg = f32(neg + f32(w[i] - w[i - 1]))
            rising.append(GRID[i])
    pos = f32(0.0)
    for i in range(len(NEGATIVE) + 1, len(GRID)):
        if w[i] > w[i - 1]:  # the first one compares with w(0)
            pos = f32(pos + f32(w[i] - w[i - 1]))
            rising.append(GRID[i])
    pos = f32(pos + f32(w[-1]))
    return KomiTest(tuple(w), float(neg), float(pos), tuple(rising),
                    verdict(float(neg), float(pos)))


def network_curve(network, state, symmetry: int = 0,
                  batch: int = 64) -> Callable[[Sequence[float]], list[float]]:
    """Black's winrate in `state` (Black to move, whatever the state says: the fork's test on
    a White-to-move position measures White and its verdict means nothing) when the network is
    told komi k, under `symmetry`, in batches; the cache is neither read nor written."""
    base = state.copy()
    if base.to_move != BLACK:
        base.set_to_move(BLACK)

    def curve(komis: Sequence[float]) -> list[float]:
        out: list[float] = []
        for start in range(0, len(komis), batch):
            states = []
            for k in komis[start:start + batch]:
                told = base.copy()
                told.set_net_komi(k, k)
                states.append(told)
            evals = network.evaluate(states, symmetry=symmetry, read_cache=False,
                                     write_cache=False)
            out += [float(ev.winrate) for ev in evals]
        return out

    return curve
