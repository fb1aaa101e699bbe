"""Multiword FP16 complex GEMM on FP16 tensor cores: "fp16x2" (two fp16 words, blocked summation)
and the one-word baseline "fp16". Design brief section 5; Fasi, Higham, Lopez, Mary and
Mikaitis, "Matrix multiplication in multiword arithmetic" (2022).

How C = A B is formed, for A (m, k) and B (k, n), real or complex:
1. A complex matrix is taken as a real one whose rows interleave real and imaginary parts (a
   free view of complex128); B enters through the matching real embedding, so one real GEMM of
   inner size w = 2k gives the real and imaginary parts of C interleaved (a free view back).
2. Every row of A and every column of B is scaled by a power of two that puts its largest entry
   in [2^14, 2^15): inside fp16's range (65504), with 29 normal fp16 binades below it. Powers of
   two scale exactly, so entries spanning 1e-30..1e30 in one matrix lose accuracy only relative
   to the maximum of their own row or column, and nothing overflows.
3. X = Xh + 2^-11 Xl with Xh = fp16(X), Xl = fp16((X - Xh) 2^11): the residual is scaled up so
   that it does not underflow. C = Ah Bh + 2^-11 (Ah Bl + Al Bh); Al Bl (about 2^-22 of C) is dropped.
4. Ah Bh runs on the tensor cores (fp16 inputs, FP32 accumulation) in blocks of `block` inner
   (complex) indices, each block product a separate output; the block results are added outside
   the tensor cores in FP32 round-to-nearest or FP64. Tensor cores accumulate with truncation,
   so on data of one sign their errors add up along long inner sizes (the Fasi et al. finding);
   blocking bounds the truncated run. The cross term Ah Bl + Al Bh enters with weight 2^-11, so
   its truncation errors are 2^-11 smaller too: it runs unblocked, as one GEMM.
5. One pass adds the blocks and the weighted cross term, undoes the scaling in float64 (the
   scaled-back product may exceed float32's range) and writes complex128.

GPU: a kernel scales and splits (kernels/multiword.cu), one strided-batched cublasGemmEx takes
all blocks of Ah Bh without copying (leading dimension = row width, batch stride = block), one
GemmEx the cross term, a kernel combines. CPU: the same words, products and sums through numpy
float32 matmul. fp16 values and their products are exact in float32, but numpy's float32 matmul
rounds to nearest where tensor cores truncate, so the CPU path cannot show the truncation effect
that blocking corrects; its errors are those of FP32 round-to-nearest summation. The GPU tests
check the effect.
"""
import functools
from pathlib import Path

import numpy as np

from .arrays import array_module, cupy_module, is_gpu_array, multiprocessor_count
from .base import DEFAULT_WORKSPACE_BYTES, GemmBackend, check_matmul_operands
from .errors import BackendError
from .multiword_gate import FusedGates
from .multiword_words import (ACCUMULATE_DTYPES, AUTO_BLOCK, LOW_SHIFT, LOW_WEIGHT, WORD_EXPONENT,
                              BWords, InnerLayout, default_block, inner_layout, real_rows, split_b, split_rows)

THREADS = 256
_KERNEL_SOURCE = Path(__file__).with_name("kernels") / "multiword.cu"
_NONFINITE_BITS = {"a": 1, "b": 2}


