"""The OpenCL backend against NumPy: per layer, per head, end to end, batches 1..32.

References: every 3x3 layer against the naive direct convolution of tests/oracle.py applied to the
OpenCL input of that layer, so each layer's own error is measured; the heads and the whole
network against the NumPy backend. Tolerances: 1e-4 relative for fp32 storage, 3e-2 for fp16
storage (PoCL has no cl_khr_fp16; half storage with float arithmetic works everywhere).
The no-OpenCL fallback runs in a subprocess with the ICD list emptied.

Runs on PoCL in CI; skipped only when no OpenCL device exists and LEELAZ_STRICT_TESTS is not set.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import oracle
import pytest
from backend_helpers import TOLERANCE, need_opencl, opencl_backend, random_planes, rel_error
from conftest import requires

from leelaz.backends.weights import load_weights

cl = requires("pyopencl")

from leelaz.backends.numpy_backend import NumpyBackend  # noqa: E402

BLOCKS, FILTERS = 2, 32  # the shape of conftest's weights_2x32
BATCHES = (1, 2, 7, 16, 32)


@pytest.fixture(scope="module")
def backends(weights_2x32):
    """One backend per precision, fixed default tile sizes (no tuning: CI has 2 cores)."""
    return {p: opencl_backend(weights_2x32, p) for p in ("single", "half")}


def reference_layer(x: np.ndarray, conv, residual: np.ndarray | None) -> np.ndarray:
    """[B, C, 361] -> [B, K, 361]: the naive float64 direct convolution (tests/oracle.py),
    batch norm, residual, ReLU."""
    y = np.stack([oracle.conv_bn(xb.reshape(-1, 19, 19), conv).reshape(-1, 361) for xb in x])
    if residual is not None:
        y = y + residual
    return np.maximum(y, 0.0)


@pytest.mark.parametrize("precision", ["single", "half"])
@pytest.mark.parametrize("batch", [1, 7])
def test_each_layer_matches_float64_reference(backends, weights_2x32, precision, batch):
    be = backends[precision]
    planes = random_planes(batch, seed=batch)
    outputs = be.tower_outputs(planes)
    convs = [weights_2x32.input_conv] + [c for block in weights_2x32.tower for c in block]
    assert len(outputs) == len(convs) == 1 + 2 * BLOCKS
    x = planes.reshape(batch, 18, 361).astype(np.float64)
    block_input = None
    for i, (conv, got) in enumerate(zip(convs, outputs)):
        residual = block_input if i > 0 and i % 2 == 0 else None
        want = reference_layer(x, conv, residual)
        assert rel_error(got, want) < TOLERANCE[precision], (precision, i)
        if i % 2 == 0:
            block_input = got.astype(np.float64)
        x = got.astype(np.float64)


@pytest.mark.parametrize("precision", ["single", "half"])
def test_heads_match_reference(backends, weights_2x32, precision):
    be = backends[precision]
    planes = random_planes(5, seed=11)
    tower_out = be.tower_outputs(planes)[-1].astype(np.float64)
    heads = be.forward_heads(planes)
    for rows, conv in ((slice(0, 2), weights_2x32.policy_conv),
                       (slice(2, 3), weights_2x32.value_conv)):
        w = conv.weights.reshape(conv.outputs, -1).astype(np.float64)
        want = np.einsum("kc,bcx->bkx", w, tower_out)
        want = np.maximum(conv.scale[None, :, None] * (want - conv.mean[None, :, None]), 0)
        assert rel_error(heads[:, rows], want) < TOLERANCE[precision]


@pytest.mark.parametrize("precision", ["single", "half"])
def test_end_to_end_matches_numpy_backend(backends, weights_2x32, precision):
    reference = NumpyBackend(weights_2x32)
    be = backends[precision]
    for batch in BATCHES:  # 16 and 32 exceed the allocated capacity of 2: buffers grow
        planes = random_planes(batch, seed=100 + batch)
        policy, value = be.forward(planes)
        want_policy, want_value = reference.forward(planes)
        assert policy.shape == (batch, 362) and value.shape == (batch,)
        assert policy.dtype == np.float32 and value.dtype == np.float32
        assert rel_error(policy, want_policy) < TOLERANCE[precision], batch
        assert np.abs(value - want_value).max() < TOLERANCE[precision], batch
    assert be.capacity >= 32


@pytest.mark.parametrize("precision", ["single", "half"])
def test_padding_of_v_is_written_not_assumed(random_weights, precision):
    """40 filters (padded to 64 channels, where the input's 18 are padded to 32) and a V
    buffer full of NaN beforehand: the transform kernels themselves zero V's padding rows
    and columns (NaN times a zero weight is still NaN), so the result matches NumPy."""
    w = load_weights(random_weights(1, 40, seed=9))
    be = opencl_backend(w, precision, batch_size=3)
    itemsize = 2 if precision == "half" else 4
    cl.enqueue_copy(be.queue, be.v_buf, np.full(be.v_buf.size // itemsize, np.nan,
                                                np.float16 if itemsize == 2 else np.float32))
    planes = random_planes(3, seed=4)
    policy, value = be.forward(planes)
    want_policy, want_value = NumpyBackend(w).forward(planes)
    assert rel_error(policy, want_policy) < TOLERANCE[precision]
    assert np.abs(value - want_value).max() < TOLERANCE[precision]


def test_batch_results_do_not_depend_on_batch_company(backends):
    """A position gives the same answer alone and inside a batch (padding is inert)."""
    be = backends["single"]
    planes = random_planes(9, seed=3)
    alone = be.forward(planes[4:5])[0][0]
    together = be.forward(planes)[0][4]
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-5 * np.abs(alone).max())


def test_tuner_picks_a_working_candidate_and_caches_it(backends, tmp_path, monkeypatch):
    from leelaz.backends import tuner

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    be = backends["single"]
    # VWN=3 passes the shape checks but the kernel only knows widths 1, 2 and 4: it computes
    # wrong numbers, and the tuner's NumPy check must drop it however fast it runs.
    broken = tuner.GemmParams(32, 48, 16, 8, 4, 1, 3)
    assert broken.valid(be.device)
    lines = []
    # "full": "fast" skips the search on CPU devices (PoCL here)
    best = tuner.tune(be.ctx, be.queue, False, FILTERS, FILTERS, 2, "full", lines.append,
                      candidates=[tuner.DEFAULT, broken])
    assert best == tuner.DEFAULT
    assert tuner.lookup(be.device, False, FILTERS, FILTERS, 2) == best
    assert (tmp_path / "leelaz" / "opencl_tuning.json").is_file()
    assert any("SGEMM tuner" in line for line in lines)
    # mode "none" reads the cache and never searches
    assert tuner.tune(be.ctx, be.queue, False, FILTERS, FILTERS, 2, "none") == best


def test_kernels_folder_is_found():
    from leelaz.backends.cl_program import KERNEL_FILES, kernels_dir, program_source

    folder = kernels_dir()
    assert all((folder / name).is_file() for name in KERNEL_FILES)
    source = program_source({"STORAGE_HALF": 1})
    assert source.startswith("/* generated") and "#define STORAGE_HALF 1" in source
    assert "void sgemm_tn(" in source and "__kernel void out_in_transform(" in source


def test_chooser_falls_back_to_numpy_without_opencl(random_weights, tmp_path):
    """No platform: NumPy, with exactly one line on stderr saying why."""
    path = random_weights(1, 8)
    empty = tmp_path / "icd"
    empty.mkdir()
    # pyopencl's wheel always adds its bundled PoCL ICD to the list; POCL_DEVICES hides that
    # PoCL's devices too, so the process sees no OpenCL device at all.
    env = dict(os.environ, OCL_ICD_VENDORS=str(empty), POCL_DEVICES="none",
               XDG_DATA_HOME=str(tmp_path / "xdg"))
    code = ("from leelaz.backends.weights import load_weights\n"
            "from leelaz.config import EngineConfig\n"
            "from leelaz.nn.loading import choose\n"
            f"w = load_weights({path!r})\n"
            "b = choose(EngineConfig(network_backend='opencl'), w).open_backend(w)\n"
            "print(b.name)\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "numpy"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "OpenCL unavailable" in lines[0] and "NumPy" in lines[0]


def test_chooser_cpu_only_never_touches_opencl(weights_2x32):
    from leelaz.config import EngineConfig
    from leelaz.nn.loading import choose

    plan = choose(EngineConfig(cpu_only=True), weights_2x32)
    assert plan.open_backend(weights_2x32).name == "numpy"


def test_tensor_core_sgemm_matches_numpy_on_nvidia(weights_2x32):
    """The PTX wmma sgemm (NVIDIA only; PoCL never offers it) against the NumPy backend."""
    from leelaz.backends.device_choice import list_devices
    from leelaz.backends.opencl_backend import OpenCLBackend
    from leelaz.backends.tuner import GemmParams

    need_opencl()
    nvidia = [d for _, p, d in list_devices() if "NVIDIA" in p.name]
    params = GemmParams(64, 128, 16, 2, 2, tc=1)
    if not nvidia:
        assert not any(params.valid(d) for _, _, d in list_devices())
        pytest.skip("tensor-core sgemm needs an NVIDIA OpenCL device")
    be = OpenCLBackend(weights_2x32, precision="half", batch_size=8, params=params, quiet=True,
                       device=nvidia[0])
    reference = NumpyBackend(weights_2x32)
    for batch in (1, 8, 13):
        planes = random_planes(batch, seed=200 + batch)
        policy, value = be.forward(planes)
        want_policy, want_value = reference.forward(planes)
        assert rel_error(policy, want_policy) < TOLERANCE["half"], batch
        assert np.abs(value - want_value).max() < TOLERANCE["half"], batch
