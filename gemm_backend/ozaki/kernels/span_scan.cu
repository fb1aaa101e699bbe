// int8-auto's scan of one matmul operand on the GPU (ozaki/span_scan.py): the row exponents of
// split.row_exponents and the SpanSummary counts of spans.summarize_spans, read straight from the
// operand. Integer counts: the same as numpy's on the same data, in any order; only the sums of
// squares (the norms) depend on the summation order.
//
// The operand is seen as `rows` rows of `elements` elements, each element `width` adjacent float64
// values (the real and imaginary parts of a complex element): value c of element i of row r is
// x[r * row_step + i * element_step + c] (steps in float64 units, any sign). So A is its float64
// row view (width 1) and B (k, n) is read column by column from its own layout (row r = column j,
// width 2 when complex), with no transposed copy. Each row's exponent is written `width` times
// (B's embedded rows 2j and 2j + 1 share column j's exponent).
//
// Work split: a block takes tiles of tile_rows rows. With lanes_across_rows (B in row-major
// layout, where neighbouring columns are adjacent) a tile is 32 rows, lane l of every warp on
// row l and warp w on elements w, w + warps, ...; otherwise (rows contiguous, as A) a tile is one
// row per warp, the lanes on elements lane, lane + 32, .... Loads are coalesced either way. Each
// tile is read twice: pass 1 gives each row its maximum |x| (hence its exponent e), its nonzero
// count and the sum of its elements' frexp exponents (hence its centre, the floor of the mean
// alpha = e - exponent); pass 2 counts alpha and alpha - centre of every nonzero element into
// the block's shared histograms and sums the squares of x / 2^e. A row's partial results meet
// in shared memory, in a fixed order; the shared histograms go to the global totals with
// atomics when the block ends (or before its 32-bit counters could overflow).
//
// Compile-time constants from span_scan.py (-D): SPAN_OFFSET (spans.SPAN_OFFSET) and the word
// offsets of the totals: DEVIATIONS_AT, ALPHAS_AT, CENTERS_AT, NORM_CENTERS_AT, LIVE_ROWS_AT,
// NONZEROS_AT, MOST_NONZEROS_AT, NORM_BITS_AT.
#if !defined(SPAN_OFFSET) || !defined(DEVIATIONS_AT) || !defined(ALPHAS_AT) || !defined(CENTERS_AT) || \
    !defined(NORM_CENTERS_AT) || !defined(LIVE_ROWS_AT) || !defined(NONZEROS_AT) ||                     \
    !defined(MOST_NONZEROS_AT) || !defined(NORM_BITS_AT)
#error "span_scan.cu needs the constants that span_scan.py passes with -D"
#endif

#define SPAN_BINS (2 * SPAN_OFFSET)
#define CENTER_BINS SPAN_OFFSET
#define MAX_THREADS 256
#define MAX_TILE_ROWS 32
#define NO_BIN (-1)
#ifndef COUNTER_LIMIT  // values a block counts before flushing its 32-bit counters (tests set fewer)
#define COUNTER_LIMIT 0xffffffffull
#endif
// The largest double below sqrt(1/2) is below it and this one above it (neither equals it).
#define ABOVE_SQRT_HALF 0.70710678118654757

// split.exponents_of_maxima for a row maximum m >= 0: with m = f 2^E (frexp), E + 1 while
// f < 1 - 2^(1 - bits), else E + 2; 0 for m = 0.
__device__ __forceinline__ int row_exponent_of_max(double max_abs, int bits)
{
    int e;
    const double fraction = frexp(max_abs, &e);
    return max_abs > 0.0 ? e + (fraction >= 1.0 - ldexp(1.0, 1 - bits) ? 2 : 1) : 0;
}

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

