"""HAMR-VI's model description: the facts of its mechanism and the generator of its SDFormat file.

The Harvard Ambulatory MicroRobot HAMR-VI (Doshi et al., hamr-contact-implicit.txt, section II-B)
is a 1.475 g quadruped whose four legs are each driven by two piezoelectric bending actuators
through a spherical five-bar (SFB) transmission: a *swing* chain S1-S4 and a *lift* chain L1-L4
of carbon-fibre links joined by polyimide flexures, modelled as pin joints with torsional springs
and dampers (the pseudo-rigid-body approximation). Per leg there are 2 prismatic actuator joints
(the actuator tip deflections) and 6 revolute flexures in the tree, and 3 more flexures closing
the loops (`LOOP_HINGES`): 8 coordinates and 6 loop-closure constraint rows per leg.

The numbers in the tables below are facts read off the original authors' model (URDF
`HAMR_scaledV2_TYM.urdf`, HarvardAgileRoboticsLab/drake branch Variational-Hamr, commit
5eb753d92; see models/hamr_vi/README.md for the provenance of each group): link masses, centres of
mass and inertias, joint origins and axes, flexure damping and stiffness, actuator springs, the
loop hinge points and the foot points. Everything else here is this project's own: names, the
layout, the visual geometry (plates, bars, cylinders; no meshes), the 6-joint floating base and
the contact spheres.

`MakeHamrSdf()` writes models/hamr_vi/hamr_vi.sdf from these tables (run
`python scripts/generate_hamr_vi.py`); a test checks that the committed file is up to date.

Units: millimetre, millisecond, gram (so force in N, torque in N·mm, linear stiffness in N/mm,
torsional stiffness in N·mm/rad, linear damping in N·ms/mm, torsional damping in N·mm·ms/rad).
Frames: x forward, y left, z up; every link frame is parallel to the chassis frame when all
joint coordinates are zero, the configuration in which the authors' CAD closes every loop.
"""

import dataclasses
import math

import numpy as np

LEGS = ("FL", "RL", "FR", "RR")
"""Leg prefixes: front-left, rear-left, front-right, rear-right (the reference's order)."""

FLEXURES = ("s1", "s2", "fb1", "l1", "l2", "fb3")
"""Tree flexure joints of each leg (prefix with the leg, e.g. "FL_s1")."""

LOOP_FLEXURES = ("s3", "l3", "fb2")
"""Loop-closing flexures of each leg, modelled as constraints (see `LOOP_HINGES`)."""

BASE_JOINTS = ("base_x", "base_y", "base_z", "base_yaw", "base_pitch", "base_roll")
"""The floating base, outermost first: three prismatic joints along world x, y, z, then
revolute joints about z (yaw), y (pitch) and x (roll), so that R_WB = Rz(yaw) Ry(pitch) Rx(roll)
(Drake's RollPitchYaw convention) and the generalized velocities are the time derivatives of the
positions (v = q̇), as the paper's Lagrangian dynamics (Eq. 1) and variational integrator assume."""

FOOT_POINT_LEFT = (0.0, 7.58, -11.35)
"""Foot contact point of the left legs in their L4 link frame, mm (right legs: y negated)."""

FOOT_SPHERE_RADIUS = 0.05
"""Radius of the contact sphere at each foot, mm. Not from the reference (it uses a point): the
sphere's centre sits this far above the foot point along the L4 z axis, so its lowest point is the
foot point whenever L4 is level (as in the home pose)."""

ACTUATOR_FORCE_LIMITS = {"swing": 0.28, "lift": 0.36}
"""Bounds on the actuator force, N: the authors' trajectory optimization limits (±0.28 N swing,
±0.36 N lift), written as the effort limits of the actuators."""

JOINT_LIMIT = math.pi / 4
"""Flexure angle limit, rad: the paper's conservative maximum bend angle (section III)."""

ACTUATOR_TRAVEL = 0.3
"""Actuator tip deflection limit, mm (the reference's prismatic joint limits)."""


@dataclasses.dataclass(frozen=True)
class LinkFacts:
    """Inertial facts of a link.

    Attributes:
        mass: g.
        com: centre of mass in the link frame, mm.
        inertia: (ixx, iyy, izz, ixy, ixz, iyz) about the centre of mass, link-frame axes, g·mm².
    """

    mass: float
    com: tuple
    inertia: tuple


@dataclasses.dataclass(frozen=True)
class JointFacts:
    """A tree joint: an actuator tip (prismatic) or a flexure (revolute).

    Attributes:
        name: "<leg>_swing", "<leg>_lift" or "<leg>_<flexure>".
        kind: "prismatic" or "revolute".
        parent, child: link names.
        origin: joint frame origin in the parent link frame, mm (joint frame parallel to it).
        axis: unit axis in the joint frame.
        damping: viscous damping, N·ms/mm (prismatic) or N·mm·ms/rad (revolute).
        stiffness: spring stiffness about the zero position, N/mm or N·mm/rad.
    """

    name: str
    kind: str
    parent: str
    child: str
    origin: tuple
    axis: tuple
    damping: float
    stiffness: float


