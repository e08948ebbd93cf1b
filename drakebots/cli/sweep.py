"""Run a family of drakebots commands (a sweep) on Dask, resumably; or show a sweep's status.

A sweep file (typed YAML) names the command every case runs, the options they share and the
options that vary (a grid, every combination, and/or listed cases); shipped sweeps are used by
name (`--list` shows them). Each case is one Dask task that writes the command's normal results
folder under DIR/cases/; DIR/results.csv and results.parquet hold one row per case (parameters,
status, exit code, figures of merit from its summary.json, time, worker) and DIR/journal.jsonl
records each case as it finishes. Running the sweep again skips complete cases; an interrupted
sweep loses at most the cases in flight (it names them). Every case's command line is checked by
the verb's own parser before any case runs.

Examples:
  drakebots sweep beetle_drop --out runs/beetle_drop        # 6 cheap cases, local cluster
  drakebots sweep sweeps/hamr_paper.yaml --out runs/hamr_sweep      # all cores
  drakebots sweep sweeps/hamr_paper.yaml --out runs/hamr_sweep      # again: skips finished cases
  drakebots sweep hamr_paper --out runs/hamr_sweep --retry-failed   # re-run the failures
  drakebots sweep gecko_grid --scheduler tcp://scheduler.example.org:8786 --out runs/grid
  drakebots sweep my_sweep.yaml --dry-run                   # the cases' command lines only
  drakebots sweep status runs/hamr_sweep                    # counts and the table
  drakebots sweep --list                                    # the shipped sweeps

A cluster: `dask scheduler` on one machine, `dask worker tcp://HOST:8786 --nthreads 1` on each
worker machine (drakebots installed, DIR on a file system they share), then --scheduler.
Each case runs in a process of its own on its worker (Linux: forked from a warm fork server;
--in-process: inside the worker). Case statuses: done (exit 0), failed (exit 1, reason in its
summary.json), error (raised, exit 2, crashed, timed out), lost (its worker died), missing.
A re-run runs missing and lost cases; --retry-failed also failed and errored ones; --force all.
Exit codes of a run: 0 every case done; 1 some case not done (the report names each and why);
2 bad sweep file or options (nothing runs); 130 interrupted. `status`: 0 all done, 1 otherwise.
"""

import sys
from pathlib import Path

from drakebots.cli import AddVerb, CommandLine
from drakebots.errors import InputError


def _NonNegativeInt(text: str) -> int:
    import argparse

    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _PositiveInt(text: str) -> int:
    import argparse

    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def register(subparsers):
    from drakebots.cli import OutFolder, PositiveFloat

    parser = AddVerb(subparsers, "sweep", __doc__)
    parser.add_argument(
        "target",
        nargs="?",
        metavar="SWEEP|status",
        help="a sweep file, the name of a shipped sweep (--list), or 'status'",
    )
    parser.add_argument(
        "folder", nargs="?", metavar="DIR", help="with 'status': the sweep folder to report on"
    )
    parser.add_argument(
        "--out",
        default=None,
        type=OutFolder,
        help="sweep folder (default: runs/sweep-<name>; reused to resume)",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="tcp://HOST:PORT",
        help="run on this Dask scheduler's workers (default: a local cluster on this machine)",
    )
    parser.add_argument(
        "--workers",
        type=_PositiveInt,
        default=None,
        help="local cluster: worker processes (default: all cores, at most one per case)",
    )
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="also run again the cases that failed or raised in an earlier run",
    )
    parser.add_argument(
        "--force", action="store_true", help="run every case again, replacing its results folder"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run each case inside its worker process instead of a process of its own (a little "
        "faster for tiny cases, but a case that crashes takes its worker down)",
    )
    parser.add_argument(
        "--case-timeout",
        type=PositiveFloat,
        default=None,
        metavar="S",
        help="stop a case after S seconds and record it as an error (not with --in-process)",
    )
    parser.add_argument(
        "--allowed-failures",
        type=_NonNegativeInt,
        default=None,
        metavar="N",
        help="local cluster: retry a case N times when its worker dies (default 1); on an "
        "existing cluster the scheduler's own setting applies",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the cases; run nothing")
    parser.add_argument("--list", action="store_true", help="list the shipped sweeps and exit")
    parser.add_argument("--json", action="store_true", help="with 'status': print JSON rows")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--verbose", action="store_true", help="also show Dask's own log messages")
    parser.set_defaults(func=Run)
    return parser


def Run(args) -> int:
    from drakebots.sweeps.spec import LoadSweep

    if args.list:
        return _List()
    if args.target is None:
        raise InputError("give a sweep file or name, or 'status DIR' (see --help)")
    if args.target == "status" and (args.folder is not None or not Path("status").is_file()):
        from drakebots.sweeps.executor import StatusReport

        if args.folder is None:
            raise InputError("sweep status: give the sweep folder (drakebots sweep status DIR)")
        return StatusReport(args.folder, as_json=args.json)
    if args.folder is not None:
        raise InputError(
            f"unexpected argument '{args.folder}' (the sweep folder is given with --out)"
        )
    if args.json:
        raise InputError("--json applies to 'sweep status DIR' only")
    options = _Options(args)
    sweep = LoadSweep(args.target)
    if args.dry_run:
        import shlex

        print(f"sweep {sweep.name}: {len(sweep.cases)} cases ({sweep.source})")
        for case in sweep.cases:
            print(f"  {case.name}\n      drakebots {shlex.join(case.argv)}")
        return 0
    from drakebots.sweeps.executor import RunSweep, SweepFolder

    out = Path(args.out) if args.out else Path("runs") / f"sweep-{sweep.name}"
    SweepFolder(out).CheckUsable()
    SweepFolder(out).CheckOwner(sweep, args.force)
    hint = f"drakebots sweep {args.target} --out {out}" + (
        f" --scheduler {args.scheduler}" if args.scheduler else ""
    )
    return RunSweep(sweep, out, options, rerun_hint=hint)


def _Options(args):
    """The SweepOptions of the command line, checked."""
    from drakebots.sweeps.executor import SweepOptions

    options = SweepOptions(
        scheduler=args.scheduler,
        workers=args.workers,
        retry_failed=args.retry_failed,
        force=args.force,
        in_process=args.in_process,
        case_timeout=args.case_timeout,
        allowed_failures=args.allowed_failures,
        progress=not args.no_progress and sys.stderr.isatty(),
        verbose=args.verbose,
        command=CommandLine(),
    )
    options.Check()
    return options


def _List() -> int:
    """The shipped sweeps, with their descriptions and case counts."""
    from drakebots.config import LoadTypedYaml
    from drakebots.sweeps.spec import LoadSweep, NamedSweeps, SweepFile

    for name, path in NamedSweeps().items():
        description = LoadTypedYaml(SweepFile, filename=path).description
        try:
            detail = f"{len(LoadSweep(str(path)).cases)} cases"
        except InputError as e:
            detail = f"not runnable here: {str(e).split(': ', 2)[-1]}"
        print(f"{name:<18} {description}\n{'':<18} ({detail}; {path})")
    return 0
