"""The folding-region experiment's smooth skin against beam theory (paper section 7, Fig. 17).

The smooth limb skin between the glue on the lower leg and the glue on the foot is a short, thick
tube; the foot turns about the ankle axis. An independent reference for the angle the torque-
limited motor reaches: a Timoshenko beam whose bending stiffness E I(s) and shear stiffness
G A(s) / 2 (thin-walled tube) are integrated slice by slice from the same tetrahedral mesh,
clamped at the lowest lower-leg glue point and loaded at the highest foot glue point by a rigid
foot that pivots about the ankle. The coupled FEM (CoupledSkinSkeleton, Eq. 2) must agree with it
at small strain, where neo-Hookean reduces to linear elasticity with the same E and nu.
"""

import numpy as np
import pytest

from drakebots.robots import GetRobot
from drakebots.skinned.bend import BendRunConfig, LinearBendStiffness, RunBend
from drakebots.skinned.skeleton import _Build
from drakebots.skinned.skin import MakeSkin, SkinOptions

JOINT = "front_left_ankle"
YOUNGS = 9e7  # Pa, the paper's skin
POISSON = 0.46
TORQUE = 1.96  # N*m, MG995R


def TimoshenkoTubeAngle(skin, joint, pivot, top, torque, slices=24):
    """Rotation (rad) of a rigid foot pivoting at `pivot` that a torque produces against the
    skin tube, as a cantilever beam with end compliance C = integral of
    [[s^2, s], [s, 1]] / (E I) + [[1, 0], [0, 0]] / (G A / 2) over its length."""
    V, T = skin.mesh.vertices, skin.mesh.tets
    e = (top - pivot) / np.linalg.norm(top - pivot)  # the tube's axis, foot to knee
    a = np.asarray(joint.axis, float) - np.dot(joint.axis, e) * e
    a /= np.linalg.norm(a)
    n = np.cross(e, a)  # bending direction
    glue_s = (V[skin.glue_vertices] - pivot) @ e
    links = np.asarray(skin.glue_links)
    s_child = glue_s[links == joint.child].max()  # the loaded end: the foot's glue
    s_parent = glue_s[links == joint.parent].min()  # the clamp: the lower leg's glue
    assert s_parent > s_child
    centroid = V[T].mean(axis=1)
    volume = np.abs(skin.mesh.SignedVolumes())
    along = (centroid - pivot) @ e
    E, G = YOUNGS, YOUNGS / (2 * (1 + POISSON))
    C = np.zeros((2, 2))
    edges = np.linspace(s_child, s_parent, slices + 1)
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (along >= lo) & (along < hi)
        d = (centroid[inside] - pivot) @ n
        d -= np.average(d, weights=volume[inside])
        I = np.sum(volume[inside] * d**2) / (hi - lo)
        A = np.sum(volume[inside]) / (hi - lo)
        s = 0.5 * (lo + hi) - s_child
        C += np.array([[s * s, s], [s, 1.0]]) * (hi - lo) / (E * I)
        C[0, 0] += (hi - lo) / (G * A / 2)
    # The rigid foot turns by theta about the pivot, a distance -s_child from the loaded end
    # toward the clamp: the end moves by (-s_child) theta and turns by theta.
    c = np.array([-s_child, 1.0])
    return torque / (c @ np.linalg.solve(C, c))


@pytest.fixture(scope="module")
def smooth_bend():
    params = GetRobot("beetle").params
    built = _Build(params)
    joint = next(j for j in built.joints if j.name == JOINT)
    skin = MakeSkin(
        params,
        SkinOptions(
            links=(joint.parent, joint.child),
            voxel=0.006,
            glue_per_link=20,
            mass_density=1100.0,
            youngs_modulus=YOUNGS,
            poissons_ratio=POISSON,
        ),
    )
    # The motor saturates within 0.1 s and the skin holds it: 0.4 s of the 2 s ramp suffice.
    config = BendRunConfig(
        joint=JOINT,
        target=np.deg2rad(70.0),
        duration=0.4,
        hold=0.0,
        torque_limit=TORQUE,
        time_step=0.02,
    )
    result = RunBend(params, skin, config)
    return built, joint, skin, result


