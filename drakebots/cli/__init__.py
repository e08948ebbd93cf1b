"""The `drakebots` command: one subcommand (verb) per module in this package.

Every public module here (a name not starting with "_") defines
`register(subparsers) -> argparse.ArgumentParser` and sets `func` on its parser, a function
`(args) -> int` returning the exit code. Exit codes (DESIGN.md): 0 done; 1 ran but did not reach its
goal (the results folder holds the reason); 2 bad input (nothing written).
"""

import argparse
import errno
import importlib
import logging
import math
import pkgutil
import signal
import sys

from drakebots.errors import InputError, RunFailure, Terminated

EPILOG = """exit codes: 0 done; 1 ran but did not reach its goal (results folder kept, reason in
summary.json); 2 bad input (the message names what and where; nothing is written)."""


def VerbModules() -> list[str]:
    """Names of the verb modules in this package, sorted."""
    return sorted(
        info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")
    )


class _Parser(argparse.ArgumentParser):
    """argparse with the house's error: one line naming the option, exit 2 (issue 50)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {_OneLine(message)} (see {self.prog} --help)\n")


# The most work one run may ask for, per option (dest): the drakebots.limits bound it meets, so
# that a typo (1e9 for 1e3) is refused before it runs for a day or fills the disk, naming the
# DRAKEBOTS_MAX_* variable that raises it. WORK_LIMITS_BY_VERB overrides it for a verb whose
# option has other units. The options named like config keys (limits.KEY_BOUNDS) meet the same
# bound in a config file and a Python config.
def _WorkLimits() -> dict:
    from drakebots.limits import KEY_BOUNDS

    return {
        **KEY_BOUNDS,
        "duration": "duration",
        "seconds": "replay_seconds",
        "time": "duration",
        "hold": "duration",
        "coupled_replay_seconds": "replay_seconds",
        "case_timeout": "case_timeout",
    }


WORK_LIMITS = _WorkLimits()
WORK_LIMITS_BY_VERB = {
    # hamr-jump plans in ms; a robot file's jump in its own time unit, which the workflow's check
    # bounds again by DRAKEBOTS_MAX_DURATION (converted to seconds).
    "optimize": {"duration": "plan_time"},
}
# The finest step or sampling period one run may take, per option (dest): a positive value below
# it (1e-9 for 1e-3) would step or log for ever: {dest: (floor, unit)}. Zero (an option's "the
# default", as simulate's --time-step 0) and negative values are the verb's to judge, by name.
# A microsecond is 1/250 of HAMR-VI's plant step, the finest any family takes.
WORK_FLOORS = {
    "time_step": (1e-6, "s"),
    "log_period": (1e-6, "s"),
}
WORK_FLOORS_BY_VERB = {
    "track": {"time_step": (1e-3, "ms")},
}


def _NumberType(kind, dest: str, limit, floor=None):
    """An argparse type: `kind`'s value, refused (exit 2 naming the option) when it is NaN or
    infinite, above the work limit of its option, or positive but below its floor."""

    def parse(text: str):
        value = kind(text)
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if isinstance(value, float) and 0.0 < abs(value) < sys.float_info.min:
            # A subnormal (1e-320) loses its digits and underflows what it divides or scales.
            raise argparse.ArgumentTypeError(
                f"{text} is below {sys.float_info.min:.3g} in magnitude (subnormal): give 0 or a "
                "normal number"
            )
        if limit is not None and isinstance(value, (int, float)):
            from drakebots.limits import BOUNDS, Limit

            try:
                most = Limit(limit)
            except InputError as e:
                raise argparse.ArgumentTypeError(str(e)) from None
            if value > most:
                raise argparse.ArgumentTypeError(
                    f"{text} is above the bound of {most:g} {BOUNDS[limit].unit} "
                    f"(set DRAKEBOTS_MAX_{limit.upper()} to allow more)"
                )
        if floor is not None and isinstance(value, (int, float)) and 0 < value < floor[0]:
            raise argparse.ArgumentTypeError(
                f"{text} is below {floor[0]:g} {floor[1]}, the finest step one run may take"
            )
        return value

    # argparse's "invalid float value: 'x'" names the type: "port", not "_Port".
    parse.__name__ = getattr(kind, "__name__", "value").lstrip("_").lower()
    return parse


def CheckNumbers(parser: argparse.ArgumentParser, verb: str | None = None) -> None:
    """Wraps the type of every option of `parser` and its sub-commands that reads a number
    (float, int, PositiveFloat, ...) with the finite check, the work limits and the floors: the
    one place where the command line's numbers are judged."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                CheckNumbers(sub, verb or name)
            continue
        kind = action.type
        if kind is None or kind is str or getattr(kind, "_checked", False):
            continue
        limits = {**WORK_LIMITS, **WORK_LIMITS_BY_VERB.get(verb, {})}
        floors = {**WORK_FLOORS, **WORK_FLOORS_BY_VERB.get(verb, {})}
        checked = _NumberType(kind, action.dest, limits.get(action.dest), floors.get(action.dest))
        checked._checked = True
        action.type = checked


