"""The compiled element loop (drakebots.fem.kernels, FemModel's default kernel) against
independent references: the PSD projection by a 9x9 eigendecomposition per element
(materials.ProjectToPsd), finite differences of its own energy and gradient, and the vectorised
NumPy path (FemModel(kernel="numpy"))."""

import numpy as np
import pytest
import scipy.sparse as sp

from drakebots.fem import kernels, materials
from drakebots.fem.materials import Material
from drakebots.fem.mesh import BoxMesh, TetMesh
from drakebots.fem.model import FemModel
from tests.fem.test_projection import Deformed, _RandomModuli
from tests.fem.test_projection import _RandomGradients as _ProjectionGradients

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="numba does not import")


def _SeparateTets(F):
    """A mesh of len(F) tets with vertices of their own and positions whose deformation
    gradients are F (x_a = F X_a, X the tet's rest corners)."""
    m = len(F)
    corners = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]) * 0.01
    mesh = TetMesh(np.tile(corners, (m, 1)), np.arange(4 * m).reshape(m, 4))
    return mesh, np.einsum("mij,aj->mai", F, corners).reshape(-1)


def _RandomGradients(m, seed):
    """The projection tests' gradients (at rest, near-repeated and repeated singular values,
    volume growth, ~5 % inverted), plus three equal singular values under compression and
    nearly flat elements (LAPACK's SVD path)."""
    F = _ProjectionGradients(m, seed)
    F[80:90] = 0.5 * np.eye(3)
    F[90:100] = np.diag([1.0, 1e-6, 1.0])
    return F


@pytest.mark.parametrize("floor", [0.0, 0.05])
def test_projected_element_stiffness_equals_the_eigendecomposition_projection(floor):
    m = 1500
    F = _RandomGradients(m, 1)
    mu, lam = _RandomModuli(m)
    mesh, x = _SeparateTets(F)
    fem = FemModel(mesh, Material(youngs_modulus=1.0, poissons_ratio=0.3), kernel="numpy")
    # The gradients as positions carry them (the nearly flat elements feel their round-off).
    F = fem.DeformationGradients(x)
    # Reference: NumPy's dP/dF with these moduli, projected by eigh, times Bᵀ (.) B V.
    _, _, H1 = materials.NeoHookean(F, 1.0, 0.0)
    _, _, H2 = materials.NeoHookean(F, 0.0, 1.0)
    H = mu[:, None, None] * H1 + lam[:, None, None] * H2
    B, V = fem._B, fem.rest_volumes
    for mode, Href in ((0, H), (1, materials.ProjectToPsd(H, floor))):
        reference = (np.transpose(B, (0, 2, 1)) @ Href @ B) * V[:, None, None]
        data, grad = np.empty(fem._nnz), np.empty(fem.num_dofs)
        energy, projected = kernels.NeoHookeanAssemble(
            x.reshape(-1, 3), fem._tets, fem._g, V, mu, lam, mode, floor,
            fem._entry_to_nnz, data, grad,
        )  # fmt: skip
        K = fem.Assemble(np.zeros_like(reference)).copy()
        K.data[:] = data
        expected = fem.Assemble(reference)
        blocks = np.abs((K - expected).toarray()).reshape(m, 12, 4 * m, 3)
        scale = np.abs(reference).max(axis=(1, 2))
        per_element = np.array([blocks[e, :, 4 * e : 4 * e + 4].max() for e in range(m)])
        assert (per_element / scale).max() < 1e-10
        assert energy == np.inf  # inverted elements among them
        if mode == 1:
            changed = np.abs(Href - H).max(axis=(1, 2)) > 1e-8 * np.abs(H).max(axis=(1, 2))
            assert projected == changed.sum() > m // 4
            # Every kind of clamped mode is exercised: the volume-growth block and equal sigmas.
            assert changed[60:90].all()


def test_gradient_and_hessian_are_the_derivatives_of_the_energy():
    mesh = BoxMesh((0.04, 0.02, 0.02), (3, 2, 2))
    material = Material(youngs_modulus=1e6, poissons_ratio=0.46, mass_density=1000.0)
    fem = FemModel(mesh, material)
    assert fem.kernel == "compiled"
    y = Deformed(mesh, 5)
    energy, grad, K = fem.EnergyGradientHessian(y, project=False)
    rng = np.random.default_rng(6)
    eps = 1e-7
    for _ in range(3):
        d = rng.standard_normal(y.shape)
        e_plus = fem.EnergyGradientHessian(y + eps * d, project=False)
        e_minus = fem.EnergyGradientHessian(y - eps * d, project=False)
        assert grad @ d == pytest.approx((e_plus[0] - e_minus[0]) / (2 * eps), rel=1e-6)
        fd = (e_plus[1] - e_minus[1]) / (2 * eps)
        assert np.abs(K @ d - fd).max() <= 1e-6 * np.abs(fd).max()


def test_the_compiled_loop_equals_the_numpy_path_on_a_deformed_skin_with_soft_elements():
    mesh = BoxMesh((0.10, 0.03, 0.03), (6, 3, 3))
    material = Material(youngs_modulus=1e6, poissons_ratio=0.46, mass_density=1000.0)
    scale = np.where(np.arange(mesh.num_tets) % 3 == 0, 0.15, 1.0)
    compiled = FemModel(mesh, material, youngs_scale=scale)
    reference = FemModel(mesh, material, youngs_scale=scale, kernel="numpy")
    y = Deformed(mesh, 3)
    for project in (False, True):
        e1, g1, K1 = compiled.EnergyGradientHessian(y, project=project)
        e2, g2, K2 = reference.EnergyGradientHessian(y, project=project)
        assert e1 == pytest.approx(e2, rel=1e-13)
        assert np.abs(g1 - g2).max() <= 1e-12 * np.abs(g2).max()
        assert abs(K1 - K2).max() <= 1e-11 * abs(K2).max()
    assert compiled.last_projected > mesh.num_tets // 10


