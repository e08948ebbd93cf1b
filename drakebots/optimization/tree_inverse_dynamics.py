"""Inverse dynamics of a tree MultibodyPlant for many states at once, with exact partials.

The space-time step (skinned-quad-robots.txt, section 5.1, Eqs. 6-7) needs τ = ID(q, q̇, q̈, w)
and its partial derivatives at every knot of the plan in every Gauss-Newton iteration. Drake's
`CalcInverseDynamics` answers one state per call, and its AutoDiff instantiation spends most of
its time on the bookkeeping of 36 derivative slots per scalar. Here the recursive Newton-Euler
algorithm (Featherstone, "Rigid Body Dynamics Algorithms", 2008, Table 5.1) runs on NumPy arrays
whose first axis is a batch of states, in body coordinates, so that each body is a handful of
array operations for the whole batch:

    forward:   v_i = ⁱX_λ v_λ + s_i q̇_i,      a_i = ⁱX_λ a_λ + s_i q̈_i + v_i ×ₘ s_i q̇_i,
               f_i = I_i a_i + v_i ×f I_i v_i - f_i^ext          (a_0 = -g: gravity)
    backward:  τ_i = s_iᵀ f_i,  f_λ += ⁱX_λᵀ f_i                   (+ D q̇: joint damping)

Partial derivatives, exactly (to rounding), by the complex-step method (Squire and Trapp 1998;
Martins, Sturdza and Alonso 2003): every operation above is analytic (products, sums, sin, cos),
so ∂τ/∂x_j = Im τ(x + i h e_j) / h with h = 1e-30 has no subtraction error; the batch holds one
complex copy of each state per direction. τ is linear in q̈ and in the external wrenches, so
those partials (the mass matrix, and -Jᵀ) are real evaluations of the same recursion.

Supported: revolute, prismatic and weld joints (welded bodies are folded into their parent's
inertia), uniform gravity, viscous joint damping. The tests check the values against Drake's
`CalcInverseDynamics` and the partials against Drake's AutoDiff and central differences.

Units: the plant's (SI).
"""

from __future__ import annotations

import numpy as np
from pydrake.math import RigidTransform
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import (
    BodyIndex,
    ForceElementIndex,
    JointIndex,
    PrismaticJoint,
    RevoluteJoint,
    UniformGravityFieldElement,
    WeldJoint,
)

from drakebots.optimization.tree_lagrangian import _Skew

COMPLEX_STEP = 1e-30


def _Cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b for (3, B) arrays (real or complex)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), np.result_type(a, b))
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


