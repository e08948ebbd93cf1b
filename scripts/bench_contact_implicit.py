#!/usr/bin/env python3
"""Benchmark of the variational contact-implicit transcription: the fast path against Drake's.

Three parts, each measured against a reference in the same run:

1. One evaluation of the discrete Euler-Lagrange (DEL) residual and its Jacobian at one knot
   (two midpoint intervals, loop and contact forces), four ways:
   - "autodiff" (the reference timing for the Jacobian): the same residual and its Jacobian in
     one AutoDiffXd pass through Drake's plant, inputs seeded with the identity
     (DrakeDel.JacobianAutoDiff; the inner d(Mv)/dq v by a central difference, since Drake's
     AutoDiffXd is first order);
   - "double": the residual value only, from Drake's own double-precision multibody functions
     (CalcMassMatrix, CalcBiasTerm, CalcGravityGeneralizedForces, Jacobians), with dT/dq from
     the identity dT/dq = [d(M v)/dq] v - C(q, v) v whose first factor is a one-direction
     AutoDiff pass; the cost of a function value, no derivatives;
   - "autodiff+fd": the residual from Drake's functions differenced centrally;
   - "analytic": drakebots' TreeLagrangian / VariationalDynamics (exact second derivatives by
     spatial algebra).
2. One evaluation of the whole 51-knot gait program (every constraint, its Jacobian, and for
   the fast path the Hessian of the Lagrangian): Drake's way (each binding evaluated with
   AutoDiff inputs seeded with the identity, as its solver interfaces do) against the fast
   path's vectorised evaluators (drakebots.optimization.contact_implicit_fast).
3. Solves of the HAMR-VI gaits and the jump, each case solved by both paths from the same warm
   start, one after the other (so both see the machine's load alike):
   - drake: Drake's IPOPT (what `drakebots optimize --solver ipopt` runs, and --solver auto
     ran before the fast path): first stage of 100 iterations, proximal repair;
   - fast: SolverConfig(solver="fast") (--solver fast, and auto when its IPOPT loads): 40
     first-stage iterations, fixed contact modes (proximal repair if that plan is not
     acceptable).
   Per case and path: wall and CPU seconds of the solve (warm start excluded, as the CLI's
   solve_time_s), iterations and seconds per iteration, the split of IPOPT's time into
   function evaluations, linear algebra (the KKT factorizations and solves) and the rest (from
   IPOPT's timing statistics), and the acceptance: PlanAcceptable (every binding within 1e-4,
   true complementarity within 1e-4, checked by CheckContactImplicitSolution through Drake),
   >= 8 mm per cycle at 2 and 10 Hz, an apex >= 10 mm for the jump; with --track, the 2 and
   10 Hz cardstock plans tracked in Drake's SAP simulator (within 30 % of the plan).

Prints a table and writes runs/bench/contact_implicit.json (--out): per case `fast_s`,
`drake_s` (wall seconds), `iterations` and `accepted` (per path), and over the nine 51-knot
gaits `median_fast_s`, `median_drake_s` (and the CPU medians). The machine is shared: CPU
seconds are the fair figure, wall seconds what a user waits.

    python scripts/bench_contact_implicit.py                       # kernels + 10 Hz gait + jump
    python scripts/bench_contact_implicit.py --solves all --track  # the nine gaits + jump
    python scripts/bench_contact_implicit.py --solves gait:2@teflon --paths fast
    python scripts/bench_contact_implicit.py --solves none         # kernels only
    python scripts/bench_contact_implicit.py --solves all --drake-budget-s 1500

`--drake-budget-s` stops Drake's path (not the fast one) after that many wall seconds: the cases
it leaves are marked `drake_skipped` and its medians are over the cases it solved (listed as
`drake_gait_cases`). After the timed solves one more fast solve (`--profile`, default the 10 Hz
cardstock gait) runs under cProfile: the JSON's `profile` holds the shares of evaluation (the
Python callbacks), linear algebra (IPOPT's compiled time by its timing statistics' split) and
solver overhead (IPOPT's own and the Python around it), and the functions with the most own time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

PAPER_SECONDS = 180.0  # "several minutes" (Sec. VI-C), taken as 3 minutes
TARGET_MEDIAN_S = 10.0  # the median 51-knot gait solve on this 2-core machine (issue 51)
TARGET_JUMP_S = 3.0  # the 31-knot jump
MIN_MM_PER_CYCLE = 8.0  # at 2 and 10 Hz
MIN_APEX_MM = 10.0
GAITS = [f"gait:{f}@{s}" for f in (2, 10, 30) for s in ("teflon", "cardstock", "sandpaper")]


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

    def __init__(self, dynamics, loop_jacobian=None, loops=None):
        self.loop_jacobian = loop_jacobian
        self.loops = loops  # Drake-side loop constraints (Jacobian(plant, context)) for AutoDiff
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

        plant, ctx = self.plant, self.ctx
        r = np.zeros(len(qk))
        if self.dyn.num_position_constraints:
            plant.SetPositions(ctx, qk)
            r += self._LoopJacobian(qk).T @ lam
        if not self.dyn.num_contacts:
            return r
        return r + self._ContactForces(plant, ctx, qk1, gamma, beta)

    def _ContactForces(self, plant, ctx, q, gamma, beta):
        """sum_c J_c(q)^T f_c with Drake's contact-point Jacobians (plant of either scalar)."""
        from pydrake.multibody.tree import BodyIndex, JacobianWrtVariable

        plant.SetPositions(ctx, q)
        forces = (
            np.asarray(gamma)[:, None] * self.dyn.normal
            + np.asarray(beta).reshape(self.dyn.num_contacts, -1) @ self.dyn.directions
        )
        r = 0.0
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
            r = r + J.T @ forces[c]
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

    def JacobianAutoDiff(self, x, layout, eps=1e-5):
        """The residual and its Jacobian in one AutoDiffXd pass through Drake's functions, every
        input seeded with the identity (how Drake's solver interfaces differentiate a binding).

        Drake's AutoDiffXd is first order, and the residual already holds a first derivative of
        the kinetic energy (dT/dq = [d(M v)/dq] v - C v). Inside this pass the directional
        derivative [d(M v)/dq] v is a central difference of M along v (step eps: the only
        non-AutoDiff step); M, C v, the gravity forces and the loop and contact Jacobians are
        Drake's, evaluated on AutoDiffXd. The actuation (drakebots' piezo law, float only)
        enters through its value and its analytic Jacobians by the chain rule.
        """
        from pydrake.autodiffutils import ExtractGradient, ExtractValue, InitializeAutoDiff

        plant, ctx = self.ad_plant, self.ad_ctx
        qa, qk, qk1, ua, uk, lam, gamma, beta, h = _Split(InitializeAutoDiff(x).ravel(), layout)
        lag, dyn = self.lag, self.dyn

        def M(q):
            plant.SetPositions(ctx, q)
            return plant.CalcMassMatrix(ctx)

        def Tau(q, u):
            tau, tau_q, tau_u = dyn.actuation.Evaluate(
                ExtractValue(q).ravel(), ExtractValue(u).ravel()
            )
            grad = tau_q @ ExtractGradient(q)
            if len(u):
                grad = grad + tau_u @ ExtractGradient(u)
            return InitializeAutoDiff(tau, grad).ravel()

        def Momenta(q0, q1, u):
            qm, vm = 0.5 * (q0 + q1), (q1 - q0) / h
            Mdot_v = (M(qm + eps * vm) @ vm - M(qm - eps * vm) @ vm) / (2 * eps)
            Mv = M(qm) @ vm
            plant.SetVelocities(ctx, vm)
            Cv = plant.CalcBiasTerm(ctx)
            Vq = -plant.CalcGravityGeneralizedForces(ctx) + lag.stiffness * (
                qm - lag.nominal_positions
            )
            G = Mdot_v - Cv - Vq - lag.damping * vm + Tau(qm, u)
            return Mv - 0.5 * h * G, Mv + 0.5 * h * G

        _, p_minus = Momenta(qa, qk, ua)
        p_plus, _ = Momenta(qk, qk1, uk)
        r = (p_minus - p_plus) / (h * dyn.force_scale)
        if dyn.num_position_constraints:
            plant.SetPositions(ctx, qk)
            r = r + self.loops.Jacobian(plant, ctx).T @ lam
        if dyn.num_contacts:
            r = r + self._ContactForces(plant, ctx, qk1, gamma, beta)
        return ExtractValue(r).ravel(), ExtractGradient(r)

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
    return qa, qk, qk1, ua, uk, lam, gamma, beta, (h[0] if h.dtype == object else float(h[0]))


