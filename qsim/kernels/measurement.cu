// Measurement kernels: exact fixed-point outcome weights and one-pass collapse (qsim/measurement_gpu.py).
//
// The arithmetic is that of qsim/measurement.py's CPU path, term by term: every real or imaginary
// part v gives t = (v * 2^30)^2 (one correctly rounded multiply), whose whole part and fraction
// rounded to 28 bits (nearest, ties to even) are summed as 64-bit integers. Integer sums do not
// depend on their order, so any launch shape gives the CPU's bits.

#define THREADS 256
#define LANE_BITS 5

constexpr double SQUARE_PRESCALE = 1073741824.0;      // 2^30
constexpr double FRACTION_SCALE = 268435456.0;        // 2^28
constexpr double TERM_LIMIT = 4611686018427387904.0;  // 2^62: one term above it is a squared norm above 4

// The bits of index at the set bits of mask, packed from bit 0 in ascending position (a software pext).
__device__ __forceinline__ unsigned extract_bits(long long index, long long mask) {
    unsigned result = 0;
    for (int position = 0; mask; ++position) {
        long long lowest = mask & -mask;
        if (index & lowest) result |= 1u << position;
        mask ^= lowest;
    }
    return result;
}

// The set bits of mask, filled from the low bits of value in order (a software pdep).
__device__ __forceinline__ long long deposit_bits(long long value, long long mask) {
    long long result = 0;
    for (int position = 0; mask; ++position) {
        long long lowest = mask & -mask;
        if ((value >> position) & 1) result |= lowest;
        mask ^= lowest;
    }
    return result;
}

__device__ __forceinline__ void add_part(double v, long long &whole, long long &fraction, unsigned &bad) {
    double scaled = __dmul_rn(v, SQUARE_PRESCALE);
    double t = __dmul_rn(scaled, scaled);
    bad |= !(t < TERM_LIMIT);  // NaN, Inf or a part above 2 in magnitude
    double whole_part = trunc(t);
    whole += __double2ll_rz(whole_part);
    fraction += __double2ll_rn(__dmul_rn(t - whole_part, FRACTION_SCALE));
}

// Weights of the 2^k outcomes of the measured qubits (the set bits of measured_mask), added into
// bins[2 * outcome] (whole parts, units of 2^-60) and bins[2 * outcome + 1] (rounded fractions, units of
// 2^-88), where bit i of outcome is the i-th lowest measured qubit; bins start at zero. The qubits
// come as a mask argument, not a device array, so a measurement copies nothing to the device.
//
// Thread t reads the amplitudes deposit_bits(t, thread_mask) + every subset of loop_mask, where
// loop_mask holds only unmeasured qubits: each thread's outcome is fixed, so it sums in registers.
// The low thread bits are the low index bits, so a warp reads consecutive amplitudes. A block then
// combines the threads of equal outcome: shuffles over the unmeasured lane bits, shared memory over
// the unmeasured warp bits (block_unmeasured: the thread-index bits whose qubit is not measured),
// and one atomic add per outcome and block. threads: 2^popcount(thread_mask); the threads of the
// last block beyond it add zeros (set their thread-index bits in block_unmeasured).
extern "C" __global__ void __launch_bounds__(THREADS)
outcome_weights(const double2 *__restrict__ state, long long thread_mask, long long loop_mask,
                long long loop_count, long long threads, long long measured_mask, unsigned block_unmeasured,
                unsigned long long *__restrict__ bins, unsigned long long *__restrict__ bad_flag) {
    const long long thread = (long long)blockIdx.x * THREADS + threadIdx.x;
    const long long base = deposit_bits(thread, thread_mask);
    long long whole = 0, fraction = 0;
    unsigned bad = 0;
    long long offset = 0;
    long long remaining = thread < threads ? loop_count : 0;
    for (; remaining >= 4; remaining -= 4) {
        long long o1 = (offset - loop_mask) & loop_mask;
        long long o2 = (o1 - loop_mask) & loop_mask;
        long long o3 = (o2 - loop_mask) & loop_mask;
        double2 a0 = state[base + offset], a1 = state[base + o1], a2 = state[base + o2], a3 = state[base + o3];
        add_part(a0.x, whole, fraction, bad); add_part(a0.y, whole, fraction, bad);
        add_part(a1.x, whole, fraction, bad); add_part(a1.y, whole, fraction, bad);
        add_part(a2.x, whole, fraction, bad); add_part(a2.y, whole, fraction, bad);
        add_part(a3.x, whole, fraction, bad); add_part(a3.y, whole, fraction, bad);
        offset = (o3 - loop_mask) & loop_mask;
    }
    for (; remaining > 0; --remaining) {
        double2 a = state[base + offset];
        add_part(a.x, whole, fraction, bad); add_part(a.y, whole, fraction, bad);
        offset = (offset - loop_mask) & loop_mask;
    }
    for (int bit = 0; bit < LANE_BITS; ++bit) {
        if ((block_unmeasured >> bit) & 1) {
            whole += __shfl_xor_sync(0xffffffffu, whole, 1 << bit);
            fraction += __shfl_xor_sync(0xffffffffu, fraction, 1 << bit);
        }
    }
    __shared__ long long shared_whole[THREADS], shared_fraction[THREADS];
    shared_whole[threadIdx.x] = whole;
    shared_fraction[threadIdx.x] = fraction;
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0 && bad) atomicOr(bad_flag, 1ull);
    if (threadIdx.x & block_unmeasured) return;  // not the first thread of its outcome in this block
    const unsigned warp_unmeasured = block_unmeasured & ~((1u << LANE_BITS) - 1);
    unsigned step = 0;
    do {  // every subset of the unmeasured warp bits
        whole += step ? shared_whole[threadIdx.x | step] : 0;
        fraction += step ? shared_fraction[threadIdx.x | step] : 0;
        step = (step - warp_unmeasured) & warp_unmeasured;
    } while (step);
    const unsigned outcome = extract_bits(base, measured_mask);
    atomicAdd(bins + 2 * outcome, (unsigned long long)whole);
    atomicAdd(bins + 2 * outcome + 1, (unsigned long long)fraction);
}

// Collapse in one pass over the 2^N amplitudes: the amplitudes whose measured bits (index & mask) equal
// kept are multiplied by scale (real and imaginary parts, correctly rounded) and written where those
// bits equal target (kept for a projection, 0 for a reset); every other amplitude becomes +0. Only
// the kept amplitudes are read. The thread of a kept amplitude also writes its target, so no amplitude
// is both read and written by different threads.
extern "C" __global__ void __launch_bounds__(THREADS)
collapse(double2 *__restrict__ state, long long size, long long mask, long long kept, long long target,
         double scale) {
    const double2 zero = make_double2(0.0, 0.0);
    const long long stride = (long long)gridDim.x * THREADS;
    for (long long index = (long long)blockIdx.x * THREADS + threadIdx.x; index < size; index += stride) {
        const long long bits = index & mask;
        if (bits == kept) {
            double2 a = state[index];
            state[(index ^ kept) | target] = make_double2(__dmul_rn(a.x, scale), __dmul_rn(a.y, scale));
            if (kept != target) state[index] = zero;
        } else if (bits != target) {
            state[index] = zero;
        }
    }
}
