"""Parametric skeleton templates for the skinned quad-robots (Xu et al., skinned-quad-robots.txt).

The paper designs each robot's rigid skeleton by editing one of three built-in mechanical skeleton
templates (section 6, Fig. 6) through high-level semantic parameters: link lengths and widths, the
motor mount size, and so on (section 6.1, Fig. 7). This module is that step for drakebots: a
template (torso + four limbs of upper leg, lower leg and foot, with motors at the hip, the knee and
the ankle, plus spine/neck/tail joints where a robot has them) and a `SkeletonParams` dataclass of
semantic parameters generate an SDFormat model for Drake.

The three templates, as in Fig. 6:

- ``sprawled`` (template 1, the beetle): each leg has a hip yaw motor in the torso, a knee and an
  ankle motor (the paper: "On each limb, two uniaxial motors are mounted ... at the knee and the
  ankle"); the femur rises outward from the torso, the tibia comes down to a flat foot.
- ``sprawled`` with spine, neck and tail joints (template 2, the lizard: "We lengthened the torso
  and shortened the limbs").
- ``abducted`` (template 3, the monster; the cow is "designed to be similar to the monster
  robot, but with the modified 3D shape"): each leg has a hip roll (abduction) and a hip pitch
  motor, a knee and an ankle motor; the initial pose sets how far the legs are spread (wide for
  the monster, upright for the cow), as the paper's templates "vary in different initial poses
  and foot link geometries".

Every link frame is aligned with the model frame in the home pose (all joint angles zero), so the
geometry written into the SDF *is* the home pose. Masses: each link carries its structure (a
uniform box) and the motors housed on it (the motor of a joint sits on the joint's parent link);
the torso's structure mass is whatever remains of the skeleton mass the paper reports (it carries
the controller board, wiring and the torso's bracing unit, section 6.2).

Units: SI (m, kg, s, N·m).
"""

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

from drakebots.config import LoadTypedYaml
from drakebots.errors import InputError

SKELETONS_DIRECTORY = Path(__file__).with_name("skeletons")

LEG_NAMES = ("front_left", "front_right", "rear_left", "rear_right")


@dataclass
class MotorParams:
    """A hobby servo used as a joint motor (section 6.2, "Motor Specification")."""

    # Motor model name, as sold.
    model: str = "MG995R"
    # Stall torque used as the effort limit U_m of the paper's Eq. (12), N·m.
    effort_limit: float = 1.96
    # No-load speed at 6 V, rad/s (MG995R: 0.16 s per 60 degrees).
    velocity_limit: float = 6.5
    # Mass of one motor, kg (MG995R datasheet: 55 g).
    mass: float = 0.055
    # Housing size (length, width, height), m (paper: 40.8 x 20 x 38 mm).
    size: list[float] = field(default_factory=lambda: [0.0408, 0.020, 0.038])
    # Position-servo stiffness for the joint-space PD hold, N·m/rad. Not from the paper: chosen so
    # the effort limit is reached at about 4 degrees of error, like a stiff hobby servo.
    kp: float = 30.0
    # Position-servo damping, N·m·s/rad. Not tuned against hardware.
    kd: float = 0.4
    # Viscous joint friction of the gearbox, N·m·s/rad. Not tuned against hardware.
    damping: float = 0.01


@dataclass
class LegParams:
    """Semantic parameters of one limb (all four are mirror images of the front-left leg)."""

    # Template of the limb: "sprawled" (hip yaw, knee, ankle) or "abducted" (hip roll, hip pitch,
    # knee, ankle).
    template: str = "sprawled"
    # Hip joint position relative to the torso centre for the front-left leg, m. The other legs
    # mirror it: rear legs at -x (plus rear_hip_x_offset), right legs at -y.
    hip: list[float] = field(default_factory=lambda: [0.12, 0.08, 0.0])
    # Extra x shift of the rear hips (positive moves them back), m.
    rear_hip_x_offset: float = 0.0
    # Sprawled: angle of the front legs' plane from the lateral direction (towards +x for front
    # legs, -x for rear legs), rad.
    splay: float = 0.35
    # Sprawled: elevation of the femur above horizontal in the home pose, rad.
    femur_elevation: float = 0.5
    # Sprawled: outward tilt of the tibia from vertical in the home pose, rad.
    tibia_splay: float = 0.1
    # Abducted: spread of the leg plane from vertical in the home pose (hip roll offset), rad.
    abduction: float = 0.0
    # Abducted: forward tilt of the upper leg in the leg plane, rad.
    upper_tilt: float = 0.35
    # Abducted: backward tilt of the lower leg in the leg plane, rad.
    lower_tilt: float = 0.35
    # Upper leg (femur) length, joint to joint, m.
    upper_length: float = 0.12
    # Lower leg (tibia) length, knee to ankle, m.
    lower_length: float = 0.15
    # Width and thickness of the leg links' printed structure, m.
    link_width: float = 0.03
    link_thickness: float = 0.02
    # Structure mass (without motors) of upper leg, lower leg and foot, kg.
    upper_mass: float = 0.08
    lower_mass: float = 0.07
    foot_mass: float = 0.04
    # Foot plate: length (along the leg's outward or forward direction), width, thickness, m.
    foot_length: float = 0.07
    foot_width: float = 0.05
    foot_thickness: float = 0.012
    # Height of the ankle axis above the sole, m.
    ankle_height: float = 0.03
    # Where the ankle sits along the foot, as a fraction of the foot length from its heel.
    ankle_along_foot: float = 0.4
    # Joint limits (symmetric, about the home pose), rad.
    hip_limit: float = 1.2
    knee_limit: float = 1.6
    ankle_limit: float = 1.2


