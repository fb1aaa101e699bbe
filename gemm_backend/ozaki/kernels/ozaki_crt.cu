// Ozaki-II (Chinese remainder) kernels: row scales, int8 residues and the CRT reconstruction.
// The numpy specification is gemm_backend/crt.py; these kernels compute the same exact integers
// and round them once, so they give the same bits (the arithmetic and its exactness proofs:
// crt_arith.cuh).
#include "async_copy.cuh"
#include "crt_arith.cuh"
#include "mma_s8.cuh"
#include "row_warps.cuh"
#include "target_bits.cuh"  // column_offset, amplitude_offset

#define SCALE_BITS 16
// The reconstruction kernels' registers are capped for 4 blocks of 256 threads per multiprocessor:
// at 70 registers (3 blocks) their loads' latency showed (0.85 against 0.45 ms for 8192 x 1024
// outputs on the H100, BENCHMARKS.md round 16).
#define RECONSTRUCT_BLOCKS_PER_SM 4

// ceil(|v| 2^(16 - e)), at least 1 for v != 0: a value's term in a row scale's sum of squares.
__device__ __forceinline__ double scale_ceiling(double magnitude, int e)
{
    double q = ceil(ldexp(magnitude, SCALE_BITS - e));
    if (q == 0.0 && magnitude > 0.0) q = 1.0;
    return q;
}

// The scale of a finite row from its maximum |x| and its sum of squared ceilings (crt.row_scales).
__device__ __forceinline__ int row_scale_of(int e, double squares, int bits)
{
    int bit_length;
    frexp(fmax(squares - 1.0, 0.0), &bit_length);
    return squares > 0.0 ? bits - e + SCALE_BITS - (bit_length + 1) / 2 : 0;
}

// crt.row_scales, one warp per row of x (rows, cols), rows row_stride elements apart.
// scales[i] = bits - e + 16 - v (0 for an all-zero row), e the frexp exponent of the row maximum,
// v the least integer with 4^v >= sum_j ceil(|x_ij| 2^(16 - e))^2 (each ceiling at least 1 for
// x_ij != 0). *nonfinite = 1 when the rows hold NaN or Inf.
extern "C" __global__ void crt_row_scales(const double *__restrict__ x, long long rows, int cols, long long row_stride,
                                          int bits, int *__restrict__ scales, int *__restrict__ nonfinite)
{
    const int lane = threadIdx.x & 31;
    for (long long row = global_warp(); row < rows; row += warp_count()) {
        const double *r = x + row * row_stride;
        int bad;
        const double largest = warp_row_max(r, cols, lane, bad);
        if (bad) {
            if (lane == 0) {
                scales[row] = 0;
                *nonfinite = 1;
            }
            continue;
        }
        int e;
        frexp(largest, &e);
        double squares = 0.0;  // integers below 2^51: exact in any order
        for (int j = lane; j < cols; j += 32) {
            const double q = scale_ceiling(fabs(r[j]), e);
            squares += q * q;
        }
        for (int offset = 16; offset; offset >>= 1) squares += __shfl_xor_sync(FULL_MASK, squares, offset);
        if (lane == 0) scales[row] = row_scale_of(e, squares, bits);
    }
}

// The low bytes of V values (V = 1, or 4 as one little-endian word) at slot.
template <int V> __device__ __forceinline__ void store_low_bytes(signed char *slot, const unsigned (&v)[V])
{
    if constexpr (V == 1)
        *slot = (signed char)v[0];
    else
        *(unsigned *)slot = __byte_perm(__byte_perm(v[0], v[1], 0x0040), __byte_perm(v[2], v[3], 0x0040), 0x5410);
}

// The residues of V adjacent elements (V = 1, or 4 written as one word per modulus and part at a
// 4-byte aligned slot) modulo every modulus, as int8 at slot[(l * parts + g) * padded]: element j
// real (digits[j][0]) or complex (Re, Im and Re + Im, or on Gaussian moduli Re + i_p Im and
// Re - i_p Im). parts: 1 (real), 3 (Karatsuba) or 2 (Gaussian).
template <int WORDS, int V>
__device__ __forceinline__ void write_residues(const Digits (&digits)[V][2], int parts, const ResidueModulus *table,
                                               int n_moduli, signed char *slot, int padded)
{
    const long long step = (long long)parts * padded;
    for (int l = 0; l < n_moduli; ++l, slot += step) {
        const ResidueModulus c = table[l];
        unsigned first[V], second[V], third[V];
        if (parts == 2) {
#pragma unroll
            for (int j = 0; j < V; ++j) turned_residues<WORDS>(digits[j], c, first[j], second[j]);
            store_low_bytes<V>(slot, first);
            store_low_bytes<V>(slot + padded, second);
            continue;
        }
#pragma unroll
        for (int j = 0; j < V; ++j) first[j] = digit_residue<WORDS>(digits[j][0], c);
        if (parts == 1) {
            store_low_bytes<V>(slot, first);
            continue;
        }
#pragma unroll
        for (int j = 0; j < V; ++j) {
            second[j] = digit_residue<WORDS>(digits[j][1], c);
            third[j] = sum_residue(first[j], second[j], c);
        }
        store_low_bytes<V>(slot, first);
        store_low_bytes<V>(slot + padded, second);
        store_low_bytes<V>(slot + 2 * padded, third);
    }
}

// The residues of one element (re, and im when complex) of a row scaled by `scale`, at `slot`
// (write_residues).
__device__ __forceinline__ void element_residues(double re, double im, bool is_complex, const RowScale &scale,
                                                 int parts, const ResidueModulus *table, int n_moduli,
                                                 signed char *slot, int padded)
{
    Digits digits[1][2] = {};
    digits[0][0] = scaled_digits(re, scale);
    if (is_complex) digits[0][1] = scaled_digits(im, scale);
    if (digits[0][0].wide || digits[0][1].wide)
        write_residues<3>(digits, parts, table, n_moduli, slot, padded);
    else
        write_residues<2>(digits, parts, table, n_moduli, slot, padded);
}

