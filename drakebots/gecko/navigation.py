"""The navigation workflow (`drakebots gecko navigate`): the gait pattern generator (Eqs. 17-22,
Algorithm 1) in closed loop re-plans the gait every half cycle from the measured pose and walks
the gecko to each target in turn, as in the paper's Fig. 12.

    from drakebots.gecko import Navigate, NavigateConfig
    result = Navigate(NavigateConfig(targets=[[0.3, 0.1]], model="geometric"))
    result.success, result.track_poses, result.figures["targets_reached"]
    result.Save("runs/gecko_course")

A course file (typed YAML, `NavigateConfig.course`; an unknown key is an error naming it):
  name: slalom
  start: [0.0, 0.0, 0.0]          # x [m], y [m], heading [deg]
  targets: [{x: 0.35, y: 0.15}, {x: 0.7, y: -0.1}, {x: 1.0, y: 0.15}]
  obstacles: [{x: 0.5, y: 0.05, radius: 0.06}]
  epsilon: 0.05                   # target radius, m
  max_steps_per_target: 40        # step budget (half cycles) per target
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from drakebots.errors import InputError
from drakebots.limits import CheckWork, Limit
from drakebots.workflow import Reporter, WorkflowResult

SCENARIOS_DIRECTORY = Path(__file__).resolve().parents[1] / "scenarios"
# The paper's course of Fig. 12: targets (x, y) in m.
PAPER_COURSE = ((0.4, 0.1), (0.6, -0.3), (0.2, -0.5), (0.0, 0.0))
MODELS = ("drake", "geometric")
METHODS = ("newton", "L-BFGS-B")
# The largest target radius, m, is drakebots.limits' "target_radius" bound (fifty of the 0.2 m
# walker's body lengths; the paper's is 0.05 m).


@dataclasses.dataclass
class CourseTarget:
    """A waypoint, m."""

    x: float = 0.0
    y: float = 0.0


@dataclasses.dataclass
class CourseObstacle:
    """A round obstacle, m (drawn; the track's clearance to it is reported)."""

    x: float = 0.0
    y: float = 0.0
    radius: float = 0.05


@dataclasses.dataclass
class GeckoCourse:
    """A navigation course (a course file, `NavigateConfig.course`)."""

    # Name of the course (titles).
    name: str = ""
    # Start pose of the torso midpoint: x [m], y [m], heading [deg].
    start: list[float] = dataclasses.field(default_factory=lambda: [0.0, 0.0, 0.0])
    # Waypoints reached in order, m.
    targets: list[CourseTarget] = dataclasses.field(default_factory=list)
    # Round obstacles the waypoints steer around, m.
    obstacles: list[CourseObstacle] = dataclasses.field(default_factory=list)
    # Target radius, m (paper: 5 cm).
    epsilon: float = 0.05
    # Step budget (half cycles) per target.
    max_steps_per_target: int = 40


@dataclasses.dataclass
class NavigateConfig:
    """A closed-loop navigation run (`drakebots gecko navigate`)."""

    # Targets [[x, y], ...] in m (None: the course file's, else the paper's course of Fig. 12).
    targets: list[list[float]] | None = None
    # A course file (GeckoCourse YAML; a name under drakebots/scenarios also works), instead of
    # `targets`.
    course: str | None = None
    # Motion fit: "reference" (the paper's Table 3), or a velocity-space results folder or its
    # fit.json.
    fit: str = "reference"
    # "drake" (suction feet, pneumatics, SAP contact) or "geometric" (quasi-static, fast).
    model: str = "drake"
    # Start pose [x m, y m, heading deg] (None: the course's, else [0, 0, 0]).
    start: list[float] | None = None
    # Target radius, m (None: the course's, else 0.05).
    epsilon: float | None = None
    # Step budget (half cycles) per target (None: the course's, else 40).
    max_steps: int | None = None
    # Local search of the planner: "newton" or "L-BFGS-B" (the authors').
    method: str = "newton"
    # Drake plant time step, s (None: GeckoSimConfig's, 2e-3).
    time_step: float | None = None


@dataclasses.dataclass
class _Course:
    """A config's course, resolved: targets, start, epsilon, budget, obstacles, name."""

    targets: list
    start: list
    epsilon: float
    budget: int
    obstacles: list
    name: str


@dataclasses.dataclass
class NavigateResult(WorkflowResult):
    """A navigation run.

    Attributes (beside WorkflowResult's):
        targets: (K, 2) the targets, m.
        track_times, track_poses: (T,), (T, 3) the torso midpoint's pose over time.
        feet_tracks: name -> (T, 2) the feet's and the torso ends' paths, m.
        obstacle_clearance: per obstacle, the smallest distance of the limbs to its edge, m.
        navigation: the run (drakebots.gecko.experiments.NavigationResult: steps, log or trace).
        course: the resolved course (start, epsilon, budget, obstacles, name).
        fit: the motion fit the planner used (drakebots.gecko.planner.MotionFit).
        planner: the gait pattern generator's planner.
    """

    targets: np.ndarray = None
    track_times: np.ndarray = None
    track_poses: np.ndarray = None
    feet_tracks: dict = None
    obstacle_clearance: list = None
    navigation: object = None
    course: _Course = None
    fit: object = None
    planner: object = None

    def _SummaryInputs(self) -> dict:
        c = self.course
        return {
            "course": c.name,
            "targets_m": [list(t) for t in c.targets],
            "start": c.start,
            "epsilon_m": c.epsilon,
            "max_steps_per_target": c.budget,
            "model": self.config.model,
            "fit": self.config.fit,
            "method": self.config.method,
            "obstacles": [list(o) for o in c.obstacles],
        }

    def _SummaryFields(self) -> dict:
        return {
            "robot": "gecko",
            "fit": self.fit.ToJson(),
            "figures": self.figures,
            "steps": [
                {
                    "time_s": s.time,
                    "pose": [float(v) for v in s.pose],
                    "target": s.target + 1,
                    "q1_deg": s.q1,
                    "q2": s.q2,
                    "horizon": s.n,
                    "d0_m": s.d0,
                    "dn_m": s.dn,
                    "decision_ms": 1e3 * s.seconds,
                }
                for s in self.navigation.steps
            ],
        }

    def _Write(self, results) -> None:
        from drakebots.gecko.plots import PlotCourse, PlotGaitSignals
        from drakebots.gecko.replay import GeckoReplayDecorator, GeometricTraceReplay
        from drakebots.robots import GetRobot
        from drakebots.visualization.replay import ReplayHtml

        run, course, steps = self.navigation, self.course, self.navigation.steps
        results.SaveNpz(
            "navigation.npz",
            {
                "targets": run.targets,
                "track_times": run.track_times,
                "track_poses": run.track_poses,
                "step_times": np.array([s.time for s in steps]),
                "step_poses": np.array([s.pose for s in steps]).reshape(-1, 3),
                "step_target": np.array([s.target for s in steps], dtype=int),
                "step_q": np.array([[s.q1, s.q2] for s in steps]).reshape(-1, 2),
                "step_horizon": np.array([s.n for s in steps], dtype=int),
                "step_d0": np.array([s.d0 for s in steps]),
                "step_dn": np.array([s.dn for s in steps]),
                "decision_seconds": run.decision_seconds,
            },
        )
        results.SaveFigure(
            "course.png",
            PlotCourse(
                run,
                feet_tracks=self.feet_tracks,
                obstacles=course.obstacles,
                title=f"{course.name}: gait pattern generator ({self.config.model} model, "
                f"fit: {self.fit.source})",
            ),
        )
        results.SaveFigure("distance_function.png", self._DistanceFunctionFigure())
        decorator_args = {
            "targets": run.targets,
            "epsilon": course.epsilon,
            "obstacles": course.obstacles,
            "track": run.track_poses,
        }
        robot = GetRobot("gecko")
        if run.log is not None:
            log = run.log
            results.SaveNpz("log.npz", log.ArraysForNpz())
            results.SaveFigure("gait_signals.png", PlotGaitSignals(log))
            html = ReplayHtml(
                robot,
                log.times,
                log.positions,
                decorator=GeckoReplayDecorator(log.extra["fixation"], **decorator_args),
            )
        else:
            html = GeometricTraceReplay(robot, run.trace, **decorator_args)
        results.WriteText("replay.html", html)

    def _DistanceFunctionFigure(self):
        """Fig. 10: the planner's distance function for the first target from the start pose."""
        from drakebots.gecko.plots import PlotDistanceFunction

        steps = self.navigation.steps
        first = np.asarray(self.course.targets[0])
        horizons = [1]
        if steps:
            horizons.append(max(steps[0].n, 4) if steps[0].n == 1 else steps[0].n)
        else:
            horizons.append(4)
        return PlotDistanceFunction(
            self.planner,
            _StartPose(self.course.start),
            first,
            tuple(horizons),
            title=f"distance function for target 1 ({first[0]:.2f}, {first[1]:.2f}) m "
            "from the start pose",
        )


def LoadCourse(path_text: str | Path) -> GeckoCourse:
    """A course file (or a course under drakebots/scenarios), validated."""
    from drakebots.config import LoadTypedYaml

    path = Path(path_text)
    if not path.is_file() and (SCENARIOS_DIRECTORY / path_text).is_file():
        path = SCENARIOS_DIRECTORY / path_text
    course = LoadTypedYaml(GeckoCourse, filename=path)
    if not course.targets:
        raise InputError(f"{path}: 'targets' must list at least one waypoint")
    if len(course.start) != 3:
        raise InputError(f"{path}: 'start' must be [x, y, heading_deg], got {course.start}")
    if not course.epsilon > 0.0:
        raise InputError(f"{path}: 'epsilon' must be > 0 m, got {course.epsilon}")
    CheckWork("target_radius", course.epsilon, f"{path}: 'epsilon'")
    if course.max_steps_per_target < 1:
        raise InputError(f"{path}: 'max_steps_per_target' must be >= 1")
    for k, obstacle in enumerate(course.obstacles, start=1):
        if not obstacle.radius > 0.0:
            raise InputError(f"{path}: obstacle {k} needs a radius > 0 m")
        for j, target in enumerate(course.targets, start=1):
            if math.hypot(target.x - obstacle.x, target.y - obstacle.y) < obstacle.radius:
                raise InputError(f"{path}: target {j} lies inside obstacle {k}")
    return course


def LoadMotionFit(text: str):
    """ "reference" (Table 3), or the fit of a velocity-space results folder or fit.json."""
    from drakebots.gecko.planner import LoadFit, ReferenceFit

    if text == "reference":
        return ReferenceFit()
    path = Path(text)
    if not (path.is_file() or (path / "fit.json").is_file()):
        raise InputError(
            f"--fit {text}: neither 'reference' nor a velocity-space folder or fit.json"
        )
    try:
        return LoadFit(path)
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # not JSON, not a fit
        raise InputError(f"--fit {text}: not a valid fit ({e})") from None


def ResolveCourse(config: NavigateConfig) -> _Course:
    """The course a config describes (course file, targets, overrides), checked."""
    if config.course is not None and config.targets is not None:
        raise InputError("--targets and --course: give one of them")
    if config.course is not None:
        course = LoadCourse(config.course)
        resolved = _Course(
            targets=[(t.x, t.y) for t in course.targets],
            start=list(course.start),
            epsilon=course.epsilon,
            budget=course.max_steps_per_target,
            obstacles=[(o.x, o.y, o.radius) for o in course.obstacles],
            name=course.name or Path(config.course).stem,
        )
    else:
        targets = _CheckTargets(PAPER_COURSE if config.targets is None else config.targets)
        paper = len(targets) == 4 and np.allclose(targets, PAPER_COURSE)
        name = "the paper's course (Fig. 12)" if paper else "targets"
        resolved = _Course(targets, [0.0, 0.0, 0.0], 0.05, 40, [], name)
    if config.start is not None:
        start = [float(v) for v in config.start]
        if len(start) != 3 or not all(math.isfinite(v) for v in start):
            raise InputError(f"--start {config.start}: write 'x,y,heading' (m, m, deg)")
        resolved.start = start
    if config.epsilon is not None:
        if not config.epsilon > 0.0:
            raise InputError(f"--epsilon must be > 0 m, got {config.epsilon}")
        # 1e308 reached every target at once (issue 68).
        CheckWork("target_radius", config.epsilon, f"--epsilon {config.epsilon} m")
        resolved.epsilon = float(config.epsilon)
    if config.max_steps is not None:
        if config.max_steps < 1:
            raise InputError(f"--max-steps must be >= 1, got {config.max_steps}")
        resolved.budget = int(config.max_steps)
    _CheckCourseSize(resolved, f"--course {config.course}" if config.course else "--targets")
    return resolved


# How far from the origin a course's targets, start and obstacles may lie, m, is drakebots.limits'
# "course" bound: the gecko walks centimetres a cycle, so a target farther is a typo (1e300 made
# the planner's search fail with a TypeError, issue 68).


def _CheckCourseSize(course: _Course, where: str) -> None:
    points = [("target", k, t[:2]) for k, t in enumerate(course.targets, start=1)]
    points += [("obstacle", k, o[:2]) for k, o in enumerate(course.obstacles, start=1)]
    points.append(("start", 1, course.start[:2]))
    most = Limit("course")
    for what, k, xy in points:
        if not all(math.isfinite(float(v)) and abs(float(v)) <= most for v in xy):
            name = what if what == "start" else f"{what} {k}"
            flag = "--start" if what == "start" else where
            raise InputError(
                f"{flag}: {name} {[float(v) for v in xy]} lies beyond {most:g} m of the origin "
                "(the course's coordinates are metres; set DRAKEBOTS_MAX_COURSE to allow more)"
            )


def _CheckTargets(targets) -> list[tuple[float, float]]:
    if not len(targets):
        raise InputError("--targets: no targets (write 'x,y; x,y; ...' in m)")
    checked = []
    for k, target in enumerate(targets, start=1):
        if len(target) != 2 or not all(math.isfinite(float(v)) for v in target):
            raise InputError(f"--targets: entry {k} {list(target)} is not 'x,y' in m")
        checked.append((float(target[0]), float(target[1])))
    return checked


def _StartPose(start) -> tuple[float, float, float]:
    return (start[0], start[1], math.radians(start[2]))


def _CheckConfig(config: NavigateConfig) -> None:
    from drakebots.config import CheckTypes

    CheckTypes(config)
    if config.model not in MODELS:
        raise InputError(f"--model {config.model}: one of {', '.join(MODELS)}")
    if config.method not in METHODS:
        raise InputError(f"--method {config.method}: one of {', '.join(METHODS)}")
    if config.time_step is not None and not config.time_step > 0.0:
        raise InputError(f"--time-step must be > 0 s, got {config.time_step}")


def CheckNavigateConfig(config: NavigateConfig) -> _Course:
    """The course of a config, the config checked (InputError naming the flag or the course
    file) but for its --fit, which may be the output of a run not made yet (a sweep's earlier
    case): `Navigate` reads it before any work."""
    _CheckConfig(config)
    return ResolveCourse(config)


def Navigate(config: NavigateConfig, *, meshcat=None, progress=None) -> NavigateResult:
    """Walks the gecko through the config's targets with the gait pattern generator.

    Args:
        config: the course, the fit, the model.
        meshcat: a pydrake Meshcat to stream the Drake model to (None: none).
        progress: a drakebots.workflow progress callback (a line per decision).

    Returns:
        the result; `success` is False when a target is not reached within its step budget
        (the closest approach is recorded). Raises InputError for a bad config before any work.
    """
    from drakebots.gecko.experiments import NavigateDrake, NavigateGeometric
    from drakebots.gecko.planner import GaitPatternPlanner, PlannerParams

    course = CheckNavigateConfig(config)
    fit = LoadMotionFit(config.fit)
    report = Reporter(progress)
    planner = GaitPatternPlanner(fit, PlannerParams(epsilon=course.epsilon, method=config.method))
    count = len(course.targets)

    def Progress(book, step):
        report.Say(
            f"step {book.total_steps:>3}  target {step.target + 1}/{count}  "
            f"d0 {100 * step.d0:6.1f} cm  ->  q1 {step.q1:5.1f}  q2 {step.q2:+.2f}  "
            f"n {step.n}  (decision {1e3 * step.seconds:.1f} ms)"
        )

    arguments = {
        "start_pose": _StartPose(course.start),
        "max_steps_per_target": course.budget,
        "progress": Progress,
    }
    if config.model == "drake":
        from drakebots.gecko.simulation import GeckoSimConfig

        sim_config = GeckoSimConfig(time_step=config.time_step or GeckoSimConfig.time_step)
        run = NavigateDrake(
            planner, course.targets, config=sim_config, meshcat=meshcat, **arguments
        )
    else:
        run = NavigateGeometric(planner, course.targets, **arguments)
    clearance = Clearance(run, course.obstacles)
    return NavigateResult(
        verb="gecko navigate",
        config=config,
        success=run.success,
        reason=run.reason,
        figures=_Figures(run, clearance),
        targets=run.targets,
        track_times=run.track_times,
        track_poses=run.track_poses,
        feet_tracks=FeetTracks(run),
        obstacle_clearance=clearance,
        navigation=run,
        course=course,
        fit=fit,
        planner=planner,
    )


def _Figures(run, clearance) -> dict:
    decision_ms = 1e3 * run.decision_seconds
    return {
        "targets": len(run.targets),
        "targets_reached": int(np.sum(run.reached)),
        "steps_total": len(run.steps),
        "steps_per_target": run.steps_per_target,
        "reached_at_step": run.reached_at_step.tolist(),
        "closest_approach_m": run.closest.tolist(),
        "path_length_m": run.path_length,
        "final_error_m": run.final_error,
        "simulated_time_s": run.sim_time,
        "wall_time_s": run.wall_time,
        "real_time_rate": run.sim_time / max(run.wall_time, 1e-9),
        "decision_ms_mean": float(np.mean(decision_ms)) if len(decision_ms) else 0.0,
        "decision_ms_max": float(np.max(decision_ms)) if len(decision_ms) else 0.0,
        "obstacle_clearance_m": clearance,
        "obstacles_touched": [c < 0.0 for c in clearance],
    }


def _Shapes(run):
    """(poses, alphas, lengths, stride) of a run's recorded shapes (the log's every 5th)."""
    from drakebots.gecko.geometry import GeckoDimensions

    if run.log is not None:
        poses, alphas = run.log.extra["pose"], run.log.extra["angles"]
        lengths = np.tile(GeckoDimensions().lengths(), (len(poses), 1))
        return poses, alphas, lengths, 5
    z = run.trace.z
    return z[:, :3], z[:, 3:8], z[:, 8:13], 1


def Clearance(run, obstacles) -> list[float]:
    """Smallest distance between the robot's limbs and each obstacle's edge over the run, m."""
    from drakebots.gecko.geometry import GeckoOutline, GeckoShapeOf

    if not obstacles:
        return []
    poses, alphas, lengths, stride = _Shapes(run)
    clearance = [math.inf] * len(obstacles)
    for k in range(0, len(poses), stride):
        shape = GeckoShapeOf(poses[k], alphas[k], lengths[k])
        points = np.vstack(GeckoOutline(shape, 8))
        for i, (ox, oy, radius) in enumerate(obstacles):
            d = float(np.min(np.hypot(points[:, 0] - ox, points[:, 1] - oy)) - radius)
            clearance[i] = min(clearance[i], d)
    return clearance


def FeetTracks(run) -> dict:
    """The feet's and the torso ends' paths over the run: name -> (T, 2), m."""
    from drakebots.gecko.geometry import FEET, GeckoShapeOf

    poses, alphas, lengths, _ = _Shapes(run)
    tracks = {name: [] for name in (*FEET, "torso_tip", "torso_end")}
    for k in range(len(poses)):
        shape = GeckoShapeOf(poses[k], alphas[k], lengths[k])
        for j, foot in enumerate(FEET):
            tracks[foot].append(shape.feet[j])
        tracks["torso_tip"].append(shape.front)
        tracks["torso_end"].append(shape.hind)
    return {name: np.array(points) for name, points in tracks.items()}
