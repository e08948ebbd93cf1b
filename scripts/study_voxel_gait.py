"""How the voxel tripod's pivot gait walks: advance and yaw per cycle against its two foot-path
amplitudes, forward and reversed, and the time-step check.

For each (clearance c, rear narrowing n) and each direction the gait runs for --cycles cycles in
Drake (drakebots.voxel.simulation); the last cycle's advance and yaw are reported (the
first carries the start-up transient). n = 0 switches the pivot off (the swing foot's lift alone
still yaws the body a little); c is what lifts the feet. The time-step check repeats the default
gait at half the step.

Usage:
  python scripts/study_voxel_gait.py     # runs/voxel_gait/{study.json,table.txt,study.png}
  python scripts/study_voxel_gait.py --clearance 2 4 --narrow 0 8 --cycles 2
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from drakebots.robots import GetRobot
from drakebots.voxel.simulation import (
    DistancePerCycle,
    SimulateVoxelGait,
    VoxelGaitConfig,
    YawPerCycle,
)


def Run(gait: str, clearance_mm: float, narrow_mm: float, time_step: float, cycles: int) -> dict:
    config = VoxelGaitConfig(
        gait=gait, clearance=clearance_mm * 1e-3, narrow=narrow_mm * 1e-3, time_step=time_step
    )
    config.duration = cycles * config.cycle_duration
    start = time.process_time()
    log = SimulateVoxelGait(GetRobot("voxel_tripod"), config, progress=False)
    advance = DistancePerCycle(log, config.cycle_duration)
    yaw = np.degrees(YawPerCycle(log, config.cycle_duration))
    return {
        "gait": gait,
        "clearance_mm": clearance_mm,
        "narrow_mm": narrow_mm,
        "time_step_s": time_step,
        "advance_per_cycle_mm": (1e3 * advance).tolist(),
        "yaw_per_cycle_deg": yaw.tolist(),
        "last_cycle_advance_mm": float(1e3 * advance[-1]),
        "last_cycle_yaw_deg": float(yaw[-1]),
        "max_body_yaw_deg": float(np.degrees(np.abs(log.extra["yaw"]).max())),
        "cpu_s": time.process_time() - start,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clearance", type=float, nargs="+", default=[2.0, 4.0], help="mm")
    parser.add_argument("--narrow", type=float, nargs="+", default=[0.0, 8.0], help="mm")
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--out", default="runs/voxel_gait")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cases = [
        (gait, c, n, 1e-3)
        for c in args.clearance
        for n in args.narrow
        for gait in ("tripod", "tripod_reverse")
    ]
    cases += [("tripod", 4.0, 8.0, 5e-4)]
    rows = []
    for k, case in enumerate(cases, 1):
        row = Run(*case, cycles=args.cycles if case[3] == 1e-3 else 1)
        rows.append(row)
        print(
            f"[{k}/{len(cases)}] {row['gait']:<15} c {row['clearance_mm']:4.1f} mm "
            f"n {row['narrow_mm']:4.1f} mm dt {1e3 * row['time_step_s']:.2g} ms: advance "
            + " ".join(f"{v:+6.2f}" for v in row["advance_per_cycle_mm"])
            + " mm/cycle, yaw "
            + " ".join(f"{v:+6.3f}" for v in row["yaw_per_cycle_deg"])
            + f" deg/cycle ({row['cpu_s']:.0f} s CPU)",
            flush=True,
        )
    (out / "study.json").write_text(json.dumps(rows, indent=1))
    lines = [
        "gait            c(mm) n(mm) dt(ms)  advance per cycle (mm)      yaw per cycle (deg)",
    ]
    for row in rows:
        lines.append(
            f"{row['gait']:<15} {row['clearance_mm']:5.1f} {row['narrow_mm']:5.1f} "
            f"{1e3 * row['time_step_s']:6.2g}  "
            + " ".join(f"{v:+6.2f}" for v in row["advance_per_cycle_mm"]).ljust(27)
            + " ".join(f"{v:+6.3f}" for v in row["yaw_per_cycle_deg"])
        )
    (out / "table.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(7, 4))
    grid = [r for r in rows if r["time_step_s"] == 1e-3]
    labels = sorted({(r["clearance_mm"], r["narrow_mm"]) for r in grid})
    x = np.arange(len(labels))
    for offset, gait, colour in ((-0.2, "tripod", "C0"), (0.2, "tripod_reverse", "C3")):
        values = [
            next(
                r["last_cycle_advance_mm"]
                for r in grid
                if r["gait"] == gait and key == (r["clearance_mm"], r["narrow_mm"])
            )
            for key in labels
        ]
        ax.bar(x + offset, values, 0.4, color=colour, label=gait)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(x, [f"c {c:g} mm\nn {n:g} mm" for c, n in labels])
    ax.set_ylabel("advance in the last cycle (mm)")
    ax.set_title("voxel tripod pivot gait: advance per 2 s cycle (Drake, SAP 1 ms)")
    ax.legend()
    figure.tight_layout()
    figure.savefig(out / "study.png", dpi=110)
    print(f"wrote {out}/study.json, table.txt, study.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
