// Ozaki-II's INT8 products reduced modulo p on the chip (sm_90a: the tensor memory accelerator and
// warpgroup products), so that each product leaves as one int8 residue instead of an int32:
//   out[b][r][c] = (sum_h a[r][b][h] g[c][b][h]) mods p_(b / parts), symmetric in [-(p-1)/2, (p-1)/2],
// for the residue layouts of crt_backend.py: a (rows, blocks, padded) and g (cols, blocks, padded)
// int8, each seen through a three-dimensional tensor map (padded, blocks, rows) whose boxes are
// 128 bytes of h x 1 block x 128 (a) or TILE_N (g) rows, zero past every end; out (blocks, rows,
// cols) int8 (16-byte stores where 16 divides cols). Exact for padded <= 2^17 (|sum| < 2^31).
//
// A persistent block takes output tiles blockIdx.x, + gridDim.x, ... (output_tile's order), each
// 128 rows x TILE_N columns, in steps of 128 bytes of h:
// - warpgroup 2 (the producer: one thread; its registers go to the consumers) fills a ring of
//   STAGES stages, a's and g's boxes by one bulk tensor copy each in the 128-byte swizzle (16-byte
//   chunk c of row r at chunk c ^ (r % 8)), completing on the stage's `full` barrier;
// - warpgroups 0 and 1 (the consumers) take rows 64 w .. 64 w + 63 of the tile by m64nTILE_Nk32
//   products, one group in flight, and release each stage on its `empty` barrier once their
//   products of it are done; at a tile's last step each reduces its products modulo p and stages
//   them through its own rows of a's box (read by its products alone) to leave in 16-byte stores.
#define TILE_M 128
#define TILE_N 256
#define TILE_K 128
#define STAGES 4
#define CONSUMER_WARPS 8
#define THREADS (32 * CONSUMER_WARPS + 128)
// Registers per thread after setmaxnreg: 128 x 40 + 256 x 232 = 384 x 168, the block's registers at
// launch (the cap at entry is 168); a warpgroup that asks for more than the block holds waits for
// ever (a split of 128 x 80 + 256 x 216 hung, BENCHMARKS.md round 21).
#define PRODUCER_REGISTERS 40
#define CONSUMER_REGISTERS 232
#define A_BYTES (TILE_M * TILE_K)
#define STAGE_BYTES (A_BYTES + TILE_N * TILE_K)

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "crt_products.cu is compiled for sm_90a (wgmma, bulk tensor copies)"
#endif

#include "rounded_quotient.cuh"  // the reduction's quotient
#include "wgmma_s8.cuh"  // the warpgroup products' fence, commit and wait

// Descriptor of a K-major operand at shared address `address`: rows of 128 bytes in the 128-byte
// swizzle (the tile 1024-byte aligned; + 32 j bytes for the j-th step of 32 bytes of k), 8-row
// groups 1024 bytes apart.
__device__ __forceinline__ unsigned long long swizzled_descriptor(unsigned address)
{
    return (unsigned long long)((address & 0x3FFFF) >> 4) | 1ull << 16 | (unsigned long long)(1024 >> 4) << 32 |
           1ull << 62;
}

// d (+)= A B^T for the warpgroup: A 64 x 32 and B TILE_N x 32 bytes, K-major in shared memory
// (descriptors a, b); d is overwritten where accumulate is 0. d[4 nt + 2 h + e] is the product at
// row 16 warp + 8 h + lane / 4, column 8 nt + 2 (lane % 4) + e (mma.sync's C layout per n-tile).
__device__ __forceinline__ void wgmma_products(int (&d)[TILE_N / 2], unsigned long long a, unsigned long long b,
                                               int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
                 "}, %128, %129, p;\n}\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
                   "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
                   "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),
                   "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]),
                   "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]),
                   "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
                   "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
                   "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
                   "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]),
                   "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]),
                   "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]),
                   "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]),
                   "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]),
                   "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]),
                   "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]), "+r"(d[104]),
                   "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]),
                   "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]),
                   "+r"(d[119]), "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]),
                   "+r"(d[126]), "+r"(d[127])
                 : "l"(a), "l"(b), "r"(accumulate));
}

