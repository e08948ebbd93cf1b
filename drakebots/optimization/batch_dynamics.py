"""The multibody terms of tree_lagrangian.py and variational.py evaluated for many
configurations at once (one NumPy evaluation for every knot of a transcription).

`TreeLagrangian`, `RelativePositionConstraints` and `VariationalDynamics` evaluate one
configuration per call (Drake's body poses, then arrays of a few dozen rows); a transcription
with N knots calls them N times per evaluation, and the per-call overhead of NumPy and pybind11
dominates. Here every quantity carries a leading batch axis K:

- `BatchKinematics(tree, q)`: forward kinematics of the tree in NumPy (revolute, prismatic, weld,
  RPY-floating and planar joints, as TreeLagrangian), the world spatial axes S (K, n, 6), body
  poses and spatial inertias, for q of shape (K, n);
- `BatchTree`: the Lagrangian's terms (M, M v, P, dT/dq, d2T/dq2, dV/dq, d2V/dq2), contact
  points, their Jacobians and Hessian contractions, and the kinematic loop rows c(q), C(q) and
  d(C^T lambda)/dq, with the same formulas as the one-configuration versions (whose docstrings
  derive them);
- `BatchIntervals`: the midpoint momenta p+ and p- of K intervals and their Jacobians, split
  into the conservative part (from the discrete Lagrangian L_d) and the forcing (damping and
  actuation), which is what the Hessian of the transcription needs
  (drakebots.optimization.contact_implicit_fast).

Every function is checked against its one-configuration counterpart in
tests/optimization/test_contact_implicit_fast.py, and the kinematics against Drake's body poses.
Double only (real arrays; complex inputs are not supported).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydrake.multibody.tree import (
    PlanarJoint,
    PrismaticJoint,
    RevoluteJoint,
    RpyFloatingJoint,
    WeldJoint,
)

from drakebots.optimization.tree_lagrangian import (
    Cross,
    CrossForce,
    CrossMotion,
    RelativePositionConstraints,
    TreeLagrangian,
    _Skew,
)
from drakebots.optimization.variational import JointForceActuation, LinearActuation


def _T(a: np.ndarray) -> np.ndarray:
    """Swap the last two axes."""
    return np.swapaxes(a, -1, -2)


def _Symmetrize(U: np.ndarray) -> np.ndarray:
    """U + U^T - diag(U) over the last two axes (a triangle mirrored)."""
    out = U + _T(U)
    idx = np.arange(U.shape[-1])
    out[..., idx, idx] = U[..., idx, idx]
    return out


def _Rx(a):
    c, s = np.cos(a), np.sin(a)
    R = np.zeros(a.shape + (3, 3))
    R[..., 0, 0] = 1.0
    R[..., 1, 1], R[..., 1, 2], R[..., 2, 1], R[..., 2, 2] = c, -s, s, c
    return R


def _Ry(a):
    c, s = np.cos(a), np.sin(a)
    R = np.zeros(a.shape + (3, 3))
    R[..., 1, 1] = 1.0
    R[..., 0, 0], R[..., 0, 2], R[..., 2, 0], R[..., 2, 2] = c, s, -s, c
    return R


def _Rz(a):
    c, s = np.cos(a), np.sin(a)
    R = np.zeros(a.shape + (3, 3))
    R[..., 2, 2] = 1.0
    R[..., 0, 0], R[..., 0, 1], R[..., 1, 0], R[..., 1, 1] = c, -s, s, c
    return R


@dataclasses.dataclass
class _JointStep:
    """One body's joint in the forward kinematics: X_WC = X_WP X_PF X_FM(q) X_MC."""

    child: int
    parent: int
    kind: str  # "revolute", "prismatic", "weld", "rpy", "planar"
    start: int  # first position index
    axis: np.ndarray | None
    R_PF: np.ndarray
    p_PF: np.ndarray  # noqa: N815 (monogram notation)
    R_MC: np.ndarray
    p_MC: np.ndarray  # noqa: N815
    R_FM: np.ndarray | None = None  # a weld's fixed pose
    p_FM: np.ndarray | None = None  # noqa: N815


