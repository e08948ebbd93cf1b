"""Voxel lattices: frame FEM of an actuated lattice, the Planes-of-Motion model, POM against FEM.

Nodes are named by voxel grid position and in-voxel id (0 -x, 1 -y, 2 -z, 3 +x, 4 +y, 5 +z):
`node=I:J:K/N`. An actuator joins that node to the node one pitch along `axis` (or to `to=...`);
`stroke=` (mm or m suffix; extension > 0) or `force=` (N) drives it.

Examples:
  drakebots voxel fem --lattice 2x2x1 --actuate "node=0:0:0/3,axis=y,stroke=2mm" --out runs/vox_fem
  drakebots voxel fem --lattice 2x1x2 --actuate "node=0:0:0/3,axis=z,stroke=2mm" --out runs/vox_xz
  drakebots voxel fem --lattice 8x8x1 --actuate "node=3:3:0/3,axis=y,force=1N" --out runs/vox_big
  drakebots voxel pom --robot tripod --gait tripod --out runs/vox_pom
  drakebots voxel compare --robot tripod --gait tripod --out runs/vox_cmp

fem writes the displacement pattern (Figs. 1-3 of the paper), the dissipation against distance
in the actuated plane (Fig. 2) and the out-of-plane motion (Fig. 3); pom writes the actuator
sequence that the POM inverse kinematics gives for the gait and the feet's predicted motion; compare
checks the POM prediction against the FEM of the whole robot, node by node.
"""

import re

from drakebots.cli import AddOutputArguments, AddVerb
from drakebots.errors import InputError

ROBOTS = ("tripod",)
GAITS = ("tripod",)


def register(subparsers):
    parser = AddVerb(subparsers, "voxel", __doc__)
    parser.add_argument("action", choices=("fem", "pom", "compare"), help="what to run")
    parser.add_argument("--lattice", default="2x2x1", help="fem: lattice size NXxNYxNZ")
    parser.add_argument(
        "--actuate",
        action="append",
        default=None,
        help='fem: an actuator, "node=I:J:K/N,axis=x|y|z|to=I:J:K/N,stroke=2mm|force=1N"',
    )
    parser.add_argument(
        "--mount",
        choices=("clamped", "prismatic", "axial"),
        default="clamped",
        help="fem: actuator mount (clamped: the paper's setting, sec. 2.1)",
    )
    parser.add_argument("--timoshenko", action="store_true", help="include strut shear")
    parser.add_argument("--robot", default="tripod", help="pom/compare: robot (tripod)")
    parser.add_argument("--gait", default="tripod", help="pom/compare: gait (tripod)")
    parser.add_argument(
        "--lift", type=float, default=3.0, help="pom/compare: gait lift amplitude, mm"
    )
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def _Length(text: str, what: str) -> float:
    match = re.fullmatch(r"\s*([-+0-9.eE]+)\s*(mm|m)?\s*", text)
    if not match:
        raise InputError(f"--actuate {what}={text}: expected a length such as 2mm or 0.002m")
    value = float(match.group(1))
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
    """One --actuate value -> frame Actuator (validated: nodes in the lattice and adjacent)."""
    import numpy as np

    from drakebots.frame.model import Actuator
    from drakebots.frame.voxel import AXES

    fields = {}
    for part in spec.split(","):
        if "=" not in part:
            raise InputError(f"--actuate '{spec}': '{part}' is not key=value")
        key, value = (s.strip() for s in part.split("=", 1))
        if key not in ("node", "axis", "to", "stroke", "force"):
            raise InputError(f"--actuate '{spec}': unknown key '{key}'")
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
        if b is None:
            raise InputError(
                f"--actuate '{spec}': no node one pitch along +{fields['axis']} from "
                f"{fields['node']} (lattice coordinates {tuple(int(c) for c in target)} are not "
                "in the lattice)"
            )
    else:
        raise InputError(f"--actuate '{spec}': give axis=x|y|z or to=I:J:K/N")
    distance = np.linalg.norm(lattice.nodes[b] - lattice.nodes[a]) / lattice.pitch
    if a == b or not (np.isclose(distance, 1 / np.sqrt(2)) or np.isclose(distance, 1.0)):
        raise InputError(
            f"--actuate '{spec}': the nodes are not adjacent ({distance:.3g} pitches apart; an "
            "actuator joins nodes of one strut or two nodes one pitch apart)"
        )
    if ("stroke" in fields) == ("force" in fields):
        raise InputError(f"--actuate '{spec}': give exactly one of stroke= or force=")
    if "stroke" in fields:
        stroke = _Length(fields["stroke"], "stroke")
        if abs(stroke) >= distance * lattice.pitch:
            raise InputError(f"--actuate '{spec}': stroke {stroke} m collapses the actuator")
        return Actuator(a, b, stroke=stroke, mount=mount, name=spec)
    match = re.fullmatch(r"\s*([-+0-9.eE]+)\s*N?\s*", fields["force"])
    if not match:
        raise InputError(f"--actuate '{spec}': force must be like 1N")
    return Actuator(a, b, force=float(match.group(1)), mount=mount, name=spec)