// One step of 128 bytes of h: d (+)= the warpgroup's 64 rows of A at a_rows by B's TILE_N rows at
// b_rows (both 128-byte rows in the 128-byte swizzle), d overwritten at the tile's first step;
// committed as one group.
__device__ __forceinline__ void step_products(int (&d)[TILE_N / 2], unsigned a_rows, unsigned b_rows, bool first)
{
    wgmma_fence<TILE_N / 8>();
#pragma unroll
    for (int j = 0; j < TILE_K / 32; ++j)
        wgmma_products(d, swizzled_descriptor(a_rows + 32 * j), swizzled_descriptor(b_rows + 32 * j), !first || j > 0);
    wgmma_commit<TILE_N / 8>();
}

__device__ __forceinline__ void barrier_init(unsigned barrier, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(barrier), "r"(count) : "memory");
}

// Waits until the barrier's phase of this parity has completed.
__device__ __forceinline__ void barrier_wait(unsigned barrier, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n.reg .pred P;\nmbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, P;\n}\n"
                     : "=r"(done)
                     : "r"(barrier), "r"(parity)
                     : "memory");
    } while (!done);
}

__device__ __forceinline__ void barrier_arrive(unsigned barrier)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(barrier) : "memory");
}

// Arrives and expects `bytes` of bulk copies to complete on the barrier in this phase.
__device__ __forceinline__ void barrier_expect(unsigned barrier, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier), "r"(bytes) : "memory");
}

// The box of the tensor map at (x, y, z) into shared memory, completing on the barrier.
__device__ __forceinline__ void tensor_copy(unsigned shared, const void *map, int x, int y, int z, unsigned barrier)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(shared), "l"(map), "r"(x), "r"(y), "r"(z), "r"(barrier)
                 : "memory");
}

// Reduction of int32 products modulo p by one dp4a, one FMA and one integer multiply-add, for any
// int32 product P: the bytes b_i of P + 2^31 (unsigned) give S = sum_i b_i (2^(8 i) mod p) + c, with
// c = -2^31 mod p, by one dp4a: S == P (mod p) and 0 <= S < 4 * 255^2 + p < 2^23, whose symmetric
// residue reduced_residue gives in its low byte (rounded_quotient.cuh).
struct ModularReduction {
    unsigned byte_weights;  // byte i: 2^(8 i) mod p
    unsigned offset;        // c = -2^31 mod p
    float inverse;          // scaled_inverse(p)
    int negative_p;         // -p
};

#define MAX_MODULI 32
__device__ __forceinline__ ModularReduction modular_reduction(int p)
{
    unsigned weights = 0;
    for (int i = 0; i < 4; ++i) weights |= ((1u << (8 * i)) % (unsigned)p) << (8 * i);
    return {weights, ((unsigned)p - (1u << 31) % (unsigned)p) % (unsigned)p, scaled_inverse(p), -p};
}

// The symmetric residue of `product` modulo p, in the low byte.
__device__ __forceinline__ unsigned residue_byte(int product, const ModularReduction &m)
{
    return reduced_residue(__dp4a((unsigned)product ^ 0x80000000u, m.byte_weights, m.offset), m.negative_p,
                           m.inverse);
}

// Every modulus's reduction in shared memory (count <= MAX_MODULI), from the plan's p (float64).
__device__ __forceinline__ void fill_reductions(ModularReduction *reductions, const double *moduli, int count)
{
    if (threadIdx.x < count) reductions[threadIdx.x] = modular_reduction((int)moduli[threadIdx.x]);
}

