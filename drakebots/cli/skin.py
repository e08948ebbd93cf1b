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
"""

import numpy as np

from drakebots.cli import AddOutputArguments, AddVerb
from drakebots.errors import InputError, RunFailure


def AddFoldArguments(parser):
    """The folding region's shape (Fig. 8): tooth depth, count and pitch."""
    parser.add_argument(
        "--fold-depth",
        type=float,
        default=0.008,
        help="depth of the folding teeth, m (paper: 8 mm)",
    )
    parser.add_argument(
        "--fold-teeth", type=int, default=3, help="number of teeth of a folding region"
    )
    parser.add_argument(
        "--fold-pitch", type=float, default=0.014, help="tooth pitch along the limb, m"
    )


def ValidateFold(args, voxel: float | None = None):
    """The fold options' checks; with the grid's `voxel` (m), also that a tooth spans the
    FOLD_VOXELS cells it needs to be resolved (MakeSkin checks its own grid)."""
    from drakebots.skinned.skin import CheckFoldResolution, SkinInputError

    for name in ("fold_depth", "fold_pitch"):
        if not getattr(args, name) > 0.0:
            raise InputError(f"--{name.replace('_', '-')} must be > 0 m, got {getattr(args, name)}")
    if not args.fold_teeth >= 1:
        raise InputError(f"--fold-teeth must be >= 1, got {args.fold_teeth}")
    if voxel is not None:
        try:
            CheckFoldResolution(args.fold_pitch, voxel)
        except SkinInputError as e:
            raise InputError(str(e)) from None


