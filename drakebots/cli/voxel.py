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

import re

from drakebots.cli import AddOutputArguments, AddVerb
from drakebots.errors import InputError

ROBOTS = ("tripod",)
GAITS = ("tripod", "tripod_reverse")
STROKE_TRAVEL_MM = 10.0  # the model's actuator travel (drakebots.voxel.tripod_model)
# Actuation axis -> (lattice, node) of the 2x2 formation of Fig. 1 with its actuator along it.
FORMATIONS = {"x": ("2x2x1", "0:0:0/4"), "y": ("2x2x1", "0:0:0/3"), "z": ("2x1x2", "0:0:0/3")}


def register(subparsers):
    parser = AddVerb(subparsers, "voxel", __doc__)
    parser.add_argument("action", choices=("fem", "pom", "compare"), help="what to run")
    parser.add_argument("--lattice", default="2x2x1", help="fem: lattice size NXxNYxNZ (voxels)")
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
        default="clamped",
        help="fem: actuator mount (clamped: the paper's setting, sec. 2.1: each node moves half "
        "the stroke along the axis, its rotations held)",
    )
    parser.add_argument(
        "--joints",
        choices=("rigid", "pinned"),
        default="rigid",
        help="fem: strut-to-node joints: rigid (PFEA/Frame3DD, the paper's FEM) or pinned (ideal "
        "ball joints, the POM model's kinematic idealisation; strokes only)",
    )
    parser.add_argument(
        "--strut-side",
        type=float,
        default=None,
        help="fem: strut cross-section side, mm (default 1.27, the reference struts)",
    )
    parser.add_argument("--timoshenko", action="store_true", help="include strut shear")
    parser.add_argument("--robot", default="tripod", help="pom/compare: robot (tripod)")
    parser.add_argument(
        "--gait",
        default="tripod",
        help="pom/compare: gait, tripod or tripod_reverse (its foot positions run in reverse)",
    )
    parser.add_argument(
        "--lift",
        type=float,
        default=4.0,
        help="pom/compare: swing-foot clearance above the stance foot, mm (the keyframes' strokes "
        "reach twice this)",
    )
    parser.add_argument(
        "--narrow",
        type=float,
        default=8.0,
        help="pom/compare: rear stance narrowing while a front foot swings, mm",
    )
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def _LoadOccupancy(path: str):
    """The occupancy array of an .npy file, validated (3-D boolean, at least one voxel)."""
    import numpy as np

    from drakebots.voxel.lattice import CheckOccupancy

    try:
        occupancy = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(f"--occupancy {path}: cannot read a .npy array ({e})") from None
    try:
        return CheckOccupancy(occupancy)
    except InputError as e:
        raise InputError(f"--occupancy {path}: {e}") from None


def _Length(text: str, what: str) -> float:
    match = re.fullmatch(r"\s*([-+0-9.eE]+)\s*(mm|m)?\s*", text)
    if not match:
        raise InputError(f"--actuate {what}={text}: expected a length such as 2mm or 0.002m")
    try:
        value = float(match.group(1))
    except ValueError:
        raise InputError(
            f"--actuate {what}={text}: expected a length such as 2mm or 0.002m"
        ) from None
    return value * 1e-3 if match.group(2) in (None, "mm") else value


def _Node(lattice, text: str, spec: str) -> int:
    match = re.fullmatch(r"\s*(-?\d+):(-?\d+):(-?\d+)/(\d+)\s*", text)
    if not match:
        raise InputError(f"--actuate '{spec}': node '{text}' must be I:J:K/N (voxel, node id 0-5)")
    i, j, k, n = (int(g) for g in match.groups())
    try:
        return lattice.NodeOf((i, j, k), n)
    except InputError as e:
        raise InputError(f"--actuate '{spec}': node {text}: {e}") from e


