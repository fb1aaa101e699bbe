// int8-auto's scan of one matmul operand on the GPU (ozaki/span_scan.py): the row exponents of
// split.row_exponents and the SpanSummary counts of spans.summarize_spans, read straight from the
// operand. Integer counts: the same as numpy's on the same data, in any order; only the sums of
// squares (the norms) depend on the summation order.
//
// The operand is seen as `rows` rows of `elements` elements, each element `width` (1 or 2)
// adjacent float64 values (the real and imaginary parts of a complex element): value c of element
// i of row r is x[r * row_step + i * element_step + c] (steps in float64 units, any sign). So A
// is its float64 row view (width 1) and B (k, n) is read column by column from its own layout
// (row r = column j, width 2 when complex), with no transposed copy. Each row's exponent is
// written `width` times (B's embedded rows 2j and 2j + 1 share column j's exponent).
//
// Work split: a block takes tiles of tile_rows rows. With lanes_across_rows (B in row-major
// layout, where neighbouring columns are adjacent) a tile is 32 rows, lane l of every warp on
// row l and warp w on elements w, w + warps, ...; otherwise (rows contiguous, as A) a tile is one
// row per warp, the lanes on elements lane, lane + 32, .... Loads are coalesced either way, a
// thread's BATCH_VALUES values at a time. Each tile is read twice: pass 1 gives each row its
// maximum |x| (hence its exponent e), its nonzero count and the sum of its values' frexp
// exponents (hence its centre, the floor of the mean alpha = e - exponent); pass 2 counts alpha
// and alpha - centre of every nonzero value into the block's shared histograms and sums the
// squares of x / 2^e. Exponents come from the values' bit fields (frexp_exponent), frexp only
// for a row's maximum. A row's partial results meet in shared memory, in a fixed order; the
// shared histograms go to the global totals with atomics when the block ends (or before its
// 32-bit counters could overflow).
//
// Counting at the speed of the loads (window_counts.cuh): every nonzero value has alpha >= 1,
// and nearly every one of a row of similar magnitudes alpha in 1 .. 16 and a deviation from the
// centre in -5 .. 10. Each lane counts those two windows in registers (WindowCounts), the warp
// sums them into the shared histograms every FLUSH_BATCHES batches, before a shared flush and at
// the end; other values go to the shared histograms at once (count_outside), only in the batches
// that have any. The window bins are absolute (alpha, and alpha - centre + SPAN_OFFSET), the same
// for every lane, so the lanes of a warp may hold different rows.
//
// Compile-time constants from span_scan.py (-D): SPAN_OFFSET (spans.SPAN_OFFSET), the word
// offsets of the totals (DEVIATIONS_AT, ALPHAS_AT, CENTERS_AT, NORM_CENTERS_AT, LIVE_ROWS_AT,
// NONZEROS_AT, MOST_NONZEROS_AT, NORM_BITS_AT) and the launch: MAX_THREADS threads a block,
// BLOCKS_PER_SM blocks a multiprocessor (ptxas keeps a thread within 64 registers at 4).
#if !defined(SPAN_OFFSET) || !defined(DEVIATIONS_AT) || !defined(ALPHAS_AT) || !defined(CENTERS_AT) || \
    !defined(NORM_CENTERS_AT) || !defined(LIVE_ROWS_AT) || !defined(NONZEROS_AT) ||                     \
    !defined(MOST_NONZEROS_AT) || !defined(NORM_BITS_AT) || !defined(MAX_THREADS) || !defined(BLOCKS_PER_SM)
#error "span_scan.cu needs the constants that span_scan.py passes with -D"
#endif
#include "column_exponents.cuh"
#include "window_counts.cuh"

#define SPAN_BINS (2 * SPAN_OFFSET)
#define CENTER_BINS SPAN_OFFSET
#define MAX_TILE_ROWS 32
#define BATCH_VALUES 6  // values a thread loads before it counts them (6: ptxas fits 64 registers)
#define FLUSH_BATCHES (FIELD_LIMIT / BATCH_VALUES)  // batches between flushes of the window counts
#define ALPHA_WINDOW_FIRST_BIN 1                     // the smallest alpha of a nonzero value
#define DEVIATION_WINDOW_FIRST_BIN (SPAN_OFFSET - 5)  // deviations -5 .. 10
#define MAX_UPWARD_SCALE 1023  // 2^1023: the largest power of two that is a double
#define NON_FINITE_BIASED 2047  // the exponent field of Inf and NaN
#ifndef COUNTER_LIMIT  // values a block counts before flushing its 32-bit counters (tests set fewer)
#define COUNTER_LIMIT 0xffffffffull
#endif
// The largest double below sqrt(1/2) is below it and this one above it (neither equals it).
#define ABOVE_SQRT_HALF 0.70710678118654757

