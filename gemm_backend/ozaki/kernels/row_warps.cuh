// One warp per row of a row-major float64 matrix: the grid-stride walk over the rows and the row
// maximum, shared by the row kernels of Ozaki-I (ozaki_split.cu) and Ozaki-II (ozaki_crt.cu).
#pragma once

#ifndef FULL_MASK
#define FULL_MASK 0xffffffffu
#endif

__device__ __forceinline__ long long global_warp() { return (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; }
__device__ __forceinline__ long long warp_count() { return ((long long)gridDim.x * blockDim.x) >> 5; }

// max_j |r_j| over a row of cols values, on every lane of the warp; bad (on every lane): some
// value is NaN or Inf (fmax skips NaN, so the maximum alone would not tell). The lanes walk the
// columns, so loads are coalesced; every lane of the warp must take part.
__device__ __forceinline__ double warp_row_max(const double *r, int cols, int lane, int &bad)
{
    double largest = 0.0;
    int lane_bad = 0;
    for (int j = lane; j < cols; j += 32) {
        const double magnitude = fabs(r[j]);
        lane_bad |= !isfinite(magnitude);
        largest = fmax(largest, magnitude);
    }
    for (int offset = 16; offset; offset >>= 1) largest = fmax(largest, __shfl_xor_sync(FULL_MASK, largest, offset));
    bad = __any_sync(FULL_MASK, lane_bad);
    return largest;
}
