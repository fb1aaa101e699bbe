"""The words of the multiword FP16 scheme (multiword.py's steps 1-3): every row scaled by a power
of two into fp16's range and split into a high and a scaled low fp16 word, B through its real
embedding, and the layout of the inner dimension into tensor-core blocks. Shared by the GEMM
path (multiword.py) and the fused gate kernel's launcher (multiword_gate.py)."""
from dataclasses import dataclass

import numpy as np

from .arrays import array_module
from .errors import BackendError

WORD_EXPONENT = 15  # scaled row/column maxima lie in [2^14, 2^15)
LOW_SHIFT = 11  # Xl carries the residual X - Xh times 2^11
LOW_WEIGHT = 2.0**-LOW_SHIFT
ACCUMULATE_DTYPES = {"fp32": np.float32, "fp64": np.float64}
# Inner (complex) indices per tensor-core block when none is given ("auto"): DEFAULT_BLOCK, but
# at least two blocks along k. Measured on the H100 (BENCHMARKS.md, bench_fp16_blocks.py):
# block 256 kept fp16x2 within 1.41x of CGEMM's error for k = 1024..8192 at 1.8-2.3x its speed,
# block 128 cost up to a third of that speed, and leaving k = 256 unblocked gave 2.4x CGEMM's
# error on uniform(0, 1] data where block 128 gave 1.0x.
AUTO_BLOCK = "auto"
DEFAULT_BLOCK = 256
MIN_AUTO_BLOCK = 16


def default_block(k: int) -> int:
    """The block "auto" uses for inner size k: min(DEFAULT_BLOCK, k // 2), at least 16."""
    return min(DEFAULT_BLOCK, max(MIN_AUTO_BLOCK, k // 2))


@dataclass(frozen=True)
class InnerLayout:
    """How the real inner dimension of the word products is cut into tensor-core blocks.

    width: real inner size w (k, or 2k when the operands are complex).
    parts: 1 for real operands, 2 for complex (real and imaginary parts interleaved).
    block_width: real inner terms per tensor-core block (parts * inner indices per block).
    n_blocks: blocks of Ah Bh. n_blocks * block_width may exceed width by less than a block;
        the excess columns of A's words meet zero rows of B's.
    """

    width: int
    parts: int
    block_width: int
    n_blocks: int

    @property
    def hh_width(self) -> int:
        return self.block_width * self.n_blocks

    @property
    def block(self) -> int:
        """Inner (complex) indices per block."""
        return self.block_width // self.parts


def inner_layout(k: int, parts: int, block: int) -> InnerLayout:
    """The layout for inner size k >= 1 and a block of `block` indices (0 = unblocked)."""
    block_k = k if block == 0 else min(block, k)
    n_blocks = -(-k // block_k)
    return InnerLayout(parts * k, parts, parts * block_k, n_blocks)


@dataclass(frozen=True)
class BWords:
    """B as the rows of its real embedding, split into fp16 words.

    col_shift: (n,) int32, column j of B was scaled by 2^col_shift[j].
    hh_rows: (parts * n, hh_width) float16, high words, zero beyond the layout's width.
    cross_rows: (parts * n, 2 * width) float16, [low | high] words against A's [high | low],
        or None for one word.
    """

    col_shift: object
    hh_rows: object
    cross_rows: object


def split_rows(x, n_words: int, what: str):
    """Scale every row of x by a power of two into fp16's range and split it into fp16 words.

    x: (rows, width) float64, numpy or cupy. Returns (shift, words): shift (rows,) int32 with
    row r scaled by 2^shift[r]; words (rows, n_words * width) float16, [high | low] for two words.
    Raises BackendError naming operand `what` when x holds NaN or Inf.
    """
    xp = array_module(x)
    row_max = xp.abs(x).max(axis=1)
    if not bool(xp.isfinite(row_max).all()):
        raise BackendError(f"{what} contains NaN or Inf; emulated GEMM needs finite input")
    _, exponent = xp.frexp(row_max)
    shift = (WORD_EXPONENT - exponent).astype(xp.int32)
    scaled = xp.ldexp(x, shift[:, None])
    high = scaled.astype(xp.float16)
    if n_words == 1:
        return shift, high
    low = xp.ldexp(scaled - high, LOW_SHIFT).astype(xp.float16)
    return shift, xp.concatenate([high, low], axis=1)


def real_rows(x):
    """A C-contiguous float64 or complex128 (rows, k) array as float64 (rows, parts * k), no copy."""
    xp = array_module(x)
    return x.view(xp.float64) if x.dtype == xp.complex128 else x


def embed_rows(words, parts: int):
    """Rows of B^T's words (n, w) -> rows of the real embedding (parts * n, w).

    For complex B, output column (j, re) takes (Br, -Bi) and (j, im) takes (Bi, Br) against A's
    interleaved (re, im) inner pairs. Negating an fp16 word is exact.
    """
    if parts == 1:
        return words
    xp = array_module(words)
    n, width = words.shape
    pairs = words.reshape(n, width // 2, 2)
    rows = xp.empty((n, 2, width // 2, 2), dtype=words.dtype)
    rows[:, 0, :, 0], rows[:, 0, :, 1] = pairs[..., 0], -pairs[..., 1]
    rows[:, 1, :, 0], rows[:, 1, :, 1] = pairs[..., 1], pairs[..., 0]
    return rows.reshape(2 * n, width)


def split_b(b, layout: InnerLayout, n_words: int, split) -> BWords:
    """B (k, n) float64/complex128 split column by column. split: split_rows or the GPU kernel."""
    xp = array_module(b)
    col_shift, words = split(real_rows(xp.ascontiguousarray(b.T)), n_words, "b")
    width = layout.width
    high = embed_rows(words[:, :width], layout.parts)
    hh_rows = xp.zeros((high.shape[0], layout.hh_width), dtype=xp.float16)
    hh_rows[:, :width] = high
    cross_rows = None
    if n_words == 2:
        cross_rows = xp.concatenate([embed_rows(words[:, width:], layout.parts), high], axis=1)
    return BWords(col_shift, hh_rows, cross_rows)
