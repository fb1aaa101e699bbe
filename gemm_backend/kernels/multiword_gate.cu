// Fused fp16x2 gate: every column of the flat complex128 state (the K amplitudes at the gate's
// target bits, gate_tiles.cuh's TargetLayout) becomes U times itself, every amplitude read once
// and written once (gemm_backend/multiword_gate.py). The arithmetic is that of the fp16x2 GEMM
// (gemm_backend/multiword.py) with A = the state's columns and B = U^T:
//   column shift s = word_exponent - e, 2^(e-1) <= max |Re|, |Im| of the column < 2^e
//   high = fp16(x 2^s), low = fp16((x 2^s - high) 2^low_shift)       (round to nearest, from FP64)
//   per block of BLOCK input amplitudes: P_b = (gate high) . (column high) on the tensor cores
//       (mma.sync m16n8k16 f16 x f16 -> f32, products exact, FP32 accumulation inside the block)
//   cross = (gate low) . (column high) + (gate high) . (column low), one FP32 accumulation over K
//   acc = P_0 + P_1 + ... in Acc (float or double, round to nearest, in block order),
//   acc += cross 2^-low_shift, out = acc 2^-(s + gate shift of the output amplitude)
// The words, the block sums and the scaling are the same operations in the same order as the
// CPU path, so they give its bits; the FP32 sums inside the tensor cores have no specified order
// or rounding, so P_b and cross (and what follows) agree with the CPU's within its error bound.
//
// Work split: the tile skeleton of gate_tiles.cuh (a warp owns 8 NT columns; blocks of up to 8
// warps, a persistent grid). mma "n" = column, "k" = embedded input (k-tile kt holds amplitudes
// 8 kt .. 8 kt + 7: mma k = 2 t + part is amplitude 8 kt + t, k = 8 + 2 t + part is 8 kt + 4 + t,
// which are the lane's slots 2 kt and 2 kt + 1), "m" = embedded output (m-tile mt holds
// amplitudes 8 mt + g, Re in rows g, Im in rows g + 8). Column words live in registers; the
// gate's high and low words in shared memory, in A fragment order.
//
// Packed (GROUP < K): a kernel column holds K / GROUP columns of a GROUP x GROUP gate U, told
// apart by the top gate bits (packing qubits), and the gate is I (x) U. Each group (amplitudes
// GROUP q .. GROUP q + GROUP - 1: whole slots of a quad) has its own column shift, so every
// word and product is the small gate's; the tile pairs of different groups are zero and are
// skipped, and the rest add exact zeros only, so the results are the unpacked kernel's bits
// (the mma k-tiles are used whole: a 4 x 4 gate alone leaves three quarters of them padding).

#include "gate_tiles.cuh"

// MAX_WARPS_PER_BLOCK (the launch's most warps, its __launch_bounds__) and SHIFT_TABLE_INTS (the
// gate's shifts, one per output amplitude) come from multiword_gate.py (-D).

template <int K> struct HalfGateShape {
    static constexpr int TILES = (K + 7) / 8;  // k-tiles = m-tiles, 8 amplitudes each
    static constexpr int SLOTS = 2 * TILES;    // amplitude slots per lane (amplitude 4 j + t)
};

// 2^k as a double, for k in -1074..1023 (subnormal powers included).
__device__ __forceinline__ double exact_power_of_two(int k)
{
    return k >= -1022 ? __longlong_as_double((long long)(k + 1023) << 52) : __longlong_as_double(1LL << (k + 1074));
}

// x 2^k rounded once, as numpy's ldexp: one multiplication where 2^k is a double, else ldexp.
__device__ __noinline__ double ldexp_out_of_line(double x, int k) { return ldexp(x, k); }
__device__ __forceinline__ double times_power_of_two(double x, int k)
{
    return k >= -1074 && k <= 1023 ? x * exact_power_of_two(k) : ldexp_out_of_line(x, k);
}

