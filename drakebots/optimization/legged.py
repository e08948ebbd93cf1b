"""Contact-implicit gaits and jumps for any robot: `OptimizeGait` and `OptimizeJump`.

The variational transcription of hamr-contact-implicit.txt, Sec. III (Eq. 15, built by
drakebots.optimization.contact_implicit for any tree MultibodyPlant with point contacts), set up
for a robot a user brings: a robot file (drakebots.robots.LoadRobot) or a registry name. What
HAMR-VI's workflows add for their robot (the piezo actuation of Eq. 3, the 24 loop constraints,
a simulated open-loop warm start, the scuff cost) lives in drakebots.hamr; everything here reads
only the robot's model, its contacts and its actuators.

The gait (Eq. 16's problem with the goal as a constraint): N knots over one period T
(h = T / (N - 1)), periodic positions but the forward one and periodic discrete momentum, the base
starting at x = 0 and ending at x = D (the distance per cycle, exact), inputs within the
actuators' effort limits, positions within the joints' limits, and the costs

    J = w_u sum_k h/T |u_k / u_lim|^2            (effort)
      + w_du sum_k |(u_k - u_k-1) / u_lim|^2     (input smoothness, Eq. 16's second term)
      + c1 sum_k h/T |qdot_k - qdot_k-1|^2       (velocity smoothness, Eq. 16's first term)
      + w_p sum_k |q_k,orient - q_home,orient|^2 (keep the body level: roll, pitch, yaw)
      + w_s sum_k FootScuff(q_k, q_k+1)          (feet sliding or skimming near the ground)
      + alpha sum_k s_k                          (the exact penalty on the relaxed
                                                  complementarity, Eq. 15)

With `mirror` (pairs of joints, left and right), the gait is symmetric: half a cycle on, the
robot is its mirror image D/2 further (an alternating walk or trot, not any periodic motion).

A floating base (`base: floating_rpy`) is planned whole: a gait's start is anchored in x, y and
yaw (y and yaw periodic, so the end equals the start; x advances D); every body a joint moves
keeps its origin above the ground at every knot, and so do the 8 corners of the box that bounds
the base's collision geometry and those of every leg link that carries no foot (GuardPoints,
`guard[k]`; a link that carries a foot by its origin: a box about a shank reaches below its
foot); joint limits hold at every knot; with `gait`
(legged_gaits: trot, pace, bound, pronk, walk, legs found from the model) the legs' phases shape the
warm start (feet lifted in swing, forces on stance feet) and fix the foot sequence (the core of
each stance on the ground, of each swing SWING_CLEARANCE of the home height above it; touchdown
and lift-off free within `schedule_margin` of a cycle), the stance feet touch the ground at
knot 0, and trot and pace are constrained to the TRUE left-right reflection half a cycle on
(abduction joints and base y, roll, yaw change sign). A jump has a flight phase: every contact
FLIGHT_CLEARANCE of the home height above the ground at the `flight_knots` knots before the
apex and at the apex.

The jump (Eq. 17's problem): from rest at the home pose (initial velocity zero through the
Legendre transform) to the base height z_home + H at the last knot, with the final base velocity
and the body's orientation and horizontal position in a final-state cost (the apex of Eq. 17's
goal state), and the same effort, smoothness and penalty terms.

Solve path (measured on the hopper and walker of scripts/examples/, below): the relaxed problem
is solved with the complementarity slack's upper bound shrinking 1 -> 1e-3 -> 1e-6 (the slack
homotopy: SolveWithSlackHomotopy), each stage warm-started from the last; a point that then
misses the acceptance gets the proximal repair (SolveProximalFeasibility, costs kept). Solver
"auto" is the fast path (IPOPT on the vectorised evaluators with the Gauss-Newton Hessian,
contact_implicit_fast) where its IPOPT loads, else Drake's SNOPT. The warm start is the settled
home pose at every knot, the base moved linearly over the distance (a gait) or held (a jump),
inputs zero, and contact forces sharing the weight (ContactGuessFromKnots): no hand tuning.

Acceptance (never the solver's word alone), as HAMR's: every constraint within
`feasibility_tolerance`, the TRUE complementarity (the unrelaxed products, physical units) within
`complementarity_tolerance`, the DEL residual reported; then the plan is tracked IN CLOSED LOOP in
Drake's own simulator (a discrete MultibodyPlant with SAP point contact, the robot file's
contacts) under the whole-body controller of systems.whole_body (a QP each tick: inverse dynamics
with the plan's contact forces, a task-space PD on the base, a joint PD), from the plan's first
state on the ground, for at least 3 cycles of a gait (legged_report.Resimulate). The plan is
accepted when the run follows it (legged_report.TrackingChecks): the base within
`0.25 |D| + 0.1 z_home` of the plan at every cycle end (a jump: 0.25 H + 0.1 z_home at its end),
no fall, and the distance per cycle (its mean over the cycles tracked) or the apex within
`resimulation_tolerance` (25 %) of the plan's; a jump also needs `flight_knots` knots of flight.
A plan that is not accepted says which check failed and by how much (MotionResult.reason).
"""

from __future__ import annotations

import copy
import dataclasses
import time

import numpy as np

from drakebots.errors import InputError
from drakebots.workflow import Reporter, WorkflowResult

# The acceptance targets of issue 47 (and HAMR's: COMPLEMENTARITY_TARGET in drakebots.hamr).
COMPLEMENTARITY_TOLERANCE = 1e-4
FEASIBILITY_TOLERANCE = 1e-4
# The closed-loop run's distance per cycle or apex, relative to the plan's (issue 67: 25 %).
RESIMULATION_TOLERANCE = 0.25
# The slack homotopy's upper bounds (SolveWithSlackHomotopy).
SLACK_STAGES = (1.0, 1e-3, 1e-6)
SOLVERS = ("auto", "fast", "snopt", "ipopt")
# psi's upper bound, in base heights per knot interval (see _Transcription): far above any foot
# speed a plan has (the hopper's feet: under 0.1 per interval), far below what the sum form of
# the friction complementarity lets through.
SLIDING_SPEED_BOUND = 10.0
# Weight of the least-psi cost per base height per motion duration of psi (see _AddCosts).
PSI_REGULARIZATION = 1e-3
# The shortest time between two knots of a plan, s (HAMR-VI's plans: hamr.workflows.MIN_KNOT_MS).
MIN_KNOT_S = 1e-6
# A jump's flight: every contact at least this many home base heights above the ground.
FLIGHT_CLEARANCE = 0.01
# Progress during a solve: IPOPT's iteration and violation at most this often (wall clock, s).
PROGRESS_INTERVAL_S = 2.0


@dataclasses.dataclass
class MotionCosts:
    """Weights of the costs (the module docstring's J)."""

    # w_u: effort, on (u / effort limit)^2 averaged over the motion.
    effort: float = 1.0
    # w_du: input smoothness, on ((u_k - u_k-1) / effort limit)^2 summed over the knots.
    input_smoothness: float = 1.0
    # c1: velocity smoothness (Eq. 16's first term), on |qdot_k - qdot_k-1|^2 h / T summed over
    # the knots, in (time unit / length unit)^2 (and per rad^2/time unit^2). It keeps impacts
    # from being impulses Drake's compliant contact cannot follow: measured, the walker's
    # 0.8 s / 0.3 m gait re-simulated 130 % off its distance with 0.1 (31 knots), 8 % with 1.
    velocity_smoothness: float = 1.0
    # w_p: the body's orientation (roll, pitch, yaw) away from the home pose, rad^2 per knot.
    posture: float = 1.0
    # alpha: the exact penalty on the complementarity slack (Eq. 15; the authors: 50).
    slack: float = 100.0
    # Foot scuff (contact_implicit_costs.AddFootScuffCost, HAMR's too): weight per squared
    # base height of a contact's tangential displacement per interval near the ground, and the
    # height, in base heights, over which it falls by e. 0 leaves it out.
    scuff: float = 1000.0
    scuff_height: float = 0.02


