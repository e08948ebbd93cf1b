"""Work bounds in one place (issue 68): how much one run may ask for, checked before any work.

A typo (1e-4 m for 1e-2 m, a mesh in millimetres read as metres, 1e9 for 1e3) must be refused
in one line, not run for days or take the machine's memory. Flags, config files and Python
configs pass the same checks, because the workflows' checks (their configs' `Check()` or
`Check...Config`) call these functions, whichever path built the config.

Every bound has a default and an environment variable that raises (or lowers) it for a user who
means it, `DRAKEBOTS_MAX_<NAME>`; the refusal names the bound, the value and that variable:

    CheckWork("steps", 3.6e9, "--duration 3600 s / --time-step 1e-6 s")
    # InputError: --duration 3600 s / --time-step 1e-6 s: 3.6e+09 simulation steps is above
    # the bound of 1e+07 (set DRAKEBOTS_MAX_STEPS to allow more)

Memory is judged before allocating (`CheckMemory`): an estimate above the machine's available
memory (/proc/meminfo MemAvailable; 8 GiB where it cannot be read) is refused, as is one above
DRAKEBOTS_MAX_MEMORY_GB when it is set.
"""

from __future__ import annotations

import dataclasses
import math
import os

from drakebots.errors import InputError


@dataclasses.dataclass(frozen=True)
class Bound:
    """One bound on the work of a run."""

    # The default most a run may ask for.
    default: float
    # What the value counts ("simulation steps").
    unit: str


