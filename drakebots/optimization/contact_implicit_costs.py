"""Costs of the variational contact-implicit transcription (hamr-contact-implicit.txt, Eqs. 15-17).

The costs of the paper are quadratic or linear in the decision variables and stay in Drake's
native cost types. Velocities in costs are finite differences of knots over the nominal time step
(exact when the time step is fixed; with a free time step they are the velocities the nominal step
would give, which keeps the costs quadratic). `AddFootScuffCost` (not in the paper) is a Python
cost with an exact analytic gradient.
"""

from __future__ import annotations

import numpy as np
from pydrake.solvers import Binding, MathematicalProgram

from drakebots.optimization.contact_implicit_constraints import (
    BlockConstraintFunction,
    BlockFunctions,
)
from drakebots.optimization.contact_implicit_variables import ContactImplicitVariables


def AddComplementarityPenalty(
    prog: MathematicalProgram, vars: ContactImplicitVariables, *, weight: float
) -> Binding:
    """alpha * sum_k slack_k, the exact penalty of Eq. 15, `complementarity_penalty`."""
    b = prog.AddLinearCost(np.full(vars.num_intervals, float(weight)), 0.0, vars.slack)
    b.evaluator().set_description("complementarity_penalty")
    return b


def AddFinalStateCost(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    *,
    q_goal: np.ndarray,
    qdot_goal: np.ndarray,
    q_weights: np.ndarray,
    qdot_weights: np.ndarray,
) -> Binding:
    """(x_N - x_g)^T Q (x_N - x_g) with x = [q; qdot] at the last knot (Eqs. 16 and 17).

    qdot_N is (q_N-1 - q_N-2) / h_nominal. Weights are the diagonal of Q, `final_state`.
    """
    n = vars.q.shape[1]
    h = vars.time_step
    Wq = np.diag(np.asarray(q_weights, float))
    Wv = np.diag(np.asarray(qdot_weights, float))
    # Variables x = [q_N-2, q_N-1]; q_N = S_q x, qdot_N = S_v x.
    S_q = np.hstack([np.zeros((n, n)), np.eye(n)])
    S_v = np.hstack([-np.eye(n), np.eye(n)]) / h
    Q = 2.0 * (S_q.T @ Wq @ S_q + S_v.T @ Wv @ S_v)
    q_goal = np.asarray(q_goal, float)
    qdot_goal = np.asarray(qdot_goal, float)
    b = -2.0 * (S_q.T @ Wq @ q_goal + S_v.T @ Wv @ qdot_goal)
    c = float(q_goal @ Wq @ q_goal + qdot_goal @ Wv @ qdot_goal)
    binding = prog.AddQuadraticCost(Q, b, c, np.concatenate([vars.q[-2], vars.q[-1]]))
    binding.evaluator().set_description("final_state")
    return binding


def AddVelocitySmoothnessCost(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    *,
    weight: float,
    weights: np.ndarray | None = None,
) -> list[Binding]:
    """sum_i c1/2 |qdot_i - qdot_i-1|^2 (Eq. 16), qdot_i = (q_i - q_i-1)/h.

    Bindings `velocity_smoothness[i]`.

    Args:
        weight: c1.
        weights: optional per-coordinate factors (default ones).
    """
    n = vars.q.shape[1]
    h = vars.time_step
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    # dqdot = (q_i+1 - 2 q_i + q_i-1)/h on x = [q_i-1, q_i, q_i+1].
    D = np.hstack([np.eye(n), -2.0 * np.eye(n), np.eye(n)]) / h
    Q = weight * D.T @ np.diag(w) @ D
    bindings = []
    for i in range(1, vars.num_knots - 1):
        b = prog.AddQuadraticCost(
            Q, np.zeros(3 * n), 0.0, np.concatenate([vars.q[i - 1], vars.q[i], vars.q[i + 1]])
        )
        b.evaluator().set_description(f"velocity_smoothness[{i}]")
        bindings.append(b)
    return bindings


def AddInputSmoothnessCost(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    *,
    weight: float = 1.0,
    scale: np.ndarray | float = 1.0,
) -> list[Binding]:
    """sum_i weight/2 |(u_i - u_i-1)/scale|^2 (Eq. 16), `input_smoothness[i]`."""
    m = vars.u.shape[1]
    if m == 0:
        return []
    s = np.broadcast_to(np.asarray(scale, float), (m,))
    D = np.hstack([-np.diag(1 / s), np.diag(1 / s)])
    Q = weight * D.T @ D
    bindings = []
    for i in range(1, vars.num_intervals):
        b = prog.AddQuadraticCost(
            Q, np.zeros(2 * m), 0.0, np.concatenate([vars.u[i - 1], vars.u[i]])
        )
        b.evaluator().set_description(f"input_smoothness[{i}]")
        bindings.append(b)
    return bindings