def ParseActuator(lattice, spec: str, mount: str):
    """One --actuate value -> frame Actuator, validated before anything is solved or written.

    The actuator must drive a plane of motion (sec. 2.1): its two nodes lie one pitch apart along
    x, y or z and sit on faces normal to another axis. Every error lists valid actuators.
    """
    import numpy as np

    from drakebots.frame.model import Actuator
    from drakebots.voxel.lattice import AXES
    from drakebots.voxel.observations import (
        ActuatorPlane,
        DescribeValidActuators,
        ValidActuators,
    )

    def Fail(message: str):
        raise InputError(
            f"--actuate '{spec}': {message}. Actuators that drive a plane of motion in this "
            f"lattice: {DescribeValidActuators(lattice)}"
        )

    fields = {}
    for part in spec.split(","):
        if "=" not in part:
            raise InputError(f"--actuate '{spec}': '{part}' is not key=value")
        key, value = (s.strip() for s in part.split("=", 1))
        if key not in ("node", "axis", "to", "stroke", "force"):
            raise InputError(
                f"--actuate '{spec}': unknown key '{key}' (keys: node, axis, to, stroke, force)"
            )
        fields[key] = value
    if "node" not in fields:
        raise InputError(f"--actuate '{spec}': node=I:J:K/N is required")
    a = _Node(lattice, fields["node"], spec)
    if "to" in fields:
        b = _Node(lattice, fields["to"], spec)
    elif "axis" in fields:
        if fields["axis"] not in AXES:
            raise InputError(f"--actuate '{spec}': axis must be x, y or z")
        target = lattice.node_coords[a] + 2 * np.eye(3, dtype=int)[AXES.index(fields["axis"])]
        b = lattice.NodeAt(target)
        axis = AXES.index(fields["axis"])
        if b is None and not any(v[2] == axis for v in ValidActuators(lattice)):
            # The smallest Fig. 1 formation with an actuator along this axis.
            lattice_text, node_text = FORMATIONS[fields["axis"]]
            Fail(
                f"no actuator along {fields['axis']} drives a plane of motion in this lattice "
                f"(one voxel thick along {fields['axis']}: its only node pairs one pitch apart "
                f"along {fields['axis']} are opposite nodes of one voxel). For the 2x2 formation "
                f"of Fig. 1 in a plane containing {fields['axis']}, use --lattice {lattice_text} "
                f'--actuate "node={node_text},axis={fields["axis"]},stroke=2mm"'
            )
        if b is None:
            Fail(
                f"there is no node one pitch along +{fields['axis']} from {fields['node']} "
                f"(lattice coordinates {tuple(int(c) for c in target)}, units of p/2, are "
                "outside the lattice)"
            )
    else:
        raise InputError(f"--actuate '{spec}': give axis=x|y|z or to=I:J:K/N")
    if a == b:
        Fail("both ends are the same node")
    try:
        ActuatorPlane(lattice, a, b)
    except InputError as e:
        Fail(str(e).split(": ", 1)[1])
    if ("stroke" in fields) == ("force" in fields):
        raise InputError(f"--actuate '{spec}': give exactly one of stroke= or force=")
    if "stroke" in fields:
        stroke = _Length(fields["stroke"], "stroke")
        if abs(stroke) >= lattice.pitch:
            raise InputError(
                f"--actuate '{spec}': stroke {stroke * 1e3:g} mm collapses the actuator (its "
                f"nodes are {lattice.pitch * 1e3:g} mm apart)"
            )
        return Actuator(a, b, stroke=stroke, mount=mount, name=spec)
    match = re.fullmatch(r"\s*([-+0-9.eE]+)\s*N?\s*", fields["force"])
    if not match:
        raise InputError(f"--actuate '{spec}': force must be like 1N")
    return Actuator(a, b, force=float(match.group(1)), mount=mount, name=spec)


