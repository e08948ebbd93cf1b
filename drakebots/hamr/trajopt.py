"""HAMR-VI gaits and jump by variational contact-implicit trajectory optimization
(hamr-contact-implicit.txt, Sec. III-A and III-B; the authors' settings in
shared/reference/hamr-vi/README.md).

`MakeHamrTrajoptModel(surface)` gathers what the general transcription needs from the HAMR-VI
model of drakebots.hamr.robot: the continuous plant (6-joint floating base, v = qdot), its exact
Lagrangian, the 24 loop rows (12 hinges, 2 rows each), the four foot points, and the piezoelectric
bender force model of drakebots.hamr.piezo as the actuation, so the inputs are the drive
voltages themselves, bounded to [0, 225] V as in Eq. 15 (rather than force bounds: the bender
force depends on both the voltage and the deflection, so a voltage bound is the physical limit and
no conservative force box is needed).

`MakeHamrGaitProblem` and `MakeHamrJumpProblem` compose the problem of Eq. 15 with the costs of
Eq. 16 (gait) and Eq. 17 (jump); `GaitWarmStart` and `JumpWarmStart` give the initial guesses the
authors used: the last stride of an open-loop simulation (drakebots.hamr.simulation), and
a heuristic crouch-and-push jump, with forces and multipliers from a bounded least-squares fit of
the discrete dynamics at every knot.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time

import numpy as np
from pydrake.multibody.plant import MultibodyPlant

from drakebots.hamr.model import FLEXURES, LOOP_HINGES
from drakebots.hamr.piezo import DefaultPiezoBender, PiezoBenderForce
from drakebots.hamr.robot import (
    ACTUATOR_ORIENTATION,
    BASE_JOINTS,
    FOOT_BODIES,
    GRAVITY,
    HOME_BASE_HEIGHT,
    LEGS,
    AddHamr,
    FootPoint,
    HamrPositionIndex,
    SurfaceFriction,
)
from drakebots.optimization import contact_implicit_constraints as constraints
from drakebots.optimization.contact_implicit import (
    CheckContactImplicitSolution,
    ContactImplicitProblem,
    MakeContactImplicitProblem,
    ResampleKnots,
    SetInitialGuess,
)
from drakebots.optimization.contact_implicit_costs import (
    AddComplementarityPenalty,
    AddFinalStateCost,
    AddFootScuffCost,
    AddInputCost,
    AddInputSmoothnessCost,
    AddVelocitySmoothnessCost,
)
from drakebots.optimization.tree_lagrangian import RelativePositionConstraints, TreeLagrangian
from drakebots.optimization.variational import (
    JointForceActuation,
    PointContact,
    VariationalDynamics,
)

MAX_WARM_START_STEP = 5.5  # ms: longest step of the warm start's time stepping (measured)
WARM_START_HALVINGS = 2  # how often GaitWarmStart halves its steps for a stride out of bounds
FORCE_SCALE = 0.01  # N: forces are decision variables in units of 10 mN (the weight is 14.5 mN)
VOLTAGE_RANGE = (0.0, 225.0)  # V, Eq. 15
FLEXURE_LIMIT = np.pi / 4  # rad, Eq. 15


@dataclasses.dataclass
class HamrTrajoptModel:
    """HAMR-VI as the transcription sees it (units mm, ms, g, N, V).

    Attributes:
        plant: continuous plant (no Drake constraints), 38 positions, v = qdot.
        lagrangian, loops, dynamics: the kernel, the 24 loop rows and the VariationalDynamics.
        surface, friction: the running surface and its friction coefficient.
        index: name -> position index ("base_x", "FL_swing", ...).
        actuator_names: the 8 inputs in order; actuator_joints: their position indices.
        weight: the robot's weight, N.
    """

    plant: MultibodyPlant
    lagrangian: TreeLagrangian
    loops: RelativePositionConstraints
    dynamics: VariationalDynamics
    surface: str
    friction: float
    index: dict
    actuator_names: list
    actuator_joints: np.ndarray
    weight: float
    home: np.ndarray

    def Position(self, name: str) -> int:
        return self.index[name]

    def FlexureIndices(self) -> list[int]:
        return [self.index[f"{leg}_{name}"] for leg in LEGS for name in FLEXURES]

    def PositionBounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The plant's limits, with every flexure in [-pi/4, pi/4] (Eq. 15)."""
        lower = self.plant.GetPositionLowerLimits().copy()
        upper = self.plant.GetPositionUpperLimits().copy()
        flex = self.FlexureIndices()
        lower[flex] = np.maximum(lower[flex], -FLEXURE_LIMIT)
        upper[flex] = np.minimum(upper[flex], FLEXURE_LIMIT)
        return lower, upper

    def BoundsExcursion(self, q: np.ndarray) -> float:
        """How far knots q (N, n) leave `PositionBounds()` at most (<= 0: all inside)."""
        lower, upper = self.PositionBounds()
        return float(np.max(np.maximum(lower - q, q - upper)))


