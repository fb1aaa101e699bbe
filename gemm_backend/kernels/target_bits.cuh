// Where a gate's amplitudes sit in a flat state, for the gate kernels of every backend (gate_tiles.cuh's
// TargetLayout for K <= 512 known at compile time; ozaki/kernels/ozaki_crt.cu's gate stages for
// K <= 1024 known at run time). Gate index bit i is state-index bit target[i], packed six bits each
// (least significant first) in one 64-bit kernel argument, in any order; the bits of column c fill
// the other positions in order (a bit deposit). Both maps act on each bit alone, so they add over
// parts with disjoint bits.
#pragma once

// Field i of six packed bit positions.
__device__ __forceinline__ int packed_field(unsigned long long fields, int i) { return (int)((fields >> (6 * i)) & 63u); }

// The offset of column c's amplitude 0 for the n target positions `ascending` (sorted, lowest
// first): a zero bit inserted at every target, the lowest first (the bits of c at and above the
// target move up by one: c + (c & -2^target)).
__device__ __forceinline__ long long column_offset(long long c, unsigned long long ascending, int n)
{
    for (int i = 0; i < n; ++i) c += c & -(1LL << packed_field(ascending, i));
    return c;
}

// The offset of amplitude a (< 2^n) from its column's amplitude 0, for the n target positions
// `packed` in gate order.
__device__ __forceinline__ long long amplitude_offset(int a, unsigned long long packed, int n)
{
    long long offset = 0;
    for (int i = 0; i < n; ++i)
        if ((a >> i) & 1) offset += 1LL << packed_field(packed, i);
    return offset;
}
