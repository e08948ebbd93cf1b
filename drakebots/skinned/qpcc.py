"""Frame-by-frame optimization with full dynamics: the per-frame QPCC (paper sections 5.2-5.3).

Each frame i solves Eq. (12): find motor torques τ^i and contact forces such that the dynamics
step they produce (Δq^i, Δu^i = φ_Δq, φ_Δu of Eq. 11) tracks the space-time plan q̄ (E_G of
Eqs. 13-14) under the motor limits |τ_m| < U_m, the COP constraint P·φ_COP <= 0 and the contact
complementarity conditions. The dynamics come from a `FrameDynamics` object that returns the
*condensed* step (Eq. 10): Δq and the contact patches' displacements as affine functions of the
inputs z = [τ; f_1; ...; f_P] (f_p the 3-D force on contact patch p, world frame). Everything
else (the skeleton's kinematics for E_O and E_C, the COP) comes from the `SkeletonModel`.

`RigidFrameDynamics` is the skeleton-only version (rigid links; a semi-implicit Euler step of
M v̇ = B τ + Σ J_p^T f_p - C v + τ_g) with a compliant sole under each foot (the paper applies the
ground forces to the foot links "using the soft contact method [55]", section 5.2). The skin's
coupled version (qpcc_coupled.py) implements the same interface with the condensation of Eq. (2)
(issue 5's FEM and glue constraints): the optimizer does not change.

The complementarity is solved as the paper does (section 5.3, after Tan et al. [7]): the patches
touching the ground fixed first (Eq. 18, their multipliers γ_c free 3-D forces), then each patch
labelled from its multiplier (Eq. 19): breakage (γ_⊥ <= 0: no force, the patch may only move
up), static (μ γ_⊥ > 1ᵀ|γ_∥| on the four-direction pyramid: the patch stays put, its force inside
the pyramid, Eq. 17) or sliding (Eqs. 15-16: the force on the pyramid's boundary along one
direction d_k and the patch slipping inside the quarter-plane opposite d_k, with Eq. 16's
auxiliary λ), and the QP re-solved, up to 10 iterations, until the labels reproduce themselves.
The foot's sole is grouped into five patches (four corners and the centre: "grouping vertices
on the planar surface of the foot mesh into five patches").

Choices not in the paper: the feet the contact plan lifts at the next frame start as breakage (the
user's footfall pattern says when a foot leaves; with fixed patches the multipliers alone rarely
ask for it); a patch above the ground starts as breakage and is put back (static) when its
no-penetration row pushes; a sliding patch's pyramid direction is the one closest to the force
that would have held it; the support polygon is that of the feet with a loaded patch. The loop
returns the first labelling that reproduces itself (`FrameResult.consistent`); if none does in 10
iterations (or it cycles) the lowest-energy one, flagged inconsistent. A frame whose QP is
infeasible is re-solved with penalised slacks on the motor and COP constraints so the run can
report by name which constraint is violated, at which frame, and by how much.

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
from drakebots.runtime import SingleThreadedBlas
from drakebots.skinned.skeleton_model import NUM_BASE, SkeletonModel

STATIC, SLIDING, BREAKAGE = "static", "sliding", "breakage"
# The friction pyramid's four tangent directions (the columns of D in Eq. 12).
PYRAMID = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])


@dataclasses.dataclass
class QpccWeights:
    """The weights of Eq. (13), paper values (section 5.2)."""

    # α_S: smoothness of Δq between frames.
    smoothness: float = 1.0
    # α_F: follow the space-time plan q̄^{i+1}.
    follow: float = 10.0
    # α_O: flat feet near contact.
    orientation: float = 2.0
    # α_τ: torque change between frames. Paper: 0.5. Ours 2: with 0.5 the beetle's single-foot
    # lift (rigid skeleton, compliant soles) saturated a motor on 18 of 400 frames, with 2 on 6,
    # the COP margin and tracking unchanged (both with `lookahead_frames` 10).
    torque: float = 2.0
    # α_C: supporting feet do not slide.
    contact: float = 10.0
    # Ours: each foot's normal ground force follows the space-time plan's (in units of the
    # robot's weight; see FrameQpcc._Objective). 0 switches it off (the paper's E_G).
    plan_forces: float = 10.0


@dataclasses.dataclass
class QpccConfig:
    """Options of the frame-by-frame QPCC."""

    weights: QpccWeights = dataclasses.field(default_factory=QpccWeights)
    # Translations in E_G are measured in units of this length, m.
    length_scale: float = 0.01
    # Angles in E_G are measured in units of this angle, rad.
    angle_scale: float = 0.05
    # Torque changes in E_τ are measured in units of this fraction of U_m.
    torque_scale: float = 1.0
    # Ours: E_F also compares the motion continued at the new velocity for this many frames
    # with the plan there (see FrameQpcc._Objective); 0: the paper's one-frame E_F. Measured on
    # the beetle's single-foot lift (400 frames): with 0 the swing knee chattered bang-bang at
    # ±U_m (206 saturated frames, COP margin 0: the torso tracked with the swing leg's reaction,
    # a dead-beat position tracker); with 10, 18 saturated frames, COP margin 15 mm, RMS q̃ - q̄
    # 0.17 instead of 0.23.
    lookahead_frames: int = 10
    # Ours: where that continued motion is compared with the plan. "chord": the plan L frames on,
    # q̄^{i+1+L}; "tangent": the plan continued along its own velocity, q̄^{i+1} + L (q̄^{i+2} -
    # q̄^i) / 2, i.e. E_F's lookahead row is the position error plus L times the velocity error;
    # "auto": tangent when the contact plan has flight phases (a frame with no foot down), else
    # chord. Aiming each frame at the chord is a low-pass filter on the plan: a motion of period S
    # frames is followed to |1 / (1 + (1 + L)(e^{2πi/S} - 1))| of its amplitude (0.55 for
    # the monster trot's 44-frame swing at L = 10), and the trot's swing feet landed 12-14 mm
    # behind their footholds, the torso 47 mm behind the plan by the cycle's end (RMS 4.9; with
    # 8 N·m motors 1.3 after three iterations). With the tangent: RMS 1.5 (0.36 with 8 N·m, one
    # iteration). On the walks the chord's anticipation of the contact changes matters more:
    # with the tangent the monster's walks lose ground contact on 2-4 frames (a hop) and fail.
    lookahead_target: str = "auto"
    # Weight of the contact-force regulariser (forces in units of the robot's weight).
    force_regularization: float = 1e-3
    # Labelling iterations per frame (the paper stops after 10).
    max_label_iterations: int = 10
    # A patch at most this high starts a frame as touching (static unless its foot swings), m;
    # higher ones start as breakage and are put down by the loop when they reach the ground.
    contact_distance: float = 2e-4
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
    # Ours: weight of a motor-torque regulariser α_r ||τ / U_m||² (not in Eq. 13, whose E_τ only
    # penalises the change from the last frame). On compliant soles the legs can squeeze the
    # ground at no cost to E_G, and E_τ then holds whatever squeeze a frame once took: a beetle
    # standing still kept its knees at ±0.45 U_m for 40 frames, 0.07 U_m with α_r = 0.1. Measured
    # on the five designs of README (crawls of the four robots, the beetle's lift), 0 -> 0.1: all
    # succeed either way; the lizard's COP margin 3.9 -> 17 mm and Drake playback 52 -> 30 mm,
    # the cow's largest torque 0.82 -> 0.74 U_m, the lift's 0.98 -> 0.74 U_m, the monster's COP
    # margin 1.6 -> 53 mm, the beetle crawl's playback 21 -> 17 mm.
    torque_regularization: float = 0.1
    # The kinematic-only baseline's inverse dynamics (section 7, "VS. Kinematic-Only
    # Optimization"): the torques make the joints follow the plan's joint angles ("rotation
    # constraints ... the constraint force can not be enforced at the root joint"), with the
    # ground contact and the motor limits; the root is left to the dynamics. True: E_S and E_F
    # (and its lookahead) act on the joint coordinates only, E_O, E_C and the plan's foot forces
    # are dropped (they would steer the root through the feet); set `cop_constraint` False too.
    joints_only: bool = False


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
    # True when each foot's patches move as one rigid sole tangentially (RigidFrameDynamics):
    # its static patches then hold the foot's horizontal position and heading (3 rows), not
    # 2 rows per patch (dependent, and ill-conditioned once the sole tilts a little).
    rigid_soles: bool = False


class FrameDynamicsError(RuntimeError):
    """A frame's dynamics cannot be linearised at this state (e.g. the coupled system's matrix
    is not positive definite because a skin element inverted): the pass stops at that frame."""


class FrameDynamics(Protocol):
    """What the QPCC needs from a (coupled) dynamics model, one frame at a time."""

    dt: float
    num_patches: int

    def Linearize(self, q: np.ndarray, v: np.ndarray) -> FrameLinearization:
        """The condensed step from state (q, v) with the inputs left free (raises
        FrameDynamicsError where the model has none)."""

    def Step(self, q: np.ndarray, v: np.ndarray, lin: FrameLinearization, z: np.ndarray):
        """Applies the inputs: returns (q_next, v_next)."""


class RigidFrameDynamics:
    """Skeleton-only frame dynamics: rigid links, five compliant contact patches per sole.

    Semi-implicit Euler: M (v⁺ - v) = Δt (B τ + Σ_p J_p^T f_p - C v + τ_g), Δq = Δt v⁺
    (q̇ = v in the Euler-angle coordinates).

    The sole (section 5.2: "the contact forces are applied to the foot link using the soft contact
    method [55]") is a thin layer under each foot, compliant in the normal direction and lumped
    into the five patches (four corners and the centre): patch p's contact point sits at the foot
    point plus the layer's compression, c_p = p_p(q) + n̂ f_⊥,p / k, with f_⊥,p the ground's
    normal force on it at the end of the frame (implicit, so a stiff sole stays stable). Its
    displacement over a frame is Δc_p = J_p Δq + n̂ (f_⊥,p - f_⊥,p^prev) / k: affine in
    z = [τ; f] like the skin's condensed map (Eq. 10-11). Tangentially the sole is rigid (the foot
    slides as one body). Why not rigid patches: with a flat rigid sole a stance foot has no motion
    left, and a 3-joint leg whose foot cannot move locks the torso (three planted feet give 18
    constraints on 6 + 9 coordinates), so no force multiplier can ever ask for a corner to lift
    (the labelling loop of section 5.3 sees only forces). A compliant sole lets the foot roll a
    little onto the patches that stay loaded; the patches it rolls off go into tension, are
    relabelled breakage, and the foot pivots on its edge or corner as a real flat foot does.

    Args:
        model: the skeleton (with the skin's weight on its links).
        dt: frame step, s.
        sole_stiffness: k per patch (normal), N/m; None: the robot's weight,
            shared by all 20 patches, compresses the sole by `sole_compression`; np.inf: rigid
            patches (f/k = 0).
        sole_compression: the static compression that sets the default stiffness, m.
        sole_damping_ratio: the sole's viscous damping as a fraction of critical for the robot's
            mass per patch (f_⊥ = k s + c ṡ, implicit): a stiff undamped sole lets the torso
            bounce on its feet from frame to frame.
    """

    def __init__(
        self,
        model: SkeletonModel,
        dt: float,
        *,
        sole_stiffness: float | None = None,
        sole_compression: float = 1e-4,
        sole_damping_ratio: float = 1.0,
    ):
        self.model = model
        self.dt = float(dt)
        corners = model.sole_corners  # (4, 4, 3)
        self.patch_points = np.concatenate(
            [corners, model.sole_centers[:, None, :]], axis=1
        )  # (4, 5, 3) foot frame
        self.num_patches = 20
        self.patch_foot = np.repeat(np.arange(4), 5)
        if sole_stiffness is None:
            weight = model.total_mass * model.gravity
            sole_stiffness = weight / (self.num_patches * sole_compression)
        if not sole_stiffness > 0.0:
            raise ValueError(f"sole_stiffness must be > 0 N/m, got {sole_stiffness}")
        self.sole_stiffness = float(sole_stiffness)
        self.compliance = 0.0 if np.isinf(sole_stiffness) else 1.0 / self.sole_stiffness
        # Viscous damping of the sole, c = 2 ζ sqrt(k m) with m the robot's mass per patch:
        # f_⊥ = k s + c ṡ, implicit: s⁺ = (f_⊥ + (c/Δt) s) / (k + c/Δt).
        if self.compliance:
            mass = model.total_mass / self.num_patches
            self.sole_damping = 2.0 * sole_damping_ratio * np.sqrt(self.sole_stiffness * mass)
            self._gain = 1.0 / (self.sole_stiffness + self.sole_damping / self.dt)
        else:
            self.sole_damping, self._gain = 0.0, 0.0
        # The sole's deformation f/k per patch, keyed by the q that Step returned (so repeated
        # solves of one frame do not change it); a q never stepped to starts undeformed.
        self._deformation = {}

    @staticmethod
    def _Key(q) -> bytes:
        return np.round(np.asarray(q, float), 12).tobytes()

    def PatchJacobians(self, q):
        """Foot points under the patches (P, 3) and their Jacobians (P, 3, nv)."""
        m = self.model
        pos, jac = [], []
        for j in range(4):
            p, J = m.FootPoints(q, j, self.patch_points[j])
            pos.append(p)
            jac.append(J)
        return np.concatenate(pos), np.concatenate(jac)

    def Deformation(self, q) -> np.ndarray:
        """(P, 3) the sole's deformation n̂ f_⊥/k at configuration q of this pass, m."""
        hit = self._deformation.get(self._Key(q))
        return np.zeros((self.num_patches, 3)) if hit is None else hit

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
        s = self.Deformation(q)
        # Δs = s⁺ - s = (f_⊥ - k s) / (k + c/Δt).
        dp0 = np.einsum("pij,j->pi", Jp, dq0) - self._gain * self.sole_stiffness * s
        dp_dz = np.einsum("pij,jk->pik", Jp, dq_dz)
        if self.compliance:
            for p in range(self.num_patches):
                dp_dz[p, 2, m.nu + 3 * p + 2] += self._gain
        return FrameLinearization(
            dq0, dq_dz, P + s, dp0, dp_dz, self.patch_foot, factor, rigid_soles=True
        )

    def Step(self, q, v, lin, z):
        dq = lin.dq0 + lin.dq_dz @ z
        q_next = q + dq
        forces = np.asarray(z[self.model.nu :], float).reshape(-1, 3)
        deformation = np.zeros_like(forces)
        if self.compliance:
            s = self.Deformation(q)[:, 2]
            deformation[:, 2] = self._gain * (forces[:, 2] + self.sole_damping / self.dt * s)
        self._deformation[self._Key(q_next)] = deformation
        if len(self._deformation) > 64:
            for old in list(self._deformation)[:-32]:
                self._deformation.pop(old, None)
        return q_next, dq / self.dt

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
    # (P, 3) patch displacements of the step, m; sliding patches' pyramid direction index.
    displacements: np.ndarray | None = None
    directions: dict = dataclasses.field(default_factory=dict)


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
        # Units of E_S and E_F per coordinate; the baseline's inverse dynamics has no rows for
        # the root (`joints_only`).
        self.scale = _Scales(model, config)
        if config.joints_only:
            self.scale[:NUM_BASE] = 0.0
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

    def _Objective(
        self,
        q,
        lin,
        q_target,
        dq_prev,
        tau_prev,
        flat_feet,
        support_feet,
        foot_forces=None,
        q_ahead=None,
    ):
        """E_G (Eq. 13-14) as a quadratic in z: returns (H, g, c) with E = ½ zᵀHz + gᵀz + c.

        `foot_forces` (4,) N: the plan's normal ground force per foot at this frame (NaN: none).
        Ours, not in Eq. (13): α_Λ Σ_j ((Σ_{p in foot j} F_⊥,p - F̄_j) / m g)². With stiff soles
        the split of the weight over the stance feet is statically indeterminate: it follows
        from sub-millimetre differences in sole compression that E_F (1 cm, 0.05 rad units) does
        not see. Without this term the tracker let the beetle's third stance foot go unloaded
        after a lift-off and balanced on the other diagonal's sole edges (torques bang-bang at
        ±U_m for 0.5 s), where the plan keeps a margin by loading that foot.
        """
        m, W = self.model, self.config.weights
        S = self.scale
        nz = lin.dq_dz.shape[1]
        blocks = []  # (weight, A, r): weight * ||A z + r||²
        D = lin.dq_dz * S[:, None]
        d0 = lin.dq0 * S
        blocks.append((W.smoothness, D, d0 - dq_prev * S))  # E_S
        blocks.append((W.follow, D, (q + lin.dq0 - q_target) * S))  # E_F
        L = self.config.lookahead_frames
        if L > 0 and q_ahead is not None:
            # The state continued L frames at the new velocity, q + (1 + L) Δq, against the
            # plan there: E_F then sees velocity errors too (a one-frame E_F is a dead-beat on
            # position that lets a tipping torso gather speed unnoticed).
            blocks.append((W.follow, (1 + L) * D, (q + (1 + L) * lin.dq0 - q_ahead) * S))
        if self.config.joints_only:
            flat_feet, support_feet, foot_forces = (), (), None
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
        unit = self.config.torque_scale * self.U
        sel[:, : m.nu] = np.diag(1.0 / unit)
        blocks.append((W.torque, sel, -tau_prev / unit))  # E_τ
        if self.config.torque_regularization > 0.0:  # ours: α_r ||τ / U_m||²
            blocks.append((self.config.torque_regularization, sel, np.zeros(m.nu)))
        for j in support_feet:  # E_C: supporting feet do not move
            _, Jp = m.FootPoints(q, j, m.sole_centers[j])
            Jp = Jp[0] / self.config.length_scale
            blocks.append((W.contact, Jp[:2] @ lin.dq_dz, Jp[:2] @ lin.dq0))
        if foot_forces is not None and W.plan_forces > 0.0:
            weight = m.total_mass * m.gravity
            for j in range(4):
                if not np.isfinite(foot_forces[j]):
                    continue
                row = np.zeros((1, nz))
                for p in np.flatnonzero(lin.patch_foot == j):
                    row[0, m.nu + 3 * p + 2] = 1.0 / weight
                blocks.append((W.plan_forces, row, np.array([-foot_forces[j] / weight])))
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
        foot_forces=None,
        q_ahead=None,
        lin: FrameLinearization | None = None,
    ) -> FrameResult:
        """Solves one frame's QPCC from state (q, v) toward q̄^{i+1} = q_target.

        Args:
            swing_feet: feet the contact plan lifts at the next frame: their patches start as
                breakage (the contact plan says when a foot leaves the ground, as the paper's
                user-given footfall pattern does; the loop may still put a patch back down).
            foot_forces: (4,) the plan's normal force per foot, N (see `_Objective`), or None.
            q_ahead: E_F's lookahead target (`LookaheadTarget`), or None.
        """
        start = time.perf_counter()
        cfg = self.config
        if lin is None:
            lin = self.dyn.Linearize(q, v)
        H, g, c = self._Objective(
            q, lin, q_target, dq_prev, tau_prev, flat_feet, support_feet, foot_forces, q_ahead
        )
        heights = lin.patches[:, 2]
        P = len(heights)
        labels = [""] * P
        directions = {}
        for p in np.flatnonzero(heights < cfg.approach_distance):
            touching = heights[p] <= cfg.contact_distance
            lifting = int(lin.patch_foot[p]) in swing_feet
            labels[p] = STATIC if touching and not lifting else BREAKAGE
        energies, solved, history = [], [], set()
        failure, best = None, None
        for iteration in range(cfg.max_label_iterations):
            history.add(_LabellingKey(labels, directions))
            # Static patches keep their force inside the friction pyramid (Eq. 17) from the first
            # solve: a rigid foot's tangential forces are statically indeterminate, so Eq. (18)'s
            # free multipliers would only show the regulariser's even split, not whether the
            # foot can stick. Eq. (18) (free) is the fallback when friction cannot hold them all.
            cone = True
            try:
                result = self._SolveLabelled(lin, H, g, c, labels, directions, static_cone=True)
            except RuntimeError as e:
                failure = str(e)
                if iteration > 0:
                    break
                try:
                    cone = False
                    result = self._SolveLabelled(lin, H, g, c, labels, directions)
                except RuntimeError as e2:
                    failure = str(e2)
                    break
            new_labels, new_dirs, violated = self._Relabel(
                lin, labels, directions, result, static_cone=cone, swing_feet=swing_feet
            )
            result["labels"], result["directions"] = list(labels), dict(directions)
            # Consistent: the solution satisfies the complementarity of its labels (no loaded
            # patch pulls, no static force outside the pyramid). The loop then only tries
            # changes that may lower E_G (a binding pyramid -> sliding, a breaking patch held
            # up by the ground -> static) and stops when one does not.
            result["consistent"] = not violated
            energies.append(result["energy"])
            solved.append(result)
            if result["consistent"]:
                improved = best is None or result["energy"] < best["energy"] - 1e-9 * (
                    1.0 + abs(best["energy"])
                )
                if improved:
                    best = result
                else:
                    break
            if (new_labels, new_dirs) == (labels, directions):
                break
            if _LabellingKey(new_labels, new_dirs) in history:
                break  # the loop would cycle
            labels, directions = new_labels, new_dirs
        if not solved:
            raise RuntimeError(failure or "no labelling solved")
        # A consistent labelling (complementarity holds) first; among the others the lowest
        # energy without slack, then the lowest energy.
        chosen = min(
            solved,
            key=lambda r: (not r["consistent"], bool(r["slack"]), r["energy"]),
        )
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
            consistent=bool(chosen["consistent"]),
            infeasible=chosen["slack"],
            cop=cop,
            cop_margin=margin,
            solve_time=time.perf_counter() - start,
            factor_time=lin.factor_time,
            num_qp_variables=chosen["num_vars"],
            displacements=lin.dp0 + np.einsum("pik,k->pi", lin.dp_dz, z),
            directions=chosen["directions"],
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
        """One QP for a fixed labelling (Eqs. 15-18).

        Patch-wise friction (a soft sole: the skin's patches move on their own): a static patch
        has a 3-D force (free in Eq. 18; inside the friction pyramid μ F_⊥ - 1ᵀF_∥ >= 0 of
        Eq. 17 when `static_cone`) and stays put; a sliding patch has F = F_⊥ (n̂ + μ d_k) on the
        pyramid's boundary along its active direction d_k (Eq. 16 with 1ᵀF_∥ = μ F_⊥) and
        Eq. (16)'s auxiliary λ >= 0: d_kᵀ Δc_∥ + λ = 0 and d_iᵀ Δc_∥ + λ >= 0 for the other
        directions, so it slips inside the quarter-plane opposite d_k (maximum dissipation on
        the pyramid) or not at all (λ = 0). Breaking patches carry no force and stay above the
        ground.

        Foot-wise friction (`lin.rigid_soles`: a rigid sole moves as one body, so its patches'
        tangential forces are statically indeterminate): each loaded patch carries a normal force
        (Eq. 15) and each foot one tangential force (F_x, F_y), shared by its loaded patches,
        with the same pyramid complementarity: sticking, the loaded patches do not slip (their
        mean); sliding, F_∥ = μ ΣF_⊥ d_k and they slip opposite d_k. Torsional friction is
        left out (the sole may turn about its normal): a 3-joint leg (hip yaw + two parallel
        pitch joints) turns its planted foot whenever the torso translates; the skin's soles do
        that by deforming (patch-wise friction), a rigid sole only by slipping, and labelling
        twist-slip per foot made the loop wander (12% of a lift's frames consistent, measured).
        """
        m, cfg = self.model, self.config
        nu = m.nu
        P = len(labels)
        weight = m.total_mass * m.gravity
        rigid = bool(getattr(lin, "rigid_soles", False))
        layout = (
            self._RigidSoleLayout(lin, labels, directions)
            if rigid
            else self._PatchLayout(lin, labels, directions)
        )
        T, ny = layout["T"], layout["ny"]
        lam_unit = 1e-3  # λ in mm
        prog = MathematicalProgram()
        y = prog.NewContinuousVariables(ny, "y")
        Hy = T.T @ H @ T + 1e-9 * np.eye(ny)
        prog.AddQuadraticCost(Hy, T.T @ g, c, y, is_convex=True).evaluator().set_description("E_G")
        slacks = []

        def add_inequality(A, lb, ub, name):
            """lb <= A y <= ub, with a penalised slack in elastic mode."""
            if elastic:
                s = prog.NewContinuousVariables(len(lb), f"slack_{name}")
                prog.AddBoundingBoxConstraint(0.0, np.inf, s)
                prog.AddLinearCost(np.full(len(lb), cfg.slack_penalty), 0.0, s)
                ys = np.concatenate([y, s])
                b1 = prog.AddLinearConstraint(
                    np.hstack([A, np.eye(len(lb))]), lb, np.full(len(lb), np.inf), ys
                )
                prog.AddLinearConstraint(
                    np.hstack([A, -np.eye(len(lb))]), np.full(len(lb), -np.inf), ub, ys
                )
                slacks.append((name, s))
                b1.evaluator().set_description(name)
                return b1
            b = prog.AddLinearConstraint(A, lb, ub, y)
            b.evaluator().set_description(name)
            return b

        if cfg.torque_limits:
            add_inequality(np.eye(nu, ny), -self.U, self.U, "motor_limits")
        no_pen, cone = {}, {}
        eq_rows = []

        def sector(U_rows, u0, k, lam_col, dirs, name):
            """Eq. (16) for the active direction k: d_kᵀu + λ = 0, d_iᵀu + λ >= 0, λ >= 0."""
            Du = dirs @ U_rows
            Du[:, lam_col] += lam_unit
            eq_rows.append((Du[k : k + 1], np.array([-dirs[k] @ u0])))
            others = [i for i in range(len(dirs)) if i != k]
            b = prog.AddLinearConstraint(
                Du[others], -dirs[others] @ u0, np.full(len(others), np.inf), y
            )
            b.evaluator().set_description(name)
            prog.AddBoundingBoxConstraint(0.0, np.inf, y[lam_col])

        pyramid = np.array([[sx, sy, -self.mu] for sx in (1.0, -1.0) for sy in (1.0, -1.0)])
        for p in range(P):
            if not labels[p]:
                continue
            A = lin.dp_dz[p] @ T  # patch displacement Δc = d0 + A y
            d0 = lin.dp0[p]
            height = lin.patches[p, 2]
            if labels[p] == BREAKAGE:  # no force; may only stay above the ground
                no_pen[p] = prog.AddLinearConstraint(
                    A[2:3], np.array([-height - d0[2]]), np.array([np.inf]), y
                )
                no_pen[p].evaluator().set_description(f"no_penetration[{p}]")
                continue
            # Eq. (15): a loaded patch stays on the ground.
            eq_rows.append((A[2:3], np.array([-height - d0[2]])))
            if rigid:
                continue
            if labels[p] == STATIC:
                eq_rows.append((A[:2], -d0[:2]))  # and does not slip (Eq. 17)
                if static_cone:
                    F = T[nu + 3 * p : nu + 3 * p + 3]
                    cone[p] = prog.AddLinearConstraint(
                        (pyramid @ F) / weight, np.full(4, -np.inf), np.zeros(4), y
                    )
                    cone[p].evaluator().set_description(f"static_friction[{p}]")
            else:
                col, lc = layout["fcol"][p], layout["lcol"][p]
                prog.AddBoundingBoxConstraint(0.0, np.inf, y[col])
                sector(A[:2], d0[:2], directions[p], lc, PYRAMID, f"sliding[{p}]")
        if rigid:
            for j, foot in layout["feet"].items():
                U_rows, u0 = foot["U"], foot["u0"]
                if j in directions:
                    sector(U_rows, u0, directions[j], foot["lcol"], PYRAMID, f"slide[{j}]")
                    continue
                eq_rows.append((U_rows, -u0))  # the foot sticks (Eq. 17)
                if static_cone:
                    rows = np.zeros((4, ny))
                    for r, (sx, sy, _) in enumerate(pyramid):
                        rows[r, foot["wcol"] : foot["wcol"] + 2] = (sx, sy)
                        rows[r] -= self.mu * foot["fz"]
                    cone[j] = prog.AddLinearConstraint(
                        rows / weight, np.full(4, -np.inf), np.zeros(4), y
                    )
                    cone[j].evaluator().set_description(f"static_friction[foot {j}]")
        if eq_rows:
            # Dependent rows (a stiff sole): keep an orthonormal basis of their span (interior-
            # point QP solvers need independent rows), after checking that the right-hand side
            # lies in it (otherwise the contacts cannot all hold).
            A_eq = np.vstack([a for a, _ in eq_rows])
            b_eq = np.concatenate([r for _, r in eq_rows])
            with SingleThreadedBlas():  # ~24 x 80: threads only spin (drakebots.runtime)
                U, S, _ = np.linalg.svd(A_eq, full_matrices=False)
            keep = S > 1e-9 * max(S.max(), 1e-300)
            Uk = U[:, keep]
            if np.abs(b_eq - Uk @ (Uk.T @ b_eq)).max() > 1e-9 + 1e-6 * np.abs(b_eq).max():
                raise RuntimeError("contacts_fixed: the static patches' rows are inconsistent")
            b = prog.AddLinearEqualityConstraint(Uk.T @ A_eq, Uk.T @ b_eq, y)
            b.evaluator().set_description("contacts_fixed")
        # COP (Eq. 12): Σ_p (a·p_p - b) F_z,p <= 0 over the patches in contact.
        in_contact = [p for p in range(P) if labels[p] in (STATIC, SLIDING)]
        if cfg.cop_constraint and in_contact:
            polygon = self._Polygon(lin, in_contact)
            if polygon is not None:
                Ah, bh = polygon.HalfSpaces(margin=cfg.cop_margin)
                rows = np.zeros((len(bh), ny))
                for p in in_contact:
                    rows += np.outer(Ah @ lin.patches[p, :2] - bh, T[nu + 3 * p + 2])
                add_inequality(rows / weight, np.full(len(bh), -np.inf), np.zeros(len(bh)), "cop")
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
        wrenches = {}
        if rigid:
            for j, foot in layout["feet"].items():
                fz = float(foot["fz"] @ yv)
                if j in directions:
                    w = self.mu * fz * PYRAMID[directions[j]]
                else:
                    w = yv[foot["wcol"] : foot["wcol"] + 2].copy()
                wrenches[j] = (w, fz, foot["U"] @ yv + foot["u0"])
        return {
            "z": z,
            "energy": float(0.5 * z @ H @ z + g @ z + c),
            "slack": violated,
            "no_penetration_duals": {
                p: float(np.abs(result.GetDualSolution(b)).max()) for p, b in no_pen.items()
            },
            "cone_duals": {
                key: float(np.abs(result.GetDualSolution(b)).max()) for key, b in cone.items()
            },
            "wrenches": wrenches,
            "num_vars": prog.num_vars(),
        }

    def _PatchLayout(self, lin, labels, directions):
        """z = T y for patch-wise friction: y = [τ; static (f_x, f_y, f_z); sliding (F_⊥, λ)]."""
        nu, P, mu = self.model.nu, len(labels), self.mu
        fcol, lcol = {}, {}
        ny = nu
        for p in range(P):
            if labels[p] == STATIC:
                fcol[p] = ny
                ny += 3
            elif labels[p] == SLIDING:
                fcol[p], lcol[p] = ny, ny + 1
                ny += 2
        T = np.zeros((nu + 3 * P, ny))
        T[:nu, :nu] = np.eye(nu)
        for p, col in fcol.items():
            rows = slice(nu + 3 * p, nu + 3 * p + 3)
            if labels[p] == STATIC:
                T[rows, col : col + 3] = np.eye(3)
            else:
                d = PYRAMID[directions[p]]
                T[rows, col] = [mu * d[0], mu * d[1], 1.0]
        return {"T": T, "ny": ny, "fcol": fcol, "lcol": lcol}

    def _RigidSoleLayout(self, lin, labels, directions):
        """z = T y for foot-wise friction: y = [τ; F_⊥ per loaded patch; per foot in contact the
        tangential force (F_x, F_y), shared evenly by its loaded patches, when it sticks, λ when
        it slides]."""
        nu, P, mu = self.model.nu, len(labels), self.mu
        loaded = [p for p in range(P) if labels[p] in (STATIC, SLIDING)]
        ny = nu
        fzcol = {}
        for p in loaded:
            fzcol[p] = ny
            ny += 1
        feet = {}
        for j in sorted({int(lin.patch_foot[p]) for p in loaded}):
            feet[j] = {"lcol": ny} if j in directions else {"wcol": ny}
            ny += 1 if j in directions else 2
        T = np.zeros((nu + 3 * P, ny))
        T[:nu, :nu] = np.eye(nu)
        for p, col in fzcol.items():
            T[nu + 3 * p + 2, col] = 1.0
        for j, foot in feet.items():
            mine = [p for p in np.flatnonzero(lin.patch_foot == j) if p in fzcol]
            fz = np.zeros(ny)
            fz[[fzcol[p] for p in mine]] = 1.0
            # (F_x, F_y) shared evenly by the foot's loaded patches.
            G = np.zeros((3 * P, 2))
            for p in mine:
                G[3 * p : 3 * p + 2] = np.eye(2) / len(mine)
            if j in directions:
                T[nu:] += np.outer(G @ (mu * PYRAMID[directions[j]]), fz)
            else:
                T[nu:, foot["wcol"] : foot["wcol"] + 2] = G
            foot["fz"] = fz
            foot["loaded"] = mine
        for foot in feet.values():
            # The slip: the loaded patches' mean tangential displacement (work-conjugate).
            mine = foot["loaded"]
            foot["U"] = np.mean([lin.dp_dz[p, :2] @ T for p in mine], axis=0)
            foot["u0"] = np.mean([lin.dp0[p, :2] for p in mine], axis=0)
        return {"T": T, "ny": ny, "feet": feet}

    def _Relabel(self, lin, labels, directions, result, static_cone=False, swing_feet=()):
        """Eq. (19): re-label each patch (and, for rigid soles, each foot) from its forces
        (multipliers) and motion. Returns (labels, directions, violated).

        Violations of the labels' complementarity (fixed first, all at once): a loaded patch
        whose normal force pulls (F_⊥ <= 0) -> breakage; a static force outside the pyramid
        (Eq. 18's free multipliers) -> sliding along the pyramid direction closest to it.
        Without violations, the changes that may lower E_G: a breaking patch at the ground
        whose no-penetration row pushes (dual > 0) -> static (not on a foot the plan swings:
        touching the ground with no force is consistent, and leaning on a swinging foot to
        follow the plan's joint angles made the robot trip at lift-off), else the static patch
        (or foot)
        whose pyramid binds hardest (Eq. 17 active: friction is what stops it) -> sliding. A
        sliding patch that does not slip (λ = 0) has its force on the cone and no motion, which
        both labels allow: it stays sliding while it carries load.
        """
        nu = self.model.nu
        z = result["z"]
        f = z[nu:].reshape(-1, 3)
        dp = lin.dp0 + np.einsum("pik,k->pi", lin.dp_dz, z)
        weight = self.model.total_mass * self.model.gravity
        tol_f = 1e-6 * weight
        tol_dual = 1e-6
        rigid = bool(getattr(lin, "rigid_soles", False))
        new = list(labels)
        for p, label in enumerate(labels):
            if label in (STATIC, SLIDING) and f[p, 2] <= tol_f:
                new[p] = BREAKAGE
        if rigid:
            dirs = dict(directions)
            for j, (w, fz, _) in result["wrenches"].items():
                if j not in directions and np.abs(w).sum() > self.mu * fz + tol_f:
                    dirs[j] = int(np.argmax(PYRAMID @ w))
        else:
            dirs = {p: d for p, d in directions.items() if new[p] == SLIDING}
            for p, label in enumerate(labels):
                g_t = f[p, :2]
                if label == STATIC and new[p] == STATIC:
                    if np.abs(g_t).sum() > self.mu * f[p, 2] + tol_f:
                        new[p] = SLIDING
                        dirs[p] = int(np.argmax(PYRAMID @ g_t))
        violated = new != list(labels) or dirs != directions
        if not violated:
            # Changes that may lower the energy: one kind at a time.
            for p, label in enumerate(labels):
                if label == BREAKAGE and int(lin.patch_foot[p]) not in swing_feet:
                    gap = lin.patches[p, 2] + dp[p, 2]
                    if gap < 1e-7 and result["no_penetration_duals"].get(p, 0.0) > tol_dual:
                        new[p] = STATIC
            if new == list(labels) and static_cone:
                keys = result["wrenches"] if rigid else [p for p in range(len(labels))]
                binding = {
                    key: result["cone_duals"].get(key, 0.0)
                    for key in keys
                    if key not in directions
                    and (rigid or labels[key] == STATIC)
                    and result["cone_duals"].get(key, 0.0) > tol_dual
                }
                if binding:
                    key = max(binding, key=binding.get)
                    force = result["wrenches"][key][0] if rigid else f[key, :2]
                    dirs[key] = int(np.argmax(PYRAMID @ force))
                    if not rigid:
                        new[key] = SLIDING
        if rigid:
            loaded_feet = {
                int(lin.patch_foot[p]) for p in range(len(new)) if new[p] in (STATIC, SLIDING)
            }
            dirs = {j: k for j, k in dirs.items() if j in loaded_feet}
            for p in range(len(new)):
                if new[p] in (STATIC, SLIDING):
                    new[p] = SLIDING if int(lin.patch_foot[p]) in dirs else STATIC
        return new, dirs, violated


