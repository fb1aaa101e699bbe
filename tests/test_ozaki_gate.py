"""The fused INT8 gate kernels (ozaki/gate.py): their fragment layout and launch shapes on the
CPU; their CUDA source compiled for the host (host_cuda/ozaki_gate_host.cpp) and on the GPU, the
same bits as the numpy tile path for the same plan."""
import ctypes
import dataclasses

import numpy as np
import pytest

import gemm_backend
from circuits import haar_unitary
from gemm_backend import BackendError
from gemm_backend.ozaki.gate import (FUSED_DIMS, PACKED_K, WIDE_DIMS, WIDE_UNMEASURED_DIMS, WIDE_WARPS, Launch,
                                    WideLaunch, embedded_gate_rows, fragment_index, fused_gate_call, plan_launch, tiles,
                                    wgmma_fits, wide_launch)
from gemm_backend.ozaki.plan import plan_products
from gemm_backend.target_layout import packing_qubits

from .conftest import requires_gpu
from .helpers import at_targets, batched_on_columns, crandn, same_bits
from .host_build import kernel_includes, variant_builder


# -- CPU: the fragment layout -------------------------------------------------------------
@pytest.mark.parametrize("k", FUSED_DIMS)
def test_fragment_index_covers_the_embedded_gate_once_per_k_tile(k):
    """Every embedded entry (row, col) appears exactly once in the A fragments, and a lane's
    bytes follow the mma.m16n8k32 layout: rows g / g + 8, columns 4 t + i (+ 16)."""
    rows, cols = fragment_index(k)
    valid = rows >= 0
    pairs = set(zip(rows[valid].tolist(), cols[valid].tolist()))
    assert len(pairs) == valid.sum() == (2 * k) ** 2
    k_tiles, m_tiles, _ = tiles(k)
    assert rows.shape == (m_tiles, k_tiles, 32, 16)
    # bytes 0-3 and 8-11 of a lane share a row (Re of amplitude 8 mt + g); 4-7 and 12-15 the Im row
    lane_rows = rows[..., [0, 4]]
    ok = (lane_rows >= 0).all(axis=-1)
    assert (lane_rows[..., 1][ok] == lane_rows[..., 0][ok] + 1).all()


def test_embedded_rows_are_the_real_embedding(rng):
    u = crandn(rng, 3, 5)
    x = crandn(rng, 5)
    embedded_x = np.stack([x.real, x.imag], axis=1).reshape(-1)
    y = embedded_gate_rows(u) @ embedded_x
    assert np.allclose(y[0::2] + 1j * y[1::2], u @ x, rtol=0, atol=1e-14)


def test_launch_limits():
    small = plan_launch(32, plan_products(7, 64))
    assert (small.n_tiles, small.prefetch, small.blocks_per_sm, small.warps) == (1, False, 3, 8)  # default_shape
    sixteen = plan_launch(16, plan_products(8, 32))
    assert (sixteen.n_tiles, sixteen.prefetch, sixteen.blocks_per_sm) == (2, False, 2)
    assert plan_launch(32, plan_products(7, 64), prefetch=True).prefetch
    assert plan_launch(64, plan_products(7, 128)).blocks_per_sm == 2  # seven gate digits fit twice
    assert isinstance(plan_launch(512, plan_products(7, 1024)), WideLaunch)  # int8-auto chooses it by cost (cost.py)
    assert plan_launch(32, plan_products(17, 64)) is None  # more state digits than the kernel keeps
    big = plan_launch(64, plan_products(13, 128))
    assert big is not None and big.shared_bytes <= 227 * 1024 and big.blocks_per_sm == 1


