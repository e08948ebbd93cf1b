"""Simulating a skinned quad-robot with its FEM skin (`drakebots simulate ROBOT --skin DIR`).

The diagram:

    home pose (servo targets) -> SkinnedRobotSystem (coupled skeleton + skin, Eq. 2)
        skeleton_state -> MultibodyPositionToGeometryPose -> SceneGraph -> [Meshcat]
        skin_positions -> [live skin mesh in Meshcat], loggers (state, skin frames, statistics)

The skeleton's MultibodyPlant is the coupled system's model (mass matrix, bias, Jacobians) and
SceneGraph's geometry source; it is not itself stepped (the coupled system is).
"""

import dataclasses
import time

import numpy as np
from pydrake.geometry import Meshcat, SceneGraph
from pydrake.multibody.plant import MultibodyPlant
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder, LeafSystem
from pydrake.systems.primitives import ConstantVectorSource, VectorLogSink
from pydrake.systems.rendering import MultibodyPositionToGeometryPose

from drakebots.fem.model import ElementInversion
from drakebots.robots.base import Robot
from drakebots.skinned.skin_coupling import (
    ContactNamed,
    CoupledSkinSkeleton,
    CoupledStepFailure,
    CouplingConfig,
    SkinnedRobotSystem,
)
from drakebots.systems.ground import AddGround
from drakebots.systems.simulation import AddPlantLogs, SimulationLog, SimulationProgress


@dataclasses.dataclass
class SkinnedConfig:
    """Options of a skinned simulation (SI units)."""

    # Simulated time, s.
    duration: float = 1.0
    # Coupled time step, s (the paper's frame interval: 5 ms).
    time_step: float = 0.005
    # Sampling period of the skeleton log, s.
    log_period: float = 0.005
    # Period of the logged skin frames (replay, ParaView), s.
    skin_frame_period: float = 1.0 / 30.0
    # Ground friction.
    ground_friction: float = 0.8
    # Servo targets: the home pose (True) or no servo (motors limp, False).
    hold_home: bool = True
    # The skin's contact: "active_set" (the paper's pinned / sliding / free labels inside
    # Newton) or "convex" (SAP's convex problem, one factorisation a step; CouplingConfig.contact).
    contact: str = "active_set"


class _SkinMeshcatPublisher(LeafSystem):
    """Publishes the skin surface to a live Meshcat periodically. Double only."""

    def __init__(self, drawer, size, period):
        super().__init__()
        self._drawer = drawer
        self._port = self.DeclareVectorInputPort("skin_positions", size)
        self.DeclarePeriodicPublishEvent(period, 0.0, self._Publish)
        self.DeclareForcedPublishEvent(self._Publish)

    def _Publish(self, context):
        self._drawer.Draw(self._port.Eval(context))


@dataclasses.dataclass
class SkinnedRun:
    """What a skinned simulation returns."""

    log: SimulationLog
    skin_times: np.ndarray  # (F,) s
    skin_frames: np.ndarray  # (F, 3n) m
    stats_times: np.ndarray
    stats: np.ndarray  # (T, 6) newton iterations, factorisations, glue residual, penetration,
    # contacts, sliding
    failure: str | None
    stepper: CoupledSkinSkeleton


