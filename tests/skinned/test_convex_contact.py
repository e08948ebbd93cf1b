"""The coupled skin's ground contact as one convex problem per step (CouplingConfig.contact =
"convex", drakebots.skinned.convex_contact; issue 69).

References: finite differences of the SAP cost (its gradient and Hessian), the closed-form
minimiser of a one-vertex problem in stiction, the friction cone (Coulomb), Newton's second law
(the step changes the momentum of plate and skin by gravity's and the ground's impulse), today's
active-set simulator and Drake's DeformableModel + SAP on the same scene
(drakebots.skinned.drake_scenes).
"""

import dataclasses

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

from drakebots.fem.solvers import PardisoAvailable
from drakebots.skinned.convex_contact import (
    ContactPoints,
    ContactProblem,
    PointRegularisation,
    TriangleContactPoints,
    _DrakeDelassusEstimate,
)
from drakebots.skinned.drake_scenes import DrakeContact, RunDrake, RunDrakebots, Scene, Stepper


def _Problem(m=6, mu=0.6, seed=0):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(3 * m, 3 * m))
    A = B @ B.T + 3 * m * np.eye(3 * m)
    R = np.abs(rng.normal(size=(m, 1))) * [1e-3, 1e-3, 2.5e-2] + 1e-3
    v_hat = np.zeros((m, 3))
    v_hat[:, 2] = rng.normal(size=m)
    return ContactProblem(A, rng.normal(size=3 * m), R, v_hat, mu)


def test_the_contact_cost_gradient_and_hessian_are_its_derivatives():
    problem = _Problem()
    rng = np.random.default_rng(1)
    regions = set()
    for _ in range(20):
        v = rng.normal(size=problem.v_star.size) * 0.5
        gamma, G = problem.Impulses(v, hessian=True)
        # The regions of the cone projection, from the impulses (independent of the code's masks).
        for g in gamma:
            t = np.linalg.norm(g[:2])
            if np.allclose(g, 0):
                regions.add("separate")
            elif t < problem.mu * g[2] * (1 - 1e-9):
                regions.add("stick")
            else:
                regions.add("slide")
            assert t <= problem.mu * g[2] * (1 + 1e-12) + 1e-15  # inside the cone
        eps = 1e-7
        grad = problem.Gradient(v)
        fd = np.array(
            [
                (problem.Cost(v + eps * e) - problem.Cost(v - eps * e)) / (2 * eps)
                for e in np.eye(v.size)
            ]
        )
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())
        # -dγ/dv by differences of the impulses, block by block.
        for i in range(len(gamma)):
            for j in range(3):
                dv = np.zeros_like(v)
                dv[3 * i + j] = eps
                diff = -(problem.Impulses(v + dv)[0][i] - problem.Impulses(v - dv)[0][i]) / (
                    2 * eps
                )
                np.testing.assert_allclose(
                    G[i][:, j], diff, rtol=1e-4, atol=1e-4 * np.abs(G[i]).max()
                )
    assert regions == {"separate", "stick", "slide"}


def test_the_convex_problems_solution_is_its_minimum():
    problem = _Problem(m=8, seed=2)
    v, gamma, iterations = problem.Solve()
    assert iterations < 50
    # Stationary (the KKT condition of the unconstrained convex problem) ...
    g = problem.Gradient(v)
    assert np.abs(g).max() <= 1e-8 * np.abs(problem.A @ problem.v_star).max()
    # ... so no perturbation lowers the cost.
    rng = np.random.default_rng(3)
    best = problem.Cost(v)
    for _ in range(50):
        assert problem.Cost(v + 1e-4 * rng.normal(size=v.size)) >= best - 1e-12
    # Impulses inside the cone, and the momentum they carry: A (v - v*) = γ.
    assert np.all(np.linalg.norm(gamma[:, :2], axis=1) <= problem.mu * gamma[:, 2] + 1e-12)
    np.testing.assert_allclose(problem.A @ (v - problem.v_star), gamma.ravel(), atol=1e-8)