@dataclasses.dataclass
class MotionSolver:
    """The NLP solver and its limits."""

    # "auto" (the fast path where its IPOPT loads, else SNOPT), "fast", "snopt" or "ipopt".
    solver: str = "auto"
    # Iteration limit of each homotopy stage and of the repair.
    iterations: int = 1000
    # Effort continuation: the first stage solved with the effort limits times this factor,
    # then the slack homotopy at the true limits from its point (1: none).
    effort_continuation: float = 1.0
    # IPOPT's initial barrier parameter for the homotopy's stages after the first (the fast
    # path; 0: IPOPT's default 0.1 with the adaptive strategy at every stage).
    warm_mu_init: float = 0.0
    # Acceptance: the largest constraint violation, the true complementarity (force x length,
    # the robot's units) and the closed-loop run's distance per cycle or apex, relative to the
    # plan's (0.25; legged_report caps it at its own 25 %: a looser value has no effect).
    feasibility_tolerance: float = FEASIBILITY_TOLERANCE
    complementarity_tolerance: float = COMPLEMENTARITY_TOLERANCE
    resimulation_tolerance: float = RESIMULATION_TOLERANCE


@dataclasses.dataclass
class MotionConfig:
    """What a gait and a jump share (GaitConfig, JumpConfig)."""

    # A registry name or a robot file (drakebots.robots.LoadRobot).
    robot: str = ""
    # Knots N of the motion.
    knots: int = 21
    # The ground's Coulomb friction coefficient.
    friction: float = 0.8
    # Edges of the friction pyramid (Eq. 13; the authors: 4).
    friction_directions: int = 4
    # The fraction of each actuator's effort limit the plan may use: the rest is left to the
    # feedback that tracks it (measured: the walker's jump planned at the full 60 N m saturated
    # its knee and Drake's re-simulation, whose PD had no authority left, never left the
    # ground).
    effort_fraction: float = 0.8
    costs: MotionCosts = dataclasses.field(default_factory=MotionCosts)
    solver: MotionSolver = dataclasses.field(default_factory=MotionSolver)


@dataclasses.dataclass
class GaitConfig(MotionConfig):
    """A periodic gait of any robot (`drakebots optimize gait ROBOT --period T --distance D`)."""

    # Knots N over one cycle (the hopper's 0.5 s gait: Drake's re-simulation 5-11 % off its
    # distance with 31 knots, 21-30 % with 21).
    knots: int = 31
    # The period T of one cycle, in the robot's time unit (s, or ms for mm-ms-g robots).
    period: float = 0.5
    # The forward (+x) distance D the base travels per cycle, in the robot's length unit.
    distance: float = 0.1
    # Cycles of the plan tracked in closed loop in Drake (the distance compared is their mean
    # per cycle; legged_report tracks at least TRACKED_CYCLES = 3 whatever this says).
    resimulation_cycles: int = 3
    # Pairs of joints that swap half a cycle on (e.g. [[left_hip, right_hip], [left_knee,
    # right_knee]]): the gait is symmetric, each leg doing at T/2 what the other did at 0 (an
    # alternating walk or trot rather than any periodic motion). Needs an odd number of knots.
    # A joint whose axis is a roll axis changes sign (the true reflection, legged_gaits).
    mirror: list[list[str]] = dataclasses.field(default_factory=list)
    # A quadruped's gait (legged_gaits.GAITS: trot, pace, bound, pronk, walk; "" none): the
    # legs' phase offsets shape the warm start and fix the foot sequence (each stance's core on
    # the ground, each swing's core at least SWING_CLEARANCE home heights above it), its stance
    # feet start on the ground, and trot and pace are constrained to their left-right symmetry
    # half a cycle on (legs paired from the model). Needs four contacts front-left,
    # front-right, hind-left, hind-right.
    gait: str = ""
    # With `gait`: the fraction of a cycle at each end of every stance and swing where the
    # contact is left to the solver (touchdown and lift-off found contact-implicitly); 0.5 or
    # more: the schedule only seeds the warm start (the foot sequence is the solver's, which
    # on Solo-12 turned a trot into a lateral sequence).
    schedule_margin: float = 0.1
    # With `gait`: the least normal force each standing foot carries in its stance core, as a
    # fraction of the robot's weight (0 leaves it out). A gait's stance means a loaded foot:
    # without it, Solo-12's walk (duty 0.75) could come out floating on touching feet between
    # 70 N single-knot pushes, a plan Drake's closed loop could not follow (it fell) on hosts
    # whose round-off led IPOPT there; with 0.05 the walk was accepted on each BLAS kernel tried
    # (docs/own_robot.md).
    stance_load: float = 0.05

    def Check(self) -> None:
        _CheckCommon(self)
        from drakebots.optimization.legged_gaits import GAITS, SYMMETRIC_GAITS

        if self.gait and self.gait not in GAITS:
            raise InputError(f"gait: one of {', '.join(GAITS)}, got {self.gait!r}")
        if not 0.0 <= self.schedule_margin <= 0.5:
            raise InputError(
                f"schedule_margin: a fraction of a cycle in [0, 0.5], got {self.schedule_margin}"
            )
        if not 0.0 <= self.stance_load < 1.0:
            raise InputError(
                f"stance_load: a fraction of the robot's weight in [0, 1), got {self.stance_load}"
            )
        if self.mirror and int(self.knots) % 2 == 0:
            raise InputError(f"knots: must be odd with mirror (T/2 on a knot), got {self.knots}")
        if self.gait in SYMMETRIC_GAITS and int(self.knots) % 2 == 0:
            raise InputError(
                f"knots: must be odd with gait {self.gait} (its symmetry puts T/2 on a knot), "
                f"got {self.knots}"
            )
        for index, pair in enumerate(self.mirror):
            if len(pair) != 2 or len(set(pair)) != 2:
                raise InputError(f"mirror[{index}]: must be two different joint names, got {pair}")
        if not self.period > 0:
            raise InputError(f"period: must be > 0, got {self.period}")
        if not np.isfinite(self.distance):
            raise InputError(f"distance: must be a finite number, got {self.distance}")
        if self.resimulation_cycles < 1:
            raise InputError(f"resimulation_cycles: must be >= 1, got {self.resimulation_cycles}")


@dataclasses.dataclass
class JumpConfig(MotionConfig):
    """A vertical jump of any robot (`drakebots optimize jump ROBOT --height H`)."""

    # The apex height H of the base above its home height, in the robot's length unit.
    height: float = 0.05
    # Duration of the planned push-off and rise, in the robot's time unit.
    duration: float = 0.4
    # Weight of the final-state cost (base velocity zero at the apex, the body level and above
    # its start; Eq. 17's x_g), per (length unit / time unit)^2 and rad^2.
    goal_weight: float = 10.0
    # Knots before the apex with every contact off the ground (at least FLIGHT_CLEARANCE of
    # the home base height): a flight phase (a floating base only; 0: none).
    flight_knots: int = 3

    def Check(self) -> None:
        _CheckCommon(self)
        if int(self.flight_knots) != self.flight_knots or not 0 <= self.flight_knots:
            raise InputError(f"flight_knots: must be an integer >= 0, got {self.flight_knots}")
        if self.flight_knots > self.knots - 3:
            raise InputError(
                f"flight_knots: at most knots - 3 = {self.knots - 3}, got {self.flight_knots}"
            )
        if not self.height > 0 or not np.isfinite(self.height):
            raise InputError(f"height: must be a number > 0, got {self.height}")
        if not self.duration > 0 or not np.isfinite(self.duration):
            raise InputError(f"duration: must be a number > 0, got {self.duration}")


