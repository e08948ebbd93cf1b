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
within +-pi/4, and a free stride time within +-10 %. --solver auto (default) uses SNOPT for
programs up to 2000 variables and IPOPT above (the full gaits and jump): measured on the 10 Hz
gait, SNOPT's first QP subproblem alone takes about 60 s CPU and each later major iteration about
17 s, against about 1 s per IPOPT iteration.

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
import time
from pathlib import Path

import numpy as np

from drakebots.cli import AddOutputArguments, AddVerb
from drakebots.errors import InputError

SURFACES = ("teflon", "cardstock", "sandpaper")


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
    gait.add_argument("--frequency", type=float, required=True, help="stride frequency, Hz (> 0)")
    gait.add_argument("--surface", default="cardstock", help=f"one of {', '.join(SURFACES)}")
    gait.add_argument("--goal", type=float, default=10.0, help="goal distance per stride, mm")
    gait.add_argument("--knots", type=int, default=51, help="knots N (the authors: 51)")
    gait.add_argument(
        "--warm-start",
        default="auto",
        help="variational (the transcription's own dynamics), drake (SAP simulation), or auto "
        "(default, ours: variational, then drake if that solve is not acceptable)",
    )
    gait.add_argument(
        "--scuff-weight",
        type=float,
        default=None,
        help="weight of the foot-scuff cost per mm^2 of tangential foot displacement near the "
        "ground (not in the paper; 0 turns it off; default from GaitSettings)",
    )
    gait.add_argument(
        "--scuff-height",
        type=float,
        default=None,
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
        "--height", type=float, required=True, help="goal apex height above standing, mm"
    )
    jump.add_argument("--surface", default="cardstock", help=f"one of {', '.join(SURFACES)}")
    jump.add_argument("--knots", type=int, default=31, help="knots N (the authors: 31)")
    jump.add_argument("--duration", type=float, default=70.0, help="planned duration, ms")
    for sub in (gait, jump):
        sub.add_argument(
            "--solver",
            default="auto",
            help="snopt, ipopt, or auto (default): SNOPT up to 2000 variables, IPOPT above "
            "(SNOPT's QP subproblems cost ~17 s CPU per major iteration on the 5588-variable "
            "gait, IPOPT ~1 s per iteration; see scripts/bench_contact_implicit.py)",
        )
        sub.add_argument(
            "--iterations", type=int, default=0, help="major iteration limit (0: config)"
        )
        sub.add_argument(
            "--friction-directions",
            type=int,
            default=4,
            help="edges of the friction pyramid (Eq. 13; default 4 as the authors; 8 keeps plans "
            "from sliding loaded feet along the 4-edge pyramid's diagonal, where Eq. 13 leaves "
            "the friction direction free)",
        )
        sub.add_argument(
            "--first-stage-iterations",
            type=int,
            default=FIRST_STAGE_ITERATIONS,
            help="iteration budget of the paper's relaxed problem before the true-complementarity "
            f"stage (default {FIRST_STAGE_ITERATIONS}; 0: the major iteration limit)",
        )
        sub.add_argument(
            "--second-stage",
            choices=("proximal", "fixed-modes"),
            default="proximal",
            help="how the relaxed answer is made exactly complementary: proximal (default; the "
            "nearest point with the slack at 1e-6) or fixed-modes (the contact modes read off "
            "and fixed: about 2x faster on the 10 Hz gait, but no contact may change mode and "
            "the 2 Hz plans walk 12-18 %% less; README)",
        )
        sub.add_argument(
            "--config",
            default=None,
            help="YAML file with `solver:` (SolverConfig) and `settings:` (GaitSettings or "
            "JumpSettings) keys",
        )
        sub.add_argument("--quiet", action="store_true", help="no progress lines")
        AddOutputArguments(sub)
        sub.set_defaults(func=Run)
    parser.set_defaults(func=Run)
    return parser


