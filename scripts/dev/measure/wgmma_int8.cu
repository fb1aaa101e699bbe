// INT8 wgmma (sm_90a) against mma.sync on this GPU, and the operand layouts a wgmma gate kernel
// would use, checked against the host: issue 24 asks whether the INT8 units can beat native FP64
// on 7- to 10-qubit gates, and the wide kernel's mma.sync floor lies above the issue's targets.
//
//   check: one warpgroup computes D (64 x N, int32) = A (64 x 32) B^T (B: N x 32), int8, with
//     A from shared memory (ss) or from registers (rs), B from shared memory, both K-major
//     without swizzle in 8-row x 16-byte core matrices (core_offset); for each way of filling
//     the descriptor's two byte offsets (leading = along K, stride = along rows, or swapped) and
//     for two orders of the A registers, whether every entry of D equals the host's.
//   rate: tera-operations per second (2 per multiply-add) with the operands on chip, the same
//     accumulator shapes a gate kernel holds: mma.sync m16n8k32 (16 accumulators of 4 per warp),
//     wgmma m64n32k32 (A from registers or shared memory, 8 accumulators of 16 per thread: the
//     wide kernel's diagonal sums) and m64n256k32 (the instruction's largest tile).
//
// Build and run (a warning that wgmma instructions are serialized would mean ptxas gave up on
// the asynchronous path; the rates would show it):
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a scripts/dev/measure/wgmma_int8.cu -o /tmp/wgmma_int8
//   /tmp/wgmma_int8
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t status_ = (call);                                                                \
        if (status_ != cudaSuccess) {                                                                \
            fprintf(stderr, "CUDA error %s at line %d\n", cudaGetErrorString(status_), __LINE__);   \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

// Byte of entry (row r, k) of an R x 32 int8 tile: core matrix (r / 8, k / 16) of 128 bytes
// (8 rows of 16 bytes) at (r / 8) * 256 + (k / 16) * 128.
__host__ __device__ inline int core_offset(int r, int k) { return (r >> 3) * 256 + (k >> 4) * 128 + (r & 7) * 16 + (k & 15); }
constexpr unsigned K_CORE_BYTES = 128, ROW_GROUP_BYTES = 256;

// Shared-memory matrix descriptor, no swizzle: start address, leading and stride byte offsets.
__device__ inline uint64_t descriptor(const void *tile, unsigned leading_bytes, unsigned stride_bytes)
{
    const unsigned address = (unsigned)__cvta_generic_to_shared(tile);
    return (uint64_t)((address & 0x3FFFF) >> 4) | (uint64_t)((leading_bytes & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((stride_bytes & 0x3FFFF) >> 4) << 32;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
// Ordinary shared-memory stores made visible to the tensor cores' (async proxy) reads.
__device__ __forceinline__ void async_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void mma_sync_s8(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// -- wgmma wrappers: d (+)= A B^T, s8 x s8 -> s32, scale-d on -------------------------------
__device__ __forceinline__ void wgmma_ss_n32(int (&d)[16], uint64_t a, uint64_t b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p;\n}\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
                 : "l"(a), "l"(b), "r"(1));
}

__device__ __forceinline__ void wgmma_ss_n256(int (&d)[128], uint64_t a, uint64_t b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p;\n}\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]), "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
                 : "l"(a), "l"(b), "r"(1));
}

__device__ __forceinline__ void wgmma_rs_n32(int (&d)[16], const unsigned (&a)[4], uint64_t b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p;\n}\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

template <int N> __device__ __forceinline__ void wgmma_ss(int (&d)[N / 2], uint64_t a, uint64_t b)
{
    if constexpr (N == 32) wgmma_ss_n32(d, a, b);
    else wgmma_ss_n256(d, a, b);
}

// -- check -----------------------------------------------------------------------------------
// A register word w of lane (g, t) in warp wp: rows 16 wp + g (+ 8), k 4 t (+ 16) .. + 3.
// order 0: (g, lo), (g + 8, lo), (g, hi), (g + 8, hi) (mma.sync's A); order 1: (g, lo), (g, hi), ...
__device__ inline unsigned a_word(const int8_t *a, int warp, int lane, int w, int order)
{
    const int g = lane >> 2, t = lane & 3;
    const int high_row = order == 0 ? w & 1 : w >> 1, high_k = order == 0 ? w >> 1 : w & 1;
    const int8_t *p = a + (16 * warp + g + 8 * high_row) * 32 + 16 * high_k + 4 * t;
    return (unsigned)(uint8_t)p[0] | (unsigned)(uint8_t)p[1] << 8 | (unsigned)(uint8_t)p[2] << 16 | (unsigned)(uint8_t)p[3] << 24;
}

