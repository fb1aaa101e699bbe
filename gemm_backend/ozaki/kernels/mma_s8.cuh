// The INT8 tensor-core product on a warp's fragments, shared by the fused Ozaki-I gate kernels
// (ozaki_digits.cuh) and the Ozaki-II gate reconstruction (ozaki_crt.cu).
#pragma once

// d += A B of the warp's m16n8k32 INT8 fragments (PTX's layouts; int32 wraps), capability 8.0 and
// later. Compiled for the host, the harnesses' emulation (tests/host_cuda/mma_s8_host.hpp).
__device__ __forceinline__ void mma_s8(int (&d)[4], const uint4 &a, unsigned b0, unsigned b1)
{
#ifdef __CUDA_ARCH__
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
#else
    host_mma_s8(d, a, b0, b1);
#endif
}