// crt.residues, one warp per row: out[row * out_stride + (l * parts + g) * padded + h] is the
// residue modulo p_l of part g (parts = 3: Re, Im, Re + Im for complex rows; 2: Re + i_p Im,
// Re - i_p Im on Gaussian moduli; 1: the value of a real row) of element h of
// trunc(2^scales[row] x[row]); columns width..padded-1 are written as zeros. x rows hold `width`
// elements: real, or complex as interleaved (re, im) float64. moduli, root_table: the n_moduli <=
// MAX_MODULI moduli and their i_p as float64 (crt.CrtPlan.p, root: zeros unless Gaussian).
extern "C" __global__ void crt_residues(const double *__restrict__ x, long long rows, int width, int padded,
                                        long long row_stride, int parts, const int *__restrict__ scales,
                                        int n_moduli, const double *__restrict__ moduli,
                                        const double *__restrict__ root_table, signed char *__restrict__ out,
                                        long long out_stride)
{
    __shared__ ResidueModulus table[MAX_MODULI];
    load_residue_moduli(table, moduli, root_table, n_moduli);  // synchronises the block
    const int is_complex = parts > 1;
    const int lane = threadIdx.x & 31;
    for (long long row = global_warp(); row < rows; row += warp_count()) {
        const double *r = x + row * row_stride;
        const RowScale scale(scales[row]);
        signed char *o = out + row * out_stride;
        // Element h's parts (zeros in the padding), each read two iterations ahead of its use, so
        // that the loads' latency passes under the residues of the elements before (the rows are
        // read once: one read ahead measured 0.37 ms for 8192 rows of 1024, two 0.34, none 0.44).
        auto part_of = [&](int h, int part) {
            return h < width && part <= is_complex ? r[is_complex ? 2 * h + part : h] : 0.0;
        };
        double next[2] = {part_of(lane, 0), part_of(lane, 1)};
        double after[2] = {part_of(lane + 32, 0), part_of(lane + 32, 1)};
        for (int h = lane; h < padded; h += 32) {
            const double value[2] = {next[0], next[1]};
            next[0] = after[0];
            next[1] = after[1];
            after[0] = part_of(h + 64, 0);
            after[1] = part_of(h + 64, 1);
            element_residues(value[0], value[1], is_complex, scale, parts, table, n_moduli, o + h, padded);
        }
    }
}

// The block's reconstruction constants in shared memory: every modulus's (and, on Gaussian moduli,
// its Im constants) and 1/M; every thread of the block calls it.
struct ReconstructTables {
    const ReconstructModulus *table, *im_table;
    const double *product_limbs;
    double inv_product;
};
// Inlined, so that the tables' loads are known to be shared-memory loads.
__device__ __forceinline__ ReconstructTables load_reconstruct_tables(int parts, int n_moduli, const double *moduli,
                                                                     const double *inverses, const double *im_inverses,
                                                                     int n_limbs, const double *partial_limbs,
                                                                     const double *product_limbs)
{
    __shared__ ReconstructModulus table[MAX_MODULI], im_table[MAX_MODULI];
    __shared__ double inv_product;
    if (parts == 2 && threadIdx.x < n_moduli)  // load_reconstruct_moduli synchronises the block
        im_table[threadIdx.x] = reconstruct_modulus((int)moduli[threadIdx.x], (int)im_inverses[threadIdx.x],
                                                    partial_limbs + threadIdx.x * n_limbs, n_limbs);
    load_reconstruct_moduli(table, &inv_product, moduli, inverses, partial_limbs, product_limbs, n_moduli, n_limbs);
    return {table, im_table, product_limbs, inv_product};
}

// A thread's outputs in a grid-stride loop over a tile of `cols` columns: flat index, row and
// column, the row and column stepped without a 64-bit division per output. (first, step): the
// loop's first index and its stride, the thread's own and the grid's threads by default.
struct TilePosition {
    long long index, row, index_step, row_step;
    int col, col_step, cols;

    __device__ explicit TilePosition(int columns)
        : TilePosition(columns, blockIdx.x * (long long)blockDim.x + threadIdx.x, (long long)gridDim.x * blockDim.x)
    {
    }

    __device__ TilePosition(int columns, long long first, long long step) : cols(columns)
    {
        index = first;
        index_step = step;
        row = index / cols;
        col = (int)(index - row * cols);
        row_step = index_step / cols;
        col_step = (int)(index_step - row_step * cols);
    }

    __device__ void next()
    {
        index += index_step;
        row += row_step;
        col += col_step;
        if (col >= cols) {
            col -= cols;
            ++row;
        }
    }
};

// crt.CrtAccumulator for every output of a tile (crt_reconstruct's loop, for LIMBS limbs).
template <int LIMBS, class Product>
__device__ void reconstruct_tile(const Product *__restrict__ products, long long rows, int cols, int parts,
                                 int n_moduli, const ReconstructModulus *table, const ReconstructModulus *im_table,
                                 const double *product_limbs, double inv_product, const int *row_scales,
                                 const int *col_scales, double *out, long long out_stride)
{
    const long long count = rows * cols;
    const int is_complex = parts > 1;
    for (TilePosition at(cols); at.index < count; at.next()) {
        CrtSums<LIMBS> sums[1];
        add_products<LIMBS, 1, false, Product>(sums, products + at.index, count, parts, n_moduli, table, im_table);
        double *o = out + at.row * out_stride + (long long)at.col * (1 + is_complex);
        double im;
        sums[0].finish(product_limbs, inv_product, -(row_scales[at.row] + col_scales[at.col]), is_complex, o[0], im);
        if (is_complex) o[1] = im;
    }
}

// crt.CrtAccumulator for every output of a tile: products (n_moduli * parts, rows, cols), int32
// (crt_reconstruct) or int8 residues (crt_reconstruct_residues, from crt_products.cu) (parts = 3:
// P1, P2, P3 of Karatsuba; 2: P+, P- on Gaussian moduli; 1: the real product), modulus by modulus.
// out element (i, c) is written at out[i * out_stride + c * n_out + part] for its n_out = 1 (real)
// or 2 (re, im) parts. Tables as crt.CrtPlan: moduli p, inverses y (Gaussian: re_inverse),
// im_inverses (Gaussian only), partial_limbs (n_moduli, n_limbs), product_limbs (n_limbs,), n_limbs
// in 2..MAX_LIMBS.
template <class Product>
__device__ __forceinline__ void reconstruct_products(const Product *__restrict__ products, long long rows, int cols,
                                                     int parts, int n_moduli, const double *__restrict__ moduli,
                                                     const double *__restrict__ inverses,
                                                     const double *__restrict__ im_inverses, int n_limbs,
                                                     const double *__restrict__ partial_limbs,
                                                     const double *__restrict__ product_limbs,
                                                     const int *__restrict__ row_scales,
                                                     const int *__restrict__ col_scales, double *__restrict__ out,
                                                     long long out_stride)
{
    const ReconstructTables tables = load_reconstruct_tables(parts, n_moduli, moduli, inverses, im_inverses, n_limbs,
                                                             partial_limbs, product_limbs);
    switch (n_limbs) {
#define CRT_LIMBS_CASE(L)                                                                                              \
    case L:                                                                                                          \
        reconstruct_tile<L>(products, rows, cols, parts, n_moduli, tables.table, tables.im_table, product_limbs,      \
                            tables.inv_product, row_scales, col_scales, out, out_stride);                            \
        break;
        CRT_LIMBS_CASE(2)
        CRT_LIMBS_CASE(3)
        CRT_LIMBS_CASE(4)
        CRT_LIMBS_CASE(5)
#undef CRT_LIMBS_CASE
    }
}

