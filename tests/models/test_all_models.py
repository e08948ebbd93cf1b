"""Generic checks over every model folder (menagerie style): files, parsing, a 1 s simulation.

Each folder models/<robot>/ is a registered robot. The simulation uses the robot family's default
`drakebots simulate` options (for the skeletons: the PD hold of the home pose) and checks what any
standing robot must satisfy: a finite state, the base within 10 % of its nominal height, no foot
deeper than 2 mm in the ground.
"""

import pytest
from pydrake.multibody.parsing import LoadModelDirectives, Parser, ProcessModelDirectives
from pydrake.multibody.plant import MultibodyPlant

from drakebots.models import ConfigureParser, ModelsDirectory
from drakebots.robots import GetRobot, KnownRobots
from drakebots.systems.simulate import Runner, SimulateConfig

MODEL_FOLDERS = sorted(p for p in ModelsDirectory().iterdir() if p.is_dir())


def test_every_folder_is_a_registered_robot():
    assert MODEL_FOLDERS, "no model folders found"
    known = KnownRobots()
    for folder in MODEL_FOLDERS:
        assert folder.name in known, f"models/{folder.name} is not in the robot registry"


@pytest.mark.parametrize("folder", MODEL_FOLDERS, ids=lambda p: p.name)
def test_model_folder_has_required_files(folder):
    for name in ("README.md", "LICENSE", "CHANGELOG.md", "scene.dmd.yaml"):
        assert (folder / name).is_file(), f"models/{folder.name}/{name} is missing"
    readme = (folder / "README.md").read_text()
    assert "unit" in readme.lower(), "README must state the units"


@pytest.mark.parametrize("folder", MODEL_FOLDERS, ids=lambda p: p.name)
def test_scene_parses_and_finalizes(folder):
    plant = MultibodyPlant(time_step=0.0)
    parser = Parser(plant)
    ConfigureParser(parser)
    directives = LoadModelDirectives(str(folder / "scene.dmd.yaml"))
    ProcessModelDirectives(directives, plant, parser)
    plant.Finalize()
    assert plant.num_positions() > 0


@pytest.mark.parametrize("folder", MODEL_FOLDERS, ids=lambda p: p.name)
def test_robot_adds_and_finalizes(folder):
    robot = GetRobot(folder.name)
    plant = MultibodyPlant(time_step=0.0)
    instance = robot.AddTo(plant)
    plant.Finalize()
    assert plant.num_positions(instance) > 0
    assert plant.CalcTotalMass(plant.CreateDefaultContext(), [instance]) > 0


@pytest.mark.parametrize("folder", MODEL_FOLDERS, ids=lambda p: p.name)
def test_stands_for_one_second(folder):
    import numpy as np

    robot = GetRobot(folder.name)
    scenario = SimulateConfig(robot=robot.name, duration=1.0)
    outcome = Runner(robot.family).Simulate(scenario, robot, meshcat=None, progress=None)
    log = outcome.log
    assert np.all(np.isfinite(log.positions)) and np.all(np.isfinite(log.velocities))
    nominal = robot.nominal_base_height
    assert np.all(np.abs(log.base_height - nominal) <= 0.1 * nominal), (
        f"base height left ±10 % of {nominal}: [{log.base_height.min()}, {log.base_height.max()}]"
    )
    two_mm = 2.0 if robot.units["length"] == "mm" else 0.002
    assert np.max(log.contact[:, 0]) <= two_mm, "a foot sank more than 2 mm"