def SimulateSkinned(
    robot: Robot,
    skin,
    config: SkinnedConfig,
    *,
    meshcat: Meshcat | None = None,
    progress: bool = True,
) -> SkinnedRun:
    """Simulates a skinned robot holding its home pose on flat ground.

    Args:
        robot: the skeleton (drakebots.robots.GetRobot).
        skin: the drakebots.skinned.skin.Skin of that robot.
        config: SkinnedConfig.
        meshcat: stream the skeleton and the deforming skin to this Meshcat.
        progress: a workflow's progress callback, True for a tqdm bar, None for none.
    """
    ContactNamed(config.contact, "SkinnedConfig.contact")
    builder = DiagramBuilder()
    scene_graph = builder.AddSystem(SceneGraph())
    plant = MultibodyPlant(0.0)
    plant.RegisterAsSourceForSceneGraph(scene_graph)
    instance = robot.AddTo(plant)
    AddGround(plant, mu_static=config.ground_friction, mu_dynamic=config.ground_friction)
    plant.Finalize()
    lift = max(0.0, -float(skin.mesh.vertices[:, 2].min()))
    stepper = CoupledSkinSkeleton(
        plant,
        instance,
        skin,
        CouplingConfig(
            time_step=config.time_step, friction=config.ground_friction, contact=config.contact
        ),
        lift=lift,
        skeleton=robot.params,
    )
    system = builder.AddSystem(SkinnedRobotSystem(stepper))
    system.set_name("skinned_robot")
    initial = stepper.DefaultState()
    nu = stepper.nu
    if config.hold_home:
        desired = builder.AddSystem(
            ConstantVectorSource(np.concatenate([initial.q[stepper.actuated_q], np.zeros(nu)]))
        )
        builder.Connect(desired.get_output_port(), system.GetInputPort("desired_state"))
    to_pose = builder.AddSystem(MultibodyPositionToGeometryPose(plant, input_multibody_state=True))
    builder.Connect(system.GetOutputPort("skeleton_state"), to_pose.get_input_port())
    builder.Connect(
        to_pose.get_output_port(), scene_graph.get_source_pose_port(plant.get_source_id())
    )
    logs = AddPlantLogs(
        builder,
        system.GetOutputPort("skeleton_state"),
        system.GetOutputPort("motor_torques"),
        None,
        config.log_period,
        contact_summary_port=system.GetOutputPort("contact_summary"),
    )
    stats_log = builder.AddSystem(VectorLogSink(6, config.time_step))
    builder.Connect(system.GetOutputPort("step_info"), stats_log.get_input_port())
    skin_log = builder.AddSystem(VectorLogSink(3 * stepper.n, config.skin_frame_period))
    builder.Connect(system.GetOutputPort("skin_positions"), skin_log.get_input_port())
    if meshcat is not None:
        from pydrake.geometry import MeshcatVisualizer

        from drakebots.skinned.plots import SkinMeshcat

        MeshcatVisualizer.AddToBuilder(builder, scene_graph, meshcat)
        drawer = SkinMeshcat(meshcat, skin.mesh.tets, skin.outer)
        publisher = builder.AddSystem(_SkinMeshcatPublisher(drawer, 3 * stepper.n, 1.0 / 30.0))
        builder.Connect(system.GetOutputPort("skin_positions"), publisher.get_input_port())
    diagram = builder.Build()
    simulator = Simulator(diagram)
    simulator.Initialize()
    failure = None
    wall_start = time.perf_counter()
    steps = max(1, int(round(config.duration / config.time_step)))
    chunk = max(1, steps // 50)
    bar = SimulationProgress(
        progress, f"simulate {robot.name} + skin", config.duration, -(-steps // chunk)
    )
    k = 0
    try:
        while k < steps:
            k = min(steps, k + chunk)
            simulator.AdvanceTo(k * config.time_step)
            bar.Update(-(-k // chunk), k * config.time_step)
    except (ElementInversion, CoupledStepFailure, RuntimeError) as e:
        failure = f"stopped at t = {simulator.get_context().get_time():.4f} s: {e}"
    wall = time.perf_counter() - wall_start
    bar.Close()
    context = simulator.get_context()
    times, x, actuation, contact = logs.Read(context)
    stats = stats_log.FindLog(context)
    skins = skin_log.FindLog(context)
    base = plant.GetBodyByName(robot.base_body, instance)
    log = SimulationLog.FromPlant(
        robot.name,
        plant,
        times,
        x,
        actuation,
        contact,
        x[:, base.floating_positions_start() + 6],
        wall,
        extra={
            "skin_times": skins.sample_times(),
            "skin_frames": skins.data().T.astype(np.float32),
            "step_times": stats.sample_times(),
            "step_stats": stats.data().T,
            "skin_lift": np.array(lift),
        },
    )
    return SkinnedRun(
        log=log,
        skin_times=skins.sample_times(),
        skin_frames=skins.data().T,
        stats_times=stats.sample_times(),
        stats=stats.data().T,
        failure=failure,
        stepper=stepper,
    )
