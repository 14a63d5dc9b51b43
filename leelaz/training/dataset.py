"""Training positions: compact game packs, a fast replay, batches with 8-fold symmetry.

Owns: the game pack format (what scripts/prepare_gpu_data.py writes), the replay of a move
list into the sequence of boards, `PositionSet` (every position of a set of games, held as one
board row per position so that the 8 history planes are 8 row lookups), batch assembly with
per-sample symmetry, and reading Leela Zero's text training chunks (training/tf/chunkparser.py).
Imports: numpy, stdlib, game.coords, game.sgf (plain records read from the text),
nn.features (the plane layout), nn.symmetry (the symmetry tables); lazily torch (batches),
training.records/chunks/data_files (chunk files) and training.supervised (SGF files that
are not one plain game per line).

Why its own replay: training needs tens of millions of positions rebuilt in a minute on the
GPU machine. `replay_boards` is a minimal board (mailbox list, flood-fill captures, simple ko)
that only places stones; it is checked against the C++ engine's own planes (dump_supervised)
in tests/test_trainer.py. The engine's GameState stays the reference for everything else.

Board rows use Leela Zero's colour numbers per intersection index (BLACK 0, WHITE 1, EMPTY 2).
Row i of a game is the board *before* move i, so position i's history plane h is row i - h
(zero when i - h < 0, as Leela Zero leaves planes older than the game empty, gather_features).
The side to move at position i is Black for even i: Tygem games have no handicap and record
passes as moves, so turns alternate.

Hot path: `replay_boards` (pure Python, ~5 us per move) and `PositionSet.batch` (torch gathers
on the training device).
"""

from __future__ import annotations

import gzip
import io
import lzma
from dataclasses import dataclass

import numpy as np

from leelaz.files import atomic_open
from leelaz.game.coords import (ALL_VERTICES, BOARD_SIZE, DIRECTIONS, EMPTY, INVAL,
                                NUM_INTERSECTIONS, PASS_INDEX, STRIDE)
from leelaz.game.outcome import NO_RESULT, result_kind  # noqa: F401  (scripts read it here)
from leelaz.game.sgf import plain_record
from leelaz.nn.features import HISTORY, INPUT_PLANES
from leelaz.nn.symmetry import SYMMETRY_TABLE, UNDO_POLICY


# ---------------------------------------------------------------------------------------------
# Replay

_STRIDE = STRIDE
_BORDER = INVAL
_EMPTY = EMPTY
_VERTEX_OF = list(ALL_VERTICES)
_INDEX_OF = {v: i for i, v in enumerate(_VERTEX_OF)}
_DIRS = DIRECTIONS


def _empty_mailbox() -> list[int]:
    board = [_BORDER] * (_STRIDE * _STRIDE)
    for v in _VERTEX_OF:
        board[v] = _EMPTY
    return board


def _group_without_liberty(board: list[int], start: int) -> list[int] | None:
    """The stones of start's group if it has no liberty, else None (stops at the first one)."""
    color = board[start]
    stack = [start]
    seen = {start}
    while stack:
        v = stack.pop()
        for d in _DIRS:
            n = v + d
            c = board[n]
            if c == _EMPTY:
                return None
            if c == color and n not in seen:
                seen.add(n)
                stack.append(n)
    return list(seen)


def replay_boards(slots) -> tuple[bytes, int]:
    """Play a game's moves (policy slots, Black first, alternating) from the empty board.

    Returns (rows, n): n * 361 bytes, row i = board before move i, for the first n moves that
    are legal (empty point, not the ko point, not suicide); n < len(slots) means the game was
    cut at an illegal move. Hot path.
    """
    board = _empty_mailbox()
    cells = bytearray([_EMPTY]) * NUM_INTERSECTIONS
    rows = []
    ko = -1
    color = 0
    vertex_of, index_of, dirs = _VERTEX_OF, _INDEX_OF, _DIRS
    for slot in slots:
        rows.append(bytes(cells))
        if slot == PASS_INDEX:
            ko = -1
            color ^= 1
            continue
        v = vertex_of[slot]
        if board[v] != _EMPTY or v == ko:
            rows.pop()
            break
        board[v] = color
        cells[slot] = color
        other = color ^ 1
        captured = []
        for d in dirs:
            n = v + d
            if board[n] == other:
                dead = _group_without_liberty(board, n)
                if dead:
                    for s in dead:
                        board[s] = _EMPTY
                        cells[index_of[s]] = _EMPTY
                    captured += dead
        if not captured and _group_without_liberty(board, v):
            rows.pop()
            board[v] = _EMPTY
            cells[slot] = _EMPTY
            break
        ko = -1
        if len(captured) == 1:
            # A lone stone that captured exactly one stone and now has one liberty: ko.
            lone = all(board[v + d] != color for d in dirs)
            libs = [v + d for d in dirs if board[v + d] == _EMPTY]
            if lone and len(libs) == 1:
                ko = captured[0]
        color ^= 1
    return b"".join(rows), len(rows)


