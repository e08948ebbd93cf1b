"""Frame-by-frame optimization with full dynamics: the per-frame QPCC (paper sections 5.2-5.3).

Each frame i solves Eq. (12): find motor torques τ^i and contact forces such that the dynamics
step they produce (Δq^i, Δu^i = φ_Δq, φ_Δu of Eq. 11) tracks the space-time plan q̄ (E_G of
Eqs. 13-14) under the motor limits |τ_m| < U_m, the COP constraint P·φ_COP <= 0 and the contact
complementarity conditions. The dynamics come from a `FrameDynamics` object that returns the
*condensed* step (Eq. 10): Δq and the contact patches' displacements as affine functions of the
inputs z = [τ; f_1; ...; f_P] (f_p the 3-D force on contact patch p, world frame). Everything
else (the skeleton's kinematics for E_O and E_C, the COP) comes from the `SkeletonModel`.

`RigidFrameDynamics` is the skeleton-only version (rigid feet; a semi-implicit Euler step of
M v̇ = B τ + Σ J_p^T f_p - C v + τ_g). The skin's coupled version implements the same interface
with the condensation of Eq. (2) (issue 5's FEM and glue constraints): the optimizer does not
change.

The complementarity is solved as the paper does (section 5.3, after Tan et al. [7]): all contact
patches fixed first (Eq. 18, their multipliers γ_c free 3-D forces), then each patch labelled from
its multiplier (Eq. 19): breakage (γ_⊥ <= 0: the force is removed, the patch may only move up),
static (μ γ_⊥ > ||γ_∥||: the patch stays put, Eq. 17) or sliding (on the friction cone's boundary,
moving against its friction force, Eqs. 15-16), and the QP re-solved, up to 10 iterations. The
foot's sole is grouped into five patches (four corners and the centre: "grouping vertices on the
planar surface of the foot mesh into five patches").

Choices not in the paper: the sliding patch's friction direction is fixed at the tangential
multiplier's direction from the previous iteration (maximum dissipation along one direction instead
of the 4-direction pyramid's complementarity); a breaking patch whose no-penetration constraint is
active with a positive multiplier is re-labelled static; a frame whose QP is infeasible is re-solved
with penalised slacks on the motor and COP constraints so the run can report by name which
constraint is violated, at which frame, and by how much.

Units: SI; E_G's terms are measured like the space-time step's (translations in units of
`length_scale`, angles in units of `angle_scale`, torques as fractions of U_m).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Protocol

import numpy as np
from pydrake.solvers import ClarabelSolver, MathematicalProgram, OsqpSolver, SolverOptions

from drakebots.analysis.support import SupportPolygon
from drakebots.optimization.skeleton_model import NUM_BASE, SkeletonModel

STATIC, SLIDING, BREAKAGE = "static", "sliding", "breakage"


@dataclasses.dataclass
class QpccWeights:
    """The weights of Eq. (13), paper values (section 5.2)."""

    # α_S: smoothness of Δq between frames.
    smoothness: float = 1.0
    # α_F: follow the space-time plan q̄^{i+1}.
    follow: float = 10.0
    # α_O: flat feet near contact.
    orientation: float = 2.0
    # α_τ: torque change between frames.
    torque: float = 0.5
    # α_C: supporting feet do not slide.
    contact: float = 10.0


@dataclasses.dataclass
class QpccConfig:
    """Options of the frame-by-frame QPCC."""

    weights: QpccWeights = dataclasses.field(default_factory=QpccWeights)
    # Translations in E_G are measured in units of this length, m.
    length_scale: float = 0.01
    # Angles in E_G are measured in units of this angle, rad.
    angle_scale: float = 0.05
    # Weight of the contact-force regulariser (forces in units of the robot's weight).
    force_regularization: float = 1e-3
    # Labelling iterations per frame (the paper stops after 10).
    max_label_iterations: int = 10
    # A patch closer to the ground than this is a contact candidate, m.
    contact_distance: float = 0.002
    # Patches within this height get a no-penetration constraint, m.
    approach_distance: float = 0.03
    # COP kept this far inside the support polygon, m.
    cop_margin: float = 0.0
    # Enforce the COP constraint (Eq. 12's second line).
    cop_constraint: bool = True
    # Enforce the motor limits |τ_m| <= U_m.
    torque_limits: bool = True
    # "clarabel" or "osqp".
    solver: str = "clarabel"
    # Penalty on the slacks of an elastic re-solve of an infeasible frame.
    slack_penalty: float = 1e6
    # Stop the pass once the torso tilts more than this (the robot fell), rad.
    fall_angle: float = 0.8


@dataclasses.dataclass
class FrameLinearization:
    """One frame's condensed dynamics (Eq. 10-11): outcomes affine in z = [τ; f_1..f_P].

    Attributes:
        dq0, dq_dz: Δq = dq0 + dq_dz z (nq,), (nq, nz).
        patches: (P, 3) current patch positions, m.
        dp0, dp_dz: patch displacements Δp = dp0 + dp_dz z, (P, 3), (P, 3, nz).
        patch_foot: (P,) foot index of each patch.
        factor_time: seconds spent factorising the system matrix (the frame's lower bound).
    """

    dq0: np.ndarray
    dq_dz: np.ndarray
    patches: np.ndarray
    dp0: np.ndarray
    dp_dz: np.ndarray
    patch_foot: np.ndarray
    factor_time: float = 0.0


class FrameDynamics(Protocol):
    """What the QPCC needs from a (coupled) dynamics model, one frame at a time."""

    dt: float
    num_patches: int

    def Linearize(self, q: np.ndarray, v: np.ndarray) -> FrameLinearization:
        """The condensed step from state (q, v) with the inputs left free."""

    def Step(self, q: np.ndarray, v: np.ndarray, lin: FrameLinearization, z: np.ndarray):
        """Applies the inputs: returns (q_next, v_next)."""


class RigidFrameDynamics:
    """Skeleton-only frame dynamics with rigid feet: five patches per sole.

    Semi-implicit Euler: M (v⁺ - v) = Δt (B τ + Σ_p J_p^T f_p - C v + τ_g), Δq = Δt v⁺
    (q̇ = v in the Euler-angle coordinates); patch displacements Δp = J_p Δq.

    Args:
        model: the skeleton (with the skin's weight on its links).
        dt: frame step, s.
    """

    def __init__(self, model: SkeletonModel, dt: float):
        self.model = model
        self.dt = float(dt)
        corners = model.sole_corners  # (4, 4, 3)
        self.patch_points = np.concatenate(
            [corners, model.sole_centers[:, None, :]], axis=1
        )  # (4, 5, 3) foot frame
        self.num_patches = 20
        self.patch_foot = np.repeat(np.arange(4), 5)

    def PatchJacobians(self, q):
        """Patch positions (P, 3) and Jacobians (P, 3, nv)."""
        m = self.model
        pos, jac = [], []
        for j in range(4):
            p, J = m.FootPoints(q, j, self.patch_points[j])
            pos.append(p)
            jac.append(J)
        return np.concatenate(pos), np.concatenate(jac)

    def Linearize(self, q, v):
        m, dt = self.model, self.dt
        start = time.perf_counter()
        M = m.MassMatrix(q)
        h = m.BiasAndGravity(q, v)
        L = np.linalg.cholesky(M)
        factor = time.perf_counter() - start
        P, Jp = self.PatchJacobians(q)
        G = np.hstack([m.B, Jp.reshape(-1, m.nv).T])  # (nv, nu + 3P)
        Minv_G = np.linalg.solve(L.T, np.linalg.solve(L, G))
        Minv_h = np.linalg.solve(L.T, np.linalg.solve(L, h))
        dq0 = dt * (v - dt * Minv_h)
        dq_dz = dt * dt * Minv_G
        dp0 = np.einsum("pij,j->pi", Jp, dq0)
        dp_dz = np.einsum("pij,jk->pik", Jp, dq_dz)
        return FrameLinearization(dq0, dq_dz, P, dp0, dp_dz, self.patch_foot, factor)

    def Step(self, q, v, lin, z):
        dq = lin.dq0 + lin.dq_dz @ z
        return q + dq, dq / self.dt

    def UncondensedStep(self, q, v):
        """The frame's matrices before condensation (for the condensed-vs-uncondensed benchmark):
        (M, h, B, Jp) with M (v⁺ - v) = Δt (B τ + Jp^T f - h)."""
        m = self.model
        P, Jp = self.PatchJacobians(q)
        return m.MassMatrix(q), m.BiasAndGravity(q, v), m.B, Jp.reshape(-1, m.nv)


@dataclasses.dataclass
class FrameResult:
    """One frame's QPCC outcome."""

    tau: np.ndarray  # (nu,) N·m
    forces: np.ndarray  # (P, 3) N
    labels: list  # per patch: static / sliding / breakage / "" (not a candidate)
    q_next: np.ndarray
    v_next: np.ndarray
    energies: list  # E_G per labelling iteration
    iterations: int
    consistent: bool  # the final labels agree with the solution's forces and motion
    infeasible: list  # names of constraints that needed slack (empty when feasible)
    cop: np.ndarray | None
    cop_margin: float | None
    solve_time: float
    factor_time: float
    num_qp_variables: int


def _Scales(model: SkeletonModel, config: QpccConfig) -> np.ndarray:
    s = np.full(model.nq, 1.0 / config.angle_scale)
    s[:3] = 1.0 / config.length_scale
    return s


class FrameQpcc:
    """The per-frame QPCC of Eq. (12) with the paper's labelling loop.

    Args:
        model: the skeleton model (kinematics for E_O, E_C and the COP).
        dynamics: a FrameDynamics (rigid or coupled).
        effort_limits: U_m per motor, N·m.
        friction: μ.
        config: weights and options.
    """

    def __init__(self, model, dynamics, effort_limits, friction, config: QpccConfig):
        self.model = model
        self.dyn = dynamics
        self.U = np.asarray(effort_limits, float)
        self.mu = float(friction)
        self.config = config
        self.scale = _Scales(model, config)
        if config.solver == "clarabel":
            self.solver = ClarabelSolver()
        elif config.solver == "osqp":
            self.solver = OsqpSolver()
        else:
            raise ValueError(f"unknown QP solver '{config.solver}' (clarabel, osqp)")
        self.options = SolverOptions()
        if config.solver == "osqp":
            sid = self.solver.solver_id()
            self.options.SetOption(sid, "eps_abs", 1e-7)
            self.options.SetOption(sid, "eps_rel", 1e-7)
            self.options.SetOption(sid, "max_iter", 20000)

    # ------------------------------------------------------------------------------------------

    def _Objective(self, q, lin, q_target, dq_prev, tau_prev, flat_feet, support_feet):
        """E_G (Eq. 13-14) as a quadratic in z: returns (H, g, c) with E = ½ zᵀHz + gᵀz + c."""
        m, W = self.model, self.config.weights
        S = self.scale
        nz = lin.dq_dz.shape[1]
        blocks = []  # (weight, A, r): weight * ||A z + r||²
        D = lin.dq_dz * S[:, None]
        d0 = lin.dq0 * S
        blocks.append((W.smoothness, D, d0 - dq_prev * S))  # E_S
        blocks.append((W.follow, D, (q + lin.dq0 - q_target) * S))  # E_F
        up = np.array([0.0, 0.0, 1.0])
        for j in flat_feet:  # E_O (linearised ψ)
            n, Jn = m.FootNormal(q, j)
            blocks.append(
                (
                    W.orientation,
                    (Jn @ lin.dq_dz) / self.config.angle_scale,
                    (n + Jn @ lin.dq0 - up) / self.config.angle_scale,
                )
            )
        sel = np.zeros((m.nu, nz))
        sel[:, : m.nu] = np.diag(1.0 / self.U)
        blocks.append((W.torque, sel, -tau_prev / self.U))  # E_τ
        for j in support_feet:  # E_C: supporting feet do not move
            _, Jp = m.FootPoints(q, j, m.sole_centers[j])
            Jp = Jp[0] / self.config.length_scale
            blocks.append((W.contact, Jp[:2] @ lin.dq_dz, Jp[:2] @ lin.dq0))
        # Ours: a small penalty on contact forces (in units of the robot's weight). The contact
        # forces of fixed patches are otherwise free in the null space of the step (a rigid sole
        # has more patch forces than the foot has wrench components), and an interior-point QP
        # needs a strictly convex objective.
        reg = np.zeros((nz - m.nu, nz))
        reg[:, m.nu :] = np.eye(nz - m.nu) / (m.total_mass * m.gravity)
        blocks.append((self.config.force_regularization, reg, np.zeros(nz - m.nu)))
        H = np.zeros((nz, nz))
        g = np.zeros(nz)
        c = 0.0
        for w, A, r in blocks:
            H += 2 * w * A.T @ A
            g += 2 * w * A.T @ r
            c += w * float(r @ r)
        return H, g, c

    def SolveFrame(
        self,
        q: np.ndarray,
        v: np.ndarray,
        q_target: np.ndarray,
        dq_prev: np.ndarray,
        tau_prev: np.ndarray,
        *,
        flat_feet=(),
        support_feet=(),
        swing_feet=(),
        lin: FrameLinearization | None = None,
    ) -> FrameResult:
        """Solves one frame's QPCC from state (q, v) toward q̄^{i+1} = q_target.

        Args:
            swing_feet: feet the contact plan lifts at the next frame: their patches start as
                breakage (with fixed patches' forces free, a lift-off never shows in their
                multipliers: the plan says when a foot should try to leave).
        """
        start = time.perf_counter()
        cfg = self.config
        if lin is None:
            lin = self.dyn.Linearize(q, v)
        H, g, c = self._Objective(q, lin, q_target, dq_prev, tau_prev, flat_feet, support_feet)
        heights = lin.patches[:, 2]
        P = len(heights)
        candidates = np.flatnonzero(heights < cfg.approach_distance)
        labels = [""] * P
        directions = {}
        for p in candidates:
            touching = heights[p] < cfg.contact_distance
            lifting = int(lin.patch_foot[p]) in swing_feet
            labels[p] = STATIC if touching and not lifting else BREAKAGE
        energies = []
        history = []
        best = None
        result = None
        for iteration in range(cfg.max_label_iterations):
            try:
                # Eq. (18) first (fixed patches, free multipliers), then Eq. (17): static patches
                # keep their force inside the friction pyramid.
                result = self._SolveLabelled(
                    lin, H, g, c, labels, directions, static_cone=iteration > 0
                )
            except RuntimeError:
                # A relabelling whose contact constraints cannot hold at all (even with slack on
                # the motor and COP rows): keep the best labelling found so far.
                if best is None and result is None:
                    raise
                break
            energies.append(result["energy"])
            new_labels, new_dirs, consistent = self._Relabel(lin, labels, directions, result)
            result["consistent"] = consistent
            result["labels"] = list(labels)
            history.append(tuple(labels))
            if consistent and not result["slack"]:
                if best is None or result["energy"] < best["energy"]:
                    best = result
                break
            if best is None or (not result["slack"] and result["energy"] < best["energy"]):
                best = result if not result["slack"] else best
            if tuple(new_labels) in history:
                # A labelling already tried: the loop would cycle; keep the best so far.
                labels, directions = new_labels, new_dirs
                break
            labels, directions = new_labels, new_dirs
        chosen = best if best is not None else result
        z = chosen["z"]
        q_next, v_next = self.dyn.Step(q, v, lin, z)
        nu = self.model.nu
        forces = z[nu:].reshape(P, 3)
        cop, margin = None, None
        loaded = forces[:, 2].sum()
        if loaded > 1e-6:
            cop = (lin.patches[:, :2] * forces[:, 2:3]).sum(axis=0) / loaded
            in_contact = [p for p in range(P) if chosen["labels"][p] in (STATIC, SLIDING)]
            polygon = self._Polygon(lin, in_contact)
            if polygon is not None:
                margin = polygon.Margin(cop)
        return FrameResult(
            tau=z[:nu].copy(),
            forces=forces.copy(),
            labels=chosen["labels"],
            q_next=q_next,
            v_next=v_next,
            energies=energies,
            iterations=len(energies),
            consistent=bool(chosen.get("consistent", False)),
            infeasible=chosen["slack"],
            cop=cop,
            cop_margin=margin,
            solve_time=time.perf_counter() - start,
            factor_time=lin.factor_time,
            num_qp_variables=chosen["num_vars"],
        )

    def _Polygon(self, lin, in_contact):
        feet = sorted({int(lin.patch_foot[p]) for p in in_contact})
        if not feet:
            return None
        points = lin.patches[[p for p in range(len(lin.patch_foot)) if lin.patch_foot[p] in feet]]
        try:
            polygon = SupportPolygon(points)
            polygon.HalfSpaces()
            return polygon
        except ValueError:
            return None

    def _SolveLabelled(self, lin, H, g, c, labels, directions, elastic=False, static_cone=False):
        """One QP for a fixed labelling (Eqs. 15-18); `static_cone`: Eq. (17)'s friction
        constraint μ F_⊥ - 1ᵀF_∥ >= 0 on static patches (4-direction pyramid)."""
        m, cfg = self.model, self.config
        nu = m.nu
        P = len(labels)
        prog = MathematicalProgram()
        tau = prog.NewContinuousVariables(nu, "tau")
        # Force parameters per patch: static 3 (γ_c, free), sliding 1 (F_⊥), otherwise none.
        params = []
        Fmap_rows = []  # f = Fmap @ [tau; params]
        columns = [tau]
        for p in range(P):
            if labels[p] == STATIC:
                params.append(prog.NewContinuousVariables(3, f"gamma{p}"))
            elif labels[p] == SLIDING:
                params.append(prog.NewContinuousVariables(1, f"fn{p}"))
            else:
                params.append(None)
        y = np.concatenate([tau] + [x for x in params if x is not None])
        ny = len(y)
        # z = T y (z = [τ; f_1..f_P]).
        T = np.zeros((nu + 3 * P, ny))
        T[:nu, :nu] = np.eye(nu)
        col = nu
        for p in range(P):
            if labels[p] == STATIC:
                T[nu + 3 * p : nu + 3 * p + 3, col : col + 3] = np.eye(3)
                col += 3
            elif labels[p] == SLIDING:
                t_hat = directions[p]
                T[nu + 3 * p : nu + 3 * p + 3, col] = np.array(
                    [self.mu * t_hat[0], self.mu * t_hat[1], 1.0]
                )
                col += 1
        del Fmap_rows, columns
        Hy = T.T @ H @ T + 1e-9 * np.eye(ny)
        gy = T.T @ g
        prog.AddQuadraticCost(Hy, gy, c, y, is_convex=True).evaluator().set_description("E_G")
        slacks = []

        def add_inequality(A, lb, ub, name):
            """lb <= A y <= ub, with a penalised slack in elastic mode."""
            if elastic:
                s = prog.NewContinuousVariables(len(lb), f"slack_{name}")
                prog.AddBoundingBoxConstraint(0.0, np.inf, s)
                prog.AddLinearCost(np.full(len(lb), cfg.slack_penalty), 0.0, s)
                AA = np.hstack([A, np.eye(len(lb))])
                b1 = prog.AddLinearConstraint(
                    AA, lb, np.full(len(lb), np.inf), np.concatenate([y, s])
                )
                AA2 = np.hstack([A, -np.eye(len(lb))])
                prog.AddLinearConstraint(AA2, np.full(len(lb), -np.inf), ub, np.concatenate([y, s]))
                slacks.append((name, s))
                b1.evaluator().set_description(name)
                return b1
            b = prog.AddLinearConstraint(A, lb, ub, y)
            b.evaluator().set_description(name)
            return b

        if cfg.torque_limits:
            add_inequality(np.eye(nu, ny), -self.U, self.U, "motor_limits")
        # Contact constraints on patch displacements Δp = dp0 + dp_dz T y.
        no_pen = {}
        eq_rows = []
        for p in range(P):
            if not labels[p]:
                continue
            A = lin.dp_dz[p] @ T
            d0 = lin.dp0[p]
            z_now = lin.patches[p, 2]
            if labels[p] == STATIC:
                # Fixed (Eq. 18): [φ_Δu]_c = 0, the patch does not move.
                eq_rows.append((A, -d0))
                if static_cone:
                    F = T[nu + 3 * p : nu + 3 * p + 3]
                    pyramid = np.array(
                        [[sx, sy, -self.mu] for sx in (1.0, -1.0) for sy in (1.0, -1.0)]
                    )
                    b = prog.AddLinearConstraint(
                        (pyramid @ F) / (m.total_mass * m.gravity),
                        np.full(4, -np.inf),
                        np.zeros(4),
                        y,
                    )
                    b.evaluator().set_description(f"static_friction[{p}]")
            elif labels[p] == SLIDING:
                t_hat = directions[p]
                eq_rows.append((A[2:3], np.array([-d0[2]])))
                perp = np.array([-t_hat[1], t_hat[0]])
                eq_rows.append(((perp @ A[:2])[None], np.array([-perp @ d0[:2]])))
                # Moves against its friction force (F_∥ along t̂, motion along -t̂).
                b = prog.AddLinearConstraint(
                    (t_hat @ A[:2])[None], np.array([-np.inf]), np.array([-t_hat @ d0[:2]]), y
                )
                b.evaluator().set_description(f"slide_direction[{p}]")
                col = nu + sum(
                    3 if labels[r] == STATIC else 1 if labels[r] == SLIDING else 0 for r in range(p)
                )
                prog.AddBoundingBoxConstraint(0.0, np.inf, y[col])
            else:  # BREAKAGE: no force; may only stay above the ground.
                no_pen[p] = prog.AddLinearConstraint(
                    A[2:3], np.array([-z_now - d0[2]]), np.array([np.inf]), y
                )
                no_pen[p].evaluator().set_description(f"no_penetration[{p}]")
        if eq_rows:
            # The patches of a rigid foot (or a stiff sole) give dependent rows: keep an
            # orthonormal basis of them (the system is consistent), which interior-point QP
            # solvers need.
            A_eq = np.vstack([a for a, _ in eq_rows])
            b_eq = np.concatenate([r for _, r in eq_rows])
            U, S, _ = np.linalg.svd(A_eq, full_matrices=False)
            keep = S > 1e-9 * max(S.max(), 1e-300)
            b = prog.AddLinearEqualityConstraint(U[:, keep].T @ A_eq, U[:, keep].T @ b_eq, y)
            b.evaluator().set_description("contacts_fixed")
        # COP (Eq. 12): Σ_p (a·p_p - b) F_z,p <= 0 over the patches in contact.
        in_contact = [p for p in range(P) if labels[p] in (STATIC, SLIDING)]
        if cfg.cop_constraint and in_contact:
            polygon = self._Polygon(lin, in_contact)
            if polygon is not None:
                Ah, bh = polygon.HalfSpaces(margin=cfg.cop_margin)
                rows = np.zeros((len(bh), ny))
                for p in in_contact:
                    Fz_row = T[nu + 3 * p + 2]
                    rows += np.outer(Ah @ lin.patches[p, :2] - bh, Fz_row)
                # In units of the robot's weight for conditioning.
                rows /= m.total_mass * m.gravity
                add_inequality(rows, np.full(len(bh), -np.inf), np.zeros(len(bh)), "cop")
        result = self.solver.Solve(prog, None, self.options)
        if not result.is_success():
            if not elastic:
                return self._SolveLabelled(
                    lin, H, g, c, labels, directions, elastic=True, static_cone=static_cone
                )
            raise RuntimeError(f"elastic QP failed: {result.get_solution_result()}")
        yv = result.GetSolution(y)
        z = T @ yv
        violated = []
        for name, s in slacks:
            amount = float(np.max(result.GetSolution(s)))
            if amount > 1e-6:
                violated.append(f"{name} (by {amount:.3g})")
        duals = {p: float(np.abs(result.GetDualSolution(b)).max()) for p, b in no_pen.items()}
        energy = float(0.5 * z @ H @ z + g @ z + c)
        return {
            "z": z,
            "energy": energy,
            "slack": violated,
            "duals": duals,
            "num_vars": prog.num_vars(),
        }

    def _Relabel(self, lin, labels, directions, result):
        """Eq. (19): re-label each patch from its force (multiplier) and motion."""
        nu = self.model.nu
        z = result["z"]
        f = z[nu:].reshape(-1, 3)
        dp = lin.dp0 + np.einsum("pik,k->pi", lin.dp_dz, z)
        tol_f = 1e-6 * self.model.total_mass * self.model.gravity
        new = list(labels)
        dirs = dict(directions)
        consistent = True
        for p, label in enumerate(labels):
            if not label:
                continue
            g_n = f[p, 2]
            g_t = f[p, :2]
            if label == STATIC:
                if g_n <= tol_f:
                    new[p] = BREAKAGE
                elif self.mu * g_n < np.linalg.norm(g_t):
                    new[p] = SLIDING
                    dirs[p] = g_t / np.linalg.norm(g_t)
            elif label == SLIDING:
                if g_n <= tol_f:
                    new[p] = BREAKAGE
                elif np.linalg.norm(dp[p, :2]) < 1e-9:
                    new[p] = STATIC
            else:  # BREAKAGE
                gap = lin.patches[p, 2] + dp[p, 2]
                if gap < 1e-7 and result["duals"].get(p, 0.0) > 1e-6:
                    new[p] = STATIC
            if new[p] != label:
                consistent = False
        return new, dirs, consistent


@dataclasses.dataclass
class FrameByFrameResult:
    """A frame-by-frame pass over the plan."""

    q: np.ndarray  # (N, nq) the simulated motion q̃
    v: np.ndarray
    tau: np.ndarray  # (N-1, nu)
    forces: np.ndarray  # (N-1, P, 3)
    labels: list
    cop: np.ndarray  # (N-1, 2) (nan where unloaded)
    cop_margin: np.ndarray  # (N-1,) (nan where unloaded)
    frame_time: np.ndarray  # (N-1,) s per frame (QPCC)
    factor_time: np.ndarray
    iterations: np.ndarray
    energies: list
    consistent: np.ndarray
    infeasible: list  # (frame, [constraint names])
    frames_done: int
    fell: bool


def RunFrameByFrame(
    model: SkeletonModel,
    dynamics: FrameDynamics,
    qpcc: FrameQpcc,
    q_plan: np.ndarray,
    contact_plan: np.ndarray,
    *,
    v0: np.ndarray | None = None,
    flat_active: np.ndarray | None = None,
    progress=None,
) -> FrameByFrameResult:
    """Runs the QPCC frame after frame along the plan q̄ (N, nq) from q̄^0.

    Args:
        contact_plan: (4, N) planned stance (for E_C: feet that support the body).
        flat_active: (4, N) where E_O applies (default: the contact plan).
        progress: optional callable(frame_index, total).
    """
    N = len(q_plan)
    dt = dynamics.dt
    q = q_plan[0].copy()
    v = (q_plan[1] - q_plan[0]) / dt if v0 is None else v0.copy()
    if flat_active is None:
        flat_active = contact_plan
    Q = np.zeros((N, model.nq))
    Vs = np.zeros((N, model.nv))
    Q[0], Vs[0] = q, v
    P = dynamics.num_patches
    taus = np.zeros((N - 1, model.nu))
    forces = np.zeros((N - 1, P, 3))
    cops = np.full((N - 1, 2), np.nan)
    margins = np.full(N - 1, np.nan)
    times = np.zeros(N - 1)
    factor = np.zeros(N - 1)
    iterations = np.zeros(N - 1, dtype=int)
    consistent = np.zeros(N - 1, dtype=bool)
    labels, energies, infeasible = [], [], []
    tau_prev = np.zeros(model.nu)
    # Start from the static torques: gravity compensation of the plan's first pose.
    dq_prev = v * dt
    fell = False
    done = N - 1
    for i in range(N - 1):
        flat = [j for j in range(4) if flat_active[j, min(i + 1, N - 1)]]
        nxt = min(i + 1, N - 1)
        support = [j for j in range(4) if contact_plan[j, i] and contact_plan[j, nxt]]
        swing = [j for j in range(4) if not contact_plan[j, nxt]]
        kwargs = dict(flat_feet=flat, support_feet=support, swing_feet=swing)
        try:
            r = qpcc.SolveFrame(q, v, q_plan[i + 1], dq_prev, tau_prev, **kwargs)
        except RuntimeError as e:
            # Even the elastic QP (slack on the motor and COP constraints) has no solution: the
            # contact constraints themselves cannot hold. Record the frame and stop the pass.
            infeasible.append((i, [f"contact constraints ({e})"]))
            done = i
            break
        if i == 0:
            # Re-solve the first frame with its own torques as the "previous" ones, so E_τ does
            # not pull toward zero torque at the start.
            r = qpcc.SolveFrame(q, v, q_plan[i + 1], dq_prev, r.tau, **kwargs)
        taus[i], forces[i] = r.tau, r.forces
        if r.cop is not None:
            cops[i] = r.cop
        if r.cop_margin is not None:
            margins[i] = r.cop_margin
        times[i], factor[i], iterations[i] = r.solve_time, r.factor_time, r.iterations
        consistent[i] = r.consistent
        labels.append(r.labels)
        energies.append(r.energies)
        if r.infeasible:
            infeasible.append((i, r.infeasible))
        dq_prev = r.q_next - q
        q, v, tau_prev = r.q_next, r.v_next, r.tau
        Q[i + 1], Vs[i + 1] = q, v
        if progress is not None:
            progress(i + 1, N - 1)
        if max(abs(q[4]), abs(q[5])) > qpcc.config.fall_angle or not np.all(np.isfinite(q)):
            fell = True
            done = i + 1
            break
    return FrameByFrameResult(
        q=Q[: done + 1],
        v=Vs[: done + 1],
        tau=taus[:done],
        forces=forces[:done],
        labels=labels,
        cop=cops[:done],
        cop_margin=margins[:done],
        frame_time=times[:done],
        factor_time=factor[:done],
        iterations=iterations[:done],
        energies=energies,
        consistent=consistent[:done],
        infeasible=infeasible,
        frames_done=done,
        fell=fell,
    )


def PlanVelocity(q_plan: np.ndarray, dt: float) -> np.ndarray:
    """Finite-difference velocities of a plan (for starting the pass), rad/s and m/s."""
    v = np.gradient(q_plan, dt, axis=0)
    return v


__all__ = [
    "BREAKAGE",
    "FrameByFrameResult",
    "FrameDynamics",
    "FrameLinearization",
    "FrameQpcc",
    "NUM_BASE",
    "QpccConfig",
    "QpccWeights",
    "RigidFrameDynamics",
    "RunFrameByFrame",
    "SLIDING",
    "STATIC",
]
