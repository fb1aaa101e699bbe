// Experiment (scripts/dev/crt_products_bench.py): Ozaki-II's INT8 products with the reduction modulo
// p in the epilogue, so that each product leaves the chip as one int8 residue instead of an int32.
// out[b][r][n] = (sum_h a[r][b * padded + h] g[n][b * padded + h]) mods p_(b / parts), symmetric in
// [-floor(p/2), floor((p-1)/2)], for n even. mma.sync m16n8k32 (s8 x s8 -> s32, exact for padded <= 2^17),
// a block tile of 128 rows of a x 128 rows of g, 64 bytes of k per stage, STAGES stages of cp.async,
// eight warps of 64 x 32, fragments by ldmatrix from a swizzled tile.
#define TILE 128
#define TILE_K 64
#define STAGES 4
#define THREADS 256
#define TILE_BYTES (TILE * TILE_K)

__device__ __forceinline__ void copy_16(void *shared, const void *global, bool valid)
{
    const unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(global), "r"(valid ? 16 : 0)
                 : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void *shared)
{
    const unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

__device__ __forceinline__ void mma(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset of 16-byte chunk c (0..3) of tile row r: chunks swizzled so that the eight rows an
// ldmatrix reads at one chunk fall in eight different bank groups.
__device__ __forceinline__ int tile_offset(int r, int c) { return r * TILE_K + 16 * (c ^ ((r >> 1) & 3)); }

// Copies k bytes k0 .. k0 + TILE_K - 1 of rows first .. first + TILE - 1 (of `count`) into tile.
__device__ __forceinline__ void stage_rows(signed char *tile, const signed char *rows, long long first, long long count,
                                           long long stride, int k0, int padded)
{
#pragma unroll
    for (int i = 0; i < TILE * TILE_K / 16 / THREADS; ++i) {
        const int q = threadIdx.x + i * THREADS, r = q >> 2, c = q & 3;
        const bool ok = first + r < count && k0 + 16 * c < padded;
        copy_16(tile + tile_offset(r, c), ok ? rows + (first + r) * stride + k0 + 16 * c : rows, ok);
    }
}

// The row (within a 16-row A tile or a 16-row pair of B tiles) and 16-byte chunk (within a 32-byte
// step of k) whose address a lane gives ldmatrix.x4: the four 8 x 16-byte matrices are A's
// a0..a3 (rows 0-7, 8-15 at k 0-15, then at k 16-31) and B's b0, b1 of two n8 tiles.
struct LaneRows {
    int a_row, a_chunk, b_row, b_chunk;
    __device__ explicit LaneRows(int lane)
        : a_row(((lane >> 3) & 1) * 8 + (lane & 7)), a_chunk(lane >> 4), b_row((lane >> 4) * 8 + (lane & 7)),
          b_chunk((lane >> 3) & 1)
    {
    }
};

// The warp's 64 x 32 products of one 32-byte step of k into acc[mt][nt]: A fragments of four m16
// tiles and B fragments of four n8 tiles (two to an ldmatrix), a_address(mt) and b_address(np)
// giving this lane's ldmatrix row address.
template <class AAddress, class BAddress>
__device__ __forceinline__ void warp_step(int (&acc)[4][4][4], AAddress a_address, BAddress b_address)
{
    unsigned af[4][4], bf[2][4];
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) ldmatrix_x4(af[mt], a_address(mt));
#pragma unroll
    for (int np = 0; np < 2; ++np) ldmatrix_x4(bf[np], b_address(np));
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
            const unsigned(&b)[4] = bf[nt >> 1];
            mma(acc[mt][nt], af[mt], b[2 * (nt & 1)], b[2 * (nt & 1) + 1]);
        }
}

// Writes the warp's 64 x 32 products (rows from first_row, columns from first_col) as symmetric
// residues modulo p to out (rows x n int8; n even), and zeroes acc. u = P - floor(P magic / 2^32) p
// lies in (-p/4, 5p/4) (crt_arith.cuh's product_residue); one conditional subtraction makes it symmetric.
__device__ __forceinline__ void store_residues(int (&acc)[4][4][4], signed char *out, long long rows, int n,
                                               long long first_row, int first_col, int p)
{
    const int magic = (int)((0x100000000ull + p / 2) / p), half = (p - 1) / 2;
    const int lane = threadIdx.x & 31, g8 = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int half_row = 0; half_row < 2; ++half_row) {
            const long long r = first_row + mt * 16 + half_row * 8 + g8;
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                const int c = first_col + nt * 8 + 2 * t;
                int v[2];
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    int &product = acc[mt][nt][2 * half_row + e];
                    const int u = product - __mulhi(product, magic) * p;
                    v[e] = u > half ? u - p : u;
                    product = 0;
                }
                if (r < rows && c < n) *(char2 *)(out + r * n + c) = make_char2((signed char)v[0], (signed char)v[1]);
            }
        }
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
    crt_products_mod(const signed char *__restrict__ a, long long rows, long long a_stride,
                     const signed char *__restrict__ g, int n, long long g_stride, int padded, int parts,
                     const double *__restrict__ moduli, signed char *__restrict__ out)
{
    extern __shared__ __align__(128) signed char tiles[];  // STAGES x (a tile, g tile)
    const int block = blockIdx.z;
    const long long row0 = (long long)blockIdx.y * TILE;
    const int n0 = blockIdx.x * TILE;
    const signed char *a_block = a + (long long)block * padded, *g_block = g + (long long)block * padded;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp >> 2, wn = warp & 3;
    const int k_tiles = (padded + TILE_K - 1) / TILE_K;

    int acc[4][4][4] = {};
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) {
            stage_rows(tiles + s * 2 * TILE_BYTES, a_block, row0, rows, a_stride, s * TILE_K, padded);
            stage_rows(tiles + s * 2 * TILE_BYTES + TILE_BYTES, g_block, n0, n, g_stride, s * TILE_K, padded);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
        __syncthreads();
        const int next = kt + STAGES - 1;
        if (next < k_tiles) {
            signed char *stage = tiles + (next % STAGES) * 2 * TILE_BYTES;
            stage_rows(stage, a_block, row0, rows, a_stride, next * TILE_K, padded);
            stage_rows(stage + TILE_BYTES, g_block, n0, n, g_stride, next * TILE_K, padded);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        const signed char *a_tile = tiles + (kt % STAGES) * 2 * TILE_BYTES, *g_tile = a_tile + TILE_BYTES;
        const LaneRows at(lane);
#pragma unroll
        for (int ks = 0; ks < TILE_K / 32; ++ks)
            warp_step(
                acc, [&](int mt) { return a_tile + tile_offset(wm * 64 + mt * 16 + at.a_row, ks * 2 + at.a_chunk); },
                [&](int np) { return g_tile + tile_offset(wn * 32 + np * 16 + at.b_row, ks * 2 + at.b_chunk); });
    }
    store_residues(acc, out + (long long)block * rows * n, rows, n, row0 + wm * 64, n0 + wn * 32,
                   (int)moduli[block / parts]);
}