def test_smooth_skin_bend_matches_a_timoshenko_tube(smooth_bend):
    built, joint, skin, result = smooth_bend
    assert result.failure is None
    # The motor is at its limit and the joint has stopped: a static balance of torque and skin.
    assert abs(result.torque[-2]) == pytest.approx(TORQUE, rel=1e-6)
    assert abs(result.angle[-1] - result.angle[-3]) <= 1e-3 * abs(result.angle[-1])
    expected = TimoshenkoTubeAngle(
        skin,
        joint,
        pivot=built.links[joint.child].origin,
        top=built.links[joint.parent].origin,
        torque=TORQUE,
    )
    # Measured: FEM 0.145 deg, beam 0.151 deg. The beam idealises the glue points as rigid
    # sections; 25 % covers that, and a wrong modulus, mass matrix or coupling would not pass.
    assert abs(result.reached) == pytest.approx(expected, rel=0.25)
    assert np.max(result.glue_residual[:-1]) <= 1e-8


def test_linear_bend_stiffness_predicts_the_coupled_bend_at_small_strain(smooth_bend):
    """The static condensation of the rest stiffness (no dynamics, no Drake plant, no Newton)
    against the coupled simulation's steady state: at 0.15 deg the strains are ~1e-3, where the
    neo-Hookean skin is linear, so tau / k must give the angle the servo stops at (gravity on the
    skin and the foot, in the simulation only, is what the 1 % leaves room for)."""
    built, joint, skin, result = smooth_bend
    params = GetRobot("beetle").params
    k, mode = LinearBendStiffness(params, skin, JOINT)
    # Measured: tau / k = 0.14891 deg against the simulation's 0.14856 deg.
    assert abs(result.reached) == pytest.approx(TORQUE / k, rel=0.01)
    # The mode turns the foot's glue rigidly by one radian and leaves the lower leg's in place.
    links = np.asarray(skin.glue_links)
    parent = skin.glue_vertices[links == joint.parent]
    child = skin.glue_vertices[links == joint.child]
    assert np.all(mode[parent] == 0.0)
    arm = skin.mesh.vertices[child] - built.links[joint.child].origin
    assert np.allclose(mode[child], np.cross(joint.axis / np.linalg.norm(joint.axis), arm))
    # The free vertices are at their equilibrium: the condensed energy is the minimum over them.
    from drakebots.fem.materials import Material
    from drakebots.fem.model import FemModel

    K = FemModel(skin.mesh, Material(youngs_modulus=YOUNGS, poissons_ratio=POISSON)).RestStiffness()
    u = mode.ravel()
    assert u @ (K @ u) == pytest.approx(k, rel=1e-12)
    free = np.ones(skin.mesh.num_vertices, bool)
    free[skin.glue_vertices] = False
    rng = np.random.default_rng(5)
    for _ in range(3):
        d = np.zeros_like(mode)
        d[free] = 1e-3 * rng.standard_normal((free.sum(), 3))
        d = d.ravel()
        assert (u + d) @ (K @ (u + d)) > k
        assert abs(d @ (K @ u)) <= 1e-8 * np.sqrt((d @ (K @ d)) * k)
    with pytest.raises(KeyError):
        LinearBendStiffness(params, skin, "no_such_joint")


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_the_servo_settles_against_the_skin_as_two_springs_in_series(smooth_bend, sign):
    """The hold phase and the stall criterion. A target the skin cannot stop (3 deg: the servo's
    K_p = 30 N*m/rad against the skin's ~750 N*m/rad needs ~1.5 N*m, below the 1.96 N*m limit):
    after the ramp the joint settles where the servo's spring balances the skin's,
    K_p (q_d - q) = k q, so q = K_p q_d / (K_p + k), with k from the static condensation; the
    motor is below its limit and not stalled. The 0.4 s run to 70 deg, where the motor is at its
    limit, is stalled. Both directions: the servo's target ramps toward a negative target too
    (it once jumped there in the first step)."""
    built, joint, skin, stalled = smooth_bend
    assert stalled.stalled and abs(stalled.torque[-2]) == pytest.approx(TORQUE, rel=1e-9)
    params = GetRobot("beetle").params
    k, _ = LinearBendStiffness(params, skin, JOINT)
    target = sign * np.deg2rad(3.0)
    config = BendRunConfig(
        joint=JOINT, target=target, duration=0.1, hold=0.2, torque_limit=TORQUE, time_step=0.02
    )
    result = RunBend(params, skin, config)
    assert result.failure is None
    assert result.times[-1] == pytest.approx(0.3)
    np.testing.assert_allclose(
        result.target, target * np.minimum(result.times / 0.1, 1.0), rtol=1e-12, atol=1e-15
    )
    kp = params.motor.kp
    # Gravity on the skin and foot (in the simulation only) is what the 1 % leaves room for.
    assert result.reached == pytest.approx(kp * target / (kp + k), rel=0.01)
    assert abs(result.torque[-2]) < TORQUE
    assert result.servo_band == pytest.approx(TORQUE / kp)
    assert not result.stalled


