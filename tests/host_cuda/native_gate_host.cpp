// The FP64 tensor-core gate kernel (native/kernels/native_gate.cu) compiled for the host, so that
// its logic (addressing of any targets, tiles, prefetch, the fragment layouts) can be checked
// against numpy on a machine without a GPU (tests/test_native_gate.py). One build holds one
// variant (-DKERNEL=<NativeLaunch.name>); a launch runs its blocks one after another, each of
// `warps` warps of std::threads (host_block.hpp). The DMMA products are computed from the 32
// lanes' fragments by PTX's m16n8k8 layouts (m16n8k4 as its first half), each output as one fused
// multiply-add chain in k order: the hardware's order of the additions is not specified, so the
// tests compare with a tolerance, not bits.
// Build: g++ -std=c++20 -shared -fPIC -I<the two kernel folders> '-DKERNEL=native_gate<...>'
//        native_gate_host.cpp
#include "host_block.hpp"
#include "warp_intrinsics.hpp"
#include "device_functions.hpp"

// The kernel's `extern __shared__` buffer (its only shared memory) is this one, for every block.
#undef __shared__
#define __shared__
alignas(16) double2 shared[227 * 1024 / sizeof(double2)];

// d += A B for the warp's m16n8k8 f64 fragments: lane (g, t) holds A[g][t], A[g + 8][t],
// A[g][t + 4], A[g + 8][t + 4] and B[t][g], B[t + 4][g], and D[g + 8 (i / 2)][2 t + i % 2] in d[i].
struct DmmaFragments {
    double a[4], b[2];
};

inline void host_mma_f64_k8(double (&d)[4], double a0, double a1, double a2, double a3, double b0, double b1)
{
    const auto lanes = warp_gather(DmmaFragments{{a0, a1, a2, a3}, {b0, b1}});
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i) {
        const int row = g + 8 * (i >> 1), column = 2 * t + (i & 1);
        double sum = d[i];
        for (int k = 0; k < 8; ++k) {
            const double a = lanes[4 * (row & 7) + (k & 3)].a[2 * (k >> 2) + (row >> 3)];
            const double b = lanes[4 * column + (k & 3)].b[k >> 2];
            sum = fma(a, b, sum);
        }
        d[i] = sum;
    }
}

#include "native_gate.cu"

// The kernel over the flat complex state x (interleaved re, im) into out (may be x), as `blocks`
// blocks of `warps` warps; gate: gate_fragments' (K/8, K/4, 32, 2) float64.
extern "C" void host_native_gate(const double *x, double *out, long long n_columns, unsigned long long targets,
                                 const double *gate, int warps, int blocks)
{
    for (int block = 0; block < blocks; ++block)
        launch_block(warps, block, blocks, [&] {
            KERNEL(reinterpret_cast<const double2 *>(x), reinterpret_cast<double2 *>(out), n_columns, targets,
                   reinterpret_cast<const double2 *>(gate));
        });
}