def test_wide_launch_limits():
    """K = 128, 256 take the wide kernel while the tile's column digits fit in shared memory;
    four n-tiles per warp only where the diagonal sums leave registers for them and the tile has
    four; K = 512 with 32 columns a tile where their digits fit, else 16."""
    seven = plan_launch(128, plan_products(9, 256, 8, 10), wgmma=False)
    assert isinstance(seven, WideLaunch) and (seven.warp_n_tiles, seven.gate_digits_held, seven.staged) == (4, 3, True)
    # chunks 10, 9, ..., 4 and (3, 2)
    assert seven.name == "ozaki_gate_wide<128, 9, 8, 10, 2040ULL, 32, 4, 3, true, 1, false, 1>"
    eight = plan_launch(256, plan_products(9, 512, 9, 10), wgmma=False)
    assert (eight.warp_n_tiles, eight.gate_digits_held, eight.staged) == (2, 9, False)  # no room for the stage
    five = plan_launch(256, plan_products(5, 512, 5, 7), wgmma=False)
    assert (five.warp_n_tiles, five.gate_digits_held, five.staged) == (4, 3, False)
    assert wide_launch(256, plan_products(5, 512, 5, 7), staged=True, wgmma=False).staged  # fits, though slower
    two = wide_launch(256, plan_products(9, 512, 9, 11), columns=16, blocks_per_sm=2)
    assert (two.warp_n_tiles, two.staged, two.shared_bytes) == (1, False, 9 * 512 * 16 + 12 * 256 + 16 * 16)
    assert wide_launch(256, plan_products(9, 512, 9, 11), blocks_per_sm=2).columns == 16  # 32 columns' digits fit once
    assert plan_launch(128, plan_products(12, 256), wgmma=False).warp_n_tiles == 2  # 23 diagonals
    assert plan_launch(256, plan_products(13, 512)).shared_bytes <= 227 * 1024
    assert plan_launch(256, plan_products(14, 512)).columns == 16  # 14 state digits of 32 columns do not fit
    nine = wide_launch(512, plan_products(9, 1024, 9, 10), wgmma=False)
    assert (nine.columns, nine.warp_n_tiles, nine.gate_digits_held, nine.staged) == (16, 2, 9, False)
    assert nine.shared_bytes == 9 * 1024 * 16 + 12 * 512 + 16 * 16
    five_at_512 = wide_launch(512, plan_products(5, 1024, 5, 7), wgmma=False)
    assert (five_at_512.columns, five_at_512.warp_n_tiles) == (32, 4)  # five digits of 32 columns fit
    assert wide_launch(512, plan_products(13, 1024)).shared_bytes <= 227 * 1024
    assert wide_launch(512, plan_products(14, 1024)) is None
    # wgmma (the default on Hopper): four n-tiles per warpgroup up to ten diagonals, three gate
    # digits held; shapes whose warpgroups cannot split the columns are refused
    for k, plan_args, n_tiles in [(128, (9, 8, 10), 4), (256, (9, 9, 11), 4), (256, (12, 4, 13), 2),
                                  (512, (9, 9, 11), 2)]:
        launch = wide_launch(k, plan_products(plan_args[0], 2 * k, *plan_args[1:]), wgmma=True)
        assert (launch.wgmma, launch.warp_n_tiles, launch.gate_digits_held, launch.arch) == (True, n_tiles, 3, "sm_90a")
    # two chunks of products in flight from K = 256 on
    assert plan_launch(256, plan_products(9, 512, 9, 11), wgmma=True).name.endswith(", 32, 4, 3, false, 1, true, 2>")
    assert plan_launch(128, plan_products(9, 256, 8, 10), wgmma=True).chunks_in_flight == 1
    five_by_warpgroups = plan_launch(512, plan_products(5, 1024, 5, 7), wgmma=True)
    assert (five_by_warpgroups.columns, five_by_warpgroups.warp_n_tiles, five_by_warpgroups.chunks_in_flight) == (32, 4, 2)
    assert wide_launch(128, plan_products(9, 256, 8, 10), wgmma=True).staged
    assert wide_launch(256, plan_products(9, 512, 9, 11), columns=16, blocks_per_sm=2, wgmma=True) is None
    assert [wgmma_fits(n, 32) for n in (1, 2, 4)] == [False, True, True] and wgmma_fits(1, 16)
    # K = 64: the fused kernel by default; the wide kernel (64 columns a tile, staged) on request
    sixty_four = plan_products(9, 128, 8, 10)
    assert isinstance(plan_launch(64, sixty_four), Launch)
    wide = wide_launch(64, sixty_four, wgmma=True)
    assert (wide.columns, wide.staged, wide.warp_n_tiles) == (64, True, 4)
    assert wide.shared_bytes == 9 * 128 * 64 + 12 * 64 + 16 * 64 + 16 * 64 * 64


# -- GPU: the same bits as the CPU --------------------------------------------------------
def _state(rng, shape, special: bool):
    x = crandn(rng, *shape)
    if special:
        x[0] = 0  # whole columns of zeros (the |0..0> start)
        x[-1, :, 0] = x[-1, :, 0] * 2.0**-1060  # a column of subnormals
        x[-1, 0, -1] = 127 / 128 * 2.0**5  # a column maximum at the exponent rule's threshold
        x[-1, 1:, -1] *= 1e-290  # the rest of that column far below its maximum
    return x


def _with_subnormal_columns(x):
    """x (L >= 4, K, R) from _state with two more special columns at r = 0: subnormals whose high
    words are not zero (l = L - 2), and a subnormal maximum at the exponent rule's threshold whose
    deciding bits lie in the low word (l = L - 3: 255/256 2^-1040, the rest of the column below
    it). L >= 4 keeps both off _state's zero columns at l = 0 (scaling those would make NaN)."""
    assert x.shape[0] >= 4, "the subnormal columns need l = L - 3 > 0"
    x[-2, :, 0] *= 2.0**-1030
    column = x[-3, :, 0]
    x[-3, :, 0] = column / np.abs(column).max() * 2.0**-1041
    x[-3, 0, 0] = 255 / 256 * 2.0**-1040
    return x


def _strided_state(rng, shape):
    """A state view (L, K, R) for the stride tests: _state's special columns where L > 1, and
    _with_subnormal_columns' where L >= 4."""
    x = _state(rng, shape, special=shape[0] > 1)
    return _with_subnormal_columns(x) if shape[0] >= 4 else x


