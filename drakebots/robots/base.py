"""The `Robot` description every robot family implements, and the facts `drakebots info` reports.

A `Robot` knows how to add itself to a MultibodyPlant with its home pose as the plant's default
state, what units it is written in, and its nominal standing height. Everything else about a robot
(gaits, actuators, loop constraints) lives in its family's module.
"""

import dataclasses
import math

import numpy as np
from pydrake.geometry import Box, Capsule, Cylinder, Ellipsoid, Mesh, Role, Sphere
from pydrake.math import RigidTransform
from pydrake.multibody.plant import AddMultibodyPlantSceneGraph, MultibodyPlant
from pydrake.multibody.tree import BodyIndex, ModelInstanceIndex
from pydrake.systems.framework import DiagramBuilder

SI_UNITS = {
    "length": "m",
    "mass": "kg",
    "time": "s",
    "force": "N",
    "torque": "N*m",
    "angle": "rad",
}


@dataclasses.dataclass
class Robot:
    """What every robot family provides. Subclasses override `AddTo` and may add more.

    Attributes:
        name: the registry name (`drakebots info NAME`).
        family: "skinned_quadruped", "hamr", "gecko", "voxel".
        description: one line.
        units: quantity -> unit symbol; SI except HAMR-VI (mm, ms, g).
        gravity: magnitude of gravity in the robot's units (9.81 m/s^2 or 9.81e-3 mm/ms^2).
        base_body: the name of the floating (root) body.
        nominal_base_height: height of the base body frame in the home pose (robot's units).
    """

    name: str
    family: str
    description: str
    units: dict = dataclasses.field(default_factory=lambda: dict(SI_UNITS))
    gravity: float = 9.81
    base_body: str = "torso"
    nominal_base_height: float = 0.0

    def AddTo(self, plant: MultibodyPlant) -> ModelInstanceIndex:
        """Adds the robot to `plant` (not finalized) and sets its home pose as the default."""
        raise NotImplementedError

    def num_loop_constraints(self) -> int:
        """Rows of the position-level loop-closure constraint c(q) = 0 (0 for tree robots)."""
        return 0

    def ExtraInfo(self, plant: MultibodyPlant, context) -> dict:
        """Family-specific facts for `drakebots info` (default: none)."""
        return {}


def _ShapePoints(shape) -> np.ndarray:
    """Points on a shape's surface whose bounding box is the shape's (geometry frame)."""
    if isinstance(shape, Box):
        half = 0.5 * np.array([shape.width(), shape.depth(), shape.height()])
        corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3)
        return corners * half
    if isinstance(shape, Sphere):
        r = shape.radius()
        return np.vstack([np.eye(3) * r, -np.eye(3) * r])
    if isinstance(shape, Ellipsoid):
        axes = np.diag([shape.a(), shape.b(), shape.c()])
        return np.vstack([axes, -axes])
    if isinstance(shape, (Cylinder, Capsule)):
        r, half = shape.radius(), 0.5 * shape.length()
        angles = np.linspace(0.0, 2.0 * math.pi, 25)[:-1]
        ring = np.column_stack([r * np.cos(angles), r * np.sin(angles), np.zeros_like(angles)])
        extra = r if isinstance(shape, Capsule) else 0.0
        return np.vstack(
            [
                ring + [0, 0, half],
                ring - [0, 0, half],
                [[0, 0, half + extra], [0, 0, -half - extra]],
            ]
        )
    if isinstance(shape, Mesh):
        hull = shape.GetConvexHull()
        return np.array([hull.vertex(i) for i in range(hull.num_vertices())])
    return np.zeros((0, 3))


def VisualBoundingBox(plant: MultibodyPlant, scene_graph, context, model_instance=None):
    """Axis-aligned bounding box (lower, upper) of the illustration geometry in the world frame.

    Args:
        plant: a finalized plant registered with `scene_graph`.
        context: the plant's context (positions give the pose).
        model_instance: restrict to this model instance's bodies (default: all but the world).
    """
    inspector = scene_graph.model_inspector()
    points = []
    bodies = (
        plant.GetBodyIndices(model_instance)
        if model_instance is not None
        else [BodyIndex(i) for i in range(1, plant.num_bodies())]
    )
    for body_index in bodies:
        body = plant.get_body(body_index)
        frame_id = plant.GetBodyFrameIdIfExists(body_index)
        if frame_id is None:
            continue
        X_WB = plant.EvalBodyPoseInWorld(context, body)
        for geometry_id in inspector.GetGeometries(frame_id, Role.kIllustration):
            X_BG = inspector.GetPoseInFrame(geometry_id)
            local = _ShapePoints(inspector.GetShape(geometry_id))
            if len(local):
                X_WG = X_WB @ RigidTransform(X_BG)
                points.append((X_WG.rotation().matrix() @ local.T).T + X_WG.translation())
    if not points:
        return np.zeros(3), np.zeros(3)
    all_points = np.vstack(points)
    return all_points.min(axis=0), all_points.max(axis=0)


