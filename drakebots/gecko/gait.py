"""The gecko's gait law and gait pattern generator as Drake LeafSystems (double only).

    gait (q1 [deg], q2) -> GaitLawSource -> reference_angles (5, rad), fixation (4)
    pose (x, y, eps)    -> GaitPatternGenerator -> gait (q1, q2), status

`GaitLawSource` turns a gait (q1, q2) into the references of the paper's Eq. 14 and the diagonal
fixation of Eq. 1, alternating every half cycle (Eq. 15) with the timing of `GaitTiming`: a half
cycle releases the previous stance (0.25 s), moves to the new reference (2 s), fixes the other
diagonal (0.25 s). It latches the gait at the start of each move.

`GaitPatternGenerator` is Algorithm 1 in closed loop (Fig. 11A): at the start of every half cycle
it reads the measured pose, switches to the next target once within epsilon (5 cm), and asks a
planner for the gait that brings the robot closest to the target (a
drakebots.gecko.planner.GaitPatternPlanner; passed in, so this layer does not import
the optimization layer).
`PlanarPoseSensor` reads the pose (x, y, eps) of the base body from the plant's body poses.
"""

from __future__ import annotations

import math

import numpy as np
from pydrake.common.value import Value
from pydrake.math import RigidTransform
from pydrake.systems.framework import BasicVector, LeafSystem

from drakebots.gecko.geometry import (
    FixationOf,
    GaitLawDeg,
    GaitTiming,
    HalfCycleOf,
    HomeAnglesDeg,
)


class GaitSchedule:
    """When the gait law's phases begin (Eq. 15 with the paper's timing).

    Args:
        timing: GaitTiming.
        first_sign: sign of the first half cycle's pose (-1: from the home pose alpha(+90) to
            alpha(-|q1|)).
    """

    def __init__(self, timing: GaitTiming | None = None, first_sign: float = -1.0):
        self.timing = timing or GaitTiming()
        self.first_sign = first_sign

    def HalfCycleIndex(self, t: float) -> int:
        return int(math.floor(t / self.timing.half_cycle + 1e-9))

    def Fixation(self, t: float) -> np.ndarray:
        """Feet fixed at time t (FL, FR, HL, HR)."""
        timing = self.timing
        k = self.HalfCycleIndex(t)
        phase = t - k * timing.half_cycle
        half = HalfCycleOf(k, 90.0, 0.0, first_sign=self.first_sign)
        if phase < timing.t_release + timing.t_move - 1e-9:
            return half.stance
        return half.stance | half.next_stance

    def MoveStart(self, k: int) -> float:
        return k * self.timing.half_cycle + self.timing.t_release

    def FixationEvents(self, t_start: float, t_end: float) -> list[float]:
        """Times in (t_start, t_end] at which the fixation changes."""
        timing = self.timing
        times = []
        k = max(0, self.HalfCycleIndex(t_start) - 1)
        while k * timing.half_cycle <= t_end + 1e-12:
            for t in (
                k * timing.half_cycle,
                k * timing.half_cycle + timing.t_release + timing.t_move,
            ):
                if t_start + 1e-12 < t <= t_end + 1e-12:
                    times.append(t)
            k += 1
        return sorted(times)


class GaitLawSource(LeafSystem):
    """Reference angles and fixation from a gait (q1, q2): the gait law of Eqs. 14-15.

    gait (2: q1 [deg, its magnitude is used], q2) -> GaitLawSource
        -> reference_angles (5, rad), fixation (4, 1 = fixed), latched_gait (2)

    At the start of each move phase it latches the gait input and sets the reference to
    alpha(s_k |q1|, q2), s_k alternating (Eq. 15); the fixation output follows the schedule.
    With `hold=True` it keeps the initial reference and stance (the robot stands).

    Args:
        timing: GaitTiming.
        initial_alpha_deg: reference before the first move (default: the home pose), deg.
        hold: stand still instead of walking.
        c1: the gait law's additional leg bending (paper: 1).
    """

    def __init__(
        self,
        timing: GaitTiming | None = None,
        *,
        initial_alpha_deg=None,
        hold: bool = False,
        c1: float = 1.0,
    ):
        super().__init__()
        self.schedule = GaitSchedule(timing)
        self.timing = self.schedule.timing
        self.hold = hold
        self.c1 = c1
        alpha0 = HomeAnglesDeg() if initial_alpha_deg is None else np.asarray(initial_alpha_deg)
        self.initial_stance = FixationOf(alpha0[2])
        # State: reference angles (5, rad), latched gait (2), half-cycle count (1).
        self._state = self.DeclareDiscreteState(
            np.concatenate([np.radians(alpha0), [0.0, 0.0], [-1.0]])
        )
        self._gait_port = self.DeclareVectorInputPort("gait", 2)
        if not hold:
            self.DeclarePeriodicDiscreteUpdateEvent(
                self.timing.half_cycle, self.timing.t_release, self._Latch
            )
        self.DeclareVectorOutputPort(
            "reference_angles", 5, self._CalcReference, prerequisites_of_calc={self.xd_ticket()}
        )
        self.DeclareVectorOutputPort(
            "fixation", 4, self._CalcFixation, prerequisites_of_calc={self.time_ticket()}
        )
        self.DeclareVectorOutputPort(
            "latched_gait", 2, self._CalcLatched, prerequisites_of_calc={self.xd_ticket()}
        )

    def get_gait_input_port(self):
        return self._gait_port

    def Fixation(self, t: float) -> np.ndarray:
        if self.hold:
            return self.initial_stance.copy()
        return self.schedule.Fixation(t)

    def _Latch(self, context, discrete_state):
        t = context.get_time()
        k = self.schedule.HalfCycleIndex(t)
        q1, q2 = self._gait_port.Eval(context)
        half = HalfCycleOf(k, abs(q1), q2, first_sign=self.schedule.first_sign)
        alpha = GaitLawDeg(half.sign * abs(q1), q2, c1=self.c1)
        discrete_state.get_mutable_vector().SetFromVector(
            np.concatenate([np.radians(alpha), [abs(q1), q2], [float(k)]])
        )

    def _CalcReference(self, context, output: BasicVector):
        output.SetFromVector(context.get_discrete_state_vector().value()[0:5])

    def _CalcFixation(self, context, output: BasicVector):
        output.SetFromVector(self.Fixation(context.get_time()).astype(float))

    def _CalcLatched(self, context, output: BasicVector):
        output.SetFromVector(context.get_discrete_state_vector().value()[5:7])


