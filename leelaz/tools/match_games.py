"""One table of a match: two GTP engines (and a referee) playing games one after another.

Owns: the match's settings, a game's record (its SGF layout and the reading of a root
property are game/sgf.py's), reading such an SGF back for `--tally`, the built-in
Tromp-Taylor referee, and the rules of play (colours alternate, a crash, timeout, garbage
answer or illegal move forfeits the game). Imports: leelaz.game (game.sgf
for the SGF text), leelaz.gtp.client, leelaz.files.

Engines run in their own session: a Ctrl-C or a `timeout -s INT` meant for the match reaches
only the match, which then records nothing more and kills the engines, instead of racing their
deaths into forfeits. An engine that does not answer in time is restarted, so a late reply
cannot desynchronise it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from leelaz.game.coords import BLACK, GTP_COLUMNS, PASS, WHITE, parse_gtp_vertex, sgf_vertex
from leelaz.game.handicap import fixed_pattern, place_fixed_handicap
from leelaz.game.sgf import format_match_game, root_property
from leelaz.game.state import GameState
from leelaz.gtp.client import GtpClient, GtpErrorReply, GtpFailure, GtpTimeout


@dataclass
class MatchSettings:
    """What `leelaz match` was asked to do (one field per option)."""

    engine1: str = ""
    engine2: str = ""
    name1: str = "engine1"
    name2: str = "engine2"
    games: int = 10
    first_game: int = 0
    jobs: int = 1
    time_limit: float = 0.0
    komi: float = 7.5
    time_settings: str = ""
    setup1: list[str] = field(default_factory=list)
    setup2: list[str] = field(default_factory=list)
    referee: str = ""  # "": built-in Tromp-Taylor; "engine1": engine 1's final_score
    sgf_dir: str = ""
    log_dir: str = ""
    max_moves: int = 722
    timeout: float = 60.0
    move_timeout: float = 600.0
    sprt: bool = False
    tally: list[str] = field(default_factory=list)
    handicap: int = 0  # fixed_handicap N for every game (2..9; 0 = even games): White starts
    engine1_colour: str = "alternate"  # "alternate", "black" or "white" in every game


@dataclass
class GameRecord:
    black: str
    white: str
    komi: float
    moves: list[tuple[str, str]] = field(default_factory=list)  # ("B", "D4")
    winner: str | None = None  # "B", "W" or None (no result)
    result: str = ""  # SGF RE value
    reason: str = ""
    ending: str = ""  # SGF GC value: "resign", "score", "forfeit <cause>", "no result"
    handicap: int = 0  # fixed handicap stones (SGF HA; AB lists them)


def sgf_point(move: str) -> str:
    """GTP move -> SGF point; a pass is the empty point of FF[4]."""
    v = parse_gtp_vertex(move)
    return "" if v == PASS else sgf_vertex(v)


def sgf_text(game: GameRecord) -> str:
    """The game's SGF, in game/sgf.py's layout for a match."""
    return format_match_game(
        komi=game.komi, black=game.black, white=game.white, result=game.result,
        ending=game.ending, comment=game.reason, handicap=game.handicap,
        handicap_stones=fixed_pattern(game.handicap) if game.handicap else (),
        moves=[(c, sgf_point(v)) for c, v in game.moves])


def read_game(path: str) -> GameRecord:
    """The parts of a game-NNN.sgf that scoring needs: players, winner, ending. A file
    that does not end as sgf_text ends it (a truncated copy: its RE would still read as a
    win) raises ValueError."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not (text.startswith("(;") and text.rstrip().endswith(")")):
        raise ValueError("truncated: no closing parenthesis")
    black, white = root_property(text, "PB"), root_property(text, "PW")
    if black is None or white is None:
        raise ValueError(f"{path}: no PB/PW")
    result = root_property(text, "RE") or ""
    komi = float(root_property(text, "KM") or 0)
    game = GameRecord(black, white, komi, result=result,
                      reason=root_property(text, "C") or "",
                      ending=root_property(text, "GC") or "",
                      handicap=int(root_property(text, "HA") or 0))
    game.winner = result[0].upper() if result[:2].upper() in ("B+", "W+") else None
    if not game.ending and result.endswith("+Forfeit"):
        game.ending = "forfeit unknown"  # written before GC recorded the cause
    return game


