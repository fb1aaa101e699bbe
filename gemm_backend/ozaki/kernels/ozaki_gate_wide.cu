// Fused INT8 Ozaki-I gate for K = 64 .. 512 (gemm_backend/ozaki/gate.py): every column of the
// flat complex128 state (the K amplitudes at the gate's target bits, gate_tiles.cuh's
// TargetLayout) becomes U times itself, every amplitude read once and written once, no digit or
// partial product in global memory. The arithmetic is ozaki_gate.cu's (ozaki_digits.cuh), so
// the bits equal the numpy specification with the same plan: column exponent per column over its
// 2K reals, balanced base-256 digits of the scaled column, the plan's digit products exact in
// int32 per diagonal, chunks summed exactly, FP64 accumulation from the top chunk down.
//
// Why another kernel: at K >= 128 a column's digits no longer fit in a quad's registers, nor
// the gate's digits in shared memory. So a block owns a tile of NB columns at a time: it reads
// them (coalesced whichever bit is lowest), makes their digits straight into shared memory in
// mma B-fragment order, then each warp computes whole m-tiles (8 output amplitudes) for
// WARP_NT of the tile's n-tiles, reading the gate's digits (made once per gate, in
// ozaki_gate.cu's A-fragment order: amplitude 4 j + t of a k-tile in lane t) through L2, and
// writes them. The column digits are read from shared memory once per gate digit, the gate's
// once per state digit and n-tile of the warp. K = 64 (the fused kernel's largest size, whose
// gate digits sit in shared memory) runs here too, so that the two can be compared with wgmma.
//
// Launch parameters (gate.py's WideLaunch): NB columns per block tile, WARP_NT n-tiles per warp,
// QB gate digits held in registers at once, STAGED (the next tile copied in during the products),
// MIN_BLOCKS blocks per multiprocessor (2 caps the registers at 128), WGMMA: the products by
// warpgroups (wgmma_s8.cuh, sm_90a): four warps take four neighbouring m-tiles of the same
// columns, the column digits then sit in shared memory as wgmma's core matrices (the bytes of
// each mma B register move, not their content); IN_FLIGHT chunks of them at a time (1 or 2,
// warpgroup_products; 1 without WGMMA). Every shape gives the same bits: each diagonal's
// int32 sum is exact whatever the order of its products.

#include "gate_tiles.cuh"
#include "ozaki_digits.cuh"
#include "wgmma_s8.cuh"

// WIDE_WARPS (warps per block) and WIDE_TABLE_BYTES_PER_AMPLITUDE, _PER_COLUMN (the size of
// WideTables) come from gate.py (-D), which sizes the launch's shared memory with them.

// Shared memory of a block, after the column digits ([SX][KT][NB / 8][32] uint2).
template <int K, int NB> struct WideTables {
    long long amplitude[K];        // amplitude(a) of TargetLayout
    int column[NB];                // column(j) for the tile's columns j
    int gate_exponent[K];          // the exponent of output amplitude a's embedded rows
    int column_exponent[NB];       // per tile column, BAD_COLUMN for NaN or Inf
    unsigned long long largest[NB];  // bits of the column's largest |value| while it is found
};

// The mma column (B-fragment lane group g) that holds column c of an 8-column n-tile: the inverse
// of c = 4 (g & 1) + (g >> 1), so that lane t's two output columns 2 t, 2 t + 1 are tile columns
// t and 4 + t, and a store instruction of the warp covers 4 neighbouring columns.
__device__ __forceinline__ int mma_column_of(int c) { return 2 * (c & 3) + (c >> 2); }

// The amplitudes a thread digitises at a time: 16 kt + t + 4 j (j < 4) of tile column n, whose
// digits fill the two B-fragment registers of lane (mma column of n, t) in k-tile kt (b0: j = 0, 1;
// b1: j = 2, 3), so one 8-byte store per digit. Item i of the tile: lane bits (t, n % 8), then
// the n-tile, then the k-tile: a warp's 32 lanes write one whole 256-byte fragment row (no bank
// conflicts) and read 8 neighbouring columns x 4 neighbouring amplitudes (whole sectors whichever
// state bit is lowest).
struct QuadItem {
    int n, kt, t;
};
template <int NB> __device__ __forceinline__ QuadItem quad_item(int i)
{
    constexpr int NTB = NB / 8;
    return {8 * ((i >> 5) % NTB) + ((i >> 2) & 7), (i >> 5) / NTB, i & 3};
}
__device__ __forceinline__ int quad_amplitude(const QuadItem &item, int j) { return 16 * item.kt + item.t + 4 * j; }

