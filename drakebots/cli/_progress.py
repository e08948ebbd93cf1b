"""The command line's side of a workflow's `progress` callback (drakebots.workflow.ProgressEvent):
messages as "[   t s] message" lines on stdout, step counts as tqdm bars on stderr (only when
stderr is a terminal and --no-progress was not given)."""

import sys

from drakebots.workflow import ProgressEvent


class CliProgress:
    """A callable for `progress=`: prints messages, draws one tqdm bar per task.

    Args:
        bars: draw tqdm bars for step events (default: when stderr is a terminal).
        quiet: print no message lines either.
    """

    def __init__(self, bars: bool | None = None, *, quiet: bool = False):
        self._bars_on = sys.stderr.isatty() if bars is None else bool(bars)
        self._quiet = quiet
        self._bars = {}

    def __call__(self, event: ProgressEvent) -> None:
        if event.message is not None and not self._quiet:
            print(f"[{event.elapsed_s:6.1f} s] {event.message}", flush=True)
        if event.task is None or event.step is None or not self._bars_on:
            return
        bar = self._bars.get(event.task)
        if bar is None:
            from tqdm import tqdm

            bar = tqdm(total=event.total, unit=event.task, file=sys.stderr, leave=False)
            self._bars[event.task] = bar
        bar.n = event.step
        bar.refresh()
        if event.total is not None and event.step >= event.total:
            self.Close(event.task)

    def Close(self, task: str | None = None) -> None:
        """Closes one task's bar (or all)."""
        for name in [task] if task is not None else list(self._bars):
            bar = self._bars.pop(name, None)
            if bar is not None:
                bar.close()