@dataclasses.dataclass(frozen=True)
class HingeFacts:
    """A loop-closing flexure: a hinge between point P on link A and point Q on link B.

    Closed when P and Q coincide; the hinge axis is fixed in A. The loop constraint keeps the two
    components of p_PQ orthogonal to the axis (paper Eq. 2; the reference's `valid_loops`).

    Attributes:
        name: "<leg>_s3", "<leg>_l3" or "<leg>_fb2".
        body_A, p_AP: link A and the hinge point in its frame, mm.
        body_B, p_BQ: link B and the hinge point in its frame, mm.
        axis_A: unit hinge axis in link A's frame.
    """

    name: str
    body_A: str  # noqa: N815 (monogram notation)
    p_AP: tuple  # noqa: N815
    body_B: str  # noqa: N815
    p_BQ: tuple  # noqa: N815
    axis_A: tuple  # noqa: N815


# Links, joints and hinges are the reference's, renamed: chassis = Chassis, FL_S1 = FLS1,
# FL_swing = FLqsact, FL_lift = FLqlact, FL_s1 = FLqs1, FL_fb1 = FLqfb1, FL_l1 = FLql1, and so on.

SURFACE_FRICTION = {"teflon": 0.29, "cardstock": 0.51, "sandpaper": 1.02}
"""Coefficients of static friction between HAMR's feet and the paper's three running surfaces
(section II-C: PTFE 0.29 ± 0.03, cardstock 0.51 ± 0.07, 1200-grit sandpaper 1.02 ± 0.20)."""

DEFAULT_FRICTION = SURFACE_FRICTION["cardstock"]
"""Friction written into the model file's foot geometry (AddHamr(surface=...) replaces it)."""

FOOT_CONTACT_STIFFNESS = 10.0
"""Point-contact stiffness of a foot, N/mm. Not from the paper (its contact model is rigid,
Eq. 7): stiff enough that the standing weight (3.6 mN per foot) sinks a foot by under 1 µm."""

FOOT_CONTACT_DISSIPATION = 1.0
"""Hunt-Crossley dissipation of a foot contact, ms/mm (= s/m). Not from the paper; not tuned."""