#define CRT_RECONSTRUCT_KERNEL(NAME, PRODUCT)                                                                        \
    extern "C" __global__ void __launch_bounds__(256, RECONSTRUCT_BLOCKS_PER_SM)                                       \
        NAME(const PRODUCT *__restrict__ products, long long rows, int cols, int parts, int n_moduli,               \
             const double *__restrict__ moduli, const double *__restrict__ inverses,                                  \
             const double *__restrict__ im_inverses, int n_limbs, const double *__restrict__ partial_limbs,          \
             const double *__restrict__ product_limbs, const int *__restrict__ row_scales,                           \
             const int *__restrict__ col_scales, double *__restrict__ out, long long out_stride)                     \
    {                                                                                                                  \
        reconstruct_products(products, rows, cols, parts, n_moduli, moduli, inverses, im_inverses, n_limbs,          \
                             partial_limbs, product_limbs, row_scales, col_scales, out, out_stride);                 \
    }
CRT_RECONSTRUCT_KERNEL(crt_reconstruct, int)
CRT_RECONSTRUCT_KERNEL(crt_reconstruct_residues, signed char)
#undef CRT_RECONSTRUCT_KERNEL

// -- a gate's columns where they sit in the state (OzakiCrtBackend.apply_at) -----------------------
// (crt_reconstruct keeps its own loop and switch: through reconstructed and for_limbs below, whole
// gates measured 1.5-3% slower on the H100, BENCHMARKS.md round 16.)

// crt.CrtAccumulator for V adjacent complex outputs from their products (parts = 3: P1, P2, P3 of
// Karatsuba; 2: P+, P- on Gaussian moduli; int32 or int8 residues, Product), load_products' Source
// values from `at`: part g of modulus l at at[(l * parts + g) * part_stride] (add_products).
// Output j scaled by 2^exponents[j].
template <int LIMBS, int V, class Product, class Source>
__device__ __forceinline__ void reconstructed(const Source *at, long long part_stride, int parts, int n_moduli,
                                              const ReconstructTables &tables, const int (&exponents)[V],
                                              double2 (&results)[V])
{
    CrtSums<LIMBS> sums[V];
    add_products<LIMBS, V, true, Product>(sums, at, part_stride, parts, n_moduli, tables.table, tables.im_table);
#pragma unroll
    for (int j = 0; j < V; ++j)
        sums[j].finish(tables.product_limbs, tables.inv_product, exponents[j], true, results[j].x, results[j].y);
}

// This block's dynamic shared memory, as words. Compiled for the host (tests/host_cuda), the
// harness's buffer.
__device__ __forceinline__ unsigned *dynamic_shared_words()
{
#ifdef __CUDA_ARCH__
    extern __shared__ unsigned words[];
    return words;
#else
    return host_dynamic_shared_words();
#endif
}

// Asynchronous copies of four adjacent outputs' int8 residues, `words` 32-bit words `count` bytes
// apart from `from` (one a modulus and part), into this thread's slots of `stage` (word i at
// stage[i * blockDim.x + threadIdx.x], so that a warp's slots share no bank), as one group.
__device__ __forceinline__ void stage_products(const signed char *from, long long count, int words, unsigned *stage)
{
    for (int i = 0; i < words; ++i, from += count) copy_async_4(stage + i * blockDim.x + threadIdx.x, from);
    copy_async_commit();
}

// Column c of a K x K gate (K <= MAX_GATE_K) on the bit positions `targets` of a flat complex128
// state (target_layout.py: gate index bit i at state bit targets[i], packed six bits each) holds
// the amplitudes column_offset(c) + amplitude_offset(a), a < K. The kernels below read a chunk of
// columns there and write its results back there, so that no gathered copy of the columns is
// made, whatever the targets; both offsets come from tables in shared memory (GateOffsets). Their
// arithmetic per column is that of crt_row_scales, crt_residues and crt_reconstruct on the column
// as a row of K complex values (a row's maximum and its sum of squares are exact in any order), so
// the bits are the same.
#define MAX_GATE_K 1024

// column_offset by table lookups: the bit deposit adds over disjoint bits, so the offset of c is
// the sum of the offsets of its bytes, each looked up in a table of 256 (bits 32 and up, never set
// below 2^32 columns, by column_offset itself). Four LDS where column_offset's loop takes about six
// instructions a target.
struct ColumnOffsets {
    long long bytes[4][256];

    // Every thread of the block calls it, before a barrier.
    __device__ void fill(unsigned long long ascending, int n_targets)
    {
        for (int i = threadIdx.x; i < 4 * 256; i += blockDim.x)
            bytes[i / 256][i % 256] = column_offset((long long)(i % 256) << (8 * (i / 256)), ascending, n_targets);
    }

    __device__ __forceinline__ long long of(long long c, unsigned long long ascending, int n_targets) const
    {
        long long offset = c >> 32 ? column_offset(c >> 32 << 32, ascending, n_targets) : 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) offset += bytes[b][(c >> (8 * b)) & 255];
        return offset;
    }
};

// Where a gate's amplitudes lie in the state, as the block's tables in shared memory: amplitudes[a],
// the offset of amplitude a from its column's amplitude 0 (a < k), and the columns' amplitude 0.
struct GateOffsets {
    long long amplitudes[MAX_GATE_K];
    ColumnOffsets columns;