def _LabellingKey(labels, directions):
    return tuple(labels), tuple(sorted(directions.items()))


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


LOOKAHEAD_TARGETS = ("auto", "chord", "tangent")


def ResolveLookahead(target: str, contact_plan: np.ndarray) -> str:
    """`QpccConfig.lookahead_target` made concrete: "auto" is "tangent" for a contact plan
    (4, N) with flight phases (some frame with no foot down), else "chord"."""
    if target not in LOOKAHEAD_TARGETS:
        raise ValueError(f"lookahead_target must be one of {LOOKAHEAD_TARGETS}, got {target!r}")
    if target != "auto":
        return target
    return "tangent" if not np.asarray(contact_plan, bool).any(axis=0).all() else "chord"


def LookaheadTarget(q_plan: np.ndarray, i: int, L: int, target: str) -> np.ndarray:
    """The plan that E_F's lookahead row compares q^i + (1 + L) Δq^i with (see
    `QpccConfig.lookahead_target`): the chord's q̄^{i+1+L} or the tangent's q̄^{i+1} + L q̄'
    (q̄' the central difference at frame i+1, one-sided at the plan's last frame)."""
    N = len(q_plan)
    if target == "chord":
        return q_plan[min(i + 1 + L, N - 1)]
    a, b = i, min(i + 2, N - 1)
    return q_plan[i + 1] + L * (q_plan[b] - q_plan[a]) / (b - a)