static_assert(BATCH_VALUES <= SPREAD_VALUES && BATCH_VALUES <= NIBBLE_LIMIT && FLUSH_BATCHES >= 1 &&
                  FLUSH_BATCHES * BATCH_VALUES <= FIELD_LIMIT,
              "a field of WindowCounts must not overflow between spreads and flushes");
static_assert(ALPHA_WINDOW_FIRST_BIN + WINDOW_BINS <= CENTER_BINS && DEVIATION_WINDOW_FIRST_BIN >= 0 &&
                  DEVIATION_WINDOW_FIRST_BIN + WINDOW_BINS <= SPAN_BINS,
              "the windows must lie inside their histograms");

// numpy's a // b (rounded towards minus infinity) for b > 0.
__device__ __forceinline__ long long floor_divide(long long a, long long b)
{
    const long long quotient = a / b;
    return (a % b != 0 && a < 0) ? quotient - 1 : quotient;
}

__device__ __forceinline__ long long clip(long long value, long long low, long long high)
{
    return value < low ? low : (value > high ? high : value);
}

// rint(log2(norm)) for norm > 0, exactly: with norm = f 2^E (f in [1/2, 1)), log2(norm) rounds
// down to E - 1 when log2(f) < -1/2, i.e. f < sqrt(1/2), and to E otherwise (never a tie).
__device__ __forceinline__ int nearest_log2(double norm)
{
    int e;
    const double fraction = frexp(norm, &e);
    return fraction < ABOVE_SQRT_HALF ? e - 1 : e;
}

// totals[offset + i] += counts[i] for the nonzero counts, which are then zeroed.
__device__ __forceinline__ void flush_counts(unsigned *counts, int bins, unsigned long long *totals, int offset)
{
    for (int i = threadIdx.x; i < bins; i += blockDim.x)
        if (counts[i]) {
            atomicAdd(&totals[offset + i], (unsigned long long)counts[i]);
            counts[i] = 0;
        }
}

// The squares of x / 2^e, each rounded as numpy's ldexp(x, -e) rounds it (|x| < 2^e), summed: the
// squares of y = x * up_to_2_1023 summed, then times squares_of's factor. For e >= -1023,
// up_to_2_1023 = 2^-e (a double, subnormal for e > 1022), whose product rounds once like ldexp,
// and the factor is 1. Below (rows of subnormals) y = x 2^1023 is exact and a nonzero one at
// least 2^-51, so its square and every nonzero partial sum are normal, and scaling them all by
// 2^(2 (-e - 1023)) <= 2^100 changes no rounding: the factor scales the sum exactly.
struct Unscale {
    double up_to_2_1023, factor;
    __device__ __forceinline__ explicit Unscale(int e)
        : up_to_2_1023(ldexp(1.0, min(-e, MAX_UPWARD_SCALE))), factor(ldexp(1.0, 2 * (-e - min(-e, MAX_UPWARD_SCALE))))
    {
    }
    __device__ __forceinline__ double squares_of(double sum_of_squares) const { return sum_of_squares * factor; }
};

// Calls visit(v) for each batch of this thread's elements part, part + parts, ... of row r: v[u
// WIDTH + c] is value c of the batch's element u, 0.0 past the row's end and where !row_ok. The
// same number of batches in every thread of the block, as the warp-wide counting needs. A
// batch's loads are all issued before its values are counted (they do not depend on them).
template <int WIDTH, class Visit>
__device__ __forceinline__ void for_each_batch(const double *r, bool row_ok, long long elements,
                                               long long element_step, int part, int parts, Visit visit)
{
    constexpr int BATCH_ELEMENTS = BATCH_VALUES / WIDTH;
    static_assert(BATCH_ELEMENTS * WIDTH == BATCH_VALUES, "a batch holds whole elements");
    long long left = row_ok && part < elements ? (elements - part + parts - 1) / parts : 0;  // elements to visit
    const double *element = r + part * element_step;  // this thread's next (read only while left > 0)
    const long long step = (long long)parts * element_step;
    for (long long first = 0; first < elements; first += BATCH_ELEMENTS * parts) {
        double v[BATCH_VALUES];
#pragma unroll
        for (int u = 0; u < BATCH_ELEMENTS; ++u) {
#pragma unroll
            for (int c = 0; c < WIDTH; ++c) v[u * WIDTH + c] = u < left ? element[c] : 0.0;
            element += step;
        }
        left -= BATCH_ELEMENTS;
        visit(v);
    }
}

