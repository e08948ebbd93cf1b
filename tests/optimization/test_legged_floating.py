"""Floating-base gaits and jumps (drakebots.optimization.legged, legged_gaits): issue 67, part 2.

On a small 12-joint quadruped of our own (tests/optimization/data/quad12: four legs of an
abduction joint about x and hip and knee joints about y, left and right mirror images), checked
against references the code under test does not compute: the reflection matrix against one
derived by hand from the URDF's axes and against Drake's kinematics (the mirrored
configuration's feet and body origins are the mirror images of the originals,
plant.CalcPointsPositions), gait offsets against the gaits' definitions, and the planned trot's
and jump's physics against Drake's kinematics of the URDF (joint limits as Drake parses them,
body origins and contact heights by CalcPointsPositions / EvalBodyPoseInWorld) and the
transcription's true complementarity (CheckContactImplicitSolution). The real robots (Solo-12,
A1, ANYmal C) are `paper` tests (scripts/bench_legged.py times them).
"""

from pathlib import Path

import numpy as np
import pytest

from drakebots.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
QUAD = ROOT / "tests" / "optimization" / "data" / "quad12" / "quad12.yaml"
PUBLISHED = ROOT / "scripts" / "examples" / "published"
LEGS = ("FL", "FR", "HL", "HR")


def Model(path=QUAD):
    from drakebots.optimization.legged import MakeRobotTrajoptModel
    from drakebots.robots import GetRobot

    return MakeRobotTrajoptModel(GetRobot(str(path)))


def DrakePlant(path=QUAD):
    """The robot file's plant as Drake builds it (a fresh one, not the transcription's)."""
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.robots import LoadRobot

    plant = MultibodyPlant(0.0)
    LoadRobot(path).AddTo(plant)
    plant.Finalize()
    return plant


def HandReflection(names: list) -> np.ndarray:
    """The reflection about the base's x-z plane, derived by hand for quad12: the base's roll,
    yaw and y change sign; FL <-> FR and HL <-> HR; an abduction joint (axis x, mirrored to
    itself: S R_x(t) S = R_x(-t)) changes sign, hip and knee (axis y) keep theirs."""
    n = len(names)
    P = np.zeros((n, n))
    index = {name: i for i, name in enumerate(names)}
    for name, sign in (
        ("base_roll", -1),
        ("base_pitch", 1),
        ("base_yaw", -1),
        ("base_x", 1),
        ("base_y", -1),
        ("base_z", 1),
    ):
        P[index[name], index[name]] = sign
    for a, b in (("FL", "FR"), ("HL", "HR")):
        for joint, sign in (("HAA", -1), ("HFE", 1), ("KFE", 1)):
            i, j = index[f"{a}_{joint}"], index[f"{b}_{joint}"]
            P[i, j] = P[j, i] = sign
    return P


def test_reflection_matrix_is_the_hand_derived_one():
    from drakebots.optimization.legged import MirrorMatrix

    model = Model()
    P = MirrorMatrix(model)
    np.testing.assert_array_equal(P, HandReflection(model.position_names))


def test_reflected_configuration_mirrors_every_point_in_drake():
    """Feet and every body origin of P q are the mirror images (y -> -y) of those of q, with
    left and right bodies swapped: Drake's kinematics at random configurations."""
    from drakebots.optimization.legged import MirrorMatrix

    model = Model()
    P = MirrorMatrix(model)
    plant = DrakePlant()
    context = plant.CreateDefaultContext()
    rng = np.random.default_rng(3)
    lower = np.maximum(plant.GetPositionLowerLimits(), -1.0)
    upper = np.minimum(plant.GetPositionUpperLimits(), 1.0)
    swap = {"FL": "FR", "FR": "FL", "HL": "HR", "HR": "HL"}
    bodies = ["base"] + [f"{leg}_{part}" for leg in LEGS for part in ("hip", "upper_leg")]
    bodies += [f"{leg}_lower_leg" for leg in LEGS]
    foot = np.array([[0.0], [0.0], [-0.16]])
    for _ in range(3):
        q = rng.uniform(lower, upper)
        positions = {}
        for label, config in (("q", q), ("Pq", P @ q)):
            plant.SetPositions(context, config)
            for body in bodies:
                frame = plant.GetBodyByName(body).body_frame()
                point = foot if body.endswith("lower_leg") else np.zeros((3, 1))
                positions[(label, body)] = plant.CalcPointsPositions(
                    context, frame, point, plant.world_frame()
                )[:, 0]
        for body in bodies:
            partner = swap[body[:2]] + body[2:] if body != "base" else body
            mirrored = positions[("q", body)] * np.array([1.0, -1.0, 1.0])
            np.testing.assert_allclose(positions[("Pq", partner)], mirrored, atol=1e-12)


