"""Optimize HAMR-VI motions by variational contact-implicit trajectory optimization.

Subcommands (hamr-contact-implicit.txt, Sec. III):
  hamr-gait   a periodic gait at a stride frequency on a surface: maximise the distance per
              stride (Eq. 16), warm-started from the last stride of a simulated open-loop trot
  hamr-jump   a vertical jump from rest to a goal apex height (Eq. 17), warm-started from a
              simulated crouch-and-push

The transcription (drakebots.optimization.contact_implicit) is the paper's Eq. 15: midpoint
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
  drakebots optimize hamr-gait --frequency 10 --surface cardstock --out runs/gait10
  drakebots optimize hamr-jump --height 12 --out runs/jump
  drakebots optimize hamr-gait --frequency 2 --surface teflon --solver ipopt --out runs/gait2_ipopt
  drakebots optimize hamr-gait --frequency 10 --knots 11 --iterations 20 --out runs/tiny

Exit 1 when the solver fails or the solution misses the true complementarity or feasibility
tolerances: the folder then holds the best iterate, the solver status and the most violated
constraints by name.
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


def register(subparsers):
    parser = AddVerb(subparsers, "optimize", __doc__)
    problems = parser.add_subparsers(dest="problem", metavar="PROBLEM")
    problems.required = True
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
    from drakebots.results import CheckOutputFolder, DefaultOutput

    config = CheckArgs(args)
    out = Path(args.out) if args.out else DefaultOutput("optimize", args.problem)
    reads = [args.config] if args.config else []
    CheckOutputFolder(out, args.force, reads=reads)
    workflow = OptimizeGait if args.problem == "hamr-gait" else OptimizeJump
    progress = CliProgress(quiet=args.quiet)
    result = workflow(config, progress=progress)
    progress.Close()
    final = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    _Print(result, final)
    return 0 if result.success else 1


def _Print(result, out) -> None:
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


def main(argv=None):  # pragma: no cover - convenience for `python -m drakebots.cli.optimize`
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    register(sub)
    args = parser.parse_args(argv)
    return args.func(args)
