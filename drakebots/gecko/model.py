"""The gecko-inspired soft walker as a Drake multibody model (gecko-gait-pattern-generator.txt).

Five bending limbs (front-left leg, front-right leg, torso, hind-left leg, hind-right leg) lie flat
on the ground. Each limb is a constant-curvature arc (the paper's model, section 3.1), approximated
in Drake by N rigid segments of length L/N joined by N + 1 revolute joints about the vertical:
a half joint at each end and N - 1 full joints (`SegmentJointRatios`). `drake:mimic` couplers (SAP
coupler constraints) make every joint of a limb bend by its share of the limb's angle, so the
chain bends equally and the limb has one degree of freedom, its bending angle alpha_i. The
approximation error against the exact arc is closed form (`ChainEndError`) and tabulated in
models/gecko/README.md.

Soft limbs also stretch: a prismatic joint along each leg's middle segment (which points along
the arc's chord, so the foot moves as a change of the arc's length would move it) and two coupled
ones in the torso, with the axial stiffness the authors' weight f_l gives length changes. Without
them the closed chain of two fixed feet over inextensible arcs drifts from cycle to cycle in a
turning gait and snaps through after four cycles, exactly as the authors' geometric model does
when its lengths are held fixed.

Pneumatic bending: each limb's master joint carries one actuator (the limb's bending moment, see
drakebots.gecko.pneumatics) and the elastomer's bending stiffness as a RevoluteSpring; the
torso's two chambers act on one actuator with opposite signs.

Suction feet: `AddSuctionAnchors` adds, per foot, an anchor body on a locked planar carriage
(prismatic x, prismatic y, a revolute twist joint with the suction cup's torsional spring) and a
weld constraint anchor <-> foot. Fixing a foot at run time moves the locked carriage under the foot,
unlocks the twist joint and activates the weld (`SuctionFeet.Fix`); releasing deactivates the weld
and locks the twist joint. The paper's cups have "a certain margin of rotation" (section 3.2); the
twist spring is that margin, and its stiffness relative to the limbs' bending stiffness is the
authors' weight ratio f_o / f_a (reference README).

Units: SI (m, kg, s, N·m, rad). The base body is the torso's middle segment; its frame is at the
torso's midpoint, x forward, at the height of the contact spheres' centres (the robot lies flat on
the ground, so the nominal base height is the contact radius, 5 mm).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
from pydrake.math import RigidTransform, RotationMatrix
from pydrake.multibody.parsing import Parser
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import (
    FixedOffsetFrame,
    ModelInstanceIndex,
    PrismaticJoint,
    RevoluteJoint,
    RevoluteSpring,
    SpatialInertia,
    UnitInertia,
)

from drakebots.gecko.geometry import (
    FEET,
    FOOT_LIMB,
    LEG_BEND_SIGN,
    LEGS,
    LIMBS,
    ChainEndError,
    GeckoDimensions,
    HomeAnglesDeg,
    SegmentJointRatios,
)
from drakebots.models import ConfigureParser
from drakebots.robots.base import Robot

MODEL_URL = "package://drakebots/gecko/gecko.sdf"
BAR = 1e5  # Pa


@dataclasses.dataclass
class ChamberParams:
    """A pneumatic bending chamber (PneuNet-type) and its valve. Not from the paper: chosen so the
    pressures span the reference README's range (about 0.7-1.1 bar at the largest angles)."""

    # Moment per pressure at low pressure, N·m/bar.
    moment_per_bar: float = 0.087
    # Ballooning: the effective moment arm grows with pressure, M = c p (1 + b p), 1/bar.
    ballooning: float = 0.5
    # Calibration clip: the largest reference pressure, bar (reference README: 1.1 bar).
    max_pressure: float = 1.1
    # Largest rate of pressure change of the proportional valve at full opening, bar/s.
    max_pressure_rate: float = 1.5

    def Moment(self, pressure_bar):
        """Bending moment of the chamber at a gauge pressure, N·m."""
        p = np.maximum(np.asarray(pressure_bar, dtype=float), 0.0)
        return self.moment_per_bar * p * (1.0 + self.ballooning * p)


