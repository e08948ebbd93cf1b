"""Simulating HAMR-VI in Drake: discrete SAP plant with closed loops, piezo actuators, a surface.

The diagram:

    GaitVoltageSource -> voltage -> PiezoBenders -> force -> MultibodyPlant (SAP) <-> SceneGraph
                                        ^ state ------------------------|  -> loggers, [Meshcat]

Modelling choices (see models/hamr_vi/README.md):
- The 12 loop-closing flexures are Drake ball constraints (AddHamr, loop_closure="ball"), solved
  with the kinematics by Drake's SAP solver each step. SAP treats constraints as stiff compliant
  ("near-rigid") couplings, so the hinge points drift apart by a small amount under load; the log
  records the loop residual max |c(q)| per sample (it stays below 1e-3 mm).
- Feet are small spheres (point contact, 10 N/mm, Hunt-Crossley dissipation) on a box ground
  whose friction equals the feet's, so the pair's friction is the surface's coefficient.
- Discrete step 0.1 ms by default: SAP is implicit in contact, constraints, joint damping and
  limits; the flexure springs and the bender forces are explicit and their fastest modes (a few
  hundred Hz) are resolved with many steps per period.

Time is in ms inside the simulation (the model's units); the log keeps ms.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydrake.geometry import AddContactMaterial, Box, Meshcat, ProximityProperties
from pydrake.math import RigidTransform
from pydrake.multibody.plant import AddMultibodyPlant, CoulombFriction, MultibodyPlantConfig
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder
from pydrake.systems.primitives import VectorLogSink

from drakebots.hamr.gaits import GaitParams, GaitVoltageSource
from drakebots.hamr.piezo import PiezoBenders
from drakebots.hamr.robot import (
    ACTUATOR_ORIENTATION,
    BASE_JOINTS,
    AddHamr,
    HamrLoopConstraints,
    HamrPositionIndex,
    LegTransmissionJacobian,
    SurfaceFriction,
)
from drakebots.systems.simulation import (
    AddMultibodyPlantLogs,
    AdvanceWithProgress,
    PlantLogs,
    SimulationLog,
)

GROUND_COLOR = np.array([0.78, 0.74, 0.66, 1.0])  # cardstock-ish
GROUND_STIFFNESS = 1e4  # N/mm: much stiffer than a foot, so the pair's stiffness is the foot's
STICTION_TOLERANCE = 1e-6  # mm/ms (= m/s): SAP friction regularization; see MakeHamrDiagram


@dataclasses.dataclass
class HamrSimulationConfig:
    """Options of a HAMR-VI simulation (model units: ms, mm, V, Hz).

    Attributes:
        duration: simulated time, ms.
        time_step: discrete plant step, ms.
        log_period: sampling period of the logs, ms.
        surface: "teflon", "cardstock" or "sandpaper".
        surface_size: side of the square surface, mm (0: sized to the run, `SurfaceSizeFor`).
        gait: the open-loop drive (drakebots.hamr.gaits): stand, trot, pronk, jump.
        contact_approximation: Drake's discrete contact approximation (a SAP one).
    """

    duration: float = 500.0
    time_step: float = 0.1
    log_period: float = 0.5
    surface: str = "cardstock"
    gait: GaitParams = dataclasses.field(default_factory=lambda: GaitParams(gait="stand"))
    contact_approximation: str = "similar"
    surface_size: float = 0.0

    def SurfaceSize(self) -> float:
        """Side of the square running surface, mm: `surface_size`, or when 0 sized to the run
        (`SurfaceSizeFor`)."""
        return self.surface_size or SurfaceSizeFor(self.duration)


MAX_PLAUSIBLE_SPEED = 0.5
"""mm/ms (500 mm/s, 11 body lengths per second): faster than HAMR-VI runs (the paper's fastest
gait is 4.24 mm/cycle at 30 Hz, 127 mm/s); sizes the default running surface."""


def SurfaceSizeFor(duration_ms: float) -> float:
    """Side of a square surface centred on the start that a robot moving at
    `MAX_PLAUSIBLE_SPEED` for `duration_ms` does not leave (body half-length 30 mm of margin),
    at least 400 mm, mm. (A fixed 400 mm surface let a 1.5 s 30 Hz trot walk off its edge.)"""
    return max(400.0, 2.0 * (30.0 + MAX_PLAUSIBLE_SPEED * duration_ms))


@dataclasses.dataclass
class HamrDiagram:
    """Handles of a built HAMR simulation diagram."""

    diagram: object
    plant: object
    scene_graph: object
    instance: object
    gait: GaitVoltageSource
    piezo: PiezoBenders
    logs: PlantLogs
    voltage_log: VectorLogSink


def AddSurface(plant, surface: str, *, size: float = 400.0, thickness: float = 5.0) -> None:
    """Registers a flat running surface (top face z = 0) with the surface's friction, mm."""
    mu = SurfaceFriction(surface)
    properties = ProximityProperties()
    AddContactMaterial(
        dissipation=0.0,
        point_stiffness=GROUND_STIFFNESS,
        friction=CoulombFriction(mu, mu),
        properties=properties,
    )
    X_WG = RigidTransform([0.0, 0.0, -0.5 * thickness])
    shape = Box(size, size, thickness)
    plant.RegisterCollisionGeometry(plant.world_body(), X_WG, shape, "ground", properties)
    plant.RegisterVisualGeometry(plant.world_body(), X_WG, shape, "ground", GROUND_COLOR)


