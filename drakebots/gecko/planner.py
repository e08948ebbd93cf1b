"""Motion per cycle as a bivariate polynomial (paper Eq. 16) and the gait pattern generator's
planner (Eqs. 17-22, Algorithm 1).

The direct kinematics of the velocity space (q1, q2) -> (delta eps, delta x, delta y) per gait
cycle is approximated by a quadratic in (q1, q2) (`MotionFit`; q1 in degrees, q2 dimensionless;
outputs in rad and m in the robot frame of the cycle's start). The planner predicts where a target
lies after n cycles of a constant gait (Eq. 19, closed form: the sum of n rotations is a rotation
scaled by sin(n theta / 2) / sin(theta / 2)) and picks the (q1, q2) that minimises the squared
distance d_n^2 (Eq. 21) with L-BFGS-B within bounds, raising n while no gait gets closer than the
current distance (Algorithm 1).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import numpy as np
import scipy.optimize

# Terms of the quadratic (paper Table 3): [1, q1, q2, q1^2, q2^2, q1 q2].
TERMS = ("1", "q1", "q2", "q1^2", "q2^2", "q1*q2")
OUTPUTS = ("d_eps", "dx", "dy")

# Table 3 of the paper (reference README): experimental fit of the small prototype; d_eps in
# deg per cycle, dx and dy in cm per cycle (robot frame), q1 in deg.
TABLE3_DEG_CM = {
    "d_eps": [5.4154, -0.0457, -44.1944, -0.0006, 0.778, -0.0832],
    "dx": [0.1106, 0.2225, 11.4146, -0.0008, -17.5133, -0.1213],
    "dy": [1.9498, -0.0682, -3.6997, 0.0004, -0.0333, -0.058],
}


def Terms(q1_deg, q2) -> np.ndarray:
    """The six monomials of Eq. 16, shape (..., 6)."""
    q1 = np.asarray(q1_deg, dtype=float)
    q2 = np.asarray(q2, dtype=float)
    return np.stack([np.ones_like(q1 * q2), q1 + 0 * q2, q2 + 0 * q1, q1**2, q2**2, q1 * q2], -1)


def TermGradients(q1_deg, q2) -> tuple[np.ndarray, np.ndarray]:
    """d Terms / d q1 and d Terms / d q2, each (..., 6)."""
    q1 = np.asarray(q1_deg, dtype=float)
    q2 = np.asarray(q2, dtype=float)
    zero = np.zeros_like(q1 * q2)
    one = np.ones_like(zero)
    d1 = np.stack([zero, one, zero, 2 * q1 + zero, zero, q2 + zero], -1)
    d2 = np.stack([zero, zero, one, zero, 2 * q2 + zero, q1 + zero], -1)
    return d1, d2


@dataclasses.dataclass
class MotionFit:
    """Eq. 16: motion per cycle as quadratics in (q1 [deg], q2).

    Attributes:
        coefficients: (3, 6) rows d_eps [rad], dx [m], dy [m]; columns TERMS.
        source: where the numbers come from ("paper Table 3 (experiment)", a run folder, ...).
        residual_rms, residual_max: (3,) fit residuals over the data it was fitted to (same units).
        q1_range, q2_range: the region the data covered.
    """

    coefficients: np.ndarray
    source: str = ""
    residual_rms: np.ndarray | None = None
    residual_max: np.ndarray | None = None
    q1_range: tuple = (50.0, 90.0)
    q2_range: tuple = (-0.5, 0.5)

    @property
    def rows(self) -> tuple:
        """The coefficients as three tuples of floats (for scalar code)."""
        return tuple(tuple(float(c) for c in row) for row in np.asarray(self.coefficients))

    def Evaluate(self, q1_deg, q2) -> np.ndarray:
        """(..., 3): d_eps [rad], dx [m], dy [m] per cycle."""
        return Terms(q1_deg, q2) @ np.asarray(self.coefficients).T

    def Gradient(self, q1_deg, q2) -> tuple[np.ndarray, np.ndarray]:
        """d/dq1 and d/dq2 of Evaluate, each (..., 3)."""
        d1, d2 = TermGradients(q1_deg, q2)
        C = np.asarray(self.coefficients).T
        return d1 @ C, d2 @ C

    def ToJson(self) -> dict:
        def listed(value):
            return None if value is None else np.asarray(value).tolist()

        return {
            "terms": list(TERMS),
            "outputs": list(OUTPUTS),
            "units": {"d_eps": "rad/cycle", "dx": "m/cycle", "dy": "m/cycle", "q1": "deg"},
            "coefficients": listed(self.coefficients),
            "source": self.source,
            "residual_rms": listed(self.residual_rms),
            "residual_max": listed(self.residual_max),
            "q1_range": list(self.q1_range),
            "q2_range": list(self.q2_range),
        }

    @staticmethod
    def FromJson(data: dict) -> MotionFit:
        coefficients = np.asarray(data["coefficients"], dtype=float)
        if coefficients.shape != (3, 6):
            raise ValueError(f"coefficients must be 3 x 6, got {coefficients.shape}")
        return MotionFit(
            coefficients=coefficients,
            source=str(data.get("source", "")),
            residual_rms=None
            if data.get("residual_rms") is None
            else np.array(data["residual_rms"]),
            residual_max=None
            if data.get("residual_max") is None
            else np.array(data["residual_max"]),
            q1_range=tuple(data.get("q1_range", (50.0, 90.0))),
            q2_range=tuple(data.get("q2_range", (-0.5, 0.5))),
        )

    def TableDegCm(self) -> dict:
        """Coefficients in the paper's units (deg and cm per cycle) for comparison with Table 3."""
        C = np.asarray(self.coefficients)
        return {
            "d_eps": (C[0] * 180.0 / math.pi).tolist(),
            "dx": (C[1] * 100.0).tolist(),
            "dy": (C[2] * 100.0).tolist(),
        }


