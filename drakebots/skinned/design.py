"""The skinned quad-robots' design workflow (paper section 5, Fig. 2): `Design(DesignConfig)`.

Alternates the space-time optimization of the skeleton (Eqs. 3-9) with the frame-by-frame QPCC
(Eqs. 12-19) until the two motions agree (drakebots.skinned.alternating), then checks the kept
motion: motor limits, COP inside the support polygon, ground contact, speed (`Verdict`), played
back in Drake's simulator (servo PD + feed-forward, and open loop), and with a FEM skin replayed
open loop in the coupled skin-skeleton simulator. `drakebots design` is this call plus a results
folder:

    from drakebots.skinned import Design, DesignConfig
    result = Design(DesignConfig(robot="beetle", motion="single-foot-lift"))
    result.success, result.figures["max_torque_ratio"], result.tau
    result.Save("runs/lift")   # summary.json, motion.yaml, log.npz, the figures, replay.html

The frame-by-frame dynamics (the switch): with `skin` (a `drakebots skin` folder) the QPCC runs on
the coupled skin-skeleton system (`qpcc_coupled.CoupledFrameDynamics`; the skin's FEM carries its
own mass, so the coupled dynamics get a bare skeleton model); otherwise on
`qpcc.RigidFrameDynamics` (skeleton with compliant soles, the skin's weight lumped on the links).
The space-time step always has the lumped skin weight (the paper's initialization, section 5.4)
plus, from the second iteration on with a skin, the skin's coupling loads of the last pass.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from drakebots.errors import InputError
from drakebots.workflow import Reporter, WorkflowResult

MOTIONS = ("single-foot-lift", "double-foot-lift", "walk", "trot")
LOOKAHEADS = ("auto", "chord", "tangent")


@dataclasses.dataclass
class DesignConfig:
    """What `Design` designs and how (SI units; each field is a `drakebots design` flag)."""

    # A skinned quad-robot: beetle, monster, lizard, cow, or a robot file (kind
    # skinned_quadruped, drakebots.robots.robot_file).
    robot: str = "beetle"
    # The motion to design (a generator): single-foot-lift, double-foot-lift, walk, trot.
    motion: str = "single-foot-lift"
    # Walk/trot speed, m/s (None: the generator's, walk 0.015, trot 0.45).
    speed: float | None = None
    # Lifts: the motion's duration, s (None: 2); walk/trot: the cycle period, s.
    duration: float | None = None
    # Lifts: how high the sole centre rises, m (None: 0.04 single, 0.03 double).
    lift_height: float | None = None
    # Trot: run the planned COM this far ahead of its home place over the feet, m (None: 0).
    com_lead: float | None = None
    # A MotionSpec YAML (COM and foot keyframes, contact plan, limits) instead of the generator.
    motion_file: str | None = None
    # The kinematic-only baseline (section 7): no forces or momentum in the plan, one
    # frame-by-frame pass computing its inverse dynamics.
    kinematic_only: bool = False
    # Also run the kinematic-only baseline and compare root roll (Fig. 18).
    compare_kinematic_only: bool = False
    # Space-time <-> frame-by-frame iterations at most (the loop stops at the first agreement).
    iterations: int = 5
    # Space-time knots every this many frames (the plan is a cubic spline between).
    knot_frames: int = 8
    # U_m for every motor, N*m (None: the motion's or the model's).
    motor_limit: float | None = None
    # Bound the plan's inverse-dynamics torques by this fraction of U_m (None: SpaceTimeConfig's,
    # 1; 0: only the frame-by-frame step bounds them, as in the paper).
    plan_motor_limits: float | None = None
    # Plan with this fraction of the motion's friction μ (the space-time step's cones, Eq. 8, and
    # the frame-by-frame step's pyramids, Eq. 17), check on the whole μ: a margin against a
    # stance foot slipping where the plan's friction binds (issue 69, Findings 32: the monster
    # walk's plan holds a loaded foot at the cone's edge in 76 of its 200 frames). None: 1,
    # the paper's.
    plan_friction: float | None = None
    # Weight of the space-time step's torso roll/pitch/heading term (None: SpaceTimeWeights', 1).
    torso_attitude_weight: float | None = None
    # Gauss-Newton iteration limit of each space-time step (None: SpaceTimeConfig's, 80).
    space_time_iterations: int | None = None
    # What the frame-by-frame lookahead aims at: auto, chord or tangent.
    lookahead: str = "auto"
    # Multiply every mass (2: the paper's failure case, the monster with doubled mass).
    mass_scale: float = 1.0
    # A `drakebots skin` results folder: frame-by-frame on the coupled skin dynamics (None: the
    # skeleton with rigid feet, the skin's weight on the links).
    skin: str | None = None
    # With a skin, the skin mass the space-time model carries: "links" (the paper's, by link
    # mass) or "skin" (the FEM skin's own vertex masses by skinning weight).
    plan_skin_mass: str = "links"
    # With a skin, its self- and skin-skeleton collision penalties (section 4.2).
    skin_collisions: bool = True
    # With a skin, the coupled frames' sparse factorisation: "auto" (MKL PARDISO where it loads,
    # else CHOLMOD where installed, else SuperLU), "pardiso", "cholmod" or "splu"
    # (drakebots.fem.solvers; every one gives the same frames to solver tolerance).
    linear_solver: str = "auto"
    # The space-time step's COP-in-support-polygon constraint (Eq. 5).
    space_time_cop: bool = True
    # With a skin, hand each pass's coupling loads to the next space-time step (section 5.1).
    space_time_skin: bool = True
    # The frame-by-frame QPCC's COP rows (Eq. 18; the COP is measured and checked either way).
    frame_cop: bool = True
    # The frame-by-frame objective: "ours" (lookahead, plan forces, torque regulariser) or
    # "paper" (Eq. 13 as written).
    frame_objective: str = "ours"
    # With a skin, the wall-time budget of the coupled open-loop replay check, s (0 skips it).
    coupled_replay_seconds: float = 900.0
    # With a skin, the coupled open-loop replay's skin contact: "active_set" (the paper's labels
    # inside Newton, the reference) or "convex" (SAP's convex problem; CouplingConfig.contact).
    coupled_replay_contact: str = "active_set"
    # With a skin, keep the coupled replay's progress in drakebots' cache folder and resume
    # from it (PlaybackFramesCoupled's `checkpoint`, a file named by the plan, skin, start state
    # and settings): the same design run again goes on from the last frame of a replay that
    # --coupled-replay-seconds or Ctrl-C stopped.
    coupled_replay_resume: bool = False
    # Write replay.html with the results.
    replay: bool = True


def _Flag(field: str) -> str:
    """A config field named for a script and for the command line: "motor_limit (--motor-limit)"."""
    return f"{field} (--{field.replace('_', '-')})"


def _Motion(config: DesignConfig, model):
    from drakebots.skinned import motions
    from drakebots.skinned.motion import MotionFromYaml

    lead = config.com_lead
    if lead is not None:
        if config.motion != "trot" or config.motion_file:
            raise InputError(
                f"{_Flag('com_lead')} shapes the generated trot (motion trot without a motion file)"
            )
    if config.motion_file:
        path = Path(config.motion_file)
        if not path.is_file():
            raise InputError(f"{_Flag('motion_file')} {path}: no such file")
        return MotionFromYaml(path, robot=model.robot)
    from drakebots.limits import CheckWork

    # The most each may be, drakebots.limits' bounds (issue 68: --speed 1e308 was refused only as
    # "com: keyframe 0 is not finite"): a skinned quad-robot is a few tenths of a metre long.
    for name, unit in (("speed", "m/s"), ("duration", "s"), ("lift_height", "m")):
        value = getattr(config, name)
        if value is not None and not value > 0.0:
            raise InputError(f"{_Flag(name)} must be > 0 {unit}, got {value}")
        if value is not None:
            CheckWork(name, value, _Flag(name))
    kwargs = {}
    if config.motion in ("single-foot-lift", "double-foot-lift"):
        if config.duration is not None:
            kwargs["duration"] = config.duration
        if config.lift_height is not None:
            kwargs["height"] = config.lift_height
        single = config.motion == "single-foot-lift"
        return (motions.SingleFootLift if single else motions.DoubleFootLift)(model, **kwargs)
    if config.duration is not None:
        kwargs["period"] = config.duration
    if config.motion == "walk":
        if config.speed is not None:
            kwargs["speed"] = config.speed
        return motions.Walk(model, **kwargs)
    if lead is not None:
        kwargs["com_lead"] = lead
    return motions.Trot(model, speed=config.speed or 0.45, **kwargs)


def _CheckChoices(config: DesignConfig) -> None:
    for name, choices in (
        ("motion", MOTIONS),
        ("lookahead", LOOKAHEADS),
        ("plan_skin_mass", ("links", "skin")),
        ("frame_objective", ("ours", "paper")),
        ("linear_solver", ("auto", "pardiso", "cholmod", "splu")),
    ):
        if getattr(config, name) not in choices:
            raise InputError(
                f"{_Flag(name)}: {getattr(config, name)!r} is not one of {', '.join(choices)}"
            )


def _CheckNumbers(config: DesignConfig) -> DesignConfig:
    """The numeric settings checked, the unset ones given SpaceTimeConfig's defaults (one place
    for them)."""
    from drakebots.skinned.skin_coupling import ContactNamed
    from drakebots.skinned.space_time import SpaceTimeConfig, SpaceTimeWeights

    if config.iterations < 1:
        raise InputError(f"{_Flag('iterations')} must be >= 1, got {config.iterations}")
    if config.knot_frames < 1:
        raise InputError(f"{_Flag('knot_frames')} must be >= 1, got {config.knot_frames}")
    ContactNamed(config.coupled_replay_contact, _Flag("coupled_replay_contact"))
    if not config.coupled_replay_seconds >= 0.0:
        raise InputError(
            f"{_Flag('coupled_replay_seconds')} must be >= 0 s, got {config.coupled_replay_seconds}"
        )
    if config.motor_limit is not None and not config.motor_limit > 0.0:
        raise InputError(f"{_Flag('motor_limit')} must be > 0 N*m, got {config.motor_limit}")
    if not config.mass_scale >= 1.0:
        # The model adds mass x (scale - 1) to each link (SkeletonModel): below 1 that is a
        # negative mass, which Drake refused with a traceback (issue 68's hostile pass).
        raise InputError(
            f"{_Flag('mass_scale')} must be >= 1 (it adds mass to each link; a lighter robot "
            f"is not supported), got {config.mass_scale:g}"
        )
    config = dataclasses.replace(
        config,
        plan_motor_limits=_Default(config.plan_motor_limits, SpaceTimeConfig.motor_limit_fraction),
        space_time_iterations=_Default(
            config.space_time_iterations, SpaceTimeConfig.max_iterations
        ),
        torso_attitude_weight=_Default(
            config.torso_attitude_weight, SpaceTimeWeights.base_attitude
        ),
    )
    for name in ("torso_attitude_weight", "plan_motor_limits"):
        if not getattr(config, name) >= 0.0:
            raise InputError(f"{_Flag(name)} must be >= 0, got {getattr(config, name)}")
    config = dataclasses.replace(config, plan_friction=_Default(config.plan_friction, 1.0))
    if not 0.0 < config.plan_friction <= 1.0:
        raise InputError(
            f"{_Flag('plan_friction')} is a fraction of the motion's friction, in (0, 1], "
            f"got {config.plan_friction}"
        )
    if config.space_time_iterations < 1:
        raise InputError(
            f"{_Flag('space_time_iterations')} must be >= 1, got {config.space_time_iterations}"
        )
    return config


def _PlanningMotion(motion, plan_friction: float):
    """The motion the optimisers plan: `motion` with its friction μ scaled by plan_friction
    (DesignConfig.plan_friction); the checks stand on the motion's own μ."""
    if plan_friction == 1.0:
        return motion
    spec = dataclasses.replace(motion.spec, friction=plan_friction * motion.spec.friction)
    return dataclasses.replace(motion, spec=spec)


