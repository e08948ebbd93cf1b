"""FEM identities: zero force at rest, rigid-motion invariance, symmetric stiffness, gradient and
Hessian against finite differences, lumped mass, free-body momentum and energy."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from drakebots.fem.integrator import BackwardEuler, NewtonOptions
from drakebots.fem.materials import Material
from drakebots.fem.mesh import BoxMesh, CheckClosedManifold, TetMesh
from drakebots.fem.model import ElementInversion, FemModel

MODELS = ("neohookean", "corotated", "linear", "stable_neohookean")


def _Model(model="neohookean", divisions=(3, 2, 2), youngs_modulus=1e6, nu=0.4, **kw):
    mesh = BoxMesh((0.10, 0.03, 0.03), divisions)
    material = Material(
        youngs_modulus=youngs_modulus, poissons_ratio=nu, mass_density=1000.0, model=model, **kw
    )
    return FemModel(mesh, material)


@pytest.mark.parametrize("model", MODELS)
def test_zero_elastic_force_and_energy_at_rest(model):
    fem = _Model(model)
    x0 = fem.RestPositions()
    assert fem.Energy(x0) == pytest.approx(0.0, abs=1e-12)
    # Forces are O(E * area) = 1e6 * 1e-4 = 100 N for unit strain: 1e-9 N is round-off.
    assert np.max(np.abs(fem.ElasticForces(x0))) < 1e-9


@pytest.mark.parametrize("model", ("neohookean", "corotated", "stable_neohookean"))
def test_energy_forces_stiffness_invariant_under_rigid_motion(model):
    rng = np.random.default_rng(1)
    fem = _Model(model)
    x = fem.RestPositions() + 1e-3 * rng.standard_normal(fem.num_dofs)
    R = Rotation.from_rotvec([0.4, -0.9, 0.3]).as_matrix()
    t = np.array([0.3, -0.2, 1.0])
    y = (x.reshape(-1, 3) @ R.T + t).ravel()
    assert fem.Energy(y) == pytest.approx(fem.Energy(x), rel=1e-10)
    fx = fem.ElasticForces(x).reshape(-1, 3)
    fy = fem.ElasticForces(y).reshape(-1, 3)
    np.testing.assert_allclose(fy, fx @ R.T, atol=1e-9 * np.abs(fx).max())
    # Rigid motions of the rest shape: zero energy and force.
    z = (fem.RestPositions().reshape(-1, 3) @ R.T + t).ravel()
    assert fem.Energy(z) == pytest.approx(0.0, abs=1e-10)
    assert np.abs(fem.ElasticForces(z)).max() < 1e-7
    # Stiffness rotates as R K R^T (block-wise).
    Kx = fem.Hessian(x).toarray()
    Ky = fem.Hessian(y).toarray()
    n = fem.num_vertices
    Rbig = np.kron(np.eye(n), R)
    np.testing.assert_allclose(Ky, Rbig @ Kx @ Rbig.T, atol=1e-8 * np.abs(Kx).max())


@pytest.mark.parametrize("model", MODELS)
def test_stiffness_is_symmetric_and_projected_is_psd(model):
    rng = np.random.default_rng(2)
    fem = _Model(model)
    x = fem.RestPositions() + 3e-3 * rng.standard_normal(fem.num_dofs)
    K = fem.Hessian(x)
    assert abs(K - K.T).max() <= 1e-12 * abs(K).max()
    Kp = fem.Hessian(x, project=True).toarray()
    assert np.linalg.eigvalsh(Kp).min() > -1e-9 * np.abs(Kp).max()


@pytest.mark.parametrize("model", MODELS)
def test_gradient_and_hessian_match_finite_differences(model):
    rng = np.random.default_rng(3)
    fem = _Model(model)
    x = fem.RestPositions() + 5e-4 * rng.standard_normal(fem.num_dofs)
    E, grad, K = fem.EnergyGradientHessian(x, project=False)
    for _ in range(3):
        d = rng.standard_normal(fem.num_dofs)
        eps = 1e-7
        fd = (fem.Energy(x + eps * d) - fem.Energy(x - eps * d)) / (2 * eps)
        # Relative to |grad| |d|: a random direction's derivative can cancel to near zero.
        assert abs(fd - grad @ d) <= 1e-7 * np.linalg.norm(grad) * np.linalg.norm(d)
        gd = (fem.Gradient(x + eps * d) - fem.Gradient(x - eps * d)) / (2 * eps)
        np.testing.assert_allclose(K @ d, gd, atol=1e-5 * np.abs(gd).max())


def test_drakes_neohookean_linearises_to_lame_mu_and_lambda_minus_mu():
    """Drake's kNeoHookean (Smith et al. 2018, Eq. 13, not reparameterised) at F = I: the
    stiffness of small-strain elasticity with Lamé parameters (mu, lambda - mu), while the
    classic neo-Hookean's is that of (mu, lambda) (reference: the `linear` material)."""
    E, nu = 1e6, 0.4
    mu, lam = E / (2 * (1 + nu)), E * nu / ((1 + nu) * (1 - 2 * nu))

    def Linear(mu, lam):
        nu = lam / (2 * (lam + mu))
        return _Model("linear", youngs_modulus=mu * (3 * lam + 2 * mu) / (lam + mu), nu=nu)

    def RestStiffness(fem):
        return fem.Hessian(fem.RestPositions()).toarray()

    stable = RestStiffness(_Model("stable_neohookean"))
    scale = np.abs(stable).max()
    np.testing.assert_allclose(stable, RestStiffness(Linear(mu, lam - mu)), atol=1e-9 * scale)
    np.testing.assert_allclose(
        RestStiffness(_Model("neohookean")), RestStiffness(Linear(mu, lam)), atol=1e-9 * scale
    )
    assert np.abs(stable - RestStiffness(Linear(mu, lam))).max() > 0.05 * scale


