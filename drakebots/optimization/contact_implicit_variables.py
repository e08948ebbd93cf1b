"""Decision variables of the variational contact-implicit transcription (hamr-contact-implicit.txt,
Sec. III, Eq. 15).

With N knots q_0 .. q_N-1 and N-1 intervals, the program holds

  q[k]      knot configurations (N, n)
  u[k]      inputs, held over interval k (N-1, m)
  lam[k]    position-constraint (kinematic loop) multipliers at knot k (N-1, n_c)
  gamma[k]  normal forces acting at the end of interval k (N-1, contacts)
  beta[k]   friction forces along the pyramid directions (N-1, contacts * 4)
  psi[k]    sliding speeds, the max-dissipation multiplier of the cone constraint (N-1, contacts)
  eta[k]    max-dissipation multipliers of beta >= 0 (N-1, contacts * 4)
  slack[k]  one complementarity relaxation per interval (N-1,)
  h         the time step: a decision variable (one for all intervals) or a fixed number.

Forces (lam, gamma, beta) are in units of `VariationalDynamics.force_scale`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydrake.solvers import MathematicalProgram


@dataclasses.dataclass
class ContactImplicitVariables:
    """The decision variables of one transcription (see the module docstring)."""

    num_knots: int
    q: np.ndarray
    u: np.ndarray
    lam: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    psi: np.ndarray
    eta: np.ndarray
    slack: np.ndarray
    h: np.ndarray | None  # (1,) variable, or None for a fixed time step
    time_step: float  # the fixed time step, or the nominal one when h is a variable

    @property
    def num_intervals(self) -> int:
        return self.num_knots - 1

    def TimeStep(self, values: np.ndarray | None = None) -> float:
        """The time step: fixed, or read from a solution vector (None: the nominal)."""
        if self.h is None or values is None:
            return self.time_step
        return float(values[0])

    def Groups(self) -> dict[str, np.ndarray]:
        """Name -> variables, for initial guesses and saving solutions."""
        groups = {
            "q": self.q,
            "u": self.u,
            "lam": self.lam,
            "gamma": self.gamma,
            "beta": self.beta,
            "psi": self.psi,
            "eta": self.eta,
            "slack": self.slack,
        }
        if self.h is not None:
            groups["h"] = self.h
        return groups


def AddContactImplicitVariables(
    prog: MathematicalProgram,
    dynamics,
    num_knots: int,
    *,
    time_step: float,
    time_step_bounds: tuple[float, float] | None = None,
) -> ContactImplicitVariables:
    """Adds the transcription's decision variables to `prog`.

    Args:
        prog: the program.
        dynamics: the VariationalDynamics (sizes).
        num_knots: N >= 2.
        time_step: the (nominal) time step, plant time unit.
        time_step_bounds: (lower, upper) to make the time step a decision variable (the paper's
            free final time within [0.9 T, 1.1 T] divides into these bounds), or None to fix it.
    """
    if num_knots < 2:
        raise ValueError(f"num_knots must be >= 2, got {num_knots}")
    N, n = num_knots, dynamics.num_positions
    nc, nd = dynamics.num_contacts, dynamics.num_directions
    q = prog.NewContinuousVariables(N, n, "q")
    u = prog.NewContinuousVariables(N - 1, dynamics.num_inputs, "u")
    lam = prog.NewContinuousVariables(N - 1, dynamics.num_position_constraints, "lambda")
    gamma = prog.NewContinuousVariables(N - 1, nc, "gamma")
    beta = prog.NewContinuousVariables(N - 1, nc * nd, "beta")
    psi = prog.NewContinuousVariables(N - 1, nc, "psi")
    eta = prog.NewContinuousVariables(N - 1, nc * nd, "eta")
    slack = prog.NewContinuousVariables(N - 1, "slack")
    h = None
    if time_step_bounds is not None:
        h = prog.NewContinuousVariables(1, "h")
        lower, upper = time_step_bounds
        if not 0 < lower <= time_step <= upper:
            raise ValueError(f"time step {time_step} outside its bounds {time_step_bounds}")
        prog.AddBoundingBoxConstraint(lower, upper, h).evaluator().set_description("time_step")
        prog.SetInitialGuess(h, [time_step])
    return ContactImplicitVariables(
        num_knots=N,
        q=q,
        u=u,
        lam=lam,
        gamma=gamma,
        beta=beta,
        psi=psi,
        eta=eta,
        slack=np.asarray(slack).ravel(),
        h=h,
        time_step=float(time_step),
    )