def ActuatorSigns(plant, context) -> dict[str, float]:
    """Actuator -> sign of ∂(foot coordinate)/∂V at the pose in `context`: for swing
    actuators the foot's x, for lift actuators its z (chassis frame)."""
    signs = {}
    for leg in ("FL", "RL", "FR", "RR"):
        H = LegTransmissionJacobian(plant, context, leg)
        for kind, ratio in (("swing", H[0, 0]), ("lift", H[2, 1])):
            name = f"{leg}_{kind}"
            # Quasi-statically the deflection follows the force, and ∂F/∂V = -orientation·2C0.
            signs[name] = float(np.sign(ratio) * -ACTUATOR_ORIENTATION[name])
    return signs


def MakeHamrDiagram(config: HamrSimulationConfig, *, meshcat: Meshcat | None = None) -> HamrDiagram:
    """Builds the simulation diagram of HAMR-VI on a surface under an open-loop gait."""
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlant(
        MultibodyPlantConfig(
            time_step=config.time_step,
            discrete_contact_approximation=config.contact_approximation,
            contact_model="point",
            penetration_allowance=1e-3,
            stiction_tolerance=STICTION_TOLERANCE,
        ),
        builder,
    )
    instance = AddHamr(plant, loop_closure="ball", surface=config.surface)
    AddSurface(plant, config.surface, size=config.SurfaceSize())
    plant.Finalize()
    actuator_names = [
        plant.get_joint_actuator(i).name() for i in plant.GetJointActuatorIndices(instance)
    ]
    home_context = plant.CreateDefaultContext()
    signs = ActuatorSigns(plant, home_context)
    gait = builder.AddSystem(
        GaitVoltageSource(
            config.gait,
            [(name.split("_")[0], name.split("_")[1]) for name in actuator_names],
            [signs[name] for name in actuator_names],
        )
    )
    gait.set_name("gait")
    piezo = builder.AddSystem(
        PiezoBenders(
            [
                plant.get_joint_actuator(i).joint().position_start()
                for i in plant.GetJointActuatorIndices(instance)
            ],
            plant.num_multibody_states(),
            [ACTUATOR_ORIENTATION[name] for name in actuator_names],
            names=actuator_names,
        )
    )
    piezo.set_name("piezo_benders")
    builder.Connect(gait.get_output_port(), piezo.get_voltage_input_port())
    builder.Connect(plant.get_state_output_port(), piezo.get_state_input_port())
    builder.Connect(piezo.get_force_output_port(), plant.get_actuation_input_port(instance))
    logs = AddMultibodyPlantLogs(builder, plant, config.log_period)
    voltage_log = builder.AddSystem(VectorLogSink(len(actuator_names), config.log_period))
    voltage_log.set_name("voltage_log")
    builder.Connect(piezo.get_applied_voltage_output_port(), voltage_log.get_input_port())
    if meshcat is not None:
        from pydrake.visualization import AddDefaultVisualization

        AddDefaultVisualization(builder, meshcat=meshcat)
    diagram = builder.Build()
    return HamrDiagram(
        diagram,
        plant,
        scene_graph,
        instance,
        gait,
        piezo,
        logs,
        voltage_log,
    )


