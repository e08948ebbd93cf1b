"""Closed-loop tracking of a planned HAMR-VI trajectory (hamr-contact-implicit.txt, Sec. IV-C).

The paper tracks the planned leg positions in the body frame with a joint-space PD controller
(Eq. 22) around the planned feed-forward voltages, fed by a low-latency leg-position estimator
(Eqs. 19-21): motion capture gives leg positions at 500 Hz but 11 ms late; the piezoelectric
encoders give actuator velocities with no delay (the "mechanical" current of each bender, Eq. 18,
scaled by X); the transmission Jacobian H(x, z) (Eq. 19), a 21 x 21 look-up table per leg, maps
actuator velocities to leg velocities, which are integrated over the latency window (Eq. 20).

Systems here (double only), all in HAMR's units (mm, ms, V):

    plant state -> LegPositionSensor -> leg_positions -> MotionCapture -> mocap (11 ms late)
    plant state -> MechanicalCurrentSensor -> current
    mocap, current -> LegPositionEstimator -> estimate (x, z per leg; velocities)
    estimate -> TrackingController (+ plan: feed-forward voltages, desired legs) -> voltage
    voltage -> PiezoBenders -> force -> plant (SAP, closed loops: drakebots.hamr.simulation)
    plant state -> [y, yaw] -> MotionCapture -> HeadingController -> stride_scale -> controller
        (ours, optional: steering by stride length)

`SimulateTracking` wires them around the SAP plant of the HAMR-VI model issue, which is a
different integrator and contact model from the transcription that produced the plan. The
estimator and the controller tick together, as on the paper's xPC target: the estimate that
Eq. 22 uses at a tick is computed from that tick's encoder currents (the estimator's output is
direct feedthrough), not the estimate of the tick before.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydrake.multibody.tree import JacobianWrtVariable
from pydrake.systems.framework import BasicVector, LeafSystem

from drakebots.hamr.model import FLEXURES
from drakebots.hamr.robot import (
    LEGS,
    HamrLoopConstraints,
    HamrPositionIndex,
    LegTransmissionJacobian,
)

XPC_PERIOD_MS = 0.4  # the controller and estimator rate, 2.5 kHz (Sec. IV-A)
MOCAP_PERIOD_MS = 2.0  # motion capture, 500 Hz
MOCAP_LATENCY_MS = 11.0
ENCODER_SCALE = {"swing": 140.0, "lift": 120.0}  # X^s, X^l of Eq. 21


# ---------------------------------------------------------------------------- leg kinematics
def LegPositions(plant, context) -> np.ndarray:
    """(4, 3) foot points in the chassis frame, mm (legs in LEGS order)."""
    chassis = plant.GetBodyByName("chassis").body_frame()
    return np.array(
        [
            plant.GetFrameByName(f"{leg}_foot").CalcPose(context, chassis).translation()
            for leg in LEGS
        ]
    )


@dataclasses.dataclass
class TransmissionTable:
    """The look-up table H(x, z) of Eq. 19 for each leg: (legs, nx, nz, 3, 2) on regular grids.

    Attributes:
        x, z: (legs, nx) and (legs, nz) grid coordinates of the foot in the chassis frame, mm.
        H: (legs, nx, nz, 3, 2) foot velocity per actuator velocity [swing, lift], mm/mm.
    """

    x: np.ndarray
    z: np.ndarray
    H: np.ndarray

    def Lookup(self, leg: int, x: float, z: float) -> np.ndarray:
        """Bilinear interpolation of H at (x, z), clamped to the table's range."""
        xs, zs = self.x[leg], self.z[leg]
        fx = np.clip((x - xs[0]) / (xs[-1] - xs[0]) * (len(xs) - 1), 0, len(xs) - 1 - 1e-9)
        fz = np.clip((z - zs[0]) / (zs[-1] - zs[0]) * (len(zs) - 1), 0, len(zs) - 1 - 1e-9)
        i, j = int(fx), int(fz)
        a, b = fx - i, fz - j
        H = self.H[leg]
        return (
            (1 - a) * (1 - b) * H[i, j]
            + a * (1 - b) * H[i + 1, j]
            + (1 - a) * b * H[i, j + 1]
            + a * b * H[i + 1, j + 1]
        )


def _LegCoordinates(plant, leg):
    actuators = [HamrPositionIndex(plant, f"{leg}_{kind}") for kind in ("swing", "lift")]
    flexures = [HamrPositionIndex(plant, f"{leg}_{name}") for name in FLEXURES]
    return actuators, flexures


