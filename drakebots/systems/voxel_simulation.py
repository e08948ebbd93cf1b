"""Simulating the tripod-gait voxel robot: discrete MultibodyPlant (SAP), ground, gait servo.

    gait strokes -> desired actuator state -> MultibodyPlant (SAP) <-> SceneGraph
                                                   |-> state, actuation, contact logs

The four actuators are prismatic joints with implicit PD servos (SAP); the struts are bushings
plus compliant distance constraints (drakebots.robots.voxel). The gait's actuator strokes come
from the POM inverse kinematics (drakebots.frame.tripod), the same sequence `drakebots voxel pom`
writes.
"""

import dataclasses

import numpy as np
from pydrake.geometry import Meshcat
from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder
from pydrake.systems.primitives import TrajectorySource, VectorLogSink
from pydrake.trajectories import PiecewisePolynomial
from pydrake.visualization import AddDefaultVisualization

from drakebots.frame.tripod import GaitStrokes, TripodGaitTargets, TripodPom
from drakebots.robots.base import Robot
from drakebots.robots.voxel import TripodMetadata
from drakebots.systems.ground import AddGround
from drakebots.systems.simulation import AdvanceWithProgress, ContactMonitor, SimulationLog

GAITS = ("tripod", "stand")


@dataclasses.dataclass
class VoxelGaitConfig:
    """Options of a voxel-robot gait simulation (SI units)."""

    # "tripod" (the gait of sec. 3.1) or "stand" (actuators held at zero stroke).
    gait: str = "tripod"
    # Simulated time, s.
    duration: float = 2.0
    # Discrete plant time step, s.
    time_step: float = 1e-3
    # Sampling period of the logs, s.
    log_period: float = 0.01
    # Duration of one keyframe of the 8-step gait loop, s (one cycle = 8 steps).
    step_duration: float = 0.25
    # Gait amplitude: lift of the front feet's attachment nodes, m.
    lift: float = 0.003
    # Ground friction of the ground itself (Drake combines it with each pad's coefficient).
    ground_friction: float = 1.0
    # SAP's near-rigid threshold (MultibodyPlantConfig.sap_near_rigid_threshold). Drake's default
    # 1.0 softens every constraint stiffer than ~1/dt^2 (the pads' contact, the struts' axial
    # springs) by an amount that grows with the time step, and at 1 ms that regularisation alone
    # made the gait creep forward 0.87 mm per cycle (0.24 mm at 0.5 ms, -0.05 mm at 0.25 ms).
    # With 0.1 the result no longer depends on the step: -0.16 mm at 1 ms, -0.14 mm at 0.5 ms.
    near_rigid_threshold: float = 0.1


def GaitStrokeTrajectory(config: VoxelGaitConfig, duration: float):
    """(PiecewisePolynomial of strokes (4,) over [0, duration], strokes per keyframe (8, 4))."""
    pom = TripodPom()
    strokes, _ = GaitStrokes(pom, TripodGaitTargets(lift=config.lift))
    if config.gait == "stand":
        strokes = np.zeros_like(strokes)
    steps = len(strokes)
    count = int(np.ceil(duration / config.step_duration)) + 1
    times = np.arange(count + 1) * config.step_duration
    values = np.array([strokes[k % steps] for k in range(count + 1)])
    return PiecewisePolynomial.FirstOrderHold(times, values.T), strokes


