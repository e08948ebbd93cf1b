"""HAMR-VI's model: sizes, mass, home pose, loop constraints and their Jacobians, the transmission.

References are independent of the code under test: the paper's and the authors' numbers (38
coordinates, 24 constraints, 1.475 g, 12.69 mm), central finite differences of c(q), Drake's own
AutoDiffXd pass, and a Newton re-closure of the loops for the transmission ratios.
"""

import numpy as np
import pytest
from pydrake.autodiffutils import ExtractGradient, ExtractValue, InitializeAutoDiff
from pydrake.multibody.plant import MultibodyPlant
from pydrake.solvers import MathematicalProgram

from drakebots.hamr import robot as dut
from drakebots.models import ModelsDirectory
from drakebots.robots import GetRobot
from drakebots.robots.base import DescribeRobot


@pytest.fixture(scope="module")
def plant():
    plant = MultibodyPlant(time_step=0.0)
    dut.AddHamr(plant)
    plant.Finalize()
    return plant


@pytest.fixture(scope="module")
def loops(plant):
    return dut.HamrLoopConstraints(plant)


def NearbyPoses(plant, count, scale, seed):
    """Home plus random perturbations of every coordinate (loops open by O(scale))."""
    rng = np.random.default_rng(seed)
    q0 = plant.GetDefaultPositions()
    return [q0 + scale * rng.standard_normal(q0.size) for _ in range(count)]


def test_sizes_match_the_paper(plant, loops):
    # Paper section II-B: eight inputs, 38 generalized coordinates (76 states), 24 constraints.
    assert plant.num_positions() == 38
    assert plant.num_velocities() == 38
    assert plant.num_actuators() == 8
    assert loops.num_constraints() == 24
    assert sorted(a for a in dut.ActuatorNames()) == sorted(
        plant.get_joint_actuator(i).name() for i in plant.GetJointActuatorIndices()
    )


def test_loop_jacobian_has_full_rank_at_home(plant, loops):
    context = plant.CreateDefaultContext()
    J = loops.Jacobian(plant, context)
    assert J.shape == (24, 38)
    singular_values = np.linalg.svd(J, compute_uv=False)
    assert np.linalg.matrix_rank(J) == 24
    assert singular_values[-1] > 1e-2 * singular_values[0], "near-singular loop Jacobian"


def test_total_mass_within_two_percent(plant):
    mass = plant.CalcTotalMass(plant.CreateDefaultContext())
    assert mass == pytest.approx(1.475, rel=0.02)


def test_home_pose_stands_at_the_nominal_height_with_loops_closed(plant, loops):
    context = plant.CreateDefaultContext()
    assert plant.GetPositions(context)[dut.HamrPositionIndex(plant, "base_z")] == pytest.approx(
        12.69, abs=0.5
    )
    for leg in dut.LEGS:
        foot = plant.GetFrameByName(f"{leg}_foot").CalcPoseInWorld(context).translation()
        assert abs(foot[2]) < 1e-9, f"{leg} foot is not on the ground at home"
    assert np.max(np.abs(loops.Eval(plant, context))) < 1e-6


def test_v_equals_qdot(plant):
    context = plant.CreateDefaultContext()
    v = np.random.default_rng(0).standard_normal(38)
    np.testing.assert_array_equal(plant.MapVelocityToQDot(context, v), v)


def test_jacobian_matches_central_finite_differences(plant, loops):
    context = plant.CreateDefaultContext()
    step = 1e-6
    for q in NearbyPoses(plant, 4, 0.02, seed=1):
        plant.SetPositions(context, q)
        J = loops.Jacobian(plant, context)
        numeric = np.empty_like(J)
        for k in range(q.size):
            dq = np.zeros_like(q)
            dq[k] = step
            numeric[:, k] = (loops.Residual(q + dq) - loops.Residual(q - dq)) / (2 * step)
        np.testing.assert_allclose(J, numeric, atol=1e-7, rtol=1e-6)


