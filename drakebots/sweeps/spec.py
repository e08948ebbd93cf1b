"""Sweep files for `drakebots sweep`: the typed schema, named sweeps, expansion and validation.

A sweep file says which `drakebots` command every case runs, the options all cases share, and the
options that vary: a grid (every combination) and/or a list of cases. For example
(drakebots/sweeps/beetle_drop.yaml):

    description: Beetle skeleton dropped from 0-4 cm onto grounds of two frictions
    command: simulate beetle
    fixed:
      duration: 0.5
    grid:
      drop-height: [0.0, 0.02, 0.04]
      ground-friction: [0.4, 0.8]

Option names are the command's long options without the leading dashes. A flag (an option that
takes no value, such as `--gait-law`) is given as `true` (present) or `false` (absent). A grid key
written as `{key}` inside `command` or inside a fixed value fills that place instead of becoming
an option (to sweep over a positional argument: `command: design {robot}` with
`grid: {robot: [beetle, cow]}`; or over the output of another sweep:
`fixed: {skin: "runs/skins/cases/youngs-modulus={youngs-modulus}"}`).

Every case's command line is checked by the real `drakebots` argument parser before any case runs
(DESIGN.md: bad input exits 2 and writes nothing). A verb module may also define
`CheckArgs(args)`, which raises InputError for inputs argparse cannot judge; it is called here too.
"""

import argparse
import contextlib
import dataclasses
import io
import itertools
import math
import re
import shlex
import typing
from pathlib import Path

from drakebots.errors import InputError

SWEEPS_DIRECTORY = Path(__file__).resolve().parent

# A value in a sweep file: YAML's scalars. Strings pass through unchanged; numbers are written on
# the case's command line as Python prints them (0.05 -> "0.05").
Value = typing.Union[bool, int, float, str]

# Options that the sweep itself sets on every case.
_RESERVED = {"out", "force"}

_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_-]+)\}")


@dataclasses.dataclass
class SweepCaseSpec:
    """One listed case of a sweep file."""

    # Folder name of the case under cases/ (default: made from its command and arguments).
    name: str = ""
    # Its own command ("optimize hamr-jump"); empty: the sweep's command, with the fixed options.
    command: str = ""
    # Options of this case: option name without dashes -> value.
    args: dict[str, Value] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class SweepFile:
    """The schema of a sweep file (keys as below; an unknown key is an error naming it)."""

    # What the sweep is for, one line (shown by `drakebots sweep --list`).
    description: str = ""
    # The drakebots command every case runs: verb, sub-verb and positional arguments
    # ("simulate beetle", "optimize hamr-gait"); "{key}" takes that grid key's value.
    command: str = ""
    # Options every case of `command` gets: option name without dashes -> value.
    fixed: dict[str, Value] = dataclasses.field(default_factory=dict)
    # Varied options: every combination of these values is one case (option -> list of values).
    grid: dict[str, list[Value]] = dataclasses.field(default_factory=dict)
    # Cases listed one by one (run besides the grid's).
    cases: list[SweepCaseSpec] = dataclasses.field(default_factory=list)
    # Figures of merit (summary.json keys) the table and figures.png show first, in this order;
    # the rest of their places go to the figures that vary most between cases.
    figures: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Case:
    """One expanded case: what a worker runs.

    Attributes:
        name: folder name under the sweep's cases/.
        argv: the drakebots command line without --out/--force.
        params: the varied values (grid keys and listed-case args), for the table.
    """

    name: str
    argv: list[str]
    params: dict[str, Value]

    def AsDict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Sweep:
    """A loaded, expanded and validated sweep."""

    name: str
    source: Path
    description: str
    cases: list[Case]
    figures: list[str] = dataclasses.field(default_factory=list)


def NamedSweeps() -> dict[str, Path]:
    """The sweeps shipped with drakebots: name -> file (`drakebots/sweeps/*.yaml`)."""
    return {path.stem: path for path in sorted(SWEEPS_DIRECTORY.glob("*.yaml"))}


def ResolveSweepFile(name_or_file: str) -> Path:
    """A sweep file given as a path, or by the name of a shipped sweep.

    `hamr_paper`, `hamr_paper.yaml` and `sweeps/hamr_paper.yaml` all find the shipped file when no
    such file exists where the command runs.
    """
    path = Path(name_or_file)
    if path.is_file():
        return path
    named = NamedSweeps()
    stem = path.stem if path.suffix in (".yaml", ".yml") else path.name
    if stem in named:
        return named[stem]
    raise InputError(
        f"sweep '{name_or_file}': no such file and no shipped sweep of that name "
        f"(shipped: {', '.join(named) or 'none'})"
    )


def _FormatValue(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _Slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+=,-]", "_", text)


def _NameValue(value: Value) -> str:
    """A value as a folder name shows it: 12 significant digits (4.5e7 -> 45000000, 0.0 -> 0)."""
    if isinstance(value, float):
        return format(value, ".12g")
    return _FormatValue(value)