def test_a_clipped_triangle_gives_the_centroid_and_area_of_its_part_below_the_ground():
    """The triangle (0,0,-1), (1,0,-1), (0,1,1): z = 2y - 1, below the ground for y < 1/2, a
    trapezoid of area ∫(1 - y) dy = 3/8 over [0, 1/2], centroid (x, y) = (7/18, 2/9) by the
    same integrals, depth there 2 (2/9) - 1; a triangle wholly below gives three points, a
    third of its area each, at its quadrature points (their mean the centroid)."""
    X = np.array([[0, 0, -1], [1, 0, -1], [0, 1, 1], [2, 0, -1], [2, 1, -2], [3, 0, -1.5]], float)
    # Both oriented with their outward normals down (toward the ground).
    faces = np.array([[0, 2, 1], [3, 4, 5]])
    points = TriangleContactPoints(X, faces, X[:, 2], 1e-3)
    assert len(points.area) == 4
    clipped = points.bary[0] @ X[points.vertices[0]]
    np.testing.assert_allclose(clipped[:2], [7 / 18, 2 / 9], rtol=1e-12)
    assert points.area[0] == pytest.approx(3 / 8, rel=1e-12)
    assert points.phi[0] == pytest.approx(2 * 2 / 9 - 1, rel=1e-12)
    np.testing.assert_allclose(points.area[1:], 0.5 / 3, rtol=1e-12)
    below = np.array([b @ X[v] for b, v in zip(points.bary[1:], points.vertices[1:])])
    np.testing.assert_allclose(below.mean(axis=0), X[3:6].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(points.phi[1:], below[:, 2], rtol=1e-12)
    # A triangle facing up (the skin's top) gives none.
    assert len(TriangleContactPoints(X, faces[:, ::-1], X[:, 2], 1e-3).area) == 0


def test_the_point_contact_cost_gradient_and_hessian_are_its_derivatives():
    """The problem on points that move with the vertices through J (the barycentric Jacobian of
    clipped skin triangles, more points than vertices): ∇ℓ = A (v - v*) - Jᵀ γ and the Hessian
    A + Jᵀ G J against central differences of the cost and of the gradient."""
    rng = np.random.default_rng(4)
    X = np.array([[0, 0, -1e-4], [0.01, 0, 2e-4], [0, 0.01, -2e-4], [0.01, 0.01, -1e-4]])
    points = TriangleContactPoints(X, np.array([[0, 2, 1], [0, 2, 3]]), X[:, 2], 1e-3)
    candidates = np.arange(4)
    J = points.Jacobian(candidates)
    assert J.shape == (12, 12)  # one clipped centroid and three quadrature points
    B = rng.normal(size=(12, 12))
    W = np.linalg.inv(B @ B.T + 12 * np.eye(12)) * 1e-3
    h = 0.005
    R, v_hat = PointRegularisation(J, W, h, points, 1.0, 1e-3, 2e8)
    A = h**2 * np.linalg.inv(W)
    problem = ContactProblem(0.5 * (A + A.T), rng.normal(size=12) * 0.01, R, v_hat, 0.6, J)
    # Random velocities, and five whose points all stick (y = (0, 0, 1) at each: J is square).
    stuck = [v_hat - R * [0, 0, 1] * rng.uniform(0.5, 2) for _ in range(5)]
    samples = [problem.v_star + rng.normal(size=12) * 0.02 for _ in range(15)]
    samples += [np.linalg.solve(J, c.ravel()) for c in stuck]
    regions = set()
    for v in samples:
        gamma, G = problem.Impulses(v, hessian=True)
        for g in gamma:
            t = np.linalg.norm(g[:2])
            regions.add(
                "separate"
                if np.allclose(g, 0)
                else ("stick" if t < problem.mu * g[2] * (1 - 1e-9) else "slide")
            )
        eps = 1e-7
        fd = np.array(
            [
                (problem.Cost(v + eps * e) - problem.Cost(v - eps * e)) / (2 * eps)
                for e in np.eye(12)
            ]
        )
        grad = problem.Gradient(v)
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())
        H = problem._Hessian(G)
        fd_H = np.array(
            [
                (problem.Gradient(v + eps * e) - problem.Gradient(v - eps * e)) / (2 * eps)
                for e in np.eye(12)
            ]
        ).T
        np.testing.assert_allclose(H, fd_H, rtol=1e-4, atol=1e-5 * np.abs(fd_H).max())
        # J as a sparse matrix (the collisions' problem, _SolveGrowing): the same Hessian.
        sparse = dataclasses.replace(problem, J=sp.csr_matrix(J))
        np.testing.assert_allclose(
            sparse._Hessian(G), fd_H, rtol=1e-4, atol=1e-5 * np.abs(fd_H).max()
        )
        np.testing.assert_allclose(sparse.Gradient(v), grad, rtol=1e-12, atol=1e-15)
    assert regions == {"separate", "stick", "slide"}
    # Jᵀ γ: the points' impulses reach the vertices with the points' barycentric weights.
    v, gamma, _ = problem.Solve()
    pushed = J.T @ gamma.ravel()
    expected = np.zeros((4, 3))
    for verts, bary, g in zip(points.vertices, points.bary, gamma):
        for vertex, b in zip(verts, bary):
            expected[vertex] += b * g
    np.testing.assert_allclose(pushed, expected.ravel(), rtol=1e-12, atol=1e-20)


def test_a_compliant_point_rests_at_its_stiffness_depth():
    """PointRegularisation with a finite stiffness: at rest (v = 0) a point's normal impulse
    -(v - v̂_n) / R_n over h is k φ's magnitude, k = C area, whatever h and τ (when the
    stiffness term dominates R_n: Drake's max), and whatever the skin's own stiffness C_s in
    series, which softens R_n alone (Drake's deformable driver: k = g area, g = 1 / (1/C_s +
    1/C))."""
    points = ContactPoints(np.array([[0]]), np.array([[1.0]]), np.array([2e-5]), np.array([-1e-5]))
    for h, tau in ((0.005, 0.1), (0.001, 0.005)):
        for skin, g in ((np.inf, 2e8), (1e8, 1.0 / (1.0 / 1e8 + 1.0 / 2e8))):
            R, v_hat = PointRegularisation(
                np.eye(3), 1e-9 * np.eye(3), h, points, 1.0, 1e-3, 2e8, tau, skin
            )
            assert R[0, 2] == pytest.approx(1.0 / (h * g * 2e-5 * (h + tau)), rel=1e-12)
            assert v_hat[0, 2] / R[0, 2] / h == pytest.approx(2e8 * 2e-5 * 1e-5, rel=1e-12)


