"""Gecko soft walker: the velocity space and the gait pattern generator (Schiller et al. 2020).

velocity-space  one gait cycle at every grid point of the velocity space (q1 in {50, 60, ..., 90}
                deg, q2 in {-0.5, -0.3, ..., 0.5}); the motion per cycle (d_eps, dx, dy), the
                bivariate quadratic of the paper's Eq. 16 fitted to it, the Fig. 7-style plot,
                and the comparison with the paper's experimental fit (Table 3).
navigate        the gait pattern generator (Eqs. 17-22, Algorithm 1) in closed loop: re-plans
                the gait every half cycle from the measured pose and walks the gecko to each
                target in turn (within epsilon = 5 cm), as in the paper's Fig. 12.

Both run the Drake model (--model drake: suction feet as run-time weld constraints, pneumatic
chambers behind the cascaded controller of Fig. 11B, SAP contact) or the authors' geometric
quasi-static model (--model geometric, over a hundred times faster).

Examples:
  drakebots gecko velocity-space --out runs/gecko_vspace
  drakebots gecko velocity-space --model geometric --out runs/gecko_vspace_geo
  drakebots gecko navigate --targets "0.4,0.1; 0.6,-0.3; 0.2,-0.5; 0,0" --out runs/gecko_course
  drakebots gecko navigate --course course.yaml --fit runs/gecko_vspace --out runs/gecko_course2
  drakebots gecko navigate --course gecko_slalom.yaml --model geometric --out runs/slalom

A course file (typed YAML; an unknown key is an error naming it and the file):
  name: slalom
  start: [0.0, 0.0, 0.0]          # x [m], y [m], heading [deg]
  targets: [{x: 0.35, y: 0.15}, {x: 0.7, y: -0.1}, {x: 1.0, y: 0.15}]
  obstacles: [{x: 0.5, y: 0.05, radius: 0.06}]
  epsilon: 0.05                   # target radius, m
  max_steps_per_target: 40        # step budget (half cycles) per target

Results: summary.json (steps per target, path length, final error, times, decision timing),
course.png (Fig. 12), distance_function.png (Fig. 10), navigation.npz, replay.html (suction feet
coloured by fixation, targets); velocity-space writes fit.json (read by --fit),
velocity_space.png (Fig. 7), fit_comparison.png and velocity_space.npz.
Exit 1 when a target is not reached within its step budget (the closest approach is recorded).
"""

import dataclasses
import math
import sys
from pathlib import Path

from drakebots.cli import AddOutputArguments, AddVerb, PositiveFloat
from drakebots.errors import InputError

SCENARIOS_DIRECTORY = Path(__file__).resolve().parents[1] / "scenarios"
PAPER_COURSE = "0.4,0.1; 0.6,-0.3; 0.2,-0.5; 0,0"


@dataclasses.dataclass
class CourseTarget:
    """A waypoint, m."""

    x: float = 0.0
    y: float = 0.0


@dataclasses.dataclass
class CourseObstacle:
    """A round obstacle, m (drawn; the track's clearance to it is reported)."""

    x: float = 0.0
    y: float = 0.0
    radius: float = 0.05


@dataclasses.dataclass
class GeckoCourse:
    """A navigation course for `drakebots gecko navigate --course`."""

    # Name of the course (titles).
    name: str = ""
    # Start pose of the torso midpoint: x [m], y [m], heading [deg].
    start: list[float] = dataclasses.field(default_factory=lambda: [0.0, 0.0, 0.0])
    # Waypoints reached in order, m.
    targets: list[CourseTarget] = dataclasses.field(default_factory=list)
    # Round obstacles the waypoints steer around, m.
    obstacles: list[CourseObstacle] = dataclasses.field(default_factory=list)
    # Target radius, m (paper: 5 cm).
    epsilon: float = 0.05
    # Step budget (half cycles) per target.
    max_steps_per_target: int = 40


