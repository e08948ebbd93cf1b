"""Space-time optimization of the skeleton with the skin's effect approximated (paper section 5.1).

`MakeSpaceTimeProgram` transcribes Eq. (9): over the plan's knots it optimizes the skeleton
configurations q^i, the contact forces F_c,j^i and contact torques τ_c,j^i of the feet on the
ground, minimizing E_A of Eq. (3) = Σ_i α_t E_τ + α_s E_S + α_c E_COM + α_e E_EE + α_f E_F + α_o E_O
subject to the contact (Eq. 4), COP (Eq. 5), optional periodic (Eq. 6), momentum (Eq. 7) and
friction (Eq. 8) constraints. The skin enters as in the paper: as extra mass carried by the links
(section 5.4) and as coupling forces at the glue vertices, external loads that are inputs here
(`ExternalLoads`) and come from the last frame-by-frame pass.

Each cost and constraint is a small `Add<Thing>` builder that names its bindings
(`com[12]`, `momentum[12]`, `cop[12]`, ...), so `result.GetInfeasibleConstraintNames(prog)` reads
as the paper's equations. Every nonlinear term has an exact gradient: kinematic terms from Drake's
Jacobians (q̇ = v in our Euler-angle coordinates), inverse dynamics through AutoDiff.

Choices not in the paper (see `SpaceTimeConfig`): knots every `knot_frames` frames (the plan is
then interpolated to frames); tracking errors measured in units of `length_scale` (the paper gives
weights, not units); the momentum constraint written as the six unactuated rows of inverse
dynamics (the floating base's Newton-Euler equations: the rate of change of the robot's linear and
angular momentum equals gravity plus the contact wrenches, Eq. 7), so the torques of E_τ come from
the same discrete dynamics; a weak torso-attitude term (the paper's E_F plays that role after the
first iteration).

The kinematic-only baseline (section 7, "VS. Kinematic-Only Optimization", after Megaro et al.)
is the same program with `dynamics=False`: no forces, no torques, no momentum, and the COP taken
as the ground projection of the COM.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from pydrake.autodiffutils import ExtractGradient, ExtractValue, InitializeAutoDiff
from pydrake.solvers import (
    IpoptSolver,
    MathematicalProgram,
    SnoptSolver,
    SolverOptions,
)

from drakebots.analysis.support import CopFromWrench, SupportPolygon
from drakebots.optimization.gauss_newton import GaussNewtonOptions, SolveLeastSquaresSqp
from drakebots.skinned.motion import SampledMotion
from drakebots.skinned.skeleton_model import NUM_BASE, ExternalLoads, SkeletonModel
from drakebots.skinned.space_time_nlp import SpaceTimeNlp
from drakebots.skinned.space_time_terms import (
    CoordinateScale,
    MotorLoad,
    SoleLaw,
    SolePatchPoints,
    SoleStiffness,
)


@dataclasses.dataclass
class SpaceTimeWeights:
    """The weights of Eq. (3), paper values (section 5.1, after Eq. 9)."""

    # α_t: joint torques (E_τ).
    torque: float = 1e-2
    # α_s: smoothness (E_S).
    smoothness: float = 0.5
    # α_c: COM tracking (E_COM).
    com: float = 1.0
    # α_e: end-effector tracking (E_EE).
    end_effector: float = 1.0
    # α_f: follow the previous frame-by-frame motion (E_F); raised 10% per iteration.
    follow: float = 1.0
    # α_o: flat feet near contact changes (E_O).
    orientation: float = 10.0
    # Ours: torso roll and pitch level, heading as planned (only until E_F takes over).
    base_attitude: float = 1.0
    # Ours: the body's own joints (spine, neck, tail; only the lizard has them) near home, per
    # rad² (`AddPostureCost`).
    posture: float = 1.0


@dataclasses.dataclass
class SpaceTimeConfig:
    """Options of the space-time step."""

    weights: SpaceTimeWeights = dataclasses.field(default_factory=SpaceTimeWeights)
    # Knot spacing in frames (1: every frame, as the paper; larger: faster, plan interpolated).
    knot_frames: int = 4
    # Tracking errors (COM, feet, torso position) are measured in units of this length, m.
    length_scale: float = 0.01
    # E_S measures angles (torso and joints) in units of this angle, rad: the frame-by-frame
    # step's angle unit (QpccConfig.angle_scale), as lengths are in its length unit. The paper
    # writes E_S on q in m and rad; with lengths in cm and angles left in rad, a 1 cm wobble of
    # the torso cost as much as a 57° one of a joint, and the plans zig-zagged their joints
    # between knots: the lizard's spine at ±2° every 0.04 s, 2.4 U_m at its tail and 6.4 U_m at
    # a knee. Measured with 1 / 0.05 / 0.01 rad (crawls of the four robots, the beetle's lift):
    # the lizard's plan asks 6.4 / 2.7 / 1.2 U_m at most; the cow's space-time step
    # failed its subproblem (DualInfeasible) / converges / converges; with 0.05 every design
    # succeeds and every space-time step converges (the monster's on its second iteration),
    # with 0.01 the space-time steps of the beetle's crawl and the monster's walk stop short
    # (iteration limit, DualInfeasible) and with 0.02 the beetle's crawl hops on one frame.
    smoothness_angle_scale: float = 0.05
    # E_O is active while a foot is on the ground and this many frames around its contact changes
    # (the paper: 5).
    orientation_window_frames: int = 5
    # The COP is kept this far inside the support polygon, m.
    cop_margin: float = 0.003
    # Include forces, torques and the momentum constraint (False: the kinematic-only baseline).
    dynamics: bool = True
    # Enforce the COP constraint (Eq. 5); off only to reproduce the paper's failed trot (Fig. 13c).
    cop_constraint: bool = True
    # Ours: the planned motor torques (inverse dynamics, with the skin's coupling loads) stay
    # within this fraction of U_m at every knot (`AddMotorLimitConstraints`; 0: off, as the
    # paper's Eq. 9, which leaves |τ| <= U_m to the frame-by-frame step alone). On by default
    # since the plans of the weaker robots asked for more than their motors give: the lizard's
    # crawl planned without it asks up to 2.7 U_m at the contact changes, its first
    # frame-by-frame pass misses the agreement threshold (RMS 1.05 > 1, motors at the limit on
    # 444 of 480 frames) and the second is worse (3.82, 4 infeasible frames), so the design
    # failed; with it the first pass agrees (RMS 0.73). Measured on every generated design
    # (README): all succeed as before, each space-time step converging within 80 iterations
    # (the motor rows need more than 40: lizard 52, monster's walks 39-72).
    motor_limit_fraction: float = 1.0
    # How a stance foot pushes on the ground (see `AddSoleContactConstraints`): "soft_sole"
    # (ours: the frame-by-frame step's compliant sole, normal forces at the sole's four corners
    # and centre set by how far each is pressed into the ground) or "sole_center" (the paper's
    # Eq. 8: one free force and torque at the sole centre, the torque bounded by the force times
    # the sole's circumradius, i.e. the foot's own COP anywhere in that disk).
    contact_model: str = "soft_sole"
    # The soft sole's static compression under the robot's weight shared by all 20 patches, m
    # (sets the stiffness per patch; the same default as qpcc.RigidFrameDynamics).
    sole_compression: float = 1e-4
    # Smoothing of the sole's contact law (softplus width) as a fraction of sole_compression.
    sole_smoothing: float = 0.2
    # "gauss_newton" (the paper's), "snopt" or "ipopt".
    solver: str = "gauss_newton"
    # Iteration limit of the NLP solver (Gauss-Newton or SNOPT major iterations); the motor rows
    # of `motor_limit_fraction` need more than 40 (see there).
    max_iterations: int = 80
    # Feasibility and optimality tolerances of the NLP solver (constraints are in m, or in units
    # of the robot's weight m g for the momentum rows).
    feasibility_tolerance: float = 1e-5
    optimality_tolerance: float = 1e-4
    # Gauss-Newton stops when the merit's relative decrease falls below this.
    merit_tolerance: float = 1e-4
    # The same for the kinematic-only solve that only warm-starts the dynamic one
    # (`KinematicWarmStart`): past a feasible plan whose cost has settled to ~1%, its further
    # iterations crawl (beetle lift: 10 of its 16 iterations changed the cost by 0.2% in all) and
    # the dynamic solve moves the plan more than that anyway.
    warm_start_merit_tolerance: float = 1e-2
    # Wall-clock limit of one space-time solve, s (0: none).
    time_limit: float = 0.0


@dataclasses.dataclass
class SpaceTimeVariables:
    """Decision variables of the space-time program (MathematicalProgram variables)."""

    q: np.ndarray  # (K, nq)
    force: np.ndarray  # (K, 4, 3) normalised contact forces F / (m g)
    torque: np.ndarray  # (K, 4, 3) normalised contact torques τ_c / (m g ν_b)
    knot_times: np.ndarray  # (K,) s
    contact: np.ndarray  # (4, K) bool
    force_scale: float  # N per unit of `force`
    torque_scale: float  # N·m per unit of `torque`
    # (K, 4, 5) normal forces at the sole patches (4 corners, centre) / (m g) ("soft_sole").
    patch: np.ndarray | None = None


@dataclasses.dataclass
class SpaceTimeTargets:
    """The plan sampled at the knots (what Eqs. 3-5 track and constrain)."""

    times: np.ndarray
    com: np.ndarray  # (K, 3)
    feet: np.ndarray  # (4, K, 3)
    contact: np.ndarray  # (4, K)
    base_yaw: np.ndarray  # (K,)
    orientation_active: np.ndarray  # (4, K)
    polygons: list  # K SupportPolygon (None where no foot is planned on the ground)
    displacement: np.ndarray  # (nq,) q_end - q_start for periodic motions (base translation)


@dataclasses.dataclass
class SpaceTimeResult:
    """A solved space-time step."""

    success: bool
    status: str
    q_knots: np.ndarray
    knot_times: np.ndarray
    forces: np.ndarray  # (K, 4, 3) N
    torques: np.ndarray  # (K, 4, 3) N·m
    joint_torques: np.ndarray  # (K, nu) N·m, from inverse dynamics
    cost: float
    infeasible: list
    solve_time: float
    costs: dict
    history: list = dataclasses.field(default_factory=list)
    # (K, 4, 5) normal forces at the sole patches (4 corners, centre), N ("soft_sole").
    patch_forces: np.ndarray | None = None


def _Knots(motion: SampledMotion, knot_frames: int):
    """Knot frame indices: every knot_frames frames, always including the last frame."""
    N = motion.num_frames
    idx = list(range(0, N, max(1, knot_frames)))
    if idx[-1] != N - 1:
        idx.append(N - 1)
    return np.array(idx)


def PlannedSupportPolygons(model: SkeletonModel, motion: SampledMotion, frames) -> list:
    """The support polygon of Eq. (5) at each of `frames`: the hull of the sole corners of the
    feet the contact plan has on the ground, placed at their planned footholds (None where no
    foot is down)."""
    polygons = []
    for frame in frames:
        stance = [j for j in range(4) if motion.contact[j, frame]]
        if not stance:
            polygons.append(None)
            continue
        points = []
        for j in stance:
            yaw = motion.base_yaw[frame]
            R = np.array([[np.cos(yaw), -np.sin(yaw)], [np.sin(yaw), np.cos(yaw)]])
            local = model.sole_corners[j][:, :2] - model.sole_centers[j][:2]
            points.append(motion.feet[j, frame, :2] + local @ R.T)
        polygons.append(SupportPolygon(np.vstack(points)))
    return polygons


def PlanCop(model: SkeletonModel, motion: SampledMotion, result: SpaceTimeResult):
    """The plan's own COP at each knot, and its margin to the planned support polygon.

    The COP of the ground wrench the plan's contact forces and torques make at the stance feet's
    sole centres (the quantity Eq. 5 constrains; `AddCopConstraints`), so a plan made with the
    COP constraint off shows where it would have put the COP: the paper's Fig. 11 (red balls: the
    first plan's COPs, two of them outside the polygon; green: the plan made with the skin).

    Returns:
        (cop (K, 2) m, margin (K,) m: > 0 inside, < 0 outside); NaN where no foot is planned
        down or the plan's feet carry no load.
    """
    frames = np.clip(
        np.rint(np.asarray(result.knot_times) / motion.dt).astype(int), 0, motion.num_frames - 1
    )
    polygons = PlannedSupportPolygons(model, motion, frames)
    K = len(frames)
    cop, margin = np.full((K, 2), np.nan), np.full(K, np.nan)
    for k, polygon in enumerate(polygons):
        if polygon is None:
            continue
        legs = [j for j in range(4) if motion.contact[j, frames[k]]]
        M, F = np.zeros(3), np.zeros(3)
        for j in legs:
            p = model.FootPoints(result.q_knots[k], j, model.sole_centers[j])[0][0]
            M += np.cross(p, result.forces[k, j]) + result.torques[k, j]
            F += result.forces[k, j]
        point = CopFromWrench(M, F)
        if point is not None:
            cop[k] = point
            margin[k] = polygon.Margin(point)
    return cop, margin


def MakeTargets(model: SkeletonModel, motion: SampledMotion, config: SpaceTimeConfig):
    """Samples the motion at the knots and builds the support polygons of the contact plan."""
    idx = _Knots(motion, config.knot_frames)
    contact = motion.contact[:, idx]
    # E_O window: on the ground, or within `orientation_window_frames` of a contact change.
    active = motion.contact.copy()
    w = config.orientation_window_frames
    for j in range(4):
        changes = np.flatnonzero(np.diff(motion.contact[j].astype(int)) != 0)
        for c in changes:
            active[j, max(0, c - w) : c + w + 2] = True
    polygons = PlannedSupportPolygons(model, motion, idx)
    displacement = np.zeros(model.nq)
    displacement[:3] = motion.com[-1] - motion.com[0]
    displacement[2] = 0.0
    return SpaceTimeTargets(
        times=motion.times[idx],
        com=motion.com[idx],
        feet=motion.feet[:, idx],
        contact=contact,
        base_yaw=motion.base_yaw[idx],
        orientation_active=active[:, idx],
        polygons=polygons,
        displacement=displacement,
    )


# ----------------------------------------------------------------------------------------------
# Evaluator plumbing: double functions with exact Jacobians, called with double or AutoDiff.


def _Evaluator(function, *, scalar: bool = False):
    """Wraps f(x) -> (y, dy/dx) into a Drake evaluator callable for double and AutoDiff."""

    def evaluate(x):
        if x.dtype == object:
            value, jac = function(ExtractValue(x).ravel())
            grad = np.atleast_2d(jac) @ ExtractGradient(x)
            out = InitializeAutoDiff(np.atleast_1d(value), grad)
            return out[0, 0] if scalar else out.ravel()
        value, _ = function(np.asarray(x, float))
        return value if scalar else np.atleast_1d(value)

    return evaluate


_RESIDUALS: dict = {}


def _AddResidualCost(prog, residual, variables, name):
    """Adds ||r(x)||² as a named cost and records r for the Gauss-Newton solver."""
    _RESIDUALS.setdefault(id(prog), {})[name] = residual
    return prog.AddCost(_SquaredNorm(residual), vars=variables, description=name)


def ResidualsOf(prog) -> dict:
    """description -> residual function of every least-squares cost added to `prog`."""
    return _RESIDUALS.get(id(prog), {})


def _SquaredNorm(residual):
    """Cost evaluator ||r(x)||² from r(x) -> (r, J)."""

    def function(x):
        r, J = residual(x)
        return float(r @ r), 2.0 * r @ J

    return _Evaluator(function, scalar=True)


class _DynamicsCache:
    """Inverse dynamics per knot, shared by the momentum constraint and the torque cost."""

    def __init__(self, model: SkeletonModel, h: float, vars_, loads, displacement, periodic):
        self.model, self.h, self.vars = model, h, vars_
        self.loads = loads
        self.displacement = displacement
        self.periodic = periodic
        self._cache = {}

    def Neighbours(self, k: int):
        """(previous, next) knot indices and base shifts for knot k (wrapping if periodic)."""
        K = len(self.vars.knot_times)
        prev, next_ = k - 1, k + 1
        shift_prev = shift_next = np.zeros(self.model.nq)
        if prev < 0:
            prev, shift_prev = K - 2, -self.displacement
        if next_ > K - 1:
            next_, shift_next = 1, self.displacement
        return prev, next_, shift_prev, shift_next

    def Evaluate(self, k: int, x: np.ndarray):
        """x = [q_prev, q_k, q_next, force (12), torque (12)] -> (tau (nv,), dtau/dx)."""
        key = (k, x.tobytes())
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        m, h, n = self.model, self.h, self.model.nq
        _, _, shift_prev, shift_next = self.Neighbours(k)
        q0 = x[:n] + shift_prev
        q1 = x[n : 2 * n]
        q2 = x[2 * n : 3 * n] + shift_next
        v = (q2 - q0) / (2 * h)
        a = (q2 - 2 * q1 + q0) / h**2
        f = x[3 * n : 3 * n + 12].reshape(4, 3) * self.vars.force_scale
        t = x[3 * n + 12 :].reshape(4, 3) * self.vars.torque_scale
        wrenches = np.hstack([t, f])
        body = None
        if self.loads is not None:
            body = list(zip(self.loads.bodies, self.loads.wrenches[k]))
        tau, G = m.InverseDynamicsWithGradient(q1, v, a, wrenches, body)
        Gq, Gv, Ga, Gw = G[:, :n], G[:, n : 2 * n], G[:, 2 * n : 3 * n], G[:, 3 * n :]
        Gw = Gw.reshape(n, 4, 6)
        J = np.zeros((n, len(x)))
        J[:, :n] = -Gv / (2 * h) + Ga / h**2
        J[:, n : 2 * n] = Gq - 2 * Ga / h**2
        J[:, 2 * n : 3 * n] = Gv / (2 * h) + Ga / h**2
        J[:, 3 * n : 3 * n + 12] = Gw[:, :, 3:].reshape(n, 12) * self.vars.force_scale
        J[:, 3 * n + 12 :] = Gw[:, :, :3].reshape(n, 12) * self.vars.torque_scale
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[key] = (tau, J)
        return tau, J

    def KnotVariables(self, k: int) -> np.ndarray:
        prev, next_, _, _ = self.Neighbours(k)
        V = self.vars
        return np.concatenate(
            [V.q[prev], V.q[k], V.q[next_], V.force[k].ravel(), V.torque[k].ravel()]
        )


# ----------------------------------------------------------------------------------------------
# Builders (one per term of Eqs. 3-8).


def AddComCost(prog, model, V, targets, *, weight, length_scale, frames_per_knot):
    """α_c E_COM: ||φ_COM(q^i) - g_i||² (Eq. 3), in units of length_scale."""
    bindings = []
    c = np.sqrt(weight * frames_per_knot) / length_scale
    for k in range(len(V.knot_times)):

        def residual(q, k=k):
            com, J = model.Com(q)
            return c * (com - targets.com[k]), c * J

        b = _AddResidualCost(prog, residual, V.q[k], f"com[{k}]")
        bindings.append(b)
    return bindings


def AddEndEffectorCost(prog, model, V, targets, *, weight, length_scale, frames_per_knot):
    """α_e E_EE: ||φ_EE(q^i) - e^i||² for every foot's sole centre (Eq. 3)."""
    bindings = []
    c = np.sqrt(weight * frames_per_knot) / length_scale
    for k in range(len(V.knot_times)):

        def residual(q, k=k):
            r, J = [], []
            for j in range(4):
                p, Jp = model.FootPoints(q, j, model.sole_centers[j])
                r.append(c * (p[0] - targets.feet[j, k]))
                J.append(c * Jp[0])
            return np.concatenate(r), np.vstack(J)

        bindings.append(_AddResidualCost(prog, residual, V.q[k], f"end_effectors[{k}]"))
    return bindings


