"""Figures of the gecko soft walker, after the paper's (gecko-gait-pattern-generator.txt).

- `PlotVelocitySpace`: Fig. 7 (poses of one cycle per grid point, the translation arrow, the
  orientation after the cycle, the fitted rotation as a heat map, the measured rotation in a box).
- `PlotFitComparison`: the project's fit of Eq. 16 against the paper's Table 3.
- `PlotCourse`: Fig. 12 (tracks of the feet and torso ends, targets; (q1, q2) over the steps).
- `PlotDistanceFunction`: Fig. 10 (d_n over the velocity space for one target and horizon, its
  minimum, and the predicted poses of the chosen gait).
- `PlotGaitSignals`: angles against references, pressures, fixation of a simulation.
- `PlotChainError`: the rigid-segment approximation of an arc against the exact arc.
- `DrawGecko`: a constant-curvature gecko on an axes.

Functions return a Figure (the caller saves it). Lengths in the plots are cm, as in the paper.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from drakebots.gecko.geometry import (  # noqa: E402
    FEET,
    ArcPoints,
    ChainEndError,
    ChainPoints,
    GeckoOutline,
    GeckoShapeOf,
)

# The paper's colour code (Figs. 6, 12).
LIMB_COLORS = ["#e02020", "#8b0000", "#ff8c00", "#1f5fff", "#00008b"]
FOOT_COLORS = {
    "front_left": "#e02020",
    "front_right": "#8b0000",
    "hind_left": "#1f5fff",
    "hind_right": "#00008b",
}


def DrawGecko(
    ax,
    shape,
    *,
    scale=1.0,
    offset=(0.0, 0.0),
    rotate=0.0,
    alpha=1.0,
    lw=2.0,
    color=None,
    fixed=None,
    dashed_free=True,
):
    """Draws a constant-curvature gecko (a GeckoShape) on `ax`.

    Args:
        scale: drawing units per metre; offset: where the world origin is drawn; rotate: extra
            rotation of the drawing, rad.
        color: one colour for every limb (default: the paper's colour code).
        fixed: (4,) fixation; fixed feet are drawn filled, free ones open (and their legs dashed).
    """
    c, s = math.cos(rotate), math.sin(rotate)

    def T(points):
        points = np.asarray(points)
        x = c * points[..., 0] - s * points[..., 1]
        y = s * points[..., 0] + c * points[..., 1]
        return scale * x + offset[0], scale * y + offset[1]

    lines = GeckoOutline(shape)
    leg_of_line = {0: 0, 1: 1, 3: 2, 4: 3}
    for i, line in enumerate(lines):
        style = "-"
        if fixed is not None and dashed_free and i in leg_of_line and not fixed[leg_of_line[i]]:
            style = "--"
        ax.plot(
            *T(line),
            style,
            color=color or LIMB_COLORS[i],
            lw=lw,
            alpha=alpha,
            solid_capstyle="round",
        )
    for j, foot in enumerate(FEET):
        filled = fixed is None or bool(fixed[j])
        fx, fy = T(shape.feet[j])
        ax.plot(
            fx,
            fy,
            "o",
            ms=4.5 * lw / 2,
            alpha=alpha,
            color=color or FOOT_COLORS[foot],
            mfc=(color or FOOT_COLORS[foot]) if filled else "white",
        )


def PlotVelocitySpace(space, *, reference_fit=None, title=""):
    """Fig. 7: one cell per grid point (rows: q1, columns: q2) with the poses of the measured
    cycle, the translation per cycle (red arrow), the orientation after the cycle (green line),
    the fit's prediction (blue), and the fitted rotation per cycle as the background heat map.
    """
    q1_values = sorted(set(space.q1.tolist()))
    q2_values = sorted(set(space.q2.tolist()))
    rows, cols = len(q1_values), len(q2_values)
    fig, ax = plt.subplots(figsize=(1.9 * cols + 1.8, 1.95 * rows + 0.8))
    # Heat map of the fitted rotation per cycle over the continuous velocity space.
    fine1 = np.linspace(q1_values[0] - 5, q1_values[-1] + 5, 120)
    fine2 = np.linspace(q2_values[0] - 0.1, q2_values[-1] + 0.1, 120)
    G1, G2 = np.meshgrid(fine1, fine2, indexing="ij")
    rot = np.degrees(space.fit.Evaluate(G1, G2)[..., 0])
    limit = float(np.max(np.abs(rot)))
    extent = [-0.5, cols - 0.5, -0.5, rows - 0.5]
    image = ax.imshow(
        rot,
        origin="lower",
        extent=extent,
        aspect="auto",
        cmap="PiYG",
        vmin=-limit,
        vmax=limit,
        alpha=0.55,
        interpolation="bilinear",
    )
    cbar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    cbar.set_label("fitted rotation per cycle [deg]")
    # Cells per metre: a robot (about 0.3 m across) fits one cell.
    scale = 1.0 / 0.5
    for m in space.measurements:
        r = q1_values.index(m.q1)
        col = q2_values.index(m.q2)
        # Each cell: the start pose facing up, its torso midpoint at the cell centre.
        x0, y0, eps0 = m.poses[0]
        rotate = math.pi / 2 - eps0
        center = np.array([col, r - 0.12])

        def ToCell(p, x0=x0, y0=y0, rotate=rotate, center=center):
            p = np.asarray(p, dtype=float) - np.array([x0, y0])
            c, s = math.cos(rotate), math.sin(rotate)
            return center + scale * np.array([c * p[0] - s * p[1], s * p[0] + c * p[1]])

        # The paper's Fig. 7: initial pose black, middle pose grey, final pose light grey.
        for k, (shade, lw) in ((2, ("0.78", 0.9)), (1, ("0.5", 1.0)), (0, ("0.0", 1.3))):
            shape = GeckoShapeOf(m.poses[k], m.alphas[k], m.lengths[k])
            _DrawInCell(ax, shape, ToCell, color=shade, lw=lw)
        start = ToCell(m.poses[0][:2])
        end = ToCell(m.poses[2][:2])
        ax.annotate("", end, start, arrowprops=dict(arrowstyle="-|>", color="red", lw=1.6))
        heading = m.poses[2][2] + rotate
        ax.plot(
            [end[0], end[0] + 0.18 * math.cos(heading)],
            [end[1], end[1] + 0.18 * math.sin(heading)],
            color="green",
            lw=1.6,
        )
        predicted = space.fit.Evaluate(m.q1, m.q2)
        tip = (
            center
            + scale * predicted[1] * np.array([0.0, 1.0])
            + scale * predicted[2] * np.array([-1.0, 0.0])
        )
        ax.annotate(
            "", tip, center, arrowprops=dict(arrowstyle="-|>", color="blue", lw=0.8, alpha=0.8)
        )
        ax.text(
            col,
            r - 0.44,
            f"{math.degrees(m.motion[0]):+.1f}°",
            ha="center",
            va="center",
            fontsize=7,
            color="darkgreen",
            bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="green", lw=0.6),
        )
    ax.set_xticks(range(cols), [f"{v:+.1f}" for v in q2_values])
    ax.set_yticks(range(rows), [f"{v:.0f}" for v in q1_values])
    ax.set_xlabel("steering factor q2")
    ax.set_ylabel("step length q1 [deg]")
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(-0.5, rows - 0.5)
    ax.set_title(
        title
        or f"motion per cycle over the velocity space ({space.model} model): "
        "red measured, blue fit (Eq. 16)",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def _DrawInCell(ax, shape, to_cell, *, color=None, lw=1.0):
    for i, line in enumerate(GeckoOutline(shape, 12)):
        points = np.array([to_cell(p) for p in line])
        ax.plot(
            points[:, 0], points[:, 1], color=color or LIMB_COLORS[i], lw=lw, solid_capstyle="round"
        )


def PlotFitComparison(fit, reference, *, title=""):
    """Heat maps of d_eps, dx, dy per cycle: the project's fit (top) and the paper's Table 3
    (bottom), in the paper's units (deg, cm)."""
    q1 = np.linspace(50, 90, 60)
    q2 = np.linspace(-0.5, 0.5, 60)
    G1, G2 = np.meshgrid(q1, q2, indexing="ij")
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.5), sharex=True, sharey=True)
    names = ("rotation d_eps [deg]", "forward dx [cm]", "lateral dy [cm]")
    factors = (180.0 / math.pi, 100.0, 100.0)
    for col in range(3):
        values = [f.Evaluate(G1, G2)[..., col] * factors[col] for f in (fit, reference)]
        limit = max(float(np.max(np.abs(v))) for v in values)
        for row, (v, label) in enumerate(zip(values, ("this model", "paper Table 3"), strict=True)):
            ax = axes[row][col]
            cmap = "PiYG" if col != 1 else "viridis"
            vmin = -limit if col != 1 else min(0.0, float(np.min(values)))
            im = ax.pcolormesh(G2, G1, v, cmap=cmap, vmin=vmin, vmax=limit, shading="auto")
            levels = ax.contour(G2, G1, v, colors="k", linewidths=0.5, levels=8)
            ax.clabel(levels, fontsize=6, fmt="%.0f")
            fig.colorbar(im, ax=ax, fraction=0.05)
            ax.set_title(f"{names[col]}: {label}", fontsize=9)
            if row == 1:
                ax.set_xlabel("q2")
            if col == 0:
                ax.set_ylabel("q1 [deg]")
    fig.suptitle(title or f"motion per cycle: {fit.source} vs. {reference.source}", fontsize=10)
    fig.tight_layout()
    return fig