# The bounds, by name (the environment variable is DRAKEBOTS_MAX_ + the name in capitals).
BOUNDS: dict[str, Bound] = {
    # Frames of a replay (view, every replay.html): 200 000 is 1.9 h at 30 frames/s, above the
    # longest simulation (--duration's 3600 s).
    "frames": Bound(200_000, "frames"),
    # Simulated time of one simulation, s (as the command line's --duration bound).
    "duration": Bound(3600.0, "s of simulated time"),
    # Steps of one simulation (duration / time step): 1e7 is 10 s at 1 us, 1 h at 0.36 ms.
    "steps": Bound(10_000_000, "simulation steps"),
    # Samples of a simulation's logs (duration / log period), each a full state row in memory.
    "log_samples": Bound(1_000_000, "log samples"),
    # Knots of a trajectory optimisation (the command line's --knots bound).
    "knots": Bound(2000, "knots"),
    # Cases of one sweep (the grid's product and the listed cases).
    "cases": Bound(10_000, "cases"),
    # Voxels of a lattice (voxel fem: --lattice's 20x20x20, --occupancy's too).
    "voxels": Bound(8000, "voxels"),
    # Cells of a skin's marching-cubes grid (its bounding box over --voxel, cubed): the beetle at
    # its 11 mm voxel is about 1e5, at 2.5 mm about 1e7.
    "grid_cells": Bound(50_000_000, "grid cells"),
    # Bytes of a mesh file read whole into memory (skin --surface): the text OBJ parser holds
    # about 20 times the file as Python objects, so 100 MB is about 2 GB (the paper's beetle
    # surface is a few MB).
    "mesh_bytes": Bound(100_000_000, "bytes of mesh file"),
    # --- counts and times of one run's loops (issue 68's leftovers: each was a fixed number) ---
    # Iterations of a solver or design loop (SNOPT's major iterations, IPOPT's, space-time's).
    "iterations": Bound(100_000, "iterations"),
    # Cycles of a gait simulated or tracked (simulate --cycles, track --cycles).
    "cycles": Bound(10_000, "cycles"),
    # Warm-up cycles before a gecko measurement (velocity-space --warmup).
    "warmup": Bound(1000, "warm-up cycles"),
    # Frames a design's frame-by-frame pass takes between two space-time knots.
    "knot_frames": Bound(1000, "frames per knot"),
    # Samples per direction of HAMR-VI's transmission look-up table (track --table-samples).
    "table_samples": Bound(1001, "samples per direction"),
    # Planner steps of a gecko course (navigate --max-steps).
    "planner_steps": Bound(100_000, "planner steps"),
    # Knots a tracking controller looks ahead.
    "lookahead": Bound(1000, "knots of lookahead"),
    # Teeth of a folded skin joint (skin --fold-teeth).
    "fold_teeth": Bound(100, "teeth"),
    # Directions of a linearised friction cone (optimize --friction-directions): its constraints
    # grow with it.
    "friction_directions": Bound(64, "friction directions"),
    # Worker processes of a sweep or a velocity-space grid.
    "workers": Bound(1024, "workers"),
    # A drive or gait frequency, Hz (HAMR-VI's strides; the plant's step is 0.25 ms).
    "frequency": Bound(1000.0, "Hz"),
    # The longest motion one plan may span, in the problem's time unit (HAMR-VI's ms; a robot
    # file's jump is bounded again by "duration" in seconds): 10 s of HAMR-VI.
    "plan_time": Bound(10_000.0, "time units of planned motion (ms for HAMR-VI)"),
    # Seconds of a replay written or served (view --seconds, design --coupled-replay-seconds).
    "replay_seconds": Bound(86_400.0, "s of replay"),
    # Wall-clock seconds one case of a sweep may run (sweep --case-timeout): a week.
    "case_timeout": Bound(604_800.0, "s of wall clock"),
    # Coupled (skin + skeleton) steps of one skin-bend experiment, about a second each.
    "bend_steps": Bound(10_000, "coupled steps"),
    # --- the scale of a scene (a unit slip, m for mm, is refused; a user who means it raises it)
    # Drop height of a simulation, m: a robot of drakebots' sizes dropped from 100 m hits the
    # ground at 44 m/s; 1e300 simulated and reported "the robot fell".
    "drop_height": Bound(100.0, "m of drop height"),
    # A friction coefficient (simulate --ground-friction): rubber on rubber is about 1-2.
    "friction": Bound(10.0, "friction coefficient"),
    # A skinned robot's design speed, m/s: these robots are a few tenths of a metre long.
    "speed": Bound(10.0, "m/s"),
    # A skinned robot's foot lift, m.
    "lift_height": Bound(1.0, "m of lift height"),
    # A distance of HAMR-VI's plans and plots, mm (a jump's height, a stride's goal, the scuff
    # height, the modes' amplitude): twenty of its 45 mm heights.
    "hamr_distance": Bound(1000.0, "mm"),
    # A motor torque, N*m (skin-bend --torque-limit, design --motor-limit): the skinned robots'
    # motors give about 2 N*m; 1e308 ran on.
    "torque": Bound(1000.0, "N*m"),
    # A multiple of the motors' limit a design's plan may use (design --plan-motor-limits).
    "motor_fraction": Bound(100.0, "times the motor limit"),
    # A factor on every mass of a robot (design --mass-scale; 2 is the paper's failure case).
    "mass_scale": Bound(1000.0, "times the robot's mass"),
    # A cost weight of an optimisation (relative to its terms' weight of about 1): 1e308
    # overflowed the solver's sums and ran on.
    "weight": Bound(1e6, "weight"),
    # How far a gecko course's targets, start and obstacles may lie from the origin, m.
    "course": Bound(1000.0, "m from the origin"),
    # A gecko course's target radius, m: fifty of the 0.2 m walker's body lengths.
    "target_radius": Bound(10.0, "m of target radius"),
    # The largest length a skinned robot's skeleton file may give, m: these robots are tens of
    # centimetres (a length in millimetres read as metres would build a 100 m robot).
    "skeleton_length": Bound(10.0, "m of skeleton length"),
    # The largest extent of a robot model's mesh once scaled, m (a millimetre mesh read as
    # metres is 1000 times too big).
    "mesh_extent": Bound(100.0, "m across"),
    # --- the size of what is read
    # Bytes of a robot model's mesh file, read whole by trimesh (published robots' are tens of MB).
    "model_mesh_bytes": Bound(512 * 1024**2, "bytes of mesh file"),
    # Bytes of a YAML file (configs, scenarios, robot files, sweeps are a few KB).
    "yaml_bytes": Bound(4 * 1024**2, "bytes of YAML"),
    # Values of a YAML file once its aliases are expanded (issue 50: a 1 KB file of nested
    # aliases grew a process to 2.8 GB).
    "yaml_values": Bound(200_000, "values once its aliases are expanded"),
}

# The bound each config key or command-line option (by its dest) meets wherever it is given: a
# flag (drakebots.cli), a config file's key (drakebots.config.LoadTypedYaml) or a Python config's
# field (drakebots.config.CheckTypes, which every workflow's check calls first).
KEY_BOUNDS: dict[str, str] = {
    "knots": "knots",
    "knot_frames": "knot_frames",
    "cycles": "cycles",
    "iterations": "iterations",
    "major_iterations": "iterations",
    "space_time_iterations": "iterations",
    "first_stage_iterations": "iterations",
    "table_samples": "table_samples",
    "max_steps": "planner_steps",
    "warmup": "warmup",
    "frequency": "frequency",
    "workers": "workers",
    "fold_teeth": "fold_teeth",
    "friction_directions": "friction_directions",
    "lookahead": "lookahead",
    "friction": "friction",
    "torque_limit": "torque",
    "motor_limit": "torque",
    "plan_motor_limits": "motor_fraction",
    "mass_scale": "mass_scale",
    "torso_attitude_weight": "weight",
    "scuff_weight": "weight",
    "goal": "hamr_distance",
    "scuff_height": "hamr_distance",
    "amplitude": "hamr_distance",
}