def _LoadConfig(args):
    """(SolverConfig, settings, requested solver) from --config and the command line;
    InputError on mistakes. The requested solver is --solver, or the file's solver.solver when
    --solver is auto (the command line wins); "auto" when neither names one."""
    from drakebots.config import LoadTypedYaml
    from drakebots.hamr.trajopt import GaitSettings, JumpSettings
    from drakebots.optimization.contact_implicit import SolverAvailable, SolverConfig

    settings = GaitSettings() if args.problem == "hamr-gait" else JumpSettings()
    solver = SolverConfig()
    requested, source = args.solver, "--solver"
    if args.config:
        import dataclasses

        import yaml

        path = Path(args.config)
        if not path.is_file():
            raise InputError(f"--config {args.config}: file not found")
        data = yaml.safe_load(path.read_text()) or {}
        unknown = set(data) - {"solver", "settings"}
        if unknown:
            raise InputError(
                f"--config {args.config}: unknown keys {sorted(unknown)} (known: solver, settings)"
            )
        if "solver" in data:
            solver = LoadTypedYaml(
                SolverConfig, data=yaml.safe_dump(data["solver"]), defaults=solver
            )
            # A solver the file names is a request, as --solver is (the command line wins).
            if isinstance(data["solver"], dict) and "solver" in data["solver"]:
                if requested == "auto":
                    requested = solver.solver
                    source = f"--config {args.config}: solver.solver"
        if "settings" in data:
            settings = LoadTypedYaml(
                type(settings), data=yaml.safe_dump(data["settings"]), defaults=settings
            )
        del dataclasses
    if requested != "auto":
        solver.solver = requested
        ok, reason = SolverAvailable(requested)
        if not ok:
            raise InputError(f"{source} {requested}: {reason}")
    else:
        for name in ("snopt", "ipopt"):
            ok, reason = SolverAvailable(name)
            if not ok:
                raise InputError(f"--solver auto: {reason}")
    if args.iterations:
        if args.iterations < 1:
            raise InputError(f"--iterations {args.iterations}: must be >= 1")
        solver.major_iterations = args.iterations
    if args.friction_directions < 3:
        raise InputError(f"--friction-directions {args.friction_directions}: need at least 3")
    if args.first_stage_iterations < 0:
        raise InputError(f"--first-stage-iterations {args.first_stage_iterations}: must be >= 0")
    if args.knots < 3:
        raise InputError(f"--knots {args.knots}: need at least 3")
    settings.num_knots = args.knots
    if getattr(args, "scuff_weight", None) is not None:
        if not args.scuff_weight >= 0:
            raise InputError(f"--scuff-weight {args.scuff_weight}: must be >= 0")
        settings.scuff_weight = args.scuff_weight
    if getattr(args, "scuff_height", None) is not None:
        if not args.scuff_height > 0:
            raise InputError(f"--scuff-height {args.scuff_height}: must be > 0 mm")
        settings.scuff_height = args.scuff_height
    return solver, settings, requested


def Validate(args) -> None:
    """Every input check, before anything is written (exit 2)."""
    if args.surface not in SURFACES:
        raise InputError(
            f"--surface {args.surface}: unknown surface; valid surfaces: {', '.join(SURFACES)}"
        )
    if args.problem == "hamr-gait":
        if not (np.isfinite(args.frequency) and args.frequency > 0):
            raise InputError(f"--frequency {args.frequency}: must be > 0 Hz")
        if args.warm_start not in ("auto", "variational", "drake"):
            raise InputError(f"--warm-start {args.warm_start}: use auto, variational or drake")
        if not np.isfinite(args.goal) or args.goal <= 0:
            raise InputError(f"--goal {args.goal}: must be > 0 mm")
    else:
        if not (np.isfinite(args.height) and args.height > 0):
            raise InputError(f"--height {args.height}: must be > 0 mm")
        if not (np.isfinite(args.duration) and args.duration > 0):
            raise InputError(f"--duration {args.duration}: must be > 0 ms")


