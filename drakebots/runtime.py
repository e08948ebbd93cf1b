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
