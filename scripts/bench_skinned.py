"""Benchmark of the skinned quad-robots' motion optimization (issues 6, 49 and 52).

Default: design frames (`DesignFramesSection`, issues 49 and 52: like for like with Table 1).
- Walking frames of a real design run on a paper-scale skin: the first `--design-frames`
  frames of the first frame-by-frame pass of `drakebots design beetle --motion walk` on the
  beetle's full skin (`drakebots skin beetle`, 12.7k vertices; Table 1's skins have 12.5k-18.3k
  vertices, the beetle's 14,152), run by the design workflow itself, printed beside Table 1's
  seconds per frame (4-core i7-7700). The skin is made with the project's own command where
  runs/beetle_skin is missing (about a minute).
- Each `--design-variants` factorisation/condensation pair in the same process, same plan: the
  first gives `design_frame_s` (wall, median of the frames after the first; CPU seconds per
  frame beside it), the others its speed-up and the largest torque and state differences (the
  same frames to solver tolerance). Default: the Schur condensation against the whole-K_red
  factorisation ("direct", the reference; `CoupledFrameConfig.condensation`). A third part
  names the skin's element loop: `auto/schur/numpy` runs the NumPy reference of the compiled
  loop (drakebots.fem.kernels, FemModel(kernel=...)); a fourth, `inline`, puts the
  self-collision pairs in the factorised skin block's (growing) pattern instead of the Schur
  condensation's low-rank columns (`CoupledFrameConfig.pair_columns`), e.g.
  `auto/schur/auto/inline`; a fifth, a count, the element loop's threads
  (`CoupledFrameConfig.element_threads`, default 2), e.g. `auto/schur,auto/schur/auto/columns/1`;
  a sixth, `halfsolve`, sends the patches' columns through the half-solve instead of bordering
  PARDISO's factor as its Schur block (`CoupledFrameConfig.patch_schur`), e.g.
  `auto/schur,auto/schur/auto/columns/auto/halfsolve`.
- `--design monster-walk` (or `beetle-walk,monster-walk`): issue 52's target workload, the
  README's monster walk at 0.06 m/s with 5.9 N*m motors on its folded 44.4k-vertex skin
  (`--monster-skin`), 2.7 times the paper's monster skin.

`--factorizations`: one numeric factorisation of the frames' matrix by every backend that loads,
with PARDISO's operation count and the rate it ran at (`gflop`, `gflop_per_s`), and the
frame-by-frame pass's floor: its frames times one numeric factorisation
(`pass_factorization_floor_s`, at the JSON's top level; Findings 16 in
docs/reproductions/skinned.md).

`--settle` (`SettleSection`): the skin's settling against its collision penalties at the first
pose of each design workload, modified Newton (the default) against full Newton in the same
process, with the residuals each reaches and the distance between their skins.

`--quick`: the standing frames on the tests' 4.5k-vertex foot-pad skin (seconds; a standing
robot on pads is not Table 1's workload). `--all` adds the standing frames on each robot's skin
(runs/<robot>_skin) and the space-time section (`--skip-qpcc`: the design frames and the
space-time section, as scripts/reproduce.py's row 7 runs it; `--skip-design`: none of the first):

Space-time part (this file's `SpaceTimeSection`):
- evaluating the whole space-time program (all costs and constraints with Jacobians) through the
  MathematicalProgram's bindings (Drake AutoDiff, one binding at a time: what a generic SQP or
  SNOPT does) against the vectorised `SpaceTimeNlp` (ratio, same x, same run);
- one space-time step (kinematic warm start + the dynamic Gauss-Newton SQP) on the beetle's
  single-foot lift, wall time against the paper's "around 40 seconds" (section 7) and the goal of
  10 s, with the solver status and the independent constraint check.

Standing part (`QpccSection`, the coupled QPCC of qpcc_coupled.py on a standing robot):
- per-frame time (linearise + labelling QPs) per robot, with its parts (assemble, reduce,
  factorise, condense, QPs), the lower bound of a frame (one factorisation), and condensed
  against uncondensed QPCC on the same frame and labels (paper: about 50x).

The JSON names its workload (`workload`) and holds `design_frame_s`, `cpu_s_per_frame`,
`paper_frame_s` and `ratio_to_paper` at its top level, the load averages with each run.

Usage: python scripts/bench_skinned.py [--out runs/bench/skinned.json] [--design-frames 6]
       [--design beetle-walk,monster-walk] [--design-skin runs/beetle_skin]
       [--monster-skin runs/monster_skin] [--design-variants auto/schur,auto/direct]
       [--factorizations] [--settle [--settle-rounds 2]] [--quick] [--all]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

PAPER_SPACE_TIME_S = 40.0  # section 7: "The space-time optimization step ... is around 40 seconds"


def SpaceTimeSection(args) -> dict:
    from pydrake.autodiffutils import InitializeAutoDiff

    from drakebots.skinned import motions
    from drakebots.skinned.motion import SampleMotion
    from drakebots.skinned.skeleton_model import SkeletonModel
    from drakebots.skinned.space_time import (
        InitialGuess,
        KinematicWarmStart,
        MakeSpaceTimeProgram,
        SolveSpaceTime,
        SpaceTimeConfig,
    )
    from drakebots.skinned.space_time_nlp import SpaceTimeNlp

    model = SkeletonModel("beetle")
    motion = SampleMotion(motions.SingleFootLift(model))
    config = SpaceTimeConfig(knot_frames=args.knot_frames, max_iterations=args.max_iterations)
    problem = MakeSpaceTimeProgram(model, motion, config)
    prog = problem.prog
    x = InitialGuess(model, problem)
    # Evaluation: bindings one by one (AutoDiff) vs vectorised.
    start = time.perf_counter()
    for b in list(prog.GetAllCosts()) + list(prog.GetAllConstraints()):
        idx = prog.FindDecisionVariableIndices(b.variables())
        b.evaluator().Eval(InitializeAutoDiff(x[idx]))
    per_binding = time.perf_counter() - start
    nlp = SpaceTimeNlp(problem)
    start = time.perf_counter()
    nlp.Evaluate(x, True)
    vectorised = time.perf_counter() - start
    # One space-time step: kinematic warm start, then the dynamic solve.
    start = time.perf_counter()
    warm = KinematicWarmStart(model, motion, config)
    result = SolveSpaceTime(model, problem, InitialGuess(model, problem, warm.q_knots))
    step = time.perf_counter() - start
    return {
        "robot": "beetle",
        "motion": "single-foot-lift",
        "frames": motion.num_frames,
        "knots": len(problem.targets.times),
        "variables": prog.num_vars(),
        "evaluation_per_binding_s": per_binding,
        "evaluation_vectorised_s": vectorised,
        "evaluation_speedup": per_binding / vectorised,
        "kinematic_warm_start": {"status": warm.status, "time_s": warm.solve_time},
        "space_time_status": result.status,
        "space_time_violated_constraints": result.infeasible[:10],
        "space_time_step_s": step,
        "paper_space_time_step_s": PAPER_SPACE_TIME_S,
        "ratio_to_paper": step / PAPER_SPACE_TIME_S,
        "goal_s": 10.0,
        "load_average": os.getloadavg()[0],
        "max_torque_ratio": float(np.abs(result.joint_torques / model.effort_limits).max()),
    }


# Table 1 of the paper: average time per frame of the frame-by-frame QPCC (4-core i7-7700), s.
PAPER_FRAME_S = {"beetle": 3.2, "monster": 8.98, "lizard": 8.41, "cow": 6.56}
# Table 1: skin vertices of each robot's skin mesh.
PAPER_SKIN_VERTICES = {"beetle": 14152, "monster": 16624, "lizard": 18261, "cow": 12494}
PAPER_CONDENSED_SPEEDUP = 50.0  # section 7: condensation makes a frame "about 50 times" faster


def _CoupledFrames(robot: str, skin, frames: int) -> dict:
    """Runs `frames` frames of the coupled QPCC on a standing robot asked to shift its torso
    1 cm sideways and roll 0.05 rad (all four feet planted), timing each part."""
    from drakebots.skinned.qpcc import FrameQpcc, QpccConfig
    from drakebots.skinned.qpcc_coupled import CoupledFrameDynamics
    from drakebots.skinned.skeleton_model import SkeletonModel, SkinLoad

    model = SkeletonModel(robot, skin_load=SkinLoad())
    start = time.perf_counter()
    dyn = CoupledFrameDynamics(model, skin, 0.005)
    setup = time.perf_counter() - start
    qpcc = FrameQpcc(model, dyn, model.effort_limits, 0.8, QpccConfig())
    q, v = dyn.q_stand.copy(), np.zeros(model.nv)
    target = q.copy()
    target[1] += 0.01
    target[5] += 0.05
    tau = np.zeros(model.nu)
    rows = []
    for _ in range(frames):
        t0 = time.perf_counter()
        lin = dyn.Linearize(q, v)
        t1 = time.perf_counter()
        r = qpcc.SolveFrame(
            q, v, target, v * 0.005, tau, flat_feet=range(4), support_feet=range(4), lin=lin
        )
        t2 = time.perf_counter()
        rows.append(
            {
                "frame_s": t2 - t0,
                "linearize_s": t1 - t0,
                "qp_loop_s": t2 - t1,
                "factor_s": lin.timings["factor"],
                "assemble_s": lin.timings["assemble"],
                "reduce_s": lin.timings["reduce"],
                "condense_s": lin.timings["condense"],
                "qps": int(r.iterations),
                "infeasible": list(r.infeasible),
                "max_torque_ratio": float(np.abs(r.tau / model.effort_limits).max()),
            }
        )
        q, v, tau = r.q_next, r.v_next, r.tau
    mean = {k: float(np.mean([row[k] for row in rows])) for k in rows[0] if k.endswith("_s")}
    return {
        "vertices": int(dyn.n),
        "setup_s": setup,
        "frames": frames,
        "per_frame": rows,
        "mean": mean,
        "dynamics": dyn,
        "qpcc": qpcc,
        "model": model,
    }


def QpccSection(args) -> dict:
    """Per-frame coupled QPCC time per robot against Table 1, the factorisation lower bound, and
    condensed against uncondensed QPCC on the same frame."""
    from drakebots.skinned.qpcc import BREAKAGE, STATIC
    from drakebots.skinned.qpcc_coupled import UncondensedQp
    from drakebots.skinned.skin import LoadSkin

    out = {"robots": {}, "load_average_start": os.getloadavg()[0]}
    for robot in args.robots:
        folder = Path(args.skins) / f"{robot}_skin"
        if getattr(args, "pad", False):
            # --quick: the tests' 8 mm foot-pad skin (~4.5k vertices): a standing frame, not
            # Table 1's walking frames on a full skin.
            from drakebots.skinned.skeleton_model import SkeletonModel, SkinLoad

            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root
            from tests.skinned._pad_skin import MakeFootPadSkin

            print(f"[qpcc] {robot}: {args.frames} standing frames on the foot-pad skin ...")
            run = _CoupledFrames(
                robot, MakeFootPadSkin(SkeletonModel(robot, skin_load=SkinLoad())), args.frames
            )
            out["skin"] = "the tests' foot-pad skin (standing; not Table 1's workload)"
        elif not (folder / "skin.npz").is_file():
            out["robots"][robot] = {
                "skipped": f"no skin at {folder} (make it with: drakebots skin {robot} "
                f"--out {folder})"
            }
            continue
        else:
            print(f"[qpcc] {robot}: {args.frames} coupled frames ...", flush=True)
            try:
                run = _CoupledFrames(robot, LoadSkin(folder), args.frames)
            except (ValueError, RuntimeError) as e:  # e.g. a skin whose sole touches glue
                out["robots"][robot] = {"failed": f"{type(e).__name__}: {e}"}
                print(f"[qpcc] {robot}: FAILED ({e})", flush=True)
                continue
        # The first frame includes one-time work (CHOLMOD's symbolic analysis): report the rest.
        rows = run["per_frame"][1:] or run["per_frame"]
        frame = float(np.mean([r["frame_s"] for r in rows]))
        factor = float(np.mean([r["factor_s"] for r in rows]))
        out["robots"][robot] = {
            "vertices": run["vertices"],
            "setup_s": run["setup_s"],
            "frames_timed": len(rows),
            "frame_s": frame,
            "factor_s": factor,
            "frame_s_each": [r["frame_s"] for r in rows],
            "factor_s_each": [r["factor_s"] for r in rows],
            "frame_over_factor": frame / factor,
            "assemble_s": float(np.mean([r["assemble_s"] for r in rows])),
            "reduce_s": float(np.mean([r["reduce_s"] for r in rows])),
            "condense_s": float(np.mean([r["condense_s"] for r in rows])),
            "qp_loop_s": float(np.mean([r["qp_loop_s"] for r in rows])),
            "qps_per_frame": float(np.mean([r["qps"] for r in rows])),
            "paper_frame_s": PAPER_FRAME_S[robot],
            "speedup_vs_paper": PAPER_FRAME_S[robot] / frame,
            "goal_speedup": 3.0,
            "infeasible_frames": sum(bool(r["infeasible"]) for r in run["per_frame"]),
            "max_torque_ratio": max(r["max_torque_ratio"] for r in run["per_frame"]),
        }
        if robot == args.uncondensed_robot and not args.no_uncondensed:
            # Condensed vs uncondensed: the same labelled QP (all static but the rear right
            # foot, which may lift) on the same frame, built and solved both ways.
            dyn, qpcc, model = run["dynamics"], run["qpcc"], run["model"]
            if args.uncondensed_skin == "pad":
                # The tests' 8 mm foot-pad skin (~4.5k vertices): Clarabel solves the
                # uncondensed QP of a full skin (46k dofs) only after ~10 min, if at all.
                from drakebots.skinned.qpcc import FrameQpcc, QpccConfig
                from drakebots.skinned.qpcc_coupled import CoupledFrameDynamics

                sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root
                from tests.skinned._pad_skin import MakeFootPadSkin

                dyn = CoupledFrameDynamics(model, MakeFootPadSkin(model), 0.005)
                qpcc = FrameQpcc(model, dyn, model.effort_limits, 0.8, QpccConfig())
            dyn.Reset(dyn.initial)
            q, v = dyn.q_stand.copy(), np.zeros(model.nv)
            target = q.copy()
            target[1] += 0.01
            tau = np.zeros(model.nu)
            P = dyn.num_patches
            labels = [STATIC] * (P - 5) + [BREAKAGE] * 5
            print(f"[qpcc] {robot}: condensed vs uncondensed QP ...", flush=True)
            t0 = time.perf_counter()
            lin = dyn.Linearize(q, v)
            H, g, c = qpcc._Objective(q, lin, target, v * 0.005, tau, range(4), range(4))
            condensed = qpcc._SolveLabelled(lin, H, g, c, labels, {})
            t_condensed = time.perf_counter() - t0
            t0 = time.perf_counter()
            reference = UncondensedQp(
                qpcc,
                dyn,
                lin,
                labels,
                q,
                target,
                v * 0.005,
                tau,
                flat_feet=range(4),
                support_feet=range(4),
            )
            t_unc = time.perf_counter() - t0
            out["condensed_vs_uncondensed"] = {
                "robot": robot,
                "skin": args.uncondensed_skin,
                "skin_vertices": int(dyn.n),
                "condensed_frame_qp_s": t_condensed,
                "condensed_qp_only_s": t_condensed - lin.timings["total"],
                "uncondensed_qp_s": t_unc,
                "uncondensed_variables": int(reference["num_vars"]),
                "uncondensed_status": str(reference["status"]),
                "speedup_frame": t_unc / t_condensed,
                "speedup_qp": t_unc / max(t_condensed - lin.timings["total"], 1e-9),
                "paper_speedup": PAPER_CONDENSED_SPEEDUP,
                "max_torque_difference_nm": float(
                    np.abs(condensed["z"][: model.nu] - reference["z"][: model.nu]).max()
                ),
                "energy_relative_difference": float(
                    abs(condensed["energy"] - reference["energy"])
                    / max(abs(reference["energy"]), 1e-12)
                ),
            }
    out["load_average_end"] = os.getloadavg()[0]
    return out


class _StopAfterFrames(Exception):
    """Raised by the patched frame-by-frame pass once its frames are timed."""

    def __init__(self, frames, dynamics, cpu_s):
        super().__init__("frames timed")
        self.frames = frames
        self.dynamics = dynamics
        self.cpu_s = cpu_s


# Design workloads: a real `drakebots design` run's first frame-by-frame pass (walking frames).
# "beetle-walk" is the default: the beetle's full skin as `drakebots skin beetle` makes it
# (12.7k vertices; Table 1's beetle has 14,152) walking at the generator's 0.015 m/s: the
# paper's Table 1 timed walking frames on full skins of 12.5k-18.3k vertices. "monster-walk"
# is issue 52's target workload: the README's monster walk at 0.06 m/s, 5.9 N*m motors, on its
# folded 44.4k-vertex skin (2.7 times the paper's monster skin; 42.9k before the grid held its
# torso's sides, Findings 38 of docs/reproductions/skinned.md).
DESIGN_WORKLOADS = {
    "beetle-walk": {
        "robot": "beetle",
        "motion": "walk",
        "speed": None,
        "motor_limit": None,
        "skin": "runs/beetle_skin",
        "skin_command": "drakebots skin beetle --out {skin}",
    },
    "monster-walk": {
        "robot": "monster",
        "motion": "walk",
        "speed": 0.06,
        "motor_limit": 5.9,
        "skin": "runs/monster_skin",
        "skin_command": "drakebots skin monster --pieces --youngs-modulus 6.7e5 "
        "--folding-regions knees,ankles --fold-depth 0.012 --fold-pitch 0.024 --voxel 0.008 "
        "--out {skin}",
    },
}


_SETTLED = {}  # the settled skins of this process's design runs (`_DesignFrames`)
_PLANS = {}  # the first design run's plan per workload (`_DesignFrames`)


def _PlanKey(workload: dict) -> tuple:
    """The key of a workload's plan in _PLANS (one plan for every variant of a workload)."""
    return (workload["robot"], workload["motion"], workload["speed"], str(workload["skin"]))