@dataclass
class ChainParams:
    """A chain of yaw-jointed segments: spine (splits the torso), neck (holds the head), tail."""

    # Number of joints in the chain (0: none).
    joints: int = 0
    # Length of each segment (head or tail segment), m.
    segment_length: float = 0.1
    # Width and height of each segment (tail segments taper to half), m.
    width: float = 0.06
    height: float = 0.05
    # Structure mass of each segment, kg.
    segment_mass: float = 0.1
    # Vertical offset of the chain's axis from the torso centre, m.
    z: float = 0.0
    # Joint limit, rad.
    limit: float = 0.6


@dataclass
class ContactParams:
    """Foot-ground contact: point contacts at the corners of each foot's sole."""

    # Radius of the contact spheres at the sole corners, m.
    sphere_radius: float = 0.004
    # Coulomb friction of the foot (rubber sole on a floor), static and dynamic. Not tuned.
    mu_static: float = 0.9
    mu_dynamic: float = 0.8
    # Point contact stiffness per sphere, N/m: a few 0.1 mm of compression under the robot's weight.
    stiffness: float = 2.0e5
    # Hunt-Crossley dissipation, s/m.
    dissipation: float = 5.0


@dataclass
class SkeletonParams:
    """The semantic parameters of one skinned quad-robot skeleton."""

    # Model name (the folder under models/ and the file stem).
    name: str = "beetle"
    # One line for README and `drakebots info`.
    description: str = ""
    # Overall size of the finished robot with its skin (length x, width y, height z), m: the
    # paper's figure that the skeleton is fitted into.
    paper_size: list[float] = field(default_factory=lambda: [0.4762, 0.3366, 0.3729])
    # Skeleton mass, kg (paper, or the documented share of the paper's total).
    skeleton_mass: float = 2.8
    # Skin mass the paper reports (or the documented share), kg; used by the skin issue.
    skin_mass: float = 1.1
    # Torso box: length, width, height, m.
    torso_size: list[float] = field(default_factory=lambda: [0.30, 0.16, 0.10])
    # Height of the torso centre above the ground in the home pose is derived from the legs.
    legs: LegParams = field(default_factory=LegParams)
    motor: MotorParams = field(default_factory=MotorParams)
    spine: ChainParams = field(default_factory=ChainParams)
    neck: ChainParams = field(default_factory=ChainParams)
    tail: ChainParams = field(default_factory=ChainParams)
    contact: ContactParams = field(default_factory=ContactParams)


def LoadSkeletonParams(name_or_path: str | Path) -> SkeletonParams:
    """Loads the parameters of a built-in skeleton (by name) or from a YAML file.

    Raises:
        InputError: naming the key and the file for a bad value or key, an unknown leg template,
            limbs heavier than the skeleton mass, or legs that cannot reach the ground.
    """
    path = Path(name_or_path)
    if not path.suffix:
        path = SKELETONS_DIRECTORY / f"{name_or_path}.yaml"
    params = LoadTypedYaml(SkeletonParams, filename=path)
    CheckSkeletonStands(params, source=str(path))
    return params


def CheckSkeletonStands(params: SkeletonParams, *, source: str = "") -> None:
    """Raises InputError unless the skeleton stands on its soles in the home pose: it builds, and
    every part but the feet is above the ground (legs that cannot reach the ground leave the
    torso, a leg or a motor at or below the soles' plane z = 0)."""
    where = f"{source}: " if source else ""
    CheckSkeletonSizes(params, source=source)
    try:
        geometry = BuildSkeletonGeometry(params)
    except ValueError as e:
        key = "legs.template" if "template" in str(e) else "skeleton_mass"
        raise InputError(f"{where}key '{key}': {e}") from None
    lowest, culprit = math.inf, ""
    for link in geometry.links.values():
        if link.contact_points:  # a foot: its plate stands on the ground.
            continue
        for box in link.boxes + link.visual_only:
            corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3)
            z = (box.R @ (0.5 * corners * box.size).T)[2] + box.center[2]
            if z.min() < lowest:
                lowest, culprit = float(z.min()), f"{box.name or link.name} (link {link.name})"
    if lowest <= 0.0:
        raise InputError(
            f"{where}key 'legs': the legs cannot reach the ground: in the home pose "
            f"{culprit} reaches z = {lowest:.4g} m, at or below the soles (z = 0); lengthen "
            "legs.upper_length / legs.lower_length, raise legs.femur_elevation or move legs.hip "
            "down"
        )


# The largest length a skeleton may give, m, is drakebots.limits' "skeleton_length" bound: these
# robots are tens of centimetres (a length in millimetres read as metres would build a 100 m robot).


