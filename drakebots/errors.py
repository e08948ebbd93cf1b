"""Exceptions that map onto the command line's exit codes (DESIGN.md, "Exit codes").

Library code raises these; only drakebots.cli turns them into exit codes and messages.
"""


class InputError(ValueError):
    """Bad input from the user: the message names what is wrong and where.

    The command line exits with status 2 and writes nothing.
    """


class RunFailure(RuntimeError):
    """A run that completed but did not reach its goal (solver failure, target missed).

    The command line still finalises the results folder (with the reason in summary.json) and
    exits with status 1.
    """


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: raised as an interrupt (so that every cleanup Ctrl-C runs runs), reported
    as exit 143 (drakebots.cli)."""