// D = A B^T by one warpgroup; a: 64 x 32, b: N x 32 row-major int8; d: 64 x N int32, entry
// (16 warp + g + 8 (i >> 1), 8 j + 2 t + (i & 1)) from register 4 j + i (the mma.sync C layout
// per warp, assumed here and checked by the host).
template <int N>
__global__ void check_product(const int8_t *a, const int8_t *b, int *d, int swap_offsets, int from_registers, int order)
{
    __shared__ __align__(128) int8_t a_tile[64 * 32];
    __shared__ __align__(128) int8_t b_tile[N * 32];
    for (int i = threadIdx.x; i < 64 * 32; i += blockDim.x) a_tile[core_offset(i / 32, i % 32)] = a[i];
    for (int i = threadIdx.x; i < N * 32; i += blockDim.x) b_tile[core_offset(i / 32, i % 32)] = b[i];
    async_proxy_fence();
    __syncthreads();
    const unsigned leading = swap_offsets ? ROW_GROUP_BYTES : K_CORE_BYTES;
    const unsigned stride = swap_offsets ? K_CORE_BYTES : ROW_GROUP_BYTES;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int acc[N / 2] = {};
    wgmma_fence();
    if (from_registers) {
        if constexpr (N == 32) {
            const unsigned words[4] = {a_word(a, warp, lane, 0, order), a_word(a, warp, lane, 1, order),
                                       a_word(a, warp, lane, 2, order), a_word(a, warp, lane, 3, order)};
            wgmma_rs_n32(acc, words, descriptor(b_tile, leading, stride));
        }
    } else {
        wgmma_ss<N>(acc, descriptor(a_tile, leading, stride), descriptor(b_tile, leading, stride));
    }
    wgmma_commit();
    wgmma_wait<0>();
    const int g = lane >> 2, t = lane & 3;
    for (int j = 0; j < N / 8; ++j)
        for (int i = 0; i < 4; ++i) d[(16 * warp + g + 8 * (i >> 1)) * N + 8 * j + 2 * t + (i & 1)] = acc[4 * j + i];
}

template <int N> bool check(int swap_offsets, int from_registers, int order)
{
    std::vector<int8_t> a(64 * 32), b(N * 32);
    for (auto &v : a) v = (int8_t)(rand() & 0xff);
    for (auto &v : b) v = (int8_t)(rand() & 0xff);
    int8_t *a_dev, *b_dev;
    int *d_dev;
    CHECK(cudaMalloc(&a_dev, a.size()));
    CHECK(cudaMalloc(&b_dev, b.size()));
    CHECK(cudaMalloc(&d_dev, 64 * N * sizeof(int)));
    CHECK(cudaMemcpy(a_dev, a.data(), a.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b_dev, b.data(), b.size(), cudaMemcpyHostToDevice));
    check_product<N><<<1, 128>>>(a_dev, b_dev, d_dev, swap_offsets, from_registers, order);
    CHECK(cudaGetLastError());
    std::vector<int> d(64 * N);
    CHECK(cudaMemcpy(d.data(), d_dev, d.size() * sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int r = 0; r < 64; ++r)
        for (int c = 0; c < N; ++c) {
            int expected = 0;
            for (int k = 0; k < 32; ++k) expected += a[r * 32 + k] * b[c * 32 + k];
            wrong += d[r * N + c] != expected;
        }
    CHECK(cudaFree(a_dev));
    CHECK(cudaFree(b_dev));
    CHECK(cudaFree(d_dev));
    printf("check m64n%dk32 A from %s, offsets %s, A order %d: %s (%d of %d wrong)\n", N,
           from_registers ? "registers" : "shared", swap_offsets ? "swapped" : "leading=K", order,
           wrong ? "WRONG" : "equal", wrong, 64 * N);
    return wrong == 0;
}

// -- rate ------------------------------------------------------------------------------------
constexpr int WARPS = 8;  // per block: two warpgroups
constexpr int ITERS = 20000;

// 16 independent m16n8k32 accumulators per warp (64 registers), operands in registers.
__global__ void __launch_bounds__(32 * WARPS) rate_mma_sync(int *sink)
{
    unsigned a[4] = {threadIdx.x, 0x01020304u, 0x7f7f7f7fu, 0x80808080u};
    const unsigned b0 = 0x05060708u ^ threadIdx.x, b1 = 0x11223344u;
    int acc[16][4] = {};
    for (int i = 0; i < ITERS; ++i)
#pragma unroll
        for (int j = 0; j < 16; ++j) mma_sync_s8(acc[j], a, b0, b1);
    int s = 0;
    for (int j = 0; j < 16; ++j) s += acc[j][0] ^ acc[j][1] ^ acc[j][2] ^ acc[j][3];
    if (s == 0x12345) *sink = s;
}

// m64n32k32, 8 accumulators of 16 registers per thread (the wide kernel's diagonal sums), two
// batches of 4 in flight; B: 8 different 32 x 32 tiles; A from registers or from shared memory.
template <bool A_IN_REGISTERS> __global__ void __launch_bounds__(32 * WARPS) rate_wgmma_n32(int *sink)
{
    __shared__ __align__(128) int8_t tiles[2][8][32 * 32];  // [A, B][tile]
    for (int i = threadIdx.x; i < 2 * 8 * 32 * 32; i += blockDim.x) (&tiles[0][0][0])[i] = (int8_t)(i * 37 + 11);
    async_proxy_fence();
    __syncthreads();
    const unsigned a[4] = {threadIdx.x, 0x01020304u, 0x7f7f7f7fu, 0x80808080u};
    uint64_t a_desc[8], b_desc[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        a_desc[j] = descriptor(&tiles[0][j / 2][0], K_CORE_BYTES, ROW_GROUP_BYTES);  // 64 rows: two tiles
        b_desc[j] = descriptor(&tiles[1][j][0], K_CORE_BYTES, ROW_GROUP_BYTES);
    }
    int acc[8][16] = {};
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            wgmma_fence();
#pragma unroll
            for (int j = 4 * half; j < 4 * half + 4; ++j) {
                if constexpr (A_IN_REGISTERS) wgmma_rs_n32(acc[j], a, b_desc[j]);
                else wgmma_ss_n32(acc[j], a_desc[j], b_desc[j]);
            }
            wgmma_commit();
            wgmma_wait<1>();
        }
    }
    wgmma_wait<0>();
    int s = 0;
    for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 16; ++i) s ^= acc[j][i];
    if (s == 0x12345) *sink = s;
}