// Copies this thread's items of the tile whose column 0 is tile_base (first column index
// first_column) into its stage slots (cp.async, one group; zeros past the last column). Out of
// line: inlined, its addresses stayed live into the product loop and spilled.
template <int NB, int ITEMS>
__device__ __noinline__ void stage_tile(const double2 *x, double2 *staged, long long tile_base, long long first_column,
                                        long long n_columns, const int *column, const long long *amplitude)
{
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
        const QuadItem item = quad_item<NB>(threadIdx.x + it * WIDE_WARPS * 32);
        const bool ok = first_column + item.n < n_columns;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const double2 *source = x + tile_base + column[item.n] + amplitude[quad_amplitude(item, j)];
            copy_async_16(&staged[(it * 4 + j) * WIDE_WARPS * 32 + threadIdx.x], ok ? source : x, ok);
        }
    }
    copy_async_commit();
}

// The plan's digit products of the warp's m-tile (mma.sync) into the diagonal sums: k-tile by
// k-tile, QB gate digits at a time in registers, each used for every state digit and n-tile.
// digits: the lane's B fragments of the warp's first n-tile at k-tile 0.
template <int KT, int MT, int NTB, int SX, int SG, int TMAX, int QB, int WARP_NT>
__device__ __forceinline__ void warp_products(int (&diagonal)[TMAX + 1][WARP_NT][4], const uint4 *gate_tile,
                                              const uint2 *digits)
{
#pragma unroll 1
    for (int kt = 0; kt < KT; ++kt) {
        const uint2 *digits_kt = digits + kt * NTB * 32;
#pragma unroll
        for (int q0 = 1; q0 <= SG; q0 += QB) {
            if (q0 + 1 > TMAX) continue;
            uint4 a[QB];
#pragma unroll
            for (int j = 0; j < QB; ++j)
                if (q0 + j <= SG && q0 + j + 1 <= TMAX)
                    a[j] = __ldg(gate_tile + ((long long)(q0 + j - 1) * MT * KT + kt) * 32);
#pragma unroll
            for (int p = 1; p <= SX; ++p) {
                if (p + q0 > TMAX) continue;
                uint2 b[WARP_NT];
#pragma unroll
                for (int nt = 0; nt < WARP_NT; ++nt) b[nt] = digits_kt[((p - 1) * KT * NTB + nt) * 32];
#pragma unroll
                for (int j = 0; j < QB; ++j) {
                    if (q0 + j > SG || p + q0 + j > TMAX) continue;
#pragma unroll
                    for (int nt = 0; nt < WARP_NT; ++nt) mma_s8(diagonal[p + q0 + j][nt], a[j], b[nt].x, b[nt].y);
                }
            }
        }
    }
}

