"""Benchmark of the gecko soft walker: planner decisions, gait cycles of both models, the grid.

Measures, each against a reference taken in the same run:

- time per gait-pattern-generator decision (Algorithm 1 on the Table 3 polynomial), with this
  project's projected Newton and with L-BFGS-B (the authors' choice), against a simulation-based
  decision that evaluates the geometric model 10 times (the paper's section 6: "an average of 10
  evaluations ... adds up to 1 s" on their ARM controller); goal <= 5 ms per decision;
- simulated gait cycles per wall second of the Drake model and of the geometric model, against
  real time (5 s per cycle: 2 x (0.25 + 2.0 + 0.25) s);
- the velocity-space grid (30 points): the geometric model in full, the Drake model per point
  (times 30 / workers for the grid), unless --full-drake runs it.

Usage:
  python scripts/bench_gecko.py                 # prints a table, writes runs/bench/gecko.json
  python scripts/bench_gecko.py --decisions 400 --drake-cycles 2 --out /tmp/gecko.json
  python scripts/bench_gecko.py --full-drake    # also the whole Drake grid (minutes)
"""

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np


def BenchDecisions(count: int, seed: int = 0) -> dict:
    from drakebots.gecko.planner import (
        GaitPatternPlanner,
        PlannerParams,
        ReferenceFit,
    )

    rng = np.random.default_rng(seed)
    poses = np.column_stack(
        [rng.uniform(-0.5, 0.5, count), rng.uniform(-0.5, 0.5, count), rng.uniform(-3, 3, count)]
    )
    targets = rng.uniform(-0.6, 0.6, (count, 2))
    results = {}
    for method in ("newton", "L-BFGS-B"):
        planner = GaitPatternPlanner(ReferenceFit(), PlannerParams(method=method))
        planner.Decide(poses[0], targets[0])  # warm up imports and caches
        seconds, horizons, distances = [], [], []
        for pose, target in zip(poses, targets, strict=True):
            start = time.perf_counter()
            decision = planner.Decide(pose, target)
            seconds.append(time.perf_counter() - start)
            horizons.append(decision.n)
            distances.append(decision.dn)
        seconds = np.array(seconds)
        results[method] = {
            "decisions": count,
            "mean_ms": 1e3 * float(seconds.mean()),
            "median_ms": 1e3 * float(np.median(seconds)),
            "p95_ms": 1e3 * float(np.percentile(seconds, 95)),
            "max_ms": 1e3 * float(seconds.max()),
            "mean_horizon": float(np.mean(horizons)),
            "predicted_distances": distances,
        }
    agree = np.abs(
        np.array(results["newton"].pop("predicted_distances"))
        - np.array(results["L-BFGS-B"].pop("predicted_distances"))
    )
    results["newton_vs_lbfgsb_max_dn_difference_m"] = float(agree.max())
    return results


def BenchSimulationDecision(repeats: int = 3) -> dict:
    """A decision that evaluates the geometric model instead of the polynomial: 10 one-cycle
    simulations at candidate gaits (the paper's estimate of a simulation-based choice)."""
    from drakebots.gecko.experiments import MeasureCycleGeometric

    candidates = [(q1, q2) for q1 in (50.0, 70.0, 90.0) for q2 in (-0.4, 0.0, 0.4)] + [(80, 0.2)]
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for q1, q2 in candidates:
            MeasureCycleGeometric(q1, q2, warmup=0, substeps=1)
        seconds.append(time.perf_counter() - start)
    return {"evaluations": len(candidates), "mean_ms": 1e3 * float(np.mean(seconds))}


def BenchGeometricCycles(cycles: int) -> dict:
    from drakebots.gecko.geometric import GeometricGait
    from drakebots.gecko.geometry import GaitLawDeg, GaitTiming

    gait = GeometricGait(substeps=1)
    gait.Reset(alpha_deg=GaitLawDeg(80.0, 0.3))
    gait.Cycles(80.0, 0.3, 1)  # builds the programs
    start = time.perf_counter()
    gait.Cycles(80.0, 0.3, cycles)
    wall = time.perf_counter() - start
    trace = gait.Trace()
    real = GaitTiming().cycle
    return {
        "cycles": cycles,
        "wall_s": wall,
        "cycles_per_s": cycles / wall,
        "real_time_ratio": cycles * real / wall,
        "solves_per_cycle": trace.solves / (cycles + 1),
        "ms_per_solve": 1e3 * wall / (trace.solves * cycles / (cycles + 1)),
        "failures": len(trace.failures),
    }