// m64n256k32 with A and B from shared memory, one accumulator of 128 registers, batches of 4.
__global__ void __launch_bounds__(32 * WARPS) rate_wgmma_n256(int *sink)
{
    __shared__ __align__(128) int8_t a_tile[4][64 * 32];
    __shared__ __align__(128) int8_t b_tile[4][256 * 32];
    for (int i = threadIdx.x; i < 4 * 64 * 32; i += blockDim.x) (&a_tile[0][0])[i] = (int8_t)(i * 37 + 11);
    for (int i = threadIdx.x; i < 4 * 256 * 32; i += blockDim.x) (&b_tile[0][0])[i] = (int8_t)(i * 53 + 5);
    async_proxy_fence();
    __syncthreads();
    int acc[128] = {};
    for (int i = 0; i < ITERS / 8; ++i) {
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < 4; ++j)
            wgmma_ss_n256(acc, descriptor(a_tile[j], K_CORE_BYTES, ROW_GROUP_BYTES),
                          descriptor(b_tile[j], K_CORE_BYTES, ROW_GROUP_BYTES));
        wgmma_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    int s = 0;
    for (int i = 0; i < 128; ++i) s ^= acc[i];
    if (s == 0x12345) *sink = s;
}

template <class Kernel> void rate(const char *label, Kernel kernel, double ops_per_block, int blocks_per_sm)
{
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int *sink;
    CHECK(cudaMalloc(&sink, sizeof(int)));
    const int blocks = sms * blocks_per_sm;
    kernel<<<blocks, 32 * WARPS>>>(sink);  // warm-up
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<float> ms(5);
    for (auto &m : ms) {
        CHECK(cudaEventRecord(start));
        kernel<<<blocks, 32 * WARPS>>>(sink);
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&m, start, stop));
    }
    std::sort(ms.begin(), ms.end());
    printf("rate %-46s %2d blocks/SM  %8.1f TOP/s  (median %.2f ms)\n", label, blocks_per_sm,
           ops_per_block * blocks / (ms[2] * 1e-3) / 1e12, ms[2]);
    CHECK(cudaFree(sink));
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    srand(1);
    for (int swap = 0; swap < 2; ++swap) {
        check<32>(swap, 0, 0);
        check<256>(swap, 0, 0);
        for (int order = 0; order < 2; ++order) check<32>(swap, 1, order);
    }
    const double wgmma_n32 = 2.0 * 64 * 32 * 32, wgmma_n256 = 2.0 * 64 * 256 * 32, mma = 2.0 * 16 * 8 * 32;
    for (int blocks_per_sm = 1; blocks_per_sm <= 2; ++blocks_per_sm) {
        rate("mma.sync m16n8k32 (registers)", rate_mma_sync, mma * 16 * ITERS * WARPS, blocks_per_sm);
        rate("wgmma m64n32k32 A registers, B shared", rate_wgmma_n32<true>, wgmma_n32 * 8 * ITERS * 2, blocks_per_sm);
        rate("wgmma m64n32k32 A and B shared", rate_wgmma_n32<false>, wgmma_n32 * 8 * ITERS * 2, blocks_per_sm);
        rate("wgmma m64n256k32 A and B shared", rate_wgmma_n256, wgmma_n256 * 4 * (ITERS / 8) * 2, blocks_per_sm);
    }
    return 0;
}