def test_drakes_delassus_estimate_of_a_vertex_and_a_centroid():
    """CouplingConfig.contact_delassus "diagonal" (Drake's SapModel estimate, the RMS norm of
    J_j diag(A)⁻¹ J_jᵀ): a point at a vertex of diagonal a has the block I / a, w = √3 / (3 a);
    a triangle's centroid on three vertices of diagonal a has (3 / 9) I / a, w = √3 / (9 a);
    and the estimate ignores the off-diagonal coupling the exact J W Jᵀ holds."""
    a = 0.125
    n = 4
    J = np.zeros((6, 3 * n))
    J[:3, :3] = np.eye(3)  # a point at vertex 0
    for vertex in (1, 2, 3):  # the centroid of vertices 1-3
        J[3:, 3 * vertex : 3 * vertex + 3] = np.eye(3) / 3.0
    w = _DrakeDelassusEstimate(J, np.full(3 * n, a))
    np.testing.assert_allclose(w, [np.sqrt(3) / (3 * a), np.sqrt(3) / (9 * a)], rtol=1e-12)


def test_one_sticking_vertex_meets_its_closed_form():
    """A (3, 3) = a I, a vertex pressed into the ground (v̂_n > v*_n) with no tangential motion:
    stiction, γ = -R⁻¹ (v - v̂), so a (v - v*) = R⁻¹ (v̂ - v): v = (a v* + v̂ / R) / (a + 1 / R)."""
    a, R_n = 2.0, 0.05
    problem = ContactProblem(
        a * np.eye(3),
        np.array([0.0, 0.0, -0.3]),
        np.array([[1e-3, 1e-3, R_n]]),
        np.array([[0.0, 0.0, 0.1]]),
        0.5,
    )
    v, gamma, _ = problem.Solve()
    expected = (a * -0.3 + 0.1 / R_n) / (a + 1 / R_n)
    assert v[2] == pytest.approx(expected, rel=1e-12)
    assert gamma[0, 2] == pytest.approx(a * (expected + 0.3), rel=1e-10)
    np.testing.assert_allclose(v[:2], 0.0, atol=1e-15)


@pytest.mark.parametrize(
    "points",
    [
        {},
        {"contact_points": "triangles"},
        {"contact_points": "triangles", "contact_stiffness": 2e8},
        {"contact_stiffness": 2e8},
        {k: v for k, v in DrakeContact().items() if k != "contact"},
        {
            **{k: v for k, v in DrakeContact().items() if k != "contact"},
            "skin_integrator": "backward_euler",
        },
    ],
)
def test_a_dropped_block_changes_momentum_by_gravity_and_the_ground(points):
    """Newton's second law per step (no damping): (p+ - p) / h = m g + Σ f_ground, for the plate
    and the skin together (today's tests ask 0.3 N; this holds to 1e-6 N), with the contact at
    the vertices or at the clipped triangles' points, rigid or compliant (Drake's regularisation
    too), the skin's positions by backward Euler or by Drake's trapezoid (DrakeContact)."""
    scene = Scene(kind="drop", mass_damping=0.0, stiffness_damping=0.0)
    stepper, _ = Stepper(scene, contact="convex", **points)
    state = stepper.DefaultState()
    state.x[2::3] += 0.002  # 2 mm up: a fall, an impact, a bounce
    h = scene.time_step
    mass = stepper.mass.reshape(-1, 3)[:, 0]
    total = scene.plate_mass + mass.sum()
    touched = False
    for _ in range(10):
        p0 = scene.plate_mass * state.v[3:6] + (mass[:, None] * state.w.reshape(-1, 3)).sum(0)
        state, info = stepper.Step(state)
        p1 = scene.plate_mass * state.v[3:6] + (mass[:, None] * state.w.reshape(-1, 3)).sum(0)
        F = info.contact_forces
        np.testing.assert_allclose((p1 - p0) / h, F.sum(0) + [0, 0, -9.81 * total], atol=1e-6)
        touched |= F[:, 2].sum() > 0
        assert info.factorizations <= 1  # one linearisation, or the last step's
        assert np.all(np.linalg.norm(F[:, :2], axis=1) <= scene.friction * F[:, 2] + 1e-9)
    assert touched


def test_the_newton_policy_changes_the_path_to_the_step_not_its_solution():
    """The convex step's globalisation (the line search once updates grow, the trust region,
    the exact Hessian near the solution, refactorisation when updates contract slowly; issue
    69, Findings 20) against plain modified Newton on the projected matrix of the step's start
    (none of them): the dropped block's fall, impact and bounce end in the same states to the
    solver's tolerance (position_tolerance 1e-7 m a step, 10 steps)."""
    scene = Scene(kind="drop", mass_damping=0.0, stiffness_damping=0.0)
    plain = dict(
        exact_hessian_below=0.0,
        convex_contraction=float("inf"),
        overshoot=float("inf"),
        max_update=0.0,
    )
    paths = {}
    for name, options in {"default": {}, "plain": plain}.items():
        stepper, _ = Stepper(scene, contact="convex", **options)
        state = stepper.DefaultState()
        state.x[2::3] += 0.002
        path = []
        for _ in range(10):
            state, info = stepper.Step(state)
            path.append(state.x.copy())
        paths[name] = np.array(path)
    assert np.abs(paths["default"] - paths["plain"]).max() < 1e-6


@pytest.mark.parametrize(
    "config",
    [
        {"contact": "lcp"},
        {"contact": "convex", "contact_points": "tets"},
        {"contact": "convex", "contact_delassus": "rms"},
    ],
)
def test_an_unknown_contact_formulation_is_refused(config):
    stepper, _ = Stepper(Scene(), **config)
    with pytest.raises(ValueError, match="contact"):
        stepper.Step(stepper.DefaultState())


