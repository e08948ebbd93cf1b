"""The scripts under scripts/examples/ run, on their fast setting, and say what they claim.

Each example's `main(fast=True, out=...)` is imported and called (one is also run as a user runs
it, in a subprocess); the facts checked are independent of the example's own printout: the
voxel L's actuator stroke and the POM's agreement with the FEM, the skinned robot's page holding
its bodies and its ground force against m g from the URDF/SDF masses, the hopper's rest, the user
skeleton's lift against its motors' declared limit and its COP recomputed from its foot forces.
"""

import base64
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[1] / "scripts" / "examples"


def Example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_is_short_and_has_a_gallery_title():
    scripts = sorted(EXAMPLES.glob("*.py"))
    assert len(scripts) >= 3
    for script in scripts:
        lines = script.read_text().splitlines()
        assert len(lines) <= 60, f"{script.name}: {len(lines)} lines"
        assert lines[0] == '"""' and set(lines[2]) == {"="}, script.name


def test_voxel_l_shape(tmp_path):
    facts = Example("fast_voxel_l_shape").main(fast=True, out=str(tmp_path))
    assert facts["num_voxels"] == 12  # 4 x 4 minus the 2 x 2 corner
    for joints in ("pinned", "rigid"):
        # The clamped actuator's stroke is met: its nodes end 1 mm further apart along y.
        assert facts[joints]["stroke_m"] == pytest.approx(1e-3, abs=1e-12)
        # The plane of motion: the L's 12 voxels' in-plane nodes (4 per voxel, shared ones once).
        assert facts[joints]["moving_nodes"] == 32
    # Pinned joints are the POM's own idealisation: the same motion to 1e-6 of its size; the
    # paper's rigid joints bend the struts, which the POM neglects: within 15 % here.
    assert facts["pinned"]["pom_relative_error"] < 1e-6
    assert facts["rigid"]["pom_relative_error"] < 0.15
    assert (tmp_path / "l_shape.npy").is_file()


def test_skinned_robot_in_your_own_diagram(tmp_path):
    facts = Example("fast_skinned_diagram").main(fast=True, out=str(tmp_path))
    page = Path(facts["page"])
    assert page == tmp_path / "beetle.html" and page.is_file()
    html = page.read_text()
    assert html.lstrip().startswith("<!DOCTYPE html>")
    # Meshcat's recording is base64 msgpack inside the page: it names the beetle's bodies.
    blobs = b"".join(base64.b64decode(m) for m in re.findall(r"base64,([A-Za-z0-9+/=]+)", html))
    for body in (b"beetle/torso", b"beetle/front_left_foot", b"beetle/rear_right_foot"):
        assert body in blobs, body
    # The beetle's skeleton is 2.8 kg (models/beetle): standing, the ground carries 2.8 kg * g.
    assert facts["weight"] == pytest.approx(2.8 * 9.81)
    assert facts["ground_force"] == pytest.approx(2.8 * 9.81, rel=0.02)


def test_hopper_drop(tmp_path):
    facts = Example("fast_hopper_drop").main(fast=True, out=str(tmp_path))
    assert facts["success"]
    # hopper.urdf: torso 4.0 + thigh 0.8 + shank 0.5 + foot 0.15 kg.
    weight = 5.45 * 9.81
    assert facts["weight"] == pytest.approx(weight)
    assert facts["ground_force"] == pytest.approx(weight, rel=0.02)
    start, end = facts["base_height"]
    assert start == pytest.approx(facts["home_height"] + 0.03)
    assert end == pytest.approx(facts["home_height"], abs=5e-3)
    assert facts["speed_end"] < 1e-2
    for name in ("summary.json", "log.npz", "replay.html"):
        assert (Path(facts["folder"]) / name).is_file()