    // Every thread of the block calls it, before a barrier.
    __device__ void fill(int k, unsigned long long targets, unsigned long long ascending, int n_targets)
    {
        for (int a = threadIdx.x; a < k; a += blockDim.x) amplitudes[a] = amplitude_offset(a, targets, n_targets);
        columns.fill(ascending, n_targets);
    }

    // Amplitude 0 of column c.
    __device__ __forceinline__ long long column(long long c, unsigned long long ascending, int n_targets) const
    {
        return columns.of(c, ascending, n_targets);
    }
};

// The outputs of a chunk's products, (.., slow, fast): slow a column of the chunk (first_column ..)
// and fast its amplitude, or the other way round where columns_fastest. Output (slow, fast) is its
// products' value times 2^exponent(slow, fast) (the row scales of its column and of the gate's row)
// and goes to place(slow, fast) in the state.
struct GateOutputs {
    const GateOffsets &offsets;
    const int *row_scales, *col_scales;
    double2 *out;
    long long first_column;
    unsigned long long ascending;
    int n_targets;
    bool columns_fastest;

    __device__ __forceinline__ int exponent(long long slow, int fast) const
    {
        return columns_fastest ? -(row_scales[fast] + col_scales[slow]) : -(row_scales[slow] + col_scales[fast]);
    }

    __device__ __forceinline__ double2 *place(long long slow, int fast) const
    {
        const long long column = columns_fastest ? fast : slow;
        const int amplitude = columns_fastest ? (int)slow : fast;
        return out + offsets.column(first_column + column, ascending, n_targets) + offsets.amplitudes[amplitude];
    }

    // place(slow, fast + j) - place(slow, fast) where j < 2^b and 2^b divides fast and first_column: the
    // offsets add over disjoint bits.
    __device__ __forceinline__ long long adjacent(int j) const
    {
        return columns_fastest ? offsets.column(j, ascending, n_targets) : offsets.amplitudes[j];
    }
};

// crt_gate_residues gives each column a group of gate_column_threads(padded) threads of a block of
// GATE_RESIDUE_THREADS, four adjacent amplitudes per thread, held in registers from the load through
// the scale to the residues: each amplitude is read once (one warp per column read its column three
// times, and the second and third reads missed the L2 at N = 30: BENCHMARKS.md round 18), and each
// thread writes its four residues of a block as one 32-bit word.
#define GATE_RESIDUE_THREADS 256
#define GATE_RESIDUE_BLOCKS_PER_SM 4

// Threads per column: the fewest of 32, 64, 128, 256 that hold padded / 4 quads (padded <= MAX_GATE_K).
__device__ __forceinline__ int gate_column_threads(int padded)
{
    int threads = 32;
    while (4 * threads < padded) threads *= 2;
    return threads;
}

// The sum (add) or maximum of `value` over the `threads` threads of this thread's column group (whole
// warps), on each of them, through slots[one per warp]. Every thread of the block calls it: it is a
// barrier. Exact in any order for the kernels' values (maxima; sums of integers below 2^53).
__device__ __forceinline__ double group_reduce(double value, bool add, double *slots, int threads)
{
    for (int offset = 16; offset; offset >>= 1) {
        const double other = __shfl_xor_sync(FULL_MASK, value, offset);
        value = add ? value + other : fmax(value, other);
    }
    if ((threadIdx.x & 31) == 0) slots[threadIdx.x >> 5] = value;
    __syncthreads();
    const int first = (threadIdx.x / threads) * (threads / 32);
    value = slots[first];
    for (int w = 1; w < threads / 32; ++w) value = add ? value + slots[first + w] : fmax(value, slots[first + w]);
    return value;
}

// The residues of four adjacent complex elements v of a row scaled by `scale` (parts 2 or 3), at slot
// (write_residues; parts passed as a literal, so that each call compiles for its parts alone).
__device__ __forceinline__ void quad_residues(const double2 (&v)[4], const RowScale &scale, int parts,
                                              const ResidueModulus *table, int n_moduli, signed char *slot,
                                              int padded)
{
    Digits digits[4][2];
    bool wide = false;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        digits[j][0] = scaled_digits(v[j].x, scale);
        digits[j][1] = scaled_digits(v[j].y, scale);
        wide |= digits[j][0].wide || digits[j][1].wide;
    }
    if (parts == 2) {
        if (wide) write_residues<3>(digits, 2, table, n_moduli, slot, padded);
        else write_residues<2>(digits, 2, table, n_moduli, slot, padded);
    } else {
        if (wide) write_residues<3>(digits, 3, table, n_moduli, slot, padded);
        else write_residues<2>(digits, 3, table, n_moduli, slot, padded);
    }
}

// Row scales and residues of the columns first_column .. first_column + rows - 1 of the state x:
// scales[row] as crt_row_scales (bits; 0, and *nonfinite = 1, for a column holding NaN or Inf), then
// that row's residues as crt_residues of a complex row of width k (parts 2 or 3), at
// out + row * out_stride (4-byte aligned; out_stride and padded multiples of 4). targets: in gate
// order; ascending: the same sorted. Launch GATE_RESIDUE_THREADS threads a block, at most
// GATE_RESIDUE_BLOCKS_PER_SM blocks per multiprocessor. The blocks take the columns in turn, so
// that neighbouring columns, which share DRAM sectors where bit 0 is no target, are read at the same
// time by the blocks resident at once (with a range of columns per block, the top and middle targets
// moved twice the DRAM bytes: each block came back to a sector after the L2 had dropped it,
// BENCHMARKS.md round 18).
extern "C" __global__ void __launch_bounds__(GATE_RESIDUE_THREADS, GATE_RESIDUE_BLOCKS_PER_SM)
    crt_gate_residues(const double2 *__restrict__ x, long long first_column, long long rows, int k,
                      unsigned long long targets, unsigned long long ascending, int n_targets, int padded, int parts,
                      int bits, int *__restrict__ scales, int *__restrict__ nonfinite, int n_moduli,
                      const double *__restrict__ moduli, const double *__restrict__ root_table,
                      signed char *__restrict__ out, long long out_stride)
{
    __shared__ ResidueModulus table[MAX_MODULI];
    __shared__ GateOffsets offsets;
    __shared__ double largest_slots[GATE_RESIDUE_THREADS / 32], square_slots[GATE_RESIDUE_THREADS / 32];
    offsets.fill(k, targets, ascending, n_targets);
    load_residue_moduli(table, moduli, root_table, n_moduli);  // synchronises the block
    const int threads = gate_column_threads(padded), groups = GATE_RESIDUE_THREADS / threads;
    const int group = threadIdx.x / threads, quad = threadIdx.x % threads;  // amplitudes 4 quad .. 4 quad + 3
    const long long stride = (long long)gridDim.x * groups;
    for (long long first = (long long)blockIdx.x * groups; first < rows; first += stride) {  // block-uniform trips
        const long long row = first + group;
        const bool active = row < rows;
        const double2 *column = x + offsets.column(first_column + (active ? row : first), ascending, n_targets);
        double2 v[4];
        double largest = 0.0;  // Inf where an amplitude is NaN or Inf
        const double infinity = __longlong_as_double(0x7ff0000000000000LL);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int a = 4 * quad + j;
            v[j] = active && a < k ? column[offsets.amplitudes[a]] : make_double2(0.0, 0.0);
            const double re = fabs(v[j].x), im = fabs(v[j].y);
            largest = fmax(largest, isfinite(re) && isfinite(im) ? fmax(re, im) : infinity);
        }
        largest = group_reduce(largest, false, largest_slots, threads);
        const bool bad = !isfinite(largest);
        int e;
        frexp(largest, &e);
        double squares = 0.0;  // integers below 2^51: exact in any order
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const double q_re = scale_ceiling(fabs(v[j].x), e), q_im = scale_ceiling(fabs(v[j].y), e);
            squares += q_re * q_re + q_im * q_im;
        }
        squares = group_reduce(squares, true, square_slots, threads);
        const int scale = bad ? 0 : row_scale_of(e, squares, bits);
        if (!active) continue;
        if (quad == 0) {
            scales[row] = scale;
            if (bad) *nonfinite = 1;
        }
        if (4 * quad < padded)
            quad_residues(v, RowScale(scale), parts, table, n_moduli, out + row * out_stride + 4 * quad, padded);
    }
}