def KernelBenchmark(
    name, dynamics, q, repeats=5, fd_repeats=1, seed=0, loop_jacobian=None, loops=None
):
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
    drake = DrakeDel(dynamics, loop_jacobian, loops)

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
    r_ad, J_ad = drake.JacobianAutoDiff(x, layout)
    t_autodiff = _Time(lambda: drake.JacobianAutoDiff(x, layout), max(1, repeats // 5))
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
        "autodiff_one_pass_jacobian_s": t_autodiff,
        "ratio_autodiff_one_pass_to_analytic": t_autodiff / t_analytic,
        "autodiff_one_pass_workload": (
            "the same DEL residual (one interior knot: two midpoint intervals, loop and contact "
            "forces) and its Jacobian with respect to all the binding's variables, in one "
            "AutoDiffXd pass through Drake's MultibodyPlant (mass matrix, bias term, gravity, "
            "loop and contact Jacobians), inputs seeded with the identity; its inner directional "
            "derivative d(Mv)/dq v by a central difference (Drake's AutoDiffXd is first order)"
        ),
        "analytic_workload": "drakebots' TreeLagrangian/VariationalDynamics residual and Jacobian",
        "autodiff_fd_jacobian_s": t_hybrid,
        "ratio_autodiff_fd_to_analytic": t_hybrid / t_analytic,
        "ratio_analytic_jacobian_to_double_value": t_analytic / t_double,
        "analytic_jacobian_error_vs_fd": float(np.max(np.abs(J_analytic - J_fd)) / scale),
        "autodiff_fd_jacobian_error_vs_fd": float(np.max(np.abs(J_hybrid - J_fd)) / scale),
        "autodiff_one_pass_jacobian_error_vs_fd": float(np.max(np.abs(J_ad - J_fd)) / scale),
        "autodiff_one_pass_vs_analytic_jacobian": float(np.max(np.abs(J_ad - J_analytic)) / scale),
        "residual_agreement_autodiff_vs_analytic": float(np.max(np.abs(r_ad - r_analytic))),
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


def WholeProgramBenchmark(repeats: int = 3) -> dict:
    """One evaluation of the 51-knot 10 Hz cardstock gait program (from its warm start's
    neighbourhood): Drake's per-binding AutoDiff evaluation of every constraint's value and
    gradient (what its IPOPT and SNOPT interfaces do) against the fast path's values, Jacobian
    and (Gauss-Newton / exact) Hessian."""
    from pydrake.autodiffutils import InitializeAutoDiff

    from drakebots.hamr import trajopt as ht
    from drakebots.optimization.contact_implicit_fast import ContactImplicitNlp

    model = ht.MakeHamrTrajoptModel("cardstock")
    N = 51
    rng = np.random.default_rng(0)
    h = 100.0 / (N - 1)
    q = model.home + 1e-3 * rng.standard_normal((N, model.plant.num_positions()))
    warm = ht.WarmStart(q=q, u=np.full((N - 1, 8), 110.0), h=h, source="bench")
    problem = ht.MakeHamrGaitProblem(model, 10.0, warm, ht.GaitSettings(num_knots=N))
    prog = problem.prog
    x = prog.initial_guess()
    bindings = [
        (b, prog.FindDecisionVariableIndices(b.variables())) for b in prog.GetAllConstraints()
    ]

    def Drake():
        model.dynamics.ClearCaches()
        for binding, idx in bindings:
            binding.evaluator().Eval(InitializeAutoDiff(x[idx]))

    out = {"case": "gait 10 Hz cardstock, 51 knots", "num_variables": prog.num_vars()}
    out["drake_autodiff_values_and_gradients_s"] = _Time(Drake, repeats)
    y = rng.uniform(-1, 1, 1)
    for hessian in ("gauss-newton", "exact"):
        nlp = ContactImplicitNlp(problem, hessian=hessian)
        nlp.Prepare(x)
        y = rng.uniform(-1, 1, nlp.num_rows)
        shift = [0.0]

        def Values(nlp=nlp, shift=shift):
            shift[0] += 1e-9
            nlp.Constraints(x + shift[0])

        def Jacobian(nlp=nlp, shift=shift):
            shift[0] += 1e-9
            nlp.JacobianValues(x + shift[0])

        def Everything(nlp=nlp, y=y, shift=shift):
            shift[0] += 1e-9
            z = x + shift[0]
            nlp.Constraints(z)
            nlp.Gradient(z)
            nlp.JacobianValues(z)
            nlp.HessianValues(z, 1.0, y)

        out["fast_values_s"] = _Time(Values, 5 * repeats)
        out["fast_values_and_jacobian_s"] = _Time(Jacobian, 5 * repeats)
        out[f"fast_values_jacobian_hessian_{hessian}_s"] = _Time(Everything, 5 * repeats)
        out["jacobian_nonzeros"] = int(len(nlp.jacobian_structure[0]))
        out[f"hessian_nonzeros_{hessian}"] = int(len(nlp.hessian_structure[0]))
    out["ratio_drake_to_fast_jacobian"] = (
        out["drake_autodiff_values_and_gradients_s"] / out["fast_values_and_jacobian_s"]
    )
    return out


def _StageSplit(logs: list[str]) -> dict:
    """IPOPT's timing statistics summed over a solve's stages (wall and CPU seconds)."""
    from drakebots.optimization.contact_implicit_fast import IpoptProfile
    from drakebots.optimization.ipopt import _ParseTiming

    total = {}
    for log in logs:
        for key, value in IpoptProfile(_ParseTiming(log), _ParseTiming(log, 2)).items():
            total[key] = total.get(key, 0.0) + value
    return total


def _Track(model, problem, x, frequency: float, cycles: int = 10) -> dict:
    """The plan tracked in Drake's SAP model with the paper's estimator and PD law (as
    tests/hamr/test_trajopt.py): mean tracked mm per stride over the steady
    strides, and its ratio to the plan."""
    from drakebots.hamr import trajopt as ht
    from drakebots.hamr.tracking import SimulateTracking, TrackingConfig
    from drakebots.optimization.contact_implicit import ReconstructTrajectory

    traj = ReconstructTrajectory(problem, x)
    ix = model.index["base_x"]
    planned = float(traj.q[-1, ix] - traj.q[0, ix])
    knots = ht.HamrKnotTrajectory(model, traj.q, traj.u, traj.h)
    legs = knots.feet_body[:, :, [0, 2]].reshape(len(traj.q), -1)
    start = time.perf_counter()
    run = SimulateTracking(knots.times, traj.u, legs, model.surface, TrackingConfig(cycles=cycles))
    edges = np.interp(knots.times[-1] * np.arange(cycles + 1), run.times, run.positions[:, 0])
    tracked = float(np.mean(np.diff(edges)[2:]))
    return {
        "planned_mm_per_cycle": planned,
        "tracked_mm_per_cycle": tracked,
        "ratio": tracked / planned if planned else None,
        "within_30_percent": bool(0.7 * planned <= tracked <= 1.3 * planned),
        "simulation_s": time.perf_counter() - start,
        "frequency_hz": frequency,
    }


def _Record(model, kind, problem, outcome, solve, frequency) -> dict:
    """One path's figures for one case."""
    from drakebots.hamr import trajopt as ht
    from drakebots.hamr.trajopt_report import Objective
    from drakebots.optimization.contact_implicit import (
        CheckContactImplicitSolution,
        ReconstructTrajectory,
    )

    x = outcome.result.get_x_val()
    check = CheckContactImplicitSolution(problem, x)
    traj = ReconstructTrajectory(problem, x)
    if kind == "gait":
        ix = model.index["base_x"]
        figure = float(traj.q[-1, ix] - traj.q[0, ix])
        good_figure = figure >= MIN_MM_PER_CYCLE if frequency in (2.0, 10.0) else True
    else:
        iz = model.index["base_z"]
        rise = traj.q[-1, iz] - model.home[iz] + max(traj.qdot[-1, iz], 0) ** 2 / (2 * 9.81e-3)
        figure = float(max(np.max(traj.q[:, iz]) - model.home[iz], rise))
        good_figure = figure >= MIN_APEX_MM
    acceptable = bool(ht.PlanAcceptable(problem, outcome))
    wall = solve.solve_time_s if solve is not None else outcome.solve_time_s
    cpu = solve.cpu_time_s if solve is not None else outcome.cpu_time_s
    iterations = (
        sum(a["iterations"] or 0 for a in solve.attempts)
        if solve is not None
        else outcome.iterations
    )
    split = _StageSplit(getattr(outcome, "stage_logs", [outcome.log]))
    return {
        "solver": outcome.solver,
        "status": outcome.status,
        "stages": outcome.stages,
        "attempts": solve.attempts if solve is not None else None,
        "wall_s": wall,
        "cpu_s": cpu,
        "iterations": iterations,
        "wall_s_per_iteration": wall / max(iterations, 1),
        "cpu_s_per_iteration": cpu / max(iterations, 1),
        "time_split": split,
        "evaluation_share": split.get("evaluation_s", 0.0) / max(split.get("ipopt_s", 0), 1e-9),
        "linear_algebra_share": split.get("linear_algebra_s", 0.0)
        / max(split.get("ipopt_s", 0), 1e-9),
        "solver_other_share": split.get("solver_other_s", 0.0) / max(split.get("ipopt_s", 0), 1e-9),
        "outside_ipopt_s": max(wall - split.get("ipopt_s", 0.0), 0.0),
        "plan_acceptable": acceptable,
        "accepted": bool(acceptable and good_figure),
        "mm_per_cycle_or_apex_mm": figure,
        "objective": Objective(problem, x),
        "max_violation": check.max_violation,
        "true_complementarity": check.max_complementarity_violation,
        "max_dynamics_residual_N": check.max_dynamics_residual,
        "max_loop_residual_mm": check.max_loop_residual,
        "num_variables": outcome.num_variables,
        "num_constraint_rows": outcome.num_constraint_rows,
        "x": x,
    }


def Solves(
    cases: list[str],
    paths: list[str],
    track: bool,
    gait_knots: int = 51,
    drake_budget_s: float = 0.0,
    on_row=lambda rows: None,
) -> list[dict]:
    """Each case solved by each path from the same warm start. Once Drake's path has spent
    `drake_budget_s` wall seconds (0: no limit) it solves no further case: those rows say
    `drake_skipped` and carry no Drake figures. `on_row(rows)` runs after every case (the
    JSON is written as the run goes)."""
    from drakebots.hamr import trajopt as ht
    from drakebots.hamr.workflows import StageDefaults
    from drakebots.optimization.contact_implicit import SolverConfig

    configs = {
        # print_timing_statistics only adds IPOPT's timers to its log (the time split).
        "drake": SolverConfig(solver="ipopt", ipopt_options={"print_timing_statistics": "yes"}),
        "fast": SolverConfig(solver="fast"),
    }
    rows = []
    drake_spent = 0.0
    for case in cases:
        kind, _, rest = case.partition(":")
        surface = rest.split("@")[1] if "@" in rest else "cardstock"
        model = ht.MakeHamrTrajoptModel(surface)
        frequency = float(rest.split("@")[0]) if kind == "gait" else None
        row = {"case": case}
        warm_starts = {}
        start = time.perf_counter()
        jump_warm = ht.JumpWarmStart(model, 70.0, 31) if kind == "jump" else None
        warm_s = time.perf_counter() - start
        ran = []
        for path in paths:
            if path == "drake" and drake_budget_s and drake_spent >= drake_budget_s:
                row["drake_skipped"] = (
                    f"not solved: Drake's path had spent {drake_spent:.0f} s of its "
                    f"{drake_budget_s:.0f} s budget (--drake-budget-s)"
                )
                print(f"  {case:18s} drake {row['drake_skipped']}", flush=True)
                continue
            ran.append(path)
            config = configs[path]
            budget, second = StageDefaults("fast" if path == "fast" else "ipopt")
            if kind == "gait":
                start = time.perf_counter()
                solve = ht.SolveHamrGait(
                    model,
                    frequency,
                    ht.GaitSettings(num_knots=gait_knots),
                    config,
                    first_stage_iterations=budget,
                    second_stage=second,
                    warm_starts=warm_starts,
                )
                warm_s = max(warm_s, sum(a.get("warm_start_time_s", 0.0) for a in solve.attempts))
                problem, outcome = solve.problem, solve.outcome
            else:
                solve = None
                problem = ht.MakeHamrJumpProblem(model, dataclasses.replace(jump_warm))
                outcome = ht.SolveHamrProblem(
                    problem, config, first_stage_iterations=budget, second_stage=second
                )
            record = _Record(model, kind, problem, outcome, solve, frequency)
            if track and kind == "gait" and surface == "cardstock" and frequency in (2.0, 10.0):
                record["tracking"] = _Track(model, problem, record["x"], frequency)
            del record["x"]
            row[path] = record
            if path == "drake":
                drake_spent += record["wall_s"]
            print(
                f"  {case:18s} {path:5s} {record['status'][:44]:44s} wall {record['wall_s']:7.1f} s"
                f"  cpu {record['cpu_s']:7.1f} s  {record['iterations']:5d} it  "
                f"{record['mm_per_cycle_or_apex_mm']:6.2f}  "
                f"{'accepted' if record['accepted'] else 'NOT ACCEPTED'}"
                + (
                    f"  tracked {record['tracking']['ratio']:.2f} of the plan"
                    if "tracking" in record
                    else ""
                ),
                flush=True,
            )
        row["warm_start_s"] = warm_s
        for key in ("wall_s", "cpu_s"):
            short = "s" if key == "wall_s" else "cpu_s"
            for path in paths:
                row[f"{path}_{short}"] = row[path][key] if path in ran else None
        row["iterations"] = {path: row[path]["iterations"] for path in ran}
        row["s_per_iteration"] = {path: row[path]["wall_s_per_iteration"] for path in ran}
        row["accepted"] = {path: row[path]["accepted"] for path in ran}
        if "fast" in ran and "drake" in ran:
            row["speedup_wall"] = row["drake_s"] / row["fast_s"]
            row["speedup_cpu"] = row["drake_cpu_s"] / row["fast_cpu_s"]
        rows.append(row)
        on_row(rows)
    return rows


def Profile(case: str, gait_knots: int = 51, top: int = 15) -> dict:
    """One more fast-path solve of `case` under cProfile (after the timed ones: the profiler's
    overhead stays out of them): the share of the solve in the NLP's evaluations (the Python
    callbacks IPOPT calls), in IPOPT's compiled code (SolveIpopt's own time: the ctypes call
    into IPOPT, split into linear algebra and the rest by IPOPT's timing statistics), and in
    Python around it (stages, checks, building the program's evaluators); and the functions
    with the most own time."""
    import cProfile
    import pstats

    from drakebots.hamr import trajopt as ht
    from drakebots.hamr.workflows import StageDefaults
    from drakebots.optimization import ipopt
    from drakebots.optimization.contact_implicit import SolverConfig

    kind, _, rest = case.partition(":")
    surface = rest.split("@")[1] if "@" in rest else "cardstock"
    model = ht.MakeHamrTrajoptModel(surface)
    budget, second = StageDefaults("fast")
    if kind == "gait":
        frequency = float(rest.split("@")[0])
        warm = ht.GaitWarmStart(model, frequency, gait_knots, source="variational")
        problem = ht.MakeHamrGaitProblem(
            model, frequency, warm, ht.GaitSettings(num_knots=gait_knots)
        )
    else:
        problem = ht.MakeHamrJumpProblem(model, ht.JumpWarmStart(model, 70.0, 31))
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    outcome = ht.SolveHamrProblem(
        problem, SolverConfig(solver="fast"), first_stage_iterations=budget, second_stage=second
    )
    profiler.disable()
    total = time.perf_counter() - start
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (cc, nc, tt, ct, callers)
    source = str(Path(ipopt.__file__))
    callbacks = sum(
        ct
        for (file, _, name), (_, _, _, ct, _) in stats.items()
        if file == source and name == "Call"
    )
    inside = sum(
        tt
        for (file, _, name), (_, _, tt, _, _) in stats.items()
        if file == source and name == "SolveIpopt"
    )
    solve_ipopt = sum(
        ct
        for (file, _, name), (_, _, _, ct, _) in stats.items()
        if file == source and name == "SolveIpopt"
    )
    split = _StageSplit(getattr(outcome, "stage_logs", [outcome.log]))
    linear_share = split.get("linear_algebra_s", 0.0) / max(
        split.get("linear_algebra_s", 0.0) + split.get("solver_other_s", 0.0), 1e-9
    )
    rows = sorted(stats.items(), key=lambda item: -item[1][2])[:top]
    return {
        "case": case,
        "status": outcome.status,
        "accepted_plan": bool(ht.PlanAcceptable(problem, outcome)),
        "profiled_wall_s": total,
        "evaluation_s": callbacks,
        "ipopt_compiled_s": inside,
        "ipopt_linear_algebra_s": inside * linear_share,
        "ipopt_other_s": inside * (1.0 - linear_share),
        "python_outside_ipopt_s": max(total - solve_ipopt, 0.0),
        "evaluation_share": callbacks / total,
        "linear_algebra_share": inside * linear_share / total,
        "solver_overhead_share": (inside * (1.0 - linear_share) + max(total - solve_ipopt, 0.0))
        / total,
        "top_own_time": [
            {"function": f"{Path(file).name}:{line}:{name}", "calls": nc, "own_s": tt, "cum_s": ct}
            for (file, line, name), (_, nc, tt, ct, _) in rows
        ],
    }


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
        "--paths", default="fast,drake", help="which paths solve: fast, drake, or both (default)"
    )
    parser.add_argument(
        "--track",
        action="store_true",
        help="also track the 2 and 10 Hz cardstock plans in Drake's simulator",
    )
    parser.add_argument(
        "--gait-knots", type=int, default=51, help="knots per stride of the gait solves"
    )
    parser.add_argument(
        "--drake-budget-s",
        type=float,
        default=0.0,
        help="wall seconds after which Drake's path solves no further case (0: none); the "
        "cases it skips are marked drake_skipped and its medians are over the cases it solved",
    )
    parser.add_argument(
        "--skip-kernels",
        action="store_true",
        help="leave out parts 1 and 2 (one DEL evaluation, one whole-program evaluation)",
    )
    parser.add_argument(
        "--profile",
        default="gait:10@cardstock",
        help="case of one more fast solve under cProfile after the timed ones (none: skip)",
    )
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        threadpool_limits = None
    from drakebots.hamr import trajopt as ht
    from drakebots.optimization.ipopt import IpoptAvailable

    limiter = threadpool_limits(1) if threadpool_limits else None
    kernels = []
    if not args.skip_kernels:
        print("DEL residual + Jacobian at one knot (CPU seconds per evaluation):")
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
                loops=loops,
            )
        )
        print(
            f"{'system':36s} {'double value':>13s} {'AD jac':>11s} {'AD+FD jac':>11s} "
            f"{'analytic jac':>13s} {'AD/analytic':>12s} {'AD+FD/analytic':>15s} "
            f"{'err analytic':>13s} {'err AD':>8s} {'err AD+FD':>10s}"
        )
        for k in kernels:
            print(
                f"{k['system']:36s} {k['double_value_s'] * 1e3:10.3f} ms "
                f"{k['autodiff_one_pass_jacobian_s'] * 1e3:8.1f} ms "
                f"{k['autodiff_fd_jacobian_s'] * 1e3:8.1f} ms "
                f"{k['analytic_jacobian_s'] * 1e3:10.3f} ms "
                f"{k['ratio_autodiff_one_pass_to_analytic']:11.0f}x "
                f"{k['ratio_autodiff_fd_to_analytic']:14.0f}x "
                f"{k['analytic_jacobian_error_vs_fd']:13.1e} "
                f"{k['autodiff_one_pass_jacobian_error_vs_fd']:8.1e} "
                f"{k['autodiff_fd_jacobian_error_vs_fd']:10.1e}"
            )
    available, library = IpoptAvailable()
    whole = None
    if available and not args.skip_kernels:
        whole = WholeProgramBenchmark()
        print(
            f"\nthe whole 51-knot gait program ({whole['num_variables']} variables), CPU per "
            f"evaluation: Drake's AutoDiff values+gradients "
            f"{whole['drake_autodiff_values_and_gradients_s'] * 1e3:.0f} ms; fast values "
            f"{whole['fast_values_s'] * 1e3:.1f} ms, +Jacobian "
            f"{whole['fast_values_and_jacobian_s'] * 1e3:.1f} ms, +Hessian (Gauss-Newton) "
            f"{whole['fast_values_jacobian_hessian_gauss-newton_s'] * 1e3:.1f} ms, (exact) "
            f"{whole['fast_values_jacobian_hessian_exact_s'] * 1e3:.1f} ms"
        )
    if args.solves in ("none", ""):
        cases = []
    elif args.solves == "default":
        cases = ["gait:10@cardstock", "jump"]
    elif args.solves == "all":
        # The jump first, then the gaits with the frequencies interleaved: a Drake budget that
        # runs out leaves the later cases to the fast path alone (--drake-budget-s).
        cases = ["jump"] + [
            f"gait:{f}@{s}"
            for s, fs in (
                ("cardstock", (10, 2, 30)),
                ("teflon", (2, 30, 10)),
                ("sandpaper", (30, 10, 2)),
            )
            for f in fs
        ]
    else:
        cases = args.solves.split(",")
    paths = [p for p in args.paths.split(",") if p]
    if "fast" in paths and not available:
        print(f"fast path unavailable: {library}; solving with Drake's only")
        paths = [p for p in paths if p != "fast"]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    head = {
        "workload": (
            "HAMR-VI (the authors' model), variational contact-implicit transcription: "
            f"solves {', '.join(cases) or 'none'} ({args.gait_knots} knots per gait stride, the "
            "jump 31 knots over 70 ms) by the paths "
            + ", ".join(paths)
            + ("" if args.skip_kernels else "; one DEL evaluation and one whole-program evaluation")
        ),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_start": os.getloadavg(),
        },
        "command": " ".join(["scripts/bench_contact_implicit.py"] + list(argv or sys.argv[1:])),
        "fast_path_library": library,
        "kernels": kernels,
        "whole_program": whole,
        "drake_budget_s": args.drake_budget_s,
        "targets": {"median_fast_s": TARGET_MEDIAN_S, "jump_fast_s": TARGET_JUMP_S},
    }

    def Write(solves, final=False, profile=None):
        result = dict(head, solves=solves, complete=final)
        result.update(Summary(solves, paths))
        if profile is not None:
            result["profile"] = profile
        result["machine"]["load_average_end"] = os.getloadavg()
        out.write_text(json.dumps(result, indent=2, default=float) + "\n")
        return result

    solves = []
    if cases:
        print(f"\nsolves ({', '.join(paths)}; fast: {library}):")
        solves = Solves(
            cases, paths, args.track, args.gait_knots, args.drake_budget_s, on_row=Write
        )
    profile = None
    if args.profile != "none" and cases and "fast" in paths:
        profile = Profile(args.profile, args.gait_knots)
        print(
            f"\ncProfile of one more fast solve of {profile['case']} "
            f"({profile['profiled_wall_s']:.1f} s under the profiler): evaluation "
            f"{100 * profile['evaluation_share']:.0f} %, linear algebra "
            f"{100 * profile['linear_algebra_share']:.0f} %, solver overhead (IPOPT's own and "
            f"Python around it) {100 * profile['solver_overhead_share']:.0f} %"
        )
    result = Write(solves, final=True, profile=profile)
    PrintTable(result, paths)
    print(f"wrote {out}")
    del limiter
    return 0


