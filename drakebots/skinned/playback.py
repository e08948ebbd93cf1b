"""Playing a motion plan back in Drake's own simulator: the independent check of a design.

A skinned quad-robot's skeleton in a discrete MultibodyPlant (SAP, point contact at the four sole
corners of each foot, Coulomb friction, the skeleton's own contact stiffness: the same plant
`drakebots simulate` uses), its motors driven by the plan's torques as feed-forward plus the
servos' own joint PD toward the planned joint angles (the plant's PD-controlled actuators: the
SAP solver applies u = -K_p (q - q_d) - K_d (v - v_d) + u_ff implicitly and clamps it at the motor's
effort limit, as a hobby servo saturates):

    plan (q_d, v_d, u_ff) -> MultibodyPlant (SAP, 1 ms) <-> SceneGraph -> state, contact results

Nothing of the optimizer's contact model is used, so the playback answers "is the plan
physically executable?" independently: does the torso follow, do the feet stay where they were put,
where do the ground forces act (COP), and how much of the torque do the PD corrections add.
A plan made on a FEM skin (`drakebots design --skin`) is also replayed open loop in the coupled
skin-skeleton simulator (`PlaybackFramesCoupled`). Units: SI.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
from pydrake.multibody.tree import JointActuatorIndex, RotationalInertia, SpatialInertia
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder
from pydrake.systems.primitives import ConstantVectorSource

from drakebots.robots.base import Robot
from drakebots.systems.ground import AddGround, SetFriction

FOOT_NAMES = ("front_left_foot", "front_right_foot", "rear_left_foot", "rear_right_foot")
# The replays report how long the torso stays within this distance of the plan, m, and how long
# its whole pose does: the distance and each of its three angles within TORSO_TOLERANCE_DEG, deg.
# 5 deg turns a point at the monster's torso corners (0.25 m from its centre) by about 2 cm,
# atan(0.02 / 0.25) = 4.6 deg: a torso off by 5 deg is as far from its plan as one moved 2 cm.
# A distance alone called a walk held whose torso was pitched 15 deg off at its end (issue 69,
# Findings 31).
TORSO_TOLERANCE_M = 0.02
TORSO_TOLERANCE_DEG = 5.0


@dataclasses.dataclass
class PlaybackConfig:
    """Options of a plan playback (SI units)."""

    # Discrete plant time step, s.
    time_step: float = 1e-3
    # Every contact's Coulomb friction μ, static = dynamic (the ground's and the robot's
    # collision geometries' set to it: the plan's μ, which the plan used for the foot-ground
    # pair). None: the ground's 0.8, which Drake combines with each foot's own from the robot
    # file (2 μ_a μ_b / (μ_a + μ_b)).
    friction: float | None = None
    # Multiplies the servos' PD gains from the model (0: torques only, open loop).
    pd_scale: float = 1.0


@dataclasses.dataclass
class PlaybackResult:
    """What the simulator did with the plan, sampled at the plan's frames.

    Attributes:
        times: (N,) s.
        positions, velocities: (N, nq), (N, nv) the plant's state (quaternion floating torso).
        torso_xyz: (N, 3) torso origin, m; torso_rpy: (N, 3) roll, pitch, yaw, rad.
        foot_forces: (N, 4, 3) ground force on each foot (sum over its contact points), N.
        cop: (N, 2) centre of pressure of all ground forces (NaN when airborne), m.
        actuation: (N, nu) net motor torque the plant applied (feed-forward + PD, clamped), N·m.
        actuator_names: names in the order of `actuation`.
        wall_time: s.
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    torso_xyz: np.ndarray
    torso_rpy: np.ndarray
    foot_forces: np.ndarray
    cop: np.ndarray
    actuation: np.ndarray
    actuator_names: list
    wall_time: float


def _EffortLimits(effort_limits, nu: int, where: str) -> np.ndarray:
    """(nu,) motor limits U_m, N·m, checked: one positive value per motor."""
    limits = np.array(effort_limits, dtype=float)
    if limits.shape != (nu,) or not np.all(limits > 0.0):
        raise ValueError(
            f"{where}: effort_limits must be {nu} positive values (one per motor), got {limits}"
        )
    return limits


# What a coupled replay's checkpoint file holds (PlaybackFramesCoupled's `checkpoint`).
CHECKPOINT_FORMAT = "drakebots coupled replay checkpoint, version 2"


class ReplayCheckpointMismatch(ValueError):
    """The file given as a coupled replay's checkpoint is not this replay's: not a checkpoint
    at all, or one of another plan, skin, start state or simulator setting. It is left as it is
    (a user's file is never overwritten)."""


# Two runs of one design differ in round-off (its element loops and PARDISO sum on two threads
# in varying order): the beetle's lift designed twice replayed 0.3083338583729 against
# 0.3083338582447 mm off. A checkpoint's plan and start state are therefore compared within
# this tolerance (relative to each array's largest entry), not bit for bit.
PLAN_TOLERANCE = 1e-8


