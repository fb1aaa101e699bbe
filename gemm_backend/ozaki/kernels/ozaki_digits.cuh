// The arithmetic both fused INT8 Ozaki-I gate kernels share (ozaki_gate.cu: a column per quad
// of lanes, K <= 64; ozaki_gate_wide.cu: column digits in shared memory, K = 128 .. 512): the
// scaling by exact powers of two, the balanced base-256 digits of a scaled amplitude in mma B
// fragment bytes, the INT8 mma, and the exact int32 chunks of diagonals with their FP64
// accumulation. Each kernel's bits equal the numpy specification (ozaki/split.py, plan.py) because
// both run exactly these steps.
#pragma once

#include "column_exponents.cuh"
#include "mma_s8.cuh"

#define DIGIT_BITS 8
#define BAD_COLUMN (-0x40000000)  // column exponent marking NaN or Inf in the column

template <int K> struct GateShape {
    static constexpr int KT = (2 * K + 31) / 32;  // k-tiles of 32 embedded inputs
    static constexpr int MT = (2 * K + 15) / 16;  // m-tiles of 8 output amplitudes
    static constexpr int SLOTS = 4 * KT;          // amplitude slots per lane (amplitude 4 j + t)
};

// 2^k as a double, for k in -1074..1023 (subnormal powers included).
__device__ __forceinline__ double two_to(int k)
{
    return k >= -1022 ? __longlong_as_double((long long)(k + 1023) << 52) : __longlong_as_double(1LL << (k + 1074));
}
__device__ __forceinline__ bool power_of_two_fits(int k) { return k >= -1074 && k <= 1023; }

// x 2^k, correctly rounded like numpy's ldexp: a multiplication by an exact power of two where
// 2^k is a double (the common case, one instruction), ldexp otherwise (out of line).
__device__ __noinline__ double ldexp_slow(double x, int k) { return ldexp(x, k); }
__device__ __forceinline__ double scale_by(double x, int k)
{
    return power_of_two_fits(k) ? x * two_to(k) : ldexp_slow(x, k);
}

// y = x 2^(8 SX - e) before the digits of a column of exponent e (0 for BAD_COLUMN):
// scale_all(f) applies f to each of the column's values, f one multiplication by an exact power of
// two unless 2^(8 SX - e) is not a double (then scale_by's ldexp), decided once for the column.
template <int SX, class ScaleAll> __device__ __forceinline__ void scale_for_digits(int exponent, ScaleAll scale_all)
{
    const bool bad = exponent == BAD_COLUMN;
    const int shift = bad ? 0 : 8 * SX - exponent;
    if (bad || power_of_two_fits(shift)) {
        const double factor = bad ? 0.0 : two_to(shift);
        scale_all([factor](double x) { return x * factor; });
    } else {
        scale_all([shift](double x) { return ldexp_slow(x, shift); });
    }
}

// Bits of the largest |value| among values[first .. first + count) of the four lanes of a quad
// (a column), in each of them, as column_exponent_of_max_bits reads them: of a normal (or NaN,
// Inf) maximum only the high word, all the rule needs, so that the common case compares 32-bit
// words; all the bits of a zero or subnormal maximum, searched only in warps that hold one (the
// bits of a double >= 0 order like its value). first and count are constants once the caller's
// loops unroll; every lane of the warp calls.
template <int N>
__device__ __forceinline__ unsigned long long quad_max_abs_bits(const double2 (&values)[N], int first, int count)
{
    auto high_word = [](double x) { return (unsigned)__double2hiint(x) & 0x7fffffffu; };
    unsigned high = 0;
#pragma unroll
    for (int j = 0; j < N; ++j)
        if (j >= first && j < first + count) high = max(high, max(high_word(values[j].x), high_word(values[j].y)));
    high = quad_reduce(high, [](unsigned a, unsigned b) { return max(a, b); });
    const bool below_normal = high < 0x00100000u;
    if (!__any_sync(0xffffffffu, below_normal)) return (unsigned long long)high << 32;
    unsigned long long largest = 0;
#pragma unroll
    for (int j = 0; j < N; ++j)
        if (j >= first && j < first + count)
            largest = max(largest, max((unsigned long long)__double_as_longlong(fabs(values[j].x)),
                                       (unsigned long long)__double_as_longlong(fabs(values[j].y))));
    largest = quad_reduce(largest, [](unsigned long long a, unsigned long long b) { return max(a, b); });
    return below_normal ? largest : (unsigned long long)high << 32;
}

// Bytes of (X + 0x80..80) for the scaled integer X = rint(y), least significant first, in 32-bit
// words; digit p sits at byte SX - p (before the xor with 0x80).
template <int SX> struct DigitWords {
    static constexpr int WORDS = (SX + 3) / 4;
    unsigned w[WORDS];
};