# ---------------------------------------------------------------------------------------------
# SGF text -> moves (the fast path for one-game-per-line collections like tygem-9d)

def parse_sgf_line(text: str) -> tuple[list[int], str] | None:
    """(policy slots, RE value) of a plain 19x19 game record without setup stones or handicap
    (the tygem-9d form), or None when the record is something else (use the SGF module)."""
    record = plain_record(text)
    if record is None:
        return None
    moves, result = record
    slots = []
    expect = "B"
    for color, point in moves:
        if color != expect:
            return None
        expect = "W" if expect == "B" else "B"
        if point in ("", "tt"):
            slots.append(PASS_INDEX)
        else:
            x = ord(point[0]) - 97
            y = BOARD_SIZE - 1 - (ord(point[1]) - 97)
            slots.append(y * BOARD_SIZE + x)
    return slots, result


# ---------------------------------------------------------------------------------------------
# Game packs: many games in one small file (uint16 moves, per-game length, winner, kind)

#: What the value head learns from each kind of result. Time and forfeit results say who
#: ran out of time or left, not who was winning, so those games train the policy only.
VALUE_KINDS = {"R", "S"}


@dataclass
class GamePack:
    moves: np.ndarray  # uint16 [total moves], policy slots, games concatenated
    lengths: np.ndarray  # int32 [games]
    winner: np.ndarray  # int8 [games]: +1 Black won, -1 White won, 0 unknown
    use_value: np.ndarray  # bool [games]: the result is a fair value target (VALUE_KINDS)

    @property
    def games(self) -> int:
        return len(self.lengths)

    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.lengths, dtype=np.int64)])

    def select(self, games: np.ndarray) -> "GamePack":
        off = self.offsets()
        parts = [self.moves[off[g]:off[g + 1]] for g in games]
        return GamePack(np.concatenate(parts) if parts else np.zeros(0, np.uint16),
                        self.lengths[games].copy(), self.winner[games].copy(),
                        self.use_value[games].copy())

    @staticmethod
    def from_games(games: list[tuple[list[int], str]]) -> "GamePack":
        moves, lengths, winner, use = [], [], [], []
        for slots, result in games:
            w, kind = result_kind(result)
            moves.extend(slots)
            lengths.append(len(slots))
            winner.append(w)
            use.append(w != NO_RESULT and kind in VALUE_KINDS)
        return GamePack(np.array(moves, np.uint16), np.array(lengths, np.int32),
                        np.array(winner, np.int8), np.array(use, bool))

    def save(self, path: str) -> None:
        """lzma-compressed npz, written to a temporary name and renamed."""
        buf = io.BytesIO()
        np.savez(buf, moves=self.moves, lengths=self.lengths, winner=self.winner,
                 use_value=self.use_value)
        with atomic_open(path, "wb") as f:
            f.write(lzma.compress(buf.getvalue(), preset=9 | lzma.PRESET_EXTREME))

    @staticmethod
    def load(path: str) -> "GamePack":
        with open(path, "rb") as f:
            data = lzma.decompress(f.read())
        z = np.load(io.BytesIO(data))
        return GamePack(z["moves"], z["lengths"].astype(np.int32), z["winner"].astype(np.int8),
                        z["use_value"].astype(bool))