class _ReplayIdentity:
    """What a replay's states depend on, as a checkpoint records it: the simulator's settings
    (CouplingConfig, the contact formulation included), the skin's rest mesh and material and the
    motors' limits, compared exactly (`key`, which also names the plan's length); the plan's
    positions (the torso's reference) and torques and the start state, compared within
    PLAN_TOLERANCE (`arrays`).

    An open-loop replay's first k frames are the same computation whatever frames follow them,
    so a checkpoint of the same plan's first frames is this replay's too (`Mismatch`): a replay of
    a walk's first 60 frames resumes into the whole walk's, and one of a longer plan stopped
    within this one's frames into this one."""

    def __init__(self, stepper, initial, q, tau):
        fem = stepper.fem
        self._parts = (fem.RestPositions(), fem.mesh.tets, stepper.effort_limits)
        self._settings = repr(stepper.config) + repr(getattr(fem, "material", None))
        self.key = self._Key(np.shape(q), np.shape(tau))
        start = np.concatenate([initial.q, initial.v, initial.x, initial.w])
        self.arrays = {"plan_q": np.asarray(q), "plan_tau": np.asarray(tau), "start": start}

    def _Key(self, q_shape, tau_shape) -> str:
        """The digest of the settings with a plan of these shapes (a checkpoint's key)."""
        import hashlib

        digest = hashlib.sha256()
        for a in (*self._parts, q_shape, tau_shape):
            a = np.ascontiguousarray(a)
            digest.update(f"{a.dtype.str}{a.shape}".encode())
            digest.update(a.tobytes())
        # (the same bytes as one update per string: the keys of earlier checkpoints hold)
        digest.update(self._settings.encode())
        return digest.hexdigest()

    def CacheName(self) -> str:
        """The key with the arrays rounded to 1e-6 of their largest entry: one name for the
        same design run again (a name that round-off tips over a rounding edge only misses
        the checkpoint, and the replay starts over)."""
        import hashlib

        digest = hashlib.sha256(self.key.encode())
        for a in self.arrays.values():
            scale = max(float(np.abs(a).max(initial=0.0)), 1e-300)
            digest.update(np.round(a / scale, 6).tobytes())
        return digest.hexdigest()

    def Mismatch(self, saved: dict) -> str | None:
        """None where the checkpoint `saved` is this replay's, else what differs. A checkpoint
        of a plan of another length is this replay's where the two plans agree on the frames
        both have and it is no further than this replay's last frame."""
        q, tau = self.arrays["plan_q"], self.arrays["plan_tau"]
        if str(saved["key"]) != self._Key(saved["plan_q"].shape, saved["plan_tau"].shape):
            return "the skin, the simulator's settings or the motor limits differ"
        for name, a in self.arrays.items():
            b = saved[name]
            scale = float(np.abs(a).max(initial=0.0))
            if name != "start":  # the frames both plans have
                a, b = a[: len(b)], b[: len(a)]
            if b.shape != a.shape or not np.allclose(b, a, rtol=0, atol=PLAN_TOLERANCE * scale):
                return {
                    "plan_q": "the plan differs",
                    "plan_tau": "the torques differ",
                    "start": "the start differs",
                }[name]
        if int(saved["frame"]) > len(tau):
            return f"it is at frame {int(saved['frame'])}, past this replay's {len(q) - 1} frames"
        return None


def ReadReplayCheckpoint(path) -> dict | None:
    """A coupled replay's checkpoint (PlaybackFramesCoupled), or None where `path` does not
    exist. Raises ReplayCheckpointMismatch for a file that is not one."""
    from pathlib import Path

    path = Path(path)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            saved = {key: data[key] for key in data.files}
        if str(saved["format"]) != CHECKPOINT_FORMAT:
            raise KeyError("format")
    except (OSError, ValueError, KeyError, EOFError) as e:
        raise ReplayCheckpointMismatch(
            f"{path} is not a drakebots coupled replay checkpoint ({type(e).__name__}: {e}); "
            "it is left as it is: give a new path"
        ) from None
    return saved


def _HeldSeconds(times, distance_m, angles_rad=None) -> float:
    """How long a replay stayed near its plan, s: the time of the first frame whose torso is over
    TORSO_TOLERANCE_M from the plan's (distance_m (N,)) or, with angles_rad (N, 3) (the torso's
    angle differences, wrapped), turned over TORSO_TOLERANCE_DEG about any axis; the whole
    motion (times[-1]) if none is."""
    off = np.asarray(distance_m) > TORSO_TOLERANCE_M
    if angles_rad is not None:
        off |= np.abs(angles_rad).max(axis=1) > np.radians(TORSO_TOLERANCE_DEG)
    strayed = np.flatnonzero(off)
    return float(times[strayed[0]] if len(strayed) else times[-1])


