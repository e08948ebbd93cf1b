"""Hyperelastic materials for linear tetrahedra: energy density, first Piola stress and its
derivative, vectorised over elements.

Every function takes deformation gradients `F` of shape (m, 3, 3) and returns

- `psi`: (m,) energy density, J/m^3;
- `P`: (m, 3, 3) first Piola-Kirchhoff stress dpsi/dF, Pa;
- `dPdF`: (m, 9, 9) its derivative, with F flattened row-major (index 3*i + j for F_ij).

Materials (skinned-quad-robots.txt section 4.1 uses neo-Hookean for the silicone skin, E = 0.09 GPa
and nu = 0.46, section 7):

- `neohookean`: the compressible neo-Hookean solid (Bonet & Wood),
  psi = mu/2 (tr(F^T F) - 3) - mu ln J + lambda/2 (ln J)^2. It is infinite for J <= 0, so an
  inverted element is detected, never silently simulated (see integrator.py).
- `corotated`: the fixed-corotated model (Stomakhin et al. 2012),
  psi = mu ||F - R||^2 + lambda/2 (J - 1)^2, R the rotation of the polar decomposition F = R S.
- `linear`: small-strain linear elasticity, psi = mu eps:eps + lambda/2 tr(eps)^2 with
  eps = (F + F^T)/2 - I (not invariant under rotations; for comparison only).

All three have the same linearisation at F = I, with Lamé parameters from Young's modulus and
Poisson's ratio (`LameParameters`).
"""

import dataclasses

import numpy as np

MATERIAL_MODELS = ("neohookean", "corotated", "linear")


@dataclasses.dataclass(frozen=True)
class Material:
    """An isotropic hyperelastic material (field names as Drake's DeformableBodyConfig).

    Attributes:
        youngs_modulus: E, Pa (the paper's skin: 0.09e9).
        poissons_ratio: nu, in (-1, 0.5) (the paper's skin: 0.46).
        mass_density: rho, kg/m^3.
        model: "neohookean", "corotated" or "linear".
        mass_damping: Rayleigh alpha, 1/s (D = alpha M + beta K).
        stiffness_damping: Rayleigh beta, s.
    """

    youngs_modulus: float = 0.09e9
    poissons_ratio: float = 0.46
    mass_density: float = 1100.0
    model: str = "neohookean"
    mass_damping: float = 0.0
    stiffness_damping: float = 0.0

    def __post_init__(self):
        Validate(self)

    @property
    def lame(self) -> tuple[float, float]:
        """(mu, lambda), Pa."""
        return LameParameters(self.youngs_modulus, self.poissons_ratio)


def Validate(material: Material) -> None:
    """Raises ValueError naming the bad field (Poisson's ratio >= 0.5, E <= 0, ...)."""
    if not material.youngs_modulus > 0.0:
        raise ValueError(f"youngs_modulus must be > 0 Pa, got {material.youngs_modulus}")
    if not -1.0 < material.poissons_ratio < 0.5:
        raise ValueError(
            f"poissons_ratio must be in (-1, 0.5) (0.5 is incompressible, which linear "
            f"tetrahedra cannot represent), got {material.poissons_ratio}"
        )
    if not material.mass_density > 0.0:
        raise ValueError(f"mass_density must be > 0 kg/m^3, got {material.mass_density}")
    if material.model not in MATERIAL_MODELS:
        raise ValueError(f"model must be one of {MATERIAL_MODELS}, got '{material.model}'")
    if material.mass_damping < 0.0 or material.stiffness_damping < 0.0:
        raise ValueError("Rayleigh damping coefficients must be >= 0")


def LameParameters(youngs_modulus: float, poissons_ratio: float) -> tuple[float, float]:
    """(mu, lambda) in Pa from Young's modulus (Pa) and Poisson's ratio."""
    E, nu = youngs_modulus, poissons_ratio
    mu = E / (2.0 * (1.0 + nu))
    lam = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    return mu, lam


def _Det(F):
    return (
        F[:, 0, 0] * (F[:, 1, 1] * F[:, 2, 2] - F[:, 1, 2] * F[:, 2, 1])
        - F[:, 0, 1] * (F[:, 1, 0] * F[:, 2, 2] - F[:, 1, 2] * F[:, 2, 0])
        + F[:, 0, 2] * (F[:, 1, 0] * F[:, 2, 1] - F[:, 1, 1] * F[:, 2, 0])
    )


