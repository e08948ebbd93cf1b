"""Running a sweep's cases on Dask distributed, resumably.

The sweep folder:

    DIR/sweep.yaml        the sweep file as it was run
    DIR/cases.json        the expanded cases (name, command line, parameters)
    DIR/journal.jsonl     one JSON line per event, appended and flushed as each case finishes
    DIR/results.csv       the table, one row per case (also results.parquet)
    DIR/summary.json      the sweep's own summary (counts, options, table paths)
    DIR/cases/NAME/       each case's normal results folder, plus sweep_case.json (the marker)
    DIR/logs/NAME.log     each case's terminal output (every attempt, appended)

Case statuses: `done` (exit 0), `failed` (exit 1: it ran and did not reach its goal; its folder
holds the reason), `error` (it raised, exited 2, was killed by a signal or timed out: no folder;
the journal holds the reason and traceback), `lost` (the worker running it died, e.g. killed or out
of memory, as often as Dask allows), `missing` (never finished: not run yet, or in flight when the
sweep was interrupted). A case is complete when its folder holds summary.json and a marker whose
command line equals the case's current one. Re-running a sweep runs the missing and lost cases;
`--retry-failed` also runs the failed and errored ones; `--force` runs all.

Each case is one Dask task, `RunCase`. By default it runs in a fresh process of its own, output
to the case's log: a case that crashes, even inside Drake's C++, is recorded as an error and the
worker lives on, and `--case-timeout` can stop it. On Linux that process is forked from a warm
fork server per worker thread (drakebots.sweeps.zygote: pydrake, numpy, matplotlib and the
verbs already imported), so it starts in milliseconds instead of the ~1 s CPU of a new
interpreter; elsewhere it is `python -m drakebots ...`. With `in_process` the verb runs inside
the worker process through the command module's `main` (drakebots.sweeps.Commands), file
descriptors 1 and 2 sent to the log (no isolation: a crash in a case takes its worker down).
"""

from __future__ import annotations

import datetime
import fcntl
import json
import logging
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from drakebots.errors import InputError
from drakebots.files import WriteWhole
from drakebots.sweeps.table import (
    FlattenSummary,
    FormatTable,
    WriteFiguresPlot,
    WriteTable,
)

CASE_MARKER = "sweep_case.json"
# The shortest --case-timeout, s: a case's hand-off to its worker process takes about this long.
MIN_CASE_TIMEOUT_S = 0.1
STATUSES = ("done", "failed", "error", "lost", "missing")
CASES_FILE = "cases.json"
JOURNAL_FILE = "journal.jsonl"
LOCK_FILE = ".sweep.lock"

# One in-process case at a time per worker process: it redirects the process's stdout, stderr and
# argv.
_CASE_LOCK = threading.Lock()


def _Now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _AtomicJson(path: Path, data) -> None:
    from drakebots.results import ToJson

    WriteWhole(path, ToJson(data))


# ---------------------------------------------------------------------------------------------
# Worker side: one case.
# ---------------------------------------------------------------------------------------------


def _WorkerIdentity() -> dict:
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = "direct"
    return {"worker": worker, "host": socket.gethostname(), "pid": os.getpid()}


def _RunInProcess(argv: list[str], log) -> tuple[int | None, str | None]:
    """Runs `drakebots ARGV` in this process with fds 1 and 2 sent to `log`.

    Returns (exit code, None), or (None, traceback) when the verb raised.
    """
    import gc

    from drakebots.sweeps import Commands

    main = Commands().main

    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = (os.dup(1), os.dup(2))
    saved_argv = sys.argv
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.argv = ["drakebots", *argv]  # summary.json records the command from sys.argv.
    # Some Drake objects must be destroyed on the thread that made them (a Meshcat aborts the
    # process otherwise, drake/geometry/meshcat.cc ~Impl). The case runs on a worker thread while
    # the worker's event loop runs on another; with the cyclic collector paused, the case's cyclic
    # garbage is collected here, on its own thread, before the next case.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return int(main(argv) or 0), None
    except SystemExit as e:  # As Python does: a message (pydrake's failed DRAKE_DEMAND) exits 1.
        if isinstance(e.code, int) or e.code is None:
            return e.code or 0, None
        print(e.code, file=sys.stderr)
        return 1, None
    except BaseException:  # noqa: BLE001 - a case that raises is recorded, the sweep goes on.
        text = traceback.format_exc()
        print(text, file=sys.stderr)
        return None, text
    finally:
        gc.collect()
        if gc_was_enabled:
            gc.enable()
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_fds[0], 1)
        os.dup2(saved_fds[1], 2)
        os.close(saved_fds[0])
        os.close(saved_fds[1])
        sys.argv = saved_argv


# `python -m drakebots ARGV` that dies with the worker that started it: a case whose worker is
# killed must not go on writing its folder while the case runs again elsewhere (Linux prctl
# PR_SET_PDEATHSIG; elsewhere the case runs to its end).
_CHILD = """
import os, signal, sys
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
except (AttributeError, OSError):
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit("drakebots sweep: the worker that started this case is gone")
sys.argv = ["drakebots", *sys.argv[2:]]
import runpy
runpy.run_module("drakebots", run_name="__main__", alter_sys=True)
"""


# The cases running in this worker process: case folder -> a function that kills it.
_CHILDREN: dict[tuple[str, str], object] = {}
_CHILDREN_LOCK = threading.Lock()
# Sweep runs that were interrupted (their cases still queued here must not start).
_STOPPED_RUNS: set[str] = set()
# Each worker thread's fork server (drakebots.sweeps.zygote), started at its first case.
_LOCAL = threading.local()