class CpuWordProducts:
    """The word products and their combination with numpy (float32 matmul: see the module notes)."""

    split = staticmethod(split_rows)

    @staticmethod
    def products(words_a, b_words: BWords, layout: InnerLayout):
        """(partials (n_blocks, rows, parts * n) float32, cross (rows, parts * n) float32 or None)."""
        a32 = words_a.astype(np.float32)
        rows = a32.shape[0]
        n_blocks, block_width = layout.n_blocks, layout.block_width
        a_blocks = a32[:, :layout.hh_width].reshape(rows, n_blocks, block_width).transpose(1, 0, 2)
        b_blocks = b_words.hh_rows.astype(np.float32).reshape(-1, n_blocks, block_width).transpose(1, 2, 0)
        partials = np.matmul(a_blocks, np.ascontiguousarray(b_blocks))
        cross = None if b_words.cross_rows is None else a32 @ b_words.cross_rows.astype(np.float32).T
        return partials, cross

    @staticmethod
    def combine(partials, cross, row_shift, col_shift, parts: int, accumulate: str, out) -> None:
        """out (rows, n) complex128 = 2^-(row_shift + col_shift) (sum of partials + 2^-11 cross)."""
        acc_dtype = ACCUMULATE_DTYPES[accumulate]
        acc = partials.sum(axis=0, dtype=acc_dtype)
        if cross is not None:
            acc += cross.astype(acc_dtype) * acc_dtype(LOW_WEIGHT)
        exponent = -(row_shift[:, None] + np.repeat(col_shift, parts)[None, :])
        values = np.ldexp(acc.astype(np.float64), exponent)
        out[...] = values.view(np.complex128) if parts == 2 else values

    def check(self) -> None:
        """Non-finite input is reported by split_rows as it is found."""


