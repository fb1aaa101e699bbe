// The fused fp16x2 gate kernel (kernels/multiword_gate.cu) compiled for the host, so that its logic
// (words, blocks, packing, addressing of any targets) can be checked against the numpy path on a
// machine without a GPU (tests/test_multiword_gate.py). One build holds one variant
// (-DKERNEL=<GateLaunch.name>); a launch runs its blocks one after another, each of `warps` warps
// of std::threads (host_block.hpp). The fp16 conversions are _Float16's (one rounding to nearest
// even, as cvt.rn); the m16n8k16 products are exact in FP32 and summed in k order, one FP32
// rounding each: the tensor cores' order and rounding of those sums are not specified, so the
// tests ask for the CPU path's bits only where every sum is exact, and its bound elsewhere.
// Build (-ffp-contract=off: the kernel's __fadd_rn / __fmul_rn are single roundings):
//   g++ -std=c++20 -shared -fPIC -ffp-contract=off -I<the kernel folder> '-DKERNEL=multiword_gate<...>'
//       multiword_gate_host.cpp
#include "host_block.hpp"
#include "warp_intrinsics.hpp"
#include "device_functions.hpp"
#include <cstring>

// The kernel's `extern __shared__` buffer (its only shared memory) is this one, for every block.
#undef __shared__
#define __shared__
alignas(16) uint4 shared[227 * 1024 / sizeof(uint4)];

inline float __fadd_rn(float a, float b) { return a + b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dmul_rn(double a, double b) { return a * b; }

inline unsigned host_half_bits(double v)
{
    const _Float16 h = (_Float16)v;
    unsigned short bits;
    std::memcpy(&bits, &h, sizeof bits);
    return bits;
}
inline double host_half_value(unsigned bits)
{
    const unsigned short half = (unsigned short)bits;
    _Float16 h;
    std::memcpy(&h, &half, sizeof h);
    return (double)h;
}

// mma.sync m16n8k16 f16 x f16 -> f32 on the fragments of the warp's lanes (PTX's layouts; two
// fp16 per register, the lower k in the low half): lane (g, t) holds A[g][2t..], A[g + 8][2t..],
// A[g][2t + 8..], A[g + 8][2t + 8..] in a.x .. a.w, B[2t..][g] in b0, B[2t + 8..][g] in b1, and
// D[g + 8 (i / 2)][2 t + i % 2] in d[i].
struct HmmaFragments {
    unsigned a[4], b[2];
};
inline float half_of(unsigned word, int k) { return (float)host_half_value(word >> (16 * (k & 1)) & 0xffffu); }

inline void host_mma_f16(float (&d)[4], const uint4 &a, unsigned b0, unsigned b1)
{
    const auto lanes = warp_gather(HmmaFragments{{a.x, a.y, a.z, a.w}, {b0, b1}});
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i) {
        const int row = g + 8 * (i >> 1), column = 2 * t + (i & 1);
        float sum = d[i];
        for (int k = 0; k < 16; ++k) {
            const unsigned a_word = lanes[4 * (row & 7) + ((k & 7) >> 1)].a[2 * (k >> 3) + (row >> 3)];
            const unsigned b_word = lanes[4 * column + ((k & 7) >> 1)].b[k >> 3];
            sum += half_of(a_word, k) * half_of(b_word, k);  // the product is exact in FP32
        }
        d[i] = sum;
    }
}

#include "multiword_gate.cu"

// The kernel over the flat complex state x (interleaved re, im) into out (may be x), as `blocks`
// blocks of `warps` warps; gate: the words' fragments, gate_shift: (K,) int32.
extern "C" void host_multiword_gate(const double *x, double *out, long long n_columns, unsigned long long targets,
                                    const void *gate, const int *gate_shift, int word_exponent, int low_shift,
                                    int *nonfinite, int warps, int blocks)
{
    for (int block = 0; block < blocks; ++block)
        launch_block(warps, block, blocks, [&] {
            KERNEL(reinterpret_cast<const double2 *>(x), reinterpret_cast<double2 *>(out), n_columns, targets,
                   static_cast<const uint4 *>(gate), gate_shift, word_exponent, low_shift, nonfinite);
        });
}
