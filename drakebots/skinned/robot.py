"""The skinned quad-robots' skeletons: beetle, monster, lizard and cow (skinned-quad-robots.txt).

`AddSkinnedQuadruped(plant, "beetle")` adds the generated SDF model (models/<name>/<name>.sdf,
see drakebots.skinned.skeleton; a user skeleton's SDF is generated into drakebots' cache) with
its home pose as the plant's default state: every joint at zero and the torso at the height
where the soles touch the ground.
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
    # The robot file it came from (summary.json's robot_file, which `drakebots view` reloads);
    # empty for the built-in skeletons.
    source: str = ""

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


# The version of the SDF that MakeSkeletonSdf writes, part of a generated SDF's cache key: raise
# it when the generator's output changes for the same skeleton file.
SKELETON_SDF_VERSION = 1


def MakeRobotFromSkeletonFile(
    skeleton: str | Path,
    *,
    name: str,
    description: str = "",
    model_directory: str | Path | None = None,
    source: str = "",
) -> SkinnedQuadruped:
    """A skinned quad-robot from a user's skeleton parameter file (robot files, issue 47).

    The skeleton's SDF is generated into drakebots' cache (drakebots.cache.CacheEntry, keyed by
    the skeleton file's contents and the generator's version), never beside the user's files: a
    `myrobot.sdf` of the user's own next to the robot file is never touched (issue 68), and a
    `name:` holding a path is used as a name only (SafeName).

    Args:
        skeleton: the skeleton parameter YAML (the schema of `drakebots/skinned/skeletons/*.yaml`).
        name: the robot's name (the SDF's file stem, made a single file-name component).
        description: one line (default: the skeleton's).
        model_directory: ignored (kept so that older callers still work; the SDF goes to the
            cache).
        source: the robot file, for messages.

    Raises:
        InputError: a bad skeleton file (the loader names the key and the file), or one whose
            legs cannot reach the ground.
    """
    import drakebots
    from drakebots.cache import CacheEntry, SafeName, WriteCacheFile

    del model_directory
    skeleton = Path(skeleton)
    params = LoadSkeletonParams(skeleton)
    sdf = MakeSkeletonSdf(params, source=str(skeleton))
    stem = SafeName(name)
    entry = CacheEntry(
        "skinned_sdf",
        (skeleton.read_bytes(), SKELETON_SDF_VERSION, drakebots.__version__, sdf),
        name=stem,
    )
    model_file = entry / f"{stem}.sdf"
    WriteCacheFile(model_file, sdf)
    return SkinnedQuadruped(
        name=name,
        family="skinned_quadruped",
        description=description or params.description or f"skinned quad-robot from {source}",
        base_body="torso",
        nominal_base_height=HomeBaseHeight(params),
        params=params,
        model_file=str(model_file),
        source=str(source),
    )
