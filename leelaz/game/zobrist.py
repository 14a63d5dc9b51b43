"""Leela Zero's random number generator and the Zobrist keys it draws.

Owns: `Xoroshiro128Plus` (xoroshiro128+ seeded through splitmix64, as LZ's `Random`), the
Zobrist tables in LZ's draw order (seed 5489) and the hash constants.
Imports: game.coords only.

The tables are bit-identical to Leela Zero 0.17's, so our `Hash:`/`Ko-Hash:` lines in
`showboard` equal the reference's (checked against the binary in tests/test_zobrist.py).
The generator is also what the search uses for `-s SEED` (random symmetries, random moves).
"""

from __future__ import annotations

from leelaz.game.coords import ALL_VERTICES, NUM_VERTICES, STRIDE, symmetric_xy

MASK64 = (1 << 64) - 1

#: Seed of the Zobrist tables (the Mersenne Twister default LZ keeps using).
ZOBRIST_SEED = 5489
#: Starting value of both the full hash and the ko-hash.
HASH_INIT = 0x1234567887654321
#: XORed into the full hash while Black is to move.
BLACK_TO_MOVE = 0xABCDABCDABCDABCD


def splitmix64(z: int) -> int:
    """One splitmix64 step: the seeding function of LZ's RNG."""
    z = (z + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class Xoroshiro128Plus:
    """xoroshiro128+ (rotations 55/14/36) with state s0 = splitmix64(seed), s1 = splitmix64(s0).

    `next_u64()` is LZ's `Random::gen()`; `randint(n)` is `gen() % n` (LZ's randfix/randuint64);
    `random()` is LZ's `randflt()`: the top 24 bits of a draw scaled to [0, 1).
    """

    __slots__ = ("s0", "s1")

    def __init__(self, seed: int) -> None:
        self.seed(seed)

    def seed(self, seed: int) -> None:
        self.s0 = splitmix64(seed & MASK64)
        self.s1 = splitmix64(self.s0)

    def next_u64(self) -> int:
        s0 = self.s0
        s1 = self.s1
        result = (s0 + s1) & MASK64
        s1 ^= s0
        self.s0 = (((s0 << 55) | (s0 >> 9)) & MASK64) ^ s1 ^ ((s1 << 14) & MASK64)
        self.s1 = ((s1 << 36) | (s1 >> 28)) & MASK64
        return result

    def randint(self, n: int) -> int:
        """A draw modulo n (0 <= result < n), exactly as LZ reduces its draws."""
        return self.next_u64() % n

    def random(self) -> float:
        """A float in [0, 1) from the top 24 bits of one draw (LZ's randflt)."""
        return (self.next_u64() >> 40) * (1.0 / (1 << 24))


def _draw_tables() -> tuple[list[list[int]], list[int], list[list[int]], list[int]]:
    """Draw the four tables in LZ's order: stones, ko, prisoners, passes."""
    rng = Xoroshiro128Plus(ZOBRIST_SEED)
    draw = rng.next_u64
    stones = [[draw() for _ in range(NUM_VERTICES)] for _ in range(4)]
    ko = [draw() for _ in range(NUM_VERTICES)]
    pris = [[draw() for _ in range(2 * NUM_VERTICES)] for _ in range(2)]
    passes = [draw() for _ in range(5)]
    return stones, ko, pris, passes


#: ZOBRIST[state][vertex] for state BLACK, WHITE, EMPTY, INVAL.
#: ZOBRIST_KO[ko vertex, or 0 for none]. ZOBRIST_PRIS[colour][stones that colour captured].
#: ZOBRIST_PASS[consecutive passes, capped at 4].
ZOBRIST, ZOBRIST_KO, ZOBRIST_PRIS, ZOBRIST_PASS = _draw_tables()

#: STONE_DELTA[colour][v] = ZOBRIST[EMPTY][v] ^ ZOBRIST[colour][v]: one XOR turns an empty
#: point into a stone of that colour (or back), in both the full hash and the ko-hash.
STONE_DELTA = [[e ^ s for e, s in zip(ZOBRIST[2], ZOBRIST[c])] for c in (0, 1)]


def _packed_symmetric_deltas() -> list[list[int]]:
    """SYM_STONE_DELTA[colour][v]: STONE_DELTA[colour][T_s(v)] for the 8 symmetries s, packed
    into one int (bits 64s..64s+63). A board XORs these as it XORs STONE_DELTA, so it carries
    the stone terms of all 8 symmetric hashes at the cost of one big-int XOR per stone; the
    network's cache looks positions up under their mirrors early in the game (src/NNCache.cpp)."""
    packed = [[0] * NUM_VERTICES for _ in (0, 1)]
    for v in ALL_VERTICES:
        x, y = v % STRIDE - 1, v // STRIDE - 1
        for s in range(8):
            sx, sy = symmetric_xy(x, y, s)
            t = (sy + 1) * STRIDE + sx + 1
            for c in (0, 1):
                packed[c][v] |= STONE_DELTA[c][t] << (64 * s)
    return packed


SYM_STONE_DELTA = _packed_symmetric_deltas()