def Run(args) -> int:
    from drakebots.results import CheckOutputFolder, DefaultOutput

    out = args.out or DefaultOutput("voxel", args.action)
    CheckOutputFolder(out, args.force)
    if args.action == "fem":
        return _RunFem(args, out)
    if args.robot not in ROBOTS:
        raise InputError(f"--robot {args.robot}: known robots: {', '.join(ROBOTS)}")
    if args.gait not in GAITS:
        raise InputError(f"--gait {args.gait}: known gaits: {', '.join(GAITS)}")
    if not 0 < 2 * args.lift <= STROKE_TRAVEL_MM:
        raise InputError(
            f"--lift {args.lift}: must be in (0, {STROKE_TRAVEL_MM / 2:g}] mm (the strokes reach "
            f"twice the clearance; the actuators travel +-{STROKE_TRAVEL_MM:g} mm)"
        )
    if not 0 <= args.narrow <= STROKE_TRAVEL_MM:
        raise InputError(
            f"--narrow {args.narrow}: must be in [0, {STROKE_TRAVEL_MM:g}] mm (the rear "
            f"actuator's stroke; it travels +-{STROKE_TRAVEL_MM:g} mm)"
        )
    return _RunPom(args, out, compare=args.action == "compare")


def _RunFem(args, out) -> int:
    import math

    import numpy as np

    from drakebots.cli import Summary
    from drakebots.frame.elements import RectangularSection
    from drakebots.results import ResultsFolder
    from drakebots.voxel.lattice import (
        MAX_SQUARE_ROTATION,
        POISSONS_RATIO,
        STRUT_SIDE,
        YOUNGS_MODULUS,
        CubicLattice,
        ParseLatticeSize,
        SquareRotation,
        StrokeLimits,
        VoxelLattice,
    )
    from drakebots.voxel.observations import (
        ActuatorPlane,
        AnalysePattern,
        DescribeValidActuators,
        NodeSpec,
    )
    from drakebots.voxel.plots import (
        LatticeReplayHtml,
        PlotDisplacementPattern,
        PlotDissipation,
    )

    side = STRUT_SIDE if args.strut_side is None else args.strut_side * 1e-3
    if not 0 < side <= 0.1 * 0.0762:
        raise InputError(f"--strut-side {args.strut_side}: must be in (0, 7.62] mm")
    section = RectangularSection(
        side,
        side,
        youngs_modulus=YOUNGS_MODULUS,
        poissons_ratio=POISSONS_RATIO,
        timoshenko=args.timoshenko,
    )
    if args.occupancy:
        lattice = VoxelLattice(_LoadOccupancy(args.occupancy), section=section)
        name = f"{'x'.join(str(n) for n in lattice.occupancy.shape)} occupancy"
    else:
        lattice = CubicLattice(ParseLatticeSize(args.lattice), section=section)
        name = args.lattice
    if not args.actuate:
        raise InputError(
            "--actuate is required for voxel fem; actuators that drive a plane of motion in "
            f"this lattice: {DescribeValidActuators(lattice)}"
        )
    actuators = [ParseActuator(lattice, spec, args.mount) for spec in args.actuate]
    lo, hi = StrokeLimits(lattice.pitch)
    for actuator in actuators:
        if actuator.force is None and not lo < actuator.stroke < hi:
            voxels = sorted(
                {
                    tuple(int(c) for c in lattice.voxels[v])
                    for v, _ in (
                        lattice.VoxelsOfNode(actuator.node_a)
                        + lattice.VoxelsOfNode(actuator.node_b)
                    )
                }
            )
            raise InputError(
                f"--actuate '{actuator.name}': stroke {actuator.stroke * 1e3:+.4g} mm would turn "
                f"the squares of voxels {', '.join(map(str, voxels))} past 45 degrees, folding "
                "them into their neighbours (their struts would cross: the voxels invert). The "
                f"rotating squares allow strokes in ({lo * 1e3:+.4g}, {hi * 1e3:+.4g}) mm at "
                "this pitch"
            )
        if args.joints == "pinned" and actuator.force is not None:
            raise InputError(
                f"--actuate '{actuator.name}': --joints pinned makes the plane a mechanism, "
                "which has no static response to a force; give stroke= instead"
            )
    frame = lattice.MakeFrame(joints=args.joints)
    floating = any(a.mount != "clamped" or a.force is not None for a in actuators)
    clamp = None
    if floating:
        used = {a.node_a for a in actuators} | {a.node_b for a in actuators}
        clamp = next(i for i in range(lattice.num_nodes) if i not in used)
    solution = frame.Solve(actuators=actuators, clamp_node=clamp)
    first = actuators[0]
    plane = ActuatorPlane(lattice, first.node_a, first.node_b)
    # A floating lattice (one clamped node) carries an arbitrary rigid motion: remove it.
    report = AnalysePattern(
        lattice, solution.translations, first.node_a, first.node_b, remove_rigid_motion=floating
    )
    u = report.translations
    # Validity of the linear solution, checked before anything is written.
    rotation = np.linalg.norm(lattice.VoxelRotations(u), axis=1)
    if rotation.max() >= MAX_SQUARE_ROTATION:
        worst = int(np.argmax(rotation))
        raise InputError(
            f"--actuate: the load turns voxel {tuple(int(c) for c in lattice.voxels[worst])} by "
            f"{math.degrees(rotation[worst]):.0f} degrees (> 45: its square folds into its "
            "neighbours and the voxel inverts); use a smaller stroke or force"
        )
    ratios = lattice.VoxelVolumeRatios(u)
    if np.any(ratios <= 0.0):
        worst = int(np.argmin(ratios))
        raise InputError(
            f"--actuate: the load inverts voxel {tuple(int(c) for c in lattice.voxels[worst])} "
            f"(its volume ratio is {ratios[worst]:.3g}); use a smaller stroke or force"
        )
    energy = frame.StrainEnergyParts(solution.displacements)
    total_energy = max(sum(energy.values()), 1e-300)
    figures = {
        "displacement.png": PlotDisplacementPattern(
            lattice,
            u,
            report,
            actuator=(first.node_a, first.node_b),
            title=f"{name} lattice, {args.joints} joints, actuator "
            f"{NodeSpec(lattice, first.node_a)} -> {NodeSpec(lattice, first.node_b)}",
        ),
        "dissipation.png": PlotDissipation(
            report,
            title=f"{name}, {args.joints} joints: displacement dissipation in the {plane}",
        ),
    }
    scale = 0.1 * lattice.pitch / max(np.abs(u).max(), 1e-300)
    frames = np.array([u * s for s in np.sin(np.linspace(0, np.pi / 2, 8))])
    html = LatticeReplayHtml(lattice.nodes, lattice.struts, frames, scale=scale)
    pattern = report.Summary()
    exact = [
        math.degrees(abs(SquareRotation(a.stroke, lattice.pitch)))
        for a in actuators
        if a.force is None
    ]
    summary = Summary(
        "voxel fem",
        {
            "lattice": None if args.occupancy else args.lattice,
            "occupancy": args.occupancy,
            "actuate": args.actuate,
            "mount": args.mount,
            "joints": args.joints,
            "strut_side_m": side,
            "timoshenko": args.timoshenko,
        },
        success=True,
        reason=None,
        figures={
            "num_voxels": lattice.num_voxels,
            "num_nodes": lattice.num_nodes,
            "num_struts": int(len(lattice.struts)),
            "num_dofs": frame.num_dofs,
            "actuator_forces_N": solution.actuator_forces,
            "strain_energy_J": solution.strain_energy,
            "strain_energy_fractions": {k: v / total_energy for k, v in energy.items()},
            "max_translation_m": float(np.max(np.linalg.norm(u, axis=1))),
            "max_voxel_rotation_deg": float(np.degrees(rotation.max())),
            "exact_square_rotation_deg": exact,
            "min_voxel_volume_ratio": float(ratios.min()),
            "solve_seconds": solution.seconds,
        }
        | pattern,
    )
    dissipation = {
        "definitions": {
            "control_amplitude_m": "half the first actuator's extension, (u_b - u_a).e / 2",
            "amplitude_ratio": "(u_n . d_n) / control amplitude, d_n the node's unit "
            "rotating-squares direction (checkerboard sign x e_d x r_n)",
            "dissipation": "1 - amplitude_ratio",
            "off_pattern": "|u_n - (u_n . d_n) d_n| / |control amplitude|",
            "layer_ratio": "mean rotation amplitude of the voxels of each layer parallel to the "
            "plane / control amplitude (offset 0 = the actuated layer)",
            "rigid_motion": "for floating actuators (force, prismatic, axial mounts): removed "
            "before measuring, fitted by least squares jointly with the pattern's amplitude",
        },
        "plane_of_motion": str(plane),
        "paper_max_dissipation": pattern["paper_max_dissipation"],
        "nodes": [
            {
                "node": NodeSpec(lattice, int(n)),
                "coords_half_pitch": [int(c) for c in lattice.node_coords[n]],
                "distance_m": float(d),
                "amplitude_ratio": float(r),
                "dissipation": float(1 - r),
                "off_pattern": float(o),
            }
            for n, d, r, o in zip(
                report.nodes, report.distance, report.amplitude_ratio, report.off_pattern
            )
        ],
        "profile": report.DistanceProfile(0.5 * lattice.pitch),
        "layers": {
            "offset": report.layer_offsets.tolist(),
            "mean_ratio": report.layer_ratio.tolist(),
            "max_abs_ratio": report.layer_ratio_max.tolist(),
        },
    }
    with ResultsFolder(out, force=args.force) as results:
        for name, figure in figures.items():
            results.SaveFigure(name, figure)
        results.SaveNpz(
            "fem.npz",
            {
                "nodes": lattice.nodes,
                "node_coords": lattice.node_coords,
                "struts": lattice.struts,
                "displacements": solution.displacements,
                "translations": u,
            },
        )
        results.WriteJson("dissipation.json", dissipation)
        results.WriteText("replay.html", html)
        results.WriteJson("summary.json", summary)
    print(f"results: {results.final}")
    print(f"  plane of motion: {plane} ({len(report.nodes)} nodes)")
    print(
        f"  amplitude ratio in the plane: {report.amplitude_ratio.min():.4f} .. "
        f"{report.amplitude_ratio.max():.4f} -> max dissipation "
        f"{100 * pattern['max_dissipation']:.2f} % (paper: <= 4.9 %); off the pattern <= "
        f"{100 * pattern['max_off_pattern']:.2f} %"
    )
    others = [
        f"{o:+d}: {r:.3f}" for o, r in zip(report.layer_offsets, report.layer_ratio) if o != 0
    ]
    if others:
        print(f"  parallel layers' rotation / actuated layer: {', '.join(others)}")
    print(
        f"  strain energy {solution.strain_energy:.3g} J: "
        + ", ".join(f"{k} {100 * v / total_energy:.1f} %" for k, v in energy.items())
    )
    return 0