@dataclasses.dataclass
class BatchKinematics:
    """Positions-dependent quantities at K configurations (world frame), as `Kinematics`.

    Attributes:
        q: (K, n); S: (K, n, 6) spatial axes; R_WB: (K, nb, 3, 3); p_WB: (K, nb, 3);
        com: (K, nb, 3); inertia: (K, nb, 6, 6) spatial inertias about the world origin.
    """

    q: np.ndarray
    S: np.ndarray
    R_WB: np.ndarray
    p_WB: np.ndarray  # noqa: N815 (monogram notation)
    com: np.ndarray
    inertia: np.ndarray
    _composite: np.ndarray | None = None
    memo: dict = dataclasses.field(default_factory=dict)

    @property
    def size(self) -> int:
        return self.q.shape[0]

    def Slice(self, start: int, stop: int) -> BatchKinematics:
        """Configurations start..stop-1 (views; derived quantities are recomputed)."""
        return BatchKinematics(
            q=self.q[start:stop],
            S=self.S[start:stop],
            R_WB=self.R_WB[start:stop],
            p_WB=self.p_WB[start:stop],
            com=self.com[start:stop],
            inertia=self.inertia[start:stop],
        )


@dataclasses.dataclass
class BatchTerms:
    """`LagrangianTerms` for K (q, qdot) pairs, each with a leading axis K."""

    M: np.ndarray
    Mv: np.ndarray
    P: np.ndarray
    T_q: np.ndarray
    T_qq: np.ndarray
    V_q: np.ndarray
    V_qq: np.ndarray
    kinetic_energy: np.ndarray
    potential_energy: np.ndarray


