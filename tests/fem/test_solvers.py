"""The sparse factorisations behind drakebots.fem.solvers: every backend refuses a matrix that is
not positive definite, the pivoted LU solves it, and every solve is checked (issue 53).

References: NumPy's dense eigenvalues (the inertia) and dense LAPACK solves.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from drakebots.fem.solvers import (
    BACKWARD_ERROR_TOLERANCE,
    BackwardError,
    CholmodAvailable,
    Factorize,
    FactorSymmetric,
    InaccurateSolve,
    LuFactor,
    NestedDissection,
    NotPositiveDefinite,
    OrderedSplu,
    PardisoAvailable,
    SpdFactor,
)

BACKENDS = (
    ["splu", "dense"]
    + (["cholmod"] if CholmodAvailable() else [])
    + (["pardiso"] if PardisoAvailable() else [])
)
needs_pardiso = pytest.mark.skipif(
    not PardisoAvailable(), reason="MKL PARDISO does not load (the `mkl` wheel is x86-64 only)"
)


def _Laplacian(n: int = 12, block: int = 3) -> sp.csc_matrix:
    """A 2-D grid Laplacian with `block` dofs a node: symmetric, positive semi-definite (one
    constant mode per dof)."""
    one = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    grid = sp.kron(one, sp.identity(n)) + sp.kron(sp.identity(n), one)
    return sp.kron(grid, sp.identity(block)).tocsc()


def _Spd():
    A = _Laplacian() + 1e-2 * sp.identity(432)
    return A.tocsc()


def _Indefinite():
    """The SPD matrix shifted past its lowest eigenvalues: three negative ones (the neo-Hookean
    stiffness of a compressed skin is so)."""
    A = _Laplacian()
    lowest = np.linalg.eigvalsh(A.toarray())[:6]
    return (A - 0.5 * (lowest[2] + lowest[3]) * sp.identity(A.shape[0])).tocsc()


def test_the_test_matrices_have_the_inertia_they_claim():
    assert np.linalg.eigvalsh(_Spd().toarray()).min() > 0
    assert np.sum(np.linalg.eigvalsh(_Indefinite().toarray()) < 0) == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_solves_a_positive_definite_system(backend):
    A = _Spd()
    rng = np.random.default_rng(0)
    b = rng.standard_normal(A.shape[0])
    B = rng.standard_normal((A.shape[0], 5))
    factor = FactorSymmetric(A, backend, ordering=NestedDissection)
    assert factor.backend == backend
    dense = A.toarray()
    np.testing.assert_allclose(factor.solve(b), np.linalg.solve(dense, b), rtol=1e-10)
    np.testing.assert_allclose(factor.solve(B), np.linalg.solve(dense, B), rtol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_refuses_an_indefinite_matrix(backend):
    with pytest.raises(NotPositiveDefinite):
        SpdFactor(backend, NestedDissection).Factor(_Indefinite())


@pytest.mark.parametrize(
    "method", ["splu_nd", "splu", "splu_colamd"] + (["pardiso"] if PardisoAvailable() else [])
)
def test_factorize_refuses_an_indefinite_matrix(method):
    """The skin's Newton steps (BackwardEuler) take this refusal as their cue to project."""
    with pytest.raises(NotPositiveDefinite):
        Factorize(_Indefinite(), method)


def test_superlu_refuses_a_singular_matrix():
    """A dof with no stiffness (a zero row and column): exactly singular."""
    A = _Spd().tolil()
    A[7, :] = 0.0
    A[:, 7] = 0.0
    with pytest.raises(NotPositiveDefinite):
        OrderedSplu(NestedDissection).Factor(A.tocsc())


