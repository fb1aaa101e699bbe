// The CUDA execution model as the host harnesses need it: one block of 1 .. MAX_HOST_WARPS warps
// at a time, every lane a std::thread (launch_block), thread and block indices, the qualifiers
// compiled away, __shared__ arrays as function-local statics (one copy for all threads),
// __syncthreads on a barrier of the block and __syncwarp on one of the warp, and warp_gather, the
// exchange that every warp-wide intrinsic (warp_intrinsics.hpp) and the mma emulation are built
// on. Included by every harness before its intrinsics and the kernel source.
#pragma once
#include <algorithm>
#include <array>
#include <barrier>
#include <deque>
#include <thread>
#include <vector>

#define MAX_HOST_WARPS 8

struct dim3 { unsigned x = 0, y = 0, z = 0; };
thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__
#define __shared__ static
#define __launch_bounds__(...)

static std::barrier<> *block_barrier;
thread_local std::barrier<> *warp_barrier;  // this thread's warp

inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline void __syncwarp() { warp_barrier->arrive_and_wait(); }

// kernel() on `warps` warps of 32 threads as block `block` of a grid of `blocks`.
template <class Kernel> void launch_block(int warps, int block, int blocks, Kernel kernel)
{
    std::barrier<> whole_block(32 * warps);
    std::deque<std::barrier<>> warp_barriers;
    for (int w = 0; w < warps; ++w) warp_barriers.emplace_back(32);
    block_barrier = &whole_block;
    blockDim.x = 32 * warps;
    gridDim.x = blocks;
    std::vector<std::thread> threads;
    for (int i = 0; i < 32 * warps; ++i)
        threads.emplace_back([&kernel, &warp_barriers, i, block] {
            threadIdx.x = i;
            blockIdx.x = block;
            warp_barrier = &warp_barriers[i / 32];
            kernel();
        });
    for (auto &thread : threads) thread.join();
}
template <class Kernel> void launch_one_warp(Kernel kernel) { launch_block(1, 0, 1, kernel); }

// The values that the 32 lanes of this thread's warp pass to the same warp-wide call, indexed by
// lane; every lane of the warp must call. One barrier a call: each type keeps two sets of slots
// per warp and uses them in turn, and a lane writes a set again only two calls later, after every
// lane has passed the barrier of the call between, which each passes only once done reading.
template <class T> std::array<T, 32> warp_gather(const T &value)
{
    static T slots[MAX_HOST_WARPS][2][32];
    thread_local int turn = 0;
    T *set = slots[threadIdx.x >> 5][turn];
    turn ^= 1;
    set[threadIdx.x & 31] = value;
    warp_barrier->arrive_and_wait();
    std::array<T, 32> all;
    std::copy(set, set + 32, all.begin());
    return all;
}
