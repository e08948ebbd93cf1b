"""Benchmark of the skin FEM against Drake's DeformableModel, measured in the same run.

Tables:
  1. linear solvers on the beetle skin's Newton matrix (the measurement behind the default),
     and one numeric factorisation of that matrix by PARDISO (the default) and by SuperLU in
     METIS order (the reference; symbolic analysis and ordering done once, as the integrator
     does): `factorization_s` and the ratio;
  2. one implicit step, ours vs Drake's DeformableModel, on the beetle skin and on the
     cantilever (same mesh, neo-Hookean material, time step, gravity): the ratio ours/Drake
     (goal <= 1.0); ours with PARDISO and with SuperLU (`implicit_step_s`, their ratio) and the
     step in numeric factorisations (issue 52's goal: <= 1.5), against the reference that
     factorises every step afresh (NewtonOptions(reuse_across_steps=False)) in the same run;
  3. the coupled skin-skeleton step of the standing beetle, landing from rest and settling
     (mean wall time, Newton iterations, factorisations and contact-column solves per step),
     with contact-label changes through the Schur complement (the default) against
     refactorising for every contact set (the previous path), in the same run: the ratio; and
     the Schur path with PARDISO (the default) and CHOLMOD against SuperLU factorising the
     coupled system (the ratios);
  4. (with --replay-design) a design's first frames replayed open loop in the coupled simulator
     (`drakebots design --skin`'s check), seconds and CPU seconds a frame, factorisations a
     frame: the default against the reference of its factorisation reuse, every contact set
     and pattern factorised afresh (fresh_factorizations, CouplingConfig.factor_reuse), with
     the ratio and the largest distance of the two runs' skin and skeleton states over the
     frames; `coupled_frame_s` is the default's seconds a frame (issue 52's goal on the
     monster's folded skin: <= 3 s). Opt-in cases (--replay-cases): Newton's matrix projected
     throughout (projected, against CouplingConfig.exact_hessian_below) and no line search and
     no update bound (without_line_search, CouplingConfig.overshoot and max_update);
     the opt-in case eigh_projection projects the element Hessians by a 9x9 eigendecomposition
     each (the reference of the analytic projection, FemModel(projection=...)): its ratio;
     the default case numpy_kernel computes the skin's energy, gradient and stiffness by the
     vectorised NumPy path instead of the compiled element loop (drakebots.fem.kernels, the
     default; FemModel(kernel=...)): `coupled_frame_ratio_over_numpy_kernel`; and
     `hessian_kernel`: one pass of each loop over the skin at the replay's first state,
     projected and exact, best of 3, with their largest difference; the opt-in cases of the
     Newton policy (issue 52): no_low_rank (a nearby contact set factorised, not a low-rank
     update: CouplingConfig.max_low_rank = 0), alternate_refresh (the factor refreshed at
     every other iteration from the 6th: full_newton_after = 6) and newton_before (both), each
     with its ratio (`ratio_newton_over_before`, ...) and the distance of the states;
  plus peak memory (resident set of the process, and tracemalloc peak of our step).

Usage:
  python scripts/bench_fem.py [--skin runs/beetle_skin] [--out runs/bench/fem.json]
      [--skip-drake-skin]   # Drake's step on the 15k-vertex skin takes minutes
      [--coupled-steps 20] [--skip-coupled-reference]
      [--replay-design runs/mw011_f067_59_v4 --skin runs/monster_skin_067_cut_folded
       --replay-frames 4 [--replay-seconds 3600] [--replay-only]
       [--replay-cases exact_near_solution,eigh_projection] [--replay-rounds 2]]
      # default: exact_near_solution (the default config) and fresh_factorizations, once each
      # a `drakebots design --skin` folder, its skin; each replay ends at its frames or seconds
  python scripts/bench_fem.py --coupled [--coupled-steps 12] --out PATH [--inputs DIR]
      [--skin MONSTER_SKIN --replay-design MONSTER_DESIGN] [--replay-frames 50]
      [--skip-scenes] [--profile-frame K] [--replay-checkpoints DIR]
      # issue 69 alone: the monster's 0.06 m/s walk replayed with the convex contact and the
      # active set (coupled_frame_s and coupled_frame_reference_s: the median of the first 20
      # frames; torso_path_difference_mm over the frames replayed, 50 by default), the
      # validation scenes against Drake (drake_*_rel_error: with Drake's material and contact
      # regularisation, against Drake at the same step) and the coarse beetle standing with
      # both (standing_*). Without --replay-design it makes the monster's folded skin and the
      # walk's design under --inputs (default: bench_fem_inputs beside PATH, or the checkout's
      # ignored runs/), about 13 minutes on the loaded 2-core machine, and reuses them later
"""

import argparse
import dataclasses
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from drakebots.results import ToJson


def _DrakeStep(vtk_path, material, h, *, clamp_x=None, steps=1, threads=1):
    """(wall, CPU) seconds per DeformableModel step (after Initialize), with Drake's own
    parallelism at `threads` (1: single-threaded, Drake's default for a DeformableModel).

    Drake 1.51 has the setting in C++ only as DeformableModel::SetParallelism(Parallelism)
    (neither MultibodyPlantConfig nor DeformableBodyConfig carries it); pydrake binds it as
    the internal `_set_parallelism`, which must be called before Finalize."""
    from pydrake.common import Parallelism
    from pydrake.geometry import GeometryInstance, Mesh, ProximityProperties
    from pydrake.math import RigidTransform
    from pydrake.multibody.fem import DeformableBodyConfig, MaterialModel
    from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(
        MultibodyPlantConfig(time_step=h, discrete_contact_approximation="sap"), builder
    )
    config = DeformableBodyConfig()
    config.set_youngs_modulus(material["E"])
    config.set_poissons_ratio(material["nu"])
    config.set_mass_density(material["rho"])
    config.set_material_model(MaterialModel.kNeoHookean)
    geometry = GeometryInstance(RigidTransform(), Mesh(str(vtk_path)), "body")
    geometry.set_proximity_properties(ProximityProperties())
    model = plant.mutable_deformable_model()
    model._set_parallelism(Parallelism(threads))
    body = model.RegisterDeformableBody(geometry, config, 1.0)
    if clamp_x is not None:
        model.SetWallBoundaryCondition(body, [clamp_x, 0.0, 0.0], [1.0, 0.0, 0.0])
    plant.Finalize()
    simulator = Simulator(builder.Build())
    simulator.Initialize()
    start, cpu = time.perf_counter(), time.process_time()
    simulator.AdvanceTo(steps * h)
    return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps


def _OurStep(mesh, material, h, *, fixed=None, steps=1, linear_solver="auto", reuse=True):
    """(wall seconds per step, Newton iterations per step, tracemalloc peak MB)."""
    from drakebots.fem.integrator import BackwardEuler, NewtonOptions
    from drakebots.fem.materials import Material
    from drakebots.fem.model import FemModel

    fem = FemModel(
        mesh,
        Material(
            youngs_modulus=material["E"],
            poissons_ratio=material["nu"],
            mass_density=material["rho"],
        ),
    )
    integ = BackwardEuler(
        fem,
        fixed_vertices=fixed,
        options=NewtonOptions(linear_solver=linear_solver, reuse_across_steps=reuse),
    )
    x, v = fem.RestPositions(), np.zeros(fem.num_dofs)
    integ.Step(x, v, h)  # warm-up: the fill-reducing ordering is computed once
    tracemalloc.start()
    start = time.perf_counter()
    iterations = 0
    for _ in range(steps):
        x, v = integ.Step(x, v, h)
        iterations += integ.stats.newton_iterations
    wall = (time.perf_counter() - start) / steps
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return wall, iterations / steps, peak / 1e6


