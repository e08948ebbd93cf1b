"""`drakebots.Simulate`: simulate any robot of any family in Drake (`drakebots simulate`).

    from drakebots import Simulate, SimulateConfig
    result = Simulate(SimulateConfig(robot="beetle", duration=0.3))
    result.success, result.figures["base_height_end"], result.log.times
    result.Save("runs/beetle")    # summary.json, log.npz, replay.html, plots

The generic workflow lives here; each robot family's runner lives in its wing and is named in
`FAMILY_RUNNERS` by its module path (a string, imported when a robot of that family is simulated,
as the robot registry names the robots' modules), so this foundation imports no wing. A runner
module defines

    OPTIONS: the SimulateConfig fields it uses besides GENERIC_FIELDS,
    Simulate(config, robot, *, meshcat, progress) -> SimulationOutcome,
    ReplayExtras(results_dir, robot) -> (ReplayDecorator | None, add_models | None),

and a family of a user's own registers one with `RegisterFamilyRunner(family, module)`.

Durations are seconds for every robot (HAMR-VI's model runs in milliseconds internally).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import importlib
import math
from pathlib import Path

from drakebots.errors import InputError
from drakebots.workflow import Progress, WorkflowResult


@dataclasses.dataclass
class SimulateConfig:
    """What `Simulate` runs (every field is also a `drakebots simulate` option)."""

    # Robot name (drakebots info --list) or a robot file (ROBOT.yaml, drakebots.robots.LoadRobot).
    robot: str = "beetle"
    # Simulated time, s (for every robot, whatever its model units).
    duration: float = 2.0
    # Discrete time step of the plant, s (0: the robot family's default).
    time_step: float = 0.0
    # Sampling period of the logs, s (0: the family's default).
    log_period: float = 0.0
    # Skinned quad-robots and robot files: start this far above the home height, m (a drop test).
    drop_height: float = 0.0
    # Skinned quad-robots and robot files: ground friction coefficient.
    ground_friction: float = 0.8
    # Skinned quad-robots: a skin folder from `drakebots skin` (skin.vtk, skin.npz, skin.json),
    # or "generate" to make the default skin first; simulates skeleton and FEM skin coupled
    # (paper Eqs. 1-2) at 5 ms steps by default.
    skin: str = ""
    # Skinned quad-robots with --skin: the skin's contact, "active_set" (the paper's pinned /
    # sliding / free labels inside Newton) or "convex" (SAP's convex problem, one factorisation a
    # step, checked against Drake's deformable contact); empty: active_set.
    skin_contact: str = ""
    # Gait of a robot that walks open loop (each family validates its own; HAMR-VI: stand, trot,
    # pronk, jump; voxel robots: tripod, tripod_reverse, stand; empty: the family's default,
    # HAMR-VI stands, the voxel tripod walks its tripod gait).
    gait: str = ""
    # HAMR-VI: stride frequency of the open-loop gait, Hz (> 0).
    frequency: float = 10.0
    # HAMR-VI: running surface, teflon (mu 0.29), cardstock (0.51) or sandpaper (1.02); empty:
    # cardstock.
    surface: str = ""
    # HAMR-VI: drive-voltage amplitude of the open-loop gait about the 112.5 V mid voltage, V
    # (0 to 112.5).
    voltage_amplitude: float = 90.0
    # HAMR-VI: phase lead of each swing signal over the trot's, deg (trot, pronk; a 10 Hz pronk
    # walks forward with 90).
    swing_lead: float = 0.0
    # Number of gait cycles to simulate (0: run for --duration instead; voxel robots: a cycle
    # is the 8-step loop of the tripod gait, 2 s; gecko with --gait-law: two half cycles of
    # 2.5 s, 5 s).
    cycles: int = 0
    # Gecko: walk with the gait law (paper Eqs. 14-15) at (--q1, --q2); without it the gecko
    # stands on its home stance.
    gait_law: bool = False
    # Gecko: step length q1 of the gait law, deg, in [40, 90].
    q1: float = 90.0
    # Gecko: steering factor q2 of the gait law, in [-0.5, 0.5] (positive turns right).
    q2: float = 0.0


# Config fields every family understands.
GENERIC_FIELDS = {"robot", "duration", "time_step", "log_period"}

# Robot family -> the module (in the family's wing) that runs its simulations.
FAMILY_RUNNERS: dict[str, str] = {
    "skinned_quadruped": "drakebots.skinned.simulate",
    "hamr": "drakebots.hamr.simulate",
    "voxel": "drakebots.voxel.simulate",
    "gecko": "drakebots.gecko.simulate",
    "user": "drakebots.systems.simulate_user",
}


def RegisterFamilyRunner(family: str, module: str) -> None:
    """Simulates robots of `family` with `module` (a dotted module path; see the module doc)."""
    FAMILY_RUNNERS[family] = module


class LazyFigures(collections.abc.Mapping):
    """File name -> figure, drawn anew each time it is read (`Save` reads each once and closes
    it; a caller that only wants the figures and the log, such as a script running many cases or
    the generic model checks, pays nothing for plotting and keeps no open matplotlib figures)."""

    def __init__(self, makers: dict):
        self._makers = makers

    def __getitem__(self, name):
        return self._makers[name]()

    def __iter__(self):
        return iter(self._makers)

    def __len__(self):
        return len(self._makers)


@dataclasses.dataclass
class SimulationOutcome:
    """What a family runner returns to `Simulate`.

    Attributes:
        log: the SimulationLog.
        summary: family figures of merit merged into the figures.
        decorator, add_models: replay extras (see drakebots.visualization.replay).
        files: extra files, name -> bytes or str, written into the results folder.
        figures: extra matplotlib figures, file name -> Figure (or a mapping drawing each when
            read).
        failure: a reason when the run did not reach its goal (exit 1, results kept).
        nominal_base_height: for the base-height plot.
    """

    log: object
    summary: dict = dataclasses.field(default_factory=dict)
    decorator: object = None
    add_models: object = None
    files: dict = dataclasses.field(default_factory=dict)
    figures: dict = dataclasses.field(default_factory=dict)
    failure: str | None = None
    nominal_base_height: float | None = None


@dataclasses.dataclass
class SimulateResult(WorkflowResult):
    """A simulation's result: the figures of summary.json and the log a user plots.

    Attributes (besides WorkflowResult's):
        robot: the simulated Robot (drakebots.robots.base).
        log: the SimulationLog (times, positions, velocities, actuation, contact, extra arrays).
        outcome: the family runner's SimulationOutcome (plots, extra files, replay extras).
    """

    robot: object = None
    log: object = None
    outcome: SimulationOutcome | None = None

    def Summary(self, command: str | None = None) -> dict:
        """summary.json: the common head, robot, family, units, success, reason, figures; for a
        robot from a robot file also robot_file (its absolute path, which `drakebots view`
        reloads)."""
        from drakebots.results import MakeSummary

        source = getattr(self.robot, "source", "")
        extra = {"robot_file": str(Path(source).resolve())} if source else {}
        return MakeSummary(
            self.verb,
            dataclasses.asdict(self.config),
            command=command,
            robot=self.robot.name,
            family=self.robot.family,
            units=self.robot.units,
            success=self.success,
            reason=self.reason,
            figures=self.figures,
            **extra,
        )

    def _Write(self, results) -> None:
        WriteSimulationFiles(results, self.robot, self.outcome)


def OptionName(field: str) -> str:
    """The command-line option of a SimulateConfig field."""
    return "--" + field.replace("_", "-")


def CheckConfig(config: SimulateConfig, names: dict | None = None) -> None:
    """InputError for a value no family accepts (non-finite numbers, a duration <= 0, a drop
    height or a ground friction above its drakebots.limits bound, ...), or for more work than one
    run may ask for (drakebots.limits: duration, steps, log samples).

    Args:
        names: field -> how the user gave it, where not its option (OptionName): a scenario
            file's key ("scenario.yaml: key 'duration'"), so that a refusal names the file.
    """
    from drakebots.config import CheckTypes
    from drakebots.limits import CheckSimulation, CheckWork

    names = names or {}

    def Name(field: str) -> str:
        return names.get(field, OptionName(field))

    CheckTypes(config)
    if not config.robot:
        raise InputError("SimulateConfig.robot is empty: give a robot name (drakebots info --list)")
    for field in dataclasses.fields(SimulateConfig):
        value = getattr(config, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{Name(field.name)} must be a finite number, got {value}")
    if not config.duration > 0.0:
        raise InputError(f"{Name('duration')} must be > 0 s, got {config.duration}")
    if config.time_step < 0.0:
        raise InputError(f"{Name('time_step')} must be >= 0 s, got {config.time_step}")
    if config.log_period < 0.0:
        raise InputError(f"{Name('log_period')} must be >= 0 s, got {config.log_period}")
    # 1e300 m simulated and reported "the robot fell"; a friction of 1e308 "succeeded" (issue 68).
    CheckWork("drop_height", config.drop_height, Name("drop_height"))
    CheckWork("friction", config.ground_friction, Name("ground_friction"))
    CheckWork("duration", config.duration, Name("duration"))
    CheckSimulation(
        config.duration,
        config.time_step,
        config.log_period,
        names=(Name("duration"), Name("time_step"), Name("log_period")),
    )


def Runner(family: str):
    """The runner module of a robot family (imported now)."""
    if family not in FAMILY_RUNNERS:
        raise InputError(f"robots of family '{family}' cannot be simulated yet")
    return importlib.import_module(FAMILY_RUNNERS[family])


def CheckOptionsApply(config: SimulateConfig, family: str, runner) -> None:
    """InputError when an option was set that the robot's family does not use."""
    defaults = SimulateConfig()
    for field in dataclasses.fields(SimulateConfig):
        name = field.name
        if name in GENERIC_FIELDS or name in runner.OPTIONS:
            continue
        if getattr(config, name) != getattr(defaults, name):
            users = sorted(
                fam
                for fam, module in FAMILY_RUNNERS.items()
                if name in importlib.import_module(module).OPTIONS
            )
            raise InputError(
                f"{OptionName(name)} does not apply to robot '{config.robot}' "
                f"(family {family}; it applies to: {', '.join(users) or 'none'})"
            )


def Simulate(
    config: SimulateConfig, *, meshcat=None, progress: Progress | None = None
) -> SimulateResult:
    """Simulates `config.robot` with its family's runner.

    Args:
        config: what to run (SimulateConfig).
        meshcat: a Meshcat to stream the simulation to (None: none).
        progress: a callable taking drakebots.workflow.ProgressEvent (None: silent).

    Returns:
        SimulateResult: success False (with the reason) when the run did not reach its goal
        (the robot fell, the state diverged, a constraint opened, ...).

    Raises:
        InputError: an unknown robot, a bad value, an option the robot's family does not use.
    """
    from drakebots.robots import GetRobot

    CheckConfig(config)
    robot = GetRobot(config.robot)
    runner = Runner(robot.family)
    CheckOptionsApply(config, robot.family, runner)
    outcome = runner.Simulate(config, robot, meshcat=meshcat, progress=progress)
    return SimulateResult(
        verb="simulate",
        config=config,
        success=outcome.failure is None,
        reason=outcome.failure,
        figures=outcome.log.Summary() | outcome.summary,
        robot=robot,
        log=outcome.log,
        outcome=outcome,
    )


def WriteSimulationFiles(results, robot, outcome: SimulationOutcome) -> None:
    """log.npz, the plots, the family's extra files and replay.html of a run, into `results`
    (a drakebots.results.ResultsFolder; summary.json is the caller's)."""
    from drakebots.visualization.plots import PlotBaseHeight, PlotTorquesAgainstLimits
    from drakebots.visualization.replay import ReplayHtml

    log = outcome.log
    results.SaveNpz("log.npz", log.ArraysForNpz())
    time_unit = robot.units.get("time", "s")
    if log.actuation.size:
        results.SaveFigure(
            "torques.png",
            PlotTorquesAgainstLimits(
                log.times,
                log.actuation,
                log.effort_limits,
                log.actuator_names,
                unit=robot.units.get("torque", "N*m"),
                time_unit=time_unit,
                title=f"{robot.name}: actuator efforts against limits",
            ),
        )
    results.SaveFigure(
        "base_height.png",
        PlotBaseHeight(
            log.times,
            log.base_height,
            nominal=outcome.nominal_base_height,
            unit=robot.units.get("length", "m"),
            time_unit=time_unit,
            title=f"{robot.name}: base height",
        ),
    )
    for name, figure in outcome.figures.items():
        results.SaveFigure(name, figure)
    for name, content in outcome.files.items():
        if isinstance(content, bytes):
            results.File(name).write_bytes(content)
        else:
            results.WriteText(name, content)
    html = ReplayHtml(
        robot, log.times, log.positions, decorator=outcome.decorator, add_models=outcome.add_models
    )
    results.WriteText("replay.html", html)


def LoadSimulationFolder(folder: str | Path):
    """(robot, log, summary) of a results folder holding summary.json (with 'robot') and log.npz;
    InputError names what is missing."""
    from drakebots.robots import GetRobot
    from drakebots.systems.simulation import LoadSimulationLog

    folder = Path(folder)
    summary_path, log_path = folder / "summary.json", folder / "log.npz"
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder")
    if not summary_path.is_file():
        raise InputError(f"{folder}: no summary.json (not a drakebots results folder)")
    if not log_path.is_file():
        raise InputError(f"{folder}: no log.npz to replay")
    from drakebots.results import ReadJson

    summary = ReadJson(summary_path, required=("robot",))
    try:
        # A robot file's run names the file (its robot name is not in the registry).
        key = "robot_file" if summary.get("robot_file") else "robot"
        robot = GetRobot(summary[key])
    except (InputError, TypeError) as e:
        raise InputError(f"{summary_path}: '{key}' {summary[key]!r}: {e}") from None
    log = LoadSimulationLog(log_path)
    if log.positions.ndim != 2 or len(log.times) != len(log.positions):
        raise InputError(f"{log_path}: 'times' and 'positions' do not match (not a drakebots log)")
    return robot, log, summary


def ReplayFolder(meshcat, folder: str | Path, loaded=None):
    """Publishes a results folder's logged motion to `meshcat` as an animation, with its family's
    replay extras (suction markers, the skin, ...).

    Args:
        loaded: the folder's (robot, log, summary) if already read (LoadSimulationFolder).

    Returns:
        (robot, log, number of frames).
    """
    from drakebots.visualization.replay import RecordReplay

    robot, log, _ = loaded or LoadSimulationFolder(folder)
    decorator, add_models = Runner(robot.family).ReplayExtras(Path(folder), robot)
    _, frames = RecordReplay(
        meshcat, robot, log.times, log.positions, decorator=decorator, add_models=add_models
    )
    return robot, log, frames