def _DesignFrames(
    workload: dict,
    frames: int,
    solver: str,
    condensation: str,
    kernel: str = "auto",
    pairs: str = "columns",
    threads: str = "auto",
    patches: str = "border",
):
    """The first `frames` frames of the design run's first frame-by-frame pass, with the coupled
    frames factorised by `solver` and condensed by `condensation` (the design workflow runs
    them: same plan, same QPCC, same skin). The skin's settling into the first pose (once per
    pass) is done before the clock starts."""
    from drakebots.fem.model import KernelThreads
    from drakebots.skinned import alternating, design, qpcc_coupled
    from drakebots.skinned.design import Design, DesignConfig

    original = alternating.RunFrameByFrame
    original_factory = design._Factory
    original_settled = qpcc_coupled.CoupledFrameDynamics.SettledSkin
    count = frames + 1

    def SettledOnce(self, q, steps=None):
        # Every variant starts from one settled skin: the settling (Newton to 1e-3 N) is not
        # what the variants differ in, and its round-off moved the compared frames by up to
        # 5e-3 in q on the beetle's walk (measured), where from one start they agree to 1e-9.
        key = (np.round(np.asarray(q, float), 12).tobytes(), self.n, steps)
        if key not in _SETTLED:
            _SETTLED[key] = original_settled(self, q, steps)
        return _SETTLED[key].copy()

    def Factory(skin, collisions=True, linear_solver="auto"):
        make, name = original_factory(skin, collisions, linear_solver)

        def Make(model, dt):
            dyn = make(model, dt)
            dyn.config.condensation = condensation
            # The skin's element loop (FemModel(kernel=...)): "numpy" is the compiled loop's
            # reference (a variant's third part, e.g. auto/schur/numpy).
            dyn.stepper.fem.kernel = {"auto": dyn.stepper.fem.kernel}.get(kernel, kernel)
            # The self-collision pairs (CoupledFrameConfig.pair_columns): "columns", low-rank
            # columns of the Schur condensation, or "inline" in the skin block's growing
            # pattern (the reference; a variant's fourth part, e.g. auto/schur/auto/inline).
            if pairs not in ("columns", "inline"):
                raise ValueError(f"unknown pairs '{pairs}' (columns or inline)")
            dyn.config.pair_columns = pairs == "columns"
            # The element loop's threads (CoupledFrameConfig.element_threads): "auto" the
            # config's default, or a count (a variant's fifth part, e.g. auto/schur/auto/columns/1).
            if threads != "auto":
                dyn.stepper.fem.kernel_threads = KernelThreads(requested=int(threads))
            # The patches' columns (CoupledFrameConfig.patch_schur): "border", PARDISO's Schur
            # block, or "halfsolve" (the reference; a variant's sixth part).
            if patches not in ("border", "halfsolve"):
                raise ValueError(f"unknown patches '{patches}' (border or halfsolve)")
            dyn.config.patch_schur = patches == "border"
            # The config is read when the factor is made.
            if condensation != "schur":
                from drakebots.skinned.qpcc_coupled import _ReducedFactor

                dyn._factor = _ReducedFactor(dyn.config.linear_solver, model.nv)
            elif patches != "border":
                from drakebots.skinned.qpcc_coupled import _SchurCondensation

                dyn._factor = _SchurCondensation(dyn.config.linear_solver)
            return dyn

        return Make, name

    def FirstFrames(model, dynamics, qpcc, q_plan, contact_plan, **kwargs):
        kwargs["progress"] = None
        # Every variant follows the first one's plan (the space-time step run again in the same
        # process gave a plan that moved the compared frames by 1e-4 N*m within three frames).
        q_plan, contact_plan = _PLANS.setdefault(
            _PlanKey(workload), (q_plan.copy(), contact_plan.copy())
        )
        dynamics.SkinState(q_plan[0], (q_plan[1] - q_plan[0]) / dynamics.dt)  # settle first
        cpu = time.process_time()
        run = original(model, dynamics, qpcc, q_plan[:count], contact_plan[:, :count], **kwargs)
        raise _StopAfterFrames(run, dynamics, time.process_time() - cpu)

    config = DesignConfig(
        robot=workload["robot"],
        motion=workload["motion"],
        speed=workload["speed"],
        motor_limit=workload["motor_limit"],
        skin=str(workload["skin"]),
        linear_solver=solver,
        iterations=1,
        coupled_replay_seconds=0.0,
        replay=False,
    )
    alternating.RunFrameByFrame = FirstFrames
    design._Factory = Factory
    qpcc_coupled.CoupledFrameDynamics.SettledSkin = SettledOnce
    try:
        Design(config)
    except _StopAfterFrames as stop:
        return stop.frames, stop.dynamics, stop.cpu_s
    finally:
        alternating.RunFrameByFrame = original
        design._Factory = original_factory
        qpcc_coupled.CoupledFrameDynamics.SettledSkin = original_settled
    raise RuntimeError("the design run ended before its frame-by-frame pass")