def BuildTransmissionTable(plant, *, samples: int = 21, margin: float = 0.1) -> TransmissionTable:
    """H(x, z) on a samples x samples grid per leg, by inverse kinematics (Sec. IV-C).

    The grid spans the leg positions reachable with the actuators within their joint limits
    (shrunk by `margin` of the range); each grid point is solved by Newton's method for the leg's
    8 coordinates (6 loop rows, foot x and z), and H there is `LegTransmissionJacobian`.

    Args:
        plant: a finalized float plant with HAMR-VI (any floating base; it stays at home).
    """
    context = plant.CreateDefaultContext()
    q_home = plant.GetPositions(context).copy()
    loops = HamrLoopConstraints(plant)
    names = loops.constraint_names()
    chassis = plant.GetBodyByName("chassis").body_frame()
    lower = plant.GetPositionLowerLimits()
    upper = plant.GetPositionUpperLimits()
    X, Z, Hs = [], [], []
    for index, leg in enumerate(LEGS):
        actuators, flexures = _LegCoordinates(plant, leg)
        unknowns = actuators + flexures
        rows = [k for k, name in enumerate(names) if name.startswith(leg)]
        foot = plant.GetFrameByName(f"{leg}_foot")

        def Residual(q, target, rows=rows, foot=foot):
            plant.SetPositions(context, q)
            c = loops.Eval(plant, context)[rows]
            p = foot.CalcPose(context, chassis).translation()
            r = np.concatenate([c, p[[0, 2]] - target]) if target is not None else c
            C = loops.Jacobian(plant, context)[rows]
            J = plant.CalcJacobianTranslationalVelocity(
                context, JacobianWrtVariable.kQDot, foot, np.zeros(3), chassis, chassis
            )
            return r, np.vstack([C, J[[0, 2]]]), p

        def Solve(q, target, free, rows=rows, leg=leg, Residual=Residual):
            for _ in range(50):
                r, J, p = Residual(q, target)
                if np.max(np.abs(r)) < 1e-10:
                    return q, p
                if target is None:
                    J = J[: len(rows)]
                q = q.copy()
                q[free] -= np.linalg.lstsq(J[:, free], r, rcond=None)[0]
            raise RuntimeError(f"leg {leg}: inverse kinematics did not converge")

        # The reachable box: foot positions at the actuator range's corners.
        corners = []
        for s in (lower[actuators[0]], upper[actuators[0]]):
            for l in (lower[actuators[1]], upper[actuators[1]]):
                q = q_home.copy()
                q[actuators] = [s, l]
                _, p = Solve(q, None, flexures)
                corners.append(p[[0, 2]])
        corners = np.array(corners)
        # The corners of the mapped actuator box form a quadrilateral; a rectangle inside it.
        xs_sorted = np.sort(corners[:, 0])
        zs_sorted = np.sort(corners[:, 1])
        x0, x1 = xs_sorted[1], xs_sorted[2]
        z0, z1 = zs_sorted[1], zs_sorted[2]
        dx, dz = margin * (x1 - x0), margin * (z1 - z0)
        xs = np.linspace(x0 + dx, x1 - dx, samples)
        zs = np.linspace(z0 + dz, z1 - dz, samples)
        H = np.zeros((samples, samples, 3, 2))
        q_row = q_home.copy()
        for i, x in enumerate(xs):
            q = q_row.copy()
            for j, z in enumerate(zs):
                q, _ = Solve(q, np.array([x, z]), unknowns)
                if j == 0:
                    q_row = q.copy()
                plant.SetPositions(context, q)
                H[i, j] = LegTransmissionJacobian(plant, context, leg)
        X.append(xs)
        Z.append(zs)
        Hs.append(H)
        del index
    return TransmissionTable(np.array(X), np.array(Z), np.array(Hs))


# ---------------------------------------------------------------------------- sensors
class LegPositionSensor(LeafSystem):
    """Foot positions in the chassis frame from the plant state (the truth a mocap observes).

    Double only. state -> LegPositionSensor -> leg_positions (x, z of each leg: 8, mm)
    """

    def __init__(self, plant):
        super().__init__()
        self._plant = plant
        self._context = plant.CreateDefaultContext()
        nq = plant.num_positions()
        self._state_port = self.DeclareVectorInputPort("state", plant.num_multibody_states())
        self._nq = nq
        self.DeclareVectorOutputPort("leg_positions", 2 * len(LEGS), self._Calc)

    def _Calc(self, context, output: BasicVector):
        x = self._state_port.Eval(context)
        self._plant.SetPositions(self._context, x[: self._nq])
        p = LegPositions(self._plant, self._context)
        output.SetFromVector(p[:, [0, 2]].ravel())


class MotionCapture(LeafSystem):
    """Samples tracked positions at 500 Hz and delivers each frame `latency` ms late.

    Double only. positions -> MotionCapture -> mocap ([size positions, frame time])

    The positions are the 8 leg coordinates for the estimator, or the body's y and yaw for
    `HeadingController`.

    The output is the newest frame whose delivery time (frame time + latency) has passed, and
    that frame's capture time (so the estimator knows how far to integrate).
    """

    def __init__(
        self, size: int, *, period: float = MOCAP_PERIOD_MS, latency: float = MOCAP_LATENCY_MS
    ):
        super().__init__()
        self._size = size
        self._period = period
        self._latency = latency
        self._frames = int(np.ceil(latency / period)) + 2
        self._input = self.DeclareVectorInputPort("positions", size)
        # Ring of frames: [time, positions] per slot, oldest first.
        self._state = self.DeclareDiscreteState(np.full(self._frames * (size + 1), np.nan))
        self.DeclarePeriodicDiscreteUpdateEvent(period, 0.0, self._Capture)
        # The delivered frame depends on the time as well as on the stored frames.
        self.DeclareVectorOutputPort(
            "mocap",
            size + 1,
            self._Deliver,
            prerequisites_of_calc={
                self.xd_ticket(),
                self.time_ticket(),
                self.all_input_ports_ticket(),
            },
        )

    def _Capture(self, context, state):
        frames = (
            context.get_discrete_state(self._state).get_value().reshape(self._frames, -1).copy()
        )
        frames = np.roll(frames, -1, axis=0)
        frames[-1, 0] = context.get_time()
        frames[-1, 1:] = self._input.Eval(context)
        state.get_mutable_vector(self._state).SetFromVector(frames.ravel())

    def _Deliver(self, context, output: BasicVector):
        frames = context.get_discrete_state(self._state).get_value().reshape(self._frames, -1)
        t = context.get_time()
        ready = np.flatnonzero(frames[:, 0] + self._latency <= t + 1e-9)
        if len(ready) == 0:
            # Before the first delivery: the oldest frame (the start pose) is all we have.
            valid = np.flatnonzero(np.isfinite(frames[:, 0]))
            row = (
                frames[valid[0]] if len(valid) else np.concatenate([[t], self._input.Eval(context)])
            )
        else:
            row = frames[ready[-1]]
        output.SetFromVector(np.concatenate([row[1:], row[:1]]))  # [positions, capture time]


