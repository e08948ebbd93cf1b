"""The authors' geometric quasi-static model of the gecko robot, as a MathematicalProgram.

Reference README ("Their simulation model is geometric and quasi-static"), paper sections 3-4 and
Fig. 7A: every limb is a constant-curvature arc whose bending angle alpha_i and length l_i may
deviate from the reference (l_i in [0.9, 1.1] of nominal). A pose is found by minimising

    f_l * sum_i ((l_i - L_i) / L_leg)^2 + f_o * sum_{fixed j} (phi_j - phi_j0)^2
        + f_a * sum_i (alpha_i - alpha_ref_i)^2            (weights f_l, f_o, f_a = 89, 10, 5.9)

over the torso pose (x, y, eps), the five angles and the five lengths, subject to the positions of
the fixed feet staying where they were fixed. Lengths are measured in leg lengths (the authors'
normalised model has leg 1.0, torso 1.2) and angles in radians. The objective is quadratic (the
foot orientations phi of Eq. 2 are linear in the variables), the fixed-foot positions are the only
nonlinear constraints; their gradient is analytic (`FootPositionsAndJacobian`, checked against
finite differences in the tests). Solved with SNOPT through MathematicalProgram, warm started
from the previous pose (the authors used SLSQP).

A gait is simulated half cycle by half cycle (`GeometricGait`): release the previous stance,
move to the new reference with the stance feet fixed, fix the other diagonal (Eq. 15).

The length deviations matter: with every length held at its nominal value the fixed feet leave a
two-parameter family of poses whose minimiser jumps between branches (the torso snaps through from
+80 to -80 degrees within a half cycle), while the extensible model follows one branch, like the
Drake model does.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from pydrake.autodiffutils import ExtractGradient, ExtractValue, InitializeAutoDiff
from pydrake.solvers import MathematicalProgram, SnoptSolver, SolverOptions

from drakebots.gecko.geometry import (
    FEET,
    FOOT_LIMB,
    LEG_BEND_SIGN,
    LEG_NODE,
    LEG_SIDE,
    PHI_OFFSET,
    GaitTiming,
    GeckoDimensions,
    GeckoShape,
    GeckoShapeOf,
    HalfCycleOf,
)

NUM_VARIABLES = 13  # x, y, eps, alpha[5], length[5]
_ALPHA = slice(3, 8)
_LENGTH = slice(8, 13)


@dataclasses.dataclass
class GeometricModelParams:
    """Weights and limits of the geometric model (reference README)."""

    # Weight of length deviations (in leg lengths, squared).
    f_l: float = 89.0
    # Weight of orientation changes of fixed feet (rad, squared).
    f_o: float = 10.0
    # Weight of bending-angle deviations from the reference (rad, squared).
    f_a: float = 5.9
    # Limb length bounds as fractions of nominal.
    length_min: float = 0.9
    length_max: float = 1.1
    # SNOPT's major feasibility tolerance (fixed-foot positions, m) and optimality tolerance.
    feasibility_tolerance: float = 1e-9
    optimality_tolerance: float = 1e-7


def _sinc_scalar(x: float) -> float:
    """sin(x)/x for a float, smooth through 0."""
    return math.sin(x) / x if abs(x) > 1e-4 else 1.0 - x * x / 6.0


def _dsinc_scalar(x: float) -> float:
    """d/dx sin(x)/x for a float, smooth through 0."""
    return (x * math.cos(x) - math.sin(x)) / (x * x) if abs(x) > 1e-4 else -x / 3.0


def FootPositionsAndJacobian(z: np.ndarray, feet: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the chosen feet and their Jacobian with respect to z.

    Scalar arithmetic (math, not numpy) because the solver calls this tens of times per pose.

    Args:
        z: [x, y, eps, alpha_0..4, l_0..4] (m, rad).
        feet: indices into FEET.

    Returns:
        p: (2 * len(feet),) stacked foot positions, m; J: (2 * len(feet), 13).
    """
    z = [float(v) for v in z]
    x, y, eps = z[0], z[1], z[2]
    a2, l2 = z[5], z[10]
    p = np.zeros(2 * len(feet))
    J = np.zeros((2 * len(feet), NUM_VARIABLES))
    s_t = _sinc_scalar(0.25 * a2)
    ds_t = _dsinc_scalar(0.25 * a2)
    for row, j in enumerate(feet):
        leg = FEET[j]
        i = FOOT_LIMB[leg]
        r0, r1 = 2 * row, 2 * row + 1
        # Torso half arc from the midpoint to the node (Eq. 2 geometry, see gecko.geometry).
        side = 1.0 if LEG_NODE[leg] == "front" else -1.0
        th = eps - side * 0.25 * a2
        c, s = math.cos(th), math.sin(th)
        half = 0.5 * l2
        node = (side * half * s_t * c, side * half * s_t * s)
        d_node_eps = (-side * half * s_t * s, side * half * s_t * c)
        # d/da2 of side*half*s_t*u(th): side*half*(ds_t/4 u - side * s_t/4 perp)
        d_node_a2 = (
            side * half * (0.25 * ds_t * c + side * 0.25 * s_t * s),
            side * half * (0.25 * ds_t * s - side * 0.25 * s_t * c),
        )
        d_node_l2 = (side * 0.5 * s_t * c, side * 0.5 * s_t * s)
        node_tangent_da2 = -0.5 * side
        base = eps + node_tangent_da2 * a2 + LEG_SIDE[leg] * 0.5 * math.pi
        sign = LEG_BEND_SIGN[leg]
        b = sign * z[3 + i]
        li = z[8 + i]
        mean = base + 0.5 * b
        cm, sm = math.cos(mean), math.sin(mean)
        s_l = _sinc_scalar(0.5 * b)
        ds_l = _dsinc_scalar(0.5 * b)
        p[r0] = x + node[0] + li * s_l * cm
        p[r1] = y + node[1] + li * s_l * sm
        dcm = (-li * s_l * sm, li * s_l * cm)  # d chord / d mean
        J[r0, 0] = 1.0
        J[r1, 1] = 1.0
        J[r0, 2] = d_node_eps[0] + dcm[0]
        J[r1, 2] = d_node_eps[1] + dcm[1]
        J[r0, 5] = d_node_a2[0] + node_tangent_da2 * dcm[0]
        J[r1, 5] = d_node_a2[1] + node_tangent_da2 * dcm[1]
        J[r0, 10] = d_node_l2[0]
        J[r1, 10] = d_node_l2[1]
        J[r0, 3 + i] = sign * (0.5 * li * ds_l * cm + 0.5 * dcm[0])
        J[r1, 3 + i] = sign * (0.5 * li * ds_l * sm + 0.5 * dcm[1])
        J[r0, 8 + i] = s_l * cm
        J[r1, 8 + i] = s_l * sm
    return p, J


