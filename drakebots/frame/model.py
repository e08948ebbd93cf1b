"""A 3-D frame structure: nodes, beam elements, sparse assembly, supports, loads, linear actuators,
static solves (linear or second-order) and vibration modes.

The global vector holds six degrees of freedom per node, (u_x, u_y, u_z, theta_x, theta_y,
theta_z), node after node. Assembly is vectorised at the level of 6x6 node blocks: the sparsity
pattern, a 0/1 matrix summing element sub-blocks into node blocks and the map from blocks to the
compressed sparse rows are made once per frame, and every matrix of a frame has that one pattern,
so its factorisation's analysis carries over (second-order iterations, repeated solves). Element
matrices are computed once per distinct geometry (a voxel lattice has 9).

Measured end to end on the 2744-voxel lattice (52,920 unknowns; scripts/bench_voxel.py, best of
3, on the 2-core machine, idle, 2026-11-27): CubicLattice + MakeFrame + Solve take 1.21 s wall
with PARDISO on both cores (FactorizationThreads' default) against 1.51 s on one thread, of which
PARDISO's numeric factorisation 0.61 s against 1.14 s. Before the block assembly and the free-DOF
selection below, the same solve took 1.57 s wall at load 0.2 (about 4 s when issue 52 was filed).

A linear actuator (voxel-planes-of-motion.txt sec. 2.1) changes the distance between two nodes by a
prescribed stroke, or pushes them apart with a prescribed force. Its mount decides what else it
holds:

  - "axial":     only the distance (a pin-ended actuator, one constraint);
  - "prismatic": a rigid prismatic joint between the nodes: relative translation only along the
                 actuator axis, no relative rotation (the actuator body floats with the structure);
  - "clamped":   the paper's simulation setting: each node moves by half the stroke along the axis
                 and its rotations and lateral translations are held ("the actuation strictly
                 displaces a single, linear degree of freedom of the selected pair", sec. 2.1).

Prescribed relative displacements are linear constraints C u = g enforced with Lagrange
multipliers through the Schur complement of the factorised stiffness, so the multipliers are the
actuator forces.

Units: SI (m, N, Pa, kg, rad).
"""

import dataclasses
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from drakebots.frame.cholesky import (
    NestedDissectionTree,
    NotPositiveDefiniteError,
    SupernodalCholesky,
)
from drakebots.frame.elements import (
    ElementRotations,
    LocalConsistentMass,
    LocalGeometricStiffness,
    LocalStiffness,
    Section,
    ToGlobal,
    TransformVectors,
)
from drakebots.runtime import FRAME_SOLVERS

DOFS_PER_NODE = 6
MOUNTS = ("axial", "prismatic", "clamped")
JOINTS = ("rigid", "pinned")
# Pinned joints leave zero-energy mechanisms; a Tikhonov term this small (relative to the mean
# axial stiffness EA/L) on the translations picks the minimum-norm motion among them.
PINNED_REGULARIZATION = 1e-9
UNSUPPORTED = (
    "the frame is not supported against rigid-body motion (singular stiffness); "
    "add supports or clamp one node"
)


@dataclasses.dataclass
class Actuator:
    """A linear actuator between two nodes of a frame.

    Attributes:
        node_a, node_b: node indices; the axis points from a to b.
        stroke: change of the distance between the nodes, m (extension positive).
        force: when not None, the actuator pushes the nodes apart with this force, N, and
            `stroke` is ignored.
        mount: "axial", "prismatic" or "clamped" (see the module docstring).
        name: for reports.
    """

    node_a: int
    node_b: int
    stroke: float = 0.0
    force: float | None = None
    mount: str = "prismatic"
    name: str = ""


@dataclasses.dataclass
class StaticSolution:
    """Result of a static solve.

    Attributes:
        displacements: (num_nodes, 6) translations (m) and rotations (rad) per node.
        reactions: (num_nodes, 6) support reactions (N, N*m), zero at free DOFs.
        actuator_forces: (num_actuators,) axial force each actuator exerts, N (pushing apart > 0).
        axial_forces: (num_elements,) element axial forces, N (tension > 0).
        strain_energy: J.
        iterations: second-order iterations done (0 for a linear solve).
        converged: the second-order iterations converged (True for a linear solve).
        seconds: {"assemble", "factorize", "solve"} wall times.
    """

    displacements: np.ndarray
    reactions: np.ndarray
    actuator_forces: np.ndarray
    axial_forces: np.ndarray
    strain_energy: float
    iterations: int = 0
    converged: bool = True
    seconds: dict = dataclasses.field(default_factory=dict)

    @property
    def translations(self) -> np.ndarray:
        return self.displacements[:, :3]

    @property
    def rotations(self) -> np.ndarray:
        return self.displacements[:, 3:]


