"""HAMR-VI's workflows as Python calls (issue 46): OptimizeJump, OptimizeGait, Track and Modes on
their smallest settings, each against what `drakebots` writes into summary.json for the same
config (same numbers), plus a check that does not go through the figures: the jump's true
complementarity from the result's arrays, the gait's stride time and voltages within their
bounds, the tracked run's length and loop closure, the standing robot's ground reactions against
its weight and its vertical mode against the authors' URDF in Drake (models/hamr_vi/README.md)."""

import json

import numpy as np
import pytest

from drakebots.cli import main
from drakebots.errors import InputError
from drakebots.hamr import (
    GaitConfig,
    JumpConfig,
    Modes,
    ModesConfig,
    OptimizeGait,
    OptimizeJump,
    Track,
    TrackConfig,
)
from drakebots.hamr.tracking import TrackingConfig
from drakebots.optimization.contact_implicit import SolverConfig
from drakebots.results import ToJson
from drakebots.workflow import LoadConfig

# summary.json's head (written by Save, not part of the figures) and what a rerun changes.
HEAD = {"verb", "command", "inputs", "versions", "created", "success", "reason"}
TIMES = {"stages", "solve_time_all_attempts_s"}


def Timeless(value):
    """The figures without wall or CPU times (they differ from run to run)."""
    if isinstance(value, dict):
        return {
            k: Timeless(v) for k, v in value.items() if k not in TIMES and not k.endswith("time_s")
        }
    if isinstance(value, list):
        return [Timeless(v) for v in value]
    return value


def AssertSameAsCli(result, folder) -> dict:
    """result.figures equal the CLI's summary.json (JSON round trip, times left out)."""
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["success"] == result.success and summary["reason"] == result.reason
    figures = {k: v for k, v in summary.items() if k not in HEAD}
    assert Timeless(json.loads(ToJson(result.figures))) == Timeless(figures)
    return summary


def Cli(*args) -> int:
    return main([str(a) for a in args])


# ---------------------------------------------------------------------------- jump
JUMP = JumpConfig(height=12.0, knots=5, solver=SolverConfig(solver="ipopt", major_iterations=300))


@pytest.fixture(scope="module")
def jump():
    return OptimizeJump(JUMP)


def test_jump_matches_the_cli(jump, tmp_path, capsys):
    out = tmp_path / "jump"
    code = Cli("optimize", "hamr-jump", "--height", 12, "--knots", 5, "--solver", "ipopt",
               "--iterations", 300, "--quiet", "--out", out)  # fmt: skip
    # 300 IPOPT iterations solve the 5-knot jump (test_jump_is_truly_complementary_by_its_arrays
    # checks its complementarity from the arrays): exit 0.
    assert jump.success and code == 0, jump.reason
    summary = AssertSameAsCli(jump, out)
    assert summary["inputs"]["knots"] == 5 and summary["solver_requested"] == "ipopt"
    # Save writes what the CLI writes.
    saved = jump.Save(tmp_path / "saved")
    assert sorted(p.name for p in saved.iterdir()) == sorted(p.name for p in out.iterdir())


def test_jump_is_truly_complementary_by_its_arrays(jump):
    """No foot carries a normal force off the ground: max(f_z * phi) over the knots, from the
    result's force and foot-height arrays (N * mm), within the plan's 1e-4 target."""
    assert jump.success, jump.reason
    assert jump.q.shape == (5, 38) and jump.contact_forces.shape == (4, 4, 3)
    products = jump.contact_forces[:, :, 2] * np.maximum(jump.foot_heights[1:], 0.0)
    assert np.max(products) <= 1e-4
    assert np.max(products) == pytest.approx(jump.figures["complementarity"]["normal"], abs=1e-12)
    assert np.min(jump.foot_heights) > -1e-4  # no foot below the ground
    assert np.all(jump.contact_forces[:, :, 2] >= -1e-9)  # the ground only pushes
    # It rises: the body ends above where it started.
    assert jump.base_position[-1, 2] > jump.base_position[0, 2]
    # Its apex by ballistics from the arrays: the last knot's height above standing (12.69 mm)
    # plus v^2 / 2g, v the last interval's rise over its duration (the variational
    # integrator's velocity), g = 9.81e-3 mm/ms^2.
    z, t = jump.base_position[:, 2], jump.times
    v = (z[-1] - z[-2]) / (t[-1] - t[-2])
    assert v > 0  # still rising at the last knot
    ballistic = (z[-1] - 12.69) + v**2 / (2 * 9.81e-3)
    assert jump.figures["apex_height_mm"] == pytest.approx(ballistic, rel=1e-6)