def Run(args) -> int:
    from drakebots.cli._results import CheckOutputFolder, DefaultOutput

    out = args.out or DefaultOutput("voxel", args.action)
    CheckOutputFolder(out, args.force)
    if args.action == "fem":
        return _RunFem(args, out)
    if args.robot not in ROBOTS:
        raise InputError(f"--robot {args.robot}: known robots: {', '.join(ROBOTS)}")
    if args.gait not in GAITS:
        raise InputError(f"--gait {args.gait}: known gaits: {', '.join(GAITS)}")
    if not 0 < args.lift <= 10:
        raise InputError(f"--lift {args.lift}: must be in (0, 10] mm")
    return _RunPom(args, out, compare=args.action == "compare")


def _RunFem(args, out) -> int:
    import numpy as np

    from drakebots.cli._results import MakeSummary, ResultsFolder
    from drakebots.frame.pom import ControlPlane, PlaneNodes
    from drakebots.frame.voxel import AXES, CubicLattice, ParseLatticeSize, StrutSection
    from drakebots.visualization.voxel import (
        LatticeReplayHtml,
        PlotDisplacementPattern,
        PlotDissipation,
    )

    size = ParseLatticeSize(args.lattice)
    lattice = CubicLattice(size, section=StrutSection(timoshenko=args.timoshenko))
    if not args.actuate:
        raise InputError("--actuate is required for voxel fem")
    actuators = [ParseActuator(lattice, spec, args.mount) for spec in args.actuate]
    frame = lattice.MakeFrame()
    floating = any(a.mount != "clamped" for a in actuators) or any(
        a.force is not None for a in actuators
    )
    clamp = None
    if floating:
        used = {a.node_a for a in actuators} | {a.node_b for a in actuators}
        clamp = next(i for i in range(lattice.num_nodes) if i not in used)
    solution = frame.Solve(actuators=actuators, clamp_node=clamp)
    u = solution.translations
    if floating:
        from drakebots.frame.model import RemoveRigidBodyMotion

        u, _, _ = RemoveRigidBodyMotion(lattice.nodes, u)
    ratios = lattice.VoxelVolumeRatios(u)
    if np.any(ratios <= 0.0):
        worst = int(np.argmin(ratios))
        raise InputError(
            f"--actuate: the strokes invert voxel {tuple(int(c) for c in lattice.voxels[worst])} "
            f"(its volume ratio is {ratios[worst]:.3g}); use a smaller stroke"
        )
    first = actuators[0]
    control = first.node_b
    axis_vector = lattice.nodes[first.node_b] - lattice.nodes[first.node_a]
    axis = int(np.argmax(np.abs(axis_vector)))
    delta = float(np.linalg.norm(u[control]))
    plane = None
    summary_plane = {}
    figures = {}
    try:
        plane = ControlPlane(lattice, control, axis)
    except InputError:
        plane = None
    if plane is not None:
        on = PlaneNodes(lattice, plane)
        off = np.setdiff1d(np.arange(lattice.num_nodes), on)
        from drakebots.frame.pom import IdealActuationMatrices, _NodeInPlane, _VoxelSign

        ideal = IdealActuationMatrices()[plane.axis]
        centre = 0.5 * (lattice.nodes[first.node_a] + lattice.nodes[first.node_b])
        distance, ratio, off_pattern = [], [], []
        for node in on:
            voxel, local = _NodeInPlane(lattice, node, plane)[0]
            direction = _VoxelSign(voxel, plane.axis) * ideal[:, local]
            along = abs(float(u[node] @ direction))
            distance.append(float(np.linalg.norm(lattice.nodes[node] - centre)))
            ratio.append(along / max(delta, 1e-300))
            off_pattern.append(
                float(np.linalg.norm(u[node] - (u[node] @ direction) * direction))
                / max(np.linalg.norm(u[node]), 1e-300)
            )
        ratio = np.array(ratio)
        summary_plane = {
            "plane_of_motion": str(plane),
            "nodes_in_plane": int(len(on)),
            "control_node_displacement_m": delta,
            "in_plane_magnitude_ratio_min": float(ratio.min()),
            "in_plane_magnitude_ratio_max": float(ratio.max()),
            "max_dissipation_percent": float(100 * (1 - ratio.min())),
            "max_off_pattern_percent": float(100 * max(off_pattern)),
            "paper_max_dissipation_percent": 4.9,
            "max_out_of_plane_translation_m": float(
                np.max(np.linalg.norm(u[off], axis=1)) if len(off) else 0.0
            ),
            "max_out_of_plane_ratio": float(
                np.max(np.linalg.norm(u[off], axis=1)) / max(delta, 1e-300) if len(off) else 0.0
            ),
            "alternating_signs_ok": bool(
                all(
                    (u[n] @ (_VoxelSign(v, plane.axis) * ideal[:, loc]))
                    * (u[control] @ (_VoxelSign(vc, plane.axis) * ideal[:, lc]))
                    > 0
                    for n in on
                    for (v, loc) in [_NodeInPlane(lattice, n, plane)[0]]
                    for (vc, lc) in [_NodeInPlane(lattice, control, plane)[0]]
                )
            ),
        }
        figures["dissipation.png"] = PlotDissipation(
            distance,
            ratio,
            off_pattern,
            title=f"{args.lattice}: displacement dissipation in the {plane}",
        )
    title = f"{args.lattice} lattice, actuator {AXES[axis]} ({args.mount} mount)"
    figures["displacement.png"] = PlotDisplacementPattern(
        lattice.nodes,
        lattice.struts,
        u,
        title=title,
        highlight=[first.node_a, first.node_b],
    )
    scale = 0.1 * lattice.pitch / max(np.abs(u).max(), 1e-300)
    frames = np.array([u * s for s in np.sin(np.linspace(0, np.pi / 2, 8))])
    html = LatticeReplayHtml(lattice.nodes, lattice.struts, frames, scale=scale)
    summary = MakeSummary(
        "voxel fem",
        {
            "lattice": args.lattice,
            "actuate": args.actuate,
            "mount": args.mount,
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
            "max_translation_m": float(np.max(np.linalg.norm(u, axis=1))),
            "min_voxel_volume_ratio": float(ratios.min()),
            "solve_seconds": solution.seconds,
        }
        | summary_plane,
    )
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
        results.WriteText("replay.html", html)
        results.WriteJson("summary.json", summary)
    print(f"results: {results.final}")
    for key in (
        "max_translation_m",
        "max_dissipation_percent",
        "max_off_pattern_percent",
        "max_out_of_plane_ratio",
    ):
        if key in summary["figures"]:
            print(f"  {key}: {summary['figures'][key]:.4g}")
    if summary_plane:
        print(f"  plane of motion: {summary_plane['plane_of_motion']}")
    return 0