class GpuWordProducts:
    """The same steps on the GPU: split and combine kernels, tensor-core GEMMs through cuBLAS.

    The split kernel flags NaN/Inf instead of stopping; `check` reads the flag once at the end.
    """

    def __init__(self):
        self.nonfinite = cupy_module().zeros(1, dtype=np.int32)

    def split(self, x, n_words: int, what: str):
        cp = cupy_module()
        rows, width = x.shape
        shift = cp.empty(rows, dtype=cp.int32)
        words = cp.empty((rows, n_words * width), dtype=cp.float16)
        blocks = max(1, min(-(-rows // (THREADS // 32)), _max_blocks()))
        _kernels().get_function(f"split_rows<{n_words}>")(
            (blocks,), (THREADS,),
            (x, np.int64(rows), np.int32(width), np.int32(WORD_EXPONENT), np.int32(LOW_SHIFT), shift, words,
             self.nonfinite, np.int32(_NONFINITE_BITS[what])))
        return shift, words

    @staticmethod
    def products(words_a, b_words: BWords, layout: InnerLayout):
        from .cublas_ex import gemm_tn, gemm_tn_blocks

        partials = gemm_tn_blocks(words_a, b_words.hh_rows, layout.block_width, layout.n_blocks)
        cross = None if b_words.cross_rows is None else gemm_tn(words_a, b_words.cross_rows)
        return partials, cross

    @staticmethod
    def combine(partials, cross, row_shift, col_shift, parts: int, accumulate: str, out) -> None:
        n_blocks, rows, real_cols = partials.shape
        acc_type = "float" if accumulate == "fp32" else "double"
        name = f"combine_words<{acc_type}, {parts}, {'false' if cross is None else 'true'}>"
        total = rows * (real_cols // parts)
        blocks = max(1, min(-(-total // THREADS), _max_blocks()))
        # Without a cross term the kernel never reads its pointer; partials stands in for it.
        _kernels().get_function(name)(
            (blocks,), (THREADS,),
            (partials, np.int32(n_blocks), np.int64(rows * real_cols), partials if cross is None else cross,
             ACCUMULATE_DTYPES[accumulate](LOW_WEIGHT), row_shift, col_shift, out, np.int64(rows),
             np.int32(real_cols // parts)))

    def check(self) -> None:
        flags = int(self.nonfinite.get()[0])
        for what, bit in _NONFINITE_BITS.items():
            if flags & bit:
                raise BackendError(f"{what} contains NaN or Inf; emulated GEMM needs finite input")


def _kernel_names() -> list:
    names = [f"split_rows<{words}>" for words in (1, 2)]
    for acc in ("float", "double"):
        for parts in (1, 2):
            names += [f"combine_words<{acc}, {parts}, {cross}>" for cross in ("false", "true")]
    return names


@functools.lru_cache(maxsize=None)
def _kernels():
    cp = cupy_module()
    return cp.RawModule(code=_KERNEL_SOURCE.read_text(), options=("--std=c++17",), name_expressions=_kernel_names())


def _max_blocks() -> int:
    """Grid size cap for the grid-stride kernels: enough resident blocks to fill every SM."""
    return multiprocessor_count() * 32


def matmul_operands(a, b):
    """(a, b, parts): validated operands as C-contiguous float64 (parts 1) or, when either is
    complex, complex128 (parts 2), on their common device."""
    xp, a, b = check_matmul_operands(a, b)
    dtype, parts = (xp.complex128, 2) if "c" in (a.dtype.kind, b.dtype.kind) else (xp.float64, 1)
    return xp.ascontiguousarray(a, dtype=dtype), xp.ascontiguousarray(b, dtype=dtype), parts

def _require_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise BackendError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


class Fp16WordsBackend(GemmBackend):
    """Shared driver of the fp16 word backends: operands, row chunks, words, products, combination.

    Subclasses set n_words (1 or 2) and the block / accumulate options.
    """

    n_words = 2

    def __init__(self, block, accumulate: str, workspace_bytes: int):
        super().__init__(_require_int(workspace_bytes, "workspace_bytes", 1))
        if block != AUTO_BLOCK:
            block = _require_int(block, "block (inner indices per tensor-core block, 0 = unblocked, or 'auto')", 0)
        self.block = block
        if not isinstance(accumulate, str) or accumulate not in ACCUMULATE_DTYPES:
            raise BackendError(f"accumulate must be one of {', '.join(ACCUMULATE_DTYPES)}, got {accumulate!r}")
        self.accumulate = accumulate
        # Set only during apply_batched: B's words shared by its chunks, and the device of its state.
        self._shared_b_words = None
        self._batched_on_gpu = False

    def apply_batched(self, u, x, out):
        """The inherited chunked product, with u split into words once for all chunks and
        the chunks sized for the device of x."""
        self._shared_b_words, self._batched_on_gpu = {}, is_gpu_array(x)
        try:
            super().apply_batched(u, x, out)
        finally:
            self._shared_b_words, self._batched_on_gpu = None, False

    def matmul(self, a, b):
        """C = A @ B. a: (m, k), b: (k, n), real or complex, both numpy or both cupy; returns
        (m, n) complex128 on their device."""
        b_key = id(b)
        a, b, parts = matmul_operands(a, b)
        xp = array_module(a)
        (m, k), n = a.shape, b.shape[1]
        self._count(m, k, n)
        if min(m, k, n) == 0:
            self.last_call_info = {}
            return xp.zeros((m, n), dtype=xp.complex128)
        out = xp.empty((m, n), dtype=xp.complex128)
        layout = inner_layout(k, parts, self._block_for(k))
        on_gpu = is_gpu_array(a)
        path = GpuWordProducts() if on_gpu else CpuWordProducts()
        b_words = self._b_words((b_key, layout), b, layout, path)
        rows_per_chunk = max(1, self.workspace_bytes // self._bytes_per_row(layout, n, on_gpu))
        for start in range(0, m, rows_per_chunk):
            rows = slice(start, min(m, start + rows_per_chunk))
            self._product_rows(path, a[rows], b_words, layout, out[rows])
        path.check()
        self.last_call_info = self._call_info(layout, -(-m // rows_per_chunk))
        return out

    def _b_words(self, key, b, layout: InnerLayout, path) -> BWords:
        """B's words; within apply_batched, every chunk multiplies by the same u.T object, so they
        are made once per call (the cache lives only as long as the call)."""
        if self._shared_b_words is None:
            return split_b(b, layout, self.n_words, path.split)
        if key not in self._shared_b_words:
            self._shared_b_words[key] = split_b(b, layout, self.n_words, path.split)
        return self._shared_b_words[key]

    def _product_rows(self, path, a_rows, b_words: BWords, layout: InnerLayout, out_rows) -> None:
        """out_rows = a_rows @ B for one chunk; its temporaries are freed on return, so chunks
        never hold two sets of them."""
        row_shift, words_a = path.split(real_rows(a_rows), self.n_words, "a")
        partials, cross = path.products(words_a, b_words, layout)
        path.combine(partials, cross, row_shift, b_words.col_shift, layout.parts, self.accumulate, out_rows)

    def _call_info(self, layout: InnerLayout, chunks: int) -> dict:
        return {"chunks": chunks}

    def _bytes_per_row(self, layout: InnerLayout, n: int, on_gpu: bool) -> int:
        """Working memory per row of A. GPU: the fp16 words, the float32 block products and cross
        term. CPU, in addition: the words once more while they are joined, their float32 copy,
        three float64 temporaries of the split and the float64 combination."""
        words = self.n_words * layout.width
        real_cols = layout.parts * n
        products = 4 * real_cols * (layout.n_blocks + self.n_words - 1)
        if on_gpu:
            return 2 * words + products
        return 8 * words + 24 * layout.width + products + 16 * real_cols

    def workspace_bytes_per_row(self, k: int, n: int) -> int:
        """For the inherited apply_batched: the bound of its device (the CPU's, the larger, outside it)."""
        return self._bytes_per_row(inner_layout(k, 2, self._block_for(k)), n, self._batched_on_gpu)

    def _block_for(self, k: int) -> int:
        return default_block(k) if self.block == AUTO_BLOCK else self.block


class MultiwordFp16Backend(Fp16WordsBackend):
    """Double-fp16 ("fp16x2"): complex64-class accuracy from FP16 tensor cores.

    Options:
        block: inner indices per tensor-core block; 0 = unblocked (one run over all of k);
            "auto" (default) = default_block(k): 256, or k // 2 for short k. Smaller blocks cost more memory traffic (one float32 output per block) and
            bound the truncation error of the tensor cores.
        accumulate: "fp32" (round-to-nearest) or "fp64": precision of the sum of the blocks.
        workspace_bytes: working memory per call; A is processed in row chunks within it.
        fused: gates of up to 6 qubits on the GPU in one kernel (multiword_gate.py; default True).
    """

    name = "fp16x2"
    description = "double-fp16 words on FP16 tensor cores, blocked FP32/FP64 summation"
    OPTIONS = ("block", "accumulate", "workspace_bytes", "fused")

    def __init__(self, block=AUTO_BLOCK, accumulate: str = "fp32",
                 workspace_bytes: int = DEFAULT_WORKSPACE_BYTES, fused: bool = True):
        super().__init__(block, accumulate, workspace_bytes)
        self.fused_gates = FusedGates(self, fused)
        self.options = {"block": self.block, "accumulate": self.accumulate, "workspace_bytes": self.workspace_bytes,
                        "fused": fused}

    def _call_info(self, layout: InnerLayout, chunks: int) -> dict:
        return {"block": layout.block, "blocks": layout.n_blocks, "accumulate": self.accumulate, "chunks": chunks}

    # -- gates: the fused kernel (multiword_gate.py) on the GPU up to K = 64, else the GEMM path
    def apply_batched(self, u, x, out):
        if not self.fused_gates.apply_view(u, x, out):
            super().apply_batched(u, x, out)
            self.last_call_info["kernel"] = "gemm"

    def works_in_place(self, k: int, on_gpu: bool = True) -> bool:
        return self.fused_gates.takes(k, on_gpu)

    def takes_scattered(self, k: int, on_gpu: bool) -> bool:
        return self.fused_gates.takes(k, on_gpu)

    def apply_scattered(self, u, state, targets) -> bool:
        return self.fused_gates.apply_scattered(u, state, targets)

    def prepare(self, u) -> None:
        self.fused_gates.prepare(u)

    def release(self, u) -> None:
        self.fused_gates.release(u)

    def start_run(self) -> None:
        self.fused_gates.start_run()

    def finish_run(self) -> None:
        self.fused_gates.finish_run()


class SingleFp16Backend(Fp16WordsBackend):
    """One fp16 word per entry ("fp16"), same scaling, FP32 accumulation: the baseline that shows
    what the second word buys (about 2^-11 relative error instead of 2^-22)."""

    name = "fp16"
    description = "one fp16 word, FP32 accumulation (baseline)"
    OPTIONS = ("workspace_bytes",)
    n_words = 1

    def __init__(self, workspace_bytes: int = DEFAULT_WORKSPACE_BYTES):
        super().__init__(0, "fp32", workspace_bytes)
        self.options = {"workspace_bytes": self.workspace_bytes}