def _DesignWorkloads(args):
    """(name, workload, why it is skipped or None) for each `--design` workload, its skin
    folder from --design-skin / --monster-skin (made by `_EnsureSkin` where missing)."""
    for name in args.design:
        workload = dict(DESIGN_WORKLOADS[name])
        if name == "beetle-walk" and args.design_skin:
            workload["skin"] = args.design_skin
        if name == "monster-walk" and args.monster_skin:
            workload["skin"] = args.monster_skin
        yield name, workload, _EnsureSkin(name, workload)


def SettleSection(args) -> dict:
    """The skin's settling against its collision penalties at a design run's first pose
    (`CoupledFrameDynamics._SettleAgainstPenalties`, once per frame-by-frame pass, after the
    elastic continuation): modified Newton (the default) against full Newton, a fresh matrix
    at every iteration (`refresh_above=0`, the reference), from the same elastic equilibrium
    in the same process, alternated `--settle-rounds` times. Each reports its seconds, fresh
    matrices and iterations on kept ones, and the residual it reaches (max |∇E - f_pen| on the
    free vertices, recomputed here from the FEM gradient and the penalties); the pair, the
    distance between their settled skins."""
    from drakebots.skinned import qpcc_coupled

    cls = qpcc_coupled.CoupledFrameDynamics
    original = cls._SettleAgainstPenalties
    out = {"workloads": {}, "load_average_start": os.getloadavg()}
    for name, workload, skipped in _DesignWorkloads(args):
        if skipped:
            out["workloads"][name] = {"skipped": skipped}
            continue
        captured = {}

        def Capture(self, q, x, *a, _into=captured, **k):
            _into.update(dynamics=self, q=np.array(q, float), x=np.array(x, float))
            return original(self, q, x, *a, **k)

        _SETTLED.clear()  # (the design frames' cache: the settling must run here)
        cls._SettleAgainstPenalties = Capture
        try:
            _DesignFrames(workload, 1, "auto", "schur")
        finally:
            cls._SettleAgainstPenalties = original
        dyn, q, x0 = captured["dynamics"], captured["q"], captured["x"]

        def Residual(x, dyn=dyn, q=q):
            pen = dyn.stepper.Penalties(q, x)
            return float(np.abs(dyn.stepper.fem.Gradient(x) - pen.forces)[dyn.free].max())

        row = {
            "workload": f"{workload['robot']} {workload['motion']} on its skin "
            f"{workload['skin']}: the skin settled against its collision penalties at the first "
            "pose of `drakebots design`'s first frame-by-frame pass, from its elastic "
            "equilibrium there",
            "skin_vertices": int(dyn.n),
            "start_residual_n": Residual(x0),
            "cases": {},
        }
        settled = {}
        for _ in range(args.settle_rounds):
            for case, options in (("full_newton", {"refresh_above": 0.0}), ("modified_newton", {})):
                print(f"[settle] {name}: {case} ...", flush=True)
                wall, cpu = time.perf_counter(), time.process_time()
                x = original(dyn, q, x0.copy(), **options)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                fresh, kept = dyn.settle_iterations
                entry = row["cases"].setdefault(case, {"seconds": [], "cpu_s": []})
                entry["seconds"].append(wall)
                entry["cpu_s"].append(cpu)
                entry.update(
                    fresh_matrices=int(fresh),
                    kept_matrix_iterations=int(kept),
                    max_residual_n=Residual(x),
                )
                settled[case] = x
        full, modified = row["cases"]["full_newton"], row["cases"]["modified_newton"]
        row["settle_s"] = float(np.median(modified["seconds"]))
        row["ratio_modified_over_full"] = row["settle_s"] / float(np.median(full["seconds"]))
        row["max_state_difference_m"] = float(
            np.abs(settled["full_newton"] - settled["modified_newton"]).max()
        )
        out["workloads"][name] = row
        print(
            f"[settle] {name}: modified Newton {row['settle_s']:.2f} s "
            f"({modified['fresh_matrices']} fresh matrices, {modified['kept_matrix_iterations']} "
            f"kept) against full Newton {np.median(full['seconds']):.2f} s "
            f"({full['fresh_matrices']}): ratio {row['ratio_modified_over_full']:.2f}; residuals "
            f"{modified['max_residual_n']:.2e} / {full['max_residual_n']:.2e} N (from "
            f"{row['start_residual_n']:.2f}), skins within {row['max_state_difference_m']:.1e} m",
            flush=True,
        )
    out["load_average_end"] = os.getloadavg()
    return out