# Where MemAvailable cannot be read, this much memory is assumed available.
FALLBACK_MEMORY_BYTES = 8 * 1024**3


def _EnvName(name: str) -> str:
    return "DRAKEBOTS_MAX_" + name.upper()


def Limit(name: str) -> float:
    """The bound `name` (BOUNDS) now: DRAKEBOTS_MAX_<NAME> when set, else the default.

    Raises:
        InputError: the variable is set to something that is not a positive number.
    """
    bound = BOUNDS[name]
    variable = _EnvName(name)
    text = os.environ.get(variable)
    if text is None or text.strip() == "":
        return bound.default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"environment variable {variable}={text!r}: must be a positive number")
    return value


def CheckWork(name: str, value: float, what: str) -> None:
    """InputError when `value` (of `what`, the flag or key it comes from) is above bound `name`:
    one line naming what, the value, the bound and the variable that raises it."""
    limit = Limit(name)
    if not math.isfinite(value) or value > limit:
        raise InputError(
            f"{what}: {value:.6g} {BOUNDS[name].unit} is above the bound of {limit:.6g} "
            f"(set {_EnvName(name)} to allow more)"
        )


def MemoryAvailable() -> int:
    """Bytes of memory available to a new allocation: /proc/meminfo's MemAvailable, or
    FALLBACK_MEMORY_BYTES where it cannot be read; at most DRAKEBOTS_MAX_MEMORY_GB when set."""
    available = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        available = None
    if available is None:
        available = FALLBACK_MEMORY_BYTES
    text = os.environ.get("DRAKEBOTS_MAX_MEMORY_GB")
    if text is not None and text.strip():
        try:
            cap = float(text)
        except ValueError:
            cap = math.nan
        if not (math.isfinite(cap) and cap > 0):
            raise InputError(
                f"environment variable DRAKEBOTS_MAX_MEMORY_GB={text!r}: must be a positive number"
            )
        available = min(available, int(cap * 1024**3))
    return available


def CheckMemory(nbytes: float, what: str) -> None:
    """InputError when an allocation estimated at `nbytes` for `what` would not fit the memory
    available (MemoryAvailable), before anything is allocated."""
    available = MemoryAvailable()
    if not math.isfinite(nbytes) or nbytes > available:
        raise InputError(
            f"{what}: needs about {_Bytes(nbytes)} of memory, more than the "
            f"{_Bytes(available)} available (DRAKEBOTS_MAX_MEMORY_GB caps it lower)"
        )


def _Bytes(nbytes: float) -> str:
    if not math.isfinite(nbytes):
        return f"{nbytes} B"
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes:.0f} B"


def CheckSimulation(
    duration: float,
    time_step: float,
    log_period: float = 0.0,
    *,
    state_size: int = 64,
    names: tuple[str, str, str] = ("--duration", "--time-step", "--log-period"),
    unit: str = "s",
) -> None:
    """The steps (duration / time_step) and log samples (duration / log_period) of a simulation,
    each against its bound, and the logs' memory (log samples x state_size doubles). A step or
    period of 0 (the family's default) is not judged here.

    Args:
        duration: simulated time, in `unit`.
        time_step: the plant's step, in `unit` (0: not judged).
        log_period: the logs' sampling period, in `unit` (0: not judged).
        state_size: numbers logged per sample (an estimate).
        names: how the three values are named to the user (flags or config keys).
        unit: the time unit of the three ("s", or HAMR-VI's "ms").
    """
    if time_step > 0 and duration > 0:
        CheckWork(
            "steps",
            duration / time_step,
            f"{names[0]} {duration:g} {unit} / {names[1]} {time_step:g} {unit}",
        )
    if log_period > 0 and duration > 0:
        samples = duration / log_period
        what = f"{names[0]} {duration:g} {unit} / {names[2]} {log_period:g} {unit}"
        CheckWork("log_samples", samples, what)
        CheckMemory(samples * state_size * 8.0, what)


def CheckGrid(lo, hi, spacing: float, what: str, *, bytes_per_cell: float = 160.0) -> None:
    """A regular grid over the box [lo, hi] (m) at `spacing` (m): its cells against the
    "grid_cells" bound and its memory (cells x bytes_per_cell) against the available memory."""
    cells = 1.0
    for a, b in zip(lo, hi, strict=True):
        cells *= math.floor(max(float(b) - float(a), 0.0) / spacing) + 2
    CheckWork("grid_cells", cells, what)
    CheckMemory(cells * bytes_per_cell, what)
