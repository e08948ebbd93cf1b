"""Robot files (issue 47): drakebots.robots.LoadRobot and GetRobot on a user's own robot.

The hopper of scripts/examples/hopper is checked against Drake parsing its URDF directly, its home
pose against the plant's kinematics, and its standing against Drake's simulator; every bad input
is an InputError naming the key and the file, with nothing written.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from pydrake.multibody.parsing import Parser
from pydrake.multibody.plant import (
    AddMultibodyPlantSceneGraph,
    MultibodyPlant,
)
from pydrake.multibody.tree import JointActuatorIndex, PdControllerGains
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder

from drakebots.errors import InputError
from drakebots.robots import GetRobot, LoadRobot
from drakebots.robots.robot_file import UserRobot

REPOSITORY = Path(__file__).resolve().parents[2]
HOPPER = REPOSITORY / "scripts" / "examples" / "hopper"
HOPPER_YAML = HOPPER / "hopper.yaml"
HOPPER_URDF = HOPPER / "hopper.urdf"
BEETLE_SKELETON = REPOSITORY / "drakebots" / "skinned" / "skeletons" / "beetle.yaml"


def HopperFile(tmp_path: Path, urdf_text: str | None = None, **changes) -> Path:
    """A copy of the hopper's robot file (and URDF) in tmp_path with `changes` to its keys
    (a value None removes the key)."""
    (tmp_path / "hopper.urdf").write_text(urdf_text or HOPPER_URDF.read_text())
    data = yaml.safe_load(HOPPER_YAML.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def Finalized(robot, time_step=0.0):
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlantSceneGraph(builder, time_step=time_step)
    instance = robot.AddTo(plant)
    plant.Finalize()
    return builder, plant, scene_graph, instance


def test_hopper_counts_match_drake_parsing_the_urdf():
    robot = LoadRobot(HOPPER_YAML)
    assert isinstance(robot, UserRobot) and robot.family == "user" and robot.name == "hopper"
    _, plant, _, instance = Finalized(robot)
    # Independently: Drake parses the URDF with its torso welded to the world, so the plant's
    # coordinates are the model's own joints; the planar base adds x, z and pitch.
    reference = MultibodyPlant(0.0)
    Parser(reference).AddModels(str(HOPPER_URDF))
    reference.WeldFrames(reference.world_frame(), reference.GetFrameByName("torso"))
    reference.Finalize()
    assert reference.num_positions() == 2 and reference.num_actuators() == 2
    assert plant.num_positions(instance) == reference.num_positions() + 3
    assert plant.num_velocities(instance) == reference.num_velocities() + 3
    assert plant.num_actuators(instance) == reference.num_actuators()
    assert plant.CalcTotalMass(plant.CreateDefaultContext(), [instance]) == pytest.approx(
        reference.CalcTotalMass(reference.CreateDefaultContext())
    )
    assert [c[0] for c in robot.contacts] == ["foot", "foot"]


def test_home_pose_puts_the_lowest_contact_on_the_ground():
    robot = LoadRobot(HOPPER_YAML)
    _, plant, scene_graph, instance = Finalized(robot)
    context = plant.CreateDefaultContext()
    assert plant.GetJointByName("hip").get_angle(context) == pytest.approx(0.3)
    assert plant.GetJointByName("knee").get_angle(context) == pytest.approx(-0.6)
    heights = [
        plant.CalcPointsPositions(
            context, plant.GetBodyByName(body).body_frame(), point, plant.world_frame()
        )[2, 0]
        for body, point in robot.contacts
    ]
    assert min(heights) == pytest.approx(0.0, abs=1e-12)
    # The URDF's foot is flat in this pose: toe and heel spheres both touch, and the base height
    # is hip offset + two 0.25 m links at 0.3 rad + the foot plate (geometry by hand).
    assert max(heights) == pytest.approx(0.0, abs=1e-12)
    assert robot.nominal_base_height == pytest.approx(0.05 + 0.5 * np.cos(0.3) + 0.02)
    torso = plant.EvalBodyPoseInWorld(context, plant.GetBodyByName("torso"))
    assert torso.translation()[2] == pytest.approx(robot.nominal_base_height)
    inspector = scene_graph.model_inspector()
    foot = plant.GetBodyByName("foot")
    X_WF = plant.EvalBodyPoseInWorld(context, foot)
    for geometry in plant.GetCollisionGeometriesForBody(foot):
        center = X_WF @ inspector.GetPoseInFrame(geometry).translation()
        assert center[2] - inspector.GetShape(geometry).radius() == pytest.approx(0.0, abs=1e-12)


def test_contacts_from_collision_are_the_foot_spheres(tmp_path):
    listed = LoadRobot(HOPPER_YAML)
    found = LoadRobot(HopperFile(tmp_path, contacts={"from_collision": True}))
    assert sorted((b, tuple(np.round(p, 12))) for b, p in found.contacts) == sorted(
        (b, tuple(p)) for b, p in listed.contacts
    )
    assert found.nominal_base_height == pytest.approx(listed.nominal_base_height)
    by_body = LoadRobot(HopperFile(tmp_path, contacts={"from_collision": True, "bodies": ["foot"]}))
    assert len(by_body.contacts) == 2


@pytest.mark.parametrize("base, extra", [("floating_rpy", 6), ("fixed", 0)])
def test_other_bases(tmp_path, base, extra):
    robot = LoadRobot(HopperFile(tmp_path, base=base))
    _, plant, _, instance = Finalized(robot)
    assert plant.num_velocities(instance) == 2 + extra
    if base == "floating_rpy":
        assert plant.num_positions(instance) == 8
        context = plant.CreateDefaultContext()
        z = plant.EvalBodyPoseInWorld(context, plant.GetBodyByName("torso")).translation()[2]
        assert z == pytest.approx(0.05 + 0.5 * np.cos(0.3) + 0.02)


def test_the_hopper_stands_in_drakes_simulator():
    """0.5 s on the ground (point contact, discrete plant), joints held by PD actuators."""
    robot = LoadRobot(HOPPER_YAML)
    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlantSceneGraph(builder, time_step=1e-3)
    instance = robot.AddTo(plant)
    from drakebots.systems.ground import AddGround

    AddGround(plant)
    for index in map(JointActuatorIndex, range(plant.num_actuators())):
        plant.get_mutable_joint_actuator(index).set_controller_gains(
            PdControllerGains(p=300.0, d=10.0)
        )
    plant.Finalize()
    diagram = builder.Build()
    simulator = Simulator(diagram)
    context = simulator.get_mutable_context()
    plant_context = plant.GetMyMutableContextFromRoot(context)
    q_home = plant.GetPositions(plant_context, instance)
    q_actuated = plant.get_actuation_input_port().size()
    desired = np.concatenate([[0.3, -0.6], np.zeros(q_actuated)])
    plant.get_desired_state_input_port(instance).FixValue(plant_context, desired)
    plant.get_actuation_input_port().FixValue(plant_context, np.zeros(q_actuated))
    simulator.AdvanceTo(0.5)
    q = plant.GetPositions(plant_context, instance)
    v = plant.GetVelocities(plant_context, instance)
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(v))
    x, z, pitch = q[:3]
    assert abs(x - q_home[0]) < 0.02
    assert abs(z - robot.nominal_base_height) < 0.005
    assert abs(pitch) < 0.05
    assert np.linalg.norm(v) < 0.02  # at rest
    # At rest the ground carries the weight: Drake's contact forces sum to m g, with m the
    # URDF's 4.0 + 0.8 + 0.5 + 0.15 kg (torso, thigh, shank, foot; summed by hand).
    contacts = plant.get_contact_results_output_port().Eval(plant_context)
    forces = [
        contacts.point_pair_contact_info(i).contact_force()
        for i in range(contacts.num_point_pair_contacts())
    ]
    assert len(forces) == 2
    assert abs(sum(f[2] for f in forces)) == pytest.approx(5.45 * 9.81, rel=0.01)
    # The PD servos hold the joints near their targets (hip 0.3, knee -0.6 rad).
    np.testing.assert_allclose(q[3:], [0.3, -0.6], atol=0.02)


def test_info_json_through_the_cli_reports_the_same_counts(capsys):
    from drakebots.cli import main

    assert main(["info", str(HOPPER_YAML), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["num_positions"], info["num_velocities"], info["num_actuators"]) == (5, 5, 2)
    assert info["family"] == "user" and info["base"] == "planar_xz"
    assert info["nominal_base_height"] == pytest.approx(0.05 + 0.5 * np.cos(0.3) + 0.02)
    assert info["total_mass"] == pytest.approx(5.45)


def test_get_robot_takes_names_and_files(monkeypatch):
    assert GetRobot("beetle").family == "skinned_quadruped"
    monkeypatch.chdir(HOPPER)
    assert GetRobot("hopper.yaml").name == "hopper"
    with pytest.raises(InputError, match="unknown robot 'hopperx'.*robot file"):
        GetRobot("hopperx")


WELDED_URDF = HOPPER_URDF.read_text().replace(
    '<link name="torso">',
    '<link name="world"/>\n  <joint name="mount" type="fixed"><parent link="world"/>'
    '<child link="torso"/></joint>\n  <link name="torso">',
)
NONPLANAR_URDF = HOPPER_URDF.read_text().replace(
    '<origin xyz="0 0 -0.25"/>\n    <axis xyz="0 1 0"/>',
    '<origin xyz="0 0 -0.25"/>\n    <axis xyz="1 0 0"/>',
)


@pytest.mark.parametrize(
    "changes, urdf, key, what",
    [
        ({"colour": "red"}, None, "colour", "unknown key"),
        ({"model": "nothere.urdf"}, None, "model", "file not found"),
        ({"contacts": [{"body": "hand", "point": [0, 0, 0]}]}, None, "contacts[0].body", "hand"),
        ({"contacts": [{"body": "foot", "point": [0, 0]}]}, None, "contacts[0].point", "three"),
        ({"base": "planar_xz"}, WELDED_URDF, "base", "cannot take a 'planar_xz' base"),
        ({"base": "planar_xz"}, NONPLANAR_URDF, "base", "out of the x-z plane"),
        ({"base": "hovering"}, None, "base", "unknown base"),
        ({"units": "furlongs"}, None, "units", "unknown units"),
        ({"contacts": []}, None, "contacts", "needs contacts"),
        ({"contacts": None}, None, "contacts", "needs contacts"),
        ({"contacts": {"from_collision": True, "feet": 1}}, None, "contacts.feet", "unknown key"),
        ({"home": {"ankle": 0.1}}, None, "home.ankle", "no joint 'ankle'"),
        ({"kind": "octopus"}, None, "kind", "unknown kind"),
    ],
)
def test_bad_robot_files_name_the_key_and_the_file(tmp_path, changes, urdf, key, what):
    path = HopperFile(tmp_path, urdf, **changes)
    before = sorted(tmp_path.iterdir())
    with pytest.raises(InputError) as error:
        LoadRobot(path)
    message = str(error.value)
    assert str(path) in message and f"'{key}'" in message and what in message, message
    assert sorted(tmp_path.iterdir()) == before


def test_bad_robot_file_is_exit_2_through_the_cli(tmp_path, capsys):
    from drakebots.cli import main

    path = HopperFile(tmp_path, units="furlongs")
    assert main(["info", str(path)]) == 2
    assert "units" in capsys.readouterr().err


def SkinnedFile(tmp_path: Path, **leg_changes) -> Path:
    skeleton = yaml.safe_load(BEETLE_SKELETON.read_text())
    skeleton["legs"].update(leg_changes)
    (tmp_path / "mybug_skeleton.yaml").write_text(yaml.safe_dump(skeleton))
    path = tmp_path / "mybug.yaml"
    path.write_text(
        "name: mybug\nkind: skinned_quadruped\nskeleton: mybug_skeleton.yaml\n"
        "description: a beetle with longer shins\n"
    )
    return path


def KneeToAnkle(robot) -> tuple[float, float]:
    """(knee-to-ankle distance of the front-left leg, total mass), from the plant."""
    _, plant, _, instance = Finalized(robot)
    context = plant.CreateDefaultContext()
    knee = plant.GetJointByName("front_left_knee").frame_on_child().CalcPoseInWorld(context)
    ankle = plant.GetJointByName("front_left_ankle").frame_on_child().CalcPoseInWorld(context)
    distance = np.linalg.norm(knee.translation() - ankle.translation())
    return float(distance), float(plant.CalcTotalMass(context, [instance]))


def test_a_skinned_robot_file_builds_its_own_skeleton(tmp_path):
    beetle = GetRobot("beetle")
    lower = beetle.params.legs.lower_length + 0.035
    path = SkinnedFile(tmp_path, lower_length=lower)
    robot = LoadRobot(path)
    assert type(robot) is type(beetle) and robot.family == "skinned_quadruped"
    assert robot.name == "mybug"
    sdf = Path(robot.model_file)  # generated into drakebots' cache, never beside the file
    assert sdf.name == "mybug.sdf" and sdf.is_file() and sdf.parent != tmp_path
    assert not (tmp_path / "mybug.sdf").exists()
    assert "mybug_skeleton.yaml" in sdf.read_text()
    assert not (REPOSITORY / "models" / "mybug").exists()
    mine, mine_mass = KneeToAnkle(robot)
    theirs, their_mass = KneeToAnkle(beetle)
    assert mine == pytest.approx(lower) and theirs == pytest.approx(lower - 0.035)
    # The torso takes whatever the skeleton mass leaves, so the total is the same 2.8 kg.
    assert mine_mass == pytest.approx(their_mass) == pytest.approx(2.8)
    tibia_splay = beetle.params.legs.tibia_splay
    assert robot.nominal_base_height - beetle.nominal_base_height == pytest.approx(
        0.035 * np.cos(tibia_splay)
    )


def test_a_skeleton_whose_legs_cannot_reach_the_ground(tmp_path):
    path = SkinnedFile(tmp_path, lower_length=0.02)
    with pytest.raises(InputError) as error:
        LoadRobot(path)
    message = str(error.value)
    assert "mybug_skeleton.yaml" in message and "'legs'" in message
    assert "cannot reach the ground" in message
    assert not (tmp_path / "mybug.sdf").exists()


@pytest.mark.parametrize("verb", [["skin"], ["design", "--motion", "single-foot-lift"]])
@pytest.mark.parametrize("case", ["short legs", "no skeleton file"])
def test_a_bad_skinned_robot_file_is_exit_2_through_skin_and_design(tmp_path, capsys, verb, case):
    """`drakebots skin/design ./mybug.yaml`: one line naming the key and the file, nothing
    written (no SDF beside the robot file, no results folder)."""
    from drakebots.cli import main

    path = SkinnedFile(tmp_path, lower_length=0.02)
    skeleton, key = tmp_path / "mybug_skeleton.yaml", "'legs'"
    if case == "no skeleton file":
        skeleton.unlink()
        key = "'skeleton'"
    before = sorted(tmp_path.iterdir())
    out = tmp_path / "out"
    assert main([verb[0], str(path), *verb[1:], "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and key in lines[0], lines
    assert str(path if case == "no skeleton file" else skeleton) in lines[0]
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    "text, key",
    [
        ("kind: skinned_quadruped\nskeleton: missing.yaml\n", "skeleton"),
        ("kind: skinned_quadruped\nskeleton: sk.yaml\nmodel: a.urdf\n", "model"),
        ("kind: skinned_quadruped\n", "skeleton"),
    ],
)
def test_bad_skinned_robot_files(tmp_path, text, key):
    shutil.copy(BEETLE_SKELETON, tmp_path / "sk.yaml")
    path = tmp_path / "bug.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        LoadRobot(path)
    assert str(path) in str(error.value) and f"'{key}'" in str(error.value), str(error.value)


FREE_BODY_MJCF = """<mujoco model="pendulum_on_a_free_body">
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="box" size="0.1 0.1 0.1" mass="1"/>
      <body name="leg" pos="0 0 -0.1">
        <joint name="hip" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.2"/>
        <geom name="foot" type="sphere" pos="0 0 -0.3" size="0.03" mass="0.05"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="hip" gear="1"/></actuator>
</mujoco>
"""


def test_a_quaternion_floating_joint_in_the_model_is_replaced_by_the_base(tmp_path):
    """MuJoCo's <freejoint> parses to a QuaternionFloatingJoint; the planar base replaces it."""
    (tmp_path / "free.xml").write_text(FREE_BODY_MJCF)
    path = tmp_path / "free.yaml"
    path.write_text("model: free.xml\nbase: planar_xz\ncontacts: {from_collision: true}\n")
    robot = LoadRobot(path)
    _, plant, _, instance = Finalized(robot)
    types = {plant.get_joint(j).type_name() for j in plant.GetJointIndices(instance)}
    assert "quaternion_floating" not in types
    assert plant.num_positions(instance) == 3 + 1
    # The foot sphere (radius 0.03, 0.4 m below the torso's centre) is the contact.
    assert robot.contacts[0][0] == "leg"
    assert robot.nominal_base_height == pytest.approx(0.1 + 0.3 + 0.03)
