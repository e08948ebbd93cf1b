"""The coupled skin-skeleton simulation's state and step records (drakebots.skinned.skin_coupling),
and the line search of its Newton step, apart from its stepper so that the contact formulations
each step may use (drakebots.skinned.convex_contact) share them without importing the stepper."""

import dataclasses

import numpy as np


class CoupledStepFailure(RuntimeError):
    """The coupled Newton iteration did not converge (glue residual or inversion)."""


@dataclasses.dataclass
class StepMemory:
    """What one coupled step hands the next besides (q, v, x, w): state, as it changes the
    next step's result.

    The contact labels and slip directions warm-start the next step's active set (a standing
    robot keeps its pinned set, and so its factorisation). The factorisation is the Newton
    matrix the next step starts with (modified Newton: its iterates, though not the solution
    they converge to within the tolerances, depend on it). Once carried, the factorisation is
    read-only: a copy of the memory shares it, a step that refactorises makes a new one and
    never overwrites it in place (CoupledSkinSkeleton._Step), so two copies step on alike.
    """

    mode: np.ndarray  # (n,) int8 contact label of each skin vertex: 0 free, 1 stick, 2 slide
    slip_dir: np.ndarray  # (n, 2) the slip direction of each sliding vertex (0 elsewhere)
    factor: object | None = None  # PinnedCorrection or ReducedKkt (None: factorise afresh)
    factor_key: tuple | None = None  # the contact rows in it (refactor path)
    factor_age: int = 0  # Newton iterations it has served
    factor_exact: bool = False  # of the exact Hessian (not carried into a step)

    @staticmethod
    def Fresh(n: int) -> "StepMemory":
        """No contact, no factorisation (a step from a state of no history)."""
        return StepMemory(np.zeros(n, dtype=np.int8), np.zeros((n, 2)))

    def copy(self) -> "StepMemory":
        return dataclasses.replace(self, mode=self.mode.copy(), slip_dir=self.slip_dir.copy())

    def __deepcopy__(self, memo):
        # Drake clones abstract state by deepcopy: the arrays are copied, the read-only
        # factorisation shared.
        return self.copy()


@dataclasses.dataclass
class CoupledState:
    """State of the coupled system: skeleton q (nq), v (nv); skin x, w (3n) in m and m/s; the
    history a step starts from (`memory`, None: none, as at the start of a run)."""

    q: np.ndarray
    v: np.ndarray
    x: np.ndarray
    w: np.ndarray
    memory: StepMemory | None = None

    def copy(self) -> "CoupledState":
        return CoupledState(
            self.q.copy(),
            self.v.copy(),
            self.x.copy(),
            self.w.copy(),
            None if self.memory is None else self.memory.copy(),
        )


@dataclasses.dataclass
class StepStart:
    """What every contact formulation's step starts from (CoupledSkinSkeleton._StepStart): the
    feed-forward torques (nu,), the servo's targets (None without a servo), the skeleton's
    mass matrix, bias and gravity terms at the step's start (the step is semi-implicit in the
    configuration), and the skin's predictor y (3n,), m."""

    tau_ff: np.ndarray
    q_d: np.ndarray | None
    v_d: np.ndarray | None
    M: np.ndarray
    bias: np.ndarray
    tau_g: np.ndarray
    y: np.ndarray


@dataclasses.dataclass
class StepInfo:
    """Diagnostics of one coupled step."""

    newton_iterations: int = 0
    factorizations: int = 0
    # Of those, factorisations of the exact Hessian (CouplingConfig.exact_hessian_below).
    exact_factorizations: int = 0
    # Triangular solves for new contact coordinates (the Schur path's cached columns).
    column_solves: int = 0
    # GMRES solves of a new contact set with an older factorisation (CouplingConfig.factor_reuse)
    # and their iterations (one solve with the factorisation each).
    krylov_solves: int = 0
    krylov_iterations: int = 0
    # Contact sets solved by a low-rank update of an older set's factorisation
    # (CouplingConfig.max_low_rank).
    low_rank_solves: int = 0
    step_cuts: int = 0
    # Residual evaluations of the line search that moved back along an update (_LineSearch).
    backtracks: int = 0
    # Updates of the exact matrix that climbed the step's potential, discarded (_Step).
    rejected_updates: int = 0
    glue_residual: float = 0.0
    # The largest skin update of the step's last Newton iteration, m: above
    # CouplingConfig.position_tolerance the step was accepted unconverged (its iteration cap
    # reached with the glue holding), and its error is about this over (1 - the contraction).
    final_update: float = 0.0
    max_penetration: float = 0.0
    contacts: int = 0
    sliding: int = 0
    wall_time: float = 0.0
    glue_forces: np.ndarray | None = None  # (k, 3) N on the skin
    contact_forces: np.ndarray | None = None  # (n, 3) N on the skin from the ground
    actuation: np.ndarray | None = None  # (nu,) N*m


