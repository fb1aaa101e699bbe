"""The multiword FP16 backends: fp16x2 (double-fp16, blocked summation) and the one-word fp16.

Reference: gemm_backend.doubledouble.matmul_dd, whose hi part is the float64 nearest the exact
product; it is computed by exact integer-slice products, nothing like the fp16 words here, and
its 1e-32 accuracy is far below the fp32-class errors measured. The errors are normwise:
max |C - ref| / max |ref|.
"""
import functools

import numpy as np
import pytest

import gemm_backend
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from gemm_backend.doubledouble import matmul_dd
from gemm_backend.multiword_words import DEFAULT_BLOCK, LOW_SHIFT, WORD_EXPONENT, inner_layout, split_rows
from .helpers import draw, normwise_error

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")

KINDS = ("real", "complex")
DISTRIBUTIONS = ("normal", "uniform")
INNER_SIZES = (64, 512, 4096)
ROWS, COLS = 24, 20


@functools.lru_cache(maxsize=None)
def case(kind: str, dist: str, k: int, rows: int = ROWS, cols: int = COLS):
    """(a, b, reference, error of the complex64 product) for one seeded problem."""
    rng = np.random.default_rng([k, rows, cols, KINDS.index(kind), DISTRIBUTIONS.index(dist)])
    a, b = draw(rng, (rows, k), dist, kind), draw(rng, (k, cols), dist, kind)
    reference = matmul_dd(a, b)[0]
    single = (a.astype(np.complex64) @ b.astype(np.complex64)).astype(np.complex128)
    return a, b, reference, normwise_error(single, reference)


def wide_range(rng, shape, kind: str):
    """Entries of magnitude 10^u, u uniform in [-30, 30], random signs (and phases)."""
    x = rng.standard_normal(shape) * 10.0 ** rng.uniform(-30, 30, shape)
    if kind == "complex":
        x = x + 1j * rng.standard_normal(shape) * 10.0 ** rng.uniform(-30, 30, shape)
    return x


# -- accuracy -----------------------------------------------------------------------------
@pytest.mark.parametrize("k", INNER_SIZES)
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_fp16x2_within_4x_of_complex64(kind, dist, k):
    a, b, reference, single_error = case(kind, dist, k)
    c = gemm_backend.get("fp16x2").matmul(a, b)
    assert c.dtype == np.complex128 and c.shape == reference.shape
    if kind == "real":
        assert not np.any(c.imag)
    assert normwise_error(c, reference) <= 4 * single_error


@pytest.mark.parametrize("k", INNER_SIZES)
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_one_word_is_much_less_accurate(kind, dist, k):
    """One fp16 word: about 2^-12 relative error per entry, at least 100x fp16x2's.

    Exception: uniform(0, 1] data at k >= 512. Its one-word rounding errors have random signs and
    average out against the all-positive sum (error ~ 2^-12 / sqrt(k)), while fp16x2 sits at the
    FP32 accumulation floor, so the ratio falls to 30-70 there; it is held to 20x.
    """
    a, b, reference, _ = case(kind, dist, k)
    one_word = normwise_error(gemm_backend.get("fp16").matmul(a, b), reference)
    two_words = normwise_error(gemm_backend.get("fp16x2").matmul(a, b), reference)
    assert one_word <= 2.0**-9
    assert one_word >= (20 if dist == "uniform" and k >= 512 else 100) * two_words


@pytest.mark.parametrize("k", [64, 512])
@pytest.mark.parametrize("kind", KINDS)
def test_entries_from_1e_minus_30_to_1e30(kind, k, rng):
    """No Inf/NaN, and every entry accurate relative to its row maximum of A times its column
    maximum of B (rows entirely near 1e-30 or 1e30, a zero row and a zero column included)."""
    a, b = wide_range(rng, (ROWS, k), kind), wide_range(rng, (k, COLS), kind)
    a[3], a[4], a[5] = 1e-30 * rng.standard_normal(k), 1e30 * rng.standard_normal(k), 0.0
    b[:, 6], b[:, 7] = 1e-30 * rng.standard_normal(k), 0.0
    reference = matmul_dd(a, b)[0]
    scale = np.abs(a).max(axis=1)[:, None] * np.abs(b).max(axis=0)[None, :]
    for name in ("fp16x2", "fp16"):
        c = gemm_backend.get(name).matmul(a, b)
        assert np.isfinite(c).all()
        assert not np.any(c[5]) and not np.any(c[:, 7])
        relative = np.abs(c - reference)[scale > 0] / scale[scale > 0]
        assert relative.max() <= (2.0**-19 if name == "fp16x2" else 2.0**-9)


