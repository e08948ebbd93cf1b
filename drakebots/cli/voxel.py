"""Voxel lattices: frame FEM of an actuated lattice, the Planes-of-Motion model, POM against FEM.

Nodes are named by voxel grid position and in-voxel id (0 -x, 1 -y, 2 -z, 3 +x, 4 +y, 5 +z):
`node=I:J:K/N`. An actuator joins that node to the node one pitch along `axis` (or to `to=...`);
`stroke=` (mm or m suffix; extension > 0) or `force=` (N) drives it. It must drive a plane of
motion (paper sec. 2.1): both nodes on faces normal to another axis than `axis`. A lattice one
voxel thick along z (e.g. 2x2x1) has no such pair along z; use 2x1x2 for a vertical plane.
A wrong actuator is an error that lists the valid ones for the lattice.

Examples:
  drakebots voxel fem --lattice 2x2x1 --actuate "node=0:0:0/3,axis=y,stroke=2mm" --out runs/vox_fem
  drakebots voxel fem --lattice 2x1x2 --actuate "node=0:0:0/3,axis=z,stroke=2mm" --out runs/vox_xz
  drakebots voxel fem --lattice 8x8x1 --actuate "node=3:3:0/3,axis=y,force=1N" --out runs/vox_big
  drakebots voxel fem --lattice 2x2x2 --actuate "node=0:0:0/3,axis=z,stroke=2mm" --joints pinned
  drakebots voxel pom --robot tripod --gait tripod --out runs/vox_pom
  drakebots voxel compare --robot tripod --gait tripod --out runs/vox_cmp
  drakebots voxel pom --gait tripod_reverse --lift 3 --narrow 6 --out runs/vox_pom_back

fem writes the displacement pattern (Figs. 1-3 of the paper), the displacement dissipation against
distance in the actuated plane (Fig. 2: dissipation.png + dissipation.json) and the motion of the
parallel layers (Fig. 3); pom writes the actuator sequence that the POM inverse kinematics gives
for the gait's foot paths (--lift: swing-foot clearance, --narrow: rear stance narrowing; see
drakebots.voxel.tripod) and the feet's predicted motion; compare checks the POM prediction
against the FEM of the whole robot, node by node.
"""

from drakebots.cli import (
    AddConfigArgument,
    AddOutputArguments,
    AddVerb,
    CommandLine,
    ConfigFromArguments,
)
from drakebots.errors import InputError


def register(subparsers):
    parser = AddVerb(subparsers, "voxel", __doc__)
    parser.add_argument("action", choices=("fem", "pom", "compare"), help="what to run")
    parser.add_argument(
        "--lattice", default=None, help="fem: lattice size NXxNYxNZ (voxels; default 2x2x1)"
    )
    parser.add_argument(
        "--occupancy",
        default=None,
        help="fem: a .npy file holding a 3-D boolean array, occupancy[i, j, k] = voxel at grid "
        "position (i, j, k) (instead of --lattice)",
    )
    parser.add_argument(
        "--actuate",
        action="append",
        default=None,
        help='fem (repeatable): "node=I:J:K/N,axis=x|y|z|to=I:J:K/N,stroke=2mm|force=1N"; '
        "the first one is analysed",
    )
    parser.add_argument(
        "--mount",
        choices=("clamped", "prismatic", "axial"),
        default=None,
        help="fem: actuator mount (clamped: the paper's setting, sec. 2.1: each node moves half "
        "the stroke along the axis, its rotations held)",
    )
    parser.add_argument(
        "--joints",
        choices=("rigid", "pinned"),
        default=None,
        help="fem: strut-to-node joints: rigid (PFEA/Frame3DD, the paper's FEM) or pinned (ideal "
        "ball joints, the POM model's kinematic idealisation; strokes only)",
    )
    parser.add_argument(
        "--strut-side",
        type=float,
        default=None,
        help="fem: strut cross-section side, mm (default 1.27, the reference struts)",
    )
    parser.add_argument(
        "--timoshenko", action="store_true", default=None, help="include strut shear"
    )
    parser.add_argument("--robot", default=None, help="pom/compare: robot (tripod)")
    parser.add_argument(
        "--gait",
        default=None,
        help="pom/compare: gait, tripod or tripod_reverse (its foot positions run in reverse)",
    )
    parser.add_argument(
        "--lift",
        type=float,
        default=None,
        help="pom/compare: swing-foot clearance above the stance foot, mm (the keyframes' strokes "
        "reach twice this; default 4)",
    )
    parser.add_argument(
        "--narrow",
        type=float,
        default=None,
        help="pom/compare: rear stance narrowing while a front foot swings, mm (default 8)",
    )
    AddConfigArgument(parser)
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


# The options of one action only (each defaults to None: not given).
_FEM_ONLY = ("lattice", "occupancy", "actuate", "mount", "joints", "strut_side", "timoshenko")
_POM_ONLY = ("robot", "gait", "lift", "narrow")


