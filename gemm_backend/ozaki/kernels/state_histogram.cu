// The rho rule's statistics in one read of the state (ozaki/state_histogram.py): for
// every column at the gate's targets (gate_tiles.cuh's TargetLayout, K <= 64), its row exponent
// for 8-bit digits (ozaki/split.py's row_exponents of the column as [re, im, re, im, ...]) and, for each
// nonzero real part, the bits it needs below that exponent (split.needed_bits), counted into
// a histogram. Integer counts: the same on every device, in any order.
//
// Work split: the tile skeleton with one 8-column tile per warp; the quad of lanes 4 g .. 4 g + 3
// owns column g of the tile. Most elements of a warp fall into a few bins, so each lane's bin is
// counted once per group of equal bins (__match_any_sync) into the block's shared histogram, which
// is added to the global one at the end.
#include "gate_tiles.cuh"
#include "column_exponents.cuh"

#define NEEDED_BITS_BINS 2112
#define FLOAT64_SIGNIFICAND_BITS 53
#define SUBNORMAL_BOTTOM_EXPONENT 1074
#define NO_BIN (-1)

// ozaki_split.needed_bits of one nonzero value under row exponent e, clipped to the bins.
__device__ __forceinline__ int needed_bits_bin(double value, int e)
{
    int exponent;
    frexp(value, &exponent);
    const int needed = min(e - exponent + FLOAT64_SIGNIFICAND_BITS, e + SUBNORMAL_BOTTOM_EXPONENT);
    return min(max(needed, 0), NEEDED_BITS_BINS - 1);
}

// Adds one count per lane whose bin is not NO_BIN; every lane of the warp takes part.
__device__ __forceinline__ void count_bin(unsigned *block_hist, int bin, int lane)
{
    const unsigned peers = __match_any_sync(0xffffffffu, bin);
    if (bin != NO_BIN && lane == __ffs(peers) - 1) atomicAdd(&block_hist[bin], (unsigned)__popc(peers));
}

template <int K>
__global__ void __launch_bounds__(256) state_needed_bits(const double2 *x, long long n_columns,
                                                         unsigned long long targets,
                                                         unsigned long long *__restrict__ histogram,
                                                         int *__restrict__ nonfinite)
{
    constexpr int SLOTS = 4 * ((2 * K + 31) / 32);
    __shared__ AddressTables<K, 8> tables;
    __shared__ unsigned block_hist[NEEDED_BITS_BINS];
    const TargetLayout<K> layout(targets);
    for (int i = threadIdx.x; i < NEEDED_BITS_BINS; i += blockDim.x) block_hist[i] = 0;
    tables.fill(layout);
    __syncthreads();

    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int found_bad = 0;
    for_each_tile<K, 1, SLOTS, false>(x, n_columns, layout, tables, nullptr, [g](int) { return g; },
                                      [&](long long tile, long long, double2 (&v)[1][SLOTS]) {
        // zeros stand for the slots past K and the columns past the end: they count nowhere
        double largest = 0.0;
#pragma unroll
        for (int j = 0; j < SLOTS; ++j) largest = fmax(largest, fmax(fabs(v[0][j].x), fabs(v[0][j].y)));
        largest = quad_reduce(largest, [](double a, double b) { return fmax(a, b); });
        bool bad = false;
#pragma unroll
        for (int j = 0; j < SLOTS; ++j) bad |= !isfinite(v[0][j].x) || !isfinite(v[0][j].y);
        found_bad |= bad;
        const int e = exponent_of_max(largest);
#pragma unroll
        for (int j = 0; j < SLOTS; ++j) {
            count_bin(block_hist, !bad && v[0][j].x != 0.0 ? needed_bits_bin(v[0][j].x, e) : NO_BIN, lane);
            count_bin(block_hist, !bad && v[0][j].y != 0.0 ? needed_bits_bin(v[0][j].y, e) : NO_BIN, lane);
        }
    });
    if (found_bad) *nonfinite = 1;
    __syncthreads();
    for (int i = threadIdx.x; i < NEEDED_BITS_BINS; i += blockDim.x)
        if (block_hist[i]) atomicAdd(&histogram[i], (unsigned long long)block_hist[i]);
}