def PackageFiles() -> dict:
    """(size, mtime) of every file under the package and its models, bytecode aside."""
    import drakebots
    from drakebots.models import ModelsDirectory

    roots = (Path(drakebots.__file__).parent, ModelsDirectory())
    return {
        path: (path.stat().st_size, path.stat().st_mtime_ns)
        for root in roots
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def SkeletonPlant(sdf: str):
    """Drake's plant of the generated SDF (free torso) and its sole points: foot -> (4, 3) lowest
    points of the sole's collision spheres (sole_0..3) in the foot frame."""
    from pydrake.multibody.parsing import Parser
    from pydrake.multibody.plant import AddMultibodyPlantSceneGraph
    from pydrake.systems.framework import DiagramBuilder

    from drakebots.models import ConfigureParser

    plant, scene_graph = AddMultibodyPlantSceneGraph(DiagramBuilder(), 0.0)
    parser = Parser(plant)
    ConfigureParser(parser)
    parser.AddModels(sdf)
    plant.Finalize()
    inspector = scene_graph.model_inspector()
    soles = {}
    for leg in ("front_left", "front_right", "rear_left", "rear_right"):
        body = plant.GetBodyByName(f"{leg}_foot")
        spheres = sorted(plant.GetCollisionGeometriesForBody(body), key=inspector.GetName)
        soles[body.name()] = np.array(
            [
                inspector.GetPoseInFrame(g).translation() - [0, 0, inspector.GetShape(g).radius()]
                for g in spheres
            ]
        )
    return plant, soles


def test_your_own_skeleton_skinned_and_a_foot_lifted(tmp_path):
    from pydrake.math import RigidTransform, RollPitchYaw
    from scipy.spatial import ConvexHull

    before = PackageFiles()
    facts = Example("fast_my_skeleton_lift").main(fast=True, out=str(tmp_path))
    # The SDF went into drakebots' cache, not beside the user's robot file nor into the package.
    from drakebots.cache import CacheDirectory

    assert Path(facts["sdf"]).name == "mybug.sdf"
    assert CacheDirectory().resolve() in Path(facts["sdf"]).resolve().parents
    assert not (EXAMPLES / "mybug" / "mybug.sdf").exists()
    assert PackageFiles() == before
    for name in ("skin.vtk", "skin.json"):
        assert (Path(facts["skin_folder"]) / name).is_file()
    assert (Path(facts["folder"]) / "summary.json").is_file()
    assert facts["success"]
    result = facts["result"]
    # Every motor within the limit the skeleton file declares, at every frame (the torques
    # themselves); Drake reads the same limit on each of the SDF's 12 actuators.
    skeleton = yaml.safe_load((EXAMPLES / "mybug" / "mybug_skeleton.yaml").read_text())
    limit = skeleton["motor"]["effort_limit"]
    plant, soles = SkeletonPlant(facts["sdf"])
    actuators = plant.GetJointActuatorIndices()
    assert [plant.get_joint_actuator(i).effort_limit() for i in actuators] == [limit] * 12
    tau = result.tau
    assert tau.shape == (len(result.times) - 1, 12) and np.isfinite(tau).all()
    assert np.abs(tau).max() <= limit * (1 + 1e-9)
    # The COP at every frame, from the foot forces at the soles where Drake puts them (patches
    # foot by foot: sole_0..3, then the sole's centre), inside the hull of the grounded soles.
    forces = result.outcome.final.frames.forces  # (frames, 4 feet x 5 patches, 3), N
    assert forces.shape == (len(tau), 20, 3) and forces[..., 2].min() >= -1e-6
    context = plant.CreateDefaultContext()
    names = result.model.position_names[6:]
    lifted, margins = 0.0, []
    for i in range(len(tau)):
        x, y, z, yaw, pitch, roll = result.q[i, :6]
        torso = plant.GetBodyByName("torso")
        plant.SetFreeBodyPose(
            context, torso, RigidTransform(RollPitchYaw(roll, pitch, yaw), [x, y, z])
        )
        for name, angle in zip(names, result.q[i, 6:]):
            plant.GetJointByName(name).set_angle(context, angle)
        points, grounded = [], []
        for foot, sole in soles.items():
            X = plant.EvalBodyPoseInWorld(context, plant.GetBodyByName(foot))
            corners = np.array([X @ p for p in sole])
            points += [*corners, corners.mean(axis=0)]
            if corners[:, 2].min() < 1e-3:
                grounded.append(corners)
            lifted = max(lifted, corners[:, 2].min())
        points, f = np.array(points), forces[i, :, 2]
        # Load only where a sole touches the ground (within 1 mm).
        assert np.all((f <= 1e-6) | (points[:, 2] < 1e-3)), i
        cop = (points[:, :2] * f[:, None]).sum(axis=0) / f.sum()
        assert cop == pytest.approx(result.cop[i], abs=1e-6)
        hull = ConvexHull(np.concatenate(grounded)[:, :2])
        margins.append(-np.max(hull.equations[:, :2] @ cop + hull.equations[:, 2]))
    assert min(margins) > 0.0
    # A foot did lift: the 1 s lift raises its sole by 40 mm.
    assert lifted > 0.03


def test_an_example_runs_as_a_user_runs_it(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    script = EXAMPLES / "fast_voxel_l_shape.py"
    result = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "stroke 1.0000 mm" in result.stdout


@pytest.mark.parametrize(
    "name",
    [
        "fast_voxel_l_shape",
        "fast_skinned_diagram",
        "fast_hopper_drop",
        "fast_my_skeleton_lift",
        "fast_hopper_gait",
        "fast_walker_gait",
    ],
)
def test_an_example_runs_as_the_guides_gallery_runs_it(name, tmp_path, monkeypatch):
    """sphinx-gallery executes the code as __main__ in the example's folder, with neither
    __file__ nor the module docstring as __doc__."""
    code = compile((EXAMPLES / f"{name}.py").read_text(), name, "exec")
    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setattr(sys, "argv", [name, "--fast", "--out", str(tmp_path)])
    exec(code, {"__name__": "__main__"})
    assert any(tmp_path.iterdir())