def _OpenReplayCheckpoint(checkpoint, stepper, initial, q, tau):
    """(path or None, _ReplayIdentity or None, the saved checkpoint or None) for
    PlaybackFramesCoupled's `checkpoint` (None or False: none; True: the cache's file for this
    replay; else a path). Raises ReplayCheckpointMismatch for a path holding another replay's
    checkpoint or another file; the cache's file of another replay is started over."""
    if checkpoint is None or checkpoint is False:
        return None, None, None
    identity = _ReplayIdentity(stepper, initial, q, tau)
    ours = checkpoint is True
    if ours:
        from drakebots.cache import CacheEntry

        folder = CacheEntry("coupled_replays", [identity.CacheName()], "replay")
        checkpoint = folder / "checkpoint.npz"
    saved = ReadReplayCheckpoint(checkpoint)
    differs = None if saved is None else identity.Mismatch(saved)
    if differs is not None and not ours:
        raise ReplayCheckpointMismatch(
            f"{checkpoint} is the checkpoint of another replay ({differs}); it is left "
            "as it is: give a new path"
        )
    return checkpoint, identity, None if differs is not None else saved


def _WriteReplayCheckpoint(path, identity, frame, state, sim_q, ground, wall_s, ended) -> None:
    """The replay after `frame` frames, written whole or not at all (a temporary file renamed
    into place: a Ctrl-C or a crash mid-write leaves the last checkpoint)."""
    import io

    from drakebots.files import WriteWhole

    memory = state.memory
    buffer = io.BytesIO()
    np.savez(
        buffer,
        format=np.array(CHECKPOINT_FORMAT),
        key=np.array(identity.key),
        **identity.arrays,
        frame=np.array(frame),
        q=state.q,
        v=state.v,
        x=state.x,
        w=state.w,
        mode=memory.mode,
        slip_dir=memory.slip_dir,
        sim_q=np.asarray(sim_q),
        sim_cop=np.array([c for c, _ in ground], float).reshape(-1, 2),
        sim_ground_force=np.array([f for _, f in ground], float),
        wall_s=np.array(wall_s),
        ended=np.array(ended or ""),
    )
    WriteWhole(path, buffer.getvalue())