def AddFootOrientationCost(prog, model, V, targets, *, weight, frames_per_knot):
    """α_o E_O: ||ψ_EE(q^i) - n̂||², flat soles near and during contact (Eq. 3)."""
    bindings = []
    c = np.sqrt(weight * frames_per_knot)
    up = np.array([0.0, 0.0, 1.0])
    for k in range(len(V.knot_times)):
        legs = [j for j in range(4) if targets.orientation_active[j, k]]
        if not legs:
            continue

        def residual(q, legs=legs):
            r, J = [], []
            for j in legs:
                n, Jn = model.FootNormal(q, j)
                r.append(c * (n - up))
                J.append(c * Jn)
            return np.concatenate(r), np.vstack(J)

        bindings.append(_AddResidualCost(prog, residual, V.q[k], f"foot_flat[{k}]"))
    return bindings


def AddSmoothnessCost(
    prog, model, V, *, weight, length_scale, frames_per_knot, displacement=None, angle_scale=1.0
):
    """α_s E_S: ||q^{i+1} - 2 q^i + q^{i-1}||² per frame (Eq. 3), on knots rescaled to frames.

    `displacement` (nq,): the motion is periodic (knot K-1 is knot 0 moved by it), so knot 0 has
    the neighbours q^{K-2} - displacement and q^1 and its term wraps around the cycle as the
    momentum rows do (without it a plan may kink at the cycle's seam, where only E_τ sees the
    acceleration).
    """
    s = CoordinateScale(model, length_scale, angle_scale)
    # A knot second difference is frames_per_knot² frame second differences; there are
    # frames_per_knot frames per knot.
    c = weight * frames_per_knot / frames_per_knot**4
    bindings = []
    K = len(V.knot_times)
    n = model.nq
    Q = np.diag(s**2)
    A = np.hstack([np.eye(n), -2 * np.eye(n), np.eye(n)])
    H = 2 * c * A.T @ Q @ A
    for k in range(1, K - 1):
        bindings.append(
            prog.AddQuadraticCost(
                H, np.zeros(3 * n), np.concatenate([V.q[k - 1], V.q[k], V.q[k + 1]]), True
            )
        )
        bindings[-1].evaluator().set_description(f"smoothness[{k}]")
    if displacement is not None and K > 2:
        d = np.asarray(displacement, float)
        W = c * Q
        bindings.append(
            prog.AddQuadraticCost(
                2 * A.T @ W @ A,
                -2 * A.T @ W @ d,
                float(d @ W @ d),
                np.concatenate([V.q[K - 2], V.q[0], V.q[1]]),
                True,
            )
        )
        bindings[-1].evaluator().set_description("smoothness[0]")
    return bindings


