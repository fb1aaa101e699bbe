// The tile skeleton shared by the in-place gate kernels (ozaki_gate.cu: fused INT8 Ozaki-I;
// native_gate.cu: FP64 tensor cores; small_gate.cu: CUDA cores). They apply a K x K gate to every
// column of a flat complex128 state, where a column is the K amplitudes that differ only in the
// gate's target bits (TargetLayout). Work split: a warp owns a tile of 8 NT consecutive columns;
// lane (g, t) = (lane / 4, lane % 4) holds the amplitudes 4 j + t (slot j < SLOTS) of one column
// of each of its NT n-tiles, the B operand layout of the mma instructions (k index = amplitude).
// A persistent grid walks the tiles; with PREFETCH each lane copies the next tile's amplitudes it
// will own into the warp's shared stage (cp.async) while the current tile is computed. A warp
// reads its tile whole before writing it and tiles are disjoint, so out may alias x.
//
// Coalescing: state-index bit 0 is either the lowest target (lane bit t & 1 walks it) or the
// lowest non-target bit (the column's lowest bit, lane bit g or the thread index walks it), so
// every 32-byte sector a load instruction touches is used whole.
#pragma once
#include "async_copy.cuh"
#include "target_bits.cuh"

// Where the K amplitudes of column c sit in the flat state (target_bits.cuh: a packed INT8 launch
// puts its extra qubits on the top gate bits, wherever they sit in the state).
// A contiguous (L, K, R) view is the special case targets log2 R .. log2 R + D - 1: column
// l R + r starts at l K R + r and amplitude a lies a R after it.
// Both maps add over parts with disjoint bits:
// column(tile 2^s + j) = column(tile 2^s) + column(j) for j < 2^s, and likewise amplitude. The
// kernels pay one deposit per tile and look the in-tile parts up in AddressTables.
template <int K> struct TargetLayout {
    static constexpr int D = K >= 512 ? 9 : K >= 256 ? 8 : K >= 128 ? 7 : K >= 64 ? 6 : K >= 32 ? 5 : K >= 16 ? 4 : K >= 8 ? 3 : K >= 4 ? 2 : 1;
    static_assert(K == 1 << D, "K must be a power of two in 2..512");
    unsigned long long packed;     // target[i] in gate order
    unsigned long long ascending;  // the same fields sorted, for the deposit

    __device__ __forceinline__ explicit TargetLayout(unsigned long long packed_targets)
        : packed(packed_targets), ascending(sorted_fields(packed_targets))
    {
    }
    __device__ __forceinline__ static unsigned long long sorted_fields(unsigned long long fields)
    {
        int t[D];
#pragma unroll
        for (int i = 0; i < D; ++i) t[i] = packed_field(fields, i);
#pragma unroll
        for (int pass = 0; pass < D; ++pass)  // a sorting network: every index is known at compile time
#pragma unroll
            for (int i = 0; i + 1 < D; ++i) {
                const int low = min(t[i], t[i + 1]), high = max(t[i], t[i + 1]);
                t[i] = low;
                t[i + 1] = high;
            }
        unsigned long long sorted = 0;
#pragma unroll
        for (int i = 0; i < D; ++i) sorted |= (unsigned long long)t[i] << (6 * i);
        return sorted;
    }
    // Offset of column c's amplitude 0.
    __device__ __forceinline__ long long column(long long c) const { return column_offset(c, ascending, D); }
    // Offset of amplitude a (< K) from its column's amplitude 0.
    __device__ __forceinline__ long long amplitude(int a) const { return amplitude_offset(a, packed, D); }
};

// The in-tile parts of every address, in shared memory: amplitude(a) for a < K and column(j) for
// the j < COLUMNS columns of a tile. A lane's address is then the tile's base plus two table
// entries, and no per-target value stays in registers through a tile (the INT8 kernel runs at
// its register cap; offsets kept in registers made it spill). ADDRESS_TABLE_BYTES (K <= 64,
// COLUMNS <= 32) is what a kernel reserves; gemm_backend/target_layout.py has the same number.
#define ADDRESS_TABLE_BYTES 640
template <int K, int COLUMNS> struct AddressTables {
    long long amplitude[K];
    int column[COLUMNS];

    // Every thread of the block takes part; the caller synchronises before the tables are read.
    __device__ __forceinline__ void fill(const TargetLayout<K> &layout)
    {
        for (int i = threadIdx.x; i < K + COLUMNS; i += blockDim.x) {
            if (i < K)
                amplitude[i] = layout.amplitude(i);
            else
                column[i - K] = (int)layout.column(i - K);  // < 2^(5 + D): fits an int
        }
    }
};

// Calls body(tile, tile_base, v) for every tile of this warp: tile_base = column(tile * 8 NT)
// (the tile's column j lies tables.column[j] after it), v[nt][j] = amplitude 4 j + t of column
// tile * 8 NT + column_in_tile(nt) (zeros past the end or past K). stage: this warp's
// NT * SLOTS * 32 double2 of shared memory (used only with PREFETCH).
template <int K, int NT, int SLOTS, bool PREFETCH, class ColumnInTile, class Body>
__device__ __forceinline__ void for_each_tile(const double2 *x, long long n_columns, const TargetLayout<K> &layout,
                                              const AddressTables<K, 8 * NT> &tables, double2 *stage,
                                              ColumnInTile column_in_tile, Body body)
{
    constexpr int COLUMNS = 8 * NT;
    static_assert(sizeof(AddressTables<K, COLUMNS>) <= ADDRESS_TABLE_BYTES, "address tables too large");
    const int lane = threadIdx.x & 31, t = lane & 3, warps = blockDim.x >> 5;
    const long long n_tiles = (n_columns + COLUMNS - 1) / COLUMNS;
    const long long tile_step = (long long)gridDim.x * warps;
    long long tile = blockIdx.x * (long long)warps + (threadIdx.x >> 5);

    // returns the tile's base, column(tile_index * COLUMNS)
    auto fetch = [&](long long tile_index, double2 (&v)[NT][SLOTS], bool to_stage) {
        const long long tile_base = layout.column(tile_index * COLUMNS);
        const double2 *tile_start = x + tile_base;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
            const bool column_ok = tile_index < n_tiles && tile_index * COLUMNS + column_in_tile(nt) < n_columns;
            const double2 *column_start = tile_start + tables.column[column_in_tile(nt)];
#pragma unroll
            for (int j = 0; j < SLOTS; ++j) {
                const bool ok = column_ok && 4 * j + t < K;
                const double2 *source = ok ? column_start + tables.amplitude[ok ? 4 * j + t : 0] : x;
                if (to_stage)
                    copy_async_16(&stage[(nt * SLOTS + j) * 32 + lane], source, ok);
                else
                    v[nt][j] = ok ? __ldcs(source) : make_double2(0.0, 0.0);
            }
        }
        return tile_base;
    };

    double2 v[NT][SLOTS];
    if (PREFETCH) {
        fetch(tile, v, true);
        copy_async_commit();
    }
    for (; tile < n_tiles; tile += tile_step) {
        if (PREFETCH) {
            copy_async_wait<0>();
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int j = 0; j < SLOTS; ++j) v[nt][j] = stage[(nt * SLOTS + j) * 32 + lane];
            __syncwarp();
            fetch(tile + tile_step, v, true);  // lands while this tile is computed
            copy_async_commit();
            // the base again rather than a register held from the prefetch through the body
            body(tile, layout.column(tile * COLUMNS), v);
        } else {
            body(tile, fetch(tile, v, false), v);
        }
    }
    if (PREFETCH) copy_async_wait<0>();
}