def ReferenceFit() -> MotionFit:
    """The paper's experimental fit (Table 3, reference README), converted to rad and m."""
    C = np.array(
        [
            np.array(TABLE3_DEG_CM["d_eps"]) * math.pi / 180.0,
            np.array(TABLE3_DEG_CM["dx"]) / 100.0,
            np.array(TABLE3_DEG_CM["dy"]) / 100.0,
        ]
    )
    return MotionFit(C, source="paper Table 3 (experiment, small prototype)")


def FitMotion(q1_deg, q2, motion: np.ndarray, *, source: str = "") -> MotionFit:
    """Least-squares fit of Eq. 16 to measured motions.

    Args:
        q1_deg, q2: (K,) grid points.
        motion: (K, 3) measured d_eps [rad], dx [m], dy [m] per cycle.
    """
    A = Terms(q1_deg, q2)
    motion = np.asarray(motion, dtype=float)
    coefficients, *_ = np.linalg.lstsq(A, motion, rcond=None)
    residuals = motion - A @ coefficients
    return MotionFit(
        coefficients=coefficients.T,
        source=source,
        residual_rms=np.sqrt(np.mean(residuals**2, axis=0)),
        residual_max=np.max(np.abs(residuals), axis=0),
        q1_range=(float(np.min(q1_deg)), float(np.max(q1_deg))),
        q2_range=(float(np.min(q2)), float(np.max(q2))),
    )


# ---------------------------------------------------------------------------------------------
# Prediction (Eqs. 17-20).


def _Rotate(theta, v):
    """R(theta) v for arrays: theta (...,), v (..., 2)."""
    c, s = np.cos(theta), np.sin(theta)
    return np.stack([c * v[..., 0] - s * v[..., 1], s * v[..., 0] + c * v[..., 1]], -1)


def TargetInRobotFrame(pose, target) -> np.ndarray:
    """Eq. 22: the target in the robot's frame, R(-eps) (target - position)."""
    x, y, eps = pose
    return _Rotate(-np.asarray(eps), np.asarray(target, float) - np.array([x, y]))


def RotationSumFactor(theta, n: int):
    """(angle, scale) with sum_{i=1..n} R(-i theta) = scale * R(angle), closed form.

    sum_k e^{-i k theta} = e^{-i (n+1) theta / 2} sin(n theta / 2) / sin(theta / 2).
    """
    theta = np.asarray(theta, dtype=float)
    half = 0.5 * theta
    small = np.abs(np.sin(half)) < 1e-9
    scale = np.where(small, float(n), np.sin(n * half) / np.where(small, 1.0, np.sin(half)))
    return -(n + 1) * half, scale


