// Column statistics shared by the fused INT8 gate kernel (ozaki_gate.cu) and the rho rule's
// state histogram (state_histogram.cu): a reduction over the four lanes that hold one column, and
// the row exponent of ozaki/split.py from a row's or column's largest |value| (also for the row
// kernels of ozaki_split.cu and int8-auto's scan, span_scan.cu).
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

// The row exponent of ozaki/split.py for digits of `bits` bits and a row maximum m >= 0: with
// m = f 2^E (frexp), E + 1 while f < 1 - 2^(1 - bits), else E + 2; 0 for m = 0.
__device__ __forceinline__ int row_exponent_of_max(double max_abs, int bits)
{
    int e;
    const double fraction = frexp(max_abs, &e);
    return max_abs > 0.0 ? e + (fraction >= 1.0 - ldexp(1.0, 1 - bits) ? 2 : 1) : 0;
}

// row_exponent_of_max for the fused kernel's 8-bit digits.
__device__ __forceinline__ int exponent_of_max(double max_abs) { return row_exponent_of_max(max_abs, 8); }
