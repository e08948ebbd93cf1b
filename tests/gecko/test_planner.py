"""The motion fit (Eq. 16) and the gait pattern generator (Eqs. 17-22, Algorithm 1).

References: n compositions of Eq. 17 for the closed form of Eq. 19, finite differences for the
hand-written gradient, a dense grid search for the planner's minimum, exact synthetic data for
the least-squares fit, and the targets themselves for the closed loop.
"""

import math

import numpy as np
import pytest

from drakebots.gecko.experiments import NavigateGeometric
from drakebots.gecko.planner import (
    TABLE3_DEG_CM,
    DistanceSquared,
    DistanceSquaredAndGradient,
    FitMotion,
    GaitPatternPlanner,
    MotionFit,
    PlannerParams,
    PredictTarget,
    PredictTargetStepwise,
    ReferenceFit,
    TargetInRobotFrame,
)

PAPER_COURSE = [(0.4, 0.1), (0.6, -0.3), (0.2, -0.5), (0.0, 0.0)]


# The paper's Table 3 as printed (reference/gecko/README.md), written here independently of the
# module's constant: terms [1, q1, q2, q1², q2², q1·q2], q1 in deg.
PAPER_TABLE3 = {
    "d_eps": [5.4154, -0.0457, -44.1944, -0.0006, 0.778, -0.0832],  # deg per cycle
    "dx": [0.1106, 0.2225, 11.4146, -0.0008, -17.5133, -0.1213],  # cm per cycle
    "dy": [1.9498, -0.0682, -3.6997, 0.0004, -0.0333, -0.058],  # cm per cycle
}


def test_reference_fit_is_table3():
    fit = ReferenceFit()
    table = fit.TableDegCm()
    for name in ("d_eps", "dx", "dy"):
        np.testing.assert_allclose(table[name], PAPER_TABLE3[name], rtol=1e-12)
        np.testing.assert_allclose(TABLE3_DEG_CM[name], PAPER_TABLE3[name], rtol=0)
    # Eq. 16 evaluated by hand at q1 = 70 deg, q2 = 0.3, in the paper's units, against the fit's
    # SI evaluation (rad, m).
    q1, q2 = 70.0, 0.3
    terms = [1.0, q1, q2, q1 * q1, q2 * q2, q1 * q2]
    by_hand = [sum(c * t for c, t in zip(PAPER_TABLE3[k], terms)) for k in ("d_eps", "dx", "dy")]
    np.testing.assert_allclose(
        fit.Evaluate(q1, q2),
        [math.radians(by_hand[0]), by_hand[1] / 100.0, by_hand[2] / 100.0],
        rtol=1e-12,
    )
    # The experiment turns right for positive steering and walks forward (paper section 4).
    assert fit.Evaluate(90.0, 0.5)[0] < 0 < fit.Evaluate(90.0, -0.5)[0]
    assert fit.Evaluate(90.0, 0.0)[1] > fit.Evaluate(50.0, 0.0)[1] > 0


@pytest.mark.parametrize("n", [1, 2, 5, 13])
@pytest.mark.parametrize("theta", [0.0, 1e-11, 0.3, -0.8, 2.5])
def test_eq19_closed_form_equals_n_steps_of_eq17(n, theta):
    target = np.array([0.37, -0.21])
    motion = np.array([theta, 0.11, -0.03])
    np.testing.assert_allclose(
        PredictTarget(target, motion, n), PredictTargetStepwise(target, motion, n), atol=1e-13
    )


def test_target_in_robot_frame_eq22():
    pose = (0.2, -0.1, math.radians(90))
    np.testing.assert_allclose(TargetInRobotFrame(pose, (0.2, 0.4)), [0.5, 0.0], atol=1e-15)
    np.testing.assert_allclose(TargetInRobotFrame(pose, (0.0, -0.1)), [0.0, 0.2], atol=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_distance_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    fit = ReferenceFit()
    target = rng.uniform(-0.6, 0.6, 2)
    n = int(rng.integers(1, 9))
    q1, q2 = rng.uniform(40, 90), rng.uniform(-0.5, 0.5)
    value, gradient = DistanceSquaredAndGradient(target, fit, q1, q2, n)
    assert value == pytest.approx(float(DistanceSquared(target, fit, q1, q2, n)), rel=1e-12)
    h1, h2 = 1e-5, 1e-7
    numeric = [
        (
            DistanceSquared(target, fit, q1 + h1, q2, n)
            - DistanceSquared(target, fit, q1 - h1, q2, n)
        )
        / (2 * h1),
        (
            DistanceSquared(target, fit, q1, q2 + h2, n)
            - DistanceSquared(target, fit, q1, q2 - h2, n)
        )
        / (2 * h2),
    ]
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-10)


def test_fit_recovers_exact_quadratics():
    rng = np.random.default_rng(7)
    truth = rng.normal(size=(3, 6)) * np.array([1, 1e-2, 1, 1e-4, 1, 1e-2])
    q1, q2 = np.meshgrid([50.0, 60, 70, 80, 90], [-0.5, -0.3, -0.1, 0.1, 0.3, 0.5], indexing="ij")
    q1, q2 = q1.ravel(), q2.ravel()
    motion = MotionFit(truth).Evaluate(q1, q2)
    fit = FitMotion(q1, q2, motion)
    np.testing.assert_allclose(fit.coefficients, truth, rtol=1e-8, atol=1e-12)
    assert np.all(fit.residual_max < 1e-12)
    again = MotionFit.FromJson(fit.ToJson())
    np.testing.assert_allclose(again.coefficients, fit.coefficients)