def _Default(value, default):
    return default if value is None else value


@dataclasses.dataclass
class _Setup:
    """A validated design: the config with its defaults filled in, and what it names."""

    config: DesignConfig
    robot: object
    model: object
    spec: object
    motion: object
    limits: np.ndarray
    skin: tuple | None  # (FEM skin, bare skeleton model, planned skin load) or None


def CheckConfig(config: DesignConfig) -> tuple:
    """(config with its defaults filled, robot): the checks that need no model (the robot, the
    choices, the numbers, the flags that need a skin); `drakebots sweep` runs them for every
    case before any runs."""
    from drakebots.config import CheckTypes
    from drakebots.robots import GetRobot, KnownRobots
    from drakebots.robots.robot_file import IsRobotFile

    CheckTypes(config)
    if config.robot not in KnownRobots() and not IsRobotFile(config.robot):
        raise InputError(
            f"unknown robot '{config.robot}' (known: {', '.join(KnownRobots())}, or a robot "
            "file NAME.yaml of kind skinned_quadruped)"
        )
    robot = GetRobot(config.robot)
    if robot.family != "skinned_quadruped":
        raise InputError(f"'{config.robot}' is not a skinned quad-robot (beetle, monster, ...)")
    _CheckChoices(config)
    config = _CheckNumbers(config)
    if not config.space_time_skin and not config.skin:
        raise InputError(
            f"{_Flag('space_time_skin')} off: the coupling loads are the FEM skin's (give "
            f"{_Flag('skin')})"
        )
    if not config.skin_collisions and not config.skin:
        raise InputError(
            f"{_Flag('skin_collisions')} off: collisions are the FEM skin's (give {_Flag('skin')})"
        )
    if config.coupled_replay_resume and not config.skin:
        raise InputError(
            f"{_Flag('coupled_replay_resume')}: the coupled replay is the FEM skin's (give "
            f"{_Flag('skin')})"
        )
    return config, robot


