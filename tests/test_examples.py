"""The scripts under scripts/examples/ run, on their fast setting, and say what they claim.

Each example's `main(fast=True, out=...)` is imported and called (one is also run as a user runs
it, in a subprocess); the facts checked are independent of the example's own printout: the
voxel L's actuator stroke and the POM's agreement with the FEM, the skinned robot's page holding
its bodies and its ground force against m g from the URDF/SDF masses, the hopper's rest.
"""

import base64
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("name", ["fast_voxel_l_shape", "fast_skinned_diagram", "fast_hopper_drop"])
def test_an_example_runs_as_the_guides_gallery_runs_it(name, tmp_path, monkeypatch):
    """sphinx-gallery executes the code as __main__ in the example's folder, with neither
    __file__ nor the module docstring as __doc__."""
    code = compile((EXAMPLES / f"{name}.py").read_text(), name, "exec")
    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setattr(sys, "argv", [name, "--fast", "--out", str(tmp_path)])
    exec(code, {"__name__": "__main__"})
    assert any(tmp_path.iterdir())