def MakeHamrTrajoptModel(
    surface: str = "cardstock", *, friction_directions: int = 4
) -> HamrTrajoptModel:
    """HAMR-VI on a surface ("teflon", "cardstock", "sandpaper"), ready for the transcription.

    `friction_directions`: edges of the friction pyramid (the authors: 4; 8 keeps plans from
    sliding loaded feet on the 4-edge pyramid's diagonals, see variational.PyramidDirections).
    """
    friction = SurfaceFriction(surface)
    plant = MultibodyPlant(time_step=0.0)
    AddHamr(plant, loop_closure="none", surface=surface)
    plant.Finalize()
    lagrangian = TreeLagrangian(plant)
    hinges = [
        (h.name, plant.GetFrameByName(f"{h.name}_A"), plant.GetFrameByName(f"{h.name}_B"))
        for h in LOOP_HINGES
    ]
    loops = RelativePositionConstraints.FromHingeFrames(lagrangian, hinges)
    contacts = [
        PointContact(int(plant.GetBodyByName(FOOT_BODIES[leg]).index()), FootPoint(leg), leg)
        for leg in LEGS
    ]
    actuators = [plant.get_joint_actuator(i) for i in plant.GetJointActuatorIndices()]
    names = [a.name() for a in actuators]
    joints = np.array([a.joint().position_start() for a in actuators], dtype=int)
    orientation = np.array([ACTUATOR_ORIENTATION[name] for name in names])
    params = DefaultPiezoBender()

    def Piezo(voltage, deflection):
        return PiezoBenderForce(voltage, deflection, orientation, params)

    actuation = JointForceActuation(plant.num_positions(), joints, Piezo)
    dynamics = VariationalDynamics(
        lagrangian,
        contacts=contacts,
        friction=friction,
        actuation=actuation,
        position_constraints=loops,
        force_scale=FORCE_SCALE,
        friction_directions=friction_directions,
    )
    index = {}
    for j in plant.GetJointIndices():
        joint = plant.get_joint(j)
        if joint.num_positions() == 1:
            index[joint.name()] = int(joint.position_start())
    context = plant.CreateDefaultContext()
    weight = GRAVITY * plant.CalcTotalMass(context)
    return HamrTrajoptModel(
        plant=plant,
        lagrangian=lagrangian,
        loops=loops,
        dynamics=dynamics,
        surface=surface,
        friction=friction,
        index=index,
        actuator_names=names,
        actuator_joints=joints,
        weight=float(weight),
        home=plant.GetDefaultPositions().copy(),
    )


# ---------------------------------------------------------------------------- warm starts
def FitContactForces(
    model: HamrTrajoptModel,
    q: np.ndarray,
    u: np.ndarray,
    h: float,
    *,
    initial: tuple,
    contact_tolerance: float = 0.05,
) -> dict:
    """Forces and multipliers that best explain a knot trajectory (bounded least squares).

    At each knot the DEL residual is linear in (lambda, gamma, beta); lambda is free, gamma and
    beta >= 0, and only feet within `contact_tolerance` mm of the ground may push. The sliding
    variables psi, eta follow from the feet's displacements (g1 of Eq. 13 with the smallest
    psi). Returns arrays named as ContactImplicitVariables.Groups().
    """
    from scipy.optimize import lsq_linear

    dyn = model.dynamics
    N = len(q)
    nc, nd, nl = dyn.num_contacts, dyn.num_directions, dyn.num_position_constraints
    empty_lam, empty_g, empty_b = np.zeros(nl), np.zeros(nc), np.zeros(nc * nd)
    lam = np.zeros((N - 1, nl))
    gamma = np.zeros((N - 1, nc))
    beta = np.zeros((N - 1, nc * nd))
    psi = np.zeros((N - 1, nc))
    eta = np.zeros((N - 1, nc * nd))
    for k in range(N - 1):
        if k > 0:
            incoming = ("interval", q[k - 1], q[k], u[k - 1])
        elif initial[0] == "periodic":
            incoming = ("interval", q[N - 2], q[N - 1], u[N - 2])
        elif initial[0] == "velocity":
            incoming = ("legendre", np.asarray(initial[1], float))
        else:
            incoming = ("momentum", np.asarray(initial[1], float))
        r0, blocks = dyn.DelResidual(incoming, q[k], q[k + 1], u[k], empty_lam, empty_g, empty_b, h)
        A = np.hstack([blocks["lam"], blocks["gamma"], blocks["beta"]])
        phi = dyn.SignedDistances(q[k + 1])
        near = phi < contact_tolerance
        lower = np.concatenate([np.full(nl, -np.inf), np.zeros(nc + nc * nd)])
        upper = np.concatenate(
            [
                np.full(nl, np.inf),
                np.where(near, np.inf, 0.0),
                np.repeat(np.where(near, np.inf, 0.0), nd),
            ]
        )
        upper = np.maximum(upper, lower + 1e-12)
        fit = lsq_linear(A, -r0, bounds=(lower, upper), method="bvls", lsmr_tol="auto")
        x = fit.x
        lam[k], gamma[k], beta[k] = x[:nl], x[nl : nl + nc], x[nl + nc :]
        # Friction within the pyramid (the fit does not know mu).
        b = beta[k].reshape(nc, nd)
        total = b.sum(axis=1)
        limit = dyn.friction * gamma[k]
        scale = np.where(total > limit, limit / np.maximum(total, 1e-12), 1.0)
        beta[k] = (b * scale[:, None]).ravel()
        x0 = dyn.ContactPoints(dyn.Kinematics(q[k]))
        x1 = dyn.ContactPoints(dyn.Kinematics(q[k + 1]))
        tangential = ((x1 - x0) @ dyn.directions.T) / h  # (nc, nd)
        psi[k] = np.maximum(0.0, -tangential.min(axis=1))
        eta[k] = (tangential + psi[k][:, None]).ravel()
    return {"lam": lam, "gamma": gamma, "beta": beta, "psi": psi, "eta": eta}


