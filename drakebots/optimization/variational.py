"""Midpoint variational dynamics with contact: the residuals of the transcription and their
exact Jacobians (hamr-contact-implicit.txt, Sec. II-D, Eqs. 9-14; Manchester and Kuindersma 2017).

Notation (one time step h, knots q_k):

- midpoint rule: q_mid = (q_k + q_k+1)/2, qdot_mid = (q_k+1 - q_k)/h, and the discrete
  Lagrangian L_d(q_k, q_k+1) = h L(q_mid, qdot_mid);
- the discrete momenta of an interval, with G = dT/dq - dV/dq + F(q_mid, qdot_mid, u_k) (F: joint
  damping and actuation, split half and half between the two ends as in the discrete
  Lagrange-d'Alembert principle):

      p+_k   = -D1 L_d - h F/2 = M qdot_mid - (h/2) G        (momentum leaving knot k)
      p-_k+1 =  D2 L_d + h F/2 = M qdot_mid + (h/2) G        (momentum arriving at knot k+1)

- the discrete Euler-Lagrange equation at knot k (Eq. 9 with the friction term of Eq. 14), divided
  by h so that it reads in force units:

      (p-_k - p+_k)/h + C(q_k)^T lambda_k + sum_c J_c(q_k+1)^T (gamma_c n + sum_j beta_cj d_j) = 0

  where C is the Jacobian of the position constraints (kinematic loops) and J_c that of contact
  point c; the contact impulse of step k acts at the configuration it keeps out of the ground,
  q_k+1, as in Eq. 9 and Stewart-Trinkle time stepping.
- knot 0 takes its incoming momentum p-_0 from the continuous Legendre transform of a given
  initial velocity (p = M(q_0) v_0), or, for a periodic gait, from the last interval (periodicity
  of the discrete momentum).

Forces enter as `force_scale` times their decision variables, and each dynamics residual is
divided by `force_scale`, so that the solver sees numbers of order one in any unit system.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from drakebots.optimization.tree_lagrangian import Kinematics, TreeLagrangian

# Friction pyramid: four directions per contact, as the authors used (reference README).
PYRAMID_DIRECTIONS = np.array([[1.0, 0, 0], [0, 1.0, 0], [-1.0, 0, 0], [0, -1.0, 0]])


def PyramidDirections(count: int = 4) -> np.ndarray:
    """The `count` unit tangent directions of a friction pyramid, evenly spaced about the ground
    normal z starting at +x, shape (count, 3); 4 gives +-x, +-y (`PYRAMID_DIRECTIONS`).

    The maximum-dissipation conditions of Eq. 13 fix the friction direction only to the pyramid
    edge(s) most opposed to the slip; for a slip between two edges (e.g. on the diagonal of the
    4-edge pyramid) both edges qualify and the friction may lie anywhere between them, up to
    pi/count away from the Coulomb direction. An optimizer uses that freedom: 10 Hz HAMR gaits
    planned with 4 edges slid loaded feet along the diagonal with friction along y only, and
    walked in Drake's cone-friction simulator with their leg motion imposed only 0.53-0.60 of
    their planned distance (8 edges: 0.75; tests/optimization/test_friction_pyramid.py shows the
    sliding-block version of the effect).

    Raises:
        ValueError: for fewer than 3 directions (no pyramid).
    """
    if int(count) != count or count < 3:
        raise ValueError(f"a friction pyramid needs at least 3 directions, got {count}")
    if count == 4:
        return PYRAMID_DIRECTIONS.copy()
    angles = 2.0 * np.pi * np.arange(int(count)) / count
    return np.stack([np.cos(angles), np.sin(angles), np.zeros(int(count))], axis=1)


@dataclasses.dataclass
class PointContact:
    """A contact point fixed on a body, touching the flat ground z = ground_height.

    Attributes:
        body_index: the body (int of a BodyIndex).
        p_BC: the point in the body frame (plant units).
        name: used in constraint names.
    """

    body_index: int
    p_BC: np.ndarray  # noqa: N815 (monogram notation)
    name: str = ""


class LinearActuation:
    """Generalized forces tau = B u with a constant actuation matrix B (plant's by default)."""

    def __init__(self, B: np.ndarray):
        self.B = np.asarray(B, dtype=float)
        self.num_inputs = self.B.shape[1]

    def Evaluate(self, q: np.ndarray, u: np.ndarray):
        """Returns tau, dtau/dq, dtau/du."""
        return self.B @ u, np.zeros((self.B.shape[0], len(q))), self.B


class JointForceActuation:
    """Each input drives one joint through a force law F(u_i, q_joint) with known derivatives,
    e.g. a piezoelectric bender whose force is affine in voltage and deflection (Eq. 3).

    Args:
        num_positions: n.
        joint_indices: for each input, the index of its joint's coordinate in q.
        force: f(u, x) -> (F, dF/du, dF/dx), elementwise over the inputs (u and x arrays of
            num_inputs), in the plant's force unit.
    """

    def __init__(self, num_positions: int, joint_indices, force):
        self.num_positions = int(num_positions)
        self.joint_indices = np.asarray(joint_indices, dtype=int)
        self.num_inputs = len(self.joint_indices)
        self.force = force

    def Evaluate(self, q: np.ndarray, u: np.ndarray):
        """Returns tau, dtau/dq, dtau/du."""
        n, idx = self.num_positions, self.joint_indices
        F, dF_du, dF_dx = self.force(np.asarray(u, float), np.asarray(q, float)[idx])
        tau = np.zeros(n)
        tau[idx] = F
        tau_q = np.zeros((n, n))
        tau_q[idx, idx] = dF_dx
        tau_u = np.zeros((n, self.num_inputs))
        tau_u[idx, np.arange(self.num_inputs)] = dF_du
        return tau, tau_q, tau_u


@dataclasses.dataclass
class IntervalTerms:
    """Momenta at the two ends of one interval and their Jacobians (wrt q0, q1, u, h)."""

    p_plus: np.ndarray
    p_minus: np.ndarray
    d_plus: tuple
    d_minus: tuple
    energy: float


class VariationalDynamics:
    """The midpoint variational dynamics of a plant with point contacts and position constraints.

    Args:
        lagrangian: the plant's TreeLagrangian (mass, potential, damping).
        contacts: the contact points (may be empty).
        friction: Coulomb friction coefficient of the ground.
        actuation: an object with num_inputs and Evaluate(q, u) -> (tau, dtau_dq, dtau_du)
            (default: the plant's actuation matrix).
        position_constraints: an object with num_constraints, Evaluate(kin), Jacobian(kin) and
            JacobianTransposeTimesDerivative(kin, lam) (for example RelativePositionConstraints),
            or None.
        force_scale: forces (normal, friction, constraint) are force_scale times their decision
            variables, in the plant's force unit.
        ground_height: the height of the ground plane (plant length unit).
        friction_directions: edges of the friction pyramid (`PyramidDirections`; the authors: 4).
    """

    def __init__(
        self,
        lagrangian: TreeLagrangian,
        *,
        contacts: list[PointContact] = (),
        friction: float = 1.0,
        actuation=None,
        position_constraints=None,
        force_scale: float = 1.0,
        ground_height: float = 0.0,
        cache_size: int = 4096,
        friction_directions: int = 4,
    ):
        self.lagrangian = lagrangian
        self.plant = lagrangian.plant
        self.num_positions = lagrangian.num_positions
        self.contacts = list(contacts)
        self.num_contacts = len(self.contacts)
        self._contact_bodies = np.array([c.body_index for c in self.contacts], dtype=int)
        self._contact_p_BC = np.array([c.p_BC for c in self.contacts], float).reshape(-1, 3)
        self.friction = float(friction)
        if actuation is None:
            B = self.plant.MakeActuationMatrix()
            actuation = (
                LinearActuation(B) if B.shape[1] else LinearActuation(np.zeros((B.shape[0], 0)))
            )
        self.actuation = actuation
        self.num_inputs = actuation.num_inputs
        self.position_constraints = position_constraints
        self.num_position_constraints = (
            position_constraints.num_constraints if position_constraints is not None else 0
        )
        self.force_scale = float(force_scale)
        self.ground_height = float(ground_height)
        self.normal = np.array([0.0, 0.0, 1.0])
        self.directions = PyramidDirections(friction_directions)
        self.num_directions = len(self.directions)
        self._kin_cache: collections.OrderedDict = collections.OrderedDict()
        self._interval_cache: collections.OrderedDict = collections.OrderedDict()
        self._cache_size = cache_size
        self.evaluation_counts = collections.Counter()
        # Optional callable(number of interval evaluations), called on every new evaluation (a
        # progress display during long solves).
        self.progress = None

    # ------------------------------------------------------------------ caches
    def Kinematics(self, q: np.ndarray) -> Kinematics:
        """Kinematics at q, memoised (the solver evaluates every binding at the same point)."""
        key = np.asarray(q, dtype=float).tobytes()
        kin = self._kin_cache.get(key)
        if kin is None:
            self.evaluation_counts["kinematics"] += 1
            kin = self.lagrangian.CalcKinematics(q)
            self._kin_cache[key] = kin
            if len(self._kin_cache) > self._cache_size:
                self._kin_cache.popitem(last=False)
        return kin

    def ClearCaches(self) -> None:
        self._kin_cache.clear()
        self._interval_cache.clear()

    # ------------------------------------------------------------------ intervals
    def Interval(self, q0, q1, u, h) -> IntervalTerms:
        """Momenta p+ (leaving q0) and p- (arriving at q1) of one midpoint step, with Jacobians.

        Returns IntervalTerms whose d_plus/d_minus are (d/dq0, d/dq1, d/du, d/dh).
        """
        q0 = np.asarray(q0, float)
        q1 = np.asarray(q1, float)
        u = np.asarray(u, float)
        key = b"".join([q0.tobytes(), q1.tobytes(), u.tobytes(), np.float64(h).tobytes()])
        hit = self._interval_cache.get(key)
        if hit is not None:
            return hit
        self.evaluation_counts["interval"] += 1
        if self.progress is not None:
            self.progress(self.evaluation_counts["interval"])
        lag = self.lagrangian
        q_mid = 0.5 * (q0 + q1)
        v_mid = (q1 - q0) / h
        kin = self.Kinematics(q_mid)
        t = lag.Terms(kin, v_mid)
        tau, tau_q, tau_u = self.actuation.Evaluate(q_mid, u)
        damping = lag.damping
        G = t.T_q - t.V_q - damping * v_mid + tau
        G_qm = t.T_qq - t.V_qq + tau_q  # dG/dq_mid
        G_vm = t.P.T - np.diag(damping)  # dG/dqdot_mid
        Mv = t.Mv
        # d(M qdot_mid): wrt q_mid is P, wrt qdot_mid is M.
        dMv_q0 = 0.5 * t.P - t.M / h
        dMv_q1 = 0.5 * t.P + t.M / h
        dMv_h = -(t.M @ v_mid) / h
        dG_q0 = 0.5 * G_qm - G_vm / h
        dG_q1 = 0.5 * G_qm + G_vm / h
        dG_h = -(G_vm @ v_mid) / h
        half_h = 0.5 * h
        p_plus = Mv - half_h * G
        p_minus = Mv + half_h * G
        d_plus = (
            dMv_q0 - half_h * dG_q0,
            dMv_q1 - half_h * dG_q1,
            -half_h * tau_u,
            dMv_h - 0.5 * G - half_h * dG_h,
        )
        d_minus = (
            dMv_q0 + half_h * dG_q0,
            dMv_q1 + half_h * dG_q1,
            half_h * tau_u,
            dMv_h + 0.5 * G + half_h * dG_h,
        )
        energy = t.kinetic_energy + t.potential_energy
        terms = IntervalTerms(p_plus, p_minus, d_plus, d_minus, energy)
        self._interval_cache[key] = terms
        if len(self._interval_cache) > self._cache_size:
            self._interval_cache.popitem(last=False)
        return terms

    def LegendreMomentum(self, q: np.ndarray, qdot: np.ndarray):
        """The continuous Legendre transform p = M(q) qdot and its Jacobian wrt q."""
        t = self.lagrangian.Terms(self.Kinematics(q), qdot)
        return t.Mv, t.P

    # ------------------------------------------------------------------ contact geometry
    def ContactPoints(self, kin: Kinematics) -> np.ndarray:
        """(num_contacts, 3) world positions of the contact points (kept with kin, read-only)."""
        key = ("contact_points", id(self))
        points = kin.memo.get(key)
        if points is None:
            points = self.lagrangian.PointsPosition(kin, self._contact_bodies, self._contact_p_BC)
            points.setflags(write=False)  # shared by every caller at this configuration
            kin.memo[key] = points
        return points

    def ContactJacobians(self, kin: Kinematics) -> np.ndarray:
        """(num_contacts, 3, n) Jacobians of the contact points (kept with kin, read-only)."""
        key = ("contact_jacobians", id(self))
        J = kin.memo.get(key)
        if J is None:
            J = self.lagrangian.PointsJacobian(kin, self._contact_bodies, self.ContactPoints(kin))
            J = np.ascontiguousarray(J.transpose(0, 2, 1))
            J.setflags(write=False)
            kin.memo[key] = J
        return J

    def SignedDistances(self, q: np.ndarray) -> np.ndarray:
        """phi(q): heights of the contact points above the ground."""
        kin = self.Kinematics(q)
        return self.ContactPoints(kin)[:, 2] - self.ground_height

    def ContactForces(self, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """(num_contacts, 3) world contact forces from normal and pyramid variables (scaled)."""
        beta = np.asarray(beta, float).reshape(self.num_contacts, self.num_directions)
        return self.force_scale * (
            np.asarray(gamma, float)[:, None] * self.normal + beta @ self.directions
        )

    # ------------------------------------------------------------------ residuals
    def DelResidual(self, incoming, q_k, q_k1, u_k, lam, gamma, beta, h, *, jacobian=True):
        """The discrete Euler-Lagrange residual at a knot (force units / force_scale).

        Args:
            incoming: ("interval", q_a, q_b, u_a) for the interval arriving at this knot,
                ("legendre", qdot0) for an initial velocity at q_k, or ("momentum", p) for a
                fixed incoming momentum.
            q_k, q_k1, u_k: the outgoing interval.
            lam, gamma, beta: position-constraint multipliers (at q_k), normal forces and
                friction-pyramid forces (at q_k1), all scaled by force_scale.
            h: the time step.

        Returns:
            (r, blocks) where blocks maps an argument name to dr/d(argument) (when jacobian).
        """
        n = self.num_positions
        s = self.force_scale
        out = self.Interval(q_k, q_k1, u_k, h)
        blocks = {}
        kind = incoming[0]
        if kind == "interval":
            _, q_a, q_b, u_a = incoming
            inn = self.Interval(q_a, q_b, u_a, h)
            p_in = inn.p_minus
        elif kind == "legendre":
            p_in, P0 = self.LegendreMomentum(q_k, incoming[1])
        else:
            p_in = np.asarray(incoming[1], float)
        r = (p_in - out.p_plus) / (h * s)
        kin_k = self.Kinematics(q_k)
        if self.num_position_constraints:
            C = self.position_constraints.Jacobian(kin_k)
            r = r + C.T @ lam
        if self.num_contacts:
            kin_k1 = self.Kinematics(q_k1)
            points = self.ContactPoints(kin_k1)
            J = self.ContactJacobians(kin_k1)
            forces = (
                np.asarray(gamma, float)[:, None] * self.normal
                + np.asarray(beta, float).reshape(self.num_contacts, self.num_directions)
                @ self.directions
            )
            r = r + np.einsum("cin,ci->n", J, forces)
        if not jacobian:
            return r, None
        inv = 1.0 / (h * s)
        blocks["q_k"] = -out.d_plus[0] * inv
        blocks["q_k1"] = -out.d_plus[1] * inv
        blocks["u_k"] = -out.d_plus[2] * inv
        blocks["h"] = -out.d_plus[3] * inv - (p_in - out.p_plus) / (h * h * s)
        if kind == "interval":
            blocks["q_a"] = inn.d_minus[0] * inv
            blocks["q_b"] = inn.d_minus[1] * inv
            blocks["u_a"] = inn.d_minus[2] * inv
            blocks["h"] = blocks["h"] + inn.d_minus[3] * inv
        elif kind == "legendre":
            blocks["q_k"] = blocks["q_k"] + P0 * inv
        if self.num_position_constraints:
            blocks["lam"] = C.T
            blocks["q_k"] = blocks[
                "q_k"
            ] + self.position_constraints.JacobianTransposeTimesDerivative(
                kin_k, np.asarray(lam, float)
            )
        if self.num_contacts:
            H = self.lagrangian.PointsHessianTimes(kin_k1, self._contact_bodies, points, forces)
            blocks["q_k1"] = blocks["q_k1"] + H
            blocks["gamma"] = np.einsum("cin,i->nc", J, self.normal)
            blocks["beta"] = np.einsum("cin,ji->ncj", J, self.directions).reshape(n, -1)
        return r, blocks

    def SlidingResidual(self, q_k, q_k1, psi, eta, h, *, jacobian=True):
        """Max-dissipation stationarity g1 of Eq. 13, one row per contact c and direction j:
        d_j . (p_c(q_k+1) - p_c(q_k))/h + psi_c - eta_cj.

        The tangential velocity is the finite displacement of each contact point over the step
        (equal to D(q_k+1) qdot_mid to first order; exact for translating bodies).
        """
        kin0 = self.Kinematics(q_k)
        kin1 = self.Kinematics(q_k1)
        x0 = self.ContactPoints(kin0)
        x1 = self.ContactPoints(kin1)
        D = self.directions
        nc, nd = self.num_contacts, self.num_directions
        psi = np.asarray(psi, float)
        eta = np.asarray(eta, float).reshape(nc, nd)
        r = ((x1 - x0) @ D.T) / h + psi[:, None] - eta  # (nc, nd)
        r = r.ravel()
        if not jacobian:
            return r, None
        J0 = self.ContactJacobians(kin0)
        J1 = self.ContactJacobians(kin1)
        blocks = {
            "q_k": -np.einsum("ji,cin->cjn", D, J0).reshape(nc * nd, -1) / h,
            "q_k1": np.einsum("ji,cin->cjn", D, J1).reshape(nc * nd, -1) / h,
            "psi": np.kron(np.eye(nc), np.ones((nd, 1))),
            "eta": -np.eye(nc * nd),
            "h": -(((x1 - x0) @ D.T) / (h * h)).reshape(-1, 1),
        }
        return r, blocks

    def NormalResidual(self, q, gamma, slack, *, jacobian=True):
        """[phi_c(q) for each contact, sum_c gamma_c phi_c(q) - slack] (Eqs. 11-12, 15)."""
        kin = self.Kinematics(q)
        x = self.ContactPoints(kin)
        phi = x[:, 2] - self.ground_height
        gamma = np.asarray(gamma, float)
        r = np.concatenate([phi, [float(gamma @ phi) - float(slack)]])
        if not jacobian:
            return r, None
        Jz = self.ContactJacobians(kin)[:, 2, :]
        blocks = {
            "q": np.vstack([Jz, gamma @ Jz]),
            "gamma": np.vstack([np.zeros((self.num_contacts, self.num_contacts)), phi]),
            "slack": np.concatenate([np.zeros(self.num_contacts), [-1.0]])[:, None],
        }
        return r, blocks

    def PositionConstraintResidual(self, q, *, jacobian=True):
        """c(q) and its Jacobian."""
        kin = self.Kinematics(q)
        c = self.position_constraints.Evaluate(kin)
        if not jacobian:
            return c, None
        return c, {"q": self.position_constraints.Jacobian(kin)}


def SimulateVariational(
    dynamics: VariationalDynamics,
    q0: np.ndarray,
    qdot0: np.ndarray,
    h: float,
    num_steps: int,
    *,
    inputs=None,
    tolerance: float = 1e-12,
    max_newton: int = 30,
):
    """Integrates the midpoint variational integrator step by step (no contact), by Newton.

    Each step solves the discrete Euler-Lagrange equation (and c(q_k+1) = 0 with multipliers
    when the dynamics has position constraints) for q_k+1, with the exact Jacobians of
    `VariationalDynamics.DelResidual`. The first step uses the Legendre transform of qdot0.

    Args:
        dynamics: a VariationalDynamics without contacts.
        q0, qdot0: the initial positions and time derivatives of positions.
        h: time step (plant time unit).
        num_steps: number of steps.
        inputs: None (zero) or an array (num_steps, num_inputs).

    Returns:
        (q, energy): q of shape (num_steps + 1, n) and the energy of each interval's midpoint.
    """
    if dynamics.num_contacts:
        raise ValueError("SimulateVariational integrates contact-free dynamics only")
    n, m = dynamics.num_positions, dynamics.num_inputs
    nl = dynamics.num_position_constraints
    u = np.zeros((num_steps, m)) if inputs is None else np.asarray(inputs, float)
    q = np.zeros((num_steps + 1, n))
    q[0] = q0
    energies = []
    guess = np.asarray(q0, float) + h * np.asarray(qdot0, float)
    lam = np.zeros(nl)
    empty = np.zeros(0)
    for k in range(num_steps):
        incoming = ("legendre", qdot0) if k == 0 else ("interval", q[k - 1], q[k], u[k - 1])
        x = guess.copy()
        for _ in range(max_newton):
            r, blocks = dynamics.DelResidual(incoming, q[k], x, u[k], lam, empty, empty, h)
            if nl:
                c, cb = dynamics.PositionConstraintResidual(x)
                F = np.concatenate([r, c])
                # Unknowns: q_k+1 and lambda_k (which multiplies C(q_k)).
                Jac = np.block([[blocks["q_k1"], blocks["lam"]], [cb["q"], np.zeros((nl, nl))]])
            else:
                F, Jac = r, blocks["q_k1"]
            step = np.linalg.solve(Jac, -F)
            x = x + step[:n]
            if nl:
                lam = lam + step[n:]
            if np.max(np.abs(step)) < tolerance * (1.0 + np.max(np.abs(x))):
                break
        else:
            raise RuntimeError(f"Newton did not converge at step {k} (|F| = {np.abs(F).max():g})")
        q[k + 1] = x
        energies.append(dynamics.Interval(q[k], x, u[k], h).energy)
        guess = 2 * x - q[k]
    return q, np.array(energies)
