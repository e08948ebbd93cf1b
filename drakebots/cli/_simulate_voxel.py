"""`drakebots simulate` for the voxel robots: the tripod gait (or standing) in Drake."""

from drakebots.errors import InputError

OPTIONS = {"gait", "cycles"}
STEPS_PER_CYCLE = 8


def Simulate(scenario, robot, *, meshcat=None, progress=True):
    import numpy as np

    from drakebots.cli.simulate import SimulationOutcome
    from drakebots.systems.voxel_simulation import (
        GAITS,
        DistancePerCycle,
        SimulateVoxelGait,
        VoxelGaitConfig,
    )

    gait = scenario.gait or "tripod"
    if gait not in GAITS:
        raise InputError(f"--gait {scenario.gait}: robot {robot.name} has gaits {', '.join(GAITS)}")
    if scenario.cycles < 0:
        raise InputError(f"--cycles must be >= 0, got {scenario.cycles}")
    config = VoxelGaitConfig(gait=gait)
    cycle = STEPS_PER_CYCLE * config.step_duration
    duration = scenario.cycles * cycle if scenario.cycles else scenario.duration
    config.duration = duration
    config.time_step = scenario.time_step or config.time_step
    config.log_period = scenario.log_period or config.log_period
    log = SimulateVoxelGait(robot, config, meshcat=meshcat, progress=progress)
    figures = log.Summary()
    nominal = robot.nominal_base_height
    per_cycle = DistancePerCycle(log, cycle)
    centroid = log.extra["centroid"]
    summary = {
        "gait": gait,
        "time_step_s": config.time_step,
        "sap_near_rigid_threshold": config.near_rigid_threshold,
        "cycle_duration_s": cycle,
        "cycles_completed": int(len(per_cycle)),
        "distance_per_cycle_m": per_cycle.tolist(),
        "mean_distance_per_cycle_m": float(per_cycle.mean()) if len(per_cycle) else 0.0,
        "net_forward_displacement_m": float(centroid[-1, 0] - centroid[0, 0]),
        "net_lateral_displacement_m": float(centroid[-1, 1] - centroid[0, 1]),
        "walks": bool(len(per_cycle) and per_cycle.mean() > 1e-4),
        "max_stroke_m": float(np.max(np.abs(log.extra["keyframe_strokes"]))),
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
    return SimulationOutcome(
        log=log,
        summary=summary,
        failure=failure,
        nominal_base_height=nominal,
        figures={"gait.png": _GaitFigure(log, cycle)},
    )


def _GaitFigure(log, cycle):
    import matplotlib.pyplot as plt
    import numpy as np

    figure, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    t = log.times
    for k, name in enumerate(("right", "left", "rear", "front")):
        axes[0].plot(t, 1e3 * log.extra["desired_strokes"][:, k], label=name)
    axes[0].set_ylabel("stroke (mm)")
    axes[0].legend(ncol=4, fontsize=8)
    axes[0].set_title("actuator strokes (POM inverse kinematics of the gait)")
    for name in ("front_right", "front_left", "rear_right", "rear_left"):
        xyz = log.extra[f"{name}_xyz"]
        axes[1].plot(t, 1e3 * (xyz[:, 2] - xyz[0, 2]), label=name)
    axes[1].set_ylabel("foot height change (mm)")
    axes[1].legend(ncol=4, fontsize=8)
    centroid = log.extra["centroid"]
    axes[2].plot(t, 1e3 * (centroid[:, 0] - centroid[0, 0]), label="forward x")
    axes[2].plot(t, 1e3 * (centroid[:, 1] - centroid[0, 1]), label="lateral y")
    for c in np.arange(0, t[-1] + 1e-9, cycle):
        for ax in axes:
            ax.axvline(c, color="0.85", lw=0.8, zorder=0)
    axes[2].set_ylabel("centroid displacement (mm)")
    axes[2].set_xlabel("time (s)")
    axes[2].legend(fontsize=8)
    figure.tight_layout()
    return figure


def ReplayExtras(results_dir, robot):
    """The node bodies carry all geometry; nothing extra to draw."""
    return None, None