def PredictTarget(target_robot, motion, n: int) -> np.ndarray:
    """Eq. 19: the target in the robot frame after n cycles of a constant gait.

    Args:
        target_robot: (..., 2) target in the current robot frame, m.
        motion: (..., 3) [d_eps, dx, dy] per cycle (rad, m).
        n: cycles.
    """
    motion = np.asarray(motion, dtype=float)
    theta = motion[..., 0]
    d = motion[..., 1:3]
    angle, scale = RotationSumFactor(theta, n)
    return _Rotate(-n * theta, np.asarray(target_robot, float)) - scale[..., None] * _Rotate(
        angle, d
    )


def PredictTargetStepwise(target_robot, motion, n: int) -> np.ndarray:
    """n applications of Eqs. 17-18 (compose the cycles one at a time): the reference for
    `PredictTarget`."""
    theta, dx, dy = (float(v) for v in motion)
    x, y, eps = 0.0, 0.0, 0.0  # robot pose in the initial frame
    for _ in range(n):
        # Eq. 17: the next pose, seen from the current one, is at (dx, dy), rotated by theta.
        c, s = math.cos(eps), math.sin(eps)
        x, y = x + c * dx - s * dy, y + s * dx + c * dy
        eps += theta
    return TargetInRobotFrame((x, y, eps), target_robot)


def DistanceSquared(target_robot, fit: MotionFit, q1_deg, q2, n: int):
    """d_n^2 (Eqs. 20-21) for gaits (q1, q2), vectorised over q."""
    return np.sum(PredictTarget(target_robot, fit.Evaluate(q1_deg, q2), n) ** 2, axis=-1)


def DistanceSquaredAndGradient(target_robot, fit: MotionFit, q1_deg: float, q2: float, n: int):
    """d_n^2 and its gradient with respect to (q1, q2), analytic (tested by finite differences).

    Scalar arithmetic: the planner calls this a few dozen times per decision.
    """
    q1, q2 = float(q1_deg), float(q2)
    q11, q22, q12 = q1 * q1, q2 * q2, q1 * q2
    values, g1, g2 = [], [], []
    for a0, a1, a2, a3, a4, a5 in fit.rows:
        values.append(a0 + a1 * q1 + a2 * q2 + a3 * q11 + a4 * q22 + a5 * q12)
        g1.append(a1 + 2.0 * a3 * q1 + a5 * q2)
        g2.append(a2 + 2.0 * a4 * q2 + a5 * q1)
    theta, dx, dy = values
    x0, y0 = float(target_robot[0]), float(target_robot[1])
    half = 0.5 * theta
    sin_half, cos_half = math.sin(half), math.cos(half)
    if abs(sin_half) < 1e-9:
        scale, dscale = float(n), 0.0
    else:
        sn, cn = math.sin(n * half), math.cos(n * half)
        scale = sn / sin_half
        dscale = 0.5 * (n * cn * sin_half - sn * cos_half) / sin_half**2
    angle = -(n + 1) * half
    ca, sa = math.cos(angle), math.sin(angle)
    cr, sr = math.cos(-n * theta), math.sin(-n * theta)
    rx, ry = cr * x0 - sr * y0, sr * x0 + cr * y0  # R(-n theta) x0
    ax, ay = ca * dx - sa * dy, sa * dx + ca * dy  # R(angle) d
    xn, yn = rx - scale * ax, ry - scale * ay
    # d xn / d theta: -n perp(R x0) - dscale R d + scale (n + 1)/2 perp(R d)
    k = 0.5 * (n + 1) * scale
    dtx = n * ry - dscale * ax - k * ay
    dty = -n * rx - dscale * ay + k * ax
    # d xn / d dx = -scale R(angle) e_x, d xn / d dy = -scale R(angle) e_y
    gm = (
        2.0 * (xn * dtx + yn * dty),
        2.0 * (xn * (-scale * ca) + yn * (-scale * sa)),
        2.0 * (xn * (scale * sa) + yn * (-scale * ca)),
    )
    grad = (
        gm[0] * g1[0] + gm[1] * g1[1] + gm[2] * g1[2],
        gm[0] * g2[0] + gm[1] * g2[1] + gm[2] * g2[2],
    )
    return xn * xn + yn * yn, np.array(grad)


