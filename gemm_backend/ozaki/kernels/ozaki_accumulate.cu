// FP64 accumulation of the Ozaki scheme's exact INT32 group products (gemm_backend/ozaki.py,
// the order of gemm_backend/ozaki_plan.py).
//
// products: (n_groups, rows, cols) int32, groups in accumulation order (diagonals from the
// largest t down). Per output: the groups of one chunk of diagonals are combined exactly,
// V = sum P_g 2^shift_g in int64 (|V| < 2^53 by the plan), and when a chunk ends
// acc = fma((double)V, weight, acc), with weight = 2^(-b t_top) (exact product, one rounding, like
// numpy's acc + V * weight). Finally out = ldexp(acc, row_exponents[i] + col_exponents[c]),
// correctly rounded like numpy's ldexp, so CPU and GPU results are identical bit for bit.
extern "C" __global__ void ozaki_accumulate(const int *__restrict__ products, int n_groups,
                                            const int *__restrict__ shifts, const int *__restrict__ chunk_ends,
                                            const double *__restrict__ weights, long long rows, int cols,
                                            const int *__restrict__ row_exponents,
                                            const int *__restrict__ col_exponents, double *__restrict__ out,
                                            long long out_row_stride)
{
    const long long count = rows * cols;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < count; index += stride) {
        const long long i = index / cols;
        const int c = (int)(index - i * cols);
        double acc = 0.0;
        long long chunk = 0;
        for (int g = 0; g < n_groups; ++g) {
            chunk += (long long)products[g * count + index] * (1LL << shifts[g]);
            if (chunk_ends[g]) {
                acc = fma((double)chunk, weights[g], acc);
                chunk = 0;
            }
        }
        out[i * out_row_stride + c] = ldexp(acc, row_exponents[i] + col_exponents[c]);
    }
}