def read_sgf_collection(path: str) -> list[tuple[list[int], str]]:
    """Games of an SGF collection (.sgf or .sgf.gz). One-game-per-line files of plain games take
    the fast path; anything else goes through the SGF module's main line."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    games = []
    lines = [ln for ln in text.splitlines() if ln.strip()]
    one_per_line = all(ln.lstrip().startswith("(;") for ln in lines)
    fast = [parse_sgf_line(ln) for ln in lines] if one_per_line else [None]
    if all(g is not None for g in fast):
        return [g for g in fast if g[0]]
    from leelaz.training.supervised import sgf_games  # the SGF engineer's general path
    for slots, result in sgf_games(path):
        games.append((slots, result))
    return games


# ---------------------------------------------------------------------------------------------
# Positions


def _replay_chunk(args):
    moves, lengths = args
    out, kept, off = [], [], 0
    for n in lengths:
        rows, k = replay_boards(moves[off:off + n].tolist())
        off += n
        out.append(rows)
        kept.append(k)
    return b"".join(out), kept


@dataclass
class PositionSet:
    """Every position of some games. Row i: the board before the move at position i."""

    boards: np.ndarray  # uint8 [N, 361], colours per intersection index
    ply: np.ndarray  # int32 [N]: move number within its game (side to move = ply % 2)
    move: np.ndarray  # int64 [N]: policy slot played
    z: np.ndarray  # float32 [N]: +1/-1 from the side to move's view, 0 when unknown
    z_mask: np.ndarray  # float32 [N]: 1 when z is a usable value target
    dropped_games: int = 0  # games cut short at an illegal move
    to_move: np.ndarray | None = None  # uint8 [N] BLACK/WHITE; None: Black at even ply

    def __len__(self) -> int:
        return len(self.ply)

    def side_to_move(self) -> np.ndarray:
        if self.to_move is not None:
            return self.to_move
        return (self.ply % 2).astype(np.uint8)

    @staticmethod
    def from_game_arrays(games) -> "PositionSet":
        """Positions from training.supervised's GameArrays (GameState replay: handles setup
        stones, handicap and any SGF; slower than from_pack). A result of 0 (a time or
        forfeit game kept with unreliable="zero") trains the policy only."""
        games = [g for g in games if len(g)]
        if not games:
            raise ValueError("no positions")
        boards = np.concatenate([g.boards for g in games])
        ply = np.concatenate([np.arange(len(g), dtype=np.int32) for g in games])
        move = np.concatenate([g.slots for g in games]).astype(np.int64)
        z = np.concatenate([g.result for g in games]).astype(np.float32)
        to_move = np.concatenate([g.to_move for g in games]).astype(np.uint8)
        return PositionSet(boards, ply, move, z, (z != 0).astype(np.float32), 0, to_move)

    @staticmethod
    def from_pack(pack: GamePack, workers: int = 1, min_moves: int = 1) -> "PositionSet":
        """Replay every game; with workers > 1, in a process pool (games in chunks)."""
        off = pack.offsets()
        chunk = 512
        jobs = [(pack.moves[off[g]:off[min(g + chunk, pack.games)]],
                 pack.lengths[g:g + chunk]) for g in range(0, pack.games, chunk)]
        if workers > 1 and len(jobs) > 1:
            import multiprocessing as mp
            with mp.get_context("fork").Pool(workers) as pool:
                results = pool.map(_replay_chunk, jobs, chunksize=1)
        else:
            results = [_replay_chunk(j) for j in jobs]
        rows = b"".join(r[0] for r in results)
        kept = np.array([k for r in results for k in r[1]], np.int64)
        dropped = int((kept < pack.lengths).sum())
        boards = np.frombuffer(rows, np.uint8).reshape(-1, NUM_INTERSECTIONS)
        ply = np.concatenate([np.arange(k, dtype=np.int32) for k in kept]) if len(kept) else \
            np.zeros(0, np.int32)
        move = np.concatenate([pack.moves[off[g]:off[g] + k] for g, k in enumerate(kept)]
                              ).astype(np.int64) if len(kept) else np.zeros(0, np.int64)
        game_winner = np.repeat(pack.winner.astype(np.float32), kept)
        stm_sign = np.where(ply % 2 == 0, 1.0, -1.0).astype(np.float32)  # Black to move: +1
        z = game_winner * stm_sign
        z_mask = np.repeat(pack.use_value.astype(np.float32), kept)
        keep_game = kept >= min_moves
        if not keep_game.all():
            pos_keep = np.repeat(keep_game, kept)
            boards, ply, move = boards[pos_keep], ply[pos_keep], move[pos_keep]
            z, z_mask = z[pos_keep], z_mask[pos_keep]
        return PositionSet(boards, ply, move, z * (z_mask > 0), z_mask, dropped,
                           (ply % 2).astype(np.uint8))

    def to(self, device) -> "TorchPositions":
        return TorchPositions(self, device)


class TorchPositions:
    """A PositionSet on a torch device, and batch assembly there (torch imported lazily so
    that the pack tools run without it)."""

    def __init__(self, positions: PositionSet, device):
        import warnings

        import torch
        self.torch = torch
        self.device = torch.device(device)

        def t(a: np.ndarray):
            with warnings.catch_warnings():  # read-only replay buffers are never written
                warnings.simplefilter("ignore", UserWarning)
                return torch.from_numpy(np.ascontiguousarray(a)).to(self.device)
        self.boards = t(positions.boards)
        self.ply = t(positions.ply).long()
        self.stm = t(positions.side_to_move())
        self.move = t(positions.move)
        self.z = t(positions.z)
        self.z_mask = t(positions.z_mask)
        self.sym = t(SYMMETRY_TABLE.astype(np.int64))
        self.policy_sym = t(UNDO_POLICY.astype(np.int64))
        self.hist = torch.arange(HISTORY, device=self.device)

    def __len__(self) -> int:
        return len(self.ply)

    def batch(self, idx, symmetries=None):
        """(planes float32 [B,18,19,19], policy target [B,362], z [B], z_mask [B]).

        symmetries: None for identity, else an int64 tensor [B] of symmetry numbers 0..7.
        The planes are nn/features.py's layout built on the torch device (a deliberate copy
        of features.planes_from_colours in torch: the batch never leaves the GPU);
        tests/test_trainer.py checks them against Leela Zero's own (dump_supervised).
        """
        torch = self.torch
        idx = idx.to(self.device)
        ply = self.ply[idx]
        rows = (idx[:, None] - self.hist[None, :]).clamp(min=0)
        valid = (ply[:, None] >= self.hist[None, :])  # [B, 8]
        boards = self.boards[rows]  # [B, 8, 361]
        stm = self.stm[idx][:, None, None]
        own = (boards == stm) & valid[:, :, None]
        opp = (boards == (1 - stm)) & valid[:, :, None]
        black = (stm == 0).expand(-1, 1, NUM_INTERSECTIONS)
        planes = torch.cat([own, opp, black, ~black], dim=1)  # bool [B, 18, 361]
        target_slot = self.move[idx]
        if symmetries is not None:
            symmetries = symmetries.to(self.device)
            gather = self.sym[symmetries][:, None, :].expand(-1, planes.shape[1], -1)
            planes = torch.gather(planes, 2, gather)
            target_slot = self.policy_sym[symmetries, target_slot]
        target = torch.zeros(len(idx), NUM_INTERSECTIONS + 1, device=self.device)
        target.scatter_(1, target_slot[:, None], 1.0)
        planes = planes.view(-1, INPUT_PLANES, BOARD_SIZE, BOARD_SIZE).float()
        return planes, target, self.z[idx], self.z_mask[idx]


# ---------------------------------------------------------------------------------------------
# Leela Zero text training chunks (training/tf/chunkparser.py)


def read_chunk(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Records of one chunk file (gzip or plain), parsed by training.records:
    (planes uint8 [N,18,361] with the two side-to-move planes added, policy float32 [N,362],
    z float32 [N] for the side to move). TrainingError naming the file when it cannot be
    read or holds a bad record (training.data_files.reading)."""
    from leelaz.training.chunks import read_chunk_text
    from leelaz.training.data_files import reading
    from leelaz.training.records import parse_records
    with reading(path):
        records = list(parse_records(read_chunk_text(path)))
    n = len(records)
    planes = np.zeros((n, 18, NUM_INTERSECTIONS), np.uint8)
    policy = np.zeros((n, NUM_INTERSECTIONS + 1), np.float32)
    z = np.zeros(n, np.float32)
    for r, rec in enumerate(records):
        planes[r, :16] = rec.planes[:16]
        planes[r, 16 + rec.to_move] = 1
        policy[r] = rec.probabilities
        z[r] = rec.outcome
    return planes, policy, z


