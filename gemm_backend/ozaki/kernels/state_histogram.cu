// The rho rule's statistics in one read of the state (ozaki/state_histogram.py): for
// every column at the gate's targets (gate_tiles.cuh's TargetLayout, K <= 64), its row exponent
// for 8-bit digits (ozaki/split.py's row_exponents of the column as [re, im, re, im, ...]) and, for
// each nonzero real or imaginary part, the bits it needs below that exponent (split.needed_bits),
// counted into a histogram. Integer counts: the same on every device, in any order.
//
// Work split: the tile skeleton with one 8-column tile per warp; the quad of lanes 4 g .. 4 g + 3
// owns column g of the tile. The column exponent and the bins come from the integer fields of the
// values: the column maximum's high word gives e (exponent_from_high_word; frexp only in tiles
// with a zero or subnormal maximum), and a value of biased exponent field b needs
// e + 1075 - max(b, 1) bits (needed_bits), no frexp per value.
//
// Counting at the speed of the loads: nearly every value of a dense state needs
// WINDOW_FIRST_BIN .. WINDOW_FIRST_BIN + 15 = 54 .. 69 bits (it lies within about 2^-15 of its
// column's maximum; no value of a column with a normal maximum needs fewer than 54). Each lane
// counts those in registers (window_counts.cuh's WindowCounts: a 64-bit shift and add per
// value), and the warp sums its lanes' counts into the block's shared histogram every
// FLUSH_TILES tiles, before a counter can overflow. Values outside the window (far below their
// column's maximum, or under a subnormal one) go to the shared histogram at once, one atomic per
// group of equal bins of the warp (__match_any_sync), only in the tiles that have any. The
// block's histogram is added to the global one at the end.
#include "gate_tiles.cuh"
#include "column_exponents.cuh"
#include "window_counts.cuh"

#define NEEDED_BITS_BINS 2112
// needed_bits = min(e - E + 53, e + 1074) (split.needed_bits) for frexp exponent E. A normal value
// of biased field b has E = b - 1022, so e - E + 53 = e + 1075 - b <= e + 1074; a subnormal one
// has E <= -1022, so the minimum is e + 1074: both are e + NEEDED_BITS_BIAS - max(b, 1).
#define NEEDED_BITS_BIAS 1075
#define WINDOW_FIRST_BIN 54  // a column's maximum needs 54 or 55 bits (e = E + 1 or E + 2)

// split.needed_bits of one nonzero value of |high word| abs_high under row exponent e (a zero
// comes out as a subnormal would: the callers test for it), and the same clipped to the bins.
__device__ __forceinline__ int needed_bits(unsigned abs_high, int e)
{
    return e + NEEDED_BITS_BIAS - max((int)(abs_high >> 20), 1);
}
__device__ __forceinline__ int needed_bits_bin(unsigned abs_high, int e)
{
    return min(max(needed_bits(abs_high, e), 0), NEEDED_BITS_BINS - 1);
}