# The farthest a plan may move the base, in base heights (a distance per cycle, a jump's apex):
# --distance 1e308 ran the solver, then failed with residuals of 1e308 (issue 68).
MAX_BASE_HEIGHTS = 100.0


def _CheckScale(kind: str, config, robot) -> None:
    """InputError for a plan out of the robot's scale, once the robot (its units and height) is
    known: its time (period or duration) against the "duration" work bound, its distance or
    apex against MAX_BASE_HEIGHTS of the robot's home base height."""
    from drakebots.limits import CheckWork

    units = getattr(robot, "units", {}) or {}
    to_seconds = 1e-3 if units.get("time", "s") == "ms" else 1.0
    field = "period" if kind == "gait" else "duration"
    CheckWork(
        "duration", getattr(config, field) * to_seconds, f"{field} {getattr(config, field):g}"
    )
    knot_s = getattr(config, field) * to_seconds / (int(config.knots) - 1)
    if knot_s < MIN_KNOT_S:
        # 1e-300 overflowed in the transcription's scaling: a traceback or 69 warnings (issue 68).
        raise InputError(
            f"{field} {getattr(config, field):g} {units.get('time', 's')}: a knot every "
            f"{knot_s:.3g} s, below {MIN_KNOT_S:g} s, the finest step one plan may take"
        )
    height = float(getattr(robot, "nominal_base_height", 0.0) or 0.0)
    field = "distance" if kind == "gait" else "height"
    value = abs(getattr(config, field))
    if height > 0 and value > MAX_BASE_HEIGHTS * height:
        raise InputError(
            f"{field} {value:g} {units.get('length', 'm')}: above {MAX_BASE_HEIGHTS:g} times the "
            f"robot's home base height ({height:g}), more than one plan means"
        )


def _CheckCommon(config) -> None:
    from drakebots.config import CheckTypes
    from drakebots.limits import CheckWork

    CheckTypes(config)  # issue 68: a field of the wrong type names itself, not AttributeError
    CheckWork("knots", config.knots, "knots")
    if not config.robot:
        raise InputError("robot: name a robot (a registry name or a robot file)")
    if int(config.knots) != config.knots or config.knots < 5:
        raise InputError(f"knots: must be an integer >= 5, got {config.knots}")
    if config.friction_directions < 3:
        raise InputError(
            f"friction_directions: need at least 3 (a friction pyramid), got "
            f"{config.friction_directions}"
        )
    if not config.friction > 0 or not np.isfinite(config.friction):
        raise InputError(f"friction: must be a number > 0, got {config.friction}")
    if config.solver.solver not in SOLVERS:
        raise InputError(f"solver: one of {', '.join(SOLVERS)}, got {config.solver.solver!r}")
    if not 0 < config.effort_fraction <= 1:
        raise InputError(f"effort_fraction: must be in (0, 1], got {config.effort_fraction}")
    if not config.costs.scuff_height > 0:
        raise InputError(f"costs.scuff_height: must be > 0, got {config.costs.scuff_height}")
    if config.solver.iterations < 1:
        raise InputError(f"solver.iterations: must be >= 1, got {config.solver.iterations}")
    for name in ("effort", "input_smoothness", "velocity_smoothness", "posture", "slack", "scuff"):
        value = getattr(config.costs, name)
        if not value >= 0 or not np.isfinite(value):
            raise InputError(f"costs.{name}: must be a number >= 0, got {value}")


# ---------------------------------------------------------------------------- the model
@dataclasses.dataclass
class RobotTrajoptModel:
    """A robot as the transcription sees it.

    Attributes:
        robot: the Robot (registry or file).
        plant: a continuous MultibodyPlant of it (no SceneGraph), home pose as its default.
        dynamics: the VariationalDynamics (forces scaled by the robot's weight).
        home: the home positions; weight: m g (robot's force unit).
        x_index, z_index: the base's forward and vertical position indices.
        orientation_indices: the base's roll, pitch, yaw indices (those it has).
        position_names, input_names, contact_names: labels for plots and files.
        effort_limits: per input (inf where the model gives none).
    """

    robot: object
    plant: object
    dynamics: object
    home: np.ndarray
    weight: float
    x_index: int
    z_index: int
    orientation_indices: list
    position_names: list
    input_names: list
    contact_names: list
    effort_limits: np.ndarray

    def InputScale(self) -> np.ndarray:
        """The inputs' scale in the costs: the effort limit, or m g times the home height
        where the model gives none."""
        fallback = self.weight * max(self.home[self.z_index], 1e-9)
        return np.where(np.isfinite(self.effort_limits), self.effort_limits, fallback)


def _BaseIndices(plant, robot) -> tuple[int, int, list]:
    """(x, z, [orientation]) position indices of the robot file's base joints."""
    base = getattr(robot, "base", None)
    if base == "planar_xz":
        index = {
            name: int(plant.GetJointByName(name).position_start())
            for name in ("base_x", "base_z", "base_pitch")
        }
        return index["base_x"], index["base_z"], [index["base_pitch"]]
    if base == "floating_rpy":
        start = int(plant.GetJointByName("base").position_start())
        # RpyFloatingJoint positions: roll, pitch, yaw, x, y, z.
        return start + 3, start + 5, [start, start + 1, start + 2]
    where = getattr(robot, "source", "") or robot.name
    raise InputError(
        f"{where}: base: a gait or a jump needs a free base (planar_xz or floating_rpy), "
        f"this robot's is {base or 'not a robot file (' + robot.family + ')'}"
    )


def MakeRobotTrajoptModel(
    robot, *, friction: float = 0.8, friction_directions: int = 4
) -> RobotTrajoptModel:
    """The transcription's model of a robot file's robot (a UserRobot, family "user").

    Raises InputError (exit 2) for a robot without contacts or on a fixed base, naming the file.
    """
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.optimization.tree_lagrangian import TreeLagrangian
    from drakebots.optimization.variational import PointContact, VariationalDynamics

    where = getattr(robot, "source", "") or robot.name
    if robot.family != "user":
        raise InputError(
            f"robot {robot.name}: the general gait and jump take robot files (family 'user'); "
            f"this is a {robot.family} robot (HAMR-VI has its own: optimize hamr-gait/hamr-jump)"
        )
    if not robot.contacts:
        raise InputError(f"{where}: contacts: a gait or a jump needs contacts, this robot has none")
    plant = MultibodyPlant(0.0)
    robot.AddTo(plant)
    plant.Finalize()
    x_index, z_index, orientation = _BaseIndices(plant, robot)
    lagrangian = TreeLagrangian(plant)
    context = plant.CreateDefaultContext()
    weight = float(plant.CalcTotalMass(context)) * robot.gravity
    contacts = [
        PointContact(int(plant.GetBodyByName(body).index()), np.asarray(point, float), f"c{i}")
        for i, (body, point) in enumerate(robot.contacts)
    ]
    dynamics = VariationalDynamics(
        lagrangian,
        contacts=contacts,
        friction=friction,
        force_scale=weight,
        friction_directions=friction_directions,
    )
    actuators = [plant.get_joint_actuator(i) for i in plant.GetJointActuatorIndices()]
    names = [""] * plant.num_positions()
    for j in plant.GetJointIndices():
        joint = plant.get_joint(j)
        suffixes = [""] if joint.num_positions() == 1 else [f"_{k}" for k in range(6)]
        if joint.type_name() == "rpy_floating":
            suffixes = ["_roll", "_pitch", "_yaw", "_x", "_y", "_z"]
        for k in range(joint.num_positions()):
            names[joint.position_start() + k] = joint.name() + suffixes[k]
    return RobotTrajoptModel(
        robot=robot,
        plant=plant,
        dynamics=dynamics,
        home=plant.GetPositions(context).copy(),
        weight=weight,
        x_index=x_index,
        z_index=z_index,
        orientation_indices=orientation,
        position_names=names,
        input_names=[a.name() for a in actuators],
        contact_names=[f"{body}[{i}]" for i, (body, _) in enumerate(robot.contacts)],
        effort_limits=np.array([a.effort_limit() for a in actuators], float),
    )


