#!/usr/bin/env python3
"""Regenerate a reproduction report's table (docs/reproductions/PAPER.md) from fresh runs.

Each row of a report's "Results" table (the paper's value, drakebots' value, the command, whether
the comparison is like for like) is a row here. A row that a fast setting can measure calls the
family's Python workflows (drakebots.hamr, drakebots.skinned, drakebots.gecko, drakebots.voxel)
and prints what they return; a row that only `--full` measures, or that has nothing to run (a
hardware experiment, an input that is not public), prints the report's last measured value with
its source and date, labelled as such. Nothing printed under "ours (fresh)" is copied from a
report. The table is printed and written as results.md and results.json under --out.

    python scripts/reproduce.py --paper voxel              # fast setting (~1 min)
    python scripts/reproduce.py --paper gecko              # fast setting (~1 min)
    python scripts/reproduce.py --paper hamr               # fast setting (a 21-knot gait, its
                                                           # tracking, the jump, the modes)
    python scripts/reproduce.py --paper skinned            # fast setting (skeleton designs)
    python scripts/reproduce.py --paper hamr --full        # + the nine 51-knot gaits, tracked
    python scripts/reproduce.py --paper hamr --full --cases gait:10@cardstock,jump --track
    python scripts/reproduce.py --list                     # every row, what runs it (no run)
    python scripts/reproduce.py --dry-run                  # checks every row and command

The HAMR-VI full run is what scripts/reproduce_hamr.py did (it was folded in here): every case an
`OptimizeGait`/`OptimizeJump` call writing its own results folder under --out, finished cases
skipped on a re-run (--redo to redo), `--track` tracks the 2 and 10 Hz cardstock gaits (`--track
all`: all nine, the paper's Fig. 7a), `--gait-knots 21` solves about 2.5x faster than the authors'
51, and its own table (results_gaits.md) sits beside the report's.

Paper values quoted by the HAMR-VI table (Sec. V-VI): closed-loop experimental averages 9.77
mm/cycle at 2 Hz, 8.98 mm/cycle at 10 Hz, 4.24 mm/cycle at 30 Hz; the fastest gait 10.87
mm/cycle (10 Hz, cardstock); the optimizer's goal 10 mm/cycle; optimized trajectories' slip
0.10 +- 0.06 and closed-loop slip 0.24 +- 0.14; the jump 9.96 mm (goal 12 mm).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "docs" / "reproductions"
PAPERS = ("hamr", "skinned", "gecko", "voxel")

FREQUENCIES = (2, 10, 30)
SURFACES = ("teflon", "cardstock", "sandpaper")
PAPER_CLOSED_LOOP = {2: 9.77, 10: 8.98, 30: 4.24}  # mm/cycle, average over surfaces (Sec. V-A)


# ---------------------------------------------------------------------------- the rows
@dataclasses.dataclass
class Row:
    """One result of a paper, as its report numbers it.

    Attributes:
        number: the row's number in the report's Results table.
        command: the command that gives the fresh value (what `fast` or `full` runs, as a
            `drakebots` command line, a `python scripts/...` line or a pytest node), or "" when
            nothing runs it.
        fast: Runs -> the fresh value as text, measured in the fast setting (None: not in it).
        full: the same, measured only with --full (None: not measured by this script); with
            --full it replaces `fast`.
        full_command: the command of `full` when it differs from `command`.
    """

    number: int
    command: str = ""
    fast: Callable | None = None
    full: Callable | None = None
    full_command: str = ""

    def Command(self, full: bool) -> str:
        """The command behind the value printed (--full: the full run's, when it has one)."""
        if full and self.full:
            return self.full_command or self.command
        return self.command if (self.fast or self.full) else ""

    @property
    def mode(self) -> str:
        return "fast" if self.fast else "full" if self.full else "report"


def _F(value, fmt: str = ".2f") -> str:
    return "n/a" if value is None else format(value, fmt)


class Runs:
    """The fresh runs of one invocation, each computed once (several rows read one run) and timed.

    Attributes:
        out: the folder results are written under.
        seconds: run name -> wall seconds it took.
    """

    def __init__(self, out: Path, options: argparse.Namespace | None = None):
        self.out = out
        self.options = options
        self.seconds: dict[str, float] = {}
        self._cache: dict = {}

    def Once(self, name: str, make: Callable):
        """`make()` the first time `name` is asked for, its value after."""
        if name not in self._cache:
            print(f"  running {name} ...", flush=True)
            start = time.perf_counter()
            self._cache[name] = make()
            self.seconds[name] = time.perf_counter() - start
            print(f"  ... {name}: {self.seconds[name]:.1f} s", flush=True)
        return self._cache[name]


# ---------------------------------------------------------------------------- HAMR-VI
HAMR_FAST_GAIT = dict(frequency=10.0, surface="cardstock", knots=21)
HAMR_FAST_TRACK_CYCLES = 10


def _HamrGait(runs: Runs):
    from drakebots.hamr import GaitConfig, OptimizeGait

    def Make():
        result = OptimizeGait(GaitConfig(**HAMR_FAST_GAIT))
        result.Save(runs.out / "hamr_gait10_cardstock_21", force=True)
        return result

    return runs.Once("OptimizeGait(10 Hz, cardstock, 21 knots)", Make)


def _HamrTrack(runs: Runs):
    from drakebots.hamr import Track, TrackConfig
    from drakebots.hamr.tracking import TrackingConfig

    _HamrGait(runs)
    plan = runs.out / "hamr_gait10_cardstock_21"
    return runs.Once(
        f"Track({HAMR_FAST_TRACK_CYCLES} strides)",
        lambda: Track(
            TrackConfig(plan=str(plan), tracking=TrackingConfig(cycles=HAMR_FAST_TRACK_CYCLES))
        ),
    )


def _HamrJump(runs: Runs):
    from drakebots.hamr import JumpConfig, OptimizeJump

    return runs.Once("OptimizeJump(12 mm, 31 knots)", lambda: OptimizeJump(JumpConfig()))


def HamrSize(runs: Runs) -> str:
    from drakebots.robots import GetRobot
    from drakebots.robots.base import DescribeRobot

    facts = runs.Once("DescribeRobot(hamr_vi)", lambda: DescribeRobot(GetRobot("hamr_vi")))
    return (
        f"{facts['num_positions']} coordinates, {facts['num_positions'] + facts['num_velocities']}"
        f" states, {facts['num_loop_constraints']} position constraints, "
        f"{facts['num_actuators']} inputs; {facts['total_mass']:.3f} g"
    )


def HamrFriction(runs: Runs) -> str:
    from drakebots.hamr.model import SURFACE_FRICTION

    return "inputs (the paper's means): " + ", ".join(
        f"{s} {mu:.2f}" for s, mu in SURFACE_FRICTION.items()
    )


def HamrModes(runs: Runs) -> str:
    from drakebots.hamr import Modes, ModesConfig

    figures = runs.Once("Modes()", lambda: Modes(ModesConfig())).figures
    return "feet sliding: " + "; ".join(
        f"{mode} {c['model_hz']:.1f} Hz (lift springs x 0.1: {c['model_hz_lift_x0.1']:.1f})"
        for mode, c in figures["paper_comparison"].items()
    )


def _Join(values, unit: str = "") -> str:
    """'name value unit, ...' of a mapping (nested: its first level, each with its own)."""
    if isinstance(values, dict):
        parts = []
        for key, value in values.items():
            if isinstance(value, dict):
                parts.append(f"{key}: {_Join(value, unit)}")
            elif isinstance(value, (list, tuple)):
                parts.append(f"{key} " + "/".join(_F(v, ".1f") for v in value) + f" {unit}")
            else:
                parts.append(f"{key} {_F(value, '.1f')} {unit}".rstrip())
        return "; ".join(parts)
    return str(values)


def HamrPlanned(runs: Runs) -> str:
    f = _HamrGait(runs).figures
    return (
        f"10 Hz cardstock, 21 knots: {_F(f.get('velocity_mm_per_cycle'))} mm/cycle planned, true "
        f"complementarity {_F(f.get('max_complementarity_violation'), '.1e')}"
    )


def HamrTracked10(runs: Runs) -> str:
    t = _HamrTrack(runs).figures
    g = _HamrGait(runs).figures
    return (
        f"21-knot plan tracked {HAMR_FAST_TRACK_CYCLES} strides: "
        f"{_F(t.get('velocity_mm_per_cycle'))} of {_F(g.get('velocity_mm_per_cycle'))} mm/cycle "
        f"planned (ratio {_F(t.get('ratio_to_plan'))})"
    )


def HamrLegs(runs: Runs) -> str:
    t = _HamrTrack(runs).figures
    return (
        f"10 Hz cardstock tracked: legs within {_F(t.get('leg_tracking_rms_mm'))} mm RMS of the "
        f"plan, estimator {_F(t.get('estimation_rms_mm'), '.3f')} mm RMS"
    )


def HamrBody(runs: Runs) -> str:
    t = _HamrTrack(runs).figures
    return (
        f"10 Hz cardstock tracked: yaw {_F(t.get('yaw_change_deg'), '.1f')} deg over "
        f"{HAMR_FAST_TRACK_CYCLES} strides, distance ratio {_F(t.get('ratio_to_plan'))}"
    )


TROT_CASES = ((2, 90.0), (10, 90.0), (30, 45.0))  # Hz, V (the report's drives)


def HamrTrot(runs: Runs, surfaces=("cardstock",)) -> str:
    import drakebots

    parts = []
    for surface in surfaces:
        for frequency, volts in TROT_CASES:
            figures = runs.Once(
                f"Simulate(hamr_vi, trot {frequency} Hz {volts:.0f} V, {surface}, 1.5 s)",
                lambda f=frequency, v=volts, s=surface: drakebots.Simulate(
                    drakebots.SimulateConfig(
                        robot="hamr_vi",
                        gait="trot",
                        frequency=f,
                        surface=s,
                        voltage_amplitude=v,
                        duration=1.5,
                    )
                ),
            ).figures
            parts.append(f"{frequency} Hz {surface} {_F(figures.get('mm_per_cycle'), '.1f')}")
    return "open-loop trot (90 V; 45 V at 30 Hz), mm/cycle: " + ", ".join(parts)


def HamrTrotAll(runs: Runs) -> str:
    return HamrTrot(runs, SURFACES)


def HamrJump(runs: Runs) -> str:
    f = _HamrJump(runs).figures
    return (
        f"31-knot plan: apex {_F(f.get('apex_height_mm'))} mm above standing "
        f"({'accepted' if _HamrJump(runs).success else 'not accepted'})"
    )


def HamrPlanSlip(runs: Runs) -> str:
    return f"10 Hz cardstock 21-knot plan: slip {_F(_HamrGait(runs).figures.get('slip'))}"


def HamrTrackedSlip(runs: Runs) -> str:
    return f"10 Hz cardstock tracked: slip {_F(_HamrTrack(runs).figures.get('slip'))}"


def HamrSolveTime(runs: Runs) -> str:
    g, j = _HamrGait(runs).figures, _HamrJump(runs).figures
    return (
        f"10 Hz cardstock 21 knots: {_F(g.get('solve_time_s'), '.1f')} s wall "
        f"({_F(g.get('solve_cpu_time_s'), '.1f')} s CPU); jump {_F(j.get('solve_time_s'), '.1f')}"
        " s wall"
    )


# The nine gaits and the jump (--full; what scripts/reproduce_hamr.py ran).
def Cases(spec: str) -> list[str]:
    if spec == "all":
        return [f"gait:{f}@{s}" for f in FREQUENCIES for s in SURFACES] + ["jump"]
    return [c.strip() for c in spec.split(",") if c.strip()]


def Folder(out: Path, case: str) -> Path:
    return out / case.replace(":", "_").replace("@", "_")


def SolveCase(case: str, folder: Path, solver: str, gait_knots: int | None = None) -> None:
    """One case by the Python workflows, saved as `drakebots optimize` would save it."""
    from drakebots.hamr import GaitConfig, JumpConfig, OptimizeGait, OptimizeJump
    from drakebots.optimization.contact_implicit import SolverConfig

    print(f"[{case}]", flush=True)
    if case == "jump":
        result = OptimizeJump(JumpConfig(height=12, solver=SolverConfig(solver=solver)))
    else:
        frequency, surface = case.split(":")[1].split("@")
        config = GaitConfig(
            frequency=float(frequency), surface=surface, solver=SolverConfig(solver=solver)
        )
        if gait_knots:
            config.knots = gait_knots
        result = OptimizeGait(config)
    result.Save(folder, force=True)


def TrackCase(folder: Path, tracked: Path) -> None:
    from drakebots.hamr import Track, TrackConfig
    from drakebots.hamr.tracking import TrackingConfig

    Track(TrackConfig(plan=str(folder), tracking=TrackingConfig(cycles=10))).Save(
        tracked, force=True
    )


def Row_(case: str, folder: Path, tracked: Path | None) -> dict:
    """A case's row of the gaits table, from its results folder's summary.json."""
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


def GaitsMarkdown(rows: list[dict]) -> str:
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


def HamrGaits(runs: Runs) -> list[dict]:
    """The --full cases (the nine gaits and the jump, tracked as --track asks), solved once."""

    def Make():
        o = runs.options
        gaits = runs.out / "gaits"
        gaits.mkdir(parents=True, exist_ok=True)
        rows = []
        for case in Cases(o.cases):
            folder = Folder(gaits, case)
            if o.redo or not (folder / "summary.json").is_file():
                SolveCase(case, folder, o.solver, o.gait_knots)
            tracked = None
            if Tracked(o.track, case):
                tracked = folder.with_name(folder.name + "_tracked")
                if (folder / "solution.npz").is_file() and (
                    o.redo or not (tracked / "summary.json").is_file()
                ):
                    TrackCase(folder, tracked)
            rows.append(Row_(case, folder, tracked))
        table = GaitsMarkdown(rows) + TrackedMeans(rows)
        (runs.out / "results_gaits.md").write_text(table)
        (runs.out / "results_gaits.json").write_text(json.dumps(rows, indent=2) + "\n")
        print("\n" + table, flush=True)
        return rows

    return runs.Once(f"the gaits ({runs.options.cases}, --track {runs.options.track})", Make)


def _GaitValues(rows, key, fmt=".2f") -> str:
    parts = [f"{r['case'][5:]} {_F(r.get(key), fmt)}" for r in rows if r["case"] != "jump"]
    return ", ".join(parts) or "no gait in --cases"


def HamrFullPlanned(runs: Runs) -> str:
    return "planned mm/cycle: " + _GaitValues(HamrGaits(runs), "mm_per_cycle")


def HamrFullTrackedMeans(runs: Runs) -> str:
    return TrackedMeans(HamrGaits(runs)).strip().replace("\n", " ") or "none tracked (--track)"


def HamrFullTracked(runs: Runs) -> str:
    return "tracked mm/cycle: " + _GaitValues(HamrGaits(runs), "tracked_mm_per_cycle")


def HamrFullSixMean(runs: Runs) -> str:
    six = [
        r["tracked_mm_per_cycle"]
        for r in HamrGaits(runs)
        if r["case"].split(":")[-1].split("@")[0] in ("2", "10") and r.get("tracked_mm_per_cycle")
    ]
    if not six:
        return "none tracked (--track all)"
    return f"mean of {len(six)} tracked 2 and 10 Hz gaits: {sum(six) / len(six):.2f} mm/cycle"


def HamrFullSlip(runs: Runs) -> str:
    return "plan slip: " + _GaitValues(HamrGaits(runs), "slip")


def HamrFullTrackedSlip(runs: Runs) -> str:
    return "tracked slip: " + _GaitValues(HamrGaits(runs), "tracked_slip")


HAMR_FULL = "python scripts/reproduce.py --paper hamr --full --track all"
FAST_GAIT = "drakebots optimize hamr-gait --frequency 10 --surface cardstock --knots 21"
TRACK_10 = (
    "drakebots optimize hamr-gait --frequency 10 --surface cardstock --knots 21 --out runs/gait10"
    " ; drakebots track runs/gait10 --cycles 10"
)

HAMR = [
    Row(1, "drakebots info hamr_vi --json", HamrSize),
    Row(2, "drakebots optimize hamr-gait --surface cardstock --knots 21", HamrFriction),
    Row(3, "drakebots hamr modes --out runs/hamr_modes", HamrModes),
    Row(4, FAST_GAIT, HamrPlanned, HamrFullPlanned, HAMR_FULL),
    Row(5, HAMR_FULL, None, HamrFullTrackedMeans),
    Row(6, HAMR_FULL, None, HamrFullTracked),
    Row(7, TRACK_10, HamrTracked10),
    Row(8, HAMR_FULL, None, HamrFullSixMean),
    Row(
        9,
        "drakebots simulate hamr_vi --gait trot --frequency 2 --surface cardstock --duration 1.5",
        HamrTrot,
        HamrTrotAll,
    ),
    Row(10, TRACK_10, HamrLegs),
    Row(11, TRACK_10, HamrLegs),
    Row(12, TRACK_10, HamrBody),
    Row(13, "drakebots optimize hamr-jump --height 12 --out runs/jump", HamrJump),
    Row(14),
    Row(15, FAST_GAIT, HamrPlanSlip, HamrFullSlip, HAMR_FULL),
    Row(16, TRACK_10, HamrTrackedSlip, HamrFullTrackedSlip, HAMR_FULL),
    Row(
        17,
        FAST_GAIT + " ; drakebots optimize hamr-jump --height 12",
        HamrSolveTime,
        None,
        "python scripts/bench_contact_implicit.py --solves all --gait-knots 21",
    ),
]


# ---------------------------------------------------------------------------- skinned quad-robots
SKINNED_ROBOTS = ("beetle", "monster", "lizard", "cow")


def _Describe(runs: Runs, robot: str) -> dict:
    from drakebots.robots import GetRobot
    from drakebots.robots.base import DescribeRobot

    return runs.Once(f"DescribeRobot({robot})", lambda: DescribeRobot(GetRobot(robot)))


def SkinnedJoints(runs: Runs) -> str:
    return "joints: " + " / ".join(str(_Describe(runs, r)["num_actuators"]) for r in SKINNED_ROBOTS)


def SkinnedWeight(runs: Runs) -> str:
    return "skeleton mass, kg: " + ", ".join(
        f"{r} {_Describe(runs, r)['total_mass']:.2f}" for r in SKINNED_ROBOTS
    )


def _Design(runs: Runs, label: str, **config):
    from drakebots.skinned import Design, DesignConfig

    return runs.Once(f"Design({label})", lambda: Design(DesignConfig(replay=False, **config)))


def _DesignText(result) -> str:
    f = result.figures
    rms = [c.get("difference_rms_scaled") for c in f.get("convergence") or []]
    return (
        f"{f.get('iterations_run')} iteration(s), RMS {' -> '.join(_F(r) for r in rms)}, "
        f"motors within {_F(f.get('max_torque_ratio'))} U_m ({f.get('frames_at_motor_limit')} "
        f"frames at the limit), COP >= {_F(1e3 * f['min_cop_margin_m'], '.1f')} mm inside, "
        f"{_F(f.get('achieved_speed_m_per_s'), '.4f')} of "
        f"{_F(f.get('planned_speed_m_per_s'), '.3f')} m/s; "
        f"{'agreed' if result.success else 'failed: ' + str(result.reason)[:80]}"
    )


def SkinnedLift(runs: Runs) -> str:
    r = _Design(runs, "beetle single-foot lift, skeleton", robot="beetle", iterations=1)
    return "skeleton: " + _DesignText(r)


def _BeetleCrawl(runs: Runs):
    return _Design(
        runs,
        "beetle crawl, skeleton, + kinematic-only",
        robot="beetle",
        motion="walk",
        compare_kinematic_only=True,
    )


def SkinnedCrawl(runs: Runs) -> str:
    return "beetle crawl on the skeleton: " + _DesignText(_BeetleCrawl(runs))


def SkinnedTorques(runs: Runs) -> str:
    f = _BeetleCrawl(runs).figures
    return (
        f"beetle crawl, skeleton: |tau| <= {_F(f.get('max_torque_ratio'))} U_m "
        f"({'within' if f.get('within_motor_limits') else 'beyond'} the limit)"
    )


def SkinnedRoll(runs: Runs) -> str:
    f = _BeetleCrawl(runs).figures
    kinematic = (f.get("kinematic_only") or {}).get("root_roll_variation_deg")
    return (
        f"beetle crawl, root roll: kinematic-only {_F(kinematic)} vs ours "
        f"{_F(f.get('root_roll_variation_deg'))} deg"
    )


def SkinnedTrot(runs: Runs) -> str:
    r = _Design(runs, "monster trot 0.45 m/s", robot="monster", motion="trot", speed=0.45)
    return "skeleton, MG995R: " + _DesignText(r)


def SkinnedLizard(runs: Runs) -> str:
    return "skeleton: " + _DesignText(_Design(runs, "lizard crawl", robot="lizard", motion="walk"))


def SkinnedLizardBack(runs: Runs) -> str:
    r = _Design(
        runs,
        "lizard crawl + kinematic-only",
        robot="lizard",
        motion="walk",
        compare_kinematic_only=True,
    )
    kinematic = r.figures.get("kinematic_only") or {}
    return (
        f"lizard kinematic-only baseline: {_F(kinematic.get('achieved_speed_m_per_s'), '.4f')} "
        f"m/s against {_F(r.figures.get('planned_speed_m_per_s'), '.3f')} planned"
    )


def SkinnedMonsterWalk(runs: Runs) -> str:
    r = _Design(runs, "monster walk 0.06 m/s", robot="monster", motion="walk", speed=0.06)
    return "skeleton, MG995R, 0.06 m/s: " + _DesignText(r)


def SkinnedCow(runs: Runs) -> str:
    return "skeleton: " + _DesignText(_Design(runs, "cow crawl", robot="cow", motion="walk"))


def SkinnedDouble(runs: Runs) -> str:
    r = _Design(
        runs,
        "monster trot at double mass",
        robot="monster",
        motion="trot",
        speed=0.45,
        mass_scale=2.0,
        iterations=3,
    )
    return "double mass: " + _DesignText(r)


def _Bend(runs: Runs):
    from drakebots.skinned import Bend, BendConfig

    return runs.Once(
        "Bend(beetle, linear only, 0.09 GPa)", lambda: Bend(BendConfig(linear_only=True))
    )


def SkinnedBend(runs: Runs) -> str:
    f = _Bend(runs).figures
    return (
        f"at 0.09 GPa, small strain: smooth {_F(f['smooth_linear_deg'])} deg, folded (8 mm teeth) "
        f"{_F(f['folded_linear_deg'])} deg under 1.96 N m; fold relief {_F(f['fold_relief'])}"
    )


def SkinnedBendFull(runs: Runs) -> str:
    from drakebots.skinned import Bend, BendConfig

    f = runs.Once(
        "Bend(beetle, 0.67 MPa, 12 mm teeth)",
        lambda: Bend(BendConfig(youngs_modulus=6.7e5, fold_depth=0.012, fold_pitch=0.024)),
    ).figures
    return (
        f"at 0.67 MPa: smooth reaches {_F(f.get('smooth_reached_deg'))} deg, folded "
        f"{_F(f.get('folded_reached_deg'))} deg; " + SkinnedBend(runs)
    )


def _Skin(runs: Runs, robot: str):
    from drakebots.skinned import MakeSkin, MakeSkinConfig

    return runs.Once(f"MakeSkin({robot})", lambda: MakeSkin(MakeSkinConfig(robot=robot)))


def SkinnedVertices(runs: Runs) -> str:
    return "default skins, vertices: " + ", ".join(
        f"{r} {_Skin(runs, r).figures.get('vertices')}" for r in SKINNED_ROBOTS
    )


def SkinnedGlue(runs: Runs) -> str:
    return "glue vertices: " + ", ".join(
        f"{r} {_Skin(runs, r).figures.get('glue_vertices')}" for r in SKINNED_ROBOTS
    )


def SkinnedSoft(runs: Runs) -> str:
    f = _Skin(runs, "monster").figures
    return f"monster skin: soft regions {f.get('soft_regions')} at E x {f.get('soft_scale')}"


SKINNED = [
    Row(1, "drakebots info beetle --json", SkinnedJoints),
    Row(2, "drakebots info beetle --json", SkinnedWeight),
    Row(3, "drakebots skin beetle --out runs/beetle_skin", SkinnedVertices),
    Row(4, "drakebots skin beetle --out runs/beetle_skin", SkinnedGlue),
    Row(5, "python scripts/bench_skinned.py"),
    Row(6, "python scripts/bench_skinned.py"),
    Row(7, "python scripts/bench_skinned.py --skip-qpcc"),
    Row(8),
    Row(9, "drakebots design beetle --motion walk --compare-kinematic-only", SkinnedCrawl),
    Row(10, "drakebots design beetle --motion single-foot-lift --iterations 1", SkinnedLift),
    Row(11, "drakebots design beetle --motion double-foot-lift"),
    Row(
        12,
        "drakebots design monster --motion walk --speed 0.06",
        None,
        SkinnedMonsterWalk,
    ),
    Row(13),
    Row(14, "drakebots design monster --motion trot --speed 0.45", SkinnedTrot),
    Row(15),
    Row(16),
    Row(17, "drakebots design lizard --motion walk", None, SkinnedLizard),
    Row(
        18,
        "drakebots skin-bend beetle --linear-only",
        SkinnedBend,
        SkinnedBendFull,
        "drakebots skin-bend beetle --youngs-modulus 6.7e5 --fold-depth 0.012 --fold-pitch 0.024",
    ),
    Row(19, "drakebots design beetle --motion walk --compare-kinematic-only", SkinnedTorques),
    Row(20, "drakebots design cow --motion walk", None, SkinnedCow),
    Row(21, "drakebots design beetle --motion walk --compare-kinematic-only", SkinnedRoll),
    Row(
        22,
        "drakebots design lizard --motion walk --compare-kinematic-only",
        None,
        SkinnedLizardBack,
    ),
    Row(23),
    Row(
        24,
        "drakebots design monster --motion trot --speed 0.45 --mass-scale 2 --iterations 3",
        None,
        SkinnedDouble,
    ),
    Row(25, "drakebots skin monster --out runs/monster_skin", SkinnedSoft),
]


# ---------------------------------------------------------------------------- gecko
GECKO_COURSE = [[0.4, 0.1], [0.6, -0.3], [0.2, -0.5], [0.0, 0.0]]
GECKO_COURSE_TEXT = "0.4,0.1; 0.6,-0.3; 0.2,-0.5; 0,0"


def GeckoLaw(runs: Runs) -> str:
    import numpy as np

    from drakebots.gecko.geometry import GaitLawDeg

    q1 = np.linspace(50.0, 90.0, 5)
    straight = GaitLawDeg(q1, 0.0)
    # Straight gait (q2 = 0): the legs mirror each other about 45 deg, the torso bends q1.
    mirrored = float(np.abs(straight[:, 0] + straight[:, 1] - 90.0).max())
    torso = float(np.abs(straight[:, 2] - q1).max())
    steer = GaitLawDeg(80.0, np.array([-0.5, -0.25, 0.0, 0.25, 0.5]))
    return (
        f"Eq. 14 at q2 = 0: legs mirrored about 45 deg to {mirrored:.1e} deg, torso = q1 to "
        f"{torso:.1e} deg; torso at q1 = 80 over q2 -0.5..0.5: "
        + "/".join(f"{a:.0f}" for a in steer[:, 2])
        + " deg"
    )


def _GeckoSpace(runs: Runs, model: str = "geometric"):
    from drakebots.gecko import VelocitySpace, VelocitySpaceConfig

    return runs.Once(
        f"VelocitySpace({model}, 5 x 6 grid)",
        lambda: VelocitySpace(VelocitySpaceConfig(model=model, workers=1)),
    )


def _MotionAt(fit, q1: float, q2: float):
    import numpy as np

    from drakebots.gecko.planner import Terms

    d_eps, dx, dy = (fit.coefficients @ Terms(np.array([q1]), np.array([q2])).T)[:, 0]
    return math.degrees(d_eps), 100 * dx, 100 * dy


def GeckoCycle(runs: Runs) -> str:
    import drakebots

    f = runs.Once(
        "Simulate(gecko, gait law (80, -0.5), 1 cycle)",
        lambda: drakebots.Simulate(
            drakebots.SimulateConfig(robot="gecko", gait_law=True, q1=80, q2=-0.5, cycles=1)
        ),
    ).figures
    space = _GeckoSpace(runs)
    k = [i for i, (a, b) in enumerate(zip(space.q1_deg, space.q2)) if a == 80.0 and b == -0.5][0]
    geo = space.motion[k]
    return (
        f"(80, -0.5), one cycle: Drake {f['last_cycle_d_eps_deg']:.1f} deg, "
        f"{f['last_cycle_dx_cm']:.1f} / {f['last_cycle_dy_cm']:.1f} cm; geometric model "
        f"{math.degrees(geo[0]):.1f} deg, {100 * geo[1]:.1f} / {100 * geo[2]:.1f} cm"
    )


def _SpaceText(space) -> str:
    from drakebots.gecko.planner import ReferenceFit

    ours = _MotionAt(space.fit, 80.0, 0.5)
    table3 = _MotionAt(ReferenceFit(), 80.0, 0.5)
    rms = space.figures["residual_rms"]
    return (
        f"{space.figures['grid_points']} points, fit RMS {rms['d_eps_deg']:.2f} deg / "
        f"{rms['dx_cm']:.2f} / {rms['dy_cm']:.2f} cm; at (80, 0.5) rotation {ours[0]:.1f} deg "
        f"against Table 3's {table3[0]:.1f} ({ours[0] / table3[0]:.2f} x)"
    )


def GeckoSpace(runs: Runs) -> str:
    return "geometric model: " + _SpaceText(_GeckoSpace(runs))


def GeckoSpaceFull(runs: Runs) -> str:
    return "Drake model: " + _SpaceText(_GeckoSpace(runs, "drake")) + "; " + GeckoSpace(runs)


def GeckoStep(runs: Runs) -> str:
    from drakebots.gecko.planner import ReferenceFit

    table3 = _MotionAt(ReferenceFit(), 90.0, 0.0)[1]
    geometric = _MotionAt(_GeckoSpace(runs).fit, 90.0, 0.0)[1]
    return f"forward step at (90, 0): Table 3 {table3:.1f} cm, geometric fit {geometric:.1f} cm"


def _Decide(target):
    from drakebots.gecko.planner import GaitPatternPlanner, ReferenceFit

    return GaitPatternPlanner(ReferenceFit()).Decide((0.0, 0.0, 0.0), target)


def GeckoDecision(runs: Runs) -> str:
    d = runs.Once("planner decision (0.35, -0.2)", lambda: _Decide((0.35, -0.2)))
    return f"on Table 3's fit: q1 = {d.q1:.1f}, q2 = {d.q2:.2f}, horizon n = {d.n}"


def GeckoBehind(runs: Runs) -> str:
    d = runs.Once("planner decision (-0.35, -0.2)", lambda: _Decide((-0.35, -0.2)))
    return (
        f"on Table 3's fit: horizon n = {d.n}, q1 = {d.q1:.1f}, q2 = {d.q2:.2f}, "
        f"{d.d0:.3f} -> {d.dn:.3f} m"
    )


def _Course(runs: Runs, model: str = "geometric"):
    from drakebots.gecko import Navigate, NavigateConfig

    return runs.Once(
        f"Navigate({model}, four targets)",
        lambda: Navigate(NavigateConfig(model=model, targets=GECKO_COURSE)),
    )


def _CourseText(result, model: str) -> str:
    f = result.figures
    return (
        f"{model}: {f['targets_reached']}/{f['targets']} targets within 5 cm in "
        f"{f['steps_total']} steps (every closest approach within "
        f"{max(f['closest_approach_m']) * 100:.1f} cm)"
    )


def GeckoCourse(runs: Runs) -> str:
    return _CourseText(_Course(runs), "geometric model, Table 3's fit")


def GeckoCourseFull(runs: Runs) -> str:
    return _CourseText(_Course(runs, "drake"), "Drake model") + "; " + GeckoCourse(runs)


def GeckoDecisionTime(runs: Runs) -> str:
    f = _Course(runs).figures
    return (
        f"planner decision {f['decision_ms_mean']:.1f} ms mean; geometric model "
        f"{f['real_time_rate']:.0f} x real time"
    )


def GeckoC1(runs: Runs) -> str:
    import inspect

    from drakebots.gecko.geometry import GaitLawDeg

    return f"c1 = {inspect.signature(GaitLawDeg).parameters['c1'].default:g} (input)"


NAVIGATE = f'drakebots gecko navigate --model geometric --targets "{GECKO_COURSE_TEXT}"'
NAVIGATE_DRAKE = f'drakebots gecko navigate --targets "{GECKO_COURSE_TEXT}" --out runs/gecko_course'

GECKO = [
    Row(1, "drakebots simulate gecko --gait-law --q1 80 --q2 -0.5", GeckoLaw),
    Row(2, "drakebots simulate gecko --gait-law --q1 80 --q2 -0.5 --cycles 1", GeckoCycle),
    Row(
        3,
        "drakebots gecko velocity-space --model geometric --out runs/gecko_vspace",
        GeckoSpace,
        GeckoSpaceFull,
        "drakebots gecko velocity-space --out runs/gecko_vspace",
    ),
    Row(4, "drakebots gecko velocity-space --model geometric", GeckoStep),
    Row(5),
    Row(6, 'drakebots gecko navigate --targets "0.35,-0.2"', GeckoDecision),
    Row(7, "drakebots gecko navigate --targets=-0.35,-0.2", GeckoBehind),
    Row(8, NAVIGATE, GeckoCourse, GeckoCourseFull, NAVIGATE_DRAKE),
    Row(9, NAVIGATE, GeckoCourse, GeckoCourseFull, NAVIGATE_DRAKE),
    Row(10),
    Row(11, NAVIGATE, GeckoDecisionTime, None, "python scripts/bench_gecko.py"),
    Row(12, "drakebots simulate gecko --gait-law --q1 80 --q2 -0.5", GeckoC1),
]


# ---------------------------------------------------------------------------- voxel
def _Fem(runs: Runs, lattice: str, node: str, axis: str = "y", joints: str = "rigid"):
    from drakebots.voxel import Fem, FemConfig

    spec = f"node={node},axis={axis},stroke=2mm"
    return runs.Once(
        f"Fem({lattice}, {spec}, {joints})",
        lambda: Fem(FemConfig(lattice=lattice, actuate=[spec], joints=joints)),
    )


# The lattices of row 2, each actuated at its centre voxel (node index of voxel I:J:0).
LOSS_LATTICES = (
    ("2x2x1", "0:0:0/3"),
    ("3x3x1", "1:1:0/3"),
    ("4x4x1", "1:1:0/3"),
    ("4x4x3", "1:1:0/3"),
    ("5x5x1", "2:2:0/3"),
    ("8x8x1", "3:3:0/3"),
)


def VoxelFigure1(runs: Runs) -> str:
    f = _Fem(runs, "2x2x1", "0:0:0/3").figures
    return (
        f"2x2x1, rigid: alternating {f['alternating_pattern']}, loss "
        f"{100 * f['max_dissipation']:.1f} %, off-plane {100 * f['max_off_plane_ratio']:.2f} %, "
        f"control nodes {1e3 * f['control_amplitude_m'] / 2:.2f} mm each"
    )


def VoxelLoss(runs: Runs) -> str:
    return "loss, rigid joints: " + ", ".join(
        f"{lattice} {100 * _Fem(runs, lattice, node).figures['max_dissipation']:.1f} %"
        for lattice, node in LOSS_LATTICES
    )


def VoxelLayers(runs: Runs) -> str:
    pinned = _Fem(runs, "2x2x2", "0:0:0/3", joints="pinned").figures
    rigid = _Fem(runs, "2x2x2", "0:0:0/3").figures
    return (
        f"2x2x2, actuator in the bottom layer: the top layer turns "
        f"{pinned['max_other_layer_ratio']:.1e} of the actuated one with pinned joints, "
        f"{rigid['max_other_layer_ratio']:.2f} with rigid joints"
    )


def _Pom(runs: Runs):
    from drakebots.voxel import Pom, PomConfig

    return runs.Once("Pom(tripod)", lambda: Pom(PomConfig()))


def VoxelMatrices(runs: Runs) -> str:
    derivation = _Pom(runs).figures["actuation_matrix_derivation"]
    return (
        "actuation matrices from the FEM: deviation from the ideal pattern <= "
        f"{max(d['max_deviation_from_ideal'] for d in derivation.values()):.4f}, spread between "
        f"voxels <= {max(d['voxel_spread'] for d in derivation.values()):.4f}"
    )


def VoxelGait(runs: Runs) -> str:
    f = _Pom(runs).figures
    return (
        f"POM inverse kinematics gives back the foot paths to {f['ik_max_residual_m']:.1e} m; "
        f"strokes <= {1e3 * f['max_stroke_m']:.2f} mm"
    )


def VoxelCompare(runs: Runs) -> str:
    from drakebots.voxel import Compare, CompareConfig

    f = runs.Once("Compare(tripod)", lambda: Compare(CompareConfig())).figures
    feet = f["feet_and_markers_max_error_m"]
    largest = f["max_node_displacement_m"]
    front = max(feet["front_left"], feet["front_right"])
    rest = max(v for k, v in feet.items() if not k.startswith("front"))
    return (
        f"POM against the FEM: core nodes within {100 * f['core_max_error_relative']:.2f} %, rear "
        f"feet and markers {100 * rest / largest:.2f} %, front feet {100 * front / largest:.0f} % "
        "of the largest displacement"
    )


def VoxelWalk(runs: Runs) -> str:
    import drakebots

    def Walk(gait: str, cycles: int):
        return runs.Once(
            f"Simulate(voxel_tripod, {gait}, {cycles} cycles)",
            lambda: drakebots.Simulate(
                drakebots.SimulateConfig(robot="voxel_tripod", gait=gait, cycles=cycles)
            ),
        ).figures

    forward, back = Walk("tripod", 3), Walk("tripod_reverse", 1)
    return (
        "mm per 2 s cycle: "
        + ", ".join(f"{1e3 * d:.2f}" for d in forward["distance_per_cycle_m"])
        + f"; yaw {min(forward['yaw_per_cycle_deg']):+.2f} to "
        f"{max(forward['yaw_per_cycle_deg']):+.2f} deg per cycle; reversed gait "
        f"{1e3 * back['mean_distance_per_cycle_m']:.2f} mm per cycle"
    )


def VoxelStroke(runs: Runs) -> str:
    return f"strokes up to {1e3 * _Pom(runs).figures['max_stroke_m']:.2f} mm (our gait)"


VOXEL = [
    Row(
        1,
        'drakebots voxel fem --lattice 2x2x1 --actuate "node=0:0:0/3,axis=y,stroke=2mm"',
        VoxelFigure1,
    ),
    Row(
        2,
        'drakebots voxel fem --lattice 8x8x1 --actuate "node=3:3:0/3,axis=y,stroke=2mm"',
        VoxelLoss,
    ),
    Row(
        3,
        'drakebots voxel fem --lattice 2x2x2 --actuate "node=0:0:0/3,axis=y,stroke=2mm" '
        "--joints pinned",
        VoxelLayers,
    ),
    Row(4, "drakebots voxel pom --robot tripod --gait tripod", VoxelMatrices),
    Row(5, "drakebots voxel pom --robot tripod --gait tripod", VoxelGait),
    Row(6, "drakebots voxel compare --robot tripod --gait tripod", VoxelCompare),
    Row(7, "drakebots simulate voxel_tripod --gait tripod --cycles 3", VoxelWalk),
    Row(8, "drakebots voxel pom --robot tripod --gait tripod", VoxelStroke),
]

ROWS = {"hamr": HAMR, "skinned": SKINNED, "gecko": GECKO, "voxel": VOXEL}


# ---------------------------------------------------------------------------- the reports
def SplitCells(line: str) -> list[str]:
    """A Markdown table line's cells (an escaped pipe \\| stays in its cell)."""
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [c.strip().replace("\\|", "|") for c in cells]


def ReportRows(paper: str) -> dict[int, dict]:
    """The numbered rows of docs/reproductions/PAPER.md's "## Results" table: number -> result,
    paper (the paper's value), ours (drakebots' last measured value and its source), command,
    comparison."""
    text = (REPORTS / f"{paper}.md").read_text()
    section = text.split("\n## Results", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not re.match(r"\|\s*\d+\s*\|", line):
            continue
        cells = SplitCells(line)
        number, result, value, ours, command, comparison = cells[:6]
        rows[int(number)] = {
            "result": result,
            "paper": value,
            "ours": ours,
            "command": command,
            "comparison": comparison,
        }
    return rows


def ReportCommands(paper: str) -> list[str]:
    """Every `drakebots ...` and `python scripts/...` command quoted in a report's Results."""
    commands = []
    for row in ReportRows(paper).values():
        for quoted in re.findall(r"`([^`]+)`", row["command"]):
            for part in quoted.split(" then "):
                commands.append(part.strip())
    return commands


def FirstSentence(text: str, limit: int = 160) -> str:
    """The text up to its first full stop (not an abbreviation's), at most `limit` characters."""
    stop = r"(?<!Sec)(?<!Secs)(?<!Fig)(?<!Figs)(?<!Eq)(?<!vs)(?<!e\.g)(?<!i\.e)\.\s"
    sentence = re.split(stop, text, maxsplit=1)[0].rstrip(".") + "."
    return sentence if len(sentence) <= limit else sentence[: limit - 3] + "..."


# ---------------------------------------------------------------------------- checks (--dry-run)
def CheckCommand(command: str) -> str | None:
    """None if `command` parses (a drakebots command line by the CLI's own parser, a python
    script that exists, a pytest node whose file and test exist), else why not."""
    if not command:
        return None
    for part in command.split(" ; "):
        words = shlex.split(part)
        if words[0] == "drakebots":
            from drakebots.cli import MakeParser

            words = [w.strip("[]") for w in words]
            try:
                MakeParser().parse_args(words[1:])
            except SystemExit:
                return f"does not parse: {part}"
        elif words[0] == "python":
            if not (ROOT / words[1]).is_file():
                return f"no such script: {words[1]}"
        elif "::" in words[0]:
            path, test = words[0].split("::")[:2]
            file = ROOT / path
            if not file.is_file() or f"def {test.split('[')[0]}(" not in file.read_text():
                return f"no such test: {words[0]}"
        else:
            return f"not a command this script knows: {part}"
    return None


def Check(paper: str) -> list[str]:
    """Problems of one paper's rows: every report row has a row here and back, every command
    parses, a row with nothing to run says so in its report."""
    problems = []
    rows = {row.number: row for row in ROWS[paper]}
    report = ReportRows(paper)
    for number in sorted(set(report) - set(rows)):
        problems.append(f"{paper} report row {number} has no row in scripts/reproduce.py")
    for number in sorted(set(rows) - set(report)):
        problems.append(f"{paper} row {number} is not in docs/reproductions/{paper}.md")
    if len(rows) != len(ROWS[paper]):
        problems.append(f"{paper}: a row number is given twice")
    for row in ROWS[paper]:
        for command in {row.command, row.full_command}:
            why = CheckCommand(command)
            if why:
                problems.append(f"{paper} row {row.number}: {why}")
    for command in ReportCommands(paper):
        if command.startswith(("drakebots ", "python scripts/")):
            why = CheckCommand(command.replace("...", "runs/x"))
            if why and "PLAN_DIR" not in command and "ROBOT" not in command:
                problems.append(f"{paper} report: {why}")
    return problems


# ---------------------------------------------------------------------------- the table
def Measure(paper: str, runs: Runs, full: bool, only: set[int] | None = None) -> list[dict]:
    """Every row of a paper: its fresh value (fast, or --full), or the report's last measured."""
    report = ReportRows(paper)
    records = []
    for row in ROWS[paper]:
        if only and row.number not in only:
            continue
        known = report.get(row.number, {})
        run = row.full if (full and row.full) else row.fast
        record = {
            "row": row.number,
            "result": known.get("result", ""),
            "paper": known.get("paper", ""),
            "command": row.Command(full),
            "comparison": known.get("comparison", ""),
        }
        if run is None:
            record["source"] = "report" if row.mode == "report" else "report (--full measures it)"
            record["ours"] = known.get("ours", "")
        else:
            print(f"row {row.number}: {FirstSentence(record['result'], 70)}", flush=True)
            record["source"] = "fresh (--full)" if run is row.full and full else "fresh (fast)"
            try:
                record["ours"] = run(runs)
            except Exception as error:  # a row that fails is reported, the others still run
                record["source"] = "fresh: failed"
                record["ours"] = f"{type(error).__name__}: {error}"[:300]
        records.append(record)
    return records


def Markdown(paper: str, records: list[dict], seconds: dict, when: str, full: bool) -> str:
    lines = [
        f"# {paper}: {'full' if full else 'fast'} run of {when} "
        f"(scripts/reproduce.py; the report: docs/reproductions/{paper}.md)",
        "",
        "Rows marked *report* were not run here: their value is the report's last measured, "
        "with the source and date the report gives.",
        "",
        "| # | paper result | paper's value | ours | source | command | comparison |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        ours = r["ours"] if r["source"].startswith("fresh") else f"*{r['ours']}*"
        cells = [
            str(r["row"]),
            FirstSentence(r["result"], 90),
            r["paper"],
            ours,
            r["source"],
            f"`{r['command']}`" if r["command"] else "",
            FirstSentence(r["comparison"]),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", "Runs (wall seconds): " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items())]
    return "\n".join(lines) + "\n"


def List() -> str:
    lines = []
    for paper in PAPERS:
        report = ReportRows(paper)
        lines.append(f"{paper} (docs/reproductions/{paper}.md):")
        for row in ROWS[paper]:
            result = FirstSentence(report.get(row.number, {}).get("result", "?"), 60)
            command = f": {row.command}" if row.command else ""
            lines.append(f"  {row.number:2d} [{row.mode:6s}] {result}{command}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--paper", choices=PAPERS, help="the report to regenerate")
    parser.add_argument(
        "--full", action="store_true", help="also the expensive runs (hours for hamr, skinned)"
    )
    parser.add_argument("--rows", default="", help="only these rows, e.g. 1,4,13")
    parser.add_argument("--out", default=None, help="results folder (default runs/reproduce/PAPER)")
    parser.add_argument("--list", action="store_true", help="every row and what runs it; no run")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="check that every report row maps to a row here and every command parses; no run",
    )
    hamr = parser.add_argument_group("HAMR-VI --full (what scripts/reproduce_hamr.py took)")
    hamr.add_argument("--cases", default="all", help="all, or e.g. gait:10@cardstock,jump")
    hamr.add_argument(
        "--solver", default="auto", help="auto (default: the fast path), fast, snopt or ipopt"
    )
    hamr.add_argument(
        "--track",
        nargs="?",
        const="cardstock",
        default="all",
        choices=("cardstock", "all", "none"),
        help="track the 2 and 10 Hz cardstock gaits (--track alone) or all nine gaits (the "
        "default; the paper's Fig. 7a), 10 strides each; none: plan only",
    )
    hamr.add_argument(
        "--gait-knots",
        type=int,
        default=None,
        help="knots per gait stride (default: the authors' 51; 21 solves about 2.5x faster)",
    )
    hamr.add_argument("--redo", action="store_true", help="rerun finished cases")
    args = parser.parse_args(argv)
    if args.track == "none":
        args.track = None
    if args.list:
        print(List())
        return 0
    if args.dry_run:
        problems = [p for paper in ([args.paper] if args.paper else PAPERS) for p in Check(paper)]
        print("\n".join(problems) if problems else "every row maps and every command parses")
        return 1 if problems else 0
    if not args.paper:
        parser.error("--paper is required (or --list, --dry-run)")
    out = Path(args.out or f"runs/reproduce/{args.paper}")
    out.mkdir(parents=True, exist_ok=True)
    runs = Runs(out, args)
    only = {int(n) for n in args.rows.split(",") if n.strip()} or None
    start = time.perf_counter()
    when = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    records = Measure(args.paper, runs, args.full, only)
    total = time.perf_counter() - start
    table = Markdown(args.paper, records, runs.seconds, when, args.full)
    (out / "results.md").write_text(table)
    payload = {
        "paper": args.paper,
        "mode": "full" if args.full else "fast",
        "when": when,
        "wall_seconds": total,
        "run_seconds": runs.seconds,
        "rows": records,
    }
    (out / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
    print("\n" + table)
    print(f"{total:.0f} s; wrote {out / 'results.md'} and {out / 'results.json'}")
    failed = [r["row"] for r in records if r["source"] == "fresh: failed"]
    if failed:
        print(f"rows that failed to run: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
