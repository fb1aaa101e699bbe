"""How far a simulated state is from the double-double reference.

The metrics (design brief section 2):
- rel_error_re_amp0: |Re psi_0 - Re ref_0| / |Re ref_0|, the seed paper's figure (its Table 3),
  with the difference taken against hi + lo of the reference.
- max_rel_amplitude_error, mean_rel_amplitude_error: |psi_i - ref_i| / |ref_i| over the
  amplitudes whose reference magnitude exceeds threshold_fraction times the RMS amplitude
  ||ref|| / sqrt(2^N) (= 2^(-N/2) for a normalized state); tiny amplitudes are left out
  because their relative error says nothing about the arithmetic. amplitudes_compared says
  how many qualified.
- l2_error: ||psi - ref||_2.
- infidelity: 1 - |<ref|psi>|^2, taken as 1 - |<ref|psi>|^2 / (<ref|ref> <psi|psi>), which is
  the same for unit vectors. Normalizing matters: float64 gate matrices are unitary only to
  ~1e-16, so the exact evolution (the reference) itself drifts from norm 1 by ~1e-15, and the
  plain formula would report that drift even for psi = ref. It is evaluated in a compensated
  form, from d = psi - ref (taken against hi + lo with error-free transforms): every term is
  of order |d|^2, so its error is ~1e-16 of |d|^2 however small that is (1e-28 and below are
  meaningful), with no cancellation against 1.
- relative_norm_error: <psi|psi> / <ref|ref> - 1, the norm drift beyond the reference's, in
  the same compensated form.

Everything runs on psi's device in chunks of CHUNK_AMPLITUDES: an N = 30 state (16 GiB) and
its reference (32 GiB) need only chunk-sized temporaries. The reference may live on the host
while psi is on the GPU (chunks are copied over as needed).
"""
import math

import numpy as np

from gemm_backend.arrays import array_module, to_host
from gemm_backend.doubledouble import two_sum

from .errors import SimulationError

# About 1e-6 of Porter-Thomas distributed amplitudes fall below 1e-3 of the RMS amplitude.
DEFAULT_THRESHOLD_FRACTION = 1e-3
CHUNK_AMPLITUDES = 1 << 22


def accuracy_report(psi, ref_hi, ref_lo, threshold_fraction: float = DEFAULT_THRESHOLD_FRACTION, *,
                    chunk_amplitudes: int = CHUNK_AMPLITUDES, comm=None) -> dict:
    """Accuracy metrics of psi against the reference hi + lo (see the module docstring).

    psi: (2^N,) complex128, numpy or cupy. ref_hi, ref_lo: (2^N,) complex128, numpy or cupy.
    comm: for a state split over ranks (qsim.distributed), this rank's Communicator; psi,
        ref_hi and ref_lo are then this rank's slices, in one physical order with amplitude 0
        first on rank 0, and every rank gets the metrics of the whole state (a collective call).
    Returns a dict of Python numbers: rel_error_re_amp0, max_rel_amplitude_error,
    mean_rel_amplitude_error, amplitudes_compared, amplitude_threshold, threshold_fraction,
    l2_error, infidelity, relative_norm_error. A relative error whose denominator is zero, or
    a max/mean over no amplitudes, is NaN; non-finite amplitudes in psi give NaN metrics.
    """
    _check_inputs(psi, ref_hi, ref_lo, threshold_fraction)
    chunks = _ChunkReader(psi, ref_hi, ref_lo, chunk_amplitudes)
    ranks = 1 if comm is None else comm.world_size
    ref_norm_squared = chunks.reference_norm_squared()
    if comm is not None:
        ref_norm_squared = float(comm.allreduce([ref_norm_squared])[0])
    threshold = threshold_fraction * math.sqrt(ref_norm_squared / (psi.size * ranks))  # fraction x RMS
    totals = _Totals(ref_norm_squared)
    for p, h, lo in chunks:
        totals.add(p, h, lo, threshold)
    amplitude_0_error = _rel_error_re_amp0(psi, ref_hi, ref_lo)
    if comm is not None:
        totals.merge_ranks(comm)
        amplitude_0_error = comm.allgather_object(amplitude_0_error)[0]
    return {
        "rel_error_re_amp0": amplitude_0_error,
        "max_rel_amplitude_error": totals.max_rel if totals.count else math.nan,
        "mean_rel_amplitude_error": totals.sum_rel / totals.count if totals.count else math.nan,
        "amplitudes_compared": totals.count,
        "amplitude_threshold": threshold,
        "threshold_fraction": float(threshold_fraction),
        "l2_error": math.sqrt(totals.squared_error),
        "infidelity": totals.infidelity(),
        "relative_norm_error": totals.relative_norm_error(),
    }


def _check_inputs(psi, ref_hi, ref_lo, threshold_fraction) -> None:
    shapes = {tuple(x.shape) for x in (psi, ref_hi, ref_lo)}
    if len(shapes) != 1 or psi.ndim != 1:
        raise SimulationError(
            f"accuracy_report needs psi, ref_hi and ref_lo as flat arrays of one size, got shapes "
            f"{tuple(psi.shape)}, {tuple(ref_hi.shape)}, {tuple(ref_lo.shape)}"
        )
    if psi.size == 0:
        raise SimulationError("accuracy_report got an empty state")
    if not (math.isfinite(threshold_fraction) and threshold_fraction >= 0):
        raise SimulationError(f"threshold_fraction must be a finite number >= 0, got {threshold_fraction!r}")


