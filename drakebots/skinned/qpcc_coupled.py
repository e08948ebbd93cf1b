"""The frame-by-frame QPCC with the full coupled skin-skeleton dynamics (paper sections 5.2-5.3).

`CoupledFrameDynamics` implements `qpcc.FrameDynamics` for a skinned robot: each frame it
linearises the coupled system of Eq. (2) (skeleton + FEM skin + glue constraint, Eq. 1) at the
current state and *condenses* it (Eq. 10) onto the frame's inputs z = [τ; f_1; ...; f_P]: the motor
torques and the 3-D ground forces on the P = 20 contact patches of the skin's soles (each foot's
planar sole vertices grouped into five patches, section 5.2). `qpcc.FrameQpcc` then solves the QP
of Eq. (12) with the paper's labelling loop on that condensed step, unchanged.

One frame of the coupled dynamics (the same rows as drakebots.systems.skin_coupling, one Newton
step from the predictor v⁺ = v, y = x + Δt w, as Eq. 2 is one linear solve per frame):

    [ A_r   A_drᵀ G_qᵀ ] [Δv]   [ b_r0 + Δt B τ ]
    [ A_dr  A_d   G_uᵀ ] [Δu] = [ b_d0 + W f    ]          (Eq. 2; A_dr: penalties, below)
    [ G_q   G_u   0    ] [ λ]   [ c             ]

    A_r = M(q) + Δt D_j + Δt² Jᵀ K_pen J      (skeleton rows are impulses)
    A_d = K(y) + M_s/Δt² + D_s/Δt + K_pen(y)  (skin rows are forces; K PSD-projected)
    G_q = Δt ∂(R(q)r + t)/∂v, G_u = -S_c      (the glue constraint, Eq. 1)
    b_r0 = Δt (τ_g - C v - D_j v + τ_penalty), b_d0 = -(∇E(y) + D_s w - f_g - f_penalty),
    c = -C(q + Δt v, y)

and Δq = Δt (v + Δv) (q̇ = v in the skeleton model's Euler-angle coordinates). W (3n × 3P)
spreads a patch force evenly over the patch's vertices, so Wᵀ (Δt w + Δu) is the patch's mean
displacement over the frame (work-conjugate to its force; Δu is measured from the predictor, so
a moving patch's own Δt Wᵀ w is part of it: without it the QP's contacts lagged one frame's coast
and a soft skin's ground force rang at 33 Hz). The penalty forces of skin self- and
skin-skeleton collisions (at the predictor: q + Δt v, y) are constants of b_d0, their reactions on
the skeleton (τ_penalty) of b_r0 (section 5.2: "pre-determined quantities ... merged into the
constant terms"), and their stiffness K_pen (the 3 x 3 vertex blocks of
skin_coupling.CoupledSkinSkeleton.Penalties) is part of A_d, with the skin-skeleton penalties'
dependence on the skeleton's motion in A_dr = -Δt K_pen J (skin rows x Δv; its transpose in the
skeleton rows, Δt² Jᵀ K_pen J in A_r): backward Euler in the penalties in both bodies, as issue
5's simulator's Newton matrix (`implicit_penalties`), so a penalty's force and its reaction stay
equal and opposite through the step (momentum is conserved; tested). With the penalties
constant only, a skin vertex of a few milligrams pressed by a 2000 N/m penalty overshoots from
frame to frame: on the beetle's skin in pieces, whose limb pieces swing into the torso's box when
the hips yaw, the robot standing still at the walk's first pose spun its hip yaws at 6-18 rad/s
within three frames (measured).

Condensation (Eq. 10). The glue rows pin skin coordinates (G_u = -S_c), so eliminating the glued
coordinates and λ leaves one symmetric positive definite matrix K_red in (Δu_free, Δv) (the
null-space form of drakebots.fem.coupling.ReducedKkt). It is factorised once per frame; the
outputs the QP needs are only Δv and the patch displacements, both "co-located" with the inputs
(torques act on the skeleton rows, patch forces on the patch vertices' rows). With O the sparse
selection of those rows, the condensed map is the compliance O K_red⁻¹ Oᵀ; with a Cholesky factor
K_red = P L Lᵀ Pᵀ it is Yᵀ Y for Y = L⁻¹ Pᵀ O: forward solves only (MKL PARDISO, the default
install's, or CHOLMOD), instead of 3P + nv full solves. SciPy's SuperLU (no sparse Cholesky in
SciPy) is the fallback where MKL does not load, solving K_red X = O column by column.
`Linearize` then also solves for the constant response (z = 0), and `Step` solves once more for
the chosen z (to update the whole skin). The choice of factorisation is measured in
scripts/bench_skinned.py (`qpcc` section).

By default (`CoupledFrameConfig.condensation = "schur"`, issue 52) K_red is not factorised whole
but through its skin block: K_red = [[A_ff, B], [Bᵀ, C]] with the sparse Cholesky of A_ff and the
dense nv x nv Schur complement C - Bᵀ A_ff⁻¹ B (`_SchurCondensation`: the same half-solve, with
B's columns in it, gives the compliance, the Schur complement and the constant response; the
step needs one solve with A_ff). The penalties' rows of B grow as the walk pushes new skin
vertices into the skeleton's boxes; in K_red they changed its sparsity pattern and PARDISO redid
its symbolic analysis almost every frame (12 of the monster walk's first 13 linearisations),
while A_ff's pattern stays. "direct" keeps the whole-K_red path as the reference.

Contact patches. The generated skins' soles are marching-cubes surfaces (not exactly planar), so
a patch's position is its vertices' mean, its height lowered by the rest sole's relief (the mean's
height above the patch's lowest vertex on the rest skin): the patch touches where its lowest
vertex touched at rest, and its height moves with the mean displacement the QP constrains
(`SolePatches.Positions`). Each sole's vertices within `sole_band` of the foot's
lowest point form its planar part; the five patches are the centre (the inner 40% of the sole's
extent) and the four quadrants around it.

Independent references (tests/optimization/test_qpcc_coupled.py): the condensed step against a
direct sparse solve of the full KKT matrix of Eq. (2) (`drakebots.fem.coupling.AssembleKkt`), the
condensed QP against the same QP left uncondensed (`UncondensedQp`: Δv, Δu, λ as variables and
Eq. 2 as sparse equality constraints, solved by Clarabel), and one frame against
`CoupledSkinSkeleton.Step` (issue 5's coupled simulator, Newton to convergence, per-vertex
contact) driven by the same torques.

For the space-time step (section 5.1) the pass's glue forces are turned into per-link wrenches
(`CouplingLoads`, the `ExternalLoads` format of skeleton_model.py).

Units: SI (m, kg, s, N, N·m, rad).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.linalg.blas as sla_blas
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from drakebots.fem.model import KernelThreads
from drakebots.fem.pardiso import SINGULAR_PIVOT_RATIO
from drakebots.fem.solvers import (
    CholmodFactor,
    InaccurateSolve,
    NestedDissection,
    NotPositiveDefinite,
    PardisoFactor,
    ResolveBackend,
    SpdFactor,
)
from drakebots.runtime import SingleThreadedBlas
from drakebots.skinned.qpcc import STATIC, FrameDynamicsError, FrameLinearization
from drakebots.skinned.skeleton_model import SkeletonModel, SkinLoad
from drakebots.skinned.skin_coupling import (
    CoupledSkinSkeleton,
    CoupledState,
    CouplingConfig,
    PairBlocks,
)

PATCHES_PER_FOOT = 5
LINEAR_SOLVERS = ("auto", "pardiso", "cholmod", "splu", "dense")
CONDENSATIONS = ("schur", "direct")
# Largest relative difference allowed between the compliance's probe column and a checked full
# solve (`_ReducedFactor.Compliance`).
COMPLIANCE_TOLERANCE = 1e-8


@dataclasses.dataclass
class CoupledFrameConfig:
    """Options of the coupled frame dynamics (SI units)."""

    # Skin Rayleigh damping, mass part (1/s), as the coupled simulator's default.
    mass_damping: float = 2.0
    # Skin-skeleton and self-collision penalty forces (section 4.2) in b_d0, their stiffness
    # in A_d.
    penalties: bool = True
    # Sole vertices within this height of a foot's lowest skin vertex are its planar part, m.
    sole_band: float = 0.003
    # "auto" (MKL PARDISO where it loads, else CHOLMOD where scikit-sparse imports, else
    # SuperLU), "pardiso", "cholmod", "splu" or "dense" (LAPACK's Cholesky: the tests'
    # independent reference, small skins only).
    linear_solver: str = "auto"
    # Ground friction for the simulator check (the QPCC takes μ from the motion).
    friction: float = 0.8
    # Friction per foot instead of per patch (ours; FrameLinearization.rigid_soles): each patch
    # keeps its own normal force and no-penetration row, but a foot's tangential force is one
    # vector in one pyramid, shared evenly by its loaded patches, and its loaded patches' mean
    # slip is what sticks or slides. Measured on the generated beetle skin (12.7k vertices,
    # first 36 frames of a lift): per patch, 0 % of frames ended with consistent labels (static
    # patches whose stiff pads shear past the cone fall back to Eq. 18's free multipliers,
    # which then pulled with -100..-700 N alternating between the diagonals); per foot, 100 %,
    # foot forces 0-26 N.
    foot_friction: bool = False
    # Quasi-static continuation steps from the standing skin to a pass's first pose
    # (`CoupledFrameDynamics.SettledSkin`: a pass starts from the skin's equilibrium there).
    settle_steps: int = 4
    # How K_red (Eq. 10) is factorised: "schur" (its skin block A_ff by the sparse Cholesky,
    # the skeleton's nv x nv Schur complement densely: A_ff's pattern does not grow as the
    # walk pushes new skin vertices into the skeleton's boxes, so the symbolic analysis is kept;
    # `_SchurCondensation`) or "direct" (K_red whole, `_ReducedFactor`: the reference path).
    # Both give the same frames to solver tolerance (tests/skinned/test_qpcc_coupled.py).
    condensation: str = "schur"
    # With "schur": the self-collision pairs as low-rank columns of the condensation, outside
    # the factorised skin block (True, the default: its pattern, analysis and index maps are
    # made once), or in the skin block's pattern, grown as new pairs meet (False: the
    # reference). The direct path always factorises them in K_red.
    pair_columns: bool = True
    # With "schur" and PARDISO: the patches' force columns W_f border the skin block as
    # PARDISO's Schur block, so each factorisation also gives W_fᵀ A⁻¹ W_f and the half-solve
    # carries only [B, r_f] (True, the default; `_SchurCondensation`); False: the patches'
    # columns go through the half-solve with the rest (the reference path). CHOLMOD and SuperLU
    # always take the half-solve (the Schur block is PARDISO's feature). Issue 52, measured on
    # the monster walk's first 20 design frames: Findings 15 in docs/reproductions/skinned.md.
    patch_schur: bool = True
    # Threads of the skin's compiled element loop (FemModel.kernel_threads) in the frames and
    # the settle; None: DRAKEBOTS_FEM_THREADS where set, else 2 (at most the machine's cores).
    # Issue 52: on the monster's 0.06 m/s walk (its folded 42.9k-vertex skin, the first 12
    # frames of the first pass, 2 cores, five alternated pairs of runs) two threads took
    # 1.34-1.59 s a frame against 1.48-1.73 s with one (0.91 of it on average) at the same CPU
    # time (2.7-3.2 against 2.8-3.3 s a frame): PARDISO's OpenMP threads hold the second core
    # between the loops anyway. The frames agree to round-off carried through the contact
    # decisions (torques within 2.2e-7 N·m over 20 frames; docs/reproductions/skinned.md,
    # Findings 13).
    element_threads: int | None = None


# ----------------------------------------------------------------------------------------------
# Contact patches on the skin's soles.


@dataclasses.dataclass
class SolePatches:
    """Five contact patches per foot on the skin's sole (section 5.2).

    Attributes:
        vertices: list of P arrays of skin vertex indices.
        foot: (P,) leg index (0..3, SkeletonModel.legs order) of each patch.
        W: (3n, 3P) sparse force distribution (a patch force shared evenly by its vertices).
        relief: (P,) how far each patch's mean height lies above its lowest vertex on the skin
            the patches were made from (the rest skin standing on its soles), m.
    """

    vertices: list
    foot: np.ndarray
    W: sp.csc_matrix
    relief: np.ndarray

    @property
    def num_patches(self) -> int:
        return len(self.vertices)

    def Positions(self, x: np.ndarray) -> np.ndarray:
        """(P, 3): the vertices' mean, its height less the patch's rest `relief`, m.

        The height is that of the patch's mean (the point Wᵀ Δu moves, work-conjugate to the
        patch force), lowered by the relief of the rest sole (marching-cubes soles are not
        planar), so a patch touches where its lowest vertex touched on the rest skin and the
        QP's contact row constrains the same point it measures. With the lowest vertex's height
        and the mean's displacement, a soft sole that deformed unevenly looked penetrated and
        the next frame's contact row pushed it out by the difference: the beetle standing on
        a 0.67 MPa skin bounced higher every 45 ms (ground force 0 to 3.4 times its weight within
        0.1 s; measured), where issue 5's simulator stands it within 0.1 mm."""
        out = self.Displacements(np.asarray(x, float))  # Wᵀ x: each patch's mean position
        out[:, 2] -= self.relief
        return out

    def Displacements(self, du: np.ndarray) -> np.ndarray:
        """(P, 3) mean displacement of each patch (Wᵀ Δu; of positions, their mean)."""
        return (self.W.T @ du).reshape(-1, 3)


