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
- `stable_neohookean`: the stable neo-Hookean solid of Smith, de Goes and Kim (ACM TOG 37(2)
  2018, Eq. 13) as Drake's `MaterialModel.kNeoHookean` computes it (its NeoHookeanModel),
  psi = mu/2 (tr(F^T F) - 3) - mu (J - 1) + lambda/2 (J - 1)^2 (Drake writes it as
  mu/2 (tr(F^T F) - 3) + lambda/2 (J - 1 - mu/lambda)^2, which differs by a constant). It is
  finite for J <= 0. Smith et al. reparameterise (lambda + mu) so that it linearises to the
  given moduli; Drake does not, and neither is it here, so at F = I it is linear elasticity with
  Lamé parameters (mu, lambda - mu): a slab bonded at one face and pressed is 3-4 % softer
  than the other three (issue 69, Findings 23). It is here to simulate Drake's material, not
  as the skin's.

`neohookean`, `corotated` and `linear` have the same linearisation at F = I, with Lamé
parameters from Young's modulus and Poisson's ratio (`LameParameters`).
"""

import dataclasses

import numpy as np

MATERIAL_MODELS = ("neohookean", "corotated", "linear", "stable_neohookean")
# PSD projections of the element Hessians (FemModel(projection=...)): "analytic" is the
# closed-form eigensystem of the neo-Hookean dP/dF, "eigh" the 9x9 eigendecomposition (the
# reference, every model), "auto" the first where it applies.
PSD_PROJECTIONS = ("auto", "analytic", "eigh")


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
_DIAG9 = np.arange(0, 81, 10)  # flat positions of a 9x9 matrix's diagonal


def _PerElement(c, axes: int = 2):
    """A scalar, or an (m,) per-element modulus with `axes` trailing axes to scale (m, ...)."""
    return c if np.ndim(c) == 0 else np.asarray(c, float).reshape((-1,) + (1,) * axes)


def NeoHookeanEnergy(F: np.ndarray, mu, lam) -> np.ndarray:
    """psi alone (m,) of `NeoHookean` (no cofactor, stress or Hessian): for line searches."""
    J = _Det(F)
    ok = J > 0.0
    logJ = np.log(np.where(ok, J, 1.0))
    Ic = np.einsum("mij,mij->m", F, F)
    psi = 0.5 * mu * (Ic - 3.0) - mu * logJ + 0.5 * lam * logJ**2
    return np.where(ok, psi, np.inf)


def NeoHookean(F: np.ndarray, mu, lam, *, hessian: bool = True):
    """Compressible neo-Hookean: (psi, P, dPdF) (dPdF None unless `hessian`); J <= 0 gives inf.

    mu and lam are scalars or (m,) per-element values (a soft region's moduli: one pass).
    """
    J = _Det(F)
    ok = J > 0.0
    Jsafe = np.where(ok, J, 1.0)
    logJ = np.log(Jsafe)
    Finv_T = _Cofactor(F)
    Finv_T /= Jsafe[:, None, None]
    Ic = np.einsum("mij,mij->m", F, F)
    psi = 0.5 * mu * (Ic - 3.0) - mu * logJ + 0.5 * lam * logJ**2
    psi = np.where(ok, psi, np.inf)
    P = _PerElement(mu) * (F - Finv_T) + (lam * logJ)[:, None, None] * Finv_T
    if not hessian:
        return psi, P, None
    # dP_ij/dF_kl = mu d_ik d_jl + (mu - lam ln J) Finv_jk Finv_li + lam Finv_T_ij Finv_T_kl,
    # built in place: Finv_jk Finv_li = Finv_T_kj Finv_T_il, the factor (mu - lam ln J) folded
    # into one operand (0.23 -> 0.16 s on the monster's 132k elements against einsum + sums).
    m = F.shape[0]
    Finv = np.transpose(Finv_T, (0, 2, 1))
    scaled = Finv_T * ((mu - lam * logJ)[:, None, None])
    dPdF = (scaled[:, :, None, None, :] * Finv[:, None, :, :, None]).reshape(m, 9, 9)
    a = Finv_T.reshape(m, 9)
    dPdF += (a * _PerElement(lam, 1))[:, :, None] * a[:, None, :]
    dPdF.reshape(m, 81)[:, _DIAG9] += _PerElement(mu, 1)
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


_LEVI_CIVITA = np.zeros((3, 3, 3))
_LEVI_CIVITA[0, 1, 2] = _LEVI_CIVITA[1, 2, 0] = _LEVI_CIVITA[2, 0, 1] = 1.0
_LEVI_CIVITA[0, 2, 1] = _LEVI_CIVITA[2, 1, 0] = _LEVI_CIVITA[1, 0, 2] = -1.0


def _CofactorDerivative(F):
    """d cof(F) / dF (m, 9, 9): cof_ij = 1/2 e_ikl e_jmn F_km F_ln, so dcof_ij/dF_ab =
    e_iak e_jbl F_kl."""
    e = _LEVI_CIVITA
    return np.einsum("iak,jbl,mkl->mijab", e, e, F).reshape(F.shape[0], 9, 9)


def StableNeoHookean(F: np.ndarray, mu, lam, *, hessian: bool = True):
    """Drake's neo-Hookean (module docstring; Smith et al. 2018, Eq. 13, with its stress
    P = mu F + lambda (J - alpha) cof F, alpha = 1 + mu/lambda, Eq. 18): (psi, P, dPdF), written
    linear in (mu, lambda), P = mu (F - cof F) + lambda (J - 1) cof F and dP/dF = mu (I - d cof
    F / dF) + lambda (cof F (x) cof F + (J - 1) d cof F / dF), so lambda = 0 is allowed."""
    J = _Det(F)
    cof = _Cofactor(F)  # dJ/dF
    Ic = np.einsum("mij,mij->m", F, F)
    psi = 0.5 * mu * (Ic - 3.0) - mu * (J - 1.0) + 0.5 * lam * (J - 1.0) ** 2
    P = _PerElement(mu) * (F - cof) + (lam * (J - 1.0))[:, None, None] * cof
    if not hessian:
        return psi, P, None
    c = cof.reshape(F.shape[0], 9)
    dcof = _CofactorDerivative(F)
    dPdF = (lam * (J - 1.0))[:, None, None] * dcof - _PerElement(mu) * dcof
    dPdF += (c * _PerElement(lam, 1))[:, :, None] * c[:, None, :]
    dPdF.reshape(-1, 81)[:, _DIAG9] += _PerElement(mu, 1)
    return psi, P, dPdF


def Corotated(F: np.ndarray, mu: float, lam: float, *, hessian: bool = True):
    """Fixed-corotated (Stomakhin 2012): (psi, P, dPdF)."""
    R, U, s, V = _PolarRotation(F)
    J = _Det(F)
    D = F - R
    psi = mu * np.einsum("mij,mij->m", D, D) + 0.5 * lam * (J - 1.0) ** 2
    cof = _Cofactor(F)  # dJ/dF
    P = 2.0 * _PerElement(mu) * D + (lam * (J - 1.0))[:, None, None] * cof
    if not hessian:
        return psi, P, None
    m = F.shape[0]
    dcof = _CofactorDerivative(F)
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
        2.0 * _PerElement(mu) * (_EYE9[None] - dR)
        + _PerElement(lam) * c[:, :, None] * c[:, None, :]
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
    P = 2.0 * _PerElement(mu) * eps + (lam * tr)[:, None, None] * eye
    if not hessian:
        return psi, P, None
    # d eps_ij / dF_kl = (d_ik d_jl + d_il d_jk)/2
    sym = 0.5 * (np.einsum("ik,jl->ijkl", eye, eye) + np.einsum("il,jk->ijkl", eye, eye))
    vol = np.outer(eye.ravel(), eye.ravel())
    H = 2.0 * _PerElement(mu) * sym.reshape(9, 9) + _PerElement(lam) * vol
    return psi, P, np.broadcast_to(H, (m, 9, 9)).copy()


def Evaluate(model: str, F: np.ndarray, mu, lam, *, hessian: bool = True):
    """Dispatches to the named material model: (psi, P, dPdF); mu and lam scalars or (m,)."""
    if model == "neohookean":
        return NeoHookean(F, mu, lam, hessian=hessian)
    if model == "corotated":
        return Corotated(F, mu, lam, hessian=hessian)
    if model == "linear":
        return Linear(F, mu, lam, hessian=hessian)
    if model == "stable_neohookean":
        return StableNeoHookean(F, mu, lam, hessian=hessian)
    raise ValueError(f"unknown material model '{model}'")


def Energy(model: str, F: np.ndarray, mu, lam) -> np.ndarray:
    """psi (m,) of the named model (neo-Hookean without its stress: `NeoHookeanEnergy`)."""
    if model == "neohookean":
        return NeoHookeanEnergy(F, mu, lam)
    return Evaluate(model, F, mu, lam, hessian=False)[0]


def _SymmetricEigenvalues3(a00, a11, a22, a01, a02, a12):
    """Eigenvalues (ascending, (m, 3)) of symmetric 3x3 matrices given by their six entries,
    each (m,), in closed form: the trigonometric solution of the characteristic cubic (Smith,
    "Eigenvalues of a symmetric 3x3 matrix", CACM 4(4) 1961). Absolute error ~ eps ||A||, which
    is all the projection's classification needs; eigenvectors come from LAPACK where they are
    needed (`ProjectNeoHookeanHessian`)."""
    q = (a00 + a11 + a22) / 3.0
    off = a01**2 + a02**2 + a12**2
    b00, b11, b22 = a00 - q, a11 - q, a22 - q
    p = np.sqrt((b00**2 + b11**2 + b22**2 + 2.0 * off) / 6.0)
    ps = np.where(p > 0.0, p, 1.0)
    det = b00 * (b11 * b22 - a12**2) - a01 * (a01 * b22 - a12 * a02) + a02 * (a01 * a12 - b11 * a02)
    r = np.clip(0.5 * det / ps**3, -1.0, 1.0)
    phi = np.arccos(r) / 3.0
    hi = q + 2.0 * p * np.cos(phi)
    lo = q + 2.0 * p * np.cos(phi + 2.0 * np.pi / 3.0)
    return np.stack([lo, 3.0 * q - hi - lo, hi], axis=1)


def _NeoHookeanSpectrum(sigma, J, mu, lam):
    """The nine eigenvalues of the neo-Hookean dP/dF (as `NeoHookean` builds it) from the
    singular values `sigma` (m, 3) (>= 0, any order) and J = det F: (twist (m, 3), flip (m, 3),
    the 3x3 scaling block's entries (a00, a11, a22, a01, a02, a12)).

    dP/dF = mu I + beta T + lam a a^T with beta = mu - lam ln J, T_ijkl = G_jk G_li,
    a = vec(G^T), G = cof(F)^T / J (J > 0; J <= 0 uses J := 1 as `NeoHookean` does). With
    F = U Sigma V^T and G^T = U D V^T (d_k = s sigma_i sigma_j / J, s = det U det V, (i, j, k)
    a permutation), the quadratic form in M = U^T dF V is
    mu sum M_ij^2 + beta sum_ij d_i d_j M_ij M_ji + lam (sum_i d_i M_ii)^2:
    each off-diagonal pair (i, j) decouples into a twist mode (M_ij - M_ji)/sqrt 2 with
    eigenvalue mu - beta d_i d_j and a flip mode (M_ij + M_ji)/sqrt 2 with mu + beta d_i d_j;
    the diagonal of M carries A = mu I + beta diag(d^2) + lam d d^T. This is the analytic
    eigensystem of Smith, de Goes and Kim, "Analytic Eigensystems for Isotropic Distortion
    Energies", ACM TOG 38(1) 2019 (Kim and Eberle, "Dynamic Deformables", SIGGRAPH course
    2020, ch. 7), written for this energy's own Hessian so that it holds for every F.
    d_i d_j = sigma_k |J| / Jsafe^2 and d_i^2 = (sigma_j sigma_k / Jsafe)^2 need no signs.
    """
    ok = J > 0.0
    Js = np.where(ok, J, 1.0)
    absJ = np.abs(J)
    beta = mu - lam * np.log(Js)
    s0, s1, s2 = sigma[:, 0], sigma[:, 1], sigma[:, 2]
    # r_k = d_i d_j for the pair (i, j) opposite k; p_k = d_k^2.
    r = sigma * (absJ / Js**2)[:, None]
    p = np.stack([s1 * s2, s0 * s2, s0 * s1], axis=1) ** 2 / (Js**2)[:, None]
    mu_c = np.asarray(mu, float)[..., None] if np.ndim(mu) else mu
    beta_c = beta[:, None]
    twist = mu_c - beta_c * r
    flip = mu_c + beta_c * r
    lam_c = np.asarray(lam, float)[..., None] if np.ndim(lam) else lam
    diag = mu_c + beta_c * p + lam_c * p
    off = lam_c * r  # A_ij = lam d_i d_j = lam r_k
    block = (diag[:, 0], diag[:, 1], diag[:, 2], off[:, 2], off[:, 1], off[:, 0])
    return twist, flip, block


_PAIRS = ((1, 2), (0, 2), (0, 1))  # the pair (i, j) opposite k = 0, 1, 2


def ProjectNeoHookeanHessian(
    F: np.ndarray, mu, lam, dPdF: np.ndarray, floor: float = 0.0, *, overwrite: bool = False
) -> np.ndarray:
    """`ProjectToPsd(dPdF, floor)` for the neo-Hookean dP/dF of `NeoHookean(F, mu, lam)`, from
    its analytic eigensystem instead of a 9x9 eigendecomposition per element.

    Same result (to round-off) and same rule as ProjectToPsd: an element is projected when its
    smallest eigenvalue is below floor - 1e-6 |lambda|_max, and then its eigenvalues below
    `floor` are raised to it. Every element's nine eigenvalues come in closed form
    (`_NeoHookeanSpectrum`; singular values from the eigenvalues of F^T F by Smith's 1961
    trigonometric formula); only the projected elements get an SVD (LAPACK, batched) for their
    twist and flip eigenvectors vec(U (e_i e_j^T -+ e_j e_i^T) V^T)/sqrt 2, and only those
    whose 3x3 scaling block has an eigenvalue below `floor` (volume growth with
    lam ln J > mu) a 3x3 eigh for its vectors U diag(z) V^T. The projected matrix is
    dPdF + sum over clamped modes (floor - lambda) q q^T.

    Kept beside ProjectToPsd (the reference, FemModel(projection="eigh")) because it is faster:
    on the monster's folded skin (132k elements, 61 % of them projected) 0.5 s against 1.5 s
    per Newton matrix measured alone, 0.21-0.31 s against 0.79-0.95 s inside a coupled frame.

    Args:
        F: (m, 3, 3) deformation gradients; mu, lam: scalars or (m,) Lamé parameters, Pa.
        dPdF: (m, 9, 9) the neo-Hookean dP/dF at F with those parameters.
        floor: the eigenvalue floor.
        overwrite: project `dPdF` in place (no copy) and return it.
    """
    m = F.shape[0]
    mu = np.broadcast_to(np.asarray(mu, float), (m,))
    lam = np.broadcast_to(np.asarray(lam, float), (m,))
    J = _Det(F)
    C = np.einsum("mki,mkj->mij", F, F)
    ev = _SymmetricEigenvalues3(
        C[:, 0, 0], C[:, 1, 1], C[:, 2, 2], C[:, 0, 1], C[:, 0, 2], C[:, 1, 2]
    )
    sigma = np.sqrt(np.maximum(ev, 0.0))
    twist, flip, block = _NeoHookeanSpectrum(sigma, J, mu, lam)
    scaling = _SymmetricEigenvalues3(*block)
    lo = np.minimum(np.minimum(twist.min(axis=1), flip.min(axis=1)), scaling[:, 0])
    scale = np.maximum(
        np.maximum(np.abs(twist).max(axis=1), np.abs(flip).max(axis=1)),
        np.maximum(np.abs(scaling[:, 0]), np.abs(scaling[:, 2])),
    )
    bad = np.flatnonzero(lo < floor - 1e-6 * scale)
    if len(bad) == 0:
        return dPdF
    out = dPdF if overwrite else dPdF.copy()
    U, sig, Vt = _Svd3(F[bad])
    twist, flip, block = _NeoHookeanSpectrum(sig, J[bad], mu[bad], lam[bad])
    out[bad] += _ModeCorrection(U, Vt, floor - twist, -1.0)
    # Flip and scaling modes fall below the floor only under volume growth (lam ln J > mu).
    low = np.flatnonzero(flip.min(axis=1) < floor)
    if len(low):
        out[bad[low]] += _ModeCorrection(U[low], Vt[low], floor - flip[low], 1.0)
    low = np.flatnonzero(_SymmetricEigenvalues3(*block)[:, 0] < floor)
    if len(low):
        a00, a11, a22, a01, a02, a12 = (b[low] for b in block)
        A = np.stack(
            [
                np.stack([a00, a01, a02], 1),
                np.stack([a01, a11, a12], 1),
                np.stack([a02, a12, a22], 1),
            ],
            axis=1,
        )
        w, Z = np.linalg.eigh(A)
        # Mode l: vec(U diag(z_l) V^T) = sum_i z_il vec(u_i v_i^T).
        Ul, Vtl = U[low], Vt[low]
        D = np.stack([(Ul[:, :, i, None] * Vtl[:, i, None, :]).reshape(-1, 9) for i in range(3)], 1)
        S = np.einsum("mil,mia->mla", Z, D) * np.sqrt(np.maximum(floor - w, 0.0))[:, :, None]
        out[bad[low]] += np.transpose(S, (0, 2, 1)) @ S
    return out


def _Svd3(F):
    """F = U diag(sigma) V^T for (n, 3, 3) F, sigma >= 0 descending, U and V orthogonal:
    (U, sigma, V^T) as np.linalg.svd returns them (up to the signs of singular vectors).

    V from LAPACK's batched symmetric eigensolver on F^T F, then u1 = F v1 / sigma1, u2 the
    unit part of F v2 orthogonal to u1, u3 = +-(u1 x u2) with sigma3 = |u3 . F v3| (exact for
    singular F). The error is ~ eps sigma1 / sigma2, so matrices with sigma2 < 1e-4 sigma1 go
    to np.linalg.svd instead. Kept because it is 2.8x faster than np.linalg.svd (gesdd per
    3x3 matrix) on the monster's 80k projected elements (0.09 s against 0.25 s, measured).
    """
    C = np.einsum("mki,mkj->mij", F, F)
    _, V = np.linalg.eigh(C)
    V = V[:, :, ::-1]
    FV = F @ V
    s1 = np.linalg.norm(FV[:, :, 0], axis=1)
    u1 = FV[:, :, 0] / np.where(s1 > 0.0, s1, 1.0)[:, None]
    f2 = FV[:, :, 1] - np.einsum("mi,mi->m", u1, FV[:, :, 1])[:, None] * u1
    s2 = np.linalg.norm(f2, axis=1)
    u2 = f2 / np.where(s2 > 0.0, s2, 1.0)[:, None]
    u3 = np.cross(u1, u2)
    t = np.einsum("mi,mi->m", u3, FV[:, :, 2])
    u3 *= np.where(t < 0.0, -1.0, 1.0)[:, None]
    U = np.stack([u1, u2, u3], axis=2)
    sigma = np.stack([s1, s2, np.abs(t)], axis=1)
    Vt = np.transpose(V, (0, 2, 1))
    hard = np.flatnonzero(~(s2 >= 1e-4 * s1) | (s1 == 0.0))
    if len(hard):
        U[hard], sigma[hard], Vt[hard] = np.linalg.svd(F[hard])
    return U, sigma, Vt


def _ModeCorrection(U, Vt, gain, sign):
    """sum_k max(gain_k, 0) q_k q_k^T over the three pairs (i, j) opposite k, (n, 9, 9), with
    q_k = vec(u_i v_j^T + sign u_j v_i^T) / sqrt 2 (sign -1: twist, +1: flip)."""
    root = np.sqrt(0.5 * np.maximum(gain, 0.0))
    W = np.empty((len(U), 3, 9))
    for k, (i, j) in enumerate(_PAIRS):
        q = U[:, :, i, None] * Vt[:, j, None, :] + sign * (U[:, :, j, None] * Vt[:, i, None, :])
        W[:, k] = q.reshape(-1, 9) * root[:, k, None]
    return np.transpose(W, (0, 2, 1)) @ W


def ResolveProjection(projection: str, model: str) -> str:
    """The PSD projection `projection` (PSD_PROJECTIONS) means for material `model`: "analytic"
    or "eigh". Raises ValueError for an unknown name, or "analytic" with a model that has no
    analytic eigensystem here (corotated, linear)."""
    if projection not in PSD_PROJECTIONS:
        raise ValueError(f"projection must be one of {PSD_PROJECTIONS}, got '{projection}'")
    if projection == "auto":
        return "analytic" if model == "neohookean" else "eigh"
    if projection == "analytic" and model != "neohookean":
        raise ValueError(
            f"the analytic PSD projection is implemented for the neo-Hookean material only, "
            f"not '{model}': use projection='eigh' (or 'auto')"
        )
    return projection


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