def SimulateVoxelGait(
    robot: Robot,
    config: VoxelGaitConfig,
    *,
    meshcat: Meshcat | None = None,
    progress: bool = True,
) -> SimulationLog:
    """Simulates the voxel robot running a gait; returns the log (extra: feet, markers, strokes).

    Args:
        robot: the voxel_tripod robot.
        config: gait, duration, time step and gait options.
        meshcat: stream the simulation live to this Meshcat (optional).
        progress: show a progress bar.
    """
    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(
        MultibodyPlantConfig(
            time_step=config.time_step,
            discrete_contact_approximation="sap",
            contact_model="point",
            sap_near_rigid_threshold=config.near_rigid_threshold,
        ),
        builder,
    )
    instance = robot.AddTo(plant)
    AddGround(plant, mu_static=config.ground_friction, mu_dynamic=config.ground_friction)
    plant.Finalize()
    meta = TripodMetadata()
    order = [plant.get_joint_actuator(i).joint().name() for i in plant.GetJointActuatorIndices()]
    names = list(meta["actuators"])
    trajectory, keyframes = GaitStrokeTrajectory(config, config.duration)
    # Desired state [q (actuator order), v]: the strokes and their rates.
    columns = [names.index(n) for n in order]
    times = np.asarray(trajectory.get_segment_times())
    values = np.array([trajectory.value(t).ravel()[columns] for t in times]).T
    desired = builder.AddSystem(
        TrajectorySource(PiecewisePolynomial.FirstOrderHold(times, values), 1)
    )
    desired.set_name("gait")
    builder.Connect(desired.get_output_port(), plant.get_desired_state_input_port(instance))
    state_log = builder.AddSystem(VectorLogSink(plant.num_multibody_states(), config.log_period))
    builder.Connect(plant.get_state_output_port(), state_log.get_input_port())
    actuation_log = builder.AddSystem(VectorLogSink(plant.num_actuators(), config.log_period))
    builder.Connect(plant.get_net_actuation_output_port(), actuation_log.get_input_port())
    monitor = builder.AddSystem(ContactMonitor())
    builder.Connect(plant.get_contact_results_output_port(), monitor.get_input_port())
    contact_log = builder.AddSystem(VectorLogSink(3, config.log_period))
    builder.Connect(monitor.get_output_port(), contact_log.get_input_port())
    if meshcat is not None:
        AddDefaultVisualization(builder, meshcat=meshcat)
    diagram = builder.Build()
    simulator = Simulator(diagram)
    simulator.Initialize()
    wall = AdvanceWithProgress(
        simulator, config.duration, progress=progress, label=f"simulate {robot.name}", chunks=50
    )
    context = simulator.get_context()
    states = state_log.FindLog(context)
    actuation = actuation_log.FindLog(context)
    contact = contact_log.FindLog(context)
    count = min(
        len(states.sample_times()), len(actuation.sample_times()), len(contact.sample_times())
    )
    nq = plant.num_positions()
    x = states.data().T[:count]
    sample_times = states.sample_times()[:count]
    # Node positions over time for the feet, markers and centroid.
    plant_context = plant.CreateDefaultContext()
    tracked = dict(meta["feet"]) | dict(meta["markers"])
    bodies = [plant.get_body(i) for i in plant.GetBodyIndices(instance)]
    tracked_xyz = {name: np.zeros((count, 3)) for name in tracked}
    centroid = np.zeros((count, 3))
    for k in range(count):
        plant.SetPositions(plant_context, x[k, :nq])
        points = np.array(
            [plant.EvalBodyPoseInWorld(plant_context, b).translation() for b in bodies]
        )
        centroid[k] = points.mean(axis=0)
        for name, body in tracked.items():
            tracked_xyz[name][k] = plant.EvalBodyPoseInWorld(
                plant_context, plant.GetBodyByName(body, instance)
            ).translation()
    base = plant.GetBodyByName(robot.base_body, instance)
    start = base.floating_positions_start()
    extra = {"centroid": centroid, "keyframe_strokes": keyframes}
    extra |= {f"{name}_xyz": value for name, value in tracked_xyz.items()}
    extra["desired_strokes"] = np.array([trajectory.value(t).ravel() for t in sample_times])
    return SimulationLog(
        robot=robot.name,
        times=sample_times,
        positions=x[:, :nq],
        velocities=x[:, nq:],
        actuation=actuation.data().T[:count],
        effort_limits=np.array(
            [plant.get_joint_actuator(i).effort_limit() for i in plant.GetJointActuatorIndices()]
        ),
        position_names=list(plant.GetPositionNames(add_model_instance_prefix=False)),
        actuator_names=order,
        contact=contact.data().T[:count],
        base_height=x[:, start + 6],
        wall_time=wall,
        extra=extra,
    )


def DistancePerCycle(log: SimulationLog, cycle_duration: float) -> np.ndarray:
    """Forward (x) displacement of the node centroid over each complete gait cycle, m."""
    centroid = log.extra["centroid"]
    cycles = int(np.floor((log.times[-1] - log.times[0]) / cycle_duration + 1e-9))
    out = []
    for c in range(cycles):
        i0 = int(np.searchsorted(log.times, c * cycle_duration))
        i1 = min(int(np.searchsorted(log.times, (c + 1) * cycle_duration)), len(log.times) - 1)
        out.append(centroid[i1, 0] - centroid[i0, 0])
    return np.array(out)
