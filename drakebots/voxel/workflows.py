"""The voxel workflows (`drakebots voxel fem|pom|compare`) as Python calls.

    from drakebots.voxel import Fem, FemConfig, Pom, PomConfig, Compare, CompareConfig
    fem = Fem(FemConfig(lattice="2x2x1", actuate=["node=0:0:0/3,axis=y,stroke=2mm"]))
    fem.translations, fem.figures["max_dissipation"]      # Figs. 1-3: pattern, dissipation
    pom = Pom(PomConfig(gait="tripod"))                    # the POM inverse kinematics of a gait
    pom.strokes
    Compare(CompareConfig()).figures["core_max_error_relative"]   # POM against the frame FEM

Fem: the frame FEM of an actuated lattice, the displacement pattern of its plane of motion, its
dissipation against distance and the motion of the parallel layers. Pom: the actuator sequence
that the Planes-of-Motion inverse kinematics gives for the gait's foot paths, and the feet's
predicted motion. Compare: Pom, then the POM prediction against the FEM of the whole robot, node
by node, and the Drake model's static response against the FEM.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from drakebots.errors import InputError
from drakebots.workflow import Reporter, WorkflowResult

MOUNTS = ("clamped", "prismatic", "axial")
JOINTS = ("rigid", "pinned")
ROBOTS = ("tripod",)
GAITS = ("tripod", "tripod_reverse")
STROKE_TRAVEL_MM = 10.0  # the model's actuator travel (drakebots.voxel.tripod_model)
MAX_STRUT_SIDE_MM = 7.62  # a tenth of the pitch
# The thinnest strut, mm: its stiffness goes as the side^4, which underflows to a singular frame
# (1e-300 mm was a traceback); a hundredth of a millimetre is below any printed strut.
MIN_STRUT_SIDE_MM = 0.01

# What dissipation.json's figures mean.
DISSIPATION_DEFINITIONS = {
    "control_amplitude_m": "half the first actuator's extension, (u_b - u_a).e / 2",
    "amplitude_ratio": "(u_n . d_n) / control amplitude, d_n the node's unit "
    "rotating-squares direction (checkerboard sign x e_d x r_n)",
    "dissipation": "1 - amplitude_ratio",
    "off_pattern": "|u_n - (u_n . d_n) d_n| / |control amplitude|",
    "layer_ratio": "mean rotation amplitude of the voxels of each layer parallel to the "
    "plane / control amplitude (offset 0 = the actuated layer)",
    "rigid_motion": "for floating actuators (force, prismatic, axial mounts): removed "
    "before measuring, fitted by least squares jointly with the pattern's amplitude",
}


# ---------------------------------------------------------------------------------------------
# fem


@dataclasses.dataclass
class FemConfig:
    """An actuated lattice for the frame FEM (`drakebots voxel fem`)."""

    # Lattice size "NXxNYxNZ" in voxels (unused when `occupancy` is given).
    lattice: str = "2x2x1"
    # A .npy file holding a 3-D boolean array, occupancy[i, j, k] = a voxel at grid position
    # (i, j, k) (instead of `lattice`).
    occupancy: str | None = None
    # Actuators "node=I:J:K/N,axis=x|y|z|to=I:J:K/N,stroke=2mm|force=1N" (at least one; the first
    # is analysed), e.g. ["node=0:0:0/3,axis=y,stroke=2mm"] in a 2x2x1 lattice.
    actuate: list[str] = dataclasses.field(default_factory=list)
    # Actuator mount: "clamped" (the paper's setting, sec. 2.1: each node moves half the stroke
    # along the axis, its rotations held), "prismatic" or "axial".
    mount: str = "clamped"
    # Strut-to-node joints: "rigid" (PFEA/Frame3DD, the paper's FEM) or "pinned" (ideal ball
    # joints, the POM model's kinematic idealisation; strokes only).
    joints: str = "rigid"
    # Strut cross-section side, mm (None: 1.27, the reference struts).
    strut_side: float | None = None
    # Include strut shear (Timoshenko beams).
    timoshenko: bool = False


@dataclasses.dataclass
class FemResult(WorkflowResult):
    """A solved lattice and its displacement pattern.

    Attributes (beside WorkflowResult's):
        lattice: the VoxelLattice (nodes, struts, voxels).
        frame: its beam frame (drakebots.frame.Frame: StiffnessMatrix(), ...).
        actuators: the frame actuators the specs gave.
        solution: the static solution (displacements (N, 6), reactions, actuator forces).
        translations: (N, 3) node translations, m (rigid motion removed for a floating lattice).
        voxel_rotations: (V,) each voxel's rotation, rad.
        volume_ratios: (V,) each voxel's volume ratio.
        pattern: the plane-of-motion analysis (drakebots.voxel.observations.PatternReport).
        plane: the first actuator's plane of motion.
        strain_energy_parts: the strain energy by deformation mode, J.
        dissipation: dissipation.json's contents.
        name: the lattice's name in titles.
    """

    lattice: object = None
    frame: object = None
    actuators: list = None
    solution: object = None
    translations: np.ndarray = None
    voxel_rotations: np.ndarray = None
    volume_ratios: np.ndarray = None
    pattern: object = None
    plane: object = None
    strain_energy_parts: dict = None
    dissipation: dict = None
    name: str = ""

    def _SummaryInputs(self) -> dict:
        c = self.config
        return {
            "lattice": None if c.occupancy else c.lattice,
            "occupancy": c.occupancy,
            "actuate": list(c.actuate),
            "mount": c.mount,
            "joints": c.joints,
            "strut_side_m": _StrutSide(c),
            "timoshenko": c.timoshenko,
        }

    def _SummaryFields(self) -> dict:
        return {"figures": self.figures}

    def _Write(self, results) -> None:
        from drakebots.voxel.observations import NodeSpec
        from drakebots.voxel.plots import (
            LatticeReplayHtml,
            PlotDisplacementPattern,
            PlotDissipation,
        )

        lattice, u, first = self.lattice, self.translations, self.actuators[0]
        joints = self.config.joints
        results.SaveFigure(
            "displacement.png",
            PlotDisplacementPattern(
                lattice,
                u,
                self.pattern,
                actuator=(first.node_a, first.node_b),
                title=f"{self.name} lattice, {joints} joints, actuator "
                f"{NodeSpec(lattice, first.node_a)} -> {NodeSpec(lattice, first.node_b)}",
            ),
        )
        results.SaveFigure(
            "dissipation.png",
            PlotDissipation(
                self.pattern,
                title=f"{self.name}, {joints} joints: displacement dissipation in the {self.plane}",
            ),
        )
        results.SaveNpz(
            "fem.npz",
            {
                "nodes": lattice.nodes,
                "node_coords": lattice.node_coords,
                "struts": lattice.struts,
                "displacements": self.solution.displacements,
                "translations": u,
            },
        )
        results.WriteJson("dissipation.json", self.dissipation)
        scale = 0.1 * lattice.pitch / max(np.abs(u).max(), 1e-300)
        frames = np.array([u * s for s in np.sin(np.linspace(0, np.pi / 2, 8))])
        results.WriteText(
            "replay.html", LatticeReplayHtml(lattice.nodes, lattice.struts, frames, scale=scale)
        )


def _StrutSide(config: FemConfig) -> float:
    from drakebots.voxel.lattice import STRUT_SIDE

    return STRUT_SIDE if config.strut_side is None else config.strut_side * 1e-3


def _MakeLattice(config: FemConfig):
    """(lattice, name) of a config, its struts of the config's section."""
    from drakebots.frame.elements import RectangularSection
    from drakebots.voxel.actuators import CheckConnected, LoadOccupancy
    from drakebots.voxel.lattice import (
        POISSONS_RATIO,
        YOUNGS_MODULUS,
        CubicLattice,
        ParseLatticeSize,
        VoxelLattice,
    )

    if config.mount not in MOUNTS:
        raise InputError(f"--mount {config.mount}: one of {', '.join(MOUNTS)}")
    if config.joints not in JOINTS:
        raise InputError(f"--joints {config.joints}: one of {', '.join(JOINTS)}")
    side = _StrutSide(config)
    if not MIN_STRUT_SIDE_MM * 1e-3 <= side <= MAX_STRUT_SIDE_MM * 1e-3:
        raise InputError(
            f"--strut-side {config.strut_side}: must be in [{MIN_STRUT_SIDE_MM:g}, "
            f"{MAX_STRUT_SIDE_MM:g}] mm"
        )
    section = RectangularSection(
        side,
        side,
        youngs_modulus=YOUNGS_MODULUS,
        poissons_ratio=POISSONS_RATIO,
        timoshenko=config.timoshenko,
    )
    if config.occupancy:
        occupancy = LoadOccupancy(config.occupancy)
        try:
            CheckConnected(occupancy)
        except InputError as e:
            raise InputError(f"--occupancy {config.occupancy}: {e}") from None
        lattice = VoxelLattice(occupancy, section=section)
        return lattice, f"{'x'.join(str(n) for n in lattice.occupancy.shape)} occupancy"
    return CubicLattice(ParseLatticeSize(config.lattice), section=section), config.lattice


def _MakeActuators(config: FemConfig, lattice) -> list:
    """The config's actuators, each checked against the rotating squares' stroke limits."""
    from drakebots.voxel.actuators import ParseActuator
    from drakebots.voxel.lattice import StrokeLimits
    from drakebots.voxel.observations import DescribeValidActuators

    if not config.actuate:
        raise InputError(
            "--actuate is required for voxel fem; actuators that drive a plane of motion in "
            f"this lattice: {DescribeValidActuators(lattice)}"
        )
    actuators = [ParseActuator(lattice, spec, config.mount) for spec in config.actuate]
    lo, hi = StrokeLimits(lattice.pitch)
    for actuator in actuators:
        if actuator.force is None and not lo < actuator.stroke < hi:
            ends = lattice.VoxelsOfNode(actuator.node_a) + lattice.VoxelsOfNode(actuator.node_b)
            voxels = sorted({tuple(int(c) for c in lattice.voxels[v]) for v, _ in ends})
            raise InputError(
                f"--actuate '{actuator.name}': stroke {actuator.stroke * 1e3:+.4g} mm would turn "
                f"the squares of voxels {', '.join(map(str, voxels))} past 45 degrees, folding "
                "them into their neighbours (their struts would cross: the voxels invert). The "
                f"rotating squares allow strokes in ({lo * 1e3:+.4g}, {hi * 1e3:+.4g}) mm at "
                "this pitch"
            )
        if config.joints == "pinned" and actuator.force is not None:
            raise InputError(
                f"--actuate '{actuator.name}': --joints pinned makes the plane a mechanism, "
                "which has no static response to a force; give stroke= instead"
            )
    return actuators


def CheckFemConfig(config: FemConfig) -> tuple:
    """(lattice, its name, the actuators) of a config, checked: InputError naming the flag for a
    lattice, strut or actuator the frame FEM cannot take (before any work; a load that folds a
    voxel shows only in the solution, which `Fem` checks)."""
    from drakebots.config import CheckTypes

    CheckTypes(config)
    lattice, name = _MakeLattice(config)
    return lattice, name, _MakeActuators(config, lattice)


def _CheckLinearValidity(lattice, u):
    """(voxel rotations, volume ratios); InputError if the linear solution folds a voxel."""
    from drakebots.voxel.lattice import MAX_SQUARE_ROTATION

    rotation = np.linalg.norm(lattice.VoxelRotations(u), axis=1)
    if rotation.max() >= MAX_SQUARE_ROTATION:
        worst = int(np.argmax(rotation))
        raise InputError(
            f"--actuate: the load turns voxel {tuple(int(c) for c in lattice.voxels[worst])} by "
            f"{math.degrees(rotation[worst]):.0f} degrees (> 45: its square folds into its "
            "neighbours and the voxel inverts); use a smaller stroke or force"
        )
    ratios = lattice.VoxelVolumeRatios(u)
    if np.any(ratios <= 0.0):
        worst = int(np.argmin(ratios))
        raise InputError(
            f"--actuate: the load inverts voxel {tuple(int(c) for c in lattice.voxels[worst])} "
            f"(its volume ratio is {ratios[worst]:.3g}); use a smaller stroke or force"
        )
    return rotation, ratios


def Fem(config: FemConfig, *, meshcat=None, progress=None) -> FemResult:
    """Solves the actuated lattice's frame FEM and analyses its plane of motion.

    Args:
        config: the lattice, its actuators and struts.
        meshcat: unused (the replay is written by Save); accepted as every workflow does.
        progress: a drakebots.workflow progress callback.

    Returns:
        the result (always a success: a load the linear solution cannot carry, one that folds
        or inverts a voxel, raises InputError, as does any bad config, before anything is
        written).
    """
    from drakebots.voxel.observations import ActuatorPlane, AnalysePattern

    report = Reporter(progress)
    lattice, name, actuators = CheckFemConfig(config)
    frame = lattice.MakeFrame(joints=config.joints)
    floating = any(a.mount != "clamped" or a.force is not None for a in actuators)
    clamp = None
    if floating:
        used = {a.node_a for a in actuators} | {a.node_b for a in actuators}
        clamp = next(i for i in range(lattice.num_nodes) if i not in used)
    report.Say(f"{name} lattice: {frame.num_dofs} dofs, {len(actuators)} actuator(s)")
    solution = frame.Solve(actuators=actuators, clamp_node=clamp)
    first = actuators[0]
    plane = ActuatorPlane(lattice, first.node_a, first.node_b)
    # A floating lattice (one clamped node) carries an arbitrary rigid motion: remove it.
    pattern = AnalysePattern(
        lattice, solution.translations, first.node_a, first.node_b, remove_rigid_motion=floating
    )
    u = pattern.translations
    rotation, ratios = _CheckLinearValidity(lattice, u)
    energy = frame.StrainEnergyParts(solution.displacements)
    return FemResult(
        verb="voxel fem",
        config=config,
        success=True,
        reason=None,
        figures=_FemFigures(lattice, frame, actuators, solution, u, rotation, ratios, energy)
        | pattern.Summary(),
        lattice=lattice,
        frame=frame,
        actuators=actuators,
        solution=solution,
        translations=u,
        voxel_rotations=rotation,
        volume_ratios=ratios,
        pattern=pattern,
        plane=plane,
        strain_energy_parts=energy,
        dissipation=_Dissipation(lattice, pattern, plane),
        name=name,
    )


def _FemFigures(lattice, frame, actuators, solution, u, rotation, ratios, energy) -> dict:
    from drakebots.voxel.lattice import SquareRotation

    total_energy = max(sum(energy.values()), 1e-300)
    return {
        "num_voxels": lattice.num_voxels,
        "num_nodes": lattice.num_nodes,
        "num_struts": int(len(lattice.struts)),
        "num_dofs": frame.num_dofs,
        "actuator_forces_N": solution.actuator_forces,
        "strain_energy_J": solution.strain_energy,
        "strain_energy_fractions": {k: v / total_energy for k, v in energy.items()},
        "max_translation_m": float(np.max(np.linalg.norm(u, axis=1))),
        "max_voxel_rotation_deg": float(np.degrees(rotation.max())),
        "exact_square_rotation_deg": [
            math.degrees(abs(SquareRotation(a.stroke, lattice.pitch)))
            for a in actuators
            if a.force is None
        ],
        "min_voxel_volume_ratio": float(ratios.min()),
        "solve_seconds": solution.seconds,
    }


def _Dissipation(lattice, pattern, plane) -> dict:
    """dissipation.json: the amplitude ratio of every node of the plane against its distance."""
    from drakebots.voxel.observations import NodeSpec

    return {
        "definitions": DISSIPATION_DEFINITIONS,
        "plane_of_motion": str(plane),
        "paper_max_dissipation": pattern.Summary()["paper_max_dissipation"],
        "nodes": [
            {
                "node": NodeSpec(lattice, int(n)),
                "coords_half_pitch": [int(c) for c in lattice.node_coords[n]],
                "distance_m": float(d),
                "amplitude_ratio": float(r),
                "dissipation": float(1 - r),
                "off_pattern": float(o),
            }
            for n, d, r, o in zip(
                pattern.nodes, pattern.distance, pattern.amplitude_ratio, pattern.off_pattern
            )
        ],
        "profile": pattern.DistanceProfile(0.5 * lattice.pitch),
        "layers": {
            "offset": pattern.layer_offsets.tolist(),
            "mean_ratio": pattern.layer_ratio.tolist(),
            "max_abs_ratio": pattern.layer_ratio_max.tolist(),
        },
    }


# ---------------------------------------------------------------------------------------------
# pom and compare


@dataclasses.dataclass
class PomConfig:
    """A voxel robot's gait for the Planes-of-Motion model (`drakebots voxel pom`)."""

    # The robot: "tripod" (the paper's tripod-gait lattice robot).
    robot: str = "tripod"
    # The gait: "tripod", or "tripod_reverse" (its foot positions run in reverse).
    gait: str = "tripod"
    # Swing-foot clearance above the stance foot, mm (the keyframes' strokes reach twice this).
    lift: float = 4.0
    # Rear stance narrowing while a front foot swings, mm.
    narrow: float = 8.0


@dataclasses.dataclass
class CompareConfig(PomConfig):
    """A gait whose POM prediction is checked against the FEM (`drakebots voxel compare`)."""


@dataclasses.dataclass
class PomResult(WorkflowResult):
    """The POM inverse kinematics of a gait and its predicted motion.

    Attributes (beside WorkflowResult's):
        strokes: (K, 4) the actuator strokes per gait keyframe, m (drakebots.voxel.tripod's
            ACTUATORS order).
        targets: the gait's foot-path targets, name -> (K,), m.
        predicted: the POM's feet and markers, name -> (K, 3), m.
        keyframes: (K,) the keyframes' names in the gait's order.
        lattice: the robot's lattice.
        pom_frames: (K, N, 3) the POM's displacement of every lattice node, m.
        pom: the robot's POM model (drakebots.voxel.tripod.TripodPom: Forward, inverse).
    """

    strokes: np.ndarray = None
    targets: dict = None
    predicted: dict = None
    keyframes: list = None
    lattice: object = None
    pom_frames: np.ndarray = None
    pom: object = None

    def _SummaryInputs(self) -> dict:
        c = self.config
        return {"robot": c.robot, "gait": c.gait, "lift_mm": c.lift, "narrow_mm": c.narrow}

    def _SummaryFields(self) -> dict:
        return {"figures": self.figures}

    def _Write(self, results) -> None:
        from drakebots.voxel.plots import PlotPomVsFem

        results.SaveFigure(
            "pom_gait.png",
            PlotPomVsFem(
                list(self.predicted),
                self.predicted,
                self.predicted,
                title="POM prediction of the gait (feet and markers)",
            ),
        )
        self._WriteCommon(results)

    def _WriteCommon(self, results, extra=None) -> None:
        from drakebots.voxel.plots import LatticeReplayHtml

        results.SaveFigure("strokes.png", _StrokesFigure(self.strokes))
        results.SaveNpz(
            "pom.npz",
            {"strokes": self.strokes, **{f"pom_{n}": p for n, p in self.predicted.items()}},
        )
        html = LatticeReplayHtml(
            self.lattice.nodes, self.lattice.struts, self.pom_frames, scale=5.0, extra=extra
        )
        results.WriteText("replay.html", html)


@dataclasses.dataclass
class CompareResult(PomResult):
    """A gait's POM prediction against the frame FEM of the whole robot.

    Attributes (beside PomResult's):
        fem_feet: the FEM's feet and markers, name -> (K, 3), m.
        core_errors: (K, C) |POM - FEM| at each core node per keyframe, m.
        fem_frames: (K, N, 3) the FEM's displacement of every lattice node, m.
    """

    fem_feet: dict = None
    core_errors: np.ndarray = None
    fem_frames: np.ndarray = None

    def _Write(self, results) -> None:
        from drakebots.voxel.plots import PlotPomVsFem

        results.SaveFigure(
            "pom_vs_fem.png",
            PlotPomVsFem(
                list(self.predicted),
                self.predicted,
                self.fem_feet,
                title="POM (lines) against frame FEM (circles)",
            ),
        )
        results.SaveFigure("node_error.png", _NodeErrorFigure(self.core_errors))
        self._WriteCommon(results, extra=(self.fem_frames, self.lattice.nodes))


def _StrokesFigure(strokes):
    import matplotlib.pyplot as plt

    from drakebots.voxel.tripod import ACTUATORS

    figure, ax = plt.subplots(figsize=(7, 3.5))
    for k, name in enumerate(ACTUATORS):
        ax.step(
            np.arange(len(strokes) + 1),
            1e3 * np.r_[strokes[:, k], strokes[0, k]],
            where="post",
            label=name,
        )
    ax.set_xlabel("gait keyframe")
    ax.set_ylabel("stroke (mm)")
    ax.set_title("actuator sequence from POM inverse kinematics")
    ax.legend(ncol=4)
    figure.tight_layout()
    return figure


def _NodeErrorFigure(core_errors):
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(1e3 * core_errors.max(axis=1), "o-", label="max over the 36 core nodes")
    ax.plot(1e3 * np.sqrt((core_errors**2).mean(axis=1)), "s-", label="rms")
    ax.set_xlabel("gait keyframe")
    ax.set_ylabel("|POM - FEM| (mm)")
    ax.set_title("POM against FEM, node by node (core)")
    ax.legend()
    figure.tight_layout()
    return figure


def CheckPomConfig(config: PomConfig) -> None:
    """Raises InputError (naming the flag) for a robot, gait or setting the model lacks."""
    from drakebots.config import CheckTypes

    CheckTypes(config)
    if config.robot not in ROBOTS:
        raise InputError(f"--robot {config.robot}: known robots: {', '.join(ROBOTS)}")
    if config.gait not in GAITS:
        raise InputError(f"--gait {config.gait}: known gaits: {', '.join(GAITS)}")
    if not 0 < 2 * config.lift <= STROKE_TRAVEL_MM:
        raise InputError(
            f"--lift {config.lift}: must be in (0, {STROKE_TRAVEL_MM / 2:g}] mm (the strokes "
            f"reach twice the clearance; the actuators travel +-{STROKE_TRAVEL_MM:g} mm)"
        )
    if not 0 <= config.narrow <= STROKE_TRAVEL_MM:
        raise InputError(
            f"--narrow {config.narrow}: must be in [0, {STROKE_TRAVEL_MM:g}] mm (the rear "
            f"actuator's stroke; it travels +-{STROKE_TRAVEL_MM:g} mm)"
        )


def Pom(config: PomConfig, *, meshcat=None, progress=None) -> PomResult:
    """The actuator strokes that the POM inverse kinematics gives for the gait's foot paths.

    Args:
        config: the robot, the gait and its foot paths.
        meshcat: unused; accepted as every workflow does.
        progress: a drakebots.workflow progress callback.

    Returns:
        the result; `success` is False when the gait's targets are not reachable (the IK
        residual in `reason`). Raises InputError for a bad config before any work.
    """
    CheckPomConfig(config)
    return PomResult(**_PomFields(config, Reporter(progress), "voxel pom"))


def Compare(config: CompareConfig, *, meshcat=None, progress=None) -> CompareResult:
    """Pom, then its prediction against the frame FEM of the whole robot at every keyframe,
    node by node, and the Drake model's static response against the FEM.

    Args:
        config: the robot, the gait and its foot paths (a PomConfig works too).
        meshcat: unused; accepted as every workflow does.
        progress: a drakebots.workflow progress callback (a step per keyframe).
    """
    from drakebots.voxel.tripod import CompareWithFem, TripodPom

    CheckPomConfig(config)
    report = Reporter(progress)
    fields = _PomFields(config, report, "voxel compare")
    lattice, strokes, predicted = fields["lattice"], fields["strokes"], fields["predicted"]
    names = list(predicted)
    pom = fields["pom"]
    core_index = np.array([lattice.NodeAt(c) for c in pom.core.node_coords])
    frame = lattice.MakeFrame()
    fem_feet = {n: np.zeros((len(strokes), 3)) for n in names}
    core_errors, feet_errors = [], {n: [] for n in names}
    fem_frames = np.zeros((len(strokes), lattice.num_nodes, 3))
    for t, s in enumerate(strokes):
        c = CompareWithFem(s, frame=frame)
        core_errors.append(c.error)
        for n in names:
            fem_feet[n][t] = c.feet_fem[n]
            feet_errors[n].append(float(np.linalg.norm(c.feet_pom[n] - c.feet_fem[n])))
        fem_frames[t, core_index] = c.fem
        report.Step("keyframes", t + 1, len(strokes))
    core_errors = np.array(core_errors)
    peak = float(np.max(np.linalg.norm(fields["pom_frames"], axis=2)))
    translation = TripodPom(front_model="translation", actuation_matrices=pom.actuation_matrices)
    paper_front = translation.ForwardFeetAndMarkers(strokes)
    fields["figures"] |= {
        "core_nodes_compared": int(core_errors.shape[1]),
        "core_max_error_m": float(core_errors.max()),
        "core_rms_error_m": float(np.sqrt(np.mean(core_errors**2))),
        "core_max_error_relative": float(core_errors.max() / max(peak, 1e-300)),
        "max_node_displacement_m": peak,
        "feet_and_markers_max_error_m": {n: max(e) for n, e in feet_errors.items()},
        "front_feet_max_error_paper_translation_model_m": {
            n: float(np.max(np.linalg.norm(paper_front[n] - fem_feet[n], axis=1)))
            for n in ("front_right", "front_left")
        },
        "drake_model_static_check": DrakeStaticCheck(lattice, strokes),
    }
    return CompareResult(
        **fields, fem_feet=fem_feet, core_errors=core_errors, fem_frames=fem_frames
    )


def _PomFields(config: PomConfig, report: Reporter, verb: str) -> dict:
    """The POM inverse kinematics of the config's gait: PomResult's fields."""
    from drakebots.voxel.pom import DeriveActuationMatrices
    from drakebots.voxel.tripod import (
        ACTUATORS,
        FEET,
        GAIT_KEYFRAMES,
        MARKERS,
        GaitStrokes,
        ReverseGait,
        TripodGaitTargets,
        TripodLattice,
        TripodPom,
    )

    A, derivation = DeriveActuationMatrices()
    pom = TripodPom(actuation_matrices=A)
    targets = TripodGaitTargets(clearance=config.lift * 1e-3, narrow=config.narrow * 1e-3)
    keyframes = list(GAIT_KEYFRAMES)
    if config.gait == "tripod_reverse":
        targets = ReverseGait(targets)
        keyframes = list(ReverseGait(np.array(keyframes)))
    report.Say(f"POM inverse kinematics of the {config.gait} gait ({len(keyframes)} keyframes)")
    strokes, residual = GaitStrokes(pom, targets)
    # Forward then inverse: the IK strokes reproduce the targets.
    ik_residual = max(float(np.nanmax(np.abs(r))) for r in residual.values())
    predicted = pom.ForwardFeetAndMarkers(strokes)
    lattice = TripodLattice()
    core_index = np.array([lattice.NodeAt(c) for c in pom.core.node_coords])
    pom_frames = np.zeros((len(strokes), lattice.num_nodes, 3))
    pom_frames[:, core_index] = pom.model.Forward(pom.ControlsFromStrokes(strokes))
    success = ik_residual < 1e-9
    return {
        "verb": verb,
        "config": config,
        "success": success,
        "reason": None
        if success
        else f"the gait targets are not reachable (IK residual {ik_residual:.3g} m)",
        "figures": {
            "actuation_matrices": {"xyz"[d]: A[d] for d in range(3)},
            "actuation_matrix_derivation": derivation,
            "actuators": list(ACTUATORS),
            "strokes_m": strokes,
            "max_stroke_m": float(np.abs(strokes).max()),
            "ik_max_residual_m": ik_residual,
            "foot_path_targets_m": targets,
            "front_model": pom.front_model,
        },
        "strokes": strokes,
        "targets": targets,
        "predicted": {n: predicted[n] for n in list(FEET) + list(MARKERS)},
        "keyframes": keyframes,
        "lattice": lattice,
        "pom_frames": pom_frames,
        "pom": pom,
    }


def DrakeStaticCheck(lattice, strokes) -> dict:
    """The Drake model's static response (drakebots.voxel.statics) against the frame FEM
    for the gait keyframe with the largest strokes (prismatic mounts, rigid motion removed)."""
    from drakebots.frame.model import RemoveRigidBodyMotion
    from drakebots.voxel.statics import TripodStatics
    from drakebots.voxel.tripod import ACTUATORS, TripodActuators
    from drakebots.voxel.tripod_model import NodeName

    keyframe = int(np.argmax(np.abs(strokes).sum(axis=1)))
    values = dict(zip(ACTUATORS, strokes[keyframe]))
    clamp = lattice.NodeAt((3, 1, 0))
    solution = lattice.MakeFrame().Solve(
        actuators=TripodActuators(lattice, values, mount="prismatic"), clamp_node=clamp
    )
    drake = TripodStatics().Solve(values, clamp=NodeName(lattice.node_coords[clamp]))
    u_fem, _, _ = RemoveRigidBodyMotion(lattice.nodes, solution.translations)
    u_drake = np.array([drake[NodeName(c)] for c in lattice.node_coords])
    u_drake, _, _ = RemoveRigidBodyMotion(lattice.nodes, u_drake)
    peak = float(np.abs(u_fem).max())
    return {
        "keyframe": keyframe,
        "strokes_m": values,
        "max_displacement_m": peak,
        "max_difference_m": float(np.abs(u_drake - u_fem).max()),
        "max_relative_difference": float(np.abs(u_drake - u_fem).max() / peak),
    }
