"""Native cuBLAS-class backends: FP64 complex GEMM (zgemm.ZgemmBackend) with its FP64 tensor-core and
CUDA-core gate kernels (gate, small_gate, kernels/), and the complex64 baseline (cgemm.CgemmBackend)."""
