// The fused INT8 Ozaki-I gate kernels (ozaki/kernels/ozaki_gate.cu, ozaki_gate_wide.cu) compiled
// for the host, so that their bits can be checked against the numpy specification (the CPU tiles
// with the same plan) on a machine without a GPU (tests/test_ozaki_gate.py). One build holds one
// variant: -DKERNEL_SOURCE names the file, -DKERNEL the instantiation (gate.py's launch name),
// and the launch's definitions come with it (the wide kernel's WIDE_WARPS may be fewer than on
// the device: the host runs at most a few warps). A launch runs its blocks one after another,
// each of `warps` warps of std::threads (host_block.hpp); the tensor-core product is computed
// from the 32 lanes' fragments (host_mma_s8), the dynamic shared memory is one static buffer, and
// cp.async copies at once (async_copy.cuh).
// Build: g++ -std=c++20 -shared -fPIC -I<the two kernel folders> -DKERNEL_SOURCE='"ozaki_gate.cu"'
//        '-DKERNEL=ozaki_gate<...>' <the launch's definitions> ozaki_gate_host.cpp
#include "host_block.hpp"
#include "warp_intrinsics.hpp"
#include "device_functions.hpp"

// The kernels' `extern __shared__` buffer (their only shared memory) is this one, for every block.
#undef __shared__
#define __shared__
constexpr int DYNAMIC_SHARED_BYTES = 227 * 1024;
alignas(16) uint4 shared[DYNAMIC_SHARED_BYTES / sizeof(uint4)];  // ozaki_gate.cu's name for it
alignas(16) uint2 column_digits[DYNAMIC_SHARED_BYTES / sizeof(uint2)];  // ozaki_gate_wide.cu's

#include "mma_s8_host.hpp"

#include KERNEL_SOURCE

// The kernel over the flat complex state x (interleaved re, im) into out (may be x), as `blocks`
// blocks of `warps` warps; gate: the fragments, gate_exponents: (K,) int32.
extern "C" void host_fused_gate(const double *x, double *out, long long n_columns, unsigned long long targets,
                                const void *gate, const int *gate_exponents, int *nonfinite, int warps, int blocks)
{
    for (int block = 0; block < blocks; ++block)
        launch_block(warps, block, blocks, [&] {
            KERNEL(reinterpret_cast<const double2 *>(x), reinterpret_cast<double2 *>(out), n_columns, targets,
                   static_cast<const uint4 *>(gate), gate_exponents, nonfinite);
        });
}
