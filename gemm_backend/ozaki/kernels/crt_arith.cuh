// The per-element arithmetic of the Ozaki-II (Chinese remainder) scheme, as device functions:
// residues of scaled inputs (crt.scaled_limbs, crt.residues) and the exact CRT reconstruction
// with its single rounding (crt.CrtAccumulator). Used by kernels/ozaki_crt.cu and by any kernel
// that fuses the scheme; the numpy specification is gemm_backend/crt.py.
//
// The arithmetic runs on the integer and FP32 pipes (dp4a, IMAD, FFMA) beside the FP64 pipe,
// which only scales the inputs and sums the reconstruction's limbs. Every step is exact: integer
// operations are ring operations modulo 2^32 whose true results are proven small (so the wrapped
// result is the true one), float operations act on integers below 2^24 (doubles: 2^53), and the
// only estimates (the quotients of the residues and the multiple n of M) are proven close enough
// to give the exact integer however they are rounded or contracted. So FMA contraction cannot
// change any output. Each range bound is stated where it is used.
//
// The reconstruction takes a freedom the specification allows: it sums X' = sum_l r_l E_l with
// any r_l == C' (mod p_l) and E_l == y_l Q_l (mod M), which moves X' and n by multiples of M and
// 1 but not C' = X' - n M.
#pragma once

#define LIMB_BITS 32
#define MAX_LIMBS 5
#define MAX_MODULI 22  // registry.CRT_MODULI, GAUSSIAN_MODULI: the per-modulus constants live in shared memory
#define WINDOW_BITS 62

#include "rounded_quotient.cuh"

// -- residues: balanced bytes, dp4a against packed powers of two, one FP32 quotient ----------------

// The constants of modulus p for crt_residues (one 48-byte record per modulus, three LDS.128).
// powers[w] packs four int8 symmetric residues of 2^e mod p, e the weights of the bytes of digit
// word w: 2^0, 2^8, 2^16, 2^24 (w = 0), 2^32 .. 2^56 (w = 1), 2^62 .. 2^86 (w = 2, see Digits).
// turned_powers[w]: the same for i_p 2^e (Gaussian moduli; zero for the others), so that one dp4a
// sum gives i_p Im modulo p directly.
struct alignas(16) ResidueModulus {
    int powers[3];
    float inverse;  // scaled_inverse(p)
    int neg_p;      // -p
    int start;      // the dp4a sums' start: the least multiple of p at least 2^19
    unsigned half, sum_shift;  // floor(p/2), floor(p/2) + p - 2 quotient_offset(p) (mod 2^32)
    int turned_powers[3];
};

// v mod p in [-floor(p/2), floor((p-1)/2)] (crt.symmetric_mod); set-up only.
__device__ int symmetric_mod(int v, int p)
{
    int r = v % p;
    if (r < 0) r += p;
    return r > (p - 1) / 2 ? r - p : r;
}

// 2^e mod p in [0, p) by squaring (p <= 256: every product below 2^16); set-up only.
__device__ int power_of_two_mod(int e, int p)
{
    int result = 1 % p, base = 2 % p;
    for (; e; e >>= 1) {
        if (e & 1) result = result * base % p;
        base = base * base % p;
    }
    return result;
}

// The first n_moduli (<= MAX_MODULI) records from moduli and roots (float64 p_l and i_p, as
// crt.CrtPlan.p, root; roots may be null: no Gaussian residues) into shared memory, every byte of
// the packed powers by its own thread: the residue kernels run in one wave of blocks, so a serial
// set-up per block would delay every row; every thread of the block must call it.
__device__ void load_residue_moduli(ResidueModulus *table, const double *moduli, const double *roots, int n_moduli)
{
    constexpr int BYTES = 12;  // of powers, and again of turned_powers
    for (int i = threadIdx.x; i < n_moduli * 2 * BYTES; i += blockDim.x) {
        const int l = i / (2 * BYTES), turned = i % (2 * BYTES) >= BYTES, b = i % BYTES, w = b / 4;
        const int p = (int)moduli[l], factor = turned ? (roots ? (int)roots[l] : 0) : 1;
        const int e = (w < 2 ? 32 * w : 62) + 8 * (b % 4);
        signed char *bytes = (signed char *)(turned ? table[l].turned_powers : table[l].powers);  // little-endian
        bytes[b] = (signed char)symmetric_mod(factor * power_of_two_mod(e, p), p);
    }
    const int l = threadIdx.x;
    if (l < n_moduli) {
        ResidueModulus &c = table[l];
        const int p = (int)moduli[l];
        c.inverse = scaled_inverse(p);
        c.neg_p = -p;
        c.start = ((1 << 19) + p - 1) / p * p;
        c.half = p / 2;
        c.sum_shift = c.half + p - 2u * quotient_offset(p);
    }
    __syncthreads();
}