@dataclasses.dataclass
class GeckoParams:
    """Everything the gecko model is generated from (SI units). See models/gecko/README.md for
    the source of each number."""

    # Limb lengths (reference README: leg 9.1 cm, torso 10.3 cm).
    dimensions: GeckoDimensions = dataclasses.field(default_factory=GeckoDimensions)
    # Rigid segments per leg and in the torso (the torso's count is odd so that its middle
    # segment, the base body, is centred on the torso midpoint).
    leg_segments: int = 5
    torso_segments: int = 5
    # Cross-section of the limbs (width in the plane, thickness), m. Not from the paper.
    leg_width: float = 0.015
    torso_width: float = 0.020
    thickness: float = 0.010
    # Masses, kg. Not from the paper (silicone limbs with chambers, about 70 g in all).
    leg_mass: float = 0.008
    torso_mass: float = 0.012
    node_mass: float = 0.003  # the connectors at the torso's ends (shoulder, hip)
    foot_mass: float = 0.004
    # Suction cup radius (drawn), m.
    foot_radius: float = 0.012
    # Rotational inertia about the vertical of the feet and the torso-end connectors, kg·m² (a
    # thin disc: the horizontal axes get half). Numerical, not physical: SAP regularises each
    # weld constraint by its diagonal Delassus estimate, which ignores the couplers and so sees
    # the foot's own tiny yaw inertia (7e-8 kg·m² for a 4 g cup); the welds then give way by
    # about 1 cm under the gait's loads. 1e-5 kg·m² keeps fixed feet within 0.6 mm of their
    # anchors at a 2 ms step; the gait is quasi-static, so the added inertia does not matter.
    end_inertia: float = 1e-5
    # Bending stiffness of each limb, N·m/rad of limb angle (EI / L of the elastomer). Not from
    # the paper.
    limb_stiffness: float = 0.05
    # Bending damping of each limb, N·m·s/rad of limb angle. Not from the paper.
    limb_damping: float = 0.004
    # Axial stiffness and damping of a leg's stretch joint, N/m and N·s/m: the limb stiffness
    # times the authors' weight ratio f_l / f_a (89 / 5.9) over the leg length squared, so a
    # length change costs what it costs in their objective (lengths measured in leg lengths).
    leg_axial_stiffness: float = 0.05 * (89.0 / 5.9) / 0.091**2
    leg_axial_damping: float = 0.004 * (89.0 / 5.9) / 0.091**2
    # Largest stretch or shortening of a leg, as a fraction of its length (the authors' 0.9-1.1).
    leg_stretch_limit: float = 0.1
    # The torso stretches at two coupled joints (one per half); each carries twice the leg's
    # axial stiffness so the torso's length change (the sum) costs what it costs a leg.
    torso_axial_stiffness: float = 2.0 * 0.05 * (89.0 / 5.9) / 0.091**2
    torso_axial_damping: float = 2.0 * 0.004 * (89.0 / 5.9) / 0.091**2
    # Mass of the slider that carries the stretch, kg (part of the leg's middle segment).
    slider_mass: float = 0.0005
    # Torsional stiffness of a fixed suction cup, N·m/rad: limb_stiffness * f_o / f_a, the
    # authors' weights (10 / 5.9), so the quasi-static equilibrium minimises their objective.
    foot_twist_stiffness: float = 0.05 * 10.0 / 5.9
    # Torsional damping of a fixed suction cup, N·m·s/rad.
    foot_twist_damping: float = 0.004
    # Coulomb friction of the robot's underside (sliding silicone). Not from the paper.
    friction: float = 0.3
    # Point-contact stiffness of the contact spheres, N/m.
    contact_stiffness: float = 5000.0
    # Pneumatic chambers (6: one per leg, two in the torso).
    chamber: ChamberParams = dataclasses.field(default_factory=ChamberParams)

    @property
    def contact_radius(self) -> float:
        """Radius of the contact spheres under every segment = half the thickness, m."""
        return 0.5 * self.thickness

    def segments(self, limb: str) -> int:
        return self.torso_segments if limb == "torso" else self.leg_segments

    def total_mass(self) -> float:
        return (
            4 * self.leg_mass
            + self.torso_mass
            + 2 * self.node_mass
            + 4 * self.foot_mass
            + 6 * self.slider_mass  # four legs, two torso halves
        )


# Colours of the paper's figures: FL red, FR dark red, torso orange, HL blue, HR dark blue.
LIMB_COLORS = {
    "front_left": (0.90, 0.15, 0.15, 1.0),
    "front_right": (0.55, 0.05, 0.05, 1.0),
    "torso": (0.98, 0.55, 0.10, 1.0),
    "hind_left": (0.20, 0.40, 0.95, 1.0),
    "hind_right": (0.05, 0.10, 0.50, 1.0),
}
FOOT_COLOR = (0.75, 0.75, 0.75, 1.0)


# ---------------------------------------------------------------------------------------------
# Names: bodies and joints of the generated model.


def TorsoHalf(params: GeckoParams) -> int:
    """Segments on each side of the torso's middle segment."""
    if params.torso_segments % 2 != 1 or params.torso_segments < 1:
        raise ValueError(f"torso_segments must be odd, got {params.torso_segments}")
    return (params.torso_segments - 1) // 2


