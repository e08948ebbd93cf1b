"""The tracking pieces of Sec. IV-C on their own: the transmission table H(x, z) (Eq. 19)
against finite differences of the closed-loop leg kinematics, the latency-compensating
estimator (Eqs. 20-21) against the true leg motion it observes late, the PD law (Eq. 22), and
the periodic plan reference."""

import numpy as np
import pytest
from pydrake.multibody.plant import MultibodyPlant
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import BasicVector, DiagramBuilder, LeafSystem
from pydrake.systems.primitives import VectorLogSink

from drakebots.hamr.model import FLEXURES
from drakebots.hamr.robot import LEGS, AddHamr, HamrLoopConstraints, HamrPositionIndex
from drakebots.hamr.tracking import (
    ENCODER_SCALE,
    XPC_PERIOD_MS,
    BuildTransmissionTable,
    HeadingController,
    LegPositionEstimator,
    LegPositions,
    MotionCapture,
    PlanReference,
    TrackingController,
    TrackingGains,
    TransmissionTable,
)


@pytest.fixture(scope="module")
def plant():
    plant = MultibodyPlant(0.0)
    AddHamr(plant, loop_closure="none")
    plant.Finalize()
    return plant


def _CloseLoops(plant, q, leg):
    """Solves the leg's flexure angles for fixed actuators (Newton on its 6 loop rows)."""
    loops = HamrLoopConstraints(plant)
    rows = [k for k, name in enumerate(loops.constraint_names()) if name.startswith(leg)]
    flex = [HamrPositionIndex(plant, f"{leg}_{n}") for n in FLEXURES]
    context = plant.CreateDefaultContext()
    q = q.copy()
    for _ in range(30):
        plant.SetPositions(context, q)
        c = loops.Eval(plant, context)[rows]
        if np.max(np.abs(c)) < 1e-13:
            break
        q[flex] -= np.linalg.solve(loops.Jacobian(plant, context)[rows][:, flex], c)
    plant.SetPositions(context, q)
    return LegPositions(plant, context)


def test_transmission_table_matches_differences_of_closed_loop_kinematics(plant):
    table = BuildTransmissionTable(plant, samples=7)
    q0 = plant.GetDefaultPositions()
    context = plant.CreateDefaultContext()
    home = LegPositions(plant, context)
    eps = 1e-5
    for i, leg in enumerate(LEGS):
        H = table.Lookup(i, home[i, 0], home[i, 2])
        for j, kind in enumerate(("swing", "lift")):
            k = HamrPositionIndex(plant, f"{leg}_{kind}")
            plus, minus = q0.copy(), q0.copy()
            plus[k] += eps
            minus[k] -= eps
            column = (_CloseLoops(plant, plus, leg)[i] - _CloseLoops(plant, minus, leg)[i]) / (
                2 * eps
            )
            # Bilinear interpolation on a 7 x 7 grid: within a percent of the exact map.
            np.testing.assert_allclose(H[:, j], column, atol=0.01 * np.abs(column).max())


class _Truth(LeafSystem):
    """Synthetic legs: x, z of each leg move sinusoidally; the actuators move at the same rate
    (the synthetic table below maps actuator velocity to leg velocity one to one)."""

    def __init__(self, amplitude=1.0, omega=2 * np.pi / 50.0):
        super().__init__()
        self.a, self.w = amplitude, omega
        self.phase = np.linspace(0, np.pi, 8)
        self.DeclareVectorOutputPort("legs", 8, self._Legs)
        self.DeclareVectorOutputPort("current", 8, self._Current)

    def Legs(self, t):
        return 10.0 + self.a * np.sin(self.w * t + self.phase)

    def _Legs(self, context, output: BasicVector):
        output.SetFromVector(self.Legs(context.get_time()))

    def _Current(self, context, output: BasicVector):
        v = self.a * self.w * np.cos(self.w * context.get_time() + self.phase)
        # Actuator order FL_swing, FL_lift, ...: leg 2i is x (swing), 2i+1 is z (lift).
        scale = np.tile([ENCODER_SCALE["swing"], ENCODER_SCALE["lift"]], 4)
        output.SetFromVector(v / scale)


