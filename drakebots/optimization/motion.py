"""The user's motion input for the skinned quad-robots (skinned-quad-robots.txt, section 5).

"As the system input, the trajectories of the COM, end effectors, and the footfall pattern are
provided by the user" (section 5; Fig. 1: foot swing trajectories, COM trajectory, contact plan).
A `MotionSpec` holds them as keyframes (typed YAML, loaded with `drakebots.config.LoadTypedYaml`),
and `SampleMotion` turns it into per-frame arrays at the frame step Δt (0.005 s in the paper,
section 7). Generators for the paper's motions live in `drakebots.optimization.motions`.

Conventions: world frame z up, the ground is z = 0 (the paper uses y up; `n̂` is our +z). A foot's
position is its sole centre (the point on the sole under the middle of the foot plate). Times in
s, positions in m, torques in N·m.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from drakebots.errors import InputError
from drakebots.robots.skeleton import LEG_NAMES


@dataclass
class FootTrack:
    """One foot's keyframed trajectory and its contact plan."""

    # Keyframe times, s (strictly increasing, first 0, last = the motion's duration).
    times: list[float] = field(default_factory=list)
    # Sole-centre position at each keyframe, m (world frame, z up, ground at z = 0).
    positions: list[list[float]] = field(default_factory=list)
    # Stance intervals [start, end], s: when the foot is planned to be on the ground (the
    # footfall pattern / contact plan, the paper's yellow bars).
    stance: list[list[float]] = field(default_factory=list)


@dataclass
class MotionSpec:
    """A motion plan input: COM and foot trajectories, contact plan, frame step, motor limits."""

    # A name for plots and summaries.
    name: str = "motion"
    # The robot the motion was made for (registry name); empty: any.
    robot: str = ""
    # Duration of the motion (one cycle for periodic motions), s.
    duration: float = 2.0
    # Frame step Δt of the plan and of the frame-by-frame optimization, s (paper: 0.005).
    frame_dt: float = 0.005
    # Joint angles of the first and last frame equal (the paper's Eq. 6).
    periodic: bool = False
    # The COM trajectory: keyframe times, s, and positions, m.
    com_times: list[float] = field(default_factory=list)
    com_positions: list[list[float]] = field(default_factory=list)
    # Torso heading (yaw) keyframes, rad, at com_times (empty: heading 0 throughout).
    base_yaw: list[float] = field(default_factory=list)
    # Foot trajectories and contact plans, by leg name (front_left, front_right, rear_left,
    # rear_right).
    feet: dict[str, FootTrack] = field(default_factory=dict)
    # Motor effort limit U_m of Eq. (12) for every motor, N·m (0: the skeleton's motor).
    motor_effort_limit: float = 0.0
    # Per-joint effort limits that override the one above, N·m (joint name -> limit).
    joint_effort_limits: dict[str, float] = field(default_factory=dict)
    # Coulomb friction coefficient between the feet and the ground (Eqs. 8, 12).
    friction: float = 0.8
    # Planned walking speed, m/s (for reports; 0 for motions in place).
    speed: float = 0.0


@dataclass
class SampledMotion:
    """A MotionSpec sampled at its frames (arrays; N frames at times k Δt, k = 0..N-1).

    Attributes:
        times: (N,) s.
        com: (N, 3) planned COM, m.
        base_yaw: (N,) planned heading, rad.
        feet: (4, N, 3) planned sole centres, m, in LEG_NAMES order.
        contact: (4, N) bool, the contact plan c_j^i of Eq. (4).
        legs: leg names in the order of `feet`.
    """

    spec: MotionSpec
    times: np.ndarray
    com: np.ndarray
    base_yaw: np.ndarray
    feet: np.ndarray
    contact: np.ndarray
    legs: tuple = LEG_NAMES

    @property
    def num_frames(self) -> int:
        return len(self.times)

    @property
    def dt(self) -> float:
        return self.spec.frame_dt


def _Interpolate(times, values, sample_times, what: str) -> np.ndarray:
    """Shape-preserving cubic (PCHIP) interpolation of keyframes; no overshoot below ground."""
    from scipy.interpolate import PchipInterpolator

    times = np.asarray(times, float)
    values = np.asarray(values, float)
    if len(times) == 1:
        return np.repeat(values[None], len(sample_times), axis=0)
    return PchipInterpolator(times, values, axis=0)(np.clip(sample_times, times[0], times[-1]))


def _CheckKeyframes(times, values, width, what: str, duration: float) -> None:
    if len(times) == 0:
        raise InputError(f"{what}: no keyframes")
    if len(times) != len(values):
        raise InputError(
            f"{what}: {len(times)} keyframe times but {len(values)} positions "
            "(the lengths must agree)"
        )
    for k, value in enumerate(values):
        if width and len(value) != width:
            raise InputError(f"{what}: keyframe {k} has {len(value)} numbers, expected {width}")
        if not np.all(np.isfinite(value)):
            raise InputError(f"{what}: keyframe {k} is not finite")
    t = np.asarray(times, float)
    if np.any(np.diff(t) <= 0.0):
        raise InputError(f"{what}: keyframe times must increase strictly")
    if t[0] > 1e-9 or t[-1] < duration - 1e-9:
        raise InputError(
            f"{what}: keyframes span [{t[0]:g}, {t[-1]:g}] s but the motion lasts "
            f"[0, {duration:g}] s"
        )


