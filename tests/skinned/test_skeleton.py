"""The four skinned quad-robot skeletons against the paper's numbers (skinned-quad-robots.txt,
section 7 and Table 1), the generated files against the generator, and the joint conventions
against Drake's forward kinematics."""

import numpy as np
import pytest
from pydrake.multibody.plant import AddMultibodyPlantSceneGraph
from pydrake.systems.framework import DiagramBuilder

from drakebots.models import ModelsDirectory
from drakebots.robots import GetRobot
from drakebots.robots.base import DescribeRobot
from drakebots.skinned.skeleton import (
    BuiltinSkeletonNames,
    GeneratedSkeletonFiles,
    LoadSkeletonParams,
)

# Table 1 joints; masses: skeleton for beetle (2.8 kg) and cow (4.3 kg) as the paper states;
# monster and lizard: 72 % of the paper's total (11.87 kg, 10.8 kg), the documented share.
PAPER = {
    "beetle": dict(joints=12, mass=2.8, size=[0.4762, 0.3366, 0.3729], effort=1.96),
    "monster": dict(joints=16, mass=0.72 * 11.87, size=[0.485, 0.646, 0.27], effort=1.96),
    "lizard": dict(joints=17, mass=0.72 * 10.8, size=[1.25, 0.47, 0.46], effort=1.96),
    "cow": dict(joints=16, mass=4.3, size=[0.5571, 0.2286, 0.4772], effort=3.13),
}
# Skin allowance added to the skeleton's box to compare with the paper's overall size: 1.5 cm of
# skin and clearance on each side, 0.8 cm of sole under the feet and 1.5 cm over the top.
SKIN_ALLOWANCE = np.array([0.03, 0.03, 0.023])


def test_builtin_skeletons():
    assert BuiltinSkeletonNames() == sorted(PAPER)


@pytest.mark.parametrize("name", sorted(PAPER))
def test_counts_masses_and_size_match_the_paper(name):
    info = DescribeRobot(GetRobot(name))
    paper = PAPER[name]
    assert info["num_actuators"] == paper["joints"]
    assert info["num_positions"] == paper["joints"] + 7  # quaternion floating base
    assert info["num_velocities"] == paper["joints"] + 6
    assert info["total_mass"] == pytest.approx(paper["mass"], rel=0.05)
    assert {a["effort_limit"] for a in info["actuators"]} == {paper["effort"]}
    size = np.array(info["bounding_box"]["size"]) + SKIN_ALLOWANCE
    np.testing.assert_allclose(size, paper["size"], rtol=0.08)
    assert info["units"]["length"] == "m"


@pytest.mark.parametrize("name", sorted(PAPER))
def test_committed_files_match_the_generator(name):
    for relative, text in GeneratedSkeletonFiles(name).items():
        path = ModelsDirectory() / relative
        assert path.read_text() == text, (
            f"models/{relative} differs from the generator; run "
            f"python scripts/generate_skeletons.py {name}"
        )


def _Plant(name):
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlantSceneGraph(builder, time_step=0.0)
    robot = GetRobot(name)
    instance = robot.AddTo(plant)
    plant.Finalize()
    return plant, scene_graph, instance, plant.CreateDefaultContext()


def _SolePoints(plant, scene_graph, context, foot):
    """World positions of a foot's collision sphere bottoms (Drake kinematics)."""
    inspector = scene_graph.model_inspector()
    body = plant.GetBodyByName(foot)
    X_WB = plant.EvalBodyPoseInWorld(context, body)
    points = []
    for gid in plant.GetCollisionGeometriesForBody(body):
        p = X_WB @ inspector.GetPoseInFrame(gid).translation()
        points.append(p - [0.0, 0.0, inspector.GetShape(gid).radius()])
    return np.array(points)


@pytest.mark.parametrize("name", sorted(PAPER))
def test_home_pose_puts_every_sole_on_the_ground(name):
    plant, scene_graph, _, context = _Plant(name)
    for leg in ("front_left", "front_right", "rear_left", "rear_right"):
        soles = _SolePoints(plant, scene_graph, context, f"{leg}_foot")
        assert len(soles) == 4
        np.testing.assert_allclose(soles[:, 2], 0.0, atol=1e-8)


@pytest.mark.parametrize("name", sorted(PAPER))
def test_joint_sign_conventions(name):
    """On every leg: positive knee lifts the foot; positive hip yaw or hip pitch moves it
    forward; positive hip roll moves it outward."""
    plant, _, _, context = _Plant(name)
    for leg in ("front_left", "front_right", "rear_left", "rear_right"):
        side = 1.0 if leg.endswith("left") else -1.0
        foot = plant.GetBodyByName(f"{leg}_foot")
        p0 = plant.EvalBodyPoseInWorld(context, foot).translation().copy()

        def moved(joint, angle=0.1, foot=foot, p0=p0):
            q = plant.GetPositions(context)
            plant.GetJointByName(joint).set_angle(context, angle)
            p = plant.EvalBodyPoseInWorld(context, foot).translation().copy()
            plant.SetPositions(context, q)
            return p - p0

        assert moved(f"{leg}_knee")[2] > 0.0
        if plant.HasJointNamed(f"{leg}_hip_yaw"):
            assert moved(f"{leg}_hip_yaw")[0] > 0.0
        if plant.HasJointNamed(f"{leg}_hip_pitch"):
            assert moved(f"{leg}_hip_pitch")[0] > 0.0
        if plant.HasJointNamed(f"{leg}_hip_roll"):
            assert side * moved(f"{leg}_hip_roll")[1] > 0.0


@pytest.mark.parametrize("name", sorted(PAPER))
def test_link_inertias_are_physical(name):
    plant, _, instance, _ = _Plant(name)
    for index in plant.GetBodyIndices(instance):
        body = plant.get_body(index)
        spatial = body.default_spatial_inertia()
        assert body.default_mass() > 0.0
        assert spatial.IsPhysicallyValid(), body.name()


def test_params_load_errors_name_the_key(tmp_path):
    from drakebots.errors import InputError

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nlegs:\n  upper_lenght: 0.1\n")
    with pytest.raises(InputError, match="legs.upper_lenght"):
        LoadSkeletonParams(bad)