def _RunPom(args, out, *, compare: bool) -> int:
    import numpy as np

    from drakebots.cli import Summary
    from drakebots.results import ResultsFolder
    from drakebots.voxel.plots import LatticeReplayHtml, PlotPomVsFem
    from drakebots.voxel.pom import DeriveActuationMatrices
    from drakebots.voxel.tripod import (
        ACTUATORS,
        FEET,
        GAIT_KEYFRAMES,
        MARKERS,
        CompareWithFem,
        GaitStrokes,
        ReverseGait,
        TripodGaitTargets,
        TripodLattice,
        TripodPom,
    )

    A, derivation = DeriveActuationMatrices()
    pom = TripodPom(actuation_matrices=A)
    targets = TripodGaitTargets(clearance=args.lift * 1e-3, narrow=args.narrow * 1e-3)
    if args.gait == "tripod_reverse":
        targets = ReverseGait(targets)
    strokes, residual = GaitStrokes(pom, targets)
    # Forward then inverse: the IK strokes reproduce the targets.
    ik_residual = max(float(np.nanmax(np.abs(r))) for r in residual.values())
    predicted = pom.ForwardFeetAndMarkers(strokes)
    names = list(FEET) + list(MARKERS)
    figures = {}
    fields = {
        "actuation_matrices": {"xyz"[d]: A[d] for d in range(3)},
        "actuation_matrix_derivation": derivation,
        "actuators": list(ACTUATORS),
        "strokes_m": strokes,
        "max_stroke_m": float(np.abs(strokes).max()),
        "ik_max_residual_m": ik_residual,
        "foot_path_targets_m": targets,
        "front_model": pom.front_model,
    }
    lattice = TripodLattice()
    core_index = np.array([lattice.NodeAt(c) for c in pom.core.node_coords])
    pom_frames = np.zeros((len(strokes), lattice.num_nodes, 3))
    pom_frames[:, core_index] = pom.model.Forward(pom.ControlsFromStrokes(strokes))
    extra = None
    success, reason = ik_residual < 1e-9, None
    if not success:
        reason = f"the gait targets are not reachable (IK residual {ik_residual:.3g} m)"
    if compare:
        frame = lattice.MakeFrame()
        results_fem = {n: np.zeros((len(strokes), 3)) for n in names}
        core_errors, feet_errors, fem_frames = [], {n: [] for n in names}, []
        for t, s in enumerate(strokes):
            c = CompareWithFem(s, frame=frame)
            core_errors.append(c.error)
            for n in names:
                results_fem[n][t] = c.feet_fem[n]
                feet_errors[n].append(float(np.linalg.norm(c.feet_pom[n] - c.feet_fem[n])))
            full = np.zeros((lattice.num_nodes, 3))
            full[core_index] = c.fem
            fem_frames.append(full)
        core_errors = np.array(core_errors)
        peak = float(np.max(np.linalg.norm(pom_frames, axis=2)))
        translation = TripodPom(front_model="translation", actuation_matrices=A)
        paper_front = translation.ForwardFeetAndMarkers(strokes)
        fields |= {
            "core_nodes_compared": int(core_errors.shape[1]),
            "core_max_error_m": float(core_errors.max()),
            "core_rms_error_m": float(np.sqrt(np.mean(core_errors**2))),
            "core_max_error_relative": float(core_errors.max() / max(peak, 1e-300)),
            "max_node_displacement_m": peak,
            "feet_and_markers_max_error_m": {n: max(e) for n, e in feet_errors.items()},
            "front_feet_max_error_paper_translation_model_m": {
                n: float(np.max(np.linalg.norm(paper_front[n] - results_fem[n], axis=1)))
                for n in ("front_right", "front_left")
            },
        }
        figures["pom_vs_fem.png"] = PlotPomVsFem(
            names, predicted, results_fem, title="POM (lines) against frame FEM (circles)"
        )
        import matplotlib.pyplot as plt

        figure, ax = plt.subplots(figsize=(7, 3.5))
        ax.plot(1e3 * core_errors.max(axis=1), "o-", label="max over the 36 core nodes")
        ax.plot(1e3 * np.sqrt((core_errors**2).mean(axis=1)), "s-", label="rms")
        ax.set_xlabel("gait keyframe")
        ax.set_ylabel("|POM - FEM| (mm)")
        ax.set_title("POM against FEM, node by node (core)")
        ax.legend()
        figure.tight_layout()
        figures["node_error.png"] = figure
        extra = (np.array(fem_frames), lattice.nodes)
        fields["drake_model_static_check"] = _DrakeStaticCheck(lattice, strokes)
    else:
        figures["pom_gait.png"] = PlotPomVsFem(
            names, predicted, predicted, title="POM prediction of the gait (feet and markers)"
        )
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(7, 3.5))
    for k, name in enumerate(ACTUATORS):
        ax.step(
            np.arange(len(strokes) + 1),
            1e3 * np.r_[strokes[:, k], strokes[0, k]],
            where="post",
            label=name,
        )
    ax.set_xlabel("gait keyframe")
    ax.set_ylabel("stroke (mm)")
    ax.set_title("actuator sequence from POM inverse kinematics")
    ax.legend(ncol=4)
    figure.tight_layout()
    figures["strokes.png"] = figure
    scale = 5.0
    html = LatticeReplayHtml(lattice.nodes, lattice.struts, pom_frames, scale=scale, extra=extra)
    verb = "voxel compare" if compare else "voxel pom"
    summary = Summary(
        verb,
        {"robot": args.robot, "gait": args.gait, "lift_mm": args.lift, "narrow_mm": args.narrow},
        success=success,
        reason=reason,
        figures=fields,
    )
    with ResultsFolder(out, force=args.force) as results:
        for name, figure in figures.items():
            results.SaveFigure(name, figure)
        results.SaveNpz(
            "pom.npz",
            {"strokes": strokes, **{f"pom_{n}": predicted[n] for n in names}},
        )
        results.WriteText("replay.html", html)
        results.WriteJson("summary.json", summary)
    print(f"results: {results.final}")
    labels = list(GAIT_KEYFRAMES)
    if args.gait == "tripod_reverse":
        labels = list(ReverseGait(np.array(labels)))
    print("  foot paths (mm): clearance crouch rear_width -> strokes (mm): right left rear front")
    for k, row in enumerate(strokes):
        path = [1e3 * targets[q][k] for q in ("clearance", "crouch", "rear_width")]
        print(
            f"  {k} {labels[k]:<15}"
            + "".join(f"{v:7.2f}" for v in path)
            + "  -> "
            + "".join(f"{1e3 * v:7.2f}" for v in row)
        )
    if compare:
        print(
            f"  core nodes: max |POM - FEM| {1e3 * fields['core_max_error_m']:.4f} mm "
            f"({100 * fields['core_max_error_relative']:.2f} % of the largest displacement)"
        )
        for n, e in fields["feet_and_markers_max_error_m"].items():
            print(f"  {n}: max error {1e3 * e:.3f} mm")
        check = fields["drake_model_static_check"]
        print(
            f"  Drake model (bushings + distance constraints + prismatic joints) against the "
            f"frame FEM, keyframe {check['keyframe']}: max difference "
            f"{check['max_relative_difference']:.1e} of the largest displacement"
        )
    return 0 if success else 1


