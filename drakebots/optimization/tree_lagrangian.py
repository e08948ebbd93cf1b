"""Exact first and second derivatives of a multibody Lagrangian, for variational integrators.

The midpoint discrete Euler-Lagrange equations (hamr-contact-implicit.txt, Eq. 9; Manchester and
Kuindersma 2017) contain dT/dq, the gradient of the kinetic energy, and their Jacobian therefore
contains d2T/dq2: second derivatives of the multibody dynamics. pydrake's AutoDiffXd is first
order, so this module computes every term analytically with spatial vector algebra (Featherstone,
"Rigid Body Dynamics Algorithms", ch. 2 and 6), from the body poses and spatial inertias of a
Drake MultibodyPlant:

- every generalized coordinate i of a tree of one-degree-of-freedom joints has a world-frame
  spatial axis s_i = [w_i; v_i] (motion about the world origin); an RpyFloatingJoint or a
  PlanarJoint is treated as its chain of prismatic and revolute axes;
- the velocities here are qdot, the time derivatives of the plant's positions (for the joints
  supported, the Lagrangian is written in (q, qdot), as the paper's model assumes v = qdot);
- with V_b = sum of s_j qdot_j over the path of body b, the subtree momentum h_i, the composite
  inertia I^c_i and w_i = s_i x V_parent(i):

      M[i, k]     = s_i . I^c_max(i,k) s_k                 (composite rigid body algorithm)
      dT/dq_i     = -w_i . h_i
      d(Mv)/dq    = P,     with d(dT/dq)/dqdot = P^T
      d2T/dq2     = symmetric, U[i, k] = -w_i . g_k for k in the subtree of i,
                    g_k = s_k x* h_k - I^c_k w_k

  and the analogous closed forms for gravity, point positions (contact) and the relative
  position of two points in a body frame (kinematic loops).

Everything is dense NumPy on arrays of a few dozen rows; the only Drake calls per evaluation are
SetPositions and the body poses. The tests check every quantity against Drake (CalcMassMatrix,
CalcBiasTerm, CalcGravityGeneralizedForces, Jacobians) and every derivative against central
finite differences.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import (
    BodyIndex,
    JointIndex,
    PlanarJoint,
    PrismaticJoint,
    PrismaticSpring,
    RevoluteJoint,
    RevoluteSpring,
    RpyFloatingJoint,
    UniformGravityFieldElement,
    WeldJoint,
)


def _Skew(a: np.ndarray) -> np.ndarray:
    """[a]x for a (..., 3) array: (..., 3, 3)."""
    out = np.zeros(a.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -a[..., 2], a[..., 1]
    out[..., 1, 0], out[..., 1, 2] = a[..., 2], -a[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -a[..., 1], a[..., 0]
    return out


def Cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b for broadcastable (..., 3) arrays (np.cross without its per-call overhead)."""
    out = np.empty(a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape))
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def CrossMotion(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spatial motion cross product a x b for (..., 6) arrays [w; v] (Featherstone Eq. 2.31)."""
    wa, va, wb, vb = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([Cross(wa, wb), Cross(wa, vb) + Cross(va, wb)], axis=-1)


def CrossForce(a: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Spatial force cross product a x* f for a motion a = [w; v] and a force f = [n; f]."""
    wa, va, nf, ff = a[..., :3], a[..., 3:], f[..., :3], f[..., 3:]
    return np.concatenate([Cross(wa, nf) + Cross(va, ff), Cross(wa, ff)], axis=-1)


@dataclasses.dataclass
class _Dof:
    """One generalized coordinate seen as a one-degree-of-freedom joint."""

    q_index: int  # index in the plant's positions
    kind: str  # "revolute" or "prismatic"
    joint: object  # the Drake joint it belongs to
    role: str  # "axis" for 1-dof joints; "x","y","z","yaw","pitch","roll","theta" otherwise


@dataclasses.dataclass
class Kinematics:
    """Positions-dependent quantities at one configuration (all in the world frame).

    Attributes:
        q: the positions.
        S: (n, 6) spatial axes s_i = [w_i; v_i] about the world origin, one row per coordinate.
        R_WB: (nb, 3, 3) body orientations; p_WB: (nb, 3) body origins.
        com: (nb, 3) body centres of mass; inertia: (nb, 6, 6) spatial inertias about the
            world origin.
    """

    q: np.ndarray
    S: np.ndarray
    R_WB: np.ndarray
    p_WB: np.ndarray  # noqa: N815 (monogram notation)
    com: np.ndarray
    inertia: np.ndarray
    _composite: np.ndarray | None = None
    # Quantities derived from these by their users (contact points and Jacobians, ...), kept
    # with the configuration they belong to.
    memo: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class LagrangianTerms:
    """The terms of the Euler-Lagrange equations and their derivatives at (q, qdot).

    Attributes:
        M: mass matrix (n, n), in qdot coordinates.
        Mv: the generalized momentum M qdot.
        P: d(M qdot)/dq at fixed qdot (n, n); note d(dT/dq)/dqdot = P^T.
        T_q: dT/dq; T_qq: d2T/dq2 (symmetric).
        V_q: dV/dq of the potential (gravity and joint springs); V_qq: its Hessian.
        kinetic_energy, potential_energy: T and V.
    """

    M: np.ndarray
    Mv: np.ndarray
    P: np.ndarray
    T_q: np.ndarray
    T_qq: np.ndarray
    V_q: np.ndarray
    V_qq: np.ndarray
    kinetic_energy: float
    potential_energy: float


class TreeLagrangian:
    """The Lagrangian L(q, qdot) = T - V of a tree MultibodyPlant, with exact derivatives.

    Supported joints: revolute, prismatic, weld, RpyFloatingJoint and PlanarJoint (their q-dot
    coordinates are a chain of one-degree-of-freedom axes). Quaternion floating bases are not:
    before `Finalize`, join the base body to the world yourself with
    `plant.AddJoint(RpyFloatingJoint("base", plant.world_frame(), body.body_frame()))`, so that
    Finalize adds no quaternion joint (pydrake 1.51.1 has no `SetBaseBodyJointType`; a parsed
    floating joint can be dropped first with `plant.RemoveJoint`). A robot file's
    `base: floating_rpy` does both (drakebots.robots.robot_file).
    The potential V holds uniform gravity and the plant's RevoluteSpring / PrismaticSpring force
    elements; joint damping coefficients are exposed as `damping` (viscous, on qdot). Any other
    force element is an error unless `ignore_force_elements` lists its type name.

    Double only. Units are the plant's.

    Args:
        plant: a finalized MultibodyPlant (double).
        context: a plant context whose parameters are used (default: a new default context).
        ignore_force_elements: type names of force elements to leave out of V.
    """

    def __init__(
        self,
        plant: MultibodyPlant,
        context=None,
        *,
        ignore_force_elements: tuple[str, ...] = (),
    ):
        if not plant.is_finalized():
            raise ValueError("TreeLagrangian needs a finalized plant")
        self.plant = plant
        self._context = context if context is not None else plant.CreateDefaultContext()
        self.num_positions = n = plant.num_positions()
        self.num_bodies = nb = plant.num_bodies()
        self._dofs: list[_Dof | None] = [None] * n
        # ancestors[i, k]: coordinate k lies on the path from the world to coordinate i (k == i
        # included). body_path[b, k]: coordinate k moves body b.
        self.ancestors = np.zeros((n, n), dtype=bool)
        self.body_path = np.zeros((nb, n), dtype=bool)
        self._joint_of_body: dict[int, object] = {}
        for joint_index in plant.GetJointIndices():
            joint = plant.get_joint(JointIndex(joint_index))
            self._joint_of_body[int(joint.child_body().index())] = joint
        order = self._TopologicalBodies()
        for b in order:
            joint = self._joint_of_body.get(b)
            if joint is None:
                continue
            parent = int(joint.parent_body().index())
            path = self.body_path[parent].copy()
            for dof in self._JointDofs(joint):
                self._dofs[dof.q_index] = dof
                path[dof.q_index] = True
                self.ancestors[dof.q_index] = path
            self.body_path[b] = path
        if any(d is None for d in self._dofs):
            raise ValueError("some positions belong to no supported joint")
        self.strict_ancestors = self.ancestors & ~np.eye(n, dtype=bool)
        self._body_path_T = np.ascontiguousarray(self.body_path.T, dtype=float)
        # related[i, k]: one of i, k is an ancestor of the other.
        self.related = self.ancestors | self.ancestors.T
        self._SetUpInertias()
        self._SetUpForces(ignore_force_elements)

    # ------------------------------------------------------------------ set-up
    def _TopologicalBodies(self) -> list[int]:
        """Body indices ordered so that every parent precedes its children."""
        children: dict[int, list[int]] = {}
        for b, joint in self._joint_of_body.items():
            children.setdefault(int(joint.parent_body().index()), []).append(b)
        order, stack = [], [0]
        while stack:
            b = stack.pop()
            order.append(b)
            stack.extend(sorted(children.get(b, [])))
        if len(order) != self.num_bodies:
            missing = set(range(self.num_bodies)) - set(order)
            names = [self.plant.get_body(BodyIndex(b)).name() for b in sorted(missing)]
            raise ValueError(f"bodies not connected to the world by joints: {names}")
        return order

    def _JointDofs(self, joint) -> list[_Dof]:
        start = joint.position_start()
        if isinstance(joint, WeldJoint) or joint.num_positions() == 0:
            return []
        if isinstance(joint, RevoluteJoint):
            return [_Dof(start, "revolute", joint, "axis")]
        if isinstance(joint, PrismaticJoint):
            return [_Dof(start, "prismatic", joint, "axis")]
        if isinstance(joint, RpyFloatingJoint):
            # q = [roll, pitch, yaw, x, y, z]; R_FM = Rz(yaw) Ry(pitch) Rx(roll), p_FM = (x, y, z):
            # the chain x, y, z (translations in F) -> yaw -> pitch -> roll.
            return [
                _Dof(start + 3, "prismatic", joint, "x"),
                _Dof(start + 4, "prismatic", joint, "y"),
                _Dof(start + 5, "prismatic", joint, "z"),
                _Dof(start + 2, "revolute", joint, "yaw"),
                _Dof(start + 1, "revolute", joint, "pitch"),
                _Dof(start + 0, "revolute", joint, "roll"),
            ]
        if isinstance(joint, PlanarJoint):
            # q = [x, y, theta] in F: translations, then a rotation about Fz through Mo.
            return [
                _Dof(start + 0, "prismatic", joint, "x"),
                _Dof(start + 1, "prismatic", joint, "y"),
                _Dof(start + 2, "revolute", joint, "theta"),
            ]
        raise ValueError(
            f"joint '{joint.name()}' of type {joint.type_name()} is not supported by "
            "TreeLagrangian (revolute, prismatic, weld, rpy_floating, planar)"
        )

    def _SetUpInertias(self) -> None:
        nb = self.num_bodies
        self._mass = np.zeros(nb)
        self._com_B = np.zeros((nb, 3))
        self._Icm_B = np.zeros((nb, 3, 3))
        for b in range(1, nb):
            body = self.plant.get_body(BodyIndex(b))
            M_BBo_B = body.CalcSpatialInertiaInBodyFrame(self._context)
            m = M_BBo_B.get_mass()
            c = M_BBo_B.get_com()
            I_Bo = M_BBo_B.CalcRotationalInertia().CopyToFullMatrix3()
            self._mass[b] = m
            self._com_B[b] = c
            # Parallel axis theorem: I_Bo = I_cm + m (|c|^2 1 - c c^T).
            self._Icm_B[b] = I_Bo - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
        # The joint frames on parent and child bodies, fixed in their bodies.
        self._X_PF, self._X_CM = {}, {}
        for dof in self._dofs:
            joint = dof.joint
            key = int(joint.index())
            if key not in self._X_PF:
                self._X_PF[key] = joint.frame_on_parent().GetFixedPoseInBodyFrame()
                self._X_CM[key] = joint.frame_on_child().GetFixedPoseInBodyFrame()
        # One-dof joints, batched: axis direction and joint origin in the child body frame (the
        # axis is expressed in F and M alike; a prismatic joint never rotates M relative to F).
        single = [d for d in self._dofs if d.role == "axis"]
        self._single_q = np.array([d.q_index for d in single], dtype=int)
        self._single_child = np.array([int(d.joint.child_body().index()) for d in single], int)
        self._single_revolute = np.array([d.kind == "revolute" for d in single], dtype=bool)
        axes_C, origins_C = [], []
        for d in single:
            X_CM = self._X_CM[int(d.joint.index())]
            axis = d.joint.revolute_axis() if d.kind == "revolute" else d.joint.translation_axis()
            axes_C.append(X_CM.rotation().matrix() @ np.asarray(axis, float))
            origins_C.append(X_CM.translation())
        self._single_axis_C = np.array(axes_C).reshape(-1, 3)
        self._single_origin_C = np.array(origins_C).reshape(-1, 3)
        self._multi = [d for d in self._dofs if d.role != "axis"]
        # Multi-dof coordinates' joint frames as numbers, read from Drake once (`_Axis` runs for
        # each of them at every configuration): (parent, child, R_PF, p_CM, R_CM, q start).
        self._axis_frames = {
            d.q_index: (
                int(d.joint.parent_body().index()),
                int(d.joint.child_body().index()),
                self._X_PF[int(d.joint.index())].rotation().matrix(),
                self._X_CM[int(d.joint.index())].translation(),
                self._X_CM[int(d.joint.index())].rotation().matrix(),
                d.joint.position_start(),
            )
            for d in self._multi
        }

    def _SetUpForces(self, ignore: tuple[str, ...]) -> None:
        n = self.num_positions
        self.gravity = np.zeros(3)
        self.stiffness = np.zeros(n)
        self.nominal_positions = np.zeros(n)
        self.damping = np.zeros(n)
        plant = self.plant
        for i in range(plant.num_force_elements()):
            from pydrake.multibody.tree import ForceElementIndex

            element = plant.get_force_element(ForceElementIndex(i))
            if isinstance(element, UniformGravityFieldElement):
                self.gravity = np.asarray(element.gravity_vector(), dtype=float)
            elif isinstance(element, RevoluteSpring):
                k = element.joint().position_start()
                self.stiffness[k] += element.GetStiffness(self._context)
                self.nominal_positions[k] = element.GetNominalAngle(self._context)
            elif isinstance(element, PrismaticSpring):
                k = element.joint().position_start()
                self.stiffness[k] += element.stiffness()
                self.nominal_positions[k] = element.nominal_position()
            elif type(element).__name__.split("_")[0] in ignore:
                continue
            else:
                raise ValueError(
                    f"force element {type(element).__name__} is not part of TreeLagrangian's "
                    "potential; pass its type name in ignore_force_elements to leave it out"
                )
        for joint_index in plant.GetJointIndices():
            joint = plant.get_joint(JointIndex(joint_index))
            if joint.num_velocities() == 0:
                continue
            damping = np.asarray(joint.GetDampingVector(self._context), dtype=float)
            if joint.num_positions() == 1:
                self.damping[joint.position_start()] = damping[0]
            elif np.any(damping != 0.0):
                raise ValueError(
                    f"joint '{joint.name()}': damping on a multi-dof joint is not supported"
                )

    # ------------------------------------------------------------------ kinematics
    def CalcKinematics(self, q: np.ndarray) -> Kinematics:
        """Poses, spatial axes and spatial inertias at positions q."""
        plant, context = self.plant, self._context
        q = np.asarray(q, dtype=float)
        plant.SetPositions(context, q)
        poses = plant.get_body_poses_output_port().Eval(context)
        nb, n = self.num_bodies, self.num_positions
        # One [R | p] per body: a single pybind call each (R and p apart cost three).
        X_WB = np.array([X.GetAsMatrix34() for X in poses])
        R_WB = np.ascontiguousarray(X_WB[:, :, :3])
        p_WB = np.ascontiguousarray(X_WB[:, :, 3])
        S = np.zeros((n, 6))
        if len(self._single_q):
            R = R_WB[self._single_child]
            direction = (R @ self._single_axis_C[:, :, None])[:, :, 0]
            origin = p_WB[self._single_child] + (R @ self._single_origin_C[:, :, None])[:, :, 0]
            rev = self._single_revolute[:, None]
            S[self._single_q, :3] = np.where(rev, direction, 0.0)
            S[self._single_q, 3:] = np.where(rev, Cross(origin, direction), direction)
        for dof in self._multi:
            S[dof.q_index] = self._Axis(dof, q, R_WB, p_WB)
        com = p_WB + (R_WB @ self._com_B[:, :, None])[:, :, 0]
        Icm_W = R_WB @ self._Icm_B @ np.swapaxes(R_WB, 1, 2)
        C = _Skew(com)
        m = self._mass[:, None, None]
        inertia = np.zeros((nb, 6, 6))
        inertia[:, :3, :3] = Icm_W + m * (C @ np.swapaxes(C, 1, 2))
        inertia[:, :3, 3:] = m * C
        inertia[:, 3:, :3] = m * np.swapaxes(C, 1, 2)
        inertia[:, 3:, 3:] = m * np.eye(3)
        return Kinematics(q=q.copy(), S=S, R_WB=R_WB, p_WB=p_WB, com=com, inertia=inertia)

    def _Axis(self, dof: _Dof, q, R_WB, p_WB) -> np.ndarray:
        """The spatial axis of one coordinate of a multi-dof joint."""
        parent, child, R_PF, p_CM, R_CM, start = self._axis_frames[dof.q_index]
        R_WF = R_WB[parent] @ R_PF
        p_WM = p_WB[child] + R_WB[child] @ p_CM
        if dof.role in ("x", "y", "z"):
            return np.concatenate([np.zeros(3), R_WF[:, "xyz".index(dof.role)]])
        if dof.role in ("yaw", "theta"):
            w = R_WF[:, 2]
        elif dof.role == "pitch":
            yaw = q[start + 2]
            w = R_WF @ np.array([-np.sin(yaw), np.cos(yaw), 0.0])
        else:  # roll: the x axis of M
            w = R_WB[child] @ R_CM[:, 0]
        return np.concatenate([w, Cross(p_WM, w)])

    def Composite(self, kin: Kinematics) -> np.ndarray:
        """(n, 6, 6) composite spatial inertias of the subtree moved by each coordinate."""
        if kin._composite is None:
            nb = kin.inertia.shape[0]
            kin._composite = (self._body_path_T @ kin.inertia.reshape(nb, 36)).reshape(-1, 6, 6)
        return kin._composite

    # ------------------------------------------------------------------ dynamics
    def MassMatrix(self, kin: Kinematics) -> np.ndarray:
        """M(q) in qdot coordinates (composite rigid body algorithm)."""
        Ic = self.Composite(kin)
        F = (Ic @ kin.S[:, :, None])[:, :, 0]  # I^c_i s_i
        lower = (F @ kin.S.T) * self.ancestors  # [i, k], k ancestor of i
        return lower + lower.T - np.diag(np.diag(lower))

    def Terms(self, kin: Kinematics, qdot: np.ndarray) -> LagrangianTerms:
        """M, M qdot, d(M qdot)/dq, dT/dq, d2T/dq2 and the potential's gradient and Hessian."""
        S, A = kin.S, self.ancestors
        qdot = np.asarray(qdot, dtype=float)
        Ic = self.Composite(kin)
        V_body = (self.body_path * qdot) @ S  # (nb, 6)
        V_parent = (self.strict_ancestors * qdot) @ S  # (n, 6) velocity before coordinate i
        momentum_body = (kin.inertia @ V_body[:, :, None])[:, :, 0]
        h = self._body_path_T @ momentum_body  # subtree momenta (n, 6)
        F = (Ic @ S[:, :, None])[:, :, 0]
        lower = (F @ S.T) * A
        M = lower + lower.T - np.diag(np.diag(lower))
        W = CrossMotion(S, V_parent)  # w_i = s_i x V_parent(i)
        G = CrossForce(S, h) - (Ic @ W[:, :, None])[:, :, 0]  # g_k = d h_k / d q_k
        Mv = (S * h).sum(axis=1)
        # P[i, k] = -s_i . I^c_i w_k (k ancestor of i) and s_i . g_k (k strict descendant of i).
        P = -(F @ W.T) * A + (S @ G.T) * self.strict_ancestors.T
        T_q = -(W * h).sum(axis=1)
        U = -(W @ G.T) * A.T  # [i, k] for k in the subtree of i (k == i included)
        T_qq = U + U.T - np.diag(np.diag(U))
        kinetic = 0.5 * float(np.vdot(V_body, momentum_body))
        V_q, V_qq, potential = self._Potential(kin)
        return LagrangianTerms(M, Mv, P, T_q, T_qq, V_q, V_qq, kinetic, potential)

    def _Potential(self, kin: Kinematics):
        S, A = kin.S, self.ancestors
        g = self.gravity
        m = self._mass
        mc = self._body_path_T @ (m[:, None] * kin.com)  # subtree sum m c (n, 3)
        msub = self._body_path_T @ m  # subtree mass (n,)
        # Subtree gravity force about the world origin: [sum m c x g; M g].
        f_moment = Cross(mc, g)
        f_force = msub[:, None] * g[None, :]
        V_q = -((S[:, :3] * f_moment).sum(axis=1) + (S[:, 3:] * f_force).sum(axis=1))
        # d(sum m c)/dq_k over the subtree of k, then U[i, k] = -w_i . (e_k x g) for k below i.
        e = msub[:, None] * S[:, 3:] + Cross(S[:, :3], mc)
        U = -(S[:, :3] @ Cross(e, g).T) * A.T
        V_qq = U + U.T - np.diag(np.diag(U))
        dq = kin.q - self.nominal_positions
        V_q = V_q + self.stiffness * dq
        V_qq = V_qq + np.diag(self.stiffness)
        potential = -float(np.dot(m, kin.com @ g)) + 0.5 * float(np.dot(self.stiffness, dq * dq))
        return V_q, V_qq, potential

    # ------------------------------------------------------------------ points
    def PointPosition(self, kin: Kinematics, body_index: int, p_BP: np.ndarray) -> np.ndarray:
        """World position of a point P fixed on a body."""
        return kin.p_WB[body_index] + kin.R_WB[body_index] @ np.asarray(p_BP, dtype=float)

    def PointsPosition(self, kin: Kinematics, body_indices, p_BP: np.ndarray) -> np.ndarray:
        """(C, 3) world positions of C points, point c fixed on body body_indices[c] at p_BP[c]."""
        b = np.asarray(body_indices, dtype=int)
        return kin.p_WB[b] + np.einsum("cij,cj->ci", kin.R_WB[b], np.asarray(p_BP, float))

    def PointJacobian(self, kin: Kinematics, body_index: int, p_WP: np.ndarray) -> np.ndarray:
        """d p_WP / dq (3, n) for the point at world position p_WP fixed on the body."""
        return self.PointsJacobian(kin, [body_index], np.reshape(p_WP, (1, 3)))[0].T

    def PointsJacobian(self, kin: Kinematics, body_indices, p_WP: np.ndarray) -> np.ndarray:
        """(C, n, 3) d p_c / dq, transposed, for C points at world positions p_WP (C, 3), point
        c fixed on body body_indices[c]: row k is s_k's velocity at the point, zero off the
        body's path to the root."""
        S = kin.S
        paths = self.body_path[np.asarray(body_indices, dtype=int)]  # (C, n)
        J = S[None, :, 3:] + Cross(S[None, :, :3], np.asarray(p_WP, float)[:, None, :])
        return J * paths[:, :, None]

    def PointHessianTimes(
        self, kin: Kinematics, body_index: int, p_WP: np.ndarray, f_W: np.ndarray
    ) -> np.ndarray:
        """d/dq (J_P^T f) = sum_i f_i d2 p_i / dq2 (n, n, symmetric) for a fixed world vector f."""
        return self.PointsHessianTimes(
            kin, [body_index], np.reshape(p_WP, (1, 3)), np.reshape(f_W, (1, 3))
        )

    def PointsHessianTimes(
        self, kin: Kinematics, body_indices, p_WP: np.ndarray, f_W: np.ndarray
    ) -> np.ndarray:
        """sum_c d/dq (J_c^T f_c) (n, n, symmetric) over C points, in one pass.

        Args:
            body_indices: (C,) the body each point is fixed on.
            p_WP: (C, 3) world positions; f_W: (C, 3) fixed world vectors.
        """
        S = kin.S
        C, n = len(p_WP), self.num_positions
        paths = self.body_path[np.asarray(body_indices, dtype=int)]  # (C, n)
        J = self.PointsJacobian(kin, body_indices, p_WP)  # (C, n, 3) rows J_ck
        fxw = Cross(np.asarray(f_W, float)[:, None, :], S[None, :, :3]) * paths[:, :, None]
        # U[j, k] = sum_c f_c . (w_j x J_ck) = J_ck . (f_c x w_j), for j an ancestor of k, both
        # on point c's path; one (n, 3C) x (3C, n) product.
        U = fxw.transpose(1, 0, 2).reshape(n, 3 * C) @ J.transpose(1, 0, 2).reshape(n, 3 * C).T
        U *= self.ancestors.T
        return U + U.T - np.diag(np.diag(U))


class RelativePositionConstraints:
    """Kinematic loop closures c(q) = 0: points on two bodies coincide along chosen axes.

    Row block r: c_r = Pi_r^T R_W1^T (p_W2 - p_W1), the position of point P2 (fixed on body 2)
    relative to point P1 (fixed on body 1), expressed in body 1's frame and projected on the
    columns of Pi_r (for a hinge: the two directions orthogonal to its axis, as the authors of
    the HAMR-VI model did to keep the constraint rows independent).

    Args:
        lagrangian: the TreeLagrangian of the plant.
        loops: a list of (body1_index, p_1P1, body2_index, p_2P2, Pi) with Pi a (3, m) matrix
            whose columns are unit directions in body 1's frame.
        names: one name per loop (for constraint descriptions).
    """

    def __init__(self, lagrangian: TreeLagrangian, loops, names=None):
        self.lagrangian = lagrangian
        self.loops = [
            (int(b1), np.asarray(p1, float), int(b2), np.asarray(p2, float), np.asarray(Pi, float))
            for b1, p1, b2, p2, Pi in loops
        ]
        self.names = list(names) if names is not None else [f"loop{i}" for i in range(len(loops))]
        self.row_counts = [Pi.shape[1] for *_, Pi in self.loops]
        self.num_constraints = int(sum(self.row_counts))

    @classmethod
    def FromHingeFrames(cls, lagrangian: TreeLagrangian, hinges):
        """Hinge loops given as frame pairs (name, frame_A, frame_B): closed when B's origin lies
        on A's z axis (the hinge axis) through A's origin, i.e. the x and y components of
        p_AoBo in A vanish (2 rows per hinge, as drakebots.hamr.robot.HingeLoopConstraints)."""
        loops, names = [], []
        for name, frame_A, frame_B in hinges:
            X_1A = frame_A.GetFixedPoseInBodyFrame()
            X_2B = frame_B.GetFixedPoseInBodyFrame()
            Pi = X_1A.rotation().matrix()[:, :2]
            loops.append(
                (
                    int(frame_A.body().index()),
                    X_1A.translation(),
                    int(frame_B.body().index()),
                    X_2B.translation(),
                    Pi,
                )
            )
            names.append(name)
        return cls(lagrangian, loops, names)

    def _Arrays(self):
        """Per-loop arrays, stacked (loops of equal row count are evaluated together)."""
        if getattr(self, "_arrays", None) is None:
            lag = self.lagrangian
            b1 = np.array([loop[0] for loop in self.loops], dtype=int)
            b2 = np.array([loop[2] for loop in self.loops], dtype=int)
            p1 = np.array([loop[1] for loop in self.loops]).reshape(-1, 3)
            p2 = np.array([loop[3] for loop in self.loops]).reshape(-1, 3)
            Pis = [loop[4] for loop in self.loops]
            uniform = len({P.shape[1] for P in Pis}) <= 1
            Pi = np.array(Pis) if uniform and Pis else None
            sigma = lag.body_path[b2].astype(float) - lag.body_path[b1].astype(float)
            self._arrays = (b1, b2, p1, p2, Pi, sigma)
        return self._arrays

    def _Common(self, kin: Kinematics):
        """p_W2 (L, 3), J2 (L, n, 3): P2's velocity per axis, u = sigma J2 and A = Pi^T R_W1^T
        (kept with kin: the Jacobian and its derivative are asked for at the same q)."""
        key = ("loops", id(self))
        if key not in kin.memo:
            kin.memo[key] = self._CalcCommon(kin)
        return kin.memo[key]

    def _CalcCommon(self, kin: Kinematics):
        b1, b2, p1, p2, Pi, sigma = self._Arrays()
        R1 = kin.R_WB[b1]
        p_W2 = kin.p_WB[b2] + np.einsum("lij,lj->li", kin.R_WB[b2], p2)
        S = kin.S
        J2 = S[None, :, 3:] + Cross(S[None, :, :3], p_W2[:, None, :])
        u = sigma[:, :, None] * J2
        A = np.einsum("lim,lji->lmj", Pi, R1)  # (L, m, 3) = Pi^T R_W1^T
        return R1, p_W2, J2, u, A

    def Evaluate(self, kin: Kinematics) -> np.ndarray:
        """c(q) (num_constraints,)."""
        if not self.loops:
            return np.zeros(0)
        b1, b2, p1, p2, Pi, _ = self._Arrays()
        if Pi is None:
            return self._EvaluateEach(kin)
        r = (kin.p_WB[b2] + np.einsum("lij,lj->li", kin.R_WB[b2], p2)) - (
            kin.p_WB[b1] + np.einsum("lij,lj->li", kin.R_WB[b1], p1)
        )
        return np.einsum("lim,lji,lj->lm", Pi, kin.R_WB[b1], r).ravel()

    def _EvaluateEach(self, kin: Kinematics) -> np.ndarray:
        out = []
        for b1, p1, b2, p2, Pi in self.loops:
            r = (kin.p_WB[b2] + kin.R_WB[b2] @ p2) - (kin.p_WB[b1] + kin.R_WB[b1] @ p1)
            out.append(Pi.T @ (kin.R_WB[b1].T @ r))
        return np.concatenate(out)

    def Jacobian(self, kin: Kinematics) -> np.ndarray:
        """dc/dq (num_constraints, n)."""
        n = self.lagrangian.num_positions
        if not self.loops:
            return np.zeros((0, n))
        if self._Arrays()[4] is None:
            return np.vstack([self._Single(kin, i)[0] for i in range(len(self.loops))])
        key = ("loops_jacobian", id(self))
        C = kin.memo.get(key)
        if C is None:
            _, _, _, u, A = self._Common(kin)
            C = np.einsum("lmi,lni->lmn", A, u).reshape(-1, n)
            C.setflags(write=False)  # shared by every caller at this configuration
            kin.memo[key] = C
        return C

    def JacobianTransposeTimesDerivative(self, kin: Kinematics, lam: np.ndarray) -> np.ndarray:
        """d/dq (C(q)^T lam) (n, n, symmetric) for fixed multipliers lam."""
        lag = self.lagrangian
        n = lag.num_positions
        if not self.loops:
            return np.zeros((n, n))
        b1, b2, _, _, Pi, sigma = self._Arrays()
        if Pi is None:
            out = np.zeros((n, n))
            start = 0
            for i, m in enumerate(self.row_counts):
                out += self._Single(kin, i, lam[start : start + m])[1]
                start += m
            return out
        R1, p_W2, J2, u, A = self._Common(kin)
        L = len(self.loops)
        Lam = np.einsum("lmi,lm->li", A, np.asarray(lam, float).reshape(L, -1))  # world vectors
        S = kin.S
        w, v = S[:, :3], S[:, 3:]
        # With Lam . (a x b) = a . (b x Lam), every term is a dense (n, n) product per loop:
        #   term1[j, k] = sigma_j [k strict ancestor of j] Lam . ((s_k x s_j) at P2),
        #     (s_k x s_j) at P = (w_k x w_j) x P + w_k x v_j + v_k x w_j;
        #   term2[j, k] = sigma_j [k in P2] Lam . (w_j x J2_k);
        #   term3[j, k] = -[k in P1] Lam . (w_k x u_j).
        # Summed over the loops, each is one (n, 3L) x (3L, n) product: the loop index joins
        # the 3-vector index of the dot products.
        Lxw = Cross(Lam[:, None, :], w[None, :, :])  # (L, n, 3): Lam x w_k
        PxL = Cross(p_W2, Lam)  # (L, 3)
        sig = sigma[:, :, None]  # (L, n, 1)

        def Flat(a):  # (L, n, 3) -> (n, 3L)
            return a.transpose(1, 0, 2).reshape(len(w), 3 * L)

        # sk_l[k, j] = (P x Lam) x w_k . w_j + (Lam x w_k) . v_j + (Lam x v_k) . w_j
        k_side_w = Flat(Cross(PxL[:, None, :], w[None, :, :]) + Cross(Lam[:, None, :], v[None]))
        sk = k_side_w @ Flat(sig * w[None]).T + Flat(Lxw) @ Flat(sig * v[None]).T  # [k, j]
        term1 = lag.strict_ancestors * sk.T
        term2 = Flat(sig * Lxw) @ Flat(J2 * lag.body_path[b2][:, :, None]).T
        term3 = -(Flat(u) @ Flat(Lxw * lag.body_path[b1][:, :, None]).T)
        return term1 + term2 + term3

    def _Single(self, kin: Kinematics, i: int, lam=None):
        """(Jacobian rows, Hessian contraction) of loop i alone (loops of mixed row counts)."""
        b1, p1, b2, p2, Pi = self.loops[i]
        lag = self.lagrangian
        S = kin.S
        w, v = S[:, :3], S[:, 3:]
        p_W2 = kin.p_WB[b2] + kin.R_WB[b2] @ p2
        sigma = lag.body_path[b2].astype(float) - lag.body_path[b1].astype(float)
        J2 = S[:, 3:] + Cross(S[:, :3], p_W2)
        u = sigma[:, None] * J2
        A = Pi.T @ kin.R_WB[b1].T
        if lam is None:
            return A @ u.T, None
        Lam = A.T @ lam
        Lxw = Cross(Lam, w)
        sk = Cross(Cross(p_W2, Lam), w) @ w.T + Lxw @ v.T + Cross(Lam, v) @ w.T
        term1 = sigma[:, None] * lag.strict_ancestors * sk.T
        term2 = sigma[:, None] * (Lxw @ J2.T) * lag.body_path[b2][None, :]
        term3 = -(u @ Lxw.T) * lag.body_path[b1][None, :]
        return A @ u.T, term1 + term2 + term3
