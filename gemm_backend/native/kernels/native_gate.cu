// FP64 tensor-core gate, in place: every column of the flat complex128 state (the K amplitudes
// at the gate's target bits, gate_tiles.cuh's TargetLayout) becomes U times itself, every
// amplitude read once and written once (gemm_backend/native_gate.py).
// The complex product is the real one of the embedded matrices:
//   [Re o]   [Ur  -Ui] [Re i]
//   [Im o] = [Ui   Ur] [Im i]       (4 K^2 real FMAs per column, as in ZGEMM)
// on mma.sync f64 (DMMA), m16n8k4 or m16n8k8 (MMA_K): "n" = column, "k" = embedded input (Re, then
// Im of the amplitudes 4 j + t that lane t of a quad holds: two k4 steps, or the two halves of one
// k8 step), "m" = embedded output (m-tile mt: rows g = Re, rows g + 8 = Im of amplitude 8 mt + g).
// So the accumulator of a lane holds whole complex outputs: (d0, d2) of column 2 t, (d1, d3) of
// column 2 t + 1, for amplitude 8 mt + g.
// The tiles, loads and prefetch are the skeleton of gate_tiles.cuh, shared with the INT8 kernel.
// The gate sits in shared memory as (Ur, Ui) pairs in fragment order; the Im k-step's A operand
// (-Ui, Ur) is made from the same pair.

#include "gate_tiles.cuh"

// MAX_WARPS_PER_BLOCK (the launch's most warps, its __launch_bounds__) comes from native/gate.py (-D).

// d += A b for A 16 x 4 (this lane: a0 = A[g][t], a1 = A[g + 8][t]), B 4 x 8 (b = B[t][g]),
// D 16 x 8 (d0, d1 = D[g][2t], D[g][2t + 1]; d2, d3 = D[g + 8][2t], D[g + 8][2t + 1]). Compiled for
// the host, the harness's emulation (tests/host_cuda/native_gate_host.cpp), as for mma_f64_k8.
__device__ __forceinline__ void mma_f64(double (&d)[4], double a0, double a1, double b)
{
#ifdef __CUDA_ARCH__
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a0), "d"(a1), "d"(b));
#else
    host_mma_f64_k8(d, a0, a1, 0.0, 0.0, b, 0.0);
#endif
}

// The same for A 16 x 8 (a0, a1, a2, a3 = A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4]) and
// B 8 x 8 (b0, b1 = B[t][g], B[t + 4][g]).
__device__ __forceinline__ void mma_f64_k8(double (&d)[4], double a0, double a1, double a2, double a3, double b0,
                                           double b1)
{
#ifdef __CUDA_ARCH__
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(b0), "d"(b1));
#else
    host_mma_f64_k8(d, a0, a1, a2, a3, b0, b1);
#endif
}

template <int K, int NT, bool PREFETCH, int MIN_BLOCKS, int MMA_K>
__global__ void __launch_bounds__(MAX_WARPS_PER_BLOCK * 32, MIN_BLOCKS)
native_gate(const double2 *x, double2 *out, long long n_columns, unsigned long long targets,
            const double2 *__restrict__ gate)
{
    static_assert(K >= 8 && (K & (K - 1)) == 0, "K must be a power of two >= 8");
    static_assert(MMA_K == 4 || MMA_K == 8, "MMA_K is 4 or 8");
    constexpr int MT = K / 8, SLOTS = K / 4;
    extern __shared__ double2 shared[];
    double2 *gate_shared = shared;                   // [MT][SLOTS][32]: (Ur, Ui)[8 mt + g][4 j + t]
    auto &tables = *(AddressTables<K, 8 * NT> *)(gate_shared + MT * SLOTS * 32);
    double2 *staged = (double2 *)((char *)&tables + ADDRESS_TABLE_BYTES);  // per warp [NT][SLOTS][32]
    const TargetLayout<K> layout(targets);
    for (int i = threadIdx.x; i < MT * SLOTS * 32; i += blockDim.x) gate_shared[i] = gate[i];
    tables.fill(layout);
    __syncthreads();

    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, warp = threadIdx.x >> 5;
    auto column_in_tile = [g](int nt) { return nt * 8 + g; };
    for_each_tile<K, NT, SLOTS, PREFETCH>(
        x, n_columns, layout, tables, staged + warp * NT * SLOTS * 32, column_in_tile,
        [&](long long tile, long long tile_base, double2 (&v)[NT][SLOTS]) {
            unsigned store_ok = 0;  // bit 2 nt + half: that output column exists
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int half = 0; half < 2; ++half)
                    store_ok |= (tile * 8 * NT + nt * 8 + 2 * t + half < n_columns) << (2 * nt + half);
#pragma unroll 1
            for (int mt = 0; mt < MT; ++mt) {
                double acc[NT][4];
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0;
                const double2 *gate_row = gate_shared + mt * SLOTS * 32 + lane;
#pragma unroll
                for (int j = 0; j < SLOTS; ++j) {
                    const double2 u = gate_row[j * 32];
#pragma unroll
                    for (int nt = 0; nt < NT; ++nt) {
                        if constexpr (MMA_K == 8) {
                            mma_f64_k8(acc[nt], u.x, u.y, -u.y, u.x, v[nt][j].x, v[nt][j].y);
                        } else {
                            mma_f64(acc[nt], u.x, u.y, v[nt][j].x);
                            mma_f64(acc[nt], -u.y, u.x, v[nt][j].y);
                        }
                    }
                }
                double2 *amplitude_start = out + tile_base + tables.amplitude[8 * mt + g];
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                    for (int half = 0; half < 2; ++half)
                        if ((store_ok >> (2 * nt + half)) & 1u)
                            __stcs(amplitude_start + tables.column[nt * 8 + 2 * t + half],
                                   make_double2(acc[nt][half], acc[nt][2 + half]));
            }
        });
}