def test_the_pivoted_lu_solves_an_indefinite_system_that_no_pivoting_gets_wrong():
    """[[δ, 1], [1, δ]] blocks (δ = 1e-13) beside an SPD part: without pivoting the first pivot δ
    grows the second to -1e13 and the solve loses ~10 digits (checked: SciPy's unpivoted
    SuperLU leaves a backward error far above the tolerance). The positive-definite
    factorisation refuses it and the pivoted LU solves it to round-off."""
    delta = 1e-13
    k = 40
    pairs = sp.kron(sp.identity(k), sp.csc_matrix([[delta, 1.0], [1.0, delta]]))
    A = sp.block_diag([pairs, _Spd()]).tocsc()
    rng = np.random.default_rng(1)
    b = rng.standard_normal(A.shape[0])
    unpivoted = spla.splu(
        A, permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True}
    )
    assert BackwardError(A, unpivoted.solve(b), b) > 1e3 * BACKWARD_ERROR_TOLERANCE
    with pytest.raises(NotPositiveDefinite):
        FactorSymmetric(A, "splu", ordering="natural")
    factor = FactorSymmetric(A, "splu", ordering="natural", indefinite="lu")
    assert factor.backend == "lu"
    x = factor.solve(b)
    np.testing.assert_allclose(x, np.linalg.solve(A.toarray(), b), rtol=1e-9, atol=1e-12)
    assert BackwardError(A, x, b) <= BACKWARD_ERROR_TOLERANCE


def test_the_pivoted_lu_solves_the_shifted_laplacian():
    A = _Indefinite()
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    x = LuFactor(NestedDissection).Factor(A).solve(b)
    np.testing.assert_allclose(x, np.linalg.solve(A.toarray(), b), rtol=1e-8)


def test_a_wrong_solve_is_caught():
    """A factor that answers wrongly (a perturbed solve, as an unstable factorisation would) is
    caught by the backward-error check of a single vector and of a block of columns, after one
    step of iterative refinement that cannot mend it."""
    A = _Spd()

    class Wrong(OrderedSplu):
        def _Solve(self, b):
            return 1.01 * super()._Solve(b)

    factor = Wrong(NestedDissection).Factor(A)
    rng = np.random.default_rng(3)
    with pytest.raises(InaccurateSolve, match="backward error"):
        factor.solve(rng.standard_normal(A.shape[0]))
    with pytest.raises(InaccurateSolve):
        factor.solve(rng.standard_normal((A.shape[0], 4)))


def test_iterative_refinement_mends_a_slightly_wrong_solve():
    A = _Spd()

    class Slightly(OrderedSplu):
        def _Solve(self, b):
            return (1.0 + 1e-7) * super()._Solve(b)

    b = np.random.default_rng(4).standard_normal(A.shape[0])
    x = Slightly(NestedDissection).Factor(A).solve(b)
    assert BackwardError(A, x, b) <= BACKWARD_ERROR_TOLERANCE


@needs_pardiso
def test_pardiso_is_what_the_default_install_gets():
    """The `mkl` wheel is a default dependency on x86-64: "auto" must mean PARDISO there, so the
    default install never falls back to SuperLU unasked (issue 52)."""
    from drakebots.fem.solvers import AutoBackend, ResolveMethod

    assert AutoBackend() == "pardiso"
    assert ResolveMethod("auto") == "pardiso"
    assert FactorSymmetric(_Spd()).backend == "pardiso"


@needs_pardiso
def test_pardiso_half_solve_gives_the_compliance():
    """Yᵀ Y with Y = L⁻¹ P B equals Bᵀ A⁻¹ B computed by dense LAPACK."""
    from drakebots.fem.solvers import PardisoFactor

    A = _Spd()
    B = np.random.default_rng(4).standard_normal((A.shape[0], 7))
    Y = PardisoFactor().Factor(A).HalfSolve(B)
    np.testing.assert_allclose(Y.T @ Y, B.T @ np.linalg.solve(A.toarray(), B), rtol=1e-10)


@needs_pardiso
def test_pardiso_counts_a_dense_cholesky_at_a_third_of_n_cubed():
    """The factorisation's operation count that bench_skinned reports beside its seconds
    (issue 52): on a dense matrix every ordering gives a dense factor, whose Cholesky takes
    n³/3 multiply-adds' worth of operations to leading order (Golub and Van Loan, Alg. 4.2.1).
    PARDISO's count (in 10^6, with its supernodal block updates) lies within 20 % above it.
    A second analysis on the same handle, of another size, reports its own count."""
    from drakebots.fem.solvers import PardisoFactor

    factor = PardisoFactor()
    rng = np.random.default_rng(12)
    for n in (1000, 600):
        B = rng.standard_normal((n, n))
        factor.Factor(sp.csc_matrix(B @ B.T + n * np.eye(n)))
        assert 1.0 <= factor.factor_flops / (n**3 / 3) <= 1.2


