"""The folding-region experiment (skinned-quad-robots.txt section 7, Fig. 17).

The ankle motor of the beetle, limited to its stall torque (MG995R, 1.96 N*m), is programmed to
bend the ankle to 70 degrees within 2 s while the limb's skin resists. The paper: a smooth skin
stops the motor near 20 degrees; with a folding region (an 8 mm gear-tooth sweep cut, Fig. 8) the
motor reaches the target.

The model here is the paper's limb skin piece (section 6.2: "one limb has one skin piece"): the
skin of the lower leg and the foot, glued to both links at their bracing units; the lower leg is
held fixed (welded to the world, clear of the ground) and the foot turns about the ankle axis,
driven by the servo law tau = clamp(K_p (q_d - q) + K_d (v_d - v), +-U_m) with the ramp
q_d = target * t / T. Skeleton and skin are solved coupled (CoupledSkinSkeleton, Eq. 2).
"""

import dataclasses

import numpy as np
from pydrake.math import RigidTransform
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import (
    PdControllerGains,
    RevoluteJoint,
    RotationalInertia,
    SpatialInertia,
)

from drakebots.fem.materials import Material
from drakebots.fem.model import FemModel
from drakebots.fem.solvers import Factorize
from drakebots.skinned.skeleton import SkeletonParams, _Build, _MassProperties
from drakebots.skinned.skin import Skin
from drakebots.skinned.skin_coupling import CoupledSkinSkeleton, CouplingConfig

# Height of the experiment above the ground (the limb hangs in the air), m.
CLEARANCE = 0.5


@dataclasses.dataclass
class BendRunConfig:
    """The experiment's inputs (SI units)."""

    # The ankle joint to bend.
    joint: str = "front_left_ankle"
    # Target angle, rad (paper: 70 degrees).
    target: float = np.deg2rad(70.0)
    # Time to reach the target, s (paper: 2 s).
    duration: float = 2.0
    # Time the motor then holds the target, s, so the reached angle is where the servo settles
    # (the paper reports the angle the motor reaches, not where the ramp's end finds it).
    hold: float = 0.5
    # Motor torque limit, N*m (paper: 1.96, MG995R).
    torque_limit: float = 1.96
    # Coupled time step, s (the bend is slow: quasi-static).
    time_step: float = 0.02


@dataclasses.dataclass
class BendRun:
    """Angle and torque histories of one skin."""

    times: np.ndarray
    angle: np.ndarray  # rad
    target: np.ndarray  # rad
    torque: np.ndarray  # N*m
    skin_frames: np.ndarray  # (T, 3n) m, experiment frame (lifted by CLEARANCE)
    glue_residual: np.ndarray
    newton_iterations: np.ndarray
    failure: str | None
    # The servo's proportional band U_m / K_p, rad: short of its target by more than this, a
    # servo tau = K_p (q_d - q) is at its torque limit.
    servo_band: float = np.inf

    @property
    def reached(self) -> float:
        return float(self.angle[-1])

    @property
    def stalled(self) -> bool:
        """Whether the skin stopped the motor: at the end the servo is short of its target by
        more than its proportional band, so it pushes at its torque limit and cannot go on."""
        return bool(abs(self.target[-1] - self.angle[-1]) >= self.servo_band)

    @property
    def max_angle(self) -> float:
        return float(np.max(np.abs(self.angle)))


def LinearBendStiffness(params: SkeletonParams, skin: Skin, joint_name: str) -> tuple:
    """(k, mode): the skin's small-strain resistance to turning the joint, N*m/rad.

    The coupled system (Eq. 2) at rest with the joint angle as the skeleton's only coordinate and
    no inertia: the glue vertices on the links the joint moves (its child and the child's
    descendants) turn rigidly about the joint axis (G = a x (x - p) per radian), all other glue
    vertices stay put, the free vertices take their elastic equilibrium, and K is the skin's rest
    stiffness (neo-Hookean at F = I: linear elasticity with the same E and nu). A unit torque
    turns the joint by 1 / k; tau / k is the angle a motor limited to tau reaches while strains
    stay small, without gravity. Works for a limb piece (the joint's two links) and for a
    whole-body skin (a hip turns the whole leg's glue). `mode` (n, 3) is the skin's displacement
    per radian, m/rad.
    """
    if joint_name not in {j.name for j in _Build(params).joints}:
        raise KeyError(joint_name)
    return JointStiffnesses(params, skin, [joint_name])[joint_name]