// BLOCKS_PER_SM: the launch's blocks per multiprocessor (state_histogram.py), which must all be
// resident at once for the persistent grid: ptxas keeps the registers within that.
template <int K, int BLOCKS_PER_SM>
__global__ void __launch_bounds__(256, BLOCKS_PER_SM)
    state_needed_bits(const double2 *x, long long n_columns, unsigned long long targets,
                      unsigned long long *__restrict__ histogram, int *__restrict__ nonfinite)
{
    constexpr int SLOTS = 4 * ((2 * K + 31) / 32);  // the skeleton's (mma-shaped) slots ...
    constexpr int USED_SLOTS = (K + 3) / 4;         // ... of which these hold amplitudes (4 j + t < K)
    constexpr int LANE_VALUES = 2 * USED_SLOTS;     // values a lane counts per tile: at most 32
    constexpr int FLUSH_TILES = FIELD_LIMIT / LANE_VALUES;  // tiles between flushes of WindowCounts
    static_assert(LANE_VALUES <= 32 && SPREAD_VALUES <= NIBBLE_LIMIT && FLUSH_TILES >= 1 &&
                      FLUSH_TILES * LANE_VALUES <= FIELD_LIMIT,
                  "a field of WindowCounts must not overflow between spreads and flushes");
    __shared__ AddressTables<K, 8> tables;
    __shared__ unsigned block_hist[NEEDED_BITS_BINS];
    const TargetLayout<K> layout(targets);
    for (int i = threadIdx.x; i < NEEDED_BITS_BINS; i += blockDim.x) block_hist[i] = 0;
    tables.fill(layout);
    __syncthreads();

    const int lane = threadIdx.x & 31, g = lane >> 2;
    bool found_bad = false;
    WindowCounts window;
    int tiles_since_flush = 0;  // warp-uniform, like the tile loop
    for_each_tile<K, 1, SLOTS, false>(x, n_columns, layout, tables, nullptr, [g](int) { return g; },
                                      [&](long long, long long, double2 (&v)[1][SLOTS]) {
        // zeros stand for the columns past the end: they count nowhere
        unsigned largest = 0;  // high word of the column's max |value|
#pragma unroll
        for (int j = 0; j < USED_SLOTS; ++j)
            largest = max(largest, max(abs_high_word(v[0][j].x), abs_high_word(v[0][j].y)));
        largest = quad_reduce(largest, [](unsigned a, unsigned b) { return max(a, b); });
        found_bad |= largest >= NON_FINITE_HIGH_WORD;  // Inf or NaN: the caller raises, counts unused
        int e = exponent_from_high_word(largest);
        if (__any_sync(FULL_MASK, largest < NORMAL_HIGH_WORD)) {  // a zero or subnormal maximum: frexp
            double max_abs = 0.0;
#pragma unroll
            for (int j = 0; j < USED_SLOTS; ++j) max_abs = fmax(max_abs, fmax(fabs(v[0][j].x), fabs(v[0][j].y)));
            max_abs = quad_reduce(max_abs, [](double a, double b) { return fmax(a, b); });
            if (largest < NORMAL_HIGH_WORD) e = exponent_of_max(max_abs);
        }

        // value i = 2 j + (imaginary part): into the window, or bit i of `outside`; zeros nowhere
        unsigned outside = 0;
#pragma unroll
        for (int i = 0; i < LANE_VALUES; ++i) {
            const double value = i & 1 ? v[0][i >> 1].y : v[0][i >> 1].x;
            const int w = needed_bits(abs_high_word(value), e) - WINDOW_FIRST_BIN;
            const bool in_window = (unsigned)w < WINDOW_BINS;
            window.add(w, value != 0.0 && in_window);
            outside |= (unsigned)(value != 0.0 && !in_window) << i;
            if ((i + 1) % SPREAD_VALUES == 0 || i + 1 == LANE_VALUES) window.spread();
        }
        const unsigned warp_outside = __reduce_or_sync(FULL_MASK, outside);
        if (warp_outside) {  // warp-uniform, as count_bin needs
#pragma unroll
            for (int i = 0; i < LANE_VALUES; ++i) {
                if (!((warp_outside >> i) & 1)) continue;
                const double value = i & 1 ? v[0][i >> 1].y : v[0][i >> 1].x;
                count_bin(block_hist, (outside >> i) & 1 ? needed_bits_bin(abs_high_word(value), e) : NO_BIN, lane);
            }
        }
        if (++tiles_since_flush == FLUSH_TILES) {  // warp-uniform
            window.flush(&block_hist[WINDOW_FIRST_BIN], lane);
            tiles_since_flush = 0;
        }
    });
    window.flush(&block_hist[WINDOW_FIRST_BIN], lane);
    if (found_bad) *nonfinite = 1;
    __syncthreads();
    for (int i = threadIdx.x; i < NEEDED_BITS_BINS; i += blockDim.x)
        if (block_hist[i]) atomicAdd(&histogram[i], (unsigned long long)block_hist[i]);
}
