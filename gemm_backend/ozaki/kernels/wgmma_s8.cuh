// Hopper's warpgroup INT8 products (wgmma.mma_async, sm_90a) for the wide gate kernel:
// d (64 x 8 NT int32, four warps) += A (64 x 32, registers) B (8 NT x 32, shared memory).
//
// Each warp holds A's rows 16 w .. 16 w + 15 in mma.sync's m16n8k32 A fragment (uint4) and gets
// those rows of d in mma.sync's C layout, n-tile by n-tile (d[nt][0..3]), so a warp's result
// depends on its own A and the shared B alone: the host build (no __CUDA_ARCH__) computes it with
// the warp's m16n8k32 emulation, n-tile by n-tile, reading B where the descriptor's two byte
// offsets say PTX's canonical layout puts it (so a wrong offset fails on the host too). B is
// K-major without swizzle: n-tile nt's 8
// rows x 32 bytes sit at byte 256 nt of the tile, k < 16 of row r at 16 r, k >= 16 at 128 + 16 r
// (core matrices of 8 rows x 16 bytes), which is where mma.sync's lane (g = r, t) keeps its
// B registers b0 and b1 (k = 4 t .. 4 t + 3 and 16 + 4 t ..). Checked on the H100 by
// scripts/dev/measure/wgmma_int8.cu.
#pragma once

// Byte offset, in an n-tile's 256 bytes, of B register `half` (b0, b1) of mma lane (g, t).
__device__ __forceinline__ int core_word_offset(int g, int t, int half) { return 128 * half + 16 * g + 4 * t; }

template <int NT> struct WgmmaShape {
    static_assert(NT == 1 || NT == 2 || NT == 4, "wgmma tiles of 8, 16 or 32 columns");
};

#ifdef __CUDA_ARCH__
template <bool FLAG> constexpr bool needs_sm90a_v = FLAG;
#endif

// The shared-memory descriptor of a no-swizzle K-major B tile at `tile`: start, leading byte
// offset 128 (the next 16 bytes of k), stride byte offset 256 (the next 8 rows), all in 16 bytes.
// On the host the start field holds the pointer's low bits (the emulation reads from `tile`).
__device__ __forceinline__ unsigned long long wgmma_descriptor(const void *tile)
{
#ifdef __CUDA_ARCH__
    const unsigned address = (unsigned)__cvta_generic_to_shared(tile);
#else
    const unsigned address = (unsigned)(unsigned long long)tile;
#endif
    return (unsigned long long)((address & 0x3FFFF) >> 4) | (unsigned long long)(128 >> 4) << 16 |
           (unsigned long long)(256 >> 4) << 32;
}

#ifndef __CUDA_ARCH__
// The host emulation's view of a descriptor: the byte of B (row n, k) in the tile, by PTX's
// canonical no-swizzle K-major layout: 8-row groups `stride` apart, 16-byte halves of k `leading`
// apart, 16 bytes per row within a core matrix.
struct DescribedTile {
    int leading, stride;
    explicit DescribedTile(unsigned long long descriptor)
        : leading((int)((descriptor >> 16) & 0x3FFF) << 4), stride((int)((descriptor >> 32) & 0x3FFF) << 4)
    {
    }
    int byte(int n, int k) const { return (n >> 3) * stride + (k >> 4) * leading + (n & 7) * 16 + (k & 15); }
};
#endif

// wgmma.fence: the registers written since (A, and d before its first product) are the ones read.
template <int NT> __device__ __forceinline__ void wgmma_fence()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#elif defined(__CUDA_ARCH__)
    static_assert(needs_sm90a_v<NT == 0>, "wgmma kernels are compiled for sm_90a");
#endif
}

// Closes the group of products issued since the last commit.
template <int NT> __device__ __forceinline__ void wgmma_commit()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

// Waits until at most PENDING committed groups are still running (0: all done, after which d
// and A may be read and written again and B's shared memory overwritten; 1: every group but the
// newest, whose registers and tile stay untouchable).
template <int PENDING> __device__ __forceinline__ void wgmma_wait()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
#endif
}

// Ordinary shared-memory stores (the column digits) made visible to the tensor cores' reads, or
// ordered before the copy engine's writes to the same bytes (crt_products.cu); every writer runs it
// before the barrier that precedes those.
__device__ __forceinline__ void fence_shared_for_wgmma()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// d += A B for the warpgroup (asynchronous on the device: wgmma_commit, then wgmma_wait until
// its group is done before d, a or the tile are touched). tile: the B tile in shared memory, 256 NT bytes.
template <int NT>
__device__ __forceinline__ void wgmma_s8(int (&d)[NT][4], const uint4 &a, const unsigned *tile)
{
    (void)WgmmaShape<NT>{};
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const unsigned long long b = wgmma_descriptor(tile);
    if constexpr (NT == 1) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p;\n}\n"
                     : "+r"(d[0][0]), "+r"(d[0][1]), "+r"(d[0][2]), "+r"(d[0][3])
                     : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(b), "r"(1));
    } else if constexpr (NT == 2) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7}, "
                     "{%8, %9, %10, %11}, %12, p;\n}\n"
                     : "+r"(d[0][0]), "+r"(d[0][1]), "+r"(d[0][2]), "+r"(d[0][3]),
                       "+r"(d[1][0]), "+r"(d[1][1]), "+r"(d[1][2]), "+r"(d[1][3])
                     : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(b), "r"(1));
    } else {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, "
                     "%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p;\n}\n"
                     : "+r"(d[0][0]), "+r"(d[0][1]), "+r"(d[0][2]), "+r"(d[0][3]),
                       "+r"(d[1][0]), "+r"(d[1][1]), "+r"(d[1][2]), "+r"(d[1][3]),
                       "+r"(d[2][0]), "+r"(d[2][1]), "+r"(d[2][2]), "+r"(d[2][3]),
                       "+r"(d[3][0]), "+r"(d[3][1]), "+r"(d[3][2]), "+r"(d[3][3])
                     : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(b), "r"(1));
    }
#elif defined(__CUDA_ARCH__)
    static_assert(needs_sm90a_v<NT == 0>, "wgmma kernels are compiled for sm_90a");
#else
    // lane (g, t) passes mma's B registers of row 8 nt + g: k = 4 t .. 4 t + 3 and 16 + 4 t ..
    const DescribedTile described(wgmma_descriptor(tile));
    const unsigned char *bytes = (const unsigned char *)tile;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    auto word = [&](int n, int k) {  // bytes k .. k + 3 of row n, little-endian as in a register
        const unsigned char *first = bytes + described.byte(n, k);
        return (unsigned)first[0] | (unsigned)first[1] << 8 | (unsigned)first[2] << 16 | (unsigned)first[3] << 24;
    };
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) mma_s8(d[nt], a, word(8 * nt + g, 4 * t), word(8 * nt + g, 16 + 4 * t));
#endif
}
