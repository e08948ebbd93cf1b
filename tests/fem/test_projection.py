"""The analytic PSD projection of the neo-Hookean dP/dF (materials.ProjectNeoHookeanHessian,
Smith, de Goes and Kim 2019) against the 9x9 eigendecomposition (ProjectToPsd, the reference),
its eigenpairs against finite differences of the first Piola stress, and the batched 3x3 SVD
it uses against LAPACK's."""

import numpy as np
import pytest

from drakebots.fem import materials
from drakebots.fem.materials import Material
from drakebots.fem.mesh import BoxMesh
from drakebots.fem.model import FemModel


def _Relative(a, b, H):
    """Per element max |a - b| / max |H|."""
    return np.abs(a - b).max(axis=(1, 2)) / np.abs(H).max(axis=(1, 2))


def _RandomGradients(m, seed):
    rng = np.random.default_rng(seed)
    F = np.eye(3) + 0.4 * rng.standard_normal((m, 3, 3))  # ~5 % inverted (J <= 0)
    F[:20] = np.eye(3)  # at rest: the twist eigenvalues are exactly zero, nothing to project
    F[20:40] = 0.9 * np.eye(3) + 1e-4 * rng.standard_normal((20, 3, 3))  # near-repeated sigma
    F[40:60] = np.diag([1.5, 0.7, 0.7])  # repeated singular values, mildly compressed
    F[60:80] = np.diag([1.3, 1.2, 1.1])  # volume growth: lam ln J > mu, flips and scaling < 0
    return F


def Deformed(mesh, seed):
    """Positions of a box mesh (0.10 x 0.03 x 0.03 m or smaller) bent, squashed and twisted,
    with noise: many elements compressed beyond the projection's threshold."""
    rng = np.random.default_rng(seed)
    X = mesh.vertices
    angle = 4.0 * X[:, 0]
    y = np.stack(
        [
            X[:, 0] * (1.0 - 0.3 * X[:, 2] / 0.03),
            np.cos(angle) * X[:, 1] - np.sin(angle) * X[:, 2],
            0.7 * (np.sin(angle) * X[:, 1] + np.cos(angle) * X[:, 2]),
        ],
        axis=1,
    ).ravel()
    return y + 2e-4 * rng.standard_normal(y.shape)


def _RandomModuli(m):
    """Per-element (mu, lam), with lam ln J = 10.8 > mu on the volume-growth rows 60-80 (their
    flip and scaling modes negative)."""
    rng = np.random.default_rng(2)
    mu = rng.uniform(0.5, 2.0, m)
    lam = rng.uniform(0.5, 30.0, m)
    mu[60:80], lam[60:80] = 1.0, 20.0
    return mu, lam


@pytest.mark.parametrize("floor", [0.0, 0.05])
def test_analytic_projection_equals_eigh_projection_on_random_gradients(floor):
    m = 4000
    F = _RandomGradients(m, 1)
    mu, lam = _RandomModuli(m)
    _, _, H = materials.NeoHookean(F, 1.0, 0.0)
    _, _, H_lam = materials.NeoHookean(F, 0.0, 1.0)
    H = mu[:, None, None] * H + lam[:, None, None] * H_lam
    J = materials.Determinant(F)
    assert (J <= 0.0).sum() > 50  # the J <= 0 branch (J := 1 in NeoHookean) is covered
    reference = materials.ProjectToPsd(H, floor)
    analytic = materials.ProjectNeoHookeanHessian(F, mu, lam, H, floor)
    assert _Relative(analytic, reference, H).max() < 1e-10
    # Every kind of mode was clamped somewhere: twist, flip and scaling.
    twist, flip, block = materials._NeoHookeanSpectrum(
        np.linalg.svd(F[60:80], compute_uv=False), J[60:80], mu[60:80], lam[60:80]
    )
    assert (flip.min(axis=1) < 0).all()
    assert (materials._SymmetricEigenvalues3(*block)[:, 0] < 0).all()
    changed = _Relative(H, reference, H) > 1e-8
    assert changed[60:80].all() and changed.sum() > m // 4