def Summary(solves: list[dict], paths: list[str]) -> dict:
    """Medians over the 51-knot gaits each path solved, the jump, acceptance and the time split."""
    gaits = [r for r in solves if r["case"].startswith("gait")]
    jump = [r for r in solves if r["case"] == "jump"]
    out = {}
    for path in paths:
        done = [r for r in gaits if r.get(f"{path}_s") is not None]
        out[f"{path}_gait_cases"] = [r["case"] for r in done]
        for short in ("s", "cpu_s"):
            values = [r[f"{path}_{short}"] for r in done]
            out[f"median_{path}_{short}"] = float(np.median(values)) if values else None
        for short in ("wall_s_per_iteration", "cpu_s_per_iteration", "iterations"):
            values = [r[path][short] for r in done]
            out[f"median_{path}_{short}"] = float(np.median(values)) if values else None
        for share in ("evaluation_share", "linear_algebra_share", "solver_other_share"):
            values = [r[path][share] for r in done]
            out[f"median_{path}_{share}"] = float(np.median(values)) if values else None
        ran_jump = jump and jump[0].get(f"{path}_s") is not None
        out[f"jump_{path}_s"] = jump[0][f"{path}_s"] if ran_jump else None
        out[f"jump_{path}_cpu_s"] = jump[0][f"{path}_cpu_s"] if ran_jump else None
        out[f"jump_{path}_iterations"] = jump[0][path]["iterations"] if ran_jump else None
        out[f"all_accepted_{path}"] = all(
            r["accepted"][path] for r in solves if path in r["accepted"]
        )
    if "fast" in paths and "drake" in paths:
        both = [r for r in gaits if "speedup_wall" in r]
        out["gait_cases_both_paths"] = [r["case"] for r in both]
        if both:
            out["median_fast_s_on_those_cases"] = float(np.median([r["fast_s"] for r in both]))
            out["median_speedup_wall"] = float(np.median([r["speedup_wall"] for r in both]))
            out["median_speedup_cpu"] = float(np.median([r["speedup_cpu"] for r in both]))
    if "fast" in paths:
        out["target_met"] = {
            "median_fast_s": out["median_fast_s"] is not None
            and out["median_fast_s"] <= TARGET_MEDIAN_S,
            "jump_fast_s": out["jump_fast_s"] is not None and out["jump_fast_s"] <= TARGET_JUMP_S,
            "all_accepted_fast": out["all_accepted_fast"],
        }
    return out


