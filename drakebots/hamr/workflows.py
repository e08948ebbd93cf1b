"""HAMR-VI's workflows as Python calls (issue 46, DESIGN.md "Workflows: the Python API").

    from drakebots.hamr import JumpConfig, OptimizeJump
    from drakebots.optimization.contact_implicit import SolverConfig

    result = OptimizeJump(JumpConfig(height=12, knots=11, solver=SolverConfig(solver="ipopt")))
    result.success, result.figures["apex_height_mm"], result.q       # knots (N, 38)
    result.Save("runs/jump")                                        # what the CLI writes

- `OptimizeGait(GaitConfig) -> GaitResult`: a periodic gait by variational contact-implicit
  trajectory optimization (hamr-contact-implicit.txt Eq. 16; `drakebots optimize hamr-gait`).
- `OptimizeJump(JumpConfig) -> JumpResult`: a vertical jump (Eq. 17; `drakebots optimize
  hamr-jump`).
- `Track(TrackConfig) -> TrackResult`: a gait plan tracked in Drake's SAP simulation with the
  paper's estimator and PD law (Eqs. 19-22; `drakebots track`).
- `Modes(ModesConfig) -> ModesResult`: the standing robot's natural frequencies against the
  paper's (`drakebots hamr modes`).

The configs nest the existing ones (drakebots.optimization.contact_implicit.SolverConfig,
drakebots.hamr.trajopt.GaitSettings / JumpSettings, drakebots.hamr.tracking.TrackingConfig);
every config loads from YAML with drakebots.workflow.LoadConfig. Bad input raises InputError
naming the config field ("knots 2: need at least 3") before any work; nothing prints, nothing is
written until `result.Save(folder)`.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any

import numpy as np

from drakebots.errors import InputError
from drakebots.hamr.model import SURFACE_FRICTION
from drakebots.hamr.tracking import TrackingConfig
from drakebots.hamr.trajopt import SECOND_STAGES, GaitSettings, JumpSettings
from drakebots.optimization.contact_implicit import SolverConfig
from drakebots.workflow import Reporter, WorkflowResult

SURFACES = tuple(SURFACE_FRICTION)  # teflon, cardstock, sandpaper
WARM_STARTS = ("auto", "variational", "drake")
# The first stage's budget. IPOPT stalls after ~100-200 iterations (SolveHamrProblem); with the
# warm starts kept on their bounds (WARM_START_BOUND_PUSH) 100 against 150 measured 0.55-1.06
# times the CPU over the nine 21-knot gaits (median 55.6 against 64.6 s), the final objective
# 0.66-1.32 times, 9.10-9.72 against 9.15-10.06 mm/cycle; the jump 26.6 against 33.8 s.
FIRST_STAGE_ITERATIONS = 100
# The fast path's stages (SolverConfig(solver="fast")): with second derivatives its first stage
# has lowered the cost and most of the infeasibility by 40 iterations, and with the contact modes
# fixed the repair is an ordinary NLP it finishes in ~20-80 iterations (the proximal repair took
# 300-550 on the 2 Hz sandpaper gait); the fixed-mode plans walk 9.1-9.4 mm/cycle at 2 Hz, and
# the nine 51-knot gaits and the jump were all accepted so (scripts/bench_contact_implicit.py).
# The price: with the modes fixed after 40 iterations the 30 Hz cardstock and teflon plans walk
# 6.9-7.0 mm/cycle against 9.0-9.3 from Drake's IPOPT with 100 and the proximal repair (no
# distance is required at 30 Hz); second_stage "proximal" keeps the modes free.
FAST_FIRST_STAGE_ITERATIONS = 40
FAST_SECOND_STAGE = "fixed-modes"
AUTO_SNOPT_LIMIT = 2000  # variables: SNOPT's QP subproblems get slow beyond (measured)
TRAJOPT_UNITS = {"length": "mm", "time": "ms", "mass": "g", "force": "N", "voltage": "V"}
PROGRESS_PERIOD_S = 10.0  # seconds between the solver's progress lines


def _AutoSolver() -> SolverConfig:
    return SolverConfig(solver="auto")


def ChooseSolver(
    requested: str,
    num_variables: int,
    fast_available: bool | None = None,
    problem=None,
    hessian: str = "gauss-newton",
) -> str:
    """The solver for solver "auto" (the default): the fast path (SolverConfig(solver="fast"),
    IPOPT on the vectorised evaluators) when its IPOPT library loads and, given `problem`, it has
    an evaluator for every binding (contact_implicit_fast.FastPathSupport); otherwise Drake's
    SNOPT for programs up to AUTO_SNOPT_LIMIT variables and Drake's IPOPT above.

    Why the fast path: on the nine 51-knot gaits and the jump it reached the same acceptance
    (true complementarity, every binding within 1e-4) in a small fraction of Drake's IPOPT's time
    (scripts/bench_contact_implicit.py solves every case both ways). The fallback is explicit and
    by name: a program the fast path cannot evaluate (a binding the transcription's builders did
    not make, a model part without a vectorised evaluator) goes to Drake's solvers under "auto",
    and `solver: fast` asked by name refuses it (contact_implicit_fast.FastPathUnsupported, which
    names the binding). `solver: snopt` or `ipopt` always runs Drake's.
    """
    if requested != "auto":
        return requested
    if fast_available is None:
        if problem is not None:
            from drakebots.optimization.contact_implicit_fast import FastPathSupport

            fast_available = FastPathSupport(problem, hessian)[0]
        else:
            from drakebots.optimization.contact_implicit import SolverAvailable

            fast_available = SolverAvailable("fast")[0]
    if fast_available:
        return "fast"
    return "snopt" if num_variables <= AUTO_SNOPT_LIMIT else "ipopt"


def StageDefaults(solver: str) -> tuple[int, str]:
    """(first-stage iteration budget, second stage) of a solver when the config leaves them
    unset (None): the fast path's (FAST_FIRST_STAGE_ITERATIONS, FAST_SECOND_STAGE), or those
    Drake's SNOPT and IPOPT were tuned with (FIRST_STAGE_ITERATIONS, "proximal")."""
    if solver == "fast":
        return FAST_FIRST_STAGE_ITERATIONS, FAST_SECOND_STAGE
    return FIRST_STAGE_ITERATIONS, "proximal"