class MechanicalCurrentSensor(LeafSystem):
    """The piezoelectric encoders: each bender's mechanical current i_m = qdot_actuator / X
    (Sec. IV-B; velocity mm/ms per unit current X: 140 swing, 120 lift), optional noise.

    Double only. state -> MechanicalCurrentSensor -> current (8)
    """

    def __init__(self, plant, actuator_names, *, noise: float = 0.0, seed: int = 0):
        super().__init__()
        nq = plant.num_positions()
        self._indices = np.array(
            [nq + plant.GetJointByName(name).velocity_start() for name in actuator_names]
        )
        self._scale = np.array([ENCODER_SCALE[name.split("_")[1]] for name in actuator_names])
        self._noise = noise
        self._rng = np.random.default_rng(seed)
        self._state_port = self.DeclareVectorInputPort("state", plant.num_multibody_states())
        self.DeclareVectorOutputPort("current", len(actuator_names), self._Calc)

    def _Calc(self, context, output: BasicVector):
        x = self._state_port.Eval(context)
        current = x[self._indices] / self._scale
        if self._noise > 0:
            current = current + self._noise * self._rng.standard_normal(len(current))
        output.SetFromVector(current)


# ---------------------------------------------------------------------------- estimator
class LegPositionEstimator(LeafSystem):
    """The low-latency leg-position estimator of Eqs. 20-21, at the xPC rate.

    Double only. mocap, current -> LegPositionEstimator -> estimate ([x, z] x 4, then d/dt)

    At each tick k: qdot_hat[k] = H(x_hat[k-1], z_hat[k-1]) diag(X^s, X^l) i_m[k] per leg (the
    x and z rows of H), and q_hat[k] = q_mocap (captured at k - eps) + the trapezoidal integral
    of qdot_hat from the capture time to now (Eq. 20 is written with a minus between the two
    samples; its text says trapezoidal integration, which this is).

    The output is q_hat[k] and qdot_hat[k] computed from the inputs at the time it is evaluated
    (direct feedthrough), so a controller updating at tick k reads this tick's estimate, as the
    xPC target computes estimate and control in one tick. Measured: with the estimate a tick
    (0.4 ms) old, Eq. 22's loop rang the swing legs at ~170 Hz (2-3 mm by the third 2 Hz
    stride) and the 2 Hz cardstock plan tracked at 0.35 of its speed; read in the same tick,
    0.98, as with an ideal sensor (README).

    Args:
        table: the TransmissionTable.
        actuator_names: the order of the `current` input ("FL_swing", "FL_lift", ...).
        period: tick, ms; history: how many ticks of velocity to keep (covers the latency).
        initial: initial leg positions (8).
    """

    def __init__(
        self,
        table: TransmissionTable,
        actuator_names,
        *,
        period: float = XPC_PERIOD_MS,
        latency: float = MOCAP_LATENCY_MS,
        initial=None,
    ):
        super().__init__()
        self._table = table
        self._period = period
        self._history = int(np.ceil((latency + 2 * MOCAP_PERIOD_MS) / period)) + 2
        legs = list(LEGS)
        self._swing = np.array([actuator_names.index(f"{leg}_swing") for leg in legs])
        self._lift = np.array([actuator_names.index(f"{leg}_lift") for leg in legs])
        self._scale = np.array([ENCODER_SCALE[name.split("_")[1]] for name in actuator_names])
        self._mocap = self.DeclareVectorInputPort("mocap", 2 * len(legs) + 1)
        self._current = self.DeclareVectorInputPort("current", len(actuator_names))
        initial = np.zeros(2 * len(legs)) if initial is None else np.asarray(initial, float)
        # State: [estimate (8), velocity history (history x 8, oldest first), history times].
        size = 8 + self._history * 8 + self._history
        x0 = np.concatenate([initial, np.zeros(self._history * 8), np.full(self._history, np.nan)])
        assert len(x0) == size
        self._state = self.DeclareDiscreteState(x0)
        self.DeclarePeriodicDiscreteUpdateEvent(period, 0.0, self._Update)
        # Direct feedthrough, as on the xPC target, which reads the encoders and computes the
        # estimate and Eq. 22 in the same 0.4 ms tick: a controller updating at this tick reads
        # the estimate of this tick, not of the last.
        self.DeclareVectorOutputPort(
            "estimate",
            16,
            self._Output,
            prerequisites_of_calc={
                self.xd_ticket(),
                self.time_ticket(),
                self.all_input_ports_ticket(),
            },
        )

    def _Split(self, x):
        estimate = x[:8]
        velocities = x[8 : 8 + self._history * 8].reshape(self._history, 8)
        times = x[8 + self._history * 8 :]
        return estimate, velocities, times

    def _Estimate(self, context):
        """Eqs. 20-21 at the context's time, from the stored history and the current inputs.

        Returns (estimate (8), velocity history (history x 8), history times): the history with
        this instant's velocity appended, unless the stored history already ends at this instant
        (the output evaluated after this tick's update).
        """
        x = context.get_discrete_state(self._state).get_value()
        previous, velocities, times = self._Split(x)
        t = context.get_time()
        if not (np.isfinite(times[-1]) and abs(times[-1] - t) <= 1e-9):
            actuator_velocity = self._current.Eval(context) * self._scale  # Eq. 21's diag(X) i_m
            velocity = np.zeros(8)
            for leg in range(4):
                H = self._table.Lookup(leg, previous[2 * leg], previous[2 * leg + 1])
                qdot = H @ actuator_velocity[[self._swing[leg], self._lift[leg]]]
                velocity[2 * leg : 2 * leg + 2] = qdot[[0, 2]]
            velocities = np.vstack([velocities[1:], velocity])
            times = np.concatenate([times[1:], [t]])
        mocap = self._mocap.Eval(context)
        t_capture = mocap[-1]
        # Trapezoidal integral of the velocity history from the capture time to now.
        valid = np.isfinite(times) & (times >= t_capture - 1e-9)
        v, tv = velocities[valid], times[valid]
        integral = np.sum(0.5 * (v[1:] + v[:-1]) * np.diff(tv)[:, None], axis=0)
        if len(tv):
            # From the capture instant to the first sample after it.
            integral = integral + v[0] * max(0.0, tv[0] - t_capture)
        return mocap[:-1] + integral, velocities, times

    def _Update(self, context, state):
        estimate, velocities, times = self._Estimate(context)
        state.get_mutable_vector(self._state).SetFromVector(
            np.concatenate([estimate, velocities.ravel(), times])
        )

    def _Output(self, context, output: BasicVector):
        estimate, velocities, _ = self._Estimate(context)
        output.SetFromVector(np.concatenate([estimate, velocities[-1]]))