// The plan's digit products of one m-tile round by the warpgroup (WGMMA), into the diagonal sums:
// k-tile by k-tile, QB gate digits at a time (a chunk), each times every state digit; the next
// chunk's gate digits are read from L2 while this chunk's products run. IN_FLIGHT 1: each chunk's
// products are waited for before the next chunk's are issued (one set of gate-digit registers
// and a landing set); 2: two register sets in turn, the next chunk issued while this one runs, so
// the tensor cores never drain between chunks (wgmma_wait<1> frees the set the chunk before read).
// tiles: the column digits of the warpgroup's first n-tile at k-tile 0 (core matrices, 64 words
// per n-tile).
template <int KT, int MT, int NTB, int SX, int SG, int TMAX, int QB, int WARP_NT, int IN_FLIGHT>
__device__ __forceinline__ void warpgroup_products(int (&diagonal)[TMAX + 1][WARP_NT][4], const uint4 *gate_tile,
                                                   const unsigned *tiles)
{
    static_assert(IN_FLIGHT == 1 || IN_FLIGHT == 2, "one or two chunks of products in flight");
    static_assert(KT % 2 == 0, "k-tiles in pairs (two register sets in turn)");
    constexpr int LAST_Q = SG < TMAX - 1 ? SG : TMAX - 1;  // gate digits with a product in the plan
    constexpr int CHUNKS = (LAST_Q + QB - 1) / QB;
    auto load = [&](uint4 (&a)[QB], int kt, int chunk) {
#pragma unroll
        for (int j = 0; j < QB; ++j)
            if (chunk * QB + j < LAST_Q) a[j] = __ldg(gate_tile + ((long long)(chunk * QB + j) * MT * KT + kt) * 32);
    };
    auto issue = [&](const uint4 (&a)[QB], int kt, int chunk) {
        const unsigned *tiles_kt = tiles + kt * NTB * 64;
        const int q0 = 1 + chunk * QB;
        wgmma_fence<WARP_NT>();
#pragma unroll
        for (int p = 1; p <= SX; ++p)
#pragma unroll
            for (int j = 0; j < QB; ++j)
                if (q0 + j <= LAST_Q && p + q0 + j <= TMAX)
                    wgmma_s8<WARP_NT>(diagonal[p + q0 + j], a[j], tiles_kt + (p - 1) * KT * NTB * 64);
        wgmma_commit<WARP_NT>();
    };
    if constexpr (IN_FLIGHT == 1) {
        uint4 a[QB], next[QB];
        load(a, 0, 0);
#pragma unroll 1
        for (int kt = 0; kt < KT; ++kt) {
#pragma unroll
            for (int chunk = 0; chunk < CHUNKS; ++chunk) {
                issue(a, kt, chunk);
                const bool more = chunk + 1 < CHUNKS || kt + 1 < KT;
                if (more) load(next, chunk + 1 < CHUNKS ? kt : kt + 1, chunk + 1 < CHUNKS ? chunk + 1 : 0);
                wgmma_wait<0>();
                if (more)
#pragma unroll
                    for (int j = 0; j < QB; ++j) a[j] = next[j];
            }
        }
    } else {
        // chunk c of the round (c = CHUNKS kt + chunk) reads set c % 2: with kt even, step % 2
        uint4 a[2][QB];
        load(a[0], 0, 0);
#pragma unroll 1
        for (int kt = 0; kt < KT; kt += 2) {
#pragma unroll
            for (int step = 0; step < 2 * CHUNKS; ++step) {
                issue(a[step % 2], kt + step / CHUNKS, step % CHUNKS);
                wgmma_wait<1>();  // the chunk before is done: its set takes the next chunk's digits
                if (step + 1 < 2 * CHUNKS)
                    load(a[(step + 1) % 2], kt + (step + 1) / CHUNKS, (step + 1) % CHUNKS);
                else if (kt + 2 < KT)
                    load(a[0], kt + 2, 0);
            }
        }
        wgmma_wait<0>();
    }
}

template <int K, int SX, int SG, int TOP, unsigned long long CHUNK_TOPS, int NB, int WARP_NT, int QB, bool STAGED,
          int MIN_BLOCKS, bool WGMMA, int IN_FLIGHT>
