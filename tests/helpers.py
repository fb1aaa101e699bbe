"""Random inputs and error measures shared by the backend tests; the repository's scripts as modules."""
import importlib.util
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parent.parent


def load_script(path: str):
    """The repository's script at `path` (relative to its root, e.g. scripts/bench/bench_gates.py),
    loaded as a fresh module."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, REPOSITORY / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def at_targets(state, targets, apply_columns):
    """A copy of the flat state (2^n,) whose columns at `targets` (gate index bit i at state bit
    targets[i]) are replaced by apply_columns(columns): (L, K) in, (L, K) out, one row a column."""
    n = state.size.bit_length() - 1
    axes = [n - 1 - t for t in reversed(targets)]
    others = [a for a in range(n) if a not in axes]
    columns = np.ascontiguousarray(state.reshape((2,) * n).transpose(others + axes)).reshape(-1, 1 << len(targets))
    moved = np.asarray(apply_columns(columns)).reshape((2,) * n)
    return np.ascontiguousarray(moved.transpose(np.argsort(others + axes))).reshape(-1)


def batched_on_columns(backend, u, columns):
    """backend.apply_batched(u, .) on columns (L, K), as an (L, K, 1) view, out of place: the
    expected result of a gate kernel that takes the columns where they sit (with at_targets)."""
    out = np.empty_like(columns)
    backend.apply_batched(u, columns[:, :, None], out[:, :, None])
    return out


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


def seed_paper_matrix(rng, shape, phi, is_complex=True):
    """The seed paper's inputs: uniform(-0.5, 0.5) * exp(phi * normal(0, 1)) per real part."""
    def part():
        return rng.uniform(-0.5, 0.5, shape) * np.exp(phi * rng.standard_normal(shape))
    return part() + 1j * part() if is_complex else part()


def check_gpu_apply_batched_matches_cpu(make_backend, shape, rng):
    """apply_batched of two backends from make_backend() on a seed-paper (L, K, R) view: out of
    place on the CPU, in place on the GPU; the same bits, last_call_info and statistics."""
    import cupy as cp

    u = seed_paper_matrix(rng, (shape[1], shape[1]), 1.0)
    x = seed_paper_matrix(rng, shape, 1.0)
    cpu_backend, gpu_backend = make_backend(), make_backend()
    expected = np.empty_like(x)
    cpu_backend.apply_batched(u, x, expected)
    x_gpu = cp.asarray(x)
    gpu_backend.apply_batched(cp.asarray(u), x_gpu, x_gpu)
    assert same_bits(x_gpu.get(), expected)
    assert gpu_backend.last_call_info == cpu_backend.last_call_info
    assert gpu_backend.statistics() == cpu_backend.statistics()


def gpu_run_matches_cpu(circuit, backend: str) -> dict:
    """{device: Result} of the circuit simulated with `backend` on the CPU and the GPU, after
    checking that both states have the same bits."""
    from qsim import Simulator

    results = {device: Simulator(backend=backend, device=device, progress=False).run(circuit)
               for device in ("cpu", "gpu")}
    assert same_bits(results["gpu"].state_vector(), results["cpu"].state_vector())
    return results


def symmetric_residues(products, plan, parts: int):
    """Integer products (blocks, ...) as crt_products.cu leaves them: int8 residues modulo the
    block's p (block l * parts + g of plan crt.CrtPlan), in [-(p - 1) / 2, (p - 1) / 2]."""
    p = np.repeat(np.asarray(plan.p, np.int64), parts).reshape(-1, *([1] * (products.ndim - 1)))
    r = np.mod(products.astype(np.int64), p)
    return np.ascontiguousarray(np.where(r > (p - 1) // 2, r - p, r).astype(np.int8))