def StopCases(run: str) -> list[str]:
    """Kills this worker's cases of the sweep run `run`, and any that start later (run on every
    worker with `client.run` when a sweep is interrupted: Dask cannot stop a running task, and a
    cancelled case should not go on computing, or write its folder while a re-run does).

    Returns:
        The folders whose case was killed here.
    """
    killed = []
    with _CHILDREN_LOCK:
        _STOPPED_RUNS.add(run)
        for (case_run, case_dir), kill in list(_CHILDREN.items()):
            if case_run == run:
                try:
                    kill()
                    killed.append(case_dir)
                except ProcessLookupError:
                    pass
    return killed


def _Register(run: str, case_dir, kill) -> None:
    """Lets StopCases find a running case (killed at once if its run was stopped already)."""
    with _CHILDREN_LOCK:
        _CHILDREN[(run, str(case_dir))] = kill
        if run in _STOPPED_RUNS:
            kill()


def _ForkServer():
    """This thread's fork server, or None where it cannot be used (not Linux, did not start)."""
    if not sys.platform.startswith("linux") or getattr(_LOCAL, "broken", False):
        return None
    server = getattr(_LOCAL, "server", None)
    if server is None or not server.Alive():
        from drakebots.sweeps.zygote import ForkServer

        try:
            server = ForkServer()
        except (OSError, RuntimeError, ValueError):
            _LOCAL.broken = True  # Plain subprocesses from now on.
            return None
        _LOCAL.server = server
    return server


def _RunSubprocess(argv, case_dir, log, log_path, offset, timeout, run=""):
    """Runs `drakebots ARGV` in a fresh process with output to `log`: a child forked by this
    thread's fork server (warm imports), else `python -m drakebots`.

    Returns:
        (exit code or None, the traceback the case printed or a timeout message, or None,
        the case's CPU time in s).
    """
    log.flush()
    timed_out = False
    server = _ForkServer()
    try:
        if server is not None:

            def OnStart(pid):
                _Register(run, case_dir, lambda: os.kill(pid, signal.SIGKILL))

            try:
                code, cpu, timed_out = server.Run(argv, str(log_path), timeout, OnStart)
            except (OSError, RuntimeError, ValueError) as e:
                _LOCAL.server = None
                server.Close()
                return None, f"RuntimeError: the case's fork server failed ({e})", 0.0
        else:
            code, cpu, timed_out = _RunPython(argv, case_dir, log, timeout, run)
    finally:
        with _CHILDREN_LOCK:
            _CHILDREN.pop((run, str(case_dir)), None)
    if timed_out:
        return None, f"TimeoutError: the case ran longer than --case-timeout {timeout:g} s", cpu
    with open(log_path, errors="replace") as f:
        f.seek(offset)
        text = f.read()
    start = text.rfind("Traceback (most recent call last):")
    return code, (text[start:] if start >= 0 and code not in (0, 2) else None), cpu


def _RunPython(argv, case_dir, log, timeout, run) -> tuple[int, float, bool]:
    """`python -m drakebots ARGV` (exit code, CPU s, timed out)."""
    env = dict(os.environ, MPLBACKEND="Agg")
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(os.getpid()), *argv],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    _Register(run, case_dir, child.kill)
    timed_out = threading.Event()

    def Stop():
        timed_out.set()
        child.kill()

    timer = threading.Timer(timeout, Stop) if timeout else None
    try:
        if timer is not None:
            timer.start()
        # wait4 rather than Popen.wait: it also gives this child's own CPU time (other cases'
        # children may end meanwhile in a worker running several at once).
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = code = os.waitstatus_to_exitcode(status)
    finally:
        if timer is not None:
            timer.cancel()
    return code, usage.ru_utime + usage.ru_stime, timed_out.is_set()


def _LastLines(path: Path, offset: int = 0, count: int = 3) -> str:
    try:
        with open(path, errors="replace") as f:
            f.seek(offset)
            lines = [line.rstrip() for line in f.read().splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-count:])