def AddFollowCost(prog, model, V, q_follow, *, weight, length_scale, frames_per_knot):
    """α_f E_F: ||q^i - q̃^i||², toward the previous frame-by-frame motion (Eq. 3)."""
    s = CoordinateScale(model, length_scale)
    bindings = []
    for k in range(len(V.knot_times)):
        b = prog.AddQuadraticErrorCost(
            2.0 * weight * frames_per_knot * np.diag(s**2) / 2.0, q_follow[k], V.q[k]
        )
        b.evaluator().set_description(f"follow[{k}]")
        bindings.append(b)
    return bindings


def AddBaseAttitudeCost(prog, model, V, targets, *, weight, frames_per_knot):
    """Ours: torso roll, pitch near 0 and yaw near the planned heading (weak regulariser)."""
    bindings = []
    for k in range(len(V.knot_times)):
        target = np.array([targets.base_yaw[k], 0.0, 0.0])
        b = prog.AddQuadraticErrorCost(weight * frames_per_knot * np.eye(3), target, V.q[k, 3:6])
        b.evaluator().set_description(f"base_attitude[{k}]")
        bindings.append(b)
    return bindings


def AddPostureCost(prog, model, V, *, weight, frames_per_knot):
    """Ours: α_p Σ_k ||q_b,k||² of the body's own joints q_b (spine, neck and tail, at zero in
    the home pose; `SkeletonModel.body_joint_indices`).

    Eq. (3) has no term for joints that no target reaches: the user's input (section 5) gives
    the COM and the feet, and the lizard's spine, neck and tail are then free but for E_S and
    E_τ. Without this term the lizard's crawl swung its neck and tail by ±35° four times a
    cycle as counterweights, planned 6 U_m at the tail, and the frame-by-frame pass could not
    follow it (12 infeasible frames). With α_p = 1 its space-time step converges (18 iterations)
    and the loop agrees after one iteration; 0.1 left RMS 1.63 after the first iteration, 10 ran
    into the iteration limit (all measured). No term for robots without such joints.
    """
    idx = model.body_joint_indices
    if weight <= 0.0 or idx.size == 0:
        return []
    bindings = []
    for k in range(len(V.knot_times)):
        b = prog.AddQuadraticErrorCost(
            weight * frames_per_knot * np.eye(idx.size), np.zeros(idx.size), V.q[k, idx]
        )
        b.evaluator().set_description(f"posture[{k}]")
        bindings.append(b)
    return bindings


