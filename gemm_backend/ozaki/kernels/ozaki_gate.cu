// Fused INT8 Ozaki-I gate: every column of the flat complex128 state (the K amplitudes at the
// gate's target bits, gate_tiles.cuh's TargetLayout) becomes U times itself, every amplitude read
// once and written once (gemm_backend/ozaki_gate.py). The arithmetic
// is the specification of gemm_backend/ozaki_split.py and ozaki_plan.py, with A = the state
// columns (SX digits, b = 8) and B = the gate (SG digits, precomputed in mma fragment order):
//   column exponent e   (row rule of ozaki_split.py over the column's 2K reals; in a packed
//                        kernel, GROUP < K, over each of its K / GROUP small columns)
//   X = rint(x 2^(8 SX - e)), balanced base-256 digits = bytes of (X + 0x80..80) xor 0x80
//   D_t = sum_{p + q = t} (digits_p . gate_q)    exact int32 (mma.sync m16n8k32 s8 x s8 -> s32)
//   chunks of diagonals combined exactly in int32, acc += V * 2^(-8 t_top), out = acc * 2^(e + f)
// so its bits equal the numpy path's. The plan (SX, SG, TOP and the chunk tops, a bit mask) is
// compiled in: every loop over digit pairs unrolls to exactly the products the plan keeps.
//
// Work split: the tile skeleton of gate_tiles.cuh (a warp owns 8 NT columns; blocks of up to 8
// warps, a persistent grid, optional cp.async prefetch). mma "n" = column, "k" = embedded input
// index (permuted: lane t of a quad owns amplitudes 4j + t), "m" = embedded output row (m-tile mt
// holds amplitudes 8 mt + g, Re in rows g, Im in rows g + 8). The column digits live in
// registers; the gate fragments in shared memory.

#include "column_exponents.cuh"
#include "gate_tiles.cuh"
#include "ozaki_digits.cuh"

// MAX_WARPS_PER_BLOCK (the launch's most warps, its __launch_bounds__) comes from gate.py (-D).

// The column this lane loads for its n-tile (mma column n = g): sigma(n) = 4 (n & 1) + (n >> 1),
// so that the stores (columns 2t and 2t + 1 of each lane) cover 4 consecutive columns per half.
__device__ __forceinline__ int load_column(int g) { return 4 * (g & 1) + (g >> 1); }

template <int K, int GROUP, int SX, int SG, int TOP, unsigned long long CHUNK_TOPS, int NT, bool PREFETCH,
          int MIN_BLOCKS>
__global__ void __launch_bounds__(MAX_WARPS_PER_BLOCK * 32, MIN_BLOCKS)
ozaki_gate(const double2 *x, double2 *out, long long n_columns, unsigned long long targets, const uint4 *__restrict__ gate,
           const int *__restrict__ gate_exponents, int *__restrict__ nonfinite)
{
    using Shape = GateShape<K>;
    constexpr int KT = Shape::KT, MT = Shape::MT, SLOTS = Shape::SLOTS, COLUMNS = 8 * NT;
    // GROUP < K: a packed kernel column holds K / GROUP columns of a GROUP x GROUP gate (the gate
    // passed in is I (x) U), each with its own exponent, so the bits are those of the small gate;
    // a group is GROUP / 4 whole slots of a quad
    constexpr int GROUPS = K / GROUP, GROUP_SLOTS = GROUPS == 1 ? SLOTS : GROUP / 4;
    static_assert(GROUP == K || (GROUP >= 4 && GROUP < K), "a packed group is whole slots");
    constexpr int TMAX = TOP < SX + SG ? TOP : SX + SG;
    extern __shared__ uint4 shared[];
    uint4 *gate_shared = shared;  // [SG][MT][KT][32]
    int *exponents_shared = (int *)(gate_shared + SG * MT * KT * 32);
    auto &tables = *(AddressTables<K, COLUMNS> *)(exponents_shared + 64);
    double2 *staged = (double2 *)((char *)&tables + ADDRESS_TABLE_BYTES);  // per warp [NT][SLOTS][32]
    const TargetLayout<K> layout(targets);
    for (int i = threadIdx.x; i < SG * MT * KT * 32; i += blockDim.x) gate_shared[i] = gate[i];
    for (int i = threadIdx.x; i < K; i += blockDim.x) exponents_shared[i] = gate_exponents[i];
    tables.fill(layout);
    __syncthreads();

    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, warp = threadIdx.x >> 5;
    double2 *my_stage = staged + warp * NT * SLOTS * 32;
    int found_bad = 0;
    auto column_in_tile = [g](int nt) { return nt * 8 + load_column(g); };
    for_each_tile<K, NT, SLOTS, PREFETCH>(x, n_columns, layout, tables, my_stage, column_in_tile,
                                          [&](long long tile, long long tile_base, double2 (&v)[NT][SLOTS]) {
        // column exponents (a quad holds one column), then the digits, transposed into mma B fragments
        int exponent[NT][GROUPS];
        unsigned digits[SX][KT][2][NT];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int q = 0; q < GROUPS; ++q) {
                exponent[nt][q] = column_exponent_of_max_bits(quad_max_abs_bits(v[nt], q * GROUP_SLOTS, GROUP_SLOTS));
                scale_for_digits<SX>(exponent[nt][q], [&](auto scale) {
#pragma unroll
                    for (int j = q * GROUP_SLOTS; j < (q + 1) * GROUP_SLOTS; ++j)
                        v[nt][j] = make_double2(scale(v[nt][j].x), scale(v[nt][j].y));
                });
            }
#pragma unroll
            for (int kt = 0; kt < KT; ++kt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    // B register bytes: Re, Im of slot 4 kt + 2 h, then Re, Im of the next slot
                    const int slot = 4 * kt + 2 * h;
                    const double parts[4] = {v[nt][slot].x, v[nt][slot].y, v[nt][slot + 1].x, v[nt][slot + 1].y};
                    unsigned words[SX];
                    digit_fragment_words<SX>(parts, words);
#pragma unroll
                    for (int p = 0; p < SX; ++p) digits[p][kt][h][nt] = words[p];
                }
        }

        // the exponents of this lane's store columns 4 half + t of each n-tile, and which exist
        // (a packed kernel fetches them per m-tile instead: only the groups of its 8 amplitudes)
        int store_exponent[NT][2];
        unsigned store_ok = 0;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                if constexpr (GROUPS == 1)
                    store_exponent[nt][half] = __shfl_sync(0xffffffffu, exponent[nt][0], 4 * (2 * t + half));
                store_ok |= (tile * COLUMNS + nt * 8 + 4 * half + t < n_columns) << (2 * nt + half);
            }

        // per m-tile: the plan's digit products, exact int32 chunks, FP64 accumulation, one store
