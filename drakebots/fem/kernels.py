"""Compiled element kernels of the neo-Hookean skin: energy, gradient and stiffness in one pass
over the elements, assembled straight into the stiffness's fixed CSR pattern (issue 52).

What it computes is exactly `FemModel.EnergyGradientHessian`'s NumPy path (the reference, kept
as `FemModel(kernel="numpy")`): per element e with shape-function gradients g_a (4 x 3), rest
volume V and Lamé parameters (mu, lambda),

    F = sum_a x_a g_aᵀ,  J = det F,  psi = mu/2 (tr FᵀF - 3) - mu ln J + lambda/2 (ln J)²,
    P = mu (F - F⁻ᵀ) + lambda ln J F⁻ᵀ,
    dP_ij/dF_kl = mu d_ik d_jl + (mu - lambda ln J) F⁻ᵀ_kj F⁻ᵀ_il + lambda F⁻ᵀ_ij F⁻ᵀ_kl,

(materials.NeoHookean: the compressible neo-Hookean solid of the skinned quad-robots paper,
section 4.1), optionally projected to positive semi-definite by its analytic eigensystem
(materials.ProjectNeoHookeanHessian: Smith, de Goes and Kim, ACM TOG 38(1) 2019, the same rule
and floor), and the element stiffness V Bᵀ (dP/dF) B with B = dF/dx, whose 3 x 3 vertex blocks
are K_ab[i, k] = V sum_jl g_aj dP_ij/dF_kl g_bl (done as two small contractions, 756 multiply-
adds instead of the 2268 of the dense 12 x 9 products). An element with J <= 0 has psi = inf and
the stress and stiffness of J := 1 in its logarithm and inverse, as the NumPy path.

Why it is kept (the brief asks to measure the library first): no maintained library on the
registries assembles a hyperelastic tet Hessian for us. Drake's DeformableModel does it inside
its own C++ integrator (21 s a step on the beetle's skin, bench_fem), without exposing the
matrix; the NumPy path is bound by memory traffic of (m, 9, 9) and (m, 12, 12) temporaries and
by LAPACK's per-matrix overhead on 3 x 3 problems (eigh, SVD). One loop compiled by Numba does
the same arithmetic with the element's data in registers and scatters each entry into CSR data
through the pattern map that `FemModel` builds once. Measured on the monster's folded skin
(132k tets, a deformed state with 121k elements projected, best of 5 on an idle 2-core machine):
0.34 s against 1.09 s CPU projected, 0.12 s against 0.53 s exact; scripts/bench_fem.py's
`hessian_kernel` measures both at a real state of the monster's walk, in the same run. Numba
compiles the loop once per machine (about 15 s) and caches it beside this module.

The 3 x 3 symmetric eigenproblems (FᵀF for the singular vectors, the projection's scaling block)
use cyclic Jacobi rotations, accurate to round-off for repeated eigenvalues too; the singular
vectors U follow as in materials._Svd3 (u1 = F v1 / s1, u2 the unit part of F v2 orthogonal to
u1, u3 = ±u1 x u2), with LAPACK's SVD where s2 < 1e-4 s1.
"""

from __future__ import annotations

import math

import numpy as np

try:  # Numba is a dependency; a platform without its wheels keeps the NumPy path.
    import numba

    AVAILABLE = True
except ImportError:  # pragma: no cover - exercised only where numba has no wheel
    numba = None
    AVAILABLE = False


def _Jit(function):
    if numba is None:
        return function
    return numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")(function)


@_Jit
def _TrigEigenvalues3(a00, a11, a22, a01, a02, a12, out):
    """Ascending eigenvalues of a symmetric 3x3 matrix by the trigonometric formula (Smith
    1961), as materials._SymmetricEigenvalues3 (the projection's classification)."""
    q = (a00 + a11 + a22) / 3.0
    off = a01 * a01 + a02 * a02 + a12 * a12
    b00, b11, b22 = a00 - q, a11 - q, a22 - q
    p = math.sqrt((b00 * b00 + b11 * b11 + b22 * b22 + 2.0 * off) / 6.0)
    ps = p if p > 0.0 else 1.0
    det = (
        b00 * (b11 * b22 - a12 * a12)
        - a01 * (a01 * b22 - a12 * a02)
        + a02 * (a01 * a12 - b11 * a02)
    )
    r = 0.5 * det / (ps * ps * ps)
    r = min(max(r, -1.0), 1.0)
    phi = math.acos(r) / 3.0
    hi = q + 2.0 * p * math.cos(phi)
    lo = q + 2.0 * p * math.cos(phi + 2.0 * math.pi / 3.0)
    out[0] = lo
    out[1] = 3.0 * q - hi - lo
    out[2] = hi