LINKS = {
    "chassis": LinkFacts(
        1.2066,
        (0.0, 0.0, -0.379657560961688),
        (49.0722, 68.1039, 99.7537, 0.00087197, 0.2372, -0.0032),
    ),
    "FL_S1": LinkFacts(
        0.00089854, (0.0, 0.0, 0.0), (0.00040531, 0.00018583, 0.0002281, 0.0, 0.0, -1.1771e-05)
    ),
    "FL_S2": LinkFacts(
        0.0072648, (0.0, 3.8176, 1.3953), (0.03894, 0.008899, 0.030111, 0.0, 0.0, -0.0091382)
    ),
    "FL_S3": LinkFacts(
        0.003889,
        (0.70289, -0.086332, 0.10242),
        (0.0026158, 0.0047809, 0.0031897, -0.00057753, -0.00032642, -8.2188e-05),
    ),
    "FL_S4": LinkFacts(
        0.014269,
        (1.4605, 1.8371, 3.0882),
        (0.1206, 0.083598, 0.098829, 0.032785, -0.029892, 0.021738),
    ),
    "FL_L1": LinkFacts(
        0.0045174,
        (-0.2102, 2.5512, -0.057375),
        (0.010604, 0.0025227, 0.010642, 0.0009467, 0.00041692, -0.00026756),
    ),
    "FL_L2": LinkFacts(
        0.0016211, (0.0, 0.95907, 0.0), (0.0009976, 0.002561, 0.0035431, 0.0, 0.0, 0.0)
    ),
    "FL_L3": LinkFacts(
        0.0042308,
        (0.11652, -0.072167, -0.5651),
        (0.0024566, 0.0058098, 0.0044079, -9.4738e-05, 0.00031854, 0.00047676),
    ),
    "FL_L4": LinkFacts(
        0.030948,
        (-1.0887, 3.2212, -3.5924),
        (0.453879, 0.325606, 0.34257, 0.072379, -0.03886, -0.144657),
    ),
    "RL_S1": LinkFacts(
        0.00089854, (0.0, 0.0, 0.0), (0.00040531, 0.00018583, 0.0002281, 0.0, 0.0, -1.1771e-05)
    ),
    "RL_S2": LinkFacts(
        0.0072648, (0.0, 3.8176, 1.3953), (0.03894, 0.008899, 0.030111, 0.0, 0.0, -0.0091382)
    ),
    "RL_S3": LinkFacts(
        0.003889,
        (-0.70289, -0.086332, 0.10242),
        (0.0026158, 0.0047809, 0.0031897, 0.00057753, 0.00032642, -8.2188e-05),
    ),
    "RL_S4": LinkFacts(
        0.014269,
        (-1.4605, 1.8371, 3.0882),
        (0.1206, 0.083598, 0.098829, -0.032785, 0.029892, 0.021738),
    ),
    "RL_L1": LinkFacts(
        0.0034357,
        (0.27638, 1.552, 0.013427),
        (0.0038161, 0.0021069, 0.0041339, -0.00033823, -0.00035123, -0.00014678),
    ),
    "RL_L2": LinkFacts(
        0.0016211, (0.0, 0.95907, 0.0), (0.0009976, 0.002561, 0.0035431, 0.0, 0.0, 0.0)
    ),
    "RL_L3": LinkFacts(
        0.0042308,
        (-0.11652, -0.072167, -0.5651),
        (0.0024566, 0.0058098, 0.0044079, 9.4738e-05, -0.00031854, 0.00047676),
    ),
    "RL_L4": LinkFacts(
        0.030948,
        (1.0887, 3.2212, -3.5924),
        (0.479144, 0.352764, 0.34257, -0.071618, 0.048644, -0.155393),
    ),
    "FR_S1": LinkFacts(
        0.00089854, (0.0, 0.0, 0.0), (0.00040531, 0.00018583, 0.0002281, 0.0, 0.0, -1.1771e-05)
    ),
    "FR_S2": LinkFacts(
        0.0072648, (0.0, -3.8176, 1.3953), (0.03894, 0.008899, 0.030111, 0.0, 0.0, -0.0091382)
    ),
    "FR_S3": LinkFacts(
        0.003889,
        (0.70289, -0.086332, 0.10242),
        (0.0026158, 0.0047809, 0.0031897, -0.00057753, -0.00032642, -8.2188e-05),
    ),
    "FR_S4": LinkFacts(
        0.014269,
        (1.4605, -1.8371, 3.0882),
        (0.1206, 0.083598, 0.098829, 0.032785, -0.029892, 0.021738),
    ),
    "FR_L1": LinkFacts(
        0.0045174,
        (-0.2102, -2.5512, -0.057375),
        (0.010604, 0.0025227, 0.010642, 0.0009467, 0.00041692, -0.00026756),
    ),
    "FR_L2": LinkFacts(
        0.0016211, (0.0, -0.95907, 0.0), (0.0009976, 0.002561, 0.0035431, 0.0, 0.0, 0.0)
    ),
    "FR_L3": LinkFacts(
        0.0042308,
        (0.11652, 0.072167, -0.5651),
        (0.0024566, 0.0058098, 0.0044079, -9.4738e-05, 0.00031854, 0.00047676),
    ),
    "FR_L4": LinkFacts(
        0.030948,
        (-1.0887, -3.2212, -3.5924),
        (0.453879, 0.325606, 0.344463, 0.072379, -0.03886, 0.144657),
    ),
    "RR_S1": LinkFacts(
        0.00089854, (0.0, 0.0, 0.0), (0.00040531, 0.00018583, 0.0002281, 0.0, 0.0, -1.1771e-05)
    ),
    "RR_S2": LinkFacts(
        0.0072648, (0.0, -3.8176, 1.3953), (0.03894, 0.008899, 0.030111, 0.0, 0.0, -0.0091382)
    ),
    "RR_S3": LinkFacts(
        0.003889,
        (-0.70289, 0.086332, 0.10242),
        (0.0026158, 0.0047809, 0.0031897, 0.00057753, 0.00032642, -8.2188e-05),
    ),
    "RR_S4": LinkFacts(
        0.014269,
        (-1.4605, -1.8371, 3.0882),
        (0.1206, 0.083598, 0.098829, -0.032785, 0.029892, 0.021738),
    ),
    "RR_L1": LinkFacts(
        0.0034357,
        (0.27638, -1.552, 0.013427),
        (0.0038161, 0.0021069, 0.0041339, -0.00033823, -0.00035123, -0.00014678),
    ),
    "RR_L2": LinkFacts(
        0.0016211, (0.0, -0.95907, 0.0), (0.0009976, 0.002561, 0.0035431, 0.0, 0.0, 0.0)
    ),
    "RR_L3": LinkFacts(
        0.0042308,
        (-0.11652, 0.072167, -0.5651),
        (0.0024566, 0.0058098, 0.0044079, 9.4738e-05, -0.00031854, 0.00047676),
    ),
    "RR_L4": LinkFacts(
        0.030948,
        (1.0887, -3.2212, -3.5924),
        (0.479144, 0.352764, 0.342572, 0.071618, 0.048644, 0.155393),
    ),
}
JOINTS = [
    JointFacts(
        "FL_swing",
        "prismatic",
        "chassis",
        "FL_S1",
        (13.28465981539, 1.45668412658, -0.47825042921),
        (0.0, 1.0, 0.0),
        0.01,
        1.1556,
    ),
    JointFacts(
        "FL_s1",
        "revolute",
        "FL_S1",
        "FL_S2",
        (0.0, 0.77116874934, 0.12648211488),
        (0.0, 0.0, 1.0),
        0.02804,
        0.092,
    ),
    JointFacts(
        "FL_s2",
        "revolute",
        "FL_S2",
        "FL_S3",
        (0.0, 7.44214712409, 2.06176831433),
        (0.0, 0.0, 1.0),
        0.01657,
        0.034,
    ),
    JointFacts(
        "FL_fb1",
        "revolute",
        "FL_S3",
        "FL_S4",
        (1.52236486487, 0.12, -1.25),
        (1.0, 0.0, 0.0),
        0.01914,
        0.06,
    ),
    JointFacts(
        "FL_lift",
        "prismatic",
        "chassis",
        "FL_L1",
        (10.50465981539, 3.15177982148, -0.50168853124),
        (0.0, 1.0, 0.0),
        0.01,
        1.6946,
    ),
    JointFacts(
        "FL_l1",
        "revolute",
        "FL_L1",
        "FL_L2",
        (0.0, 4.57322017852, 0.38168853124),
        (1.0, 0.0, 0.0),
        0.06366,
        0.2,
    ),
    JointFacts(
        "FL_l2", "revolute", "FL_L2", "FL_L3", (0.0, 1.945, 0.0), (1.0, 0.0, 0.0), 0.01657, 0.034
    ),
    JointFacts(
        "FL_fb3", "revolute", "FL_L3", "FL_L4", (2.25, 0.12, -1.07), (0.0, 0.0, 1.0), 0.01657, 0.034
    ),
    JointFacts(
        "RL_swing",
        "prismatic",
        "chassis",
        "RL_S1",
        (-13.28465981539, 1.45668412658, -0.47825042921),
        (0.0, 1.0, 0.0),
        0.01,
        1.1556,
    ),
    JointFacts(
        "RL_s1",
        "revolute",
        "RL_S1",
        "RL_S2",
        (0.0, 0.77116874934, 0.12648211488),
        (0.0, 0.0, 1.0),
        0.02804,
        0.092,
    ),
    JointFacts(
        "RL_s2",
        "revolute",
        "RL_S2",
        "RL_S3",
        (0.0, 7.44214712409, 2.06176831433),
        (0.0, 0.0, 1.0),
        0.01657,
        0.034,
    ),
    JointFacts(
        "RL_fb1",
        "revolute",
        "RL_S3",
        "RL_S4",
        (-1.52236486487, 0.12, -1.25),
        (1.0, 0.0, 0.0),
        0.01914,
        0.06,
    ),
    JointFacts(
        "RL_lift",
        "prismatic",
        "chassis",
        "RL_L1",
        (-10.50465981539, 4.79177982148, -0.50168853124),
        (0.0, 1.0, 0.0),
        0.01,
        1.6946,
    ),
    JointFacts(
        "RL_l1",
        "revolute",
        "RL_L1",
        "RL_L2",
        (0.0, 2.93322017852, 0.38168853124),
        (1.0, 0.0, 0.0),
        0.06366,
        0.2,
    ),
    JointFacts(
        "RL_l2", "revolute", "RL_L2", "RL_L3", (0.0, 1.945, 0.0), (1.0, 0.0, 0.0), 0.01657, 0.034
    ),
    JointFacts(
        "RL_fb3",
        "revolute",
        "RL_L3",
        "RL_L4",
        (-2.25, 0.12, -1.07),
        (0.0, 0.0, 1.0),
        0.01657,
        0.034,
    ),
    JointFacts(
        "FR_swing",
        "prismatic",
        "chassis",
        "FR_S1",
        (13.28465981539, -1.45668412658, -0.47825042921),
        (0.0, 1.0, 0.0),
        0.01,
        1.1556,
    ),
    JointFacts(
        "FR_s1",
        "revolute",
        "FR_S1",
        "FR_S2",
        (0.0, -0.77116874934, 0.12648211488),
        (0.0, 0.0, 1.0),
        0.02804,
        0.092,
    ),
    JointFacts(
        "FR_s2",
        "revolute",
        "FR_S2",
        "FR_S3",
        (0.0, -7.44214712409, 2.06176831433),
        (0.0, 0.0, 1.0),
        0.01657,
        0.034,
    ),
    JointFacts(
        "FR_fb1",
        "revolute",
        "FR_S3",
        "FR_S4",
        (1.52236486487, -0.12, -1.25),
        (1.0, 0.0, 0.0),
        0.01914,
        0.06,
    ),
    JointFacts(
        "FR_lift",
        "prismatic",
        "chassis",
        "FR_L1",
        (10.50465981539, -3.15177982148, -0.50168853124),
        (0.0, 1.0, 0.0),
        0.01,
        1.6946,
    ),
    JointFacts(
        "FR_l1",
        "revolute",
        "FR_L1",
        "FR_L2",
        (0.0, -4.57322017852, 0.38168853124),
        (1.0, 0.0, 0.0),
        0.06366,
        0.2,
    ),
    JointFacts(
        "FR_l2", "revolute", "FR_L2", "FR_L3", (0.0, -1.945, 0.0), (1.0, 0.0, 0.0), 0.01657, 0.034
    ),
    JointFacts(
        "FR_fb3",
        "revolute",
        "FR_L3",
        "FR_L4",
        (2.25, -0.12, -1.07),
        (0.0, 0.0, 1.0),
        0.01657,
        0.034,
    ),
    JointFacts(
        "RR_swing",
        "prismatic",
        "chassis",
        "RR_S1",
        (-13.28465981539, -1.45668412658, -0.47825042921),
        (0.0, 1.0, 0.0),
        0.01,
        1.1556,
    ),
    JointFacts(
        "RR_s1",
        "revolute",
        "RR_S1",
        "RR_S2",
        (0.0, -0.77116874934, 0.12648211488),
        (0.0, 0.0, 1.0),
        0.02804,
        0.092,
    ),
    JointFacts(
        "RR_s2",
        "revolute",
        "RR_S2",
        "RR_S3",
        (0.0, -7.44214712409, 2.06176831433),
        (0.0, 0.0, 1.0),
        0.01657,
        0.034,
    ),
    JointFacts(
        "RR_fb1",
        "revolute",
        "RR_S3",
        "RR_S4",
        (-1.52236486487, -0.12, -1.25),
        (1.0, 0.0, 0.0),
        0.01914,
        0.06,
    ),
    JointFacts(
        "RR_lift",
        "prismatic",
        "chassis",
        "RR_L1",
        (-10.50465981539, -4.79177982148, -0.50168853124),
        (0.0, 1.0, 0.0),
        0.01,
        1.6946,
    ),
    JointFacts(
        "RR_l1",
        "revolute",
        "RR_L1",
        "RR_L2",
        (0.0, -2.93322017852, 0.38168853124),
        (1.0, 0.0, 0.0),
        0.06366,
        0.2,
    ),
    JointFacts(
        "RR_l2", "revolute", "RR_L2", "RR_L3", (0.0, -1.945, 0.0), (1.0, 0.0, 0.0), 0.01657, 0.034
    ),
    JointFacts(
        "RR_fb3",
        "revolute",
        "RR_L3",
        "RR_L4",
        (-2.25, -0.12, -1.07),
        (0.0, 0.0, 1.0),
        0.01657,
        0.034,
    ),
]
LOOP_HINGES = [
    HingeFacts(
        "FL_s3",
        "chassis",
        (12.75465981539, 9.79, 1.71),
        "FL_S3",
        (-0.53, 0.12, 0.0),
        (0.0, 0.0, 1.0),
    ),
    HingeFacts(
        "FL_l3",
        "chassis",
        (10.50465981539, 9.79, 0.46),
        "FL_L3",
        (0.0, 0.12, 0.58),
        (1.0, 0.0, 0.0),
    ),
    HingeFacts(
        "FL_fb2",
        "FL_S4",
        (-2.05236472111, 5.98079552649, 0.0),
        "FL_L4",
        (0.0, 5.98079552649, 1.64999985615),
        (0.0, 1.0, 0.0),
    ),
    HingeFacts(
        "RL_s3",
        "chassis",
        (-12.75465981539, 9.79, 1.71),
        "RL_S3",
        (0.53, 0.12, 0.0),
        (0.0, 0.0, 1.0),
    ),
    HingeFacts(
        "RL_l3",
        "chassis",
        (-10.50465981539, 9.79, 0.46),
        "RL_L3",
        (0.0, 0.12, 0.58),
        (1.0, 0.0, 0.0),
    ),
    HingeFacts(
        "RL_fb2",
        "RL_S4",
        (2.05236472111, 5.98079552649, 0.0),
        "RL_L4",
        (0.0, 5.98079552649, 1.64999985615),
        (0.0, 1.0, 0.0),
    ),
    HingeFacts(
        "FR_s3",
        "chassis",
        (12.75465981539, -9.79, 1.71),
        "FR_S3",
        (-0.53, -0.12, 0.0),
        (0.0, 0.0, 1.0),
    ),
    HingeFacts(
        "FR_l3",
        "chassis",
        (10.50465981539, -9.79, 0.46),
        "FR_L3",
        (0.0, -0.12, 0.58),
        (1.0, 0.0, 0.0),
    ),
    HingeFacts(
        "FR_fb2",
        "FR_S4",
        (-2.05236472111, -5.98079552649, 0.0),
        "FR_L4",
        (0.0, -5.98079552649, 1.64999985615),
        (0.0, 1.0, 0.0),
    ),
    HingeFacts(
        "RR_s3",
        "chassis",
        (-12.75465981539, -9.79, 1.71),
        "RR_S3",
        (0.53, -0.12, 0.0),
        (0.0, 0.0, 1.0),
    ),
    HingeFacts(
        "RR_l3",
        "chassis",
        (-10.50465981539, -9.79, 0.46),
        "RR_L3",
        (0.0, -0.12, 0.58),
        (1.0, 0.0, 0.0),
    ),
    HingeFacts(
        "RR_fb2",
        "RR_S4",
        (2.05236472111, -5.98079552649, 0.0),
        "RR_L4",
        (0.0, -5.98079552649, 1.64999985615),
        (0.0, 1.0, 0.0),
    ),
]


