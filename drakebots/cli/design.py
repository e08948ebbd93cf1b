"""Design a physically feasible motion for a skinned quad-robot (paper section 5, Fig. 2).

Alternates the space-time optimization of the skeleton (Eqs. 3-9: COM and feet tracking, contact,
COP-in-support-polygon, momentum and friction constraints; Gauss-Newton SQP) with the
frame-by-frame QPCC (Eqs. 12-19: motor limits |tau| <= U_m, COP, contact complementarity) until
the two motions agree, raising the follow weight 10 % per iteration. The frame-by-frame step uses
the coupled skin-skeleton dynamics (Eq. 10) when --skin gives a `drakebots skin` folder, else the
skeleton with rigid feet (the skin's weight carried by the links). Writes summary.json
(iterations, convergence, per-frame QPCC time, max |tau|/U_m per motor, min COP margin, achieved
speed), torques.png (Fig. 16), cop.png (Figs. 10-11), joint_angles.png (Fig. 20), root_roll.png
(Fig. 18), convergence.png, motion.yaml, log.npz and replay.html. Exit 1 (results kept) when a
frame is infeasible or the loop does not converge; exit 2 on bad input (nothing written).

Examples:
  drakebots design beetle --motion single-foot-lift --out runs/beetle_lift
  drakebots design beetle --motion walk --out runs/beetle_walk
  drakebots design ./mybug.yaml --motion walk --out runs/mybug_walk   # your own skeleton
  drakebots design monster --motion trot --speed 0.45 --out runs/monster_trot
  drakebots design cow --motion walk --motion-file my_walk.yaml --out runs/cow_walk
  drakebots design beetle --motion walk --kinematic-only --out runs/beetle_walk_kinematic
  drakebots design beetle --motion walk --compare-kinematic-only --out runs/beetle_walk_vs
  drakebots design monster --motion trot --mass-scale 2 --out runs/monster_heavy  # fails (paper)
  drakebots design monster --motion trot --com-lead 0.04 --skin DIR --space-time-skin off  # 13c
"""

from pathlib import Path

from drakebots.cli import AddConfigArgument, AddOutputArguments, AddVerb

MOTIONS = ("single-foot-lift", "double-foot-lift", "walk", "trot")
# The on/off flags and the config's booleans they set.
ON_OFF = ("skin_collisions", "space_time_cop", "space_time_skin", "frame_cop")


