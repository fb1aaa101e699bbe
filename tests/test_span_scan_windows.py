"""The scan kernel's window counting (kernels/span_scan.cu with window_counts.cuh) at its limits,
against the CPU scan (backend._scan, spans.summarize_spans): alpha in its window 1 .. 16 and the
deviation in SPAN_OFFSET - 5 .. SPAN_OFFSET + 10 counted in registers, every other value (and
every subnormal one) through the shared histograms; window fields filled to their limit between
flushes, many times over; rows of subnormals (whose x / 2^e takes two scalings) and rows whose
maximum is near 2^1024 (x / 2^e by a subnormal power of two). Each operand in both lane mappings
on the host (host_cuda/span_scan_host.cpp, with and without early flushes of the shared counters),
and on a GPU through cupy."""
import numpy as np
import pytest

from gemm_backend import BackendError
from gemm_backend.ozaki import span_scan
from gemm_backend.ozaki.spans import SPAN_OFFSET

from .test_span_scan import BUILDS, assert_same_scan, build_host_kernel, cpu_scan, gpu_scan, host_scan, requires_gpu

ALPHA_WINDOW = slice(1, 17)  # span_scan.cu's ALPHA_WINDOW_FIRST_BIN .. + WINDOW_BINS - 1
DEVIATION_WINDOW = slice(SPAN_OFFSET - 5, SPAN_OFFSET + 11)  # DEVIATION_WINDOW_FIRST_BIN ..
BATCH_VALUES = 6  # values a lane counts per batch
FIELD_FILL = (255 // BATCH_VALUES) * BATCH_VALUES  # counts in a lane's 8-bit field at a flush, at most
SAME_ROWS = 96  # three tiles of 32 rows
# Values per row: a multiple of 32 lanes * BATCH_VALUES, so that in either lane mapping every lane
# counts a full batch each time and a row of one magnitude fills its field to FIELD_FILL.
ROW_VALUES = 192


@pytest.fixture(scope="module", params=list(BUILDS))
def host_kernel(request, tmp_path_factory):
    return build_host_kernel(request.param, tmp_path_factory)


def edge_rows(rng, is_complex: bool):
    """(rows, ROW_VALUES or ROW_VALUES / 2 complex) rows at the kernel's limits: SAME_ROWS of
    +-0.75 (+-0.75 i) (alpha 1, deviation 0: one field of each window full between flushes),
    then side by side: powers 2^-j (j < 24) under a maximum 1 (alpha 1 .. 24 and deviations about
    -12 .. 12, across both borders of both windows), rows of subnormals under the smallest normal,
    the largest subnormal or a random one as maximum (below 2^-1054 in some), lone nonzeros, zero rows, maxima at the
    exponent threshold 1 - 2^-7 (8-bit digits) and just below, and maxima near 2^1024 over
    values down to 2^-1000."""
    length = ROW_VALUES // 2 if is_complex else ROW_VALUES
    dtype = np.complex128 if is_complex else np.float64
    units = np.array([1, -1, 1j, -1j] if is_complex else [1, -1])

    def parts(real, imaginary):
        return real + 1j * imaginary if is_complex else real

    same = np.full((SAME_ROWS, length), parts(0.75, -0.75), dtype)
    same[1::3] *= -1.0
    powers = np.ldexp(1.0, -rng.integers(0, 24, (64, length))) * rng.choice(units, (64, length))
    powers[:, 0] = 1.0
    tiny = parts(rng.integers(1, 2**52, (32, length)) * 5e-324, rng.integers(0, 2**20, (32, length)) * 5e-324)
    tiny[:8, 0] = 2.0**-1022
    tiny[8:16, 0] = np.nextafter(2.0**-1022, 0.0)
    tiny[16:24] = parts(rng.integers(1, 2**20, (8, length)) * 5e-324, 0.0)  # e < -1023
    lone = np.zeros((16, length), dtype)
    lone[np.arange(16), rng.integers(0, length, 16)] = rng.standard_normal(16)
    threshold = parts(rng.standard_normal((16, length)) * 2.0**-8, 0.0)
    threshold[:8, 0] = 1.0 - 2.0**-7
    threshold[8:, 0] = np.nextafter(1.0 - 2.0**-7, 0.0)
    huge = parts(rng.standard_normal((16, length)) * 1e307, np.ldexp(1.0, -rng.integers(0, 2000, (16, length))))
    huge[:, 0] = np.finfo(np.float64).max
    mixed = np.concatenate([powers, tiny, lone, np.zeros((16, length), dtype), threshold, huge]).astype(dtype)
    return np.concatenate([same, mixed[rng.permutation(len(mixed))]])


def edge_operands(rng, is_complex: bool):
    """A (m, k) with edge rows as rows and B (k, n) with edge rows as columns (row-major)."""
    return edge_rows(rng, is_complex), np.ascontiguousarray(edge_rows(rng, is_complex).T)


def assert_reaches_the_limits(summary):
    """The summary's counts include both sides of every window border and full window fields."""
    alphas, deviations = summary.alphas, summary.deviations
    assert alphas[ALPHA_WINDOW.stop - 1] > 0 and alphas[ALPHA_WINDOW.stop] > 0
    assert deviations[DEVIATION_WINDOW.start - 1] > 0 and deviations[DEVIATION_WINDOW.start] > 0
    assert deviations[DEVIATION_WINDOW.stop - 1] > 0 and deviations[DEVIATION_WINDOW.stop] > 0
    assert alphas[1] >= SAME_ROWS * ROW_VALUES >= 2 * 32 * FIELD_FILL  # each lane: more than 2 full fields


@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("lanes_across_rows", [0, 1])
def test_host_kernel_counts_windows_at_their_limits(host_kernel, is_complex, lanes_across_rows, rng):
    a, b = edge_operands(rng, is_complex)
    expected = cpu_scan(a, b)
    assert_reaches_the_limits(expected[2])
    assert_reaches_the_limits(expected[3])
    assert_same_scan(host_scan(host_kernel, a, b, lanes_across_rows), expected)


@pytest.mark.parametrize("lanes_across_rows", [0, 1])
def test_host_kernel_norms_of_subnormal_and_huge_rows(host_kernel, lanes_across_rows, rng):
    """Operands of only such rows, so that their norms are the summaries' norms: rows of
    subnormals (e < -1023 for some: x / 2^e in two steps) and maxima near 2^1024 (e = 1026)."""
    rows = edge_rows(rng, True)
    tiny = (np.abs(rows).max(axis=1) < 2.0**-1021) & (np.abs(rows).max(axis=1) > 0.0)
    huge = np.abs(rows).max(axis=1) > 2.0**1000
    a, b = rows[tiny], np.ascontiguousarray(rows[huge].T)
    expected = cpu_scan(a, b)
    assert expected[0].min() < -1023 and expected[1].min() == 1026
    assert_same_scan(host_scan(host_kernel, a, b, lanes_across_rows), expected)


def test_scan_refuses_element_widths_other_than_1_and_2():
    with pytest.raises(BackendError, match="width 1.*width 2.*not width 3"):
        span_scan.scan_gpu(np.zeros((2, 9)), np.zeros((3, 4)), 3, 8)


# -- on the GPU ------------------------------------------------------------------------------------
@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("is_complex", [False, True])
def test_gpu_scan_counts_windows_at_their_limits(is_complex, rng):
    """B row-major (lanes across its columns) and column-major (lanes along them)."""
    a, b = edge_operands(rng, is_complex)
    expected = cpu_scan(a, b)
    assert_reaches_the_limits(expected[3])
    assert_same_scan(gpu_scan(a, b), expected)
    assert_same_scan(gpu_scan(a, np.asfortranarray(b)), expected)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("is_complex", [False, True])
def test_gpu_scan_of_large_operands_of_one_magnitude(is_complex, rng):
    """Parts +-0.75 everywhere: alpha 1 and deviation 0 for every value, so every lane of the
    full grid fills one field of each window to its limit between flushes, many times over."""
    m, k, n = 1024, 4096, 1024

    def one_magnitude(shape):
        signs = rng.integers(0, 2, (2,) + shape) * 2 - 1
        parts = 0.75 * signs
        return parts[0] + 1j * parts[1] if is_complex else parts[0]

    a, b = one_magnitude((m, k)), one_magnitude((k, n))
    expected = cpu_scan(a, b)
    values = (2 if is_complex else 1) * k
    assert expected[2].alphas[1] == m * values and expected[3].deviations[SPAN_OFFSET] == n * values
    assert_same_scan(gpu_scan(a, b), expected)
    assert_same_scan(gpu_scan(a, np.asfortranarray(b)), expected)