def _SizeKeys(params: SkeletonParams):
    """(key, value, what) of every length, width and size a skeleton gives: each must be > 0
    (SDFormat replaces a box of zero or negative size by a 1 m cube, silently)."""
    legs = params.legs
    for name in (
        "upper_length",
        "lower_length",
        "link_width",
        "link_thickness",
        "foot_length",
        "foot_width",
        "foot_thickness",
    ):
        yield f"legs.{name}", getattr(legs, name)
    for name in ("torso_size", "paper_size"):
        yield name, getattr(params, name)
    yield "motor.size", params.motor.size
    for chain in ("spine", "neck", "tail"):
        params_chain = getattr(params, chain)
        if params_chain.joints > 0:
            for name in ("segment_length", "width", "height"):
                yield f"{chain}.{name}", getattr(params_chain, name)
    yield "contact.sphere_radius", params.contact.sphere_radius


def CheckSkeletonSizes(params: SkeletonParams, *, source: str = "") -> None:
    """InputError naming the key (and the file) for a length, width or size that is not a finite
    number in (0, the "skeleton_length" bound] m, a size that is not three numbers, a negative joint
    count or ankle height, or a negative mass (issue 68: zero and negative skeleton lengths were
    accepted)."""
    from drakebots.limits import Limit

    where = f"{source}: " if source else ""
    most = Limit("skeleton_length")
    for key, value in _SizeKeys(params):
        values = value if isinstance(value, (list, tuple)) else [value]
        if isinstance(value, (list, tuple)) and len(values) != 3:
            raise InputError(f"{where}key '{key}': give three sizes (x, y, z) in m, got {value}")
        for v in values:
            if not (math.isfinite(v) and 0.0 < v <= most):
                raise InputError(
                    f"{where}key '{key}': every length must be in (0, {most:g}] m, got {value}"
                    + (" (set DRAKEBOTS_MAX_SKELETON_LENGTH to allow more)" if v > most else "")
                )
    if not (math.isfinite(params.legs.ankle_height) and params.legs.ankle_height >= 0.0):
        raise InputError(
            f"{where}key 'legs.ankle_height': must be >= 0 m, got {params.legs.ankle_height}"
        )
    for chain in ("spine", "neck", "tail"):
        joints = getattr(params, chain).joints
        if joints < 0:
            raise InputError(f"{where}key '{chain}.joints': must be >= 0, got {joints}")
    masses = [("skeleton_mass", params.skeleton_mass), ("skin_mass", params.skin_mass)]
    masses += [(f"legs.{n}", getattr(params.legs, n)) for n in ("upper_mass", "lower_mass")]
    masses += [("legs.foot_mass", params.legs.foot_mass), ("motor.mass", params.motor.mass)]
    for key, mass in masses:
        if not (math.isfinite(mass) and mass >= 0.0):
            raise InputError(f"{where}key '{key}': a mass must be >= 0 kg, got {mass}")
    # Limits, gains and contact parameters: a zero or negative one is a typo, not a robot.
    legs, motor, contact = params.legs, params.motor, params.contact
    positive = [(f"legs.{n}", getattr(legs, n)) for n in ("hip_limit", "knee_limit", "ankle_limit")]
    positive += [("motor.effort_limit", motor.effort_limit)]
    positive += [("motor.velocity_limit", motor.velocity_limit)]
    positive += [("contact.stiffness", contact.stiffness)]
    non_negative = [(f"motor.{n}", getattr(motor, n)) for n in ("kp", "kd", "damping")]
    non_negative += [(f"contact.{n}", getattr(contact, n)) for n in ("mu_static", "mu_dynamic")]
    non_negative += [("contact.dissipation", contact.dissipation)]
    for key, value in positive:
        if not (math.isfinite(value) and value > 0.0):
            raise InputError(f"{where}key '{key}': must be > 0, got {value}")
    for key, value in non_negative:
        if not (math.isfinite(value) and value >= 0.0):
            raise InputError(f"{where}key '{key}': must be >= 0, got {value}")


def BuiltinSkeletonNames() -> list[str]:
    """The skeletons shipped with drakebots (beetle, cow, lizard, monster)."""
    return sorted(p.stem for p in SKELETONS_DIRECTORY.glob("*.yaml"))


# ----------------------------------------------------------------------------------------------
# Geometry and mass properties.


@dataclass
class SkeletonBox:
    """A box of `size` (along its own x, y, z) centred at `center`, rotated by `R` (model frame)."""

    size: np.ndarray
    center: np.ndarray
    R: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(3))
    mass: float = 0.0
    color: tuple[float, float, float, float] = (0.7, 0.7, 0.7, 1.0)
    name: str = ""

    def Inertia(self) -> np.ndarray:
        """Rotational inertia about its centre, model-frame axes."""
        a, b, c = self.size
        I_local = self.mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
        return self.R @ I_local @ self.R.T


def _Unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def _FrameAlong(direction, side) -> np.ndarray:
    """Rotation whose x axis is `direction` and whose y axis is as close to `side` as possible."""
    x = _Unit(direction)
    y = np.asarray(side, dtype=float) - np.dot(side, x) * x
    y = _Unit(y)
    return np.column_stack([x, y, np.cross(x, y)])