def register(subparsers):
    parser = AddVerb(subparsers, "skin", __doc__)
    parser.add_argument("robot", help="a skinned quad-robot: beetle, monster, lizard, cow")
    parser.add_argument(
        "--folding-regions",
        default="",
        help="comma-separated joint kinds (ankles, knees, hips) or joint names that get a "
        "gear-tooth folding region (paper Fig. 8)",
    )
    parser.add_argument(
        "--pieces",
        action="store_true",
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
    parser.add_argument("--thickness", type=float, default=0.004, help="skin thickness, m")
    parser.add_argument(
        "--foot-thickness", type=float, default=0.008, help="skin thickness at the feet, m"
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
        "--poissons-ratio", type=float, default=0.46, help="Poisson's ratio (paper: 0.46)"
    )
    parser.add_argument(
        "--youngs-modulus", type=float, default=0.09e9, help="Young's modulus, Pa (paper: 0.09 GPa)"
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
        default=0.15,
        help="factor on Young's modulus in the soft regions (paper: reduced by 85 %%, 0.15)",
    )
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def MakeOptions(args):
    """SkinOptions from the command line, validated (InputError names the option)."""
    from drakebots.skinned.skin import SkinOptions

    if not args.thickness > 0.0:
        raise InputError(f"--thickness must be > 0 m, got {args.thickness}")
    if not args.foot_thickness > 0.0:
        raise InputError(f"--foot-thickness must be > 0 m, got {args.foot_thickness}")
    ValidateFold(args)
    if not -1.0 < args.poissons_ratio < 0.5:
        raise InputError(
            f"--poissons-ratio must be in (-1, 0.5) (0.5 is incompressible), got "
            f"{args.poissons_ratio}"
        )
    if not args.youngs_modulus > 0.0:
        raise InputError(f"--youngs-modulus must be > 0 Pa, got {args.youngs_modulus}")
    folding = tuple(s.strip() for s in args.folding_regions.split(",") if s.strip())
    soft_regions = None
    if args.soft_regions is not None:
        from drakebots.skinned.skin import SOFT_REGIONS

        names = tuple(s.strip() for s in args.soft_regions.split(",") if s.strip())
        soft_regions = () if names in ((), ("none",)) else names
        unknown = [r for r in soft_regions if r not in SOFT_REGIONS]
        if unknown:
            raise InputError(
                f"--soft-regions: unknown region {unknown[0]!r} (known: "
                f"{', '.join(SOFT_REGIONS)}, or none)"
            )
    if not 0.0 < args.soft_scale <= 1.0:
        raise InputError(f"--soft-scale must be in (0, 1], got {args.soft_scale}")
    options = SkinOptions(
        thickness=args.thickness,
        foot_thickness=args.foot_thickness,
        folding_regions=folding,
        fold_depth=args.fold_depth,
        fold_teeth=args.fold_teeth,
        fold_pitch=args.fold_pitch,
        poissons_ratio=args.poissons_ratio,
        youngs_modulus=args.youngs_modulus,
        soft_regions=soft_regions,
        soft_scale=args.soft_scale,
        pieces=args.pieces,
    )
    if args.surface:
        if args.pieces:
            raise InputError("--surface is one closed body: it cannot be used with --pieces")
        from drakebots.skinned.skin import LoadSurface, SkinInputError

        try:
            options.surface = LoadSurface(args.surface)
        except SkinInputError as e:
            raise InputError(f"--surface {e}") from None
    if args.piece_clearance is not None:
        if not args.pieces:
            raise InputError("--piece-clearance is the gap between pieces: it needs --pieces")
        if not args.piece_clearance >= 0.0:
            raise InputError(f"--piece-clearance must be >= 0 m, got {args.piece_clearance}")
        options.piece_clearance = args.piece_clearance
    if args.voxel is not None:
        if not args.voxel > 0.0:
            raise InputError(f"--voxel must be > 0 m, got {args.voxel}")
        options.voxel = args.voxel
    return options


def Run(args) -> int:
    import time

    from drakebots.cli import Summary
    from drakebots.results import DefaultOutput, ResultsFolder
    from drakebots.robots import GetRobot
    from drakebots.skinned.plots import PlotSkin
    from drakebots.skinned.skin import (
        MakeSkin,
        SkinInputError,
        SkinMeshingError,
        WriteSkin,
        _FoldSites,
    )

    robot = GetRobot(args.robot)
    if robot.family != "skinned_quadruped":
        raise InputError(f"'{args.robot}' is not a skinned quad-robot (family {robot.family})")
    options = MakeOptions(args)
    params = robot.params
    try:
        _FoldSites(params, options.folding_regions)  # validate before writing anything
    except SkinInputError as e:
        raise InputError(str(e)) from None
    out = args.out or DefaultOutput("skin", robot.name)
    with ResultsFolder(out, force=args.force) as results:
        start = time.perf_counter()
        try:
            skin = MakeSkin(params, options, progress=lambda s: print(f"  {s}", flush=True))
        except SkinInputError as e:
            raise InputError(str(e)) from None
        except SkinMeshingError as e:
            raise RunFailure(str(e)) from None  # nothing to keep: the folder is not written
        seconds = time.perf_counter() - start
        # What the skin costs each motor: its small-strain stiffness per joint (no gravity) and
        # the angle the motor's stall torque turns it (a whole-body skin locks the hips; a skin
        # in pieces leaves them free).
        from drakebots.skinned.bend import JointStiffnesses

        stiffness = {name: k for name, (k, _) in JointStiffnesses(params, skin).items()}
        limit = params.motor.effort_limit
        joints = {
            name: {
                "stiffness_nm_per_rad": k,
                "angle_at_motor_limit_deg": float(np.degrees(limit / k)) if k > 1e-9 else None,
            }
            for name, k in stiffness.items()
        }
        WriteSkin(results.directory, skin)
        results.SaveFigure("skin.png", PlotSkin(skin))
        summary = Summary(
            "skin",
            {
                "robot": robot.name,
                "surface": args.surface,
                **{k: getattr(options, k) for k in vars(options) if k != "surface"},
            },
            robot=robot.name,
            success=True,
            reason=None,
            figures=skin.info
            | {"seconds": seconds, "motor_limit_nm": limit, "joint_stiffness": joints},
            paper={
                "table1_skin_vertices": {
                    "beetle": 14152,
                    "monster": 16624,
                    "lizard": 18261,
                    "cow": 12494,
                }.get(robot.name),
                "table1_glue_vertices": {
                    "beetle": 140,
                    "monster": 301,
                    "lizard": 176,
                    "cow": 217,
                }.get(robot.name),
            },
        )
        results.WriteJson("summary.json", summary)
        results.Commit()
    info = skin.info
    print(f"results: {results.final}")
    print(
        f"  {info['vertices']} vertices, {info['tets']} tets, {info['glue_vertices']} glue "
        f"vertices; size {' x '.join(f'{s:.3f}' for s in info['size'])} m "
        f"(paper {' x '.join(f'{s:.3f}' for s in info['paper_size'])}); density "
        f"{info['mass_density']:.0f} kg/m^3 for {info['mass_kg']} kg; {seconds:.1f} s"
    )
    print(
        f"  skin stiffness per joint at small strain, N*m/rad (angle {limit:g} N*m turns it): "
        + ", ".join(
            f"{name} {j['stiffness_nm_per_rad']:.3g} ({j['angle_at_motor_limit_deg']:.1f} deg)"
            if j["angle_at_motor_limit_deg"] is not None
            else f"{name} 0 (free)"
            for name, j in joints.items()
        )
    )
    if info.get("soft_elements"):
        print(
            f"  soft regions {', '.join(info['soft_regions'])}: {info['soft_elements']} elements "
            f"with Young's modulus x {info['soft_scale']:g}"
        )
    return 0