# ---------------------------------------------------------------------------- controller
@dataclasses.dataclass
class TrackingGains:
    """Eq. 22's gains (V/mm, V*ms/mm) and the feed-forward factor K_f."""

    # Proportional gain on the leg x (swing) and z (lift) errors, V per mm. The paper tuned its
    # gains by hand; these are tuned in simulation on the 10 Hz cardstock plan (51 knots, the
    # estimator's 11 ms mocap latency, 10 strides): kp 10 / kd 0.2 tracks the legs within 0.14
    # mm RMS (estimation 0.025 mm; 0.87 of the planned speed), kp 20 / kd 0 the same (0.14 mm,
    # 0.87), kp 40 / kd 0.5 rings the legs (0.65 mm, 0.53). With the estimate a tick old (before
    # the estimator's output was read in its own tick) kp 20 / kd 0 rang too (1.6 mm).
    kp_swing: float = 10.0
    kp_lift: float = 10.0
    # Derivative gains, V*ms/mm.
    kd_swing: float = 0.2
    kd_lift: float = 0.2
    # Feed-forward gains K_f (the paper: 0.9 to 1.1), applied about the mid voltage.
    kf_swing: float = 1.0
    kf_lift: float = 1.0
    # Ours, not in the paper (its Sec. VI names whole-body feedback as future work): steering by
    # stride length (`HeadingController`). Gain on the heading error, stride fraction per rad
    # (0: off, the paper's controller alone); heading set-point per mm of lateral offset from
    # the start line, rad/mm; and the largest change of a side's stride, as a fraction.
    k_heading: float = 0.0
    k_heading_integral: float = 0.0
    k_lateral: float = 0.0
    max_stride_change: float = 0.5


