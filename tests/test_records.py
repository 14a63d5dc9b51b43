"""The 19-line record and the chunk files, against src/Training.cpp, libc's %g and Leela Zero's own
dump_supervised output."""

from __future__ import annotations

import ctypes
import gzip
import os

import numpy as np
import pytest

import chunk_parser
from lz_training_oracle import lz_dump_supervised, lz_folder  # noqa: F401 (fixture)
from leelaz.game.coords import BLACK, WHITE
from leelaz.training import chunks, records

_libc = ctypes.CDLL(None)


def libc_g(value: float) -> str:
    """What C's printf("%g") prints for a double: what C++ `ostream << float` uses."""
    buf = ctypes.create_string_buffer(64)
    _libc.snprintf(buf, 64, b"%g", ctypes.c_double(value))
    return buf.value.decode()


# --------------------------------------------------------------------------------------------
# planes


def test_plane_bit_order_by_hand():
    bits = np.zeros(361, np.uint8)
    assert records.format_plane(bits) == "0" * 91
    bits[0] = 1  # A1 is the most significant bit of the first hex digit
    assert records.format_plane(bits) == "8" + "0" * 90
    bits[:] = 0
    bits[3] = 1
    bits[4] = bits[7] = 1
    assert records.format_plane(bits) == "19" + "0" * 89
    bits[:] = 0
    bits[360] = 1  # T19 is the final 0/1 character, not a hex digit
    assert records.format_plane(bits) == "0" * 90 + "1"
    bits[356:360] = 1
    assert records.format_plane(bits) == "0" * 89 + "f1"


def test_plane_round_trip_through_the_independent_parser():
    rng = np.random.default_rng(5)
    for density in (0.0, 0.1, 0.5, 1.0):
        bits = (rng.random(361) < density).astype(np.uint8)
        line = records.format_plane(bits)
        assert len(line) == 91
        assert chunk_parser.decode_plane(line) == bits.tolist()
        assert records.parse_plane(line).tolist() == bits.tolist()


# --------------------------------------------------------------------------------------------
# probabilities


@pytest.mark.parametrize("value,text", [
    (0.0, "0"), (1.0, "1"), (0.0625, "0.0625"), (6.25e-05, "6.25e-05"), (0.5, "0.5"),
    (1 / 3, "0.333333"), (2 / 3, "0.666667"), (1e-4, "0.0001"), (1e-5, "1e-05"),
    (0.1, "0.1"), (1 / 1600, "0.000625"), (7 / 1601, "0.00437227"),
])
def test_probability_text(value, text):
    assert records.format_probability(value) == text


def test_probability_text_matches_libc_g_of_the_float32():
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.random(3000), 10.0 ** rng.uniform(-9, 0, 3000),
                             rng.integers(1, 5000, 500) / rng.integers(5000, 20000, 500)])
    for v in values.astype(np.float32):
        assert records.format_probability(v) == libc_g(float(v))
    probs = values[:362].astype(np.float32)
    probs[::3] = 0
    assert records.format_probabilities(probs).split(" ") == [libc_g(float(v)) for v in probs]


# --------------------------------------------------------------------------------------------
# records


def _random_record(rng, to_move=WHITE, outcome=-1):
    planes = (rng.random((16, 361)) < 0.2).astype(np.uint8)
    visits = rng.integers(0, 50, 362) * (rng.random(362) < 0.1)
    visits[100] += 1
    probs = (visits.astype(np.float32) / np.float32(visits.sum())).astype(np.float32)
    return records.TrainingRecord(planes, to_move, probs, outcome)


def test_record_layout_read_by_the_independent_parser():
    rng = np.random.default_rng(1)
    rec = _random_record(rng, WHITE, -1)
    text = records.format_record(rec)
    assert text.endswith("\n") and not text.endswith("\n\n")
    lines = text[:-1].split("\n")
    assert len(lines) == 19
    assert all(len(l) == 91 for l in lines[:16])
    assert lines[16] == "1" and lines[18] == "-1"
    assert not lines[17].endswith(" ") and "  " not in lines[17]
    (parsed,) = chunk_parser.parse_text(text)
    assert parsed.planes == rec.planes.tolist()
    assert parsed.white_to_move and not parsed.winner_is_to_move
    assert parsed.probability_text == [libc_g(float(p)) for p in rec.probabilities]

    black = records.format_record(_random_record(rng, BLACK, 1))
    (parsed,) = chunk_parser.parse_text(black)
    assert not parsed.white_to_move and parsed.winner_is_to_move


def test_eighteen_planes_are_cut_to_sixteen():
    rng = np.random.default_rng(2)
    rec = _random_record(rng)
    full = np.concatenate([rec.planes, np.ones((2, 361), np.uint8)])
    assert records.format_fields(full, WHITE, rec.probabilities, -1) == records.format_record(rec)


