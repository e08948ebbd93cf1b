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

from drakebots.cli import (
    AddConfigArgument,
    AddOutputArguments,
    AddVerb,
    CommandLine,
    ConfigFromArguments,
    PositiveFloat,
)
from drakebots.errors import InputError

PAPER_COURSE = "0.4,0.1; 0.6,-0.3; 0.2,-0.5; 0,0"


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
    space.add_argument("--model", choices=("drake", "geometric"), default=None, help="(drake)")
    space.add_argument(
        "--q1", default=None, help="grid of step lengths, deg in [40, 90] (50,60,70,80,90)"
    )
    space.add_argument(
        "--q2",
        default=None,
        help="grid of steering factors in [-0.5, 0.5] (-0.5,-0.3,-0.1,0.1,0.3,0.5; write "
        "--q2=-0.5,... : a leading minus)",
    )
    space.add_argument(
        "--warmup", type=int, default=None, help="cycles before the measured one (default 1)"
    )
    space.add_argument(
        "--workers",
        type=int,
        default=None,
        help="Dask worker processes for the Drake model (default 2)",
    )
    space.add_argument(
        "--time-step", type=PositiveFloat, default=None, help="Drake plant time step, s (2e-3)"
    )
    space.add_argument(
        "--replay",
        default=None,
        help="grid point 'q1,q2' replayed in replay.html (default 90,0.3: the paper's Fig. 8)",
    )
    space.add_argument("--no-progress", action="store_true", help="no progress bar")
    AddConfigArgument(space)
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
        default=None,
        help="motion fit: 'reference' (the paper's Table 3, the default) or a velocity-space "
        "results folder or fit.json",
    )
    navigate.add_argument("--model", choices=("drake", "geometric"), default=None, help="(drake)")
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
        default=None,
        help="local search of the planner (newton; L-BFGS-B: the authors')",
    )
    navigate.add_argument(
        "--time-step", type=PositiveFloat, default=None, help="Drake plant time step, s (2e-3)"
    )
    navigate.add_argument("--meshcat", action="store_true", help="also stream to a live Meshcat")
    navigate.add_argument("--no-progress", action="store_true", help="no progress output")
    AddConfigArgument(navigate)
    AddOutputArguments(navigate)
    navigate.set_defaults(func=RunNavigate)
    return parser


# ---------------------------------------------------------------------------------------------
# Parsing the flags (every check before anything is written).


def ParseFloatList(text: str | None, flag: str) -> list[float] | None:
    """'a,b,c' -> [a, b, c] (None stays None: the flag was not given)."""
    if text is None:
        return None
    try:
        values = [float(v) for v in text.replace(";", ",").split(",") if v.strip()]
    except ValueError:
        raise InputError(f"{flag} {text!r}: not a comma-separated list of numbers") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise InputError(f"{flag} {text!r}: needs at least one finite number")
    return values


def ParseTargets(text: str | None) -> list[list[float]] | None:
    """'x,y; x,y' -> [[x, y], ...] in m; InputError naming the bad entry."""
    if text is None:
        return None
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
        targets.append([x, y])
    return targets


def _Progress(args):
    from drakebots.cli._progress import CliProgress

    return CliProgress(bars=False if args.no_progress else None, quiet=args.no_progress)


def _Output(args, verb: str, reads) -> tuple:
    """(--out or a fresh runs/ folder, the input paths a --force must not replace), checked
    before any work."""
    from drakebots.results import CheckOutputFolder, DefaultOutput

    out = args.out or DefaultOutput("gecko", verb)
    reads = [r for r in (args.config, *reads) if r is not None]
    CheckOutputFolder(out, args.force, reads=reads)
    return out, reads


# ---------------------------------------------------------------------------------------------
# velocity-space


def CheckArgs(args):
    """The sub-command's config, checked (InputError naming the flag) before any work but the
    files a run makes (navigate's --fit); `drakebots sweep` calls it for every case before any
    runs."""
    if args.gecko_command == "velocity-space":
        from drakebots.gecko.velocity_space import CheckVelocitySpaceConfig

        config = _VelocitySpaceConfig(args)
        CheckVelocitySpaceConfig(config)
    else:
        from drakebots.gecko.navigation import CheckNavigateConfig

        config = _NavigateConfig(args)
        CheckNavigateConfig(config)
    return config


def _VelocitySpaceConfig(args):
    from drakebots.gecko import VelocitySpaceConfig

    return ConfigFromArguments(
        VelocitySpaceConfig,
        args,
        model=args.model,
        q1=ParseFloatList(args.q1, "--q1"),
        q2=ParseFloatList(args.q2, "--q2"),
        warmup=args.warmup,
        workers=args.workers,
        time_step=args.time_step,
        replay=ParseFloatList(args.replay, "--replay"),
    )


def RunVelocitySpace(args) -> int:
    from drakebots.gecko import VelocitySpace

    config = CheckArgs(args)
    out, reads = _Output(args, "velocity-space", ())
    result = VelocitySpace(config, progress=_Progress(args))
    folder = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    _PrintVelocitySpace(folder, result)
    return 0 if result.success else 1


def _PrintVelocitySpace(folder, result):
    figures, comparison = result.figures, result.comparison
    print(f"results: {folder}")
    print(
        f"  {figures['grid_points']} grid points ({result.space.model} model) in "
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


def _NavigateConfig(args):
    from drakebots.gecko import NavigateConfig

    config = ConfigFromArguments(
        NavigateConfig,
        args,
        targets=ParseTargets(args.targets),
        course=args.course,
        fit=args.fit,
        model=args.model,
        start=ParseFloatList(args.start, "--start"),
        epsilon=args.epsilon,
        max_steps=args.max_steps,
        method=args.method,
        time_step=args.time_step,
    )
    # A --targets flag replaces a --config file's course, and --course its targets.
    if args.targets is not None:
        config = dataclasses.replace(config, course=None)
    if args.course is not None:
        config = dataclasses.replace(config, targets=None)
    return config


def RunNavigate(args) -> int:
    from drakebots.gecko import Navigate

    config = CheckArgs(args)
    fit = None if config.fit == "reference" else config.fit
    out, reads = _Output(args, "navigate", (config.course, fit))
    meshcat = None
    if args.meshcat:
        from drakebots.visualization.meshcat import LocalMeshcat

        meshcat = LocalMeshcat()
        print(f"Meshcat: {meshcat.web_url()}", flush=True)
    result = Navigate(config, meshcat=meshcat, progress=_Progress(args))
    folder = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    _PrintNavigate(folder, result)
    if not result.success:
        print(f"  FAILED: {result.reason}")
        return 1
    return 0


def _PrintNavigate(folder, result):
    figures = result.figures
    print(f"results: {folder}")
    print(
        f"  {figures['targets_reached']}/{figures['targets']} targets reached in "
        f"{figures['steps_total']} steps (per target {figures['steps_per_target']}); path "
        f"{figures['path_length_m']:.2f} m; final error {100 * figures['final_error_m']:.1f} cm"
    )
    print(
        f"  simulated {figures['simulated_time_s']:.1f} s in {figures['wall_time_s']:.1f} s "
        f"({result.config.model} model); decision {figures['decision_ms_mean']:.2f} ms mean, "
        f"{figures['decision_ms_max']:.2f} ms max"
    )
    clearance = figures["obstacle_clearance_m"]
    if clearance:
        print("  obstacle clearance: " + ", ".join(f"{100 * c:.1f} cm" for c in clearance))