def test_an_unknown_or_unsupported_skin_integrator_is_refused_by_name():
    """CouplingConfig.skin_integrator: a name not in SKIN_INTEGRATORS, Drake's Newmark positions
    with the active set (which integrates by backward Euler), and with skeleton boxes in the
    convex problem (a glued vertex by the trapezoid, the skeleton by backward Euler: their
    impulses' compliance would not be symmetric) are refused when the simulator is made; with
    the boxes' penalties outside the problem it is made."""
    from drakebots.errors import InputError

    with pytest.raises(ValueError, match="skin_integrator must be one of"):
        Stepper(Scene(), contact="convex", skin_integrator="verlet")
    with pytest.raises(InputError, match="built for contact 'convex'.*contact 'active_set'"):
        Stepper(Scene(), skin_integrator="newmark")
    with pytest.raises(InputError, match="skeleton boxes with convex_collisions True"):
        _ShellStepper(contact="convex", skin_integrator="newmark")
    outside = dict(convex_collisions=False)
    stepper, *_ = _ShellStepper(contact="convex", skin_integrator="newmark", **outside)
    assert stepper.config.skin_integrator == "newmark"


@pytest.mark.paper  # 16 s at load 4 with the skin's making, 45 s at load 7
def test_the_coarse_beetle_stands_as_with_the_active_set(beetle_skin_coarse):
    """The beetle's whole-body skin (6040 vertices) landing on its soles and standing under its
    servos: the convex contact's torso stays within 0.05 mm of today's simulator over 10 steps
    (measured: 0.015 mm), the ground carries the weight within 2 % at the end (still settling:
    0.6 %), and the step's factorisation is carried while it converges (measured: one in 12
    steps)."""
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.robots import GetRobot
    from drakebots.skinned.skin_coupling import CoupledSkinSkeleton, CouplingConfig

    skin = beetle_skin_coarse
    robot = GetRobot(skin.robot)
    paths, factorizations = {}, 0
    for contact in ("convex", "active_set"):
        plant = MultibodyPlant(0.0)
        instance = robot.AddTo(plant)
        plant.Finalize()
        stepper = CoupledSkinSkeleton(
            plant,
            instance,
            skin,
            CouplingConfig(time_step=0.005, contact=contact),
            lift=-float(skin.mesh.vertices[:, 2].min()),
            skeleton=robot.params,
        )
        state = stepper.DefaultState()
        desired = np.concatenate([state.q[stepper.actuated_q], np.zeros(stepper.nu)])
        base = stepper.floating[0] + 4
        path = []
        for k in range(10):
            state, info = stepper.Step(state, desired=desired, time_s=0.005 * k)
            path.append(state.q[base : base + 3].copy())
            if contact == "convex":
                factorizations += info.factorizations
        paths[contact] = np.array(path)
        if contact == "convex":
            mass = sum(plant.get_body(b).default_mass() for b in plant.GetBodyIndices(instance))
            weight = (mass + stepper.fem.TotalMass()) * 9.81
            assert info.contact_forces[:, 2].sum() == pytest.approx(weight, rel=0.02)
    assert np.linalg.norm(paths["convex"] - paths["active_set"], axis=1).max() < 5e-5
    assert factorizations <= 3


@pytest.mark.paper  # 14 s at load 4, 90 s at load 7 (a 1360-vertex skin, 22 steps)
def test_a_sliding_box_obeys_coulombs_law_in_the_cone():
    """The soft box of test_skin_coupling pushed along the ground at 0.3 m/s: while it slides,
    the total friction is mu times the total normal force (the cone's boundary, to 0.1 %), and
    once the first steps' pitching has passed it decelerates at mu g within 5 % (the rigid-body
    Coulomb solution), and it stops. Measured: steady deceleration 4.77-4.95 m/s² against 4.905;
    the first three steps after the push lose more (the box pitches onto its front edge and
    hops for a step), so the mean over the whole slide is 0.80 mu g and the distance 0.89 of
    v0² / (2 mu g), where the active set gives both within 10 %."""
    from drakebots.skinned.skin_coupling import CoupledSkinSkeleton, CouplingConfig
    from tests.skinned.test_skin_coupling import box

    plant, instance, skin = box.__wrapped__()
    mu, v0, g, h = 0.5, 0.3, 9.81, 0.005
    config = CouplingConfig(time_step=h, friction=mu, contact="convex")
    lift = -skin.mesh.vertices[:, 2].min()
    stepper = CoupledSkinSkeleton(plant, instance, skin, config, lift=lift, skeleton=None)
    state = stepper.DefaultState()
    for _ in range(6):
        state, info = stepper.Step(state)
    state.v[3] = v0
    state.w[0::3] += v0
    speeds = []
    for _ in range(16):
        state, info = stepper.Step(state)
        F = info.contact_forces
        if state.v[3] > 0.05 and F[:, 2].sum() > 0:
            friction = np.linalg.norm(F[:, :2].sum(axis=0))
            assert friction == pytest.approx(mu * F[:, 2].sum(), rel=1e-3)
        speeds.append(state.v[3])
    speeds = np.array(speeds)
    steady = -np.diff(speeds[3:][speeds[3:] > 0.05]) / h
    assert steady.mean() == pytest.approx(mu * g, rel=0.05)
    assert abs(speeds[-1]) < 0.01


# The validation scenes and the quantity each is judged by (issue 69).
_SCENES = (("drop", "sag"), ("indent", "contact_force"), ("force", "sag"))


