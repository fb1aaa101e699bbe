// The CUDA execution model as the host harnesses need it: one block of one warp, its 32 lanes as
// std::threads (launch_one_warp), thread and block indices, the qualifiers compiled away,
// __shared__ arrays as function-local statics (one copy for all lanes), and __syncthreads on a
// barrier (a block is one warp here). Included by ozaki_crt_host.cpp and span_scan_host.cpp
// before their intrinsics and the kernel source.
#pragma once
#include <barrier>
#include <thread>
#include <vector>

struct dim3 { unsigned x = 0, y = 0, z = 0; };
thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __shared__ static
#define __launch_bounds__(...)

static std::barrier<> *warp_barrier;
static int int_lanes[32];  // one value per lane, for the warp-wide intrinsics

inline void __syncthreads() { warp_barrier->arrive_and_wait(); }

template <class Kernel> void launch_one_warp(Kernel kernel)
{
    std::barrier<> barrier(32);
    warp_barrier = &barrier;
    blockDim.x = 32;
    gridDim.x = 1;
    std::vector<std::thread> lanes;
    for (unsigned lane = 0; lane < 32; ++lane)
        lanes.emplace_back([&kernel, lane] { threadIdx.x = lane; kernel(); });
    for (auto &lane : lanes) lane.join();
}