class PlanarPoseSensor(LeafSystem):
    """The measured pose (x, y, eps) of one body lying flat (the camera of Fig. 2B).

    body_poses -> PlanarPoseSensor -> pose (3: x [m], y [m], eps [rad] in (-pi, pi])

    Args:
        body_index: the plant body whose pose is measured (the torso's middle segment).
    """

    def __init__(self, body_index):
        super().__init__()
        self._index = int(body_index)
        self._poses_port = self.DeclareAbstractInputPort(
            "body_poses", Value[list[RigidTransform]]()
        )
        self.DeclareVectorOutputPort("pose", 3, self._CalcPose)

    def get_body_poses_input_port(self):
        return self._poses_port

    def _CalcPose(self, context, output: BasicVector):
        X = self._poses_port.Eval(context)[self._index]
        R = X.rotation().matrix()
        p = X.translation()
        output.SetFromVector([p[0], p[1], math.atan2(R[1, 0], R[0, 0])])


class GaitPatternGenerator(LeafSystem):
    """Algorithm 1 in closed loop: re-plans the gait every half cycle from the measured pose.

    pose (3) -> GaitPatternGenerator -> gait (2: q1 [deg], q2),
        status (8: target index, horizon n, d0 [m], d_n [m], steps, done, decision seconds,
        targets reached)

    At t = k * half_cycle it reads the pose; while the current target is within epsilon it
    advances to the next one (all reached: done); otherwise it plans (q1, q2) with the
    motion-per-cycle polynomial (Eqs. 17-22). Discrete state only.

    Args:
        planner: has `Decide(pose, target) -> decision` (with q1, q2, n, d0, dn, seconds) and
            `params.epsilon` [m], `params.start` (q1, q2): a GaitPatternPlanner built on the
            motion-per-cycle polynomial (own fit or the paper's Table 3).
        targets: (K, 2) targets in the world, m.
        timing: GaitTiming (its half cycle is the sampling period).
    """

    STATUS = ("target", "horizon", "d0", "dn", "steps", "done", "decision_seconds", "reached")

    def __init__(self, planner, targets, timing: GaitTiming | None = None):
        super().__init__()
        self.planner = planner
        self.params = planner.params
        self.targets = np.asarray(targets, dtype=float).reshape(-1, 2)
        self.timing = timing or GaitTiming()
        start = self.params.start
        self.DeclareDiscreteState(np.concatenate([[start[0], start[1]], np.zeros(8)]))
        self._pose_port = self.DeclareVectorInputPort("pose", 3)
        self.DeclarePeriodicDiscreteUpdateEvent(self.timing.half_cycle, 0.0, self._Plan)
        self.DeclareVectorOutputPort(
            "gait", 2, self._CalcGait, prerequisites_of_calc={self.xd_ticket()}
        )
        self.DeclareVectorOutputPort(
            "status", 8, self._CalcStatus, prerequisites_of_calc={self.xd_ticket()}
        )

    def get_pose_input_port(self):
        return self._pose_port

    def _Plan(self, context, discrete_state):
        x = np.array(context.get_discrete_state_vector().value())
        q, status = x[0:2], x[2:10]
        target, steps, done, reached = int(status[0]), int(status[4]), status[5], int(status[7])
        if done:
            return
        pose = self._pose_port.Eval(context)
        epsilon = self.params.epsilon
        while target < len(self.targets):
            d0 = float(np.hypot(*(self.targets[target] - pose[:2])))
            if d0 >= epsilon:
                break
            target += 1
            reached += 1
        if target >= len(self.targets):
            status[:] = [len(self.targets) - 1, 0, d0, d0, steps, 1.0, 0.0, reached]
            discrete_state.get_mutable_vector().SetFromVector(np.concatenate([q, status]))
            return
        decision = self.planner.Decide(pose, self.targets[target])
        status[:] = [
            target,
            decision.n,
            decision.d0,
            decision.dn,
            steps + 1,
            0.0,
            decision.seconds,
            reached,
        ]
        discrete_state.get_mutable_vector().SetFromVector(
            np.concatenate([[decision.q1, decision.q2], status])
        )

    def _CalcGait(self, context, output: BasicVector):
        output.SetFromVector(context.get_discrete_state_vector().value()[0:2])

    def _CalcStatus(self, context, output: BasicVector):
        output.SetFromVector(context.get_discrete_state_vector().value()[2:10])
