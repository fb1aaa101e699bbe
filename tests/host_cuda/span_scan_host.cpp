// kernels/span_scan.cu compiled for the host, so that its logic can be checked against the numpy
// specification (spans.summarize_spans, split.row_exponents) on a machine without a GPU
// (tests/test_span_scan.py). A launch runs one block of one warp: 32 std::threads, with the warp
// and block primitives the kernel uses (warp_intrinsics.hpp, __syncthreads) built on a barrier,
// atomics as std::atomic_ref, and __shared__ arrays as function-local statics (one copy for all
// threads). The one warp walks every tile, so it flushes its window counters many times. The math
// functions are the C library's, exact like CUDA's for the operations used (frexp, ldexp, fabs,
// fmax, and products by powers of two); fma and sqrt are correctly rounded in both.
// Build: g++ -std=c++20 -shared -fPIC -D<span_scan.py's definitions> -DKERNELS='"span_scan.cu"' span_scan_host.cpp
#include "one_warp.hpp"
#include "warp_intrinsics.hpp"
#include <atomic>
#include <cmath>

using std::fabs; using std::fma; using std::fmax; using std::frexp; using std::ldexp; using std::sqrt;

inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

template <class T> inline T atomicAdd(T *address, T value) { return std::atomic_ref<T>(*address).fetch_add(value); }
inline int atomicExch(int *address, int value) { return std::atomic_ref<int>(*address).exchange(value); }
inline unsigned long long atomicMax(unsigned long long *address, unsigned long long value)
{
    std::atomic_ref<unsigned long long> target(*address);
    unsigned long long seen = target.load();
    while (seen < value && !target.compare_exchange_weak(seen, value)) {}
    return seen;
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