# ---------------------------------------------------------------------------- problems
def _AddCosts(problem, model: RobotTrajoptModel, costs: MotionCosts, duration: float) -> None:
    """The effort, smoothness, posture and penalty terms of the module docstring."""
    from drakebots.optimization.contact_implicit_costs import (
        AddComplementarityPenalty,
        AddFootScuffCost,
        AddInputCost,
        AddInputSmoothnessCost,
        AddVelocitySmoothnessCost,
    )

    prog, vars = problem.prog, problem.vars
    scale = model.InputScale()
    h = vars.time_step
    bindings = []
    if costs.effort > 0 and vars.u.size:
        R = 2.0 * costs.effort * h / duration / scale**2
        bindings += AddInputCost(prog, vars, R=R)
    if costs.input_smoothness > 0 and vars.u.size:
        bindings += AddInputSmoothnessCost(
            prog, vars, weight=2.0 * costs.input_smoothness, scale=scale
        )
    if costs.velocity_smoothness > 0:
        bindings += AddVelocitySmoothnessCost(
            prog, vars, weight=2.0 * costs.velocity_smoothness * h / duration
        )
    if costs.posture > 0 and model.orientation_indices:
        idx = model.orientation_indices
        W = costs.posture * np.eye(len(idx))
        for k in range(vars.num_knots):
            b = prog.AddQuadraticErrorCost(W, model.home[idx], vars.q[k, idx])
            b.evaluator().set_description(f"posture[{k}]")
            bindings.append(b)
    bindings.append(AddComplementarityPenalty(prog, vars, weight=costs.slack))
    if costs.scuff > 0:
        height = max(model.home[model.z_index], 1e-9)
        bindings += AddFootScuffCost(
            prog,
            vars,
            model.dynamics,
            weight=costs.scuff / height**2,
            height_scale=costs.scuff_height * height,
        )
    if vars.psi.size:
        # psi at its least (the foot's sliding speed) where nothing else pins it: an airborne
        # foot's psi is otherwise free, and the relaxed friction complementarity sums psi_c g2_c
        # over the feet, so a large psi times a g2 of -1e-7 (inside the solver's tolerance)
        # hides another foot's product (measured: the walker's jump, 1.9e-4 N m/s true friction
        # complementarity with every binding met to 6e-7; _Transcription bounds psi too).
        speed = max(model.home[model.z_index], 1e-9) / duration
        b = prog.AddLinearCost(
            np.full(vars.psi.size, PSI_REGULARIZATION / speed), 0.0, vars.psi.ravel()
        )
        b.evaluator().set_description("psi_regularization")
        bindings.append(b)
    problem.bindings["costs"] = bindings


def _Transcription(model: RobotTrajoptModel, config, h: float, initial: tuple):
    """Eq. 15's constraints for `model` with the config's knots and the effort limits, and an
    upper bound on the sliding-speed multiplier psi (SLIDING_SPEED_BOUND).

    Why the bound: psi (Eq. 13's multiplier, the sliding speed where a foot slides) is free
    while its foot is in the air (gamma = 0, so g2 = mu gamma - sum beta = 0). The relaxed
    complementarity is a sum over the feet, sum_c psi_c g2_c <= s, so a huge psi times a g2
    that is -1e-9 (inside the feasibility tolerance) cancels a real product of another foot.
    Measured on the hopper's 31-knot gait: psi = 1.6e5 m/s on an airborne foot and a true
    friction complementarity of 8.3e-3 N m/s with every binding satisfied to 1e-6; bounded,
    the same solve meets 1e-4.
    """
    from drakebots.optimization.contact_implicit import MakeContactImplicitProblem

    limits = config.effort_fraction * model.effort_limits
    periodic = initial[0] == "periodic"
    problem = MakeContactImplicitProblem(
        model.dynamics,
        num_knots=int(config.knots),
        time_step=h,
        initial=initial,
        periodic_free_indices=[model.x_index] if periodic else (),
        slack_bounds=(1e-6, SLACK_STAGES[0]),
        input_lower=-limits if limits.size else None,
        input_upper=limits if limits.size else None,
        sample_configuration=model.home,
    )
    vars = problem.vars
    bound = SLIDING_SPEED_BOUND * max(model.home[model.z_index], 1e-9) / h
    binding = problem.prog.AddBoundingBoxConstraint(0.0, bound, vars.psi.ravel())
    binding.evaluator().set_description("psi_upper")
    problem.bindings["bounds"].append(binding)
    return problem


def _SetGuess(problem, model: RobotTrajoptModel, q: np.ndarray, h: float) -> None:
    from drakebots.optimization.contact_implicit import ContactGuessFromKnots, SetInitialGuess

    guess = {"q": q, "u": np.zeros((len(q) - 1, len(model.input_names)))}
    tolerance = 0.02 * max(model.home[model.z_index], 1e-9)
    guess.update(
        ContactGuessFromKnots(
            model.dynamics, q, h, contact_tolerance=tolerance, weight=model.weight
        )
    )
    SetInitialGuess(problem, guess)


def _Floating(model: RobotTrajoptModel) -> bool:
    return getattr(model.robot, "base", None) == "floating_rpy"


def GuardPoints(model: RobotTrajoptModel, links=()) -> tuple[np.ndarray, np.ndarray, list]:
    """(bodies, points, names): the points kept above the ground at every knot of a floating
    base's plan: the origin of every body a joint moves (the base's centre, each hip and knee
    link; not the parts welded to them), one of any set whose origins coincide in every
    configuration (a hip's abduction and flexion links), none that is a contact point; the
    8 corners of the box bounding the base's collision geometry and that of the bodies welded
    to it (_CollisionCorners); and the 8 box corners of each of `links` (LinkBoxes' names).

    The links' boxes are added where a plan needs them (OptimizeGait / OptimizeJump re-solve
    with the links whose boxes dipped): 64 more rows a knot on Solo-12 made its trot's KKT
    factorisations four times as costly (95 s of CPU against 34 s, measured), for a constraint
    the plans rarely touch."""
    plant = model.plant
    world = int(plant.world_body().index())
    contacts = {
        (body, tuple(np.round(np.asarray(point, float), 12)))
        for body, point in model.robot.contacts
    }
    moved = {
        int(plant.get_joint(j).child_body().index())
        for j in plant.GetJointIndices()
        if plant.get_joint(j).num_positions() > 0
    }
    candidates = []
    for b in range(plant.num_bodies()):
        body = plant.get_body(BodyIndexOf(b))
        if int(body.index()) == world or int(body.index()) not in moved:
            continue  # welded parts (a camera, a foot link) ride on the body they are welded to
        if (body.name(), (0.0, 0.0, 0.0)) in contacts:
            continue
        candidates.append(body)
    # Coincident origins: compared at three random configurations within the joint limits.
    rng = np.random.default_rng(0)
    context = plant.CreateDefaultContext()
    lower = np.maximum(plant.GetPositionLowerLimits(), -np.pi)
    upper = np.minimum(plant.GetPositionUpperLimits(), np.pi)
    origins = []
    for _ in range(3):
        plant.SetPositions(context, rng.uniform(lower, upper))
        origins.append(
            np.array([plant.EvalBodyPoseInWorld(context, b).translation() for b in candidates])
        )
    origins = np.stack(origins, 1)  # (bodies, 3 samples, 3)
    kept = []
    for i in range(len(candidates)):
        if not any(np.allclose(origins[i], origins[j], atol=1e-9) for j in kept):
            kept.append(i)
    bodies = [int(candidates[i].index()) for i in kept]
    points = [np.zeros(3)] * len(kept)
    names = [candidates[i].name() for i in kept]
    # The base's collision geometry whole: the 8 corners of the box, in the base's frame,
    # bounding its geometry and that of the bodies welded to it (a trunk, cameras, an IMU on a
    # frame-only base link): a body sinking or rolling into the ground touches with a corner
    # first, its origin is the box's inside.
    boxes = _GroupBoxes(model)
    wanted = {model.robot.base_body, *links}
    for name, (b, box) in boxes.items():
        if name not in wanted:
            continue
        for corner_index, corner in enumerate(box):
            bodies.append(b)
            points.append(corner)
            names.append(f"{name}_box_corner_{corner_index}")
    return np.array(bodies, int), np.array(points, float).reshape(-1, 3), names


