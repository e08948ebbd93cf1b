"""The coupled skin-skeleton simulation's state and step records (drakebots.skinned.skin_coupling),
apart from its stepper so that the contact formulations each step may use
(drakebots.skinned.convex_contact) share them without importing the stepper."""

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
    max_penetration: float = 0.0
    contacts: int = 0
    sliding: int = 0
    wall_time: float = 0.0
    glue_forces: np.ndarray | None = None  # (k, 3) N on the skin
    contact_forces: np.ndarray | None = None  # (n, 3) N on the skin from the ground
    actuation: np.ndarray | None = None  # (nu,) N*m
