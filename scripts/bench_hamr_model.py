"""Benchmark HAMR-VI's model terms and its simulation: what the trajectory optimizer pays per call.

Every figure is a time per call together with a ratio against a reference measured in the same
run:

- M(q): CalcMassMatrix (composite-body algorithm) on the float plant; references: Drake's
  CalcMassMatrixViaInverseDynamics (n inverse-dynamics passes) and the same call on the variant
  with Drake's RpyFloatingJoint base (the floating-base decision); AutoDiffXd (∂M/∂q, 38
  derivatives) as a multiple of the float call.
- bias terms C(q, v) v - τ_g(q): CalcBiasTerm + CalcGravityGeneralizedForces; float and AutoDiffXd
  with 76 derivatives (q and v).
- c(q), the 24 loop constraints: float value; the analytic float Jacobian (HamrLoopConstraints);
  the AutoDiffXd pass (value + 38-column gradient) as a multiple of value + analytic Jacobian; the
  MathematicalProgram path (EvalForProgram with AutoDiff input, float plant + chain rule).
- Simulation: wall time per simulated second (real-time factor) of the 10 Hz trot on cardstock
  at the default 0.25 ms step and at 0.1 ms, and the same plant without its 12 ball constraints
  (the loops' cost in SAP).

Usage:
  python scripts/bench_hamr_model.py                      # table + runs/bench/hamr_model.json
  python scripts/bench_hamr_model.py --sim-duration 0.2 --out /tmp/hamr.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np


def PerCall(function, *, min_time: float = 0.3, repeats: int = 5) -> float:
    """Seconds per call: the best of `repeats` batches, each at least `min_time` long."""
    function()
    count = 1
    while True:
        start = time.perf_counter()
        for _ in range(count):
            function()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / repeats:
            break
        count *= 2
    best = elapsed / count
    for _ in range(repeats - 1):
        start = time.perf_counter()
        for _ in range(count):
            function()
        best = min(best, (time.perf_counter() - start) / count)
    return best


def Plants(floating_base: str = "joints"):
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.hamr.robot import AddHamr

    plant = MultibodyPlant(time_step=0.0)
    AddHamr(plant, floating_base=floating_base)
    plant.Finalize()
    return plant, plant.ToAutoDiffXd()


def BenchModelTerms() -> dict:
    from pydrake.autodiffutils import InitializeAutoDiff

    from drakebots.hamr.robot import HamrLoopConstraints

    plant, plant_ad = Plants()
    context = plant.CreateDefaultContext()
    context_ad = plant_ad.CreateDefaultContext()
    rng = np.random.default_rng(0)
    q = plant.GetDefaultPositions() + 0.01 * rng.standard_normal(38)
    v = rng.standard_normal(38)
    plant.SetPositions(context, q)
    plant.SetVelocities(context, v)
    q_ad = InitializeAutoDiff(q)
    x_ad = InitializeAutoDiff(np.concatenate([q, v]))
    loops = HamrLoopConstraints(plant)
    results = {}

    def Mass():
        plant.SetPositions(context, q)  # invalidates the cache, as a new knot point would
        return plant.CalcMassMatrix(context)

    def MassViaInverseDynamics():
        plant.SetPositions(context, q)
        return plant.CalcMassMatrixViaInverseDynamics(context)

    def MassAutoDiff():
        plant_ad.SetPositions(context_ad, q_ad)
        return plant_ad.CalcMassMatrix(context_ad)

    rpy, _ = Plants("rpy_floating_joint")
    rpy_context = rpy.CreateDefaultContext()

    def MassRpy():
        rpy.SetPositions(rpy_context, q)
        return rpy.CalcMassMatrix(rpy_context)

    np.testing.assert_allclose(Mass(), MassViaInverseDynamics(), atol=1e-10)
    results["mass_matrix"] = {
        "float_us": 1e6 * PerCall(Mass),
        "via_inverse_dynamics_us": 1e6 * PerCall(MassViaInverseDynamics),
        "rpy_floating_joint_us": 1e6 * PerCall(MassRpy),
        "autodiff_38_us": 1e6 * PerCall(MassAutoDiff),
    }

    def Bias():
        plant.SetPositions(context, q)
        plant.SetVelocities(context, v)
        return plant.CalcBiasTerm(context) - plant.CalcGravityGeneralizedForces(context)

    def BiasAutoDiff():
        plant_ad.SetPositionsAndVelocities(context_ad, x_ad)
        return plant_ad.CalcBiasTerm(context_ad) - plant_ad.CalcGravityGeneralizedForces(context_ad)

    results["bias_terms"] = {
        "float_us": 1e6 * PerCall(Bias),
        "autodiff_76_us": 1e6 * PerCall(BiasAutoDiff),
    }

    def Loop():
        plant.SetPositions(context, q)
        return loops.Eval(plant, context)

    def LoopAndJacobian():
        plant.SetPositions(context, q)
        return loops.Eval(plant, context), loops.Jacobian(plant, context)

    def LoopAutoDiff():
        plant_ad.SetPositions(context_ad, q_ad)
        return loops.Eval(plant_ad, context_ad)

    def LoopProgram():
        return loops.EvalForProgram(q_ad)

    results["loop_constraints"] = {
        "float_us": 1e6 * PerCall(Loop),
        "float_with_analytic_jacobian_us": 1e6 * PerCall(LoopAndJacobian),
        "autodiff_38_us": 1e6 * PerCall(LoopAutoDiff),
        "program_autodiff_via_float_jacobian_us": 1e6 * PerCall(LoopProgram),
    }
    m, b, c = results["mass_matrix"], results["bias_terms"], results["loop_constraints"]
    m["ratio_autodiff_to_float"] = m["autodiff_38_us"] / m["float_us"]
    m["ratio_float_to_inverse_dynamics"] = m["float_us"] / m["via_inverse_dynamics_us"]
    m["ratio_rpy_joint_to_joint_chain"] = m["rpy_floating_joint_us"] / m["float_us"]
    b["ratio_autodiff_to_float"] = b["autodiff_76_us"] / b["float_us"]
    c["ratio_jacobian_overhead"] = c["float_with_analytic_jacobian_us"] / c["float_us"]
    c["ratio_autodiff_to_analytic"] = c["autodiff_38_us"] / c["float_with_analytic_jacobian_us"]
    c["ratio_program_path_to_autodiff"] = (
        c["program_autodiff_via_float_jacobian_us"] / c["autodiff_38_us"]
    )
    return results


def BenchSimulation(duration_ms: float) -> dict:
    from drakebots.hamr.gaits import GaitParams
    from drakebots.hamr.simulation import HamrSimulationConfig, SimulateHamr

    results = {}
    for name, time_step in (("trot_10hz_0.25ms", 0.25), ("trot_10hz_0.1ms", 0.1)):
        config = HamrSimulationConfig(
            duration=duration_ms,
            time_step=time_step,
            surface="cardstock",
            gait=GaitParams(gait="trot", frequency=10.0),
        )
        log = SimulateHamr(config, progress=False)
        results[name] = {
            "simulated_s": duration_ms * 1e-3,
            "wall_s": log.wall_time,
            "real_time_factor": log.real_time_rate,
            "wall_per_step_ms": 1e3 * log.wall_time / (duration_ms / time_step),
            "forward_mm": float(log.positions[-1, 0] - log.positions[0, 0]),
            "loop_residual_max_mm": float(np.max(log.extra["loop_residual"])),
        }
    results["loops_cost"] = _LoopCost()
    a, b = results["trot_10hz_0.25ms"], results["trot_10hz_0.1ms"]
    results["ratio_forward_0.25_to_0.1ms"] = a["forward_mm"] / b["forward_mm"]
    return results


def _LoopCost(steps: int = 400) -> dict:
    """Wall time per SAP step of the bare plant (zero actuation, standing) with and without its
    ball constraints: what closing the loops costs the simulator."""
    from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    from drakebots.hamr.robot import AddHamr
    from drakebots.hamr.simulation import AddSurface

    out = {}
    for closure in ("ball", "none"):
        builder = DiagramBuilder()
        plant, _ = AddMultibodyPlant(
            MultibodyPlantConfig(time_step=0.25, discrete_contact_approximation="similar"), builder
        )
        AddHamr(plant, loop_closure=closure)
        AddSurface(plant, "cardstock")
        plant.Finalize()
        diagram = builder.Build()
        simulator = Simulator(diagram)
        plant.get_actuation_input_port().FixValue(
            plant.GetMyContextFromRoot(simulator.get_mutable_context()), np.zeros(8)
        )
        simulator.Initialize()
        start = time.perf_counter()
        simulator.AdvanceTo(steps * 0.25)
        out[f"{closure}_ms_per_step"] = 1e3 * (time.perf_counter() - start) / steps
    out["ratio_ball_to_open"] = out["ball_ms_per_step"] / out["none_ms_per_step"]
    return out


def PrintTable(results: dict) -> None:
    m, b, c = results["mass_matrix"], results["bias_terms"], results["loop_constraints"]
    rows = [
        ("M(q) float (CRBA)", m["float_us"], "1.00"),
        (
            "M(q) via inverse dynamics",
            m["via_inverse_dynamics_us"],
            f"{1 / m['ratio_float_to_inverse_dynamics']:.2f}",
        ),
        (
            "M(q) RpyFloatingJoint base",
            m["rpy_floating_joint_us"],
            f"{m['ratio_rpy_joint_to_joint_chain']:.2f}",
        ),
        ("M(q) AutoDiff (38 derivs)", m["autodiff_38_us"], f"{m['ratio_autodiff_to_float']:.1f}"),
        ("bias float", b["float_us"], "1.00"),
        ("bias AutoDiff (76 derivs)", b["autodiff_76_us"], f"{b['ratio_autodiff_to_float']:.1f}"),
        ("c(q) float", c["float_us"], "1.00"),
        (
            "c(q) + analytic J",
            c["float_with_analytic_jacobian_us"],
            f"{c['ratio_jacobian_overhead']:.2f}",
        ),
        (
            "c(q) AutoDiff (38 derivs)",
            c["autodiff_38_us"],
            f"{c['autodiff_38_us'] / c['float_us']:.1f}",
        ),
        (
            "c(q) program path (chain rule)",
            c["program_autodiff_via_float_jacobian_us"],
            f"{c['program_autodiff_via_float_jacobian_us'] / c['float_us']:.1f}",
        ),
    ]
    print(f"{'term':34s} {'us/call':>10s} {'x float':>8s}")
    for name, us, ratio in rows:
        print(f"{name:34s} {us:10.1f} {ratio:>8s}")
    sim = results.get("simulation")
    if sim:
        for name in ("trot_10hz_0.25ms", "trot_10hz_0.1ms"):
            s = sim[name]
            print(
                f"{name:34s} real-time factor {s['real_time_factor']:.4f} "
                f"({s['wall_per_step_ms']:.2f} ms/step, {s['forward_mm']:.2f} mm forward, "
                f"loop residual {s['loop_residual_max_mm']:.1e} mm)"
            )
        cost = sim["loops_cost"]
        print(
            f"{'SAP step, loops closed / open':34s} {cost['ball_ms_per_step']:.2f} / "
            f"{cost['none_ms_per_step']:.2f} ms  (x{cost['ratio_ball_to_open']:.2f})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="runs/bench/hamr_model.json", help="JSON output path")
    parser.add_argument(
        "--sim-duration", type=float, default=0.5, help="simulated trot, s (default 0.5)"
    )
    parser.add_argument("--no-sim", action="store_true", help="skip the simulation figures")
    args = parser.parse_args()
    results = BenchModelTerms()
    if not args.no_sim:
        results["simulation"] = BenchSimulation(args.sim_duration * 1e3)
    import importlib.metadata

    results["workload"] = (
        "HAMR-VI (the authors' URDF facts, 38 positions, 24 loop constraints): mass matrix, "
        "bias terms and loop constraints per call, float and AutoDiffXd"
        + (
            ""
            if args.no_sim
            else f"; the 10 Hz cardstock trot simulated {args.sim_duration:g} s in Drake's SAP"
        )
    )
    results["machine"] = {
        "python": platform.python_version(),
        "drake": importlib.metadata.version("drake"),
        "processor": platform.processor() or platform.machine(),
    }
    PrintTable(results)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
