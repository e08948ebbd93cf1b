"""Simulating the tripod-gait voxel robot: discrete MultibodyPlant (SAP), ground, gait servo.

    gait strokes -> desired actuator state -> MultibodyPlant (SAP) <-> SceneGraph
                                                   |-> state, actuation, contact logs

The four actuators are prismatic joints with implicit PD servos (SAP); the struts are bushings
plus compliant distance constraints (drakebots.voxel.robot). The gait's actuator strokes come
from the POM inverse kinematics of its foot paths (drakebots.voxel.tripod), the same sequence
`drakebots voxel pom` writes; "tripod_reverse" runs the foot positions in reverse (sec. 3.1).

The run starts with `settle` seconds at zero stroke (the lattice sags onto its pads), then the
gait. Besides the plant's state the log carries what the paper measures (sec. 3.2): the feet and
markers in the world and in the body frame, and the body's yaw. The body frame is the rigid motion
that best fits the 36 core nodes (least squares, Kabsch), so the feet's body-frame displacements
compare directly with the POM and frame-FEM predictions for the measured strokes, which use the
same frame (drakebots.voxel.tripod.PomFeetMatrix, FemFeetMatrix).
"""

import dataclasses

import numpy as np
from pydrake.geometry import Meshcat
from pydrake.multibody.plant import (
    AddMultibodyPlant,
    CalcContactFrictionFromSurfaceProperties,
    CoulombFriction,
    MultibodyPlantConfig,
)
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder
from pydrake.systems.primitives import TrajectorySource
from pydrake.trajectories import PiecewisePolynomial
from pydrake.visualization import AddDefaultVisualization

from drakebots.robots.base import Robot
from drakebots.systems.ground import AddGround
from drakebots.systems.simulation import AddMultibodyPlantLogs, AdvanceWithProgress, SimulationLog
from drakebots.voxel.robot import TripodMetadata
from drakebots.voxel.tripod import (
    GAIT_CLEARANCE,
    GAIT_NARROW,
    GAIT_STEPS,
    FemFeetMatrix,
    GaitStrokes,
    PomFeetMatrix,
    ReverseGait,
    TripodGaitTargets,
    TripodPom,
)

# Gait name -> expected direction of travel along x (+1 forward, -1 backward, 0 none).
GAITS = {"tripod": 1, "tripod_reverse": -1, "stand": 0}


@dataclasses.dataclass
class VoxelGaitConfig:
    """Options of a voxel-robot gait simulation (SI units)."""

    # "tripod" (the gait of sec. 3.1), "tripod_reverse" (its foot positions run in reverse) or
    # "stand" (actuators held at zero stroke).
    gait: str = "tripod"
    # Simulated time after the settling, s.
    duration: float = 2.0
    # Time at zero stroke before the gait starts (the lattice sags onto its pads), s.
    settle: float = 0.25
    # Discrete plant time step, s.
    time_step: float = 1e-3
    # Sampling period of the logs, s.
    log_period: float = 0.01
    # Duration of one keyframe of the 8-step gait loop, s (one cycle = 8 steps).
    step_duration: float = 0.25
    # Swing-foot clearance above the stance foot (POM foot path), m.
    clearance: float = GAIT_CLEARANCE
    # Rear stance narrowing while a front foot swings (POM foot path), m.
    narrow: float = GAIT_NARROW
    # Friction coefficient of the ground itself; None: the one the model's pads assume (Drake
    # combines it with each pad's coefficient, see drakebots.voxel.tripod_model.PadFriction).
    ground_friction: float | None = None
    # SAP's near-rigid threshold (MultibodyPlantConfig.sap_near_rigid_threshold). Drake's default
    # 1.0 softens every constraint stiffer than ~1/dt^2 (the pads' contact, the struts' axial
    # springs) by an amount that grows with the time step; for session 1's gait that
    # regularisation alone made a 0.87 mm/cycle creep at 1 ms (0.24 mm at 0.5 ms, -0.05 mm at
    # 0.25 ms). With 0.1 the advance per cycle no longer depends on the step.
    near_rigid_threshold: float = 0.1

    @property
    def cycle_duration(self) -> float:
        return GAIT_STEPS * self.step_duration


def GaitKeyframes(config: VoxelGaitConfig) -> np.ndarray:
    """Strokes (8, 4), m (ACTUATORS order), per keyframe: POM inverse kinematics of the foot paths.

    Raises:
        ValueError: an unknown gait.
    """
    if config.gait not in GAITS:
        raise ValueError(f"unknown gait {config.gait!r}; known: {', '.join(GAITS)}")
    targets = TripodGaitTargets(clearance=config.clearance, narrow=config.narrow)
    if config.gait == "tripod_reverse":
        targets = ReverseGait(targets)
    strokes, _ = GaitStrokes(TripodPom(), targets)
    if config.gait == "stand":
        strokes = np.zeros_like(strokes)
    return strokes


