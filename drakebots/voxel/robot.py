"""The tripod-gait voxel robot (voxel-planes-of-motion.txt sec. 3) in a MultibodyPlant.

`AddVoxelTripod(plant)` parses the generated model (models/voxel_tripod/voxel_tripod.sdf, written
by scripts/generate_voxel_tripod.py from drakebots.voxel.tripod_model): one body per lattice node,
one LinearBushingRollPitchYaw per strut (stiffness matched to the frame element), one prismatic
joint with a PD-servoed actuator per linear actuator, and foot pads with friction (sticky at the
front). The home pose is the undeformed lattice standing on its four pads; the parser takes the
free bodies' default poses from the file.
"""

import dataclasses
import functools

import yaml
from pydrake.multibody.parsing import Parser
from pydrake.multibody.plant import DiscreteContactSolver, MultibodyPlant
from pydrake.multibody.tree import ModelInstanceIndex

from drakebots.models import ConfigureParser, FindModel
from drakebots.robots.base import Robot

MODEL_URL = "package://drakebots/voxel_tripod/voxel_tripod.sdf"
METADATA_URL = "package://drakebots/voxel_tripod/voxel_tripod.yaml"


@functools.cache
def TripodMetadata() -> dict:
    """The generated facts about the model: actuators, feet, markers, struts, base body (SI)."""
    return yaml.safe_load(FindModel(METADATA_URL).read_text())


def AddVoxelTripod(plant: MultibodyPlant, *, model_name: str | None = None) -> ModelInstanceIndex:
    """Adds the tripod-gait voxel robot to `plant` (not finalized) in its home pose.

    Args:
        plant: a MultibodyPlant that is not finalized yet.
        model_name: the model instance name (default "voxel_tripod").

    Returns:
        The model instance.
    """
    parser = Parser(plant)
    ConfigureParser(parser)
    if model_name is not None:
        parser.SetAutoRenaming(True)
    (instance,) = parser.AddModels(url=MODEL_URL)
    if model_name is not None:
        plant.RenameModelInstance(instance, model_name)
    if plant.time_step() > 0 and plant.get_discrete_contact_solver() == DiscreteContactSolver.kSap:
        # The struts' axial stiffness EA/L as compliant distance constraints (implicit in SAP).
        meta = TripodMetadata()
        for a, b in meta["struts"]:
            plant.AddDistanceConstraint(
                plant.GetBodyByName(a, instance),
                [0.0, 0.0, 0.0],
                plant.GetBodyByName(b, instance),
                [0.0, 0.0, 0.0],
                meta["strut_length"],
                meta["strut_axial_stiffness"],
                meta["strut_axial_damping"],
            )
    return instance


@dataclasses.dataclass
class VoxelTripod(Robot):
    """The tripod-gait voxel robot (SI units)."""

    def AddTo(self, plant: MultibodyPlant) -> ModelInstanceIndex:
        return AddVoxelTripod(plant)

    def ExtraInfo(self, plant, context) -> dict:
        meta = TripodMetadata()
        return {
            "pitch": meta["pitch"],
            "num_struts": len(meta["struts"]),
            "actuators_between": meta["actuators"],
            "feet": meta["feet"],
            "markers": meta["markers"],
        }


def MakeRobot(name: str) -> VoxelTripod:
    """Registry factory (drakebots.robots.GetRobot)."""
    if name != "voxel_tripod":
        raise KeyError(name)
    meta = TripodMetadata()
    return VoxelTripod(
        name=name,
        family="voxel",
        description="tripod-gait voxel robot: 2x2x2 core + 2 front voxels, 4 linear actuators",
        base_body=meta["base_body"],
        nominal_base_height=float(meta["nominal_base_height"]),
    )
