"""The observations of voxel-planes-of-motion.txt sec. 2.1 (Figs. 1-3), measured on a solution.

An actuator between two nodes one pitch apart along axis a, both on faces normal to f != a, rotates
the f-a squares of the voxel layer normal to d = 3 - f - a: its *plane of motion*. Sec. 2.1 makes
three claims about the resulting displacement field, which `AnalysePattern` measures:

1. the nodes of the plane move with equal magnitude and alternating direction (the rotating-
   squares pattern e_d x r_n of each voxel, with a checkerboard sign);
2. the pattern does not decay with distance: "only up to 4.9 % of displacement is lost to other
   modes" (the "Displacement Dissipation" plot of Fig. 2);
3. nodes outside the actuated plane do not translate: the rotation of the actuated voxels turns
   their out-of-plane nodes, "but this rotation seems to dissipate in the beams without rotating
   the next layer of voxels" (Fig. 3).

Definitions used here (the paper's copy does not state its own):
- control amplitude q0 = (u_b - u_a) . e / 2, half the actuator's extension (invariant under
  rigid motions), e the unit actuator axis;
- amplitude ratio of an in-plane node n: (u_n . d_n) / (q0 e . d_b), where d_n is the node's unit
  pattern direction (checkerboard sign of its voxel times e_d x r_n); 1 for the control nodes;
- displacement dissipation = 1 - amplitude ratio (the magnitude lost along the pattern);
- off-pattern fraction = |u_n - (u_n . d_n) d_n| / |q0| (displacement in other directions);
- layer ratio: the mean rotation amplitude of the voxels of each layer parallel to the plane,
  projected on the same pattern, over q0 (1 for the actuated layer; claim 3 says 0 elsewhere).
All are computed after removing the rigid motion of the whole lattice (fitted by least squares
together with the pattern's amplitude), so supports (one clamped node, a fixed actuator end) do not
enter.

Units: SI (m).
"""

import dataclasses

import numpy as np

from drakebots.errors import InputError
from drakebots.voxel.lattice import AXES, NODE_FACE_AXIS, VoxelLattice
from drakebots.voxel.pom import (
    IdealActuationMatrices,
    PlaneOfMotion,
    _PlaneComponents,
    _VoxelSign,
)

PAPER_MAX_DISSIPATION = 0.049  # sec. 2.1: "only up to 4.9% of displacement is lost"


def NodeSpec(lattice: VoxelLattice, node: int) -> str:
    """The command-line name I:J:K/N of a node (a voxel that holds it and its local id)."""
    voxel, local = lattice.VoxelsOfNode(node)[0]
    i, j, k = (int(c) for c in lattice.voxels[voxel])
    return f"{i}:{j}:{k}/{local}"


