"""The skin workflow: `MakeSkin(MakeSkinConfig)`, the FEM skin of a skinned quad-robot.

The skin is a closed body surface shaped like the robot's animal around its skeleton, hollowed to
4 mm (8 mm at the feet, paper section 6.1), optionally with gear-tooth folding regions at chosen
joints (Fig. 8), tetrahedralised with Gmsh, with glue vertices where the bracing units hold it
(section 6.2, Fig. 9), and what it costs each motor: its small-strain stiffness per joint. The
builder under it is `drakebots.skinned.skin.MakeSkin(params, SkinOptions)`; `drakebots skin` is
this call plus a results folder:

    from drakebots.skinned import MakeSkin, MakeSkinConfig
    result = MakeSkin(MakeSkinConfig(robot="beetle", voxel=0.016))
    result.skin.mesh.num_vertices, result.figures["mass_kg"]
    result.Save("runs/beetle_skin")     # skin.vtk, glue, weights, skin.png, summary.json
"""

from __future__ import annotations

import dataclasses

import numpy as np

from drakebots.errors import InputError, RunFailure
from drakebots.workflow import Reporter, WorkflowResult

# Table 1 of the paper: skin and glue vertices per robot.
PAPER_SKIN_VERTICES = {"beetle": 14152, "monster": 16624, "lizard": 18261, "cow": 12494}
PAPER_GLUE_VERTICES = {"beetle": 140, "monster": 301, "lizard": 176, "cow": 217}


@dataclasses.dataclass
class MakeSkinConfig:
    """The skin to make (SI units; each field is a `drakebots skin` flag)."""

    # A skinned quad-robot: beetle, monster, lizard, cow, or a robot file (kind
    # skinned_quadruped, drakebots.robots.robot_file).
    robot: str = "beetle"
    # Joint kinds (ankles, knees, hips) or joint names that get a gear-tooth folding region.
    folding_regions: tuple[str, ...] = ()
    # The skin in separate pieces as the paper fabricates it (section 6.2): one per limb and one
    # over the torso, head and tail.
    pieces: bool = False
    # With pieces: the gap, m, the torso's piece keeps from each limb piece through the hips'
    # range (None: SkinOptions', 0.005).
    piece_clearance: float | None = None
    # Skin thickness, m, and at the feet.
    thickness: float = 0.004
    foot_thickness: float = 0.008
    # The folding teeth: depth, m (paper: 8 mm), count, and pitch along the limb, m.
    fold_depth: float = 0.008
    fold_teeth: int = 3
    fold_pitch: float = 0.014
    # Surface resolution, m (None: the robot's, about the paper's vertex counts).
    voxel: float | None = None
    # Your own closed outer body surface (.obj or .stl, metres, the skeleton's home-pose frame)
    # instead of the built-in animal shape.
    surface: str | None = None
    # Poisson's ratio (paper: 0.46) and Young's modulus, Pa (paper: 0.09 GPa).
    poissons_ratio: float = 0.46
    youngs_modulus: float = 0.09e9
    # Softer skin regions (belly, tail); None: the robot's (the monster: belly and tail); ():
    # none.
    soft_regions: tuple[str, ...] | None = None
    # Factor on Young's modulus in the soft regions (paper: reduced by 85 %, 0.15).
    soft_scale: float = 0.15


def _Flag(field: str) -> str:
    return f"--{field.replace('_', '-')}"


