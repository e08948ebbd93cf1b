"""The folding-region experiment (paper Fig. 17): how far a torque-limited motor bends the skin.

Makes the limb skin piece (lower leg and foot, paper section 6.2) twice, smooth and with a
gear-tooth folding region at the joint (Fig. 8, 8 mm deep), and drives the joint's motor, limited
to --torque-limit, towards --target-deg within --time seconds, then holds it for --hold
seconds, with skeleton and skin coupled (Eq. 2). Reports the angle each skin lets the motor
reach, with a plot of angle and torque over time (angle_torque.png), the bent skins (bent.png,
ParaView .vtu) and a replay per skin. The goal is the paper's: the folded skin lets the motor
reach the target (exit 1 if it does not). The servo tau = K_p (q_d - q) + K_d (v_d - v), clamped
at the limit, settles short of its target by tau / K_p; a skin stops the motor when that gap
fills the servo's proportional band (limit / K_p, 3.7 deg for the beetle's 1.96 N*m and
K_p = 30 N*m/rad), where the motor is at its limit.

Each skin's small-strain prediction comes first: the static condensation of its rest stiffness
onto the joint (k, N*m/rad; the angle tau/k) and the fold's relief k_smooth/k_folded.
--linear-only stops there (about 35 s with meshing: a quick way to compare folding-region
shapes); the coupled runs at large angles can take many minutes on a soft skin (the folded piece
at 0.67 MPa: about 15 minutes here).

Examples:
  drakebots skin-bend beetle --joint front_left_ankle --target-deg 70 --time 2 \\
      --torque-limit 1.96 --out runs/bend
  drakebots skin-bend beetle --youngs-modulus 1e6 --out runs/bend_soft   # a softer silicone
  # Fig. 17 at the modulus where the smooth skin's small-strain angle is the paper's 20 deg, with
  # 12 mm teeth (our limb needs > 10.5 mm for the paper's relief): smooth stalls, folded reaches.
  drakebots skin-bend beetle --youngs-modulus 6.7e5 --fold-depth 0.012 --fold-pitch 0.024 \\
      --out runs/bend_fig17
  drakebots skin-bend beetle --linear-only --fold-teeth 7 --out runs/bend_7teeth
"""

from pathlib import Path

import numpy as np

from drakebots.cli import AddConfigArgument, AddOutputArguments, AddVerb
from drakebots.cli.skin import AddFoldArguments


def register(subparsers):
    parser = AddVerb(subparsers, "skin-bend", __doc__)
    parser.add_argument("robot", help="a skinned quad-robot (the paper uses the beetle)")
    parser.add_argument(
        "--joint", default=None, help="the joint to bend (default front_left_ankle)"
    )
    parser.add_argument("--target-deg", type=float, default=None, help="target angle, degrees (70)")
    parser.add_argument("--time", type=float, default=None, help="time to reach the target, s (2)")
    parser.add_argument(
        "--hold",
        type=float,
        default=None,
        help="time the motor then holds the target, s: the reached angle is where it settles (0.5)",
    )
    parser.add_argument(
        "--torque-limit", type=float, default=None, help="motor torque limit, N*m (MG995R: 1.96)"
    )
    parser.add_argument(
        "--youngs-modulus",
        type=float,
        default=None,
        help="skin Young's modulus, Pa (paper section 7: 0.09 GPa)",
    )
    parser.add_argument("--poissons-ratio", type=float, default=None, help="(paper: 0.46)")
    parser.add_argument("--time-step", type=float, default=None, help="coupled time step, s (0.02)")
    AddFoldArguments(parser)
    parser.add_argument(
        "--linear-only",
        action="store_true",
        default=None,
        help="only the small-strain predictions (static condensation; about 35 s with meshing), no "
        "coupled runs",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    AddConfigArgument(parser, "BendConfig")
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def CheckArgs(args):
    """The BendConfig of the command line, checked (robot, joint, values) before any work;
    `drakebots sweep` calls it for every case before any runs."""
    from drakebots.cli import ConfigFromArguments
    from drakebots.skinned.skin_bend import BendConfig, CheckBendConfig

    config = ConfigFromArguments(BendConfig, args)
    CheckBendConfig(config)
    return config


def Run(args) -> int:
    from drakebots.cli import CommandLine
    from drakebots.cli._progress import CliProgress
    from drakebots.results import CheckOutputFolder, DefaultOutput
    from drakebots.skinned.skin_bend import Bend

    config = CheckArgs(args)
    out = args.out or DefaultOutput("skin-bend", Path(config.robot).stem)
    reads = [args.config] if args.config else []  # (--force never replaces it)
    CheckOutputFolder(out, args.force, reads=reads)
    result = Bend(config, progress=CliProgress(bars=False if args.no_progress else None))
    folder = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    print(f"results: {folder}")
    figures = result.figures
    for label in result.stiffness:
        run = result.runs.get(label)
        print(
            f"  {label:<7} small strain {figures[f'{label}_linear_deg']:6.3g} deg"
            + (f", reached {np.rad2deg(run.reached):6.2f} deg" if run is not None else "")
            + f" (paper: {'~20' if label == 'smooth' else '70'} deg)"
        )
    print(f"  fold relief k_smooth / k_folded = {figures['fold_relief']:.3g}")
    if result.reason:
        print(f"  did not reach the goal: {result.reason}")
    return 0 if result.success else 1