def test_unpairable_legs_are_refused_by_name(tmp_path):
    """A contact moved 5 cm forward on one leg has no mirrored partner: refused, naming it."""
    from drakebots.optimization.legged import MirrorMatrix

    text = QUAD.read_text().replace(
        "{body: FR_lower_leg, point: [0, 0, -0.16]}",
        "{body: FR_lower_leg, point: [0.05, 0, -0.16]}",
    )
    assert "0.05, 0, -0.16" in text
    robot = tmp_path / "quad12.yaml"
    robot.write_text(text.replace("model: quad12.urdf", f"model: {QUAD.with_suffix('.urdf')}"))
    model = Model(robot)
    with pytest.raises(InputError, match=r"contacts\[0\] \(front_left"):
        MirrorMatrix(model)


# Offsets by definition (fractions of a cycle), per leg front/hind x left/right.
EXPECTED_OFFSETS = {
    "trot": {"FL": 0.0, "HR": 0.0, "FR": 0.5, "HL": 0.5},  # diagonal pairs, half a cycle apart
    "pace": {"FL": 0.0, "HL": 0.0, "FR": 0.5, "HR": 0.5},  # lateral pairs
    "bound": {"FL": 0.0, "FR": 0.0, "HL": 0.5, "HR": 0.5},  # front and hind pairs
    "pronk": {"FL": 0.0, "FR": 0.0, "HL": 0.0, "HR": 0.0},  # all four
    "walk": {"HL": 0.0, "FL": 0.25, "HR": 0.5, "FR": 0.75},  # a quarter cycle apart
}


@pytest.mark.parametrize("gait", sorted(EXPECTED_OFFSETS))
def test_gait_offsets_per_leg(gait):
    from drakebots.optimization.legged_gaits import FindLegs, GaitOffsets

    model = Model()
    legs = FindLegs(model)
    # The contacts' order in quad12.yaml: FL, FR, HL, HR.
    assert [leg.name for leg in legs] == ["front_left", "front_right", "hind_left", "hind_right"]
    assert [leg.joints for leg in legs] == [[f"{g}_HAA", f"{g}_HFE", f"{g}_KFE"] for g in LEGS]
    offsets = GaitOffsets(gait, legs)
    np.testing.assert_array_equal(offsets, [EXPECTED_OFFSETS[gait][g] for g in LEGS])


# Each gait's foot sequence on 21 knots (phase k/20), derived by hand from its offsets and
# duty factor with the default margin 0.1 of a cycle: at knots 0-19 (knot 20 is knot 0 a cycle
# on) where each leg (FL, FR, HL, HR) must stand ("S") or be in the air ("A"); "." free.
EXPECTED_SEQUENCES = {
    "trot": (
        "..SSSSSSS...AAAAAAA.",
        "..AAAAAAA...SSSSSSS.",
        "..AAAAAAA...SSSSSSS.",
        "..SSSSSSS...AAAAAAA.",
    ),
    "pace": (
        "..SSSSSSS...AAAAAAA.",
        "..AAAAAAA...SSSSSSS.",
        "..SSSSSSS...AAAAAAA.",
        "..AAAAAAA...SSSSSSS.",
    ),
    "bound": (
        "..SSSSSSS...AAAAAAA.",
        "..SSSSSSS...AAAAAAA.",
        "..AAAAAAA...SSSSSSS.",
        "..AAAAAAA...SSSSSSS.",
    ),
    "pronk": ("..SSSSSSS...AAAAAAA.",) * 4,
    # walk: offsets HL 0, FL 0.25, HR 0.5, FR 0.75, duty 0.75 (stance core 0.1-0.65 of its own
    # phase, swing core 0.85-0.9).
    "walk": (
        "..AA...SSSSSSSSSSSS.",
        "SSSSSSSSS...AA...SSS",
        "..SSSSSSSSSSSS...AA.",
        "SSSS...AA...SSSSSSSS",
    ),
}