def test_the_default_jump_is_solved_by_the_fast_path_with_its_stages(tmp_path):
    """No solver named: "auto" runs the fast path (its IPOPT loads here) with its stage defaults
    (40 first-stage iterations, fixed contact modes), recorded in the result's config, and the
    plan is truly complementary by its own arrays; the CLI without --solver does the same."""
    from drakebots.optimization.contact_implicit import SolverAvailable

    if not SolverAvailable("fast")[0]:
        pytest.skip(SolverAvailable("fast")[1])
    result = OptimizeJump(JumpConfig(height=12.0, knots=5))
    assert result.figures["solver"] == "fast" and result.figures["solver_requested"] == "auto"
    assert (result.config.first_stage_iterations, result.config.second_stage) == (
        40,
        "fixed-modes",
    )
    assert result.success, result.reason
    products = result.contact_forces[:, :, 2] * np.maximum(result.foot_heights[1:], 0.0)
    assert np.max(products) <= 1e-4
    assert np.min(result.foot_heights) > -1e-4
    out = tmp_path / "jump"
    assert Cli("optimize", "hamr-jump", "--height", 12, "--knots", 5, "--quiet", "--out", out) == 0
    AssertSameAsCli(result, out)


def test_a_workflow_prints_nothing(capsys):
    config = JumpConfig(height=12.0, knots=5, solver=SolverConfig(solver="ipopt"))
    config.solver.major_iterations = 1
    config.first_stage_iterations = 1
    events = []
    result = OptimizeJump(config, progress=events.append)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert not result.success and "did not converge" in result.reason
    assert any(e.message and "warm start" in e.message for e in events)


def test_bad_input_raises_before_any_work():
    with pytest.raises(InputError, match="^knots 2: need at least 3"):
        OptimizeJump(JumpConfig(knots=2))
    with pytest.raises(InputError, match="^surface ice"):
        OptimizeGait(GaitConfig(surface="ice"))
    with pytest.raises(InputError, match="^solver.solver gurobi"):
        OptimizeGait(GaitConfig(solver=SolverConfig(solver="gurobi")))
    with pytest.raises(InputError, match="^tracking.cycles 1"):
        Track(TrackConfig(plan="nowhere", tracking=TrackingConfig(cycles=1)))
    with pytest.raises(InputError, match="^body_threshold 2"):
        Modes(ModesConfig(body_threshold=2.0))


def test_configs_load_from_yaml_and_the_flags_override_them(tmp_path, capsys):
    file = tmp_path / "jump.yaml"
    file.write_text("height: 8\nknots: 2\nsolver:\n  ipopt_options:\n    max_iter: 2\n")
    config = LoadConfig(JumpConfig, file)
    assert config.height == 8.0 and config.knots == 2
    assert config.solver.solver == "auto" and config.solver.ipopt_options == {"max_iter": 2}
    assert config.Settings().num_knots == 2 and config.Settings().height == 8.0
    # The file's bad value is named with the file; the flag's with the flag; a good flag wins.
    out = tmp_path / "run"
    assert Cli("optimize", "hamr-jump", "--config", file, "--out", out) == 2
    assert f"--config {file}: knots 2: need at least 3" in capsys.readouterr().err
    assert Cli("optimize", "hamr-jump", "--config", file, "--knots", 1, "--out", out) == 2
    assert "--knots 1: need at least 3" in capsys.readouterr().err
    assert Cli("hamr", "modes", "--body-threshold", 1.5, "--out", out) == 2
    assert "--body-threshold 1.5: must be in (0, 1)" in capsys.readouterr().err
    assert not out.exists()