@dataclasses.dataclass
class WarmStart:
    """An initial guess: knots, inputs and (fitted) forces, and where it came from."""

    q: np.ndarray
    u: np.ndarray
    h: float
    source: str
    forces: dict = dataclasses.field(default_factory=dict)
    velocity_mm_per_cycle: float | None = None
    apex_height_mm: float | None = None
    simulation: object = None
    # How far the knots leave the position bounds (PositionBounds; rad or mm, <= 0: inside).
    bounds_excursion: float | None = None

    def Guess(self) -> dict:
        guess = {"q": self.q, "u": self.u}
        guess.update(self.forces)
        return guess


def OpenLoopVoltages(
    model: HamrTrajoptModel,
    gait: str,
    frequency: float,
    times_ms: np.ndarray,
    amplitude: float = 90.0,
) -> np.ndarray:
    """The open-loop drive of drakebots.hamr.gaits (trot, pronk, jump) at given times,
    (len(times), 8) V, with each actuator's sign from the leg transmission at the home pose."""
    from drakebots.hamr.gaits import GaitParams, GaitVoltageSource
    from drakebots.hamr.simulation import ActuatorSigns

    plant = model.plant
    signs = ActuatorSigns(plant, plant.CreateDefaultContext())
    names = model.actuator_names
    source = GaitVoltageSource(
        GaitParams(
            gait=gait, frequency=frequency, swing_amplitude=amplitude, lift_amplitude=amplitude
        ),
        [(name.split("_")[0], name.split("_")[1]) for name in names],
        [signs[name] for name in names],
    )
    return np.array([source.Voltages(float(t)) for t in times_ms])


def GaitWarmStart(
    model: HamrTrajoptModel,
    frequency: float,
    num_knots: int,
    *,
    cycles: int = 3,
    source: str = "variational",
    progress=None,
) -> WarmStart:
    """The last stride of a simulated open-loop trot (the authors' warm start).

    Args:
        frequency: stride frequency, Hz.
        num_knots: N.
        cycles: strides simulated from rest (the first ramps the amplitude up).
        source: "variational" integrates the transcription's own dynamics step by step at the
            knot time step (SimulateContactImplicit), so the guess is dynamically consistent
            except for periodicity; "drake" resamples Drake's SAP simulation
            (drakebots.hamr.simulation), which differs from the transcription in its
            contact and loop models.
        progress: optional callable(step, num_steps).

    The variational trot is simulated again with steps halved (up to WARM_START_HALVINGS
    times) while its last stride leaves the position bounds: a stride outside them is not one
    the plan may take (measured, 10 Hz teflon, 21 knots: seven steps of the last stride failed
    to converge at 5 ms and a four-bar joint swung 0.94 rad past its limit, and the solve from
    it ran 1000 repair iterations to a backward gait; at 2.5 ms no step failed and the stride
    stays inside). `WarmStart.bounds_excursion` reports how far the knots leave the bounds.
    """
    period = 1000.0 / frequency  # ms
    h = period / (num_knots - 1)
    x = model.index["base_x"]
    if source == "variational":
        from drakebots.optimization.contact_implicit import SimulateContactImplicit

        # Knot steps longer than MAX_WARM_START_STEP are simulated in substeps and sampled:
        # at 2 Hz with 21 knots (25 ms steps) one step per knot let the trot blow up (31 m in a
        # stride, measured), while the midpoint steps of <= 5.5 ms walk like Drake's simulator.
        first_substeps = max(1, int(np.ceil(h / MAX_WARM_START_STEP - 1e-9)))
        first = (cycles - 1) * (num_knots - 1)
        for halvings in range(WARM_START_HALVINGS + 1):
            substeps = first_substeps * 2**halvings
            dt = h / substeps
            steps = cycles * (num_knots - 1) * substeps
            u_fine = OpenLoopVoltages(model, "trot", frequency, (np.arange(steps) + 0.5) * dt)
            sim = SimulateContactImplicit(
                model.dynamics,
                model.home,
                np.zeros(len(model.home)),
                dt,
                u_fine,
                progress=progress,
            )
            q = sim.q[::substeps][first:]
            excursion = model.BoundsExcursion(q)
            if excursion <= 0.0:
                break
        u = u_fine.reshape(-1, substeps, u_fine.shape[1]).mean(axis=1)[first:]
        if substeps == 1:
            forces = {name: value[first:] for name, value in sim.forces.items()}
        else:
            forces = {}  # fitted at the knots by MakeHamrGaitProblem (FitContactForces)
        warm = WarmStart(
            q=q,
            u=u,
            h=h,
            source=f"last of {cycles} strides of an open-loop trot at {frequency:g} Hz, "
            f"integrated with the transcription's own variational contact dynamics"
            + (f" ({substeps} steps of {dt:.3g} ms per knot)" if substeps > 1 else ""),
            forces=forces,
            velocity_mm_per_cycle=float(q[-1, x] - q[0, x]),
            bounds_excursion=excursion,
        )
        warm.simulation = sim
        return warm
    from drakebots.hamr.gaits import GaitParams
    from drakebots.hamr.simulation import HamrSimulationConfig, SimulateHamr

    config = HamrSimulationConfig(
        duration=cycles * period,
        time_step=min(0.1, period / 200.0),
        log_period=period / 200.0,
        surface=model.surface,
        gait=GaitParams(gait="trot", frequency=frequency),
    )
    log = SimulateHamr(config, progress=False)
    times = log.times
    keep = times >= (cycles - 1) * period - 1e-9
    t = times[keep] - times[keep][0]
    q = ResampleKnots(t, log.positions[keep], num_knots)
    u_knots = ResampleKnots(t, log.extra["voltage"][keep], num_knots)
    u = 0.5 * (u_knots[:-1] + u_knots[1:])  # held over each interval
    return WarmStart(
        q=q,
        u=np.clip(u, *VOLTAGE_RANGE),
        h=h,
        source=f"last of {cycles} strides of an open-loop trot at {frequency:g} Hz "
        f"(Drake SAP simulation, {config.time_step:g} ms steps)",
        velocity_mm_per_cycle=float(q[-1, x] - q[0, x]),
        bounds_excursion=model.BoundsExcursion(q),
    )


