// The INT8 tensor-core product (ozaki/kernels/mma_s8.cuh) for the host harnesses, from the 32
// lanes' fragments. Include after host_block.hpp.
#pragma once
#include <cstdint>

// mma.sync.m16n8k32.row.col.s32.s8.s8.s32 on the fragments of the warp's lanes (PTX's layouts):
// A(row, k) is byte k % 4 of register 2 (k / 16) + row / 8 of lane 4 (row % 8) + (k % 16) / 4;
// B(k, column) byte k % 4 of register k / 16 of lane 4 column + (k % 16) / 4; lane (g, t) holds
// D(g + 8 (i / 2), 2 t + i % 2) in d[i]. Sums wrap modulo 2^32 as the hardware's do.
struct MmaFragments {
    unsigned a[4], b[2];
};
inline int fragment_byte(unsigned word, int k) { return (int8_t)(uint8_t)(word >> (8 * (k & 3))); }

inline void host_mma_s8(int (&d)[4], const uint4 &a, unsigned b0, unsigned b1)
{
    const auto lanes = warp_gather(MmaFragments{{a.x, a.y, a.z, a.w}, {b0, b1}});
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i) {
        const int row = g + 8 * (i >> 1), column = 2 * t + (i & 1);
        uint32_t sum = (uint32_t)d[i];
        for (int k = 0; k < 32; ++k) {
            const unsigned a_word = lanes[4 * (row & 7) + ((k & 15) >> 2)].a[2 * (k >> 4) + (row >> 3)];
            const unsigned b_word = lanes[4 * column + ((k & 15) >> 2)].b[k >> 4];
            sum += (uint32_t)(fragment_byte(a_word, k) * fragment_byte(b_word, k));
        }
        d[i] = (int)sum;
    }
}