class BatchTree:
    """A TreeLagrangian (and optionally its loop constraints) evaluated for K configurations.

    Args:
        lagrangian: the TreeLagrangian (its plant, axes, inertias, springs and damping).
        loops: a RelativePositionConstraints of that Lagrangian, or None.
    """

    def __init__(
        self, lagrangian: TreeLagrangian, loops: RelativePositionConstraints | None = None
    ):
        self.lagrangian = lag = lagrangian
        self.num_positions = lag.num_positions
        self.num_bodies = lag.num_bodies
        self.loops = loops
        self._A = lag.ancestors.astype(float)
        self._SA = lag.strict_ancestors.astype(float)
        self._body_path = lag.body_path.astype(float)
        self._BPT = lag._body_path_T
        self._SetUpForwardKinematics()
        self._SetUpAxes()
        if loops is not None and loops.loops:
            self._SetUpLoops()

    # ------------------------------------------------------------------ set-up
    def _SetUpForwardKinematics(self) -> None:
        lag = self.lagrangian
        plant = lag.plant
        steps = []
        for b in lag._TopologicalBodies():
            joint = lag._joint_of_body.get(b)
            if joint is None:
                continue
            X_PF = joint.frame_on_parent().GetFixedPoseInBodyFrame()
            X_CM = joint.frame_on_child().GetFixedPoseInBodyFrame()
            X_MC = X_CM.inverse()
            common = dict(
                child=b,
                parent=int(joint.parent_body().index()),
                start=joint.position_start(),
                R_PF=X_PF.rotation().matrix(),
                p_PF=X_PF.translation().copy(),
                R_MC=X_MC.rotation().matrix(),
                p_MC=X_MC.translation().copy(),
            )
            if isinstance(joint, RevoluteJoint):
                step = _JointStep(kind="revolute", axis=np.asarray(joint.revolute_axis()), **common)
            elif isinstance(joint, PrismaticJoint):
                step = _JointStep(
                    kind="prismatic", axis=np.asarray(joint.translation_axis()), **common
                )
            elif isinstance(joint, WeldJoint) or joint.num_positions() == 0:
                X_FM = joint.X_FM()
                step = _JointStep(
                    kind="weld",
                    axis=None,
                    R_FM=X_FM.rotation().matrix(),
                    p_FM=X_FM.translation().copy(),
                    **common,
                )
            elif isinstance(joint, RpyFloatingJoint):
                step = _JointStep(kind="rpy", axis=None, **common)
            elif isinstance(joint, PlanarJoint):
                step = _JointStep(kind="planar", axis=None, **common)
            else:  # TreeLagrangian has refused it already
                raise ValueError(f"joint '{joint.name()}' is not supported")
            steps.append(step)
        self._steps = steps
        del plant
        # One-dof and welded bodies are placed a depth level at a time (all bodies whose parents
        # are placed, in one batch): X_WC = X_WP [M(q) | v(q)] with
        #   M = B0 + a B1 + b B2,  v = b0 + a b1 + b b2 + c b3,
        # a = sin(q), b = 1 - cos(q) for a revolute joint (Rodrigues), c = q for a prismatic one.
        depth = {0: 0}
        for st in steps:
            depth[st.child] = depth[st.parent] + 1
        levels = {}
        for st in steps:
            levels.setdefault(depth[st.child], []).append(st)
        self._levels = []
        for d in sorted(levels):
            simple = [st for st in levels[d] if st.kind in ("revolute", "prismatic", "weld")]
            other = [st for st in levels[d] if st not in simple]
            level = None
            if simple:
                B = np.zeros((len(simple), 3, 3, 3))
                b = np.zeros((len(simple), 4, 3))
                for i, st in enumerate(simple):
                    R_PF, p_PF, R_MC, p_MC = st.R_PF, st.p_PF, st.R_MC, st.p_MC
                    if st.kind == "weld":
                        B[i, 0] = R_PF @ st.R_FM @ R_MC
                        b[i, 0] = p_PF + R_PF @ (st.p_FM + st.R_FM @ p_MC)
                        continue
                    B[i, 0] = R_PF @ R_MC
                    b[i, 0] = p_PF + R_PF @ p_MC
                    if st.kind == "revolute":
                        Kx = _Skew(st.axis)
                        B[i, 1] = R_PF @ Kx @ R_MC
                        B[i, 2] = R_PF @ Kx @ Kx @ R_MC
                        b[i, 1] = R_PF @ Kx @ p_MC
                        b[i, 2] = R_PF @ Kx @ Kx @ p_MC
                    else:
                        b[i, 3] = R_PF @ st.axis
                level = dict(
                    child=np.array([st.child for st in simple]),
                    parent=np.array([st.parent for st in simple]),
                    start=np.array([st.start if st.kind != "weld" else 0 for st in simple]),
                    revolute=np.array([st.kind == "revolute" for st in simple], float),
                    prismatic=np.array([st.kind == "prismatic" for st in simple], float),
                    B=B,
                    b=b,
                )
            self._levels.append((level, other))

    def _SetUpAxes(self) -> None:
        lag = self.lagrangian
        self._single_q = lag._single_q
        self._single_child = lag._single_child
        self._single_axis_C = lag._single_axis_C
        self._single_origin_C = lag._single_origin_C
        self._single_revolute = lag._single_revolute
        self._multi = [(d, lag._axis_frames[d.q_index]) for d in lag._multi]

    def _SetUpLoops(self) -> None:
        """Loops grouped by their number of rows (each group evaluated in one batch)."""
        lag, loops = self.lagrangian, self.loops
        groups = {}
        start = 0
        for i, (b1, p1, b2, p2, Pi) in enumerate(loops.loops):
            m = Pi.shape[1]
            groups.setdefault(m, []).append((i, start, b1, p1, b2, p2, Pi))
            start += m
        self._loop_groups = []
        for m, members in groups.items():
            b1 = np.array([x[2] for x in members], int)
            b2 = np.array([x[4] for x in members], int)
            rows = np.concatenate([np.arange(x[1], x[1] + m) for x in members])
            self._loop_groups.append(
                dict(
                    m=m,
                    rows=rows,
                    b1=b1,
                    b2=b2,
                    p1=np.array([x[3] for x in members]).reshape(-1, 3),
                    p2=np.array([x[5] for x in members]).reshape(-1, 3),
                    Pi=np.array([x[6] for x in members]),
                    sigmaT=(lag.body_path[b2].astype(float) - lag.body_path[b1].astype(float)).T,
                    bp1T=lag.body_path[b1].astype(float).T,
                    bp2T=lag.body_path[b2].astype(float).T,
                )
            )
        self.num_loop_rows = start

    # ------------------------------------------------------------------ kinematics
    def Kinematics(self, q: np.ndarray) -> BatchKinematics:
        """Poses, spatial axes and spatial inertias at positions q (K, n)."""
        lag = self.lagrangian
        q = np.asarray(q, float)
        if q.ndim == 1:
            q = q[None, :]
        K, n, nb = q.shape[0], self.num_positions, self.num_bodies
        R_WB = np.zeros((K, nb, 3, 3))
        R_WB[:, 0] = np.eye(3)
        p_WB = np.zeros((K, nb, 3))
        for level, other in self._levels:
            if level is not None:
                angle = q[:, level["start"]]  # (K, B)
                a = np.sin(angle) * level["revolute"]
                b = (1.0 - np.cos(angle)) * level["revolute"]
                c = angle * level["prismatic"]
                B, bv = level["B"], level["b"]
                M = B[:, 0] + a[..., None, None] * B[:, 1] + b[..., None, None] * B[:, 2]
                v = bv[:, 0] + a[..., None] * bv[:, 1] + b[..., None] * bv[:, 2]
                v = v + c[..., None] * bv[:, 3]
                R_P = R_WB[:, level["parent"]]
                R_WB[:, level["child"]] = R_P @ M
                p_WB[:, level["child"]] = p_WB[:, level["parent"]] + (R_P @ v[..., None])[..., 0]
            for st in other:
                self._PlaceMultiDof(st, q, R_WB, p_WB)
        S = np.zeros((K, n, 6))
        if len(self._single_q):
            R = R_WB[:, self._single_child]  # (K, d, 3, 3)
            direction = (R @ self._single_axis_C[None, :, :, None])[..., 0]
            origin = (
                p_WB[:, self._single_child] + (R @ self._single_origin_C[None, :, :, None])[..., 0]
            )
            rev = self._single_revolute[None, :, None]
            S[:, self._single_q, :3] = np.where(rev, direction, 0.0)
            S[:, self._single_q, 3:] = np.where(rev, Cross(origin, direction), direction)
        for dof, (parent, child, R_PF, p_CM, R_CM, start) in self._multi:
            R_WF = R_WB[:, parent] @ R_PF
            p_WM = p_WB[:, child] + R_WB[:, child] @ p_CM
            if dof.role in ("x", "y", "z"):
                S[:, dof.q_index, 3:] = R_WF[:, :, "xyz".index(dof.role)]
                continue
            if dof.role in ("yaw", "theta"):
                w = R_WF[:, :, 2]
            elif dof.role == "pitch":
                yaw = q[:, start + 2]
                local = np.stack([-np.sin(yaw), np.cos(yaw), np.zeros(K)], axis=1)
                w = (R_WF @ local[..., None])[..., 0]
            else:  # roll
                w = R_WB[:, child] @ R_CM[:, 0]
            S[:, dof.q_index, :3] = w
            S[:, dof.q_index, 3:] = Cross(p_WM, w)
        com = p_WB + (R_WB @ lag._com_B[None, :, :, None])[..., 0]
        Icm_W = R_WB @ lag._Icm_B[None] @ _T(R_WB)
        C = _Skew(com)
        m = lag._mass[None, :, None, None]
        inertia = np.zeros((K, nb, 6, 6))
        inertia[..., :3, :3] = Icm_W + m * (C @ _T(C))
        inertia[..., :3, 3:] = m * C
        inertia[..., 3:, :3] = m * _T(C)
        inertia[..., 3:, 3:] = m * np.eye(3)
        return BatchKinematics(q=q.copy(), S=S, R_WB=R_WB, p_WB=p_WB, com=com, inertia=inertia)

    @staticmethod
    def _PlaceMultiDof(st: _JointStep, q, R_WB, p_WB) -> None:
        """X_WC of a body on an RPY-floating or planar joint."""
        K = q.shape[0]
        R_WP = R_WB[:, st.parent]
        R_WF = R_WP @ st.R_PF
        p_WF = p_WB[:, st.parent] + R_WP @ st.p_PF
        s = st.start
        if st.kind == "rpy":
            R_WM = R_WF @ (_Rz(q[:, s + 2]) @ _Ry(q[:, s + 1]) @ _Rx(q[:, s]))
            p_WM = p_WF + (R_WF @ q[:, s + 3 : s + 6, None])[..., 0]
        else:  # planar
            R_WM = R_WF @ _Rz(q[:, s + 2])
            p_FM = np.zeros((K, 3))
            p_FM[:, :2] = q[:, s : s + 2]
            p_WM = p_WF + (R_WF @ p_FM[..., None])[..., 0]
        R_WB[:, st.child] = R_WM @ st.R_MC
        p_WB[:, st.child] = p_WM + R_WM @ st.p_MC

    def Composite(self, kin: BatchKinematics) -> np.ndarray:
        """(K, n, 6, 6) composite spatial inertias."""
        if kin._composite is None:
            K, nb = kin.size, self.num_bodies
            kin._composite = (self._BPT @ kin.inertia.reshape(K, nb, 36)).reshape(K, -1, 6, 6)
        return kin._composite

    # ------------------------------------------------------------------ dynamics
    def Terms(self, kin: BatchKinematics, qdot: np.ndarray) -> BatchTerms:
        """TreeLagrangian.Terms at K (q, qdot) pairs, qdot of shape (K, n)."""
        S, A, SA = kin.S, self._A, self._SA
        qdot = np.asarray(qdot, float)
        Ic = self.Composite(kin)
        V_body = (self._body_path[None] * qdot[:, None, :]) @ S  # (K, nb, 6)
        V_parent = (SA[None] * qdot[:, None, :]) @ S  # (K, n, 6)
        momentum_body = (kin.inertia @ V_body[..., None])[..., 0]
        h = self._BPT @ momentum_body  # (K, n, 6)
        F = (Ic @ S[..., None])[..., 0]
        lower = (F @ _T(S)) * A
        M = _Symmetrize(lower)
        W = CrossMotion(S, V_parent)
        G = CrossForce(S, h) - (Ic @ W[..., None])[..., 0]
        Mv = (S * h).sum(axis=-1)
        P = -(F @ _T(W)) * A + (S @ _T(G)) * SA.T
        T_q = -(W * h).sum(axis=-1)
        U = -(W @ _T(G)) * A.T
        T_qq = _Symmetrize(U)
        kinetic = 0.5 * np.einsum("kbi,kbi->k", V_body, momentum_body)
        V_q, V_qq, potential = self.Potential(kin)
        return BatchTerms(M, Mv, P, T_q, T_qq, V_q, V_qq, kinetic, potential)

    def Potential(self, kin: BatchKinematics):
        """(dV/dq, d2V/dq2, V) of gravity and joint springs, batched."""
        lag = self.lagrangian
        S, A = kin.S, self._A
        g = lag.gravity
        m = lag._mass
        mc = self._BPT @ (m[None, :, None] * kin.com)  # (K, n, 3)
        msub = self._BPT @ m  # (n,)
        f_moment = Cross(mc, g)
        V_q = -((S[..., :3] * f_moment).sum(-1) + (S[..., 3:] @ g) * msub)
        e = msub[None, :, None] * S[..., 3:] + Cross(S[..., :3], mc)
        U = -(S[..., :3] @ _T(Cross(e, g))) * A.T
        V_qq = _Symmetrize(U)
        dq = kin.q - lag.nominal_positions
        V_q = V_q + lag.stiffness * dq
        idx = np.arange(self.num_positions)
        V_qq[:, idx, idx] += lag.stiffness
        potential = -(kin.com @ g) @ m + 0.5 * (dq * dq) @ lag.stiffness
        return V_q, V_qq, potential

    # ------------------------------------------------------------------ points
    def PointsPosition(self, kin: BatchKinematics, bodies, p_BP: np.ndarray) -> np.ndarray:
        """(K, C, 3) world positions of C points fixed on bodies[c] at p_BP[c]."""
        b = np.asarray(bodies, int)
        return kin.p_WB[:, b] + np.einsum("kcij,cj->kci", kin.R_WB[:, b], np.asarray(p_BP, float))

    def PointsJacobian(self, kin: BatchKinematics, bodies, p_WP: np.ndarray) -> np.ndarray:
        """(K, C, n, 3) d p_c / dq, transposed (as TreeLagrangian.PointsJacobian)."""
        S = kin.S
        paths = self._body_path[np.asarray(bodies, int)]  # (C, n)
        J = S[:, None, :, 3:] + Cross(S[:, None, :, :3], p_WP[:, :, None, :])
        return J * paths[None, :, :, None]

    def PointsHessianTimes(
        self, kin: BatchKinematics, bodies, p_WP: np.ndarray, f_W: np.ndarray, J=None
    ) -> np.ndarray:
        """(K, n, n): sum_c d/dq (J_c^T f_c) for world vectors f_W (K, C, 3) held fixed."""
        S = kin.S
        K, C, n = p_WP.shape[0], p_WP.shape[1], self.num_positions
        paths = self._body_path[np.asarray(bodies, int)]
        if J is None:
            J = self.PointsJacobian(kin, bodies, p_WP)
        fxw = Cross(f_W[:, :, None, :], S[:, None, :, :3]) * paths[None, :, :, None]
        left = fxw.transpose(0, 2, 1, 3).reshape(K, n, 3 * C)
        right = J.transpose(0, 2, 1, 3).reshape(K, n, 3 * C)
        U = (left @ _T(right)) * self._A.T
        return _Symmetrize(U)

    # ------------------------------------------------------------------ loops
    def _LoopCommon(self, kin: BatchKinematics):
        """Per loop group: R_W1 (K, L, 3, 3), p_W2 (K, L, 3), J2 (K, n, L, 3) the velocity of P2
        per coordinate, u = sigma J2 and A = Pi^T R_W1^T (K, L, m, 3); the coordinate axis comes
        before the loop axis so that (K, n, L, 3) reshapes to (K, n, 3L) without a copy."""
        key = "loops"
        if key not in kin.memo:
            out = []
            S = kin.S
            for g in self._loop_groups:
                R1 = kin.R_WB[:, g["b1"]]
                p_W2 = kin.p_WB[:, g["b2"]] + np.einsum(
                    "klij,lj->kli", kin.R_WB[:, g["b2"]], g["p2"]
                )
                J2 = S[:, :, None, 3:] + Cross(S[:, :, None, :3], p_W2[:, None, :, :])
                u = g["sigmaT"][None, :, :, None] * J2
                A = np.einsum("lim,klji->klmj", g["Pi"], R1)
                out.append((R1, p_W2, J2, u, A))
            kin.memo[key] = out
        return kin.memo[key]

    def LoopResidual(self, kin: BatchKinematics) -> np.ndarray:
        """c(q) (K, num rows)."""
        K = kin.size
        c = np.zeros((K, self.num_loop_rows))
        for g, (R1, p_W2, _, _, A) in zip(self._loop_groups, self._LoopCommon(kin)):
            p_W1 = kin.p_WB[:, g["b1"]] + np.einsum("klij,lj->kli", R1, g["p1"])
            c[:, g["rows"]] = np.einsum("klmj,klj->klm", A, p_W2 - p_W1).reshape(K, -1)
        return c

    def LoopJacobian(self, kin: BatchKinematics) -> np.ndarray:
        """dc/dq (K, num rows, n)."""
        key = "loops_jacobian"
        if key not in kin.memo:
            K, n = kin.size, self.num_positions
            C = np.zeros((K, self.num_loop_rows, n))
            for g, (_, _, _, u, A) in zip(self._loop_groups, self._LoopCommon(kin)):
                L, m = A.shape[1], A.shape[2]
                # C[l m, k] = A_lm . u_k,l: one (L m, 3) x (3, n) product per loop.
                Cl = A @ u.transpose(0, 2, 3, 1)  # (K, L, m, n)
                C[:, g["rows"]] = Cl.reshape(K, L * m, n)
            kin.memo[key] = C
        return kin.memo[key]

    def LoopHessianTimes(self, kin: BatchKinematics, lam: np.ndarray) -> np.ndarray:
        """d/dq (C(q)^T lam) (K, n, n) for multipliers lam (K, num rows) held fixed
        (RelativePositionConstraints.JacobianTransposeTimesDerivative, batched: every term is
        one (n, 3L) x (3L, n) product, the loop index joining the 3-vector index)."""
        K, n = kin.size, self.num_positions
        S = kin.S
        w, v = S[:, :, None, :3], S[:, :, None, 3:]  # (K, n, 1, 3)
        out = np.zeros((K, n, n))
        for g, (_, p_W2, J2, u, A) in zip(self._loop_groups, self._LoopCommon(kin)):
            L = A.shape[1]
            Lam = (A * lam[:, g["rows"]].reshape(K, L, -1, 1)).sum(axis=2)  # (K, L, 3)
            Lam_ = Lam[:, None]  # (K, 1, L, 3)
            Lxw = Cross(Lam_, w)  # (K, n, L, 3)
            PxL = Cross(p_W2, Lam)[:, None]
            sig = g["sigmaT"][None, :, :, None]  # (1, n, L, 1)

            def Flat(a, L=L):  # (K, n, L, 3) -> (K, n, 3L)
                return np.broadcast_to(a, (K, n, L, 3)).reshape(K, n, 3 * L)

            k_side = Flat(Cross(PxL, w) + Cross(Lam_, v))
            sk = k_side @ _T(Flat(sig * w)) + Flat(Lxw) @ _T(Flat(sig * v))
            out += self._SA * _T(sk)
            out += Flat(sig * Lxw) @ _T(Flat(J2 * g["bp2T"][None, :, :, None]))
            out -= Flat(u) @ _T(Flat(Lxw * g["bp1T"][None, :, :, None]))
        return out