def SimulatePlan(
    robot: Robot,
    *,
    times: np.ndarray,
    q0: np.ndarray,
    v0: np.ndarray,
    joint_positions: np.ndarray,
    joint_velocities: np.ndarray,
    torques: np.ndarray,
    actuator_names: list,
    extra_masses: dict | None = None,
    config: PlaybackConfig | None = None,
    effort_limits: np.ndarray | None = None,
) -> PlaybackResult:
    """Simulates a skinned quad-robot's skeleton driven by a plan.

    Args:
        robot: the skeleton (drakebots.robots.GetRobot), with PD gains on its actuators.
        times: (N,) frame times of the plan, s (uniform).
        q0, v0: the plant's initial state (quaternion floating torso, `robot.AddTo` order).
        joint_positions, joint_velocities: (N, nu) the planned angle (rad) and rate (rad/s) of each
            motor's joint, ordered as `actuator_names`.
        torques: (N - 1, nu) feed-forward motor torques held over each frame, N·m.
        actuator_names: the motors' joint names (the plan's order).
        extra_masses: link name -> (mass kg, centre (3,) in the link frame m) welded to the links
            (the skin's weight the plan was made for).
        config: time step, friction, PD scale.
        effort_limits: (nu,) the motors' limits U_m, N·m, ordered as `actuator_names`, where
            they differ from the model file's (a design run's `--motor-limit`); the plant clamps
            each motor's net torque there.
    """
    config = config or PlaybackConfig()
    times = np.asarray(times, float)
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlant(
        MultibodyPlantConfig(
            time_step=config.time_step,
            discrete_contact_approximation="sap",
            contact_model="point",
        ),
        builder,
    )
    instance = robot.AddTo(plant)
    for link, (mass, center) in (extra_masses or {}).items():
        if mass <= 0.0:
            continue
        body = plant.AddRigidBody(
            f"{link}_extra",
            instance,
            SpatialInertia.MakeFromCentralInertia(
                mass, np.asarray(center, float), RotationalInertia(*(3 * [1e-6 * mass]))
            ),
        )
        plant.WeldFrames(plant.GetFrameByName(link, instance), body.body_frame())
    if config.friction is None:
        AddGround(plant)
    else:
        SetFriction(plant, scene_graph, instance, config.friction)
        AddGround(plant, mu_static=config.friction, mu_dynamic=config.friction)
    if effort_limits is not None:
        limits = _EffortLimits(effort_limits, len(actuator_names), "SimulatePlan")
        by_joint = dict(zip(actuator_names, limits))
        for index in map(JointActuatorIndex, range(plant.num_actuators())):
            actuator = plant.get_mutable_joint_actuator(index)
            actuator.set_effort_limit(float(by_joint[actuator.joint().name()]))
    if config.pd_scale != 1.0:
        # (GetJointActuatorIndices(instance) is empty before Finalize: go by index.)
        for index in map(JointActuatorIndex, range(plant.num_actuators())):
            # The mutable actuator: gains set on get_joint_actuator's (const) one are lost.
            actuator = plant.get_mutable_joint_actuator(index)
            gains = actuator.get_controller_gains()
            gains.p *= config.pd_scale
            gains.d *= config.pd_scale
            actuator.set_controller_gains(gains)
    plant.Finalize()
    order = [plant.get_joint_actuator(i).joint().name() for i in plant.GetJointActuatorIndices()]
    perm = [list(actuator_names).index(name) for name in order]
    nu = len(order)
    desired = builder.AddSystem(ConstantVectorSource(np.zeros(2 * nu)))
    builder.Connect(desired.get_output_port(), plant.get_desired_state_input_port(instance))
    feedforward = builder.AddSystem(ConstantVectorSource(np.zeros(nu)))
    builder.Connect(feedforward.get_output_port(), plant.get_actuation_input_port(instance))
    diagram = builder.Build()
    simulator = Simulator(diagram)
    context = simulator.get_mutable_context()
    plant_context = plant.GetMyMutableContextFromRoot(context)
    plant.SetPositions(plant_context, q0)
    plant.SetVelocities(plant_context, v0)
    desired_context = desired.GetMyMutableContextFromRoot(context)
    ff_context = feedforward.GetMyMutableContextFromRoot(context)
    feet = [plant.GetBodyByName(name, instance).index() for name in FOOT_NAMES]
    torso = plant.GetBodyByName(robot.base_body, instance)
    N = len(times)
    out = {
        "q": np.zeros((N, plant.num_positions())),
        "v": np.zeros((N, plant.num_velocities())),
        "xyz": np.zeros((N, 3)),
        "rpy": np.zeros((N, 3)),
        "forces": np.zeros((N, 4, 3)),
        "cop": np.full((N, 2), np.nan),
        "u": np.zeros((N, nu)),
    }
    from pydrake.math import RollPitchYaw

    def record(i):
        out["q"][i] = plant.GetPositions(plant_context)
        out["v"][i] = plant.GetVelocities(plant_context)
        X = plant.EvalBodyPoseInWorld(plant_context, torso)
        out["xyz"][i] = X.translation()
        out["rpy"][i] = RollPitchYaw(X.rotation()).vector()
        contact = plant.get_contact_results_output_port().Eval(plant_context)
        moment, total = np.zeros(2), 0.0
        for k in range(contact.num_point_pair_contacts()):
            info = contact.point_pair_contact_info(k)
            f = np.asarray(info.contact_force())  # on body B, world frame
            p = np.asarray(info.contact_point())
            a, b = info.bodyA_index(), info.bodyB_index()
            for j, foot in enumerate(feet):
                if b == foot:
                    out["forces"][i, j] += f
                    moment += p[:2] * f[2]
                    total += f[2]
                elif a == foot:
                    out["forces"][i, j] -= f
                    moment -= p[:2] * f[2]
                    total -= f[2]
        if total > 1e-6:
            out["cop"][i] = moment / total
        out["u"][i] = plant.get_net_actuation_output_port().Eval(plant_context)[np.argsort(perm)]

    start = time.perf_counter()
    simulator.Initialize()
    for i in range(N - 1):
        desired_context.get_mutable_numeric_parameter(0).set_value(
            np.concatenate([joint_positions[i + 1, perm], joint_velocities[i + 1, perm]])
        )
        ff_context.get_mutable_numeric_parameter(0).set_value(torques[i, perm])
        if i == 0:
            record(0)
        simulator.AdvanceTo(times[i + 1] - times[0])
        record(i + 1)
    return PlaybackResult(
        times=times,
        positions=out["q"],
        velocities=out["v"],
        torso_xyz=out["xyz"],
        torso_rpy=out["rpy"],
        foot_forces=out["forces"],
        cop=out["cop"],
        actuation=out["u"],
        actuator_names=list(actuator_names),
        wall_time=time.perf_counter() - start,
    )