def _MoveAside(case_dir: Path) -> Path | None:
    """Moves an earlier (stale or failed) folder of a case aside; restored if the re-run fails."""
    parent = case_dir.parent
    for leftover in parent.glob(f".{case_dir.name}.tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)  # A ResultsFolder of a killed attempt.
    previous = sorted(parent.glob(f".{case_dir.name}.previous-*"))
    if previous and not case_dir.exists():
        os.replace(previous[0], case_dir)  # A killed attempt had moved it aside.
        previous = previous[1:]
    for leftover in previous:
        shutil.rmtree(leftover, ignore_errors=True)
    if not case_dir.exists():
        return None
    (case_dir / CASE_MARKER).unlink(missing_ok=True)
    aside = parent / f".{case_dir.name}.previous-{os.getpid()}"
    os.replace(case_dir, aside)
    return aside


def RunCase(task: dict) -> dict:
    """Runs one case (a Dask task) and returns its row; never raises for the case's own failure.

    Args:
        task: name, argv (without --out), params, case_dir, log, in_process, timeout (s or None).

    Returns:
        The row: case, status ("done", "failed" or "error"), exit_code, seconds, worker, host,
        pid, started, finished, reason, traceback, folder, log, params, figures, argv.
    """
    os.environ.setdefault("MPLBACKEND", "Agg")
    if not task.get("in_process"):
        return _RunCaseLocked(task)  # Its own process: a worker may run several at once.
    with _CASE_LOCK:
        return _RunCaseLocked(task)


def _RunCaseLocked(task: dict) -> dict:
    if task.get("run", "") in _STOPPED_RUNS:  # Its sweep was interrupted before it started.
        return {"case": task["name"], "status": "error", "reason": "the sweep was interrupted"}
    case_dir = Path(task["case_dir"])
    log_path = Path(task["log"])
    case_dir.parent.mkdir(parents=True, exist_ok=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    identity = _WorkerIdentity()
    aside = _MoveAside(case_dir)
    # --force: the sweep owns cases/; a duplicate attempt of this case (a retry while a cut-off
    # one ends) must not make the other fail at its commit.
    argv = list(task["argv"]) + ["--out", str(case_dir), "--force"]
    started = time.time()
    with open(log_path, "a") as log:
        log.write(
            f"=== {_Now()} {identity['worker']} (host {identity['host']}, pid {identity['pid']})\n"
            f"=== drakebots {' '.join(argv)}\n"
        )
        log.flush()
        offset = log.tell()
        if task.get("in_process"):
            who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)  # Linux: this thread.
            before = resource.getrusage(who)
            code, trace = _RunInProcess(argv, log)
            after = resource.getrusage(who)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        else:
            code, trace, cpu = _RunSubprocess(
                argv, case_dir, log, log_path, offset, task.get("timeout"), task.get("run", "")
            )
    seconds = time.time() - started
    summary_path = case_dir / "summary.json"
    summary = None
    if summary_path.is_file():
        try:
            summary = json.loads(summary_path.read_text())
        except (OSError, ValueError):
            summary = None
    if aside is not None:
        if summary is not None:
            shutil.rmtree(aside, ignore_errors=True)
        elif not case_dir.exists():
            os.replace(aside, case_dir)  # Keep the earlier result to look at (no marker).
    row = {
        "case": task["name"],
        "argv": list(task["argv"]),
        "params": task["params"],
        "exit_code": code,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        **identity,
        "started": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "finished": _Now(),
        "folder": str(case_dir),
        "log": str(log_path),
        "traceback": trace,
        "figures": FlattenSummary(summary) if summary else {},
    }
    if summary is not None and code == 0:
        row["status"] = "done"
        row["reason"] = None
    elif summary is not None and code == 1:
        row["status"] = "failed"
        row["reason"] = summary.get("reason") or _LastLines(log_path, offset, 1) or "exit 1"
    elif trace is not None:
        row["status"] = "error"
        row["reason"] = trace.strip().splitlines()[-1]
    else:
        row["status"] = "error"
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else -code
            last = _LastLines(log_path, offset)
            row["reason"] = f"killed by signal {name}" + (f": {last}" if last else "")
        else:
            last = _LastLines(log_path, offset, 1)
            row["reason"] = f"exit {code} without a results folder" + (f": {last}" if last else "")
    if summary is not None:
        try:
            # The checksum of every file the case wrote: a resume verifies them (Verify).
            row["files"] = CaseFiles(case_dir)
        except OSError:
            return row  # No marker: the case runs again.
        _AtomicJson(case_dir / CASE_MARKER, row)
    return row


def SummaryDigest(data: bytes) -> str:
    """The digest a case marker keeps of its summary.json."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


def FileDigest(path: Path) -> str:
    """The sha256 of a file, read in blocks (a case's log.npz may be large)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def CaseFiles(case_dir: Path) -> dict[str, str]:
    """{path relative to the case folder: sha256} of every file a case wrote (not its marker)."""
    files = {}
    for path in sorted(case_dir.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name != CASE_MARKER:
            files[path.relative_to(case_dir).as_posix()] = FileDigest(path)
    return files


def _InsideFolder(folder: Path, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return False


# ---------------------------------------------------------------------------------------------
# The sweep folder: cases, markers, journal, rows.
# ---------------------------------------------------------------------------------------------


class SweepFolder:
    """A sweep's results folder (layout in the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path).absolute()
        self.cases_dir = self.path / "cases"
        self.logs_dir = self.path / "logs"
        self._lock_file = None

    def IsSweepFolder(self) -> bool:
        return (self.path / CASES_FILE).is_file()

    def CheckUsable(self) -> None:
        """Exit 2 if the folder exists, is not empty and is not a sweep folder, or if no folder
        can be made there (under a file, a symlink loop, a read-only folder: issue 68)."""
        from drakebots.results import _CheckWritableName

        _CheckWritableName(self.path, str(self.path))
        if self.path.is_symlink():
            try:
                self.path.resolve(strict=True)
            except (OSError, RuntimeError):
                raise InputError(
                    f"--out {self.path}: a symlink that leads nowhere (dangling or a loop)"
                ) from None
        if self.path.exists() and not self.path.is_dir():
            raise InputError(f"--out {self.path}: exists and is not a folder")
        if self.path.is_dir() and any(self.path.iterdir()) and not self.IsSweepFolder():
            raise InputError(
                f"--out {self.path}: folder exists and is not a sweep folder (no {CASES_FILE})"
            )

    def Lock(self) -> None:
        """One sweep at a time per folder (released when this process ends)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.path / LOCK_FILE, "a+")  # noqa: SIM115 - held until exit.
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_file.seek(0)
            holder = self._lock_file.read().strip() or "another process"
            raise InputError(
                f"--out {self.path}: another drakebots sweep is running in this folder ({holder})"
            ) from None
        self._lock_file.seek(0)
        self._lock_file.truncate()
        self._lock_file.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        self._lock_file.flush()

    def Unlock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def CaseDir(self, name: str) -> Path:
        return self.cases_dir / name

    def LogPath(self, name: str) -> Path:
        return self.logs_dir / f"{name}.log"

    def WriteCases(self, sweep, source_text: str) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        WriteWhole(self.path / "sweep.yaml", source_text)
        _AtomicJson(
            self.path / CASES_FILE,
            {
                "sweep": sweep.name,
                "source": str(sweep.source),
                # The sweep file this folder belongs to (CheckOwner), wherever the run started.
                "source_path": str(Path(sweep.source).resolve()),
                "description": sweep.description,
                "figures": sweep.figures,
                "cases": [case.AsDict() for case in sweep.cases],
            },
        )

    def ReadCases(self) -> dict:
        """cases.json, checked: an object whose "cases" is a list of objects, each with a
        "name" (a single folder name), an "argv" (a list of strings) and "params" (an object);
        InputError naming the file and the entry otherwise (issue 68: a corrupt folder gave a
        traceback)."""
        path = self.path / CASES_FILE
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError.
            raise InputError(f"{path}: not a sweep folder's {CASES_FILE} ({e})") from None
        if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
            raise InputError(f"{path}: not a sweep folder's {CASES_FILE} (no list of 'cases')")
        if not data["cases"]:
            raise InputError(f"{path}: lists no cases")
        for index, case in enumerate(data["cases"]):
            where = f"{path}: cases[{index}]"
            if not isinstance(case, dict):
                raise InputError(f"{where}: not an object")
            name = case.get("name")
            if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\0" in name:
                raise InputError(f"{where}: no usable 'name' (a folder name), got {name!r}")
            argv = case.get("argv")
            if not isinstance(argv, list) or not all(isinstance(w, str) for w in argv):
                raise InputError(f"{where} ({name}): 'argv' must be a list of strings")
            if not isinstance(case.get("params", {}), dict):
                raise InputError(f"{where} ({name}): 'params' must be an object")
            case.setdefault("params", {})
        if not isinstance(data.get("sweep"), str):
            data["sweep"] = self.path.name
        if not isinstance(data.get("description"), str):
            data["description"] = ""
        return data

    def AppendJournal(self, record: dict) -> None:
        """One line per event, flushed and synced: a crash loses at most the line being written."""
        from drakebots.results import ToJson

        line = json.dumps(json.loads(ToJson(record)), separators=(",", ":")) + "\n"
        with open(self.path / JOURNAL_FILE, "a") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def ReadJournal(self) -> list[dict]:
        """The journal's records: each line that is a JSON object (a line cut short by a crash,
        a binary or foreign line, is skipped: the journal is a log, the markers are the truth)."""
        records = []
        try:
            with open(self.path / JOURNAL_FILE, "rb") as f:
                for line in f:
                    try:
                        record = json.loads(line)
                    except ValueError:  # UnicodeDecodeError too.
                        continue
                    if isinstance(record, dict):
                        records.append(record)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise InputError(f"{self.path / JOURNAL_FILE}: cannot be read ({e.strerror})") from None
        return records

    def Marker(self, case: dict) -> dict | None:
        """The row of a finished case folder, else None (the case runs again; `Verify` says
        why)."""
        return self.Verify(case)[0]

    def Verify(self, case: dict) -> tuple[dict | None, str | None]:
        """(the row of a finished case folder, None), or (None, why it does not count): its
        marker parses and names the case's command line, its summary.json parses as a JSON
        object, and every file the case wrote is there with the sha256 its marker recorded (a
        log cut short, a replay deleted, a summary edited, or a marker without checksums over
        a forged summary does not count, issue 68)."""
        folder = self.CaseDir(case["name"])
        if not folder.is_dir():
            return None, None
        try:
            row = json.loads((folder / CASE_MARKER).read_bytes())
        except FileNotFoundError:
            return None, f"no {CASE_MARKER} (stale or cut short)"
        except (OSError, ValueError):
            return None, f"{CASE_MARKER} does not parse"
        if not isinstance(row, dict):
            return None, f"{CASE_MARKER} is not an object"
        if row.get("argv") != case["argv"]:
            return None, "its marker is of another command line"
        if row.get("status") not in ("done", "failed"):
            return None, "its marker records no finished run"
        files = row.get("files")
        if not isinstance(files, dict) or "summary.json" not in files:
            return None, "its marker records no checksums of the case's files"
        for name, digest in files.items():
            path = folder / str(name)
            if not _InsideFolder(folder, path):
                return None, f"its marker names {name!r}, outside the case's folder"
            try:
                actual = FileDigest(path)
            except OSError:
                return None, f"{name} is missing"
            if actual != digest:
                return None, f"{name} changed since the case wrote it (sha256 differs)"
        try:
            summary = json.loads((folder / "summary.json").read_bytes())
        except (OSError, ValueError):
            return None, "summary.json does not parse"
        if not isinstance(summary, dict):
            return None, "summary.json is not an object"
        return row, None

    def CheckOwner(self, sweep, force: bool) -> None:
        """Exit 2 when this sweep folder holds another sweep file's cases (without --force): a
        folder belongs to one sweep file, so that resuming never mixes two sweeps' cases."""
        if not self.IsSweepFolder() or force:
            return
        path = self.path / CASES_FILE
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            data = None
        if not isinstance(data, dict):
            raise InputError(
                f"{path}: not a sweep folder's {CASES_FILE} (--force runs this sweep's cases "
                "here anyway)"
            )
        recorded = data.get("source_path") or data.get("source")
        if not recorded:
            return
        mine = Path(sweep.source).resolve()
        if "source_path" not in data and not Path(recorded).is_absolute():
            # An older folder recorded the path as given: the same file name is the same sweep.
            same = Path(recorded).name == mine.name
        else:
            same = Path(recorded).resolve() == mine
        if not same:
            raise InputError(
                f"--out {self.path}: a sweep folder of {recorded}, not of {sweep.source} (give "
                "another --out, or --force to run this sweep's cases here)"
            )

    def Rows(self, cases: list[dict]) -> list[dict]:
        """The current row of every case: its marker, else its last journal error or loss, else
        missing."""
        errors = {}
        for record in self.ReadJournal():
            if record.get("event") == "case":
                errors[record.get("case")] = record
        rows = []
        for case in cases:
            row, why = self.Verify(case)
            if row is None:
                record = errors.get(case["name"])
                if (
                    record
                    and record.get("status") in ("error", "lost")
                    and record.get("argv") == case["argv"]
                ):
                    row = record
            if row is None:
                folder = self.CaseDir(case["name"])
                row = {
                    "case": case["name"],
                    "status": "missing",
                    "argv": case["argv"],
                    "params": case["params"],
                    "reason": f"an earlier folder that failed verification: {why}"
                    if folder.exists()
                    else None,
                }
            row = dict(row)
            row["params"] = case["params"]
            rows.append(row)
        return rows


def Counts(rows: list[dict]) -> dict:
    counts = {status: 0 for status in STATUSES}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return counts


# ---------------------------------------------------------------------------------------------
# Client side: the Dask driver.
# ---------------------------------------------------------------------------------------------


def _StartClient(scheduler: str | None, workers: int, allowed_failures: int, verbose: bool):
    """A Dask client: on `scheduler`, or on a new LocalCluster of `workers` processes."""
    import dask
    from distributed import Client, LocalCluster

    # Dask logs every worker restart and lost result; the sweep reports what matters itself.
    # (After importing distributed, which sets its loggers' levels from its configuration.)
    logging.getLogger("distributed").setLevel(logging.INFO if verbose else logging.CRITICAL)

    # One task per thread at a time (no task queued on a busy worker, so a dead worker loses only
    # its own case); a task whose worker dies is retried `allowed_failures` times.
    settings = {
        "distributed.scheduler.worker-saturation": 1.0,
        "distributed.scheduler.allowed-failures": allowed_failures,
    }
    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise InputError(f"--scheduler {scheduler}: cannot connect ({e})") from None
        return client, None
    with dask.config.set(settings), _WorkersIgnoreInterrupt():
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.CRITICAL if not verbose else logging.INFO,
        )
        client = Client(cluster)
    return client, cluster


class _WorkersIgnoreInterrupt:
    """SIGINT ignored while the local cluster starts its processes, which inherit that: a
    terminal's Ctrl-C reaches the whole process group, and the driver alone handles it (it stops
    the cases in flight and closes the cluster); the nanny and worker processes printed three
    tracebacks of their own (issue 68). Outside the main thread, nothing to do."""

    def __enter__(self):
        self._previous = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False


def _CheckWorkersSeeFolder(client, folder: Path) -> None:
    """Exit 2 when a worker cannot see the sweep folder (it must be on a shared file system)."""
    seen = client.run(os.path.isdir, str(folder))
    blind = [worker for worker, ok in seen.items() if not ok]
    if blind:
        raise InputError(
            f"--out {folder}: not visible to worker(s) {', '.join(blind)}; the sweep folder must "
            "be on a file system that the workers share, at the same path"
        )
    if not seen:
        raise InputError("--scheduler: the cluster has no workers")


def _ErrorRow(
    case: dict, folder: SweepFolder, reason: str, trace: str | None, status: str = "error"
) -> dict:
    log = folder.LogPath(case["name"])
    return {
        "case": case["name"],
        "argv": case["argv"],
        "params": case["params"],
        "status": status,
        "exit_code": None,
        "seconds": None,
        "worker": None,
        "finished": _Now(),
        "folder": str(folder.CaseDir(case["name"])),
        "log": str(log),
        "reason": reason,
        "traceback": trace,
        "figures": {},
    }


def _Outcome(future, case: dict, folder: SweepFolder) -> dict | None:
    """The row of a finished future; None for a case that did not run to an end (cancelled)."""
    from distributed import KilledWorker

    if future.status == "finished":
        return future.result()
    if future.status == "error":
        exception = future.exception()
        if isinstance(exception, KilledWorker):
            last = _LastLines(folder.LogPath(case["name"]))
            worker = getattr(exception.last_worker, "address", "its worker")
            reason = (
                f"the worker running this case died (last on {worker}; "
                f"{exception.allowed_failures + 1} attempt(s))"
                + (f"; last lines of its log: {last}" if last else "")
            )
            return _ErrorRow(case, folder, reason, None, status="lost")
        trace = "".join(traceback.format_exception(type(exception), exception, future.traceback()))
        return _ErrorRow(case, folder, f"{type(exception).__name__}: {exception}", trace)
    return None


def _InFlight(client, pending: dict) -> list[str]:
    """Names of the pending cases a worker is running now (all pending if the scheduler is gone)."""
    try:
        processing = client.processing()
        keys = {key for keys in processing.values() for key in keys}
        return sorted(case["name"] for future, case in pending.items() if future.key in keys)
    except Exception:  # noqa: BLE001 - without a scheduler every unfinished case may be running.
        return sorted(case["name"] for case in pending.values())


class SweepOptions:
    """How to run a sweep (the command line's options)."""

    def __init__(
        self,
        *,
        scheduler: str | None = None,
        workers: int | None = None,
        retry_failed: bool = False,
        force: bool = False,
        in_process: bool = False,
        case_timeout: float | None = None,
        allowed_failures: int | None = None,
        progress: bool = True,
        verbose: bool = False,
        table_period: float = 30.0,
        command: str | None = None,
    ):
        self.scheduler = scheduler
        self.workers = workers
        self.retry_failed = retry_failed
        self.force = force
        self.in_process = in_process
        self.case_timeout = case_timeout
        # Local cluster: retries of a case whose worker died (None: 1).
        self.allowed_failures = allowed_failures
        self.progress = progress
        self.verbose = verbose
        # The command line that started the sweep, for its summary.json (None from a script).
        self.command = command
        self.table_period = table_period

    def Check(self) -> None:
        """InputError for options that contradict each other (before any case runs)."""
        if self.case_timeout is not None and self.in_process:
            raise InputError("--case-timeout cannot stop a case run --in-process; drop one of them")
        if self.case_timeout is not None and not self.case_timeout >= MIN_CASE_TIMEOUT_S:
            # 1e-300 ran the sweep, every case stopped before it started (issue 68).
            raise InputError(
                f"--case-timeout {self.case_timeout:g} s: below {MIN_CASE_TIMEOUT_S:g} s, no case "
                f"can start in it (a worker's hand-off alone takes about that)"
            )
        if self.scheduler and self.workers:
            raise InputError("--workers applies to the local cluster, not to --scheduler")
        if self.scheduler and self.allowed_failures is not None:
            raise InputError(
                "--allowed-failures applies to the local cluster; a cluster of your own follows "
                "its scheduler's distributed.scheduler.allowed-failures setting"
            )
        if self.scheduler and not self.scheduler.startswith(
            ("tcp://", "tls://", "ucx://", "inproc://")
        ):
            raise InputError(
                f"--scheduler {self.scheduler}: expected an address like tcp://host:8786"
            )


def RunSweep(sweep, out: str | Path, options: SweepOptions, *, rerun_hint: str = "") -> int:
    """Runs the cases of `sweep` that are not complete in `out`; returns the exit code.

    0: every case done; 1: some case failed, errored or was lost; 130: interrupted (Ctrl-C);
    143: terminated (SIGTERM).
    """
    options.Check()
    folder = SweepFolder(out)
    folder.CheckUsable()
    folder.CheckOwner(sweep, options.force)
    created = not folder.path.exists()
    folder.Lock()
    try:
        return _RunSweepLocked(sweep, folder, options, rerun_hint)
    except InputError:
        if created:  # Bad input found before any case ran (e.g. the scheduler): leave nothing.
            shutil.rmtree(folder.path, ignore_errors=True)
        raise
    finally:
        folder.Unlock()


def _RunSweepLocked(sweep, folder: SweepFolder, options: SweepOptions, rerun_hint: str) -> int:
    from tqdm import tqdm

    cases = [case.AsDict() for case in sweep.cases]
    folder.WriteCases(sweep, sweep.source.read_text())
    before = {row["case"]: row for row in folder.Rows(cases)}
    to_run, kept_failed = [], []
    for case in cases:
        status = before[case["name"]]["status"]
        if options.force or status in ("missing", "lost"):
            to_run.append(case)
        elif status in ("failed", "error"):
            (to_run if options.retry_failed else kept_failed).append(case)
    skipped = len(cases) - len(to_run)
    print(
        f"sweep {sweep.name}: {len(cases)} cases in {folder.path}; {len(to_run)} to run"
        + (f", {skipped} already complete (skipped)" if skipped else ""),
        flush=True,
    )
    for case in to_run:
        reason = before[case["name"]].get("reason") or ""
        if before[case["name"]]["status"] == "missing" and reason:
            print(f"  {case['name']} runs again: {reason}", flush=True)
    if kept_failed:
        print(
            f"  {len(kept_failed)} failed case(s) from earlier runs kept (--retry-failed runs "
            "them again)",
            flush=True,
        )
    started = time.time()
    interrupted = None
    cancelled: list[str] = []
    in_flight: list[str] = []
    client = cluster = None
    code_interrupt = 1
    if to_run:
        workers = options.workers or os.cpu_count() or 1
        workers = max(1, min(workers, len(to_run)))
        client, cluster = _StartClient(
            options.scheduler,
            workers,
            1 if options.allowed_failures is None else options.allowed_failures,
            options.verbose,
        )
        try:
            _CheckWorkersSeeFolder(client, folder.path)
        except BaseException:
            client.close()
            if cluster is not None:
                cluster.close()
            raise
        where = options.scheduler or f"a local cluster of {workers} worker process(es)"
        folder.AppendJournal(
            {
                "event": "start",
                "time": _Now(),
                "sweep": sweep.name,
                "cases": len(cases),
                "to_run": [c["name"] for c in to_run],
                "scheduler": options.scheduler or client.scheduler.address,
                "host": socket.gethostname(),
                "pid": os.getpid(),
            }
        )
        print(f"  running on {where}", flush=True)
        interrupted, cancelled, in_flight, code_interrupt = _Drive(
            client, folder, to_run, options, tqdm
        )
        try:
            client.close(timeout=10)
            if cluster is not None:
                cluster.close(timeout=10)
        except Exception:  # noqa: BLE001 - closing after a lost scheduler may fail; nothing to save.
            pass
    rows = folder.Rows(cases)
    csv_path, parquet_path = WriteTable(rows, folder.path)
    WriteFiguresPlot(
        rows, folder.path, f"sweep {sweep.name}: {sweep.description}", preferred=sweep.figures
    )
    counts = Counts(rows)
    ok = counts["done"] == len(cases)
    _WriteSweepSummary(folder, sweep, options, counts, started, interrupted, in_flight)
    folder.AppendJournal(
        {"event": "end", "time": _Now(), "counts": counts, "interrupted": interrupted}
    )
    _PrintReport(sweep, folder, rows, counts, csv_path, parquet_path, rerun_hint)
    if interrupted:
        print(f"\nsweep {sweep.name}: {interrupted}.", flush=True)
        if in_flight:
            print(
                f"  {len(in_flight)} case(s) were in flight when it stopped (a re-run runs them "
                "unless they finished): " + ", ".join(in_flight),
                flush=True,
            )
        print(f"  re-run to complete the rest: {rerun_hint}", flush=True)
        return code_interrupt
    if cancelled:
        print(
            f"  {len(cancelled)} case(s) were cancelled (re-run to complete them): "
            + ", ".join(cancelled),
            flush=True,
        )
    return 0 if ok else 1


def _Slots(client) -> int:
    """Worker threads in the cluster now (at least 1: a restarting worker comes back)."""
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # noqa: BLE001 - the scheduler is gone; the loop will find out.
        return 1


def _Finished(running, client):
    """The futures of `running` (an as_completed) as they finish; raises ConnectionError when the
    client has given up on a lost scheduler (its futures would then never finish)."""
    while not running.is_empty():
        if running.has_ready():
            yield from running.next_batch(block=False)
        elif client.status in ("closing", "closed"):
            raise ConnectionError("the scheduler is gone and the client could not reconnect")
        else:
            time.sleep(0.02)


def _Drive(client, folder: SweepFolder, to_run: list[dict], options: SweepOptions, tqdm):
    """Submits the cases and records each as it finishes; returns (interrupted, cancelled cases,
    cases in flight when interrupted, exit code if interrupted).

    Only as many cases as the cluster has worker threads are submitted at a time, the next one
    when one finishes: Dask would otherwise assign every case to a worker up front (each case is
    its own task group, never queued on the scheduler), and a worker that dies would take all
    the cases waiting on it along. This way a dead worker loses only the case it was running.
    """
    from collections import deque

    from distributed import as_completed

    run = os.urandom(8).hex()  # This run's id: StopCases stops its cases and no others.
    waiting = deque(to_run)
    pending: dict = {}
    running = as_completed()

    def SubmitNext():
        case = waiting.popleft()
        task = {
            "name": case["name"],
            "argv": case["argv"],
            "params": case["params"],
            "case_dir": str(folder.CaseDir(case["name"])),
            "log": str(folder.LogPath(case["name"])),
            "in_process": options.in_process,
            "timeout": options.case_timeout,
            "run": run,
        }
        key = f"drakebots-case-{case['name']}-{os.urandom(4).hex()}"
        future = client.submit(RunCase, task, key=key, pure=False)
        pending[future] = case
        running.add(future)

    for _ in range(min(_Slots(client), len(waiting))):
        SubmitNext()
    bar = tqdm(
        total=len(to_run),
        unit="case",
        desc="sweep",
        file=sys.stderr,
        disable=not options.progress,
        dynamic_ncols=True,
    )
    counts = {"done": 0, "failed": 0, "error": 0, "lost": 0}
    cancelled: list[str] = []
    last_table = time.time()
    interrupted = None
    in_flight: list[str] = []
    exit_code = 1
    try:
        for future in _Finished(running, client):
            case = pending.pop(future)
            row = _Outcome(future, case, folder)
            slots = _Slots(client)
            while waiting and len(pending) < slots and client.status == "running":
                SubmitNext()
            if row is None:
                cancelled.append(case["name"])
                continue
            folder.AppendJournal({"event": "case", **row})
            counts[row["status"]] = counts.get(row["status"], 0) + 1
            line = (
                f"  {row['status']:<6} {case['name']}  "
                f"{row['seconds'] if row['seconds'] is not None else '-'} s"
                + (f"  {row['worker']}" if row.get("worker") else "")
                + (f"  ({row['reason']})" if row.get("reason") else "")
            )
            if options.progress:
                if row["status"] != "done":
                    bar.write(line, file=sys.stderr)
            else:
                print(line, flush=True)
            bar.update(1)
            bar.set_postfix(counts, refresh=False)
            if time.time() - last_table > options.table_period:
                WriteTable(folder.Rows(_AllCases(folder)), folder.path)
                last_table = time.time()
    except KeyboardInterrupt as e:
        from drakebots.errors import Terminated

        if isinstance(e, Terminated):  # SIGTERM, handled as Ctrl-C (drakebots.errors)
            interrupted, exit_code = "terminated (SIGTERM)", 143
        else:
            interrupted, exit_code = "interrupted (Ctrl-C)", 130
    except Exception as e:  # noqa: BLE001 - a lost scheduler or connection ends the loop.
        interrupted = f"lost the connection to the scheduler ({type(e).__name__}: {e})"
    finally:
        bar.close()
    if interrupted:
        in_flight = sorted(set(_InFlight(client, pending)) | set(cancelled))
        stopped = []
        try:  # Stop the cases still running on the workers (the futures alone cannot).
            for dirs in client.run(StopCases, run).values():
                stopped += [Path(d).name for d in dirs]
        except Exception:  # noqa: BLE001 - no scheduler: the workers end them when they close.
            pass
        folder.AppendJournal(
            {
                "stopped": sorted(stopped),
                "event": "interrupted",
                "time": _Now(),
                "reason": interrupted,
                "in_flight": in_flight,
                "not_started": sorted(
                    [c["name"] for c in pending.values() if c["name"] not in in_flight]
                    + [c["name"] for c in waiting]
                ),
            }
        )
        try:
            client.cancel(list(pending), force=True)
        except Exception:  # noqa: BLE001 - the scheduler may be gone already.
            pass
    return interrupted, cancelled, in_flight, exit_code


def _AllCases(folder: SweepFolder) -> list[dict]:
    return folder.ReadCases()["cases"]


def _WriteSweepSummary(folder, sweep, options, counts, started, interrupted, in_flight) -> None:
    from drakebots.results import MakeSummary

    summary = MakeSummary(
        "sweep",
        {
            "sweep": sweep.name,
            "source": str(sweep.source),
            "scheduler": options.scheduler,
            "workers": options.workers,
            "retry_failed": options.retry_failed,
            "force": options.force,
            "in_process": options.in_process,
            "case_timeout": options.case_timeout,
        },
        command=options.command,
        success=counts["done"] == sum(counts.values()) and not interrupted,
        reason=interrupted
        or (
            None
            if counts["done"] == sum(counts.values())
            else f"{sum(counts.values()) - counts['done']} case(s) not done"
        ),
        counts=counts,
        in_flight_when_interrupted=in_flight,
        wall_time_s=time.time() - started,
        table={"csv": "results.csv", "parquet": "results.parquet"},
    )
    _AtomicJson(folder.path / "summary.json", summary)


def _PrintReport(sweep, folder, rows, counts, csv_path, parquet_path, rerun_hint) -> None:
    total = len(rows)
    parts = [f"{counts[k]} {k}" for k in STATUSES if counts.get(k)]
    print(f"\nsweep {sweep.name}: {total} cases: {', '.join(parts)}", flush=True)
    print(f"  table: {csv_path}\n         {parquet_path}", flush=True)
    if (folder.path / "figures.png").is_file():
        print(f"  plots: {folder.path / 'figures.png'}", flush=True)
    bad = [row for row in rows if row["status"] in ("failed", "error", "lost")]
    if bad:
        print("  cases that did not succeed:", flush=True)
        for row in bad:
            where = (
                Path(row["folder"]) / "summary.json"
                if row["status"] == "failed"
                else row.get("log", "")
            )
            print(f"    {row['status']:<6} {row['case']}: {row.get('reason')}", flush=True)
            print(f"           see {where}", flush=True)
        if rerun_hint:
            print(f"  run them again: {rerun_hint} --retry-failed", flush=True)


def StatusReport(path: str | Path, *, as_json: bool = False) -> int:
    """`drakebots sweep status DIR`: counts and the table (exit 0 all done, 1 otherwise)."""
    folder = SweepFolder(path)
    if not folder.IsSweepFolder():
        raise InputError(f"{path}: not a sweep folder (no {CASES_FILE})")
    data = folder.ReadCases()
    rows = folder.Rows(data["cases"])
    counts = Counts(rows)
    journal = folder.ReadJournal()
    running = _RunningSweep(folder)
    if as_json:
        from drakebots.results import ToJson

        print(ToJson({"sweep": data["sweep"], "counts": counts, "rows": rows}), end="")
    else:
        parts = [f"{counts[k]} {k}" for k in STATUSES]
        print(f"sweep {data['sweep']} in {folder.path}: {len(rows)} cases: {', '.join(parts)}")
        if data.get("description"):
            print(f"  {data['description']}")
        if running:
            print(f"  a sweep is running in this folder now ({running})")
        starts = [i for i, r in enumerate(journal) if r.get("event") == "start"]
        last_run = journal[starts[-1] :] if starts else journal
        stops = [r for r in last_run if r.get("event") == "interrupted"]
        if stops:
            print(
                f"  the last run was {stops[-1]['reason']}; in flight then: "
                f"{', '.join(stops[-1]['in_flight']) or 'none'}"
            )
        print()
        print(FormatTable(rows, preferred=data.get("figures") or ()))
        bad = [r for r in rows if r["status"] in ("failed", "error", "lost")]
        for row in bad:
            print(f"\n{row['status']} {row['case']}: {row.get('reason')}")
            if row.get("traceback") and len(bad) <= 3:  # Many: see each case's log.
                print("  " + row["traceback"].strip().replace("\n", "\n  "))
            elif row.get("log"):
                print(f"  log: {row['log']}")
    return 0 if counts["done"] == len(rows) else 1


def _RunningSweep(folder: SweepFolder) -> str | None:
    """Who holds the folder's lock, if anyone (a sweep running now)."""
    path = folder.path / LOCK_FILE
    if not path.is_file():
        return None
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            return f.read().strip() or "another process"
        fcntl.flock(f, fcntl.LOCK_UN)
    return None