def _FactorTimes(K, ordering) -> dict:
    """One numeric factorisation of K by each backend that loads (the symbolic analysis, done
    once per pattern in a run, is timed apart), seconds; SuperLU in `ordering` (the QPCC's:
    METIS on the skin's vertices, the skeleton's coordinates last)."""
    from drakebots.fem.solvers import (
        CholmodAvailable,
        CholmodFactor,
        OrderedSplu,
        PardisoAvailable,
        PardisoFactor,
    )

    out = {}
    makers = {"splu": lambda: OrderedSplu(ordering)}
    if PardisoAvailable():
        makers["pardiso"] = PardisoFactor
    if CholmodAvailable():
        makers["cholmod"] = lambda: CholmodFactor("nesdis")
    for name, make in makers.items():
        factor = make()
        t0 = time.perf_counter()
        factor.Factor(K)  # the analysis (and SuperLU's ordering) plus a first factorisation
        t1 = time.perf_counter()
        factor.Factor(K)  # the numeric factorisation alone
        t2 = time.perf_counter()
        out[name] = {"first_s": t1 - t0, "numeric_s": t2 - t1}
        flops = getattr(factor, "factor_flops", 0.0)
        if flops:
            # PARDISO's own operation count, and the rate its numeric factorisation ran at.
            out[name]["gflop"] = flops / 1e9
            out[name]["gflop_per_s"] = flops / 1e9 / (t2 - t1)
    return out


