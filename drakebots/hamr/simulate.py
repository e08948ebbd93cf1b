"""`drakebots.Simulate` (`drakebots simulate`) for HAMR-VI: open-loop piezo gaits on the paper's
surfaces.

    drakebots simulate hamr_vi --gait trot --frequency 10 --surface cardstock --duration 0.5

Options (SimulateConfig fields): `gait` (stand, trot, pronk, jump; default stand), `frequency`
(stride frequency, Hz, > 0), `surface` (teflon, cardstock, sandpaper; default cardstock),
`voltage_amplitude` (V about the 112.5 V mid voltage, 0 to 112.5; default 90), `swing_lead`
(deg by which the swing signals lead the trot's; default 0; 90 makes a 10 Hz pronk walk forward,
drakebots.hamr.gaits). The surface is sized to the run (a foot leaving it fails the run:
exit 1). The
command-line duration, time step and log period are seconds; the simulation runs in the model's
milliseconds. Figures of merit: forward speed in mm per cycle (after the start ramp), body height,
roll and pitch, and the loop-closure residual max |c(q)|.
"""

from __future__ import annotations

import numpy as np

from drakebots.errors import InputError

OPTIONS = {"gait", "frequency", "surface", "voltage_amplitude", "swing_lead"}

DEFAULT_TIME_STEP_MS = 0.25
STEPS_PER_STRIDE = 400  # the default step is at most 1/400 of the stride period
DEFAULT_LOG_PERIOD_MS = 0.5
LOOP_RESIDUAL_LIMIT_MM = 1e-3
TIPPED_OVER_DEG = 60.0
MAX_AMPLITUDE_V = 112.5
# The slowest stride a gait may ask for is the longest motion optimize hamr-gait plans:
# drakebots.limits' "plan_time" bound, ms (10 s: 0.1 Hz).


def ValidateOptions(scenario) -> tuple[str, str, float]:
    """(gait, surface, frequency Hz) from the scenario, or InputError naming what is wrong (the
    voltage amplitude is checked too)."""
    from drakebots.hamr.gaits import GAITS
    from drakebots.hamr.robot import SURFACE_FRICTION
    from drakebots.limits import Limit

    gait = scenario.gait or "stand"
    if gait not in GAITS:
        raise InputError(
            f"--gait {gait}: unknown gait for hamr_vi; valid gaits: {', '.join(GAITS)}"
        )
    surface = scenario.surface or "cardstock"
    if surface not in SURFACE_FRICTION:
        raise InputError(
            f"--surface {surface}: unknown surface; valid surfaces: "
            f"{', '.join(f'{s} (mu {mu})' for s, mu in SURFACE_FRICTION.items())}"
        )
    frequency = float(scenario.frequency)
    if not (np.isfinite(frequency) and frequency > 0.0):
        raise InputError(f"--frequency {scenario.frequency}: must be > 0 Hz")
    amplitude = float(scenario.voltage_amplitude)
    if not (np.isfinite(amplitude) and 0.0 <= amplitude <= MAX_AMPLITUDE_V):
        raise InputError(
            f"--voltage-amplitude {scenario.voltage_amplitude}: must be in [0, "
            f"{MAX_AMPLITUDE_V}] V (the drive range is 0-225 V about the 112.5 V mid voltage)"
        )
    if not np.isfinite(float(scenario.swing_lead)):
        raise InputError(f"--swing-lead {scenario.swing_lead}: must be a finite angle, deg")
    longest = Limit("plan_time") / 1000.0
    if gait in ("trot", "pronk") and frequency * longest < 1.0:
        # 1e-300 Hz ran and "succeeded" with no stride measured (issue 68).
        raise InputError(
            f"--frequency {scenario.frequency}: a stride of {1.0 / frequency:.3g} s is longer than "
            f"{longest:g} s (frequency >= {1.0 / longest:g} Hz, as optimize hamr-gait asks; set "
            "DRAKEBOTS_MAX_PLAN_TIME, in ms, to allow more)"
        )
    return gait, surface, frequency


def DefaultTimeStep(gait: str, frequency: float) -> float:
    """The plant step, ms: 0.25 ms, or 1/400 of the stride period when that is shorter (a 30 Hz
    trot at 0.25 ms opens its loops by over 1e-3 mm; at 1/400 of a period they stay within)."""
    if gait in ("trot", "pronk"):
        return min(DEFAULT_TIME_STEP_MS, 1000.0 / frequency / STEPS_PER_STRIDE)
    return DEFAULT_TIME_STEP_MS


