"""Published robot models load as they are (issues 67, 68): example-robot-data's legged robots
through scripts/examples/published/, package:// resolution in its documented order, meshes
converted into the cache (never beside the model), contacts from every collision shape, the
robot-file keys actuators / effort_limit(s) / joint_limits, and the model checks.

References are independent of the code under test: the URDF's revolute joints counted with
ElementTree, trimesh's own reading of a source mesh and Drake's reading of the converted one,
analytic and densely sampled lowest points, file hashes before and after.
"""

import hashlib
import math
import os
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
import trimesh
from pydrake.geometry import Box, Capsule, Cylinder, Ellipsoid, Mesh, Sphere
from pydrake.math import RigidTransform, RollPitchYaw

from drakebots.cli import main
from drakebots.errors import InputError
from drakebots.results import ToJson
from drakebots.robots import LoadRobot
from drakebots.robots.base import DescribeRobot
from drakebots.robots.published import CmeelPrefix, ConvertMesh, PackageResolver
from drakebots.robots.robot_file import LowestPoint

REPOSITORY = Path(__file__).resolve().parents[2]
PUBLISHED = REPOSITORY / "scripts" / "examples" / "published"
ERD = CmeelPrefix() / "share" / "example-robot-data"
ROBOTS = ERD / "robots"
# robot file -> (URDF in example-robot-data, its description folder).
MODELS = {
    "solo12": "solo_description/robots/solo12.urdf",
    "go1": "go1_description/urdf/go1.urdf",
    "go2": "go2_description/urdf/go2.urdf",
    "a1": "a1_description/urdf/a1.urdf",
    "anymal_b": "anymal_b_simple_description/robots/anymal.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
    "laikago": "laikago_description/urdf/laikago.urdf",
    "b1": "b1_description/urdf/b1.urdf",
    "bolt": "bolt_description/robots/bolt.urdf",
}
# Robots whose meshes convert in a few seconds (the rest: Go1's and B1's 20-30 MB DAE bodies,
# Go2's and ANYmal B's DAE take 5-20 s on a shared core) run in the default suite.
CHEAP = ("solo12", "hyq", "laikago", "bolt", "anymal_c")

pytestmark = pytest.mark.skipif(not ROBOTS.is_dir(), reason="example-robot-data not installed")


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """One converted-mesh cache (DRAKEBOTS_CACHE_DIR) for this module: each mesh converts once."""
    folder = tmp_path_factory.mktemp("drakebots_cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DRAKEBOTS_CACHE_DIR", str(folder))
        yield folder


