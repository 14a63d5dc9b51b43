"""Weights files: formats, inference of the shape, batch-norm folding, and every malformed case.

Expected values come from the generator's own tensors (leelaz/backends/random_weights.py), not
from the loader.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from leelaz.backends.base import BN_EPSILON
from leelaz.backends.random_weights import random_tensors
from leelaz.backends.weights import WeightsError, load_weights, weights_summary
from leelaz.backends.weights_writer import weights_text


@pytest.fixture(scope="module")
def tensors():
    return random_tensors(2, 8, 5)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


def test_values_shapes_and_folding(tmp_path, tensors):
    w = load_weights(write(tmp_path, "w.txt", weights_text(tensors, 1)))
    assert (w.version, w.blocks, w.filters) == (1, 2, 8)
    t = [np.float32(np.array([float(f"{v:.6g}") for v in a])) for a in tensors]
    np.testing.assert_array_equal(w.input_conv.weights.ravel(), t[0])
    np.testing.assert_allclose(w.input_conv.mean, t[2] - t[1], rtol=0, atol=1e-7)
    np.testing.assert_allclose(w.input_conv.scale, 1 / np.sqrt(t[3] + BN_EPSILON), rtol=1e-6)
    second = w.tower[1][1]  # block 2, conv 2: lines 4 + 3*4 ...
    np.testing.assert_array_equal(second.weights.ravel(), t[16])
    np.testing.assert_allclose(second.mean, t[18] - t[17], atol=1e-7)
    assert w.tower[0][0].weights.shape == (8, 8, 3, 3)
    assert w.policy_conv.weights.shape == (2, 8, 1, 1)
    np.testing.assert_array_equal(w.policy_fc_w.ravel(), t[24])
    assert w.policy_fc_w.shape == (362, 722)
    assert w.value_conv.weights.shape == (1, 8, 1, 1)
    np.testing.assert_allclose(w.value_conv.mean, t[28] - t[27], atol=1e-7)
    np.testing.assert_array_equal(w.value_fc1_w.ravel(), t[30])
    assert w.value_fc2_w.shape == (1, 256) and w.value_fc2_b.shape == (1,)
    assert weights_summary(w) == "Detecting residual layers...v1...8 channels...2 blocks."


def test_gzip_detected_by_content_not_name(tmp_path, tensors):
    text = weights_text(tensors, 2)
    gz_named_txt = write(tmp_path, "a.txt", gzip.compress(text.encode(), compresslevel=1))
    txt_named_gz = write(tmp_path, "b.gz", text)
    a, b = load_weights(gz_named_txt), load_weights(txt_named_gz)
    assert a.version == b.version == 2
    np.testing.assert_array_equal(a.value_fc1_w, b.value_fc1_w)


def test_crlf_and_trailing_blank_lines(tmp_path, tensors):
    text = weights_text(tensors, 1).replace("\n", "\r\n") + "\r\n\n"
    assert load_weights(write(tmp_path, "crlf.txt", text)).blocks == 2


def test_random_weights_fixture_sizes(random_weights):
    w = load_weights(random_weights(3, 16, gz=True))
    assert (w.blocks, w.filters) == (3, 16)
    assert w.parameter_bytes() > 0


def lines_of(tensors, version=1):
    return weights_text(tensors, version).splitlines()


def expect_error(tmp_path, content, *words, name="bad.txt"):
    path = write(tmp_path, name, content)
    with pytest.raises(WeightsError) as info:
        load_weights(path)
    message = str(info.value)
    assert path in message
    for word in words:
        assert word in message, message
    return message


def test_missing_file(tmp_path):
    path = str(tmp_path / "nope.txt")
    with pytest.raises(WeightsError, match="not found") as info:
        load_weights(path)
    assert path in str(info.value)


def test_empty_file(tmp_path):
    expect_error(tmp_path, "", "empty")
    expect_error(tmp_path, "\n \n", "empty")


@pytest.mark.parametrize("version", ["3", "0", "x", "1.5"])
def test_wrong_version(tmp_path, tensors, version):
    lines = lines_of(tensors)
    lines[0] = version
    expect_error(tmp_path, "\n".join(lines), "wrong version", "line 1")


def test_line_count_not_a_whole_number_of_blocks(tmp_path, tensors):
    lines = lines_of(tensors)
    del lines[7]
    expect_error(tmp_path, "\n".join(lines), "Inconsistent number of weights")


def test_truncated_text_file(tmp_path, tensors):
    text = weights_text(tensors)
    expect_error(tmp_path, text[: len(text) // 2], "Inconsistent")


def test_truncated_gzip(tmp_path, tensors):
    data = gzip.compress(weights_text(tensors).encode(), compresslevel=1)
    expect_error(tmp_path, data[: len(data) // 2], "gzip", name="cut.gz")


def test_wrong_count_on_one_line_names_it(tmp_path, tensors):
    lines = lines_of(tensors)
    lines[9] += " 0.5"  # file line 10: block 1, conv 2 bias
    expect_error(tmp_path, "\n".join(lines), "Inconsistent", "line 10")


def test_not_19x19(tmp_path, tensors):
    lines = lines_of(tensors)
    lines[25] = " ".join(["0.1"] * (82 * 162))  # a 9x9 policy FC (file line 26)
    expect_error(tmp_path, "\n".join(lines), "not for 19x19", "line 26")


def test_number_that_does_not_parse(tmp_path, tensors):
    lines = lines_of(tensors)
    parts = lines[5].split()
    parts[3] = "0.1x"
    lines[5] = " ".join(parts)
    expect_error(tmp_path, "\n".join(lines), "Failed to parse", "line 6", "0.1x")


def test_directory(tmp_path):
    with pytest.raises(WeightsError):
        load_weights(str(tmp_path))


def test_binary_garbage(tmp_path):
    expect_error(tmp_path, b"\x00\x01\x02garbage", "binary")


def test_real_binary_accepts_what_we_accept(tmp_path, tensors, lz_binary):
    """The reference loads our fixture file (sanity of the generator, not of our parser)."""
    import subprocess
    path = write(tmp_path, "ok.txt", weights_text(tensors))
    r = subprocess.run([lz_binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-w", path],
                       input="quit\n", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert weights_summary(load_weights(path)) in r.stderr


def test_blank_line_inside_is_an_error_not_a_number(tmp_path, tensors):
    """A line of spaces holds no numbers (np.fromstring would read it as -1)."""
    lines = lines_of(tensors)
    lines[27] = "   "  # file line 28: the value conv's bias (one number)
    expect_error(tmp_path, "\n".join(lines), "Inconsistent", "line 28", "0 values")

