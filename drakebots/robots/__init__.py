"""The robots drakebots knows, and how to add each to a MultibodyPlant.

Every robot is described by a `Robot` object (see `drakebots.robots.base.Robot`): its name, family,
units, how to add it to a plant (`AddTo(plant)`), its home pose, and facts for `drakebots info`.
This registry maps the names users type (`drakebots info beetle`) to those objects. A family's
module lives in its wing (drakebots/<family>/) and is named here as a string: it is imported only
when one of its robots is asked for, so this foundation never imports a wing.

A user's own robot comes from a robot file instead (`LoadRobot(path)`, drakebots.robots.robot_file):
`GetRobot` takes a registry name or the path of such a file, so every verb takes both.

Adding a robot: write a module in its family's wing with a `Robot` subclass and a
`MakeRobot(name)` factory, then add its names here.
"""

import importlib

from drakebots.errors import InputError

# name -> (module, one-line description). The module defines MakeRobot(name) -> Robot.
_REGISTRY: dict[str, tuple[str, str]] = {
    "beetle": ("drakebots.skinned.robot", "beetle-like skinned quad-robot, 12 joints"),
    "monster": ("drakebots.skinned.robot", "monster-like skinned quad-robot, 16 joints"),
    "lizard": ("drakebots.skinned.robot", "lizard-like skinned quad-robot, 17 joints"),
    "cow": ("drakebots.skinned.robot", "cow-like skinned quad-robot, 16 joints"),
    "hamr_vi": ("drakebots.hamr.robot", "HAMR-VI piezo microrobot, 1.5 g, 38 coords, 24 loops"),
    "voxel_tripod": ("drakebots.voxel.robot", "tripod-gait voxel robot, 10 voxels, 4 actuators"),
    "gecko": ("drakebots.gecko.model", "gecko soft walker, 5 pneumatic limbs, 4 suction feet"),
}


def KnownRobots() -> dict[str, str]:
    """Name -> one-line description of every registered robot."""
    return {name: description for name, (_, description) in sorted(_REGISTRY.items())}


def LoadRobot(path):
    """The `Robot` a robot file describes (see drakebots.robots.robot_file for the schema)."""
    from drakebots.robots.robot_file import LoadRobot as _LoadRobot

    return _LoadRobot(path)


def GetRobot(name_or_path):
    """The `Robot` description for a registered name or a robot file's path.

    A registered name wins; otherwise a string that ends in .yaml/.yml or names an existing file
    is read as a robot file (`LoadRobot`).

    Raises:
        InputError: for an unknown name (the message lists the known ones) or a bad robot file
            (the message names the key and the file).
    """
    from drakebots.robots.robot_file import IsRobotFile

    name = str(name_or_path)
    if name not in _REGISTRY:
        if IsRobotFile(name):
            return LoadRobot(name)
        known = ", ".join(sorted(_REGISTRY))
        raise InputError(
            f"unknown robot '{name}'; known robots: {known} (or give a robot file, NAME.yaml)"
        )
    module, _ = _REGISTRY[name]
    return importlib.import_module(module).MakeRobot(name)
