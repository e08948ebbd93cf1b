"""Validation scenes shared with Drake's own deformable contact (issue 69, step 1).

The coupled skin simulator (drakebots.skinned.skin_coupling) and Drake's DeformableModel with
the SAP contact solver simulate the same scene: the same tetrahedral mesh (written as a VTK file
that Drake reads as the deformable body's VolumeMesh, not re-meshed), the same neo-Hookean
material, density, Rayleigh damping, time step, gravity and friction. A rigid plate is glued to
the top face of a skin block (drakebots: the Eq. 1 glue constraint; Drake:
DeformableModel.AddFixedConstraint on the vertices inside a thin box around the top face), and
the block's bottom face meets the ground (drakebots: its active-set ground contact at z = 0;
Drake: a rigid box whose top face is z = 0, compliant point contact in SAP's near-rigid regime).

Three scenes (`Scene.kind`), each run to rest:

- "drop": the plate is a free body of mass `plate_mass`; the block starts touching the ground
  and settles. Measured: the rest sag, the plate's drop from its undeformed height, m.
- "indent": the plate moves on a vertical prismatic joint held by a stiff PD servo at
  `indentation` below its undeformed height (the prescribed indentation). Measured: the ground
  contact force, N.
- "force": the same joint with no servo and a feed-forward force `push` downward (the
  prescribed force). Measured: the indentation, m.

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
# drakebots' material models and Drake's of the same linearisation at rest (the corotated ones
# differ away from it: Stomakhin's fixed corotated and Drake's linear corotated).
_DRAKE_MODELS = {"neohookean": "kNeoHookean", "corotated": "kLinearCorotated"}


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
    # "neohookean" or "corotated" (drakebots.fem.materials; Drake: _DRAKE_MODELS).
    material_model: str = "neohookean"
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
    """The block's tet mesh: bottom face at z = 0, centred on the z axis."""
    sx, sy, _ = scene.size
    return BoxMesh(scene.size, scene.divisions, origin=(-sx / 2, -sy / 2, 0.0))


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
        joint.set_default_translation(sz)
    return plate


def _Feedforward(scene: Scene) -> np.ndarray:
    return np.array([-scene.push if scene.kind == "force" else 0.0])


def _Desired(scene: Scene) -> np.ndarray:
    return np.array([scene.size[2] - scene.indentation, 0.0])


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
    top = np.flatnonzero(V[:, 2] > sz - 1e-9)
    boundary = np.unique(BoundaryFaces(mesh.tets))
    outer = np.zeros(mesh.num_vertices, dtype=bool)
    outer[boundary] = True
    outer[top] = False
    skin = Skin(
        robot="validation_block",
        mesh=mesh,
        glue_vertices=top,
        glue_links=["plate"] * len(top),
        glue_points=V[top] - [0.0, 0.0, sz],
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
        plant.SetDefaultFloatingBaseBodyPose(plate, RigidTransform([0.0, 0.0, sz]))
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
    plant, mesh, sz = stepper.plant, stepper.skin.mesh, scene.size[2]
    state = stepper.DefaultState()
    desired = _Desired(scene) if scene.kind == "indent" else None
    tau = _Feedforward(scene) if stepper.nu > 0 else None
    start = time.perf_counter()
    for k in range(scene.steps):
        state, info = stepper.Step(state, tau_ff=tau, desired=desired, time_s=k * scene.time_step)
    wall = (time.perf_counter() - start) / scene.steps
    plant_context = plant.CreateDefaultContext()
    plant.SetPositions(plant_context, state.q)
    z = plate.EvalPoseInWorld(plant_context).translation()[2]
    speed = max(np.abs(state.w).max(), np.abs(state.v).max())
    bottom = mesh.vertices[:, 2] < 1e-9
    depth = float(-np.mean(state.x.reshape(-1, 3)[bottom, 2]))
    force = float(info.contact_forces[:, 2].sum())
    return SceneResult("drakebots", sz - z, force, depth, speed, wall)


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
        plant.RegisterCollisionGeometry(
            plant.world_body(), RigidTransform([0, 0, -0.05]), Box(1, 1, 0.1), "ground", ground
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
            RigidTransform([0.0, 0.0, -sz]),
            Box(sx + 1e-3, sy + 1e-3, 1e-4),
            RigidTransform(),
        )
        plant.Finalize()
        if scene.kind == "drop":
            plant.SetDefaultFloatingBaseBodyPose(plate, RigidTransform([0.0, 0.0, sz]))
        diagram = builder.Build()
        simulator = Simulator(diagram)
        context = simulator.get_mutable_context()
        plant_context = plant.GetMyMutableContextFromRoot(context)
        if scene.kind != "drop":
            plant.get_actuation_input_port().FixValue(plant_context, _Feedforward(scene))
            if scene.kind == "indent":
                plant.get_desired_state_input_port(
                    plant.GetModelInstanceByName("DefaultModelInstance")
                ).FixValue(plant_context, _Desired(scene))
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
        depth = float(-np.mean(X[mesh.vertices[:, 2] < 1e-9, 2]))
        return SceneResult("drake", sz - z, abs(float(force)), depth, float(speed), wall)
