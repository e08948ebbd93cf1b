"""Robot files: a user's own robot, described in YAML, as a `Robot` like the registry's.

`LoadRobot(path)` reads a typed robot file and returns a `Robot` whose `AddTo(plant)` parses the
user's model with Drake's Parser, joins it to the world with the requested base, and sets the home
pose as the plant's default state. Every mistake in the file is an `InputError` that names the
key, the file and what is wrong (exit status 2 on the command line), raised before anything is
written.

The schema (keys other than these are refused):

```yaml
name: my_hopper                 # the robot's name (default: the file's stem)
description: "one line"         # optional
model: hopper.urdf              # URDF or SDF, relative to this file; package:// URIs work too
units: SI                       # SI (m, kg, s) or mm-ms-g (HAMR-VI's: mm, g, ms; force in N)
base: planar_xz                 # planar_xz | floating_rpy | fixed
base_body: torso                # optional: the model's root body (default: its only root)
contacts:                       # point contacts, each a body and a point in its frame ...
  - {body: foot, point: [0, 0, -0.05]}
# contacts: {from_collision: true}               # ... or the lowest points of the collision
# contacts: {from_collision: true, bodies: [foot]}  # geometry of the leaf bodies or of these
home: {hip: 0.3, knee: -0.6}    # joint positions (rad or length unit); the rest stay at zero
# For a model as published (drakebots.robots.published: package resolution, mesh conversion):
packages: {my_robot: ../my_robot_pkg}  # package:// NAME -> folder, relative to this file
srdf: package://my_robot/srdf/my_robot.srdf  # home pose from its group_state ...
srdf_state: standing            # ... of this name (default "standing"); `home` overrides joints
actuators: all                  # or [hip, knee]: an actuator on each one-dof joint lacking one
effort_limit: 2.7               # every actuator's effort limit (N*m or N) ...
effort_limits: {knee: 4.0}      # ... or per joint (> 0); none stated anywhere: infinite
joint_limits: {knee: [-2.0, 0.0]}  # [lower, upper] overriding the model's (lower < upper)
```

Published examples (example-robot-data's legged robots): ``scripts/examples/published/*.yaml``.

and, for a skinned quad-robot whose skeleton is not in the package:

```yaml
name: mybug
kind: skinned_quadruped
skeleton: mybug_skeleton.yaml   # semantic skeleton parameters (drakebots/skinned/skeletons/*.yaml)
```

whose SDF is generated into drakebots' cache (drakebots.cache), never beside the robot file nor
into the package.

Bases: `planar_xz` adds prismatic joints `base_x` and `base_z` and a revolute joint `base_pitch`
(about y) from the world to the root body (two massless intermediate bodies carry them), so
q = [x, z, pitch, model joints...]; every joint of the model must then move in the x-z plane.
`floating_rpy` adds a 6-dof `RpyFloatingJoint` named `base` (home keys `base_x`, `base_y`,
`base_roll`, `base_pitch`, `base_yaw` set it). `fixed` welds the root body to the world at the
origin. A model whose root is already joined to the world by a quaternion (or rpy) floating joint
has that joint replaced by the base; one welded or hinged to the world takes only `base: fixed`.

Home pose: the joints named in `home` take their values, the base x, pitch (and roll, yaw) theirs
(default 0), and the base height is found by settling: the lowest contact point touches z = 0.
Contacts are required for planar_xz and floating_rpy bases (a free robot stands on them).
`contacts: {from_collision: true}` takes, on each body (default: the leaf bodies), the lowest
point of its collision geometry at the home pose, over all its shapes (sphere, ellipsoid, box,
cylinder, capsule, mesh and convex: the mesh's vertices); where a face or edge is lowest, its
centre; where several shapes tie for lowest (a heel and a toe sphere), one point on each.

Actuators: a model's own (URDF <transmission>, SDF drake:actuator) stay; `actuators` adds the
others, with the joint's effort limit from `effort_limits`/`effort_limit`, else the model's
<limit effort>, else none (infinite: plots draw no band, PD gains scale with the weight, JSON
writes null).

Model checks (issue 68), each a one-line InputError naming the model and the link or joint: a
negative mass, a non-physical inertia on a link a moving joint carries, a massless moving subtree,
inverted joint limits, a link with two parent joints (drakebots.robots.published).
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import math
import os
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydrake.geometry import Box, Capsule, Convex, Cylinder, Ellipsoid, Mesh, Sphere
from pydrake.math import RigidTransform
from pydrake.multibody.parsing import Parser
from pydrake.multibody.plant import AddMultibodyPlantSceneGraph, MultibodyPlant
from pydrake.multibody.tree import (
    ModelInstanceIndex,
    PrismaticJoint,
    RevoluteJoint,
    RpyFloatingJoint,
    SpatialInertia,
)
from pydrake.systems.framework import DiagramBuilder

from drakebots.config import LoadTypedYaml, ReadYaml
from drakebots.errors import InputError
from drakebots.models import ConfigureParser
from drakebots.robots.base import SI_UNITS, Robot
from drakebots.robots.published import CheckMasses, CheckModelXml, PackageResolver, PrepareModel

# units key -> (quantity -> unit symbol, gravity magnitude in those units).
UNIT_SYSTEMS = {
    "SI": (dict(SI_UNITS), 9.81),
    "mm-ms-g": (
        {
            "length": "mm",
            "mass": "g",
            "time": "ms",
            "force": "N",
            "torque": "N*mm",
            "angle": "rad",
        },
        9.81e-3,
    ),
}
BASE_TYPES = ("planar_xz", "floating_rpy", "fixed")
# Robot length unit -> length units per metre.
_LENGTH_PER_METRE = {"m": 1.0, "mm": 1e3}
KINDS = ("model", "skinned_quadruped")
MODEL_SUFFIXES = (".urdf", ".sdf", ".xml")
ROBOT_FILE_SUFFIXES = (".yaml", ".yml")
PLANAR_BASE_JOINTS = ("base_x", "base_z", "base_pitch")
FLOATING_HOME_KEYS = ("base_roll", "base_pitch", "base_yaw", "base_x", "base_y")
# Robot kinds made by a wing: kind -> module, which defines MakeRobotFromSkeletonFile. The module
# is data, imported only when such a file is loaded, so this foundation never imports a wing.
_KIND_MODULES = {"skinned_quadruped": "drakebots.skinned.robot"}


@dataclass
class ContactPointSpec:
    """One point contact of a robot file."""

    # Name of the body (link) in the model that carries the point.
    body: str = ""
    # The point in the body's frame, in the robot's length unit.
    point: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])


@dataclass
class RobotFileSpec:
    """The typed contents of a robot file (see the module docstring for the meaning)."""

    # The robot's name (default: the file's stem).
    name: str = ""
    # One line for `drakebots info`.
    description: str = ""
    # "model" (a URDF/SDF model) or "skinned_quadruped" (a skeleton parameter file).
    kind: str = "model"
    # The URDF or SDF model, relative to the robot file, or a package:// URI.
    model: str = ""
    # kind skinned_quadruped: the skeleton parameter YAML, relative to the robot file.
    skeleton: str = ""
    # "SI" or "mm-ms-g".
    units: str = "SI"
    # "planar_xz", "floating_rpy" or "fixed".
    base: str = "planar_xz"
    # The model's root body (default: the only body that no joint of the model moves).
    base_body: str = ""
    # Point contacts (the mapping form {from_collision: true} is read separately).
    contacts: list[ContactPointSpec] = field(default_factory=list)
    # Joint name -> home position (rad for revolute joints, length unit for prismatic ones).
    home: dict[str, float] = field(default_factory=dict)
    # An SRDF (path relative to this file, or package:// URI) whose group_state `srdf_state`
    # gives the home pose of the joints `home` does not name (ROS packages ship one).
    srdf: str = ""
    # The SRDF's group_state that is the home pose.
    srdf_state: str = "standing"
    # Effort limit of every actuated joint that `effort_limits` does not name (None: the model's).
    effort_limit: float | None = None
    # package:// NAME -> folder, relative to the robot file (searched before anything else).
    packages: dict[str, str] = field(default_factory=dict)
    # Joint name -> effort limit (N*m or N, robot units), overriding the model's; > 0.
    effort_limits: dict[str, float] = field(default_factory=dict)
    # Joint name -> [lower, upper] position limits, overriding the model's; lower < upper.
    joint_limits: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class UserRobot(Robot):
    """A robot from a user's robot file (family "user"): a URDF/SDF model on a chosen base.

    Attributes (besides `Robot`'s):
        source: the robot file.
        model_file: the model's path or package:// URI, as the Parser takes it.
        base: "planar_xz", "floating_rpy" or "fixed".
        contacts: [(body name, point in the body frame)], robot units.
        home: joint name -> home position (base joints included where given).
    """

    source: str = ""
    model_file: str = ""
    base: str = "planar_xz"
    contacts: list = dataclasses.field(default_factory=list)
    home: dict = dataclasses.field(default_factory=dict)
    # The file the Parser reads (the model, or its copy in the cache with converted meshes).
    parse_file: str = ""
    # package NAME -> folder, for the Parser's PackageMap.
    packages: dict = dataclasses.field(default_factory=dict)
    # Joints that get an actuator where the model has none ("all": every one-dof joint).
    actuators: object = dataclasses.field(default_factory=list)
    # Joint name -> effort limit, and joint name -> (lower, upper), overriding the model's.
    effort_limits: dict = dataclasses.field(default_factory=dict)
    joint_limits: dict = dataclasses.field(default_factory=dict)
    # Effort limit of every actuator that `effort_limits` does not name (None: the model's).
    default_effort_limit: float | None = None
    # Joint name -> the model's own effort limit where it states one without an actuator (URDF).
    model_effort_limits: dict = dataclasses.field(default_factory=dict)

    def AddTo(self, plant: MultibodyPlant) -> ModelInstanceIndex:
        instance, _ = _AddModel(plant, self, base_height=self.nominal_base_height, quiet=True)
        return instance

    def ExtraInfo(self, plant, context) -> dict:
        return {
            "robot_file": self.source,
            "model": self.model_file,
            "base": self.base,
            "contacts": [
                {"body": body, "point": [float(x) for x in p]} for body, p in self.contacts
            ],
            "home": {name: float(value) for name, value in self.home.items()},
            "parsed_from": self.parse_file or self.model_file,
            "packages": dict(self.packages),
        }


def IsRobotFile(name_or_path: str | os.PathLike) -> bool:
    """True when `name_or_path` names a robot file: it ends in .yaml/.yml or is an existing file."""
    path = Path(name_or_path)
    return path.suffix.lower() in ROBOT_FILE_SUFFIXES or path.is_file()


def LoadRobot(path: str | os.PathLike) -> Robot:
    """The `Robot` described by a robot file (see the module docstring for the schema).

    Args:
        path: the robot file (YAML).

    Returns:
        A `UserRobot` (family "user"), or for `kind: skinned_quadruped` the skinned wing's robot
        (family "skinned_quadruped", as the registry's beetle), its SDF written beside the file.

    Raises:
        InputError: naming the key, the file and what is wrong; nothing is written then.
    """
    path = Path(path)
    source = str(path)
    raw = ReadYaml(path, source=source)
    if raw is None:
        raise InputError(f"{source}: empty robot file (it needs at least 'model')")
    if not isinstance(raw, dict):
        raise InputError(f"{source}: the top level must be a mapping, got {raw!r}")
    raw = dict(raw)
    collision = None
    if isinstance(raw.get("contacts"), dict):
        collision = _ReadCollisionContacts(raw.pop("contacts"), source)
    actuators = _ReadActuators(raw.pop("actuators", []), source)
    import yaml

    spec = LoadTypedYaml(RobotFileSpec, data=yaml.safe_dump(raw), source=source)
    raw["actuators"] = actuators
    spec.name = spec.name or path.stem
    if spec.kind not in KINDS:
        raise _Bad(source, "kind", f"unknown kind '{spec.kind}' (known: {', '.join(KINDS)})")
    if spec.kind == "skinned_quadruped":
        return _LoadSkinned(path, spec, raw, collision)
    return _LoadModelRobot(path, spec, raw, collision)


def _Bad(source: str, key: str, what: str) -> InputError:
    return InputError(f"{source}: key '{key}': {what}")


def _ReadCollisionContacts(data: dict, source: str) -> dict:
    """The mapping form of `contacts`: {from_collision: true, bodies: [...]}."""
    known = ("bodies", "from_collision")
    for key in data:
        if key not in known:
            raise InputError(
                f"{source}: unknown key 'contacts.{key}' (known keys here: {', '.join(known)})"
            )
    if data.get("from_collision") is not True:
        raise _Bad(
            source,
            "contacts.from_collision",
            f"must be true to take the lowest points of the model's collision shapes, got "
            f"{data.get('from_collision')!r} (or give contacts as a list of {{body, point}})",
        )
    bodies = data.get("bodies", [])
    if not isinstance(bodies, list) or not all(isinstance(b, str) for b in bodies):
        raise _Bad(source, "contacts.bodies", f"must be a list of body names, got {bodies!r}")
    return {"bodies": list(bodies)}


def _SrdfHome(path: Path, spec: RobotFileSpec, resolver) -> dict:
    """Joint name -> value of the one-value joints of the SRDF's group_state `spec.srdf_state`
    (the floating root's 7 values are the base's, found by settling instead)."""
    source = str(path)
    if spec.srdf.startswith("package://"):
        file = resolver.Resolve(spec.srdf, key="srdf", what="the SRDF")
    else:
        file = (path.parent / spec.srdf).resolve()
    if not file.is_file():
        raise _Bad(source, "srdf", f"file not found: {file}")
    try:
        root = ElementTree.parse(file).getroot()
    except ElementTree.ParseError as e:
        raise _Bad(source, "srdf", f"{file} is not XML ({e})") from None
    states = root.findall("group_state")
    chosen = [s for s in states if s.get("name") == spec.srdf_state]
    if not chosen:
        names = ", ".join(sorted({s.get("name", "") for s in states})) or "none"
        raise _Bad(
            source,
            "srdf_state",
            f"{file} has no group_state '{spec.srdf_state}' (its group_states: {names})",
        )
    home = {}
    for joint in chosen[0].findall("joint"):
        values = (joint.get("value") or "").split()
        if len(values) == 1:
            try:
                home[joint.get("name")] = float(values[0])
            except ValueError:
                raise _Bad(
                    source, "srdf", f"{file}: joint '{joint.get('name')}' value {values[0]!r}"
                ) from None
    return home


def _ReadActuators(value, source: str):
    """`actuators: all` or a list of joint names (default: none added)."""
    if value == "all":
        return "all"
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        return list(value)
    raise _Bad(source, "actuators", f"must be 'all' or a list of joint names, got {value!r}")


def _CheckLimits(spec: RobotFileSpec, source: str) -> None:
    """effort_limits > 0, joint_limits [lower, upper] finite with lower < upper."""
    for name, value in spec.effort_limits.items():
        if not value > 0.0 or math.isnan(value):
            raise _Bad(
                source, f"effort_limits.{name}", f"must be a positive effort limit, got {value}"
            )
    for name, value in spec.joint_limits.items():
        if len(value) != 2 or not all(math.isfinite(x) for x in value):
            raise _Bad(
                source,
                f"joint_limits.{name}",
                f"must be [lower, upper], two finite numbers, got {value}",
            )
        if not value[0] < value[1]:
            raise _Bad(
                source,
                f"joint_limits.{name}",
                f"lower {value[0]} must be less than upper {value[1]}",
            )


def _LoadSkinned(path: Path, spec: RobotFileSpec, raw: dict, collision) -> Robot:
    source = str(path)
    used = (
        sorted(
            key
            for key in (
                "model",
                "base",
                "base_body",
                "contacts",
                "home",
                "packages",
                "effort_limits",
                "joint_limits",
            )
            if key in raw
        )
        + (["actuators"] if raw.get("actuators") else [])
        + (["contacts"] if collision is not None else [])
    )
    if used:
        raise _Bad(
            source,
            used[0],
            "does not apply to kind skinned_quadruped (its skeleton file sets the model, base, "
            "contacts and home pose)",
        )
    if spec.units != "SI":
        raise _Bad(source, "units", "skinned quad-robots are in SI units")
    if not spec.skeleton:
        raise _Bad(source, "skeleton", "missing: kind skinned_quadruped needs a skeleton file")
    skeleton = path.parent / spec.skeleton
    if not skeleton.is_file():
        raise _Bad(source, "skeleton", f"file not found: {skeleton}")
    wing = importlib.import_module(_KIND_MODULES["skinned_quadruped"])
    return wing.MakeRobotFromSkeletonFile(
        skeleton,
        name=spec.name,
        description=spec.description,
        model_directory=path.parent,
        source=source,
    )


def _ResolveModel(path: Path, spec: RobotFileSpec, length_per_metre: float):
    """The model's file (a package:// URI resolved) and its PreparedModel (meshes converted)."""
    source = str(path)
    if not spec.model:
        raise _Bad(source, "model", "missing: give the URDF or SDF file of the robot")
    packages = {}
    for name, folder in spec.packages.items():
        resolved = (path.parent / folder).resolve()
        if not resolved.is_dir():
            raise _Bad(source, f"packages.{name}", f"folder not found: {resolved}")
        packages[name] = resolved
    resolver = PackageResolver(source=source, packages=packages)
    if spec.model.startswith("package://"):
        file = resolver.Resolve(spec.model, key="model", what="the model")
        if not file.is_file():
            raise _Bad(source, "model", f"file not found: {spec.model} ({file})")
    elif "://" in spec.model:
        raise _Bad(source, "model", f"'{spec.model}': only package:// URIs and paths are read")
    else:
        file = (path.parent / spec.model).resolve()
        if not file.is_file():
            raise _Bad(
                source,
                "model",
                f"file not found: {file} (the path is relative to the robot file's folder)",
            )
    if file.suffix.lower() not in MODEL_SUFFIXES:
        raise _Bad(
            source,
            "model",
            f"'{spec.model}' is not a URDF or SDF file ({', '.join(MODEL_SUFFIXES)})",
        )
    CheckModelXml(file, source)
    prepared = PrepareModel(file, resolver, length_per_metre=length_per_metre)
    return file, prepared, resolver


def _LoadModelRobot(path: Path, spec: RobotFileSpec, raw: dict, collision) -> Robot:
    source = str(path)
    if spec.units not in UNIT_SYSTEMS:
        raise _Bad(
            source, "units", f"unknown units '{spec.units}' (known: {', '.join(UNIT_SYSTEMS)})"
        )
    if spec.base not in BASE_TYPES:
        raise _Bad(source, "base", f"unknown base '{spec.base}' (known: {', '.join(BASE_TYPES)})")
    if "skeleton" in raw:
        raise _Bad(source, "skeleton", "applies only to kind skinned_quadruped")
    _CheckLimits(spec, source)
    units, gravity = UNIT_SYSTEMS[spec.units]
    file, prepared, resolver = _ResolveModel(path, spec, _LENGTH_PER_METRE[units["length"]])
    home = dict(spec.home)
    if spec.srdf:
        home = {**_SrdfHome(path, spec, resolver), **home}
    if spec.effort_limit is not None:
        if not spec.effort_limit > 0.0:
            raise _Bad(
                source, "effort_limit", f"must be a positive effort limit, got {spec.effort_limit}"
            )
    model = spec.model if spec.model.startswith("package://") else str(file)
    contacts = []
    for index, contact in enumerate(spec.contacts):
        if len(contact.point) != 3 or not all(math.isfinite(x) for x in contact.point):
            raise _Bad(
                source,
                f"contacts[{index}].point",
                f"must be three finite numbers [x, y, z], got {contact.point}",
            )
        if not contact.body:
            raise _Bad(source, f"contacts[{index}].body", "missing: name the body of the point")
        contacts.append((contact.body, np.array(contact.point, dtype=float)))
    if spec.base != "fixed" and collision is None and not contacts:
        raise _Bad(
            source,
            "contacts",
            f"a robot on a '{spec.base}' base needs contacts to stand on and none are given; "
            "list them as [{body: NAME, point: [x, y, z]}, ...] or write "
            "'contacts: {from_collision: true}'",
        )
    for name, value in spec.home.items():
        if not math.isfinite(value):
            raise _Bad(source, f"home.{name}", f"must be a finite number, got {value}")
    robot = UserRobot(
        name=spec.name,
        family="user",
        description=spec.description or f"robot file {path.name} ({Path(model).name})",
        units=dict(units),
        gravity=gravity,
        base_body=spec.base_body,
        source=source,
        model_file=model,
        base=spec.base,
        contacts=contacts,
        home=home,
        default_effort_limit=spec.effort_limit,
        parse_file=str(prepared.parse_file),
        packages={name: str(folder) for name, folder in prepared.packages.items()},
        actuators=raw.get("actuators", []),
        effort_limits=dict(spec.effort_limits),
        joint_limits={name: tuple(value) for name, value in spec.joint_limits.items()},
        model_effort_limits=ModelEffortLimits(file),
    )
    # A probe plant checks the model against the file and settles the base height.
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlantSceneGraph(builder, time_step=0.0)
    instance, root = _AddModel(plant, robot, base_height=0.0)
    robot.base_body = root
    plant.Finalize()
    context = plant.CreateDefaultContext()
    if spec.base == "planar_xz":
        _CheckPlanar(plant, context, instance, source)
    if collision is not None:
        robot.contacts = _CollisionContacts(
            plant, scene_graph, context, instance, collision["bodies"], source
        )
        if spec.base != "fixed" and not robot.contacts:
            raise _Bad(
                source,
                "contacts.from_collision",
                "the model has no collision geometry on those bodies",
            )
    for index, (body, _) in enumerate(robot.contacts):
        if not plant.HasBodyNamed(body, instance):
            known = ", ".join(plant.get_body(b).name() for b in plant.GetBodyIndices(instance))
            raise _Bad(
                source,
                f"contacts[{index}].body",
                f"the model has no body '{body}' (its bodies: {known})",
            )
    world = plant.world_frame()
    root_body = plant.GetBodyByName(root, instance)
    if spec.base == "fixed" or not robot.contacts:
        robot.nominal_base_height = float(
            plant.EvalBodyPoseInWorld(context, root_body).translation()[2]
        )
        return robot
    lowest = min(
        float(
            plant.CalcPointsPositions(
                context, plant.GetBodyByName(body, instance).body_frame(), point, world
            )[2, 0]
        )
        for body, point in robot.contacts
    )
    robot.nominal_base_height = -lowest
    return robot


def _Roots(plant: MultibodyPlant, instance: ModelInstanceIndex) -> list:
    """The model's bodies that no joint of the model (or to the world) moves, as joints stand."""
    children = {plant.get_joint(j).child_body().index() for j in plant.GetJointIndices(instance)}
    return [plant.get_body(b) for b in plant.GetBodyIndices(instance) if b not in children]


def _AddModel(plant: MultibodyPlant, robot: UserRobot, *, base_height: float, quiet=False):
    """Parses the model, adds the base, sets the home pose. Returns (instance, root body name)."""
    source = robot.source
    parser = Parser(plant)
    ConfigureParser(parser)
    package_map = parser.package_map()
    for name, folder in robot.packages.items():
        if not package_map.Contains(name):
            package_map.Add(name, folder)
    # Drake's warnings about the model (published ones have several) are shown once, when the
    # robot file is loaded; the plants built from it afterwards parse it quietly.
    drake_log = logging.getLogger("drake")
    level = drake_log.level
    if quiet:
        drake_log.setLevel(logging.ERROR)
    try:
        instances = parser.AddModels(robot.parse_file or robot.model_file)
    except Exception as e:  # noqa: BLE001 - Drake's parser names the line that is wrong.
        message = " ".join(str(e).split())
        raise _Bad(source, "model", f"Drake cannot parse {robot.model_file}: {message}") from None
    finally:
        drake_log.setLevel(level)
    if len(instances) != 1:
        raise _Bad(source, "model", f"{robot.model_file} holds {len(instances)} models, not one")
    (instance,) = instances
    CheckMasses(plant, instance, source, robot.model_file)
    _ApplyActuatorsAndLimits(plant, instance, robot)
    world = plant.world_body()
    if robot.units != SI_UNITS:
        plant.mutable_gravity_field().set_gravity_vector([0.0, 0.0, -robot.gravity])
    # Joints from the world in the model: floating ones are replaced by the base, others fix it.
    fixed_root = None
    for index in list(plant.GetJointIndices(instance)):
        joint = plant.get_joint(index)
        if joint.parent_body().index() != world.index():
            continue
        if joint.type_name() in ("quaternion_floating", "rpy_floating"):
            plant.RemoveJoint(joint)
        elif robot.base != "fixed":
            raise _Bad(
                source,
                "base",
                f"the model joins '{joint.child_body().name()}' to the world with its "
                f"{joint.type_name()} joint '{joint.name()}', so it cannot take a "
                f"'{robot.base}' base; use 'base: fixed' or remove that joint from the model",
            )
        else:
            fixed_root = joint.child_body().name()
    if fixed_root is not None:
        _SetHome(plant, instance, robot)
        return instance, fixed_root
    roots = _Roots(plant, instance)
    if robot.base_body:
        if not plant.HasBodyNamed(robot.base_body, instance):
            raise _Bad(source, "base_body", f"the model has no body '{robot.base_body}'")
        root = plant.GetBodyByName(robot.base_body, instance)
        if root.index() not in [r.index() for r in roots]:
            raise _Bad(source, "base_body", f"'{robot.base_body}' is not a root of the model")
        others = [r.name() for r in roots if r.index() != root.index()]
    else:
        if not roots:
            raise _Bad(source, "model", "the model has no root body")
        root, others = roots[0], [r.name() for r in roots[1:]]
    if others:
        raise _Bad(
            source,
            "model",
            f"the model is not one tree: bodies {', '.join([root.name()] + others)} are each "
            "unattached; join them with joints in the model",
        )
    _AddBase(plant, instance, root, robot, base_height)
    _SetHome(plant, instance, robot)
    return instance, root.name()


def ModelEffortLimits(model_file) -> dict:
    """Joint name -> the effort limit a URDF (<limit effort>) or SDF (<axis><limit><effort>)
    states, for the joints that state a positive one (read with ElementTree, not Drake, because
    Drake keeps it only for joints with a transmission)."""
    try:
        root = ElementTree.parse(model_file).getroot()
    except (ElementTree.ParseError, OSError):
        return {}
    limits = {}
    for joint in root.iter("joint"):
        name = joint.get("name")
        text = None
        limit = joint.find("limit")
        if limit is not None:
            text = limit.get("effort")
        else:
            text = joint.findtext("axis/limit/effort")
        try:
            value = float(text) if text is not None else 0.0
        except ValueError:
            continue
        if name and value > 0.0 and math.isfinite(value):
            limits[name] = value
    return limits


def _ApplyActuatorsAndLimits(plant, instance, robot: UserRobot) -> None:
    """The robot file's `actuators`, `effort_limits` and `joint_limits` on the parsed model."""
    source = robot.source
    one_dof = {
        plant.get_joint(j).name(): plant.get_joint(j)
        for j in plant.GetJointIndices(instance)
        if plant.get_joint(j).num_velocities() == 1
    }
    actuated = {}
    for index in plant.GetJointActuatorIndices():
        actuator = plant.get_joint_actuator(index)
        if actuator.model_instance() == instance:
            actuated[actuator.joint().name()] = actuator

    def Known() -> str:
        return ", ".join(one_dof) or "none"

    wanted = list(one_dof) if robot.actuators == "all" else list(robot.actuators)
    for index, name in enumerate(wanted):
        if name not in one_dof:
            raise _Bad(
                source,
                f"actuators[{index}]",
                f"the model has no one-dof joint '{name}' (its one-dof joints: {Known()})",
            )
        if name in actuated:
            continue
        limit = robot.effort_limits.get(name, robot.model_effort_limits.get(name, math.inf))
        actuated[name] = plant.AddJointActuator(name, one_dof[name], limit)
    for name, limit in robot.effort_limits.items():
        if name not in actuated:
            raise _Bad(
                source,
                f"effort_limits.{name}",
                f"joint '{name}' has no actuator (actuated joints: "
                f"{', '.join(actuated) or 'none'}; add it to 'actuators')",
            )
        actuated[name].set_effort_limit(float(limit))
    if robot.default_effort_limit is not None:
        for name, actuator in actuated.items():
            if name not in robot.effort_limits:
                actuator.set_effort_limit(float(robot.default_effort_limit))
    for name, (lower, upper) in robot.joint_limits.items():
        if name not in one_dof:
            raise _Bad(
                source,
                f"joint_limits.{name}",
                f"the model has no one-dof joint '{name}' (its one-dof joints: {Known()})",
            )
        one_dof[name].set_position_limits([lower], [upper])


def _AddBase(plant, instance, root, robot: UserRobot, base_height: float) -> None:
    world_frame = plant.world_frame()
    home = robot.home
    if robot.base == "fixed":
        plant.WeldFrames(world_frame, root.body_frame(), RigidTransform())
    elif robot.base == "planar_xz":
        massless = SpatialInertia.Zero()
        x_link = plant.AddRigidBody("base_x_link", instance, massless)
        z_link = plant.AddRigidBody("base_z_link", instance, massless)
        x = plant.AddJoint(
            PrismaticJoint("base_x", world_frame, x_link.body_frame(), [1.0, 0.0, 0.0])
        )
        z = plant.AddJoint(
            PrismaticJoint("base_z", x_link.body_frame(), z_link.body_frame(), [0.0, 0.0, 1.0])
        )
        pitch = plant.AddJoint(
            RevoluteJoint("base_pitch", z_link.body_frame(), root.body_frame(), [0.0, 1.0, 0.0])
        )
        x.set_default_translation(home.get("base_x", 0.0))
        z.set_default_translation(base_height)
        pitch.set_default_angle(home.get("base_pitch", 0.0))
    else:
        joint = plant.AddJoint(RpyFloatingJoint("base", world_frame, root.body_frame()))
        joint.set_default_angles(
            [home.get(k, 0.0) for k in ("base_roll", "base_pitch", "base_yaw")]
        )
        joint.set_default_translation(
            [home.get("base_x", 0.0), home.get("base_y", 0.0), base_height]
        )


def _SetHome(plant, instance, robot: UserRobot) -> None:
    base_keys = {
        "planar_xz": ("base_x", "base_pitch"),
        "floating_rpy": FLOATING_HOME_KEYS,
        "fixed": (),
    }[robot.base]
    for name, value in robot.home.items():
        if name in base_keys:
            continue
        if name in ("base_z", "base"):
            raise _Bad(
                robot.source, f"home.{name}", "the base height is found by settling, not set"
            )
        if not plant.HasJointNamed(name, instance):
            known = [
                plant.get_joint(j).name()
                for j in plant.GetJointIndices(instance)
                if plant.get_joint(j).num_positions() == 1
            ]
            raise _Bad(
                robot.source,
                f"home.{name}",
                f"the model has no joint '{name}' (its one-coordinate joints: "
                f"{', '.join(known) or 'none'}; base: {', '.join(base_keys) or 'none'})",
            )
        joint = plant.GetJointByName(name, instance)
        if joint.num_positions() != 1:
            raise _Bad(
                robot.source,
                f"home.{name}",
                f"joint '{name}' has {joint.num_positions()} coordinates; home sets one-coordinate "
                "joints",
            )
        joint.set_default_positions([value])


def _CheckPlanar(plant, context, instance, source: str) -> None:
    """Every joint of the model must move in the x-z plane (revolute about y, prismatic in x-z)."""
    y = np.array([0.0, 1.0, 0.0])
    for index in plant.GetJointIndices(instance):
        joint = plant.get_joint(index)
        if joint.num_velocities() == 0 or joint.name() in PLANAR_BASE_JOINTS:
            continue
        R_WF = joint.frame_on_parent().CalcPoseInWorld(context).rotation().matrix()
        if isinstance(joint, RevoluteJoint):
            axis = R_WF @ joint.revolute_axis()
            ok = np.linalg.norm(np.cross(axis, y)) < 1e-6
        elif isinstance(joint, PrismaticJoint):
            ok = abs(R_WF @ joint.translation_axis() @ y) < 1e-6
        else:
            ok = False
        if not ok:
            raise _Bad(
                source,
                "base",
                f"the model cannot take a 'planar_xz' base: its {joint.type_name()} joint "
                f"'{joint.name()}' moves out of the x-z plane (planar robots need revolute joints "
                "about y and prismatic joints in x-z); use 'base: floating_rpy'",
            )


def LowestPoint(shape, down_G: np.ndarray) -> np.ndarray | None:
    """The lowest point of a shape (its geometry frame G) along the unit direction `down_G`.

    Where a face or an edge is lowest (a box standing flat, an upright cylinder), the centre of
    that face or edge. Sphere, ellipsoid, box, cylinder, capsule: analytic; mesh and convex: the
    vertices of Drake's convex hull of the mesh file (scale applied). None for other shapes.
    """
    d = np.asarray(down_G, dtype=float)
    eps = 1e-9

    def Sign(x):
        return np.where(np.abs(x) > eps, np.sign(x), 0.0)

    if isinstance(shape, Sphere):
        return shape.radius() * d
    if isinstance(shape, Ellipsoid):
        axes = np.array([shape.a(), shape.b(), shape.c()])
        return axes**2 * d / np.linalg.norm(axes * d)
    if isinstance(shape, Box):
        return 0.5 * np.array([shape.width(), shape.depth(), shape.height()]) * Sign(d)
    if isinstance(shape, (Cylinder, Capsule)):
        r, half = shape.radius(), 0.5 * shape.length()
        if isinstance(shape, Capsule):
            return np.array([0.0, 0.0, half * Sign(d[2])]) + r * d
        radial = np.array([d[0], d[1], 0.0])
        norm = np.linalg.norm(radial)
        rim = r * radial / norm if norm > eps else np.zeros(3)
        return rim + [0.0, 0.0, half * Sign(d[2])]
    if isinstance(shape, (Mesh, Convex)):
        hull = shape.GetConvexHull()
        vertices = np.array([hull.vertex(i) for i in range(hull.num_vertices())])
        heights = vertices @ d
        size = max(float(np.ptp(vertices, axis=0).max()), 1e-12)
        lowest = vertices[heights >= heights.max() - 1e-6 * size]
        return lowest.mean(axis=0)
    return None


def _CollisionContacts(plant, scene_graph, context, instance, bodies, source: str) -> list:
    """The lowest points (home pose) of the collision geometries of the feet (leaf bodies) or of
    `bodies`, in their body frames: per body, the lowest point of its lowest shape (see
    LowestPoint), one per shape where several tie for lowest."""
    inspector = scene_graph.model_inspector()
    if bodies:
        for index, name in enumerate(bodies):
            if not plant.HasBodyNamed(name, instance):
                raise _Bad(source, f"contacts.bodies[{index}]", f"the model has no body '{name}'")
        chosen = [plant.GetBodyByName(name, instance) for name in bodies]
    else:
        parents = {
            plant.get_joint(j).parent_body().index() for j in plant.GetJointIndices(instance)
        }
        chosen = [plant.get_body(b) for b in plant.GetBodyIndices(instance) if b not in parents]
    contacts = []
    for body in chosen:
        R_WB = plant.EvalBodyPoseInWorld(context, body).rotation().matrix()
        down_B = R_WB.T @ np.array([0.0, 0.0, -1.0])
        points = []
        for geometry in plant.GetCollisionGeometriesForBody(body):
            X_BG = inspector.GetPoseInFrame(geometry)
            R_BG = X_BG.rotation().matrix()
            point_G = LowestPoint(inspector.GetShape(geometry), R_BG.T @ down_B)
            if point_G is not None:
                points.append(X_BG.translation() + R_BG @ point_G)
        if points:
            # The body's lowest shapes only (a foot's sphere, not the cylinder "adapter" 3.5 cm
            # above it); shapes tied for lowest each keep their point (a flat foot's heel and
            # toe spheres are two contacts: one between them could not hold the foot's pitch).
            points = np.array(points)
            depth = points @ down_B
            lowest = points[depth >= depth.max() - 1e-9]
            for point in np.unique(np.round(lowest, 12), axis=0):
                contacts.append((body.name(), point))
    return contacts