def parse_score(text: str) -> tuple[str | None, str]:
    """`B+3.5` / `W+Resign` / `0` -> (winner, RE value)."""
    t = text.strip().split()[0] if text.strip() else ""
    if t[:2].upper() in ("B+", "W+"):
        return t[0].upper(), t[0].upper() + t[1:]
    if t in ("0", "Draw", "draw"):
        return None, "0"
    raise GtpFailure(f"unreadable score {text!r}", "error")


class RulesReferee:
    """Legality (occupied, ko, suicide, positional superko) and Tromp-Taylor scoring with
    leelaz.game, the same rules as Leela Zero's final_score."""

    name = "tromp-taylor"

    def __init__(self, komi: float, handicap: int = 0):
        """With a handicap, Leela Zero's fixed stones are placed and the count gives White
        komi + one point per stone, as Leela Zero's final_score does."""
        self.state = GameState(komi=komi)
        if handicap:
            place_fixed_handicap(self.state, handicap)

    def play(self, color: str, move: str) -> bool:
        c = BLACK if color == "B" else WHITE
        v = parse_gtp_vertex(move)
        if v == PASS:
            self.state.play(c, v)
            return True
        if not self.state.is_legal(c, v):
            return False
        self.state.play(c, v)
        return not self.state.superko()

    def score(self) -> str:
        s = self.state.final_score()
        return f"B+{s:.1f}" if s > 0 else f"W+{-s:.1f}" if s < 0 else "0"


def looks_like_move(text: str) -> bool:
    """A strict GTP move: `pass` or a column letter and a row 1..19, nothing else."""
    t = text.lower()
    if t == "pass":
        return True
    return (len(t) >= 2 and t[0].upper() in GTP_COLUMNS and t[1:].isdigit()
            and 1 <= int(t[1:]) <= 19)


def ask(engine: GtpClient, command: str, timeout: float) -> str:
    """engine.ask, restarting an engine that timed out (its late answer would come next)."""
    try:
        return engine.ask(command, timeout)
    except GtpTimeout:
        engine.restart()
        raise


