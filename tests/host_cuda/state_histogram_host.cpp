// ozaki/kernels/state_histogram.cu compiled for the host, so that its counting (the window
// counters, their spreads and flushes, the out-of-window path) can be checked against the numpy
// row path on a machine without a GPU (tests/test_state_histogram.py). A launch runs one block
// of one warp (host_block.hpp), which then walks every tile of the state through the tile skeleton
// (gate_tiles.cuh, without prefetch) and flushes its window counters many times, with the warp
// primitives of warp_intrinsics.hpp and the device functions of device_functions.hpp.
// Build: g++ -std=c++20 -shared -fPIC -I<the two kernel folders> -DKERNELS='"state_histogram.cu"'
//        state_histogram_host.cpp
#include "host_block.hpp"
#include "warp_intrinsics.hpp"
#include "device_functions.hpp"

#include KERNELS

// The kernel for K = 2 .. 64 over the flat complex state x (interleaved re, im); the blocks per
// multiprocessor only bound the device's registers.
template <int K>
void launch(const double *x, long long n_columns, unsigned long long targets, unsigned long long *histogram,
            int *nonfinite)
{
    launch_one_warp([&] {
        state_needed_bits<K, 1>(reinterpret_cast<const double2 *>(x), n_columns, targets, histogram, nonfinite);
    });
}

extern "C" int host_state_histogram(int k, const double *x, long long n_columns, unsigned long long targets,
                                    unsigned long long *histogram, int *nonfinite)
{
    switch (k) {
    case 2: launch<2>(x, n_columns, targets, histogram, nonfinite); return 0;
    case 4: launch<4>(x, n_columns, targets, histogram, nonfinite); return 0;
    case 8: launch<8>(x, n_columns, targets, histogram, nonfinite); return 0;
    case 16: launch<16>(x, n_columns, targets, histogram, nonfinite); return 0;
    case 32: launch<32>(x, n_columns, targets, histogram, nonfinite); return 0;
    case 64: launch<64>(x, n_columns, targets, histogram, nonfinite); return 0;
    default: return 1;
    }
}
