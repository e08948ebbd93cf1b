"""The tripod-gait voxel robot (voxel-planes-of-motion.txt sec. 3, Fig. 5): lattice, actuators,
markers, feet, the gait and its inverse kinematics with the POM model, and the FEM check.

Layout (x forward, y left, z up; lattice coordinates in units of p/2, voxel (i, j, k)):
- core: the 2x2x2 block of voxels i, j, k in {0, 1} (sec. 3, "the 2x2x2 voxel structure shown in
  figure 3");
- two front voxels (2, 0, 0) and (2, 1, 0), each hanging from the core by the one face node it
  shares with it, (4, 1, 1) and (4, 3, 1): "independent geometric extensions of the nodes to which
  they are attached" (sec. 3.1);
- four vertical actuators between the bottom and top layers of the core, each joining two
  x- or y-face nodes one pitch apart across the core's central gaps; each drives one plane of
  motion: "right" the y-layer 0, "left" the y-layer 1, "rear" the x-layer 0, "front" the x-layer 1;
- four end-effector markers: the top-face nodes of the four top voxels, each on the intersection
  of two actuators' planes (1 rear right, 2 front right, 3 front left, 4 rear left);
- feet: the bottom-face nodes of the two rear core voxels (3-D printed pads) and of the two front
  voxels ("sticky" pads). The rear feet lie on the same planes as markers 1 and 4 and move like
  them (sec. 3.1).

The gait (sec. 3.1; the POM scripts' 8-step loop): the right and left planes swing in antiphase,
so the front feet lift in turn (up and forward) and push down and back while the rear foot on
the same side shifts the other way (heel to toe); the rear plane narrows the rear stance while a
front foot is up. Inverse kinematics turns the feet's desired displacements into actuator strokes.
"""

import dataclasses

import numpy as np

from drakebots.frame.model import Actuator, RemoveRigidBodyMotion
from drakebots.frame.pom import Control, PomModel
from drakebots.frame.voxel import PITCH, VoxelLattice

# Actuators: name -> (lower node, upper node), lattice coordinates (units of p/2).
ACTUATORS = {
    "right": ((2, 1, 1), (2, 1, 3)),
    "left": ((2, 3, 1), (2, 3, 3)),
    "rear": ((1, 2, 1), (1, 2, 3)),
    "front": ((3, 2, 1), (3, 2, 3)),
}
MARKERS = {
    "marker1": (1, 1, 4),
    "marker2": (3, 1, 4),
    "marker3": (3, 3, 4),
    "marker4": (1, 3, 4),
}
# Feet: name -> (foot node, node it hangs from for the front feet (None for core feet)).
FEET = {
    "rear_right": ((1, 1, 0), None),
    "front_right": ((5, 1, 0), (4, 1, 1)),
    "front_left": ((5, 3, 0), (4, 3, 1)),
    "rear_left": ((1, 3, 0), None),
}
FOOT_PAD_HEIGHT = 0.008  # m, pads under the four feet (so the core's front bottom nodes clear).
GAIT_STEPS = 8
GAIT_LIFT = 0.003  # m, front-foot lift at the attachment node (IK target amplitude)
GAIT_NARROW = 0.0015  # m, rear stance narrowing while a front foot is up


def TripodOccupancy() -> np.ndarray:
    """The robot's occupancy array, shape (3, 2, 2): core plus the two front voxels."""
    occupancy = np.zeros((3, 2, 2), dtype=bool)
    occupancy[:2, :, :] = True
    occupancy[2, :, 0] = True
    return occupancy


def TripodLattice(*, pitch: float = PITCH, timoshenko: bool = False) -> VoxelLattice:
    """The robot's voxel lattice (reference struts by default)."""
    from drakebots.frame.voxel import StrutSection

    return VoxelLattice(TripodOccupancy(), pitch=pitch, section=StrutSection(timoshenko=timoshenko))


def CoreLattice(*, pitch: float = PITCH) -> VoxelLattice:
    """The 2x2x2 core on which the POM model acts (the front voxels are extensions)."""
    return VoxelLattice(np.ones((2, 2, 2), dtype=bool), pitch=pitch)


def TripodActuators(lattice: VoxelLattice, strokes: dict | None = None, mount="clamped"):
    """The four actuators of the robot as frame actuators (strokes in m, extension > 0)."""
    strokes = strokes or {}
    return [
        Actuator(
            lattice.NodeAt(lower),
            lattice.NodeAt(upper),
            stroke=float(strokes.get(name, 0.0)),
            mount=mount,
            name=name,
        )
        for name, (lower, upper) in ACTUATORS.items()
    ]