def FootPoint(leg: str) -> np.ndarray:
    """The foot contact point of `leg` in its L4 frame, mm."""
    x, y, z = FOOT_POINT_LEFT
    return np.array([x, y if leg[1] == "L" else -y, z])


def LegOf(name: str) -> str:
    """The leg prefix of a link, joint or hinge name ("FL_S3" -> "FL")."""
    return name[:2]


# ---- The generator ---------------------------------------------------------------------------

# Colours of the project's own visual geometry (RGBA).
_CHASSIS_COLOR = (0.55, 0.57, 0.60, 1.0)  # carbon-fibre airframe, grey
_DECK_COLOR = (0.16, 0.40, 0.24, 1.0)  # the flex-circuit decks, green
_PIEZO_COLOR = (0.88, 0.80, 0.56, 1.0)  # PZT bending actuators, tan
_SWING_COLOR = (0.22, 0.40, 0.80, 1.0)  # swing chain S1-S4, blue
_LIFT_COLOR = (0.90, 0.45, 0.12, 1.0)  # lift chain L1-L3, orange
_FLEXURE_COLOR = (0.98, 0.80, 0.20, 1.0)  # polyimide flexures, amber
_LEG_COLOR = (0.13, 0.13, 0.15, 1.0)  # the leg (L4), near black