# ---------------------------------------------------------------------------- actuation
class BatchActuation:
    """tau(q, u) of a VariationalDynamics' actuation for K (q, u) pairs, with first and second
    derivatives. Supports LinearActuation (tau = B u) and JointForceActuation (one force law per
    input on its joint, vectorised over arrays); its second derivatives are central differences
    of the law's own first derivatives (elementwise, so exact for the affine piezo law up to
    rounding). Other actuation objects are refused by name (`supported`, `reason`)."""

    def __init__(self, actuation, num_positions: int):
        self.actuation = actuation
        self.num_positions = n = int(num_positions)
        self.num_inputs = actuation.num_inputs
        self.supported, self.reason = True, ""
        if isinstance(actuation, LinearActuation):
            self.kind = "linear"
            self.B = actuation.B
        elif isinstance(actuation, JointForceActuation):
            self.kind = "joint"
            self.idx = actuation.joint_indices
        else:
            self.kind = "unknown"
            self.supported = False
            self.reason = (
                f"actuation {type(actuation).__name__} (the fast path knows LinearActuation and "
                "JointForceActuation)"
            )
        del n

    def Evaluate(self, q: np.ndarray, u: np.ndarray):
        """(tau (K, n), dtau/dq (K, n, n), dtau/du (K, n, m))."""
        K, n, m = q.shape[0], self.num_positions, self.num_inputs
        if self.kind == "linear":
            return u @ self.B.T, np.zeros((K, n, n)), np.broadcast_to(self.B, (K, n, m))
        idx = self.idx
        F, F_u, F_x = self.actuation.force(u, q[:, idx])
        tau = np.zeros((K, n))
        tau[:, idx] = F
        tau_q = np.zeros((K, n, n))
        tau_q[:, idx, idx] = F_x
        tau_u = np.zeros((K, n, m))
        tau_u[:, idx, np.arange(m)] = F_u
        return tau, tau_q, tau_u

    def SecondDerivatives(self, q: np.ndarray, u: np.ndarray):
        """Elementwise (F_uu, F_ux, F_xx) (K, m) of each input's force law (zeros when linear)."""
        K, m = q.shape[0], self.num_inputs
        if self.kind == "linear" or m == 0:
            z = np.zeros((K, m))
            return z, z, z
        x = q[:, self.idx]
        du = 1e-4 * np.maximum(1.0, np.abs(u))
        dx = 1e-4 * np.maximum(1.0, np.abs(x))
        law = self.actuation.force
        _, Fu_p, Fx_p = law(u + du, x)
        _, Fu_m, Fx_m = law(u - du, x)
        F_uu = (np.asarray(Fu_p) - np.asarray(Fu_m)) / (2 * du)
        _, Fu_p, Fx_p = law(u, x + dx)
        _, Fu_m, Fx_m = law(u, x - dx)
        F_ux = (np.asarray(Fu_p) - np.asarray(Fu_m)) / (2 * dx)
        F_xx = (np.asarray(Fx_p) - np.asarray(Fx_m)) / (2 * dx)
        return F_uu, F_ux, F_xx