// fp16 words as bit patterns; cvt rounds FP64 -> fp16 to nearest even in one step, like numpy.
// Compiled for the host, the harness's conversions (tests/host_cuda/multiword_gate_host.cpp), as
// for mma_f16.
__device__ __forceinline__ unsigned half_bits(double v)
{
#ifdef __CUDA_ARCH__
    unsigned short h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(v));
    return h;
#else
    return host_half_bits(v);
#endif
}
__device__ __forceinline__ double half_value(unsigned bits)
{
#ifdef __CUDA_ARCH__
    double v;
    asm("cvt.f64.f16 %0, %1;" : "=d"(v) : "h"((unsigned short)bits));
    return v;
#else
    return host_half_value(bits);
#endif
}

// The high and low words of one scaled amplitude as f16x2 registers, Re in the low half (the
// element of the lower mma k index).
__device__ __forceinline__ void split_amplitude(double re, double im, double low_scale, unsigned &high, unsigned &low)
{
    const unsigned high_re = half_bits(re), high_im = half_bits(im);
    const unsigned low_re = half_bits((re - half_value(high_re)) * low_scale);
    const unsigned low_im = half_bits((im - half_value(high_im)) * low_scale);
    high = high_re | (high_im << 16);
    low = low_re | (low_im << 16);
}

__device__ __forceinline__ void mma_f16(float (&d)[4], const uint4 &a, unsigned b0, unsigned b1)
{
#ifdef __CUDA_ARCH__
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
#else
    host_mma_f16(d, a, b0, b1);
#endif
}

// Round-to-nearest sums and products that the compiler may not contract into an fma, so that
// acc + cross 2^-low_shift is rounded as numpy rounds it (a product, then a sum).
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// Blocks of BLOCK amplitudes against k-tiles of 8: the first and last k-tile of block b, whether
// k-tile kt lies in block b whole (its amplitudes below K), and the first block k-tile kt meets.
template <int K, int BLOCK> struct BlockTiles {
    static constexpr int COUNT = (K + BLOCK - 1) / BLOCK;
    __host__ __device__ static constexpr int first_tile(int b) { return b * BLOCK / 8; }
    __host__ __device__ static constexpr int end(int b) { return (b + 1) * BLOCK < K ? (b + 1) * BLOCK : K; }
    __host__ __device__ static constexpr int last_tile(int b) { return (end(b) - 1) / 8; }
    __host__ __device__ static constexpr bool whole(int b, int kt)
    {
        return 8 * kt >= b * BLOCK && (8 * kt + 8 < K ? 8 * kt + 8 : K) <= end(b);
    }
    __host__ __device__ static constexpr bool first_block_of(int b, int kt) { return kt * 8 / BLOCK == b; }
};

