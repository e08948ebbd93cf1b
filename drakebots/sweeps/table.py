"""The table of a sweep: one row per case, written as CSV and Parquet, and printed as text.

A row holds the case's name, status, exit code, time, worker and reason, its varied parameters
(columns named after the sweep file's keys) and the figures of merit from its summary.json
(scalars, nested keys joined with dots: `figures.base_height_end`, `solver_status`).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from drakebots.files import WriteWhole

# Row keys that come first in the table, in this order.
HEAD_COLUMNS = [
    "case",
    "status",
    "exit_code",
    "seconds",
    "cpu_seconds",
    "worker",
    "host",
    "finished",
    "reason",
]
# Row keys that are kept in the journal and markers but not in the table.
_NOT_IN_TABLE = {"params", "figures", "argv", "traceback", "pid", "started", "event"}
# summary.json keys that are not figures of merit (the command, inputs and versions are known).
_NOT_FIGURES = {"verb", "command", "inputs", "versions", "created", "units", "reason"}


def _IsScalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def FlattenSummary(summary: dict, prefix: str = "") -> dict:
    """The scalar figures of a summary.json, nested keys joined with dots (lists are left out)."""
    flat = {}
    for key, value in summary.items():
        if not prefix and key in _NOT_FIGURES:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(FlattenSummary(value, prefix=f"{name}."))
        elif _IsScalar(value):
            flat[name] = value
    return flat


def TableRows(rows: list[dict]) -> tuple[list[str], list[dict]]:
    """Column names and flat rows: head columns, then parameters, bookkeeping, figures.

    A figure whose name is also a parameter's or a head column's (a summary's `iterations`
    beside a swept `--iterations`) is named `summary.<name>`, so a column never mixes the two.
    """
    taken = set(HEAD_COLUMNS) | set(_NOT_IN_TABLE)
    param_columns: list[str] = []
    for row in rows:
        for key in row.get("params") or {}:
            if key not in param_columns:
                param_columns.append(key)
    taken |= set(param_columns)
    for row in rows:
        taken |= {k for k, v in row.items() if _IsScalar(v)}
    figure_columns: list[str] = []
    flat_rows = []
    for row in rows:
        flat = {k: row.get(k) for k in HEAD_COLUMNS}
        for key, value in (row.get("params") or {}).items():
            flat[key] = value
        for key, value in row.items():
            if key not in flat and key not in _NOT_IN_TABLE and _IsScalar(value):
                flat[key] = value
        for key, value in (row.get("figures") or {}).items():
            column = f"summary.{key}" if key in taken else key
            if column not in figure_columns:
                figure_columns.append(column)
            flat[column] = value
        flat_rows.append(flat)
    extra = []
    for flat in flat_rows:
        for key in flat:
            if key not in HEAD_COLUMNS + param_columns + figure_columns + extra:
                extra.append(key)
    columns = HEAD_COLUMNS + param_columns + extra + figure_columns
    return columns, flat_rows


def _ColumnValues(values: list):
    """A column in one type: bool, int, float or str (what Parquet needs), None for missing."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return values
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return values
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return [None if v is None else float(v) for v in values]
    return [None if v is None else str(v) for v in values]