def _GroupBoxes(model: RobotTrajoptModel) -> dict:
    """{body name: (body index, (8, 3) corners in its frame)}: for the base and for every body a
    joint moves that carries no contact (nothing welded to it is a contact's body: hips and
    thighs, not a shank with its foot), the box in its frame bounding its collision geometry
    and that of the bodies welded to it. A link's box is left out where it does not clear the
    ground at the home pose (no plan could hold it above); a shank's box ends in the foot and
    reaches below its contact point, so it could not stand."""
    plant = model.plant
    corners = _CollisionCorners(model.robot)
    touching = {name for name, _ in model.robot.contacts}
    base = int(plant.GetBodyByName(model.robot.base_body).index())
    moved = {
        int(plant.get_joint(j).child_body().index())
        for j in plant.GetJointIndices()
        if plant.get_joint(j).num_positions() > 0
    }
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, model.home)
    unit = np.array(np.meshgrid([0, 1], [0, 1], [0, 1])).T.reshape(-1, 3)
    out = {}
    for b in [base] + sorted(moved - {base}):
        body = plant.get_body(BodyIndexOf(b))
        group = plant.GetBodiesWeldedTo(body)
        if b != base and any(other.name() in touching for other in group):
            continue
        inside = [
            plant.CalcPointsPositions(
                context, other.body_frame(), corners[other.name()].T, body.body_frame()
            ).T
            for other in group
            if other.name() in corners
        ]
        if not inside:
            continue
        inside = np.vstack(inside)
        lower, upper = inside.min(axis=0), inside.max(axis=0)
        box = lower + unit * (upper - lower)
        heights = plant.CalcPointsPositions(context, body.body_frame(), box.T, plant.world_frame())
        if b != base and heights[2].min() < 0.0:
            continue
        out[body.name()] = (b, box)
    return out


def LinkBoxes(model: RobotTrajoptModel) -> dict:
    """{link name: (body index, (8, 3) box corners)}: the legs' links whose collision boxes a
    floating base's plan must keep above the ground (_GroupBoxes but the base's)."""
    if not _Floating(model):
        return {}
    return {k: v for k, v in _GroupBoxes(model).items() if k != model.robot.base_body}


def DippingLinks(
    model: RobotTrajoptModel, q: np.ndarray, tolerance: float = 1e-6, boxes: dict | None = None
) -> dict:
    """{link name: lowest corner height} of the LinkBoxes (or `boxes`, LinkBoxes' result) whose
    boxes reach more than `tolerance` below the ground at some knot of `q` (N, positions)."""
    plant = model.plant
    context = plant.CreateDefaultContext()
    lowest = {}
    boxes = LinkBoxes(model) if boxes is None else boxes
    for qk in q:
        plant.SetPositions(context, qk)
        for name, (b, box) in boxes.items():
            frame = plant.get_body(BodyIndexOf(b)).body_frame()
            z = plant.CalcPointsPositions(context, frame, box.T, plant.world_frame())[2].min()
            lowest[name] = min(lowest.get(name, np.inf), float(z))
    return {name: z for name, z in lowest.items() if z < -tolerance}


def _CollisionCorners(robot) -> dict:
    """{body name: (8, 3) corners, body frame} of the box bounding each body's collision
    geometry, for the bodies that have some (from a probe plant with its SceneGraph: the
    transcription's plant has no geometry)."""
    from drakebots.robots.base import CollisionBoxCorners, MakeRobotModelDiagram

    probe = MakeRobotModelDiagram(robot)
    out = {}
    for body in probe.plant.GetBodyIndices(probe.instance):
        body = probe.plant.get_body(body)
        box = CollisionBoxCorners(probe.plant, probe.scene_graph, body)
        if len(box):
            out[body.name()] = box
    return out


def BodyIndexOf(i: int):
    from pydrake.multibody.tree import BodyIndex

    return BodyIndex(i)


def _AddGuards(problem, model: RobotTrajoptModel, links=()) -> None:
    """Every guard point (GuardPoints, with the boxes of `links`) above the ground at every
    knot (a floating base)."""
    from drakebots.optimization.contact_implicit_constraints import AddGuardHeightConstraints

    if not _Floating(model):
        return
    bodies, points, _ = GuardPoints(model, links)
    problem.bindings["guard"] = AddGuardHeightConstraints(
        problem.prog, problem.vars, model.dynamics, bodies, points
    )


def _Clearance(problem):
    return next(
        b for b in problem.bindings["contact"] if b.evaluator().get_description() == "clearance[0]"
    )


def MakeGaitProblem(model: RobotTrajoptModel, config: GaitConfig, guard_links=()):
    """The periodic gait of the module docstring, its warm start set.

    A floating base's start is anchored in x, y and yaw (y and yaw are periodic: the end
    equals the start; x advances D), its guard points (GuardPoints) stay above the ground, and
    with a `gait` its stance feet at knot 0 are on the ground (phi = 0)."""
    from drakebots.optimization import legged_gaits
    from drakebots.optimization.contact_implicit_constraints import AddFixedPositions

    N = int(config.knots)
    h = config.period / (N - 1)
    problem = _Transcription(model, config, h, ("periodic",))
    prog, vars = problem.prog, problem.vars
    start, end = model.home.copy(), model.home.copy()
    start[model.x_index], end[model.x_index] = 0.0, config.distance
    anchored = [model.x_index]
    if _Floating(model):
        yaw = model.orientation_indices[2]
        anchored += [model.x_index + 1, yaw]  # RpyFloatingJoint: x, y, z follow roll, pitch, yaw
        start[model.x_index + 1], start[yaw] = 0.0, 0.0
    problem.bindings["start"] = [AddFixedPositions(prog, vars, 0, start, anchored)]
    problem.bindings["goal"] = [AddFixedPositions(prog, vars, N - 1, end, [model.x_index])]
    _AddGuards(problem, model, guard_links)
    times = np.linspace(0.0, 1.0, N)
    q = np.tile(model.home, (N, 1))
    q[:, model.x_index] = np.linspace(0.0, config.distance, N)
    legs = None
    if config.gait:
        legs = legged_gaits.FindLegs(model)
        offsets = legged_gaits.GaitOffsets(config.gait, legs, source=legged_gaits._Where(model))
        duty = legged_gaits.DUTY_FACTORS[config.gait]
        q = legged_gaits.ScheduleGuess(model, legs, offsets, duty, times, config.distance)
        q[:, model.x_index] = np.linspace(0.0, config.distance, N)
        standing = _StandingContacts(model, legs)
        stance = legged_gaits.StanceMask(offsets, duty, times[:1])[0] & standing
        clearance = _Clearance(problem).evaluator()
        upper = np.where(stance, 0.0, np.inf)
        clearance.UpdateUpperBound(upper)
        problem.bindings["stance_start"] = [_Clearance(problem)]
        cores = legged_gaits.ScheduleMasks(offsets, duty, times, config.schedule_margin)
        problem.bindings["schedule"] = _AddSchedule(problem, model, standing, *cores)
        problem.bindings["stance_load"] = _AddStanceLoad(
            problem, model, standing & cores[0], config.stance_load
        )
    if config.mirror or config.gait in legged_gaits.SYMMETRIC_GAITS:
        problem.bindings["mirror"] = _AddHalfCycleMirror(problem, model, config, legs)
    _AddCosts(problem, model, config.costs, config.period)
    _SetGuess(problem, model, q, h)
    return problem


