"""int8-auto's one-kernel scan (gemm_backend/ozaki/span_scan.py, kernels/span_scan.cu) against
the CPU path of backend._scan, its specification: the row exponents and every integer field of
the SpanSummaries equal, the norms equal up to the order of their sums. On the host the kernel
runs through a one-warp emulation (host_cuda/span_scan_host.cpp, both lane mappings, with and
without early flushes of its counters); on a GPU through cupy, alone and inside matmul."""
import ctypes
from pathlib import Path

import numpy as np
import pytest

import gemm_backend
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from gemm_backend.ozaki import span_scan
from gemm_backend.ozaki.spans import CENTER_BINS, SPAN_BINS, SPAN_OFFSET
from gemm_backend.ozaki.split import bits_per_slice

from .helpers import same_bits, seed_paper_matrix
from .host_build import build_host_harness

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU with cupy")
KERNELS = Path(span_scan.__file__).resolve().parent / "kernels" / "span_scan.cu"  # as installed
# "flushing": the block flushes its shared counters before every tile of more than 100 values
BUILDS = {"plain": [], "flushing": ["-DCOUNTER_LIMIT=100"]}
COUNT_FIELDS = ("inner", "rows", "zeros", "nnz")
HISTOGRAM_FIELDS = ("deviations", "centers", "norm_centers", "alphas")
NON_FINITE_A = "matmul operand a contains NaN or Inf"
NON_FINITE_B = "matmul operand b contains NaN or Inf"


# -- inputs and the specification -----------------------------------------------------------------
def operands(rng, shape, phi, is_complex, special=False):
    """Seed-paper A (m, k) and B (k, n); special: zero rows of A and columns of B, subnormal and
    huge (near 2^1023) rows and columns, and zeros and subnormals scattered inside rows."""
    m, k, n = shape
    a = seed_paper_matrix(rng, (m, k), phi, is_complex)
    b = seed_paper_matrix(rng, (k, n), phi, is_complex)
    if special:
        a[0] = 0.0
        scale_to(a[1 % m], -1050)
        scale_to(a[2 % m], 1023)
        a[3 % m, ::3] = 0.0
        b[:, 0] = 0.0
        scale_to(b[:, 1 % n], -1062)
        scale_to(b[:, 2 % n], 1023)
        b[::2, 3 % n] = 0.0
        a.flat[-1] = 3e-320
        b.flat[-1] = -5e-324
    return a, b


def scale_to(line, exponent: int) -> None:
    """Multiplies the 1-D view `line` in place by the power of two that puts its largest |part|
    in [2^(exponent - 1), 2^exponent) (exactly, unless parts fall below 2^-1074)."""
    parts = np.stack([line.real, line.imag]) if np.iscomplexobj(line) else line[None]
    largest_exponent = np.frexp(np.abs(parts).max())[1]
    scaled = np.ldexp(parts, exponent - largest_exponent)
    line[...] = scaled[0] + 1j * scaled[1] if np.iscomplexobj(line) else scaled[0]


def float64_rows(a):
    return a.view(np.float64) if np.iscomplexobj(a) else a


def cpu_scan(a, b):
    """backend._scan on numpy under the fp64 rule: (a_exps, b_exps, a_summary, b_summary)."""
    width = 2 if np.iscomplexobj(b) else 1
    backend = gemm_backend.get("int8-auto")
    a_exps, b_exps, statistics = backend._scan(float64_rows(np.ascontiguousarray(a)), b, width, 1 << 30)
    return a_exps, b_exps, statistics["a"], statistics["b"]


def assert_same_summary(got, expected):
    for field in COUNT_FIELDS:
        assert getattr(got, field) == getattr(expected, field), field
    for field in HISTOGRAM_FIELDS:
        assert np.array_equal(getattr(got, field), getattr(expected, field)), field
    # n nonnegative terms summed in any order: within (n - 1) u of each other (halved by sqrt)
    assert got.norm == pytest.approx(expected.norm, rel=expected.inner * 2.0**-53, abs=0.0)


def assert_same_scan(got, expected):
    for exps, expected_exps in zip(got[:2], expected[:2]):
        assert exps.dtype == np.int32 and np.array_equal(exps, expected_exps)
    assert_same_summary(got[2], expected[2])
    assert_same_summary(got[3], expected[3])