# ---------------------------------------------------------------------------- configs
@dataclasses.dataclass
class GaitConfig:
    """A periodic HAMR-VI gait (Eq. 16), as `drakebots optimize hamr-gait` takes it."""

    # Stride frequency, Hz (> 0).
    frequency: float = 10.0
    # Surface: teflon, cardstock or sandpaper (friction 0.29, 0.51, 1.02).
    surface: str = "cardstock"
    # Goal distance per stride, mm (sets settings.goal_distance).
    goal: float = 10.0
    # Knots N (the authors: 51; sets settings.num_knots).
    knots: int = 51
    # Warm start: "variational" (the transcription's own dynamics), "drake" (SAP simulation), or
    # "auto" (ours: variational, then drake if that solve is not acceptable).
    warm_start: str = "auto"
    # The NLP solver and its options; solver.solver "auto" (default) is the fast path when it
    # loads and can evaluate the program, else Drake's SNOPT up to AUTO_SNOPT_LIMIT variables and
    # Drake's IPOPT above (ChooseSolver); "fast", "snopt" or "ipopt" by name.
    solver: SolverConfig = dataclasses.field(default_factory=_AutoSolver)
    # Edges of the friction pyramid (Eq. 13; the authors: 4).
    friction_directions: int = 4
    # Iteration budget of the paper's relaxed problem before the true-complementarity stage
    # (0: the solver's major iteration limit; None: the solver's default, StageDefaults: 40
    # for the fast path, 100 for SNOPT/IPOPT).
    first_stage_iterations: int | None = None
    # How the relaxed answer is made exactly complementary: "proximal" or "fixed-modes"
    # (drakebots.hamr.trajopt.SolveHamrProblem; None: the solver's default, StageDefaults:
    # fixed-modes for the fast path, proximal for SNOPT/IPOPT).
    second_stage: str | None = None
    # Eq. 16's weights and the scuff cost (its num_knots and goal_distance come from knots and
    # goal above).
    settings: GaitSettings = dataclasses.field(default_factory=GaitSettings)

    def Check(self) -> None:
        """InputError naming the first bad field (e.g. "knots 2: need at least 3")."""
        _CheckTrajopt(self)

    def Settings(self) -> GaitSettings:
        """The settings the problem is built with."""
        return dataclasses.replace(
            self.settings, num_knots=int(self.knots), goal_distance=float(self.goal)
        )


@dataclasses.dataclass
class JumpConfig:
    """A HAMR-VI vertical jump (Eq. 17), as `drakebots optimize hamr-jump` takes it."""

    # Goal apex height above standing, mm (sets settings.height).
    height: float = 12.0
    # Surface: teflon, cardstock or sandpaper.
    surface: str = "cardstock"
    # Knots N (the authors: 31; sets settings.num_knots).
    knots: int = 31
    # Planned duration, ms (sets settings.duration).
    duration: float = 70.0
    # The NLP solver and its options; solver.solver "auto" as in GaitConfig.
    solver: SolverConfig = dataclasses.field(default_factory=_AutoSolver)
    # Edges of the friction pyramid (Eq. 13; the authors: 4).
    friction_directions: int = 4
    # Iteration budget of the relaxed problem (0: the solver's major iteration limit; None: the
    # solver's default, as in GaitConfig).
    first_stage_iterations: int | None = None
    # "proximal" or "fixed-modes" (drakebots.hamr.trajopt.SolveHamrProblem; None: the solver's
    # default, as in GaitConfig).
    second_stage: str | None = None
    # Eq. 17's weights (its num_knots, height and duration come from the fields above).
    settings: JumpSettings = dataclasses.field(default_factory=JumpSettings)

    def Check(self) -> None:
        """InputError naming the first bad field (e.g. "knots 2: need at least 3")."""
        _CheckTrajopt(self)

    def Settings(self) -> JumpSettings:
        """The settings the problem is built with."""
        return dataclasses.replace(
            self.settings,
            num_knots=int(self.knots),
            height=float(self.height),
            duration=float(self.duration),
        )