@pytest.mark.parametrize("friction", [0.0, 0.8, 2.0])
def test_with_drakes_material_regularisation_and_integrator_the_scenes_agree_with_drake(friction):
    """Like for like with Drake's DeformableModel + SAP at the same 5 ms step (Drake's
    kNeoHookean as drakebots' "stable_neohookean", drake_scenes.DrakeContact's points,
    pressure gradient, series stiffness, Delassus estimate and Newmark positions): the block's
    sag at rest, the force at a prescribed indentation and the indentation under a prescribed
    force each within 2 % of Drake's (the issue asks 2, 2 and 10 %; measured within 0.61 % at
    friction 0 and 2, -1.71 / +0.78 / -1.05 % at 0.8, where the rest sag depends on how the
    block's edges slip while it lands: by backward Euler there -3.72 %, Findings 33), and the
    bottom's mean sinking into the compliant ground within 10 % of Drake's (measured 1-4 %;
    with the exact Delassus diagonal SAP's near-rigid term binds and ours sank 60 % deeper,
    Findings 23)."""
    for kind, field in _SCENES:
        scene = Scene(kind=kind, mass_damping=10.0, friction=friction)
        drake = RunDrake(scene)
        ours = RunDrakebots(scene, **DrakeContact())
        assert getattr(ours, field) == pytest.approx(getattr(drake, field), rel=0.02), kind
        assert ours.penetration == pytest.approx(drake.penetration, rel=0.1), kind
        # At rest (the trapezoid damps only by the skin's Rayleigh damping: 2e-4 m/s left)
        assert ours.max_speed < 5e-4


def test_a_resting_block_sags_as_the_active_set_and_drake():
    """The validation block (drake_scenes.Scene "drop", friction 0.8) at rest with the convex
    step's defaults (near-rigid vertices): the ground carries the weight; the sag is within
    10 % of the active set's and within 10 % of Drake's at the same step (measured -6.7 %:
    Drake's time-step error and its compliant ground; Findings 23)."""
    scene = Scene(kind="drop", mass_damping=10.0)
    convex = RunDrakebots(scene, contact="convex")
    active = RunDrakebots(scene)
    drake = RunDrake(scene)
    sx, sy, sz = scene.size
    weight = (scene.plate_mass + scene.mass_density * sx * sy * sz) * 9.81
    assert convex.contact_force == pytest.approx(weight, rel=1e-4)
    # The regularised contact sinks a few micrometres (SAP's near-rigid regime).
    assert 0.0 < convex.penetration < 0.05 * convex.sag
    assert convex.sag == pytest.approx(active.sag, rel=0.1)
    assert convex.sag == pytest.approx(drake.sag, rel=0.1)


def test_drakes_classic_neohookean_is_refused_by_name():
    """Drake has no classic neo-Hookean: a scene asking Drake for it is refused, naming the
    model Drake does have."""
    with pytest.raises(ValueError, match="stable_neohookean"):
        RunDrake(Scene(material_model="neohookean"))


@pytest.mark.paper  # about 1 min
def test_at_friction_08_the_dropped_block_by_backward_euler_meets_drakes_converged_sag():
    """Friction 0.8: the dropped block's rest sag depends on how its edges slip while it
    lands, so on each simulator's time integration (Drake's Newmark positions against the
    paper's backward Euler, drakebots' default). Drake's own sag moves by more than 4 % from
    5 ms to 1 ms (measured +5.5 %); ours by backward Euler, with Drake's regularisation, at
    1 ms meets Drake's at 1 ms within 1 % (measured +0.03 %), and at 5 ms is within 2.5 % of
    it (measured +1.6 %), closer than Drake's own 5 ms answer. The pressed scenes (the load
    ramped over 0.2 s) agree at 5 ms: force within 2 % (measured +0.97 %), indentation within
    5 % (measured -2.0 %; the issue asks 10 %)."""
    scene = Scene(kind="drop", mass_damping=10.0)
    fine = dataclasses.replace(scene, time_step=1e-3, steps=600)
    drake, drake_fine = RunDrake(scene), RunDrake(fine)
    euler = dict(DrakeContact(), skin_integrator="backward_euler")
    ours, ours_fine = RunDrakebots(scene, **euler), RunDrakebots(fine, **euler)
    assert drake.sag / drake_fine.sag - 1.0 > 0.04
    assert ours_fine.sag == pytest.approx(drake_fine.sag, rel=0.01)
    assert ours.sag == pytest.approx(drake_fine.sag, rel=0.025)
    assert abs(ours.sag / drake_fine.sag - 1.0) < abs(drake.sag / drake_fine.sag - 1.0)
    for kind, field, bound in (("indent", "contact_force", 0.02), ("force", "sag", 0.05)):
        pressed = Scene(kind=kind, mass_damping=10.0)
        reference = getattr(RunDrake(pressed), field)
        value = getattr(RunDrakebots(pressed, **euler), field)
        assert value == pytest.approx(reference, rel=bound), kind


def _ShellStepper(**config):
    """The torso shell of test_skin_coupling (2 cm radius, glued to the beetle's torso, its
    lowest inner vertex k 3.5 mm above the torso box) with the skin's own weight off, no
    damping, 2 ms steps: (stepper, plant, instance, the box's top point, k)."""
    from drakebots.skinned.skin_coupling import CoupledSkinSkeleton, CouplingConfig
    from tests.skinned.test_skin_coupling import _TorsoShell

    plant, instance, skin, top, k = _TorsoShell(0.016 + 0.0025 + 0.001)
    config = CouplingConfig(
        self_collision_distance=1e-9,
        time_step=0.002,
        max_cuts=0,
        position_tolerance=1e-10,
        mass_damping=0.0,
        **config,
    )
    stepper = CoupledSkinSkeleton(plant, instance, skin, config)
    stepper.gravity = np.zeros_like(stepper.gravity)
    return stepper, plant, instance, top, k


