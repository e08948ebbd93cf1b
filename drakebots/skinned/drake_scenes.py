"""Validation scenes shared with Drake's own deformable contact (issue 69, step 1).

The coupled skin simulator (drakebots.skinned.skin_coupling) and Drake's DeformableModel with
the SAP contact solver simulate the same scene: the same tetrahedral mesh (written as a VTK file
that Drake reads as the deformable body's VolumeMesh, not re-meshed), the same material (Drake's
kNeoHookean is drakebots' "stable_neohookean", the default here; or the corotated pair),
density, Rayleigh damping, time step, gravity and friction. A rigid plate is glued to the top
face of a skin block (drakebots: the Eq. 1 glue constraint; Drake:
DeformableModel.AddFixedConstraint on the vertices inside a thin box around the top face), and
the block's bottom face meets the ground, a rigid box whose top face is z = 0 (Drake: its
deformable-rigid contact, compliant, at the clipped skin triangles' centroids; drakebots: the
coupled simulator's contact as configured, `DrakeContact()` for Drake's own regularisation and
time integration).
The block starts `initial_depth` (1 um) into the ground, so both have contact from the first step.

Three scenes (`Scene.kind`), each run to rest:

- "drop": the plate is a free body of mass `plate_mass`; the block starts on the ground and
  settles. Measured: the rest sag, the plate's drop from its start, m.
- "indent": the plate moves on a vertical prismatic joint held by a stiff PD servo whose
  set point goes down to `indentation` below the start over `load_time` (the prescribed
  indentation). Measured: the ground contact force, N.
- "force": the same joint with no servo and a feed-forward force growing to `push` downward
  over `load_time` (the prescribed force). Measured: the indentation, m.

The rigid box pressed into the skin is here the ground: the block is pressed between the glued
plate and the floor (a punch as wide as the slab). `FlatPunchEstimate` gives the analytic
bounds for it: the force E A d / H of a slab free to expand sideways (frictionless floor) and
the constrained modulus's E (1 - nu) / ((1 + nu)(1 - 2 nu)) A d / H (no lateral strain at all);
a slab bonded to the plate with friction mu on the floor lies between.
"""

import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np

from drakebots.fem.mesh import BoxMesh, TetMesh, WriteVtk

GRAVITY = 9.81
# drakebots' material models and Drake's: the same energy (Drake's kNeoHookean is the stable
# neo-Hookean of drakebots.fem.materials, not the classic "neohookean", which Drake does not
# have), or the same linearisation at rest (Stomakhin's fixed corotated against Drake's linear
# corotated, which differ away from it).
_DRAKE_MODELS = {"stable_neohookean": "kNeoHookean", "corotated": "kLinearCorotated"}
# The ground: a rigid box whose top face is z = 0. Its pressure field in Drake's deformable
# contact is the compliant-hydroelastic one of the box (pressure = modulus x depth / half its
# smallest side), so its pressure gradient is GROUND_MODULUS / (GROUND_THICKNESS / 2) = 2e8 Pa/m.
GROUND_THICKNESS = 0.1
GROUND_MODULUS = 1e7  # Pa, SceneGraph's default hydroelastic modulus, set explicitly
# Drake's stiffness per unit area of every deformable body in contact (DeformableDriver: C).
DRAKE_SKIN_STIFFNESS = 1e8


def DrakeContact() -> dict:
    """CouplingConfig fields that give drakebots' convex contact Drake 1.51's deformable-rigid
    regularisation on the scenes' ground: points at the clipped skin triangles' centroids,
    the ground's pressure gradient in series with Drake's C for the skin, Drake's dissipation
    time constant and its Delassus estimate (issue 69, Findings 19 and 23), and its deformable
    bodies' time integration, the skin's positions by the trapezoid (`skin_integrator`
    "newmark"; Findings 33: at friction 0.8 the dropped block's rest sag depends on how its
    edges slip while it lands, so on the integration)."""
    return dict(
        contact="convex",
        skin_integrator="newmark",
        contact_points="triangles",
        contact_stiffness=GROUND_MODULUS / (GROUND_THICKNESS / 2),
        contact_skin_stiffness=DRAKE_SKIN_STIFFNESS,
        contact_dissipation_time=0.1,
        contact_delassus="diagonal",
    )