def _Cofactor(F):
    """cof(F) = det(F) F^{-T}, (m, 3, 3), valid for any F."""
    C = np.empty_like(F)
    C[:, 0, 0] = F[:, 1, 1] * F[:, 2, 2] - F[:, 1, 2] * F[:, 2, 1]
    C[:, 0, 1] = F[:, 1, 2] * F[:, 2, 0] - F[:, 1, 0] * F[:, 2, 2]
    C[:, 0, 2] = F[:, 1, 0] * F[:, 2, 1] - F[:, 1, 1] * F[:, 2, 0]
    C[:, 1, 0] = F[:, 0, 2] * F[:, 2, 1] - F[:, 0, 1] * F[:, 2, 2]
    C[:, 1, 1] = F[:, 0, 0] * F[:, 2, 2] - F[:, 0, 2] * F[:, 2, 0]
    C[:, 1, 2] = F[:, 0, 1] * F[:, 2, 0] - F[:, 0, 0] * F[:, 2, 1]
    C[:, 2, 0] = F[:, 0, 1] * F[:, 1, 2] - F[:, 0, 2] * F[:, 1, 1]
    C[:, 2, 1] = F[:, 0, 2] * F[:, 1, 0] - F[:, 0, 0] * F[:, 1, 2]
    C[:, 2, 2] = F[:, 0, 0] * F[:, 1, 1] - F[:, 0, 1] * F[:, 1, 0]
    return C


def Determinant(F: np.ndarray) -> np.ndarray:
    """det F for (m, 3, 3) deformation gradients."""
    return _Det(F)


_EYE9 = np.eye(9)


def NeoHookean(F: np.ndarray, mu: float, lam: float, *, hessian: bool = True):
    """Compressible neo-Hookean: (psi, P, dPdF) (dPdF None unless `hessian`); J <= 0 gives inf."""
    J = _Det(F)
    ok = J > 0.0
    Jsafe = np.where(ok, J, 1.0)
    logJ = np.log(Jsafe)
    Finv_T = _Cofactor(F) / Jsafe[:, None, None]
    Ic = np.einsum("mij,mij->m", F, F)
    psi = 0.5 * mu * (Ic - 3.0) - mu * logJ + 0.5 * lam * logJ**2
    psi = np.where(ok, psi, np.inf)
    P = mu * (F - Finv_T) + (lam * logJ)[:, None, None] * Finv_T
    if not hessian:
        return psi, P, None
    # dP_ij/dF_kl = mu d_ik d_jl + (mu - lam ln J) Finv_jk Finv_li + lam Finv_T_ij Finv_T_kl.
    Finv = np.transpose(Finv_T, (0, 2, 1))
    m = F.shape[0]
    # T[i,j,k,l] = Finv[j,k] Finv[l,i]
    T = np.einsum("mjk,mli->mijkl", Finv, Finv).reshape(m, 9, 9)
    a = Finv_T.reshape(m, 9)
    dPdF = (
        mu * _EYE9[None]
        + (mu - lam * logJ)[:, None, None] * T
        + lam * a[:, :, None] * a[:, None, :]
    )
    return psi, P, dPdF


def _PolarRotation(F):
    """R of F = R S (det R = +1) and the SVD pieces (U, sigma, V) with det U = det V = +1."""
    U, s, Vt = np.linalg.svd(F)
    V = np.transpose(Vt, (0, 2, 1))
    # Rotation-variant SVD: push reflections into the smallest singular value.
    dU = np.linalg.det(U)
    dV = np.linalg.det(V)
    flipU = dU < 0
    flipV = dV < 0
    U[flipU, :, 2] *= -1.0
    s[flipU, 2] *= -1.0
    V[flipV, :, 2] *= -1.0
    s[flipV, 2] *= -1.0
    R = U @ np.transpose(V, (0, 2, 1))
    return R, U, s, V


