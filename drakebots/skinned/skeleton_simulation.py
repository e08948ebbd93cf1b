"""Simulating a skinned quad-robot's skeleton: discrete MultibodyPlant (SAP), ground, PD hold.

The diagram (DESIGN.md; issue "Foundation"):

    desired home state -> MultibodyPlant (SAP, 1 ms) <-> SceneGraph -> [Meshcat]
                               |-> state, net actuation, contact results -> loggers

The joint-space PD controller is the plant's own: each actuator carries PD gains
(`<drake:controller_gains>` in the SDF) and the discrete SAP solver treats the PD law implicitly
and clamps it at the actuator's effort limit, the way a hobby servo saturates.
"""

import dataclasses

import numpy as np
from pydrake.geometry import Meshcat
from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder
from pydrake.systems.primitives import ConstantVectorSource
from pydrake.visualization import AddDefaultVisualization

from drakebots.robots.base import Robot
from drakebots.systems.ground import AddGround
from drakebots.systems.simulation import (
    AddMultibodyPlantLogs,
    AdvanceWithProgress,
    PlantLogs,
    SimulationLog,
)


@dataclasses.dataclass
class StandingConfig:
    """Options of a PD-hold simulation of a skeleton (SI units)."""

    # Simulated time, s.
    duration: float = 2.0
    # Discrete plant time step, s.
    time_step: float = 1e-3
    # Ground friction (static = dynamic).
    ground_friction: float = 0.8
    # Sampling period of the logs (state, actuation, contact), s.
    log_period: float = 0.005
    # Initial drop: the robot starts this far above its home height, m.
    drop_height: float = 0.0


@dataclasses.dataclass
class StandingDiagram:
    """Handles of a built standing diagram."""

    diagram: object
    plant: object
    scene_graph: object
    instance: object
    logs: PlantLogs


def MakeStandingDiagram(
    robot: Robot, config: StandingConfig, *, meshcat: Meshcat | None = None
) -> StandingDiagram:
    """Builds the PD-hold diagram of a robot standing on flat ground.

    Args:
        robot: a tree robot whose actuators carry PD gains (the skinned quad-robots).
        config: simulation options.
        meshcat: when given, the diagram also publishes to it (live view).
    """
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlant(
        MultibodyPlantConfig(
            time_step=config.time_step,
            discrete_contact_approximation="sap",
            contact_model="point",
        ),
        builder,
    )
    instance = robot.AddTo(plant)
    AddGround(plant, mu_static=config.ground_friction, mu_dynamic=config.ground_friction)
    if config.drop_height:
        body = plant.GetBodyByName(robot.base_body, instance)
        X = plant.GetDefaultFloatingBaseBodyPose(body)
        X.set_translation(X.translation() + [0.0, 0.0, config.drop_height])
        plant.SetDefaultFloatingBaseBodyPose(body, X)
    plant.Finalize()
    # Hold the home pose: desired positions = the default (home) joint positions, velocity zero.
    home_context = plant.CreateDefaultContext()
    q_home = plant.GetPositions(home_context, instance)
    actuated_q = []
    for index in plant.GetJointActuatorIndices(instance):
        joint = plant.get_joint_actuator(index).joint()
        actuated_q.append(q_home[joint.position_start() - _InstancePositionStart(plant, instance)])
    num_actuated = len(actuated_q)
    desired = builder.AddSystem(
        ConstantVectorSource(np.concatenate([actuated_q, np.zeros(num_actuated)]))
    )
    desired.set_name("home_pose")
    builder.Connect(desired.get_output_port(), plant.get_desired_state_input_port(instance))
    logs = AddMultibodyPlantLogs(builder, plant, config.log_period)
    if meshcat is not None:
        AddDefaultVisualization(builder, meshcat=meshcat)
    diagram = builder.Build()
    return StandingDiagram(diagram, plant, scene_graph, instance, logs)


def _InstancePositionStart(plant, instance) -> int:
    """Index of the instance's first position in the plant's full q (instances are contiguous
    only per joint, so this uses the smallest joint position start)."""
    starts = [
        plant.get_joint(j).position_start()
        for j in plant.GetJointIndices(instance)
        if plant.get_joint(j).num_positions() > 0
    ]
    return min(starts) if starts else 0


def SimulateStanding(
    robot: Robot,
    config: StandingConfig,
    *,
    meshcat: Meshcat | None = None,
    progress: bool = True,
) -> SimulationLog:
    """Simulates a robot holding its home pose under PD control and returns the log.

    Args:
        robot: the skeleton (drakebots.robots.GetRobot).
        config: duration, time step, ground friction, log period, drop height.
        meshcat: stream the simulation live to this Meshcat (optional).
        progress: show a progress bar.
    """
    handles = MakeStandingDiagram(robot, config, meshcat=meshcat)
    simulator = Simulator(handles.diagram)
    simulator.Initialize()
    wall = AdvanceWithProgress(
        simulator, config.duration, progress=progress, label=f"simulate {robot.name}"
    )
    times, x, actuation, contact = handles.logs.Read(simulator.get_context())
    plant = handles.plant
    nq = plant.num_positions()
    base = plant.GetBodyByName(robot.base_body, handles.instance)
    # The base height is the floating body's z translation (positions 4..6 of its quaternion
    # joint).
    base_joint_start = base.floating_positions_start()
    effort_limits = np.array(
        [plant.get_joint_actuator(i).effort_limit() for i in plant.GetJointActuatorIndices()]
    )
    return SimulationLog(
        robot=robot.name,
        times=times,
        positions=x[:, :nq],
        velocities=x[:, nq:],
        actuation=actuation,
        effort_limits=effort_limits,
        position_names=list(plant.GetPositionNames(add_model_instance_prefix=False)),
        actuator_names=[
            plant.get_joint_actuator(i).name() for i in plant.GetJointActuatorIndices()
        ],
        contact=contact,
        base_height=x[:, base_joint_start + 6],
        wall_time=wall,
    )