// The same products with the block's 128 rows of a resident in shared memory (read once), the
// gate's rows streamed 256 at a time (RESIDENT_STAGES stages of 64 bytes of k), sixteen warps of
// 64 x 32: the L2 then carries one byte per about 117 multiply-adds at K = 1024 instead of 64.
// For n even and padded a multiple of 128 (gate sizes K >= 128).
#define RESIDENT_THREADS 512
#define RESIDENT_N 256
#define RESIDENT_STAGES 3
#define STAGE_BYTES (RESIDENT_N * TILE_K)

// Byte offset of 16-byte chunk c of row r of the resident tile (row_bytes = padded, a multiple of
// 128): chunks swizzled within each 128 bytes so that eight rows at one chunk take eight bank groups.
__device__ __forceinline__ int resident_offset(int r, int c, int row_bytes)
{
    return r * row_bytes + 16 * (c ^ (r & 7));
}

extern "C" __global__ void __launch_bounds__(RESIDENT_THREADS, 1)
    crt_products_mod_resident(const signed char *__restrict__ a, long long rows, long long a_stride,
                              const signed char *__restrict__ g, int n, long long g_stride, int padded, int parts,
                              const double *__restrict__ moduli, signed char *__restrict__ out)
{
    extern __shared__ __align__(128) signed char shared[];
    signed char *resident = shared, *stages = shared + TILE * padded;
    const int block = blockIdx.z;
    const long long row0 = (long long)blockIdx.y * TILE;
    const signed char *a_block = a + (long long)block * padded, *g_block = g + (long long)block * padded;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp >> 3, wn = warp & 7;
    const int k_tiles = padded / TILE_K, passes = (n + RESIDENT_N - 1) / RESIDENT_N, steps = passes * k_tiles;
    const int chunks = padded / 16;

    for (int q = threadIdx.x; q < TILE * chunks; q += RESIDENT_THREADS) {
        const int r = q / chunks, c = q - r * chunks;
        const bool ok = row0 + r < rows;
        copy_16(resident + resident_offset(r, c, padded), ok ? a_block + (row0 + r) * a_stride + 16 * c : a_block, ok);
    }
    auto stage_step = [&](int step) {
        const int pass = step / k_tiles, kt = step - pass * k_tiles;
        signed char *stage = stages + (step % RESIDENT_STAGES) * STAGE_BYTES;
#pragma unroll
        for (int i = 0; i < STAGE_BYTES / 16 / RESIDENT_THREADS; ++i) {
            const int q = threadIdx.x + i * RESIDENT_THREADS, r = q >> 2, c = q & 3;
            const int row = pass * RESIDENT_N + r;
            const bool ok = row < n;
            const signed char *source = g_block + (long long)row * g_stride + kt * TILE_K + 16 * c;
            copy_16(stage + tile_offset(r, c), ok ? source : g_block, ok);
        }
    };
#pragma unroll
    for (int s = 0; s < RESIDENT_STAGES - 1; ++s) {
        if (s < steps) stage_step(s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    const int p = (int)moduli[block / parts];
    int acc[4][4][4] = {};
    for (int step = 0; step < steps; ++step) {
        asm volatile("cp.async.wait_group %0;" ::"n"(RESIDENT_STAGES - 2) : "memory");
        __syncthreads();
        if (step + RESIDENT_STAGES - 1 < steps) stage_step(step + RESIDENT_STAGES - 1);
        asm volatile("cp.async.commit_group;" ::: "memory");
        const int pass = step / k_tiles, kt = step - pass * k_tiles;
        const signed char *g_tile = stages + (step % RESIDENT_STAGES) * STAGE_BYTES;
        const LaneRows at(lane);
#pragma unroll
        for (int ks = 0; ks < TILE_K / 32; ++ks)
            warp_step(
                acc,
                [&](int mt) {
                    const int row = wm * 64 + mt * 16 + at.a_row;
                    return resident + resident_offset(row, kt * 4 + ks * 2 + at.a_chunk, padded);
                },
                [&](int np) { return g_tile + tile_offset(wn * 32 + np * 16 + at.b_row, ks * 2 + at.b_chunk); });
        if (kt + 1 == k_tiles)
            store_residues(acc, out + (long long)block * rows * n, rows, n, row0 + wm * 64,
                           pass * RESIDENT_N + wn * 32, p);
    }
}