def ValidateFold(config, voxel: float | None = None) -> None:
    """The fold options' checks (`config` has fold_depth, fold_teeth, fold_pitch); with the
    grid's `voxel` (m), also that a tooth spans the FOLD_VOXELS cells it needs to be resolved
    (the builder checks its own grid)."""
    from drakebots.skinned.skin import CheckFoldResolution, SkinInputError

    for name in ("fold_depth", "fold_pitch"):
        if not getattr(config, name) > 0.0:
            raise InputError(f"{_Flag(name)} must be > 0 m, got {getattr(config, name)}")
        if getattr(config, name) > MAX_THICKNESS_M:  # 1e308 ran on (issue 68)
            raise InputError(
                f"{_Flag(name)} must be at most {MAX_THICKNESS_M:g} m (a fold inside the margin "
                f"the skin's grid keeps around the skeleton), got {getattr(config, name):g}"
            )
    if not config.fold_teeth >= 1:
        raise InputError(f"--fold-teeth must be >= 1, got {config.fold_teeth}")
    if voxel is not None:
        try:
            CheckFoldResolution(config.fold_pitch, voxel)
        except SkinInputError as e:
            raise InputError(str(e)) from None


def SkinOptionsOf(config: MakeSkinConfig):
    """The builder's SkinOptions from a MakeSkinConfig, validated (InputError names the flag)."""
    from drakebots.config import CheckTypes
    from drakebots.skinned.skin import SOFT_REGIONS, SkinOptions

    CheckTypes(config)

    for flag, value in (
        ("--thickness", config.thickness),
        ("--foot-thickness", config.foot_thickness),
    ):
        # 1e308 ran to "success" and 1e-300 spent 12 s before failing (issue 68).
        if not MIN_THICKNESS_M <= value <= MAX_THICKNESS_M:
            raise InputError(
                f"{flag} must be in [{MIN_THICKNESS_M:g}, {MAX_THICKNESS_M:g}] m (a shell the "
                f"mesher can resolve, inside the grid's margin around the skeleton), got {value}"
            )
    ValidateFold(config)
    if not -1.0 < config.poissons_ratio < 0.5:
        raise InputError(
            f"--poissons-ratio must be in (-1, 0.5) (0.5 is incompressible), got "
            f"{config.poissons_ratio}"
        )
    CheckYoungsModulus(config.youngs_modulus)  # 1e308 was a traceback, 1e-300 ran
    soft_regions = None
    if config.soft_regions is not None:
        soft_regions = tuple(config.soft_regions)
        soft_regions = () if soft_regions == ("none",) else soft_regions
        unknown = [r for r in soft_regions if r not in SOFT_REGIONS]
        if unknown:
            raise InputError(
                f"--soft-regions: unknown region {unknown[0]!r} (known: "
                f"{', '.join(SOFT_REGIONS)}, or none)"
            )
    if not 0.0 < config.soft_scale <= 1.0:
        raise InputError(f"--soft-scale must be in (0, 1], got {config.soft_scale}")
    options = SkinOptions(
        thickness=config.thickness,
        foot_thickness=config.foot_thickness,
        folding_regions=tuple(config.folding_regions),
        fold_depth=config.fold_depth,
        fold_teeth=config.fold_teeth,
        fold_pitch=config.fold_pitch,
        poissons_ratio=config.poissons_ratio,
        youngs_modulus=config.youngs_modulus,
        soft_regions=soft_regions,
        soft_scale=config.soft_scale,
        pieces=config.pieces,
    )
    _Shape(config, options)
    _CheckGridSize(config, options)
    return options


# The stiffest skin material, Pa: above diamond's (1.2e12 Pa) the FEM's stiffness overflows.
MAX_YOUNGS_MODULUS = 1e13
# The softest, Pa: below a gel's (about 1e2 Pa) nothing is a solid skin; 1e-300 ran (issue 68).
MIN_YOUNGS_MODULUS = 1.0


def CheckYoungsModulus(value: float) -> None:
    """InputError unless --youngs-modulus is within [MIN_YOUNGS_MODULUS, MAX_YOUNGS_MODULUS] Pa
    (`drakebots skin` and `drakebots skin-bend` alike)."""
    if not MIN_YOUNGS_MODULUS <= value <= MAX_YOUNGS_MODULUS:
        raise InputError(
            f"--youngs-modulus must be in [{MIN_YOUNGS_MODULUS:g}, {MAX_YOUNGS_MODULUS:g}] Pa "
            f"(a gel's is about 1e2, diamond's about 1.2e12), got {value:g}"
        )


