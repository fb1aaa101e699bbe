// The symmetric residue of an integer 0 <= S < 2^23 modulo p (2 < p <= 256) by one FMA and one
// integer multiply-add, for the residues of the Ozaki-II scheme (crt_arith.cuh) and its products
// reduced on the chip (crt_products.cu):
// - S's bits read as a float are the subnormal S 2^-149, and the FMA M + (S 2^-149) fl(2^129 / p),
//   rounded to nearest at the unit in the last place of M = 12 (2^-20), is t = M + q 2^-20 with
//   q = rint(S / p): fl(2^129 / p) = 2^129 / p (1 + d), |d| <= 2^-24, moves S / p by at most
//   S 2^-24 / p < 1 / (2 p), the least distance from S / p to a half-integer for odd p (p = 256's
//   inverse is exact; a tie rounded either way leaves a residue of the same byte, -128 or 128);
// - t's bits are QUOTIENT_BITS + q, so S - p bits(t) = S - p q - p QUOTIENT_BITS (mod 2^32): the
//   symmetric residue plus a multiple of 2^22, the residue as int8 in the low byte.
// The FMA must keep subnormal inputs (no flush to zero): on the device it is written in PTX.
#pragma once

#define QUOTIENT_MAGIC 12.0f        // M
#define QUOTIENT_BITS 0x41400000u   // the bits of M: 261 * 2^22

// fl(2^129 / p): fl(1 / p) scaled by a power of two, exactly (a normal float for p > 2). Set-up.
__device__ __forceinline__ float scaled_inverse(int p) { return 1.0f / (float)p * 0x1p127f * 4.0f; }

// What reduced_residue adds to the residue: -p QUOTIENT_BITS (mod 2^32).
__device__ __forceinline__ unsigned quotient_offset(unsigned p) { return (0u - p) * QUOTIENT_BITS; }

// The symmetric residue of sum (0 <= sum < 2^23) modulo p plus quotient_offset(p), from
// negative_p = -p and inverse = scaled_inverse(p).
__device__ __forceinline__ unsigned reduced_residue(unsigned sum, int negative_p, float inverse)
{
    float t;
#ifdef __CUDA_ARCH__
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(t) : "f"(__uint_as_float(sum)), "f"(inverse), "f"(QUOTIENT_MAGIC));
#else
    t = fmaf(__int_as_float((int)sum), inverse, QUOTIENT_MAGIC);
#endif
    return sum + __float_as_uint(t) * (unsigned)negative_p;
}