__global__ void __launch_bounds__(WIDE_WARPS * 32, MIN_BLOCKS)
ozaki_gate_wide(const double2 *x, double2 *out, long long n_columns, unsigned long long targets,
                const uint4 *__restrict__ gate, const int *__restrict__ gate_exponents, int *__restrict__ nonfinite)
{
    using Shape = GateShape<K>;
    constexpr int KT = Shape::KT, MT = Shape::MT, NTB = NB / 8;
    constexpr int ITEMS = NB * K / 4 / (WIDE_WARPS * 32);  // items (4 amplitudes) per thread and tile
    constexpr int HELD_MAX = MIN_BLOCKS > 1 ? 1 : 4;  // items held in registers (half the register file: one)
    constexpr int HELD = ITEMS < HELD_MAX ? ITEMS : HELD_MAX;
    // warps (WGMMA: warpgroups) that share one m-tile's (warpgroup: four m-tiles') columns
    constexpr int WARPS_PER_MT = NTB / WARP_NT;
    constexpr int MT_UNIT = WGMMA ? 4 : 1, UNITS = WIDE_WARPS / MT_UNIT;
    constexpr int TMAX = TOP < SX + SG ? TOP : SX + SG;
    static_assert(K == 64 || K == 128 || K == 256 || K == 512, "the wide kernel takes K = 64 .. 512");
    static_assert(NB % (8 * WARP_NT) == 0 && UNITS % WARPS_PER_MT == 0, "warps tile the block's columns");
    static_assert(WIDE_WARPS % MT_UNIT == 0 && MT % (MT_UNIT * UNITS / WARPS_PER_MT) == 0,
                  "whole warpgroups, every warp of one through the same m-tile rounds");
    static_assert((NB * K / 4) % (WIDE_WARPS * 32) == 0, "whole items per thread");

    // [SX][KT][NTB][32]: lane (g, t) of n-tile nt, registers b0, b1 (WGMMA: 256 bytes per n-tile
    // as core matrices, wgmma_s8.cuh)
    extern __shared__ uint2 column_digits[];
    auto &tables = *(WideTables<K, NB> *)(column_digits + SX * KT * NTB * 32);
    // STAGED: the next tile's amplitudes, copied in (cp.async) while this tile's products run;
    // amplitude j of thread i's item it at [it][j][i], so that each thread reads back only what it
    // copied and a warp's reads are conflict-free
    double2 *staged = (double2 *)((char *)&tables + sizeof(WideTables<K, NB>));
    static_assert(sizeof(WideTables<K, NB>) == WIDE_TABLE_BYTES_PER_AMPLITUDE * K + WIDE_TABLE_BYTES_PER_COLUMN * NB,
                  "gate.py sizes the tables as they are");
    static_assert(sizeof(WideTables<K, NB>) % 16 == 0, "the stage is 16-byte aligned");
    const TargetLayout<K> layout(targets);
    for (int i = threadIdx.x; i < K; i += blockDim.x) {
        tables.amplitude[i] = layout.amplitude(i);
        tables.gate_exponent[i] = gate_exponents[i];
    }
    for (int i = threadIdx.x; i < NB; i += blockDim.x) tables.column[i] = (int)layout.column(i);
    __syncthreads();

    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, warp = threadIdx.x >> 5;
    // the warp's m-tiles and n-tiles: with unit = warp (WGMMA: warpgroup), m-tile
    // MT_UNIT (unit / WARPS_PER_MT) (+ the warp in its warpgroup), MT_UNIT UNITS / WARPS_PER_MT
    // more each round, n-tiles WARP_NT (unit % WARPS_PER_MT) ..
    const int unit = warp / MT_UNIT;
    const int first_mt = MT_UNIT * (unit / WARPS_PER_MT) + warp % MT_UNIT, mt_step = MT_UNIT * UNITS / WARPS_PER_MT;
    const int first_nt = WARP_NT * (unit % WARPS_PER_MT);
    int found_bad = 0;
    const long long n_tiles = (n_columns + NB - 1) / NB;
    auto stage = [&](long long tile_index) {
        if (tile_index < n_tiles)
            stage_tile<NB, ITEMS>(x, staged, layout.column(tile_index * NB), tile_index * NB, n_columns, tables.column,
                                  tables.amplitude);
    };
    if (STAGED) stage(blockIdx.x);
    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const long long tile_base = layout.column(tile * NB);
        // read: every item of this thread, and the columns' largest |value|
        for (int i = threadIdx.x; i < NB; i += blockDim.x) tables.largest[i] = 0;
        if (STAGED) copy_async_wait<0>();
        __syncthreads();
        // unstaged, the first HELD items stay in registers until their digits are made, the rest
        // (K = 256, or two blocks per multiprocessor) are read again then, from L2
        auto load_item = [&](int it, double2 (&values)[4], bool again) {
            const QuadItem item = quad_item<NB>(threadIdx.x + it * WIDE_WARPS * 32);
            const bool ok = tile * NB + item.n < n_columns;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                if (STAGED) {
                    values[j] = staged[(it * 4 + j) * WIDE_WARPS * 32 + threadIdx.x];
                } else {
                    const double2 *source = x + tile_base + tables.column[item.n] + tables.amplitude[quad_amplitude(item, j)];
                    values[j] = !ok ? make_double2(0.0, 0.0) : it < HELD || again ? __ldcs(source) : __ldcg(source);
                }
            }
        };
        double2 v[HELD][4];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const QuadItem item = quad_item<NB>(threadIdx.x + it * WIDE_WARPS * 32);
            double2 read[4];
            load_item(it, it < HELD ? v[it < HELD ? it : 0] : read, false);
            const double2 (&values)[4] = it < HELD ? v[it < HELD ? it : 0] : read;
            // the quad (t = 0..3) holds 16 amplitudes of one column
            const unsigned long long largest = quad_max_abs_bits(values, 0, 4);
            if (item.t == 0) atomicMax(&tables.largest[item.n], largest);
        }
        __syncthreads();
        for (int i = threadIdx.x; i < NB; i += blockDim.x) {
            tables.column_exponent[i] = column_exponent_of_max_bits(tables.largest[i]);
            found_bad |= tables.column_exponent[i] == BAD_COLUMN && tile * NB + i < n_columns;
        }
        __syncthreads();
        // digits: y = x 2^(8 SX - e), then both B-fragment registers of each digit
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const QuadItem item = quad_item<NB>(threadIdx.x + it * WIDE_WARPS * 32);
            double2 read[4];
            if (it >= HELD) load_item(it, read, true);
            const double2 (&values)[4] = it < HELD ? v[it < HELD ? it : 0] : read;
            double parts[2][4] = {{values[0].x, values[0].y, values[1].x, values[1].y},
                                  {values[2].x, values[2].y, values[3].x, values[3].y}};
            scale_for_digits<SX>(tables.column_exponent[item.n], [&](auto scale) {
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int i = 0; i < 4; ++i) parts[h][i] = scale(parts[h][i]);
            });
            unsigned words[2][SX];
            digit_fragment_words<SX>(parts[0], words[0]);
            digit_fragment_words<SX>(parts[1], words[1]);
            // the 256 bytes of this item's n-tile and k-tile (digit 1), and its mma lane (item_g, t)
            uint2 *n_tile = &column_digits[(item.kt * NTB + (item.n >> 3)) * 32];
            const int item_g = mma_column_of(item.n & 7);
            if constexpr (WGMMA) {
#pragma unroll
                for (int p = 0; p < SX; ++p)
#pragma unroll
                    for (int half = 0; half < 2; ++half)
                        ((unsigned *)n_tile)[p * KT * NTB * 64 + core_word_offset(item_g, item.t, half) / 4] = words[half][p];
            } else {
#pragma unroll
                for (int p = 0; p < SX; ++p)
                    n_tile[p * KT * NTB * 32 + 4 * item_g + item.t] = make_uint2(words[0][p], words[1][p]);
            }
        }
        if (WGMMA) fence_shared_for_wgmma();
        __syncthreads();
        if (STAGED) stage(tile + gridDim.x);  // this thread has read its own stage slots

        // products: per m-tile of this warp, the plan's digit pairs for its WARP_NT n-tiles