def _Validate(config: DesignConfig) -> _Setup:
    """Everything that can be wrong with the input, before any work."""
    from drakebots.skinned.motion import CheckReachable, SampleMotion
    from drakebots.skinned.skeleton_model import SkeletonModel, SkinLoad

    config, robot = CheckConfig(config)
    skin = _LoadSkin(Path(config.skin), robot.name) if config.skin else None
    # The space-time model always carries the skin's weight on its links (section 5.4); with a
    # FEM skin the coupled frame dynamics get their own bare skeleton (`_Factory`), and the
    # coupling loads handed back to the space-time step are the skin's effect beyond that
    # lumped weight (qpcc_coupled.CouplingLoadsOfPass).
    # The lumped skin load of the space-time model: the paper's skin mass shared by link mass,
    # or with a FEM skin and plan_skin_mass "skin" that skin's own vertex masses by skinning
    # weight (section 5.4, `SkinLoadFromSkin`: plan and coupled pass weigh the same body, the
    # planned COM 7.5-11 mm lower on the beetle's skins). The default is the first: on the
    # beetle's single-foot lift (0.67 MPa skin) the pass agrees with its plan in one iteration
    # with it (RMS 0.95 scaled) and just misses with the second (1.01, the second iteration's
    # space-time step then stopping at its iteration limit).
    load = None
    if skin is not None and config.plan_skin_mass == "skin":
        from drakebots.skinned.skeleton_model import SkinLoadFromSkin

        load = SkinLoadFromSkin(skin, robot.params)
    model = SkeletonModel(robot, skin_load=load, mass_scale=config.mass_scale)
    if skin is not None:
        bare = SkeletonModel(robot, skin_load=SkinLoad(), mass_scale=config.mass_scale)
        skin = (skin, bare, load)
    spec = _Motion(config, model)
    motion = SampleMotion(spec, known_legs=model.legs)
    if config.knot_frames >= motion.num_frames:
        raise InputError(
            f"{_Flag('knot_frames')} {config.knot_frames}: the motion has only "
            f"{motion.num_frames} frames"
        )
    CheckReachable(model, motion)
    limits = model.JointEffortLimits(
        config.motor_limit or spec.motor_effort_limit, spec.joint_effort_limits
    )
    for name in spec.joint_effort_limits:
        if name not in model.actuator_names:
            raise InputError(
                f"joint_effort_limits.{name}: no such motor (motors: "
                f"{', '.join(model.actuator_names)})"
            )
    return _Setup(config, robot, model, spec, motion, limits, skin)


def _LoadSkin(path: Path, robot: str):
    import zipfile

    if not path.is_dir():
        raise InputError(
            f"{_Flag('skin')} {path}: not a folder (give a `drakebots skin` results folder)"
        )
    try:
        from drakebots.skinned import qpcc_coupled  # noqa: F401
    except ImportError as e:
        raise InputError(f"{_Flag('skin')}: the coupled QPCC is not available here ({e})") from e
    from drakebots.results import ReadJson
    from drakebots.skinned.skin import LoadSkin

    # Whose skin it is, before its mesh is read: another robot's skin is refused by name.
    meta = ReadJson(path / "skin.json", what=f"{_Flag('skin')} {path}:", required=("robot",))
    if meta["robot"] != robot:
        raise InputError(
            f"{_Flag('skin')} {path}: skin.json says this is a skin of {meta['robot']!r}, not "
            f"of '{robot}' (make one with `drakebots skin {robot}`)"
        )
    try:
        return LoadSkin(path)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as e:
        raise InputError(f"{_Flag('skin')} {path}: cannot load the skin ({e})") from None


def _LinearSolver(setup) -> str:
    """The factorisation asked for, resolved on this install ("auto" -> what it gives); one this
    install lacks is an InputError naming the package."""
    from drakebots.fem.solvers import ResolveBackend

    try:
        return ResolveBackend(setup.config.linear_solver)
    except ValueError as e:
        raise InputError(f"{_Flag('linear_solver')}: {e}") from e


def _Factory(
    skin, collisions: bool = True, linear_solver: str = "auto", friction: float | None = None
):
    """(make(model, dt) -> the frame-by-frame dynamics, their name). With a skin, `friction` is
    the ground's μ of the coupled simulator that checks the passes (the motion's; None:
    CoupledFrameConfig's 0.8); the QPCC takes μ from the motion itself."""
    from drakebots.skinned.qpcc import RigidFrameDynamics

    if skin is None:
        return RigidFrameDynamics, "rigid feet (skeleton; skin weight on the links)"
    from drakebots.skinned.qpcc_coupled import CoupledFrameConfig, CoupledFrameDynamics

    fem_skin, bare, load = skin
    # Collision penalties off also switch them off in the coupled replay (NewSimulator takes
    # this config's penalty stiffness).
    config = CoupledFrameConfig(
        foot_friction=True, penalties=collisions, linear_solver=linear_solver
    )
    if friction is not None:
        config.friction = float(friction)

    # The coupled dynamics use the bare skeleton (the FEM skin has its own mass); the QPCC's
    # kinematics come from the space-time model, the same skeleton. The factory remembers what
    # it made, so the summary can say how the last pass started its skin.
    def make(model, dt):
        make.made = CoupledFrameDynamics(bare, fem_skin, dt, config, planned_skin_load=load)
        return make.made

    make.made = None
    name = "coupled skin-skeleton (Eq. 10 condensation)"
    return make, name + ("" if collisions else ", skin collisions off")


def _SkinStart(make_dynamics, limits) -> dict | None:
    """How the last coupled pass started its skin (CoupledFrameDynamics.start_report), with
    the holding torques against the motor limits; None without a FEM skin."""
    dyn = getattr(make_dynamics, "made", None)
    report = getattr(dyn, "start_report", None)
    if report is None:
        return None
    tau = np.abs(np.asarray(report["holding_torque_nm"]))
    return dict(report, holding_torque_max_ratio=float(np.max(tau / np.asarray(limits))))


def _PassEndedEarly(frames, motion) -> bool:
    """The frame-by-frame pass stopped before the motion's last frame (fell or failed)."""
    return bool(frames.fell or frames.frames_done < motion.num_frames - 1)


def _HeldText(figures: dict, span_s: float) -> str:
    """'torso within 2 cm and 5 deg for 0.53 of 1.99 s' or '... over the whole 1.99 s': how long
    a replay's whole torso pose stayed near the plan (figures["torso_pose_held_s"]; issue 69)."""
    from drakebots.skinned.playback import TORSO_TOLERANCE_DEG, TORSO_TOLERANCE_M

    held_s = figures["torso_pose_held_s"]
    near = f"torso within {100 * TORSO_TOLERANCE_M:.0f} cm and {TORSO_TOLERANCE_DEG:.0f} deg"
    if held_s < span_s:
        return f"{near} for {held_s:.2f} of {span_s:.2f} s"
    return f"{near} over the whole {span_s:.2f} s"


def _Degrees(angles) -> str:
    """'[2.1, 14.9, 11.8]' (a torso's largest angle differences from its plan, deg).

    The replays' lines give them beside the torso's distance: a position alone missed a torso
    pitched 15 deg off its plan (issue 69, Findings 31)."""
    return "[" + ", ".join(f"{a:.1f}" for a in angles) + "]"