def test_two_threads_equal_the_numpy_path_and_one_thread():
    """The element loop split into two chunks summed in order (FemModel.kernel_threads = 2, the
    frame-by-frame QPCC's default) against the NumPy path and the one-chunk loop."""
    mesh = BoxMesh((0.10, 0.04, 0.03), (12, 5, 4))
    assert mesh.num_tets >= 1000  # a chunk per thread: one per thousand elements at most
    material = Material(youngs_modulus=1e6, poissons_ratio=0.46, mass_density=1000.0)
    scale = np.where(np.arange(mesh.num_tets) % 3 == 0, 0.15, 1.0)
    one = FemModel(mesh, material, youngs_scale=scale)
    two = FemModel(mesh, material, youngs_scale=scale)
    one.kernel_threads, two.kernel_threads = 1, 2
    reference = FemModel(mesh, material, youngs_scale=scale, kernel="numpy")
    y = Deformed(mesh, 5)
    for project in (False, True):
        e2, g2, K2 = two.EnergyGradientHessian(y, project=project)
        e1, g1, K1 = one.EnergyGradientHessian(y, project=project)
        e0, g0, K0 = reference.EnergyGradientHessian(y, project=project)
        assert e2 == pytest.approx(e0, rel=1e-13)
        assert np.abs(g2 - g0).max() <= 1e-12 * np.abs(g0).max()
        assert abs(K2 - K0).max() <= 1e-11 * abs(K0).max()
        assert np.abs(g2 - g1).max() <= 1e-13 * np.abs(g1).max()
        assert abs(K2 - K1).max() <= 1e-13 * abs(K1).max()
        assert two.last_projected == one.last_projected
    assert two.last_projected > 0


def test_compiled_is_refused_where_it_does_not_apply():
    mesh = BoxMesh((0.02, 0.02, 0.02), (1, 1, 1))
    with pytest.raises(ValueError, match="kernel='compiled'.*corotated"):
        FemModel(mesh, Material(model="corotated"), kernel="compiled")
    with pytest.raises(ValueError, match="kernel='compiled'.*eigh"):
        FemModel(mesh, Material(), projection="eigh", kernel="compiled")
    with pytest.raises(ValueError, match="kernel must be one of"):
        FemModel(mesh, Material(), kernel="fortran")
    # "auto" falls back to NumPy there, by name.
    assert FemModel(mesh, Material(model="corotated")).kernel == "numpy"
    assert FemModel(mesh, Material(), projection="eigh").kernel == "numpy"


def test_pattern_sums_equal_scipys_and_the_grown_pattern_stays():
    """FemModel.PatternData / PatternMatrix (the Newton matrices' sums without scipy's merge)
    against scipy's own sparse sums; an entry outside the pattern, once met, stays in it."""
    mesh = BoxMesh((0.04, 0.02, 0.02), (3, 2, 2))
    fem = FemModel(mesh, Material(youngs_modulus=1e6, poissons_ratio=0.46, mass_density=1e3))
    x = Deformed(mesh, 7)
    K = fem.Hessian(x, project=True)
    n = fem.num_dofs
    inertia = sp.diags(np.linspace(1.0, 2.0, n)) + 0.01 * fem.RestStiffness()
    A = fem.PatternMatrix(K.data + fem.PatternData(inertia))
    assert abs(A - (K + inertia)).max() == 0.0
    with pytest.raises(ValueError, match="outside the stiffness's pattern"):
        fem.PatternData(sp.coo_matrix(([1.0], ([0], [n - 1])), shape=(n, n)))
    pair = sp.coo_matrix(
        ([5.0, 5.0, -2.0, -2.0], ([0, n - 1, 0, n - 1], [0, n - 1, n - 1, 0])), (n, n)
    )
    inside, rest = fem.PatternData(pair, outside=True)
    assert rest.nnz == 2
    B = fem.PatternMatrix(K.data + inside, rest)
    assert abs(B - (K + pair)).max() == 0.0
    # The pair gone: its entries stay as zeros, the pattern is the grown one.
    C = fem.PatternMatrix(K.data.copy())
    assert abs(C - K).max() == 0.0
    assert np.array_equal(C.indices, B.indices) and np.array_equal(C.indptr, B.indptr)
    assert C.nnz == K.nnz + 2


def test_the_compiled_gradient_alone_equals_the_numpy_gradient():
    mesh = BoxMesh((0.04, 0.02, 0.02), (3, 2, 2))
    material = Material(youngs_modulus=1e6, poissons_ratio=0.46, mass_density=1000.0)
    y = Deformed(mesh, 8)
    a = FemModel(mesh, material).Gradient(y)
    b = FemModel(mesh, material, kernel="numpy").Gradient(y)
    assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()


def test_the_compiled_jacobians_equal_numpys_determinants():
    mesh = BoxMesh((0.04, 0.02, 0.02), (3, 2, 2))
    fem = FemModel(mesh, Material())
    y = Deformed(mesh, 9)
    reference = np.linalg.det(FemModel(mesh, Material(), kernel="numpy").DeformationGradients(y))
    assert np.abs(fem.Jacobians(y) - reference).max() <= 1e-12 * np.abs(reference).max()