// The two scaling factors of a row: trunc(2^s v) = trunc((v 2^low) 2^high) with low = floor(s/2).
// Both are normal doubles for the scales row_scales makes (|s| < 1200). Each product is exact
// while its result is at least 1 (a power-of-two scaling of a normal or subnormal double that
// stays normal); a result below 1 may round, but stays below 1, and truncates to 0 as it should.
struct RowScale {
    double low, high;
    __device__ explicit RowScale(int s) : low(ldexp(1.0, s >> 1)), high(ldexp(1.0, s - (s >> 1))) {}
};

// trunc(2^s v) (|.| < 2^80, crt.scaled_limbs' range) as balanced base-256 digits: int8 bytes d_b
// with trunc(2^s v) = sum_b d_b 2^(8b) over the 8 bytes of words[0..1], plus
// sum_b words[2] byte b * 2^(62 + 8b) when wide (|value| >= 2^62).
struct Digits {
    int words[3];
    bool wide;
};

// Adding 0x80 to every byte (with carries) and flipping the bytes' top bits gives digits
// d_b = byte_b - 128 in [-128, 127] with sum d_b 2^(8b) == x (mod 2^64); that sum lies within
// 128 (2^64 - 1) / 255 < 2^63.01 of zero, and so does x (|x| < 2^62), so the two are equal.
__device__ __forceinline__ unsigned long long balanced64(long long x)
{
    return ((unsigned long long)x + 0x8080808080808080ull) ^ 0x8080808080808080ull;
}

// The same on 32 bits for |x| < 2^18 (the sum is within 2^31.01 of zero).
__device__ __forceinline__ int balanced32(int x) { return (int)(((unsigned)x + 0x80808080u) ^ 0x80808080u); }

__device__ __forceinline__ Digits scaled_digits(double v, const RowScale &scale)
{
    const double x = v * scale.low * scale.high;
    Digits d;
    d.wide = fabs(x) >= 0x1p62;
    // top = trunc(x / 2^62) (|top| < 2^18), bottom = x - top 2^62 exactly (x is an integer when
    // wide; the difference keeps x's sign and is below 2^62), truncated: trunc(x) = top 2^62 +
    // trunc(bottom).
    const double top = d.wide ? trunc(x * 0x1p-62) : 0.0;
    const unsigned long long bottom = balanced64(__double2ll_rz(fma(-top, 0x1p62, x)));
    d.words[0] = (int)(unsigned)bottom;
    d.words[1] = (int)(unsigned)(bottom >> 32);
    d.words[2] = balanced32(__double2int_rz(top));
    return d;
}

// start + sum_b d_b w_b over the digits' bytes d_b and the packed weights w_b (dp4a).
template <int WORDS>
__device__ __forceinline__ int digit_sum(const Digits &digits, const int (&weights)[3], int start)
{
    int sum = start;
#pragma unroll
    for (int w = 0; w < WORDS; ++w) sum = __dp4a(digits.words[w], weights[w], sum);
    return sum;
}

// The symmetric residue r of S' = S + c.start modulo p (|S| < 2^19, so 0 <= S' < 2^20 + 2^8: the
// S' of reduced_residue), as r + quotient_offset(p) (mod 2^32), whose low byte is r as int8; the
// start, a multiple of p, leaves the residue S's.
__device__ __forceinline__ unsigned started_residue(int started_sum, const ResidueModulus &c)
{
    return reduced_residue((unsigned)started_sum, c.neg_p, c.inverse);
}

