"""What every workflow shares: its result, its progress reports, its typed config (DESIGN.md,
"Workflows: the Python API").

Every verb of the command line is a library call shaped like Drake's hardware_sim scenario:

    result = Design(DesignConfig(robot="beetle", motion="single-foot-lift"), progress=None)
    result.success, result.reason, result.figures["max_torque_ratio"]
    result.Save("runs/lift")          # the results folder, atomically (drakebots.results)

- The config is a dataclass with a commented default on every field, loadable from YAML with
  `LoadConfig` (drakebots.config.LoadTypedYaml: unknown keys and bad values name key and file).
- The result is a `WorkflowResult`: `success`, `reason` (None, or the failure with the violated
  constraints where a solver failed), `figures` (the dict summary.json holds), the arrays a user
  plots (each workflow's own fields), and `Save(folder, force=False)`, which writes the results
  folder through a temporary sibling and a rename (nothing half written).
- A workflow never prints, reads argv, or starts a Meshcat server it was not handed; long work
  reports through `progress`, a callable taking a `ProgressEvent` (the command line turns the events
  into its log lines and tqdm bars; a notebook may collect them).

Why a callback and not Python's logging: the same events carry step counts for a progress bar,
and a script that passes nothing pays nothing (pydrake's own Simulator has a monitor callback in
the same spirit).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from drakebots.config import LoadTypedYaml

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class ProgressEvent:
    """One report of a long workflow.

    Attributes:
        message: a line for a person (None: only a step count).
        task: what the steps count ("frames", "iterations", ...), None without steps.
        step: steps done so far of `task` (None: a message only).
        total: the steps `task` will take (None if unknown).
        elapsed_s: seconds since the workflow started.
    """

    message: str | None = None
    task: str | None = None
    step: int | None = None
    total: int | None = None
    elapsed_s: float = 0.0


Progress = Callable[[ProgressEvent], None]


class Reporter:
    """A workflow's side of `progress`: `Say(message)` and `Step(task, step, total)` do nothing
    when the caller passed no callback."""

    def __init__(self, progress: Progress | None):
        self._progress = progress
        self._start = time.perf_counter()

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self._start

    def Say(self, message: str) -> None:
        if self._progress is not None:
            self._progress(ProgressEvent(message=message, elapsed_s=self.elapsed_s))

    def Step(self, task: str, step: int, total: int | None = None) -> None:
        if self._progress is not None:
            self._progress(
                ProgressEvent(task=task, step=int(step), total=total, elapsed_s=self.elapsed_s)
            )


@dataclasses.dataclass
class WorkflowResult:
    """The base of every workflow's result (subclasses add the arrays a user plots).

    Attributes:
        verb: the command-line verb that runs this workflow ("design", "voxel fem", ...).
        config: the config the workflow ran with.
        success: the run reached its goal (exit 0); False: it ran but did not (exit 1).
        reason: None, or why not (with the violated constraints where a solver failed).
        figures: the figures of merit, as summary.json holds them.
    """

    verb: str
    config: Any
    success: bool
    reason: str | None
    figures: dict

    def Summary(self, command: str | None = None) -> dict:
        """summary.json's contents: verb, command, inputs (the config), versions, time, then
        success, reason and the figures."""
        from drakebots.results import MakeSummary

        return MakeSummary(
            self.verb,
            self._SummaryInputs(),
            command=command,
            success=self.success,
            reason=self.reason,
            **self._SummaryFields(),
        )

    def _SummaryInputs(self) -> dict:
        """summary.json's "inputs" (default: the config's fields; a subclass may keep the keys
        its verb wrote before it became a workflow)."""
        return _Inputs(self.config)

    def _SummaryFields(self) -> dict:
        """summary.json's entries after success and reason (default: the figures, spread; a
        subclass whose summary.json nests them under "figures" beside other entries returns
        those here)."""
        return dict(self.figures)

    def Save(
        self, folder: str | Path, force: bool = False, *, command: str | None = None, reads=()
    ):
        """Writes the results folder (summary.json and whatever `_Write` adds) atomically.

        Args:
            folder: the destination; an existing one is replaced only with `force`.
            command: the command line that made it, for summary.json (the CLI passes its own).
            reads: the paths the run read (`force` never replaces a folder holding one).

        Returns:
            the folder's Path.
        """
        from drakebots.results import ResultsFolder

        with ResultsFolder(folder, force=force, reads=reads) as results:
            self._Write(results)
            results.WriteJson("summary.json", self.Summary(command))
        return results.final

    def _Write(self, results) -> None:
        """Subclasses write their data, plots and replay here (`results` is a ResultsFolder)."""


def _Inputs(config) -> dict:
    if config is None:
        return {}
    if dataclasses.is_dataclass(config):
        return dataclasses.asdict(config)
    return dict(config)


def LoadConfig(schema: type[T], filename: str | Path, *, defaults: T | None = None) -> T:
    """A workflow's config from a YAML file (keys as the dataclass's fields; unknown keys and
    bad values raise InputError naming the key and the file)."""
    return LoadTypedYaml(schema, filename=filename, defaults=defaults)


class DeferredInterrupt:
    """Ctrl-C held while native code runs Python callbacks (IPOPT through ctypes, Clarabel,
    Drake's Simulator monitor), then raised as KeyboardInterrupt when the block ends (issue 68).

    A KeyboardInterrupt raised inside a ctypes callback cannot leave it: Python prints "Exception
    ignored on calling ctypes callback" and the solver goes on. Inside this block SIGINT only sets
    `requested`; the callbacks poll it and ask the native code to stop (IPOPT's intermediate
    callback returns False), and the KeyboardInterrupt is raised once the native call returned.
    Outside the main thread, or where SIGINT is not Python's to handle, it does nothing.

        with DeferredInterrupt() as interrupt:
            solver.Solve(..., stop=lambda: interrupt.requested)
    """

    def __init__(self):
        self.requested = False
        self._previous = None
        self._installed = False

    def _Handle(self, signum, frame):
        self.requested = True
        self._signum = signum

    def __enter__(self) -> DeferredInterrupt:
        import signal
        import threading

        self._signum = None
        self._term = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            # SIG_DFL or a caller's handler (drakebots.cli's, which raises) is replaced too.
            if previous not in (signal.SIG_IGN, None):
                self._previous = previous
                signal.signal(signal.SIGINT, self._Handle)
                self._installed = True
            # SIGTERM is deferred too where a Python handler takes it (drakebots.cli's, which
            # raises); its default (the process ends) is left alone.
            term = signal.getsignal(signal.SIGTERM)
            if callable(term):
                self._term = term
                signal.signal(signal.SIGTERM, self._Handle)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        import signal

        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False
        term, self._term = self._term, None
        if term is not None:
            signal.signal(signal.SIGTERM, term)
        if self.requested and exc_type is None:
            if self._signum == signal.SIGTERM and term is not None:
                # drakebots.cli's handler raises drakebots.errors.Terminated.
                term(signal.SIGTERM, None)
            raise KeyboardInterrupt
        return False
