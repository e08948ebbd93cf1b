"""`drakebots.Simulate` (`drakebots simulate ROBOT.yaml`) for a user's robot file of kind `model`.

The robot (drakebots.robots.robot_file.UserRobot) stands, or is dropped with `drop_height`, on a
flat ground in a discrete MultibodyPlant (SAP, point contact):

    home pose -> MultibodyPlant (SAP) <-> SceneGraph -> [Meshcat]
                     |-> state, net actuation, contact results -> loggers

Contacts: what Drake collides is the model's collision geometry. A listed contact point that lies
on none of its body's collision geometry gets a small collision sphere whose lowest point (home
pose) is that point, so the file's contacts are the ones that touch the ground.

A robot without actuators on a free base falls limp: the summary says so in `warning`.
Collisions within the robot are filtered (it touches the ground only).

Actuators hold the home pose with the plant's own PD (SAP treats it implicitly and clamps it at the
effort limit). An actuator without gains in the model gets kp = effort limit / 0.1 (full effort
at 0.1 rad, or 0.1 length unit, of error; 10 m g of the robot per unit of error when the limit is
infinite) and kd = 0.03 s * kp.

The run succeeds when the state stays finite and, on a free base, the base settles within 10 % of
its home height (after the fall and 0.3 s). Figures: the weight m g, the ground's normal force at
the end and their ratio (a robot at rest on the ground carries its weight: ratio 1).
"""

import dataclasses

import numpy as np

from drakebots.errors import InputError

OPTIONS = {"drop_height", "ground_friction"}

# Default plant step and log period, s.
DEFAULT_TIME_STEP_S = 1e-3
DEFAULT_LOG_PERIOD_S = 5e-3


def _TimeScale(robot) -> float:
    """Robot time units per second (1000 for mm-ms-g)."""
    return {"s": 1.0, "ms": 1e3}[robot.units.get("time", "s")]


def _LengthScale(robot) -> float:
    """Robot length units per metre."""
    return {"m": 1.0, "mm": 1e3}[robot.units.get("length", "m")]


@dataclasses.dataclass
class UserDiagram:
    """Handles of a built diagram of a user robot on the ground."""

    diagram: object
    plant: object
    scene_graph: object
    instance: object
    logs: object
    added_spheres: list


def _UncoveredContacts(robot) -> list:
    """Indices of the robot's contacts that lie on none of their body's collision geometry."""
    from drakebots.robots.base import MakeRobotModelDiagram

    model = MakeRobotModelDiagram(robot)
    plant, scene_graph, instance = model.plant, model.scene_graph, model.instance
    plant_context = model.plant_context
    query = scene_graph.get_query_output_port().Eval(
        scene_graph.GetMyContextFromRoot(model.context)
    )
    inspector = scene_graph.model_inspector()
    tolerance = 1e-3 * max(robot.nominal_base_height, 1e-6)
    uncovered = []
    for index, (name, point) in enumerate(robot.contacts):
        body = plant.GetBodyByName(name, instance)
        p_W = plant.CalcPointsPositions(
            plant_context, body.body_frame(), point, plant.world_frame()
        )[:, 0]
        try:
            distances = query.ComputeSignedDistanceToPoint(p_W, tolerance)
        except RuntimeError:  # A shape Drake cannot measure from a point (a mesh): add a sphere.
            distances = []
        on_body = [
            d
            for d in distances
            if plant.GetBodyFromFrameId(inspector.GetFrameId(d.id_G)).index() == body.index()
            and abs(d.distance) <= tolerance
        ]
        if not on_body:
            uncovered.append(index)
    return uncovered


