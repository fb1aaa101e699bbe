// The arithmetic floor of a fused Ozaki-II gate kernel (scripts/dev_crt_alu_floor.py): the
// per-element work of gemm_backend/ozaki/kernels/ozaki_crt.cu with no memory traffic. Values come from
// a counter hash in registers and results fold into a checksum, so only the arithmetic is timed:
//   residues:    a complex amplitude scaled, cut into limbs, reduced modulo every modulus
//                (Re, Im and Re + Im), as crt_residues does for each state element;
//   reconstruct: for a complex output, w = (combined product) y_l mods p_l for every modulus,
//                the limb sums and the one rounding, as crt_reconstruct does.
#include "ozaki_crt.cu"

__device__ __forceinline__ unsigned long long mix(unsigned long long x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    return x;
}

extern "C" __global__ void residues_floor(long long count, int scale, int n_moduli, const double *__restrict__ moduli,
                                          const double *__restrict__ inv_moduli, const double *__restrict__ pow2_32,
                                          const double *__restrict__ pow2_64, int *__restrict__ checksum)
{
    int sum = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        const unsigned long long bits = mix(i);
        double limbs[2][3];  // a complex amplitude in [-1, 1)^2
        scaled_limbs((double)(long long)(bits << 32) * 0x1p-63, scale, limbs[0]);
        scaled_limbs((double)(long long)bits * 0x1p-63, scale, limbs[1]);
        for (int l = 0; l < n_moduli; ++l) {
            const Modulus modulus(moduli, inv_moduli, l);
            const double re = limb_residue(limbs[0], modulus, pow2_64[l], pow2_32[l]);
            const double im = limb_residue(limbs[1], modulus, pow2_64[l], pow2_32[l]);
            sum += int8_residue(re) + 3 * int8_residue(im) + 5 * int8_residue(modulus.congruent(re + im));
        }
    }
    atomicAdd(checksum, sum);
}

extern "C" __global__ void reconstruct_floor(long long count, int n_moduli, const double *__restrict__ moduli,
                                             const double *__restrict__ inv_moduli,
                                             const double *__restrict__ inverses, int n_limbs,
                                             const double *__restrict__ partial_limbs,
                                             const double *__restrict__ product_limbs, double *__restrict__ checksum)
{
    double sum = 0.0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < count; index += stride) {
        CrtSums sums;
        unsigned long long bits = mix(index);
        for (int l = 0; l < n_moduli; ++l) {
            bits += 0x9e3779b97f4a7c15ULL;  // three products below 2^21 from one word
            sums.add(Modulus(moduli, inv_moduli, l), inverses[l], partial_limbs + l * n_limbs, n_limbs,
                     (double)(int)(bits & 0x1fffff), (double)(int)((bits >> 21) & 0x1fffff),
                     (double)(int)((bits >> 42) & 0x1fffff));
        }
        double re, im;
        sums.finish(product_limbs, n_limbs, -100, true, re, im);
        sum += re + im;
    }
    atomicAdd(checksum, sum);
}
