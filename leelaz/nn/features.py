"""The network's input planes for a position (reference doc 4.3).

Owns: `input_planes(state) -> uint8 [18, 361]`, the one encoding used by both the network and
the training recorder. Imports: numpy, game.coords, nn.symmetry (the points' mailbox slots).

Planes 0-7: the stones of the side to move NOW, at the positions 0..7 moves ago; planes 8-15:
the other side's stones at the same times; plane 16 all ones if Black is to move, plane 17 all
ones if White is. History comes from `state.history` (`history[-1 - h]` is the position h moves
ago, and the game's anchored start is `history[0]`), so planes older than the anchored start
stay zero; a pass repeats the board, showing as two equal planes.
"""

from __future__ import annotations

import numpy as np

from leelaz.game.coords import BLACK, NUM_INTERSECTIONS
from leelaz.nn.symmetry import POINTS

INPUT_PLANES = 18
HISTORY = 8


def input_planes(state) -> np.ndarray:
    """uint8 [18, 361] planes for `state` (index order y*19 + x), from the side to move's view.

    Hot path (once per evaluated leaf): the last 8 boards' mailboxes are joined into one
    buffer and converted with one gather and two compares."""
    planes = np.zeros((INPUT_PLANES, NUM_INTERSECTIONS), dtype=np.uint8)
    to_move = state.to_move
    history = state.history
    count = min(len(history), HISTORY)
    squares = b"".join([history[-1 - h].square for h in range(count)])
    colours = np.frombuffer(squares, dtype=np.uint8).reshape(count, -1)[:, POINTS]
    np.equal(colours, to_move, out=planes[:count].view(bool))
    np.equal(colours, 1 - to_move, out=planes[HISTORY:HISTORY + count].view(bool))
    planes[16 if to_move == BLACK else 17] = 1
    return planes