class _TickReader(LeafSystem):
    """Reads its input in a periodic update at the xPC tick, as TrackingController does, and
    holds what it read (so a log shows what a controller saw at each tick)."""

    def __init__(self, size):
        super().__init__()
        self._input = self.DeclareVectorInputPort("value", size)
        self._state = self.DeclareDiscreteState(size)
        self.DeclarePeriodicDiscreteUpdateEvent(XPC_PERIOD_MS, 0.0, self._Update)
        self.DeclareStateOutputPort("read", self._state)

    def _Update(self, context, state):
        state.get_mutable_vector(self._state).SetFromVector(self._input.Eval(context))


def test_estimator_removes_the_motion_capture_latency():
    H = np.zeros((4, 2, 2, 3, 2))
    H[..., 0, 0] = 1.0  # swing velocity -> x
    H[..., 2, 1] = 1.0  # lift velocity -> z
    table = TransmissionTable(np.tile([0.0, 20.0], (4, 1)), np.tile([0.0, 20.0], (4, 1)), H)
    names = [f"{leg}_{kind}" for leg in LEGS for kind in ("swing", "lift")]
    builder = DiagramBuilder()
    truth = builder.AddSystem(_Truth())
    mocap = builder.AddSystem(MotionCapture(8))
    builder.Connect(truth.GetOutputPort("legs"), mocap.get_input_port())
    estimator = builder.AddSystem(LegPositionEstimator(table, names, initial=truth.Legs(0.0)))
    builder.Connect(mocap.get_output_port(), estimator.GetInputPort("mocap"))
    builder.Connect(truth.GetOutputPort("current"), estimator.GetInputPort("current"))
    reader = builder.AddSystem(_TickReader(16))
    builder.Connect(estimator.get_output_port(), reader.get_input_port())
    logs = {}
    for name, port, size in [
        ("estimate", reader.get_output_port(), 16),
        ("mocap", mocap.get_output_port(), 9),
    ]:
        logs[name] = builder.AddSystem(VectorLogSink(size, 0.4))
        builder.Connect(port, logs[name].get_input_port())
    diagram = builder.Build()
    simulator = Simulator(diagram)
    simulator.AdvanceTo(150.0)  # ms
    context = simulator.get_context()
    est = logs["estimate"].FindLog(context)
    raw = logs["mocap"].FindLog(context)
    t = est.sample_times()
    late = t > 20.0
    true = np.array([truth.Legs(s) for s in t])
    # A log sample at t is taken before the update at t: the reader holds what it read a tick ago.
    read = np.array([truth.Legs(s - XPC_PERIOD_MS) for s in t])
    estimate_error = np.abs(est.data().T[:, :8] - read)[late].max()
    mocap_error = np.abs(raw.data().T[:, :8] - true)[late].max()
    # 11-13 ms late on a 50 ms period: the raw mocap is off by most of the amplitude; the
    # estimate a controller reads at a tick only by the trapezoidal integration's error, not by
    # a tick of lag (the legs move a * omega * 0.4 ms = 0.05 mm per tick here; an estimate one
    # tick old is off by that).
    assert mocap_error > 0.8
    assert estimate_error < 0.1 * truth.a * truth.w * XPC_PERIOD_MS
    # The delivered frames are 11 to 13 ms old.
    age = t - raw.data().T[:, 8]
    assert age[late].min() >= 11.0 - 1e-9 and age[late].max() <= 13.0 + 1e-6