def _Solvers(mesh, material, h):
    from drakebots.fem.materials import Material
    from drakebots.fem.model import FemModel
    from drakebots.fem.solvers import Factorize, PardisoAvailable

    fem = FemModel(
        mesh,
        Material(
            youngs_modulus=material["E"],
            poissons_ratio=material["nu"],
            mass_density=material["rho"],
        ),
    )
    _, _, K = fem.EnergyGradientHessian(fem.RestPositions(), project=True)
    A = K.copy()
    A.data[fem.diagonal_positions] += fem.MassDiagonal() / h**2
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    rows = []
    methods = ("pardiso", "splu_nd", "splu", "splu_colamd", "cg")
    for method in methods if PardisoAvailable() else methods[1:]:
        start = time.perf_counter()
        try:
            solver = Factorize(A, method)
            if method == "cg":
                solver._maxiter = 500  # bounded: the table only needs to show it is not viable
            factor = time.perf_counter() - start
            x = solver.solve(b)
            total = time.perf_counter() - start
            residual = float(np.linalg.norm(A @ x - b) / np.linalg.norm(b))
            rows.append(
                {
                    "method": method,
                    "factor_s": factor,
                    "factor_and_solve_s": total,
                    "relative_residual": residual,
                }
            )
        except RuntimeError as e:
            rows.append(
                {
                    "method": method,
                    "error": str(e),
                    "factor_and_solve_s": time.perf_counter() - start,
                }
            )
    return rows, _Factorizations(A, b)


def _Factorizations(A, b, repeats=3):
    """One numeric factorisation of A by PARDISO (its analysis kept, as the integrator keeps
    it) and by SuperLU in METIS nested-dissection order (the ordering computed once): the best
    of `repeats` each, alternated, the first (with the analysis or ordering) beside it."""
    from drakebots.fem.solvers import (
        Factorize,
        NestedDissection,
        PardisoAvailable,
        PardisoFactor,
    )

    out = {"matrix_rows": int(A.shape[0]), "matrix_nonzeros": int(A.nnz)}
    start = time.perf_counter()
    ordering = NestedDissection(A)
    out["splu_nd_ordering_s"] = time.perf_counter() - start
    cases = {"splu_nd": lambda: Factorize(A, "splu_nd", ordering=ordering)}
    if PardisoAvailable():
        pardiso = PardisoFactor()
        start = time.perf_counter()
        pardiso.Factor(A)
        out["pardiso_first_s"] = time.perf_counter() - start
        cases["pardiso"] = lambda: pardiso.Factor(A)
    walls = {name: [] for name in cases}
    for _ in range(repeats):
        for name, factor in cases.items():
            start = time.perf_counter()
            solver = factor()
            walls[name].append(time.perf_counter() - start)
            x = solver.solve(b)
            out[f"{name}_relative_residual"] = float(np.linalg.norm(A @ x - b) / np.linalg.norm(b))
    for name in cases:
        out[f"{name}_s"] = min(walls[name])
    if "pardiso" in cases:
        out["ratio_splu_over_pardiso"] = out["splu_nd_s"] / out["pardiso_s"]
    return out


def _Coupled(skin, steps, contact_solver="schur", factorization="splu", contact="active_set"):
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.robots import GetRobot
    from drakebots.skinned.skin_coupling import CoupledSkinSkeleton, CouplingConfig

    robot = GetRobot(skin.robot)
    plant = MultibodyPlant(0.0)
    instance = robot.AddTo(plant)
    plant.Finalize()
    stepper = CoupledSkinSkeleton(
        plant,
        instance,
        skin,
        CouplingConfig(
            time_step=0.005,
            contact_solver=contact_solver,
            factorization=factorization,
            contact=contact,
        ),
        lift=-float(skin.mesh.vertices[:, 2].min()),
        skeleton=robot.params,
    )
    state = stepper.DefaultState()
    desired = np.concatenate([state.q[stepper.actuated_q], np.zeros(stepper.nu)])
    walls, iterations, factorizations, residuals, columns, torsos = [], [], [], [], [], []
    for k in range(steps):
        start = time.perf_counter()
        state, info = stepper.Step(state, desired=desired, time_s=0.005 * k)
        walls.append(time.perf_counter() - start)
        iterations.append(info.newton_iterations)
        factorizations.append(info.factorizations)
        columns.append(info.column_solves)
        residuals.append(info.glue_residual)
        base = stepper.floating[0] + 4
        torsos.append(state.q[base : base + 3].copy())
    return {
        "contact": contact,
        "torso_path_m": [[float(a) for a in p] for p in torsos],
        "contact_solver": contact_solver,
        "factorization": factorization,
        "steps": steps,
        "first_step_s": walls[0],
        "mean_step_s": float(np.mean(walls)),
        "mean_step_after_first_s": float(np.mean(walls[1:])) if steps > 1 else walls[0],
        "newton_iterations_per_step": float(np.mean(iterations)),
        "factorizations_per_step": float(np.mean(factorizations)),
        "contact_column_solves_per_step": float(np.mean(columns)),
        "max_penetration_m": float(info.max_penetration),
        "contacts_at_end": int(info.contacts),
        "base_height_m": float(state.q[stepper.floating[0] + 6]),
        "wall_s_per_step": [float(w) for w in walls],
        "glue_residual_max_m": float(np.max(residuals)),
        "real_time_factor": 0.005 / float(np.mean(walls)),
    }


# Table 4's configurations: the default (the exact Hessian near the solution, the line search
# and the update bound), and each of the two changed back.
REPLAY_CASES = {
    "projected": {"exact_hessian_below": 0.0},
    "exact_near_solution": {},
    # The reference of the factorisation reuse (CouplingConfig.factor_reuse): every contact set
    # and pattern factorised afresh, the path before issue 52.
    "fresh_factorizations": {"factor_reuse": "fresh"},
    "without_line_search": {"overshoot": np.inf, "max_update": 0.0},
    # The references of the Newton policy of issue 52's last stop: a contact set near the last
    # factorised one factorised (or, one coordinate off, solved by GMRES) instead of a low-rank
    # update (CouplingConfig.max_low_rank), and the factor refreshed every other iteration from
    # the 6th however fast the updates contract (CouplingConfig.full_newton_after); "newton_before"
    # both, the simulator before that stop.
    "no_low_rank": {"max_low_rank": 0},
    "alternate_refresh": {"full_newton_after": 6},
    "newton_before": {"max_low_rank": 0, "full_newton_after": 6},
    # Issue 69: the ground contact as one convex problem a step (CouplingConfig.contact; the
    # reference is "exact_near_solution", today's active set).
    "convex_contact": {"contact": "convex"},
    # Not a CouplingConfig field: the skin's FemModel projection (issue 52's reference).
    "eigh_projection": {"projection": "eigh"},
    # Not a CouplingConfig field: the skin's element loop, NumPy's (the reference of the
    # compiled one, drakebots.fem.kernels).
    "numpy_kernel": {"kernel": "numpy"},
}
DEFAULT_REPLAY_CASES = ("exact_near_solution", "fresh_factorizations", "numpy_kernel")