// The warpgroup's products d (64 x TILE_N) modulo p into out (rows x cols int8) from (row, col),
// through `staging` (64 rows x 128 bytes of shared memory, 16-byte chunks swizzled by row), 128
// columns at a time: each warp writes and reads back its own 16 rows.
__device__ __forceinline__ void store_residues(const int (&d)[TILE_N / 2], signed char *staging, signed char *out,
                                               long long rows, int cols, long long row, int col,
                                               const ModularReduction &m)
{
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    signed char *mine = staging + warp * 16 * 128;
#pragma unroll
    for (int pass = 0; pass < TILE_N / 128; ++pass) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = 8 * h + (lane >> 2);
#pragma unroll
            for (int nt = 0; nt < 16; ++nt) {
                const int *pair = d + 4 * (16 * pass + nt) + 2 * h;
                const unsigned bytes = __byte_perm(residue_byte(pair[0], m), residue_byte(pair[1], m), 0x0040);
                *(unsigned short *)(mine + r * 128 + (((nt >> 1) ^ (r & 7)) << 4) + 8 * (nt & 1) + 2 * (lane & 3)) =
                    (unsigned short)bytes;
            }
        }
        __syncwarp();
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int q = lane + 32 * i, r = q >> 3, c = q & 7;
            const long long out_row = row + 16 * warp + r;
            const int out_col = col + 128 * pass + 16 * c;
            const int4 chunk = *(const int4 *)(mine + r * 128 + ((c ^ (r & 7)) << 4));
            if (out_row >= rows || out_col >= cols) continue;
            if (cols % 16 == 0) {
                *(int4 *)(out + out_row * cols + out_col) = chunk;
            } else {  // rows off the 16-byte grid (a narrow chunk of columns): byte by byte
                const unsigned words[4] = {(unsigned)chunk.x, (unsigned)chunk.y, (unsigned)chunk.z, (unsigned)chunk.w};
#pragma unroll
                for (int b = 0; b < 16; ++b)
                    if (out_col + b < cols)
                        out[out_row * cols + out_col + b] = (signed char)(words[b / 4] >> (8 * (b % 4)));
            }
        }
        __syncwarp();
    }
}

struct OutputTile {
    int block, col;
    long long row;
};

// Output tile t of row_tiles x col_tiles per block: blocks slowest; in a block, groups of
// GROUP_ROWS row tiles, the row tiles fastest in a group, so that the tiles running at once share
// rows of a and columns of g in the L2 whatever the number of column tiles.
#define GROUP_ROWS 8
__device__ __forceinline__ OutputTile output_tile(int t, int row_tiles, int col_tiles)
{
    const int per_block = row_tiles * col_tiles, block = t / per_block;
    const int in_block = t - block * per_block, group = in_block / (GROUP_ROWS * col_tiles);
    const int first_row = group * GROUP_ROWS, group_rows = min(GROUP_ROWS, row_tiles - first_row);
    const int in_group = in_block - group * GROUP_ROWS * col_tiles, col = in_group / group_rows;
    return {block, col * TILE_N, (long long)(first_row + in_group - col * group_rows) * TILE_M};
}


// The producer's part of crt_products: this block's steps into the ring at base.
__device__ __forceinline__ void produce(const void *a_map, const void *g_map, int steps, int k_steps, int row_tiles,
                                        int col_tiles, unsigned base, unsigned full, unsigned empty)
{
    int t = blockIdx.x, kt = 0;
    OutputTile tile = output_tile(t, row_tiles, col_tiles);
    for (int step = 0; step < steps; ++step) {
        const int s = step % STAGES, round = step / STAGES;
        if (round > 0) barrier_wait(empty + 8 * s, (round - 1) & 1);
        const unsigned stage = base + s * STAGE_BYTES;
        barrier_expect(full + 8 * s, STAGE_BYTES);
        tensor_copy(stage, a_map, kt * TILE_K, tile.block, (int)tile.row, full + 8 * s);
        tensor_copy(stage + A_BYTES, g_map, kt * TILE_K, tile.block, tile.col, full + 8 * s);
        if (++kt == k_steps) {
            kt = 0;
            t += gridDim.x;
            tile = output_tile(t, row_tiles, col_tiles);
        }
    }
}