// x, out: flat states (out may be x); n_columns: columns of K amplitudes; targets: packed six
// bits each (target_layout.py); gate: [2 words][TILES m-tiles][TILES k-tiles][32 lanes] A
// fragments, word 0 high, word 1 low; gate_shift: (K,) shift of each output amplitude's row of U.
// A column (a group, packed) holding NaN or Inf is left as it was and sets *nonfinite.
// GROUP: the gate's size (K unpacked); BLOCK: input amplitudes per block. A packed kernel is one
// block of K (its gate one block of GROUP: the sums of a group are then its own, plus zeros).
template <int K, int GROUP, int BLOCK, typename Acc, int NT, int MIN_BLOCKS>
__global__ void __launch_bounds__(MAX_WARPS_PER_BLOCK * 32, MIN_BLOCKS)
multiword_gate(const double2 *x, double2 *out, long long n_columns, unsigned long long targets,
               const uint4 *__restrict__ gate, const int *__restrict__ gate_shift, int word_exponent, int low_shift,
               int *__restrict__ nonfinite)
{
    using Shape = HalfGateShape<K>;
    using Blocks = BlockTiles<K, BLOCK>;
    constexpr int TILES = Shape::TILES, SLOTS = Shape::SLOTS, COLUMNS = 8 * NT;
    constexpr int GROUPS = K / GROUP, GROUP_SLOTS = GROUPS == 1 ? SLOTS : GROUP / 4;
    // m-tile mt and k-tile kt hold amplitudes of a common group iff 8 mt / SPAN == 8 kt / SPAN
    constexpr int SPAN = GROUP > 8 ? GROUP : 8;
    static_assert(K <= SHIFT_TABLE_INTS && NT >= 1 && NT <= 4 && BLOCK >= 1, "unsupported kernel shape");
    static_assert(GROUP == K || (GROUP >= 4 && GROUPS <= 4 && K % GROUP == 0 && BLOCK == K),
                  "a packed group is whole slots of one block");
    extern __shared__ uint4 shared[];
    uint4 *gate_shared = shared;
    int *shift_shared = (int *)(gate_shared + 2 * TILES * TILES * 32);
    auto &tables = *(AddressTables<K, COLUMNS> *)(shift_shared + SHIFT_TABLE_INTS);
    const TargetLayout<K> layout(targets);
    for (int i = threadIdx.x; i < 2 * TILES * TILES * 32; i += blockDim.x) gate_shared[i] = gate[i];
    for (int i = threadIdx.x; i < K; i += blockDim.x) shift_shared[i] = gate_shift[i];
    tables.fill(layout);
    __syncthreads();

    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const double low_scale = exact_power_of_two(low_shift);
    const Acc low_weight = (Acc)exact_power_of_two(-low_shift);
    int found_bad = 0;
    // mma column n = g loads tile column 4 (n & 1) + (n >> 1), so that the stores (mma columns
    // 2 t and 2 t + 1) cover 4 consecutive tile columns per half
    auto column_in_tile = [g](int nt) { return nt * 8 + 4 * (g & 1) + (g >> 1); };
    for_each_tile<K, NT, SLOTS, false>(x, n_columns, layout, tables, nullptr, column_in_tile,
                                       [&](long long tile, long long tile_base, double2 (&v)[NT][SLOTS]) {
        // column (group) shifts (a quad holds one column), then the words as mma B fragments
        int shift[NT][GROUPS], bad[NT][GROUPS];
        unsigned high[NT][TILES][2], low[NT][TILES][2];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int q = 0; q < GROUPS; ++q) {
                double max_abs = 0.0;
                int finite = 1;
#pragma unroll
                for (int j = q * GROUP_SLOTS; j < (q + 1) * GROUP_SLOTS; ++j) {
                    const double re = fabs(v[nt][j].x), im = fabs(v[nt][j].y);
                    finite &= re <= 1.7976931348623157e308 && im <= 1.7976931348623157e308;  // false for NaN
                    max_abs = fmax(max_abs, fmax(re, im));
                }
                max_abs = fmax(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, 1));
                max_abs = fmax(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, 2));
                finite &= __shfl_xor_sync(0xffffffffu, finite, 1);
                finite &= __shfl_xor_sync(0xffffffffu, finite, 2);
                int exponent;
                frexp(max_abs, &exponent);  // exponent 0 for a zero column
                bad[nt][q] = !finite;
                shift[nt][q] = finite ? word_exponent - exponent : 0;
            }
#pragma unroll
            for (int kt = 0; kt < TILES; ++kt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int q = (2 * kt + h) / GROUP_SLOTS;
                    // a packed group's NaN or Inf would reach its tile neighbours through the
                    // zeros of I (x) U (0 * NaN = NaN): its words become zeros (it is not stored)
                    const double2 value = GROUPS > 1 && bad[nt][q] ? make_double2(0.0, 0.0) : v[nt][2 * kt + h];
                    const int s = shift[nt][q];
                    split_amplitude(times_power_of_two(value.x, s), times_power_of_two(value.y, s), low_scale,
                                    high[nt][kt][h], low[nt][kt][h]);
                }
        }

        // the shifts of this lane's store columns (mma column 2 t + half is tile column 4 half + t)
        // per group, and which of them exist and are finite: bit (2 nt + half) GROUPS + q
        int store_shift[NT][2][GROUPS];
        unsigned store_ok = 0;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int source = 4 * (2 * t + half);
                const bool exists = tile * COLUMNS + nt * 8 + 4 * half + t < n_columns;