def PhiRows() -> np.ndarray:
    """(4, 13) matrix A and offsets c with phi = A z + c (Eq. 2 is linear in z)."""
    A = np.zeros((4, NUM_VARIABLES))
    c = np.zeros(4)
    for j, leg in enumerate(FEET):
        i = FOOT_LIMB[leg]
        A[j, 2] = 1.0
        A[j, 3 + 2] = -0.5 if LEG_NODE[leg] == "front" else 0.5
        A[j, 3 + i] = LEG_BEND_SIGN[leg]
        c[j] = LEG_SIDE[leg] * 0.5 * math.pi + PHI_OFFSET[leg]
    return A, c


def PackZ(pose, alpha, lengths) -> np.ndarray:
    return np.concatenate([np.asarray(pose, float), np.asarray(alpha, float), lengths])


@dataclasses.dataclass
class PoseSolution:
    """One quasi-static pose of the geometric model.

    Attributes:
        z: [x, y, eps, alpha(5), lengths(5)].
        shape: its forward kinematics.
        cost: objective value.
        constraint_violation: largest fixed-foot position error, m.
        solver_status: the solver's result code name.
        success: the solver reported success and the constraints hold to 1e-6 m.
    """

    z: np.ndarray
    shape: GeckoShape
    cost: float
    constraint_violation: float
    solver_status: str
    success: bool