def _cpu_tiles(u, x, plan):
    expected = np.empty_like(x)
    gemm_backend.get("int8-7")._apply_tiles(u, x, expected, plan, 1 << 26)
    return expected


def _fused_in_place(u, x, plan, launch):
    """x's columns times u by apply_fused_gate on the GPU under `launch`, in place; the result
    on the host."""
    import cupy as cp

    from gemm_backend.ozaki.gate import apply_fused_gate

    x_gpu = cp.asarray(x)
    apply_fused_gate(cp.asarray(u), x_gpu, x_gpu, plan, launch)
    return x_gpu.get()


def _cpu_and_gpu(backend, u, x):
    import cupy as cp

    expected = np.empty_like(x)
    backend.apply_batched(u, x, expected)
    cpu_info = dict(backend.last_call_info)
    x_gpu = cp.asarray(x)
    backend.apply_batched(cp.asarray(u), x_gpu, x_gpu)  # in place
    return expected, x_gpu.get(), cpu_info, backend.last_call_info


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("splits", [3, 7, 13])
@pytest.mark.parametrize("shape_of", [(64, 1), (3, 2), (5, 4), (2, 32), (1, 1024)])
def test_fused_equals_cpu_bit_for_bit(d, splits, shape_of, rng):
    n_left, n_right = shape_of
    k = 1 << d
    u = haar_unitary(k, rng)
    x = _strided_state(rng, (n_left, k, n_right))
    expected, got, cpu_info, gpu_info = _cpu_and_gpu(gemm_backend.get(f"int8-{splits}"), u, x)
    assert gpu_info["kernel"] == "fused" and cpu_info["kernel"] == "tiles"
    assert same_bits(got, expected)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("d", [3, 5, 6])
@pytest.mark.parametrize("n_tiles, prefetch, blocks_per_sm", [(1, True, 2), (1, False, 2), (2, False, 2), (2, True, 2),
                                                              (2, False, 1), (1, True, 1), (4, False, 1), (1, False, 3),
                                                              (1, True, 3), (1, False, 4)])
def test_every_launch_shape_gives_the_same_bits(d, n_tiles, prefetch, blocks_per_sm, rng):
    """The shapes scripts/dev/fused_variants.py times, against the CPU tiles."""
    k = 1 << d
    plan = plan_products(7, 2 * k)
    launch = plan_launch(k, plan, n_tiles=n_tiles, prefetch=prefetch, blocks_per_sm=blocks_per_sm)
    u = haar_unitary(k, rng)
    x = _state(rng, (37, k, 4), special=True)
    expected = _cpu_tiles(u, x, plan)
    assert same_bits(_fused_in_place(u, x, plan, launch), expected)


def test_small_gates_launch_packed_in_the_sixteen_kernel():
    for k in (4, 8):
        launch = plan_launch(k, plan_products(7, 2 * k))
        assert (launch.k, launch.group) == (PACKED_K, k) and launch.name.startswith(f"ozaki_gate<16, {k}, ")
        alone = plan_launch(k, plan_products(7, 2 * k), packed=False)
        assert (alone.k, alone.group) == (k, k)
    assert (plan_launch(2, plan_products(7, 4)).k, plan_launch(32, plan_products(7, 64)).group) == (2, 32)
    # the lowest free qubits after the lowest one (that one walks the lanes)
    assert packing_qubits((0, 5), 1 << 8, 4) == (2, 3) and packing_qubits((3, 7), 1 << 8, 4) == (1, 2)
    assert packing_qubits((0, 1), 1 << 3, 4) is None  # one free qubit
    assert packing_qubits((1, 2), 3 * 8, 2) is None  # an (L = 3, 4, 2) view: qubit 0 is its only free one


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("n_tiles, blocks_per_sm", [(2, 2), (1, 2), (4, 1)])
@pytest.mark.parametrize("targets", [None, (0, 4, 6), (1, 7, 8), (5, 10, 11), (2, 11, 12)])
def test_packed_kernel_gives_the_bits_of_the_gate_alone(d, n_tiles, blocks_per_sm, targets, rng):
    """Columns of very different size (zero, subnormal, at the exponent threshold) side by side in
    one packed kernel column keep their own exponents: the bits of the CPU path of the small gate,
    in place or out, on contiguous and scattered targets, the top qubit among them."""
    import cupy as cp

    from gemm_backend.ozaki.gate import apply_fused_gate

    k = 1 << d
    plan = plan_products(7, 2 * k)
    launch = plan_launch(k, plan, n_tiles=n_tiles, blocks_per_sm=blocks_per_sm)
    u = haar_unitary(k, rng)
    x = _state(rng, (64, k, 16), special=True)
    x *= 2.0 ** rng.integers(-40, 40, size=(64, 1, 16))  # every column its own scale
    targets = targets[:d] if targets else None
    flat = x.reshape(-1)
    if targets is None:
        expected = _cpu_tiles(u, x, plan)
    else:
        expected = flat.copy()
        _cpu_scattered(u, expected, targets, plan)
    x_gpu, out_gpu = cp.asarray(x), cp.empty(x.shape, cp.complex128)
    view_or_flat = (lambda a: a) if targets is None else (lambda a: a.reshape(-1))
    apply_fused_gate(cp.asarray(u), view_or_flat(x_gpu), view_or_flat(out_gpu), plan, launch, targets=targets)
    apply_fused_gate(cp.asarray(u), view_or_flat(x_gpu), view_or_flat(x_gpu), plan, launch, targets=targets)
    assert same_bits(out_gpu.get().reshape(-1), expected.reshape(-1))
    assert same_bits(x_gpu.get().reshape(-1), expected.reshape(-1))