def Corotated(F: np.ndarray, mu: float, lam: float, *, hessian: bool = True):
    """Fixed-corotated (Stomakhin 2012): (psi, P, dPdF)."""
    R, U, s, V = _PolarRotation(F)
    J = _Det(F)
    D = F - R
    psi = mu * np.einsum("mij,mij->m", D, D) + 0.5 * lam * (J - 1.0) ** 2
    cof = _Cofactor(F)  # dJ/dF
    P = 2.0 * mu * D + (lam * (J - 1.0))[:, None, None] * cof
    if not hessian:
        return psi, P, None
    m = F.shape[0]
    # d(cof)/dF: cof_ij = 1/2 e_ikl e_jmn F_km F_ln -> dcof_ij/dF_ab = e_iak e_jbl F_kl.
    eps = np.zeros((3, 3, 3))
    eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1.0
    eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1.0
    dcof = np.einsum("iak,jbl,mkl->mijab", eps, eps, F).reshape(m, 9, 9)
    c = cof.reshape(m, 9)
    # dR/dF via the SVD: with M = U^T dF V, dR = U W V^T, W_ij = (M_ij - M_ji)/(s_i + s_j).
    dR = np.empty((m, 9, 9))
    Ut = np.transpose(U, (0, 2, 1))
    Vt = np.transpose(V, (0, 2, 1))
    ssum = s[:, :, None] + s[:, None, :]
    ssum = np.where(np.abs(ssum) < 1e-12, 1e-12, ssum)
    for a in range(3):
        for b in range(3):
            # M = U^T E_ab V: M_ij = U_ai V_bj.
            M = U[:, a, :, None] * V[:, b, None, :]
            W = (M - np.transpose(M, (0, 2, 1))) / ssum
            dR[:, :, 3 * a + b] = (U @ W @ Vt).reshape(m, 9)
    del Ut
    dPdF = (
        2.0 * mu * (_EYE9[None] - dR)
        + lam * c[:, :, None] * c[:, None, :]
        + (lam * (J - 1.0))[:, None, None] * dcof
    )
    return psi, P, dPdF


def Linear(F: np.ndarray, mu: float, lam: float, *, hessian: bool = True):
    """Small-strain linear elasticity: (psi, P, dPdF)."""
    m = F.shape[0]
    eye = np.eye(3)
    eps = 0.5 * (F + np.transpose(F, (0, 2, 1))) - eye
    tr = np.trace(eps, axis1=1, axis2=2)
    psi = mu * np.einsum("mij,mij->m", eps, eps) + 0.5 * lam * tr**2
    P = 2.0 * mu * eps + lam * tr[:, None, None] * eye
    if not hessian:
        return psi, P, None
    # d eps_ij / dF_kl = (d_ik d_jl + d_il d_jk)/2
    sym = 0.5 * (np.einsum("ik,jl->ijkl", eye, eye) + np.einsum("il,jk->ijkl", eye, eye))
    H = 2.0 * mu * sym.reshape(9, 9) + lam * np.outer(eye.ravel(), eye.ravel())
    return psi, P, np.broadcast_to(H, (m, 9, 9)).copy()


def Evaluate(model: str, F: np.ndarray, mu: float, lam: float, *, hessian: bool = True):
    """Dispatches to the named material model: (psi, P, dPdF)."""
    if model == "neohookean":
        return NeoHookean(F, mu, lam, hessian=hessian)
    if model == "corotated":
        return Corotated(F, mu, lam, hessian=hessian)
    if model == "linear":
        return Linear(F, mu, lam, hessian=hessian)
    raise ValueError(f"unknown material model '{model}'")


def ProjectToPsd(H: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Clamps the eigenvalues of symmetric (m, n, n) matrices at `floor` (PSD projection).

    Only matrices with an eigenvalue below floor - 1e-6 |lambda|_max are decomposed: at rest the
    neo-Hookean dP/dF is exactly semi-definite (zero in the rotation directions), and round-off
    negatives there need no projection (the mass term regularises Newton's matrix).
    """
    H = 0.5 * (H + np.transpose(H, (0, 2, 1)))
    w = np.linalg.eigvalsh(H)
    scale = np.abs(w).max(axis=1)
    bad = w.min(axis=1) < floor - 1e-6 * scale
    if not bad.any():
        return H
    wb, Q = np.linalg.eigh(H[bad])
    wb = np.maximum(wb, floor)
    H = H.copy()
    H[bad] = (Q * wb[:, None, :]) @ np.transpose(Q, (0, 2, 1))
    return H
