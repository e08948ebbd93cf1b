"""`drakebots.Simulate` (`drakebots simulate`) for the gecko soft walker: standing on its home
stance, or walking with the gait law (paper Eqs. 14-15) at (--q1, --q2) for --cycles cycles.

The simulation is the Drake multibody model (drakebots.gecko.simulation): suction feet as
weld constraints toggled at run time, six pneumatic chambers behind the cascaded controller of the
paper's Fig. 11B, SAP contact with the ground. Besides the generic files it writes
gait_signals.png (angles against references, pressures, fixation) and track.png (top view), and
summary.json carries the motion of every complete cycle (d_eps, dx, dy in the robot frame).
"""

from drakebots.errors import InputError

OPTIONS = {"gait_law", "q1", "q2", "cycles"}


def _Validate(scenario):
    from drakebots.gecko.geometry import CheckVelocitySpacePoint
    from drakebots.systems.simulate import SimulateConfig

    defaults = SimulateConfig()
    if not scenario.gait_law:
        for name in ("q1", "q2", "cycles"):
            if getattr(scenario, name) != getattr(defaults, name):
                raise InputError(
                    f"--{name} sets the gait law: add --gait-law (without it the gecko stands)"
                )
        return
    try:
        CheckVelocitySpacePoint(scenario.q1, scenario.q2)
    except ValueError as e:
        flag = "--q1" if str(e).startswith("q1") else "--q2"
        raise InputError(f"{flag}: {e}") from None
    if scenario.cycles < 0:
        raise InputError(f"--cycles must be >= 0, got {scenario.cycles}")


def Simulate(scenario, robot, *, meshcat=None, progress=None):
    import numpy as np

    from drakebots.gecko.experiments import RelativeMotion
    from drakebots.gecko.geometry import GaitLawDeg, GaitTiming
    from drakebots.gecko.plots import PlotGaitSignals, PlotTrack
    from drakebots.gecko.replay import GeckoReplayDecorator
    from drakebots.gecko.simulation import GeckoSimConfig, GeckoSimulation
    from drakebots.systems.simulate import LazyFigures, SimulationOutcome
    from drakebots.workflow import Reporter

    _Validate(scenario)
    timing = GaitTiming()
    config = GeckoSimConfig(
        time_step=scenario.time_step or GeckoSimConfig.time_step,
        log_period=scenario.log_period or GeckoSimConfig.log_period,
        timing=timing,
    )
    walking = scenario.gait_law
    if walking and scenario.cycles:
        duration = scenario.cycles * timing.cycle
    else:
        duration = scenario.duration
    # Walking starts from the gait's own pose alpha(+q1, q2) with the front-left and hind-right
    # feet fixed (as the velocity space does), standing from the home pose.
    sim = GeckoSimulation(
        config,
        gait=(scenario.q1, scenario.q2) if walking else None,
        start_alpha_deg=GaitLawDeg(scenario.q1, scenario.q2) if walking else None,
        params=robot.params,
        meshcat=meshcat,
    )
    chunks = max(1, int(np.ceil(duration / 0.25)))
    reporter = Reporter(progress)
    for k in range(1, chunks + 1):
        sim.AdvanceTo(min(duration, k * duration / chunks))
        reporter.Step(f"simulate {robot.name} (0.25 s chunks)", k, chunks)
    log = sim.Log(robot.name)
    figures = log.Summary()
    nominal = robot.nominal_base_height
    summary = {
        "mode": "gait law" if walking else "stand",
        "nominal_base_height": nominal,
        "base_height_within_10_percent": bool(
            np.all(np.abs(log.base_height - nominal) <= 0.1 * nominal)
        ),
        "time_step": config.time_step,
        "half_cycle_s": timing.half_cycle,
    }
    if walking:
        summary["q1_deg"] = scenario.q1
        summary["q2"] = scenario.q2
        summary["references_deg"] = {
            "positive_pose": GaitLawDeg(scenario.q1, scenario.q2).tolist(),
            "negative_pose": GaitLawDeg(-scenario.q1, scenario.q2).tolist(),
        }
        pose = log.extra["pose"]
        ends = [
            int(np.argmin(np.abs(log.times - c * timing.cycle)))
            for c in range(int(duration / timing.cycle + 1e-9) + 1)
        ]
        cycles = [RelativeMotion(pose[a], pose[b]) for a, b in zip(ends[:-1], ends[1:])]
        summary["cycles_completed"] = len(cycles)
        summary["per_cycle"] = [
            {
                "d_eps_deg": float(np.degrees(m[0])),
                "dx_cm": float(100 * m[1]),
                "dy_cm": float(100 * m[2]),
            }
            for m in cycles
        ]
        if cycles:
            last = cycles[-1]
            summary["last_cycle_d_eps_deg"] = float(np.degrees(last[0]))
            summary["last_cycle_dx_cm"] = float(100 * last[1])
            summary["last_cycle_dy_cm"] = float(100 * last[2])
        summary["net_displacement_m"] = float(np.hypot(*(pose[-1, :2] - pose[0, :2])))
        summary["net_rotation_deg"] = float(np.degrees(np.unwrap(pose[:, 2])[-1] - pose[0, 2]))
    failure = None
    if not figures["finite_state"]:
        failure = "the state became NaN or infinite"
    elif not summary["base_height_within_10_percent"]:
        failure = "the base left the ±10 % band around its nominal height"
    return SimulationOutcome(
        log=log,
        summary=summary,
        failure=failure,
        nominal_base_height=nominal,
        decorator=GeckoReplayDecorator(log.extra["fixation"], track=log.extra["pose"]),
        figures=LazyFigures(
            {
                "gait_signals.png": lambda: PlotGaitSignals(log),
                "track.png": lambda: PlotTrack(log),
            }
        ),
    )


def ReplayExtras(results_dir, robot):
    """Suction markers from the logged fixation (log.npz: extra_fixation); with no folder, those
    of the home pose (for pictures)."""
    from pathlib import Path

    import numpy as np

    from drakebots.gecko.replay import GeckoReplayDecorator

    if results_dir is None:  # a picture of the home pose: its stance fixed, seen from above
        return GeckoReplayDecorator(np.array([[1, 0, 0, 1]]), track=np.zeros((1, 3))), None
    path = Path(results_dir) / "log.npz"
    with np.load(path) as data:
        if "extra_fixation" not in data.files:
            return None, None
        fixation = data["extra_fixation"]
        track = data["extra_pose"] if "extra_pose" in data.files else None
    return GeckoReplayDecorator(fixation, track=track), None