def _Segment(p0, p1, width, thickness, side, mass, color, name) -> SkeletonBox:
    """A box link structure from point p0 to p1."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    length = float(np.linalg.norm(p1 - p0))
    return SkeletonBox(
        size=np.array([length, width, thickness]),
        center=0.5 * (p0 + p1),
        R=_FrameAlong(p1 - p0, side),
        mass=mass,
        color=color,
        name=name,
    )


def _RollPitchYaw(R: np.ndarray) -> tuple[float, float, float]:
    """SDFormat's fixed-axis roll-pitch-yaw of a rotation matrix (R = Rz(y) Ry(p) Rx(r))."""
    pitch = math.asin(-max(-1.0, min(1.0, R[2, 0])))
    if abs(math.cos(pitch)) > 1e-9:
        roll = math.atan2(R[2, 1], R[2, 2])
        yaw = math.atan2(R[1, 0], R[0, 0])
    else:  # gimbal lock: put everything in yaw.
        roll = 0.0
        yaw = math.atan2(-R[0, 1], R[1, 1])
    return roll, pitch, yaw


@dataclass
class SkeletonLink:
    """One rigid link of a generated skeleton at its home pose (model frame, axes aligned)."""

    name: str
    origin: np.ndarray  # link frame origin in the model frame (home pose); axes aligned
    boxes: list[SkeletonBox] = field(default_factory=list)  # structure + motors (mass carriers)
    visual_only: list[SkeletonBox] = field(default_factory=list)
    contact_points: list[np.ndarray] = field(default_factory=list)  # sphere centres, model frame


@dataclass
class SkeletonJoint:
    """One revolute joint of a generated skeleton; `kind` names its role in the template."""

    name: str
    parent: str
    child: str
    axis: np.ndarray  # model frame
    lower: float
    upper: float
    kind: str  # "hip", "knee", "ankle", "spine", "neck", "tail"


STRUCTURE_COLOR = (0.93, 0.91, 0.86, 1.0)  # SLA resin, ivory
TORSO_COLOR = (0.80, 0.78, 0.72, 1.0)
MOTOR_COLOR = (0.15, 0.15, 0.18, 1.0)
FOOT_COLOR = (0.35, 0.55, 0.75, 1.0)


class SkeletonGeometry:
    """A skeleton's links (with their boxes and contact points) and joints at the home pose.

    Frames are model-frame aligned. Built by `BuildSkeletonGeometry`; the SDF, the skins
    (drakebots.skinned.skin) and the folding-region bench read the same geometry.
    """

    def __init__(self, params: SkeletonParams):
        self.p = params
        self.links: dict[str, SkeletonLink] = {}
        self.joints: list[SkeletonJoint] = []

    def AddLink(self, name: str, origin) -> SkeletonLink:
        link = SkeletonLink(name=name, origin=np.asarray(origin, dtype=float))
        self.links[name] = link
        return link

    def AddJoint(self, name, parent, child, axis, limit, kind, with_motor=True):
        self.joints.append(
            SkeletonJoint(name, parent, child, _Unit(axis), -float(limit), float(limit), kind)
        )
        if with_motor:
            # The motor housing sits on the parent link at the joint; its horn drives the child.
            m = self.p.motor
            at = self.links[child].origin
            self.links[parent].boxes.append(
                SkeletonBox(
                    size=np.asarray(m.size, float),
                    center=at.copy(),
                    mass=m.mass,
                    color=MOTOR_COLOR,
                    name=f"{name}_motor",
                )
            )


def _LegPoints(legs: LegParams, sx: float, sy: float):
    """Home-pose points of one leg relative to its hip, and its joint axes and foot direction.

    Args:
        sx: +1 front, -1 rear. sy: +1 left, -1 right.

    Returns:
        dict with knee, ankle, sole points, axes for each joint, and the foot's long direction.
    """
    if legs.template == "sprawled":
        # Leg plane: outward lateral direction, splayed forward (front) or back (rear).
        out = np.array([sx * math.sin(legs.splay), sy * math.cos(legs.splay), 0.0])
        fwd = np.cross(np.array([0.0, 0.0, 1.0]), out) * sy  # tangent, points to +x side
        up = np.array([0.0, 0.0, 1.0])
        knee = legs.upper_length * (
            math.cos(legs.femur_elevation) * out + math.sin(legs.femur_elevation) * up
        )
        ankle = knee + legs.lower_length * (
            math.sin(legs.tibia_splay) * out - math.cos(legs.tibia_splay) * up
        )
        # Positive knee/ankle rotation swings the foot outward and up (mirror-symmetric axes).
        # Positive hip yaw swings the foot forward (+x) on every leg.
        flex_axis = _Unit(np.cross(out, up))
        axes = {"hip_yaw": -sy * up, "knee": flex_axis, "ankle": flex_axis}
        foot_dir = out
        side = fwd
        hip_joints = ["hip_yaw"]
        hip_end = np.zeros(3)
    elif legs.template == "abducted":
        fwd = np.array([1.0, 0.0, 0.0])
        # Leg plane spanned by fwd and the down-outward direction w (abduction from vertical).
        w = np.array([0.0, sy * math.sin(legs.abduction), -math.cos(legs.abduction)])
        # Conventions, on every leg: positive hip roll abducts (foot outward), positive hip pitch
        # swings the foot forward, positive knee flexes (foot up). The knees of front and rear
        # legs point opposite ways (front-back mirror), so the knee axis flips with sx.
        sagittal = _Unit(np.cross(fwd, w))  # +y-ish on both sides
        a = math.cos(legs.upper_tilt) * w + math.sin(legs.upper_tilt) * fwd * sx
        b = math.cos(legs.lower_tilt) * w - math.sin(legs.lower_tilt) * fwd * sx
        knee = legs.upper_length * a
        ankle = knee + legs.lower_length * b
        axes = {
            "hip_roll": fwd * sy,
            "hip_pitch": -sagittal,
            "knee": sx * sagittal,
            "ankle": sx * sagittal,
        }
        foot_dir = fwd
        side = np.array([0.0, 1.0, 0.0])
        hip_joints = ["hip_roll", "hip_pitch"]
        hip_end = np.zeros(3)
    else:
        raise ValueError(f"unknown leg template '{legs.template}' (known: sprawled, abducted)")
    sole_center = (
        ankle
        + np.array([0.0, 0.0, -legs.ankle_height])
        + (0.5 - legs.ankle_along_foot) * legs.foot_length * foot_dir
    )
    return dict(
        knee=knee,
        ankle=ankle,
        sole=sole_center,
        axes=axes,
        foot_dir=foot_dir,
        side=side,
        hip_joints=hip_joints,
        hip_end=hip_end,
    )