class ChunkPositions:
    """Records from chunk files on a torch device, with the same batch() as TorchPositions."""

    def __init__(self, paths: list[str], device):
        import torch
        parts = [read_chunk(p) for p in paths]
        self.torch = torch
        self.device = torch.device(device)
        self.planes = torch.from_numpy(np.concatenate([p[0] for p in parts])).to(self.device)
        self.policy = torch.from_numpy(np.concatenate([p[1] for p in parts])).to(self.device)
        self.z = torch.from_numpy(np.concatenate([p[2] for p in parts])).to(self.device)
        self.sym = torch.from_numpy(SYMMETRY_TABLE.astype(np.int64)).to(self.device)
        self.policy_sym = torch.from_numpy(UNDO_POLICY.astype(np.int64)).to(self.device)

    def __len__(self) -> int:
        return len(self.z)

    def batch(self, idx, symmetries=None):
        torch = self.torch
        idx = idx.to(self.device)
        planes, policy = self.planes[idx], self.policy[idx]
        if symmetries is not None:
            symmetries = symmetries.to(self.device)
            gather = self.sym[symmetries][:, None, :].expand(-1, 18, -1)
            planes = torch.gather(planes, 2, gather)
            moved = torch.zeros_like(policy)
            moved.scatter_(1, self.policy_sym[symmetries], policy)
            policy = moved
        planes = planes.view(-1, 18, BOARD_SIZE, BOARD_SIZE).float()
        return planes, policy, self.z[idx], torch.ones_like(self.z[idx])
