#!/usr/bin/env python3
"""Reproduce the paper's HAMR-VI results (hamr-contact-implicit.txt, Sec. V): the nine optimized
gaits (2, 10, 30 Hz x Teflon, cardstock, 1200-grit sandpaper) and the vertical jump, optionally
tracked in simulation, with a results table like the paper's.

Each case is an ordinary `drakebots optimize` (and `drakebots track`) run writing its own results
folder under --out; finished cases are skipped on a re-run (delete a folder to redo it). The
table is written as results.md and results.json in --out.

    python scripts/reproduce_hamr.py                          # nine gaits + jump
    python scripts/reproduce_hamr.py --track                  # + tracking of 2 and 10 Hz cardstock
    python scripts/reproduce_hamr.py --track all              # + tracking of all nine gaits
    python scripts/reproduce_hamr.py --cases gait:10@cardstock,jump --solver ipopt

Paper figures quoted for comparison (Sec. V-VI): closed-loop experimental averages 9.77 mm/cycle
at 2 Hz, 8.98 mm/cycle at 10 Hz, 4.24 mm/cycle at 30 Hz; the fastest gait 10.87 mm/cycle
(10 Hz, cardstock); the optimizer's goal 10 mm/cycle; optimized trajectories' slip 0.10 +- 0.06
and closed-loop slip 0.24 +- 0.14; the jump 9.96 mm (experiments 9.65 +- 0.21 mm, goal 12 mm).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

FREQUENCIES = (2, 10, 30)
SURFACES = ("teflon", "cardstock", "sandpaper")
PAPER_CLOSED_LOOP = {2: 9.77, 10: 8.98, 30: 4.24}  # mm/cycle, average over surfaces (Sec. V-A)


def Cases(spec: str) -> list[str]:
    if spec == "all":
        return [f"gait:{f}@{s}" for f in FREQUENCIES for s in SURFACES] + ["jump"]
    return [c.strip() for c in spec.split(",") if c.strip()]


def Folder(out: Path, case: str) -> Path:
    return out / case.replace(":", "_").replace("@", "_")


def Command(
    case: str, folder: Path, solver: str, extra: list[str], gait_knots: int | None = None
) -> list[str]:
    if case == "jump":
        args = ["optimize", "hamr-jump", "--height", "12"]
    else:
        frequency, surface = case.split(":")[1].split("@")
        args = ["optimize", "hamr-gait", "--frequency", frequency, "--surface", surface]
        if gait_knots:
            args += ["--knots", str(gait_knots)]
    return [
        sys.executable,
        "-m",
        "drakebots",
        *args,
        "--solver",
        solver,
        "--out",
        str(folder),
        "--force",
        *extra,
    ]


def Run(command: list[str]) -> tuple[int, float]:
    start = time.perf_counter()
    print("  $ drakebots " + " ".join(command[3:]), flush=True)
    code = subprocess.call(command)
    return code, time.perf_counter() - start


def Row(case: str, folder: Path, tracked: Path | None) -> dict:
    summary_path = folder / "summary.json"
    if not summary_path.is_file():
        return {"case": case, "status": "no result"}
    s = json.loads(summary_path.read_text())
    row = {
        "case": case,
        "success": s.get("success"),
        "solver_status": s.get("solver_status"),
        "solve_time_s": s.get("solve_time_s"),
        "solve_cpu_time_s": s.get("solve_cpu_time_s"),
        "num_variables": s.get("num_variables"),
        "knots": (s.get("settings") or {}).get("num_knots"),
        "iterations": s.get("iterations"),
        "stages": s.get("stages"),
        "max_constraint_violation": s.get("max_constraint_violation"),
        "true_complementarity": s.get("max_complementarity_violation"),
        "max_dynamics_residual_N": s.get("max_dynamics_residual"),
        "max_loop_residual_mm": s.get("max_loop_residual_mm"),
    }
    if case == "jump":
        row["apex_height_mm"] = s.get("apex_height_mm")
        row["paper_mm"] = 9.96
    else:
        frequency = int(case.split(":")[1].split("@")[0])
        row["mm_per_cycle"] = s.get("velocity_mm_per_cycle")
        row["slip"] = s.get("slip")
        row["warm_start_mm_per_cycle"] = (s.get("warm_start") or {}).get("velocity_mm_per_cycle")
        row["paper_closed_loop_mean_mm"] = PAPER_CLOSED_LOOP[frequency]
    if tracked is not None and (tracked / "summary.json").is_file():
        t = json.loads((tracked / "summary.json").read_text())
        row["tracked_mm_per_cycle"] = t.get("velocity_mm_per_cycle")
        row["tracked_ratio"] = t.get("ratio_to_plan")
        row["tracked_slip"] = t.get("slip")
    return row


def Tracked(track: str | None, case: str) -> bool:
    """Whether `--track` asks for this case: the 2 and 10 Hz cardstock gaits, or every gait."""
    if track == "all":
        return case != "jump"
    return track == "cardstock" and case in ("gait:2@cardstock", "gait:10@cardstock")


def TrackedMeans(rows: list[dict]) -> str:
    """Per frequency, the mean tracked speed over the surfaces tracked, beside the paper's
    closed-loop experimental mean over its three surfaces (Sec. V-A, Fig. 7a)."""
    lines = []
    for frequency in FREQUENCIES:
        tracked = [
            r
            for r in rows
            if r["case"].startswith(f"gait:{frequency}@") and r.get("tracked_mm_per_cycle")
        ]
        if not tracked:
            continue
        mean = sum(r["tracked_mm_per_cycle"] for r in tracked) / len(tracked)
        planned = sum(r["mm_per_cycle"] for r in tracked) / len(tracked)
        lines.append(
            f"- {frequency} Hz: tracked {mean:.2f} mm/cycle over {len(tracked)} surface(s) "
            f"(planned {planned:.2f}, ratio {mean / planned:.2f}); the paper's closed-loop "
            f"experiments {PAPER_CLOSED_LOOP[frequency]:.2f}"
        )
    return ("\n" + "\n".join(lines) + "\n") if lines else ""


def Markdown(rows: list[dict]) -> str:
    def f(value, fmt):
        return "" if value is None else format(value, fmt)

    lines = [
        "| case | planned mm/cycle (apex mm) | warm start | slip | tracked mm/cycle (ratio) | "
        "true compl. | solve s (CPU s) | status | paper |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("status") == "no result":
            lines.append(f"| {r['case']} | | | | | | | no result | |")
            continue
        planned = r.get("mm_per_cycle", r.get("apex_height_mm"))
        tracked = ""
        if r.get("tracked_mm_per_cycle") is not None:
            tracked = f"{r['tracked_mm_per_cycle']:.2f} ({r['tracked_ratio']:.2f})"
            if r.get("tracked_slip") is not None:
                tracked += f", slip {r['tracked_slip']:.2f}"
        paper = r.get("paper_closed_loop_mean_mm", r.get("paper_mm"))
        lines.append(
            f"| {r['case']} | {f(planned, '.2f')} | {f(r.get('warm_start_mm_per_cycle'), '.2f')} | "
            f"{f(r.get('slip'), '.3f')} | {tracked} | {f(r.get('true_complementarity'), '.1e')} | "
            f"{f(r.get('solve_time_s'), '.0f')} ({f(r.get('solve_cpu_time_s'), '.0f')}) | "
            f"{'ok' if r.get('success') else (r.get('solver_status') or '')[:30]} | "
            f"{f(paper, '.2f')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="runs/reproduce_hamr")
    parser.add_argument("--cases", default="all", help="all, or e.g. gait:10@cardstock,jump")
    parser.add_argument(
        "--solver", default="auto", help="auto (default: the fast path), fast, snopt or ipopt"
    )
    parser.add_argument(
        "--track",
        nargs="?",
        const="cardstock",
        default=None,
        choices=("cardstock", "all"),
        help="track the 2 and 10 Hz cardstock gaits (the issue's targets; the default with "
        "--track) or all nine gaits (the paper's Fig. 7a), 10 strides each",
    )
    parser.add_argument(
        "--gait-knots",
        type=int,
        default=None,
        help="knots per gait stride (default: the optimize verb's, the authors' 51; 21 solves "
        "about 2.5x faster)",
    )
    parser.add_argument("--redo", action="store_true", help="rerun finished cases")
    parser.add_argument(
        "extra", nargs=argparse.REMAINDER, help="more `drakebots optimize` options after --"
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = [a for a in args.extra if a != "--"]
    rows = []
    for case in Cases(args.cases):
        folder = Folder(out, case)
        if args.redo or not (folder / "summary.json").is_file():
            print(f"[{case}]", flush=True)
            Run(Command(case, folder, args.solver, extra, args.gait_knots))
        tracked = None
        if Tracked(args.track, case):
            tracked = folder.with_name(folder.name + "_tracked")
            if (folder / "solution.npz").is_file() and (
                args.redo or not (tracked / "summary.json").is_file()
            ):
                Run(
                    [
                        sys.executable,
                        "-m",
                        "drakebots",
                        "track",
                        str(folder),
                        "--cycles",
                        "10",
                        "--out",
                        str(tracked),
                        "--force",
                        "--quiet",
                    ]
                )
        rows.append(Row(case, folder, tracked))
    table = Markdown(rows) + TrackedMeans(rows)
    (out / "results.md").write_text(table)
    (out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n" + table)
    print(f"wrote {out / 'results.md'} and {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