@dataclasses.dataclass
class TripodPom:
    """The POM model of the robot: controls = the upper node of each actuator (displacement
    +stroke/2 along z), effectors = every core node plus the front feet as extensions.

    front_model: "bridge" (the two front voxels, which share a node, move as one rigid body hung
    from their two attachment nodes) or "translation" (the paper's "geometric extension": each
    front foot translates with its attachment node).
    """

    front_model: str = "bridge"
    pitch: float = PITCH
    actuation_matrices: np.ndarray | None = None

    def __post_init__(self):
        if self.front_model not in ("bridge", "translation"):
            raise ValueError("front_model must be 'bridge' or 'translation'")
        self.core = CoreLattice(pitch=self.pitch)
        self.controls = [
            Control(self.core.NodeAt(upper), 2, name) for name, (_, upper) in ACTUATORS.items()
        ]
        self.model = PomModel(self.core, self.controls, actuation_matrices=self.actuation_matrices)
        self.names = list(ACTUATORS)

    def ControlsFromStrokes(self, strokes: np.ndarray) -> np.ndarray:
        """Control-node displacements (upper node moves +stroke/2 along z), m."""
        return 0.5 * np.asarray(strokes, dtype=float)

    def _FrontRows(self) -> dict:
        """Foot name -> (3, num_controls) map from controls to a front foot's displacement.

        "translation" (the paper): the foot translates with its attachment node. "bridge": the
        two front voxels share a node, so they move as one rigid bridge hung from the two
        attachment nodes: its translation is their mean, its rotations about x and z follow from
        their relative displacement, and its rotation about the attachment line (y) is the mean
        rotation of the two core voxels it hangs from.
        """
        J = self.model.jacobian
        attach = {name: a for name, (_, a) in FEET.items() if a is not None}
        nodes = {name: self.core.NodeAt(a) for name, a in attach.items()}
        blocks = {name: J[3 * n : 3 * n + 3] for name, n in nodes.items()}
        if self.front_model == "translation":
            return {name: block.copy() for name, block in blocks.items()}
        right, left = "front_right", "front_left"
        p_right = np.array(attach[right]) * 0.5 * self.pitch
        p_left = np.array(attach[left]) * 0.5 * self.pitch
        span = p_left - p_right  # along +y
        width = np.linalg.norm(span)
        centre = 0.5 * (p_right + p_left)
        translation = 0.5 * (blocks[right] + blocks[left])
        difference = blocks[left] - blocks[right]
        omega = np.zeros((3, len(self.controls)))
        omega[0] = difference[2] / width  # (omega x span)_z = omega_x * width
        omega[2] = -difference[0] / width  # (omega x span)_x = -omega_z * width
        # Rotation about y: mean of the host voxels' rotations in their y-planes of motion.
        for name, node in nodes.items():
            for i, plane in enumerate(self.model.planes):
                if plane.axis != 1 or self.model.connectivity[i, node] == 0:
                    continue
                local = self.model.node_ids[i, node]
                a = self.model.A[plane.axis][:, local]
                q_per_c = blocks[name][:, i] @ a / max(a @ a, 1e-300)
                omega[1, i] += 0.5 * q_per_c * 2.0 / self.pitch
        rows = {}
        for name, (foot, _) in FEET.items():
            if name not in attach:
                continue
            r = np.array(foot) * 0.5 * self.pitch - centre
            rows[name] = translation + np.cross(omega.T, r).T
        return rows

    def FeetJacobian(self) -> dict:
        """Foot name -> (3, num_controls) map from control displacements to foot displacements."""
        rows = self._FrontRows()
        for name, (foot, attach) in FEET.items():
            if attach is None:
                node = self.core.NodeAt(foot)
                rows[name] = self.model.jacobian[3 * node : 3 * node + 3]
        return {name: rows[name] for name in FEET}

    def MarkersJacobian(self) -> dict:
        """Marker name -> (3, num_controls)."""
        J = self.model.jacobian
        return {
            name: J[3 * self.core.NodeAt(c) : 3 * self.core.NodeAt(c) + 3]
            for name, c in MARKERS.items()
        }

    def ForwardFeetAndMarkers(self, strokes: np.ndarray) -> dict:
        """Name -> displacement (..., 3), m, for strokes (..., 4), m."""
        c = self.ControlsFromStrokes(strokes)
        out = {}
        for name, block in (self.FeetJacobian() | self.MarkersJacobian()).items():
            out[name] = c @ block.T
        return out

    def InverseFeet(self, targets: dict) -> tuple[np.ndarray, dict]:
        """Strokes (T, 4), m, that best produce the feet/marker targets (name -> (T, 3) with NaN
        for free components), and the residual per target, m."""
        blocks = self.FeetJacobian() | self.MarkersJacobian()
        names = list(targets)
        T = len(next(iter(targets.values())))
        J = np.vstack([blocks[n] for n in names])
        strokes = np.zeros((T, len(self.controls)))
        residual = {n: np.full((T, 3), np.nan) for n in names}
        for t in range(T):
            row = np.concatenate([np.asarray(targets[n][t], float) for n in names])
            given = np.isfinite(row)
            c = np.linalg.lstsq(J[given], row[given], rcond=None)[0]
            strokes[t] = 2.0 * c
            full = J @ c - np.where(given, row, np.nan)
            for k, n in enumerate(names):
                residual[n][t] = full[3 * k : 3 * k + 3]
        return strokes, residual


