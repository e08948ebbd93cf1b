"""The gecko's pneumatic actuation: calibration map, chambers and the cascaded controller of
Fig. 11B. References: the chamber's static characteristic, exact ramp integration, and a closed
loop with an instantaneous limb model (alpha = M(p) / K) whose equilibrium is known."""

import math

import numpy as np
import pytest
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import BasicVector, DiagramBuilder, LeafSystem
from pydrake.systems.primitives import ConstantVectorSource

from drakebots.gecko.model import ChamberParams, GeckoParams
from drakebots.gecko.pneumatics import (
    CascadedLimbController,
    CascadeGains,
    EquilibriumPressures,
    PneumaticChambers,
    PressureCalibration,
)

PARAMS = GeckoParams()


def _Calibration():
    return PressureCalibration(PARAMS.chamber, PARAMS.limb_stiffness)


def test_calibration_inverts_the_static_characteristic():
    calibration = _Calibration()
    assert calibration.residual_max < 0.01  # bar: a 5th-order polynomial fits the map
    # The gait law's largest references (157.5 deg legs, 135 deg torso) are within the range.
    assert calibration.max_angle > math.radians(160)
    for alpha in np.radians([5.0, 45.0, 90.0, 135.0, 157.5]):
        p = float(calibration.Pressure(alpha))
        assert float(calibration.StaticAngle(p)) == pytest.approx(alpha, abs=math.radians(0.5))
    assert float(calibration.Pressure(-0.3)) == 0.0
    assert float(calibration.Pressure(10.0)) == PARAMS.chamber.max_pressure  # clipped at 1.1 bar


def test_chambers_integrate_the_valve_exactly_and_clip():
    chamber = ChamberParams()
    period = 0.002
    builder = DiagramBuilder()
    chambers = builder.AddSystem(PneumaticChambers(chamber, period, np.full(6, 0.5)))
    valve = builder.AddSystem(ConstantVectorSource(np.array([1.0, -1.0, 0.5, 0.0, 2.0, -0.25])))
    builder.Connect(valve.get_output_port(), chambers.get_valve_commands_input_port())
    simulator = Simulator(builder.Build())
    simulator.AdvanceTo(0.2)
    context = chambers.GetMyContextFromRoot(simulator.get_context())
    p = chambers.GetOutputPort("pressures").Eval(context)
    rate = chamber.max_pressure_rate
    steps = round(0.2 / period)  # updates at 0, h, ..., 0.2 - h
    expected = 0.5 + rate * period * steps * np.array([1.0, -1.0, 0.5, 0.0, 1.0, -0.25])
    np.testing.assert_allclose(p, np.clip(expected, 0.0, 1.5), atol=1e-12)
    moments = chambers.GetOutputPort("limb_moments").Eval(context)
    m = chamber.Moment(p)
    np.testing.assert_allclose(moments, [m[0], m[1], m[2] - m[3], m[4], m[5]], atol=1e-15)


class _StaticLimbs(LeafSystem):
    """alpha = M(p) / K: limbs that settle instantly (the pneumatics' load); or, with `blocked`,
    limbs held at fixed angles whatever the pressure."""

    def __init__(self, stiffness, blocked=None):
        super().__init__()
        self._moments = self.DeclareVectorInputPort("limb_moments", 5)
        self.blocked = None if blocked is None else np.asarray(blocked, float)
        self.stiffness = stiffness
        self.DeclareVectorOutputPort("angles", 5, self._Calc)

    def _Calc(self, context, output: BasicVector):
        if self.blocked is not None:
            output.SetFromVector(self.blocked)
        else:
            output.SetFromVector(self._moments.Eval(context) / self.stiffness)


def _Loop(alpha_ref, blocked=None, duration=4.0):
    calibration = _Calibration()
    builder = DiagramBuilder()
    chambers = builder.AddSystem(PneumaticChambers(PARAMS.chamber, 0.002))
    controller = builder.AddSystem(CascadedLimbController(calibration, CascadeGains()))
    limbs = builder.AddSystem(_StaticLimbs(PARAMS.limb_stiffness, blocked))
    reference = builder.AddSystem(ConstantVectorSource(np.asarray(alpha_ref, float)))
    builder.Connect(reference.get_output_port(), controller.get_reference_angles_input_port())
    builder.Connect(limbs.get_output_port(), controller.get_measured_angles_input_port())
    builder.Connect(chambers.GetOutputPort("pressures"), controller.get_pressures_input_port())
    builder.Connect(
        controller.GetOutputPort("valve_commands"), chambers.get_valve_commands_input_port()
    )
    builder.Connect(chambers.GetOutputPort("limb_moments"), limbs.get_input_port())
    simulator = Simulator(builder.Build())
    simulator.AdvanceTo(duration)
    root = simulator.get_context()
    return (
        limbs.get_output_port().Eval(limbs.GetMyContextFromRoot(root)),
        chambers.GetOutputPort("pressures").Eval(chambers.GetMyContextFromRoot(root)),
        controller.GetOutputPort("pressure_references").Eval(controller.GetMyContextFromRoot(root)),
        calibration,
    )


def test_cascade_reaches_the_reference_angles():
    """Free limbs: feed forward + PI + inner PID bring every limb, the torso both ways, to its
    reference, and the pressures to their references."""
    alpha_ref = np.radians([20.0, 150.0, -100.0, 90.0, 0.0])
    alpha, pressures, references, _ = _Loop(alpha_ref)
    np.testing.assert_allclose(alpha, alpha_ref, atol=math.radians(0.5))
    np.testing.assert_allclose(pressures, references, atol=2e-3)
    assert pressures[2] == pytest.approx(0.0, abs=1e-9)  # torso bent right: left chamber empty
    assert pressures[3] > 0.5


@pytest.mark.parametrize("shortfall", [0.08, 0.5])
def test_outer_loop_correction_is_saturated_and_does_not_wind_up(shortfall):
    """Limbs held short of their reference by `shortfall` rad whatever the pressure. Within the
    integration window (0.1 rad) the PI correction grows to its saturation, +0.1 bar above the
    feed forward, and stays there (the robot stays soft); outside it only the proportional part
    acts (no wind-up during large reference jumps)."""
    gains = CascadeGains()
    alpha_ref = np.radians([60.0, 60.0, 60.0, 60.0, 60.0])
    _, _, references, calibration = _Loop(alpha_ref, blocked=alpha_ref - shortfall, duration=8.0)
    feed = calibration.Pressure(alpha_ref)
    if shortfall < gains.angle_integration_window:
        correction = gains.angle_correction_max
    else:
        correction = min(gains.angle_kp * shortfall, gains.angle_correction_max)
    np.testing.assert_allclose(references[[0, 1, 4, 5]], feed[[0, 1, 3, 4]] + correction, atol=1e-9)
    assert references[2] == pytest.approx(feed[2] + correction, abs=1e-9)
    assert references[3] == 0.0


def test_equilibrium_pressures_hold_the_home_pose():
    calibration = _Calibration()
    alpha = np.radians([0.0, 90.0, -90.0, 0.0, 90.0])
    p = EquilibriumPressures(calibration, alpha)
    assert p[0] == 0.0 and p[2] == 0.0 and p[3] > 0.0
    moments = PARAMS.chamber.Moment(p)
    angles = np.array([moments[0], moments[1], moments[2] - moments[3], moments[4], moments[5]])
    np.testing.assert_allclose(angles / PARAMS.limb_stiffness, alpha, atol=math.radians(0.5))