// A block's shared memory: its histograms, and the partial results of its threads and rows.
struct ScanShared {
    unsigned deviation_counts[SPAN_BINS];
    unsigned alpha_counts[CENTER_BINS];
    double partial_max[MAX_THREADS];
    double partial_squares[MAX_THREADS];
    long long partial_nonzeros[MAX_THREADS];
    long long partial_exponent_sums[MAX_THREADS];
    int partial_bad[MAX_THREADS];
    int row_exponent[MAX_TILE_ROWS];
    long long row_center[MAX_TILE_ROWS];
    long long row_nonzeros[MAX_TILE_ROWS];
    // Thread t < tile_rows's totals over the rows it finished (in shared memory, not registers,
    // which the counting needs).
    unsigned long long finished_live_rows[MAX_TILE_ROWS];
    unsigned long long finished_nonzeros[MAX_TILE_ROWS];
    unsigned long long finished_most_nonzeros[MAX_TILE_ROWS];
    double finished_largest_norm[MAX_TILE_ROWS];
};

// The warp's window counts of alpha and deviation into the shared histograms (every lane takes part).
struct ScanWindows {
    WindowCounts alphas, deviations;
    int batches_since_flush = 0;  // block-uniform, like the batches

    __device__ __forceinline__ void flush(ScanShared &shared, int lane)
    {
        alphas.flush(&shared.alpha_counts[ALPHA_WINDOW_FIRST_BIN], lane);
        deviations.flush(&shared.deviation_counts[DEVIATION_WINDOW_FIRST_BIN], lane);
        batches_since_flush = 0;
    }
};