def _Replay(
    skin,
    design_dir: Path,
    frames: int,
    seconds: float,
    names=DEFAULT_REPLAY_CASES,
    rounds=1,
    profile=None,
    checkpoints=None,
):
    """Table 4: the design's first `frames` frames replayed open loop in the coupled simulator
    from the state its pass started from (as `drakebots design` does), for up to `seconds`
    each: the default config against the projected Newton matrix throughout and against no
    line search (the `names` of REPLAY_CASES; a ratio where both of its cases ran). With
    `rounds` > 1 the cases alternate (forward, then backward order) and each figure is the
    median over the rounds, CPU seconds of this process beside the wall seconds. `profile`
    (case, step index, path): that case's step profiled by cProfile in its first round, the
    statistics written to path. `checkpoints` (a folder, one round only): each case's replay
    keeps its progress in CASE.npz there and resumes from it (PlaybackFramesCoupled's
    `checkpoint`: the whole 200-frame walk over several runs); the per-frame figures are then
    those of the frames this run stepped, the states' differences are left out where a case
    resumed, and the torso paths are the whole replays'."""
    import dataclasses

    from drakebots.skinned.design import _Factory
    from drakebots.skinned.playback import PlaybackFramesCoupled
    from drakebots.skinned.skeleton_model import SkeletonModel, SkinLoad

    summary = json.loads((design_dir / "summary.json").read_text())
    inputs = summary["inputs"]
    robot = inputs["robot"]
    log = np.load(design_dir / "log.npz")
    make, _ = _Factory((skin, SkeletonModel(robot, skin_load=SkinLoad()), None))
    dyn = make(None, float(log["times"][1] - log["times"][0]))
    model = SkeletonModel(robot)
    q = log["q_frames"][: frames + 1].copy()
    tau = log["tau"][:frames]
    q[:, 2] += dyn.lift
    start = time.perf_counter()
    state = dyn.CoupledState(q[0], log["v_frames"][0])
    rows = {
        "design": str(design_dir),
        "frames": frames,
        "start_state_s": time.perf_counter() - start,
    }
    rows["hessian_kernel"] = _HessianKernels(dyn.NewSimulator().fem, state.x)
    limits = np.asarray(inputs["motor_limits"], float) * np.ones(model.nu)
    # The COP is judged against the plan's support polygons (Eq. 5) where the design folder
    # holds its motion, as `drakebots design` judges its replay.
    polygons = None
    if (design_dir / "motion.yaml").is_file():
        from drakebots.skinned.motion import MotionFromYaml, SampleMotion
        from drakebots.skinned.space_time import PlannedSupportPolygons

        motion = SampleMotion(MotionFromYaml(design_dir / "motion.yaml"))
        polygons = PlannedSupportPolygons(model, motion, range(len(q)))
    finals, skins, skeletons, margins = {}, {}, {}, {}
    cases = {name: REPLAY_CASES[name] for name in names}
    if checkpoints is not None and rounds > 1:
        raise ValueError("replay checkpoints take one round (a second would resume a finished one)")
    walls, cpus = {name: [] for name in cases}, {name: [] for name in cases}
    for round_ in range(rounds):  # alternated: other workers' load drifts over minutes
        for name in list(cases) if round_ % 2 == 0 else list(cases)[::-1]:
            changes = dict(cases[name])
            sim = dyn.NewSimulator()
            sim.fem.projection = changes.pop("projection", sim.fem.projection)
            sim.fem.kernel = changes.pop("kernel", sim.fem.kernel)
            sim.config = dataclasses.replace(sim.config, **changes)
            steps = []  # (StepInfo, skin positions) of each step
            step_walls = []  # wall seconds of each step
            step = sim.Step
            profiled = profile if profile and profile[0] == name and round_ == 0 else None

            def Recorded(*a, _step=step, _steps=steps, _walls=step_walls, _p=profiled, **k):
                profiler = None
                if _p is not None and len(_steps) == _p[1]:
                    import cProfile

                    profiler = cProfile.Profile()
                    profiler.enable()
                begin = time.perf_counter()
                new, info = _step(*a, **k)
                _walls.append(time.perf_counter() - begin)
                if profiler is not None:
                    profiler.disable()
                    profiler.dump_stats(str(_p[2]))
                    print(f"   profile of {_p[0]}'s step {_p[1]}: {_p[2]}", flush=True)
                _steps.append((info, new.x.copy()))
                return new, info

            sim.Step = Recorded
            start, cpu = time.perf_counter(), time.process_time()
            figures, _, Q = PlaybackFramesCoupled(
                sim,
                state,
                q,
                tau,
                model.actuated_indices,
                max_wall_s=seconds,
                effort_limits=limits,
                checkpoint=None if checkpoints is None else Path(checkpoints) / f"{name}.npz",
                support_polygons=polygons,
            )
            wall = time.perf_counter() - start
            replayed = figures["frames_run"]  # this run's (a resumed replay's are fewer)
            walls[name].append(wall / max(replayed, 1))
            cpus[name].append((time.process_time() - cpu) / max(replayed, 1))
            rows[name] = {
                "wall_s": wall,
                "frames_replayed": figures["frames_replayed"],
                "frames_run": replayed,
                "resumed_from_frame": figures["resumed_from_frame"],
                "seconds_per_frame": float(np.median(walls[name])),
                "cpu_seconds_per_frame": float(np.median(cpus[name])),
                "seconds_per_frame_each_round": walls[name],
                # The steps' own wall seconds (a frame is a step of the design's 5 ms unless a
                # step was cut), the last round's: their median is issue 69's figure.
                "step_s": step_walls,
                "median_step_s": float(np.median(step_walls)) if step_walls else None,
                "steps": len(step_walls),
                "factorizations_per_frame": _PerFrame(steps, "factorizations", replayed),
                "exact_factorizations_per_frame": _PerFrame(
                    steps, "exact_factorizations", replayed
                ),
                "newton_iterations_per_frame": _PerFrame(steps, "newton_iterations", replayed),
                "contact_column_solves_per_frame": _PerFrame(steps, "column_solves", replayed),
                "krylov_iterations_per_frame": _PerFrame(steps, "krylov_iterations", replayed),
                "low_rank_solves_per_frame": _PerFrame(steps, "low_rank_solves", replayed),
                # Steps accepted at the iteration cap with the glue holding (StepInfo.
                # final_update above the position tolerance), and their largest last update.
                "unconverged_steps": sum(
                    info.final_update > sim.config.position_tolerance for info, _ in steps
                ),
                "largest_final_update_m": max(
                    (info.final_update for info, _ in steps), default=0.0
                ),
                "max_torso_error_m": figures["max_torso_position_error_m"],
                # The design's verdict on this replay: how long the torso stayed within 2 cm
                # of the plan, and its whole pose within 2 cm and 5 deg (the whole replay:
                # 0.005 x frames_replayed), where it ended, its largest angles (yaw, pitch, roll).
                "torso_within_2cm_s": figures["torso_within_2cm_s"],
                "torso_pose_held_s": figures["torso_pose_held_s"],
                "max_torso_angle_error_deg": figures["max_torso_angle_error_deg"],
                "final_torso_error_m": figures["final_torso_position_error_m"],
                "max_joint_error_deg": figures["max_joint_error_deg"],
                "failure": figures["failure"],
                "stopped": figures["stopped"],
                # The design's verdict items on the replay: the ground's COP against the plan's
                # support polygons, frames airborne with a foot planned down, the torques.
                "frames_cop_outside": figures["frames_cop_outside"],
                "min_cop_margin_m": figures["min_cop_margin_m"],
                "frames_without_ground_contact": figures["frames_without_ground_contact"],
                "max_torque_ratio": figures["max_torque_ratio"],
                "cop_m": figures["cop_m"],
                "cop_margin_m": figures["cop_margin_m"],
                "ground_force_n": figures["ground_force_n"],
            }
            margins[name] = figures["cop_margin_m"]
            finals[name] = np.asarray(Q[-1])
            # (A resumed replay's first steps are not this run's: no skins to compare.)
            skins[name] = [x for _, x in steps] if not figures["resumed_from_frame"] else []
            skeletons[name] = np.asarray(Q)
            first = figures["resumed_from_frame"]
            resumed = f"(resumed at frame {first}) " if first else ""
            print(
                f"   {name:<20} {wall:7.1f} s for {replayed} of {frames} frames "
                f"{resumed}({walls[name][-1]:.1f} s a frame, CPU {cpus[name][-1]:.1f} s, "
                f"{rows[name]['factorizations_per_frame']:.1f} factorisations a frame)",
                flush=True,
            )
    per_frame = {name: rows[name]["seconds_per_frame"] for name in cases}
    for ratio, other in [
        ("ratio_exact_over_projected", "projected"),
        ("ratio_line_search_over_without", "without_line_search"),
        ("ratio_analytic_over_eigh_projection", "eigh_projection"),
        ("ratio_compiled_over_numpy_kernel", "numpy_kernel"),
    ]:
        if "exact_near_solution" in cases and other in cases:
            rows[ratio] = per_frame["exact_near_solution"] / per_frame[other]
            cpu = rows["exact_near_solution"]["cpu_seconds_per_frame"]
            rows[f"{ratio}_cpu"] = cpu / rows[other]["cpu_seconds_per_frame"]
            print(
                f"   seconds a frame, {ratio[6:]}: {rows[ratio]:.3f} "
                f"(CPU seconds {rows[f'{ratio}_cpu']:.3f})",
                flush=True,
            )
    # Each reference with the same solution to the solver tolerance against the default, same
    # run: seconds and CPU seconds a frame, factorisations a frame, and how far apart the states
    # are (every frame).
    for other, ratio, prefix in [
        ("fresh_factorizations", "ratio_reuse_over_fresh", "fresh"),
        ("newton_before", "ratio_newton_over_before", "newton_before"),
        ("no_low_rank", "ratio_low_rank_over_without", "no_low_rank"),
        ("alternate_refresh", "ratio_contraction_over_alternate_refresh", "alternate_refresh"),
    ]:
        if "exact_near_solution" not in cases or other not in cases:
            continue
        new, ref = rows["exact_near_solution"], rows[other]
        rows[ratio] = new["seconds_per_frame"] / ref["seconds_per_frame"]
        rows[f"{ratio}_cpu"] = new["cpu_seconds_per_frame"] / ref["cpu_seconds_per_frame"]
        same = new["frames_replayed"] == ref["frames_replayed"]
        a, b = skins["exact_near_solution"], skins[other]
        rows[f"{prefix}_max_skin_difference_m"] = (
            float(max(np.abs(x - y).max() for x, y in zip(a, b))) if same and a else None
        )
        rows[f"{prefix}_max_skeleton_difference"] = (
            float(np.abs(skeletons["exact_near_solution"] - skeletons[other]).max())
            if same
            else None
        )
        print(
            f"   default / {other}: seconds a frame {rows[ratio]:.3f}"
            f" (CPU {rows[f'{ratio}_cpu']:.3f}); factorisations a frame "
            f"{new['factorizations_per_frame']:.1f} vs {ref['factorizations_per_frame']:.1f}; "
            f"states apart by {rows[f'{prefix}_max_skin_difference_m']} m (skin), "
            f"{rows[f'{prefix}_max_skeleton_difference']} (skeleton)",
            flush=True,
        )
    if "exact_near_solution" in cases and "convex_contact" in cases:
        new, ref = skeletons["convex_contact"], skeletons["exact_near_solution"]
        frames_both = min(len(new), len(ref))
        # The torso's position (the skeleton's first three coordinates), every frame.
        rows["torso_path_difference_mm"] = 1e3 * float(
            np.linalg.norm(new[:frames_both, :3] - ref[:frames_both, :3], axis=1).max()
        )
        # The design's COP verdict, frame by frame: where one contact's COP is outside the
        # plan's support polygon and the other's inside.
        a, b = margins["convex_contact"], margins["exact_near_solution"]
        if a is not None and b is not None:
            k = min(len(a), len(b))
            judged = np.isfinite(a[:k]) & np.isfinite(b[:k])
            differs = judged & ((a[:k] < 0.0) != (b[:k] < 0.0))
            rows["cop_verdict_differs_frames"] = np.flatnonzero(differs).tolist()
            rows["cop_verdict_frames_compared"] = int(judged.sum())
        rows["ratio_convex_over_active_set"] = (
            rows["convex_contact"]["seconds_per_frame"]
            / rows["exact_near_solution"]["seconds_per_frame"]
        )
    if "exact_near_solution" in cases and "eigh_projection" in cases:
        rows["eigh_projection_final_skeleton_difference"] = float(
            np.abs(finals["eigh_projection"] - finals["exact_near_solution"]).max()
        )
    if "exact_near_solution" in cases and "projected" in cases:
        same = (
            rows["projected"]["frames_replayed"] == rows["exact_near_solution"]["frames_replayed"]
        )
        rows["final_skeleton_difference"] = (
            float(np.abs(finals["projected"] - finals["exact_near_solution"]).max())
            if same
            else None
        )
    return rows