def AddContactConstraints(prog, model, V, targets, *, pressed=False):
    """Eq. (4): a foot on the ground touches it and does not move (its sole centre stays put).

    "Touches" is the sole's lowest corner at z = 0 (a smooth minimum of the corner heights,
    `SkeletonModel.SoleLowest`), not its centre: a 3-joint leg cannot keep a planted foot flat
    while the torso moves, and a tilted sole whose centre is on the ground would have a corner
    below it, which the frame-by-frame step's rigid sole cannot follow. With `pressed` (the soft
    sole, `AddSoleContactConstraints`) the lowest corner is at or below z = 0: the sole is pressed
    in as deep as its load needs."""
    bindings = []
    K = len(V.knot_times)
    for k in range(K):
        for j in range(4):
            if not targets.contact[j, k]:
                continue

            def height(q, j=j):
                h, dh = model.SoleLowest(q, j)
                return np.array([h]), dh[None]

            b = prog.AddConstraint(
                _Evaluator(height),
                [-np.inf if pressed else 0.0],
                [0.0],
                V.q[k],
                description=f"contact_height[{k},{j}]",
            )
            bindings.append(b)
            if k > 0 and targets.contact[j, k - 1]:

                def still(x, j=j):
                    n = model.nq
                    p1, J1 = model.FootPoints(x[n:], j, model.sole_centers[j])
                    p0, J0 = model.FootPoints(x[:n], j, model.sole_centers[j])
                    return (p1 - p0)[0, :2], np.hstack([-J0[0, :2], J1[0, :2]])

                b = prog.AddConstraint(
                    _Evaluator(still),
                    np.zeros(2),
                    np.zeros(2),
                    np.concatenate([V.q[k - 1], V.q[k]]),
                    description=f"contact_still[{k},{j}]",
                )
                bindings.append(b)
    return bindings


def AddClearanceConstraints(prog, model, V, targets):
    """Ours (not in Eqs. 4-8): a foot in the air keeps its four sole corners above the ground.

    Eq. (4) only pins the feet on the ground; E_EE tracks a swing foot's sole *centre*. A 3-joint
    leg (hip yaw + two parallel pitch joints) cannot lift its foot straight up without pitching
    it, and without this row the plan pitched the lifted beetle foot by 70-80° and put its heel
    3-10 mm into the ground; the frame-by-frame step, which cannot penetrate, then had to throw
    the whole body up to keep that foot out of the ground (the "hop"). c = -z_corner <= 0.
    """
    bindings = []
    for k in range(len(V.knot_times)):
        for j in range(4):
            if targets.contact[j, k]:
                continue

            def corners(q, j=j):
                p, J = model.FootPoints(q, j, model.sole_corners[j])
                return p[:, 2], J[:, 2]

            bindings.append(
                prog.AddConstraint(
                    _Evaluator(corners),
                    np.zeros(4),
                    np.full(4, np.inf),
                    V.q[k],
                    description=f"clearance[{k},{j}]",
                )
            )
    return bindings


def PatchOffsets(model, q, j):
    """Foot j's sole patches relative to its sole centre, world frame (5, 3), and d/dq."""
    pc, Jc = model.FootPoints(q, j, SolePatchPoints(model, j))
    p0, J0 = model.FootPoints(q, j, model.sole_centers[j])
    return pc - p0, Jc - J0