_BAR_RADIUS = 0.22  # mm, the links' drawn bars
_FLEXURE_RADIUS = 0.30  # mm
_FLEXURE_LENGTH = 1.2  # mm
_LEG_RADIUS = 0.45  # mm
_FOOT_VISUAL_RADIUS = 0.6  # mm
_PIEZO_SIZE = (9.2, 0.335, 3.5)  # length x thickness x width, mm (the reference's PZTBender)


@dataclasses.dataclass
class _Visual:
    name: str
    shape: str  # "box", "cylinder" or "sphere"
    size: tuple  # box (x, y, z); cylinder (radius, length); sphere (radius,)
    position: np.ndarray
    R: np.ndarray
    color: tuple


def _Fmt(values) -> str:
    return " ".join(f"{v:.12g}" if abs(v) > 1e-14 else "0" for v in values)


def _RollPitchYaw(R: np.ndarray) -> tuple[float, float, float]:
    """SDFormat's fixed-axis roll-pitch-yaw of a rotation matrix (R = Rz(y) Ry(p) Rx(r)),
    checked by rebuilding R (gimbal lock puts the whole rotation about z into yaw)."""
    pitch = math.asin(-max(-1.0, min(1.0, R[2, 0])))
    if abs(math.cos(pitch)) > 1e-9:
        roll = math.atan2(R[2, 1], R[2, 2])
        yaw = math.atan2(R[1, 0], R[0, 0])
    else:
        roll = 0.0
        yaw = math.atan2(-R[0, 1], R[1, 1])
    cr, sr, cp, sp, cy, sy = (f(a) for a in (roll, pitch, yaw) for f in (math.cos, math.sin))
    rebuilt = np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )
    assert np.allclose(rebuilt, R, atol=1e-12), "roll-pitch-yaw does not rebuild R"
    return roll, pitch, yaw


