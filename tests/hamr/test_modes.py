"""Modal analysis of the standing HAMR-VI and the constrained-modes solver it uses.

Independent references: a two-mass system with a constraint (closed-form frequency), Drake's own
potential energy (the springs parsed from the SDF), finite differences of the potential, the
robot's weight for the ground reactions, and a one-line estimate of the vertical mode from the
lift actuators' springs and the transmission ratio.
"""

import numpy as np
import pytest
from pydrake.multibody.plant import MultibodyPlant

from drakebots.analysis.modal import ConstrainedModes, HertzFromOmega
from drakebots.hamr import modes as dut
from drakebots.hamr import robot as hamr
from drakebots.hamr.piezo import PiezoBenderForce


def test_constrained_modes_of_two_masses_tied_together():
    m1, m2, k1, k2 = 2.0, 3.0, 5.0, 7.0
    M = np.diag([m1, m2])
    K = np.diag([k1, k2])
    G = np.array([[1.0, -1.0]])  # x1 = x2: one mass m1 + m2 on springs k1 + k2
    modes = ConstrainedModes(M, K, G, D=np.diag([0.1, 0.2]))
    assert modes.omega == pytest.approx([np.sqrt((k1 + k2) / (m1 + m2))])
    assert modes.damping_ratio[0] == pytest.approx(0.3 / (2 * np.sqrt((k1 + k2) * (m1 + m2))))
    assert HertzFromOmega(2 * np.pi, 1e-3) == pytest.approx(1000.0)


@pytest.fixture(scope="module")
def sliding():
    return dut.AnalyseHamrModes("sliding")


def test_potential_matches_drakes_and_its_gradient():
    model = dut._StandingModel("sliding")
    rng = np.random.default_rng(0)
    q0 = model.plant.GetDefaultPositions()
    k_bender = -PiezoBenderForce(112.5, 0.0, 1.0)[2]
    actuators = [hamr.HamrPositionIndex(model.plant, name) for name in hamr.ActuatorNames()]
    for _ in range(3):
        q = q0 + 0.01 * rng.standard_normal(q0.size)
        model.plant.SetPositions(model.context, q)
        drake = model.plant.CalcPotentialEnergy(model.context)
        expected = drake + 0.5 * k_bender * np.sum(q[actuators] ** 2)
        assert model.Potential(q) == pytest.approx(expected, rel=1e-12, abs=1e-15)
        numeric = np.array(
            [
                (model.Potential(q + 1e-6 * e) - model.Potential(q - 1e-6 * e)) / 2e-6
                for e in np.eye(q.size)
            ]
        )
        np.testing.assert_allclose(model.Gradient(q), numeric, atol=1e-8)


def test_ground_reactions_carry_the_weight(sliding):
    weight = 1.47499 * 9.81e-3
    assert sliding.foot_forces[:, 2].sum() == pytest.approx(weight, rel=1e-6)
    assert np.all(sliding.foot_forces[:, 2] > 0)
    np.testing.assert_allclose(sliding.foot_forces[:, :2], 0.0, atol=1e-15)  # frictionless
    assert sliding.gradient_residual < 1e-8
    # The body sags from the geometric home pose under its weight, by a fraction of a mm.
    assert 0.1 < 12.69 - sliding.body_height < 1.0


def test_sliding_feet_give_three_free_motions_then_body_modes(sliding):
    labels = sliding.labels
    assert labels[:3] == ["free", "free", "free"]  # x, y, yaw slide freely
    # Frictionless feet: the three free motions are the planar rigid motions at zero frequency,
    # whatever the labeller says: base x, y and yaw only (every joint and base z, roll, pitch
    # still), spanning all three.
    plant = MultibodyPlant(0.0)
    hamr.AddHamr(plant)
    plant.Finalize()
    planar = [hamr.HamrPositionIndex(plant, n) for n in ("base_x", "base_y", "base_yaw")]
    free = sliding.shapes[:, :3]
    assert np.abs(sliding.frequencies_hz[:3]).max() < 1e-3
    assert np.abs(np.delete(free, planar, axis=0)).max() < 1e-9 * np.abs(free).max()
    assert np.linalg.matrix_rank(free[planar], tol=1e-6) == 3
    # The first body mode moves the chassis vertically: base z is its largest coordinate.
    vertical_shape = sliding.shapes[:, sliding.BodyMode("vertical (z)")]
    z = hamr.HamrPositionIndex(plant, "base_z")
    assert abs(vertical_shape[z]) == pytest.approx(np.abs(vertical_shape).max())
    vertical, pitch, roll = (sliding.BodyMode(m) for m in ("vertical (z)", "pitch", "roll"))
    assert None not in (vertical, pitch, roll)
    f = sliding.frequencies_hz
    assert f[vertical] < f[pitch] < f[roll] < 100.0
    # Leg (transmission) modes are well above the body modes.
    assert all(fr > 100.0 for fr, label in zip(f, labels) if label == "leg")


def test_vertical_mode_matches_a_spring_estimate(sliding):
    """Four lift actuators (spring 1.6946 N/mm + the bender's 0.385 N/mm at mid voltage) seen
    through the lift ratio ∂z_foot/∂q_lift carry the body's mass: f = sqrt(k/m)/2π."""
    plant = MultibodyPlant(0.0)
    hamr.AddHamr(plant)
    plant.Finalize()
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, sliding.q_equilibrium)
    k_actuator = hamr.FlexureStiffness()["FL_lift"] + 0.3852
    k = sum(
        k_actuator / hamr.LegTransmissionJacobian(plant, context, leg)[2, 1] ** 2
        for leg in hamr.LEGS
    )
    estimate = np.sqrt(k / 1.475) / (2 * np.pi) * 1000.0
    measured = sliding.frequencies_hz[sliding.BodyMode("vertical (z)")]
    assert measured == pytest.approx(estimate, rel=0.1)


def test_pinned_feet_leave_two_motions():
    pinned = dut.AnalyseHamrModes("pinned")
    assert pinned.shapes.shape[1] == 2
    assert pinned.body_height == pytest.approx(12.69, abs=1e-9)  # the feet hold the home pose
    assert pinned.foot_forces[:, 2].sum() == pytest.approx(1.47499 * 9.81e-3, rel=1e-6)


def test_bad_options():
    with pytest.raises(ValueError, match="feet"):
        dut.AnalyseHamrModes("glued")
    with pytest.raises(ValueError, match="stiffness_scale"):
        dut.AnalyseHamrModes("sliding", stiffness_scale={"tail": 2.0})