def MakeParser() -> argparse.ArgumentParser:
    """The top-level parser with every verb registered."""
    parser = _Parser(
        prog="drakebots",
        description="Model, simulate and optimise the motion of soft and small legged robots "
        "(HAMR-VI, skinned quad-robots, the gecko soft walker, voxel lattices) with Drake.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    import drakebots

    parser.add_argument("--version", action="version", version=drakebots.__version__)
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    subparsers.required = True
    for name in VerbModules():
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(subparsers)
    CheckNumbers(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `drakebots` console script and `python -m drakebots`."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    from drakebots.runtime import KeepFreedMemory

    # The command is a program, so it may set the process's allocator (drakebots.runtime: the
    # FEM's large temporaries reused, not faulted in again); a library call never does.
    KeepFreedMemory()
    parser = MakeParser()
    args = parser.parse_args(argv)
    _NoteCommandInputs(sys.argv[1:] if argv is None else argv, args)
    import pydrake.common  # noqa: F401 - sets up Drake's logger, which the next line quiets.

    # Drake logs every Meshcat server it starts at INFO; verbs print the URLs that matter.
    logging.getLogger("drake").setLevel(logging.WARNING)
    interrupted = _CatchInterrupt()
    try:
        try:
            from drakebots.runtime import CheckEnvironment

            CheckEnvironment()  # A bad environment variable is one line, exit 2 (issue 68).
            return int(args.func(args) or 0)
        except Exception:
            # Ctrl-C inside a solver's Python callback (SNOPT's costs) comes back out of the C++
            # solver as a RuntimeError naming the KeyboardInterrupt: it is still an interrupt.
            if interrupted.is_set():
                raise interrupted.Exception() from None
            raise
    except InputError as e:
        print(f"drakebots {args.verb}: error: {_OneLine(e)}", file=sys.stderr)
        return 2
    except RunFailure as e:
        print(f"drakebots {args.verb}: did not reach its goal: {_OneLine(e)}", file=sys.stderr)
        return 1
    except Terminated:
        # SIGTERM (kill, a batch system's time limit) is handled as Ctrl-C: the temporaries are
        # removed on the way out; 143 is the shell's 128 + SIGTERM (issue 68).
        print(f"drakebots {args.verb}: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print(f"drakebots {args.verb}: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        # The environment failed (a read-only or full disk, a name too long): one line naming
        # the path and the cause; the results folder was written to a temporary name and is
        # not half in place (drakebots.results).
        where = e.filename if e.filename is not None else "(no path)"
        if e.errno == errno.ENAMETOOLONG:
            # A name the user gave is longer than the file system allows (pathlib's is_file()
            # raises it rather than answer False): bad input, not a failed run.
            print(f"drakebots {args.verb}: error: {_OneLine(where)}: {e.strerror}", file=sys.stderr)
            return 2
        print(f"drakebots {args.verb}: {_OneLine(where)}: {e.strerror or e}", file=sys.stderr)
        return 1
    except SystemExit as e:
        # pydrake turns a failed DRAKE_DEMAND into SystemExit(message): report it as a failure.
        if isinstance(e.code, str):
            print(f"drakebots {args.verb}: internal error: {e.code}", file=sys.stderr)
            return 1
        raise
    finally:
        interrupted.Restore()


def _OneLine(message) -> str:
    """`message` with its control characters escaped (a path holding a newline split the one
    line of an error in two): `\\n` for a newline, as Python writes it."""
    text = str(message)
    if not any(ord(c) < 32 or ord(c) == 127 for c in text):
        return text
    return "".join(repr(c)[1:-1] if ord(c) < 32 or ord(c) == 127 else c for c in text)


def _NoteCommandInputs(argv: list[str], args) -> None:
    """Every word of the command line that names an existing file or folder (other than --out's)
    is an input of the run: `--force` never replaces a folder one lives under (issue 68)."""
    import os

    from drakebots.results import NoteCommandInputs

    out = getattr(args, "out", None)
    words = []
    for word in argv:
        word = str(word)
        value = word.split("=", 1)[1] if word.startswith("--") and "=" in word else word
        if not value or value.startswith("-") or (out is not None and value == str(out)):
            continue
        try:
            if os.path.lexists(value):
                words.append(value)
        except (OSError, ValueError):
            continue
    NoteCommandInputs(words)


class _Interrupt:
    """Whether SIGINT or SIGTERM arrived during the run (set by _CatchInterrupt's handlers)."""

    def __init__(self):
        self._set = False
        self._signum = None
        self._previous = {}

    def is_set(self) -> bool:
        return self._set

    def Exception(self) -> KeyboardInterrupt:
        """The interrupt to raise for the signal that arrived."""
        return Terminated() if self._signum == signal.SIGTERM else KeyboardInterrupt()

    def Handle(self, signum, frame):
        self._set = True
        self._signum = signum
        raise self.Exception()

    def Restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}


def _CatchInterrupt() -> _Interrupt:
    """Python's own Ctrl-C (KeyboardInterrupt), noting that it happened, and SIGTERM raised as
    Terminated (a KeyboardInterrupt); only in the main thread and only where the signal keeps
    its default (not ignored: a background job, a sweep's worker thread)."""
    import threading

    interrupt = _Interrupt()
    if threading.current_thread() is threading.main_thread():
        for signum, default in (
            (signal.SIGINT, signal.default_int_handler),
            (signal.SIGTERM, signal.SIG_DFL),
        ):
            previous = signal.getsignal(signum)
            if previous is default:
                interrupt._previous[signum] = previous
                signal.signal(signum, interrupt.Handle)
    return interrupt


def CommandLine() -> str:
    """The command line of this run, as summary.json records it."""
    return "drakebots " + " ".join(sys.argv[1:]) if sys.argv else "drakebots"


def Summary(verb: str, inputs: dict, **fields) -> dict:
    """drakebots.results.MakeSummary with this run's command line."""
    from drakebots.results import MakeSummary

    return MakeSummary(verb, inputs, command=CommandLine(), **fields)


def AddOutputArguments(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """--out and --force, shared by every verb that writes a results folder."""
    parser.add_argument(
        "--out",
        required=required,
        default=None,
        type=OutFolder,
        help="results folder to write (default: runs/<verb>-<name>-<time>)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace the results folder if it exists"
    )


def AddConfigArgument(parser: argparse.ArgumentParser, schema: str | None = None) -> None:
    """--config FILE: the workflow's config from YAML (the flags given override it)."""
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help=f"a YAML file of the workflow's {schema or 'config'} (its fields as keys); the flags "
        "given on the command line override it",
    )


def ConfigFromArguments(schema, args, *, renamed=None, converted=None, **flags):
    """A workflow's config: `--config FILE` (or the schema's defaults), then the flags the user
    gave (a value that is not None).

    Args:
        schema: the config dataclass.
        renamed: {argument: field} where a flag's name is not its field's (no_replay: replay).
        converted: {argument: function} turning a flag's value into the field's (on/off: bool).
        flags: field -> parsed value, when the verb names them itself; without any, every
            argument whose (renamed) name is a field of the schema.
    """
    import dataclasses

    file = getattr(args, "config", None)
    config = LoadConfigOption(schema, file) if file else schema()
    if flags:
        return dataclasses.replace(config, **{k: v for k, v in flags.items() if v is not None})
    renamed, converted = renamed or {}, converted or {}
    fields = {f.name for f in dataclasses.fields(schema)}
    changes = {}
    for name, value in vars(args).items():
        field = renamed.get(name, name)
        if value is None or field not in fields:
            continue
        changes[field] = converted[name](value) if name in converted else value
    return dataclasses.replace(config, **changes)


def LoadConfigOption(schema, file: str):
    """`schema` from the YAML file of --config; an InputError names the option with the file
    ("--config FILE: key 'x' ..."), as the command line's rules ask."""
    from drakebots.workflow import LoadConfig

    try:
        return LoadConfig(schema, file)
    except InputError as e:
        message = str(e)
        if message.startswith("--config"):
            raise
        if not message.startswith(str(file)):
            message = f"{file}: {message}"
        raise InputError(f"--config {message}") from None


def AddVerb(subparsers, name: str, module_doc: str, **kwargs) -> argparse.ArgumentParser:
    """A verb parser whose help is the module's docstring (first line short, rest description)."""
    lines = (module_doc or "").strip().splitlines()
    short = lines[0] if lines else name
    return subparsers.add_parser(
        name,
        help=short,
        description=(module_doc or "").strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
        **kwargs,
    )


def OutFolder(text: str) -> str:
    """argparse type of --out: a folder name, not empty (an unset shell variable, `--out "$DIR"`,
    wrote to the default runs/ folder instead: issue 68)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty (give a folder name)")
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        # A newline or escape from a pasted or generated name made a folder no listing shows
        # plainly (and a message naming it spanned two lines): issue 68's hostile pass.
        raise argparse.ArgumentTypeError(f"{text!r} holds the control character {bad!r}")
    import os
    from pathlib import Path

    if Path(text).name in ("", ".", ".."):
        # `--out x/..` ran the whole job, then kept its results under a `...kept-` name.
        raise argparse.ArgumentTypeError(
            f"{text}: '{Path(text).name or text}' is not a folder's own name (it names the "
            "folder holding it or above it): name the results folder itself"
        )
    resolved = Path(os.path.realpath(text))
    from drakebots.cache import ShippedFolders

    for name, inside in ShippedFolders():
        if resolved == inside or inside in resolved.parents:
            # Results written into the package changed what every later run loads.
            raise argparse.ArgumentTypeError(
                f"{text} is inside drakebots' own {name} ({inside}): write results elsewhere"
            )
    return text


def PositiveFloat(text: str) -> float:
    """argparse type: a float > 0 (argparse turns the ValueError into exit 2)."""
    value = float(text)
    if not value > 0.0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value