def register(subparsers):
    parser = AddVerb(subparsers, "gecko", __doc__)
    commands = parser.add_subparsers(dest="gecko_command", metavar="COMMAND")
    commands.required = True
    space = commands.add_parser(
        "velocity-space",
        help="motion per cycle over the velocity space, Eq. 16 fit, Fig. 7",
        description=__doc__,
        formatter_class=parser.formatter_class,
    )
    space.add_argument("--model", choices=("drake", "geometric"), default="drake")
    space.add_argument(
        "--q1", default="50,60,70,80,90", help="grid of step lengths, deg in [40, 90]"
    )
    space.add_argument(
        "--q2",
        default="-0.5,-0.3,-0.1,0.1,0.3,0.5",
        help="grid of steering factors in [-0.5, 0.5] (write --q2=-0.5,... : a leading minus)",
    )
    space.add_argument(
        "--warmup", type=int, default=1, help="cycles before the measured one (default 1)"
    )
    space.add_argument(
        "--workers",
        type=int,
        default=2,
        help="Dask worker processes for the Drake model (default 2)",
    )
    space.add_argument(
        "--time-step", type=PositiveFloat, default=None, help="Drake plant time step, s (2e-3)"
    )
    space.add_argument(
        "--replay",
        default="90,0.3",
        help="grid point 'q1,q2' replayed in replay.html (the paper's Fig. 8 shows 90, 0.3)",
    )
    space.add_argument("--no-progress", action="store_true", help="no progress bar")
    AddOutputArguments(space)
    space.set_defaults(func=RunVelocitySpace)

    navigate = commands.add_parser(
        "navigate",
        help="the gait pattern generator walks the gecko to targets (Fig. 12)",
        description=__doc__,
        formatter_class=parser.formatter_class,
    )
    source = navigate.add_mutually_exclusive_group()
    source.add_argument(
        "--targets",
        default=None,
        help=f"targets 'x,y; x,y; ...' in m (default: the paper's course '{PAPER_COURSE}')",
    )
    source.add_argument("--course", default=None, help="a course YAML file (see above)")
    navigate.add_argument(
        "--fit",
        default="reference",
        help="motion fit: 'reference' (the paper's Table 3) or a velocity-space results folder "
        "or fit.json",
    )
    navigate.add_argument("--model", choices=("drake", "geometric"), default="drake")
    navigate.add_argument(
        "--start", default=None, help="start pose 'x,y,heading' in m, m, deg (default 0,0,0)"
    )
    navigate.add_argument(
        "--epsilon", type=PositiveFloat, default=None, help="target radius, m (default 0.05)"
    )
    navigate.add_argument(
        "--max-steps", type=int, default=None, help="step budget per target (default 40)"
    )
    navigate.add_argument(
        "--method",
        choices=("newton", "L-BFGS-B"),
        default="newton",
        help="local search of the planner (L-BFGS-B: the authors')",
    )
    navigate.add_argument(
        "--time-step", type=PositiveFloat, default=None, help="Drake plant time step, s (2e-3)"
    )
    navigate.add_argument("--meshcat", action="store_true", help="also stream to a live Meshcat")
    navigate.add_argument("--no-progress", action="store_true", help="no progress output")
    AddOutputArguments(navigate)
    navigate.set_defaults(func=RunNavigate)
    return parser


# ---------------------------------------------------------------------------------------------
# Parsing (every check before anything is written).


def ParseFloatList(text: str, flag: str) -> list[float]:
    try:
        values = [float(v) for v in text.replace(";", ",").split(",") if v.strip()]
    except ValueError:
        raise InputError(f"{flag} {text!r}: not a comma-separated list of numbers") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise InputError(f"{flag} {text!r}: needs at least one finite number")
    return values


def ParseTargets(text: str) -> list[tuple[float, float]]:
    """'x,y; x,y' -> [(x, y), ...] in m; InputError naming the bad entry."""
    targets = []
    entries = [e for e in text.split(";") if e.strip()]
    if not entries:
        raise InputError(f"--targets {text!r}: no targets (write 'x,y; x,y; ...' in m)")
    for k, entry in enumerate(entries, start=1):
        parts = [p.strip() for p in entry.split(",")]
        try:
            if len(parts) != 2:
                raise ValueError
            x, y = float(parts[0]), float(parts[1])
            if not (math.isfinite(x) and math.isfinite(y)):
                raise ValueError
        except ValueError:
            raise InputError(
                f"--targets: entry {k} {entry.strip()!r} is not 'x,y' with two numbers in m"
            ) from None
        targets.append((x, y))
    return targets


