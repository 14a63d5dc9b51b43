"""The OpenCL backend's enqueue plans: per batch size, arguments set once, kept in an LRU cache.

What could go wrong once arguments are no longer set per launch: a plan built for one batch
size used for another (tiles, ppad and batch are arguments), a plan left pointing at buffers
that grew, a dropped plan's kernel objects re-used with stale arguments, or the small- and
large-batch sgemm shapes mixed up. So the batch size goes back and forth (both sgemm shapes,
buffers growing in between), the cache is shrunk to force re-use, and each answer is compared
with the NumPy backend (1e-4 relative fp32, 3e-2 fp16, as tests/test_opencl_backend.py).

Runs on PoCL in CI; skipped only when no OpenCL device exists and LEELAZ_STRICT_TESTS is not set.
"""

from __future__ import annotations

import numpy as np
import pytest
from backend_helpers import TOLERANCE, opencl_backend, random_planes, rel_error
from conftest import requires

cl = requires("pyopencl")

from leelaz.backends.numpy_backend import NumpyBackend  # noqa: E402
from leelaz.backends.opencl_backend import plan_rows  # noqa: E402

#: Back and forth across the small/large sgemm boundary (16), growing past the capacity of 2.
SEQUENCE = (1, 32, 1, 7, 17, 7, 32)


@pytest.fixture(scope="module")
def reference(weights_2x32):
    return NumpyBackend(weights_2x32)


@pytest.fixture(scope="module")
def backends(weights_2x32):
    """One backend per precision, default tiles; the fp32 one gets a second, wider sgemm shape
    for batches above SMALL_BATCH, so that the two shapes (ppad rounded to 32 and to 64) and
    their two programs are both exercised."""
    from leelaz.backends.opencl_backend import SMALL_BATCH
    from leelaz.backends.tuner import DEFAULT, GemmParams

    made = {p: opencl_backend(weights_2x32, p) for p in ("single", "half")}
    be = made["single"]
    large = GemmParams(64, 64, 16, 8, 8, 2, 2)
    assert large.valid(be.device) and large.nwg != DEFAULT.nwg
    be.gemms = [(SMALL_BATCH, DEFAULT, be._program(DEFAULT)), (None, large, be._program(large))]
    be.params = large
    be._plans.clear()
    return made


def check(be, reference, batch: int, precision: str, seed: int) -> None:
    planes = random_planes(batch, seed=seed)
    policy, value = be.forward(planes)
    want_policy, want_value = reference.forward(planes)
    assert policy.shape == (batch, 362) and value.shape == (batch,)
    assert rel_error(policy, want_policy) < TOLERANCE[precision], (precision, batch)
    assert np.abs(value - want_value).max() < TOLERANCE[precision], (precision, batch)


@pytest.mark.parametrize("precision", ["single", "half"])
def test_batch_sizes_back_and_forth_match_numpy(backends, reference, precision):
    be = backends[precision]
    for i, batch in enumerate(SEQUENCE):
        check(be, reference, batch, precision, seed=300 + i)
    assert set(be._plans) <= {plan_rows(b) for b in SEQUENCE}
    # a repeated size (or one with the same row count) uses the cached plan
    plan = be._plans[8]
    check(be, reference, 7, precision, seed=400)
    check(be, reference, 5, precision, seed=401)
    assert be._plans[8] is plan and next(reversed(be._plans)) == 8


def test_batches_run_as_few_padded_sizes():
    assert [plan_rows(b) for b in (1, 2, 3, 4, 5, 8, 9, 17, 24, 25, 31, 32, 33, 64, 65, 256)] \
        == [1, 2, 4, 4, 8, 8, 16, 24, 24, 32, 32, 32, 40, 64, 128, 256]


def test_plans_use_the_sgemm_shape_of_their_batch(backends):
    be = backends["single"]
    small, large = be.gemms[0][2], be.gemms[1][2]
    for batch in (16, 17):
        be.forward(random_planes(batch, seed=batch))
        assert be._plans[plan_rows(batch)].program is (small if batch <= 16 else large)


def test_growing_drops_the_plans(weights_2x32, reference):
    """Plans hold the buffers as kernel arguments: a larger batch must not run old ones."""
    be = opencl_backend(weights_2x32, "single", batch_size=1)
    check(be, reference, 1, "single", seed=1)
    old = be._plans[1]
    check(be, reference, 9, "single", seed=2)
    assert be.capacity >= 16 and 1 not in be._plans
    check(be, reference, 1, "single", seed=3)
    assert be._plans[1] is not old


def test_a_dropped_plans_kernels_are_reused_with_new_arguments(backends, reference,
                                                               monkeypatch):
    from leelaz.backends import opencl_backend

    be = backends["single"]
    be._grow(max(be.capacity, 24))  # no growth (it drops every plan) within the test
    monkeypatch.setattr(opencl_backend, "PLAN_CACHE", 2)
    check(be, reference, 3, "single", seed=10)  # runs as 4 rows
    kernels_of_4 = be._plans[4].kernels()
    check(be, reference, 5, "single", seed=11)  # 8 rows
    check(be, reference, 2, "single", seed=12)  # drops 4's plan, takes over its kernels
    assert list(be._plans) == [8, 2]
    assert all(a is b for a, b in zip(be._plans[2].kernels(), kernels_of_4))
    check(be, reference, 3, "single", seed=13)  # 4 again, on 8's old kernels
    check(be, reference, 20, "single", seed=14)  # 24 rows, other sgemm program: fresh kernels
    assert list(be._plans) == [4, 24]
    be._plans.clear()


def test_batches_of_different_sizes_in_flight_together(backends, reference):
    """The in-order queue keeps two plans' launches on the shared buffers apart."""
    be = backends["half"]
    sizes = (32, 1, 7)
    planes = [random_planes(b, seed=500 + b) for b in sizes]
    pending = [be.submit(p) for p in planes]
    for p, got in zip(planes, pending):
        policy, value = got.result()
        want_policy, want_value = reference.forward(p)
        assert rel_error(policy, want_policy) < TOLERANCE["half"]
        assert np.abs(value - want_value).max() < TOLERANCE["half"]


def test_profile_times_every_kernel_and_leaves_the_queue_as_it_was(backends, reference):
    be = backends["single"]
    queue = be.queue
    totals = be.profile(random_planes(4, seed=7))
    assert {"in_transform_input", "out_in_transform", "sgemm_tn", "out_transform_bn",
            "head_conv1x1", "fc_layer"} == set(totals)
    assert all(seconds > 0 for seconds in totals.values())
    assert be.queue is queue and be._profile_events is None
    check(be, reference, 4, "single", seed=8)


def test_plans_are_built_at_start_up_for_the_search_batch(weights_2x32, reference):
    """Every row count a ramping search will use up to its batch size is ready before the
    first search, and a search-sized batch builds nothing new."""
    be = opencl_backend(weights_2x32, "single", batch_size=20)
    assert list(be._plans) == [1, 2, 4, 8, 16, 24]
    plans = dict(be._plans)
    check(be, reference, 20, "single", seed=21)
    check(be, reference, 3, "single", seed=22)
    assert all(be._plans[rows] is plan for rows, plan in plans.items())
    assert len(be._plans) == 6
