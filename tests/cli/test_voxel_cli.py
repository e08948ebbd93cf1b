"""`drakebots voxel`: each subcommand on a tiny case (files written, figures that check out), and
bad input (exit 2, the message names what is wrong, nothing written). In-process, to stay fast."""

import json

import numpy as np
import pytest

from drakebots.cli import main


def Run(*args) -> int:
    return main(["voxel", *[str(a) for a in args]])


def test_fem_writes_the_pattern_and_the_dissipation(tmp_path, capsys):
    out = tmp_path / "fem"
    code = Run(
        "fem", "--lattice", "2x2x1", "--actuate", "node=0:0:0/3,axis=y,stroke=2mm", "--out", out
    )
    assert code == 0, capsys.readouterr().err
    for name in (
        "summary.json",
        "dissipation.json",
        "displacement.png",
        "dissipation.png",
        "fem.npz",
        "replay.html",
    ):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    figures = summary["figures"]
    assert summary["success"] and figures["plane_of_motion"].startswith("z-plane 0")
    # Clamped mount: each actuator node moves half the stroke.
    assert figures["control_amplitude_m"] == pytest.approx(1e-3, rel=1e-12)
    assert figures["max_dissipation"] < 0.049 and figures["alternating_pattern"]
    dissipation = json.loads((out / "dissipation.json").read_text())
    assert len(dissipation["nodes"]) == figures["nodes_in_plane"] == 12
    assert "dissipation" in dissipation["definitions"]


def test_fem_with_an_occupancy_file_and_pinned_joints(tmp_path, capsys):
    occupancy = np.zeros((2, 1, 2), dtype=bool)
    occupancy[:, 0, :] = True
    np.save(tmp_path / "formation.npy", occupancy)
    out = tmp_path / "fem"
    code = Run(
        "fem",
        "--occupancy",
        tmp_path / "formation.npy",
        "--joints",
        "pinned",
        "--actuate",
        "node=0:0:0/3,axis=z,stroke=1mm",
        "--out",
        out,
    )
    assert code == 0, capsys.readouterr().err
    figures = json.loads((out / "summary.json").read_text())["figures"]
    # Ball joints: the rotating-squares mechanism, nothing lost.
    assert figures["max_dissipation"] < 1e-6
    # The mechanism from the saved solution, independently of the dissipation metric: no strut
    # changes length (a mechanism of inextensible struts), every node of the layer's mid-plane
    # (the x and z faces' centres) moves by half the 1 mm stroke, and driving it takes no force.
    with np.load(out / "fem.npz") as fem:
        nodes, struts, u = fem["nodes"], fem["struts"], fem["translations"]
    axis = nodes[struts[:, 1]] - nodes[struts[:, 0]]
    axis /= np.linalg.norm(axis, axis=1)[:, None]
    elongation = np.einsum("ij,ij->i", u[struts[:, 1]] - u[struts[:, 0]], axis)
    assert np.abs(elongation).max() < 1e-6 * 1e-3
    in_plane = np.isclose(nodes[:, 1], 0.5 * (nodes[:, 1].min() + nodes[:, 1].max()))
    assert in_plane.sum() == 12
    np.testing.assert_allclose(np.linalg.norm(u[in_plane], axis=1), 0.5e-3, rtol=1e-6)
    assert abs(figures["actuator_forces_N"][0]) < 1e-4


def test_pom_and_compare_on_the_tripod(tmp_path, capsys):
    out = tmp_path / "pom"
    assert Run("pom", "--robot", "tripod", "--gait", "tripod", "--out", out) == 0
    summary = json.loads((out / "summary.json").read_text())
    strokes = np.array(summary["figures"]["strokes_m"])
    assert strokes.shape == (8, 4) and 1e-3 < np.abs(strokes).max() < 1.1e-2  # a few mm
    assert summary["figures"]["ik_max_residual_m"] < 1e-12
    # compare on the reversed gait: the same keyframes in reverse order from the same start.
    out = tmp_path / "compare"
    assert Run("compare", "--robot", "tripod", "--gait", "tripod_reverse", "--out", out) == 0
    figures = json.loads((out / "summary.json").read_text())["figures"]
    reverse = np.array(figures["strokes_m"])
    assert np.allclose(reverse, np.vstack([strokes[:1], strokes[:0:-1]]), rtol=0, atol=1e-15)
    assert figures["core_max_error_relative"] < 0.01
    assert figures["drake_model_static_check"]["max_relative_difference"] < 1e-6
    for name in ("pom_vs_fem.png", "node_error.png", "strokes.png", "replay.html"):
        assert (out / name).is_file(), name
    capsys.readouterr()


