"""TimeControl: budget arithmetic on hand-computed numbers, clock charging with a fake time
source, and showboard's clock lines as the C++ Leela Zero 0.17 binary prints them."""

from __future__ import annotations

import re
import subprocess

import pytest

from leelaz.game.timecontrol import BLACK, WHITE, INFINITE_CS, TimeControl


class FakeClock:
    """A time source the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# ---- showboard lines, checked against the binary ------------------------------------------

#: (GTP commands, expected clock lines); the lines were printed by /usr/games/leelaz 0.17
#: and are re-checked against it in test_display_lines_match_binary.
DISPLAY_CASES = [
    ([], ["Black time: 01:00:00", "White time: 01:00:00"]),
    (["time_settings 100 30 5"], ["Black time: 00:01:40", "White time: 00:01:40"]),
    (["time_settings 100 30 5", "time_left b 0 0", "time_left w 20 3"],
     ["Black time: 00:00:30, 0 stones left", "White time: 00:00:20, 3 stones left"]),
    (["kgs-time_settings byoyomi 10 30 5", "time_left b 0 0", "time_left w 3 2"],
     ["Black time: 00:00:30, 0 period(s) of 30 seconds left",
      "White time: 00:00:03, 2 period(s) of 30 seconds left"]),
    (["kgs-time_settings none"], ["Black time: 00:30:00", "White time: 00:30:00"]),
    (["time_settings 0 30 0"], ["Black time: 00:00:30", "White time: 00:00:30"]),
    (["time_settings 0 0 0"], ["Black time: 00:00:00", "White time: 00:00:00"]),
    (["kgs-time_settings canadian 7300 30 25"],
     ["Black time: 02:01:40", "White time: 02:01:40"]),
    (["kgs-time_settings absolute 59", "time_left w 3599 0"],
     ["Black time: 00:00:59", "White time: 00:59:59"]),
    (["kgs-time_settings byoyomi 0 45 3"],
     ["Black time: 00:00:45, 3 period(s) of 45 seconds left",
      "White time: 00:00:45, 3 period(s) of 45 seconds left"]),
    (["time_settings 0 60 10", "time_left b 55 7"],
     ["Black time: 00:00:55, 7 stones left", "White time: 00:01:00, 10 stones left"]),
    (["time_left b -66 0", "time_left w 3 0"],        # C's truncating division
     ["Black time: 00:-1:-6", "White time: 00:00:03"]),
]


def _apply(commands: list[str]) -> TimeControl:
    """Our TimeControl after the same GTP clock commands (a tiny stand-in for the GTP layer)."""
    tc = TimeControl()
    for line in commands:
        words = line.split()
        nums = [int(w) for w in words[2:]] if words[0] != "time_settings" else []
        if words[0] == "time_settings":
            tc = TimeControl.from_time_settings(*[int(w) for w in words[1:]])
        elif words[0] == "kgs-time_settings":
            kind = words[1]
            tc = {"none": TimeControl.kgs_none, "absolute": TimeControl.kgs_absolute,
                  "canadian": TimeControl.kgs_canadian,
                  "byoyomi": TimeControl.kgs_byoyomi}[kind](*nums)
        elif words[0] == "time_left":
            color = BLACK if words[1] == "b" else WHITE
            tc.adjust_time(color, int(words[2]) * 100, int(words[3]))
    return tc


@pytest.mark.parametrize("commands,expected", DISPLAY_CASES)
def test_display_lines(commands, expected):
    assert _apply(commands).display_lines() == expected


def test_display_lines_match_binary(lz_binary, random_weights):
    """Every DISPLAY_CASES entry, replayed through one session of the binary."""
    weights = random_weights(1, 8)
    script = []
    for commands, _ in DISPLAY_CASES:
        script += ["time_settings 3600 0 0"] + commands + ["showboard"]
    proc = subprocess.run(
        [lz_binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-w", weights],
        input="\n".join(script) + "\n", capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if " time: " in ln]
    got = [lines[i:i + 2] for i in range(0, len(lines), 2)]
    assert got == [expected for _, expected in DISPLAY_CASES]


# ---- budget arithmetic -----------------------------------------------------------------------

def test_default_is_one_hour_absolute():
    tc = TimeControl()
    assert (tc.main_cs, tc.byo_cs, tc.byo_stones, tc.byo_periods) == (360000, 0, 0, 0)
    assert tc.remaining_cs == [360000, 360000]


def test_budget_absolute():
    tc = TimeControl()
    # move 0: 40 + 60 = 100 expected moves; (360000 - 100) // 100 = 3599
    assert tc.max_time_for_move(0, BLACK) == 3599
    # move 100: 40 moves; 359900 // 40 = 8997
    assert tc.max_time_for_move(100, BLACK) == 8997
    # timemanage off: 72 moves; 359900 // 72 = 4998
    assert tc.max_time_for_move(100, BLACK, timemanage=False) == 4998
    # lag buffer 0 at move 59: 41 moves; 360000 // 41 = 8780
    assert tc.max_time_for_move(59, WHITE, lagbuffer_cs=0) == 8780


def test_budget_canadian_before_and_in_byo():
    tc = TimeControl(60000, 30000, 25, 0)          # 10 min + 25 stones / 5 min
    # before byo: per-stone 1200; remaining 61200 - 100 over 40 moves + (1200 - 100)
    assert tc.max_time_for_move(200, BLACK) == 61100 // 40 + 1100
    tc.adjust_time(BLACK, 12000, 8)                 # in byo, 120 s for 8 stones
    assert tc.max_time_for_move(200, BLACK) == (12000 - 100) // 8
    tc.adjust_time(BLACK, 50, 2)                    # less than the lag buffer
    assert tc.max_time_for_move(200, BLACK) == 0


def test_budget_japanese_before_and_in_byo():
    tc = TimeControl(60000, 3000, 0, 5)             # 10 min + 5 x 30 s
    # before byo: remaining 60000 + 4*3000 = 72000; (71900 // 40) + 2900
    assert tc.max_time_for_move(80, WHITE) == 71900 // 40 + 2900
    tc.adjust_time(WHITE, 0, 0)        # as the binary shows: "0 period(s) ... left"
    assert tc.in_byo[WHITE] and tc.periods[WHITE] == 0
    assert tc.max_time_for_move(80, WHITE) == 2900
    tc.adjust_time(WHITE, 2000, 3)
    assert tc.max_time_for_move(80, WHITE) == 2900   # always one full period


def test_budget_infinite():
    tc = TimeControl.from_time_settings(0, 30, 0)
    assert tc.is_infinite()
    assert tc.max_time_for_move(0, BLACK) == INFINITE_CS == 267840000


def test_budget_zero_moves_left_does_not_divide_by_zero():
    tc = TimeControl(0, 6000, 5, 0)
    tc.adjust_time(BLACK, 6000, 0)
    tc.stones[BLACK] = 0
    assert tc.max_time_for_move(10, BLACK) == 5900


# ---- charging the clock ---------------------------------------------------------------------

def test_start_stop_charges_elapsed_time():
    clock = FakeClock()
    tc = TimeControl(60000, 0, 0, 0, clock=clock)
    tc.start(BLACK)
    clock.now += 12.345
    assert tc.elapsed_cs(BLACK) == 1234
    assert tc.stop(BLACK) == 1234
    assert tc.remaining_cs == [60000 - 1234, 60000]


def test_main_time_running_out_enters_canadian_byo_and_counts_stones():
    clock = FakeClock()
    tc = TimeControl(1000, 6000, 3, 0, clock=clock)
    tc.start(WHITE)
    clock.now += 11
    tc.stop(WHITE)                                  # 10 s main time used up
    assert tc.in_byo[WHITE] and tc.remaining_cs[WHITE] == 6000 and tc.stones[WHITE] == 3
    assert tc.display_lines()[1] == "White time: 00:01:00, 3 stones left"
    for left in (2, 1):
        tc.start(WHITE)
        clock.now += 5
        tc.stop(WHITE)
        assert tc.stones[WHITE] == left
    assert tc.remaining_cs[WHITE] == 5000
    assert not tc.can_accumulate_time(WHITE)        # last stone of the period
    tc.start(WHITE)
    clock.now += 5
    tc.stop(WHITE)                                  # period done: fresh period
    assert tc.remaining_cs[WHITE] == 6000 and tc.stones[WHITE] == 3
    assert tc.can_accumulate_time(WHITE)


def test_japanese_byo_resets_period_and_loses_one_when_overrun():
    clock = FakeClock()
    tc = TimeControl(0, 3000, 0, 3, clock=clock)
    assert tc.in_byo == [True, True] and tc.remaining_cs == [3000, 3000]
    assert not tc.can_accumulate_time(BLACK)
    tc.start(BLACK)
    clock.now += 20
    tc.stop(BLACK)
    assert tc.remaining_cs[BLACK] == 3000 and tc.periods[BLACK] == 3
    tc.start(BLACK)
    clock.now += 31
    tc.stop(BLACK)
    assert tc.remaining_cs[BLACK] == 3000 and tc.periods[BLACK] == 2


def test_reset_clocks_restores_settings():
    tc = TimeControl(1000, 3000, 0, 3)
    tc.adjust_time(BLACK, 0, 0)
    tc.adjust_time(WHITE, 200, 1)
    tc.reset_clocks()
    assert tc.remaining_cs == [1000, 1000] and tc.in_byo == [False, False]
    assert tc.periods == [3, 3] and tc.stones_left(BLACK) == 0


def test_stones_left():
    tc = TimeControl(1000, 3000, 10, 0)
    assert tc.stones_left(BLACK) == 0
    tc.adjust_time(BLACK, 2500, 4)
    assert tc.stones_left(BLACK) == 4


def test_negative_remaining_prints_like_c():
    tc = TimeControl(6000, 0, 0, 0)
    tc.remaining_cs[BLACK] = -6550     # -65.5 s: C truncation gives -1 min -5 s
    assert tc.display_lines()[0] == "Black time: 00:-1:-5"


# ---- SGF fields ---------------------------------------------------------------------------

def test_to_sgf_matches_binary_printsgf_text():
    # printed by the binary's printsgf after the same settings
    assert TimeControl.from_time_settings(0, 30, 0).to_sgf() == ""
    assert TimeControl.from_time_settings(0, 0, 0).to_sgf() == "TM[0]BL[0]WL[0]"
    assert (TimeControl.kgs_canadian(7300, 30, 25).to_sgf()
            == "TM[7300]OT[25/30 Canadian]BL[7300]WL[7300]")


def test_to_sgf_rounds_up_and_writes_byo_counts():
    tc = TimeControl.kgs_byoyomi(600, 30, 5)
    tc.adjust_time(BLACK, 3000, 4)
    tc.remaining_cs[WHITE] = 12301
    assert tc.to_sgf() == "TM[600]OT[5x30 byo-yomi]OB[4]BL[30]WL[124]"


def test_from_sgf():
    assert TimeControl.from_sgf(None) is None
    tc = TimeControl.from_sgf("600", "5x30 byo-yomi", "25", "590", "3", None)
    assert (tc.main_cs, tc.byo_cs, tc.byo_stones, tc.byo_periods) == (60000, 3000, 0, 5)
    assert tc.remaining_cs == [2500, 59000] and tc.in_byo == [True, False]
    assert tc.periods == [3, 5]
    tc = TimeControl.from_sgf("1800", "25/600 Canadian")
    assert (tc.byo_cs, tc.byo_stones, tc.byo_periods) == (60000, 25, 0)
    tc = TimeControl.from_sgf("1800", "3 moves in 30 s")  # unknown OT: absolute
    assert (tc.byo_cs, tc.byo_stones, tc.byo_periods) == (0, 0, 0)
    with pytest.raises(ValueError):
        TimeControl.from_sgf("abc")


def test_sgf_round_trip():
    tc = TimeControl.kgs_canadian(300, 60, 10)
    tc.adjust_time(WHITE, 4000, 6)
    text = tc.to_sgf()
    assert text == "TM[300]OT[10/60 Canadian]OW[6]BL[300]WL[40]"
    back = TimeControl.from_sgf("300", "10/60 Canadian", "300", "40", None, "6")
    assert back.display_lines() == tc.display_lines()


# ---- the budget, against the binary's "Thinking at most" ------------------------------------

def test_budget_matches_binary(lz_binary, random_weights):
    """Each genmove prints its budget; one playout keeps the searches short. The clock each
    budget reads was set just before (so the few centiseconds charged by earlier searches
    never matter)."""
    weights = random_weights(1, 8)
    script = ["genmove b", "time_settings 600 30 5", "genmove w", "time_left b 20 3",
              "genmove b", "kgs-time_settings byoyomi 100 30 5", "genmove w",
              "time_left w 0 0", "genmove w", "kgs-time_settings absolute 900", "genmove b"]
    ours = []
    tc = TimeControl()
    for move_num, color, setup in [(0, BLACK, None), (1, WHITE, ("ts", 600, 30, 5)),
                                   (2, BLACK, ("left", BLACK, 2000, 3)),
                                   (3, WHITE, ("byo", 100, 30, 5)),
                                   (4, WHITE, ("left", WHITE, 0, 0)), (5, BLACK, ("abs", 900))]:
        if setup and setup[0] == "ts":
            tc = TimeControl.from_time_settings(*setup[1:])
        elif setup and setup[0] == "byo":
            tc = TimeControl.kgs_byoyomi(*setup[1:])
        elif setup and setup[0] == "abs":
            tc = TimeControl.kgs_absolute(*setup[1:])
        elif setup:
            tc.adjust_time(*setup[1:])
        ours.append(tc.max_time_for_move(move_num, color, timemanage=False))
    ours_on = TimeControl().max_time_for_move(0, BLACK)
    for extra, expected in ((["--timemanage", "off"], ours), ([], [ours_on])):
        proc = subprocess.run(
            [lz_binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-p", "1", "-w", weights]
            + extra, input="\n".join(script if extra else script[:1]) + "\n",
            capture_output=True, text=True, timeout=120)
        got = re.findall(r"Thinking at most ([\d.]+) seconds", proc.stderr)
        assert got == [f"{cs / 100:.1f}" for cs in expected]