def _Config(args):
    from drakebots.voxel import CompareConfig, FemConfig, PomConfig

    # `voxel fem --lift -1e308` ran and succeeded, the option silently unused (issue 68).
    others = _POM_ONLY if args.action == "fem" else _FEM_ONLY
    for dest in others:
        if getattr(args, dest, None) is not None:
            users = "pom and compare" if args.action == "fem" else "fem"
            raise InputError(
                f"--{dest.replace('_', '-')} applies to voxel {users}, not voxel {args.action}"
            )
    if args.action == "fem":
        return ConfigFromArguments(
            FemConfig,
            args,
            lattice=args.lattice,
            occupancy=args.occupancy,
            actuate=args.actuate,
            mount=args.mount,
            joints=args.joints,
            strut_side=args.strut_side,
            timoshenko=args.timoshenko,
        )
    schema = CompareConfig if args.action == "compare" else PomConfig
    return ConfigFromArguments(
        schema, args, robot=args.robot, gait=args.gait, lift=args.lift, narrow=args.narrow
    )


def CheckArgs(args):
    """The action's config, checked (InputError naming the flag) before any work; `drakebots
    sweep` calls it for every case before any runs."""
    from drakebots.voxel.workflows import CheckFemConfig, CheckPomConfig

    config = _Config(args)
    if args.action == "fem":
        CheckFemConfig(config)
    else:
        CheckPomConfig(config)
    return config


def Run(args) -> int:
    from drakebots.results import CheckOutputFolder, DefaultOutput
    from drakebots.voxel import Compare, Fem, Pom

    config = CheckArgs(args)
    out = args.out or DefaultOutput("voxel", args.action)
    reads = [r for r in (args.config, args.occupancy) if r is not None]
    CheckOutputFolder(out, args.force, reads=reads)
    workflow = {"fem": Fem, "pom": Pom, "compare": Compare}[args.action]
    result = workflow(config)
    folder = result.Save(out, force=args.force, command=CommandLine(), reads=reads)
    print(f"results: {folder}")
    (_PrintFem if args.action == "fem" else _PrintPom)(result)
    return 0 if result.success else 1


def _PrintFem(result):
    from drakebots.voxel.observations import PAPER_MAX_DISSIPATION

    pattern, figures = result.pattern, result.figures
    print(f"  plane of motion: {result.plane} ({len(pattern.nodes)} nodes)")
    print(
        f"  amplitude ratio in the plane: {pattern.amplitude_ratio.min():.4f} .. "
        f"{pattern.amplitude_ratio.max():.4f} -> max dissipation "
        f"{100 * figures['max_dissipation']:.2f} % (paper: <= 4.9 %); off the pattern <= "
        f"{100 * figures['max_off_pattern']:.2f} %"
    )
    if figures["max_dissipation"] > PAPER_MAX_DISSIPATION and result.config.joints == "rigid":
        print(
            "  above the paper's 4.9 %: with rigid joints the loss grows with the lattice's size "
            "in the plane (the paper's struts: <= 4.9 % up to 4 x 4 voxels, 21.3 % on 8 x 8; "
            "docs/reproductions/voxel.md, row 2)"
        )
    others = [
        f"{o:+d}: {r:.3f}" for o, r in zip(pattern.layer_offsets, pattern.layer_ratio) if o != 0
    ]
    if others:
        print(f"  parallel layers' rotation / actuated layer: {', '.join(others)}")
    print(
        f"  strain energy {figures['strain_energy_J']:.3g} J: "
        + ", ".join(f"{k} {100 * v:.1f} %" for k, v in figures["strain_energy_fractions"].items())
    )


def _PrintPom(result):
    targets, figures = result.targets, result.figures
    print("  foot paths (mm): clearance crouch rear_width -> strokes (mm): right left rear front")
    for k, row in enumerate(result.strokes):
        path = [1e3 * targets[q][k] for q in ("clearance", "crouch", "rear_width")]
        print(
            f"  {k} {result.keyframes[k]:<15}"
            + "".join(f"{v:7.2f}" for v in path)
            + "  -> "
            + "".join(f"{1e3 * v:7.2f}" for v in row)
        )
    if "core_max_error_m" not in figures:
        return
    print(
        f"  core nodes: max |POM - FEM| {1e3 * figures['core_max_error_m']:.4f} mm "
        f"({100 * figures['core_max_error_relative']:.2f} % of the largest displacement)"
    )
    for n, e in figures["feet_and_markers_max_error_m"].items():
        print(f"  {n}: max error {1e3 * e:.3f} mm")
    check = figures["drake_model_static_check"]
    print(
        f"  Drake model (bushings + distance constraints + prismatic joints) against the "
        f"frame FEM, keyframe {check['keyframe']}: max difference "
        f"{check['max_relative_difference']:.1e} of the largest displacement"
    )