@dataclasses.dataclass
class HamrSimulationLog(SimulationLog):
    """A SimulationLog whose times are in ms (HAMR-VI's model unit); its real-time rate is
    simulated seconds per wall-clock second like every other robot's."""

    def __post_init__(self):
        self.time_unit_seconds = 1e-3

    @property
    def real_time_rate(self) -> float:
        simulated_seconds = self.duration * self.time_unit_seconds
        return simulated_seconds / self.wall_time if self.wall_time > 0 else float("inf")


def LoopResiduals(plant, positions: np.ndarray) -> np.ndarray:
    """max |c(q)| of each row of `positions` (T, nq), mm."""
    loops = HamrLoopConstraints(plant)
    return np.array([np.max(np.abs(loops.Residual(q))) for q in positions])


def SimulateHamr(
    config: HamrSimulationConfig,
    *,
    meshcat: Meshcat | None = None,
    progress: bool = True,
    robot_name: str = "hamr_vi",
) -> HamrSimulationLog:
    """Simulates HAMR-VI under an open-loop gait and returns the log (times in ms).

    The log's `extra` holds "loop_residual" (T,) mm, "voltage" (T, 8) V, "roll_pitch_yaw" (T, 3)
    rad, and "foot_positions" (T, 4, 3) mm (world frame, FL, RL, FR, RR).
    """
    handles = MakeHamrDiagram(config, meshcat=meshcat)
    simulator = Simulator(handles.diagram)
    simulator.Initialize()
    wall = AdvanceWithProgress(
        simulator, config.duration, progress=progress, label=f"simulate {robot_name}"
    )
    context = simulator.get_context()
    plant = handles.plant
    times, x, actuation, contact = handles.logs.Read(context)
    voltages = handles.voltage_log.FindLog(context).data().T
    count = min(len(times), len(voltages))
    times, x, actuation, contact = times[:count], x[:count], actuation[:count], contact[:count]
    nq = plant.num_positions()
    positions = x[:, :nq]
    base = {name: HamrPositionIndex(plant, name) for name in BASE_JOINTS}
    feet = [plant.GetFrameByName(f"{leg}_foot") for leg in ("FL", "RL", "FR", "RR")]
    scratch = plant.CreateDefaultContext()
    foot_positions = np.empty((count, 4, 3))
    for k in range(count):
        plant.SetPositions(scratch, positions[k])
        for j, foot in enumerate(feet):
            foot_positions[k, j] = foot.CalcPoseInWorld(scratch).translation()
    effort_limits = np.array(
        [plant.get_joint_actuator(i).effort_limit() for i in plant.GetJointActuatorIndices()]
    )
    rpy = positions[:, [base["base_roll"], base["base_pitch"], base["base_yaw"]]]
    return HamrSimulationLog(
        robot=robot_name,
        times=times,
        positions=positions,
        velocities=x[:, nq:],
        actuation=actuation,
        effort_limits=effort_limits,
        position_names=list(plant.GetPositionNames(add_model_instance_prefix=False)),
        actuator_names=[
            plant.get_joint_actuator(i).name() for i in plant.GetJointActuatorIndices()
        ],
        contact=contact,
        base_height=positions[:, base["base_z"]],
        wall_time=wall,
        extra={
            "loop_residual": LoopResiduals(plant, positions),
            "voltage": voltages[:count],
            "roll_pitch_yaw": rpy,
            "foot_positions": foot_positions,
        },
    )
