// The arithmetic floor of a fused Ozaki-II gate kernel (scripts/dev/crt_alu_floor.py): the
// per-element work of gemm_backend/ozaki/kernels/crt_arith.cuh with no memory traffic, beside the
// FP64-pipe arithmetic it replaced (commit ed9040f, kept here only so that one run measures the
// ratio). Values come from a counter hash in registers and results fold into a checksum, so only
// the arithmetic is timed:
//   residues:    a complex amplitude scaled and reduced modulo every modulus (Re, Im and
//                Re + Im), as crt_residues does for each state element;
//   reconstruct: for a complex output, the residues of the three products of every modulus,
//                the limb sums and the one rounding, as crt_reconstruct does.
#include "ozaki_crt.cu"

__device__ __forceinline__ unsigned long long mix(unsigned long long x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    return x;
}

// A complex amplitude in [-1, 1)^2 from one hash word.
__device__ __forceinline__ double hashed_part(unsigned long long bits, int part)
{
    return (double)(long long)(part ? bits : bits << 32) * 0x1p-63;
}

template <int WORDS>
__device__ __forceinline__ int residue_checksum(const Digits (&digits)[2], const ResidueModulus *table, int n_moduli)
{
    int sum = 0;
    for (int l = 0; l < n_moduli; ++l) {
        const ResidueModulus c = table[l];
        const unsigned re = magic_residue<WORDS>(digits[0], c), im = magic_residue<WORDS>(digits[1], c);
        sum += (signed char)re + 3 * (signed char)im + 5 * (signed char)sum_residue(re, im, c);
    }
    return sum;
}

extern "C" __global__ void residues_floor(long long count, int scale, int n_moduli, const double *__restrict__ moduli,
                                          int *__restrict__ checksum)
{
    __shared__ ResidueModulus table[MAX_MODULI];
    load_residue_moduli(table, moduli, nullptr, n_moduli);
    const RowScale row_scale(scale);
    int sum = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        const unsigned long long bits = mix(i);
        const Digits digits[2] = {scaled_digits(hashed_part(bits, 0), row_scale),
                                  scaled_digits(hashed_part(bits, 1), row_scale)};
        sum += digits[0].wide || digits[1].wide ? residue_checksum<3>(digits, table, n_moduli)
                                                : residue_checksum<2>(digits, table, n_moduli);
    }
    atomicAdd(checksum, sum);
}

template <int LIMBS>
__device__ double reconstruct_checksum(long long count, int n_moduli, const ReconstructModulus *table,
                                       const double *product_limbs, double inv_product)
{
    double sum = 0.0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < count; index += stride) {
        CrtSums<LIMBS> sums;
        unsigned long long bits = mix(index);
        for (int l = 0; l < n_moduli; ++l) {
            bits += 0x9e3779b97f4a7c15ULL;  // three products below 2^21 from one word
            sums.add(table[l], true, (int)(bits & 0x1fffff), (int)((bits >> 21) & 0x1fffff),
                     (int)((bits >> 42) & 0x1fffff));
        }
        double re, im;
        sums.finish(product_limbs, inv_product, -100, true, re, im);
        sum += re + im;
    }
    return sum;
}

extern "C" __global__ void reconstruct_floor(long long count, int n_moduli, const double *__restrict__ moduli,
                                             const double *__restrict__ inverses, int n_limbs,
                                             const double *__restrict__ partial_limbs,
                                             const double *__restrict__ product_limbs, double *__restrict__ checksum)
{
    __shared__ ReconstructModulus table[MAX_MODULI];
    __shared__ double inv_product;
    load_reconstruct_moduli(table, &inv_product, moduli, inverses, partial_limbs, product_limbs, n_moduli, n_limbs);
    const double sum = n_limbs == 4 ? reconstruct_checksum<4>(count, n_moduli, table, product_limbs, inv_product)
                                    : reconstruct_checksum<5>(count, n_moduli, table, product_limbs, inv_product);
    atomicAdd(checksum, sum);
}

// -- the former FP64-pipe arithmetic (ed9040f), for the side-by-side ratio only ---------------------

struct LegacyModulus {
    double p, inv_p;
    __device__ LegacyModulus(const double *moduli, const double *inv_moduli, int l) : p(moduli[l]), inv_p(inv_moduli[l]) {}
    __device__ double congruent(double y) const { return y - p * rint(y * inv_p); }
};