def JumpWarmStart(
    model: HamrTrajoptModel, duration: float, num_knots: int, *, progress=None
) -> WarmStart:
    """An open-loop jump simulated with the transcription's dynamics: the legs retract over the
    first half of the motion (loading the flexures and actuator springs), then extend at once
    (drakebots.hamr.gaits "jump" drive), from rest at the home pose."""
    from drakebots.optimization.contact_implicit import SimulateContactImplicit

    h = duration / (num_knots - 1)
    steps = num_knots - 1
    frequency = 1000.0 / duration  # the crouch lasts half a "period" = duration / 2
    u = OpenLoopVoltages(model, "jump", frequency, (np.arange(steps) + 0.5) * h, amplitude=112.5)
    u = np.clip(u, *VOLTAGE_RANGE)
    sim = SimulateContactImplicit(
        model.dynamics, model.home, np.zeros(len(model.home)), h, u, progress=progress
    )
    z = model.index["base_z"]
    warm = WarmStart(
        q=sim.q,
        u=u,
        h=h,
        source="open-loop crouch-and-push jump integrated with the transcription's dynamics",
        forces=dict(sim.forces),
    )
    warm.apex_height_mm = float(sim.q[:, z].max() - model.home[z])
    warm.simulation = sim
    return warm


# ---------------------------------------------------------------------------- problems
@dataclasses.dataclass
class GaitSettings:
    """Eq. 16 and the authors' settings (mm, ms, V)."""

    # Knots N (the authors: 51).
    num_knots: int = 51
    # Free final time within [1 - free_time, 1 + free_time] T (the authors: 0.1).
    free_time: float = 0.1
    # Goal body x after one stride, mm (x_g's first entry: "slightly less than twice the maximum
    # swing displacement").
    goal_distance: float = 10.0
    # Q_11, the weight on the body x error (the paper: 10..50); other diagonal entries 1.
    goal_weight: float = 30.0
    # c1, the weight on velocity differences (the paper: 10..50).
    velocity_smoothness: float = 30.0
    # Weight and voltage scale of the input differences (1/2 |du / scale|^2).
    input_smoothness: float = 1.0
    input_scale: float = 10.0
    # alpha, the exact-penalty weight on the complementarity slack (the authors: 50).
    slack_weight: float = 50.0
    # Bounds of the slack s_k (the authors: [1e-6, 1]).
    slack_lower: float = 1e-6
    slack_upper: float = 1.0
    # Foot scuff cost (not in the paper; contact_implicit_costs.AddFootScuffCost): weight per mm^2
    # of a foot's tangential displacement per interval while near the ground, and the height, mm,
    # over which that weight falls by e. 0 leaves it out (the paper's problem). Without it the
    # plans skid loaded feet (31 mm per stride summed over the feet on the 10 Hz cardstock plan)
    # and skim the ground in swing, which Drake's simulator does not reproduce: the 2 Hz
    # cardstock plan tracks 1.5 mm/cycle of its 9.4 without it, 7.4-8.5 of 9.5 with weight 100
    # (README, "HAMR-VI: contact-implicit trajectory optimization").
    scuff_weight: float = 100.0
    scuff_height: float = 0.2


@dataclasses.dataclass
class JumpSettings:
    """Eq. 17 and the authors' settings (mm, ms, V)."""

    num_knots: int = 31
    # Duration of the planned motion, ms (push-off and rise to the apex).
    duration: float = 70.0
    free_time: float = 0.1
    # Goal apex height above the standing height, mm (x_g's base z = standing + height).
    height: float = 12.0
    goal_weight: float = 50.0
    # R on the swing voltages (about the mid voltage), per V^2; lift voltages get lift_weight.
    swing_weight: float = 1e-2
    lift_weight: float = 1e-5
    slack_weight: float = 200.0
    slack_lower: float = 1e-6
    slack_upper: float = 1.0


