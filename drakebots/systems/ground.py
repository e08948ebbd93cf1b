"""Flat ground for simulations: a large box whose top face is z = 0.

A box rather than a HalfSpace, because Drake's deformable contact (the skin reference of the soft
skin issue) does not support rigid half spaces, and the box behaves identically for point contact.
"""

import numpy as np
from pydrake.geometry import AddContactMaterial, Box, ProximityProperties, RoleAssign
from pydrake.math import RigidTransform
from pydrake.multibody.plant import CoulombFriction, MultibodyPlant

GROUND_COLOR = np.array([0.62, 0.64, 0.60, 1.0])


def AddGround(
    plant: MultibodyPlant,
    *,
    mu_static: float = 0.8,
    mu_dynamic: float = 0.8,
    size: float = 20.0,
    thickness: float = 1.0,
    name: str = "ground",
    visual: bool = True,
):
    """Registers a flat ground (top face at z = 0) on the world body.

    Args:
        plant: a plant registered with a SceneGraph, not finalized.
        mu_static, mu_dynamic: Coulomb friction of the ground (Drake combines it with each
            body's own coefficient).
        size: side of the square ground (in the plant's length unit).
        thickness: depth of the box below z = 0.
        visual: also register an illustration geometry.
    """
    properties = ProximityProperties()
    AddContactMaterial(friction=CoulombFriction(mu_static, mu_dynamic), properties=properties)
    X_WG = RigidTransform([0.0, 0.0, -0.5 * thickness])
    shape = Box(size, size, thickness)
    plant.RegisterCollisionGeometry(plant.world_body(), X_WG, shape, name, properties)
    if visual:
        plant.RegisterVisualGeometry(plant.world_body(), X_WG, shape, name, GROUND_COLOR)


def SetFriction(plant: MultibodyPlant, scene_graph, instance, mu: float) -> None:
    """Sets the Coulomb friction (static = dynamic = μ) of every collision geometry of the model
    `instance`, so that on a ground of μ (AddGround) every contact's combined μ (Drake's
    2 μ_a μ_b / (μ_a + μ_b)) is μ itself. Before Finalize; `scene_graph` is the plant's."""
    if not mu > 0.0:
        raise ValueError(f"SetFriction: friction must be > 0, got {mu}")
    inspector = scene_graph.model_inspector()
    friction = CoulombFriction(mu, mu)
    for body in map(plant.get_body, plant.GetBodyIndices(instance)):
        for geometry in plant.GetCollisionGeometriesForBody(body):
            properties = ProximityProperties(inspector.GetProximityProperties(geometry))
            if properties.HasProperty("material", "coulomb_friction"):
                properties.UpdateProperty("material", "coulomb_friction", friction)
            else:
                properties.AddProperty("material", "coulomb_friction", friction)
            scene_graph.AssignRole(plant.get_source_id(), geometry, properties, RoleAssign.kReplace)