def _HessianKernels(fem, x, repeats=3) -> dict:
    """Seconds (best of `repeats`, wall and CPU) of one energy-gradient-stiffness pass over the
    skin at positions x, projected (Newton's matrix far from a step's solution, the QPCC's) and
    exact, by the compiled element loop (the default) and by NumPy (its reference), and their
    largest difference relative to the stiffness's largest entry."""
    out = {"elements": int(len(fem.mesh.tets))}
    kernel = fem.kernel
    results = {}
    for name in ("compiled", "numpy"):
        fem.kernel = name
        for project in (True, False):
            walls, cpus = [], []
            for _ in range(repeats):
                start, cpu = time.perf_counter(), time.process_time()
                result = fem.EnergyGradientHessian(x, project=project)
                walls.append(time.perf_counter() - start)
                cpus.append(time.process_time() - cpu)
            case = f"{name}_{'projected' if project else 'exact'}"
            out[f"{case}_s"], out[f"{case}_cpu_s"] = min(walls), min(cpus)
            results[case] = result[2]
    fem.kernel = kernel
    for which in ("projected", "exact"):
        a, b = results[f"compiled_{which}"], results[f"numpy_{which}"]
        out[f"ratio_compiled_over_numpy_{which}"] = (
            out[f"compiled_{which}_s"] / out[f"numpy_{which}_s"]
        )
        out[f"max_difference_{which}"] = float(abs(a - b).max() / abs(b).max())
    print(
        f"   element loop, {out['elements']} tets: projected {out['compiled_projected_s']:.3f} s "
        f"compiled, {out['numpy_projected_s']:.3f} s NumPy; exact {out['compiled_exact_s']:.3f} s"
        f" against {out['numpy_exact_s']:.3f} s",
        flush=True,
    )
    return out


