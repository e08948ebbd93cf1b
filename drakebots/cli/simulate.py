"""Simulate a robot in Drake and write a results folder.

The robot is named (`beetle`), is a robot file (`hopper.yaml`, drakebots.robots.LoadRobot: a
YAML with `model:` or `kind:`), or a scenario file gives it with the run's options
(`scenario.yaml`, keys as in drakebots.SimulateConfig; command-line options override the file;
`--config FILE` is the same as giving the file as the target).
The results folder holds summary.json (inputs, versions, figures of merit), log.npz (times,
positions, velocities, actuation, contact), replay.html (a Meshcat recording that opens in a
browser with no network) and plots.

Examples:
  drakebots simulate beetle --duration 2 --out runs/beetle_stand
  drakebots simulate beetle --duration 2 --meshcat          # also stream to a live Meshcat
  drakebots simulate my_scenario.yaml --out runs/mine
  drakebots simulate drakebots/scenarios/beetle_drop.yaml --force --out runs/drop
  drakebots simulate scripts/examples/hopper/hopper.yaml --drop-height 0.03 --duration 1

Durations are seconds for every robot (HAMR-VI's model runs in milliseconds internally).
"""

import dataclasses
from pathlib import Path

from drakebots.cli import AddOutputArguments, AddVerb, CommandLine
from drakebots.errors import InputError
from drakebots.systems.simulate import OptionName, SimulateConfig

SCENARIOS_DIRECTORY = Path(__file__).resolve().parents[1] / "scenarios"


def register(subparsers):
    parser = AddVerb(subparsers, "simulate", __doc__)
    parser.add_argument(
        "target",
        nargs="?",
        help="robot name, robot file (ROBOT.yaml), or a scenario YAML file (or give --config)",
    )
    parser.add_argument(
        "--config", default=None, help="a scenario YAML file (keys as drakebots.SimulateConfig)"
    )
    for field in dataclasses.fields(SimulateConfig):
        if field.name == "robot":
            continue
        kind = field.type if isinstance(field.type, type) else _TYPES[field.type]
        options = dict(dest=field.name, default=None, help=_FieldHelp(field.name))
        if kind is bool:
            parser.add_argument(OptionName(field.name), action="store_true", **options)
        else:
            parser.add_argument(OptionName(field.name), type=kind, **options)
    parser.add_argument(
        "--meshcat",
        action="store_true",
        help="also stream the simulation to a live Meshcat (prints its URL)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


# SimulateConfig's annotations are strings (from __future__ import annotations).
_TYPES = {"str": str, "float": float, "int": int, "bool": bool}


def _FieldHelp(name: str) -> str:
    """The comment above a SimulateConfig field, as the option's help."""
    import inspect

    source = inspect.getsource(SimulateConfig).splitlines()
    for i, line in enumerate(source):
        if line.strip().startswith(f"{name}:"):
            comments = []
            j = i - 1
            while j >= 0 and source[j].strip().startswith("#"):
                comments.insert(0, source[j].strip().lstrip("# "))
                j -= 1
            return " ".join(comments)
    return ""


def _ScenarioFile(name: str) -> Path:
    path = Path(name)
    if not path.is_file() and (SCENARIOS_DIRECTORY / name).is_file():
        path = SCENARIOS_DIRECTORY / name
    return path


def IsRobotFile(name: str) -> bool:
    """True when the YAML file `name` is a robot file (it has `model`, `kind` or `skeleton` and no
    `robot`), not a scenario file."""
    from drakebots.config import ReadYaml

    path = Path(name)
    if not path.is_file():
        return False
    data = ReadYaml(path)
    keys = set(data) if isinstance(data, dict) else set()
    return "robot" not in keys and bool(keys & {"model", "kind", "skeleton"})


def MakeConfig(args) -> SimulateConfig:
    """Defaults <- scenario file (--config, or the target if it is one) <- options given."""
    return _MakeConfig(args)[0]


def _MakeConfig(args) -> tuple[SimulateConfig, dict]:
    """(MakeConfig's config, {field: "FILE: key 'field'"} for each value the scenario file gave
    and no option overrode): a refusal of such a value names the file and key (issue 68)."""
    from drakebots.config import ReadYaml
    from drakebots.workflow import LoadConfig

    target, file = args.target, args.config
    if target is not None and target.endswith((".yaml", ".yml")) and not IsRobotFile(target):
        if file is not None:
            raise InputError(f"give the scenario file once: {target} or --config {file}")
        file, target = target, None
    if file is not None:
        path = _ScenarioFile(file)
        try:
            config = LoadConfig(SimulateConfig, path, defaults=SimulateConfig(robot=""))
        except InputError as e:
            if args.config is None:
                raise
            raise InputError(f"--config {e}") from None
        if target is not None:
            config = dataclasses.replace(config, robot=target)
        elif not Path(config.robot).exists() and (path.parent / config.robot).is_file():
            # A scenario's robot file, relative to the scenario file.
            config = dataclasses.replace(config, robot=str(path.parent / config.robot))
        if not config.robot:
            raise InputError(f"{path}: key 'robot' is required")
        keys = ReadYaml(path)
        names = {
            f.name: f"{path}: key '{f.name}'"
            for f in dataclasses.fields(SimulateConfig)
            if isinstance(keys, dict) and f.name in keys
        }
    elif target is not None:
        config, names = SimulateConfig(robot=target), {}
    else:
        raise InputError("give a robot name or a scenario file (drakebots info --list)")
    given = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(SimulateConfig)
        if field.name != "robot" and getattr(args, field.name, None) is not None
    }
    names = {field: name for field, name in names.items() if field not in given}
    return dataclasses.replace(config, **given), names


