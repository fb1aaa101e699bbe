"""Memory of every rank, planned before anything is allocated.

Each rank adds up what it will hold at the worst moment of the run and measures what its
device has free; the ranks compare notes (one collective), and when any falls short they all
raise the same error naming each short GPU and by how much, so no rank is left waiting for a
peer that gave up.
"""
from dataclasses import dataclass

from gemm_backend.arrays import cupy_module

from ..errors import SimulationError

GIB = float(1 << 30)


@dataclass(frozen=True)
class RankNeeds:
    """Bytes one rank needs. slice_bytes: its share of the state; transpose_bytes: the chunk of a
    transposed copy that gates on non-contiguous bits without an in-place kernel take
    (qsim.apply), else 0; workspace_bytes: the backend's; exchange_bytes:
    the two exchange buffers; reference_bytes: the double-double pair and its chunk copies
    (0 without a reference), held after the run beside the final slice."""

    slice_bytes: int
    transpose_bytes: int
    workspace_bytes: int
    exchange_bytes: int
    reference_bytes: int = 0

    def run_bytes(self, spare: bool) -> int:
        copies = 1 + spare
        return copies * self.slice_bytes + self.transpose_bytes + self.workspace_bytes + self.exchange_bytes

    def reference_phase_bytes(self) -> int:
        if not self.reference_bytes:
            return 0
        return self.slice_bytes + self.reference_bytes + self.exchange_bytes

    def total(self, spare: bool) -> int:
        return max(self.run_bytes(spare), self.reference_phase_bytes())

    def describe(self, spare: bool) -> str:
        parts = [f"slice {self.slice_bytes / GIB:.2f} GiB"]
        if self.transpose_bytes:
            parts.append(f"transposed copy {self.transpose_bytes / GIB:.2f} GiB for non-contiguous gates")
        if spare:
            parts.append("a second slice buffer")
        parts.append(f"workspace {self.workspace_bytes / GIB:.2f} GiB")
        if self.exchange_bytes:
            parts.append(f"exchange buffers {self.exchange_bytes / GIB:.2f} GiB")
        if self.reference_bytes:
            parts.append(f"then the dd reference {self.reference_bytes / GIB:.2f} GiB beside the slice")
        return ", ".join(parts)


def device_label(comm, device) -> str:
    """'GPU 2 (rank 2)', or 'rank 1 (cpu)' for simulated ranks on the host."""
    if device.on_gpu:
        return f"GPU {cupy_module().cuda.Device().id} (rank {comm.rank})"
    return f"rank {comm.rank} ({device.kind})"


def plan_memory(comm, device, needs: RankNeeds, out_of_place, memory_fraction: float, wants_spare: bool) -> dict:
    """Check every rank's needs against its free memory (a collective call).

    out_of_place: "auto" (a second slice buffer when wants_spare and it fits on every rank),
    True (required) or False. Ranks sharing a device (simulated) split its free memory.
    Returns {"spare_buffer", "planned_bytes", "available_bytes" (the least over the ranks),
    "ranks": [per-rank dicts]}.
    Raises SimulationError on every rank when any rank falls short.
    """
    available = int(device.free_bytes() * memory_fraction / comm.ranks_per_device)
    label = device_label(comm, device)
    notes = comm.allgather_object((label, available))
    fits_spare_everywhere = all(needs.total(True) <= room for _, room in notes)
    spare = bool(out_of_place is True or (out_of_place == "auto" and wants_spare and fits_spare_everywhere))
    needed = needs.total(spare)
    short = [(name, room) for name, room in notes if needed > room]
    if short:
        details = "; ".join(f"{name} has {room / GIB:.2f} GiB, short by {(needed - room) / GIB:.2f} GiB"
                            for name, room in short)
        hint = ("use out_of_place='auto'" if out_of_place is True and needs.total(False) <= min(r for _, r in notes)
                else "use more GPUs, fewer qubits or a smaller workspace")
        raise SimulationError(
            f"each rank needs {needed / GIB:.2f} GiB ({needs.describe(spare)}), but {details}; {hint}")
    # the smallest room over the ranks: the same figure on every rank (each measured its own)
    return {"spare_buffer": spare, "planned_bytes": needed, "available_bytes": min(room for _, room in notes),
            "ranks": [{"device": name, "available_bytes": room} for name, room in notes]}