def PrintTable(result: dict, paths: list[str]) -> None:
    def F(value, spec):
        if value is not None:
            return format(value, spec)
        width = spec.split(".")[0].rstrip("dfs%")
        return "-".rjust(int(width)) if width.isdigit() else "-"

    print(
        f"\n{'case':18s} {'fast_s':>7s} {'drake_s':>8s} {'fast it':>8s} {'drake it':>9s} "
        f"{'fast s/it':>9s} {'drake s/it':>10s}  accepted (fast, drake)"
    )
    for r in result["solves"]:
        it, per, ok = r["iterations"], r["s_per_iteration"], r["accepted"]
        print(
            f"{r['case']:18s} {F(r.get('fast_s'), '7.1f')} {F(r.get('drake_s'), '8.1f')} "
            f"{F(it.get('fast'), '8d')} {F(it.get('drake'), '9d')} "
            f"{F(per.get('fast'), '9.3f')} {F(per.get('drake'), '10.3f')}  "
            f"{ok.get('fast', '-')}, {ok.get('drake', r.get('drake_skipped', '-'))}"
        )
    for path in paths:
        cases = result[f"{path}_gait_cases"]
        print(
            f"median over {len(cases)} gaits, {path}: wall {F(result[f'median_{path}_s'], '.1f')} s"
            f", CPU {F(result[f'median_{path}_cpu_s'], '.1f')} s, "
            f"{F(result[f'median_{path}_iterations'], '.0f')} iterations, "
            f"{F(result[f'median_{path}_wall_s_per_iteration'], '.3f')} s/iteration; IPOPT's time: "
            f"evaluation {F(result[f'median_{path}_evaluation_share'], '.0%')}, linear algebra "
            f"{F(result[f'median_{path}_linear_algebra_share'], '.0%')}, rest "
            f"{F(result[f'median_{path}_solver_other_share'], '.0%')}; jump "
            f"{F(result[f'jump_{path}_s'], '.1f')} s; all accepted: "
            f"{result[f'all_accepted_{path}']}"
        )
    if "median_speedup_wall" in result:
        print(
            f"on the {len(result['gait_cases_both_paths'])} gaits both paths solved: fast median "
            f"{result['median_fast_s_on_those_cases']:.1f} s; median speed-up wall "
            f"{result['median_speedup_wall']:.1f}x, CPU {result['median_speedup_cpu']:.1f}x"
        )
    if "target_met" in result:
        print(
            f"targets (median <= {TARGET_MEDIAN_S:g} s, jump <= {TARGET_JUMP_S:g} s): "
            f"{result['target_met']}"
        )


if __name__ == "__main__":
    sys.exit(main())
