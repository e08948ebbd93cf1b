"""Plots of an optimized (or tracked) legged trajectory: feet in the body frame, leg heights and
contact timing, inputs, contact forces and the body's pose (hamr-contact-implicit.txt, Fig. 7-9).

Functions take arrays (times, positions, forces) and return matplotlib Figures.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

LEG_COLORS = {"FL": "#1f77b4", "RL": "#ff7f0e", "FR": "#2ca02c", "RR": "#d62728"}


def _Color(name: str, index: int) -> str:
    return LEG_COLORS.get(name, f"C{index}")


def PlotFeetInBodyFrame(
    feet_body: np.ndarray,
    in_contact: np.ndarray,
    legs: list[str],
    *,
    reference: np.ndarray | None = None,
    unit: str = "mm",
    title: str = "",
) -> plt.Figure:
    """Each foot's path in the body x-z plane (Fig. 7c): knots in contact drawn filled.

    Args:
        feet_body: (T, feet, 3) foot positions in the body frame.
        in_contact: (T, feet) booleans.
        reference: optional (T', feet, 3) second trajectory (e.g. the plan under a tracked run).
    """
    fig, axes = plt.subplots(1, len(legs), figsize=(3.2 * len(legs), 3.4), squeeze=False)
    for i, leg in enumerate(legs):
        ax = axes[0, i]
        color = _Color(leg, i)
        if reference is not None:
            ax.plot(reference[:, i, 0], reference[:, i, 2], color="0.6", lw=2.5, label="plan")
        ax.plot(feet_body[:, i, 0], feet_body[:, i, 2], color=color, lw=1.2, label="trajectory")
        touching = in_contact[:, i]
        ax.plot(
            feet_body[touching, i, 0],
            feet_body[touching, i, 2],
            "o",
            color=color,
            ms=3,
            label="in contact",
        )
        ax.set_title(leg)
        ax.set_xlabel(f"x in body frame ({unit})")
        if i == 0:
            ax.set_ylabel(f"z in body frame ({unit})")
        ax.grid(alpha=0.3)
        ax.set_aspect("equal", adjustable="datalim")
    axes[0, 0].legend(fontsize=7, loc="best")
    fig.suptitle(title or "foot trajectories in the body frame")
    fig.tight_layout()
    return fig


def PlotLegHeights(
    times: np.ndarray,
    heights: np.ndarray,
    legs: list[str],
    *,
    in_contact: np.ndarray | None = None,
    reference: tuple[np.ndarray, np.ndarray] | None = None,
    unit: str = "mm",
    time_unit: str = "ms",
    title: str = "",
) -> plt.Figure:
    """Foot heights above the ground with the contact timing as bars below (Fig. 7b)."""
    fig, (ax, bars) = plt.subplots(
        2, 1, figsize=(8, 4.8), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    for i, leg in enumerate(legs):
        color = _Color(leg, i)
        ax.plot(times, heights[:, i], color=color, label=leg)
        if reference is not None:
            ax.plot(reference[0], reference[1][:, i], color=color, ls="--", lw=0.9, alpha=0.7)
        if in_contact is not None:
            touching = in_contact[:, i].astype(float)
            edges = np.diff(np.concatenate([[0.0], touching, [0.0]]))
            starts, ends = np.flatnonzero(edges > 0), np.flatnonzero(edges < 0)
            for a, b in zip(starts, ends, strict=True):
                t0 = times[a]
                t1 = times[min(b, len(times) - 1)]
                bars.broken_barh([(t0, max(t1 - t0, 1e-9))], (i - 0.4, 0.8), color=color)
    ax.set_ylabel(f"foot height ({unit})")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.legend(ncol=len(legs), fontsize=8)
    ax.grid(alpha=0.3)
    if reference is not None:
        ax.set_title("solid: this run, dashed: plan", fontsize=9)
    bars.set_yticks(range(len(legs)), legs)
    bars.set_ylim(-0.6, len(legs) - 0.4)
    bars.set_xlabel(f"time ({time_unit})")
    bars.set_ylabel("contact")
    bars.grid(alpha=0.3, axis="x")
    fig.suptitle(title or "leg heights and contact timing")
    fig.tight_layout()
    return fig


def PlotInputs(
    times: np.ndarray,
    inputs: np.ndarray,
    names: list[str],
    *,
    bounds: tuple[float, float] | None = None,
    unit: str = "V",
    time_unit: str = "ms",
    title: str = "",
) -> plt.Figure:
    """Inputs held over each interval, as steps, with their bounds."""
    groups = sorted({name.split("_")[-1] for name in names})
    fig, axes = plt.subplots(
        len(groups), 1, figsize=(8, 2.6 * len(groups)), sharex=True, squeeze=False
    )
    for g, group in enumerate(groups):
        ax = axes[g, 0]
        for i, name in enumerate(names):
            if name.split("_")[-1] != group:
                continue
            leg = name.split("_")[0]
            ax.step(
                times,
                np.append(inputs[:, i], inputs[-1, i]),
                where="post",
                color=_Color(leg, i),
                label=name,
            )
        if bounds is not None:
            for b in bounds:
                ax.axhline(b, color="k", ls=":", lw=0.8)
        ax.set_ylabel(f"{group} ({unit})")
        ax.legend(fontsize=7, ncol=4)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel(f"time ({time_unit})")
    fig.suptitle(title or "inputs")
    fig.tight_layout()
    return fig


def PlotContactForces(
    times: np.ndarray,
    forces: np.ndarray,
    legs: list[str],
    *,
    friction: float | None = None,
    weight: float | None = None,
    unit: str = "N",
    time_unit: str = "ms",
    title: str = "",
) -> plt.Figure:
    """Normal and tangential contact force of each foot (forces (T, feet, 3), world frame)."""
    fig, (ax_n, ax_t) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    for i, leg in enumerate(legs):
        color = _Color(leg, i)
        ax_n.plot(times, forces[:, i, 2], color=color, label=leg)
        tangential = np.linalg.norm(forces[:, i, :2], axis=1)
        ax_t.plot(times, tangential, color=color, label=leg)
        if friction is not None:
            ax_t.plot(times, friction * forces[:, i, 2], color=color, ls=":", lw=0.8)
    if weight is not None:
        ax_n.axhline(weight, color="k", ls="--", lw=0.8, label="weight")
        ax_n.plot(times, forces[:, :, 2].sum(axis=1), color="k", lw=0.8, label="sum")
    ax_n.set_ylabel(f"normal force ({unit})")
    ax_t.set_ylabel(f"friction force ({unit})")
    if friction is not None:
        ax_t.set_title(f"dotted: mu x normal force (mu = {friction:g})", fontsize=9)
    ax_t.set_xlabel(f"time ({time_unit})")
    for ax in (ax_n, ax_t):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=6)
    fig.suptitle(title or "contact forces")
    fig.tight_layout()
    return fig


def PlotBodyPose(
    times: np.ndarray,
    position: np.ndarray,
    rpy: np.ndarray,
    *,
    reference: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    unit: str = "mm",
    time_unit: str = "ms",
    title: str = "",
) -> plt.Figure:
    """Body position and roll-pitch-yaw against time (Figs. 8 and 9)."""
    fig, axes = plt.subplots(2, 3, figsize=(11, 5), sharex=True)
    labels = ["x", "y", "z", "roll", "pitch", "yaw"]
    for j in range(6):
        ax = axes[j // 3, j % 3]
        values = position[:, j] if j < 3 else np.degrees(rpy[:, j - 3])
        ax.plot(times, values, color="C0", label="trajectory")
        if reference is not None:
            ref = reference[1][:, j] if j < 3 else np.degrees(reference[2][:, j - 3])
            ax.plot(reference[0], ref, color="C1", ls="--", label="plan")
        ax.set_title(labels[j])
        ax.set_ylabel(unit if j < 3 else "deg")
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel(f"time ({time_unit})")
    if reference is not None:
        axes[0, 0].legend(fontsize=7)
    fig.suptitle(title or "body pose")
    fig.tight_layout()
    return fig
