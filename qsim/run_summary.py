"""The text `qsim run` prints for a run report: times against the memory floor, throughput, the
backend's plans and, for trajectories, their spread."""
from .fusion import describe_fusion
from .result import splits_summary


def run_summary(report: dict) -> str:
    """The lines `qsim run` prints for a run report (qsim.result's report dict)."""
    gate_time = report["gate_time_s"]
    amp = report["amplitude_0"]
    fusion = report.get("circuit", {}).get("fusion")
    lines = [
        f"qubits          {report['qubits']}",
        f"gates           {report['gates']}" + (f" ({describe_fusion(fusion)})" if fusion else ""),
        f"backend         {report['backend']}" + (f" ({report['implementation']})" if report.get("implementation") else ""),
        f"device          {report['device']}",
        f"total time      {report['total_time_s']:.4f} s",
        f"per gate        mean {gate_time['mean'] * 1e3:.3f} ms, median {gate_time['median'] * 1e3:.3f} ms",
        f"throughput      {_flop_rate(report['effective_tflops'] * 1e12)} (8 * 2^N * 2^d per gate)",
        f"peak memory     {report['peak_memory_bytes'] / (1 << 30):.3f} GiB ({report['memory_measure']})",
        f"<0...0|psi>     {amp['re']:+.16e} {amp['im']:+.16e}i",
        f"norm            {report['norm']:.16f}",
    ]
    if report.get("x_floor") is not None:
        lines.append(f"memory floor    {report['floor_time_s']:.4f} s for all gates ({report['x_floor']:.2f}x: "
                     f"read + write the state once per gate at {report['copy_bandwidth_Bps'] / 1e12:.2f} TB/s)")
    for path, stats in report.get("time_by_path", {}).items():
        lines.append(f"  path {path:<9} {stats['gates']} gates, {stats['total_s']:.4f} s, "
                     f"median {stats['median_s'] * 1e3:.3f} ms")
    if "distributed" in report:
        split = report["distributed"]
        lines.append(f"ranks           {split['ranks']} ({split['global_qubits']} global qubits), {split['exchanges']} "
                     f"exchanges of {split['qubit_swaps']} qubits")
        lines.append(f"per gate split  compute {split['compute_time_per_gate_s'] * 1e3:.3f} ms, exchange "
                     f"{split['exchange_time_per_gate_s'] * 1e3:.3f} ms")
    splits = splits_summary(report["per_gate"])
    if splits:
        lines.append(f"INT8 splits     min {splits['min']}, max {splits['max']}, mean {splits['mean']:.2f}"
                     f" (state/gate digits, largest p + q: {_plans(report['per_gate'])})")
    moduli = sorted(g["moduli"] for g in report["per_gate"] if g.get("scheme") == "ozaki2")
    if moduli:
        lines.append(f"Ozaki-II gates  {len(moduli)}, moduli min {moduli[0]}, max {moduli[-1]}")
    fallbacks = sum(1 for g in report["per_gate"] if g.get("fallback"))
    if fallbacks:
        lines.append(f"fallbacks       {fallbacks} gates used native ZGEMM (no s <= 18 met rho)")
    if "accuracy" in report:
        lines.append("accuracy against the double-double reference:")
        for key, value in report["accuracy"].items():
            lines.append(f"  {key:<26} {value:.3e}" if isinstance(value, float) else f"  {key:<26} {value}")
    if "trajectories" in report:
        lines += _trajectory_lines(report["trajectories"])
    if "counts" in report:
        top = sorted(report["counts"].items(), key=lambda kv: -kv[1])[:8]
        lines.append("counts (top 8)  " + ", ".join(f"{b}: {c}" for b, c in top))
    return "\n".join(lines)


def _flop_rate(flops_per_s: float) -> str:
    """Three significant digits in the unit that suits the value (a small CPU run is MFLOP/s, not
    0.000 TFLOP/s)."""
    if not flops_per_s > 0:
        return "- (no timed gate)"
    for scale, unit in ((1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s"), (1e3, "kFLOP/s")):
        if flops_per_s >= scale:
            return f"{flops_per_s / scale:.3g} {unit}"
    return f"{flops_per_s:.3g} FLOP/s"


def _plans(per_gate: list) -> str:
    counts = {}
    for info in per_gate:
        if "pairs" in info:
            key = f"{info.get('splits_state')}/{info.get('splits_gate')}/{info['top']}"
            counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{plan} x{n}" for plan, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _trajectory_lines(summary: dict) -> list:
    time_s, measure_s = summary["time_s"], summary["measure_time_s"]
    norms = [record["norm"] for record in summary["records"]]
    return [
        f"trajectories    {summary['count']} (seeds derived from --seed {summary['seed']}); the lines above "
        "are the last one's",
        f"per trajectory  mean {time_s['mean']:.4f} s, median {time_s['median']:.4f} s "
        f"(measuring: mean {measure_s['mean']:.4f} s)",
        f"measurements    mean {summary['measurements_mean']:.2f} measure/reset operations per trajectory",
        f"norm            max |norm - 1| over trajectories {max(abs(n - 1) for n in norms):.2e}",
    ]