def PlaybackFrames(
    robot: Robot,
    model,
    q_frames,
    tau,
    dt: float,
    *,
    pd_scale: float = 1.0,
    effort_limits: np.ndarray | None = None,
    friction: float | None = None,
):
    """Plays a frame-by-frame result (q̃ (N, nq) in the SkeletonModel's coordinates, τ (N-1, nu)
    N·m, frame step dt s) back in Drake (`SimulatePlan`, servo PD toward q̃ scaled by
    `pd_scale` plus τ as feed-forward; pd_scale 0: the torques alone, open loop) and compares:
    returns (figures dict, PlaybackResult). `effort_limits` (nu,) are the motors' U_m the
    result was made with, N·m (default: the model's); `friction` the μ the result was made for,
    given to every contact (default: the ground's 0.8 combined with the robot file's feet; a
    design passes its motion's).

    Figures: how long the torso stays within TORSO_TOLERANCE_M of q̃ (s, "torso_within_2cm_s")
    and how long its whole pose does (within that distance and TORSO_TOLERANCE_DEG about each
    axis, s, "torso_pose_held_s"), the torso's largest
    position (m) and roll/pitch/yaw (deg) differences from q̃ over the motion and at its end,
    the motors' largest joint-angle difference (deg), frames where no foot touches the ground,
    the largest net motor torque over U_m and the largest PD correction |u - τ| (N·m)."""
    q = np.asarray(q_frames, float)
    tau = np.asarray(tau, float)
    times = dt * np.arange(len(q))
    sel = model.actuated_indices
    qd = q[:, sel]
    vd = np.gradient(qd, dt, axis=0) if len(q) > 1 else np.zeros_like(qd)
    extra = {link: (m, model.skin_load.centers[link]) for link, m in model.skin_load.masses.items()}
    res = SimulatePlan(
        robot,
        times=times,
        q0=model.ToFloatingPositions(q[0]),
        v0=np.zeros(model.nv),
        joint_positions=qd,
        joint_velocities=vd,
        torques=tau,
        actuator_names=model.actuator_names,
        extra_masses=extra,
        config=PlaybackConfig(pd_scale=pd_scale, friction=friction),
        effort_limits=effort_limits,
    )
    limits = model.effort_limits if effort_limits is None else np.asarray(effort_limits, float)
    err = res.torso_xyz - q[:, :3]
    rpy = res.torso_rpy - q[:, [5, 4, 3]]
    rpy = (rpy + np.pi) % (2 * np.pi) - np.pi
    # The plant's joint positions in the plan's motor order (floating base: 7 quaternion + xyz).
    floating = np.array([model.ToFloatingPositions(qq) for qq in q])
    joint_err = np.abs(res.positions[:, 7:] - floating[:, 7:])
    fz = res.foot_forces[:, :, 2]
    distance = np.linalg.norm(err, axis=1)
    figures = {
        "pd_scale": pd_scale,
        "torso_within_2cm_s": _HeldSeconds(times, distance),
        "torso_pose_held_s": _HeldSeconds(times, distance, rpy),
        "max_torso_position_error_m": float(np.abs(err).max()),
        "final_torso_position_error_m": float(np.linalg.norm(err[-1])),
        "max_torso_rpy_error_deg": np.degrees(np.abs(rpy).max(axis=0)).round(3).tolist(),
        "max_joint_error_deg": float(np.degrees(joint_err.max())) if joint_err.size else 0.0,
        # (From frame 1: frame 0 is recorded before the first contact solve.)
        "frames_without_ground_contact": int(np.sum(fz[1:].sum(axis=1) <= 1e-6)),
        "max_net_torque_ratio": float(np.abs(res.actuation / limits).max()),
        "max_pd_correction_nm": float(np.abs(res.actuation[1:] - tau).max()) if len(tau) else 0.0,
        "wall_time_s": res.wall_time,
    }
    return figures, res