// body(Limbs<L>()) for L = n_limbs (2..MAX_LIMBS), so that the limb loops unroll (measured 7%
// faster gates here than a switch over calls of a template function, BENCHMARKS.md round 15).
template <int L> struct Limbs {
    static constexpr int value = L;
};
template <class Body> __device__ __forceinline__ void for_limbs(int n_limbs, Body body)
{
    switch (n_limbs) {
    case 2: body(Limbs<2>()); break;
    case 3: body(Limbs<3>()); break;
    case 4: body(Limbs<4>()); break;
    case 5: body(Limbs<5>()); break;
    }
}

// crt_reconstruct of a chunk's products, int32 (crt_gate_reconstruct) or int8 residues
// (crt_gate_reconstruct_residues, _quads) (parts 2 or 3), output (i, c) written to amplitude c of
// column first_column + i of the state out, addressed as crt_gate_residues reads them (out may be
// the state those residues came from). The products are (n_moduli * parts, rows, k), or
// (n_moduli * parts, k, rows) where columns_fastest: then consecutive threads take consecutive
// columns, whose amplitudes lie side by side where bit 0 is no target, so that their stores fill
// whole sectors, and their loads stay adjacent bytes. A thread takes V outputs adjacent in the
// products (one warp per column measured 1.6x slower on the H100). V = 1: one output, its products
// loaded as it needs them. V = 4 (the _quads kernel; 4 divides the products' fastest size and,
// columns_fastest, first_column): four outputs, their products copied into shared memory (QUAD_STAGES
// stages of n_moduli * parts words a thread, dynamic) while the thread reconstructs the previous four,
// so that the loads' latency hides behind the arithmetic (ncu: half the stalls waited on them).
#define QUAD_STAGES 2  // the _quads kernel's stages, taken in turn (stage ^= 1)
template <int V, class Product>
__device__ __forceinline__ void reconstruct_gate_products(const Product *__restrict__ products, long long rows, int k,
                                                          int parts, int n_moduli, const double *__restrict__ moduli,
                                                          const double *__restrict__ inverses,
                                                          const double *__restrict__ im_inverses, int n_limbs,
                                                          const double *__restrict__ partial_limbs,
                                                          const double *__restrict__ product_limbs,
                                                          const GateOutputs &outputs)
{
    // synchronises the block, the outputs' tables filled before too
    const ReconstructTables tables = load_reconstruct_tables(parts, n_moduli, moduli, inverses, im_inverses, n_limbs,
                                                             partial_limbs, product_limbs);
    long long adjacent[V];
#pragma unroll
    for (int j = 0; j < V; ++j) adjacent[j] = outputs.adjacent(j);
    const long long count = rows * k, groups = count / V;
    const int words = n_moduli * parts;
    static_assert(QUAD_STAGES == 2, "the stages alternate");
    unsigned *stages = dynamic_shared_words();
    for_limbs(n_limbs, [&](auto limbs) {
        constexpr int LIMBS = decltype(limbs)::value;
        TilePosition at((outputs.columns_fastest ? (int)rows : k) / V);
        if constexpr (V > 1)
            if (at.index < groups) stage_products(products + V * at.index, count, words, stages);
        for (int stage = 0; at.index < groups; at.next(), stage ^= 1) {
            const long long slow = at.row;
            const int fast = V * at.col;
            int exponents[V];
#pragma unroll
            for (int j = 0; j < V; ++j) exponents[j] = outputs.exponent(slow, fast + j);
            double2 results[V];
            if constexpr (V == 1) {
                reconstructed<LIMBS, 1, Product>(products + at.index, count, parts, n_moduli, tables, exponents,
                                                 results);
            } else {
                const long long next = at.index + at.index_step;
                if (next < groups)
                    stage_products(products + V * next, count, words, stages + (stage ^ 1) * words * blockDim.x);
                else
                    copy_async_commit();  // an empty group: the wait below still finds this one landed
                copy_async_wait<1>();
                reconstructed<LIMBS, V, Product>(stages + stage * words * blockDim.x + threadIdx.x, blockDim.x, parts,
                                                 n_moduli, tables, exponents, results);
            }
            double2 *first = outputs.place(slow, fast);
#pragma unroll
            for (int j = 0; j < V; ++j) first[adjacent[j]] = results[j];
        }
    });
}