// The consumer warpgroups' part of crt_products: this block's steps from the ring at base.
__device__ __forceinline__ void consume(int steps, int k_steps, int row_tiles, int col_tiles, long long rows, int cols,
                                        int parts, const ModularReduction *reductions, signed char *__restrict__ out,
                                        signed char *shared, unsigned base, unsigned full, unsigned empty)
{
    const unsigned shared_start = (unsigned)__cvta_generic_to_shared(shared);
    const int lane = threadIdx.x & 31, warpgroup = threadIdx.x >> 7;
    int d[TILE_N / 2];
    // The epilogue stays out of the loop over k: in a branch of it, ptxas serialises the products.
    for (int t = blockIdx.x, step = 0; step < steps; t += gridDim.x) {
        const OutputTile tile = output_tile(t, row_tiles, col_tiles);
        const ModularReduction m = reductions[tile.block / parts];
        unsigned a_rows = 0;
        for (int kt = 0; kt < k_steps; ++kt, ++step) {
            const int s = step % STAGES;
            barrier_wait(full + 8 * s, (step / STAGES) & 1);
            const unsigned stage = base + s * STAGE_BYTES;
            a_rows = stage + warpgroup * 64 * TILE_K;
            step_products(d, a_rows, stage + A_BYTES, kt == 0);
            wgmma_wait<1>();  // the previous step's are done
            if (kt > 0 && lane == 0) barrier_arrive(empty + 8 * ((step - 1) % STAGES));
        }
        wgmma_wait<0>();
        store_residues(d, shared + (a_rows - shared_start), out + (long long)tile.block * rows * cols, rows, cols,
                       tile.row + 64 * warpgroup, tile.col, m);
        // the staging rows' generic writes before the producer's next bulk copy into them
        fence_shared_for_wgmma();
        __syncwarp();
        if (lane == 0) barrier_arrive(empty + 8 * ((step - 1) % STAGES));
    }
}

// a_map, g_map: the residues' tensor maps (device memory, 128 bytes each); moduli: the plan's p
// (float64, blocks / parts <= MAX_MODULI of them), block b reduced modulo p_(b / parts). Launch
// THREADS threads and 1024 + STAGES (STAGE_BYTES + 16) bytes of dynamic shared memory, at most one
// block per output tile.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
    crt_products(const void *a_map, long long rows, const void *g_map, int cols, int padded, int blocks, int parts,
                 const double *__restrict__ moduli, signed char *__restrict__ out)
{
    extern __shared__ __align__(1024) signed char shared[];
    __shared__ ModularReduction reductions[MAX_MODULI];
    const unsigned base = ((unsigned)__cvta_generic_to_shared(shared) + 1023) & ~1023u;  // the swizzle's atoms
    const unsigned full = base + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
    const int col_tiles = (cols + TILE_N - 1) / TILE_N, row_tiles = (int)((rows + TILE_M - 1) / TILE_M);
    const int tiles = row_tiles * col_tiles * blocks, k_steps = (padded + TILE_K - 1) / TILE_K;
    const int steps = ((tiles - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x) * k_steps;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init(full + 8 * s, 1);
            barrier_init(empty + 8 * s, CONSUMER_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    fill_reductions(reductions, moduli, blocks / parts);
    __syncthreads();
    if (threadIdx.x >= 32 * CONSUMER_WARPS) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGISTERS));
        if (threadIdx.x == 32 * CONSUMER_WARPS)
            produce(a_map, g_map, steps, k_steps, row_tiles, col_tiles, base, full, empty);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGISTERS));
        consume(steps, k_steps, row_tiles, col_tiles, rows, cols, parts, reductions, out, shared, base, full, empty);
    }
}

// crt_products for gate shapes, where one block's slice of g (TILE_N rows x padded <= RESIDENT_PADDED
// bytes) fits in shared memory: the same outputs, with g read into shared memory once per slice
// instead of once per output tile, and each consumer warpgroup on tiles of 64 rows of its own.
// - Thread blocks come in groups of col_tiles, one per TILE_N columns of g. A group takes a range
//   of the (block, 64 rows of a) tiles, block slowest, and its thread blocks read the same rows of
//   a at about the same time (all but the first from the L2). A thread block reads its slice of g
//   for each block that its range crosses (a segment).
// - Warpgroup w takes the range's tiles w, w + 2, ... from a ring of its own (RESIDENT_STAGES steps
//   of 64 rows x 128 bytes of h), filled by producer warp w; producer warp 2 reads the slices.
// - The warpgroups take turns at the tensor cores (named barriers 1 and 2: each issues a tile's
//   products once the other has issued its last), so that one reduces and stores its residues
//   while the other's products run.
#define RESIDENT_PADDED 512
#define RESIDENT_STAGES 6
#define WG_ROWS 64
#define RING_BYTES (WG_ROWS * TILE_K)
#define SLICE_STEP_BYTES (TILE_N * TILE_K)  // one step of h of a slice

