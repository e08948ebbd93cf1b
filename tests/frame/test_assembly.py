"""The frame's block assembly, its free-DOF selection and its solves against independent
references: element-by-element dense sums of the element matrices (drakebots.frame.elements, one
element at a time), SciPy's fancy indexing, and a dense KKT solve with NumPy, on every sparse
backend the install has."""

import numpy as np
import pytest
import scipy.sparse as sp

from drakebots.frame.elements import (
    LocalConsistentMass,
    LocalGeometricStiffness,
    LocalStiffness,
    RectangularSection,
    ToGlobal,
)
from drakebots.frame.model import BACKENDS, Actuator, FixNode, Frame
from drakebots.voxel.lattice import CubicLattice


def _Backends() -> list[str]:
    from drakebots.fem.solvers import CholmodAvailable, PardisoAvailable

    names = ["multifrontal", "superlu"]
    names += ["pardiso"] if PardisoAvailable() else []
    names += ["cholmod"] if CholmodAvailable() else []
    assert set(names) <= set(BACKENDS)
    return names


def _RandomFrame(seed=0, num_nodes=30, num_elements=90) -> Frame:
    """Nodes and struts at random: every element its own geometry (more than the 64 below which
    the frame groups elements by geometry), some nodes reached by no element."""
    rng = np.random.default_rng(seed)
    nodes = rng.uniform(-0.1, 0.1, (num_nodes, 3))
    pairs = set()
    while len(pairs) < num_elements:
        a, b = sorted(rng.choice(num_nodes - 2, 2, replace=False))
        pairs.add((int(a), int(b)))
    section = RectangularSection(
        0.004, 0.006, youngs_modulus=2e9, poissons_ratio=0.35, timoshenko=True
    )
    return Frame(nodes, np.array(sorted(pairs)), section)


def _DenseSum(frame: Frame, local: np.ndarray) -> np.ndarray:
    """sum_e T_e^T k_e T_e, one element at a time into a dense matrix."""
    K = np.zeros((frame.num_dofs, frame.num_dofs))
    for e, (a, b) in enumerate(frame.elements):
        dofs = np.r_[frame.NodeDofs(a), frame.NodeDofs(b)]
        K[np.ix_(dofs, dofs)] += ToGlobal(local[e : e + 1], frame.R[e : e + 1])[0]
    return K


def _Frames():
    return [CubicLattice((2, 2, 2)).MakeFrame(), _RandomFrame()]


@pytest.mark.parametrize("frame", _Frames(), ids=["lattice", "random"])
def test_assembly_equals_the_element_by_element_sum(frame):
    rng = np.random.default_rng(3)
    L = frame.lengths
    K = frame.StiffnessMatrix()
    reference = _DenseSum(frame, LocalStiffness(frame.section, L))
    scale = np.abs(reference).max()
    assert np.abs(K.toarray() - reference).max() <= 1e-14 * scale
    forces = rng.standard_normal(len(L))
    KG = frame.GeometricStiffnessMatrix(forces)
    reference_G = _DenseSum(frame, LocalGeometricStiffness(L, forces))
    assert np.abs(KG.toarray() - reference_G).max() <= 1e-14 * np.abs(reference_G).max()
    M = frame.MassMatrix()
    reference_M = _DenseSum(frame, LocalConsistentMass(frame.section, L))
    reference_M += np.diag(
        np.repeat(frame.node_masses, 6) * np.tile([1, 1, 1, 0, 0, 0], frame.num_nodes)
    )
    assert np.abs(M.toarray() - reference_M).max() <= 1e-14 * np.abs(reference_M).max()
    # One pattern for every matrix of the frame (the factorisation's analysis is reused),
    # every diagonal entry stored, columns sorted.
    for matrix in (K, KG, M):
        assert np.array_equal(matrix.indptr, K.indptr)
        assert np.array_equal(matrix.indices, K.indices)
        assert sp.csr_matrix(matrix).has_canonical_format
    assert np.all(np.diff(K.indptr) > 0)
    assert np.all(np.isin(np.arange(frame.num_dofs), K.indices[K.indices == K.tocoo().row]))