class GeometricPoseSolver:
    """Finds quasi-static poses for one set of fixed feet (the program is built once, reused).

    Args:
        fixed: boolean (4,) mask of fixed feet (FEET order).
        dimensions: nominal limb lengths.
        params: weights, bounds and solver.
    """

    def __init__(
        self,
        fixed: np.ndarray,
        dimensions: GeckoDimensions | None = None,
        params: GeometricModelParams | None = None,
    ):
        self.params = params or GeometricModelParams()
        self.dimensions = dimensions or GeckoDimensions()
        self.nominal = self.dimensions.lengths()
        self.fixed = np.flatnonzero(np.asarray(fixed, bool)).tolist()
        self.prog = MathematicalProgram()
        self.z = self.prog.NewContinuousVariables(NUM_VARIABLES, "z")
        params = self.params
        leg = self.dimensions.leg_length
        # Quadratic objective: 0.5 z'Qz + b'z; Q is constant, b depends on the references and
        # the fixed-foot orientations (updated per solve).
        A_phi, self._c_phi = PhiRows()
        self._A_fixed = A_phi[self.fixed]
        Q = np.zeros((NUM_VARIABLES, NUM_VARIABLES))
        Q[_ALPHA, _ALPHA] += 2.0 * params.f_a * np.eye(5)
        Q[_LENGTH, _LENGTH] += 2.0 * params.f_l / leg**2 * np.eye(5)
        Q += 2.0 * params.f_o * self._A_fixed.T @ self._A_fixed
        self._Q = Q
        self._cost = self.prog.AddQuadraticCost(
            Q, np.zeros(NUM_VARIABLES), self.z, is_convex=True
        ).evaluator()
        self._cost.set_description("f_l|dl|^2 + f_o|dphi|^2 + f_a|dalpha|^2")
        lower = params.length_min * self.nominal
        upper = params.length_max * self.nominal
        self.prog.AddBoundingBoxConstraint(lower, upper, self.z[_LENGTH]).evaluator()
        self._feet_constraint = None
        if self.fixed:
            n = 2 * len(self.fixed)
            self._feet_constraint = self.prog.AddConstraint(
                self._FeetFunction, np.zeros(n), np.zeros(n), self.z, "fixed feet positions"
            ).evaluator()
        self.solver = SnoptSolver()
        self.options = SolverOptions()
        solver_id = self.solver.solver_id()
        self.options.SetOption(
            solver_id, "Major feasibility tolerance", params.feasibility_tolerance
        )
        self.options.SetOption(solver_id, "Major optimality tolerance", params.optimality_tolerance)

    def _FeetFunction(self, z):
        if z.dtype == object:
            value = ExtractValue(z).ravel()
            p, J = FootPositionsAndJacobian(value, self.fixed)
            return InitializeAutoDiff(p, J @ ExtractGradient(z))
        p, _ = FootPositionsAndJacobian(np.asarray(z, float), self.fixed)
        return p

    def Solve(
        self,
        alpha_ref: np.ndarray,
        fixed_positions: np.ndarray,
        fixed_phi: np.ndarray,
        guess: np.ndarray,
    ) -> PoseSolution:
        """The pose minimising the objective with the fixed feet at their positions.

        Args:
            alpha_ref: reference angles (5,), rad.
            fixed_positions: (4, 2) positions of all feet; rows of fixed feet are used, m.
            fixed_phi: (4,) orientations at fixation (Eq. 2), rad; entries of fixed feet used.
            guess: initial z (the previous pose).
        """
        params = self.params
        leg = self.dimensions.leg_length
        b = np.zeros(NUM_VARIABLES)
        b[_ALPHA] = -2.0 * params.f_a * np.asarray(alpha_ref, float)
        b[_LENGTH] = -2.0 * params.f_l / leg**2 * self.nominal
        target_phi = np.asarray(fixed_phi, float)[self.fixed] - self._c_phi[self.fixed]
        b += -2.0 * params.f_o * self._A_fixed.T @ target_phi
        constant = (
            params.f_a * float(np.sum(np.square(alpha_ref)))
            + params.f_l / leg**2 * float(np.sum(np.square(self.nominal)))
            + params.f_o * float(np.sum(np.square(target_phi)))
        )
        self._cost.UpdateCoefficients(self._Q, b, constant, is_convex=True)
        if self._feet_constraint is not None:
            target = np.asarray(fixed_positions, float)[self.fixed].ravel()
            self._feet_constraint.UpdateLowerBound(target)
            self._feet_constraint.UpdateUpperBound(target)
        result = self.solver.Solve(self.prog, np.asarray(guess, float), self.options)
        z = result.GetSolution(self.z)
        violation = 0.0
        if self.fixed:
            p, _ = FootPositionsAndJacobian(z, self.fixed)
            target = np.asarray(fixed_positions, float)[self.fixed].ravel()
            violation = float(np.max(np.abs(p - target)))
        status = result.get_solution_result().name
        return PoseSolution(
            z=z,
            shape=GeckoShapeOf(z[:3], z[_ALPHA], z[_LENGTH]),
            cost=float(result.get_optimal_cost()),
            constraint_violation=violation,
            solver_status=status,
            success=bool(result.is_success() and violation < 1e-6),
        )