def MakeSolePatches(
    model: SkeletonModel, skin, x: np.ndarray, band: float = 0.003, exclude=()
) -> SolePatches:
    """Groups each foot's planar sole vertices (outer surface, within `band` of its lowest point)
    into five patches: the centre and four quadrants (section 5.2, after Tan et al. [7]).

    Args:
        model: the skeleton (foot positions at the home pose tell which foot a vertex is under).
        skin: the drakebots.fem.skin.Skin.
        x: (3n,) skin positions (home pose), m.
        band: sole thickness band, m.
        exclude: vertices that may not join a patch (the glue vertices: the skeleton moves them,
            so they are not free contact vertices of the condensed frame).
    """
    X = np.asarray(x, float).reshape(-1, 3)
    n = len(X)
    # Boundary vertices (not `skin.outer`: a skin made of pieces has one outer sheet per piece).
    from drakebots.fem.mesh import BoundaryFaces

    outer = np.setdiff1d(np.unique(BoundaryFaces(skin.mesh.tets)), np.asarray(exclude, int))
    feet_xy = np.array(
        [model.FootPoints(model.q_home, j, model.sole_centers[j])[0][0, :2] for j in range(4)]
    )
    nearest = np.argmin(np.linalg.norm(X[outer, None, :2] - feet_xy[None], axis=2), axis=1)
    vertices, foot = [], []
    for j in range(4):
        mine = outer[nearest == j]
        # Only vertices below the foot's link (the sole), not the leg's skin above it.
        low = mine[X[mine, 2] < X[mine, 2].min() + band] if len(mine) else mine
        if len(low) < PATCHES_PER_FOOT:
            raise ValueError(
                f"the skin's {model.legs[j]} sole has {len(low)} vertices within "
                f"{band * 1e3:.1f} mm of its lowest point: fewer than {PATCHES_PER_FOOT} patches"
            )
        rel = X[low, :2] - X[low, :2].mean(axis=0)
        half = np.maximum(np.abs(rel).max(axis=0), 1e-9)
        centre = np.max(np.abs(rel) / half, axis=1) < 0.4
        quadrant = (rel[:, 0] >= 0).astype(int) * 2 + (rel[:, 1] >= 0).astype(int)
        groups = [low[centre]] + [low[~centre & (quadrant == k)] for k in range(4)]
        # A sparse sole can leave a group empty: give it the vertex nearest its nominal place.
        nominal = [np.zeros(2)] + [
            np.array([(1 if k >= 2 else -1) * half[0], (1 if k % 2 else -1) * half[1]]) * 0.7
            for k in range(4)
        ]
        for g in range(PATCHES_PER_FOOT):
            if len(groups[g]) == 0:
                groups[g] = low[[int(np.argmin(np.linalg.norm(rel - nominal[g], axis=1)))]]
        vertices += groups
        foot += [j] * PATCHES_PER_FOOT
    P = len(vertices)
    rows, cols, vals = [], [], []
    for p, idx in enumerate(vertices):
        for k in range(3):
            rows.append(3 * idx + k)
            cols.append(np.full(len(idx), 3 * p + k))
            vals.append(np.full(len(idx), 1.0 / len(idx)))
    W = sp.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(3 * n, 3 * P)
    )
    relief = np.array([X[idx, 2].mean() - X[idx, 2].min() for idx in vertices])
    return SolePatches(vertices=vertices, foot=np.array(foot), W=W, relief=relief)


# ----------------------------------------------------------------------------------------------
# Factorisations of the reduced coupled matrix.


class _ReducedFactor:
    """(`CoupledFrameConfig.condensation = "direct"`, the reference path.) The positive-definite
    factorisation of K_red (drakebots.fem.solvers.SpdFactor: MKL
    PARDISO, CHOLMOD or SciPy's SuperLU, each refusing a matrix that is not positive definite
    with `NotPositiveDefinite`, each solve checked) and the compliance Oᵀ K_red⁻¹ O.

    Measured on the monster's first frame (K_red 127,993 rows, scripts/bench_skinned.py): a
    numeric factorisation takes 0.50 s with PARDISO, 0.68 s with CHOLMOD, 6.0 s with SuperLU;
    the compliance (82 columns) 0.31 s by PARDISO's forward half-solve, 0.37 s by CHOLMOD's,
    3.8 s by SuperLU's full solves. PARDISO and CHOLMOD order by their own METIS nested
    dissection; SuperLU takes a METIS nested dissection of the skin's free vertices with the
    `dense_tail` skeleton coordinates last (they couple to every glued neighbourhood): on the
    beetle's reduced matrix this halves the factorisation against SuperLU's own MMD(AᵀA) order.
    Orders and symbolic analyses are made once per sparsity pattern.
    """

    def __init__(self, name: str, dense_tail: int = 0):
        if name not in LINEAR_SOLVERS:
            raise ValueError(f"unknown linear solver '{name}' (known: {', '.join(LINEAR_SOLVERS)})")
        self.name = ResolveBackend(name)
        self._tail = int(dense_tail)
        self._factor = SpdFactor(self.name, self._Ordering)
        self._rng = np.random.default_rng(0)

    def _Ordering(self, K: sp.csc_matrix) -> np.ndarray | None:
        """SuperLU's order (None: not whole vertices, SuperLU's own ordering)."""
        nf = K.shape[0] - self._tail
        perm_f = NestedDissection(K[:nf, :nf]) if nf % 3 == 0 and nf > 0 else None
        if perm_f is None:
            return None
        return np.concatenate([perm_f, nf + np.arange(self._tail)])

    def Factor(self, K: sp.csc_matrix):
        """Raises NotPositiveDefinite where K is not (numerically) positive definite."""
        self._factor.Factor(K)

    def Solve(self, b):
        return self._factor.solve(b)

    def Compliance(self, O: sp.csc_matrix) -> np.ndarray:
        """Oᵀ K⁻¹ O. With a Cholesky factor (PARDISO, CHOLMOD), Yᵀ Y with Y = L⁻¹ P O by forward
        solves (the right-hand side passed dense: CHOLMOD's sparse-RHS solve returns a nearly
        dense sparse Y and costs twice the dense solve on the beetle, 0.21 vs 0.10 s for 78
        columns). A half-solve has no residual of its own, so one random combination of the
        columns is checked against a full solve (itself checked by its backward error): the two
        must agree to `COMPLIANCE_TOLERANCE`, else `InaccurateSolve`."""
        dense = O.toarray()
        if not isinstance(self._factor, (CholmodFactor, PardisoFactor)):
            return np.asarray(O.T @ self._factor.solve(dense))
        Y = self._factor.HalfSolve(dense)
        with SingleThreadedBlas():  # a Gram matrix of 3P + nv columns: threads only spin
            C = Y.T @ Y
        _CheckHalfSolve(self.name, C, dense, self._factor.solve, self._rng)
        return C