def LimbJoints(params: GeckoParams) -> dict[str, list[tuple[str, float]]]:
    """limb -> [(joint name, multiplier)] where joint angle = multiplier * alpha_limb.

    The multipliers are the segment-chain ratios (half joints at the ends) with the bending sign
    of each limb (see drakebots.gecko.geometry's conventions).
    """
    joints = {}
    for leg in LEGS:
        n = params.leg_segments
        ratios = SegmentJointRatios(n)
        joints[leg] = [(f"{leg}_joint_{k}", LEG_BEND_SIGN[leg] * ratios[k]) for k in range(n + 1)]
    h = TorsoHalf(params)
    n = params.torso_segments
    torso = []
    # Going forward the torso turns clockwise by alpha_2 (front joints -alpha/N); the hind chain
    # points backward and turns counter-clockwise (+alpha/N). End joints are half joints.
    for i in range(1, h + 1):
        torso.append((f"torso_front_joint_{i}", -1.0 / n))
    torso.append(("torso_front_tip", -0.5 / n))
    for i in range(1, h + 1):
        torso.append((f"torso_hind_joint_{i}", 1.0 / n))
    torso.append(("torso_hind_tip", 0.5 / n))
    if h == 0:  # a one-segment torso: the two half joints carry the bending
        torso = [("torso_front_tip", -0.5), ("torso_hind_tip", 0.5)]
    joints["torso"] = torso
    return {limb: joints[limb] for limb in LIMBS}


def MasterJoint(params: GeckoParams, limb: str) -> tuple[str, float]:
    """(joint name, multiplier) of the limb's actuated joint: its first full joint (or the front
    half joint of a one-segment torso)."""
    joints = LimbJoints(params)[limb]
    if limb == "torso":
        return joints[0]
    return joints[1] if len(joints) > 2 else joints[0]


def FootBodyName(foot: str) -> str:
    return f"{foot}_foot"


def StretchJointName(limb: str) -> str:
    """The prismatic joint that lengthens a leg (along its middle segment, i.e. its chord), or
    half the torso ("torso_front", "torso_hind")."""
    return f"{limb}_stretch"


def StretchSliderName(leg: str) -> str:
    return f"{leg}_slider"


def ActuatorName(limb: str, params: GeckoParams | None = None) -> str:
    """Drake's SDF parser names a joint's actuator after the joint: the limb's master joint."""
    return MasterJoint(params or GeckoParams(), limb)[0]


# ---------------------------------------------------------------------------------------------
# SDF generation.


def _Inertial(mass: float, size: tuple[float, float, float], center_x: float) -> str:
    """A uniform box's inertial element, centred at x = center_x of the link frame."""
    a, b, c = size
    ixx = mass * (b * b + c * c) / 12.0
    iyy = mass * (a * a + c * c) / 12.0
    izz = mass * (a * a + b * b) / 12.0
    return (
        f"<inertial><pose>{center_x:.9g} 0 0 0 0 0</pose><mass>{mass:.9g}</mass>"
        f"<inertia><ixx>{ixx:.9g}</ixx><iyy>{iyy:.9g}</iyy><izz>{izz:.9g}</izz>"
        "<ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia></inertial>"
    )


def _Link(
    name: str,
    pose: tuple[float, float, float],
    *,
    mass: float,
    box: tuple[float, float, float] | None,
    center_x: float,
    color,
    params: GeckoParams,
    cylinder: float | None = None,
    collision: bool = True,
) -> str:
    x, y, yaw = pose
    r = params.contact_radius
    parts = [f'<link name="{name}"><pose>{x:.9g} {y:.9g} 0 0 0 {yaw:.12g}</pose>']
    if box is not None:
        parts.append(_Inertial(mass, box, center_x))
    else:
        i = params.end_inertia  # feet and connectors: a thin disc (see GeckoParams.end_inertia)
        parts.append(
            f"<inertial><pose>{center_x:.9g} 0 0 0 0 0</pose><mass>{mass:.9g}</mass>"
            f"<inertia><ixx>{0.5 * i:.9g}</ixx><iyy>{0.5 * i:.9g}</iyy><izz>{i:.9g}</izz>"
            "<ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia></inertial>"
        )
    rgba = " ".join(f"{c:.3g}" for c in color)
    if cylinder is not None:
        parts.append(
            f'<visual name="{name}_visual"><pose>{center_x:.9g} 0 {-0.3 * r:.9g} 0 0 0</pose>'
            f"<geometry><cylinder><radius>{cylinder:.9g}</radius><length>{1.4 * r:.9g}</length>"
            f"</cylinder></geometry><material><diffuse>{rgba}</diffuse></material></visual>"
        )
    if box is not None:
        parts.append(
            f'<visual name="{name}_visual"><pose>{center_x:.9g} 0 0 0 0 0</pose><geometry><box>'
            f"<size>{box[0]:.9g} {box[1]:.9g} {box[2]:.9g}</size></box></geometry>"
            f"<material><diffuse>{rgba}</diffuse></material></visual>"
        )
    if collision:
        parts.append(
            f'<collision name="{name}_contact"><pose>{center_x:.9g} 0 0 0 0 0</pose>'
            f"<geometry><sphere><radius>{r:.9g}</radius></sphere></geometry>"
            "<drake:proximity_properties>"
            f"<drake:point_contact_stiffness>{params.contact_stiffness:.9g}"
            "</drake:point_contact_stiffness>"
            f"<drake:mu_dynamic>{params.friction:.9g}</drake:mu_dynamic>"
            f"<drake:mu_static>{params.friction:.9g}</drake:mu_static>"
            "</drake:proximity_properties></collision>"
        )
    parts.append("</link>")
    return "".join(parts)


