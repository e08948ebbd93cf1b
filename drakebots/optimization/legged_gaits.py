"""Legs, gait schedules and the left-right reflection of a legged robot, read from its model.

What OptimizeGait and OptimizeJump (drakebots.optimization.legged) need to plan a quadruped's
gait without the user naming its joints:

- `FindLegs`: each contact's leg is the chain of joints from the base to the contact's body;
  front/hind by the sign of the contact's x and left/right by the sign of its y in the base
  frame (the model's zero configuration: joints at zero, the base at the origin).
- `GaitOffsets`: the phase offset of each leg (fractions of a cycle) for a named gait: trot
  (diagonal pairs in phase, half a cycle apart), pace (lateral pairs), bound (front and hind
  pairs), pronk (all four together), walk (a quarter cycle apart: hind-left, fore-left,
  hind-right, fore-right); `DUTY_FACTORS` their stance fractions.
- `ReflectionMatrix`: the TRUE reflection of a configuration about the sagittal (base x-z)
  plane, q' = P q: the base's y, roll and yaw change sign (S R S = R(-roll, pitch, -yaw) with
  S = diag(1, -1, 1)), each leg's joints move to its mirrored partner's, and a revolute joint
  whose axis a has its partner's axis b = S a (a roll/abduction axis) changes sign, one with
  b = -S a (a pitch axis, S Rot(a, t) S = Rot(S a, -t)) keeps it; prismatic the other way
  round. Legs are paired by their contacts' mirrored positions; what cannot be paired is
  refused by name (InputError).
- `ScheduleGuess`: the gait-shaped warm start: the base moved over the distance, each foot
  fixed on the ground in stance and lifted (half a sine, SWING_HEIGHT of the base height) and
  carried forward in swing, the legs' joints found by damped least squares on Drake's
  kinematics.
- `ScheduleMasks`: where a gait holds a leg on the ground and where in the air: the core of
  each stance (its first and last `margin` of a cycle left free) and the core of each swing.
  OptimizeGait bounds the contacts there (legged.MakeGaitProblem): the foot sequence is the
  gait's, while touchdown and lift-off stay contact-implicit inside the margins.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from drakebots.errors import InputError

GAITS = ("trot", "pace", "bound", "pronk", "walk")
# Stance fraction of each leg's cycle.
DUTY_FACTORS = {"trot": 0.5, "pace": 0.5, "bound": 0.5, "pronk": 0.5, "walk": 0.75}
# Gaits whose half-cycle-later state is the left-right reflection of the start.
SYMMETRIC_GAITS = ("trot", "pace")
# Swing foot lift of the warm start, in home base heights.
SWING_HEIGHT = 0.15
# The swing core's lowest foot height, in home base heights (Solo-12: 4.7 mm).
SWING_CLEARANCE = 0.02
# Fraction of a cycle at each end of a stance and of a swing left to the solver (touchdown and
# lift-off timing; on Solo-12's 21-knot trot, 2 knots each side of each event).
SCHEDULE_MARGIN = 0.1
# Mirrored contacts match within this fraction of the largest contact distance from the base
# (the nearest one; contacts found from collision shapes, as the lowest points at the home pose,
# sit up to a few mm off their partners' mirror images: Solo-12's 0.8 mm in 0.4 m).
PAIRING_TOLERANCE = 0.05


@dataclasses.dataclass
class Leg:
    """One contact's leg.

    Attributes:
        contact: the contact's index (robot file order).
        name: "front_left", "hind_right", ... (by the signs of x and y in the base frame).
        front, left: the signs (True for x > 0, y > 0).
        joints: names of the one-coordinate joints from the base to the contact's body.
        positions: their position indices.
        p_base: the contact point in the base frame at the zero configuration.
    """

    contact: int
    name: str
    front: bool
    left: bool
    joints: list
    positions: list
    p_base: np.ndarray


def _Where(model) -> str:
    return getattr(model.robot, "source", "") or model.robot.name


def _BaseBody(plant):
    """The floating base's body (the child of the joint named "base"), else the model's root."""
    if plant.HasJointNamed("base"):
        return plant.GetJointByName("base").child_body()
    joints = [plant.get_joint(j) for j in plant.GetJointIndices()]
    roots = [
        j.child_body() for j in joints if j.parent_body().index() == plant.world_body().index()
    ]
    return roots[-1]


def _ZeroContext(plant):
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, np.zeros(plant.num_positions()))
    return context


def FindLegs(model) -> list[Leg]:
    """The legs of the model's contacts (the module docstring)."""
    plant = model.plant
    base = _BaseBody(plant)
    by_child = {}
    for j in plant.GetJointIndices():
        joint = plant.get_joint(j)
        by_child[int(joint.child_body().index())] = joint
    context = _ZeroContext(plant)
    legs = []
    for c, (body_name, point) in enumerate(model.robot.contacts):
        body = plant.GetBodyByName(body_name)
        joints, positions = [], []
        current = body
        while int(current.index()) != int(base.index()):
            joint = by_child.get(int(current.index()))
            if joint is None:
                raise InputError(
                    f"{_Where(model)}: contacts[{c}]: body '{body_name}' is not below the base "
                    f"body '{base.name()}' (no joint chain to it)"
                )
            if joint.num_positions() == 1:
                joints.insert(0, joint.name())
                positions.insert(0, int(joint.position_start()))
            elif joint.num_positions() > 1:
                raise InputError(
                    f"{_Where(model)}: joint '{joint.name()}' ({joint.type_name()}) between the "
                    f"base and contacts[{c}]: a leg's joints must have one coordinate each"
                )
            current = joint.parent_body()
        p = plant.CalcPointsPositions(
            context, body.body_frame(), np.asarray(point, float).reshape(3, 1), base.body_frame()
        )[:, 0]
        front, left = bool(p[0] > 0), bool(p[1] > 0)
        name = ("front" if front else "hind") + ("_left" if left else "_right")
        legs.append(Leg(c, name, front, left, joints, positions, p))
    return legs