def BuildSkeletonGeometry(params: SkeletonParams) -> SkeletonGeometry:
    """Generates a skeleton's links and joints from its template parameters (paper section 6.1).

    Args:
        params: the semantic parameters (LoadSkeletonParams).

    Returns:
        The home-pose geometry: the torso stands so that the front-left sole touches z = 0; box
        masses are set so the skeleton's total matches `params` (SI units).
    """
    legs = params.legs
    b = SkeletonGeometry(params)
    # Height of the torso centre: the front-left foot's sole touches z = 0.
    fl = _LegPoints(legs, 1.0, 1.0)
    hip_fl = np.asarray(legs.hip, float)
    torso_z = -(hip_fl[2] + fl["sole"][2])
    torso_center = np.array([0.0, 0.0, torso_z])
    L, W, H = params.torso_size
    nseg = params.spine.joints + 1
    seg_len = L / nseg
    # Torso segments from rear (index 0) to front; the root is the middle segment.
    seg_names = ["torso"] if nseg == 1 else [f"torso_{i}" for i in range(nseg)]
    root_index = nseg // 2
    if nseg > 1:
        seg_names[root_index] = "torso"
    for i, name in enumerate(seg_names):
        x0 = -0.5 * L + i * seg_len
        center = torso_center + np.array([x0 + 0.5 * seg_len, 0.0, 0.0])
        # The root segment's frame is at its centre; the others' at the spine joint they hang on.
        if i == root_index:
            origin = center
        elif i < root_index:
            origin = torso_center + np.array([x0 + seg_len, 0.0, 0.0])
        else:
            origin = torso_center + np.array([x0, 0.0, 0.0])
        link = b.AddLink(name, origin)
        link.boxes.append(
            SkeletonBox(
                np.array([seg_len * 0.98, W, H]),
                center,
                mass=0.0,
                color=TORSO_COLOR,
                name=f"{name}_shell",
            )
        )
    # Spine joints (yaw) between segments, outward from the root.
    for i in range(nseg):
        if i != root_index:
            parent = seg_names[i + 1] if i < root_index else seg_names[i - 1]
            b.AddJoint(
                f"spine_yaw_{i}" if nseg > 2 else "spine_yaw",
                parent,
                seg_names[i],
                [0, 0, 1],
                params.spine.limit,
                "spine",
            )
    front_seg, rear_seg = seg_names[-1], seg_names[0]
    # Neck and head (yaw chain in front), tail (yaw chain behind).
    for chain, parent0, sign, label in (
        (params.neck, front_seg, 1.0, "neck"),
        (params.tail, rear_seg, -1.0, "tail"),
    ):
        parent = parent0
        x = sign * 0.5 * L
        for j in range(chain.joints):
            taper = 1.0 - 0.5 * j / max(1, chain.joints) if label == "tail" else 1.0
            name = "head" if label == "neck" and j == chain.joints - 1 else f"{label}_{j}"
            origin = torso_center + np.array([x, 0.0, chain.z])
            link = b.AddLink(name, origin)
            center = origin + np.array([sign * 0.5 * chain.segment_length, 0.0, 0.0])
            link.boxes.append(
                SkeletonBox(
                    np.array(
                        [chain.segment_length * 0.95, chain.width * taper, chain.height * taper]
                    ),
                    center,
                    mass=chain.segment_mass,
                    color=TORSO_COLOR,
                    name=f"{name}_shell",
                )
            )
            joint_name = f"{label}_yaw_{j}" if chain.joints > 1 else f"{label}_yaw"
            b.AddJoint(joint_name, parent, name, [0, 0, 1], chain.limit, label)
            parent = name
            x += sign * chain.segment_length
    # Legs.
    for leg in LEG_NAMES:
        sx = 1.0 if leg.startswith("front") else -1.0
        sy = 1.0 if leg.endswith("left") else -1.0
        pts = _LegPoints(legs, sx, sy)
        hip = torso_center + np.array(
            [
                sx * hip_fl[0] - (legs.rear_hip_x_offset if sx < 0 else 0.0),
                sy * hip_fl[1],
                hip_fl[2],
            ]
        )
        parent = front_seg if sx > 0 else rear_seg
        knee, ankle = hip + pts["knee"], hip + pts["ankle"]
        # Hip: one (yaw) or two (roll + pitch) motors; the roll joint carries a small motor mount.
        if len(pts["hip_joints"]) == 2:
            mount = b.AddLink(f"{leg}_hip", hip)
            mount.boxes.append(
                SkeletonBox(
                    np.array([0.03, 0.03, 0.03]),
                    hip.copy(),
                    mass=0.02,
                    color=STRUCTURE_COLOR,
                    name=f"{leg}_hip_bracket",
                )
            )
            b.AddJoint(
                f"{leg}_hip_roll",
                parent,
                mount.name,
                pts["axes"]["hip_roll"],
                legs.hip_limit,
                "hip",
            )
            parent = mount.name
        upper = b.AddLink(f"{leg}_upper_leg", hip)
        upper.boxes.append(
            _Segment(
                hip,
                knee,
                legs.link_width,
                legs.link_thickness,
                pts["side"],
                legs.upper_mass,
                STRUCTURE_COLOR,
                f"{leg}_upper_leg_structure",
            )
        )
        hip_joint = pts["hip_joints"][-1]
        b.AddJoint(
            f"{leg}_{hip_joint}", parent, upper.name, pts["axes"][hip_joint], legs.hip_limit, "hip"
        )
        lower = b.AddLink(f"{leg}_lower_leg", knee)
        lower.boxes.append(
            _Segment(
                knee,
                ankle,
                legs.link_width,
                legs.link_thickness,
                pts["side"],
                legs.lower_mass,
                STRUCTURE_COLOR,
                f"{leg}_lower_leg_structure",
            )
        )
        b.AddJoint(
            f"{leg}_knee", upper.name, lower.name, pts["axes"]["knee"], legs.knee_limit, "knee"
        )
        foot = b.AddLink(f"{leg}_foot", ankle)
        sole = hip + pts["sole"]
        plate_center = sole + np.array([0.0, 0.0, 0.5 * legs.foot_thickness])
        R_foot = _FrameAlong(pts["foot_dir"], np.cross([0.0, 0.0, 1.0], pts["foot_dir"]))
        foot.boxes.append(
            SkeletonBox(
                np.array([legs.foot_length, legs.foot_width, legs.foot_thickness]),
                plate_center,
                R=R_foot,
                mass=legs.foot_mass,
                color=FOOT_COLOR,
                name=f"{leg}_foot_plate",
            )
        )
        # The ankle bracket joins the ankle axis to the plate (visual only; its mass is the
        # plate's).
        foot.visual_only.append(
            _Segment(
                ankle,
                plate_center + np.array([0.0, 0.0, 0.25 * legs.foot_thickness]),
                legs.link_width * 0.8,
                legs.link_thickness,
                pts["side"],
                0.0,
                FOOT_COLOR,
                f"{leg}_ankle_bracket",
            )
        )
        r = params.contact.sphere_radius
        half_l, half_w = 0.5 * legs.foot_length - r, 0.5 * legs.foot_width - r
        across = R_foot[:, 1]
        for a, c in ((1, 1), (1, -1), (-1, -1), (-1, 1)):
            foot.contact_points.append(
                sole + a * half_l * pts["foot_dir"] + c * half_w * across + np.array([0, 0, r])
            )
        b.AddJoint(
            f"{leg}_ankle", lower.name, foot.name, pts["axes"]["ankle"], legs.ankle_limit, "ankle"
        )
    # The torso's structure takes whatever the skeleton mass leaves (board, wiring, bracing).
    used = sum(box.mass for link in b.links.values() for box in link.boxes)
    torso_boxes = [
        box for name in seg_names for box in b.links[name].boxes if box.name.endswith("_shell")
    ]
    remaining = params.skeleton_mass - used
    if remaining <= 0.0:
        raise ValueError(
            f"skeleton '{params.name}': limbs and motors weigh {used:.3f} kg, more than the "
            f"skeleton mass {params.skeleton_mass} kg"
        )
    for box in torso_boxes:
        box.mass = remaining / len(torso_boxes)
    return b