def test_reader_round_trip():
    rng = np.random.default_rng(3)
    recs = [_random_record(rng, c, o) for c, o in [(BLACK, 1), (WHITE, 1), (WHITE, -1)]]
    text = "".join(records.format_record(r) for r in recs)
    back = list(records.parse_records(text))
    assert len(back) == 3
    for a, b in zip(recs, back):
        assert np.array_equal(a.planes, b.planes)
        assert a.to_move == b.to_move and a.outcome == b.outcome
        # 6 significant digits: the written value, not the exact float
        assert np.allclose(a.probabilities, b.probabilities, rtol=1e-5, atol=0)
    assert "".join(records.format_record(r) for r in back) == text


@pytest.mark.parametrize("bad", [
    lambda l: l[:-1],                                  # a line missing
    lambda l: [l[0][:-1]] + l[1:],                     # short plane line
    lambda l: [l[0][:-1] + "2"] + l[1:],               # last bit not 0/1
    lambda l: [l[0][:5] + "G" + l[0][6:]] + l[1:],     # not hex
    lambda l: l[:16] + ["2"] + l[17:],                 # side to move
    lambda l: l[:17] + [l[17] + " 0"] + l[18:],        # 363 probabilities
    lambda l: l[:18] + ["0"],                          # outcome
])
def test_reader_rejects_malformed_records(bad):
    rng = np.random.default_rng(4)
    lines = records.format_record(_random_record(rng)).splitlines()
    with pytest.raises(records.RecordError):
        list(records.parse_records(bad(lines)))


def test_writer_rejects_bad_fields():
    rng = np.random.default_rng(4)
    rec = _random_record(rng)
    with pytest.raises(ValueError):
        records.format_fields(rec.planes[:15], WHITE, rec.probabilities, 1)
    with pytest.raises(ValueError):
        records.format_fields(rec.planes, 2, rec.probabilities, 1)
    with pytest.raises(ValueError):
        records.format_fields(rec.planes, WHITE, rec.probabilities[:361], 1)
    with pytest.raises(ValueError):
        records.format_fields(rec.planes, WHITE, rec.probabilities, 0)


# --------------------------------------------------------------------------------------------
# chunk files


def test_chunks_hold_32_games_and_the_last_partial_one(tmp_path):
    prefix = str(tmp_path / "out")
    logged = []
    with chunks.ChunkWriter(prefix, log=logged.append) as writer:
        for g in range(70):
            writer.add_game(f"game {g}\n", positions=1)
    assert writer.paths == [f"{prefix}.0.gz", f"{prefix}.1.gz", f"{prefix}.2.gz"]
    assert logged == ["Writing chunk 0", "Writing chunk 1", "Writing chunk 2"]
    counts = [gzip.open(p, "rt").read().count("game") for p in writer.paths]
    assert counts == [32, 32, 6]
    assert sorted(os.listdir(tmp_path)) == ["out.0.gz", "out.1.gz", "out.2.gz"]


def test_no_chunk_for_no_games_and_exact_multiples(tmp_path):
    assert chunks.ChunkWriter(str(tmp_path / "a")).close() == []
    w = chunks.ChunkWriter(str(tmp_path / "b"))
    for g in range(64):
        w.add_game("x\n")
    assert len(w.close()) == 2
    assert sorted(os.listdir(tmp_path)) == ["b.0.gz", "b.1.gz"]


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    path = str(tmp_path / "c.0.gz")
    chunks.write_gzip_atomic(path, "old\n")

    class Boom(Exception):
        pass

    def explode(*args, **kwargs):
        raise Boom()

    monkeypatch.setattr(chunks.gzip.GzipFile, "write", explode)
    with pytest.raises(Boom):
        chunks.write_gzip_atomic(path, "new\n")
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["c.0.gz"]
    assert chunks.read_chunk_text(path) == "old\n"


# --------------------------------------------------------------------------------------------
# against Leela Zero's own files


def test_leela_zero_records_read_and_rewritten_byte_for_byte(lz_binary, tygem_dir,
                                                            random_weights, lz_folder):
    """LZ's dump_supervised output, read by our reader and by the independent parser, and
    written again by our writer, gives LZ's exact text."""
    with gzip.open(tygem_dir / "tygem-9d-2010-02.sgf.gz", "rt") as f:
        games = [next(f) for _ in range(2)]
    folder = lz_folder
    sgf = os.path.join(folder, "two.sgf")
    with open(sgf, "w") as f:
        f.writelines(games)
    chatter, paths = lz_dump_supervised(lz_binary, random_weights(1, 8), sgf,
                                        os.path.join(folder, "out"))
    assert len(paths) == 1
    text = chunk_parser.read_text(paths[0])
    independent = chunk_parser.parse_text(text)
    ours = list(records.parse_records(text))
    assert len(ours) == len(independent) > 100
    assert "".join(records.format_record(r) for r in ours) == text
    for a, b in zip(ours, independent):
        assert a.planes.tolist() == b.planes
        assert (a.to_move == WHITE) == b.white_to_move