def _CheckGrid(q1_values, q2_values):
    from drakebots.gecko.geometry import CheckVelocitySpacePoint

    for q1 in q1_values:
        for q2 in q2_values:
            try:
                CheckVelocitySpacePoint(q1, q2)
            except ValueError as e:
                raise InputError(f"--{str(e)[:2]}: {e}") from None


def LoadCourse(path_text: str) -> GeckoCourse:
    from drakebots.config import LoadTypedYaml

    path = Path(path_text)
    if not path.is_file() and (SCENARIOS_DIRECTORY / path_text).is_file():
        path = SCENARIOS_DIRECTORY / path_text
    course = LoadTypedYaml(GeckoCourse, filename=path)
    if not course.targets:
        raise InputError(f"{path}: 'targets' must list at least one waypoint")
    if len(course.start) != 3:
        raise InputError(f"{path}: 'start' must be [x, y, heading_deg], got {course.start}")
    if not course.epsilon > 0.0:
        raise InputError(f"{path}: 'epsilon' must be > 0 m, got {course.epsilon}")
    if course.max_steps_per_target < 1:
        raise InputError(f"{path}: 'max_steps_per_target' must be >= 1")
    for k, obstacle in enumerate(course.obstacles, start=1):
        if not obstacle.radius > 0.0:
            raise InputError(f"{path}: obstacle {k} needs a radius > 0 m")
        for j, target in enumerate(course.targets, start=1):
            if math.hypot(target.x - obstacle.x, target.y - obstacle.y) < obstacle.radius:
                raise InputError(f"{path}: target {j} lies inside obstacle {k}")
    return course


def _LoadFit(text: str):
    from drakebots.gecko.planner import LoadFit, ReferenceFit

    if text == "reference":
        return ReferenceFit()
    path = Path(text)
    if not (path.is_file() or (path / "fit.json").is_file()):
        raise InputError(
            f"--fit {text}: neither 'reference' nor a velocity-space folder or fit.json"
        )
    try:
        return LoadFit(path)
    except (ValueError, KeyError) as e:
        raise InputError(f"--fit {text}: not a valid fit ({e})") from None


# ---------------------------------------------------------------------------------------------
# velocity-space


def _CompareWithReference(fit, reference, q1, q2) -> dict:
    """The project's fit of Eq. 16 against the paper's Table 3, in the paper's units.

    The six monomials are nearly collinear over the grid (q2 and q1*q2 especially), so two fits
    of the same motion can split it differently between terms. The comparison therefore reports,
    per output: (a) the effects at the grid centre (value and slopes along q1 and q2), which do
    not depend on that split; (b) the reference's two dominant terms (largest mean |coefficient
    x monomial| over the grid) next to the same terms of the own fit; (c) the correlation of the
    two fits over the grid.
    """
    import numpy as np

    from drakebots.gecko.planner import OUTPUTS, TERMS, Terms

    center = (float(np.mean([min(q1), max(q1)])), float(np.mean([min(q2), max(q2)])))
    monomials = np.abs(Terms(q1, q2)).mean(axis=0)
    units = {"d_eps": 180.0 / math.pi, "dx": 100.0, "dy": 100.0}
    report = {"grid_centre": {"q1_deg": center[0], "q2": center[1]}}
    own_value, ref_value = fit.Evaluate(*center), reference.Evaluate(*center)
    own_g1, own_g2 = fit.Gradient(*center)
    ref_g1, ref_g2 = reference.Gradient(*center)
    for row, name in enumerate(OUTPUTS):
        u = units[name]
        effects = {}
        for label, own, ref in (
            ("value", own_value[row], ref_value[row]),
            ("slope_q1_per_deg", own_g1[row], ref_g1[row]),
            ("slope_q2", own_g2[row], ref_g2[row]),
        ):
            effects[label] = {
                "own": float(own * u),
                "reference": float(ref * u),
                "same_sign": bool(np.sign(own) == np.sign(ref)),
                "ratio": float(own / ref) if ref else None,
            }
        own_c = fit.coefficients[row] * monomials * u
        ref_c = reference.coefficients[row] * monomials * u
        dominant = [
            {
                "term": TERMS[k],
                "own_contribution": float(own_c[k]),
                "reference_contribution": float(ref_c[k]),
                "same_sign": bool(np.sign(own_c[k]) == np.sign(ref_c[k])),
            }
            for k in np.argsort(-np.abs(ref_c))[:2]
        ]
        own_values = Terms(q1, q2) @ fit.coefficients[row] * u
        ref_values = Terms(q1, q2) @ reference.coefficients[row] * u
        report[name] = {
            "unit": "deg/cycle" if name == "d_eps" else "cm/cycle",
            "effects_at_grid_centre": effects,
            "dominant_terms_of_reference": dominant,
            "grid_mean_abs_own": float(np.mean(np.abs(own_values))),
            "grid_mean_abs_reference": float(np.mean(np.abs(ref_values))),
            "correlation_over_grid": float(np.corrcoef(own_values, ref_values)[0, 1]),
        }
    return report