def _RealTimes(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A @ x for a real constant matrix A and a real or complex (..., k, B) array x: a complex
    x is multiplied as its real view (real and imaginary parts interleaved along the last
    axis, which A does not mix), so the product is one real matrix product."""
    if np.iscomplexobj(x):
        x = np.ascontiguousarray(x)
        return np.matmul(A, x.view(np.float64)).view(np.complex128)
    return np.matmul(A, x)


class _Link:
    """One moving body (a one-degree-of-freedom joint to its parent) with its folded welds.

    The pose of the body frame C in its parent body's frame P is
    X_PC(q) = X_PF · X_FM(q) · X_MC, with R_PC(q) = R0 + sin q R1 + (1 - cos q) R2 and
    p_PC(q) = p0 + sin q p1 + (1 - cos q) p2 for a revolute joint (Rodrigues' formula about the
    axis through Mo), and R_PC = R0, p_PC = p0 + q p1 for a prismatic one.
    """

    def __init__(self, joint, parent_slot: int, X_BP):
        self.joint = joint
        self.index = joint.position_start()
        self.parent = parent_slot  # -1: the world
        self.revolute = isinstance(joint, RevoluteJoint)
        axis = np.asarray(
            joint.revolute_axis() if self.revolute else joint.translation_axis(), float
        )
        # The joint's parent frame F in the parent *link* frame (welds folded: X_BP).
        X_PF = X_BP.multiply(joint.frame_on_parent().GetFixedPoseInBodyFrame())
        X_MC = joint.frame_on_child().GetFixedPoseInBodyFrame().inverse()
        R_PF, p_PF = X_PF.rotation().matrix(), X_PF.translation()
        R_MC, p_MC = X_MC.rotation().matrix(), X_MC.translation()
        K = _Skew(axis)
        self.R0 = R_PF @ R_MC
        if self.revolute:
            self.R1 = R_PF @ K @ R_MC
            self.R2 = R_PF @ K @ K @ R_MC
            self.p0 = p_PF + R_PF @ p_MC
            self.p1 = R_PF @ K @ p_MC
            self.p2 = R_PF @ K @ K @ p_MC
            # Motion subspace in C at Co: rotation about the axis through Mo.
            w = R_MC.T @ axis
            p_CM = -R_MC.T @ p_MC  # Mo in C
            self.s = np.concatenate([w, np.cross(p_CM, w)])
        else:
            self.p0 = p_PF + R_PF @ p_MC
            self.p1 = R_PF @ axis
            self.s = np.concatenate([np.zeros(3), R_MC.T @ axis])
        self.mass = 0.0
        self.com = np.zeros(3)  # first moment m c, C frame
        self.I_o = np.zeros((3, 3))  # rotational inertia about Co, C frame

    def RotateT(self, x, c):
        """R_PCᵀ x for stacked (3 m, B) arrays of 3-vectors (coefficients c of the pose)."""
        m = x.shape[0] // 3
        x3 = x.reshape(m, 3, -1)
        if len(c) > 1:
            Y = _RealTimes(self._RT9, x3)  # (m, 9, B)
            return (Y[:, :3] + c[0] * Y[:, 3:6] + c[1] * Y[:, 6:]).reshape(x.shape)
        return _RealTimes(self.R0.T, x3).reshape(x.shape)

    def Rotate(self, x, c):
        """R_PC x for stacked (3 m, B) arrays of 3-vectors."""
        m = x.shape[0] // 3
        x3 = x.reshape(m, 3, -1)
        if len(c) > 1:
            Y = _RealTimes(self._R9, x3)
            return (Y[:, :3] + c[0] * Y[:, 3:6] + c[1] * Y[:, 6:]).reshape(x.shape)
        return _RealTimes(self.R0, x3).reshape(x.shape)

    def PCross(self, x, c):
        """p_PC x x for a (3, B) array."""
        Y = _RealTimes(self._PX, x)  # (3 k, B)
        if len(c) > 1:
            return Y[:3] + c[0] * Y[3:6] + c[1] * Y[6:]
        return Y[:3] + c[0] * Y[3:]

    def AddInertia(self, mass, com_C, I_Co_C):
        """Adds a rigid body's inertia given about Co in C (spatial inertias add)."""
        self.mass += mass
        self.com = self.com + mass * np.asarray(com_C, float)
        self.I_o = self.I_o + I_Co_C

    def Finish(self):
        m, h, J = self.mass, self.com, self.I_o
        # Spatial inertia about Co in C: [[J, [h]x], [[h]x^T, m 1]] (Featherstone Eq. 2.63).
        H = _Skew(h)
        self.inertia = np.block([[J, H], [H.T, m * np.eye(3)]])
        if self.revolute:
            self._R9 = np.vstack([self.R0, self.R1, self.R2])
            self._RT9 = np.vstack([self.R0.T, self.R1.T, self.R2.T])
            self._PX = np.vstack([_Skew(self.p0), _Skew(self.p1), _Skew(self.p2)])
        else:
            self._PX = np.vstack([_Skew(self.p0), _Skew(self.p1)])


class BatchInverseDynamics:
    """Recursive Newton-Euler inverse dynamics of a tree plant, batched, with exact partials.

    Args:
        plant: a finalized MultibodyPlant (double) whose joints are revolute, prismatic or weld,
            with q̇ = v (true for those joints).
        context: a plant context whose parameters (inertias, damping) are used (default: a new
            default context).
    """

    def __init__(self, plant: MultibodyPlant, context=None):
        if not plant.is_finalized():
            raise ValueError("BatchInverseDynamics needs a finalized plant")
        context = context if context is not None else plant.CreateDefaultContext()
        self.num_positions = n = plant.num_positions()
        if plant.num_velocities() != n:
            raise ValueError("BatchInverseDynamics needs q̇ = v (revolute/prismatic joints)")
        joint_of_child = {}
        for index in plant.GetJointIndices():
            joint = plant.get_joint(JointIndex(index))
            if not isinstance(joint, (RevoluteJoint, PrismaticJoint, WeldJoint)):
                raise ValueError(
                    f"joint '{joint.name()}' of type {joint.type_name()}: BatchInverseDynamics "
                    "supports revolute, prismatic and weld joints"
                )
            joint_of_child[int(joint.child_body().index())] = joint
        # Walk the tree from the world: a moving body gets a link slot; a welded body maps onto
        # its parent's slot with the fixed pose of its frame in that slot's frame.
        self.links: list[_Link] = []
        # body -> (slot, X_SB): the world and bodies welded to it have slot -1 and their pose in
        # the world.
        slot_of_body = {0: (-1, RigidTransform())}
        children: dict[int, list[int]] = {}
        for child, joint in joint_of_child.items():
            children.setdefault(int(joint.parent_body().index()), []).append(child)
        stack = [0]
        while stack:
            body = stack.pop()
            for child in sorted(children.get(body, [])):
                joint = joint_of_child[child]
                slot, X_SP = slot_of_body[body]
                if isinstance(joint, WeldJoint):
                    X_PC = (
                        joint.frame_on_parent()
                        .GetFixedPoseInBodyFrame()
                        .multiply(joint.X_FM())
                        .multiply(joint.frame_on_child().GetFixedPoseInBodyFrame().inverse())
                    )
                    slot_of_body[child] = (slot, X_SP.multiply(X_PC))
                else:
                    self.links.append(_Link(joint, slot, X_SP))
                    slot_of_body[child] = (len(self.links) - 1, RigidTransform())
                stack.append(child)
        if len(slot_of_body) != plant.num_bodies():
            raise ValueError("some bodies are not connected to the world by joints")
        self._slot_of_body = slot_of_body
        self._below = {}  # (wrench slots, link) -> `_WrenchesBelow`
        self.total_mass = 0.0  # every body's, those welded to the world included
        for b in range(1, plant.num_bodies()):
            slot, X_SB = slot_of_body[b]
            M_BBo_B = plant.get_body(BodyIndex(b)).CalcSpatialInertiaInBodyFrame(context)
            self.total_mass += M_BBo_B.get_mass()
            if slot < 0:
                continue
            # Shift into the slot's frame: rotate, then move the reference point to its origin.
            M = M_BBo_B.ReExpress(X_SB.rotation()).Shift(-X_SB.translation())
            self.links[slot].AddInertia(
                M.get_mass(),
                M.get_com(),
                M.CalcRotationalInertia().CopyToFullMatrix3(),
            )
        for link in self.links:
            link.Finish()
        if sorted(link.index for link in self.links) != list(range(n)):
            raise ValueError("every position must belong to one revolute or prismatic joint")
        self.gravity = np.zeros(3)
        for i in range(plant.num_force_elements()):
            element = plant.get_force_element(ForceElementIndex(i))
            if isinstance(element, UniformGravityFieldElement):
                self.gravity = np.asarray(element.gravity_vector(), float)
            else:
                raise ValueError(
                    f"force element {type(element).__name__} is not modelled by "
                    "BatchInverseDynamics (gravity and joint damping only)"
                )
        self.damping = np.zeros(n)
        for link in self.links:
            self.damping[link.index] = float(link.joint.GetDampingVector(context)[0])

    def BodySlot(self, body_index) -> tuple[int, object]:
        """(link slot, pose of the body in that link's frame) of a plant body."""
        slot, X = self._slot_of_body[int(body_index)]
        if slot < 0:
            raise ValueError("the body does not move (welded to the world)")
        return slot, X

    # ------------------------------------------------------------------------------------------
    def InverseDynamics(
        self,
        q,
        v,
        a,
        *,
        local_wrenches=None,
        world_wrenches=None,
        gravity: bool = True,
        damping: bool = True,
    ):
        """Generalized forces τ (B, n) that give accelerations a at states (q, v) (B, n each).

        Args:
            local_wrenches: list of (slot, W (B, 6)): [torque; force] on a link about its
                origin, in its frame.
            world_wrenches: list of (slot, p_CQ (3,), W (B, 6)): [torque; force] in world
                coordinates applied at the point Q fixed on the link (Q given in its frame).
            gravity, damping: include them (off to read off the mass matrix or -Jᵀ).

        Works for real or complex arrays (complex: `Partials`). Internally every spatial
        vector is a (6, B) array (structure of arrays): a link's pose depends on its own
        coordinate only, R_PC = R0 + sin q R1 + (1 - cos q) R2, so each rotation of a batch is
        one product with the stacked constants [R0; R1; R2] and two scaled sums.
        """
        q, v, a = np.asarray(q), np.asarray(v), np.asarray(a)
        dtype = np.result_type(q, v, a, float)
        B, n = q.shape
        L = len(self.links)
        qT, vT, aT = q.T, v.T, a.T
        sinq, versq = np.sin(qT), 1.0 - np.cos(qT)  # sin q and 1 - cos q
        coef = []  # per link: the batch's coefficients of its pose polynomial
        vel = [None] * L
        acc = [None] * L
        v_world = np.zeros((6, B), dtype)
        a_world = np.zeros((6, B), dtype)
        if gravity:
            a_world[3:] = -self.gravity[:, None]
        for i, link in enumerate(self.links):
            j = link.index
            c = (sinq[j], versq[j]) if link.revolute else (qT[j],)
            coef.append(c)
            if link.parent < 0:
                vp, ap = v_world, a_world
            else:
                vp, ap = vel[link.parent], acc[link.parent]
            # Parent -> child: ω_C = Rᵀ ω_P, v_C = Rᵀ (v_P - p x ω_P).
            wv = link.RotateT(
                np.vstack(
                    [
                        vp[:3],
                        vp[3:] - link.PCross(vp[:3], c),
                        ap[:3],
                        ap[3:] - link.PCross(ap[:3], c),
                    ]
                ),
                c,
            )
            sq = link.s[:, None] * vT[j]  # s q̇
            V = wv[:6] + sq
            w, vl = V[:3], V[3:]
            A = wv[6:] + link.s[:, None] * aT[j]
            # + v x s q̇ (spatial motion cross product).
            A[:3] += _Cross3(w, sq[:3])
            A[3:] += _Cross3(w, sq[3:]) + _Cross3(vl, sq[:3])
            vel[i], acc[i] = V, A
        # Body forces f = I a + v x* I v - f_ext (in the link frame, about its origin).
        F = [None] * L
        for i, link in enumerate(self.links):
            V = vel[i]
            Iv = link.inertia @ V
            f = link.inertia @ acc[i]
            w, vl = V[:3], V[3:]
            f[:3] += _Cross3(w, Iv[:3]) + _Cross3(vl, Iv[3:])
            f[3:] += _Cross3(w, Iv[3:])
            F[i] = f
        for slot, W in local_wrenches or ():
            F[slot] = F[slot] - np.asarray(W).T
        if world_wrenches:
            # Carry each wrench's torque and force (free vectors) from the world down its
            # link's path, rotating them into each link's frame; the wrenches sharing a link
            # (the feet on the base's chain) are rotated together.
            carry = {
                -1: {
                    m: np.vstack([W[:, :3].T, W[:, 3:].T])
                    for m, (_, _, W) in enumerate(world_wrenches)
                }
            }
            for i, link in enumerate(self.links):
                here = self._WrenchesBelow(world_wrenches, i)
                if not here:
                    continue
                above = carry[link.parent]
                rotated = link.RotateT(np.vstack([above[m] for m in here]), coef[i])
                carry[i] = {m: rotated[6 * r : 6 * r + 6] for r, m in enumerate(here)}
            for m, (slot, p_CQ, _W) in enumerate(world_wrenches):
                t_C, f_C = carry[slot][m][:3], carry[slot][m][3:]
                F[slot] = F[slot] - np.vstack([t_C + _Skew(p_CQ) @ f_C, f_C])
        tau = np.zeros((n, B), dtype)
        for i in range(L - 1, -1, -1):
            link = self.links[i]
            f = F[i]
            tau[link.index] = link.s @ f
            if link.parent >= 0:
                # Child -> parent: f_P = R f_C, n_P = R n_C + p x f_P.
                c = coef[i]
                nf = link.Rotate(f, c)
                nf[:3] += link.PCross(nf[3:], c)
                F[link.parent] = F[link.parent] + nf
        if damping:
            tau += self.damping[:, None] * vT
        return tau.T

    def _WrenchesBelow(self, world_wrenches, i):
        """Indices of the wrenches applied to link i or to a link below it."""
        key = (tuple(slot for slot, _, _ in world_wrenches), i)
        cache = self._below
        if key not in cache:
            below = []
            for m, (slot, _, _) in enumerate(world_wrenches):
                j = slot
                while j >= 0 and j != i:
                    j = self.links[j].parent
                if j == i:
                    below.append(m)
            cache[key] = below
        return cache[key]

    # ------------------------------------------------------------------------------------------
    # Forward kinematics of the same tree, batched.

    def Poses(self, q):
        """World poses of every link at each of B states: (R_WC (L, B, 3, 3), p_WC (L, B, 3)).

        R_WC = R_WP R_PC(q), p_WC = p_WP + R_WP p_PC(q), parents first.
        """
        q = np.asarray(q, float)
        B = len(q)
        L = len(self.links)
        R_W = np.empty((L, B, 3, 3))
        p_W = np.empty((L, B, 3))
        for i, link in enumerate(self.links):
            qi = q[:, link.index, None, None]
            if link.revolute:
                s, c = np.sin(qi), 1.0 - np.cos(qi)
                R = link.R0 + s * link.R1 + c * link.R2
                p = link.p0 + s[:, :, 0] * link.p1 + c[:, :, 0] * link.p2
            else:
                R = link.R0
                p = link.p0 + qi[:, :, 0] * link.p1
            if link.parent < 0:
                R_W[i], p_W[i] = R, p
            else:
                Rp = R_W[link.parent]
                R_W[i] = Rp @ R
                p_W[i] = p_W[link.parent] + np.einsum("bij,bj->bi", Rp, p)
        return R_W, p_W

    def Points(self, poses, slot, p_CP):
        """World positions (B, P, 3) of points p_CP (P, 3) fixed in a link's frame."""
        R_W, p_W = poses
        return p_W[slot][:, None, :] + np.einsum("bij,pj->bpi", R_W[slot], np.asarray(p_CP))

    def JacobianTransposeTimes(self, poses, slot, p_WP, f_W):
        """Σ_P J_Pᵀ f_P (B, n) for points of one link at world positions p_WP (B, P, 3) and
        world vectors f_W (B, P, 3), J_P = ∂p_WP/∂q (= Drake's translational Jacobian with
        respect to v, q̇ = v).

        Coordinate i on the link's path moves P at R_Wi v_i + ω_i x (p_WP - p_Wi) with
        ω_i = R_Wi w_i (motion subspace s_i = [w_i; v_i]), so its entry is
        v_i·F + ω_i·(M - p_Wi x F), F = Σ_P f_P and M = Σ_P p_WP x f_P.
        """
        R_W, p_W = poses
        F = f_W.sum(axis=1)
        M = np.cross(p_WP, f_W).sum(axis=1)
        out = np.zeros((len(F), self.num_positions))
        for i in self._Path(slot):
            link = self.links[i]
            w = R_W[i] @ link.s[:3]
            v = R_W[i] @ link.s[3:]
            out[:, link.index] = np.einsum("bi,bi->b", v, F) + np.einsum(
                "bi,bi->b", w, M - np.cross(p_W[i], F)
            )
        return out

    def ComJacobianTransposeTimes(self, poses, f_W):
        """J_comᵀ f (B, n) for world vectors f_W (B, 3), J_com = ∂com/∂q of the moving bodies'
        centre of mass: coordinate i moves its subtree (mass m_i, first moment c_i about the
        world origin), so its entry is (v_i·f m_i + ω_i·((c_i - m_i p_Wi) x f)) / M, M the
        plant's total mass (bodies welded to the world count in M, not in any subtree)."""
        R_W, p_W = poses
        L = len(self.links)
        mass = np.array([link.mass for link in self.links])
        moment = np.empty_like(p_W)  # m_l p_Wl + R_Wl (m c)_l, then summed over subtrees
        for i, link in enumerate(self.links):
            moment[i] = mass[i] * p_W[i] + R_W[i] @ link.com
        sub_mass = mass.copy()
        for i in range(L - 1, -1, -1):
            parent = self.links[i].parent
            if parent >= 0:
                moment[parent] += moment[i]
                sub_mass[parent] += sub_mass[i]
        out = np.zeros((len(f_W), self.num_positions))
        for i, link in enumerate(self.links):
            w = R_W[i] @ link.s[:3]
            v = R_W[i] @ link.s[3:]
            out[:, link.index] = (
                sub_mass[i] * np.einsum("bi,bi->b", v, f_W)
                + np.einsum("bi,bi->b", w, np.cross(moment[i] - sub_mass[i] * p_W[i], f_W))
            ) / self.total_mass
        return out

    def _Path(self, slot):
        """The links from the root to `slot`, root first."""
        path = []
        while slot >= 0:
            path.append(slot)
            slot = self.links[slot].parent
        return path[::-1]

    def Partials(self, q, v, a, *, local_wrenches=None, world_wrenches=None):
        """τ and its exact partial derivatives at K states.

        Args: as `InverseDynamics` with (K, ...) arrays; world_wrenches' W are the variables of
            ∂τ/∂w (their order: wrench by wrench, [torque; force]).

        Returns:
            (tau (K, n), dtau_dq (K, n, n), dtau_dv (K, n, n), dtau_da (K, n, n) = M(q),
            dtau_dw (K, n, 6 * len(world_wrenches))).
        """
        q, v, a = (np.asarray(x, float) for x in (q, v, a))
        K, n = q.shape
        h = COMPLEX_STEP
        D = 2 * n
        # Complex step: copy (k, d) perturbs q_d (d < n) or v_{d-n} by i h.
        eye = np.eye(n) * (1j * h)
        qc = np.repeat(q[:, None, :], D, axis=1).astype(complex)
        vc = np.repeat(v[:, None, :], D, axis=1).astype(complex)
        qc[:, :n] += eye
        vc[:, n:] += eye
        ac = np.repeat(a[:, None, :], D, axis=1).reshape(K * D, n)

        def Rep(W, times):
            return np.repeat(np.asarray(W, float), times, axis=0)

        loc = [(slot, Rep(W, D)) for slot, W in local_wrenches or ()]
        wor = [(slot, p, Rep(W, D)) for slot, p, W in world_wrenches or ()]
        tc = self.InverseDynamics(
            qc.reshape(K * D, n),
            vc.reshape(K * D, n),
            ac,
            local_wrenches=loc,
            world_wrenches=wor,
        ).reshape(K, D, n)
        tau = tc[:, 0].real.copy()
        G = tc.imag / h  # (K, D, n): row d = ∂τ/∂x_d
        dtau_dq = np.swapaxes(G[:, :n], 1, 2)
        dtau_dv = np.swapaxes(G[:, n:], 1, 2)
        # Linear parts, real: M(q) e_j and -Jᵀ e_j (no velocity, gravity or damping).
        nw = len(world_wrenches or ())
        E = n + 6 * nw
        qr = np.repeat(q, E, axis=0)
        zero = np.zeros((K * E, n))
        ar = np.tile(np.vstack([np.eye(n), np.zeros((6 * nw, n))]), (K, 1))
        unit = np.zeros((E, 6 * nw))
        unit[n:] = np.eye(6 * nw)
        unit = np.tile(unit, (K, 1))
        wor_unit = [(slot, p, unit[:, 6 * m : 6 * m + 6]) for m, (slot, p, _W) in enumerate(wor)]
        tl = self.InverseDynamics(
            qr, zero, ar, world_wrenches=wor_unit, gravity=False, damping=False
        ).reshape(K, E, n)
        dtau_da = np.swapaxes(tl[:, :n], 1, 2)
        dtau_dw = np.swapaxes(tl[:, n:], 1, 2)
        return tau, dtau_dq, dtau_dv, dtau_da, dtau_dw