def PlotCourse(result, *, feet_tracks=None, obstacles=(), title=""):
    """Fig. 12: the tracks of a closed-loop run (left) and (q1, q2) over the steps (right).

    Args:
        result: a NavigationResult.
        feet_tracks: optional dict name -> (T, 2) tracks (feet, torso tip/end) to draw in the
            paper's colours.
        obstacles: (x, y, radius) circles, m.
    """
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5.8), gridspec_kw={"width_ratios": [1.25, 1.0]})
    colors = {
        "front_left": "#e02020",
        "front_right": "#8b0000",
        "torso_tip": "#ff8c00",
        "torso_end": "#b35900",
        "hind_left": "#1f5fff",
        "hind_right": "#00008b",
    }
    if feet_tracks:
        for name, track in feet_tracks.items():
            ax.plot(
                100 * track[:, 0],
                100 * track[:, 1],
                lw=0.8,
                alpha=0.7,
                color=colors.get(name, "gray"),
                label=name.replace("_", " "),
            )
    poses = result.track_poses
    ax.plot(100 * poses[:, 0], 100 * poses[:, 1], "k-", lw=1.4, label="torso midpoint")
    decisions = np.array([s.pose for s in result.steps]) if result.steps else np.zeros((0, 3))
    if len(decisions):
        ax.quiver(
            100 * decisions[:, 0],
            100 * decisions[:, 1],
            np.cos(decisions[:, 2]),
            np.sin(decisions[:, 2]),
            color="k",
            scale=30,
            width=0.003,
            alpha=0.6,
        )
    for k, (x, y) in enumerate(result.targets):
        reached = bool(result.reached[k])
        ax.add_patch(
            plt.Circle(
                (100 * x, 100 * y),
                100 * result.epsilon,
                color="tab:green" if reached else "tab:red",
                alpha=0.25,
            )
        )
        ax.plot(100 * x, 100 * y, "x", color="tab:green" if reached else "tab:red", ms=9, mew=2)
        ax.text(100 * x + 2, 100 * y + 2, f"{k + 1}", fontsize=10, weight="bold")
    for ox, oy, radius in obstacles:
        ax.add_patch(plt.Circle((100 * ox, 100 * oy), 100 * radius, color="0.3", alpha=0.6))
    ax.plot(100 * poses[0, 0], 100 * poses[0, 1], "ks", ms=7, label="start")
    ax.set_aspect("equal")
    ax.set_xlabel("x [cm]")
    ax.set_ylabel("y [cm]")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title(
        f"tracks ({result.model} model): "
        f"{'all targets reached' if result.success else 'not all targets reached'}",
        fontsize=10,
    )
    steps = np.arange(1, len(result.steps) + 1)
    q1 = [s.q1 for s in result.steps]
    q2 = [s.q2 for s in result.steps]
    bx.step(steps, q1, where="mid", color="tab:blue", label="step length q1 [deg]")
    bx.set_ylabel("q1 [deg]", color="tab:blue")
    bx.set_ylim(35, 95)
    bx.set_xlabel("step (half cycle)")
    cx = bx.twinx()
    cx.step(steps, q2, where="mid", color="tab:red", label="steering q2")
    cx.set_ylabel("q2", color="tab:red")
    cx.set_ylim(-0.55, 0.55)
    for k, at in enumerate(result.reached_at_step):
        if at > 0:
            bx.axvline(at + 0.5, color="tab:green", ls=":", lw=1)
            bx.text(at + 0.5, 92, f"target {k + 1}", fontsize=7, rotation=90, va="top")
    bx.set_title("gait over the steps (Fig. 12B)", fontsize=10)
    bx.grid(alpha=0.3)
    fig.suptitle(title or "gait pattern generator in closed loop", fontsize=11)
    fig.tight_layout()
    return fig


