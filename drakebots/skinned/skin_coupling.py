"""The two-way coupled skin-skeleton simulation (skinned-quad-robots.txt section 4, Eqs. 1-2).

`CoupledSkinSkeleton` advances a skinned quad-robot by one implicit step: the rigid skeleton (its
MultibodyPlant is the model: mass matrix, bias and gravity terms, glue-point kinematics and
Jacobians) and the FEM skin (drakebots.fem) are solved together, the glue constraint
C(q, u) = R(q) r + t - x_c = 0 (Eq. 1) enforced with Lagrange multipliers through the KKT system
of Eq. (2) (drakebots.fem.coupling.ReducedKkt), re-linearised by Newton's method until the
constraint residual is below `glue_tolerance` (1e-9 m by default) at the end of every step.

Per step of size h, with unknowns v+ (skeleton velocities) and y (skin positions):

    skeleton rows (impulses):  M(q) (v+ - v) - h [B tau(q+, v+) - c(q, v) + tau_g(q) - D_j v+
                               + tau_pen(q+, y)] + G_q^T lam = 0
    skin rows (forces):        M_s (y - x - h w)/h^2 + dE/dx(y) + D (y - x)/h - f_g - f_pen(y)
                               - f_friction + G_u^T lam_all = 0
    glue rows:                 C(q+(v+), y) = 0, G_q = h dp/dv, G_u = -S_c

tau is the servo law of each motor, tau = clamp(tau_ff + K_p (q_d - q+) + K_d (v_d - v+),
+-effort limit) (treated implicitly while unsaturated), so a motor limited to 1.96 N*m stalls
against the skin as in the paper's Fig. 17.

Ground contact of the skin vertices (sections 4.2, 5.2-5.3) is a complementarity problem solved by
the paper's active-set labelling: a vertex below the ground is pinned (static friction: all three
coordinates; the multipliers are its contact force); a pinned vertex whose normal force is
negative is released (contact breakage); one whose tangential force exceeds mu times its normal
force slides: only its height is pinned and the Coulomb force mu lam_n opposes its slip
(Eqs. 15-17). `CouplingConfig.contact = "convex"` replaces the labels by one convex problem a
step (SAP's, on the vertices near the floor, after one factorisation:
drakebots.skinned.convex_contact; issue 69). Skin self-collision and skin-skeleton collision
use penalty forces (section 4.2; the skeleton feels the reactions), by default re-evaluated at
every Newton iterate with their stiffness's 3 x 3 vertex blocks in the Newton matrix
(`implicit_penalties`); the paper's explicit ones (forces from the step's start) overshoot when
the penalty is as stiff as a soft skin.

What a step carries into the next besides (q, v, x, w) — the contact labels and slip
directions it warm-starts from, and the Newton factorisation it may keep using — is a
`StepMemory` that travels with the `CoupledState`; the stepper itself keeps scratch only (the
fill-reducing ordering, a plant context for its kinematics), so a step is a function of the
state it is given.

`SkinnedRobotSystem` wraps the stepper as a Drake LeafSystem (double only) with a periodic
unrestricted update; the StepMemory and the last step's StepInfo are abstract state of its
Context:

    actuation, desired_state -> SkinnedRobotSystem -> skeleton_state, skin_positions,
                                                      glue_forces, contact_forces
"""

import dataclasses
import math
import time

import numpy as np
import scipy.sparse as sp
from pydrake.common.value import AbstractValue
from pydrake.multibody.tree import JacobianWrtVariable
from pydrake.systems.framework import BasicVector, LeafSystem
from scipy.spatial import cKDTree

from drakebots.fem.coupling import FactorPool, GlueConstraint, PinnedCorrection, ReducedKkt
from drakebots.fem.materials import Material
from drakebots.fem.model import ElementInversion, FemModel
from drakebots.fem.solvers import NestedDissection
from drakebots.skinned.coupled_state import (  # noqa: F401 - re-exported
    CoupledState,
    CoupledStepFailure,
    StepInfo,
    StepMemory,
    StepStart,
    _LineSearch,
)

_DEBUG = bool(__import__("os").environ.get("DRAKEBOTS_COUPLING_DEBUG"))
# A Newton iterate keeps every element's volume ratio det F above this (the line search's bound).
_MIN_JACOBIAN = 1e-3


# CoupledSkinSkeleton's default `skeleton`: the built-in skeleton named by the skin's robot.
_SKIN_ROBOT = object()


class StepDeadlinePassed(RuntimeError):
    """A step was still iterating when the stepper's `deadline` passed (a wall-time budget)."""


# CouplingConfig.contact's formulations: the paper's active set (the default and reference) and
# SAP's convex problem (drakebots.skinned.convex_contact, issue 69).
CONTACTS = ("active_set", "convex")
# The skin's time integration (CouplingConfig.skin_integrator): "backward_euler", positions
# y = x + h w' (the paper's); "newmark", Drake 1.51's DeformableModel scheme
# (VelocityNewmarkScheme with gamma = 1, beta = 1/2: the velocity by backward Euler, the
# positions by the trapezoid y = x + h (w + w') / 2).
SKIN_INTEGRATORS = ("backward_euler", "newmark")


def ContactNamed(name: str, label: str) -> str:
    """`name` if it is one of CONTACTS, else InputError (a ValueError) naming `label`, the
    setting it came from (a flag or a config field): the one check of every contact option."""
    from drakebots.errors import InputError

    if name not in CONTACTS:
        raise InputError(f"{label} must be one of {', '.join(CONTACTS)}, got '{name}'")
    return name


def SkinIntegrator(config) -> str:
    """config.skin_integrator if it is one of SKIN_INTEGRATORS, else ValueError naming it."""
    if config.skin_integrator not in SKIN_INTEGRATORS:
        raise ValueError(
            f"CouplingConfig.skin_integrator must be one of {', '.join(SKIN_INTEGRATORS)}, "
            f"got '{config.skin_integrator}'"
        )
    return config.skin_integrator


