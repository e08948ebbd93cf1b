"""Simulate a robot in Drake and write a results folder.

The robot is named (`beetle`) or a scenario file gives it with the run's options
(`scenario.yaml`, keys as in SimulateScenario below; command-line options override the file).
The results folder holds summary.json (inputs, versions, figures of merit), log.npz (times,
positions, velocities, actuation, contact), replay.html (a Meshcat recording that opens in a
browser with no network) and plots.

Examples:
  drakebots simulate beetle --duration 2 --out runs/beetle_stand
  drakebots simulate beetle --duration 2 --meshcat          # also stream to a live Meshcat
  drakebots simulate my_scenario.yaml --out runs/mine
  drakebots simulate drakebots/scenarios/beetle_drop.yaml --force --out runs/drop

Durations are seconds for every robot (HAMR-VI's model runs in milliseconds internally).
"""

import dataclasses
import importlib
import math
import sys
from pathlib import Path

from drakebots.cli import AddOutputArguments, AddVerb
from drakebots.errors import InputError

SCENARIOS_DIRECTORY = Path(__file__).resolve().parents[1] / "scenarios"


@dataclasses.dataclass
class SimulateScenario:
    """What `drakebots simulate` runs; every field is also a command-line option."""

    # Robot name (drakebots info --list).
    robot: str = ""
    # Simulated time, s (for every robot, whatever its model units).
    duration: float = 2.0
    # Discrete time step of the plant, s (0: the robot family's default).
    time_step: float = 0.0
    # Sampling period of the logs, s (0: the family's default).
    log_period: float = 0.0
    # Skinned quad-robots: start this far above the home height, m (a drop test).
    drop_height: float = 0.0
    # Skinned quad-robots: ground friction coefficient.
    ground_friction: float = 0.8
    # Skinned quad-robots: a skin folder from `drakebots skin` (skin.vtk, skin.npz, skin.json),
    # or "generate" to make the default skin first; simulates skeleton and FEM skin coupled
    # (paper Eqs. 1-2) at 5 ms steps by default.
    skin: str = ""
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


# Scenario fields every family understands.
GENERIC_FIELDS = {"robot", "duration", "time_step", "log_period"}

# Robot family -> module that runs its simulations. A module defines
#   OPTIONS: set of SimulateScenario fields it uses besides GENERIC_FIELDS,
#   Simulate(scenario, robot, *, meshcat, progress) -> SimulationOutcome,
#   ReplayExtras(results_dir, robot) -> (ReplayDecorator | None, add_models | None).
FAMILY_RUNNERS = {
    "skinned_quadruped": "drakebots.cli._simulate_quadruped",
    "hamr": "drakebots.cli._simulate_hamr",
    "voxel": "drakebots.cli._simulate_voxel",
    "gecko": "drakebots.cli._simulate_gecko",
}


@dataclasses.dataclass
class SimulationOutcome:
    """What a family runner returns to this verb.

    Attributes:
        log: the SimulationLog.
        summary: family figures of merit merged into summary.json.
        decorator, add_models: replay extras (see drakebots.visualization.replay).
        files: extra files, name -> bytes or str, written into the results folder.
        figures: extra matplotlib figures, file name -> Figure.
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


def _OptionName(field: str) -> str:
    return "--" + field.replace("_", "-")


def register(subparsers):
    parser = AddVerb(subparsers, "simulate", __doc__)
    parser.add_argument("target", help="robot name, or a scenario YAML file")
    hints = {f.name: f.type for f in dataclasses.fields(SimulateScenario)}
    for field in dataclasses.fields(SimulateScenario):
        if field.name == "robot":
            continue
        kind = hints[field.name]
        kind = kind if isinstance(kind, type) else str
        if kind is bool:
            parser.add_argument(
                _OptionName(field.name),
                dest=field.name,
                action="store_true",
                default=None,
                help=_FieldHelp(field.name),
            )
        else:
            parser.add_argument(
                _OptionName(field.name),
                dest=field.name,
                type=kind,
                default=None,
                help=_FieldHelp(field.name),
            )
    parser.add_argument(
        "--meshcat",
        action="store_true",
        help="also stream the simulation to a live Meshcat (prints its URL)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def _FieldHelp(name: str) -> str:
    """The comment above a SimulateScenario field, as the option's help."""
    import inspect

    source = inspect.getsource(SimulateScenario).splitlines()
    for i, line in enumerate(source):
        if line.strip().startswith(f"{name}:"):
            comments = []
            j = i - 1
            while j >= 0 and source[j].strip().startswith("#"):
                comments.insert(0, source[j].strip().lstrip("# "))
                j -= 1
            return " ".join(comments)
    return ""