def MakeHamrGaitProblem(
    model: HamrTrajoptModel,
    frequency: float,
    warm: WarmStart,
    settings: GaitSettings | None = None,
) -> ContactImplicitProblem:
    """The periodic gait problem of Sec. III-A (Eqs. 15, 16) with the warm start set."""
    s = settings or GaitSettings()
    N = s.num_knots
    period = 1000.0 / frequency
    h = period / (N - 1)
    lower, upper = model.PositionBounds()
    x = model.index["base_x"]
    bounds = None if s.free_time <= 0 else ((1 - s.free_time) * h, (1 + s.free_time) * h)
    problem = MakeContactImplicitProblem(
        model.dynamics,
        num_knots=N,
        time_step=h,
        time_step_bounds=bounds,
        initial=("periodic",),
        periodic_free_indices=[x],
        slack_bounds=(s.slack_lower, s.slack_upper),
        position_lower=lower,
        position_upper=upper,
        input_lower=np.full(len(model.actuator_names), VOLTAGE_RANGE[0]),
        input_upper=np.full(len(model.actuator_names), VOLTAGE_RANGE[1]),
        sample_configuration=model.home,
    )
    prog, vars = problem.prog, problem.vars
    # The body starts at x = 0 (the goal is relative; fixing it removes a null direction).
    warm.q = warm.q.copy()
    warm.q[:, x] -= warm.q[0, x]
    problem.bindings["start"] = [constraints.AddFixedPositions(prog, vars, 0, warm.q[0], [x])]
    # x_g = [goal distance, periodic part of the warm start's final state] (Eq. 16).
    q_goal = warm.q[-1].copy()
    q_goal[x] = s.goal_distance
    qdot_goal = (warm.q[-1] - warm.q[-2]) / h
    q_weights = np.ones(model.plant.num_positions())
    q_weights[x] = s.goal_weight
    problem.bindings["costs"] = [
        AddFinalStateCost(
            prog,
            vars,
            q_goal=q_goal,
            qdot_goal=qdot_goal,
            q_weights=q_weights,
            qdot_weights=np.ones_like(q_weights),
        )
    ]
    problem.bindings["costs"] += AddVelocitySmoothnessCost(prog, vars, weight=s.velocity_smoothness)
    problem.bindings["costs"] += AddInputSmoothnessCost(
        prog, vars, weight=s.input_smoothness, scale=s.input_scale
    )
    problem.bindings["costs"].append(AddComplementarityPenalty(prog, vars, weight=s.slack_weight))
    problem.bindings["costs"] += AddFootScuffCost(
        prog, vars, model.dynamics, weight=s.scuff_weight, height_scale=s.scuff_height
    )
    if not warm.forces:
        warm.forces = FitContactForces(model, warm.q, warm.u, h, initial=("periodic",))
    SetInitialGuess(problem, warm.Guess())
    return problem


def MakeHamrJumpProblem(
    model: HamrTrajoptModel,
    warm: WarmStart,
    settings: JumpSettings | None = None,
) -> ContactImplicitProblem:
    """The vertical jump of Sec. III-B (Eqs. 15, 17): from rest at the home pose to a goal
    apex state with no rotation or horizontal motion."""
    s = settings or JumpSettings()
    N = s.num_knots
    h = s.duration / (N - 1)
    lower, upper = model.PositionBounds()
    n = model.plant.num_positions()
    bounds = None if s.free_time <= 0 else ((1 - s.free_time) * h, (1 + s.free_time) * h)
    problem = MakeContactImplicitProblem(
        model.dynamics,
        num_knots=N,
        time_step=h,
        time_step_bounds=bounds,
        initial=("velocity", np.zeros(n)),
        slack_bounds=(s.slack_lower, s.slack_upper),
        position_lower=lower,
        position_upper=upper,
        input_lower=np.full(len(model.actuator_names), VOLTAGE_RANGE[0]),
        input_upper=np.full(len(model.actuator_names), VOLTAGE_RANGE[1]),
        sample_configuration=model.home,
    )
    prog, vars = problem.prog, problem.vars
    # Start standing at the home pose (x, y, yaw fixed; the rest is the standing equilibrium the
    # optimizer settles with the initial voltages).
    problem.bindings["start"] = [constraints.AddFixedPositions(prog, vars, 0, model.home)]
    # x_g: base at (0, 0, standing + height), level, zero velocity (Eq. 17's goal).
    q_goal = model.home.copy()
    q_goal[model.index["base_z"]] = HOME_BASE_HEIGHT + s.height
    weights = np.zeros(n)
    for name in BASE_JOINTS:
        weights[model.index[name]] = 1.0
    weights[model.index["base_z"]] = s.goal_weight
    qdot_weights = np.zeros(n)
    for name in BASE_JOINTS:
        qdot_weights[model.index[name]] = 1.0
    # The apex: zero vertical velocity at the goal height, weighted like the height itself
    # (mm/ms against mm: 1 mm/ms at the end would carry the body 51 mm higher).
    qdot_weights[model.index["base_z"]] = s.goal_weight
    problem.bindings["costs"] = [
        AddFinalStateCost(
            prog,
            vars,
            q_goal=q_goal,
            qdot_goal=np.zeros(n),
            q_weights=weights,
            qdot_weights=qdot_weights,
        )
    ]
    R = np.array(
        [s.swing_weight if "swing" in name else s.lift_weight for name in model.actuator_names]
    )
    mid = np.full(len(R), 0.5 * sum(VOLTAGE_RANGE))
    problem.bindings["costs"] += AddInputCost(prog, vars, R=R, u_reference=mid)
    problem.bindings["costs"].append(AddComplementarityPenalty(prog, vars, weight=s.slack_weight))
    if not warm.forces:
        warm.forces = FitContactForces(model, warm.q, warm.u, h, initial=("velocity", np.zeros(n)))
    SetInitialGuess(problem, warm.Guess())
    return problem