def _Joint(
    name: str,
    parent: str,
    child: str,
    *,
    mimic: tuple[str, float] | None = None,
    stiffness: float = 0.0,
    damping: float = 0.0,
    effort: float = 0.0,
    kind: str = "revolute",
    limits: tuple[float, float] = (-3.2, 3.2),
) -> str:
    extra = ""
    if mimic is not None:
        extra = f'<drake:mimic joint="{mimic[0]}" multiplier="{mimic[1]:.12g}" offset="0"/>'
    dynamics = ""
    if stiffness or damping:
        dynamics = (
            f"<dynamics><damping>{damping:.9g}</damping>"
            f"<spring_stiffness>{stiffness:.9g}</spring_stiffness>"
            "<spring_reference>0</spring_reference></dynamics>"
        )
    axis = "0 0 1" if kind == "revolute" else "1 0 0"
    return (
        f'<joint name="{name}" type="{kind}">{extra}<parent>{parent}</parent>'
        f"<child>{child}</child><axis><xyz>{axis}</xyz>{dynamics}"
        f"<limit><lower>{limits[0]:.9g}</lower><upper>{limits[1]:.9g}</upper>"
        f"<effort>{effort:.9g}</effort></limit></axis></joint>"
    )


def MakeGeckoSdf(params: GeckoParams | None = None) -> str:
    """The SDFormat text of the gecko (zero configuration: straight limbs, legs perpendicular to
    the torso; the home pose is set by AddGecko)."""
    params = params or GeckoParams()
    dims = params.dimensions
    h = TorsoHalf(params)
    nt, nl = params.torso_segments, params.leg_segments
    st = dims.torso_length / nt
    sl = dims.leg_length / nl
    th = params.thickness
    links, joints = [], []
    torso_color = LIMB_COLORS["torso"]
    m_t = params.torso_mass / nt
    links.append(
        _Link(
            "torso",
            (0.0, 0.0, 0.0),
            mass=m_t,
            box=(st, params.torso_width, th),
            center_x=0.0,
            color=torso_color,
            params=params,
        )
    )
    # Effort limit of each limb's actuator (on its master joint): 1.5 x the chamber moment at the
    # largest calibrated pressure, times the joint's leverage 1/|ratio| (alpha = joint / ratio).
    effort = 1.5 * float(params.chamber.Moment(params.chamber.max_pressure))
    multipliers = dict(LimbJoints(params)["torso"])
    master, master_ratio = MasterJoint(params, "torso")
    k_master = params.limb_stiffness / master_ratio**2
    d_master = params.limb_damping / master_ratio**2

    def mimic(joint_name, limb_multipliers, master_name, ratio):
        if joint_name == master_name:
            return None
        return (master_name, limb_multipliers[joint_name] / ratio)

    for direction, sign, yaw in (("front", 1.0, 0.0), ("hind", -1.0, math.pi)):
        parent = "torso"
        for i in range(1, h + 1):
            name = f"torso_{direction}_{i}"
            x = sign * (0.5 * st + (i - 1) * st)
            links.append(
                _Link(
                    name,
                    (x, 0.0, yaw),
                    mass=m_t,
                    box=(st, params.torso_width, th),
                    center_x=0.5 * st,
                    color=torso_color,
                    params=params,
                )
            )
            joint = f"torso_{direction}_joint_{i}"
            joints.append(
                _Joint(
                    joint,
                    parent,
                    name,
                    mimic=mimic(joint, multipliers, master, master_ratio),
                    stiffness=k_master if joint == master else 0.0,
                    damping=d_master if joint == master else 0.0,
                    effort=effort / abs(master_ratio) if joint == master else 0.0,
                )
            )
            parent = name
            if i == (h + 1) // 2:
                # The torso's stretch joints, one per half (the hind one coupled to the front
                # one): each slides along a segment of its half, close to that half's chord.
                slider = StretchSliderName(f"torso_{direction}")
                links.append(
                    _Link(
                        slider,
                        (x + sign * st, 0.0, yaw),
                        mass=params.slider_mass,
                        box=(0.2 * st, params.torso_width, th),
                        center_x=-0.1 * st,
                        color=torso_color,
                        params=params,
                        collision=False,
                    )
                )
                limit = 0.5 * params.leg_stretch_limit * dims.torso_length
                joints.append(
                    _Joint(
                        StretchJointName(f"torso_{direction}"),
                        parent,
                        slider,
                        mimic=None if direction == "front" else ("torso_front_stretch", 1.0),
                        stiffness=params.torso_axial_stiffness,
                        damping=params.torso_axial_damping,
                        kind="prismatic",
                        limits=(-limit, limit),
                    )
                )
                parent = slider
        node = "shoulder" if direction == "front" else "hip"
        links.append(
            _Link(
                node,
                (sign * 0.5 * dims.torso_length, 0.0, 0.0),
                mass=params.node_mass,
                box=None,
                center_x=0.0,
                color=torso_color,
                params=params,
            )
        )
        joint = f"torso_{direction}_tip"
        joints.append(
            _Joint(
                joint,
                parent,
                node,
                mimic=mimic(joint, multipliers, master, master_ratio),
                stiffness=k_master if joint == master else 0.0,
                damping=d_master if joint == master else 0.0,
                effort=effort / abs(master_ratio) if joint == master else 0.0,
            )
        )
    for leg in LEGS:
        node = "shoulder" if leg.startswith("front") else "hip"
        x0 = 0.5 * dims.torso_length * (1.0 if node == "shoulder" else -1.0)
        side = 1.0 if leg.endswith("left") else -1.0
        yaw = side * 0.5 * math.pi
        leg_multipliers = dict(LimbJoints(params)[leg])
        master, master_ratio = MasterJoint(params, leg)
        k_master = params.limb_stiffness / master_ratio**2
        d_master = params.limb_damping / master_ratio**2
        parent = node
        for k in range(nl + 1):
            child = f"{leg}_seg_{k}" if k < nl else FootBodyName(leg)
            if k < nl:
                links.append(
                    _Link(
                        child,
                        (x0, side * k * sl, yaw),
                        mass=params.leg_mass / nl,
                        box=(sl, params.leg_width, th),
                        center_x=0.5 * sl,
                        color=LIMB_COLORS[leg],
                        params=params,
                    )
                )
            else:
                links.append(
                    _Link(
                        child,
                        (x0, side * dims.leg_length, yaw),
                        mass=params.foot_mass,
                        box=None,
                        center_x=0.0,
                        color=FOOT_COLOR,
                        params=params,
                        cylinder=params.foot_radius,
                    )
                )
            joint = f"{leg}_joint_{k}"
            joints.append(
                _Joint(
                    joint,
                    parent,
                    child,
                    mimic=mimic(joint, leg_multipliers, master, master_ratio),
                    stiffness=k_master if joint == master else 0.0,
                    damping=d_master if joint == master else 0.0,
                    effort=effort / abs(master_ratio) if joint == master else 0.0,
                )
            )
            parent = child
            if k == nl // 2:
                # The stretch joint: the middle segment points along the arc's chord (midpoint
                # rule, N odd), so sliding along it moves the foot along the chord without turning
                # it, as a change of the arc's length does (soft limbs stretch; without it the
                # fixed chain drifts and snaps through in turning gaits, see the README).
                slider = StretchSliderName(leg)
                links.append(
                    _Link(
                        slider,
                        (x0, side * (k + 1) * sl, yaw),
                        mass=params.slider_mass,
                        box=(0.2 * sl, params.leg_width, th),
                        center_x=-0.1 * sl,
                        color=LIMB_COLORS[leg],
                        params=params,
                        collision=False,
                    )
                )
                limit = params.leg_stretch_limit * dims.leg_length
                joints.append(
                    _Joint(
                        StretchJointName(leg),
                        parent,
                        slider,
                        stiffness=params.leg_axial_stiffness,
                        damping=params.leg_axial_damping,
                        kind="prismatic",
                        limits=(-limit, limit),
                    )
                )
                parent = slider
    members = "".join(
        f"<drake:member>{name}</drake:member>"
        for name in _AllLinkNames(params)  # robot self-contact is not modelled
    )
    group = (
        f'<drake:collision_filter_group name="gecko_body">{members}'
        "<drake:ignored_collision_filter_group>gecko_body</drake:ignored_collision_filter_group>"
        "</drake:collision_filter_group>"
    )
    header = (
        '<?xml version="1.0"?>\n'
        "<!-- Generated by scripts/generate_gecko.py (drakebots.gecko.model.MakeGeckoSdf); "
        "do not edit by hand. -->\n"
        '<sdf version="1.9" xmlns:drake="http://drake.mit.edu">\n'
        '<model name="gecko">\n'
    )
    body = "\n".join(links + joints + [group])
    import xml.dom.minidom

    text = header + body + "\n</model>\n</sdf>\n"
    pretty = xml.dom.minidom.parseString(text).toprettyxml(indent="  ")
    lines = [line for line in pretty.splitlines() if line.strip()]
    # minidom drops the comment's position after the declaration; keep the header comment.
    return "\n".join(lines) + "\n"


