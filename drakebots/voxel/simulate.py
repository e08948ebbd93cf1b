"""`drakebots.Simulate` (`drakebots simulate`) for the voxel robots: the tripod gait (forward or
reversed) or standing."""

from drakebots.errors import InputError

OPTIONS = {"gait", "cycles"}
STEPS_PER_CYCLE = 8
FEET = ("front_right", "front_left", "rear_right", "rear_left")


def Simulate(scenario, robot, *, meshcat=None, progress=None):
    import numpy as np

    from drakebots.systems.simulate import LazyFigures, SimulationOutcome
    from drakebots.voxel.robot import TripodMetadata
    from drakebots.voxel.simulation import (
        GAITS,
        DistancePerCycle,
        SimulateVoxelGait,
        VoxelGaitConfig,
        YawPerCycle,
    )

    gait = scenario.gait or "tripod"
    if gait not in GAITS:
        raise InputError(f"--gait {scenario.gait}: robot {robot.name} has gaits {', '.join(GAITS)}")
    if scenario.cycles < 0:
        raise InputError(f"--cycles must be >= 0, got {scenario.cycles}")
    config = VoxelGaitConfig(gait=gait)
    cycle = config.cycle_duration
    # --cycles N: the settling plus N cycles; --duration: the whole simulated time.
    if scenario.cycles:
        config.duration = scenario.cycles * cycle
    else:
        config.duration = max(scenario.duration - config.settle, 0.0)
    config.time_step = scenario.time_step or config.time_step
    config.log_period = scenario.log_period or config.log_period
    log = SimulateVoxelGait(robot, config, meshcat=meshcat, progress=progress)
    figures = log.Summary()
    nominal = robot.nominal_base_height
    per_cycle = DistancePerCycle(log, cycle)
    yaw_per_cycle = YawPerCycle(log, cycle)
    position = log.extra["body_position"]
    start = int(np.searchsorted(log.times, config.settle - 1e-9))
    direction = GAITS[gait]
    mean = float(per_cycle.mean()) if len(per_cycle) else 0.0
    summary = {
        "gait": gait,
        "direction": {1: "forward", -1: "backward", 0: "none"}[direction],
        "time_step_s": config.time_step,
        "sap_near_rigid_threshold": config.near_rigid_threshold,
        "settle_s": config.settle,
        "cycle_duration_s": cycle,
        "clearance_m": config.clearance,
        "rear_narrowing_m": config.narrow,
        "cycles_completed": int(len(per_cycle)),
        "distance_per_cycle_m": per_cycle.tolist(),
        "mean_distance_per_cycle_m": mean,
        "yaw_per_cycle_deg": np.degrees(yaw_per_cycle).tolist(),
        "mean_yaw_per_cycle_deg": float(np.degrees(yaw_per_cycle.mean()))
        if len(yaw_per_cycle)
        else 0.0,
        "net_forward_displacement_m": float(position[-1, 0] - position[start, 0]),
        "net_lateral_displacement_m": float(position[-1, 1] - position[start, 1]),
        "net_yaw_deg": float(np.degrees(log.extra["yaw"][-1] - log.extra["yaw"][start])),
        # Walks: a mean advance of at least 0.1 mm per cycle in the gait's own direction.
        "walks": bool(direction != 0 and len(per_cycle) and direction * mean > 1e-4),
        "max_stroke_m": float(np.max(np.abs(log.extra["keyframe_strokes"]))),
        "effective_friction": dict(
            zip(TripodMetadata()["feet"], log.extra["pad_friction"].tolist())
        ),
        "foot_paths_rms_m": _FootPathErrors(log, start),
        "nominal_base_height": nominal,
        "base_height_within_10_percent": bool(
            np.all(np.abs(log.base_height - nominal) <= 0.1 * nominal)
        ),
    }
    failure = None
    if not figures["finite_state"]:
        failure = "the state became NaN or infinite"
    elif not summary["base_height_within_10_percent"]:
        failure = "the base left the ±10 % band around its nominal height (the robot fell)"
    makers = {
        "gait.png": lambda: _GaitFigure(log, config),
        "foot_paths.png": lambda: _FootPathFigure(log, config),
        "footprints.png": lambda: _FootprintFigure(log, config),
    }
    return SimulationOutcome(
        log=log,
        summary=summary,
        failure=failure,
        nominal_base_height=nominal,
        figures=LazyFigures(makers),
    )


def _FootPathErrors(log, start: int) -> dict:
    """RMS difference, m, between the simulated body-frame foot paths and the POM and frame-FEM
    predictions for the measured strokes, per foot and axis, over the gait."""
    import numpy as np

    out = {}
    for name in FEET:
        body = log.extra[f"{name}_body"][start:]
        out[name] = {
            model: {
                axis: float(np.sqrt(np.mean((body[:, k] - pred[:, k]) ** 2)))
                for k, axis in enumerate("xyz")
            }
            for model, pred in (
                ("pom", log.extra[f"{name}_pom"][start:]),
                ("fem", log.extra[f"{name}_fem"][start:]),
            )
        }
    return out


