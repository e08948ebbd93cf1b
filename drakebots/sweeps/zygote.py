"""A fork server for `drakebots sweep` cases: a fresh process per case without the start-up.

Starting `python -m drakebots ...` costs about 1 s of CPU per case, nearly all of it importing
pydrake, numpy and matplotlib. A sweep worker instead starts this module once (per worker thread)
as `python -m drakebots.sweeps.zygote PARENT_PID`: it imports those modules, then for each
request forks a child that runs the command module's `main(argv)` (drakebots.sweeps.Commands)
with its output sent to the case's log, and reports the child's pid, then its exit code and CPU
time. The child is still a separate process (a crash or a leak stays in it, it can be killed), it
just starts from a warm copy.

Protocol (one JSON object per line): the worker writes {"argv": [...], "log": path}; this server
answers {"pid": N} when the child starts and {"pid": N, "code": exit code, "cpu": s} when it ends.
The server and each child die with their parent (Linux prctl PR_SET_PDEATHSIG).
"""

import json
import os
import signal
import sys


def SetDeathSignal() -> None:
    """SIGKILL this process when its parent dies (Linux; a no-op elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (AttributeError, OSError):
        pass


def _Child(request: dict, protocol_fd: int) -> None:
    """In the forked child: run one case, then exit with its code (never returns)."""
    code = 1
    try:
        SetDeathSignal()
        os.close(protocol_fd)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.argv = ["drakebots", *request["argv"]]  # summary.json records the command from here.
        from drakebots.sweeps import Commands

        main = Commands().main

        code = int(main(request["argv"]) or 0)
    except SystemExit as e:  # As Python does: a message (pydrake's failed DRAKE_DEMAND) exits 1.
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - as `python` would: the traceback, then exit 1.
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def Serve(parent_pid: int) -> None:
    import signal

    # A terminal's Ctrl-C reaches the whole process group: the sweep's driver handles it (it
    # stops the cases in flight); the server and the cases it forks print no traceback of
    # their own (issue 68).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    SetDeathSignal()
    if os.getppid() != parent_pid:
        sys.exit("drakebots sweep: the worker that started this fork server is gone")
    # The protocol keeps the original stdout; anything printed by accident goes to stderr.
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    protocol = os.fdopen(protocol_fd, "w", buffering=1)
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import pydrake.all  # noqa: F401
    import scipy.sparse  # noqa: F401

    from drakebots.sweeps import Commands

    MakeParser = Commands().MakeParser

    MakeParser()  # Imports every verb module.
    import gc

    gc.collect()
    gc.freeze()  # Keep the warm heap out of the children's collections (copy-on-write).
    protocol.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _Child(request, protocol_fd)
        protocol.write(json.dumps({"pid": pid}) + "\n")
        _, status, usage = os.wait4(pid, 0)
        result = {
            "pid": pid,
            "code": os.waitstatus_to_exitcode(status),
            "cpu": usage.ru_utime + usage.ru_stime,
        }
        protocol.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    Serve(int(sys.argv[1]))


class ForkServer:
    """The worker's side: starts the server and runs cases through it.

    One per worker thread (the server runs one case at a time). Not thread-safe.
    """

    def __init__(self, *, start_timeout: float = 300.0):
        import subprocess

        env = dict(os.environ, MPLBACKEND="Agg")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "drakebots.sweeps.zygote", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            bufsize=0,
        )
        self._buffer = b""
        ready = self._ReadLine(start_timeout)
        if ready is None or "ready" not in ready:
            self.Close()
            raise RuntimeError("the sweep's fork server did not start")

    def Alive(self) -> bool:
        return self._process.poll() is None

    def _ReadLine(self, timeout: float | None) -> dict | None:
        """The next message, or None after `timeout` s (None: wait as long as it takes)."""
        import select
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self._process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([fd], [], [], left)
            if not readable:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("the sweep's fork server ended")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def Run(self, argv: list[str], log: str, timeout: float | None, on_start) -> tuple:
        """Runs one case; returns (exit code, CPU s, timed out). `on_start(pid)` is called once
        the child runs (to let StopCases find it)."""
        import time

        self._process.stdin.write((json.dumps({"argv": argv, "log": log}) + "\n").encode())
        pid = self._ReadLine(60.0)["pid"]
        on_start(pid)
        deadline = None if timeout is None else time.monotonic() + timeout
        timed_out = False
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            result = self._ReadLine(left)
            if result is not None:
                return result["code"], result["cpu"], timed_out
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            deadline = None

    def Close(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