def _AllLinkNames(params: GeckoParams) -> list[str]:
    h = TorsoHalf(params)
    names = ["torso", "shoulder", "hip"]
    names += [f"torso_{d}_{i}" for d in ("front", "hind") for i in range(1, h + 1)]
    for leg in LEGS:
        names += [f"{leg}_seg_{k}" for k in range(params.leg_segments)] + [FootBodyName(leg)]
    return names


def ModelPath() -> Path:
    from drakebots.models import ModelsDirectory

    return ModelsDirectory() / "gecko" / "gecko.sdf"


# ---------------------------------------------------------------------------------------------
# Adding the robot to a plant; limb angles <-> joint positions.


def AddGecko(
    plant: MultibodyPlant,
    *,
    alpha_deg=None,
    pose=(0.0, 0.0, 0.0),
    params: GeckoParams | None = None,
) -> ModelInstanceIndex:
    """Adds the gecko (models/gecko/gecko.sdf) with a pose as the plant's default state.

    Args:
        plant: a MultibodyPlant, not finalized.
        alpha_deg: the five bending angles of the default pose, deg (default: the home pose,
            the straight gait at q1 = +90 deg).
        pose: (x, y, eps) of the torso midpoint, m, m, rad.
        params: only for a model generated with non-default parameters (the file must match).

    Returns:
        The model instance.
    """
    params = params or GeckoParams()
    parser = Parser(plant)
    ConfigureParser(parser)
    if params == GeckoParams():
        (instance,) = parser.AddModels(url=MODEL_URL)
    else:
        (instance,) = parser.AddModelsFromString(MakeGeckoSdf(params), "sdf")
    x, y, eps = pose
    plant.SetDefaultFloatingBaseBodyPose(
        plant.GetBodyByName("torso", instance),
        RigidTransform(RotationMatrix.MakeZRotation(eps), [x, y, params.contact_radius]),
    )
    alpha = np.radians(HomeAnglesDeg() if alpha_deg is None else np.asarray(alpha_deg, float))
    for limb, joints in LimbJoints(params).items():
        for name, multiplier in joints:
            plant.GetJointByName(name, instance).set_default_angle(
                multiplier * alpha[LIMBS.index(limb)]
            )
    return instance