SCAN_CASES = [((37, 29, 11), False), ((5, 1, 3), False), ((9, 301, 40), True), ((64, 131, 33), False),
              ((40, 7, 70), True)]


# -- pure helpers --------------------------------------------------------------------------------
def test_totals_layout_holds_each_field_once():
    starts = [span_scan.DEVIATIONS_AT, span_scan.ALPHAS_AT, span_scan.CENTERS_AT, span_scan.NORM_CENTERS_AT,
              span_scan.LIVE_ROWS_AT, span_scan.NONZEROS_AT, span_scan.MOST_NONZEROS_AT, span_scan.NORM_BITS_AT]
    sizes = [SPAN_BINS, CENTER_BINS, CENTER_BINS, CENTER_BINS, 1, 1, 1, 1]
    assert starts == list(np.cumsum([0] + sizes[:-1])) and span_scan.TOTAL_WORDS == sum(sizes)
    assert f"-DSPAN_OFFSET={SPAN_OFFSET}" in span_scan.compile_definitions()
    assert f"-DNORM_BITS_AT={span_scan.NORM_BITS_AT}" in span_scan.compile_definitions()


def test_summary_from_totals_reads_every_field():
    totals = np.zeros(span_scan.TOTAL_WORDS, np.uint64)
    totals[span_scan.DEVIATIONS_AT + 5] = 7
    totals[span_scan.ALPHAS_AT + 3] = 9
    totals[span_scan.CENTERS_AT + 4] = 2
    totals[span_scan.NORM_CENTERS_AT + 6] = 2
    totals[span_scan.LIVE_ROWS_AT], totals[span_scan.NONZEROS_AT], totals[span_scan.MOST_NONZEROS_AT] = 2, 16, 9
    totals[span_scan.NORM_BITS_AT] = np.array([1.25], np.float64).view(np.uint64)[0]
    summary = span_scan.summary_from_totals(totals, 10)
    assert (summary.inner, summary.rows, summary.zeros, summary.nnz, summary.norm) == (10, 2, 4, 9, 1.25)
    assert summary.deviations.shape == (SPAN_BINS,) and summary.deviations[5] == 7 and summary.deviations.sum() == 7
    assert summary.alphas.shape == (CENTER_BINS,) and summary.alphas[3] == 9 and summary.alphas.sum() == 9
    assert summary.centers[4] == 2 and summary.norm_centers[6] == 2 and summary.norm_centers.sum() == 2
    assert all(getattr(summary, f).dtype == np.int64 for f in HISTOGRAM_FIELDS)


def test_layouts_read_a_by_rows_and_b_by_columns():
    a_rows = np.zeros((6, 10))
    assert span_scan.a_layout(a_rows) == span_scan.RowLayout(6, 10, 1, 10, 1)
    assert not span_scan.a_layout(a_rows).lanes_across_rows
    b = np.zeros((5, 7), np.complex128)
    assert span_scan.b_layout(b, 2) == span_scan.RowLayout(7, 5, 2, 2, 14)
    assert span_scan.b_layout(b, 2).lanes_across_rows  # row-major B: neighbouring columns on neighbouring lanes
    assert not span_scan.b_layout(np.asfortranarray(b), 2).lanes_across_rows
    assert span_scan.b_layout(b[::-1, ::2], 2) == span_scan.RowLayout(4, 5, 2, 4, -14)
    long_columns = span_scan.RowLayout(rows=4, elements=2**27, width=2, row_step=2, element_step=8)
    assert not long_columns.lanes_across_rows  # 32 such rows would overflow the 32-bit counters


# -- the kernel on the host ------------------------------------------------------------------------
@pytest.fixture(scope="module", params=list(BUILDS))
def host_kernel(request, tmp_path_factory):
    return build_host_kernel(request.param, tmp_path_factory)


def build_host_kernel(build: str, tmp_path_factory):
    """The host build (BUILDS) of kernels/span_scan.cu as a ctypes function."""
    library = build_host_harness("span_scan_host.cpp", tmp_path_factory.mktemp("host_cuda") / f"span_scan_{build}.so",
                                 ("-O1", *span_scan.compile_definitions(), *BUILDS[build], f'-DKERNELS="{KERNELS}"'))
    return library.host_span_scan