def test_a_collisions_jacobian_is_the_rate_of_its_signed_distance():
    """The collisions in the convex problem (CouplingConfig.convex_collisions): the normal row
    of each constraint's Jacobian, applied to the skin's and the skeleton's velocities, is the
    rate of its signed distance, against central differences of the distance itself (the
    box's pose from Drake's kinematics at q ± ε N(q) v, the vertices at x ± ε w): a vertex
    0.3 mm above the torso box's top face and a self-collision pair 2 mm apart (r = 3 mm);
    the constraint frames are orthonormal with the normal last."""
    from drakebots.skinned.convex_contact import _StepCollisions

    stepper, plant, instance, top, k = _ShellStepper(convex_collisions=True, contact="convex")
    stepper.config.self_collision_distance = 0.003
    q = plant.GetPositions(plant.CreateDefaultContext())
    X = stepper.fem.RestPositions().reshape(-1, 3)
    X[k] = top + [0.0, 0.0, 3e-4]
    outer = stepper._outer
    a, b = outer[0], outer[np.argmax(np.linalg.norm(X[outer] - X[outer[0]], axis=1))]
    X[a] = X[b] + [0.002, 0.0, 0.0]  # far apart at rest, 2 mm apart now
    margin = stepper.config.contact_margin
    contacts = _StepCollisions(stepper, q, X, q, X, margin)
    box = np.flatnonzero((contacts.a == k) & (contacts.b < 0))
    pair = np.flatnonzero(
        (contacts.a == a) & (contacts.b == b) | (contacts.a == b) & (contacts.b == a)
    )
    assert len(box) == 1 and len(pair) == 1
    np.testing.assert_allclose(contacts.phi[box], 3e-4, atol=1e-12)
    np.testing.assert_allclose(contacts.phi[pair], 0.002 - 0.003, atol=1e-12)
    frames = contacts.frame
    np.testing.assert_allclose(
        frames @ frames.transpose(0, 2, 1), np.broadcast_to(np.eye(3), frames.shape), atol=1e-12
    )
    rng = np.random.default_rng(0)
    w = rng.normal(size=X.shape)
    v = rng.normal(size=plant.num_velocities())
    candidates = contacts.vertices
    J = contacts.Jacobian(candidates, len(v))
    rate = (J @ np.concatenate([w[candidates].ravel(), v]))[2::3]
    eps = 1e-7

    def Phi(sign):
        moved = _StepCollisions(
            stepper,
            stepper._Integrate(q, sign * v, eps),
            X + sign * eps * w,
            q,
            X,
            margin,
        )
        at = {(int(i), int(j)): p for i, j, p in zip(moved.a, moved.b, moved.phi)}
        return np.array([at[(int(i), int(j))] for i, j in zip(contacts.a, contacts.b)])

    numeric = (Phi(1.0) - Phi(-1.0)) / (2 * eps)
    np.testing.assert_allclose(rate, numeric, rtol=1e-5, atol=1e-8)
    assert (
        abs(rate[box[0]]) > 1e-2 and np.abs(J[3 * box[0] : 3 * box[0] + 3, -len(v) :]).max() > 0.1
    )


def test_collisions_in_the_convex_problem_push_as_the_penalties_do():
    """A patch of the shell's bottom thrown at the torso box at 3 m/s (the skin softened to
    10 kPa so that it arrives): with the collisions as compliant constraints of the convex
    problem (2000 N/m a vertex, the geometry fixed at each step's start, the penalty law's C¹
    onset replaced by its tangent k (z - δ/2)), the skin follows the active set's implicit
    penalties to within δ/2 = 0.125 mm (the two laws' largest gap; measured 0.079 mm), the
    vertex enters the box and is pushed back out, and the momentum of skeleton and skin
    changes by the skeleton's weight alone (the collisions are internal: 1e-13 N s measured)."""
    runs = {}
    for name, extra in [
        ("penalties", {}),
        ("convex", {"contact": "convex", "convex_collisions": True}),
    ]:
        stepper, plant, instance, top, k = _ShellStepper(youngs_scale=0.01, **extra)
        rest = stepper.fem.RestPositions().reshape(-1, 3)
        state = stepper.DefaultState()
        shape = np.exp(-((np.linalg.norm(rest - rest[k], axis=1) / 0.008) ** 2))
        state.w.reshape(-1, 3)[:, 2] -= 3.0 * shape
        context = plant.CreateDefaultContext()

        def Momentum(state, plant=plant, context=context, stepper=stepper):
            plant.SetPositions(context, state.q)
            plant.SetVelocities(context, state.v)
            p = plant.CalcSpatialMomentumInWorldAboutPoint(context, np.zeros(3)).translational()
            return p + (stepper.mass.reshape(-1, 3) * state.w.reshape(-1, 3)).sum(0)

        p0 = Momentum(state)
        path, depth = [], []
        for i in range(8):
            state, _ = stepper.Step(state, time_s=0.002 * i)
            path.append(state.x.copy())
            depth.append(top[2] - state.x.reshape(-1, 3)[k, 2])
        runs[name] = np.array(path), np.array(depth)
        mass = sum(plant.get_body(b).default_mass() for b in plant.GetBodyIndices(instance))
        gravity = plant.gravity_field().gravity_vector()
        np.testing.assert_allclose(Momentum(state) - p0, mass * gravity * 0.016, atol=1e-9)
    (reference, reference_depth), (path, depth) = runs["penalties"], runs["convex"]
    assert reference_depth.max() > 2e-4 and depth.max() > 2e-4  # in the box (past the onset)
    assert depth[-1] < -5e-4  # and out again
    assert np.abs(path - reference).max() < 0.5 * 2.5e-4


