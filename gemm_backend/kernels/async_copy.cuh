// Copies from global to shared memory behind the thread's back (cp.async, sm_80 and later), landed
// by copy_async_wait: the copies of one thread are grouped by copy_async_commit, and a thread reads
// its slots once the group that fills them has landed. Compiled for the host (tests/host_cuda),
// a copy is made at once and the commits and waits do nothing.
#pragma once

// 16 bytes (zeros where !valid).
__device__ __forceinline__ void copy_async_16(void *shared, const void *global, bool valid)
{
#ifdef __CUDA_ARCH__
    const unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(global), "r"(valid ? 16 : 0)
                 : "memory");
#else
    const unsigned long long *from = (const unsigned long long *)global;
    unsigned long long *to = (unsigned long long *)shared;
    to[0] = valid ? from[0] : 0;
    to[1] = valid ? from[1] : 0;
#endif
}

// One 4-byte word (both addresses 4-byte aligned).
__device__ __forceinline__ void copy_async_4(unsigned *shared, const void *global)
{
#ifdef __CUDA_ARCH__
    const unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(address), "l"(global) : "memory");
#else
    *shared = *(const unsigned *)global;
#endif
}

__device__ __forceinline__ void copy_async_commit()
{
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// Until at most `PENDING` of this thread's latest groups are still in flight.
template <int PENDING> __device__ __forceinline__ void copy_async_wait()
{
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
#endif
}