@dataclasses.dataclass
class CouplingConfig:
    """Options of the coupled simulation (SI units)."""

    # Time step, s (the paper's frame interval is 5 ms).
    time_step: float = 0.005
    # Ground friction coefficient (skin on the floor).
    friction: float = 0.8
    # Rayleigh damping of the skin: mass part (1/s) and stiffness part (s). Not from the paper.
    mass_damping: float = 2.0
    stiffness_damping: float = 0.0
    # The glue residual every step ends below, m.
    glue_tolerance: float = 1e-9
    # Newton: converged when the largest skin update is below this, m.
    position_tolerance: float = 1e-7
    # Newton iterations per step (refactorisations happen when convergence stalls).
    max_iterations: int = 40
    # Contact labels may change during the first this-many iterations of a step, then freeze
    # (except stick -> slide). 8 was too few for a sliding body: labels froze outside the
    # friction cone and it stopped in a third of Coulomb's distance (measured on a sliding box;
    # with 16-40 it slides mu g to within 5 %).
    freeze_after: int = 16
    # A failed step is halved and retried this many times before the run stops.
    max_cuts: int = 3
    # Skin-skeleton and self-collision penalty stiffness, N/m per vertex (section 4.2).
    penalty_stiffness: float = 2000.0
    # Self-collision: skin vertices closer than this that are far apart on the rest skin, m.
    self_collision_distance: float = 0.003
    # Depth over which a penalty's stiffness ramps from 0 to penalty_stiffness, m: the force is
    # k z^2 / (2 delta) at depth z < delta and k (z - delta / 2) beyond, continuous with its
    # derivative (C^1). With the plain k z (a stiffness jump at the surface) Newton cycled on a
    # vertex crossing a box face (Fig. 17's folded run: in, out, in, ... for 35 iterations).
    # 0: the plain law.
    penalty_onset: float = 2.5e-4
    # Penalties re-evaluated at every Newton iterate with their stiffness in the Newton matrix
    # (backward Euler in the penalties too); False: forces from the step's start, constant
    # through the step (the paper's explicit penalties, section 4.2). An explicit penalty as
    # stiff as the skin around a vertex overshoots from step to step: the folded ankle skin at
    # 0.67 MPa inverted an element in a fold at 32 deg (README, Fig. 17); the implicit run
    # settles at 66.9 deg of the 70 deg target, short by the servo's droop, not stalled.
    implicit_penalties: bool = True
    # Young's modulus scale (1: the skin's own).
    youngs_scale: float = 1.0
    # The ground contact's formulation: "active_set", the paper's labels (pinned / sliding /
    # free) inside Newton (the module docstring; the reference), or "convex", SAP's convex
    # problem on the candidate vertices after one factorisation a step
    # (drakebots.skinned.convex_contact; issue 69).
    contact: str = "active_set"
    # The skin's time integration (SKIN_INTEGRATORS): "backward_euler", the paper's, or
    # "newmark", Drake's deformable bodies' (issue 69, Findings 33: the validation scenes like
    # for like with Drake at its own time step). "newmark" is built for contact = "convex" and
    # a contact problem without the skeleton's boxes (a glued vertex then moves by the
    # trapezoid and the skeleton by backward Euler, and their impulses' compliance is not
    # symmetric); elsewhere it is refused by name.
    skin_integrator: str = "backward_euler"
    # "convex": the vertices within this height of the ground at the step's start or at its
    # predictor are the contact candidates, m.
    contact_margin: float = 1e-3
    # "convex": the contact problem starts with the candidates within this height of the floor
    # (at the start or at the contact-free update's end) and grows by those its solution
    # pushes, m (a smaller dense problem; the solution is the same).
    contact_active: float = 1e-4
    # "convex": SAP's near-rigid parameter beta (normal regularisation beta^2 / (4 pi^2) w) and
    # friction regularisation sigma (sigma w), Drake's defaults.
    near_rigid: float = 1.0
    friction_regularization: float = 1e-3
    # "convex": where the ground pushes (convex_contact.ContactPoints): "vertices", the skin's
    # vertices near the ground; "triangles", as Drake's deformable contact: the centroids of the
    # skin's ground-facing surface triangles clipped against the ground (a triangle wholly below
    # or above: its three quadrature points), each with its area (issue 69, Findings 19).
    contact_points: str = "vertices"
    # "convex": the ground's stiffness per unit contact area, Pa/m: a point's k = C * area (a
    # vertex's area: a third of its ground-facing triangles'), at rest it carries k times its
    # depth; inf: SAP's near-rigid regularisation alone. Drake 1.51's deformable contact on the
    # validation block behaves as about 2e8 (Findings 19).
    contact_stiffness: float = float("inf")
    # "convex" with a finite contact_stiffness: SAP's dissipation time scale tau, s (R_n = 1 /
    # (h k (h + tau)), bias -phi / (h + tau)); Drake's default dissipation time constant.
    contact_dissipation_time: float = 0.1
    # "convex" with a finite contact_stiffness: the skin's own stiffness per unit area in series
    # with the ground's, Pa/m, as Drake's deformable driver has it (its C = 1e8 for every
    # deformable body; g = 1 / (1/C_skin + 1/contact_stiffness)): a point's k = g area sets SAP's
    # R_n and its bias holds the ground's pressure, phi * contact_stiffness / g, so at rest it
    # carries contact_stiffness * area * depth whatever this is. inf: k = contact_stiffness area.
    contact_skin_stiffness: float = float("inf")
    # "convex": the Delassus diagonal w_j of each ground point, which scales its regularisation
    # (R_t = sigma w, the near-rigid R_n = beta^2 / (4 pi^2) w): "exact", the mean diagonal of
    # the point's 3 x 3 block of J W J^T / h^2; "diagonal", Drake's SapModel estimate
    # ||J_j (h^2 diag K)^-1 J_j^T||_F / 3 from the diagonal of the step's skin matrix K alone.
    # On a soft skin the estimate is far smaller (the block's bottom: 1.5 against 80 1/kg), so
    # SAP's near-rigid term binds less (issue 69, Findings 23).
    contact_delassus: str = "exact"
    # "convex": modified-Newton iterations a step at most.
    convex_iterations: int = 60
    # "convex": the step refactorises at its iterate (the exact Hessian there once the skin's
    # update is below exact_hessian_below) when the updates with its factorisation contract by
    # more than convex_contraction an iteration (measured from the second iteration with it),
    # or after convex_refresh_after iterations with it, at most convex_refreshes times a step;
    # a step that converges with its last updates contracting by convex_contraction or better
    # hands its factorisation (and W) to the next step. Issue 69, the monster's walk (Findings
    # 20): a factorisation of the predictor's matrix contracted by 0.7-0.8 an iteration, one
    # carried from the last step's solution by 0.2-0.4; a refactorisation with W costs 3-6 s
    # there, an iteration 0.15-0.3 s.
    convex_contraction: float = 0.5
    convex_refresh_after: int = 12
    convex_refreshes: int = 3
    # "convex": such a refresh factorises the exact Hessian where the update is below this, m
    # (the projected one where the exact is indefinite, and at the step's first
    # factorisation); inf: every refresh. The active set's exact_hessian_below (1e-4) took
    # 2.0 factorisations and 8.0 modified-Newton iterations a frame over the monster's first
    # 10 walk frames; 1e-3: 1.7 and 7.4; inf: 1.7 and 7.2, 16 % less CPU a frame, the torso
    # path the same to 1e-9 m (issue 69, Findings 25).
    convex_exact_below: float = math.inf
    # "convex" with convex_collisions False: the collision penalties' change since the
    # factorisation (a vertex entering or
    # leaving a skeleton box, a self-collision pair) enters each iteration's solve and W by
    # Woodbury's identity, skin and skeleton parts together (convex_contact._PenaltyUpdate);
    # False: the penalties of the factorisation's iterate in the matrix (explicit in their
    # changes). Off by default: on the monster's walk it took 15.5 iterations and 2.5
    # factorisations a frame instead of 25.8 and 3.4, but its columns (1900 solves a frame)
    # made the frame slower, 19.8 s against 13.8 s (median of 20; Findings 20).
    penalty_update: bool = False
    # "convex": the skeleton boxes and the self-collision pairs as constraints of the convex
    # problem, beside the ground (convex_contact.CollisionContacts): frictionless, compliant
    # with penalty_stiffness per vertex (SAP's R_n = 1 / (h^2 k)), their geometry fixed at the
    # step's start, their vertices and the skeleton's velocities in the condensed system; none
    # of their stiffness in the factorised matrix, so nothing stiff switches outside the
    # problem. False: the penalties of section 4.2 outside it, as the active set has them
    # (policy C, Findings 20). The default since Findings 21: on the monster's walk 17.35
    # iterations and 2.6 factorisations a frame against 25.75 and 3.4, 15.8 s against 17.7 s
    # (median of 20), the torso path the same to 0.01 mm.
    convex_collisions: bool = True
    # "convex": W = S K⁻¹ Sᵀ from the factorisation itself. PARDISO's Cholesky is bordered by
    # the unit columns of a block of coordinates (ReducedKkt.schur_dofs) and gives that block of
    # K⁻¹ in its numeric phase, instead of a forward half-solve per held coordinate
    # (convex_contact._HalfSolveColumns, about 3 ms a column on the monster). The block is the
    # problem's coordinates with the outer surface's free vertices within convex_schur_margin
    # of the ground and the collisions within it, kept while it holds each new problem's
    # coordinates (its analysis, METIS in PARDISO, is redone when it grows). 0: the half-solves
    # (the reference; CHOLMOD and SuperLU always take them). Issue 69, Findings 22.
    convex_schur_margin: float = 2e-3
    # The most coordinates such a block takes (its numeric cost grows with it: 0.4 s at 422,
    # 0.7 s at 2000, 1.4 s at 4000 against 0.35 s without, the monster's 128k-row matrix); a
    # larger one takes the problem's coordinates alone, or the half-solves beyond this.
    convex_schur_max: int = 3000
    # At most this many of a step's problem coordinates may lie outside the block and be
    # solved as columns instead (a full solve each, about 10 ms on the monster), so that a
    # block is kept, and the carried factorisation reused, until the problem outgrows it by
    # more: each new block costs PARDISO a new analysis (0.55-0.65 s on the monster, in 6 of 8
    # steps of its walk's landing with 0). 0: every problem coordinate in the block.
    convex_schur_spill: int = 48
    # The skin's hyperelastic model (drakebots.fem.materials.MATERIAL_MODELS; the paper's
    # section 4.1: neo-Hookean).
    material_model: str = "neohookean"
    # How contact-label changes are solved: "schur" keeps the factorisation of the glue-only
    # system and adds the contact rows through their Schur complement (PinnedCorrection);
    # "refactor" factorises the whole system again for every new contact set (the reference).
    contact_solver: str = "schur"
    # Coulomb friction of sliding vertices inside the Newton step (Schur path only); False:
    # a fixed-point iteration on the normal force, as the refactor path does.
    implicit_friction: bool = True
    # Newton iterations a factorisation (Hessian, skeleton blocks) is reused for at most. A
    # stale factor that slows Newton down is refreshed anyway (the contraction test in Step);
    # this only bounds how stale a factor that still converges in one iteration may get.
    max_factor_age: int = 200
    # Schur path: from this Newton iteration of a step on, a factor two iterations old is refreshed
    # even while the updates contract fast (by 0.5 or better; slower contraction refreshes it at any
    # iteration). Issue 52: with 6 (the rule before) the monster's walking frames refactorised the
    # exact Hessian at every other iteration from the 6th on, though its modified-Newton updates
    # contracted by 0.14-0.28: 2 of the 8 factorisations a frame bought nothing a 0.1 s solve would
    # not (scripts/bench_fem.py, table 4: "alternate_refresh" is the rule before, "newton_before"
    # both this and max_low_rank's reference). The backstop stays for a step whose labels keep
    # changing.
    full_newton_after: int = 20
    # How the Newton systems reuse factorisations (issue 52). "pool" (the default): every
    # factorisation takes one that no state holds any more (drakebots.fem.coupling.FactorPool),
    # keeping PARDISO's symbolic analysis (also for a pattern inside the analysed one); the Schur
    # path's glue-only factorisation is made only when a solve needs it; a contact set too large for
    # the cached Schur columns is pinned in place (the glue-only pattern, so its factorisation
    # reuses an analysis too) and, where it differs from the last such set by a few coordinates,
    # solved by a low-rank update of that set's factorisation (max_low_rank; GMRES preconditioned by
    # it, for one coordinate, where the factorisation has no half-solve). The solution is the same
    # to round-off. Measured on the monster's folded skin (bench_fem table 4, its walk's first 2
    # frames, alternated with "fresh"): 7 factorisations a frame instead of 9 (the frame where a
    # foot touches down: 9 instead of 13), CPU 0.81x, wall 0.51x, states 5e-15 m apart. GMRES needs
    # about two iterations a changed coordinate, each ~0.13 s CPU there, where a numeric
    # factorisation takes ~0.6-0.8 s (17 iterations: 2.3 s against 0.84 s), so only a one-coordinate
    # change goes to it. "fresh": the reference, the path before: each contact set and pattern
    # factorised afresh with the rows eliminated.
    factor_reuse: str = "pool"
    # Schur path: a new contact set that needs more uncached Schur columns than this (one solve
    # each) is solved directly instead (PinnedCorrection.max_new_columns; its docstring has the
    # measurement behind 150).
    max_new_columns: int = 150
    # Schur path with "pool": a contact set that differs from the last one factorised in place
    # (same Newton matrix) in at most this many coordinates is solved exactly by a low-rank
    # update of that factorisation (PinnedCorrection's max_low_rank; drakebots.fem.coupling.
    # _LowRank), not factorised again. Issue 52: on the monster's walk the labels of a frame's
    # first Newton iterations change by 7-34 coordinates each, and each change cost a 0.6-0.8 s
    # factorisation. 0: the path before (GMRES for a one-coordinate change, else a
    # factorisation).
    max_low_rank: int = 40
    # How the coupled system is factorised (drakebots.fem.coupling.FACTORIZATIONS): "auto"
    # takes CHOLMOD when scikit-sparse imports (the `cholmod` extra), else SuperLU.
    factorization: str = "auto"
    # Newton's matrix: the skin's elements projected to positive semi-definite (and only the
    # positive part of the self-collision pairs' stiffness) until the skin's update falls below
    # this, m, with the contact labels settled; then the exact Hessian of both, as long as its
    # updates descend the step's potential and need no cut (else projected again for the step).
    # The projection is what a step far from its solution needs, but near it Newton then
    # contracts only linearly: on the monster's settled folded skin (42.9k vertices) by 0.77 per
    # iteration, 38 iterations to a 1e-7 m update; with the exact matrix from 1e-4 m on, 13
    # (quadratic once there). The exact matrix may be indefinite: the neo-Hookean energy is not
    # convex in compression, and where the skin is light, inertia (mass / h^2) does not make up
    # for it. CHOLMOD then refuses it and SuperLU factorises it (Newton's convergence does not
    # need definiteness; the descent check does the safeguarding). Frame 8 of the monster's walk
    # replay: one negative eigenvalue, -0.25 N/m, in a patch of side skin whose vertices weigh
    # 0.6-1.2 mg (inertia 0.024-0.048 N/m); with the exact matrix 18 iterations (42 s), with the
    # projected one in its place 40, the cap, unconverged (97 s). 0: always projected.
    exact_hessian_below: float = 1e-4
    # A Newton update moves no skin vertex further than this, m (a longer one is scaled down):
    # a trust region for the iterates far from the step's solution. On the monster's replay an
    # update whose contact labels changed moved a tail vertex 16 cm, then 92 cm; the step was
    # cut after 40 iterations. 0: no bound.
    max_update: float = 2e-3
    # The line search's curvature condition (_LineSearch): an update is kept whole unless the
    # slope of the step's potential at its end exceeds this fraction of the slope's magnitude
    # at its start (it overshot the minimum along the update). inf: no line search.
    overshoot: float = 0.5