def _PerFrame(steps, field, frames) -> float:
    """A StepInfo field summed over the recorded steps, per frame replayed."""
    return float(sum(getattr(info, field) for info, _ in steps)) / max(frames, 1)


def main(argv=None) -> int:
    from drakebots.runtime import KeepFreedMemory

    KeepFreedMemory()  # as the `drakebots` command runs (opt-in: drakebots.runtime)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--skin", default="runs/beetle_skin", help="a beetle skin folder")
    parser.add_argument("--out", default="runs/bench/fem.json")
    parser.add_argument("--coupled-steps", type=int, default=20)
    parser.add_argument("--skip-drake-skin", action="store_true")
    parser.add_argument(
        "--skip-coupled-reference",
        action="store_true",
        help="do not time the refactorising contact path (the reference of table 3)",
    )
    parser.add_argument(
        "--replay-design",
        default=None,
        help="table 4: a `drakebots design --skin` results folder (made with --skin's skin)",
    )
    parser.add_argument(
        "--replay-frames",
        type=int,
        default=None,
        help=f"table 4: frames replayed (default 4; with --coupled {TORSO_PATH_FRAMES})",
    )
    parser.add_argument(
        "--replay-seconds",
        type=float,
        default=3600.0,
        help="table 4: wall-time budget of each replay (it ends there, short of its frames)",
    )
    parser.add_argument("--replay-only", action="store_true", help="table 4 alone")
    parser.add_argument(
        "--replay-checkpoints",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep each replay's progress in DIR/CASE.npz and resume from it: a replay longer "
        "than --replay-seconds (the monster's whole 200-frame walk) goes on over several runs "
        "(one round only)",
    )
    parser.add_argument(
        "--coupled",
        action="store_true",
        help="issue 69 alone: the validation scenes against Drake and, with --replay-design, "
        "the replay with the convex contact against the active set",
    )
    parser.add_argument(
        "--inputs",
        default=None,
        help="--coupled without --replay-design: the folder that keeps the monster's skin and "
        "walk design, made there where missing (default: bench_fem_inputs beside --out, or "
        "runs/bench_fem_inputs when that would be in this checkout)",
    )
    parser.add_argument(
        "--skip-scenes",
        action="store_true",
        help="--coupled: not the validation scenes against Drake",
    )
    parser.add_argument(
        "--profile-frame",
        type=int,
        default=None,
        help="--coupled: profile this step of the convex replay (cProfile; OUT.prof)",
    )
    parser.add_argument(
        "--replay-rounds",
        type=int,
        default=1,
        help="table 4: replays of each case, alternated (the median is reported)",
    )
    parser.add_argument(
        "--replay-cases",
        default=",".join(DEFAULT_REPLAY_CASES),
        help="table 4: the configurations replayed, comma-separated (of "
        f"{', '.join(REPLAY_CASES)})",
    )
    args = parser.parse_args(argv)
    args.replay_cases = tuple(name.strip() for name in args.replay_cases.split(",") if name.strip())
    unknown = [name for name in args.replay_cases if name not in REPLAY_CASES]
    if unknown or not args.replay_cases:
        parser.error(
            f"--replay-cases: unknown {', '.join(unknown) or '(none given)'}; "
            f"known: {', '.join(REPLAY_CASES)}"
        )
    if args.replay_checkpoints is not None:
        if args.replay_rounds > 1:
            parser.error("--replay-checkpoints takes one round (--replay-rounds 1)")
        if args.replay_checkpoints.exists() and not args.replay_checkpoints.is_dir():
            parser.error(f"--replay-checkpoints: {args.replay_checkpoints} is not a folder")
        args.replay_checkpoints.mkdir(parents=True, exist_ok=True)

    if args.replay_frames is None:
        args.replay_frames = TORSO_PATH_FRAMES if args.coupled else 4
    if args.coupled:
        return _Write(_Coupled69(args), args.out)

    from drakebots.fem.mesh import BoxMesh, WriteVtk
    from drakebots.skinned.skeleton import LoadSkeletonParams
    from drakebots.skinned.skin import LoadSkin, MakeSkin

    skin_dir = Path(args.skin)
    if (skin_dir / "skin.vtk").is_file():
        skin = LoadSkin(skin_dir)
    else:
        print(f"{skin_dir} has no skin: generating the beetle skin", flush=True)
        skin = MakeSkin(LoadSkeletonParams("beetle"))
    results = {
        "workload": (
            f"skin {skin_dir} ({skin.robot}, {skin.mesh.num_vertices} vertices, "
            f"{skin.mesh.num_tets} tets): Newton matrix and implicit steps at h = 1 ms, coupled "
            "steps standing at h = 5 ms"
            + (f"; replay of {args.replay_design}" if args.replay_design else "")
        ),
        "load_average_start": os.getloadavg()[0],
        "skin_vertices": skin.mesh.num_vertices,
        "skin_tets": skin.mesh.num_tets,
    }
    if args.replay_only:
        if not args.replay_design:
            parser.error("--replay-only needs --replay-design")
        _Table4(args, skin, results)
        return _Write(results, args.out)
    h = 1e-3
    skin_material = {"E": skin.youngs_modulus, "nu": skin.poissons_ratio, "rho": skin.mass_density}
    print("1. linear solvers, beetle skin Newton matrix (h = 1 ms)", flush=True)
    results["linear_solvers"], factorizations = _Solvers(skin.mesh, skin_material, h)
    for row in results["linear_solvers"]:
        print(
            f"   {row['method']:<12} factor+solve {row['factor_and_solve_s']:7.2f} s  "
            f"{row.get('relative_residual', row.get('error', ''))}",
            flush=True,
        )
    results["factorizations"] = factorizations
    default = "pardiso" if "pardiso_s" in factorizations else "splu_nd"
    results["factorization_s"] = factorizations[f"{default}_s"]
    results["factorization_backend"] = default
    print(
        f"   numeric factorisation ({factorizations['matrix_rows']} rows): "
        + ", ".join(
            f"{name} {factorizations[f'{name}_s']:.3f} s"
            for name in ("pardiso", "splu_nd")
            if f"{name}_s" in factorizations
        )
        + (
            f", SuperLU/PARDISO {factorizations['ratio_splu_over_pardiso']:.2f}"
            if "ratio_splu_over_pardiso" in factorizations
            else ""
        ),
        flush=True,
    )

    print("2. one implicit step, ours vs Drake DeformableModel", flush=True)
    steps = []
    beam = BoxMesh((0.2, 0.02, 0.02), (40, 4, 4))
    beam_material = {"E": 1e7, "nu": 0.3, "rho": 1000.0}
    fixed = np.flatnonzero(beam.vertices[:, 0] < 1e-9)
    with tempfile.TemporaryDirectory() as tmp:
        WriteVtk(Path(tmp) / "beam.vtk", beam)
        WriteVtk(Path(tmp) / "skin.vtk", skin.mesh)
        cases = [("cantilever", beam, beam_material, fixed, Path(tmp) / "beam.vtk", 1e-6, 5)]
        if not args.skip_drake_skin:
            cases.append(
                ("beetle skin", skin.mesh, skin_material, None, Path(tmp) / "skin.vtk", None, 3)
            )
        else:
            cases.append(("beetle skin", skin.mesh, skin_material, None, None, None, 3))
        from drakebots.fem.solvers import PardisoAvailable

        for name, mesh, material, fix, vtk, clamp, count in cases:
            ours, iterations, peak = _OurStep(mesh, material, h, fixed=fix, steps=count)
            splu, _, _ = _OurStep(
                mesh, material, h, fixed=fix, steps=count, linear_solver="splu_nd"
            )
            # The reference: every step factorised afresh (NewtonOptions.reuse_across_steps).
            fresh, _, _ = _OurStep(mesh, material, h, fixed=fix, steps=count, reuse=False)
            drake = drake_cpu = parallel = parallel_cpu = None
            if vtk:
                drake, drake_cpu = _DrakeStep(vtk, material, h, clamp_x=clamp, steps=count)
                parallel, parallel_cpu = _DrakeStep(
                    vtk, material, h, clamp_x=clamp, steps=count, threads=os.cpu_count()
                )
            row = {
                "case": name,
                "vertices": mesh.num_vertices,
                "tets": mesh.num_tets,
                "time_step_s": h,
                "linear_solver": "pardiso" if PardisoAvailable() else "splu_nd",
                "ours_s": ours,
                "ours_splu_nd_s": splu,
                "ours_fresh_factorization_s": fresh,
                "ratio_ours_over_fresh": ours / fresh,
                "ratio_splu_over_ours": splu / ours,
                "drake_s": drake,
                "drake_cpu_s": drake_cpu,
                "ratio_ours_over_drake": ours / drake if drake else None,
                # Drake's DeformableModel with its own parallelism on every core.
                "drake_parallel_threads": os.cpu_count(),
                "drake_parallel_s": parallel,
                "drake_parallel_cpu_s": parallel_cpu,
                "ratio_ours_over_drake_parallel": ours / parallel if parallel else None,
                "ours_newton_iterations": iterations,
                "ours_tracemalloc_peak_MB": peak,
            }
            steps.append(row)
            ratio = f"{row['ratio_ours_over_drake']:.3f}" if drake else "n/a"
            threads = f"{os.cpu_count()} threads"
            drake_text = f"{drake:8.3f} s ({threads} {parallel:.3f} s)" if drake else "     n/a"
            print(
                f"   {name:<12} {mesh.num_vertices:6d} vertices  ours {ours:8.3f} s "
                f"({iterations:.1f} Newton; SuperLU {splu:.3f} s, ratio {splu / ours:.2f})  "
                f"Drake {drake_text}  ratio {ratio}",
                flush=True,
            )
    results["implicit_step"] = steps
    skin_row = next(row for row in steps if row["case"] == "beetle skin")
    results["implicit_step_s"] = skin_row["ours_s"]
    results["implicit_step_splu_s"] = skin_row["ours_splu_nd_s"]
    results["implicit_step_ratio_splu_over_default"] = skin_row["ratio_splu_over_ours"]
    # Issue 52's goal: a step costs <= 1.5 numeric factorisations of its Newton matrix.
    results["implicit_step_in_factorizations"] = skin_row["ours_s"] / results["factorization_s"]
    results["implicit_step_fresh_s"] = skin_row["ours_fresh_factorization_s"]
    results["implicit_step_fresh_in_factorizations"] = (
        skin_row["ours_fresh_factorization_s"] / results["factorization_s"]
    )
    print(
        f"   beetle skin step = {results['implicit_step_in_factorizations']:.2f} numeric "
        "factorisations (goal <= 1.5); every step factorised afresh "
        f"{results['implicit_step_fresh_in_factorizations']:.2f}",
        flush=True,
    )

    print(f"3. coupled skin-skeleton step (standing {skin.robot}, h = 5 ms)", flush=True)
    # The Schur path with each factorization of the coupled system (CHOLMOD where scikit-sparse
    # is installed, PARDISO where MKL loads), then the refactorising reference with SuperLU.
    from drakebots.fem.solvers import CholmodAvailable, PardisoAvailable

    solvers = [("schur", "splu")] + ([("schur", "cholmod")] if CholmodAvailable() else [])
    solvers += [("schur", "pardiso")] if PardisoAvailable() else []
    if not args.skip_coupled_reference:
        solvers.append(("refactor", "splu"))
    results["coupled_step"] = {}
    for solver, factorization in solvers:
        c = _Coupled(skin, args.coupled_steps, solver, factorization)
        key = solver if factorization == "splu" else f"schur_{factorization}"
        results["coupled_step"][key] = c
        print(
            f"   {solver:<8} {factorization:<8} mean {c['mean_step_s']:.3f} s/step "
            f"(first {c['first_step_s']:.2f} s, "
            f"after it {c['mean_step_after_first_s']:.3f} s), "
            f"{c['newton_iterations_per_step']:.2f} Newton iterations, "
            f"{c['factorizations_per_step']:.2f} factorisations and "
            f"{c['contact_column_solves_per_step']:.1f} column solves per step, glue residual "
            f"max {c['glue_residual_max_m']:.2e} m, penetration {c['max_penetration_m']:.1e} m",
            flush=True,
        )
    coupled = results["coupled_step"]
    for backend in ("cholmod", "pardiso"):
        if f"schur_{backend}" not in coupled:
            continue
        new, ref = coupled[f"schur_{backend}"], coupled["schur"]
        coupled[f"ratio_{backend}_over_splu"] = new["mean_step_s"] / ref["mean_step_s"]
        difference = abs(new["base_height_m"] - ref["base_height_m"])
        coupled[f"{backend}_base_height_difference_m"] = difference
        print(
            f"   ratio {backend}/splu {coupled[f'ratio_{backend}_over_splu']:.3f}, "
            f"base height differs by {difference:.1e} m",
            flush=True,
        )
    if "refactor" in results["coupled_step"]:
        new, ref = results["coupled_step"]["schur"], results["coupled_step"]["refactor"]
        results["coupled_step"]["ratio_schur_over_refactor"] = (
            new["mean_step_s"] / ref["mean_step_s"]
        )
        results["coupled_step"]["base_height_difference_m"] = abs(
            new["base_height_m"] - ref["base_height_m"]
        )
        print(
            f"   ratio schur/refactor {results['coupled_step']['ratio_schur_over_refactor']:.3f}, "
            f"base height differs by {results['coupled_step']['base_height_difference_m']:.1e} m",
            flush=True,
        )
    if args.replay_design:
        _Table4(args, skin, results)
    return _Write(results, args.out)