def LinkMassProperties(link: SkeletonLink) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, COM (link frame) and inertia about the COM (link frame axes) of a link's boxes."""
    mass = sum(box.mass for box in link.boxes)
    if mass <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(box.mass * box.center for box in link.boxes) / mass
    inertia = np.zeros((3, 3))
    for box in link.boxes:
        d = box.center - com
        inertia += box.Inertia() + box.mass * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return mass, com - link.origin, inertia


def _Fmt(values) -> str:
    return " ".join(f"{v:.9g}" if abs(v) > 1e-12 else "0" for v in values)


def _PoseXml(position, R=None, relative_to: str | None = None) -> str:
    rpy = (0.0, 0.0, 0.0) if R is None else _RollPitchYaw(R)
    attribute = f' relative_to="{relative_to}"' if relative_to else ""
    return f"<pose{attribute}>{_Fmt(list(position) + list(rpy))}</pose>"


def MakeSkeletonSdf(params: SkeletonParams, *, source: str | None = None) -> str:
    """Generates the SDFormat text of a skeleton from its semantic parameters.

    The output is deterministic (fixed formatting, sorted nothing, no time stamps), so the
    committed models/<name>/<name>.sdf can be checked against it.

    Args:
        source: the parameter file a user's skeleton came from (the header names it); default:
            the built-in drakebots/skinned/skeletons/<name>.yaml.
    """
    b = BuildSkeletonGeometry(params)
    motor, contact = params.motor, params.contact
    from_file = source or f"drakebots/skinned/skeletons/{params.name}.yaml"
    lines = [
        '<?xml version="1.0"?>',
        "<!-- Generated by drakebots.skinned.skeleton.MakeSkeletonSdf from",
        f"     {escape(from_file)}; do not edit by hand.",
        "     Regenerate: "
        + (
            "load its robot file again (drakebots.robots.LoadRobot)"
            if source
            else f"python scripts/generate_skeletons.py {params.name}"
        ),
        "     Units: SI (m, kg, s). Home pose = all joint angles zero. -->",
        '<sdf version="1.9" xmlns:drake="http://drake.mit.edu">',
        f'  <model name="{params.name}">',
    ]
    for link in b.links.values():
        mass, com, inertia = LinkMassProperties(link)
        lines.append(f'    <link name="{link.name}">')
        lines.append(f"      {_PoseXml(link.origin)}")
        lines.append("      <inertial>")
        lines.append(f"        {_PoseXml(com)}")
        lines.append(f"        <mass>{mass:.9g}</mass>")
        i = inertia
        lines.append(
            "        <inertia>"
            f"<ixx>{i[0, 0]:.9g}</ixx><ixy>{i[0, 1]:.9g}</ixy><ixz>{i[0, 2]:.9g}</ixz>"
            f"<iyy>{i[1, 1]:.9g}</iyy><iyz>{i[1, 2]:.9g}</iyz><izz>{i[2, 2]:.9g}</izz>"
            "</inertia>"
        )
        lines.append("      </inertial>")
        for box in link.boxes + link.visual_only:
            rgba = _Fmt(box.color)
            lines += [
                f'      <visual name="{escape(box.name)}">',
                f"        {_PoseXml(box.center - link.origin, box.R)}",
                f"        <geometry><box><size>{_Fmt(box.size)}</size></box></geometry>",
                f"        <material><diffuse>{rgba}</diffuse></material>",
                "      </visual>",
            ]
        for k, point in enumerate(link.contact_points):
            lines += [
                f'      <collision name="{link.name}_sole_{k}">',
                f"        {_PoseXml(point - link.origin)}",
                f"        <geometry><sphere><radius>{contact.sphere_radius:.6g}</radius>"
                "</sphere></geometry>",
                "        <drake:proximity_properties>",
                f"          <drake:mu_static>{contact.mu_static:.6g}</drake:mu_static>",
                f"          <drake:mu_dynamic>{contact.mu_dynamic:.6g}</drake:mu_dynamic>",
                f"          <drake:point_contact_stiffness>{contact.stiffness:.6g}"
                "</drake:point_contact_stiffness>",
                f"          <drake:hunt_crossley_dissipation>{contact.dissipation:.6g}"
                "</drake:hunt_crossley_dissipation>",
                "        </drake:proximity_properties>",
                "      </collision>",
            ]
        lines.append("    </link>")
    for joint in b.joints:
        lines += [
            f'    <joint name="{joint.name}" type="revolute">',
            f"      <parent>{joint.parent}</parent>",
            f"      <child>{joint.child}</child>",
            "      <axis>",
            f'        <xyz expressed_in="__model__">{_Fmt(joint.axis)}</xyz>',
            f"        <limit><lower>{joint.lower:.6g}</lower><upper>{joint.upper:.6g}</upper>"
            f"<effort>{motor.effort_limit:.6g}</effort>"
            f"<velocity>{motor.velocity_limit:.6g}</velocity></limit>",
            f"        <dynamics><damping>{motor.damping:.6g}</damping></dynamics>",
            "      </axis>",
            f'      <drake:controller_gains p="{motor.kp:.6g}" d="{motor.kd:.6g}"/>',
            "    </joint>",
        ]
    lines += ["  </model>", "</sdf>", ""]
    return "\n".join(lines)