def ValidateMotion(spec: MotionSpec, *, known_legs=LEG_NAMES) -> None:
    """Raises InputError naming the first thing wrong with a motion input."""
    if not spec.duration > 0.0:
        raise InputError(f"duration must be > 0 s, got {spec.duration}")
    if not 0.0 < spec.frame_dt <= spec.duration:
        raise InputError(f"frame_dt must be in (0, duration], got {spec.frame_dt}")
    if not spec.friction > 0.0:
        raise InputError(f"friction must be > 0, got {spec.friction}")
    if spec.motor_effort_limit < 0.0 or (
        spec.motor_effort_limit == 0.0 and "motor_effort_limit" in getattr(spec, "_given", ())
    ):
        raise InputError(f"motor_effort_limit must be > 0 N*m, got {spec.motor_effort_limit}")
    for joint, limit in spec.joint_effort_limits.items():
        if not limit > 0.0:
            raise InputError(f"joint_effort_limits.{joint} must be > 0 N*m, got {limit}")
    _CheckKeyframes(spec.com_times, spec.com_positions, 3, "com", spec.duration)
    if spec.base_yaw and len(spec.base_yaw) != len(spec.com_times):
        raise InputError(
            f"base_yaw: {len(spec.base_yaw)} values but {len(spec.com_times)} com_times"
        )
    for leg in spec.feet:
        if leg not in known_legs:
            raise InputError(
                f"feet.{leg}: not a foot of this skeleton (feet: {', '.join(known_legs)})"
            )
    for leg in known_legs:
        if leg not in spec.feet:
            raise InputError(f"feet.{leg}: missing (every foot needs a track and contact plan)")
        track = spec.feet[leg]
        _CheckKeyframes(track.times, track.positions, 3, f"feet.{leg}", spec.duration)
        for k, interval in enumerate(track.stance):
            if len(interval) != 2 or not interval[0] < interval[1]:
                raise InputError(f"feet.{leg}.stance[{k}]: must be [start, end] with start < end")
            if interval[0] < -1e-9 or interval[1] > spec.duration + 1e-9:
                raise InputError(
                    f"feet.{leg}.stance[{k}]: {interval} lies outside [0, {spec.duration:g}] s"
                )


def SampleMotion(spec: MotionSpec, *, known_legs=LEG_NAMES) -> SampledMotion:
    """Validates a motion input and samples it at its frames.

    Raises:
        InputError: for mismatched lengths, unknown or missing feet, bad limits or times.
    """
    ValidateMotion(spec, known_legs=known_legs)
    count = int(round(spec.duration / spec.frame_dt)) + 1
    times = np.arange(count) * spec.frame_dt
    com = _Interpolate(spec.com_times, spec.com_positions, times, "com")
    yaw = (
        _Interpolate(spec.com_times, spec.base_yaw, times, "base_yaw")
        if spec.base_yaw
        else np.zeros(count)
    )
    feet = np.zeros((len(known_legs), count, 3))
    contact = np.zeros((len(known_legs), count), dtype=bool)
    half = 0.5 * spec.frame_dt
    for j, leg in enumerate(known_legs):
        track = spec.feet[leg]
        feet[j] = _Interpolate(track.times, track.positions, times, f"feet.{leg}")
        for start, end in track.stance:
            contact[j] |= (times >= start - half) & (times <= end + half)
        # A planned stance foot is on the ground: snap the sampled track to z = 0 there.
        feet[j, contact[j], 2] = 0.0
    return SampledMotion(spec=spec, times=times, com=com, base_yaw=yaw, feet=feet, contact=contact)


def MotionFromYaml(filename, *, robot: str | None = None) -> MotionSpec:
    """Loads a MotionSpec from a YAML file (unknown keys and bad types name the key and file)."""
    from drakebots.config import LoadTypedYaml

    spec = LoadTypedYaml(MotionSpec, filename=filename)
    from pydrake.common.yaml import yaml_load

    raw = yaml_load(filename=str(filename)) or {}
    if isinstance(raw, dict) and "motor_effort_limit" in raw:
        spec._given = ("motor_effort_limit",)  # an explicit 0 is an error, not "default"
    if robot and spec.robot and spec.robot != robot:
        raise InputError(f"{filename}: motion was made for '{spec.robot}', not '{robot}'")
    return spec


def MotionToYaml(spec: MotionSpec) -> str:
    """The YAML text of a motion (what `drakebots design` writes as motion.yaml)."""
    from drakebots.config import DumpTypedYaml

    clean = dataclasses.replace(spec)
    return DumpTypedYaml(clean)