def test_analytic_projection_on_a_deformed_skin_matches_eigh_and_is_psd():
    mesh = BoxMesh((0.10, 0.03, 0.03), (6, 3, 3))
    material = Material(youngs_modulus=1e6, poissons_ratio=0.46, mass_density=1000.0)
    scale = np.where(np.arange(mesh.num_tets) % 3 == 0, 0.15, 1.0)  # a soft region's moduli
    models = {
        name: FemModel(mesh, material, youngs_scale=scale, projection=name)
        for name in ("analytic", "eigh")
    }
    assert FemModel(mesh, material).projection == "analytic"
    y = Deformed(mesh, 3)
    results = {name: fem.EnergyGradientHessian(y, project=True) for name, fem in models.items()}
    Ka, Ke = results["analytic"][2], results["eigh"][2]
    assert abs(Ka - Ke).max() <= 1e-10 * abs(Ke).max()
    # (the analytic one sums the energy in the compiled element loop, the eigh one in NumPy)
    assert results["analytic"][0] == pytest.approx(results["eigh"][0], rel=1e-13)
    exact = models["eigh"].Hessian(y).toarray()
    assert np.linalg.eigvalsh(exact).min() < -1e-3 * np.abs(exact).max()  # projection matters
    assert np.linalg.eigvalsh(Ka.toarray()).min() > -1e-10 * np.abs(exact).max()


def test_analytic_eigenpairs_match_finite_differences_of_the_stress():
    """H q = lambda q for the closed-form modes, H from central differences of P (an
    independent Hessian), on compressed, stretched and sheared gradients."""
    rng = np.random.default_rng(4)
    mu, lam = 1.3, 9.0
    F = np.stack(
        [
            np.diag([0.8, 0.9, 0.7]),
            np.diag([1.2, 1.1, 1.15]),
            np.eye(3) + 0.3 * rng.standard_normal((3, 3)),
        ]
    )
    F[2] *= np.sign(np.linalg.det(F[2]))
    eps = 1e-6
    for f in F:
        H = np.empty((9, 9))
        for c in range(9):
            d = np.zeros(9)
            d[c] = eps
            Pp = materials.NeoHookean((f.ravel() + d).reshape(1, 3, 3), mu, lam)[1]
            Pm = materials.NeoHookean((f.ravel() - d).reshape(1, 3, 3), mu, lam)[1]
            H[:, c] = (Pp - Pm).ravel() / (2 * eps)
        U, sigma, Vt = np.linalg.svd(f[None])
        J = np.linalg.det(f[None])
        twist, flip, block = materials._NeoHookeanSpectrum(sigma, J, mu, lam)
        scaling = materials._SymmetricEigenvalues3(*block)[0]
        outer = (U[0][:, :, None, None] * Vt[0][None, None, :, :]).transpose(1, 2, 0, 3)
        outer = outer.reshape(3, 3, 9)  # outer[i, j] = vec(u_i v_j^T)
        modes, values = [], []
        for k, (i, j) in enumerate(materials._PAIRS):
            modes += [outer[i, j] - outer[j, i], outer[i, j] + outer[j, i]]
            values += [twist[0, k], flip[0, k]]
        for q, value in zip(modes, values):
            q = q / np.linalg.norm(q)
            np.testing.assert_allclose(H @ q, value * q, atol=1e-6 * np.abs(H).max())
        # The scaling modes: the remaining three eigenvalues of H.
        rest = np.linalg.eigvalsh(H)
        for value in values:
            rest = np.delete(rest, np.argmin(np.abs(rest - value)))
        np.testing.assert_allclose(np.sort(rest), scaling, rtol=1e-6)


