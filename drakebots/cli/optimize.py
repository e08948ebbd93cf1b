"""Optimize motions by variational contact-implicit trajectory optimization.

Subcommands (hamr-contact-implicit.txt, Sec. III):
  gait ROBOT  a periodic gait of any robot file (or hamr_vi): --period T --distance D per cycle
  jump ROBOT  a vertical jump of any robot file (or hamr_vi) to --height H above standing
  hamr-gait   a periodic gait at a stride frequency on a surface: maximise the distance per
              stride (Eq. 16), warm-started from the last stride of a simulated open-loop trot
  hamr-jump   a vertical jump from rest to a goal apex height (Eq. 17), warm-started from a
              simulated crouch-and-push

gait and jump take a robot file (drakebots.optimization.legged: the model's contacts, actuators
and effort limits; the slack homotopy from the home pose; the plan re-simulated in Drake) or
hamr_vi, which runs HAMR-VI's own configuration below (--period in ms is 1000 / --frequency,
--distance the goal per stride, mm).

HAMR-VI: the transcription (drakebots.optimization.contact_implicit) is the paper's Eq. 15: midpoint
discrete Euler-Lagrange equations with the 24 loop constraints, point contacts with
complementarity relaxed by one slack per interval and an exact penalty, friction by maximum
dissipation on a 4-sided pyramid, drive voltages in [0, 225] V through the piezo model, flexures
within +-pi/4, and a free stride time within +-10 %. --solver auto (default) uses the fast path
(IPOPT on vectorised evaluators with second derivatives; drakebots.optimization.
contact_implicit_fast) when its IPOPT library loads: on the nine 51-knot gaits and the jump it
reaches the same acceptance as Drake's IPOPT in a small fraction of the time
(scripts/bench_contact_implicit.py). Without it, or for a program it has no evaluator for, auto
uses Drake's SNOPT up to 2000 variables and Drake's IPOPT above: measured on the 10 Hz gait,
SNOPT's first QP subproblem alone takes about 60 s CPU and each later major iteration about 17 s,
against about 1 s per IPOPT iteration. --solver snopt / ipopt run Drake's by name.

The results folder holds summary.json (solver status, solve time, sizes, distance per cycle,
slip (Eq. 23), complementarity and dynamics residuals, apex height), solution.npz (every decision
variable and the trajectory), replay.html, and plots: feet.png (feet in the body frame), legs.png
(leg heights and contact timing), inputs.png, forces.png, body.png.

Examples:
  drakebots optimize gait scripts/examples/hopper/hopper.yaml --period 0.5 --distance 0.2
  drakebots optimize jump scripts/examples/walker/walker.yaml --height 0.1
  drakebots optimize hamr-gait --frequency 10 --surface cardstock --out runs/gait10
  drakebots optimize hamr-jump --height 12 --out runs/jump
  drakebots optimize hamr-gait --frequency 2 --surface teflon --solver ipopt --out runs/gait2_ipopt
  drakebots optimize hamr-gait --frequency 10 --knots 11 --iterations 20 --out runs/tiny

Exit 1 when the solver fails or the solution misses the true complementarity or feasibility
tolerances (or, for gait and jump, Drake's re-simulation misses the plan by more than 30 %):
the folder then holds the best iterate, the solver status and the most violated constraints by
name.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from drakebots.cli import AddOutputArguments, AddVerb, CommandLine
from drakebots.errors import InputError

SURFACES = ("teflon", "cardstock", "sandpaper")
# Each flag's dest and the GaitConfig / JumpConfig field it sets (drakebots.cli._config).
FLAGS = {
    "frequency": "frequency",
    "height": "height",
    "surface": "surface",
    "goal": "goal",
    "knots": "knots",
    "duration": "duration",
    "warm_start": "warm_start",
    "scuff_weight": "settings.scuff_weight",
    "scuff_height": "settings.scuff_height",
    "solver": "solver.solver",
    "iterations": "solver.major_iterations",
    "friction_directions": "friction_directions",
    "first_stage_iterations": "first_stage_iterations",
    "second_stage": "second_stage",
}


# The general gait's and jump's flags -> drakebots.optimization.legged.GaitConfig / JumpConfig.
GENERAL_FLAGS = {
    "robot": "robot",
    "period": "period",
    "distance": "distance",
    "height": "height",
    "duration": "duration",
    "knots": "knots",
    "friction": "friction",
    "friction_directions": "friction_directions",
    "effort_fraction": "effort_fraction",
    "mirror": "mirror",
    "gait": "gait",
    "schedule_margin": "schedule_margin",
    "stance_load": "stance_load",
    "flight_knots": "flight_knots",
    "solver": "solver.solver",
    "iterations": "solver.iterations",
}


def _MirrorPairs(text: str) -> list[list[str]]:
    """--mirror left_hip:right_hip,left_knee:right_knee -> [[left_hip, right_hip], ...]."""
    pairs = [item.split(":") for item in text.split(",") if item.strip()]
    if not pairs or any(len(pair) != 2 or not all(pair) for pair in pairs):
        raise argparse.ArgumentTypeError(
            f"expected JOINT:JOINT pairs separated by commas, got {text!r}"
        )
    return [[a.strip(), b.strip()] for a, b in pairs]


HAMR = "hamr_vi"


def register(subparsers):
    parser = AddVerb(subparsers, "optimize", __doc__)
    problems = parser.add_subparsers(dest="problem", metavar="PROBLEM")
    problems.required = True
    _AddGeneralProblems(problems)
    gait = problems.add_parser(
        "hamr-gait",
        help="a periodic HAMR-VI gait (Eq. 16)",
        description="Optimize a periodic HAMR-VI gait. Example: drakebots optimize hamr-gait "
        "--frequency 10 --surface cardstock --out runs/gait10",
    )
    gait.add_argument(
        "--frequency", type=float, help="stride frequency, Hz (> 0; required unless --config)"
    )
    gait.add_argument("--surface", help=f"one of {', '.join(SURFACES)} (default cardstock)")
    gait.add_argument("--goal", type=float, help="goal distance per stride, mm (default 10)")
    gait.add_argument("--knots", type=int, help="knots N (default 51, as the authors)")
    gait.add_argument(
        "--warm-start",
        help="variational (the transcription's own dynamics), drake (SAP simulation), or auto "
        "(default, ours: variational, then drake if that solve is not acceptable)",
    )
    gait.add_argument(
        "--scuff-weight",
        type=float,
        help="weight of the foot-scuff cost per mm^2 of tangential foot displacement near the "
        "ground (not in the paper; 0 turns it off; default from GaitSettings)",
    )
    gait.add_argument(
        "--scuff-height",
        type=float,
        help="height, mm, over which the scuff cost's weight falls by e (default from "
        "GaitSettings)",
    )
    jump = problems.add_parser(
        "hamr-jump",
        help="a HAMR-VI vertical jump (Eq. 17)",
        description="Optimize a HAMR-VI vertical jump. Example: drakebots optimize hamr-jump "
        "--height 12 --out runs/jump",
    )
    jump.add_argument(
        "--height",
        type=float,
        help="goal apex height above standing, mm (required unless --config)",
    )
    jump.add_argument("--surface", help=f"one of {', '.join(SURFACES)} (default cardstock)")
    jump.add_argument("--knots", type=int, help="knots N (default 31, as the authors)")
    jump.add_argument("--duration", type=float, help="planned duration, ms (default 70)")
    for sub in (gait, jump):
        _AddSolverArguments(sub)
        sub.add_argument(
            "--config",
            default=None,
            help="YAML file of a GaitConfig or JumpConfig (drakebots.hamr.workflows): keys as "
            "the flags (frequency or height, surface, knots, ...), `solver:` (SolverConfig) and "
            "`settings:` (GaitSettings or JumpSettings); the flags override it",
        )
        sub.add_argument("--quiet", action="store_true", help="no progress lines")
        AddOutputArguments(sub)
        sub.set_defaults(func=Run)
    parser.set_defaults(func=Run)
    return parser


def _AddGeneralProblems(problems) -> None:
    """`optimize gait ROBOT` and `optimize jump ROBOT` (drakebots.optimization.legged)."""
    gait = problems.add_parser(
        "gait",
        help="a periodic gait of any robot file (or hamr_vi)",
        description="Optimize a periodic gait. Example: drakebots optimize gait "
        "scripts/examples/hopper/hopper.yaml --period 0.5 --distance 0.2 --out runs/hop",
    )
    gait.add_argument("--period", type=float, help="period of one cycle, robot time unit (> 0)")
    gait.add_argument("--distance", type=float, help="distance per cycle, robot length unit")
    gait.add_argument("--knots", type=int, help="knots per cycle (default 31)")
    gait.add_argument(
        "--mirror",
        type=_MirrorPairs,
        help="joints that swap half a cycle on, e.g. left_hip:right_hip,left_knee:right_knee "
        "(a symmetric gait: each leg does at T/2 what the other did at 0; odd --knots)",
    )
    gait.add_argument(
        "--gait",
        choices=("trot", "pace", "bound", "pronk", "walk"),
        help="a quadruped's gait: its legs' phase offsets shape the warm start and fix the foot "
        "sequence, its stance feet start on the ground, trot and pace keep their left-right "
        "symmetry (odd --knots); e.g. drakebots optimize gait "
        "scripts/examples/published/solo12.yaml --gait trot --period 0.4 --distance 0.1 "
        "--knots 21",
    )
    gait.add_argument(
        "--schedule-margin",
        type=float,
        help="with --gait: fraction of a cycle at each end of a stance and a swing left to the "
        "solver (touchdown and lift-off timing; default 0.1, 0.5: the gait only seeds the guess)",
    )
    gait.add_argument(
        "--stance-load",
        type=float,
        help="with --gait: the least normal force each standing foot carries in its stance "
        "core, as a fraction of the robot's weight (default 0.05; 0 leaves it out)",
    )
    jump = problems.add_parser(
        "jump",
        help="a vertical jump of any robot file (or hamr_vi)",
        description="Optimize a vertical jump. Example: drakebots optimize jump "
        "scripts/examples/walker/walker.yaml --height 0.1 --out runs/jump",
    )
    jump.add_argument("--height", type=float, help="apex above the home height (> 0)")
    jump.add_argument("--duration", type=float, help="planned duration, robot time unit")
    jump.add_argument("--knots", type=int, help="knots (default 21)")
    jump.add_argument(
        "--flight-knots",
        type=int,
        help="knots before the apex with every contact off the ground (a floating base; "
        "default 3, 0 for none)",
    )
    for sub in (gait, jump):
        sub.add_argument("robot", metavar="ROBOT", help="a robot file (YAML) or hamr_vi")
        sub.add_argument("--friction", type=float, help="ground friction coefficient (0.8)")
        sub.add_argument("--friction-directions", type=int, help="friction pyramid edges (4)")
        sub.add_argument(
            "--effort-fraction",
            type=float,
            help="fraction of each effort limit the plan may use (0.8: the rest is the "
            "tracking feedback's)",
        )
        sub.add_argument("--solver", help="auto (default: fast where it loads), fast, snopt, ipopt")
        sub.add_argument("--iterations", type=int, help="iteration limit per stage (1000)")
        sub.add_argument(
            "--config",
            default=None,
            help="YAML file of a GaitConfig or JumpConfig (drakebots.optimization.legged); "
            "the flags override it",
        )
        sub.add_argument("--quiet", action="store_true", help="no progress lines")
        AddOutputArguments(sub)
        sub.set_defaults(func=Run)


def _HamrArgs(args):
    """`optimize gait hamr_vi --period P --distance D` read as hamr-gait's flags (the period
    in ms: frequency 1000 / P; the distance: the goal per stride, mm)."""
    general = {"robot", "period", "distance", "friction", "effort_fraction", "config"}
    given = [k for k in ("friction", "effort_fraction") if getattr(args, k, None) is not None]
    if given:
        raise InputError(
            f"--{given[0].replace('_', '-')}: not for hamr_vi (its surfaces set the friction): "
            "use drakebots optimize hamr-gait/hamr-jump for HAMR-VI's own options"
        )
    hamr = argparse.Namespace(**{k: v for k, v in vars(args).items() if k not in general})
    hamr.problem = "hamr-" + args.problem
    hamr.config = None
    if args.problem == "gait":
        if args.period is None or not args.period > 0:
            raise InputError(f"--period: must be > 0 ms for hamr_vi, got {args.period}")
        hamr.frequency, hamr.goal = 1000.0 / args.period, args.distance
    for name in ("surface", "warm_start", "scuff_weight", "scuff_height", "duration"):
        setattr(hamr, name, getattr(hamr, name, None))
    for name in ("first_stage_iterations", "second_stage"):
        setattr(hamr, name, None)
    return hamr


def _CheckGeneral(args):
    from drakebots.cli._config import ConfigFromArgs, FlagNames
    from drakebots.optimization.legged import GaitConfig, JumpConfig

    gait = args.problem == "gait"
    goal = ("period", "distance") if gait else ("height",)
    for name in goal:
        if getattr(args, name) is None and not args.config:
            raise InputError(f"--{name} is required (or a --config file that sets {name})")
    config = ConfigFromArgs(GaitConfig if gait else JumpConfig, args, GENERAL_FLAGS)
    with FlagNames(args, GENERAL_FLAGS):
        config.Check()
    return config


def _AddSolverArguments(sub) -> None:
    sub.add_argument(
        "--solver",
        help="fast, snopt, ipopt, or auto (default): fast (IPOPT on the vectorised "
        "evaluators with second derivatives) when its IPOPT library loads and it can evaluate "
        "the program, otherwise Drake's SNOPT up to 2000 variables and Drake's IPOPT above "
        "(SNOPT's QP subproblems cost ~17 s CPU per major iteration on the 5588-variable "
        "gait, IPOPT ~1 s per iteration; see scripts/bench_contact_implicit.py)",
    )
    sub.add_argument(
        "--iterations", type=int, help="major iteration limit (default 0: the config's)"
    )
    sub.add_argument(
        "--friction-directions",
        type=int,
        help="edges of the friction pyramid (Eq. 13; default 4 as the authors; 8 keeps plans "
        "from sliding loaded feet along the 4-edge pyramid's diagonal, where Eq. 13 leaves "
        "the friction direction free)",
    )
    sub.add_argument(
        "--first-stage-iterations",
        type=int,
        help="iteration budget of the paper's relaxed problem before the true-complementarity "
        "stage (default: 40 with the fast solver, 100 with snopt/ipopt; drakebots.hamr."
        "workflows.StageDefaults; 0: the major iteration limit)",
    )
    sub.add_argument(
        "--second-stage",
        choices=("proximal", "fixed-modes"),
        help="how the relaxed answer is made exactly complementary: proximal (the nearest "
        "point with the slack at 1e-6; default with snopt/ipopt) or fixed-modes (the contact "
        "modes read off and fixed, then proximal if that plan is not acceptable; default with "
        "the fast solver, whose 2 Hz plans walk 9.1-9.4 mm/cycle so; with Drake's IPOPT it is "
        "about 2x faster on the 10 Hz gait but the 2 Hz plans walk 12-18 %% less; README)",
    )


def CheckArgs(args):
    """The GaitConfig or JumpConfig of --config and the flags, checked (InputError in the
    flags' words); `drakebots sweep` calls it for every case before any runs."""
    from drakebots.cli._config import ConfigFromArgs, FlagNames
    from drakebots.hamr import GaitConfig, JumpConfig

    if args.problem in ("gait", "jump"):
        if args.robot == HAMR:
            return CheckArgs(_HamrArgs(args))
        return _CheckGeneral(args)
    gait = args.problem == "hamr-gait"
    goal = "frequency" if gait else "height"
    if getattr(args, goal) is None and not args.config:
        raise InputError(f"--{goal} is required (or a --config file that sets {goal})")
    if args.iterations == 0:
        args.iterations = None  # 0: the config's limit
    config = ConfigFromArgs(GaitConfig if gait else JumpConfig, args, FLAGS)
    with FlagNames(args, FLAGS):
        config.Check()
    return config


def Run(args) -> int:
    from drakebots.cli._progress import CliProgress
    from drakebots.hamr import OptimizeGait, OptimizeJump
    from drakebots.optimization import legged
    from drakebots.results import CheckOutputFolder, DefaultOutput

    config = CheckArgs(args)
    out = Path(args.out) if args.out else DefaultOutput("optimize", args.problem)
    reads = [args.config] if args.config else []
    if getattr(args, "robot", None) and args.robot != HAMR:
        reads.append(args.robot)
    CheckOutputFolder(out, args.force, reads=reads)
    if isinstance(config, legged.GaitConfig | legged.JumpConfig):
        workflow = legged.OptimizeGait if args.problem == "gait" else legged.OptimizeJump
    elif args.problem in ("hamr-gait", "gait"):
        workflow = OptimizeGait
    else:
        workflow = OptimizeJump
    progress = CliProgress(quiet=args.quiet)
    result = workflow(config, progress=progress)
    progress.Close()
    final = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    _Print(result, final)
    return 0 if result.success else 1


def _Print(result, out) -> None:
    if result.verb in ("optimize gait", "optimize jump"):
        return _PrintGeneral(result, out)
    figures, warm = result.figures, result.warm_start
    print(f"results: {out}")
    print(
        f"  {figures['solver']}: {figures['solver_status']}; {figures['solve_time_s']:.1f} s; "
        f"{figures['num_variables']} variables"
    )
    if figures["problem"] == "hamr-gait":
        print(
            f"  distance per cycle {figures['velocity_mm_per_cycle']:.2f} mm "
            f"(warm start {warm.velocity_mm_per_cycle:.2f} mm), slip {figures['slip']:.3f}, "
            f"stride {result.times[-1]:.1f} ms"
        )
    else:
        print(
            f"  apex {figures['apex_height_mm']:.2f} mm above standing "
            f"(warm start {warm.apex_height_mm:.2f} mm)"
        )
    print(
        f"  true complementarity {figures['max_complementarity_violation']:.2e}, dynamics "
        f"residual {figures['max_dynamics_residual']:.2e} N, loops "
        f"{figures['max_loop_residual_mm']:.2e} mm"
    )
    if not result.success:
        print(f"  did not reach its goal: {result.reason}", file=sys.stderr)
        for name, value in figures.get("most_violated_constraints", [])[:5]:
            print(f"    {name}: {value:.3g}", file=sys.stderr)


def _PrintGeneral(result, out) -> None:
    f = result.figures
    length = f["units"].get("length", "m")
    duration = f["units"].get("time", "s")
    print(f"results: {out}")
    print(
        f"  {f['solver']}: {f['solver_status']}; {f['solve_time_s']:.1f} s; "
        f"{f['num_variables']} variables"
    )
    if f["problem"] == "gait":
        print(
            f"  distance per cycle {f['distance_per_cycle']:.4g} {length} in "
            f"{f['period']:g} {duration}"
        )
        name = "distance_per_cycle"
    else:
        print(f"  apex {f['apex_height']:.4g} {length} above standing")
        if "flight_knots" in f:
            print(f"  flight: {f['flight_knots']} knots with every contact off the ground")
        name = "apex_height"
    print(
        f"  true complementarity {f['true_complementarity']:.2e}, dynamics residual "
        f"{f['dynamics_residual']:.2e}, constraint violation {f['max_violation']:.2e}"
    )
    if f"resimulated_{name}" in f:
        what = "distance per cycle" if name == "distance_per_cycle" else "apex"
        print(
            f"  Drake closed loop, {f['tracked_cycles']} cycle(s): {what} "
            f"{f[f'resimulated_{name}']:.4g} {length} ({100 * f['resimulation_error']:.0f} % "
            f"from the plan), base off the plan by at most {f['tracked_base_error_max']:.3g} "
            f"{length} (tolerance {f['tracked_base_error_tolerance']:.3g} {length}), "
            f"{'fell' if f['tracked_fell'] else 'no fall'}"
        )
    if not result.success:
        print(f"  did not reach its goal: {result.reason}", file=sys.stderr)


def main(argv=None):  # pragma: no cover - convenience for `python -m drakebots.cli.optimize`
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    register(sub)
    args = parser.parse_args(argv)
    return args.func(args)