def LimbAngleSelector(plant: MultibodyPlant, instance, params: GeckoParams) -> np.ndarray:
    """(5, nq_instance) matrix S with alpha = S q (q: the instance's positions)."""
    nq = plant.num_positions(instance)
    start = min(
        plant.get_joint(j).position_start()
        for j in plant.GetJointIndices(instance)
        if plant.get_joint(j).num_positions() > 0
    )
    S = np.zeros((5, nq))
    for i, limb in enumerate(LIMBS):
        name, ratio = MasterJoint(params, limb)
        joint = plant.GetJointByName(name, instance)
        S[i, joint.position_start() - start] = 1.0 / ratio
    return S


def LimbMomentToActuation(plant: MultibodyPlant, instance, params: GeckoParams) -> np.ndarray:
    """(nu_instance, 5) matrix B with master-joint torques = B M (M: limb moments, N·m)."""
    B = np.zeros((plant.num_actuated_dofs(instance), 5))
    for row, index in enumerate(plant.GetJointActuatorIndices(instance)):
        actuator = plant.get_joint_actuator(index)
        for i, limb in enumerate(LIMBS):
            if actuator.name() == ActuatorName(limb):
                _, ratio = MasterJoint(params, limb)
                # Virtual work: M d(alpha) = M d(joint) / ratio.
                B[row, i] = 1.0 / ratio
    return B


def SetGeckoPose(
    plant: MultibodyPlant, context, instance, *, alpha, pose, params: GeckoParams | None = None
) -> None:
    """Sets the limb angles (rad) and the torso-midpoint pose (x, y, eps) in a plant context."""
    params = params or GeckoParams()
    for limb, joints in LimbJoints(params).items():
        for name, multiplier in joints:
            plant.GetJointByName(name, instance).set_angle(
                context, multiplier * float(alpha[LIMBS.index(limb)])
            )
    for limb in (*LEGS, "torso_front", "torso_hind"):
        plant.GetJointByName(StretchJointName(limb), instance).set_translation(context, 0.0)
    x, y, eps = pose
    plant.SetFreeBodyPose(
        context,
        plant.GetBodyByName("torso", instance),
        RigidTransform(RotationMatrix.MakeZRotation(eps), [x, y, params.contact_radius]),
    )