// Registers: V = 4 holds four outputs' limb sums (the _quads kernel, 2 blocks per multiprocessor).
#define QUAD_RECONSTRUCT_BLOCKS_PER_SM 2
#define CRT_GATE_RECONSTRUCT_KERNEL(NAME, PRODUCT, V, BLOCKS_PER_SM)                                                 \
    extern "C" __global__ void __launch_bounds__(256, BLOCKS_PER_SM)                                                  \
        NAME(const PRODUCT *__restrict__ products, long long rows, int k, int parts, int n_moduli,                  \
             const double *__restrict__ moduli, const double *__restrict__ inverses,                                  \
             const double *__restrict__ im_inverses, int n_limbs, const double *__restrict__ partial_limbs,          \
             const double *__restrict__ product_limbs, const int *__restrict__ row_scales,                           \
             const int *__restrict__ col_scales, double2 *out, long long first_column, unsigned long long targets,   \
             unsigned long long ascending, int n_targets, int columns_fastest)                                       \
    {                                                                                                                  \
        __shared__ GateOffsets offsets;                                                                                \
        offsets.fill(k, targets, ascending, n_targets);                                                                \
        const GateOutputs outputs{offsets, row_scales, col_scales, out, first_column, ascending, n_targets,            \
                                  columns_fastest != 0};                                                               \
        reconstruct_gate_products<V>(products, rows, k, parts, n_moduli, moduli, inverses, im_inverses, n_limbs,     \
                                     partial_limbs, product_limbs, outputs);                                          \
    }
CRT_GATE_RECONSTRUCT_KERNEL(crt_gate_reconstruct, int, 1, RECONSTRUCT_BLOCKS_PER_SM)
CRT_GATE_RECONSTRUCT_KERNEL(crt_gate_reconstruct_residues, signed char, 1, RECONSTRUCT_BLOCKS_PER_SM)
CRT_GATE_RECONSTRUCT_KERNEL(crt_gate_reconstruct_residues_quads, signed char, 4, QUAD_RECONSTRUCT_BLOCKS_PER_SM)
#undef CRT_GATE_RECONSTRUCT_KERNEL

// -- a gate's reconstruction on Gaussian moduli on the INT8 tensor cores ---------------------------
// The sums X' = sum_l r_l E_l of crt.CrtAccumulator are a matrix product, taken one level below its
// FP64 limbs: the 2 n_moduli int8 products P+, P- of an output (A, as they are stored) times B, whose
// column j holds byte j of E_l in balanced base-256 digits (16 digits: |E_l| <= M/2 < 2^127): the re
// bytes on the rows of P+ and of P- (r_re = P+ + P-), the bytes of E^im_l on the rows of P+ and those
// of -E^im_l on the rows of P- (r_im = P+ - P-), add_gaussian's sums. The int32 sum D_j of an output's
// column j is exact (|P| < 128, |digit| <= 128, at most 64 terms: below 2^21), and so is the limb
// sum_(b < 4) D_(4i+b) 2^(8b) (below 2^45). These limbs hold the same X' as CrtSums' (sum_i limb_i
// 2^(32i)), split otherwise: subtract_multiple's estimate errs by at most twice as much for them
// (their magnitudes, weighted, sum to at most 2 |E_l| + 2^32 a modulus where CrtSums' sum to |E_l|),
// still far inside the 2^-32 by which X'/M stays from a half-integer, so it finds the same multiple
// of M, the same C' and the same bits. The products need no conversion to doubles: the first version
// of this kernel, on the FP64 mma (m16n8k8), converted each of an output's 32 products, about 100 of
// the 540 instructions a lane spent on 32 outputs (BENCHMARKS.md round 20).

// A warp takes MMA_TILE adjacent outputs at a time, as two groups of the mma's 16 rows: output 4 g
// + j of the tile in row g + 8 (j % 2) of group j / 2, so that lane (g, t), which holds A's rows g and
// g + 8, reads its four outputs' products of a plane as one word. K-step s takes the planes 32 s ..
// 32 s + 31 (part k % 2 of modulus 16 s + k / 2 at k); lane t's A and B bytes are planes 32 s + 4 t
// .. + 3 and 32 s + 16 + 4 t .. + 3. N-tile c holds bytes 8 (c % 2) .. + 7 of part c / 2 (re, im).
#define MMA_TILE 32
#define MMA_STEPS ((2 * MAX_MODULI + 31) / 32)
#define MMA_RECONSTRUCT_BLOCKS_PER_SM 3
#define MMA_STAGES 4  // a warp's tiles in flight (MMA_STAGES - 1 copied ahead)
#define E_DIGITS 16

// The k-steps of 32 planes that hold the 2 n_moduli planes of products.
__host__ __device__ constexpr int mma_steps(int n_moduli) { return (2 * n_moduli + 31) / 32; }

// A warp's stage in words: 8 (a plane's bytes of MMA_TILE outputs) for each of the 32 planes of every
// k-step. The host sizes the kernel's dynamic shared memory by the same (crt_backend.mma_stage_words;
// tests/test_ozaki_crt_kernels.py compares the two).
__host__ __device__ constexpr int mma_stage_words(int n_moduli) { return 256 * mma_steps(n_moduli); }

// The balanced base-256 digits of E (|E| < 2^127) from its LIMB_BITS-bit limbs as doubles (each with
// E's sign, ReconstructModulus): the two's complement (high, low), then balanced64's step on 128 bits
// (0x80 added to every byte with the carries, the bytes' top bits flipped). Set-up only.
__device__ void balanced_digits(const double (&limbs)[MAX_LIMBS], double sign, signed char *digits)
{
    unsigned long long low = 0, high = 0;
    for (int j = MAX_LIMBS - 1; j >= 0; --j) {  // (high, low) = (high, low) 2^32 + sign limb_j
        high = high << 32 | low >> 32;
        low <<= 32;
        const long long limb = (long long)(sign * limbs[j]);
        const unsigned long long before = low;
        low += (unsigned long long)limb;
        high += (limb < 0 ? ~0ull : 0ull) + (low < before);
    }
    const unsigned long long sum = low + 0x8080808080808080ull;
    high += 0x8080808080808080ull + (sum < low);
    for (int b = 0; b < E_DIGITS; ++b)
        digits[b] = (signed char)((unsigned char)((b < 8 ? sum : high) >> (8 * (b % 8))) ^ 0x80u);
}

// Every modulus's digits of E_l (re), E^im_l and -E^im_l (im on the rows of P+ and of P-), set by the
// block's first threads; every thread of the block calls it before a barrier.
struct GaussianDigits {
    signed char of[MAX_MODULI][3][E_DIGITS];

