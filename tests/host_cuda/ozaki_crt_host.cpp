// kernels/ozaki_crt.cu compiled for the host, so that its logic can be checked against the numpy
// specification (gemm_backend/crt.py) on a machine without a GPU (tests/test_ozaki_crt_kernels.py).
// Every launch runs one block (host_block.hpp): of one warp, or of GATE_RESIDUE_THREADS for
// crt_gate_residues, with the warp primitives of warp_intrinsics.hpp and the device functions of
// device_functions.hpp. The math functions are the C library's, which like CUDA's are exact for the
// operations the kernels use (frexp, ldexp, trunc, rint, floor, fma, fmaf), and the integer
// intrinsics below have CUDA's exact semantics.
// Build: g++ -std=c++20 -shared -fPIC -DKERNELS='"path/to/ozaki_crt.cu"' ozaki_crt_host.cpp
#include "host_block.hpp"
#include "warp_intrinsics.hpp"
#include "device_functions.hpp"
#include <bit>
#include <cmath>
#include <cstdint>

using std::floor; using std::fabs; using std::fma; using std::fmaf; using std::fmax; using std::frexp;
using std::isfinite; using std::ldexp; using std::rint; using std::trunc;

inline double __ll2double_rn(long long x) { return (double)x; }
inline double __ull2double_rn(unsigned long long x) { return (double)x; }  // to nearest even, as CUDA's
inline long long __double2ll_rz(double x) { return (long long)x; }  // C++ conversion truncates
inline int __double2int_rz(double x) { return (int)x; }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline double __hiloint2double(int hi, int lo)
{
    return std::bit_cast<double>((uint64_t)(uint32_t)hi << 32 | (uint32_t)lo);
}
inline int __mulhi(int a, int b) { return (int)((int64_t)a * b >> 32); }  // floor(a b / 2^32)
inline unsigned __viaddmin_u32(unsigned a, unsigned b, unsigned c) { return a + b < c ? a + b : c; }

// c + the sum of the four products of the bytes of a and b as int8, modulo 2^32.
inline int __dp4a(int a, int b, int c)
{
    uint32_t sum = (uint32_t)c;
    for (int byte = 0; byte < 4; ++byte)
        sum += (uint32_t)((int8_t)(uint8_t)((uint32_t)a >> 8 * byte) * (int8_t)(uint8_t)((uint32_t)b >> 8 * byte));
    return (int)sum;
}

#include "mma_s8_host.hpp"

// The kernels' dynamic shared memory (the _quads kernel's staged products: two stages of at most
// 66 words for each of a block's 32 threads; the mma kernel's: four stages of at most 512 words).
alignas(16) unsigned host_shared_words[2 * 66 * 32];
inline unsigned *host_dynamic_shared_words() { return host_shared_words; }

#include KERNELS

extern "C" {
// The mma reconstruction's ring as the kernel sizes it: its stages and a warp's words in a stage;
// the quads reconstruction's stages and blocks a multiprocessor; the one-output reconstructions'.
int host_mma_stages() { return MMA_STAGES; }
int host_mma_stage_words(int n_moduli) { return mma_stage_words(n_moduli); }
int host_quad_stages() { return QUAD_STAGES; }
int host_quad_blocks_per_sm() { return QUAD_RECONSTRUCT_BLOCKS_PER_SM; }
int host_reconstruct_blocks_per_sm() { return RECONSTRUCT_BLOCKS_PER_SM; }

void host_row_scales(const double *x, long long rows, int cols, long long row_stride, int bits, int *scales,
                     int *nonfinite)
{
    launch_one_warp([&] { crt_row_scales(x, rows, cols, row_stride, bits, scales, nonfinite); });
}

void host_residues(const double *x, long long rows, int width, int padded, long long row_stride, int parts,
                   const int *scales, int n_moduli, const double *moduli, const double *roots, signed char *out,
                   long long out_stride)
{
    launch_one_warp([&] {
        crt_residues(x, rows, width, padded, row_stride, parts, scales, n_moduli, moduli, roots, out, out_stride);
    });
}

// products: int32 (reduced == 0: crt_reconstruct) or their int8 residues (crt_reconstruct_residues).
void host_reconstruct(const void *products, int reduced, long long rows, int cols, int parts, int n_moduli,
                      const double *moduli, const double *inverses, const double *im_inverses, int n_limbs,
                      const double *partial_limbs, const double *product_limbs, const int *row_scales,
                      const int *col_scales, double *out, long long out_stride)
{
    launch_one_warp([&] {
        if (reduced)
            crt_reconstruct_residues((const signed char *)products, rows, cols, parts, n_moduli, moduli, inverses,
                                     im_inverses, n_limbs, partial_limbs, product_limbs, row_scales, col_scales, out,
                                     out_stride);
        else
            crt_reconstruct((const int *)products, rows, cols, parts, n_moduli, moduli, inverses, im_inverses,
                            n_limbs, partial_limbs, product_limbs, row_scales, col_scales, out, out_stride);
    });
}

void host_gate_residues(const double *x, long long first_column, long long rows, int k, unsigned long long targets,
                        unsigned long long ascending, int n_targets, int padded, int parts, int bits, int *scales,
                        int *nonfinite, int n_moduli, const double *moduli, const double *roots, signed char *out,
                        long long out_stride)
{
    launch_block(GATE_RESIDUE_THREADS / 32, 0, 1, [&] {
        crt_gate_residues((const double2 *)x, first_column, rows, k, targets, ascending, n_targets, padded, parts,
                          bits, scales, nonfinite, n_moduli, moduli, roots, out, out_stride);
    });
}

// products as host_reconstruct's, (blocks, count, k) or, columns_fastest, (blocks, k, count); variant
// (crt_backend.gate_reconstruct_variant): 0 the one-output kernel, 1 the _quads kernel (int8
// residues, four outputs a thread), 2 crt_gate_reconstruct_gaussian_mma.
void host_gate_reconstruct(const void *products, int reduced, long long rows, int k, int parts, int n_moduli,
                           const double *moduli, const double *inverses, const double *im_inverses, int n_limbs,
                           const double *partial_limbs, const double *product_limbs, const int *row_scales,
                           const int *col_scales, double *out, long long first_column, unsigned long long targets,
                           unsigned long long ascending, int n_targets, int columns_fastest, int variant)
{
    launch_one_warp([&] {
        const auto residues = variant == 2   ? crt_gate_reconstruct_gaussian_mma
                              : variant == 1 ? crt_gate_reconstruct_residues_quads
                                             : crt_gate_reconstruct_residues;
        if (reduced)
            residues((const signed char *)products, rows, k, parts, n_moduli, moduli, inverses, im_inverses,
                     n_limbs, partial_limbs, product_limbs, row_scales, col_scales, (double2 *)out, first_column,
                     targets, ascending, n_targets, columns_fastest);
        else
            crt_gate_reconstruct((const int *)products, rows, k, parts, n_moduli, moduli, inverses, im_inverses,
                                 n_limbs, partial_limbs, product_limbs, row_scales, col_scales, (double2 *)out,
                                 first_column, targets, ascending, n_targets, columns_fastest);
    });
}
}