def host_side(kernel, operand, layout, bits, lanes_across_rows):
    """(exponents, nonfinite, summary) of one operand from the host kernel."""
    exps = np.full(layout.rows * layout.width, -12345, np.int32)
    nonfinite, totals = np.zeros(1, np.int32), np.zeros(span_scan.TOTAL_WORDS, np.uint64)
    kernel(ctypes.c_void_p(operand.ctypes.data), ctypes.c_longlong(layout.rows), ctypes.c_longlong(layout.elements),
           ctypes.c_int(layout.width), ctypes.c_longlong(layout.row_step), ctypes.c_longlong(layout.element_step),
           ctypes.c_int(lanes_across_rows), ctypes.c_int(bits), ctypes.c_void_p(exps.ctypes.data),
           ctypes.c_void_p(nonfinite.ctypes.data), ctypes.c_void_p(totals.ctypes.data))
    return exps, bool(nonfinite[0]), span_scan.summary_from_totals(totals, layout.elements * layout.width)


def host_scan(kernel, a, b, lanes_across_rows):
    width = 2 if np.iscomplexobj(b) else 1
    a_rows = float64_rows(np.ascontiguousarray(a))
    bits = bits_per_slice(width * b.shape[0])
    a_exps, a_bad, a_summary = host_side(kernel, a_rows, span_scan.a_layout(a_rows), bits, lanes_across_rows)
    b_exps, b_bad, b_summary = host_side(kernel, b, span_scan.b_layout(b, width), bits, lanes_across_rows)
    assert not a_bad and not b_bad
    return a_exps, b_exps, a_summary, b_summary


@pytest.mark.parametrize("shape, special", SCAN_CASES)
@pytest.mark.parametrize("phi", [0.5, 4.0, 12.0])
@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("lanes_across_rows", [0, 1])
def test_host_kernel_matches_the_cpu_scan(host_kernel, shape, special, phi, is_complex, lanes_across_rows, rng):
    a, b = operands(rng, shape, phi, is_complex, special)
    assert_same_scan(host_scan(host_kernel, a, b, lanes_across_rows), cpu_scan(a, b))


def test_host_kernel_reads_strided_and_reversed_b(host_kernel, rng):
    a, big = operands(rng, (12, 40, 50), 4.0, True, special=True)
    for b in (big[::2, 1::3], big[::-2, ::-3], np.asfortranarray(big[:20])):
        a_k = a[:, :b.shape[0]]
        for lanes_across_rows in (0, 1):
            assert_same_scan(host_scan(host_kernel, a_k, b, lanes_across_rows), cpu_scan(a_k, b))


@pytest.mark.parametrize("k", [20, 40000])  # digits of 8 bits, and of 7 (inner 80000 > 2^16)
def test_host_kernel_at_the_exponent_threshold(host_kernel, k, rng):
    """Row maxima whose fraction is exactly 1 - 2^(1 - bits) take the larger exponent, and those
    just below it the smaller: the same rows on both paths."""
    bits = bits_per_slice(2 * k)
    threshold = 1.0 - 2.0 ** (1 - bits)
    a, b = operands(rng, (4, k, 3), 0.5, True)
    a *= 2.0**-4  # every |part| below 1/2 ...
    b *= 2.0**-4
    a[1] *= 2.0**-40
    a[0, 1] = threshold  # ... but these maxima
    a[1, 2] = 1j * np.nextafter(threshold, 0.0) * 2.0**-30
    b[k - 1, 0] = -threshold * 2.0**40
    b[3, 1] = np.nextafter(threshold, 0.0)
    expected = cpu_scan(a, b)
    assert list(expected[0][:2]) == [2, -29] and list(expected[1][:4]) == [42, 42, 1, 1]
    assert_same_scan(host_scan(host_kernel, a, b, 0), expected)


def test_host_kernel_on_all_zero_operands(host_kernel):
    a, b = np.zeros((3, 5)), np.zeros((5, 4), np.complex128)
    a_rows = np.ascontiguousarray(np.zeros((3, 10)))
    got = host_scan(host_kernel, a_rows.view(np.complex128), b, 1)
    assert_same_scan(got, cpu_scan(a_rows.view(np.complex128), b))
    assert got[2].empty and got[3].empty and got[3].norm == 0.0
    assert not np.any(got[0]) and not np.any(got[1])
    assert host_scan(host_kernel, a, b.real.copy(), 0)[2].rows == 0


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_host_kernel_flags_non_finite_values(host_kernel, bad, rng):
    a, b = operands(rng, (6, 9, 5), 4.0, True)
    b[4, 2] = complex(0.0, bad)
    layout = span_scan.b_layout(b, 2)
    for lanes_across_rows in (0, 1):
        assert host_side(host_kernel, b, layout, 8, lanes_across_rows)[1]
    a_rows = a.view(np.float64)
    assert not host_side(host_kernel, a_rows, span_scan.a_layout(a_rows), 8, 0)[1]