@pytest.mark.parametrize("method", ["newton", "L-BFGS-B"])
@pytest.mark.parametrize("target", [(0.35, -0.2), (0.4, 0.1), (0.05, 0.3), (-0.35, -0.2)])
def test_planner_finds_the_grid_minimum(method, target):
    """Eq. 21 for the chosen horizon: the local search lands on (or below) the best point of a
    201 x 201 grid, and Algorithm 1's horizon is the first one with d_n < d_0."""
    fit = ReferenceFit()
    planner = GaitPatternPlanner(fit, PlannerParams(method=method))
    decision = planner.Decide((0.0, 0.0, 0.0), target)
    q1, q2 = np.meshgrid(np.linspace(40, 90, 201), np.linspace(-0.5, 0.5, 201), indexing="ij")
    target_robot = np.asarray(target)
    d0 = float(np.hypot(*target))
    for n in range(1, decision.n + 1):
        best = float(np.sqrt(np.min(DistanceSquared(target_robot, fit, q1, q2, n))))
        if n < decision.n:
            assert best >= d0 - 1e-9, f"horizon {n} already gets closer"
        else:
            assert decision.dn <= best + 1e-6
    assert decision.d0 == pytest.approx(d0)
    assert 40.0 <= decision.q1 <= 90.0 and -0.5 <= decision.q2 <= 0.5


def test_target_behind_needs_a_longer_horizon():
    """Fig. 10B/C: for a target behind the robot one cycle cannot get closer; Algorithm 1 raises
    the horizon until a gait does. References: the Table 3 polynomial written out in this file
    (PAPER_TABLE3) walked cycle by cycle with plain trigonometry (Eq. 17), over a dense grid for
    one cycle and at the planner's gait for its horizon."""
    target = np.array([-0.35, -0.2])
    decision = GaitPatternPlanner(ReferenceFit()).Decide((0.0, 0.0, 0.0), tuple(target))

    def Walk(q1, q2, n):
        """Distance to the target after n cycles of the gait (q1 deg, q2), m."""
        terms = [np.ones_like(q1), q1, q2, q1 * q1, q2 * q2, q1 * q2]
        d_eps, dx, dy = (sum(c * t for c, t in zip(PAPER_TABLE3[k], terms))
                         for k in ("d_eps", "dx", "dy"))  # fmt: skip
        d_eps, dx, dy = np.radians(d_eps), dx / 100.0, dy / 100.0
        x = y = eps = 0.0
        for _ in range(n):
            x, y = x + np.cos(eps) * dx - np.sin(eps) * dy, y + np.sin(eps) * dx + np.cos(eps) * dy
            eps = eps + d_eps
        return np.hypot(target[0] - x, target[1] - y)

    d0 = float(np.hypot(*target))
    q1, q2 = np.meshgrid(np.linspace(40, 90, 101), np.linspace(-0.5, 0.5, 101), indexing="ij")
    assert Walk(q1, q2, 1).min() > d0  # no gait gets closer in one cycle
    assert decision.n > 1 and decision.dn < decision.d0 == pytest.approx(d0)
    assert Walk(np.array(decision.q1), np.array(decision.q2), decision.n) == pytest.approx(
        decision.dn, rel=1e-9
    )
    assert Walk(q1, q2, decision.n - 1).min() >= d0 - 1e-9  # and n is the first that does


@pytest.mark.parametrize("which", ["reference", "own"])
def test_closed_loop_reaches_every_target_of_the_paper_course(which):
    """Algorithm 1 around the geometric model, with the paper's fit or the model's own fit,
    reaches each of the four targets of Fig. 12 within epsilon = 5 cm."""
    if which == "reference":
        fit = ReferenceFit()
    else:
        from drakebots.gecko.experiments import MeasureVelocitySpace

        fit = MeasureVelocitySpace("geometric", options={"substeps": 1}).fit
    result = NavigateGeometric(GaitPatternPlanner(fit), PAPER_COURSE, max_steps_per_target=40)
    assert result.success, result.reason
    assert np.all(result.reached)
    assert np.all(result.closest < 0.05)
    for k in range(len(PAPER_COURSE)):
        # The first pose that counted target k as reached (the next target's first decision,
        # or the final pose) lies within epsilon of it.
        later = [s.pose for s in result.steps if s.target > k]
        pose = later[0] if later else result.track_poses[-1]
        assert np.hypot(*(pose[:2] - result.targets[k])) < 0.05
    assert result.final_error < 0.05
    assert sum(result.steps_per_target) == len(result.steps)


def test_grid_prescreen_gives_algorithm_1s_decision():
    """Skipping horizons whose coarse-grid minimum is far from d_0 picks the same horizon and
    distance as running the local search at every horizon (Algorithm 1 as written)."""
    fit = ReferenceFit()
    fast = GaitPatternPlanner(fit)
    exhaustive = GaitPatternPlanner(fit, PlannerParams(grid_prescreen=False))
    rng = np.random.default_rng(11)
    for _ in range(60):
        pose = np.r_[rng.uniform(-0.5, 0.5, 2), rng.uniform(-3, 3)]
        target = rng.uniform(-0.6, 0.6, 2)
        a, b = fast.Decide(pose, target), exhaustive.Decide(pose, target)
        assert a.n == b.n
        assert a.dn == pytest.approx(b.dn, abs=1e-6)