# The first stage's budget. IPOPT stalls after ~100-200 iterations (SolveHamrProblem); with the
# warm starts kept on their bounds (WARM_START_BOUND_PUSH) 100 against 150 measured 0.55-1.06
# times the CPU over the nine 21-knot gaits (median 55.6 against 64.6 s), the final objective
# 0.66-1.32 times, 9.10-9.72 against 9.15-10.06 mm/cycle; the jump 26.6 against 33.8 s.
FIRST_STAGE_ITERATIONS = 100
AUTO_SNOPT_LIMIT = 2000  # variables: SNOPT's QP subproblems get slow beyond (measured)


def ChooseSolver(requested: str, num_variables: int) -> str:
    """The solver for --solver auto: SNOPT for small programs, IPOPT for large ones."""
    if requested != "auto":
        return requested
    return "snopt" if num_variables <= AUTO_SNOPT_LIMIT else "ipopt"


class _Progress:
    """Prints a line every few seconds while the solver runs (stderr)."""

    def __init__(self, enabled: bool, label: str, period: float = 10.0):
        self.enabled = enabled
        self.label = label
        self.period = period
        self.start = time.perf_counter()
        self.last = self.start

    def __call__(self, evaluations: int):
        now = time.perf_counter()
        if self.enabled and now - self.last >= self.period:
            self.last = now
            print(
                f"  {self.label}: {now - self.start:6.0f} s, {evaluations} dynamics evaluations",
                file=sys.stderr,
                flush=True,
            )


def Run(args) -> int:
    from drakebots.cli._optimize_hamr import Evaluate
    from drakebots.results import CheckOutputFolder, DefaultOutput

    Validate(args)
    solver_config, settings, requested = _LoadConfig(args)
    out = Path(args.out) if args.out else DefaultOutput("optimize", args.problem)
    CheckOutputFolder(out, args.force)
    from drakebots.hamr import trajopt as ht

    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    model = ht.MakeHamrTrajoptModel(args.surface, friction_directions=args.friction_directions)
    start = time.perf_counter()
    attempts = None
    if args.problem == "hamr-gait":
        label = f"hamr-gait {args.frequency:g} Hz {args.surface}"
    else:
        label = f"hamr-jump {args.height:g} mm"

    def Prepare(problem) -> None:
        """Before a solve: the solver for its size (--solver auto), and the progress display."""
        solver_config.solver = ChooseSolver(requested, problem.prog.num_vars())
        say(
            f"solving with {solver_config.solver}: {problem.prog.num_vars()} variables, "
            f"{len(problem.prog.GetAllConstraints())} constraint bindings"
        )
        model.dynamics.progress = _Progress(not args.quiet, label)

    if args.problem == "hamr-gait":
        settings.goal_distance = args.goal
        solve = ht.SolveHamrGait(
            model,
            args.frequency,
            settings,
            solver_config,
            warm_start=args.warm_start,
            first_stage_iterations=args.first_stage_iterations or None,
            second_stage=args.second_stage,
            say=say,
            prepare=Prepare,
        )
        warm, problem, outcome, attempts = solve.warm, solve.problem, solve.outcome, solve.attempts
        warm_time = solve.warm_time_s
    else:
        settings.height = args.height
        settings.duration = args.duration
        say(f"warm start: simulating an open-loop crouch-and-push jump ({args.duration:g} ms)")
        warm = ht.JumpWarmStart(model, args.duration, settings.num_knots)
        say(
            f"  apex {warm.apex_height_mm:.2f} mm above standing "
            f"({time.perf_counter() - start:.0f} s)"
        )
        problem = ht.MakeHamrJumpProblem(model, warm, settings)
        warm_time = time.perf_counter() - start
        Prepare(problem)
        outcome = ht.SolveHamrProblem(
            problem,
            solver_config,
            first_stage_iterations=args.first_stage_iterations or None,
            second_stage=args.second_stage,
        )
    report = Evaluate(
        model,
        problem,
        outcome,
        args.problem,
        settings=settings,
        frequency=getattr(args, "frequency", None),
    )
    say(f"  {outcome.status}; {outcome.solve_time_s:.1f} s")
    report["solver_requested"] = requested
    if attempts is not None:
        report["figures"]["warm_start_attempts"] = attempts
        report["figures"]["solve_time_all_attempts_s"] = solve.solve_time_s
    return _WriteResults(
        args, out, model, problem, warm, outcome, report, solver_config, settings, warm_time
    )