@needs_pardiso
def test_pardiso_ldlt_reports_the_inertia_and_solves_an_indefinite_system():
    """The pivoted LDLᵀ that takes the coupled simulator's exact Hessian: its inertia is NumPy's
    eigenvalue count, its solve LAPACK's."""
    A = _Indefinite()
    factor = FactorSymmetric(A, "pardiso", indefinite="lu")
    assert factor.backend == "ldlt"
    eigenvalues = np.linalg.eigvalsh(A.toarray())
    assert factor.inertia == (int(np.sum(eigenvalues > 0)), int(np.sum(eigenvalues < 0)))
    b = np.random.default_rng(5).standard_normal(A.shape[0])
    np.testing.assert_allclose(factor.solve(b), np.linalg.solve(A.toarray(), b), rtol=1e-8)


@needs_pardiso
def test_pardiso_reuses_its_analysis_and_follows_a_new_pattern():
    """New values on the same pattern, then a different pattern, on one handle: each solve is
    LAPACK's."""
    from drakebots.fem.solvers import PardisoFactor

    factor = PardisoFactor()
    b = np.random.default_rng(6).standard_normal(432)
    for A in (_Spd(), (2.0 * _Spd()).tocsc(), (_Laplacian() + sp.identity(432)).tocsc()):
        x = factor.Factor(A).solve(b)
        np.testing.assert_allclose(x, np.linalg.solve(A.toarray(), b), rtol=1e-10)
    bigger = (_Laplacian(n=13) + sp.identity(507)).tocsc()
    b = np.ones(507)
    np.testing.assert_allclose(
        factor.Factor(bigger).solve(b), np.linalg.solve(bigger.toarray(), b), rtol=1e-10
    )


@needs_pardiso
def test_pardiso_keeps_its_analysis_for_a_pattern_inside_the_analysed_one():
    """A pattern with entries left out (a penalty pair that separated) is factorised in the
    analysed pattern (no new analysis); one with a new entry is analysed as the union, which
    then takes both. Each solve against LAPACK's dense solve."""
    from drakebots.fem.solvers import PardisoFactor

    full = (_Laplacian() + 2.0 * sp.identity(432)).tocsc()
    diagonal = sp.diags(full.diagonal()).tocsc()
    coupled = full.copy().tolil()
    coupled[0, 431] = coupled[431, 0] = -0.5  # an entry outside the Laplacian's pattern
    b = np.random.default_rng(7).standard_normal(432)
    farther = full.copy().tolil()
    farther[3, 200] = farther[200, 3] = -0.25  # another entry, outside the union so far
    factor = PardisoFactor()
    steps = ((full, 1), (diagonal, 1), (coupled.tocsc(), 2), (full, 2), (farther.tocsc(), 3))
    seen = set()
    for A, analyses in steps:
        x = factor.Factor(A).solve(b)
        np.testing.assert_allclose(x, np.linalg.solve(A.toarray(), b), rtol=1e-10)
        assert factor._pardiso.analyses == analyses
        # The analysed pattern is the union of the upper triangles given so far (NumPy's).
        upper = sp.triu(A).tocoo()
        seen |= set((upper.row.astype(np.int64) * 432 + upper.col).tolist())
        np.testing.assert_array_equal(factor._pardiso._keys, np.array(sorted(seen)))


def _Columns(n: int, k: int, seed: int) -> sp.csc_matrix:
    """k sparse columns of n rows, each on 3-9 rows (a sole patch's force distribution)."""
    rng = np.random.default_rng(seed)
    cols = []
    for _ in range(k):
        rows = rng.choice(n, rng.integers(3, 10), replace=False)
        col = np.zeros(n)
        col[rows] = rng.standard_normal(len(rows))
        cols.append(col)
    return sp.csc_matrix(np.array(cols).T)


