"""INT8 Ozaki schemes: Ozaki-I (digit slices, backend.OzakiBackend) and Ozaki-II (Chinese remainder,
crt_backend.OzakiCrtBackend), with their digit splitting, product plans, error bounds, accuracy
contract, cost model and CUDA kernels (kernels/)."""