def _NothingWritten(tmp_path):
    return list(tmp_path.iterdir()) == [] or all(p.suffix == ".npy" for p in tmp_path.iterdir())


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--actuate", "node=0:0:0/3,axis=z,stroke=2mm"], "use --lattice 2x1x2"),
        (["--actuate", "node=5:0:0/3,axis=y,stroke=2mm"], "voxel (5, 0, 0) is not in the lattice"),
        (["--actuate", "node=0:0:0/7,axis=y,stroke=2mm"], "node ids are 0-5"),
        (["--actuate", "node=0:0:0/3,to=0:0:0/4,stroke=1mm"], "not one pitch apart"),
        (["--actuate", "node=0:0:0/2,axis=z,stroke=1mm"], "stretches"),
        (["--actuate", "node=0:0:0/3,axis=y,stroke=40mm"], "invert"),
        (["--actuate", "node=0:0:0/3,axis=y,force=500N"], "inverts"),
        (
            [
                "--actuate",
                "node=0:0:0/3,axis=y,stroke=2mm",
                "--joints",
                "pinned",
                "--actuate",
                "node=0:0:0/4,axis=x,force=1N",
            ],
            "mechanism",
        ),
        (["--actuate", "node=0:0:0/3,axis=y,stroke=2cm"], "expected a length"),
        ([], "--actuate is required"),
        (["--lattice", "2x2", "--actuate", "node=0:0:0/3,axis=y,stroke=2mm"], "NXxNYxNZ"),
    ],
)
def test_fem_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, arguments, message):
    out = tmp_path / "fem"
    lattice = [] if "--lattice" in arguments else ["--lattice", "2x2x1"]
    assert Run("fem", *lattice, *arguments, "--out", out) == 2
    error = capsys.readouterr().err
    assert message in error, error
    assert not out.exists() and _NothingWritten(tmp_path)


@pytest.mark.parametrize(
    "array, message",
    [
        (np.ones((2, 2), dtype=bool), "3-D"),
        (np.ones((2, 2, 1), dtype=np.int64), "boolean"),
        (np.zeros((2, 2, 1), dtype=bool), "no voxel"),
    ],
)
def test_bad_occupancy_exits_2_and_writes_nothing(tmp_path, capsys, array, message):
    np.save(tmp_path / "occupancy.npy", array)
    out = tmp_path / "fem"
    code = Run(
        "fem",
        "--occupancy",
        tmp_path / "occupancy.npy",
        "--actuate",
        "node=0:0:0/3,axis=y,stroke=1mm",
        "--out",
        out,
    )
    assert code == 2
    error = capsys.readouterr().err
    assert "occupancy.npy" in error and message in error, error
    assert not out.exists() and _NothingWritten(tmp_path)


def test_pom_bad_robot_and_lift(tmp_path, capsys):
    assert Run("pom", "--robot", "worm", "--out", tmp_path / "a") == 2
    assert "known robots: tripod" in capsys.readouterr().err
    assert Run("compare", "--lift", "25", "--out", tmp_path / "b") == 2
    assert "--lift 25" in capsys.readouterr().err
    assert Run("pom", "--narrow", "12", "--out", tmp_path / "c") == 2
    assert "--narrow 12" in capsys.readouterr().err
    assert Run("pom", "--gait", "gallop", "--out", tmp_path / "d") == 2
    assert "tripod_reverse" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
