"""`drakebots skin`, `simulate --skin` and `skin-bend`: bad input exits 2 naming the problem and
writes nothing. (The full runs are slow tests in tests/fem and tests/systems.)"""

import dataclasses

import numpy as np
import pytest

from drakebots.cli import main
from drakebots.fem.skin import MakeShellMesh, Skin, WriteSkin


@dataclasses.dataclass
class Result:
    returncode: int
    stderr: str


@pytest.fixture
def drakebots(capsys):
    """Runs the command line in-process (the subprocess path is covered by tests/cli/test_cli.py)."""

    def run(*args):
        code = main(list(args))
        return Result(code, capsys.readouterr().err)

    return run


@pytest.mark.parametrize(
    "args, message",
    [
        (["--thickness", "0"], "--thickness must be > 0"),
        (["--poissons-ratio", "0.5"], "--poissons-ratio"),
        (["--folding-regions", "elbows"], "elbows"),
    ],
)
def test_skin_bad_input(drakebots, tmp_path, args, message):
    out = tmp_path / "skin"
    result = drakebots("skin", "beetle", *args, "--out", str(out))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


def _TinySkin(folder, *, robot="beetle", glue_link="torso"):
    mesh = MakeShellMesh(
        lambda P: np.linalg.norm(P, axis=-1) - 0.05, [-0.06] * 3, [0.06] * 3, 0.004, 0.01
    )
    glue = np.arange(5)
    WriteSkin(
        folder,
        Skin(
            robot=robot,
            mesh=mesh,
            glue_vertices=glue,
            glue_links=[glue_link] * 5,
            glue_points=mesh.vertices[glue],
            skin_links=[glue_link],
            weights=np.ones((mesh.num_vertices, 1)),
            thickness=np.full(mesh.num_vertices, 0.004),
            outer=np.zeros(mesh.num_vertices, dtype=bool),
            fold=np.zeros(mesh.num_tets, dtype=bool),
            mass_density=1000.0,
            youngs_modulus=1e6,
            poissons_ratio=0.45,
            info={},
        ),
    )


def test_simulate_with_a_missing_skin_folder(drakebots, tmp_path):
    out = tmp_path / "run"
    result = drakebots("simulate", "beetle", "--skin", str(tmp_path / "nope"), "--out", str(out))
    assert result.returncode == 2 and "--skin" in result.stderr
    assert not out.exists()


def test_simulate_with_glue_on_no_link(drakebots, tmp_path):
    skin = tmp_path / "skin"
    skin.mkdir()
    _TinySkin(skin, glue_link="tentacle")
    out = tmp_path / "run"
    result = drakebots("simulate", "beetle", "--skin", str(skin), "--out", str(out))
    assert result.returncode == 2
    assert "glue vertices attach to no link" in result.stderr and "tentacle" in result.stderr
    assert not out.exists()


def test_simulate_with_another_robots_skin(drakebots, tmp_path):
    skin = tmp_path / "skin"
    skin.mkdir()
    _TinySkin(skin, robot="cow")
    result = drakebots("simulate", "beetle", "--skin", str(skin), "--out", str(tmp_path / "r"))
    assert result.returncode == 2 and "made for 'cow'" in result.stderr


def test_skin_bend_unknown_joint(drakebots, tmp_path):
    out = tmp_path / "bend"
    result = drakebots("skin-bend", "beetle", "--joint", "front_left_wrist", "--out", str(out))
    assert result.returncode == 2 and "front_left_wrist" in result.stderr
    assert not out.exists()