// span_scan for elements of WIDTH values.
template <int WIDTH>
__device__ __forceinline__ void scan_rows(ScanShared &shared, const double *__restrict__ x, long long rows,
                                          long long elements, long long row_step, long long element_step,
                                          int lanes_across_rows, int bits, int *__restrict__ exponents,
                                          int *__restrict__ nonfinite, unsigned long long *__restrict__ totals)
{
    for (int i = threadIdx.x; i < SPAN_BINS; i += blockDim.x) shared.deviation_counts[i] = 0;
    for (int i = threadIdx.x; i < CENTER_BINS; i += blockDim.x) shared.alpha_counts[i] = 0;
    if (threadIdx.x < MAX_TILE_ROWS) {
        shared.finished_live_rows[threadIdx.x] = shared.finished_nonzeros[threadIdx.x] = 0;
        shared.finished_most_nonzeros[threadIdx.x] = 0;
        shared.finished_largest_norm[threadIdx.x] = 0.0;
    }

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tile_rows = lanes_across_rows ? 32 : (int)(blockDim.x >> 5);
    const int parts = blockDim.x / tile_rows;  // threads per row
    const int row_in_tile = lanes_across_rows ? lane : warp;
    const int part = lanes_across_rows ? warp : lane;
    const int slot = row_in_tile * parts + part;  // this thread's partial results
    const long long tiles = (rows + tile_rows - 1) / tile_rows;
    // Tiles between flushes of the shared histograms, each counting at most tile_values values
    // (at most 2^31 - 1, so that the count of tiles since the last flush cannot overflow).
    const unsigned long long tile_values = (unsigned long long)tile_rows * elements * WIDTH;
    const int tiles_per_flush = (int)min(max(COUNTER_LIMIT / max(tile_values, 1ull), 1ull), 0x7fffffffull);
    int tiles_since_flush = 0;
    ScanWindows windows;
    __syncthreads();

    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        if (tiles_since_flush == tiles_per_flush) {  // block-uniform: every thread flushes together
            windows.flush(shared, lane);
            __syncthreads();
            flush_counts(shared.deviation_counts, SPAN_BINS, totals, DEVIATIONS_AT);
            flush_counts(shared.alpha_counts, CENTER_BINS, totals, ALPHAS_AT);
            __syncthreads();
            tiles_since_flush = 0;
        }
        ++tiles_since_flush;
        const long long row = tile * tile_rows + row_in_tile;
        const bool row_ok = row < rows;
        const double *r = x + (row_ok ? row : 0) * row_step;

        // pass 1: maximum, non-finite flag, nonzeros, sum of frexp exponents
        double largest = 0.0;
        int bad = 0;
        long long nonzeros = 0, exponent_sum = 0;
        for_each_batch<WIDTH>(r, row_ok, elements, element_step, part, parts, [&](const double (&v)[BATCH_VALUES]) {
            int batch_nonzeros = 0, batch_exponent_sum = 0;  // |sum| <= BATCH_VALUES * 1074
#pragma unroll
            for (int q = 0; q < BATCH_VALUES; ++q) {
                const int biased = biased_exponent(v[q]);
                bad |= biased == NON_FINITE_BIASED;
                largest = fmax(largest, fabs(v[q]));  // fmax skips NaN; the flag reports it
                batch_nonzeros += v[q] != 0.0;
                batch_exponent_sum += biased ? biased - NORMAL_FREXP_BIAS : 0;
                if (biased == 0 && v[q] != 0.0) batch_exponent_sum += subnormal_frexp_exponent(v[q]);  // rare
            }
            nonzeros += batch_nonzeros;
            exponent_sum += batch_exponent_sum;
        });
        shared.partial_max[slot] = largest;
        shared.partial_bad[slot] = bad;
        shared.partial_nonzeros[slot] = nonzeros;
        shared.partial_exponent_sums[slot] = exponent_sum;
        __syncthreads();
        if (threadIdx.x < tile_rows) {
            const int t = threadIdx.x;
            const long long finished = tile * tile_rows + t;
            double row_max = 0.0;
            int row_bad = 0;
            long long row_count = 0, row_sum = 0;
            for (int p = 0; p < parts; ++p) {
                row_max = fmax(row_max, shared.partial_max[t * parts + p]);
                row_bad |= shared.partial_bad[t * parts + p];
                row_count += shared.partial_nonzeros[t * parts + p];
                row_sum += shared.partial_exponent_sums[t * parts + p];
            }
            const int e = row_exponent_of_max(row_bad ? 0.0 : row_max, bits);
            if (finished < rows)
                for (int c = 0; c < WIDTH; ++c) exponents[finished * WIDTH + c] = e;
            if (row_bad) atomicExch(nonfinite, 1);
            shared.row_exponent[t] = e;
            shared.row_nonzeros[t] = row_count;
            // sum of alpha over the nonzeros = count * e - sum of exponents
            shared.row_center[t] = row_count ? floor_divide(row_count * e - row_sum, row_count) : 0;
        }
        __syncthreads();

        // pass 2: histograms of alpha and alpha - centre, sum of squares of x / 2^e. Bins as
        // numpy's: alpha clipped to 0 .. CENTER_BINS - 1, alpha - centre + SPAN_OFFSET to
        // 0 .. SPAN_BINS - 1 (alpha and a row's centre lie within +-2^12).
        const int e = shared.row_exponent[row_in_tile];
        const int deviation_shift = SPAN_OFFSET - (int)shared.row_center[row_in_tile];
        const Unscale unscale(e);
        double squares = 0.0;  // of x * unscale.up_to_2_1023 (unscale.squares_of)
        for_each_batch<WIDTH>(r, row_ok, elements, element_step, part, parts, [&](const double (&v)[BATCH_VALUES]) {
#pragma unroll
            for (int q = 0; q < BATCH_VALUES; ++q) {
                const int biased = biased_exponent(v[q]);
                const bool nonzero = v[q] != 0.0, normal = biased != 0;
                const int alpha_w = e + NORMAL_FREXP_BIAS - biased - ALPHA_WINDOW_FIRST_BIN;
                const int deviation_w = alpha_w + ALPHA_WINDOW_FIRST_BIN + deviation_shift - DEVIATION_WINDOW_FIRST_BIN;
                const bool alpha_in = normal && (unsigned)alpha_w < WINDOW_BINS;
                const bool deviation_in = normal && (unsigned)deviation_w < WINDOW_BINS;
                windows.alphas.add(alpha_w, alpha_in);
                windows.deviations.add(deviation_w, deviation_in);
                // nonzero values outside a window (subnormal ones always: their bins come from
                // frexp_exponent, off the counting path) into the shared histograms at once
                const bool alpha_out = nonzero && !alpha_in, deviation_out = nonzero && !deviation_in;
                if (__any_sync(FULL_MASK, alpha_out || deviation_out)) {  // warp-uniform, as count_bin needs
                    const int alpha = e - frexp_exponent(v[q]);
                    count_bin(shared.alpha_counts, alpha_out ? (int)clip(alpha, 0, CENTER_BINS - 1) : NO_BIN, lane);
                    count_bin(shared.deviation_counts,
                              deviation_out ? (int)clip(alpha + deviation_shift, 0, SPAN_BINS - 1) : NO_BIN, lane);
                }
                const double scaled = v[q] * unscale.up_to_2_1023;  // 0 for a zero: adds nothing
                squares = fma(scaled, scaled, squares);
            }
            windows.alphas.spread();
            windows.deviations.spread();
            if (++windows.batches_since_flush == FLUSH_BATCHES) windows.flush(shared, lane);
        });
        shared.partial_squares[slot] = unscale.squares_of(squares);
        __syncthreads();
        if (threadIdx.x < tile_rows && tile * tile_rows + threadIdx.x < rows && shared.row_nonzeros[threadIdx.x] > 0) {
            const int t = threadIdx.x;
            double sum = 0.0;
            for (int p = 0; p < parts; ++p) sum += shared.partial_squares[t * parts + p];
            const double norm = sqrt(sum);  // >= 127/512 on a row with a nonzero element
            const long long count = shared.row_nonzeros[t], center = shared.row_center[t];
            shared.finished_live_rows[t] += 1;
            shared.finished_nonzeros[t] += count;
            shared.finished_most_nonzeros[t] = max(shared.finished_most_nonzeros[t], (unsigned long long)count);
            shared.finished_largest_norm[t] = fmax(shared.finished_largest_norm[t], norm);
            atomicAdd(&totals[CENTERS_AT + clip(center, 0, CENTER_BINS - 1)], 1ull);
            atomicAdd(&totals[NORM_CENTERS_AT + clip(center + nearest_log2(norm), 0, CENTER_BINS - 1)], 1ull);
        }
        // The next tile writes row_* only after its first __syncthreads, which the finishing
        // threads reach once they are done with these.
    }

    if (threadIdx.x < tile_rows && shared.finished_live_rows[threadIdx.x]) {
        const int t = threadIdx.x;
        atomicAdd(&totals[LIVE_ROWS_AT], shared.finished_live_rows[t]);
        atomicAdd(&totals[NONZEROS_AT], shared.finished_nonzeros[t]);
        atomicMax(&totals[MOST_NONZEROS_AT], shared.finished_most_nonzeros[t]);
        // norms are >= 0, so their bit patterns order like their values
        atomicMax(&totals[NORM_BITS_AT], (unsigned long long)__double_as_longlong(shared.finished_largest_norm[t]));
    }
    windows.flush(shared, lane);
    __syncthreads();
    flush_counts(shared.deviation_counts, SPAN_BINS, totals, DEVIATIONS_AT);
    flush_counts(shared.alpha_counts, CENTER_BINS, totals, ALPHAS_AT);
}

// totals: LIVE_ROWS_AT + 4 words, zeroed by the caller (span_scan.py reads them as a
// SpanSummary); exponents: rows * width int32; *nonfinite = 1 when any value is NaN or Inf.
// blockDim.x: a multiple of 32, at most MAX_THREADS; width: 1 or 2.
extern "C" __global__ void __launch_bounds__(MAX_THREADS, BLOCKS_PER_SM)
    span_scan(const double *__restrict__ x, long long rows, long long elements, int width, long long row_step,
              long long element_step, int lanes_across_rows, int bits, int *__restrict__ exponents,
              int *__restrict__ nonfinite, unsigned long long *__restrict__ totals)
{
    __shared__ ScanShared shared;
    if (width == 2)
        scan_rows<2>(shared, x, rows, elements, row_step, element_step, lanes_across_rows, bits, exponents, nonfinite,
                     totals);
    else
        scan_rows<1>(shared, x, rows, elements, row_step, element_step, lanes_across_rows, bits, exponents, nonfinite,
                     totals);
}
