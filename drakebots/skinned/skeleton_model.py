"""The skeleton as the motion optimizer sees it: a MultibodyPlant with Euler-angle base coordinates.

The paper parameterises the skeleton by "the Cartesian coordinates of the center of mass ... at the
root link and the three Euler angles at each joint" (skinned-quad-robots.txt, section 4.1). We build
the same coordinates in Drake: the robot's SDF (drakebots.skinned.robot) with its torso attached
to the world by three prismatic joints (x, y, z) and three revolute joints (yaw about z, pitch
about y, roll about x, so R_WTorso = Rz(yaw) Ry(pitch) Rx(roll), Drake's RollPitchYaw). With these
coordinates q̇ = v, so finite differences of q are generalized velocities and accelerations, and
Drake's Jacobians with respect to v are the exact derivatives of positions with respect to q.

The skin's weight (section 5.4: "each link has additional weights from its associated vertices")
is added as one welded body per loaded link (`SkinLoad`), so the double and AutoDiff plants both
carry it; the skin's coupling forces at the glue vertices are external wrenches per link
(`ExternalLoads`), inputs to inverse dynamics.

Units: SI (m, kg, s, N, N·m, rad).
"""

from __future__ import annotations

import dataclasses
from functools import cached_property

import numpy as np
from pydrake.autodiffutils import AutoDiffXd, ExtractGradient, ExtractValue, InitializeAutoDiff
from pydrake.math import RigidTransform, RollPitchYaw
from pydrake.multibody.math import SpatialForce_
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import (
    JacobianWrtVariable,
    MultibodyForces_,
    PrismaticJoint,
    RevoluteJoint,
    RotationalInertia,
    SpatialInertia,
)

from drakebots.optimization.tree_inverse_dynamics import BatchInverseDynamics
from drakebots.skinned.robot import SkinnedQuadruped
from drakebots.skinned.skeleton import (
    LEG_NAMES,
    FootContactPoints,
    JointKinds,
    SkeletonParams,
)

BASE_JOINTS = ("x", "y", "z", "yaw", "pitch", "roll")
NUM_BASE = 6
# Joint kinds of the body itself, not of a leg (the lizard's spine, the necks and tails).
BODY_JOINT_KINDS = ("spine", "neck", "tail")
# Softness of the sole's smooth-minimum corner height (SkeletonModel.SoleLowest), m.
SOLE_SOFTNESS = 1e-4


@dataclasses.dataclass
class SkinLoad:
    """The skin's weight carried by each link (section 5.4), as extra rigid mass welded to it.

    Attributes:
        masses: link name -> skin mass on that link, kg.
        centers: link name -> centre of that mass in the link frame, m.
        source: where the numbers come from (for summaries).
    """

    masses: dict = dataclasses.field(default_factory=dict)
    centers: dict = dataclasses.field(default_factory=dict)
    source: str = "none"
    # link name -> (3, 3) rotational inertia about that mass's centre, link frame, kg·m²
    # (missing: a point mass).
    inertias: dict = dataclasses.field(default_factory=dict)

    @property
    def total(self) -> float:
        return float(sum(self.masses.values()))


def StaticSkinLoadByLinkMass(params: SkeletonParams, plant: MultibodyPlant, instance) -> SkinLoad:
    """The skin mass the paper reports, shared over the links in proportion to their mass.

    Used until a generated skin gives each link the mass of its associated vertices (issue 5's
    skinning weights): a shell covering the body puts most of its mass on the torso, as the link
    masses do. Each share sits at its link's COM.
    """
    context = plant.CreateDefaultContext()
    masses, centers = {}, {}
    bodies = [plant.get_body(i) for i in plant.GetBodyIndices(instance)]
    bodies = [b for b in bodies if b.default_mass() > 0.0 and not b.name().startswith("base_")]
    total = sum(b.default_mass() for b in bodies)
    for body in bodies:
        masses[body.name()] = params.skin_mass * body.default_mass() / total
        centers[body.name()] = np.asarray(body.CalcCenterOfMassInBodyFrame(context), float)
    return SkinLoad(masses=masses, centers=centers, source="skin mass shared by link mass")