class _ChunkReader:
    """Iterates (psi, ref_hi, ref_lo) chunks as float64-complex arrays on psi's device."""

    def __init__(self, psi, ref_hi, ref_lo, chunk_amplitudes: int):
        self.xp = array_module(psi)
        self.arrays = (psi, ref_hi, ref_lo)
        self.step = max(1, int(chunk_amplitudes))

    def _on_device(self, x):
        if self.xp is np:
            return to_host(x)
        return self.xp.asarray(x)

    def _ranges(self):
        size = self.arrays[0].size
        return (slice(start, min(size, start + self.step)) for start in range(0, size, self.step))

    def reference_norm_squared(self) -> float:
        """sum |hi + lo|^2 to float64 accuracy (the lo cross term is a 1e-16 relative correction)."""
        total = 0.0
        for part in self._ranges():
            h, lo = (self._on_device(x[part]) for x in self.arrays[1:])
            total += float((h.real * (h.real + 2.0 * lo.real) + h.imag * (h.imag + 2.0 * lo.imag)).sum())
        return total

    def __iter__(self):
        for part in self._ranges():
            yield tuple(self._on_device(x[part]).astype(self.xp.complex128, copy=False) for x in self.arrays)


class _Totals:
    """Running float64 sums over chunks: with d = psi - ref, <d|d>, <ref|d> and the relative
    amplitude errors. The fidelity is assembled from them (see infidelity)."""

    def __init__(self, ref_norm_squared: float):
        self.ref_norm_squared = ref_norm_squared
        self.max_rel = 0.0
        self.sum_rel = 0.0
        self.count = 0
        self.squared_error = 0.0
        self.ref_dot_difference = 0j

    def add(self, p, h, lo, threshold: float) -> None:
        xp = array_module(p)
        d_re, d_im = _difference(p.real, h.real, lo.real), _difference(p.imag, h.imag, lo.imag)
        distance = xp.hypot(d_re, d_im)
        self.squared_error += float((distance * distance).sum())
        self.ref_dot_difference += complex(float((h.real * d_re + h.imag * d_im).sum()),
                                           float((h.real * d_im - h.imag * d_re).sum()))
        magnitude = xp.abs(h)
        qualified = magnitude > threshold
        count = int(qualified.sum())
        if count:
            relative = distance[qualified] / magnitude[qualified]
            self.max_rel = float(np.maximum(self.max_rel, float(relative.max())))  # keeps a NaN
            self.sum_rel += float(relative.sum())
            self.count += count

    def merge_ranks(self, comm) -> None:
        """Replace the sums of this rank's slice by those of all ranks (a collective call)."""
        d = self.ref_dot_difference
        sums = comm.allreduce([self.sum_rel, self.count, self.squared_error, d.real, d.imag], "sum")
        self.sum_rel, self.squared_error = float(sums[0]), float(sums[2])
        self.count = int(sums[1])
        self.ref_dot_difference = complex(sums[3], sums[4])
        self.max_rel = float(comm.allreduce([self.max_rel], "max")[0])

    def infidelity(self) -> float:
        """1 - |<r|p>|^2 / (<r|r> <p|p>) = (<r|r> <d|d> - |<r|d>|^2) / (<r|r> <p|p>) for p = r + d.

        The right-hand form is an exact identity whose terms are all of order |d|^2, so the
        float64 sums of accurately computed differences resolve it to ~1e-16 relative, where
        evaluating the left-hand form would cancel to 1 and lose everything below ~1e-31 even
        in double-double.
        """
        ref_norm, difference_norm = self.ref_norm_squared, self.squared_error
        numerator = ref_norm * difference_norm - abs(self.ref_dot_difference) ** 2
        return numerator / (ref_norm * self._psi_norm_squared())

    def relative_norm_error(self) -> float:
        """<p|p> / <r|r> - 1 = (2 Re<r|d> + <d|d>) / <r|r>."""
        return (2.0 * self.ref_dot_difference.real + self.squared_error) / self.ref_norm_squared

    def _psi_norm_squared(self) -> float:
        return self.ref_norm_squared + 2.0 * self.ref_dot_difference.real + self.squared_error


def _difference(p, h, lo):
    """p - (h + lo) for float64 arrays, rounded once at the end (two_sum keeps p - h exact)."""
    s, e = two_sum(p, -h)
    return s + (e - lo)


def _rel_error_re_amp0(psi, ref_hi, ref_lo) -> float:
    p0, h0, l0 = (complex(to_host(x[:1])[0]) for x in (psi, ref_hi, ref_lo))
    reference = abs(h0.real + l0.real)
    if reference == 0.0:
        return math.nan
    return abs(float(_difference(np.float64(p0.real), np.float64(h0.real), np.float64(l0.real)))) / reference
