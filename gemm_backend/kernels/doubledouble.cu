// A dense K x K complex gate applied in double-double to every column of a state held as two
// C-contiguous (L, K, R) complex128 views x_hi, x_lo (one dd number per real/imaginary part):
//     x[l, :, r] <- U @ x[l, :, r],   U exact (complex128), products exact through fma.
// It is the GPU half of gemm_backend/doubledouble.py: apply_batched_dd. The operation order
// matches the numpy version there exactly, and the module is compiled with --fmad=false so
// no other multiply-add is contracted: CPU and GPU references agree bit for bit.
//
// In place: a block stages all K values (hi and lo) of a tile of columns in shared memory
// before any of them is written, and tiles are disjoint. Staging, not one thread per column
// holding its column in registers, because a dd column is K * 32 bytes: at K = 32 that
// already spills, and gates up to K = 1024 must work.
//
// Tiles: tile_columns (a power of two dividing L * R, chosen on the host) consecutive column
// indices c = l * R + r. When R >= tile_columns a tile lies inside one group l and its loads
// of one row k are contiguous; when R < tile_columns it covers whole groups, one contiguous
// span of tile_columns * K elements, loaded in memory order. Rows of the shared tile are
// padded by one element against bank conflicts. U arrives transposed (u_columns[k * K + i]
// = U[i, k]) so that threads computing neighbouring outputs read neighbouring entries.

struct DoubleDouble {
    double hi, lo;
};

__device__ __forceinline__ DoubleDouble two_sum(double a, double b)
{
    const double s = a + b;
    const double b_virtual = s - a;
    return {s, (a - (s - b_virtual)) + (b - b_virtual)};
}

// |a| >= |b| or a == 0
__device__ __forceinline__ DoubleDouble quick_two_sum(double a, double b)
{
    const double s = a + b;
    return {s, b - (s - a)};
}

__device__ __forceinline__ DoubleDouble dd_add(DoubleDouble a, DoubleDouble b)
{
    DoubleDouble s = two_sum(a.hi, b.hi);
    const DoubleDouble t = two_sum(a.lo, b.lo);
    s = quick_two_sum(s.hi, s.lo + t.hi);
    return quick_two_sum(s.hi, s.lo + t.lo);
}

__device__ __forceinline__ DoubleDouble dd_negate(DoubleDouble a)
{
    return {-a.hi, -a.lo};
}

// a * c for an exact double c: the product of the high parts is exact through fma.
__device__ __forceinline__ DoubleDouble dd_times_exact(DoubleDouble a, double c)
{
    const double p = a.hi * c;
    const double e = fma(a.hi, c, -p);
    return quick_two_sum(p, e + a.lo * c);
}

__device__ __forceinline__ long long element_index(long long column, int k, int k_dim, int log2_right)
{
    const long long right_mask = (1LL << log2_right) - 1;
    return (((column >> log2_right) * k_dim + k) << log2_right) + (column & right_mask);
}

// Element e of a tile (0 <= e < tile_columns * K): its column j within the tile, its row k,
// and its index in the state, in an order that makes neighbouring e neighbouring addresses.
__device__ __forceinline__ long long tile_element(long long first_column, int e, int k_dim, int log2_right,
                                                  int tile_columns, int &j, int &k)
{
    const int right = 1 << log2_right;
    if (right >= tile_columns) {
        k = e / tile_columns;
        j = e - k * tile_columns;
        return element_index(first_column + j, k, k_dim, log2_right);
    }
    const int group_size = k_dim << log2_right;
    const int group = e / group_size;
    const int within = e - group * group_size;
    k = within >> log2_right;
    j = (group << log2_right) + (within & (right - 1));
    return first_column * k_dim + e;
}

extern "C" __global__ void apply_dd_gate(double2 *x_hi, double2 *x_lo, const double2 *__restrict__ u_columns,
                                         int k_dim, long long n_columns, int log2_right, int tile_columns)
{
    extern __shared__ double2 staged[];
    const int row_stride = k_dim + 1;
    double2 *staged_hi = staged;
    double2 *staged_lo = staged + tile_columns * row_stride;
    const int tile_elements = tile_columns * k_dim;
    const long long n_tiles = n_columns / tile_columns;

    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const long long first_column = tile * tile_columns;
        __syncthreads();  // the previous tile is no longer read
        for (int e = threadIdx.x; e < tile_elements; e += blockDim.x) {
            int j, k;
            const long long g = tile_element(first_column, e, k_dim, log2_right, tile_columns, j, k);
            staged_hi[j * row_stride + k] = x_hi[g];
            staged_lo[j * row_stride + k] = x_lo[g];
        }
        __syncthreads();
        // Output (i, j), j fastest: a warp shares i (one U entry, broadcast) and writes
        // neighbouring columns.
        for (int o = threadIdx.x; o < tile_elements; o += blockDim.x) {
            const int i = o / tile_columns;
            const int j = o - i * tile_columns;
            const double2 *column_hi = staged_hi + j * row_stride;
            const double2 *column_lo = staged_lo + j * row_stride;
            DoubleDouble re = {0.0, 0.0}, im = {0.0, 0.0};
            for (int k = 0; k < k_dim; ++k) {
                const double2 u = u_columns[k * k_dim + i];
                const double2 h = column_hi[k], l = column_lo[k];
                const DoubleDouble xr = {h.x, l.x}, xi = {h.y, l.y};
                re = dd_add(re, dd_times_exact(xr, u.x));
                re = dd_add(re, dd_negate(dd_times_exact(xi, u.y)));
                im = dd_add(im, dd_times_exact(xi, u.x));
                im = dd_add(im, dd_times_exact(xr, u.y));
            }
            const long long g = element_index(first_column + j, i, k_dim, log2_right);
            x_hi[g] = make_double2(re.hi, im.hi);
            x_lo[g] = make_double2(re.lo, im.lo);
        }
    }
}