def BenchDrakeCycles(cycles: int, time_step: float) -> dict:
    from drakebots.gecko.geometry import GaitLawDeg, GaitTiming
    from drakebots.gecko.simulation import GeckoSimConfig, GeckoSimulation

    start = time.perf_counter()
    sim = GeckoSimulation(
        GeckoSimConfig(time_step=time_step), gait=(80.0, 0.3), start_alpha_deg=GaitLawDeg(80, 0.3)
    )
    build = time.perf_counter() - start
    sim.RunHalfCycles(2 * cycles)
    wall = sim.wall_time
    real = GaitTiming().cycle
    return {
        "cycles": cycles,
        "time_step_s": time_step,
        "build_s": build,
        "wall_s": wall,
        "cycles_per_s": cycles / wall,
        "real_time_ratio": cycles * real / wall,
        "steps_per_s": cycles * real / time_step / wall,
    }


def BenchGrid(full_drake: bool, workers: int) -> dict:
    from drakebots.gecko.experiments import (
        MeasureCycleDrake,
        MeasureVelocitySpace,
    )

    start = time.perf_counter()
    space = MeasureVelocitySpace("geometric")
    geometric = time.perf_counter() - start
    out = {"points": len(space.measurements), "geometric_s": geometric}
    if full_drake:
        start = time.perf_counter()
        MeasureVelocitySpace("drake", workers=workers)
        out["drake_s"] = time.perf_counter() - start
        out["drake_workers"] = workers
    else:
        point = MeasureCycleDrake(70.0, 0.1).seconds
        out["drake_s_per_point"] = point
        out["drake_s_estimate"] = point * out["points"] / workers
        out["drake_workers"] = workers
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--geometric-cycles", type=int, default=20)
    parser.add_argument("--drake-cycles", type=int, default=2)
    parser.add_argument("--time-step", type=float, default=2e-3)
    parser.add_argument("--full-drake", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="runs/bench/gecko.json")
    args = parser.parse_args()

    print("gait pattern generator decisions ...", flush=True)
    decisions = BenchDecisions(args.decisions)
    simulated = BenchSimulationDecision()
    print("geometric model cycles ...", flush=True)
    geometric = BenchGeometricCycles(args.geometric_cycles)
    print("Drake model cycles ...", flush=True)
    drake = BenchDrakeCycles(args.drake_cycles, args.time_step)
    print("velocity-space grid ...", flush=True)
    grid = BenchGrid(args.full_drake, args.workers)

    newton = decisions["newton"]
    lbfgsb = decisions["L-BFGS-B"]
    report = {
        "workload": (
            f"gecko soft walker: {args.decisions} gait-pattern-generator decisions (Algorithm 1 "
            f"on the Table 3 polynomial), {args.geometric_cycles} geometric-model and "
            f"{args.drake_cycles} Drake-model gait cycles at h = {args.time_step:g} s, the "
            "30-point velocity-space grid ("
            + ("Drake in full" if args.full_drake else "Drake per point, extrapolated")
            + f", {args.workers} workers)"
        ),
        "machine": {"python": platform.python_version(), "processor": platform.processor()},
        "decision": decisions,
        "simulation_based_decision": simulated,
        "geometric_cycles": geometric,
        "drake_cycles": drake,
        "grid": grid,
        "ratios": {
            "decision_goal_ms": 5.0,
            "decision_mean_over_goal": newton["mean_ms"] / 5.0,
            "lbfgsb_over_newton": lbfgsb["mean_ms"] / newton["mean_ms"],
            "simulation_decision_over_polynomial": simulated["mean_ms"] / newton["mean_ms"],
            "geometric_real_time_ratio": geometric["real_time_ratio"],
            "drake_real_time_ratio": drake["real_time_ratio"],
            "geometric_over_drake_cycles_per_s": geometric["cycles_per_s"] / drake["cycles_per_s"],
        },
    }
    rows = [
        ("GPG decision, projected Newton (mean / p95)",
         f"{newton['mean_ms']:.2f} / {newton['p95_ms']:.2f} ms", "goal <= 5 ms"),
        ("GPG decision, L-BFGS-B (mean / p95)",
         f"{lbfgsb['mean_ms']:.2f} / {lbfgsb['p95_ms']:.2f} ms",
         f"x{report['ratios']['lbfgsb_over_newton']:.2f} Newton"),
        ("simulation-based decision (10 geometric cycles)", f"{simulated['mean_ms']:.0f} ms",
         f"x{report['ratios']['simulation_decision_over_polynomial']:.0f} polynomial"),
        ("geometric model", f"{geometric['cycles_per_s']:.1f} cycles/s",
         f"x{geometric['real_time_ratio']:.0f} real time"),
        ("Drake model", f"{drake['cycles_per_s']:.3f} cycles/s",
         f"x{drake['real_time_ratio']:.2f} real time"),
        ("velocity-space grid, geometric", f"{grid['geometric_s']:.1f} s",
         f"{grid['points']} points"),
        ("velocity-space grid, Drake",
         f"{grid.get('drake_s', grid.get('drake_s_estimate', math.nan)):.0f} s"
         + ("" if "drake_s" in grid else " (estimated)"),
         f"{grid['drake_workers']} workers"),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    print()
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>24}  {note}")
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
