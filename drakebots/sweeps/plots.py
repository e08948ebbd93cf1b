"""Plots of a sweep's figures of merit over its varied parameters (matplotlib, no files).

A grid over two parameters shows each figure as a heat map with the values written in the cells
(e.g. the gecko's displacement per cycle over q1 x q2); over one parameter as a line; anything
else (listed cases, three or more parameters) as one bar per case.
"""

import math

import numpy as np


def _IsNumber(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _Sorted(values: list) -> list:
    unique = list(dict.fromkeys(values))
    if all(_IsNumber(v) for v in unique):
        return sorted(unique)
    return unique


def PlotSweepFigures(
    cases: list[str],
    params: dict[str, list],
    figures: dict[str, list],
    *,
    title: str = "",
):
    """One panel per figure of merit over the sweep's parameters.

    Args:
        cases: case names, one per row.
        params: parameter name -> its value in each row.
        figures: figure name -> its value in each row (None where a case has no value).
        title: the figure's title.

    Returns:
        A matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    names = list(figures)
    keys = [k for k, values in params.items() if len(set(map(str, values))) > 1]
    columns = min(2, max(1, len(names)))
    rows = max(1, math.ceil(len(names) / columns))
    if len(keys) == 2:
        size = (6.2 * columns, 4.6 * rows)
    else:
        size = (6.2 * columns, 3.8 * rows)
    figure, axes = plt.subplots(rows, columns, figsize=size, squeeze=False)
    for index, name in enumerate(names):
        ax = axes[index // columns][index % columns]
        values = [v if _IsNumber(v) else np.nan for v in figures[name]]
        if len(keys) == 2:
            _HeatMap(ax, params[keys[0]], params[keys[1]], values, keys, name)
        elif len(keys) == 1 and all(_IsNumber(v) for v in params[keys[0]]):
            order = np.argsort(params[keys[0]])
            ax.plot(np.asarray(params[keys[0]])[order], np.asarray(values)[order], "o-")
            ax.set_xlabel(keys[0])
            ax.set_ylabel(name.removeprefix("figures."))
            ax.grid(True, alpha=0.3)
        else:
            ax.bar(range(len(values)), values)
            ax.set_xticks(range(len(values)))
            ax.set_xticklabels(cases, rotation=60, ha="right", fontsize=7)
            ax.set_ylabel(name.removeprefix("figures."))
        ax.set_title(name.removeprefix("figures."), fontsize=10)
    for index in range(len(names), rows * columns):
        axes[index // columns][index % columns].axis("off")
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure


def _HeatMap(ax, x_values, y_values, values, keys, name) -> None:
    xs, ys = _Sorted(list(x_values)), _Sorted(list(y_values))
    grid = np.full((len(ys), len(xs)), np.nan)
    for x, y, value in zip(x_values, y_values, values):
        grid[ys.index(y), xs.index(x)] = value
    finite = grid[np.isfinite(grid)]
    # A figure that changes sign is centred on zero (red one way, blue the other).
    if finite.size and finite.min() < 0 < finite.max():
        limit = np.abs(finite).max()
        image = ax.imshow(
            grid, origin="lower", cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto"
        )
    else:
        image = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto")
    ax.figure.colorbar(image, ax=ax, shrink=0.85)
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels([str(y) for y in ys])
    ax.set_xlabel(keys[0])
    ax.set_ylabel(keys[1])
    if grid.size <= 64:
        for (i, j), value in np.ndenumerate(grid):
            if np.isfinite(value):
                red, green, blue, _ = image.cmap(image.norm(value))
                dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
                ax.text(
                    j,
                    i,
                    f"{value:.3g}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                )