# ---------------------------------------------------------------------------- intervals
@dataclasses.dataclass
class BatchIntervalTerms:
    """The momenta of K midpoint intervals and their Jacobians (VariationalDynamics.Interval).

    p_plus, p_minus: (K, n). d_plus, d_minus: (d/dq0, d/dq1 (K, n, n), d/du (K, n, m),
    d/dh (K, n)). The conservative parts (from L_d alone: no damping, no actuation) are
    cp_plus, cp_minus and their Jacobians cd_plus, cd_minus (d/dq0, d/dq1, d/dh).
    vMv: (K,) v^T M v at the midpoint (for d2 L_d / dh2).
    """

    p_plus: np.ndarray
    p_minus: np.ndarray
    d_plus: tuple
    d_minus: tuple
    cp_plus: np.ndarray
    cp_minus: np.ndarray
    cd_plus: tuple
    cd_minus: tuple
    vMv: np.ndarray  # noqa: N815 (v^T M v)
    energy: np.ndarray


def BatchIntervals(
    tree: BatchTree,
    actuation: BatchActuation | None,
    damping: np.ndarray,
    q0: np.ndarray,
    q1: np.ndarray,
    u: np.ndarray,
    h: float,
    *,
    forcing: bool = True,
    kin: BatchKinematics | None = None,
) -> BatchIntervalTerms:
    """Momenta p+ (leaving q0) and p- (arriving at q1) of K midpoint steps with Jacobians.

    With forcing=False only the conservative parts are computed (the others are None). `kin`:
    the kinematics at the midpoints (q0 + q1)/2 when the caller has them.
    """
    q_mid = 0.5 * (q0 + q1)
    v = (q1 - q0) / h
    if kin is None:
        kin = tree.Kinematics(q_mid)
    t = tree.Terms(kin, v)
    half_h = 0.5 * h
    G_c = t.T_q - t.V_q
    G_qm_c = t.T_qq - t.V_qq
    Pt = _T(t.P)
    Mv = t.Mv
    dMv_q0 = 0.5 * t.P - t.M / h
    dMv_q1 = 0.5 * t.P + t.M / h
    dMv_h = -Mv / h
    dGc_q0 = 0.5 * G_qm_c - Pt / h
    dGc_q1 = 0.5 * G_qm_c + Pt / h
    dGc_h = -(Pt @ v[..., None])[..., 0] / h
    cp_plus = Mv - half_h * G_c
    cp_minus = Mv + half_h * G_c
    cd_plus = (
        dMv_q0 - half_h * dGc_q0,
        dMv_q1 - half_h * dGc_q1,
        dMv_h - 0.5 * G_c - half_h * dGc_h,
    )
    cd_minus = (
        dMv_q0 + half_h * dGc_q0,
        dMv_q1 + half_h * dGc_q1,
        dMv_h + 0.5 * G_c + half_h * dGc_h,
    )
    vMv = np.einsum("ki,ki->k", v, Mv)
    energy = t.kinetic_energy + t.potential_energy
    if not forcing:
        return BatchIntervalTerms(
            None, None, None, None, cp_plus, cp_minus, cd_plus, cd_minus, vMv, energy
        )
    K, n = q0.shape
    if actuation is not None and actuation.num_inputs:
        tau, tau_q, tau_u = actuation.Evaluate(q_mid, u)
    else:
        tau, tau_q, tau_u = np.zeros((K, n)), np.zeros((K, n, n)), np.zeros((K, n, 0))
    F = -damping * v + tau
    # dF/dq_mid = tau_q; dF/dv = -diag(damping); dF/dh = damping * v / h.
    dF_q0 = 0.5 * tau_q + np.diag(damping) / h
    dF_q1 = 0.5 * tau_q - np.diag(damping) / h
    dF_h = damping * v / h
    p_plus = cp_plus - half_h * F
    p_minus = cp_minus + half_h * F
    d_plus = (
        cd_plus[0] - half_h * dF_q0,
        cd_plus[1] - half_h * dF_q1,
        -half_h * tau_u,
        cd_plus[2] - 0.5 * F - half_h * dF_h,
    )
    d_minus = (
        cd_minus[0] + half_h * dF_q0,
        cd_minus[1] + half_h * dF_q1,
        half_h * tau_u,
        cd_minus[2] + 0.5 * F + half_h * dF_h,
    )
    return BatchIntervalTerms(
        p_plus, p_minus, d_plus, d_minus, cp_plus, cp_minus, cd_plus, cd_minus, vMv, energy
    )