#pragma unroll
                for (int q = 0; q < GROUPS; ++q) {
                    store_shift[nt][half][q] = __shfl_sync(0xffffffffu, shift[nt][q], source);
                    const int column_bad = __shfl_sync(0xffffffffu, bad[nt][q], source);
                    found_bad |= exists && column_bad;
                    store_ok |= (unsigned)(exists && !column_bad) << ((2 * nt + half) * GROUPS + q);
                }
            }

#pragma unroll 1
        for (int mt = 0; mt < TILES; ++mt) {
            const uint4 *high_tile = gate_shared + mt * TILES * 32 + lane;
            const uint4 *low_tile = gate_shared + (TILES + mt) * TILES * 32 + lane;
            Acc acc[NT][4];
            float cross[NT][4];
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    acc[nt][i] = 0;
                    cross[nt][i] = 0.0f;
                }
#pragma unroll
            for (int b = 0; b < Blocks::COUNT; ++b) {
                float part[NT][4];
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) part[nt][i] = 0.0f;
#pragma unroll
                for (int kt = Blocks::first_tile(b); kt <= Blocks::last_tile(b); ++kt) {
                    if (GROUPS > 1 && 8 * mt / SPAN != 8 * kt / SPAN) continue;  // a zero tile of I (x) U
                    const uint4 a_high = high_tile[kt * 32];
                    // a k-tile shared by blocks: each block's mma sees only its own amplitudes
                    const bool keep0 = Blocks::whole(b, kt) || (8 * kt + t) / BLOCK == b;
                    const bool keep1 = Blocks::whole(b, kt) || (8 * kt + 4 + t) / BLOCK == b;
#pragma unroll
                    for (int nt = 0; nt < NT; ++nt)
                        mma_f16(part[nt], a_high, keep0 ? high[nt][kt][0] : 0u, keep1 ? high[nt][kt][1] : 0u);
                    if (Blocks::first_block_of(b, kt)) {
                        const uint4 a_low = low_tile[kt * 32];
#pragma unroll
                        for (int nt = 0; nt < NT; ++nt) {
                            mma_f16(cross[nt], a_low, high[nt][kt][0], high[nt][kt][1]);
                            mma_f16(cross[nt], a_high, low[nt][kt][0], low[nt][kt][1]);
                        }
                    }
                }
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[nt][i] = add_rn(acc[nt][i], (Acc)part[nt][i]);
            }

            // C fragment: [half] = Re, [2 + half] = Im of amplitude 8 mt + g in mma column 2 t + half
            const int amplitude = 8 * mt + g;
            const int amplitude_shift = shift_shared[amplitude < K ? amplitude : 0];
            const int group = GROUPS == 1 ? 0 : (amplitude < K ? amplitude : 0) / GROUP;
            double2 *amplitude_start = out + tile_base + tables.amplitude[amplitude < K ? amplitude : 0];
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    if (amplitude >= K || !((store_ok >> ((2 * nt + half) * GROUPS + group)) & 1u)) continue;
                    int column_shift = store_shift[nt][half][0];
#pragma unroll
                    for (int q = 1; q < GROUPS; ++q)
                        if (q == group) column_shift = store_shift[nt][half][q];  // registers, not local memory
                    const int k = -(column_shift + amplitude_shift);
                    const Acc re = add_rn(acc[nt][half], mul_rn((Acc)cross[nt][half], low_weight));
                    const Acc im = add_rn(acc[nt][2 + half], mul_rn((Acc)cross[nt][2 + half], low_weight));
                    const double2 value = make_double2(times_power_of_two((double)re, k),
                                                       times_power_of_two((double)im, k));
                    __stcs(amplitude_start + tables.column[nt * 8 + 4 * half + t], value);
                }
        }
    });
    if (found_bad) *nonfinite = 1;
}