def AddSoleContactConstraints(prog, model, V, targets, *, compression, smoothing):
    """Ours (contact_model "soft_sole"): a stance foot stands on the soft sole of the
    frame-by-frame step, so the plan's foot forces follow from its feet's placement the same way.

    The paper lumps a foot's ground wrench at its sole centre (F_c, τ_c free within Eq. 8's
    ||τ_c|| <= ν ||F_c||: the foot's COP anywhere in the sole's circumcircle) and applies the
    frame-by-frame step's foot forces "using the soft contact method [55] ... kept the same in
    the space-time optimization". With 3-joint legs a planted flat foot leaves the torso no
    motion (three or four feet x 5 constraints >= the 15-18 coordinates of torso and legs), so any
    COM shift tilts the stance feet onto their edges; and how four planted feet share the weight
    is statically indeterminate for rigid feet, decided by fractions of a millimetre of sole
    compression. Measured on the beetle's lift: a free-wrench plan put a foot's COP on the high
    side of a sole tilted 1°, 20-60 mm from its centre, and asked for 1 N on a foot that its own
    geometry pressed in as deep as the others (the frame-by-frame step then carried 10 N there).
    Here each of the five patches p of a stance foot j (`SolePatchPoints`) pushes with

        n_p = k w softplus(-z_p(q) / w)               ("sole_law[k,j]", n in units of m g)
        F_z = Σ_p n_p                                 ("sole_force[k,j]", linear)
        τ_x, τ_y = Σ_p (r_p × n_p ẑ)_x,y, τ_z = 0    ("sole_moment[k,j]", r_p = patch - centre)

    with k = `SoleStiffness(model, compression)` (the frame-by-frame sole) and w = smoothing x
    compression: the plan's foot forces and COPs are what the frame-by-frame step's sole gives at
    the plan's configuration. The tangential force (F_x, F_y) stays one vector per foot in Eq. 8's
    cone; no torsion, as in the frame-by-frame rigid sole. Eq. (4)'s contact becomes "the lowest
    corner is at or below the ground" (`AddContactConstraints`).
    """
    bindings = []
    fs, ts = V.force_scale, V.torque_scale
    k_sole = SoleStiffness(model, compression)
    width = smoothing * compression
    for k in range(len(V.knot_times)):
        for j in range(4):
            n = V.patch[k, j]
            if not targets.contact[j, k]:
                continue
            b = prog.AddLinearEqualityConstraint(
                np.array([[1.0, -1.0, -1.0, -1.0, -1.0, -1.0]]),
                np.zeros(1),
                np.concatenate([[V.force[k, j, 2]], n]),
            )
            b.evaluator().set_description(f"sole_force[{k},{j}]")
            bindings.append(b)

            def moment(x, j=j):
                nq = model.nq
                q, nc, t = x[:nq], x[nq : nq + 5], x[nq + 5 :]
                r, Jr = PatchOffsets(model, q, j)
                # τ - Σ r_p × (n_p fs ẑ): x row t_x ts - fs Σ n r_y, y row t_y ts + fs Σ n r_x.
                value = np.array(
                    [t[0] * ts - fs * nc @ r[:, 1], t[1] * ts + fs * nc @ r[:, 0], t[2] * ts]
                )
                J = np.zeros((3, len(x)))
                J[0, :nq] = -fs * nc @ Jr[:, 1]
                J[1, :nq] = fs * nc @ Jr[:, 0]
                J[0, nq : nq + 5] = -fs * r[:, 1]
                J[1, nq : nq + 5] = fs * r[:, 0]
                J[0, nq + 5] = J[1, nq + 6] = J[2, nq + 7] = ts
                return value / fs, J / fs

            b = prog.AddConstraint(
                _Evaluator(moment),
                np.zeros(3),
                np.zeros(3),
                np.concatenate([V.q[k], n, V.torque[k, j]]),
                description=f"sole_moment[{k},{j}]",
            )
            bindings.append(b)

            def law(x, j=j):
                nq = model.nq
                p, J = model.FootPoints(x[:nq], j, SolePatchPoints(model, j))
                value, d1, _ = SoleLaw(p[:, 2], k_sole, width, fs)
                jac = np.zeros((5, len(x)))
                jac[:, :nq] = -d1[:, None] * J[:, 2]
                jac[:, nq:] = np.eye(5)
                return x[nq:] - value, jac

            b = prog.AddConstraint(
                _Evaluator(law),
                np.zeros(5),
                np.zeros(5),
                np.concatenate([V.q[k], n]),
                description=f"sole_law[{k},{j}]",
            )
            bindings.append(b)
    return bindings


def AddCopConstraints(prog, model, V, targets, *, margin, dynamics):
    """Eq. (5): P·φ_COP <= 0, the COP inside the support polygon of the feet on the ground.

    With dynamics the COP is that of the ground wrench Σ_j (p_j × F_j + τ_j); without (the
    kinematic baseline) it is the ground projection of the COM.
    """
    bindings = []
    for k, polygon in enumerate(targets.polygons):
        if polygon is None:
            continue
        A, b = polygon.HalfSpaces(margin=margin)
        if not dynamics:

            def cop_com(q, A=A):
                com, J = model.Com(q)
                return A @ com[:2], A @ J[:2]

            bindings.append(
                prog.AddConstraint(
                    _Evaluator(cop_com),
                    np.full(len(b), -np.inf),
                    b,
                    V.q[k],
                    description=f"cop[{k}]",
                )
            )
            continue
        legs = [j for j in range(4) if targets.contact[j, k]]

        def cop(x, A=A, b=b, legs=legs, fs=V.force_scale, ts=V.torque_scale):
            n = model.nq
            q = x[:n]
            f = x[n : n + 12].reshape(4, 3) * fs
            t = x[n + 12 :].reshape(4, 3) * ts
            M = np.zeros(3)
            dM = np.zeros((3, len(x)))
            for j in legs:
                p, Jp = model.FootPoints(q, j, model.sole_centers[j])
                p, Jp = p[0], Jp[0]
                M += np.cross(p, f[j]) + t[j]
                # d(p × f)/dq = -[f]x Jp ; d(p × f)/df = [p]x.
                dM[:, :n] += -_Skew(f[j]) @ Jp
                dM[:, n + 3 * j : n + 3 * j + 3] += _Skew(p) * fs
                dM[:, n + 12 + 3 * j : n + 12 + 3 * j + 3] += np.eye(3) * ts
            Fz = sum(f[j, 2] for j in legs)
            dFz = np.zeros(len(x))
            for j in legs:
                dFz[n + 3 * j + 2] = fs
            # COP (x, y) = (-M_y, M_x) / F_z; rows a·cop <= b, times F_z > 0, in units of m g.
            num = A[:, 0] * (-M[1]) + A[:, 1] * M[0] - b * Fz
            dnum = np.outer(A[:, 0], -dM[1]) + np.outer(A[:, 1], dM[0]) - np.outer(b, dFz)
            return num / fs, dnum / fs

        bindings.append(
            prog.AddConstraint(
                _Evaluator(cop),
                np.full(len(b), -np.inf),
                np.zeros(len(b)),
                np.concatenate([V.q[k], V.force[k].ravel(), V.torque[k].ravel()]),
                description=f"cop[{k}]",
            )
        )
    return bindings


