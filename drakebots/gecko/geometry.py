"""Constant-curvature geometry and gait law of the gecko (gecko-gait-pattern-generator.txt).

NumPy only: the arcs of the five bending limbs (paper, section 3.1, Eq. 2), the rigid-segment
chain that approximates each arc in the Drake model, and the gait law (Eqs. 1, 3, 14, 15) that maps
the two generalized coordinates (q1, q2) of the velocity space onto five reference bending angles
and four fixation flags.

Conventions (SI; angles in radians unless a name ends in `_deg`):

- Limb order `LIMBS`: front-left leg, front-right leg, torso, hind-left leg, hind-right leg
  (the paper's alpha_0..alpha_4). Foot order `FEET`: front-left, front-right, hind-left, hind-right
  (the paper's f_0..f_3 and phi_0, phi_2, phi_3, phi_5).
- The robot's pose (x, y, eps) is the midpoint of the torso arc and the torso's tangent there,
  counter-clockwise positive in the world x-y plane; "forward" is the +eps direction, "left" is
  +90 degrees from it.
- A positive torso angle bends the torso clockwise going forward (concave on the right: the left
  chamber is inflated, Eq. 3). The front node's tangent is eps - alpha_2/2, the hind node's
  eps + alpha_2/2. Each leg leaves its node perpendicular to the torso and bends by its angle:
  clockwise for front-left and hind-right, counter-clockwise for front-right and hind-left. This
  is the only geometry that reproduces the paper's foot orientations (Eq. 2) and its observations
  (positive q1 walks forward, positive q2 turns with negative rotation).
- The "orientation" phi of a foot is its tip tangent minus 90 degrees for the front-left and
  hind-right feet and plus 90 degrees for the others (then phi is exactly Eq. 2).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

LIMBS = ("front_left", "front_right", "torso", "hind_left", "hind_right")
LEGS = ("front_left", "front_right", "hind_left", "hind_right")
FEET = LEGS
# Index of each foot's leg in LIMBS.
FOOT_LIMB = {"front_left": 0, "front_right": 1, "hind_left": 3, "hind_right": 4}
# Node each leg hangs from, and the sign of its bending (+1 counter-clockwise).
LEG_NODE = {
    "front_left": "front",
    "front_right": "front",
    "hind_left": "hind",
    "hind_right": "hind",
}
LEG_BEND_SIGN = {"front_left": -1.0, "front_right": 1.0, "hind_left": 1.0, "hind_right": -1.0}
# Direction the leg leaves its node, relative to the torso tangent there.
LEG_SIDE = {"front_left": 1.0, "front_right": -1.0, "hind_left": 1.0, "hind_right": -1.0}
# phi (Eq. 2) = tip tangent + PHI_OFFSET.
PHI_OFFSET = {
    "front_left": -0.5 * math.pi,
    "front_right": 0.5 * math.pi,
    "hind_left": 0.5 * math.pi,
    "hind_right": -0.5 * math.pi,
}
# The diagonal fixation patterns of Eq. 1 (f0..f3 = FL, FR, HL, HR).
FIX_POSITIVE = np.array([True, False, False, True])  # torso reference > 0
FIX_NEGATIVE = ~FIX_POSITIVE


@dataclasses.dataclass
class GeckoDimensions:
    """Limb lengths of the gecko robot (reference README: the paper's simulations).

    Attributes:
        leg_length: length of each of the four legs, m (9.1 cm).
        torso_length: length of the torso, m (10.3 cm).
    """

    leg_length: float = 0.091
    torso_length: float = 0.103

    def lengths(self) -> np.ndarray:
        """Nominal lengths of the five limbs in LIMBS order, m."""
        leg, torso = self.leg_length, self.torso_length
        return np.array([leg, leg, torso, leg, leg])


def _sinc(x):
    """sin(x)/x, smooth through 0."""
    return np.sinc(np.asarray(x) / math.pi)


def _unit(theta):
    theta = np.asarray(theta, dtype=float)
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def ArcChord(length, start_tangent, bend):
    """Chord vector of a constant-curvature arc.

    Args:
        length: arc length, m.
        start_tangent: tangent angle at the start, rad.
        bend: total change of tangent along the arc (positive counter-clockwise), rad.

    Returns:
        end point minus start point, shape (..., 2), m. Exact for any bend, including zero
        (length * sinc(bend/2) along the mean tangent).
    """
    length = np.asarray(length, dtype=float)
    return (length * _sinc(0.5 * np.asarray(bend)))[..., None] * _unit(
        np.asarray(start_tangent) + 0.5 * np.asarray(bend)
    )


@dataclasses.dataclass
class GeckoShape:
    """Positions and tangents of a constant-curvature gecko (all in the world frame).

    Attributes:
        pose: (x, y, eps) of the torso midpoint, m and rad.
        alpha: the five bending angles, rad.
        lengths: the five limb lengths, m.
        front, hind: node positions (2,), m.
        front_tangent, hind_tangent: torso tangent at the nodes (pointing forward), rad.
        feet: (4, 2) foot positions in FEET order, m.
        foot_tangent: (4,) tip tangents of the legs (pointing away from the node), rad.
        phi: (4,) foot orientations of Eq. 2, rad.
    """

    pose: np.ndarray
    alpha: np.ndarray
    lengths: np.ndarray
    front: np.ndarray
    hind: np.ndarray
    front_tangent: float
    hind_tangent: float
    feet: np.ndarray
    foot_tangent: np.ndarray
    phi: np.ndarray


def LegBaseTangent(leg: str, eps, alpha_torso):
    """Tangent at which a leg leaves its node (perpendicular to the torso there), rad."""
    node_tangent = eps - 0.5 * alpha_torso if LEG_NODE[leg] == "front" else eps + 0.5 * alpha_torso
    return node_tangent + LEG_SIDE[leg] * 0.5 * math.pi


def GeckoShapeOf(pose, alpha, lengths) -> GeckoShape:
    """Forward kinematics of the constant-curvature model (paper section 3.1).

    Args:
        pose: (x, y, eps) of the torso midpoint, m, m, rad.
        alpha: bending angles of the five limbs (LIMBS order), rad.
        lengths: the five limb lengths, m.
    """
    pose = np.asarray(pose, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    lengths = np.asarray(lengths, dtype=float)
    x, y, eps = pose
    mid = np.array([x, y])
    a2, l2 = alpha[2], lengths[2]
    front = mid + ArcChord(0.5 * l2, eps, -0.5 * a2)
    hind = mid - ArcChord(0.5 * l2, eps + 0.5 * a2, -0.5 * a2)
    feet = np.zeros((4, 2))
    tangents = np.zeros(4)
    phi = np.zeros(4)
    for j, leg in enumerate(FEET):
        i = FOOT_LIMB[leg]
        base = LegBaseTangent(leg, eps, a2)
        bend = LEG_BEND_SIGN[leg] * alpha[i]
        node = front if LEG_NODE[leg] == "front" else hind
        feet[j] = node + ArcChord(lengths[i], base, bend)
        tangents[j] = base + bend
        phi[j] = tangents[j] + PHI_OFFSET[leg]
    return GeckoShape(
        pose=pose,
        alpha=alpha,
        lengths=lengths,
        front=front,
        hind=hind,
        front_tangent=eps - 0.5 * a2,
        hind_tangent=eps + 0.5 * a2,
        feet=feet,
        foot_tangent=tangents,
        phi=phi,
    )


def FootOrientationsEq2(eps, alpha) -> np.ndarray:
    """The paper's Eq. 2: phi = [eps - a2/2 - a0, eps - a2/2 + a1, eps + a2/2 + a3 + pi,
    eps + a2/2 - a4 + pi], rad."""
    a0, a1, a2, a3, a4 = np.asarray(alpha, dtype=float)
    return np.array(
        [
            eps - 0.5 * a2 - a0,
            eps - 0.5 * a2 + a1,
            eps + 0.5 * a2 + a3 + math.pi,
            eps + 0.5 * a2 - a4 + math.pi,
        ]
    )


def ArcPoints(start, start_tangent, length, bend, count: int = 16) -> np.ndarray:
    """`count` points along a constant-curvature arc (for drawing), shape (count, 2), m."""
    s = np.linspace(0.0, 1.0, count)
    return np.asarray(start) + ArcChord(length * s, start_tangent, bend * s)


def GeckoOutline(shape: GeckoShape, count: int = 16) -> list[np.ndarray]:
    """Polylines of the five limbs (LIMBS order) for plots, each (count, 2), m."""
    eps, a2 = shape.pose[2], shape.alpha[2]
    lines = []
    for leg in ("front_left", "front_right"):
        i = FOOT_LIMB[leg]
        lines.append(
            ArcPoints(
                shape.front,
                LegBaseTangent(leg, eps, a2),
                shape.lengths[i],
                LEG_BEND_SIGN[leg] * shape.alpha[i],
                count,
            )
        )
    lines.append(ArcPoints(shape.hind, eps + 0.5 * a2, shape.lengths[2], -a2, count))
    for leg in ("hind_left", "hind_right"):
        i = FOOT_LIMB[leg]
        lines.append(
            ArcPoints(
                shape.hind,
                LegBaseTangent(leg, eps, a2),
                shape.lengths[i],
                LEG_BEND_SIGN[leg] * shape.alpha[i],
                count,
            )
        )
    return lines


# ---------------------------------------------------------------------------------------------
# The rigid-segment approximation of an arc (the Drake model).


def SegmentJointRatios(num_segments: int) -> np.ndarray:
    """Share of a limb's bending angle taken by each joint of its segment chain.

    A limb of N rigid segments of length L/N has N + 1 joints: a half joint at each end and N - 1
    full joints between segments: [1/2, 1, ..., 1, 1/2] / N. Segment k then points along the arc's
    tangent at its own midpoint ((k + 1/2) alpha / N: the midpoint rule), so the chain ends with
    the arc's exact end tangent and its end point lies on the arc's chord, longer by the factor
    x / sin(x) with x = alpha / (2 N) (see `ChainEndError`).
    """
    ratios = np.ones(num_segments + 1)
    ratios[0] = ratios[-1] = 0.5
    return ratios / num_segments


def ChainPoints(start, start_tangent, length, bend, num_segments: int) -> np.ndarray:
    """Vertices of the rigid-segment chain that approximates an arc, shape (N + 1, 2), m."""
    k = np.arange(num_segments)
    directions = start_tangent + (k + 0.5) * bend / num_segments
    steps = (length / num_segments) * _unit(directions)
    return np.vstack([np.asarray(start, dtype=float), start + np.cumsum(steps, axis=0)])


def ChainEndError(length, bend, num_segments: int):
    """Distance between the end of the segment chain and the end of the exact arc, m.

    Closed form: both ends lie on the same chord; the chain's is longer by x / sin(x) - 1 with
    x = bend / (2 N), so the error is |chord| (x / sin x - 1).
    """
    bend = np.abs(np.asarray(bend, dtype=float))
    x = bend / (2.0 * num_segments)
    chord = np.asarray(length) * _sinc(0.5 * bend)
    return chord * (1.0 / _sinc(x) - 1.0)


def ChainMaxDeviation(length, bend, num_segments: int, samples: int = 400) -> float:
    """Largest distance from a point of the exact arc to the segment chain, m (numerical)."""
    arc = ArcPoints(np.zeros(2), 0.0, length, bend, samples)
    chain = ChainPoints(np.zeros(2), 0.0, length, bend, num_segments)
    a, b = chain[:-1], chain[1:]
    ab = b - a
    t = np.einsum("sij,ij->si", arc[:, None, :] - a[None], ab) / np.maximum(
        np.einsum("ij,ij->i", ab, ab), 1e-300
    )
    t = np.clip(t, 0.0, 1.0)
    closest = a[None] + t[..., None] * ab[None]
    return float(np.max(np.min(np.linalg.norm(arc[:, None, :] - closest, axis=-1), axis=1)))


# ---------------------------------------------------------------------------------------------
# The gait law (paper section 3).

Q1_RANGE_DEG = (40.0, 90.0)  # planner bounds of the step length (reference README), deg
Q2_RANGE = (-0.5, 0.5)  # steering factor bounds (paper Eq. 3), dimensionless
LEG_MIN_ANGLE_DEG = 0.001  # the authors clip leg references below at this value, deg


def GaitLawDeg(q1_deg, q2, c1: float = 1.0, clip_legs: bool = True) -> np.ndarray:
    """The general gait law, paper Eq. 14: reference bending angles for (q1, q2).

    Args:
        q1_deg: step length (the torso's reference for straight gait), deg; its sign selects the
            pose of the half cycle (Eq. 15).
        q2: steering factor in [-0.5, 0.5].
        c1: additional leg bending (the paper determines c1 = 1).
        clip_legs: clip leg angles below at LEG_MIN_ANGLE_DEG (a one-chamber leg cannot bend the
            other way), as the authors do.

    Returns:
        (5,) reference angles in LIMBS order, deg. Broadcasts over array inputs: (..., 5).
    """
    q1 = np.asarray(q1_deg, dtype=float)
    q2 = np.asarray(q2, dtype=float)
    shift = 0.5 * q1 + 0.5 * np.abs(q1) * q2
    extra = c1 * q1 * q2
    legs_minus = 45.0 - shift + extra
    legs_plus = 45.0 + shift + extra
    torso = q1 + np.abs(q1) * q2
    alpha = np.stack([legs_minus, legs_plus, torso, legs_minus, legs_plus], axis=-1)
    if clip_legs:
        alpha[..., [0, 1, 3, 4]] = np.maximum(alpha[..., [0, 1, 3, 4]], LEG_MIN_ANGLE_DEG)
    return alpha


def StraightGaitDeg(alpha_torso_deg) -> tuple[np.ndarray, np.ndarray]:
    """The straight gait of Eq. 1 (Seibel and Schiller 2018): angles (deg) and fixation."""
    a2 = float(alpha_torso_deg)
    alpha = np.array([45.0 - a2 / 2, 45.0 + a2 / 2, a2, 45.0 - a2 / 2, 45.0 + a2 / 2])
    return alpha, FixationOf(a2)


def FixationOf(alpha_torso) -> np.ndarray:
    """Eq. 1: the feet fixed in a pose with this torso reference (FL, FR, HL, HR).

    Positive torso reference (concave right): front-left and hind-right fixed; negative: the
    other diagonal. These feet stay fixed during the move out of the pose (to the mirrored pose of
    the next half cycle, Eq. 15).
    """
    return FIX_POSITIVE.copy() if float(alpha_torso) >= 0.0 else FIX_NEGATIVE.copy()


def CheckVelocitySpacePoint(q1_deg: float, q2: float, *, q1_range=Q1_RANGE_DEG) -> None:
    """Raises ValueError naming the coordinate when (q1, q2) lies outside the velocity space."""
    lo, hi = q1_range
    if not (math.isfinite(q1_deg) and lo <= q1_deg <= hi):
        raise ValueError(f"q1 = {q1_deg} deg is outside the step-length range [{lo}, {hi}] deg")
    if not (math.isfinite(q2) and Q2_RANGE[0] <= q2 <= Q2_RANGE[1]):
        raise ValueError(f"q2 = {q2} is outside the steering range [{Q2_RANGE[0]}, {Q2_RANGE[1]}]")


@dataclasses.dataclass
class GaitTiming:
    """Timing of one half cycle (reference README; paper section 3.2), s.

    A half cycle is: release the feet of the previous stance (t_release), move to the new
    reference pose with the stance feet fixed (t_move), fix the other diagonal (t_fix).
    """

    # Releasing the previous stance's feet, s.
    t_release: float = 0.25
    # Moving to the new reference pose, s.
    t_move: float = 2.0
    # Fixing the next stance's feet, s.
    t_fix: float = 0.25

    @property
    def half_cycle(self) -> float:
        return self.t_release + self.t_move + self.t_fix

    @property
    def cycle(self) -> float:
        return 2.0 * self.half_cycle


@dataclasses.dataclass
class HalfCycle:
    """What the gait law commands during half cycle k (Eq. 15).

    Attributes:
        sign: +1 when this half cycle moves to the pose alpha(+|q1|), -1 for alpha(-|q1|).
        alpha_deg: reference angles of the pose this half cycle moves to, deg.
        stance: feet fixed while moving (those of the previous pose, Eq. 1).
        next_stance: feet fixed at the end (those of the new pose).
    """

    sign: float
    alpha_deg: np.ndarray
    stance: np.ndarray
    next_stance: np.ndarray


def HalfCycleOf(k: int, q1_deg: float, q2: float, *, first_sign: float = -1.0) -> HalfCycle:
    """Eq. 15 as a schedule: half cycle k moves to alpha(s_k |q1|, q2), s_k alternating.

    Args:
        k: half-cycle index (0, 1, ...).
        q1_deg: step length |q1|, deg (its sign is set by the schedule).
        q2: steering factor.
        first_sign: s_0; the home pose is alpha(+90, 0) with front-left/hind-right fixed, so the
            first half cycle moves to the negative pose (-1).
    """
    sign = first_sign if k % 2 == 0 else -first_sign
    alpha = GaitLawDeg(sign * abs(q1_deg), q2)
    stance = FixationOf(-sign)
    return HalfCycle(sign=sign, alpha_deg=alpha, stance=stance, next_stance=~stance)


HOME_Q1_DEG = 90.0  # the home pose is the straight-gait pose alpha(+90, 0)


def HomeAnglesDeg() -> np.ndarray:
    """Bending angles of the home pose: the straight gait at q1 = +90 deg, deg."""
    return GaitLawDeg(HOME_Q1_DEG, 0.0)
