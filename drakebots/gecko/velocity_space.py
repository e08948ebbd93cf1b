"""The velocity-space workflow (`drakebots gecko velocity-space`): one gait cycle at every grid
point of (q1, q2), the bivariate quadratic of the paper's Eq. 16 fitted to the motion per cycle,
and its comparison with the paper's experimental fit (Table 3).

    from drakebots.gecko import VelocitySpace, VelocitySpaceConfig
    config = VelocitySpaceConfig(model="geometric", q1=[50, 70, 90], q2=[-0.5, 0, 0.5])
    result = VelocitySpace(config)
    result.fit.coefficients, result.motion, result.figures["residual_rms"]
    result.Save("runs/gecko_vspace")     # fit.json (read by Navigate's `fit`), plots, replay
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from drakebots.errors import InputError
from drakebots.workflow import Reporter, WorkflowResult

MODELS = ("drake", "geometric")


@dataclasses.dataclass
class VelocitySpaceConfig:
    """The grid and the model of a velocity-space run (`drakebots gecko velocity-space`)."""

    # "drake" (suction feet as weld constraints, pneumatics, SAP contact) or "geometric" (the
    # authors' quasi-static model, over a hundred times faster).
    model: str = "drake"
    # Grid of step lengths q1, deg in [40, 90] (at least 3 values: the fit is quadratic).
    q1: list[float] = dataclasses.field(default_factory=lambda: [50.0, 60.0, 70.0, 80.0, 90.0])
    # Grid of steering factors q2 in [-0.5, 0.5] (at least 3 values).
    q2: list[float] = dataclasses.field(default_factory=lambda: [-0.5, -0.3, -0.1, 0.1, 0.3, 0.5])
    # Gait cycles run before the measured one.
    warmup: int = 1
    # Dask worker processes for the Drake model (each grid point is independent).
    workers: int = 2
    # Drake plant time step, s (None: GeckoSimConfig's, 2e-3).
    time_step: float | None = None
    # Grid point [q1, q2] replayed in replay.html (the paper's Fig. 8 shows 90, 0.3).
    replay: list[float] = dataclasses.field(default_factory=lambda: [90.0, 0.3])


@dataclasses.dataclass
class VelocitySpaceResult(WorkflowResult):
    """A velocity-space run: the measurements, the Eq. 16 fit, the comparison with Table 3.

    Attributes (beside WorkflowResult's):
        q1_deg, q2: (N,) the grid points (q1 outer, q2 inner).
        motion: (N, 3) the motion per cycle (d_eps rad, dx m, dy m) in the torso frame.
        fit: the Eq. 16 fit (drakebots.gecko.planner.MotionFit; `coefficients` (3, 6)).
        reference: the paper's Table 3 fit.
        space: the measurements (drakebots.gecko.experiments.VelocitySpace).
        cross: the geometric model on the same grid when the model is Drake's (else None).
        comparison: the fit against Table 3 (summary.json's comparison_with_table3).
        points: per grid point, the measured and fitted motion (summary.json's points).
        replay_log: the Drake log of the replayed grid point (None for the geometric model).
        replay_trace: the geometric model's trace of it (None for the Drake model).
    """

    q1_deg: np.ndarray = None
    q2: np.ndarray = None
    motion: np.ndarray = None
    fit: object = None
    reference: object = None
    space: object = None
    cross: object = None
    comparison: dict = None
    points: list = None
    replay_log: object = None
    replay_trace: object = None

    def _SummaryInputs(self) -> dict:
        c = self.config
        return {
            "model": c.model,
            "q1_deg": list(c.q1),
            "q2": list(c.q2),
            "warmup_cycles": c.warmup,
            "workers": c.workers,
            "replay": list(c.replay),
        }

    def _SummaryFields(self) -> dict:
        return {
            "robot": "gecko",
            "figures": self.figures,
            "fit": {
                "si": self.fit.ToJson(),
                "paper_units": self.fit.TableDegCm(),
                "reference_table3": self.reference.TableDegCm(),
            },
            "comparison_with_table3": self.comparison,
            "points": self.points,
        }

    def _Write(self, results) -> None:
        from drakebots.gecko.plots import PlotFitComparison, PlotGaitSignals, PlotVelocitySpace
        from drakebots.gecko.replay import GeckoReplayDecorator, GeometricTraceReplay
        from drakebots.robots import GetRobot
        from drakebots.visualization.replay import ReplayHtml

        space, cross = self.space, self.cross
        results.WriteJson("fit.json", self.fit.ToJson())
        results.SaveNpz(
            "velocity_space.npz",
            {
                "q1_deg": self.q1_deg,
                "q2": self.q2,
                "motion": self.motion,
                "poses": np.array([m.poses for m in space.measurements]),
                "alphas": np.array([m.alphas for m in space.measurements]),
                "lengths": np.array([m.lengths for m in space.measurements]),
                "fit_coefficients": self.fit.coefficients,
                "reference_coefficients": self.reference.coefficients,
                **({"geometric_motion": cross.motion} if cross is not None else {}),
            },
        )
        results.SaveFigure("velocity_space.png", PlotVelocitySpace(space), dpi=120)
        results.SaveFigure("fit_comparison.png", PlotFitComparison(self.fit, self.reference))
        if cross is not None:
            results.SaveFigure(
                "velocity_space_geometric.png",
                PlotVelocitySpace(cross, title="the geometric model on the same grid"),
                dpi=110,
            )
        robot = GetRobot("gecko")
        if self.replay_log is not None:
            log = self.replay_log
            html = ReplayHtml(
                robot,
                log.times,
                log.positions,
                decorator=GeckoReplayDecorator(log.extra["fixation"], track=log.extra["pose"]),
            )
            results.SaveFigure("replay_point_signals.png", PlotGaitSignals(log))
        else:
            trace = self.replay_trace
            html = GeometricTraceReplay(robot, trace, track=trace.poses)
        results.WriteText("replay.html", html)


def CheckVelocitySpaceConfig(config: VelocitySpaceConfig) -> None:
    """Raises InputError (naming the flag) for a grid or setting the run cannot use."""
    from drakebots.config import CheckTypes

    CheckTypes(config)
    if config.model not in MODELS:
        raise InputError(f"--model {config.model}: one of {', '.join(MODELS)}")
    _CheckGrid(config.q1, config.q2)
    from drakebots.limits import CheckWork

    # Each grid point is a simulated cycle (or warmup + 1): bounded as a sweep's cases are.
    CheckWork("cases", len(config.q1) * len(config.q2), "--q1 x --q2 grid points")
    if len(config.q1) < 3 or len(config.q2) < 3:
        raise InputError("--q1/--q2: the quadratic of Eq. 16 needs at least 3 values of each")
    if config.warmup < 0:
        raise InputError(f"--warmup must be >= 0, got {config.warmup}")
    if config.workers < 1:
        raise InputError(f"--workers must be >= 1, got {config.workers}")
    if config.time_step is not None and not config.time_step > 0.0:
        raise InputError(f"--time-step must be > 0 s, got {config.time_step}")
    if len(config.replay) != 2:
        raise InputError(f"--replay {config.replay}: write 'q1,q2'")
    _CheckGrid([config.replay[0]], [config.replay[1]])


def _CheckGrid(q1_values, q2_values):
    from drakebots.gecko.geometry import CheckVelocitySpacePoint

    for values in (q1_values, q2_values):
        if not values or not all(math.isfinite(v) for v in values):
            raise InputError(f"--q1/--q2 {list(values)}: needs at least one finite number")
    for q1 in q1_values:
        for q2 in q2_values:
            try:
                CheckVelocitySpacePoint(q1, q2)
            except ValueError as e:
                raise InputError(f"--{str(e)[:2]}: {e}") from None


def VelocitySpace(
    config: VelocitySpaceConfig, *, meshcat=None, progress=None
) -> VelocitySpaceResult:
    """Measures one gait cycle at every grid point, fits Eq. 16 and compares it with Table 3.

    Args:
        config: the grid and the model.
        meshcat: unused (the grid runs in worker processes); accepted as every workflow does.
        progress: a drakebots.workflow progress callback (a line and a step per grid point).

    Returns:
        the result; `success` is False when a grid point's cycle failed (the failures in
        `reason`). Raises InputError for a bad config before any work.
    """
    from drakebots.gecko.experiments import MeasureVelocitySpace
    from drakebots.gecko.planner import ReferenceFit

    CheckVelocitySpaceConfig(config)
    q1_values = [float(v) for v in config.q1]
    q2_values = [float(v) for v in config.q2]
    report = Reporter(progress)
    options = {}
    if config.model == "drake":
        from drakebots.gecko.simulation import GeckoSimConfig

        options["config"] = GeckoSimConfig(time_step=config.time_step or GeckoSimConfig.time_step)
    total = len(q1_values) * len(q2_values)

    def Progress(done, count, m):
        report.Say(
            f"[{done}/{count}] q1 {m.q1:>4.0f}  q2 {m.q2:+.1f}:  d_eps "
            f"{math.degrees(m.motion[0]):+7.2f} deg  dx {100 * m.motion[1]:6.2f} cm  "
            f"dy {100 * m.motion[2]:+6.2f} cm  ({m.seconds:.1f} s)"
        )
        report.Step("grid points", done, count)

    report.Say(f"velocity space: {total} grid points, {config.model} model")
    space = MeasureVelocitySpace(
        config.model,
        q1_values,
        q2_values,
        warmup=config.warmup,
        workers=config.workers,
        options=options,
        progress=Progress,
    )
    # The other model on the same grid: the cross-check (the geometric one takes seconds).
    cross = None
    if config.model == "drake":
        cross = MeasureVelocitySpace("geometric", q1_values, q2_values, warmup=config.warmup)
    reference = ReferenceFit()
    fit = space.fit
    failures = [f for m in space.measurements for f in m.failures]
    replay_log, replay_trace = _ReplayPoint(config, options)
    return VelocitySpaceResult(
        verb="gecko velocity-space",
        config=config,
        success=not failures,
        reason="; ".join(failures[:5]) if failures else None,
        figures=_Figures(space, cross, q1_values),
        q1_deg=space.q1,
        q2=space.q2,
        motion=space.motion,
        fit=fit,
        reference=reference,
        space=space,
        cross=cross,
        comparison=CompareWithReference(fit, reference, space.q1, space.q2),
        points=_Points(space, fit),
        replay_log=replay_log,
        replay_trace=replay_trace,
    )


def _ReplayPoint(config, options):
    """One grid point (Fig. 8's detailed view) in the chosen model: (Drake log, None) or
    (None, geometric trace)."""
    from drakebots.gecko.geometry import GaitLawDeg

    q1, q2 = config.replay
    if config.model == "drake":
        from drakebots.gecko.simulation import GeckoSimulation

        sim = GeckoSimulation(options["config"], gait=(q1, q2), start_alpha_deg=GaitLawDeg(q1, q2))
        sim.RunHalfCycles(2 * (config.warmup + 1))
        return sim.Log(), None
    from drakebots.gecko.geometric import GeometricGait

    gait = GeometricGait(substeps=8)
    gait.Reset(alpha_deg=GaitLawDeg(q1, q2))
    gait.Cycles(q1, q2, config.warmup + 1)
    return None, gait.Trace()


def _Points(space, fit) -> list[dict]:
    points = []
    for m in space.measurements:
        value = fit.Evaluate(m.q1, m.q2)
        points.append(
            {
                "q1_deg": m.q1,
                "q2": m.q2,
                "d_eps_deg": math.degrees(m.motion[0]),
                "dx_cm": 100 * m.motion[1],
                "dy_cm": 100 * m.motion[2],
                "fit_d_eps_deg": math.degrees(value[0]),
                "fit_dx_cm": 100 * value[1],
                "fit_dy_cm": 100 * value[2],
                "seconds": m.seconds,
            }
        )
    return points


def _Figures(space, cross, q1_values) -> dict:
    fit = space.fit
    figures = {
        "grid_points": len(space.measurements),
        "grid_seconds": space.seconds,
        "seconds_per_point": space.seconds / len(space.measurements),
        "residual_rms": {
            "d_eps_deg": math.degrees(fit.residual_rms[0]),
            "dx_cm": 100 * fit.residual_rms[1],
            "dy_cm": 100 * fit.residual_rms[2],
        },
        "residual_max": {
            "d_eps_deg": math.degrees(fit.residual_max[0]),
            "dx_cm": 100 * fit.residual_max[1],
            "dy_cm": 100 * fit.residual_max[2],
        },
        "positive_q2_turns_negative": bool(
            np.all(space.motion[space.q2 > 0, 0] < 0) and np.all(space.motion[space.q2 < 0, 0] > 0)
        ),
        "dx_grows_with_q1": bool(
            np.mean(space.motion[space.q1 == max(q1_values), 1])
            > np.mean(space.motion[space.q1 == min(q1_values), 1])
        ),
    }
    if cross is not None:
        diff = space.motion - cross.motion
        figures["drake_minus_geometric"] = {
            "d_eps_deg_max_abs": float(np.degrees(np.max(np.abs(diff[:, 0])))),
            "d_eps_deg_rms": float(np.degrees(np.sqrt(np.mean(diff[:, 0] ** 2)))),
            "dx_cm_max_abs": float(100 * np.max(np.abs(diff[:, 1]))),
            "dx_cm_rms": float(100 * np.sqrt(np.mean(diff[:, 1] ** 2))),
            "dy_cm_max_abs": float(100 * np.max(np.abs(diff[:, 2]))),
            "dy_cm_rms": float(100 * np.sqrt(np.mean(diff[:, 2] ** 2))),
            "geometric_grid_seconds": cross.seconds,
        }
    return figures


def CompareWithReference(fit, reference, q1, q2) -> dict:
    """The project's fit of Eq. 16 against the paper's Table 3, in the paper's units.

    The six monomials are nearly collinear over the grid (q2 and q1*q2 especially), so two fits
    of the same motion can split it differently between terms. The comparison therefore reports,
    per output: (a) the effects at the grid centre (value and slopes along q1 and q2), which do
    not depend on that split; (b) the reference's two dominant terms (largest mean magnitude of
    coefficient x monomial over the grid) next to the same terms of the own fit; (c) the
    correlation of the two fits over the grid.
    """
    from drakebots.gecko.planner import OUTPUTS, TERMS, Terms

    center = (float(np.mean([min(q1), max(q1)])), float(np.mean([min(q2), max(q2)])))
    monomials = np.abs(Terms(q1, q2)).mean(axis=0)
    units = {"d_eps": 180.0 / math.pi, "dx": 100.0, "dy": 100.0}
    report = {"grid_centre": {"q1_deg": center[0], "q2": center[1]}}
    own_value, ref_value = fit.Evaluate(*center), reference.Evaluate(*center)
    own_g1, own_g2 = fit.Gradient(*center)
    ref_g1, ref_g2 = reference.Gradient(*center)
    for row, name in enumerate(OUTPUTS):
        u = units[name]
        effects = {}
        for label, own, ref in (
            ("value", own_value[row], ref_value[row]),
            ("slope_q1_per_deg", own_g1[row], ref_g1[row]),
            ("slope_q2", own_g2[row], ref_g2[row]),
        ):
            effects[label] = {
                "own": float(own * u),
                "reference": float(ref * u),
                "same_sign": bool(np.sign(own) == np.sign(ref)),
                "ratio": float(own / ref) if ref else None,
            }
        own_c = fit.coefficients[row] * monomials * u
        ref_c = reference.coefficients[row] * monomials * u
        dominant = [
            {
                "term": TERMS[k],
                "own_contribution": float(own_c[k]),
                "reference_contribution": float(ref_c[k]),
                "same_sign": bool(np.sign(own_c[k]) == np.sign(ref_c[k])),
            }
            for k in np.argsort(-np.abs(ref_c))[:2]
        ]
        own_values = Terms(q1, q2) @ fit.coefficients[row] * u
        ref_values = Terms(q1, q2) @ reference.coefficients[row] * u
        report[name] = {
            "unit": "deg/cycle" if name == "d_eps" else "cm/cycle",
            "effects_at_grid_centre": effects,
            "dominant_terms_of_reference": dominant,
            "grid_mean_abs_own": float(np.mean(np.abs(own_values))),
            "grid_mean_abs_reference": float(np.mean(np.abs(ref_values))),
            "correlation_over_grid": float(np.corrcoef(own_values, ref_values)[0, 1]),
        }
    return report