def ProjectedNewton(objective, u0, *, max_iterations: int = 40, tolerance: float = 1e-10):
    """Minimises a smooth function of 2 variables on the unit box [0, 1]^2.

    Projected Newton with an active set (a bound is active when the gradient pushes through it),
    the Hessian by forward differences of the analytic gradient, a gradient step where the
    Hessian is not positive definite, and an Armijo backtracking line search on the projected
    path. Scalar arithmetic (2 variables). Returns (u, f, evaluations).
    """

    def clip(v):
        return 0.0 if v < 0.0 else 1.0 if v > 1.0 else v

    u = [clip(float(u0[0])), clip(float(u0[1]))]
    f, g = objective(np.array(u))
    g = [float(g[0]), float(g[1])]
    evaluations = 1
    h = 1e-6
    for _ in range(max_iterations):
        free = [not ((u[i] <= 0.0 and g[i] > 0.0) or (u[i] >= 1.0 and g[i] < 0.0)) for i in (0, 1)]
        if not any(free) or max(abs(g[i]) for i in (0, 1) if free[i]) < tolerance:
            break
        H = [[0.0, 0.0], [0.0, 0.0]]
        for i in (0, 1):
            step_i = h if u[i] + h <= 1.0 else -h
            probe = list(u)
            probe[i] += step_i
            gi = objective(np.array(probe))[1]
            H[0][i] = (float(gi[0]) - g[0]) / step_i
            H[1][i] = (float(gi[1]) - g[1]) / step_i
        evaluations += 2
        off = 0.5 * (H[0][1] + H[1][0])
        d = [0.0, 0.0]
        if free[0] and free[1]:
            a, b, c = H[0][0], off, H[1][1]
            det = a * c - b * b
            scale = max(abs(a), abs(c), 1e-300)
            if a > 1e-12 * scale and det > 1e-12 * scale * scale:
                d = [-(c * g[0] - b * g[1]) / det, -(a * g[1] - b * g[0]) / det]
            else:
                d = [-g[0] / scale, -g[1] / scale]
        else:
            i = 0 if free[0] else 1
            curvature = H[i][i]
            d[i] = -g[i] / curvature if curvature > 1e-12 else -g[i] / max(abs(curvature), 1e-12)
        step = 1.0
        while True:
            trial = [clip(u[0] + step * d[0]), clip(u[1] + step * d[1])]
            f_trial, g_trial = objective(np.array(trial))
            evaluations += 1
            decrease = g[0] * (trial[0] - u[0]) + g[1] * (trial[1] - u[1])
            if f_trial <= f + 1e-4 * decrease or step < 1e-10:
                break
            step *= 0.5
        moved = max(abs(trial[0] - u[0]), abs(trial[1] - u[1]))
        u, f, g = trial, f_trial, [float(g_trial[0]), float(g_trial[1])]
        if moved < 1e-12:
            break
    return np.array(u), f, evaluations


# ---------------------------------------------------------------------------------------------
# Algorithm 1.


@dataclasses.dataclass
class PlannerParams:
    """Settings of the gait pattern generator (reference README: the authors' planner)."""

    # Step-length bounds, deg.
    q1_bounds: tuple = (40.0, 90.0)
    # Steering bounds.
    q2_bounds: tuple = (-0.5, 0.5)
    # Start of the local search (the authors': (90, 0)).
    start: tuple = (90.0, 0.0)
    # Also start from the best point of a coarse grid (guards against a poor local minimum).
    grid_start: bool = True
    # Largest planning horizon, cycles.
    max_horizon: int = 12
    # Local search: "newton" (projected Newton, this project's) or "L-BFGS-B" (scipy; the
    # authors' choice). Both start from `start` and from the best point of a coarse grid.
    method: str = "newton"
    # Skip the local search at horizons whose coarse-grid minimum is farther than d_0 + margin.
    grid_prescreen: bool = True
    # The margin, m (the coarse grid's worst underestimate of the true minimum is far below).
    prescreen_margin: float = 0.03
    # Target reached within this distance, m (paper: 5 cm).
    epsilon: float = 0.05


@dataclasses.dataclass
class Decision:
    """One planner decision.

    Attributes:
        q1, q2: the chosen gait (deg, -).
        n: planning horizon that found a gait getting closer (or max_horizon).
        d0: current distance to the target, m.
        dn: predicted distance after n cycles, m.
        target_robot: target in the robot frame, m.
        evaluations: objective evaluations.
        seconds: wall time of the decision.
    """

    q1: float
    q2: float
    n: int
    d0: float
    dn: float
    target_robot: np.ndarray
    evaluations: int
    seconds: float