@dataclasses.dataclass
class TrackConfig:
    """A gait plan tracked in simulation, as `drakebots track` takes it."""

    # The plan: a results folder of OptimizeGait (`GaitResult.Save`) or `drakebots optimize
    # hamr-gait` (summary.json and solution.npz).
    plan: str = ""
    # The closed-loop run: strides, plant step, estimator, gains (Eq. 22).
    tracking: TrackingConfig = dataclasses.field(default_factory=TrackingConfig)

    def Check(self) -> None:
        """InputError naming the first bad field (the plan itself is read by Track)."""
        from drakebots.config import CheckTypes

        CheckTypes(self)
        if not str(self.plan):
            raise InputError("plan: none given (a results folder of OptimizeGait)")
        _CheckTracking(self.tracking)


@dataclasses.dataclass
class ModesConfig:
    """The standing robot's modes, as `drakebots hamr modes` takes it."""

    # Largest chassis displacement in the mode-shape plots and replay, mm (> 0).
    amplitude: float = 1.0
    # Share of a mode's kinetic energy in the chassis that makes it a body mode, in (0, 1).
    body_threshold: float = 0.3

    def Check(self) -> None:
        """InputError naming the first bad field."""
        from drakebots.config import CheckTypes

        CheckTypes(self)
        _Positive("amplitude", self.amplitude, "mm")
        if not 0.0 < self.body_threshold < 1.0:
            raise InputError(f"body_threshold {self.body_threshold}: must be in (0, 1)")


# ---------------------------------------------------------------------------- checks
# The longest motion one plan may span, ms, is drakebots.limits' "plan_time" bound (as the
# command line's --duration for optimize); the highest jump, mm, its "jump_height" bound (an
# absurd height is bad input, not a failed solve).


# The shortest time between two knots of a plan, ms: the command line's finest tracking step
# (drakebots.cli.WORK_FLOORS_BY_VERB), a 250th of the plant's 0.25 ms step.
MIN_KNOT_MS = 1e-3


def _Positive(name: str, value, unit: str = "") -> None:
    if not (np.isfinite(value) and value > 0):
        raise InputError(f"{name} {value}: must be > 0{' ' + unit if unit else ''}")


def _CheckSolver(solver: SolverConfig) -> None:
    """InputError if the requested solver is not available ("auto": the fast path, or else
    Drake's SNOPT and IPOPT, which it falls back to)."""
    from drakebots.optimization import contact_implicit

    requested = solver.solver
    names = (requested,)
    if requested == "auto":
        names = () if contact_implicit.SolverAvailable("fast")[0] else ("snopt", "ipopt")
    for name in names:
        ok, reason = contact_implicit.SolverAvailable(name)
        if not ok:
            raise InputError(f"solver.solver {requested}: {reason}")
    if solver.major_iterations < 1:
        raise InputError(f"solver.major_iterations {solver.major_iterations}: must be >= 1")


def _CheckTrajopt(config) -> None:
    """Every check of a GaitConfig or JumpConfig."""
    from drakebots.config import CheckTypes
    from drakebots.limits import CheckWork, Limit

    CheckTypes(config)
    CheckWork("knots", config.knots, "knots")
    if config.surface not in SURFACES:
        raise InputError(
            f"surface {config.surface}: unknown surface; valid surfaces: {', '.join(SURFACES)}"
        )
    if isinstance(config, GaitConfig):
        _Positive("frequency", config.frequency, "Hz")
        most = Limit("plan_time")
        if 1000.0 / config.frequency > most:  # 1e-300 Hz: a traceback allocating steps
            raise InputError(
                f"frequency {config.frequency:g} Hz: a stride of {1000.0 / config.frequency:.3g} "
                f"ms is longer than {most:g} ms, the longest motion one run may plan "
                f"(frequency >= {1000.0 / most:g} Hz; set DRAKEBOTS_MAX_PLAN_TIME to allow more)"
            )
        if config.warm_start not in WARM_STARTS:
            raise InputError(f"warm_start {config.warm_start}: use auto, variational or drake")
        _Positive("goal", config.goal, "mm")
        if not config.settings.scuff_weight >= 0:
            raise InputError(f"settings.scuff_weight {config.settings.scuff_weight}: must be >= 0")
        _Positive("settings.scuff_height", config.settings.scuff_height, "mm")
    else:
        _Positive("height", config.height, "mm")
        CheckWork("hamr_distance", config.height, "height")  # 1e308 mm ran the solver
        _Positive("duration", config.duration, "ms")
    if config.knots < 3:
        raise InputError(f"knots {config.knots}: need at least 3")
    knot_ms = config.duration / (config.knots - 1) if isinstance(config, JumpConfig) else None
    if knot_ms is not None and knot_ms < MIN_KNOT_MS:
        # 1e-300 ms divided by zero deep in the solver's set-up: a traceback (issue 68).
        raise InputError(
            f"duration {config.duration:g} ms: a knot every {knot_ms:.3g} ms, below "
            f"{MIN_KNOT_MS:g} ms, the finest step one plan may take"
        )
    if config.friction_directions < 3:
        raise InputError(f"friction_directions {config.friction_directions}: need at least 3")
    if config.first_stage_iterations is not None and config.first_stage_iterations < 0:
        raise InputError(f"first_stage_iterations {config.first_stage_iterations}: must be >= 0")
    if config.second_stage is not None and config.second_stage not in SECOND_STAGES:
        raise InputError(f"second_stage {config.second_stage}: use {' or '.join(SECOND_STAGES)}")
    _CheckSolver(config.solver)


