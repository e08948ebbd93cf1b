"""Plots and Meshcat replays of voxel lattices: displacement patterns (paper Figs. 1-3),
dissipation against distance (Fig. 2), POM against FEM (Figs. 6-7 style)."""

import logging

import numpy as np


def PlotDisplacementPattern(lattice, translations, report, *, title, actuator=None):
    """The displacement pattern of an actuated lattice (paper Figs. 1-3), two views.

    Left: 3-D view, undeformed (light) and deformed (exaggerated) struts, nodes coloured by
    |u| / |q0| (q0 the control amplitude). Right: the actuated layer seen along the plane's normal,
    arrows at its in-plane nodes coloured by the amplitude ratio (1 = no dissipation), the
    actuator (a node pair) in red.
    """
    import matplotlib.pyplot as plt

    nodes = lattice.nodes
    u = np.asarray(translations)[:, :3]
    q0 = abs(report.control_amplitude)
    magnitude = np.linalg.norm(u, axis=1) / max(q0, 1e-300)
    extent = float(np.ptp(nodes))
    scale = 0.12 * extent / max(np.abs(u).max(), 1e-300)
    deformed = nodes + scale * u
    figure = plt.figure(figsize=(13, 5.8))
    ax = figure.add_subplot(1, 2, 1, projection="3d")
    for a, b in lattice.struts:
        ax.plot(*np.array([nodes[a], nodes[b]]).T * 1e3, color="0.88", lw=0.5)
        ax.plot(*np.array([deformed[a], deformed[b]]).T * 1e3, color="0.35", lw=0.7)
    points = ax.scatter(
        *deformed.T * 1e3, c=magnitude, cmap="viridis", vmin=0, vmax=1.05, s=22, depthshade=False
    )
    figure.colorbar(points, ax=ax, shrink=0.55, label="|u| / control amplitude")
    ax.set_xlabel("x (mm)")
    ax.set_ylabel("y (mm)")
    ax.set_zlabel("z (mm)")
    ax.set_box_aspect(np.ptp(np.vstack([nodes, deformed]), axis=0) + 1e-9)
    ax.set_title(f"deformation x{scale:.0f}", fontsize=9)
    # The actuated layer, seen along its normal.
    d = report.plane.axis
    i, j = [k for k in range(3) if k != d]
    ax2 = figure.add_subplot(1, 2, 2)
    layer = lattice.voxels[lattice.strut_voxel, d] == report.plane.layer
    for a, b in lattice.struts[layer]:
        ax2.plot(nodes[[a, b], i] * 1e3, nodes[[a, b], j] * 1e3, color="0.8", lw=0.8, zorder=1)
    if actuator is not None:
        pair = nodes[list(actuator)] * 1e3
        ax2.plot(pair[:, i], pair[:, j], color="red", lw=3, alpha=0.6, zorder=2, label="actuator")
        ax2.legend(loc="upper right", fontsize=8)
    arrow = 0.35 * lattice.pitch / max(q0, 1e-300)
    p = nodes[report.nodes]
    v = u[report.nodes]
    quiver = ax2.quiver(
        p[:, i] * 1e3,
        p[:, j] * 1e3,
        v[:, i] * arrow * 1e3,
        v[:, j] * arrow * 1e3,
        report.amplitude_ratio,
        cmap="plasma",
        clim=(min(0.0, float(report.amplitude_ratio.min())), 1.0),
        angles="xy",
        scale_units="xy",
        scale=1.0,
        width=0.005,
        zorder=3,
    )
    figure.colorbar(quiver, ax=ax2, shrink=0.8, label="amplitude ratio (1 = none lost)")
    ax2.set_aspect("equal")
    ax2.set_xlabel(f"{'xyz'[i]} (mm)")
    ax2.set_ylabel(f"{'xyz'[j]} (mm)")
    ax2.set_title(f"{report.plane}: in-plane node displacements", fontsize=9)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout(rect=(0, 0, 1, 0.96))
    return figure