def _StandingContacts(model: RobotTrajoptModel, legs) -> np.ndarray:
    """(contacts,) True for the contact each leg stands on: a leg with several contacts (a
    foot's collision shapes) stands on its lowest one at the home pose; the others only stay
    above the ground."""
    phi_home = model.dynamics.SignedDistances(model.home)
    standing = np.zeros(len(legs), bool)
    for leg in legs:
        same = [other.contact for other in legs if other.name == leg.name]
        standing[leg.contact] = leg.contact == min(same, key=lambda c: phi_home[c])
    return standing


def _ContactBindings(problem):
    """(knot, binding) of each contact[k] binding: it bounds phi at knot k + 1."""
    for binding in problem.bindings["contact"]:
        name = binding.evaluator().get_description()
        if name.startswith("contact["):
            yield int(name[8:-1]) + 1, binding


def _AddSchedule(problem, model, standing, stance, swing) -> list:
    """The gait's foot sequence as bounds on contact[k] (phi(q_k+1)): in a leg's stance core
    (legged_gaits.ScheduleMasks) its standing contact on the ground (phi = 0; a leg's other
    contacts only above it), in its swing core every contact of the leg at least
    SWING_CLEARANCE home base heights above the ground; stance, swing: the cores, (knots,
    contacts) masks. Returns the bindings bounded."""
    from drakebots.optimization import legged_gaits

    vars_ = problem.vars
    lift = legged_gaits.SWING_CLEARANCE * max(model.home[model.z_index], 1e-9)
    nc = model.dynamics.num_contacts
    bounded = []
    width = vars_.beta.shape[1] // nc
    for knot, binding in _ContactBindings(problem):
        on, off = stance[knot] & standing, swing[knot]
        if not (on.any() or off.any()):
            continue
        lower = np.array(binding.evaluator().lower_bound(), float)
        upper = np.array(binding.evaluator().upper_bound(), float)
        lower[:nc] = np.where(off, lift, lower[:nc])
        upper[:nc] = np.where(on, 0.0, upper[:nc])
        binding.evaluator().UpdateLowerBound(lower)
        binding.evaluator().UpdateUpperBound(upper)
        bounded.append(binding)
        # A foot in the air carries no force: its normal and friction forces at knot k + 1
        # are zero (what complementarity implies there, given to the solver as bounds).
        for c in np.flatnonzero(off):
            for v in (
                vars_.gamma[knot - 1, c : c + 1],
                vars_.beta[knot - 1, c * width : (c + 1) * width],
            ):
                bounded.append(problem.prog.AddBoundingBoxConstraint(0.0, 0.0, v))
    return bounded


def _AddStanceLoad(problem, model, standing, stance_load) -> list:
    """Where `standing` ((knots, contacts): each leg's standing contact in its stance core, as
    _AddSchedule holds it on the ground) the contact's normal force at knot k + 1 is at least
    `stance_load` of the robot's weight: gamma[k, c] >= stance_load (gamma is in units of the
    weight, force_scale). Returns the bindings (none for a stance_load of 0)."""
    if not stance_load > 0.0:
        return []
    least = stance_load * model.weight / problem.dynamics.force_scale
    gamma = problem.vars.gamma
    bounds = []
    for knot, _binding in _ContactBindings(problem):
        for c in np.flatnonzero(standing[knot]):
            binding = problem.prog.AddBoundingBoxConstraint(
                least, np.inf, gamma[knot - 1, c : c + 1]
            )
            binding.evaluator().set_description("stance_load")
            bounds.append(binding)
    return bounds


def MirrorMatrix(model: RobotTrajoptModel, pairs=None, legs=None) -> np.ndarray:
    """The reflection P of the positions about the sagittal plane (legged_gaits.
    ReflectionMatrix): the user's joint pairs swapped (a roll axis changing sign), or with
    `pairs` None the legs paired from the model (FindLegs when `legs` is None)."""
    from drakebots.optimization import legged_gaits

    if pairs:
        return legged_gaits.ReflectionMatrix(model, pairs=pairs)
    legs = legs if legs is not None else legged_gaits.FindLegs(model)
    return legged_gaits.ReflectionMatrix(model, legs)


def _AddHalfCycleMirror(problem, model: RobotTrajoptModel, config, legs=None) -> list:
    """Half a cycle on, the robot is its mirror image D/2 further (a symmetric gait, each leg
    doing at T/2 what the other did at 0): q_m = P q_0 + (D/2) e_x and
    q_m+1 - q_m = P (q_1 - q_0), m = (N - 1) / 2 (linear; positions and the first interval's
    displacement, i.e. the discrete state)."""
    prog, vars = problem.prog, problem.vars
    N, n = vars.num_knots, len(model.home)
    m = (N - 1) // 2
    P, eye = MirrorMatrix(model, config.mirror, legs), np.eye(n)
    shift = np.zeros(n)
    shift[model.x_index] = 0.5 * config.distance
    positions = prog.AddLinearEqualityConstraint(
        np.hstack([P, -eye]), -shift, np.concatenate([vars.q[0], vars.q[m]])
    )
    positions.evaluator().set_description("mirror_positions")
    A = np.hstack([-P, P, eye, -eye])  # P (q_1 - q_0) - (q_m+1 - q_m) = 0
    velocity = prog.AddLinearEqualityConstraint(
        A, np.zeros(n), np.concatenate([vars.q[0], vars.q[1], vars.q[m], vars.q[m + 1]])
    )
    velocity.evaluator().set_description("mirror_displacement")
    return [positions, velocity]


def MakeJumpProblem(model: RobotTrajoptModel, config: JumpConfig, guard_links=()):
    """The jump of the module docstring, its warm start set."""
    from drakebots.optimization.contact_implicit_constraints import AddFixedPositions
    from drakebots.optimization.contact_implicit_costs import AddFinalStateCost

    N = int(config.knots)
    h = config.duration / (N - 1)
    n = model.plant.num_positions()
    problem = _Transcription(model, config, h, ("velocity", np.zeros(n)))
    prog, vars = problem.prog, problem.vars
    problem.bindings["start"] = [AddFixedPositions(prog, vars, 0, model.home)]
    apex = model.home.copy()
    apex[model.z_index] += config.height
    problem.bindings["goal"] = [AddFixedPositions(prog, vars, N - 1, apex, [model.z_index])]
    _AddGuards(problem, model, guard_links)
    flight = int(config.flight_knots) if _Floating(model) else 0
    if flight:
        # contact[k] holds phi(q_k+1): knots N-1-flight .. N-1 (the apex) off the ground.
        clearance = FLIGHT_CLEARANCE * max(model.home[model.z_index], 1e-9)
        nc = model.dynamics.num_contacts
        problem.bindings["flight"] = []
        for knot, binding in _ContactBindings(problem):
            if knot >= N - 1 - flight:
                lower = np.array(binding.evaluator().lower_bound(), float)
                lower[:nc] = clearance
                binding.evaluator().UpdateLowerBound(lower)
                problem.bindings["flight"].append(binding)
    _AddCosts(problem, model, config.costs, config.duration)
    base = [model.x_index, model.z_index, *model.orientation_indices]
    q_weights, qdot_weights = np.zeros(n), np.zeros(n)
    q_weights[[model.x_index, *model.orientation_indices]] = config.goal_weight
    qdot_weights[base] = config.goal_weight
    problem.bindings["costs"].append(
        AddFinalStateCost(
            prog,
            vars,
            q_goal=apex,
            qdot_goal=np.zeros(n),
            q_weights=q_weights,
            qdot_weights=qdot_weights,
        )
    )
    q = np.tile(model.home, (N, 1))
    if flight:
        # The warm start leaves the ground at knot N-2-flight and rises at the home pose to
        # the apex (quadratic in time, as a ballistic rise decelerating to the apex).
        k0 = N - 2 - flight
        r = np.clip((np.arange(N) - k0) / (N - 1 - k0), 0.0, 1.0)
        q[:, model.z_index] += config.height * (1.0 - (1.0 - r) ** 2)
    _SetGuess(problem, model, q, h)
    return problem


