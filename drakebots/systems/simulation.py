"""Pieces every simulation run shares: the contact monitor, progress, and the run's log.

`SimulationLog` is what a library simulation returns and what the command line writes into a
results folder (log.npz, summary.json, plots, replay.html). It holds arrays only, so analysis and
visualization code can use it without the diagram.
"""

import dataclasses
import time

import numpy as np
from pydrake.common.value import Value
from pydrake.multibody.plant import ContactResults
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import BasicVector, DiagramBuilder, LeafSystem, OutputPort
from pydrake.systems.primitives import VectorLogSink


class ContactMonitor(LeafSystem):
    """Summarises a plant's point contacts each step: deepest penetration, contact count, force.

    Double only.

    contact_results -> ContactMonitor -> contact_summary

    The output is [max penetration depth, number of point contacts, total normal force], in the
    plant's units.
    """

    def __init__(self):
        super().__init__()
        self._contact_port = self.DeclareAbstractInputPort(
            "contact_results", Value(ContactResults())
        )
        self.DeclareVectorOutputPort("contact_summary", 3, self._CalcSummary)

    def get_contact_results_input_port(self):
        return self._contact_port

    def _CalcSummary(self, context, output: BasicVector):
        results = self._contact_port.Eval(context)
        depth, normal_force = 0.0, 0.0
        count = results.num_point_pair_contacts()
        for i in range(count):
            info = results.point_pair_contact_info(i)
            depth = max(depth, info.point_pair().depth)
            normal_force += abs(float(np.dot(info.contact_force(), info.point_pair().nhat_BA_W)))
        output.SetFromVector([depth, float(count), normal_force])


class SimulationProgress:
    """The progress of a simulation run, in `chunks` steps.

    `progress` is a workflow's callback (drakebots.workflow.ProgressEvent: one Step event per
    chunk, task `label`), True for a tqdm bar of simulated seconds on stderr, or None/False for
    nothing.
    """

    def __init__(self, progress, label: str, duration: float, chunks: int):
        self._bar = None
        self._reporter = None
        self._label, self._duration, self._chunks = label, duration, chunks
        if callable(progress):
            from drakebots.workflow import Reporter

            self._reporter = Reporter(progress)
        elif progress:
            from tqdm import tqdm

            self._bar = tqdm(
                total=duration,
                desc=label,
                unit="s sim",
                leave=False,
                bar_format="{l_bar}{bar}| {n:.3g}/{total:.3g} {unit} [{elapsed}<{remaining}]",
            )

    def Update(self, chunk: int, simulated: float) -> None:
        """`chunk` of the chunks done, `simulated` seconds (model time units) of the duration."""
        if self._bar is not None:
            self._bar.n = simulated
            self._bar.refresh()
        if self._reporter is not None:
            self._reporter.Step(self._label, chunk, self._chunks)

    def Close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def AdvanceWithProgress(
    simulator: Simulator,
    duration: float,
    *,
    progress=True,
    label: str = "simulate",
    chunks: int = 100,
) -> float:
    """Advances `simulator` by `duration` in chunks, reporting progress (a workflow's callback, True
    for a tqdm bar, None for nothing: SimulationProgress); returns wall seconds."""
    start_time = simulator.get_context().get_time()
    bar = SimulationProgress(progress, label, duration, chunks)
    wall_start = time.perf_counter()
    for k in range(1, chunks + 1):
        target = start_time + duration * k / chunks
        try:
            simulator.AdvanceTo(target)
        except RuntimeError as e:
            bar.Close()
            if "NaN" not in str(e):
                raise
            # Drake's solvers stop on a NaN state; from a start as absurd as a joint at 1e10 rad
            # that was a traceback (issue 68). The input is what to change: one line, exit 2.
            from drakebots.errors import InputError

            now = simulator.get_context().get_time()
            raise InputError(
                f"the simulation's state became NaN at t = {now:.4g} (model time units): an "
                "input it cannot simulate; check the robot's home pose (joint values, base pose), "
                f"the drop height and the time step (Drake: {str(e).split('. ')[0]})"
            ) from None
        bar.Update(k, target - start_time)
    wall = time.perf_counter() - wall_start
    bar.Close()
    return wall


