"""The piezoelectric bender model (paper Eq. 3; the authors' PZTBender facts) and its LeafSystem.

Independent references: the authors' actuator spring in their URDF (1.1556 N/mm, a number they
wrote down separately from the force model), identities of the simultaneous drive (no force at
the mid voltage and zero deflection, antisymmetry about it), and central finite differences of
the hand-written derivatives.
"""

import logging

import numpy as np
import pytest

from drakebots.hamr import piezo as dut
from drakebots.hamr.model import JOINTS


def test_bender_stiffness_matches_the_authors_actuator_spring():
    swing_spring = next(j.stiffness for j in JOINTS if j.name == "FL_swing")
    assert dut.PiezoBenderParams().stiffness == pytest.approx(swing_spring, rel=1e-4)


def test_blocked_force_and_mid_voltage():
    p = dut.PiezoBenderParams()
    # Simultaneous drive: at V_b/2 both plates see the same field and cancel at q = 0.
    force, _, _ = dut.PiezoBenderForce(p.mid_voltage, 0.0, 1.0)
    assert force == pytest.approx(0.0, abs=1e-15)
    # At V = 0 the top plate carries the whole bias: the blocked force, about a third of a newton
    # (the authors bound the optimizer's actuator forces at 0.28-0.36 N).
    force, _, _ = dut.PiezoBenderForce(0.0, 0.0, 1.0)
    assert force == pytest.approx(p.blocked_force)
    assert 0.25 < p.blocked_force < 0.4
    # Antisymmetric about the mid voltage and in the orientation.
    for V in (0.0, 40.0, 150.0, 225.0):
        f, _, _ = dut.PiezoBenderForce(V, 0.0, 1.0)
        g, _, _ = dut.PiezoBenderForce(2 * p.mid_voltage - V, 0.0, 1.0)
        h, _, _ = dut.PiezoBenderForce(V, 0.0, -1.0)
        assert f == pytest.approx(-g, abs=1e-14)
        assert f == pytest.approx(-h, abs=1e-14)


def test_derivatives_match_central_finite_differences():
    rng = np.random.default_rng(0)
    V = rng.uniform(0, 225, 50)
    q = rng.uniform(-0.3, 0.3, 50)
    s = rng.choice([-1.0, 1.0], 50)
    _, dV, dq = dut.PiezoBenderForce(V, q, s)
    h = 1e-4
    fd_V = (dut.PiezoBenderForce(V + h, q, s)[0] - dut.PiezoBenderForce(V - h, q, s)[0]) / (2 * h)
    fd_q = (dut.PiezoBenderForce(V, q + h, s)[0] - dut.PiezoBenderForce(V, q - h, s)[0]) / (2 * h)
    np.testing.assert_allclose(dV, fd_V, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dq, fd_q, rtol=1e-9, atol=1e-12)
    # The deflection term does not depend on the voltage (the affine model's two plates add up
    # to the full bias): a constant stiffness of 2·C0·(f31_f - f31_b)·(V_b/2)/δ_f.
    np.testing.assert_allclose(dq, dq[0], rtol=1e-12)
    assert -dq[0] == pytest.approx(0.385, abs=0.001)


def test_leaf_system_matches_the_function_and_saturates_once(caplog):
    from pydrake.systems.framework import DiagramBuilder

    orientation = np.array([-1.0, 1.0, 1.0])
    system = dut.PiezoBenders([4, 0, 2], 6, orientation, names=["a", "b", "c"])
    assert system.num_input_ports() == 2 and system.num_output_ports() == 2
    assert system.get_voltage_input_port().size() == 3
    assert system.get_state_input_port().size() == 6
    context = system.CreateDefaultContext()
    state = np.array([0.1, 9.0, -0.2, 9.0, 0.05, 9.0])
    volts = np.array([10.0, 112.5, 200.0])
    system.get_voltage_input_port().FixValue(context, volts)
    system.get_state_input_port().FixValue(context, state)
    expected, _, _ = dut.PiezoBenderForce(volts, state[[4, 0, 2]], orientation)
    np.testing.assert_allclose(system.get_force_output_port().Eval(context), expected)
    # Out of range: clamped to [0, 225] V with a single warning.
    with caplog.at_level(logging.WARNING, logger="drakebots.hamr.piezo"):
        system.get_voltage_input_port().FixValue(context, np.array([-30.0, 300.0, 100.0]))
        force = system.get_force_output_port().Eval(context)
        system.get_voltage_input_port().FixValue(context, np.array([-40.0, 310.0, 100.0]))
        system.get_force_output_port().Eval(context)
    clamped, _, _ = dut.PiezoBenderForce(
        np.array([0.0, 225.0, 100.0]), state[[4, 0, 2]], orientation
    )
    np.testing.assert_allclose(force, clamped)
    warnings = [r for r in caplog.records if "saturating" in r.getMessage()]
    assert len(warnings) == 1
    assert system.get_applied_voltage_output_port().Eval(context)[1] == 225.0
    DiagramBuilder().AddSystem(system)  # a plain LeafSystem, usable in a diagram