// A place in a warpgroup's ring: the stage, and the round (how often the ring has wrapped).
struct RingCursor {
    int stage = 0;
    unsigned round = 0;
    __device__ __forceinline__ void advance()
    {
        if (++stage == RESIDENT_STAGES) stage = 0, ++round;
    }
};

struct ResidentRange {
    int first, end, row_tiles;  // tiles [first, end) of the (block, WG_ROWS rows) tiles; row tiles a block
    __device__ __forceinline__ int block(int t) const { return t / row_tiles; }
    __device__ __forceinline__ int row(int t) const { return (t - block(t) * row_tiles) * WG_ROWS; }
};

// Warpgroup w's ring barriers among the block's: full[s] (the producer's arrival), then empty[s]
// (its warps'), after the slice's two.
__device__ __forceinline__ unsigned ring_full(unsigned barriers, int w)
{
    return barriers + 16 + 16 * RESIDENT_STAGES * w;
}

__device__ __forceinline__ ResidentRange resident_range(long long rows, int blocks, int col_tiles)
{
    const int row_tiles = (int)((rows + WG_ROWS - 1) / WG_ROWS);
    const long long tiles = (long long)row_tiles * blocks, groups = gridDim.x / col_tiles;
    const long long group = blockIdx.x / col_tiles;
    return {(int)(tiles * group / groups), (int)(tiles * (group + 1) / groups), row_tiles};
}

// Producer warp w < 2: warpgroup w's steps of a into its ring.
__device__ __forceinline__ void produce_rows(const void *a_map, ResidentRange range, int k_steps, int w, unsigned ring,
                                             unsigned full, unsigned empty)
{
    RingCursor at;
    for (int t = range.first + w; t < range.end; t += 2)
        for (int kt = 0; kt < k_steps; ++kt, at.advance()) {
            const unsigned s = 8 * at.stage;
            if (at.round > 0) barrier_wait(empty + s, (at.round - 1) & 1);
            barrier_expect(full + s, RING_BYTES);
            tensor_copy(ring + at.stage * RING_BYTES, a_map, kt * TILE_K, range.block(t), range.row(t), full + s);
        }
}

// Producer warp 2: the slice of g of every segment, once both warpgroups are done with the last.
__device__ __forceinline__ void produce_slices(const void *g_map, ResidentRange range, int k_steps, int col,
                                               unsigned slice, unsigned slice_full, unsigned slice_empty)
{
    if (range.first >= range.end) return;
    for (int block = range.block(range.first), segment = 0; block <= range.block(range.end - 1); ++block, ++segment) {
        if (segment > 0) barrier_wait(slice_empty, (segment - 1) & 1);
        barrier_expect(slice_full, k_steps * SLICE_STEP_BYTES);
        for (int kt = 0; kt < k_steps; ++kt)
            tensor_copy(slice + kt * SLICE_STEP_BYTES, g_map, kt * TILE_K, block, col, slice_full);
    }
}

__device__ __forceinline__ void turn_wait(int w) { asm volatile("bar.sync %0, 256;" ::"r"(1 + w) : "memory"); }
__device__ __forceinline__ void turn_pass(int w) { asm volatile("bar.arrive %0, 256;" ::"r"(2 - w) : "memory"); }