def PlanarPoseOf(X_WB: RigidTransform) -> np.ndarray:
    """(x, y, yaw) of a body pose lying (nearly) flat."""
    R = X_WB.rotation().matrix()
    p = X_WB.translation()
    return np.array([p[0], p[1], math.atan2(R[1, 0], R[0, 0])])


# ---------------------------------------------------------------------------------------------
# Suction feet: anchors on locked carriages, welds toggled at run time.


@dataclasses.dataclass
class SuctionAnchors:
    """Handles of the four suction anchors (FEET order)."""

    instance: ModelInstanceIndex
    x_joints: list
    y_joints: list
    twist_joints: list
    twist_springs: list
    constraint_ids: list
    foot_bodies: list


def AddSuctionAnchors(
    plant: MultibodyPlant, instance: ModelInstanceIndex, params: GeckoParams | None = None
) -> SuctionAnchors:
    """Adds a suction anchor per foot (model instance "suction") and its weld constraint.

    Each anchor hangs from the world on a carriage: prismatic x, prismatic y (both kept locked)
    and a revolute twist joint with the cup's torsional spring (locked while the foot is free).
    The weld constraint anchor <-> foot is added inactive; `SuctionFeet` toggles it. Needs a
    discrete SAP plant (weld constraints); for other plants only the bodies are added.
    """
    params = params or GeckoParams()
    suction = plant.AddModelInstance("suction")
    tiny = SpatialInertia(1e-3, np.zeros(3), UnitInertia.SolidSphere(0.005))
    x_joints, y_joints, twist_joints, springs, ids, feet = [], [], [], [], [], []
    use_constraints = plant.time_step() > 0.0
    for foot in FEET:
        carriage_x = plant.AddRigidBody(f"{foot}_carriage_x", suction, tiny)
        carriage_y = plant.AddRigidBody(f"{foot}_carriage_y", suction, tiny)
        anchor = plant.AddRigidBody(f"{foot}_anchor", suction, tiny)
        jx = plant.AddJoint(
            PrismaticJoint(
                f"{foot}_anchor_x",
                plant.world_frame(),
                carriage_x.body_frame(),
                [1.0, 0.0, 0.0],
            )
        )
        jy = plant.AddJoint(
            PrismaticJoint(
                f"{foot}_anchor_y", carriage_x.body_frame(), carriage_y.body_frame(), [0, 1, 0]
            )
        )
        X_height = RigidTransform([0.0, 0.0, params.contact_radius])
        frame_on_carriage = plant.AddFrame(
            FixedOffsetFrame(f"{foot}_anchor_height", carriage_y.body_frame(), X_height)
        )
        jt = plant.AddJoint(
            RevoluteJoint(
                f"{foot}_anchor_twist",
                frame_on_carriage,
                anchor.body_frame(),
                [0.0, 0.0, 1.0],
                params.foot_twist_damping,
            )
        )
        spring = plant.AddForceElement(RevoluteSpring(jt, 0.0, params.foot_twist_stiffness))
        foot_body = plant.GetBodyByName(FootBodyName(foot), instance)
        if use_constraints:
            ids.append(
                plant.AddWeldConstraint(anchor, RigidTransform(), foot_body, RigidTransform())
            )
        x_joints.append(jx)
        y_joints.append(jy)
        twist_joints.append(jt)
        springs.append(spring)
        feet.append(foot_body)
    return SuctionAnchors(suction, x_joints, y_joints, twist_joints, springs, ids, feet)


class SuctionFeet:
    """Fixes and releases the suction feet in a plant context (between simulator steps).

    A fixed foot is welded to its anchor, which sits on the ground where the foot was when it was
    fixed; the cup's twist about the vertical follows the torsional spring (nominal angle: the
    foot's yaw at fixation). Call `Initialize` once, then `Apply(plant_context, fixed)` whenever
    the fixation command changes.
    """

    def __init__(self, plant: MultibodyPlant, anchors: SuctionAnchors):
        self.plant = plant
        self.anchors = anchors
        self.fixed = np.zeros(4, dtype=bool)

    def Initialize(self, context, fixed) -> None:
        for j in range(4):
            self.anchors.x_joints[j].Lock(context)
            self.anchors.y_joints[j].Lock(context)
            self.anchors.twist_joints[j].Lock(context)
            self.plant.SetConstraintActiveStatus(context, self.anchors.constraint_ids[j], False)
        self.fixed[:] = False
        self.Apply(context, fixed)

    def Apply(self, context, fixed) -> None:
        fixed = np.asarray(fixed, dtype=bool)
        for j in range(4):
            if fixed[j] and not self.fixed[j]:
                self._Fix(context, j)
            elif not fixed[j] and self.fixed[j]:
                self._Release(context, j)
        self.fixed = fixed.copy()

    def _Fix(self, context, j: int) -> None:
        a = self.anchors
        x, y, yaw = PlanarPoseOf(self.plant.EvalBodyPoseInWorld(context, a.foot_bodies[j]))
        a.x_joints[j].set_translation(context, x)
        a.y_joints[j].set_translation(context, y)
        a.twist_joints[j].set_angle(context, yaw)
        a.twist_springs[j].SetNominalAngle(context, yaw)
        a.twist_joints[j].Unlock(context)
        a.twist_joints[j].set_angular_rate(context, 0.0)
        self.plant.SetConstraintActiveStatus(context, a.constraint_ids[j], True)

    def _Release(self, context, j: int) -> None:
        a = self.anchors
        self.plant.SetConstraintActiveStatus(context, a.constraint_ids[j], False)
        a.twist_joints[j].Lock(context)