def AddInputCost(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    *,
    R: np.ndarray,
    u_reference: np.ndarray | None = None,
) -> list[Binding]:
    """sum_i 1/2 (u_i - u_ref)^T R (u_i - u_ref) (Eq. 17 with u_ref = 0), `input[i]`."""
    m = vars.u.shape[1]
    if m == 0:
        return []
    R = np.diag(R) if np.ndim(R) == 1 else np.asarray(R, float)
    u_ref = np.zeros(m) if u_reference is None else np.asarray(u_reference, float)
    bindings = []
    for i in range(vars.num_intervals):
        b = prog.AddQuadraticErrorCost(0.5 * R, u_ref, vars.u[i])
        b.evaluator().set_description(f"input[{i}]")
        bindings.append(b)
    return bindings


def FootScuff(dynamics, q0: np.ndarray, q1: np.ndarray, *, height_scale: float, jacobian: bool):
    """sum_c 1/2 exp(-(phi_c(q0) + phi_c(q1)) / (2 delta)) |P (p_c(q1) - p_c(q0))|^2 over the
    contact points c, with P the projection onto the ground plane and delta = `height_scale`.

    Returns (value, {"q0": d/dq0, "q1": d/dq1} or None). The weight is 1 on the ground and falls
    by e per delta of mean height, so a foot that moves along the ground while near it (a loaded
    foot sliding, or a swing foot scuffing) pays for its displacement, and one that moves high
    enough does not.
    """
    n = dynamics.normal
    P = np.eye(3) - np.outer(n, n)
    kin0, kin1 = dynamics.Kinematics(q0), dynamics.Kinematics(q1)
    p0, p1 = dynamics.ContactPoints(kin0), dynamics.ContactPoints(kin1)
    phi = 0.5 * ((p0 + p1) @ n) - dynamics.ground_height  # mean heights (nc,)
    weight = np.exp(-phi / height_scale)
    d = (p1 - p0) @ P  # tangential displacements (nc, 3)
    squared = np.einsum("ij,ij->i", d, d)
    value = 0.5 * float(weight @ squared)
    if not jacobian:
        return value, None
    J0 = dynamics.ContactJacobians(kin0)  # (nc, 3, n)
    J1 = dynamics.ContactJacobians(kin1)
    # d value = sum_c w_c (d_c^T P dp_c) - w_c |d_c|^2 / (4 delta) n^T dp_c at either end.
    a = weight[:, None] * d  # (nc, 3); P d = d
    b = (-0.25 / height_scale) * (weight * squared)[:, None] * n[None, :]
    g1 = np.einsum("ci,cij->j", a + b, J1)
    g0 = np.einsum("ci,cij->j", -a + b, J0)
    return value, {"q0": g0, "q1": g1}


class _ScalarBlockFunction(BlockConstraintFunction):
    """A BlockConstraintFunction with one row, returned as a scalar (a Python cost)."""

    def __call__(self, x):
        return np.asarray(super().__call__(x)).ravel()[0]


def AddFootScuffCost(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    dynamics,
    *,
    weight: float,
    height_scale: float,
) -> list[Binding]:
    """weight * sum_k FootScuff(q_k, q_k+1): tangential displacement of the contact points near
    the ground, `foot_scuff[k]` (not in the paper; see FootScuff).

    Contact-implicit plans otherwise let a swing foot skim the ground at zero clearance and a
    loaded foot slide wherever the friction model allows it; both are exact in the transcription
    and fragile on a robot (or in another simulator), where a foot a few micrometres low drags.
    The cost is in the plant's length unit squared (displacement per interval, so its size does
    not depend on the stride frequency for a given number of knots).

    Args:
        weight: cost per squared length unit of displacement on the ground.
        height_scale: delta, the height over which the weight falls by e (plant length unit).
    """
    if weight <= 0 or dynamics.num_contacts == 0:
        return []
    if not height_scale > 0:
        raise ValueError(f"height_scale must be > 0, got {height_scale}")
    n = dynamics.num_positions

    def Function(values, jacobian):
        value, blocks = FootScuff(
            dynamics, values["q0"], values["q1"], height_scale=height_scale, jacobian=jacobian
        )
        if blocks is not None:
            blocks = {name: weight * g[None, :] for name, g in blocks.items()}
        return np.array([weight * value]), blocks

    fn = _ScalarBlockFunction(Function, [("q0", n), ("q1", n)])
    # (weight, delta): what the fast path's vectorised evaluator of this cost needs
    # (drakebots.optimization.contact_implicit_fast), found through BlockFunctions(prog).
    fn.foot_scuff = (float(weight), float(height_scale))
    bindings = []
    for k in range(vars.num_intervals):
        b = prog.AddCost(fn, np.concatenate([vars.q[k], vars.q[k + 1]]))
        b.evaluator().set_description(f"foot_scuff[{k}]")
        BlockFunctions(prog)[f"foot_scuff[{k}]"] = fn
        bindings.append(b)
    return bindings