def ActuatorPlane(lattice: VoxelLattice, node_a: int, node_b: int) -> PlaneOfMotion:
    """The plane of motion an actuator between two nodes drives (sec. 2.1).

    Raises:
        InputError: the nodes are not one pitch apart along a coordinate axis, or they sit on
            faces normal to that axis (the actuator then stretches voxels, rotating no square).
    """
    delta = lattice.node_coords[node_b] - lattice.node_coords[node_a]
    names = f"{NodeSpec(lattice, node_a)} -> {NodeSpec(lattice, node_b)}"
    if sorted(np.abs(delta).tolist()) != [0, 0, 2]:
        raise InputError(
            f"actuator {names}: the nodes are not one pitch apart along x, y or z, so it drives "
            "no plane of motion (sec. 2.1)"
        )
    axis = int(np.flatnonzero(delta)[0])
    face = int(lattice.face_axis()[node_a])
    if face == axis:
        raise InputError(
            f"actuator {names}: both nodes are on {AXES[axis]}-faces and the actuator pushes "
            f"along {AXES[axis]}: it stretches the voxels between them instead of rotating a "
            "square, so it drives no plane of motion (sec. 2.1)"
        )
    d = 3 - face - axis
    return PlaneOfMotion(axis=d, layer=int((lattice.node_coords[node_a, d] - 1) // 2))


def ValidActuators(lattice: VoxelLattice) -> list[tuple[int, int, int, PlaneOfMotion]]:
    """Every actuator that drives a plane of motion: (node a, node b = a + p e_axis, axis, plane).

    The nodes share a face axis f, lie one pitch apart along an axis a != f, and the actuator
    rotates the f-a squares of their layer.
    """
    out = []
    faces = lattice.face_axis()
    for node in range(lattice.num_nodes):
        for axis in range(3):
            if axis == faces[node]:
                continue
            partner = lattice.NodeAt(lattice.node_coords[node] + 2 * np.eye(3, dtype=int)[axis])
            if partner is not None:
                out.append((node, partner, axis, ActuatorPlane(lattice, node, partner)))
    return out


def DescribeValidActuators(lattice: VoxelLattice, limit: int = 6) -> str:
    """A short list of valid --actuate values, one per plane of motion, most central first."""
    valid = ValidActuators(lattice)
    if not valid:
        return "this lattice has no pair of nodes that drives a plane of motion"
    centre = lattice.nodes.mean(axis=0)

    def Offcentre(item):
        a, b = item[0], item[1]
        return float(np.linalg.norm(0.5 * (lattice.nodes[a] + lattice.nodes[b]) - centre))

    best = {}
    for item in sorted(valid, key=Offcentre):
        best.setdefault((item[3], item[2]), item)
    chosen = sorted(best.values(), key=Offcentre)[:limit]
    text = "; ".join(
        f"node={NodeSpec(lattice, a)},axis={AXES[axis]} ({plane})" for a, _, axis, plane in chosen
    )
    more = len(best) - len(chosen)
    return text + (f"; and {more} more" if more > 0 else "")


@dataclasses.dataclass
class PatternReport:
    """The sec. 2.1 measures of one displacement field (see the module docstring).

    Attributes:
        plane: the plane of motion.
        control_amplitude: q0, m.
        nodes: in-plane nodes (the actuator's connected part of the plane).
        distance: (len(nodes),) distance of each from the actuator's midpoint, m.
        amplitude_ratio: (len(nodes),) (u_n . d_n) / (q0 e . d_b).
        off_pattern: (len(nodes),) off-pattern displacement / |q0|.
        layer_offsets: parallel layers' index offsets from the actuated layer (0 = actuated).
        layer_ratio: mean rotation amplitude of each layer's voxels / q0 (signed).
        layer_ratio_max: largest |amplitude| / |q0| of a voxel of each layer.
        off_plane_nodes: the nodes not in `nodes`.
        off_plane_ratio: |u| / |q0| of each off-plane node.
        translations: (num_nodes, 3) the field measured (rigid motion removed if asked), m.
    """

    plane: PlaneOfMotion
    control_amplitude: float
    nodes: np.ndarray
    distance: np.ndarray
    amplitude_ratio: np.ndarray
    off_pattern: np.ndarray
    layer_offsets: np.ndarray
    layer_ratio: np.ndarray
    layer_ratio_max: np.ndarray
    off_plane_nodes: np.ndarray
    off_plane_ratio: np.ndarray
    translations: np.ndarray

    @property
    def dissipation(self) -> np.ndarray:
        """1 - amplitude ratio per in-plane node."""
        return 1.0 - self.amplitude_ratio

    def DistanceProfile(self, bin_width: float) -> dict:
        """Dissipation against distance, binned (bin_width m): centres, max, mean, count."""
        bins = np.round(self.distance / bin_width).astype(int)
        keys = np.unique(bins)
        return {
            "distance_m": (keys * bin_width).tolist(),
            "max_dissipation": [float(self.dissipation[bins == k].max()) for k in keys],
            "mean_dissipation": [float(self.dissipation[bins == k].mean()) for k in keys],
            "max_off_pattern": [float(self.off_pattern[bins == k].max()) for k in keys],
            "nodes": [int(np.sum(bins == k)) for k in keys],
        }

    def Summary(self) -> dict:
        """The figures of merit (fractions, not percent)."""
        others = self.layer_offsets != 0
        return {
            "plane_of_motion": str(self.plane),
            "nodes_in_plane": int(len(self.nodes)),
            "control_amplitude_m": self.control_amplitude,
            "amplitude_ratio_min": float(self.amplitude_ratio.min()),
            "amplitude_ratio_max": float(self.amplitude_ratio.max()),
            "max_dissipation": float(self.dissipation.max()),
            "max_off_pattern": float(self.off_pattern.max()),
            "paper_max_dissipation": PAPER_MAX_DISSIPATION,
            "alternating_pattern": bool(np.all(self.amplitude_ratio > 0)),
            "max_off_plane_ratio": float(self.off_plane_ratio.max(initial=0.0)),
            "layer_offsets": self.layer_offsets.tolist(),
            "layer_ratio": self.layer_ratio.tolist(),
            "max_other_layer_ratio": float(np.abs(self.layer_ratio_max[others]).max(initial=0.0)),
        }


def _RemoveRigidMotionKeepingPattern(points, u, pattern) -> np.ndarray:
    """u minus its rigid part t + w x (p - c), fitted by least squares jointly with an amplitude
    of the pattern field, so that the pattern's own rigid-motion content (a checkerboard on an odd
    lattice is not balanced) is not removed with it."""
    centre = points.mean(axis=0)
    r = points - centre
    columns = []
    for k in range(3):
        t = np.zeros_like(points)
        t[:, k] = 1.0
        columns.append(t.ravel())
    for k in range(3):
        columns.append(np.cross(np.eye(3)[k], r).ravel())
    columns.append(pattern.ravel())
    A = np.column_stack(columns)
    coefficients = np.linalg.lstsq(A, u.ravel(), rcond=None)[0]
    return u - (A[:, :6] @ coefficients[:6]).reshape(u.shape)


def AnalysePattern(
    lattice: VoxelLattice,
    translations: np.ndarray,
    node_a: int,
    node_b: int,
    *,
    remove_rigid_motion: bool = True,
) -> PatternReport:
    """Measures the sec. 2.1 claims on a displacement field of an actuated lattice.

    Args:
        lattice: the voxel lattice.
        translations: (num_nodes, 3) node translations, m (or (num_nodes, 6)).
        node_a, node_b: the actuator's nodes (b = a + p e, see ActuatorPlane).
        remove_rigid_motion: subtract the rigid motion first (fitted by least squares jointly
            with the rotating-squares pattern; needed when supports, e.g. one clamped node,
            define the frame, not needed for the clamped actuator mount).

    Raises:
        InputError: the actuator drives no plane of motion.
    """
    plane = ActuatorPlane(lattice, node_a, node_b)
    u = np.asarray(translations, dtype=float)[:, :3]
    d = plane.axis
    pattern = IdealActuationMatrices()[d]  # (3, 6): unit columns e_d x r_n
    e = lattice.nodes[node_b] - lattice.nodes[node_a]
    e = e / np.linalg.norm(e)
    in_plane_local = np.flatnonzero(NODE_FACE_AXIS != d)
    signs = np.array([_VoxelSign(v, d) for v in lattice.voxels])
    # The actuator's connected part of its layer (a gap in the layer stops the pattern).
    components = _PlaneComponents(lattice, plane)
    holder = next(v for v, _ in lattice.VoxelsOfNode(node_b) if lattice.voxels[v, d] == plane.layer)
    component = components[tuple(lattice.voxels[holder])]
    members = np.array(
        [
            v
            for v in range(lattice.num_voxels)
            if components.get(tuple(lattice.voxels[v])) == component
            and lattice.voxels[v, d] == plane.layer
        ]
    )
    # Pattern direction of every in-plane node (shared nodes get the same one from both sides).
    node_ids = lattice.voxel_nodes[members][:, in_plane_local].ravel()
    directions = (signs[members, None, None] * pattern.T[None, in_plane_local, :]).reshape(-1, 3)
    nodes, first = np.unique(node_ids, return_index=True)
    directions = directions[first]
    if remove_rigid_motion:
        field = np.zeros_like(u)
        field[nodes] = directions
        u = _RemoveRigidMotionKeepingPattern(lattice.nodes, u, field)
    q0 = 0.5 * float((u[node_b] - u[node_a]) @ e)
    local_b = lattice.voxel_nodes[holder].tolist().index(node_b)
    reference = q0 * float(e @ (signs[holder] * pattern[:, local_b]))
    along = np.sum(u[nodes] * directions, axis=1)
    off = u[nodes] - along[:, None] * directions
    centre = 0.5 * (lattice.nodes[node_a] + lattice.nodes[node_b])
    # Rotation amplitude of every voxel about d (same pattern), grouped by layer index along d.
    per_voxel = (
        signs
        * np.einsum(
            "vnk,kn->v", u[lattice.voxel_nodes][:, in_plane_local], pattern[:, in_plane_local]
        )
        / len(in_plane_local)
        / reference
    )
    offsets = lattice.voxels[:, d] - plane.layer
    layer_offsets = np.unique(offsets)
    off_plane = np.setdiff1d(np.arange(lattice.num_nodes), nodes)
    return PatternReport(
        plane=plane,
        control_amplitude=q0,
        nodes=nodes,
        distance=np.linalg.norm(lattice.nodes[nodes] - centre, axis=1),
        amplitude_ratio=along / reference,
        off_pattern=np.linalg.norm(off, axis=1) / abs(q0),
        layer_offsets=layer_offsets,
        layer_ratio=np.array([per_voxel[offsets == k].mean() for k in layer_offsets]),
        layer_ratio_max=np.array([np.abs(per_voxel[offsets == k]).max() for k in layer_offsets]),
        off_plane_nodes=off_plane,
        off_plane_ratio=np.linalg.norm(u[off_plane], axis=1) / abs(q0),
        translations=u,
    )
