"""A plan that is not accepted says which check failed and by how much (issue 67, part 4):
each of the acceptance's checks (legged_report.Figures and TrackingChecks) is made to fail on
its own with figures stated here, and its reason must name the check and carry the figure and
the tolerance. Pure bookkeeping: no solve, no simulation (well under a second)."""

from types import SimpleNamespace

import numpy as np
import pytest

from drakebots.optimization.legged import JumpConfig, MotionSolver
from drakebots.optimization.legged_report import Figures, TrackingChecks

HOME = 0.2  # base height at home, m


def _Run(**changes):
    """A closed-loop run that follows its plan (a 0.1 m per cycle gait), with `changes`."""
    run = dict(
        planned=0.1,
        distance_per_cycle=0.1,
        apex_height=0.1,
        home_height=HOME,
        cycles=3,
        base_error=np.array([0.001, 0.002, 0.003]),
        base_error_max=0.003,
        position_tolerance=0.25 * 0.1 + 0.1 * HOME,
        yaw_error_max=0.01,
        fell=False,
        lowest_base_height=0.19,
        tilt_error_max=0.02,
        start_shift=0.0,
        ms_per_tick=1.0,
        qp_failures=0,
        wall_time_s=1.0,
    )
    run.update(changes)
    return run


def test_a_run_that_follows_the_plan_passes_and_reports_numbers():
    figures = {}
    assert TrackingChecks("gait", figures, _Run(), MotionSolver()) == []
    for key in ("tracked_cycles", "tracked_distance_per_cycle", "tracked_base_error_max"):
        assert isinstance(figures[key], (int, float)), key
    assert figures["tracked_fell"] is False and figures["tracked_cycles"] == 3


@pytest.mark.parametrize(
    "changes,words",
    [
        # 0.07 m per cycle against 0.1: 30 % off, beyond 25 %.
        (dict(distance_per_cycle=0.07), ["distance per cycle 0.07", "30 % off", "25 %"]),
        # 0.06 m from the plan at cycle end 2 (tolerance 0.025 + 0.02 = 0.045 m).
        (
            dict(base_error=np.array([0.01, 0.06, 0.02]), base_error_max=0.06),
            ["base position 0.06", "cycle end 2", "tolerance 0.045"],
        ),
        (dict(yaw_error_max=0.4), ["yaw 0.4 rad", "tolerance 0.25 rad"]),
        (
            dict(fell=True, lowest_base_height=0.05, tilt_error_max=1.5),
            ["fell", "as low as 0.05", "1.5 rad", "limit 1"],
        ),
    ],
)
def test_each_tracking_check_says_what_failed_and_by_how_much(changes, words):
    reasons = TrackingChecks("gait", {}, _Run(**changes), MotionSolver())
    assert len(reasons) == 1, reasons
    for word in words:
        assert word in reasons[0], (word, reasons[0])


def test_a_jump_apex_off_by_more_than_a_quarter_is_refused():
    reasons = TrackingChecks("jump", {}, _Run(apex_height=0.13), MotionSolver())
    assert len(reasons) == 1 and "apex height 0.13" in reasons[0] and "30 % off" in reasons[0]


def _Plan(phi, violation=1e-8, complementarity=1e-6):
    """Figures' arguments for a floating-base jump of 21 knots whose contact heights are phi."""
    robot = SimpleNamespace(name="quad", source=None, units={}, gravity=9.81, base="floating_rpy")
    model = SimpleNamespace(
        robot=robot,
        effort_limits=np.array([2.0]),
        weight=10.0,
        home=np.array([0.0, HOME]),
        z_index=1,
        x_index=0,
    )
    knots = len(phi)
    q = np.zeros((knots, 2))
    q[:, 1] = np.linspace(HOME, HOME + 0.1, knots)
    traj = SimpleNamespace(
        u=np.zeros((knots - 1, 1)),
        q=q,
        qdot=np.zeros((knots - 1, 2)),
        phi=np.asarray(phi, float),
        h=0.02,
        times=0.02 * np.arange(knots),
    )
    outcome = SimpleNamespace(
        solver="fast",
        status="Solve_Succeeded",
        success=True,
        solve_time_s=1.0,
        cpu_time_s=1.0,
        iterations=10,
        num_variables=1,
        num_constraints=1,
    )
    check = SimpleNamespace(
        max_violation=violation,
        max_complementarity_violation=complementarity,
        complementarity=complementarity,
        max_dynamics_residual=0.0,
        min_signed_distance=0.0,
        max_slack=0.0,
        MostViolated=lambda n: [("dynamics[3]", violation)],
    )
    return model, traj, outcome, check