// The symmetric residue of the value of `digits` modulo p (started_residue's value). S = sum d_b
// (2^e_b mod p) == value (mod p) with |S| <= 12 * 128 * 128 < 2^18 (dp4a adds it to the start).
template <int WORDS> __device__ __forceinline__ unsigned digit_residue(const Digits &digits, const ResidueModulus &c)
{
    return started_residue(digit_sum<WORDS>(digits, c.powers, c.start), c);
}

// On a Gaussian modulus, the symmetric residues of Re + i_p Im and Re - i_p Im (started_residue's
// values) from one dp4a sum of Re against 2^e mod p and one of Im against i_p 2^e mod p: each sum
// is below 12 * 128 * 120 in magnitude (p <= 241), so S_re +- S_im stays below 2^19.
template <int WORDS>
__device__ __forceinline__ void turned_residues(const Digits (&digits)[2], const ResidueModulus &c, unsigned &plus,
                                                unsigned &minus)
{
    const int re = digit_sum<WORDS>(digits[0], c.powers, c.start);
    const int im = digit_sum<WORDS>(digits[1], c.turned_powers, 0);
    plus = started_residue(re + im, c);
    minus = started_residue(re - im, c);
}

// The symmetric residue of r_re + r_im from two digit_residue results r + quotient_offset(p) (low
// byte as int8). With r in [-(p-1)/2, (p-1)/2] (odd p) or [-128, 128] (p = 256),
// v = r_re + r_im + floor(p/2) + p lies in [0, 3p); two unsigned steps v = min(v, v - p) (v - p
// wraps above v when v < p) bring it into [0, p), and v - floor(p/2) is the residue in
// [-floor(p/2), floor((p-1)/2)].
__device__ __forceinline__ unsigned sum_residue(unsigned re, unsigned im, const ResidueModulus &c)
{
    unsigned v = re + im + c.sum_shift;
    v = __viaddmin_u32(v, (unsigned)c.neg_p, v);
    v = __viaddmin_u32(v, (unsigned)c.neg_p, v);
    return v - c.half;
}

// ldexp(value, scale) for a value of 0 or in [1, 2^64]: where scale lies in [-1022, 959] the result
// is 0 or a normal double, so the product by the normal double 2^scale is exact and equals ldexp's;
// elsewhere (subnormal or infinite results, rare) ldexp itself, which rounds as the specification's.
__device__ __forceinline__ double scaled_by_power_of_two(double value, int scale)
{
    if (scale < -1022 || scale > 959) return ldexp(value, scale);
    return value * __hiloint2double((scale + 1023) << 20, 0);
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
    const double value = scaled_by_power_of_two(__ll2double_rn(window), shift + exponent);  // window < 2^63
    return sign < 0.0 ? -value : value;
}

// The same for LIMBS <= 4 limbs, whose values lie below 2^127 (M <= 2^128), with integer
// instructions in place of round_limbs' FP64 carries and limb-by-limb window: the exact sum as a
// two's-complement 128-bit (high, low) pair (each |digits[j]| < 2^47 is an exact int64; every
// word operation is modulo 2^64, and the true value fits in 128 bits), its magnitude's top 64
// bits with the bits below them ORed into the last (rounded to odd on >= 55 bits), converted to
// the nearest double once, which is the nearest double to the exact value, then scaled by ldexp:
// the same double round_limbs gives.
template <int LIMBS> __device__ __forceinline__ double round_words(const double (&digits)[MAX_LIMBS], int exponent)
{
    static_assert(LIMBS <= 4, "round_words holds values below 2^127");
    long long d[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) d[j] = j < LIMBS ? __double2ll_rz(digits[j]) : 0;
    const unsigned long long middle = (unsigned long long)d[1] << 32;  // d1 2^32 = (d1 >> 32) 2^64 + middle
    unsigned long long low = (unsigned long long)d[0] + middle;
    long long high = (d[0] >> 63) + (d[1] >> 32) + (low < middle) + d[2] + (long long)((unsigned long long)d[3] << 32);
    const bool negative = high < 0;
    if (negative) {
        low = ~low + 1;
        high = ~high + (low == 0);
    }
    double value;
    int scale = exponent;
    if (high == 0) {
        value = __ull2double_rn(low);
    } else {
        const int s = __clzll(high);  // >= 1: the magnitude is below 2^127
        value = __ull2double_rn((unsigned long long)high << s | low >> (64 - s) | (low << s != 0));
        scale += 64 - s;
    }
    value = scaled_by_power_of_two(value, scale);
    return negative ? -value : value;
}