def _Table4(args, skin, results) -> None:
    print(f"4. coupled open-loop replay of {args.replay_design}", flush=True)
    replay = _Replay(
        skin,
        Path(args.replay_design),
        args.replay_frames,
        args.replay_seconds,
        args.replay_cases,
        args.replay_rounds,
        checkpoints=args.replay_checkpoints,
    )
    results["coupled_replay"] = replay
    if "exact_near_solution" in replay:
        results["coupled_frame_s"] = replay["exact_near_solution"]["seconds_per_frame"]
        results["coupled_frame_cpu_s"] = replay["exact_near_solution"]["cpu_seconds_per_frame"]
        results["coupled_frame_factorizations"] = replay["exact_near_solution"][
            "factorizations_per_frame"
        ]
        if "ratio_reuse_over_fresh" in replay:
            results["coupled_frame_fresh_s"] = replay["fresh_factorizations"]["seconds_per_frame"]
            results["coupled_frame_ratio_over_fresh"] = replay["ratio_reuse_over_fresh"]
            results["coupled_frame_ratio_over_fresh_cpu"] = replay["ratio_reuse_over_fresh_cpu"]
        if "ratio_compiled_over_numpy_kernel" in replay:
            results["coupled_frame_numpy_kernel_s"] = replay["numpy_kernel"]["seconds_per_frame"]
            results["coupled_frame_ratio_over_numpy_kernel"] = replay[
                "ratio_compiled_over_numpy_kernel"
            ]
        results["hessian_kernel"] = replay["hessian_kernel"]
        results["coupled_frame_workload"] = (
            f"{replay['exact_near_solution']['frames_replayed']} frames of {args.replay_design} "
            f"replayed open loop in the coupled simulator on {args.skin} "
            f"({skin.mesh.num_vertices} vertices, {skin.mesh.num_tets} tets), default config"
        )