def HamrRobotPositions(model: HamrTrajoptModel) -> dict:
    """Indices of the base coordinates (x, y, z, yaw, pitch, roll)."""
    return {name: HamrPositionIndex(model.plant, name) for name in BASE_JOINTS}


# ---------------------------------------------------------------------------- solve and read
COMPLEMENTARITY_TARGET = 1e-4  # the true complementarity a plan must reach (N*mm, N*mm/ms)
FEASIBILITY_TARGET = 1e-4  # the largest violation of any binding a plan may have


SECOND_STAGES = ("proximal", "fixed-modes")
# The repair stage's iteration limit. Every successful repair measured took 190-650 iterations
# (the nine 21-knot gaits, several releases); one that ran on took 3000 (the 10 Hz teflon gait
# from one rounding of its warm start: feasible within 5e-9 by then, but walking backwards and
# never meeting IPOPT's acceptance test, 925 s of CPU), so a longer repair is a failure to report.
REPAIR_ITERATIONS = 1000

# IPOPT options the fast path adds for HAMR's programs (a user's SolverConfig.ipopt_options
# override them): MUMPS orders the KKT matrix by METIS nested dissection (mumps_pivot_order 5;
# IPOPT's default 7 lets MUMPS choose). Same iterates, fewer CPU seconds per solve, measured in
# alternated runs on this 2-core machine: the 31-knot jump 3.6 -> 3.1, the 51-knot gaits at
# 10 Hz cardstock 6.0 -> 5.55, 2 Hz teflon 6.9 -> 5.7 and 30 Hz cardstock 48 -> 32. MUMPS's
# other orderings (AMF, PORD, QAMD) fell between, and SPRAL (also in CasADi's IPOPT) took 12.3 s
# on the jump. Not the fast path's default for every robot: on the general workflow's hopper
# (drakebots.optimization.legged) METIS leads IPOPT to other local plans, slower (4.1 -> 4.6 s
# at 0.5 s / 0.2 m) and farther from Drake's re-simulation.
HAMR_FAST_IPOPT_OPTIONS = {"mumps_pivot_order": 5}
# Warm starts `SolveHamrGait` tries in turn with warm_start="auto".
AUTO_WARM_STARTS = ("variational", "drake")


@contextlib.contextmanager
def _BudgetReachedQuiet(active: bool):
    """Drops Drake's warning that IPOPT reached its iteration limit (with a hint about unbounded
    variables) while a stage runs to a budget on purpose; its status is in `outcome.stages`."""

    def Keep(record: logging.LogRecord) -> bool:
        return "maximum iteration limit" not in record.getMessage()

    logger = logging.getLogger("drake")
    if active:
        logger.addFilter(Keep)
    try:
        yield
    finally:
        logger.removeFilter(Keep)


def PlanAcceptable(problem: ContactImplicitProblem, outcome) -> bool:
    """The solver converged and its point satisfies every binding to FEASIBILITY_TARGET with the
    true complementarity within COMPLEMENTARITY_TARGET."""
    check = CheckContactImplicitSolution(problem, outcome.result.get_x_val())
    return (
        outcome.success
        and check.max_violation <= FEASIBILITY_TARGET
        and check.max_complementarity_violation <= COMPLEMENTARITY_TARGET
    )