// Consumer warpgroup w: its tiles of the range, segment by segment.
__device__ __forceinline__ void consume_rows(ResidentRange range, int k_steps, long long rows, int cols, int col,
                                             int parts, const ModularReduction *reductions,
                                             signed char *__restrict__ out, signed char *shared, int w, unsigned ring,
                                             unsigned full, unsigned empty, unsigned slice, unsigned slice_full,
                                             unsigned slice_empty)
{
    const unsigned shared_start = (unsigned)__cvta_generic_to_shared(shared);
    const int lane = threadIdx.x & 31;
    int d[TILE_N / 2];
    if (range.first >= range.end) return;
    RingCursor at;
    int t = range.first + w;
    for (int block = range.block(range.first), segment = 0; block <= range.block(range.end - 1); ++block, ++segment) {
        barrier_wait(slice_full, segment & 1);
        const ModularReduction m = reductions[block / parts];
        for (; t < range.end && range.block(t) == block; t += 2) {
            if (t > range.first) turn_wait(w);  // the other warpgroup has issued tile t - 1's products
            unsigned stage = 0, previous = 0;
            for (int kt = 0; kt < k_steps; ++kt, at.advance()) {
                barrier_wait(full + 8 * at.stage, at.round & 1);
                previous = stage;
                stage = ring + at.stage * RING_BYTES;
                step_products(d, stage, slice + kt * SLICE_STEP_BYTES, kt == 0);
                wgmma_wait<1>();  // the previous step's are done
                if (kt > 0 && lane == 0) barrier_arrive(empty + 8 * ((previous - ring) / RING_BYTES));
            }
            if (t + 1 < range.end) turn_pass(w);
            wgmma_wait<0>();
            store_residues(d, shared + (stage - shared_start), out + (long long)block * rows * cols, rows, cols,
                           range.row(t), col, m);
            // the staging rows' generic writes before the producer's next bulk copy into them
            fence_shared_for_wgmma();
            __syncwarp();
            if (lane == 0) barrier_arrive(empty + 8 * ((stage - ring) / RING_BYTES));
        }
        __syncwarp();
        if (lane == 0) barrier_arrive(slice_empty);
    }
}

// a_map: a's tensor map with boxes of WG_ROWS rows; g_map: g's with TILE_N rows; the rest as
// crt_products, padded <= RESIDENT_PADDED. Launch THREADS threads in a multiple of col_tiles =
// ceil(cols / TILE_N) blocks, with 1024 + TILE_N RESIDENT_PADDED + 2 RESIDENT_STAGES RING_BYTES +
// 8 (2 + 4 RESIDENT_STAGES) bytes of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
    crt_products_resident(const void *a_map, long long rows, const void *g_map, int cols, int padded, int blocks,
                          int parts, const double *__restrict__ moduli, signed char *__restrict__ out)
{
    extern __shared__ __align__(1024) signed char shared[];
    __shared__ ModularReduction reductions[MAX_MODULI];
    const unsigned slice = ((unsigned)__cvta_generic_to_shared(shared) + 1023) & ~1023u;
    const unsigned rings = slice + TILE_N * RESIDENT_PADDED, barriers = rings + 2 * RESIDENT_STAGES * RING_BYTES;
    const unsigned slice_full = barriers, slice_empty = barriers + 8;
    const int col_tiles = (cols + TILE_N - 1) / TILE_N, k_steps = (padded + TILE_K - 1) / TILE_K;
    const int col = (int)(blockIdx.x % col_tiles) * TILE_N;
    const ResidentRange range = resident_range(rows, blocks, col_tiles);
    // warpgroup w's ring and its barriers
    const int role = threadIdx.x >> 7, w = role < 2 ? role : (threadIdx.x >> 5) & 3;
    const unsigned ring = rings + w * RESIDENT_STAGES * RING_BYTES;
    const unsigned full = ring_full(barriers, w), empty = full + 8 * RESIDENT_STAGES;
    if (threadIdx.x == 0) {
        barrier_init(slice_full, 1);
        barrier_init(slice_empty, CONSUMER_WARPS);
        for (int group = 0; group < 2; ++group)
            for (int s = 0; s < RESIDENT_STAGES; ++s) {
                barrier_init(ring_full(barriers, group) + 8 * s, 1);
                barrier_init(ring_full(barriers, group) + 8 * (RESIDENT_STAGES + s), CONSUMER_WARPS / 2);
            }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    fill_reductions(reductions, moduli, blocks / parts);
    __syncthreads();
    if (role == 2) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGISTERS));
        if ((threadIdx.x & 31) == 0 && w < 2) produce_rows(a_map, range, k_steps, w, ring, full, empty);
        if ((threadIdx.x & 31) == 0 && w == 2)
            produce_slices(g_map, range, k_steps, col, slice, slice_full, slice_empty);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGISTERS));
        consume_rows(range, k_steps, rows, cols, col, parts, reductions, out, shared, w, ring, full, empty, slice,
                     slice_full, slice_empty);
    }
}
