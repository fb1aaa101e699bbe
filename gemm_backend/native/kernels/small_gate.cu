// Dense K x K complex gate on every column of a flat complex128 state, column = the K amplitudes
// at the gate's target bits (gate_tiles.cuh's TargetLayout): column <- U @ column, for small K,
// where cuBLAS launches are dominated by overhead (design brief section 3). Each column is read
// into registers before any output of it is written, and columns are disjoint, so out may alias
// x: the gate is applied in place without a second state buffer. U is row-major (K, K).

#include "gate_tiles.cuh"

// Writes U @ v through store(i, value) for output i. v holds the whole input column in registers,
// so store may write the column v was read from; no second K-array is kept (it would spill at
// K = 32).
template <int K, class Store>
__device__ __forceinline__ void multiply_column(const double2 *u, const double2 (&v)[K], Store store)
{
    // Two rows at a time give four independent FMA chains; unrolling all rows lets the compiler
    // hoist all of U into registers and spill (measured: 16 KB of stack at K = 32).
    constexpr int ROWS = K >= 2 ? 2 : 1;
#pragma unroll 1
    for (int i = 0; i < K; i += ROWS) {
        double re[ROWS], im[ROWS];
#pragma unroll
        for (int j = 0; j < ROWS; ++j) {
            re[j] = 0.0;
            im[j] = 0.0;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
#pragma unroll
            for (int j = 0; j < ROWS; ++j) {
                const double2 a = u[(i + j) * K + k];
                re[j] = fma(a.x, v[k].x, re[j]);
                re[j] = fma(-a.y, v[k].y, re[j]);
                im[j] = fma(a.x, v[k].y, im[j]);
                im[j] = fma(a.y, v[k].x, im[j]);
            }
        }
#pragma unroll
        for (int j = 0; j < ROWS; ++j) store(i + j, make_double2(re[j], im[j]));
    }
}

// One thread per column. With the lowest target at bit 5 or above, a warp's 32 consecutive
// columns are one contiguous 512-byte run for each of the K loads: coalesced without staging.
// Below that a load instruction uses every sector it touches only partly (the other amplitudes of
// the same sectors follow in the next loads, from L1).
template <int K>
__global__ void apply_small_gate_direct(const double2 *x, double2 *out, const double2 *__restrict__ u,
                                        long long n_columns, unsigned long long targets)
{
    __shared__ double2 u_shared[K * K];
    __shared__ long long amplitude_offset[K];  // layout.amplitude(k), looked up rather than rebuilt per column
    const TargetLayout<K> layout(targets);
    for (int i = threadIdx.x; i < K * K; i += blockDim.x) u_shared[i] = u[i];
    for (int i = threadIdx.x; i < K; i += blockDim.x) amplitude_offset[i] = layout.amplitude(i);
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x; c < n_columns; c += stride) {
        const long long base = layout.column(c);
        double2 v[K];
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = x[base + amplitude_offset[k]];
        multiply_column<K>(u_shared, v, [&](int i, double2 value) { out[base + amplitude_offset[i]] = value; });
    }
}

// Contiguous targets log2 R .. log2 R + log2 K - 1 with R < TILE, i.e. the C-contiguous (L, K, R)
// view: a tile of TILE consecutive columns covers TILE / R whole groups l, one contiguous span of
// TILE * K elements. It is staged through shared memory so that global
// loads and stores are coalesced; rows are padded by one element against bank conflicts.
template <int K, int TILE>
__global__ void apply_small_gate_staged(const double2 *x, double2 *out, const double2 *__restrict__ u,
                                        long long n_columns, int log2_right)
{
    __shared__ double2 u_shared[K * K];
    __shared__ double2 tile[TILE * (K + 1)];
    for (int i = threadIdx.x; i < K * K; i += blockDim.x) u_shared[i] = u[i];
    const int right = 1 << log2_right;
    const int log2_group = log2_right + __ffs(K) - 1;  // elements per group l: K * R
    const long long n_tiles = n_columns / TILE;
    for (long long t = blockIdx.x; t < n_tiles; t += gridDim.x) {
        const long long span_start = t * TILE * K;
        __syncthreads();
        for (int e = threadIdx.x; e < TILE * K; e += blockDim.x) {
            const int group = e >> log2_group, k = (e >> log2_right) & (K - 1), r = e & (right - 1);
            tile[(group * right + r) * (K + 1) + k] = x[span_start + e];
        }
        __syncthreads();
        for (int col = threadIdx.x; col < TILE; col += blockDim.x) {
            double2 v[K];
#pragma unroll
            for (int k = 0; k < K; ++k) v[k] = tile[col * (K + 1) + k];
            multiply_column<K>(u_shared, v, [&](int i, double2 value) { tile[col * (K + 1) + i] = value; });
        }
        __syncthreads();
        for (int e = threadIdx.x; e < TILE * K; e += blockDim.x) {
            const int group = e >> log2_group, k = (e >> log2_right) & (K - 1), r = e & (right - 1);
            out[span_start + e] = tile[(group * right + r) * (K + 1) + k];
        }
    }
}
