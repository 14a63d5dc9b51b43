"""The network's input planes for a position (Network::gather_features).

Owns: the plane order (`planes_from_colours`, the one place that lays the planes out), and on
it `input_planes(state) -> uint8 [18, 361]`, the one encoding used by the network, the
training recorder and the trainer (training/supervised.history_planes), `input_planes_batch`,
the same for a batch (what `Network` uses), and `packed_inputs`, the positions for a backend
that builds the planes on its device; `planes_from_histories` and `packed_histories` are the
same two for positions given as arrays of mailboxes (the compiled search's leaves). The
layout's numbers (history length, planes, the packed row) are the backend seam's contract,
backends/base.py, which also hands them to the OpenCL kernels as #defines: both sides of the
seam read them there, since backends/ may not import nn/. Imports: numpy, game.coords,
nn.symmetry (the points' mailbox slots and the symmetry table), backends.base (the layout's
numbers).

Planes 0-7: the stones of the side to move NOW, at the positions 0..7 moves ago; planes 8-15:
the other side's stones at the same times; plane 16 all ones if Black is to move, plane 17 all
ones if White is. History comes from `state.history` (`history[-1 - h]` is the position h moves
ago, and the game's anchored start is `history[0]`), so planes older than the anchored start
stay zero; a pass repeats the board, showing as two equal planes.

Dynamic komi (docs/dynamic-komi.md §2.1): a state with a network komi k (`state.net_komi`
set) gets 0.5 + k/15 on the side to move's colour plane and 0.5 - k/15 on the other's, so
k = 7.5 gives exactly the standard planes and k = -7.5 the other colour's. `colour_planes`
owns that map; the packed positions carry its two values per row.
"""

from __future__ import annotations

import numpy as np

from leelaz.backends.base import (HISTORY_LENGTH, INPUT_CHANNELS, MAILBOX_STRIDE,
                                  PACKED_KOMI_BYTES, PACKED_KOMI_FLAG)
from leelaz.game.coords import BLACK, INVAL, NUM_INTERSECTIONS, NUM_VERTICES, STRIDE
from leelaz.nn.symmetry import POINTS, SYMMETRY_TABLE

INPUT_PLANES = INPUT_CHANNELS
HISTORY = HISTORY_LENGTH
#: The plane of the side to move's stones h moves ago is h; the other side's, OTHER + h.
OTHER = HISTORY
#: All ones when Black is to move; the next plane when White is.
BLACK_TO_MOVE_PLANE = 2 * HISTORY
assert MAILBOX_STRIDE == STRIDE, "packed positions are the board's own mailboxes"

#: SYMMETRIC_POINTS[s][idx]: the mailbox slot the network reads at input idx under symmetry s
#: (transform_planes folded into the gather from the mailboxes).
SYMMETRIC_POINTS = POINTS[SYMMETRY_TABLE]
SYMMETRIC_POINTS.setflags(write=False)
#: Stand-ins for the positions before the anchored start: a mailbox of neither colour, so
#: their planes compare to zero. _MISSING[k] is k of them.
_MISSING = [[bytes([INVAL]) * NUM_VERTICES] * k for k in range(HISTORY + 1)]


#: Bit of a packed row's symmetry byte saying the row's colour-plane values follow the pairs.
KOMI_FLAG = PACKED_KOMI_FLAG
#: Bytes of colour-plane values per packed row: float32 (side to move's plane, the other's).
KOMI_BYTES = PACKED_KOMI_BYTES
_F15 = np.float32(15.0)
_HALF = np.float32(0.5)


def colour_planes(stm_komi: float) -> tuple[np.float32, np.float32]:
    """(side to move's colour plane, other colour plane) for network komi `stm_komi`, in
    float32: 0.5 + k/15 and 0.5 - k/15 (k = 7.5 gives exactly 1 and 0)."""
    k = np.float32(stm_komi) / _F15
    return _HALF + k, _HALF - k


def input_planes(state) -> np.ndarray:
    """uint8 [18, 361] planes for `state` (index order y*19 + x), from the side to move's view.

    The reference for one position (training recorder, tests); `Network` fills its batches
    with `input_planes_batch`, which must give the same planes. The last 8 boards' mailboxes
    are joined into one buffer and converted with one gather and two compares."""
    planes = np.zeros((INPUT_PLANES, NUM_INTERSECTIONS), dtype=np.uint8)
    to_move = state.to_move
    history = state.history
    count = min(len(history), HISTORY)
    squares = b"".join([history[-1 - h].square for h in range(count)])
    colours = np.frombuffer(squares, dtype=np.uint8).reshape(count, -1)[:, POINTS]
    np.equal(colours, to_move, out=planes[:count].view(bool))
    np.equal(colours, 1 - to_move, out=planes[OTHER:OTHER + count].view(bool))
    planes[BLACK_TO_MOVE_PLANE + (to_move != BLACK)] = 1
    return planes


