"""Open-loop gaits of HAMR-VI: sinusoidal drive voltages for its eight piezoelectric benders.

These are the paper's "manually tuned" baseline gaits (section III-A, V-A: "a heuristic trot gait
that achieves roughly periodic locomotion", used to warm-start the optimizer) and the reference's
open-loop drives: each leg's foot follows an ellipse in the body's x-z plane,

    x_foot ∝ -cos(2π f t + φ_leg + λ),   z_foot ∝ sin(2π f t + φ_leg),

so with the swing lead λ = 0 (the default) a foot moves forward while it is up and backward
(propelling the body) while it is down. The
swing actuator drives leg x and the lift actuator drives leg z (the transmission is nominally
decoupled, paper section II-A), so each actuator's voltage is the mid voltage plus an amplitude
times its leg-space signal, with the sign that makes the foot move the intended way: the sign of
the transmission ratio (∂x_foot/∂q_swing, ∂z_foot/∂q_lift from `LegTransmissionJacobian`) times
the sign of ∂F/∂V of the bender (-orientation).

Gaits (phase φ per leg):
- ``trot``: diagonal pairs in antiphase (FL & RR at 0, FR & RL at π), the reference's trot
  (swing at sin(ωt + π/2), lift at sin(ωt) or sin(ωt + π) by diagonal pair).
- ``pronk``: all four legs in phase. With λ = 0 it walks forward at 2, 5, 20 and 30 Hz
  (cardstock, 90 V: 5.2, 7.0, 4.0, 2.9 mm/cycle) but not at 10 Hz (cardstock -0.8, teflon -5.8,
  sandpaper +5.8 mm/cycle): there the whole body hops (10.4-14.4 mm; all four feet off the
  ground 38 % of the time), so what propels it is the foot's stroke during the push-off, not
  while the foot is low in the body frame. A swing lead of 90° (λ = π/2: the foot moves back
  while the leg extends and forward while it retracts) gives +7.2 (cardstock), +5.0 (teflon)
  and +3.6 (sandpaper) mm/cycle at 10 Hz (sweep on cardstock, deg -> mm/cycle: 0 -0.8, 45 4.4,
  60 6.5, 90 7.2, 120 7.6, 135 6.7, 180 1.6, 270 -6.7), but only 0.2 at 2 Hz and 1.5 at 5 Hz.
  The lead is an option (`--swing-lead`), not a default that would fit one frequency.
- ``jump``: the jump drive: swing actuators at the mid voltage; the lift actuators retract the
  legs smoothly over half a period 1/(2f) (the body crouches, loading the flexures and the
  actuator springs), then switch at once to full extension and hold it (the paper's optimized
  jump does the same: "all four legs first build spring potential energy, and then
  simultaneously push into the ground", section VI-B).
- ``stand``: every actuator at the mid voltage (zero force at zero deflection).

Amplitudes ramp up linearly over the first `ramp_cycles` periods (trot, pronk) to avoid a start
transient, as the paper's experiments do ("each gait is executed ... with an initial voltage
ramp", section V-A).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from pydrake.systems.framework import BasicVector, LeafSystem

GAITS = ("stand", "trot", "pronk", "jump")

_PHASES = {
    "trot": {"FL": 0.0, "RR": 0.0, "FR": math.pi, "RL": math.pi},
    "pronk": {"FL": 0.0, "RR": 0.0, "FR": 0.0, "RL": 0.0},
}


@dataclasses.dataclass
class GaitParams:
    """An open-loop gait (voltages in V, frequency in Hz, time in the simulation's ms).

    Attributes:
        gait: "stand", "trot", "pronk" or "jump".
        frequency: stride frequency, Hz.
        swing_amplitude: swing voltage amplitude about the mid voltage, V.
        lift_amplitude: lift voltage amplitude about the mid voltage, V.
        mid_voltage: the voltage of zero bender force, V (V_b / 2 = 112.5 V).
        ramp_cycles: periods over which the amplitude ramps from 0 (trot, pronk).
        swing_lead: phase by which every swing signal leads its default, rad (trot, pronk; see
            the module docstring).
    """

    gait: str = "trot"
    frequency: float = 10.0
    swing_amplitude: float = 90.0
    lift_amplitude: float = 90.0
    mid_voltage: float = 112.5
    ramp_cycles: float = 1.0
    swing_lead: float = 0.0

    def __post_init__(self):
        if self.gait not in GAITS:
            raise ValueError(f"unknown gait '{self.gait}'; known gaits: {', '.join(GAITS)}")
        if not self.frequency > 0.0:
            raise ValueError(f"gait frequency must be > 0 Hz, got {self.frequency}")
        if not math.isfinite(self.swing_lead):
            raise ValueError(f"swing lead must be finite, got {self.swing_lead}")


def GaitLegSignals(params: GaitParams, t_ms: float, legs) -> dict[str, tuple[float, float]]:
    """Leg -> (swing, lift) signals in [-1, 1] at time t (ms): +1 swing = foot forward (+x),
    +1 lift = foot up (+z), before the ramp and the voltage mapping."""
    omega = 2.0 * math.pi * params.frequency * 1e-3  # rad/ms
    if params.gait == "stand":
        return {leg: (0.0, 0.0) for leg in legs}
    if params.gait == "jump":
        half = 0.5 / (params.frequency * 1e-3)  # ms
        if t_ms < half:
            lift = 0.5 * (1.0 - math.cos(math.pi * t_ms / half))
        else:
            lift = -1.0
        return {leg: (0.0, lift) for leg in legs}
    phases = _PHASES[params.gait]
    ramp_ms = params.ramp_cycles / (params.frequency * 1e-3)
    scale = min(1.0, t_ms / ramp_ms) if ramp_ms > 0 else 1.0
    signals = {}
    for leg in legs:
        theta = omega * t_ms + phases[leg]
        signals[leg] = (-scale * math.cos(theta + params.swing_lead), scale * math.sin(theta))
    return signals


class GaitVoltageSource(LeafSystem):
    """Sinusoidal drive voltages for HAMR's 8 actuators.

    Double only.

    GaitVoltageSource -> voltage

    Args:
        params: the gait.
        actuator_legs: for each output, (leg, "swing" or "lift"), in actuator order.
        signs: for each output, ±1 mapping its leg-space signal to a voltage offset (positive:
            a higher voltage moves the foot forward / up).

    The output is V_mid + sign · amplitude · signal(t) (time in ms).
    """

    def __init__(self, params: GaitParams, actuator_legs, signs):
        super().__init__()
        self._params = params
        self._actuators = list(actuator_legs)
        self._signs = np.asarray(signs, float)
        self._legs = sorted({leg for leg, _ in self._actuators})
        self.DeclareVectorOutputPort("voltage", len(self._actuators), self._CalcVoltage)

    def Voltages(self, t_ms: float) -> np.ndarray:
        """The drive voltages at time t (ms)."""
        p = self._params
        signals = GaitLegSignals(p, t_ms, self._legs)
        voltages = np.empty(len(self._actuators))
        for k, (leg, kind) in enumerate(self._actuators):
            swing, lift = signals[leg]
            if kind == "swing":
                voltages[k] = p.mid_voltage + self._signs[k] * p.swing_amplitude * swing
            else:
                voltages[k] = p.mid_voltage + self._signs[k] * p.lift_amplitude * lift
        return voltages

    def _CalcVoltage(self, context, output: BasicVector):
        output.SetFromVector(self.Voltages(context.get_time()))
