"""The models resolve from a built wheel as well as from the source checkout.

Builds the wheel, unpacks it (a wheel is a zip of the installed layout) and imports drakebots
from there in a fresh interpreter, so `package://drakebots/...` must come from the wheel's own
`drakebots/_models` data package, not from the repository.
"""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]

CHECK = """
import drakebots, drakebots.models as m
from pydrake.multibody.parsing import Parser
from pydrake.multibody.plant import MultibodyPlant
print(drakebots.__file__)
print(m.ModelsDirectory())
plant = MultibodyPlant(0.0)
parser = Parser(plant)
m.ConfigureParser(parser)
parser.AddModels(url="package://drakebots/beetle/beetle.sdf")
plant.Finalize()
print(plant.num_actuators())
"""


def test_models_resolve_from_a_built_wheel(tmp_path):
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(REPOSITORY),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("drakebots-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "drakebots/_models/package.xml" in names
        assert "drakebots/_models/beetle/beetle.sdf" in names
        archive.extractall(site)
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONNOUSERSITE="1")
    run = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            CHECK.replace(
                "import drakebots,",
                f"import sys; sys.path.insert(0, {str(site)!r}); import drakebots,",
            ),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    module_file, models_dir, actuators = run.stdout.split()[-3:]
    assert module_file.startswith(str(site)), module_file
    assert models_dir == str(site / "drakebots" / "_models")
    assert actuators == "12"
