"""Pneumatic actuation of the gecko's limbs: calibration map, chambers, and the cascaded controller
of the paper's Fig. 11B, as Drake LeafSystems (double only).

Fig. 11B, for each actuator: the reference bending angle is mapped by a calibration function
p(alpha) to a reference pressure (feed forward), corrected by a saturated PI controller on the
angle error (feedback, low gain to keep the robot soft); an inner PID loop drives a proportional
valve so that the chamber pressure follows the reference. The gecko has six chambers for five
limbs (reference README): one per leg and two in the torso (left and right), which bend the torso
in opposite directions.

    reference_angles, measured_angles, pressures -> CascadedLimbController -> valve_commands
    valve_commands -> PneumaticChambers -> pressures, limb_moments

Chamber model (this project's, not the paper's): the valve changes the pressure at a rate
proportional to its opening, dp/dt = r_max u with u in [-1, 1] and p >= 0 (gauge, bar); the chamber
bends its limb with the moment M(p) = c p (1 + b p) (ChamberParams), against the limb's elastic
stiffness (a RevoluteSpring in the model). Its static characteristic alpha(p) = M(p) / K is what a
calibration measures; `PressureCalibration` fits the 5th-order polynomial p(alpha) to it and clips
at 1.1 bar, as the authors calibrate each actuator (reference README).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydrake.systems.framework import BasicVector, LeafSystem

from drakebots.gecko.model import ChamberParams

# Chamber order: front-left leg, front-right leg, torso left, torso right, hind-left, hind-right.
CHAMBERS = ("front_left", "front_right", "torso_left", "torso_right", "hind_left", "hind_right")
# Limb moment = sum over chambers of sign * M(p): chamber -> (limb index, sign).
CHAMBER_LIMB = {0: (0, 1.0), 1: (1, 1.0), 2: (2, 1.0), 3: (2, -1.0), 4: (3, 1.0), 5: (4, 1.0)}


class PressureCalibration:
    """The calibration map p(alpha) of one chamber type: a 5th-order polynomial.

    Fitted by least squares to the static characteristic alpha(p) = M(p) / K sampled on a pressure
    grid from 0 to the clip pressure, like a bench calibration. Reference pressures are clipped at
    `chamber.max_pressure` (1.1 bar).

    Args:
        chamber: the chamber model.
        stiffness: the limb's bending stiffness, N·m/rad.
        order: polynomial order (the authors use 5).
        samples: calibration points.
    """

    def __init__(self, chamber: ChamberParams, stiffness: float, order: int = 5, samples: int = 60):
        self.chamber = chamber
        self.stiffness = float(stiffness)
        pressures = np.linspace(0.0, chamber.max_pressure, samples)
        angles = chamber.Moment(pressures) / self.stiffness
        self.max_angle = float(angles[-1])  # rad, the largest calibrated bending angle
        self.polynomial = np.polynomial.Polynomial.fit(angles, pressures, order)
        residual = self.polynomial(angles) - pressures
        self.residual_max = float(np.max(np.abs(residual)))  # bar
        self.samples = (angles, pressures)

    def StaticAngle(self, pressure_bar):
        """The actuator's true static angle at a pressure (no load), rad."""
        return self.chamber.Moment(pressure_bar) / self.stiffness

    def Pressure(self, alpha):
        """Reference pressure for a bending angle (rad): p(alpha), 0 for alpha <= 0, clipped."""
        alpha = np.asarray(alpha, dtype=float)
        p = self.polynomial(np.clip(alpha, 0.0, None))
        return np.where(alpha <= 0.0, 0.0, np.clip(p, 0.0, self.chamber.max_pressure))


@dataclasses.dataclass
class CascadeGains:
    """Gains of Fig. 11B. Not from the paper (the authors do not publish theirs)."""

    # Outer loop (angle): proportional, bar/rad.
    angle_kp: float = 0.05
    # Outer loop: integral, bar/(rad·s).
    angle_ki: float = 0.2
    # Saturation of the outer loop's correction, bar ("low gain keeps the robot soft").
    angle_correction_max: float = 0.1
    # The angle integrator runs only while |error| is below this, rad (integrator separation:
    # during a half cycle's 90-degree reference jump it would otherwise wind up to the
    # saturation and overshoot the new pose by about 5 degrees for seconds).
    angle_integration_window: float = 0.1
    # Inner loop (pressure): proportional, valve opening per bar.
    pressure_kp: float = 8.0
    # Inner loop: integral, 1/(bar·s).
    pressure_ki: float = 4.0
    # Inner loop: derivative, s/bar.
    pressure_kd: float = 0.02
    # Controller sampling period, s.
    period: float = 0.005