def PlotDissipation(report, *, title):
    """Displacement dissipation against distance (paper Fig. 2) and the parallel layers' motion
    (Fig. 3), from a drakebots.voxel.observations.PatternReport."""
    import matplotlib.pyplot as plt

    figure, (ax, ax2) = plt.subplots(
        1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2.2, 1]}
    )
    distance = report.distance * 1e3
    ax.plot(distance, 100 * report.dissipation, "o", ms=5, label="magnitude lost (dissipation)")
    ax.plot(distance, 100 * report.off_pattern, "x", ms=5, label="displacement off the pattern")
    ax.axhline(4.9, color="red", ls="--", lw=1, label="paper: at most 4.9 %")
    ax.set_xlabel("distance from the actuator (mm)")
    ax.set_ylabel("% of the control displacement")
    ax.set_title(title, fontsize=9)
    ax.set_ylim(bottom=min(0.0, 100 * float(report.dissipation.min())) - 0.5)
    ax.legend(fontsize=8)
    offsets = report.layer_offsets
    ax2.bar(offsets, report.layer_ratio, color=["C0" if o == 0 else "C3" for o in offsets])
    for o, r in zip(offsets, report.layer_ratio):
        ax2.annotate(f"{r:.3f}", (o, r), ha="center", va="bottom", fontsize=8)
    ax2.set_xticks(offsets)
    ax2.set_xlabel(f"layer offset along {'xyz'[report.plane.axis]} (voxels)")
    ax2.set_ylabel("layer rotation / actuated layer")
    ax2.set_title("parallel layers (paper: 0 off the plane)", fontsize=9)
    figure.tight_layout()
    return figure


def PlotPomVsFem(names, pom, fem, *, title, unit_scale=1e3):
    """Per-keyframe x, y, z of named points: POM (lines) against FEM (markers), mm."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(names), 1, figsize=(8, 2.0 * len(names)), sharex=True)
    axes = np.atleast_1d(axes)
    steps = np.arange(len(next(iter(pom.values()))))
    for ax, name in zip(axes, names):
        for k, (axis, colour) in enumerate(zip("xyz", ("C0", "C1", "C2"))):
            ax.plot(steps, unit_scale * pom[name][:, k], color=colour, label=f"POM {axis}")
            ax.plot(steps, unit_scale * fem[name][:, k], "o", color=colour, mfc="none")
        ax.set_ylabel(f"{name}\n(mm)", fontsize=8)
    axes[0].legend(ncol=3, fontsize=8, title="lines POM, circles FEM", title_fontsize=8)
    axes[-1].set_xlabel("gait keyframe")
    axes[0].set_title(title, fontsize=10)
    figure.tight_layout()
    return figure


def LatticeReplayHtml(nodes, struts, frames, *, scale=1.0, colours=None, extra=None, fps=4.0):
    """A self-contained Meshcat page animating node displacements (frames: (T, N, 3), m).

    Struts are drawn per frame as line segments toggled visible (recordings animate transforms
    and visibility, not vertices); nodes are spheres moved per frame. `extra`: optional second
    set of frames (T, M, 3) + positions (M, 3) drawn as red spheres (e.g. the FEM when the main
    set is the POM).
    """
    from pydrake.geometry import MeshcatAnimation, Rgba, Sphere
    from pydrake.math import RigidTransform

    from drakebots.visualization.meshcat import LocalMeshcat

    logging.getLogger("drake").setLevel(logging.WARNING)
    meshcat = LocalMeshcat()
    try:
        frames = np.asarray(frames)
        radius = 0.04 * float(
            np.min(np.linalg.norm(nodes[struts[:, 0]] - nodes[struts[:, 1]], axis=1))
        )

        animation = MeshcatAnimation(frames_per_second=fps)
        colours = colours if colours is not None else [Rgba(0.1, 0.3, 0.8, 1.0)] * len(nodes)
        for i in range(len(nodes)):
            meshcat.SetObject(f"nodes/{i}", Sphere(radius), colours[i])
        if extra is not None:
            extra_frames, extra_nodes = extra
            for i in range(len(extra_nodes)):
                meshcat.SetObject(f"fem/{i}", Sphere(0.8 * radius), Rgba(0.85, 0.15, 0.1, 0.8))
        for t, u in enumerate(frames):
            x = nodes + scale * u
            start = x[struts[:, 0]].T
            end = x[struts[:, 1]].T
            meshcat.SetLineSegments(f"struts/{t}", start, end, 2.0, Rgba(0.3, 0.3, 0.3, 1))
            for s in range(len(frames)):
                animation.SetProperty(t, f"struts/{s}", "visible", s == t)
            for i in range(len(nodes)):
                animation.SetTransform(t, f"nodes/{i}", RigidTransform(x[i]))
            if extra is not None:
                y = extra_nodes + scale * extra_frames[t]
                for i in range(len(extra_nodes)):
                    animation.SetTransform(t, f"fem/{i}", RigidTransform(y[i]))
        meshcat.SetAnimation(animation)
        centre = nodes.mean(axis=0)
        size = float(np.ptp(nodes))
        meshcat.SetCameraPose(centre + size * np.array([1.2, -1.6, 1.0]), centre)
        return meshcat.StaticHtml()
    finally:
        del meshcat