class _SchurCondensation:
    """K_red factorised through its skin block: K_red = [[A, B], [Bᵀ, C]] in (Δu_free, Δv), with
    A = A_ff the free skin rows (sparse, the FEM pattern plus the self-collision pairs met so
    far), B (nf x nv) the glue's and the skin-skeleton penalties' coupling to Δv (non-zero on a
    few thousand rows) and C (nv x nv) the skeleton corner. A is factorised by a sparse
    Cholesky (drakebots.fem.solvers.SpdFactor); the Schur complement S = C - Bᵀ A⁻¹ B (nv x nv,
    dense) by LAPACK. K_red is positive definite exactly when A and S are.

    Why (issue 52, measured on the monster's 0.06 m/s walk on its folded 42.9k-vertex skin):
    factorising K_red whole puts the pushed rows of B in its sparsity pattern, and as the walk
    pushes new skin vertices into the skeleton's boxes the pattern grows, so PARDISO redid its
    symbolic analysis (METIS on 128k rows) in 4 of the first 6 linearisations: 1.2-2.2 s a
    frame against 0.55 s for a numeric factorisation alone. A's pattern does not depend on B,
    and the self-collision pairs it carries are kept once met (`_pattern`: a superset, zeros
    where a pair has let go), so the analysis is redone only when a pair meets for the first
    time (twice in the walk's first 8 frames). Measured there (the first 8 frames of the first
    pass, four alternated runs on the 2 shared cores, load 3.8-4.9): 23.3 s CPU both times
    against 27.2 s and 24.4 s whole (2.9 s a frame against 3.0-3.4 s; factor phase 0.7-0.9 s
    wall against 1.1-1.9 s), the same torques to 2e-10 N·m and states to 3e-13; wall medians
    (3.7 s against 4.7 s and 3.0 s) moved with the other processes' load. What is left of a
    frame (CPU, profiled): the FEM Hessian at the predictor ~1.0 s (drakebots.fem), PARDISO's
    numeric factorisation of A_ff ~0.6 s, the 83-column half-solve ~0.4 s, the rest ~0.5 s.

    The compliance of the outputs O = diag(W_f, I_nv) (patch means and Δv) is, with
    Y = L⁻¹ P [W_f, B] (one forward half-solve of 3P + nv columns, as before):

        G = Yᵀ Y,  S = C - G_BB,  X = S⁻¹ G_BW,
        Oᵀ K_red⁻¹ O = [[G_WW + G_BWᵀ X, -Xᵀ], [-X, S⁻¹]]

    (block inversion of K_red). With PARDISO and the patches' columns given at construction
    (`patch_columns`, the default of `CoupledFrameDynamics`), A is factorised bordered by
    W_f as PARDISO's Schur block: the same pass gives G_WW = W_fᵀ A⁻¹ W_f, and the half-solve of
    [B, r_f] alone gives the rest (its forward substitution through the border yields
    W_fᵀ A⁻¹ [B, r_f]). The patches are 60 of the monster walk's 84-110 columns, each 20-38
    rows; a half-solve column costs about 4 ms through the whole factor, while the border
    costs the factorisation only the part of the elimination tree above those rows (issue 52,
    Findings 15 in docs/reproductions/skinned.md). A solve
    K_red [x_f; x_v] = [r_f; r_v] is
    a = A⁻¹ r_f, x_v = S⁻¹ (r_v - Bᵀ a), x_f = a - A⁻¹ B x_v (two solves with A, each checked
    by its backward error; the whole block solution is checked once more against K_red's rows
    and refined once where it misses). The old path (`CoupledFrameConfig.condensation =
    "direct"`, `_ReducedFactor`) is the reference the tests compare with.

    The self-collision pairs are not in A. A pair joins two vertices that were far apart at
    rest (skin_coupling.CoupledSkinSkeleton.Penalties), so its blocks lie outside the FEM's
    pattern, and every pair met for the first time grew A's pattern: a merge of the 4.5M keys,
    the index maps rebuilt and a new symbolic analysis, 0.5-0.9 s each, in most frames of the
    monster's walk once its folds close (81 pairs met in its first 60 frames, measured). Each
    pair's stiffness is rank one, k' e eᵀ ⊗ [[1, -1], [-1, 1]] = u uᵀ with u = √k' (e, -e) on
    its two vertices, so the skin block is A + U Uᵀ with A the FEM's fixed pattern, and

        [[A, B, U], [Bᵀ, C, 0], [Uᵀ, 0, -I]] [x_f; x_v; s] = [r_f; r_v; 0]

    is K_red's system with s = Uᵀ x_f eliminated. The extended B' = [B, U] and C' = diag(C, -I)
    take the place of B and C above: the same half-solve (m more columns), the same block
    inversion; only S = C' - B'ᵀ A⁻¹ B' is indefinite, and is factorised by eliminating the
    pairs' rows first (`_SetSchur`). A's pattern, its analysis and its index maps are then
    made once for the whole walk.
    """

    def __init__(self, name: str, patch_columns: sp.spmatrix | None = None):
        if name not in LINEAR_SOLVERS:
            raise ValueError(f"unknown linear solver '{name}' (known: {', '.join(LINEAR_SOLVERS)})")
        self.name = ResolveBackend(name)
        # The patches' columns W, fixed for the dynamics' life: with PARDISO they border A as
        # its Schur block, so each factorisation also gives Wᵀ A⁻¹ W (class docstring). Other
        # backends have no such block and take W in `Condense` (the half-solve).
        self._patches = None
        if patch_columns is not None and patch_columns.shape[1] and self.name == "pardiso":
            self._patches = sp.csc_matrix(patch_columns)
            self._factor = PardisoFactor(schur_columns=self._patches)
        else:
            self._factor = SpdFactor(self.name, self._Ordering)
        self._rng = np.random.default_rng(0)
        self._pattern = None  # (indptr, indices) of the factorised A (a superset)
        self._keys = None  # sorted column-major keys of that pattern
        self._seen = None  # the last A pattern given, and where its entries go
        self.analyses = 0  # how many times the factor's pattern changed

    @property
    def holds_patches(self) -> bool:
        """Whether the patch columns border the factor (`Condense(None, rhs)`)."""
        return self._patches is not None

    @staticmethod
    def _Ordering(A: sp.csc_matrix) -> np.ndarray | None:
        """SuperLU's order: METIS nested dissection of the skin's free vertices."""
        return NestedDissection(A) if A.shape[0] % 3 == 0 else None

    def _Superset(self, A: sp.csc_matrix) -> sp.csc_matrix:
        """A in the kept pattern (grown by A's new entries where it has any)."""
        pattern = (A.indptr.tobytes(), A.indices.tobytes())
        if self._seen is None or self._seen[0] != pattern:
            # Keys col * n + row, ascending (sorted CSC); membership by binary search, as a
            # hashed np.isin of 4.5M keys took 1.6 s.
            n = A.shape[0]
            cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(A.indptr))
            keys = cols * n + A.indices
            if self._keys is None:
                new = np.ones(len(keys), dtype=bool)
            else:
                at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
                new = self._keys[at] != keys
            if new.any():
                merged = keys if self._keys is None else np.concatenate([self._keys, keys[new]])
                merged.sort(kind="stable")
                self._keys = merged
                indptr = np.zeros(n + 1, dtype=np.int64)
                np.cumsum(np.bincount(merged // n, minlength=n), out=indptr[1:])
                self._pattern = (indptr, (merged % n).astype(np.int32))
                self.analyses += 1
            whole = len(keys) == len(self._keys)  # A's pattern is the kept one
            self._seen = (pattern, None if whole else np.searchsorted(self._keys, keys))
        if self._seen[1] is None:
            return A
        indptr, indices = self._pattern
        data = np.zeros(len(indices))
        data[self._seen[1]] = A.data
        return sp.csc_matrix((data, indices, indptr), shape=A.shape)

    def Factor(self, A: sp.csc_matrix, B_rows, B_values, C, columns=None) -> None:
        """Factorises A (CSC, sorted) and the Schur complement of C; B is given by its non-zero
        rows `B_rows` (r,) and their values `B_values` (r, nv). `columns` (rows (m, k),
        values (m, k)), where given, are m sparse columns u_j with A + Σ u_j u_jᵀ the skin
        block (the self-collision pairs: see the class docstring). Raises NotPositiveDefinite
        where K_red is not (numerically) positive definite."""
        A = self._Superset(A)
        self._factor.Factor(A)
        self._A = A
        # ‖A‖∞ of a symmetric matrix by column sums (every column holds its diagonal entry):
        # 0.01 s where the generic row sum of |A| took 0.09 s on the monster's 4.5M entries.
        norm_A = float(np.add.reduceat(np.abs(A.data), A.indptr[:-1]).max())
        if hasattr(self._factor, "_norm"):
            self._factor._norm = norm_A
        self._n = A.shape[0]
        B_rows = np.asarray(B_rows, np.int64)
        B_values = np.asarray(B_values, float)
        C = np.asarray(C, float)
        nv = self._nv = C.shape[0]
        m = 0 if columns is None else len(columns[0])
        if m:
            # B' = [B, U] on the union of their rows, C' = [[C, 0], [0, -I]] (the class
            # docstring's extended system).
            U_rows, U_values = np.asarray(columns[0], np.int64), np.asarray(columns[1], float)
            rows = np.union1d(B_rows, U_rows.ravel())
            values = np.zeros((len(rows), nv + m))
            values[np.searchsorted(rows, B_rows), :nv] = B_values
            at = np.searchsorted(rows, U_rows)
            np.add.at(values, (at, nv + np.arange(m)[:, None]), U_values)
            B_rows, B_values = rows, values
            corner = np.zeros((nv + m, nv + m))
            corner[:nv, :nv] = C
            corner[nv:, nv:] = -np.eye(m)
            C = corner
        self._B_rows, self._B_values, self._C = B_rows, B_values, C
        # ‖K‖∞ (K_red, or the extended matrix), bounded above by the blocks' row sums.
        absB = np.abs(self._B_values)
        self._norm = max(
            norm_A + float(absB.sum(axis=1).max(initial=0.0)),
            float((absB.sum(axis=0) + np.abs(self._C).sum(axis=1)).max()),
        )
        nb = self._C.shape[0]
        B = np.zeros((self._n, nb), order="F")
        B[self._B_rows] = self._B_values
        self._B_dense = B
        self._G_Br = None  # set by Condense for this factorisation
        # S = C - Bᵀ A⁻¹ B needs A⁻¹ B; the compliance's half-solve gives it with the patches'
        # columns, so S is formed there (`Condense`), or by `Solve` where no Condense came.
        self._S = None

    def _Gram(self, W: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Rᵀ A⁻¹ R for R = [W, B, r] by a forward half-solve (PARDISO, CHOLMOD) or full
        solves."""
        nw, nb = W.shape[1], self._C.shape[0]
        R = np.empty((self._n, nw + nb + 1), order="F")
        R[:, :nw] = W
        R[:, nw : nw + nb] = self._B_dense
        R[:, -1] = r
        f = self._factor
        if isinstance(f, (CholmodFactor, PardisoFactor)):
            Y = f.HalfSolve(R)
            with SingleThreadedBlas():  # a Gram matrix of 3P + nv columns: threads only spin
                # BLAS syrk (the upper triangle only): 0.1 s where Yᵀ Y took 0.2 s (128k x 82).
                G = sla_blas.dsyrk(1.0, Y, trans=1, lower=0)
            G = np.triu(G) + np.triu(G, 1).T
            _CheckHalfSolve(self.name, G, R, f.solve, self._rng)
        else:
            G = R.T @ f.solve(R)
        return 0.5 * (G + G.T)

    def _BorderedGram(self, r: np.ndarray) -> np.ndarray:
        """[W, B, r]ᵀ A⁻¹ [W, B, r] with W the patch columns of the bordered factor: Wᵀ A⁻¹ W is
        the factorisation's Schur complement, Y = L⁻¹ P [B, r] and Wᵀ A⁻¹ [B, r] come from one
        forward substitution, [B, r]ᵀ A⁻¹ [B, r] = Yᵀ Y; checked as `_Gram` is."""
        f = self._factor
        nw, nb = self._patches.shape[1], self._C.shape[0]
        R = np.empty((self._n, nb + 1), order="F")
        R[:, :nb] = self._B_dense
        R[:, -1] = r
        Y, Z = f.HalfSolveWithColumns(R)
        G = np.empty((nw + nb + 1,) * 2)
        with SingleThreadedBlas():
            G_R = sla_blas.dsyrk(1.0, Y, trans=1, lower=0)
        G[nw:, nw:] = np.triu(G_R) + np.triu(G_R, 1).T
        G[:nw, :nw] = f.schur_complement
        G[:nw, nw:] = Z
        G[nw:, :nw] = Z.T
        _CheckHalfSolve(self.name, G, (self._patches, R), f.solve, self._rng)
        return 0.5 * (G + G.T)

    def _SetSchur(self, G_BB: np.ndarray) -> None:
        """Factorises S = C' - B'ᵀ A⁻¹ B'. Without columns S is the skeleton's Schur complement
        (SPD, Cholesky). With them S = [[S_vv, S_vu], [S_uv, -N]], N = I + Uᵀ A⁻¹ U (SPD), is
        indefinite: the columns are eliminated first, S_v = S_vv + S_vu N⁻¹ S_uv (the Schur
        complement of K_red's skin block, SPD exactly when K_red is), and both N and S_v are
        factorised by Cholesky (`_SchurSolve`)."""
        import scipy.linalg as sla

        S = self._C - G_BB
        S = 0.5 * (S + S.T)
        nv = self._nv
        self._N = self._S_vu = None
        if S.shape[0] > nv:
            try:
                self._N = sla.cho_factor(-S[nv:, nv:], lower=True)
            except np.linalg.LinAlgError as e:  # I + Uᵀ A⁻¹ U is SPD whenever A is
                raise NotPositiveDefinite(f"the self-collision pairs' block: {e}") from e
            self._S_vu = S[:nv, nv:]
            S = S[:nv, :nv] + self._S_vu @ sla.cho_solve(self._N, self._S_vu.T)
            S = 0.5 * (S + S.T)
        try:
            self._S = sla.cho_factor(S, lower=True)
        except np.linalg.LinAlgError as e:
            raise NotPositiveDefinite(f"the skeleton's Schur complement: {e}") from e
        pivots = np.diag(self._S[0]) ** 2
        if not np.all(pivots > SINGULAR_PIVOT_RATIO * np.abs(np.diag(self._C[:nv, :nv]))):
            raise NotPositiveDefinite("the skeleton's Schur complement is singular")

    def _SchurSolve(self, r: np.ndarray) -> np.ndarray:
        """S⁻¹ r for `_SetSchur`'s S ((nv + m) rows): with columns, by block elimination,
        x_v = S_v⁻¹ (r_v + S_vu N⁻¹ r_u), x_u = -N⁻¹ (r_u - S_uv x_v)."""
        import scipy.linalg as sla

        if self._N is None:
            return sla.cho_solve(self._S, r)
        nv = self._nv
        r_v, r_u = r[:nv], r[nv:]
        x_v = sla.cho_solve(self._S, r_v + self._S_vu @ sla.cho_solve(self._N, r_u))
        x_u = -sla.cho_solve(self._N, r_u - self._S_vu.T @ x_v)
        return np.concatenate([x_v, x_u])

    def _Extended(self, r_v: np.ndarray) -> np.ndarray:
        """K_red's skeleton rows as the extended system's (zeros on the columns' rows)."""
        return np.concatenate([r_v, np.zeros(self._C.shape[0] - self._nv)])

    def Condense(self, W: np.ndarray | None, rhs: np.ndarray):
        """(Oᵀ K_red⁻¹ O for O = diag(W, I_nv), x_v, Wᵀ x_f) for W dense (nf x 3P; None: the
        `patch_columns` bordering PARDISO's factor, `holds_patches`) and the
        constant response x = K_red⁻¹ rhs, all from one half-solve of [W, B, r_f]: with
        G = [W, B, r_f]ᵀ A⁻¹ [W, B, r_f], x_v = S⁻¹ (r_v - G_Br) and
        Wᵀ x_f = Wᵀ A⁻¹ (r_f - B x_v) = G_Wr - G_WB x_v. The constant response used to cost
        two more solves with A (0.06 s each on the monster's skin); `Solve` checks it with
        the frame's step (a full residual of K_red). With columns, B is B' and S the extended
        S (`_SetSchur`); only the skeleton's part of the answers is returned."""
        import scipy.linalg as sla

        if W is None:
            if self._patches is None:
                raise ValueError("Condense(None, rhs) needs patch columns bordering the factor")
            G = self._BorderedGram(rhs[: self._n])
            W = self._patches  # (sparse: Solve's right-hand side check takes W f)
        else:
            G = self._Gram(W, rhs[: self._n])
        nw, n, nv = W.shape[1], self._n, self._nv
        nb = self._C.shape[0]
        G_WW, G_BW, G_BB = G[:nw, :nw], G[nw : nw + nb, :nw], G[nw : nw + nb, nw : nw + nb]
        G_Wr, G_Br = G[:nw, -1], G[nw : nw + nb, -1]
        self._SetSchur(G_BB)
        self._G_BW, self._G_Br, self._r_f0, self._W = G_BW, G_Br, rhs[:n].copy(), W
        X = self._SchurSolve(G_BW)
        # The skeleton's block of S⁻¹ is S_v⁻¹ (with or without columns).
        S_inv = sla.cho_solve(self._S, np.eye(nv))
        x = self._SchurSolve(self._Extended(rhs[n:]) - G_Br)
        W_x_f = G_Wr - G_BW.T @ x
        return self._Compliance(G_WW + G_BW.T @ X, X[:nv], S_inv), x[:nv], W_x_f

    @staticmethod
    def _Compliance(G_WW_X, X_v, S_inv) -> np.ndarray:
        nw, nv = G_WW_X.shape[0], S_inv.shape[0]
        out = np.empty((nw + nv,) * 2)
        out[:nw, :nw] = G_WW_X
        out[:nw, nw:] = -X_v.T
        out[nw:, :nw] = -X_v
        out[nw:, nw:] = 0.5 * (S_inv + S_inv.T)
        return out

    def _BlockSolve(self, r_f, r_b):
        """[x_f; x_b] solving the (extended) block system for [r_f; r_b] (r_b: nv + m rows)."""
        a = self._factor.solve(r_f)
        x_b = self._SchurSolve(r_b - self._B_values.T @ a[self._B_rows])
        correction = np.zeros(self._n)
        correction[self._B_rows] = self._B_values @ x_b
        x_f = a - self._factor.solve(correction)
        return x_f, x_b

    def Solve(self, rhs: np.ndarray, patch_forces: np.ndarray | None = None) -> np.ndarray:
        """K_red⁻¹ rhs (rhs = [r_f; r_v]), checked by its backward error against K_red.

        With `patch_forces` f, rhs's free rows must be `Condense`'s r_f plus W f (the frame's
        step: the patch forces are the only inputs on skin rows), so Bᵀ A⁻¹ r_f = G_Br + G_BW f
        comes from the half-solve's Gram and the solve needs one solve with A instead of two;
        the residual check then also checks the Gram (a wrong x_v leaves the skeleton's rows
        unbalanced): where it misses, the two-solve path gives the answer, and an x_v that
        moves by more than COMPLIANCE_TOLERANCE raises InaccurateSolve."""
        from drakebots.fem.solvers import BACKWARD_ERROR_TOLERANCE

        if self._S is None:
            self._SetSchur(self._B_values.T @ self._factor.solve(self._B_dense)[self._B_rows])
        n, nv = self._n, self._nv
        # (With columns: the extended system's right-hand side, zeros on their rows.)
        r_f, r_v = rhs[:n], self._Extended(rhs[n:])
        hinted = None
        if patch_forces is not None and getattr(self, "_G_Br", None) is not None:
            # (only for the right-hand side `Condense` saw, plus the patch forces)
            expected = self._r_f0 + self._W @ patch_forces
            scale = np.abs(expected).max(initial=0.0)
            if np.abs(r_f - expected).max(initial=0.0) > 1e-12 * scale:
                patch_forces = None
        if patch_forces is not None and getattr(self, "_G_Br", None) is not None:
            x_v = self._SchurSolve(r_v - self._G_Br - self._G_BW @ patch_forces)
            correction = r_f.copy()
            correction[self._B_rows] -= self._B_values @ x_v
            x_f = self._factor.solve(correction)
            hinted = x_v
        else:
            x_f, x_v = self._BlockSolve(r_f, r_v)

        def Residual(x_f, x_v):
            res_f = r_f - self._A @ x_f
            res_f[self._B_rows] -= self._B_values @ x_v
            res_v = r_v - self._B_values.T @ x_f[self._B_rows] - self._C @ x_v
            return res_f, res_v

        norm = self._norm

        def Error(res_f, res_v, x_f, x_v):
            x_max = max(np.abs(x_f).max(initial=0.0), np.abs(x_v).max(initial=0.0))
            b_max = max(np.abs(r_f).max(initial=0.0), np.abs(r_v).max(initial=0.0))
            r_max = max(np.abs(res_f).max(initial=0.0), np.abs(res_v).max(initial=0.0))
            return 0.0 if r_max == 0.0 else r_max / (norm * x_max + b_max)

        res_f, res_v = Residual(x_f, x_v)
        error = Error(res_f, res_v, x_f, x_v)
        if error > BACKWARD_ERROR_TOLERANCE and hinted is not None:
            x_f, x_v = self._BlockSolve(r_f, r_v)
            scale = np.abs(x_v).max(initial=0.0)
            if not np.abs(x_v - hinted).max(initial=0.0) <= COMPLIANCE_TOLERANCE * scale:
                raise InaccurateSolve(
                    f"{self.name}: the compliance's half-solve gave a step off by "
                    f"{np.abs(x_v - hinted).max() / scale:.2e} (tolerance "
                    f"{COMPLIANCE_TOLERANCE:.0e})"
                )
            res_f, res_v = Residual(x_f, x_v)
            error = Error(res_f, res_v, x_f, x_v)
        if error > BACKWARD_ERROR_TOLERANCE:
            d_f, d_v = self._BlockSolve(res_f, res_v)
            x_f, x_v = x_f + d_f, x_v + d_v
            refined = Error(*Residual(x_f, x_v), x_f, x_v)
            if not refined <= BACKWARD_ERROR_TOLERANCE:
                raise InaccurateSolve(
                    f"{self.name}: a block solve of K_red left a backward error of {refined:.2e} "
                    f"(tolerance {BACKWARD_ERROR_TOLERANCE:.0e}, {error:.2e} before refinement)"
                )
        return np.concatenate([x_f, x_v[:nv]])


# ----------------------------------------------------------------------------------------------
# The coupled frame dynamics.


@dataclasses.dataclass
class FrameSystem:
    """The uncondensed linear system of one frame (Eq. 2) and its inputs.

        KKT [[A_r, A_drᵀ, Gᵀ], [A_dr, A_d, G_uᵀ], [G, G_u, 0]] [Δv; Δu; λ]
            = [b_r0 + E_r z; b_d0 + E_d z; c]

    with G_u = -S_c (the glue dofs `pinned`) and A_dr the skin-skeleton penalties' coupling
    (None without a vertex in a skeleton box).
    """

    A_r: np.ndarray
    A_d: sp.csr_matrix
    G: np.ndarray
    pinned: np.ndarray
    b_r0: np.ndarray
    b_d0: np.ndarray
    c: np.ndarray
    E_r: np.ndarray  # (nv, nz): Δt B on the torques
    E_d: sp.csc_matrix  # (3n, nz): W on the patch forces
    x: np.ndarray  # skin positions at the frame's start
    y0: np.ndarray  # the predictor x + Δt w (linearisation point)
    A_dr: sp.csr_matrix | None = None  # (3n, nv): -Δt Σ K_b J_b, skin rows x Δv (penalties)
    # The self-collision pairs of two free vertices, left out of A_d (the Schur path): columns
    # (rows (m, 6) dofs, values (m, 6)) with A_d's missing part Σ u uᵀ
    # (skin_coupling.Penalties.PairColumns). None: A_d is the whole skin block.
    pairs: tuple | None = None

    def SkinMatrix(self) -> sp.csr_matrix:
        """The whole skin block of Eq. (2): A_d plus the pairs' Σ u uᵀ (for the references)."""
        if self.pairs is None:
            return self.A_d
        rows, values = self.pairs
        n = self.A_d.shape[0]
        m = len(rows)
        U = sp.csc_matrix(
            (values.ravel(), (rows.ravel(), np.repeat(np.arange(m), rows.shape[1]))), shape=(n, m)
        )
        return (self.A_d + U @ U.T).tocsr()


@dataclasses.dataclass
class CoupledLinearization(FrameLinearization):
    """FrameLinearization plus what `Step` needs (the factor, the constant response)."""

    system: FrameSystem | None = None
    v: np.ndarray | None = None  # the frame's starting velocity
    timings: dict = dataclasses.field(default_factory=dict)
    # (P, 3) each patch's displacement at the skin's starting velocity, Δt Wᵀ w: Δu is measured
    # from the predictor x + Δt w, so a patch moves by this plus Wᵀ Δu over the frame.
    coast: np.ndarray | None = None


@dataclasses.dataclass
class StepRecord:
    """What one coupled frame step produced (for the space-time step and the replay)."""

    glue_forces: np.ndarray  # (k, 3) N, on the skin (the skeleton feels the opposite)
    patch_forces: np.ndarray  # (P, 3) N, ground on the skin
    x: np.ndarray  # (3n,) skin positions after the step
    glue_residual: float  # max |C(q, u)| before the glue vertices are snapped, m


class CoupledFrameDynamics:
    """Condensed coupled skin-skeleton dynamics for the QPCC (see the module docstring).

    The skin's state (positions x, velocities w) lives here: `Step` records the skin state it
    produces under the skeleton configuration it returns, and `Linearize(q, v)` continues from the
    skin state recorded for that q (so repeated solves of one frame do not advance the skin).

    Args:
        model: the skeleton, built with `skin_load=SkinLoad()` (the FEM skin carries its own mass).
        skin: the drakebots.fem.skin.Skin of the same robot.
        dt: frame step, s.
        config: CoupledFrameConfig.
        planned_skin_load: the lumped skin load of the space-time model these passes alternate
            with (None: the default SkeletonModel's, the paper's skin mass by link mass).
    """

    def __init__(
        self,
        model: SkeletonModel,
        skin,
        dt: float,
        config: CoupledFrameConfig | None = None,
        *,
        planned_skin_load: SkinLoad | None = None,
    ):
        if model.skin_load.total > 0.0:
            raise ValueError(
                "CoupledFrameDynamics: build the SkeletonModel with skin_load=SkinLoad() (the FEM "
                "skin carries its own mass; a lumped skin load would count it twice)"
            )
        self.model = model
        self.skin = skin
        self.dt = float(dt)
        self.config = config or CoupledFrameConfig()
        # The lumped skin load the space-time model carries, which the coupling loads handed
        # back to it leave out (`CouplingLoadsOfPass`; None: the default model's).
        self.planned_skin_load = planned_skin_load
        cfg = self.config
        self.stepper = CoupledSkinSkeleton(
            model.plant,
            model.instance,
            skin,
            CouplingConfig(
                time_step=self.dt,
                friction=cfg.friction,
                mass_damping=cfg.mass_damping,
                penalty_stiffness=CouplingConfig().penalty_stiffness if cfg.penalties else 0.0,
            ),
            skeleton=model.params,
        )
        st = self.stepper
        if cfg.element_threads is not None and cfg.element_threads < 1:
            raise ValueError(f"element_threads must be at least 1, got {cfg.element_threads}")
        st.fem.kernel_threads = KernelThreads(2, requested=cfg.element_threads)
        self.n = st.n
        # The skin hangs below the skeleton's soles: stand the robot on the skin.
        self.lift = max(0.0, -float(skin.mesh.vertices[:, 2].min()))
        x_home = st.fem.RestPositions()
        x_home[2::3] += self.lift
        self._x_home = x_home.copy()
        self.q_stand = model.q_home.copy()
        self.q_stand[2] += self.lift
        self.patches = MakeSolePatches(model, skin, x_home, cfg.sole_band, exclude=st.glue.vertices)
        self.num_patches = self.patches.num_patches
        self.patch_foot = self.patches.foot
        self.pinned = st.glue.dofs
        free = np.ones(3 * self.n, dtype=bool)
        free[self.pinned] = False
        self.free = np.flatnonzero(free)
        self._free_index = np.full(3 * self.n, -1, dtype=np.int64)
        self._free_index[self.free] = np.arange(len(self.free))
        # Free rows reserved in K_red for the penalties' coupling to Δv (see _Reduced).
        self._reserved = np.zeros(0, dtype=np.int64)
        self.nz = model.nu + 3 * self.num_patches
        if cfg.condensation not in CONDENSATIONS:
            raise ValueError(
                f"unknown condensation '{cfg.condensation}' (known: {', '.join(CONDENSATIONS)})"
            )
        # The patches' force distribution on the free rows, dense (the compliance's right-hand
        # sides; made once: 0.1 s a frame on the monster's skin).
        self._W_f_sparse = self.patches.W[self.free].tocsc()
        self._W_f = self._W_f_sparse.toarray(order="F")
        if cfg.condensation == "schur":
            self._factor = _SchurCondensation(
                cfg.linear_solver, self._W_f_sparse if cfg.patch_schur else None
            )
        else:
            self._factor = _ReducedFactor(cfg.linear_solver, self.model.nv)
        self.solver_name = self._factor.name
        # The exact stiffness (the linearisation of Eq. 2); PSD-projected only if it stops being
        # positive definite (the factorisation reports it, CHOLMOD and SuperLU alike).
        self._project = False
        self._states = {}
        self.records = {}
        # How the last new pass started its skin (SkinState): dict or None.
        self.start_report = None
        self.Reset(
            CoupledState(self.q_stand.copy(), np.zeros(model.nv), x_home, np.zeros(3 * self.n))
        )

    # ---- state bookkeeping -------------------------------------------------------------------
    @property
    def _low_rank_pairs(self) -> bool:
        """Whether the self-collision pairs stay out of A_d as low-rank columns (the Schur
        path's `_SchurCondensation` takes them; the direct path factorises them in K_red)."""
        return self.config.pair_columns and isinstance(self._factor, _SchurCondensation)

    @staticmethod
    def _Key(q) -> bytes:
        return np.round(np.asarray(q, float), 12).tobytes()

    def Reset(self, state: CoupledState) -> None:
        """Starts (or restarts) a pass from this coupled state (forgets the recorded steps)."""
        self._states = {self._Key(state.q): (state.x.copy(), state.w.copy())}
        self.records = {}
        self.pass_records = []
        self.initial = state.copy()

    def SkinState(self, q, v=None) -> tuple[np.ndarray, np.ndarray]:
        """(x, w) of the skin recorded for skeleton configuration q."""
        hit = self._states.get(self._Key(q))
        if hit is None:
            # A new pass from a configuration this object has not stepped to (the alternating
            # loop's next frame-by-frame pass starts at the new plan's first frame): the skin
            # posed by linear blend skinning, glue vertices on their links, moving with its links
            # at the skeleton's velocity v (at rest when v is None): a resting skin on a moving
            # skeleton (the trot starts at 0.45 m/s) would be dragged along by the glue in the
            # first frame.
            v = np.zeros(self.model.nv) if v is None else np.asarray(v, float)
            x, w = self.PosedSkin(q, v)
            fem = self.stepper.fem
            blend_energy = float(fem.Energy(x)) if fem.FirstInverted(x) is None else None
            settled = not np.array_equal(np.asarray(q, float), self.q_stand)
            if settled:
                # The skin's shape at the pass's first pose is simulated with the glue on its
                # links (section 5.4: "the initial skin mesh deformation is simulated by
                # imposing the coupling constraints"): its elastic equilibrium there. Linear
                # blend skinning alone shears the skin where weights blend across a joint:
                # measured at the beetle walk's first pose (knees and ankles within 5 degrees of
                # standing) on the skin in pieces, 2.59 J and knee loads of 14 U_m blended
                # against 0.091 J and 0.47 U_m settled; at the monster trot's first pose it folds
                # the skin (89 inverted elements). At the standing pose both are the rest skin.
                x = self.SettledSkin(q)
            self.Reset(CoupledState(np.asarray(q, float).copy(), v.copy(), x, w))
            self.start_report = {
                "skin": "elastic equilibrium (settled)" if settled else "rest (standing pose)",
                "elastic_energy_j": float(fem.Energy(x)),
                "blend_skinning_energy_j": blend_energy,
                "holding_torque_nm": self.SkinHoldingTorques(q, x).tolist(),
            }
            hit = self._states[self._Key(q)]
        return hit

    def _Blend(self, x, q_from, q, v=None):
        """Positions x (3n,) carried from configuration q_from to q by the skinning weights:
        Σ_l w_l X_l(q) X_l(q_from)⁻¹ x (linear blend skinning of section 5.4 applied to x).
        With skeleton velocities v also returns their time derivative, each link's part moving
        with the link: ẋ_l = v_B + ω_B × (x_l - p_B)."""
        m = self.model
        plant, ctx = m.plant, m.context
        X0 = np.asarray(x, float).reshape(-1, 3)
        out = np.zeros_like(X0)
        out_dot = np.zeros_like(X0)
        for col, link in enumerate(self.skin.skin_links):
            w = self.skin.weights[:, col]
            if not np.any(w > 0):
                continue
            body = plant.GetBodyByName(link, m.instance)
            plant.SetPositions(ctx, q_from)
            X_from = plant.EvalBodyPoseInWorld(ctx, body)
            plant.SetPositions(ctx, q)
            X_now = plant.EvalBodyPoseInWorld(ctx, body)
            moved = (X_now.multiply(X_from.inverse().multiply(X0.T))).T
            out += w[:, None] * moved
            if v is not None:
                plant.SetVelocities(ctx, v)
                V = plant.EvalBodySpatialVelocityInWorld(ctx, body)
                r = moved - X_now.translation()
                out_dot += w[:, None] * (V.translational() + np.cross(V.rotational(), r))
        return out.ravel() if v is None else (out.ravel(), out_dot.ravel())

    def PosedSkin(self, q, v=None):
        """(3n,) skin positions at configuration q: the rest skin (standing at q_stand) moved
        with its links by the skinning weights (section 5.4), glue vertices on their points.
        With skeleton velocities v, returns (x, ẋ), ẋ (3n,) the time derivative of the blend:
        each link's part moves with the link, ẋ_l = v_B + ω_B × (x_l - p_B), glue vertices J_G v."""
        X0 = self._StandingSkin()
        p_WG, J_G = self.stepper.GluePoints(q)
        if v is None:
            x = self._Blend(X0, self.q_stand, q)
            x[self.pinned] = p_WG.ravel()
            return x
        x, x_dot = self._Blend(X0, self.q_stand, q, v)
        x[self.pinned] = p_WG.ravel()
        x_dot[self.pinned] = J_G @ v
        return x, x_dot

    def _StandingSkin(self) -> np.ndarray:
        """(3n,) the skin at q_stand: the pass's initial skin when it started standing, else the
        rest shape raised onto its soles."""
        if self._Key(self.initial.q) == self._Key(self.q_stand):
            return self.initial.x.copy()
        return self._x_home.copy()

    def SkinHoldingTorques(self, q, x) -> np.ndarray:
        """(nu,) motor torques that hold the skin's elastic forces at skeleton configuration q
        and skin positions x: τ = Bᵀ (J_Gᵀ ∇E(x)_G - τ_penalty), the glue vertices' share of
        the elastic forces carried into the joints and the collision penalties' reactions on the
        skeleton (gravity and contact left out). At the skin's
        equilibrium (SettledSkin) the free vertices carry none, and τ is the gradient of the
        settled elastic energy in the joint angles (the envelope theorem; q̇ = v here)."""
        _, J = self.stepper.GluePoints(q)
        grad = self.stepper.fem.Gradient(np.asarray(x, float))
        tau = J.T @ grad[self.pinned]
        if self.config.penalties:  # the collisions' reactions on the skeleton, held too
            tau = tau - self.stepper.Penalties(q, np.asarray(x, float)).skeleton
        return self.model.B.T @ tau

    def SettledSkin(self, q, steps: int | None = None) -> np.ndarray:
        """(3n,) the skin at elastic equilibrium with its glue vertices on their links at q.

        A quasi-static continuation from the standing skin (zero elastic energy at q_stand):
        the skeleton moves from q_stand to q in `steps` equal steps of its coordinates (a step
        that fails is halved, up to 4 times); each step predicts the skin (below), moves the
        glue vertices onto their new points, and then solves ∇E(x) = 0 on the free vertices by
        Newton with a line search that rejects inverted elements (drakebots.fem.integrator.
        BackwardEuler with a huge step and no gravity: the inertia term only regularises).
        Gravity is left to the pass's dynamics, as for the standing start. Unlike linear blend
        skinning (PosedSkin) the result has no inverted element. With the collision penalties
        on (`CoupledFrameConfig.penalties`) the skin is then brought to its equilibrium with
        them (`_SettleAgainstPenalties`); without any penalty acting its geometry does not
        depend on Young's modulus (which scales the energy, not the equilibrium).

        Raises:
            FrameDynamicsError: an element inverts even in the smallest step.
        """
        from drakebots.fem.integrator import BackwardEuler, NewtonFailure, NewtonOptions
        from drakebots.fem.model import ElementInversion

        st, fem = self.stepper, self.stepper.fem
        # One factorisation object for every predictor: K_ff's pattern is the mesh's, so its
        # symbolic analysis (PARDISO's, or SuperLU's METIS order) is made once.
        predictor = SpdFactor("auto", NestedDissection)
        steps = int(self.config.settle_steps if steps is None else steps)
        if steps < 1:
            raise ValueError(f"SettledSkin: steps must be >= 1 (got {steps})")
        newton = BackwardEuler(
            fem,
            gravity=(0.0, 0.0, 0.0),
            fixed_vertices=st.glue.vertices,
            options=NewtonOptions(max_iterations=60, max_cuts=0),
        )
        h = 1e3  # s: M/h^2 is ~1e-6 of the stiffness
        pinned, free = self.pinned, self.free

        def Settle(x, q_from, q_to, depth):
            # Two predictors, the first without an inverted element taken: the skin carried
            # along by its links (`_Blend`: exact for a part that moves with one link, the
            # test's pads) plus the linear response of the tangent stiffness to what is left
            # of the glue's move (Δu_f = -K_ff⁻¹ K_fg Δu_g); or that linear response to the
            # whole glue move (the monster's trot, where blending the bent skin folds it).
            p_WG, _ = st.GluePoints(q_to)
            carried = self._Blend(x, q_from, q_to)
            _, _, K = fem.EnergyGradientHessian(x, project=True)
            K_f = K.tocsr()[free]
            guesses = [carried, x.copy()]
            du_g = np.column_stack([p_WG.ravel() - g[pinned] for g in guesses])
            du_f = -predictor.Factor(K_f[:, free]).solve(K_f[:, pinned] @ du_g)
            for i, g in enumerate(guesses):
                g[pinned] += du_g[:, i]
                g[free] += du_f[:, i]
            guess = next((g for g in guesses if fem.FirstInverted(g) is None), guesses[-1])
            try:  # (Newton starts from x with the glue moved if the predictor inverts)
                return newton.Step(x, (guess - x) / h, h, targets=guess)[0]
            except (ElementInversion, NewtonFailure) as e:
                if depth >= 4:
                    raise FrameDynamicsError(
                        f"settling the skin into the pass's first pose: {e}"
                    ) from e
                q_mid = 0.5 * (q_from + q_to)
                return Settle(Settle(x, q_from, q_mid, depth + 1), q_mid, q_to, depth + 1)

        x, q_last = self._StandingSkin(), self.q_stand
        for k in range(1, steps + 1):
            q_k = self.q_stand + (k / steps) * (np.asarray(q, float) - self.q_stand)
            x, q_last = Settle(x, q_last, q_k, 0), q_k
        if self.config.penalties:
            x = self._SettleAgainstPenalties(np.asarray(q, float), x)
        return x

    def _SettleAgainstPenalties(
        self,
        q,
        x,
        max_iterations: int = 30,
        tolerance: float = 1e-3,
        refresh_above: float = 0.9,
        max_stale: int = 300,
    ):
        """The skin's equilibrium with its collision penalties at q: ∇E(x) = f_pen(x) on the
        free vertices (glue held), by modified Newton on K + K_pen with a backtracking line
        search on the residual that rejects inverted elements; x unchanged where no penalty
        acts. The elastic continuation above ignores collisions, and a pass started from it
        began with skin vertices up to 9 mm inside skeleton boxes (the beetle's pieced skin at
        the walk's first pose: the leg boxes cut into the torso's piece as the hips yaw), pushed
        out in the first frames with up to 62 N on the torso. Stops at `tolerance` N on every
        free coordinate (a skin vertex weighs ~1e-4 N) or when the line search cannot lower the
        residual from a fresh matrix.

        Why modified Newton: the self-collision blocks lack their negative tangential part, so
        even full Newton converges only linearly here (the beetle's pieces: 18.6 N to 1e-3 N in
        19 iterations, ~0.6 an iteration; the monster's folded skin at its walk's first pose:
        2.45 N to 8.9e-4 N in 14, the same with the elements' exact Hessians). A fresh matrix
        (element loop, factorisation) costs about 8 times an iteration on the last one
        (gradient, penalties, one solve: 1.2 s against 0.15 s on the monster), so the factor
        is kept while an iteration lowers the residual's norm below `refresh_above` of the
        last (the break-even contraction of that cost ratio), and refreshed at the current
        iterate otherwise, or when the line search fails on it. `max_iterations` bounds the
        fresh matrices, `max_stale` the iterations on kept ones."""
        st, fem, free = self.stepper, self.stepper.fem, self.free
        factor = SpdFactor("auto", NestedDissection)  # analysis kept while the pattern stays

        def Residual(y):
            pen = st.Penalties(q, y)
            return (fem.Gradient(y) - pen.forces)[free], pen

        r, pen = Residual(x)
        fresh = stale = 0  # fresh matrices, iterations on kept ones
        refresh = True
        while True:  # ends: each pass takes a fresh matrix (at most max_iterations) or a kept one
            norm = float(np.linalg.norm(r))
            if np.abs(r).max() <= tolerance or not pen.stiffness.nnz:
                break
            fresh_now = refresh or stale >= max_stale
            if fresh_now:
                if fresh >= max_iterations:
                    break
                _, _, K = fem.EnergyGradientHessian(x, project=True)
                factor.Factor((K + pen.stiffness).tocsr()[free][:, free].tocsc())
                fresh += 1
            else:
                stale += 1
            step = -factor.solve(r)
            alpha = 1.0
            while alpha >= 1.0 / 64:
                trial = x.copy()
                trial[free] += alpha * step
                if fem.FirstInverted(trial) is None:
                    r_trial, pen_trial = Residual(trial)
                    norm_trial = float(np.linalg.norm(r_trial))
                    if norm_trial < norm:
                        break
                alpha *= 0.5
            else:
                if fresh_now:  # not even a fresh matrix lowers the residual
                    break
                refresh = True  # the kept matrix is too far from this iterate's
                continue
            x, r, pen = trial, r_trial, pen_trial
            refresh = alpha < 1.0 or norm_trial > refresh_above * norm
        self.settle_iterations = (fresh, stale)
        return x

    # ---- one frame ---------------------------------------------------------------------------
    def System(self, q: np.ndarray, v: np.ndarray) -> FrameSystem:
        """The uncondensed Eq. (2) of the frame starting at (q, v) (linearised at the predictor)."""
        m, st, h = self.model, self.stepper, self.dt
        x, w = self.SkinState(q, v)
        y0 = x + h * w
        plant, ctx = m.plant, m.context
        plant.SetPositionsAndVelocities(ctx, np.concatenate([q, v]))
        M = plant.CalcMassMatrix(ctx)
        bias = plant.CalcBiasTerm(ctx)
        tau_g = plant.CalcGravityGeneralizedForces(ctx)
        D = st.joint_damping
        A_r = M + h * np.diag(D)
        # Skin-skeleton and self-collision penalties (section 5.2: "merged into the constant
        # terms in b_r and b_d"): the skin's forces and their reactions on the skeleton, at the
        # predictor the step is linearised at; their stiffness joins A_d below (implicit on the
        # skin's side, as the coupled simulator; see the module docstring).
        penalties = st.Penalties(q + h * v, y0) if self.config.penalties else None
        b_r0 = h * (tau_g - bias - D * v + (penalties.skeleton if penalties else 0.0))
        # The skin-skeleton penalties implicit in both bodies: a vertex's force and its box's
        # reaction depend on Δu - Δt J Δv (the vertex relative to the box point), so A_d's
        # K_pen Δu has the skeleton's counterpart -Δt K_pen J Δv in the skin rows and the
        # transposed block, and Δt² Jᵀ K_pen J joins A_r. With the reaction left at the
        # predictor, the skin felt K_pen Δu less push than the skeleton's constant reaction.
        # Measured on the monster's 0.06 m/s walk on its folded 0.67 MPa skin (5.9 N·m motors):
        # from frame 6 the pass lost 20-60 N of vertical momentum a frame (the ground pushing
        # 50-60 N above the weight while the robot's momentum did not grow), the torso's
        # vertical load at the predictor alternated -201, -76, -216, -61, -239 N from frame to
        # frame (the explicit side's period-2 instability; gravity is 84 N of it) and the
        # motors chattered at their limit; with the coupling, the momentum balance closes within
        # 0.3 N and the ground force stays within 62-146 N over the first 40 frames.
        A_rr, A_dr = penalties.StepBlocks(h) if penalties is not None else (None, None)
        if A_rr is not None:
            A_r = A_r + A_rr
        p_WG, J = st.GluePoints(q + h * v)
        c = -st.glue.Residual(p_WG, y0)
        _, grad, K = st.fem.EnergyGradientHessian(y0, project=self._project)
        if getattr(self, "_inertia_damping", None) is None:
            # M_s/Δt² + D_s/Δt does not change from frame to frame: made once, as values of
            # the stiffness's own pattern (sparse sums of 4.3M entries a frame on the
            # monster's skin otherwise).
            self._inertia_damping = st.fem.PatternData(sp.diags(st.mass / h**2) + st.damping / h)
        data = K.data + self._inertia_damping
        rest = pairs = None
        if penalties is not None and penalties.stiffness.nnz:
            # The pushed vertices' blocks lie in the pattern; a self-collision pair's
            # off-diagonal blocks (two far apart vertices) do not.
            block = penalties.stiffness
            if self._low_rank_pairs and penalties.pairs is not None:
                # The Schur path takes the pairs of two free vertices as low-rank columns
                # (`_SchurCondensation`), so A_d keeps the FEM's own pattern from frame to
                # frame; a pair with a glued vertex (none on the monster's walk) stays in A_d.
                rows, values, kept = penalties.PairColumns(self._free_index)
                a, b, e, slope = penalties.pairs
                block = penalties.box_stiffness
                if not kept.all():
                    left = ~kept
                    block = block + st._VertexBlocks(
                        *PairBlocks(a[left], b[left], e[left], slope[left])
                    )
                if len(rows):
                    pairs = (self.free[rows], values)  # (free rows back to dofs)
            if block.nnz:
                extra, rest = st.fem.PatternData(block, outside=True)
                data += extra
        A_d = st.fem.PatternMatrix(data, rest)
        f_ext = st.gravity + (penalties.forces if penalties else 0.0)
        b_d0 = -(grad + st.damping @ w - f_ext)
        nu = m.nu
        E_r = np.zeros((m.nv, self.nz))
        E_r[:, :nu] = h * m.B
        E_d = sp.hstack([sp.csc_matrix((3 * self.n, nu)), self.patches.W], format="csc")
        return FrameSystem(
            A_r, A_d, h * J, self.pinned, b_r0, b_d0, c, E_r, E_d, x, y0, A_dr, pairs
        )

    def _Reduced(self, S: FrameSystem):
        """K_red (SPD, (Δu_free, Δv) order) and the blocks needed for right-hand sides.

        The skin's matrix keeps the FEM assembly's pattern from frame to frame, so K_red is
        gathered through an index map built once (SciPy's fancy indexing of a 50k-row sparse
        matrix costs more than the factorisation's symbolic analysis).
        """
        A = S.A_d
        G = S.G
        nv = G.shape[1]
        if S.A_dr is not None:
            # Rows the penalties couple to Δv: reserved as they first appear and kept (the
            # pattern then changes only when a vertex is pushed for the first time). Reserving
            # every inner-surface vertex at once made CHOLMOD's factor of the monster's folded
            # skin (19.6k such vertices) 5 times slower, penalties or not (measured).
            pushed = self._free_index[np.unique(S.A_dr.tocoo().row)]
            if not np.isin(pushed, self._reserved).all():
                self._reserved = np.union1d(self._reserved, pushed)
        pattern = (A.indptr.tobytes(), A.indices.tobytes(), self._reserved.tobytes())
        if getattr(self, "_map_pattern", None) != pattern:
            self._BuildReductionMap(A, nv)
            self._map_pattern = pattern
        r = self._reduction
        A_fP, A_PP = _PinnedBlocks(A.data, r, len(S.pinned))
        coupling = np.asarray(A_fP[r["touch"]] @ G)
        if S.A_dr is not None:  # the penalties' skin-skeleton block (candidate rows: touch)
            D = S.A_dr.tocoo()
            at = r["touch_position"][self._free_index[D.row]]  # (reserved above)
            np.add.at(coupling, (at, D.col), D.data)
        corner = S.A_r + G.T @ (A_PP @ G)
        corner = 0.5 * (corner + corner.T)
        values = np.concatenate([A.data, coupling.ravel(), corner.ravel()])
        K_red = sp.csc_matrix(
            (values[r["codes"]], r["K_indices"], r["K_indptr"]), shape=r["K_shape"]
        )
        return K_red, A_fP, A_PP

    def _BuildReductionMap(self, A: sp.csr_matrix, nv: int) -> None:
        """Index maps from (A_d.data, A_fP G, corner) to the reduced blocks' data arrays."""
        free, pinned = self.free, self.pinned
        nnz = A.nnz
        ids = sp.csr_matrix(
            (np.arange(1, nnz + 1, dtype=float), A.indices, A.indptr), shape=A.shape
        )
        ff = ids[free][:, free].tocsc()
        pinned_maps = _PinnedBlockMaps(ids, free, pinned)
        fP_indptr = pinned_maps["fP_indptr"]
        # Free rows coupled to Δv: the glue's neighbours (A_fP G) and the rows the penalties'
        # A_dr has reached so far (`_reserved`).
        touch = np.union1d(np.flatnonzero(np.diff(fP_indptr)), self._reserved)
        nf = len(free)
        touch_position = np.full(nf, -1, dtype=np.int64)
        touch_position[touch] = np.arange(len(touch))
        off_codes = (nnz + np.arange(len(touch) * nv)).astype(float) + 1
        off = sp.csc_matrix(
            (off_codes, (np.repeat(touch, nv), np.tile(np.arange(nv), len(touch)))), shape=(nf, nv)
        )
        corner_codes = (nnz + len(touch) * nv + np.arange(nv * nv) + 1).astype(float)
        corner = sp.csc_matrix(corner_codes.reshape(nv, nv))
        K = sp.bmat([[ff, off], [off.T, corner]], format="csc")
        K.sort_indices()
        self._reduction = {
            **pinned_maps,
            "touch": touch,
            "touch_position": touch_position,
            "codes": K.data.astype(np.int64) - 1,
            "K_indices": K.indices.copy(),
            "K_indptr": K.indptr.copy(),
            "K_shape": K.shape,
        }

    def _SchurBlocks(self, S: FrameSystem):
        """K_red's blocks for `_SchurCondensation`: A_ff (CSC), B's non-zero rows and values
        (the glue's A_fP G and the penalties' A_dr), the corner, and A_fP, A_PP for the
        right-hand sides. A_ff and A_fP are gathered through index maps made once per A_d
        pattern (as `_Reduced`)."""
        A = S.A_d
        G = S.G
        nv = G.shape[1]
        pattern = (A.indptr.tobytes(), A.indices.tobytes())
        if getattr(self, "_schur_pattern", None) != pattern:
            ids = sp.csr_matrix(
                (np.arange(1, A.nnz + 1, dtype=float), A.indices, A.indptr), shape=A.shape
            )
            ff = ids[self.free][:, self.free].tocsc()
            ff.sort_indices()
            pinned_maps = _PinnedBlockMaps(ids, self.free, self.pinned)
            self._schur_map = {
                "ff_src": ff.data.astype(np.int64) - 1,
                "ff_indices": ff.indices.copy(),
                "ff_indptr": ff.indptr.copy(),
                "ff_shape": ff.shape,
                **pinned_maps,
                "glue_rows": np.flatnonzero(np.diff(pinned_maps["fP_indptr"])),
            }
            self._schur_pattern = pattern
        r = self._schur_map
        A_ff = sp.csc_matrix(
            (A.data[r["ff_src"]], r["ff_indices"], r["ff_indptr"]), shape=r["ff_shape"]
        )
        A_fP, A_PP = _PinnedBlocks(A.data, r, len(S.pinned))
        glue = r["glue_rows"]
        B_rows, B_values = glue, np.asarray(A_fP[glue] @ G)
        if S.A_dr is not None:  # the penalties' skin-skeleton block, on free rows
            D = S.A_dr.tocoo()
            at = self._free_index[D.row]
            keep = at >= 0
            B_rows = np.union1d(glue, at[keep])
            values = np.zeros((len(B_rows), nv))
            values[np.searchsorted(B_rows, glue)] = B_values
            np.add.at(values, (np.searchsorted(B_rows, at[keep]), D.col[keep]), D.data[keep])
            B_values = values
        corner = S.A_r + G.T @ (A_PP @ G)
        corner = 0.5 * (corner + corner.T)
        columns = None
        if S.pairs is not None:  # the self-collision pairs' columns, on free rows
            columns = (self._free_index[S.pairs[0]], S.pairs[1])
        return A_ff, B_rows, B_values, corner, A_fP, A_PP, columns

    def _Rhs(self, S: FrameSystem, A_fP, A_PP, b_r, b_d):
        b_f = b_d[self.free]
        b_P = b_d[S.pinned]
        return np.concatenate([b_f + A_fP @ S.c, b_r + S.G.T @ (b_P + A_PP @ S.c)])

    def Linearize(self, q: np.ndarray, v: np.ndarray) -> CoupledLinearization:
        """The condensed step (Eq. 10-11): Δq and patch displacements affine in z."""
        m, h = self.model, self.dt
        t0 = time.perf_counter()
        S = self.System(q, v)
        t1 = time.perf_counter()
        schur = isinstance(self._factor, _SchurCondensation)
        if schur:
            A_ff, B_rows, B_values, corner, A_fP, A_PP, columns = self._SchurBlocks(S)
        else:
            K_red, A_fP, A_PP = self._Reduced(S)
        t2 = time.perf_counter()
        nf, nv, nu = len(self.free), m.nv, m.nu
        rhs0 = self._Rhs(S, A_fP, A_PP, S.b_r0, S.b_d0)
        try:
            if schur:
                self._factor.Factor(A_ff, B_rows, B_values, corner, columns)
                t3 = time.perf_counter()
                # The compliance (3P + nv square), the constant response's Δv and patch
                # displacements; the Schur complement is formed (and may be refused) here.
                # (W None: the patch columns the condensation holds, bordering its factor)
                C, dv0, W_du0 = self._factor.Condense(
                    None if self._factor.holds_patches else self._W_f, rhs0
                )
            else:
                self._factor.Factor(K_red)
        except NotPositiveDefinite as e:
            if self._project:
                raise FrameDynamicsError(
                    "the coupled system's matrix is not positive definite even with every "
                    "element's Hessian projected to PSD (a skin element inverted or the state is "
                    "not finite)"
                ) from e
            # A compressed element made the exact stiffness indefinite: from now on project
            # every element's Hessian to PSD (as the coupled simulator's Newton does).
            self._project = True
            return self.Linearize(q, v)
        # Outputs co-located with the inputs: patch means (rows of W on the free dofs) and Δv.
        W_f = self._W_f_sparse
        if not schur:
            t3 = time.perf_counter()
            O = sp.bmat([[W_f, None], [None, sp.identity(nv, format="csc")]], format="csc")
            C = self._factor.Compliance(O)
            sol0 = self._factor.Solve(rhs0)
            dv0, W_du0 = sol0[nf:], W_f.T @ sol0[:nf]
        t4 = time.perf_counter()
        P3 = 3 * self.num_patches
        # Inputs in the output basis: z = [τ; f] -> [f; Δt B τ].
        to_inputs = np.zeros((P3 + nv, self.nz))
        to_inputs[:P3, nu:] = np.eye(P3)
        to_inputs[P3:, :nu] = h * m.B
        # Glue coupling of the inputs' right-hand side: the torques and patch forces touch no
        # glue row (patch vertices are never glued), so the reduced right-hand side of an input
        # is exactly O · (its input vector).
        response = C @ to_inputs  # (P3 + nv, nz)
        dv_dz = response[P3:]
        # A patch moves by Wᵀ (y - x) = Wᵀ (Δt w + Δu): Δu is measured from the predictor.
        coast = self.patches.Displacements(S.y0 - S.x)
        dp0 = coast + W_du0.reshape(-1, 3)
        dp_dz = response[:P3].reshape(self.num_patches, 3, self.nz)
        dq0 = h * (v + dv0)
        dq_dz = h * dv_dz
        lin = CoupledLinearization(
            dq0=dq0,
            dq_dz=dq_dz,
            patches=self.patches.Positions(S.x),
            dp0=dp0,
            dp_dz=dp_dz,
            patch_foot=self.patch_foot,
            factor_time=t3 - t2,
            rigid_soles=self.config.foot_friction,
            system=S,
            v=np.asarray(v, float).copy(),
            coast=coast,
            timings={
                "assemble": t1 - t0,
                "reduce": t2 - t1,
                "factor": t3 - t2,
                "condense": t4 - t3,
                "total": t4 - t0,
            },
        )
        lin._reduced = (A_fP, A_PP)
        return lin

    def SolveSystem(self, lin: CoupledLinearization, z: np.ndarray):
        """(Δv, Δu, λ) of the frame for inputs z, from the frame's factorisation."""
        S = lin.system
        A_fP, A_PP = lin._reduced
        nf = len(self.free)
        b_r = S.b_r0 + S.E_r @ z
        b_d = S.b_d0 + S.E_d @ z
        rhs = self._Rhs(S, A_fP, A_PP, b_r, b_d)
        if isinstance(self._factor, _SchurCondensation):
            sol = self._factor.Solve(rhs, patch_forces=z[self.model.nu :])
        else:
            sol = self._factor.Solve(rhs)
        du_f, dv = sol[:nf], sol[nf:]
        du = np.empty(3 * self.n)
        du[self.free] = du_f
        du_P = S.G @ dv - S.c
        du[S.pinned] = du_P
        lam = A_fP.T @ du_f + A_PP @ du_P - b_d[S.pinned]
        return dv, du, lam

    def Step(self, q, v, lin: CoupledLinearization, z):
        """Applies the inputs: the skeleton's (q⁺, v⁺); records the skin state for q⁺."""
        h = self.dt
        z = np.asarray(z, float)
        dv, du, lam = self.SolveSystem(lin, z)
        v_next = v + dv
        q_next = q + h * v_next
        y = lin.system.y0 + du
        p_WG, _ = self.stepper.GluePoints(q_next)
        residual = float(np.max(np.abs(self.stepper.glue.Residual(p_WG, y)))) if len(p_WG) else 0.0
        # The linearised glue rows hold to second order; snap the glue vertices onto their link
        # points (as the coupled simulator does) so the skin stays exactly attached.
        y[self.pinned] = p_WG.ravel()
        w_next = (y - lin.system.x) / h
        key = self._Key(q_next)
        self._states[key] = (y, w_next)
        nu = self.model.nu
        start = self._Key(q)
        if self.pass_records and self.pass_records[-1][0] == start:
            self.pass_records.pop()  # the same frame solved again (RunFrameByFrame's frame 0)
        self.records[key] = StepRecord(
            glue_forces=lam.reshape(-1, 3),
            patch_forces=z[nu:].reshape(-1, 3).copy(),
            x=y,
            glue_residual=residual,
        )
        self.pass_records.append((start, q_next.copy(), self.records[key]))
        if len(self._states) > 64:
            # Keep the start and the most recent states only.
            keys = list(self._states)
            for old in keys[1:-32]:
                self._states.pop(old, None)
        return q_next, v_next

    def CouplingLoads(self, times=None):
        """The skin's coupling loads of the last pass (see `CouplingLoadsOfPass`), the
        interface alternating.RunAlternating looks for."""
        return CouplingLoadsOfPass(self, times, skin_load=self.planned_skin_load)

    # ---- references ----------------------------------------------------------------------------
    def UncondensedSolve(self, lin: CoupledLinearization, z):
        """(Δv, Δu, λ) by a direct sparse LU of the full KKT matrix of Eq. (2) (a reference)."""
        from drakebots.fem.coupling import AssembleKkt

        S = lin.system
        k = len(S.pinned)
        G_u = sp.csr_matrix((-np.ones(k), (np.arange(k), S.pinned)), shape=(k, 3 * self.n))
        KKT = AssembleKkt(S.A_r, S.SkinMatrix(), S.G, G_u, S.A_dr)
        rhs = np.concatenate([S.b_r0 + S.E_r @ z, S.b_d0 + S.E_d @ z, S.c])
        sol = spla.spsolve(KKT.tocsc(), rhs)
        nv = S.A_r.shape[0]
        return sol[:nv], sol[nv : nv + 3 * self.n], sol[nv + 3 * self.n :]

    def NewSimulator(self) -> CoupledSkinSkeleton:
        """A fresh coupled simulator (issue 5's, Newton to convergence) with this pass's skeleton,
        skin and settings, not stepped yet (for replaying a pass with a scratch of its own)."""
        st = self.stepper
        return CoupledSkinSkeleton(
            st.plant, st.instance, self.skin, st.config, skeleton=st.skeleton
        )

    def CoupledState(self, q, v) -> CoupledState:
        """The full coupled state (skeleton + skin) at (q, v) of this pass."""
        x, w = self.SkinState(q, v)
        return CoupledState(
            np.asarray(q, float).copy(), np.asarray(v, float).copy(), x.copy(), w.copy()
        )


# ----------------------------------------------------------------------------------------------
# The uncondensed QP of one labelled frame (the reference and the "without condensation" timing).


def UncondensedQp(
    qpcc,
    dyn: CoupledFrameDynamics,
    lin: CoupledLinearization,
    labels,
    q,
    q_target,
    dq_prev,
    tau_prev,
    *,
    flat_feet=(),
    support_feet=(),
):
    """Solves one labelled QP of Eq. (12) (static / breakage labels) without condensation.

    Variables: τ, the static patches' forces, Δv, Δu and the glue multipliers λ; Eq. (2) enters as
    sparse equality constraints, E_G is written on (τ, f, Δq = Δt (v + Δv)). The same QP as
    `FrameQpcc._SolveLabelled` on the condensed step, so both must give the same τ and f.

    Returns:
        dict(z (nz,), dv, du, lam, energy, time_build, time_solve, num_vars, status).
    """
    from pydrake.solvers import MathematicalProgram, SolverOptions

    t0 = time.perf_counter()
    m, h = dyn.model, dyn.dt
    S = lin.system
    nu, nv, P = m.nu, m.nv, dyn.num_patches
    n3 = 3 * dyn.n
    if any(label not in (STATIC, "", "breakage") for label in labels):
        raise ValueError("UncondensedQp handles static and breakage labels only")
    static = [p for p in range(P) if labels[p] == STATIC]
    # E_G on w = [τ; f (3P); Δv] through a linearisation whose "step" is Δq = Δt (v + Δv).
    nw = nu + 3 * P + nv
    fake = FrameLinearization(
        dq0=h * lin.v,
        dq_dz=np.hstack([np.zeros((m.nq, nu + 3 * P)), h * np.eye(nv)]),
        patches=lin.patches,
        dp0=np.zeros((P, 3)),
        dp_dz=np.zeros((P, 3, nw)),
        patch_foot=lin.patch_foot,
    )
    H, g, c = qpcc._Objective(q, fake, q_target, dq_prev, tau_prev, flat_feet, support_feet)
    # _Objective regularises everything after τ as a force: take that off the Δv block.
    reg = 2 * qpcc.config.force_regularization / (m.total_mass * m.gravity) ** 2
    H[nu + 3 * P :, nu + 3 * P :] -= reg * np.eye(nv)
    prog = MathematicalProgram()
    tau = prog.NewContinuousVariables(nu, "tau")
    # Forces only on the static patches (the others carry none).
    fs = prog.NewContinuousVariables(3 * len(static), "f")
    dv = prog.NewContinuousVariables(nv, "dv")
    du = prog.NewContinuousVariables(n3, "du")
    lam = prog.NewContinuousVariables(len(S.pinned), "lam")
    cols = np.concatenate([np.arange(3 * p, 3 * p + 3) for p in static]).astype(int)
    # w = [τ; f (all patches); Δv] = Sel [τ; f_static; Δv].
    Sel = np.zeros((nw, nu + len(cols) + nv))
    Sel[:nu, :nu] = np.eye(nu)
    Sel[nu + cols, nu + np.arange(len(cols))] = 1.0
    Sel[nu + 3 * P :, nu + len(cols) :] = np.eye(nv)
    small = np.concatenate([tau, fs, dv])
    Hs = Sel.T @ H @ Sel
    prog.AddQuadraticCost(Hs + 1e-9 * np.eye(len(small)), Sel.T @ g, c, small, is_convex=True)
    if qpcc.config.torque_limits:
        b = prog.AddBoundingBoxConstraint(-qpcc.U, qpcc.U, tau)
        b.evaluator().set_description("motor_limits")
    k = len(S.pinned)
    G_u = sp.csr_matrix((-np.ones(k), (np.arange(k), S.pinned)), shape=(k, n3))
    W_s = dyn.patches.W[:, cols]
    # Eq. (2) rows as equality constraints on [τ, f_static, Δv, Δu, λ] (Clarabel equilibrates).
    ns = len(cols)
    rows_r = sp.hstack(
        [
            sp.csr_matrix(-S.E_r[:, :nu]),
            sp.csr_matrix((nv, ns)),
            sp.csr_matrix(S.A_r),
            sp.csr_matrix((nv, n3)) if S.A_dr is None else S.A_dr.T,
            sp.csr_matrix(S.G.T),
        ]
    )
    A_dr = sp.csr_matrix((n3, nv)) if S.A_dr is None else S.A_dr
    rows_d = sp.hstack([sp.csr_matrix((n3, nu)), -W_s, A_dr, S.SkinMatrix(), G_u.T])
    rows_c = sp.hstack(
        [sp.csr_matrix((k, nu + ns)), sp.csr_matrix(S.G), G_u, sp.csr_matrix((k, k))]
    )
    A_eq = sp.vstack([rows_r, rows_d, rows_c], format="csr")
    b_eq = np.concatenate([S.b_r0, S.b_d0, S.c])
    row_scale = np.ones(A_eq.shape[0])
    A_eq = sp.diags(row_scale) @ A_eq
    allv = np.concatenate([tau, fs, dv, du, lam])
    b = prog.AddLinearEqualityConstraint(A_eq.tocsc(), b_eq * row_scale, allv)
    b.evaluator().set_description("eq2")
    # Static patches fixed (Eq. 18); the breaking ones stay above the ground. A patch moves by
    # its coast Δt Wᵀ w plus Wᵀ Δu (Δu is measured from the predictor y0 = x + Δt w).
    Wt = dyn.patches.W.T.tocsr()
    coast = lin.coast
    for p in range(P):
        if not labels[p]:
            continue
        rows = Wt[3 * p : 3 * p + 3].toarray()
        scale = rows.max()
        if labels[p] == STATIC:
            b = prog.AddLinearEqualityConstraint(rows / scale, -coast[p] / scale, du)
            b.evaluator().set_description(f"fixed[{p}]")
        else:
            b = prog.AddLinearConstraint(
                rows[2:3] / scale,
                [-(lin.patches[p, 2] + coast[p, 2]) / scale],
                [np.inf],
                du,
            )
            b.evaluator().set_description(f"no_penetration[{p}]")
    # COP over the static patches (same rows as FrameQpcc).
    if qpcc.config.cop_constraint and static:
        polygon = qpcc._Polygon(lin, static)
        if polygon is not None:
            Ah, bh = polygon.HalfSpaces(margin=qpcc.config.cop_margin)
            rows = np.zeros((len(bh), ns))
            for i, p in enumerate(static):
                rows[:, 3 * i + 2] = Ah @ lin.patches[p, :2] - bh
            rows /= m.total_mass * m.gravity
            b = prog.AddLinearConstraint(rows, np.full(len(bh), -np.inf), np.zeros(len(bh)), fs)
            b.evaluator().set_description("cop")
    t1 = time.perf_counter()
    options = SolverOptions()
    if qpcc.config.solver == "clarabel":
        # The KKT rows span ~10 orders of magnitude (skin stiffness vs foot inertia); Clarabel's
        # default static regularisation (1e-8) stops with a numerical error on them.
        options.SetOption(qpcc.solver.solver_id(), "static_regularization_constant", 1e-6)
    else:
        options = qpcc.options
    result = qpcc.solver.Solve(prog, None, options)
    t2 = time.perf_counter()
    f_all = np.zeros(3 * P)
    f_all[cols] = result.GetSolution(fs)
    z = np.concatenate([result.GetSolution(tau), f_all])
    wv = np.concatenate([z, result.GetSolution(dv)])
    return {
        "z": z,
        "dv": result.GetSolution(dv),
        "du": result.GetSolution(du),
        "lam": result.GetSolution(lam),
        "energy": float(0.5 * wv @ H @ wv + g @ wv + c),
        "time_build": t1 - t0,
        "time_solve": t2 - t1,
        "num_vars": prog.num_vars(),
        "status": str(result.get_solution_result()),
        "success": result.is_success(),
    }


def _SkinLoadToSubtract(model: SkeletonModel) -> SkinLoad:
    """The lumped skin load a default SkeletonModel of this robot carries (section 5.4)."""
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.skinned.skeleton_model import StaticSkinLoadByLinkMass

    probe = MultibodyPlant(time_step=0.0)
    instance = model.skeleton.AddTo(probe)  # the package's SDF or a user skeleton's
    probe.Finalize()
    return StaticSkinLoadByLinkMass(model.params, probe, instance)


def CouplingLoadsOfPass(dyn: CoupledFrameDynamics, times=None, *, skin_load=None):
    """The skin's effect on the skeleton over the last frame-by-frame pass, per link and frame,
    for the space-time step (section 5.1: "the coupling forces at glue vertices"; Fig. 13c).

    The wrench on link L at frame i is what the skin exerts on it through its glue vertices
    (-λ at each glue point r, Eq. 2) and, with the collision penalties on, where it presses on
    L's boxes (each pushed vertex's reaction at the frame's end state; ours: the paper's
    coupling forces are the glue's only, but a skin folded against a leg pushes on it too)
    *minus* what the space-time model already carries: the
    lumped skin weight on L (`skin_load`, default: the SkeletonModel's own, section 5.4) and, on
    a foot, the ground forces on that foot's sole patches (the space-time step has its own foot
    contact forces). What is left is the skin's elastic (and inertial) effect: it sums to nearly
    zero over the links (the skin's own momentum balance), and it is what makes a joint work
    against the skin (Fig. 17) or the skin hold the body up.

    Args:
        dyn: the dynamics after a pass (its `pass_records`).
        times: optional (K,) times, s (e.g. the space-time knots): loads at the nearest frame.
        skin_load: the lumped skin load the space-time model carries (None: the default model's;
            SkinLoad() for a bare skeleton).

    Returns:
        ExternalLoads(bodies, wrenches (K or frames, L, 6) [torque; force] about each link's
        origin in the link frame, N·m and N); None if no pass was recorded.
    """
    from drakebots.skinned.skeleton_model import ExternalLoads

    records = dyn.pass_records
    if not records:
        return None
    m = dyn.model
    if skin_load is None:
        skin_load = _SkinLoadToSubtract(m)
    plant, ctx = m.plant, m.context
    links = list(dict.fromkeys(list(dyn.skin.glue_links) + list(skin_load.masses)))
    links += [b.name() for b in m.foot_bodies if b.name() not in links]
    penalties = dyn.config.penalties
    if penalties:
        links += [name for name in dyn.stepper.box_bodies if name not in links]
    index = {name: i for i, name in enumerate(links)}
    glue_link = np.array([index[name] for name in dyn.skin.glue_links])
    g_W = np.array([0.0, 0.0, -m.gravity])
    out = np.zeros((len(records), len(links), 6))
    for i, (_, q_next, record) in enumerate(records):
        plant.SetPositions(ctx, q_next)
        poses = [plant.EvalBodyPoseInWorld(ctx, plant.GetBodyByName(n, m.instance)) for n in links]
        R = np.array([X.rotation().matrix() for X in poses])
        # Glue: force on the skeleton -λ at the glue point (link frame).
        F_L = np.einsum("kji,kj->ki", R[glue_link], -record.glue_forces)
        np.add.at(out[i, :, 3:], glue_link, F_L)
        np.add.at(out[i, :, :3], glue_link, np.cross(dyn.skin.glue_points, F_L))
        # Penalties: the reaction at each pushed vertex (link frame, about the link's origin).
        if penalties:
            for name, points, forces in dyn.stepper.Penalties(q_next, record.x).reactions:
                L = index[name]
                F = forces @ R[L]  # R_WLᵀ F per row
                r = (points - poses[L].translation()) @ R[L]
                out[i, L, 3:] += F.sum(axis=0)
                out[i, L, :3] += np.cross(r, F).sum(axis=0)
        # Minus the lumped skin weight the space-time model has on each link.
        for name, mass in skin_load.masses.items():
            L = index[name]
            F = R[L].T @ (mass * g_W)
            out[i, L, 3:] -= F
            out[i, L, :3] -= np.cross(np.asarray(skin_load.centers[name], float), F)
        # Minus the ground forces under each foot (at the patch points, link frame).
        patches = dyn.patches.Positions(record.x)
        for p, leg in enumerate(dyn.patch_foot):
            L = index[m.foot_bodies[leg].name()]
            F = R[L].T @ record.patch_forces[p]
            r = poses[L].inverse().multiply(patches[p])
            out[i, L, 3:] -= F
            out[i, L, :3] -= np.cross(r, F)
    if times is not None:
        frames = np.clip(np.round(np.asarray(times) / dyn.dt).astype(int), 0, len(records) - 1)
        out = out[frames]
    return ExternalLoads(bodies=links, wrenches=out)


def _PinnedBlockMaps(ids: sp.csr_matrix, free: np.ndarray, pinned: np.ndarray) -> dict:
    """Index maps of A_fP (CSR) and A_PP (COO) into A_d.data, from `ids` (A_d's pattern with
    1-based entry numbers as values): made once per pattern, gathered by `_PinnedBlocks`."""
    fP = ids[free][:, pinned].tocsr()
    fP.sort_indices()
    PP = ids[pinned][:, pinned].tocoo()
    return {
        "fP_src": fP.data.astype(np.int64) - 1,
        "fP_indices": fP.indices.copy(),
        "fP_indptr": fP.indptr.copy(),
        "fP_shape": fP.shape,
        "PP_rows": PP.row,
        "PP_cols": PP.col,
        "PP_src": PP.data.astype(np.int64) - 1,
    }


def _PinnedBlocks(data: np.ndarray, maps: dict, k: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """(A_fP, A_PP) gathered from A_d.data through `_PinnedBlockMaps`' maps."""
    A_fP = sp.csr_matrix(
        (data[maps["fP_src"]], maps["fP_indices"], maps["fP_indptr"]), shape=maps["fP_shape"]
    )
    A_PP = sp.csr_matrix((data[maps["PP_src"]], (maps["PP_rows"], maps["PP_cols"])), shape=(k, k))
    return A_fP, A_PP


def _CheckHalfSolve(name: str, gram: np.ndarray, columns, solve, rng) -> None:
    """A Gram matrix Rᵀ A⁻¹ R made by forward half-solves has no residual of its own: one random
    combination of its columns is checked against a full solve (itself checked by its backward
    error); they must agree to `COMPLIANCE_TOLERANCE`, else `InaccurateSolve`. `columns`: R, or
    a tuple of blocks (dense or sparse) whose columns side by side are R."""
    blocks = columns if isinstance(columns, tuple) else (columns,)
    sizes = np.cumsum([b.shape[1] for b in blocks])
    weights = rng.standard_normal(sizes[-1])
    parts = np.split(weights, sizes[:-1])
    x = solve(sum(np.asarray(b @ w).ravel() for b, w in zip(blocks, parts)))
    reference = np.concatenate([np.asarray(b.T @ x).ravel() for b in blocks])
    difference = np.abs(gram @ weights - reference).max()
    scale = np.abs(reference).max()
    if not difference <= COMPLIANCE_TOLERANCE * scale:
        raise InaccurateSolve(
            f"{name}: the compliance's half-solve disagrees with a full solve by "
            f"{difference / scale:.2e} (tolerance {COMPLIANCE_TOLERANCE:.0e})"
        )
