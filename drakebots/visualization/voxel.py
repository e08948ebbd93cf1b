"""Plots and Meshcat replays of voxel lattices: displacement patterns (paper Figs. 1-3),
dissipation against distance (Fig. 2), POM against FEM (Figs. 6-7 style)."""

import logging

import numpy as np


def PlotDisplacementPattern(nodes, struts, translations, *, title, highlight=None, scale=None):
    """3-D view of the lattice, undeformed (grey) and deformed (exaggerated), nodes coloured by
    the displacement magnitude (mm)."""
    import matplotlib.pyplot as plt

    u = np.asarray(translations)[:, :3]
    magnitude = np.linalg.norm(u, axis=1)
    extent = float(np.ptp(nodes))
    scale = scale or 0.15 * extent / max(magnitude.max(), 1e-300)
    deformed = nodes + scale * u
    figure = plt.figure(figsize=(7, 6))
    ax = figure.add_subplot(projection="3d")
    for a, b in struts:
        ax.plot(*np.array([nodes[a], nodes[b]]).T * 1e3, color="0.85", lw=0.6)
        ax.plot(*np.array([deformed[a], deformed[b]]).T * 1e3, color="0.35", lw=0.8)
    points = ax.scatter(
        *deformed.T * 1e3, c=magnitude * 1e3, cmap="viridis", s=28, depthshade=False
    )
    if highlight is not None:
        ax.scatter(*deformed[highlight].T * 1e3, s=120, facecolors="none", edgecolors="red")
    figure.colorbar(points, ax=ax, shrink=0.6, label="|displacement| (mm)")
    ax.set_xlabel("x (mm)")
    ax.set_ylabel("y (mm)")
    ax.set_zlabel("z (mm)")
    ax.set_title(f"{title}\n(deformation x{scale:.0f})", fontsize=10)
    ax.set_box_aspect(np.ptp(np.vstack([nodes, deformed]), axis=0) + 1e-9)
    figure.tight_layout()
    return figure


def PlotDissipation(distance, ratio, off_pattern, *, title):
    """In-plane node displacement / control displacement against distance from the actuator."""
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(7, 4))
    ax.plot(np.asarray(distance) * 1e3, 100 * (1 - np.asarray(ratio)), "o", label="magnitude lost")
    ax.plot(np.asarray(distance) * 1e3, 100 * np.asarray(off_pattern), "x", label="off the pattern")
    ax.axhline(4.9, color="red", ls="--", lw=1, label="paper: at most 4.9 %")
    ax.set_xlabel("distance from the actuator (mm)")
    ax.set_ylabel("displacement dissipation (%)")
    ax.set_title(title, fontsize=10)
    ax.legend()
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
    from pydrake.geometry import Meshcat, MeshcatAnimation, Rgba, Sphere
    from pydrake.math import RigidTransform

    logging.getLogger("drake").setLevel(logging.WARNING)
    meshcat = Meshcat()
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