    __device__ void fill(const ReconstructTables &tables, int n_moduli)
    {
        for (int i = threadIdx.x; i < 3 * n_moduli; i += blockDim.x) {
            const int l = i / 3, kind = i % 3;
            balanced_digits((kind ? tables.im_table : tables.table)[l].limbs, kind == 2 ? -1.0 : 1.0, of[l][kind]);
        }
    }

    // B(k, n) of n-tile c at k-step s as four bytes of planes 32 s + first .. + 3 (zero beyond the plan):
    // column n = 2 u + e holds byte 8 (u % 2) + 2 c + e of part u / 2 (so that lane t of the C layout,
    // with columns 2 t, 2 t + 1 of every n-tile, gets bytes 8 (t % 2) .. + 7 of part t / 2: two whole
    // limbs).
    __device__ unsigned word(int n_moduli, int s, int first, int c, int n) const
    {
        const int u = n / 2, byte = 8 * (u % 2) + 2 * c + n % 2;
        unsigned w = 0;
        for (int i = 0; i < 4; ++i) {
            const int plane = 32 * s + first + i, l = plane / 2;
            const int kind = u < 2 ? 0 : 1 + plane % 2;
            const signed char digit = l < n_moduli ? of[l][kind][byte] : 0;
            w |= (unsigned)(unsigned char)digit << (8 * i);
        }
        return w;
    }
};

// The four words w[0..3] (planes q .. q + 3, each the bytes of four outputs) as four words of one
// output each (bytes: planes q .. q + 3): the 4 x 4 byte transpose.
__device__ __forceinline__ void transpose_bytes(const unsigned (&w)[4], unsigned (&out)[4])
{
    const unsigned low01 = __byte_perm(w[0], w[1], 0x5140), high01 = __byte_perm(w[0], w[1], 0x7362);
    const unsigned low23 = __byte_perm(w[2], w[3], 0x5140), high23 = __byte_perm(w[2], w[3], 0x7362);
    out[0] = __byte_perm(low01, low23, 0x5410);
    out[1] = __byte_perm(low01, low23, 0x7632);
    out[2] = __byte_perm(high01, high23, 0x5410);
    out[3] = __byte_perm(high01, high23, 0x7632);
}

// The limbs of the tile's two values this lane rounds (part t / 2 of outputs 4 g + 2 (t % 2) + i)
// from d[G][c]: n-tile c of group G (PTX's C layout: rows g, g + 8 are outputs 4 g + 2 G, + 1;
// columns 2 t, 2 t + 1 bytes 8 (t % 2) + 2 c, + 1 of part t / 2, GaussianDigits::word). So lane t
// holds limbs 2 (t % 2) and 2 (t % 2) + 1 (n-tiles 0, 1 and 2, 3) of part t / 2 of its four
// outputs; lanes t and t ^ 1 swap the limbs of the outputs the other keeps (the even lane keeps
// 4 g, 4 g + 1, the odd one 4 g + 2, 4 g + 3).
__device__ __forceinline__ void gather_limbs(const int (&d)[2][4][4], int t, double (&limbs)[2][MAX_LIMBS])
{
    const bool odd = t & 1;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        double kept[2], other[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // limb 2 (t % 2) + h: bytes 0, 1 in n-tile 2 h, bytes 2, 3 in 2 h + 1
            double limb[2];
#pragma unroll
            for (int group = 0; group < 2; ++group) {
                const int low = d[group][2 * h][2 * i] + 256 * d[group][2 * h][2 * i + 1];
                const int high = d[group][2 * h + 1][2 * i] + 256 * d[group][2 * h + 1][2 * i + 1];
                limb[group] = fma((double)high, 65536.0, (double)low);
            }
            kept[h] = odd ? limb[1] : limb[0];
            other[h] = __shfl_xor_sync(FULL_MASK, odd ? limb[0] : limb[1], 1);
        }
        limbs[i][0] = odd ? other[0] : kept[0];
        limbs[i][1] = odd ? other[1] : kept[1];
        limbs[i][2] = odd ? kept[0] : other[0];
        limbs[i][3] = odd ? kept[1] : other[1];
#pragma unroll
        for (int j = 4; j < MAX_LIMBS; ++j) limbs[i][j] = 0.0;
    }
}

// A lane's share of the copies of a warp's tile of products into a stage: 16-byte chunks c = lane
// + 32 i of 2 * staged planes, chunk c half c % 2 of plane c / 2 (word 8 plane + w of a stage is word
// w of the tile in that plane; the planes beyond the plan's as zeros). So chunk i of a lane lies
// 16 i planes after its chunk 0, in the products and in the stage.
#define MMA_CHUNKS_PER_LANE (2 * MMA_STEPS)
struct TileCopies {
    long long first, plane_step;  // bytes from a tile's first output to chunk 0; from chunk i to i + 1
    int lane, planes, chunks;     // this lane, the plan's planes, the chunks of a stage

    __device__ TileCopies(long long count, int n_planes, int staged_planes, int lane_index)
        : first(lane_index / 2 * count + 16 * (lane_index % 2)), plane_step(16 * count), lane(lane_index),
          planes(n_planes), chunks(2 * staged_planes)
    {
    }

    // The copies of the tile at `tile` into `stage`, as one group.
    __device__ __forceinline__ void issue(const signed char *tile, unsigned *stage) const
    {
        const signed char *from = tile + first;
#pragma unroll
        for (int i = 0; i < MMA_CHUNKS_PER_LANE; ++i, from += plane_step)
            if (lane + 32 * i < chunks) copy_async_16(stage + 4 * lane + 128 * i, from, lane / 2 + 16 * i < planes);
        copy_async_commit();
    }
};