def _CaseName(command_words: list[str], params: dict[str, Value]) -> str:
    """`key=value,key=value` (file names are at most 255 bytes: a long one is cut and hashed)."""
    import hashlib

    parts = list(command_words) + [f"{key}={_NameValue(v)}" for key, v in params.items()]
    name = _Slug(",".join(parts)) or "case"
    if len(name) > 120:
        name = name[:110] + "-" + hashlib.sha1(name.encode()).hexdigest()[:9]
    return name


def _VerbParser(
    top: argparse.ArgumentParser, words: list[str], source: str, where: str
) -> argparse.ArgumentParser:
    """The parser of the options of `words` (the verb, then sub-verbs among the positionals)."""
    if not words:
        raise InputError(f"{source}: {where}: 'command' is empty (e.g. command: simulate beetle)")
    if words[0] == "sweep":
        raise InputError(
            f"{source}: {where}: a case may not run `sweep` (a sweep of sweeps would lock and "
            "resume folders it does not own); list the inner sweep's cases here instead"
        )
    # The verbs as the command line spells them (skin-bend), not their modules' names (skin_bend).
    (verbs,) = [a.choices for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    if words[0] not in verbs:
        raise InputError(
            f"{source}: {where}: unknown verb '{words[0]}' "
            f"(drakebots verbs here: {', '.join(verbs)})"
        )
    parser = top
    for word in words:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers:
            break
        if word not in subparsers[0].choices:
            if parser is top:
                raise InputError(f"{source}: {where}: unknown verb '{word}'")
            raise InputError(
                f"{source}: {where}: unknown sub-command '{word}' of "
                f"'{parser.prog}' (known: {', '.join(subparsers[0].choices)})"
            )
        parser = subparsers[0].choices[word]
    return parser


def _OptionArgs(
    parser: argparse.ArgumentParser, options: dict[str, Value], source: str, where: str
) -> list[str]:
    """Command-line words for `options`, checked against the verb's parser."""
    words = []
    known = parser._option_string_actions
    for key, value in options.items():
        if key.lstrip("-") in _RESERVED:
            raise InputError(
                f"{source}: {where}: option '{key}' is set by the sweep (each case gets "
                "--out CASE_FOLDER); remove it"
            )
        candidates = [f"--{key.lstrip('-')}", f"--{key.lstrip('-').replace('_', '-')}"]
        option = next((c for c in candidates if c in known), None)
        if option is None:
            options_known = sorted(
                s for s in known if s.startswith("--") and s.lstrip("-") not in _RESERVED
            )
            raise InputError(
                f"{source}: {where}: unknown option '{key}' for '{parser.prog}' "
                f"(its options: {', '.join(o[2:] for o in options_known if o != '--help')})"
            )
        action = known[option]
        if action.nargs == 0:  # A flag: true -> present, false -> absent.
            if not isinstance(value, bool):
                raise InputError(
                    f"{source}: {where}: '{key}' is a flag; give it true or false, not {value!r}"
                )
            if value:
                words.append(option)
        else:
            words.append(f"{option}={_FormatValue(value)}")
    return words


def _CheckArgv(top: argparse.ArgumentParser, argv: list[str], source: str, where: str) -> None:
    """Parses a case's command line with the real parser (and the verb's CheckArgs, if any)."""
    import sys

    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            args = top.parse_args(argv + ["--out", "/nonexistent/sweep-check"])
    except SystemExit:
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        message = lines[-1] if lines else "rejected by the argument parser"
        # "drakebots simulate: error: argument --x: ... (see drakebots simulate --help)": the
        # option and what is wrong, once.
        message = re.sub(r"^[\w -]+: error: ", "", message)
        message = re.sub(r" \(see [\w -]+ --help\)$", "", message)
        raise InputError(f"{source}: {where}: `drakebots {shlex.join(argv)}`: {message}") from None
    func = getattr(args, "func", None)
    module = sys.modules.get(getattr(func, "__module__", ""), None)
    check = getattr(module, "CheckArgs", None)
    if check is not None:
        try:
            check(args)
        except InputError as e:
            raise InputError(f"{source}: {where}: `drakebots {shlex.join(argv)}`: {e}") from None


def ExpandSweep(spec: SweepFile, source: str | Path, name: str = "") -> Sweep:
    """The cases of a sweep file, each command line checked by the real parser.

    Raises:
        InputError: an empty sweep, an unknown verb or option, a value the verb's parser rejects,
            two cases with the same folder name.
    """
    from drakebots.sweeps import Commands

    MakeParser = Commands().MakeParser

    source = str(source)
    top = MakeParser()
    cases: list[Case] = []
    base_words = shlex.split(spec.command)
    if spec.grid or (spec.fixed and not spec.cases):
        if not base_words:
            raise InputError(f"{source}: 'command' is required with 'grid' or 'fixed'")
    for key, values in spec.grid.items():
        if not values:
            raise InputError(f"{source}: grid key '{key}' has no values")
        if key in spec.fixed:
            raise InputError(f"{source}: '{key}' is both fixed and in the grid; keep one")
    if base_words and not _PLACEHOLDER.search(base_words[0]):
        _VerbParser(top, base_words[:1], source, "command")
        if not spec.grid and not spec.cases:
            raise InputError(f"{source}: the sweep has no cases (give 'grid' and/or 'cases')")
    from drakebots.limits import CheckWork

    # Counted before any case is made: a grid of 10^6 cases took minutes of --dry-run (issue 68).
    total = len(spec.cases) + (math.prod(len(v) for v in spec.grid.values()) if spec.grid else 0)
    CheckWork("cases", total, f"{source}: the grid and the listed cases")
    with _RobotsReadOnce():
        _MakeCases(spec, top, base_words, source, cases)
    if not cases:
        raise InputError(f"{source}: the sweep has no cases (give 'grid' and/or 'cases')")
    seen: dict[str, int] = {}
    for case in cases:
        seen[case.name] = seen.get(case.name, 0) + 1
    duplicates = [n for n, count in seen.items() if count > 1]
    if duplicates:
        raise InputError(
            f"{source}: several cases would share the folder name(s) {', '.join(duplicates)}; "
            "give listed cases distinct 'name's"
        )
    return Sweep(
        name=name or Path(source).stem,
        source=Path(source),
        description=spec.description,
        cases=cases,
        figures=list(spec.figures),
    )


@contextlib.contextmanager
def _RobotsReadOnce():
    """Within one expansion, each robot's description is read once, not once per case (the
    verbs' checks look the robot up: 27 ms a case, 10 000 cases took 100 s of --dry-run)."""
    import drakebots.robots as robots

    original = robots.GetRobot
    cache: dict = {}

    def GetRobotOnce(name_or_path):
        key = str(name_or_path)
        if key not in cache:
            try:
                cache[key] = (original(name_or_path), None)
            except InputError as e:
                cache[key] = (None, e)
        robot, error = cache[key]
        if error is not None:
            raise InputError(str(error))
        return robot

    robots.GetRobot = GetRobotOnce
    try:
        yield
    finally:
        robots.GetRobot = original


def _MakeCases(spec: SweepFile, top, base_words, source: str, cases: list) -> None:
    """The grid's cases, then the listed ones, appended to `cases`."""
    if spec.grid:
        keys = list(spec.grid)
        for combination in itertools.product(*(spec.grid[k] for k in keys)):
            params = dict(zip(keys, combination))
            cases.append(_MakeCase(top, base_words, spec.fixed, params, "", source, "grid"))
    for index, listed in enumerate(spec.cases):
        where = f"cases[{index}]" + (f" ({listed.name})" if listed.name else "")
        own = shlex.split(listed.command)
        if own and own != base_words:
            extra = [w for w in own[1:] if not w.startswith("-")]
            case = _MakeCase(top, own, {}, dict(listed.args), listed.name, source, where, extra)
        else:
            if not base_words:
                raise InputError(f"{source}: {where}: no 'command' here nor at the top level")
            case = _MakeCase(
                top, base_words, spec.fixed, dict(listed.args), listed.name, source, where
            )
        cases.append(case)


def _MakeCase(top, command_words, fixed, params, name, source, where, name_words=()) -> Case:
    """One case: fills placeholders, turns options into words, checks the command line."""
    used = set()

    def fill(match):
        key = match.group(1)
        if key not in params:
            raise InputError(f"{source}: {where}: uses '{{{key}}}' but gives no '{key}'")
        used.add(key)
        return _NameValue(params[key])  # As in folder names, so paths to other sweeps match.

    words = [_PLACEHOLDER.sub(fill, w) for w in command_words]
    # A fixed value may use grid values too ("skin: runs/skins/E={youngs-modulus}").
    fixed = {k: _PLACEHOLDER.sub(fill, v) if isinstance(v, str) else v for k, v in fixed.items()}
    parser = _VerbParser(top, words, source, where)
    options = {k: v for k, v in params.items() if k not in used}
    for key in options:
        if key in fixed:
            raise InputError(f"{source}: {where}: '{key}' is also fixed; keep one")
    argv = (
        words
        + _OptionArgs(parser, fixed, source, "fixed")
        + _OptionArgs(parser, options, source, where)
    )
    _CheckArgv(top, argv, source, where)
    case_name = _Slug(name) if name else _CaseName(list(name_words), params)
    if case_name in (".", ".."):
        raise InputError(f"{source}: {where}: '{name}' is not a usable folder name")
    return Case(name=case_name, argv=argv, params=dict(params))


def LoadSweep(name_or_file: str) -> Sweep:
    """Loads, expands and validates a sweep file or a shipped sweep's name (exit 2 on mistakes)."""
    from drakebots.config import LoadTypedYaml

    path = ResolveSweepFile(name_or_file)
    spec = LoadTypedYaml(SweepFile, filename=path)
    return ExpandSweep(spec, path, name=path.stem)