def _CoupledOpenLoop(
    dyn,
    model,
    kept,
    dt,
    log,
    *,
    max_wall_s,
    effort_limits,
    contact="active_set",
    checkpoint=None,
    progress=None,
    support_polygons=None,
) -> dict:
    """The issue's check on a FEM skin: the kept pass's torques replayed open loop in the coupled
    skin-skeleton simulator (Newton to convergence, the skin's contact by `contact`:
    CouplingConfig.contact), from the state the pass started from (skeleton and skin); the
    tracking error against the kept frames. `dyn` is the last pass's CoupledFrameDynamics (the
    same skin, settings and lift as every pass's). With `checkpoint` (True: in the cache; or a
    path) the replay resumes from and keeps its progress in that file; one of another replay
    is reported and not replayed (the file is left as it is). The replay's COP is judged
    against `support_polygons` (the plan's, per frame), as the design judges its own frames."""
    from drakebots.skinned.playback import PlaybackFramesCoupled, ReplayCheckpointMismatch

    fr = kept.frames
    # The coupled pass ran on the plan raised onto the skin's soles (alternating.py).
    q = fr.q[: len(fr.tau) + 1].copy()
    q[:, 2] += dyn.lift
    log(
        f"replaying the torques open loop in the coupled simulator ({len(fr.tau)} frames, "
        f"{contact} contact)"
    )
    initial = kept.start_state
    simulator = dyn.NewSimulator()
    simulator.config = dataclasses.replace(simulator.config, contact=contact)
    try:
        figures, _, _ = PlaybackFramesCoupled(
            simulator,
            initial,
            q,
            fr.tau,
            model.actuated_indices,
            max_wall_s=max_wall_s,
            effort_limits=effort_limits,
            checkpoint=checkpoint,
            progress=progress,
            support_polygons=support_polygons,
        )
    except ReplayCheckpointMismatch as e:
        log(f"  coupled open loop: not replayed ({e})")
        return {"skipped": str(e)}
    if figures.get("resumed_from_frame"):
        log(f"  resumed from frame {figures['resumed_from_frame']} of {figures['checkpoint']}")
    elif checkpoint:
        log(f"  its progress kept in {figures.get('checkpoint')}")
    held = _HeldText(figures, dt * len(fr.tau))
    log(
        f"  coupled open loop: {held}, at most "
        f"{1e3 * figures['max_torso_position_error_m']:.1f} mm off (end "
        f"{1e3 * figures['final_torso_position_error_m']:.1f} mm), yaw/pitch/roll within "
        f"{_Degrees(figures['max_torso_angle_error_deg'])} deg, joints within "
        f"{figures['max_joint_error_deg']:.2f} deg ({figures['wall_time_s']:.0f} s)"
        + "".join(f"; {figures[k]}" for k in ("failure", "stopped") if figures[k])
    )
    log(f"  coupled open loop's ground: {_ReplayGroundText(figures)}")
    return figures


def _ReplayGroundText(figures: dict) -> str:
    """'COP inside the planned support polygon in 180 of 195 loaded frames (least margin
    -3.2 mm), 0 frames airborne with a foot planned down, torques at most 1.00 U_m (31 frames
    clamped)': the design's
    verdict items on a coupled replay (PlaybackFramesCoupled; issue 69)."""
    margin = figures.get("cop_margin_m")
    if margin is None:
        cop = "COP not judged (no support polygons)"
    else:
        judged = int(np.sum(np.isfinite(margin)))
        least = figures["min_cop_margin_m"]
        cop = (
            f"COP inside the planned support polygon in {judged - figures['frames_cop_outside']}"
            f" of {judged} loaded frames"
            + ("" if least is None else f" (least margin {1e3 * least:.1f} mm)")
        )
    return (
        f"{cop}, {figures['frames_without_ground_contact']} frames airborne with a foot "
        f"planned down, torques at most {figures['max_torque_ratio']:.2f} U_m "
        f"({figures['frames_torque_clamped']} frames clamped)"
    )


def _FrameConfig(config: DesignConfig):
    """The frame-by-frame QPCC's options; `frame_objective="paper"` is Eq. (13) as the paper
    writes it: E_F on the next frame alone, no term following the plan's foot forces, no
    motor-torque regulariser (see QpccConfig for what each addition does)."""
    from drakebots.skinned.qpcc import QpccConfig

    qpcc = QpccConfig(lookahead_target=config.lookahead, cop_constraint=config.frame_cop)
    if config.frame_objective == "paper":
        qpcc = dataclasses.replace(
            qpcc,
            lookahead_frames=0,
            torque_regularization=0.0,
            weights=dataclasses.replace(qpcc.weights, plan_forces=0.0),
        )
    return qpcc


def _AlternatingConfig(config: DesignConfig):
    from drakebots.skinned.alternating import AlternatingConfig
    from drakebots.skinned.space_time import SpaceTimeConfig, SpaceTimeWeights

    return AlternatingConfig(
        space_time=SpaceTimeConfig(
            weights=SpaceTimeWeights(base_attitude=config.torso_attitude_weight),
            knot_frames=config.knot_frames,
            motor_limit_fraction=config.plan_motor_limits,
            max_iterations=config.space_time_iterations,
            cop_constraint=config.space_time_cop,
        ),
        qpcc=_FrameConfig(config),
        max_iterations=config.iterations,
        kinematic_only=config.kinematic_only,
        skin_loads=config.space_time_skin,
    )


def _OnOff(flag: bool) -> str:
    return "on" if flag else "off"


def _SummaryInputs(setup: _Setup, dynamics_name: str) -> dict:
    """summary.json's inputs: the config as run (defaults filled in, the motor limits and the
    lookahead made concrete; the skin's settings only with a skin)."""
    from drakebots.skinned.qpcc import ResolveLookahead

    c, skin = setup.config, bool(setup.config.skin)
    return {
        "robot": setup.robot.name,
        "motion": setup.spec.name,
        "motion_file": c.motion_file,
        "speed": setup.spec.speed,
        "kinematic_only": c.kinematic_only,
        "iterations": c.iterations,
        "knot_frames": c.knot_frames,
        "motor_limits": setup.limits,
        "plan_motor_limits": c.plan_motor_limits,
        "plan_friction": c.plan_friction,
        "torso_attitude_weight": c.torso_attitude_weight,
        "space_time_iterations": c.space_time_iterations,
        "space_time_cop": _OnOff(c.space_time_cop),
        "space_time_skin": _OnOff(c.space_time_skin) if skin else None,
        "frame_cop": _OnOff(c.frame_cop),
        "frame_objective": c.frame_objective,
        "coupled_replay_seconds": c.coupled_replay_seconds if skin else None,
        "coupled_replay_contact": c.coupled_replay_contact if skin else None,
        "coupled_replay_resume": _OnOff(c.coupled_replay_resume) if skin else None,
        "lookahead": ResolveLookahead(c.lookahead, setup.motion.contact),
        "mass_scale": c.mass_scale,
        "plan_skin_mass": c.plan_skin_mass if skin else None,
        "skin_collisions": _OnOff(c.skin_collisions) if skin else None,
        "frame_dynamics": dynamics_name,
    }