# The skin's thickness bounds, m: below 0.1 mm no tetrahedron fits across the shell; above 0.25 m
# the shell leaves the 0.25 m margin the skin's grid keeps around the skeleton (MakeShellSurface).
MIN_THICKNESS_M = 1e-4
MAX_THICKNESS_M = 0.25

# The fewest cells the marching-cubes grid may have along an axis: coarser, the skin is a few
# voxels of blob (gmsh refuses it) or no surface at all.
MIN_GRID_CELLS = 10


def _CheckGridSize(config: MakeSkinConfig, options) -> None:
    """InputError (drakebots.limits.CheckGrid) when the marching-cubes grid the skin is made on
    (the skeleton's box, widened to the user's surface, at the voxel) has more cells or needs
    more memory than one run may ask for: a surface in millimetres read as metres grew a run to
    24 GB, and --voxel 1e-4 asked for 2 TiB (issue 68)."""
    from drakebots.limits import CheckGrid
    from drakebots.robots import GetRobot
    from drakebots.skinned.skin import DEFAULT_VOXEL, _Skeleton

    robot = GetRobot(config.robot)
    if robot.family != "skinned_quadruped":
        return  # MakeSkin says so.
    params = robot.params
    voxel = options.voxel or DEFAULT_VOXEL.get(params.name, 0.011)
    skeleton, _ = _Skeleton(params)
    origins = np.array([link.origin for link in skeleton.links.values()], float)
    lo, hi = origins.min(axis=0) - 0.25, origins.max(axis=0) + 0.25  # as MakeShellSurface
    lo[2] = -0.05
    what = f"--voxel {voxel:g} m"
    if options.surface is not None:
        vertices = np.asarray(options.surface[0], float)
        lo = np.minimum(lo, vertices.min(axis=0) - 3 * voxel)
        hi = np.maximum(hi, vertices.max(axis=0) + 3 * voxel)
        extent = vertices.max(axis=0) - vertices.min(axis=0)
        what += (
            f" over --surface {config.surface} (spanning "
            f"{' x '.join(f'{e:.3g}' for e in extent)} m; the surface is read in metres)"
        )
    cells = np.floor((hi - lo) / voxel).astype(float) if np.isfinite(voxel) else np.zeros(3)
    if cells.min() < MIN_GRID_CELLS:  # --voxel 1e308 was a traceback in marching cubes
        raise InputError(
            f"--voxel {voxel:g} m: the skin's grid, {(hi - lo).min():.3g} m across at its "
            f"narrowest, needs at least {MIN_GRID_CELLS} cells along each axis; use at most "
            f"{(hi - lo).min() / MIN_GRID_CELLS:.3g} m"
        )
    CheckGrid(lo, hi, voxel, what)


def _Shape(config: MakeSkinConfig, options) -> None:
    """The user's surface, the pieces' clearance and the grid, checked into `options`."""
    if config.surface:
        if config.pieces:
            raise InputError("--surface is one closed body: it cannot be used with --pieces")
        from drakebots.skinned.skin import LoadSurface, SkinInputError

        try:
            options.surface = LoadSurface(config.surface)
        except SkinInputError as e:
            raise InputError(f"--surface {e}") from None
    if config.piece_clearance is not None:
        if not config.pieces:
            raise InputError("--piece-clearance is the gap between pieces: it needs --pieces")
        if not config.piece_clearance >= 0.0:
            raise InputError(f"--piece-clearance must be >= 0 m, got {config.piece_clearance}")
        options.piece_clearance = config.piece_clearance
    if config.voxel is not None:
        if not config.voxel > 0.0:
            raise InputError(f"--voxel must be > 0 m, got {config.voxel}")
        options.voxel = config.voxel