def FolderHash(folder: Path) -> str:
    """sha256 over the relative names and bytes of every file under `folder`."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def RevoluteCount(urdf: Path) -> int:
    root = ElementTree.parse(urdf).getroot()
    return sum(j.get("type") in ("revolute", "continuous") for j in root.iter("joint"))


def _CheckInfo(name: str, capsys):
    urdf = ROBOTS / MODELS[name]
    description = ROBOTS / MODELS[name].split("/")[0]
    before = FolderHash(description)
    listing = sorted(description.rglob("*"))
    assert main(["info", str(PUBLISHED / f"{name}.yaml"), "--json"]) == 0
    import json

    info = json.loads(capsys.readouterr().out)
    expected = RevoluteCount(urdf)
    assert expected == (6 if name == "bolt" else 12)
    assert info["num_actuators"] == expected
    assert info["num_velocities"] == expected + 6
    assert info["nominal_base_height"] > 0.1
    assert all(0.05 < size < 2.0 for size in info["bounding_box"]["size"])
    # Nothing written beside the model, nothing changed in it.
    assert sorted(description.rglob("*")) == listing
    assert FolderHash(description) == before


@pytest.mark.parametrize("name", CHEAP)
def test_published_robot_info_counts_the_urdf_revolute_joints(name, capsys):
    _CheckInfo(name, capsys)


@pytest.mark.paper
@pytest.mark.parametrize("name", sorted(set(MODELS) - set(CHEAP)))
def test_published_robot_info_counts_the_urdf_revolute_joints_large_meshes(name, capsys):
    _CheckInfo(name, capsys)


def test_every_published_robot_has_a_short_robot_file():
    assert sorted(p.stem for p in PUBLISHED.glob("*.yaml")) == sorted(MODELS)
    for path in PUBLISHED.glob("*.yaml"):
        assert len(path.read_text().splitlines()) <= 10, path


# Package resolution order -------------------------------------------------------------------


def _Package(folder: Path, declared: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if declared:
        (folder / "package.xml").write_text(
            f'<?xml version="1.0"?><package format="3"><name>{declared}</name></package>'
        )
    return folder


def test_package_resolution_order(tmp_path, monkeypatch):
    for variable in ("ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH"):
        monkeypatch.delenv(variable, raising=False)
    # A model inside a folder named `pkg` inside a folder whose package.xml declares `pkg`.
    declared = _Package(tmp_path / "declared", "pkg")
    named = _Package(declared / "pkg")
    model = named / "robots" / "r.urdf"
    model.parent.mkdir()
    model.write_text("<robot name='r'/>")
    explicit = _Package(tmp_path / "explicit")

    def Find(**kwargs):
        return PackageResolver(source="r.yaml", **kwargs).Find("pkg")

    # 1. the robot file's `packages` key wins over everything.
    assert Find(packages={"pkg": explicit}, model_file=model) == explicit
    # 2. a package.xml declaring the name, above the model, before a folder of that name.
    assert Find(model_file=model) == declared
    # 3. a folder named like the package, above the model.
    (declared / "package.xml").unlink()
    assert Find(model_file=model) == named
    # 4. ROS_PACKAGE_PATH.
    ros = _Package(tmp_path / "ros" / "somewhere", "pkg")
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "ros"))
    assert Find(model_file=tmp_path / "x.urdf") == ros
    # 5. AMENT_PREFIX_PATH's share/NAME (after ROS_PACKAGE_PATH).
    monkeypatch.delenv("ROS_PACKAGE_PATH")
    ament = _Package(tmp_path / "prefix" / "share" / "pkg")
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path / 'nothing'}:{tmp_path / 'prefix'}")
    assert Find(model_file=tmp_path / "x.urdf") == ament
    # 6. the cmeel prefix, where pip installs example-robot-data.
    monkeypatch.delenv("AMENT_PREFIX_PATH")
    assert PackageResolver(source="r.yaml").Find("example-robot-data") == ERD
    assert Find(model_file=tmp_path / "x.urdf") is None


def test_package_not_found_names_the_robot_file_key_and_package(tmp_path, capsys):
    robot = tmp_path / "robot.yaml"
    robot.write_text("model: package://no_such_pkg/r.urdf\nbase: fixed\n")
    with pytest.raises(InputError) as error:
        LoadRobot(robot)
    message = str(error.value)
    assert "\n" not in message
    assert str(robot) in message and "'model'" in message and "no_such_pkg" in message
    assert main(["info", str(robot)]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["robot.yaml"]


# Meshes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mesh",
    [
        "solo_description/meshes/stl/solo12/solo12_hip_fe_fl.stl",
        "hyq_description/meshes/leg/lowerleg.dae",
    ],
)
def test_converted_mesh_matches_trimesh_reading_of_the_source(mesh):
    source = ROBOTS / mesh
    reference = trimesh.load(str(source), force="mesh", process=False)
    reference.merge_vertices(merge_tex=True, merge_norm=True)  # trimesh's own count, shared
    converted, _ = ConvertMesh(source, np.ones(3), model=Path("model.urdf"))
    assert converted.suffix == ".obj" and converted.parent.parent.name == "meshes"
    assert source.parent not in converted.parents
    again = trimesh.load(str(converted), force="mesh", process=False)
    assert len(again.vertices) == len(reference.vertices)
    assert len(again.faces) == len(reference.faces)
    np.testing.assert_allclose(again.bounds, reference.bounds, atol=1e-6)
    # Drake's own reader of the OBJ agrees on the extent (its convex hull's bounding box).
    hull = Mesh(str(converted)).GetConvexHull()
    vertices = np.array([hull.vertex(i) for i in range(hull.num_vertices())])
    np.testing.assert_allclose(
        [vertices.min(axis=0), vertices.max(axis=0)], reference.bounds, atol=1e-6
    )


def _LegUrdf(mesh: str = "", *, foot: str = '<sphere radius="0.02"/>', **overrides) -> str:
    """A one-leg robot: body, revolute hip, shin with a foot collision shape."""
    values = {
        "body_mass": "1.0",
        "body_inertia": 'ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"',
        "shin_inertial": '<inertial><mass value="0.2"/><inertia ixx="1e-4" ixy="0" ixz="0" '
        'iyy="1e-4" iyz="0" izz="1e-4"/></inertial>',
        "limit": '<limit lower="-1" upper="1" effort="3" velocity="10"/>',
        "extra": "",
    }
    values.update(overrides)
    visual = f'<visual><geometry><mesh filename="{mesh}"/></geometry></visual>' if mesh else ""
    return f"""<?xml version="1.0"?>