# -- the kernel on the GPU -------------------------------------------------------------------------
def gpu_scan(a, b):
    import cupy as cp

    width = 2 if np.iscomplexobj(b) else 1
    a_gpu = cp.ascontiguousarray(cp.asarray(a))
    a_rows = a_gpu.view(cp.float64) if width == 2 else a_gpu
    got = span_scan.scan_gpu(a_rows, cp.asarray(b), width, bits_per_slice(width * b.shape[0]))
    return got[0].get(), got[1].get(), got[2], got[3]


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("shape, special", SCAN_CASES)
@pytest.mark.parametrize("phi", [0.5, 4.0, 12.0])
@pytest.mark.parametrize("is_complex", [False, True])
def test_gpu_scan_matches_the_cpu_scan(shape, special, phi, is_complex, rng):
    a, b = operands(rng, shape, phi, is_complex, special)
    assert_same_scan(gpu_scan(a, b), cpu_scan(a, b))


@pytest.mark.gpu
@requires_gpu
def test_gpu_scan_reads_strided_b_and_many_rows(rng):
    import cupy as cp

    a, big = operands(rng, (3000, 60, 900), 4.0, True, special=True)
    b_gpu = cp.asarray(big)[::2, 1::3]
    a_k = a[:, :b_gpu.shape[0]]
    got = span_scan.scan_gpu(cp.asarray(a_k).view(cp.float64), b_gpu, 2, bits_per_slice(2 * b_gpu.shape[0]))
    assert_same_scan((got[0].get(), got[1].get(), got[2], got[3]), cpu_scan(a_k, big[::2, 1::3]))
    assert_same_scan(gpu_scan(a_k, np.asfortranarray(big[::2])), cpu_scan(a_k, big[::2]))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_gpu_scan_raises_on_non_finite_operands(side, bad, rng):
    a, b = operands(rng, (7, 13, 5), 4.0, True)
    (a if side == "a" else b)[3, 4] = bad
    with pytest.raises(BackendError, match=NON_FINITE_A if side == "a" else NON_FINITE_B):
        gpu_scan(a, b)
    with pytest.raises(BackendError, match=NON_FINITE_A if side == "a" else NON_FINITE_B):
        cpu_scan(a, b)
    a[...] = np.nan  # both: A's message, as _scan checks A first
    with pytest.raises(BackendError, match=NON_FINITE_A):
        gpu_scan(a, b)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("phi", [0.5, 4.0, 12.0])
@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("shape", [(96, 131, 70), (33, 257, 40)])
def test_gpu_matmul_picks_the_cpu_plan(phi, is_complex, shape, rng):
    """int8-auto's matmul: the scan on the GPU gives the plan (scheme, digits or moduli, or the
    native product) of the CPU's, and the same bits where it is an Ozaki product; estimate and
    span_bits come from norms summed in different orders. Zero rows and columns, no values near
    2^1023 (whose products overflow)."""
    import cupy as cp

    a, b = operands(rng, shape, phi, is_complex)
    a[5] = 0.0
    b[:, 7] = 0.0
    cpu_backend, gpu_backend = gemm_backend.get("int8-auto"), gemm_backend.get("int8-auto")
    expected = cpu_backend.matmul(a, b)
    got = gpu_backend.matmul(cp.asarray(a), cp.asarray(b)).get()
    if "fallback" not in cpu_backend.last_call_info:  # a native product is not bit-reproducible across devices
        assert same_bits(got, expected)
    for key in ("estimate", "span_bits"):
        values = (gpu_backend.last_call_info.pop(key, 0.0), cpu_backend.last_call_info.pop(key, 0.0))
        assert values[0] == pytest.approx(values[1], rel=1e-12)
    assert gpu_backend.last_call_info == cpu_backend.last_call_info