@_Jit
def _JacobiEigh3(A, w, V):
    """Eigen-decomposition of the symmetric 3x3 A (overwritten): eigenvalues w ascending and
    orthonormal eigenvectors in V's columns, by cyclic Jacobi rotations (Golub and Van Loan,
    Matrix Computations, section 8.5)."""
    for i in range(3):
        for j in range(3):
            V[i, j] = 1.0 if i == j else 0.0
    for _ in range(50):
        off = A[0, 1] * A[0, 1] + A[0, 2] * A[0, 2] + A[1, 2] * A[1, 2]
        diag = A[0, 0] * A[0, 0] + A[1, 1] * A[1, 1] + A[2, 2] * A[2, 2]
        if off <= 1e-40 * diag or off == 0.0:
            break
        for p in range(2):
            for q in range(p + 1, 3):
                apq = A[p, q]
                if apq == 0.0:
                    continue
                theta = (A[q, q] - A[p, p]) / (2.0 * apq)
                t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(3):  # A <- Jᵀ A J
                    akp, akq = A[k, p], A[k, q]
                    A[k, p] = c * akp - s * akq
                    A[k, q] = s * akp + c * akq
                for k in range(3):
                    apk, aqk = A[p, k], A[q, k]
                    A[p, k] = c * apk - s * aqk
                    A[q, k] = s * apk + c * aqk
                for k in range(3):
                    vkp, vkq = V[k, p], V[k, q]
                    V[k, p] = c * vkp - s * vkq
                    V[k, q] = s * vkp + c * vkq
    for i in range(3):
        w[i] = A[i, i]
    # Sort ascending (three entries: insertion sort, columns of V with them).
    for i in range(1, 3):
        j = i
        while j > 0 and w[j - 1] > w[j]:
            w[j - 1], w[j] = w[j], w[j - 1]
            for k in range(3):
                V[k, j - 1], V[k, j] = V[k, j], V[k, j - 1]
            j -= 1


@_Jit
def _Svd3(F, U, sigma, Vt, C, w, V, work):
    """F = U diag(sigma) Vᵀ, sigma >= 0 descending (materials._Svd3's construction); `work`
    (7, 3) scratch."""
    for i in range(3):
        for j in range(3):
            C[i, j] = F[0, i] * F[0, j] + F[1, i] * F[1, j] + F[2, i] * F[2, j]
    _JacobiEigh3(C, w, V)
    # Descending: columns 2, 1, 0 of V.
    FV = work[:3]
    for c in range(3):
        src = 2 - c
        for i in range(3):
            FV[i, c] = F[i, 0] * V[0, src] + F[i, 1] * V[1, src] + F[i, 2] * V[2, src]
    s1 = math.sqrt(FV[0, 0] ** 2 + FV[1, 0] ** 2 + FV[2, 0] ** 2)
    d1 = s1 if s1 > 0.0 else 1.0
    u1 = work[3]
    for i in range(3):
        u1[i] = FV[i, 0] / d1
    dot = u1[0] * FV[0, 1] + u1[1] * FV[1, 1] + u1[2] * FV[2, 1]
    f2 = work[4]
    for i in range(3):
        f2[i] = FV[i, 1] - dot * u1[i]
    s2 = math.sqrt(f2[0] ** 2 + f2[1] ** 2 + f2[2] ** 2)
    if not (s2 >= 1e-4 * s1) or s1 == 0.0:
        u_, s_, vt_ = np.linalg.svd(F)
        for i in range(3):
            sigma[i] = s_[i]
            for j in range(3):
                U[i, j] = u_[i, j]
                Vt[i, j] = vt_[i, j]
        return
    d2 = s2 if s2 > 0.0 else 1.0
    u2 = work[5]
    for i in range(3):
        u2[i] = f2[i] / d2
    u3 = work[6]
    u3[0] = u1[1] * u2[2] - u1[2] * u2[1]
    u3[1] = u1[2] * u2[0] - u1[0] * u2[2]
    u3[2] = u1[0] * u2[1] - u1[1] * u2[0]
    t = u3[0] * FV[0, 2] + u3[1] * FV[1, 2] + u3[2] * FV[2, 2]
    if t < 0.0:
        for i in range(3):
            u3[i] = -u3[i]
    for i in range(3):
        U[i, 0], U[i, 1], U[i, 2] = u1[i], u2[i], u3[i]
    sigma[0], sigma[1], sigma[2] = s1, s2, abs(t)
    for r in range(3):
        src = 2 - r
        for j in range(3):
            Vt[r, j] = V[j, src]


