"""The space-time step and the alternating loop (issue 6).

References: the MathematicalProgram's own bindings (the problem's definition) for the vectorised
NLP; finite differences for its Jacobians; Drake's kinematics evaluated directly (not through the
optimizer) for the solution's contact and COP constraints; a grid over a leg's joint space for
the reach.
"""

import dataclasses

import numpy as np
import pytest

from drakebots.analysis.support import SupportPolygon
from drakebots.errors import InputError
from drakebots.skinned import alternating, motions
from drakebots.skinned.motion import CheckReachable, LegReach, SampleMotion
from drakebots.skinned.qpcc import QpccConfig
from drakebots.skinned.skeleton_model import SkeletonModel
from drakebots.skinned.space_time import (
    InitialGuess,
    KinematicWarmStart,
    MakeSpaceTimeProgram,
    PatchOffsets,
    SolveSpaceTime,
    SpaceTimeConfig,
)
from drakebots.skinned.space_time_nlp import SpaceTimeNlp


@pytest.fixture(scope="module")
def beetle():
    return SkeletonModel("beetle")


@pytest.mark.parametrize(
    "robot, motor_limit_fraction", [("beetle", 1.0), ("beetle", 0.002), ("lizard", 1.0)]
)
def test_vectorised_nlp_equals_the_programs_bindings(beetle, robot, motor_limit_fraction):
    """Total violation and cost of the vectorised NLP against the MathematicalProgram's own
    bindings; with motor limits at 0.2% of U_m the motor rows are violated and counted. The
    lizard has spine, neck and tail joints, so its program also has the posture cost."""
    model = beetle if robot == "beetle" else SkeletonModel(robot)
    motion = SampleMotion(motions.Walk(model, speed=0.04, period=2.0))
    problem = MakeSpaceTimeProgram(
        model,
        motion,
        SpaceTimeConfig(knot_frames=40, motor_limit_fraction=motor_limit_fraction),
        q_follow=np.tile(model.q_home, (11, 1)),
    )
    assert bool(problem.bindings["posture"]) == (model.body_joint_indices.size > 0)
    prog = problem.prog
    rng = np.random.default_rng(0)
    x = InitialGuess(model, problem) + rng.normal(scale=0.01, size=prog.num_vars())
    nlp = SpaceTimeNlp(problem)
    ev = nlp.Evaluate(x, True)
    cost = sum(float(prog.EvalBinding(b, x)[0]) for b in prog.GetAllCosts())
    assert ev.r @ ev.r == pytest.approx(cost, rel=1e-12)
    violation = 0.0
    for b in prog.GetAllConstraints():
        e, y = b.evaluator(), prog.EvalBinding(b, x)
        violation += np.sum(np.maximum(0, e.lower_bound() - y) + np.maximum(0, y - e.upper_bound()))
    z = (nlp.cone_A @ x + nlp.cone_b).reshape(-1, 3)
    ours = (
        np.abs(ev.c_eq).sum()
        + np.maximum(ev.c_in, 0).sum()
        + np.sum(np.maximum(0, nlp.lower - x) + np.maximum(0, x - nlp.upper))
        + np.sum(np.maximum(0, np.hypot(z[:, 1], z[:, 2]) - z[:, 0]))
    )
    assert ours == pytest.approx(violation, rel=1e-10)
    motor_rows = [(a, b) for name, a, b in nlp.in_names if name.startswith("motor_limits")]
    assert len(motor_rows) == len(problem.interior)
    worst_motor = max(ev.c_in[a:b].max() for a, b in motor_rows)
    assert (worst_motor > 0) == (motor_limit_fraction < 0.01)
    # Jacobians against central differences along a random direction.
    d = rng.normal(size=len(x)) * 1e-6
    plus, minus = nlp.Evaluate(x + d, False), nlp.Evaluate(x - d, False)
    for a, b, J in ((plus.r, minus.r, ev.J_r), (plus.c_eq, minus.c_eq, ev.A_eq)):
        np.testing.assert_allclose(J @ d, (a - b) / 2, atol=1e-9 * max(1.0, np.abs(J @ d).max()))
    np.testing.assert_allclose(ev.A_in @ d, (plus.c_in - minus.c_in) / 2, rtol=1e-5, atol=1e-12)