class GaitPatternPlanner:
    """Algorithm 1: the gait (q1, q2) that brings the robot closest to a target.

    Args:
        fit: the motion-per-cycle polynomial (Eq. 16).
        params: bounds, start, horizon, epsilon.
    """

    def __init__(self, fit: MotionFit, params: PlannerParams | None = None):
        self.fit = fit
        self.params = params or PlannerParams()
        p = self.params
        g1 = np.linspace(p.q1_bounds[0], p.q1_bounds[1], 11)
        g2 = np.linspace(p.q2_bounds[0], p.q2_bounds[1], 11)
        self._grid = np.array(np.meshgrid(g1, g2, indexing="ij")).reshape(2, -1).T
        self._grid_motion = fit.Evaluate(self._grid[:, 0], self._grid[:, 1])

    def GridValues(self, target_robot, n: int) -> np.ndarray:
        """d_n^2 at the points of the coarse grid (vectorised)."""
        return np.sum(
            PredictTarget(np.asarray(target_robot)[None], self._grid_motion, n) ** 2, axis=-1
        )

    def Minimize(
        self, target_robot, n: int, grid_values: np.ndarray | None = None
    ) -> tuple[np.ndarray, float, int]:
        """min over (q1, q2) in the bounds of d_n^2 (Eq. 21): (q*, d_n at q*, evaluations)."""
        p = self.params
        lo = np.array([p.q1_bounds[0], p.q2_bounds[0]])
        hi = np.array([p.q1_bounds[1], p.q2_bounds[1]])
        span = hi - lo
        evaluations = 0

        def objective(u):
            nonlocal evaluations
            evaluations += 1
            q = lo + u * span
            value, grad = DistanceSquaredAndGradient(target_robot, self.fit, q[0], q[1], n)
            return value, grad * span

        starts = [(np.array(p.start) - lo) / span]
        if p.grid_start:
            if grid_values is None:
                grid_values = self.GridValues(target_robot, n)
                evaluations += len(grid_values)
            starts.append((self._grid[int(np.argmin(grid_values))] - lo) / span)
        best_q, best_value = None, math.inf
        for u0 in starts:
            if p.method == "L-BFGS-B":
                result = scipy.optimize.minimize(
                    objective, u0, jac=True, method="L-BFGS-B", bounds=[(0.0, 1.0), (0.0, 1.0)]
                )
                u, value = result.x, float(result.fun)
            else:
                u, value, _ = ProjectedNewton(objective, u0)
            if value < best_value:
                best_value = value
                best_q = lo + np.clip(u, 0.0, 1.0) * span
        return best_q, math.sqrt(max(best_value, 0.0)), evaluations

    def Decide(self, pose, target) -> Decision:
        """Algorithm 1 from a measured pose (x, y, eps) to a target (x, y) in the world.

        For n = 1, 2, ...: minimise d_n (Eq. 21); stop at the first n whose minimum is closer than
        the current distance d_0 (or at max_horizon). With `grid_prescreen`, a horizon whose
        coarse-grid minimum exceeds d_0 by more than `prescreen_margin` is skipped without the
        local search (the grid minimum bounds the true one from above; the margin covers the
        grid's resolution), which saves most of the work for targets behind the robot.
        """
        start = time.perf_counter()
        p = self.params
        target_robot = TargetInRobotFrame(pose, target)
        d0 = float(np.linalg.norm(target_robot))
        total = 0
        n = 1
        while True:
            values = self.GridValues(target_robot, n)
            total += len(values)
            grid_min = math.sqrt(float(np.min(values)))
            last = n >= p.max_horizon
            if not p.grid_prescreen or grid_min < d0 + p.prescreen_margin or last:
                q, dn, evaluations = self.Minimize(target_robot, n, grid_values=values)
                total += evaluations
                if dn < d0 or last:
                    break
            n += 1
        return Decision(
            q1=float(q[0]),
            q2=float(q[1]),
            n=n,
            d0=d0,
            dn=dn,
            target_robot=target_robot,
            evaluations=total,
            seconds=time.perf_counter() - start,
        )


def LoadFit(path: str | Path) -> MotionFit:
    """A fit from a velocity-space results folder (its fit.json) or a fit.json file."""
    path = Path(path)
    if path.is_dir():
        path = path / "fit.json"
    return MotionFit.FromJson(json.loads(path.read_text()))
