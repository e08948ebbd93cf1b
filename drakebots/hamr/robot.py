"""HAMR-VI, the 1.5 g quadrupedal microrobot of Doshi et al. (hamr-contact-implicit.txt, sec. II).

`AddHamr(plant)` adds the 38-coordinate model (models/hamr_vi/hamr_vi.sdf, generated from the facts
in `drakebots.hamr.model`) with its home pose as the plant's default state, sets the plant's
gravity for the model's units, and closes the 12 kinematic loops with Drake ball constraints when
the plant is a discrete (SAP) plant.

Units: millimetre, millisecond, gram; so force in N (g·mm/ms² = 1 N), torque in N·mm, gravity
9.81e-3 mm/ms², linear stiffness N/mm, torsional stiffness N·mm/rad, velocities in mm/ms (= m/s).

API for the trajectory optimizer
--------------------------------
Everything a variational contact-implicit optimizer needs (paper Eqs. 1-4, 7-14):

- Plants: ``plant = MultibodyPlant(time_step=0.0); instance = AddHamr(plant); plant.Finalize()``
  gives a continuous plant with no Drake constraints (use ``loop_closure="none"`` explicitly on a
  discrete plant) and gravity 9.81e-3 mm/ms². ``plant.ToAutoDiffXd()`` gives the AutoDiff twin.
  The floating base is 3 prismatic + 3 revolute joints (`BASE_JOINTS`: x, y, z, yaw, pitch, roll),
  so q ∈ R^38, v ∈ R^38 and v = q̇ exactly (N(q) = I), as the paper's Lagrangian L(q, q̇) assumes.
  Drake orders the positions [x, y, z, yaw, pitch, roll, then per leg FL, RL, FR, RR: swing, s1,
  s2, fb1, lift, l1, l2, fb3]; use `HamrPositionIndex(plant, name)` rather than numbers.
- Home pose: `HomePositions(plant)` (38-vector; standing, body height `HOME_BASE_HEIGHT` = 12.69 mm,
  feet on z = 0, swing actuators at zero, every loop closed to < 1e-9 mm).
- Loop closure c(q) = 0 (Eq. 2), 24 rows: ``loops = HamrLoopConstraints(plant)`` then
  ``loops.Eval(plant, context)`` (float or AutoDiffXd, following the plant's scalar type) and
  ``loops.Jacobian(plant, context)`` = ∂c/∂q (24 × 38). For a MathematicalProgram,
  ``loops.AddToProgram(prog, q_vars)`` binds a constraint whose AutoDiff path uses the float
  Jacobian (chain rule), or call ``loops.EvalForProgram(q)`` from your own evaluator.
  `HingeLoopConstraints` is the same for *any* MultibodyPlant whose loops are hinge frame pairs.
- Contact (Eq. 7): `FOOT_BODIES` and `FootPoint(leg)` (foot point in its L4 frame, mm), or the
  model frames "<leg>_foot"; `SURFACE_FRICTION` (teflon 0.29, cardstock 0.51, sandpaper 1.02).
- Actuators (Eq. 3): 8 prismatic joints "<leg>_swing"/"<leg>_lift" with actuators of the same
  names (B = selection), springs K in the plant (PrismaticSpring 1.1556 / 1.6946 N/mm),
  `ActuatorForceLimits()` (±0.28 N swing, ±0.36 N lift: the authors' optimisation bounds) and the
  piezoelectric force model in `drakebots.hamr.piezo` (`PiezoBenderForce`, with derivatives;
  `ACTUATOR_ORIENTATION` gives each bender's orientation).
- Damping F^b: joint viscous damping in the plant (`JointDamping()`); flexure springs are
  RevoluteSpring force elements (`FlexureStiffness()`), so the plant's potential energy and
  generalized forces include them.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from pydrake.autodiffutils import ExtractGradient, ExtractValue, InitializeAutoDiff
from pydrake.math import RigidTransform, RollPitchYaw
from pydrake.multibody.parsing import Parser
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import JacobianWrtVariable, ModelInstanceIndex, RpyFloatingJoint

from drakebots.hamr import model as hamr_model
from drakebots.hamr.model import (
    ACTUATOR_FORCE_LIMITS,
    BASE_JOINTS,
    DEFAULT_FRICTION,
    FLEXURES,
    JOINTS,
    LEGS,
    LOOP_HINGES,
    SURFACE_FRICTION,
    FootPoint,
)
from drakebots.models import FindModel
from drakebots.robots.base import Robot

__all__ = [
    "ACTUATOR_ORIENTATION",
    "BASE_JOINTS",
    "FOOT_BODIES",
    "GRAVITY",
    "HOME_BASE_HEIGHT",
    "LEGS",
    "SURFACE_FRICTION",
    "AddHamr",
    "ActuatorForceLimits",
    "ActuatorNames",
    "FlexureStiffness",
    "FootPoint",
    "HamrLoopConstraints",
    "HamrPositionIndex",
    "HamrRobot",
    "HingeLoopConstraints",
    "HomePositions",
    "JointDamping",
    "LegTransmissionJacobian",
    "SurfaceFriction",
]

MODEL_URL = "package://drakebots/hamr_vi/hamr_vi.sdf"

GRAVITY = 9.81e-3
"""Gravity, mm/ms² (9.81 m/s² in the model's units)."""

HOME_BASE_HEIGHT = 12.69
"""Height of the chassis frame above the ground when standing, mm (the authors' nominal x0)."""

FOOT_BODIES = {leg: f"{leg}_L4" for leg in LEGS}
"""Leg -> the link carrying its foot point (`FootPoint(leg)` in that link's frame)."""

ACTUATOR_ORIENTATION = {
    f"{leg}_{kind}": (-1.0 if leg[0] == "F" else 1.0) for leg in LEGS for kind in ("swing", "lift")
}
"""Actuator -> bender orientation (+1 pointing forward, -1 backward) in the piezo force model;
the reference's default: front actuators -1, rear actuators +1 (their HamrActuators class)."""

FLOATING_BASES = ("joints", "rpy_floating_joint", "fixed")
LOOP_CLOSURES = ("auto", "ball", "none")


def SurfaceFriction(surface: str) -> float:
    """The friction coefficient of a named surface (teflon, cardstock, sandpaper).

    Raises:
        ValueError: for an unknown surface; the message lists the known ones.
    """
    if surface not in SURFACE_FRICTION:
        known = ", ".join(sorted(SURFACE_FRICTION))
        raise ValueError(f"unknown surface '{surface}'; known surfaces: {known}")
    return SURFACE_FRICTION[surface]


def ActuatorNames() -> list[str]:
    """The 8 actuator (= actuator joint) names in the plant's actuation order."""
    return [f"{leg}_{kind}" for leg in LEGS for kind in ("swing", "lift")]


def ActuatorForceLimits() -> dict[str, float]:
    """Actuator name -> force bound, N (symmetric: |u| <= bound)."""
    return {name: ACTUATOR_FORCE_LIMITS[name.split("_")[1]] for name in ActuatorNames()}


def JointDamping() -> dict[str, float]:
    """Joint name -> viscous damping (N·ms/mm for actuators, N·mm·ms/rad for flexures)."""
    return {joint.name: joint.damping for joint in JOINTS}


def FlexureStiffness() -> dict[str, float]:
    """Joint name -> spring stiffness about zero (N/mm for actuators, N·mm/rad for flexures)."""
    return {joint.name: joint.stiffness for joint in JOINTS}


def _ModelText(*, floating_base: bool, friction: float | None) -> str:
    """The model's SDFormat text: the committed file, or the generator's variant without base."""
    if floating_base:
        text = FindModel(MODEL_URL).read_text()
    else:
        text = hamr_model.MakeHamrSdf(floating_base=False)
    if friction is not None:
        mu = f"{DEFAULT_FRICTION:.6g}"
        for tag in ("drake:mu_static", "drake:mu_dynamic"):
            text = text.replace(f"<{tag}>{mu}</{tag}>", f"<{tag}>{friction:.9g}</{tag}>")
    return text


def AddHamr(
    plant: MultibodyPlant,
    *,
    model_name: str = "hamr_vi",
    floating_base: str = "joints",
    loop_closure: str = "auto",
    surface: str | None = None,
    set_gravity: bool = True,
) -> ModelInstanceIndex:
    """Adds HAMR-VI to `plant` (not finalized) with its home pose as the default positions.

    Args:
        plant: a MultibodyPlant in mm/ms/g units (its other models must use them too).
        model_name: the model instance name.
        floating_base: "joints" (default: 3 prismatic + 3 revolute joints, q = [x, y, z, yaw,
            pitch, roll, legs], v = q̇), "rpy_floating_joint" (Drake's RpyFloatingJoint: the same
            q, but v = [ω_WB in world, v_WB], so q̇ = N(q) v), or "fixed" (chassis welded to the
            world at the home height: 32 coordinates, for bench-top tests of the legs).
        loop_closure: "ball" adds a Drake ball constraint at each of the 12 loop hinges (needs a
            discrete plant with a SAP contact approximation); "none" adds nothing (use
            `HamrLoopConstraints` in your own equations); "auto" is "ball" for a discrete plant
            and "none" for a continuous one.
        surface: "teflon", "cardstock" or "sandpaper" sets the feet's friction coefficient to the
            paper's value for that surface (the ground must use the same value: Drake combines
            the two coefficients); None keeps the model file's cardstock value.
        set_gravity: set the plant's gravity to 9.81e-3 mm/ms² (the model's units).

    Returns:
        The model instance.

    Raises:
        ValueError: for an unknown option or surface.
    """
    if floating_base not in FLOATING_BASES:
        raise ValueError(f"floating_base '{floating_base}' is not one of {FLOATING_BASES}")
    if loop_closure not in LOOP_CLOSURES:
        raise ValueError(f"loop_closure '{loop_closure}' is not one of {LOOP_CLOSURES}")
    friction = SurfaceFriction(surface) if surface is not None else None
    parser = Parser(plant)
    if model_name != "hamr_vi":
        parser.SetAutoRenaming(True)
    text = _ModelText(floating_base=floating_base == "joints", friction=friction)
    (instance,) = parser.AddModelsFromString(text, "sdf")
    if model_name != "hamr_vi":
        plant.RenameModelInstance(instance, model_name)
    home = _HomeJointPositions()
    chassis = plant.GetBodyByName("chassis", instance)
    if floating_base == "rpy_floating_joint":
        joint = plant.AddJoint(RpyFloatingJoint("base", plant.world_frame(), chassis.body_frame()))
        joint.set_default_translation([0.0, 0.0, HOME_BASE_HEIGHT])
        joint.set_default_angles([0.0, 0.0, 0.0])
    elif floating_base == "fixed":
        plant.WeldFrames(
            plant.world_frame(),
            chassis.body_frame(),
            RigidTransform([0.0, 0.0, HOME_BASE_HEIGHT]),
        )
    for name, value in home.items():
        if name in BASE_JOINTS and floating_base != "joints":
            continue
        plant.GetJointByName(name, instance).set_default_positions([value])
    if set_gravity:
        plant.mutable_gravity_field().set_gravity_vector([0.0, 0.0, -GRAVITY])
    if loop_closure == "ball" or (loop_closure == "auto" and plant.time_step() > 0.0):
        for hinge in LOOP_HINGES:
            # A ball constraint keeps the hinge points together (3 rows); the row along the hinge
            # axis is redundant with the mechanism (the authors drop it, Eq. 2), which SAP's
            # regularised constraint solve tolerates.
            plant.AddBallConstraint(
                plant.GetBodyByName(hinge.body_A, instance),
                np.asarray(hinge.p_AP, float),
                plant.GetBodyByName(hinge.body_B, instance),
                np.asarray(hinge.p_BQ, float),
            )
    return instance


def HamrPositionIndex(plant: MultibodyPlant, joint_name: str, instance=None) -> int:
    """Index in the plant's q of a 1-dof HAMR joint ("base_z", "FL_swing", "RR_fb3", ...)."""
    if instance is None:
        joint = plant.GetJointByName(joint_name)
    else:
        joint = plant.GetJointByName(joint_name, instance)
    return int(joint.position_start())


# ---- Loop-closure constraints (paper Eq. 2) -------------------------------------------------


class HingeLoopConstraints:
    """Position-level loop closures c(q) = 0 of a plant whose loops are closed by hinges.

    Each hinge joins frame A (on one body; its z axis is the hinge axis) and frame B (on another
    body; its origin is the hinge point on that body). The loop is closed when B's origin lies on
    A's z axis through A's origin, i.e. when the two components of p_AoBo along A's x and y axes
    vanish. Those are the 2 rows per hinge the paper keeps (Eq. 2): the third component (along the
    axis) is fixed by the rest of the mechanism, so including it would make the constraint
    Jacobian rank deficient and break constraint qualification in an NLP.

    Works for any MultibodyPlant (float or AutoDiffXd) that holds the frames; the frames are looked
    up by index, so a plant and its `ToAutoDiffXd()` twin share one instance of this class.

    Args:
        plant: a finalized MultibodyPlant (float).
        hinges: list of (name, frame_A, frame_B).

    Example (MathematicalProgram)::

        loops = HamrLoopConstraints(plant)
        q = prog.NewContinuousVariables(plant.num_positions(), "q")
        loops.AddToProgram(prog, q)           # c(q) = 0 with the analytic Jacobian
    """

    def __init__(self, plant: MultibodyPlant, hinges):
        self._names = [name for name, _, _ in hinges]
        self._frames = [(A.index(), B.index()) for _, A, B in hinges]
        self._plant = plant
        self._context = plant.CreateDefaultContext()
        self._nq = plant.num_positions()
        self._frame_cache = {}  # id(plant) -> (plant, [(frame_A, frame_B)]): no lookups per call

    def _Frames(self, plant):
        cached = self._frame_cache.get(id(plant))
        if cached is None or cached[0] is not plant:
            frames = [(plant.get_frame(a), plant.get_frame(b)) for a, b in self._frames]
            cached = self._frame_cache[id(plant)] = (plant, frames)
        return cached[1]

    def num_constraints(self) -> int:
        """Rows of c(q): 2 per hinge."""
        return 2 * len(self._frames)

    def hinge_names(self) -> list[str]:
        return list(self._names)

    def constraint_names(self) -> list[str]:
        """Row names, "<hinge>.x" and "<hinge>.y" (components in the hinge frame A)."""
        return [f"{name}.{axis}" for name in self._names for axis in ("x", "y")]

    def Eval(self, plant, context) -> np.ndarray:
        """c(q), mm: shape (num_constraints,), dtype following the plant (float or AutoDiffXd).

        Args:
            plant: this plant or its AutoDiffXd twin (finalized).
            context: a context of `plant` holding q.
        """
        rows = []
        for A, B in self._Frames(plant):
            p = plant.CalcRelativeTransform(context, A, B).translation()
            rows += [p[0], p[1]]
        return np.array(rows)

    def Jacobian(self, plant, context) -> np.ndarray:
        """∂c/∂q, (num_constraints, nq), dtype following the plant.

        Built from Drake's translational Jacobian of each hinge point B measured and expressed in
        frame A with respect to q̇ (so it is ∂c/∂q for any floating base, not only v = q̇).
        """
        blocks = []
        origin = np.zeros(3)
        for A, B in self._Frames(plant):
            J = plant.CalcJacobianTranslationalVelocity(
                context, JacobianWrtVariable.kQDot, B, origin, A, A
            )
            blocks.append(J[:2])
        return np.vstack(blocks)

    def Residual(self, q: np.ndarray) -> np.ndarray:
        """c(q) for a float q (uses the float plant this was built with), mm."""
        self._plant.SetPositions(self._context, np.asarray(q, float))
        return self.Eval(self._plant, self._context)

    def EvalForProgram(self, q):
        """c(q) for a MathematicalProgram evaluator: float q -> float; AutoDiffXd q -> AutoDiffXd
        whose gradient is (∂c/∂q) · ∂q/∂x, from the float plant (no AutoDiff multibody pass)."""
        q = np.asarray(q)
        if q.dtype == object:
            value = ExtractValue(q).reshape(-1)
            self._plant.SetPositions(self._context, value)
            c = self.Eval(self._plant, self._context)
            J = self.Jacobian(self._plant, self._context)
            return InitializeAutoDiff(c, J @ ExtractGradient(q))
        return self.Residual(q)

    def AddToProgram(self, prog, q_vars, *, description: str = "loop_closure"):
        """Adds c(q_vars) = 0 to `prog` and returns the binding (named `description`)."""
        binding = prog.AddConstraint(
            self.EvalForProgram,
            lb=np.zeros(self.num_constraints()),
            ub=np.zeros(self.num_constraints()),
            vars=q_vars,
            description=description,
        )
        return binding


def HamrLoopConstraints(plant: MultibodyPlant, instance=None) -> HingeLoopConstraints:
    """The 24 loop-closure constraints of HAMR-VI (12 hinges: <leg>_s3, <leg>_l3, <leg>_fb2).

    Args:
        plant: a finalized plant holding HAMR (from `AddHamr`).
        instance: the model instance (default: the only one holding the frames).
    """
    hinges = []
    for hinge in LOOP_HINGES:
        if instance is None:
            A = plant.GetFrameByName(f"{hinge.name}_A")
            B = plant.GetFrameByName(f"{hinge.name}_B")
        else:
            A = plant.GetFrameByName(f"{hinge.name}_A", instance)
            B = plant.GetFrameByName(f"{hinge.name}_B", instance)
        hinges.append((hinge.name, A, B))
    return HingeLoopConstraints(plant, hinges)


# ---- Home pose ------------------------------------------------------------------------------


def _ScratchPlant() -> tuple[MultibodyPlant, ModelInstanceIndex]:
    plant = MultibodyPlant(time_step=0.0)
    parser = Parser(plant)
    (instance,) = parser.AddModelsFromString(_ModelText(floating_base=True, friction=None), "sdf")
    plant.mutable_gravity_field().set_gravity_vector([0.0, 0.0, -GRAVITY])
    plant.Finalize()
    return plant, instance


def SolveStandingPose(
    plant: MultibodyPlant,
    q_guess: np.ndarray,
    *,
    base_height: float = HOME_BASE_HEIGHT,
    swing: float = 0.0,
    tolerance: float = 1e-12,
    max_iterations: int = 50,
) -> np.ndarray:
    """Solves for the standing pose: level body at `base_height`, feet on z = 0, every swing
    actuator at `swing`, every loop closed (Newton's method on 32 equations in the 32 leg
    coordinates).

    Args:
        plant: a finalized float plant with HAMR's 6-joint floating base.
        q_guess: starting positions (e.g. zeros).
        base_height: chassis frame height, mm.
        swing: swing actuator deflection, mm.

    Returns:
        q (nq,) with c(q) = 0 and the foot heights zero to `tolerance` mm.

    Raises:
        RuntimeError: when Newton's method does not converge.
    """
    context = plant.CreateDefaultContext()
    loops = HamrLoopConstraints(plant)
    q = np.array(q_guess, float)
    base = [HamrPositionIndex(plant, name) for name in BASE_JOINTS]
    q[base] = [0.0, 0.0, base_height, 0.0, 0.0, 0.0]
    swings = [HamrPositionIndex(plant, f"{leg}_swing") for leg in LEGS]
    q[swings] = swing
    free = np.setdiff1d(np.arange(plant.num_positions()), base + swings)
    feet = [plant.GetFrameByName(f"{leg}_foot") for leg in LEGS]
    for _ in range(max_iterations):
        plant.SetPositions(context, q)
        residual = [loops.Eval(plant, context)]
        jacobian = [loops.Jacobian(plant, context)]
        for foot in feet:
            residual.append([foot.CalcPoseInWorld(context).translation()[2]])
            J = plant.CalcJacobianTranslationalVelocity(
                context,
                JacobianWrtVariable.kQDot,
                foot,
                np.zeros(3),
                plant.world_frame(),
                plant.world_frame(),
            )
            jacobian.append(J[2:3])
        r = np.concatenate(residual)
        if np.max(np.abs(r)) < tolerance:
            return q
        J = np.vstack(jacobian)[:, free]
        q[free] -= np.linalg.solve(J, r)
    raise RuntimeError(f"standing pose: Newton did not converge (|r| = {np.max(np.abs(r)):.3g})")


@functools.cache
def _HomeJointPositions() -> dict[str, float]:
    """Joint name -> home position of every 1-dof joint (computed once per process)."""
    plant, instance = _ScratchPlant()
    q = SolveStandingPose(plant, np.zeros(plant.num_positions()))
    home = {}
    for index in plant.GetJointIndices(instance):
        joint = plant.get_joint(index)
        if joint.num_positions() == 1:
            home[joint.name()] = float(q[joint.position_start()])
    return home


def HomePositions(plant: MultibodyPlant, instance=None) -> np.ndarray:
    """The home pose as the plant's q (whatever else the plant holds keeps its default).

    Standing, chassis frame 12.69 mm above the ground, level, feet on z = 0, swing actuators at
    zero deflection, every loop closed. Equal to the default positions `AddHamr` sets.
    """
    return plant.GetDefaultPositions()


def LegTransmissionJacobian(plant: MultibodyPlant, context, leg: str) -> np.ndarray:
    """H (paper Eq. 19): foot velocity in the chassis frame per actuator velocity with the leg's
    loops closed, shape (3, 2), columns [swing, lift], mm/mm.

    H = ∂f/∂q_i - ∂f/∂q_d (∂c/∂q_d)⁻¹ ∂c/∂q_i, with q_i the leg's two actuator coordinates, q_d
    its six flexure angles, c the leg's six loop-closure rows and f the foot point in the
    chassis frame.
    """
    loops = HamrLoopConstraints(plant)
    rows = [k for k, name in enumerate(loops.constraint_names()) if name.startswith(leg)]
    C = loops.Jacobian(plant, context)[rows]
    chassis = plant.GetBodyByName("chassis").body_frame()
    F = plant.CalcJacobianTranslationalVelocity(
        context,
        JacobianWrtVariable.kQDot,
        plant.GetFrameByName(f"{leg}_foot"),
        np.zeros(3),
        chassis,
        chassis,
    )
    independent = [HamrPositionIndex(plant, f"{leg}_{kind}") for kind in ("swing", "lift")]
    dependent = [HamrPositionIndex(plant, f"{leg}_{name}") for name in FLEXURES]
    return F[:, independent] - F[:, dependent] @ np.linalg.solve(C[:, dependent], C[:, independent])


# ---- The registry's Robot -------------------------------------------------------------------

HAMR_UNITS = {
    "length": "mm",
    "mass": "g",
    "time": "ms",
    "force": "N",
    "torque": "N*mm",
    "angle": "rad",
    "linear_stiffness": "N/mm",
    "torsional_stiffness": "N*mm/rad",
    "voltage": "V",
}


@dataclasses.dataclass
class HamrRobot(Robot):
    """HAMR-VI in the robot registry (mm, ms, g).

    Attributes:
        replay_slow_motion: how much slower than real time a replay should play (a 10 Hz trot
            is a blur in real time).
    """

    replay_slow_motion: float = 20.0

    def AddTo(self, plant: MultibodyPlant) -> ModelInstanceIndex:
        return AddHamr(plant)

    def num_loop_constraints(self) -> int:
        return 2 * len(LOOP_HINGES)

    def ExtraInfo(self, plant, context) -> dict:
        loops = HamrLoopConstraints(plant)
        J = loops.Jacobian(plant, context)
        residual = loops.Eval(plant, context)
        return {
            "num_loop_constraints": loops.num_constraints(),
            "loop_jacobian_rank": int(np.linalg.matrix_rank(J, tol=1e-9 * np.max(np.abs(J)))),
            "loop_residual_at_home": float(np.max(np.abs(residual))),
            "loop_hinges": loops.hinge_names(),
            "floating_base": "prismatic x, y, z + revolute yaw, pitch, roll joints; v = qdot",
            "surfaces": dict(SURFACE_FRICTION),
            "actuator_force_limits": ActuatorForceLimits(),
            "actuator_orientation": dict(ACTUATOR_ORIENTATION),
            "drive_voltage_range": [0.0, 225.0],
            "feet": {
                leg: {"body": FOOT_BODIES[leg], "point": FootPoint(leg).tolist()} for leg in LEGS
            },
            "flexure_stiffness": FlexureStiffness(),
            "joint_damping": JointDamping(),
        }


def MakeRobot(name: str) -> HamrRobot:
    """Registry factory (drakebots.robots.GetRobot)."""
    if name != "hamr_vi":
        raise KeyError(name)
    return HamrRobot(
        name="hamr_vi",
        family="hamr",
        description="HAMR-VI microrobot: 1.475 g, 38 coordinates, 24 loop constraints, 8 piezos",
        units=dict(HAMR_UNITS),
        gravity=GRAVITY,
        base_body="chassis",
        nominal_base_height=HOME_BASE_HEIGHT,
    )


def BaseRollPitchYaw(q: np.ndarray, plant: MultibodyPlant) -> RollPitchYaw:
    """The chassis orientation as Drake's RollPitchYaw from a q of the 6-joint base."""
    yaw, pitch, roll = (q[HamrPositionIndex(plant, n)] for n in BASE_JOINTS[3:])
    return RollPitchYaw(roll, pitch, yaw)


# ---- Generated files ------------------------------------------------------------------------


def MakeSceneYaml() -> str:
    """models/hamr_vi/scene.dmd.yaml: the robot in its home pose (loops are not closed by a
    directive file: use AddHamr, or close them yourself from the <hinge>_A/_B frames)."""
    home = _HomeJointPositions()
    lines = [
        "# Generated by scripts/generate_hamr_vi.py; do not edit by hand.",
        "# HAMR-VI in its home pose (mm, ms, g). Load with LoadModelDirectives after",
        "# drakebots.models.ConfigureParser, and set the plant's gravity to [0, 0, -9.81e-3].",
        "# The 12 loop hinges are frames, not joints: drakebots.hamr.robot.AddHamr closes them.",
        "directives:",
        "- add_model:",
        "    name: hamr_vi",
        f"    file: {MODEL_URL}",
        "    default_joint_positions:",
    ]
    for name, value in home.items():
        # Absolute 1e-12 (mm or rad): far below the loops' 1e-6 mm tolerance, and above the
        # standing-pose solve's round-off (1e-24 here), which differs between machines' BLAS.
        value = round(value, 12) + 0.0  # + 0.0 turns -0.0 into 0.0
        lines.append(f"      {name}: [{value:.12g}]")
    return "\n".join(lines) + "\n"


def GeneratedHamrFiles() -> dict[str, str]:
    """models/-relative path -> text of every generated HAMR-VI file."""
    return {
        "hamr_vi/hamr_vi.sdf": hamr_model.MakeHamrSdf(),
        "hamr_vi/scene.dmd.yaml": MakeSceneYaml(),
    }
