"""Track an optimized HAMR-VI gait in simulation with the paper's estimator and PD controller.

The plan from `drakebots optimize hamr-gait` is repeated stride after stride: its drive voltages
are the feed-forward and its leg positions (body frame) the reference of the joint-space PD law
(hamr-contact-implicit.txt, Eq. 22), fed by the low-latency leg-position estimator (Eqs. 19-21):
motion capture at 500 Hz delivered 11 ms late, corrected by integrating the leg velocities from
the piezoelectric encoders' currents through the transmission look-up table H(x, z). The robot
is Drake's SAP model of HAMR-VI (compliant point contact, ball-constrained loops; a different
integrator and contact model from the plan's transcription), started at rest at the home pose
with a one-stride ramp, as the paper's experiments.

The results folder holds summary.json (planned and realized distance per cycle, their ratio,
slip (Eq. 23), tracking and estimation errors), log.npz, replay.html and plots: cycles.png
(distance per cycle against the plan, Fig. 7a), legs.png (leg heights, Fig. 7b), feet.png (feet
in the body frame against the plan, Fig. 7c), body.png (Fig. 8), voltages.png.

Examples:
  drakebots track runs/gait10 --cycles 10 --out runs/gait10_tracked
  drakebots track runs/gait10 --cycles 4 --no-estimator --out runs/gait10_ideal
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from drakebots.cli import AddOutputArguments, AddVerb
from drakebots.errors import InputError

WITHIN = 0.30  # the target: tracked velocity within 30 % of the plan


def register(subparsers):
    parser = AddVerb(subparsers, "track", __doc__)
    parser.add_argument("plan", help="results folder of `drakebots optimize hamr-gait`")
    parser.add_argument("--cycles", type=int, default=10, help="strides to run (>= 2)")
    parser.add_argument("--time-step", type=float, default=0.1, help="SAP plant step, ms")
    parser.add_argument("--kp-swing", type=float, default=None, help="V/mm (Eq. 22)")
    parser.add_argument("--kp-lift", type=float, default=None, help="V/mm (Eq. 22)")
    parser.add_argument("--kd-swing", type=float, default=None, help="V*ms/mm (Eq. 22)")
    parser.add_argument("--kd-lift", type=float, default=None, help="V*ms/mm (Eq. 22)")
    parser.add_argument("--kf", type=float, default=None, help="feed-forward gain K_f (0.9..1.1)")
    parser.add_argument(
        "--no-estimator", action="store_true", help="feed the true leg positions (ideal sensor)"
    )
    parser.add_argument(
        "--voltage-hold",
        choices=("linear", "zero"),
        default="linear",
        help="play the plan's voltages linearly through the interval midpoints (default) or "
        "held over each interval",
    )
    parser.add_argument(
        "--current-noise",
        type=float,
        default=0.0,
        help="noise on the mechanical currents (current units)",
    )
    parser.add_argument(
        "--table-samples",
        type=int,
        default=21,
        help="H(x, z) samples per direction (the paper: 21)",
    )
    parser.add_argument(
        "--k-heading",
        type=float,
        default=None,
        help="ours, not the paper's: steer by stride length, stride fraction per rad of heading "
        "error (0: off, Eq. 22 alone)",
    )
    parser.add_argument(
        "--k-heading-integral",
        type=float,
        default=None,
        help="integral gain on the heading error, stride fraction per rad*ms",
    )
    parser.add_argument(
        "--k-lateral",
        type=float,
        default=None,
        help="heading set-point per mm of lateral offset from the start line, rad/mm",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def LoadPlan(folder: str) -> tuple[dict, dict]:
    """(summary, arrays) of an optimize results folder; InputError naming what is missing."""
    path = Path(folder)
    if not path.is_dir():
        raise InputError(f"plan {folder}: no such results folder")
    summary_path, solution_path = path / "summary.json", path / "solution.npz"
    for p in (summary_path, solution_path):
        if not p.is_file():
            raise InputError(f"plan {folder}: {p.name} is missing (not an optimize results folder)")
    summary = json.loads(summary_path.read_text())
    if summary.get("problem") != "hamr-gait":
        raise InputError(
            f"plan {folder}: track follows periodic gaits; this folder holds "
            f"{summary.get('problem')!r}"
        )
    with np.load(solution_path) as data:
        arrays = {name: data[name] for name in data.files}
    return summary, arrays


def Run(args) -> int:
    from drakebots.results import CheckOutputFolder, DefaultOutput

    summary, plan = LoadPlan(args.plan)
    if args.cycles < 2:
        raise InputError(f"--cycles {args.cycles}: need at least 2 (the first ramps up)")
    if not args.time_step > 0:
        raise InputError(f"--time-step {args.time_step}: must be > 0 ms")
    if args.table_samples < 3:
        raise InputError(f"--table-samples {args.table_samples}: need at least 3")
    out = Path(args.out) if args.out else DefaultOutput("track", Path(args.plan).name)
    CheckOutputFolder(out, args.force)

    from drakebots.hamr.tracking import SimulateTracking, TrackingConfig, TrackingGains

    gains = TrackingGains()
    for name in ("kp_swing", "kp_lift", "kd_swing", "kd_lift"):
        value = getattr(args, name)
        if value is not None:
            setattr(gains, name, value)
    if args.kf is not None:
        gains.kf_swing = gains.kf_lift = args.kf
    for name in ("k_heading", "k_heading_integral", "k_lateral"):
        value = getattr(args, name)
        if value is not None:
            if not (np.isfinite(value) and value >= 0.0):
                raise InputError(f"--{name.replace('_', '-')} {value}: must be >= 0")
            setattr(gains, name, value)
    config = TrackingConfig(
        cycles=args.cycles,
        time_step=args.time_step,
        table_samples=args.table_samples,
        current_noise=args.current_noise,
        use_estimator=not args.no_estimator,
        voltage_hold=args.voltage_hold,
        gains=gains,
    )
    surface = str(plan["surface"])
    times = plan["times"]
    legs = plan["feet_body"][:, :, [0, 2]].reshape(len(times), -1)
    print(
        f"tracking {args.plan} ({summary.get('frequency_hz')} Hz, {surface}) for "
        f"{args.cycles} strides",
        file=sys.stderr,
    )
    run = SimulateTracking(times, plan["u"], legs, surface, config, progress=not args.quiet)
    figures = TrackingFigures(run, plan, summary, config)
    return _Write(args, out, run, plan, summary, config, figures)


def TrackingFigures(run, plan, summary, config) -> dict:
    """Realized distance per cycle, slip, tracking and estimation errors."""
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


def _Write(args, out, run, plan, summary, config, figures) -> int:
    import dataclasses

    from drakebots.cli import Summary
    from drakebots.results import ResultsFolder
    from drakebots.visualization.trajopt_plots import (
        PlotBodyPose,
        PlotFeetInBodyFrame,
        PlotInputs,
        PlotLegHeights,
    )

    failure = None
    if not np.all(np.isfinite(run.positions)):
        failure = "the simulation produced NaN or infinite states"
    elif not figures["within_30_percent"]:
        failure = (
            f"realized {figures['velocity_mm_per_cycle']:.2f} mm/cycle is not within "
            f"{WITHIN:.0%} of the planned {figures['planned_velocity_mm_per_cycle']:.2f} mm/cycle"
        )
    inputs = {key: value for key, value in vars(args).items() if key != "func"}
    result = Summary(
        "track",
        inputs,
        robot="hamr_vi",
        plan=str(args.plan),
        surface=str(plan["surface"]),
        frequency_hz=summary.get("frequency_hz"),
        success=failure is None,
        reason=failure,
        config=dataclasses.asdict(config),
        **figures,
    )
    legs = ["FL", "RL", "FR", "RR"]
    period = figures["period_ms"]
    with ResultsFolder(out, force=args.force) as results:
        results.SaveNpz(
            "log.npz",
            {
                "times": run.times,
                "positions": run.positions,
                "velocities": run.velocities,
                "voltages": run.voltages,
                "legs_true": run.legs_true,
                "legs_estimated": run.legs_estimated,
                "legs_desired": run.legs_desired,
                "feet_world": run.feet_world,
                "contact": run.contact,
                "loop_residual": run.loop_residual,
            },
        )
        results.SaveFigure("cycles.png", _PlotCycles(figures))
        late = run.times >= 2 * period
        feet_body = _FeetBody(run)
        heights = run.feet_world[:, :, 2]
        touching = heights <= 2e-3
        results.SaveFigure(
            "feet.png",
            PlotFeetInBodyFrame(
                feet_body[late],
                touching[late],
                legs,
                reference=plan["feet_body"],
                title="tracked gait: feet in the body frame (grey: plan)",
            ),
        )
        # Strides 3-4 (after the ramp), or the last two of a shorter run.
        first = min(2, max(0, args.cycles - 2))
        window = (run.times >= first * period) & (run.times <= (first + 2) * period)
        strides = f"strides {first + 1}-{first + 2}"
        # The plan repeated over both strides of the window.
        plan_times = np.concatenate([plan["times"] + (first + j) * period for j in (0, 1)])
        plan_heights = np.vstack([plan["foot_heights"]] * 2)
        results.SaveFigure(
            "legs.png",
            PlotLegHeights(
                run.times[window],
                heights[window],
                legs,
                in_contact=touching[window],
                reference=(plan_times, plan_heights),
                title=f"tracked gait: leg heights ({strides})",
            ),
        )
        rpy = run.positions[:, [5, 4, 3]]
        results.SaveFigure(
            "body.png",
            PlotBodyPose(run.times, run.positions[:, :3], rpy, title="tracked gait: body pose"),
        )
        names = [f"{leg}_{kind}" for leg in legs for kind in ("swing", "lift")]
        results.SaveFigure(
            "voltages.png",
            PlotInputs(
                run.times[window],
                run.voltages[window][:-1],
                names,
                bounds=(0, 225),
                title=f"tracked gait: applied voltages ({strides})",
            ),
        )
        results.WriteText("replay.html", _Replay(run))
        results.WriteJson("summary.json", result)
        results.Commit()
    print(f"results: {results.final}")
    planned_slip = figures["planned_slip"]
    planned_slip = float("nan") if planned_slip is None else planned_slip
    spread = figures["velocity_std_mm_per_cycle"] or 0.0
    print(
        f"  planned {figures['planned_velocity_mm_per_cycle']:.2f} mm/cycle, tracked "
        f"{figures['velocity_mm_per_cycle']:.2f} +- {spread:.2f} mm/cycle (ratio "
        f"{figures['ratio_to_plan']:.2f}); slip {figures['slip']:.3f} (plan {planned_slip:.3f})"
    )
    print(
        f"  leg tracking RMS {figures['leg_tracking_rms_mm']:.3f} mm, estimator RMS "
        f"{figures['estimation_rms_mm']:.3f} mm"
    )
    if failure:
        print(f"  did not reach its goal: {failure}", file=sys.stderr)
        return 1
    return 0


def _FeetBody(run) -> np.ndarray:
    from pydrake.math import RollPitchYaw

    from drakebots.analysis.locomotion import FeetInBodyFrame

    R = np.array(
        [RollPitchYaw(q[5], q[4], q[3]).ToRotationMatrix().matrix() for q in run.positions]
    )
    # The chassis frame origin is the base joint chain's end (x, y, z).
    return FeetInBodyFrame(run.positions[:, :3], R, run.feet_world)


def _PlotCycles(figures):
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


def _Replay(run) -> str:
    from drakebots.hamr.replay import HamrReplayDecorator
    from drakebots.robots import GetRobot
    from drakebots.visualization.replay import ReplayHtml

    # Slow motion: 100 ms of robot time per second of replay.
    return ReplayHtml(
        GetRobot("hamr_vi"), run.times / 100.0, run.positions, decorator=HamrReplayDecorator()
    )
