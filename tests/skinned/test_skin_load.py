"""The space-time model's skin load from a generated FEM skin (section 5.4: "each link has
additional weights from its associated vertices").

Reference: the FEM model's own vertex masses (drakebots.fem.model.FemModel, the masses the
coupled dynamics integrate) summed as point masses, against what Drake's MultibodyPlant reports
for the skeleton with the load welded to its links, less the bare skeleton: the same mass,
centre of mass and rotational inertia at the home pose; and at a bent pose, the links carry
their skin along (the weights are exact for vertices on one link).
"""

import numpy as np
import pytest
from pydrake.multibody.tree import SpatialInertia

from drakebots.fem.materials import Material
from drakebots.fem.model import FemModel
from drakebots.skinned.skeleton_model import SkeletonModel, SkinLoad, SkinLoadFromSkin


@pytest.fixture(scope="module")
def beetle_skin(beetle_skin_pieces_coarse):
    return SkeletonModel("beetle", skin_load=SkinLoad()), beetle_skin_pieces_coarse


def _BodyInertia(model, q) -> SpatialInertia:
    """The whole robot's spatial inertia about the world origin, in world (Drake)."""
    plant, context = model.plant, model.plant.CreateDefaultContext()
    plant.SetPositions(context, q)
    bodies = [plant.get_body(i) for i in plant.GetBodyIndices(model.instance)]
    return plant.CalcSpatialInertia(context, plant.world_frame(), [b.index() for b in bodies])


def test_the_skin_load_is_the_fem_skins_mass_distribution(beetle_skin):
    bare, skin = beetle_skin
    load = SkinLoadFromSkin(skin, bare.params)
    loaded = SkeletonModel("beetle", skin_load=load)
    fem = FemModel(skin.mesh, Material(youngs_modulus=6.7e5, mass_density=skin.mass_density))
    m = fem.vertex_masses
    x = skin.mesh.vertices
    assert load.total == pytest.approx(m.sum(), rel=1e-12)
    assert load.total == pytest.approx(bare.params.skin_mass, rel=1e-9)
    whole, skeleton = _BodyInertia(loaded, loaded.q_home), _BodyInertia(bare, bare.q_home)
    assert whole.get_mass() - skeleton.get_mass() == pytest.approx(m.sum(), rel=1e-12)
    # First moment (mass x COM) and inertia about the world origin: skin = whole - skeleton.
    first = whole.get_mass() * whole.get_com() - skeleton.get_mass() * skeleton.get_com()
    # (the subtraction of two ~1 kg·m moments leaves ~1e-11 of round-off)
    np.testing.assert_allclose(first, m @ x, rtol=1e-9, atol=1e-9)
    inertia = (
        whole.CalcRotationalInertia().CopyToFullMatrix3()
        - skeleton.CalcRotationalInertia().CopyToFullMatrix3()
    )
    points = np.eye(3) * (m @ np.einsum("ij,ij->i", x, x)) - (x * m[:, None]).T @ x
    np.testing.assert_allclose(inertia, points, rtol=1e-9, atol=1e-9)


def test_the_skin_load_turns_with_its_links(beetle_skin):
    """A hip turned by 30 degrees carries its limb piece's mass (all of it on that leg's links)
    rigidly about the hip axis: the COM moves as the piece's vertex masses turned by hand."""
    bare, skin = beetle_skin
    loaded = SkeletonModel("beetle", skin_load=SkinLoadFromSkin(skin, bare.params))
    fem = FemModel(skin.mesh, Material(youngs_modulus=6.7e5, mass_density=skin.mass_density))
    m, x = fem.vertex_masses, skin.mesh.vertices
    joint = loaded.plant.GetJointByName("front_left_hip_yaw", loaded.instance)
    q = loaded.q_home.copy()
    angle = np.radians(30)
    q[joint.position_start()] = angle
    columns = [k for k, n in enumerate(skin.skin_links) if n.startswith("front_left_")]
    on_leg = skin.weights[:, columns].sum(axis=1) > 0.5
    assert on_leg.sum() > 500
    # The limb piece turned about the hip's axis through its origin (world = link frames at home).
    from drakebots.skinned.skeleton import _Build

    built = _Build(bare.params)
    hip = next(j for j in built.joints if j.name == "front_left_hip_yaw")
    a = np.asarray(hip.axis, float) / np.linalg.norm(hip.axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    R = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
    p = built.links[hip.child].origin
    turned = x.copy()
    turned[on_leg] = (x[on_leg] - p) @ R.T + p
    whole, skeleton = _BodyInertia(loaded, q), _BodyInertia(bare, q)
    first = whole.get_mass() * whole.get_com() - skeleton.get_mass() * skeleton.get_com()
    np.testing.assert_allclose(first, m @ turned, rtol=1e-9, atol=1e-9)