class CascadedLimbController(LeafSystem):
    """The cascaded controller of Fig. 11B for the six chambers (double only).

    reference_angles (5, rad), measured_angles (5, rad), pressures (6, bar)
        -> CascadedLimbController -> valve_commands (6, [-1, 1]), pressure_references (6, bar)

    Outer loop per limb: p_ff = p(alpha_ref) from the calibration, plus a saturated PI correction on
    alpha_ref - alpha (anti-windup: the integrator is clamped to the saturation, integrates only
    within `angle_integration_window` of the reference, and restarts from zero when the reference
    changes). The torso's signed
    command sign(alpha_ref) p(|alpha_ref|) + correction goes to its left chamber when positive and
    to its right chamber when negative. Inner loop per chamber: PID on p_ref - p, the valve opening
    clipped to [-1, 1] (conditional integration as anti-windup). Discrete, sampled every
    `gains.period`; outputs come from the state (no direct feedthrough).

    Args:
        calibration: the chambers' calibration map.
        gains: CascadeGains.
        initial_pressures: (6,) pressures at t = 0 (so the controller starts in equilibrium).
    """

    def __init__(
        self,
        calibration: PressureCalibration,
        gains: CascadeGains | None = None,
        initial_pressures=None,
    ):
        super().__init__()
        self.calibration = calibration
        self.gains = gains or CascadeGains()
        self.max_pressure = calibration.chamber.max_pressure
        p0 = np.zeros(6) if initial_pressures is None else np.asarray(initial_pressures, float)
        # State: angle integrators (5), pressure integrators (6), previous pressure errors (6),
        # valve commands (6), pressure references (6), previous angle references (5).
        x0 = np.concatenate([np.zeros(5), np.zeros(6), np.zeros(6), np.zeros(6), p0, np.zeros(5)])
        self._state = self.DeclareDiscreteState(x0)
        self._reference_port = self.DeclareVectorInputPort("reference_angles", 5)
        self._angle_port = self.DeclareVectorInputPort("measured_angles", 5)
        self._pressure_port = self.DeclareVectorInputPort("pressures", 6)
        self.DeclarePeriodicDiscreteUpdateEvent(self.gains.period, 0.0, self._Update)
        self.DeclareVectorOutputPort(
            "valve_commands", 6, self._CalcValve, prerequisites_of_calc={self.xd_ticket()}
        )
        self.DeclareVectorOutputPort(
            "pressure_references", 6, self._CalcReference, prerequisites_of_calc={self.xd_ticket()}
        )

    def get_reference_angles_input_port(self):
        return self._reference_port

    def get_measured_angles_input_port(self):
        return self._angle_port

    def get_pressures_input_port(self):
        return self._pressure_port

    def PressureReferences(self, alpha_ref, correction) -> np.ndarray:
        """Six chamber pressure references from five angle references (rad) and corrections
        (bar): the feed forward of Fig. 11B plus the outer loop's output."""
        alpha_ref = np.asarray(alpha_ref, dtype=float)
        feed = self.calibration.Pressure(np.abs(alpha_ref))
        command = feed + correction
        torso = np.sign(alpha_ref[2]) * feed[2] + correction[2]
        p = np.array([command[0], command[1], torso, -torso, command[3], command[4]], dtype=float)
        return np.clip(p, 0.0, self.max_pressure)

    def _Update(self, context, discrete_state):
        g = self.gains
        h = g.period
        x = np.array(context.get_discrete_state_vector().value())
        i_angle, i_pressure, e_prev, previous_ref = x[0:5], x[5:11], x[11:17], x[29:34]
        alpha_ref = self._reference_port.Eval(context)
        # A new reference (the next half cycle's pose) starts its integrator from zero: what the
        # integrator learnt about the previous pose's load does not apply to the new one.
        i_angle = np.where(np.abs(alpha_ref - previous_ref) > 1e-9, 0.0, i_angle)
        alpha = self._angle_port.Eval(context)
        pressure = self._pressure_port.Eval(context)
        # Outer loop: saturated PI on the angle error (Fig. 11B), integrator clamped to the
        # saturation and run only near the reference (integrator separation).
        e_angle = alpha_ref - alpha
        limit = g.angle_correction_max
        near = np.abs(e_angle) < g.angle_integration_window
        i_angle = np.clip(i_angle + near * g.angle_ki * e_angle * h, -limit, limit)
        correction = np.clip(g.angle_kp * e_angle + i_angle, -limit, limit)
        p_ref = self.PressureReferences(alpha_ref, correction)
        # Inner loop: PID on the pressure error, valve opening in [-1, 1].
        e = p_ref - pressure
        derivative = (e - e_prev) / h
        unsaturated = g.pressure_kp * e + i_pressure + g.pressure_kd * derivative
        saturated = np.abs(unsaturated) >= 1.0
        grows = np.sign(unsaturated) == np.sign(e)
        i_pressure = np.where(saturated & grows, i_pressure, i_pressure + g.pressure_ki * e * h)
        u = np.clip(g.pressure_kp * e + i_pressure + g.pressure_kd * derivative, -1.0, 1.0)
        discrete_state.get_mutable_vector().SetFromVector(
            np.concatenate([i_angle, i_pressure, e, u, p_ref, alpha_ref])
        )

    def _CalcValve(self, context, output: BasicVector):
        output.SetFromVector(context.get_discrete_state_vector().value()[17:23])

    def _CalcReference(self, context, output: BasicVector):
        output.SetFromVector(context.get_discrete_state_vector().value()[23:29])


