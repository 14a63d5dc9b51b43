"""Resign analysis: how often would a resignation threshold have resigned a game that was won?

Owns: `analyse`, `ThresholdRow`, `report`, `resign_allowed` (self-play's resignation gate).
Imports: stdlib, game.sgf (a game's winner from its text; the files are read here).

Leela Zero's scripts/resign_analysis/resign_analysis.py reads, for the
games played with `-r 0` (the 10 % no-resign share), the per-search debug records that
`dump_debug` writes: `net_winrate root_winrate best_child_winrate best_child_visits`, all
from the side to move. For a threshold t the FIRST record whose best-child winrate is below t
decides: the side to move there would have resigned; if that side went on to win, it is a
false resignation. False-resignation rate = false resignations / analysed games.

One difference, on purpose: a record counts only where the engine may resign, i.e. after more
than 90 moves (361 / 4); LZ's script ignored that rule and so overstated the rate a little.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass

from leelaz.game.sgf import text_winner

#: Thresholds reported by default (fractions of a winrate).
THRESHOLDS = (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10, 0.15, 0.20)
#: The engine resigns only when more than this many moves have been played.
MIN_RESIGN_MOVE = 361 // 4



@dataclass
class Game:
    """One no-resign game: best-child winrates by move (side to move's view), the winner."""

    winrates: list[float]  # record i = the search before move i (Black moves at even i)
    black_won: bool


@dataclass
class ThresholdRow:
    threshold: float
    games: int  # analysed games
    resigned: int  # games in which someone would have resigned
    wrong: int  # ... and that side won
    wrong_black: int  # false resignations by Black
    wrong_white: int
    moves_saved: float  # mean share of the game's moves that resigning would have saved

    @property
    def false_rate(self) -> float:
        return self.wrong / self.games if self.games else 0.0


def read_games(folder: str) -> tuple[list[Game], int]:
    """The no-resign games of a self-play folder, and the number of games seen."""
    games, seen = [], 0
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".debug.txt.0.gz"):
            continue
        stem = name[:-len(".debug.txt.0.gz")]
        sgf_path = os.path.join(folder, stem + ".sgf")
        if not os.path.exists(sgf_path):
            continue  # not a finished game
        seen += 1
        with gzip.open(os.path.join(folder, name), "rt", encoding="ascii") as f:
            lines = f.read().splitlines()
        if len(lines) < 2 or lines[0] != "2" or lines[1].split()[0] != "0":
            continue  # a game that could resign
        with open(sgf_path, encoding="utf-8") as f:
            winner = text_winner(f.read())
        if winner is None:
            continue
        winrates = [float(line.split()[2]) for line in lines[2:] if line.strip()]
        games.append(Game(winrates, winner == "B"))
    return games, seen


def analyse(games: list[Game], thresholds=THRESHOLDS) -> list[ThresholdRow]:
    rows = []
    for t in thresholds:
        resigned = wrong = wrong_black = wrong_white = 0
        saved = 0.0
        for game in games:
            for move, winrate in enumerate(game.winrates):
                if move <= MIN_RESIGN_MOVE or winrate >= t:
                    continue
                resigned += 1
                black = move % 2 == 0
                saved += 1.0 - move / max(1, len(game.winrates))
                if black == game.black_won:
                    wrong += 1
                    wrong_black += black
                    wrong_white += not black
                break
        rows.append(ThresholdRow(t, len(games), resigned, wrong, wrong_black, wrong_white,
                                 saved / len(games) if games else 0.0))
    return rows


def report(folder: str, thresholds=THRESHOLDS) -> str:
    games, seen = read_games(folder)
    lines = [f"Resign analysis of {folder}: {len(games)} no-resign games of {seen}."]
    if not games:
        lines.append("No games played with -r 0 yet (10 % of self-play games are).")
        return "\n".join(lines) + "\n"
    lines.append("threshold  resigned  false  (black/white)  false-resign rate  moves saved")
    for row in analyse(games, thresholds):
        lines.append(f"{100 * row.threshold:8.0f}%  {row.resigned:8d}  {row.wrong:5d}  "
                     f"({row.wrong_black}/{row.wrong_white}){'':>9}"
                     f"{100 * row.false_rate:10.1f}%  {100 * row.moves_saved:10.1f}%")
    return "\n".join(lines) + "\n"


#: Self-play resigns only once its no-resign games show fewer false resignations than this
#: at the threshold (Leela Zero kept the rate under 5 %: its
#: scripts/resign_analysis/resign_analysis.py) ...
MAX_FALSE_RESIGN_RATE = 0.05
#: ... among at least this many no-resign games.
MIN_NO_RESIGN_GAMES = 20


def resign_allowed(folders, resign_pct: int) -> tuple[bool, str]:
    """Whether self-play may resign at `resign_pct` (-1: Leela Zero's 10 %): the no-resign
    games of `folders` (missing ones are skipped) must number at least MIN_NO_RESIGN_GAMES
    and show a false-resignation rate under MAX_FALSE_RESIGN_RATE at that threshold. With
    resignation off every game of a run is a no-resign game, so the evidence grows until the
    gate opens (or shows the threshold is unsafe). Returns (allowed, the reason in words)."""
    games = []
    for folder in dict.fromkeys(folders):
        if os.path.isdir(folder):
            games += read_games(folder)[0]
    threshold = (resign_pct if resign_pct > 0 else 10) / 100
    if len(games) < MIN_NO_RESIGN_GAMES:
        return False, (f"{len(games)} no-resign games so far, {MIN_NO_RESIGN_GAMES} needed to "
                       "measure false resignations")
    row = analyse(games, (threshold,))[0]
    rate = f"{100 * row.false_rate:.1f}% false resignations in {row.games} no-resign games"
    if row.false_rate < MAX_FALSE_RESIGN_RATE:
        return True, rate
    return False, f"{rate} (under {100 * MAX_FALSE_RESIGN_RATE:.0f}% needed)"