def test_autodiff_plant_agrees_with_the_float_jacobian(plant, loops):
    plant_ad = plant.ToAutoDiffXd()
    context_ad = plant_ad.CreateDefaultContext()
    context = plant.CreateDefaultContext()
    for q in NearbyPoses(plant, 2, 0.02, seed=2):
        plant_ad.SetPositions(context_ad, InitializeAutoDiff(q))
        c_ad = loops.Eval(plant_ad, context_ad)
        plant.SetPositions(context, q)
        np.testing.assert_allclose(
            ExtractValue(c_ad).ravel(), loops.Eval(plant, context), atol=1e-12
        )
        np.testing.assert_allclose(
            ExtractGradient(c_ad), loops.Jacobian(plant, context), atol=1e-10
        )
        # The AutoDiff Jacobian (its value) equals the float one too.
        J_ad = loops.Jacobian(plant_ad, context_ad)
        np.testing.assert_allclose(ExtractValue(J_ad), loops.Jacobian(plant, context), atol=1e-10)


def test_program_constraint_uses_the_analytic_gradient(plant, loops):
    prog = MathematicalProgram()
    q_vars = prog.NewContinuousVariables(38, "q")
    binding = loops.AddToProgram(prog, q_vars)
    assert binding.evaluator().num_constraints() == 24
    (q,) = NearbyPoses(plant, 1, 0.01, seed=3)
    value = binding.evaluator().Eval(InitializeAutoDiff(q))
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, q)
    np.testing.assert_allclose(ExtractGradient(value), loops.Jacobian(plant, context), atol=1e-12)
    assert prog.CheckSatisfied(binding, plant.GetDefaultPositions(), tol=1e-9)


def CloseLegLoops(plant, loops, q, leg):
    """Newton on the leg's six flexure angles with its actuators held: closes its loops."""
    rows = [k for k, name in enumerate(loops.constraint_names()) if name.startswith(leg)]
    flexures = [
        dut.HamrPositionIndex(plant, f"{leg}_{n}") for n in ("s1", "s2", "fb1", "l1", "l2", "fb3")
    ]
    context = plant.CreateDefaultContext()
    q = q.copy()
    for _ in range(30):
        plant.SetPositions(context, q)
        r = loops.Eval(plant, context)[rows]
        if np.max(np.abs(r)) < 1e-13:
            return q
        q[flexures] -= np.linalg.solve(loops.Jacobian(plant, context)[rows][:, flexures], r)
    raise AssertionError("loops did not close")


def FootInChassis(plant, q, leg):
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, q)
    return plant.CalcRelativeTransform(
        context, plant.GetFrameByName("chassis"), plant.GetFrameByName(f"{leg}_foot")
    ).translation()


def test_transmission_is_decoupled(plant, loops):
    """Paper section II-A: the SFB transmission is nominally decoupled: the swing actuator
    controls leg-x, the lift actuator leg-z. Measured by displacing each actuator ±0.1 µm and
    re-closing the loops (central differences), also compared with Eq. 19
    (LegTransmissionJacobian).

    Measured at home (mm of foot travel per mm of actuator, chassis frame): swing (∓14.30, 0, 0);
    lift (0, 22.78, ±12.67). The cross terms of the x-z map are ~1e-9 of the direct ones. The
    lift does NOT move the foot mostly along z: the leg rotates about the body x axis through
    the SFB centre and the foot hangs 7.6 mm outboard of that centre, so it travels 0.556 mm up
    per mm sideways (the authors' URDF gives the same at its CAD pose: 0.583; see
    test_transmission_matches_the_spherical_five_bar)."""
    q0 = plant.GetDefaultPositions()
    context = plant.CreateDefaultContext()
    for leg in dut.LEGS:
        H = dut.LegTransmissionJacobian(plant, context, leg)
        for column, kind in enumerate(("swing", "lift")):
            feet = []
            for step in (+1e-4, -1e-4):
                q = q0.copy()
                q[dut.HamrPositionIndex(plant, f"{leg}_{kind}")] += step
                feet.append(FootInChassis(plant, CloseLegLoops(plant, loops, q, leg), leg))
            d = (feet[0] - feet[1]) / 2e-4
            np.testing.assert_allclose(d, H[:, column], rtol=1e-5, atol=1e-5)
        swing, lift = H[:, 0], H[:, 1]
        # Swing: along x only (y and z are second order at home).
        assert np.linalg.norm(swing[1:]) < 1e-6 * abs(swing[0]), (leg, swing)
        assert 10.0 < abs(swing[0]) < 20.0, "swing ratio: about 14 mm of foot travel per mm"
        # Lift: no x; the leg-x/leg-z map [[∂x/∂s, ∂x/∂l], [∂z/∂s, ∂z/∂l]] is diagonal.
        assert abs(lift[0]) < 1e-6 * abs(swing[0]), (leg, lift)
        assert abs(swing[2]) < 1e-6 * abs(lift[2]), (leg, swing, lift)
        assert abs(lift[2]) > 10.0, "lift ratio: about 12.7 mm of foot height per mm"
    # Away from home the x-z cross terms stay small: below 1 % with either actuator ±0.1 mm
    # from home (measured: at most 0.48 %), below 5 % with both at +0.1 mm (measured 2.4 %).
    for ds, dl in ((0.1, 0.0), (-0.1, 0.0), (0.0, 0.1), (0.0, -0.1), (0.1, 0.1)):
        bound = 0.05 if ds and dl else 0.01
        q = q0.copy()
        q[dut.HamrPositionIndex(plant, "FL_swing")] += ds
        q[dut.HamrPositionIndex(plant, "FL_lift")] += dl
        plant.SetPositions(context, CloseLegLoops(plant, loops, q, "FL"))
        H = dut.LegTransmissionJacobian(plant, context, "FL")
        assert abs(H[2, 0]) < bound * abs(H[2, 1]), (ds, dl, H)
        assert abs(H[0, 1]) < bound * abs(H[0, 0]), (ds, dl, H)