def GaitOffsets(gait: str, legs: list[Leg], where: str = "gait", source: str = "") -> np.ndarray:
    """Each contact's phase offset (fraction of a cycle) for `gait` (one of GAITS).

    Needs four legs, one in each of front-left, front-right, hind-left, hind-right.
    """
    if gait not in GAITS:
        raise InputError(f"{where}: one of {', '.join(GAITS)}, got {gait!r}")
    names = [leg.name for leg in legs]
    chains = {}
    for leg in legs:  # a leg may hold several contacts (a foot's collision shapes): one chain
        chains.setdefault(leg.name, set()).add(tuple(leg.joints))
    if set(names) != {"front_left", "front_right", "hind_left", "hind_right"} or any(
        len(c) != 1 for c in chains.values()
    ):
        raise InputError(
            f"{where}: '{gait}' needs four legs, one front-left, front-right, hind-left and "
            f"hind-right of the base; {source or 'this robot'}'s contacts are on "
            f"{', '.join(names)}"
        )
    table = {
        "trot": {"front_left": 0.0, "hind_right": 0.0, "front_right": 0.5, "hind_left": 0.5},
        "pace": {"front_left": 0.0, "hind_left": 0.0, "front_right": 0.5, "hind_right": 0.5},
        "bound": {"front_left": 0.0, "front_right": 0.0, "hind_left": 0.5, "hind_right": 0.5},
        "pronk": {"front_left": 0.0, "front_right": 0.0, "hind_left": 0.0, "hind_right": 0.0},
        "walk": {"hind_left": 0.0, "front_left": 0.25, "hind_right": 0.5, "front_right": 0.75},
    }[gait]
    return np.array([table[leg.name] for leg in legs])


