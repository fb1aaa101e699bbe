// kernels/span_scan.cu compiled for the host, so that its logic can be checked against the numpy
// specification (spans.summarize_spans, split.row_exponents) on a machine without a GPU
// (tests/test_span_scan.py). A launch runs one block of one warp: 32 std::threads, with the warp
// and block primitives the kernel uses (__match_any_sync, __syncthreads) built on a barrier,
// atomics as std::atomic_ref, and __shared__ arrays as function-local statics (one copy for all
// threads). The math functions are the C library's, exact like CUDA's for the operations used
// (frexp, ldexp, fabs, fmax); fma and sqrt are correctly rounded in both.
// Build: g++ -std=c++20 -shared -fPIC -D<span_scan.py's definitions> -DKERNELS='"span_scan.cu"' span_scan_host.cpp
#include "one_warp.hpp"
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>

using std::fabs; using std::fma; using std::fmax; using std::frexp; using std::isfinite; using std::ldexp;
using std::sqrt;


inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline int __ffs(unsigned x) { return x ? std::countr_zero(x) + 1 : 0; }
inline int __popc(unsigned x) { return std::popcount(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }

template <class T> inline T atomicAdd(T *address, T value) { return std::atomic_ref<T>(*address).fetch_add(value); }
inline int atomicExch(int *address, int value) { return std::atomic_ref<int>(*address).exchange(value); }
inline unsigned long long atomicMax(unsigned long long *address, unsigned long long value)
{
    std::atomic_ref<unsigned long long> target(*address);
    unsigned long long seen = target.load();
    while (seen < value && !target.compare_exchange_weak(seen, value)) {}
    return seen;
}

// The lanes holding the same value as this one (every lane of the warp must call it).
inline unsigned __match_any_sync(unsigned, int value)
{
    const int lane = threadIdx.x & 31;
    int_lanes[lane] = value;
    warp_barrier->arrive_and_wait();
    unsigned peers = 0;
    for (int other = 0; other < 32; ++other) peers |= (unsigned)(int_lanes[other] == value) << other;
    warp_barrier->arrive_and_wait();
    return peers;
}

#include KERNELS

extern "C" void host_span_scan(const double *x, long long rows, long long elements, int width, long long row_step,
                               long long element_step, int lanes_across_rows, int bits, int *exponents,
                               int *nonfinite, unsigned long long *totals)
{
    launch_one_warp([&] {
        span_scan(x, rows, elements, width, row_step, element_step, lanes_across_rows, bits, exponents, nonfinite,
                  totals);
    });
}
