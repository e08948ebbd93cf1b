"""Static response of the Drake model of the tripod voxel robot, to check it against the frame FEM.

The Drake model (drakebots.voxel.robot) replaces each strut by a LinearBushingRollPitchYaw at its
midpoint (transverse and rotational stiffness) plus a compliant distance constraint (axial EA/L,
SAP only), and each actuator by a prismatic joint. Its small-displacement stiffness is measured
here from Drake itself, without simulating to rest:

    K_bushings = -d(tau)/d(delta)     central differences of the force elements' generalized
                                      forces (CalcForceElementsContribution, CalcGeneralizedForces)
                                      at v = 0; delta a velocity-space displacement,
                                      q = q0 + N(q0) delta
    K_axial    = sum k (J_b - J_a)^T e e^T (J_b - J_a)   the distance constraints as the springs
                                      they are (stiffness from the model's metadata), J the body
                                      origins' translational Jacobians from Drake

Then K delta = 0 is solved with the actuators' prismatic coordinates prescribed (the strokes) and
one node body clamped (the robot floats; the internal actuators are self-equilibrated), and the
node translations J delta are returned. Double only.
"""

import numpy as np
from pydrake.math import RigidTransform  # noqa: F401 - loads the math bindings used below
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import JacobianWrtVariable, MultibodyForces

from drakebots.voxel.robot import AddVoxelTripod, TripodMetadata


class TripodStatics:
    """The Drake model's linear static stiffness in velocity coordinates.

    Args:
        step: central-difference step of the displacement coordinates (m or rad).
    """

    def __init__(self, step: float = 1e-7):
        plant = MultibodyPlant(time_step=0.0)
        self.instance = AddVoxelTripod(plant)  # continuous: no distance constraints added
        plant.mutable_gravity_field().set_gravity_vector([0.0, 0.0, 0.0])
        plant.Finalize()
        self.plant = plant
        self.context = plant.CreateDefaultContext()
        meta = TripodMetadata()
        self.meta = meta
        self.q0 = plant.GetPositions(self.context).copy()
        nv = plant.num_velocities()
        self.nv = nv
        self.bodies = {
            plant.get_body(i).name(): plant.get_body(i) for i in plant.GetBodyIndices(self.instance)
        }
        self.names = sorted(self.bodies)
        zero = np.zeros(nv)
        forces = MultibodyForces(plant)

        def ElasticForces(delta):
            """Generalized forces of the force elements (the bushings) at q0 + N(q0) delta."""
            qdot = plant.MapVelocityToQDot(self.context, delta)
            plant.SetPositions(self.context, self.q0 + qdot)
            plant.SetVelocities(self.context, zero)
            plant.CalcForceElementsContribution(self.context, forces)
            return plant.CalcGeneralizedForces(self.context, forces)

        plant.SetPositions(self.context, self.q0)
        K = np.zeros((nv, nv))
        for j in range(nv):
            e = np.zeros(nv)
            e[j] = step
            K[:, j] = -(ElasticForces(e) - ElasticForces(-e)) / (2 * step)
        plant.SetPositions(self.context, self.q0)
        self.K_bushings = 0.5 * (K + K.T)
        # Translational Jacobians of every node body's origin at the home pose.
        world = plant.world_frame()
        self.J = {
            name: plant.CalcJacobianTranslationalVelocity(
                self.context,
                JacobianWrtVariable.kV,
                body.body_frame(),
                np.zeros(3),
                world,
                world,
            )
            for name, body in self.bodies.items()
        }
        self.positions = {
            name: body.EvalPoseInWorld(self.context).translation().copy()
            for name, body in self.bodies.items()
        }
        k = float(meta["strut_axial_stiffness"])
        K_axial = np.zeros((nv, nv))
        for a, b in meta["struts"]:
            e = self.positions[b] - self.positions[a]
            e /= np.linalg.norm(e)
            row = e @ (self.J[b] - self.J[a])
            K_axial += k * np.outer(row, row)
        self.K_axial = K_axial
        self.K = self.K_bushings + K_axial
        # The actuators' prismatic coordinates (velocity indices).
        self.actuator_dofs = {
            name: plant.GetJointByName(name, self.instance).velocity_start()
            for name in meta["actuators"]
        }

    def Solve(self, strokes: dict, clamp: str = "node_3_1_0") -> dict:
        """Node translations (name -> (3,), m) for actuator strokes (name -> m; extension > 0).

        The prismatic joint coordinate is the upper node's displacement along +z relative to the
        lower node: the stroke. One node body (`clamp`, a floating one) is held.
        """
        body = self.bodies[clamp]
        if not body.is_floating_base_body():
            raise ValueError(f"clamp {clamp}: choose a floating node body")
        clamped = np.arange(
            body.floating_velocities_start_in_v(), body.floating_velocities_start_in_v() + 6
        )
        prescribed = np.array([self.actuator_dofs[n] for n in strokes], dtype=int)
        values = np.array([float(s) for s in strokes.values()])
        fixed = np.concatenate([clamped, prescribed])
        free = np.setdiff1d(np.arange(self.nv), fixed)
        delta = np.zeros(self.nv)
        delta[prescribed] = values
        rhs = -self.K[np.ix_(free, prescribed)] @ values
        delta[free] = np.linalg.solve(self.K[np.ix_(free, free)], rhs)
        return {name: self.J[name] @ delta for name in self.names}
