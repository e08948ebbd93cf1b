"""The multifrontal Cholesky (drakebots.frame.cholesky) against dense and SuperLU solves, and the
nested-dissection tree's separator property."""

import numpy as np
import pytest
import scipy.sparse as sp

from drakebots.frame.cholesky import NestedDissectionTree, SupernodalCholesky
from drakebots.frame.model import Actuator, _Factorize
from drakebots.voxel.lattice import CubicLattice


def _Ancestors(parent, block):
    out = set()
    while block >= 0:
        out.add(block)
        block = parent[block]
    return out


def test_tree_is_a_valid_elimination_tree():
    """Every edge joins a block to itself or to an ancestor (separators separate), and blocks
    come after their children."""
    lattice = CubicLattice((4, 3, 3))
    order, ptr, parent = NestedDissectionTree(lattice.nodes, lattice.struts, leaf_size=8)
    assert np.array_equal(np.sort(order), np.arange(lattice.num_nodes))
    block_of = np.empty(lattice.num_nodes, dtype=int)
    for b in range(len(parent)):
        block_of[order[ptr[b] : ptr[b + 1]]] = b
        assert parent[b] == -1 or parent[b] > b
    for i, j in lattice.struts:
        bi, bj = block_of[i], block_of[j]
        assert bi in _Ancestors(parent, bj) or bj in _Ancestors(parent, bi)


def test_supernodal_cholesky_solves_a_random_spd_matrix_on_a_lattice_pattern():
    lattice = CubicLattice((3, 3, 2))
    order, ptr, parent = NestedDissectionTree(lattice.nodes, lattice.struts, leaf_size=4)
    n = lattice.num_nodes
    rng = np.random.default_rng(3)
    edges = lattice.struts
    weights = rng.uniform(0.5, 2.0, len(edges))
    # A weighted graph Laplacian plus a positive diagonal: SPD with the lattice's pattern.
    W = sp.coo_matrix((weights, (edges[:, 0], edges[:, 1])), shape=(n, n))
    W = W + W.T
    A = sp.diags(np.asarray(W.sum(axis=1)).ravel() + rng.uniform(0.1, 1.0, n)) - W
    inverse = np.empty_like(order)
    inverse[order] = np.arange(n)
    factor = SupernodalCholesky(A.tocsr()[order][:, order], ptr, parent)
    b = rng.standard_normal((n, 3))
    x = factor(b[order])[inverse]
    assert np.abs(x - np.linalg.solve(A.toarray(), b)).max() < 1e-12 * np.abs(x).max()


@pytest.mark.parametrize("size", [(2, 2, 2), (5, 3, 2)])
def test_multifrontal_and_superlu_agree_on_a_lattice_solve(size):
    lattice = CubicLattice(size)
    frame = lattice.MakeFrame()
    a, b = lattice.NodeAt((2, 1, 1)), lattice.NodeAt((2, 3, 1))
    K = frame.StiffnessMatrix().tocsr()
    fixed = np.r_[frame.NodeDofs(a), frame.NodeDofs(b)]
    free = np.setdiff1d(np.arange(frame.num_dofs), fixed)
    K_ff = K[free][:, free].tocsc()
    rhs = np.random.default_rng(0).standard_normal((len(free), 2))
    ordering = frame._FreeOrdering(free)
    x = _Factorize(K_ff, *ordering, backend="multifrontal")(rhs)
    y = _Factorize(K_ff, *ordering, backend="superlu")(rhs)
    assert np.abs(x - y).max() <= 1e-9 * np.abs(y).max()
    assert np.abs(K_ff @ x - rhs).max() <= 1e-9 * np.abs(rhs).max()
    # The frame solve itself: the clamped actuator's stroke is met exactly.
    u = frame.Solve(actuators=[Actuator(a, b, stroke=1e-3, mount="clamped")]).translations
    assert (u[b] - u[a])[1] == pytest.approx(1e-3, rel=1e-12)


def test_unsupported_frame_is_reported():
    lattice = CubicLattice((2, 2, 1))
    loads = np.zeros((lattice.num_nodes, 6))
    loads[0, 0] = 1.0
    with pytest.raises(ValueError, match="not supported"):
        lattice.MakeFrame().Solve(loads=loads)


def test_empty_supernodes_pass_their_children_updates_on():
    """A supernode whose columns are all fixed DOFs is empty; its children's updates go through."""
    lattice = CubicLattice((3, 2, 2))
    order, ptr, parent = NestedDissectionTree(lattice.nodes, lattice.struts, leaf_size=4)
    n = lattice.num_nodes
    edges = lattice.struts
    W = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    W = W + W.T
    A = (sp.diags(np.asarray(W.sum(axis=1)).ravel() + 0.5) - W).tocsr()
    # Insert an empty block between leaf 0 and its parent.
    leaf = 0
    new_ptr = np.insert(ptr, leaf + 2, ptr[leaf + 1])
    new_parent = np.where(parent > leaf, parent + 1, parent)
    new_parent = np.insert(new_parent, leaf + 1, new_parent[leaf])
    new_parent[leaf] = leaf + 1
    inverse = np.empty_like(order)
    inverse[order] = np.arange(n)
    b = np.arange(n, dtype=float)
    x = SupernodalCholesky(A[order][:, order], new_ptr, new_parent)(b[order])[inverse]
    assert np.abs(A @ x - b).max() < 1e-12 * np.abs(b).max()


@pytest.mark.paper
def test_benchmark_lattice_solve_agrees_with_superlu():
    """The 14x14x14 benchmark lattice (52920 unknowns): multifrontal against SuperLU, residual."""
    lattice = CubicLattice((14, 14, 14))
    frame = lattice.MakeFrame()
    a, b = lattice.NodeAt((14, 1, 1)), lattice.NodeAt((14, 3, 1))
    K = frame.StiffnessMatrix().tocsr()
    fixed = np.r_[frame.NodeDofs(a), frame.NodeDofs(b)]
    free = np.setdiff1d(np.arange(frame.num_dofs), fixed)
    K_ff = K[free][:, free].tocsc()
    rhs = np.random.default_rng(1).standard_normal(len(free))
    ordering = frame._FreeOrdering(free)
    x = _Factorize(K_ff, *ordering, backend="multifrontal")(rhs)
    y = _Factorize(K_ff, *ordering, backend="superlu")(rhs)
    assert np.abs(K_ff @ x - rhs).max() <= 1e-8 * np.abs(rhs).max()
    assert np.abs(x - y).max() <= 1e-7 * np.abs(y).max()