@dataclasses.dataclass
class Scene:
    """One validation scene (SI units)."""

    # "drop", "indent" or "force" (module docstring).
    kind: str = "drop"
    # Block size, m, and cubes per side (6 tets each: drakebots.fem.mesh.BoxMesh).
    size: tuple = (0.04, 0.04, 0.02)
    divisions: tuple = (4, 4, 2)
    # Skin material: Young's modulus, Pa; Poisson's ratio; density, kg/m^3.
    youngs_modulus: float = 1e5
    poissons_ratio: float = 0.45
    mass_density: float = 1100.0
    # "stable_neohookean" (Drake's kNeoHookean) or "corotated" (drakebots.fem.materials;
    # Drake: _DRAKE_MODELS). drakebots' classic "neohookean" runs in drakebots only.
    material_model: str = "stable_neohookean"
    # Rayleigh damping: mass part, 1/s; stiffness part, s.
    mass_damping: float = 2.0
    stiffness_damping: float = 0.002
    # Ground friction coefficient.
    friction: float = 0.8
    # Time step, s, and steps simulated (to rest).
    time_step: float = 0.005
    steps: int = 120
    # The glued plate's mass, kg.
    plate_mass: float = 0.3
    # "indent": the prescribed indentation, m, and the servo's gains, N/m and N*s/m.
    indentation: float = 5e-4
    servo_stiffness: float = 1e7
    servo_damping: float = 1e4
    # "force": the downward force on the plate, N (besides its weight).
    push: float = 3.0
    # "indent" and "force": the indentation or the push grows linearly from 0 over this time, s,
    # then holds (a press, not a blow: at 0 the servo drives the plate 0.5 mm down within 1 ms,
    # and at friction 0.8 where the block's edges end up after the blow depends on each
    # simulator's time integration; Findings 23). 0: applied at once.
    load_time: float = 0.2
    # The block's bottom starts this far below the ground, m (the whole scene lowered by it;
    # the sag is measured from the start). Drake's deformable contact meets a block that only
    # touches the ground in polygons of zero area, so it has no contact force in the first step
    # and the block falls g h^2 (0.245 mm at 5 ms) into the ground before it is stopped; that
    # fall shifts Drake's rest sag at friction 0.8 by 4 % (Findings 19). 0: touching.
    initial_depth: float = 1e-6


@dataclasses.dataclass
class SceneResult:
    """A scene's state at the end of its run."""

    simulator: str  # "drakebots" or "drake"
    sag: float  # the plate's drop below its undeformed height, m (the indentation)
    contact_force: float  # total vertical ground force on the skin, N
    # The bottom vertices' mean depth below the ground, m (Drake's compliant contact: > 0).
    penetration: float
    max_speed: float  # largest vertex or plate speed at the end, m/s (at rest: small)
    wall_per_step_s: float  # wall time per step, s


def SceneMesh(scene: Scene) -> TetMesh:
    """The block's tet mesh: bottom face at z = -initial_depth, centred on the z axis."""
    sx, sy, _ = scene.size
    return BoxMesh(scene.size, scene.divisions, origin=(-sx / 2, -sy / 2, -scene.initial_depth))


def _Top(scene: Scene) -> float:
    """The block's top face (the plate's origin) at the start, m."""
    return scene.size[2] - scene.initial_depth


def _BottomDepth(scene: Scene, rest: np.ndarray, current: np.ndarray) -> float:
    """The bottom face's mean depth below the ground, m (`rest`: the mesh's vertices)."""
    bottom = rest[:, 2] < -scene.initial_depth + 1e-9
    return float(-np.mean(current[bottom, 2]))


def FlatPunchEstimate(scene: Scene, indentation: float) -> tuple[float, float]:
    """(low, high) analytic force bounds, N, on the block compressed by `indentation` between
    the plate and the floor (module docstring): uniaxial stress and uniaxial strain."""
    sx, sy, sz = scene.size
    E, nu = scene.youngs_modulus, scene.poissons_ratio
    k = sx * sy / sz
    return E * k * indentation, E * (1 - nu) / ((1 + nu) * (1 - 2 * nu)) * k * indentation


def _AddPlate(plant, scene: Scene, instance=None):
    """The plate body (a thin box on top of the block) and, except for "drop", its vertical
    prismatic joint and actuator."""
    from pydrake.multibody.tree import (
        PdControllerGains,
        PrismaticJoint,
        SpatialInertia,
        UnitInertia,
    )

    sx, sy, sz = scene.size
    inertia = SpatialInertia(scene.plate_mass, np.zeros(3), UnitInertia.SolidBox(sx, sy, 0.2 * sz))
    args = ("plate", inertia) if instance is None else ("plate", instance, inertia)
    plate = plant.AddRigidBody(*args)
    if scene.kind != "drop":
        joint = plant.AddJoint(
            PrismaticJoint("z", plant.world_frame(), plate.body_frame(), [0.0, 0.0, 1.0])
        )
        actuator = plant.AddJointActuator("z", joint)
        if scene.kind == "indent":
            actuator.set_controller_gains(
                PdControllerGains(p=scene.servo_stiffness, d=scene.servo_damping)
            )
        joint.set_default_translation(_Top(scene))
    return plate