def SolveHamrProblem(
    problem: ContactImplicitProblem,
    config=None,
    *,
    first_stage_iterations: int | None = None,
    second_stage: str = "proximal",
    repair_iterations: int = REPAIR_ITERATIONS,
):
    """Solves a HAMR problem in two stages and returns the SolveOutcome of the last one, with
    the total time and iterations; `outcome.stages` lists (status, seconds) of each stage,
    `outcome.stage_logs` the solver's log of each and `outcome.first_stage` holds the first
    stage's outcome.

    1. The paper's problem: Eq. 15 with the costs of Eq. 16 or 17 and the complementarity
       relaxed to a slack in [1e-6, 1] under the exact penalty (the authors' settings), from
       the warm start, for at most `first_stage_iterations` iterations (None: the config's
       limit). With IPOPT's limited-memory Hessian this stage lowers the cost and most of the
       infeasibility within ~100-200 iterations and then oscillates (measured on the 10 Hz
       gait: 300-600 iterations without meeting its tolerances), so a budget is the useful
       stopping rule.
    2. If the first stage's point is not feasible to FEASIBILITY_TARGET with a true
       complementarity within COMPLEMENTARITY_TARGET, `second_stage` decides:
       "proximal" (default): the nearest point with every complementarity slack fixed at 1e-6
       (SolveProximalFeasibility), the program's costs kept beside the proximal term. Without
       the costs that repair is free to skid loaded feet (measured, 21 knots: the 2 Hz teflon
       gait's objective rose from 1.0e3 to 1.2e5 with 231 mm of loaded slide per stride; with
       them 309 and 0.8 mm).
       "fixed-modes": the contact modes are read off that point (IdentifyContactModes) and
       fixed, and the nearest point with them is solved for, costs kept
       (SolveWithFixedContactModes): every product exactly zero and an ordinary NLP, faster
       (10 Hz cardstock, 21 knots: 106 iterations, 53 s against 199, 86 s) but, with no
       contact allowed to change mode, a plan that walks less at 2 Hz (cardstock 8.44 against
       9.57 mm/cycle, sandpaper 7.72 against 9.39; teflon reached its 300-iteration cap);
       if its answer fails the same check the proximal stage runs after it.
       The proximal stage stops after `repair_iterations` (REPAIR_ITERATIONS).
    """
    from drakebots.optimization.contact_implicit import (
        SolveContactImplicit,
        SolveProximalFeasibility,
        SolverConfig,
        SolveWithFixedContactModes,
    )

    def Accumulate(outcome, earlier) -> None:
        outcome.solve_time_s += earlier.solve_time_s
        outcome.cpu_time_s += earlier.cpu_time_s
        if outcome.iterations is not None and earlier.iterations is not None:
            outcome.iterations += earlier.iterations

    if second_stage not in SECOND_STAGES:
        raise ValueError(f"second_stage {second_stage!r}: one of {', '.join(SECOND_STAGES)}")
    config = config or SolverConfig()
    if config.solver in ("fast", "auto"):
        config = dataclasses.replace(
            config, ipopt_options={**HAMR_FAST_IPOPT_OPTIONS, **config.ipopt_options}
        )
    first_config = dataclasses.replace(config)
    if first_stage_iterations:
        first_config.major_iterations = min(config.major_iterations, int(first_stage_iterations))
    with _BudgetReachedQuiet(bool(first_stage_iterations)):
        outcome = SolveContactImplicit(problem, first_config)
    first = outcome
    stages = [("paper problem: " + outcome.status, outcome.solve_time_s)]
    logs = [outcome.log]
    x = outcome.result.get_x_val()
    if not PlanAcceptable(problem, outcome) and second_stage == "fixed-modes":
        fixed = SolveWithFixedContactModes(problem, x, config, keep_costs=True)
        stages.append(("fixed contact modes: " + fixed.status, fixed.solve_time_s))
        logs.append(fixed.log)
        Accumulate(fixed, first)
        outcome = fixed
    if not PlanAcceptable(problem, outcome):
        earlier = outcome
        repair_config = dataclasses.replace(
            config, major_iterations=min(config.major_iterations, int(repair_iterations))
        )
        outcome = SolveProximalFeasibility(problem, x, repair_config, keep_costs=True)
        stages.append(("true complementarity: " + outcome.status, outcome.solve_time_s))
        logs.append(outcome.log)
        Accumulate(outcome, earlier)
    outcome.stages = stages
    outcome.stage_logs = logs
    outcome.first_stage = first
    return outcome


@dataclasses.dataclass
class GaitSolve:
    """What `SolveHamrGait` returns: the attempt kept and a record of every attempt."""

    warm: WarmStart
    problem: ContactImplicitProblem
    outcome: object  # SolveOutcome of SolveHamrProblem
    warm_time_s: float
    attempts: list  # [{"warm_start", "status", "acceptable", "cpu_time_s", "iterations", ...}]

    @property
    def solve_time_s(self) -> float:
        """Wall seconds of every attempt's solve (what a user waits for)."""
        return sum(a["solve_time_s"] for a in self.attempts)

    @property
    def cpu_time_s(self) -> float:
        """CPU seconds of every attempt's solve."""
        return sum(a["cpu_time_s"] for a in self.attempts)