@pytest.mark.parametrize("robot", ["beetle", "monster"])
def test_sole_radius_is_the_soles_circumradius(beetle, robot):
    """ν_b of Eq. (8): the largest distance of a sole corner from the sole's centre, measured
    with Drake's kinematics on the feet at home (level soles), not from the model's arrays."""
    model = beetle if robot == "beetle" else SkeletonModel(robot)
    farthest = 0.0
    for j in range(4):
        corners = _Corners(model, model.q_home, j)
        assert np.ptp(corners[:, 2]) < 1e-9  # level at home
        centre = _Sole(model, model.q_home, j)
        farthest = max(farthest, np.linalg.norm(corners[:, :2] - centre[:2], axis=1).max())
    assert model.sole_radius == pytest.approx(farthest, rel=1e-9)


def test_the_soft_sole_implies_eq_8s_torque_bound(beetle):
    """Eq. (8)'s ||τ / ν_b|| <= ||F|| (ν_b the sole's circumradius) is a row only with the paper's
    sole-centre contact: with the soft sole a foot's torque is Σ r_p × n_p ẑ over its patches with
    n_p >= 0, which meets the tighter ||τ / ν_b|| <= F_z for any tilt of the foot and any patch
    forces, so the program leaves the row out."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = beetle.q_home.copy()
        q[beetle.q_home.size - beetle.nu :] += rng.uniform(-0.4, 0.4, beetle.nu)
        for j in range(4):
            r, _ = PatchOffsets(beetle, q, j)
            n = rng.exponential(size=5) * (rng.random(5) < 0.6)
            tau = np.cross(r, n[:, None] * np.array([0.0, 0.0, 1.0])).sum(axis=0)
            assert abs(tau[2]) < 1e-12
            assert np.linalg.norm(tau) <= beetle.sole_radius * n.sum() * (1 + 1e-12)
    motion = SampleMotion(motions.Walk(beetle, speed=0.04, period=2.0))
    for model, quadratic in (("soft_sole", False), ("sole_center", True)):
        config = SpaceTimeConfig(knot_frames=40, contact_model=model)
        problem = MakeSpaceTimeProgram(beetle, motion, config)
        names = [b.evaluator().get_description() for b in problem.prog.GetAllConstraints()]
        assert any(name.startswith("contact_torque") for name in names) == quadratic


def test_motor_load_is_a_smooth_upper_bound_of_the_largest_torque_with_its_gradient():
    """MotorLoad(a) lies in [max|a|, max|a| + ln(2m)/s]; its gradient along J against central
    differences (a = J y, so the derivative in y is the chain rule through J)."""
    from drakebots.skinned.space_time_terms import MOTOR_LOAD_SHARPNESS, MotorLoad

    rng = np.random.default_rng(3)
    J = rng.normal(size=(12, 5))
    y = rng.normal(size=5) * 0.2
    value, grad = MotorLoad(J @ y, J)
    top = np.abs(J @ y).max()
    assert top <= value <= top + np.log(24) / MOTOR_LOAD_SHARPNESS
    eps = 1e-6
    for i in range(5):
        e = np.zeros(5)
        e[i] = eps
        fd = (MotorLoad(J @ (y + e))[0] - MotorLoad(J @ (y - e))[0]) / (2 * eps)
        assert grad[i] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_kinematic_space_time_solution_satisfies_its_constraints(beetle):
    """Checked with Drake's kinematics directly: stance soles on the ground and still, the COM
    over the support polygon, joint limits."""
    spec = motions.SingleFootLift(beetle, duration=0.4, height=0.01)
    motion = SampleMotion(spec)
    config = SpaceTimeConfig(knot_frames=8, dynamics=False, max_iterations=30)
    problem = MakeSpaceTimeProgram(beetle, motion, config)
    result = SolveSpaceTime(beetle, problem, InitialGuess(beetle, problem))
    assert result.infeasible == [], result.status
    targets = problem.targets
    for k, q in enumerate(result.q_knots):
        assert np.all(q >= beetle.q_lower - 1e-9) and np.all(q <= beetle.q_upper + 1e-9)
        com = beetle.plant.CalcCenterOfMassPositionInWorld(_Set(beetle, q))
        for j in np.flatnonzero(targets.contact[:, k]):
            # The sole's lowest corner on the ground (within the smooth minimum's s log 4), no
            # corner below it; its centre still.
            corners = _Corners(beetle, q, j)
            assert -1e-4 - 1.4e-4 <= corners[:, 2].min() <= 1e-4
            p = _Sole(beetle, q, j)
            if k > 0 and targets.contact[j, k - 1]:
                np.testing.assert_allclose(
                    p[:2], _Sole(beetle, result.q_knots[k - 1], j)[:2], atol=1e-4
                )
        polygon = targets.polygons[k]
        assert SupportPolygon(polygon.vertices).Margin(com) >= config.cop_margin - 1e-4


def test_monster_walk_space_time_converges_on_the_ground_and_carries_its_weight():
    """The monster's 0.06 m/s walk. Its kinematic-only solve (the dynamic step's warm start) takes
    Gauss-Newton steps of ~1 rad that the line search cuts to a fraction; with the damping raised
    after each cut step it converges within its 40 iterations (with the damping nearly fixed it
    stopped at the limit with a stance sole 2 mm off the ground, and the dynamic step from there
    failed its subproblem). Checked with Drake's kinematics: every stance sole's lowest corner on
    the ground and its centre still. The dynamic step from it converges, and over the periodic
    cycle the feet's normal forces average the robot's weight (momentum conservation: the
    cycle's mean vertical momentum rate is zero; within 2 % for the knots' O(h²) differences)."""
    monster = SkeletonModel("monster")
    motion = SampleMotion(motions.Walk(monster, speed=0.06))
    config = SpaceTimeConfig(knot_frames=8)
    warm = KinematicWarmStart(monster, motion, config)
    assert warm.status.startswith("converged"), warm.status
    assert warm.infeasible == []
    contact = MakeSpaceTimeProgram(
        monster, motion, dataclasses.replace(config, dynamics=False)
    ).targets.contact
    for k, q in enumerate(warm.q_knots):
        for j in np.flatnonzero(contact[:, k]):
            assert -2.4e-4 <= _Corners(monster, q, j)[:, 2].min() <= 1e-4
            if k > 0 and contact[j, k - 1]:
                np.testing.assert_allclose(
                    _Sole(monster, q, j)[:2],
                    _Sole(monster, warm.q_knots[k - 1], j)[:2],
                    atol=1e-4,
                )
    problem = MakeSpaceTimeProgram(monster, motion, config)
    assert problem.periodic
    result = SolveSpaceTime(monster, problem, InitialGuess(monster, problem, warm.q_knots))
    assert result.success and result.status.startswith("converged"), result.status
    assert result.infeasible == []
    normal = result.forces[:-1, :, 2].sum(axis=1)  # the last knot is the first one shifted
    assert normal.mean() == pytest.approx(monster.total_mass * monster.gravity, rel=0.02)


def _Set(model, q):
    context = model.plant.CreateDefaultContext()
    model.plant.SetPositions(context, q)
    return context


def _Corners(model, q, j):
    context = _Set(model, q)
    X = model.plant.EvalBodyPoseInWorld(context, model.foot_bodies[j])
    return np.array([X.multiply(c) for c in model.sole_corners[j]])


def _Sole(model, q, j):
    context = _Set(model, q)
    X = model.plant.EvalBodyPoseInWorld(context, model.foot_bodies[j])
    return X.multiply(model.sole_centers[j])


def test_reach_and_the_reachability_check(beetle):
    reach = LegReach(beetle)
    feet, _, _, _ = beetle.AllFeet(beetle.q_home)
    plant, context = beetle.plant, _Set(beetle, beetle.q_home)
    X_TW = plant.EvalBodyPoseInWorld(context, plant.GetBodyByName("torso")).inverse()
    for j, (hip, r_min, r_max) in enumerate(reach):
        d = np.linalg.norm(X_TW.multiply(feet[j]) - hip)
        assert r_min - 1e-9 <= d <= r_max + 1e-9
    spec = motions.Walk(beetle, speed=0.04)
    CheckReachable(beetle, SampleMotion(spec))
    far = dataclasses.replace(spec, feet=dict(spec.feet))
    track = far.feet["rear_left"]
    far.feet["rear_left"] = dataclasses.replace(
        track, positions=[[p[0] - 0.5, p[1], p[2]] for p in track.positions]
    )
    with pytest.raises(InputError, match="rear_left.*reachable workspace"):
        CheckReachable(beetle, SampleMotion(far))


def test_monster_walk_keeps_its_feet_within_reach():
    """The monster's walks at the paper's speeds (0.06, 0.11 m/s) use its 6 cm stride: each foot
    advances 6 cm per cycle and stays within the leg's reach; the generic 2.4 s cycle at 0.11 m/s
    (a 26 cm stride) puts a foot beyond it, which the check names (exit 2 in `design`)."""
    monster = SkeletonModel("monster")
    for speed in (0.06, 0.11):
        spec = motions.Walk(monster, speed=speed)
        assert spec.duration == pytest.approx(0.06 / speed)
        for track in spec.feet.values():
            assert track.positions[-1][0] - track.positions[0][0] == pytest.approx(0.06)
        CheckReachable(monster, SampleMotion(spec))
    with pytest.raises(InputError, match=r"feet\.\w+.*beyond the leg's reach"):
        CheckReachable(monster, SampleMotion(motions.Walk(monster, speed=0.11, period=2.4)))


def _StubSteps(monkeypatch, space_time, offsets, N):
    """Stubs the loop's two steps: `space_time` for the space-time step, and frame-by-frame
    passes whose motion is the plan with joint 6 off by offsets[i] rad in pass i."""
    offsets = iter(offsets)

    def frame_pass(model, dynamics, qpcc, q_plan, contact, progress=None):
        q = q_plan.copy()
        q[:, 6] += next(offsets)
        return dataclasses.make_dataclass(
            "Fr", ["q", "frames_done", "fell", "infeasible", "frame_time"]
        )(q, N - 1, False, [], np.zeros(N - 1))

    monkeypatch.setattr(alternating, "_SpaceTime", space_time)
    monkeypatch.setattr(alternating, "RunFrameByFrame", frame_pass)
    monkeypatch.setattr(alternating, "FrameQpcc", lambda *a, **k: None)


def test_alternating_loop_bookkeeping(beetle, monkeypatch):
    """The loop of Fig. 2 with the two steps stubbed: E_F's weight is off in the initialization,
    then 1, then grows 10 % per iteration; E_F follows the last pass; it stops when they agree."""
    motion = SampleMotion(motions.SingleFootLift(beetle, duration=0.1))
    N = motion.num_frames
    calls = []

    def space_time(model, motion_, config, *, q_follow, follow_weight, loads, limits, q_init, log):
        calls.append((None if q_follow is None else q_follow.copy(), follow_weight))
        knots = motion.times[::5]
        st = dataclasses.make_dataclass("St", ["knot_times", "q_knots"])(
            knots, np.tile(beetle.q_home, (len(knots), 1))
        )
        return st, 0.0

    _StubSteps(monkeypatch, space_time, [1.0, 0.5, 0.001], N)
    config = alternating.AlternatingConfig(max_iterations=5, qpcc=QpccConfig(angle_scale=0.05))
    result = alternating.RunAlternating(
        beetle, motion, make_dynamics=lambda m, dt: None, config=config, log=lambda s: None
    )
    assert result.converged and len(result.iterations) == 3
    assert calls[0][0] is None  # initialization: no E_F
    assert [w for _, w in calls[1:]] == pytest.approx([1.0, 1.1])
    np.testing.assert_allclose(calls[1][0][:, 6], beetle.q_home[6] + 1.0)  # follows q̃
    rms = [r.difference_rms for r in result.iterations]
    expected = [o / 0.05 / np.sqrt(beetle.nq) for o in (1.0, 0.5, 0.001)]
    assert rms == pytest.approx(expected, rel=1e-9)
    assert [r.agreed for r in result.iterations] == [False, False, True]


@pytest.mark.parametrize("skin_loads", [True, False])
def test_the_loop_hands_the_skins_loads_to_the_plan_only_when_asked(
    beetle, monkeypatch, skin_loads
):
    """Section 5.1: after a pass, the next space-time step gets that pass's coupling loads at its
    knots (the initialization gets none); `skin_loads=False` (`design --space-time-skin off`,
    Fig. 13c's condition over the whole loop) never hands them over."""
    motion = SampleMotion(motions.SingleFootLift(beetle, duration=0.1))
    N = motion.num_frames
    knots = motion.times[::5]
    seen_loads, asked = [], []

    def space_time(model, motion_, config, *, q_follow, follow_weight, loads, limits, q_init, log):
        seen_loads.append(loads)
        st = dataclasses.make_dataclass("St", ["knot_times", "q_knots"])(
            knots, np.tile(beetle.q_home, (len(knots), 1))
        )
        return st, 0.0

    class Dynamics:
        """Frame dynamics with a skin: loads tagged by the pass that made them."""

        passes = 0

        def __init__(self):
            Dynamics.passes += 1
            self.tag = Dynamics.passes

        def CouplingLoads(self, times):
            asked.append(np.asarray(times).copy())
            return ("loads of pass", self.tag)

    # Better each time, never agreeing: every iteration runs.
    _StubSteps(monkeypatch, space_time, [1.0, 0.8, 0.6], N)
    config = alternating.AlternatingConfig(max_iterations=3, skin_loads=skin_loads)
    alternating.RunAlternating(
        beetle, motion, make_dynamics=lambda m, dt: Dynamics(), config=config, log=lambda s: None
    )
    assert len(seen_loads) == 3 and seen_loads[0] is None
    if skin_loads:
        assert seen_loads[1:] == [("loads of pass", 1), ("loads of pass", 2)]
        for times in asked:
            np.testing.assert_array_equal(times, knots)
    else:
        assert seen_loads[1:] == [None, None] and not asked


def test_the_torso_attitude_weight_holds_the_walks_heading():
    """The beetle walk's kinematic plan with the default torso-attitude weight (1) turns the torso
    by more than 10 degrees about the vertical (its foot-flatness term, weight 10, keeps the
    3-joint legs' soles flat that way); with weight 300 (`design --torso-attitude-weight`) the
    heading stays within 2 degrees of the plan's. Measured: +-25 and +-0.8 degrees."""
    from drakebots.skinned.space_time import SpaceTimeWeights

    beetle = SkeletonModel("beetle")
    motion = SampleMotion(motions.Walk(beetle))
    spans = []
    for weight in (1.0, 300.0):
        config = SpaceTimeConfig(knot_frames=8, weights=SpaceTimeWeights(base_attitude=weight))
        warm = KinematicWarmStart(beetle, motion, config)
        assert warm.status.startswith("converged"), warm.status
        spans.append(np.degrees(np.ptp(warm.q_knots[:, 3])))
    assert spans[0] > 10.0
    assert spans[1] < 2.0