#pragma unroll 1
        for (int mt = 0; mt < MT; ++mt) {
            const uint4 *gate_tile = gate_shared + mt * KT * 32 + lane;
            // D_t in its own int32 accumulators for every diagonal t: each gate fragment (q, kt) is
            // read from shared memory once and used for every p, on all n-tiles
            int diagonal[TMAX + 1][NT][4];
            clear_diagonals(diagonal);
#pragma unroll
            for (int q = 1; q <= SG; ++q) {
                if (q + 1 > TMAX) continue;
#pragma unroll
                for (int kt = 0; kt < KT; ++kt) {
                    const uint4 a = gate_tile[((q - 1) * MT * KT + kt) * 32];
#pragma unroll
                    for (int p = 1; p <= SX; ++p) {
                        if (p + q > TMAX) continue;
#pragma unroll
                        for (int nt = 0; nt < NT; ++nt)
                            mma_s8(diagonal[p + q][nt], a, digits[p - 1][kt][0][nt], digits[p - 1][kt][1][nt]);
                    }
                }
            }
            double acc[NT][4];
            accumulate_chunks<TMAX, CHUNK_TOPS, NT>(diagonal, acc);

            // C fragment: acc[nt][half] = Re, acc[nt][2 + half] = Im of amplitude 8 mt + g in mma
            // column 2 t + half, which is state column 4 half + t of the n-tile
            const int amplitude = 8 * mt + g;
            const int gate_exponent = exponents_shared[amplitude < K ? amplitude : 0];
            if constexpr (GROUPS > 1) {
                // amplitudes 8 mt .. 8 mt + 7 lie in groups 8 mt / GROUP + c, c < CANDIDATES; the
                // column's quad sends each candidate, this lane keeps its amplitude's
                constexpr int CANDIDATES = GROUP >= 8 ? 1 : 8 / GROUP;
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                    for (int c = 0; c < CANDIDATES; ++c) {
                        int sent = exponent[nt][0];
#pragma unroll
                        for (int q = 1; q < GROUPS; ++q)
                            if (q == 8 * mt / GROUP + c) sent = exponent[nt][q];
#pragma unroll
                        for (int half = 0; half < 2; ++half) {
                            const int received = __shfl_sync(0xffffffffu, sent, 4 * (2 * t + half));
                            if (c == (g % 8) / GROUP) store_exponent[nt][half] = received;
                        }
                    }
            }
            double2 *amplitude_start = out + tile_base + tables.amplitude[amplitude < K ? amplitude : 0];
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    if (amplitude >= K || !((store_ok >> (2 * nt + half)) & 1u)) continue;
                    const int column_exponent = store_exponent[nt][half];
                    if (column_exponent == BAD_COLUMN) {
                        found_bad = 1;
                        continue;
                    }
                    const int k = column_exponent + gate_exponent;
                    const double2 value = make_double2(scale_by(acc[nt][half], k), scale_by(acc[nt][2 + half], k));
                    __stcs(amplitude_start + tables.column[nt * 8 + 4 * half + t], value);
                }
        }
    });
    if (found_bad) *nonfinite = 1;
}