@dataclasses.dataclass
class PlantLogs:
    """The three loggers every simulation run keeps: state, applied actuation, contact summary.

    plant.state -> VectorLogSink "state_log"
    actuation source -> VectorLogSink "actuation_log"
    contact results -> ContactMonitor -> VectorLogSink "contact_log"
    """

    state: VectorLogSink
    actuation: VectorLogSink
    contact: VectorLogSink

    def Read(self, root_context):
        """Returns (times, states, actuation, contact) as arrays with one row per sample.

        The three loggers may hold one sample more or less than each other (their publish events
        are separate), so every array is cut to the shortest.
        """
        logs = [sink.FindLog(root_context) for sink in (self.state, self.actuation, self.contact)]
        count = min(len(log.sample_times()) for log in logs)
        times = logs[0].sample_times()[:count]
        return (times, *(log.data().T[:count] for log in logs))


def AddPlantLogs(
    builder: DiagramBuilder,
    state_port: OutputPort,
    actuation_port: OutputPort,
    contact_results_port: OutputPort | None,
    log_period: float,
    *,
    contact_summary_port: OutputPort | None = None,
) -> PlantLogs:
    """Adds and connects the state, actuation and contact-summary loggers of a run.

    Args:
        builder: the diagram under construction.
        state_port: the state to log (a MultibodyPlant's state output port, or a coupled system's
            skeleton state).
        actuation_port: the applied joint actuation (e.g. the plant's net actuation).
        contact_results_port: the plant's contact results; a ContactMonitor summarises them.
            None when `contact_summary_port` already gives the 3-vector summary.
        log_period: logging period, in the plant's time unit.
        contact_summary_port: a ready [depth, count, normal force] port (instead of the monitor).
    """

    def Sink(port, name):
        sink = builder.AddSystem(VectorLogSink(port.size(), log_period))
        sink.set_name(name)
        builder.Connect(port, sink.get_input_port())
        return sink

    if contact_summary_port is None:
        monitor = builder.AddSystem(ContactMonitor())
        builder.Connect(contact_results_port, monitor.get_input_port())
        contact_summary_port = monitor.get_output_port()
    return PlantLogs(
        state=Sink(state_port, "state_log"),
        actuation=Sink(actuation_port, "actuation_log"),
        contact=Sink(contact_summary_port, "contact_log"),
    )


def AddMultibodyPlantLogs(builder: DiagramBuilder, plant, log_period: float) -> PlantLogs:
    """`AddPlantLogs` for a MultibodyPlant: its state, net actuation and contact results."""
    return AddPlantLogs(
        builder,
        plant.get_state_output_port(),
        plant.get_net_actuation_output_port(),
        plant.get_contact_results_output_port(),
        log_period,
    )