def test_ill_conditioned_gradients_are_projected_to_psd_within_round_off():
    """Near-singular F (sigma down to 1e-7, J = 1e-13, Hessian condition ~1e16), F = 0 (J = 0
    exactly), slightly inverted: the eigh reference itself is only accurate to eps cond there;
    the analytic projection agrees to that and is PSD. (A rank-deficient F whose rounded det is
    +-1e-17 has a dP/dF of round-off ~1e15, meaningless to both.)"""
    rng = np.random.default_rng(5)
    R = np.linalg.qr(rng.standard_normal((4, 3, 3)))[0]
    D = np.stack(
        [
            np.diag([1.0, 1e-6, 1e-7]),
            np.zeros((3, 3)),
            np.diag([1.0, 1.0, -1e-3]),
            np.diag([2.0, 2.0, 0.5]),
        ]
    )
    F = R @ D @ np.transpose(R[::-1], (0, 2, 1))
    _, _, H = materials.NeoHookean(F, 1.0, 10.0)
    reference = materials.ProjectToPsd(H)
    analytic = materials.ProjectNeoHookeanHessian(F, 1.0, 10.0, H)
    # J = 1e-13: entries ~1e16 and modes ~1 share each 9x9 matrix; the two agree to ~1e-6 of
    # the largest entry (measured 1.1e-6 at worst over rotations), the others to 1e-15.
    err = _Relative(analytic, reference, H)
    assert err[0] < 1e-5 and err[1:].max() < 1e-13
    w = np.linalg.eigvalsh(analytic)
    assert (w.min(axis=1) > -1e-12 * np.abs(w).max(axis=1)).all()


def test_batched_svd_matches_lapack():
    F = _RandomGradients(3000, 6)
    F[100] = np.diag([1.0, 1e-6, 1e-7])  # sigma2 < 1e-4 sigma1: LAPACK's fallback
    F[101] = 0.0
    U, sigma, Vt = materials._Svd3(F)
    np.testing.assert_allclose(sigma, np.linalg.svd(F, compute_uv=False), atol=1e-14)
    np.testing.assert_allclose(U * sigma[:, None, :] @ Vt, F, atol=1e-14)
    eye = np.broadcast_to(np.eye(3), F.shape)
    np.testing.assert_allclose(np.transpose(U, (0, 2, 1)) @ U, eye, atol=1e-14)
    np.testing.assert_allclose(Vt @ np.transpose(Vt, (0, 2, 1)), eye, atol=1e-14)


def test_analytic_projection_is_refused_by_name_for_other_materials():
    mesh = BoxMesh((0.1, 0.03, 0.03), (2, 1, 1))
    for model in ("corotated", "linear"):
        with pytest.raises(ValueError, match=f"neo-Hookean material only, not '{model}'"):
            FemModel(mesh, Material(model=model), projection="analytic")
        assert FemModel(mesh, Material(model=model)).projection == "eigh"
    with pytest.raises(ValueError, match="projection must be one of"):
        FemModel(mesh, Material(), projection="lanczos")


@pytest.mark.parametrize("model", materials.MATERIAL_MODELS)
def test_per_element_moduli_equal_the_sum_of_the_mu_and_lambda_parts(model):
    """One evaluation with (m,) moduli against psi, P, dP/dF being linear in (mu, lam): the sum
    of a mu-only and a lam-only evaluation with scalar moduli; the energy-only path against
    the full one."""
    rng = np.random.default_rng(7)
    m = 500
    F = np.eye(3) + 0.3 * rng.standard_normal((m, 3, 3))
    mu, lam = rng.uniform(0.5, 2.0, m), rng.uniform(0.5, 30.0, m)
    got = materials.Evaluate(model, F, mu, lam)
    parts = materials.Evaluate(model, F, 1.0, 0.0), materials.Evaluate(model, F, 0.0, 1.0)
    finite = np.isfinite(got[0])
    assert np.array_equal(finite, np.isfinite(parts[0][0]))
    for value, a, b in zip(got, *parts):
        shape = (-1,) + (1,) * (value.ndim - 1)
        want = mu.reshape(shape) * a + lam.reshape(shape) * b
        np.testing.assert_allclose(value[finite], want[finite], rtol=1e-12, atol=1e-12)
    energy = materials.Energy(model, F, mu, lam)
    np.testing.assert_allclose(energy[finite], got[0][finite], rtol=1e-13, atol=1e-13)
    assert np.array_equal(np.isinf(energy), ~finite)