# ---------------------------------------------------------------------------- solve and check
def _Solver(name: str, problem) -> str:
    """The solver that runs for `name` ("auto": the fast path if it can take the program)."""
    if name != "auto":
        return name
    from drakebots.optimization.contact_implicit_fast import FastPathSupport

    return "fast" if FastPathSupport(problem, "gauss-newton")[0] else "snopt"


def _Acceptable(check, solver: MotionSolver) -> bool:
    return (
        check.max_violation <= solver.feasibility_tolerance
        and check.max_complementarity_violation <= solver.complementarity_tolerance
    )


def _IterationReporter(reporter: Reporter, interval_s: float = PROGRESS_INTERVAL_S):
    """A ContactImplicitProblem.on_iteration that says IPOPT's iteration and constraint
    violation through the reporter at most every `interval_s` of wall clock (and on the
    first iteration)."""
    last = [-np.inf]

    def OnIteration(iteration: int, objective: float, violation: float) -> None:
        now = time.perf_counter()
        if now - last[0] < interval_s:
            return
        last[0] = now
        reporter.Say(
            f"  IPOPT iteration {iteration}: constraint violation {violation:.1e}, "
            f"objective {objective:.4g}"
        )

    return OnIteration


def _Homotopy(problem, config, bounds, warm_mu_init: float):
    """SolveWithSlackHomotopy over `bounds`; with warm_mu_init > 0 (the fast path), every
    stage after the first starts IPOPT's barrier at that mu (monotone) rather than from 0.1:
    a warm start already near the answer does not climb down the whole barrier again."""
    from drakebots.optimization.contact_implicit import SolveWithSlackHomotopy

    if not warm_mu_init > 0 or config.solver != "fast" or len(bounds) < 2:
        return SolveWithSlackHomotopy(problem, config, upper_bounds=bounds)
    first = SolveWithSlackHomotopy(problem, config, upper_bounds=bounds[:1])
    x = first.result.get_x_val()
    slack = problem.prog.FindDecisionVariableIndices(problem.vars.slack)
    x[slack] = np.minimum(x[slack], bounds[1])
    problem.prog.SetInitialGuessForAllVariables(x)
    warm = copy.deepcopy(config)
    warm.ipopt_options = {"mu_strategy": "monotone", "mu_init": float(warm_mu_init)}
    warm.ipopt_options.update(config.ipopt_options)
    rest = SolveWithSlackHomotopy(problem, warm, upper_bounds=bounds[1:])
    rest.solve_time_s += first.solve_time_s
    rest.cpu_time_s += first.cpu_time_s
    rest.iterations = (rest.iterations or 0) + (first.iterations or 0)
    return rest


def SolveMotion(problem, solver: MotionSolver, reporter: Reporter | None = None):
    """The slack homotopy, then the proximal repair if the point misses the acceptance.

    Returns (outcome, check, stages): the last SolveOutcome (times summed over the stages), its
    SolutionCheck and [(stage, status, seconds)].
    """
    from drakebots.optimization.contact_implicit import (
        CheckContactImplicitSolution,
        SolveProximalFeasibility,
        SolverConfig,
        SolveWithSlackHomotopy,
    )

    reporter = reporter or Reporter(None)
    name = _Solver(solver.solver, problem)
    config = SolverConfig(solver=name, major_iterations=int(solver.iterations))
    reporter.Say(f"solving with {name}: {problem.prog.num_vars()} variables, slack homotopy")
    problem.on_iteration = _IterationReporter(reporter)
    # The last stage's slack bounds each product by s * weight (forces are scaled by the
    # weight): at most half the tolerance in physical units.
    weight = problem.dynamics.force_scale
    final = min(SLACK_STAGES[-1], 0.5 * solver.complementarity_tolerance / weight)
    stages_bounds = (*SLACK_STAGES[:-1], final)
    stages = []
    relax = float(getattr(solver, "effort_continuation", 1.0))
    bounds = [
        b for b in problem.bindings["bounds"] if b.evaluator().get_description() == "input_bounds"
    ]
    if relax > 1.0 and bounds:
        # Effort continuation: the first stage at relaxed effort limits, then the true ones
        # from its point (inputs clipped into them).
        ev = bounds[0].evaluator()
        lower, upper = np.array(ev.lower_bound()), np.array(ev.upper_bound())
        ev.UpdateLowerBound(relax * lower)
        ev.UpdateUpperBound(relax * upper)
        reporter.Say(f"  effort limits x{relax:g} for the first stage")
        first = SolveWithSlackHomotopy(problem, config, upper_bounds=stages_bounds[:1])
        stages.append(("relaxed effort", first.status, first.solve_time_s))
        ev.UpdateLowerBound(lower)
        ev.UpdateUpperBound(upper)
        x = first.result.get_x_val()
        iu = problem.prog.FindDecisionVariableIndices(problem.vars.u.ravel())
        x[iu] = np.clip(x[iu], lower, upper)
        problem.prog.SetInitialGuessForAllVariables(x)
        outcome = _Homotopy(problem, config, stages_bounds, solver.warm_mu_init)
        outcome.solve_time_s += first.solve_time_s
        outcome.cpu_time_s += first.cpu_time_s
        outcome.iterations = (outcome.iterations or 0) + (first.iterations or 0)
    else:
        outcome = _Homotopy(problem, config, stages_bounds, solver.warm_mu_init)
    stages.append(("slack homotopy", outcome.status, outcome.solve_time_s))
    x = outcome.result.get_x_val()
    check = CheckContactImplicitSolution(problem, x)
    # The repair: the nearest point with the slack fixed, tightened tenfold if the first
    # repair still misses the complementarity (a product may sit inside the solver's
    # constraint tolerance yet above ours).
    for attempt, slack in enumerate((final, 0.1 * final)):
        if _Acceptable(check, solver):
            break
        reporter.Say(
            f"  {outcome.status}; violation {check.max_violation:.1e}, complementarity "
            f"{check.max_complementarity_violation:.1e}: proximal repair (slack {slack:.1e})"
        )
        earlier = outcome
        outcome = SolveProximalFeasibility(problem, x, config, keep_costs=True, slack=slack)
        stages.append((f"proximal repair {attempt + 1}", outcome.status, outcome.solve_time_s))
        outcome.solve_time_s += earlier.solve_time_s
        outcome.cpu_time_s += earlier.cpu_time_s
        outcome.iterations = (outcome.iterations or 0) + (earlier.iterations or 0)
        x = outcome.result.get_x_val()
        check = CheckContactImplicitSolution(problem, x)
    return outcome, check, stages