def CollisionBoxCorners(plant: MultibodyPlant, scene_graph, body) -> np.ndarray:
    """The 8 corners (body frame) of the axis-aligned box, in `body`'s frame, that bounds its
    collision (proximity) geometry; (0, 3) when it has none. The box holds the geometry, so a
    corner above the ground keeps the whole body there (conservatively)."""
    inspector = scene_graph.model_inspector()
    frame_id = plant.GetBodyFrameIdIfExists(body.index())
    if frame_id is None:
        return np.zeros((0, 3))
    points = []
    for geometry_id in inspector.GetGeometries(frame_id, Role.kProximity):
        X_BG = RigidTransform(inspector.GetPoseInFrame(geometry_id))
        local = _ShapePoints(inspector.GetShape(geometry_id))
        if len(local):
            points.append((X_BG.rotation().matrix() @ local.T).T + X_BG.translation())
    if not points:
        return np.zeros((0, 3))
    points = np.vstack(points)
    lower, upper = points.min(axis=0), points.max(axis=0)
    corners = np.array(np.meshgrid([0, 1], [0, 1], [0, 1])).T.reshape(-1, 3)
    return lower + corners * (upper - lower)


@dataclasses.dataclass
class RobotModelDiagram:
    """A robot alone in a continuous MultibodyPlant with its SceneGraph (no ground, no
    controller), and a default Context of the diagram: for queries of its model and geometry."""

    diagram: object
    plant: MultibodyPlant
    scene_graph: object
    instance: ModelInstanceIndex
    context: object  # the diagram's
    plant_context: object


def MakeRobotModelDiagram(robot: Robot) -> RobotModelDiagram:
    """`robot` (anything with AddTo(plant) -> model instance) in a RobotModelDiagram."""
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlantSceneGraph(builder, time_step=0.0)
    instance = robot.AddTo(plant)
    plant.Finalize()
    diagram = builder.Build()
    context = diagram.CreateDefaultContext()
    return RobotModelDiagram(
        diagram, plant, scene_graph, instance, context, plant.GetMyContextFromRoot(context)
    )


def DescribeRobot(robot: Robot) -> dict:
    """The facts `drakebots info` reports; keys are stable (see docs in drakebots/cli/info.py)."""
    model = MakeRobotModelDiagram(robot)
    plant, instance, plant_context = model.plant, model.instance, model.plant_context
    lower, upper = VisualBoundingBox(plant, model.scene_graph, plant_context, instance)
    actuators = []
    for index in plant.GetJointActuatorIndices(instance):
        actuator = plant.get_joint_actuator(index)
        prismatic = "prismatic" in actuator.joint().type_name()
        actuators.append(
            {
                "name": actuator.name(),
                "joint": actuator.joint().name(),
                "effort_limit": float(actuator.effort_limit()),
                "effort_unit": robot.units["force" if prismatic else "torque"],
            }
        )
    joints = []
    for index in plant.GetJointIndices(instance):
        joint = plant.get_joint(index)
        if joint.num_positions() == 0:
            continue
        joints.append(
            {
                "name": joint.name(),
                "type": joint.type_name(),
                "position_lower": [float(x) for x in joint.position_lower_limits()],
                "position_upper": [float(x) for x in joint.position_upper_limits()],
            }
        )
    info = {
        "robot": robot.name,
        "family": robot.family,
        "description": robot.description,
        "units": dict(robot.units),
        "gravity": robot.gravity,
        "num_positions": int(plant.num_positions(instance)),
        "num_velocities": int(plant.num_velocities(instance)),
        "num_actuators": int(plant.num_actuators(instance)),
        "num_bodies": len(plant.GetBodyIndices(instance)),
        "num_joints": len(joints),
        "total_mass": float(plant.CalcTotalMass(plant_context, [instance])),
        "num_loop_constraints": int(robot.num_loop_constraints()),
        "base_body": robot.base_body,
        "nominal_base_height": float(robot.nominal_base_height),
        "bounding_box": {
            "lower": [float(x) for x in lower],
            "upper": [float(x) for x in upper],
            "size": [float(x) for x in upper - lower],
        },
        "actuators": actuators,
        "joints": joints,
    }
    info.update(robot.ExtraInfo(plant, plant_context))
    return info
