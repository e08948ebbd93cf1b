"""The Planes-of-Motion (POM) kinematic model of actuated voxel lattices.

Paper: voxel-planes-of-motion.txt (shared/papers).

Section 2.1 observes that a linear actuator rotates one square of each voxel in a *plane of
motion*: the layer of voxels normal to one axis d that contains the actuated nodes. Adjacent voxels
of the layer counter-rotate (the rotating-squares mechanism), so every node of the plane moves by
the same magnitude with the direction alternating along each axis, and nodes off the plane do not
translate. Section 2.2 turns this into a linear map from control-node displacements c to
end-effector displacements u (Eq. 1):

    u_j = sum_i C_ij * a_{d_i}[:, n_j] * m_i c_i

- a_d (3 x 6) is the actuation matrix of actuation dimension d (the axis of the rotating square):
  column n is the displacement of node n of a voxel of the plane for a unit rotation amplitude.
  `DeriveActuationMatrices` measures the three matrices with the frame FEM on a 2x2 formation, as
  the authors did with PFEA; `IdealActuationMatrices` is the rigid-rotation pattern e_d x r_n.
- C_ij in {-1, 0, +1}: zero when node j is not on control i's plane of motion, else the parity of
  the grid-position difference of their voxels within the plane (alternating rotations) times the
  orientation of the control node's own column.
- m_i c_i: the control displacement along its actuation axis, scaled by the control node's own
  actuation-matrix entry so that the model reproduces it exactly ("masked control displacement").

Forward kinematics evaluates the map; inverse kinematics solves the same linear map for c by least
squares ("the forward and inverse kinematic models ... take the same form", sec. 2.2); the
"lateral kinematics" (sec. 3.1) is their composition: targets on some nodes -> actuators -> every
other node. Two control nodes on one plane of motion would drive one degree of freedom twice: the
model reports that as over-determined.

Lattice coordinates and node numbering are those of drakebots.voxel.lattice. Units: displacements in
whatever length unit the caller uses (the model is linear and scale-free).
"""

import dataclasses

import numpy as np

from drakebots.errors import InputError
from drakebots.frame.model import Actuator
from drakebots.voxel.lattice import AXES, NODE_FACE_AXIS, NODE_OFFSETS, CubicLattice, VoxelLattice


def IdealActuationMatrices() -> np.ndarray:
    """(3, 3, 6) rigid-rotation actuation matrices: a_d[:, n] = e_d x r_n (r_n unit offset)."""
    A = np.zeros((3, 3, 6))
    for d in range(3):
        A[d] = np.cross(np.eye(3)[d], NODE_OFFSETS.astype(float)).T
    return A


@dataclasses.dataclass(frozen=True)
class PlaneOfMotion:
    """A layer of voxels normal to `axis` at grid index `layer` whose `axis`-squares rotate."""

    axis: int
    layer: int

    def __str__(self) -> str:
        axis = AXES[self.axis]
        return f"{axis}-plane {self.layer} (voxels with {axis} index {self.layer})"