@pytest.mark.parametrize("gait", sorted(EXPECTED_SEQUENCES))
def test_gait_schedule_bounds_every_leg_as_its_gait(gait):
    """MakeGaitProblem's bounds on contact[k] (phi at knot k + 1, and clearance[0] at knot 0)
    hold each leg on the ground in its stance core and SWING_CLEARANCE (0.02) home heights
    above it in its swing core: against the sequences derived by hand above."""
    from drakebots.optimization.legged import GaitConfig, MakeGaitProblem

    model = Model()
    config = GaitConfig(robot=str(QUAD), period=0.4, distance=0.1, knots=21, gait=gait)
    problem = MakeGaitProblem(model, config)
    lift = 0.02 * model.home[model.z_index]
    lower, upper = np.zeros((21, 4)), np.full((21, 4), np.inf)
    for binding in problem.bindings["contact"]:
        name = binding.evaluator().get_description()
        if name.startswith("contact["):
            knot = int(name[8:-1]) + 1
            lower[knot] = binding.evaluator().lower_bound()[:4]
            upper[knot] = binding.evaluator().upper_bound()[:4]
    for leg, sequence in enumerate(EXPECTED_SEQUENCES[gait]):
        for knot in range(1, 21):  # contact[k] bounds knots 1..20
            mark = sequence[knot % 20]
            stands, flies = upper[knot, leg] == 0.0, lower[knot, leg] == pytest.approx(lift)
            assert (stands, flies) == (mark == "S", mark == "A"), (gait, leg, knot)


@pytest.mark.parametrize("gait", sorted(EXPECTED_SEQUENCES))
def test_stance_load_bounds_each_standing_foot_in_its_stance_core(gait):
    """GaitConfig.stance_load (default 0.05): a lower bound on the normal force of each foot
    where EXPECTED_SEQUENCES (derived by hand) says it stands, and nowhere else, at 0.05 of
    the weight (gamma is in units of m g, which Drake's plant gives here); 0 adds none."""
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.optimization.legged import GaitConfig, MakeGaitProblem
    from drakebots.robots import LoadRobot

    model = Model()
    config = GaitConfig(robot=str(QUAD), period=0.4, distance=0.1, knots=21, gait=gait)
    problem = MakeGaitProblem(model, config)
    plant = MultibodyPlant(0.0)
    robot = LoadRobot(QUAD)
    robot.AddTo(plant)
    plant.Finalize()
    weight = plant.CalcTotalMass(plant.CreateDefaultContext()) * robot.gravity
    gamma = problem.vars.gamma
    where = {}
    for binding in problem.bindings["stance_load"]:
        (index,) = problem.prog.FindDecisionVariableIndices(binding.variables())
        k, c = np.argwhere(
            np.reshape(problem.prog.FindDecisionVariableIndices(gamma.ravel()), gamma.shape)
            == index
        )[0]
        where[(int(k) + 1, int(c))] = binding.evaluator().lower_bound()[0]
    expected = {
        (knot, leg)
        for leg, sequence in enumerate(EXPECTED_SEQUENCES[gait])
        for knot in range(1, 21)
        if sequence[knot % 20] == "S"
    }
    assert set(where) == expected
    for least in where.values():
        assert least * problem.dynamics.force_scale == pytest.approx(0.05 * weight, rel=1e-12)
    config.stance_load = 0.0
    assert MakeGaitProblem(model, config).bindings["stance_load"] == []
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(InputError, match="stance_load"):
            GaitConfig(robot=str(QUAD), gait=gait, stance_load=bad).Check()


