"""`drakebots track PLAN_DIR` for a robot file's gait or jump: the plan of an `optimize gait` or
`optimize jump` results folder tracked in closed loop as the acceptance tracks it
(drakebots.optimization.legged_report; kept apart from it because it builds legged's configs and
results, which import legged_report)."""

from __future__ import annotations

import numpy as np

from drakebots.optimization.legged_report import (
    FLIGHT_HEIGHT_FRACTION,
    Resimulate,
    TrackingChecks,
)


def IsRobotFilePlan(folder) -> bool:
    """Whether `folder` is a results folder of `optimize gait` or `optimize jump` (a robot
    file's plan), judged from its summary.json alone (False where it has none)."""
    import json
    from pathlib import Path

    path = Path(folder) / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(summary, dict) and summary.get("verb") in ("optimize gait", "optimize jump")


def TrackPlanFolder(folder, *, cycles: int | None = None, meshcat=None):
    """`drakebots track PLAN_DIR` for a robot file's gait or jump: the plan of the folder
    (solution.npz, summary.json's robot_file and inputs) tracked in closed loop as the
    acceptance tracks it (Resimulate, TrackingChecks), `cycles` times (a gait: at least
    TRACKED_CYCLES). Returns a MotionResult (verb "track"; its reason names a failed check).
    InputError (exit 2) for a folder that is not such a plan, naming what is missing."""
    import dataclasses
    import types
    from pathlib import Path

    from drakebots.errors import InputError
    from drakebots.optimization.legged import (
        GaitConfig,
        JumpConfig,
        MakeRobotTrajoptModel,
        MotionResult,
    )
    from drakebots.results import ReadJson, ReadNpz
    from drakebots.robots import GetRobot

    folder = Path(folder)
    what = f"plan {folder}:"
    summary = ReadJson(folder / "summary.json", what=what, required=("problem", "robot_file"))
    kind = summary["problem"]
    if kind not in ("gait", "jump"):
        raise InputError(f"{what} not a gait or jump of `drakebots optimize` (problem {kind!r})")
    arrays = ReadNpz(
        folder / "solution.npz",
        what=what,
        required=("times", "q", "u", "contact_forces", "phi"),
    )
    inputs = summary.get("inputs") or {}
    robot_file = summary["robot_file"]
    if not robot_file or not Path(robot_file).is_file():
        raise InputError(f"{what} robot_file {robot_file!r} is not a file")
    if cycles is not None and cycles < 1:
        raise InputError(f"--cycles: must be >= 1, got {cycles}")
    config_type = GaitConfig if kind == "gait" else JumpConfig
    names = {f.name for f in dataclasses.fields(config_type)}
    simple = {k: v for k, v in inputs.items() if k in names and not isinstance(v, dict)}
    config = config_type(**{**simple, "robot": robot_file})
    if kind == "gait" and cycles is not None:
        config.resimulation_cycles = int(cycles)
    robot = GetRobot(robot_file)
    model = MakeRobotTrajoptModel(
        robot, friction=config.friction, friction_directions=config.friction_directions
    )
    times, q = np.asarray(arrays["times"], float), np.asarray(arrays["q"], float)
    traj = types.SimpleNamespace(
        times=times,
        h=float(times[1] - times[0]),
        q=q,
        qdot=np.diff(q, axis=0) / np.diff(times)[:, None],
        u=np.asarray(arrays["u"], float),
        contact_forces=np.asarray(arrays["contact_forces"], float),
        phi=np.asarray(arrays["phi"], float),
    )
    if q.shape[1] != model.plant.num_positions():
        raise InputError(
            f"{what} q has {q.shape[1]} positions, the robot file's model "
            f"{model.plant.num_positions()}"
        )
    resim = Resimulate(model, kind, traj, config, meshcat=meshcat)
    keep = ("robot", "robot_file", "problem", "units", "period", "distance_per_cycle")
    figures = {k: summary[k] for k in keep + ("apex_height", "height_goal") if k in summary}
    figures["plan"] = str(folder)
    if kind == "jump":
        above = traj.phi > FLIGHT_HEIGHT_FRACTION * abs(model.home[model.z_index])
        figures["flight_knots"] = int(np.sum(above.all(axis=1)))
    reasons = TrackingChecks(kind, figures, resim, config.solver)
    reason = "; ".join(reasons) if reasons else None
    return MotionResult.FromTrajectory(
        "track", config, figures, reason, traj, model, resim, times=times, q=q
    )