@dataclasses.dataclass
class GeometricTrace:
    """Poses of a geometric-model gait, one row per solved phase end.

    Attributes:
        times: (T,) time of each pose, s (schedule of GaitTiming).
        z: (T, 13) [x, y, eps, alpha(5), lengths(5)].
        fixed: (T, 4) fixation of the feet at that pose.
        alpha_ref: (T, 5) reference angles in force, rad.
        phase: (T,) "start", "release", "move" or "fix".
        half_cycle: (T,) half-cycle index.
        cycle_end: indices into the rows where a full cycle ends (after its fix phase).
        worst_violation: largest fixed-foot position error over the run, m.
        failures: solver statuses of failed solves (empty when all succeeded).
        solves: number of NLP solves.
    """

    times: np.ndarray
    z: np.ndarray
    fixed: np.ndarray
    alpha_ref: np.ndarray
    phase: list
    half_cycle: np.ndarray
    cycle_end: list
    worst_violation: float
    failures: list
    solves: int

    @property
    def poses(self) -> np.ndarray:
        """(T, 3) torso-midpoint poses (x, y, eps)."""
        return self.z[:, :3]


class GeometricGait:
    """Walks the geometric model through the gait law, half cycle by half cycle.

    Args:
        dimensions: nominal lengths.
        params: model weights.
        timing: the gait's timing (only used to time-stamp poses).
        substeps: solves per move phase (the reference is ramped linearly; 1 = one solve at the
            new reference). More substeps give smoother animations and follow the continuation
            path the Drake model takes.
    """

    def __init__(
        self,
        dimensions: GeckoDimensions | None = None,
        params: GeometricModelParams | None = None,
        timing: GaitTiming | None = None,
        substeps: int = 1,
    ):
        self.dimensions = dimensions or GeckoDimensions()
        self.params = params or GeometricModelParams()
        self.timing = timing or GaitTiming()
        self.substeps = max(1, int(substeps))
        self._solvers: dict[tuple, GeometricPoseSolver] = {}
        self.Reset()

    def _Solver(self, fixed: np.ndarray) -> GeometricPoseSolver:
        key = tuple(bool(f) for f in fixed)
        if key not in self._solvers:
            self._solvers[key] = GeometricPoseSolver(fixed, self.dimensions, self.params)
        return self._solvers[key]

    def Reset(self, pose=(0.0, 0.0, 0.0), alpha_deg=None, *, first_sign: float = -1.0) -> None:
        """Places the robot in the exact reference shape alpha_deg (default: home pose) with the
        stance of that pose fixed."""
        from drakebots.gecko.geometry import FixationOf, HomeAnglesDeg

        alpha = np.radians(HomeAnglesDeg() if alpha_deg is None else np.asarray(alpha_deg))
        self.z = PackZ(pose, alpha, self.dimensions.lengths())
        self.alpha_ref = alpha.copy()
        self.fixed = FixationOf(alpha[2])
        shape = GeckoShapeOf(self.z[:3], alpha, self.z[_LENGTH])
        self.anchor_positions = shape.feet.copy()
        self.anchor_phi = shape.phi.copy()
        self.k = 0
        self.first_sign = first_sign
        self.time = 0.0
        self.rows = []
        self.failures = []
        self.worst = 0.0
        self.solves = 0
        self.cycle_end = []
        self._Record("start")

    def _Record(self, phase: str) -> None:
        self.rows.append(
            (self.time, self.z.copy(), self.fixed.copy(), self.alpha_ref.copy(), phase, self.k)
        )

    def _SolveAt(self, alpha_ref: np.ndarray) -> None:
        solution = self._Solver(self.fixed).Solve(
            alpha_ref, self.anchor_positions, self.anchor_phi, self.z
        )
        self.solves += 1
        self.worst = max(self.worst, solution.constraint_violation)
        if not solution.success:
            self.failures.append(
                f"half cycle {self.k}: {solution.solver_status}, fixed-foot error "
                f"{solution.constraint_violation:.3g} m"
            )
        self.z = solution.z

    def Pose(self) -> np.ndarray:
        """Current (x, y, eps)."""
        return self.z[:3].copy()

    def Shape(self) -> GeckoShape:
        return GeckoShapeOf(self.z[:3], self.z[_ALPHA], self.z[_LENGTH])

    def HalfCycle(self, q1_deg: float, q2: float) -> None:
        """Release, move to the next reference of the gait law (Eq. 15), fix the other diagonal."""
        timing = self.timing
        half = HalfCycleOf(self.k, q1_deg, q2, first_sign=self.first_sign)
        # Release: only this half cycle's stance stays fixed.
        self.fixed = half.stance.copy()
        self.time += timing.t_release
        self._SolveAt(self.alpha_ref)
        self._Record("release")
        # Move: ramp the reference to the new pose's.
        start = self.alpha_ref.copy()
        target = np.radians(half.alpha_deg)
        for s in range(1, self.substeps + 1):
            self.alpha_ref = start + (target - start) * s / self.substeps
            self._SolveAt(self.alpha_ref)
            self.time += timing.t_move / self.substeps
            self._Record("move")
        # Fix the other diagonal where its feet are now.
        shape = self.Shape()
        newly = half.next_stance & ~self.fixed
        self.anchor_positions[newly] = shape.feet[newly]
        self.anchor_phi[newly] = shape.phi[newly]
        self.fixed = self.fixed | half.next_stance
        self.time += timing.t_fix
        self._Record("fix")
        self.k += 1
        if self.k % 2 == 0:
            self.cycle_end.append(len(self.rows) - 1)

    def Cycles(self, q1_deg: float, q2: float, cycles: int) -> None:
        for _ in range(2 * int(cycles)):
            self.HalfCycle(q1_deg, q2)

    def Trace(self) -> GeometricTrace:
        times, z, fixed, alpha_ref, phase, k = zip(*self.rows, strict=True)
        return GeometricTrace(
            times=np.array(times),
            z=np.array(z),
            fixed=np.array(fixed),
            alpha_ref=np.array(alpha_ref),
            phase=list(phase),
            half_cycle=np.array(k),
            cycle_end=list(self.cycle_end),
            worst_violation=self.worst,
            failures=list(self.failures),
            solves=self.solves,
        )
