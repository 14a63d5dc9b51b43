"""`leelaz bench board`: speed of the game core (random playouts, what one search step costs).

Owns: the board benchmark. Imports: game/, tools.bench.common.

Moves per second of random playouts (uniformly random legal moves that do not fill a true eye
of the mover, from the empty board until both sides pass), and the cost in microseconds of
GameState.copy(), copy()+play(), Board.copy(), legal_moves() and superko() at a middle-game
position (move 150 of a random game). The search copies a state and plays a move on every
playout step, so copy()+play() is the figure to keep under 30 us. Times are CPU time of this
process, so other busy processes on a shared machine disturb the figures less.
"""

from __future__ import annotations

import itertools
import random
import time

import click

from leelaz.game.board import Board
from leelaz.game.coords import PASS
from leelaz.game.state import GameState
from leelaz.tools.bench.common import CONTEXT, say, table


def playout(board: Board, rng: random.Random) -> int:
    """Play random non-eye-filling legal moves on `board` until two passes; return moves."""
    moves = passes = 0
    while passes < 2 and moves < 1000:
        color = board.to_move
        candidates = board.empty[:board.empty_cnt].tolist()
        n = len(candidates)
        move = PASS
        while n:
            i = int(rng.random() * n)
            v = candidates[i]
            if board.is_legal(color, v) and not board.is_eye(color, v):
                move = v
                break
            n -= 1
            candidates[i] = candidates[n]
        board.play_move(color, move)
        passes = passes + 1 if move == PASS else 0
        moves += 1
    return moves


def bench_playouts(seconds: float, seed: int) -> tuple[int, int, float]:
    rng = random.Random(seed)
    start = time.process_time()
    games = moves = 0
    while time.process_time() - start < seconds:
        moves += playout(Board(), rng)
        games += 1
    return games, moves, time.process_time() - start


def middle_game(seed: int, length: int = 150) -> GameState:
    rng = random.Random(seed)
    state = GameState()
    for _ in range(length):
        state.play(state.to_move, rng.choice(state.legal_moves(state.to_move)))
    return state


def per_call_us(fn, seconds: float) -> float:
    """Mean microseconds per call of fn(), measured for about `seconds`."""
    calls = 0
    start = time.process_time()
    elapsed = 0.0
    while elapsed < seconds:
        for _ in range(200):
            fn()
        calls += 200
        elapsed = time.process_time() - start
    return elapsed / calls * 1e6


@click.command("board", context_settings=CONTEXT)
@click.option("--seconds", type=click.FloatRange(0, None, min_open=True), default=3.0,
              show_default=True, help="Time per measurement.")
@click.option("--seed", type=int, default=1, show_default=True,
              help="Seed of the random playouts and of the middle-game position.")
def command(seconds: float, seed: int) -> None:
    """Random playouts per second and the cost of a search step's board work."""
    games, moves, elapsed = bench_playouts(seconds, seed)
    state = middle_game(seed)
    color = state.to_move
    legal = state.legal_moves(color)
    cycle = itertools.cycle(legal)
    t = seconds / 3
    rows = [
        ["random playouts", f"{moves / elapsed:,.0f} moves/s",
         f"{games} games, {moves / games:.0f} moves/game"],
        ["GameState.copy()", f"{per_call_us(state.copy, t):.1f} us", "move 150"],
        ["copy() + play()",
         f"{per_call_us(lambda: state.copy().play(color, next(cycle)), t):.1f} us",
         f"over the {len(legal)} legal moves"],
        ["Board.copy()", f"{per_call_us(state.board.copy, t):.1f} us", ""],
        ["legal_moves()", f"{per_call_us(lambda: state.legal_moves(color), t):.1f} us", ""],
        ["superko()", f"{per_call_us(state.superko, t):.2f} us", "150 earlier positions"],
    ]
    say(table(["what", "speed", "note"], rows))