def _CycleLines(axes, log, config):
    import numpy as np

    for c in np.arange(config.settle, log.times[-1] + 1e-9, config.cycle_duration):
        for ax in np.ravel(axes):
            ax.axvline(c, color="0.85", lw=0.8, zorder=0)


def _GaitFigure(log, config):
    import matplotlib.pyplot as plt
    import numpy as np

    figure, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True)
    t = log.times
    for k, name in enumerate(("right", "left", "rear", "front")):
        (line,) = axes[0].plot(t, 1e3 * log.extra["desired_strokes"][:, k], label=name)
        axes[0].plot(t, 1e3 * log.extra["strokes"][:, k], ":", color=line.get_color())
    axes[0].set_ylabel("stroke (mm)")
    axes[0].legend(ncol=4, fontsize=8)
    axes[0].set_title(
        f"{config.gait} gait: actuator strokes from POM inverse kinematics "
        "(solid desired, dotted measured)"
    )
    for name in FEET:
        xyz = log.extra[f"{name}_xyz"]
        axes[1].plot(t, 1e3 * (xyz[:, 2] - xyz[0, 2]), label=name)
    axes[1].set_ylabel("foot height change (mm)")
    axes[1].legend(ncol=4, fontsize=8)
    position = log.extra["body_position"]
    axes[2].plot(t, 1e3 * (position[:, 0] - position[0, 0]), label="forward x")
    axes[2].plot(t, 1e3 * (position[:, 1] - position[0, 1]), label="lateral y")
    axes[2].set_ylabel("body displacement (mm)")
    axes[2].legend(fontsize=8)
    axes[3].plot(t, np.degrees(log.extra["yaw"]), color="k")
    axes[3].set_ylabel("body yaw (deg)")
    axes[3].set_xlabel("time (s)")
    _CycleLines(axes, log, config)
    figure.tight_layout()
    return figure


def _FootPathFigure(log, config):
    """Body-frame foot paths: simulation against the POM and frame-FEM predictions (Fig. 6-7
    style: the mocap markers against the model, after removing the body's motion)."""
    import matplotlib.pyplot as plt

    panels = [(name, k) for name in FEET[:2] for k in (0, 2)]
    panels += [(name, k) for name in FEET[2:] for k in (0, 1)]
    figure, axes = plt.subplots(4, 2, figsize=(10, 10), sharex=True)
    t = log.times
    for ax, (name, k) in zip(axes.ravel(), panels):
        ax.plot(t, 1e3 * log.extra[f"{name}_pom"][:, k], color="C0", lw=1.5, label="POM")
        ax.plot(t, 1e3 * log.extra[f"{name}_fem"][:, k], "--", color="C1", lw=1, label="frame FEM")
        ax.plot(t, 1e3 * log.extra[f"{name}_body"][:, k], ".", color="k", ms=2, label="Drake")
        ax.set_title(f"{name.replace('_', ' ')} {'xyz'[k]}", fontsize=9)
        ax.set_ylabel("mm")
    axes[0, 0].legend(fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    _CycleLines(axes, log, config)
    figure.suptitle("foot paths in the body frame: simulation against the kinematic predictions")
    figure.tight_layout()
    return figure


def _FootprintFigure(log, config):
    """Top view of the feet and the body in the world: where each foot stands and steps."""
    import matplotlib.pyplot as plt
    import numpy as np

    figure, axes = plt.subplots(1, 4, figsize=(12, 4.5), sharey=True)
    start = int(np.searchsorted(log.times, config.settle - 1e-9))
    for ax, name in zip(axes, FEET):
        xyz = log.extra[f"{name}_xyz"][start:]
        origin = xyz[0]
        dx, dy = 1e3 * (xyz[:, 0] - origin[0]), 1e3 * (xyz[:, 1] - origin[1])
        lifted = xyz[:, 2] > xyz[0, 2] + 5e-4
        ax.plot(dy, dx, color="0.6", lw=0.8)
        ax.plot(dy[~lifted], dx[~lifted], ".", ms=2, color="C3" if "front" in name else "C0")
        ax.plot(dy[lifted], dx[lifted], ".", ms=2, color="0.3")
        ax.set_title(name.replace("_", " "), fontsize=9)
        ax.set_xlabel("lateral y (mm)")
        ax.set_aspect("equal", adjustable="datalim")
        ax.invert_xaxis()  # top view, forward up: left (+y) is drawn on the left
    axes[0].set_ylabel("forward x (mm)")
    figure.suptitle(
        f"{config.gait}: foot positions in the world from the gait start "
        "(coloured: on the ground, dark: lifted > 0.5 mm)"
    )
    figure.tight_layout()
    return figure


def ReplayExtras(results_dir, robot):
    """The node bodies carry all geometry; nothing extra to draw."""
    return None, None
