// Sampling kernels (qsim/sampling_gpu.py): exact integer block weights, then every shot at once.
//
// The weight of an amplitude is rint((re * 2^30)^2) + rint((im * 2^30)^2), an integer in units of
// 2^-60, as in qsim/sampling.py's CPU path. A shot with uniform u = m / 2^53 picks the first
// amplitude whose cumulative weight exceeds floor(m * total / 2^53): integers throughout, so the
// pick does not depend on how the cumulative sum is split into blocks, nor on the device.

#define THREADS 256
#define WARP 32

constexpr double SQUARE_PRESCALE = 1073741824.0;      // 2^30
constexpr double TERM_LIMIT = 4611686018427387904.0;  // 2^62: a part whose square alone exceeds 4
constexpr unsigned long long BLOCK_LIMIT = 1ull << 62;
constexpr double UNIFORM_SCALE = 9007199254740992.0;  // 2^53

__device__ __forceinline__ unsigned long long part_weight(double v, unsigned &bad) {
    double scaled = __dmul_rn(v, SQUARE_PRESCALE);
    double t = __dmul_rn(scaled, scaled);
    bad |= !(t < TERM_LIMIT);
    return (unsigned long long)__double2ll_rn(t);
}

__device__ __forceinline__ unsigned long long amplitude_weight(double2 a, unsigned &bad) {
    return part_weight(a.x, bad) + part_weight(a.y, bad);
}

// block_sums[b] = weight of amplitudes b * 2^block_qubits .. (b + 1) * 2^block_qubits - 1, one warp
// per block (block_qubits <= 6: a lane adds at most 4 parts below 2^62 each, no overflow). Sums are
// added with a carry check; a block above 2^62 (squared norm 4) or any bad part sets *bad_flag.
// *high_total gets the sum of every block's weight >> 32 (a check that the total fits int64).
extern "C" __global__ void __launch_bounds__(THREADS)
block_weights(const double2 *__restrict__ state, long long blocks, int block_qubits,
              long long *__restrict__ block_sums, unsigned long long *__restrict__ high_total,
              unsigned *__restrict__ bad_flag) {
    const int lane = threadIdx.x % WARP;
    const long long warps = (long long)gridDim.x * (THREADS / WARP);
    const int amplitudes = 1 << block_qubits;
    unsigned bad = 0;
    unsigned long long high = 0;
    for (long long block = (long long)blockIdx.x * (THREADS / WARP) + threadIdx.x / WARP; block < blocks;
         block += warps) {
        const double2 *first = state + (block << block_qubits);
        unsigned long long sum = 0;
        for (int i = lane; i < amplitudes; i += WARP) sum += amplitude_weight(first[i], bad);
        for (int width = WARP / 2; width > 0; width /= 2) {
            unsigned long long other = __shfl_xor_sync(0xffffffffu, sum, width);
            bad |= sum + other < sum;
            sum += other;
        }
        bad |= sum > BLOCK_LIMIT;
        high += sum >> 32;
        if (lane == 0) block_sums[block] = (long long)sum;
    }
    if (lane == 0) {
        atomicAdd(high_total, high);
        if (bad) atomicOr(bad_flag, 1u);
    }
}

// Shot s: u = uniforms[s], m = u * 2^53 (exact), target = floor(m * total / 2^53) - offset. A target in
// [0, cumulative[blocks - 1]) is this state's: the first block whose cumulative weight exceeds it,
// then the first amplitude of that block whose running weight does; outcomes[s] gets bit j =
// bit qubits[j] of (index_offset | amplitude index). Any other target: outcomes[s] = -1 (another
// part of a divided state draws it).
extern "C" __global__ void __launch_bounds__(THREADS)
draw_shots(const double2 *__restrict__ state, const long long *__restrict__ cumulative, long long blocks,
           int block_qubits, const double *__restrict__ uniforms, long long shots, long long total,
           long long offset, long long index_offset, const int *__restrict__ qubits, int count,
           long long *__restrict__ outcomes) {
    const long long stride = (long long)gridDim.x * THREADS;
    for (long long shot = (long long)blockIdx.x * THREADS + threadIdx.x; shot < shots; shot += stride) {
        const unsigned long long m = (unsigned long long)__dmul_rn(uniforms[shot], UNIFORM_SCALE);
        const unsigned long long t = (unsigned long long)total;
        const long long target = (long long)((__umul64hi(m, t) << 11) | ((m * t) >> 53)) - offset;
        if (target < 0 || target >= cumulative[blocks - 1]) {
            outcomes[shot] = -1;
            continue;
        }
        long long low = 0, high = blocks;
        while (low < high) {  // first block whose cumulative weight exceeds target
            long long middle = (low + high) / 2;
            if (cumulative[middle] > target) high = middle; else low = middle + 1;
        }
        unsigned long long rest = (unsigned long long)(target - (low ? cumulative[low - 1] : 0));
        const long long first = low << block_qubits;
        const int amplitudes = 1 << block_qubits;
        int pick = amplitudes - 1;
        unsigned bad = 0;
        for (int i = 0; i < amplitudes; ++i) {
            unsigned long long w = amplitude_weight(state[first + i], bad);
            if (rest < w) { pick = i; break; }
            rest -= w;
        }
        const long long index = index_offset | (first + pick);
        long long outcome = 0;
        for (int j = 0; j < count; ++j) outcome |= ((index >> qubits[j]) & 1) << j;
        outcomes[shot] = outcome;
    }
}
