// Histograms counted at the speed of the loads, shared by the rho rule's state histogram
// (state_histogram.cu) and int8-auto's operand scan (span_scan.cu): nearly every value falls into
// a window of WINDOW_BINS neighbouring bins fixed before the values are read, so each lane counts
// those in registers (WindowCounts: a 64-bit shift and add per value) and its warp sums them into
// the block's shared histogram now and then; the kernels send the rare values outside the window
// to the shared histogram at once (count_bin: one atomic per group of equal bins of the warp),
// only when a warp vote finds some. Every count stays exact. The bins come from the integer
// fields of the values (abs_high_word, biased_exponent, frexp_exponent), not from frexp.
#pragma once

#define FULL_MASK 0xffffffffu
#define NO_BIN (-1)
#define WINDOW_BINS 16
#define NIBBLE_LIMIT 15  // a 4-bit field of WindowCounts
#define FIELD_LIMIT 255  // an 8-bit field of WindowCounts
#define SPREAD_VALUES 8  // values a lane may add between spreads: at most NIBBLE_LIMIT
#define NORMAL_HIGH_WORD 0x00100000u      // high words (sign cleared) of normal values are at least this
#define NON_FINITE_HIGH_WORD 0x7ff00000u  // ... and of Inf and NaN at least this
#define NORMAL_FREXP_BIAS 1022
#define SUBNORMAL_FREXP_BIAS 1074

// The high word of |value|: integer order is value order, so its maximum is the maximum's.
__device__ __forceinline__ unsigned abs_high_word(double value)
{
    return (unsigned)__double2hiint(value) & 0x7fffffffu;
}

// The biased exponent field of a value: 1 .. 2046 for normal values, 0 for zeros and subnormals,
// 2047 for Inf and NaN. A normal value's frexp exponent is the field - NORMAL_FREXP_BIAS.
__device__ __forceinline__ int biased_exponent(double value)
{
    return (int)(abs_high_word(value) >> 20);
}

// frexp's exponent of a subnormal value, f 2^-1074 for its 52-bit fraction f: bit_length(f) - 1074.
__device__ __forceinline__ int subnormal_frexp_exponent(double value)
{
    return 64 - __clzll(__double_as_longlong(value) & 0x000fffffffffffffll) - SUBNORMAL_FREXP_BIAS;
}

// frexp's exponent of a finite nonzero value. A zero gives -1074 (callers skip zeros); Inf and NaN
// give 1025 (callers flag them and discard what they counted).
__device__ __forceinline__ int frexp_exponent(double value)
{
    const int biased = biased_exponent(value);
    return biased ? biased - NORMAL_FREXP_BIAS : subnormal_frexp_exponent(value);
}

// Adds one count per lane whose bin is not NO_BIN, one atomic per group of equal bins (a warp's
// values fall into few bins); every lane of the warp takes part.
__device__ __forceinline__ void count_bin(unsigned *hist, int bin, int lane)
{
    const unsigned peers = __match_any_sync(FULL_MASK, bin);
    if (bin != NO_BIN && lane == __ffs(peers) - 1) atomicAdd(&hist[bin], (unsigned)__popc(peers));
}

// One lane's counts of the window bins w < WINDOW_BINS, in two levels so that a value costs one
// 64-bit shift and add: field w of `nibbles` (bits 4 w .. 4 w + 3) takes up to NIBBLE_LIMIT counts
// before spread() moves them into 8-bit fields (field 2 m in byte m of `even`, field 2 m + 1 in
// byte m of `odd`), which take up to FIELD_LIMIT counts before flush() moves them into the block's
// histogram. No field carries into the next. The bins are the same for every lane of the warp.
struct WindowCounts {
    unsigned long long nibbles = 0, even = 0, odd = 0;

    // Counts window bin w when `counted` (then 0 <= w < WINDOW_BINS).
    __device__ __forceinline__ void add(int w, bool counted)
    {
        if (counted) nibbles += 1ull << (4 * w);
    }
    __device__ __forceinline__ void spread()
    {
        even += nibbles & 0x0f0f0f0f0f0f0f0full;
        odd += (nibbles >> 4) & 0x0f0f0f0f0f0f0f0full;
        nibbles = 0;
    }
    // The warp's 8-bit fields summed into window_hist (the block histogram's bins from the window's
    // first) and cleared; every lane of the warp takes part, after spread(). Sum r < 8 is over the
    // 32-bit half (r >> 1) & 1 of `even` (r < 4) or `odd`, its bytes of parity r & 1 spread to 16
    // bits: bytes m and m + 2 (m = 4 half + parity), at most 32 * 255 < 2^16 each. Lane r keeps sum
    // r and adds its two fields.
    __device__ __forceinline__ void flush(unsigned *window_hist, int lane)
    {
        unsigned mine = 0;
#pragma unroll
        for (int r = 0; r < 8; ++r) {
            const unsigned half = (unsigned)((r < 4 ? even : odd) >> (32 * ((r >> 1) & 1)));
            const unsigned sums = __reduce_add_sync(FULL_MASK, (half >> (8 * (r & 1))) & 0x00ff00ffu);
            if (lane == r) mine = sums;
        }
        const int byte = 4 * ((lane >> 1) & 1) + (lane & 1);
        const int bin = 2 * byte + (lane >> 2);  // bytes m and m + 2: fields 4 apart
        if (lane < 8 && (mine & 0xffffu)) atomicAdd(&window_hist[bin], mine & 0xffffu);
        if (lane < 8 && (mine >> 16)) atomicAdd(&window_hist[bin + 4], mine >> 16);
        even = odd = 0;
    }
};