// -- reconstruction: IMAD residues of the products, FP64 limb sums of r_l E_l ---------------------

// The constants of modulus l for crt_reconstruct (48 bytes). magic = round(2^32 / p); limbs: the
// LIMB_BITS-bit limbs of E_l = ys_l Q_l with the sign of E_l, ys_l = y_l mods p in
// [-floor(p/2), floor((p-1)/2)], so E_l == y_l Q_l (mod M) and |E_l| <= M/2. The limbs come first,
// 16-byte aligned, so that a thread loads them as whole LDS.128s.
struct alignas(16) ReconstructModulus {
    double limbs[MAX_LIMBS];
    int magic, p;
};

// Set-up only: E_l from the limbs of Q_l (float64 below 2^32, crt.CrtPlan.partial_limbs) by
// schoolbook multiplication with |ys| < 2^8 (each step below 2^41, no carry out of the top limb
// since |E_l| <= M/2 < 2^(32 n_limbs)).
__device__ ReconstructModulus reconstruct_modulus(int p, int y, const double *partial, int n_limbs)
{
    ReconstructModulus c;
    c.magic = (int)((0x100000000ull + p / 2) / p);
    c.p = p;
    const int ys = y > (p - 1) / 2 ? y - p : y;
    const double sign = ys < 0 ? -1.0 : 1.0;
    unsigned long long carry = 0;
    for (int j = 0; j < MAX_LIMBS; ++j) {
        const unsigned long long term = j < n_limbs ? (unsigned long long)partial[j] * (ys < 0 ? -ys : ys) + carry : 0;
        c.limbs[j] = sign * (double)(term & 0xffffffffull);
        carry = term >> LIMB_BITS;
    }
    return c;
}

// The block's table of every modulus and 1/M (fl(1/fl(M)), M from crt.CrtPlan.product_limbs) in
// shared memory, set by its first threads; every thread of the block must call it.
__device__ void load_reconstruct_moduli(ReconstructModulus *table, double *inv_product, const double *moduli,
                                        const double *inverses, const double *partial_limbs,
                                        const double *product_limbs, int n_moduli, int n_limbs)
{
    const int l = threadIdx.x;
    if (l < n_moduli)
        table[l] = reconstruct_modulus((int)moduli[l], (int)inverses[l], partial_limbs + l * n_limbs, n_limbs);
    if (l == 0) {
        double product = 0.0;
        for (int j = n_limbs - 1; j >= 0; --j) product = product * 0x1p32 + product_limbs[j];
        *inv_product = 1.0 / product;
    }
    __syncthreads();
}

// A residue u == P (mod p) of an INT8 GEMM product, |P| < 2^31, in (-p/4, 5p/4), as the uint32
// two's complement of u. q = floor(P magic / 2^32) (mulhi) and P magic / 2^32 = P/p + d with
// |d| <= |P| / 2^33 < 1/4 (|magic - 2^32/p| <= 1/2), so u = P - q p lies in [-p d, p (1 - d)).
// u is small, so the wrapped uint32 arithmetic gives it exactly.
__device__ __forceinline__ unsigned product_residue(int product, const ReconstructModulus &c)
{
    return (unsigned)product - (unsigned)__mulhi(product, c.magic) * (unsigned)c.p;
}

// A product already reduced modulo p (crt_products.cu's int8 residues, |r| <= (p - 1) / 2) is its
// own residue; the reconstruction's sums then differ from those of the int32 products by multiples
// of the product of the moduli, which its reduction removes, so the results are the same bits.
__device__ __forceinline__ unsigned product_residue(signed char residue, const ReconstructModulus &)
{
    return (unsigned)(int)residue;
}