def test_a_schedule_margin_of_half_a_cycle_only_seeds_the_guess():
    from drakebots.optimization.legged import GaitConfig, MakeGaitProblem

    config = GaitConfig(
        robot=str(QUAD), period=0.4, distance=0.1, knots=21, gait="trot", schedule_margin=0.5
    )
    problem = MakeGaitProblem(Model(), config)
    assert problem.bindings["schedule"] == []
    with pytest.raises(InputError, match="schedule_margin"):
        GaitConfig(robot=str(QUAD), gait="trot", schedule_margin=0.6).Check()


def test_a_gait_needs_four_legs():
    from drakebots.optimization.legged_gaits import FindLegs, GaitOffsets

    walker = Model(ROOT / "scripts" / "examples" / "walker" / "walker.yaml")
    with pytest.raises(InputError, match="needs four legs"):
        GaitOffsets("trot", FindLegs(walker))


def DrakeHeights(plant, q, bodies_points):
    """(knots, points) heights by Drake's kinematics of (body, point) pairs."""
    context = plant.CreateDefaultContext()
    out = np.zeros((len(q), len(bodies_points)))
    for k, qk in enumerate(q):
        plant.SetPositions(context, qk)
        for i, (body, point) in enumerate(bodies_points):
            frame = plant.GetBodyByName(body).body_frame()
            p = plant.CalcPointsPositions(
                context, frame, np.reshape(point, (3, 1)), plant.world_frame()
            )
            out[k, i] = p[2, 0]
    return out


def _Solve(problem, solver):
    from drakebots.optimization.legged import SolveMotion
    from drakebots.workflow import Reporter

    messages = []
    outcome, check, _ = SolveMotion(problem, solver, Reporter(lambda e: messages.append(e)))
    return outcome, check, messages


@pytest.fixture(scope="module")
def trot():
    from drakebots.optimization.contact_implicit import ReconstructTrajectory
    from drakebots.optimization.legged import GaitConfig, MakeGaitProblem

    model = Model()
    config = GaitConfig(robot=str(QUAD), period=0.4, distance=0.1, knots=21, gait="trot")
    problem = MakeGaitProblem(model, config)
    outcome, check, messages = _Solve(problem, config.solver)
    traj = ReconstructTrajectory(problem, outcome.result.get_x_val())
    return model, config, outcome, check, traj, messages