def _Skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def AddFrictionConstraints(prog, model, V, targets, *, friction, soft_sole=False):
    """Eq. (8): contact forces in the friction cone, contact torques bounded by the force.

    μ F_⊥ >= ||F_∥|| (a Lorentz cone) and ||F||² - ||τ_∥/ν_b||² - (τ_⊥/ν_t)² >= 0 with ν_b = ν_t
    the sole's circumradius; feet in the air carry no wrench.

    With the soft sole (`AddSoleContactConstraints`, soft_sole=True) the second line is left
    out: a foot's torque is Σ_p r_p × n_p ẑ over its patches with n_p >= 0 (the sole law's
    softplus), so τ_⊥ = 0 and the COP lies in the patches' hull, inside the circumcircle:
    ||τ_∥|| <= ν_b F_⊥ holds by construction. Stating it anyway made the QP subproblems
    degenerate at a foot whose wrench nearly vanishes (the quadratic row's gradient is 0 at
    F = τ = 0; as a cone F_⊥ >= ||τ_∥ / ν_b|| it duplicates the sole_moment rows there): on the
    monster's walks they gave it and the sole_moment rows multipliers of 1e6-1e11, which drove
    the merit's penalty to 1e13-1e17 and Clarabel to fail (measured: with the quadratic row the
    0.11 m/s walk's space-time steps fail, with the cone the 0.06 m/s walk's; without either
    both converge).
    """
    bindings = []
    K = len(V.knot_times)
    for k in range(K):
        for j in range(4):
            f, t = V.force[k, j], V.torque[k, j]
            if not targets.contact[j, k]:
                b = prog.AddBoundingBoxConstraint(0.0, 0.0, np.concatenate([f, t]))
                b.evaluator().set_description(f"no_wrench_in_air[{k},{j}]")
                bindings.append(b)
                continue
            b = prog.AddBoundingBoxConstraint(0.0, np.inf, f[2])
            b.evaluator().set_description(f"normal_force[{k},{j}]")
            bindings.append(b)
            b = prog.AddLorentzConeConstraint(
                np.array([[0, 0, friction], [1, 0, 0], [0, 1, 0]]), np.zeros(3), f
            )
            b.evaluator().set_description(f"friction_cone[{k},{j}]")
            bindings.append(b)
            if soft_sole:
                continue
            # Units: torque variables are τ / (m g ν_b), so ||τ/ν||² = (m g)² ||t||².
            Q = np.diag([1, 1, 1, -1, -1, -1]) * 2.0
            b = prog.AddQuadraticConstraint(Q, np.zeros(6), 0.0, np.inf, np.concatenate([f, t]))
            b.evaluator().set_description(f"contact_torque[{k},{j}]")
            bindings.append(b)
    return bindings


def AddMomentumConstraints(prog, model, V, cache: _DynamicsCache, *, interior):
    """Eq. (7): rate of change of momentum = gravity + contact wrenches (+ skin coupling loads).

    Written as the six unactuated rows of inverse dynamics at knot k (central differences): for a
    floating base these rows are exactly the Newton-Euler equations of the whole robot.
    """
    bindings = []
    scale = 1.0 / (model.total_mass * model.gravity)
    for k in interior:

        def rows(x, k=k):
            tau, J = cache.Evaluate(k, x)
            return tau[:NUM_BASE] * scale, J[:NUM_BASE] * scale

        bindings.append(
            prog.AddConstraint(
                _Evaluator(rows),
                np.zeros(NUM_BASE),
                np.zeros(NUM_BASE),
                cache.KnotVariables(k),
                description=f"momentum[{k}]",
            )
        )
    return bindings


def AddTorqueCost(prog, model, V, cache, *, weight, effort_limits, frames_per_knot, interior):
    """α_t E_τ: (1/m)² ||τ^i||² of the motor torques from inverse dynamics (Eq. 3).

    Torques are measured as fractions of each motor's limit U_m; m is the number of motors.
    """
    bindings = []
    sel = model.actuated_indices
    c = np.sqrt(weight * frames_per_knot) / len(sel)
    for k in interior:

        def residual(x, k=k):
            tau, J = cache.Evaluate(k, x)
            return c * tau[sel] / effort_limits, c * J[sel] / effort_limits[:, None]

        bindings.append(_AddResidualCost(prog, residual, cache.KnotVariables(k), f"torque[{k}]"))
    return bindings


def AddMotorLimitConstraints(prog, model, V, cache, *, effort_limits, fraction, interior):
    """Ours: the motor torques of inverse dynamics stay within fraction U_m at every interior
    knot, as one smooth row per knot ("motor_limits[k]": `MotorLoad` of τ_m / U_m <= fraction).

    The paper bounds the torques only in the frame-by-frame step (Eq. 12). A plan that asks for
    more than the motors give cannot be followed there: the lizard's crawl planned without it
    needed 6.4 U_m at a knee and 6.2 U_m at the tail, and the frame-by-frame pass then ran with
    its motors at the limit on 479 of 480 frames and lost the plan (measured). One row per knot
    instead of two per motor: 2 x 12 x 49 rows made the beetle lift's QPs 40% slower.
    """
    bindings = []
    sel = model.actuated_indices
    U = np.asarray(effort_limits, float)
    for k in interior:

        def rows(x, k=k):
            tau, J = cache.Evaluate(k, x)
            value, grad = MotorLoad(tau[sel] / U, J[sel] / U[:, None])
            return np.array([value]), grad[None]

        bindings.append(
            prog.AddConstraint(
                _Evaluator(rows),
                np.array([-np.inf]),
                np.array([fraction]),
                cache.KnotVariables(k),
                description=f"motor_limits[{k}]",
            )
        )
    return bindings


def AddPeriodicConstraint(prog, model, V, displacement):
    """Eq. (6): J(q^1) = J(q^N); the base returns to its start shifted by the cycle's advance."""
    b = prog.AddLinearEqualityConstraint(
        np.hstack([np.eye(model.nq), -np.eye(model.nq)]),
        displacement,
        np.concatenate([V.q[-1], V.q[0]]),
    )
    b.evaluator().set_description("periodic")
    return [b]


def AddRestConstraints(prog, model, V):
    """A motion that is not periodic starts and ends at rest (q^0 = q^1, q^{N-1} = q^N)."""
    n = model.nq
    A = np.hstack([np.eye(n), -np.eye(n)])
    out = []
    for name, pair in (("rest_start", (0, 1)), ("rest_end", (-2, -1))):
        b = prog.AddLinearEqualityConstraint(
            A, np.zeros(n), np.concatenate([V.q[pair[0]], V.q[pair[1]]])
        )
        b.evaluator().set_description(name)
        out.append(b)
    return out


# ----------------------------------------------------------------------------------------------
# The program.


@dataclasses.dataclass
class SpaceTimeProblem:
    prog: MathematicalProgram
    vars: SpaceTimeVariables
    targets: SpaceTimeTargets
    cache: _DynamicsCache | None
    bindings: dict
    config: SpaceTimeConfig
    effort_limits: np.ndarray
    interior: list
    # What the builders were given (the vectorised SpaceTimeNlp evaluates the same terms).
    model: SkeletonModel | None = None
    friction: float = 0.8
    h: float = 0.0
    frames_per_knot: float = 1.0
    q_follow: np.ndarray | None = None
    follow_weight: float = 0.0
    loads: ExternalLoads | None = None
    periodic: bool = False