def PlotDistanceFunction(planner, pose, target, horizons=(1, 4), *, title=""):
    """Fig. 10: d_n over the velocity space for one target and horizon(s), the minimum (purple
    circle), and below, the predicted poses of the chosen gait for n cycles."""
    from drakebots.gecko.planner import DistanceSquared, TargetInRobotFrame

    target_robot = TargetInRobotFrame(pose, target)
    p = planner.params
    q1 = np.linspace(p.q1_bounds[0], p.q1_bounds[1], 101)
    q2 = np.linspace(p.q2_bounds[0], p.q2_bounds[1], 101)
    G1, G2 = np.meshgrid(q1, q2, indexing="ij")
    fig, axes = plt.subplots(2, len(horizons), figsize=(5.2 * len(horizons), 9.0), squeeze=False)
    for k, n in enumerate(horizons):
        ax = axes[0][k]
        d = np.sqrt(DistanceSquared(target_robot, planner.fit, G1, G2, n))
        im = ax.pcolormesh(G2, G1, 100 * d, cmap="RdYlGn_r", shading="auto")
        fig.colorbar(im, ax=ax, label=f"d_{n} [cm]")
        q_best, d_best, _ = planner.Minimize(target_robot, n)
        ax.plot(q_best[1], q_best[0], "o", ms=14, mfc="none", mec="purple", mew=2.5)
        ax.set_xlabel("q2")
        ax.set_ylabel("q1 [deg]")
        d0 = float(np.linalg.norm(target_robot))
        ax.set_title(
            f"n = {n}: min d_n = {100 * d_best:.1f} cm at ({q_best[0]:.0f}, "
            f"{q_best[1]:+.2f}); d_0 = {100 * d0:.1f} cm",
            fontsize=9,
        )
        bx = axes[1][k]
        motion = planner.fit.Evaluate(q_best[0], q_best[1])
        x, y, eps = 0.0, 0.0, 0.0
        track = [(x, y, eps)]
        for _ in range(n):
            c, s = math.cos(eps), math.sin(eps)
            x, y = x + c * motion[1] - s * motion[2], y + s * motion[1] + c * motion[2]
            eps += motion[0]
            track.append((x, y, eps))
        from drakebots.gecko.geometry import GaitLawDeg, GeckoDimensions

        alpha = np.radians(GaitLawDeg(q_best[0], q_best[1]))
        for i, pose_i in enumerate(track):
            # Draw the robot facing +y (the paper's figures); robot frame x -> drawing y.
            shape = GeckoShapeOf(pose_i, alpha, GeckoDimensions().lengths())
            DrawGecko(
                bx,
                shape,
                scale=100.0,
                rotate=math.pi / 2,
                alpha=max(0.15, 1.0 - i / (n + 1)),
                lw=1.3,
            )
        bx.plot(-100 * target_robot[1], 100 * target_robot[0], "*", color="purple", ms=14)
        bx.set_aspect("equal")
        bx.grid(alpha=0.3)
        bx.set_xlabel("robot frame, lateral (right positive) [cm]", fontsize=8)
        bx.set_ylabel("forward x [cm]")
        bx.set_title(f"predicted poses over {n} cycle(s) of the chosen gait", fontsize=9)
    fig.suptitle(
        title or "distance function of the gait pattern generator (Eqs. 19-21)", fontsize=11
    )
    fig.tight_layout()
    return fig