def test_floating_trot_is_physically_whole(trot):
    """quad12's 0.4 s / 0.1 m trot: periodic, anchored, within the URDF's joint and effort
    limits, every body origin and the base's collision box above the ground, stance feet on it
    at the start, the reflection
    half a cycle on, and the true complementarity within 1e-4 N m."""
    model, config, outcome, check, traj, _ = trot
    assert check.max_violation <= 1e-4
    assert check.max_complementarity_violation <= 1e-4
    q, names = traj.q, model.position_names
    x, y, yaw = (names.index(f"base_{a}") for a in ("x", "y", "yaw"))
    N = len(q)
    # Anchors and periodicity.
    assert q[0, x] == pytest.approx(0.0, abs=1e-9) and q[-1, x] == pytest.approx(0.1, abs=1e-9)
    assert q[0, y] == pytest.approx(0.0, abs=1e-9) and q[0, yaw] == pytest.approx(0.0, abs=1e-9)
    others = [i for i in range(len(names)) if i != x]
    np.testing.assert_allclose(q[-1, others], q[0, others], atol=1e-6)
    # The trot's symmetry: the hand-derived reflection of knot 0, 0.05 m on, at knot 10.
    P = HandReflection(names)
    shift = np.zeros(len(names))
    shift[x] = 0.05
    np.testing.assert_allclose(q[(N - 1) // 2], P @ q[0] + shift, atol=1e-6)
    # Joint limits as Drake parses the URDF (this plant is not the transcription's).
    plant = DrakePlant()
    assert np.all(q >= plant.GetPositionLowerLimits() - 1e-6)
    assert np.all(q <= plant.GetPositionUpperLimits() + 1e-6)
    assert np.abs(traj.u).max() <= 0.8 * 3.0 + 1e-6  # effort_fraction of the URDF's 3 N m
    # Every body origin above the ground at every knot; the feet on or above it.
    bodies = [b for b in ("base",)] + [
        f"{g}_{p}" for g in LEGS for p in ("hip", "upper_leg", "lower_leg")
    ]
    origins = DrakeHeights(plant, q, [(b, np.zeros(3)) for b in bodies])
    assert origins.min() >= -1e-6
    feet = DrakeHeights(plant, q, [(f"{g}_lower_leg", [0, 0, -0.16]) for g in LEGS])
    assert feet.min() >= -1e-6
    # The base's collision box (the URDF's 0.3 x 0.16 x 0.06 m) whole above the ground: its
    # corners, from the URDF's size, not from the code under test.
    corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3)
    box = DrakeHeights(plant, q, [("base", c * [0.15, 0.08, 0.03]) for c in corners])
    assert box.min() >= -1e-6
    # Stance feet at the start (trot: FL and HR at phase 0) on the ground.
    np.testing.assert_allclose(feet[0, [0, 3]], 0.0, atol=1e-6)
    # The foot sequence is a trot's (diagonal pairs in phase, half a cycle apart), knot by knot
    # from Drake's feet: 21 knots, phase k/20; FL and HR stand for phases [0, 0.5) and FR and
    # HL for [0.5, 1); each stance and swing without its first and last 0.1 of a cycle (the
    # schedule_margin, where touchdown and lift-off are free): knots 2-8 and 12-18.
    first, second = [2, 3, 4, 5, 6, 7, 8], [12, 13, 14, 15, 16, 17, 18]
    lift = 0.02 * model.home[names.index("base_z")] - 1e-6  # SWING_CLEARANCE home heights
    for down, up in ((first, second), (second, first)):
        pair, other = ([0, 3], [1, 2]) if down is first else ([1, 2], [0, 3])
        np.testing.assert_allclose(feet[np.ix_(down, pair)], 0.0, atol=1e-6)
        assert feet[np.ix_(down, other)].min() >= lift
        assert feet[np.ix_(up, pair)].min() >= lift


def test_guard_points_hold_the_base_collision_box_corners():
    """GuardPoints: the origins of the moved bodies and the 8 corners of the base's collision
    box, which the URDF gives as 0.3 x 0.16 x 0.06 m about the base's origin."""
    from drakebots.optimization.legged import GuardPoints

    model = Model()
    bodies, points, names = GuardPoints(model)
    base = int(model.plant.GetBodyByName("base").index())
    on_base = points[bodies == base]
    expected = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3)
    expected = expected * [0.15, 0.08, 0.03]
    key = lambda a: sorted(map(tuple, np.round(a, 9)))  # noqa: E731
    assert key(on_base[np.abs(on_base).sum(axis=1) > 0]) == key(expected)
    assert sum(n.startswith("base_box_corner") for n in names) == 8


def _SoloMeshVertices(model, names):
    """{link: (vertices, 3) in the link's frame} of Solo-12's collision meshes, read with
    trimesh from the files Drake was given and posed by Drake's SceneGraph."""
    import trimesh
    from pydrake.geometry import Role

    from drakebots.robots.base import MakeRobotModelDiagram

    probe = MakeRobotModelDiagram(model.robot)
    inspector = probe.scene_graph.model_inspector()
    out = {}
    for name in names:
        frame = probe.plant.GetBodyFrameIdIfExists(probe.plant.GetBodyByName(name).index())
        parts = []
        for geometry in inspector.GetGeometries(frame, Role.kProximity):
            path = str(inspector.GetShape(geometry).source().path())
            mesh = trimesh.load(path, force="mesh")
            X_BG = inspector.GetPoseInFrame(geometry)
            parts.append((X_BG.rotation().matrix() @ mesh.vertices.T).T + X_BG.translation())
        out[name] = np.vstack(parts)
    return out


def _Solo():
    from drakebots.robots.published import CmeelPrefix

    if not (CmeelPrefix() / "share" / "example-robot-data" / "robots").is_dir():
        pytest.skip("example-robot-data not installed")
    return Model(PUBLISHED / "solo12.yaml")


SOLO_LINKS = [f"{g}_{part}" for g in LEGS for part in ("SHOULDER", "UPPER_LEG")]


