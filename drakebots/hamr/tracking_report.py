"""Figures of merit, plots and the replay of a closed-loop tracking run (drakebots.hamr.tracking).

Used by the Track workflow (drakebots.hamr.workflows, `drakebots track`): the plan it follows is
an OptimizeGait results folder (`LoadPlan`), the run is a `TrackingRun` (or anything with its
arrays), and the figures compare the two (distance per cycle against the plan, Fig. 7a; slip,
Eq. 23; leg tracking and estimation errors).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from drakebots.errors import InputError

WITHIN = 0.30  # the target: tracked velocity within 30 % of the plan
LEGS = ("FL", "RL", "FR", "RR")
LOG_ARRAYS = (
    "times",
    "positions",
    "velocities",
    "voltages",
    "legs_true",
    "legs_estimated",
    "legs_desired",
    "feet_world",
    "contact",
    "loop_residual",
)
"""The arrays of log.npz (the fields of a TrackingRun)."""


def LoadPlan(folder: str | Path) -> tuple[dict, dict]:
    """(summary, arrays) of an optimize hamr-gait results folder; InputError naming what is
    missing (the message starts with "plan FOLDER:")."""
    path = Path(folder)
    if not path.is_dir():
        raise InputError(f"plan {folder}: no such results folder")
    summary_path, solution_path = path / "summary.json", path / "solution.npz"
    for p in (summary_path, solution_path):
        if not p.is_file():
            raise InputError(f"plan {folder}: {p.name} is missing (not an optimize results folder)")
    from drakebots.results import ReadJson, ReadNpz

    summary = ReadJson(summary_path, what=f"plan {folder}:")
    if summary.get("problem") != "hamr-gait":
        raise InputError(
            f"plan {folder}: track follows periodic gaits; this folder holds "
            f"{summary.get('problem')!r}"
        )
    arrays = ReadNpz(solution_path, what=f"plan {folder}:", required=("times", "q"))
    return summary, arrays


def TrackingFigures(run, plan, summary, config) -> dict:
    """Realized distance per cycle, slip, tracking and estimation errors.

    Args:
        run: a TrackingRun; plan: the plan's arrays (solution.npz); summary: the plan's
            summary.json; config: the TrackingConfig of the run.
    """
    from drakebots.analysis.locomotion import HeadingDisplacements, NormalizedSlip

    period = float(plan["times"][-1])
    cycle_starts = np.arange(config.cycles + 1) * period
    edges, edges_y, edges_yaw = (
        np.interp(cycle_starts, run.times, run.positions[:, i]) for i in (0, 1, 3)
    )
    per_cycle = np.diff(edges)
    steady = per_cycle[2:] if len(per_cycle) > 2 else per_cycle[1:]
    # Along the heading: the robot may turn (yaw is fed back only when steering), which world x
    # undercounts.
    along = HeadingDisplacements(edges, edges_y, edges_yaw)
    along_steady = along[2:] if len(along) > 2 else along[1:]
    planned = float(summary.get("velocity_mm_per_cycle", plan["q"][-1, 0] - plan["q"][0, 0]))
    realized = float(np.mean(steady)) if len(steady) else float("nan")
    start = np.searchsorted(run.times, 2 * period if config.cycles > 2 else period)
    tracked_slip = NormalizedSlip(run.positions[start:, 0], run.feet_world[start:, :, 0])
    errors = run.legs_desired - run.legs_true
    estimate = run.legs_estimated - run.legs_true
    late = run.times >= period
    ratio = realized / planned if planned else float("nan")
    return {
        "planned_velocity_mm_per_cycle": planned,
        "velocity_mm_per_cycle": realized,
        "velocity_std_mm_per_cycle": float(np.std(steady)) if len(steady) else None,
        "distance_per_cycle_mm": per_cycle.tolist(),
        "heading_velocity_mm_per_cycle": float(np.mean(along_steady)) if len(along) else None,
        "heading_ratio_to_plan": (
            float(np.mean(along_steady)) / planned if planned and len(along) else None
        ),
        "yaw_change_deg": float(np.degrees(run.positions[-1, 3] - run.positions[0, 3])),
        "ratio_to_plan": ratio,
        "within_30_percent": bool(abs(ratio - 1.0) <= WITHIN),
        "planned_slip": summary.get("slip"),
        "slip": tracked_slip,
        "leg_tracking_rms_mm": float(np.sqrt(np.mean(errors[late] ** 2))),
        "estimation_rms_mm": float(np.sqrt(np.mean(estimate[late] ** 2))),
        "estimation_max_mm": float(np.max(np.abs(estimate[late]))),
        "max_loop_residual_mm": float(np.max(run.loop_residual)),
        "max_penetration_mm": float(np.max(run.contact[:, 0])),
        "period_ms": period,
        "simulated_ms": float(run.times[-1]),
        "wall_time_s": run.wall_time,
        "max_roll_pitch_deg": float(np.degrees(np.max(np.abs(run.positions[:, [4, 5]])))),
    }


def TrackingFailure(run, figures) -> str | None:
    """None if the run reached its goal (finite states, within 30 % of the planned speed), or
    why not."""
    if not np.all(np.isfinite(run.positions)):
        return "the simulation produced NaN or infinite states"
    if not figures["within_30_percent"]:
        return (
            f"realized {figures['velocity_mm_per_cycle']:.2f} mm/cycle is not within "
            f"{WITHIN:.0%} of the planned {figures['planned_velocity_mm_per_cycle']:.2f} mm/cycle"
        )
    return None


def TrackingPlots(run, plan, figures, cycles: int) -> dict:
    """cycles.png, feet.png, legs.png, body.png and voltages.png of a run against its plan."""
    from drakebots.visualization.trajopt_plots import (
        PlotBodyPose,
        PlotFeetInBodyFrame,
        PlotInputs,
        PlotLegHeights,
    )

    legs = list(LEGS)
    period = figures["period_ms"]
    plots = {"cycles.png": PlotCycles(figures)}
    late = run.times >= 2 * period
    heights = run.feet_world[:, :, 2]
    touching = heights <= 2e-3
    plots["feet.png"] = PlotFeetInBodyFrame(
        FeetInBody(run)[late],
        touching[late],
        legs,
        reference=plan["feet_body"],
        title="tracked gait: feet in the body frame (grey: plan)",
    )
    # Strides 3-4 (after the ramp), or the last two of a shorter run.
    first = min(2, max(0, cycles - 2))
    window = (run.times >= first * period) & (run.times <= (first + 2) * period)
    strides = f"strides {first + 1}-{first + 2}"
    # The plan repeated over both strides of the window.
    plan_times = np.concatenate([plan["times"] + (first + j) * period for j in (0, 1)])
    plan_heights = np.vstack([plan["foot_heights"]] * 2)
    plots["legs.png"] = PlotLegHeights(
        run.times[window],
        heights[window],
        legs,
        in_contact=touching[window],
        reference=(plan_times, plan_heights),
        title=f"tracked gait: leg heights ({strides})",
    )
    rpy = run.positions[:, [5, 4, 3]]
    plots["body.png"] = PlotBodyPose(
        run.times, run.positions[:, :3], rpy, title="tracked gait: body pose"
    )
    names = [f"{leg}_{kind}" for leg in legs for kind in ("swing", "lift")]
    plots["voltages.png"] = PlotInputs(
        run.times[window],
        run.voltages[window][:-1],
        names,
        bounds=(0, 225),
        title=f"tracked gait: applied voltages ({strides})",
    )
    return plots


def FeetInBody(run) -> np.ndarray:
    """(T, 4, 3) feet in the chassis frame, mm."""
    from pydrake.math import RollPitchYaw

    from drakebots.analysis.locomotion import FeetInBodyFrame

    R = np.array(
        [RollPitchYaw(q[5], q[4], q[3]).ToRotationMatrix().matrix() for q in run.positions]
    )
    # The chassis frame origin is the base joint chain's end (x, y, z).
    return FeetInBodyFrame(run.positions[:, :3], R, run.feet_world)


def PlotCycles(figures):
    """Distance per stride against the plan (Fig. 7a)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    per_cycle = figures["distance_per_cycle_mm"]
    ax.bar(np.arange(1, len(per_cycle) + 1), per_cycle, color="C0", label="tracked (Drake SAP)")
    ax.axhline(figures["planned_velocity_mm_per_cycle"], color="C1", lw=2, label="plan")
    ax.axhspan(
        0.7 * figures["planned_velocity_mm_per_cycle"],
        1.3 * figures["planned_velocity_mm_per_cycle"],
        color="C1",
        alpha=0.12,
        label="plan +-30 %",
    )
    ax.set_xlabel("stride (the first ramps up)")
    ax.set_ylabel("distance per stride (mm)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title(
        f"tracked {figures['velocity_mm_per_cycle']:.2f} mm/cycle vs planned "
        f"{figures['planned_velocity_mm_per_cycle']:.2f}"
    )
    fig.tight_layout()
    return fig


def TrackingReplay(run) -> str:
    """replay.html: the run in slow motion, 100 ms of robot time per second."""
    from drakebots.hamr.replay import HamrReplayDecorator
    from drakebots.robots import GetRobot
    from drakebots.visualization.replay import ReplayHtml

    return ReplayHtml(
        GetRobot("hamr_vi"), run.times / 100.0, run.positions, decorator=HamrReplayDecorator()
    )