#pragma unroll 1
        for (int mt = first_mt; mt < MT; mt += mt_step) {
            int diagonal[TMAX + 1][WARP_NT][4];
            clear_diagonals(diagonal);
            const uint4 *gate_tile = gate + (long long)mt * KT * 32 + lane;
            if constexpr (WGMMA)
                warpgroup_products<KT, MT, NTB, SX, SG, TMAX, QB, WARP_NT, IN_FLIGHT>(
                    diagonal, gate_tile, (const unsigned *)(column_digits + first_nt * 32));
            else
                warp_products<KT, MT, NTB, SX, SG, TMAX, QB, WARP_NT>(diagonal, gate_tile,
                                                                      column_digits + first_nt * 32 + lane);
            double acc[WARP_NT][4];
            accumulate_chunks<TMAX, CHUNK_TOPS, WARP_NT>(diagonal, acc);

            // C fragment: acc[nt][half] = Re, acc[nt][2 + half] = Im of amplitude 8 mt + g in mma
            // column 2 t + half, which is column 4 half + t of n-tile first_nt + nt
            const int amplitude = 8 * mt + g;
            const int gate_exponent = tables.gate_exponent[amplitude];
            double2 *amplitude_out = out + tile_base + tables.amplitude[amplitude];
#pragma unroll
            for (int nt = 0; nt < WARP_NT; ++nt)
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const int column = 8 * (first_nt + nt) + 4 * half + t;
                    const int column_exponent = tables.column_exponent[column];
                    if (tile * NB + column >= n_columns || column_exponent == BAD_COLUMN) continue;
                    const int k = column_exponent + gate_exponent;
                    __stcs(amplitude_out + tables.column[column],
                           make_double2(scale_by(acc[nt][half], k), scale_by(acc[nt][2 + half], k)));
                }
        }
        __syncthreads();  // the next tile's digits overwrite this one's
    }
    if (STAGED) copy_async_wait<0>();
    if (found_bad) *nonfinite = 1;
}