@_Jit
def _Spectrum(sigma, J, mu, lam, twist, flip, block):
    """materials._NeoHookeanSpectrum for one element (sigma in any order)."""
    ok = J > 0.0
    Js = J if ok else 1.0
    absJ = abs(J)
    beta = mu - lam * math.log(Js)
    s0, s1, s2 = sigma[0], sigma[1], sigma[2]
    r0 = s0 * absJ / (Js * Js)
    r1 = s1 * absJ / (Js * Js)
    r2 = s2 * absJ / (Js * Js)
    J2 = Js * Js
    p0 = (s1 * s2) ** 2 / J2
    p1 = (s0 * s2) ** 2 / J2
    p2 = (s0 * s1) ** 2 / J2
    twist[0], twist[1], twist[2] = mu - beta * r0, mu - beta * r1, mu - beta * r2
    flip[0], flip[1], flip[2] = mu + beta * r0, mu + beta * r1, mu + beta * r2
    block[0] = mu + beta * p0 + lam * p0
    block[1] = mu + beta * p1 + lam * p1
    block[2] = mu + beta * p2 + lam * p2
    block[3] = lam * r2  # A_01
    block[4] = lam * r1  # A_02
    block[5] = lam * r0  # A_12


@_Jit
def _AddModes(H, U, Vt, gains, sign, q):
    """H += sum_k max(gain_k, 0) q_k q_kᵀ, q_k = vec(u_i v_jᵀ + sign u_j v_iᵀ) / sqrt 2 over the
    pairs (i, j) opposite k: (1, 2), (0, 2), (0, 1) (materials._ModeCorrection); q: (9,)
    scratch."""
    for k in range(3):
        gain = gains[k]
        if gain <= 0.0:
            continue
        if k == 0:
            i, j = 1, 2
        elif k == 1:
            i, j = 0, 2
        else:
            i, j = 0, 1
        for a in range(3):
            for b in range(3):
                q[3 * a + b] = U[a, i] * Vt[j, b] + sign * U[a, j] * Vt[i, b]
        c = 0.5 * gain
        for r in range(9):
            cr = c * q[r]
            for s in range(9):
                H[r, s] += cr * q[s]