@dataclasses.dataclass(eq=False)
class DesignResult(WorkflowResult):
    """A design's outcome (`Design`): the kept frame-by-frame motion and its checks.

    Attributes (beyond WorkflowResult's; arrays per frame, SI units):
        times: (N,) the motion's frame times, s.
        q: (n+1, nq) the kept frame-by-frame positions (torso x y z yaw pitch roll, joints).
        v: (n+1, nv) their velocities.
        tau: (n, nu) the motor torques, N*m, frame by frame.
        effort_limits: (nu,) each motor's limit U_m, N*m.
        cop: (n, 3) the centre of pressure; cop_margin: (n,) its margin to the support polygon,
            m (< 0: outside).
        inputs: summary.json's inputs (the config as run, defaults filled in).
        outcome: the alternating loop's AlternatingResult (every iteration's plan and pass);
            baseline: the kinematic-only baseline's, or None.
        robot, model, spec, motion: the robot, its SkeletonModel, the MotionSpec and the
            sampled motion.
    """

    times: np.ndarray = None
    q: np.ndarray = None
    v: np.ndarray = None
    tau: np.ndarray = None
    effort_limits: np.ndarray = None
    cop: np.ndarray = None
    cop_margin: np.ndarray = None
    inputs: dict = None
    outcome: object = None
    baseline: object = None
    robot: object = None
    model: object = None
    spec: object = None
    motion: object = None

    def _SummaryInputs(self) -> dict:
        return self.inputs

    def _Write(self, results) -> None:
        """motion.yaml, log.npz, the paper's figures and (unless config.replay is False)
        replay.html, as `drakebots design` writes them."""
        from drakebots.skinned.motion import MotionToYaml

        results.WriteText("motion.yaml", MotionToYaml(self.spec))
        results.SaveNpz("log.npz", DesignLog(self.outcome, self.motion))
        label = "kinematic-only" if self.config.kinematic_only else "ours"
        plots = DesignPlots(
            self.model, self.motion, self.outcome, self.effort_limits, self.baseline, label
        )
        for name, fig in plots.items():
            results.SaveFigure(name, fig)
        if self.config.replay:
            results.WriteText(
                "replay.html", DesignReplay(self.robot, self.model, self.motion, self.outcome)
            )


def Design(config: DesignConfig, *, meshcat=None, progress=None) -> DesignResult:
    """Designs a physically feasible motion for a skinned quad-robot (paper section 5, Fig. 2).

    Args:
        config: the robot, the motion and the loop's settings (DesignConfig).
        meshcat: unused (the design draws nothing live; replay.html is written by Save).
        progress: optional callback for ProgressEvents (log lines, frames of each pass).

    Returns:
        DesignResult; `success` when the loop converged and the kept motion holds every check
        (`Verdict`), else `reason` with the violated constraints.

    Raises:
        InputError: for a bad config (before any work).
    """
    from drakebots.skinned import alternating

    del meshcat
    report = Reporter(progress)
    setup = _Validate(config)
    model, motion, limits = setup.model, setup.motion, setup.limits
    # (The coupled simulator that checks the passes stands on the motion's ground, μ.)
    make_dynamics, dynamics_name = _Factory(
        setup.skin,
        collisions=setup.config.skin_collisions,
        linear_solver=_LinearSolver(setup),
        friction=setup.spec.friction,
    )
    loop = _AlternatingConfig(setup.config)
    report.Say(
        f"{setup.robot.name}: {setup.spec.name}, {motion.num_frames} frames of {motion.dt} s, "
        f"frame-by-frame on {dynamics_name}"
    )
    planned = _PlanningMotion(motion, setup.config.plan_friction)
    outcome = alternating.RunAlternating(
        model,
        planned,
        make_dynamics=make_dynamics,
        config=loop,
        effort_limits=limits,
        log=report.Say,
        frame_progress=lambda i, total: report.Step("frame", i, total),
    )
    skin_start = _SkinStart(make_dynamics, limits)  # (before the baseline makes its own)
    coupled_dynamics = getattr(make_dynamics, "made", None)
    baseline = None
    if setup.config.compare_kinematic_only and not setup.config.kinematic_only:
        report.Say("kinematic-only baseline (section 7)")
        baseline = alternating.RunAlternating(
            model,
            planned,
            make_dynamics=make_dynamics,
            config=dataclasses.replace(loop, kinematic_only=True),
            effort_limits=limits,
            log=report.Say,
        )
    figures = DesignFigures(model, motion, outcome, limits)
    _ReportRun(figures, skin_start, coupled_dynamics, baseline, setup, outcome, report)
    if len(outcome.final.frames.tau):
        figures.update(_Playbacks(setup, outcome, coupled_dynamics, report))
    success, reason = Verdict(outcome, figures)
    failure_constraints = [] if success else FailureConstraints(outcome, figures)
    if failure_constraints:
        reason = f"{reason}; violated: {'; '.join(failure_constraints)}"
    figures = {"failure_constraints": failure_constraints, **figures}
    figures["wall_time_s"] = report.elapsed_s
    report.Say(_Outcome(figures, success, reason))
    if success and not outcome.final.space_time.success:
        report.Say(
            "note: the kept iteration's space-time step did not converge "
            f"({outcome.final.space_time.status}); the frame-by-frame motion holds every check"
        )
    fr = outcome.final.frames
    return DesignResult(
        verb="design",
        config=config,
        success=success,
        reason=reason,
        figures=figures,
        times=motion.times,
        q=np.asarray(fr.q),
        v=np.asarray(fr.v),
        tau=np.asarray(fr.tau),
        effort_limits=np.asarray(limits),
        cop=np.asarray(fr.cop),
        cop_margin=np.asarray(fr.cop_margin),
        inputs=_SummaryInputs(setup, dynamics_name),
        outcome=outcome,
        baseline=baseline,
        robot=setup.robot,
        model=model,
        spec=setup.spec,
        motion=motion,
    )


def _ReportRun(figures, skin_start, coupled_dynamics, baseline, setup, outcome, report) -> None:
    """Adds the skin's start, the linear solver and the baseline's figures, and says them."""
    if figures["swing_clearance_m"]:
        report.Say(
            "  swing feet rise "
            + ", ".join(
                f"{1e3 * a:.1f}/{1e3 * b:.1f}" for a, b in figures["swing_clearance_m"].values()
            )
            + " mm (kept pass / plan, above their stance)"
        )
    if skin_start is not None:
        figures["skin_at_first_frame"] = skin_start
        blended = skin_start.get("blend_skinning_energy_j")
        report.Say(
            f"  the last pass started its skin at {skin_start['skin']}: elastic energy "
            f"{skin_start['elastic_energy_j']:.3g} J (blend skinning: "
            f"{'folded' if blended is None else f'{blended:.3g} J'}), holding it takes up "
            f"to {skin_start['holding_torque_max_ratio']:.2f} U_m"
        )
    if coupled_dynamics is not None:
        # Which factorisation the coupled frames took ("pardiso", "cholmod" or "splu"; issue 53).
        figures["linear_solver"] = coupled_dynamics.solver_name
    if baseline is not None:
        figures["kinematic_only"] = DesignFigures(setup.model, setup.motion, baseline, setup.limits)
        figures["root_roll_variation_ratio_kinematic_over_ours"] = _Ratio(
            figures["kinematic_only"]["root_roll_variation_deg"],
            figures["root_roll_variation_deg"],
        )