def PlaybackFramesCoupled(
    stepper,
    initial,
    q_frames,
    tau,
    actuated_indices,
    *,
    stop_beyond_m=0.1,
    stop_beyond_deg=45.0,
    max_wall_s=900.0,
    effort_limits=None,
    checkpoint=None,
    checkpoint_every_s=60.0,
    progress=None,
    support_polygons=None,
):
    """Plays a frame-by-frame result's torques back open loop in the coupled skin-skeleton
    simulator (`drakebots.skinned.skin_coupling.SkinnedRobotSystem`, the one `drakebots simulate
    --skin` runs: Newton to convergence on the FEM skin glued to the skeleton, per-vertex ground
    contact with Coulomb friction, collision penalties) and compares the skeleton with the plan:
    returns (figures dict, times (N,), skeleton positions (N', nq)).

    The frame-by-frame QPCC steps the same equations once linearised per frame with its contact
    on five patches per sole (drakebots.skinned.qpcc_coupled); here nothing but the torques
    is taken from the plan. The motors apply only τ (clamped at U_m, no servo feedback).

    Args:
        stepper: a CoupledSkinSkeleton of the plan's skeleton, skin and settings, not stepped
            before (its time step is the frame step).
        initial: the CoupledState the plan starts from (skeleton and skin).
        q_frames: (N, nq) planned positions in the stepper's plant coordinates.
        tau: (N - 1, nu) torques held over each frame, N·m.
        actuated_indices: (nu,) the motors' position indices (joint-angle errors).
        stop_beyond_m: end the replay once the torso is this far from the plan, m (the check
            has its answer; a robot falling over its soft skin takes the simulator minutes
            per step).
        stop_beyond_deg: end the replay once the torso is turned this far from the plan about
            any axis, deg (a torso tipping over its soft skin can stay within `stop_beyond_m`
            while its frames take minutes: issue 69, Findings 31).
        max_wall_s: end the replay after this much wall time, s.
        effort_limits: (nu,) the motors' U_m the torques were made with, N·m, in `tau`'s
            order (default: the model file's, which the stepper clamps at otherwise).
        checkpoint: a file (.npz) the replay's progress is kept in, or True for one in drakebots'
            cache folder named by what the replay depends on (drakebots.cache), so that a long
            replay resumes where it stopped: a replay that finds this replay's checkpoint there goes
            on from its last frame (a monster walk's 200 frames take 30 minutes to hours on a 2-core
            machine; an interrupted one, by Ctrl-C, `max_wall_s` or a crash, is not started over).
            Written every `checkpoint_every_s` seconds of wall time and when the replay returns or
            is interrupted, each time whole (renamed into place). It holds the state after the last
            frame (skeleton, skin, contact labels), the skeleton's path so far and the wall seconds
            spent; the factorisation the next step would start from is not kept, so a resumed step
            factorises afresh (its iterates differ, its solution agrees within the Newton
            tolerances). A file there that is not this replay's (another skin, setting or motor
            limits, or a plan, torques or start state that differ by more than PLAN_TOLERANCE: two
            runs of one design differ in round-off; or not a checkpoint) raises
            ReplayCheckpointMismatch and is left as it is; the cache's file of another replay is
            started over. A checkpoint of the same plan's first frames is this replay's (frames
            that follow do not change those before them, open loop): a replay of a walk's first
            60 frames given the whole walk resumes at frame 60, and one of a longer plan stopped
            within this one's frames resumes here too; one past this replay's last frame is
            refused. A replay that ended (the torso `stop_beyond_m` off, or a failed step)
            resumes to the same end; one stopped by the wall-time budget goes on.
        checkpoint_every_s: wall seconds between checkpoint writes (with `checkpoint`).
        progress: called as progress(frames done, frames planned) as the replay starts (a
            resumed one at its checkpoint's frame) and after each frame (a long replay shows
            its progress: the design's bar).
        support_polygons: (N,) the support polygon the plan stands on at each frame
            (analysis.support.SupportPolygon, None where no foot is planned down; the design's are
            `space_time.PlannedSupportPolygons`, Eq. 5's): the replay's COP is then judged
            against them, as the design judges its frames (below). None: the COP and the ground
            force are recorded, not judged.

    A step the simulator cannot take (Newton fails after its step cuts, or an element would
    invert) ends the replay there; figures["failure"] says when and why, figures["stopped"]
    when it ended early by `stop_beyond_m`, `stop_beyond_deg` or `max_wall_s`. The torso
    errors are distances (m) over the frames replayed (PlaybackFrames' largest error is per
    component);
    figures["max_torso_angle_error_deg"] the largest differences of the torso's yaw, pitch and
    roll (the plan's coordinates 3-5, in their order), deg; figures["torso_within_2cm_s"] how
    long the torso stayed within TORSO_TOLERANCE_M of the plan, figures["torso_pose_held_s"]
    how long its whole pose did (that distance and TORSO_TOLERANCE_DEG about each axis), s;
    figures["resumed_from_frame"] is the checkpoint's frame this call started from (0 without
    one), figures["frames_run"] the frames this call stepped, figures["wall_time_s"] the
    seconds of every call together.

    The design's verdict, on the replay (issue 69): figures["ground_force_n"] (N,) the ground's
    normal force on the skin after each frame's step and figures["cop_m"] (N, 2) its centre of
    pressure (analysis.support.CenterOfPressure; NaN where the skin is airborne, and at frame 0,
    before any step);
    figures["frames_without_ground_contact"] the replayed frames the ground carries nothing
    while the plan has a foot down (every replayed frame without `support_polygons`). With
    `support_polygons`: figures["cop_margin_m"] (N,) the COP's distance inside the frame's
    polygon (negative outside; NaN where either is missing), figures["min_cop_margin_m"],
    figures["frames_cop_outside"] and figures["cop_inside_support_polygon"] (no loaded frame
    outside), else None. figures["max_torque_ratio"] is the largest torque applied over the
    motors' U_m and figures["frames_torque_clamped"] the frames whose planned torque the motors
    clamped: open loop the motors apply the plan's torques (clamped at U_m) whatever the
    contact, so these are the plan's.
    """
    from drakebots.fem.model import ElementInversion
    from drakebots.skinned.coupled_state import CoupledState, StepMemory
    from drakebots.skinned.skin_coupling import (
        CoupledStepFailure,
        SkinnedRobotSystem,
        StepDeadlinePassed,
    )

    q = np.asarray(q_frames, float)
    tau = np.asarray(tau, float)
    dt = stepper.config.time_step
    if len(tau) != len(q) - 1 or tau.shape[1:] != (stepper.nu,):
        raise ValueError(
            f"PlaybackFramesCoupled: {len(q)} frames need ({len(q) - 1}, {stepper.nu}) torques, "
            f"got {tau.shape}"
        )
    if effort_limits is not None:
        stepper.effort_limits = _EffortLimits(effort_limits, stepper.nu, "PlaybackFramesCoupled")
    if support_polygons is not None and len(support_polygons) != len(q):
        # (before any step: a replay can take hours)
        raise ValueError(
            f"PlaybackFramesCoupled: {len(q)} frames need {len(q)} support polygons (None where "
            f"no foot is planned down), got {len(support_polygons)}"
        )
    checkpoint, identity, saved = _OpenReplayCheckpoint(checkpoint, stepper, initial, q, tau)
    first, earlier_wall, ended = 0, 0.0, None
    state = initial
    if saved is not None:
        first, earlier_wall = int(saved["frame"]), float(saved["wall_s"])
        ended = str(saved["ended"]) or None
        state = CoupledState(
            saved["q"].copy(),
            saved["v"].copy(),
            saved["x"].copy(),
            saved["w"].copy(),
            StepMemory(saved["mode"].copy(), saved["slip_dir"].copy()),
        )
    builder = DiagramBuilder()
    system = builder.AddSystem(SkinnedRobotSystem(stepper, state))
    feedforward = builder.AddSystem(ConstantVectorSource(np.zeros(stepper.nu)))
    builder.Connect(feedforward.get_output_port(), system.GetInputPort("actuation"))
    diagram = builder.Build()
    simulator = Simulator(diagram)
    context = simulator.get_mutable_context()
    # A resumed replay's clock starts at its frame (the periodic update at t = i dt reads τ_i).
    context.SetTime(first * dt)
    ff_context = feedforward.GetMyMutableContextFromRoot(context)
    system_context = system.GetMyContextFromRoot(context)
    start = time.perf_counter()
    contact_port = system.GetOutputPort("contact_forces")
    simulator.Initialize()
    sim_q = [system.UnpackState(system_context).q]
    # The ground's normal force on the skin and its COP after each frame (frame 0: before any).
    ground = [(np.full(2, np.nan), np.nan)]
    if saved is not None:
        sim_q = list(saved["sim_q"])
        # (a checkpoint written before the COP was kept: its frames' ground unknown, NaN)
        cops = saved.get("sim_cop", np.full((len(sim_q), 2), np.nan))
        loads = saved.get("sim_ground_force", np.full(len(sim_q), np.nan))
        ground = list(zip(cops, loads))
    last_state, last_saved = state, time.perf_counter()
    failure = stopped = None
    if ended is not None:
        failure, stopped = (None, ended) if ended.startswith("torso") else (ended, None)

    def Save(final=None):
        if checkpoint is not None:
            _WriteReplayCheckpoint(
                checkpoint,
                identity,
                len(sim_q) - 1,
                last_state,
                sim_q,
                ground,
                earlier_wall + time.perf_counter() - start,
                final,
            )

    # The budget holds inside a frame too (a frame of a falling robot can take minutes of
    # Newton iterations and step cuts).
    stepper.deadline = start + max_wall_s
    if progress is not None:
        progress(len(sim_q) - 1, len(tau))
    try:
        for i in range(first, len(tau) if ended is None else first):
            # The periodic update at t = i dt (taken at the start of this advance) reads τ_i.
            ff_context.get_mutable_numeric_parameter(0).set_value(tau[i])
            simulator.AdvanceTo((i + 1) * dt)
            last_state = system.UnpackState(system_context)
            sim_q.append(last_state.q)
            ground.append(_GroundAfterStep(last_state.x, contact_port.Eval(system_context)))
            if progress is not None:
                progress(i + 1, len(tau))
            off = float(np.linalg.norm(sim_q[-1][:3] - q[i + 1, :3]))
            turned = (sim_q[-1][3:6] - q[i + 1, 3:6] + np.pi) % (2 * np.pi) - np.pi
            turned = float(np.degrees(np.abs(turned).max()))
            if off > stop_beyond_m:
                stopped = f"torso {1e3 * off:.0f} mm off the plan at t = {(i + 1) * dt:.3f} s"
                ended = stopped
            elif turned > stop_beyond_deg:
                stopped = f"torso turned {turned:.0f} deg off the plan at t = {(i + 1) * dt:.3f} s"
                ended = stopped
            elif time.perf_counter() - start > max_wall_s and i + 1 < len(tau):
                stopped = f"wall-time budget ({max_wall_s:.0f} s) spent at t = {(i + 1) * dt:.3f} s"
            if stopped:
                break
            if time.perf_counter() - last_saved >= checkpoint_every_s:
                Save()
                last_saved = time.perf_counter()
    except StepDeadlinePassed:
        frame = len(sim_q) - 1
        stopped = (
            f"wall-time budget ({max_wall_s:.0f} s) spent in frame {frame} (t = {frame * dt:.3f} s)"
        )
    except (CoupledStepFailure, ElementInversion, RuntimeError) as e:
        frame = len(sim_q) - 1
        failure = f"the simulator failed in frame {frame} (t = {frame * dt:.3f} s): {e}"
        ended = failure
    finally:
        stepper.deadline = None
        # Also on Ctrl-C: the frames done so far are kept for the next call.
        Save(ended)
    wall = time.perf_counter() - start
    done = len(sim_q) - 1
    sim_q = np.array(sim_q)
    times = dt * np.arange(len(sim_q))
    plan = q[: len(sim_q)]
    err = np.linalg.norm(sim_q[:, :3] - plan[:, :3], axis=1)
    angles = sim_q[:, 3:6] - plan[:, 3:6]
    angles = (angles + np.pi) % (2 * np.pi) - np.pi
    joint_err = np.abs(sim_q[:, actuated_indices] - plan[:, actuated_indices])
    figures = {
        "simulator": "coupled skin-skeleton (drakebots.skinned.skin_coupling)",
        "frames_replayed": int(done),
        "frames_planned": int(len(tau)),
        "failure": failure,
        "stopped": stopped,
        "torso_within_2cm_s": _HeldSeconds(times, err),
        "torso_pose_held_s": _HeldSeconds(times, err, angles),
        "max_torso_position_error_m": float(err.max()),
        "final_torso_position_error_m": float(err[-1]),
        "max_torso_angle_error_deg": np.degrees(np.abs(angles).max(axis=0)).round(3).tolist(),
        "max_joint_error_deg": float(np.degrees(joint_err.max())) if joint_err.size else 0.0,
        "wall_time_s": earlier_wall + wall,
        "resumed_from_frame": first,
        "frames_run": int(done - first),
        "checkpoint": None if checkpoint is None else str(checkpoint),
    }
    limits = stepper.effort_limits
    figures.update(_ReplayVerdict(ground, support_polygons, tau[:done], limits))
    return figures, times, sim_q