def SolverLog(outcome) -> str:
    """The solver's own log of every stage of a SolveHamrProblem outcome (IPOPT's iterations
    and timing, SNOPT's print file), each under a header with the stage's status and seconds."""
    parts = [
        f"===== stage {i + 1}: {name} ({seconds:.1f} s) =====\n{log}"
        for i, ((name, seconds), log) in enumerate(zip(outcome.stages, outcome.stage_logs))
        if log
    ]
    return "\n".join(parts)


def _WriteResults(
    args, out, model, problem, warm, outcome, report, solver_config, settings, warm_time
) -> int:
    import dataclasses

    from drakebots.cli import Summary
    from drakebots.cli._optimize_hamr import SolutionArrays, SolutionFigures, SolutionReplay
    from drakebots.results import ResultsFolder

    inputs = {key: value for key, value in vars(args).items() if key not in ("func",)}
    failure = report["failure"]
    summary = Summary(
        "optimize",
        inputs,
        robot="hamr_vi",
        problem=args.problem,
        units={"length": "mm", "time": "ms", "mass": "g", "force": "N", "voltage": "V"},
        success=failure is None,
        reason=failure,
        solver=outcome.solver,
        solver_requested=report["solver_requested"],
        solver_status=outcome.status,
        solver_success=outcome.success,
        solve_time_s=outcome.solve_time_s,
        solve_cpu_time_s=getattr(outcome, "cpu_time_s", None),
        warm_start_time_s=warm_time,
        iterations=outcome.iterations,
        dynamics_evaluations=report["dynamics_evaluations"],
        num_variables=outcome.num_variables,
        num_constraints=outcome.num_constraints,
        num_constraint_rows=outcome.num_constraint_rows,
        warm_start={
            "source": warm.source,
            "velocity_mm_per_cycle": warm.velocity_mm_per_cycle,
            "apex_height_mm": warm.apex_height_mm,
        },
        solver_config=dataclasses.asdict(solver_config),
        settings=dataclasses.asdict(settings),
        **report["figures"],
    )
    traj = report["trajectory"]
    with ResultsFolder(out, force=args.force) as results:
        results.SaveNpz("solution.npz", SolutionArrays(model, problem, outcome, report))
        for name, figure in SolutionFigures(model, report, args.problem).items():
            results.SaveFigure(name, figure)
        results.WriteText("replay.html", SolutionReplay(model, report, args.problem))
        log = SolverLog(outcome)
        if log:
            results.WriteText("solver.log", log)
        results.WriteJson("summary.json", summary)
        results.Commit()
    figures = report["figures"]
    print(f"results: {results.final}")
    print(
        f"  {outcome.solver}: {outcome.status}; {outcome.solve_time_s:.1f} s; "
        f"{outcome.num_variables} variables"
    )
    if args.problem == "hamr-gait":
        print(
            f"  distance per cycle {figures['velocity_mm_per_cycle']:.2f} mm "
            f"(warm start {warm.velocity_mm_per_cycle:.2f} mm), slip {figures['slip']:.3f}, "
            f"stride {traj.times[-1]:.1f} ms"
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
    if failure:
        print(f"  did not reach its goal: {failure}", file=sys.stderr)
        for name, value in figures.get("most_violated_constraints", [])[:5]:
            print(f"    {name}: {value:.3g}", file=sys.stderr)
        return 1
    return 0


def main(argv=None):  # pragma: no cover - convenience for `python -m drakebots.cli.optimize`
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    register(sub)
    args = parser.parse_args(argv)
    return args.func(args)
