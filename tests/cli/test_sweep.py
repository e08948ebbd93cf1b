"""`drakebots sweep`: sweep files checked before anything runs, cases on a Dask LocalCluster with
two worker processes on loopback, results equal to the same cases run one by one, a case that
raises, a worker killed mid-case, Ctrl-C, and re-runs that complete only what is missing.

The cases are real `drakebots simulate beetle` runs of 0.05 s (a few seconds each with start-up).
"""

import gc
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from drakebots.cli import VerbModules, main
from drakebots.config import LoadTypedYaml
from drakebots.sweeps.spec import NamedSweeps, SweepFile

# Figures that measure the machine (wall time), not the simulated physics.
TIMING_FIGURES = {"figures.wall_time_s", "figures.real_time_rate"}


def drakebots(*args, timeout=300, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "drakebots", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def journal(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


def rows_by_case(out: Path) -> dict:
    """The current rows (status's JSON view) by case name."""
    from drakebots.sweeps.executor import SweepFolder

    folder = SweepFolder(out)
    return {row["case"]: row for row in folder.Rows(folder.ReadCases()["cases"])}


@pytest.fixture(scope="module")
def cluster():
    """An existing cluster (as `dask scheduler` + `dask worker` would be): 2 worker processes on
    loopback; a task whose worker dies is not retried (allowed-failures 0), one task per worker."""
    import dask
    from distributed import Client, LocalCluster

    settings = {
        "distributed.scheduler.allowed-failures": 0,
        "distributed.scheduler.worker-saturation": 1.0,
    }
    with dask.config.set(settings):
        local = LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )
    client = Client(local)
    yield local, client
    client.close()
    local.close()


# --- bad sweep files: exit 2, nothing written --------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ("comand: simulate beetle\ngrid: {duration: [0.1]}\n", "unknown key 'comand'"),
        (
            "command: simulate beetle\ncases: [{nme: a, args: {duration: 0.1}}]\n",
            "nme",
        ),
        ("command: frobnicate beetle\ngrid: {duration: [0.1]}\n", "unknown verb 'frobnicate'"),
        ("command: simulate beetle\ngrid: {durration: [0.1]}\n", "unknown option 'durration'"),
        ("command: simulate beetle\nfixed: {duration: abc}\ngrid: {drop-height: [0]}\n", "abc"),
        ("command: simulate beetle\ngrid: {duration: [0.1], out: [x]}\n", "set by the sweep"),
        ("command: simulate beetle\ngrid: {meshcat: [1]}\n", "flag"),
        ("command: simulate beetle\nfixed: {duration: 1}\ngrid: {duration: [2]}\n", "both"),
        (
            "command: simulate beetle\ncases: [{name: a, args: {duration: 1}},"
            " {name: a, args: {duration: 2}}]\n",
            "share the folder name",
        ),
        ("command: simulate beetle\n", "no cases"),
        ("command: simulate beetle\ngrid: {duration: []}\n", "no values"),
    ],
)
def test_bad_sweep_file_exits_2_before_any_case(tmp_path, capsys, text, message):
    sweep = tmp_path / "bad.yaml"
    sweep.write_text(text)
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert str(sweep) in err, err
    assert not out.exists(), "a bad sweep file must not create its folder"