@_Jit
def _Project(F, J, mu, lam, floor, H, C, w, V, U, Vt, sigma, work, vec, block):
    """materials.ProjectNeoHookeanHessian for one element's dP/dF H (in place). Returns
    whether the element was projected. Scratch: C, V, U, Vt (3, 3); w, sigma (3,); work
    (13, 3); vec (9,); block (6,)."""
    scratch3, s, twist, flip, scaling, gains = (
        work[7],
        work[8],
        work[9],
        work[10],
        work[11],
        work[12],
    )
    for i in range(3):
        for j in range(3):
            C[i, j] = F[0, i] * F[0, j] + F[1, i] * F[1, j] + F[2, i] * F[2, j]
    _TrigEigenvalues3(C[0, 0], C[1, 1], C[2, 2], C[0, 1], C[0, 2], C[1, 2], scratch3)
    for i in range(3):
        s[i] = math.sqrt(max(scratch3[i], 0.0))
    _Spectrum(s, J, mu, lam, twist, flip, block)
    _TrigEigenvalues3(block[0], block[1], block[2], block[3], block[4], block[5], scaling)
    lo = min(min(twist.min(), flip.min()), scaling[0])
    scale = max(max(np.abs(twist).max(), np.abs(flip).max()), max(abs(scaling[0]), abs(scaling[2])))
    if not lo < floor - 1e-6 * scale:
        return False
    _Svd3(F, U, sigma, Vt, C, w, V, work)
    _Spectrum(sigma, J, mu, lam, twist, flip, block)
    for k in range(3):
        gains[k] = floor - twist[k]
    _AddModes(H, U, Vt, gains, -1.0, vec)
    if flip.min() < floor:
        for k in range(3):
            gains[k] = floor - flip[k]
        _AddModes(H, U, Vt, gains, 1.0, vec)
    _TrigEigenvalues3(block[0], block[1], block[2], block[3], block[4], block[5], scaling)
    if scaling[0] < floor:
        A, Z = C, V  # (free again: _Svd3 is done with them)
        A[0, 0], A[1, 1], A[2, 2] = block[0], block[1], block[2]
        A[0, 1] = A[1, 0] = block[3]
        A[0, 2] = A[2, 0] = block[4]
        A[1, 2] = A[2, 1] = block[5]
        _JacobiEigh3(A, w, Z)
        S = vec
        for mode in range(3):
            gain = floor - w[mode]
            if gain <= 0.0:
                continue
            root = math.sqrt(gain)
            for a in range(3):
                for b in range(3):
                    S[3 * a + b] = root * (
                        Z[0, mode] * U[a, 0] * Vt[0, b]
                        + Z[1, mode] * U[a, 1] * Vt[1, b]
                        + Z[2, mode] * U[a, 2] * Vt[2, b]
                    )
            for r in range(9):
                for c in range(9):
                    H[r, c] += S[r] * S[c]
    return True


