"""Natural frequencies and mode shapes of a constrained mechanical system, from arrays.

For a system with mass matrix M, stiffness K (the Hessian of the Lagrangian at an equilibrium,
constraint curvature included), damping D and constraint Jacobian G (rows of ∂g/∂q, with g(q) = 0
holding), the small motions are δq = N z with N an orthonormal basis of the null space of G, and

    (Nᵀ M N) z̈ + (Nᵀ D N) ż + (Nᵀ K N) z = 0.

`ConstrainedModes` solves the undamped generalized eigenproblem (Nᵀ K N) φ = ω² (Nᵀ M N) φ and,
when D is given, the damped quadratic eigenproblem for each mode's damping ratio. NumPy/SciPy
only; units are the caller's (ω is in rad per time unit).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg


@dataclasses.dataclass
class Modes:
    """Modes of a constrained system, sorted by frequency.

    Attributes:
        omega: (m,) natural frequencies, rad per time unit (negative for an unstable direction:
            -sqrt(-λ)).
        shapes: (n, m) mode shapes in the full coordinates (columns N φ, mass-normalised).
        damping_ratio: (m,) ζ of the damped mode nearest each undamped one (NaN without D).
        null_space: (n, m) the basis N.
        constraint_rank: rank of G.
    """

    omega: np.ndarray
    shapes: np.ndarray
    damping_ratio: np.ndarray
    null_space: np.ndarray
    constraint_rank: int


def NullSpace(G: np.ndarray, *, rtol: float = 1e-9) -> tuple[np.ndarray, int]:
    """Orthonormal basis of the null space of G and G's numerical rank."""
    if G.size == 0:
        return np.eye(G.shape[1]), 0
    _, s, Vt = scipy.linalg.svd(G)
    rank = int(np.sum(s > rtol * s[0])) if s.size else 0
    return Vt[rank:].T, rank


def ConstrainedModes(
    M: np.ndarray, K: np.ndarray, G: np.ndarray, D: np.ndarray | None = None
) -> Modes:
    """Modes of M q̈ + D q̇ + K q = 0 restricted to G q = 0 (see the module docstring).

    Args:
        M: (n, n) symmetric positive definite mass matrix.
        K: (n, n) stiffness (symmetrised here).
        G: (r, n) constraint Jacobian (rank deficiency allowed).
        D: (n, n) damping, optional.
    """
    N, rank = NullSpace(G)
    Mr = N.T @ M @ N
    Kr = N.T @ (0.5 * (K + K.T)) @ N
    eigenvalues, vectors = scipy.linalg.eigh(Kr, Mr)
    omega = np.sign(eigenvalues) * np.sqrt(np.abs(eigenvalues))
    shapes = N @ vectors
    zeta = np.full(omega.shape, np.nan)
    if D is not None:
        Dr = N.T @ (0.5 * (D + D.T)) @ N
        m = Mr.shape[0]
        A = np.block(
            [[np.zeros((m, m)), np.eye(m)], [-np.linalg.solve(Mr, Kr), -np.linalg.solve(Mr, Dr)]]
        )
        poles = np.linalg.eigvals(A)
        for k, w in enumerate(omega):
            if w <= 0:
                continue
            # The damped pole whose natural frequency |p| is nearest ω.
            p = poles[np.argmin(np.abs(np.abs(poles) - w) + 1e-9 * (poles.imag < 0))]
            zeta[k] = -p.real / abs(p)
    return Modes(omega=omega, shapes=shapes, damping_ratio=zeta, null_space=N, constraint_rank=rank)


def HertzFromOmega(omega, time_unit_seconds: float = 1.0) -> np.ndarray:
    """Frequencies in Hz from angular frequencies in rad per time unit (ms: 1e-3)."""
    return np.asarray(omega) / (2.0 * np.pi) / time_unit_seconds