def Phases(offsets: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(knots, contacts) phase of each leg in its own cycle at times (fractions of a cycle)."""
    return np.mod(np.asarray(times, float)[:, None] - np.asarray(offsets)[None, :], 1.0)


def StanceMask(offsets: np.ndarray, duty: float, times: np.ndarray) -> np.ndarray:
    """(knots, contacts) True where a leg is in stance at `times` (fractions of a cycle)."""
    return Phases(offsets, times) < duty - 1e-9


def ScheduleMasks(
    offsets: np.ndarray, duty: float, times: np.ndarray, margin: float = SCHEDULE_MARGIN
) -> tuple[np.ndarray, np.ndarray]:
    """(stance_core, swing_core): (knots, contacts) masks of where a gait holds each leg on the
    ground and off it, at `times` (fractions of a cycle).

    A leg's phase p (Phases) is stance for 0 <= p < duty and swing for duty <= p < 1. The core
    leaves `margin` (a fraction of a cycle) free at both ends of each: stance core
    margin <= p <= duty - margin, swing core duty + margin <= p <= 1 - margin. Where the margin
    leaves no core (a margin of half a phase or more), that phase is unconstrained.
    """
    p = Phases(offsets, times)
    eps = 1e-9
    stance = (p >= margin - eps) & (p <= duty - margin + eps)
    swing = (p >= duty + margin - eps) & (p <= 1.0 - margin + eps)
    return stance, swing


def _Axis(plant, context, joint, base_frame) -> np.ndarray:
    """A one-coordinate joint's axis in the base frame (a unit vector)."""
    kind = joint.type_name()
    if kind == "revolute":
        axis = joint.revolute_axis()
    elif kind == "prismatic":
        axis = joint.translation_axis()
    else:
        raise InputError(
            f"joint '{joint.name()}' ({kind}): a leg joint must be revolute or prismatic"
        )
    R = plant.CalcRelativeRotationMatrix(context, base_frame, joint.frame_on_parent())
    return R.matrix() @ np.asarray(axis, float)


def ReflectionMatrix(model, legs: list[Leg] | None = None, pairs=None) -> np.ndarray:
    """P (n x n): q' = P q is the reflection of q about the sagittal plane (module docstring).

    Args:
        model: a RobotTrajoptModel (legged.MakeRobotTrajoptModel).
        legs: its legs (FindLegs) to pair automatically, or None with `pairs`.
        pairs: [[left joint, right joint], ...] named by the user (GaitConfig.mirror), or None.

    Raises InputError naming the contact or joint that has no mirrored partner.
    """
    plant = model.plant
    where = _Where(model)
    n = plant.num_positions()
    P = np.zeros((n, n))
    context = _ZeroContext(plant)
    base_frame = _BaseBody(plant).body_frame()
    S = np.diag([1.0, -1.0, 1.0])
    names = model.position_names
    done = set()

    def Pair(a_name: str, b_name: str) -> None:
        a, b = plant.GetJointByName(a_name), plant.GetJointByName(b_name)
        axis_a = _Axis(plant, context, a, base_frame)
        axis_b = _Axis(plant, context, b, base_frame)
        if a.type_name() != b.type_name():
            raise InputError(
                f"{where}: joints '{a_name}' and '{b_name}' pair as mirror images but are "
                f"{a.type_name()} and {b.type_name()}"
            )
        mirrored = S @ axis_a
        if np.allclose(axis_b, mirrored, atol=1e-6):
            sign = -1.0 if a.type_name() == "revolute" else 1.0
        elif np.allclose(axis_b, -mirrored, atol=1e-6):
            sign = 1.0 if a.type_name() == "revolute" else -1.0
        else:
            raise InputError(
                f"{where}: joints '{a_name}' (axis {np.round(axis_a, 3).tolist()}) and "
                f"'{b_name}' (axis {np.round(axis_b, 3).tolist()}) pair as mirror images but "
                "their axes are not mirrored about the base's x-z plane"
            )
        i, j = int(a.position_start()), int(b.position_start())
        P[j, i] = sign
        P[i, j] = sign
        done.update((i, j))

    if pairs is not None:
        for index, pair in enumerate(pairs):
            for name in pair:
                if name not in names:
                    raise InputError(
                        f"mirror[{index}]: {where} has no one-coordinate joint '{name}' (its "
                        f"joints: {', '.join(names)})"
                    )
            Pair(pair[0], pair[1])
    else:
        scale = max(max(float(np.linalg.norm(leg.p_base)) for leg in legs), 1e-12)
        for leg in legs:
            target = S @ leg.p_base
            distances = [np.linalg.norm(other.p_base - target) for other in legs]
            nearest = int(np.argmin(distances))
            match = [legs[nearest]] if distances[nearest] <= PAIRING_TOLERANCE * scale else []
            if not match:
                raise InputError(
                    f"{where}: contacts[{leg.contact}] ({leg.name}, at "
                    f"{np.round(leg.p_base, 4).tolist()} in the base frame) has no contact at its "
                    "mirror image about the base's x-z plane: its leg cannot be paired"
                )
            other = match[0]
            if len(other.joints) != len(leg.joints):
                raise InputError(
                    f"{where}: the legs of contacts[{leg.contact}] ({', '.join(leg.joints)}) "
                    f"and contacts[{other.contact}] ({', '.join(other.joints)}) are mirror "
                    "images by position but have different numbers of joints"
                )
            for a_name, b_name in zip(leg.joints, other.joints):
                Pair(a_name, b_name)
    # The base: planar_xz (x, z, pitch) is its own mirror image; floating_rpy flips y, roll,
    # yaw.
    base = getattr(model.robot, "base", None)
    if base == "floating_rpy":
        start = int(plant.GetJointByName("base").position_start())
        signs = [-1.0, 1.0, -1.0, 1.0, -1.0, 1.0]  # roll, pitch, yaw, x, y, z
        for k, sign in enumerate(signs):
            P[start + k, start + k] = sign
            done.add(start + k)
    elif base == "planar_xz":
        for name in ("base_x", "base_z", "base_pitch"):
            i = int(plant.GetJointByName(name).position_start())
            P[i, i] = 1.0
            done.add(i)
    missing = [names[i] for i in range(n) if i not in done]
    if missing:
        if pairs is not None:  # the user's pairs: the rest stays as it is (today's mirror)
            for i in range(n):
                if i not in done:
                    P[i, i] = 1.0
        else:
            raise InputError(
                f"{where}: joint(s) {', '.join(missing)} are on no leg (no chain from the base to "
                "a contact), so the gait's left-right reflection cannot place them"
            )
    return P


def _LegIk(plant, context, leg: Leg, body, p_BC, target_B, base_frame, lower, upper, q):
    """Damped least squares on the leg's joints: the contact point (body frame p_BC) to
    target_B in the base frame. Updates and returns q (the plant's positions)."""
    idx = np.array(leg.positions, int)
    joints = [plant.GetJointByName(name) for name in leg.joints]
    vidx = np.array([int(j.velocity_start()) for j in joints], int)
    from pydrake.multibody.tree import JacobianWrtVariable

    for _ in range(30):
        plant.SetPositions(context, q)
        p = plant.CalcPointsPositions(context, body.body_frame(), p_BC, base_frame)[:, 0]
        error = target_B - p
        if np.linalg.norm(error) < 1e-7:
            break
        J = plant.CalcJacobianTranslationalVelocity(
            context, JacobianWrtVariable.kV, body.body_frame(), p_BC, base_frame, base_frame
        )[:, vidx]
        step = J.T @ np.linalg.solve(J @ J.T + 1e-6 * np.eye(3), error)
        q[idx] = np.clip(q[idx] + step, lower[idx], upper[idx])
    return q


def ScheduleGuess(model, legs: list[Leg], offsets, duty: float, times, distance: float):
    """(knots, n) positions of the gait-shaped warm start (module docstring) at `times`
    (fractions of the cycle), the base at its home pose moved over `distance` in x."""
    plant = model.plant
    context = plant.CreateDefaultContext()
    base_body = _BaseBody(plant)
    base_frame = base_body.body_frame()
    home = model.home.copy()
    plant.SetPositions(context, home)
    lower = np.where(
        np.isfinite(plant.GetPositionLowerLimits()), plant.GetPositionLowerLimits(), -1e9
    )
    upper = np.where(
        np.isfinite(plant.GetPositionUpperLimits()), plant.GetPositionUpperLimits(), 1e9
    )
    feet = []
    for leg in legs:
        body_name, point = model.robot.contacts[leg.contact]
        body = plant.GetBodyByName(body_name)
        p_BC = np.asarray(point, float).reshape(3, 1)
        p_home = plant.CalcPointsPositions(context, body.body_frame(), p_BC, base_frame)[:, 0]
        feet.append((body, p_BC, p_home))
    lift = SWING_HEIGHT * max(home[model.z_index], 1e-9)
    phases = Phases(offsets, times)
    q = np.tile(home, (len(times), 1))
    q[:, model.x_index] = home[model.x_index] + distance * np.asarray(times, float)
    for k in range(len(times)):
        qk = home.copy()
        for c, leg in enumerate(legs):
            s = phases[k, c]
            body, p_BC, p_home = feet[c]
            if s < duty:  # stance: the foot stays where it landed, the base moves on
                dx = distance * (0.5 * duty - s)
                dz = 0.0
            else:  # swing: carried forward over the rest of the cycle, lifted
                r = (s - duty) / (1.0 - duty)
                dx = distance * (-0.5 * duty + duty * r)
                dz = lift * np.sin(np.pi * r)
            target = p_home + np.array([dx, 0.0, dz])
            qk = _LegIk(plant, context, leg, body, p_BC, target, base_frame, lower, upper, qk)
        for leg in legs:
            q[k, leg.positions] = qk[leg.positions]
    return q