def planes_from_colours(colours: np.ndarray, to_move: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The plane layout: out [n, 18, 361] (any numeric dtype) from colours uint8 [n, 8, 361]
    (each position's last 8 boards, newest first, INVAL before the game's start: those planes
    stay zero) and to_move uint8 [n]. Returns out."""
    side = to_move[:, None, None]
    np.equal(colours, side, out=out[:, :HISTORY])
    np.equal(colours, 1 - side, out=out[:, OTHER:OTHER + HISTORY])
    out[:, BLACK_TO_MOVE_PLANE] = (to_move == BLACK)[:, None]
    out[:, BLACK_TO_MOVE_PLANE + 1] = (to_move != BLACK)[:, None]
    return out


def input_planes_batch(states, out: np.ndarray, symmetries=None) -> np.ndarray:
    """Fill out[i] ([n, 18, 361], float32 or any numeric dtype) with `input_planes(states[i])`,
    under symmetry `symmetries[i]` if given (as `transform_planes` would move it); returns out.

    Hot path (every leaf the search sends to the network): one join of all the histories'
    mailboxes, one gather per symmetry present and two compares for the whole batch, instead
    of a dozen numpy calls per position. A state may appear several times (one row per
    symmetry when averaging)."""
    colours = _history_colours(states, symmetries)
    to_move = np.array([state.to_move for state in states], dtype=np.uint8)
    planes_from_colours(colours, to_move, out)
    for i, state in enumerate(states):
        if state.net_komi is not None:  # dynamic komi: float colour planes
            own, other = colour_planes(state.stm_komi)
            out[i, BLACK_TO_MOVE_PLANE + state.to_move] = own
            out[i, BLACK_TO_MOVE_PLANE + 1 - state.to_move] = other
    return out


def packed_inputs(states, symmetries) -> bytes:
    """The positions as a backend that builds the input planes itself takes them (OpenCL's
    `submit_packed`): each state's last 8 mailboxes (8 x 441 bytes, newest first, a position
    before the history all INVAL), then a (side to move, symmetry) byte pair per state.
    3.5 kB a position instead of 26 kB of float planes, and one join instead of gathers.

    With dynamic komi (any state with `net_komi`), a KOMI_BYTES section follows: per row the
    two colour-plane values (float32 little-endian), and those rows' symmetry bytes carry
    KOMI_FLAG. Without it the bytes are exactly as before."""
    pairs = bytearray(2 * len(states))
    pairs[0::2] = bytes([state.to_move for state in states])
    pairs[1::2] = bytes(symmetries)
    if all(state.net_komi is None for state in states):
        return _joined_histories(states) + bytes(pairs)
    values = np.zeros((len(states), 2), dtype="<f4")
    for i, state in enumerate(states):
        if state.net_komi is not None:
            values[i] = colour_planes(state.stm_komi)
            pairs[2 * i + 1] |= KOMI_FLAG
    return _joined_histories(states) + bytes(pairs) + values.tobytes()


def _history_colours(states, symmetries) -> np.ndarray:
    """uint8 [n, 8, 361]: the colours of each state's last 8 positions (newest first), in the
    input order of its row's symmetry; a position before the history is all INVAL."""
    n = len(states)
    mailboxes = np.frombuffer(_joined_histories(states), dtype=np.uint8)
    return colours_from_mailboxes(mailboxes.reshape(n, HISTORY, NUM_VERTICES), symmetries)


def colours_from_mailboxes(mailboxes: np.ndarray, symmetries) -> np.ndarray:
    """uint8 [n, 8, 361] from mailboxes uint8 [n, 8, 441] (each row's last 8 positions,
    newest first): each row's points in the input order of its symmetry (`symmetries`, one
    0..7 a row, or None for the identity).

    The rows are gathered grouped by symmetry, so each group is one gather (at most 8 for
    any batch) and one reordering puts the rows back."""
    n = len(mailboxes)
    if symmetries is None:
        return mailboxes[:, :, POINTS]
    groups: dict[int, list[int]] = {}
    for row, s in enumerate(symmetries):
        groups.setdefault(s, []).append(row)
    if len(groups) > 1:
        order = [row for rows in groups.values() for row in rows]
        mailboxes = mailboxes[order]
    colours = np.empty((n, HISTORY, NUM_INTERSECTIONS), dtype=np.uint8)
    start = 0
    for s, rows in groups.items():
        end = start + len(rows)
        # mode="wrap": the indices are valid, and "raise" would buffer the output
        np.take(mailboxes[start:end], SYMMETRIC_POINTS[s], axis=2, out=colours[start:end],
                mode="wrap")
        start = end
    if len(groups) <= 1:
        return colours
    back = np.empty(n, dtype=np.intp)
    back[order] = np.arange(n)
    return colours[back]


def packed_histories(histories: np.ndarray, to_move, symmetries) -> bytes:
    """`packed_inputs` for positions given as arrays (the compiled search's leaves, which
    have no GameState): histories uint8 [n, 8, 441] (each row's last 8 mailboxes, newest
    first, INVAL before the history), to_move and symmetries one a row. No network komi."""
    pairs = bytearray(2 * len(histories))
    pairs[0::2] = bytes(to_move)
    pairs[1::2] = bytes(symmetries)
    return np.ascontiguousarray(histories, dtype=np.uint8).tobytes() + bytes(pairs)


def planes_from_histories(histories: np.ndarray, to_move: np.ndarray, symmetries,
                          out: np.ndarray) -> np.ndarray:
    """`input_planes_batch` for positions given as arrays (see `packed_histories`): out
    [n, 18, 361] filled and returned."""
    colours = colours_from_mailboxes(histories, symmetries)
    return planes_from_colours(colours, np.asarray(to_move, dtype=np.uint8), out)


def _joined_histories(states) -> bytes:
    """The mailboxes of each state's last 8 positions, newest first, padded with `_MISSING`
    where the history is shorter: n x 8 x 441 bytes. A state that has them joined already
    (`joined_history`: search/core/leaf_inputs.LeafState, a leaf of the compiled search,
    which has no Boards) gives those bytes."""
    squares = []
    for state in states:
        joined = getattr(state, "joined_history", None)  # the compiled search's leaves
        if joined is not None:
            squares.append(joined)
            continue
        boards = state.history[:-HISTORY - 1:-1]  # newest first, at most 8
        squares += [board.square for board in boards]
        squares += _MISSING[HISTORY - len(boards)]
    return b"".join(squares)