def _cpu_scattered(u, state, targets, plan):
    """The CPU tiles on the columns at `targets` (the transposed copy's arithmetic), in place."""
    state[:] = at_targets(state, targets, lambda columns: _cpu_tiles(u, columns[:, :, None], plan)[:, :, 0])


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("splits", range(3, 14))
def test_fused_every_split_count_at_five_qubits(splits, rng):
    u = haar_unitary(32, rng)
    x = _state(rng, (40, 32, 8), special=True)
    expected, got, _, _ = _cpu_and_gpu(gemm_backend.get(f"int8-{splits}"), u, x)
    assert same_bits(got, expected)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("state_slices, gate_slices, top", [(5, 9, 10), (9, 5, 10), (7, 7, 11), (16, 4, 17),
                                                            (4, 16, 8)])
def test_fused_unequal_digit_counts(state_slices, gate_slices, top, rng):
    """s_a != s_b and T other than max + 1 (the error-target rule picks such plans)."""
    k = 32
    plan = plan_products(state_slices, 2 * k, gate_slices, top)
    u = haar_unitary(k, rng)
    x = _state(rng, (9, k, 4), special=True)
    expected = _cpu_tiles(u, x, plan)
    assert same_bits(_fused_in_place(u, x, plan, plan_launch(k, plan)), expected)


@pytest.mark.gpu
@requires_gpu
def test_fused_auto_matches_cpu_and_reports_the_same_plan(rng):
    u = haar_unitary(32, rng)
    x = _state(rng, (16, 32, 32), special=True)
    expected, got, cpu_info, gpu_info = _cpu_and_gpu(gemm_backend.get("int8-auto"), u, x)
    assert same_bits(got, expected)
    assert {k: v for k, v in gpu_info.items() if k != "kernel"} == {k: v for k, v in cpu_info.items() if k != "kernel"}


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("options, scheme, kernel", [({"target_error": 1e-6, "large_gates": "ozaki1"}, "ozaki1", "fused"),
                                                     ({"target_error": 1e-6}, "ozaki2", "ozaki2"), ({}, "ozaki2", "ozaki2")])
def test_auto_at_512_runs_the_chosen_scheme_with_the_cpus_bits(options, scheme, kernel, rng):
    """At K = 512 int8-auto takes the wide kernel under large_gates="ozaki1", and Ozaki-II where
    the cost model chooses (--target-error 1e-6 and the FP64 contract), on both devices."""
    u = haar_unitary(512, rng)
    x = _state(rng, (3, 512, 16), special=True)  # R a power of two: the fused kernels' views
    expected, got, cpu_info, gpu_info = _cpu_and_gpu(gemm_backend.get("int8-auto", **options), u, x)
    assert cpu_info["scheme"] == gpu_info["scheme"] == scheme and gpu_info["kernel"] == kernel
    assert same_bits(got, expected)


@pytest.mark.gpu
@requires_gpu
def test_at_512_scattered_targets_run_in_place_on_either_scheme(rng):
    """apply_scattered at K = 512, in place: the wide kernel under large_gates="ozaki1", Ozaki-II's
    kernels where large_gates="auto" chooses Ozaki-II; the bits of the CPU path on the transposed
    copy's columns either way."""
    import cupy as cp

    targets = (13, 0, 5, 1, 9, 2, 11, 3, 7)
    u = haar_unitary(512, rng)
    state = crandn(rng, 1 << 14) * 2.0 ** rng.integers(-20, 20, size=1 << 14)
    loose = gemm_backend.get("int8-auto", target_error=1e-6, large_gates="ozaki1")
    plan, _ = loose.gate_plan(u)
    expected = state.copy()
    _cpu_scattered(u, expected, targets, plan)
    on_gpu = cp.asarray(state)
    assert loose.takes_scattered(512, True) and loose.apply_scattered(cp.asarray(u), on_gpu, targets)
    assert same_bits(on_gpu.get(), expected) and loose.last_call_info["kernel"] == "fused"
    default = gemm_backend.get("int8-auto")
    expected = at_targets(state, targets, lambda columns: batched_on_columns(gemm_backend.get("int8-auto"), u, columns))
    on_gpu = cp.asarray(state)
    assert default.apply_scattered(cp.asarray(u), on_gpu, targets)
    assert default.last_call_info["kernel"] == "ozaki2" and same_bits(on_gpu.get(), expected)


