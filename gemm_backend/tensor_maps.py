"""Tensor maps for the bulk tensor copies of Hopper kernels (cp.async.bulk.tensor, sm_90).

A tensor map (the driver's CUtensorMap, 128 bytes) tells the copy engine where a tensor sits,
its shape and strides, the box one copy brings to shared memory and the box's swizzle. It is
encoded on the host by the CUDA driver (cuTensorMapEncodeTiled, called here through ctypes:
cupy does not wrap it) and put in device memory, where the kernels read it by pointer.
"""
import ctypes
import functools

import numpy as np

from .arrays import cupy_module
from .errors import BackendError

TENSOR_MAP_BYTES = 128
_UINT8 = 0  # CU_TENSOR_MAP_DATA_TYPE_UINT8
_NO_INTERLEAVE = 0
_SWIZZLE_128B = 3
_L2_PROMOTION_128B = 2
_ZERO_FILL = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: elements past the tensor's ends read as zero


@functools.lru_cache(maxsize=None)
def _driver():
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        raise BackendError(f"the CUDA driver library could not be loaded for tensor maps: {error}") from None


@functools.lru_cache(maxsize=64)
def _device_map(address: int, dims: tuple, strides: tuple, box: tuple, device_id: int):
    encoded = ctypes.create_string_buffer(TENSOR_MAP_BYTES + 64)
    aligned = (ctypes.addressof(encoded) + 63) // 64 * 64  # the driver wants 64-byte alignment
    rank = len(dims)
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    result = _driver().cuTensorMapEncodeTiled(
        ctypes.c_void_p(aligned), _UINT8, u32(rank), ctypes.c_void_p(address), (u64 * rank)(*dims),
        (u64 * (rank - 1))(*strides), (u32 * rank)(*box), (u32 * rank)(*([1] * rank)), _NO_INTERLEAVE,
        _SWIZZLE_128B, _L2_PROMOTION_128B, _ZERO_FILL)
    if result != 0:
        raise BackendError(f"cuTensorMapEncodeTiled refused an int8 tensor of dims {dims}, strides {strides}, "
                           f"box {box} (CUresult {result})")
    cp = cupy_module()
    return cp.asarray(np.frombuffer(ctypes.string_at(aligned, TENSOR_MAP_BYTES), np.uint8))


def int8_tensor_map(array, dims: tuple, strides: tuple, box: tuple):
    """The tensor map (a 128-byte cupy array) of the int8 tensor at `array`'s first byte: dims
    innermost first, strides in bytes of every dimension but the innermost (multiples of 16), and
    boxes `box` (innermost 128 bytes) in the 128-byte swizzle, zero past every end. Maps depend on
    the address and shape only, so they are cached by them."""
    cp = cupy_module()
    return _device_map(array.data.ptr, tuple(dims), tuple(strides), tuple(box), cp.cuda.Device().id)
