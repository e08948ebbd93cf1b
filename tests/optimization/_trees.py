"""Small multibody systems shared by the optimization tests (built from Drake primitives)."""

import numpy as np
from pydrake.math import RigidTransform, RollPitchYaw
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import (
    FixedOffsetFrame,
    PrismaticJoint,
    PrismaticSpring,
    RevoluteJoint,
    RevoluteSpring,
    RpyFloatingJoint,
    SpatialInertia,
    UnitInertia,
)


def RandomInertia(rng, mass=None):
    """A physically valid spatial inertia with an off-origin centre of mass."""
    m = mass if mass is not None else rng.uniform(0.5, 2.0)
    a, b, c = rng.uniform(0.05, 0.3, size=3)
    G = UnitInertia.SolidBox(a, b, c)
    R = RollPitchYaw(rng.uniform(-1, 1, 3)).ToRotationMatrix()
    G_Bcm = G.ReExpress(R)
    com = rng.uniform(-0.1, 0.1, 3)
    return SpatialInertia(m, com, G_Bcm.ShiftFromCenterOfMass(-com))


def MakeRandomTree(seed=0, *, floating=True, springs=True):
    """An RPY-floating base with two branches of revolute and prismatic joints (11 or 5 dofs).

    Returns (plant, loops) where loops is a list of (body1, p1, body2, p2) pairs of points that
    are NOT coincident (for constraint derivative tests only).
    """
    rng = np.random.default_rng(seed)
    plant = MultibodyPlant(0.0)
    world = plant.world_body()
    base = plant.AddRigidBody("base", RandomInertia(rng))
    if floating:
        plant.AddJoint(RpyFloatingJoint("base_joint", world.body_frame(), base.body_frame()))
    else:
        plant.WeldFrames(world.body_frame(), base.body_frame(), RigidTransform([0, 0, 1.0]))
    bodies = {"base": base}
    # (name, parent, type, axis)
    links = [
        ("a1", "base", "revolute", [0, 0, 1]),
        ("a2", "a1", "revolute", [0, 1, 0]),
        ("a3", "a2", "prismatic", [1, 0, 0]),
        ("b1", "base", "revolute", [1, 0, 0]),
        ("b2", "b1", "revolute", [0.3, 0.4, np.sqrt(0.75)]),
    ]
    for name, parent, kind, axis in links:
        body = plant.AddRigidBody(name, RandomInertia(rng))
        X_PF = RigidTransform(RollPitchYaw(rng.uniform(-1, 1, 3)), rng.uniform(-0.3, 0.3, 3))
        X_CM = RigidTransform(RollPitchYaw(rng.uniform(-1, 1, 3)), rng.uniform(-0.3, 0.3, 3))
        F = plant.AddFrame(FixedOffsetFrame(f"{name}_F", bodies[parent].body_frame(), X_PF))
        M = plant.AddFrame(FixedOffsetFrame(f"{name}_M", body.body_frame(), X_CM))
        axis = np.asarray(axis, float) / np.linalg.norm(axis)
        if kind == "revolute":
            joint = plant.AddJoint(RevoluteJoint(f"{name}_joint", F, M, axis, damping=0.1))
            if springs:
                plant.AddForceElement(RevoluteSpring(joint, rng.uniform(-0.2, 0.2), 3.0))
        else:
            joint = plant.AddJoint(PrismaticJoint(f"{name}_joint", F, M, axis, damping=0.2))
            if springs:
                plant.AddForceElement(PrismaticSpring(joint, 0.05, 20.0))
        bodies[name] = body
    plant.Finalize()
    idx = {name: int(body.index()) for name, body in bodies.items()}
    loops = [
        (idx["a3"], rng.uniform(-0.2, 0.2, 3), idx["b2"], rng.uniform(-0.2, 0.2, 3)),
        (idx["base"], rng.uniform(-0.2, 0.2, 3), idx["a2"], rng.uniform(-0.2, 0.2, 3)),
    ]
    return plant, loops