def PlotGaitSignals(log, *, title=""):
    """Bending angles against references, chamber pressures and the fixation over time."""
    extra = log.extra
    t = log.times
    fig, axes = plt.subplots(
        4, 1, figsize=(9, 10), sharex=True, gridspec_kw={"height_ratios": [3, 2, 2, 1]}
    )
    names = ("front left", "front right", "torso", "hind left", "hind right")
    for i in range(5):
        axes[0].plot(
            t, np.degrees(extra["angles"][:, i]), color=LIMB_COLORS[i], lw=1.3, label=names[i]
        )
        axes[0].plot(t, np.degrees(extra["reference"][:, i]), color=LIMB_COLORS[i], lw=0.8, ls=":")
    axes[0].set_ylabel("bending angle [deg]")
    axes[0].legend(fontsize=7, ncol=5, loc="upper right")
    axes[0].set_title("measured (solid) and reference (dotted) bending angles", fontsize=9)
    chambers = ("FL", "FR", "torso L", "torso R", "HL", "HR")
    colors = [
        LIMB_COLORS[0],
        LIMB_COLORS[1],
        LIMB_COLORS[2],
        "#b35900",
        LIMB_COLORS[3],
        LIMB_COLORS[4],
    ]
    for i in range(6):
        axes[1].plot(t, extra["pressures"][:, i], color=colors[i], lw=1.2, label=chambers[i])
        axes[1].plot(t, extra["pressure_references"][:, i], color=colors[i], lw=0.7, ls=":")
    axes[1].set_ylabel("pressure [bar]")
    axes[1].legend(fontsize=7, ncol=6, loc="upper right")
    axes[1].set_title("chamber pressures (solid) and references (dotted)", fontsize=9)
    for i in range(5):
        axes[2].plot(t, 1e3 * extra["moments"][:, i], color=LIMB_COLORS[i], lw=1.0)
    axes[2].set_ylabel("moment [mN·m]")
    axes[2].set_title("pneumatic bending moments", fontsize=9)
    fixation = extra["fixation"]
    for j, foot in enumerate(FEET):
        axes[3].fill_between(
            t,
            j + 0.1,
            j + 0.1 + 0.8 * fixation[:, j],
            step="post",
            color=FOOT_COLORS[foot],
            alpha=0.8,
        )
    axes[3].set_yticks(np.arange(4) + 0.5, ["FL", "FR", "HL", "HR"])
    axes[3].set_ylim(0, 4)
    axes[3].set_xlabel("time [s]")
    axes[3].set_title("suction feet fixed", fontsize=9)
    fig.suptitle(title or "gecko: gait law, cascaded pneumatic control, suction", fontsize=11)
    fig.tight_layout()
    return fig


