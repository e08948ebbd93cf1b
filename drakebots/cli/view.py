"""Replay a results folder in a live Meshcat and print its URL.

Rebuilds the robot from the folder's summary.json, loads the logged positions from log.npz and
publishes them as a Meshcat animation (play, pause and scrub it from the Meshcat controls). The
server keeps running until Ctrl-C, or for --seconds.

Examples:
  drakebots view runs/beetle_stand
  drakebots view runs/beetle_stand --port 7001 --seconds 60
"""

import time
from pathlib import Path

from drakebots.cli import AddVerb
from drakebots.errors import InputError


def register(subparsers):
    parser = AddVerb(subparsers, "view", __doc__)
    parser.add_argument("folder", help="a results folder written by simulate/optimize/track/...")
    parser.add_argument(
        "--port", type=int, default=None, help="Meshcat port (default: first free from 7000)"
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="serve this long, then exit (default: until Ctrl-C)",
    )
    parser.set_defaults(func=Run)
    return parser


def Run(args) -> int:
    from drakebots.systems.simulate import LoadSimulationFolder, ReplayFolder
    from drakebots.visualization.meshcat import LocalMeshcat

    folder = Path(args.folder)
    loaded = LoadSimulationFolder(folder)
    if args.port is not None and not 1 <= args.port <= 65535:
        raise InputError(f"--port {args.port}: outside 1-65535")
    meshcat = LocalMeshcat(port=args.port)
    robot, log, frames = ReplayFolder(meshcat, folder, loaded)
    print(
        f"replaying {folder} ({frames} frames, {log.duration:.3g} {robot.units['time']}) at "
        f"{meshcat.web_url()}",
        flush=True,
    )
    print("open the URL in a browser; Ctrl-C to stop", flush=True)
    deadline = None if args.seconds is None else time.monotonic() + args.seconds
    while deadline is None or time.monotonic() < deadline:
        time.sleep(0.1)
    return 0
