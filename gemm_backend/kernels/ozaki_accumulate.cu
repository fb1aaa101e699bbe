// FP64 accumulation of the Ozaki scheme's exact INT32 group products (gemm_backend/ozaki.py).
//
// products: (n_groups, rows, cols) int32, already in accumulation order. Each output is
//     out[i, c] = ldexp(((0 + P_0 w_0) + P_1 w_1) + ... , row_exponents[i] + col_exponents[c])
// with w_g = 2^(-diagonal_g * bits). The int32 -> double conversion and the products P_g w_g are
// exact (powers of two, results far above the subnormal range), so an FMA contraction of
// acc + P w rounds exactly like the separate add; the additions run in the same order as the
// numpy code, and ldexp rounds correctly, so CPU and GPU results are identical bit for bit.
extern "C" __global__ void ozaki_accumulate(const int *__restrict__ products, int n_groups,
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
        for (int g = 0; g < n_groups; ++g) acc += (double)products[g * count + index] * weights[g];
        out[i * out_row_stride + c] = ldexp(acc, row_exponents[i] + col_exponents[c]);
    }
}