def _Load(scene: Scene, t: float) -> float:
    """The fraction of the indentation or push applied at time t, s (Scene.load_time)."""
    return 1.0 if scene.load_time <= 0.0 else min(t / scene.load_time, 1.0)


def _Feedforward(scene: Scene, t: float) -> np.ndarray:
    """The plate joint's feed-forward force at time t, N."""
    return np.array([-scene.push * _Load(scene, t) if scene.kind == "force" else 0.0])


def _Desired(scene: Scene, t: float) -> np.ndarray:
    """The servo's desired (position, velocity) at time t ("indent")."""
    return np.array([_Top(scene) - scene.indentation * _Load(scene, t), 0.0])


def _LoadSource(builder, scene: Scene, value):
    """A Drake TrajectorySource of value(scene, t), exact for the linear ramp and the hold."""
    from pydrake.systems.primitives import TrajectorySource
    from pydrake.trajectories import PiecewisePolynomial

    end = scene.steps * scene.time_step
    times = sorted({0.0, float(np.clip(scene.load_time, 0.0, end)), end})
    values = np.stack([value(scene, t) for t in times], axis=1)
    return builder.AddSystem(TrajectorySource(PiecewisePolynomial.FirstOrderHold(times, values)))


def Stepper(scene: Scene, **config):
    """(CoupledSkinSkeleton, plate body): the scene in drakebots' coupled simulator (`config`:
    CouplingConfig fields, e.g. contact="convex")."""
    from pydrake.math import RigidTransform
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.fem.mesh import BoundaryFaces
    from drakebots.skinned.skin import Skin
    from drakebots.skinned.skin_coupling import CoupledSkinSkeleton, CouplingConfig

    mesh = SceneMesh(scene)
    V = mesh.vertices
    sz = scene.size[2]
    top = np.flatnonzero(V[:, 2] > _Top(scene) - 1e-9)
    boundary = np.unique(BoundaryFaces(mesh.tets))
    outer = np.zeros(mesh.num_vertices, dtype=bool)
    outer[boundary] = True
    outer[top] = False
    skin = Skin(
        robot="validation_block",
        mesh=mesh,
        glue_vertices=top,
        glue_links=["plate"] * len(top),
        glue_points=V[top] - [0.0, 0.0, _Top(scene)],
        skin_links=["plate"],
        weights=np.ones((mesh.num_vertices, 1)),
        thickness=np.full(mesh.num_vertices, sz),
        outer=outer,
        fold=np.zeros(mesh.num_tets, dtype=bool),
        mass_density=scene.mass_density,
        youngs_modulus=scene.youngs_modulus,
        poissons_ratio=scene.poissons_ratio,
        info={},
    )
    plant = MultibodyPlant(0.0)
    instance = plant.AddModelInstance("validation")
    plate = _AddPlate(plant, scene, instance)
    plant.Finalize()
    if scene.kind == "drop":
        plant.SetDefaultFloatingBaseBodyPose(plate, RigidTransform([0.0, 0.0, _Top(scene)]))
    cfg = CouplingConfig(
        time_step=scene.time_step,
        friction=scene.friction,
        mass_damping=scene.mass_damping,
        stiffness_damping=scene.stiffness_damping,
        material_model=scene.material_model,
        **config,
    )
    return CoupledSkinSkeleton(plant, instance, skin, cfg, skeleton=None), plate


def RunDrakebots(scene: Scene, **config) -> SceneResult:
    """The scene in drakebots' coupled simulator (`config`: CouplingConfig fields)."""
    stepper, plate = Stepper(scene, **config)
    plant, mesh = stepper.plant, stepper.skin.mesh
    state = stepper.DefaultState()
    start = time.perf_counter()
    for k in range(scene.steps):
        t = k * scene.time_step
        desired = _Desired(scene, t) if scene.kind == "indent" else None
        tau = _Feedforward(scene, t) if stepper.nu > 0 else None
        state, info = stepper.Step(state, tau_ff=tau, desired=desired, time_s=t)
    wall = (time.perf_counter() - start) / scene.steps
    plant_context = plant.CreateDefaultContext()
    plant.SetPositions(plant_context, state.q)
    z = plate.EvalPoseInWorld(plant_context).translation()[2]
    speed = max(np.abs(state.w).max(), np.abs(state.v).max())
    depth = _BottomDepth(scene, mesh.vertices, state.x.reshape(-1, 3))
    force = float(info.contact_forces[:, 2].sum())
    return SceneResult("drakebots", _Top(scene) - z, force, depth, speed, wall)


