"""Issue 47: `simulate`, `view` and `sweep` take a robot file where they take a robot name.

The hopper of scripts/examples/hopper is dropped onto the ground through drakebots.Simulate and
the CLI; at rest the ground carries its weight, m g with m the URDF's 5.45 kg (summed by hand).
"""

import argparse
import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from drakebots import Simulate, SimulateConfig
from drakebots.cli import main
from drakebots.robots import LoadRobot

REPOSITORY = Path(__file__).resolve().parents[2]
HOPPER = REPOSITORY / "scripts" / "examples" / "hopper"
HOPPER_YAML = HOPPER / "hopper.yaml"
HOPPER_MASS = 4.0 + 0.8 + 0.5 + 0.15  # torso, thigh, shank, foot (hopper.urdf)


def test_the_dropped_hopper_comes_to_rest_carried_by_the_ground():
    result = Simulate(SimulateConfig(robot=str(HOPPER_YAML), duration=0.6, drop_height=0.02))
    assert result.success, result.reason
    figures, log = result.figures, result.log
    assert figures["weight"] == pytest.approx(HOPPER_MASS * 9.81)
    assert figures["ground_force_end"] == pytest.approx(HOPPER_MASS * 9.81, rel=0.02)
    # It fell: the base started 2 cm above its home height and ends within 5 mm of it, at rest.
    nominal = LoadRobot(HOPPER_YAML).nominal_base_height
    assert log.base_height[0] == pytest.approx(nominal + 0.02)
    assert abs(log.base_height[-1] - nominal) < 5e-3
    assert np.abs(log.velocities[-1]).max() < 1e-2
    assert [name.split("_")[1] for name in log.position_names[:3]] == ["x", "z", "pitch"]
    assert figures["added_contact_spheres"] == []  # the URDF's spheres carry the contacts


def test_contacts_without_collision_geometry_get_spheres(tmp_path):
    urdf = re.sub(
        r"<collision.*?</collision>", "", (HOPPER / "hopper.urdf").read_text(), flags=re.S
    )
    (tmp_path / "hopper.urdf").write_text(urdf)
    (tmp_path / "hopper.yaml").write_text(HOPPER_YAML.read_text())
    result = Simulate(SimulateConfig(robot=str(tmp_path / "hopper.yaml"), duration=0.4))
    assert result.success, result.reason
    assert result.figures["added_contact_spheres"] == ["contact_0", "contact_1"]
    assert result.figures["ground_force_end"] == pytest.approx(HOPPER_MASS * 9.81, rel=0.02)
    assert result.figures["max_penetration"] < 2e-3