# ---------------------------------------------------------------------------- the result
@dataclasses.dataclass
class MotionResult(WorkflowResult):
    """OptimizeGait's or OptimizeJump's result.

    Arrays (robot units): times (N knots), q (N, n), u (N-1, m: input k holds over interval k),
    contact_forces (N-1, contacts, 3), phi (N, contacts: heights of the contacts above the ground);
    position_names, input_names, contact_names label them. resimulation: Drake's re-simulation
    (times, q) or None where the solve was not accepted.
    """

    times: np.ndarray = None
    q: np.ndarray = None
    u: np.ndarray = None
    contact_forces: np.ndarray = None
    phi: np.ndarray = None
    position_names: list = None
    input_names: list = None
    contact_names: list = None
    resimulation: dict | None = None
    model: RobotTrajoptModel | None = dataclasses.field(default=None, repr=False)

    @property
    def measure(self) -> str:
        """The figure the goal sets: "distance_per_cycle" (gait) or "apex_height" (jump)."""
        return "distance_per_cycle" if self.figures["problem"] == "gait" else "apex_height"

    @property
    def planned(self) -> float:
        """The plan's distance per cycle or apex height (robot length unit)."""
        return self.figures[self.measure]

    @property
    def resimulated(self) -> float | None:
        """Drake's re-simulation's distance per cycle or apex height (None: not run)."""
        return self.figures.get("resimulated_" + self.measure)

    def _Write(self, results) -> None:
        from drakebots.optimization.legged_report import WriteMotionFiles

        WriteMotionFiles(results, self)

    @classmethod
    def FromTrajectory(
        cls, verb, config, figures, reason, traj, model, resim, *, times=None, q=None
    ) -> MotionResult:
        """The result of a plan `traj` (ReconstructTrajectory's) of `model`; `times` and `q`
        replace the plan's own where given (a saved plan read back by `track`)."""
        return cls(
            verb=verb,
            config=config,
            success=reason is None,
            reason=reason,
            figures=figures,
            times=traj.times if times is None else times,
            q=traj.q if q is None else q,
            u=traj.u,
            contact_forces=traj.contact_forces,
            phi=traj.phi,
            position_names=model.position_names,
            input_names=model.input_names,
            contact_names=model.contact_names,
            resimulation=resim,
            model=model,
        )


def _GuardDippingLinks(model, config, make_problem, problem, outcome, check, stages, x, traj, say):
    """Where the plan's legs' links (LinkBoxes) dip below the ground, the problem again with
    those links' boxes guarded (GuardPoints), repaired from the plan (SolveProximalFeasibility,
    its costs kept), until no link dips (at most as many rounds as there are links). Returns
    (problem, outcome, check, x, traj) of the last solve; `stages` gains each repair."""
    from drakebots.optimization.contact_implicit import (
        CheckContactImplicitSolution,
        ReconstructTrajectory,
        SolveProximalFeasibility,
        SolverConfig,
    )

    guarded: list[str] = []
    boxes = LinkBoxes(model)
    for _ in range(len(boxes)):
        dipping = DippingLinks(model, traj.q, boxes=boxes)
        if not dipping:
            break
        guarded += sorted(dipping)
        say.Say(
            "  links below the ground: "
            + ", ".join(f"{name} {z:.3g}" for name, z in sorted(dipping.items()))
            + f"; guarding their collision boxes and repairing ({len(guarded)} links)"
        )
        problem = make_problem(model, config, guard_links=tuple(guarded))
        problem.prog.SetInitialGuessForAllVariables(x)
        problem.on_iteration = _IterationReporter(say)
        name = _Solver(config.solver.solver, problem)
        solver = SolverConfig(solver=name, major_iterations=int(config.solver.iterations))
        weight = problem.dynamics.force_scale
        slack = min(SLACK_STAGES[-1], 0.5 * config.solver.complementarity_tolerance / weight)
        earlier = outcome
        outcome = SolveProximalFeasibility(problem, x, solver, keep_costs=True, slack=slack)
        stages.append(("link guards", outcome.status, outcome.solve_time_s))
        outcome.solve_time_s += earlier.solve_time_s
        outcome.cpu_time_s += earlier.cpu_time_s
        outcome.iterations = (outcome.iterations or 0) + (earlier.iterations or 0)
        x = outcome.result.get_x_val()
        check = CheckContactImplicitSolution(problem, x)
        traj = ReconstructTrajectory(problem, x)
    return problem, outcome, check, x, traj


def _Solve(kind: str, config, make_problem, *, progress, meshcat):
    """The common body of OptimizeGait and OptimizeJump."""
    from drakebots.optimization.contact_implicit import ReconstructTrajectory
    from drakebots.optimization.legged_report import Figures, Resimulate
    from drakebots.robots import GetRobot

    config.Check()
    config = copy.deepcopy(config)
    reporter = Reporter(progress)
    robot = GetRobot(config.robot)
    _CheckScale(kind, config, robot)
    model = MakeRobotTrajoptModel(
        robot, friction=config.friction, friction_directions=config.friction_directions
    )
    start = time.perf_counter()
    units = getattr(robot, "units", {}) or {}
    length, duration = units.get("length", "m"), units.get("time", "s")
    if kind == "gait":
        what = f"{config.gait + ' ' if config.gait else ''}gait, {config.distance:g} {length} in "
        what += f"{config.period:g} {duration}"
    else:
        what = f"jump, {config.height:g} {length} in {config.duration:g} {duration}"
    reporter.Say(f"planning a {what}, {int(config.knots)} knots")
    problem = make_problem(model, config)
    build_s = time.perf_counter() - start
    outcome, check, stages = SolveMotion(problem, config.solver, reporter)
    x = outcome.result.get_x_val()
    traj = ReconstructTrajectory(problem, x)
    problem, outcome, check, x, traj = _GuardDippingLinks(
        model, config, make_problem, problem, outcome, check, stages, x, traj, reporter
    )
    reporter.Say(
        f"  {outcome.status}; {outcome.solve_time_s:.1f} s; complementarity "
        f"{check.max_complementarity_violation:.1e}, violation {check.max_violation:.1e}"
    )
    accepted = _Acceptable(check, config.solver)
    resim = None
    if accepted:
        reporter.Say("tracking the plan in closed loop in Drake (SAP, whole-body QP)")
        resim = Resimulate(model, kind, traj, config, meshcat=meshcat)
    figures, reason = Figures(kind, model, config, problem, x, outcome, check, stages, traj, resim)
    figures["build_time_s"] = build_s
    return MotionResult.FromTrajectory(
        f"optimize {kind}", config, figures, reason, traj, model, resim
    )


def OptimizeGait(config: GaitConfig, *, meshcat=None, progress=None) -> MotionResult:
    """Optimizes a periodic gait of any robot file's robot (the module docstring's problem).

    Args:
        config: the robot, period, distance, knots, costs and solver (GaitConfig).
        meshcat: a Meshcat to show the re-simulation in (None: none is started).
        progress: a callable taking drakebots.workflow.ProgressEvent.

    Returns:
        a MotionResult: success when the plan meets the feasibility and true-complementarity
        targets and Drake's closed-loop run of at least 3 cycles follows it (base position at
        each cycle end, no fall, distance per cycle within 25 %); otherwise `reason` says which
        check failed and by how much, with the most violated constraints.
    """
    return _Solve("gait", config, MakeGaitProblem, progress=progress, meshcat=meshcat)


def OptimizeJump(config: JumpConfig, *, meshcat=None, progress=None) -> MotionResult:
    """Optimizes a vertical jump of any robot file's robot to `config.height` above its home
    height (the module docstring's problem). Args and returns as OptimizeGait."""
    return _Solve("jump", config, MakeJumpProblem, progress=progress, meshcat=meshcat)