@_Jit
def NeoHookeanAssemble(X, tets, g, volumes, mu, lam, mode, floor, entry_to_nnz, data, grad):
    """Energy, gradient and stiffness of every element, summed into `grad` (3n,) and the CSR
    `data` (nnz,) of the fixed pattern (both zeroed here). `mode`: 0 the exact Hessian, 1
    projected by the analytic eigensystem (floor `floor`), 2 no Hessian (energy and gradient
    only). mu and lam are (m,) per element. Returns (energy, number of projected elements);
    the energy is inf when an element has J <= 0."""
    m = tets.shape[0]
    for k in range(data.shape[0]):
        data[k] = 0.0
    for k in range(grad.shape[0]):
        grad[k] = 0.0
    energy = 0.0
    projected = 0
    F = np.empty((3, 3))
    Finv_T = np.empty((3, 3))
    P = np.empty((3, 3))
    H = np.empty((9, 9))
    T = np.empty((9, 4, 3))
    Ke = np.empty((12, 12))
    work = np.empty((13, 3))
    vec = np.empty(9)
    block = np.empty(6)
    C = np.empty((3, 3))
    w = np.empty(3)
    V = np.empty((3, 3))
    U = np.empty((3, 3))
    Vt = np.empty((3, 3))
    sigma = np.empty(3)
    for e in range(m):
        ga = g[e]
        for i in range(3):
            for j in range(3):
                acc = 0.0
                for a in range(4):
                    acc += X[tets[e, a], i] * ga[a, j]
                F[i, j] = acc
        J = (
            F[0, 0] * (F[1, 1] * F[2, 2] - F[1, 2] * F[2, 1])
            - F[0, 1] * (F[1, 0] * F[2, 2] - F[1, 2] * F[2, 0])
            + F[0, 2] * (F[1, 0] * F[2, 1] - F[1, 1] * F[2, 0])
        )
        ok = J > 0.0
        Js = J if ok else 1.0
        logJ = math.log(Js)
        Finv_T[0, 0] = (F[1, 1] * F[2, 2] - F[1, 2] * F[2, 1]) / Js
        Finv_T[0, 1] = (F[1, 2] * F[2, 0] - F[1, 0] * F[2, 2]) / Js
        Finv_T[0, 2] = (F[1, 0] * F[2, 1] - F[1, 1] * F[2, 0]) / Js
        Finv_T[1, 0] = (F[0, 2] * F[2, 1] - F[0, 1] * F[2, 2]) / Js
        Finv_T[1, 1] = (F[0, 0] * F[2, 2] - F[0, 2] * F[2, 0]) / Js
        Finv_T[1, 2] = (F[0, 1] * F[2, 0] - F[0, 0] * F[2, 1]) / Js
        Finv_T[2, 0] = (F[0, 1] * F[1, 2] - F[0, 2] * F[1, 1]) / Js
        Finv_T[2, 1] = (F[0, 2] * F[1, 0] - F[0, 0] * F[1, 2]) / Js
        Finv_T[2, 2] = (F[0, 0] * F[1, 1] - F[0, 1] * F[1, 0]) / Js
        mu_e, lam_e, vol = mu[e], lam[e], volumes[e]
        if ok:
            Ic = 0.0
            for i in range(3):
                for j in range(3):
                    Ic += F[i, j] * F[i, j]
            energy += vol * (0.5 * mu_e * (Ic - 3.0) - mu_e * logJ + 0.5 * lam_e * logJ * logJ)
        else:
            energy = np.inf
        for i in range(3):
            for j in range(3):
                P[i, j] = mu_e * (F[i, j] - Finv_T[i, j]) + lam_e * logJ * Finv_T[i, j]
        # Gradient: V P g_a on vertex a.
        for a in range(4):
            base = 3 * tets[e, a]
            for i in range(3):
                grad[base + i] += vol * (
                    P[i, 0] * ga[a, 0] + P[i, 1] * ga[a, 1] + P[i, 2] * ga[a, 2]
                )
        if mode == 2:
            continue
        beta = mu_e - lam_e * logJ
        for i in range(3):
            for j in range(3):
                r = 3 * i + j
                for k in range(3):
                    for l in range(3):
                        H[r, 3 * k + l] = (
                            beta * Finv_T[k, j] * Finv_T[i, l] + lam_e * Finv_T[i, j] * Finv_T[k, l]
                        )
                H[r, r] += mu_e
        if mode == 1:
            if _Project(F, J, mu_e, lam_e, floor, H, C, w, V, U, Vt, sigma, work, vec, block):
                projected += 1
        # T[ij, b, k] = sum_l H[ij, kl] g_bl; K_ab[i, k] = V sum_j g_aj T[ij, b, k].
        for r in range(9):
            for b in range(4):
                for k in range(3):
                    T[r, b, k] = (
                        H[r, 3 * k] * ga[b, 0]
                        + H[r, 3 * k + 1] * ga[b, 1]
                        + H[r, 3 * k + 2] * ga[b, 2]
                    )
        for a in range(4):
            for i in range(3):
                row = 3 * a + i
                for b in range(4):
                    for k in range(3):
                        Ke[row, 3 * b + k] = vol * (
                            ga[a, 0] * T[3 * i, b, k]
                            + ga[a, 1] * T[3 * i + 1, b, k]
                            + ga[a, 2] * T[3 * i + 2, b, k]
                        )
        base = e * 144
        for r in range(12):
            for c in range(12):
                data[entry_to_nnz[base + 12 * r + c]] += Ke[r, c]
    return energy, projected


@_Jit
def Jacobians(X, tets, g, out):
    """det F of every element at positions X (n, 3) into `out` (m,), without the (m, 3, 3)
    deformation gradients (the line searches' inversion check runs it every Newton iterate)."""
    for e in range(tets.shape[0]):
        ga = g[e]
        f00 = f01 = f02 = f10 = f11 = f12 = f20 = f21 = f22 = 0.0
        for a in range(4):
            v = tets[e, a]
            x0, x1, x2 = X[v, 0], X[v, 1], X[v, 2]
            g0, g1, g2 = ga[a, 0], ga[a, 1], ga[a, 2]
            f00 += x0 * g0
            f01 += x0 * g1
            f02 += x0 * g2
            f10 += x1 * g0
            f11 += x1 * g1
            f12 += x1 * g2
            f20 += x2 * g0
            f21 += x2 * g1
            f22 += x2 * g2
        out[e] = (
            f00 * (f11 * f22 - f12 * f21)
            - f01 * (f10 * f22 - f12 * f20)
            + f02 * (f10 * f21 - f11 * f20)
        )
