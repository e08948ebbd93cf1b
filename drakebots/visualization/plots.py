"""Matplotlib figures for results folders. Functions return a Figure; the caller saves it."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def PlotTorquesAgainstLimits(
    times, actuation, effort_limits, names, *, title="", unit="N*m", time_unit="s"
):
    """One panel per actuator: applied effort and its ±limit band (as the paper's Fig. 16)."""
    actuation = np.asarray(actuation)
    count = actuation.shape[1]
    columns = 4 if count > 6 else max(1, min(count, 3))
    rows = int(np.ceil(count / columns))
    fig, axes = plt.subplots(
        rows, columns, figsize=(3.2 * columns, 2.1 * rows), sharex=True, squeeze=False
    )
    for k in range(rows * columns):
        ax = axes[k // columns][k % columns]
        if k >= count:
            ax.axis("off")
            continue
        limit = float(effort_limits[k])
        ax.plot(times, actuation[:, k], color="tab:blue", lw=1.0)
        if np.isfinite(limit):
            ax.axhspan(-limit, limit, color="tab:green", alpha=0.08)
            ax.axhline(limit, color="tab:red", lw=0.8, ls="--")
            ax.axhline(-limit, color="tab:red", lw=0.8, ls="--")
            peak = np.max(np.abs(actuation[:, k])) / limit if limit > 0 else np.nan
            ax.set_title(f"{names[k]}  (peak {peak:.0%} of limit)", fontsize=7.5)
            ax.set_ylim(-1.15 * limit, 1.15 * limit)
        else:  # No effort limit in the model: the axis follows the effort alone.
            ax.set_title(f"{names[k]}  (no effort limit)", fontsize=7.5)
        ax.tick_params(labelsize=7)
        if k % columns == 0:
            ax.set_ylabel(unit, fontsize=7.5)
        if k // columns == rows - 1:
            ax.set_xlabel(f"time [{time_unit}]", fontsize=7.5)
    fig.suptitle(title or "joint torques against motor limits", fontsize=10)
    fig.tight_layout()
    return fig


def PlotBaseHeight(times, base_height, *, nominal=None, unit="m", time_unit="s", title=""):
    """Base height over time, with the nominal standing height and a ±10 % band."""
    fig, ax = plt.subplots(figsize=(6, 2.6))
    ax.plot(times, base_height, lw=1.2, label="base height")
    if nominal is not None:
        ax.axhline(nominal, color="k", lw=0.8, ls=":", label="nominal")
        ax.axhspan(0.9 * nominal, 1.1 * nominal, color="tab:green", alpha=0.08, label="±10 %")
    ax.set_xlabel(f"time [{time_unit}]")
    ax.set_ylabel(f"height [{unit}]")
    ax.legend(fontsize=7, loc="best")
    ax.set_title(title or "base height")
    fig.tight_layout()
    return fig