@pytest.mark.gpu
@requires_gpu
def test_fused_out_of_place_and_nonfinite(rng):
    import cupy as cp

    u = cp.asarray(haar_unitary(16, rng))
    x = cp.asarray(crandn(rng, 8, 16, 4))
    out = cp.empty_like(x)
    backend = gemm_backend.get("int8-9")
    backend.apply_batched(u, x, out)
    in_place = x.copy()
    backend.apply_batched(u, in_place, in_place)
    assert same_bits(out.get(), in_place.get())
    x[3, 2, 1] = cp.nan
    with pytest.raises(BackendError, match="NaN or Inf"):
        backend.apply_batched(u, x, x)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name, options, k", [("int8-7", {}, 8), ("int8-auto", {"large_gates": "ozaki2"}, 128)])
def test_deferred_nonfinite_check_in_a_run(name, options, k, rng):
    """The fused kernels and Ozaki-II gates flag NaN or Inf in the state on the device; a run
    reads the flag once, at its end."""
    import cupy as cp

    backend = gemm_backend.get(name, **options)
    x = cp.asarray(crandn(rng, 4, k, 2))
    x[0, 0, 0] = cp.inf
    backend.start_run()
    backend.apply_batched(cp.asarray(haar_unitary(k, rng)), x, x)  # no error yet: deferred
    assert backend.last_call_info["scheme"] == ("ozaki2" if k == 128 else "ozaki1")
    with pytest.raises(BackendError, match="NaN or Inf"):
        backend.finish_run()


# -- GPU: the wide kernel (K = 128, 256 routed; 512 by wide_launch) ------------------------
@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("d", [7, 8])
@pytest.mark.parametrize("splits", [3, 9, 13])
@pytest.mark.parametrize("shape_of", [(40, 1), (3, 2), (5, 16), (1, 64)])
def test_wide_equals_cpu_bit_for_bit(d, splits, shape_of, rng):
    """Strides R = 2^q at q = 0, 1, middle and top; column counts below, at and past one
    32-column tile; zero, subnormal and threshold columns."""
    n_left, n_right = shape_of
    k = 1 << d
    u = haar_unitary(k, rng)
    x = _strided_state(rng, (n_left, k, n_right))
    x *= 2.0 ** rng.integers(-30, 30, size=(n_left, 1, n_right))
    expected, got, cpu_info, gpu_info = _cpu_and_gpu(gemm_backend.get(f"int8-{splits}"), u, x)
    assert gpu_info["kernel"] == "fused" and cpu_info["kernel"] == "tiles"
    assert same_bits(got, expected)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("plan_args", [(3,), (9, 9, 11), (13,)])
@pytest.mark.parametrize("shape_of", [(20, 1), (3, 2), (5, 8), (1, 32)])
def test_wide_at_512_equals_cpu_bit_for_bit(plan_args, shape_of, rng):
    """K = 512 (wide_launch: not routed yet), strides R = 2^q at q = 0, 1, middle and top, column
    counts below, at and past one 16-column tile, special columns, in place."""
    n_left, n_right = shape_of
    plan = plan_products(plan_args[0], 1024, *plan_args[1:])
    u = haar_unitary(512, rng)
    x = _strided_state(rng, (n_left, 512, n_right))
    expected = _cpu_tiles(u, x, plan)
    assert same_bits(_fused_in_place(u, x, plan, wide_launch(512, plan)), expected)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k", WIDE_DIMS + WIDE_UNMEASURED_DIMS)
@pytest.mark.parametrize("state_slices, gate_slices, top", [(9, 8, 10), (5, 5, 7), (12, 4, 13), (4, 12, 9), (7, 7, 14)])
@pytest.mark.parametrize("warp_n_tiles, held, staged, columns, blocks", [(2, 9, False, 32, 1), (4, 3, True, 32, 1),
                                                                       (4, 4, False, 32, 1), (1, 3, False, 16, 2),
                                                                       (2, 2, True, 16, 1)])
def test_wide_plans_and_shapes_give_the_same_bits(k, state_slices, gate_slices, top, warp_n_tiles, held, staged,
                                                  columns, blocks, rng):
    """Unequal digit counts, tops below and past s_a + s_b, every register shape, against the CPU tiles."""
    plan = plan_products(state_slices, 2 * k, gate_slices, top)
    staged = staged and wide_launch(k, plan, True, columns, blocks) is not None
    base = wide_launch(k, plan, staged, columns, blocks, wgmma=False)
    if base is None:
        pytest.skip(f"{state_slices} digits of {columns} columns do not fit {blocks} times")
    launch = dataclasses.replace(base, warp_n_tiles=warp_n_tiles, gate_digits_held=held)
    u = haar_unitary(k, rng)
    x = _state(rng, (33, k, 2), special=True)
    expected = _cpu_tiles(u, x, plan)
    assert same_bits(_fused_in_place(u, x, plan, launch), expected)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k, plan_args", [(64, (9, 8, 10)), (128, (9, 8, 10)), (128, (5, 5, 7)), (256, (9, 9, 11)),
                                          (256, (12, 4, 13)), (512, (9, 9, 11)), (512, (3,))])