def SliderCrankRate(slider_axis, slider_pin, crank_pin, pivot, axis):
    """Angular rate of a crank turning about `axis` through `pivot` per unit slider velocity,
    when a rigid coupler joins `slider_pin` (moving along `slider_axis`) to `crank_pin`:
    (v_crank_pin - v_slider_pin) · (crank_pin - slider_pin) = 0."""
    d = crank_pin - slider_pin
    return (slider_axis @ d) / (np.cross(axis, crank_pin - pivot) @ d)


def test_transmission_matches_the_spherical_five_bar(plant):
    """An independent reference for Eq. 19: the SFB's kinematics by hand at the authors' CAD
    pose (every joint at zero, where every loop closes to 1.4e-7 mm).

    The three output hinges (s3 about z, l3 about x, both on the chassis, and fb2 about y between
    S4 and L4) pass through one point, the SFB centre, and the inner hinges fb1 (x) and fb3 (z)
    lie on the l3 and s3 axes. So a swing stroke turns the whole leg rigidly about the s3 axis and
    a lift stroke about the l3 axis, each crank driven from its actuator by a planar slider-crank
    (actuator slider along body y, coupler S2 or L2, crank S3 or L3). The foot velocity is then
    ω × (foot - centre) with ω from the slider-crank."""
    context = plant.CreateDefaultContext()
    q = np.zeros(plant.num_positions())
    q[dut.HamrPositionIndex(plant, "base_z")] = dut.HOME_BASE_HEIGHT
    plant.SetPositions(context, q)
    chassis = plant.GetFrameByName("chassis")

    def Point(frame):
        return plant.CalcRelativeTransform(context, chassis, frame).translation()

    def Joint(name):
        return Point(plant.GetJointByName(name).frame_on_child())

    def Axis(hinge_frame):  # the hinge frame's z axis, in the chassis frame
        return plant.CalcRelativeTransform(context, chassis, hinge_frame).rotation().matrix()[:, 2]

    def OnLine(point, origin, axis):
        offset = point - origin
        return np.linalg.norm(offset - (offset @ axis) * axis)

    for leg in dut.LEGS:
        s3 = plant.GetFrameByName(f"{leg}_s3_A")
        l3 = plant.GetFrameByName(f"{leg}_l3_A")
        fb2 = plant.GetFrameByName(f"{leg}_fb2_A")
        z_s3, x_l3, y_fb2 = Axis(s3), Axis(l3), Axis(fb2)
        np.testing.assert_allclose(np.abs([z_s3[2], x_l3[0], y_fb2[1]]), 1.0, atol=1e-9)
        # The SFB centre: the s3 axis (vertical) meets the l3 axis (fore-aft).
        centre = np.array([Point(s3)[0], Point(l3)[1], Point(l3)[2]])
        assert OnLine(centre, Point(s3), z_s3) < 1e-9 and OnLine(centre, Point(l3), x_l3) < 1e-9
        assert OnLine(centre, Point(fb2), y_fb2) < 1e-6
        assert OnLine(Joint(f"{leg}_fb1"), centre, x_l3) < 1e-6
        assert OnLine(Joint(f"{leg}_fb3"), centre, z_s3) < 1e-6
        foot = Point(plant.GetFrameByName(f"{leg}_foot"))
        y = np.array([0.0, 1.0, 0.0])  # both actuator sliders move along body y
        w_swing = SliderCrankRate(y, Joint(f"{leg}_s1"), Joint(f"{leg}_s2"), centre, z_s3)
        w_lift = SliderCrankRate(y, Joint(f"{leg}_l1"), Joint(f"{leg}_l2"), centre, x_l3)
        expected = np.column_stack(
            [np.cross(w_swing * z_s3, foot - centre), np.cross(w_lift * x_l3, foot - centre)]
        )
        H = dut.LegTransmissionJacobian(plant, context, leg)
        np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())
        # The lift's z/y ratio is the leg's outboard offset over its depth below the centre.
        offset = foot - centre
        assert H[2, 1] / H[1, 1] == pytest.approx(-offset[1] / offset[2], rel=1e-5)