@dataclasses.dataclass(eq=False)
class MakeSkinResult(WorkflowResult):
    """A skin (`MakeSkin`); `figures` are summary.json's "figures" (the skin's info: vertices,
    tets, glue vertices, size, mass_kg, mass_density, ...; seconds; motor_limit_nm; and
    joint_stiffness: per joint its small-strain stiffness, N*m/rad, and the angle the motor's
    limit turns it, deg, None where the skin leaves it free).

    Attributes (beyond WorkflowResult's):
        skin: the Skin (mesh, glue vertices and links, skinning weights, material, info).
        options: the builder's SkinOptions as run.
        robot: the robot's name.
    """

    skin: object = None
    options: object = None
    robot: str = ""

    def _SummaryInputs(self) -> dict:
        options = self.options
        return {
            "robot": self.robot,
            "surface": self.config.surface,
            **{k: getattr(options, k) for k in vars(options) if k != "surface"},
        }

    def _SummaryFields(self) -> dict:
        return {
            "robot": self.robot,
            "figures": self.figures,
            "paper": {
                "table1_skin_vertices": PAPER_SKIN_VERTICES.get(self.robot),
                "table1_glue_vertices": PAPER_GLUE_VERTICES.get(self.robot),
            },
        }

    def _Write(self, results) -> None:
        """The skin's files (WriteSkin) and skin.png, as `drakebots skin` writes them."""
        from drakebots.skinned.plots import PlotSkin
        from drakebots.skinned.skin import WriteSkin

        WriteSkin(results.directory, self.skin)
        results.SaveFigure("skin.png", PlotSkin(self.skin))


def MakeSkin(config: MakeSkinConfig, *, meshcat=None, progress=None) -> MakeSkinResult:
    """Makes the FEM skin of a skinned quad-robot and measures what it costs each motor.

    Args:
        config: the robot and the skin's shape and material (MakeSkinConfig).
        meshcat: unused (the skin is drawn into skin.png by Save).
        progress: optional callback for ProgressEvents (the meshing's steps).

    Raises:
        InputError: for a bad config (before any work).
        RunFailure: when Gmsh cannot tetrahedralise the shell on any grid tried.
    """
    import time

    from drakebots.robots import GetRobot
    from drakebots.skinned import skin as skin_module
    from drakebots.skinned.bend import JointStiffnesses

    del meshcat
    report = Reporter(progress)
    robot = GetRobot(config.robot)
    if robot.family != "skinned_quadruped":
        raise InputError(f"'{config.robot}' is not a skinned quad-robot (family {robot.family})")
    options = SkinOptionsOf(config)
    params = robot.params
    try:
        skin_module._FoldSites(params, options.folding_regions)  # validate before any work
    except skin_module.SkinInputError as e:
        raise InputError(str(e)) from None
    start = time.perf_counter()
    try:
        skin = skin_module.MakeSkin(params, options, progress=lambda s: report.Say(f"  {s}"))
    except skin_module.SkinInputError as e:
        raise InputError(str(e)) from None
    except skin_module.SkinMeshingError as e:
        raise RunFailure(str(e)) from None
    seconds = time.perf_counter() - start
    # The skin is the robot's (a robot file's name may differ from its skeleton file's), so
    # `drakebots design ROBOT --skin DIR` recognises it.
    skin.robot = robot.name
    # What the skin costs each motor: its small-strain stiffness per joint (no gravity) and the
    # angle the motor's stall torque turns it (a whole-body skin locks the hips; a skin in
    # pieces leaves them free).
    limit = params.motor.effort_limit
    joints = {
        name: {
            "stiffness_nm_per_rad": k,
            "angle_at_motor_limit_deg": float(np.degrees(limit / k)) if k > 1e-9 else None,
        }
        for name, (k, _) in JointStiffnesses(params, skin).items()
    }
    figures = skin.info | {"seconds": seconds, "motor_limit_nm": limit, "joint_stiffness": joints}
    return MakeSkinResult(
        verb="skin",
        config=config,
        success=True,
        reason=None,
        figures=figures,
        skin=skin,
        options=options,
        robot=robot.name,
    )