def test_pd_law_signs_and_feedforward():
    names = [f"{leg}_{kind}" for leg in LEGS for kind in ("swing", "lift")]
    signs = {name: (-1.0 if name.startswith("F") else 1.0) for name in names}
    gains = TrackingGains(
        kp_swing=10.0, kp_lift=20.0, kd_swing=1.0, kd_lift=2.0, kf_swing=1.1, kf_lift=0.9
    )
    controller = TrackingController(names, signs, gains)
    ff = np.full(8, 150.0)
    desired = np.zeros(16)
    estimate = np.zeros(16)
    desired[0] = 0.5  # FL x error +0.5 mm
    estimate[9] = -0.1  # FL z velocity error +0.1 mm/ms
    u = controller.Law(ff, desired, estimate)
    assert u[0] == pytest.approx(112.5 + 1.1 * 37.5 - 10.0 * 0.5)  # FL swing: sign -1
    assert u[1] == pytest.approx(112.5 + 0.9 * 37.5 - 2.0 * 0.1)  # FL lift: de/dt
    assert u[2] == pytest.approx(112.5 + 1.1 * 37.5)
    # Clamped to the drive range.
    assert controller.Law(np.full(8, 400.0), desired, estimate).max() == 225.0


def test_plan_reference_repeats_and_ramps():
    times = np.linspace(0.0, 100.0, 11)
    voltages = np.tile(np.linspace(50, 150, 10)[:, None], (1, 8))
    legs = np.tile(np.sin(2 * np.pi * times / 100.0)[:, None], (1, 8))
    reference = PlanReference(times, voltages, legs, ramp=100.0, home_legs=np.zeros(8))
    # After the ramp, the second stride equals the first.
    np.testing.assert_allclose(reference.Voltages(125.0), reference.Voltages(225.0))
    np.testing.assert_allclose(reference.Desired(130.0), reference.Desired(230.0), atol=1e-9)
    # 45 % through the ramp the voltage is 45 % of the way from the mid voltage (at the
    # midpoint of interval 4, where the linear drive equals that interval's voltage).
    assert reference.Voltages(45.0)[0] == pytest.approx(112.5 + 0.45 * (voltages[4, 0] - 112.5))
    held = PlanReference(times, voltages, legs, ramp=100.0, home_legs=np.zeros(8), hold="zero")
    assert held.Voltages(50.0)[0] == pytest.approx(112.5 + 0.5 * (voltages[5, 0] - 112.5))
    assert held.Voltages(158.0)[0] == pytest.approx(voltages[5, 0])


def test_linear_voltage_hold_keeps_the_plans_interval_averages():
    """The linear drive passes through each interval's voltage at its midpoint, is continuous
    across the stride boundary (periodic wrap), and its stride average equals the plan's."""
    rng = np.random.default_rng(5)
    times = np.linspace(0.0, 100.0, 11)
    voltages = rng.uniform(20.0, 200.0, (10, 8))
    legs = np.zeros((11, 8))
    reference = PlanReference(times, voltages, legs)
    mids = 0.5 * (times[:-1] + times[1:])
    np.testing.assert_allclose([reference.Voltages(t) for t in mids + 300.0], voltages)
    np.testing.assert_allclose(
        reference.Voltages(200.0 - 1e-9), reference.Voltages(200.0), atol=1e-6
    )
    samples = np.array([reference.Voltages(t) for t in np.linspace(0.0, 100.0, 20001)[:-1]])
    np.testing.assert_allclose(samples.mean(axis=0), voltages.mean(axis=0), rtol=1e-6)
    with pytest.raises(ValueError, match="hold"):
        PlanReference(times, voltages, legs, hold="cubic")


