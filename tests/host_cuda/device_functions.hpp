// CUDA's vector types and the per-thread device functions that the kernels with host harnesses
// call, with CUDA's semantics: bit casts and conversions (rounding as named), byte permutes,
// min and max, atomics as std::atomic_ref, and the cache-hinted loads and stores as plain ones.
// The math functions are the C library's, exact like CUDA's for the operations the kernels use
// (frexp, ldexp, rint, floor, fabs, fmax, products by powers of two); fma and sqrt are correctly
// rounded in both.
#pragma once
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>

using std::fabs; using std::floor; using std::fma; using std::fmax; using std::frexp; using std::ldexp;
using std::rint; using std::sqrt;

struct double2 { double x, y; };
struct uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline double2 make_double2(double x, double y) { return {x, y}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

inline int __double2hiint(double x) { return (int)(std::bit_cast<uint64_t>(x) >> 32); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline long long __double2ll_rn(double x) { return std::llrint(x); }  // the default mode: to nearest even
inline unsigned long long __double2ull_rz(double x) { return (unsigned long long)x; }  // C++ truncates

// Bytes of a (0 .. 3) and b (4 .. 7), picked by the four low nibbles of selector (bit 3 of each
// nibble, the sign-replicate mode, is not used by the kernels and not emulated).
inline unsigned __byte_perm(unsigned a, unsigned b, unsigned selector)
{
    const uint64_t bytes = (uint64_t)b << 32 | a;
    unsigned out = 0;
    for (int i = 0; i < 4; ++i) out |= (unsigned)(bytes >> (8 * ((selector >> (4 * i)) & 7)) & 0xff) << (8 * i);
    return out;
}

template <class T> inline T atomicAdd(T *address, T value) { return std::atomic_ref<T>(*address).fetch_add(value); }
inline int atomicExch(int *address, int value) { return std::atomic_ref<int>(*address).exchange(value); }
inline unsigned long long atomicMax(unsigned long long *address, unsigned long long value)
{
    std::atomic_ref<unsigned long long> target(*address);
    unsigned long long seen = target.load();
    while (seen < value && !target.compare_exchange_weak(seen, value)) {}
    return seen;
}

template <class T> inline T __ldg(const T *address) { return *address; }
template <class T> inline T __ldcs(const T *address) { return *address; }
template <class T> inline T __ldcg(const T *address) { return *address; }
template <class T> inline void __stcs(T *address, T value) { *address = value; }