@pytest.mark.parametrize("warp_n_tiles, held, staged, in_flight", [(4, 3, True, 1), (4, 3, False, 2), (2, 9, False, 1),
                                                                    (1, 3, False, 2), (2, 2, False, 2)])
@pytest.mark.parametrize("shape_of", [(40, 1), (3, 2), (5, 16), (1, 64)])
def test_wgmma_wide_kernel_equals_cpu_bit_for_bit(k, plan_args, warp_n_tiles, held, staged, in_flight, shape_of, rng):
    """The wide kernel's products by warpgroups (wgmma, n = 32, 16 and 8 columns), one or two
    chunks of products in flight, strides R = 2^q at q = 0, 1, middle and top, staged or not,
    special columns, in place."""
    plan = plan_products(plan_args[0], 2 * k, *plan_args[1:])
    staged = staged and wide_launch(k, plan, True) is not None
    base = wide_launch(k, plan, staged, wgmma=True)
    launch = base and dataclasses.replace(base, warp_n_tiles=warp_n_tiles, gate_digits_held=min(held, plan.b_slices),
                                          chunks_in_flight=in_flight)
    if launch is None or warp_n_tiles * 8 > launch.columns or not wgmma_fits(warp_n_tiles, launch.columns):
        pytest.skip(f"no wgmma launch of {warp_n_tiles} n-tiles per warpgroup at K = {k}")
    n_left, n_right = shape_of
    u = haar_unitary(k, rng)
    x = _strided_state(rng, (n_left, k, n_right))
    x *= 2.0 ** rng.integers(-30, 30, size=(n_left, 1, n_right))
    expected = _cpu_tiles(u, x, plan)
    assert same_bits(_fused_in_place(u, x, plan, launch), expected)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("targets", [(0, 2, 3, 5, 8, 9, 11, 12, 6), (1, 2, 4, 6, 7, 10, 12, 13, 3),
                                     (6, 7, 8, 9, 10, 11, 12, 13, 5), (13, 0, 5, 1, 9, 2, 11, 3, 7)])
@pytest.mark.parametrize("d", [7, 8, 9])
def test_wide_scattered_targets_in_place_and_out(targets, d, rng):
    """Any target bits (the lowest state bit among them or not, the top one, an unsorted order),
    in place and out of place, against the CPU tiles on the transposed copy's columns."""
    import cupy as cp

    from gemm_backend.ozaki.gate import apply_fused_gate

    k = 1 << d
    targets = targets[:d]
    plan = plan_products(9, 2 * k, 8, 10)
    u = haar_unitary(k, rng)
    state = crandn(rng, 1 << 14) * 2.0 ** rng.integers(-20, 20, size=1 << 14)
    expected = state.copy()
    _cpu_scattered(u, expected, targets, plan)
    x_gpu, out_gpu = cp.asarray(state), cp.empty(state.shape, cp.complex128)
    apply_fused_gate(cp.asarray(u), x_gpu, out_gpu, plan, wide_launch(k, plan), targets=targets)
    apply_fused_gate(cp.asarray(u), x_gpu, x_gpu, plan, wide_launch(k, plan), targets=targets)
    assert same_bits(out_gpu.get(), expected)
    assert same_bits(x_gpu.get(), expected)


@pytest.mark.gpu
@requires_gpu
def test_wide_nonfinite_columns_are_left_and_reported(rng):
    import cupy as cp

    u = cp.asarray(haar_unitary(128, rng))
    x = cp.asarray(crandn(rng, 40, 128, 1))
    x[37, 5, 0] = cp.inf
    before = x.copy()
    backend = gemm_backend.get("int8-9")
    with pytest.raises(BackendError, match="NaN or Inf"):
        backend.apply_batched(u, x, x)
    assert same_bits(x[37].get(), before[37].get())  # the bad column as it was
    clean = before.copy()
    clean[37] = 0
    backend.apply_batched(u, clean, clean)
    assert same_bits(x[:37].get(), clean[:37].get()) and same_bits(x[38:].get(), clean[38:].get())



# -- host: the CUDA source compiled for the CPU, the same bits as the CPU tiles ----------------
# The kernels' logic (digits, products, chunks, addressing, stages, tails of tiles, every plan)
# runs here on every machine; the emulated parts (mma, cp.async, warps as threads) follow PTX's
# definitions, and the GPU tests above remain the check of the hardware.
HOST_FUSED_WARPS = 2  # the fused kernel takes any warp count per block; the device runs up to 8