@pytest.mark.parametrize("points", ["vertices", "dense", "sparse"])
def test_newtons_direction_by_woodbury_equals_the_hessians_cholesky(points):
    """ContactProblem with the compliance W = A⁻¹ given: Newton's direction by Woodbury's
    identity on the points in contact against the Cholesky solve of the explicit Hessian A +
    Jᵀ G J (scipy), at iterates with sticking, sliding and separated points; the whole solve
    the same to round-off."""
    rng = np.random.default_rng(1)
    P = 12
    d = 3 * P if points == "vertices" else 48
    B = rng.normal(size=(d, d))
    A = B @ B.T + d * np.eye(d)
    J = None
    if points != "vertices":
        J = rng.normal(size=(3 * P, d)) * (rng.random((3 * P, d)) < 0.3)
        J = sp.csr_matrix(J) if points == "sparse" else J
    R = np.abs(rng.normal(size=(P, 1))) * [1e-3, 1e-3, 2e-2] + 1e-3
    v_hat = np.zeros((P, 3))
    v_star = rng.normal(size=d) * 0.05
    mu = np.full(P, 0.8)
    reference = ContactProblem(A, v_star, R, v_hat, mu, J)
    woodbury = ContactProblem(A, v_star, R, v_hat, mu, J, np.linalg.inv(A))
    modes, woodburys = set(), 0
    for _ in range(5):
        v = rng.normal(size=d) * 0.05
        gamma, G = reference.Impulses(v, hessian=True)
        modes |= {int(np.count_nonzero(np.abs(g) > 0)) for g in gamma}
        woodburys += 3 * np.count_nonzero(np.abs(G).sum(axis=(1, 2)) > 0) < d
        g = A @ (v - v_star) - reference._Generalized(gamma.ravel())
        expected = -sla.solve(reference._Hessian(G), g, assume_a="pos")
        np.testing.assert_allclose(woodbury._Direction(G, g), expected, rtol=1e-10, atol=1e-13)
    assert 0 in modes and 3 in modes  # separated and sliding or sticking points
    assert woodburys >= 2  # fewer rows in contact than unknowns: Woodbury's identity taken
    np.testing.assert_allclose(woodbury.Solve()[0], reference.Solve()[0], rtol=0, atol=1e-12)


def test_the_growing_problem_is_the_whole_problems_solution():
    """_SolveGrowing (the collisions' problem: solved on the points near contact in the unknowns
    they move, W's block there alone, grown by every other point its solution pushes) against
    the whole problem solved at once (ContactProblem over every point, A = W⁻¹): the same
    impulses, with points that only the growth finds (far at the start, pushed by the others'
    impulses) and per-point friction (0 for the collisions)."""
    from drakebots.skinned.convex_contact import _SolveGrowing

    rng = np.random.default_rng(0)
    d, P, h = 24, 10, 0.005
    B = rng.normal(size=(d, d))
    W = np.linalg.inv(B @ B.T + d * np.eye(d))
    J = np.zeros((3 * P, d))
    for p in range(P):
        columns = rng.choice(d, size=3 if p % 3 else 6, replace=False)
        J[3 * p : 3 * p + 3, columns] = rng.normal(size=(3, len(columns)))
    xi_star = rng.normal(size=d) * 0.05
    R = np.abs(rng.normal(size=(P, 1))) * [1e-3, 1e-3, 2e-2] + 1e-3
    mu = np.where(np.arange(P) < 6, 0.8, 0.0)
    phi = np.where(np.arange(P) < 4, -1e-4, 2e-4)  # four touching, six 0.2 mm away
    v_hat = np.zeros((P, 3))
    v_hat[:, 2] = -phi / h
    whole = ContactProblem(np.linalg.inv(W), xi_star, R, v_hat, mu, J)
    xi, gamma, _ = whole.Solve()
    near = np.minimum(phi, phi + h * (J[2::3] @ xi_star)) < 1e-4  # where _SolveGrowing starts
    assert np.any(~near & (np.abs(gamma).sum(1) > 0))  # a point only the growth finds

    def Block(S, held):
        return np.linalg.inv(W[np.ix_(S, S)]), W[np.ix_(S, S)]

    def Respond(S, Gamma_S):
        return W[:, S] @ Gamma_S, None

    Gamma, gamma_grown, _, _, xi_grown = _SolveGrowing(
        J, xi_star, None, R, v_hat, mu, phi, h, 1e-4, Block, Respond
    )
    np.testing.assert_allclose(gamma_grown, gamma, rtol=1e-6, atol=1e-9 * np.abs(gamma).max())
    np.testing.assert_allclose(
        Gamma, J.T @ gamma.ravel(), rtol=1e-6, atol=1e-9 * np.abs(gamma).max()
    )
    np.testing.assert_allclose(xi_grown, xi, rtol=1e-6, atol=1e-9)

    # Started from the points a first solution held (`grown`, the same step's next iteration):
    # the same solution from one problem, no growth.
    grown = np.zeros(P, dtype=bool)
    _SolveGrowing(J, xi_star, None, R, v_hat, mu, phi, h, 1e-4, Block, Respond, grown=grown)
    assert np.all(grown[np.abs(gamma).sum(1) > 0])
    blocks = []
    _, again, _, _, _ = _SolveGrowing(
        J,
        xi_star,
        None,
        R,
        v_hat,
        mu,
        phi,
        h,
        1e-4,
        lambda S, held: blocks.append(S) or Block(S, held),
        Respond,
        grown=grown,
    )
    assert len(blocks) == 1
    np.testing.assert_allclose(again, gamma, rtol=1e-6, atol=1e-9 * np.abs(gamma).max())


