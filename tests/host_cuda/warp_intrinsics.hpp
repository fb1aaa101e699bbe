// The warp-wide CUDA intrinsics and the integer bit intrinsics that the kernels with host
// harnesses use, with CUDA's semantics (every mask is the full warp), built on warp_gather
// (host_block.hpp): each lane hands in its value and reads the ones it needs. Include after
// host_block.hpp.
#pragma once
#include <bit>
#include <cstdint>

inline int __ffs(unsigned x) { return x ? std::countr_zero(x) + 1 : 0; }
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __clzll(long long x) { return std::countl_zero((unsigned long long)x); }  // 64 for 0, like CUDA's

template <class T> T shuffle_from(T value, int source_lane) { return warp_gather(value)[source_lane & 31]; }
inline int __shfl_sync(unsigned, int value, int source_lane) { return shuffle_from(value, source_lane); }
inline int __shfl_xor_sync(unsigned, int value, int offset) { return shuffle_from(value, (threadIdx.x & 31) ^ offset); }
inline unsigned __shfl_xor_sync(unsigned, unsigned value, int offset) { return shuffle_from(value, (threadIdx.x & 31) ^ offset); }
inline unsigned long long __shfl_xor_sync(unsigned, unsigned long long value, int offset)
{
    return shuffle_from(value, (threadIdx.x & 31) ^ offset);
}
inline double __shfl_xor_sync(unsigned, double value, int offset) { return shuffle_from(value, (threadIdx.x & 31) ^ offset); }

inline unsigned __reduce_add_sync(unsigned, unsigned value)
{
    unsigned sum = 0;  // modulo 2^32, like the hardware's
    for (unsigned lane_value : warp_gather(value)) sum += lane_value;
    return sum;
}
inline unsigned __reduce_or_sync(unsigned, unsigned value)
{
    unsigned any = 0;
    for (unsigned lane_value : warp_gather(value)) any |= lane_value;
    return any;
}
inline int __any_sync(unsigned, int predicate) { return __reduce_or_sync(0xffffffffu, predicate != 0) != 0; }
inline unsigned __match_any_sync(unsigned, int value)
{
    const auto values = warp_gather(value);
    unsigned peers = 0;
    for (int lane = 0; lane < 32; ++lane) peers |= (unsigned)(values[lane] == value) << lane;
    return peers;
}
