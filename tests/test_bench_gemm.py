"""scripts/bench/bench_gemm.py's double-double reference: sized to the free memory, on blocks of B's
columns, and refused before any timing when not even one column fits (it used to allocate
all of B's slices after the timed runs: 64 GiB at 16384^3)."""
import tracemalloc

import numpy as np
import pytest

from gemm_backend.doubledouble import matmul_dd, matmul_dd_bytes
from qsim.device import Device

from .helpers import load_script

bench = load_script("scripts/bench/bench_gemm.py")


class _FixedMemoryDevice(Device):
    """The CPU with a chosen amount of free memory."""

    def __init__(self, free: int):
        super().__init__("cpu")
        object.__setattr__(self, "free", free)

    def free_bytes(self) -> int:
        return self.free


def _complex(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("m, k, n, is_complex", [(64, 256, 512, True), (3, 2048, 1024, True), (200, 100, 300, False)])
def test_matmul_dd_bytes_bounds_what_matmul_dd_allocates(m, k, n, is_complex):
    rng = np.random.default_rng(1)
    a, b = (_complex(rng, s) if is_complex else rng.standard_normal(s) for s in ((m, k), (k, n)))
    tracemalloc.start()
    try:
        matmul_dd(a, b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.5 * matmul_dd_bytes(m, k, n, is_complex) < peak <= matmul_dd_bytes(m, k, n, is_complex)


def test_reference_columns_is_the_most_that_fit():
    budget = matmul_dd_bytes(64, 1024, 37)
    assert bench.reference_columns(64, 1024, 4096, budget) == 37
    assert bench.reference_columns(64, 1024, 20, budget) == 20
    assert bench.reference_columns(64, 1024, 4096, matmul_dd_bytes(64, 1024, 1) - 1) == 0


def test_the_reference_in_column_blocks_gives_the_errors_of_one_block():
    rng = np.random.default_rng(2)
    a, b = _complex(rng, (16, 128)), _complex(rng, (128, 96))
    c = (a @ b) * (1 + 1e-12)
    whole = bench.error_against_dd(c, a, b, _FixedMemoryDevice(1 << 40))
    blocks = bench.error_against_dd(c, a, b, _FixedMemoryDevice(int(matmul_dd_bytes(16, 128, 7) / bench.MEMORY_FRACTION)))
    assert blocks[1] == whole[1] and blocks[0] == pytest.approx(whole[0], rel=1e-12)
    assert 5e-13 < whole[0] < 2e-12


def test_a_case_whose_reference_cannot_fit_is_refused_before_timing(capsys):
    with pytest.raises(SystemExit, match=r"case square \(16384 x 16384 x 16384\) needs 12.1\d GiB .* but it may take 8.00 GiB"):
        bench.check_reference_fits([("square", 16384, 16384, 16384)], 64, _FixedMemoryDevice(int(8 * 2**30 / 0.95) + 1))
    bench.check_reference_fits([("square", 256, 256, 256)], 64, _FixedMemoryDevice(1 << 30))


def test_main_refuses_before_the_first_timed_run(monkeypatch, capsys):
    monkeypatch.setattr(bench, "resolve_device", lambda name: _FixedMemoryDevice(1 << 20))
    timed = []
    monkeypatch.setattr(bench, "run_case", lambda *args: timed.append(args))
    with pytest.raises(SystemExit, match="needs .* GiB on the cpu"):
        bench.main(["--device", "cpu", "--backends", "cublas", "--shapes", "square", "--sizes", "512"])
    assert timed == [] and capsys.readouterr().out == ""