<robot name="leg">
  <link name="body">
    <inertial><mass value="{values["body_mass"]}"/><inertia {values["body_inertia"]}/></inertial>
    {visual}
  </link>
  <link name="shin">
    {values["shin_inertial"]}
    <collision><origin xyz="0 0 -0.2"/><geometry>{foot}</geometry></collision>
  </link>
  <joint name="hip" type="revolute">
    <parent link="body"/><child link="shin"/><axis xyz="0 1 0"/>{values["limit"]}
  </joint>
  {values["extra"]}
</robot>
"""


def _RobotFile(tmp_path: Path, urdf: str, extra: str = "base: fixed\n") -> Path:
    (tmp_path / "leg.urdf").write_text(urdf)
    path = tmp_path / "leg.yaml"
    path.write_text(f"model: leg.urdf\n{extra}")
    return path


def _ExpectBad(path: Path, *words: str):
    folder = path.parent
    listing = sorted(folder.iterdir())
    with pytest.raises(InputError) as error:
        LoadRobot(path)
    message = str(error.value)
    assert "\n" not in message, message
    for word in words:
        assert word in message, message
    assert main(["info", str(path)]) == 2
    assert sorted(folder.iterdir()) == listing


def test_processes_loading_one_robot_at_once_share_its_cache(tmp_path):
    """Three `drakebots info` runs of Solo-12 started together on an empty cache (a sweep's
    workers, or CI's suite beside its paper checks): each converts the same meshes into the same
    entries, and each must succeed and say the same, leaving whole meshes and no temporary file."""
    import subprocess
    import sys

    env = dict(os.environ, DRAKEBOTS_CACHE_DIR=str(tmp_path / "cache"))
    go = tmp_path / "go"
    script = (
        "import sys, time, pathlib\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
        "from drakebots.cli import main\n"
        f"sys.exit(main(['info', {str(PUBLISHED / 'solo12.yaml')!r}]))\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    go.touch()
    outputs = [p.communicate(timeout=240) for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0], [err[-2000:] for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1 and b"actuators         12" in outputs[0][0]
    meshes = sorted((tmp_path / "cache").rglob("*.obj"))
    assert meshes and not list((tmp_path / "cache").rglob("*.tmp"))
    for converted in meshes:  # each OBJ whole: trimesh reads as many faces as the source has
        source = ROBOTS / "solo_description/meshes/stl/solo12" / f"{converted.stem}.stl"
        if source.is_file():
            reference = trimesh.load(str(source), force="mesh", process=False)
            again = trimesh.load(str(converted), force="mesh", process=False)
            assert len(again.faces) == len(reference.faces), converted


def test_mesh_read_as_stl_converted_into_the_cache_and_the_user_folder_untouched(tmp_path, cache):
    box = trimesh.creation.box(extents=[0.3, 0.2, 0.1])
    box.export(tmp_path / "body.stl")
    path = _RobotFile(tmp_path, _LegUrdf("body.stl"))
    before = FolderHash(tmp_path)
    info = DescribeRobot(LoadRobot(path))
    # The body's visual box (0.3 x 0.2 x 0.1) is the whole visual geometry.
    np.testing.assert_allclose(info["bounding_box"]["size"], [0.3, 0.2, 0.1], atol=1e-9)
    assert FolderHash(tmp_path) == before
    assert list((cache / "meshes").glob("body-*/body.obj"))


def test_unreadable_and_absurd_meshes_are_refused(tmp_path):
    (tmp_path / "broken.stl").write_bytes(b"solid x\nthis is not an stl\n")
    path = _RobotFile(tmp_path, _LegUrdf("broken.stl"))
    _ExpectBad(path, "broken.stl", "leg.urdf", "cannot be read")
    path = _RobotFile(tmp_path, _LegUrdf("missing.stl"))
    _ExpectBad(path, "missing.stl", "leg.urdf", "not found")
    path = _RobotFile(tmp_path, _LegUrdf("package://nowhere_pkg/body.stl"))
    _ExpectBad(path, "leg.yaml", "'model'", "nowhere_pkg", "leg.urdf")
    # A millimetre mesh read as metres: 300 m across.
    trimesh.creation.box(extents=[300.0, 200.0, 100.0]).export(tmp_path / "huge.stl")
    path = _RobotFile(tmp_path, _LegUrdf("huge.stl"))
    _ExpectBad(path, "huge.stl", "leg.urdf", "absurd")
    # The same mesh at the scale the model gives it is fine.
    urdf = _LegUrdf("huge.stl").replace(
        'filename="huge.stl"', 'filename="huge.stl" scale="0.001 0.001 0.001"'
    )
    info = DescribeRobot(LoadRobot(_RobotFile(tmp_path, urdf)))
    np.testing.assert_allclose(info["bounding_box"]["size"], [0.3, 0.2, 0.1], atol=1e-9)


# Contacts from collision shapes ----------------------------------------------------------------


def _Sampled(shape, X_WG: RigidTransform, n: int = 400) -> np.ndarray:
    """The lowest of many points on the shape's surface, in the world (independent of
    LowestPoint)."""
    u = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    if isinstance(shape, Box):
        half = 0.5 * np.array([shape.width(), shape.depth(), shape.height()])
        points = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3) * half
    elif isinstance(shape, Cylinder):
        ring = np.column_stack([shape.radius() * np.cos(u), shape.radius() * np.sin(u), 0 * u])
        half = 0.5 * shape.length()
        points = np.vstack([ring + [0, 0, half], ring - [0, 0, half]])
    elif isinstance(shape, Capsule):
        v = np.linspace(-0.5 * math.pi, 0.5 * math.pi, n)
        uu, vv = np.meshgrid(u, v)
        r = shape.radius()
        sphere = np.column_stack(
            [
                (r * np.cos(vv) * np.cos(uu)).ravel(),
                (r * np.cos(vv) * np.sin(uu)).ravel(),
                (r * np.sin(vv)).ravel(),
            ]
        )
        half = 0.5 * shape.length()
        points = np.vstack([sphere + [0, 0, half], sphere - [0, 0, half]])
    else:
        raise AssertionError(shape)
    world = (X_WG.rotation().matrix() @ points.T).T + X_WG.translation()
    return world[np.argmin(world[:, 2])]


@pytest.mark.parametrize(
    "shape",
    [Box(0.3, 0.2, 0.1), Cylinder(0.05, 0.3), Capsule(0.04, 0.2)],
    ids=["box", "cylinder", "capsule"],
)
def test_lowest_point_of_tilted_shapes_against_sampling(shape):
    X_WG = RigidTransform(RollPitchYaw(0.3, -0.5, 0.2), [0.1, -0.2, 0.5])
    R = X_WG.rotation().matrix()
    point = X_WG.translation() + R @ LowestPoint(shape, R.T @ [0.0, 0.0, -1.0])
    sampled = _Sampled(shape, X_WG)
    # The box's lowest corner exactly; the rim and cap to the sampling's resolution.
    assert abs(point[2] - sampled[2]) < 1e-4
    tolerance = 1e-9 if isinstance(shape, Box) else 2e-3
    np.testing.assert_allclose(point, sampled, atol=tolerance)


def test_lowest_point_analytic_cases():
    down = np.array([0.0, 0.0, -1.0])
    np.testing.assert_allclose(LowestPoint(Sphere(0.03), down), [0, 0, -0.03])
    np.testing.assert_allclose(LowestPoint(Ellipsoid(0.1, 0.2, 0.3), down), [0, 0, -0.3])
    # Flat box and upright cylinder: the centre of the lowest face.
    np.testing.assert_allclose(LowestPoint(Box(0.3, 0.2, 0.1), down), [0, 0, -0.05])
    np.testing.assert_allclose(LowestPoint(Cylinder(0.05, 0.3), down), [0, 0, -0.15])
    # Capsule lying along x (its axis z turned to x): the cap's bottom under the middle.
    tilted = np.array([1.0, 0.0, 0.0])  # down expressed in a frame whose z is the world's -x
    np.testing.assert_allclose(LowestPoint(Capsule(0.04, 0.2), tilted), [0.04, 0, 0])


@pytest.mark.parametrize(
    "foot, lowest",
    [
        ('<sphere radius="0.02"/>', -0.22),
        ('<box size="0.04 0.04 0.06"/>', -0.23),
        ('<cylinder radius="0.02" length="0.05"/>', -0.225),
        ('<capsule radius="0.02" length="0.05"/>', -0.245),
        ('<mesh filename="foot.stl"/>', -0.235),
    ],
    ids=["sphere", "box", "cylinder", "capsule", "mesh"],
)
def test_contacts_from_collision_of_any_shape(tmp_path, foot, lowest):
    trimesh.creation.box(extents=[0.03, 0.03, 0.07]).export(tmp_path / "foot.stl")
    urdf = _LegUrdf(foot=foot)
    path = _RobotFile(
        tmp_path, urdf, "base: fixed\ncontacts: {from_collision: true, bodies: [shin]}\n"
    )
    robot = LoadRobot(path)
    ((body, point),) = robot.contacts
    assert body == "shin"
    np.testing.assert_allclose(point, [0.0, 0.0, lowest], atol=1e-9)


def test_contacts_from_collision_one_per_body(tmp_path):
    """A foot body with a sphere and a cylinder "adapter" above it (ANYmal C's feet) gives ONE
    contact: the sphere's bottom (0.2 + 0.02 below the shin), not the adapter's (0.15 + 0.025)."""
    foot = (
        '<sphere radius="0.02"/></geometry></collision>'
        '<collision><origin xyz="0 0 -0.15"/><geometry><cylinder radius="0.02" length="0.05"/>'
    )
    path = _RobotFile(
        tmp_path, _LegUrdf(foot=foot), "base: fixed\ncontacts: {from_collision: true}\n"
    )
    ((body, point),) = LoadRobot(path).contacts
    assert body == "shin"
    np.testing.assert_allclose(point, [0.0, 0.0, -0.22], atol=1e-9)


# Robot-file keys -------------------------------------------------------------------------------


def test_actuators_and_limits_keys(tmp_path):
    path = _RobotFile(
        tmp_path,
        _LegUrdf(),
        "base: fixed\nactuators: all\njoint_limits: {hip: [-0.5, 0.7]}\n",
    )
    info = DescribeRobot(LoadRobot(path))
    # The URDF's effort="3" (no transmission): Drake leaves it, the robot file's actuator has it.
    assert [(a["joint"], a["effort_limit"]) for a in info["actuators"]] == [("hip", 3.0)]
    assert info["joints"][0]["position_lower"] == [-0.5]
    assert info["joints"][0]["position_upper"] == [0.7]
    path.write_text("model: leg.urdf\nbase: fixed\nactuators: [hip]\neffort_limits: {hip: 2.7}\n")
    assert DescribeRobot(LoadRobot(path))["actuators"][0]["effort_limit"] == 2.7


def test_missing_effort_limit_is_infinite_everywhere(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from drakebots.visualization.plots import PlotTorquesAgainstLimits

    urdf = _LegUrdf(limit='<limit lower="-1" upper="1"/>')
    path = _RobotFile(tmp_path, urdf, "base: fixed\nactuators: all\n")
    info = DescribeRobot(LoadRobot(path))
    assert info["actuators"][0]["effort_limit"] == math.inf
    assert '"effort_limit": null' in ToJson(info)
    times = np.linspace(0.0, 1.0, 5)
    figure = PlotTorquesAgainstLimits(times, np.ones((5, 1)), np.array([math.inf]), ["hip"])
    figure.savefig(tmp_path / "torques.png")  # "Axis limits cannot be NaN or Inf" before
    assert (tmp_path / "torques.png").stat().st_size > 0


@pytest.mark.parametrize(
    "extra, words",
    [
        ("actuators: all\neffort_limits: {hip: -1}\n", ["effort_limits.hip", "positive"]),
        ("actuators: all\neffort_limits: {hip: 0}\n", ["effort_limits.hip", "positive"]),
        ("effort_limit: 0\n", ["effort_limit", "positive"]),
        ("joint_limits: {hip: [1, -1]}\n", ["joint_limits.hip", "less than"]),
        ("joint_limits: {hip: [0.5, 0.5]}\n", ["joint_limits.hip", "less than"]),
        ("joint_limits: {knee: [0, 1]}\n", ["joint_limits.knee", "no one-dof joint"]),
        ("actuators: [knee]\n", ["actuators[0]", "knee"]),
        ("actuators: some\n", ["actuators", "'all'"]),
        ("effort_limits: {hip: 2}\n", ["effort_limits.hip", "no actuator"]),
    ],
)
def test_bad_robot_file_keys(tmp_path, extra, words):
    _ExpectBad(_RobotFile(tmp_path, _LegUrdf(), "base: fixed\n" + extra), "leg.yaml", *words)


# Model checks (issue 68) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"body_mass": "-1"}, ["link 'body'", "mass -1"]),
        (
            {
                "shin_inertial": '<inertial><mass value="0.2"/><inertia ixx="1e-4" ixy="0" ixz="0" '
                'iyy="-1e-4" iyz="0" izz="1e-4"/></inertial>'
            },
            ["link 'shin'", "non-physical", "semi-definite"],
        ),
        (
            {
                "shin_inertial": '<inertial><mass value="0.2"/><inertia ixx="1e-4" ixy="0" ixz="0" '
                'iyy="1e-4" iyz="0" izz="3e-4"/></inertial>'
            },
            ["link 'shin'", "triangle inequality"],
        ),
        ({"shin_inertial": ""}, ["body 'shin'", "joint 'hip'", "zero mass"]),
        (
            {"limit": '<limit lower="1" upper="-1" effort="3" velocity="1"/>'},
            ["joint 'hip'", "inverted"],
        ),
        (
            {
                "extra": '<link name="other"/><joint name="loop" type="revolute">'
                '<parent link="body"/><child link="shin"/><axis xyz="0 1 0"/></joint>'
            },
            ["link 'shin'", "'hip'", "'loop'", "loop"],
        ),
    ],
    ids=["negative_mass", "not_psd", "triangle", "massless_moving", "inverted_limits", "loop"],
)
def test_bad_models_are_refused_in_one_line(tmp_path, overrides, words):
    _ExpectBad(_RobotFile(tmp_path, _LegUrdf(**overrides)), "leg.urdf", *words)


def test_massless_welded_links_are_accepted(tmp_path):
    extra = (
        '<link name="sensor"/><joint name="sensor_mount" type="fixed"><parent link="shin"/>'
        '<child link="sensor"/></joint>'
    )
    robot = LoadRobot(_RobotFile(tmp_path, _LegUrdf(extra=extra)))
    assert DescribeRobot(robot)["num_bodies"] == 3


# Standing (issue 67 item 5) --------------------------------------------------------------------


def SrdfBaseHeight(srdf: Path) -> float:
    """The root joint's z in the SRDF's "standing" group_state (the authors' standing height)."""
    root = ElementTree.parse(srdf).getroot()
    (state,) = [s for s in root.iter("group_state") if s.get("name") == "standing"]
    for joint in state.iter("joint"):
        values = joint.get("value").split()
        if len(values) == 7:
            return float(values[2])
    raise AssertionError(srdf)


def UrdfMass(urdf: Path) -> float:
    root = ElementTree.parse(urdf).getroot()
    return sum(float(m.get("value")) for m in root.iter("mass"))


def _Stand(name: str, duration: float = 2.0):
    from drakebots import Simulate, SimulateConfig

    result = Simulate(SimulateConfig(robot=str(PUBLISHED / f"{name}.yaml"), duration=duration))
    figures, log = result.figures, result.log
    assert result.success, result.reason
    assert "warning" not in figures
    home = figures["nominal_base_height"]
    # Within 10 % of home over the whole run, and carried by the ground: weight = URDF masses g.
    assert np.all(np.abs(log.base_height - home) <= 0.1 * home)
    weight = UrdfMass(ROBOTS / MODELS[name]) * 9.81
    assert figures["weight"] == pytest.approx(weight, rel=1e-9)
    assert figures["ground_force_end"] == pytest.approx(weight, rel=0.02)
    return figures, home


@pytest.mark.parametrize("name", ["solo12", "anymal_c"])
def test_published_quadrupeds_stand(name):
    _, home = _Stand(name)
    # The crouch comes from the package's SRDF: its settled height is within 5 % of the height
    # the SRDF's authors give the base (a different foot point, the same crouch).
    srdf = {
        "solo12": "solo_description/srdf/solo.srdf",
        "anymal_c": "anymal_c_simple_description/srdf/anymal.srdf",
    }[name]
    assert home == pytest.approx(SrdfBaseHeight(ROBOTS / srdf), rel=0.05)


@pytest.mark.paper
@pytest.mark.parametrize("name", ["go1", "go2", "a1", "anymal_b", "hyq", "laikago", "b1"])
def test_published_quadrupeds_stand_all(name):
    _Stand(name)


def test_a_free_robot_without_actuators_is_said_to_fall_limp(tmp_path):
    from drakebots import Simulate, SimulateConfig

    text = (PUBLISHED / "solo12.yaml").read_text()
    text = "\n".join(
        line for line in text.splitlines() if not line.startswith(("actuators", "effort_limit"))
    )
    path = tmp_path / "limp.yaml"
    path.write_text(text)
    result = Simulate(SimulateConfig(robot=str(path), duration=0.3))
    assert "no actuators" in result.figures["warning"]
    assert LoadRobot(path) is not None and not result.success


def test_collada_unit_is_applied(tmp_path):
    """A DAE in millimetres (<unit meter="0.001">) is the size ROS tools show: 0.3 x 0.2 x 0.1 m."""
    text = trimesh.exchange.dae.export_collada(trimesh.creation.box(extents=[300, 200, 100]))
    text = text.decode().replace("<up_axis>", '<unit name="millimeter" meter="0.001"/><up_axis>')
    (tmp_path / "body.dae").write_text(text)
    info = DescribeRobot(LoadRobot(_RobotFile(tmp_path, _LegUrdf("body.dae"))))
    np.testing.assert_allclose(info["bounding_box"]["size"], [0.3, 0.2, 0.1], atol=1e-9)


def test_packages_key_and_srdf_home(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    trimesh.creation.box(extents=[0.3, 0.2, 0.1]).export(package / "body.stl")
    (package / "leg.urdf").write_text(_LegUrdf("package://mine/body.stl"))
    (package / "leg.srdf").write_text(
        '<robot name="leg"><group_state name="standing" group="all">'
        '<joint name="root_joint" value="0 0 1 0 0 0 1"/><joint name="hip" value="0.4"/>'
        "</group_state></robot>"
    )
    path = tmp_path / "robot.yaml"
    path.write_text(
        "model: package://mine/leg.urdf\npackages: {mine: pkg}\nbase: fixed\n"
        "srdf: package://mine/leg.srdf\n"
    )
    robot = LoadRobot(path)
    assert robot.home == {"hip": 0.4}
    assert robot.packages == {"mine": str(package.resolve())}
    path.write_text(path.read_text() + "home: {hip: -0.2}\n")
    assert LoadRobot(path).home == {"hip": -0.2}
    path.write_text(path.read_text() + "srdf_state: sitting\n")
    _ExpectBad(path, "robot.yaml", "srdf_state", "sitting", "standing")
    path.write_text("model: package://mine/leg.urdf\npackages: {mine: nowhere}\nbase: fixed\n")
    _ExpectBad(path, "robot.yaml", "packages.mine", "not found")


def test_sdf_model_with_a_scaled_stl_mesh(tmp_path):
    trimesh.creation.box(extents=[300.0, 200.0, 100.0]).export(tmp_path / "body.stl")
    inertia = "<ixx>0.01</ixx><iyy>0.01</iyy><izz>0.01</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz>"
    (tmp_path / "box.sdf").write_text(
        f"""<?xml version="1.0"?>
<sdf version="1.9"><model name="box"><link name="body">
  <inertial><mass>1</mass><inertia>{inertia}</inertia></inertial>
  <visual name="v"><geometry><mesh><scale>0.001 0.001 0.001</scale>
    <uri>body.stl</uri></mesh></geometry></visual>
</link></model></sdf>
"""
    )
    path = tmp_path / "box.yaml"
    path.write_text("model: box.sdf\nbase: fixed\n")
    before = FolderHash(tmp_path)
    robot = LoadRobot(path)
    assert Path(robot.parse_file).parent.parent.name == "models"
    info = DescribeRobot(robot)
    np.testing.assert_allclose(info["bounding_box"]["size"], [0.3, 0.2, 0.1], atol=1e-9)
    assert FolderHash(tmp_path) == before
    # Unscaled, the same mesh is 300 m across: refused.
    (tmp_path / "box.sdf").write_text(
        (tmp_path / "box.sdf").read_text().replace("<scale>0.001 0.001 0.001</scale>", "")
    )
    _ExpectBad(path, "body.stl", "box.sdf", "absurd")