# ---------------------------------------------------------------------------- trajopt
@dataclasses.dataclass
class TrajoptResult(WorkflowResult):
    """What OptimizeGait and OptimizeJump return (knot arrays in mm, ms, N, V).

    Attributes:
        times: (N,) knot times, ms.
        q: (N, 38) positions at the knots.
        u: (N-1, 8) drive voltages per interval, V.
        base_position, rpy: (N, 3) body position (mm) and roll, pitch, yaw (rad).
        feet_world, feet_body: (N, 4, 3) feet in the world and the body frame, mm.
        contact_forces: (N-1, 4, 3) contact forces, N (acting at knots 1..N-1).
        foot_heights: (N, 4) signed distances of the feet above the ground, mm.
        solution: solution.npz's arrays (every decision variable group, the above, names).
        warm_start: the WarmStart solved from.
        model, problem, outcome: the HamrTrajoptModel, the ContactImplicitProblem (program and
            variables) and the solver's SolveOutcome, for a user who goes on from them.
        report: drakebots.hamr.trajopt_report.Evaluate's report (check and trajectories).
    """

    times: np.ndarray
    q: np.ndarray
    u: np.ndarray
    base_position: np.ndarray
    rpy: np.ndarray
    feet_world: np.ndarray
    feet_body: np.ndarray
    contact_forces: np.ndarray
    foot_heights: np.ndarray
    solution: dict = dataclasses.field(repr=False)
    warm_start: Any = dataclasses.field(repr=False)
    model: Any = dataclasses.field(repr=False)
    problem: Any = dataclasses.field(repr=False)
    outcome: Any = dataclasses.field(repr=False)
    report: dict = dataclasses.field(repr=False)

    def _Write(self, results) -> None:
        from drakebots.hamr.trajopt_report import (
            SolutionFigures,
            SolutionReplay,
            SolverLog,
        )

        kind = self.figures["problem"]
        results.SaveNpz("solution.npz", self.solution)
        for name, figure in SolutionFigures(self.model, self.report, kind).items():
            results.SaveFigure(name, figure)
        results.WriteText("replay.html", SolutionReplay(self.model, self.report, kind))
        log = SolverLog(self.outcome)
        if log:
            results.WriteText("solver.log", log)


@dataclasses.dataclass
class GaitResult(TrajoptResult):
    """OptimizeGait's result (see TrajoptResult); figures["warm_start_attempts"] lists every
    warm start tried."""


@dataclasses.dataclass
class JumpResult(TrajoptResult):
    """OptimizeJump's result (see TrajoptResult)."""


class _SolverProgress:
    """The dynamics' evaluation counter as a progress line every PROGRESS_PERIOD_S seconds."""

    def __init__(self, reporter: Reporter, label: str):
        self.reporter, self.label = reporter, label
        self.start = self.last = time.perf_counter()

    def __call__(self, evaluations: int) -> None:
        now = time.perf_counter()
        if now - self.last >= PROGRESS_PERIOD_S:
            self.last = now
            self.reporter.Say(
                f"  {self.label}: {now - self.start:6.0f} s, {evaluations} dynamics evaluations"
            )


def _ResolveStages(config) -> None:
    """Sets a GaitConfig's or JumpConfig's unset stages (None) to the defaults of the solver
    that will run (StageDefaults; "auto" read as ChooseSolver reads it before a program exists:
    the fast path when its IPOPT loads), so that the result records what ran."""
    budget, second = StageDefaults(ChooseSolver(config.solver.solver, AUTO_SNOPT_LIMIT + 1))
    if config.first_stage_iterations is None:
        config.first_stage_iterations = budget
    if config.second_stage is None:
        config.second_stage = second


def _Preparer(model, solver: SolverConfig, requested: str, reporter: Reporter, label: str):
    """Before a solve: the solver for the program (solver "auto": ChooseSolver), and the
    progress lines. Under "auto" a program the fast path has no evaluator for falls back to
    Drake's solver for its size, said in a progress line (the stages already chosen stay: both
    run on Drake's solvers too)."""

    def Prepare(problem) -> None:
        hessian = solver.hessian
        solver.solver = ChooseSolver(
            requested, problem.prog.num_vars(), problem=problem, hessian=hessian
        )
        if requested == "auto" and solver.solver != "fast":
            from drakebots.optimization.contact_implicit_fast import FastPathSupport

            reason = FastPathSupport(problem, hessian)[1]
            reporter.Say(
                f"the fast path cannot solve this program ({reason}): Drake's {solver.solver}"
            )
        reporter.Say(
            f"solving with {solver.solver}: {problem.prog.num_vars()} variables, "
            f"{len(problem.prog.GetAllConstraints())} constraint bindings"
        )
        model.dynamics.progress = _SolverProgress(reporter, label)

    return Prepare