# ---------------------------------------------------------------------------- gait and track
GAIT_ARGS = ["--frequency", 30, "--knots", 7, "--solver", "ipopt", "--iterations", 15,
             "--warm-start", "variational"]  # fmt: skip


@pytest.fixture(scope="module")
def gait():
    config = GaitConfig(frequency=30.0, knots=7, warm_start="variational")
    config.solver = SolverConfig(solver="ipopt", major_iterations=15)
    return OptimizeGait(config)


def test_gait_matches_the_cli_and_keeps_its_bounds(gait, tmp_path):
    out = tmp_path / "gait"
    code = Cli("optimize", "hamr-gait", *GAIT_ARGS, "--quiet", "--out", out)
    # 15 IPOPT iterations cannot converge this gait (measured: IPOPT status 1, maximum
    # iterations): the result fails and the CLI exits 1, saving its last iterate.
    assert not gait.success and "did not converge" in gait.reason
    assert code == 1
    AssertSameAsCli(gait, out)
    # A 15-iteration solve need not converge, but bounds hold at every iterate: the stride
    # within +-10 % of 1/30 s, the drive voltages within [0, 225] V (Eq. 15).
    period = 1000.0 / 30.0
    assert 0.9 * period - 1e-9 <= gait.times[-1] <= 1.1 * period + 1e-9
    assert np.all(gait.u >= -1e-9) and np.all(gait.u <= 225.0 + 1e-9)
    assert gait.figures["velocity_mm_per_cycle"] == pytest.approx(gait.q[-1, 0] - gait.q[0, 0])
    assert gait.figures["stride_time_ms"] == pytest.approx(gait.times[-1])


def test_track_matches_the_cli(gait, tmp_path):
    plan = gait.Save(tmp_path / "plan")
    tracking = TrackingConfig(cycles=2, table_samples=7)
    result = Track(TrackConfig(plan=str(plan), tracking=tracking))
    out = tmp_path / "tracked"
    code = Cli("track", plan, "--cycles", 2, "--table-samples", 7, "--quiet", "--out", out)
    # The unconverged 15-iteration plan does not track (measured: 2.57 of 5.59 mm/cycle planned,
    # outside the 30 % band): the result fails and the CLI exits 1.
    assert not result.success and "not within 30%" in result.reason
    assert code == 1
    AssertSameAsCli(result, out)
    # Two strides simulated and logged; the 24 loops stay closed in SAP.
    period = gait.times[-1]
    assert result.times[-1] == pytest.approx(2 * period, abs=1.0)
    assert result.positions.shape == (len(result.times), 38)
    assert np.max(result.loop_residual) < 1e-2
    # --force never replaces the plan the run reads.
    assert Cli("track", plan, "--cycles", 2, "--force", "--out", plan) == 2
    assert (plan / "solution.npz").is_file()


def test_track_names_a_bad_plan(tmp_path):
    with pytest.raises(InputError, match="^plan: none given"):
        Track(TrackConfig())
    with pytest.raises(InputError, match="no such results folder"):
        Track(TrackConfig(plan=str(tmp_path / "missing")))


# ---------------------------------------------------------------------------- modes
def test_modes_match_the_cli_and_the_robots_weight(tmp_path):
    result = Modes(ModesConfig())
    out = tmp_path / "modes"
    assert Cli("hamr", "modes", "--out", out) == 0
    AssertSameAsCli(result, out)
    weight = 1.47499 * 9.81e-3  # N: the robot's mass (g) times g (mm/ms^2)
    for name, case in result.cases.items():
        assert case.foot_forces[:, 2].sum() == pytest.approx(weight, rel=1e-6), name
    # The authors' URDF parsed by Drake, feet sliding: 28.66 Hz vertical, 74.12 Hz roll
    # (models/hamr_vi/README.md); the paper's ~10 and ~30 Hz are the physical robot's.
    sliding = result.body_frequencies_hz["sliding"]
    assert sliding["vertical (z)"] == pytest.approx(28.66, abs=0.05)
    assert sliding["roll"] == pytest.approx(74.12, abs=0.05)
    assert result.figures["paper_comparison"]["vertical (z)"]["paper_hz"] == 10.0
    assert result.cases["pinned"].shapes.shape[1] == 2  # the feet stuck leave two motions
