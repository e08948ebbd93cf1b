"""The space-time program of Eq. (9), evaluated in one vectorised pass (for the Gauss-Newton SQP).

`MakeSpaceTimeProgram` (drakebots.skinned.space_time) states the problem as a
MathematicalProgram with one named binding per term and knot: that is the definition, what
SNOPT/IPOPT solve, and what every answer is checked against (`prog.CheckSatisfied`). Building a
QP from thousands of bindings every Gauss-Newton iteration costs seconds in Python, though, so
`SpaceTimeNlp` evaluates the *same* terms knot by knot into flat arrays and sparse Jacobians:

- kinematics once per knot (COM, sole centres, sole normals and their Jacobians from Drake);
- inverse dynamics of all knots in one batched pass with exact partials
  (`SkeletonModel.InverseDynamicsBatch`, drakebots.optimization.tree_inverse_dynamics), shared
  by the momentum constraint (Eq. 7) and the torque cost (E_τ);
- the quadratic terms (E_S, E_F, the torso-attitude term) and the periodic/rest constraints as
  constant sparse rows;
- bounds (joint limits, F_z >= 0, no wrench on a swing foot) and friction cones (Eq. 8) exactly.

tests/skinned/test_design.py checks cost and constraint values against the
MathematicalProgram's own bindings at random points, and the Jacobians against finite
differences.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from pydrake.multibody.tree import JacobianWrtVariable

from drakebots.optimization.gauss_newton import LeastSquaresNlp, NlpEvaluation
from drakebots.skinned.skeleton_model import NUM_BASE, SOLE_SOFTNESS
from drakebots.skinned.space_time_terms import (
    CoordinateScale,
    MotorLoad,
    SoleLaw,
    SolePatchPoints,
    SoleStiffness,
)


class _Coo:
    """Accumulates a sparse matrix's triplets block by block.

    Given the `_Pattern` of an earlier matrix built by the same sequence of blocks (the space-time
    Jacobians' sparsity does not change between evaluations), only the values are collected and
    the CSR arrays are reused: no per-block index arrays, no COO-to-CSR sort.
    """

    def __init__(self, pattern=None):
        self.rows, self.cols, self.vals = [], [], []
        self.count = 0
        self.pattern = pattern

    def Add(self, values, cols):
        """Appends rows `values` (m, len(cols)) at the next m rows; returns the first row."""
        values = np.atleast_2d(values)
        m = values.shape[0]
        first = self.count
        if values.size:
            self.vals.append(values.ravel())
            if self.pattern is None:
                self.rows.append(np.repeat(np.arange(first, first + m), values.shape[1]))
                self.cols.append(np.tile(np.asarray(cols, int), m))
        self.count += m
        return first

    def AddBlocks(self, values, cols):
        """Appends P blocks of m rows: block p is values[p] (m, w) at columns cols[p] (w,).
        Returns the first row (block p's rows are first + p m .. first + (p + 1) m)."""
        P, m, w = values.shape
        first = self.count
        if values.size:
            self.vals.append(values.ravel())
            if self.pattern is None:
                self.rows.append(np.repeat(np.arange(first, first + P * m), w))
                self.cols.append(np.repeat(np.asarray(cols, int)[:, None, :], m, axis=1).ravel())
        self.count += P * m
        return first

    def AddTo(self, first, values, cols):
        """Adds `values` into rows first.. (for rows that depend on several variable groups)."""
        values = np.atleast_2d(values)
        m = values.shape[0]
        self.vals.append(values.ravel())
        if self.pattern is None:
            self.rows.append(np.repeat(np.arange(first, first + m), values.shape[1]))
            self.cols.append(np.tile(np.asarray(cols, int), m))

    def Matrix(self, n):
        if not self.vals:
            return sp.csr_matrix((self.count, n))
        vals = np.concatenate(self.vals)
        pattern = self.pattern
        if pattern is not None and pattern.Fits(self.count, n, len(vals)):
            return pattern.Matrix(vals)
        if pattern is not None:  # the blocks changed: Evaluate starts over without patterns
            raise _PatternChanged
        rows, cols = np.concatenate(self.rows), np.concatenate(self.cols)
        self.pattern = _Pattern(rows, cols, self.count, n)
        return self.pattern.Matrix(vals)


class _PatternChanged(Exception):
    pass


class _Pattern:
    """The CSR structure of a matrix given as triplets in a fixed order (duplicates summed, in
    the order given, as scipy's COO-to-CSR conversion does)."""

    def __init__(self, rows, cols, m, n):
        keys = rows.astype(np.int64) * n + cols
        unique, self.inverse = np.unique(keys, return_inverse=True)
        self.indices = (unique % n).astype(np.int32)
        self.indptr = np.zeros(m + 1, dtype=np.int32)
        np.cumsum(np.bincount(unique // n, minlength=m), out=self.indptr[1:])
        self.shape = (m, n)
        self.size = len(rows)

    def Fits(self, m, n, size):
        return self.shape == (m, n) and self.size == size

    def Matrix(self, vals):
        data = np.bincount(self.inverse, weights=vals, minlength=len(self.indices))
        return sp.csr_matrix((data, self.indices.copy(), self.indptr.copy()), shape=self.shape)


def _SoleLowest(z, Jz, softness=SOLE_SOFTNESS):
    """SkeletonModel.SoleLowest from the four corner heights z (4,) and their gradients (4, nq):
    the smooth minimum -s log(Σ exp(-z / s) / 4) and its gradient."""
    w = np.exp(-(z - z.min()) / softness)
    total = w.sum()
    return z.min() - softness * (np.log(total) - np.log(len(z))), (w / total) @ Jz


def _Skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


class SpaceTimeNlp(LeastSquaresNlp):
    """The space-time problem of a `SpaceTimeProblem` as a vectorised least-squares NLP.

    Args:
        problem: from `MakeSpaceTimeProgram` (its variable layout is used as is).
    """

    def __init__(self, problem):
        self.problem = problem
        P = problem
        self.model = model = P.model
        prog, V, T = P.prog, P.vars, P.targets
        self.K = K = len(V.knot_times)
        nq = model.nq
        n = prog.num_vars()
        self.num_vars = n
        find = prog.FindDecisionVariableIndices
        self.iq = np.array([find(V.q[k]) for k in range(K)], dtype=int)
        self.iF = np.array([find(V.force[k].ravel()) for k in range(K)], dtype=int).reshape(K, 4, 3)
        self.iT = np.array([find(V.torque[k].ravel()) for k in range(K)], dtype=int).reshape(
            K, 4, 3
        )
        self.iN = (
            None
            if V.patch is None
            else np.array([find(V.patch[k].ravel()) for k in range(K)], dtype=int).reshape(K, 4, 5)
        )
        self.patch_points = [SolePatchPoints(model, j) for j in range(4)]
        self._patch_T = [np.ascontiguousarray(p.T) for p in self.patch_points]
        # The same points in the frames of the batched kinematics' links (for `Curvature`).
        self._patch_slots = []
        for j in range(4):
            slot, X_SB = model.batch_dynamics.BodySlot(model.foot_bodies[j].index())
            self._patch_slots.append(
                (slot, (X_SB.GetAsMatrix4() @ np.vstack([self._patch_T[j], np.ones(5)]))[:3].T)
            )
        self._frames = [body.body_frame() for body in model.foot_bodies]
        self._world = model.plant.world_frame()
        self._sole_force_row = np.array([[1.0, -1.0, -1.0, -1.0, -1.0, -1.0]])
        self._eye5 = np.eye(5)
        self._zero_jc = np.zeros((3, model.nq))
        self._zero_j = np.zeros((4, 5, 3, model.nq))
        self._zero_jn = np.zeros((4, 3, model.nq))
        if self.iN is not None:
            self.sole_k = SoleStiffness(model, P.config.sole_compression)
            self.sole_width = P.config.sole_smoothing * P.config.sole_compression
        cfg = P.config
        W = cfg.weights
        ls = cfg.length_scale
        fpk = P.frames_per_knot
        self.dynamics = cfg.dynamics
        self.c_com = np.sqrt(W.com * fpk) / ls
        self.c_ee = np.sqrt(W.end_effector * fpk) / ls
        self.c_o = np.sqrt(W.orientation * fpk)
        self.c_t = np.sqrt(W.torque * fpk) / model.nu
        self.fs, self.ts = V.force_scale, V.torque_scale
        self.weight = model.total_mass * model.gravity
        # Bounds.
        lower = np.full(n, -np.inf)
        upper = np.full(n, np.inf)
        for k in range(K):
            lower[self.iq[k]] = model.q_lower
            upper[self.iq[k]] = model.q_upper
        cone_rows = []
        for k in range(K):
            for j in range(4):
                wrench = np.concatenate([self.iF[k, j], self.iT[k, j]])
                if not cfg.dynamics or not T.contact[j, k]:
                    lower[wrench] = 0.0
                    upper[wrench] = 0.0
                    if self.iN is not None:
                        lower[self.iN[k, j]] = upper[self.iN[k, j]] = 0.0
                else:
                    lower[self.iF[k, j, 2]] = 0.0
                    cone_rows.append(self.iF[k, j])

        self.lower, self.upper = lower, upper
        mu = P.friction
        if cone_rows:
            idx = np.array(cone_rows)  # (c, 3): Fx, Fy, Fz
            c = len(idx)
            rows = np.arange(3 * c)
            cols = np.column_stack([idx[:, 2], idx[:, 0], idx[:, 1]]).ravel()
            vals = np.tile([mu, 1.0, 1.0], c)
            self.cone_A = sp.csr_matrix((vals, (rows, cols)), (3 * c, n))
            self.cone_b = np.zeros(3 * c)
        else:
            self.cone_A, self.cone_b = None, None
        # Constant (linear) residual rows: smoothness, torso attitude, posture, follow.
        lin = _Coo()
        offsets = []
        scale = CoordinateScale(model, ls)  # E_F, as AddFollowCost
        c_s = np.sqrt(W.smoothness * fpk / fpk**4)
        smooth = CoordinateScale(model, ls, cfg.smoothness_angle_scale)  # E_S, as AddSmoothnessCost
        block = np.hstack([np.diag(smooth), -2 * np.diag(smooth), np.diag(smooth)]) * c_s
        for k in range(1, K - 1):
            lin.Add(block, np.concatenate([self.iq[k - 1], self.iq[k], self.iq[k + 1]]))
            offsets.append(np.zeros(nq))
        if P.periodic and K > 2:  # knot 0 between q^{K-2} - displacement and q^1
            lin.Add(block, np.concatenate([self.iq[K - 2], self.iq[0], self.iq[1]]))
            offsets.append(c_s * smooth * T.displacement)
        c_a = np.sqrt(W.base_attitude * fpk)
        for k in range(K):
            lin.Add(np.eye(3) * c_a, self.iq[k, 3:6])
            offsets.append(c_a * np.array([T.base_yaw[k], 0.0, 0.0]))
        idx = model.body_joint_indices
        if W.posture > 0.0 and idx.size:
            c_p = np.sqrt(W.posture * fpk)
            for k in range(K):
                lin.Add(np.eye(idx.size) * c_p, self.iq[k, idx])
                offsets.append(np.zeros(idx.size))
        if P.q_follow is not None:
            c_f = np.sqrt(P.follow_weight * fpk)
            for k in range(K):
                lin.Add(np.diag(scale) * c_f, self.iq[k])
                offsets.append(c_f * scale * P.q_follow[k])
        self.L = lin.Matrix(n)
        self.l0 = np.concatenate(offsets)
        # Constant equality rows: periodic (Eq. 6) or rest at both ends.
        eq = _Coo()
        rhs = []
        if P.periodic:
            eq.Add(np.hstack([np.eye(nq), -np.eye(nq)]), np.concatenate([self.iq[-1], self.iq[0]]))
            rhs.append(T.displacement)
            self.linear_eq_name = "periodic"
        else:
            for a, b in ((0, 1), (K - 2, K - 1)):
                eq.Add(
                    np.hstack([np.eye(nq), -np.eye(nq)]), np.concatenate([self.iq[a], self.iq[b]])
                )
                rhs.append(np.zeros(nq))
            self.linear_eq_name = "rest"
        self.E = eq.Matrix(n)
        self.e0 = np.concatenate(rhs)
        self.H, self.g = None, None
        # The polygons' half-spaces per knot.
        self.halfspaces = [
            None if poly is None else poly.HalfSpaces(margin=cfg.cop_margin) for poly in T.polygons
        ]
        self.targets = T
        # The stance feet as (knots, feet), knot-major: the soft sole's row blocks' order.
        self._stance = np.nonzero(np.asarray(T.contact).T)
        self.eq_names, self.in_names = [], []
        self._patterns = (None, None, None)  # the Jacobians' CSR structures (first Evaluate)
        self._DryRun()

    # ------------------------------------------------------------------------------------------

    def _DryRun(self):
        """Evaluates once at zero to lay out the named rows."""
        x = np.zeros(self.num_vars)
        x[self.iq] = self.model.q_home
        self._names = True
        self.Evaluate(x, False)
        self._names = False
        self._rows_eq, self._rows_cop, self._rows_height_in = [], [], []
        self._rows_clear, self._rows_moment, self._rows_law = [], [], []

        def indices(name):
            return tuple(int(t) for t in name[name.index("[") + 1 : -1].split(","))

        for name, first, end in self.eq_names:
            if name.startswith("contact_"):
                k, j = indices(name)
                kind = "height" if name.startswith("contact_height") else "still"
                self._rows_eq.append((kind, k, j, first, end))
            elif name.startswith("sole_moment["):
                self._rows_moment.append((*indices(name), first, end))
            elif name.startswith("sole_law["):
                self._rows_law.append((*indices(name), first, end))
        # The sole law rows n - f(z(q)) = 0 give each patch force explicitly (coefficient 1):
        # the QP substitutes them (gauss_newton._Qp), a third fewer variables and rows.
        if self._rows_law:
            self.explicit_rows = (
                np.concatenate([np.arange(first, end) for _, _, first, end in self._rows_law]),
                np.concatenate([self.iN[k, j] for k, j, _, _ in self._rows_law]),
            )
        for name, first, end in self.in_names:
            if name.startswith("contact_height["):
                self._rows_height_in.append((*indices(name), first, end))
            elif name.startswith("cop["):
                self._rows_cop.append((int(name[4:-1]), first, end))
            elif name.startswith("clearance["):
                k, j = (int(t) for t in name[name.index("[") + 1 : -1].split(","))
                self._rows_clear.append((k, j, first, end))

    def _Kinematics(self, q, jacobians):
        """Everything Evaluate needs at one knot, one Drake call per foot and quantity:
        (com (3,), J_com (3, nq), sole centres (4, 3), their Jacobians (4, 3, nq), normals (4, 3),
        their Jacobians (4, 3, nq), patch points (4, 5, 3), their Jacobians (4, 5, 3, nq)).
        Without `jacobians` the Jacobians are zeros (never read)."""
        model = self.model
        plant, context, world = model.plant, model.context, self._world
        nq = model.nq
        plant.SetPositions(context, q)
        kV = JacobianWrtVariable.kV
        com = plant.CalcCenterOfMassPositionInWorld(context)
        pts = np.empty((4, 5, 3))
        nrm = np.empty((4, 3))
        if jacobians:
            Jc = plant.CalcJacobianCenterOfMassTranslationalVelocity(context, kV, world, world)
            J = np.empty((4, 5, 3, nq))
            Jn = np.empty((4, 3, nq))
        else:
            Jc, J, Jn = self._zero_jc, self._zero_j, self._zero_jn
        for j in range(4):
            frame, points = self._frames[j], self._patch_T[j]
            pts[j] = plant.CalcPointsPositions(context, frame, points, world).T
            R = plant.CalcRelativeTransform(context, world, frame).rotation().matrix()
            nrm[j] = R[:, 2]
            if jacobians:
                J[j] = plant.CalcJacobianTranslationalVelocity(
                    context, kV, frame, points, world, world
                ).reshape(5, 3, nq)
                Jw = plant.CalcJacobianAngularVelocity(context, kV, frame, world, world)
                Jn[j] = -_Skew(nrm[j]) @ Jw  # d n / dt = ω × n (SkeletonModel.FootNormal)
        return com, Jc, pts[:, 4], J[:, 4], nrm, Jn, pts, J

    def Curvature(self, x, lam_eq, lam_in):
        """Σ λ_i ∇²c_i over the kinematic constraints (contact, COP), the part of the
        Lagrangian's Hessian that Gauss-Newton's JᵀJ leaves out, projected to PSD per knot.

        Every such constraint at knot k is linear in that knot's sole centres p_j(q_k) and COM
        (for the COP with forces held fixed), so Σ λ_i c_i = Σ_k s_k(q_k) with
        s_k = Σ_j μ_kj·p_j(q_k) + ν_k·com(q_k); the 18 x 18 Hessian of each s_k is a forward
        difference of its exact gradient Σ_j J_j(q)ᵀ μ_kj + J_com(q)ᵀ ν_k. Without it the SQP
        crawls along curved constraints (a foot held on the ground while the leg turns).

        Cost: the nq + 1 configurations of every knot go through the tree's batched kinematics
        at once (`BatchInverseDynamics.Poses`, `.JacobianTransposeTimes`,
        `.ComJacobianTransposeTimes`: Σ Jᵀw without forming J); then the q-dependent weights
        (smooth lowest corner, sole law) per knot. Checked against central differences of
        Evaluate's Jacobians in test_space_time_nlp.py.
        """
        model, K = self.model, self.K
        mu = np.zeros((K, 4, 3))
        nu = np.zeros((K, 3))
        heights = np.zeros((K, 4))
        for kind, k, j, first, end in self._rows_eq:
            lam = lam_eq[first:end]
            if kind == "height":
                heights[k, j] += lam[0]
            else:  # still: p_kj,xy - p_k-1,j,xy
                mu[k, j, :2] += lam
                mu[k - 1, j, :2] -= lam
        for k, j, first, _end in self._rows_height_in:  # soft sole: lowest corner <= 0
            heights[k, j] += lam_in[first]
        # Σ λ c over rows that are linear in the world positions of the sole patches (four
        # corners, then the centre; with the other variables held): a weight vector per patch.
        patch_w = np.zeros((K, 4, 5, 3))
        for k, j, first, end in self._rows_clear:  # c = -z_corner
            patch_w[k, j, :4, 2] -= lam_in[first:end]
        if self._rows_moment:
            N = x[self.iN] * self.fs
            for k, j, first, end in self._rows_moment:
                lam = lam_eq[first:end] / self.fs
                # c_x = ... - Σ n r_y, c_y = ... + Σ n r_x, r = patch - centre.
                w = np.outer(N[k, j], [lam[1], -lam[0], 0.0])
                patch_w[k, j] += w
                patch_w[k, j, 4] -= w.sum(axis=0)
        # The sole law rows c = n - f(z(q)): -λ f'(z(q)) ∇z(q) in the gradient (exact in q).
        law = np.zeros((K, 4, 5))
        for k, j, first, end in self._rows_law:
            law[k, j] = lam_eq[first:end]
        for k, first, end in self._rows_cop:
            lam = lam_in[first:end]
            A, _ = self.halfspaces[k]
            if not self.dynamics:
                nu[k, :2] += A.T @ lam
                continue
            f = x[self.iF[k]] * self.fs
            m = np.array([A[:, 1] @ lam, -(A[:, 0] @ lam), 0.0]) / self.fs
            for j in np.flatnonzero(self.targets.contact[:, k]):
                mu[k, j] += _Skew(f[j]) @ m
        rows, cols, vals = [], [], []
        eps = 1e-6
        nq = model.nq
        # The knots with any curved row, and their feet.
        active = []
        for k in range(K):
            feet = np.flatnonzero(
                np.any(mu[k], axis=1)
                | (heights[k] != 0.0)
                | np.any(patch_w[k], axis=(1, 2))
                | np.any(law[k], axis=1)
            )
            if len(feet) or np.any(nu[k]):
                active.append((k, feet))
        if active:
            # The configurations of each knot's forward differences (q, then q + ε e_i), all
            # knots in one batch of the tree's kinematics (`BatchInverseDynamics`).
            steps = np.vstack([np.zeros(nq), eps * np.eye(nq)])
            S = len(steps)
            Q = np.concatenate([x[self.iq[k]] + steps for k, _ in active])
            tid = model.batch_dynamics
            poses = tid.Poses(Q)
            pts = [tid.Points(poses, slot, p) for slot, p in self._patch_slots]  # (B, 5, 3) each
            # Weights on the five patch points' world coordinates (corners, then the centre):
            # μ on the centre, the moment rows' weights, and the q-dependent ones of the
            # smooth lowest corner (SkeletonModel.SoleLowest) and of the sole law.
            W = np.zeros((len(Q), 4, 5, 3))
            NU = np.zeros((len(Q), 3))
            for a, (k, feet) in enumerate(active):
                block = slice(a * S, (a + 1) * S)
                NU[block] = nu[k]
                if not len(feet):
                    continue
                Z = np.stack([pts[j][block, :, 2] for j in feet], axis=1)  # (S, F, 5)
                Wk = np.broadcast_to(patch_w[k, feet], (S, len(feet), 5, 3)).copy()
                Wk[:, :, 4] += mu[k, feet]
                corners = Z[:, :, :4]
                e = np.exp(-(corners - corners.min(axis=2, keepdims=True)) / SOLE_SOFTNESS)
                Wk[:, :, :4, 2] += (
                    heights[k, feet][None, :, None] * e / e.sum(axis=2, keepdims=True)
                )
                if np.any(law[k, feet]):
                    d1 = SoleLaw(Z, self.sole_k, self.sole_width, self.fs)[1]
                    Wk[:, :, :, 2] -= law[k, feet][None] * d1
                W[block, feet] = Wk
            # The gradients g(q) = Σ_j Jp_j(q)ᵀ w_j(q) + J_com(q)ᵀ ν_k of every configuration.
            G = tid.ComJacobianTransposeTimes(poses, NU)
            for j, (slot, _) in enumerate(self._patch_slots):
                if np.any(W[:, j]):
                    G += tid.JacobianTransposeTimes(poses, slot, pts[j], W[:, j])
            for a, (k, _) in enumerate(active):
                Gk = G[a * S : (a + 1) * S]
                Hk = ((Gk[1:] - Gk[0]) / eps).T
                Hk = 0.5 * (Hk + Hk.T)
                w, V = np.linalg.eigh(Hk)
                Hk = (V * np.maximum(w, 0.0)) @ V.T
                idx = self.iq[k]
                rows.append(np.repeat(idx, model.nq))
                cols.append(np.tile(idx, model.nq))
                vals.append(Hk.ravel())
        n = self.num_vars
        if not rows:
            return sp.csr_matrix((n, n))
        return sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), (n, n)
        )

    def Unpack(self, x):
        """(q (K, nq), forces (K, 4, 3) N, contact torques (K, 4, 3) N·m)."""
        return x[self.iq], x[self.iF] * self.fs, x[self.iT] * self.ts

    def UnpackPatches(self, x):
        """(K, 4, 5) normal forces at the sole patches, N (None without the soft sole)."""
        return None if self.iN is None else x[self.iN] * self.fs

    def KnotsDynamics(self, x, knots, jacobians):
        """Inverse dynamics at the given knots (central differences of q) in one batched pass
        (`SkeletonModel.InverseDynamicsBatch`): τ (m, nv), d τ / d x (m, nv, 3 nv + 24; dense
        over each knot's variables q_prev, q_k, q_next, F_k, T_k) or None, and those variables'
        indices (m, 3 nv + 24)."""
        P, model = self.problem, self.model
        h, n = P.h, model.nq
        m = len(knots)
        q0, q1, q2 = np.empty((m, n)), np.empty((m, n)), np.empty((m, n))
        cols = np.empty((m, 3 * n + 24), dtype=int)
        for r, k in enumerate(knots):
            prev, next_, shift_prev, shift_next = P.cache.Neighbours(k)
            q0[r] = x[self.iq[prev]] + shift_prev
            q1[r] = x[self.iq[k]]
            q2[r] = x[self.iq[next_]] + shift_next
            cols[r] = np.concatenate(
                [self.iq[prev], self.iq[k], self.iq[next_], self.iF[k].ravel(), self.iT[k].ravel()]
            )
        v = (q2 - q0) / (2 * h)
        a = (q2 - 2 * q1 + q0) / h**2
        f = x[self.iF[knots]] * self.fs  # (m, 4, 3)
        t = x[self.iT[knots]] * self.ts
        wrenches = np.concatenate([t, f], axis=2)
        body = None
        if P.loads is not None:
            loads = np.asarray(P.loads.wrenches)[knots]  # (m, bodies, 6)
            body = [(name, loads[:, b]) for b, name in enumerate(P.loads.bodies)]
        if not jacobians:
            return model.InverseDynamicsBatch(q1, v, a, wrenches, body, partials=False), None, cols
        tau, Gq, Gv, Ga, Gw = model.InverseDynamicsBatch(q1, v, a, wrenches, body, partials=True)
        J = np.empty((m, n, 3 * n + 24))
        J[:, :, :n] = -Gv / (2 * h) + Ga / h**2
        J[:, :, n : 2 * n] = Gq - 2 * Ga / h**2
        J[:, :, 2 * n : 3 * n] = Gv / (2 * h) + Ga / h**2
        Gw = Gw.reshape(m, n, 4, 6)
        J[:, :, 3 * n : 3 * n + 12] = Gw[..., 3:].reshape(m, n, 12) * self.fs
        J[:, :, 3 * n + 12 :] = Gw[..., :3].reshape(m, n, 12) * self.ts
        return tau, J, cols

    def _SoleRows(self, x, pts, Jpts, equalities, jacobians=True):
        """The soft sole's rows of every stance foot (AddSoleContactConstraints), from the
        feet's patch points (K, 4, 5, 3) and their Jacobians (K, 4, 5, 3, nq) (corners, then
        the centre): sole_force, sole_moment and sole_law blocks, one per stance foot and knot
        in `self._stance` order."""
        fs, ts, nq = self.fs, self.ts, self.model.nq
        k, j = self._stance
        iN, iF, iT, iq = self.iN[k, j], self.iF[k, j], self.iT[k, j], self.iq[k]
        S = len(k)
        n = x[iN]  # (S, 5)
        pts = pts[k, j]  # (S, 5, 3)
        force = (x[iF[:, 2]] - n.sum(axis=1))[:, None]
        J = np.broadcast_to(self._sole_force_row, (S, 1, 6)) if jacobians else None
        equalities("sole_force", force, J, np.hstack([iF[:, 2:3], iN]))
        r = pts - pts[:, 4:5]  # space_time.PatchOffsets
        t = x[iT]
        value = np.stack(
            [
                t[:, 0] * ts - fs * np.einsum("si,si->s", n, r[:, :, 1]),
                t[:, 1] * ts + fs * np.einsum("si,si->s", n, r[:, :, 0]),
                t[:, 2] * ts,
            ],
            axis=1,
        )
        J = None
        if jacobians:
            Jp = Jpts[k, j]  # (S, 5, 3, nq)
            Jr = Jp - Jp[:, 4:5]
            J = np.zeros((S, 3, nq + 8))
            J[:, 0, :nq] = -fs * np.einsum("si,siq->sq", n, Jr[:, :, 1])
            J[:, 1, :nq] = fs * np.einsum("si,siq->sq", n, Jr[:, :, 0])
            J[:, 0, nq : nq + 5] = -fs * r[:, :, 1]
            J[:, 1, nq : nq + 5] = fs * r[:, :, 0]
            J[:, 0, nq + 5] = J[:, 1, nq + 6] = J[:, 2, nq + 7] = ts
            J /= fs
        equalities("sole_moment", value / fs, J, np.hstack([iq, iN, iT]))
        f, d1, _ = SoleLaw(pts[:, :, 2], self.sole_k, self.sole_width, fs)
        J = None
        if jacobians:
            J = np.concatenate(
                [-d1[:, :, None] * Jp[:, :, 2], np.broadcast_to(self._eye5, (S, 5, 5))], axis=2
            )
        equalities("sole_law", n - f, J, np.hstack([iq, iN]))

    def Evaluate(self, x, jacobians):
        try:
            return self._Evaluate(x, jacobians)
        except _PatternChanged:
            self._patterns = (None, None, None)
            return self._Evaluate(x, jacobians)

    def _Evaluate(self, x, jacobians):
        P, model, T = self.problem, self.model, self.targets
        K, n = self.K, self.num_vars
        naming = getattr(self, "_names", False)
        Q = x[self.iq]
        kin = [self._Kinematics(Q[k], jacobians) for k in range(K)]
        patterns = self._patterns if jacobians else (None, None, None)
        R, Req, Rin = (_Coo(pattern) for pattern in patterns)
        r, ceq, cin = [], [], []
        eq_names, in_names = [], []
        up = np.array([0.0, 0.0, 1.0])

        def residual(name, value, jac, cols):
            first = R.Add(
                jac if jacobians else np.zeros((len(value), 0)), cols if jacobians else []
            )
            r.append(value)
            return first

        def equality(name, value, jac, cols):
            first = Req.Add(
                jac if jacobians else np.zeros((len(value), 0)), cols if jacobians else []
            )
            ceq.append(value)
            if naming:
                eq_names.append((name, first, first + len(value)))
            return first

        def equalities(name, values, jac, cols):
            """Blocks of rows named name[k,j] for the stance feet (`self._stance` order)."""
            S, m = values.shape
            first = Req.AddBlocks(
                jac if jacobians else np.zeros((S, m, 0)), cols if jacobians else np.zeros((S, 0))
            )
            ceq.append(values.ravel())
            if naming:
                for p, (k, j) in enumerate(zip(*self._stance)):
                    eq_names.append((f"{name}[{k},{j}]", first + p * m, first + (p + 1) * m))
            return first

        def inequality(name, value, jac, cols):
            first = Rin.Add(
                jac if jacobians else np.zeros((len(value), 0)), cols if jacobians else []
            )
            cin.append(value)
            if naming:
                in_names.append((name, first, first + len(value)))
            return first

        # E_COM, E_EE, E_O (Eq. 3).
        for k in range(K):
            com, Jc, p, Jp, nrm, Jn = kin[k][:6]
            cols = self.iq[k]
            residual(f"com[{k}]", self.c_com * (com - T.com[k]), self.c_com * Jc, cols)
            residual(
                f"end_effectors[{k}]",
                self.c_ee * (p - T.feet[:, k]).ravel(),
                self.c_ee * Jp.reshape(12, -1),
                cols,
            )
            legs = np.flatnonzero(T.orientation_active[:, k])
            if len(legs):
                residual(
                    f"foot_flat[{k}]",
                    self.c_o * (nrm[legs] - up).ravel(),
                    self.c_o * Jn[legs].reshape(3 * len(legs), -1),
                    cols,
                )
        # Contact (Eq. 4).
        for k in range(K):
            _, _, p, Jp, _, _, pts, Jpts = kin[k]
            for j in range(4):
                if not T.contact[j, k]:
                    continue
                h, dh = _SoleLowest(pts[j, :4, 2], Jpts[j, :4, 2])
                if self.iN is not None:  # soft sole: at or below the ground
                    inequality(f"contact_height[{k},{j}]", np.array([h]), dh[None], self.iq[k])
                else:
                    equality(f"contact_height[{k},{j}]", np.array([h]), dh[None], self.iq[k])
                if k > 0 and T.contact[j, k - 1]:
                    p0, J0 = kin[k - 1][2][j], kin[k - 1][3][j]
                    equality(
                        f"contact_still[{k},{j}]",
                        p[j, :2] - p0[:2],
                        np.hstack([-J0[:2], Jp[j, :2]]),
                        np.concatenate([self.iq[k - 1], self.iq[k]]),
                    )
        # Swing feet: every sole corner above the ground (ours; space_time.AddClearanceConstraints).
        for k in range(K):
            for j in np.flatnonzero(~T.contact[:, k]):
                pts, Jpts = kin[k][6][j], kin[k][7][j]
                inequality(f"clearance[{k},{j}]", -pts[:4, 2], -Jpts[:4, 2], self.iq[k])
        # Dynamics: momentum (Eq. 7) and E_τ.
        if self.dynamics:
            sel = model.actuated_indices
            U = P.effort_limits
            limit = P.config.motor_limit_fraction
            taus, Js, colss = self.KnotsDynamics(x, list(P.interior), jacobians)
            for row, k in enumerate(P.interior):
                tau, J, cols = taus[row], None if Js is None else Js[row], colss[row]
                equality(
                    f"momentum[{k}]",
                    tau[:NUM_BASE] / self.weight,
                    None if J is None else J[:NUM_BASE] / self.weight,
                    cols,
                )
                # Motor torques in units of U_m, for E_τ and the optional motor-limit rows.
                a = tau[sel] / U
                Ja = None if J is None else J[sel] / U[:, None]
                residual(f"torque[{k}]", self.c_t * a, None if Ja is None else self.c_t * Ja, cols)
                if limit > 0.0:  # space_time.AddMotorLimitConstraints
                    load, grad = MotorLoad(a, Ja)
                    inequality(
                        f"motor_limits[{k}]",
                        np.array([load - limit]),
                        None if grad is None else grad[None],
                        cols,
                    )
            # The corner contact model (space_time.AddCornerContactConstraints).
            if self.iN is not None and len(self._stance[0]):
                pts = np.array([kin[k][6] for k in range(K)])
                Jpts = np.array([kin[k][7] for k in range(K)]) if jacobians else None
                self._SoleRows(x, pts, Jpts, equalities, jacobians)
            # Eq. (8)'s second line: ||F||² >= ||τ_c / ν||² (normalised units), as c <= 0
            # (implied by the soft sole's patch forces: space_time.AddFrictionConstraints).
            for k in range(K if self.iN is None else 0):
                for j in range(4):
                    if not T.contact[j, k]:
                        continue
                    f, t = x[self.iF[k, j]], x[self.iT[k, j]]
                    inequality(
                        f"contact_torque[{k},{j}]",
                        np.array([t @ t - f @ f]),
                        np.concatenate([-2 * f, 2 * t])[None],
                        np.concatenate([self.iF[k, j], self.iT[k, j]]),
                    )
        # COP (Eq. 5).
        if P.config.cop_constraint:
            for k, hs in enumerate(self.halfspaces):
                if hs is None:
                    continue
                A, b = hs
                com, Jc, p, Jp = kin[k][:4]
                if not self.dynamics:
                    inequality(f"cop[{k}]", A @ com[:2] - b, A @ Jc[:2], self.iq[k])
                    continue
                legs = np.flatnonzero(T.contact[:, k])
                f = x[self.iF[k]] * self.fs
                t = x[self.iT[k]] * self.ts
                M = np.zeros(3)
                dMq = np.zeros((3, model.nq))
                dMf = np.zeros((3, 12))
                dMt = np.zeros((3, 12))
                Fz = 0.0
                dFz = np.zeros(12)
                for j in legs:
                    (px, py, pz), (fx, fy, fz) = p[j], f[j]
                    M += np.array([py * fz - pz * fy, pz * fx - px * fz, px * fy - py * fx]) + t[j]
                    Fz += f[j, 2]
                    if jacobians:
                        dMq += -_Skew(f[j]) @ Jp[j]
                        dMf[:, 3 * j : 3 * j + 3] = _Skew(p[j]) * self.fs
                        dMt[:, 3 * j : 3 * j + 3] = np.eye(3) * self.ts
                        dFz[3 * j + 2] = self.fs
                value = (A[:, 0] * (-M[1]) + A[:, 1] * M[0] - b * Fz) / self.fs
                jac = None
                if jacobians:
                    jac = (
                        np.hstack(
                            [
                                np.outer(A[:, 0], -dMq[1]) + np.outer(A[:, 1], dMq[0]),
                                np.outer(A[:, 0], -dMf[1])
                                + np.outer(A[:, 1], dMf[0])
                                - np.outer(b, dFz),
                                np.outer(A[:, 0], -dMt[1]) + np.outer(A[:, 1], dMt[0]),
                            ]
                        )
                        / self.fs
                    )
                inequality(
                    f"cop[{k}]",
                    value,
                    jac,
                    np.concatenate([self.iq[k], self.iF[k].ravel(), self.iT[k].ravel()]),
                )
        # Constant rows.
        r_lin = self.L @ x - self.l0
        e_lin = self.E @ x - self.e0
        first = Req.count
        if naming:
            eq_names.append((self.linear_eq_name, first, first + len(e_lin)))
            self.eq_names, self.in_names = eq_names, in_names
        values = NlpEvaluation(
            r=np.concatenate(r + [r_lin]),
            c_eq=np.concatenate(ceq + [e_lin]),
            c_in=np.concatenate(cin) if cin else np.zeros(0),
        )
        if jacobians:
            values.J_r = sp.vstack([R.Matrix(n), self.L], format="csr")
            values.A_eq = sp.vstack([Req.Matrix(n), self.E], format="csr")
            values.A_in = Rin.Matrix(n)
            self._patterns = (R.pattern, Req.pattern, Rin.pattern)
        return values