def CheckArgs(args):
    """(config, robot) of the command line, checked (unknown robot, bad values, options its
    family does not use); `drakebots sweep` calls it for every case before any runs."""
    from drakebots.robots import GetRobot
    from drakebots.systems.simulate import CheckConfig, CheckOptionsApply, Runner

    config, names = _MakeConfig(args)
    CheckConfig(config, names)
    robot = GetRobot(config.robot)
    CheckOptionsApply(config, robot.family, Runner(robot.family))
    return config, robot


def Run(args) -> int:
    from drakebots.cli._progress import CliProgress
    from drakebots.results import CheckOutputFolder, DefaultOutput
    from drakebots.systems.simulate import Simulate

    config, robot = CheckArgs(args)
    out = args.out or DefaultOutput("simulate", robot.name)
    reads = [p for p in (args.config, args.target, config.skin) if p and Path(p).exists()]
    CheckOutputFolder(out, args.force, reads=reads)
    meshcat = None
    if args.meshcat:
        from drakebots.visualization.meshcat import LocalMeshcat

        meshcat = LocalMeshcat()
        print(f"Meshcat: {meshcat.web_url()}", flush=True)
    progress = CliProgress(bars=False if args.no_progress else None)
    result = Simulate(config, meshcat=meshcat, progress=progress)
    progress.Close()
    folder = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    PrintSummary(folder, result)
    return 0 if result.success else 1


def PrintSummary(folder: Path, result) -> None:
    """A few lines on the terminal: where the results are and the main figures."""
    robot, figures = result.robot, result.log.Summary()
    print(f"results: {folder}")
    print(
        f"  simulated {figures['duration']:.3g} {robot.units.get('time', 's')} at "
        f"{figures['real_time_rate']:.2f}x real time; base height "
        f"{figures['base_height_start']:.4g} -> {figures['base_height_end']:.4g}; "
        f"max penetration {figures['max_penetration']:.3g}; "
        f"max |effort|/limit {figures['max_torque_ratio']:.2f}"
    )
    for key, value in result.outcome.summary.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            print(f"  {key}: {value:.6g}")
    if isinstance(result.outcome.summary.get("warning"), str):
        print(f"  WARNING: {result.outcome.summary['warning']}")
    if not result.success:
        print(f"  FAILED: {result.reason}")