# Issue 69's monster workload, made where missing: the folded skin of Findings 9-16
# ("monster_skin_067_cut_folded": `drakebots skin monster --pieces --youngs-modulus 6.7e5
# --folding-regions knees,ankles --fold-depth 0.012 --fold-pitch 0.024 --voxel 0.008`, the
# skin of tests/paper/test_skinned_fem_design.py) and the 0.06 m/s walk it replays (`drakebots
# design monster --motion walk --speed 0.06 --motor-limit 5.9 --skin ...`, the paper test's
# run, "monster_walk006"; "mw011_f067_59_v4" was the 0.11 m/s walk). The walk agrees with its
# plan in one iteration (Findings 9), so one iteration (the first plan and its frame-by-frame
# pass, no alternation) is the same design; the replay needs that pass's frames and torques.
# No coupled open-loop check and no Drake playback: the bench replays it itself.
MONSTER_SKIN = {
    "robot": "monster",
    "pieces": True,
    "youngs_modulus": 6.7e5,
    "folding_regions": ("knees", "ankles"),
    "fold_depth": 0.012,
    "fold_pitch": 0.024,
    "voxel": 0.008,
}
MONSTER_WALK = {
    "robot": "monster",
    "motion": "walk",
    "speed": 0.06,
    "motor_limit": 5.9,
    "iterations": 1,
    "coupled_replay_seconds": 0.0,
    "replay": False,
}


def _InputsFolder(args) -> Path:
    """Where the monster's skin and design are kept: --inputs, else `bench_fem_inputs` beside
    --out, unless that lies in this checkout outside its ignored runs/ (then runs/ there)."""
    if args.inputs:
        return Path(args.inputs)
    repo = Path(__file__).resolve().parents[1]
    folder = Path(args.out).resolve().parent / "bench_fem_inputs"
    if folder.is_relative_to(repo) and not folder.is_relative_to(repo / "runs"):
        folder = repo / "runs" / "bench_fem_inputs"
    return folder


def _MonsterInputs(folder: Path) -> dict:
    """The monster's folded skin and its walk's design under `folder`, each made by the
    library's own calls (those of `drakebots skin` and `drakebots design`) where it is missing
    and reused where present: their paths and the seconds each took (0 when reused)."""
    from drakebots.cli._progress import CliProgress
    from drakebots.skinned.design import Design, DesignConfig
    from drakebots.skinned.make_skin import MakeSkin, MakeSkinConfig

    skin_dir, design_dir = folder / "monster_skin_067_cut_folded", folder / "monster_walk006"
    rows = {"folder": str(folder), "skin": str(skin_dir), "design": str(design_dir)}
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if not (skin_dir / "skin.vtk").is_file():
        print(f"making the monster's folded skin in {skin_dir}", flush=True)
        MakeSkin(MakeSkinConfig(**MONSTER_SKIN), progress=CliProgress(bars=False)).Save(
            skin_dir, command="scripts/bench_fem.py --coupled (the monster's skin)"
        )
    rows["skin_made_s"] = time.perf_counter() - start
    start = time.perf_counter()
    if not (design_dir / "log.npz").is_file():
        print(f"designing the monster's 0.06 m/s walk in {design_dir}", flush=True)
        config = DesignConfig(**MONSTER_WALK, skin=str(skin_dir))
        result = Design(config, progress=CliProgress(bars=False))
        result.Save(
            design_dir,
            command="scripts/bench_fem.py --coupled (the monster's walk)",
            reads=[str(skin_dir)],
        )
        rows["design_success"] = bool(result.success)
        rows["design_reason"] = result.reason
    rows["design_made_s"] = time.perf_counter() - start
    print(
        f"monster inputs: skin {rows['skin_made_s']:.0f} s, design {rows['design_made_s']:.0f} s "
        "(0: reused)",
        flush=True,
    )
    return rows


def _Coupled69(args) -> dict:
    """Issue 69's figures: the design's first --replay-frames frames replayed open loop with the
    convex contact and with today's active set (table 4's cases convex_contact and
    exact_near_solution; without --replay-design the monster's folded skin and 0.06 m/s walk,
    made under --inputs where missing), the validation scenes shared with Drake
    (drakebots.skinned.drake_scenes, _Scenes69: the convex contact with Drake's regularisation
    against Drake's DeformableModel + SAP at the same step and at 1 ms, the convex defaults' and
    today's active set's errors beside them; not with --skip-scenes) and
    the coarse beetle standing with each (--coupled-steps; none with 0)."""
    results = {"load_average_start": os.getloadavg()[0]}
    if args.replay_frames > 0:
        _CoupledReplay69(args, results)
    else:
        results["coupled_frame_s"] = None
        results["coupled_frame_reference_s"] = None
        results["torso_path_difference_mm"] = None
        results["coupled_frame_workload"] = "not measured: --replay-frames 0"
    if not args.skip_scenes:
        _Scenes69(results)
    if args.coupled_steps > 0:
        _Standing69(args, results)
    results["load_average_end"] = os.getloadavg()[0]
    return results


# Issue 69's figures are the median over the first this many frames (steps) of the replay.
MEDIAN_FRAMES = 20
# ... and the torso paths are compared over the first this many.
TORSO_PATH_FRAMES = 50