def test_solo12_guards_hold_every_link_that_carries_no_foot():
    """Solo-12 as published: the links that carry no foot (from its URDF: each leg's shoulder
    and upper leg) have guard boxes (LinkBoxes), the base's is always guarded and theirs when
    named; at random configurations every vertex of each link's collision mesh is at or above
    the lowest of its box's corners (the box bounds the mesh)."""
    from drakebots.optimization.legged import BodyIndexOf, GuardPoints, LinkBoxes

    model = _Solo()
    plant = model.plant
    assert set(LinkBoxes(model)) == set(SOLO_LINKS)

    def Boxed(links):
        bodies, _, names = GuardPoints(model, links)
        return {
            plant.get_body(BodyIndexOf(int(b))).name() for b, n in zip(bodies, names) if "box" in n
        }

    assert Boxed(()) == {"base_link"}
    assert Boxed(("FL_UPPER_LEG",)) == {"base_link", "FL_UPPER_LEG"}
    vertices = _SoloMeshVertices(model, ["base_link", *SOLO_LINKS])
    bodies, points, _ = GuardPoints(model, SOLO_LINKS)
    context = plant.CreateDefaultContext()
    rng = np.random.default_rng(1)
    lower = np.maximum(plant.GetPositionLowerLimits(), -np.pi)
    upper = np.minimum(plant.GetPositionUpperLimits(), np.pi)
    for _ in range(5):
        plant.SetPositions(context, rng.uniform(lower, upper))
        for name, p_B in vertices.items():
            body = plant.GetBodyByName(name)
            z = plant.CalcPointsPositions(context, body.body_frame(), p_B.T, plant.world_frame())
            mine = points[np.flatnonzero(bodies == int(body.index()))].T
            z_guard = plant.CalcPointsPositions(
                context, body.body_frame(), mine, plant.world_frame()
            )
            assert z[2].min() >= z_guard[2].min() - 1e-9, name


def test_dipping_links_are_found_and_guarded():
    """Solo-12 at its home pose lowered until its upper legs' meshes reach 5 mm below the
    ground (from the meshes' vertices): DippingLinks names the upper legs (their boxes reach at
    least as low), not the shoulders, which stay above; a problem built with those links adds
    8 guard rows for each at every knot."""
    from drakebots.optimization.legged import DippingLinks, GaitConfig, MakeGaitProblem

    model = _Solo()
    plant = model.plant
    vertices = _SoloMeshVertices(model, SOLO_LINKS)
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, model.home)
    lowest = {}
    for name, p_B in vertices.items():
        frame = plant.GetBodyByName(name).body_frame()
        lowest[name] = plant.CalcPointsPositions(context, frame, p_B.T, plant.world_frame())[
            2
        ].min()
    thighs = min(lowest[f"{g}_UPPER_LEG"] for g in LEGS)
    q = model.home.copy()
    q[model.z_index] -= thighs + 0.005
    dipping = DippingLinks(model, q[None])
    assert {f"{g}_UPPER_LEG" for g in LEGS} <= set(dipping)
    assert all(
        dipping[f"{g}_UPPER_LEG"] <= lowest[f"{g}_UPPER_LEG"] - thighs - 0.005 + 1e-9 for g in LEGS
    )
    for g in LEGS:
        if lowest[f"{g}_SHOULDER"] - thighs - 0.005 > 0.01:
            assert f"{g}_SHOULDER" not in dipping
    assert DippingLinks(model, model.home[None]) == {}
    config = GaitConfig(robot=str(PUBLISHED / "solo12.yaml"), knots=21, gait="trot")

    def GuardRows(problem):
        return sum(b.evaluator().num_outputs() for b in problem.bindings["guard"])

    plain = GuardRows(MakeGaitProblem(model, config))
    guarded = GuardRows(
        MakeGaitProblem(model, config, guard_links=("FL_UPPER_LEG", "HR_UPPER_LEG"))
    )
    assert guarded - plain == 2 * 8 * 21