template <int SX>
__device__ __forceinline__ DigitWords<SX> digit_words(double y)
{
    DigitWords<SX> out;
    if constexpr (SX <= 8) {
        constexpr unsigned long long OFFSET = 0x8080808080808080ULL >> (64 - 8 * SX);
        const unsigned long long word = (unsigned long long)__double2ll_rn(y) + OFFSET;
#pragma unroll
        for (int i = 0; i < DigitWords<SX>::WORDS; ++i) out.w[i] = (unsigned)(word >> (32 * i));
    } else {
        // |X| may pass 2^63: |X| = hi 2^64 + lo with both parts exact (rint, floor, fma, conversions),
        // then the two's complement of X in 128 bits
        const double magnitude = fabs(rint(y));
        const double high = floor(magnitude * 0x1p-64);
        const double low = fma(-high, 0x1p64, magnitude);
        unsigned long long lo = __double2ull_rz(low), hi = __double2ull_rz(high);
        if (y < 0.0) {
            lo = ~lo + 1;
            hi = ~hi + (lo == 0);
        }
        constexpr unsigned long long OFFSET_HI = 0x8080808080808080ULL >> (128 - 8 * SX);
        const unsigned long long sum = lo + 0x8080808080808080ULL;
        hi += OFFSET_HI + (sum < lo);
        lo = sum;
#pragma unroll
        for (int i = 0; i < DigitWords<SX>::WORDS; ++i)
            out.w[i] = (unsigned)((i < 2 ? lo : hi) >> (32 * (i & 1)));
    }
    return out;
}

// The compiled-in plan: p + q = t, 1 <= p <= SX, 1 <= q <= SG, t <= TOP; the chunk with top
// diagonal `top` (bit `top` of CHUNK_TOPS) reaches down to just above the next chunk top, or to 2.
template <unsigned long long CHUNK_TOPS> __device__ constexpr int chunk_bottom_of(int top)
{
    int below = top - 1;
    while (below >= 2 && !((CHUNK_TOPS >> below) & 1ULL)) --below;
    return below >= 2 ? below + 1 : 2;
}

// B fragment words of four values (Re, Im of one amplitude slot, then of the next): words[p - 1]
// holds digit p (1 = most significant) of each, one byte per value, after the scaling
// y = x 2^(8 SX - e) by the caller. A 4 x 4 byte transpose of digit_words per 32-bit word.
template <int SX> __device__ __forceinline__ void digit_fragment_words(const double (&parts)[4], unsigned (&words)[SX])
{
    DigitWords<SX> value[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) value[i] = digit_words<SX>(parts[i]);
#pragma unroll
    for (int w = 0; w < DigitWords<SX>::WORDS; ++w) {
        // out_b = byte b of the four values
        const unsigned t01 = __byte_perm(value[0].w[w], value[1].w[w], 0x5140);
        const unsigned t23 = __byte_perm(value[0].w[w], value[1].w[w], 0x7362);
        const unsigned u01 = __byte_perm(value[2].w[w], value[3].w[w], 0x5140);
        const unsigned u23 = __byte_perm(value[2].w[w], value[3].w[w], 0x7362);
        const unsigned bytes[4] = {__byte_perm(t01, u01, 0x5410), __byte_perm(t01, u01, 0x7632),
                                   __byte_perm(t23, u23, 0x5410), __byte_perm(t23, u23, 0x7632)};
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            const int position = 4 * w + b;  // digit SX - position
            if (position < SX) words[SX - 1 - position] = bytes[b] ^ 0x80808080u;
        }
    }
}

// Zero the int32 sums of DIAGONALS diagonals for NT mma tiles.
template <int DIAGONALS, int NT> __device__ __forceinline__ void clear_diagonals(int (&diagonal)[DIAGONALS][NT][4])
{
#pragma unroll
    for (int t = 0; t < DIAGONALS; ++t)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) diagonal[t][nt][i] = 0;
}

// The FP64 accumulation of the plan's diagonals D_t (t = 2 .. TMAX, each exact in int32) for NT
// mma tiles: chunks from the top down, V = sum D_t 2^(8 (top - t)) exactly in int32, one FP64
// step each (acc = V 2^(-8 top), then fma), the order the specification sums in.
template <int TMAX, unsigned long long CHUNK_TOPS, int NT>
__device__ __forceinline__ void accumulate_chunks(const int (&diagonal)[TMAX + 1][NT][4], double (&acc)[NT][4])
{
#pragma unroll
    for (int top = TMAX; top >= 2; --top) {
        if (!((CHUNK_TOPS >> top) & 1ULL)) continue;
        const int bottom = chunk_bottom_of<CHUNK_TOPS>(top);
        const double weight = two_to(-DIGIT_BITS * top);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                int chunk = diagonal[top][nt][i];
#pragma unroll
                for (int t_ = top - 1; t_ >= bottom; --t_) chunk += diagonal[t_][nt][i] * (1 << (DIGIT_BITS * (top - t_)));
                acc[nt][i] = top == TMAX ? (double)chunk * weight : fma((double)chunk, weight, acc[nt][i]);
            }
    }
}

// The row exponent of ozaki/split.py (8-bit digits) of a column from the bits of its largest
// |value| (a double's bits order like its value for values >= 0); BAD_COLUMN for NaN or Inf.
__device__ __forceinline__ int column_exponent_of_max_bits(unsigned long long max_bits)
{
    const unsigned high = (unsigned)(max_bits >> 32);
    if (high >= 0x7ff00000u) return BAD_COLUMN;
    return high < 0x00100000u ? exponent_of_max(__longlong_as_double((long long)max_bits)) : exponent_from_high_word(high);
}