def RunVelocitySpace(args) -> int:
    q1_values = ParseFloatList(args.q1, "--q1")
    q2_values = ParseFloatList(args.q2, "--q2")
    _CheckGrid(q1_values, q2_values)
    if len(q1_values) < 3 or len(q2_values) < 3:
        raise InputError("--q1/--q2: the quadratic of Eq. 16 needs at least 3 values of each")
    if args.warmup < 0:
        raise InputError(f"--warmup must be >= 0, got {args.warmup}")
    if args.workers < 1:
        raise InputError(f"--workers must be >= 1, got {args.workers}")
    replay_point = ParseFloatList(args.replay, "--replay")
    if len(replay_point) != 2:
        raise InputError(f"--replay {args.replay!r}: write 'q1,q2'")
    _CheckGrid([replay_point[0]], [replay_point[1]])

    import numpy as np

    from drakebots.cli import Summary
    from drakebots.gecko.experiments import MeasureVelocitySpace
    from drakebots.gecko.geometry import GaitLawDeg
    from drakebots.gecko.planner import ReferenceFit
    from drakebots.gecko.plots import (
        PlotFitComparison,
        PlotGaitSignals,
        PlotVelocitySpace,
    )
    from drakebots.gecko.replay import GeckoReplayDecorator
    from drakebots.results import DefaultOutput, ResultsFolder
    from drakebots.robots import GetRobot
    from drakebots.visualization.replay import ReplayHtml

    robot = GetRobot("gecko")
    options = {}
    if args.model == "drake":
        from drakebots.gecko.simulation import GeckoSimConfig

        options["config"] = GeckoSimConfig(time_step=args.time_step or GeckoSimConfig.time_step)
    out = args.out or DefaultOutput("gecko", "velocity-space")
    with ResultsFolder(out, force=args.force) as results:
        total = len(q1_values) * len(q2_values)
        show = not args.no_progress

        def Progress(done, count, m):
            if show:
                print(
                    f"  [{done}/{count}] q1 {m.q1:>4.0f}  q2 {m.q2:+.1f}:  d_eps "
                    f"{math.degrees(m.motion[0]):+7.2f} deg  dx {100 * m.motion[1]:6.2f} cm  "
                    f"dy {100 * m.motion[2]:+6.2f} cm  ({m.seconds:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )

        if show:
            print(f"velocity space: {total} grid points, {args.model} model", file=sys.stderr)
        space = MeasureVelocitySpace(
            args.model,
            q1_values,
            q2_values,
            warmup=args.warmup,
            workers=args.workers,
            options=options,
            progress=Progress,
        )
        # The other model on the same grid: the cross-check (the geometric one takes seconds).
        cross = None
        if args.model == "drake":
            cross = MeasureVelocitySpace("geometric", q1_values, q2_values, warmup=args.warmup)
        reference = ReferenceFit()
        fit = space.fit
        comparison = _CompareWithReference(fit, reference, space.q1, space.q2)
        failures = [f for m in space.measurements for f in m.failures]
        points = [
            {
                "q1_deg": m.q1,
                "q2": m.q2,
                "d_eps_deg": math.degrees(m.motion[0]),
                "dx_cm": 100 * m.motion[1],
                "dy_cm": 100 * m.motion[2],
                "fit_d_eps_deg": math.degrees(fit.Evaluate(m.q1, m.q2)[0]),
                "fit_dx_cm": 100 * fit.Evaluate(m.q1, m.q2)[1],
                "fit_dy_cm": 100 * fit.Evaluate(m.q1, m.q2)[2],
                "seconds": m.seconds,
            }
            for m in space.measurements
        ]
        figures = {
            "grid_points": len(points),
            "grid_seconds": space.seconds,
            "seconds_per_point": space.seconds / len(points),
            "residual_rms": {
                "d_eps_deg": math.degrees(fit.residual_rms[0]),
                "dx_cm": 100 * fit.residual_rms[1],
                "dy_cm": 100 * fit.residual_rms[2],
            },
            "residual_max": {
                "d_eps_deg": math.degrees(fit.residual_max[0]),
                "dx_cm": 100 * fit.residual_max[1],
                "dy_cm": 100 * fit.residual_max[2],
            },
            "positive_q2_turns_negative": bool(
                np.all(space.motion[space.q2 > 0, 0] < 0)
                and np.all(space.motion[space.q2 < 0, 0] > 0)
            ),
            "dx_grows_with_q1": bool(
                np.mean(space.motion[space.q1 == max(q1_values), 1])
                > np.mean(space.motion[space.q1 == min(q1_values), 1])
            ),
        }
        if cross is not None:
            diff = space.motion - cross.motion
            figures["drake_minus_geometric"] = {
                "d_eps_deg_max_abs": float(np.degrees(np.max(np.abs(diff[:, 0])))),
                "d_eps_deg_rms": float(np.degrees(np.sqrt(np.mean(diff[:, 0] ** 2)))),
                "dx_cm_max_abs": float(100 * np.max(np.abs(diff[:, 1]))),
                "dx_cm_rms": float(100 * np.sqrt(np.mean(diff[:, 1] ** 2))),
                "dy_cm_max_abs": float(100 * np.max(np.abs(diff[:, 2]))),
                "dy_cm_rms": float(100 * np.sqrt(np.mean(diff[:, 2] ** 2))),
                "geometric_grid_seconds": cross.seconds,
            }
        results.WriteJson("fit.json", fit.ToJson())
        results.SaveNpz(
            "velocity_space.npz",
            {
                "q1_deg": space.q1,
                "q2": space.q2,
                "motion": space.motion,
                "poses": np.array([m.poses for m in space.measurements]),
                "alphas": np.array([m.alphas for m in space.measurements]),
                "lengths": np.array([m.lengths for m in space.measurements]),
                "fit_coefficients": fit.coefficients,
                "reference_coefficients": reference.coefficients,
                **({"geometric_motion": cross.motion} if cross is not None else {}),
            },
        )
        results.SaveFigure("velocity_space.png", PlotVelocitySpace(space), dpi=120)
        results.SaveFigure("fit_comparison.png", PlotFitComparison(fit, reference))
        if cross is not None:
            results.SaveFigure(
                "velocity_space_geometric.png",
                PlotVelocitySpace(cross, title="the geometric model on the same grid"),
                dpi=110,
            )
        # A replay of one grid point (Fig. 8's detailed view), in the chosen model.
        replay_q1, replay_q2 = replay_point
        if args.model == "drake":
            from drakebots.gecko.simulation import GeckoSimulation

            sim = GeckoSimulation(
                options["config"],
                gait=(replay_q1, replay_q2),
                start_alpha_deg=GaitLawDeg(replay_q1, replay_q2),
            )
            sim.RunHalfCycles(2 * (args.warmup + 1))
            log = sim.Log()
            html = ReplayHtml(
                robot,
                log.times,
                log.positions,
                decorator=GeckoReplayDecorator(log.extra["fixation"], track=log.extra["pose"]),
            )
            results.SaveFigure("replay_point_signals.png", PlotGaitSignals(log))
        else:
            from drakebots.gecko.geometric import GeometricGait
            from drakebots.gecko.replay import GeometricTraceReplay

            gait = GeometricGait(substeps=8)
            gait.Reset(alpha_deg=GaitLawDeg(replay_q1, replay_q2))
            gait.Cycles(replay_q1, replay_q2, args.warmup + 1)
            trace = gait.Trace()
            html = GeometricTraceReplay(robot, trace, track=trace.poses)
        results.WriteText("replay.html", html)
        summary = Summary(
            "gecko velocity-space",
            {
                "model": args.model,
                "q1_deg": q1_values,
                "q2": q2_values,
                "warmup_cycles": args.warmup,
                "workers": args.workers,
                "replay": replay_point,
            },
            robot="gecko",
            success=not failures,
            reason=("; ".join(failures[:5]) if failures else None),
            figures=figures,
            fit={
                "si": fit.ToJson(),
                "paper_units": fit.TableDegCm(),
                "reference_table3": reference.TableDegCm(),
            },
            comparison_with_table3=comparison,
            points=points,
        )
        results.WriteJson("summary.json", summary)
        results.Commit()
    _PrintVelocitySpace(results.final, space, figures, comparison)
    return 1 if failures else 0


def _PrintVelocitySpace(folder, space, figures, comparison):
    print(f"results: {folder}")
    print(
        f"  {figures['grid_points']} grid points ({space.model} model) in "
        f"{figures['grid_seconds']:.1f} s"
    )
    rms = figures["residual_rms"]
    print(
        f"  fit residual rms: d_eps {rms['d_eps_deg']:.2f} deg, dx {rms['dx_cm']:.2f} cm, "
        f"dy {rms['dy_cm']:.2f} cm"
    )
    print(
        f"  positive q2 turns negative: {figures['positive_q2_turns_negative']}; "
        f"dx grows with q1: {figures['dx_grows_with_q1']}"
    )
    centre = comparison["grid_centre"]
    print(
        f"  against the paper's Table 3 at the grid centre (q1 {centre['q1_deg']:.0f}, "
        f"q2 {centre['q2']:+.1f}), own vs paper:"
    )
    for name in ("d_eps", "dx", "dy"):
        item = comparison[name]
        effects = item["effects_at_grid_centre"]
        text = ", ".join(
            f"{label} {e['own']:+.3g} vs {e['reference']:+.3g}" for label, e in effects.items()
        )
        print(
            f"    {name} [{item['unit']}]: {text}; correlation {item['correlation_over_grid']:+.2f}"
        )
    if "drake_minus_geometric" in figures:
        d = figures["drake_minus_geometric"]
        print(
            f"  Drake - geometric (rms): d_eps {d['d_eps_deg_rms']:.2f} deg, "
            f"dx {d['dx_cm_rms']:.2f} cm, dy {d['dy_cm_rms']:.2f} cm"
        )


# ---------------------------------------------------------------------------------------------
# navigate


def _Clearance(result, obstacles) -> list[float]:
    """Smallest distance between the robot's limbs and each obstacle's edge over the run, m."""
    import numpy as np

    from drakebots.gecko.geometry import GeckoDimensions, GeckoOutline, GeckoShapeOf

    if not obstacles:
        return []
    if result.log is not None:
        poses, alphas = result.log.extra["pose"], result.log.extra["angles"]
        lengths = np.tile(GeckoDimensions().lengths(), (len(poses), 1))
    else:
        z = result.trace.z
        poses, alphas, lengths = z[:, :3], z[:, 3:8], z[:, 8:13]
    clearance = [math.inf] * len(obstacles)
    for k in range(0, len(poses), 5 if result.log is not None else 1):
        shape = GeckoShapeOf(poses[k], alphas[k], lengths[k])
        points = np.vstack(GeckoOutline(shape, 8))
        for i, (ox, oy, radius) in enumerate(obstacles):
            d = float(np.min(np.hypot(points[:, 0] - ox, points[:, 1] - oy)) - radius)
            clearance[i] = min(clearance[i], d)
    return clearance


def _FeetTracks(result):
    import numpy as np

    from drakebots.gecko.geometry import FEET, GeckoDimensions, GeckoShapeOf

    if result.log is not None:
        poses, alphas = result.log.extra["pose"], result.log.extra["angles"]
        lengths = np.tile(GeckoDimensions().lengths(), (len(poses), 1))
    else:
        z = result.trace.z
        poses, alphas, lengths = z[:, :3], z[:, 3:8], z[:, 8:13]
    tracks = {name: [] for name in (*FEET, "torso_tip", "torso_end")}
    for k in range(len(poses)):
        shape = GeckoShapeOf(poses[k], alphas[k], lengths[k])
        for j, foot in enumerate(FEET):
            tracks[foot].append(shape.feet[j])
        tracks["torso_tip"].append(shape.front)
        tracks["torso_end"].append(shape.hind)
    return {name: np.array(points) for name, points in tracks.items()}


def RunNavigate(args) -> int:
    import numpy as np

    # Inputs, all checked before anything is written.
    if args.course is not None:
        course = LoadCourse(args.course)
        targets = [(t.x, t.y) for t in course.targets]
        start = list(course.start)
        epsilon = course.epsilon
        budget = course.max_steps_per_target
        obstacles = [(o.x, o.y, o.radius) for o in course.obstacles]
        name = course.name or Path(args.course).stem
    else:
        targets = ParseTargets(args.targets if args.targets is not None else PAPER_COURSE)
        start, epsilon, budget, obstacles = [0.0, 0.0, 0.0], 0.05, 40, []
        paper = np.allclose(targets, ParseTargets(PAPER_COURSE)) if len(targets) == 4 else False
        name = "the paper's course (Fig. 12)" if paper else "targets"
    if args.start is not None:
        start = ParseFloatList(args.start, "--start")
        if len(start) != 3:
            raise InputError(f"--start {args.start!r}: write 'x,y,heading' (m, m, deg)")
    if args.epsilon is not None:
        epsilon = args.epsilon
    if args.max_steps is not None:
        if args.max_steps < 1:
            raise InputError(f"--max-steps must be >= 1, got {args.max_steps}")
        budget = args.max_steps
    fit = _LoadFit(args.fit)

    import numpy as np

    from drakebots.cli import Summary
    from drakebots.gecko.experiments import NavigateDrake, NavigateGeometric
    from drakebots.gecko.planner import GaitPatternPlanner, PlannerParams
    from drakebots.gecko.plots import (
        PlotCourse,
        PlotDistanceFunction,
        PlotGaitSignals,
    )
    from drakebots.gecko.replay import GeckoReplayDecorator, GeometricTraceReplay
    from drakebots.results import DefaultOutput, ResultsFolder
    from drakebots.robots import GetRobot
    from drakebots.visualization.replay import ReplayHtml

    robot = GetRobot("gecko")
    planner = GaitPatternPlanner(fit, PlannerParams(epsilon=epsilon, method=args.method))
    start_pose = (start[0], start[1], math.radians(start[2]))
    out = args.out or DefaultOutput("gecko", "navigate")
    meshcat = None
    show = not args.no_progress

    def Progress(book, step):
        if show:
            print(
                f"  step {book.total_steps:>3}  target {step.target + 1}/{len(targets)}  "
                f"d0 {100 * step.d0:6.1f} cm  ->  q1 {step.q1:5.1f}  q2 {step.q2:+.2f}  "
                f"n {step.n}  (decision {1e3 * step.seconds:.1f} ms)",
                file=sys.stderr,
                flush=True,
            )

    with ResultsFolder(out, force=args.force) as results:
        if args.meshcat:
            from pydrake.geometry import Meshcat

            meshcat = Meshcat()
            print(f"Meshcat: {meshcat.web_url()}", flush=True)
        if args.model == "drake":
            from drakebots.gecko.simulation import GeckoSimConfig

            config = GeckoSimConfig(time_step=args.time_step or GeckoSimConfig.time_step)
            result = NavigateDrake(
                planner,
                targets,
                start_pose=start_pose,
                max_steps_per_target=budget,
                config=config,
                meshcat=meshcat,
                progress=Progress,
            )
        else:
            result = NavigateGeometric(
                planner,
                targets,
                start_pose=start_pose,
                max_steps_per_target=budget,
                progress=Progress,
            )
        clearance = _Clearance(result, obstacles)
        decision_ms = 1e3 * result.decision_seconds
        figures = {
            "targets": len(targets),
            "targets_reached": int(np.sum(result.reached)),
            "steps_total": len(result.steps),
            "steps_per_target": result.steps_per_target,
            "reached_at_step": result.reached_at_step.tolist(),
            "closest_approach_m": result.closest.tolist(),
            "path_length_m": result.path_length,
            "final_error_m": result.final_error,
            "simulated_time_s": result.sim_time,
            "wall_time_s": result.wall_time,
            "real_time_rate": result.sim_time / max(result.wall_time, 1e-9),
            "decision_ms_mean": float(np.mean(decision_ms)) if len(decision_ms) else 0.0,
            "decision_ms_max": float(np.max(decision_ms)) if len(decision_ms) else 0.0,
            "obstacle_clearance_m": clearance,
            "obstacles_touched": [c < 0.0 for c in clearance],
        }
        steps = result.steps
        results.SaveNpz(
            "navigation.npz",
            {
                "targets": result.targets,
                "track_times": result.track_times,
                "track_poses": result.track_poses,
                "step_times": np.array([s.time for s in steps]),
                "step_poses": np.array([s.pose for s in steps]).reshape(-1, 3),
                "step_target": np.array([s.target for s in steps], dtype=int),
                "step_q": np.array([[s.q1, s.q2] for s in steps]).reshape(-1, 2),
                "step_horizon": np.array([s.n for s in steps], dtype=int),
                "step_d0": np.array([s.d0 for s in steps]),
                "step_dn": np.array([s.dn for s in steps]),
                "decision_seconds": result.decision_seconds,
            },
        )
        results.SaveFigure(
            "course.png",
            PlotCourse(
                result,
                feet_tracks=_FeetTracks(result),
                obstacles=obstacles,
                title=f"{name}: gait pattern generator ({args.model} model, fit: {fit.source})",
            ),
        )
        first = np.asarray(targets[0])
        horizons = [1]
        if steps:
            horizons.append(max(steps[0].n, 4) if steps[0].n == 1 else steps[0].n)
        else:
            horizons.append(4)
        results.SaveFigure(
            "distance_function.png",
            PlotDistanceFunction(
                planner,
                start_pose,
                first,
                tuple(horizons),
                title=f"distance function for target 1 ({first[0]:.2f}, {first[1]:.2f}) m "
                "from the start pose",
            ),
        )
        decorator_args = {
            "targets": result.targets,
            "epsilon": epsilon,
            "obstacles": obstacles,
            "track": result.track_poses,
        }
        if result.log is not None:
            log = result.log
            results.SaveNpz("log.npz", log.ArraysForNpz())
            results.SaveFigure("gait_signals.png", PlotGaitSignals(log))
            html = ReplayHtml(
                robot,
                log.times,
                log.positions,
                decorator=GeckoReplayDecorator(log.extra["fixation"], **decorator_args),
            )
        else:
            html = GeometricTraceReplay(robot, result.trace, **decorator_args)
        results.WriteText("replay.html", html)
        summary = Summary(
            "gecko navigate",
            {
                "course": name,
                "targets_m": [list(t) for t in targets],
                "start": start,
                "epsilon_m": epsilon,
                "max_steps_per_target": budget,
                "model": args.model,
                "fit": args.fit,
                "method": args.method,
                "obstacles": [list(o) for o in obstacles],
            },
            robot="gecko",
            success=result.success,
            reason=result.reason,
            fit=fit.ToJson(),
            figures=figures,
            steps=[
                {
                    "time_s": s.time,
                    "pose": [float(v) for v in s.pose],
                    "target": s.target + 1,
                    "q1_deg": s.q1,
                    "q2": s.q2,
                    "horizon": s.n,
                    "d0_m": s.d0,
                    "dn_m": s.dn,
                    "decision_ms": 1e3 * s.seconds,
                }
                for s in steps
            ],
        )
        results.WriteJson("summary.json", summary)
        results.Commit()
    print(f"results: {results.final}")
    print(
        f"  {figures['targets_reached']}/{len(targets)} targets reached in "
        f"{figures['steps_total']} steps (per target {figures['steps_per_target']}); path "
        f"{figures['path_length_m']:.2f} m; final error {100 * figures['final_error_m']:.1f} cm"
    )
    print(
        f"  simulated {figures['simulated_time_s']:.1f} s in {figures['wall_time_s']:.1f} s "
        f"({args.model} model); decision {figures['decision_ms_mean']:.2f} ms mean, "
        f"{figures['decision_ms_max']:.2f} ms max"
    )
    if clearance:
        print("  obstacle clearance: " + ", ".join(f"{100 * c:.1f} cm" for c in clearance))
    if not result.success:
        print(f"  FAILED: {result.reason}")
        return 1
    return 0