// The double of an int32 (exact), one conversion instruction. (The FP64 pipe's way, a DADD on the
// bits 0x43300000 : (r + 2^31) with a LOP and a MOV to set them up, took 4% longer in the gate
// reconstruction once it staged its products: BENCHMARKS.md round 19.)
__device__ __forceinline__ double exact_double(unsigned r) { return (double)(int)r; }

// r_re == P+ + P- and r_im == P+ - P- (mod p) from a Gaussian modulus's two products (the halving and
// the division by i_p are folded into the limbs of the re and im tables: crt.CrtPlan.re_inverse,
// im_inverse), |r| < 2.5 p, inside add's bound.
template <class Product>
__device__ __forceinline__ void gaussian_residues(Product plus, Product minus, const ReconstructModulus &c,
                                                  unsigned &re, unsigned &im)
{
    const unsigned u_plus = product_residue(plus, c), u_minus = product_residue(minus, c);
    re = u_plus + u_minus;
    im = u_plus - u_minus;
}

// crt.CrtAccumulator for one complex output (or a real one, in re): X' = sum_l r_l E_l in LIMBS
// limbs (crt.CrtPlan.limbs; a template parameter, so that the limb loops have no branches).
template <int LIMBS> struct CrtSums {
    double re[MAX_LIMBS] = {}, im[MAX_LIMBS] = {};

    // p1, p2, p3: the modulus's INT8 products (Karatsuba; p2, p3 unused for real ones), int32 or
    // reduced to int8 residues (Product).
    // r_re = u1 - u2 == P1 - P2 and r_im = u3 - u1 - u2 == P3 - P1 - P2 (mod p) (crt.combine_products)
    // with |r| < 2.75 p <= 704; the limb sums stay below sum_l 2.75 p_l 2^32 < 2^46 (sum_l p_l <= 4395
    // for 20 moduli, 3282 for the 22 Gaussian ones, whose |r| < 2.5 p): every product and sum is an
    // exact double.
    template <class Product>
    __device__ __forceinline__ void add(const ReconstructModulus &c, bool is_complex, Product p1, Product p2,
                                        Product p3)
    {
        const unsigned u1 = product_residue(p1, c);
        if (!is_complex) {
            add_limbs(re, exact_double(u1), c);
            return;
        }
        const unsigned u2 = product_residue(p2, c), u3 = product_residue(p3, c);
        add_limbs(re, exact_double(u1 - u2), c);
        add_limbs(im, exact_double(u3 - u1 - u2), c);
    }

    // A Gaussian modulus: E_l of Re from c (y_l / 2), of Im from c_im (y_l / (2 i_p)).
    template <class Product>
    __device__ __forceinline__ void add_gaussian(const ReconstructModulus &c, const ReconstructModulus &c_im,
                                                 Product plus, Product minus)
    {
        unsigned r_re, r_im;
        gaussian_residues(plus, minus, c, r_re, r_im);
        add_limbs(re, exact_double(r_re), c);
        add_limbs(im, exact_double(r_im), c_im);
    }

    __device__ __forceinline__ static void add_limbs(double (&sums)[MAX_LIMBS], double r, const ReconstructModulus &c)
    {
#pragma unroll
        for (int j = 0; j < LIMBS; ++j) sums[j] = fma(r, c.limbs[j], sums[j]);
    }

    // crt.CrtAccumulator.result: the nearest doubles to C' 2^exponent (im only when is_complex).
    __device__ __forceinline__ void finish(const double *product_limbs, double inv_product, int exponent,
                                           bool is_complex, double &re_out, double &im_out)
    {
        subtract_multiple(re, product_limbs, inv_product);
        re_out = rounded(re, exponent);
        if (is_complex) {
            subtract_multiple(im, product_limbs, inv_product);
            im_out = rounded(im, exponent);
        }
    }

    // round_words where the limbs allow (half the instructions, BENCHMARKS.md round 16), else round_limbs.
    __device__ __forceinline__ static double rounded(double (&sums)[MAX_LIMBS], int exponent)
    {
        if constexpr (LIMBS <= 4)
            return round_words<LIMBS>(sums, exponent);
        else
            return round_limbs(sums, LIMBS, exponent);
    }

    // sums - n M with n = round(X'/M), C' = X' - n M (|C'| <= M/2 - M/2^32, crt.CrtPlan). |X'/M| <= sum_l
    // |r_l| |E_l| / M < 2^13, and the estimate below is within 2^-36 of it: the Horner sum of the
    // limbs errs by at most (LIMBS - 1) 2^-53 sum_l |r_l| |E_l| (the limbs of each E_l share
    // its sign), the products by 1/M add 3 LIMBS 2^-53 relative. So rint gives n exactly in
    // any evaluation order. |n M_j| < 2^45 and the limb sums are below 2^46: exact differences.
    __device__ __forceinline__ static void subtract_multiple(double (&sums)[MAX_LIMBS], const double *product_limbs,
                                                             double inv_product)
    {
        double estimate = 0.0;
#pragma unroll
        for (int j = LIMBS - 1; j >= 0; --j) estimate = fma(estimate, 0x1p32, sums[j]);
        const double multiple = rint(estimate * inv_product);
#pragma unroll
        for (int j = 0; j < LIMBS; ++j) sums[j] = fma(-multiple, product_limbs[j], sums[j]);
    }
};