class _LineSearch:
    """The line search along one Newton update of the coupled step.

    The step's residuals are the gradient of its incremental potential Φ in (v+, y): r_r in v+
    (impulses, inertia and the skeleton's forces, the penalties' reactions through q+ = q + h
    v+) and r_d in y (the skin's inertia, elasticity, damping, gravity and penalties; Coulomb
    friction and the servo's damping are the non-conservative exceptions), both with the glue
    and contact multipliers. Along the update d = (dv, dy) the slope of Φ is φ'(a) = dvᵀ r_r +
    dyᵀ r_d at the point a d; where the constraints hold at a = 0, φ'(0) = -dᵀ A d < 0 for
    Newton's matrix A positive definite (otherwise the constraints' restoring term adds to it,
    or the exact matrix is indefinite along d, and a search starts only where φ'(0) < 0). A
    full step is kept unless it overshoots the minimum along d, φ'(1) > c |φ'(0)| (the strong
    Wolfe curvature condition, c = CouplingConfig.overshoot); then the root of φ' in [0, 1] is
    bracketed and found by regula falsi (the Illinois variant) to |φ'(a)| <= c |φ'(0)|, with
    at most `evaluations` residual evaluations (no factorisation); out of them, the bracket's
    lower end is kept (short of the minimum, never past it). The contact labels are those of
    the update's end, which a search needs unchanged from its start.

    Why: where Newton's matrix misses curvature the update overshoots, and a skin vertex that a
    skeleton box penalises only once it is inside (stiffness 0 outside, k in) cycled in and
    out of the box: the monster's replay stepped for 40 iterations at ±2 mm and cut the step.
    """

    def __init__(self, dv, dy, dlam, pinned, slope0, overshoot, evaluations=8):
        self.dv, self.dy, self.dlam, self.pinned = dv, dy, dlam, pinned
        self.slope0 = slope0
        self.tolerance = overshoot * -slope0
        self.lo, self.hi = (0.0, slope0), None
        self.at = 1.0
        self.left = evaluations
        self.kept = None  # the bracket's end moved by the last update ("lo" or "hi")

    def Next(self, slope: float) -> float | None:
        """φ'(a) at the current fraction a → the next fraction to evaluate, or None: keep a."""
        if self.left <= 0:
            return None  # out of evaluations (the point is where the last call sent it)
        if self.hi is None and slope <= self.tolerance:
            return None  # a full step that does not overshoot (or falls short: Newton's part)
        if self.hi is not None and abs(slope) <= self.tolerance:
            return None
        side = "hi" if slope > 0.0 else "lo"
        setattr(self, side, (self.at, slope))
        self.left -= 1
        if self.left <= 0:
            # Out of evaluations: the bracket's lower end, short of the minimum (φ falls all the
            # way there), if it moved at all.
            return self.lo[0] if self.lo[0] > 0.0 else None
        if side == self.kept:
            # Illinois: the same end moved twice (the slope is far from linear between the
            # ends: a penalty met along the way); halve the other end's slope so the next point
            # moves toward it.
            other = "lo" if side == "hi" else "hi"
            a, value = getattr(self, other)
            setattr(self, other, (a, 0.5 * value))
        self.kept = side
        (a0, s0), (a1, s1) = self.lo, self.hi
        self.at = a0 + (a1 - a0) * (-s0) / (s1 - s0)
        return self.at