def RunDrake(scene: Scene, *, directory: str | Path | None = None) -> SceneResult:
    """The scene in Drake: MultibodyPlant (discrete, SAP) with a DeformableModel body on the
    scene's mesh, read from a VTK file written to `directory` (a temporary folder by default)."""
    from pydrake.geometry import (
        AddContactMaterial,
        Box,
        GeometryInstance,
        Mesh,
        ProximityProperties,
    )
    from pydrake.math import RigidTransform
    from pydrake.multibody.fem import DeformableBodyConfig, MaterialModel
    from pydrake.multibody.plant import (
        AddMultibodyPlant,
        CoulombFriction,
        MultibodyPlantConfig,
    )
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    if scene.material_model not in _DRAKE_MODELS:
        raise ValueError(
            f"Drake has no material '{scene.material_model}' (its models here: "
            f"{', '.join(_DRAKE_MODELS)}; its kNeoHookean is drakebots' 'stable_neohookean')"
        )
    mesh = SceneMesh(scene)
    sx, sy, sz = scene.size
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(directory or scratch) / "validation_block.vtk"
        WriteVtk(path, mesh)
        builder = DiagramBuilder()
        plant, _ = AddMultibodyPlant(
            MultibodyPlantConfig(time_step=scene.time_step, discrete_contact_approximation="sap"),
            builder,
        )
        mu = scene.friction
        ground = ProximityProperties()
        AddContactMaterial(friction=CoulombFriction(mu, mu), properties=ground)
        ground.AddProperty("hydroelastic", "resolution_hint", 0.05)
        ground.AddProperty("hydroelastic", "hydroelastic_modulus", GROUND_MODULUS)
        t = GROUND_THICKNESS
        plant.RegisterCollisionGeometry(
            plant.world_body(), RigidTransform([0, 0, -t / 2]), Box(1, 1, t), "ground", ground
        )
        plate = _AddPlate(plant, scene)
        model = plant.mutable_deformable_model()
        geometry = GeometryInstance(RigidTransform(), Mesh(str(path)), "block")
        skin = ProximityProperties()
        AddContactMaterial(friction=CoulombFriction(mu, mu), properties=skin)
        geometry.set_proximity_properties(skin)
        config = DeformableBodyConfig()
        config.set_youngs_modulus(scene.youngs_modulus)
        config.set_poissons_ratio(scene.poissons_ratio)
        config.set_mass_density(scene.mass_density)
        config.set_material_model(getattr(MaterialModel, _DRAKE_MODELS[scene.material_model]))
        config.set_mass_damping_coefficient(scene.mass_damping)
        config.set_stiffness_damping_coefficient(scene.stiffness_damping)
        body_id = model.RegisterDeformableBody(geometry, config, 1.0)
        model.AddFixedConstraint(
            body_id,
            plate,
            RigidTransform([0.0, 0.0, -_Top(scene)]),
            Box(sx + 1e-3, sy + 1e-3, 1e-4),
            RigidTransform(),
        )
        plant.Finalize()
        if scene.kind == "drop":
            plant.SetDefaultFloatingBaseBodyPose(plate, RigidTransform([0.0, 0.0, _Top(scene)]))
        else:
            push = _LoadSource(builder, scene, _Feedforward)
            builder.Connect(push.get_output_port(), plant.get_actuation_input_port())
            if scene.kind == "indent":
                servo = _LoadSource(builder, scene, _Desired)
                builder.Connect(
                    servo.get_output_port(),
                    plant.get_desired_state_input_port(
                        plant.GetModelInstanceByName("DefaultModelInstance")
                    ),
                )
        diagram = builder.Build()
        simulator = Simulator(diagram)
        context = simulator.get_mutable_context()
        plant_context = plant.GetMyMutableContextFromRoot(context)
        start = time.perf_counter()
        simulator.AdvanceTo(scene.steps * scene.time_step)
        wall = (time.perf_counter() - start) / scene.steps
        z = plate.EvalPoseInWorld(plant_context).translation()[2]
        results = plant.get_contact_results_output_port().Eval(plant_context)
        force = sum(
            results.deformable_contact_info(i).F_Ac_W().translational()[2]
            for i in range(results.num_deformable_contacts())
        )
        w = model.GetVelocities(plant_context, body_id) if hasattr(model, "GetVelocities") else 0
        speed = max(np.abs(w).max(), np.abs(plant.GetVelocities(plant_context)).max())

        X = np.asarray(model.GetPositions(plant_context, body_id))
        X = X.reshape(-1, 3) if X.ndim == 1 else X.T
        depth = _BottomDepth(scene, mesh.vertices, X)
        return SceneResult("drake", _Top(scene) - z, abs(float(force)), depth, float(speed), wall)