__device__ __forceinline__ void legacy_scaled_limbs(double v, int s, double (&limbs)[3])
{
    double value = trunc(ldexp(v, s));
    limbs[0] = trunc(value * 0x1p-64);
    value -= limbs[0] * 0x1p64;
    limbs[1] = trunc(value * 0x1p-32);
    limbs[2] = value - limbs[1] * 0x1p32;
}

__device__ __forceinline__ double legacy_limb_residue(const double (&limbs)[3], const LegacyModulus &modulus,
                                                      double pow2_64, double pow2_32)
{
    return modulus.congruent(limbs[0] * pow2_64 + limbs[1] * pow2_32 + limbs[2]);
}

__device__ __forceinline__ int legacy_int8(double r) { return (signed char)(int)r; }

struct LegacyCrtSums {
    double re[MAX_LIMBS] = {}, im[MAX_LIMBS] = {}, re_fraction = 0.0, im_fraction = 0.0;

    __device__ __forceinline__ void add(const LegacyModulus &modulus, double inverse, const double *partial, int n_limbs,
                                        double p1, double p2, double p3)
    {
        const double w_re = modulus.congruent((p1 - p2) * inverse);
        const double w_im = modulus.congruent((p3 - p1 - p2) * inverse);
        re_fraction += w_re * modulus.inv_p;
        im_fraction += w_im * modulus.inv_p;
#pragma unroll
        for (int j = 0; j < MAX_LIMBS; ++j) {
            if (j < n_limbs) {
                re[j] += w_re * partial[j];
                im[j] += w_im * partial[j];
            }
        }
    }

    __device__ __forceinline__ void finish(const double *product_limbs, int n_limbs, int exponent, double &re_out,
                                           double &im_out)
    {
        const double re_multiple = rint(re_fraction), im_multiple = rint(im_fraction);
#pragma unroll
        for (int j = 0; j < MAX_LIMBS; ++j) {
            if (j < n_limbs) {
                re[j] -= re_multiple * product_limbs[j];
                im[j] -= im_multiple * product_limbs[j];
            }
        }
        re_out = round_limbs(re, n_limbs, exponent);
        im_out = round_limbs(im, n_limbs, exponent);
    }
};

extern "C" __global__ void legacy_residues_floor(long long count, int scale, int n_moduli,
                                                 const double *__restrict__ moduli,
                                                 const double *__restrict__ inv_moduli,
                                                 const double *__restrict__ pow2_32,
                                                 const double *__restrict__ pow2_64, int *__restrict__ checksum)
{
    int sum = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        const unsigned long long bits = mix(i);
        double limbs[2][3];
        legacy_scaled_limbs(hashed_part(bits, 0), scale, limbs[0]);
        legacy_scaled_limbs(hashed_part(bits, 1), scale, limbs[1]);
        for (int l = 0; l < n_moduli; ++l) {
            const LegacyModulus modulus(moduli, inv_moduli, l);
            const double re = legacy_limb_residue(limbs[0], modulus, pow2_64[l], pow2_32[l]);
            const double im = legacy_limb_residue(limbs[1], modulus, pow2_64[l], pow2_32[l]);
            sum += legacy_int8(re) + 3 * legacy_int8(im) + 5 * legacy_int8(modulus.congruent(re + im));
        }
    }
    atomicAdd(checksum, sum);
}

extern "C" __global__ void legacy_reconstruct_floor(long long count, int n_moduli, const double *__restrict__ moduli,
                                                    const double *__restrict__ inv_moduli,
                                                    const double *__restrict__ inverses, int n_limbs,
                                                    const double *__restrict__ partial_limbs,
                                                    const double *__restrict__ product_limbs,
                                                    double *__restrict__ checksum)
{
    double sum = 0.0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < count; index += stride) {
        LegacyCrtSums sums;
        unsigned long long bits = mix(index);
        for (int l = 0; l < n_moduli; ++l) {
            bits += 0x9e3779b97f4a7c15ULL;
            sums.add(LegacyModulus(moduli, inv_moduli, l), inverses[l], partial_limbs + l * n_limbs, n_limbs,
                     (double)(int)(bits & 0x1fffff), (double)(int)((bits >> 21) & 0x1fffff),
                     (double)(int)((bits >> 42) & 0x1fffff));
        }
        double re, im;
        sums.finish(product_limbs, n_limbs, -100, re, im);
        sum += re + im;
    }
    atomicAdd(checksum, sum);
}