def _InterpolateRows(s: float, xs: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """np.interp(s, xs, rows[:, i]) for every column i at once (xs increasing; clamped)."""
    k = int(np.clip(np.searchsorted(xs, s, side="right") - 1, 0, len(xs) - 2))
    w = min(max((s - xs[k]) / (xs[k + 1] - xs[k]), 0.0), 1.0)
    return rows[k] + w * (rows[k + 1] - rows[k])


class PlanReference(LeafSystem):
    """The plan, repeated periodically: feed-forward voltages and desired leg positions.

    Double only. PlanReference -> feedforward (8 V), desired (8 legs x, z; 8 velocities)

    Args:
        times: (N,) knot times of one stride, ms (times[-1] is the period).
        voltages: (N-1, 8), the plan's input over each interval.
        legs: (N, 8) desired x, z per leg at the knots (chassis frame, mm).
        ramp: duration of the initial amplitude ramp, ms (about the mid voltage, and from the
            home leg positions); 0 for none.
        mid_voltage, home_legs: the ramp's starting point.
        hold: "linear" (default): the drive passes through each interval's voltage at the
            interval's midpoint and is linear in between (periodically wrapped), as a signal
            generator at the paper's 2.5 kHz would play the plan; the midpoint transcription's
            u_k is the interval's average input, which this reproduces to second order.
            "zero": each voltage held over its interval. With knots 17-27 ms apart (2 Hz
            strides) the held steps ring the lightly damped benders at their own frequencies,
            which the plan's midpoint steps never see: the 2 Hz cardstock plan with the scuff
            cost tracks 8.5 mm/cycle (0.90 of the plan) with "linear" and 5.1-5.8 with "zero"
            (measured; README).
    """

    def __init__(
        self,
        times,
        voltages,
        legs,
        *,
        ramp: float = 0.0,
        mid_voltage: float = 112.5,
        home_legs=None,
        periodic: bool = True,
        hold: str = "linear",
    ):
        super().__init__()
        if hold not in ("linear", "zero"):
            raise ValueError(f"hold must be 'linear' or 'zero', got {hold!r}")
        self._hold = hold
        self._times = np.asarray(times, float)
        self._voltages = np.asarray(voltages, float)
        self._legs = np.asarray(legs, float)
        self._period = float(self._times[-1] - self._times[0])
        self._ramp = ramp
        self._mid = mid_voltage
        self._home = self._legs[0] if home_legs is None else np.asarray(home_legs, float)
        self._periodic = periodic
        # The linear drive's breakpoints: interval midpoints (wrapped once each way if periodic:
        # the last interval's midpoint precedes the first's).
        mids = 0.5 * (self._times[:-1] + self._times[1:])
        self._mids, self._mid_values = mids, self._voltages
        if periodic:
            self._mids = np.concatenate([[mids[-1] - self._period], mids, [mids[0] + self._period]])
            self._mid_values = np.vstack([self._voltages[-1], self._voltages, self._voltages[0]])
        self.DeclareVectorOutputPort("feedforward", self._voltages.shape[1], self._CalcVoltage)
        self.DeclareVectorOutputPort("desired", 2 * self._legs.shape[1], self._CalcDesired)

    def _Phase(self, t):
        if self._periodic:
            return self._times[0] + np.mod(t, self._period)
        return min(t, self._times[-1])

    def _Scale(self, t):
        return 1.0 if self._ramp <= 0 else min(1.0, t / self._ramp)

    def Voltages(self, t):
        s = self._Phase(t)
        if self._hold == "zero":
            k = int(np.searchsorted(self._times, s, side="right")) - 1
            u = self._voltages[min(max(k, 0), len(self._voltages) - 1)]
        else:
            u = _InterpolateRows(s, self._mids, self._mid_values)
        return self._mid + self._Scale(t) * (u - self._mid)

    def Desired(self, t):
        s = self._Phase(t)
        legs = _InterpolateRows(s, self._times, self._legs)
        dt = 1e-3 * self._period
        ahead = _InterpolateRows(self._Phase(t + dt), self._times, self._legs)
        velocity = (ahead - legs) / dt if self._Phase(t + dt) > s else np.zeros_like(legs)
        scale = self._Scale(t)
        return np.concatenate([self._home + scale * (legs - self._home), scale * velocity])

    def _CalcVoltage(self, context, output: BasicVector):
        output.SetFromVector(self.Voltages(context.get_time()))

    def _CalcDesired(self, context, output: BasicVector):
        output.SetFromVector(self.Desired(context.get_time()))


class HeadingController(LeafSystem):
    """Steers by stride length: longer strides on one side turn the robot to the other.

    Double only. mocap ([y, yaw, frame time], 11 ms late) -> HeadingController -> stride_scale (4)

    Ours, not the paper's (which feeds back leg positions only and leaves the body's pose to
    future work). The heading set-point turns the robot back onto its start line,
    ψ_ref = -atan(k_lateral y), and the error e = ψ - ψ_ref sets the swing stride of the left
    legs to 1 + k_heading e and of the right legs to 1 - k_heading e (each within
    1 ± max_stride_change): a robot that has turned left (e > 0) takes longer strides on its
    left side. Updated at the controller's rate from the delayed motion-capture frame.
    """

    def __init__(self, gains: TrackingGains, *, period: float = XPC_PERIOD_MS):
        super().__init__()
        self._gains = gains
        self._period = period
        # +1 for the left legs (FL, RL), -1 for the right (FR, RR), in LEGS order.
        self._side = np.array([1.0 if leg[1] == "L" else -1.0 for leg in LEGS])
        self._mocap = self.DeclareVectorInputPort("mocap", 3)
        self._state = self.DeclareDiscreteState(np.ones(len(LEGS)))
        self._integral = self.DeclareDiscreteState(1)
        self.DeclarePeriodicDiscreteUpdateEvent(period, 0.0, self._Update)
        self.DeclareStateOutputPort("stride_scale", self._state)

    def Law(self, y: float, yaw: float, integral: float = 0.0):
        """(stride scale per leg (4,), the heading error's new integral, rad*ms)."""
        g = self._gains
        error = yaw + np.arctan(g.k_lateral * y)
        limit = g.max_stride_change
        if g.k_heading_integral > 0.0:
            # Clamped so that the integral alone never asks more than the largest change.
            bound = limit / g.k_heading_integral
            integral = float(np.clip(integral + error * self._period, -bound, bound))
        change = g.k_heading * error + g.k_heading_integral * integral
        return 1.0 + self._side * np.clip(change, -limit, limit), integral

    def _Update(self, context, state):
        y, yaw, _ = self._mocap.Eval(context)
        integral = context.get_discrete_state(self._integral).get_value()[0]
        scale, integral = self.Law(y, yaw, integral)
        state.get_mutable_vector(self._state).SetFromVector(scale)
        state.get_mutable_vector(self._integral).SetFromVector([integral])


class TrackingController(LeafSystem):
    """The joint-space PD law of Eq. 22 around the feed-forward voltages, at the xPC rate.

    Double only. feedforward, desired, estimate -> TrackingController -> voltage (8)

    u = V_mid + K_f (u0 - V_mid) + sign (K_p e + K_d de/dt), per actuator, with e the leg error
    (desired - estimated) in x for the swing actuator and in z for the lift actuator, and `sign`
    the sign of d(foot coordinate)/dV of that actuator (drakebots.hamr.simulation.
    ActuatorSigns), so that a positive error drives the foot towards the desired position.
    Output held between ticks (zero-order hold); clamped to [0, 225] V.

    With `centers` (the plan's mean voltage per actuator and mean leg position per coordinate)
    it also has a `stride_scale` input (4, from `HeadingController`): each leg's swing
    feed-forward and desired x (and x velocity) are scaled by its factor about those means.
    """

    def __init__(
        self,
        actuator_names,
        signs: dict,
        gains: TrackingGains,
        *,
        period: float = XPC_PERIOD_MS,
        mid_voltage: float = 112.5,
        limits=(0.0, 225.0),
        centers=None,
    ):
        super().__init__()
        m = len(actuator_names)
        legs = list(LEGS)
        self._row = np.zeros(m, dtype=int)  # index into the 8-vector of leg coordinates
        self._kp = np.zeros(m)
        self._kd = np.zeros(m)
        self._kf = np.zeros(m)
        self._sign = np.zeros(m)
        for i, name in enumerate(actuator_names):
            leg, kind = name.split("_")
            self._row[i] = 2 * legs.index(leg) + (0 if kind == "swing" else 1)
            self._kp[i] = gains.kp_swing if kind == "swing" else gains.kp_lift
            self._kd[i] = gains.kd_swing if kind == "swing" else gains.kd_lift
            self._kf[i] = gains.kf_swing if kind == "swing" else gains.kf_lift
            self._sign[i] = signs[name]
        self._mid = mid_voltage
        self._limits = limits
        self._ff = self.DeclareVectorInputPort("feedforward", m)
        self._desired = self.DeclareVectorInputPort("desired", 16)
        self._estimate = self.DeclareVectorInputPort("estimate", 16)
        self._scale = None
        if centers is not None:
            self._u_center = np.asarray(centers[0], float)
            self._leg_center = np.asarray(centers[1], float)
            # Per actuator: its leg (for the scale) and whether it is a swing actuator.
            self._leg_of = self._row // 2
            self._is_swing = self._row % 2 == 0
            self._scale = self.DeclareVectorInputPort("stride_scale", len(LEGS))
        self._state = self.DeclareDiscreteState(np.full(m, mid_voltage))
        self.DeclarePeriodicDiscreteUpdateEvent(period, 0.0, self._Update)
        self.DeclareStateOutputPort("voltage", self._state)

    def Law(self, feedforward, desired, estimate):
        e = desired[:8] - estimate[:8]
        de = desired[8:] - estimate[8:]
        u = (
            self._mid
            + self._kf * (feedforward - self._mid)
            + self._sign * (self._kp * e[self._row] + self._kd * de[self._row])
        )
        return np.clip(u, *self._limits)

    def Steer(self, feedforward, desired, scale):
        """The feed-forward and desired legs with each leg's swing scaled by `scale` (4,)."""
        s = np.where(self._is_swing, scale[self._leg_of], 1.0)
        feedforward = self._u_center + s * (feedforward - self._u_center)
        desired = desired.copy()
        x = slice(0, 8, 2)  # the legs' x rows of the 8 positions
        desired[x] = self._leg_center[x] + scale * (desired[x] - self._leg_center[x])
        desired[8:][x] *= scale
        return feedforward, desired

    def _Update(self, context, state):
        feedforward, desired = self._ff.Eval(context), self._desired.Eval(context)
        if self._scale is not None:
            feedforward, desired = self.Steer(feedforward, desired, self._scale.Eval(context))
        u = self.Law(feedforward, desired, self._estimate.Eval(context))
        state.get_mutable_vector(self._state).SetFromVector(u)


# ---------------------------------------------------------------------------- the diagram
@dataclasses.dataclass
class TrackingConfig:
    """A closed-loop run (ms, mm, V)."""

    # Number of strides to run.
    cycles: int = 10
    # Plant time step (SAP), ms.
    time_step: float = 0.1
    # Log period, ms.
    log_period: float = 0.5
    # Initial ramp of the feed-forward amplitude and desired legs, strides.
    ramp_cycles: float = 1.0
    # Transmission table samples per direction (the paper: 21).
    table_samples: int = 21
    # Noise on the mechanical current, in current units (0: none).
    current_noise: float = 0.0
    # Use the estimator (True) or the true leg positions (False: an ideal sensor).
    use_estimator: bool = True
    # How the plan's interval voltages are played: "linear" through the interval midpoints
    # (default) or "zero"-order hold (see PlanReference).
    voltage_hold: str = "linear"
    gains: TrackingGains = dataclasses.field(default_factory=TrackingGains)


@dataclasses.dataclass
class TrackingRun:
    """Logs of a closed-loop run (times ms)."""

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    voltages: np.ndarray
    legs_true: np.ndarray  # (T, 8) x, z per leg in the chassis frame
    legs_estimated: np.ndarray  # (T, 8)
    legs_desired: np.ndarray  # (T, 8)
    feet_world: np.ndarray  # (T, 4, 3)
    contact: np.ndarray  # (T, 3) ContactMonitor summary
    loop_residual: np.ndarray  # (T,)
    wall_time: float


def SimulateTracking(
    times,
    voltages,
    desired_legs,
    surface: str,
    config: TrackingConfig,
    *,
    table: TransmissionTable | None = None,
    progress=False,
) -> TrackingRun:
    """Tracks a planned stride (repeated) on the SAP plant with the estimator and Eq. 22.

    Args:
        times: (N,) knot times of one stride, ms; voltages: (N-1, 8) feed-forward, V.
        desired_legs: (N, 8) planned x, z of each leg in the chassis frame, mm.
        surface: "teflon", "cardstock" or "sandpaper".
        table: a TransmissionTable (built from the plant if None).
        progress: True for a tqdm bar, or a callable(simulated_ms, total_ms) called as the run
            advances (the Track workflow's reporter), or False.
    """
    import time as _time

    from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder
    from pydrake.systems.primitives import MatrixGain, VectorLogSink

    from drakebots.hamr.piezo import PiezoBenders
    from drakebots.hamr.robot import ACTUATOR_ORIENTATION, AddHamr
    from drakebots.hamr.simulation import (
        STICTION_TOLERANCE,
        ActuatorSigns,
        AddSurface,
        LoopResiduals,
        SurfaceSizeFor,
    )
    from drakebots.systems.simulation import AdvanceWithProgress, ContactMonitor

    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(
        MultibodyPlantConfig(
            time_step=config.time_step,
            discrete_contact_approximation="similar",
            contact_model="point",
            penetration_allowance=1e-3,
            stiction_tolerance=STICTION_TOLERANCE,
        ),
        builder,
    )
    instance = AddHamr(plant, loop_closure="ball", surface=surface)
    # Sized to the run (a fixed 400 mm surface can be walked off in a long run).
    AddSurface(plant, surface, size=SurfaceSizeFor(config.cycles * float(times[-1] - times[0])))
    plant.Finalize()
    names = [plant.get_joint_actuator(i).name() for i in plant.GetJointActuatorIndices(instance)]
    home = plant.CreateDefaultContext()
    signs = ActuatorSigns(plant, home)
    if table is None:
        scratch = plant.CreateDefaultContext()
        del scratch
        table = BuildTransmissionTable(_KinematicPlant(), samples=config.table_samples)
    home_legs = LegPositions(plant, home)[:, [0, 2]].ravel()
    period = float(times[-1] - times[0])
    plan = builder.AddSystem(
        PlanReference(
            times,
            voltages,
            desired_legs,
            ramp=config.ramp_cycles * period,
            home_legs=home_legs,
            hold=config.voltage_hold,
        )
    )
    sensor = builder.AddSystem(LegPositionSensor(plant))
    builder.Connect(plant.get_state_output_port(), sensor.get_input_port())
    steering = config.gains.k_heading > 0.0 or config.gains.k_heading_integral > 0.0
    centers = None
    if steering:
        # The plan's mean voltages (of the linear drive: the interval values' mean) and legs.
        centers = (np.mean(voltages, axis=0), np.mean(np.asarray(desired_legs)[:-1], axis=0))
    controller = builder.AddSystem(TrackingController(names, signs, config.gains, centers=centers))
    builder.Connect(plan.GetOutputPort("feedforward"), controller.GetInputPort("feedforward"))
    builder.Connect(plan.GetOutputPort("desired"), controller.GetInputPort("desired"))
    if config.use_estimator:
        mocap = builder.AddSystem(MotionCapture(8))
        builder.Connect(sensor.get_output_port(), mocap.get_input_port())
        current = builder.AddSystem(
            MechanicalCurrentSensor(plant, names, noise=config.current_noise)
        )
        builder.Connect(plant.get_state_output_port(), current.get_input_port())
        estimator = builder.AddSystem(LegPositionEstimator(table, names, initial=home_legs))
        builder.Connect(mocap.get_output_port(), estimator.GetInputPort("mocap"))
        builder.Connect(current.get_output_port(), estimator.GetInputPort("current"))
        estimate_port = estimator.get_output_port()
    else:
        ideal = builder.AddSystem(_IdealEstimate(plant))
        builder.Connect(plant.get_state_output_port(), ideal.get_input_port())
        estimate_port = ideal.get_output_port()
    builder.Connect(estimate_port, controller.GetInputPort("estimate"))
    if steering:
        # The body's lateral position and yaw from the same motion capture (500 Hz, 11 ms late).
        select = np.zeros((2, plant.num_multibody_states()))
        select[0, HamrPositionIndex(plant, "base_y")] = 1.0
        select[1, HamrPositionIndex(plant, "base_yaw")] = 1.0
        body = builder.AddSystem(MatrixGain(select))
        builder.Connect(plant.get_state_output_port(), body.get_input_port())
        body_mocap = builder.AddSystem(MotionCapture(2))
        builder.Connect(body.get_output_port(), body_mocap.get_input_port())
        heading = builder.AddSystem(HeadingController(config.gains))
        builder.Connect(body_mocap.get_output_port(), heading.get_input_port())
        builder.Connect(heading.get_output_port(), controller.GetInputPort("stride_scale"))
    piezo = builder.AddSystem(
        PiezoBenders(
            [
                plant.get_joint_actuator(i).joint().position_start()
                for i in plant.GetJointActuatorIndices(instance)
            ],
            plant.num_multibody_states(),
            [ACTUATOR_ORIENTATION[name] for name in names],
            names=names,
        )
    )
    builder.Connect(controller.get_output_port(), piezo.get_voltage_input_port())
    builder.Connect(plant.get_state_output_port(), piezo.get_state_input_port())
    builder.Connect(piezo.get_force_output_port(), plant.get_actuation_input_port(instance))
    logs = {}
    for name, port, size in [
        ("state", plant.get_state_output_port(), plant.num_multibody_states()),
        ("voltage", piezo.get_applied_voltage_output_port(), len(names)),
        ("legs", sensor.get_output_port(), 8),
        ("estimate", estimate_port, 16),
        ("desired", plan.GetOutputPort("desired"), 16),
    ]:
        logs[name] = builder.AddSystem(VectorLogSink(size, config.log_period))
        builder.Connect(port, logs[name].get_input_port())
    monitor = builder.AddSystem(ContactMonitor())
    builder.Connect(plant.get_contact_results_output_port(), monitor.get_input_port())
    logs["contact"] = builder.AddSystem(VectorLogSink(3, config.log_period))
    builder.Connect(monitor.get_output_port(), logs["contact"].get_input_port())
    diagram = builder.Build()
    simulator = Simulator(diagram)
    simulator.Initialize()
    start = _time.perf_counter()
    if callable(progress):
        duration = config.cycles * period
        for k in range(1, 101):
            simulator.AdvanceTo(duration * k / 100)
            progress(duration * k / 100, duration)
    else:
        AdvanceWithProgress(
            simulator, config.cycles * period, progress=bool(progress), label="track"
        )
    wall = _time.perf_counter() - start
    context = simulator.get_context()
    data = {name: log.FindLog(context) for name, log in logs.items()}
    count = min(len(d.sample_times()) for d in data.values())
    nq = plant.num_positions()
    x = data["state"].data().T[:count]
    positions = x[:, :nq]
    scratch = plant.CreateDefaultContext()
    feet = np.zeros((count, 4, 3))
    for k in range(count):
        plant.SetPositions(scratch, positions[k])
        for j, leg in enumerate(LEGS):
            feet[k, j] = plant.GetFrameByName(f"{leg}_foot").CalcPoseInWorld(scratch).translation()
    return TrackingRun(
        times=data["state"].sample_times()[:count],
        positions=positions,
        velocities=x[:, nq:],
        voltages=data["voltage"].data().T[:count],
        legs_true=data["legs"].data().T[:count],
        legs_estimated=data["estimate"].data().T[:count, :8],
        legs_desired=data["desired"].data().T[:count, :8],
        feet_world=feet,
        contact=data["contact"].data().T[:count],
        loop_residual=LoopResiduals(plant, positions),
        wall_time=wall,
    )


def _KinematicPlant():
    """A continuous plant for kinematics (the transmission table)."""
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.hamr.robot import AddHamr

    plant = MultibodyPlant(0.0)
    AddHamr(plant, loop_closure="none")
    plant.Finalize()
    return plant


class _IdealEstimate(LeafSystem):
    """True leg positions and velocities (an ideal sensor; for comparison runs). Double only."""

    def __init__(self, plant):
        super().__init__()
        self._plant = plant
        self._context = plant.CreateDefaultContext()
        self._nq = plant.num_positions()
        self._state = self.DeclareVectorInputPort("state", plant.num_multibody_states())
        self.DeclareVectorOutputPort("estimate", 16, self._Calc)

    def _Calc(self, context, output: BasicVector):
        x = self._state.Eval(context)
        plant, ctx = self._plant, self._context
        plant.SetPositions(ctx, x[: self._nq])
        plant.SetVelocities(ctx, x[self._nq :])
        chassis = plant.GetBodyByName("chassis").body_frame()
        p, v = [], []
        for leg in LEGS:
            foot = plant.GetFrameByName(f"{leg}_foot")
            p.append(foot.CalcPose(ctx, chassis).translation()[[0, 2]])
            v.append(foot.CalcSpatialVelocity(ctx, chassis, chassis).translational()[[0, 2]])
        output.SetFromVector(np.concatenate([np.ravel(p), np.ravel(v)]))
