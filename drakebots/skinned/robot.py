"""The skinned quad-robots' skeletons: beetle, monster, lizard and cow (skinned-quad-robots.txt).

`AddSkinnedQuadruped(plant, "beetle")` adds the generated SDF model (models/<name>/<name>.sdf,
see drakebots.skinned.skeleton) with its home pose as the plant's default state: every joint at
zero and the torso at the height where the soles touch the ground.
"""

import dataclasses
from pathlib import Path

import numpy as np
from pydrake.math import RigidTransform
from pydrake.multibody.parsing import Parser
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import ModelInstanceIndex

from drakebots.models import ConfigureParser
from drakebots.robots.base import Robot
from drakebots.skinned.skeleton import (
    LEG_NAMES,
    BuiltinSkeletonNames,
    FootContactPoints,
    HomeBaseHeight,
    JointKinds,
    LoadSkeletonParams,
    MakeSkeletonSdf,
    SkeletonParams,
)


def AddSkinnedQuadruped(
    plant: MultibodyPlant,
    name: str = "beetle",
    *,
    model_name: str | None = None,
    model_file: str | Path | None = None,
    params: SkeletonParams | None = None,
) -> ModelInstanceIndex:
    """Adds a skinned quad-robot skeleton to `plant` with its home pose as default state.

    Args:
        plant: a MultibodyPlant that is not finalized yet.
        name: "beetle", "monster", "lizard" or "cow".
        model_name: the model instance name (default: `name`), to add several copies.
        model_file: a user skeleton's generated SDF (with `params`) instead of a built-in's.
        params: the skeleton parameters of `model_file`.

    Returns:
        The model instance.
    """
    parser = Parser(plant)
    ConfigureParser(parser)
    if model_name is not None:
        parser.SetAutoRenaming(True)
    if model_file is not None:
        (instance,) = parser.AddModels(str(model_file))
    else:
        (instance,) = parser.AddModels(url=f"package://drakebots/{name}/{name}.sdf")
    if model_name is not None:
        plant.RenameModelInstance(instance, model_name)
    if params is None:
        params = LoadSkeletonParams(name)
    plant.SetDefaultFloatingBaseBodyPose(
        plant.GetBodyByName("torso", instance),
        RigidTransform([0.0, 0.0, HomeBaseHeight(params)]),
    )
    return instance


def FootBodyNames() -> list[str]:
    """Names of the four foot links (the same on every skeleton)."""
    return [f"{leg}_foot" for leg in LEG_NAMES]


@dataclasses.dataclass
class SkinnedQuadruped(Robot):
    """A skinned quad-robot skeleton (SI units)."""

    params: SkeletonParams = dataclasses.field(default_factory=SkeletonParams)
    # A user skeleton's generated SDF (robot files); empty for the built-in skeletons.
    model_file: str = ""

    def AddTo(self, plant: MultibodyPlant) -> ModelInstanceIndex:
        if self.model_file:
            return AddSkinnedQuadruped(
                plant, self.name, model_file=self.model_file, params=self.params
            )
        return AddSkinnedQuadruped(plant, self.name)

    def ExtraInfo(self, plant, context) -> dict:
        params = self.params
        kinds = JointKinds(params)
        return {
            "skeleton_mass": params.skeleton_mass,
            "skin_mass": params.skin_mass,
            "paper_size": list(params.paper_size),
            "motor": {
                "model": params.motor.model,
                "effort_limit": params.motor.effort_limit,
                "velocity_limit": params.motor.velocity_limit,
            },
            "joint_kinds": kinds,
            "feet": {
                name: np.asarray(points).tolist()
                for name, points in FootContactPoints(params).items()
            },
        }


def MakeRobot(name: str) -> SkinnedQuadruped:
    """Registry factory (drakebots.robots.GetRobot)."""
    if name not in BuiltinSkeletonNames():
        raise KeyError(name)
    params = LoadSkeletonParams(name)
    return SkinnedQuadruped(
        name=name,
        family="skinned_quadruped",
        description=params.description,
        base_body="torso",
        nominal_base_height=HomeBaseHeight(params),
        params=params,
    )


def MakeRobotFromSkeletonFile(
    skeleton: str | Path,
    *,
    name: str,
    description: str = "",
    model_directory: str | Path,
    source: str = "",
) -> SkinnedQuadruped:
    """A skinned quad-robot from a user's skeleton parameter file (robot files, issue 47).

    The skeleton's SDF is generated into `model_directory` as `<name>.sdf` (rewritten only when it
    changes), never into the package.

    Args:
        skeleton: the skeleton parameter YAML (the schema of `drakebots/skinned/skeletons/*.yaml`).
        name: the robot's name (the SDF's file stem).
        description: one line (default: the skeleton's).
        model_directory: the folder the SDF is written into (the robot file's).
        source: the robot file, for messages.

    Raises:
        InputError: a bad skeleton file (the loader names the key and the file), or one whose
            legs cannot reach the ground.
    """
    from drakebots.robots.robot_file import WriteTextIfChanged

    params = LoadSkeletonParams(Path(skeleton))
    sdf = MakeSkeletonSdf(params, source=str(skeleton))
    model_file = Path(model_directory) / f"{name}.sdf"
    WriteTextIfChanged(model_file, sdf)
    return SkinnedQuadruped(
        name=name,
        family="skinned_quadruped",
        description=description or params.description or f"skinned quad-robot from {source}",
        base_body="torso",
        nominal_base_height=HomeBaseHeight(params),
        params=params,
        model_file=str(model_file),
    )
