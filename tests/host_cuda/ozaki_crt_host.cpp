// kernels/ozaki_crt.cu compiled for the host, so that its logic can be checked against the numpy
// specification (gemm_backend/crt.py) on a machine without a GPU (tests/test_ozaki_crt_kernels.py).
// Every launch runs one block of one warp: 32 std::threads, with the warp intrinsics the kernels
// use (__shfl_xor_sync, __any_sync) built on a barrier. The math functions are the C library's,
// which like CUDA's are exact for the operations the kernels use (frexp, ldexp, trunc, rint, floor).
// Build: g++ -std=c++20 -shared -fPIC -DKERNELS='"path/to/ozaki_crt.cu"' ozaki_crt_host.cpp
#include <barrier>
#include <cmath>
#include <thread>
#include <vector>

using std::floor; using std::fabs; using std::fmax; using std::frexp; using std::isfinite;
using std::ldexp; using std::rint; using std::trunc;

struct dim3 { unsigned x = 0, y = 0, z = 0; };
thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__

static std::barrier<> *warp_barrier;
static double double_lanes[32];
static int int_lanes[32];

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline double __ll2double_rn(long long x) { return (double)x; }

inline double __shfl_xor_sync(unsigned, double value, int offset)
{
    const int lane = threadIdx.x & 31;
    double_lanes[lane] = value;
    warp_barrier->arrive_and_wait();
    const double other = double_lanes[lane ^ offset];
    warp_barrier->arrive_and_wait();
    return other;
}

inline int __any_sync(unsigned, int predicate)
{
    int_lanes[threadIdx.x & 31] = predicate;
    warp_barrier->arrive_and_wait();
    int any = 0;
    for (int lane = 0; lane < 32; ++lane) any |= int_lanes[lane];
    warp_barrier->arrive_and_wait();
    return any != 0;
}

#include KERNELS

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

extern "C" {
void host_row_scales(const double *x, long long rows, int cols, long long row_stride, int bits, int *scales,
                     int *nonfinite)
{
    launch_one_warp([&] { crt_row_scales(x, rows, cols, row_stride, bits, scales, nonfinite); });
}

void host_residues(const double *x, long long rows, int width, int padded, long long row_stride, int is_complex,
                   const int *scales, int n_moduli, const double *moduli, const double *inv_moduli,
                   const double *pow2_32, const double *pow2_64, signed char *out, long long out_stride)
{
    launch_one_warp([&] {
        crt_residues(x, rows, width, padded, row_stride, is_complex, scales, n_moduli, moduli, inv_moduli, pow2_32,
                     pow2_64, out, out_stride);
    });
}

void host_reconstruct(const int *products, long long rows, int cols, int is_complex, int n_moduli,
                      const double *moduli, const double *inv_moduli, const double *inverses, int n_limbs,
                      const double *partial_limbs, const double *product_limbs, const int *row_scales,
                      const int *col_scales, double *out, long long out_stride)
{
    launch_one_warp([&] {
        crt_reconstruct(products, rows, cols, is_complex, n_moduli, moduli, inv_moduli, inverses, n_limbs,
                        partial_limbs, product_limbs, row_scales, col_scales, out, out_stride);
    });
}
}