def SolveHamrGait(
    model: HamrTrajoptModel,
    frequency: float,
    settings: GaitSettings,
    config=None,
    *,
    warm_start: str = "auto",
    first_stage_iterations: int | None = None,
    second_stage: str = "proximal",
    say=lambda *a: None,
    prepare=lambda problem: None,
    warm_starts: dict | None = None,
) -> GaitSolve:
    """Warm start, problem and two-stage solve of a periodic gait (Eq. 16), with a fallback.

    warm_start "variational" or "drake" picks one (`GaitWarmStart`); "auto" (ours) tries
    AUTO_WARM_STARTS in turn and keeps the first attempt whose plan is acceptable
    (`PlanAcceptable`), or the last. Why: the solves are chaotic in the warm start, and the
    warm start in rounding (the open-loop trot is a variational simulation with one NLP per
    step: its last stride walks 7.45, 8.23 or 8.83 mm when the start pose moves by 0, 1e-12
    or 1e-10 mm, measured on 10 Hz teflon, 21 knots). From one of them that gait's solve ran
    out of iterations walking backwards; from Drake's SAP trot it took 423 iterations, 92 s.
    A warm start whose knots leave the position bounds (`WarmStart.bounds_excursion` > 0) is
    recorded and not solved from when another warm start follows.
    `prepare(problem)` runs before each solve (the caller picks its solver there).
    `warm_starts`: a dict source -> WarmStart of this model, frequency and knot count, filled as
    they are simulated and reused when present (to solve the same gait twice from the same
    start, e.g. with two solvers: scripts/bench_contact_implicit.py).
    """
    attempts = []
    sources = AUTO_WARM_STARTS if warm_start == "auto" else (warm_start,)
    solve = None
    for source in sources:
        start = time.perf_counter()
        say(f"warm start: simulating an open-loop trot at {frequency:g} Hz ({source})")
        if warm_starts is not None and source in warm_starts:
            warm = dataclasses.replace(warm_starts[source])
        else:
            warm = GaitWarmStart(model, frequency, settings.num_knots, source=source)
            if warm_starts is not None:
                warm_starts[source] = dataclasses.replace(warm)
        say(f"  {warm.velocity_mm_per_cycle:.2f} mm in its last stride")
        record = {
            "warm_start": source,
            "warm_start_velocity_mm_per_cycle": warm.velocity_mm_per_cycle,
            "bounds_excursion": warm.bounds_excursion,
        }
        attempts.append(record)
        if warm.bounds_excursion > 0.0 and source != sources[-1]:
            # Not a stride the plan may take, even with halved steps: the next warm start.
            say(f"  it leaves the position bounds by {warm.bounds_excursion:.3g}; next warm start")
            record.update(
                warm_start_time_s=time.perf_counter() - start,
                status="not solved: the warm start leaves the position bounds",
                acceptable=False,
                solve_time_s=0.0,
                cpu_time_s=0.0,
                iterations=0,
            )
            continue
        problem = MakeHamrGaitProblem(model, frequency, warm, settings)
        warm_time = time.perf_counter() - start
        prepare(problem)
        outcome = SolveHamrProblem(
            problem,
            config,
            first_stage_iterations=first_stage_iterations,
            second_stage=second_stage,
        )
        acceptable = PlanAcceptable(problem, outcome)
        record.update(
            warm_start_time_s=warm_time,
            status=outcome.status,
            acceptable=bool(acceptable),
            solve_time_s=outcome.solve_time_s,
            cpu_time_s=outcome.cpu_time_s,
            iterations=outcome.iterations,
        )
        solve = GaitSolve(warm, problem, outcome, warm_time, attempts)
        if acceptable:
            break
        if source != sources[-1]:
            say(f"  {outcome.status}: not acceptable; trying the next warm start")
    return solve


@dataclasses.dataclass
class HamrTrajectory:
    """A HAMR trajectory at knots: base pose, feet (world and body frame), forces, inputs."""

    times: np.ndarray  # (N,) ms
    q: np.ndarray  # (N, 38)
    u: np.ndarray  # (N-1, 8) V
    base_position: np.ndarray  # (N, 3) mm
    rpy: np.ndarray  # (N, 3) rad (roll, pitch, yaw)
    R_WB: np.ndarray  # (N, 3, 3)
    feet_world: np.ndarray  # (N, 4, 3) mm
    feet_body: np.ndarray  # (N, 4, 3) mm
    contact_forces: np.ndarray  # (N-1, 4, 3) N, acting at knots 1..N-1
    h: float


def HamrKnotTrajectory(
    model: HamrTrajoptModel,
    q: np.ndarray,
    u: np.ndarray,
    h: float,
    contact_forces: np.ndarray | None = None,
) -> HamrTrajectory:
    """Base pose and feet of a knot trajectory (body frame = the chassis frame)."""
    from pydrake.math import RollPitchYaw

    dyn = model.dynamics
    idx = model.index
    N = len(q)
    base = q[:, [idx["base_x"], idx["base_y"], idx["base_z"]]]
    rpy = q[:, [idx["base_roll"], idx["base_pitch"], idx["base_yaw"]]]
    R = np.array([RollPitchYaw(r).ToRotationMatrix().matrix() for r in rpy])
    chassis = int(model.plant.GetBodyByName("chassis").index())
    feet_world = np.zeros((N, dyn.num_contacts, 3))
    feet_body = np.zeros_like(feet_world)
    for k in range(N):
        kin = dyn.Kinematics(q[k])
        feet_world[k] = dyn.ContactPoints(kin)
        R_WC, p_WC = kin.R_WB[chassis], kin.p_WB[chassis]
        feet_body[k] = (feet_world[k] - p_WC) @ R_WC
    if contact_forces is None:
        contact_forces = np.zeros((N - 1, dyn.num_contacts, 3))
    return HamrTrajectory(
        times=h * np.arange(N),
        q=q,
        u=u,
        base_position=base,
        rpy=rpy,
        R_WB=R,
        feet_world=feet_world,
        feet_body=feet_body,
        contact_forces=contact_forces,
        h=h,
    )
