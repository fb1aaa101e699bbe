// Batched transposed copy of complex128 matrices of any strides (in elements):
// dst[l, j, i] = src[l, i, j] for l < batch, i < rows, j < cols.
// A block moves 32 x 32 tiles through shared memory, so the reads (along j) and the writes (along
// i) are both coalesced whichever axis is the contiguous one: a copy that follows the output's
// order instead reads one 16-byte element per 32-byte sector when the source's stride is large.
// Grid: x over tiles of j, y over tiles of i, z strides over the batch; blockDim (32, 8).
extern "C" __global__ void transpose_complex(const double2 *__restrict__ src, double2 *__restrict__ dst,
                                             long long batch, long long rows, long long cols,
                                             long long src_batch, long long src_row, long long src_col,
                                             long long dst_batch, long long dst_row, long long dst_col)
{
    __shared__ double2 tile[32][33];  // + 1: a column of the tile falls in different banks
    const long long i0 = (long long)blockIdx.y * 32, j0 = (long long)blockIdx.x * 32;
    for (long long l = blockIdx.z; l < batch; l += gridDim.z) {
        for (int di = threadIdx.y; di < 32; di += blockDim.y) {
            const long long i = i0 + di, j = j0 + threadIdx.x;
            if (i < rows && j < cols)
                tile[di][threadIdx.x] = src[l * src_batch + i * src_row + j * src_col];
        }
        __syncthreads();
        for (int dj = threadIdx.y; dj < 32; dj += blockDim.y) {
            const long long j = j0 + dj, i = i0 + threadIdx.x;
            if (i < rows && j < cols)
                dst[l * dst_batch + j * dst_row + i * dst_col] = tile[threadIdx.x][dj];
        }
        __syncthreads();  // the tile is refilled for the next l
    }
}
