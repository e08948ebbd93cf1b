"""IPOPT through its C interface (IpStdCInterface.h), called with ctypes: an NLP solver that
takes a sparse Jacobian and the Hessian of the Lagrangian as (rows, cols, values) directly
from NumPy (drakebots.optimization.contact_implicit_fast).

No compiler is involved. The library is, in order of preference:
1. the IPOPT 3.14 that the CasADi wheel bundles (pip `casadi`, LGPL-3.0; IPOPT is EPL-2.0 and
   its linear solver MUMPS CeCILL-C), found beside the installed `casadi` package;
2. a system IPOPT (Debian's coinor-libipopt1v5, 3.11, EPL-1.0), by ctypes.util.find_library;
or the library the environment variable DRAKEBOTS_IPOPT_LIBRARY names.
`IpoptAvailable()` says which, or why none. Only the C interface's documented functions are
used (CreateIpoptProblem, Add*Option, OpenIpoptOutputFile, SetIntermediateCallback,
IpoptSolve, FreeIpoptProblem), with the `Bool` of the library's version (C int before 3.14,
C bool from 3.14).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import importlib.util
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

from drakebots.workflow import DeferredInterrupt

RETURN_STATUS = {
    0: "Solve_Succeeded",
    1: "Solved_To_Acceptable_Level",
    2: "Infeasible_Problem_Detected",
    3: "Search_Direction_Becomes_Too_Small",
    4: "Diverging_Iterates",
    5: "User_Requested_Stop",
    6: "Feasible_Point_Found",
    -1: "Maximum_Iterations_Exceeded",
    -2: "Restoration_Failed",
    -3: "Error_In_Step_Computation",
    -4: "Maximum_CpuTime_Exceeded",
    -5: "Maximum_WallTime_Exceeded",
    -10: "Not_Enough_Degrees_Of_Freedom",
    -11: "Invalid_Problem_Definition",
    -12: "Invalid_Option",
    -13: "Invalid_Number_Detected",
    -100: "Unrecoverable_Exception",
    -101: "NonIpopt_Exception_Thrown",
    -102: "Insufficient_Memory",
    -199: "Internal_Error",
}
SUCCESS = (0, 1)

_LIBRARY = None  # (ctypes.CDLL, path, bool type, version) once loaded
_BLAS = None  # the OpenBLAS bundled beside it (CasADi's), or False
# How the library is opened: its own dependencies (CasADi's MUMPS, OpenBLAS and OpenMP runtime)
# ahead of the process's global symbols (RTLD_DEEPBIND). Without it the answer depended on import
# order: MKL (drakebots.fem.pardiso) loads Intel's OpenMP runtime, whose GOMP_* symbols then
# served CasADi's libraries when they loaded after it, and the hopper's gait plan (a nonconvex
# NLP) came out a different local solution (Drake's re-simulation 39 % off its distance instead
# of 8 %). Where RTLD_DEEPBIND does not exist (macOS, Windows) the default mode.
_LOAD_MODE = ctypes.DEFAULT_MODE | getattr(os, "RTLD_DEEPBIND", 0)


def _Candidates() -> list[Path]:
    out = []
    chosen = os.environ.get("DRAKEBOTS_IPOPT_LIBRARY")
    if chosen:  # a library of the user's choice (e.g. one built with HSL's solvers)
        return [Path(chosen)]
    spec = importlib.util.find_spec("casadi")
    if spec is not None and spec.origin:
        folder = Path(spec.origin).parent
        names = {"darwin": ["libipopt.dylib", "libipopt.3.dylib"], "win32": ["libipopt-3.dll"]}
        for name in names.get(sys.platform, ["libipopt.so", "libipopt.so.3"]):
            if (folder / name).exists():
                out.append(folder / name)
                break
    system = ctypes.util.find_library("ipopt")
    if system:
        out.append(Path(system))
    return out


@contextlib.contextmanager
def _ThreadDefaults():
    """One thread as the default of the OpenMP runtime and OpenBLAS that load with the IPOPT
    library (CasADi bundles both; each reads its environment once, when it is loaded), unless
    the user's environment sets them. _BlasThreads's calls at solve time did not stop the
    bundled runtime's second thread: measured idle on the HAMR jump and 10 Hz gait, the same
    iterates took 5.8 and 10.0 s of CPU for 3.0 and 5.3 s of wall (a second core spinning), and
    3.1-3.2 and 5.2-5.3 s of CPU for the same wall with one thread at load."""
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    saved = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ.setdefault(name, "1")
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)


def _Load():
    global _LIBRARY
    if _LIBRARY is not None:
        return _LIBRARY
    errors = []
    for path in _Candidates():
        try:
            with _ThreadDefaults():
                lib = ctypes.CDLL(str(path), mode=_LOAD_MODE)
        except OSError as error:
            errors.append(f"{path}: {error}")
            continue
        if not hasattr(lib, "CreateIpoptProblem") or not hasattr(lib, "IpoptSolve"):
            errors.append(f"{path}: no IPOPT C interface")
            continue
        version = "3.11-3.13"
        bool_type = ctypes.c_int
        if hasattr(lib, "GetIpoptVersion"):
            major, minor, release = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
            lib.GetIpoptVersion(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(release))
            version = f"{major.value}.{minor.value}.{release.value}"
            bool_type = ctypes.c_bool
        _LIBRARY = (lib, path, bool_type, version)
        return _LIBRARY
    _LIBRARY = (None, None, None, "; ".join(errors) or "no IPOPT library found")
    return _LIBRARY


@contextlib.contextmanager
def _BlasThreads(count: int = 1):
    """The bundled OpenBLAS (CasADi's libcasadi-tp-openblas, which threadpoolctl does not
    recognise) and the bundled OpenMP runtime (its libgomp, which MUMPS's and that OpenBLAS's
    parallel regions use) limited to `count` threads meanwhile, as drakebots limits every BLAS
    on a shared machine; a system OpenBLAS is threadpoolctl's (the caller's threadpool_limits).

    Why OpenMP too: with the OpenBLAS alone limited, the HAMR jump's IPOPT spent 1.1-3.3 s of
    system time in idle OpenMP workers (their spin-waits) against 0.15 s with the OpenMP runtime
    at one thread, on 5.4 s of user time (2 cores, measured with getrusage)."""
    global _BLAS
    if _BLAS is None:
        _BLAS = False
        path = _Load()[1]
        if path is not None:
            runtimes = []
            folder = Path(path).parent
            for pattern, function in (
                ("libcasadi-tp-openblas.so*", "openblas_set_num_threads"),
                ("libgomp*.so*", "omp_set_num_threads"),
            ):
                for candidate in sorted(folder.glob(pattern)):
                    try:
                        library = ctypes.CDLL(str(candidate))
                    except OSError:
                        continue
                    if hasattr(library, function):
                        runtimes.append(library)
                        break
            _BLAS = runtimes or False
    if not _BLAS:
        yield
        return
    saved = []
    for library in _BLAS:
        if hasattr(library, "openblas_set_num_threads"):
            saved.append(
                (library.openblas_set_num_threads, int(library.openblas_get_num_threads()))
            )
            library.openblas_set_num_threads(int(count))
        else:
            saved.append((library.omp_set_num_threads, int(library.omp_get_max_threads())))
            library.omp_set_num_threads(int(count))
    try:
        yield
    finally:
        for setter, before in saved:
            setter(before)


def IpoptAvailable() -> tuple[bool, str]:
    """(available, description): the library and version, or why there is none."""
    lib, path, _, version = _Load()
    if lib is None:
        return False, (
            "IPOPT's C library was not found (pip install casadi, or apt install "
            f"coinor-libipopt1v5): {version}"
        )
    return True, f"IPOPT {version} ({path})"


@dataclasses.dataclass
class IpoptResult:
    """What one IPOPT solve returned.

    Attributes:
        x, g, objective: the final point, its constraint values and objective.
        mult_g, mult_x_lower, mult_x_upper: the multipliers.
        status: IPOPT's ApplicationReturnStatus code; status_name its name; success: 0 or 1.
        iterations: IPOPT iterations; wall_s, cpu_s: the solve's seconds.
        evaluation_s: seconds in the callbacks, by kind (f, grad_f, g, jac_g, h).
        evaluation_counts: calls by kind.
        log: IPOPT's output file (file_print_level), with its timing statistics.
        timing, timing_cpu: IPOPT's own timing statistics (wall and CPU seconds by name)
            parsed from the log.
    """

    x: np.ndarray
    g: np.ndarray
    objective: float
    mult_g: np.ndarray
    mult_x_lower: np.ndarray
    mult_x_upper: np.ndarray
    status: int
    status_name: str
    success: bool
    iterations: int
    wall_s: float
    cpu_s: float
    evaluation_s: dict
    evaluation_counts: dict
    log: str = ""
    timing: dict = dataclasses.field(default_factory=dict)
    timing_cpu: dict = dataclasses.field(default_factory=dict)


def _ParseTiming(log: str, column: int = 3) -> dict:
    """IPOPT's `print_timing_statistics` lines: name -> seconds (column 3: wall, 2: CPU)."""
    out = {}
    for match in re.finditer(
        r"^\s*([A-Za-z][A-Za-z _\-()]*?)\.*:\s+([\d.]+) \(sys:\s+[\d.]+ wall:\s+([\d.]+)\)",
        log,
        re.MULTILINE,
    ):
        out[match.group(1).strip()] = float(match.group(column))
    return out