def GaitStrokeTrajectory(config: VoxelGaitConfig, duration: float):
    """(PiecewisePolynomial of strokes (4,) over [0, duration], strokes per keyframe (8, 4)).

    Zero stroke for the first `config.settle` seconds, then the keyframes in a loop, linearly
    interpolated (linear in the foot paths too: the POM map is linear).
    """
    keyframes = GaitKeyframes(config)
    steps = len(keyframes)
    count = int(np.ceil(max(duration - config.settle, 0.0) / config.step_duration)) + 1
    times = config.settle + np.arange(count + 1) * config.step_duration
    values = np.array([keyframes[k % steps] for k in range(count + 1)])
    if config.settle > 0:
        times = np.r_[0.0, times]
        values = np.vstack([values[:1], values])
    return PiecewisePolynomial.FirstOrderHold(times, values.T), keyframes


def EffectiveFriction(plant, scene_graph, instance, ground: float) -> dict:
    """Pad name -> the friction coefficient Drake applies between that pad and the ground."""
    inspector = scene_graph.model_inspector()
    out = {}
    for body_index in plant.GetBodyIndices(instance):
        body = plant.get_body(body_index)
        for geometry in plant.GetCollisionGeometriesForBody(body):
            properties = inspector.GetProximityProperties(geometry)
            pad = properties.GetProperty("material", "coulomb_friction")
            combined = CalcContactFrictionFromSurfaceProperties(
                pad, CoulombFriction(ground, ground)
            )
            name = inspector.GetName(geometry).split("::")[-1]
            out[name] = float(combined.dynamic_friction())
    return out