@pytest.mark.parametrize("accumulate", ["fp32", "fp64"])
@pytest.mark.parametrize("k, block", [(512, 0), (512, 16), (512, 512), (512, 48), (4096, 16), (4096, 4096),
                                      (4096, 48), (100, 16)])
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_block_sizes_give_correct_results(dist, k, block, accumulate):
    """Unblocked, small, whole-k and non-divisor blocks: all at complex64-class accuracy (one fp16
    word would be 30x or more off), and the layout covers k exactly once."""
    a, b, reference, single_error = case("complex", dist, k)
    backend = gemm_backend.get("fp16x2", block=block, accumulate=accumulate)
    c = backend.matmul(a, b)
    assert normwise_error(c, reference) <= 6 * single_error
    expected_blocks = 1 if block in (0, k) else -(-k // block)
    assert backend.last_call_info["blocks"] == expected_blocks
    assert backend.last_call_info["block"] == (k if block == 0 else block)


def test_block_of_k_or_more_is_unblocked():
    a, b, _, _ = case("complex", "uniform", 512)
    unblocked = gemm_backend.get("fp16x2", block=0).matmul(a, b)
    for block in (512, 513, 10**6):
        assert np.array_equal(gemm_backend.get("fp16x2", block=block).matmul(a, b), unblocked)


def test_fp64_block_sums_beat_fp32_for_many_blocks():
    """256 blocks of 16 summed in FP64 leave only the in-block errors; in FP32 the block sum
    adds its own rounding errors."""
    a, b, reference, _ = case("real", "uniform", 4096)
    fp32, fp64 = (normwise_error(gemm_backend.get("fp16x2", block=16, accumulate=acc).matmul(a, b), reference)
                  for acc in ("fp32", "fp64"))
    assert fp64 < fp32 / 4


def test_inner_layout():
    layout = inner_layout(100, 2, 16)
    assert (layout.width, layout.block_width, layout.n_blocks, layout.hh_width) == (200, 32, 7, 224)
    assert inner_layout(100, 1, 0).n_blocks == 1 and inner_layout(100, 1, 0).block == 100
    assert inner_layout(100, 1, 1000).block == 100


# -- the words ----------------------------------------------------------------------------
@pytest.mark.parametrize("n_words", [1, 2])
def test_split_rows_scales_into_fp16_range_and_reconstructs(n_words, rng):
    x = wide_range(rng, (16, 40), "real")
    x[2], x[3] = 0.0, 2.0**70  # a zero row; a row whose maximum is an exact power of two
    shift, words = split_rows(x, n_words, "x")
    assert shift.dtype == np.int32 and words.dtype == np.float16 and words.shape == (16, 40 * n_words)
    assert np.isfinite(words.astype(np.float64)).all()
    high = words[:, :40].astype(np.float64)
    row_max = np.abs(x).max(axis=1)
    scaled_max = np.ldexp(row_max, shift)
    nonzero = row_max > 0
    assert np.all(scaled_max[nonzero] >= 2.0 ** (WORD_EXPONENT - 1))
    assert np.all(scaled_max[nonzero] < 2.0**WORD_EXPONENT)
    scaled = np.ldexp(x, shift[:, None])
    value = high if n_words == 1 else high + np.ldexp(words[:, 40:].astype(np.float64), -LOW_SHIFT)
    relative_to_row = np.abs(value - scaled).max(axis=1)[nonzero] / scaled_max[nonzero]
    assert relative_to_row.max() <= (2.0**-11 if n_words == 1 else 2.0**-22)
    assert not np.any(words[2].astype(np.float64))


def test_split_rows_rejects_nonfinite():
    with pytest.raises(BackendError, match="x contains NaN or Inf"):
        split_rows(np.array([[1.0, np.nan]]), 2, "x")


# -- the GemmBackend contract -------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 16, 5), (8, 32, 1), (1, 64, 8), (4, 8, 3)])
def test_apply_batched_equals_dense_product(shape, rng):
    backend = gemm_backend.get("fp16x2", block=16, workspace_bytes=20_000)  # forces several chunks
    u, x = draw(rng, shape[1:2] * 2, "normal", "complex"), draw(rng, shape, "normal", "complex")
    expected = np.einsum("ij,ljr->lir", u, x)
    out = np.empty_like(x)
    backend.apply_batched(u, x, out)
    assert normwise_error(out, expected) < 2e-6
    backend.apply_batched(u, x, x)  # in place
    assert normwise_error(x, expected) < 2e-6
    assert backend.last_call_info["block"] == min(16, shape[1])


def test_apply_batched_splits_b_once(monkeypatch, rng):
    from gemm_backend import multiword

    calls, original = [], multiword.split_b

    def counting_split_b(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(multiword, "split_b", counting_split_b)
    backend = gemm_backend.get("fp16x2", workspace_bytes=20_000)
    u, x = draw(rng, (16, 16), "normal", "complex"), draw(rng, (40, 16, 1), "normal", "complex")
    backend.apply_batched(u, x, x)
    assert backend.calls > 1 and len(calls) == 1
    backend.matmul(x[:, :, 0], u.T)
    assert len(calls) == 2  # outside apply_batched nothing is shared


def test_row_chunks_cover_every_row():
    """Chunks of 4 rows: same accuracy; the result may differ from the one-chunk product only by
    FP32 rounding, since numpy's BLAS may order the sums differently for fewer rows."""
    a, b, reference, single_error = case("complex", "normal", 512)
    whole = gemm_backend.get("fp16x2").matmul(a, b)
    chunked = gemm_backend.get("fp16x2", workspace_bytes=180_000)
    parts = chunked.matmul(a, b)
    assert chunked.last_call_info["chunks"] == ROWS // 4
    assert normwise_error(parts, reference) <= 4 * single_error
    assert normwise_error(parts, whole) <= 2e-6


def test_registry_options_and_statistics():
    backend = gemm_backend.get("fp16x2")
    assert type(backend).__name__ == "MultiwordFp16Backend"
    assert backend.options == {"block": "auto", "accumulate": "fp32", "workspace_bytes": 1 << 30, "fused": True}
    assert gemm_backend.get("fp16x2", block=32, accumulate="fp64").options["accumulate"] == "fp64"
    single = gemm_backend.get("fp16")
    assert type(single).__name__ == "SingleFp16Backend" and single.options == {"workspace_bytes": 1 << 30}
    a, b, _, _ = case("complex", "normal", 64)
    backend.matmul(a, b)
    assert backend.statistics() == {"calls": 1, "flops": 8.0 * ROWS * 64 * COLS}
    assert backend.last_call_info == {"block": 32, "blocks": 2, "accumulate": "fp32", "chunks": 1}


def test_empty_operands_give_zeros():
    backend = gemm_backend.get("fp16x2")
    assert backend.matmul(np.zeros((0, 4)), np.ones((4, 3))).shape == (0, 3)
    c = backend.matmul(np.ones((2, 0)), np.ones((0, 3)))
    assert c.shape == (2, 3) and not np.any(c)


@pytest.mark.parametrize("name, options, message", [
    ("fp16x2", {"block": -1}, "block"),
    ("fp16x2", {"block": 2.5}, "block"),
    ("fp16x2", {"block": "16"}, "block"),
    ("fp16x2", {"block": True}, "block"),
    ("fp16x2", {"accumulate": "fp16"}, "accumulate must be one of fp32, fp64"),
    ("fp16x2", {"workspace_bytes": 0}, "workspace_bytes"),
    ("fp16x2", {"workspace_bytes": 1.5e9}, "workspace_bytes"),
    ("fp16x2", {"blocks": 16}, "takes no option blocks"),
    ("fp16", {"block": 16}, "takes no option block"),
    ("fp16", {"workspace_bytes": -5}, "workspace_bytes"),
])
def test_bad_options_raise(name, options, message):
    with pytest.raises(BackendError, match=message):
        gemm_backend.get(name, **options)


@pytest.mark.parametrize("a, b, message", [
    (np.ones((3, 4)), np.ones((5, 2)), "a \\(m, k\\) and b \\(k, n\\)"),
    (np.ones(4), np.ones((4, 2)), "a \\(m, k\\) and b \\(k, n\\)"),
    (np.array([[1.0, np.nan]]), np.ones((2, 2)), "a contains NaN or Inf"),
    (np.ones((2, 2)), np.array([[1.0, np.inf], [0, 1]]), "b contains NaN or Inf"),
    (np.array([["x", "y"]]), np.ones((2, 2)), "numeric"),
])
@pytest.mark.parametrize("name", ["fp16x2", "fp16"])
def test_bad_inputs_raise(name, a, b, message):
    with pytest.raises(BackendError, match=message):
        gemm_backend.get(name).matmul(a, b)


# -- GPU ------------------------------------------------------------------------------------
def sampled_error(c, reference, rows, cols) -> float:
    return normwise_error(c[np.ix_(rows, cols)], reference)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("kind", KINDS)
def test_gpu_truncation_effect_and_blocked_fix(kind):
    """uniform(0, 1], k = 4096: unblocked fp16x2 on the tensor cores is less accurate than CGEMM
    (truncating accumulation, Fasi et al.); the default blocked summation is within 2x of CGEMM."""
    import cupy as cp

    m, k, n = 8192, 4096, 512  # enough output tiles that cuBLAS has no reason to split k
    rng = np.random.default_rng(2024)
    a, b = draw(rng, (m, k), "uniform", kind), draw(rng, (k, n), "uniform", kind)
    rows, cols = rng.choice(m, 32, replace=False), rng.choice(n, 128, replace=False)
    reference = matmul_dd(a[rows], b[:, cols])[0]
    a_gpu, b_gpu = cp.asarray(a), cp.asarray(b)
    cgemm = sampled_error(gemm_backend.get("cgemm").matmul(a_gpu, b_gpu).get(), reference, rows, cols)
    unblocked = sampled_error(gemm_backend.get("fp16x2", block=0).matmul(a_gpu, b_gpu).get(), reference, rows, cols)
    blocked = sampled_error(gemm_backend.get("fp16x2").matmul(a_gpu, b_gpu).get(), reference, rows, cols)
    print(f"{kind}: cgemm {cgemm:.2e}, fp16x2 unblocked {unblocked:.2e}, blocked {blocked:.2e}")
    assert unblocked > cgemm
    assert blocked <= 2 * cgemm


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("accumulate", ["fp32", "fp64"])
@pytest.mark.parametrize("k, block", [(512, 0), (512, 48), (512, 256), (1000, 16), (7, 0), (4096, 256)])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["fp16x2", "fp16"])
def test_gpu_matches_cpu(name, kind, k, block, accumulate):
    """Same words and products; the paths differ only in accumulation rounding (truncated on the
    tensor cores, up to 1024 terms unblocked): fp32-class agreement, 30x below the one-word error
    (~3e-4 on normal data). Accuracy against double-double on the GPU: the truncation test."""
    import cupy as cp

    if name == "fp16" and (block or accumulate == "fp64"):
        pytest.skip("fp16 takes no block or accumulate option")
    a, b, _, _ = case(kind, "normal", k, rows=300, cols=40)
    options = {"block": block, "accumulate": accumulate} if name == "fp16x2" else {}
    cpu = gemm_backend.get(name, **options).matmul(a, b)
    backend = gemm_backend.get(name, **options)
    gpu = backend.matmul(cp.asarray(a), cp.asarray(b))
    assert isinstance(gpu, cp.ndarray) and gpu.dtype == cp.complex128
    gpu = gpu.get()
    if kind == "real":
        assert not np.any(gpu.imag)
    assert normwise_error(gpu, cpu) <= 1e-5


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n_words", [1, 2])
def test_gpu_split_kernel_gives_the_cpu_words(n_words, rng):
    import cupy as cp

    from gemm_backend.multiword import GpuWordProducts

    x = wide_range(rng, (300, 70), "real")
    x[5], x[6] = 0.0, 2.0**-1030  # a zero row; a subnormal row
    shift, words = split_rows(x, n_words, "a")
    path = GpuWordProducts()
    gpu_shift, gpu_words = path.split(cp.asarray(x), n_words, "a")
    path.check()
    assert np.array_equal(gpu_shift.get(), shift)
    assert np.array_equal(gpu_words.get().view(np.uint16), words.view(np.uint16))


@pytest.mark.gpu
@requires_gpu
def test_gpu_nonfinite_input_raises():
    import cupy as cp

    a = cp.ones((64, 32), dtype=cp.complex128)
    a[40, 3] = cp.nan
    with pytest.raises(BackendError, match="a contains NaN or Inf"):
        gemm_backend.get("fp16x2").matmul(a, cp.ones((32, 8)))
    with pytest.raises(BackendError, match="b contains NaN or Inf"):
        gemm_backend.get("fp16x2").matmul(cp.ones((4, 32)), cp.full((32, 8), cp.inf))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("shape", [(4096, 256, 1), (64, 128, 64), (2, 1024, 512)])
def test_gpu_apply_batched_equals_dense_product(shape, rng):
    import cupy as cp

    backend = gemm_backend.get("fp16x2", workspace_bytes=8 << 20)
    u, x = draw(rng, shape[1:2] * 2, "normal", "complex"), draw(rng, shape, "normal", "complex")
    expected = u @ x  # u @ x[l] for every l
    x_gpu = cp.asarray(x)
    backend.apply_batched(cp.asarray(u), x_gpu, x_gpu)
    assert normwise_error(x_gpu.get(), expected) < 2e-6


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("dtype, loop", [(np.float16, False), (np.int8, False), (np.int8, True)])
def test_gemm_tn_blocks_matches_numpy(dtype, loop, rng, monkeypatch):
    """Small integers: every block product is exact in both, so they must agree bit for bit
    (INT8 both as one batched call and as a loop of calls)."""
    import cupy as cp

    from gemm_backend import cublas_ex
    from gemm_backend.cublas_ex import gemm_tn_blocks

    monkeypatch.setattr(cublas_ex, "INT8_LOOP_MIN_INNER", 0 if loop else 2**62)

    a = rng.integers(-8, 8, (96, 160)).astype(dtype)
    b_rows = rng.integers(-8, 8, (40, 144)).astype(dtype)
    out = gemm_tn_blocks(cp.asarray(a), cp.asarray(b_rows), 48, 3).get()
    expected = np.stack([a[:, p * 48:(p + 1) * 48].astype(np.int64) @ b_rows[:, p * 48:(p + 1) * 48].T.astype(np.int64)
                         for p in range(3)])
    assert out.shape == (3, 96, 40)
    assert np.array_equal(out.astype(np.int64), expected)
    with pytest.raises(BackendError, match="do not fit"):
        gemm_tn_blocks(cp.asarray(a), cp.asarray(b_rows), 48, 4)


@pytest.mark.parametrize("k, block, blocks", [(32, 16, 2), (256, 128, 2), (1024, DEFAULT_BLOCK, 4), (4096, DEFAULT_BLOCK, 16)])
def test_auto_block_keeps_at_least_two_blocks(k, block, blocks, rng):
    backend = gemm_backend.get("fp16x2")
    a, b = draw(rng, (8, k), "uniform", "complex"), draw(rng, (k, 4), "uniform", "complex")
    backend.matmul(a, b)
    assert (backend.last_call_info["block"], backend.last_call_info["blocks"]) == (block, blocks)
    explicit = gemm_backend.get("fp16x2", block=block).matmul(a, b)
    assert np.array_equal(backend.matmul(a, b), explicit)
