"""`drakebots optimize` and `drakebots track`: help, bad input (exit 2, nothing written), and
(slow) a tiny end-to-end run: optimize a coarse gait, then track it in Drake."""

import json
import subprocess
import sys

import numpy as np
import pytest

from drakebots.cli import main


def drakebots(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "drakebots", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_optimize_help_lists_both_problems():
    result = drakebots("optimize", "--help")
    assert result.returncode == 0
    assert "hamr-gait" in result.stdout and "hamr-jump" in result.stdout
    for problem in ("hamr-gait", "hamr-jump"):
        result = drakebots("optimize", problem, "--help")
        assert result.returncode == 0, result.stderr
        assert "--solver" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["optimize", "hamr-gait", "--frequency", "10", "--surface", "ice"], "--surface ice"),
        (["optimize", "hamr-gait", "--frequency", "0"], "--frequency"),
        (["optimize", "hamr-gait", "--frequency", "-2"], "--frequency"),
        (["optimize", "hamr-jump", "--height", "0"], "--height"),
        (["optimize", "hamr-jump", "--height", "-3"], "--height"),
        (["optimize", "hamr-gait", "--frequency", "10", "--solver", "gurobi"], "--solver gurobi"),
        (["optimize", "hamr-gait", "--frequency", "10", "--knots", "2"], "--knots"),
        (
            ["optimize", "hamr-jump", "--height", "5", "--first-stage-iterations", "-1"],
            "--first-stage-iterations",
        ),
        (
            ["optimize", "hamr-gait", "--frequency", "10", "--friction-directions", "2"],
            "--friction-directions",
        ),
        (["optimize", "hamr-gait", "--frequency", "10", "--scuff-weight", "-1"], "--scuff-weight"),
        (["optimize", "hamr-gait", "--frequency", "10", "--scuff-height", "0"], "--scuff-height"),
        (["optimize", "hamr-gait", "--frequency", "10", "--warm-start", "sim"], "--warm-start"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "run"
    assert main(args + ["--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_unavailable_solver_exits_2(tmp_path, capsys, monkeypatch):
    from drakebots.optimization import contact_implicit

    monkeypatch.setattr(
        contact_implicit,
        "SolverAvailable",
        lambda name: (False, f"solver '{name}' is not available in this Drake build"),
    )
    out = tmp_path / "run"
    assert (
        main(["optimize", "hamr-gait", "--frequency", "10", "--solver", "snopt", "--out", str(out)])
        == 2
    )
    assert "not available" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("solver", ["ipopt", "fast"])
def test_failed_solve_exits_1_with_status_violations_and_best_iterate(tmp_path, capsys, solver):
    """One iteration per stage cannot solve a 5-knot jump: exit 1, and the folder still has the
    solver's status, the most violated constraints by name, and the iterate it stopped at
    (Drake's IPOPT, or the fast path's)."""
    from drakebots.optimization.contact_implicit import SolverAvailable

    if not SolverAvailable(solver)[0]:
        pytest.skip(SolverAvailable(solver)[1])
    out = tmp_path / "run"
    args = ["optimize", "hamr-jump", "--height", "12", "--knots", "5", "--solver", solver]
    args += ["--iterations", "1", "--first-stage-iterations", "1", "--quiet", "--out", str(out)]
    assert main(args) == 1
    assert "did not reach its goal" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success"] is False
    assert "IPOPT" in summary["solver_status"] and summary["reason"]
    names = [name for name, _ in summary["most_violated_constraints"]]
    assert names and all(isinstance(n, str) and n for n in names)
    assert summary["max_constraint_violation"] > 1e-4
    with np.load(out / "solution.npz") as data:
        assert data["var_q"].shape == (5, 38)


def test_solver_options_from_a_config_file_reach_the_solver(tmp_path):
    """`--config` sets IPOPT's options by name (ints, floats and strings keep their YAML types):
    max_iter 2 on each stage of a 5-knot jump leaves at most 2 + 2 iterations."""
    config = tmp_path / "solver.yaml"
    config.write_text(
        "solver:\n  solver: ipopt\n  ipopt_options:\n    max_iter: 2\n"
        "    mu_init: 0.01\n    mu_strategy: monotone\n"
    )
    out = tmp_path / "run"
    # No --solver: the file's choice stands (auto would pick the fast path).
    args = ["optimize", "hamr-jump", "--height", "12", "--knots", "5"]
    args += ["--config", str(config), "--quiet", "--out", str(out)]
    assert main(args) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["solver_config"]["ipopt_options"] == {
        "max_iter": 2,
        "mu_init": 0.01,
        "mu_strategy": "monotone",
    }
    assert summary["solver"] == "ipopt" and summary["solver_requested"] == "ipopt"
    assert "Max iteration" in summary["solver_status"]
    assert summary["iterations"] <= 4
    # The solver's own log of both stages is kept beside the results.
    log = (out / "solver.log").read_text()
    assert "===== stage 1: paper problem" in log and "===== stage 2:" in log
    assert log.count("Number of Iterations....:") == 2


def test_a_solver_named_in_the_config_file_is_used_and_checked(tmp_path, capsys, monkeypatch):
    """solver.solver in --config is a request like --solver: `auto` (the default) does not
    override it, and an unavailable one exits 2 naming the file's key."""
    from drakebots.optimization import contact_implicit

    config = tmp_path / "solver.yaml"
    config.write_text("solver:\n  solver: snopt\n")
    monkeypatch.setattr(
        contact_implicit,
        "SolverAvailable",
        lambda name: (name != "snopt", f"solver '{name}' is not available in this Drake build"),
    )
    out = tmp_path / "run"
    args = ["optimize", "hamr-gait", "--frequency", "10", "--config", str(config)]
    assert main(args + ["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "solver.solver snopt" in err and "not available" in err
    assert not out.exists()


def test_a_solver_option_of_the_wrong_type_exits_2_naming_it(tmp_path, capsys):
    config = tmp_path / "solver.yaml"
    config.write_text("solver:\n  ipopt_options:\n    max_iter: [1, 2]\n")
    out = tmp_path / "run"
    args = ["optimize", "hamr-gait", "--frequency", "10", "--config", str(config)]
    assert main(args + ["--out", str(out)]) == 2
    assert "ipopt_options" in capsys.readouterr().err
    assert not out.exists()


def test_track_rejects_a_folder_that_is_not_a_gait_plan(tmp_path, capsys):
    assert main(["track", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "no such results folder" in capsys.readouterr().err
    folder = tmp_path / "jump"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"problem": "hamr-jump"}))
    (folder / "solution.npz").write_bytes(b"")
    assert main(["track", str(folder), "--out", str(tmp_path / "o")]) == 2
    assert "periodic gaits" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.paper
def test_tiny_gait_then_track_end_to_end(tmp_path):
    plan = tmp_path / "plan"
    result = drakebots(
        "optimize",
        "hamr-gait",
        "--frequency",
        "30",
        "--knots",
        "11",
        "--iterations",
        "15",
        "--warm-start",
        "variational",
        "--quiet",
        "--out",
        str(plan),
        timeout=3000,
    )
    # 15 iterations do not converge this problem (IPOPT stops at its iteration limit, its
    # dynamics[0] still 6.6 N off): the run ends with exit 1, the folder complete, the reason
    # in summary.json.
    summary = json.loads((plan / "summary.json").read_text())
    assert result.returncode == 1, result.stderr
    assert summary["success"] is False and "did not converge" in summary["reason"]
    assert "Maximum_Iterations_Exceeded" in summary["solver_status"]
    for key in (
        "success",
        "solver",
        "solver_status",
        "solve_time_s",
        "num_variables",
        "num_constraints",
        "velocity_mm_per_cycle",
        "max_complementarity_violation",
        "max_dynamics_residual",
        "max_loop_residual_mm",
        "slip",
        "loaded_slide_mm_per_cycle",
    ):
        assert key in summary, key
    for name in ("replay.html", "feet.png", "legs.png", "inputs.png", "forces.png", "solution.npz"):
        assert (plan / name).is_file(), name
    # The figures from the plan's own arrays: the stride is the base's advance over the 10
    # intervals, its time 10 h, within the free-time band (10 %) of a 30 Hz stride.
    with np.load(plan / "solution.npz") as solution:
        base, h = solution["base_position"], float(solution["h"])
        assert np.all(solution["u"] >= 0.0) and np.all(solution["u"] <= 225.0)  # volts
    stride = base[-1, 0] - base[0, 0]
    assert summary["velocity_mm_per_cycle"] == pytest.approx(stride, rel=1e-9)
    assert summary["stride_time_ms"] == pytest.approx(10 * h, rel=1e-9)
    assert 10 * h == pytest.approx(1000.0 / 30.0, rel=0.1 + 1e-9)

    def track(out, *extra):
        result = drakebots(
            "track",
            str(plan),
            "--cycles",
            "2",
            "--table-samples",
            "7",
            *extra,
            "--quiet",
            "--out",
            str(out),
            timeout=3000,
        )
        return result, json.loads((out / "summary.json").read_text())

    tracked = tmp_path / "tracked"
    result, summary = track(tracked)
    # The unconverged plan does not track: the robot realises well under 70 % of the planned
    # stride, so the run ends with exit 1 naming the 30 % band.
    assert result.returncode == 1, result.stderr
    assert summary["success"] is False and "not within 30%" in summary["reason"]
    # Its figures from the log: the base's advance over each planned period, the last one the
    # velocity, over the plan's stride (the plan's own summary) the ratio.
    with np.load(tracked / "log.npz") as log:
        period = summary["period_ms"]
        x = np.interp([0.0, period, 2 * period], log["times"], log["positions"][:, 0])
    np.testing.assert_allclose(summary["distance_per_cycle_mm"], np.diff(x), rtol=1e-9)
    assert summary["velocity_mm_per_cycle"] == pytest.approx(x[2] - x[1], rel=1e-9)
    ratio = summary["velocity_mm_per_cycle"] / stride
    assert summary["ratio_to_plan"] == pytest.approx(ratio, rel=1e-9) and ratio < 0.7
    assert (tracked / "replay.html").is_file()
    steered = tmp_path / "steered"
    result, steered_summary = track(steered, "--k-heading", "0.5", "--k-lateral", "0.02")
    assert result.returncode == 1, result.stderr  # the same plan: short of the 30 % band again
    # Heading feedback turns the robot less than the open-loop heading drifts.
    assert abs(steered_summary["yaw_change_deg"]) < abs(summary["yaw_change_deg"])
    gains = json.loads((steered / "summary.json").read_text())["config"]["gains"]
    assert gains["k_heading"] == 0.5 and gains["k_lateral"] == 0.02


def test_auto_solver_picks_the_fast_path_and_drakes_by_size_without_it():
    from drakebots.hamr.workflows import (
        FAST_FIRST_STAGE_ITERATIONS,
        FIRST_STAGE_ITERATIONS,
        ChooseSolver,
        StageDefaults,
    )

    assert ChooseSolver("auto", 1149, fast_available=True) == "fast"
    assert ChooseSolver("auto", 5589, fast_available=True) == "fast"
    assert ChooseSolver("auto", 1149, fast_available=False) == "snopt"
    assert ChooseSolver("auto", 5589, fast_available=False) == "ipopt"
    # A solver named is used as named, Drake's included.
    assert ChooseSolver("snopt", 5589, fast_available=True) == "snopt"
    assert ChooseSolver("ipopt", 1149, fast_available=True) == "ipopt"
    assert FAST_FIRST_STAGE_ITERATIONS == 40 and FIRST_STAGE_ITERATIONS == 100
    assert StageDefaults("fast") == (40, "fixed-modes")
    assert StageDefaults("ipopt") == StageDefaults("snopt") == (100, "proximal")


def test_auto_falls_back_to_drake_for_a_program_the_fast_path_cannot_evaluate():
    """A binding the transcription's builders did not make: auto picks Drake's solver for the
    program's size instead of the fast path, and the fast path named refuses it by name."""
    from drakebots.hamr import trajopt as ht
    from drakebots.hamr.workflows import ChooseSolver
    from drakebots.optimization.contact_implicit import SolverAvailable, SolverConfig
    from drakebots.optimization.contact_implicit_fast import FastPathUnsupported

    if not SolverAvailable("fast")[0]:
        pytest.skip(SolverAvailable("fast")[1])
    model = ht.MakeHamrTrajoptModel("cardstock")
    warm = ht.WarmStart(
        q=np.tile(model.home, (4, 1)), u=np.full((3, 8), 110.0), h=4.0, source="test"
    )
    problem = ht.MakeHamrGaitProblem(model, 10.0, warm, ht.GaitSettings(num_knots=4))
    n = problem.prog.num_vars()
    assert ChooseSolver("auto", n, problem=problem) == "fast"
    binding = problem.prog.AddConstraint(
        lambda z: np.array([z[0] * z[1]]), [0.0], [1.0], problem.vars.q[1, :2]
    )
    binding.evaluator().set_description("my_constraint")
    assert ChooseSolver("auto", n, problem=problem) == ("snopt" if n <= 2000 else "ipopt")
    with pytest.raises(FastPathUnsupported, match="my_constraint"):
        ht.SolveHamrProblem(problem, SolverConfig(solver="fast", major_iterations=1))


def test_tracking_figures_of_a_robot_walking_straight_at_an_angle():
    """TrackingFigures on a synthetic run with a known answer: the body walks a straight line
    at 30 deg yaw, 6 mm per stride, with feet that never slide. World x counts cos 30 of each
    stride, the heading figure all of it, and the slip (Eq. 23) is zero."""
    import types

    from drakebots.hamr.tracking import TrackingConfig
    from drakebots.hamr.tracking_report import TrackingFigures

    period, cycles, stride, yaw = 100.0, 5, 6.0, np.deg2rad(30.0)
    times = np.linspace(0.0, cycles * period, 501)
    along = stride * times / period
    positions = np.zeros((len(times), 6))
    positions[:, 0], positions[:, 1], positions[:, 3] = (
        along * np.cos(yaw),
        along * np.sin(yaw),
        yaw,
    )
    feet = np.zeros((len(times), 4, 3))
    feet[:, :, 0] = np.floor(times / period)[:, None] * stride * np.cos(yaw)  # planted per stride
    legs = np.zeros((len(times), 8))
    run = types.SimpleNamespace(
        times=times,
        positions=positions,
        feet_world=feet,
        legs_desired=legs,
        legs_true=legs,
        legs_estimated=legs + 0.01,
        loop_residual=np.zeros(len(times)),
        contact=np.zeros((len(times), 1)),
        wall_time=1.0,
    )
    plan = {"times": np.array([0.0, period]), "q": np.zeros((2, 38))}
    figures = TrackingFigures(
        run, plan, {"velocity_mm_per_cycle": stride}, TrackingConfig(cycles=cycles)
    )
    assert figures["velocity_mm_per_cycle"] == pytest.approx(stride * np.cos(yaw))
    assert figures["heading_velocity_mm_per_cycle"] == pytest.approx(stride)
    assert figures["heading_ratio_to_plan"] == pytest.approx(1.0)
    assert figures["yaw_change_deg"] == pytest.approx(0.0)
    assert figures["slip"] == pytest.approx(0.0)
    assert figures["estimation_rms_mm"] == pytest.approx(0.01)


def test_auto_warm_start_falls_back_to_drakes_trot_only_when_a_plan_is_not_acceptable(monkeypatch):
    """`SolveHamrGait(warm_start="auto")`: the variational warm start first; a solve whose plan
    fails `PlanAcceptable` is followed by one from Drake's SAP trot, and every attempt is
    recorded; an acceptable first plan ends it. A warm start that leaves the position bounds
    is recorded and not solved from while another follows, and solved from when it is the one
    asked for. (The warm starts and solves are stand-ins here: this checks the order and the
    record, the solves themselves are the slow tests'.)"""
    from types import SimpleNamespace

    from drakebots.hamr import trajopt as ht

    calls, solved, outside = [], [], set()

    def Warm(model, frequency, knots, source):
        calls.append(source)
        excursion = 0.9 if source in outside else -0.1
        return SimpleNamespace(velocity_mm_per_cycle=1.0, source=source, bounds_excursion=excursion)

    def Solve(problem, config, **kwargs):
        solved.append(problem)
        return SimpleNamespace(
            status=f"from {problem}", solve_time_s=2.0, cpu_time_s=1.5, iterations=7
        )

    monkeypatch.setattr(ht, "GaitWarmStart", Warm)
    monkeypatch.setattr(ht, "MakeHamrGaitProblem", lambda model, f, warm, s: warm.source)
    monkeypatch.setattr(ht, "SolveHamrProblem", Solve)
    settings = ht.GaitSettings(num_knots=5)
    for acceptable, expected in (({"variational"}, ["variational"]), (set(), ht.AUTO_WARM_STARTS)):
        calls.clear()
        monkeypatch.setattr(ht, "PlanAcceptable", lambda problem, o, ok=acceptable: problem in ok)
        solve = ht.SolveHamrGait(None, 10.0, settings, warm_start="auto")
        assert calls == list(expected)
        assert [a["warm_start"] for a in solve.attempts] == list(expected)
        assert solve.problem == expected[-1] and solve.outcome.status == f"from {expected[-1]}"
        # Every attempt's solve counts: 2.0 s wall and 1.5 s CPU each (the stand-in's).
        assert solve.solve_time_s == 2.0 * len(expected) and solve.cpu_time_s == 1.5 * len(expected)
    calls.clear()
    ht.SolveHamrGait(None, 10.0, settings, warm_start="drake")
    assert calls == ["drake"]

    # The variational stride leaves the bounds: skipped (no solve), even if it would be fine.
    monkeypatch.setattr(ht, "PlanAcceptable", lambda problem, o: True)
    outside.add("variational")
    calls.clear(), solved.clear()
    solve = ht.SolveHamrGait(None, 10.0, settings, warm_start="auto")
    assert calls == ["variational", "drake"] and solved == ["drake"]
    skipped = solve.attempts[0]
    assert skipped["bounds_excursion"] == 0.9 and not skipped["acceptable"]
    assert skipped["iterations"] == 0 and "position bounds" in skipped["status"]
    assert solve.problem == "drake" and solve.attempts[1]["acceptable"]
    assert solve.solve_time_s == 2.0  # the skipped warm start cost no solve
    # Asked for by name, it is solved from all the same.
    solved.clear()
    solve = ht.SolveHamrGait(None, 10.0, settings, warm_start="variational")
    assert solved == ["variational"] and solve.attempts[0]["bounds_excursion"] == 0.9