def test_heading_controller_lengthens_the_outer_side_and_saturates():
    """Ours: a robot turned left (yaw > 0, CCW seen from above) gets longer strides on its left
    legs and shorter on its right; a lateral offset to the left (y > 0) asks for a right turn;
    the change is clamped, and the integral stops growing once it alone would saturate."""
    gains = TrackingGains(k_heading=0.5, k_lateral=0.02, max_stride_change=0.3)
    heading = HeadingController(gains, period=0.4)
    left = np.array([leg[1] == "L" for leg in LEGS])
    scale, _ = heading.Law(0.0, 0.2)
    np.testing.assert_allclose(scale[left], 1.1)
    np.testing.assert_allclose(scale[~left], 0.9)
    # 5 mm to the left with a straight heading: the set-point is atan(0.1) to the right.
    scale, _ = heading.Law(5.0, 0.0)
    np.testing.assert_allclose(scale[left], 1.0 + 0.5 * np.arctan(0.1))
    # On the line and facing along it: strides unchanged; a large error saturates.
    np.testing.assert_allclose(heading.Law(0.0, 0.0)[0], 1.0)
    np.testing.assert_allclose(heading.Law(0.0, -3.0)[0][left], 0.7)
    integrating = HeadingController(
        TrackingGains(k_heading=0.0, k_heading_integral=0.01, max_stride_change=0.3), period=0.4
    )
    scale, integral = integrating.Law(0.0, 0.1, 0.0)
    assert integral == pytest.approx(0.04)
    np.testing.assert_allclose(scale[left], 1.0 + 0.01 * 0.04)
    _, integral = integrating.Law(0.0, 0.1, 1e6)
    assert integral == pytest.approx(0.3 / 0.01)


def test_steering_scales_each_legs_swing_about_the_plans_means():
    names = [f"{leg}_{kind}" for leg in LEGS for kind in ("swing", "lift")]
    signs = {name: 1.0 for name in names}
    rng = np.random.default_rng(3)
    u_center, leg_center = rng.uniform(80, 140, 8), rng.uniform(-1, 1, 8)
    controller = TrackingController(names, signs, TrackingGains(), centers=(u_center, leg_center))
    ff, desired = rng.uniform(0, 225, 8), rng.uniform(-2, 2, 16)
    same_ff, same_desired = controller.Steer(ff, desired, np.ones(4))
    np.testing.assert_allclose(same_ff, ff)
    np.testing.assert_allclose(same_desired, desired)
    scale = np.array([1.2, 0.8, 1.1, 0.9])  # FL, RL, FR, RR
    new_ff, new_desired = controller.Steer(ff, desired, scale)
    for i, name in enumerate(names):
        leg = LEGS.index(name.split("_")[0])
        expected = u_center[i] + scale[leg] * (ff[i] - u_center[i]) if "swing" in name else ff[i]
        assert new_ff[i] == pytest.approx(expected), name
    x = np.arange(0, 8, 2)
    np.testing.assert_allclose(new_desired[x], leg_center[x] + scale * (desired[x] - leg_center[x]))
    np.testing.assert_allclose(new_desired[x + 1], desired[x + 1])  # lift (z) untouched
    np.testing.assert_allclose(new_desired[8 + x], scale * desired[8 + x])  # x velocities
    np.testing.assert_allclose(new_desired[9 + x], desired[9 + x])


def test_steered_tracking_of_a_standing_plan_keeps_the_robot_in_place():
    """The whole steered diagram (body pose through the 11 ms motion capture into the heading
    controller) runs on the SAP plant: a plan that stands still at the mid voltage stays put,
    heading unchanged."""
    from drakebots.hamr.tracking import SimulateTracking, TrackingConfig

    plant = MultibodyPlant(0.0)
    AddHamr(plant, loop_closure="none")
    plant.Finalize()
    home = LegPositions(plant, plant.CreateDefaultContext())[:, [0, 2]].ravel()
    times = np.linspace(0.0, 33.0, 6)
    config = TrackingConfig(
        cycles=2,
        table_samples=5,
        gains=TrackingGains(k_heading=0.5, k_lateral=0.02, k_heading_integral=0.005),
    )
    run = SimulateTracking(
        times, np.full((5, 8), 112.5), np.tile(home, (6, 1)), "cardstock", config
    )
    assert np.all(np.isfinite(run.positions))
    assert np.max(np.abs(run.positions[:, [0, 1]])) < 0.5  # mm
    assert np.max(np.abs(run.positions[:, 3])) < np.radians(1.0)