def _host_warps(launch) -> int:
    """Warps per host block: the wide kernel's fewest (the warps, with wgmma the warpgroups of
    four, sharing an m-tile's columns)."""
    if isinstance(launch, WideLaunch):
        return (4 if launch.wgmma else 1) * max(1, launch.columns // 8 // launch.warp_n_tiles)
    return HOST_FUSED_WARPS


def _host_options(launch, warps: int) -> tuple:
    """g++ options of a launch's host build: its source, instantiation and definitions, the wide
    kernel's warps per block at `warps`."""
    definitions = [f"-DWIDE_WARPS={warps}" if d.startswith("-DWIDE_WARPS=") else d for d in launch.definitions]
    return ("-O1", *kernel_includes(launch.source), f'-DKERNEL_SOURCE="{launch.source}"', f"-DKERNEL={launch.name}",
            *definitions)


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    """build(launch) -> the host function of the launch's kernel variant (host_build.variant_builder)."""
    return variant_builder("ozaki_gate_host.cpp", "host_fused_gate", tmp_path_factory.mktemp("ozaki_gate_host"),
                           lambda launch: _host_options(launch, _host_warps(launch)))


@pytest.fixture(scope="module")
def host_kernel_at_device_warps(tmp_path_factory):
    """The same with the device's WIDE_WARPS (slower on the host: 256 threads a block)."""
    return variant_builder("ozaki_gate_host.cpp", "host_fused_gate", tmp_path_factory.mktemp("ozaki_gate_host_8"),
                           lambda launch: _host_options(launch, WIDE_WARPS))


def _host_apply(host_kernel, u, x, out, plan, launch, targets=None, blocks=2, warps=None) -> bool:
    """apply_fused_gate's call (fused_gate_call) run by the host build of its kernel, `blocks`
    blocks of `warps` warps (default _host_warps) one after another; whether the kernel flagged
    NaN or Inf."""
    launch, (x, out, n_columns, packed_targets, fragments, exponents) = fused_gate_call(u, x, out, plan, launch, targets)
    flag = np.zeros(1, np.int32)
    pointer = lambda a: ctypes.c_void_p(a.ctypes.data)  # noqa: E731
    host_kernel(launch)(pointer(x), pointer(out), ctypes.c_longlong(n_columns), ctypes.c_ulonglong(packed_targets),
                        pointer(fragments), pointer(exponents), pointer(flag),
                        ctypes.c_int(_host_warps(launch) if warps is None else warps), ctypes.c_int(blocks))
    return bool(flag[0])


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("plan_args", [(3,), (7,), (13,), (9, 9, 10), (12, 4, 13), (4, 12, 9)])
def test_host_fused_kernel_equals_cpu_bit_for_bit(host_kernel, d, plan_args, rng):
    """Default launches (K = 4, 8 packed in the sixteen kernel where the qubits allow) on views
    with zero, subnormal and threshold columns, in place, partial last tiles included."""
    k = 1 << d
    plan = plan_products(plan_args[0], 2 * k, *plan_args[1:])
    u = haar_unitary(k, rng)
    x = _with_subnormal_columns(_state(rng, (5, k, 4), special=True))
    expected = _cpu_tiles(u, x, plan)
    assert not _host_apply(host_kernel, u, x, x, plan, plan_launch(k, plan))
    assert same_bits(x, expected)


@pytest.mark.parametrize("d, n_tiles, prefetch", [(3, 2, True), (5, 1, True), (6, 2, False), (2, 4, True)])
def test_host_fused_launch_shapes_and_prefetch(host_kernel, d, n_tiles, prefetch, rng):
    k = 1 << d
    plan = plan_products(7, 2 * k)
    launch = plan_launch(k, plan, n_tiles=n_tiles, prefetch=prefetch, blocks_per_sm=1, packed=False)
    assert launch.prefetch == prefetch
    u = haar_unitary(k, rng)
    x = _state(rng, (37, k, 2), special=True)
    expected = _cpu_tiles(u, x, plan)
    assert not _host_apply(host_kernel, u, x, x, plan, launch, blocks=3)
    assert same_bits(x, expected)


@pytest.mark.parametrize("k, plan_args, shape", [
    (128, (9, 8, 10), {}),  # int8-auto's plan at d = 7: the default, staged
    (128, (5, 5, 7), {"staged": False}),
    (128, (4, 12, 9), {"warp_n_tiles": 2, "gate_digits_held": 9}),
    (256, (5, 5, 7), {}),  # four n-tiles per warp, not staged
    (256, (3, 4, 6), {"warp_n_tiles": 2, "gate_digits_held": 2}),
    (512, (3, 3, 4), {}),  # 32 columns a tile, four n-tiles per warp
    (512, (3, 3, 4), {"columns": 16}),  # two n-tiles per warp
    (512, (4, 3, 5), {"columns": 16, "warp_n_tiles": 1, "gate_digits_held": 2}),
    # wgmma: warpgroups of four warps over four m-tiles, the column digits as core matrices
    (128, (9, 8, 10), {"wgmma": True}),  # n32, staged
    (256, (5, 5, 7), {"wgmma": True, "warp_n_tiles": 2, "gate_digits_held": 5}),  # n16, two warpgroups per m-tiles
    (512, (3, 3, 4), {"columns": 16, "wgmma": True, "warp_n_tiles": 1}),  # n8, two warpgroups per m-tiles
    (512, (5, 5, 7), {"wgmma": True, "chunks_in_flight": 2}),  # int8-auto's launch for --target-error 1e-10 at d = 9
    (512, (9, 9, 11), {"wgmma": True, "chunks_in_flight": 2}),  # the FP64 contract's plan at d = 9: 16 columns
    # two chunks of products in flight, two sets of gate-digit registers in turn
    (128, (9, 8, 10), {"wgmma": True, "chunks_in_flight": 2}),  # three chunks per k-tile: sets alternate per k-tile
    (64, (9, 8, 10), {}),  # 64 columns a tile, two warps per m-tile, staged
    (64, (9, 8, 10), {"wgmma": True, "chunks_in_flight": 2}),  # two warpgroups per m-tiles
    (256, (4, 12, 9), {"wgmma": True, "chunks_in_flight": 2, "warp_n_tiles": 2, "gate_digits_held": 2}),
])
def test_host_wide_kernel_equals_cpu_bit_for_bit(host_kernel, k, plan_args, shape, rng):
    """Plans and register shapes of the wide kernel over whole and partial tiles (35 columns,
    20 at K = 512; one block: each tile stages the next), zero, subnormal and threshold columns,
    in place."""
    plan = plan_products(plan_args[0], 2 * k, *plan_args[1:])
    launch = wide_launch(k, plan, columns=shape.get("columns"), wgmma=False)
    launch = dataclasses.replace(wide_launch(k, plan, staged=shape.get("staged", launch.staged), columns=launch.columns,
                                             wgmma=False),
                                 **{key: value for key, value in shape.items() if key not in ("staged", "columns")})
    u = haar_unitary(k, rng)
    x = _with_subnormal_columns(_state(rng, (35 if k < 512 else 20, k, 1), special=True))
    expected = _cpu_tiles(u, x, plan)
    assert not _host_apply(host_kernel, u, x, x, plan, launch, blocks=1)
    assert same_bits(x, expected)


def test_host_wide_kernel_at_the_devices_warps(host_kernel_at_device_warps, rng):
    """Eight warps, as on the device: at K = 128 a thread then holds all its items in registers
    from the maxima to the digits (with fewer warps it reads some again), staged, two tiles and a
    partial one in one block."""
    plan = plan_products(3, 256, 3, 4)
    launch = wide_launch(128, plan, wgmma=False)
    assert launch.staged
    u = haar_unitary(128, rng)
    x = _with_subnormal_columns(_state(rng, (70, 128, 1), special=True))
    expected = _cpu_tiles(u, x, plan)
    assert not _host_apply(host_kernel_at_device_warps, u, x, x, plan, launch, blocks=1, warps=WIDE_WARPS)
    assert same_bits(x, expected)


@pytest.mark.parametrize("targets, plan_args", [
    ((0, 4), (7,)), ((1, 7, 8), (7,)), ((9, 0, 5), (7,)), ((2, 11, 3, 6, 10), (7,)), ((11, 0, 1, 2, 3, 4), (7,)),
    ((0, 2, 3, 5, 8, 9, 11), (3, 3, 4)), ((10, 0, 5, 1, 9, 2, 11), (3, 3, 4)), ((12, 0, 5, 1, 9, 2, 11, 3, 7), (3, 3, 4)),
])
def test_host_scattered_targets_out_of_place(host_kernel, targets, plan_args, rng):
    """Any target bits (packed launches, unsorted ones and the top one among them) for both
    kernels, out of place: x stays as it was."""
    k = 1 << len(targets)
    plan = plan_products(plan_args[0], 2 * k, *plan_args[1:])
    launch = plan_launch(k, plan) if k in FUSED_DIMS else wide_launch(k, plan, wgmma=False)
    u = haar_unitary(k, rng)
    state = crandn(rng, 1 << 13) * 2.0 ** rng.integers(-20, 20, size=1 << 13)
    expected = state.copy()
    _cpu_scattered(u, expected, targets, plan)
    before, out = state.copy(), np.empty_like(state)
    assert not _host_apply(host_kernel, u, state, out, plan, launch, targets=targets)
    assert same_bits(out, expected) and same_bits(state, before)


@pytest.mark.parametrize("k, plan_args, bad", [(32, (7,), np.nan), (128, (5, 5, 7), np.inf)])
def test_host_nonfinite_columns_are_left_and_flagged(host_kernel, k, plan_args, bad, rng):
    plan = plan_products(plan_args[0], 2 * k, *plan_args[1:])
    u = haar_unitary(k, rng)
    x = crandn(rng, 40, k, 1)
    x[37, 5, 0] = bad
    before = x.copy()
    assert _host_apply(host_kernel, u, x, x, plan, plan_launch(k, plan))
    assert same_bits(x[37], before[37])
    clean = before.copy()
    clean[37] = 0
    expected = _cpu_tiles(u, clean, plan)
    assert same_bits(x[:37], expected[:37]) and same_bits(x[38:], expected[38:])
