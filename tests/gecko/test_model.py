"""The gecko's Drake model against the constant-curvature geometry it approximates.

References: the exact arc (the tangent integrated numerically, independent of the closed-form
chord), the chain's closed-form end error x / sin(x) - 1, and the generated files.
"""

import math

import numpy as np
import pytest
from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlant, MultibodyPlantConfig
from pydrake.systems.framework import DiagramBuilder

from drakebots.gecko.geometry import (
    FEET,
    FOOT_LIMB,
    ArcChord,
    ChainEndError,
    ChainMaxDeviation,
    ChainPoints,
    FootOrientationsEq2,
    GaitLawDeg,
    GeckoDimensions,
    GeckoShapeOf,
)
from drakebots.gecko.model import (
    AddGecko,
    AddSuctionAnchors,
    FootBodyName,
    GeckoParams,
    LimbAngleSelector,
    LimbJoints,
    ModelPath,
    PlanarPoseOf,
    SceneText,
    SdfText,
    SetGeckoPose,
)


def test_generated_files_are_up_to_date():
    folder = ModelPath().parent
    assert (folder / "gecko.sdf").read_text() == SdfText(), "run scripts/generate_gecko.py"
    assert (folder / "scene.dmd.yaml").read_text() == SceneText(), "run scripts/generate_gecko.py"


@pytest.mark.parametrize("bend", [0.0, 1e-7, 0.4, -1.3, 2.7])
def test_arc_chord_matches_the_integrated_tangent(bend):
    """The closed-form chord of a constant-curvature arc against a fine midpoint integration of
    its unit tangent (an independent quadrature)."""
    length, start = 0.091, 0.3
    count = 20000
    s = (np.arange(count) + 0.5) / count
    theta = start + bend * s
    integrated = length / count * np.array([np.cos(theta).sum(), np.sin(theta).sum()])
    np.testing.assert_allclose(ArcChord(length, start, bend), integrated, atol=1e-9)


@pytest.mark.parametrize("segments", [2, 3, 5, 8])
@pytest.mark.parametrize("bend", [0.5, 1.6, 2.75])
def test_chain_end_error_closed_form(segments, bend):
    """The segment chain's end lies on the arc's chord, longer by x / sin(x) (x = bend / 2N)."""
    length = 0.091
    chain_end = ChainPoints(np.zeros(2), 0.0, length, bend, segments)[-1]
    arc_end = ArcChord(length, 0.0, bend)
    error = np.linalg.norm(chain_end - arc_end)
    assert error == pytest.approx(float(ChainEndError(length, bend, segments)), rel=1e-9)
    # Same direction as the chord: the error is purely along it.
    cross = chain_end[0] * arc_end[1] - chain_end[1] * arc_end[0]
    assert abs(cross) < 1e-12
    # It shrinks like 1/N^2 and, for the model's N = 5, stays under 1 mm at 160 degrees.
    if segments == 5:
        assert ChainEndError(length, math.radians(160), 5) < 1e-3
        assert ChainMaxDeviation(length, math.radians(160), 5) < 1.5e-3


def _Plant(time_step=0.0):
    plant = MultibodyPlant(time_step)
    instance = AddGecko(plant)
    plant.Finalize()
    return plant, instance