def _Playbacks(setup, outcome, coupled_dynamics, report) -> dict:
    """The independent checks (issue item 6): the kept frame-by-frame motion played back in
    Drake's own simulator (SAP, point contact at the sole corners, servo PD toward q̃ plus τ as
    feed-forward), the torques alone open loop, and with a FEM skin the coupled open-loop
    replay. Reported, not part of success: the servos' PD is not in the optimizer's model."""
    from drakebots.skinned.playback import PlaybackFrames
    from drakebots.skinned.space_time import PlannedSupportPolygons

    robot, model, motion, limits = setup.robot, setup.model, setup.motion, setup.limits
    fr = outcome.final.frames
    q = fr.q[: len(fr.tau) + 1]
    out = {}
    report.Say("playing the motion back in Drake's simulator (servo PD + feed-forward torques)")
    # (At the run's motor limits: the model file's would clamp a motor_limit run's torques; on
    # the motion's ground, its μ.)
    mu = motion.spec.friction
    out["playback_in_drake"], _ = PlaybackFrames(
        robot, model, q, fr.tau, motion.dt, effort_limits=limits, friction=mu
    )
    pb = out["playback_in_drake"]
    report.Say(
        f"  Drake playback: torso within {1e3 * pb['max_torso_position_error_m']:.1f} mm "
        f"(end {1e3 * pb['final_torso_position_error_m']:.1f} mm), roll/pitch/yaw within "
        f"{_Degrees(pb['max_torso_rpy_error_deg'])} deg, joints within "
        f"{pb['max_joint_error_deg']:.2f} deg, {pb['frames_without_ground_contact']} "
        "frames airborne"
    )
    # The torques alone, open loop (the replay; a legged robot's feed-forward drifts
    # without feedback, so this says how far the torques carry it by themselves).
    out["playback_in_drake_open_loop"], _ = PlaybackFrames(
        robot, model, q, fr.tau, motion.dt, pd_scale=0.0, effort_limits=limits, friction=mu
    )
    ol = out["playback_in_drake_open_loop"]
    held = _HeldText(ol, motion.dt * len(fr.tau))
    report.Say(
        f"  open loop (torques only): {held}, at most "
        f"{1e3 * ol['max_torso_position_error_m']:.1f} mm off, roll/pitch/yaw within "
        f"{_Degrees(ol['max_torso_rpy_error_deg'])} deg"
    )
    if coupled_dynamics is None:
        return out
    budget = setup.config.coupled_replay_seconds
    if budget == 0.0:
        out["playback_coupled_open_loop"] = {"skipped": "--coupled-replay-seconds 0"}
        report.Say("  coupled open loop: not replayed (--coupled-replay-seconds 0)")
    elif not _PassEndedEarly(fr, motion):
        out["playback_coupled_open_loop"] = _CoupledOpenLoop(
            coupled_dynamics,
            model,
            outcome.final,
            motion.dt,
            report.Say,
            max_wall_s=budget,
            effort_limits=limits,
            contact=setup.config.coupled_replay_contact,
            checkpoint=setup.config.coupled_replay_resume,
            support_polygons=PlannedSupportPolygons(model, motion, range(len(fr.tau) + 1)),
            progress=lambda i, total: report.Step("coupled replay frame", i, total),
        )
    else:
        # A pass that ended early has no motion to check; replaying a body that was already
        # tipping over its soft skin took the simulator over 15 minutes for 29 frames (the
        # beetle walk on its skin in pieces), each frame's contact solve cutting its step again
        # and again.
        ended = f"the kept pass ended at frame {fr.frames_done} of {motion.num_frames - 1}"
        out["playback_coupled_open_loop"] = {"skipped": ended}
        report.Say(f"  coupled open loop: not replayed ({ended})")
    return out


def _Outcome(figures, success, reason) -> str:
    """The run's last log line: success or the reason, motors, COP margin, speed."""
    margin = figures["min_cop_margin_m"]
    speed = figures["achieved_speed_m_per_s"]
    return (
        f"{'success' if success else 'FAILED: ' + str(reason)}; max |tau|/U_m "
        f"{figures['max_torque_ratio']:.2f} (at the limit on {figures['frames_at_motor_limit']}/"
        f"{figures['frames_done']} frames), min COP margin "
        + ("n/a" if margin is None else f"{1e3 * margin:.1f} mm")
        + (
            ""
            if speed is None or not figures["planned_speed_m_per_s"]
            else f", speed {speed:.4f} of {figures['planned_speed_m_per_s']:.4f} m/s planned"
        )
    )


# A walk whose frame-by-frame motion covers less than this fraction of the plan's distance has
# not followed its plan, whatever the agreement of the two motions says: the torso errors count
# in E_F's units (1 cm) among all the coordinates, so a pass that steps in place can agree with
# its plan (measured: the monster's 0.06 m/s walk at 3.13 N·m on the folded FEM skin, with an
# experimental lookahead that aimed at the tangent away from contact changes, agreed at RMS 0.99
# covering 0.019 of 0.06 m/s). Every walk the README reports covers at least 70 %.
MIN_SPEED_FRACTION = 0.5


def Verdict(outcome, figures) -> tuple[bool, str | None]:
    """(success, reason) of a design: the loop converged and its kept pass holds every check
    (motor limits, COP inside the support polygon, ground contact wherever the plan has a foot
    down, at least MIN_SPEED_FRACTION of the planned distance covered)."""
    success = (
        bool(outcome.converged)
        and figures["within_motor_limits"]
        and figures["cop_inside_support_polygon"]
        and figures["frames_without_ground_contact"] == 0
        and not figures["falls_short"]
    )
    reason = None if success else outcome.reason
    if outcome.converged and not success:
        if not figures["within_motor_limits"]:
            reason = "a motor exceeds its limit U_m"
        elif not figures["cop_inside_support_polygon"]:
            reason = "the COP leaves the support polygon"
        elif figures["frames_without_ground_contact"]:
            reason = (
                f"{figures['frames_without_ground_contact']} frames without ground contact "
                "while the plan has a foot down (the robot hops)"
            )
        else:
            reason = (
                f"the robot covers {figures['speed_ratio']:.0%} of the planned distance "
                f"(less than {MIN_SPEED_FRACTION:.0%}: it walks in place)"
            )
    return success, reason


def FailureConstraints(outcome, figures) -> list[str]:
    """The constraints a failed design violates, by name, for summary.json and the exit message.

    From the kept iteration: the space-time step's violated rows (when its solver did not
    converge: `cop[k]`, `momentum[k]`, ... at knot k), the first infeasible frame's constraints,
    and the frame-by-frame pass's saturation: the motor limit |τ_m| <= U_m active on more than
    half the frames, or the COP on the support polygon's edge (margin <= 0.1 mm). A pass whose
    motors sit at U_m and whose COP rides the edge holds its constraints only by leaving the plan,
    which is why the motions then differ.
    """
    kept = outcome.final
    st = kept.space_time
    out = []
    if not st.success and st.infeasible:
        names = list(st.infeasible)
        shown = ", ".join(names[:8]) + (f" (+{len(names) - 8} more)" if len(names) > 8 else "")
        out.append(f"space-time step ({st.status}): {shown}")
    if kept.frames.infeasible:
        frame, names = kept.frames.infeasible[0]
        out.append(
            f"frame {frame}: {', '.join(names)} ({len(kept.frames.infeasible)} infeasible frames)"
        )
    done = max(1, int(figures["frames_done"]))
    if figures["frames_at_motor_limit"] > 0.5 * done:
        out.append(f"motor_limits active on {figures['frames_at_motor_limit']}/{done} frames")
    margin = figures["min_cop_margin_m"]
    if margin is not None and margin <= 1e-4:
        out.append(f"cop at the support polygon's edge (min margin {1e3 * margin:.2f} mm)")
    if figures.get("falls_short"):
        out.append(
            f"speed: {figures['achieved_speed_m_per_s']:.4f} of "
            f"{figures['planned_speed_m_per_s']} m/s planned"
        )
    return out