def SkinLoadFromSkin(skin, params: SkeletonParams) -> SkinLoad:
    """Section 5.4: "each link has additional weights from its associated vertices".

    A generated FEM skin's mass (each tetrahedron's ρV shared by its four vertices) goes to the
    links by the skinning weights: link l carries Σ_v w_vl m_v at the centre of those shares, with
    their rotational inertia about it (the skin is rigid on its links, as in the space-time
    step). Summed over the links this is the skin's own mass, centre of mass and inertia at the
    home pose, where link frames are aligned with the world and sit at the links' origins.
    """
    from drakebots.skinned.skeleton import _Build

    mesh = skin.mesh
    m = mesh.LumpedMasses(skin.mass_density)
    links = _Build(params).links
    masses, centers, inertias = {}, {}, {}
    x = mesh.vertices
    for column, name in enumerate(skin.skin_links):
        mv = m * skin.weights[:, column]
        total = float(mv.sum())
        if total <= 0.0:
            continue
        c = (mv @ x) / total
        r = x - c
        inertia = np.eye(3) * float(mv @ np.einsum("ij,ij->i", r, r)) - (r * mv[:, None]).T @ r
        masses[name] = total
        centers[name] = c - links[name].origin
        inertias[name] = inertia
    return SkinLoad(
        masses=masses,
        centers=centers,
        inertias=inertias,
        source="the FEM skin's vertex masses by skinning weight (section 5.4)",
    )


@dataclasses.dataclass
class ExternalLoads:
    """Constant external wrenches on links at every frame: the skin's coupling forces.

    Attributes:
        bodies: link names.
        wrenches: (N, len(bodies), 6) spatial force [torque; force] on each link about its origin,
            expressed in the link frame, N·m and N (the glue vertices' forces from the last
            frame-by-frame pass, held fixed in the link frame during a space-time step).
    """

    bodies: list
    wrenches: np.ndarray