def ControlPlane(lattice: VoxelLattice, node: int, actuation_axis: int) -> PlaneOfMotion:
    """The plane of motion a control node drives when displaced along `actuation_axis`.

    The node's face axis f and the actuation axis a span the rotating square, so the plane's
    normal is the third axis d (sec. 2.1).

    Raises:
        InputError: a displacement along the node's own face axis rotates no square.
    """
    face = int(lattice.face_axis()[node])
    if actuation_axis == face:
        raise InputError(
            f"node {tuple(lattice.node_coords[node])} is on a {AXES[face]}-face; a displacement "
            f"along {AXES[face]} stretches its voxels instead of rotating a square (no plane of "
            "motion)"
        )
    d = 3 - face - actuation_axis
    return PlaneOfMotion(axis=d, layer=int((lattice.node_coords[node, d] - 1) // 2))


def PlaneNodes(lattice: VoxelLattice, plane: PlaneOfMotion) -> np.ndarray:
    """Indices of the nodes that translate when the plane's squares rotate."""
    coords = lattice.node_coords
    on = (coords[:, plane.axis] == 2 * plane.layer + 1) & (lattice.face_axis() != plane.axis)
    return np.flatnonzero(on)


def _VoxelSign(voxel: np.ndarray, axis: int) -> int:
    """+1 / -1 checkerboard parity of a voxel within a plane normal to `axis`."""
    in_plane = [k for k in range(3) if k != axis]
    return 1 if int(voxel[in_plane[0]] + voxel[in_plane[1]]) % 2 == 0 else -1


def _NodeInPlane(lattice: VoxelLattice, node: int, plane: PlaneOfMotion):
    """[(voxel grid position, local id)] of the voxels of `plane` that hold `node`."""
    out = []
    for v, local in lattice.VoxelsOfNode(node):
        if lattice.voxels[v, plane.axis] == plane.layer:
            out.append((lattice.voxels[v], local))
    return out


def _PlaneComponents(lattice: VoxelLattice, plane: PlaneOfMotion) -> dict:
    """Voxel grid position -> connected-component id within the plane (voxels that share an
    in-plane node move together; a gap stops the pattern)."""
    members = [tuple(v) for v in lattice.voxels.tolist() if v[plane.axis] == plane.layer]
    member_set = set(members)
    component, next_id = {}, 0
    in_plane = [k for k in range(3) if k != plane.axis]
    for start in members:
        if start in component:
            continue
        stack = [start]
        component[start] = next_id
        while stack:
            v = stack.pop()
            for k in in_plane:
                for step in (-1, 1):
                    w = list(v)
                    w[k] += step
                    w = tuple(w)
                    if w in member_set and w not in component:
                        component[w] = next_id
                        stack.append(w)
        next_id += 1
    return component


@dataclasses.dataclass
class Control:
    """A control node: node index, actuation axis (0 x, 1 y, 2 z), and a name."""

    node: int
    axis: int
    name: str = ""


class PomModel:
    """The POM map from control displacements to node displacements (Eq. 1).

    Args:
        lattice: the voxel lattice.
        controls: the control nodes with their actuation axes.
        effectors: node indices whose displacements the model predicts (default: every node).
        actuation_matrices: (3, 3, 6); default `IdealActuationMatrices()`.

    Raises:
        InputError: a control node's axis rotates no square, or two control nodes share a plane of
            motion (over-determined).
    """

    def __init__(
        self,
        lattice: VoxelLattice,
        controls: list[Control],
        effectors: np.ndarray | None = None,
        actuation_matrices: np.ndarray | None = None,
    ):
        self.lattice = lattice
        self.controls = list(controls)
        self.effectors = (
            np.arange(lattice.num_nodes) if effectors is None else np.asarray(effectors, int)
        )
        self.A = IdealActuationMatrices() if actuation_matrices is None else actuation_matrices
        self.planes = [ControlPlane(lattice, c.node, c.axis) for c in self.controls]
        components = {}
        owner = {}
        for i, (control, plane) in enumerate(zip(self.controls, self.planes)):
            comp = components.setdefault(plane, _PlaneComponents(lattice, plane))
            holders = _NodeInPlane(lattice, control.node, plane)
            key = (plane, comp[tuple(holders[0][0])])
            if key in owner:
                j = owner[key]
                raise InputError(
                    f"control nodes {self._Name(j)} and {self._Name(i)} share the plane of "
                    f"motion {plane}: it has one degree of freedom, so the model is "
                    "over-determined"
                )
            owner[key] = i
        self.connectivity, self.node_ids = self._Connectivity(components)
        self.jacobian = self._Jacobian()

    def _Name(self, i: int) -> str:
        control = self.controls[i]
        coords = tuple(int(c) for c in self.lattice.node_coords[control.node])
        return f"'{control.name or i}' at {coords}"

    def _Connectivity(self, components) -> tuple[np.ndarray, np.ndarray]:
        """C (num_controls, num_effectors) in {-1, 0, 1} and the end effectors' in-voxel node
        ids per control (-1 where C is 0)."""
        lattice = self.lattice
        C = np.zeros((len(self.controls), len(self.effectors)), dtype=int)
        ids = np.full(C.shape, -1, dtype=int)
        for i, (control, plane) in enumerate(zip(self.controls, self.planes)):
            comp = components[plane]
            voxel_c, local_c = _NodeInPlane(lattice, control.node, plane)[0]
            sign_c = _VoxelSign(voxel_c, plane.axis)
            orientation = np.sign(self.A[plane.axis][control.axis, local_c])
            on_plane = set(PlaneNodes(lattice, plane).tolist())
            for j, node in enumerate(self.effectors):
                if node not in on_plane:
                    continue
                holders = _NodeInPlane(lattice, node, plane)
                if not holders or comp[tuple(holders[0][0])] != comp[tuple(voxel_c)]:
                    continue
                voxel_e, local_e = holders[0]
                C[i, j] = _VoxelSign(voxel_e, plane.axis) * sign_c * int(orientation)
                ids[i, j] = local_e
        return C, ids

    def _Jacobian(self) -> np.ndarray:
        """J (3 num_effectors, num_controls): u = J c, assembled from C, a_d and the masks."""
        J = np.zeros((3 * len(self.effectors), len(self.controls)))
        for i, (control, plane) in enumerate(zip(self.controls, self.planes)):
            a = self.A[plane.axis]
            holders = _NodeInPlane(self.lattice, control.node, plane)
            mask = 1.0 / abs(a[control.axis, holders[0][1]])
            for j in np.flatnonzero(self.connectivity[i]):
                J[3 * j : 3 * j + 3, i] = self.connectivity[i, j] * a[:, self.node_ids[i, j]] * mask
        return J

    def Forward(self, control_displacements: np.ndarray) -> np.ndarray:
        """End-effector displacements (num_effectors, 3) [or (T, num_effectors, 3)] from control
        displacements along their axes (num_controls,) [or (T, num_controls)]."""
        c = np.asarray(control_displacements, dtype=float)
        u = c @ self.jacobian.T
        return u.reshape(c.shape[:-1] + (len(self.effectors), 3))

    def Inverse(
        self, targets: np.ndarray, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Control displacements that best produce target effector displacements.

        Args:
            targets: (num_effectors, 3) [or (T, num_effectors, 3)] desired displacements; NaN
                marks components that are free (not specified).
            weights: optional (num_effectors, 3) weights of the specified components.

        Returns:
            (controls (num_controls,) [or (T, num_controls)], residual of the specified
            components, same shape as targets with NaN where free).
        """
        targets = np.asarray(targets, dtype=float)
        flat = targets.reshape(-1, 3 * len(self.effectors))
        w = np.ones(3 * len(self.effectors)) if weights is None else np.ravel(weights)
        controls = np.zeros((len(flat), len(self.controls)))
        residual = np.full(flat.shape, np.nan)
        for t, row in enumerate(flat):
            given = np.isfinite(row)
            J = self.jacobian[given] * w[given, None]
            controls[t] = np.linalg.lstsq(J, row[given] * w[given], rcond=None)[0]
            residual[t, given] = self.jacobian[given] @ controls[t] - row[given]
        shape = targets.shape[:-2] + (len(self.controls),)
        return controls.reshape(shape), residual.reshape(targets.shape)


def ReferenceFormation(axis: int) -> tuple[VoxelLattice, Actuator, int, int]:
    """The 2x2 formation of sec. 2.1 (Fig. 1) normal to `axis`, with its actuator.

    The actuator joins the two nodes across the formation's central gap that share a face axis f
    (the first in-plane axis); it extends along the other in-plane axis a.

    Returns:
        (lattice, actuator, face axis f, actuation axis a).
    """
    in_plane = [k for k in range(3) if k != axis]
    f, a = in_plane
    size = [2, 2, 2]
    size[axis] = 1
    lattice = CubicLattice(tuple(size))
    coords_a = np.ones(3, dtype=int)
    coords_a[f] = 2
    coords_b = coords_a.copy()
    coords_b[a] += 2
    actuator = Actuator(
        lattice.NodeAt(coords_a), lattice.NodeAt(coords_b), mount="clamped", name="reference"
    )
    return lattice, actuator, f, a


def DeriveActuationMatrices(
    *, stroke: float = 1e-3, mount: str = "clamped", timoshenko: bool = False
) -> tuple[np.ndarray, dict]:
    """The three actuation matrices measured with the frame FEM, as the authors did with PFEA.

    For each actuation dimension d, the 2x2 formation normal to d is actuated (sec. 2.1, Fig. 1)
    and each voxel's node displacements are divided by the plane's rotation amplitude q and the
    voxel's checkerboard sign; the four voxels are averaged. q is the projection of the in-plane
    node displacements onto the rigid-rotation pattern, so a_d equals the ideal matrix where the
    voxels rotate rigidly and differs where they bend.

    Args:
        stroke: actuator stroke of the FEM runs, m (the model is linear; any small value).
        mount: actuator mount of the FEM runs (see drakebots.frame.model).
        timoshenko: include shear flexibility of the struts.

    Returns:
        (A (3, 3, 6), details per dimension: rotation amplitude, per-voxel spread).
    """
    ideal = IdealActuationMatrices()
    A = np.zeros((3, 3, 6))
    details = {}
    for d in range(3):
        lattice, actuator, _, _ = ReferenceFormation(d)
        if timoshenko:
            from drakebots.voxel.lattice import StrutSection

            lattice.section = StrutSection(timoshenko=True)
        actuator.stroke, actuator.mount = stroke, mount
        solution = lattice.MakeFrame().Solve(actuators=[actuator])
        u = solution.translations
        per_voxel = np.array(
            [_VoxelSign(v, d) * u[lattice.voxel_nodes[k]].T for k, v in enumerate(lattice.voxels)]
        )  # (4, 3, 6)
        in_plane = NODE_FACE_AXIS != d
        q = float(np.mean(np.sum(per_voxel[:, :, in_plane] * ideal[d][:, in_plane], axis=1)))
        A[d] = per_voxel.mean(axis=0) / q
        details[AXES[d]] = {
            "rotation_amplitude_m": q,
            "voxel_spread": float(np.max(np.abs(per_voxel / q - A[d]))),
            "max_deviation_from_ideal": float(np.max(np.abs(A[d] - ideal[d]))),
        }
    return A, details
