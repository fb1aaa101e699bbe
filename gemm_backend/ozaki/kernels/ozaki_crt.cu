// Ozaki-II (Chinese remainder) kernels: row scales, int8 residues and the CRT reconstruction.
// The numpy specification is gemm_backend/crt.py; these kernels compute the same exact integers
// and round them once, so they give the same bits (the arithmetic and its exactness proofs:
// crt_arith.cuh).
#include "crt_arith.cuh"
#include "row_warps.cuh"

#define SCALE_BITS 16

// crt.row_scales, one warp per row of x (rows, cols), rows row_stride elements apart.
// scales[i] = bits - e + 16 - v (0 for an all-zero row), e the frexp exponent of the row maximum,
// v the least integer with 4^v >= sum_j ceil(|x_ij| 2^(16 - e))^2 (each ceiling at least 1 for
// x_ij != 0). *nonfinite = 1 when the rows hold NaN or Inf.
extern "C" __global__ void crt_row_scales(const double *__restrict__ x, long long rows, int cols, long long row_stride,
                                          int bits, int *__restrict__ scales, int *__restrict__ nonfinite)
{
    const int lane = threadIdx.x & 31;
    for (long long row = global_warp(); row < rows; row += warp_count()) {
        const double *r = x + row * row_stride;
        int bad;
        const double largest = warp_row_max(r, cols, lane, bad);
        if (bad) {
            if (lane == 0) {
                scales[row] = 0;
                *nonfinite = 1;
            }
            continue;
        }
        int e;
        frexp(largest, &e);
        double squares = 0.0;  // integers below 2^51: exact in any order
        for (int j = lane; j < cols; j += 32) {
            const double magnitude = fabs(r[j]);
            double q = ceil(ldexp(magnitude, SCALE_BITS - e));
            if (q == 0.0 && magnitude > 0.0) q = 1.0;
            squares += q * q;
        }
        for (int offset = 16; offset; offset >>= 1) squares += __shfl_xor_sync(FULL_MASK, squares, offset);
        if (lane == 0) {
            int bit_length;
            frexp(fmax(squares - 1.0, 0.0), &bit_length);
            scales[row] = squares > 0.0 ? bits - e + SCALE_BITS - (bit_length + 1) / 2 : 0;
        }
    }
}

// The symmetric residue of re + root * im modulo p (odd), from two magic_residue results:
// |re + root im| < 2^15, so the FP32 quotient is within 2^-9 of the exact one, whose fraction
// stays 1/(2p) away from 1/2: rint is exact, and the difference is the residue.
__device__ __forceinline__ signed char turned_residue(unsigned re, unsigned im, int root, const ResidueModulus &c)
{
    const int value = (int)(re - MAGIC_BITS) + root * (int)(im - MAGIC_BITS);
    return (signed char)(value - __float2int_rn((float)value * c.inv_p) * (int)c.p);
}

// The residues of one element (real: digits[0]; complex: Re, Im and Re + Im, or on Gaussian
// moduli Re + i_p Im and Re - i_p Im) modulo every modulus, written as int8 at
// slot[(l * parts + g) * padded]. parts: 1 (real), 3 (Karatsuba) or 2 (Gaussian).
template <int WORDS>
__device__ __forceinline__ void write_residues(const Digits (&digits)[2], int parts, const ResidueModulus *table,
                                               const int *roots, int n_moduli, signed char *slot, int padded)
{
    const long long step = (long long)parts * padded;
    for (int l = 0; l < n_moduli; ++l, slot += step) {
        const ResidueModulus c = table[l];
        const unsigned re = magic_residue<WORDS>(digits[0], c);
        if (parts == 1) {
            slot[0] = (signed char)re;
            continue;
        }
        const unsigned im = magic_residue<WORDS>(digits[1], c);
        if (parts == 2) {
            slot[0] = turned_residue(re, im, roots[l], c);
            slot[padded] = turned_residue(re, im, -roots[l], c);
        } else {
            slot[0] = (signed char)re;
            slot[padded] = (signed char)im;
            slot[2 * padded] = (signed char)sum_residue(re, im, c);
        }
    }
}