def _DrakeStaticCheck(lattice, strokes) -> dict:
    """The Drake model's static response (drakebots.voxel.statics) against the frame FEM
    for the gait keyframe with the largest strokes (prismatic mounts, rigid motion removed)."""
    import numpy as np

    from drakebots.frame.model import RemoveRigidBodyMotion
    from drakebots.voxel.statics import TripodStatics
    from drakebots.voxel.tripod import ACTUATORS, TripodActuators
    from drakebots.voxel.tripod_model import NodeName

    keyframe = int(np.argmax(np.abs(strokes).sum(axis=1)))
    values = dict(zip(ACTUATORS, strokes[keyframe]))
    clamp = lattice.NodeAt((3, 1, 0))
    solution = lattice.MakeFrame().Solve(
        actuators=TripodActuators(lattice, values, mount="prismatic"), clamp_node=clamp
    )
    drake = TripodStatics().Solve(values, clamp=NodeName(lattice.node_coords[clamp]))
    u_fem, _, _ = RemoveRigidBodyMotion(lattice.nodes, solution.translations)
    u_drake = np.array([drake[NodeName(c)] for c in lattice.node_coords])
    u_drake, _, _ = RemoveRigidBodyMotion(lattice.nodes, u_drake)
    peak = float(np.abs(u_fem).max())
    return {
        "keyframe": keyframe,
        "strokes_m": values,
        "max_displacement_m": peak,
        "max_difference_m": float(np.abs(u_drake - u_fem).max()),
        "max_relative_difference": float(np.abs(u_drake - u_fem).max() / peak),
    }
