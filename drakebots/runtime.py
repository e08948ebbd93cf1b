"""Process-level settings that the large sparse computations of drakebots measure faster with.

Two effects dominate the skinned robots' frame-by-frame QPCC on a small machine (measured on the
beetle's coupled frame, 12.7k skin vertices, 38.5k tets, a 37.7k-row Cholesky factor; see
scripts/bench_skinned.py):

- **Page faults on large temporaries.** glibc serves every allocation above its mmap threshold
  (at most 32 MB) with a fresh mmap and returns it to the kernel on free, so each frame's
  element matrices (38.5k x 12 x 12 doubles = 44 MB), their products and CHOLMOD's numeric
  factor are faulted in page by page again, frame after frame. On this project's virtual
  machines that made the FEM assembly 2.5x slower (0.42 vs 0.17 s) and the factorisation 15 %
  slower. `KeepFreedMemory` asks glibc to serve large blocks from its heap and to keep freed
  memory for reuse (`mallopt(M_MMAP_MAX, 0)` and a high `M_TRIM_THRESHOLD`): the process keeps
  its peak heap instead of returning it between frames. It is opt-in, being process-wide: the
  `drakebots` command calls it at start-up and a script may too; no library call does.
- **Spinning BLAS threads.** Small dense kernels (the FEM's batched 12x9 products, a 78-column
  Gram matrix) gain nothing from a second BLAS thread, and the idle thread then spins against
  CHOLMOD's own threads on a 2-core machine. `SingleThreadedBlas` holds BLAS to one thread
  around such kernels only (CHOLMOD's supernodal factorisation keeps its threads).

`DRAKEBOTS_KEEP_FREED_MEMORY=0` in the environment leaves glibc's allocator as it is.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os

_M_TRIM_THRESHOLD = -1  # glibc malloc.h
_M_MMAP_MAX = -4
_state = {"memory": None, "blas": None}


def KeepFreedMemory() -> bool:
    """Makes glibc keep freed large blocks for reuse (once per process; idempotent).

    Process-wide and never undone: call it at a program's start (the `drakebots` command does,
    in drakebots.cli.main), not from a library.

    Returns True when the setting is in effect (glibc found and not opted out)."""
    if _state["memory"] is not None:
        return _state["memory"]
    ok = False
    if os.environ.get("DRAKEBOTS_KEEP_FREED_MEMORY", "1") != "0":
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            mallopt = libc.mallopt
            mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            # Trim threshold first: with mmap off, large frees go back to the heap's top, and
            # only a high threshold stops glibc from giving that memory back to the kernel.
            ok = bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)) and bool(mallopt(_M_MMAP_MAX, 0))
        except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to do
            ok = False
    _state["memory"] = ok
    return ok


def SingleThreadedBlas():
    """A context holding every loaded BLAS to one thread (restored on exit)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a declared dependency
        return contextlib.nullcontext()
    if _state["blas"] is None:
        _state["blas"] = ThreadpoolController()
    return _state["blas"].limit(limits=1, user_api="blas")


# ---------------------------------------------------------------------------------------------
# The environment variables drakebots reads: each is judged in one place, and a bad value is one
# line naming the variable (InputError, exit 2 at the command line; issue 68).
# ---------------------------------------------------------------------------------------------


def _EnvError(name: str, text: str, what: str):
    from drakebots.errors import InputError

    return InputError(f"environment variable {name}={text!r}: {what}")


# DRAKEBOTS_FRAME_SOLVER's values (drakebots.frame.model.FactorizationBackend), here so that the
# command line judges the variable without importing the frame (a quarter second).
FRAME_SOLVERS = ("auto", "pardiso", "multifrontal", "superlu", "cholmod")
# DRAKEBOTS_FEM_THREADS's default (drakebots.fem.model.KernelThreads: one thread).
FEM_THREADS_DEFAULT = 1


# The most threads a thread-count variable may ask for (as --workers): 1e20 overflowed the C int
# that MKL's thread count is.
MAX_THREADS = 1024


def EnvironmentInt(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    """An integer environment variable (unset or empty: `default`); InputError naming it for a
    value that is not an integer >= minimum (and <= maximum, where given)."""
    text = os.environ.get(name, "")
    if not text.strip():
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise _EnvError(name, text, f"must be an integer >= {minimum}") from None
    if value < minimum:
        raise _EnvError(name, text, f"must be an integer >= {minimum}")
    if maximum is not None and value > maximum:
        raise _EnvError(name, text, f"must be an integer <= {maximum}")
    return value


def EnvironmentChoice(name: str, choices, default: str) -> str:
    """One of `choices` from an environment variable (case-insensitive; unset or empty:
    `default`); InputError naming it otherwise."""
    text = os.environ.get(name, "")
    value = text.strip().lower() or default
    if value not in choices:
        raise _EnvError(name, text, f"choose one of {', '.join(choices)}")
    return value


def _CheckMatplotlibBackend(backend: str) -> None:
    """InputError naming MPLBACKEND for a name matplotlib does not know. Importing matplotlib
    reads MPLBACKEND and raises for a bad name, leaving its half-imported submodules behind (a
    later import in the process fails), so it is imported without the variable, which is then
    judged and applied as matplotlib's import would have."""
    import sys

    imported_here = "matplotlib" not in sys.modules
    if imported_here:
        saved = os.environ.pop("MPLBACKEND")
        try:
            import matplotlib
        finally:
            os.environ["MPLBACKEND"] = saved
    import matplotlib
    from matplotlib import rcsetup

    try:
        rcsetup.validate_backend(backend)
    except ValueError:
        raise _EnvError(
            "MPLBACKEND", backend, "not a matplotlib backend (drakebots draws with Agg)"
        ) from None
    if imported_here:
        matplotlib.rcParams["backend"] = backend


def CheckEnvironment() -> None:
    """Judges every environment variable drakebots reads, before any work (the command line
    calls it first): the frame's solver and threads, the FEM's threads, the IPOPT library,
    MPLBACKEND and the DRAKEBOTS_MAX_* work bounds. InputError naming the variable."""
    from drakebots.limits import BOUNDS, Limit, MemoryAvailable

    # As their readers judge them (FactorizationBackend, FrameThreads, KernelThreads), without
    # importing the frame and the FEM (numba: most of a second at every command).
    EnvironmentChoice("DRAKEBOTS_FRAME_SOLVER", FRAME_SOLVERS, "auto")
    EnvironmentInt("DRAKEBOTS_FRAME_THREADS", 0, maximum=MAX_THREADS)
    EnvironmentInt("DRAKEBOTS_FEM_THREADS", FEM_THREADS_DEFAULT, minimum=1, maximum=MAX_THREADS)
    # Switches: 0 or 1 (unset: their default).
    EnvironmentChoice("DRAKEBOTS_KEEP_FREED_MEMORY", ("0", "1"), "1")
    EnvironmentChoice("DRAKEBOTS_NO_PARDISO", ("0", "1"), "0")
    library = os.environ.get("DRAKEBOTS_IPOPT_LIBRARY", "")
    if library and not os.path.isfile(library):
        raise _EnvError("DRAKEBOTS_IPOPT_LIBRARY", library, "no such file (an IPOPT library)")
    backend = os.environ.get("MPLBACKEND", "")
    if backend:
        _CheckMatplotlibBackend(backend)
    for name in BOUNDS:
        Limit(name)
    MemoryAvailable()