def PairBlocks(a, b, u, scale):
    """The 3 x 3 vertex blocks of Σ scale u uᵀ ⊗ [[1, -1], [-1, 1]] over pairs (a, b), as the
    (row vertices, column vertices, directions, scales) lists that
    CoupledSkinSkeleton._VertexBlocks sums: a self-collision pair's stiffness along u."""
    return [a, b, a, b], [a, b, b, a], [u] * 4, [scale, scale, -scale, -scale]


@dataclasses.dataclass
class Penalties:
    """Collision penalty forces at one configuration (CoupledSkinSkeleton.Penalties)."""

    forces: np.ndarray  # (3n,) N on the skin
    skeleton: np.ndarray  # (nv,) generalized forces on the skeleton (the reactions)
    # (3n, 3n) sparse, positive semi-definite: the penalties' stiffness -d forces / dx, exact
    # for a vertex in a box, its positive part for a self-collision pair (see
    # CoupledSkinSkeleton.Penalties), N/m.
    stiffness: sp.csr_matrix
    # The skin-skeleton penalties' dependence on the skeleton's motion: with K_b = k' n nᵀ on a
    # vertex in a box and J_b its (3, nv) point Jacobian on the box's body, a move δq changes
    # the vertex's force by +K_b J_b δq and the body's generalized force by -J_bᵀ (that).
    # coupling = Σ K_b J_b (3n, nv) sparse, N/m per unit of v (None: no vertex in a box);
    # skeleton_stiffness = Σ J_bᵀ K_b J_b (nv, nv) (zeros then). Together with `stiffness` on
    # the skin: the Hessian of the penalty energy in (x, q) (up to the rotation of the
    # normals), for a step implicit in both bodies (qpcc_coupled.CoupledFrameDynamics.System).
    coupling: sp.csr_matrix | None = None
    skeleton_stiffness: np.ndarray | None = None
    # The reactions on the skeleton one body at a time: (body name, points (k, 3), forces
    # (k, 3)), world frame, the force -push at each pushed vertex (for per-link loads).
    reactions: list = dataclasses.field(default_factory=list)
    # The rest of the self-collision pairs' stiffness, left out of `stiffness`: the tangential
    # part -p / d (I - e eᵀ) on a pair's vertices (negative semi-definite), N/m. `stiffness +
    # tangential` is the exact -d forces / dx of the skin (None: no pair).
    tangential: sp.csr_matrix | None = None
    # The self-collision pairs one by one: (a (m,), b (m,) vertex indices, e (m, 3) unit
    # vectors from b to a, k' (m,) N/m), so that the pairs' part of `stiffness` is
    # Σ k' u uᵀ with u = (e on a's dofs, -e on b's): a rank-one term per pair (None: no pair).
    # `box_stiffness` is `stiffness` without it (the vertices in a box only). The pairs join
    # far apart vertices, outside the FEM's sparsity pattern: the QPCC frame keeps them out of
    # its factorised skin block as low-rank columns (qpcc_coupled._SchurCondensation).
    pairs: tuple | None = None
    box_stiffness: sp.csr_matrix | None = None

    def PairColumns(self, free_index: np.ndarray | None = None):
        """The pairs' stiffness as columns: (rows (m, 6), values (m, 6)) with
        Σ_p u_p u_pᵀ = the pairs' part of `stiffness`, u_p = √k'_p (e_p on a's dofs, -e_p on
        b's); pairs with k' = 0 are left out. With `free_index` (dof -> free row, -1 where
        pinned), the rows are free rows and only the pairs of two free vertices are returned,
        with a mask of the pairs kept (None, None, None without a pair)."""
        if self.pairs is None:
            return None, None, None
        a, b, e, slope = self.pairs
        dofs = np.concatenate([3 * a[:, None] + np.arange(3), 3 * b[:, None] + np.arange(3)], 1)
        scale = np.sqrt(np.maximum(slope, 0.0))
        values = np.concatenate([e, -e], axis=1) * scale[:, None]
        keep = slope > 0.0
        if free_index is not None:
            dofs = free_index[dofs]
            keep &= np.all(dofs >= 0, axis=1)
        return dofs[keep], values[keep], keep

    def StepBlocks(self, h: float):
        """(A_r term (nv, nv) or None, A_dr (3n, nv) or None): the penalties' coupling in a
        step whose skeleton unknowns are velocities (Δq = h Δv) and whose skeleton rows are
        impulses: Δt² Σ Jᵀ K J joins the skeleton block, -Δt Σ K J couples the skin rows to
        Δv (its transpose the skeleton rows to the skin's). None, None without a vertex in a
        box."""
        if self.coupling is None:
            return None, None
        return h**2 * self.skeleton_stiffness, (-h * self.coupling).tocsr()