def BodyFrames(reference: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares rigid motions (Kabsch) taking `reference` (N, 3) onto `points` (T, N, 3).

    Returns:
        (R (T, 3, 3), c (T, 3)): points[t] ~ c[t] + R[t] (reference - mean(reference)).
    """
    ref = reference - reference.mean(axis=0)
    centres = points.mean(axis=1)
    H = np.einsum("ni,tnj->tij", ref, points - centres[:, None, :])
    U, _, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(np.einsum("tij,tjk->tik", U, Vt)))
    D = np.zeros_like(H)
    D[:, 0, 0], D[:, 1, 1], D[:, 2, 2] = 1.0, 1.0, d
    R = np.einsum("tji,tjk,tlk->til", Vt, D, U)  # V D U^T
    return R, centres


def SimulateVoxelGait(
    robot: Robot,
    config: VoxelGaitConfig,
    *,
    meshcat: Meshcat | None = None,
    progress: bool = True,
) -> SimulationLog:
    """Simulates the voxel robot running a gait.

    Args:
        robot: the voxel_tripod robot.
        config: gait, duration, time step and gait options.
        meshcat: stream the simulation live to this Meshcat (optional).
        progress: show a progress bar.

    Returns:
        The log; extra holds (SI units): gait_start_time, keyframe_strokes (8, 4),
        desired_strokes and strokes (T, 4) (ACTUATORS order), centroid (T, 3) of all nodes,
        body_position (T, 3) and yaw (T,) of the core's best-fit frame, <name>_xyz (T, 3) world
        positions and <name>_body / <name>_pom / <name>_fem (T, 3) body-frame displacements
        (simulated, relative to the settled stance at the gait start; POM and frame-FEM
        predictions for the measured strokes) of every foot and marker, pad_friction (4,)
        the coefficient Drake applies between each foot's pad and the ground (feet order of the
        model's metadata).
    """
    from drakebots.voxel.tripod import ACTUATORS, CoreLattice
    from drakebots.voxel.tripod_model import NodeName

    meta = TripodMetadata()
    ground = config.ground_friction
    if ground is None:
        ground = float(meta["friction"]["ground"])
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlant(
        MultibodyPlantConfig(
            time_step=config.time_step,
            discrete_contact_approximation="sap",
            contact_model="point",
            sap_near_rigid_threshold=config.near_rigid_threshold,
        ),
        builder,
    )
    instance = robot.AddTo(plant)
    AddGround(plant, mu_static=ground, mu_dynamic=ground)
    plant.Finalize()
    order = [plant.get_joint_actuator(i).joint().name() for i in plant.GetJointActuatorIndices()]
    names = list(meta["actuators"])
    total = config.settle + config.duration
    trajectory, keyframes = GaitStrokeTrajectory(config, total)
    # Desired state [q (actuator order), v]: the strokes and their rates.
    columns = [names.index(n) for n in order]
    times = np.asarray(trajectory.get_segment_times())
    values = np.array([trajectory.value(t).ravel()[columns] for t in times]).T
    desired = builder.AddSystem(
        TrajectorySource(PiecewisePolynomial.FirstOrderHold(times, values), 1)
    )
    desired.set_name("gait")
    builder.Connect(desired.get_output_port(), plant.get_desired_state_input_port(instance))
    logs = AddMultibodyPlantLogs(builder, plant, config.log_period)
    if meshcat is not None:
        AddDefaultVisualization(builder, meshcat=meshcat)
    diagram = builder.Build()
    simulator = Simulator(diagram)
    simulator.Initialize()
    wall = AdvanceWithProgress(
        simulator, total, progress=progress, label=f"simulate {robot.name}", chunks=50
    )
    sample_times, x, actuation, contact = logs.Read(simulator.get_context())
    count = len(sample_times)
    nq = plant.num_positions()
    # Every node body's position at every sample (one pose evaluation per sample).
    plant_context = plant.CreateDefaultContext()
    bodies = [plant.get_body(i) for i in plant.GetBodyIndices(instance)]
    body_index = {b.name(): k for k, b in enumerate(bodies)}
    poses_port = plant.get_body_poses_output_port()
    home = poses_port.Eval(plant_context)
    home_xyz = np.array([home[int(b.index())].translation() for b in bodies])
    xyz = np.zeros((count, len(bodies), 3))
    for k in range(count):
        plant.SetPositions(plant_context, x[k, :nq])
        poses = poses_port.Eval(plant_context)
        xyz[k] = [poses[int(b.index())].translation() for b in bodies]
    core = [body_index[NodeName(c)] for c in CoreLattice().node_coords]
    R, centres = BodyFrames(home_xyz[core], xyz[:, core])
    yaw = np.unwrap(np.arctan2(R[:, 1, 0], R[:, 0, 0]))
    strokes = np.column_stack(
        [x[:, plant.GetJointByName(n, instance).position_start()] for n in ACTUATORS]
    )
    pom_matrix, fem_matrix = PomFeetMatrix(), FemFeetMatrix()
    tracked = dict(meta["feet"]) | dict(meta["markers"])
    first = min(int(np.searchsorted(sample_times, config.settle - 1e-9)), count - 1)
    extra = {
        "gait_start_time": np.array(config.settle),
        "keyframe_strokes": keyframes,
        "desired_strokes": np.array([trajectory.value(t).ravel() for t in sample_times]),
        "strokes": strokes,
        "centroid": xyz.mean(axis=1),
        "body_position": centres,
        "yaw": yaw,
    }
    for name, body in tracked.items():
        world = xyz[:, body_index[body]]
        local = np.einsum("tji,tj->ti", R, world - centres)  # R^T (p - c)
        extra[f"{name}_xyz"] = world
        extra[f"{name}_body"] = local - local[first]
        extra[f"{name}_pom"] = strokes @ pom_matrix[name].T
        extra[f"{name}_fem"] = strokes @ fem_matrix[name].T
    friction = EffectiveFriction(plant, scene_graph, instance, ground)
    extra["pad_friction"] = np.array([friction[name] for name in meta["feet"]])
    base = plant.GetBodyByName(robot.base_body, instance)
    start = base.floating_positions_start()
    return SimulationLog(
        robot=robot.name,
        times=sample_times,
        positions=x[:, :nq],
        velocities=x[:, nq:],
        actuation=actuation,
        effort_limits=np.array(
            [plant.get_joint_actuator(i).effort_limit() for i in plant.GetJointActuatorIndices()]
        ),
        position_names=list(plant.GetPositionNames(add_model_instance_prefix=False)),
        actuator_names=order,
        contact=contact,
        base_height=x[:, start + 6],
        wall_time=wall,
        extra=extra,
    )


def CycleSamples(log: SimulationLog, cycle_duration: float) -> np.ndarray:
    """Sample indices of the start of every complete gait cycle and of the end of the last."""
    start = float(log.extra.get("gait_start_time", 0.0))
    cycles = int(np.floor((log.times[-1] - start) / cycle_duration + 1e-9))
    marks = start + cycle_duration * np.arange(cycles + 1)
    return np.minimum(np.searchsorted(log.times, marks - 1e-9), len(log.times) - 1)


def DistancePerCycle(log: SimulationLog, cycle_duration: float) -> np.ndarray:
    """Forward (x) displacement of the node centroid over each complete gait cycle, m."""
    marks = CycleSamples(log, cycle_duration)
    return np.diff(log.extra["centroid"][marks, 0])


def YawPerCycle(log: SimulationLog, cycle_duration: float) -> np.ndarray:
    """Change of the body's yaw over each complete gait cycle, rad (> 0: turning left)."""
    return np.diff(log.extra["yaw"][CycleSamples(log, cycle_duration)])