def _RunPom(args, out, *, compare: bool) -> int:
    import numpy as np

    from drakebots.cli._results import MakeSummary, ResultsFolder
    from drakebots.frame.pom import DeriveActuationMatrices
    from drakebots.frame.tripod import (
        ACTUATORS,
        FEET,
        MARKERS,
        CompareWithFem,
        GaitStrokes,
        TripodGaitTargets,
        TripodLattice,
        TripodPom,
    )
    from drakebots.visualization.voxel import LatticeReplayHtml, PlotPomVsFem

    A, derivation = DeriveActuationMatrices()
    pom = TripodPom(actuation_matrices=A)
    targets = TripodGaitTargets(lift=args.lift * 1e-3)
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
    summary = MakeSummary(
        verb,
        {"robot": args.robot, "gait": args.gait, "lift_mm": args.lift},
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
    print("  strokes per keyframe (mm): right left rear front")
    for row in strokes:
        print("   " + " ".join(f"{1e3 * v:6.2f}" for v in row))
    if compare:
        print(
            f"  core nodes: max |POM - FEM| {1e3 * fields['core_max_error_m']:.4f} mm "
            f"({100 * fields['core_max_error_relative']:.2f} % of the largest displacement)"
        )
        for n, e in fields["feet_and_markers_max_error_m"].items():
            print(f"  {n}: max error {1e3 * e:.3f} mm")
    return 0 if success else 1
