"""Weights whose values would make the network answer nan, huge files, and the parsed cache.

A file with nan, inf, a value beyond float32 or a negative batch-norm variance is refused
with the file and the line (it used to load, then play with `winrate: nan`). A huge or wrong
file is refused from its first bytes. The engine's parsed-network cache gives the same
weights as parsing, follows edits to the file, and survives a damaged or unwritable cache.
"""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from leelaz.backends import weights as wmod
from leelaz.backends.random_weights import random_tensors
from leelaz.backends.weights import WeightsError, load_weights
from leelaz.backends.weights_writer import weights_text


@pytest.fixture(scope="module")
def lines():
    """The text lines of a 1-block, 8-filter network; index i is file line i + 1."""
    return weights_text(random_tensors(1, 8, 5), 1).splitlines()


def _file(tmp_path, lines, name="w.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _with(lines, number, token_index, token):
    """lines with the token at token_index of file line `number` replaced."""
    changed = list(lines)
    tokens = changed[number - 1].split()
    tokens[token_index] = token
    changed[number - 1] = " ".join(tokens)
    return changed


@pytest.mark.parametrize("token", ["nan", "inf", "-inf", "1e40", "-3e39", "NaN"])
def test_non_finite_values_are_refused_with_file_and_line(tmp_path, lines, token):
    path = _file(tmp_path, _with(lines, 7, 3, token))  # a tower conv's weights
    with pytest.raises(WeightsError) as err:
        load_weights(path)
    assert f"{path}, line 7:" in str(err.value) and token in str(err.value)


@pytest.mark.parametrize("number", [5, 9, 13, 17, 23])  # input, tower 1, tower 2, policy, value
def test_a_negative_variance_is_refused(tmp_path, lines, number):
    path = _file(tmp_path, _with(lines, number, 0, "-0.5"))
    with pytest.raises(WeightsError) as err:
        load_weights(path)
    assert f"{path}, line {number}:" in str(err.value) and "variance" in str(err.value)


def test_a_negative_mean_or_weight_is_fine(tmp_path, lines):
    load_weights(_file(tmp_path, _with(_with(lines, 4, 0, "-0.5"), 6, 0, "-2")))


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, lines, monkeypatch):
    """The size bound and the version line are checked from the first bytes: read() is never
    asked for the whole file."""
    monkeypatch.setattr(wmod, "MAX_TEXT_BYTES", 4096)
    big = _file(tmp_path, lines)
    assert os.path.getsize(big) > 4096
    with pytest.raises(WeightsError, match="larger than any Leela Zero network"):
        wmod.read_text(big, limit=4096)
    monkeypatch.undo()
    huge = tmp_path / "huge.bin"
    with open(huge, "wb") as f:
        f.truncate(3 << 30)  # 3 GB, sparse
    with pytest.raises(WeightsError, match="larger than any Leela Zero network"):
        load_weights(str(huge))
    junk = tmp_path / "junk.bin"
    with open(junk, "wb") as f:
        f.truncate(200 << 20)  # within the bound, but the first bytes show a wrong file
    with pytest.raises(WeightsError, match="wrong version"):
        wmod.read_text(str(junk))


def test_a_gzip_bomb_is_stopped_at_the_bound(tmp_path, lines):
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(("1\n" + "0 " * (8 << 20)).encode()))  # 16 MB of text
    with pytest.raises(WeightsError, match="larger than any Leela Zero network"):
        wmod.read_text(str(bomb), limit=1 << 20)
    multi = tmp_path / "multi.gz"  # two gzip members, as `cat a.gz b.gz` makes: both read
    text = ("\n".join(lines) + "\n").encode()
    multi.write_bytes(gzip.compress(text[:1000]) + gzip.compress(text[1000:]))
    assert wmod.read_text(str(multi)) == text


@pytest.mark.parametrize("cache", [False, True])
def test_a_fifo_is_refused_without_hanging(tmp_path, monkeypatch, cache):
    """No writer on the FIFO: opening it for reading would block for ever."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    fifo = tmp_path / "net.fifo"
    os.mkfifo(fifo)
    with pytest.raises(WeightsError, match="not a regular file"):
        load_weights(str(fifo), cache=cache)


def _same(a, b):
    for x, y in [(a.input_conv, b.input_conv), (a.tower[-1][1], b.tower[-1][1]),
                 (a.value_conv, b.value_conv)]:
        np.testing.assert_array_equal(x.weights, y.weights)
        np.testing.assert_array_equal(x.scale, y.scale)
        np.testing.assert_array_equal(x.mean, y.mean)
    np.testing.assert_array_equal(a.policy_fc_w, b.policy_fc_w)
    np.testing.assert_array_equal(a.value_fc2_b, b.value_fc2_b)


def test_the_parsed_network_cache(tmp_path, lines, monkeypatch):
    from leelaz.backends import weights_cache
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "net.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    parsed = load_weights(str(path))
    first = load_weights(str(path), cache=True)
    assert len(list(weights_cache.cache_dir().glob("*.npz"))) == 1
    calls = []
    monkeypatch.setattr(weights_cache, "parse_tensors",
                        lambda *a: calls.append(1) or wmod.parse_tensors(*a))
    second = load_weights(str(path), cache=True)
    assert calls == [] and second.source == str(path)
    _same(parsed, first)
    _same(parsed, second)
    # the file changes: its new content loads (parsed again), not the cached one
    edited = _with(lines, 2, 0, "0.25")
    path.write_bytes(gzip.compress(("\n".join(edited) + "\n").encode()))
    third = load_weights(str(path), cache=True)
    assert calls == [1] and third.input_conv.weights.ravel()[0] == np.float32(0.25)
    # a damaged entry is parsed again, a bad file is still refused with its message
    for entry in weights_cache.cache_dir().glob("*.npz"):
        entry.write_bytes(entry.read_bytes()[:100])
    _same(load_weights(str(path), cache=True), third)
    assert calls == [1, 1]
    bad = _file(tmp_path, _with(lines, 7, 0, "nan"), "bad.txt")
    with pytest.raises(WeightsError, match="line 7"):
        load_weights(bad, cache=True)


def test_an_unwritable_cache_still_loads(tmp_path, lines, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker))
    _same(load_weights(_file(tmp_path, lines), cache=True),
          load_weights(_file(tmp_path, lines)))