class MatchTable:
    """One worker's table: its own pair of engines (and referee process), which play the games
    handed to it one after another. Several tables run side by side under --jobs. Engines are
    started at their first game, so workers that never get a game never load a network."""

    def __init__(self, settings: MatchSettings, worker: int | None = None):
        self.settings = s = settings
        if s.log_dir:
            os.makedirs(s.log_dir, exist_ok=True)

        def engine(name: str, command: str, role: str) -> GtpClient:
            suffix = "" if worker is None else f"-w{worker}"
            log = os.path.join(s.log_dir, f"{role}{suffix}.log") if s.log_dir else None
            return GtpClient(command, name=name, stderr=log, new_session=True, start=False)

        self.engines = [engine(s.name1, s.engine1, "engine1"),
                        engine(s.name2, s.engine2, "engine2")]
        self.referee = (engine("referee", s.referee, "referee")
                        if s.referee not in ("", "engine1") else None)
        self.rules: RulesReferee | None = None
        self.on_move = None  # called after each move played (the match's progress bar)
        if s.sgf_dir:
            os.makedirs(s.sgf_dir, exist_ok=True)

    def _everyone(self) -> list[GtpClient]:
        return self.engines + ([self.referee] if self.referee else [])

    def kill(self) -> None:
        for e in self._everyone():
            e.kill()

    def close(self) -> None:
        for e in self._everyone():
            e.close()

    def _setup(self, engine: GtpClient, extra: list[str]) -> None:
        s = self.settings
        for command in ["boardsize 19", "clear_board", f"komi {s.komi:g}"]:
            ask(engine, command, s.timeout)
        if s.time_settings:
            ask(engine, f"time_settings {s.time_settings}", s.timeout)
        for command in extra:
            ask(engine, command, s.timeout)

    def play_game(self, number: int) -> GameRecord:
        """Game `number` (0-based): engine 1 is Black in even-numbered games (or always the
        colour --engine1-colour gives it). With --handicap N every engine and the referee get
        `fixed_handicap N` after the komi, and White moves first."""
        s = self.settings
        first_black = {"black": True, "white": False}.get(s.engine1_colour, number % 2 == 0)
        black, white = (self.engines if first_black else self.engines[::-1])
        game = GameRecord(black.name, white.name, s.komi, handicap=s.handicap)
        extras = {self.engines[0].name: s.setup1, self.engines[1].name: s.setup2}
        for engine in (black, white):
            try:
                if not engine.alive():
                    engine.restart()
                self._setup(engine, extras[engine.name])
                self._handicap(engine)
            except GtpFailure as exc:
                return self._forfeit(game, engine is black, f"setup failed: {exc}", "setup")
        if self.referee is not None:
            if not self.referee.alive():
                self.referee.restart()
            self._setup(self.referee, [])
            self._handicap(self.referee)
        self.rules = RulesReferee(s.komi, s.handicap)
        return self._play_moves(game, {"B": black, "W": white},
                                "W" if s.handicap else "B")

    def _handicap(self, engine: GtpClient) -> None:
        """fixed_handicap N; the stones it reports must be Leela Zero's pattern (GNU Go and
        Leela Zero place the same ones), or the engine cannot play this match."""
        n = self.settings.handicap
        if not n:
            return
        reply = ask(engine, f"fixed_handicap {n}", self.settings.timeout)
        placed = {parse_gtp_vertex(v) for v in reply.split()}
        if placed != set(fixed_pattern(n)):
            raise GtpFailure(f"{engine.name} placed {reply!r} for fixed_handicap {n}", "error")

    def _play_moves(self, game: GameRecord, players: dict[str, GtpClient],
                    first: str = "B") -> GameRecord:
        s = self.settings
        passes = 0
        color = first
        while True:
            mover = players[color]
            other = players["W" if color == "B" else "B"]
            try:
                move = ask(mover, f"genmove {color.lower()}", s.move_timeout).strip()
            except GtpFailure as exc:
                return self._forfeit(game, color == "B", str(exc), exc.cause, restart=mover)
            if move.lower() == "resign":
                game.winner = "W" if color == "B" else "B"
                game.result = f"{game.winner}+Resign"
                game.reason = f"{mover.name} resigned"
                game.ending = "resign"
                return game
            if not looks_like_move(move):
                return self._forfeit(game, color == "B", f"{mover.name} answered {move!r}",
                                     "answer")
            if not self.rules.play(color, move):
                return self._forfeit(game, color == "B",
                                     f"{mover.name} played illegal {move} (rules)", "illegal")
            for judge in ([other] + ([self.referee] if self.referee else [])):
                try:
                    ask(judge, f"play {color.lower()} {move}", s.timeout)
                except GtpErrorReply:
                    return self._forfeit(game, color == "B",
                                         f"{mover.name} played illegal {move} ({judge.name})",
                                         "illegal")
                except GtpFailure as exc:
                    if judge is other:
                        return self._forfeit(game, color == "W", str(exc), exc.cause,
                                             restart=other)
                    raise
            game.moves.append((color, move.upper() if move.lower() != "pass" else "pass"))
            if self.on_move is not None:
                self.on_move()
            passes = passes + 1 if move.lower() == "pass" else 0
            color = "W" if color == "B" else "B"
            if passes >= 2 or len(game.moves) >= s.max_moves:
                return self._score(game, "two passes" if passes >= 2 else "move cap")

    def _score(self, game: GameRecord, why: str) -> GameRecord:
        game.ending = "score"
        if self.settings.referee == "":
            game.winner, game.result = parse_score(self.rules.score())
            game.reason = f"{why}, scored by Tromp-Taylor"
            return game
        scorer = self.referee or self.engines[0]
        try:
            game.winner, game.result = parse_score(ask(scorer, "final_score",
                                                       self.settings.timeout))
        except GtpFailure as exc:
            game.winner, game.result, game.ending = None, "?", "no result"
            game.reason = f"{why}; scoring failed: {exc}"
            return game
        game.reason = f"{why}, scored by {scorer.name}"
        return game

    @staticmethod
    def _forfeit(game: GameRecord, black_lost: bool, why: str, cause: str,
                 restart: GtpClient | None = None) -> GameRecord:
        game.winner = "W" if black_lost else "B"
        game.result = f"{game.winner}+Forfeit"
        game.reason = why
        game.ending = f"forfeit {cause}"
        if restart is not None:
            try:
                restart.restart()
            except (OSError, GtpFailure):
                pass
        return game