def _Flight(knots_in_flight, knots=21, feet=4):
    phi = np.zeros((knots, feet))
    if knots_in_flight:
        phi[-knots_in_flight:] = 0.01
    return phi


@pytest.mark.parametrize("flying,refused", [(4, False), (3, False), (2, True), (0, True)])
def test_a_jump_without_its_flight_knots_is_refused(flying, refused):
    model, traj, outcome, check = _Plan(_Flight(flying))
    config = JumpConfig(robot="quad", height=0.1, knots=21)  # flight_knots 3
    figures, reason = Figures("jump", model, config, None, None, outcome, check, [], traj, None)
    assert figures["flight_knots"] == flying
    if refused:
        assert f"flight phase: {flying} knots" in reason and "the 3 asked" in reason, reason
    else:
        assert reason is None


def test_feasibility_and_complementarity_failures_name_their_figures():
    model, traj, outcome, check = _Plan(_Flight(4), violation=3e-3, complementarity=2e-3)
    config = JumpConfig(robot="quad", height=0.1, knots=21)
    _, reason = Figures("jump", model, config, None, None, outcome, check, [], traj, None)
    assert "constraints violated by up to 3.00e-03 (> 0.0001): dynamics[3]" in reason
    assert "true complementarity 2.00e-03 > 0.0001" in reason


def _Planar(z_plan, z_run):
    """A planar model (x, z, pitch) and a plan / run pair of base heights over one cycle."""
    from types import SimpleNamespace

    model = SimpleNamespace(
        home=np.array([0.0, HOME, 0.0]), x_index=0, z_index=1, orientation_indices=[2]
    )
    times = np.linspace(0.0, 1.0, len(z_plan))

    def Q(z):
        q = np.zeros((len(z), 3))
        q[:, 0] = 0.1 * times
        q[:, 1] = z
        return q

    plan = SimpleNamespace(times=times, q=Q(z_plan))
    run = SimpleNamespace(times=times, q=Q(z_run))
    return model, plan, run


@pytest.mark.parametrize(
    "z_plan,z_run,fell",
    [
        # A plan that crouches to 0.3 of the home height, followed exactly: no fall.
        ([HOME, 0.3 * HOME, HOME], [HOME, 0.3 * HOME, HOME], False),
        # The run at 0.45 of the plan's height at the crouch: a fall.
        ([HOME, 0.3 * HOME, HOME], [HOME, 0.45 * 0.3 * HOME, HOME], True),
        # The plan at home height, the run down to 0.45 of it: a fall (as before).
        ([HOME, HOME, HOME], [HOME, 0.45 * HOME, HOME], True),
        # The run at 0.55 of the plan: not a fall by height.
        ([HOME, HOME, HOME], [HOME, 0.55 * HOME, HOME], False),
    ],
)
def test_a_fall_is_the_base_below_half_the_plans_height_at_the_same_time(z_plan, z_run, fell):
    from drakebots.optimization.legged_report import _Compare

    model, plan, run = _Planar(z_plan, z_run)
    out = _Compare(model, "gait", plan, None, plan, run, 1, 0.0)
    assert out["fell"] is fell
    assert out["lowest_base_height"] == pytest.approx(min(z_run))