def _ZAlong(direction) -> np.ndarray:
    """A rotation whose z axis is `direction`."""
    z = np.asarray(direction, float) / np.linalg.norm(direction)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def _Bar(name, p0, p1, radius, color) -> _Visual:
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    return _Visual(
        name,
        "cylinder",
        (radius, float(np.linalg.norm(p1 - p0))),
        0.5 * (p0 + p1),
        _ZAlong(p1 - p0),
        color,
    )


def _Flexure(name, position, axis) -> _Visual:
    return _Visual(
        name,
        "cylinder",
        (_FLEXURE_RADIUS, _FLEXURE_LENGTH),
        np.asarray(position, float),
        _ZAlong(axis),
        _FLEXURE_COLOR,
    )


def _Box(name, size, center, color) -> _Visual:
    return _Visual(name, "box", tuple(size), np.asarray(center, float), np.eye(3), color)


def _ChassisVisuals() -> list[_Visual]:
    """The airframe: two decks, side rails with posts at the SFB ground hinges, end plates, and
    the eight piezoelectric bending actuators (clamped to the chassis, tips at the actuator
    joints). Open at the sides so the transmissions show."""
    wall_y = max(abs(h.p_AP[1]) for h in LOOP_HINGES if h.body_A == "chassis")
    top, bottom = 2.3, -3.4  # deck heights, mm
    height = top - bottom
    visuals = [
        _Box("top_deck", (18.0, 2 * wall_y, 0.25), (0.0, 0.0, top), _DECK_COLOR),
        _Box("bottom_deck", (18.0, 2 * wall_y, 0.25), (0.0, 0.0, bottom), _DECK_COLOR),
    ]
    for side, sign in (("left", 1.0), ("right", -1.0)):
        y = sign * (wall_y + 0.15)
        for level, z in (("upper", top), ("lower", bottom)):
            visuals.append(
                _Box(f"{side}_{level}_rail", (38.0, 0.3, 0.5), (0.0, y, z), _CHASSIS_COLOR)
            )
        posts = sorted({h.p_AP[0] for h in LOOP_HINGES if h.body_A == "chassis"})
        for k, x in enumerate(posts):
            visuals.append(
                _Box(
                    f"{side}_post{k}",
                    (0.8, 0.3, height),
                    (x, y, 0.5 * (top + bottom)),
                    _CHASSIS_COLOR,
                )
            )
    for end, sign in (("front", 1.0), ("rear", -1.0)):
        visuals.append(
            _Box(
                f"{end}_plate",
                (0.3, 2 * wall_y + 0.6, height),
                (sign * 19.0, 0.0, 0.5 * (top + bottom)),
                _CHASSIS_COLOR,
            )
        )
    for joint in JOINTS:
        if joint.kind != "prismatic":
            continue
        tip = np.asarray(joint.origin, float)
        # The bender is clamped at its base, 9.2 mm inboard of its tip, and bends along y.
        inboard = -np.sign(tip[0])
        center = tip + [inboard * 0.5 * _PIEZO_SIZE[0], 0.0, 0.0]
        visuals.append(_Box(f"{joint.name}_piezo", _PIEZO_SIZE, center, _PIEZO_COLOR))
    for hinge in LOOP_HINGES:
        if hinge.body_A == "chassis":
            visuals.append(_Flexure(f"{hinge.name}_mount", hinge.p_AP, hinge.axis_A))
    return visuals


def _LinkVisuals(name: str) -> list[_Visual]:
    """Bars from the link frame origin to each point the link connects (child joints, hinge
    points, the foot), a flexure cylinder at each joint into the link, the leg and foot on L4."""
    leg, part = LegOf(name), name[3:]
    color = _SWING_COLOR if part.startswith("S") else _LIFT_COLOR
    points = [j.origin for j in JOINTS if j.parent == name]
    points += [h.p_AP for h in LOOP_HINGES if h.body_A == name]
    points += [h.p_BQ for h in LOOP_HINGES if h.body_B == name]
    visuals = []
    if part in ("S1", "L1"):
        visuals.append(_Box(f"{name}_tip", (1.2, 0.6, 1.6), (0.0, 0.0, 0.0), _PIEZO_COLOR))
    for k, point in enumerate(points):
        if np.linalg.norm(point) > 1e-9:
            bar_color = _LEG_COLOR if part in ("S4", "L4") else color
            visuals.append(_Bar(f"{name}_bar{k}", (0, 0, 0), point, _BAR_RADIUS, bar_color))
    (joint,) = [j for j in JOINTS if j.child == name]
    if joint.kind == "revolute":
        visuals.append(_Flexure(f"{name}_flexure", (0, 0, 0), joint.axis))
    for hinge in LOOP_HINGES:
        if hinge.body_B == name:
            visuals.append(_Flexure(f"{hinge.name}_flexure", hinge.p_BQ, hinge.axis_A))
    if part == "L4":
        foot = FootPoint(leg)
        visuals.append(_Bar(f"{leg}_leg", (0, 0, 0), foot, _LEG_RADIUS, _LEG_COLOR))
        visuals.append(
            _Visual(
                f"{leg}_foot",
                "sphere",
                (_FOOT_VISUAL_RADIUS,),
                foot + [0.0, 0.0, _FOOT_VISUAL_RADIUS],  # resting on the ground at home
                np.eye(3),
                _LEG_COLOR,
            )
        )
    return visuals