def register(subparsers):
    parser = AddVerb(subparsers, "design", __doc__)
    parser.add_argument(
        "robot",
        help="a skinned quad-robot: beetle, monster, lizard, cow, or a robot file NAME.yaml "
        "(kind: skinned_quadruped, skeleton: YOUR_SKELETON.yaml)",
    )
    parser.add_argument(
        "--motion",
        choices=MOTIONS,
        default=None,
        help="the motion to design (generator; required unless --config gives it)",
    )
    parser.add_argument(
        "--speed", type=float, default=None, help="walk/trot speed, m/s (walk 0.015, trot 0.45)"
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="lifts: the motion's duration, s (default 2); walk/trot: the cycle period, s",
    )
    parser.add_argument(
        "--lift-height",
        type=float,
        default=None,
        help="lifts: how high the sole centre rises, m (default 0.04 single, 0.03 double)",
    )
    parser.add_argument(
        "--com-lead",
        type=float,
        default=None,
        metavar="M",
        help="trot: run the planned COM this far ahead of its home place over the feet, m "
        "(default 0; ours: a stand-in for the paper's horse-retargeted trot, whose forelegs "
        "carry more of the weight)",
    )
    parser.add_argument(
        "--motion-file",
        default=None,
        help="a MotionSpec YAML (COM and foot keyframes, contact plan, limits) instead of the "
        "generator (drakebots.skinned.motion.MotionSpec; motion.yaml of a run is one)",
    )
    parser.add_argument(
        "--kinematic-only",
        action="store_true",
        default=None,
        help="the kinematic-only baseline (section 7, after Megaro et al.): no forces or momentum "
        "in the plan; one frame-by-frame pass computes the torques that make the joints follow "
        "it (its inverse dynamics: the root left to the dynamics, no COP constraint)",
    )
    parser.add_argument(
        "--compare-kinematic-only",
        action="store_true",
        default=None,
        help="also run the kinematic-only baseline and compare root roll (Fig. 18)",
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="space-time <-> frame-by-frame iterations at most; the loop stops at the first pass "
        "that agrees with its plan (default 5)",
    )
    parser.add_argument(
        "--knot-frames",
        type=int,
        default=None,
        help="space-time knots every this many frames (the plan is a cubic spline between; "
        "default 8)",
    )
    parser.add_argument(
        "--motor-limit", type=float, default=None, help="U_m for every motor, N*m (default: model)"
    )
    parser.add_argument(
        "--plan-motor-limits",
        type=float,
        default=None,
        metavar="FRACTION",
        help="ours: also bound the space-time plan's inverse-dynamics torques by FRACTION x U_m "
        "(one smooth-max row per knot; default 1: without it the lizard's crawl plans up to "
        "2.7 U_m and fails); 0: only the frame-by-frame step bounds them, as in the paper",
    )
    parser.add_argument(
        "--plan-friction",
        type=float,
        default=None,
        metavar="FRACTION",
        help="ours: plan with FRACTION x the motion's friction (the space-time cones and the "
        "frame-by-frame pyramids) and check on the whole of it, a margin against a stance foot "
        "slipping where the plan's friction binds (default 1, the paper's)",
    )
    parser.add_argument(
        "--torso-attitude-weight",
        type=float,
        default=None,
        metavar="W",
        help="ours: weight of the space-time step's torso roll/pitch/heading term (default 1). "
        "The foot-flatness term (weight 10) turns the beetle walk's torso by +-25 deg about the "
        "vertical to keep its 3-joint legs' soles flat; W = 300 holds it within 1 deg",
    )
    parser.add_argument(
        "--space-time-iterations",
        type=int,
        default=None,
        help="Gauss-Newton iteration limit of each space-time step (default 80; the motor rows "
        "of --plan-motor-limits need more than 40)",
    )
    parser.add_argument(
        "--lookahead",
        choices=("auto", "chord", "tangent"),
        default=None,
        help="ours: what the frame-by-frame step's 10-frame lookahead aims at: the plan 10 frames "
        "on (chord), or the plan continued along its velocity (tangent; position plus velocity "
        "error); auto (default): tangent for gaits with flight phases, else chord",
    )
    parser.add_argument(
        "--mass-scale",
        type=float,
        default=None,
        help="multiply every mass (2: the paper's failure case, the monster with doubled mass)",
    )
    parser.add_argument(
        "--skin",
        default=None,
        help="a `drakebots skin` results folder: frame-by-frame with the coupled skin dynamics",
    )
    parser.add_argument(
        "--plan-skin-mass",
        choices=("links", "skin"),
        default=None,
        help="with --skin, the skin mass the space-time model carries: 'links' the paper's skin "
        "mass shared by link mass (default), 'skin' the FEM skin's own vertex masses by skinning "
        "weight (section 5.4). Measured on the beetle's single-foot lift (0.67 MPa skin): "
        "'links' agrees in one iteration (RMS 0.95), 'skin' just misses (1.01)",
    )
    parser.add_argument(
        "--skin-collisions",
        choices=("on", "off"),
        default=None,
        help="with --skin, the skin's self- and skin-skeleton collision penalties (section 4.2) "
        "in the frame-by-frame passes and the coupled replay: on (default), or off to see what "
        "the collisions cost (the beetle's skin in pieces, as generated, runs into the torso's "
        "box once the hips yaw: its walk fails with them and agrees in one iteration without)",
    )
    parser.add_argument(
        "--space-time-cop",
        choices=("on", "off"),
        default=None,
        help="the space-time step's COP-in-support-polygon constraint (Eq. 5): on (default), or "
        "off as the paper turned it off for its failed trot (Fig. 13c: with --iterations 1 the "
        "frame-by-frame pass runs on the first plan, which leaves out the skin's coupling)",
    )
    parser.add_argument(
        "--space-time-skin",
        choices=("on", "off"),
        default=None,
        help="with --skin, hand each pass's skin coupling loads to the next space-time step "
        "(section 5.1): on (default), or off to leave the skin's effect out of every plan (the "
        "condition of the paper's Fig. 13c held over the whole loop)",
    )
    parser.add_argument(
        "--frame-cop",
        choices=("on", "off"),
        default=None,
        help="the frame-by-frame QPCC's COP-in-support-polygon rows (Eq. 18): on (default), or "
        "off, the other reading of the paper's Fig. 13c (the COP constraint turned off where the "
        "solver could not satisfy it); the COP is still measured and checked after the pass",
    )
    parser.add_argument(
        "--frame-objective",
        choices=("ours", "paper"),
        default=None,
        help="the frame-by-frame QPCC's objective: ours (default: E_F with a 10-frame lookahead, "
        "the plan's normal foot forces followed, a small motor-torque regulariser), or the "
        "paper's Eq. 13 as written (one-frame E_F, none of these additions)",
    )
    parser.add_argument(
        "--coupled-replay-seconds",
        type=float,
        default=None,
        metavar="S",
        help="with --skin, the wall-time budget of the check that replays the kept torques open "
        "loop in the coupled simulator (default 900 s; 0 skips the check)",
    )
    parser.add_argument(
        "--coupled-replay-contact",
        default=None,
        metavar="{active_set,convex}",
        help="with --skin, the skin's contact in that replay: active_set (default: the paper's "
        "pinned / sliding / free labels inside Newton) or convex (SAP's convex problem, one "
        "factorisation a step; about half the active set's time a frame on the monster's walk)",
    )
    parser.add_argument(
        "--coupled-replay-resume",
        action="store_true",
        default=None,
        help="with --skin, keep the coupled replay's progress in drakebots' cache folder: the "
        "same design run again resumes its replay from the last frame kept (a replay longer "
        "than --coupled-replay-seconds, or one stopped by Ctrl-C)",
    )
    parser.add_argument(
        "--linear-solver",
        choices=("auto", "pardiso", "cholmod", "splu"),
        default=None,
        help="with --skin, the coupled frames' sparse factorisation: auto (default: MKL PARDISO "
        "where it loads, else CHOLMOD where installed, else SciPy's SuperLU), or one by name",
    )
    parser.add_argument("--no-replay", action="store_true", default=None, help="skip replay.html")
    parser.add_argument("--no-progress", action="store_true", default=None, help="no progress bar")
    AddConfigArgument(parser, "DesignConfig")
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def MakeConfig(args):
    """The DesignConfig of a command line: --config FILE, then the flags given."""
    from drakebots.cli import ConfigFromArguments
    from drakebots.errors import InputError
    from drakebots.skinned.design import DesignConfig

    config = ConfigFromArguments(
        DesignConfig,
        args,
        renamed={"no_replay": "replay"},
        converted={"no_replay": lambda v: not v, **dict.fromkeys(ON_OFF, lambda v: v == "on")},
    )
    if args.motion is None and args.config is None:
        raise InputError("--motion is required (or a --config file that gives the motion)")
    return config


def CheckArgs(args):
    """The DesignConfig of the command line with the checks that need no model; `drakebots
    sweep` calls it for every case before any runs (the rest is checked when the case starts,
    before its work)."""
    from drakebots.skinned.design import CheckConfig

    config = MakeConfig(args)
    CheckConfig(config)
    return config


def Run(args) -> int:
    from drakebots.cli import CommandLine
    from drakebots.cli._progress import CliProgress
    from drakebots.results import CheckOutputFolder, DefaultOutput
    from drakebots.skinned.design import Design

    config = MakeConfig(args)
    out = args.out or DefaultOutput("design", Path(config.robot).stem)
    # The run's inputs: --force never replaces a folder holding one.
    reads = [path for path in (args.config, config.motion_file, config.skin) if path]
    CheckOutputFolder(out, args.force, reads=reads)
    result = Design(config, progress=CliProgress(bars=False if args.no_progress else None))
    folder = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    print(f"results: {folder}")
    return 0 if result.success else 1