def test_lumped_mass_sums_to_density_times_volume():
    fem = _Model()
    assert fem.TotalMass() == pytest.approx(1000.0 * 0.10 * 0.03 * 0.03, rel=1e-12)


def test_poissons_ratio_of_one_half_is_rejected():
    with pytest.raises(ValueError, match="poissons_ratio"):
        Material(poissons_ratio=0.5)


def test_open_surface_is_rejected():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    closed = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    CheckClosedManifold(v, closed)
    with pytest.raises(ValueError, match="not closed"):
        CheckClosedManifold(v, closed[:3])
    with pytest.raises(ValueError, match="not manifold"):
        CheckClosedManifold(
            np.vstack([v, [[1, 1, 1]]]), np.vstack([closed, [[1, 2, 4]], [[2, 1, 4]]])
        )


@pytest.mark.parametrize("scheme", ("backward_euler", "midpoint"))
def test_free_body_conserves_momentum_and_bounded_energy(scheme):
    """No gravity, no damping: linear momentum is exact under both schemes; angular momentum is
    exact under implicit midpoint and drifts at O(h^2) per step under backward Euler (which also
    dissipates energy); the energy stays bounded."""
    fem = _Model("neohookean", divisions=(4, 2, 2))
    options = NewtonOptions(
        force_tolerance=1e-8, position_tolerance=1e-12, relative_tolerance=0.0, scheme=scheme
    )
    integ = BackwardEuler(fem, gravity=(0.0, 0.0, 0.0), options=options)
    rng = np.random.default_rng(4)
    x = fem.RestPositions() + 3e-4 * rng.standard_normal(fem.num_dofs)
    # Initial spin about an axis through the centroid plus a drift.
    X = x.reshape(-1, 3)
    c = X.mean(axis=0)
    omega = np.array([0.0, 3.0, 5.0])
    v = (np.cross(omega, X - c) + [0.2, 0.0, -0.1]).ravel()
    m = np.repeat(fem.vertex_masses, 3)

    def momenta(x, v):
        X = x.reshape(-1, 3)
        mv = (m * v).reshape(-1, 3)
        return mv.sum(axis=0), np.cross(X, mv).sum(axis=0)

    def energy(x, v):
        return 0.5 * np.dot(m * v, v) + fem.Energy(x)

    P0, L0 = momenta(x, v)
    E0 = energy(x, v)
    h = 1e-3
    for _ in range(100):
        x, v = integ.Step(x, v, h)
        P, L = momenta(x, v)
        np.testing.assert_allclose(P, P0, atol=1e-12 * (1 + np.abs(P0).max()))
        assert energy(x, v) <= E0 * (1.05 if scheme == "midpoint" else 1 + 1e-9)
    tolerance = 1e-8 if scheme == "midpoint" else 5e-2
    assert np.linalg.norm(L - L0) <= tolerance * np.linalg.norm(L0)