def JointKinds(params: SkeletonParams) -> dict[str, str]:
    """Joint name -> kind ("hip", "knee", "ankle", "spine", "neck", "tail")."""
    return {joint.name: joint.kind for joint in BuildSkeletonGeometry(params).joints}


def FootContactPoints(params: SkeletonParams) -> dict[str, np.ndarray]:
    """Foot link name -> (4, 3) sole contact points in the foot's link frame, m."""
    b = BuildSkeletonGeometry(params)
    return {
        name: np.array([p - link.origin for p in link.contact_points])
        for name, link in b.links.items()
        if link.contact_points
    }


def HomeBaseHeight(params: SkeletonParams) -> float:
    """Height of the torso (root body) frame above the ground in the home pose, m."""
    return float(BuildSkeletonGeometry(params).links["torso"].origin[2])


def MakeSceneYaml(params: SkeletonParams) -> str:
    """A Drake model directive (scene.dmd.yaml) with the robot above a ground plane."""
    return (
        f"# Generated by scripts/generate_skeletons.py {params.name}; do not edit by hand.\n"
        "# Load with pydrake.multibody.parsing.LoadModelDirectives after\n"
        "# drakebots.models.ConfigureParser; the home pose is all joints at zero.\n"
        "directives:\n"
        "- add_model:\n"
        f"    name: {params.name}\n"
        f"    file: package://drakebots/{params.name}/{params.name}.sdf\n"
        "    default_free_body_pose:\n"
        "      torso:\n"
        f"        translation: [0, 0, {HomeBaseHeight(params):.9g}]\n"
        "        rotation: !Rpy { deg: [0, 0, 0] }\n"
    )