def SolveIpopt(
    *,
    x0: np.ndarray,
    x_bounds: tuple[np.ndarray, np.ndarray],
    g_bounds: tuple[np.ndarray, np.ndarray],
    objective,
    gradient,
    constraints,
    jacobian_structure: tuple[np.ndarray, np.ndarray],
    jacobian,
    hessian_structure: tuple[np.ndarray, np.ndarray] | None,
    hessian,
    options: dict | None = None,
    intermediate=None,
    log_file: str | os.PathLike | None = None,
    log_level: int = 5,
) -> IpoptResult:
    """Solves min f(x) s.t. g_L <= g(x) <= g_U, x_L <= x <= x_U with IPOPT.

    Args:
        objective(x) -> float; gradient(x) -> (n,); constraints(x) -> (m,);
        jacobian(x) -> values on jacobian_structure (rows, cols), zero-based;
        hessian(x, sigma, y) -> values of the lower triangle on hessian_structure, or
            hessian_structure None for IPOPT's limited-memory approximation;
        options: IPOPT options by name (int, float or str values);
        intermediate: optional callable(iteration, objective, inf_pr, inf_du, mu) -> bool (False
            stops the solve: User_Requested_Stop);
        log_file: IPOPT's output file (a temporary one when None; its text is in the result).

    Raises:
        RuntimeError: no IPOPT library, or an option IPOPT rejects.
        Any exception raised by a callback (re-raised after IPOPT returns).
    """
    lib, _, Bool, _ = _Load()
    if lib is None:
        raise RuntimeError(IpoptAvailable()[1])
    c_double_p = ctypes.POINTER(ctypes.c_double)
    c_int_p = ctypes.POINTER(ctypes.c_int)
    n = len(x0)
    m = len(g_bounds[0])
    jr, jc = (np.ascontiguousarray(a, dtype=np.int32) for a in jacobian_structure)
    if hessian_structure is not None:
        hr, hc = (np.ascontiguousarray(a, dtype=np.int32) for a in hessian_structure)
    else:
        hr = hc = np.zeros(0, np.int32)
    timers = {k: 0.0 for k in ("f", "grad_f", "g", "jac_g", "h")}
    counts = {k: 0 for k in timers}
    failure = []

    # Ctrl-C during the solve only sets a flag (a KeyboardInterrupt cannot leave a ctypes
    # callback: Python would print "Exception ignored" and IPOPT would go on); the intermediate
    # callback then returns False at the end of the iteration (User_Requested_Stop: the
    # evaluations meanwhile answer as usual, an evaluation error would send IPOPT into its
    # restoration phase instead of stopping), and KeyboardInterrupt is raised after IPOPT returns.
    interrupt = DeferredInterrupt()

    def Guard(kind, body):
        def Call(*args):
            if failure:
                return False
            start = time.perf_counter()
            try:
                ok = body(*args)
            except BaseException as error:  # re-raised after IpoptSolve returns
                failure.append(error)
                return False
            timers[kind] += time.perf_counter() - start
            counts[kind] += 1
            return ok

        return Call

    def X(ptr):
        return np.ctypeslib.as_array(ptr, shape=(n,)).copy()

    def EvalF(_n, x, _new, obj, _user):
        value = float(objective(X(x)))
        if not np.isfinite(value):
            return False
        obj[0] = value
        return True

    def EvalGradF(_n, x, _new, grad, _user):
        np.ctypeslib.as_array(grad, shape=(n,))[:] = gradient(X(x))
        return True

    def EvalG(_n, x, _new, _m, g):
        np.ctypeslib.as_array(g, shape=(m,))[:] = constraints(X(x))
        return True

    def EvalJacG(_n, x, _new, _m, nele, rows, cols, values, _user):
        if not values:
            np.ctypeslib.as_array(rows, shape=(nele,))[:] = jr
            np.ctypeslib.as_array(cols, shape=(nele,))[:] = jc
            return True
        np.ctypeslib.as_array(values, shape=(nele,))[:] = jacobian(X(x))
        return True

    def EvalH(_n, x, _new, sigma, _m, lam, _new_lam, nele, rows, cols, values, _user):
        if not values:
            np.ctypeslib.as_array(rows, shape=(nele,))[:] = hr
            np.ctypeslib.as_array(cols, shape=(nele,))[:] = hc
            return True
        y = np.ctypeslib.as_array(lam, shape=(m,)).copy() if m else np.zeros(0)
        np.ctypeslib.as_array(values, shape=(nele,))[:] = hessian(X(x), float(sigma), y)
        return True

    iterations = [0]
    user_stop = []

    def Intermediate(_mode, iteration, obj, inf_pr, inf_du, mu, _d, _reg, _adu, _apr, _ls, _user):
        iterations[0] = int(iteration)
        if failure or interrupt.requested:
            return False
        if intermediate is None:
            return True
        try:
            keep = bool(intermediate(int(iteration), obj, inf_pr, inf_du, mu))
        except BaseException as error:
            failure.append(error)
            return False
        if not keep:
            user_stop.append(iteration)
        return keep

    # EvalG's signature has a user-data pointer too: (n, x, new_x, m, g, user_data).
    def EvalGFull(_n, x, _new, _m, g, _user):
        return EvalG(_n, x, _new, _m, g)

    f_type = ctypes.CFUNCTYPE(Bool, ctypes.c_int, c_double_p, Bool, c_double_p, ctypes.c_void_p)
    grad_type = ctypes.CFUNCTYPE(Bool, ctypes.c_int, c_double_p, Bool, c_double_p, ctypes.c_void_p)
    g_type = ctypes.CFUNCTYPE(
        Bool, ctypes.c_int, c_double_p, Bool, ctypes.c_int, c_double_p, ctypes.c_void_p
    )
    jac_type = ctypes.CFUNCTYPE(
        Bool,
        ctypes.c_int,
        c_double_p,
        Bool,
        ctypes.c_int,
        ctypes.c_int,
        c_int_p,
        c_int_p,
        c_double_p,
        ctypes.c_void_p,
    )
    h_type = ctypes.CFUNCTYPE(
        Bool,
        ctypes.c_int,
        c_double_p,
        Bool,
        ctypes.c_double,
        ctypes.c_int,
        c_double_p,
        Bool,
        ctypes.c_int,
        c_int_p,
        c_int_p,
        c_double_p,
        ctypes.c_void_p,
    )
    inter_type = ctypes.CFUNCTYPE(
        Bool,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_double,
        ctypes.c_double,
        ctypes.c_double,
        ctypes.c_double,
        ctypes.c_double,
        ctypes.c_double,
        ctypes.c_double,
        ctypes.c_double,
        ctypes.c_int,
        ctypes.c_void_p,
    )
    callbacks = (
        f_type(Guard("f", EvalF)),
        g_type(Guard("g", EvalGFull)),
        grad_type(Guard("grad_f", EvalGradF)),
        jac_type(Guard("jac_g", EvalJacG)),
        h_type(Guard("h", EvalH)),
    )
    inter_cb = inter_type(Intermediate)

    def Array(a):
        a = np.ascontiguousarray(a, dtype=np.float64)
        return a, a.ctypes.data_as(c_double_p)

    infinity = 1e19
    x_l, x_l_p = Array(np.clip(x_bounds[0], -infinity, infinity))
    x_u, x_u_p = Array(np.clip(x_bounds[1], -infinity, infinity))
    g_l, g_l_p = Array(np.clip(g_bounds[0], -infinity, infinity))
    g_u, g_u_p = Array(np.clip(g_bounds[1], -infinity, infinity))
    lib.CreateIpoptProblem.restype = ctypes.c_void_p
    lib.CreateIpoptProblem.argtypes = [
        ctypes.c_int,
        c_double_p,
        c_double_p,
        ctypes.c_int,
        c_double_p,
        c_double_p,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        f_type,
        g_type,
        grad_type,
        jac_type,
        h_type,
    ]
    problem = lib.CreateIpoptProblem(
        n, x_l_p, x_u_p, m, g_l_p, g_u_p, len(jr), len(hr), 0, *callbacks
    )
    if not problem:
        raise RuntimeError("IPOPT could not create the problem (CreateIpoptProblem)")
    handle = ctypes.c_void_p(problem)
    lib.FreeIpoptProblem.argtypes = [ctypes.c_void_p]
    lib.AddIpoptStrOption.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.AddIpoptNumOption.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double]
    lib.AddIpoptIntOption.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    for f in (lib.AddIpoptStrOption, lib.AddIpoptNumOption, lib.AddIpoptIntOption):
        f.restype = Bool
    lib.OpenIpoptOutputFile.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.OpenIpoptOutputFile.restype = Bool
    lib.SetIntermediateCallback.argtypes = [ctypes.c_void_p, inter_type]
    lib.SetIntermediateCallback.restype = Bool
    lib.IpoptSolve.restype = ctypes.c_int
    lib.IpoptSolve.argtypes = [ctypes.c_void_p] + [c_double_p] * 6 + [ctypes.c_void_p]
    temporary = log_file is None
    # Ctrl-C is deferred from the log file's creation to its removal (not only during
    # IpoptSolve): a signal landing between them, e.g. while the options are set or the log
    # is read, would otherwise leave the temporary file behind (seen once in CI).
    with _BlasThreads(1), interrupt:
        if temporary:
            import tempfile

            fd, log_file = tempfile.mkstemp(prefix="ipopt-", suffix=".out")
            os.close(fd)
        try:
            options = dict(options or {})
            options.setdefault("print_level", 0)
            options.setdefault("sb", "yes")  # no banner on stdout
            if hessian_structure is None:
                options["hessian_approximation"] = "limited-memory"
            for key, value in options.items():
                k = key.encode()
                if isinstance(value, bool):
                    ok = lib.AddIpoptStrOption(handle, k, b"yes" if value else b"no")
                elif isinstance(value, (int, np.integer)):
                    ok = lib.AddIpoptIntOption(handle, k, int(value))
                elif isinstance(value, (float, np.floating)):
                    ok = lib.AddIpoptNumOption(handle, k, float(value))
                else:
                    ok = lib.AddIpoptStrOption(handle, k, str(value).encode())
                if not ok:
                    raise RuntimeError(f"IPOPT rejected the option {key} = {value!r}")
            lib.OpenIpoptOutputFile(handle, str(log_file).encode(), int(log_level))
            lib.SetIntermediateCallback(handle, inter_cb)
            x, x_p = Array(np.clip(x0, -infinity, infinity))
            x = x.copy()
            x_p = x.ctypes.data_as(c_double_p)
            g = np.zeros(m)
            obj = np.zeros(1)
            mult_g = np.zeros(m)
            mult_l = np.zeros(n)
            mult_u = np.zeros(n)
            start, cpu_start = time.perf_counter(), time.process_time()
            status = lib.IpoptSolve(
                handle,
                x_p,
                g.ctypes.data_as(c_double_p),
                obj.ctypes.data_as(c_double_p),
                mult_g.ctypes.data_as(c_double_p),
                mult_l.ctypes.data_as(c_double_p),
                mult_u.ctypes.data_as(c_double_p),
                None,
            )
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        finally:
            lib.FreeIpoptProblem(handle)  # closes the output file
            # Read and removed here, so that an interrupted solve leaves no temporary log behind.
            log = Path(log_file).read_text(errors="replace") if Path(log_file).exists() else ""
            if temporary:
                Path(log_file).unlink(missing_ok=True)
    errors = [e for e in failure if not isinstance(e, KeyboardInterrupt)]
    if any(isinstance(e, KeyboardInterrupt) for e in failure):
        raise KeyboardInterrupt
    if errors:
        raise errors[0]
    match = re.findall(r"Number of Iterations\.+:\s+(\d+)", log)
    its = int(match[-1]) if match else iterations[0]
    return IpoptResult(
        x=x,
        g=g,
        objective=float(obj[0]),
        mult_g=mult_g,
        mult_x_lower=mult_l,
        mult_x_upper=mult_u,
        status=int(status),
        status_name=RETURN_STATUS.get(int(status), "unknown"),
        success=int(status) in SUCCESS,
        iterations=its,
        wall_s=wall,
        cpu_s=cpu,
        evaluation_s=timers,
        evaluation_counts=counts,
        log=log,
        timing=_ParseTiming(log),
        timing_cpu=_ParseTiming(log, 2),
    )