def OptimizeGait(config: GaitConfig, *, meshcat=None, progress=None) -> GaitResult:
    """Optimizes a periodic HAMR-VI gait (Eq. 16), warm-started from a simulated open-loop trot.

    Args:
        config: the gait, solver and settings (GaitConfig).
        meshcat: unused (the replay is part of the results folder); accepted as every
            workflow's.
        progress: a callable taking drakebots.workflow.ProgressEvent (warm start, solver, and a
            line every PROGRESS_PERIOD_S seconds of the solve).

    Returns:
        a GaitResult: success when the solver converged and the plan meets the feasibility and
        true-complementarity targets (drakebots.hamr.trajopt); otherwise `reason` names the
        failure and figures["most_violated_constraints"] the worst constraints.
    """
    from drakebots.hamr import trajopt as ht
    from drakebots.hamr.trajopt_report import Evaluate

    config.Check()
    config = copy.deepcopy(config)  # the result's record of what ran
    _ResolveStages(config)
    requested = config.solver.solver  # "auto": chosen per program (ChooseSolver)
    reporter = Reporter(progress)
    settings, solver = config.Settings(), copy.deepcopy(config.solver)
    model = ht.MakeHamrTrajoptModel(config.surface, friction_directions=config.friction_directions)
    label = f"hamr-gait {config.frequency:g} Hz {config.surface}"
    solve = ht.SolveHamrGait(
        model,
        config.frequency,
        settings,
        solver,
        warm_start=config.warm_start,
        first_stage_iterations=config.first_stage_iterations or None,
        second_stage=config.second_stage,
        say=reporter.Say,
        prepare=_Preparer(model, solver, requested, reporter, label),
    )
    report = Evaluate(
        model,
        solve.problem,
        solve.outcome,
        "hamr-gait",
        settings=settings,
        frequency=config.frequency,
    )
    reporter.Say(f"  {solve.outcome.status}; {solve.outcome.solve_time_s:.1f} s")
    report["figures"]["warm_start_attempts"] = solve.attempts
    report["figures"]["solve_time_all_attempts_s"] = solve.solve_time_s
    parts = dict(model=model, problem=solve.problem, warm=solve.warm, outcome=solve.outcome)
    return _TrajoptResult(
        GaitResult, config, report, solver, settings, requested, solve.warm_time_s, **parts
    )


def OptimizeJump(config: JumpConfig, *, meshcat=None, progress=None) -> JumpResult:
    """Optimizes a HAMR-VI vertical jump (Eq. 17) from rest to the goal apex height,
    warm-started from a simulated crouch-and-push.

    Args and returns as OptimizeGait (JumpConfig in, JumpResult out).
    """
    from drakebots.hamr import trajopt as ht
    from drakebots.hamr.trajopt_report import Evaluate

    config.Check()
    config = copy.deepcopy(config)  # the result's record of what ran
    _ResolveStages(config)
    requested = config.solver.solver  # "auto": chosen per program (ChooseSolver)
    reporter = Reporter(progress)
    settings, solver = config.Settings(), copy.deepcopy(config.solver)
    model = ht.MakeHamrTrajoptModel(config.surface, friction_directions=config.friction_directions)
    start = time.perf_counter()
    reporter.Say(
        f"warm start: simulating an open-loop crouch-and-push jump ({config.duration:g} ms)"
    )
    warm = ht.JumpWarmStart(
        model,
        config.duration,
        settings.num_knots,
        progress=lambda step, total: reporter.Step("warm-start steps", step, total),
    )
    reporter.Say(f"  apex {warm.apex_height_mm:.2f} mm above standing")
    problem = ht.MakeHamrJumpProblem(model, warm, settings)
    warm_time = time.perf_counter() - start
    _Preparer(model, solver, requested, reporter, f"hamr-jump {config.height:g} mm")(problem)
    outcome = ht.SolveHamrProblem(
        problem,
        solver,
        first_stage_iterations=config.first_stage_iterations or None,
        second_stage=config.second_stage,
    )
    report = Evaluate(model, problem, outcome, "hamr-jump", settings=settings)
    reporter.Say(f"  {outcome.status}; {outcome.solve_time_s:.1f} s")
    parts = dict(model=model, problem=problem, warm=warm, outcome=outcome)
    return _TrajoptResult(
        JumpResult, config, report, solver, settings, requested, warm_time, **parts
    )


def _TrajoptResult(
    cls, config, report, solver, settings, requested, warm_time, *, model, problem, warm, outcome
):
    """The result of a solve: summary.json's figures, the knot arrays and solution.npz's."""
    from drakebots.hamr.trajopt_report import SolutionArrays

    kind = "hamr-gait" if cls is GaitResult else "hamr-jump"
    failure = report["failure"]
    figures = dict(
        robot="hamr_vi",
        problem=kind,
        units=dict(TRAJOPT_UNITS),
        solver=outcome.solver,
        solver_requested=requested,
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
        solver_config=dataclasses.asdict(solver),
        settings=dataclasses.asdict(settings),
        **report["figures"],
    )
    traj = report["trajectory"]
    return cls(
        verb="optimize",
        config=config,
        success=failure is None,
        reason=failure,
        figures=figures,
        times=traj.times,
        q=traj.q,
        u=traj.u,
        base_position=traj.base_position,
        rpy=traj.rpy,
        feet_world=traj.feet_world,
        feet_body=traj.feet_body,
        contact_forces=traj.contact_forces,
        foot_heights=report["raw"].phi,
        solution=SolutionArrays(model, problem, outcome, report),
        warm_start=warm,
        model=model,
        problem=problem,
        outcome=outcome,
        report=report,
    )


