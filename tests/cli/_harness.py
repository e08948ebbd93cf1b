"""Running a verb in-process for the table-driven CLI tests (test_bad_input, test_hostile,
test_user_files): `drakebots.cli.main(argv)` under a wall-clock alarm, so a case that starts the
work it should have refused fails the test instead of running for minutes."""

from __future__ import annotations

import signal
import time

import pytest

from drakebots.cli import main


class _TookTooLong(Exception):
    pass


def _Alarm(signum, frame):
    raise _TookTooLong()


def RunVerb(argv: list[str], capsys, seconds: int) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, wall seconds) of `drakebots ARGV`; fails the test when it is
    still working after `seconds`."""
    previous = signal.signal(signal.SIGALRM, _Alarm)
    signal.alarm(seconds)
    start = time.perf_counter()
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    except _TookTooLong:
        pytest.fail(f"still working after {seconds} s: `drakebots {' '.join(argv)}` started work")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - start
    captured = capsys.readouterr()
    return code, captured.out, captured.err, elapsed