def MakeSpaceTimeProgram(
    model: SkeletonModel,
    motion: SampledMotion,
    config: SpaceTimeConfig,
    *,
    q_follow: np.ndarray | None = None,
    follow_weight: float | None = None,
    loads: ExternalLoads | None = None,
    effort_limits: np.ndarray | None = None,
) -> SpaceTimeProblem:
    """Builds Eq. (9) for one space-time step.

    Args:
        model: the skeleton (with the skin's weight on its links).
        motion: the user's plan sampled at frames.
        config: weights and options.
        q_follow: (K, nq) the previous frame-by-frame motion at the knots (E_F); None in the
            initialization (section 5.4: "without the trajectory following terms E_F").
        follow_weight: α_f for this iteration (default config.weights.follow).
        loads: the skin's coupling loads per knot (None: none).
        effort_limits: U_m per motor, N·m (for E_τ's normalisation).
    """
    prog = MathematicalProgram()
    targets = MakeTargets(model, motion, config)
    K = len(targets.times)
    h = float(targets.times[1] - targets.times[0])
    frames_per_knot = h / motion.dt
    q = prog.NewContinuousVariables(K, model.nq, "q")
    force = np.array([prog.NewContinuousVariables(4, 3, f"F{k}") for k in range(K)])
    torque = np.array([prog.NewContinuousVariables(4, 3, f"T{k}") for k in range(K)])
    if config.contact_model not in ("soft_sole", "sole_center"):
        raise ValueError(f"unknown contact_model '{config.contact_model}' (soft_sole, sole_center)")
    soft = config.dynamics and config.contact_model == "soft_sole"
    patch = (
        np.array([prog.NewContinuousVariables(4, 5, f"N{k}") for k in range(K)]) if soft else None
    )
    weight = model.total_mass * model.gravity
    V = SpaceTimeVariables(
        q=q,
        force=force,
        torque=torque,
        knot_times=targets.times,
        contact=targets.contact,
        force_scale=weight,
        torque_scale=weight * model.sole_radius,
        patch=patch,
    )
    W = config.weights
    ls = config.length_scale
    if effort_limits is None:
        effort_limits = model.effort_limits
    B = {}
    # Joint limits.
    for k in range(K):
        b = prog.AddBoundingBoxConstraint(model.q_lower, model.q_upper, q[k])
        b.evaluator().set_description(f"joint_limits[{k}]")
    B["com"] = AddComCost(
        prog, model, V, targets, weight=W.com, length_scale=ls, frames_per_knot=frames_per_knot
    )
    B["end_effectors"] = AddEndEffectorCost(
        prog,
        model,
        V,
        targets,
        weight=W.end_effector,
        length_scale=ls,
        frames_per_knot=frames_per_knot,
    )
    B["foot_flat"] = AddFootOrientationCost(
        prog, model, V, targets, weight=W.orientation, frames_per_knot=frames_per_knot
    )
    periodic = motion.spec.periodic
    B["smoothness"] = AddSmoothnessCost(
        prog,
        model,
        V,
        weight=W.smoothness,
        length_scale=ls,
        frames_per_knot=frames_per_knot,
        displacement=targets.displacement if periodic else None,
        angle_scale=config.smoothness_angle_scale,
    )
    B["base_attitude"] = AddBaseAttitudeCost(
        prog, model, V, targets, weight=W.base_attitude, frames_per_knot=frames_per_knot
    )
    B["posture"] = AddPostureCost(prog, model, V, weight=W.posture, frames_per_knot=frames_per_knot)
    if q_follow is not None:
        B["follow"] = AddFollowCost(
            prog,
            model,
            V,
            q_follow,
            weight=W.follow if follow_weight is None else follow_weight,
            length_scale=ls,
            frames_per_knot=frames_per_knot,
        )
    B["contact"] = AddContactConstraints(prog, model, V, targets, pressed=soft)
    B["clearance"] = AddClearanceConstraints(prog, model, V, targets)
    if periodic:
        B["periodic"] = AddPeriodicConstraint(prog, model, V, targets.displacement)
        interior = list(range(K - 1))  # knot K-1 is knot 0 shifted
    else:
        B["rest"] = AddRestConstraints(prog, model, V)
        interior = list(range(1, K - 1))
    cache = None
    if config.dynamics:
        cache = _DynamicsCache(model, h, V, loads, targets.displacement, periodic)
        B["friction"] = AddFrictionConstraints(
            prog, model, V, targets, friction=motion.spec.friction, soft_sole=soft
        )
        if soft:
            B["sole"] = AddSoleContactConstraints(
                prog,
                model,
                V,
                targets,
                compression=config.sole_compression,
                smoothing=config.sole_smoothing,
            )
            swing = patch[~targets.contact.T]
            if swing.size:
                b = prog.AddBoundingBoxConstraint(0.0, 0.0, swing.ravel())
                b.evaluator().set_description("no_sole_force_in_air")
        B["momentum"] = AddMomentumConstraints(prog, model, V, cache, interior=interior)
        B["torque"] = AddTorqueCost(
            prog,
            model,
            V,
            cache,
            weight=W.torque,
            effort_limits=effort_limits,
            frames_per_knot=frames_per_knot,
            interior=interior,
        )
        if config.motor_limit_fraction > 0.0:
            B["motor_limits"] = AddMotorLimitConstraints(
                prog,
                model,
                V,
                cache,
                effort_limits=effort_limits,
                fraction=config.motor_limit_fraction,
                interior=interior,
            )
    else:
        b = prog.AddBoundingBoxConstraint(0.0, 0.0, np.concatenate([force.ravel(), torque.ravel()]))
        b.evaluator().set_description("no_forces_kinematic_only")
    if config.cop_constraint:
        B["cop"] = AddCopConstraints(
            prog, model, V, targets, margin=config.cop_margin, dynamics=config.dynamics
        )
    return SpaceTimeProblem(
        prog,
        V,
        targets,
        cache,
        B,
        config,
        effort_limits,
        interior,
        model=model,
        friction=motion.spec.friction,
        h=h,
        frames_per_knot=frames_per_knot,
        q_follow=None if q_follow is None else np.asarray(q_follow, float),
        follow_weight=W.follow if follow_weight is None else float(follow_weight),
        loads=loads,
        periodic=periodic,
    )


