"""Replay a results folder in a live Meshcat and print its URL.

Rebuilds the robot from the folder's summary.json, loads the logged positions from log.npz and
publishes them as a Meshcat animation (play, pause and scrub it from the Meshcat controls). The
server keeps running until Ctrl-C, or for --seconds.

Examples:
  drakebots view runs/beetle_stand
  drakebots view runs/beetle_stand --port 7001 --seconds 60
  drakebots view runs/beetle_stand --host 0.0.0.0     # reachable from other machines

The server listens on 127.0.0.1 only (this machine) unless --host names another interface;
every interface only with --host 0.0.0.0 given exactly so (an empty --host is refused).
"""

import time
from pathlib import Path

from drakebots.cli import AddVerb
from drakebots.errors import InputError


def register(subparsers):
    parser = AddVerb(subparsers, "view", __doc__)
    parser.add_argument("folder", help="a results folder written by simulate/optimize/track/...")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface the Meshcat server listens on (default 127.0.0.1: this machine only; "
        "0.0.0.0, exactly so, is the one way to ask for every interface, reachable from the "
        "network; an empty host, '*', '::' and other wildcards are refused)",
    )
    parser.add_argument(
        "--port",
        type=_Port,
        default=None,
        help="Meshcat port, 1024-65535 (default: first free from 7000)",
    )
    parser.add_argument(
        "--seconds",
        type=_Seconds,
        default=None,
        help="serve this long, then exit (default: until Ctrl-C)",
    )
    parser.set_defaults(func=Run)
    return parser


def _Port(text: str) -> int:
    import argparse

    from drakebots.visualization.meshcat import CheckPort

    port = int(text)  # argparse says "invalid port value: 'x'"
    try:
        return CheckPort(port)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _Seconds(text: str) -> float:
    import argparse

    seconds = float(text)
    if not seconds >= 0.0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return seconds


def _PlanGhost(folder: Path):
    """(times, positions) of the plan a gait's or jump's run tracked (solution.npz), or None."""
    import numpy as np

    path = folder / "solution.npz"
    if not path.is_file():
        return None
    with np.load(path) as solution:
        if "plan_q" not in solution:
            return None
        return solution["plan_times"], solution["plan_q"]


def Run(args) -> int:
    from drakebots.systems.simulate import LoadSimulationFolder, ReplayFolder
    from drakebots.visualization.meshcat import CheckHost, LocalMeshcat, WebUrl

    folder = Path(args.folder)
    try:
        CheckHost(args.host)
    except ValueError as e:
        raise InputError(f"--host {e}") from None
    loaded = LoadSimulationFolder(folder)
    try:
        meshcat = LocalMeshcat(host=args.host, port=args.port)
    except RuntimeError as e:  # Drake could not bind the address (in use, not this machine's).
        where = f"--host {args.host}" + (f" --port {args.port}" if args.port else "")
        raise InputError(f"{where}: cannot listen there ({' '.join(str(e).split())})") from None
    ghost = _PlanGhost(folder)
    if ghost is None:
        robot, log, frames = ReplayFolder(meshcat, folder, loaded)
    else:  # A gait's or a jump's folder: Drake's run, the plan beside it as a ghost.
        from drakebots.visualization.replay import RecordReplay

        robot, log, _ = loaded
        _, frames = RecordReplay(meshcat, robot, log.times, log.positions, ghost=ghost)
    print(
        f"replaying {folder} ({frames} frames, {log.duration:.3g} {robot.units['time']}) at "
        f"{WebUrl(meshcat, args.host)}",
        flush=True,
    )
    print("open the URL in a browser; Ctrl-C to stop", flush=True)
    deadline = None if args.seconds is None else time.monotonic() + args.seconds
    while deadline is None or time.monotonic() < deadline:
        time.sleep(0.1)
    return 0