def JointStiffnesses(params: SkeletonParams, skin: Skin, joint_names=None) -> dict:
    """{joint: (k, mode)} of `LinearBendStiffness` for several joints (default: every joint the
    skin can resist), with one factorisation of the free vertices' stiffness (every glue vertex
    is prescribed in each case; only its prescribed motion differs). Raises ValueError for a
    named joint the skin has no glue on either side of."""
    built = _Build(params)
    joints = {j.name: j for j in built.joints}
    fem = FemModel(
        skin.mesh,
        Material(youngs_modulus=skin.youngs_modulus, poissons_ratio=skin.poissons_ratio),
        youngs_scale=skin.ElementYoungsScale(),
    )
    x0 = skin.mesh.vertices
    links = np.asarray(skin.glue_links)
    glue = np.asarray(skin.glue_vertices)
    columns, names = [], []
    for name in joint_names if joint_names is not None else list(joints):
        joint = joints[name]
        moved = {joint.child}
        grew = True
        while grew:
            grew = False
            for j in built.joints:
                if j.parent in moved and j.child not in moved:
                    moved.add(j.child)
                    grew = True
        on_child = np.isin(links, sorted(moved))
        if not np.any(on_child) or np.all(on_child):
            if joint_names is None:
                continue
            raise ValueError(
                f"the skin has no glue on "
                f"{'the links ' + name + ' moves' if not np.any(on_child) else joint.parent}: "
                f"it cannot resist {name}"
            )
        axis = np.asarray(joint.axis, float) / np.linalg.norm(joint.axis)
        G = np.zeros((len(glue), 3))
        G[on_child] = np.cross(axis, x0[glue[on_child]] - built.links[joint.child].origin)
        columns.append(G.ravel())
        names.append(name)
    # A joint turned by one radian prescribes the glue; the free vertices solve K_ff u_f =
    # -K_fg u_g, and k = u^T K u is the energy per rad^2 twice (a skin the joint turns rigidly,
    # e.g. a limb piece under its hip, gives k = 0 where the torque form 1 / dq would not solve).
    if not names:
        return {}
    pinned = (3 * glue[:, None] + np.arange(3)).ravel()
    K = fem.RestStiffness().tocsr()
    free = np.ones(3 * len(x0), bool)
    free[pinned] = False
    U = np.zeros((3 * len(x0), len(names)))
    U[pinned] = np.column_stack(columns)
    factor = Factorize(K[free][:, free])
    U[free] = factor.solve(-(K[free][:, pinned] @ U[pinned]))
    return {
        name: (float(U[:, c] @ (K @ U[:, c])), U[:, c].reshape(-1, 3))
        for c, name in enumerate(names)
    }