# ---------------------------------------------------------------------------- track
@dataclasses.dataclass
class TrackResult(WorkflowResult):
    """What Track returns: the run's logs (log.npz; times in ms, lengths in mm, volts).

    Attributes:
        times: (T,) log times, ms.
        positions, velocities: (T, 38) the plant's state.
        voltages: (T, 8) applied drive voltages, V.
        legs_true, legs_estimated, legs_desired: (T, 8) x, z of each leg in the chassis frame
            (true, the estimator's, the plan's reference), mm.
        feet_world: (T, 4, 3) feet in the world, mm.
        contact: (T, 3) contact summary (drakebots.systems.simulation.ContactMonitor).
        loop_residual: (T,) the largest loop-closure residual, mm.
        wall_time: seconds the simulation took.
        plan, plan_summary: the plan's arrays (solution.npz) and its summary.json.
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    voltages: np.ndarray
    legs_true: np.ndarray
    legs_estimated: np.ndarray
    legs_desired: np.ndarray
    feet_world: np.ndarray
    contact: np.ndarray
    loop_residual: np.ndarray
    wall_time: float
    plan: dict = dataclasses.field(repr=False)
    plan_summary: dict = dataclasses.field(repr=False)

    def _Write(self, results) -> None:
        from drakebots.hamr.tracking_report import LOG_ARRAYS, TrackingPlots, TrackingReplay

        results.SaveNpz("log.npz", {name: getattr(self, name) for name in LOG_ARRAYS})
        cycles = self.config.tracking.cycles
        for name, figure in TrackingPlots(self, self.plan, self.figures, cycles).items():
            results.SaveFigure(name, figure)
        results.WriteText("replay.html", TrackingReplay(self))


def _CheckTracking(config: TrackingConfig) -> None:
    if config.cycles < 2:
        raise InputError(f"tracking.cycles {config.cycles}: need at least 2 (the first ramps up)")
    _Positive("tracking.time_step", config.time_step, "ms")
    if config.table_samples < 3:
        raise InputError(f"tracking.table_samples {config.table_samples}: need at least 3")
    if config.voltage_hold not in ("linear", "zero"):
        raise InputError(f"tracking.voltage_hold {config.voltage_hold}: use linear or zero")
    for name in ("k_heading", "k_heading_integral", "k_lateral"):
        value = getattr(config.gains, name)
        if not (np.isfinite(value) and value >= 0.0):
            raise InputError(f"tracking.gains.{name} {value}: must be >= 0")


def Track(config: TrackConfig, *, meshcat=None, progress=None) -> TrackResult:
    """Tracks an optimized gait, stride after stride, on Drake's SAP model of HAMR-VI with the
    paper's low-latency leg-position estimator (Eqs. 19-21) and PD law (Eq. 22).

    Args:
        config: the plan's results folder and the run (TrackConfig).
        meshcat: unused (the replay is part of the results folder).
        progress: a callable taking ProgressEvents (simulated milliseconds as steps).

    Returns:
        a TrackResult: success when the states stay finite and the realized distance per cycle
        is within 30 % of the plan's.
    """
    from drakebots.hamr.tracking import SimulateTracking
    from drakebots.hamr.tracking_report import LoadPlan, TrackingFailure, TrackingFigures

    config.Check()
    config = copy.deepcopy(config)  # the result's record of what ran
    summary, plan = LoadPlan(config.plan)
    reporter = Reporter(progress)
    surface = str(plan["surface"])
    times = plan["times"]
    # The run's steps and log samples, known once the plan's stride is (issue 68: 10 000 strides
    # at a 0.001 ms step are 1e9 steps).
    from drakebots.limits import CheckSimulation

    stride_ms = float(times[-1] - times[0])
    CheckSimulation(
        config.tracking.cycles * stride_ms,
        config.tracking.time_step,
        config.tracking.log_period,
        names=("tracking.cycles x the plan's stride", "tracking.time_step", "tracking.log_period"),
        unit="ms",
    )
    legs = plan["feet_body"][:, :, [0, 2]].reshape(len(times), -1)
    reporter.Say(
        f"tracking {config.plan} ({summary.get('frequency_hz')} Hz, {surface}) for "
        f"{config.tracking.cycles} strides"
    )
    run = SimulateTracking(
        times,
        plan["u"],
        legs,
        surface,
        config.tracking,
        progress=lambda t, total: reporter.Step("ms simulated", int(round(t)), int(round(total))),
    )
    figures = TrackingFigures(run, plan, summary, config.tracking)
    failure = TrackingFailure(run, figures)
    head = {
        "robot": "hamr_vi",
        "plan": str(config.plan),
        "surface": surface,
        "frequency_hz": summary.get("frequency_hz"),
        "config": dataclasses.asdict(config.tracking),
    }
    return TrackResult(
        verb="track",
        config=config,
        success=failure is None,
        reason=failure,
        figures={**head, **figures},
        **{field.name: getattr(run, field.name) for field in dataclasses.fields(run)},
        plan=plan,
        plan_summary=summary,
    )


# ---------------------------------------------------------------------------- modes
PAPER_FREQUENCIES_HZ = {"vertical (z)": 10.0, "roll": 30.0}
"""The paper's body natural frequencies (section III-A: "near the z-natural frequency (10 Hz)",
"near the roll natural frequency (30 Hz)"; "the body natural frequencies are between 10-30 Hz")."""

MODE_CASES = {
    "sliding": {"feet": "sliding", "stiffness_scale": None},
    "pinned": {"feet": "pinned", "stiffness_scale": None},
    "lift_x0.1": {"feet": "sliding", "stiffness_scale": {"lift_actuator": 0.1}},
}
"""The cases Modes analyses: feet free to slide (frictionless), feet stuck at their home points,
and sliding with the lift actuator springs scaled by 0.1 (the authors' `stiffness_mult`)."""

MODE_CASE_LABELS = {
    "sliding": "model, feet sliding",
    "pinned": "model, feet pinned",
    "lift_x0.1": "model, sliding, lift springs x0.1",
}


@dataclasses.dataclass
class ModesResult(WorkflowResult):
    """What Modes returns.

    Attributes:
        cases: {case name: drakebots.hamr.modes.HamrModes} (equilibrium, frequencies_hz,
            shapes, damping_ratio, labels, ...), for the cases of MODE_CASES.
        body_frequencies_hz: {case: {body motion: lowest frequency labelled so, Hz}}.
    """

    cases: dict = dataclasses.field(repr=False)
    body_frequencies_hz: dict

    def _Write(self, results) -> None:
        from drakebots.hamr.plots import PlotModeFrequencies

        rows = ["case,index,frequency_hz,damping_ratio,label,chassis_energy_fraction"]
        for name, result in self.cases.items():
            for record in _ModeRecords(result):
                rows.append(
                    f"{name},{record['index']},{record['frequency_hz']:.6g},"
                    f"{record['damping_ratio']:.4g},{record['label']},"
                    f"{record['chassis_energy_fraction']:.4f}"
                )
        results.WriteText("modes.csv", "\n".join(rows) + "\n")
        results.SaveNpz(
            "modes.npz",
            {
                f"{name}_{key}": getattr(result, key)
                for name, result in self.cases.items()
                for key in ("q_equilibrium", "frequencies_hz", "shapes", "damping_ratio")
            },
        )
        results.SaveFigure(
            "modes.png",
            PlotModeFrequencies(
                {MODE_CASE_LABELS[name]: v for name, v in self.body_frequencies_hz.items()},
                PAPER_FREQUENCIES_HZ,
            ),
        )
        _WriteModeShapes(results, self.cases["sliding"], self.config.amplitude)


def Modes(config: ModesConfig, *, meshcat=None, progress=None) -> ModesResult:
    """The standing HAMR-VI's equilibrium, natural frequencies and mode shapes in the cases of
    MODE_CASES, the body modes compared with the paper's ~10 Hz vertical and ~30 Hz roll.

    Args:
        config: plot amplitude and the body-mode threshold (ModesConfig).
        meshcat: unused (the replay is part of the results folder).
        progress: a callable taking ProgressEvents (one per case).
    """
    from drakebots.hamr.modes import AnalyseHamrModes

    config.Check()
    config = copy.deepcopy(config)  # the result's record of what ran
    reporter = Reporter(progress)
    cases = {}
    for k, (name, case) in enumerate(MODE_CASES.items()):
        reporter.Say(f"modes: {name}")
        cases[name] = AnalyseHamrModes(
            case["feet"],
            body_threshold=config.body_threshold,
            stiffness_scale=case["stiffness_scale"],
        )
        reporter.Step("cases", k + 1, len(MODE_CASES))
    body = {name: _BodyFrequencies(result) for name, result in cases.items()}
    nominal = body["sliding"]
    comparison = {}
    for motion, paper in PAPER_FREQUENCIES_HZ.items():
        model = nominal.get(motion)
        comparison[motion] = {
            "paper_hz": paper,
            "model_hz": model,
            "ratio_model_to_paper": None if model is None else model / paper,
            "model_hz_lift_x0.1": body["lift_x0.1"].get(motion),
        }
    figures = {
        "robot": "hamr_vi",
        "units": {"frequency": "Hz", "length": "mm", "force": "N"},
        "paper_comparison": comparison,
        "explanation": _Explanation(nominal, body["lift_x0.1"]),
        "cases": {name: _CaseSummary(name, result, body[name]) for name, result in cases.items()},
    }
    return ModesResult(
        verb="hamr modes",
        config=config,
        success=True,
        reason=None,
        figures=figures,
        cases=cases,
        body_frequencies_hz=body,
    )


def _CaseSummary(name: str, result, body: dict) -> dict:
    return {
        "feet": result.feet,
        "stiffness_scale": MODE_CASES[name]["stiffness_scale"],
        "equilibrium_body_height_mm": result.body_height,
        "sag_from_home_mm": 12.69 - result.body_height,
        "ground_reaction_n": {
            leg: [float(v) for v in result.foot_forces[j]]
            for j, leg in enumerate(("FL", "RL", "FR", "RR"))
        },
        "total_vertical_reaction_n": float(result.foot_forces[:, 2].sum()),
        "constraint_rank": result.constraint_rank,
        "degrees_of_freedom": int(result.shapes.shape[1]),
        "equilibrium_residual": result.gradient_residual,
        "body_mode_frequencies_hz": body,
        "modes": _ModeRecords(result),
    }


def _ModeRecords(result) -> list[dict]:
    records = []
    for k, frequency in enumerate(result.frequencies_hz):
        records.append(
            {
                "index": k,
                "frequency_hz": float(frequency),
                "damping_ratio": float(result.damping_ratio[k]),
                "label": result.labels[k],
                "chassis_energy_fraction": float(result.chassis_energy_fraction[k]),
                "body_motion_xyz_rpy": [float(v) for v in result.body_motion[k]],
            }
        )
    return records


def _BodyFrequencies(result) -> dict:
    """Lowest frequency of each body-motion label."""
    found = {}
    for frequency, label in zip(result.frequencies_hz, result.labels, strict=False):
        if label in ("leg", "free") or label in found:
            continue
        found[label] = float(frequency)
    return found


def _Explanation(body: dict, scaled: dict) -> str:
    vertical, roll = body.get("vertical (z)"), body.get("roll")
    text = [
        f"With the authors' nominal springs and the feet free to slide, the model's vertical "
        f"mode is {vertical:.1f} Hz and its roll mode {roll:.1f} Hz, against the paper's ~10 and "
        f"~30 Hz: {vertical / 10.0:.1f}x and {roll / 30.0:.1f}x higher, with nearly the paper's "
        f"ratio between them ({roll / vertical:.1f} vs 3). The body's vertical compliance is the "
        "lift actuators' spring (1.69 N/mm plus the bender's 0.39 N/mm) seen through the lift "
        "transmission (about 12.7 mm of foot height per mm of actuator travel): a stiffer path "
        "than the physical robot, whose 'unmodeled serial compliance in the transmissions' the "
        "paper itself names (section VI-C). The pseudo-rigid-body model has only the flexures' "
        "bending compliance; the real laminate also stretches and twists at each flexure and the "
        "actuators are clamped compliantly. The gap is the authors' model's, not a transcription "
        "error: their URDF, parsed by Drake with the same springs and the feet sliding, gives the "
        "same 28.66 (vertical), 40.35 (pitch) and 74.12 Hz (roll); with its URDF springs alone "
        "(no bender stiffness) 25.8, 36.3 and 67.5 Hz (models/hamr_vi/README.md)."
    ]
    if scaled:
        scaled_vertical = scaled.get("vertical (z)", float("nan"))
        scaled_roll = scaled.get("roll", float("nan"))
        text.append(
            " Scaling the lift actuator springs by 0.1, as the authors' own simulation scripts do "
            f"(stiffness_mult), brings the vertical mode to {scaled_vertical:.1f} Hz and roll to "
            f"{scaled_roll:.1f} Hz."
        )
    text.append(
        " With the feet stuck (pinned), the pseudo-rigid mechanism locks vertically: each leg "
        "moves its foot only in the x direction (swing) and in its y-z lift plane, so with all "
        "four feet fixed the chassis keeps just two motions (surge, and sway coupled with roll). "
        "That sway/roll mode (about 28 Hz) is the one close to the paper's ~30 Hz roll: on a "
        "surface with friction the feet stick, as they do in the pinned case."
    )
    return "".join(text)


def _WriteModeShapes(results, sliding, amplitude: float) -> None:
    """mode_shapes.png and replay.html: the sliding case's body modes and first leg mode, each
    animated for three cycles slowed to one cycle per second."""
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.hamr.plots import ModeScale, PlotModeShapes
    from drakebots.hamr.replay import HamrReplayDecorator
    from drakebots.hamr.robot import AddHamr
    from drakebots.robots import GetRobot
    from drakebots.visualization.replay import ReplayHtml

    plant = MultibodyPlant(time_step=0.0)
    AddHamr(plant)
    plant.Finalize()
    shown = []
    for motion in ("vertical (z)", "pitch", "roll"):
        k = sliding.BodyMode(motion)
        if k is not None:
            shown.append((motion, sliding.frequencies_hz[k], sliding.shapes[:, k]))
    leg = sliding.BodyMode("leg")
    if leg is not None:
        shown.append(("first leg mode", sliding.frequencies_hz[leg], sliding.shapes[:, leg]))
    results.SaveFigure(
        "mode_shapes.png",
        PlotModeShapes(
            plant,
            sliding.q_equilibrium,
            shown,
            amplitude_mm=amplitude,
            title="HAMR-VI standing, feet sliding: body modes (solid +, dashed -)",
        ),
    )
    times, positions = [], []
    context = plant.CreateDefaultContext()
    for _, _, shape in shown:
        scale = ModeScale(plant, context, sliding.q_equilibrium, shape, amplitude)
        t = np.linspace(0.0, 3.0, 91)[:-1]
        start = len(times) and times[-1][-1] + 1.0 / 30.0
        times.append(start + t)
        positions.append(sliding.q_equilibrium + scale * np.outer(np.sin(2 * np.pi * t), shape))
    html = ReplayHtml(
        GetRobot("hamr_vi"),
        np.concatenate(times),
        np.vstack(positions),
        decorator=HamrReplayDecorator(),
    )
    results.WriteText("replay.html", html)