def TripodGaitTargets(
    *, lift: float = GAIT_LIFT, narrow: float = GAIT_NARROW, steps: int = GAIT_STEPS
) -> dict:
    """Desired displacements (m) of the feet over one gait cycle of `steps` keyframes.

    The front feet's attachment nodes rise in turn (antiphase sinusoids: one lifts while the other
    pushes down and back); the rear stance narrows by `narrow` while either front foot is up; the
    front plane holds the top front markers still. Unspecified components are NaN.
    """
    phase = 2.0 * np.pi * np.arange(steps) / steps
    nan = np.full(steps, np.nan)
    right = lift * np.sin(phase)
    left = -right
    spread = narrow * np.abs(np.sin(phase))
    return {
        # The attachment nodes' vertical displacement is the IK target of the front feet.
        "front_right_attach": np.column_stack([nan, nan, right]),
        "front_left_attach": np.column_stack([nan, nan, left]),
        # Rear stance: the right rear foot moves left (+y) and the left one right by `spread`.
        "rear_right": np.column_stack([nan, spread, nan]),
        "marker2": np.column_stack([nan, np.zeros(steps), nan]),
    }


def GaitStrokes(pom: TripodPom, targets: dict) -> tuple[np.ndarray, dict]:
    """Inverse kinematics of the gait: strokes (steps, 4), m, and residuals (m) per target."""
    blocks = pom.FeetJacobian() | pom.MarkersJacobian()
    J = pom.model.jacobian
    for name, (_, attach) in FEET.items():
        if attach is not None:
            node = pom.core.NodeAt(attach)
            blocks[f"{name}_attach"] = J[3 * node : 3 * node + 3]
    names = list(targets)
    steps = len(next(iter(targets.values())))
    M = np.vstack([blocks[n] for n in names])
    strokes = np.zeros((steps, len(pom.controls)))
    residual = {}
    for t in range(steps):
        row = np.concatenate([targets[n][t] for n in names])
        given = np.isfinite(row)
        c = np.linalg.lstsq(M[given], row[given], rcond=None)[0]
        strokes[t] = 2.0 * c
        full = M @ c - row
        for k, n in enumerate(names):
            residual.setdefault(n, np.full((steps, 3), np.nan))[t] = full[3 * k : 3 * k + 3]
    return strokes, residual


@dataclasses.dataclass
class PomFemComparison:
    """POM against FEM for one set of strokes, node by node (m)."""

    node_coords: np.ndarray  # (N, 3) lattice coordinates of the compared nodes
    pom: np.ndarray  # (N, 3)
    fem: np.ndarray  # (N, 3)
    feet_pom: dict
    feet_fem: dict

    @property
    def error(self) -> np.ndarray:
        return np.linalg.norm(self.pom - self.fem, axis=1)


def CompareWithFem(
    strokes: np.ndarray,
    *,
    mount: str = "clamped",
    front_model: str = "bridge",
    actuation_matrices: np.ndarray | None = None,
    timoshenko: bool = False,
    frame=None,
) -> PomFemComparison:
    """POM prediction against the frame FEM of the whole robot for one set of strokes (m).

    mount "clamped" prescribes the control nodes (+-stroke/2, rotations held), the same input the
    POM model takes; "prismatic" lets the actuators float (one node clamped to remove the
    rigid-body modes) and both fields are compared after removing their least-squares rigid motion
    over the core nodes.
    """
    lattice = TripodLattice(timoshenko=timoshenko)
    frame = frame or lattice.MakeFrame()
    pom = TripodPom(front_model=front_model, actuation_matrices=actuation_matrices)
    strokes = np.asarray(strokes, dtype=float)
    actuators = TripodActuators(lattice, dict(zip(pom.names, strokes)), mount=mount)
    clamp = None if mount == "clamped" else lattice.NodeAt((3, 1, 0))
    solution = frame.Solve(actuators=actuators, clamp_node=clamp)
    core_nodes = np.array([lattice.NodeAt(c) for c in pom.core.node_coords])
    fem = solution.translations[core_nodes]
    u_pom = pom.model.Forward(pom.ControlsFromStrokes(strokes))
    feet_pom = pom.ForwardFeetAndMarkers(strokes)
    feet_fem = {}
    for name, (foot, _) in FEET.items():
        feet_fem[name] = solution.translations[lattice.NodeAt(foot)]
    for name, coords in MARKERS.items():
        feet_fem[name] = solution.translations[lattice.NodeAt(coords)]
    if mount != "clamped":
        points = pom.core.nodes
        fem, t, w = RemoveRigidBodyMotion(points, fem)
        for name in feet_fem:
            node = lattice.NodeAt(FEET[name][0] if name in FEET else MARKERS[name])
            feet_fem[name] = feet_fem[name] - (t + np.cross(w, lattice.nodes[node]))
        u_pom, t, w = RemoveRigidBodyMotion(points, u_pom)
        for name in feet_pom:
            node = lattice.NodeAt(FEET[name][0] if name in FEET else MARKERS[name])
            feet_pom[name] = feet_pom[name] - (t + np.cross(w, lattice.nodes[node]))
    return PomFemComparison(pom.core.node_coords, u_pom, fem, feet_pom, feet_fem)