def _CoupledReplay69(args, results) -> None:
    from drakebots.skinned.skin import LoadSkin

    if not args.replay_design:
        # The monster's walk, made where missing (issue 69's target workload).
        inputs = _MonsterInputs(_InputsFolder(args))
        results["monster_inputs"] = inputs
        args.skin, args.replay_design = inputs["skin"], inputs["design"]
    skin = LoadSkin(Path(args.skin))
    profile = None
    if args.profile_frame is not None:
        profile = ("convex_contact", args.profile_frame, Path(args.out).with_suffix(".prof"))
    replay = _Replay(
        skin,
        Path(args.replay_design),
        args.replay_frames,
        args.replay_seconds,
        ("convex_contact", "exact_near_solution"),
        args.replay_rounds,
        profile=profile,
        checkpoints=args.replay_checkpoints,
    )
    results["coupled_replay"] = replay
    new, ref = replay["convex_contact"], replay["exact_near_solution"]
    results["coupled_frame_s"] = float(np.median(new["step_s"][:MEDIAN_FRAMES]))
    results["coupled_frame_reference_s"] = float(np.median(ref["step_s"][:MEDIAN_FRAMES]))
    results["coupled_frame_median_over"] = min(len(new["step_s"]), MEDIAN_FRAMES)
    results["coupled_frame_reference_median_over"] = min(len(ref["step_s"]), MEDIAN_FRAMES)
    results["torso_path_difference_mm"] = replay.get("torso_path_difference_mm")
    results["torso_path_frames"] = min(new["frames_replayed"], ref["frames_replayed"])
    results["cop_verdict_differs_frames"] = replay.get("cop_verdict_differs_frames")
    results["coupled_frame_workload"] = (
        f"{new['frames_replayed']} frames (convex) and {ref['frames_replayed']} (active set) of "
        f"{args.replay_design} replayed open loop on {args.skin} ({skin.mesh.num_vertices} "
        f"vertices); coupled_frame_s: the median of the first {MEDIAN_FRAMES} steps' wall time"
    )
    print(
        f"replay: convex {results['coupled_frame_s']:.2f} s a frame (median of "
        f"{results['coupled_frame_median_over']}), active set "
        f"{results['coupled_frame_reference_s']:.2f} s; torso paths "
        f"{results['torso_path_difference_mm']} mm apart over {results['torso_path_frames']} "
        "frames",
        flush=True,
    )
    if results["cop_verdict_differs_frames"] is not None:
        print(
            f"replay's COP outside the plan's support polygons: convex in "
            f"{new['frames_cop_outside']} frames, active set in {ref['frames_cop_outside']}; "
            f"the verdict differs in {len(results['cop_verdict_differs_frames'])} of "
            f"{replay['cop_verdict_frames_compared']} frames",
            flush=True,
        )


def _Scenes69(results) -> None:
    """The validation scenes (drake_scenes; friction 0.8, Drake's kNeoHookean on both sides):
    each run by Drake at 5 ms and at 1 ms (its converged answer: at friction 0.8 the dropped
    block's rest sag moves 5 % between them) and by drakebots at 5 ms with Drake's contact
    regularisation and time integration (drake_scenes.DrakeContact: the key's figure), the
    same by backward Euler (drakebots' default integration), with the convex step's defaults
    (near-rigid vertices) and with the active set."""
    from drakebots.skinned.drake_scenes import DrakeContact, RunDrake, RunDrakebots, Scene

    scenes = {
        "drake_rest_sag_rel_error": (Scene(kind="drop", mass_damping=10.0), "sag"),
        "drake_contact_force_rel_error": (
            Scene(kind="indent", mass_damping=10.0),
            "contact_force",
        ),
        "drake_box_indentation_rel_error": (Scene(kind="force", mass_damping=10.0), "sag"),
    }
    contacts = {
        "drake_regularisation": DrakeContact(),
        "drake_regularisation_backward_euler": dict(
            DrakeContact(), skin_integrator="backward_euler"
        ),
        "convex": dict(contact="convex"),
        "active_set": dict(contact="active_set"),
    }
    for key, (scene, field) in scenes.items():
        drake = RunDrake(scene)
        fine = dataclasses.replace(scene, time_step=1e-3, steps=5 * scene.steps)
        drake_fine = RunDrake(fine)
        reference, converged = getattr(drake, field), getattr(drake_fine, field)
        rows = {
            "scene": dataclasses.asdict(scene),
            "drake": dataclasses.asdict(drake),
            "drake_1ms": dataclasses.asdict(drake_fine),
            "drake_step_change": reference / converged - 1.0,
        }
        for name, config in contacts.items():
            ours = RunDrakebots(scene, **config)
            rows[name] = dataclasses.asdict(ours)
            rows[f"{name}_rel_error"] = getattr(ours, field) / reference - 1.0
            rows[f"{name}_rel_error_vs_drake_1ms"] = getattr(ours, field) / converged - 1.0
        results[key] = abs(rows["drake_regularisation_rel_error"])
        results[key.replace("_rel_error", "_scene")] = rows
        print(
            f"{key}: Drake's regularisation {rows['drake_regularisation_rel_error']:+.4f} "
            f"({rows['drake_regularisation_rel_error_vs_drake_1ms']:+.4f} against Drake at 1 ms; "
            f"by backward Euler {rows['drake_regularisation_backward_euler_rel_error']:+.4f}), "
            f"convex {rows['convex_rel_error']:+.4f}, active set "
            f"{rows['active_set_rel_error']:+.4f} ({field}: Drake {reference:.6g} at 5 ms, "
            f"{converged:.6g} at 1 ms); wall a step: Drake {drake.wall_per_step_s * 1e3:.1f} ms, "
            f"ours {rows['drake_regularisation']['wall_per_step_s'] * 1e3:.1f} ms",
            flush=True,
        )


def _Standing69(args, results) -> None:
    # A skin every checkout can make: the beetle's coarse whole-body skin (16 mm voxels, 0.67
    # MPa, tests/conftest.py's beetle_skin_coarse) landing on its soles and standing under its
    # servos for --coupled-steps steps, with each contact formulation.
    from drakebots.skinned.skeleton import LoadSkeletonParams
    from drakebots.skinned.skin import MakeSkin, SkinOptions

    coarse = MakeSkin(LoadSkeletonParams("beetle"), SkinOptions(youngs_modulus=6.7e5, voxel=0.016))
    standing = {
        c: _Coupled(coarse, args.coupled_steps, contact=c) for c in ("convex", "active_set")
    }
    paths = {c: np.array(standing[c]["torso_path_m"]) for c in standing}
    results["standing_beetle_coarse"] = standing
    results["standing_step_s"] = standing["convex"]["mean_step_s"]
    results["standing_step_reference_s"] = standing["active_set"]["mean_step_s"]
    results["standing_torso_path_difference_mm"] = 1e3 * float(
        np.linalg.norm(paths["convex"] - paths["active_set"], axis=1).max()
    )
    print(
        f"standing coarse beetle, {args.coupled_steps} steps: convex "
        f"{results['standing_step_s']:.3f} s a step, active set "
        f"{results['standing_step_reference_s']:.3f} s, torso paths "
        f"{results['standing_torso_path_difference_mm']:.4f} mm apart",
        flush=True,
    )


def _Write(results, path) -> int:
    results["load_average_end"] = os.getloadavg()[0]
    results["peak_rss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"peak resident memory {results['peak_rss_MB']:.0f} MB")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    # (strict JSON: the replays' per-frame arrays as lists, NaN as null)
    out.write_text(ToJson(results))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
