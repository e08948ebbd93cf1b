"""HAMR-VI on the command line: info, a short simulate run, bad inputs (exit 2, nothing written)
and `drakebots hamr modes`. The short run goes through the real entry point in a subprocess, as a
user would; the others call the same `main(argv)` in-process to keep the suite fast."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest


def drakebots(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "drakebots", *args], capture_output=True, text=True, timeout=timeout
    )


def main(*args, capsys):
    """Runs `drakebots ARGS` in-process; returns (exit code, stdout, stderr)."""
    from drakebots.cli import main as cli_main

    code = cli_main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_info_reports_loops_and_units(capsys):
    code, stdout, _ = main("info", "hamr_vi", "--json", capsys=capsys)
    assert code == 0
    info = json.loads(stdout)
    assert (info["num_positions"], info["num_velocities"], info["num_actuators"]) == (38, 38, 8)
    assert info["num_loop_constraints"] == 24 and info["loop_jacobian_rank"] == 24
    assert info["units"]["length"] == "mm" and info["gravity"] == pytest.approx(9.81e-3)


@pytest.mark.parametrize(
    "args, message",
    [
        (("--surface", "ice"), "valid surfaces: teflon"),
        (("--gait", "gallop"), "valid gaits: stand, trot, pronk, jump"),
        (("--gait", "trot", "--frequency", "0"), "must be > 0 Hz"),
        (("--gait", "trot", "--frequency", "-3"), "must be > 0 Hz"),
        (("--gait", "trot", "--voltage-amplitude", "150"), "must be in [0, 112.5] V"),
    ],
)
def test_bad_hamr_options_exit_2_and_write_nothing(tmp_path, args, message, capsys):
    out = tmp_path / "run"
    code, _, stderr = main(
        "simulate", "hamr_vi", *args, "--duration", "0.01", "--out", str(out), capsys=capsys
    )
    assert code == 2, stderr
    assert message in stderr
    assert not out.exists()
    assert not any(tmp_path.iterdir()), "a temporary folder was left behind"


def test_hamr_options_do_not_apply_to_other_robots(tmp_path, capsys):
    code, _, stderr = main(
        "simulate", "beetle", "--surface", "teflon", "--out", str(tmp_path / "r"), capsys=capsys
    )
    assert code == 2
    assert "--surface does not apply" in stderr


def test_short_trot_writes_the_results(tmp_path):
    out = tmp_path / "trot"
    result = drakebots(
        "simulate",
        "hamr_vi",
        "--gait",
        "trot",
        "--frequency",
        "10",
        "--surface",
        "sandpaper",
        "--duration",
        "0.03",
        "--out",
        str(out),
        "--no-progress",
    )
    assert result.returncode == 0, result.stderr
    for name in ("summary.json", "log.npz", "replay.html", "gait.png", "base_height.png"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    figures = summary["figures"]
    assert figures["surface"] == "sandpaper" and figures["friction"] == 1.02
    assert figures["loop_residual_max_mm"] < 1e-3
    assert 0.0 < figures["real_time_rate"] < 1.0  # simulated seconds per wall second
    assert "mm_per_cycle" not in figures  # 30 ms is inside the first (ramp) cycle
    # The gait's figures from the logged coordinates (base x, y, z, yaw, pitch, roll joints):
    # the paper's 1.02 sandpaper friction (Sec. II-C), the displacement, drift and tilt.
    with np.load(out / "log.npz") as log:
        names, q = list(log["position_names"]), log["positions"]
        residual, voltages = log["extra_loop_residual"], log["extra_voltage"]
    base = [names.index(f"base_{a}_x") for a in "xyz"]
    rotation = [names.index(f"base_{a}_q") for a in ("yaw", "pitch", "roll")]
    x, y, z = q[:, base].T
    yaw, pitch, roll = np.degrees(q[:, rotation].T)
    assert figures["forward_distance_mm"] == pytest.approx(x[-1] - x[0], abs=1e-12)
    assert figures["lateral_drift_mm"] == pytest.approx(y[-1] - y[0], abs=1e-12)
    assert figures["body_height_mean_mm"] == pytest.approx(z.mean(), rel=1e-9)
    assert figures["roll_max_abs_deg"] == pytest.approx(np.abs(roll).max(), rel=1e-9)
    assert figures["pitch_max_abs_deg"] == pytest.approx(np.abs(pitch).max(), rel=1e-9)
    assert figures["yaw_end_deg"] == pytest.approx(yaw[-1], rel=1e-9)
    assert figures["loop_residual_max_mm"] == pytest.approx(residual.max(), rel=1e-9)
    assert voltages.min() >= 0.0 and voltages.max() <= 225.0  # the drive's rails (Eq. 15)


def test_modes_writes_frequencies_against_the_paper(tmp_path, capsys):
    out = tmp_path / "modes"
    code, stdout, stderr = main("hamr", "modes", "--out", str(out), capsys=capsys)
    assert code == 0, stderr
    for name in (
        "summary.json",
        "modes.csv",
        "modes.npz",
        "modes.png",
        "mode_shapes.png",
        "replay.html",
    ):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    comparison = summary["paper_comparison"]
    assert comparison["vertical (z)"]["paper_hz"] == 10.0
    assert comparison["roll"]["paper_hz"] == 30.0
    # The authors' URDF parsed by Drake with the same springs, feet sliding: 28.66 Hz vertical,
    # 74.12 Hz roll (models/hamr_vi/README.md; docs/reproductions/hamr.md row 3). The paper's ~10
    # and ~30 Hz are the physical robot's (unmodelled serial compliance).
    assert comparison["vertical (z)"]["model_hz"] == pytest.approx(28.66, abs=0.05)
    assert comparison["roll"]["model_hz"] == pytest.approx(74.12, abs=0.05)
    assert "vertical" in stdout and "paper" in stdout
    # Independently of the modal solver: the four lift actuators as springs seen through the
    # legs' lift ratio dz_foot/dq_lift (Drake's kinematics at the saved equilibrium), carrying
    # the robot's mass (vertical) or its roll inertia about the centre of mass (Drake's
    # CalcSpatialInertia). The flexures add stiffness and the legs move less than the body, so
    # the model's modes lie above these estimates, and close to them.
    with np.load(out / "modes.npz") as saved:
        # (case, lift actuator scale, its summary column, upper bounds on model / estimate): with
        # the lift actuators at a tenth, the flexures carry more of the stiffness.
        for case, scale, column, upper in (
            ("sliding", 1.0, "model_hz", (1.1, 1.25)),
            ("lift_x0.1", 0.1, "model_hz_lift_x0.1", (1.2, 1.5)),
        ):
            estimates = _SpringEstimatesHz(saved[f"{case}_q_equilibrium"], scale)
            for mode, estimate, factor in zip(("vertical (z)", "roll"), estimates, upper):
                assert estimate <= comparison[mode][column] <= factor * estimate, (case, mode)
            rows = [r for r in csv.DictReader((out / "modes.csv").open()) if r["case"] == case]
            hz = {r["label"]: float(r["frequency_hz"]) for r in rows}
            assert hz["vertical (z)"] == pytest.approx(comparison["vertical (z)"][column], rel=1e-5)


def _SpringEstimatesHz(q, lift_scale):
    """(vertical, roll) frequencies, Hz, of the body on its four lift actuators at pose q."""
    from pydrake.multibody.plant import MultibodyPlant
    from pydrake.multibody.tree import BodyIndex

    from drakebots.hamr import robot as hamr

    plant = MultibodyPlant(0.0)
    hamr.AddHamr(plant)
    plant.Finalize()
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, q)
    # The authors' lift actuator spring, 1.6946 N/mm (reference/hamr-vi/README.md, from their
    # URDF), plus the bender's 0.385 N/mm at mid voltage (tests/hamr/test_piezo.py).
    k_actuator = 1.6946 * lift_scale + 0.385
    world = plant.world_frame()
    com = plant.CalcCenterOfMassPositionInWorld(context)
    bodies = [BodyIndex(i) for i in range(1, plant.num_bodies())]
    mass = plant.CalcTotalMass(context)
    inertia = plant.CalcSpatialInertia(context, world, bodies).Shift(com)
    roll_inertia = inertia.CalcRotationalInertia().CopyToFullMatrix3()[0, 0]
    k_vertical = k_roll = 0.0
    for leg in hamr.LEGS:
        k = k_actuator / hamr.LegTransmissionJacobian(plant, context, leg)[2, 1] ** 2
        foot = plant.GetFrameByName(f"{leg}_foot")
        y = plant.CalcPointsPositions(context, foot, [0.0, 0.0, 0.0], world)[1, 0] - com[1]
        k_vertical += k
        k_roll += k * y**2
    to_hz = 1000.0 / (2 * np.pi)  # rad/ms -> Hz
    return np.sqrt(k_vertical / mass) * to_hz, np.sqrt(k_roll / roll_inertia) * to_hz


def test_modes_bad_threshold(tmp_path, capsys):
    out = tmp_path / "modes"
    code, _, stderr = main(
        "hamr", "modes", "--body-threshold", "2", "--out", str(out), capsys=capsys
    )
    assert code == 2 and "--body-threshold" in stderr
    assert not out.exists()


def test_default_time_step_resolves_the_stride():
    from drakebots.hamr.simulate import DefaultTimeStep

    assert DefaultTimeStep("stand", 10.0) == 0.25
    assert DefaultTimeStep("trot", 10.0) == 0.25
    assert DefaultTimeStep("trot", 30.0) == pytest.approx(1000.0 / 30.0 / 400.0)


def test_surface_is_sized_to_the_run():
    """A robot at the fastest plausible speed stays on the default surface; a fixed 400 mm
    surface let a 1.5 s 30 Hz trot (163 mm/s plus a 24 degree yaw drift) walk off its edge."""
    from drakebots.hamr.simulation import (
        MAX_PLAUSIBLE_SPEED,
        HamrSimulationConfig,
        SurfaceSizeFor,
    )

    assert SurfaceSizeFor(30.0) == 400.0
    for duration in (500.0, 1500.0, 10_000.0):
        reach = 22.6 + MAX_PLAUSIBLE_SPEED * duration  # half-length of the robot's feet + travel
        assert 0.5 * SurfaceSizeFor(duration) > reach
    assert HamrSimulationConfig(duration=1500.0).SurfaceSize() == SurfaceSizeFor(1500.0)
    assert HamrSimulationConfig(surface_size=50.0).SurfaceSize() == 50.0


def test_leaving_the_surface_is_a_failure_not_a_tip_over(tmp_path, capsys, monkeypatch):
    """On a surface smaller than the robot (30 mm; its feet are 17.4 mm off the centre line) the
    run fails with exit 1 naming the surface, before any tip-over verdict."""
    import drakebots.hamr.simulation as simulation

    monkeypatch.setattr(simulation, "SurfaceSizeFor", lambda duration_ms: 30.0)
    out = tmp_path / "off"
    code, _, stderr = main(
        "simulate",
        "hamr_vi",
        "--duration",
        "0.005",
        "--out",
        str(out),
        "--no-progress",
        capsys=capsys,
    )
    assert code == 1
    summary = json.loads((out / "summary.json").read_text())
    assert "left the 30 mm running surface" in json.dumps(summary)
    assert summary["figures"]["surface_size_mm"] == 30.0