class SkeletonModel:
    """A skinned quad-robot's skeleton with Euler-angle base coordinates, for the optimizers.

    Args:
        robot: registry name ("beetle", "monster", "lizard", "cow"), a robot file of kind
            skinned_quadruped (drakebots.robots.robot_file), or the `SkinnedQuadruped` either
            gives (drakebots.robots.GetRobot).
        skin_load: extra skin mass per link (None: the paper's skin mass shared by link mass; pass
            `SkinLoad()` for the bare skeleton).
        mass_scale: multiplies every mass (skeleton and skin), e.g. 2 for the paper's failure case.
    """

    def __init__(
        self, robot: str | SkinnedQuadruped, *, skin_load: SkinLoad | None = None, mass_scale=1.0
    ):
        if not isinstance(robot, SkinnedQuadruped):
            from drakebots.robots import GetRobot

            robot = GetRobot(robot)
        # The robot's description (its SDF: the package's or a user skeleton's) and its name.
        self.skeleton = robot
        self.robot = robot.name
        self.params = robot.params
        self.mass_scale = float(mass_scale)
        plant = MultibodyPlant(time_step=0.0)
        instance = self.skeleton.AddTo(plant)
        torso = plant.GetBodyByName("torso", instance)
        if skin_load is None:
            probe = MultibodyPlant(time_step=0.0)
            probe_instance = self.skeleton.AddTo(probe)
            probe.Finalize()
            skin_load = StaticSkinLoadByLinkMass(self.params, probe, probe_instance)
        self.skin_load = skin_load
        if mass_scale != 1.0:
            # Scale every link's spatial inertia by welding (scale - 1) copies of it to the link
            # (spatial inertias add), so the double and AutoDiff plants both carry it.
            for index in list(plant.GetBodyIndices(instance)):
                body = plant.get_body(index)
                if body.default_mass() <= 0.0:
                    continue
                extra = body.default_spatial_inertia()
                scaled = SpatialInertia(
                    extra.get_mass() * (mass_scale - 1.0),
                    extra.get_com(),
                    extra.get_unit_inertia(),
                )
                added = plant.AddRigidBody(f"{body.name()}_mass_scale", instance, scaled)
                plant.WeldFrames(body.body_frame(), added.body_frame())
        for link, mass in skin_load.masses.items():
            if mass <= 0.0:
                continue
            I = skin_load.inertias.get(link)
            if I is None:
                # A point mass, nearly (the paper's skin mass shared by link mass has no shape).
                inertia = RotationalInertia(*(3 * [1e-6 * mass * mass_scale]))
            else:
                I = np.asarray(I, float) * mass_scale
                inertia = RotationalInertia(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])
            body = plant.AddRigidBody(
                f"{link}_skin",
                instance,
                SpatialInertia.MakeFromCentralInertia(
                    mass * mass_scale, np.asarray(skin_load.centers[link], float), inertia
                ),
            )
            plant.WeldFrames(plant.GetFrameByName(link, instance), body.body_frame())
        parent = plant.world_body()
        axes = {"x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]}
        axes.update({"yaw": [0, 0, 1], "pitch": [0, 1, 0], "roll": [1, 0, 0]})
        for k, name in enumerate(BASE_JOINTS):
            child = (
                torso
                if k == NUM_BASE - 1
                else plant.AddRigidBody(f"base_{name}", instance, SpatialInertia.Zero())
            )
            joint_type = PrismaticJoint if k < 3 else RevoluteJoint
            plant.AddJoint(
                joint_type(
                    f"base_{name}",
                    parent.body_frame(),
                    child.body_frame(),
                    np.array(axes[name], float),
                )
            )
            parent = child
        plant.Finalize()
        self.plant = plant
        self.instance = instance
        self.context = plant.CreateDefaultContext()
        self.plant_ad = plant.ToAutoDiffXd()
        self.context_ad = self.plant_ad.CreateDefaultContext()
        self.nq = plant.num_positions()
        self.nv = plant.num_velocities()
        assert self.nq == self.nv
        names = plant.GetPositionNames(add_model_instance_prefix=False, always_add_suffix=False)
        self.position_names = list(names)
        # Actuation: B maps motor torques to generalized forces (one motor per non-base joint).
        self.B = plant.MakeActuationMatrix()
        self.nu = self.B.shape[1]
        self.actuator_names = [
            plant.get_joint_actuator(i).joint().name() for i in plant.GetJointActuatorIndices()
        ]
        self.actuated_indices = np.array([int(np.argmax(self.B[:, k])) for k in range(self.nu)])
        self.effort_limits = np.array(
            [plant.get_joint_actuator(i).effort_limit() for i in plant.GetJointActuatorIndices()]
        )
        self.joint_kinds = JointKinds(self.params)
        # q indices of the body's own joints (spine, neck, tail: not a leg's), sorted.
        self.body_joint_indices = np.array(
            sorted(
                plant.GetJointByName(name, instance).position_start()
                for name, kind in self.joint_kinds.items()
                if kind in BODY_JOINT_KINDS
            ),
            dtype=int,
        )
        lower = plant.GetPositionLowerLimits()
        upper = plant.GetPositionUpperLimits()
        self.q_lower, self.q_upper = lower, upper
        # Feet: the four sole corners and the sole centre (the end effector of Eqs. 3-4) in each
        # foot's link frame.
        corners = FootContactPoints(self.params)
        r = self.params.contact.sphere_radius
        self.legs = LEG_NAMES
        self.foot_bodies = [plant.GetBodyByName(f"{leg}_foot", instance) for leg in LEG_NAMES]
        self.sole_corners = np.array(
            [corners[f"{leg}_foot"] - [0.0, 0.0, r] for leg in LEG_NAMES]
        )  # (4, 4, 3)
        self.sole_centers = self.sole_corners.mean(axis=1)  # (4, 3)
        # Circumradius of the sole (the corners' largest distance from its centre in the sole's
        # plane): ν_b and ν_t of Eq. (8). The soles are rotated in their foot frames, so half
        # the diagonal of the corners' axis-aligned box overstates it (beetle: 57 mm for 41).
        offsets = (self.sole_corners - self.sole_centers[:, None])[..., :2]
        self.sole_radius = float(np.linalg.norm(offsets, axis=-1).max())
        # Viscous joint damping (the gearboxes'; SDF <damping>), N·m·s/rad: Drake's forward
        # dynamics applies it, so the optimizers' dynamics must too.
        self.damping = np.zeros(self.nv)
        for index in plant.GetJointIndices():
            joint = plant.get_joint(index)
            if joint.num_velocities() == 1:
                self.damping[joint.velocity_start()] = joint.default_damping()
        self.total_mass = float(plant.CalcTotalMass(self.context))
        self.gravity = float(-plant.gravity_field().gravity_vector()[2])
        self.q_home = self.HomePositions()

    # ------------------------------------------------------------------------------------------
    # Coordinates.

    def HomePositions(self) -> np.ndarray:
        """q of the home pose: joints at zero, torso at its home height (soles on the ground)."""
        from drakebots.skinned.skeleton import HomeBaseHeight

        q = np.zeros(self.nq)
        q[2] = HomeBaseHeight(self.params)
        return q

    def JointIndices(self) -> np.ndarray:
        """Indices of the joint angles in q (everything but the six base coordinates)."""
        return np.arange(NUM_BASE, self.nq)

    def ToFloatingPositions(self, q: np.ndarray) -> np.ndarray:
        """q for the robot's usual plant (quaternion floating torso, joints in SDF order).

        Used to replay and simulate the plan with `AddSkinnedQuadruped` (drakebots.robots).
        """
        plant = self._floating_plant
        context = plant.CreateDefaultContext()
        torso = plant.GetBodyByName("torso")
        X = RigidTransform(RollPitchYaw(q[5], q[4], q[3]), q[:3])
        plant.SetFreeBodyPose(context, torso, X)
        for name, value in zip(self.position_names[NUM_BASE:], q[NUM_BASE:]):
            plant.GetJointByName(name).set_angle(context, float(value))
        return plant.GetPositions(context)

    @cached_property
    def _floating_plant(self) -> MultibodyPlant:
        plant = MultibodyPlant(time_step=0.0)
        self.skeleton.AddTo(plant)
        plant.Finalize()
        return plant

    # ------------------------------------------------------------------------------------------
    # Kinematics in double with exact Jacobians (q̇ = v).

    def SetPositions(self, q: np.ndarray) -> None:
        self.plant.SetPositions(self.context, q)

    def _Memo(self, key, compute):
        """Kinematics are asked for the same q by several costs and constraints: memoise."""
        cache = self.__dict__.setdefault("_memo", {})
        hit = cache.get(key)
        if hit is None:
            if len(cache) > 50000:
                cache.clear()
            hit = cache[key] = compute()
        return hit

    def Com(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """COM position (3,) and its Jacobian d com / dq (3, nq)."""
        q = np.ascontiguousarray(q, dtype=float)
        return self._Memo(("com", q.tobytes()), lambda: self._Com(q))

    def _Com(self, q):
        plant, context = self.plant, self.context
        plant.SetPositions(context, q)
        W = plant.world_frame()
        com = plant.CalcCenterOfMassPositionInWorld(context)
        J = plant.CalcJacobianCenterOfMassTranslationalVelocity(
            context, JacobianWrtVariable.kV, W, W
        )
        return com, J

    def FootPoints(self, q: np.ndarray, leg: int, points_F: np.ndarray):
        """World positions (n, 3) of points on a foot and their Jacobians (n, 3, nq)."""
        q = np.ascontiguousarray(q, dtype=float)
        points_F = np.ascontiguousarray(points_F, dtype=float)
        key = ("foot", leg, q.tobytes(), points_F.tobytes())
        return self._Memo(key, lambda: self._FootPoints(q, leg, points_F))

    def _FootPoints(self, q, leg, points_F):
        plant, context = self.plant, self.context
        plant.SetPositions(context, q)
        frame = self.foot_bodies[leg].body_frame()
        W = plant.world_frame()
        points_F = np.atleast_2d(points_F)
        p = plant.CalcPointsPositions(context, frame, points_F.T, W).T
        J = plant.CalcJacobianTranslationalVelocity(
            context, JacobianWrtVariable.kV, frame, points_F.T, W, W
        )
        return p, J.reshape(len(points_F), 3, self.nq)

    def FootNormal(self, q: np.ndarray, leg: int):
        """The sole's normal (the foot frame's z axis) in world (3,) and d/dq (3, nq).

        ψ_EE of Eq. (3)'s E_O term: a flat foot has normal n̂ = +z.
        """
        q = np.ascontiguousarray(q, dtype=float)
        return self._Memo(("normal", leg, q.tobytes()), lambda: self._FootNormal(q, leg))

    def _FootNormal(self, q, leg):
        plant, context = self.plant, self.context
        plant.SetPositions(context, q)
        frame = self.foot_bodies[leg].body_frame()
        W = plant.world_frame()
        R = plant.CalcRelativeTransform(context, W, frame).rotation().matrix()
        n = R[:, 2]
        Jw = plant.CalcJacobianAngularVelocity(context, JacobianWrtVariable.kV, frame, W, W)
        # d n / dt = ω × n = -[n]x ω.
        skew = np.array([[0, -n[2], n[1]], [n[2], 0, -n[0]], [-n[1], n[0], 0]])
        return n, -skew @ Jw

    def SoleLowest(self, q: np.ndarray, leg: int, softness: float = SOLE_SOFTNESS):
        """Height of a sole's lowest corner as a smooth minimum, m, and its gradient (nq,).

        h = -s log(Σ_k exp(-z_k / s) / 4) over the four corner heights z_k (s = `softness`):
        exactly z for a flat sole, within s log 4 of the lowest corner when it tilts. A planted
        flat sole tilted by its leg stands on its lowest edge or corner, not on its centre.
        """
        corners, J = self.FootPoints(q, leg, self.sole_corners[leg])
        z = corners[:, 2]
        shifted = -(z - z.min()) / softness
        w = np.exp(shifted)
        total = w.sum()
        value = z.min() - softness * (np.log(total) - np.log(len(z)))
        return value, (w / total) @ J[:, 2]

    def AllFeet(self, q: np.ndarray):
        """Sole centres (4, 3), their Jacobians (4, 3, nq), normals (4, 3), normal Jacobians."""
        p = np.zeros((4, 3))
        Jp = np.zeros((4, 3, self.nq))
        n = np.zeros((4, 3))
        Jn = np.zeros((4, 3, self.nq))
        for j in range(4):
            pj, Jj = self.FootPoints(q, j, self.sole_centers[j])
            p[j], Jp[j] = pj[0], Jj[0]
            n[j], Jn[j] = self.FootNormal(q, j)
        return p, Jp, n, Jn

    def SoleCorners(self, q: np.ndarray) -> np.ndarray:
        """World positions (4 feet, 4 corners, 3) of the sole corners."""
        return np.array([self.FootPoints(q, j, self.sole_corners[j])[0] for j in range(4)])

    # ------------------------------------------------------------------------------------------
    # Dynamics.

    def InverseDynamics(
        self,
        q: np.ndarray,
        v: np.ndarray,
        vdot: np.ndarray,
        foot_wrenches: np.ndarray | None = None,
        body_wrenches=None,
    ) -> np.ndarray:
        """Generalized forces that produce `vdot` (double): M v̇ + C v - τ_g - J^T w_ext.

        Args:
            foot_wrenches: (4, 6) [torque; force] from the ground on each foot at its sole centre,
                world frame, N·m and N (zeros for swing feet).
            body_wrenches: list of (link name, (6,) [torque; force] about the link origin in the
                link frame) external loads (the skin's coupling forces).
        """
        plant, context = self.plant, self.context
        plant.SetPositions(context, q)
        plant.SetVelocities(context, v)
        forces = MultibodyForces_[float](plant)
        # Gravity and the joints' viscous damping (-D v) are what CalcForceElementsContribution
        # puts in `forces`; CalcInverseDynamics only sees what is in there.
        plant.CalcForceElementsContribution(context, forces)
        self._AddForces(plant, context, forces, foot_wrenches, body_wrenches, float)
        return plant.CalcInverseDynamics(context, vdot, forces)

    def InverseDynamicsWithGradient(
        self,
        q: np.ndarray,
        v: np.ndarray,
        vdot: np.ndarray,
        foot_wrenches: np.ndarray,
        body_wrenches=None,
    ):
        """Inverse dynamics and its exact gradient (AutoDiff) w.r.t. [q, v, v̇, foot wrenches].

        Returns:
            (tau (nv,), dtau (nv, 3 nv + 24)).
        """
        plant, context = self.plant_ad, self.context_ad
        n = self.nv
        x = InitializeAutoDiff(np.concatenate([q, v, vdot, np.ravel(foot_wrenches)]))
        plant.SetPositions(context, x[:n])
        plant.SetVelocities(context, x[n : 2 * n])
        forces = MultibodyForces_[AutoDiffXd](plant)
        plant.CalcForceElementsContribution(context, forces)
        self._AddForces(plant, context, forces, x[3 * n :].reshape(4, 6), body_wrenches, AutoDiffXd)
        tau = plant.CalcInverseDynamics(context, x[2 * n : 3 * n], forces)
        return ExtractValue(tau).ravel(), ExtractGradient(tau)  # D v is in the force elements

    @cached_property
    def batch_dynamics(self) -> BatchInverseDynamics:
        """The plant's recursive Newton-Euler inverse dynamics over many states at once."""
        return BatchInverseDynamics(self.plant, self.context)

    def _BatchWrenches(self, foot_wrenches, body_wrenches):
        """The feet's world wrenches at the sole centres and the links' own-frame wrenches in
        the form `BatchInverseDynamics` takes them."""
        tid = self.batch_dynamics
        world = []
        for j in range(4):
            slot, X_SB = tid.BodySlot(self.foot_bodies[j].index())
            world.append((slot, X_SB.multiply(self.sole_centers[j]), foot_wrenches[:, j]))
        local = []
        for link, W in body_wrenches or ():
            slot, X_SB = tid.BodySlot(self.plant.GetBodyByName(link, self.instance).index())
            W = np.asarray(W, float)
            R, p = X_SB.rotation().matrix(), X_SB.translation()
            f = W[:, 3:] @ R.T
            local.append((slot, np.hstack([W[:, :3] @ R.T + np.cross(p, f), f])))
        return world, local

    def InverseDynamicsBatch(self, q, v, vdot, foot_wrenches, body_wrenches=None, *, partials):
        """`InverseDynamics` at K states at once, and its exact partial derivatives.

        Args:
            q, v, vdot: (K, nv).
            foot_wrenches: (K, 4, 6) [torque; force] on each foot at its sole centre, world.
            body_wrenches: list of (link name, (K, 6) [torque; force] about the link origin in
                the link frame).
            partials: also return the partial derivatives.

        Returns:
            tau (K, nv); with partials, (tau, dtau_dq, dtau_dv, dtau_dvdot, dtau_dw) with
            dtau_dw (K, nv, 24): the columns of foot j at 6 j .. 6 j + 5 = [torque; force].
        """
        world, local = self._BatchWrenches(np.asarray(foot_wrenches, float), body_wrenches)
        tid = self.batch_dynamics
        if not partials:
            return tid.InverseDynamics(q, v, vdot, local_wrenches=local, world_wrenches=world)
        return tid.Partials(q, v, vdot, local_wrenches=local, world_wrenches=world)

    def Kinematics(self, q: np.ndarray):
        """Everything the space-time step needs at one configuration, in one pass.

        Returns:
            (com (3,), J_com (3, nq), feet (4, 3) sole centres, J_feet (4, 3, nq), normals (4, 3),
            J_normals (4, 3, nq)).
        """
        com, Jc = self.Com(q)
        p, Jp, n, Jn = self.AllFeet(q)
        return com, Jc, p, Jp, n, Jn

    def _AddForces(self, plant, context, forces, foot_wrenches, body_wrenches, T):
        W = plant.world_frame()

        def cast(values):
            values = np.asarray(values)
            if T is float or values.dtype == object:
                return values
            return np.array([AutoDiffXd(float(c)) for c in values], dtype=object)

        if foot_wrenches is not None:
            for j in range(4):
                w = foot_wrenches[j]
                body = plant.get_body(self.foot_bodies[j].index())
                # The wrench acts at the sole centre; p_BoP expressed in world depends on q.
                R_WB = plant.EvalBodyPoseInWorld(context, body).rotation()
                p_W = R_WB.multiply(cast(self.sole_centers[j]))
                body.AddInForce(context, p_W, SpatialForce_[T](w[:3], w[3:]), W, forces)
        if body_wrenches:
            for link, w in body_wrenches:
                body = plant.GetBodyByName(link, self.instance)
                F = SpatialForce_[T](cast(w[:3]), cast(w[3:]))
                body.AddInForce(context, cast(np.zeros(3)), F, body.body_frame(), forces)

    def MassMatrix(self, q: np.ndarray) -> np.ndarray:
        self.plant.SetPositions(self.context, q)
        return self.plant.CalcMassMatrix(self.context)

    def BiasAndGravity(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """C(q, v) v - τ_g(q) + D v: the generalized forces that are not inputs."""
        plant, context = self.plant, self.context
        plant.SetPositions(context, q)
        plant.SetVelocities(context, v)
        return (
            plant.CalcBiasTerm(context)
            - plant.CalcGravityGeneralizedForces(context)
            + self.damping * v
        )

    def JointEffortLimits(self, spec_limit: float = 0.0, per_joint: dict | None = None):
        """U_m per motor, N·m: the skeleton's motor unless the motion input overrides it."""
        limits = self.effort_limits.copy()
        if spec_limit > 0.0:
            limits[:] = spec_limit
        for name, value in (per_joint or {}).items():
            limits[self.actuator_names.index(name)] = value
        return limits


def RotationalInertiaOf(mass: float, size) -> RotationalInertia:
    """Rotational inertia of a solid box (helper for skin loads with a shape), kg·m²."""
    a, b, c = size
    return RotationalInertia(
        mass / 12 * (b * b + c * c), mass / 12 * (a * a + c * c), mass / 12 * (a * a + b * b)
    )