# ---------------------------------------------------------------------------------------------
# The registry's Robot.


@dataclasses.dataclass
class Gecko(Robot):
    """The gecko soft walker (SI units)."""

    params: GeckoParams = dataclasses.field(default_factory=GeckoParams)

    def AddTo(self, plant: MultibodyPlant) -> ModelInstanceIndex:
        return AddGecko(plant, params=self.params)

    def ExtraInfo(self, plant, context) -> dict:
        p = self.params
        dims = p.dimensions
        max_leg = math.radians(157.5)
        max_torso = math.radians(135.0)
        return {
            "limbs": list(LIMBS),
            "limb_lengths": dict(zip(LIMBS, dims.lengths().tolist(), strict=True)),
            "segments": {"leg": p.leg_segments, "torso": p.torso_segments},
            "chain_end_error_at_max_angle": {
                "leg": float(ChainEndError(dims.leg_length, max_leg, p.leg_segments)),
                "torso": float(ChainEndError(dims.torso_length, max_torso, p.torso_segments)),
            },
            "coupler_constraints": sum(len(j) - 1 for j in LimbJoints(p).values()) + 1,
            "stretch_joints": [StretchJointName(n) for n in (*LEGS, "torso_front", "torso_hind")],
            "suction": "weld constraints to anchors, toggled at run time (AddSuctionAnchors)",
            "feet": list(FEET),
            "foot_limbs": {foot: LIMBS[FOOT_LIMB[foot]] for foot in FEET},
            "home_angles_deg": HomeAnglesDeg().tolist(),
            "limb_stiffness": p.limb_stiffness,
            "foot_twist_stiffness": p.foot_twist_stiffness,
            "chambers": 6,
        }


def MakeRobot(name: str) -> Gecko:
    """Registry factory (drakebots.robots.GetRobot)."""
    if name != "gecko":
        raise KeyError(name)
    params = GeckoParams()
    return Gecko(
        name="gecko",
        family="gecko",
        description="gecko-inspired pneumatic soft walker: 5 bending limbs, 4 suction feet",
        base_body="torso",
        nominal_base_height=params.contact_radius,
        params=params,
    )


def SdfText() -> str:
    """The generated SDF (what scripts/generate_gecko.py writes)."""
    return MakeGeckoSdf(GeckoParams())


def SceneText(params: GeckoParams | None = None) -> str:
    """scene.dmd.yaml: the gecko in its home pose, lying on the ground (what
    scripts/generate_gecko.py writes). The ground is the simulation's (drakebots.systems.ground)."""
    params = params or GeckoParams()
    alpha = np.radians(HomeAnglesDeg())
    lines = [
        "# Generated by scripts/generate_gecko.py; do not edit by hand.",
        "# Load with pydrake.multibody.parsing.LoadModelDirectives after",
        "# drakebots.models.ConfigureParser. The home pose is the straight-gait pose at",
        "# q1 = +90 deg (paper Eq. 1): bending angles [0, 90, 90, 0, 90] deg (FL, FR, torso, HL,",
        "# HR); the base (the torso's middle segment) lies on the ground with its centre at the",
        "# contact radius.",
        "directives:",
        "- add_model:",
        "    name: gecko",
        f"    file: {MODEL_URL}",
        "    default_joint_positions:",
    ]
    for limb, joints in LimbJoints(params).items():
        for name, multiplier in joints:
            value = multiplier * alpha[LIMBS.index(limb)]
            lines.append(f"      {name}: [{value:.12g}]")
    lines += [
        "    default_free_body_pose:",
        "      torso:",
        f"        translation: [0, 0, {params.contact_radius:.9g}]",
        "        rotation: !Rpy { deg: [0, 0, 0] }",
    ]
    return "\n".join(lines) + "\n"