def test_solve_reports_iterations_and_violation(trot):
    *_, outcome, _, _, messages = trot
    lines = [e.message for e in messages if e.message and "IPOPT iteration" in e.message]
    assert lines and all("constraint violation" in line for line in lines)
    # At least one line every PROGRESS_INTERVAL_S (2 s) of solving, give or take an iteration.
    assert len(lines) >= int(outcome.solve_time_s / 5.0)


def test_floating_jump_has_a_flight_phase():
    """quad12's 0.1 m jump: every foot off the ground (Drake's kinematics) at the 3 knots
    before the apex and at the apex, which is 0.1 m above the home height; body origins above
    the ground throughout."""
    from drakebots.optimization.contact_implicit import ReconstructTrajectory
    from drakebots.optimization.legged import JumpConfig, MakeJumpProblem

    model = Model()
    config = JumpConfig(robot=str(QUAD), height=0.1, knots=21)
    problem = MakeJumpProblem(model, config)
    outcome, check, _ = _Solve(problem, config.solver)
    assert check.max_violation <= 1e-4 and check.max_complementarity_violation <= 1e-4
    q = ReconstructTrajectory(problem, outcome.result.get_x_val()).q
    plant = DrakePlant()
    z = model.position_names.index("base_z")
    assert q[-1, z] == pytest.approx(model.home[z] + 0.1, abs=1e-9)
    feet = DrakeHeights(plant, q, [(f"{g}_lower_leg", [0, 0, -0.16]) for g in LEGS])
    assert feet[-4:].min() >= 0.01 * model.home[z] - 1e-6
    np.testing.assert_allclose(feet[0], 0.0, atol=1e-6)
    bodies = ["base"] + [f"{g}_{p}" for g in LEGS for p in ("hip", "lower_leg")]
    assert DrakeHeights(plant, q, [(b, np.zeros(3)) for b in bodies]).min() >= -1e-6


def test_guard_rows_in_the_fast_path_match_drake_and_differences():
    """The fast path's guard[k] rows (AddGuardHeightConstraints) on a random floating tree:
    values as Drake evaluates the bindings, the Jacobian against central differences, and the
    Hessian of y^T g (guard rows only) against differences of the Jacobian."""
    from drakebots.optimization.contact_implicit import MakeContactImplicitProblem
    from drakebots.optimization.contact_implicit_constraints import AddGuardHeightConstraints
    from drakebots.optimization.contact_implicit_fast import ContactImplicitNlp
    from tests.optimization.test_contact_implicit_fast import RandomDynamics

    dyn = RandomDynamics()
    problem = MakeContactImplicitProblem(dyn, num_knots=4, time_step=0.01, initial=("periodic",))
    rng = np.random.default_rng(4)
    bodies = [2, 3, 5]
    points = rng.uniform(-0.1, 0.1, (3, 3))
    AddGuardHeightConstraints(problem.prog, problem.vars, dyn, bodies, points)
    prog = problem.prog
    x = rng.uniform(-0.5, 0.5, prog.num_vars())
    nlp = ContactImplicitNlp(problem)
    nlp.Prepare(x)
    g = nlp.Constraints(x)
    guard = [
        (b, s, c) for b, s, c in nlp._row_bindings if "guard" in b.evaluator().get_description()
    ]
    assert len(guard) == 4
    rows = []
    for binding, start, count in guard:
        drake = binding.evaluator().Eval(x[prog.FindDecisionVariableIndices(binding.variables())])
        np.testing.assert_allclose(g[start : start + count], drake, atol=1e-12)
        rows += list(range(start, start + count))
    eps = 1e-6
    J = nlp.Jacobian(x).toarray()[rows]
    J_fd = np.column_stack(
        [
            (nlp.Constraints(x + eps * e) - nlp.Constraints(x - eps * e))[rows] / (2 * eps)
            for e in np.eye(len(x))
        ]
    )
    assert np.abs(J - J_fd).max() < 1e-7
    y = np.zeros(nlp.num_rows)
    y[rows] = rng.uniform(-1, 1, len(rows))
    H = nlp.Hessian(x, 0.0, y).toarray()
    H_fd = np.array(
        [
            (nlp.Jacobian(x + eps * e) - nlp.Jacobian(x - eps * e)).T @ y / (2 * eps)
            for e in np.eye(len(x))
        ]
    )
    H_fd = 0.5 * (H_fd + H_fd.T)
    assert np.abs(H_fd).max() > 1e-3  # the heights' curvature is not nothing
    assert np.abs(H - H_fd).max() < 1e-6 * np.abs(H_fd).max()


