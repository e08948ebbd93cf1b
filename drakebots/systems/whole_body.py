"""A whole-body tracking controller for any robot file: `WholeBodyController`, and `RunTracking`,
which runs a plan under it in Drake's simulator (closed loop).

The controller is a Drake LeafSystem that reads the plant's state (q, v) and, every control tick
(zero-order hold), solves one small quadratic program in z = (vdot, u, f): the generalized
accelerations, the actuator inputs and the 3-D world forces at the robot file's point contacts::

    minimize   w_b |J_b vdot + Jdot_b v - a_b*|^2               (base: task-space PD, 6-D)
             + w_j |vdot_j - a_j*|^2                              (joints: PD to the plan)
             + w_c sum_{c in stance} |J_c vdot + Jdot_c v|^2      (stance feet do not accelerate)
             + w_f sum_c |(f_c - f_c,ref) / m|^2                  (the plan's contact forces)
             + eps (|vdot|^2 + |u / u_s|^2)
    subject to M(q) vdot + h(q, v) = B u + sum_c J_c(q)^T f_c    (inverse dynamics, exact)
               |f_c,x| <= mu f_c,z, |f_c,y| <= mu f_c,z, f_c,z >= 0 (c in stance: friction pyramid)
               f_c = 0                                           (c in swing)
               |u_i| <= u_lim,i                                  (effort limits)

h(q, v) = C(q, v) v - tau_g(q) - (the plant's other force elements) is Drake's inverse dynamics
at vdot = 0 with the force elements applied (plant.CalcInverseDynamics). The references::

    a_b*  = A_b,ref + Kp_b [log(R_ref R^T); p_ref - p] + Kd_b (V_b,ref - V_b)   (world frame)
    a_j*  = vdot_j,ref + Kp_j (q_j,ref - q_j) + Kd_j (v_j,ref - v_j)

with A_b,ref = J_b(q_ref) vdot_ref + Jdot_b(q_ref, v_ref) v_ref and V_b,ref = J_b(q_ref) v_ref the
base's spatial acceleration and velocity along the plan, so the whole base pose (position and
orientation) is tracked, not the joints alone. Gains are critically damped (Kd = 2 omega,
Kp = omega^2). The stance set and f_ref come from the plan (PlanReference): a contact is in stance
over an interval where the plan loads it or holds it on the ground. The QP is Drake's
MathematicalProgram, built once and updated in place each tick (UpdateCoefficients, set_bounds),
solved by OSQP (measured: tests/systems/test_whole_body.py prints ms per tick).

The simulation (RunTracking): the robot file's robot on flat ground in a discrete MultibodyPlant
(SAP, point contact, systems.simulate_user.MakeUserDiagram), the plant's joint PD disarmed (its
desired-state port is left unconnected) so the controller's inputs are the only actuation.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

# Stance: a contact is loaded over an interval when the plan's normal force there exceeds this
# fraction of the robot's weight, or its height is below this fraction of the home height.
STANCE_FORCE_FRACTION = 1e-3
STANCE_HEIGHT_FRACTION = 1e-3


@dataclasses.dataclass
class TrackingConfig:
    """The controller's rates, gains and weights (seconds; converted to the robot's time unit)."""

    # Control period (zero-order hold), s: 500 Hz.
    control_period_s: float = 2e-3
    # Drake's plant step (SAP), s.
    time_step_s: float = 1e-3
    # Natural frequency of the base's task-space PD, rad/s (critically damped).
    base_frequency: float = 50.0
    # Natural frequency of the joints' PD, rad/s (critically damped).
    joint_frequency: float = 60.0
    # Weights of the QP's terms (the module docstring): base, joints, stance feet, forces.
    base_weight: float = 100.0
    # Joint acceleration tracking weight.
    joint_weight: float = 1.0
    # Stance feet held still (soft constraint; large against the tracking terms).
    contact_weight: float = 1e3
    # The plan's contact forces as reference, per (force / mass)^2.
    force_weight: float = 1e-2
    # The QP's solver: "osqp" (Drake's OSQP, first-order, warm-started) or "clarabel" (Drake's
    # Clarabel, interior point).
    solver: str = "osqp"
    # Regularization of vdot and u (keeps the QP strictly convex).
    regularization: float = 1e-6


class PlanReference:
    """A plan as the controller's reference: knots (times, q), the generalized velocities at the
    knots (the mean of the adjacent intervals' (q_k+1 - q_k) / h, mapped to v), the accelerations
    per interval (the velocities' differences over h), and per interval the contact forces
    (world, 3-D) and the stance set. After the last knot it holds the last state at rest."""

    def __init__(self, plant, times, q, forces, stance):
        self.times = np.asarray(times, float)
        self.q = np.asarray(q, float)
        self.forces = np.asarray(forces, float)
        self.stance = np.asarray(stance, bool)
        context = plant.CreateDefaultContext()
        h = np.diff(self.times)
        qdot = np.diff(self.q, axis=0) / h[:, None]
        qdot_knots = np.vstack([qdot[:1], 0.5 * (qdot[:-1] + qdot[1:]), qdot[-1:]])
        v = []
        for qk, qdk in zip(self.q, qdot_knots):
            plant.SetPositions(context, qk)
            v.append(plant.MapQDotToVelocity(context, qdk))
        self.v = np.array(v)
        self.vdot = np.diff(self.v, axis=0) / h[:, None]

    @classmethod
    def FromPlan(cls, plant, times, q, forces, phi, *, weight, home_height, cycles=1, x_index=0):
        """From a plan's arrays (times (N,), q (N, n), forces (N-1, nc, 3) acting at the end of
        each interval, phi (N, nc)); a gait (cycles > 1) is repeated, shifted each cycle by its
        distance in x, as contact_implicit.RepeatCycles does."""
        loaded = forces[:, :, 2] > STANCE_FORCE_FRACTION * weight
        grounded = phi[1:] <= STANCE_HEIGHT_FRACTION * abs(home_height)
        stance = loaded | grounded
        if cycles > 1:
            from drakebots.optimization.contact_implicit import RepeatCycles

            q, times = RepeatCycles(np.asarray(q), np.asarray(times), x_index, cycles)
            forces = np.tile(forces, (cycles, 1, 1))
            stance = np.tile(stance, (cycles, 1))
        return cls(plant, times, q, forces, stance)

    @classmethod
    def Standing(cls, plant, q, forces, duration):
        """Holding the pose q with contact forces (nc, 3) over [0, duration]."""
        forces = np.asarray(forces, float)[None]
        return cls(plant, [0.0, duration], [q, q], forces, np.ones(forces.shape[:2], bool))

    def Eval(self, t: float):
        """(q, v, vdot, forces, stance) at time t: q and v linear between knots, vdot, forces
        and stance held over each interval."""
        times = self.times
        if t >= times[-1]:
            return self.q[-1], 0.0 * self.v[-1], 0.0 * self.v[-1], self.forces[-1], self.stance[-1]
        k = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2))
        s = (t - times[k]) / (times[k + 1] - times[k])
        q = (1 - s) * self.q[k] + s * self.q[k + 1]
        v = (1 - s) * self.v[k] + s * self.v[k + 1]
        return q, v, self.vdot[k], self.forces[k], self.stance[k]


def _BaseBody(plant, robot):
    """The body the base joints move (None on a fixed base)."""
    base = getattr(robot, "base", None)
    if base == "floating_rpy":
        return plant.GetJointByName("base").child_body()
    if base == "planar_xz":
        return plant.GetJointByName("base_pitch").child_body()
    return None


def _BaseDofs(plant, robot) -> list:
    """Velocity indices of the base joints (not tracked as joints)."""
    base = getattr(robot, "base", None)
    names = {"floating_rpy": ["base"], "planar_xz": ["base_x", "base_z", "base_pitch"]}
    dofs = []
    for name in names.get(base, []):
        joint = plant.GetJointByName(name)
        dofs += list(range(joint.velocity_start(), joint.velocity_start() + joint.num_velocities()))
    return dofs


def _TimeScale(robot) -> float:
    return {"s": 1.0, "ms": 1e3}[robot.units.get("time", "s")]


def MakeControllerPlant(robot):
    """A continuous MultibodyPlant of the robot alone (the controller's model)."""
    from pydrake.multibody.plant import MultibodyPlant

    plant = MultibodyPlant(0.0)
    robot.AddTo(plant)
    plant.Finalize()
    return plant


def _Leaf():
    from pydrake.systems.framework import LeafSystem

    return LeafSystem


class QpStats:
    """Ticks, QP failures (the last solution held), OSQP failures solved by Clarabel instead
    (fallbacks) and time spent (s) in the controller's update."""

    def __init__(self):
        self.ticks = 0
        self.failures = 0
        self.fallbacks = 0
        self.seconds = 0.0

    @property
    def ms_per_tick(self) -> float:
        return 1e3 * self.seconds / max(self.ticks, 1)


def WholeBodyController(robot, reference: PlanReference, *, friction: float, config=None):
    """The LeafSystem of the module docstring for `robot` (a robot file's UserRobot).

    Ports: input "plant_state" (q, v of the robot's plant, in its order), output "actuation"
    (one input per actuator, held between ticks). Its `stats` (QpStats) count ticks and time,
    and `Solve(t, q, v)` is the tick itself (returns vdot, u, f), for tests."""
    return _MakeController(robot, reference, friction, config or TrackingConfig())


def _MakeController(robot, reference, friction, config):
    from pydrake.math import RotationMatrix
    from pydrake.multibody.tree import JacobianWrtVariable, MultibodyForces
    from pydrake.solvers import ClarabelSolver, MathematicalProgram, OsqpSolver, SolverOptions

    plant = MakeControllerPlant(robot)
    nq, nv = plant.num_positions(), plant.num_velocities()
    B = plant.MakeActuationMatrix()
    nu = B.shape[1]
    contacts = [
        (plant.GetBodyByName(body).body_frame(), np.asarray(p, float)) for body, p in robot.contacts
    ]
    nc = len(contacts)
    nz = nv + nu + 3 * nc
    base_body = _BaseBody(plant, robot)
    joint_dofs = [i for i in range(nv) if i not in set(_BaseDofs(plant, robot))]
    planar = getattr(robot, "base", None) == "planar_xz"
    scale = _TimeScale(robot)
    context = plant.CreateDefaultContext()
    ref_context = plant.CreateDefaultContext()
    mass = float(plant.CalcTotalMass(context))
    limits = np.array(
        [plant.get_joint_actuator(i).effort_limit() for i in plant.GetJointActuatorIndices()]
    )
    u_scale = np.where(np.isfinite(limits), limits, mass * robot.gravity * 1.0)
    wb, wj = config.base_frequency / scale, config.joint_frequency / scale
    kV, world = JacobianWrtVariable.kV, plant.world_frame()

    prog = MathematicalProgram()
    z = prog.NewContinuousVariables(nz, "z")
    cost = prog.AddQuadraticCost(np.eye(nz), np.zeros(nz), z)
    dynamics = prog.AddLinearEqualityConstraint(np.zeros((nv, nz)), np.zeros(nv), z)
    # Friction pyramid rows: +-f_x - mu f_z <= 0, +-f_y - mu f_z <= 0 for every contact.
    pyramid = np.zeros((4 * nc, nz))
    for c in range(nc):
        col = nv + nu + 3 * c
        for r, (axis, sign) in enumerate(((0, 1), (0, -1), (1, 1), (1, -1))):
            pyramid[4 * c + r, col + axis] = sign
            pyramid[4 * c + r, col + 2] = -friction
    if nc:
        prog.AddLinearConstraint(pyramid, np.full(4 * nc, -np.inf), np.zeros(4 * nc), z)
    bounds = prog.AddBoundingBoxConstraint(np.full(nz, -np.inf), np.full(nz, np.inf), z)
    lower, upper = np.full(nz, -np.inf), np.full(nz, np.inf)
    finite = np.isfinite(limits)
    lower[nv : nv + nu][finite], upper[nv : nv + nu][finite] = -limits[finite], limits[finite]
    options = SolverOptions()
    if config.solver == "clarabel":
        solver = ClarabelSolver()
    elif config.solver == "osqp":
        solver = OsqpSolver()
        for name, value in (("eps_abs", 1e-6), ("eps_rel", 1e-6), ("max_iter", 4000)):
            options.SetOption(solver.solver_id(), name, value)
    else:
        raise ValueError(f"solver: 'osqp' or 'clarabel', got {config.solver!r}")
    stats = QpStats()
    fallback = ClarabelSolver()
    forces = MultibodyForces(plant)
    last = {"z": np.zeros(nz)}

    def BasePose(ctx):
        X = plant.EvalBodyPoseInWorld(ctx, base_body)
        J = plant.CalcJacobianSpatialVelocity(
            ctx, kV, base_body.body_frame(), [0, 0, 0], world, world
        )
        bias = plant.CalcBiasSpatialAcceleration(
            ctx, kV, base_body.body_frame(), [0, 0, 0], world, world
        ).get_coeffs()
        return X, J, bias

    def Solve(t, q, v):
        q_ref, v_ref, vdot_ref, f_ref, stance = reference.Eval(t)
        plant.SetPositions(context, q)
        plant.SetVelocities(context, v)
        M = plant.CalcMassMatrix(context)
        plant.CalcForceElementsContribution(context, forces)
        h = plant.CalcInverseDynamics(context, np.zeros(nv), forces)
        Jc = [
            plant.CalcJacobianTranslationalVelocity(context, kV, frame, p, world, world)
            for frame, p in contacts
        ]
        rows, targets, weights = [], [], []

        def Term(A, b, w):
            rows.append(A)
            targets.append(b)
            weights.append(np.full(len(b), w))

        if base_body is not None:
            plant.SetPositions(ref_context, q_ref)
            plant.SetVelocities(ref_context, v_ref)
            X_ref, J_ref, bias_ref = BasePose(ref_context)
            X, J, bias = BasePose(context)
            rotation = RotationMatrix(X_ref.rotation().matrix() @ X.rotation().matrix().T)
            angle_axis = rotation.ToAngleAxis()
            error = np.concatenate(
                [angle_axis.angle() * angle_axis.axis(), X_ref.translation() - X.translation()]
            )
            a_des = (J_ref @ vdot_ref + bias_ref) + wb**2 * error + 2 * wb * (J_ref @ v_ref - J @ v)
            A = np.zeros((6, nz))
            A[:, :nv] = J
            Term(A, a_des - bias, config.base_weight)
        if joint_dofs:
            A = np.zeros((len(joint_dofs), nz))
            A[np.arange(len(joint_dofs)), joint_dofs] = 1.0
            a_des = (
                vdot_ref[joint_dofs]
                + wj**2
                * (
                    _JointPositions(plant, q_ref, joint_dofs)
                    - _JointPositions(plant, q, joint_dofs)
                )
                + 2 * wj * (v_ref[joint_dofs] - v[joint_dofs])
            )
            Term(A, a_des, config.joint_weight)
        for c in range(nc):
            col = nv + nu + 3 * c
            if stance[c]:
                bias_c = plant.CalcBiasTranslationalAcceleration(
                    context, kV, contacts[c][0], contacts[c][1], world, world
                )[:, 0]
                A = np.zeros((3, nz))
                A[:, :nv] = Jc[c]
                Term(A, -bias_c, config.contact_weight)
            A = np.zeros((3, nz))
            A[:, col : col + 3] = np.eye(3) / mass
            Term(A, f_ref[c] / mass, config.force_weight)
        A_all = np.vstack(rows)
        b_all = np.concatenate(targets)
        w_all = np.concatenate(weights)
        Q = 2.0 * (A_all.T * w_all) @ A_all
        b = -2.0 * (A_all.T * w_all) @ b_all
        reg = np.zeros(nz)
        reg[:nv] = config.regularization
        reg[nv : nv + nu] = config.regularization / u_scale**2
        reg[nv + nu :] = config.regularization / mass**2
        Q[np.diag_indices(nz)] += 2.0 * reg
        cost.evaluator().UpdateCoefficients(Q, b)
        Aeq = np.zeros((nv, nz))
        Aeq[:, :nv] = M
        Aeq[:, nv : nv + nu] = -B
        for c in range(nc):
            Aeq[:, nv + nu + 3 * c : nv + nu + 3 * c + 3] = -Jc[c].T
        dynamics.evaluator().UpdateCoefficients(Aeq, -h)
        lo, hi = lower.copy(), upper.copy()
        for c in range(nc):
            col = nv + nu + 3 * c
            if stance[c]:
                lo[col + 2] = 0.0
                if planar:
                    lo[col + 1] = hi[col + 1] = 0.0
            else:
                lo[col : col + 3] = hi[col : col + 3] = 0.0
        bounds.evaluator().set_bounds(lo, hi)
        prog.SetInitialGuess(z, last["z"])
        result = solver.Solve(prog, last["z"], options)
        if not result.is_success() and config.solver == "osqp":
            # OSQP out of iterations on a badly scaled tick: the interior point once more.
            stats.fallbacks += 1
            result = fallback.Solve(prog, last["z"], None)
        if result.is_success():
            zs = result.GetSolution(z)
            last["z"] = zs
        else:
            stats.failures += 1
            zs = last["z"]
        return zs[:nv], zs[nv : nv + nu], zs[nv + nu :].reshape(nc, 3)

    LeafSystem = _Leaf()

    class _Controller(LeafSystem):
        def __init__(self):
            super().__init__()
            self.state_input = self.DeclareVectorInputPort("plant_state", nq + nv)
            state = self.DeclareDiscreteState(nu)
            self.DeclarePeriodicDiscreteUpdateEvent(
                config.control_period_s * scale, 0.0, self.Update
            )
            self.DeclareStateOutputPort("actuation", state)

        def Update(self, ctx, discrete):
            x = self.state_input.Eval(ctx)
            start = time.perf_counter()
            _, u, _ = Solve(ctx.get_time(), x[:nq], x[nq:])
            stats.seconds += time.perf_counter() - start
            stats.ticks += 1
            discrete.get_mutable_vector().SetFromVector(u)

    controller = _Controller()
    controller.set_name("whole_body_controller")
    controller.stats = stats
    controller.Solve = Solve
    controller.plant = plant
    return controller


def _JointPositions(plant, q, dofs):
    """Positions of the 1-dof joints whose velocity indices are `dofs` (q index = their
    position_start)."""
    index = _VelocityToPosition(plant)
    return np.asarray(q)[[index[d] for d in dofs]]


def _VelocityToPosition(plant) -> dict:
    cache = getattr(plant, "_drakebots_v_to_q", None)
    if cache is None:
        cache = {}
        for j in plant.GetJointIndices():
            joint = plant.get_joint(j)
            if joint.num_velocities() == 1 and joint.num_positions() == 1:
                cache[joint.velocity_start()] = joint.position_start()
    return cache


@dataclasses.dataclass
class TrackingRun:
    """A closed-loop run: times (T,), q (T, nq), v (T, nv), actuation (T, nu) and contact (T, 3:
    deepest penetration, contacts, total normal force) as logged; the controller's
    ms_per_tick, ticks, qp_failures and qp_fallbacks; start_shift: what was added to the base
    height so the run starts on the ground (robot length unit)."""

    times: np.ndarray
    q: np.ndarray
    v: np.ndarray
    actuation: np.ndarray
    contact: np.ndarray
    ms_per_tick: float
    ticks: int
    qp_failures: int
    wall_time_s: float
    qp_fallbacks: int = 0
    start_shift: float = 0.0


def RunTracking(
    robot,
    reference: PlanReference,
    *,
    q0,
    v0,
    duration: float,
    friction: float = 0.8,
    config: TrackingConfig | None = None,
    log_period: float | None = None,
    meshcat=None,
    push=None,
) -> TrackingRun:
    """Simulates `robot` from (q0, v0) for `duration` (robot time unit) under the controller
    tracking `reference`. push: None or (start, end, force (3,), body name): a constant world
    force on that body's origin over [start, end) (tests push the robot)."""
    from pydrake.systems.analysis import Simulator

    from drakebots.systems.simulate_user import MakeUserDiagram

    config = config or TrackingConfig()
    scale = _TimeScale(robot)
    holder = {}

    def Command(builder, plant, instance):
        controller = builder.AddSystem(
            WholeBodyController(robot, reference, friction=friction, config=config)
        )
        builder.Connect(plant.get_state_output_port(), controller.get_input_port(0))
        builder.Connect(controller.get_output_port(0), plant.get_actuation_input_port(instance))
        holder["controller"] = controller
        if push is not None:
            builder.AddSystem(_Push(plant, *push))
            pusher = builder.GetSubsystemByName("push")
            builder.Connect(pusher.get_output_port(0), plant.get_applied_spatial_force_input_port())

    step = config.time_step_s * scale
    handles = MakeUserDiagram(
        robot,
        time_step=step,
        log_period=log_period or step * 5,
        ground_friction=friction,
        meshcat=meshcat,
        command=Command,
        joint_pd=False,
    )
    plant = handles.plant
    controller = holder["controller"]
    if plant.num_positions() != controller.plant.num_positions():
        raise RuntimeError("the simulated plant's positions differ from the controller's model")
    simulator = Simulator(handles.diagram)
    context = simulator.get_mutable_context()
    plant_context = plant.GetMyMutableContextFromRoot(context)
    plant.SetPositions(plant_context, q0)
    plant.SetVelocities(plant_context, v0)
    start = time.perf_counter()
    simulator.Initialize()
    simulator.AdvanceTo(float(duration))
    wall = time.perf_counter() - start
    times, x, actuation, contact = handles.logs.Read(context)
    nq = plant.num_positions()
    stats = controller.stats
    return TrackingRun(
        times=times,
        q=x[:, :nq],
        v=x[:, nq:],
        actuation=actuation,
        contact=contact,
        ms_per_tick=stats.ms_per_tick,
        ticks=stats.ticks,
        qp_failures=stats.failures,
        qp_fallbacks=stats.fallbacks,
        wall_time_s=wall,
    )


def _Push(plant, start, end, force, body_name):
    from pydrake.common.value import AbstractValue
    from pydrake.multibody.math import SpatialForce
    from pydrake.multibody.plant import ExternallyAppliedSpatialForce
    from pydrake.systems.framework import LeafSystem

    body = plant.GetBodyByName(body_name)

    class Push(LeafSystem):
        def __init__(self):
            super().__init__()
            self.set_name("push")
            self.DeclareAbstractOutputPort(
                "forces", lambda: AbstractValue.Make([ExternallyAppliedSpatialForce()]), self.Calc
            )

        def Calc(self, ctx, output):
            applied = ExternallyAppliedSpatialForce()
            applied.body_index = body.index()
            applied.p_BoBq_B = np.zeros(3)
            on = start <= ctx.get_time() < end
            applied.F_Bq_W = SpatialForce(np.zeros(3), np.asarray(force, float) * on)
            output.set_value([applied])

    return Push()