def GeneratedSkeletonFiles(name: str) -> dict[str, str]:
    """models/-relative path -> text of every file generated for a built-in skeleton."""
    params = LoadSkeletonParams(name)
    return {
        f"{name}/{name}.sdf": MakeSkeletonSdf(params),
        f"{name}/scene.dmd.yaml": MakeSceneYaml(params),
        f"{name}/README.md": MakeSkeletonReadme(params),
    }


def MakeSkeletonReadme(params: SkeletonParams) -> str:
    """The model folder's README: provenance, units, the generator command, the numbers."""
    b = BuildSkeletonGeometry(params)
    kinds = JointKinds(params)
    size_cm = " × ".join(f"{x * 100:.2f}" for x in params.paper_size)
    lines = [
        f"# {params.name}: {params.description}",
        "",
        "Generated by drakebots; do not edit the SDF by hand. Regenerate with",
        "",
        "```",
        f"python scripts/generate_skeletons.py {params.name}",
        "```",
        "",
        f"from the semantic parameters in `drakebots/skinned/skeletons/{params.name}.yaml`",
        "(`drakebots.skinned.skeleton.MakeSkeletonSdf`). A test fails when the committed files",
        "differ from what the generator makes.",
        "",
        "## Source",
        "",
        "Xu et al., *Skinned quad-robots* (`shared/papers/skinned-quad-robots.txt`), sections 6-7",
        "and Table 1. The paper's SolidWorks templates and meshes are not public: the skeleton is",
        "this project's own parametric template (see the module docstring of",
        "`drakebots/skinned/skeleton.py`) fitted to the paper's overall size and weights.",
        "",
        "## Units",
        "",
        "SI: metre, kilogram, second; torques in N·m; angles in radians. The home pose is every",
        "joint at zero with the soles on the ground (z = 0).",
        "",
        "## Numbers",
        "",
        "| quantity | value | source |",
        "|---|---|---|",
        f"| overall size with skin (L × W × H) | {size_cm} cm | paper, section 7 |",
        f"| skeleton mass | {params.skeleton_mass} kg | see the YAML's comment |",
        f"| skin mass | {params.skin_mass} kg | see the YAML's comment |",
        f"| joints (motors) | {len(b.joints)} | Table 1 |",
        f"| motor | {params.motor.model}, {params.motor.effort_limit} N·m,"
        f" {params.motor.mass * 1000:.0f} g | paper, section 6.2 / 7 |",
        f"| torso frame height in the home pose | {HomeBaseHeight(params):.4f} m | generated |",
        "",
        "## Joints",
        "",
        "| joint | kind | limit (rad) |",
        "|---|---|---|",
    ]
    for joint in b.joints:
        lines.append(f"| `{joint.name}` | {kinds[joint.name]} | ±{joint.upper:.3g} |")
    lines += [
        "",
        "## Values not from the paper (not tuned against hardware)",
        "",
        "1. Link lengths, widths and structure masses: chosen so the skeleton fits the paper's",
        "   overall size minus the skin's thickness, with the skeleton mass the paper reports;",
        "   the torso takes the remaining mass (controller board, wiring, bracing unit).",
        "2. Servo PD gains (`drake:controller_gains`), gearbox damping, joint limits.",
        "3. Foot contact: four spheres at the sole corners, Coulomb friction"
        f" {params.contact.mu_static}/{params.contact.mu_dynamic}, point-contact stiffness"
        f" {params.contact.stiffness:g} N/m.",
        "",
        "## Files",
        "",
        f"- `{params.name}.sdf`: the model (generated).",
        "- `scene.dmd.yaml`: the robot above the ground, for `LoadModelDirectives` (generated).",
        "- `LICENSE`, `CHANGELOG.md`, `README.md` (generated), `picture.png` (a screenshot).",
        "",
    ]
    return "\n".join(lines)


# Older private names, still imported by a few modules; new code uses the public names above.
_Build = BuildSkeletonGeometry
_MassProperties = LinkMassProperties