def test_inverted_rest_element_is_rejected():
    mesh = BoxMesh((0.1, 0.1, 0.1), (1, 1, 1))
    tets = mesh.tets.copy()
    tets[0, [2, 3]] = tets[0, [3, 2]]
    with pytest.raises(ValueError, match="element 0"):
        FemModel(TetMesh(mesh.vertices, tets), Material())


def test_step_that_must_invert_stops_naming_element_and_time():
    """A vertex driven through its opposite face: Newton refuses to invert, the step is cut and
    retried, and the failure names the element and the time."""
    mesh = BoxMesh((0.01, 0.01, 0.01), (1, 1, 1))
    fem = FemModel(mesh, Material(youngs_modulus=1e5, poissons_ratio=0.3))
    n = fem.num_vertices
    fixed = np.arange(n - 1)
    integ = BackwardEuler(
        fem, gravity=(0, 0, 0), fixed_vertices=fixed, options=NewtonOptions(max_cuts=2)
    )
    x = fem.RestPositions()
    targets = x.copy()
    # Squash the box flat onto its bottom: all top vertices pushed 1.5 cm down.
    top = mesh.vertices[:, 2] > 0.005
    T = targets.reshape(-1, 3)
    T[top[: len(T)] & (np.arange(n) < n - 1), 2] -= 0.015
    with pytest.raises(ElementInversion) as info:
        integ.Step(x, np.zeros_like(x), 1e-3, time=0.25, targets=T.ravel())
    assert "element" in str(info.value) and "0.25" in str(info.value)


def test_a_step_from_the_last_steps_factorisation_reaches_the_same_state():
    """NewtonOptions.reuse_across_steps (the default, issue 52): a step starts from the last
    step's factorisation. Against the reference that factorises every step afresh
    (reuse_across_steps=False): a clamped bar swinging down under gravity for 30 steps (its tip
    falls 0.7 mm and oscillates, so the Newton matrix changes from step to step). Both stop at
    the same tolerances (position 1e-8 m, relative 1e-6 of the step's displacement, force
    1e-7 N), so the states agree to the position tolerance (measured: 5.9e-10 m)."""
    fem = _Model("neohookean", divisions=(6, 2, 2))
    fixed = np.flatnonzero(fem.mesh.vertices[:, 0] < 1e-9)
    runs = {}
    for reuse in (False, True):
        integ = BackwardEuler(
            fem, fixed_vertices=fixed, options=NewtonOptions(reuse_across_steps=reuse)
        )
        x, v = fem.RestPositions(), np.zeros(fem.num_dofs)
        states, iterations = [], 0
        for _ in range(30):
            x, v = integ.Step(x, v, 2e-3)
            states.append(x)
            iterations += integ.stats.newton_iterations
        runs[reuse] = states
    tip = np.abs(runs[False][-1] - fem.RestPositions()).max()
    assert tip > 5e-4  # it bent
    difference = max(np.abs(a - b).max() for a, b in zip(runs[False], runs[True]))
    assert difference <= 1e-8  # m