// crt_gate_reconstruct_residues for products on Gaussian moduli (parts 2), int8 residues, LIMBS <= 4,
// MMA_TILE outputs a warp, adjacent in the products (MMA_TILE divides their fastest size and,
// columns_fastest, first_column). Each warp copies the products of its next MMA_STAGES - 1 tiles
// into its ring of stages in shared memory (dynamic: MMA_STAGES stages of 8 words for each of 32
// planes a k-step, a warp) while it reconstructs this one (with one tile ahead in registers, the
// FP64-mma version took 1.3x the quads kernel's time: too few loads in flight). Lane (g, t) rounds
// part t / 2 (re, im) of the tile's outputs 4 g + 2 (t % 2) + i, i < 2, and writes output
// 4 g + 2 (t % 2) + t / 2.
template <int LIMBS>
__device__ __forceinline__ void reconstruct_gaussian_tiles(const signed char *__restrict__ products, long long rows,
                                                           int k, int n_moduli, const ReconstructTables &tables,
                                                           const GaussianDigits &digits, const GateOutputs &outputs)
{
    const int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
    const int steps = mma_steps(n_moduli), stage_words = mma_stage_words(n_moduli);
    unsigned b[MMA_STEPS][4][2];  // this lane's B fragments: k-step, n-tile, planes 4 t and 16 + 4 t
#pragma unroll
    for (int s = 0; s < MMA_STEPS; ++s)
#pragma unroll
        for (int c = 0; c < 4; ++c)
#pragma unroll
            for (int h = 0; h < 2; ++h) b[s][c][h] = s < steps ? digits.word(n_moduli, s, 16 * h + 4 * t, c, g) : 0u;
    unsigned *ring = dynamic_shared_words() + (threadIdx.x / 32) * MMA_STAGES * stage_words;
    const long long count = rows * k, tiles = count / MMA_TILE;
    const TileCopies copies(count, 2 * n_moduli, 32 * steps, lane);
    double product_limbs[MAX_LIMBS];  // in registers for every tile
#pragma unroll
    for (int j = 0; j < MAX_LIMBS; ++j) product_limbs[j] = j < LIMBS ? tables.product_limbs[j] : 0.0;
    const int mine = 4 * g + 2 * (t % 2) + t / 2;  // the output this lane writes
    TilePosition at((outputs.columns_fastest ? (int)rows : k) / MMA_TILE, global_warp(), warp_count());
    // The tile `ahead` turns from this one (turn `turn` of the warp's loop) into its stage.
    auto stage_ahead = [&](int turn, int ahead) {
        const long long tile = at.index + ahead * at.index_step;
        if (tile < tiles)
            copies.issue(products + tile * MMA_TILE, ring + (turn + ahead) % MMA_STAGES * stage_words);
        else
            copy_async_commit();  // an empty group: the waits count groups
    };
    for (int ahead = 0; ahead < MMA_STAGES - 1; ++ahead) stage_ahead(0, ahead);
    for (int turn = 0; at.index < tiles; at.next(), ++turn) {
        stage_ahead(turn, MMA_STAGES - 1);
        copy_async_wait<MMA_STAGES - 1>();
        __syncwarp();  // the other lanes' copies too
        const unsigned *stage = ring + turn % MMA_STAGES * stage_words + g;
        int d[2][4][4] = {};  // group, n-tile: the mma's C fragment
#pragma unroll
        for (int s = 0; s < MMA_STEPS; ++s) {
            if (s >= steps) break;
            unsigned words[2][4], bytes[2][4];  // planes 32 s + 16 h + 4 t + i: words of 4 outputs, then of one
#pragma unroll
            for (int h = 0; h < 2; ++h) {
#pragma unroll
                for (int i = 0; i < 4; ++i) words[h][i] = stage[8 * (32 * s + 16 * h + 4 * t + i)];
                transpose_bytes(words[h], bytes[h]);
            }
#pragma unroll
            for (int group = 0; group < 2; ++group) {
                const uint4 a = make_uint4(bytes[0][2 * group], bytes[0][2 * group + 1], bytes[1][2 * group],
                                           bytes[1][2 * group + 1]);
#pragma unroll
                for (int c = 0; c < 4; ++c) mma_s8(d[group][c], a, b[s][c][0], b[s][c][1]);
            }
        }
        __syncwarp();  // every lane has read the stage before a lane copies into it again
        double limbs[2][MAX_LIMBS], values[2];
        gather_limbs(d, t, limbs);
        const long long slow = at.row;
        const int first_fast = MMA_TILE * at.col;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            CrtSums<LIMBS>::subtract_multiple(limbs[i], product_limbs, tables.inv_product);
            values[i] = CrtSums<LIMBS>::rounded(limbs[i], outputs.exponent(slow, first_fast + 4 * g + 2 * (t % 2) + i));
        }
        // Lanes t and t ^ 2 hold re and im of the same two outputs: each gives the other its half.
        const double other = __shfl_xor_sync(FULL_MASK, t < 2 ? values[1] : values[0], 2);
        *outputs.place(slow, first_fast + mine) =
            t < 2 ? make_double2(values[0], other) : make_double2(other, values[1]);
    }
    copy_async_wait<0>();  // the empty groups' (no copy is left in flight at exit)
}

// products (2 n_moduli, rows, k), or (2 n_moduli, k, rows) where columns_fastest, int8 residues on
// Gaussian moduli; the arguments as crt_gate_reconstruct's (parts is 2), n_limbs at most 4. One
// thread per output; dynamic shared memory: MMA_STAGES * 256 * ceil(n_moduli / 16) words a warp.
extern "C" __global__ void __launch_bounds__(256, MMA_RECONSTRUCT_BLOCKS_PER_SM)
    crt_gate_reconstruct_gaussian_mma(const signed char *__restrict__ products, long long rows, int k, int parts,
                                      int n_moduli, const double *__restrict__ moduli,
                                      const double *__restrict__ inverses, const double *__restrict__ im_inverses,
                                      int n_limbs, const double *__restrict__ partial_limbs,
                                      const double *__restrict__ product_limbs, const int *__restrict__ row_scales,
                                      const int *__restrict__ col_scales, double2 *out, long long first_column,
                                      unsigned long long targets, unsigned long long ascending, int n_targets,
                                      int columns_fastest)
{
    __shared__ GateOffsets offsets;
    __shared__ GaussianDigits digits;
    offsets.fill(k, targets, ascending, n_targets);
    const ReconstructTables tables = load_reconstruct_tables(parts, n_moduli, moduli, inverses, im_inverses, n_limbs,
                                                             partial_limbs, product_limbs);
    digits.fill(tables, n_moduli);
    __syncthreads();
    for_limbs(n_limbs, [&](auto limbs) {
        constexpr int LIMBS = decltype(limbs)::value;
        if constexpr (LIMBS <= 4)
            reconstruct_gaussian_tiles<LIMBS>(products, rows, k, n_moduli, tables, digits,
                                              {offsets, row_scales, col_scales, out, first_column, ascending, n_targets,
                                               columns_fastest != 0});
    });
}