def test_unknown_verb_through_the_console_script(tmp_path):
    sweep = tmp_path / "bad.yaml"
    sweep.write_text("command: optimise hamr-gait\ngrid: {frequency: [2, 10]}\n")
    result = drakebots("sweep", str(sweep), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "unknown verb 'optimise'" in result.stderr and str(sweep) in result.stderr
    assert not (tmp_path / "out").exists()


def test_bad_options_and_folders_exit_2(tmp_path, capsys):
    assert main(["sweep", "no_such_sweep"]) == 2
    assert "shipped" in capsys.readouterr().err
    assert main(["sweep", "beetle_drop", "--in-process", "--case-timeout", "5"]) == 2
    assert main(["sweep", "status", str(tmp_path)]) == 2
    assert "not a sweep folder" in capsys.readouterr().err
    (tmp_path / "mine.txt").write_text("not a sweep")
    assert main(["sweep", "beetle_drop", "--out", str(tmp_path)]) == 2
    assert "not a sweep folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


# --- the shipped sweeps ------------------------------------------------------------------------


EXPECTED_CASES = {
    "beetle_drop": 6,
    "hamr_paper": 10,
    "gecko_grid": 30,
    "monster_skins": 3,
    "skinned_variants": 18,
}


def test_every_shipped_sweep_is_listed_and_typed():
    assert set(NamedSweeps()) == set(EXPECTED_CASES)
    for name, path in NamedSweeps().items():
        spec = LoadTypedYaml(SweepFile, filename=path)
        count = int(np.prod([len(v) for v in spec.grid.values()])) if spec.grid else 0
        assert count + len(spec.cases) == EXPECTED_CASES[name], name
        assert spec.description, name


@pytest.mark.parametrize("name", sorted(EXPECTED_CASES))
def test_shipped_sweep_validates_against_its_verb(name):
    """Every case's command line passes the verb's parser, once the verb exists in this build
    (optimize, design and the gecko options come with their own issues)."""
    from drakebots.errors import InputError
    from drakebots.sweeps.spec import LoadSweep

    spec = LoadTypedYaml(SweepFile, filename=NamedSweeps()[name])
    verb = spec.command.split()[0]
    if verb not in VerbModules():
        pytest.skip(f"verb '{verb}' is not in this build yet")
    try:
        sweep = LoadSweep(name)
    except InputError as e:
        if "unknown option" in str(e) or "unknown sub-command" in str(e):
            pytest.skip(f"'{spec.command}' lacks an option of this sweep yet: {e}")
        raise
    assert len(sweep.cases) == EXPECTED_CASES[name]
    assert len({case.name for case in sweep.cases}) == len(sweep.cases)


def test_named_sweep_dry_run_prints_the_command_lines(capsys):
    assert main(["sweep", "sweeps/beetle_drop.yaml", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "6 cases" in out
    line = "drakebots simulate beetle --duration=0.5 --drop-height=0.01 --ground-friction=0.8"
    assert line in out


def test_placeholders_fill_positionals_and_fixed_values(tmp_path, capsys):
    sweep = tmp_path / "placeholders.yaml"
    sweep.write_text(
        "command: simulate {robot}\n"
        "fixed: {duration: 0.05, log-period: '{period}'}\n"
        "grid: {robot: [beetle, cow], period: [0.01], drop-height: [0.0, 0.01]}\n"
    )
    assert main(["sweep", str(sweep), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "4 cases" in out
    assert "drakebots simulate cow --duration=0.05 --log-period=0.01 --drop-height=0.01" in out
    assert "drop-height=0,period=0.01,robot=beetle" in out


def test_table_keeps_a_swept_option_apart_from_a_summary_figure_of_the_same_name(tmp_path):
    from drakebots.sweeps.table import WriteTable

    rows = [
        {"case": "a", "status": "done", "params": {"iterations": 20}, "figures": {"iterations": 7}},
        {"case": "b", "status": "failed", "params": {}, "figures": {"iterations": 9, "x": "s"}},
    ]
    WriteTable(rows, tmp_path)
    table = pq.read_table(tmp_path / "results.parquet").to_pylist()
    assert [r["iterations"] for r in table] == [20, None]
    assert [r["summary.iterations"] for r in table] == [7, 9]
    assert (tmp_path / "results.csv").read_text().splitlines()[0].count("iterations") == 2


def test_the_sweep_files_figures_come_first_then_the_most_varying():
    """A sweep file's `figures` fill the table's and figures.png's places first, in their order,
    when some case reports them; the rest go to the figures that vary most."""
    from drakebots.sweeps.spec import ExpandSweep
    from drakebots.sweeps.table import ChooseFigures, FormatTable

    rows = [
        {"case": "a", "status": "done", "params": {"f": 2}, "figures": {"v": 9.5, "r": 1e-9}},
        {"case": "b", "status": "done", "params": {"f": 10}, "figures": {"v": 9.4, "r": 3e-7}},
        {"case": "c", "status": "done", "params": {"f": 30}, "figures": {"apex": 14.7, "r": 2e-8}},
    ]
    # Unasked, the residual varies most (relative spread ~1 against 0.01 for v).
    assert ChooseFigures(rows, 1) == ["r"]
    assert ChooseFigures(rows, 3, ["v", "missing", "apex"]) == ["v", "apex", "r"]
    assert ChooseFigures(rows, 2, ["v", "v"]) == ["v", "r"]
    header = FormatTable(rows, max_figures=2, preferred=["apex"]).splitlines()[0].split()
    assert header[-2:] == ["apex", "r"]
    spec = LoadTypedYaml(
        SweepFile,
        data="description: d\ncommand: simulate beetle\ngrid: {duration: [0.1, 0.2]}\n"
        "figures: [mm_per_cycle, wall_time_s]\n",
    )
    assert ExpandSweep(spec, Path("x.yaml")).figures == ["mm_per_cycle", "wall_time_s"]


def test_sweep_plots_for_two_one_and_many_parameters():
    import matplotlib.pyplot as plt

    from drakebots.sweeps.plots import PlotSweepFigures

    q1 = [50, 50, 60, 60]
    q2 = [-0.5, 0.5, -0.5, 0.5]
    figures = {"figures.dx": [1.0, 2.0, None, 4.0], "figures.de": [-3.0, 3.0, -4.0, 4.0]}
    nan = float("nan")
    for params in ({"q1": q1, "q2": q2}, {"q1": q1}, {"q1": q1, "q2": q2, "s": list("abcd")}):
        figure = PlotSweepFigures(list("abcd"), params, figures, title="t")
        panels = {ax.get_title(): ax for ax in figure.axes if ax.get_title() in ("dx", "de")}
        assert len(panels) == 2 and all(ax.has_data() for ax in panels.values())
        # Each panel shows the table's values where they belong, a missing one left out.
        dx = panels["dx"]
        if len(params) == 2:  # a map: rows q2 = -0.5, 0.5; columns q1 = 50, 60
            (image,) = dx.images
            shown = np.ma.filled(image.get_array().astype(float), nan)
            np.testing.assert_array_equal(shown, [[1.0, nan], [2.0, 4.0]])
        elif len(params) == 1:  # a curve over q1
            (line,) = dx.lines
            np.testing.assert_array_equal(line.get_xydata(), [[50, 1], [50, 2], [60, nan], [60, 4]])
        else:  # bars per case
            assert [t.get_text() for t in dx.get_xticklabels()] == list("abcd")
            np.testing.assert_array_equal([b.get_height() for b in dx.patches], [1, 2, nan, 4])
        plt.close(figure)


# --- a sweep on a LocalCluster of 2 workers == the same cases run one by one -------------------

TINY = """\
description: four short beetle drops
command: simulate beetle
fixed:
  duration: 0.05
grid:
  drop-height: [0.0, 0.01]
  ground-friction: [0.5, 0.9]
"""


def test_local_cluster_sweep_equals_serial_runs_and_resumes(tmp_path, capsys):
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(TINY)
    out = tmp_path / "sweep"
    result = drakebots("sweep", str(sweep), "--out", str(out), "--workers", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 cases: 4 done" in result.stdout

    assert (out / "figures.png").is_file()
    csv_rows = (out / "results.csv").read_text().splitlines()
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert len(csv_rows) == 1 + 4 and len(table) == 4
    assert {row["status"] for row in table} == {"done"}
    assert len({row["worker"] for row in table}) == 2, "both local workers ran cases"
    assert all(row["worker"].startswith("tcp://127.0.0.1:") for row in table)

    for row in table:
        case_dir = out / "cases" / row["case"]
        assert (case_dir / "summary.json").is_file() and (case_dir / "replay.html").is_file()
        marker = json.loads((case_dir / "sweep_case.json").read_text())
        serial_dir = tmp_path / "serial" / row["case"]
        assert main(marker["argv"] + ["--out", str(serial_dir)]) == 0
        capsys.readouterr()
        serial = json.loads((serial_dir / "summary.json").read_text())
        assert serial["inputs"]["drop_height"] == row["drop-height"]
        assert serial["inputs"]["ground_friction"] == row["ground-friction"]
        from drakebots.sweeps.table import FlattenSummary

        for key, value in FlattenSummary(serial).items():
            if key not in TIMING_FIGURES:
                assert row[key] == value, (row["case"], key)
        with np.load(case_dir / "log.npz") as swept, np.load(serial_dir / "log.npz") as direct:
            for name in direct.files:
                np.testing.assert_array_equal(swept[name], direct[name], err_msg=name)
    # The serial runs' replay Meshcats wait in reference cycles: destroy them on this thread before
    # Dask's threads start in later tests (a Meshcat destroyed on another thread aborts).
    gc.collect()

    # The same sweep again: nothing runs, no cluster starts, the folders are untouched.
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("cases/*/sweep_case.json")}
    assert main(["sweep", str(sweep), "--out", str(out)]) == 0
    assert "0 to run, 4 already complete" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps

    assert main(["sweep", "status", str(out)]) == 0
    assert "4 cases: 4 done, 0 failed, 0 error, 0 lost, 0 missing" in capsys.readouterr().out

    # Issue 68: a log cut short and a replay deleted since: those two cases run again, and the
    # run says why; the others stay as they were.
    cut, deleted = sorted(p.parent for p in stamps)[:2]
    log = (cut / "log.npz").read_bytes()
    (cut / "log.npz").write_bytes(log[: len(log) // 2])
    (deleted / "replay.html").unlink()
    assert main(["sweep", str(sweep), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "2 to run, 2 already complete" in printed
    assert (
        f"{cut.name} runs again: an earlier folder that failed verification: log.npz changed"
        in (printed)
    )
    assert (
        f"{deleted.name} runs again: an earlier folder that failed verification: replay.html "
        in (printed)
    )
    assert (cut / "log.npz").read_bytes() != log[: len(log) // 2]
    assert (deleted / "replay.html").is_file()
    unchanged = [p for p in stamps if p.parent not in (cut, deleted)]
    assert all(p.stat().st_mtime_ns == stamps[p] for p in unchanged)
    gc.collect()


# --- faults on an existing cluster -------------------------------------------------------------


def _InjectSimulatorFault():
    """Runs on every worker process: simulate raises for ground friction 0.123 (a stand-in for a
    crash deep inside a verb; every user input that could cause one is rejected with exit 2)."""
    import drakebots.skinned.simulate as quadruped

    original = getattr(quadruped, "_original_simulate", quadruped.Simulate)
    quadruped._original_simulate = original

    def Simulate(scenario, robot, **kwargs):
        if scenario.ground_friction == 0.123:
            raise RuntimeError("injected fault: the simulator crashed")
        return original(scenario, robot, **kwargs)

    quadruped.Simulate = Simulate


def test_case_that_raises_is_recorded_with_its_traceback(tmp_path, cluster, capsys):
    local, client = cluster
    client.run(_InjectSimulatorFault)
    sweep = tmp_path / "raises.yaml"
    sweep.write_text(
        "command: simulate beetle\nfixed: {duration: 0.05}\ngrid: {ground-friction: [0.8, 0.123]}\n"
    )
    out = tmp_path / "sweep"
    args = [
        "sweep",
        str(sweep),
        "--out",
        str(out),
        "--scheduler",
        local.scheduler_address,
        "--in-process",
    ]
    assert main(args + ["--no-progress"]) == 1
    report = capsys.readouterr().out
    rows = rows_by_case(out)
    assert rows["ground-friction=0.8"]["status"] == "done"
    bad = rows["ground-friction=0.123"]
    assert bad["status"] == "error"
    assert bad["traceback"].startswith("Traceback (most recent call last):")
    assert "RuntimeError" in bad["traceback"] and "injected fault" in bad["reason"]
    assert "error  ground-friction=0.123" in report and "--retry-failed" in report
    assert "Traceback" in Path(bad["log"]).read_text()
    assert not (out / "cases" / "ground-friction=0.123").exists()

    # A plain re-run keeps the error (it would raise again); --retry-failed runs only that case.
    assert main(args + ["--no-progress"]) == 1
    assert "0 to run" in capsys.readouterr().out
    assert main(args + ["--no-progress", "--retry-failed"]) == 1
    assert journal(out)[-3]["event"] == "start" and journal(out)[-3]["to_run"] == [
        "ground-friction=0.123"
    ]
    assert main(["sweep", "status", str(out)]) == 1
    status = capsys.readouterr().out
    assert "1 done, 0 failed, 1 error" in status and "RuntimeError" in status


def test_case_timeout_stops_the_case(tmp_path, cluster, capsys):
    local, _ = cluster
    sweep = tmp_path / "slow.yaml"
    sweep.write_text("command: simulate beetle\ncases: [{name: slow, args: {duration: 60}}]\n")
    out = tmp_path / "sweep"
    args = ["sweep", str(sweep), "--out", str(out), "--scheduler", local.scheduler_address]
    assert main(args + ["--no-progress", "--case-timeout", "1.5"]) == 1
    row = rows_by_case(out)["slow"]
    assert row["status"] == "error" and "--case-timeout 1.5 s" in row["reason"]
    assert 1.5 <= row["seconds"] < 10
    assert not _child_processes_writing(out), "the timed-out case is still running"


def _child_processes_writing(folder: Path) -> list[int]:
    """Pids of processes that name `folder` on their command line or hold a file in it open (a
    case still running: a child of the fork server has its log open)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            files = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
        except OSError:
            continue
        if str(folder) in cmdline or any(f.startswith(str(folder)) for f in files):
            pids.append(int(proc.name))
    return pids


def test_worker_killed_mid_case_loses_only_that_case(tmp_path, cluster, capsys):
    local, client = cluster
    sweep = tmp_path / "kill.yaml"
    sweep.write_text(
        "command: simulate beetle\n"
        "cases:\n"
        "  - {name: victim, args: {duration: 0.5}}\n"
        "  - {name: a, args: {duration: 0.05}}\n"
    )
    out = tmp_path / "sweep"
    args = ["sweep", str(sweep), "--out", str(out), "--scheduler", local.scheduler_address]
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(code=main(args + ["--no-progress"])))
    thread.start()
    victim_log = out / "logs" / "victim.log"
    deadline = time.time() + 120
    worker = None
    while worker is None and time.time() < deadline:
        for address, keys in client.processing().items():
            if any("-case-victim-" in str(key) for key in keys):
                worker = address
        time.sleep(0.05)
    assert worker is not None, "the victim case never started"
    while not (victim_log.is_file() and "=== drakebots" in victim_log.read_text()):
        assert time.time() < deadline
        time.sleep(0.05)
    pid = client.run(os.getpid, workers=[worker])[worker]
    os.kill(pid, signal.SIGKILL)  # As the OOM killer or a pre-empted node would.
    thread.join(timeout=180)
    assert outcome.get("code") == 1
    report = capsys.readouterr().out
    rows = rows_by_case(out)
    assert rows["victim"]["status"] == "lost"
    assert "worker running this case died" in rows["victim"]["reason"]
    assert "lost   victim" in report
    assert rows["a"]["status"] == "done"
    time.sleep(1.0)
    assert not _child_processes_writing(out / "cases" / "victim"), "the case outlived its worker"
    assert not _child_processes_writing(out / "logs" / "victim.log"), "the case outlived its worker"
    assert not (out / "cases" / "victim").exists()

    # The re-run completes only what is missing: the lost case; a and b stay as they were.
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("cases/*/sweep_case.json")}
    client.wait_for_workers(2, timeout=60)  # The nanny restarts the killed worker.
    assert main(args + ["--no-progress"]) == 0
    starts = [r for r in journal(out) if r["event"] == "start"]
    assert starts[-1]["to_run"] == ["victim"]
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    assert rows_by_case(out)["victim"]["status"] == "done"
    assert len(pq.read_table(out / "results.parquet")) == 2


def test_ctrl_c_names_the_cases_in_flight_and_a_rerun_completes_them(tmp_path, cluster):
    local, _ = cluster
    sweep = tmp_path / "long.yaml"
    heights = ["0.0", "0.002", "0.004", "0.006"]
    sweep.write_text(
        "command: simulate beetle\nfixed: {duration: 0.05}\n"
        f"grid: {{drop-height: [{', '.join(heights)}]}}\n"
    )
    out = tmp_path / "sweep"
    args = ["sweep", str(sweep), "--out", str(out), "--scheduler", local.scheduler_address]
    process = subprocess.Popen(
        [sys.executable, "-m", "drakebots", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: a shell's background job (`... &`, as CI scripts may run the
        # tests) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 120
    while not (out / "journal.jsonl").is_file() or not any(
        r["event"] == "case" for r in journal(out)
    ):
        assert time.time() < deadline and process.poll() is None
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout + stderr
    interrupted = [r for r in journal(out) if r["event"] == "interrupted"]
    assert len(interrupted) == 1
    finished = [r["case"] for r in journal(out) if r["event"] == "case"]
    assert finished and len(finished) < len(heights)
    assert "interrupted" in stdout and "in flight" in stdout
    for name in interrupted[0]["in_flight"]:
        assert name in stdout
    # The cases in flight were killed on their workers (Dask alone cannot stop a running task;
    # one may also have ended by itself in the moment before).
    assert set(interrupted[0]["stopped"]) <= set(interrupted[0]["in_flight"])
    deadline = time.time() + 10
    while _child_processes_writing(out):
        assert time.time() < deadline, "an interrupted case is still running"
        time.sleep(0.1)

    assert main(args + ["--no-progress"]) == 0
    to_run = set([r for r in journal(out) if r["event"] == "start"][-1]["to_run"])
    # Only unfinished cases run again.
    assert to_run <= set(interrupted[0]["in_flight"] + interrupted[0]["not_started"])
    assert not to_run & set(finished)
    assert {row["status"] for row in rows_by_case(out).values()} == {"done"}


def test_a_case_is_finished_only_when_its_files_match_their_checksums(tmp_path):
    """Issues 50, 68: a summary.json cut short, replaced or edited, a log.npz truncated, a
    replay.html deleted after the case finished, or a marker without checksums over a forged
    summary, makes the case run again, and the row says why."""
    import hashlib

    from drakebots.sweeps.executor import CASE_MARKER, SweepFolder

    folder = SweepFolder(tmp_path)
    case = {"name": "c", "argv": ["simulate", "beetle"], "params": {}}
    case_dir = folder.CaseDir("c")
    case_dir.mkdir(parents=True)
    written = {
        "summary.json": b'{"success": true}',
        "log.npz": bytes(range(256)) * 40,
        "replay.html": b"<html></html>",
    }
    for name, data in written.items():
        (case_dir / name).write_bytes(data)
    files = {name: hashlib.sha256(data).hexdigest() for name, data in written.items()}
    marker = {"case": "c", "argv": case["argv"], "status": "done"}
    (case_dir / CASE_MARKER).write_text(json.dumps({**marker, "files": files}))
    assert folder.Marker(case)["status"] == "done"

    def restore():
        for name, data in written.items():
            (case_dir / name).write_bytes(data)
        (case_dir / CASE_MARKER).write_text(json.dumps({**marker, "files": files}))

    damage = {
        "summary cut short": lambda: (case_dir / "summary.json").write_bytes(b'{"success": tru'),
        "another summary": lambda: (case_dir / "summary.json").write_bytes(b'{"success": 0}'),
        "log truncated": lambda: (case_dir / "log.npz").write_bytes(written["log.npz"][:100]),
        "replay deleted": lambda: (case_dir / "replay.html").unlink(),
        "marker without checksums": lambda: (case_dir / CASE_MARKER).write_text(json.dumps(marker)),
        "marker not json": lambda: (case_dir / CASE_MARKER).write_text("{not json"),
        "marker a list": lambda: (case_dir / CASE_MARKER).write_text("[1]"),
        "marker points outside": lambda: (case_dir / CASE_MARKER).write_text(
            json.dumps({**marker, "files": {**files, "../../x": files["log.npz"]}})
        ),
    }
    for what, damage_it in damage.items():
        restore()
        assert folder.Marker(case)["status"] == "done", what
        damage_it()
        row, why = folder.Verify(case)
        assert row is None and why, what
        (rows,) = folder.Rows([case])
        assert rows["status"] == "missing" and why in rows["reason"], what
    restore()
    assert folder.Marker({**case, "argv": ["simulate", "cow"]}) is None


def test_a_sweep_folder_belongs_to_one_sweep_file(tmp_path, capsys, monkeypatch):
    """Another sweep file into an existing sweep folder is exit 2 (nothing run, nothing changed);
    the same file, given by another relative path, is the same sweep; --force takes it over."""
    from drakebots.sweeps.executor import CASES_FILE
    from drakebots.sweeps.spec import LoadSweep

    monkeypatch.chdir(tmp_path)
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("command: simulate beetle\ngrid:\n  duration: [0.05]\n")
    out = tmp_path / "sweep"
    out.mkdir()
    from drakebots.sweeps.executor import SweepFolder

    SweepFolder(out).WriteCases(LoadSweep("a.yaml"), "")
    cases = (out / CASES_FILE).read_text()
    assert main(["sweep", "b.yaml", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "a.yaml" in err and "b.yaml" in err
    assert (out / CASES_FILE).read_text() == cases
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    SweepFolder(out).CheckOwner(LoadSweep("../a.yaml"), force=False)  # The same file.
    SweepFolder(out).CheckOwner(LoadSweep("../b.yaml"), force=True)