def _EightSteps(scene, **config):
    """(the states (q, x) (8, ·), their StepInfos) of 8 convex steps: the dropped block's fall
    from 2 mm and impact (ground points), or the shell thrown at the torso box at 3 m/s (the
    collisions, the skeleton's velocities in the problem)."""
    if scene == "drop":
        scenery = Scene(kind="drop", mass_damping=0.0, stiffness_damping=0.0)
        stepper, _ = Stepper(scenery, contact="convex", **config)
        state = stepper.DefaultState()
        state.x[2::3] += 0.002
    else:
        stepper, plant, instance, top, k = _ShellStepper(
            youngs_scale=0.01, contact="convex", **config
        )
        rest = stepper.fem.RestPositions().reshape(-1, 3)
        state = stepper.DefaultState()
        shape = np.exp(-((np.linalg.norm(rest - rest[k], axis=1) / 0.008) ** 2))
        state.w.reshape(-1, 3)[:, 2] -= 3.0 * shape
    path, infos = [], []
    for i in range(8):
        state, info = stepper.Step(state, time_s=0.002 * i)
        path.append(np.concatenate([state.q, state.x]))
        infos.append(info)
    return np.array(path), infos


@pytest.mark.parametrize("scene", ["drop", "shell"])
def test_the_exact_hessian_at_every_refresh_changes_the_work_not_the_step(scene):
    """CouplingConfig.convex_exact_below: the convex step's refreshed factorisations of the
    exact Hessian at every refresh (inf, the default) against the projected one at every
    refresh (0), refreshed after every second iteration or an update that contracts by less
    than 0.05: the same states to 10 μm after 8 steps of the dropped block's impact and of the
    shell thrown at the torso box at 3 m/s (6 mm a step). Not to the position tolerance: SAP's
    regularisation comes from the factorised matrix's Delassus diagonal (R_n = β²/(4π²) w), so
    the two matrices pose slightly different contact laws; the shell's states differ by 1.9
    μm, and by the same with a position tolerance of 1e-9 m."""
    paths, exact = {}, {}
    for name, below in [("projected", 0.0), ("exact", np.inf)]:
        paths[name], infos = _EightSteps(
            scene, convex_exact_below=below, convex_contraction=0.05, convex_refresh_after=2
        )
        exact[name] = sum(info.exact_factorizations for info in infos)
    assert exact["exact"] > 0 and exact["projected"] == 0
    np.testing.assert_allclose(paths["exact"], paths["projected"], rtol=0, atol=1e-5)


@pytest.mark.skipif(not PardisoAvailable(), reason="MKL PARDISO not available")
@pytest.mark.parametrize("scene", ["drop", "shell"])
def test_one_solve_an_iteration_changes_the_work_not_the_step(scene, monkeypatch):
    """convex_contact._OneSolve (the free solve and the contact's response as one bordered
    solve) against the two solves it replaces (For refused): the same states to round-off
    after 8 steps, with the one solve taken in most iterations."""
    from drakebots.skinned import convex_contact

    made = []
    For = convex_contact._OneSolve.For

    def Counted(*args):
        one = For(*args)
        made.append(one is not None)
        return one

    monkeypatch.setattr(convex_contact._OneSolve, "For", staticmethod(Counted))
    one, _ = _EightSteps(scene, convex_schur_margin=5e-3)
    monkeypatch.setattr(convex_contact._OneSolve, "For", staticmethod(lambda *args: None))
    two, _ = _EightSteps(scene, convex_schur_margin=5e-3)
    assert np.mean(made) > 0.5
    np.testing.assert_allclose(one, two, rtol=0, atol=1e-12)


@pytest.mark.skipif(not PardisoAvailable(), reason="MKL PARDISO not available")
@pytest.mark.parametrize("scene", ["drop", "shell"])
def test_w_from_the_schur_block_changes_the_work_not_the_step(scene):
    """CouplingConfig.convex_schur_margin (W from PARDISO's factorisation bordered by the block
    of coordinates near contact) against the half-solves (margin 0, the reference): the same
    states to the solver's tolerance, with W's columns not solved one by one. The dropped
    block's fall and impact (ground points), and the shell thrown at the torso box (the
    collisions, the skeleton's velocities in the block)."""
    paths, columns = {}, {}
    # The block starts 2 mm up: a block wider than that holds its bottom from the first step (a
    # factorisation carried into a step whose new coordinates it lacks solves their columns).
    for name, margin in [("half-solves", 0.0), ("schur", 5e-3)]:
        paths[name], infos = _EightSteps(scene, convex_schur_margin=margin)
        columns[name] = sum(info.column_solves for info in infos)
    assert columns["half-solves"] > 0 and columns["schur"] < 0.2 * columns["half-solves"]
    np.testing.assert_allclose(paths["schur"], paths["half-solves"], rtol=0, atol=1e-8)