@pytest.mark.parametrize("frame", _Frames(), ids=["lattice", "random"])
def test_element_forces_and_energy_equal_the_per_element_products(frame):
    u = np.random.default_rng(4).standard_normal(frame.num_dofs) * 1e-4
    local = LocalStiffness(frame.section, frame.lengths)
    ue = u[frame.element_dofs]
    T = np.zeros((len(ue), 12, 12))
    for block in range(4):
        T[:, 3 * block : 3 * block + 3, 3 * block : 3 * block + 3] = frame.R
    end_forces = np.einsum("eij,ejk,ek->ei", local, T, ue)
    assert np.allclose(
        frame.ElementEndForces(u), end_forces, rtol=0, atol=1e-12 * abs(end_forces).max()
    )
    assert np.allclose(
        frame.AxialForces(u), end_forces[:, 6], rtol=0, atol=1e-12 * abs(end_forces).max()
    )
    energy = 0.5 * u @ _DenseSum(frame, local) @ u
    assert frame.StrainEnergy(u) == pytest.approx(energy, rel=1e-12)
    assert sum(frame.StrainEnergyParts(u).values()) == pytest.approx(energy, rel=1e-12)


@pytest.mark.parametrize("count", [1, 12, 300])
def test_free_dof_selection_equals_fancy_indexing(count):
    frame = CubicLattice((2, 2, 2)).MakeFrame()
    rng = np.random.default_rng(count)
    fixed = np.sort(rng.choice(frame.num_dofs, min(count, frame.num_dofs - 1), replace=False))
    free = np.setdiff1d(np.arange(frame.num_dofs), fixed)
    K = frame.StiffnessMatrix()
    take, indptr, indices = frame._ReducedPattern(free)
    K_ff = sp.csr_matrix((K.data[take], indices, indptr), shape=(len(free),) * 2)
    reference = K.tocsr()[free][:, free]
    assert np.array_equal(K_ff.toarray(), reference.toarray())
    assert K_ff.has_canonical_format


def _DenseSolve(frame, loads, supports, rows):
    """min 1/2 u^T K u - f^T u with u_s prescribed and a_i . u = g_i: a dense KKT solve."""
    n = frame.num_dofs
    K = _DenseSum(frame, LocalStiffness(frame.section, frame.lengths))
    fixed = np.array(sorted(supports))
    free = np.setdiff1d(np.arange(n), fixed)
    u = np.zeros(n)
    u[fixed] = [supports[d] for d in fixed]
    A = np.array([a for a, _ in rows]).reshape(len(rows), n)
    g = np.array([value for _, value in rows])
    m = len(rows)
    kkt = np.zeros((len(free) + m, len(free) + m))
    kkt[: len(free), : len(free)] = K[np.ix_(free, free)]
    kkt[: len(free), len(free) :] = A[:, free].T
    kkt[len(free) :, : len(free)] = A[:, free]
    rhs = np.r_[loads.ravel()[free] - K[np.ix_(free, fixed)] @ u[fixed], g - A[:, fixed] @ u[fixed]]
    u[free] = np.linalg.solve(kkt, rhs)[: len(free)]
    return u.reshape(-1, 6)


@pytest.mark.parametrize("backend", _Backends())
def test_solve_equals_a_dense_kkt_solve(backend, monkeypatch):
    """Loads, prescribed support motions and an axial actuator on a lattice."""
    monkeypatch.setenv("DRAKEBOTS_FRAME_SOLVER", backend)
    lattice = CubicLattice((2, 2, 2))
    frame = lattice.MakeFrame()
    rng = np.random.default_rng(5)
    loads = (
        rng.standard_normal((frame.num_nodes, 6)) * np.r_[1.0, 1.0, 1.0, 1e-3, 1e-3, 1e-3] * 1e-2
    )
    supports = FixNode(frame, 0) | FixNode(frame, 5, values=1e-4 * rng.standard_normal(6))
    a, b = lattice.NodeAt((2, 1, 1)), lattice.NodeAt((2, 3, 1))
    axis = (lattice.nodes[b] - lattice.nodes[a]) / np.linalg.norm(
        lattice.nodes[b] - lattice.nodes[a]
    )
    row = np.zeros(frame.num_dofs)
    row[frame.NodeDofs(b)[:3]], row[frame.NodeDofs(a)[:3]] = axis, -axis
    solution = frame.Solve(
        loads=loads, supports=supports, actuators=[Actuator(a, b, stroke=1e-3, mount="axial")]
    )
    reference = _DenseSolve(frame, loads, supports, [(row, 1e-3)])
    scale = np.abs(reference).max()
    # A linear solve: the factorisations' round-off times K's condition number (~1e7 here).
    assert np.abs(solution.displacements - reference).max() <= 1e-8 * scale
    energy = (
        0.5
        * reference.ravel()
        @ _DenseSum(frame, LocalStiffness(frame.section, frame.lengths))
        @ reference.ravel()
    )
    assert solution.strain_energy == pytest.approx(energy, rel=1e-9)