def MakeUserDiagram(
    robot,
    *,
    time_step: float,
    log_period: float,
    ground_friction: float = 0.8,
    drop_height: float = 0.0,
    meshcat=None,
    command=None,
) -> UserDiagram:
    """The diagram of `robot` (a UserRobot) on flat ground, holding its home pose.

    Args:
        time_step, log_period, drop_height: in the robot's units.
        command: None (the actuators' PD holds the home pose), or f(builder, plant, instance)
            that connects the plant's desired-state (and, if it wants, actuation) input ports
            itself, e.g. a planned trajectory (drakebots.optimization.legged_report.Resimulate).
    """
    from pydrake.geometry import AddContactMaterial, ProximityProperties, Sphere
    from pydrake.math import RigidTransform
    from pydrake.multibody.plant import (
        AddMultibodyPlant,
        CoulombFriction,
        MultibodyPlant,
        MultibodyPlantConfig,
    )
    from pydrake.multibody.tree import PdControllerGains
    from pydrake.systems.framework import DiagramBuilder
    from pydrake.systems.primitives import ConstantVectorSource

    from drakebots.systems.ground import AddGround
    from drakebots.systems.simulation import AddMultibodyPlantLogs

    uncovered = _UncoveredContacts(robot) if robot.base != "fixed" else []
    placed = dataclasses.replace(robot, nominal_base_height=robot.nominal_base_height + drop_height)
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlant(
        MultibodyPlantConfig(
            time_step=time_step, discrete_contact_approximation="sap", contact_model="point"
        ),
        builder,
    )
    instance = placed.AddTo(plant)
    AddGround(
        plant,
        mu_static=ground_friction,
        mu_dynamic=ground_friction,
        size=20.0 * _LengthScale(robot),
        thickness=_LengthScale(robot),
    )
    # Small spheres at the listed contacts no collision geometry carries (radius: 1 % of the
    # home height), their lowest point at the contact in the home pose.
    added = []
    if uncovered:
        kinematics = MultibodyPlant(0.0)
        robot.AddTo(kinematics)
        kinematics.Finalize()
        home_context = kinematics.CreateDefaultContext()
        radius = 0.01 * max(robot.nominal_base_height, 1e-6)
        for index in uncovered:
            name, point = robot.contacts[index]
            R_WB = (
                kinematics.EvalBodyPoseInWorld(home_context, kinematics.GetBodyByName(name))
                .rotation()
                .matrix()
            )
            up_B = R_WB.T @ np.array([0.0, 0.0, 1.0])
            properties = ProximityProperties()
            AddContactMaterial(
                friction=CoulombFriction(ground_friction, ground_friction), properties=properties
            )
            geometry_name = f"contact_{index}"
            plant.RegisterCollisionGeometry(
                plant.GetBodyByName(name, instance),
                RigidTransform(np.asarray(point) + radius * up_B),
                Sphere(radius),
                geometry_name,
                properties,
            )
            added.append(geometry_name)
    # (Before Finalize, GetJointActuatorIndices(instance) lists none: filter all of them.)
    for index in plant.GetJointActuatorIndices():
        actuator = plant.get_mutable_joint_actuator(index)
        if actuator.model_instance() != instance or actuator.has_controller():
            continue
        limit = actuator.effort_limit()
        kp = limit / 0.1 if np.isfinite(limit) else 10.0 * _Weight(plant, robot, instance)
        actuator.set_controller_gains(PdControllerGains(p=kp, d=0.03 * _TimeScale(robot) * kp))
    plant.Finalize()
    # The robot touches the ground only: its links' collision geometry overlaps where the model's
    # authors filter it in an SRDF (published models' meshes do, e.g. Solo-12's base and thighs).
    from pydrake.geometry import CollisionFilterDeclaration, GeometrySet

    robot_geometries = GeometrySet(
        [
            geometry
            for body in plant.GetBodyIndices(instance)
            for geometry in plant.GetCollisionGeometriesForBody(plant.get_body(body))
        ]
    )
    scene_graph.collision_filter_manager().Apply(
        CollisionFilterDeclaration().ExcludeWithin(robot_geometries)
    )
    logs = AddMultibodyPlantLogs(builder, plant, log_period)
    actuated = [
        plant.get_joint_actuator(index).joint() for index in plant.GetJointActuatorIndices(instance)
    ]
    if command is not None:
        command(builder, plant, instance)
    elif actuated:
        context = plant.CreateDefaultContext()
        q_home = [joint.GetOnePosition(context) for joint in actuated]
        desired = builder.AddSystem(
            ConstantVectorSource(np.concatenate([q_home, np.zeros(len(actuated))]))
        )
        desired.set_name("home_pose")
        builder.Connect(desired.get_output_port(), plant.get_desired_state_input_port(instance))
    if meshcat is not None:
        from pydrake.visualization import AddDefaultVisualization

        AddDefaultVisualization(builder, meshcat=meshcat)
    diagram = builder.Build()
    return UserDiagram(diagram, plant, scene_graph, instance, logs, added)


