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

The gait (sec. 3.1; the POM scripts' 8-step loop) is specified as foot paths and turned into
actuator strokes by the POM inverse kinematics. Four scalar quantities of the feet and markers
(GAIT_QUANTITIES; linear in the node displacements) are prescribed per keyframe:

- clearance: height of the front right foot above the front left one (> 0: the right one swings);
- crouch: mean height of the front feet relative to the body (the body front sinks onto them);
- rear_width: change of the rear stance width (rear feet, lateral);
- front_width: change of the spacing of the front markers 2 and 3 (held at zero: the front plane
  stays still).

Why these, and not a fore-aft path of the front feet: a front foot hangs from one node of its
front voxel (sec. 3.1, "independent geometric extensions"), and with vertical actuators in the
core's four planes of motion its fore-aft motion is tied to the lifts: per mm of the right
actuator's stroke both front feet move forward (POM 0.25 mm each; frame FEM 0.35 mm right, 0.24 mm
left) while the right one rises 0.5 mm more than the left (FEM 0.61 mm), and symmetrically for the
left actuator; the front actuator moves both feet alike. So when the swing foot comes down level
with the stance foot, it is also level with it fore and aft: a step of the front feet alone has
length zero, whatever the strokes. What the lattice can do is turn about the sticky stance
foot: with one front foot up, the robot stands on a tripod (in the simulation the stance front
foot carries 0.42 of the weight, the diagonal rear foot 0.49, the other rear foot 0.09), and
relative motion of that diagonal rear foot yaws the body about the stance foot, which swings the
lifted foot forward (a step of about the front feet's spacing times the yaw).
The eight keyframes (one half cycle per front foot):

    0 stand          both front feet down, rear stance wide
    1 lift right     clearance +c, crouch c: the right front foot rises (its rear foot
                     shifts back, "heel"), the body yaws about the left front foot
    2 pivot          rear stance narrows by n: the body yaws further about the left front foot,
                     the lifted right front foot swings forward
    3 plant right    clearance 0, crouch 2c: the body sinks onto the right front foot (the
                     left actuator extends; the rear foot it moves stands right behind the
                     pivot, so the body does not turn back)
    (3 -> 4)         both sticky front feet down: the body pushes up (crouch 0) and the rear
                     stance widens (the rear feet slide; the front feet hold the yaw)
    4-7              the same with left and right exchanged

Running the foot positions in reverse (ReverseGait: keyframes 0, 7, 6, ..., 1) reverses every
yaw about the same stance foot, so the robot walks backward (sec. 3.1: "Backward steps can be
achieved by running the foot positions in reverse").
"""

import dataclasses
import functools

import numpy as np

from drakebots.frame.model import Actuator, RemoveRigidBodyMotion
from drakebots.voxel.lattice import PITCH, VoxelLattice
from drakebots.voxel.pom import Control, PomModel

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
GAIT_CLEARANCE = 0.004  # m, swing-foot clearance above the stance foot (POM; the keyframe "c")
GAIT_NARROW = 0.008  # m, rear stance narrowing while a front foot swings (the keyframe "n")
GAIT_KEYFRAMES = (
    "stand",
    "lift right",
    "pivot on left",
    "plant right",
    "stand",
    "lift left",
    "pivot on right",
    "plant left",
)
# Gait quantities: name -> ((point, axis, weight), ...), a weighted sum of displacement components
# of feet and markers (axis 0 x, 1 y, 2 z), m.
GAIT_QUANTITIES = {
    "clearance": (("front_right", 2, 1.0), ("front_left", 2, -1.0)),
    "crouch": (("front_right", 2, 0.5), ("front_left", 2, 0.5)),
    "rear_width": (("rear_left", 1, 1.0), ("rear_right", 1, -1.0)),
    "front_width": (("marker3", 1, 1.0), ("marker2", 1, -1.0)),
}


def TripodOccupancy() -> np.ndarray:
    """The robot's occupancy array, shape (3, 2, 2): core plus the two front voxels."""
    occupancy = np.zeros((3, 2, 2), dtype=bool)
    occupancy[:2, :, :] = True
    occupancy[2, :, 0] = True
    return occupancy


def TripodLattice(*, pitch: float = PITCH, timoshenko: bool = False) -> VoxelLattice:
    """The robot's voxel lattice (reference struts by default)."""
    from drakebots.voxel.lattice import StrutSection

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


def TripodGaitTargets(*, clearance: float = GAIT_CLEARANCE, narrow: float = GAIT_NARROW) -> dict:
    """The gait's foot paths: quantity name (GAIT_QUANTITIES) -> (8,) values per keyframe, m.

    Args:
        clearance: swing-foot clearance c above the stance foot, m (> 0).
        narrow: rear stance narrowing n while a front foot swings, m (>= 0).
    """
    c, n = float(clearance), float(narrow)
    return {
        "clearance": np.array([0.0, c, c, 0.0, 0.0, -c, -c, 0.0]),
        "crouch": np.array([0.0, c, c, 2 * c, 0.0, c, c, 2 * c]),
        "rear_width": np.array([0.0, 0.0, -n, -n, 0.0, 0.0, -n, -n]),
        "front_width": np.zeros(GAIT_STEPS),
    }


def ReverseGait(keyframes):
    """The keyframes run in reverse from the same start: 0, K-1, K-2, ..., 1 (along axis 0).

    Works on a (K, ...) array or on a dict of them (foot paths or strokes)."""
    if isinstance(keyframes, dict):
        return {name: ReverseGait(value) for name, value in keyframes.items()}
    keyframes = np.asarray(keyframes)
    return np.concatenate([keyframes[:1], keyframes[:0:-1]], axis=0)


def GaitQuantityMatrix(pom: TripodPom) -> tuple[list, np.ndarray]:
    """(quantity names, M (num_quantities, num_controls)): quantity = M @ control displacements."""
    blocks = pom.FeetJacobian() | pom.MarkersJacobian()
    names = list(GAIT_QUANTITIES)
    M = np.zeros((len(names), len(pom.controls)))
    for row, name in enumerate(names):
        for point, axis, weight in GAIT_QUANTITIES[name]:
            M[row] += weight * blocks[point][axis]
    return names, M


def GaitQuantities(pom: TripodPom, strokes: np.ndarray) -> dict:
    """Forward kinematics of the gait quantities: name -> (...,) values for strokes (..., 4), m."""
    names, M = GaitQuantityMatrix(pom)
    values = pom.ControlsFromStrokes(strokes) @ M.T
    return {name: values[..., k] for k, name in enumerate(names)}


def GaitStrokes(pom: TripodPom, targets: dict) -> tuple[np.ndarray, dict]:
    """Inverse kinematics of the gait (sec. 2.2, Eq. 1 solved for the controls).

    Args:
        pom: the robot's POM model.
        targets: quantity name (GAIT_QUANTITIES) -> (K,) values per keyframe, m (a subset may be
            given; the others are free).

    Returns:
        (strokes (K, 4), m, in ACTUATORS order; residual: name -> (K,) IK residual, m).

    Raises:
        ValueError: a target names an unknown quantity.
    """
    names, M = GaitQuantityMatrix(pom)
    unknown = sorted(set(targets) - set(names))
    if unknown:
        raise ValueError(f"unknown gait quantities {unknown}; known: {names}")
    given = [names.index(n) for n in targets]
    Y = np.column_stack([np.asarray(targets[n], dtype=float) for n in targets])  # (K, q)
    controls = np.linalg.lstsq(M[given], Y.T, rcond=None)[0].T  # (K, num_controls)
    achieved = controls @ M[given].T
    residual = {n: achieved[:, k] - Y[:, k] for k, n in enumerate(targets)}
    return 2.0 * controls, residual


def FemFeetMatrix(*, timoshenko: bool = False) -> dict:
    """Frame-FEM displacement of every foot and marker per unit stroke of each actuator.

    Prismatic mounts (the actuators float; node (3, 1, 0) clamped), then the least-squares rigid
    motion of the core nodes removed: the same body frame as `PomFeetMatrix`. Computed once per
    process (four frame solves, ~0.3 s) and copied out.

    Returns:
        name -> (3, 4): displacement (m) per m of stroke, columns in ACTUATORS order.
    """
    return {name: block.copy() for name, block in _FemFeetMatrix(timoshenko).items()}


@functools.cache
def _FemFeetMatrix(timoshenko: bool) -> dict:
    lattice = TripodLattice(timoshenko=timoshenko)
    frame = lattice.MakeFrame()
    core = CoreLattice()
    core_nodes = np.array([lattice.NodeAt(c) for c in core.node_coords])
    points = {n: lattice.NodeAt(FEET[n][0]) for n in FEET} | {
        n: lattice.NodeAt(c) for n, c in MARKERS.items()
    }
    out = {name: np.zeros((3, len(ACTUATORS))) for name in points}
    for k, actuator in enumerate(ACTUATORS):
        actuators = TripodActuators(lattice, {actuator: 1e-3}, mount="prismatic")
        u = frame.Solve(actuators=actuators, clamp_node=lattice.NodeAt((3, 1, 0))).translations
        _, t, w = RemoveRigidBodyMotion(lattice.nodes[core_nodes], u[core_nodes])
        for name, node in points.items():
            out[name][:, k] = (u[node] - t - np.cross(w, lattice.nodes[node])) / 1e-3
    return out


def PomFeetMatrix(pom: TripodPom | None = None) -> dict:
    """POM displacement of every foot and marker per unit stroke, with the least-squares rigid
    motion of the core nodes removed (the body frame of `FemFeetMatrix` and of the simulation).

    Returns:
        name -> (3, 4): displacement (m) per m of stroke, columns in ACTUATORS order.
    """
    pom = pom or TripodPom()
    lattice = TripodLattice(pitch=pom.pitch)
    points = {n: lattice.nodes[lattice.NodeAt(FEET[n][0])] for n in FEET} | {
        n: lattice.nodes[lattice.NodeAt(c)] for n, c in MARKERS.items()
    }
    unit = pom.ForwardFeetAndMarkers(np.eye(len(pom.controls)))  # name -> (4, 3)
    core = pom.model.Forward(pom.ControlsFromStrokes(np.eye(len(pom.controls))))  # (4, N, 3)
    out = {}
    for name, p in points.items():
        columns = []
        for k in range(len(pom.controls)):
            _, t, w = RemoveRigidBodyMotion(pom.core.nodes, core[k])
            columns.append(unit[name][k] - t - np.cross(w, p))
        out[name] = np.array(columns).T
    return out


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