// The products of V adjacent outputs of one modulus and part, in one load: V = 1 from the products
// themselves (Source = Product), V = 4 from a 32-bit word of four int8 residues, little-endian
// (Source = unsigned, Product = signed char).
template <int V, class Product> struct ProductVector {
    Product v[V];
};
template <int V, class Product, class Source>
__device__ __forceinline__ ProductVector<V, Product> load_products(const Source *p)
{
    ProductVector<V, Product> products;
    if constexpr (V == 1) {
        products.v[0] = p[0];
    } else {
        static_assert(V == 4 && sizeof(Product) == 1 && sizeof(Source) == 4, "four int8 residues a word");
        const unsigned word = *p;
#pragma unroll
        for (int j = 0; j < 4; ++j) products.v[j] = (Product)(signed char)(word >> (8 * j));
    }
    return products;
}

// Every modulus's products of V adjacent outputs into their sums, modulus by modulus: part g of
// modulus l as load_products' Source values at at[(l * parts + g) * part_stride] (parts 1, 2 or 3
// as CrtSums::add and add_gaussian take them; COMPLEX: the caller's are never real, parts 2 or 3).
// The V outputs share each modulus's table loads.
template <int LIMBS, int V, bool COMPLEX, class Product, class Source>
__device__ __forceinline__ void add_products(CrtSums<LIMBS> (&sums)[V], const Source *at, long long part_stride,
                                             int parts, int n_moduli, const ReconstructModulus *table,
                                             const ReconstructModulus *im_table)
{
    const long long step = parts * part_stride;
    constexpr int UNROLL = V == 1 ? 4 : 2;  // moduli in flight: each holds its tables in registers
    if (parts == 2) {
#pragma unroll UNROLL
        for (int l = 0; l < n_moduli; ++l, at += step) {
            const auto plus = load_products<V, Product>(at), minus = load_products<V, Product>(at + part_stride);
            const ReconstructModulus &c = table[l], &c_im = im_table[l];
#pragma unroll
            for (int j = 0; j < V; ++j) sums[j].add_gaussian(c, c_im, plus.v[j], minus.v[j]);
        }
    } else {
        const bool is_complex = COMPLEX || parts > 1;
#pragma unroll UNROLL / 2
        for (int l = 0; l < n_moduli; ++l, at += step) {
            const auto p1 = load_products<V, Product>(at);
            const auto p2 = is_complex ? load_products<V, Product>(at + part_stride) : ProductVector<V, Product>{};
            const auto p3 = is_complex ? load_products<V, Product>(at + 2 * part_stride) : ProductVector<V, Product>{};
            const ReconstructModulus &c = table[l];
#pragma unroll
            for (int j = 0; j < V; ++j) sums[j].add(c, is_complex, p1.v[j], p2.v[j], p3.v[j]);
        }
    }
}

