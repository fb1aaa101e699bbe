// The tile skeleton shared by the in-place gate kernels (ozaki_gate.cu: fused INT8 Ozaki-I;
// native_gate.cu: FP64 tensor cores). Both apply a K x K gate to the columns x[l, :, r] of a
// C-contiguous (L, K, R) complex128 view, column c = l R + r, and both split the work the same way:
// a warp owns a tile of 8 NT consecutive columns; lane (g, t) = (lane / 4, lane % 4) holds the
// amplitudes 4 j + t (slot j < SLOTS) of one column of each of its NT n-tiles, the B operand
// layout of the mma instructions (k index = amplitude). A persistent grid walks the tiles; with
// PREFETCH each lane copies the next tile's amplitudes it will own into the warp's shared stage
// (cp.async) while the current tile is computed. A warp reads its tile whole before writing it
// and tiles are disjoint, so out may alias x.
#pragma once

template <int K, class Pointer>
__device__ __forceinline__ Pointer column_base(Pointer x, long long column, int log2_right)
{
    const long long right = 1LL << log2_right;
    return x + (column >> log2_right) * K * right + (column & (right - 1));
}

__device__ __forceinline__ void copy_async_16(void *shared, const void *global, bool valid)
{
    const unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(global), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void copy_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// Calls body(tile, v) for every tile of this warp, v[nt][j] = amplitude 4 j + t of column
// tile * 8 NT + column_in_tile(nt) (zeros past the end or past K). stage: this warp's
// NT * SLOTS * 32 double2 of shared memory (used only with PREFETCH).
template <int K, int NT, int SLOTS, bool PREFETCH, class ColumnInTile, class Body>
__device__ __forceinline__ void for_each_tile(const double2 *x, long long n_columns, int log2_right, double2 *stage,
                                              ColumnInTile column_in_tile, Body body)
{
    constexpr int COLUMNS = 8 * NT;
    const int lane = threadIdx.x & 31, t = lane & 3, warps = blockDim.x >> 5;
    const long long right = 1LL << log2_right;
    const long long n_tiles = (n_columns + COLUMNS - 1) / COLUMNS;
    const long long tile_step = (long long)gridDim.x * warps;
    long long tile = blockIdx.x * (long long)warps + (threadIdx.x >> 5);

    auto fetch = [&](long long tile_index, double2 (&v)[NT][SLOTS], bool to_stage) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
            const long long column = tile_index * COLUMNS + column_in_tile(nt);
            const bool column_ok = tile_index < n_tiles && column < n_columns;
            const double2 *base = column_base<K>(x, column_ok ? column : 0, log2_right);
#pragma unroll
            for (int j = 0; j < SLOTS; ++j) {
                const int amplitude = 4 * j + t;
                const bool ok = column_ok && amplitude < K;
                const double2 *source = base + (ok ? amplitude : 0) * right;
                if (to_stage)
                    copy_async_16(&stage[(nt * SLOTS + j) * 32 + lane], source, ok);
                else
                    v[nt][j] = ok ? __ldcs(source) : make_double2(0.0, 0.0);
            }
        }
    };

    double2 v[NT][SLOTS];
    if (PREFETCH) {
        fetch(tile, v, true);
        copy_async_commit();
    }
    for (; tile < n_tiles; tile += tile_step) {
        if (PREFETCH) {
            copy_async_wait_all();
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int j = 0; j < SLOTS; ++j) v[nt][j] = stage[(nt * SLOTS + j) * 32 + lane];
            __syncwarp();
            fetch(tile + tile_step, v, true);  // lands while this tile is computed
            copy_async_commit();
        } else {
            fetch(tile, v, false);
        }
        body(tile, v);
    }
    if (PREFETCH) copy_async_wait_all();
}