def _EnsureSkin(name: str, workload: dict) -> str | None:
    """Makes the workload's skin with the project's own skin command where it is missing (the
    beetle's: about a minute); returns a reason to skip, or None."""
    skin = Path(workload["skin"])
    if (skin / "skin.npz").is_file():
        return None
    command = workload["skin_command"].format(skin=skin)
    if name != "beetle-walk":
        return f"no skin at {skin} (make it with: {command})"
    import subprocess

    print(f"[design] making the skin: {command}", flush=True)
    done = subprocess.run([sys.executable, "-m", "drakebots", *command.split()[1:]], check=False)
    return None if done.returncode == 0 else f"`{command}` failed (exit {done.returncode})"


def DesignFramesSection(args) -> dict:
    """Seconds per walking frame of a real design run on a paper-scale skin, beside Table 1;
    each condensation and factorisation in the same process (see the module docstring)."""
    out = {"workloads": {}, "load_average_start": os.getloadavg()}
    for name, workload, skipped in _DesignWorkloads(args):
        if skipped:
            out["workloads"][name] = {"skipped": skipped}
            continue
        speed = "the generator's" if workload["speed"] is None else f"{workload['speed']} m/s"
        row = {
            "workload": f"{workload['robot']} {workload['motion']} ({speed}) on its skin "
            f"{workload['skin']}: the first {args.design_frames} frames of the first "
            "frame-by-frame pass of `drakebots design` (iteration 1), run by "
            "drakebots.skinned.Design; the skin settled into the first pose before the clock",
            "robot": workload["robot"],
            "paper_frame_s": PAPER_FRAME_S[workload["robot"]],
            "paper_skin_vertices": PAPER_SKIN_VERTICES[workload["robot"]],
            "variants": {},
        }
        runs = {}
        for variant in args.design_variants:
            parts = variant.split("/")
            defaults = ["auto", "schur", "auto", "columns", "auto", "border"]
            solver, condensation, kernel, pairs, threads, patches = (
                parts + defaults[len(parts) :]
            )[:6]
            print(
                f"[design] {name}: {args.design_frames} frames, {solver}, {condensation} ...",
                flush=True,
            )
            load = os.getloadavg()[0]
            frames, dynamics, cpu = _DesignFrames(
                workload, args.design_frames, solver, condensation, kernel, pairs, threads, patches
            )
            runs[variant] = frames
            times = np.asarray(frames.frame_time, float)
            done = max(1, int(frames.frames_done))
            row["skin_vertices"] = int(dynamics.n)
            row["variants"][variant] = {
                "solver": dynamics.solver_name,
                "condensation": condensation,
                "element_loop": dynamics.stepper.fem.kernel,
                "element_threads": int(dynamics.stepper.fem.kernel_threads),
                "self_collision_pairs": pairs if condensation == "schur" else "inline",
                "patch_columns": patches if condensation == "schur" else "in K_red",
                "pattern_analyses": int(getattr(dynamics._factor, "analyses", 0)),
                "frames_done": int(frames.frames_done),
                "infeasible": [int(i) for i, _ in frames.infeasible],
                "frame_s_each": times.tolist(),
                # The first frame carries the one-time analysis: the median of the rest.
                "design_frame_s": float(np.median(times[1:] if len(times) > 1 else times)),
                "cpu_s_per_frame": cpu / done,
                "load_average": load,
            }
            if variant == args.design_variants[0]:
                factor = dynamics._factor
                K = getattr(factor, "_A", None)
                if K is None:
                    K = factor._factor._matrix
                row["factored_matrix"] = {"rows": int(K.shape[0]), "nonzeros": int(K.nnz)}
                if args.factorizations:
                    row["factorizations"] = _FactorTimes(K, factor._Ordering)
        first = args.design_variants[0]
        row["design_frame_s"] = row["variants"][first]["design_frame_s"]
        row["cpu_s_per_frame"] = row["variants"][first]["cpu_s_per_frame"]
        row["ratio_to_paper"] = row["design_frame_s"] / row["paper_frame_s"]
        for variant in args.design_variants[1:]:
            a, b = runs[first], runs[variant]
            n = min(len(a.tau), len(b.tau))
            row["variants"][variant]["speedup_of_first"] = (
                row["variants"][variant]["design_frame_s"] / row["design_frame_s"]
            )
            row["variants"][variant]["max_torque_difference_nm"] = float(
                np.abs(a.tau[:n] - b.tau[:n]).max()
            )
            row["variants"][variant]["max_q_difference"] = float(
                np.abs(a.q[: n + 1] - b.q[: n + 1]).max()
            )
            row["variants"][variant]["max_force_difference_n"] = float(
                np.abs(a.forces[:n] - b.forces[:n]).max()
            )
        factors = row.get("factorizations", {})
        if "pardiso" in factors:
            row["factorization_s"] = factors["pardiso"]["numeric_s"]
            # A frame-by-frame pass is Eq. 12 linearised at each frame: one numeric
            # factorisation of the frame's matrix a frame, so the pass takes at least this
            # long on this machine whatever else gets faster (Findings 16).
            row["pass_frames"] = len(_PLANS[_PlanKey(workload)][0]) - 1
            row["pass_factorization_floor_s"] = row["pass_frames"] * row["factorization_s"]
        out["workloads"][name] = row
    out["load_average_end"] = os.getloadavg()
    return out