def _VisualXml(visual: _Visual, indent: str) -> list[str]:
    if visual.shape == "box":
        geometry = f"<box><size>{_Fmt(visual.size)}</size></box>"
    elif visual.shape == "cylinder":
        radius, length = visual.size
        geometry = (
            f"<cylinder><radius>{radius:.6g}</radius><length>{length:.9g}</length></cylinder>"
        )
    else:
        geometry = f"<sphere><radius>{visual.size[0]:.6g}</radius></sphere>"
    pose = _Fmt(list(visual.position) + list(_RollPitchYaw(visual.R)))
    return [
        f'{indent}<visual name="{visual.name}">',
        f"{indent}  <pose>{pose}</pose>",
        f"{indent}  <geometry>{geometry}</geometry>",
        f"{indent}  <material><diffuse>{_Fmt(visual.color)}</diffuse></material>",
        f"{indent}</visual>",
    ]


def _InertialXml(facts: LinkFacts, indent: str) -> list[str]:
    ixx, iyy, izz, ixy, ixz, iyz = facts.inertia
    return [
        f"{indent}<inertial>",
        f"{indent}  <pose>{_Fmt(list(facts.com) + [0, 0, 0])}</pose>",
        f"{indent}  <mass>{facts.mass:.12g}</mass>",
        f"{indent}  <inertia><ixx>{ixx:.12g}</ixx><iyy>{iyy:.12g}</iyy><izz>{izz:.12g}</izz>"
        f"<ixy>{ixy:.12g}</ixy><ixz>{ixz:.12g}</ixz><iyz>{iyz:.12g}</iyz></inertia>",
        f"{indent}</inertial>",
    ]


def _HingeFrameRotation(axis) -> np.ndarray:
    """Rotation of a hinge frame whose z axis is the hinge axis (one of the link axes)."""
    axis = tuple(float(a) for a in axis)
    if axis == (0.0, 0.0, 1.0):
        return np.eye(3)
    if axis == (1.0, 0.0, 0.0):  # x_A = y, y_A = z, z_A = x: roll = yaw = pi/2
        return np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    if axis == (0.0, 1.0, 0.0):  # x_A = x, y_A = -z, z_A = y: roll = -pi/2
        return np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
    raise ValueError(f"hinge axis {axis} is not a link axis")


