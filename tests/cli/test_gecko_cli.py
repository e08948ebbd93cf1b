"""`drakebots simulate gecko` and `drakebots gecko velocity-space|navigate`: results folders,
exit codes (2: bad input, nothing written; 1: a target missed, everything kept)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from drakebots.cli import main


def drakebots(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "drakebots", *args], capture_output=True, text=True, timeout=timeout
    )


def _Exit2NothingWritten(argv, tmp_path, capsys, expect):
    out = tmp_path / "out"
    code = main([*argv, "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert expect in captured.err, captured.err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


@pytest.mark.parametrize(
    "argv, expect",
    [
        (["simulate", "gecko", "--gait-law", "--q1", "95"], "--q1"),
        (["simulate", "gecko", "--gait-law", "--q1", "30"], "--q1"),
        (["simulate", "gecko", "--gait-law", "--q2", "0.7"], "--q2"),
        (["simulate", "gecko", "--q1", "80"], "--gait-law"),
        (["simulate", "gecko", "--gait-law", "--cycles", "-1"], "--cycles"),
        (["gecko", "velocity-space", "--q1", "30,60,90"], "q1"),
        (["gecko", "velocity-space", "--q2=-0.9,0,0.5"], "q2"),
        (["gecko", "velocity-space", "--q1", "50,x,90"], "--q1"),
        (["gecko", "navigate", "--targets", "0.4,0.1; 0.6"], "entry 2"),
        (["gecko", "navigate", "--targets", "0.4,abc"], "entry 1"),
        (["gecko", "navigate", "--targets", " ; "], "no targets"),
        (["gecko", "navigate", "--fit", "/nonexistent/fit"], "--fit"),
        (["gecko", "navigate", "--start", "0,0"], "--start"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(argv, expect, tmp_path, capsys):
    _Exit2NothingWritten(argv, tmp_path, capsys, expect)


def test_course_file_with_unknown_key(tmp_path, capsys):
    course = tmp_path / "course.yaml"
    course.write_text("targets: [{x: 0.3, y: 0.0}]\nobstacels: []\n")
    _Exit2NothingWritten(
        ["gecko", "navigate", "--course", str(course)], tmp_path, capsys, "obstacels"
    )
    course.write_text("targets: [{x: 0.3, y: 0.0, z: 1}]\n")
    _Exit2NothingWritten(["gecko", "navigate", "--course", str(course)], tmp_path, capsys, "z")
    course.write_text("targets: [{x: 0.3, y: 0.0}]\nobstacles: [{x: 0.3, y: 0.01, radius: 0.05}]\n")
    _Exit2NothingWritten(
        ["gecko", "navigate", "--course", str(course)], tmp_path, capsys, "inside obstacle"
    )


def test_simulate_gecko_gait_law_writes_every_file(tmp_path):
    out = tmp_path / "turn"
    result = drakebots(
        "simulate", "gecko", "--gait-law", "--q1", "80", "--q2", "-0.5", "--duration", "1.2",
        "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for name in (
        "summary.json",
        "log.npz",
        "replay.html",
        "gait_signals.png",
        "track.png",
        "torques.png",
        "base_height.png",
    ):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success"] is True
    assert summary["figures"]["q1_deg"] == 80 and summary["figures"]["q2"] == -0.5
    assert summary["inputs"]["gait_law"] is True
    # Eq. 14 by hand at q1 = +-80 deg, q2 = -0.5, c1 = 1: legs 45 -+ (q1/2 + |q1| q2/2) + q1 q2,
    # torso q1 + |q1| q2; the front-left/hind-left legs' -15 deg clipped at 0.001 deg (the
    # authors' one-chamber minimum).
    references = summary["figures"]["references_deg"]
    np.testing.assert_allclose(references["positive_pose"], [0.001, 25, 40, 0.001, 25])
    np.testing.assert_allclose(references["negative_pose"], [145, 25, -120, 145, 25])
    with np.load(out / "log.npz") as log:
        fixation = log["extra_fixation"]
        assert fixation.shape[1] == 4
        np.testing.assert_array_equal(fixation[0], [1, 0, 0, 1])
        torso = log["positions"][:, :7]  # quaternion (w, x, y, z), then x, y, z
    # The net motion from the torso body's own coordinates: the yaw of its quaternion (q2 < 0
    # turns left, Eq. 4; the figure measures the torso's midline, within 0.01 deg of the body)
    # and its planar displacement.
    yaw = 2 * np.arctan2(torso[:, 3], torso[:, 0])
    rotation = np.degrees(yaw[-1] - yaw[0])
    assert summary["figures"]["net_rotation_deg"] == pytest.approx(rotation, abs=0.01)
    assert summary["figures"]["net_rotation_deg"] > 5.0
    displacement = np.linalg.norm(torso[-1, 4:6] - torso[0, 4:6])
    assert summary["figures"]["net_displacement_m"] == pytest.approx(displacement)


def test_navigate_and_a_missed_target(tmp_path):
    """The geometric model on a short course with an obstacle: exit 0 and the figures; then the
    same course with a budget of 2 steps: exit 1, success false, closest approach recorded."""
    course = tmp_path / "course.yaml"
    course.write_text(
        "name: two targets\n"
        "start: [0.0, 0.0, 0.0]\n"
        "targets: [{x: 0.3, y: 0.1}, {x: 0.45, y: -0.15}]\n"
        "obstacles: [{x: 0.3, y: -0.25, radius: 0.04}]\n"
    )
    out = tmp_path / "ok"
    code = main(["gecko", "navigate", "--course", str(course), "--model", "geometric",
                 "--out", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    for name in ("summary.json", "course.png", "distance_function.png", "navigation.npz",
                 "replay.html"):  # fmt: skip
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    figures = summary["figures"]
    assert summary["success"] is True
    assert figures["targets_reached"] == 2
    assert len(figures["steps_per_target"]) == 2 and figures["final_error_m"] < 0.05
    assert figures["path_length_m"] > 0.4 and len(figures["obstacle_clearance_m"]) == 1
    # The figures from the recorded track (the torso midpoint), not from the planner's
    # bookkeeping: its length, its closest approach to each target (within the 5 cm radius),
    # its end at the last target; the limbs pass the obstacle no farther than the torso does.
    targets = np.array([[0.3, 0.1], [0.45, -0.15]])
    with np.load(out / "navigation.npz") as nav:
        track = nav["track_poses"][:, :2]
    length = np.sum(np.linalg.norm(np.diff(track, axis=0), axis=1))
    assert figures["path_length_m"] == pytest.approx(length, rel=1e-9)
    closest = [np.linalg.norm(track - t, axis=1).min() for t in targets]
    np.testing.assert_allclose(figures["closest_approach_m"], closest, rtol=1e-9)
    assert max(closest) < 0.05
    assert figures["final_error_m"] == pytest.approx(np.linalg.norm(track[-1] - targets[1]))
    torso_clearance = np.linalg.norm(track - [0.3, -0.25], axis=1).min() - 0.04
    assert 0.0 < figures["obstacle_clearance_m"][0] <= torso_clearance
    missed = tmp_path / "missed"
    code = main(["gecko", "navigate", "--course", str(course), "--model", "geometric",
                 "--max-steps", "2", "--out", str(missed), "--no-progress"])  # fmt: skip
    assert code == 1
    summary = json.loads((missed / "summary.json").read_text())
    assert summary["success"] is False and "not reached within 2 steps" in summary["reason"]
    closest = summary["figures"]["closest_approach_m"][0]
    assert 0.05 < closest < np.hypot(0.3, 0.1)
    with np.load(missed / "navigation.npz") as nav:
        track = nav["track_poses"][:, :2]
        assert len(nav["step_poses"]) == 2  # the budget: two decisions
    assert closest == pytest.approx(np.linalg.norm(track - targets[0], axis=1).min(), rel=1e-9)
    assert (missed / "course.png").is_file()


def _Walk(coefficients, q1, q2, pose, n):
    """The pose after n cycles of the gait (q1 deg, q2) under an Eq. 16 fit (rows d_eps rad,
    dx m, dy m over the terms 1, q1, q2, q1^2, q2^2, q1 q2), composed cycle by cycle (Eq. 17)."""
    terms = np.array([1.0, q1, q2, q1 * q1, q2 * q2, q1 * q2])
    d_eps, dx, dy = np.asarray(coefficients) @ terms
    x, y, eps = pose
    for _ in range(n):
        x, y = x + np.cos(eps) * dx - np.sin(eps) * dy, y + np.sin(eps) * dx + np.cos(eps) * dy
        eps += d_eps
    return np.array([x, y, eps])


def test_velocity_space_fit_feeds_navigate(tmp_path):
    """The velocity space's samples are the rigid motions between its logged poses, its fit is
    numpy's least-squares fit of them, its two flags say what the samples show; navigate
    decides with that fit (each step's d_n is the fit walked from the step's pose) and ends
    within the 5 cm target radius."""
    space = tmp_path / "space"
    code = main(["gecko", "velocity-space", "--model", "geometric", "--q1", "50,70,90",
                 "--q2=-0.5,0,0.5", "--out", str(space), "--no-progress"])  # fmt: skip
    assert code == 0
    fit = json.loads((space / "fit.json").read_text())
    with np.load(space / "velocity_space.npz") as saved:
        q1, q2, motion, poses = (saved[k] for k in ("q1_deg", "q2", "motion", "poses"))
    start, end = poses[:, 0], poses[:, -1]
    c, s = np.cos(start[:, 2]), np.sin(start[:, 2])
    step = end[:, :2] - start[:, :2]
    rigid = np.column_stack(
        [end[:, 2] - start[:, 2], c * step[:, 0] + s * step[:, 1], -s * step[:, 0] + c * step[:, 1]]
    )
    np.testing.assert_allclose(motion, rigid, atol=1e-12)
    terms = np.column_stack([np.ones_like(q1), q1, q2, q1 * q1, q2 * q2, q1 * q2])
    lstsq = np.linalg.lstsq(terms, motion, rcond=None)[0].T
    np.testing.assert_allclose(fit["coefficients"], lstsq, rtol=1e-8, atol=1e-12)
    summary = json.loads((space / "summary.json").read_text())
    turns = np.all(motion[q2 > 0, 0] < 0) and np.all(motion[q2 < 0, 0] > 0)
    assert summary["figures"]["positive_q2_turns_negative"] is bool(turns) is True
    grows = all(
        np.all(np.diff(motion[q2 == v, 1][np.argsort(q1[q2 == v])]) > 0) for v in (-0.5, 0, 0.5)
    )
    assert summary["figures"]["dx_grows_with_q1"] is bool(grows) is True
    assert (space / "velocity_space.png").is_file() and (space / "replay.html").is_file()
    out = tmp_path / "nav"
    code = main(["gecko", "navigate", "--targets", "0.25,0.05", "--fit", str(space),
                 "--model", "geometric", "--out", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fit"]["source"].startswith("drakebots velocity space")
    target = np.array([0.25, 0.05])
    with np.load(out / "navigation.npz") as nav:
        for pose, (a, b), n, dn in zip(
            nav["step_poses"], nav["step_q"], nav["step_horizon"], nav["step_dn"], strict=True
        ):
            walked = _Walk(fit["coefficients"], a, b, pose, int(n))
            assert np.linalg.norm(walked[:2] - target) == pytest.approx(dn, rel=1e-9)
        assert np.linalg.norm(nav["track_poses"][-1, :2] - target) <= 0.05


@pytest.mark.paper
def test_issue_examples(tmp_path):
    """The issue's command lines (Drake model), end to end."""
    turn = tmp_path / "gecko_turn"
    result = drakebots("simulate", "gecko", "--gait-law", "--q1", "80", "--q2", "-0.5",
                       "--cycles", "3", "--out", str(turn))  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads((turn / "summary.json").read_text())
    assert summary["figures"]["cycles_completed"] == 3
    assert summary["figures"]["last_cycle_d_eps_deg"] > 20  # q2 < 0 turns left
    course = tmp_path / "gecko_course"
    result = drakebots("gecko", "navigate", "--targets", "0.4,0.1; 0.6,-0.3; 0.2,-0.5; 0,0",
                       "--out", str(course), "--no-progress", timeout=1800)  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads((course / "summary.json").read_text())
    assert summary["figures"]["targets_reached"] == 4