def test_the_cli_simulates_and_views_a_robot_file(tmp_path, capsys):
    out = tmp_path / "hop"
    code = main(["simulate", str(HOPPER_YAML), "--duration", "0.2", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["robot"] == "hopper" and summary["family"] == "user"
    assert summary["robot_file"] == str(HOPPER_YAML)
    # The recording (base64 msgpack inside the page) holds the hopper's bodies.
    html = (out / "replay.html").read_text()
    blobs = [base64.b64decode(m) for m in re.findall(r"base64,([A-Za-z0-9+/=]+)", html)]
    assert any(b"hopper/torso" in blob for blob in blobs)
    assert any(b"hopper/foot" in blob for blob in blobs)
    from drakebots.systems.simulate import LoadSimulationFolder

    robot, log, _ = LoadSimulationFolder(out)
    assert robot.source == str(HOPPER_YAML) and log.positions.shape[1] == 5
    assert main(["view", str(out), "--seconds", "0"]) == 0


def test_a_scenario_names_a_robot_file_beside_it(tmp_path, monkeypatch):
    scenario = tmp_path / "drop.yaml"
    (tmp_path / "hopper.urdf").write_text((HOPPER / "hopper.urdf").read_text())
    (tmp_path / "hopper.yaml").write_text(HOPPER_YAML.read_text())
    scenario.write_text("robot: hopper.yaml\nduration: 0.1\ndrop_height: 0.01\n")
    monkeypatch.chdir(REPOSITORY)
    from drakebots.cli.simulate import MakeConfig, register

    parser = register(argparse.ArgumentParser().add_subparsers())
    config = MakeConfig(parser.parse_args([str(scenario)]))
    assert config.robot == str(tmp_path / "hopper.yaml") and config.drop_height == 0.01


def test_a_bad_robot_file_is_exit_2_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "hopper.urdf").write_text((HOPPER / "hopper.urdf").read_text())
    data = yaml.safe_load(HOPPER_YAML.read_text())
    data["home"] = {"ankle": 0.2}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    assert main(["simulate", str(path), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert str(path) in error and "'home.ankle'" in error
    assert not out.exists()


def test_options_of_other_families_are_refused():
    from drakebots.errors import InputError

    with pytest.raises(InputError, match="--gait-law does not apply"):
        Simulate(SimulateConfig(robot=str(HOPPER_YAML), gait_law=True))


def test_a_sweep_over_a_robot_file(tmp_path, capsys):
    sweep = tmp_path / "hop.yaml"
    sweep.write_text(
        f"command: simulate {HOPPER_YAML}\nfixed: {{duration: 0.1}}\n"
        "grid: {drop-height: [0.0, 0.01]}\n"
    )
    assert main(["sweep", str(sweep), "--dry-run", "--out", str(tmp_path / "s")]) == 0
    assert str(HOPPER_YAML) in capsys.readouterr().out


def test_a_sweep_over_a_bad_robot_file_is_refused_before_any_case(tmp_path, capsys):
    (tmp_path / "hopper.urdf").write_text((HOPPER / "hopper.urdf").read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text(HOPPER_YAML.read_text().replace("knee: -0.6", "ankle: -0.6"))
    sweep = tmp_path / "hop.yaml"
    sweep.write_text(f"command: simulate {bad}\ngrid: {{drop-height: [0.0, 0.01]}}\n")
    out = tmp_path / "s"
    assert main(["sweep", str(sweep), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert str(bad) in error and "'home.ankle'" in error
    assert not out.exists()


def MillimetreHopper(tmp_path: Path) -> Path:
    """The hopper rewritten in mm-ms-g (HAMR-VI's units): lengths x 1e3, masses x 1e3 (g),
    inertias x 1e9 (g mm^2), torques x 1e3 (N mm), speeds x 1e-3 (rad/ms), damping x 1e6."""
    text = (HOPPER / "hopper.urdf").read_text()

    def Scale(pattern: str, factor: float, source: str) -> str:
        def Scaled(match):
            values = " ".join(repr(float(v) * factor) for v in match.group(2).split())
            return f'{match.group(1)}="{values}"'

        return re.sub(rf'({pattern})="([^"]*)"', Scaled, source)

    lengths = r"<origin xyz|<box size|<sphere radius"
    factors = {lengths: 1e3, "<mass value": 1e3, r"\bi[xyz]{2}": 1e9, r"\beffort": 1e3}
    factors |= {r"\bvelocity": 1e-3, r"\bdamping": 1e6}
    for pattern, factor in factors.items():
        text = Scale(pattern, factor, text)
    (tmp_path / "hopper_mm.urdf").write_text(text)
    data = yaml.safe_load(HOPPER_YAML.read_text())
    data.update(model="hopper_mm.urdf", units="mm-ms-g")
    for contact in data["contacts"]:
        contact["point"] = [1e3 * x for x in contact["point"]]
    path = tmp_path / "hopper_mm.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_robot_file_in_mm_ms_g_lands_as_its_si_twin(tmp_path):
    """Durations and drop heights are SI for every robot; the mm-ms-g hopper's run is the SI
    hopper's, scaled."""
    si = Simulate(SimulateConfig(robot=str(HOPPER_YAML), duration=0.5, drop_height=0.02))
    mm = Simulate(SimulateConfig(robot=str(MillimetreHopper(tmp_path)), duration=0.5,
                                 drop_height=0.02))  # fmt: skip
    assert si.success and mm.success, (si.reason, mm.reason)
    assert mm.robot.units["length"] == "mm" and mm.log.times[-1] == pytest.approx(500.0)
    assert mm.figures["weight"] == pytest.approx(si.figures["weight"])  # N in both
    assert mm.figures["ground_force_end"] == pytest.approx(si.figures["ground_force_end"], rel=1e-2)
    assert mm.log.base_height[0] == pytest.approx(1e3 * si.log.base_height[0])
    assert mm.log.base_height[-1] == pytest.approx(1e3 * si.log.base_height[-1], abs=0.5)
