"""Generate the FEM skin of a skinned quad-robot: skin.vtk, glue, skinning weights, a picture.

The skin is a closed body surface shaped like the robot's animal around its skeleton, hollowed to
4 mm (8 mm at the feet, paper section 6.1), optionally with gear-tooth folding regions at chosen
joints (Fig. 8), tetrahedralised with Gmsh, with glue vertices where the bracing units hold it
(section 6.2, Fig. 9). The skin's density is set so that its mass is the paper's skin mass.
skin.vtk loads into Drake's DeformableModel; `drakebots simulate ROBOT --skin DIR` uses the folder.

Examples:
  drakebots skin beetle --out runs/beetle_skin
  drakebots skin beetle --folding-regions ankles --fold-pitch 0.024 --out runs/beetle_skin_folded
  drakebots skin beetle --pieces --out runs/beetle_skin_pieces   # limb pieces apart (Fig. 1)
  drakebots skin cow --thickness 0.005 --out runs/cow_skin
  drakebots skin monster --out runs/monster_skin        # soft belly and tail (E x 0.15, section 7)
  drakebots skin monster --soft-regions none --out runs/monster_skin_uniform
  drakebots skin beetle --surface my_beetle.obj --out runs/my_beetle_skin   # your own shape
  drakebots skin ./mybug.yaml --out runs/mybug_skin   # your own skeleton (a robot file)
"""

from pathlib import Path

from drakebots.cli import AddConfigArgument, AddOutputArguments, AddVerb


def AddFoldArguments(parser):
    """The folding region's shape (Fig. 8): tooth depth, count and pitch (None: the config's,
    8 mm deep, 3 teeth, 14 mm pitch)."""
    parser.add_argument(
        "--fold-depth", type=float, default=None, help="depth of the folding teeth, m (paper: 8 mm)"
    )
    parser.add_argument(
        "--fold-teeth", type=int, default=None, help="number of teeth of a folding region (3)"
    )
    parser.add_argument(
        "--fold-pitch", type=float, default=None, help="tooth pitch along the limb, m (0.014)"
    )


def register(subparsers):
    parser = AddVerb(subparsers, "skin", __doc__)
    parser.add_argument(
        "robot",
        help="a skinned quad-robot: beetle, monster, lizard, cow, or a robot file NAME.yaml "
        "(kind: skinned_quadruped, skeleton: YOUR_SKELETON.yaml)",
    )
    parser.add_argument(
        "--folding-regions",
        default=None,
        help="comma-separated joint kinds (ankles, knees, hips) or joint names that get a "
        "gear-tooth folding region (paper Fig. 8)",
    )
    parser.add_argument(
        "--pieces",
        action="store_true",
        default=None,
        help="the skin in separate pieces, as the paper fabricates it (section 6.2): one per "
        "limb and one over the torso, head and tail; the seams are left free, so a hip turns "
        "its limb's piece rigidly",
    )
    parser.add_argument(
        "--piece-clearance",
        type=float,
        default=None,
        help="with --pieces: the gap, m, the torso's piece keeps from each limb piece, and a "
        "left limb on a yaw hip from its right partner, while the hips turn through their range "
        "(default 0.005; 0: the pieces overlap as shaped, the legs passing through the torso's "
        "piece)",
    )
    parser.add_argument("--thickness", type=float, default=None, help="skin thickness, m (0.004)")
    parser.add_argument(
        "--foot-thickness", type=float, default=None, help="skin thickness at the feet, m (0.008)"
    )
    AddFoldArguments(parser)
    parser.add_argument(
        "--voxel",
        type=float,
        default=None,
        help="surface resolution, m (default 0.011: about the paper's vertex counts)",
    )
    parser.add_argument(
        "--surface",
        default=None,
        help="your own closed outer body surface (.obj or .stl, metres, the skeleton's home-pose "
        "frame) instead of the built-in animal shape",
    )
    parser.add_argument(
        "--poissons-ratio", type=float, default=None, help="Poisson's ratio (paper: 0.46)"
    )
    parser.add_argument(
        "--youngs-modulus", type=float, default=None, help="Young's modulus, Pa (paper: 0.09 GPa)"
    )
    parser.add_argument(
        "--soft-regions",
        default=None,
        help="comma-separated softer skin regions (belly, tail) or 'none'; default: the robot's "
        "(the monster: belly,tail, as the paper's section 7; the others: none)",
    )
    parser.add_argument(
        "--soft-scale",
        type=float,
        default=None,
        help="factor on Young's modulus in the soft regions (paper: reduced by 85 %%, 0.15)",
    )
    AddConfigArgument(parser, "MakeSkinConfig")
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def _Names(text: str) -> tuple:
    """A comma-separated list of names."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def MakeConfig(args):
    """The MakeSkinConfig of a command line: --config FILE, then the flags given."""
    from drakebots.cli import ConfigFromArguments
    from drakebots.skinned.make_skin import MakeSkinConfig

    return ConfigFromArguments(
        MakeSkinConfig, args, converted={"folding_regions": _Names, "soft_regions": _Names}
    )


def CheckArgs(args):
    """The MakeSkinConfig of the command line, its options checked; `drakebots sweep` calls it
    for every case before any runs."""
    from drakebots.skinned.make_skin import SkinOptionsOf

    config = MakeConfig(args)
    SkinOptionsOf(config)
    return config


def Run(args) -> int:
    from drakebots.cli import CommandLine
    from drakebots.cli._progress import CliProgress
    from drakebots.results import CheckOutputFolder, DefaultOutput
    from drakebots.skinned.make_skin import MakeSkin

    config = MakeConfig(args)
    out = args.out or DefaultOutput("skin", Path(config.robot).stem)
    # The run's inputs: --force never replaces a folder holding one.
    reads = [path for path in (args.config, config.surface) if path]
    CheckOutputFolder(out, args.force, reads=reads)
    result = MakeSkin(config, progress=CliProgress())
    folder = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    print(f"results: {folder}")
    _PrintSkin(result.figures)
    return 0


def _PrintSkin(figures: dict) -> None:
    """The skin's size, mass, and what it costs each motor."""
    limit = figures["motor_limit_nm"]
    print(
        f"  {figures['vertices']} vertices, {figures['tets']} tets, {figures['glue_vertices']} "
        f"glue vertices; size {' x '.join(f'{s:.3f}' for s in figures['size'])} m "
        f"(paper {' x '.join(f'{s:.3f}' for s in figures['paper_size'])}); density "
        f"{figures['mass_density']:.0f} kg/m^3 for {figures['mass_kg']} kg; "
        f"{figures['seconds']:.1f} s"
    )
    print(
        f"  skin stiffness per joint at small strain, N*m/rad (angle {limit:g} N*m turns it): "
        + ", ".join(
            f"{name} {j['stiffness_nm_per_rad']:.3g} ({j['angle_at_motor_limit_deg']:.1f} deg)"
            if j["angle_at_motor_limit_deg"] is not None
            else f"{name} 0 (free)"
            for name, j in figures["joint_stiffness"].items()
        )
    )
    if figures.get("soft_elements"):
        print(
            f"  soft regions {', '.join(figures['soft_regions'])}: {figures['soft_elements']} "
            f"elements with Young's modulus x {figures['soft_scale']:g}"
        )
