// Ozaki-II (Chinese remainder) kernels: row scales, int8 residues and the CRT reconstruction.
// The numpy specification is gemm_backend/crt.py; these kernels repeat it step for step and
// must give the same bits, with one freedom: the reconstruction's w_l may be any residue
// (Modulus::congruent), which moves X and n but not C' = X - n M. Every value operation is exact
// (powers-of-two scalings, trunc, floor, rint, sums and products of integers below 2^53, integer
// shifts) apart from the quotient estimate y * inv_p, close enough to give the nearest quotient,
// the sum of w / p, whose rounding cannot change the integer n it is rounded to, and the single
// rounding of the result (cvt + ldexp). So FMA contraction cannot change any output.

#define FULL_MASK 0xffffffffu
#define SCALE_BITS 16
#define LIMB_BITS 32
#define MAX_LIMBS 5
#define WINDOW_BITS 62

__device__ __forceinline__ long long global_warp() { return (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; }
__device__ __forceinline__ long long warp_count() { return ((long long)gridDim.x * blockDim.x) >> 5; }

// One modulus p with fl(1/p).
struct Modulus {
    double p, inv_p;
    __device__ Modulus(const double *moduli, const double *inv_moduli, int l) : p(moduli[l]), inv_p(inv_moduli[l]) {}
    // A residue of y (an integer, |y| < 2^41) in [-p/2, p/2], exact: y fl(1/p) is within 2^-11
    // of y / p, and for odd p the fraction of y / p stays 1/(2p) > 2^-9 away from 1/2, so rint
    // finds the nearest quotient and the residue is crt.symmetric_mod's; for p = 256 (an exact
    // quotient) a tie may give +128 where symmetric_mod gives -128. The reconstruction takes any
    // residue (crt.py: only X = C' mod M matters), and int8_residue wraps +128 to -128.
    __device__ double congruent(double y) const { return y - p * rint(y * inv_p); }
};

// The int8 of crt.symmetric_mod from a residue of congruent(): the same value, or -128 for +128
// (p = 256), by two's complement wrapping.
__device__ __forceinline__ signed char int8_residue(double r) { return (signed char)(int)r; }

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
        double largest = 0.0;
        int bad = 0;
        for (int j = lane; j < cols; j += 32) {
            const double magnitude = fabs(r[j]);
            bad |= !isfinite(magnitude);
            largest = fmax(largest, magnitude);  // fmax skips NaN; the flag reports it
        }
        for (int offset = 16; offset; offset >>= 1) largest = fmax(largest, __shfl_xor_sync(FULL_MASK, largest, offset));
        if (__any_sync(FULL_MASK, bad)) {
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

// crt.scaled_limbs of one value: trunc(2^s v) = limbs[0] 2^64 + limbs[1] 2^32 + limbs[2].
__device__ __forceinline__ void scaled_limbs(double v, int s, double (&limbs)[3])
{
    double value = trunc(ldexp(v, s));
    limbs[0] = trunc(value * 0x1p-64);
    value -= limbs[0] * 0x1p64;
    limbs[1] = trunc(value * 0x1p-32);
    limbs[2] = value - limbs[1] * 0x1p32;
}

// A residue (Modulus::congruent) modulo p_l of the value held in limbs, |value| < 2^80: the
// argument stays below 2^16 * 255 + 2^32 * 255 + 2^32 < 2^41.
__device__ __forceinline__ double limb_residue(const double (&limbs)[3], const Modulus &modulus, double pow2_64,
                                               double pow2_32)
{
    return modulus.congruent(limbs[0] * pow2_64 + limbs[1] * pow2_32 + limbs[2]);
}

// crt.residues, one warp per row: out[row * out_stride + (l * parts + g) * padded + h] is the
// residue modulo p_l of part g (Re, Im, Re + Im for complex rows; the value for real ones) of
// element h of trunc(2^scales[row] x[row]); columns width..padded-1 are written as zeros.
// x rows hold `width` elements: real, or complex as interleaved (re, im) float64.
extern "C" __global__ void crt_residues(const double *__restrict__ x, long long rows, int width, int padded,
                                        long long row_stride, int is_complex, const int *__restrict__ scales,
                                        int n_moduli, const double *__restrict__ moduli,
                                        const double *__restrict__ inv_moduli, const double *__restrict__ pow2_32,
                                        const double *__restrict__ pow2_64, signed char *__restrict__ out,
                                        long long out_stride)
{
    const int lane = threadIdx.x & 31;
    const int parts = is_complex ? 3 : 1;
    for (long long row = global_warp(); row < rows; row += warp_count()) {
        const double *r = x + row * row_stride;
        const int s = scales[row];
        signed char *o = out + row * out_stride;
        for (int h = lane; h < padded; h += 32) {
            double limbs[2][3];  // of the real and imaginary parts
#pragma unroll
            for (int part = 0; part < 2; ++part) {
                if (part > is_complex) break;
                scaled_limbs(h < width ? r[is_complex ? 2 * h + part : h] : 0.0, s, limbs[part]);
            }
            for (int l = 0; l < n_moduli; ++l) {
                const Modulus modulus(moduli, inv_moduli, l);
                signed char *slot = o + (long long)l * parts * padded + h;
                const double re = limb_residue(limbs[0], modulus, pow2_64[l], pow2_32[l]);
                slot[0] = int8_residue(re);
                if (is_complex) {
                    const double im = limb_residue(limbs[1], modulus, pow2_64[l], pow2_32[l]);
                    slot[padded] = int8_residue(im);
                    slot[2 * padded] = int8_residue(modulus.congruent(re + im));
                }
            }
        }
    }
}

// crt._carry on one part's limbs (loops unrolled over MAX_LIMBS so the limbs stay in registers).
__device__ __forceinline__ void carry_limbs(double (&digits)[MAX_LIMBS], int n_limbs)
{
#pragma unroll
    for (int j = 0; j + 1 < MAX_LIMBS; ++j) {
        if (j + 1 < n_limbs) {
            const double carry = floor(digits[j] * 0x1p-32);
            digits[j] -= carry * 0x1p32;
            digits[j + 1] += carry;
        }
    }
}

// crt.round_limbs for one value: the nearest double to (sum_j digits[j] 2^(32 j)) 2^exponent.
__device__ __forceinline__ double round_limbs(double (&digits)[MAX_LIMBS], int n_limbs, int exponent)
{
    carry_limbs(digits, n_limbs);
    double top = digits[0];
#pragma unroll
    for (int j = 1; j < MAX_LIMBS; ++j)
        if (j < n_limbs) top = digits[j];
    const double sign = top < 0.0 ? -1.0 : 1.0;
#pragma unroll
    for (int j = 0; j < MAX_LIMBS; ++j) digits[j] *= sign;
    carry_limbs(digits, n_limbs);
    long long magnitude[MAX_LIMBS];
    int bit_length = 0;
#pragma unroll
    for (int j = 0; j < MAX_LIMBS; ++j) {
        magnitude[j] = j < n_limbs ? (long long)digits[j] : 0;
        if (magnitude[j] > 0) bit_length = max(bit_length, LIMB_BITS * j + 64 - __clzll(magnitude[j]));
    }
    const int shift = max(bit_length - WINDOW_BITS, 0);
    long long window = 0, sticky = 0;
#pragma unroll
    for (int j = 0; j < MAX_LIMBS; ++j) {
        const int offset = LIMB_BITS * j - shift;  // where limb j lands in the window
        window |= (magnitude[j] >> min(max(-offset, 0), 63)) << min(max(offset, 0), 63);
        sticky |= magnitude[j] & ((1LL << min(max(-offset, 0), LIMB_BITS)) - 1);
    }
    window |= sticky != 0;
    const double value = ldexp(__ll2double_rn(window), shift + exponent);
    return sign < 0.0 ? -value : value;
}

// crt.CrtAccumulator for one complex output (or a real one, in re): sum_l w_l Q_l in limbs and
// sum_l w_l / p_l, modulus by modulus (add), then the rounded result (finish).
struct CrtSums {
    double re[MAX_LIMBS] = {}, im[MAX_LIMBS] = {}, re_fraction = 0.0, im_fraction = 0.0;

    // p1, p2, p3: the modulus's INT8 products (crt.combine_products; p2 = p3 = 0 for real ones);
    // partial: the limbs of Q_l.
    __device__ __forceinline__ void add(const Modulus &modulus, double inverse, const double *partial, int n_limbs,
                                        double p1, double p2, double p3)
    {
        // |p1 - p2|, |p3 - p1 - p2| < 3 * 2^31 and y_l < 256: congruent()'s range, any residue will do
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

    // crt.CrtAccumulator.result: the nearest doubles to C' 2^exponent (im only when is_complex).
    __device__ __forceinline__ void finish(const double *product_limbs, int n_limbs, int exponent, bool is_complex,
                                           double &re_out, double &im_out)
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
        if (is_complex) im_out = round_limbs(im, n_limbs, exponent);
    }
};

// crt.CrtAccumulator for every output of a tile: products (n_moduli * parts, rows, cols) int32
// (parts = 3: P1, P2, P3 of Karatsuba; 1: the real product), modulus by modulus. out element
// (i, c) is written at out[i * out_stride + c * n_out + part] for its n_out = 1 (real) or
// 2 (re, im) parts.
extern "C" __global__ void crt_reconstruct(const int *__restrict__ products, long long rows, int cols, int is_complex,
                                           int n_moduli, const double *__restrict__ moduli,
                                           const double *__restrict__ inv_moduli, const double *__restrict__ inverses,
                                           int n_limbs, const double *__restrict__ partial_limbs,
                                           const double *__restrict__ product_limbs, const int *__restrict__ row_scales,
                                           const int *__restrict__ col_scales, double *__restrict__ out,
                                           long long out_stride)
{
    const long long count = rows * cols;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const int parts = is_complex ? 3 : 1;
    for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < count; index += stride) {
        CrtSums sums;
        for (int l = 0; l < n_moduli; ++l) {
            const int *product = products + (long long)l * parts * count + index;
            sums.add(Modulus(moduli, inv_moduli, l), inverses[l], partial_limbs + l * n_limbs, n_limbs, product[0],
                     is_complex ? product[count] : 0.0, is_complex ? product[2 * count] : 0.0);
        }
        const long long i = index / cols;
        const int c = (int)(index - i * cols);
        double *o = out + i * out_stride + (long long)c * (1 + is_complex);
        double im;
        sums.finish(product_limbs, n_limbs, -(row_scales[i] + col_scales[c]), is_complex, o[0], im);
        if (is_complex) o[1] = im;
    }
}