def MakeScenario(args) -> SimulateScenario:
    """Defaults <- scenario file (if the target is one) <- options given on the command line."""
    from drakebots.config import LoadTypedYaml

    target = args.target
    if target.endswith((".yaml", ".yml")):
        path = Path(target)
        if not path.is_file() and (SCENARIOS_DIRECTORY / target).is_file():
            path = SCENARIOS_DIRECTORY / target
        scenario = LoadTypedYaml(SimulateScenario, filename=path)
        if not scenario.robot:
            raise InputError(f"{path}: key 'robot' is required")
    else:
        scenario = SimulateScenario(robot=target)
    given = {}
    for field in dataclasses.fields(SimulateScenario):
        value = getattr(args, field.name, None)
        if field.name != "robot" and value is not None:
            given[field.name] = value
    scenario = dataclasses.replace(scenario, **given)
    for field in dataclasses.fields(SimulateScenario):
        value = getattr(scenario, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{_OptionName(field.name)} must be a finite number, got {value}")
    if not scenario.duration > 0.0:
        raise InputError(f"--duration must be > 0 s, got {scenario.duration}")
    if scenario.time_step < 0.0:
        raise InputError(f"--time-step must be >= 0 s, got {scenario.time_step}")
    if scenario.log_period < 0.0:
        raise InputError(f"--log-period must be >= 0 s, got {scenario.log_period}")
    return scenario


def Runner(family: str):
    """The family runner module for a robot family."""
    if family not in FAMILY_RUNNERS:
        raise InputError(f"robots of family '{family}' cannot be simulated yet")
    return importlib.import_module(FAMILY_RUNNERS[family])


def CheckOptionsApply(scenario: SimulateScenario, family: str, runner) -> None:
    """Exit 2 when an option was set that the robot's family does not use."""
    defaults = SimulateScenario()
    for field in dataclasses.fields(SimulateScenario):
        name = field.name
        if name in GENERIC_FIELDS or name in runner.OPTIONS:
            continue
        if getattr(scenario, name) != getattr(defaults, name):
            users = sorted(
                fam
                for fam, module in FAMILY_RUNNERS.items()
                if name in importlib.import_module(module).OPTIONS
            )
            raise InputError(
                f"{_OptionName(name)} does not apply to robot '{scenario.robot}' "
                f"(family {family}; it applies to: {', '.join(users) or 'none'})"
            )


def Run(args) -> int:
    from drakebots.results import DefaultOutput, ResultsFolder
    from drakebots.robots import GetRobot

    scenario = MakeScenario(args)
    robot = GetRobot(scenario.robot)
    runner = Runner(robot.family)
    CheckOptionsApply(scenario, robot.family, runner)
    out = args.out or DefaultOutput("simulate", robot.name)
    with ResultsFolder(out, force=args.force) as results:
        meshcat = None
        if args.meshcat:
            from pydrake.geometry import Meshcat

            meshcat = Meshcat()
            print(f"Meshcat: {meshcat.web_url()}", flush=True)
        outcome = runner.Simulate(
            scenario, robot, meshcat=meshcat, progress=not args.no_progress and sys.stderr.isatty()
        )
        WriteSimulationResults(results, "simulate", dataclasses.asdict(scenario), robot, outcome)
        results.Commit()
    PrintSummary(results.final, outcome, robot)
    return 1 if outcome.failure else 0


def WriteSimulationResults(results, verb: str, inputs: dict, robot, outcome) -> dict:
    """Writes summary.json, log.npz, replay.html and plots of a simulation into `results`."""
    from drakebots.cli import Summary
    from drakebots.visualization.plots import PlotBaseHeight, PlotTorquesAgainstLimits
    from drakebots.visualization.replay import ReplayHtml

    log = outcome.log
    summary = Summary(
        verb,
        inputs,
        robot=robot.name,
        family=robot.family,
        units=robot.units,
        success=outcome.failure is None,
        reason=outcome.failure,
        figures=log.Summary() | outcome.summary,
    )
    results.SaveNpz("log.npz", log.ArraysForNpz())
    time_unit = robot.units.get("time", "s")
    torque_unit = robot.units.get("torque", "N*m")
    if log.actuation.size:
        results.SaveFigure(
            "torques.png",
            PlotTorquesAgainstLimits(
                log.times,
                log.actuation,
                log.effort_limits,
                log.actuator_names,
                unit=torque_unit,
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
    results.WriteJson("summary.json", summary)
    return summary


def PrintSummary(folder: Path, outcome, robot) -> None:
    """A few lines on the terminal: where the results are and the main figures."""
    log = outcome.log
    figures = log.Summary()
    print(f"results: {folder}")
    print(
        f"  simulated {figures['duration']:.3g} {robot.units.get('time', 's')} at "
        f"{figures['real_time_rate']:.2f}x real time; base height "
        f"{figures['base_height_start']:.4g} -> {figures['base_height_end']:.4g}; "
        f"max penetration {figures['max_penetration']:.3g}; "
        f"max |effort|/limit {figures['max_torque_ratio']:.2f}"
    )
    for key, value in outcome.summary.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            print(f"  {key}: {value:.6g}")
    if outcome.failure:
        print(f"  FAILED: {outcome.failure}")
