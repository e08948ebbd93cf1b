"""A verb's workflow config from `--config FILE` and the flags the user gave (issue 46: the flags
override the file), and the workflow's input errors told in the user's words.

A verb declares its overriding flags with `default=None` (so a flag not given is None) and maps
each flag's dest to the config field(s) it sets, by dotted path:

    FLAGS = {"knots": "knots", "iterations": "solver.major_iterations"}
    config = ConfigFromArgs(JumpConfig, args, FLAGS)
    with FlagNames(args, FLAGS):
        result = OptimizeJump(config, progress=CliProgress(quiet=args.quiet))

A workflow names a bad field by its path ("solver.major_iterations 0: must be >= 1");
`FlagNames` turns that into the flag the user typed ("--iterations 0: must be >= 1"), or, for a
value the file set, "--config FILE: solver.major_iterations 0: ...".
"""

from __future__ import annotations

import contextlib

from drakebots.cli import LoadConfigOption
from drakebots.errors import InputError


def _Paths(paths) -> tuple[str, ...]:
    return (paths,) if isinstance(paths, str) else tuple(paths)


def SetField(config, path: str, value) -> None:
    """Sets a (nested) dataclass field by dotted path: SetField(c, "solver.solver", "ipopt")."""
    *parents, name = path.split(".")
    target = config
    for parent in parents:
        target = getattr(target, parent)
    if not hasattr(target, name):
        raise AttributeError(f"{type(target).__name__} has no field {name!r} ({path})")
    setattr(target, name, value)


def ConfigFromArgs(schema, args, flags: dict):
    """`schema` loaded from args.config (if any; else its defaults), then every flag in `flags`
    ({dest: path or paths}) that the user gave (not None) set on it."""
    file = getattr(args, "config", None)
    config = LoadConfigOption(schema, file) if file else schema()
    for dest, paths in flags.items():
        value = getattr(args, dest, None)
        if value is not None:
            for path in _Paths(paths):
                SetField(config, path, value)
    return config


def FlagName(dest: str) -> str:
    return "--" + dest.replace("_", "-")


@contextlib.contextmanager
def FlagNames(args, flags: dict):
    """Rewrites an InputError that starts with a config field's path (as the workflows raise
    them) to name the flag (given, or the default of one when there is no --config file), or the
    --config file the value came from."""
    try:
        yield
    except InputError as e:
        message = str(e)
        file = getattr(args, "config", None)
        for dest, paths in flags.items():
            for path in _Paths(paths):
                if not message.startswith((path + " ", path + ":")):
                    continue
                if getattr(args, dest, None) is not None or not file:
                    raise InputError(FlagName(dest) + message[len(path) :]) from None
                raise InputError(f"--config {file}: {message}") from None
        raise
