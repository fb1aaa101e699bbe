"""Random inputs and error measures shared by the backend tests."""
import numpy as np


def crandn(rng, *shape):
    """Complex normal entries: independent standard normal real and imaginary parts."""
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def draw(rng, shape, dist: str, kind: str):
    """normal(0, 1) or uniform(0, 1] entries; complex ones have independent real and imaginary parts."""
    def real_part():
        return rng.standard_normal(shape) if dist == "normal" else 1.0 - rng.random(shape)

    return real_part() if kind == "real" else real_part() + 1j * real_part()


def same_bits(x, y) -> bool:
    """Same dtype, shape and bytes (NaNs and signed zeros included)."""
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def normwise_error(c, ref) -> float:
    return float(np.abs(c - ref).max() / np.abs(ref).max())


def check_apply_batched(backend, shape, rng, atol=1e-12):
    """backend.apply_batched on a random (L, K, R) view against einsum, out of place and in
    place; returns the two results (out-of-place, in-place) for backend-specific checks."""
    u, x = crandn(rng, shape[1], shape[1]), crandn(rng, *shape)
    expected = np.einsum("ij,ljr->lir", u, x)
    out = np.empty_like(x)
    backend.apply_batched(u, x, out)
    assert np.abs(out - expected).max() < atol
    backend.apply_batched(u, x, x)
    assert np.abs(x - expected).max() < atol
    return out, x