def WriteTable(rows: list[dict], folder: Path) -> tuple[Path, Path]:
    """results.csv and results.parquet in `folder`, each written to a temporary name and renamed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns, flat_rows = TableRows(rows)
    data = {c: _ColumnValues([r.get(c) for r in flat_rows]) for c in columns}

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(columns)
    for i in range(len(flat_rows)):
        writer.writerow(["" if data[c][i] is None else data[c][i] for c in columns])
    csv_path = folder / "results.csv"
    WriteWhole(csv_path, text.getvalue().encode())

    table = pa.table({c: pa.array(data[c]) for c in columns})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    parquet_path = folder / "results.parquet"
    WriteWhole(parquet_path, sink.getvalue().to_pybytes())
    return csv_path, parquet_path


def _Cell(value, width: int = 12) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.4g}"
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _Number(value) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _MostVarying(rows: list[dict], params: list[str]) -> list[str]:
    """Figure names ordered by how much they vary between cases (relative spread), leaving out
    timings and those that only repeat a parameter; these say the most about a sweep."""
    names: list[str] = []
    for row in rows:
        for key, value in (row.get("figures") or {}).items():
            if key not in names and _Number(value) is not None:
                if "time" not in key and "per_" not in key:
                    names.append(key)
    ranked = []
    for order, name in enumerate(names):
        pairs = [(_Number((r.get("figures") or {}).get(name)), r) for r in rows]
        pairs = [(v, r) for v, r in pairs if v is not None]
        values = [v for v, _ in pairs]
        if len(values) < 2:
            continue
        repeats = any(
            all(
                _Number((r.get("params") or {}).get(key)) is not None
                and math.isclose(v, _Number(r["params"][key]), rel_tol=1e-9, abs_tol=1e-12)
                for v, r in pairs
            )
            for key in params
        )
        scale = max(abs(max(values)), abs(min(values)))
        spread = (max(values) - min(values)) / scale if scale > 0 else 0.0
        if not repeats and spread > 1e-3:
            ranked.append((-spread, order, name))
    return [name for _, _, name in sorted(ranked)]


def _ParamNames(rows: list[dict]) -> list[str]:
    params: list[str] = []
    for row in rows:
        for key in row.get("params") or {}:
            if key not in params:
                params.append(key)
    return params


def ChooseFigures(rows: list[dict], count: int, preferred=()) -> list[str]:
    """The `count` figures to show: the `preferred` ones that some case reports, in their order,
    then those that vary most between cases; two with the same values count once."""
    figures: list[str] = []
    seen: set[tuple] = set()
    reported = [
        name
        for name in preferred
        if any(_Number((r.get("figures") or {}).get(name)) is not None for r in rows)
    ]
    for name in reported + _MostVarying(rows, _ParamNames(rows)):
        values = tuple(
            f"{v:.9g}" if (v := _Number((r.get("figures") or {}).get(name))) is not None else None
            for r in rows
        )
        if name not in figures and values not in seen and len(figures) < count:
            figures.append(name)
            seen.add(values)
    return figures


def WriteFiguresPlot(rows: list[dict], folder: Path, title: str, preferred=()) -> Path | None:
    """figures.png: the sweep's own figures, then the most varying ones, over the parameters
    (None with < 2 results)."""
    from drakebots.sweeps.plots import PlotSweepFigures

    rows = [r for r in rows if r.get("status") in ("done", "failed") and r.get("figures")]
    names = ChooseFigures(rows, 4, preferred)
    if len(rows) < 2 or not names:
        return None
    params = {k: [(r.get("params") or {}).get(k) for r in rows] for k in _ParamNames(rows)}
    figure = PlotSweepFigures(
        [r["case"] for r in rows],
        params,
        {name: [r["figures"].get(name) for r in rows] for name in names},
        title=title,
    )
    import matplotlib.pyplot as plt

    path = folder / "figures.png"
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=100)
    plt.close(figure)
    WriteWhole(path, image.getvalue())
    return path


def FormatTable(rows: list[dict], *, max_figures: int = 4, preferred=()) -> str:
    """A text table for the terminal: case, status, time, worker, parameters, and the sweep's
    own figures then those that vary most between cases."""
    params = _ParamNames(rows)
    figures = ChooseFigures(rows, max_figures, preferred)
    header = ["case", "status", "exit", "s", "worker"] + params + figures
    body = []
    for row in rows:
        body.append(
            [
                _Cell(row.get("case"), 48),
                _Cell(row.get("status")),
                _Cell(row.get("exit_code")),
                _Cell(row.get("seconds")),
                _Cell(row.get("worker"), 22),
            ]
            + [_Cell((row.get("params") or {}).get(k)) for k in params]
            + [_Cell((row.get("figures") or {}).get(k)) for k in figures]
        )
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in body]
    return "\n".join(lines)