def _Ratio(a, b):
    return None if a is None or b is None or b == 0 else float(a / b)


def SwingClearance(model, q_frames, q_plan, contact) -> dict:
    """How high each swing foot rises in the frame-by-frame motion against its plan: per leg
    that swings, [frames m, plan m], the sole centre's largest height over the swing frames
    above its median height over the stance frames (each motion against its own stance, so the
    skin's sole offset cancels). Frames past the end of a short pass are left out."""
    n = min(len(q_frames), len(q_plan), contact.shape[1])
    out = {}
    for leg, name in enumerate(model.legs):
        swing = np.flatnonzero(~contact[leg, :n])
        stance = np.flatnonzero(contact[leg, :n])
        if not len(swing) or not len(stance):
            continue
        centre = model.sole_centers[leg]

        def height(q, frames, centre=centre, leg=leg):
            return np.array([model.FootPoints(q[f], leg, centre)[0][0, 2] for f in frames])

        out[name] = [
            float(height(q_frames, swing).max() - np.median(height(q_frames, stance))),
            float(height(q_plan, swing).max() - np.median(height(q_plan, stance))),
        ]
    return out


def DesignFigures(model, motion, outcome, limits) -> dict:
    """summary.json's figures of merit from an AlternatingResult."""
    from drakebots.skinned.space_time import PlanCop

    final = outcome.final
    fr = final.frames
    tau = np.asarray(fr.tau)
    ratio = np.abs(tau) / limits[None] if len(tau) else np.zeros((1, model.nu))
    margins = np.asarray(fr.cop_margin, float)
    q = np.asarray(fr.q)
    duration = (len(q) - 1) * motion.dt
    speed = float((q[-1, 0] - q[0, 0]) / duration) if duration > 0 else 0.0
    roll = np.degrees(q[:, 5])
    iterations = []
    for rec in outcome.iterations:
        st = rec.space_time
        _, plan_margin = PlanCop(model, motion, st)
        plan_margin = plan_margin[np.isfinite(plan_margin)]  # knots with a planned load
        iterations.append(
            {
                "iteration": rec.iteration,
                "follow_weight": rec.follow_weight,
                "space_time_status": st.status,
                "space_time_success": st.success,
                "space_time_violated": st.infeasible[:10],
                "space_time_time_s": rec.time_space_time,
                "space_time_cost": st.cost,
                "space_time_costs": st.costs,
                # The plan's own COP (Eq. 5's, Fig. 11's balls): its least margin to the planned
                # support polygon over the knots (< 0: outside) and how many knots are outside.
                "plan_min_cop_margin_m": (float(np.min(plan_margin)) if len(plan_margin) else None),
                "plan_knots_cop_outside": int(np.sum(plan_margin < 0.0)),
                "frames_done": int(rec.frames.frames_done),
                "frames_infeasible": [
                    {"frame": int(f), "constraints": names} for f, names in rec.frames.infeasible
                ][:10],
                "fell": bool(rec.frames.fell),
                "difference_rms_scaled": rec.difference_rms,
                "difference_max_joint_deg": float(np.degrees(rec.difference_max_joint)),
                "difference_max_torso_m": rec.difference_max_base,
                "agreed": rec.agreed,
                "frame_by_frame_time_s": rec.time_frames,
            }
        )
    times = np.asarray(fr.frame_time)
    first_bad = fr.infeasible[0] if fr.infeasible else None
    clearance = SwingClearance(model, q, final.q_plan, np.asarray(motion.contact, bool))
    speed_ratio = _Ratio(speed, float(motion.spec.speed))
    return {
        "converged": bool(outcome.converged),
        "iterations_run": len(outcome.iterations),
        "kept_iteration": int(final.iteration),
        # The kept iteration's space-time solve reached its tolerances (False: the frame-by-frame
        # motion may still hold every check, but its plan violated rows; see `convergence`).
        "space_time_converged": bool(final.space_time.success),
        "convergence": iterations,
        "frames": int(motion.num_frames),
        "frames_done": int(fr.frames_done),
        "infeasible_frame": None if first_bad is None else int(first_bad[0]),
        "violated_constraints": None if first_bad is None else first_bad[1],
        "qpcc_time_per_frame_s": float(times.mean()) if len(times) else None,
        "qpcc_time_per_frame_max_s": float(times.max()) if len(times) else None,
        "qpcc_factor_time_per_frame_s": float(np.mean(fr.factor_time)) if len(times) else None,
        "max_torque_ratio_per_motor": dict(
            zip(model.actuator_names, ratio.max(axis=0).round(4).tolist())
        ),
        "max_torque_ratio": float(ratio.max()),
        # Frames where some motor is within 1 % of its limit (saturating, not exceeding).
        "frames_at_motor_limit": int(np.sum(ratio.max(axis=1) > 0.99)) if len(tau) else 0,
        "within_motor_limits": bool(ratio.max() <= 1.0 + 1e-6),
        "min_cop_margin_m": (float(np.nanmin(margins)) if np.isfinite(margins).any() else None),
        # Frames where the plan has a foot on the ground but no patch carries load (a hop): the
        # COP is undefined there, so they count against "COP inside at every frame".
        "frames_without_ground_contact": int(
            np.sum(
                (np.asarray(fr.forces)[:, :, 2].sum(axis=1) <= 1e-6)
                & motion.contact[:, 1 : len(fr.forces) + 1].any(axis=0)
            )
        )
        if len(fr.forces)
        else 0,
        "max_torque_change_per_frame_nm": float(np.abs(np.diff(tau, axis=0)).max())
        if len(tau) > 1
        else 0.0,
        "cop_inside_support_polygon": bool(
            np.isfinite(margins).any() and np.nanmin(margins) >= -1e-6
        ),
        "planned_speed_m_per_s": float(motion.spec.speed),
        "achieved_speed_m_per_s": speed,
        "speed_ratio": speed_ratio,
        # Fewer than MIN_SPEED_FRACTION of the planned distance covered (a failure; motions in
        # place, planned speed 0, have no ratio).
        "falls_short": speed_ratio is not None and speed_ratio < MIN_SPEED_FRACTION,
        # Per swinging leg [frames, plan]: the sole's rise above its stance height, m.
        "swing_clearance_m": clearance,
        "min_swing_clearance_ratio": (
            min(a / b for a, b in clearance.values() if b > 0) if clearance else None
        ),
        "root_roll_variation_deg": float(np.ptp(roll)),
        "root_roll_plan_variation_deg": float(np.ptp(np.degrees(final.q_plan[:, 5]))),
    }