def test_info_reports_loops(plant):
    info = DescribeRobot(GetRobot("hamr_vi"))
    assert info["num_loop_constraints"] == 24
    assert info["loop_jacobian_rank"] == 24
    assert info["units"]["length"] == "mm" and info["units"]["time"] == "ms"
    assert info["gravity"] == pytest.approx(9.81e-3)


def test_rpy_floating_joint_variant_has_the_same_dynamics_at_home():
    """The RpyFloatingJoint base gives the same mass (and, at zero angles, the same kinetic
    energy for the same q̇), so the choice of base only changes the velocity map N(q)."""
    a = MultibodyPlant(0.0)
    dut.AddHamr(a)
    a.Finalize()
    b = MultibodyPlant(0.0)
    dut.AddHamr(b, floating_base="rpy_floating_joint")
    b.Finalize()
    ca, cb = a.CreateDefaultContext(), b.CreateDefaultContext()
    assert b.num_positions() == 38
    assert a.CalcTotalMass(ca) == pytest.approx(b.CalcTotalMass(cb), rel=1e-12)
    qdot_a = np.random.default_rng(4).standard_normal(38)
    # Map the same base motion into each plant: same joint rates by name.
    a.SetVelocities(ca, qdot_a)
    qdot_b = np.zeros(38)
    for i in a.GetJointIndices():
        joint = a.get_joint(i)
        if joint.num_velocities() != 1 or joint.name().startswith("base_"):
            continue
        qdot_b[b.GetJointByName(joint.name()).velocity_start()] = qdot_a[joint.velocity_start()]
    base = b.GetJointByName("base")
    rates = {n: qdot_a[a.GetJointByName(n).velocity_start()] for n in dut.BASE_JOINTS}
    # At zero roll/pitch/yaw, ω = (roll rate, pitch rate, yaw rate) and v = (x, y, z rates).
    omega = [rates["base_roll"], rates["base_pitch"], rates["base_yaw"]]
    velocity = [rates["base_x"], rates["base_y"], rates["base_z"]]
    qdot_b[base.velocity_start() : base.velocity_start() + 6] = omega + velocity
    b.SetVelocities(cb, qdot_b)
    assert a.CalcKineticEnergy(ca) == pytest.approx(b.CalcKineticEnergy(cb), rel=1e-10)


def test_generated_files_are_up_to_date():
    for relative, text in dut.GeneratedHamrFiles().items():
        path = ModelsDirectory() / relative
        assert path.read_text() == text, f"{path} is stale: run scripts/generate_hamr_vi.py"


def test_surface_friction_and_bad_names():
    assert dut.SURFACE_FRICTION == {"teflon": 0.29, "cardstock": 0.51, "sandpaper": 1.02}
    with pytest.raises(ValueError, match="cardstock"):
        dut.SurfaceFriction("ice")
    with pytest.raises(ValueError, match="floating_base"):
        dut.AddHamr(MultibodyPlant(0.0), floating_base="quaternion")