@pytest.mark.parametrize(
    "args, words",
    [
        (["--gait", "trot", "--knots", "20"], "--knots: must be odd with gait trot"),
        (["--gait", "gallop"], "invalid choice: 'gallop'"),
        (["--period", "1e-300"], "period 1e-300 s: a knot every"),
        (["--gait", "trot", "--knots", "21", "--schedule-margin", "0.7"], "--schedule-margin: a"),
        (["--gait", "trot", "--knots", "21", "--schedule-margin", "nan"], "--schedule-margin: m"),
        (["--gait", "walk", "--stance-load", "1.5"], "--stance-load: a fraction of the robot"),
    ],
)
def test_gait_flag_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, words):
    from drakebots.cli import main as cli_main

    out = tmp_path / "out"
    argv = ["optimize", "gait", str(QUAD), "--period", "0.4", "--distance", "0.1", *args]
    parse_time = "gallop" in args or "nan" in args  # argparse's own exit 2
    with pytest.raises(SystemExit) if parse_time else _NoRaise():
        assert cli_main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert words in err[-1], err
    assert not out.exists()


class _NoRaise:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.paper
@pytest.mark.parametrize("gait", ["pace", "bound", "walk", "pronk"])
def test_solo12_gaits_keep_their_foot_sequence_and_are_tracked(gait):
    """Solo-12 at 2.7 N m, 0.1 m per 0.4 s, 21 knots, each gait from the home pose with no
    tuning: feasible and complementary, accepted (Drake's closed-loop run follows it for 3
    cycles) but for the bound, and its feet, by Drake's
    kinematics of a plant built afresh from the robot file, on the ground and in the air where
    EXPECTED_SEQUENCES (derived by hand from the gaits' offsets) says; contacts in the robot
    file's order FL, FR, HL, HR."""
    from drakebots.optimization.legged import GaitConfig, OptimizeGait

    model = _Solo()
    solo = PUBLISHED / "solo12.yaml"
    config = GaitConfig(robot=str(solo), period=0.4, distance=0.1, knots=21, gait=gait)
    result = OptimizeGait(config)
    assert result.figures["max_violation"] <= 1e-4
    assert result.figures["true_complementarity"] <= 1e-4
    if gait != "bound":
        # The bound's run is marginal, so its acceptance is not required: 0.0508 m off the plan
        # at the end of its second cycle against the 0.0482 m tolerance before the stance load
        # (refused), 0.0431 m with it on one machine (docs/own_robot.md).
        assert result.success, result.reason
        assert result.figures["tracked_cycles"] == 3
        assert result.figures["tracked_distance_per_cycle"] == pytest.approx(0.1, rel=0.25)
    plant = DrakePlant(solo)
    feet = DrakeHeights(plant, result.q, list(model.robot.contacts))
    # Each standing foot carries at least GaitConfig.stance_load (0.05) of the weight, by
    # Drake's mass; forces[k] act at knot k + 1.
    weight = plant.CalcTotalMass(plant.CreateDefaultContext()) * model.robot.gravity
    for leg, sequence in enumerate(EXPECTED_SEQUENCES[gait]):
        for knot in range(1, 21):
            if sequence[knot % 20] == "S":
                normal = result.contact_forces[knot - 1, leg, 2]
                assert normal >= 0.05 * weight - 1e-4, (leg, knot, normal)
    lift = 0.02 * model.home[model.z_index] - 1e-6
    for leg, sequence in enumerate(EXPECTED_SEQUENCES[gait]):
        for knot in range(21):
            mark = sequence[knot % 20]
            if mark == "S":
                assert abs(feet[knot, leg]) <= 1e-6, (leg, knot, feet[knot, leg])
            elif mark == "A":
                assert feet[knot, leg] >= lift, (leg, knot, feet[knot, leg])