// crt.residues, one warp per row: out[row * out_stride + (l * parts + g) * padded + h] is the
// residue modulo p_l of part g (parts = 3: Re, Im, Re + Im for complex rows; 2: Re + i_p Im,
// Re - i_p Im on Gaussian moduli; 1: the value of a real row) of element h of
// trunc(2^scales[row] x[row]); columns width..padded-1 are written as zeros. x rows hold `width`
// elements: real, or complex as interleaved (re, im) float64. moduli, roots: the n_moduli <=
// MAX_MODULI moduli and their i_p as float64 (crt.CrtPlan.p, root; roots unused unless parts = 2).
extern "C" __global__ void crt_residues(const double *__restrict__ x, long long rows, int width, int padded,
                                        long long row_stride, int parts, const int *__restrict__ scales,
                                        int n_moduli, const double *__restrict__ moduli,
                                        const double *__restrict__ root_table, signed char *__restrict__ out,
                                        long long out_stride)
{
    __shared__ ResidueModulus table[MAX_MODULI];
    __shared__ int roots[MAX_MODULI];
    if (threadIdx.x < n_moduli) roots[threadIdx.x] = (int)root_table[threadIdx.x];
    load_residue_moduli(table, moduli, n_moduli);  // synchronises the block
    const int is_complex = parts > 1;
    const int lane = threadIdx.x & 31;
    for (long long row = global_warp(); row < rows; row += warp_count()) {
        const double *r = x + row * row_stride;
        const RowScale scale(scales[row]);
        signed char *o = out + row * out_stride;
        for (int h = lane; h < padded; h += 32) {
            Digits digits[2] = {};
#pragma unroll
            for (int part = 0; part < 2; ++part)
                if (part <= is_complex) digits[part] = scaled_digits(h < width ? r[is_complex ? 2 * h + part : h] : 0.0, scale);
            if (digits[0].wide || digits[1].wide)
                write_residues<3>(digits, parts, table, roots, n_moduli, o + h, padded);
            else
                write_residues<2>(digits, parts, table, roots, n_moduli, o + h, padded);
        }
    }
}

// crt.CrtAccumulator for every output of a tile (crt_reconstruct's loop, for LIMBS limbs).
template <int LIMBS>
__device__ void reconstruct_tile(const int *__restrict__ products, long long rows, int cols, int parts,
                                 int n_moduli, const ReconstructModulus *table, const ReconstructModulus *im_table,
                                 const double *product_limbs, double inv_product, const int *row_scales,
                                 const int *col_scales, double *out, long long out_stride)
{
    const long long count = rows * cols;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const int is_complex = parts > 1;
    for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < count; index += stride) {
        CrtSums<LIMBS> sums;
        for (int l = 0; l < n_moduli; ++l) {
            const int *product = products + (long long)l * parts * count + index;
            if (parts == 2)
                sums.add_gaussian(table[l], im_table[l], product[0], product[count]);
            else
                sums.add(table[l], is_complex, product[0], is_complex ? product[count] : 0,
                         is_complex ? product[2 * count] : 0);
        }
        const long long i = index / cols;
        const int c = (int)(index - i * cols);
        double *o = out + i * out_stride + (long long)c * (1 + is_complex);
        double im;
        sums.finish(product_limbs, inv_product, -(row_scales[i] + col_scales[c]), is_complex, o[0], im);
        if (is_complex) o[1] = im;
    }
}

// crt.CrtAccumulator for every output of a tile: products (n_moduli * parts, rows, cols) int32
// (parts = 3: P1, P2, P3 of Karatsuba; 2: P+, P- on Gaussian moduli; 1: the real product),
// modulus by modulus. out element (i, c) is written at out[i * out_stride + c * n_out + part] for
// its n_out = 1 (real) or 2 (re, im) parts. Tables as crt.CrtPlan: moduli p, inverses y (Gaussian:
// re_inverse), im_inverses (Gaussian only), partial_limbs (n_moduli, n_limbs), product_limbs
// (n_limbs,), n_limbs in 2..MAX_LIMBS.
extern "C" __global__ void crt_reconstruct(const int *__restrict__ products, long long rows, int cols, int parts,
                                           int n_moduli, const double *__restrict__ moduli,
                                           const double *__restrict__ inverses,
                                           const double *__restrict__ im_inverses, int n_limbs,
                                           const double *__restrict__ partial_limbs,
                                           const double *__restrict__ product_limbs, const int *__restrict__ row_scales,
                                           const int *__restrict__ col_scales, double *__restrict__ out,
                                           long long out_stride)
{
    __shared__ ReconstructModulus table[MAX_MODULI], im_table[MAX_MODULI];
    __shared__ double inv_product;
    if (parts == 2 && threadIdx.x < n_moduli)  // load_reconstruct_moduli synchronises the block
        im_table[threadIdx.x] = reconstruct_modulus((int)moduli[threadIdx.x], (int)im_inverses[threadIdx.x],
                                                    partial_limbs + threadIdx.x * n_limbs, n_limbs);
    load_reconstruct_moduli(table, &inv_product, moduli, inverses, partial_limbs, product_limbs, n_moduli, n_limbs);
    switch (n_limbs) {
#define CRT_LIMBS_CASE(L)                                                                                              \
    case L:                                                                                                          \
        reconstruct_tile<L>(products, rows, cols, parts, n_moduli, table, im_table, product_limbs, inv_product,       \
                            row_scales, col_scales, out, out_stride);                                                \
        break;
        CRT_LIMBS_CASE(2)
        CRT_LIMBS_CASE(3)
        CRT_LIMBS_CASE(4)
        CRT_LIMBS_CASE(5)
#undef CRT_LIMBS_CASE
    }
}