def DesignLog(outcome, motion) -> dict:
    """log.npz's arrays: the kept pass's frames, the plan's inputs, every iteration's plan."""
    final = outcome.final
    fr = final.frames
    arrays = {
        "times": motion.times,
        "q_frames": fr.q,
        "v_frames": fr.v,
        "tau": fr.tau,
        "patch_forces": fr.forces,
        "cop": fr.cop,
        "cop_margin": fr.cop_margin,
        "qpcc_time": fr.frame_time,
        "contact_plan": motion.contact,
        "com_plan": motion.com,
        "feet_plan": motion.feet,
    }
    for rec in outcome.iterations:
        arrays[f"q_plan_{rec.iteration}"] = rec.q_plan
        arrays[f"q_knots_{rec.iteration}"] = rec.space_time.q_knots
        arrays[f"knot_times_{rec.iteration}"] = rec.space_time.knot_times
        arrays[f"q_frames_{rec.iteration}"] = rec.frames.q
    return arrays


def DesignPlots(model, motion, outcome, limits, baseline=None, label="ours") -> dict:
    """Figures of the paper: torques (Fig. 16), COP (Figs. 10-11), joints (Fig. 20), roll
    (Fig. 18; the outcome's curve called `label`, the baseline's "kinematic-only"), solver
    convergence."""
    import matplotlib.pyplot as plt

    from drakebots.skinned.space_time import PlanCop, PlannedSupportPolygons

    figs = {}
    fr = outcome.final.frames
    t = motion.times
    # Fig. 16: torque per motor against its limit.
    nu = model.nu
    cols = 4 if nu > 12 else 3
    rows = int(np.ceil(nu / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.0 * rows), sharex=True)
    for k, ax in enumerate(np.ravel(axes)):
        if k >= nu:
            ax.axis("off")
            continue
        if len(fr.tau):
            ax.plot(t[: len(fr.tau)], fr.tau[:, k], lw=1.2)
        ax.axhline(limits[k], color="r", ls="--", lw=0.8)
        ax.axhline(-limits[k], color="r", ls="--", lw=0.8)
        ax.set_title(model.actuator_names[k], fontsize=8)
        ax.tick_params(labelsize=7)
    fig.supxlabel("time (s)")
    fig.supylabel("torque (N·m); red: motor limit")
    fig.tight_layout()
    figs["torques.png"] = fig
    # Figs. 10-11: COP against the support polygons.
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    step = max(1, motion.num_frames // 12)
    frames = range(0, motion.num_frames, step)
    for i, polygon in zip(frames, PlannedSupportPolygons(model, motion, frames)):
        if polygon is None or np.count_nonzero(motion.contact[:, i]) < 2:
            continue
        closed = np.vstack([polygon.vertices, polygon.vertices[:1]])
        ax.plot(closed[:, 0], closed[:, 1], color="0.6", lw=0.8)
    # Fig. 11: the plans' own COPs at the knots, the first plan's (the initialization, made
    # without the skin's coupling) and the kept one's; filled red where outside the polygon.
    kept = outcome.final
    plans = [(outcome.iterations[0], "o", "tab:orange")]
    if kept is not outcome.iterations[0]:
        plans.append((kept, "s", "tab:blue"))
    for rec, marker, color in plans:
        plan_cop, plan_margin = PlanCop(model, motion, rec.space_time)
        shown = np.isfinite(plan_margin)
        if not shown.any():
            continue
        out = plan_margin[shown] < 0
        ax.scatter(
            plan_cop[shown, 0],
            plan_cop[shown, 1],
            s=22,
            marker=marker,
            facecolors=np.where(out, "r", "none"),
            edgecolors=np.where(out, "r", color),
            label=f"plan {rec.iteration} COP (knots; filled red: outside)",
            zorder=3,
        )
        ax2.plot(
            rec.space_time.knot_times[shown],
            1e3 * plan_margin[shown],
            marker,
            ms=4,
            mfc="none",
            color=color,
            label=f"plan {rec.iteration} (knots)",
        )
    cop = np.asarray(fr.cop)
    margin = np.asarray(fr.cop_margin)
    if len(cop):
        inside = margin >= 0
        ax.plot(cop[:, 0], cop[:, 1], color="g", lw=0.8, alpha=0.6)
        ax.scatter(cop[inside, 0], cop[inside, 1], s=5, color="g", label="COP inside")
        ax.scatter(cop[~inside, 0], cop[~inside, 1], s=12, color="r", label="COP outside")
    ax.plot(motion.com[:, 0], motion.com[:, 1], "k:", lw=0.8, label="planned COM")
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title("COP (frame-by-frame; plans' at knots) and support polygons (grey)")
    ax.legend(fontsize=7)
    if len(margin):
        ax2.plot(t[: len(margin)], 1e3 * margin, label=f"frame-by-frame {kept.iteration}")
    ax2.axhline(0, color="r", lw=0.8)
    ax2.legend(fontsize=7)
    ax2.set_xlabel("time (s)")
    ax2.set_ylabel("COP margin to the support polygon (mm)")
    fig.tight_layout()
    figs["cop.png"] = fig
    # Fig. 20: joint angles per iteration.
    nj = model.nq - 6
    cols = 4 if nj > 12 else 3
    rows = int(np.ceil(nj / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.0 * rows), sharex=True)
    for k, ax in enumerate(np.ravel(axes)):
        if k >= nj:
            ax.axis("off")
            continue
        for rec in outcome.iterations:
            ax.plot(t, np.degrees(rec.q_plan[:, 6 + k]), lw=1, label=f"plan {rec.iteration}")
            fq = rec.frames.q
            ax.plot(
                t[: len(fq)], np.degrees(fq[:, 6 + k]), "--", lw=1, label=f"QPCC {rec.iteration}"
            )
        ax.set_title(model.position_names[6 + k], fontsize=8)
        ax.tick_params(labelsize=7)
    np.ravel(axes)[0].legend(fontsize=6)
    fig.supxlabel("time (s)")
    fig.supylabel("joint angle (deg)")
    fig.tight_layout()
    figs["joint_angles.png"] = fig
    # Fig. 18: the root's roll: the kinematic plan, its inverse dynamics, ours.
    fig, ax = plt.subplots(figsize=(7, 3.5))
    kinematic = outcome if label == "kinematic-only" else baseline
    if kinematic is not None:
        ax.plot(t, np.degrees(kinematic.final.q_plan[:, 5]), "k:", lw=1, label="kinematic plan")
        bq = kinematic.final.frames.q
        ax.plot(t[: len(bq)], np.degrees(bq[:, 5]), "C1", label="kinematic: inverse dynamics")
    if kinematic is not outcome:
        ax.plot(t[: len(fr.q)], np.degrees(fr.q[:, 5]), "C0", label=f"{label} (frame-by-frame)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("root roll (deg)")
    ax.legend()
    fig.tight_layout()
    figs["root_roll.png"] = fig
    # Solver convergence per space-time step.
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for rec in outcome.iterations:
        merits = [h["merit"] for h in rec.space_time.history if "merit" in h]
        if merits:
            ax.semilogy(merits, label=f"space-time {rec.iteration}")
    ax.set_xlabel("Gauss-Newton iteration")
    ax.set_ylabel("l1 merit")
    ax.legend()
    fig.tight_layout()
    figs["convergence.png"] = fig
    return figs


def DesignReplay(robot, model, motion, outcome) -> str:
    """replay.html of the kept frame-by-frame motion."""
    from drakebots.visualization.replay import ReplayHtml

    q = outcome.final.frames.q
    positions = np.array([model.ToFloatingPositions(qi) for qi in q])
    return ReplayHtml(robot, motion.times[: len(q)], positions)
