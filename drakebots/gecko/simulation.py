"""Simulating the gecko in Drake: plant, suction feet, pneumatics, gait law, gait pattern generator.

The diagram (paper Fig. 11; DESIGN.md):

    gait (constant, or GaitPatternGenerator <- PlanarPoseSensor <- body poses)
      -> GaitLawSource -> reference angles -> CascadedLimbController -> valve commands
      -> PneumaticChambers -> limb moments -> MultibodyPlant (SAP) <-> SceneGraph [-> Meshcat]
    plant state -> limb angles (MatrixGain) -> CascadedLimbController
    GaitLawSource.fixation -> SuctionFeet (applied between steps at the schedule's event times)

The suction feet are weld constraints to anchors on locked carriages (drakebots.gecko.model); a
LeafSystem cannot change another system's context, so `GeckoSimulation` advances the simulator
to each fixation event of the schedule and applies the gait law's fixation output to the plant
context there (constraint active status, joint locks, anchor positions) before continuing.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from pydrake.geometry import Meshcat
from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder
from pydrake.systems.primitives import ConstantVectorSource, MatrixGain, VectorLogSink

from drakebots.gecko.gait import GaitLawSource, GaitPatternGenerator, PlanarPoseSensor
from drakebots.gecko.geometry import GaitTiming, HomeAnglesDeg
from drakebots.gecko.model import (
    AddGecko,
    AddSuctionAnchors,
    GeckoParams,
    LimbAngleSelector,
    LimbMomentToActuation,
    SuctionFeet,
)
from drakebots.gecko.pneumatics import (
    CascadedLimbController,
    CascadeGains,
    EquilibriumPressures,
    PneumaticChambers,
    PressureCalibration,
)
from drakebots.systems.ground import AddGround
from drakebots.systems.simulation import ContactMonitor, SimulationLog


@dataclasses.dataclass
class GeckoSimConfig:
    """Options of a gecko simulation (SI units)."""

    # Discrete plant time step, s.
    time_step: float = 2e-3
    # Coulomb friction of the ground; Drake combines it with the robot's own (0.3) as
    # 2 mu1 mu2 / (mu1 + mu2).
    ground_friction: float = 0.3
    # Sampling period of the logs, s.
    log_period: float = 0.02
    # Timing of a half cycle (release, move, fix), s.
    timing: GaitTiming = dataclasses.field(default_factory=GaitTiming)
    # Gains of the cascaded controller (Fig. 11B).
    gains: CascadeGains = dataclasses.field(default_factory=CascadeGains)


@dataclasses.dataclass
class GeckoDiagram:
    """Handles of a built gecko diagram."""

    diagram: object
    plant: object
    scene_graph: object
    instance: object
    anchors: object
    gait_law: GaitLawSource
    planner: GaitPatternGenerator | None
    controller: CascadedLimbController
    chambers: PneumaticChambers
    calibration: PressureCalibration
    logs: dict


def MakeGeckoDiagram(
    config: GeckoSimConfig,
    *,
    gait: tuple[float, float] | None = None,
    planner: tuple[object, np.ndarray] | None = None,
    start_pose=(0.0, 0.0, 0.0),
    start_alpha_deg=None,
    params: GeckoParams | None = None,
    meshcat: Meshcat | None = None,
) -> GeckoDiagram:
    """Builds the closed-loop gecko diagram.

    Args:
        config: time step, friction, timing, gains.
        gait: a constant gait (q1 [deg], q2); None with planner=None: stand (hold the start pose).
        planner: (planner, targets (K, 2) [m]) to walk to targets with the GaitPatternGenerator
            (planner: a drakebots.gecko.planner.GaitPatternPlanner).
        start_pose: (x, y, eps) of the torso midpoint, m, m, rad.
        start_alpha_deg: the start pose's bending angles, deg (default: the home pose).
        params: model parameters.
        meshcat: also publish to this Meshcat.
    """
    params = params or GeckoParams()
    start_alpha_deg = HomeAnglesDeg() if start_alpha_deg is None else np.asarray(start_alpha_deg)
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlant(
        MultibodyPlantConfig(
            time_step=config.time_step,
            # The lagged convex approximation of Hunt-Crossley contact (solved by SAP, which also
            # handles the couplers and welds): plain SAP lifts sliding bodies by about
            # mu * v_t * time_step (its convex approximation's "gliding"), visible here as the
            # whole robot floating 0.3 mm while its legs swing; lagged does not.
            discrete_contact_approximation="lagged",
            contact_model="point",
        ),
        builder,
    )
    instance = AddGecko(plant, alpha_deg=start_alpha_deg, pose=start_pose, params=params)
    anchors = AddSuctionAnchors(plant, instance, params)
    AddGround(plant, mu_static=config.ground_friction, mu_dynamic=config.ground_friction, size=6.0)
    plant.Finalize()

    calibration = PressureCalibration(params.chamber, params.limb_stiffness)
    p0 = EquilibriumPressures(calibration, np.radians(start_alpha_deg))
    chambers = builder.AddSystem(PneumaticChambers(params.chamber, config.time_step, p0))
    chambers.set_name("pneumatic_chambers")
    controller = builder.AddSystem(CascadedLimbController(calibration, config.gains, p0))
    controller.set_name("cascaded_controller")
    hold = gait is None and planner is None
    gait_law = builder.AddSystem(
        GaitLawSource(config.timing, initial_alpha_deg=start_alpha_deg, hold=hold)
    )
    gait_law.set_name("gait_law")

    nq, nv = plant.num_positions(instance), plant.num_velocities(instance)
    S = LimbAngleSelector(plant, instance, params)
    angles = builder.AddSystem(MatrixGain(np.hstack([S, np.zeros((5, nv))])))
    angles.set_name("limb_angles")
    builder.Connect(plant.get_state_output_port(instance), angles.get_input_port())
    B = LimbMomentToActuation(plant, instance, params)
    torques = builder.AddSystem(MatrixGain(B))
    torques.set_name("moments_to_torques")

    builder.Connect(
        gait_law.GetOutputPort("reference_angles"), controller.get_reference_angles_input_port()
    )
    builder.Connect(angles.get_output_port(), controller.get_measured_angles_input_port())
    builder.Connect(chambers.GetOutputPort("pressures"), controller.get_pressures_input_port())
    builder.Connect(
        controller.GetOutputPort("valve_commands"), chambers.get_valve_commands_input_port()
    )
    builder.Connect(chambers.GetOutputPort("limb_moments"), torques.get_input_port())
    builder.Connect(torques.get_output_port(), plant.get_actuation_input_port(instance))

    generator = None
    if planner is not None:
        planner_object, targets = planner
        sensor = builder.AddSystem(PlanarPoseSensor(plant.GetBodyByName("torso", instance).index()))
        sensor.set_name("pose_sensor")
        builder.Connect(plant.get_body_poses_output_port(), sensor.get_body_poses_input_port())
        generator = builder.AddSystem(GaitPatternGenerator(planner_object, targets, config.timing))
        generator.set_name("gait_pattern_generator")
        builder.Connect(sensor.get_output_port(), generator.get_pose_input_port())
        builder.Connect(generator.GetOutputPort("gait"), gait_law.get_gait_input_port())
    else:
        source = builder.AddSystem(
            ConstantVectorSource(np.array(gait if gait is not None else (0.0, 0.0), dtype=float))
        )
        source.set_name("constant_gait")
        builder.Connect(source.get_output_port(), gait_law.get_gait_input_port())

    logs = {}

    def Log(name, port, size):
        sink = builder.AddSystem(VectorLogSink(size, config.log_period))
        sink.set_name(f"{name}_log")
        builder.Connect(port, sink.get_input_port())
        logs[name] = sink

    Log("state", plant.get_state_output_port(instance), nq + nv)
    Log("actuation", plant.get_net_actuation_output_port(instance), plant.num_actuators(instance))
    Log("reference", gait_law.GetOutputPort("reference_angles"), 5)
    Log("angles", angles.get_output_port(), 5)
    Log("fixation", gait_law.GetOutputPort("fixation"), 4)
    Log("pressures", chambers.GetOutputPort("pressures"), 6)
    Log("pressure_references", controller.GetOutputPort("pressure_references"), 6)
    Log("moments", chambers.GetOutputPort("limb_moments"), 5)
    monitor = builder.AddSystem(ContactMonitor())
    builder.Connect(plant.get_contact_results_output_port(), monitor.get_input_port())
    Log("contact", monitor.get_output_port(), 3)
    if meshcat is not None:
        from pydrake.visualization import AddDefaultVisualization

        AddDefaultVisualization(builder, meshcat=meshcat)
    diagram = builder.Build()
    return GeckoDiagram(
        diagram=diagram,
        plant=plant,
        scene_graph=scene_graph,
        instance=instance,
        anchors=anchors,
        gait_law=gait_law,
        planner=generator,
        controller=controller,
        chambers=chambers,
        calibration=calibration,
        logs=logs,
    )


def YawOfQuaternion(q_wxyz: np.ndarray) -> np.ndarray:
    """Yaw of (…, 4) unit quaternions [w, x, y, z] (rotation about z for a body lying flat)."""
    w, x, y, z = (q_wxyz[..., i] for i in range(4))
    return np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


class GeckoSimulation:
    """Runs a gecko diagram, toggling the suction feet at the gait schedule's events.

    Args:
        config: GeckoSimConfig.
        gait / planner / start_pose / start_alpha_deg / params / meshcat: see MakeGeckoDiagram.
    """

    def __init__(self, config: GeckoSimConfig | None = None, **kwargs):
        self.config = config or GeckoSimConfig()
        self.handles = MakeGeckoDiagram(self.config, **kwargs)
        h = self.handles
        self.simulator = Simulator(h.diagram)
        self.context = self.simulator.get_mutable_context()
        self.plant_context = h.plant.GetMyMutableContextFromRoot(self.context)
        self.suction = SuctionFeet(h.plant, h.anchors)
        self.suction.Initialize(self.plant_context, h.gait_law.Fixation(0.0))
        self.simulator.Initialize()
        self.wall_time = 0.0
        self.decisions = []  # (time, q1, q2, status...) of the planner, one per half cycle
        base = h.plant.GetBodyByName("torso", h.instance)
        self._base_start = base.floating_positions_start() - self._InstanceStart()

    def _InstanceStart(self) -> int:
        plant, instance = self.handles.plant, self.handles.instance
        return min(
            plant.get_joint(j).position_start()
            for j in plant.GetJointIndices(instance)
            if plant.get_joint(j).num_positions() > 0
        )

    @property
    def time(self) -> float:
        return self.context.get_time()

    def AdvanceTo(self, t_end: float) -> None:
        """Simulates to t_end, applying the fixation at every event on the way."""
        h = self.handles
        start = time.perf_counter()
        for t_event in h.gait_law.schedule.FixationEvents(self.time, t_end):
            if h.gait_law.hold:
                break
            self.simulator.AdvanceTo(t_event)
            self.suction.Apply(self.plant_context, h.gait_law.Fixation(t_event))
        self.simulator.AdvanceTo(t_end)
        self.wall_time += time.perf_counter() - start

    def Pose(self) -> np.ndarray:
        """Current (x, y, eps) of the torso midpoint (the base body)."""
        h = self.handles
        from drakebots.gecko.model import PlanarPoseOf

        body = h.plant.GetBodyByName("torso", h.instance)
        return PlanarPoseOf(h.plant.EvalBodyPoseInWorld(self.plant_context, body))

    def PlannerStatus(self) -> np.ndarray | None:
        h = self.handles
        if h.planner is None:
            return None
        x = h.planner.GetMyContextFromRoot(self.context).get_discrete_state_vector().value()
        return np.array(x)

    def RunHalfCycles(self, count: int, *, callback=None) -> None:
        """Advances `count` half cycles (to the end of each fix phase)."""
        half = self.config.timing.half_cycle
        for _ in range(count):
            k = int(round(self.time / half))
            self.AdvanceTo((k + 1) * half)
            if callback is not None:
                callback(self)

    def Log(self, robot_name: str = "gecko") -> SimulationLog:
        """The run's arrays (robot positions only, so a replay needs only the robot model)."""
        h = self.handles
        plant = h.plant
        data = {name: sink.FindLog(self.context) for name, sink in h.logs.items()}
        count = min(len(d.sample_times()) for d in data.values())
        times = data["state"].sample_times()[:count]
        x = data["state"].data().T[:count]
        nq = plant.num_positions(h.instance)
        positions, velocities = x[:, :nq], x[:, nq:]
        actuators = [plant.get_joint_actuator(i) for i in plant.GetJointActuatorIndices(h.instance)]
        base = self._base_start
        extra = {
            name: data[name].data().T[:count]
            for name in (
                "reference",
                "angles",
                "fixation",
                "pressures",
                "pressure_references",
                "moments",
            )
        }
        extra["pose"] = np.column_stack(
            [
                positions[:, base + 4],
                positions[:, base + 5],
                YawOfQuaternion(positions[:, base : base + 4]),
            ]
        )
        return SimulationLog(
            robot=robot_name,
            times=times,
            positions=positions,
            velocities=velocities,
            actuation=data["actuation"].data().T[:count],
            effort_limits=np.array([a.effort_limit() for a in actuators]),
            position_names=list(
                plant.GetPositionNames(h.instance, add_model_instance_prefix=False)
            ),
            actuator_names=[a.name() for a in actuators],
            contact=data["contact"].data().T[:count],
            base_height=positions[:, base + 6],
            wall_time=self.wall_time,
            extra=extra,
        )
