"""Costs of the variational contact-implicit transcription (hamr-contact-implicit.txt, Eqs. 15-17).

All are quadratic or linear in the decision variables and stay in Drake's native cost types.
Velocities in costs are finite differences of knots over the nominal time step (exact when the
time step is fixed; with a free time step they are the velocities the nominal step would give,
which keeps the costs quadratic).
"""

from __future__ import annotations

import numpy as np
from pydrake.solvers import Binding, MathematicalProgram

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
