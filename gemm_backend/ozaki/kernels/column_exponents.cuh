// Column statistics shared by the fused INT8 gate kernel (ozaki_gate.cu) and the rho rule's
// state histogram (state_histogram.cu): a reduction over the four lanes that hold one column, and
// the row exponent of ozaki/split.py (8-bit digits) from the column's largest |value|.
#pragma once

// op over the four lanes of a quad (one column's lanes), the result in each of them.
template <class T, class Op> __device__ __forceinline__ T quad_reduce(T value, Op op)
{
    value = op(value, __shfl_xor_sync(0xffffffffu, value, 1));
    return op(value, __shfl_xor_sync(0xffffffffu, value, 2));
}

// The row exponent of ozaki/split.py from the high word (sign cleared) of the column maximum:
// frexp exponent E = biased - 1022, plus 1, plus 1 more when the fraction is >= 127/128, i.e.
// the top 6 mantissa bits are ones. A subnormal or zero maximum is handled by the caller.
__device__ __forceinline__ int exponent_from_high_word(unsigned high)
{
    const int biased = (int)(high >> 20);
    return biased - 1022 + ((high & 0xFC000u) == 0xFC000u ? 2 : 1);
}
__device__ __forceinline__ int exponent_of_max(double max_abs)
{
    int e;
    const double fraction = frexp(max_abs, &e);
    return max_abs > 0.0 ? e + (fraction >= 127.0 / 128.0 ? 2 : 1) : 0;
}