def InitialGuess(model: SkeletonModel, problem: SpaceTimeProblem, q_init=None) -> np.ndarray:
    """A start: torso over the planned COM, joints at home, weight shared by the stance feet."""
    prog, V, targets = problem.prog, problem.vars, problem.targets
    x0 = np.zeros(prog.num_vars())
    home_com, _ = model.Com(model.q_home)
    K = len(targets.times)
    for k in range(K):
        if q_init is not None:
            qk = q_init[k]
        else:
            qk = model.q_home.copy()
            qk[:2] = targets.com[k, :2] - home_com[:2]
            qk[3] = targets.base_yaw[k]
        stance = targets.contact[:, k]
        if V.patch is not None and stance.any():
            # Soft sole: press the stance soles in by the static compression (a kinematic start
            # has them just touching, where the sole carries nothing), and start the forces from
            # the sole's law there.
            qk = np.array(qk, float)
            lowest = np.mean([model.SoleLowest(qk, j)[0] for j in np.flatnonzero(stance)])
            qk[2] += -problem.config.sole_compression - lowest
        prog.SetDecisionVariableValueInVector(V.q[k], qk, x0)
        if stance.any():
            f = np.zeros((4, 3))
            f[stance, 2] = 1.0 / stance.sum()
            if V.patch is not None:
                k_sole = SoleStiffness(model, problem.config.sole_compression)
                width = problem.config.sole_smoothing * problem.config.sole_compression
                t = np.zeros((4, 3))
                for j in np.flatnonzero(stance):
                    p, _ = model.FootPoints(qk, j, SolePatchPoints(model, j))
                    n, _, _ = SoleLaw(p[:, 2], k_sole, width, V.force_scale)
                    r, _ = PatchOffsets(model, qk, j)
                    f[j, 2] = n.sum()
                    t[j, :2] = V.force_scale * np.array([n @ r[:, 1], -(n @ r[:, 0])])
                    prog.SetDecisionVariableValueInVector(V.patch[k, j], n, x0)
                prog.SetDecisionVariableValueInVector(V.torque[k], t / V.torque_scale, x0)
            prog.SetDecisionVariableValueInVector(V.force[k], f, x0)
    return x0


def KinematicWarmStart(
    model: SkeletonModel, motion, config: SpaceTimeConfig, *, effort_limits=None
) -> SpaceTimeResult:
    """The kinematic-only solve (the same program with `dynamics=False`) whose knots start the
    dynamic space-time step, to `config.warm_start_merit_tolerance`."""
    kin = dataclasses.replace(
        config, dynamics=False, merit_tolerance=config.warm_start_merit_tolerance
    )
    problem = MakeSpaceTimeProgram(model, motion, kin, effort_limits=effort_limits)
    return SolveSpaceTime(model, problem, InitialGuess(model, problem))


def SolveSpaceTime(
    model: SkeletonModel, problem: SpaceTimeProblem, x0: np.ndarray, *, progress=None
) -> SpaceTimeResult:
    """Solves the space-time program and checks every constraint at the answer.

    The solver is config.solver: "gauss_newton" (the paper's, section 5.1; default), "snopt" or
    "ipopt" (through Drake's MathematicalProgram interface).
    """
    config = problem.config
    prog = problem.prog
    start = time.perf_counter()
    nlp = SpaceTimeNlp(problem)
    if config.solver == "gauss_newton":
        gn = SolveLeastSquaresSqp(
            nlp,
            x0,
            GaussNewtonOptions(
                max_iterations=config.max_iterations,
                feasibility_tolerance=config.feasibility_tolerance,
                merit_tolerance=config.merit_tolerance,
                time_limit=config.time_limit,
            ),
            progress=progress,
        )
        x = gn.x
        status = f"{gn.status} after {gn.iterations} Gauss-Newton iterations"
        solver_success = gn.success
        history = gn.history
    else:
        options = SolverOptions()
        if config.solver == "snopt":
            solver = SnoptSolver()
            sid = solver.solver_id()
            options.SetOption(sid, "Major iterations limit", int(config.max_iterations))
            options.SetOption(sid, "Major feasibility tolerance", config.feasibility_tolerance)
            options.SetOption(sid, "Major optimality tolerance", config.optimality_tolerance)
            options.SetOption(sid, "Iterations limit", 200000)
        elif config.solver == "ipopt":
            solver = IpoptSolver()
            sid = solver.solver_id()
            options.SetOption(sid, "max_iter", int(config.max_iterations))
            options.SetOption(sid, "tol", config.optimality_tolerance)
            options.SetOption(sid, "constr_viol_tol", config.feasibility_tolerance)
            options.SetOption(sid, "print_level", 0)
        else:
            raise ValueError(f"unknown solver '{config.solver}' (gauss_newton, snopt, ipopt)")
        result = solver.Solve(prog, x0, options)
        x = result.GetSolution()
        status = result.get_solution_result().name
        solver_success = bool(result.is_success())
        history = []
    elapsed = time.perf_counter() - start
    return SummarizeSpaceTime(
        model,
        problem,
        x,
        status=status,
        solver_success=solver_success,
        history=history,
        solve_time=elapsed,
        nlp=nlp,
    )


def SummarizeSpaceTime(
    model, problem, x, *, status, solver_success, history, solve_time, nlp=None, tol=1e-4
) -> SpaceTimeResult:
    """Reads a solution, checks EVERY constraint binding of the MathematicalProgram at it
    (`prog.CheckSatisfied`, independent of the solver's own bookkeeping), and totals the costs."""
    prog = problem.prog
    nlp = nlp or SpaceTimeNlp(problem)
    q, forces, torques = nlp.Unpack(x)
    patch_forces = nlp.UnpackPatches(x)
    K = len(problem.vars.knot_times)
    infeasible = [
        b.evaluator().get_description()
        for b in prog.GetAllConstraints()
        if not prog.CheckSatisfied(b, x, tol=tol)
    ]
    costs = {}
    for name, bindings in problem.bindings.items():
        values = [
            float(np.sum(prog.EvalBinding(b, x)))
            for b in bindings
            if "Cost" in type(b.evaluator()).__name__ and name != "torque"
        ]
        if values:
            costs[name] = float(np.sum(values))
    joint_torques = np.zeros((K, model.nu))
    if problem.cache is not None:
        sel = model.actuated_indices
        U = problem.effort_limits
        interior = list(problem.interior)
        tau = nlp.KnotsDynamics(x, interior, False)[0][:, sel]
        joint_torques[interior] = tau
        costs["torque"] = float(np.sum((nlp.c_t * tau / U) ** 2))
        if motion_is_periodic(problem):
            joint_torques[-1] = joint_torques[0]
        else:
            joint_torques[0], joint_torques[-1] = joint_torques[1], joint_torques[-2]
    return SpaceTimeResult(
        success=bool(solver_success and not infeasible),
        status=status,
        q_knots=q,
        knot_times=problem.vars.knot_times,
        forces=forces,
        torques=torques,
        joint_torques=joint_torques,
        cost=float(sum(costs.values())),
        infeasible=infeasible,
        solve_time=solve_time,
        costs=costs,
        history=history,
        patch_forces=patch_forces,
    )


def motion_is_periodic(problem: SpaceTimeProblem) -> bool:
    return "periodic" in problem.bindings


def InterpolateToFrames(knot_times, q_knots, frame_times) -> np.ndarray:
    """The plan at every frame: a cubic spline through the knots (q̄ of Eq. 14)."""
    from scipy.interpolate import CubicSpline

    if len(knot_times) == len(frame_times) and np.allclose(knot_times, frame_times):
        return np.array(q_knots)
    return CubicSpline(knot_times, q_knots, axis=0, bc_type="natural")(frame_times)
