"""The user's motion input for the skinned quad-robots (skinned-quad-robots.txt, section 5).

"As the system input, the trajectories of the COM, end effectors, and the footfall pattern are
provided by the user" (section 5; Fig. 1: foot swing trajectories, COM trajectory, contact plan).
A `MotionSpec` holds them as keyframes (typed YAML, loaded with `drakebots.config.LoadTypedYaml`),
and `SampleMotion` turns it into per-frame arrays at the frame step Δt (0.005 s in the paper,
section 7). Generators for the paper's motions live in `drakebots.skinned.motions`.

Conventions: world frame z up, the ground is z = 0 (the paper uses y up; `n̂` is our +z). A foot's
position is its sole centre (the point on the sole under the middle of the foot plate). Times in
s, positions in m, torques in N·m.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from drakebots.errors import InputError
from drakebots.skinned.skeleton import LEG_NAMES


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


def _Interpolate(times, values, sample_times, what: str, *, period: float | None = None):
    """Shape-preserving cubic (PCHIP) interpolation of keyframes; no overshoot below ground.

    period: the motion is periodic with this cycle time T. When the keyframes span exactly one
    cycle (the last one is the first moved on by a cycle's displacement), the slopes at 0 and T
    come from the keyframes on both sides of the seam (the last but one before 0, the second
    after T), as at every other keyframe, instead of PCHIP's one-sided end formula (which left a
    velocity jump at the seam).
    """
    from scipy.interpolate import PchipInterpolator

    times = np.asarray(times, float)
    values = np.asarray(values, float)
    if len(times) == 1:
        return np.repeat(values[None], len(sample_times), axis=0)
    clipped = np.clip(sample_times, times[0], times[-1])
    if period is not None and len(times) > 2 and abs(times[-1] - times[0] - period) < 1e-9:
        shift = values[-1] - values[0]
        times = np.concatenate([[times[-2] - period], times, [times[1] + period]])
        values = np.concatenate([[values[-2] - shift], values, [values[1] + shift]])
    return PchipInterpolator(times, values, axis=0)(clipped)


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
    period = spec.duration if spec.periodic else None
    com = _Interpolate(spec.com_times, spec.com_positions, times, "com", period=period)
    yaw = (
        _Interpolate(spec.com_times, spec.base_yaw, times, "base_yaw", period=period)
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
    from drakebots.config import ReadYaml

    raw = ReadYaml(filename) or {}
    if not isinstance(raw, dict):
        raise InputError(f"{filename}: the top level must be a mapping")
    # Key checks here (drakebots.config's checker reads dict[str, FootTrack] as a FootTrack).
    known = {f.name for f in dataclasses.fields(MotionSpec)}
    track_keys = {f.name for f in dataclasses.fields(FootTrack)}
    for key in raw:
        if key not in known:
            raise InputError(
                f"{filename}: unknown key '{key}' (known keys: {', '.join(sorted(known))})"
            )
    feet = raw.get("feet") or {}
    if not isinstance(feet, dict):
        raise InputError(f"{filename}: feet must map leg names to tracks")
    for leg, track in feet.items():
        if not isinstance(track, dict):
            raise InputError(f"{filename}: feet.{leg} must be a mapping")
        for key in track:
            if key not in track_keys:
                raise InputError(
                    f"{filename}: unknown key 'feet.{leg}.{key}' (known keys: "
                    f"{', '.join(sorted(track_keys))})"
                )

    def number_lists(value, depth, what):
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as e:
            raise InputError(f"{filename}: {what} must be numbers ({e})") from e
        if array.ndim != depth and array.size:
            raise InputError(f"{filename}: {what} must be a list{' of lists' * (depth - 1)}")
        return array.tolist()

    fields = {}
    for key, value in raw.items():
        what = key
        if key == "feet":
            fields[key] = {
                leg: FootTrack(
                    times=number_lists(t.get("times", []), 1, f"feet.{leg}.times"),
                    positions=number_lists(t.get("positions", []), 2, f"feet.{leg}.positions"),
                    stance=number_lists(t.get("stance", []), 2, f"feet.{leg}.stance"),
                )
                for leg, t in value.items()
            }
        elif key in ("com_times", "base_yaw"):
            fields[key] = number_lists(value, 1, what)
        elif key == "com_positions":
            fields[key] = number_lists(value, 2, what)
        elif key == "joint_effort_limits":
            if not isinstance(value, dict):
                raise InputError(f"{filename}: joint_effort_limits must map joints to N*m")
            fields[key] = {str(k): float(v) for k, v in value.items()}
        elif key in ("name", "robot"):
            fields[key] = str(value)
        elif key == "periodic":
            if not isinstance(value, bool):
                raise InputError(f"{filename}: periodic must be true or false")
            fields[key] = value
        else:
            try:
                fields[key] = float(value)
            except (TypeError, ValueError) as e:
                raise InputError(f"{filename}: {key} must be a number, got {value!r}") from e
    spec = MotionSpec(**fields)
    if "motor_effort_limit" in raw:
        spec._given = ("motor_effort_limit",)  # an explicit 0 is an error, not "default"
    if robot and spec.robot and spec.robot != robot:
        raise InputError(f"{filename}: motion was made for '{spec.robot}', not '{robot}'")
    return spec


def MotionToYaml(spec: MotionSpec) -> str:
    """The YAML text of a motion (what `drakebots design` writes as motion.yaml; loads back
    with `MotionFromYaml`)."""
    import yaml

    def plain(value):
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple, np.ndarray)):
            return [plain(v) for v in value]
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating)):
            return float(value)
        return value

    data = plain(dataclasses.asdict(spec))
    if not spec.motor_effort_limit:
        data.pop("motor_effort_limit")  # absent = the skeleton's own motors
    return yaml.safe_dump(data, sort_keys=False, width=100)


def LegReach(model, *, samples: int = 9) -> list[tuple[np.ndarray, float, float]]:
    """Per leg: (hip point in the torso frame, min and max distance hip -> sole centre), m.

    The leg's joint space (within the joint limits) is sampled on a grid at the home torso pose;
    the hip point is the leg's first joint (the joint whose parent is the torso). A plan whose
    sole centre is farther from that point than the max (or closer than the min) cannot be reached
    with the torso where the plan puts it.
    """
    plant, context = model.plant, model.plant.CreateDefaultContext()
    torso = plant.GetBodyByName("torso", model.instance)
    out = []
    joints = np.array(model.JointIndices())
    for j, leg in enumerate(model.legs):
        cols = [i for i in joints if model.position_names[i].startswith(leg + "_")]
        first = plant.GetJointByName(model.position_names[cols[0]], model.instance)
        plant.SetPositions(context, model.q_home)
        X_TW = plant.EvalBodyPoseInWorld(context, torso).inverse()
        hip = X_TW.multiply(first.frame_on_child().CalcPoseInWorld(context).translation())
        axes = []
        for i in cols:
            values = np.linspace(model.q_lower[i], model.q_upper[i], samples)
            if model.q_lower[i] <= model.q_home[i] <= model.q_upper[i]:
                values = np.union1d(values, [model.q_home[i]])
            axes.append(values)
        grids = np.meshgrid(*axes, indexing="ij")
        distances = []
        for values in zip(*(g.ravel() for g in grids)):
            q = model.q_home.copy()
            q[cols] = values
            plant.SetPositions(context, q)
            p = plant.CalcPointsPositions(
                context,
                model.foot_bodies[j].body_frame(),
                model.sole_centers[j][:, None],
                torso.body_frame(),
            )[:, 0]
            distances.append(np.linalg.norm(p - hip))
        out.append((hip, float(min(distances)), float(max(distances))))
    return out


def CheckReachable(model, motion: SampledMotion, *, tolerance: float = 0.005) -> None:
    """Raises InputError if a planned foot is provably outside its leg's reachable workspace.

    The torso is placed where the plan's COM puts it (the home COM offset, heading base_yaw); its
    height and tilt are left free (the optimizer may lower or tilt it), so the test is on the
    horizontal distance from the hip to the sole centre: beyond the leg's maximum reach
    (`LegReach`) + tolerance no torso height can bring the foot there.
    """
    from drakebots.errors import InputError

    reach = LegReach(model)
    com_home, _ = model.Com(model.q_home)
    offset = com_home - model.q_home[:3]
    for j, leg in enumerate(motion.legs):
        hip, _, r_max = reach[j]
        yaw = motion.base_yaw
        c, s = np.cos(yaw), np.sin(yaw)
        torso = motion.com[:, :2] - offset[None, :2]
        hip_w = torso + np.column_stack([c * hip[0] - s * hip[1], s * hip[0] + c * hip[1]])
        d = np.linalg.norm(motion.feet[j, :, :2] - hip_w, axis=1)
        bad = np.flatnonzero(d > r_max + tolerance)
        if len(bad):
            i = bad[0]
            raise InputError(
                f"feet.{leg}: at t = {motion.times[i]:.3f} s the sole is {d[i]:.3f} m from its "
                f"hip horizontally, beyond the leg's reach {r_max:.3f} m (outside the reachable "
                "workspace with the torso where the COM plan puts it)"
            )
