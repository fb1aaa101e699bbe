// Kernels of the multiword FP16 GEMM (gemm_backend/multiword.py, design brief section 5).
//
// split_rows: power-of-two scaling of each row into fp16's range and the split into fp16 words.
// combine_words: the blocked summation of the tensor-core products outside the tensor cores,
//     the low-word term, the undoing of the scaling and the complex128 output, in one pass.
//
// fp16 values travel as their 16-bit patterns (unsigned short) and are converted with PTX cvt,
// which rounds float64 -> fp16 to nearest even in one step (no detour through float32, whose
// double rounding would make the words differ from numpy's on the CPU path).

__device__ __forceinline__ unsigned short double_to_half_bits(double v)
{
    unsigned short h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(v));
    return h;
}

__device__ __forceinline__ double half_bits_to_double(unsigned short h)
{
    double v;
    asm("cvt.f64.f16 %0, %1;" : "=d"(v) : "h"(h));
    return v;
}

// One warp per row of x (rows, width), C-contiguous float64. Writes
//   shift[r] = word_exponent - e, where 2^(e-1) <= max_c |x[r, c]| < 2^e (e = 0 for a zero row),
//   words[r, c]         = fp16(x[r, c] * 2^shift[r])                                (high word)
//   words[r, width + c] = fp16((x[r, c] * 2^shift[r] - high) * 2^low_shift)       (WORDS == 2)
// words has WORDS * width columns. A NaN or Inf entry sets *nonfinite |= nonfinite_bit (fmax
// would silently skip a NaN, so it is detected explicitly).
template <int WORDS>
__global__ void split_rows(const double *__restrict__ x, long long rows, int width, int word_exponent,
                           int low_shift, int *__restrict__ shift, unsigned short *__restrict__ words,
                           int *nonfinite, int nonfinite_bit)
{
    const int lane = threadIdx.x & 31;
    const long long first_warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    const long long n_warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long r = first_warp; r < rows; r += n_warps) {
        const double *row = x + r * width;
        double row_max = 0.0;
        bool finite = true;
        for (int c = lane; c < width; c += 32) {
            const double v = row[c];
            finite = finite && isfinite(v);
            row_max = fmax(row_max, fabs(v));
        }
        for (int offset = 16; offset > 0; offset >>= 1)
            row_max = fmax(row_max, __shfl_xor_sync(0xffffffffu, row_max, offset));
        if (!__all_sync(0xffffffffu, finite) && lane == 0) atomicOr(nonfinite, nonfinite_bit);
        int exponent;
        frexp(row_max, &exponent);
        const int s = word_exponent - exponent;
        if (lane == 0) shift[r] = s;
        unsigned short *out = words + r * (long long)(WORDS * width);
        // The row was just read by this warp: the second pass is served from L1/L2.
        for (int c = lane; c < width; c += 32) {
            const double scaled = ldexp(row[c], s);
            const unsigned short high = double_to_half_bits(scaled);
            out[c] = high;
            if (WORDS == 2) out[width + c] = double_to_half_bits(ldexp(scaled - half_bits_to_double(high), low_shift));
        }
    }
}

// out[i, j] = 2^-(row_shift[i] + col_shift[j]) * (sum_p partials[p, i, :] + low_weight * cross[i, :])
// for every output element (i, j) of a (rows, cols) complex128 array. partials: (n_blocks, rows,
// PARTS * cols) float32, block p at partials + p * block_stride; cross: (rows, PARTS * cols) float32.
// PARTS == 2: columns 2j, 2j+1 hold the real and imaginary parts of output j; PARTS == 1: real
// output. The sums run in Acc (float: FP32 round-to-nearest, double: FP64), block by block in order.
template <typename Acc, int PARTS, bool CROSS>
__global__ void combine_words(const float *__restrict__ partials, int n_blocks, long long block_stride,
                              const float *__restrict__ cross, Acc low_weight, const int *__restrict__ row_shift,
                              const int *__restrict__ col_shift, double2 *__restrict__ out, long long rows, int cols)
{
    const long long total = rows * cols;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += stride) {
        const long long i = e / cols;
        const int j = (int)(e - i * cols);
        const long long at = e * PARTS;
        Acc re = 0, im = 0;
        for (int p = 0; p < n_blocks; ++p) {
            const float *part = partials + p * block_stride + at;
            re += (Acc)part[0];
            if (PARTS == 2) im += (Acc)part[1];
        }
        if (CROSS) {
            re += low_weight * (Acc)cross[at];
            if (PARTS == 2) im += low_weight * (Acc)cross[at + 1];
        }
        const int s = -(row_shift[i] + col_shift[j]);
        out[e] = make_double2(ldexp((double)re, s), PARTS == 2 ? ldexp((double)im, s) : 0.0);
    }
}