def _ChainFoot(pose, alpha, foot, params):
    """A foot of the segment-chain model composed by hand: the torso's middle segment centred on
    the midpoint, N // 2 full segments to each node (midpoint rule), then the leg's chain."""
    from drakebots.gecko.geometry import LEG_BEND_SIGN, LEG_NODE, LegBaseTangent

    x, y, eps = pose
    nt = params.torso_segments
    st = params.dimensions.torso_length / nt
    sign = 1.0 if LEG_NODE[foot] == "front" else -1.0
    node = np.array([x, y]) + sign * 0.5 * st * np.array([math.cos(eps), math.sin(eps)])
    for k in range(1, nt // 2 + 1):
        heading = eps - sign * k * alpha[2] / nt
        node = node + sign * st * np.array([math.cos(heading), math.sin(heading)])
    i = FOOT_LIMB[foot]
    base = LegBaseTangent(foot, eps, alpha[2])
    leg = params.dimensions.leg_length
    return ChainPoints(node, base, leg, LEG_BEND_SIGN[foot] * alpha[i], params.leg_segments)[-1]


@pytest.mark.parametrize("q", [(90, 0.0), (-90, 0.0), (80, -0.5), (-70, 0.3), (50, 0.5)])
def test_drake_chain_matches_the_constant_curvature_model(q):
    """Feet of the Drake model (its forward kinematics) equal the hand-composed segment chains
    exactly, have the arcs' orientations exactly, and lie within 1.5 mm of the arcs' feet."""
    plant, instance = _Plant()
    context = plant.CreateDefaultContext()
    params = GeckoParams()
    alpha = np.radians(GaitLawDeg(*q))
    pose = (0.12, -0.3, 0.8)
    SetGeckoPose(plant, context, instance, alpha=alpha, pose=pose)
    shape = GeckoShapeOf(pose, alpha, params.dimensions.lengths())
    for j, foot in enumerate(FEET):
        X = plant.EvalBodyPoseInWorld(context, plant.GetBodyByName(FootBodyName(foot), instance))
        x, y, yaw = PlanarPoseOf(X)
        np.testing.assert_allclose([x, y], _ChainFoot(pose, alpha, foot, params), atol=1e-12)
        wrapped = (yaw - shape.foot_tangent[j] + math.pi) % (2 * math.pi) - math.pi
        assert abs(wrapped) < 1e-9
        assert np.hypot(x - shape.feet[j][0], y - shape.feet[j][1]) < 1.5e-3
    # Eq. 2 of the paper gives the same foot orientations as the arcs.
    wrapped = (shape.phi - FootOrientationsEq2(pose[2], alpha) + math.pi) % (2 * math.pi) - math.pi
    np.testing.assert_allclose(wrapped, 0.0, atol=1e-12)
    # The limb-angle selector reads the angles back.
    S = LimbAngleSelector(plant, instance, params)
    np.testing.assert_allclose(S @ plant.GetPositions(context, instance), alpha, atol=1e-12)


def test_couplers_make_each_limb_bend_equally():
    """A free limb under a bending moment in SAP: every joint of the chain stays at its share
    (the drake:mimic coupler constraints), so the limb stays a constant-curvature arc."""
    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(
        MultibodyPlantConfig(time_step=2e-3, discrete_contact_approximation="lagged"), builder
    )
    instance = AddGecko(plant)
    plant.Finalize()
    # N joints coupled to each limb's master (5 x 5) and the torso's hind stretch to its front one.
    assert plant.num_constraints() == 5 * 5 + 1
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.primitives import ConstantVectorSource

    # Moments on every limb (no gravity or ground here: only the chain and its couplers).
    source = builder.AddSystem(ConstantVectorSource(np.array([0.02, -0.01, 0.03, 0.01, 0.02])))
    builder.Connect(source.get_output_port(), plant.get_actuation_input_port(instance))
    diagram = builder.Build()
    simulator = Simulator(diagram)
    simulator.AdvanceTo(0.3)
    context = plant.GetMyContextFromRoot(simulator.get_context())
    params = GeckoParams()
    S = LimbAngleSelector(plant, instance, params)
    alpha = S @ plant.GetPositions(context, instance)
    for limb_index, (limb, joints) in enumerate(LimbJoints(params).items()):
        for name, multiplier in joints:
            angle = plant.GetJointByName(name, instance).get_angle(context)
            assert angle == pytest.approx(multiplier * alpha[limb_index], abs=2e-4), (limb, name)
    assert np.max(np.abs(alpha - np.radians(GaitLawDeg(90, 0)))) > 0.05, "the limbs did not bend"


def test_suction_weld_holds_a_fixed_foot_and_releases_it():
    """Fixing a foot at run time (weld to an anchor placed under it) keeps it within 0.5 mm while
    the robot is pushed around; after release it moves freely."""
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.primitives import ConstantVectorSource

    from drakebots.gecko.model import SuctionFeet
    from drakebots.systems.ground import AddGround

    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(
        MultibodyPlantConfig(time_step=2e-3, discrete_contact_approximation="lagged"), builder
    )
    instance = AddGecko(plant)
    anchors = AddSuctionAnchors(plant, instance)
    AddGround(plant, mu_static=0.3, mu_dynamic=0.3)
    plant.Finalize()
    moments = np.array([0.03, 0.0, -0.03, 0.03, 0.0])
    source = builder.AddSystem(ConstantVectorSource(moments))
    builder.Connect(source.get_output_port(), plant.get_actuation_input_port(instance))
    simulator = Simulator(builder.Build())
    context = plant.GetMyMutableContextFromRoot(simulator.get_mutable_context())
    suction = SuctionFeet(plant, anchors)
    suction.Initialize(context, [True, False, False, True])
    feet = [plant.GetBodyByName(FootBodyName(f), instance) for f in FEET]

    def Positions():
        return np.array([plant.EvalBodyPoseInWorld(context, b).translation() for b in feet])

    before = Positions()
    simulator.AdvanceTo(0.6)
    during = Positions()
    moved = np.linalg.norm(during - before, axis=1)
    assert moved[0] < 5e-4 and moved[3] < 5e-4, moved
    assert moved[1] > 5e-3 or moved[2] > 5e-3, "the free feet did not move"
    suction.Apply(context, [False, False, False, True])
    simulator.AdvanceTo(1.2)
    after = Positions()
    assert np.linalg.norm(after[0] - during[0]) > 2e-3, "the released foot stayed put"
    assert np.linalg.norm(after[3] - before[3]) < 5e-4


def test_robot_description():
    from drakebots.robots import GetRobot
    from drakebots.robots.base import DescribeRobot

    robot = GetRobot("gecko")
    info = DescribeRobot(robot)
    assert info["family"] == "gecko"
    assert info["num_actuators"] == 5
    # models/gecko/README.md's parts list: legs 4 x 8 g, torso 12 g, connectors 2 x 3 g, feet
    # 4 x 4 g, stretch sliders 6 x 0.5 g (four legs, two torso halves): 69 g, summed by Drake.
    assert info["total_mass"] == pytest.approx(1e-3 * (4 * 8 + 12 + 2 * 3 + 4 * 4 + 6 * 0.5))
    # models/gecko/README.md: contact radius and nominal base height 5 mm (half the limbs'
    # 10 mm thickness); the paper's leg 9.1 cm and torso 10.3 cm (reference/gecko/README.md).
    assert info["nominal_base_height"] == pytest.approx(0.005)
    lengths = GeckoDimensions().lengths()
    assert info["limb_lengths"]["torso"] == pytest.approx(0.103)
    assert lengths[0] == pytest.approx(0.091)