// Adds one count per lane whose bin is not NO_BIN, one atomic per group of equal bins (most
// elements of a warp fall into a few bins); every lane of the warp takes part.
__device__ __forceinline__ void count_bin(unsigned *counts, int bin, int lane)
{
    const unsigned peers = __match_any_sync(0xffffffffu, bin);
    if (bin != NO_BIN && lane == __ffs(peers) - 1) atomicAdd(&counts[bin], (unsigned)__popc(peers));
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

// totals: LIVE_ROWS_AT + 4 words, zeroed by the caller (span_scan.py reads them as a
// SpanSummary); exponents: rows * width int32; *nonfinite = 1 when any value is NaN or Inf.
// blockDim.x: a multiple of 32, at most MAX_THREADS.
extern "C" __global__ void __launch_bounds__(MAX_THREADS)
    span_scan(const double *__restrict__ x, long long rows, long long elements, int width, long long row_step,
              long long element_step, int lanes_across_rows, int bits, int *__restrict__ exponents,
              int *__restrict__ nonfinite, unsigned long long *__restrict__ totals)
{
    __shared__ unsigned deviation_counts[SPAN_BINS];
    __shared__ unsigned alpha_counts[CENTER_BINS];
    __shared__ double partial_max[MAX_THREADS];
    __shared__ double partial_squares[MAX_THREADS];
    __shared__ long long partial_nonzeros[MAX_THREADS];
    __shared__ long long partial_exponent_sums[MAX_THREADS];
    __shared__ int partial_bad[MAX_THREADS];
    __shared__ int row_exponent[MAX_TILE_ROWS];
    __shared__ long long row_center[MAX_TILE_ROWS];
    __shared__ long long row_nonzeros[MAX_TILE_ROWS];
    for (int i = threadIdx.x; i < SPAN_BINS; i += blockDim.x) deviation_counts[i] = 0;
    for (int i = threadIdx.x; i < CENTER_BINS; i += blockDim.x) alpha_counts[i] = 0;

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tile_rows = lanes_across_rows ? 32 : (int)(blockDim.x >> 5);
    const int parts = blockDim.x / tile_rows;  // threads per row
    const int row_in_tile = lanes_across_rows ? lane : warp;
    const int part = lanes_across_rows ? warp : lane;
    const int slot = row_in_tile * parts + part;  // this thread's partial results
    const long long tiles = (rows + tile_rows - 1) / tile_rows;
    const unsigned long long tile_values = (unsigned long long)tile_rows * elements * width;
    unsigned long long pending = 0;  // values counted in the shared histograms since they were flushed
    // The finishing threads' (threadIdx.x < tile_rows) totals over the rows they finished.
    unsigned long long live_rows = 0, nonzeros_total = 0, most_nonzeros = 0;
    double largest_norm = 0.0;
    int found_bad = 0;
    __syncthreads();

    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        if (pending + tile_values > COUNTER_LIMIT) {  // block-uniform: every thread flushes together
            __syncthreads();
            flush_counts(deviation_counts, SPAN_BINS, totals, DEVIATIONS_AT);
            flush_counts(alpha_counts, CENTER_BINS, totals, ALPHAS_AT);
            __syncthreads();
            pending = 0;
        }
        pending += tile_values;
        const long long row = tile * tile_rows + row_in_tile;
        const bool row_ok = row < rows;
        const double *r = x + (row_ok ? row : 0) * row_step;

        // pass 1: maximum, non-finite flag, nonzeros, sum of frexp exponents
        double largest = 0.0;
        int bad = 0;
        long long nonzeros = 0, exponent_sum = 0;
        for (long long i = part; row_ok && i < elements; i += parts) {
            const double *element = r + i * element_step;
            for (int c = 0; c < width; ++c) {
                const double v = element[c];
                bad |= !isfinite(v);
                largest = fmax(largest, fabs(v));  // fmax skips NaN; the flag reports it
                if (v != 0.0) {
                    int exponent;
                    frexp(v, &exponent);
                    ++nonzeros;
                    exponent_sum += exponent;
                }
            }
        }
        partial_max[slot] = largest;
        partial_bad[slot] = bad;
        partial_nonzeros[slot] = nonzeros;
        partial_exponent_sums[slot] = exponent_sum;
        __syncthreads();
        if (threadIdx.x < tile_rows) {
            const int t = threadIdx.x;
            const long long finished = tile * tile_rows + t;
            double row_max = 0.0;
            int row_bad = 0;
            long long row_count = 0, row_sum = 0;
            for (int p = 0; p < parts; ++p) {
                row_max = fmax(row_max, partial_max[t * parts + p]);
                row_bad |= partial_bad[t * parts + p];
                row_count += partial_nonzeros[t * parts + p];
                row_sum += partial_exponent_sums[t * parts + p];
            }
            const int e = row_exponent_of_max(row_bad ? 0.0 : row_max, bits);
            if (finished < rows)
                for (int c = 0; c < width; ++c) exponents[finished * width + c] = e;
            found_bad |= row_bad;
            row_exponent[t] = e;
            row_nonzeros[t] = row_count;
            // sum of alpha over the nonzeros = count * e - sum of exponents
            row_center[t] = row_count ? floor_divide(row_count * e - row_sum, row_count) : 0;
        }
        __syncthreads();

        // pass 2: histograms of alpha and alpha - centre, sum of squares of x / 2^e. The loop's
        // trip count is the same for every thread (count_bin needs whole warps).
        const int e = row_exponent[row_in_tile];
        const long long center = row_center[row_in_tile];
        double squares = 0.0;
        for (long long first = 0; first < elements; first += parts) {
            const long long i = first + part;
            const bool present = row_ok && i < elements;
            for (int c = 0; c < width; ++c) {
                const double v = present ? r[i * element_step + c] : 0.0;
                int alpha_bin = NO_BIN, deviation_bin = NO_BIN;
                if (v != 0.0) {
                    int exponent;
                    frexp(v, &exponent);
                    const long long alpha = (long long)e - exponent;
                    alpha_bin = (int)clip(alpha, 0, CENTER_BINS - 1);
                    deviation_bin = (int)clip(alpha - center + SPAN_OFFSET, 0, SPAN_BINS - 1);
                    const double scaled = ldexp(v, -e);  // exact unless below 2^-1074 (numpy's too)
                    squares = fma(scaled, scaled, squares);
                }
                count_bin(alpha_counts, alpha_bin, lane);
                count_bin(deviation_counts, deviation_bin, lane);
            }
        }
        partial_squares[slot] = squares;
        __syncthreads();
        if (threadIdx.x < tile_rows && tile * tile_rows + threadIdx.x < rows && row_nonzeros[threadIdx.x] > 0) {
            const int t = threadIdx.x;
            double sum = 0.0;
            for (int p = 0; p < parts; ++p) sum += partial_squares[t * parts + p];
            const double norm = sqrt(sum);  // >= 127/512 on a row with a nonzero element
            const long long count = row_nonzeros[t];
            live_rows += 1;
            nonzeros_total += count;
            most_nonzeros = max(most_nonzeros, (unsigned long long)count);
            largest_norm = fmax(largest_norm, norm);
            atomicAdd(&totals[CENTERS_AT + clip(row_center[t], 0, CENTER_BINS - 1)], 1ull);
            atomicAdd(&totals[NORM_CENTERS_AT + clip(row_center[t] + nearest_log2(norm), 0, CENTER_BINS - 1)], 1ull);
        }
        // The next tile writes row_* only after its first __syncthreads, which the finishing
        // threads reach once they are done with these.
    }

    if (found_bad) atomicExch(nonfinite, 1);
    if (threadIdx.x < tile_rows && live_rows) {
        atomicAdd(&totals[LIVE_ROWS_AT], live_rows);
        atomicAdd(&totals[NONZEROS_AT], nonzeros_total);
        atomicMax(&totals[MOST_NONZEROS_AT], most_nonzeros);
        // norms are >= 0, so their bit patterns order like their values
        atomicMax(&totals[NORM_BITS_AT], (unsigned long long)__double_as_longlong(largest_norm));
    }
    __syncthreads();
    flush_counts(deviation_counts, SPAN_BINS, totals, DEVIATIONS_AT);
    flush_counts(alpha_counts, CENTER_BINS, totals, ALPHAS_AT);
}