@pytest.mark.parametrize("backend", _Backends())
def test_second_order_solve_agrees_across_backends(backend, monkeypatch):
    """P-Delta iterations (one pattern, so PARDISO's analysis carries over) against SuperLU
    on the frame's nested-dissection order."""
    lattice = CubicLattice((2, 2, 3))
    loads = np.zeros((lattice.num_nodes, 6))
    top = lattice.nodes[:, 2] > lattice.nodes[:, 2].max() - 1e-9
    loads[top, 2] = -2.0
    bottom = np.flatnonzero(lattice.nodes[:, 2] < 1e-9)

    def Run(name):
        monkeypatch.setenv("DRAKEBOTS_FRAME_SOLVER", name)
        frame = lattice.MakeFrame()
        supports = {}
        for node in bottom:
            supports |= FixNode(frame, int(node))
        return frame.Solve(loads=loads, supports=supports, second_order=True)

    solution, reference = Run(backend), Run("superlu")
    assert solution.converged and solution.iterations >= 2
    scale = np.abs(reference.displacements).max()
    assert np.abs(solution.displacements - reference.displacements).max() <= 1e-9 * scale


def test_distinct_rows_partition_as_numpy_unique():
    """The hashed grouping of element geometries against np.unique(axis=0): same groups."""
    from drakebots.frame.model import _Distinct

    rng = np.random.default_rng(6)
    table = np.round(rng.standard_normal((7, 10)), 3)
    table[0, :3] = [1.0, -1.0, 0.0]
    table[1] = table[0]
    table[1, 2] = -0.0  # the same geometry as row 0
    rows = table[rng.integers(0, len(table), 500)]
    first, inverse = _Distinct(rows)
    _, reference = np.unique(rows, axis=0, return_inverse=True)
    reference = reference.ravel()
    assert np.array_equal(rows[first][inverse], rows)
    # Same partition: a one-to-one map between the two labellings.
    pairs = set(zip(inverse.tolist(), reference.tolist()))
    assert len(pairs) == len(set(inverse.tolist())) == len(set(reference.tolist()))


def test_a_solved_frame_pickles_and_copies_and_solves_again():
    """The frame keeps its last factorisation; pickles and copies leave it behind."""
    import copy
    import pickle

    lattice = CubicLattice((2, 2, 2))
    frame = lattice.MakeFrame()
    actuator = Actuator(lattice.NodeAt((2, 1, 1)), lattice.NodeAt((2, 3, 1)), stroke=1e-3)
    first = frame.Solve(actuators=[actuator], clamp_node=0)
    for other in (pickle.loads(pickle.dumps(frame)), copy.deepcopy(frame)):
        again = other.Solve(actuators=[actuator], clamp_node=0)
        assert np.array_equal(again.displacements, first.displacements)
    frame.ReleaseFactorization()
    again = frame.Solve(actuators=[actuator], clamp_node=0)
    assert np.array_equal(again.displacements, first.displacements)


def test_factorization_threads_hold_mkl_and_restore_it(monkeypatch):
    """DRAKEBOTS_FRAME_THREADS, read through MKL's own count (mkl_get_max_threads): unset (the
    default) and 0 leave MKL's own setting, a count holds MKL to it inside the context only."""
    from drakebots.fem import pardiso
    from drakebots.frame.model import FactorizationThreads

    library = pardiso.Library()
    if library is None:
        pytest.skip("MKL is not installed: the frame factorises without it")
    before = library.MKL_Get_Max_Threads()
    for setting, inside in ((None, before), ("1", 1), ("0", before)):
        if setting is None:
            monkeypatch.delenv("DRAKEBOTS_FRAME_THREADS", raising=False)
        else:
            monkeypatch.setenv("DRAKEBOTS_FRAME_THREADS", setting)
        with FactorizationThreads():
            assert library.MKL_Get_Max_Threads() == inside
        assert library.MKL_Get_Max_Threads() == before
