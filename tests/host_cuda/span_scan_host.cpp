// kernels/span_scan.cu compiled for the host, so that its logic can be checked against the numpy
// specification (spans.summarize_spans, split.row_exponents) on a machine without a GPU
// (tests/test_span_scan.py). A launch runs one block of one warp (host_block.hpp), with the warp
// primitives of warp_intrinsics.hpp and the device functions of device_functions.hpp. The one
// warp walks every tile, so it flushes its window counters many times.
// Build: g++ -std=c++20 -shared -fPIC -D<span_scan.py's definitions> -DKERNELS='"span_scan.cu"' span_scan_host.cpp
#include "host_block.hpp"
#include "warp_intrinsics.hpp"
#include "device_functions.hpp"

#include KERNELS

extern "C" void host_span_scan(const double *x, long long rows, long long elements, int width, long long row_step,
                               long long element_step, int lanes_across_rows, int bits, int *exponents,
                               int *nonfinite, unsigned long long *totals)
{
    launch_one_warp([&] {
        span_scan(x, rows, elements, width, row_step, element_step, lanes_across_rows, bits, exponents, nonfinite,
                  totals);
    });
}
