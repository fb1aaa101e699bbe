// The warp-wide CUDA intrinsics and integer bit intrinsics that the window-counting kernels
// (state_histogram.cu, span_scan.cu) use, with CUDA's semantics, for their host harnesses: every
// lane of the one warp (one_warp.hpp) writes its value, waits for the others, reads what it needs
// and waits again before the shared slots can be reused. Include after one_warp.hpp.
#pragma once
#include <bit>
#include <cstdint>

inline int __ffs(unsigned x) { return x ? std::countr_zero(x) + 1 : 0; }
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __clzll(long long x) { return std::countl_zero((unsigned long long)x); }  // 64 for 0, like CUDA's
inline int __double2hiint(double x) { return (int)(std::bit_cast<uint64_t>(x) >> 32); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }

static unsigned unsigned_lanes[32];
static double double_lanes[32];

// Every lane's value, after all 32 lanes have written theirs (every lane of the warp must call).
template <class T> void share(T *lanes, T value)
{
    lanes[threadIdx.x & 31] = value;
    warp_barrier->arrive_and_wait();
}
inline void done_reading() { warp_barrier->arrive_and_wait(); }

inline unsigned __shfl_xor_sync(unsigned, unsigned value, int offset)
{
    share(unsigned_lanes, value);
    const unsigned other = unsigned_lanes[(threadIdx.x & 31) ^ offset];
    done_reading();
    return other;
}
inline double __shfl_xor_sync(unsigned, double value, int offset)
{
    share(double_lanes, value);
    const double other = double_lanes[(threadIdx.x & 31) ^ offset];
    done_reading();
    return other;
}
inline unsigned __reduce_add_sync(unsigned, unsigned value)
{
    share(unsigned_lanes, value);
    unsigned sum = 0;  // modulo 2^32, like the hardware's
    for (int lane = 0; lane < 32; ++lane) sum += unsigned_lanes[lane];
    done_reading();
    return sum;
}
inline unsigned __reduce_or_sync(unsigned, unsigned value)
{
    share(unsigned_lanes, value);
    unsigned any = 0;
    for (int lane = 0; lane < 32; ++lane) any |= unsigned_lanes[lane];
    done_reading();
    return any;
}
inline int __any_sync(unsigned, int predicate) { return __reduce_or_sync(0xffffffffu, predicate != 0) != 0; }
inline unsigned __match_any_sync(unsigned, int value)
{
    share(int_lanes, value);
    unsigned peers = 0;
    for (int lane = 0; lane < 32; ++lane) peers |= (unsigned)(int_lanes[lane] == value) << lane;
    done_reading();
    return peers;
}