def _PrintDesign(d):
    for name, row in d["workloads"].items():
        if "skipped" in row:
            print(f"design frames, {name}: skipped ({row['skipped']})")
            continue
        print(f"{name}: {row['workload']}")
        print(
            f"  skin {row['skin_vertices']} vertices (paper's {row['robot']}: "
            f"{row['paper_skin_vertices']})"
        )
        for variant, v in row["variants"].items():
            extra = ""
            if "speedup_of_first" in v:
                extra = (
                    f"; {row['variants'][next(iter(row['variants']))]['solver']} "
                    f"{next(iter(row['variants']))} is {v['speedup_of_first']:.2f}x faster, "
                    f"max torque difference {v['max_torque_difference_nm']:.1e} N*m, "
                    f"max q difference {v['max_q_difference']:.1e}"
                )
            print(
                f"  {variant:<14} {v['design_frame_s']:.2f} s/frame wall (median), "
                f"{v['cpu_s_per_frame']:.2f} s CPU, load {v['load_average']:.1f}, "
                f"{v['frames_done']} frames, infeasible {v['infeasible']}{extra}"
            )
        print(
            f"  Table 1 ({row['robot']}, 4-core i7-7700): {row['paper_frame_s']:.2f} s/frame; "
            f"ours {row['design_frame_s']:.2f} s = {row['ratio_to_paper']:.2f} of the paper's"
        )
        for solver, f in row.get("factorizations", {}).items():
            print(
                f"  factorisation of the {row['factored_matrix']['rows']}-row matrix, {solver}: "
                f"numeric {f['numeric_s']:.3f} s (first, with analysis {f['first_s']:.3f} s)"
                + (
                    f", {f['gflop']:.2f} GFlop at {f['gflop_per_s']:.1f} GFlop/s"
                    if "gflop" in f
                    else ""
                )
            )
        if "pass_factorization_floor_s" in row:
            print(
                f"  a frame-by-frame pass of {row['pass_frames']} frames: at least "
                f"{row['pass_factorization_floor_s']:.0f} s in its factorisations alone"
            )