class PneumaticChambers(LeafSystem):
    """Six pneumatic chambers behind proportional valves (double only).

    valve_commands (6, [-1, 1]) -> PneumaticChambers -> pressures (6, bar), limb_moments (5, N·m)

    dp/dt = max_pressure_rate * u, integrated exactly over each period (u is held), p kept
    in [0, supply_pressure]. Limb moments: M(p) per leg chamber; the torso's left chamber bends it
    positively, its right chamber negatively.

    Args:
        chamber: chamber and valve parameters.
        period: update period, s (the plant's time step).
        initial_pressures: (6,) gauge pressures at t = 0, bar.
        supply_pressure: the supply, bar.
    """

    def __init__(
        self,
        chamber: ChamberParams,
        period: float,
        initial_pressures=None,
        supply_pressure: float = 1.5,
    ):
        super().__init__()
        self.chamber = chamber
        self.period = float(period)
        self.supply_pressure = float(supply_pressure)
        p0 = np.zeros(6) if initial_pressures is None else np.asarray(initial_pressures, float)
        self.DeclareDiscreteState(p0)
        self._valve_port = self.DeclareVectorInputPort("valve_commands", 6)
        self.DeclarePeriodicDiscreteUpdateEvent(self.period, 0.0, self._Update)
        self.DeclareVectorOutputPort(
            "pressures", 6, self._CalcPressures, prerequisites_of_calc={self.xd_ticket()}
        )
        self.DeclareVectorOutputPort(
            "limb_moments", 5, self._CalcMoments, prerequisites_of_calc={self.xd_ticket()}
        )

    def get_valve_commands_input_port(self):
        return self._valve_port

    def LimbMoments(self, pressures) -> np.ndarray:
        """Five limb bending moments (N·m) from six chamber pressures (bar)."""
        m = self.chamber.Moment(pressures)
        return np.array([m[0], m[1], m[2] - m[3], m[4], m[5]])

    def _Update(self, context, discrete_state):
        p = np.array(context.get_discrete_state_vector().value())
        u = np.clip(self._valve_port.Eval(context), -1.0, 1.0)
        p = np.clip(p + self.chamber.max_pressure_rate * u * self.period, 0.0, self.supply_pressure)
        discrete_state.get_mutable_vector().SetFromVector(p)

    def _CalcPressures(self, context, output: BasicVector):
        output.SetFromVector(context.get_discrete_state_vector().value())

    def _CalcMoments(self, context, output: BasicVector):
        output.SetFromVector(self.LimbMoments(context.get_discrete_state_vector().value()))


def EquilibriumPressures(calibration: PressureCalibration, alpha) -> np.ndarray:
    """Chamber pressures (bar) that hold the free limbs at angles alpha (rad): the calibration's
    feed forward with no correction."""
    alpha = np.asarray(alpha, dtype=float)
    p = calibration.Pressure(np.abs(alpha))
    torso = np.sign(alpha[2]) * p[2]
    return np.clip(np.array([p[0], p[1], torso, -torso, p[3], p[4]]), 0.0, None)
