"""`drakebots.Simulate` (`drakebots simulate`) for the skinned quad-robots' skeletons (PD hold of
the home pose); with `skin`, skeleton and FEM skin coupled (simulate_skin.py)."""

import numpy as np

from drakebots.errors import InputError

OPTIONS = {"drop_height", "ground_friction", "skin", "skin_contact"}


def Simulate(scenario, robot, *, meshcat=None, progress=None):
    from drakebots.skinned.simulate_skin import SkinContact
    from drakebots.skinned.skeleton_simulation import SimulateStanding, StandingConfig
    from drakebots.systems.simulate import SimulationOutcome

    SkinContact(scenario)  # a bad --skin-contact is refused before anything runs
    if scenario.skin:  # skeleton + FEM skin, coupled (drakebots/skinned/simulate_skin.py)
        from drakebots.skinned.simulate_skin import SimulateWithSkin

        return SimulateWithSkin(scenario, robot, meshcat=meshcat, progress=progress)

    if scenario.drop_height < 0.0:
        raise InputError(f"--drop-height must be >= 0 m, got {scenario.drop_height}")
    if not scenario.ground_friction > 0.0:
        raise InputError(f"--ground-friction must be > 0, got {scenario.ground_friction}")
    config = StandingConfig(
        duration=scenario.duration,
        time_step=scenario.time_step or 1e-3,
        log_period=scenario.log_period or 5e-3,
        ground_friction=scenario.ground_friction,
        drop_height=scenario.drop_height,
    )
    log = SimulateStanding(robot, config, meshcat=meshcat, progress=progress)
    figures = log.Summary()
    nominal = robot.nominal_base_height
    # A dropped robot is judged once it has landed and settled: free fall time plus 0.3 s.
    settled = log.times >= (2.0 * scenario.drop_height / robot.gravity) ** 0.5 + 0.3
    if scenario.drop_height == 0.0 or not settled.any():
        settled = log.times >= (log.times[-1] if scenario.drop_height else log.times[0])
    heights = log.base_height[settled]
    summary = {
        "nominal_base_height": nominal,
        "base_height_drift": figures["base_height_end"] - nominal,
        "base_height_within_10_percent": bool(np.all(np.abs(heights - nominal) <= 0.1 * nominal)),
    }
    failure = None
    if not figures["finite_state"]:
        failure = "the state became NaN or infinite"
    elif not summary["base_height_within_10_percent"]:
        failure = "the base left the ±10 % band around its nominal height (the robot fell)"
    return SimulationOutcome(log=log, summary=summary, failure=failure, nominal_base_height=nominal)


def ReplayExtras(results_dir, robot):
    """Rigid skeletons need nothing beyond the plant's own geometry; a skinned run adds its skin."""
    from drakebots.skinned.simulate_skin import SkinReplayExtras

    return SkinReplayExtras(results_dir, robot) or (None, None)
