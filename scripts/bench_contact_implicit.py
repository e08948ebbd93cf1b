#!/usr/bin/env python3
"""Benchmark of the variational contact-implicit transcription (issue: HAMR-VI gaits and jump).

Two parts, each measured against references in the same run:

1. One evaluation of the discrete Euler-Lagrange (DEL) residual and its Jacobian at one knot
   (two midpoint intervals, loop and contact forces), three ways:
   - "double": the residual value only, from Drake's own double-precision multibody functions
     (CalcMassMatrix, CalcBiasTerm, CalcGravityGeneralizedForces, Jacobians), with dT/dq from
     the identity dT/dq = [d(M v)/dq] v - C(q, v) v whose first factor is a one-direction
     AutoDiff pass; the cost of a function value, no derivatives;
   - "autodiff+fd": the hybrid the issue names: the residual from Drake's functions, whose
     first-order term dT/dq comes from AutoDiffXd, differentiated by central differences (so
     the second derivatives d2T/dq2 and the Hessians of contact points and loop rows are
     differences of first derivatives; first-order terms are differenced too, which costs no
     more than AutoDiff with one direction per variable);
   - "analytic": drakebots' TreeLagrangian / VariationalDynamics (exact second derivatives by
     spatial algebra).
   The Jacobians are compared with central differences of the residual.
2. Solves of HAMR-VI gaits and the jump (SNOPT or IPOPT): wall and CPU seconds, variables,
   constraints, iterations (IPOPT) or function evaluations, against the paper's "several
   minutes" (taken as 180 s) and the 126 s of a C++ DIRCON solve of a Cassie squat.

Prints a table and writes runs/bench/contact_implicit.json (--out to change). The machine is
shared: CPU seconds are the fair figure; wall seconds are what a user waits.

    python scripts/bench_contact_implicit.py                 # kernels + 10 Hz gait + jump
    python scripts/bench_contact_implicit.py --solves none   # kernels only
    python scripts/bench_contact_implicit.py --solves all --solver ipopt
    python scripts/bench_contact_implicit.py --solves from:runs/reproduce_hamr   # reuse runs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

PAPER_SECONDS = 180.0  # "several minutes" (Sec. VI-C), taken as 3 minutes
DIRCON_SECONDS = 126.0  # a Drake C++ DIRCON solve of a Cassie squat (the reference)


def _Time(function, repeats: int) -> float:
    """Median CPU seconds of one call."""
    samples = []
    for _ in range(repeats):
        start = time.process_time()
        function()
        samples.append(time.process_time() - start)
    return float(np.median(samples))


# ------------------------------------------------------------------------ reference methods
class DrakeDel:
    """The DEL residual with Drake's own multibody functions (double and AutoDiff).

    Same equation as VariationalDynamics.DelResidual for an interior knot:
      r = (p-_k - p+_k)/(h s) + C(q_k)^T lam + sum_c J_c(q_k+1)^T f_c,
    p+- = M(q_mid) qdot_mid -+ (h/2) (dT/dq - dV/dq - b qdot + tau).
    """

    def __init__(self, dynamics, loop_jacobian=None):
        self.loop_jacobian = loop_jacobian
        self.dyn = dynamics
        self.plant = dynamics.plant
        self.ad_plant = self.plant.ToAutoDiffXd()
        self.ctx = self.plant.CreateDefaultContext()
        self.ad_ctx = self.ad_plant.CreateDefaultContext()
        self.lag = dynamics.lagrangian

    # ---- pieces, with the plant of a given scalar type
    def _Tq(self, q, v):
        """dT/dq = [d(Mv)/dq] v - C v: the first factor by a one-direction AutoDiff pass."""
        from pydrake.autodiffutils import ExtractGradient, InitializeAutoDiff

        plant, ctx = self.ad_plant, self.ad_ctx
        plant.SetPositions(ctx, InitializeAutoDiff(q, v.reshape(-1, 1)))
        Mv = plant.CalcMassMatrix(ctx) @ v
        Mdot_v = ExtractGradient(Mv).ravel()
        self.plant.SetPositions(self.ctx, q)
        self.plant.SetVelocities(self.ctx, v)
        return Mdot_v - self.plant.CalcBiasTerm(self.ctx)

    def _Vq(self, q):
        self.plant.SetPositions(self.ctx, q)
        gravity = self.plant.CalcGravityGeneralizedForces(self.ctx)
        return -gravity + self.lag.stiffness * (q - self.lag.nominal_positions)

    def _Mv(self, q, v):
        self.plant.SetPositions(self.ctx, q)
        return self.plant.CalcMassMatrix(self.ctx) @ v

    def _Momenta(self, q0, q1, u, h):
        qm, vm = 0.5 * (q0 + q1), (q1 - q0) / h
        tau, _, _ = self.dyn.actuation.Evaluate(qm, u)
        G = self._Tq(qm, vm) - self._Vq(qm) - self.lag.damping * vm + tau
        Mv = self._Mv(qm, vm)
        return Mv - 0.5 * h * G, Mv + 0.5 * h * G

    def _Forces(self, qk, qk1, lam, gamma, beta):
        from pydrake.multibody.tree import BodyIndex, JacobianWrtVariable

        plant, ctx = self.plant, self.ctx
        r = np.zeros(len(qk))
        if self.dyn.num_position_constraints:
            plant.SetPositions(ctx, qk)
            r += self._LoopJacobian(qk).T @ lam
        plant.SetPositions(ctx, qk1)
        if not self.dyn.num_contacts:
            return r
        forces = (
            np.asarray(gamma)[:, None] * self.dyn.normal
            + np.asarray(beta).reshape(self.dyn.num_contacts, -1) @ self.dyn.directions
        )
        for c, contact in enumerate(self.dyn.contacts):
            frame = plant.get_body(BodyIndex(contact.body_index)).body_frame()
            J = plant.CalcJacobianTranslationalVelocity(
                ctx,
                JacobianWrtVariable.kQDot,
                frame,
                contact.p_BC,
                plant.world_frame(),
                plant.world_frame(),
            )
            r += J.T @ forces[c]
        return r

    def _LoopJacobian(self, q):
        if self.loop_jacobian is not None:  # Drake's own (HamrLoopConstraints.Jacobian)
            return self.loop_jacobian(q)
        return self.dyn.position_constraints.Jacobian(self.lag.CalcKinematics(q))

    def Residual(self, x, layout):
        qa, qk, qk1, ua, uk, lam, gamma, beta, h = _Split(x, layout)
        _, p_minus = self._Momenta(qa, qk, ua, h)
        p_plus, _ = self._Momenta(qk, qk1, uk, h)
        s = self.dyn.force_scale
        return (p_minus - p_plus) / (h * s) + self._Forces(qk, qk1, lam, gamma, beta)

    def JacobianAutoDiffFd(self, x, layout, eps=1e-6):
        """Central differences of the Drake residual (whose dT/dq is an AutoDiff product)."""
        columns = np.zeros((layout["n"], len(x)))
        for j in range(len(x)):
            e = np.zeros(len(x))
            e[j] = eps
            columns[:, j] = (self.Residual(x + e, layout) - self.Residual(x - e, layout)) / (
                2 * eps
            )
        return columns


def _Split(x, layout):
    n, m, nl, nc, nd = layout["n"], layout["m"], layout["nl"], layout["nc"], layout["nd"]
    sizes = [n, n, n, m, m, nl, nc, nc * nd, 1]
    parts = np.split(x, np.cumsum(sizes)[:-1])
    qa, qk, qk1, ua, uk, lam, gamma, beta, h = parts
    return qa, qk, qk1, ua, uk, lam, gamma, beta, float(h[0])


def KernelBenchmark(name, dynamics, q, repeats=5, fd_repeats=1, seed=0, loop_jacobian=None):
    """Costs of one DEL value/Jacobian at a knot near q, three ways, and their accuracy."""
    rng = np.random.default_rng(seed)
    n, m = dynamics.num_positions, dynamics.num_inputs
    nl, nc, nd = dynamics.num_position_constraints, dynamics.num_contacts, dynamics.num_directions
    layout = {"n": n, "m": m, "nl": nl, "nc": nc, "nd": nd}
    h = 0.01
    qa, qk, qk1 = (q + 1e-3 * rng.standard_normal(n) for _ in range(3))
    x = np.concatenate(
        [
            qa,
            qk,
            qk1,
            100 + rng.uniform(-10, 10, m),
            100 + rng.uniform(-10, 10, m),
            rng.standard_normal(nl),
            rng.uniform(0.1, 1, nc),
            rng.uniform(0, 0.2, nc * nd),
            [h],
        ]
    )
    drake = DrakeDel(dynamics, loop_jacobian)

    def Analytic(jacobian=True):
        dynamics.ClearCaches()
        parts = _Split(x, layout)
        qa_, qk_, qk1_, ua_, uk_, lam_, g_, b_, h_ = parts
        r, blocks = dynamics.DelResidual(
            ("interval", qa_, qk_, ua_), qk_, qk1_, uk_, lam_, g_, b_, h_, jacobian=jacobian
        )
        if not jacobian:
            return r
        J = np.hstack(
            [
                blocks["q_a"],
                blocks["q_b"] + blocks["q_k"],
                blocks["q_k1"],
                blocks["u_a"],
                blocks["u_k"],
                blocks.get("lam", np.zeros((n, nl))),
                blocks.get("gamma", np.zeros((n, nc))),
                blocks.get("beta", np.zeros((n, nc * nd))),
                blocks["h"].reshape(n, 1),
            ]
        )
        return r, J

    r_analytic, J_analytic = Analytic()
    r_drake = drake.Residual(x, layout)
    t_double = _Time(lambda: drake.Residual(x, layout), repeats)
    t_value = _Time(lambda: Analytic(False), repeats)
    t_analytic = _Time(Analytic, repeats)
    start = time.process_time()
    J_hybrid = drake.JacobianAutoDiffFd(x, layout)
    t_hybrid = (time.process_time() - start) / fd_repeats

    # Reference: central differences of the analytic residual (step 1e-6).
    def Value(xx):
        dynamics.ClearCaches()
        qa_, qk_, qk1_, ua_, uk_, lam_, g_, b_, h_ = _Split(xx, layout)
        return dynamics.DelResidual(
            ("interval", qa_, qk_, ua_), qk_, qk1_, uk_, lam_, g_, b_, h_, jacobian=False
        )[0]

    J_fd = np.column_stack(
        [(Value(x + 1e-6 * e) - Value(x - 1e-6 * e)) / 2e-6 for e in np.eye(len(x))]
    )
    scale = max(1.0, np.abs(J_fd).max())
    return {
        "system": name,
        "num_positions": n,
        "binding_variables": len(x),
        "residual_agreement_drake_vs_analytic": float(np.max(np.abs(r_drake - r_analytic))),
        "double_value_s": t_double,
        "analytic_value_s": t_value,
        "analytic_jacobian_s": t_analytic,
        "autodiff_fd_jacobian_s": t_hybrid,
        "ratio_autodiff_fd_to_analytic": t_hybrid / t_analytic,
        "ratio_analytic_jacobian_to_double_value": t_analytic / t_double,
        "analytic_jacobian_error_vs_fd": float(np.max(np.abs(J_analytic - J_fd)) / scale),
        "autodiff_fd_jacobian_error_vs_fd": float(np.max(np.abs(J_hybrid - J_fd)) / scale),
    }


# ------------------------------------------------------------------------ systems
def DoublePendulumDynamics():
    from pydrake.math import RigidTransform
    from pydrake.multibody.plant import MultibodyPlant
    from pydrake.multibody.tree import FixedOffsetFrame, RevoluteJoint, SpatialInertia, UnitInertia

    from drakebots.optimization.tree_lagrangian import TreeLagrangian
    from drakebots.optimization.variational import VariationalDynamics

    plant = MultibodyPlant(0.0)
    parent, offset = plant.world_body(), RigidTransform()
    for i, (L, mass) in enumerate([(1.0, 1.0), (0.8, 0.7)]):
        G_Bo = UnitInertia.ThinRod(L, [0, 0, 1]).ShiftFromCenterOfMass([0, 0, L / 2])
        body = plant.AddRigidBody(f"link{i}", SpatialInertia(mass, [0, 0, -L / 2], G_Bo))
        frame = plant.AddFrame(FixedOffsetFrame(f"F{i}", parent.body_frame(), offset))
        plant.AddJoint(RevoluteJoint(f"joint{i}", frame, body.body_frame(), [0, 1, 0]))
        parent, offset = body, RigidTransform([0, 0, -L])
    plant.Finalize()
    return VariationalDynamics(TreeLagrangian(plant)), np.array([0.5, -0.3])


def Solves(
    which: list[str],
    solver: str,
    iterations: int,
    gait_knots: int = 51,
    second_stages: tuple[str, ...] = ("proximal",),
    budgets: tuple[int, ...] | None = None,
):
    from drakebots.hamr import trajopt as ht
    from drakebots.hamr.trajopt_report import Objective
    from drakebots.hamr.workflows import FIRST_STAGE_ITERATIONS
    from drakebots.optimization.contact_implicit import (
        CheckContactImplicitSolution,
        ReconstructTrajectory,
        SolverConfig,
    )

    budgets = budgets or (FIRST_STAGE_ITERATIONS,)
    rows = []
    variants = [(c, s, b) for c in which for s in second_stages for b in budgets]
    for case, second_stage, budget in variants:
        kind, _, rest = case.partition(":")
        surface = rest.split("@")[1] if "@" in rest else "cardstock"
        model = ht.MakeHamrTrajoptModel(surface)
        config = SolverConfig(solver=solver, major_iterations=iterations)
        start = time.perf_counter()
        attempts = None
        if kind == "gait":
            # As `drakebots optimize hamr-gait` solves it (the auto warm start's fallback).
            frequency = float(rest.split("@")[0])
            model.dynamics.evaluation_counts.clear()
            solve = ht.SolveHamrGait(
                model,
                frequency,
                ht.GaitSettings(num_knots=gait_knots),
                config,
                first_stage_iterations=budget,
                second_stage=second_stage,
            )
            problem, outcome, attempts = solve.problem, solve.outcome, solve.attempts
            warm_s = sum(a["warm_start_time_s"] for a in attempts)
            # Every attempt's solve counts (what a user waits for).
            wall, cpu = solve.solve_time_s, solve.cpu_time_s
        else:
            warm = ht.JumpWarmStart(model, 70.0, 31)
            problem = ht.MakeHamrJumpProblem(model, warm)
            warm_s = time.perf_counter() - start
            model.dynamics.evaluation_counts.clear()
            outcome = ht.SolveHamrProblem(
                problem, config, first_stage_iterations=budget, second_stage=second_stage
            )
            wall, cpu = outcome.solve_time_s, outcome.cpu_time_s
        x = outcome.result.get_x_val()
        check = CheckContactImplicitSolution(problem, x)
        traj = ReconstructTrajectory(problem, x)
        figure = (
            float(traj.q[-1, model.index["base_x"]] - traj.q[0, model.index["base_x"]])
            if kind == "gait"
            else float(np.max(traj.q[:, model.index["base_z"]]) - model.home[model.index["base_z"]])
        )
        rows.append(
            {
                "case": case,
                "attempts": attempts,
                "solver": solver,
                "second_stage": second_stage,
                "first_stage_iterations": budget,
                "variant": f"{second_stage}, first stage {budget}",
                # the program's own cost (Eq. 16/17 + slack penalty), not the repair's
                "objective": Objective(problem, x),
                "stages": outcome.stages,
                "status": outcome.status,
                "success": outcome.success,
                "wall_s": wall,
                "cpu_s": cpu,
                "warm_start_s": warm_s,
                "iterations": outcome.iterations,
                "dynamics_evaluation_rounds": model.dynamics.evaluation_counts["interval"]
                // max(1, problem.vars.num_intervals),
                "num_variables": outcome.num_variables,
                "num_constraint_bindings": outcome.num_constraints,
                "num_constraint_rows": outcome.num_constraint_rows,
                "max_violation": check.max_violation,
                "true_complementarity": check.max_complementarity_violation,
                "mm_per_cycle_or_apex_mm": figure,
                "ratio_to_paper_several_minutes": wall / PAPER_SECONDS,
                "cpu_ratio_to_paper": cpu / PAPER_SECONDS,
                "ratio_to_dircon_126s": wall / DIRCON_SECONDS,
            }
        )
        print(
            f"  {case:18s} {second_stage:9s} {budget:4d} {outcome.status[:40]:40s} "
            f"wall {wall:7.1f} s  cpu {cpu:7.1f} s  {figure:6.2f}"
            + (f"  ({len(attempts)} warm starts)" if attempts and len(attempts) > 1 else ""),
            flush=True,
        )
    return rows


def SolvesFromRuns(folder: Path) -> list[dict]:
    """Solve figures read from the summary.json of `drakebots optimize` results folders."""
    rows = []
    for summary_path in sorted(Path(folder).glob("*/summary.json")):
        s = json.loads(summary_path.read_text())
        if s.get("verb") != "optimize":
            continue
        inputs = s.get("inputs", {})
        if s.get("problem") == "hamr-gait":
            case = f"gait:{inputs.get('frequency'):g}@{inputs.get('surface')}"
            figure = s.get("velocity_mm_per_cycle")
        else:
            case = "jump"
            figure = s.get("apex_height_mm")
        wall, cpu = s.get("solve_time_s"), s.get("solve_cpu_time_s")
        rows.append(
            {
                "case": case,
                "folder": str(summary_path.parent),
                "solver": s.get("solver"),
                # (results folders from before the option solved with the proximal stage)
                "second_stage": inputs.get("second_stage", "proximal"),
                "first_stage_iterations": inputs.get("first_stage_iterations"),
                "variant": f"{inputs.get('second_stage', 'proximal')}, first stage "
                f"{inputs.get('first_stage_iterations')}",
                "status": s.get("solver_status"),
                "success": s.get("success"),
                "wall_s": wall,
                "cpu_s": cpu,
                "iterations": s.get("iterations"),
                "dynamics_evaluation_rounds": (s.get("dynamics_evaluations") or 0)
                // max(1, (s.get("settings") or {}).get("num_knots", 51) - 1),
                "num_variables": s.get("num_variables"),
                "num_constraint_bindings": s.get("num_constraints"),
                "num_constraint_rows": s.get("num_constraint_rows"),
                "max_violation": s.get("max_constraint_violation"),
                "true_complementarity": s.get("max_complementarity_violation"),
                "mm_per_cycle_or_apex_mm": figure,
                "ratio_to_paper_several_minutes": wall / PAPER_SECONDS if wall else None,
                "cpu_ratio_to_paper": cpu / PAPER_SECONDS if cpu else None,
                "ratio_to_dircon_126s": wall / DIRCON_SECONDS if wall else None,
            }
        )
        print(
            f"  {case:18s} {str(s.get('solver_status'))[:40]:40s} wall {wall or 0:7.1f} s  cpu "
            f"{cpu or 0:7.1f} s  {figure if figure is not None else float('nan'):6.2f}"
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="runs/bench/contact_implicit.json")
    parser.add_argument(
        "--solves",
        default="default",
        help="default (gait:10@cardstock, jump), all (nine gaits + jump), none, or "
        "a comma list like gait:2@teflon,jump",
    )
    parser.add_argument(
        "--solver",
        default="ipopt",
        help="snopt or ipopt (default: ipopt, as "
        "`drakebots optimize --solver auto` picks for these sizes)",
    )
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument(
        "--second-stage",
        default="proximal",
        help="the solves' second stage (SolveHamrProblem): proximal (default), fixed-modes, "
        "or a comma list: each case is solved with each, one after the other, and "
        "the medians are compared with the first's",
    )
    parser.add_argument(
        "--first-stage-iterations",
        default=None,
        help="the first stage's iteration budget (default: the CLI's), or a comma list: each "
        "case is solved with each (after each second stage), medians compared with the first",
    )
    parser.add_argument(
        "--gait-knots", type=int, default=51, help="knots per stride of fresh gait solves"
    )
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        threadpool_limits = None
    from drakebots.hamr import trajopt as ht

    limiter = threadpool_limits(1) if threadpool_limits else None
    print("DEL residual + Jacobian at one knot (CPU seconds per evaluation):")
    kernels = []
    pendulum, q_pendulum = DoublePendulumDynamics()
    kernels.append(KernelBenchmark("double pendulum (2 dof)", pendulum, q_pendulum, repeats=50))
    model = ht.MakeHamrTrajoptModel("cardstock")
    from drakebots.hamr.robot import HamrLoopConstraints

    loops = HamrLoopConstraints(model.plant)
    context = model.plant.CreateDefaultContext()

    def DrakeLoopJacobian(q):
        model.plant.SetPositions(context, q)
        return loops.Jacobian(model.plant, context)

    kernels.append(
        KernelBenchmark(
            "HAMR-VI (38 dof, 24 loops, 4 feet)",
            model.dynamics,
            model.home,
            repeats=10,
            loop_jacobian=DrakeLoopJacobian,
        )
    )
    print(
        f"{'system':36s} {'double value':>13s} {'AD+FD jac':>11s} {'analytic jac':>13s} "
        f"{'AD+FD/analytic':>15s} {'err analytic':>13s} {'err AD+FD':>10s}"
    )
    for k in kernels:
        print(
            f"{k['system']:36s} {k['double_value_s'] * 1e3:10.3f} ms "
            f"{k['autodiff_fd_jacobian_s'] * 1e3:8.1f} ms "
            f"{k['analytic_jacobian_s'] * 1e3:10.3f} ms "
            f"{k['ratio_autodiff_fd_to_analytic']:14.0f}x "
            f"{k['analytic_jacobian_error_vs_fd']:13.1e} "
            f"{k['autodiff_fd_jacobian_error_vs_fd']:10.1e}"
        )
    from_runs = args.solves.startswith("from:")
    if args.solves == "none" or from_runs:
        cases = []
    elif args.solves == "default":
        cases = ["gait:10@cardstock", "jump"]
    elif args.solves == "all":
        cases = [f"gait:{f}@{s}" for f in (2, 10, 30) for s in ("teflon", "cardstock", "sandpaper")]
        cases.append("jump")
    else:
        cases = args.solves.split(",")
    solves = []
    if from_runs:
        print(
            f"\nsolves read from {args.solves[5:]} (the paper: several minutes ~ "
            f"{PAPER_SECONDS:.0f} s; DIRCON Cassie squat {DIRCON_SECONDS:.0f} s):"
        )
        solves = SolvesFromRuns(Path(args.solves[5:]))
    if cases:
        print(
            f"\nsolves ({args.solver}; the paper: several minutes ~ {PAPER_SECONDS:.0f} s; DIRCON "
            f"Cassie squat {DIRCON_SECONDS:.0f} s):"
        )
        stages = tuple(args.second_stage.split(","))
        budgets = None
        if args.first_stage_iterations:
            budgets = tuple(int(b) for b in args.first_stage_iterations.split(","))
        solves = Solves(cases, args.solver, args.iterations, args.gait_knots, stages, budgets)
    # The first variant (second stage and first-stage budget) is the reference of the others.
    reference = solves[0]["variant"] if solves else None
    gaits = [r for r in solves if r["case"].startswith("gait")]
    gait_walls = [r["wall_s"] for r in gaits if r["variant"] == reference]
    gait_cpus = [r["cpu_s"] for r in gaits if r["variant"] == reference]
    by_variant = {}
    for r in gaits:
        by_variant.setdefault(r["variant"], []).append(r["cpu_s"])
    medians = {variant: float(np.median(cpus)) for variant, cpus in by_variant.items()}
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average": os.getloadavg(),
        },
        "kernels": kernels,
        "solves": solves,
        "median_gait_wall_s": float(np.median(gait_walls)) if gait_walls else None,
        "median_gait_cpu_s": float(np.median(gait_cpus)) if gait_cpus else None,
        "median_gait_cpu_s_by_variant": medians,
        "goal_median_gait_s": 60.0,
        "paper_seconds": PAPER_SECONDS,
        "dircon_seconds": DIRCON_SECONDS,
    }
    if gait_walls:
        print(
            f"\nmedian gait solve: wall {result['median_gait_wall_s']:.1f} s, CPU "
            f"{result['median_gait_cpu_s']:.1f} s (goal 60 s; load average "
            f"{os.getloadavg()[0]:.1f})"
        )
    for variant, median in medians.items():
        if variant != reference and medians.get(reference):
            print(
                f"median gait CPU with {reference}: {medians[reference]:.1f} s, "
                f"{variant}: {median:.1f} s (ratio {medians[reference] / median:.2f})"
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=float) + "\n")
    print(f"wrote {out}")
    del limiter
    return 0


if __name__ == "__main__":
    sys.exit(main())
