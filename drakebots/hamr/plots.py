"""Matplotlib figures of HAMR-VI runs (model units: mm, ms, V). Functions return a Figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

LEG_ORDER = ("FL", "RL", "FR", "RR")
LEG_COLORS = {"FL": "tab:blue", "RL": "tab:orange", "FR": "tab:green", "RR": "tab:red"}


def _RotationsFromRpy(rpy: np.ndarray) -> np.ndarray:
    """(T, 3, 3) rotation matrices R = Rz(yaw) Ry(pitch) Rx(roll) from (T, 3) [roll, pitch, yaw]."""
    r, p, y = rpy[:, 0], rpy[:, 1], rpy[:, 2]
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    R = np.empty((len(rpy), 3, 3))
    R[:, 0] = np.stack([cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr], axis=1)
    R[:, 1] = np.stack([sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr], axis=1)
    R[:, 2] = np.stack([-sp, cp * sr, cp * cr], axis=1)
    return R


def FeetInBodyFrame(positions: np.ndarray, rpy: np.ndarray, feet_world: np.ndarray) -> np.ndarray:
    """(T, 4, 3) foot positions in the chassis frame from base positions (x, y, z first three
    columns of q), base roll-pitch-yaw (T, 3) rad and world foot positions (T, 4, 3), mm."""
    R = _RotationsFromRpy(rpy)
    relative = feet_world - positions[:, np.newaxis, :3]
    return np.einsum("tji,tkj->tki", R, relative)


def PlotHamrRun(log, figures: dict, *, title: str = "") -> plt.Figure:
    """Six panels: body x, body height, roll/pitch/yaw, drive voltages, foot paths in the body
    frame (x-z), loop-closure residual."""
    t = log.times
    q = log.positions
    rpy = log.extra["roll_pitch_yaw"]
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.2))
    ax = axes[0, 0]
    ax.plot(t, q[:, 0], label="x (forward)")
    ax.plot(t, q[:, 1], label="y (left)")
    period = figures.get("period_ms")
    if period and figures.get("gait") in ("trot", "pronk"):
        for k in range(int(t[-1] // period) + 1):
            ax.axvline(k * period, color="0.85", lw=0.6, zorder=0)
    text = f"{figures['mm_per_cycle']:.2f} mm/cycle" if "mm_per_cycle" in figures else ""
    ax.set_title(f"body position  {text}", fontsize=9)
    ax.set_xlabel("time [ms]")
    ax.set_ylabel("[mm]")
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    ax.plot(t, log.base_height, color="k", lw=1.0)
    nominal = figures.get("nominal_base_height", 12.69)
    ax.axhline(nominal, color="tab:gray", ls=":", lw=0.8, label=f"home {nominal} mm")
    ax.set_title("body height", fontsize=9)
    ax.set_xlabel("time [ms]")
    ax.set_ylabel("[mm]")
    ax.legend(fontsize=7)
    ax = axes[0, 2]
    for k, name in enumerate(("roll", "pitch", "yaw")):
        ax.plot(t, np.degrees(rpy[:, k]), label=name)
    ax.set_title("body orientation", fontsize=9)
    ax.set_xlabel("time [ms]")
    ax.set_ylabel("[deg]")
    ax.legend(fontsize=7)
    ax = axes[1, 0]
    voltage = log.extra["voltage"]
    for k, name in enumerate(log.actuator_names):
        style = "-" if name.endswith("swing") else "--"
        ax.plot(t, voltage[:, k], style, lw=0.9, color=LEG_COLORS.get(name[:2]), label=name)
    ax.set_ylim(-5, 230)
    ax.set_title("drive voltages (solid swing, dashed lift)", fontsize=9)
    ax.set_xlabel("time [ms]")
    ax.set_ylabel("[V]")
    ax.legend(fontsize=6, ncol=2)
    ax = axes[1, 1]
    feet = FeetInBodyFrame(q, rpy, log.extra["foot_positions"])
    for j, leg in enumerate(LEG_ORDER):
        x = feet[:, j, 0] - feet[0, j, 0]
        z = feet[:, j, 2] - feet[0, j, 2]
        ax.plot(x, z, color=LEG_COLORS[leg], lw=0.8, label=leg)
    ax.set_title("foot paths in the body frame (from home)", fontsize=9)
    ax.set_xlabel("x [mm]")
    ax.set_ylabel("z [mm]")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(fontsize=7)
    ax = axes[1, 2]
    residual = np.maximum(log.extra["loop_residual"], 1e-16)
    ax.semilogy(t, residual, color="tab:purple", lw=0.9)
    ax.axhline(1e-3, color="tab:red", ls="--", lw=0.8, label="1e-3 mm")
    ax.set_title("loop-closure residual max |c(q)|", fontsize=9)
    ax.set_xlabel("time [ms]")
    ax.set_ylabel("[mm]")
    ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def StickSegments(plant, context) -> list[tuple[np.ndarray, np.ndarray, str]]:
    """Line segments (world frame, mm) drawing HAMR's mechanism in the pose of `context`: the
    chassis outline, each link from its frame origin to the points it connects, and the legs.
    Returns (p0, p1, colour) triples."""
    from drakebots.hamr.model import JOINTS, LOOP_HINGES, FootPoint

    segments = []
    chassis = plant.GetBodyByName("chassis")
    X_WC = plant.EvalBodyPoseInWorld(context, chassis)
    outline = np.array([[19, 9.8, 0], [19, -9.8, 0], [-19, -9.8, 0], [-19, 9.8, 0], [19, 9.8, 0]])
    for a, b in zip(outline[:-1], outline[1:]):
        segments.append((X_WC @ a, X_WC @ b, "0.45"))
    points = {}
    for joint in JOINTS:
        points.setdefault(joint.parent, []).append(np.asarray(joint.origin, float))
    for hinge in LOOP_HINGES:
        points.setdefault(hinge.body_A, []).append(np.asarray(hinge.p_AP, float))
        points.setdefault(hinge.body_B, []).append(np.asarray(hinge.p_BQ, float))
    for joint in JOINTS:
        name = joint.child
        body = plant.GetBodyByName(name)
        X_WB = plant.EvalBodyPoseInWorld(context, body)
        ends = list(points.get(name, []))
        if name.endswith("L4"):
            ends.append(FootPoint(name[:2]))
        color = (
            "k" if name[3:] in ("S4", "L4") else ("tab:blue" if name[3] == "S" else "tab:orange")
        )
        for end in ends:
            segments.append((X_WB.translation(), X_WB @ end, color))
    return segments


def ModeScale(plant, context, q_equilibrium, shape, amplitude_mm: float) -> float:
    """The factor on `shape` that moves the farthest-moving point of the drawn mechanism (chassis
    outline, links, feet) by `amplitude_mm` (linearised)."""

    def Points(q):
        plant.SetPositions(context, q)
        return np.array([p for segment in StickSegments(plant, context) for p in segment[:2]])

    probe = 1e-4
    displacement = (Points(q_equilibrium + probe * shape) - Points(q_equilibrium)) / probe
    return amplitude_mm / max(float(np.max(np.linalg.norm(displacement, axis=1))), 1e-12)


def PlotModeShapes(
    plant,
    q_equilibrium,
    modes: list[tuple[str, float, np.ndarray]],
    *,
    amplitude_mm: float = 1.0,
    title: str = "",
) -> plt.Figure:
    """One row per mode: front (y-z) and side (x-z) views of the robot at q* ± the mode shape,
    scaled so that no point of the drawn mechanism moves more than `amplitude_mm`.

    Args:
        modes: (label, frequency Hz, shape (nq,)) triples.
    """
    context = plant.CreateDefaultContext()
    rows = max(1, len(modes))
    fig, axes = plt.subplots(rows, 2, figsize=(10, 2.9 * rows), squeeze=False)
    for r, (label, frequency, shape) in enumerate(modes):
        scale = ModeScale(plant, context, q_equilibrium, shape, amplitude_mm)
        for c, (view, (i, j)) in enumerate((("front (y-z)", (1, 2)), ("side (x-z)", (0, 2)))):
            ax = axes[r][c]
            for sign, alpha, style in ((0.0, 0.25, ":"), (+1.0, 1.0, "-"), (-1.0, 0.55, "--")):
                plant.SetPositions(context, q_equilibrium + sign * scale * shape)
                for p0, p1, color in StickSegments(plant, context):
                    ax.plot([p0[i], p1[i]], [p0[j], p1[j]], style, color=color, lw=0.9, alpha=alpha)
            ax.axhline(0.0, color="0.6", lw=0.8)
            ax.set_aspect("equal")
            ax.set_title(f"{label}, {frequency:.1f} Hz: {view}", fontsize=9)
            ax.tick_params(labelsize=7)
    fig.suptitle(title or "mode shapes (solid +, dashed -, dotted equilibrium)", fontsize=10)
    fig.tight_layout()
    return fig


def PlotModeFrequencies(results: dict, paper: dict, *, title: str = "") -> plt.Figure:
    """Body-mode frequencies of each analysed case against the paper's values.

    Args:
        results: case name -> {body motion label: frequency Hz}.
        paper: body motion label -> the paper's frequency, Hz.
    """
    motions = ["vertical (z)", "pitch", "roll", "surge (x)", "sway (y)", "yaw"]
    motions = [m for m in motions if any(m in r for r in results.values()) or m in paper]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.8 / max(1, len(results) + 1)
    x = np.arange(len(motions))
    for k, (case, values) in enumerate(results.items()):
        heights = [values.get(m, np.nan) for m in motions]
        bars = ax.bar(x + k * width, heights, width, label=case)
        for bar, h in zip(bars, heights):
            if np.isfinite(h):
                ax.text(
                    bar.get_x() + bar.get_width() / 2,
                    h,
                    f"{h:.0f}",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
    heights = [paper.get(m, np.nan) for m in motions]
    ax.bar(x + len(results) * width, heights, width, color="k", alpha=0.7, label="paper (III-A)")
    ax.set_xticks(x + 0.4 - width / 2)
    ax.set_xticklabels(motions)
    ax.set_ylabel("natural frequency [Hz]")
    ax.legend(fontsize=7)
    ax.set_title(title or "HAMR-VI body modes, standing", fontsize=10)
    fig.tight_layout()
    return fig