def main():
    from drakebots.runtime import KeepFreedMemory

    KeepFreedMemory()  # as the `drakebots` command runs (opt-in: drakebots.runtime)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/bench/skinned.json")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="only the standing frames on the tests' 4.5k-vertex foot-pad skin (seconds; not "
        "like for like with Table 1)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also the standing frames per robot skin (--robots) and the space-time section",
    )
    parser.add_argument("--skip-design", action="store_true", help="no design frames")
    parser.add_argument(
        "--skip-qpcc",
        action="store_true",
        help="no standing frames; runs the "
        "space-time section (as scripts/reproduce.py's row 7 asks for it)",
    )
    parser.add_argument("--skip-space-time", action="store_true")
    parser.add_argument("--knot-frames", type=int, default=8)
    parser.add_argument("--max-iterations", type=int, default=40)
    parser.add_argument(
        "--robots", default="beetle,monster,lizard,cow", help="robots for the standing section"
    )
    parser.add_argument("--skins", default="runs", help="folder holding <robot>_skin folders")
    parser.add_argument(
        "--frames",
        type=int,
        default=6,
        help="standing frames run per robot (the first is not timed)",
    )
    parser.add_argument("--uncondensed-robot", default="beetle")
    parser.add_argument("--no-uncondensed", action="store_true")
    parser.add_argument(
        "--uncondensed-skin",
        choices=("pad", "full"),
        default="pad",
        help="skin of the condensed-vs-uncondensed frame: the tests' foot-pad skin or the robot's",
    )
    parser.add_argument(
        "--design",
        default="beetle-walk",
        help=f"design workloads, comma-separated ({', '.join(DESIGN_WORKLOADS)}); the first "
        "gives design_frame_s",
    )
    parser.add_argument(
        "--design-skin", default=None, help="the beetle's skin folder (default runs/beetle_skin)"
    )
    parser.add_argument(
        "--monster-skin", default=None, help="the monster's skin folder (runs/monster_skin)"
    )
    parser.add_argument("--design-frames", type=int, default=6)
    parser.add_argument(
        "--design-variants",
        default="auto/schur,auto/direct",
        help="factorisation/condensation pairs timed on the design frames (same process); the "
        "first gives design_frame_s, the others are compared with it",
    )
    parser.add_argument(
        "--settle",
        action="store_true",
        help="also time the skin's settling against its collision penalties at each design "
        "workload's first pose, modified against full Newton (SettleSection)",
    )
    parser.add_argument("--settle-rounds", type=int, default=2)
    parser.add_argument(
        "--factorizations",
        action="store_true",
        help="also time one factorisation of the frames' matrix by every backend",
    )
    args = parser.parse_args()
    args.robots = [r for r in args.robots.split(",") if r]
    args.design = [d for d in args.design.split(",") if d]
    unknown = [d for d in args.design if d not in DESIGN_WORKLOADS]
    if unknown:
        parser.error(f"unknown design workload(s) {unknown} (known: {list(DESIGN_WORKLOADS)})")
    args.design_variants = [v for v in args.design_variants.split(",") if v]
    report = {"machine": {"cpus": os.cpu_count()}}
    if args.quick:
        args.robots = ["beetle"]
        args.pad = True
        report["qpcc"] = QpccSection(args)
        _PrintQpcc(report["qpcc"])
    else:
        args.pad = False
        if not args.skip_design:
            report["design_frames"] = DesignFramesSection(args)
            _PrintDesign(report["design_frames"])
        workloads = report.get("design_frames", {}).get("workloads", {})
        first = workloads.get(args.design[0], {})
        if "design_frame_s" in first:
            report["workload"] = first["workload"]
            for key in ("design_frame_s", "cpu_s_per_frame", "paper_frame_s", "ratio_to_paper"):
                report[key] = first[key]
        for key in ("factorization_s", "pass_factorization_floor_s"):
            if key in first:
                report[key] = first[key]
        if args.settle:
            report["settle"] = SettleSection(args)
        if args.all and not args.skip_qpcc:
            report["qpcc"] = QpccSection(args)
            _PrintQpcc(report["qpcc"])
        if (args.all or args.skip_qpcc) and not args.skip_space_time:
            report["space_time"] = SpaceTimeSection(args)
            _PrintSpaceTime(report["space_time"], report.get("qpcc", {}))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {out}")