@dataclasses.dataclass
class SimulationLog:
    """Arrays of one simulation run (robot units; see `units`).

    Attributes:
        robot: registry name of the robot.
        times: (T,) sample times.
        positions: (T, nq) generalized positions of the whole plant.
        velocities: (T, nv) generalized velocities.
        actuation: (T, nu) net actuation applied to each actuator (PD included).
        effort_limits: (nu,) actuator effort limits.
        position_names, actuator_names: plant names, for plots and tables.
        contact: (T, 3) [max penetration, number of contacts, total normal force].
        base_height: (T,) height of the base body frame.
        wall_time: seconds of wall clock the simulation took.
        extra: family-specific arrays (e.g. skin vertices, loop residuals), name -> array.
    """

    robot: str
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    actuation: np.ndarray
    effort_limits: np.ndarray
    position_names: list
    actuator_names: list
    contact: np.ndarray
    base_height: np.ndarray
    wall_time: float
    extra: dict = dataclasses.field(default_factory=dict)

    @staticmethod
    def FromPlant(
        robot: str,
        plant,
        times,
        state,
        actuation,
        contact,
        base_height,
        wall_time: float,
        extra: dict | None = None,
    ) -> "SimulationLog":
        """The log of a run of `plant` from its logged state (T, nq + nv) and the other logged
        arrays: the effort limits and the position and actuator names from the plant."""
        nq = plant.num_positions()
        indices = plant.GetJointActuatorIndices()
        return SimulationLog(
            robot=robot,
            times=times,
            positions=state[:, :nq],
            velocities=state[:, nq:],
            actuation=actuation,
            effort_limits=np.array([plant.get_joint_actuator(i).effort_limit() for i in indices]),
            position_names=list(plant.GetPositionNames(add_model_instance_prefix=False)),
            actuator_names=[plant.get_joint_actuator(i).name() for i in indices],
            contact=contact,
            base_height=base_height,
            wall_time=wall_time,
            extra={} if extra is None else extra,
        )

    @property
    def duration(self) -> float:
        return float(self.times[-1] - self.times[0]) if len(self.times) else 0.0

    @property
    def real_time_rate(self) -> float:
        return self.duration / self.wall_time if self.wall_time > 0 else float("inf")

    def ArraysForNpz(self) -> dict:
        """Everything as named arrays for numpy.savez (strings as arrays of str)."""
        arrays = {
            "robot": np.array(self.robot),
            "times": self.times,
            "positions": self.positions,
            "velocities": self.velocities,
            "actuation": self.actuation,
            "effort_limits": self.effort_limits,
            "position_names": np.array(self.position_names, dtype=str),
            "actuator_names": np.array(self.actuator_names, dtype=str),
            "contact": self.contact,
            "base_height": self.base_height,
        }
        for key, value in self.extra.items():
            arrays[f"extra_{key}"] = np.asarray(value)
        return arrays

    def Summary(self) -> dict:
        """Figures of merit common to every simulation (robot units)."""
        ratio = np.abs(self.actuation) / np.maximum(self.effort_limits, 1e-300)
        finite = bool(np.all(np.isfinite(self.positions)) and np.all(np.isfinite(self.velocities)))
        per_actuator = (
            {name: float(r) for name, r in zip(self.actuator_names, ratio.max(axis=0))}
            if ratio.size
            else {}
        )
        return {
            "duration": self.duration,
            "num_samples": int(len(self.times)),
            "finite_state": finite,
            "base_height_start": float(self.base_height[0]),
            "base_height_end": float(self.base_height[-1]),
            "base_height_min": float(np.min(self.base_height)),
            "base_height_max": float(np.max(self.base_height)),
            "max_penetration": float(np.max(self.contact[:, 0])) if len(self.contact) else 0.0,
            "max_torque_ratio": float(ratio.max()) if ratio.size else 0.0,
            "max_torque_ratio_per_actuator": per_actuator,
            "wall_time_s": self.wall_time,
            "real_time_rate": self.real_time_rate,
        }


def LoadSimulationLog(path) -> SimulationLog:
    """Reads a log.npz written from `SimulationLog.ArraysForNpz` (robot name from the file);
    InputError naming the file when it is not one (corrupt, cut short, arrays missing)."""
    from drakebots.errors import InputError
    from drakebots.results import ReadNpz

    data = ReadNpz(path, required=_LOG_ARRAYS)
    extra = {k[len("extra_") :]: v for k, v in data.items() if k.startswith("extra_")}
    try:
        return SimulationLog(
            robot=str(data["robot"]) if "robot" in data else "",
            times=data["times"],
            positions=data["positions"],
            velocities=data["velocities"],
            actuation=data["actuation"],
            effort_limits=data["effort_limits"],
            position_names=[str(s) for s in data["position_names"]],
            actuator_names=[str(s) for s in data["actuator_names"]],
            contact=data["contact"],
            base_height=data["base_height"],
            wall_time=0.0,
            extra=extra,
        )
    except (TypeError, ValueError) as e:
        raise InputError(f"{path}: not a drakebots log ({e})") from None


_LOG_ARRAYS = (
    "times",
    "positions",
    "velocities",
    "actuation",
    "effort_limits",
    "position_names",
    "actuator_names",
    "contact",
    "base_height",
)
