"""Benchmark `drakebots sweep`: a 4-case sweep of a real verb, serially and on 2 local workers.

Every figure is a ratio or a difference against a reference measured in the same run:

- direct: the 4 cases run one after another in this process through drakebots.cli.main (the work
  itself, with no process start-up; the first case's imports are paid before timing);
- shell loop: the 4 cases as 4 `python -m drakebots ...` commands one after another (what a user
  would type without a sweep);
- sweep: `drakebots sweep FILE --workers 2` end to end (cluster start-up included), and the case
  phase alone on an already running LocalCluster of 1 and of 2 workers, for the default mode (a
  fresh Python process per case) and --in-process; and on 2 warm workers (a sweep of tiny
  cases ran first, so each worker has imported pydrake and the verbs, as the direct reference
  has before its timing: a cold worker pays that once, about 1.3 s, which a 4-case sweep of
  1.7 s cases cannot amortise).

Speed-up = reference time / sweep time (goal >= 1.7 on 2 cores). Per-case overhead of the Dask
path = case-phase time on 1 worker / cases - direct time / cases.

Usage:
  python scripts/bench_sweep.py                       # prints a table, writes runs/bench/sweep.json
  python scripts/bench_sweep.py --duration 1 --out /tmp/sweep.json
"""

import argparse
import contextlib
import gc
import io
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEIGHTS = [0.0, 0.005, 0.01, 0.015]  # m: the 4 cases' drop heights


def SweepText(duration: float) -> str:
    return (
        "description: bench_sweep cases\n"
        "command: simulate beetle\n"
        f"fixed: {{duration: {duration}}}\n"
        f"grid: {{drop-height: {HEIGHTS}}}\n"
    )


def Quiet():
    """Silences stdout (the verbs' and the sweep's reports)."""
    return contextlib.redirect_stdout(io.StringIO())


def TimeDirect(cases, work: Path) -> tuple[float, float]:
    """Wall and CPU time of the cases run one after another in this process."""
    import resource

    from drakebots.cli import main

    with Quiet():  # Warm-up: imports pydrake, matplotlib and the verb once.
        main(cases[0].argv[:2] + ["--duration", "0.01", "--out", str(work / "warm")])
    start = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    for case in cases:
        with Quiet():
            code = main(case.argv + ["--out", str(work / "direct" / case.name)])
        assert code == 0, case.argv
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    # The replays' Meshcat objects wait in reference cycles; destroy them here, on the thread that
    # made them (Dask's threads start next, and a Meshcat destroyed there aborts the process).
    gc.collect()
    return elapsed, cpu


def TimeShellLoop(cases, work: Path) -> float:
    start = time.perf_counter()
    for case in cases:
        out = work / "shell" / case.name
        subprocess.run(
            [sys.executable, "-m", "drakebots", *case.argv, "--out", str(out)],
            check=True,
            capture_output=True,
        )
    return time.perf_counter() - start


def TimeSweepCli(sweep_file: Path, work: Path, workers: int) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "drakebots", "sweep", str(sweep_file)]
        + ["--out", str(work / f"cli{workers}"), "--workers", str(workers)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return time.perf_counter() - start


def StartCluster(workers: int):
    import dask
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    with dask.config.set({"distributed.scheduler.worker-saturation": 1.0}):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )
    client = Client(cluster)
    return cluster, client, time.perf_counter() - start


def TimeCasePhase(
    sweep, work: Path, workers: int, in_process: bool, warmup=None
) -> tuple[float, list]:
    """Wall time of RunSweep on a running LocalCluster, and the per-case rows.

    With `warmup` (a sweep of tiny cases), that sweep runs first on the same cluster, so every
    worker has imported pydrake and the verbs (its fork server is up) before the timed sweep, as
    the direct reference has before its timing: the per-case cost of the Dask path alone.
    """
    from drakebots.sweeps.executor import RunSweep, SweepFolder, SweepOptions

    cluster, client, _ = StartCluster(workers)
    try:
        tag = f"phase{workers}{'-inproc' if in_process else ''}{'-warm' if warmup else ''}"
        out = work / tag
        options = SweepOptions(
            scheduler=cluster.scheduler_address, in_process=in_process, progress=False
        )
        if warmup is not None:
            with Quiet():
                assert RunSweep(warmup, work / f"{tag}-warmup", options) == 0
        start = time.perf_counter()
        with Quiet():
            code = RunSweep(sweep, out, options)
        elapsed = time.perf_counter() - start
        assert code == 0
        folder = SweepFolder(out)
        rows = folder.Rows(folder.ReadCases()["cases"])
        return elapsed, rows
    finally:
        client.close()
        cluster.close()