@pytest.fixture(scope="module")
def beetle_skins(beetle_skin_coarse, beetle_skin_pieces_coarse):
    """The beetle's whole-body skin (16 mm voxels) and its skin in pieces (12 mm), 0.67 MPa."""
    return GetRobot("beetle").params, beetle_skin_coarse, beetle_skin_pieces_coarse


def test_a_hip_strains_the_whole_body_skin_by_the_multiplier_route_too(beetle_skins):
    """On the whole-body skin a hip turns the whole leg's glue (upper leg, lower leg, foot).
    LinearBendStiffness eliminates the glue; the same k must come from the other route, Eq. (2)'s
    KKT system with the joint as the only coordinate and a unit torque (multipliers on the glue,
    no inertia): k = 1 / dq."""
    from drakebots.fem.coupling import SolveKkt
    from drakebots.fem.materials import Material
    from drakebots.fem.model import FemModel

    params, skin, _ = beetle_skins
    built = _Build(params)
    joint = next(j for j in built.joints if j.name == "front_left_hip_yaw")
    k, mode = LinearBendStiffness(params, skin, joint.name)
    x0 = skin.mesh.vertices
    glue = np.asarray(skin.glue_vertices)
    moved = np.char.startswith(np.asarray(skin.glue_links), "front_left_")
    assert moved.sum() >= 3 and (~moved).sum() > 0
    a = np.asarray(joint.axis, float)
    G = np.zeros((len(glue), 3))
    G[moved] = np.cross(a, x0[glue[moved]] - built.links[joint.child].origin)
    K = FemModel(skin.mesh, Material(youngs_modulus=6.7e5, poissons_ratio=0.46)).RestStiffness()
    pinned = (3 * glue[:, None] + np.arange(3)).ravel()
    dq, du, _ = SolveKkt(
        np.zeros((1, 1)),
        K,
        G.reshape(-1, 1),
        pinned,
        np.ones(1),
        np.zeros(3 * len(x0)),
        np.zeros(len(pinned)),
    )
    assert k == pytest.approx(1.0 / dq[0], rel=1e-8)
    np.testing.assert_allclose(mode.ravel(), du / dq[0], atol=1e-9)
    assert np.all(mode[glue[~moved]] == 0.0)


def test_a_hip_turns_its_limb_piece_rigidly(beetle_skins):
    """On the skin in pieces (section 6.2) nothing joins the limb's piece to the torso's, so a
    hip turns that piece as a rigid body, which strains nothing: k is zero to round-off (against
    the whole-body skin's k) and the mode is the rigid rotation a x (x - p) on every vertex of
    the limb's piece and zero on the others."""
    params, whole, skin = beetle_skins
    built = _Build(params)
    joint = next(j for j in built.joints if j.name == "front_left_hip_yaw")
    k, mode = LinearBendStiffness(params, skin, joint.name)
    k_whole, _ = LinearBendStiffness(params, whole, joint.name)
    assert abs(k) <= 1e-9 * k_whole
    on_limb = (
        skin.weights[
            :, [i for i, n in enumerate(skin.skin_links) if n.startswith("front_left_")]
        ].sum(axis=1)
        > 0.5
    )
    assert on_limb.sum() > 500 and (~on_limb).sum() > 500
    rigid = np.cross(
        np.asarray(joint.axis, float), skin.mesh.vertices - built.links[joint.child].origin
    )
    np.testing.assert_allclose(mode[on_limb], rigid[on_limb], atol=1e-9)
    np.testing.assert_allclose(mode[~on_limb], 0.0, atol=1e-9)
