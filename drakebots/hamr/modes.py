"""Modal analysis of HAMR-VI standing: static equilibrium, linearisation, body natural frequencies.

The paper puts the body's vertical natural frequency near 10 Hz and its roll frequency near 30 Hz
(section III-A, after Goldberg et al. 2017b), which is why it optimizes gaits at 10 and 30 Hz.
This module computes the model's own values:

1. The standing equilibrium: every actuator at the mid voltage (the bender then acts as a pure
   spring, F = -k_p q, drakebots.hamr.piezo), gravity, the flexure and actuator springs, the
   24 loop constraints c(q) = 0, and the feet held by their contacts: either *pinned* (sticking
   friction, 3 rows per foot) or *sliding* (frictionless ground, the foot's height only). Newton's
   method on the KKT conditions ∇U(q) + G(q)ᵀλ = 0, g(q) = 0, where U is the potential energy and
   g stacks c(q) and the foot constraints; λ holds the constraint forces (the feet's ground
   reactions among them).
2. The linearisation about it: M(q*), the Hessian of the Lagrangian U + λᵀg (so the constraint
   curvature weighted by the constraint forces is included), the joint damping D, restricted to
   the null space of G (drakebots.analysis.modal.ConstrainedModes).
3. Each mode's share of kinetic energy in the chassis and its dominant body motion (vertical,
   roll, pitch, surge, sway, yaw), so the body modes can be told from leg modes.

Units: mm, ms, g; frequencies reported in Hz.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import BodyIndex, JacobianWrtVariable

from drakebots.analysis.modal import ConstrainedModes, HertzFromOmega
from drakebots.hamr.piezo import DefaultPiezoBender, PiezoBenderForce
from drakebots.hamr.robot import (
    ACTUATOR_ORIENTATION,
    BASE_JOINTS,
    LEGS,
    AddHamr,
    FlexureStiffness,
    HamrLoopConstraints,
    HamrPositionIndex,
    JointDamping,
)

FEET_MODES = ("pinned", "sliding")

# Lengths that turn body rotations into comparable displacements (mm) for labelling modes: the
# half-spans of the feet (the leg tips are where a body rotation moves the robot the most).
_ROLL_ARM = 17.4
_PITCH_ARM = 12.8
_YAW_ARM = 21.6

BODY_MOTIONS = ("surge (x)", "sway (y)", "vertical (z)", "roll", "pitch", "yaw")


@dataclasses.dataclass
class HamrModes:
    """The result of `AnalyseHamrModes`.

    Attributes:
        feet: "pinned" or "sliding".
        q_equilibrium: (38,) standing equilibrium.
        body_height: chassis height at the equilibrium, mm.
        foot_forces: (4, 3) ground reaction on each foot at the equilibrium (FL, RL, FR, RR), N.
        frequencies_hz: (m,) natural frequencies, Hz (rigid-body directions ~0).
        damping_ratio: (m,) ζ from the joint damping.
        shapes: (38, m) mode shapes (mass-normalised).
        chassis_energy_fraction: (m,) share of each mode's kinetic energy in the chassis.
        body_motion: (m, 6) normalised body motion [x, y, z, roll, pitch, yaw], rotations scaled
            by the feet's half-spans to mm.
        labels: (m,) "vertical (z)", "roll", ... for body modes; "leg" when the chassis carries
            less than `body_threshold` of the kinetic energy; "free" for zero frequency.
        constraint_rank: rank of the constraint Jacobian at the equilibrium.
        gradient_residual: |∇U + Gᵀλ| at the equilibrium (N or N·mm).
    """

    feet: str
    q_equilibrium: np.ndarray
    body_height: float
    foot_forces: np.ndarray
    frequencies_hz: np.ndarray
    damping_ratio: np.ndarray
    shapes: np.ndarray
    chassis_energy_fraction: np.ndarray
    body_motion: np.ndarray
    labels: list
    constraint_rank: int
    gradient_residual: float

    def BodyMode(self, motion: str) -> int | None:
        """Index of the lowest-frequency mode labelled `motion` ("vertical (z)", "roll", ...)."""
        for k, label in enumerate(self.labels):
            if label == motion:
                return k
        return None


STIFFNESS_GROUPS = ("swing_actuator", "lift_actuator", "swing_flexures", "lift_flexures")
"""Spring groups `stiffness_scale` may scale (as the authors' `stiffness_mult` option does:
swing actuator, lift actuator, swing-chain flexures, lift-chain flexures)."""


def _StiffnessGroup(joint_name: str) -> str:
    part = joint_name.split("_", 1)[1]
    if part in ("swing", "lift"):
        return f"{part}_actuator"
    return "swing_flexures" if part in ("s1", "s2", "fb1") else "lift_flexures"


class _StandingModel:
    """U(q), its gradient, the constraints g(q) and their Jacobian for the standing robot."""

    def __init__(self, feet: str, stiffness_scale: dict | None = None):
        if feet not in FEET_MODES:
            raise ValueError(f"feet '{feet}' is not one of {FEET_MODES}")
        scale = dict(stiffness_scale or {})
        unknown = set(scale) - set(STIFFNESS_GROUPS)
        if unknown:
            raise ValueError(f"stiffness_scale keys {sorted(unknown)} not in {STIFFNESS_GROUPS}")
        self.feet = feet
        plant = MultibodyPlant(time_step=0.0)
        AddHamr(plant)
        plant.Finalize()
        self.plant = plant
        self.context = plant.CreateDefaultContext()
        self.loops = HamrLoopConstraints(plant)
        self.nq = plant.num_positions()
        self.stiffness = np.zeros(self.nq)
        for name, k in FlexureStiffness().items():
            self.stiffness[HamrPositionIndex(plant, name)] += k * scale.get(
                _StiffnessGroup(name), 1.0
            )
        # The benders at the mid voltage: F = -k_p q on each actuator joint (a pure spring).
        params = DefaultPiezoBender()
        for name, orientation in ACTUATOR_ORIENTATION.items():
            _, _, dforce_dq = PiezoBenderForce(params.mid_voltage, 0.0, orientation, params)
            self.stiffness[HamrPositionIndex(plant, name)] += -dforce_dq
        self.damping = np.zeros(self.nq)
        for name, d in JointDamping().items():
            self.damping[HamrPositionIndex(plant, name)] = d
        self.foot_frames = [plant.GetFrameByName(f"{leg}_foot") for leg in LEGS]
        self.plant.SetPositions(self.context, plant.GetDefaultPositions())
        self.foot_targets = [
            f.CalcPoseInWorld(self.context).translation() for f in self.foot_frames
        ]

    def Potential(self, q) -> float:
        """Gravity + springs (flexures, actuator springs, bender stiffness), N·mm."""
        self.plant.SetPositions(self.context, q)
        return self._GravityPotential() + 0.5 * float(np.dot(self.stiffness * q, q))

    def _GravityPotential(self) -> float:
        """g · Σ m_i z_i (the plant's context holds q)."""
        plant, context = self.plant, self.context
        total = 0.0
        g = -plant.gravity_field().gravity_vector()[2]
        for index in range(plant.num_bodies()):
            body = plant.get_body(BodyIndex(index))
            mass = body.default_mass()
            if mass > 0:
                X_WB = plant.EvalBodyPoseInWorld(context, body)
                com = X_WB @ body.default_com()
                total += mass * g * com[2]
        return total

    def Gradient(self, q) -> np.ndarray:
        """∇U = -τ_gravity + k ⊙ q (every spring has its rest position at q = 0)."""
        self.plant.SetPositions(self.context, q)
        return -self.plant.CalcGravityGeneralizedForces(self.context) + self.stiffness * q

    def Constraints(self, q) -> tuple[np.ndarray, np.ndarray]:
        """g(q) and G = ∂g/∂q: the 24 loop rows, then the feet (3 or 1 rows each)."""
        plant, context = self.plant, self.context
        plant.SetPositions(context, q)
        rows = [self.loops.Eval(plant, context)]
        jacobians = [self.loops.Jacobian(plant, context)]
        axes = slice(0, 3) if self.feet == "pinned" else slice(2, 3)
        for frame, target in zip(self.foot_frames, self.foot_targets):
            p = frame.CalcPoseInWorld(context).translation()
            J = plant.CalcJacobianTranslationalVelocity(
                context,
                JacobianWrtVariable.kQDot,
                frame,
                np.zeros(3),
                plant.world_frame(),
                plant.world_frame(),
            )
            rows.append((p - target)[axes])
            jacobians.append(J[axes])
        return np.concatenate(rows), np.vstack(jacobians)

    def LagrangianGradient(self, q, lam) -> np.ndarray:
        _, G = self.Constraints(q)
        return self.Gradient(q) + G.T @ lam

    def LagrangianHessian(self, q, lam, step: float = 1e-6) -> np.ndarray:
        """Central differences of ∇(U + λᵀg) (exact terms are analytic; only their q-derivative
        is numerical)."""
        H = np.empty((self.nq, self.nq))
        for k in range(self.nq):
            dq = np.zeros(self.nq)
            dq[k] = step
            H[:, k] = (
                self.LagrangianGradient(q + dq, lam) - self.LagrangianGradient(q - dq, lam)
            ) / (2 * step)
        return 0.5 * (H + H.T)


def SolveStandingEquilibrium(model: _StandingModel, *, tolerance=1e-10, max_iterations=50):
    """Newton's method on the KKT system; returns (q*, λ, |∇L|)."""
    q = model.plant.GetDefaultPositions().copy()
    g, G = model.Constraints(q)
    lam = -np.linalg.lstsq(G.T, model.Gradient(q), rcond=None)[0]
    for _ in range(max_iterations):
        g, G = model.Constraints(q)
        r = model.Gradient(q) + G.T @ lam
        if np.max(np.abs(r)) < tolerance and np.max(np.abs(g)) < tolerance:
            break
        H = model.LagrangianHessian(q, lam)
        m = G.shape[0]
        kkt = np.block([[H, G.T], [G, np.zeros((m, m))]])
        step = np.linalg.lstsq(kkt, -np.concatenate([r, g]), rcond=None)[0]
        q = q + step[: model.nq]
        lam = lam + step[model.nq :]
    g, G = model.Constraints(q)
    residual = float(np.max(np.abs(model.Gradient(q) + G.T @ lam)))
    if residual > 1e-6 or np.max(np.abs(g)) > 1e-9:
        raise RuntimeError(
            f"standing equilibrium did not converge: |∇L| = {residual:.3g}, |g| = "
            f"{np.max(np.abs(g)):.3g}"
        )
    return q, lam, residual


def _ChassisEnergyFraction(model: _StandingModel, q, shape, M) -> float:
    """Share of a mode's kinetic energy carried by the chassis alone."""
    plant, context = model.plant, model.context
    plant.SetPositions(context, q)
    plant.SetVelocities(context, shape)
    chassis = plant.GetBodyByName("chassis")
    V = plant.EvalBodySpatialVelocityInWorld(context, chassis)
    X_WB = plant.EvalBodyPoseInWorld(context, chassis)
    # Spatial inertia about the body origin, expressed in world.
    I_BBo_B = chassis.CalcSpatialInertiaInBodyFrame(context)
    I_BBo_W = I_BBo_B.ReExpress(X_WB.rotation())
    momentum = I_BBo_W * V
    chassis_energy = 0.5 * float(
        np.dot(momentum.rotational(), V.rotational())
        + np.dot(momentum.translational(), V.translational())
    )
    total = 0.5 * float(shape @ M @ shape)
    return chassis_energy / total if total > 0 else 0.0


def AnalyseHamrModes(
    feet: str = "sliding", *, body_threshold: float = 0.3, stiffness_scale: dict | None = None
) -> HamrModes:
    """Standing equilibrium and natural frequencies of HAMR-VI (see the module docstring).

    Args:
        feet: "sliding" (frictionless ground: each foot kept on z = 0) or "pinned" (sticking
            contact: each foot kept at its home point).
        body_threshold: a mode is a body mode when the chassis carries at least this share of
            its kinetic energy.
        stiffness_scale: factors on spring groups (`STIFFNESS_GROUPS`), e.g. {"lift_actuator":
            0.1} as in the authors' simulation scripts; the bender's own stiffness is not scaled.
    """
    model = _StandingModel(feet, stiffness_scale)
    q, lam, residual = SolveStandingEquilibrium(model)
    plant, context = model.plant, model.context
    plant.SetPositions(context, q)
    M = plant.CalcMassMatrix(context)
    K = model.LagrangianHessian(q, lam)
    _, G = model.Constraints(q)
    modes = ConstrainedModes(M, K, G, np.diag(model.damping))
    frequencies = HertzFromOmega(modes.omega, 1e-3)
    base = [HamrPositionIndex(plant, name) for name in BASE_JOINTS]  # x y z yaw pitch roll
    scale = np.array([1.0, 1.0, 1.0, _YAW_ARM, _PITCH_ARM, _ROLL_ARM])
    body_motion = np.empty((len(frequencies), 6))
    fractions = np.empty(len(frequencies))
    labels = []
    for k in range(len(frequencies)):
        shape = modes.shapes[:, k]
        b = shape[base] * scale  # x y z yaw pitch roll, in mm at the feet
        motion = np.array([b[0], b[1], b[2], b[5], b[4], b[3]])
        body_motion[k] = motion / max(np.max(np.abs(motion)), 1e-300)
        fractions[k] = _ChassisEnergyFraction(model, q, shape, M)
        if abs(frequencies[k]) < 1e-3:
            labels.append("free")
        elif fractions[k] < body_threshold:
            labels.append("leg")
        else:
            labels.append(BODY_MOTIONS[int(np.argmax(np.abs(motion)))])
    # Ground reactions: the foot rows of λ are the forces the constraints apply; on the robot the
    # ground pushes with -λ along the constrained axes (∇U + Gᵀλ = 0 ⇒ Gᵀλ balances gravity).
    foot_rows = lam[model.loops.num_constraints() :]
    per_foot = 3 if feet == "pinned" else 1
    forces = np.zeros((4, 3))
    for j in range(4):
        values = -foot_rows[j * per_foot : (j + 1) * per_foot]
        if per_foot == 3:
            forces[j] = values
        else:
            forces[j, 2] = values[0]
    return HamrModes(
        feet=feet,
        q_equilibrium=q,
        body_height=float(q[HamrPositionIndex(plant, "base_z")]),
        foot_forces=forces,
        frequencies_hz=frequencies,
        damping_ratio=modes.damping_ratio,
        shapes=modes.shapes,
        chassis_energy_fraction=fractions,
        body_motion=body_motion,
        labels=labels,
        constraint_rank=modes.constraint_rank,
        gradient_residual=residual,
    )