def Mean(values) -> float:
    return sum(values) / len(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--duration", type=float, default=3.0, help="simulated seconds per case (default 3)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="repeat every measurement and keep the fastest (for a busy machine; default 1)",
    )
    parser.add_argument("--out", default="runs/bench/sweep.json", help="JSON results file")
    args = parser.parse_args()
    import distributed  # noqa: F401 - sets its loggers' levels on import; quiet them after.

    logging.getLogger("distributed").setLevel(logging.CRITICAL)

    from drakebots.sweeps.spec import LoadSweep

    work = Path(tempfile.mkdtemp(prefix="bench_sweep-"))
    try:
        sweep_file = work / "bench.yaml"
        sweep_file.write_text(SweepText(args.duration))
        sweep = LoadSweep(str(sweep_file))
        warmup_file = work / "warmup.yaml"
        warmup_file.write_text(SweepText(0.01))
        warmup = LoadSweep(str(warmup_file))
        cases = sweep.cases
        n = len(cases)
        print(f"bench_sweep: {n} cases of `drakebots simulate beetle --duration {args.duration}`")
        load = os.getloadavg()[0]
        best: dict = {}

        def Keep(name, value, extra=None):
            """The fastest of the repeats (a busy machine only ever slows a run down)."""
            if name not in best or value < best[name][0]:
                best[name] = (value, extra)

        for repeat in range(args.repeats):
            where = work / f"r{repeat}"
            t, cpu = TimeDirect(cases, where)
            Keep("direct", t, cpu)
            print(f"  direct (in this process)     {t:7.2f} s")
            t = TimeShellLoop(cases, where)
            Keep("shell", t)
            print(f"  shell loop (4 commands)      {t:7.2f} s")
            t = TimeSweepCli(sweep_file, where, 2)
            Keep("cli2", t)
            print(f"  drakebots sweep --workers 2  {t:7.2f} s (cluster start-up included)")
            cluster, client, t = StartCluster(2)
            client.close()
            cluster.close()
            Keep("cluster", t)
            for workers in (2, 1):
                for in_process in (False, True):
                    elapsed, rows = TimeCasePhase(sweep, where, workers, in_process)
                    mode = "in-process" if in_process else "subprocess"
                    Keep(
                        f"{mode}_{workers}w",
                        elapsed,
                        {
                            "seconds": elapsed,
                            "case_seconds_on_worker": [row["seconds"] for row in rows],
                            "case_cpu_seconds": [row["cpu_seconds"] for row in rows],
                            "workers_used": sorted({row["worker"] for row in rows}),
                        },
                    )
                    print(f"  case phase, {workers} worker(s), {mode:<10} {elapsed:7.2f} s")
            for in_process in (False, True):
                elapsed, rows = TimeCasePhase(sweep, where, 2, in_process, warmup)
                mode = "in-process" if in_process else "subprocess"
                Keep(f"{mode}_2w_warm", elapsed, {"seconds": elapsed})
                print(f"  case phase, 2 warm workers, {mode:<10} {elapsed:7.2f} s")
        t_direct, cpu_direct = best["direct"]
        t_shell = best["shell"][0]
        t_cli2 = best["cli2"][0]
        t_cluster = best["cluster"][0]
        phases = {
            name: best[name][1]
            for name in (
                "subprocess_2w",
                "in-process_2w",
                "subprocess_1w",
                "in-process_1w",
                "subprocess_2w_warm",
                "in-process_2w_warm",
            )
        }
        load_after = os.getloadavg()[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    figures = {
        "speedup_2w_vs_direct": t_direct / phases["subprocess_2w"]["seconds"],
        "speedup_2w_in_process_vs_direct": t_direct / phases["in-process_2w"]["seconds"],
        # Workers that have imported pydrake already (as the direct reference has):
        "speedup_2w_warm_vs_direct": t_direct / phases["subprocess_2w_warm"]["seconds"],
        "speedup_2w_warm_in_process_vs_direct": t_direct / phases["in-process_2w_warm"]["seconds"],
        "speedup_sweep_cli_2w_vs_shell_loop": t_shell / t_cli2,
        "speedup_sweep_cli_2w_vs_direct": t_direct / t_cli2,
        "overhead_per_case_s_subprocess": (phases["subprocess_1w"]["seconds"] - t_direct) / n,
        "overhead_per_case_s_in_process": (phases["in-process_1w"]["seconds"] - t_direct) / n,
        "direct_per_case_s": t_direct / n,
        # CPU time, which other programs on the machine do not inflate:
        "direct_cpu_per_case_s": cpu_direct / n,
        "overhead_cpu_per_case_s_subprocess": Mean(phases["subprocess_1w"]["case_cpu_seconds"])
        - cpu_direct / n,
        "overhead_cpu_per_case_s_in_process": Mean(phases["in-process_1w"]["case_cpu_seconds"])
        - cpu_direct / n,
        "shell_loop_per_case_s": t_shell / n,
        "local_cluster_start_s": t_cluster,
    }
    result = {
        "benchmark": "sweep",
        "workload": (
            f"{len(cases)} cases of a real verb ({' '.join(cases[0].argv[:2])} ...), "
            f"{args.duration:g} s each: direct, shell loop, and `drakebots sweep` on 1 and 2 "
            "Dask workers"
        ),
        "cases": [case.argv for case in cases],
        "duration_s": args.duration,
        "repeats": args.repeats,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_1min_before": load,
            "load_average_1min_after": load_after,
        },
        "direct_s": t_direct,
        "direct_cpu_s": cpu_direct,
        "shell_loop_s": t_shell,
        "sweep_cli_2_workers_s": t_cli2,
        "case_phase": phases,
        "figures": figures,
        "goal": {"speedup_2w_vs_direct": 1.7},
    }
    print()
    print(f"{'figure':<40} {'value':>9}")
    for key, value in figures.items():
        print(f"{key:<40} {value:9.3f}")
    print(f"(1-min load average {load:.1f} before, {load_after:.1f} after, {os.cpu_count()} CPUs)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