@needs_pardiso
@pytest.mark.parametrize("aggressiveness", [0, 1, 3])
def test_pardiso_schur_block_gives_the_compliance_of_its_columns(aggressiveness, monkeypatch):
    """A factorisation bordered by fixed columns W (PARDISO's Schur block): its Schur complement
    is Wᵀ A⁻¹ W, its half-solve's border Wᵀ A⁻¹ B and its Gram Bᵀ A⁻¹ B, its solves A⁻¹ b and,
    split at the border, A⁻¹ (b + W g), each against LAPACK's dense solve, over new values, a
    pattern inside the analysed one and a grown pattern (a new entry: the border must follow the
    new analysis); with each aggressiveness of PARDISO's optimisations for the later phases
    (pardiso.SCHUR_ORDERING_AGGRESSIVENESS: another ordering and supernodes, the same answers)."""
    from drakebots.fem import pardiso
    from drakebots.fem.solvers import PardisoFactor

    monkeypatch.setattr(pardiso, "SCHUR_ORDERING_AGGRESSIVENESS", aggressiveness)

    full = (_Laplacian() + 2.0 * sp.identity(432)).tocsc()
    grown = full.copy().tolil()
    grown[5, 400] = grown[400, 5] = -0.5  # outside the Laplacian's pattern
    W = _Columns(432, 7, seed=8)
    rng = np.random.default_rng(9)
    B = rng.standard_normal((432, 4))
    b = rng.standard_normal(432)
    factor = PardisoFactor(schur_columns=W)
    steps = ((full, 1), ((3.0 * full).tocsc(), 1), (sp.diags(full.diagonal()).tocsc(), 1))
    for A, analyses in steps + ((grown.tocsc(), 2), (full, 2)):
        factor.Factor(A)
        dense = A.toarray()
        A_inv_W = np.linalg.solve(dense, W.toarray())
        np.testing.assert_allclose(factor.schur_complement, W.T @ A_inv_W, rtol=1e-10, atol=1e-14)
        Y, Z = factor.HalfSolveWithColumns(B)
        np.testing.assert_allclose(Y.T @ Y, B.T @ np.linalg.solve(dense, B), rtol=1e-10)
        np.testing.assert_allclose(Z, A_inv_W.T @ B, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(factor.solve(b), np.linalg.solve(dense, b), rtol=1e-10)
        np.testing.assert_allclose(factor.solve(B), np.linalg.solve(dense, B), rtol=1e-10)
        # The solve split at the border: the forward substitution's border rows -Wᵀ A⁻¹ b, and
        # the backward one with forces g on W's columns A⁻¹ (b + W g).
        y = factor.ForwardBordered(b)
        np.testing.assert_allclose(-y[432:], A_inv_W.T @ b, rtol=1e-10, atol=1e-14)
        g = rng.standard_normal(W.shape[1])
        expected = np.linalg.solve(dense, b + W @ g)
        refinements = factor.refinements
        np.testing.assert_allclose(factor.BackwardBordered(y, b, g), expected, rtol=1e-10)
        assert factor.refinements == refinements  # right without the check's refinement
        assert factor._pardiso.analyses == analyses


@needs_pardiso
def test_pardiso_reads_mkls_version_as_its_wheel_states_it():
    """`pardiso.Version()` (from MKL's own version string) against the installed wheel's
    metadata (the `mkl` package: 2026.2.0 is MKL 2026.2), and a Schur block asks PARDISO for its
    later-phase optimisations (iparm[1] = 10 L + 2) only where MKL takes them."""
    from importlib import metadata

    from drakebots.fem import pardiso

    try:
        wheel = metadata.version("mkl")
    except metadata.PackageNotFoundError:
        pytest.skip("MKL is not the `mkl` wheel here (no version to compare with)")
    major, minor = (int(part) for part in wheel.split(".")[:2])
    assert pardiso.Version() == (major, minor)
    handle = pardiso.Pardiso(schur_columns=_Columns(432, 3, seed=10))
    takes = (major, minor) >= pardiso._AGGRESSIVENESS_FROM
    expected = 10 * pardiso.SCHUR_ORDERING_AGGRESSIVENESS + 2 if takes else 2
    assert int(handle._iparm[1]) == expected
    assert int(pardiso.Pardiso()._iparm[1]) == 2  # without a block, METIS as before


@needs_pardiso
def test_pardiso_schur_block_still_refuses_an_indefinite_matrix_and_a_given_order():
    from drakebots.fem import pardiso
    from drakebots.fem.solvers import PardisoFactor

    with pytest.raises(NotPositiveDefinite):
        PardisoFactor(schur_columns=_Columns(432, 3, seed=10)).Factor(_Indefinite())
    with pytest.raises(ValueError, match="own ordering"):
        pardiso.Pardiso(ordering="natural", schur_columns=_Columns(432, 3, seed=10))


@needs_pardiso
def test_pardiso_refuses_a_pattern_without_its_diagonal():
    A = _Spd().tolil()
    A[5, 5] = 0.0
    A = A.tocsc()
    A.eliminate_zeros()
    from drakebots.fem.solvers import PardisoFactor

    with pytest.raises(ValueError, match="diagonal"):
        PardisoFactor().Factor(A)


@needs_pardiso
def test_pardiso_refuses_a_singular_semidefinite_matrix():
    """A free (Neumann) grid Laplacian is positive semi-definite with constant null vectors
    (NumPy: its lowest eigenvalue is zero to round-off): Cholesky meets round-off-sized pivots
    there, and PARDISO's factor must be refused as an unsupported frame's is, not used."""
    n = 12
    one = sp.diags(
        [-np.ones(n - 1), np.r_[1.0, 2 * np.ones(n - 2), 1.0], -np.ones(n - 1)], [-1, 0, 1]
    )
    A = (sp.kron(one, sp.identity(n)) + sp.kron(sp.identity(n), one)).tocsc()
    assert abs(np.linalg.eigvalsh(A.toarray())[0]) < 1e-12
    with pytest.raises(NotPositiveDefinite):
        SpdFactor("pardiso").Factor(A)
    # Where the round-off pivot comes out positive instead, its size refuses it
    # (tests/frame/test_cholesky.py::test_unsupported_frame_is_reported: a pivot 2.5e-16 of its
    # diagonal entry).


@needs_pardiso
def test_pardiso_takes_the_callers_order_and_keeps_it_when_the_pattern_grows():
    """SpdFactor("pardiso", ordering): a permutation, "natural" or a function (called once for
    the size, its order kept for the grown pattern's analysis) gives the solve a direct sparse
    LU gives, and a pattern grown by one far-apart pair (a self-collision) is analysed again."""
    A = (_Laplacian(10) + sp.identity(300)).tocsc()
    b = np.random.default_rng(4).standard_normal(A.shape[0])
    calls = []

    def Order(M):
        calls.append(M.shape[0])
        return NestedDissection(M)

    n = A.shape[0]
    pair = sp.csc_matrix(([-0.5, -0.5], ([0, n - 1], [n - 1, 0])), shape=(n, n))
    grown = (A + pair + sp.diags(np.r_[0.5, np.zeros(n - 2), 0.5])).tocsc()
    for ordering in (NestedDissection(A), "natural", Order):
        factor = SpdFactor("pardiso", ordering)
        for M in (A, grown):
            x = factor.Factor(M).solve(b)
            np.testing.assert_allclose(x, spla.spsolve(M, b), rtol=1e-10, atol=1e-12)
        assert factor._pardiso.analyses == 2
        assert factor._pardiso._iparm[4] == 1  # the caller's order, not PARDISO's METIS
    assert calls == [n]  # the function's order was made once, kept for the grown pattern


@pytest.mark.parametrize("backend", ["splu", "pardiso"])
def test_a_dropped_factorisation_is_freed_at_once(backend):
    """FactorSymmetric's result names itself as its positive-definite factorisation without a
    reference to itself: with that cycle a dropped PARDISO handle (0.4-0.5 GB on the monster's
    skin) stayed until Python's cyclic collector ran, and a replay whose Schur blocks changed
    every step grew by a handle a step (issue 69). Freed by reference counting alone here."""
    import gc
    import weakref

    from drakebots.fem.solvers import FactorSymmetric, PardisoAvailable

    if backend == "pardiso" and not PardisoAvailable():
        pytest.skip("MKL PARDISO not available")
    A = sp.csc_matrix(sp.diags([4.0] * 20))
    factor = FactorSymmetric(A, backend)
    assert factor.positive_definite_factor is factor
    np.testing.assert_allclose(factor.solve(np.ones(20)), 0.25)
    gone = weakref.ref(factor)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del factor
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