def GaitFigures(log, gait: str, frequency: float, ramp_cycles: float) -> dict:
    """Figures of merit of a HAMR run (mm, ms, deg): speed per cycle over the whole cycles after
    the ramp, body height, roll/pitch extremes, loop residual."""
    times = log.times
    x = log.positions[:, 0]
    y = log.positions[:, 1]
    period = 1000.0 / frequency
    rpy = np.degrees(log.extra["roll_pitch_yaw"])
    start = ramp_cycles * period if gait in ("trot", "pronk") else 0.0
    cycles = int(np.floor((times[-1] - start) / period + 1e-9))
    figures = {
        "gait": gait,
        "frequency_hz": frequency,
        "period_ms": period,
        "forward_distance_mm": float(x[-1] - x[0]),
        "lateral_drift_mm": float(y[-1] - y[0]),
        "body_height_mean_mm": float(np.mean(log.base_height)),
        "body_height_min_mm": float(np.min(log.base_height)),
        "body_height_max_mm": float(np.max(log.base_height)),
        "roll_max_abs_deg": float(np.max(np.abs(rpy[:, 0]))),
        "pitch_max_abs_deg": float(np.max(np.abs(rpy[:, 1]))),
        "yaw_end_deg": float(rpy[-1, 2]),
        "loop_residual_max_mm": float(np.max(log.extra["loop_residual"])),
        "cycles_measured": cycles,
    }
    if gait in ("trot", "pronk") and cycles >= 1:
        k0 = int(np.searchsorted(times, start))
        k1 = int(np.searchsorted(times, start + cycles * period))
        k1 = min(k1, len(times) - 1)
        distance = float(x[k1] - x[k0])
        figures["mm_per_cycle"] = distance / cycles
        figures["speed_mm_per_s"] = distance / ((times[k1] - times[k0]) * 1e-3)
        figures["body_lengths_per_s"] = figures["speed_mm_per_s"] / 45.1
    if gait == "jump":
        figures["jump_apex_mm"] = float(np.max(log.base_height))
        feet = log.extra["foot_positions"][:, :, 2]
        figures["all_feet_airborne_ms"] = float(
            np.sum(np.all(feet > 0.05, axis=1)) * np.median(np.diff(times))
        )
    return figures


def Simulate(scenario, robot, *, meshcat=None, progress=None):
    from drakebots.hamr.gaits import GaitParams
    from drakebots.hamr.plots import PlotHamrRun
    from drakebots.hamr.replay import HamrReplayDecorator
    from drakebots.hamr.robot import SurfaceFriction
    from drakebots.hamr.simulation import HamrSimulationConfig, SimulateHamr
    from drakebots.systems.simulate import LazyFigures, SimulationOutcome

    gait, surface, frequency = ValidateOptions(scenario)
    amplitude = float(scenario.voltage_amplitude)
    gait_params = GaitParams(
        gait=gait,
        frequency=frequency,
        swing_amplitude=amplitude,
        lift_amplitude=amplitude,
        swing_lead=np.radians(float(scenario.swing_lead)),
    )
    config = HamrSimulationConfig(
        duration=scenario.duration * 1e3,
        time_step=scenario.time_step * 1e3 or DefaultTimeStep(gait, frequency),
        log_period=scenario.log_period * 1e3 or DEFAULT_LOG_PERIOD_MS,
        surface=surface,
        gait=gait_params,
    )
    log = SimulateHamr(config, meshcat=meshcat, progress=progress, robot_name=robot.name)
    figures = GaitFigures(log, gait, frequency, gait_params.ramp_cycles)
    nominal = robot.nominal_base_height
    summary = {
        "surface": surface,
        "friction": SurfaceFriction(surface),
        "voltage_amplitude_v": amplitude,
        "swing_lead_deg": float(scenario.swing_lead),
        "time_step_ms": config.time_step,
        "surface_size_mm": config.SurfaceSize(),
        "nominal_base_height": nominal,
        "base_height_within_10_percent": bool(
            np.all(np.abs(log.base_height - nominal) <= 0.1 * nominal)
        ),
        **figures,
    }
    failure = None
    if not log.Summary()["finite_state"]:
        failure = "the state became NaN or infinite"
    elif figures["loop_residual_max_mm"] > LOOP_RESIDUAL_LIMIT_MM:
        failure = (
            f"the loop-closure residual reached {figures['loop_residual_max_mm']:.3g} mm "
            f"(limit {LOOP_RESIDUAL_LIMIT_MM} mm): the constraints did not hold"
        )
    elif np.max(np.abs(log.extra["foot_positions"][:, :, :2])) > 0.5 * config.SurfaceSize():
        failure = (
            f"a foot left the {config.SurfaceSize():.0f} mm running surface (give a larger "
            "surface or a shorter run)"
        )
    elif max(figures["roll_max_abs_deg"], figures["pitch_max_abs_deg"]) > TIPPED_OVER_DEG:
        failure = "the robot tipped over (|roll| or |pitch| above 60 degrees)"
    elif gait == "stand" and not summary["base_height_within_10_percent"]:
        failure = "the body left the ±10 % band around its nominal height while standing"
    return SimulationOutcome(
        log=log,
        summary=summary,
        decorator=HamrReplayDecorator(),
        figures=LazyFigures(
            {"gait.png": lambda: PlotHamrRun(log, figures, title=f"hamr_vi {gait} on {surface}")}
        ),
        failure=failure,
        nominal_base_height=nominal,
    )


def ReplayExtras(results_dir, robot):
    """HAMR's replay adds lighting scaled to its millimetre scene."""
    from drakebots.hamr.replay import HamrReplayDecorator

    return HamrReplayDecorator(), None