class CoupledSkinSkeleton:
    """One implicit step of the coupled skin-skeleton dynamics (see the module docstring).

    Args:
        plant: a finalized MultibodyPlant holding the skeleton (used as a model only).
        instance: the skeleton's model instance.
        skin: a drakebots.fem.skin.Skin (glue vertices, links, link-frame points).
        config: CouplingConfig.
        lift: raise skeleton and skin by this much at the start, m (the skin's sole).
        skeleton: the SkeletonParams of the skeleton the plant holds, whose boxes push the skin
            (a robot file's skeleton: its `robot.params`); None: no skeleton boxes (a skin on a
            body that is no generated skeleton); by default the built-in skeleton the skin was
            made for (`skin.robot`), which must then be one (else ValueError: a user skeleton's
            boxes come from its parameters, never from a package skeleton of the same name).

    Raises:
        ValueError: no built-in skeleton is named `skin.robot` and no `skeleton` was given, or
            none of the skeleton's links is a body of `instance` (the wrong skeleton).
    """

    def __init__(
        self,
        plant,
        instance,
        skin,
        config: CouplingConfig | None = None,
        *,
        lift=0.0,
        skeleton=_SKIN_ROBOT,
    ):
        self.plant = plant
        self.instance = instance
        self.skin = skin
        self.config = config or CouplingConfig()
        cfg = self.config
        self.context = plant.CreateDefaultContext()
        self.nq, self.nv = plant.num_positions(), plant.num_velocities()
        material = Material(
            youngs_modulus=skin.youngs_modulus * cfg.youngs_scale,
            poissons_ratio=skin.poissons_ratio,
            mass_density=skin.mass_density,
            mass_damping=cfg.mass_damping,
            stiffness_damping=cfg.stiffness_damping,
            model=cfg.material_model,
        )
        # Per-element factor on E: the soft regions (the monster's belly and tail, section 7).
        scale = skin.ElementYoungsScale() if hasattr(skin, "ElementYoungsScale") else None
        self.fem = FemModel(skin.mesh, material, youngs_scale=scale)
        n = self.fem.num_vertices
        self.n = n
        # Glue (Eq. 1): vertex -> body, point in the body frame.
        self.glue = GlueConstraint(skin.glue_vertices, n)
        self._glue_groups = []
        for name in dict.fromkeys(skin.glue_links):
            rows = np.array([k for k, link in enumerate(skin.glue_links) if link == name])
            body = plant.GetBodyByName(name, instance)
            self._glue_groups.append((body, rows, skin.glue_points[rows].T.copy()))
        # Skeleton actuation: B, servo gains, limits; joint damping.
        self.B = plant.MakeActuationMatrix()
        self.nu = self.B.shape[1]
        kp, kd, limit, vdof, qdof = [], [], [], [], []
        for index in plant.GetJointActuatorIndices(instance):
            actuator = plant.get_joint_actuator(index)
            gains = actuator.get_controller_gains() if actuator.has_controller() else None
            kp.append(gains.p if gains is not None else 0.0)
            kd.append(gains.d if gains is not None else 0.0)
            limit.append(actuator.effort_limit())
            vdof.append(actuator.joint().velocity_start())
            qdof.append(actuator.joint().position_start())
        self.kp, self.kd = np.array(kp), np.array(kd)
        self.effort_limits = np.array(limit)
        self.actuated_v = np.array(vdof, dtype=np.int64)
        self.actuated_q = np.array(qdof, dtype=np.int64)
        self.joint_damping = np.zeros(self.nv)
        for j in plant.GetJointIndices(instance):
            joint = plant.get_joint(j)
            if joint.num_velocities() == 1:
                self.joint_damping[joint.velocity_start()] = joint.GetDampingVector(self.context)[0]
        # Skin constants.
        self.mass = self.fem.MassDiagonal()
        self.damping = self.fem.DampingMatrix()
        self.gravity = self.fem.GravityForces(plant.gravity_field().gravity_vector())
        # Scratch: the fill-reducing ordering of the skin's dofs, made once from the pattern of
        # the skin's own matrix (not of the first step's penalties), so it is the same whatever
        # state is stepped first.
        self._ordering = None
        # Scratch: (h, M/h² + D/h in the stiffness's pattern) for _SkinMatrix.
        self._inertia_damping = None
        # Scratch: factorisations no state holds any more, for their symbolic analysis
        # (CouplingConfig.factor_reuse "pool").
        self._pool = FactorPool()
        # A time.perf_counter() value after which a step stops iterating and raises
        # StepDeadlinePassed (None: no limit): a caller's wall-time budget holds inside a step,
        # whose Newton iterations and step cuts can take minutes on a falling robot.
        self.deadline = None
        # Collision data: skeleton boxes per body (home pose, body frame) for skin-skeleton
        # penalty forces, applied to free inner-surface vertices.
        self.skeleton = self._SkeletonOf(skin) if skeleton is _SKIN_ROBOT else skeleton
        self._boxes = [] if self.skeleton is None else self._SkeletonBoxes(skin, self.skeleton)
        boundary_inner = np.setdiff1d(
            np.unique(_Boundary(skin.mesh.tets)), np.flatnonzero(skin.outer)
        )
        # The vertices a skeleton box may push (the free inner-surface ones).
        self.box_vertices = np.setdiff1d(boundary_inner, skin.glue_vertices)
        # (box, box vertex): the vertices each box overlapped in the home pose (Penalties).
        self._box_exempt = np.array([box[4][self.box_vertices] for box in self._boxes], bool)
        if SkinIntegrator(cfg) != "backward_euler" and (
            cfg.contact != "convex" or (self._boxes and cfg.convex_collisions)
        ):
            from drakebots.errors import InputError

            raise InputError(
                f"CouplingConfig.skin_integrator '{cfg.skin_integrator}' is built for contact "
                "'convex' with no skeleton box in its problem (here: contact "
                f"'{cfg.contact}', {len(self._boxes)} skeleton boxes with convex_collisions "
                f"{cfg.convex_collisions}); use 'backward_euler', or convex_collisions False"
            )
        self._outer = np.flatnonzero(skin.outer)
        # The self-collision candidates (_SelfCollisionPairs): the outer positions they were
        # found at, the pairs within the distance plus a margin there (far apart at rest), and
        # the distance they were found for.
        self._pair_candidates = {}  # (r, apart) -> (O, candidate pairs): _SelfCollisionPairs
        self.lift = float(lift)
        self.floating = [
            plant.get_body(index).floating_positions_start()
            for index in plant.GetFloatingBaseBodies()
        ]

    @property
    def box_bodies(self) -> list[str]:
        """Names of the skeleton bodies whose boxes push the skin (the penalties' reactions)."""
        return list(dict.fromkeys(box[0].name() for box in self._boxes))

    # ---- state -------------------------------------------------------------------------------
    def DefaultState(self) -> CoupledState:
        """Home pose (the plant's default), skin at rest, lifted by `lift`."""
        q = self.plant.GetPositions(self.context).copy()
        for start in self.floating:
            q[start + 6] += self.lift
        x = self.fem.RestPositions()
        x[2::3] += self.lift
        return CoupledState(q, np.zeros(self.nv), x, np.zeros_like(x))

    def GluePoints(self, q) -> tuple[np.ndarray, np.ndarray]:
        """(p_WG (k, 3), J (3k, nv)) of the glue points at configuration q."""
        plant, ctx = self.plant, self.context
        plant.SetPositions(ctx, q)
        k = len(self.glue.vertices)
        p = np.empty((k, 3))
        J = np.empty((3 * k, self.nv))
        world = plant.world_frame()
        for body, rows, p_BG in self._glue_groups:
            p[rows] = plant.CalcPointsPositions(ctx, body.body_frame(), p_BG, world).T
            Jb = plant.CalcJacobianTranslationalVelocity(
                ctx, JacobianWrtVariable.kV, body.body_frame(), p_BG, world, world
            )
            J[(3 * rows[:, None] + np.arange(3)).ravel()] = Jb
        return p, J

    def GlueResidual(self, state: CoupledState) -> float:
        p, _ = self.GluePoints(state.q)
        return float(np.max(np.abs(self.glue.Residual(p, state.x)))) if len(p) else 0.0

    def _Integrate(self, q, v_next, h):
        plant, ctx = self.plant, self.context
        plant.SetPositions(ctx, q)
        qdot = plant.MapVelocityToQDot(ctx, v_next)
        q_next = q + h * qdot
        for start in self.floating:
            quat = q_next[start : start + 4]
            q_next[start : start + 4] = quat / np.linalg.norm(quat)
        return q_next

    # ---- collisions (explicit penalties, section 4.2) ------------------------------------------
    @staticmethod
    def _SkeletonOf(skin):
        """The built-in skeleton's parameters for a skin made for it (the default `skeleton`)."""
        from drakebots.skinned.skeleton import BuiltinSkeletonNames, LoadSkeletonParams

        if skin.robot not in BuiltinSkeletonNames():
            raise ValueError(
                f"CoupledSkinSkeleton: the skin's robot '{skin.robot}' is no built-in skeleton "
                f"({', '.join(BuiltinSkeletonNames())}): pass skeleton= its SkeletonParams (a "
                "robot file's robot.params), or skeleton=None for no skin-skeleton collision boxes"
            )
        return LoadSkeletonParams(skin.robot)

    def _SkeletonBoxes(self, skin, params):
        from drakebots.skinned.skeleton import _Build
        from drakebots.skinned.skin import PieceParentLinks

        built = _Build(params)
        if not any(self.plant.HasBodyNamed(name, self.instance) for name in built.links):
            raise ValueError(
                f"CoupledSkinSkeleton: no link of the skeleton '{params.name}' "
                f"({', '.join(built.links)}) is a body of the plant's model instance "
                f"'{self.plant.GetModelInstanceName(self.instance)}'"
            )
        boxes = []
        rest = skin.mesh.vertices
        # A limb piece of a skin in pieces is not penalised against the boxes of the link it
        # hangs from (the torso's): the hip motor sits inside the torso's box, so the piece
        # wraps the hip inside that box at every hip angle, as two links joined at a joint
        # overlap (Drake filters such pairs too); the torso's piece is cut clear of the swept
        # limbs instead (SkinOptions.piece_clearance), and meets every leg box.
        hanging = PieceParentLinks(skin, params)
        for name, link in built.links.items():
            if not self.plant.HasBodyNamed(name, self.instance):
                continue  # a skin piece on part of the skeleton
            body = self.plant.GetBodyByName(name, self.instance)
            for box in link.boxes:
                # Vertices that the box already overlaps in the home pose (the skin is shaped
                # around the skeleton, not exactly clear of every motor housing) are exempt:
                # penalties act on collisions that motion creates, not on the design's overlap.
                local = (rest - box.center) @ box.R
                overlap = np.all(np.abs(local) < 0.5 * box.size + 0.002, axis=1)
                overlap |= hanging == name
                boxes.append((body, box.center - link.origin, box.R, 0.5 * box.size, overlap))
        return boxes

    def Penalties(self, q, x, faces: dict | None = None) -> "Penalties":
        """The collision penalties of section 4.2 at skeleton configuration q, skin positions x.

        Skin-skeleton: a free inner-surface skin vertex inside a skeleton box (one it did not
        overlap in the home pose) is pushed out through the nearest face by p(depth), and the
        box's body feels the opposite force at the vertex (Newton's third law; the paper merges
        the penalties into both b_r and b_d, section 5.2). Self-collision: two outer vertices
        closer than r that were more than 4 r apart at rest repel with p(r - d) along their
        line. p is the penalty law k z, made C^1 near the surface (`_PenaltyLaw`, onset depth
        `penalty_onset`): p(z) = k z^2 / (2 delta) for z < delta, k (z - delta / 2) beyond.

        `faces`, a dict kept through one step, holds the face each penalised vertex was first
        pushed through ((box, vertex) -> (axis, sign)); a vertex keeps it while it stays in the
        box. Without it the nearest face is taken each time, and a vertex near the plane where
        two faces are equally deep has its push flip between them (Newton cycled on one such
        vertex in Fig. 17's folded piece).

        Returns forces (3n,) on the skin, N; skeleton (nv,) generalized forces on the skeleton,
        N*m or N; and stiffness, the 3 x 3 vertex blocks the implicit step adds to its Newton
        matrix, with k' = p'(z): k' n n^T on a vertex in a box, the exact -df/dx there; for a
        self-collision pair along the unit vector e, [[H, -H], [-H, H]] with H = k' e e^T on
        the pair's two vertices: the positive part of its exact stiffness (the tangential part
        -p / d (I - e e^T) is negative and left out, as the FEM's element projection does).
        A bound of k (or 2k) in every direction instead made Newton contract by only ~0.75 per
        iteration where the skin is as soft as the penalty.
        """
        k = self.config.penalty_stiffness
        f = np.zeros(3 * self.n)
        skeleton = np.zeros(self.nv)
        # Row and column vertices, unit directions and scales of the stiffness blocks
        # scale * u u^T.
        block_rows, block_cols, block_normals, block_scales = [], [], [], []
        tangential_blocks = ([], [], [], [])
        coupling_rows, coupling_values, reactions = [], [], []
        skeleton_stiffness = np.zeros((self.nv, self.nv))
        if k <= 0.0:
            return Penalties(
                f, skeleton, sp.csr_matrix((3 * self.n, 3 * self.n)), None, skeleton_stiffness
            )
        X = x.reshape(-1, 3)
        F = f.reshape(-1, 3)
        plant, ctx = self.plant, self.context
        P = X[self.box_vertices]
        world = plant.world_frame()
        poses, R_all, c_all, local_all = self.BoxFrames(q, P)
        inside_all = np.zeros((len(self._boxes), len(P)), dtype=bool)
        if self._boxes:
            half_all = np.stack([box[3] for box in self._boxes])
            np.abs(local_all, out=local_all)
            inside_all = (
                (local_all[:, :, 0] < half_all[:, 0])
                & (local_all[:, :, 1] < half_all[:, 1])
                & (local_all[:, :, 2] < half_all[:, 2])
            ).T & ~self._box_exempt
        for box, (body, _, _, half, _) in enumerate(self._boxes):
            X_WB = poses[box]
            inside = inside_all[box]
            if faces is not None:
                # A vertex that left the box forgets its face: coming back through another
                # face, it is pushed out through that one (the force is continuous there); kept,
                # the old face pushed a vertex just inside with the box's whole width (1.8 N
                # after a 20 nm move on the monster's replay).
                now = set(self.box_vertices[inside].tolist())
                for key in [key for key in faces if key[0] == box and key[1] not in now]:
                    del faces[key]
            if not inside.any():
                continue
            rows = np.flatnonzero(inside)
            vertices = self.box_vertices[rows]
            R_WBox = R_all[box]
            local = (P[rows] - c_all[box]) @ R_WBox
            depth = half[None, :] - np.abs(local)
            axis = np.argmin(depth, axis=1)
            sign = np.sign(local[np.arange(len(rows)), axis])
            if faces is not None:
                for i, vertex in enumerate(vertices):
                    axis[i], sign[i] = faces.setdefault((box, int(vertex)), (axis[i], sign[i]))
            normal_local = np.zeros((len(rows), 3))
            normal_local[np.arange(len(rows)), axis] = sign
            normal = normal_local @ R_WBox.T
            # Depth below the face pushing it (the nearest face: half - |local|).
            below = half[axis] - sign * local[np.arange(len(rows)), axis]
            magnitude, slope = self._PenaltyLaw(below)
            push = magnitude[:, None] * normal
            np.add.at(F, vertices, push)
            block_rows.append(vertices)
            block_cols.append(vertices)
            block_normals.append(normal)
            block_scales.append(slope)
            # The reaction -push on the body, applied at the skin vertex.
            p_BV = X_WB.inverse().multiply(X[vertices].T)
            Jv = plant.CalcJacobianTranslationalVelocity(
                ctx, JacobianWrtVariable.kV, body.body_frame(), p_BV, world, world
            )
            skeleton -= Jv.T @ push.ravel()
            reactions.append((body.name(), X[vertices].copy(), -push))
            # K_b J_b per vertex: k' n (nᵀ J_b), and Σ J_bᵀ K_b J_b = Σ k' (J_bᵀ n)(nᵀ J_b).
            nJ = np.einsum("ik,ikv->iv", normal, Jv.reshape(len(rows), 3, -1))
            coupling_rows.append((3 * vertices[:, None] + np.arange(3)).ravel())
            coupling_values.append(
                (slope[:, None, None] * normal[:, :, None] * nJ[:, None, :]).reshape(-1, self.nv)
            )
            skeleton_stiffness += nJ.T @ (slope[:, None] * nJ)
        boxes_end = len(block_rows)  # the blocks after this one are the pairs'
        # Self-collision: outer vertices closer than r that were far apart at rest.
        r = self.config.self_collision_distance
        O = X[self._outer]
        pairs = self._SelfCollisionPairs(O, r)
        if len(pairs):
            d = O[pairs[:, 0]] - O[pairs[:, 1]]
            dist = np.maximum(np.linalg.norm(d, axis=1), 1e-9)
            e = d / dist[:, None]
            magnitude, slope = self._PenaltyLaw(r - dist)
            push = magnitude[:, None] * e
            a, b = self._outer[pairs[:, 0]], self._outer[pairs[:, 1]]
            np.add.at(F, a, push)
            np.add.at(F, b, -push)
            for blocks, more in zip(
                (block_rows, block_cols, block_normals, block_scales),
                PairBlocks(a, b, e, slope),
            ):
                blocks += more
            # d e / d x_a = (I - e eᵀ) / d: the push turns with the pair's line, which the
            # directions u of two unit vectors orthogonal to e span.
            from drakebots.skinned.convex_contact import _ContactFrames

            frames = _ContactFrames(e)
            u1, u2 = frames[:, 0], frames[:, 1]
            turn = -magnitude / dist
            for u in (u1, u2):
                for blocks, more in zip(tangential_blocks, PairBlocks(a, b, u, turn)):
                    blocks.extend(more)
        stiffness = self._VertexBlocks(block_rows, block_cols, block_normals, block_scales)
        box_stiffness, pair_list = stiffness, None
        if boxes_end < len(block_rows):
            box_stiffness = self._VertexBlocks(
                block_rows[:boxes_end],
                block_cols[:boxes_end],
                block_normals[:boxes_end],
                block_scales[:boxes_end],
            )
            pair_list = (a, b, e, slope)
        tangential = self._VertexBlocks(*tangential_blocks) if tangential_blocks[0] else None
        coupling = None
        if coupling_rows:
            rows = np.repeat(np.concatenate(coupling_rows), self.nv)
            cols = np.tile(np.arange(self.nv), len(rows) // self.nv)
            values = np.concatenate(coupling_values).ravel()
            # (A vertex in two boxes has two rows; the conversion sums them.)
            coupling = sp.coo_matrix((values, (rows, cols)), shape=(3 * self.n, self.nv)).tocsr()
        return Penalties(
            f,
            skeleton,
            stiffness,
            coupling,
            skeleton_stiffness,
            reactions,
            tangential,
            pair_list,
            box_stiffness,
        )

    def NoPenalties(self) -> "Penalties":
        """Penalties with no force and no stiffness (the convex step with its collisions in the
        contact problem, CouplingConfig.convex_collisions)."""
        size = 3 * self.n
        return Penalties(np.zeros(size), np.zeros(self.nv), sp.csr_matrix((size, size)), None, None)

    def BoxFrames(self, q, P: np.ndarray):
        """(poses X_WB of the boxes' bodies, R_WBox (b, 3, 3), box centres in the world (b, 3),
        the points P (k, 3) in every box's frame (k, b, 3), signed) at skeleton configuration q
        (the plant's context is left at q). Every box at once: one pass over the inner surface,
        where a loop over the boxes made 33 passes on the monster's skin (46 ms of a 70 ms
        penalty evaluation)."""
        plant, ctx = self.plant, self.context
        plant.SetPositions(ctx, q)
        poses = [plant.EvalBodyPoseInWorld(ctx, body) for body, *_ in self._boxes]
        if not self._boxes:
            return poses, np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((len(P), 0, 3))
        R_all = np.stack(
            [X_WB.rotation().matrix() @ box[2] for X_WB, box in zip(poses, self._boxes)]
        )
        c_all = np.stack([X_WB.multiply(box[1]) for X_WB, box in zip(poses, self._boxes)])
        # (vertex, box, axis): one matrix product with the boxes' axes side by side.
        local_all = (P @ R_all.transpose(1, 0, 2).reshape(3, -1)).reshape(len(P), -1, 3)
        local_all -= np.einsum("bk,bkj->bj", c_all, R_all)[None]
        return poses, R_all, c_all, local_all

    def _SelfCollisionPairs(self, O: np.ndarray, r: float, apart: float | None = None):
        """The pairs (i, j), i < j, of outer vertices (rows of O) at most r apart now and more
        than `apart` (default 4 r) apart at rest, in lexicographic order ((k, 2) indices).

        A Verlet list: a k-d tree finds the pairs within r + m (m = r) once, with the rest
        filter, and while no outer vertex has moved m / 2 from where they were found, every
        pair now within r is among them (each of its vertices moved less than m / 2), so a
        distance test on those candidates gives exactly the pairs a new tree would. Issue 52:
        the tree and its query took 20 ms of a 34 ms penalty evaluation on the monster's
        folded skin (21.9k outer vertices, 5,800 pairs within 3 mm, 2 of them far apart at
        rest), which the coupled simulator makes at every Newton iteration; the skin moves
        about 0.3 mm a 5 ms frame when the monster walks at 0.06 m/s, so the list holds for
        several frames.
        """
        margin = r
        apart = 4 * r if apart is None else apart
        # One list per (distance, rest filter): the penalties ask for r, the convex step's
        # collisions for r + contact_margin and its Schur block for r + convex_schur_margin,
        # and one list for all three would be rebuilt at each change of asker.
        key = (r, apart)
        cache = self._pair_candidates.get(key)
        if cache is not None:
            # A vertex moved m / 2 since the list was made.
            moved = np.einsum("ij,ij->i", O - cache[0], O - cache[0]).max(initial=0.0)
            if moved > (margin / 2) ** 2:
                cache = None
        if cache is None:
            pairs = cKDTree(O).query_pairs(r + margin, output_type="ndarray")
            if len(pairs):
                rest = self.skin.mesh.vertices[self._outer]
                far = np.linalg.norm(rest[pairs[:, 0]] - rest[pairs[:, 1]], axis=1) > apart
                pairs = pairs[far]
                pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
            if len(self._pair_candidates) >= 4 and key not in self._pair_candidates:
                self._pair_candidates.pop(next(iter(self._pair_candidates)))  # the oldest
            cache = self._pair_candidates[key] = (O.copy(), pairs.reshape(-1, 2))
        candidates = cache[1]
        d = O[candidates[:, 0]] - O[candidates[:, 1]]
        return candidates[np.einsum("ij,ij->i", d, d) <= r * r]

    def _PenaltyLaw(self, depth):
        """(force magnitude N, its derivative N/m) of the penalty at penetration depth (m, > 0):
        k z^2 / (2 delta) below the onset depth delta, k (z - delta / 2) beyond; the force of
        the energy k z^3 / (6 delta), then k (z^2 / 2 - delta z / 2 + delta^2 / 6)."""
        k, delta = self.config.penalty_stiffness, self.config.penalty_onset
        if delta <= 0.0:
            return k * depth, np.full(len(depth), k)
        ramp = depth < delta
        magnitude = np.where(ramp, 0.5 * k * depth**2 / delta, k * (depth - 0.5 * delta))
        return magnitude, np.where(ramp, k * depth / delta, k)

    def _VertexBlocks(self, row_vertices, col_vertices, normals, scales) -> sp.csr_matrix:
        """(3n, 3n): the sum of scale * u u^T on the 3 x 3 blocks (row vertex, column vertex)."""
        size = 3 * self.n
        if not row_vertices:
            return sp.csr_matrix((size, size))
        a = np.concatenate(row_vertices)
        b = np.concatenate(col_vertices)
        u = np.concatenate(normals)
        c = np.concatenate(scales)
        rows = np.broadcast_to((3 * a[:, None] + np.arange(3))[:, :, None], (len(a), 3, 3))
        cols = np.broadcast_to((3 * b[:, None] + np.arange(3))[:, None, :], (len(b), 3, 3))
        values = c[:, None, None] * u[:, :, None] * u[:, None, :]
        # Duplicates (a vertex in two boxes or pairs) are summed by the conversion.
        return sp.coo_matrix(
            (values.ravel(), (rows.ravel(), cols.ravel())), shape=(size, size)
        ).tocsr()

    # ---- the step ------------------------------------------------------------------------------
    def _SkinMatrix(self, y, h, penalties, exact: bool, alpha: float = 1.0) -> sp.csr_matrix:
        """The skin block of Newton's matrix at skin positions y: elasticity (each element's
        Hessian projected to PSD, or the exact one), inertia and damping over the step h (times
        `alpha`, dw'/dy h: 1 by backward Euler, 2 by CouplingConfig.skin_integrator "newmark"),
        and the penalties' stiffness (None: explicit penalties; with `exact` their full
        stiffness, the self-collision pairs' turning part too). See
        CouplingConfig.exact_hessian_below."""
        _, _, K = self.fem.EnergyGradientHessian(y, project=not exact)
        if self._inertia_damping is None or self._inertia_damping[0] != (h, alpha):
            # M/h² + D/h as values of the stiffness's pattern, made once per step size (three
            # sparse sums of 4.3M entries per Newton matrix on the monster's skin otherwise).
            inertia_damping = sp.diags(self.mass / h**2) + self.damping / h
            if alpha != 1.0:
                inertia_damping = alpha * inertia_damping
            self._inertia_damping = ((h, alpha), self.fem.PatternData(inertia_damping))
        data = K.data + self._inertia_damping[1]
        rest = None
        if penalties is not None:
            block = penalties.stiffness
            if exact and penalties.tangential is not None:
                block = block + penalties.tangential
            if block.nnz:
                # Self-collision pairs of far apart vertices fall outside the pattern (kept
                # in it once met: FemModel.PatternMatrix).
                inside, rest = self.fem.PatternData(block, outside=True)
                data += inside
        return self.fem.PatternMatrix(data, rest)

    def Step(self, state: CoupledState, *, tau_ff=None, desired=None, time_s=0.0):
        """Advances the coupled state by one step; returns (new state, StepInfo).

        A step whose Newton iteration fails (glue not converged, or an element that would
        invert) is cut in two halves and retried, up to `max_cuts` times; then the failure is
        raised naming the time (and the element).

        Args:
            state: the current CoupledState.
            tau_ff: (nu,) feed-forward motor torques, N*m (default 0).
            desired: (2 nu,) servo targets [q_d, v_d] (default: no servo, only tau_ff).
            time_s: the step's start time (for messages).

        Raises:
            CoupledStepFailure, ElementInversion; StepDeadlinePassed once `deadline` passes.
        """
        return self._StepWithCuts(state, tau_ff, desired, time_s, self.config.time_step, 0)

    def _CheckDeadline(self, time_s):
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise StepDeadlinePassed(f"wall-time deadline passed in the step at t = {time_s:.4f} s")

    def _StepWithCuts(self, state, tau_ff, desired, time_s, h, depth):
        self._CheckDeadline(time_s)
        try:
            return self._Step(state, tau_ff, desired, time_s, h)
        except (CoupledStepFailure, ElementInversion):
            if depth >= self.config.max_cuts:
                raise
            # The factor belongs to the other step size: the halves start without it.
            memory = dataclasses.replace(self._Memory(state), factor=None)
            start = dataclasses.replace(state, memory=memory)
            mid, first = self._StepWithCuts(start, tau_ff, desired, time_s, 0.5 * h, depth + 1)
            end, info = self._StepWithCuts(
                mid, tau_ff, desired, time_s + 0.5 * h, 0.5 * h, depth + 1
            )
            info.newton_iterations += first.newton_iterations
            info.factorizations += first.factorizations
            info.exact_factorizations += first.exact_factorizations
            info.column_solves += first.column_solves
            info.krylov_solves += first.krylov_solves
            info.krylov_iterations += first.krylov_iterations
            info.low_rank_solves += first.low_rank_solves
            info.backtracks += first.backtracks
            info.rejected_updates += first.rejected_updates
            info.step_cuts = first.step_cuts + info.step_cuts + 1
            info.glue_residual = max(info.glue_residual, first.glue_residual)
            info.max_penetration = max(info.max_penetration, first.max_penetration)
            end.memory.factor = None
            return end, info

    def _Memory(self, state: CoupledState) -> StepMemory:
        return state.memory if state.memory is not None else StepMemory.Fresh(self.n)

    def _StepStart(self, state, tau_ff, desired, h) -> StepStart:
        """The first lines of a step, whichever the contact (the active set's `_Step` and
        convex_contact.ConvexStep): the torques and servo targets, the skeleton's terms at the
        step's start, and the skin's predictor (coupled_state.StepStart)."""
        nu = self.nu
        tau_ff = np.zeros(nu) if tau_ff is None else np.asarray(tau_ff, float)
        q_d = v_d = None
        if desired is not None:
            q_d, v_d = np.asarray(desired[:nu]), np.asarray(desired[nu:])
        # Skeleton terms at the start of the step (semi-implicit in the configuration).
        plant, ctx = self.plant, self.context
        plant.SetPositionsAndVelocities(ctx, np.concatenate([state.q, state.v]))
        M = plant.CalcMassMatrix(ctx)
        bias = plant.CalcBiasTerm(ctx)
        tau_g = plant.CalcGravityGeneralizedForces(ctx)
        y = state.x + h * state.w
        if self.fem.Jacobians(y).min() <= _MIN_JACOBIAN:
            # The predictor (each vertex coasting at its velocity) folds an element: a fast
            # skin over a sharp fold, the monster's trot starting at 0.45 m/s on its settled
            # folded skin. No step along the Newton update from there is valid (the line search
            # halves it in vain), and cutting the step only shortened the coast: the trot's
            # first replayed frame took three cuts, 22 s of failed solves. Newton starts from
            # the current positions instead (the contact labels are still predicted from the
            # coast).
            y = state.x.copy()
        return StepStart(tau_ff, q_d, v_d, M, bias, tau_g, y)

    def _Step(self, state, tau_ff, desired, time_s, h):
        cfg = self.config
        integrator = SkinIntegrator(cfg)  # (a config replaced after the simulator was made)
        if cfg.contact == "convex":
            from drakebots.skinned.convex_contact import ConvexStep

            return ConvexStep(self, state, tau_ff, desired, time_s, h)
        ContactNamed(cfg.contact, "CouplingConfig.contact")
        if integrator != "backward_euler":
            raise ValueError(
                f"CouplingConfig.skin_integrator '{integrator}' is built for "
                "contact = 'convex'; the active set integrates the skin by backward Euler"
            )
        wall = time.perf_counter()
        q, v, x, w = state.q, state.v, state.x, state.w
        start = self._StepStart(state, tau_ff, desired, h)
        tau_ff, q_d, v_d, y = start.tau_ff, start.q_d, start.v_d, start.y
        M, bias, tau_g = start.M, start.bias, start.tau_g
        servo, nu = desired is not None, self.nu
        # Collision penalties: at the step's start, then (implicit) re-evaluated at every later
        # Newton iterate, or (explicit, the paper's section 4.2) constant through the step.
        implicit_penalties = cfg.implicit_penalties
        faces = {}  # the box face each penalised vertex is pushed through, kept for the step
        penalties = self.Penalties(q, x, faces)
        mu = cfg.friction
        # Unknowns and the contact active set (0 free, 1 stick, 2 slide); y is the predictor.
        v_next = v.copy()
        X = x.reshape(-1, 3)
        memory = self._Memory(state)
        # Warm start of the contact labels: last step's, plus new penetrations (keeps the
        # pinned set, and so the factorisation, unchanged while the robot stands).
        mode = memory.mode.copy()
        # Vertices predicted to sink more than 1 um during the step start pinned. (Pinning
        # every vertex within 10 um of the ground as well made the resting sole cycle: the
        # unloaded ones were pinned and released again in every step.)
        mode[(mode == 0) & (X[:, 2] + h * w[2::3] < -1e-6)] = 1
        mode[self.glue.vertices] = 0
        # Slip directions of sliding vertices carry over from the last step with their label.
        slip_dir = memory.slip_dir.copy()
        lam_n = np.zeros(self.n)
        schur = cfg.contact_solver == "schur"
        implicit = schur and cfg.implicit_friction
        if cfg.contact_solver not in ("schur", "refactor"):
            raise ValueError(f"unknown contact_solver '{cfg.contact_solver}'")
        if cfg.factor_reuse not in ("pool", "fresh"):
            raise ValueError(f"unknown factor_reuse '{cfg.factor_reuse}' (pool or fresh)")
        # Running totals of the multipliers, per pinned skin coordinate (glue or contact), N.
        lam_dof = np.zeros(3 * self.n)
        info = StepInfo()
        glue_vertex = np.zeros(self.n, dtype=bool)
        glue_vertex[self.glue.vertices] = True
        converged = False
        refactored_this_step = False
        released = np.zeros(self.n, dtype=bool)
        slid = np.zeros(self.n, dtype=bool)
        # Contraction of the Newton updates (ratio of successive update norms while the labels
        # stay the same): modified Newton that contracts slowly gets a fresh factorisation.
        contraction, previous_norm, labels_changed = 0.0, None, True
        step_norm = np.inf
        # The exact Hessian is for the end of a step: a factor of it is not carried into the
        # next step, nor used again in this one once a step with it needed a cut.
        # The factor carried in is shared with the memory it came from: read-only here (a
        # PinnedCorrection is forked, so the columns it caches in this step are this step's).
        kkt, kkt_key, kkt_age = memory.factor, memory.factor_key, memory.factor_age
        kkt_exact, owned = memory.factor_exact, False
        if kkt_exact:
            kkt = None
        elif isinstance(kkt, PinnedCorrection):
            kkt = kkt.Fork()
        exact_failed = False
        search = None
        # A backtrack of the line search (below) re-evaluates the residuals without a Newton
        # iteration; backtracks alternate with iterations, and an update rejected by the
        # descent check (below) happens once a step at most, so the loop ends.
        while info.newton_iterations < cfg.max_iterations:
            iteration = info.newton_iterations
            self._CheckDeadline(time_s)
            q_next = self._Integrate(q, v_next, h)
            if implicit_penalties and iteration > 0:
                # The faces first met at this point are kept only if the line search keeps the
                # point: a vertex that an overshooting update took deep into a box would keep a
                # far face, and be pushed back through it from just inside (a force that jumps
                # at the surface, and a slope φ' that jumps at a = 0).
                trial_faces = dict(faces)
                penalties = self.Penalties(q_next, y, trial_faces)
            p_WG, J = self.GluePoints(q_next)
            C = self.glue.Residual(p_WG, y)
            # Motor torques and their derivative (implicit while unsaturated).
            if servo:
                qa = q_next[self.actuated_q]
                va = v_next[self.actuated_v]
                tau_raw = tau_ff + self.kp * (q_d - qa) + self.kd * (v_d - va)
                tau = np.clip(tau_raw, -self.effort_limits, self.effort_limits)
                slope = np.where(np.abs(tau_raw) < self.effort_limits, self.kd + h * self.kp, 0.0)
            else:
                tau = np.clip(tau_ff, -self.effort_limits, self.effort_limits)
                slope = np.zeros(nu)
            generalized = (
                self.B @ tau - bias + tau_g - self.joint_damping * v_next + penalties.skeleton
            )
            r_r = M @ (v_next - v) - h * generalized
            A_r = M + h * np.diag(self.joint_damping)
            A_r[np.ix_(self.actuated_v, self.actuated_v)] += h * np.diag(slope)
            # Skin residual (forces) and friction of sliding vertices.
            friction = np.zeros(3 * self.n)
            sliding = np.flatnonzero(mode == 2)
            if len(sliding):
                F = friction.reshape(-1, 3)
                # Schur path: friction is linear in the current normal multiplier and part of
                # the Newton step (PinnedCorrection's coupling); refactor path: the normal
                # force of the last iterate (a fixed-point iteration).
                normal_now = lam_dof[3 * sliding + 2] if implicit else lam_n[sliding]
                F[sliding, :2] = -mu * normal_now[:, None] * slip_dir[sliding]
            e = y - x
            r_d = (
                self.mass * (y - x - h * w) / h**2
                + self.fem.Gradient(y)
                + self.damping @ e / h
                - self.gravity
                - penalties.forces
                - friction
            )
            # Pinned coordinates: glue (Eq. 1) and contact (stick: xyz, slide: z).
            stick = np.flatnonzero(mode == 1)
            contact_dofs = np.concatenate(
                [(3 * stick[:, None] + np.arange(3)).ravel(), 3 * sliding + 2]
            ).astype(np.int64)
            target_stick = X[stick].copy()
            target_stick[:, 2] = 0.0
            target = np.concatenate([target_stick.ravel(), np.zeros(len(sliding))])
            pinned = np.concatenate([self.glue.dofs, contact_dofs])
            unpinned = np.ones(3 * self.n, dtype=bool)
            unpinned[pinned] = False
            lam_dof[unpinned] = 0.0
            G = np.vstack([h * J, np.zeros((len(contact_dofs), self.nv))])
            c = np.concatenate([-C, y[contact_dofs] - target])
            # The full residuals include the current multipliers (Eq. 2 rows), so a stale
            # factorisation (modified Newton) still converges to the exact coupled solution.
            lam_k = lam_dof[pinned]
            r_r_full = r_r + G.T @ lam_k
            r_d_full = r_d.copy()
            r_d_full[pinned] -= lam_k
            if search is not None:
                slope = float(search.dv @ r_r_full + search.dy @ r_d_full)
                before = search.at
                fraction = search.Next(slope)
                if _DEBUG:
                    print(f"     slope at {before:.3f}: {slope:.3e} (start {search.slope0:.3e})")
                if fraction is not None:
                    v_next = v_next + (fraction - before) * search.dv
                    y = y + (fraction - before) * search.dy
                    lam_dof[search.pinned] += (fraction - before) * search.dlam
                    info.backtracks += 1
                    continue
                search = None
            if implicit_penalties and iteration > 0:
                faces = trial_faces
            key = None if schur else tuple(contact_dofs.tolist())
            stale = kkt is None or kkt_key != key or kkt_age >= cfg.max_factor_age
            # Modified Newton first (a stale factor); if it is slow to converge (large
            # deformation), full Newton: a fresh Hessian every other iteration. With the Schur
            # path a contact-label change is not a reason to refactorise, so "slow" is judged
            # by the contraction of the updates over iterations with unchanged labels.
            if schur:
                slow = kkt_age >= 2 and (
                    iteration >= cfg.full_newton_after or (iteration >= 2 and contraction > 0.5)
                )
            else:
                slow = iteration >= 3 and (not refactored_this_step or kkt_age >= 2)
            refactored_now = stale or slow
            if refactored_now:
                exact = (
                    not exact_failed
                    and not labels_changed
                    and previous_norm is not None
                    and previous_norm < cfg.exact_hessian_below
                )
                A_d = self._SkinMatrix(y, h, penalties if implicit_penalties else None, exact)
                A_dr = None
                if implicit_penalties:
                    # The skin-skeleton penalties depend on the vertex relative to its box:
                    # their Jacobian in v_next too (the frame-by-frame QPCC's one linear step
                    # needs it to conserve momentum, here it makes Newton's matrix the
                    # residual's Jacobian).
                    A_rr, A_dr = penalties.StepBlocks(h)
                    if A_rr is not None:
                        A_r = A_r + A_rr
                if self._ordering is None:
                    rest = self.fem.RestPositions()
                    self._ordering = NestedDissection(self._SkinMatrix(rest, h, None, False))
                options = dict(ordering=self._ordering, A_dr=A_dr, factorization=cfg.factorization)
                rows = (h * J, self.glue.dofs) if schur else (G, pinned)
                # An exact matrix that is not positive definite (the Cholesky refuses it) is
                # factorised by a pivoted factorisation (ReducedKkt's fallback: PARDISO's
                # LDLᵀ or SuperLU's LU, its solves checked) and used all the same: Newton converges
                # quadratically with the exact Jacobian whatever its inertia, and the descent
                # check below rejects an update that climbs the step's potential.
                pooled = cfg.factor_reuse == "pool"
                if pooled:
                    # A factorisation no state holds (its analysis kept): FactorPool.
                    options["reuse"] = self._pool
                elif kkt is not None and owned:  # discarded now: its analysis is reused
                    # (in place: never one carried in, which other states may share).
                    options["reuse"] = getattr(kkt, "base", kkt)
                # The Schur path's glue-only factorisation is made when a solve needs it (with
                # "pool", a large contact set is pinned in place instead).
                lazy = schur and pooled
                reduced = ReducedKkt(A_r, A_d, *rows, lazy=lazy, **options)
                if schur:
                    previous = kkt if isinstance(kkt, PinnedCorrection) else None
                    reduced = PinnedCorrection(
                        reduced,
                        exact=not pooled,
                        pool=self._pool,
                        previous=previous,
                        max_new_columns=cfg.max_new_columns,
                        max_low_rank=cfg.max_low_rank,
                    )
                    # Dropped now, so that its factorisation returns to the pool at once (the
                    # glue-only one is made at the first solve that needs it, after this).
                    previous = None
                kkt, owned = reduced, True
                kkt_exact = exact
                info.exact_factorizations += int(exact)
                kkt_key = key
                kkt_age = 0
                refactored_this_step = True
                info.factorizations += int(not lazy)
            if schur:
                solves, direct = kkt.column_solves, kkt.factorizations + kkt.base.factorizations
                krylov_solves, krylov_iterations = kkt.krylov_solves, kkt.krylov_iterations_total
                low_rank_solves = kkt.low_rank_solves
                first = 3 * len(stick)
                coupling = (
                    None
                    if not implicit
                    else (
                        np.repeat(first + np.arange(len(sliding)), 2),
                        (3 * sliding[:, None] + np.arange(2)).ravel(),
                        (-mu * slip_dir[sliding]).ravel(),
                    )
                )
                dv, dy, dlam_glue, dlam_contact = kkt.Solve(
                    -r_r_full, -r_d_full, -C, contact_dofs, c[len(C) :], coupling
                )
                info.column_solves += kkt.column_solves - solves
                info.factorizations += kkt.factorizations + kkt.base.factorizations - direct
                info.krylov_solves += kkt.krylov_solves - krylov_solves
                info.low_rank_solves += kkt.low_rank_solves - low_rank_solves
                info.krylov_iterations += kkt.krylov_iterations_total - krylov_iterations
                dlam = np.concatenate([dlam_glue, dlam_contact])
            else:
                dv, dy, dlam = kkt.Solve(-r_r_full, -r_d_full, c)
            kkt_age += 1
            # The slope of the step's potential along the update at its start (_LineSearch).
            slope0 = float(dv @ r_r_full + dy @ r_d_full)
            if kkt_exact and slope0 >= 0.0:
                # The exact matrix is indefinite along this update, which climbs the step's
                # potential (toward a saddle of it, a state the skin would not rest in): back to
                # the projected matrix from the same point.
                exact_failed, kkt = True, None
                info.rejected_updates += 1
                continue
            # At most max_update on any vertex; never step into an inverted element: halve the
            # update until valid.
            largest = float(np.max(np.abs(dy))) if dy.size else 0.0
            alpha = 1.0
            if 0.0 < cfg.max_update < largest:
                alpha = cfg.max_update / largest
            for _ in range(20):
                if self.fem.Jacobians(y + alpha * dy).min() > _MIN_JACOBIAN:
                    break
                alpha *= 0.5
            else:
                bad = int(np.argmin(self.fem.Jacobians(y + dy)))
                raise ElementInversion(bad, time_s)
            if kkt_exact and alpha < 1.0:
                # The exact matrix led toward an inverted element or past max_update: back to
                # the projected one.
                exact_failed, kkt = True, None
            v_next = v_next + alpha * dv
            y = y + alpha * dy
            lam_dof[pinned] += alpha * dlam
            Y = y.reshape(-1, 3)
            info.newton_iterations += 1
            # Contact multipliers: force of the ground on each pinned vertex.
            forces = lam_dof.reshape(-1, 3).copy()
            forces[glue_vertex] = 0.0
            if implicit:
                forces[sliding, :2] = -mu * forces[sliding, 2:3] * slip_dir[sliding]
            else:
                forces[sliding, :2] = friction.reshape(-1, 3)[sliding, :2]
            # Active-set update (paper section 5.3, Eqs. 15-17), with anti-cycling: a vertex
            # released in this step comes back only if it sinks deeper than 0.1 mm, one that
            # started sliding keeps sliding, and after `freeze_after` iterations the labels are
            # frozen so Newton converges on a fixed set.
            new_mode = mode.copy()
            normal = forces[:, 2]
            tangential = np.linalg.norm(forces[:, :2], axis=1)
            frozen = np.bool_(iteration >= cfg.freeze_after)
            # Releasing stays allowed after the freeze as well (a frozen vertex pulling on the
            # ground is no contact): after the freeze only the one-way changes stick -> slide and
            # pinned -> released remain (a released vertex cannot come back), so the labels
            # still settle.
            release = (mode > 0) & (normal <= 0.0)
            new_mode[release] = 0
            released |= release
            # Stick -> slide stays allowed after the freeze too: it cannot cycle (a vertex that
            # started sliding in this step keeps sliding), and freezing it left sticking vertices
            # outside the friction cone (a sliding test box felt |F_t| = 2.3 mu F_n and stopped
            # in a third of the distance Coulomb's law gives).
            to_slide = (mode == 1) & (normal > 0.0) & (tangential > mu * normal)
            new_mode[to_slide] = 2
            tdir = -forces[:, :2] / np.maximum(tangential[:, None], 1e-12)
            slip_dir[to_slide] = tdir[to_slide]
            slip = Y[:, :2] - X[:, :2]
            slip_norm = np.linalg.norm(slip, axis=1)
            moving = (mode == 2) & (slip_norm > 1e-12)
            reversed_slip = moving & (np.einsum("ij,ij->i", slip, slip_dir) < 0.0) & ~frozen & ~slid
            new_mode[reversed_slip] = 1
            slid |= to_slide
            lam_n = np.where(new_mode > 0, np.maximum(normal, 0.0), 0.0)
            depth_limit = np.where(released, 1e-4, 1e-6)
            if not frozen:
                new_mode[(mode == 0) & (Y[:, 2] < -depth_limit) & ~glue_vertex] = 1
            changed = np.any(new_mode != mode)
            if _DEBUG and changed:
                moves = np.flatnonzero(new_mode != mode)
                pairs = dict(zip(*np.unique(mode[moves] * 3 + new_mode[moves], return_counts=True)))
                print("   transitions", {f"{k // 3}->{k % 3}": int(v) for k, v in pairs.items()})
            if _DEBUG:
                print(
                    f"  it {iteration} alpha {alpha:.3g} |dy| {np.abs(dy).max():.3e} "
                    f"|dv| {np.abs(dv).max():.3e} |C| {np.abs(C).max():.3e} "
                    f"|r_d| {np.abs(r_d_full[unpinned]).max():.3e} "
                    f"|r_r| {np.abs(r_r_full).max():.3e} "
                    f"changed {int(np.sum(new_mode != mode))} fac {info.factorizations} "
                    f"cols {info.column_solves} contacts {int(np.sum(new_mode > 0))}"
                )
            mode = new_mode
            step_norm = float(np.max(np.abs(alpha * dy))) if dy.size else 0.0
            contraction = (
                step_norm / previous_norm
                if not labels_changed and previous_norm and not refactored_now
                else 0.0
            )
            previous_norm, labels_changed = step_norm, bool(changed)
            if not changed and slope0 < 0.0:
                search = _LineSearch(
                    alpha * dv, alpha * dy, alpha * dlam, pinned, alpha * slope0, cfg.overshoot
                )
            q_next = self._Integrate(q, v_next, h)
            p_WG, _ = self.GluePoints(q_next)
            residual = float(np.max(np.abs(self.glue.Residual(p_WG, y)))) if len(p_WG) else 0.0
            if (
                not changed
                and residual <= cfg.glue_tolerance
                and step_norm <= cfg.position_tolerance
            ):
                converged = True
                break
        if not converged:
            # Accept only if the glue holds; otherwise stop the run with a reason.
            if residual > cfg.glue_tolerance * 10:
                raise CoupledStepFailure(
                    f"coupled Newton did not converge at t = {time_s:.4f} s: glue residual "
                    f"{residual:.3g} m after {info.newton_iterations} iterations"
                )
        # Exact glue: snap the glue vertices onto the link points (a correction below the
        # tolerance the Newton iteration reached), so the residual is zero to round-off.
        y_glue = p_WG.ravel()
        y[self.glue.dofs] = y_glue
        memory = StepMemory(
            mode.copy(),
            np.where((mode == 2)[:, None], slip_dir, 0.0),
            kkt,
            kkt_key,
            kkt_age,
            kkt_exact,
        )
        info.glue_residual = residual
        info.final_update = step_norm
        info.glue_forces = lam_dof[self.glue.dofs].reshape(-1, 3)
        info.contact_forces = forces
        info.contacts = int(np.sum(mode > 0))
        info.sliding = int(np.sum(mode == 2))
        info.max_penetration = float(max(0.0, -Y[:, 2].min()))
        info.actuation = tau
        info.wall_time = time.perf_counter() - wall
        new = CoupledState(q_next, v_next, y, (y - x) / h, memory)
        return new, info


def _Boundary(tets):
    from drakebots.fem.mesh import BoundaryFaces

    return BoundaryFaces(tets)


class SkinnedRobotSystem(LeafSystem):
    """The coupled skin-skeleton simulation as a discrete Drake system (double only).

    actuation, desired_state -> SkinnedRobotSystem -> skeleton_state, skin_positions,
    glue_forces, contact_forces

    Args:
        stepper: a CoupledSkinSkeleton.
        initial: the initial CoupledState (default: stepper.DefaultState()).

    Inputs: "actuation" (nu) feed-forward torques, N*m (optional); "desired_state" (2 nu) servo
    targets (optional: without it the motors apply only the feed-forward torques).
    Outputs: "skeleton_state" (nq + nv), "skin_positions" (3n, m), "glue_forces" (3k, N on the
    skin), "contact_forces" (3n, N from the ground on the skin), "step_info" ([Newton
    iterations, factorisations, glue residual m, max penetration m, contacts, sliding]),
    "motor_torques" (nu, N*m, the motors' torques), "contact_summary" ([max penetration m, number of
    contact vertices, total normal force N], as drakebots.systems.simulation.ContactMonitor).

    State (in the Context, as in Drake's own systems): the discrete vector [q, v, x, w, the
    last step's outputs] and, abstract, the StepMemory the next step starts from and the last
    step's StepInfo (GetLastStepInfo). The stepper keeps scratch only, so Contexts of one
    system, and a Context set back to an earlier state, step alike.
    """

    def __init__(self, stepper: CoupledSkinSkeleton, initial: CoupledState | None = None):
        super().__init__()
        self.stepper = stepper
        s = stepper
        initial = initial or s.DefaultState()
        nq, nv, n3 = s.nq, s.nv, 3 * s.n
        k3 = len(s.glue.dofs)
        self._sizes = (nq, nv, n3, k3)
        self._x_index = self.DeclareDiscreteState(
            np.concatenate(
                [initial.q, initial.v, initial.x, initial.w, np.zeros(k3 + n3 + 6 + s.nu + 3)]
            )
        )
        self._actuation = self.DeclareVectorInputPort("actuation", s.nu)
        self._desired = self.DeclareVectorInputPort("desired_state", 2 * s.nu)
        self.DeclareVectorOutputPort(
            "skeleton_state", nq + nv, lambda c, o: o.SetFromVector(self._Slice(c, 0, nq + nv))
        )
        self.DeclareVectorOutputPort(
            "skin_positions", n3, lambda c, o: o.SetFromVector(self._Slice(c, nq + nv, n3))
        )
        off = nq + nv + 2 * n3
        self.DeclareVectorOutputPort(
            "glue_forces", k3, lambda c, o: o.SetFromVector(self._Slice(c, off, k3))
        )
        self.DeclareVectorOutputPort(
            "contact_forces", n3, lambda c, o: o.SetFromVector(self._Slice(c, off + k3, n3))
        )
        self.DeclareVectorOutputPort(
            "step_info", 6, lambda c, o: o.SetFromVector(self._Slice(c, off + k3 + n3, 6))
        )
        self.DeclareVectorOutputPort(
            "motor_torques",
            s.nu,
            lambda c, o: o.SetFromVector(self._Slice(c, off + k3 + n3 + 6, s.nu)),
        )
        self.DeclareVectorOutputPort(
            "contact_summary",
            3,
            lambda c, o: o.SetFromVector(self._Slice(c, off + k3 + n3 + 6 + s.nu, 3)),
        )
        memory = initial.memory.copy() if initial.memory is not None else StepMemory.Fresh(s.n)
        self._memory_index = self.DeclareAbstractState(AbstractValue.Make(memory))
        self._info_index = self.DeclareAbstractState(AbstractValue.Make(StepInfo()))
        self.DeclarePeriodicUnrestrictedUpdateEvent(s.config.time_step, 0.0, self._Update)

    def _Slice(self, context, start, size):
        return context.get_discrete_state(self._x_index).get_value()[start : start + size]

    def UnpackState(self, context) -> CoupledState:
        """The CoupledState in `context`, its StepMemory included (a copy: stepping it with
        the stepper goes on as this system would)."""
        nq, nv, n3, _ = self._sizes
        z = context.get_discrete_state(self._x_index).get_value()
        return CoupledState(
            z[:nq].copy(),
            z[nq : nq + nv].copy(),
            z[nq + nv : nq + nv + n3].copy(),
            z[nq + nv + n3 : nq + nv + 2 * n3].copy(),
            self.GetStepMemory(context).copy(),
        )

    def GetStepMemory(self, context) -> StepMemory:
        """The history the next step starts from (contact labels, slip directions, the
        factorisation), as held in `context` (read-only)."""
        return context.get_abstract_state(self._memory_index).get_value()

    def GetLastStepInfo(self, context) -> StepInfo:
        """The StepInfo of the step that produced the state in `context` (an empty StepInfo
        before the first step; read-only)."""
        return context.get_abstract_state(self._info_index).get_value()

    def _Update(self, context, next_state):
        state = self.UnpackState(context)
        tau = self._actuation.Eval(context) if self._actuation.HasValue(context) else None
        desired = self._desired.Eval(context) if self._desired.HasValue(context) else None
        new, info = self.stepper.Step(state, tau_ff=tau, desired=desired, time_s=context.get_time())
        stats = [
            info.newton_iterations,
            info.factorizations,
            info.glue_residual,
            info.max_penetration,
            info.contacts,
            info.sliding,
        ]
        next_state.get_mutable_discrete_state(self._x_index).SetFromVector(
            np.concatenate(
                [
                    new.q,
                    new.v,
                    new.x,
                    new.w,
                    info.glue_forces.ravel(),
                    info.contact_forces.ravel(),
                    stats,
                    info.actuation,
                    [
                        info.max_penetration,
                        info.contacts,
                        float(np.sum(info.contact_forces[:, 2])),
                    ],
                ]
            )
        )
        next_state.get_mutable_abstract_state(self._memory_index).set_value(new.memory)
        next_state.get_mutable_abstract_state(self._info_index).set_value(info)

    def get_skeleton_state_output_port(self):
        return self.GetOutputPort("skeleton_state")

    def get_skin_positions_output_port(self):
        return self.GetOutputPort("skin_positions")


_ = BasicVector
