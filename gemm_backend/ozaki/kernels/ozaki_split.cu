// Row scales and balanced INT8 digits for the Ozaki scheme; the numpy twin is
// gemm_backend/ozaki_split.py and both must give the same bits. Every kernel gives one warp to a
// row of a row-major float64 matrix x (rows, cols) whose rows start row_stride elements apart; the
// lanes walk the columns, so loads are coalesced. Only correctly rounded operations touch values
// (fabs, frexp, ldexp, rint, integer shifts), so results do not depend on compiler contractions.

#include "column_exponents.cuh"
#include "row_warps.cuh"

#define FLOAT64_SIGNIFICAND_BITS 53
#define SUBNORMAL_BOTTOM_EXPONENT 1074
#define SHIFT_LIMIT 63

// exponents[i] = the row exponent of max_j |x_ij| (0 for an all-zero row); *nonfinite = 1 when
// any element is NaN or Inf.
extern "C" __global__ void ozaki_row_exponents(const double *__restrict__ x, long long rows, int cols,
                                               long long row_stride, int bits, int *__restrict__ exponents,
                                               int *__restrict__ nonfinite)
{
    const int lane = threadIdx.x & 31;
    for (long long row = global_warp(); row < rows; row += warp_count()) {
        int bad;
        const double max_abs = warp_row_max(x + row * row_stride, cols, lane, bad);
        if (lane == 0) {
            exponents[row] = row_exponent_of_max(bad ? 0.0 : max_abs, bits);
            if (bad) *nonfinite = 1;
        }
    }
}

// hist[n] += number of nonzero x_ij needing n bits below the row scale:
// min(e_i - exponent(x_ij) + 53, e_i + 1074), clamped to n_bins - 1. Counted per block in
// shared memory (n_bins * 4 bytes of dynamic shared memory), then added to hist.
extern "C" __global__ void ozaki_needed_bits_histogram(const double *__restrict__ x, long long rows, int cols,
                                                       long long row_stride, const int *__restrict__ exponents,
                                                       int n_bins, unsigned long long *__restrict__ hist)
{
    extern __shared__ unsigned int block_hist[];
    for (int i = threadIdx.x; i < n_bins; i += blockDim.x) block_hist[i] = 0;
    __syncthreads();
    const int lane = threadIdx.x & 31;
    for (long long row = global_warp(); row < rows; row += warp_count()) {
        const double *r = x + row * row_stride;
        const int e = exponents[row];
        for (int j = lane; j < cols; j += 32) {
            const double v = r[j];
            if (v == 0.0) continue;
            int exponent;
            frexp(v, &exponent);
            int needed = min(e - exponent + FLOAT64_SIGNIFICAND_BITS, e + SUBNORMAL_BOTTOM_EXPONENT);
            needed = min(max(needed, 0), n_bins - 1);
            atomicAdd(&block_hist[needed], 1u);
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n_bins; i += blockDim.x)
        if (block_hist[i]) atomicAdd(&hist[i], (unsigned long long)block_hist[i]);
}

// Digits 1..n_slices of every row under its row exponent (ozaki_split.split_rows), each written
// to every placement listed for it: placements placement_starts[p-1] .. placement_starts[p]-1
// of digit p put element (i, j) at
//     out[group_starts[q] * rows + i * row_lengths[q] + column_offsets[q] + j].
// Columns cols..padded_cols-1 are written as zeros (k padding for the INT8 GEMM).
extern "C" __global__ void ozaki_split_rows(const double *__restrict__ x, long long rows, int cols, int padded_cols,
                                            long long row_stride, const int *__restrict__ exponents, int bits,
                                            int n_slices, const int *__restrict__ placement_starts,
                                            const long long *__restrict__ group_starts,
                                            const long long *__restrict__ row_lengths,
                                            const long long *__restrict__ column_offsets,
                                            signed char *__restrict__ out)
{
    const int lane = threadIdx.x & 31;
    const long long mask = (1LL << bits) - 1, half = 1LL << (bits - 1), base = 1LL << bits;
    for (long long row = global_warp(); row < rows; row += warp_count()) {
        const double *r = x + row * row_stride;
        const int e = exponents[row];
        for (int j = lane; j < padded_cols; j += 32) {
            // X = rint(x 2^(s b - e)) = sign * significand * 2^low_zeros, exactly
            const double integer = rint(ldexp(j < cols ? r[j] : 0.0, n_slices * bits - e));
            int exponent;
            const double fraction = frexp(fabs(integer), &exponent);
            const bool big = exponent > FLOAT64_SIGNIFICAND_BITS;
            const int low_zeros = big ? exponent - FLOAT64_SIGNIFICAND_BITS : 0;
            const long long significand = big ? (long long)ldexp(fraction, FLOAT64_SIGNIFICAND_BITS)
                                              : (long long)fabs(integer);
            const long long sign = integer < 0.0 ? -1 : 1;
            long long carry = 0;
            for (int p = n_slices; p >= 1; --p) {  // plain digits to balanced ones, least significant first
                const int shift = (n_slices - p) * bits - low_zeros;
                const long long plain =
                    (shift >= 0 ? significand >> min(shift, SHIFT_LIMIT) : significand << min(-shift, bits)) & mask;
                long long digit = sign * plain + carry;
                carry = (digit >= half) - (digit < -half);
                digit -= carry * base;
                for (int q = placement_starts[p - 1]; q < placement_starts[p]; ++q)
                    out[group_starts[q] * rows + row * row_lengths[q] + column_offsets[q] + j] = (signed char)digit;
            }
        }
    }
}