def _Weight(plant, robot, instance) -> float:
    """m g of the robot (plant not finalized: its bodies' default masses)."""
    mass = sum(plant.get_body(b).default_mass() for b in plant.GetBodyIndices(instance))
    return mass * robot.gravity


def _BaseHeight(plant, robot, positions: np.ndarray) -> np.ndarray:
    if robot.base == "planar_xz":
        return positions[:, plant.GetJointByName("base_z").position_start()]
    if robot.base == "floating_rpy":
        return positions[:, plant.GetJointByName("base").position_start() + 5]
    return np.full(len(positions), robot.nominal_base_height)


def Simulate(scenario, robot, *, meshcat=None, progress=None):
    from pydrake.systems.analysis import Simulator

    from drakebots.systems.simulate import SimulationOutcome
    from drakebots.systems.simulation import AdvanceWithProgress, SimulationLog

    if robot.family != "user":
        raise InputError(f"robot '{robot.name}' is not a robot file of kind model")
    if scenario.drop_height < 0.0:
        raise InputError(f"--drop-height must be >= 0 m, got {scenario.drop_height}")
    if scenario.drop_height and robot.base == "fixed":
        raise InputError(
            f"--drop-height does not apply to robot '{robot.name}' (its base is fixed)"
        )
    if not scenario.ground_friction > 0.0:
        raise InputError(f"--ground-friction must be > 0, got {scenario.ground_friction}")
    scale = _TimeScale(robot)
    handles = MakeUserDiagram(
        robot,
        time_step=(scenario.time_step or DEFAULT_TIME_STEP_S) * scale,
        log_period=(scenario.log_period or DEFAULT_LOG_PERIOD_S) * scale,
        ground_friction=scenario.ground_friction,
        drop_height=scenario.drop_height * _LengthScale(robot),
        meshcat=meshcat,
    )
    simulator = Simulator(handles.diagram)
    simulator.Initialize()
    wall = AdvanceWithProgress(
        simulator, scenario.duration * scale, progress=progress, label=f"simulate {robot.name}"
    )
    times, x, actuation, contact = handles.logs.Read(simulator.get_context())
    plant = handles.plant
    nq = plant.num_positions()
    log = SimulationLog.FromPlant(
        robot.name, plant, times, x, actuation, contact, _BaseHeight(plant, robot, x[:, :nq]), wall
    )
    figures = log.Summary()
    context = plant.CreateDefaultContext()
    weight = float(plant.CalcTotalMass(context, [handles.instance])) * robot.gravity
    tail = log.times >= log.times[-1] - 0.1 * (log.times[-1] - log.times[0])
    force_end = float(np.mean(log.contact[tail, 2]))
    nominal = robot.nominal_base_height
    summary = {
        "nominal_base_height": nominal,
        "base_height_drift": figures["base_height_end"] - nominal,
        "weight": weight,
        "ground_force_end": force_end,
        "ground_force_over_weight_end": force_end / weight if weight > 0 else 0.0,
        "added_contact_spheres": handles.added_spheres,
    }
    if plant.num_actuators(handles.instance) == 0 and robot.base != "fixed":
        summary["warning"] = (
            f"robot '{robot.name}' has no actuators: nothing holds its home pose and it falls "
            "limp (a URDF without <transmission>: add 'actuators: all' to the robot file)"
        )
    failure = None
    if not figures["finite_state"]:
        failure = "the state became NaN or infinite"
    elif robot.base != "fixed":
        # Judged once landed and settled: free fall time plus 0.3 s (robot time units).
        fall = (2.0 * scenario.drop_height * _LengthScale(robot) / robot.gravity) ** 0.5
        settled = log.times >= fall + 0.3 * scale
        if not settled.any():
            settled = log.times >= log.times[-1]
        heights = log.base_height[settled]
        within = bool(np.all(np.abs(heights - nominal) <= 0.1 * abs(nominal)))
        summary["base_height_within_10_percent"] = within
        if not within:
            failure = "the base left the ±10 % band around its home height (the robot fell)"
    return SimulationOutcome(log=log, summary=summary, failure=failure, nominal_base_height=nominal)


def ReplayExtras(results_dir, robot):
    """The plant's own geometry is the whole replay."""
    return None, None