def _GroundAfterStep(positions, forces) -> tuple[np.ndarray, float]:
    """(COP (2,) m, NaN where airborne; normal force, N) of the ground's forces (3n,) on the
    skin's vertices at `positions` (3n,) after a step (analysis.support.CenterOfPressure: the
    skin's ground contacts lie within its sub-millimetre penetration of z = 0)."""
    from drakebots.analysis.support import CenterOfPressure

    cop = CenterOfPressure(positions, forces)
    load = float(np.asarray(forces).reshape(-1, 3)[:, 2].sum())
    return (np.full(2, np.nan) if cop is None else np.asarray(cop, float)), load


def _ReplayVerdict(ground, polygons, tau, limits) -> dict:
    """The design's verdict items on a coupled replay (PlaybackFramesCoupled's docstring)."""
    cop = np.array([c for c, _ in ground], float).reshape(-1, 2)
    load = np.array([f for _, f in ground], float)
    N = len(load)
    airborne = ~(load > 1e-6)
    airborne[0] = False  # (frame 0 is before any step)
    if polygons is not None:
        planned_down = np.array([polygon is not None for polygon in polygons[:N]])
        airborne &= planned_down
    known = ~np.isnan(load)  # (a checkpoint's frames from before the COP was kept: unknown)
    out = {
        "ground_force_n": load,
        "cop_m": cop,
        "frames_without_ground_contact": int(np.sum(airborne & known)),
        "cop_margin_m": None,
        "min_cop_margin_m": None,
        "frames_cop_outside": None,
        "cop_inside_support_polygon": None,
    }
    if polygons is not None:
        margin = np.full(N, np.nan)
        for i in range(1, N):
            if polygons[i] is not None and np.isfinite(cop[i]).all():
                margin[i] = polygons[i].Margin(cop[i])
        judged = np.isfinite(margin)
        out.update(
            cop_margin_m=margin,
            min_cop_margin_m=float(margin[judged].min()) if judged.any() else None,
            frames_cop_outside=int(np.sum(margin[judged] < 0.0)),
            cop_inside_support_polygon=bool(not np.any(margin[judged] < 0.0)),
        )
    applied = np.clip(tau, -limits, limits)
    out["max_torque_ratio"] = float(np.abs(applied / limits).max()) if len(tau) else 0.0
    out["frames_torque_clamped"] = int(np.sum(np.any(np.abs(tau) > limits, axis=1)))
    return out
