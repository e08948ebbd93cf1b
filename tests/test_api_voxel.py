"""drakebots.voxel's workflows from Python (issue 46, "Every workflow a Python call"): Fem on a
2x2x1 lattice, Pom and Compare on the tripod, each against what `drakebots voxel ...` writes
into summary.json for the same config, plus an independent check (the frame solver's own
equilibrium K u = f, Clapeyron's theorem, the POM against the FEM)."""

import dataclasses
import json

import numpy as np
import pytest

from drakebots.cli import main
from drakebots.errors import InputError
from drakebots.results import ToJson
from drakebots.voxel import Compare, CompareConfig, Fem, FemConfig, Pom, PomConfig


def Comparable(figures: dict) -> dict:
    """The figures as summary.json holds them (JSON types), without the solver's wall times."""
    return {k: v for k, v in json.loads(ToJson(figures)).items() if k != "solve_seconds"}


def WriteConfig(path, config) -> str:
    """A --config YAML file of a config dataclass (JSON is YAML)."""
    path.write_text(json.dumps(dataclasses.asdict(config)))
    return str(path)


STROKE = FemConfig(lattice="2x2x1", actuate=["node=0:0:0/3,axis=y,stroke=2mm"])
FORCE = FemConfig(lattice="2x2x1", actuate=["node=0:0:0/3,axis=y,force=1N"], mount="axial")


@pytest.mark.parametrize("config", [STROKE, FORCE], ids=["stroke", "force"])
def test_fem_figures_match_the_cli(config, tmp_path):
    result = Fem(config)
    out = tmp_path / "fem"
    assert main(["voxel", "fem", "--config", WriteConfig(tmp_path / "fem.yaml", config),
                 "--out", str(out)]) == 0  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert result.success and summary["success"] is True
    assert Comparable(result.figures) == Comparable(summary["figures"])
    assert summary["inputs"]["actuate"] == config.actuate
    with np.load(out / "fem.npz") as saved:
        np.testing.assert_array_equal(saved["translations"], result.translations)


def test_fem_under_a_unit_force_is_in_equilibrium():
    """A 1 N actuator force pair on a floating lattice (one clamped node, axial mount: no
    constraint rows): K u equals the applied forces at every DOF (the clamp carries nothing, the
    pair being self-equilibrated), and the strain energy is half the work of the forces
    (Clapeyron's theorem)."""
    result = Fem(FORCE)
    a, b = result.actuators[0].node_a, result.actuators[0].node_b
    nodes = result.lattice.nodes
    axis = (nodes[b] - nodes[a]) / np.linalg.norm(nodes[b] - nodes[a])
    f = np.zeros((result.lattice.num_nodes, 6))
    f[a, :3], f[b, :3] = -axis, axis
    u = result.solution.displacements
    K = result.frame.StiffnessMatrix()
    residual = K @ u.reshape(-1) - f.reshape(-1)
    assert np.abs(residual).max() < 1e-8  # N (N*m), against 1 N applied
    extension = (u[b, :3] - u[a, :3]) @ axis
    assert extension > 0  # pushing the nodes apart opens the gap
    energy = 0.5 * u.reshape(-1) @ (K @ u.reshape(-1))
    assert energy == pytest.approx(0.5 * 1.0 * extension, rel=1e-9)
    assert result.figures["strain_energy_J"] == pytest.approx(energy, rel=1e-9)


def test_fem_under_a_stroke_stores_the_actuators_work():
    """A clamped 2 mm stroke: each actuator node moves half of it along the axis, and the strain
    energy is half the actuator force times the stroke (the supports' other reactions do no work:
    the nodes' rotations and lateral motion are held)."""
    result = Fem(STROKE)
    a, b = result.actuators[0].node_a, result.actuators[0].node_b
    u = result.solution.displacements
    np.testing.assert_allclose(np.linalg.norm(u[b, :3] - u[a, :3]), 2e-3, rtol=1e-12)
    force = result.figures["actuator_forces_N"][0]
    assert force > 0 and result.solution.strain_energy == pytest.approx(
        0.5 * force * 2e-3, rel=1e-9
    )


def test_fem_without_an_actuator_raises_before_any_work():
    with pytest.raises(InputError, match="--actuate is required"):
        Fem(FemConfig())
    with pytest.raises(InputError, match="mechanism"):
        Fem(dataclasses.replace(FORCE, joints="pinned", mount="clamped"))


def test_pom_and_compare_figures_match_the_cli(tmp_path):
    """--config gives lift 3 mm; the --narrow flag overrides its narrowing (6 mm)."""
    pom = Pom(PomConfig(lift=3.0, narrow=6.0))
    config = WriteConfig(tmp_path / "pom.yaml", PomConfig(lift=3.0, narrow=8.0))
    out = tmp_path / "pom"
    assert main(["voxel", "pom", "--config", config, "--narrow", "6", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"] == {"robot": "tripod", "gait": "tripod", "lift_mm": 3.0,
                                 "narrow_mm": 6.0}  # fmt: skip
    assert pom.success and Comparable(pom.figures) == Comparable(summary["figures"])
    compare = Compare(CompareConfig(gait="tripod_reverse"))
    out = tmp_path / "compare"
    assert main(["voxel", "compare", "--gait", "tripod_reverse", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert compare.success and Comparable(compare.figures) == Comparable(summary["figures"])
    # The reversed gait: the same keyframes in reverse order from the same start.
    forward = Pom(PomConfig()).strokes
    np.testing.assert_allclose(
        compare.strokes, np.vstack([forward[:1], forward[:0:-1]]), rtol=0, atol=1e-15
    )
    # Independent models agree: the POM prediction against the frame FEM of the whole robot
    # (within 1 % of the largest displacement), and Drake's model against the FEM.
    assert compare.core_errors.max() < 0.01 * np.abs(compare.pom_frames).max() * np.sqrt(3)
    assert compare.figures["drake_model_static_check"]["max_relative_difference"] < 1e-6
    for name, fem in compare.fem_feet.items():  # rear feet and markers: within 0.05 mm
        if not name.startswith("front"):
            assert np.abs(fem - compare.predicted[name]).max() < 5e-5, name
