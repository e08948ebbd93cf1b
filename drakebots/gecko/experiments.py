"""The gecko's experiments: motion per cycle over the velocity space (paper section 4, Fig. 7) and
closed-loop navigation with the gait pattern generator (section 5, Figs. 11-12).

Both run on either model: "drake" (the multibody model with suction constraints, pneumatics and the
cascaded controller; drakebots.gecko.simulation) or "geometric" (the authors' quasi-static
model; drakebots.gecko.geometric).
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from drakebots.gecko.geometric import GeometricGait, GeometricModelParams
from drakebots.gecko.geometry import GaitLawDeg, GaitTiming, HomeAnglesDeg
from drakebots.gecko.planner import FitMotion, GaitPatternPlanner, MotionFit

MODELS = ("drake", "geometric")
GRID_Q1 = (50.0, 60.0, 70.0, 80.0, 90.0)  # paper section 4, deg
GRID_Q2 = (-0.5, -0.3, -0.1, 0.1, 0.3, 0.5)


def RelativeMotion(pose_a, pose_b) -> np.ndarray:
    """(d_eps, dx, dy): pose_b seen from pose_a's frame (Eq. 17's quantities), rad and m."""
    x, y, eps = pose_a
    c, s = math.cos(eps), math.sin(eps)
    d = np.asarray(pose_b[:2], dtype=float) - np.array([x, y])
    d_eps = (pose_b[2] - eps + math.pi) % (2 * math.pi) - math.pi
    return np.array([d_eps, c * d[0] + s * d[1], -s * d[0] + c * d[1]])


@dataclasses.dataclass
class CycleMeasurement:
    """One gait cycle at a grid point of the velocity space.

    Attributes:
        q1, q2: the gait (deg, -).
        motion: (3,) d_eps [rad], dx [m], dy [m] of the measured cycle, robot frame of its start.
        poses: (3, 3) torso-midpoint poses at the start, middle and end of the measured cycle.
        alphas: (3, 5) measured bending angles at those instants, rad.
        lengths: (3, 5) limb lengths at those instants, m (nominal for the Drake model).
        seconds: wall time of the measurement (warm-up included).
        failures: solver failures or other problems (empty when fine).
    """

    q1: float
    q2: float
    motion: np.ndarray
    poses: np.ndarray
    alphas: np.ndarray
    lengths: np.ndarray
    seconds: float
    failures: list


def MeasureCycleGeometric(
    q1: float,
    q2: float,
    *,
    warmup: int = 1,
    params: GeometricModelParams | None = None,
    timing: GaitTiming | None = None,
    substeps: int = 4,
) -> CycleMeasurement:
    """One cycle of the geometric model at (q1, q2) after `warmup` cycles from the exact
    reference pose alpha(+q1, q2)."""
    start = time.perf_counter()
    gait = GeometricGait(params=params, timing=timing, substeps=substeps)
    gait.Reset(alpha_deg=GaitLawDeg(q1, q2))
    gait.Cycles(q1, q2, warmup)
    rows = [gait.z.copy()]
    gait.HalfCycle(q1, q2)
    rows.append(gait.z.copy())
    gait.HalfCycle(q1, q2)
    rows.append(gait.z.copy())
    z = np.array(rows)
    trace = gait.Trace()
    return CycleMeasurement(
        q1=q1,
        q2=q2,
        motion=RelativeMotion(z[0, :3], z[2, :3]),
        poses=z[:, :3],
        alphas=z[:, 3:8],
        lengths=z[:, 8:13],
        seconds=time.perf_counter() - start,
        failures=list(trace.failures),
    )


def MeasureCycleDrake(
    q1: float,
    q2: float,
    *,
    warmup: int = 1,
    config=None,
    robot_params=None,
) -> CycleMeasurement:
    """One cycle of the Drake model at (q1, q2) after `warmup` cycles from the reference pose
    alpha(+q1, q2) (front-left and hind-right feet fixed)."""
    from drakebots.gecko.model import GeckoParams, LimbAngleSelector
    from drakebots.gecko.simulation import GeckoSimConfig, GeckoSimulation

    start = time.perf_counter()
    robot_params = robot_params or GeckoParams()
    sim = GeckoSimulation(
        config or GeckoSimConfig(),
        gait=(q1, q2),
        start_alpha_deg=GaitLawDeg(q1, q2),
        params=robot_params,
    )
    h = sim.handles
    S = LimbAngleSelector(h.plant, h.instance, robot_params)

    def Angles():
        return S @ h.plant.GetPositions(sim.plant_context, h.instance)

    sim.RunHalfCycles(2 * warmup)
    poses, alphas = [sim.Pose()], [Angles()]
    for _ in range(2):
        sim.RunHalfCycles(1)
        poses.append(sim.Pose())
        alphas.append(Angles())
    poses = np.array(poses)
    failures = []
    x = h.plant.GetPositions(sim.plant_context, h.instance)
    if not np.all(np.isfinite(x)):
        failures.append("the state became NaN or infinite")
    lengths = np.tile(robot_params.dimensions.lengths(), (3, 1))
    return CycleMeasurement(
        q1=q1,
        q2=q2,
        motion=RelativeMotion(poses[0], poses[2]),
        poses=poses,
        alphas=np.array(alphas),
        lengths=lengths,
        seconds=time.perf_counter() - start,
        failures=failures,
    )


def _MeasureOne(args) -> CycleMeasurement:
    model, q1, q2, warmup, options = args
    if model == "geometric":
        return MeasureCycleGeometric(q1, q2, warmup=warmup, **options)
    return MeasureCycleDrake(q1, q2, warmup=warmup, **options)


@dataclasses.dataclass
class VelocitySpace:
    """Motion per cycle over a grid of the velocity space, and its fit (Eq. 16).

    Attributes:
        model: "drake" or "geometric".
        measurements: one CycleMeasurement per grid point (q1 outer, q2 inner).
        fit: the quadratic of Eq. 16 fitted to them.
        seconds: wall time of the whole grid.
    """

    model: str
    measurements: list
    fit: MotionFit
    seconds: float

    @property
    def q1(self) -> np.ndarray:
        return np.array([m.q1 for m in self.measurements])

    @property
    def q2(self) -> np.ndarray:
        return np.array([m.q2 for m in self.measurements])

    @property
    def motion(self) -> np.ndarray:
        return np.array([m.motion for m in self.measurements])


def MeasureVelocitySpace(
    model: str,
    q1_values=GRID_Q1,
    q2_values=GRID_Q2,
    *,
    warmup: int = 1,
    workers: int = 1,
    options: dict | None = None,
    progress=None,
) -> VelocitySpace:
    """One measured cycle at every grid point, then the least-squares fit of Eq. 16.

    Args:
        model: "drake" or "geometric".
        q1_values, q2_values: the grid (deg, -).
        warmup: cycles run before the measured one (from the exact reference pose).
        workers: Dask worker processes for the Drake model (each point is independent).
        options: keyword arguments of MeasureCycleDrake / MeasureCycleGeometric.
        progress: called with (done, total, measurement) after each point.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    options = options or {}
    points = [(model, float(a), float(b), warmup, options) for a in q1_values for b in q2_values]
    start = time.perf_counter()
    results: list[CycleMeasurement | None] = [None] * len(points)
    if workers > 1 and model == "drake":
        # Dask distributed, as every sweep of the project (drakebots/sweeps/executor.py): a local
        # cluster of single-threaded worker processes, one grid point per task.
        import logging

        from distributed import Client, LocalCluster, as_completed

        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            ) as cluster,
            Client(cluster) as client,
        ):
            futures = client.map(_MeasureOne, points, pure=False)
            index = {future.key: i for i, future in enumerate(futures)}
            for done, future in enumerate(as_completed(futures), start=1):
                i = index[future.key]
                results[i] = future.result()
                if progress is not None:
                    progress(done, len(points), results[i])
    else:
        for i, point in enumerate(points):
            results[i] = _MeasureOne(point)
            if progress is not None:
                progress(i + 1, len(points), results[i])
    q1 = np.array([p[1] for p in points])
    q2 = np.array([p[2] for p in points])
    motion = np.array([m.motion for m in results])
    fit = FitMotion(q1, q2, motion, source=f"drakebots velocity space ({model} model)")
    return VelocitySpace(model, list(results), fit, time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------
# Navigation (Algorithm 1 in closed loop).


@dataclasses.dataclass
class NavigationStep:
    """One decision of the gait pattern generator (one half cycle)."""

    time: float
    pose: np.ndarray
    target: int
    q1: float
    q2: float
    n: int
    d0: float
    dn: float
    seconds: float


@dataclasses.dataclass
class NavigationResult:
    """A closed-loop run through a list of targets.

    Attributes:
        model: "drake" or "geometric".
        targets: (K, 2), m.
        epsilon: target radius, m.
        steps: the decisions, in order.
        reached: (K,) whether each target was reached.
        reached_at_step: (K,) total step count when each target was reached (-1: never).
        closest: (K,) closest approach of the torso midpoint to each target while it was the
            current one, m (inf for targets never reached to).
        track_times, track_poses: the torso-midpoint pose over time (T,), (T, 3).
        success: every target reached within its step budget.
        reason: why not (None on success).
        final_error: distance from the final pose to the last target reached or aimed at, m.
        sim_time: simulated seconds; wall_time: wall seconds.
        log: the Drake SimulationLog (None for the geometric model).
        trace: the geometric model's GeometricTrace (None for the Drake model).
    """

    model: str
    targets: np.ndarray
    epsilon: float
    steps: list
    reached: np.ndarray
    reached_at_step: np.ndarray
    closest: np.ndarray
    track_times: np.ndarray
    track_poses: np.ndarray
    success: bool
    reason: str | None
    final_error: float
    sim_time: float
    wall_time: float
    log: object = None
    trace: object = None

    @property
    def steps_per_target(self) -> list[int]:
        """Decisions spent on each target (up to reaching it, or all for the one missed)."""
        counts = [0] * len(self.targets)
        for step in self.steps:
            counts[step.target] += 1
        return counts

    @property
    def path_length(self) -> float:
        """Length of the torso midpoint's path, m."""
        d = np.diff(self.track_poses[:, :2], axis=0)
        return float(np.sum(np.hypot(d[:, 0], d[:, 1])))

    @property
    def decision_seconds(self) -> np.ndarray:
        return np.array([s.seconds for s in self.steps])


class _TargetBook:
    """Bookkeeping shared by both models: targets reached, budgets, closest approach."""

    def __init__(self, targets, epsilon, max_steps_per_target):
        self.targets = np.asarray(targets, dtype=float).reshape(-1, 2)
        self.epsilon = epsilon
        self.budget = max_steps_per_target
        self.current = 0
        self.reached = np.zeros(len(self.targets), dtype=bool)
        self.reached_at = -np.ones(len(self.targets), dtype=int)
        self.closest = np.full(len(self.targets), np.inf)
        self.steps_on_current = 0
        self.total_steps = 0

    def Observe(self, pose) -> None:
        """Closest approach to the target being walked to (targets not yet active do not count:
        the course may start on its last one)."""
        if self.current < len(self.targets):
            d = float(np.hypot(*(self.targets[self.current] - np.asarray(pose[:2]))))
            self.closest[self.current] = min(self.closest[self.current], d)

    def Advance(self, pose) -> bool:
        """Moves past reached targets; True when all are reached."""
        self.Observe(pose)
        while self.current < len(self.targets):
            if np.hypot(*(self.targets[self.current] - pose[:2])) >= self.epsilon:
                return False
            self.reached[self.current] = True
            self.reached_at[self.current] = self.total_steps
            self.current += 1
            self.steps_on_current = 0
        return True

    def OutOfBudget(self) -> bool:
        return self.steps_on_current >= self.budget

    def FailureReason(self) -> str:
        k = self.current
        x, y = self.targets[k]
        return (
            f"target {k + 1} ({x:.3g}, {y:.3g}) m not reached within {self.budget} steps; "
            f"closest approach {self.closest[k]:.3f} m (epsilon {self.epsilon:.3f} m)"
        )


def NavigateGeometric(
    planner: GaitPatternPlanner,
    targets,
    *,
    start_pose=(0.0, 0.0, 0.0),
    max_steps_per_target: int = 40,
    params: GeometricModelParams | None = None,
    timing: GaitTiming | None = None,
    substeps: int = 2,
    progress=None,
) -> NavigationResult:
    """Algorithm 1 closing the loop around the geometric model (the paper's Fig. 12A)."""
    wall = time.perf_counter()
    gait = GeometricGait(params=params, timing=timing, substeps=substeps)
    gait.Reset(pose=start_pose, alpha_deg=HomeAnglesDeg())
    book = _TargetBook(targets, planner.params.epsilon, max_steps_per_target)
    steps = []
    success, reason = False, None
    while True:
        pose = gait.Pose()
        if book.Advance(pose):
            success = True
            break
        if book.OutOfBudget():
            reason = book.FailureReason()
            break
        decision = planner.Decide(pose, book.targets[book.current])
        steps.append(
            NavigationStep(
                gait.time,
                pose,
                book.current,
                decision.q1,
                decision.q2,
                decision.n,
                decision.d0,
                decision.dn,
                decision.seconds,
            )
        )
        gait.HalfCycle(decision.q1, decision.q2)
        book.steps_on_current += 1
        book.total_steps += 1
        book.Observe(gait.Pose())
        if progress is not None:
            progress(book, steps[-1])
    trace = gait.Trace()
    if trace.failures and success:
        reason = f"geometric model solver failures: {trace.failures[:3]}"
    final_target = book.targets[min(book.current, len(book.targets) - 1)]
    return NavigationResult(
        model="geometric",
        targets=book.targets,
        epsilon=book.epsilon,
        steps=steps,
        reached=book.reached,
        reached_at_step=book.reached_at,
        closest=book.closest,
        track_times=trace.times,
        track_poses=trace.poses,
        success=success and not trace.failures,
        reason=reason,
        final_error=float(np.hypot(*(final_target - gait.Pose()[:2]))),
        sim_time=float(gait.time),
        wall_time=time.perf_counter() - wall,
        trace=trace,
    )


def NavigateDrake(
    planner: GaitPatternPlanner,
    targets,
    *,
    start_pose=(0.0, 0.0, 0.0),
    max_steps_per_target: int = 40,
    config=None,
    robot_params=None,
    meshcat=None,
    progress=None,
) -> NavigationResult:
    """The gait pattern generator (a LeafSystem in the diagram) driving the Drake-simulated gecko
    through the targets (the paper's Fig. 12 course)."""
    from drakebots.gecko.simulation import GeckoSimConfig, GeckoSimulation

    wall = time.perf_counter()
    config = config or GeckoSimConfig()
    targets = np.asarray(targets, dtype=float).reshape(-1, 2)
    sim = GeckoSimulation(
        config,
        planner=(planner, targets),
        start_pose=start_pose,
        params=robot_params,
        meshcat=meshcat,
    )
    book = _TargetBook(targets, planner.params.epsilon, max_steps_per_target)
    half = config.timing.half_cycle
    steps = []
    success, reason = False, None
    while True:
        pose = sim.Pose()
        t_k = sim.time
        # One plant step past t_k: the generator's periodic update at t_k has been applied.
        sim.AdvanceTo(t_k + config.time_step)
        state = sim.PlannerStatus()
        q1, q2 = state[0:2]
        target, n, d0, dn, _, done, seconds, _ = state[2:10]
        # Mirror the generator's own target switching (it is the one that decides).
        all_reached = book.Advance(pose)
        if done or all_reached:
            success = bool(done and all_reached)
            if not success:
                reason = "the generator and the bookkeeping disagree on the targets reached"
            break
        if book.OutOfBudget():
            reason = book.FailureReason()
            break
        steps.append(NavigationStep(t_k, pose, int(target), q1, q2, int(n), d0, dn, seconds))
        sim.AdvanceTo(t_k + half)
        book.steps_on_current += 1
        book.total_steps += 1
        book.Observe(sim.Pose())
        if progress is not None:
            progress(book, steps[-1])
    log = sim.Log()
    final_target = book.targets[min(book.current, len(book.targets) - 1)]
    return NavigationResult(
        model="drake",
        targets=book.targets,
        epsilon=book.epsilon,
        steps=steps,
        reached=book.reached,
        reached_at_step=book.reached_at,
        closest=book.closest,
        track_times=log.times,
        track_poses=log.extra["pose"],
        success=success,
        reason=reason,
        final_error=float(np.hypot(*(final_target - sim.Pose()[:2]))),
        sim_time=float(sim.time),
        wall_time=time.perf_counter() - wall,
        log=log,
    )
