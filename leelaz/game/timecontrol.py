"""The game clock: main time, Canadian or Japanese byo-yomi, and the per-move thinking budget.

Owns: `TimeControl` (Leela Zero's src/TimeControl.cpp): both players' clocks in
centiseconds, charging them after a search (`start`/`stop`), GTP `time_left` (`adjust_time`),
the budget for one search (`max_time_for_move`), the two `showboard` lines (`display_lines`),
and the clock fields of an SGF root (TM/OT/BL/WL/OB/OW) in both directions.
Imports: stdlib, game.numbers.

Units are centiseconds throughout, as in Leela Zero, so that the integer arithmetic (and so
the budget and the text) comes out exactly the same. A clock has four settings:

    main_cs     main time
    byo_cs      byo-yomi time: a Canadian period, or one Japanese period
    byo_stones  Canadian: stones to play per period (0 if not Canadian)
    byo_periods Japanese: number of periods (0 if not Japanese)

`byo_cs > 0` with no stones and no periods means no time limit (GTP time_settings spec);
the budget is then 31 days per move. The time source is injectable (`clock=`, seconds as a
float) so tests can move time forward without sleeping.
"""

from __future__ import annotations

import re
import time
from typing import Callable

from leelaz.game.numbers import leading_int

BLACK = 0
WHITE = 1

#: Budget for a clock without limit: 31 days, in centiseconds.
INFINITE_CS = 31 * 24 * 60 * 60 * 100
#: Default safety margin per move (Leela Zero's --lagbuffer default), centiseconds.
DEFAULT_LAGBUFFER_CS = 100
#: 19x19 board, for the expected-moves estimate.
_INTERSECTIONS = 361

_CANADIAN_OT = re.compile(r"(\d+)/(\d+) Canadian")
_BYOYOMI_OT = re.compile(r"(\d+)x(\d+) byo-yomi")


def _cdiv(a: int, b: int) -> tuple[int, int]:
    """C's integer division (truncating toward zero) and its remainder."""
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return q, a - q * b