def _PrintQpcc(qp):
    print(
        f"{'robot':<9}{'vertices':>9}{'frame s':>9}{'factor s':>9}{'frame/factor':>13}"
        f"{'paper s':>9}{'speedup':>9}{'QPs':>6}"
    )
    for robot, row in qp["robots"].items():
        if "skipped" in row or "failed" in row:
            print(f"{robot:<9} {row.get('skipped') or 'failed: ' + row['failed']}")
            continue
        print(
            f"{robot:<9}{row['vertices']:>9}{row['frame_s']:>9.3f}{row['factor_s']:>9.3f}"
            f"{row['frame_over_factor']:>13.2f}{row['paper_frame_s']:>9.2f}"
            f"{row['speedup_vs_paper']:>9.2f}{row['qps_per_frame']:>6.1f}"
        )
    cu = qp.get("condensed_vs_uncondensed")
    if cu:
        print(
            f"condensed vs uncondensed ({cu['robot']}, {cu['skin']} skin, {cu['skin_vertices']} "
            f"vertices, one labelled QP): condensed "
            f"{cu['condensed_frame_qp_s']:.3f} s (QP alone {cu['condensed_qp_only_s']:.3f} s), "
            f"uncondensed {cu['uncondensed_qp_s']:.1f} s ({cu['uncondensed_variables']} "
            f"variables): {cu['speedup_frame']:.0f}x per frame, {cu['speedup_qp']:.0f}x per QP "
            f"(paper ~50x); max tau difference {cu['max_torque_difference_nm']:.2e} N*m"
        )


def _PrintSpaceTime(st, _qp):
    print(f"{'figure':<44}{'value':>14}")
    for key in (
        "knots",
        "variables",
        "evaluation_per_binding_s",
        "evaluation_vectorised_s",
        "evaluation_speedup",
        "space_time_step_s",
        "ratio_to_paper",
        "load_average",
    ):
        value = st[key]
        print(f"{key:<44}{value:>14.4g}" if isinstance(value, float) else f"{key:<44}{value:>14}")
    print(
        f"space-time status: {st['space_time_status']}; "
        f"violated: {st['space_time_violated_constraints']}"
    )


if __name__ == "__main__":
    main()