class Frame:
    """A frame of straight beams sharing one cross-section.

    Joints: "rigid" (the default, as in Frame3DD/PFEA: element ends are clamped to their nodes, so
    node rotations couple the struts that meet there) or "pinned" (ideal ball joints: each element
    is an axial bar, EA/L only; the node rotations carry no stiffness and are held at zero, and a
    tiny Tikhonov term PINNED_REGULARIZATION * mean(EA/L) on the translations picks the
    minimum-norm motion among the zero-energy mechanisms a pin-jointed lattice has). Pinned
    frames are for stroke-driven (kinematic) studies; a force on a mechanism has no finite
    static response.

    Args:
        nodes: (num_nodes, 3) node positions, m.
        elements: (num_elements, 2) node index pairs.
        section: cross-section and material of every element.
        node_masses: optional (num_nodes,) point masses at the nodes (connectors), kg.
        joints: "rigid" or "pinned" (see above).
    """

    def __init__(
        self,
        nodes: np.ndarray,
        elements: np.ndarray,
        section: Section,
        *,
        node_masses: np.ndarray | None = None,
        joints: str = "rigid",
    ):
        self.nodes = np.asarray(nodes, dtype=float).reshape(-1, 3)
        self.elements = np.asarray(elements, dtype=np.int64).reshape(-1, 2)
        if self.elements.size and (
            self.elements.min() < 0 or self.elements.max() >= len(self.nodes)
        ):
            raise ValueError("element refers to a node that does not exist")
        if joints not in JOINTS:
            raise ValueError(f"joints must be one of {JOINTS}, got {joints!r}")
        self.joints = joints
        self.section = section
        self.node_masses = (
            np.zeros(len(self.nodes)) if node_masses is None else np.asarray(node_masses, float)
        )
        self.R, self.lengths = ElementRotations(
            self.nodes[self.elements[:, 0]], self.nodes[self.elements[:, 1]]
        )
        # Element matrices are computed once per distinct geometry (length and orientation): a
        # voxel lattice has a handful, so this is a gather instead of 33k 12x12 triple products.
        first, self._geometry = _Distinct(
            np.round(np.column_stack([self.R.reshape(-1, 9), self.lengths]), 12)
        )
        local = LocalStiffness(section, self.lengths[first])
        if joints == "pinned":
            # Ideal ball joints: only the axial terms of the element remain (a bar).
            axial = local[:, [0, 0, 6, 6], [0, 6, 0, 6]]
            local = np.zeros_like(local)
            local[:, [0, 0, 6, 6], [0, 6, 0, 6]] = axial
        # One 12x12 matrix per distinct geometry, local and world axes; the per-element arrays
        # (`local_stiffness`, `element_stiffness`) are gathers made only when asked for: on the
        # 2744-voxel lattice each is 38 MB and took 0.12-0.14 s to build, a third of the frame's
        # construction, for matrices the solve never needs one by one.
        self._local_by_geometry = local
        self._global_by_geometry = ToGlobal(local, self.R[first])
        # Element DOF indices, (num_elements, 12).
        node_dofs = self.elements[:, :, None] * DOFS_PER_NODE + np.arange(DOFS_PER_NODE)
        self.element_dofs = node_dofs.reshape(len(self.elements), 12)
        self._BuildPattern()
        self._reduced = None  # (free DOFs, their pattern): see _ReducedPattern
        self._factor = None  # (free DOFs, a PARDISO factor keeping its analysis): _FactorFree

    def ReleaseFactorization(self) -> None:
        """Frees the factor the frame keeps from its last solve (PARDISO's analysis and numeric
        factor of K_ff: about 150 MB for the 2744-voxel lattice, 18.8 M non-zeros). The next
        solve factorises afresh; nothing else changes."""
        self._factor = None

    def __getstate__(self) -> dict:
        """Pickles and copies leave the factor behind (a PARDISO handle is process memory)."""
        state = self.__dict__.copy()
        state["_factor"] = None
        return state

    @property
    def local_stiffness(self) -> np.ndarray:
        """(num_elements, 12, 12) element stiffness in local axes (a gather, made on demand)."""
        return self._local_by_geometry[self._geometry]

    @property
    def element_stiffness(self) -> np.ndarray:
        """(num_elements, 12, 12) element stiffness in world axes (a gather, made on demand)."""
        return self._global_by_geometry[self._geometry]

    def _ByGeometry(self, matrices: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        """matrices[g(e)] @ vectors[e] for every element e, (num_elements, 12): one matrix
        product per distinct geometry when there are few (a voxel lattice has 9), else a gather.
        """
        if len(matrices) > 64:
            return np.einsum("eij,ej->ei", matrices[self._geometry], vectors)
        if not hasattr(self, "_members"):
            order = np.argsort(self._geometry, kind="stable")
            splits = np.cumsum(np.bincount(self._geometry, minlength=len(matrices)))[:-1]
            self._members = np.split(order, splits)
        result = np.empty_like(vectors)
        for g, members in enumerate(self._members):
            result[members] = vectors[members] @ matrices[g].T
        return result

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_dofs(self) -> int:
        return DOFS_PER_NODE * len(self.nodes)

    def _BuildPattern(self) -> None:
        """The CSR pattern of the global matrices and the block map of element matrices.

        Built at the node level: a 6x6 block per pair of connected nodes, and one per node on
        the diagonal (so every diagonal entry is stored, as PARDISO needs, even at a node no
        element reaches). Only the 4 block keys per element and the node keys are sorted. In
        the CSR rows of node R the block of node C starts at 36 blockptr[R] + 6 rank(C), and
        row i of it is 6 count(R) further on.

        An element matrix's four 6x6 sub-blocks (aa, ab, ba, bb) are summed into the global
        blocks by a sparse 0/1 matrix product, then the blocks are scattered into the CSR data
        (one fixed permutation). Elements that share a geometry share their sub-blocks, so the
        stiffness sums 4 x 9 distinct sub-blocks into the blocks (one product with a counting
        matrix) instead of 33k x 144 entries one by one (`Assemble` vs `_AssembleShared`).
        """
        N, E = self.num_nodes, len(self.elements)
        a, b = self.elements[:, 0], self.elements[:, 1]
        nodes = np.arange(N)
        block_rows = np.concatenate([np.stack([a, a, b, b], axis=1).ravel(), nodes])
        block_cols = np.concatenate([np.stack([a, b, a, b], axis=1).ravel(), nodes])
        unique, block = np.unique(block_rows * N + block_cols, return_inverse=True)
        block = block.ravel()
        num_blocks = len(unique)
        rows, cols = unique // N, unique % N
        count = np.bincount(rows, minlength=N)
        blockptr = np.concatenate([[0], np.cumsum(count)])
        rank = np.arange(num_blocks) - blockptr[rows]
        base = 36 * blockptr[rows] + 6 * rank  # first entry of each block
        stride = 6 * count[rows]  # from one row of a block to the next
        i = np.arange(6)
        # CSR position of entry (i, j) of each block, in the blocks' row-major order.
        entry = (base[:, None, None] + stride[:, None, None] * i[:, None] + i).reshape(-1)
        # CSR structure: row 6R + i holds, for each block (R, C) in order, columns 6C .. 6C + 5.
        row_length = np.repeat(6 * count, 6)
        self._indptr = np.concatenate([[0], np.cumsum(row_length)]).astype(np.int64)
        indices = np.empty(int(self._indptr[-1]), dtype=np.int64)
        columns = (6 * cols[:, None] + i)[:, None, :]
        indices[entry] = np.broadcast_to(columns, (num_blocks, 6, 6)).ravel()
        self._indices = indices
        if len(indices) < np.iinfo(np.int32).max:
            self._indices = indices.astype(np.int32)
            self._indptr = self._indptr.astype(np.int32)
            entry = entry.astype(np.int32)
        self._block_entry = entry
        diagonal_block = block[4 * E :]
        self._diagonal_entry = (
            base[diagonal_block, None] + (stride[diagonal_block, None] + 1) * i
        ).ravel()
        element_blocks = block[: 4 * E]  # of sub-block (e, aa | ab | ba | bb)
        self._element_blocks = element_blocks
        geometry_sub_blocks = (4 * self._geometry[:, None] + np.arange(4)).ravel()
        self._shared_sum = sp.csr_matrix(
            (np.ones(4 * E), (element_blocks, geometry_sub_blocks)),
            shape=(num_blocks, 4 * len(self._global_by_geometry)),
        )
        self._element_sum = None  # made when per-element matrices are first assembled

    @staticmethod
    def _SubBlocks(matrices: np.ndarray) -> np.ndarray:
        """(k, 12, 12) matrices as (4k, 36): the 6x6 sub-blocks aa, ab, ba, bb of each."""
        k = len(matrices)
        return matrices.reshape(k, 2, 6, 2, 6).transpose(0, 1, 3, 2, 4).reshape(4 * k, 36)

    def _FromBlocks(self, block_data: np.ndarray, diagonal=None) -> sp.csr_matrix:
        """The CSR matrix of (num_blocks, 36) block values (plus a diagonal, when given)."""
        data = np.empty(len(self._indices))
        data[self._block_entry] = block_data.ravel()
        if diagonal is not None:
            data[self._diagonal_entry] += diagonal
        matrix = sp.csr_matrix(
            (data, self._indices, self._indptr), shape=(self.num_dofs,) * 2, copy=False
        )
        matrix.has_sorted_indices = True  # columns ascend within each row by construction
        return matrix

    def Assemble(self, element_matrices: np.ndarray, diagonal: np.ndarray | None = None):
        """Sums (num_elements, 12, 12) element matrices (world axes) into a CSR matrix of the
        frame's pattern (explicit zeros kept, so every matrix of a frame has the same pattern).
        """
        if self._element_sum is None:
            E = len(self.elements)
            self._element_sum = sp.csr_matrix(
                (np.ones(4 * E), (self._element_blocks, np.arange(4 * E))),
                shape=(self._shared_sum.shape[0], 4 * E),
            )
        blocks = self._element_sum @ self._SubBlocks(np.asarray(element_matrices, float))
        return self._FromBlocks(blocks, diagonal)

    def _AssembleShared(self, matrices: np.ndarray, diagonal=None) -> sp.csr_matrix:
        """Assemble for element matrices that depend only on the geometry: (num_geometries,
        12, 12), element e's being matrices[g(e)]."""
        return self._FromBlocks(self._shared_sum @ self._SubBlocks(matrices), diagonal)

    def StiffnessMatrix(self) -> sp.csr_matrix:
        """The global linear elastic stiffness K."""
        return self._AssembleShared(self._global_by_geometry)

    def GeometricStiffnessMatrix(self, axial_forces: np.ndarray) -> sp.csr_matrix:
        """The global geometric stiffness K_G(N) for element axial forces N (tension > 0), N."""
        local = LocalGeometricStiffness(self.lengths, axial_forces)
        return self.Assemble(ToGlobal(local, self.R))

    def MassMatrix(self, *, lumped: bool = False) -> sp.csr_matrix:
        """The global mass matrix: consistent beam mass (or lumped) plus the node masses, kg.

        The lumped variant gives each node half of each attached element's mass and the rotary
        inertia of a half-element rod about the node (m L^2 / 24 per half, plus torsion).
        """
        point = np.zeros(self.num_dofs)
        point[0::6] = point[1::6] = point[2::6] = self.node_masses
        if not lumped:
            local = LocalConsistentMass(self.section, self.lengths)
            return self.Assemble(ToGlobal(local, self.R), diagonal=point)
        element_mass = self.section.mass_density * self.section.area * self.lengths
        half = 0.5 * element_mass
        rotary = half * (0.5 * self.lengths) ** 2 / 3.0
        for end in range(2):
            nodes = self.elements[:, end]
            for axis in range(3):
                np.add.at(point, nodes * 6 + axis, half)
                np.add.at(point, nodes * 6 + 3 + axis, rotary)
        return sp.diags(point).tocsr()

    def ElementEndForces(self, displacements: np.ndarray) -> np.ndarray:
        """Element end forces in local axes, (num_elements, 12): k_local T u_e."""
        u = np.asarray(displacements, dtype=float).reshape(-1)
        local_u = TransformVectors(self.R, u[self.element_dofs])
        return self._ByGeometry(self._local_by_geometry, local_u)

    def AxialForces(self, displacements: np.ndarray) -> np.ndarray:
        """Element axial forces, N (tension > 0): row 6 of k_local T u_e (ElementEndForces)."""
        u = np.asarray(displacements, dtype=float).reshape(-1)
        local_u = TransformVectors(self.R, u[self.element_dofs])
        return np.einsum("ei,ei->e", local_u, self._local_by_geometry[self._geometry, 6])

    def StrainEnergy(self, displacements: np.ndarray) -> float:
        """Elastic strain energy 1/2 u^T K u, J, summed element by element."""
        u = np.asarray(displacements, dtype=float).reshape(-1)
        ue = u[self.element_dofs]
        return float(0.5 * np.einsum("ei,ei->", ue, self._ByGeometry(self._global_by_geometry, ue)))

    def StrainEnergyParts(self, displacements: np.ndarray) -> dict:
        """Strain energy split into axial, torsion and bending, J.

        The local element stiffness is block-diagonal in these three groups (elements.py), so
        the split is exact: 1/2 u_l^T k_l u_l summed over each group's local DOFs.
        """
        u = np.asarray(displacements, dtype=float).reshape(-1)
        local_u = TransformVectors(self.R, u[self.element_dofs])
        groups = {
            "axial": np.array([0, 6]),
            "torsion": np.array([3, 9]),
            "bending": np.array([1, 2, 4, 5, 7, 8, 10, 11]),
        }
        parts = {}
        for name, dofs in groups.items():
            # The group's rows and columns of k_l (zero elsewhere), applied per geometry.
            k = np.zeros_like(self._local_by_geometry)
            k[:, dofs[:, None], dofs] = self._local_by_geometry[:, dofs[:, None], dofs]
            energy = 0.5 * np.einsum("ei,ei->e", local_u, self._ByGeometry(k, local_u))
            # Each element's share is >= 0; clip the round-off of near-zero (mechanism) energies.
            parts[name] = float(np.maximum(energy, 0.0).sum())
        return parts

    def NodeDofs(self, node: int) -> np.ndarray:
        """The six global DOF indices of a node."""
        return node * DOFS_PER_NODE + np.arange(DOFS_PER_NODE)

    def Solve(
        self,
        *,
        loads: np.ndarray | None = None,
        supports: dict | None = None,
        actuators: list[Actuator] = (),
        clamp_node: int | None = None,
        second_order: bool = False,
        max_iterations: int = 8,
        tolerance: float = 1e-10,
    ) -> StaticSolution:
        """Static equilibrium K u = f under supports, loads and actuators.

        Args:
            loads: (num_nodes, 6) nodal forces (N) and moments (N*m), or None.
            supports: {global DOF index: prescribed value (m or rad)}; e.g. from `FixNode`.
            actuators: linear actuators (stroke- or force-controlled).
            clamp_node: for a free-floating structure whose loads are self-equilibrated (internal
                actuators only): clamp this node's six DOFs. A single clamped node is statically
                determinate, so it removes the six rigid-body modes without any reaction force.
            second_order: iterate with the geometric stiffness K + K_G(N) of the current axial
                forces (P-Delta) until the displacement changes by less than `tolerance`
                (relative), at most `max_iterations` times.

        Returns:
            The StaticSolution.

        Raises:
            ValueError: an actuator or support refers to a missing node or an unknown mount, or
                the structure is not supported against rigid-body motion.
        """
        timings = {}
        start = time.perf_counter()
        n = self.num_dofs
        f = np.zeros(n) if loads is None else np.asarray(loads, dtype=float).reshape(-1).copy()
        if f.shape != (n,):
            raise ValueError(f"loads must have shape ({self.num_nodes}, 6)")
        fixed = dict(supports or {})
        if clamp_node is not None:
            fixed.update({int(d): 0.0 for d in self.NodeDofs(clamp_node)})
        if self.joints == "pinned":
            if second_order or any(a.force is not None for a in actuators):
                raise ValueError(
                    "pinned joints: the lattice is a mechanism, so only linear stroke-driven "
                    "(kinematic) solves are meaningful (no force actuators, no second order)"
                )
            for node in range(self.num_nodes):  # rotations carry no stiffness: hold them
                for dof in self.NodeDofs(node)[3:]:
                    fixed.setdefault(int(dof), 0.0)
        rows, rhs = [], []
        for actuator in actuators:
            self._AddActuator(actuator, f, fixed, rows, rhs)
        fixed_dofs = np.array(sorted(fixed), dtype=np.int64)
        if fixed_dofs.size and (fixed_dofs.min() < 0 or fixed_dofs.max() >= n):
            raise ValueError("a support refers to a DOF that does not exist")
        fixed_values = np.array([fixed[d] for d in fixed_dofs], dtype=float)
        is_free = np.ones(n, dtype=bool)
        is_free[fixed_dofs] = False
        free = np.flatnonzero(is_free)
        C = (
            sp.csr_matrix(
                (
                    np.concatenate([r[1] for r in rows]),
                    (
                        np.concatenate([np.full(len(r[0]), i) for i, r in enumerate(rows)]),
                        np.concatenate([r[0] for r in rows]),
                    ),
                ),
                shape=(len(rows), n),
            )
            if rows
            else sp.csr_matrix((0, n))
        )
        g = np.array(rhs, dtype=float)
        diagonal = None
        if self.joints == "pinned":
            # The mean of EA/L over the elements (each element's k_l[0, 0]).
            axial = self._local_by_geometry[self._geometry, 0, 0]
            diagonal = np.zeros(n)
            diagonal.reshape(-1, 6)[:, :3] = PINNED_REGULARIZATION * float(np.mean(axial))
        K = self._AssembleShared(self._global_by_geometry, diagonal)
        timings["assemble"] = time.perf_counter() - start
        u, lam, iterations, converged = self._SolveConstrained(
            K, f, free, fixed_dofs, fixed_values, C, g, timings
        )
        if second_order:
            converged = False
            for iterations in range(1, max_iterations + 1):  # noqa: B007 - reported below
                # Same pattern as K (explicit zeros kept), so the sum is a sum of data arrays
                # and the factorisation's analysis carries over.
                KG = self.GeometricStiffnessMatrix(self.AxialForces(u))
                KT = sp.csr_matrix((K.data + KG.data, K.indices, K.indptr), shape=K.shape)
                u_new, lam, _, _ = self._SolveConstrained(
                    KT, f, free, fixed_dofs, fixed_values, C, g, timings
                )
                change = np.linalg.norm(u_new - u) / max(np.linalg.norm(u_new), 1e-300)
                u = u_new
                if change < tolerance:
                    converged = True
                    break
        # Reactions: K u - f - C^T lambda at the supported DOFs.
        Ku = K @ u
        residual = Ku - f - (C.T @ lam if len(lam) else 0.0)
        # 1/2 u^T K u is the element sum (StrainEnergy) by assembly; without the pinned
        # frames' Tikhonov term, which stores no strain energy.
        energy = 0.5 * float(u @ Ku - (0.0 if diagonal is None else diagonal @ u**2))
        reactions = np.zeros(n)
        reactions[fixed_dofs] = residual[fixed_dofs]
        actuator_forces = self._ActuatorForces(actuators, lam, rows, reactions)
        return StaticSolution(
            displacements=u.reshape(-1, 6),
            reactions=reactions.reshape(-1, 6),
            actuator_forces=actuator_forces,
            axial_forces=self.AxialForces(u),
            strain_energy=energy,
            iterations=iterations if second_order else 0,
            converged=converged,
            seconds=timings,
        )

    def _AddActuator(self, actuator: Actuator, f, fixed, rows, rhs) -> None:
        """Turns one actuator into loads, fixed DOFs or constraint rows (tagged for forces)."""
        a, b = int(actuator.node_a), int(actuator.node_b)
        if not (0 <= a < self.num_nodes and 0 <= b < self.num_nodes) or a == b:
            raise ValueError(f"actuator '{actuator.name}': nodes {a}, {b} are not two nodes")
        if actuator.mount not in MOUNTS:
            raise ValueError(f"actuator '{actuator.name}': mount must be one of {MOUNTS}")
        axis = self.nodes[b] - self.nodes[a]
        axis = axis / np.linalg.norm(axis)
        lateral = np.linalg.svd(axis[None, :])[2][1:]  # two unit vectors normal to the axis
        da, db = self.NodeDofs(a), self.NodeDofs(b)
        force_controlled = actuator.force is not None
        actuator_rows = []
        if force_controlled:
            f[da[:3]] -= actuator.force * axis
            f[db[:3]] += actuator.force * axis
        if actuator.mount == "clamped":
            # Each node moves half the stroke along the axis; rotations and lateral motion held.
            for node_dofs, sign in ((da, -1.0), (db, 1.0)):
                for k in range(3):
                    fixed[int(node_dofs[3 + k])] = 0.0
                if force_controlled:
                    for direction in lateral:
                        actuator_rows.append((node_dofs[:3], direction, 0.0))
                else:
                    for k in range(3):
                        fixed[int(node_dofs[k])] = sign * 0.5 * actuator.stroke * axis[k]
        else:
            if not force_controlled:
                actuator_rows.append(
                    (np.concatenate([db[:3], da[:3]]), np.concatenate([axis, -axis]), None)
                )
                rhs_value = actuator.stroke
            if actuator.mount == "prismatic":
                # No lateral motion relative to the actuator body, which turns with the nodes:
                # d . (u_b - u_a - theta_a x r) = 0, r = x_b - x_a (keeps rigid motions free).
                r = self.nodes[b] - self.nodes[a]
                for direction in lateral:
                    actuator_rows.append(
                        (
                            np.concatenate([db[:3], da[:3], da[3:]]),
                            np.concatenate([direction, -direction, -np.cross(r, direction)]),
                            0.0,
                        )
                    )
                for k in range(3):
                    actuator_rows.append(([db[3 + k], da[3 + k]], np.array([1.0, -1.0]), 0.0))
        for dofs, coefficients, value in actuator_rows:
            rows.append((np.asarray(dofs), np.asarray(coefficients, float), id(actuator)))
            rhs.append(rhs_value if value is None else value)

    def _ActuatorForces(self, actuators, lam, rows, reactions) -> np.ndarray:
        """The axial force of each actuator: the multiplier of its distance row, the prescribed
        force, or (clamped mount) the support reaction along the axis."""
        forces = np.zeros(len(actuators))
        for i, actuator in enumerate(actuators):
            if actuator.force is not None:
                forces[i] = actuator.force
                continue
            a, b = actuator.node_a, actuator.node_b
            axis = self.nodes[b] - self.nodes[a]
            axis /= np.linalg.norm(axis)
            if actuator.mount == "clamped":
                # The support pushes node b along +axis with reaction . axis.
                forces[i] = float(reactions[self.NodeDofs(b)[:3]] @ axis)
                continue
            for row_index, (dofs, coefficients, tag) in enumerate(rows):
                if tag == id(actuator) and len(dofs) == 6 and np.allclose(coefficients[:3], axis):
                    forces[i] = float(lam[row_index])
                    break
        return forces

    def _SolveConstrained(self, K, f, free, fixed_dofs, fixed_values, C, g, timings):
        """Solves [K_ff  -C_f^T; C_f  0] [u_f; lambda] = [f_f - K_fs u_s; g - C_s u_s] by the
        Schur complement of the factorised K_ff (one factorisation, m + 1 solves). K is in the
        frame's pattern (StiffnessMatrix)."""
        u = np.zeros(self.num_dofs)
        u[fixed_dofs] = fixed_values
        start = time.perf_counter()
        r = (f - K @ u)[free]
        factor = self._FactorFree(K, free)
        timings["factorize"] = timings.get("factorize", 0.0) + time.perf_counter() - start
        start = time.perf_counter()
        u_f = factor(r)
        lam = np.zeros(C.shape[0])
        if C.shape[0]:
            C_f = C[:, free].toarray()
            g_red = g - C[:, fixed_dofs] @ fixed_values
            Y = factor(C_f.T)  # all constraint columns in one multi-right-hand-side solve
            S = C_f @ Y
            lam = np.linalg.lstsq(S, g_red - C_f @ u_f, rcond=None)[0]
            u_f = u_f + Y @ lam
        if not np.all(np.isfinite(u_f)):
            raise ValueError(UNSUPPORTED)
        u[free] = u_f
        timings["solve"] = timings.get("solve", 0.0) + time.perf_counter() - start
        return u, lam, 0, True

    def _ReducedPattern(self, free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """K_ff's CSR pattern (free rows and columns of the frame's pattern, in DOF order):
        (positions of its entries in K's data, indptr, indices). Kept for the last free set, so
        a solve that repeats its supports (second-order iterations, stroke sweeps) selects K_ff
        with one gather."""
        if self._reduced is not None and np.array_equal(self._reduced[0], free):
            return self._reduced[1]
        # Entries to drop: those in a fixed column, then every entry of the (few) fixed rows.
        # Row indices are never expanded to one per entry: a cumulative count of the kept
        # entries gives the new row pointers (3-4x faster than masking rows and columns).
        indptr, indices = self._indptr, self._indices
        fixed = np.ones(self.num_dofs, dtype=bool)
        fixed[free] = False
        keep = ~fixed[indices]
        fixed_rows = np.flatnonzero(fixed)
        lengths = indptr[fixed_rows + 1] - indptr[fixed_rows]
        offsets = np.repeat(indptr[fixed_rows] - (np.cumsum(lengths) - lengths), lengths)
        keep[offsets + np.arange(lengths.sum())] = False
        kept = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
        counts = kept[indptr[free + 1]] - kept[indptr[free]]
        take = np.flatnonzero(keep)
        position = np.full(self.num_dofs, -1, dtype=indices.dtype)
        position[free] = np.arange(len(free))
        pattern = (
            take,
            np.concatenate([[0], np.cumsum(counts)]).astype(indptr.dtype),
            position[indices[take]],
        )
        self._reduced = (free.copy(), pattern)
        return pattern

    def _FactorFree(self, K: sp.csr_matrix, free: np.ndarray):
        """A solve function rhs -> x for K_ff (K's free rows and columns), factorised by
        FactorizationBackend().

        PARDISO takes K_ff as it is and orders it with its own METIS nested dissection; the
        frame keeps the factor of its last free set, so the next factorisation of a matrix with
        the same pattern (second-order iterations, another stroke) skips the analysis (about
        0.25 CPU s of 0.6 on the 2744-voxel lattice) at the price of holding the factor's memory
        until the frame goes or ReleaseFactorization is called. The
        other backends factorise K_ff in the frame's geometric nested-dissection order
        (_FreeOrdering), which the multifrontal Cholesky needs for its supernode tree.
        """
        take, indptr, indices = self._ReducedPattern(free)
        shape = (len(free), len(free))
        backend = FactorizationBackend()
        if backend != "pardiso":
            K_ff = sp.csr_matrix((K.data[take], indices, indptr), shape=shape)
            return _Factorize(K_ff, *self._FreeOrdering(free), backend)
        from drakebots.fem.solvers import NotPositiveDefinite, PardisoFactor

        # K_ff is symmetric, so its CSR arrays are also its CSC arrays (no conversion).
        K_ff = sp.csc_matrix((K.data[take], indices, indptr), shape=shape)
        K_ff.has_sorted_indices = True
        if self._factor is None or not np.array_equal(self._factor[0], free):
            self._factor = (free.copy(), PardisoFactor())
        factor = self._factor[1]
        try:
            with FactorizationThreads():
                factor.Factor(K_ff)
        except NotPositiveDefinite as e:
            self._factor = None
            raise ValueError(UNSUPPORTED) from e

        def Solve(rhs):
            with FactorizationThreads():
                return factor.solve(rhs)

        return Solve

    def _FreeOrdering(self, free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Nested-dissection order of the free DOFs (a node's DOFs kept together) and its
        supernode tree: (permutation, supernode column boundaries, parent of each supernode)."""
        if not hasattr(self, "_tree"):
            self._tree = NestedDissectionTree(self.nodes, self.elements)
        order, node_ptr, parent = self._tree
        dofs = (order[:, None] * DOFS_PER_NODE + np.arange(DOFS_PER_NODE)).ravel()
        block = np.repeat(np.repeat(np.arange(len(parent)), np.diff(node_ptr)), DOFS_PER_NODE)
        position = np.full(self.num_dofs, -1)
        position[free] = np.arange(len(free))
        keep = position[dofs] >= 0
        counts = np.bincount(block[keep], minlength=len(parent))
        return position[dofs][keep], np.concatenate([[0], np.cumsum(counts)]), parent

    def Modes(
        self,
        count: int = 6,
        *,
        supports: dict | None = None,
        lumped: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The lowest natural frequencies (Hz) and mode shapes (num_nodes, 6, count).

        Free-floating frames return their six rigid-body modes first (frequencies near zero).
        """
        K = self.StiffnessMatrix()
        M = self.MassMatrix(lumped=lumped)
        fixed = np.array(sorted(supports or {}), dtype=np.int64)
        free = np.setdiff1d(np.arange(self.num_dofs), fixed)
        K_ff = K[free][:, free].tocsc()
        M_ff = M[free][:, free].tocsc()
        # Shift below zero so that rigid-body modes (eigenvalue 0) do not make K singular.
        shift = -1e-3 * abs(K_ff.diagonal()).mean() / max(abs(M_ff.diagonal()).mean(), 1e-300)
        values, vectors = spla.eigsh(K_ff, k=count, M=M_ff, sigma=shift, which="LM")
        order = np.argsort(values)
        values, vectors = values[order], vectors[:, order]
        shapes = np.zeros((self.num_dofs, count))
        shapes[free] = vectors
        frequencies = np.sqrt(np.maximum(values, 0.0)) / (2.0 * np.pi)
        return frequencies, shapes.reshape(self.num_nodes, 6, count)


def _Distinct(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first of each distinct row, distinct-row id of every row), as
    np.unique(axis=0): by a 64-bit hash of each row's bytes, checked exactly, so 33k rows of a
    voxel lattice take 2 ms instead of np.unique's 40 ms (its row-wise lexicographic sort)."""
    rows = np.ascontiguousarray(rows, dtype=float) + 0.0  # -0.0 -> 0.0: equal rows, equal bytes
    # SplitMix64's finaliser of each word (offset by its column), summed over the row: plain
    # products would lose a double's high bits, where 1.0 and -1.0 differ, to the wrap-around.
    z = rows.view(np.uint64) + np.arange(rows.shape[1], dtype=np.uint64) * np.uint64(
        0x9E3779B97F4A7C15
    )
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    hashes = (z ^ (z >> np.uint64(31))).sum(axis=1)
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    if not np.array_equal(rows[first][inverse], rows):  # a collision: the exact way
        _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def NestedDissectionOrder(points: np.ndarray, edges: np.ndarray, leaf_size: int = 16) -> np.ndarray:
    """A fill-reducing node order by geometric nested dissection (see NestedDissectionTree)."""
    return NestedDissectionTree(points, edges, leaf_size)[0]


# DRAKEBOTS_FRAME_SOLVER's values, defined where the environment is judged (drakebots.runtime).
BACKENDS = FRAME_SOLVERS


def FactorizationBackend() -> str:
    """The sparse factorisation the static solves use: DRAKEBOTS_FRAME_SOLVER, default "auto":
    MKL PARDISO where it loads (the default install on x86-64; drakebots.fem.pardiso), else
    "multifrontal" (drakebots.frame.cholesky, NumPy/SciPy only, kept as the fallback and as an
    implementation independent of MKL). "superlu" is SciPy's splu on the same nested-dissection
    order; "cholmod" needs the optional scikit-sparse (SuiteSparse) and is for comparisons
    (scripts/bench_voxel.py).

    Measured on the 2744-voxel lattice's K_ff (52,908 unknowns, one thread, load 3-7 on the
    shared 2-core machine; drakebots.frame.cholesky has the table): PARDISO's numeric
    factorisation takes 0.35-0.40 CPU s, 0.53-0.77x CHOLMOD's wall time on the same matrix with
    METIS (0.61-0.69x in CPU s) and 0.47-0.73x with the frame's nested-dissection order; with
    each one's analysis 0.67-1.11x (four runs). The multifrontal takes 1.18-1.33 CPU s, and
    SuperLU about 3 CPU s for the whole solve.
    """
    from drakebots.fem.solvers import PardisoAvailable
    from drakebots.runtime import EnvironmentChoice

    # InputError naming the variable for a bad value (issue 68).
    backend = EnvironmentChoice("DRAKEBOTS_FRAME_SOLVER", BACKENDS, "auto")
    if backend == "auto":
        return "pardiso" if PardisoAvailable() else "multifrontal"
    return backend


def FrameThreads() -> int:
    """The MKL threads the frame's factorisation is held to: DRAKEBOTS_FRAME_THREADS, 0 (the
    default) for MKL's own count (`FactorizationThreads`)."""
    from drakebots.runtime import MAX_THREADS, EnvironmentInt

    return EnvironmentInt("DRAKEBOTS_FRAME_THREADS", 0, maximum=MAX_THREADS)


def FactorizationThreads():
    """A context holding MKL (PARDISO) to the threads the frame's factorisation uses:
    DRAKEBOTS_FRAME_THREADS, default 0, which leaves MKL's own setting (every core, or
    MKL_NUM_THREADS where set: a Dask sweep's workers get 1 from distributed's nanny, so a sweep
    does not oversubscribe the cores); a positive count holds MKL to it for the factorisation.

    Both cores by default: measured on this project's 2-core machine, idle (2026-11-27, best of
    3, 1 and 2 threads alternated in one process, CubicLattice + MakeFrame + Frame.Solve), 216
    voxels 0.052 s against 0.093 s on one thread, 512 voxels 0.161 s against 0.218 s, 1000
    voxels 0.335 s against 0.499 s, 2744 voxels 1.34 s against 2.02 s
    (`python scripts/bench_voxel.py`: 1.21 s against 1.51 s; issue 52's target is 1.5 s).
    The default was one thread while the project's machines were shared with three other
    workers: at load 3-6 a second MKL thread spun against the other processes (the 2744-voxel
    numeric factorisation 0.82 s wall against 0.55 s; Frame.Solve of 216 and 512 voxels 0.106 s
    and 0.25 s against 0.048 s and 0.16 s). On such a machine set DRAKEBOTS_FRAME_THREADS=1.
    """
    import contextlib

    threads = FrameThreads()
    if threads <= 0:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a declared dependency
        return contextlib.nullcontext()
    # A controller lists the libraries loaded when it is made: make it again until MKL is in.
    controller = _THREADPOOLS.get("controller")
    if controller is None or not controller.select(internal_api="mkl").lib_controllers:
        controller = _THREADPOOLS["controller"] = ThreadpoolController()
    return controller.limit(limits=threads, user_api="blas")


_THREADPOOLS = {}


def _Factorize(
    matrix: sp.spmatrix | None,
    permutation: np.ndarray,
    block_ptr: np.ndarray,
    parent: np.ndarray,
    backend: str | None = None,
    *,
    permuted: sp.spmatrix | None = None,
):
    """A solve function rhs -> x (vector or matrix of right-hand sides) for a sparse symmetric
    positive definite matrix, factorised in the given nested-dissection order.

    Args:
        matrix: the matrix (None when `permuted` is given).
        permutation, block_ptr, parent: the elimination order and its supernode tree
            (Frame._FreeOrdering).
        backend: "pardiso", "multifrontal", "superlu" or "cholmod" (default
            FactorizationBackend()).
        permuted: matrix[permutation][:, permutation], when the caller has it already.

    Raises:
        ValueError: the matrix is singular (the frame is not supported).
    """
    message = UNSUPPORTED
    backend = backend or FactorizationBackend()
    inverse = np.empty_like(permutation)
    inverse[permutation] = np.arange(len(permutation))
    if permuted is None:
        permuted = sp.csr_matrix(matrix)[permutation][:, permutation]
    permuted = sp.csc_matrix(permuted)
    if backend in ("cholmod", "superlu", "pardiso"):
        from drakebots.fem.solvers import (
            CholmodFactor,
            NotPositiveDefinite,
            OrderedSplu,
            PardisoFactor,
        )

        # Each refuses a matrix that is not positive definite; their solves are checked.
        factor = {
            "cholmod": lambda: CholmodFactor("metis"),
            "superlu": lambda: OrderedSplu(None, "NATURAL"),
            "pardiso": PardisoFactor,
        }[backend]()
        try:
            solve = factor.Factor(permuted).solve
        except NotPositiveDefinite as e:
            raise ValueError(message) from e
    else:
        try:
            with _SingleThreadedBlas(permuted.shape[0]):
                solve = SupernodalCholesky(permuted, block_ptr, parent)
        except NotPositiveDefiniteError as e:
            raise ValueError(message) from e

    def Solve(rhs):
        return solve(np.asarray(rhs, dtype=float)[permutation])[inverse]

    return Solve


def _SingleThreadedBlas(size: int):
    """BLAS limited to one thread for the multifrontal factorisation of a matrix of this size:
    its kernels are small to medium dense blocks, and on a shared machine idle-spinning BLAS
    threads cost far more than they give (measured here: 9.1 s against 0.35 s for an 8x8x8
    lattice at load 12 on 2 CPUs; 0.12 s against 0.005 s for 56 voxels). Tiny matrices skip it.
    """
    import contextlib

    from drakebots.runtime import SingleThreadedBlas

    return contextlib.nullcontext() if size < 200 else SingleThreadedBlas()


def FixNode(frame: Frame, node: int, *, translations=True, rotations=True, values=None) -> dict:
    """Support dictionary holding a node (all six DOFs by default) at `values` (default 0)."""
    dofs = frame.NodeDofs(node)
    chosen = ([0, 1, 2] if translations else []) + ([3, 4, 5] if rotations else [])
    values = np.zeros(6) if values is None else np.asarray(values, dtype=float)
    return {int(dofs[k]): float(values[k]) for k in chosen}


def RigidBodyDisplacement(
    points: np.ndarray, translation: np.ndarray, rotation: np.ndarray
) -> np.ndarray:
    """(num_points, 6) displacements of an infinitesimal rigid motion u = t + w x p, theta = w."""
    points = np.asarray(points, dtype=float)
    u = np.zeros((len(points), 6))
    u[:, :3] = np.asarray(translation) + np.cross(np.asarray(rotation), points)
    u[:, 3:] = rotation
    return u


def RemoveRigidBodyMotion(
    points: np.ndarray, translations: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Subtracts the least-squares infinitesimal rigid motion t + w x p from node translations.

    Returns:
        (translations without the rigid part, t, w).
    """
    points = np.asarray(points, dtype=float)
    u = np.asarray(translations, dtype=float)
    w = np.ones(len(points)) if weights is None else np.asarray(weights, dtype=float)
    center = np.average(points, axis=0, weights=w)
    r = points - center
    # u_i ~ t + w x r_i = t - [r_i]x w: least squares in (t, w).
    A = np.zeros((3 * len(points), 6))
    A[:, :3] = np.tile(np.eye(3), (len(points), 1))
    skew = np.zeros((len(points), 3, 3))
    skew[:, 0, 1], skew[:, 0, 2] = r[:, 2], -r[:, 1]
    skew[:, 1, 0], skew[:, 1, 2] = -r[:, 2], r[:, 0]
    skew[:, 2, 0], skew[:, 2, 1] = r[:, 1], -r[:, 0]
    A[:, 3:] = skew.reshape(-1, 3)
    sqrt_w = np.repeat(np.sqrt(w), 3)
    solution = np.linalg.lstsq(A * sqrt_w[:, None], u.reshape(-1) * sqrt_w, rcond=None)[0]
    t, omega = solution[:3], solution[3:]
    rigid = t + np.cross(omega, r)
    return u - rigid, t - np.cross(omega, center), omega