def MakeLimbPlant(params: SkeletonParams, joint_name: str, torque_limit: float):
    """(plant, instance, parent link, child link): the parent welded at its home pose lifted by
    CLEARANCE, the child on a revolute joint about the skeleton's joint axis with a servo."""
    built = _Build(params)
    joint = next((j for j in built.joints if j.name == joint_name), None)
    if joint is None:
        raise KeyError(joint_name)
    plant = MultibodyPlant(0.0)
    instance = plant.AddModelInstance("limb")
    bodies = {}
    for name in (joint.parent, joint.child):
        link = built.links[name]
        mass, com, inertia = _MassProperties(link)
        I = RotationalInertia(
            inertia[0, 0],
            inertia[1, 1],
            inertia[2, 2],
            inertia[0, 1],
            inertia[0, 2],
            inertia[1, 2],
        )
        bodies[name] = plant.AddRigidBody(
            name, instance, SpatialInertia.MakeFromCentralInertia(max(mass, 1e-3), com, I)
        )
    lift = np.array([0.0, 0.0, CLEARANCE])
    parent, child = built.links[joint.parent], built.links[joint.child]
    plant.WeldFrames(
        plant.world_frame(),
        bodies[joint.parent].body_frame(),
        RigidTransform(parent.origin + lift),
    )
    frame_on_parent = plant.AddFrame(
        _FixedOffsetFrame(
            f"{joint_name}_parent", bodies[joint.parent], child.origin - parent.origin
        )
    )
    revolute = plant.AddJoint(
        RevoluteJoint(
            joint_name,
            frame_on_parent,
            bodies[joint.child].body_frame(),
            joint.axis,
            params.motor.damping,
        )
    )
    actuator = plant.AddJointActuator(f"{joint_name}_motor", revolute, torque_limit)
    actuator.set_controller_gains(PdControllerGains(p=params.motor.kp, d=params.motor.kd))
    plant.Finalize()
    return plant, instance, joint.parent, joint.child


def _FixedOffsetFrame(name, body, offset):
    from pydrake.multibody.tree import FixedOffsetFrame

    return FixedOffsetFrame(name, body.body_frame(), RigidTransform(np.asarray(offset, float)))


def RunBend(params: SkeletonParams, skin: Skin, config: BendRunConfig, *, progress=None) -> BendRun:
    """Bends the joint with the skin piece attached; returns the histories.

    The servo's target ramps to `config.target` over `config.duration`, then stays there for
    `config.hold` while the joint settles.

    Args:
        params: the skeleton's parameters.
        skin: a skin piece of the joint's two links (MakeSkin with options.links).
        config: BendRunConfig.
        progress: optional callable(fraction) per step.
    """
    plant, instance, _, _ = MakeLimbPlant(params, config.joint, config.torque_limit)
    shifted = dataclasses.replace(skin)
    stepper = CoupledSkinSkeleton(
        plant,
        instance,
        shifted,
        CouplingConfig(time_step=config.time_step, max_iterations=40),
        lift=CLEARANCE,
        skeleton=params,
    )
    state = stepper.DefaultState()
    h = config.time_step
    steps = int(round((config.duration + config.hold) / h))
    rate = config.target / config.duration

    def Ramp(t):
        # The ramp toward the target, of either sign, then the target held.
        return config.target * min(t / config.duration, 1.0)

    times, angle, target, torque, frames, residual, iterations = [], [], [], [], [], [], []
    failure = None
    for k in range(steps + 1):
        t = k * h
        q_d = Ramp(t + h)
        v_d = rate if t + h < config.duration else 0.0
        times.append(t)
        angle.append(float(state.q[0]))
        target.append(Ramp(t))
        frames.append(state.x.astype(np.float32))
        if k == steps:
            torque.append(torque[-1] if torque else 0.0)
            residual.append(residual[-1] if residual else 0.0)
            iterations.append(0)
            break
        try:
            state, info = stepper.Step(state, desired=np.array([q_d, v_d]), time_s=t)
        except Exception as e:  # noqa: BLE001 - the run stops with the reason, results kept.
            failure = f"stopped at t = {t:.3f} s: {e}"
            torque.append(torque[-1] if torque else 0.0)
            residual.append(np.nan)
            iterations.append(0)
            break
        torque.append(float(info.actuation[0]))
        residual.append(info.glue_residual)
        iterations.append(info.newton_iterations)
        if progress is not None:
            progress((k + 1) / steps)
    return BendRun(
        times=np.array(times),
        angle=np.array(angle),
        target=np.array(target),
        torque=np.array(torque),
        skin_frames=np.array(frames),
        glue_residual=np.array(residual),
        newton_iterations=np.array(iterations),
        failure=failure,
        servo_band=config.torque_limit / params.motor.kp,
    )