def PlotTrack(log, *, every: float = 5.0, title=""):
    """Top view of a simulation: the torso midpoint's track and the robot every `every` seconds
    (one gait cycle), earlier poses lighter; fixed feet filled, free legs dashed."""
    fig, ax = plt.subplots(figsize=(7, 6))
    pose = log.extra["pose"]
    ax.plot(100 * pose[:, 0], 100 * pose[:, 1], "k-", lw=1.0, label="torso midpoint")
    from drakebots.gecko.geometry import GeckoDimensions

    lengths = GeckoDimensions().lengths()
    times = np.arange(log.times[0], log.times[-1] + 1e-9, every)
    marks = [int(np.argmin(np.abs(log.times - t))) for t in times]
    for i, k in enumerate(marks):
        shape = GeckoShapeOf(pose[k], log.extra["angles"][k], lengths)
        DrawGecko(
            ax,
            shape,
            scale=100.0,
            alpha=0.3 + 0.7 * i / max(1, len(marks) - 1),
            lw=1.4,
            fixed=log.extra["fixation"][k] > 0.5,
        )
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.set_xlabel("x [cm]")
    ax.set_ylabel("y [cm]")
    ax.set_title(
        title or f"gecko: track, the robot every {every:g} s (filled feet fixed)", fontsize=10
    )
    fig.tight_layout()
    return fig


def PlotChainError(length, segments=(2, 3, 4, 5, 6, 8), max_angle_deg=160.0, *, title=""):
    """End-point error of an N-segment chain against the exact constant-curvature arc."""
    angles = np.radians(np.linspace(0.0, max_angle_deg, 161))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    for n in segments:
        ax.plot(np.degrees(angles), 1e3 * ChainEndError(length, angles, n), label=f"N = {n}")
    ax.set_xlabel("bending angle [deg]")
    ax.set_ylabel("end-point error [mm]")
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    ax.set_title(f"chain end vs. exact arc (length {100 * length:.1f} cm)", fontsize=9)
    bend = math.radians(max_angle_deg)
    arc = ArcPoints(np.zeros(2), math.pi / 2, length, -bend, 100)
    bx.plot(100 * arc[:, 0], 100 * arc[:, 1], "k-", lw=2.5, label="exact arc")
    for n in (2, 3, 5):
        chain = ChainPoints(np.zeros(2), math.pi / 2, length, -bend, n)
        bx.plot(100 * chain[:, 0], 100 * chain[:, 1], "o-", lw=1.0, ms=3, label=f"N = {n}")
    bx.set_aspect("equal")
    bx.grid(alpha=0.3)
    bx.legend(fontsize=8)
    bx.set_title(f"{max_angle_deg:.0f} degree bend", fontsize=9)
    bx.set_xlabel("cm")
    fig.suptitle(title or "rigid-segment approximation of a constant-curvature limb", fontsize=10)
    fig.tight_layout()
    return fig
