"""HAMR-VI analyses: `drakebots hamr modes` (body natural frequencies of the standing robot).

`modes` finds the standing equilibrium (actuators at the mid voltage, gravity, every loop closed,
feet held by the ground), linearises the constrained dynamics there and reports the natural
frequencies, damping ratios and mode shapes, labelling the body modes (vertical, pitch, roll,
...) against the paper's ~10 Hz vertical and ~30 Hz roll modes (section III-A). Cases:
  sliding        feet kept on the ground, free to slide (frictionless): the body modes
  pinned         feet stuck at their home points (sticking friction)
  lift_x0.1      sliding, with the lift actuator springs scaled by 0.1, as the authors' own
                 simulation scripts do (their `stiffness_mult`): a sensitivity study

Examples:
  drakebots hamr modes --out runs/hamr_modes
  drakebots hamr modes --amplitude 0.5 --force --out runs/hamr_modes

Writes summary.json (every case: equilibrium height, ground reactions, each mode's frequency,
damping, chassis energy share and body motion; the comparison with the paper), modes.csv,
modes.npz (shapes), modes.png, mode_shapes.png and replay.html (the body modes animated).
"""

from drakebots.cli import AddOutputArguments, AddVerb, PositiveFloat

# Each flag's dest and the ModesConfig field it sets (drakebots.cli._config).
MODES_FLAGS = {"amplitude": "amplitude", "body_threshold": "body_threshold"}


def register(subparsers):
    parser = AddVerb(subparsers, "hamr", __doc__)
    commands = parser.add_subparsers(dest="hamr_command", metavar="COMMAND")
    commands.required = True
    modes = commands.add_parser(
        "modes",
        help="body natural frequencies and mode shapes of the standing robot",
        description=__doc__,
        formatter_class=parser.formatter_class,
    )
    modes.add_argument(
        "--amplitude",
        type=PositiveFloat,
        help="largest chassis displacement in the mode-shape plots and replay, mm (default 1)",
    )
    modes.add_argument(
        "--body-threshold",
        type=float,
        help="share of a mode's kinetic energy in the chassis that makes it a body mode (0.3)",
    )
    modes.add_argument(
        "--config",
        default=None,
        help="YAML file of a ModesConfig (drakebots.hamr.workflows: amplitude, body_threshold); "
        "the flags override it",
    )
    AddOutputArguments(modes)
    modes.set_defaults(func=RunModes)
    return parser


def CheckArgs(args):
    """The sub-command's config, checked (InputError naming the flag) before any work;
    `drakebots sweep` calls it for every case before any runs."""
    from drakebots.cli._config import ConfigFromArgs, FlagNames
    from drakebots.hamr import ModesConfig

    config = ConfigFromArgs(ModesConfig, args, MODES_FLAGS)
    with FlagNames(args, MODES_FLAGS):
        config.Check()
    return config


def RunModes(args) -> int:
    from drakebots.cli import CommandLine
    from drakebots.cli._progress import CliProgress
    from drakebots.hamr import Modes
    from drakebots.results import CheckOutputFolder, DefaultOutput

    config = CheckArgs(args)
    out = args.out or DefaultOutput("hamr", "modes")
    reads = [args.config] if args.config else []
    CheckOutputFolder(out, args.force, reads=reads)
    progress = CliProgress(quiet=True)
    result = Modes(config, progress=progress)
    progress.Close()
    final = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    print(f"results: {final}")
    for name, body in result.body_frequencies_hz.items():
        values = ", ".join(f"{m} {f:.1f} Hz" for m, f in body.items())
        print(f"  {name:10s} body height {result.cases[name].body_height:.3f} mm; {values}")
    for motion, row in result.figures["paper_comparison"].items():
        model = row["model_hz"]
        print(
            f"  {motion}: model {model:.1f} Hz vs paper ~{row['paper_hz']:.0f} Hz "
            f"(x{row['ratio_model_to_paper']:.2f}); lift springs x0.1: "
            f"{row['model_hz_lift_x0.1']:.1f} Hz"
        )
    return 0
