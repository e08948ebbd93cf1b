"""The `drakebots` command: every verb's --help, a short simulate run, and bad inputs (exit 2,
nothing written). Runs the real console entry point in a subprocess, as a user would."""

import json
import subprocess
import sys

import numpy as np
import pytest

from drakebots.cli import MakeParser


def VerbNames() -> list[str]:
    """The verbs as a user types them (a module skin_bend.py may register `skin-bend`)."""
    parser = MakeParser()
    (subparsers,) = [a for a in parser._actions if a.dest == "verb"]
    return sorted(subparsers.choices)


def drakebots(*args, cwd=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "drakebots", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def test_top_level_help():
    result = drakebots("--help")
    assert result.returncode == 0
    for verb in ("demo", "info", "simulate", "view"):
        assert verb in result.stdout


@pytest.mark.parametrize("verb", VerbNames())
def test_every_verb_has_help_with_an_example(verb):
    parser = MakeParser()
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args([verb, "--help"])
    assert exit_info.value.code == 0


def test_help_via_console_script_for_each_verb():
    for verb in VerbNames():
        result = drakebots(verb, "--help")
        assert result.returncode == 0, (verb, result.stderr)
        assert "drakebots" in result.stdout and "xample" in result.stdout, verb


def test_info_json_reports_the_beetle():
    result = drakebots("info", "beetle", "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    for key in ("num_positions", "num_velocities", "num_actuators", "total_mass", "units"):
        assert key in info
    assert info["num_actuators"] == 12
    assert info["total_mass"] == pytest.approx(2.8, rel=0.05)


def test_simulate_writes_every_file(tmp_path):
    out = tmp_path / "run"
    result = drakebots("simulate", "beetle", "--duration", "0.3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    for name in ("summary.json", "replay.html", "log.npz", "torques.png", "base_height.png"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    figures = summary["figures"]
    for key in (
        "base_height_start",
        "base_height_end",
        "max_penetration",
        "max_torque_ratio",
        "real_time_rate",
    ):
        assert key in figures
    assert summary["success"] is True
    assert "drake" in summary["versions"]
    with np.load(out / "log.npz") as log:
        assert log["positions"].shape[1] == 19
        assert log["times"][-1] == pytest.approx(0.3, abs=0.01)
    assert not list(tmp_path.glob(".*tmp*")), "a temporary folder was left behind"


def _assert_exit_2_nothing_written(result, tmp_path, *, expect_in_message):
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert expect_in_message in result.stderr, result.stderr
    leftovers = [p for p in tmp_path.iterdir() if p.name != "existing"]
    assert not [p for p in leftovers if p.suffix != ".yaml"], leftovers


def test_unknown_robot_lists_the_known_ones(tmp_path):
    result = drakebots("simulate", "dragon", "--out", str(tmp_path / "x"))
    _assert_exit_2_nothing_written(result, tmp_path, expect_in_message="beetle")
    result = drakebots("info", "dragon")
    assert result.returncode == 2 and "known robots" in result.stderr


def test_negative_duration(tmp_path):
    result = drakebots("simulate", "beetle", "--duration", "-1", "--out", str(tmp_path / "x"))
    _assert_exit_2_nothing_written(result, tmp_path, expect_in_message="--duration")


def test_existing_output_needs_force_and_force_replaces_only_drakebots_folders(tmp_path):
    """Issue 50: `--force` over a folder of the user's own files removed them; it now replaces
    only a results folder drakebots made, and a user's folder is exit 2 with nothing touched."""
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    result = drakebots("simulate", "beetle", "--duration", "0.05", "--out", str(existing))
    _assert_exit_2_nothing_written(result, tmp_path, expect_in_message="--force")
    assert (existing / "keep.txt").read_text() == "mine"
    argv = ("simulate", "beetle", "--duration", "0.05")
    result = drakebots(*argv, "--out", str(existing), "--force")
    assert result.returncode == 2 and "drakebots made" in result.stderr
    assert (existing / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in existing.iterdir()) == ["keep.txt"]
    made = tmp_path / "made"
    assert drakebots(*argv, "--out", str(made)).returncode == 0
    # Issue 68: a file drakebots did not write there (its marker lists what it wrote) is the
    # user's: --force refuses; a file an earlier run wrote (listed) goes with the folder.
    (made / "stale.txt").write_text("from the last run")
    result = drakebots(*argv, "--out", str(made), "--force")
    assert result.returncode == 2 and "stale.txt" in result.stderr
    assert (made / "stale.txt").read_text() == "from the last run"
    with open(made / ".drakebots-results", "a") as marker:
        marker.write("stale.txt\n")
    result = drakebots(*argv, "--out", str(made), "--force")
    assert result.returncode == 0, result.stderr
    assert not (made / "stale.txt").exists() and (made / "summary.json").is_file()


def test_scenario_unknown_key_names_key_and_file(tmp_path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("robot: beetle\nduraton: 1.0\n")
    result = drakebots("simulate", str(scenario), "--out", str(tmp_path / "x"))
    _assert_exit_2_nothing_written(result, tmp_path, expect_in_message="duraton")
    assert str(scenario) in result.stderr


def test_scenario_wrong_type_names_key_and_file(tmp_path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("robot: beetle\nduration: long\n")
    result = drakebots("simulate", str(scenario), "--out", str(tmp_path / "x"))
    _assert_exit_2_nothing_written(result, tmp_path, expect_in_message="'duration'")
    assert str(scenario) in result.stderr


def _AssertFreeFallThenWeight(folder, drop_height, mass_kg):
    """The log of a dropped skeleton against two independent references: until its feet can
    reach the ground the base falls as z0 - g t^2 / 2 (to the first-order time-stepping error,
    g h t / 2 at the 1 ms step the run uses), and once it stands the ground carries m g, with m
    the paper's skeleton mass."""
    g, h = 9.81, 1e-3
    with np.load(folder / "log.npz") as log:
        t, z, contact = log["times"], log["base_height"], log["contact"]
    falling = t < 0.8 * np.sqrt(2.0 * drop_height / g)  # before the feet can touch
    assert falling.sum() >= 5 and np.all(contact[falling, 1] == 0)
    analytic = z[0] - 0.5 * g * t[falling] ** 2
    np.testing.assert_allclose(z[falling], analytic, atol=0.5 * g * h * t[falling].max() + 1e-6)
    assert contact[-1, 2] == pytest.approx(mass_kg * g, rel=0.02)


def test_scenario_file_runs(tmp_path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("robot: cow\nduration: 0.2\ndrop_height: 0.01\ntime_step: 0.001\n")
    out = tmp_path / "run"
    result = drakebots("simulate", str(scenario), "--out", str(out))
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["robot"] == "cow" and summary["inputs"]["drop_height"] == 0.01
    figures = summary["figures"]
    assert figures["base_height_start"] == pytest.approx(figures["nominal_base_height"] + 0.01)
    # Cow skeleton: 4.3 kg (skinned-quad-robots-print.txt, section 7, "Physical Validation").
    _AssertFreeFallThenWeight(out, 0.01, 4.3)


def test_view_serves_a_results_folder(tmp_path):
    out = tmp_path / "run"
    assert drakebots("simulate", "beetle", "--duration", "0.1", "--out", str(out)).returncode == 0
    result = drakebots("view", str(out), "--seconds", "0.5")
    assert result.returncode == 0, result.stderr
    assert "http://" in result.stdout
    bad = drakebots("view", str(tmp_path / "missing"))
    assert bad.returncode == 2
    # Issue 50: loopback by default, and the printed URL is one a browser opens (for --host
    # ::1 too, which Drake's own web_url() prints without the brackets a URL needs).
    for host, prefix in ((None, "http://127.0.0.1:"), ("::1", "http://[::1]:")):
        _AssertViewUrlOpens(out, host, prefix)


def _AssertViewUrlOpens(folder, host, prefix):
    import re
    import urllib.request

    argv = [sys.executable, "-m", "drakebots", "view", str(folder), "--seconds", "20"]
    argv += ["--host", host] if host else []
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        match = re.search(r"(http://\S+)", line)
        if host == "::1" and match is None and "cannot listen" in process.stderr.read():
            return  # No IPv6 loopback on this machine.
        assert match and match.group(1).startswith(prefix), line
        with urllib.request.urlopen(match.group(1), timeout=10) as response:
            assert response.status == 200
    finally:
        process.kill()
        process.communicate()


@pytest.mark.parametrize("option", ["--drop-height", "--ground-friction", "--time-step"])
def test_non_finite_numbers_are_rejected(tmp_path, option):
    result = drakebots("simulate", "beetle", option, "nan", "--out", str(tmp_path / "x"))
    _assert_exit_2_nothing_written(result, tmp_path, expect_in_message=option)


def test_a_dropped_robot_that_lands_on_its_feet_succeeds(tmp_path):
    """The ±10 % height band is judged after landing, not during the fall."""
    out = tmp_path / "drop"
    result = drakebots(
        "simulate", "beetle", "--duration", "0.8", "--drop-height", "0.04", "--time-step",
        "0.001", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((out / "summary.json").read_text())
    figures = summary["figures"]
    assert figures["base_height_start"] > 1.1 * figures["nominal_base_height"]
    assert figures["base_height_start"] == pytest.approx(figures["nominal_base_height"] + 0.04)
    assert figures["base_height_within_10_percent"] is True
    # Beetle skeleton: 2.8 kg (skinned-quad-robots-print.txt, section 7, "Physical Validation").
    _AssertFreeFallThenWeight(out, 0.04, 2.8)