def RunFrameByFrame(
    model: SkeletonModel,
    dynamics: FrameDynamics,
    qpcc: FrameQpcc,
    q_plan: np.ndarray,
    contact_plan: np.ndarray,
    *,
    v0: np.ndarray | None = None,
    flat_active: np.ndarray | None = None,
    force_plan: np.ndarray | None = None,
    progress=None,
) -> FrameByFrameResult:
    """Runs the QPCC frame after frame along the plan q̄ (N, nq) from q̄^0.

    Args:
        contact_plan: (4, N) planned stance (for E_C: feet that support the body).
        force_plan: (N, 4) the space-time plan's normal force per foot at each frame, N
            (`QpccWeights.plan_forces`; None: not followed).
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
    target = ResolveLookahead(qpcc.config.lookahead_target, contact_plan)
    for i in range(N - 1):
        flat = [j for j in range(4) if flat_active[j, min(i + 1, N - 1)]]
        nxt = min(i + 1, N - 1)
        support = [j for j in range(4) if contact_plan[j, i] and contact_plan[j, nxt]]
        swing = [j for j in range(4) if not contact_plan[j, nxt]]
        kwargs = dict(flat_feet=flat, support_feet=support, swing_feet=swing)
        if force_plan is not None:
            kwargs["foot_forces"] = force_plan[nxt]
        if qpcc.config.lookahead_frames > 0:
            kwargs["q_ahead"] = LookaheadTarget(q_plan, i, qpcc.config.lookahead_frames, target)
        try:
            if i == 0:
                # Frame 0 is solved twice (below) from the same state: one linearisation serves
                # both (on the monster's 42.9k-vertex skin a linearisation is ~2 s).
                kwargs["lin"] = dynamics.Linearize(q, v)
            r = qpcc.SolveFrame(q, v, q_plan[i + 1], dq_prev, tau_prev, **kwargs)
        except FrameDynamicsError as e:
            infeasible.append((i, [f"dynamics ({e})"]))
            done = i
            break
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
    "FrameDynamicsError",
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