class TimeControl:
    """Both players' clocks under one time setting (Leela Zero's TimeControl)."""

    def __init__(self, main_cs: int = 60 * 60 * 100, byo_cs: int = 0, byo_stones: int = 0,
                 byo_periods: int = 0, clock: Callable[[], float] = time.monotonic):
        self.main_cs = main_cs          # main time, same for both players
        self.byo_cs = byo_cs            # length of a byo-yomi period
        self.byo_stones = byo_stones    # Canadian: stones per period
        self.byo_periods = byo_periods  # Japanese: number of periods
        self._clock = clock
        self._started: list[float | None] = [None, None]
        self.reset_clocks()

    # ---- constructors for GTP commands ------------------------------------------------

    @classmethod
    def from_time_settings(cls, main_s: int, byo_s: int, byo_stones: int,
                           clock: Callable[[], float] = time.monotonic) -> TimeControl:
        """GTP `time_settings M B S`: Canadian (or absolute when B is 0; no limit when S is 0)."""
        return cls(main_s * 100, byo_s * 100, byo_stones, 0, clock=clock)

    @classmethod
    def kgs_none(cls, clock: Callable[[], float] = time.monotonic) -> TimeControl:
        """`kgs-time_settings none`: Leela Zero plays it as 30 minutes absolute."""
        return cls(30 * 60 * 100, 0, 0, 0, clock=clock)

    @classmethod
    def kgs_absolute(cls, main_s: int,
                     clock: Callable[[], float] = time.monotonic) -> TimeControl:
        """`kgs-time_settings absolute M`."""
        return cls(main_s * 100, 0, 0, 0, clock=clock)

    @classmethod
    def kgs_canadian(cls, main_s: int, byo_s: int, byo_stones: int,
                     clock: Callable[[], float] = time.monotonic) -> TimeControl:
        """`kgs-time_settings canadian M B S`."""
        return cls(main_s * 100, byo_s * 100, byo_stones, 0, clock=clock)

    @classmethod
    def kgs_byoyomi(cls, main_s: int, byo_s: int, byo_periods: int,
                    clock: Callable[[], float] = time.monotonic) -> TimeControl:
        """`kgs-time_settings byoyomi M B P`: Japanese byo-yomi with P periods of B seconds."""
        return cls(main_s * 100, byo_s * 100, 0, byo_periods, clock=clock)

    # ---- state -------------------------------------------------------------------------

    def reset_clocks(self) -> None:
        """Both clocks back to the start of a game (clear_board, loadsgf)."""
        in_byo = self.main_cs <= 0
        start = self.byo_cs if in_byo else self.main_cs
        self.remaining_cs = [start, start]
        self.stones = [self.byo_stones, self.byo_stones]      # Canadian stones left
        self.periods = [self.byo_periods, self.byo_periods]   # Japanese periods left
        self.in_byo = [in_byo, in_byo]
        self._started = [None, None]

    def copy(self) -> TimeControl:
        other = TimeControl(self.main_cs, self.byo_cs, self.byo_stones, self.byo_periods,
                            clock=self._clock)
        other.remaining_cs = list(self.remaining_cs)
        other.stones = list(self.stones)
        other.periods = list(self.periods)
        other.in_byo = list(self.in_byo)
        other._started = list(self._started)
        return other

    def is_infinite(self) -> bool:
        """Byo-yomi time without stones or periods: no time limit."""
        return self.byo_cs != 0 and self.byo_stones == 0 and self.byo_periods == 0

    def stones_left(self, color: int) -> int:
        """Canadian stones (or Japanese periods) left in byo-yomi; 0 before byo-yomi."""
        if not self.in_byo[color]:
            return 0
        if self.byo_stones:
            return self.stones[color]
        if self.byo_periods:
            return self.periods[color]
        return 0

    # ---- the clock running --------------------------------------------------------------

    def start(self, color: int) -> None:
        """Start color's clock (at the beginning of a search)."""
        self._started[color] = self._clock()

    def stop(self, color: int) -> int:
        """Stop color's clock and charge the time since start(); returns the centiseconds."""
        begun = self._started[color]
        self._started[color] = None
        elapsed = 0 if begun is None else max(0, int((self._clock() - begun) * 100))
        self.charge(color, elapsed)
        return elapsed

    def elapsed_cs(self, color: int) -> int:
        """Centiseconds since start(color), without stopping; 0 when not started."""
        begun = self._started[color]
        return 0 if begun is None else max(0, int((self._clock() - begun) * 100))

    def charge(self, color: int, elapsed_cs: int) -> None:
        """Take elapsed_cs off color's clock, with byo-yomi bookkeeping (TimeControl::stop)."""
        self.remaining_cs[color] -= elapsed_cs
        if self.in_byo[color]:
            if self.byo_stones:
                self.stones[color] -= 1
            elif self.byo_periods and elapsed_cs > self.byo_cs:
                self.periods[color] -= 1
        if not self.in_byo[color] and self.remaining_cs[color] <= 0:
            self._enter_byo(color)
        elif self.in_byo[color] and self.byo_stones and self.stones[color] <= 0:
            self.remaining_cs[color] = self.byo_cs   # a new Canadian period
            self.stones[color] = self.byo_stones
        elif self.in_byo[color] and self.byo_periods:
            self.remaining_cs[color] = self.byo_cs   # each Japanese move gets a full period

    def _enter_byo(self, color: int) -> None:
        self.remaining_cs[color] = self.byo_cs
        self.stones[color] = self.byo_stones
        self.periods[color] = self.byo_periods
        self.in_byo[color] = True

    def adjust_time(self, color: int, time_cs: int, stones: int) -> None:
        """GTP time_left: color has time_cs left and, in byo-yomi, stones (or periods) left.

        `0 0` (sent by some servers when main time ends) means: enter byo-yomi now with a
        fresh period; stones > 0 only happens in byo-yomi.
        """
        self.remaining_cs[color] = time_cs
        if time_cs == 0 and stones == 0:
            self._enter_byo(color)
        if stones:
            self.in_byo[color] = True
        if self.in_byo[color]:
            if self.byo_stones:
                self.stones[color] = stones
            elif self.byo_periods:
                self.periods[color] = stones

    # ---- decisions ------------------------------------------------------------------------

    @staticmethod
    def moves_expected(move_num: int, timemanage: bool = True) -> int:
        """How many more moves the budget is spread over: 40 (72 with time management off),
        plus extra in the first 60 moves so the opening is played fast."""
        expected = _INTERSECTIONS // (9 if timemanage else 5)
        if move_num < 60:
            expected += 60 - move_num
        return expected

    def max_time_for_move(self, move_num: int, color: int,
                          lagbuffer_cs: int = DEFAULT_LAGBUFFER_CS,
                          timemanage: bool = True) -> int:
        """Thinking budget in centiseconds for color at move move_num."""
        remaining = self.remaining_cs[color]
        moves = self.moves_expected(move_num, timemanage)
        extra = 0
        if self.byo_cs != 0:
            if self.is_infinite():
                return INFINITE_CS
            if self.in_byo[color]:
                if self.byo_stones:
                    moves = self.stones[color]
                else:                       # Japanese: just this period
                    remaining = 0
                    extra = self.byo_cs
            elif self.byo_stones:
                per_stone = _cdiv(self.byo_cs, self.byo_stones)[0]
                remaining = self.remaining_cs[color] + per_stone
                extra = per_stone
            else:
                remaining = self.remaining_cs[color] + self.byo_cs * (self.periods[color] - 1)
                extra = self.byo_cs
        base = _cdiv(max(remaining - lagbuffer_cs, 0), max(moves, 1))[0]
        return base + max(extra - lagbuffer_cs, 0)

    def can_accumulate_time(self, color: int) -> bool:
        """False when time saved now is lost anyway (Japanese byo-yomi, or the last stone of a
        Canadian period), so the search should not stop early."""
        if self.in_byo[color]:
            if self.byo_periods:
                return False
            if self.byo_stones and self.stones[color] == 1:
                return False
        return True

    # ---- text ------------------------------------------------------------------------------

    def _color_line(self, color: int) -> str:
        seconds = _cdiv(self.remaining_cs[color], 100)[0]
        minutes, secs = _cdiv(seconds, 60)
        hours, mins = _cdiv(minutes, 60)
        name = "Black" if color == BLACK else "White"
        line = f"{name} time: {hours:02d}:{mins:02d}:{secs:02d}"
        if self.in_byo[color]:
            if self.byo_stones:
                line += f", {self.stones[color]} stones left"
            elif self.byo_periods:
                line += (f", {self.periods[color]} period(s) of "
                         f"{_cdiv(self.byo_cs, 100)[0]} seconds left")
        return line

    def display_lines(self) -> list[str]:
        """The two clock lines that showboard prints (Black first), without newlines."""
        return [self._color_line(BLACK), self._color_line(WHITE)]

    def to_sgf(self) -> str:
        """Root properties for printsgf: TM, OT, OB/OW in byo-yomi, BL/WL rounded up to whole
        seconds (so that 0.4 s left does not read back as "enter byo-yomi"); '' without limit."""
        if self.is_infinite():
            return ""
        text = f"TM[{_cdiv(self.main_cs, 100)[0]}]"
        if self.byo_cs:
            byo_s = _cdiv(self.byo_cs, 100)[0]
            if self.byo_stones:
                text += f"OT[{self.byo_stones}/{byo_s} Canadian]"
            else:
                text += f"OT[{self.byo_periods}x{byo_s} byo-yomi]"
            for color, prop in ((BLACK, "OB"), (WHITE, "OW")):
                if self.in_byo[color] and (self.byo_stones or self.byo_periods):
                    text += f"{prop}[{self.stones_left(color)}]"
        black = _cdiv(self.remaining_cs[BLACK] + 99, 100)[0]
        white = _cdiv(self.remaining_cs[WHITE] + 99, 100)[0]
        return text + f"BL[{black}]WL[{white}]"

    @classmethod
    def from_sgf(cls, tm: str | None, ot: str | None = None, bl: str | None = None,
                 wl: str | None = None, ob: str | None = None, ow: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> TimeControl | None:
        """Clock from SGF root values (strings as in the file, None when absent).

        Returns None without TM (the caller keeps the default clock). An OT that is neither
        `S/T Canadian` nor `PxT byo-yomi` is ignored (absolute time). Raises ValueError for
        values that are not whole numbers.
        """
        if tm is None or tm == "":
            return None
        main_cs = _sgf_int(tm, "TM") * 100
        byo_cs = stones = periods = 0
        if ot:
            m = _CANADIAN_OT.fullmatch(ot)
            if m:
                stones, byo_cs = int(m.group(1)), int(m.group(2)) * 100
            else:
                m = _BYOYOMI_OT.fullmatch(ot)
                if m:
                    periods, byo_cs = int(m.group(1)), int(m.group(2)) * 100
        tc = cls(main_cs, byo_cs, stones, periods, clock=clock)
        for color, left, moves in ((BLACK, bl, ob), (WHITE, wl, ow)):
            if left:
                n = 0 if not moves else _sgf_int(moves, "OB" if color == BLACK else "OW")
                tc.adjust_time(color, _sgf_int(left, "BL" if color == BLACK else "WL") * 100, n)
        return tc

    def __repr__(self) -> str:
        return (f"TimeControl(main_cs={self.main_cs}, byo_cs={self.byo_cs}, "
                f"byo_stones={self.byo_stones}, byo_periods={self.byo_periods})")


def _sgf_int(text: str, name: str) -> int:
    """Leading integer of an SGF time value, as std::stoi reads it ("600.5" -> 600); stoi
    throws where there is no number or it overflows, and so do we."""
    value = leading_int(text)
    if value is None:
        raise ValueError(f"{name}[{text}] is not a number")
    return value
