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

A robot file's gait or jump (`drakebots optimize gait|jump ROBOT.yaml`) is tracked by the
general whole-body controller instead (drakebots.systems.whole_body: one QP per 2 ms tick,
inverse dynamics with the plan's contact forces, the whole base pose and the joints tracked),
closed loop from the plan's first state on the ground, --cycles times (at least 3), and judged
as `optimize` judges it (summary.json: tracked_* figures; replay.html: the run and the plan as
a ghost). Only --cycles applies to it.

Examples:
  drakebots track runs/gait10 --cycles 10 --out runs/gait10_tracked
  drakebots track runs/walker_gait --cycles 5 --out runs/walker_tracked
  drakebots track runs/gait10 --cycles 4 --no-estimator --out runs/gait10_ideal
"""

from __future__ import annotations

import sys
from pathlib import Path

from drakebots.cli import AddOutputArguments, AddVerb, CommandLine

# Each flag's dest and the TrackConfig field(s) it sets (drakebots.cli._config).
FLAGS = {
    "cycles": "tracking.cycles",
    "time_step": "tracking.time_step",
    "kp_swing": "tracking.gains.kp_swing",
    "kp_lift": "tracking.gains.kp_lift",
    "kd_swing": "tracking.gains.kd_swing",
    "kd_lift": "tracking.gains.kd_lift",
    "kf": ("tracking.gains.kf_swing", "tracking.gains.kf_lift"),
    "voltage_hold": "tracking.voltage_hold",
    "current_noise": "tracking.current_noise",
    "table_samples": "tracking.table_samples",
    "k_heading": "tracking.gains.k_heading",
    "k_heading_integral": "tracking.gains.k_heading_integral",
    "k_lateral": "tracking.gains.k_lateral",
}


def register(subparsers):
    parser = AddVerb(subparsers, "track", __doc__)
    parser.add_argument(
        "plan",
        nargs="?",
        help="results folder of `drakebots optimize hamr-gait` (required unless --config)",
    )
    parser.add_argument("--cycles", type=int, help="strides to run (>= 2; default 10)")
    parser.add_argument("--time-step", type=float, help="SAP plant step, ms (default 0.1)")
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
        help="play the plan's voltages linearly through the interval midpoints (default) or "
        "held over each interval",
    )
    parser.add_argument(
        "--current-noise",
        type=float,
        help="noise on the mechanical currents (current units; default 0)",
    )
    parser.add_argument(
        "--table-samples",
        type=int,
        help="H(x, z) samples per direction (the paper and the default: 21)",
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
    parser.add_argument(
        "--config",
        default=None,
        help="YAML file of a TrackConfig (drakebots.hamr.workflows): `plan:` and `tracking:` "
        "(TrackingConfig: cycles, time_step, gains, ...); the flags override it",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def CheckArgs(args):
    """The TrackConfig of --config and the flags, checked (InputError in the flags' words);
    `drakebots sweep` calls it for every case before any runs."""
    from drakebots.cli._config import ConfigFromArgs, FlagNames
    from drakebots.errors import InputError
    from drakebots.hamr import TrackConfig

    if args.plan is None and not args.config:
        raise InputError("plan: a results folder of `drakebots optimize hamr-gait` is required")
    config = ConfigFromArgs(TrackConfig, args, FLAGS)
    if args.plan is not None:
        config.plan = args.plan
    if args.no_estimator:
        config.tracking.use_estimator = False
    with FlagNames(args, FLAGS):
        config.Check()
    if config.plan:
        from drakebots.hamr.tracking_report import LoadPlan

        LoadPlan(config.plan)  # A missing or corrupt plan is exit 2 before any work.
    return config


def _RunRobotFilePlan(args) -> int:
    """`track` of a robot file's gait or jump (the module docstring)."""
    from drakebots.optimization.legged_track import TrackPlanFolder
    from drakebots.results import CheckOutputFolder, DefaultOutput

    out = Path(args.out) if args.out else DefaultOutput("track", Path(args.plan).name)
    CheckOutputFolder(out, args.force, reads=[args.plan])
    result = TrackPlanFolder(args.plan, cycles=args.cycles)
    final = result.Save(out, force=args.force, command=CommandLine(), reads=[args.plan])
    f = result.figures
    measure = "tracked_distance_per_cycle" if f["problem"] == "gait" else "tracked_apex"
    length = (f.get("units") or {}).get("length", "m")
    print(f"results: {final}")
    print(
        f"  {f['tracked_cycles']} cycle(s): {measure} {f[measure]:.4g} {length}, base error "
        f"{f['tracked_base_error_max']:.3g} {length} (tolerance "
        f"{f['tracked_base_error_tolerance']:.3g} {length}), fell {f['tracked_fell']}, "
        f"{f['tracking_ms_per_tick']:.2f} ms per control tick"
    )
    if not result.success:
        print(f"  did not reach its goal: {result.reason}", file=sys.stderr)
    return 0 if result.success else 1


def Run(args) -> int:
    from drakebots.optimization.legged_track import IsRobotFilePlan

    if args.plan is not None and not args.config and IsRobotFilePlan(args.plan):
        return _RunRobotFilePlan(args)
    return _RunHamrPlan(args)


def _RunHamrPlan(args) -> int:
    from drakebots.cli._progress import CliProgress
    from drakebots.hamr import Track
    from drakebots.results import CheckOutputFolder, DefaultOutput

    config = CheckArgs(args)
    out = Path(args.out) if args.out else DefaultOutput("track", Path(config.plan).name)
    reads = [p for p in (config.plan, args.config) if p]
    CheckOutputFolder(out, args.force, reads=reads)
    progress = CliProgress(bars=False if args.quiet else None)
    result = Track(config, progress=progress)
    progress.Close()
    final = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    _Print(result, final)
    return 0 if result.success else 1


def _Print(result, out) -> None:
    figures = result.figures
    print(f"results: {out}")
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
    if not result.success:
        print(f"  did not reach its goal: {result.reason}", file=sys.stderr)