def MakeHamrSdf(*, floating_base: bool = True) -> str:
    """Generates the SDFormat text of HAMR-VI from the tables of this module.

    Args:
        floating_base: include the 6-joint floating base (`BASE_JOINTS`); without it the chassis
            is a free body (Drake gives it a quaternion joint unless the caller adds another).

    The output is deterministic, so the committed models/hamr_vi/hamr_vi.sdf can be checked
    against it.
    """
    lines = [
        '<?xml version="1.0"?>',
        "<!-- HAMR-VI, the Harvard Ambulatory MicroRobot (Doshi et al., RSS 2018), for Drake.",
        "     Generated by drakebots.hamr.model.MakeHamrSdf; do not edit by hand.",
        "     Regenerate: python scripts/generate_hamr_vi.py",
        "     Units: mm, ms, g (force N, torque N*mm). Inertial facts, joint frames, axes,",
        "     damping and springs: the original authors' model (see README.md).",
        "     Visual geometry: drakebots' own.",
        "     The 12 loop-closing flexures are not joints here: their hinge frames",
        "     (<leg>_<flexure>_A/_B, z = hinge axis) are closed by drakebots.hamr.robot.AddHamr",
        "     (ball constraints in a discrete plant, c(q) = 0 for optimizers). -->",
        '<sdf version="1.9" xmlns:drake="http://drake.mit.edu">',
        '  <model name="hamr_vi">',
    ]
    ind = "    "
    if floating_base:
        lines.append(
            f"{ind}<!-- Floating base: x, y, z, yaw, pitch, roll on massless links (v = qdot) -->"
        )
        axes = {
            "x": "1 0 0",
            "y": "0 1 0",
            "z": "0 0 1",
            "yaw": "0 0 1",
            "pitch": "0 1 0",
            "roll": "1 0 0",
        }
        parent = "world"
        for joint in BASE_JOINTS:
            coordinate = joint.split("_")[1]
            child = "chassis" if coordinate == "roll" else f"{joint}_link"
            kind = "prismatic" if coordinate in ("x", "y", "z") else "revolute"
            if child != "chassis":
                lines += [
                    f'{ind}<link name="{child}">',
                    f'{ind}  <pose relative_to="{joint}"/>',
                    f"{ind}  <inertial><mass>0</mass><inertia><ixx>0</ixx><iyy>0</iyy><izz>0</izz>"
                    "<ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia></inertial>",
                    f"{ind}</link>",
                ]
            relative = "__model__" if parent == "world" else parent
            lines += [
                f'{ind}<joint name="{joint}" type="{kind}">',
                f'{ind}  <pose relative_to="{relative}">0 0 0 0 0 0</pose>',
                f"{ind}  <parent>{parent}</parent>",
                f"{ind}  <child>{child}</child>",
                f"{ind}  <axis><xyz>{axes[coordinate]}</xyz>"
                "<limit><effort>0</effort></limit></axis>",
                f"{ind}</joint>",
            ]
            parent = child
    lines.append(f"{ind}<!-- Chassis: the airframe with the eight actuators' clamped bases -->")
    lines.append(f'{ind}<link name="chassis">')
    if floating_base:
        lines.append(f'{ind}  <pose relative_to="base_roll"/>')
    lines += _InertialXml(LINKS["chassis"], ind + "  ")
    for visual in _ChassisVisuals():
        lines += _VisualXml(visual, ind + "  ")
    lines.append(f"{ind}</link>")
    for leg in LEGS:
        lines.append(f"{ind}<!-- Leg {leg}: swing chain S1-S4, lift chain L1-L4 -->")
        for joint in (j for j in JOINTS if LegOf(j.name) == leg):
            child = joint.child
            lines.append(f'{ind}<link name="{child}">')
            lines.append(f'{ind}  <pose relative_to="{joint.name}"/>')
            lines += _InertialXml(LINKS[child], ind + "  ")
            for visual in _LinkVisuals(child):
                lines += _VisualXml(visual, ind + "  ")
            if child.endswith("L4"):
                center = FootPoint(leg) + [0.0, 0.0, FOOT_SPHERE_RADIUS]
                lines += [
                    f'{ind}  <collision name="{leg}_foot">',
                    f"{ind}    <pose>{_Fmt(list(center) + [0, 0, 0])}</pose>",
                    f"{ind}    <geometry><sphere><radius>{FOOT_SPHERE_RADIUS:.6g}</radius>"
                    "</sphere></geometry>",
                    f"{ind}    <drake:proximity_properties>",
                    f"{ind}      <drake:mu_static>{DEFAULT_FRICTION:.6g}</drake:mu_static>",
                    f"{ind}      <drake:mu_dynamic>{DEFAULT_FRICTION:.6g}</drake:mu_dynamic>",
                    f"{ind}      <drake:point_contact_stiffness>{FOOT_CONTACT_STIFFNESS:.6g}"
                    "</drake:point_contact_stiffness>",
                    f"{ind}      <drake:hunt_crossley_dissipation>{FOOT_CONTACT_DISSIPATION:.6g}"
                    "</drake:hunt_crossley_dissipation>",
                    f"{ind}    </drake:proximity_properties>",
                    f"{ind}  </collision>",
                ]
            lines.append(f"{ind}</link>")
            if joint.kind == "prismatic":
                side = joint.name.split("_")[1]
                limit = (
                    f"<lower>{-ACTUATOR_TRAVEL:.6g}</lower><upper>{ACTUATOR_TRAVEL:.6g}</upper>"
                    f"<effort>{ACTUATOR_FORCE_LIMITS[side]:.6g}</effort>"
                )
            else:
                limit = (
                    f"<lower>{-JOINT_LIMIT:.12g}</lower><upper>{JOINT_LIMIT:.12g}</upper>"
                    "<effort>0</effort>"
                )
            lines += [
                f'{ind}<joint name="{joint.name}" type="{joint.kind}">',
                f'{ind}  <pose relative_to="{joint.parent}">{_Fmt(list(joint.origin) + [0, 0, 0])}'
                "</pose>",
                f"{ind}  <parent>{joint.parent}</parent>",
                f"{ind}  <child>{child}</child>",
                f"{ind}  <axis>",
                f"{ind}    <xyz>{_Fmt(joint.axis)}</xyz>",
                f"{ind}    <limit>{limit}</limit>",
                f"{ind}    <dynamics><damping>{joint.damping:.12g}</damping>"
                f"<spring_reference>0</spring_reference>"
                f"<spring_stiffness>{joint.stiffness:.12g}</spring_stiffness></dynamics>",
                f"{ind}  </axis>",
                f"{ind}</joint>",
            ]
    lines.append(f"{ind}<!-- Loop hinges (z = hinge axis) and foot points -->")
    for hinge in LOOP_HINGES:
        R = _HingeFrameRotation(hinge.axis_A)
        for suffix, body, point in (
            ("A", hinge.body_A, hinge.p_AP),
            ("B", hinge.body_B, hinge.p_BQ),
        ):
            pose = _Fmt(list(point) + list(_RollPitchYaw(R)))
            lines.append(
                f'{ind}<frame name="{hinge.name}_{suffix}" attached_to="{body}">'
                f"<pose>{pose}</pose></frame>"
            )
    for leg in LEGS:
        pose = _Fmt(list(FootPoint(leg)) + [0, 0, 0])
        lines.append(
            f'{ind}<frame name="{leg}_foot" attached_to="{leg}_L4"><pose>{pose}</pose></frame>'
        )
    lines += ["  </model>", "</sdf>", ""]
    return "\n".join(lines)
