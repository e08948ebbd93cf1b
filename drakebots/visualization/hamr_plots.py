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
