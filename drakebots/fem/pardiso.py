"""Intel MKL PARDISO's sparse symmetric factorisation, bound through ctypes (the `mkl` wheel).

Why PARDISO is the default factorisation (issue 52; scripts/bench_fem.py, table "factorizations"):
the default install needs a CHOLMOD-class sparse Cholesky without a compiler. CHOLMOD itself
(scikit-sparse) builds from source against SuiteSparse, and its supernodal module is GPL, so it
can only be an optional extra of this BSD-3 package. Intel's `mkl` wheel (Intel Simplified
Software License: redistributable, no copyleft) ships PARDISO, a supernodal direct solver with
its own METIS nested dissection, for x86-64 Linux and Windows. Measured on the monster's first
coupled QPCC frame (reduced matrix K_red, 127,993 rows, 4.54 M non-zeros), one thread:

    ==================  =========  ========  ==================
    backend             numeric    82-column half-solve  fill (nnz L)
    ==================  =========  ========  ==================
    PARDISO (mtype 2)   0.50 s     0.31 s    23.9 M
    CHOLMOD supernodal  0.68 s     0.37 s    22.0 M
    SuperLU (METIS ND)  6.0 s      3.8 s (full solve)
    ==================  =========  ========  ==================

This module binds only what drakebots uses, and checks it:

- mtype 2 (real symmetric positive definite, Cholesky): a matrix that is not positive definite
  stops the numeric phase with error -4 (a zero or negative pivot), raised here as
  `NonPositivePivot` (drakebots.fem.solvers makes it `NotPositiveDefinite`, the counterpart of
  CHOLMOD's refusal). A singular positive semi-definite matrix can instead factorise with
  round-off-sized positive pivots (an unsupported frame's rigid-body modes: smallest pivot
  2.5e-16 of its diagonal entry, measured), so the pivots are read back (`pardiso_getdiag`) and a
  pivot below `SINGULAR_PIVOT_RATIO` of its diagonal entry is refused the same way (the monster's
  reduced QPCC matrix: 4.7e-7 at the least).
- mtype -2 (real symmetric indefinite, Bunch-Kaufman pivoting) reports the inertia; pivots that
  PARDISO perturbs are counted, and every solve is checked by the caller's backward error.
- Phase 331 (forward substitution) gives the half-solve Y = L⁻¹ P B, so Bᵀ A⁻¹ B = Yᵀ Y costs half
  a full solve.
- A Schur block (iparm[35] = 1, `schur_columns` W fixed for the handle): A is factorised bordered,
  [[A, W], [Wᵀ, 0]] with the border's rows last, and the numeric phase returns the border's Schur
  complement -Wᵀ A⁻¹ W. Its forward substitution of [B; 0] gives L⁻¹ P B and, in the border's
  rows, -Wᵀ A⁻¹ B; A⁻¹ B is that substitution with the border's part zeroed, then the backward
  one (phase 33 would solve the bordered system instead, which needs the Schur complement
  factorised: it is not called). PARDISO then takes its own ordering (perm marks the border),
  with its optimisations for the later phases at `SCHUR_ORDERING_AGGRESSIVENESS` (MKL 2025.3
  and later: the numeric phase about a sixth faster on the monster's skin).
- The symbolic analysis (phase 11) is redone only when the sparsity pattern gains an entry: a
  pattern inside the analysed one is factorised in it (its missing entries zero), and one with a
  new entry is analysed as the union of both, so the pattern of a run's Newton matrices settles
  (the coupled simulator's vary with the penalties: a skin vertex entering a skeleton box, a
  self-collision pair). The map from the caller's CSC data to the upper-triangular CSR that
  PARDISO reads is made once per pattern. `Pardiso.analyses` counts the analyses.

MKL's integer interface is set to LP64 (32-bit indices) before the first call; matrices above
2³¹ non-zeros are refused by name. The handle's memory is released (phase -1) when a pattern
changes and when the factor is garbage-collected.
"""

import ctypes
import ctypes.util
import glob
import os
import re
import sys

import numpy as np
import scipy.sparse as sp

# PARDISO's matrix types used here.
POSITIVE_DEFINITE = 2
INDEFINITE = -2
# A Cholesky pivot (the Schur complement's diagonal entry) this small against the matrix's own
# diagonal entry means the matrix is singular to working precision (condition above ~1e13).
SINGULAR_PIVOT_RATIO = 1e-13
_ERRORS = {
    -1: "input inconsistent",
    -2: "not enough memory",
    -3: "reordering problem",
    -4: "zero pivot, numerical factorization or iterative refinement problem",
    -5: "unclassified (internal) error",
    -6: "reordering failed",
    -7: "diagonal matrix is singular",
    -8: "32-bit integer overflow problem",
    -9: "not enough memory for OOC",
    -10: "error opening OOC files",
    -11: "read/write error with OOC files",
    -12: "pardiso_64 called from 32-bit library",
}

_library = None
_tried = False


def _Candidates() -> list[str]:
    """Where the `mkl` wheel puts libmkl_rt (its data files go to the environment's lib/)."""
    names = ["libmkl_rt.so.2", "libmkl_rt.so.3", "libmkl_rt.so", "libmkl_rt.dylib", "mkl_rt.2.dll"]
    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    try:
        import site

        prefixes.append(site.getuserbase())
    except (ImportError, AttributeError):  # pragma: no cover - site is always there
        pass
    found = []
    for prefix in dict.fromkeys(prefixes):
        for sub in ("lib", os.path.join("Library", "bin")):
            for name in names:
                found.extend(sorted(glob.glob(os.path.join(prefix, sub, name))))
    system = ctypes.util.find_library("mkl_rt")
    if system:
        found.append(system)
    return found


def Library():
    """MKL's runtime library (ctypes.CDLL), or None where the `mkl` wheel is not installed or no
    library loads (e.g. a platform without an MKL build; drakebots then uses SuperLU)."""
    global _library, _tried
    if _tried:
        return _library
    _tried = True
    if os.environ.get("DRAKEBOTS_NO_PARDISO", "").strip() not in ("", "0"):
        return None
    for path in _Candidates():
        try:
            lib = ctypes.CDLL(path)
            lib.pardiso.restype = None
        except (OSError, AttributeError):
            continue
        lib.MKL_Set_Interface_Layer.argtypes = [ctypes.c_int]
        lib.MKL_Set_Interface_Layer.restype = ctypes.c_int
        lib.MKL_Set_Interface_Layer(0)  # LP64: 32-bit MKL_INT
        _library = lib
        break
    return _library


def Version() -> tuple[int, int] | None:
    """MKL's (major, minor) version, e.g. (2026, 2), or None where PARDISO is not available."""
    lib = Library()
    if lib is None:
        return None
    text = ctypes.create_string_buffer(256)
    lib.mkl_get_version_string(text, len(text))
    # "Intel(R) oneAPI Math Kernel Library Version 2026.2-Product Build 20260915 for ..."
    found = re.search(r"Version (\d+)(?:\.(\d+))?", text.value.decode(errors="replace"))
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2) or 0)


# The aggressiveness L of PARDISO's data-structure and reordering optimisations for the later
# phases (iparm[1] = 10 L + 2, METIS; documented from oneMKL 2026.0, accepted by 2025.3) in a
# factorisation with a Schur block. Measured on the monster's folded skin matrix (128,583 rows)
# bordered by 1,500 coordinates at its soles, alternated on an idle 2-core machine, MKL
# 2026.2: the numeric phase 0.72-0.79 s at L = 1 (0.72-0.75 s at L = 3, 5, 10) against
# 0.90-0.93 s at L = 0, the analysis unchanged (1.8-2.0 s with the pattern's set-up), the factor
# 24.9M entries against 24.2M (so a substitution reads 3 % more), the Schur complement equal to
# 6e-14 relative; with 2025.3 0.68-0.69 against 0.76-0.80 s. Without a block, in our nested
# dissection, no difference outside the noise (0.53-0.66 against 0.61-0.62 s), so it is set
# with a block only. Issue 69, Findings 34 in docs/reproductions/skinned.md.
SCHUR_ORDERING_AGGRESSIVENESS = 1
# Older MKL than this is given L = 0 (not measured; the option is not in its reference).
_AGGRESSIVENESS_FROM = (2025, 3)


def Available() -> bool:
    """True when MKL PARDISO loads (the `mkl` wheel, a default dependency on x86-64)."""
    return Library() is not None


class PardisoError(RuntimeError):
    """PARDISO returned an error code (other than a refused positive-definite factorisation)."""


class NonPositivePivot(PardisoError):
    """mtype 2 met a zero or negative pivot: the matrix is not positive definite."""


_INT = ctypes.c_int32
_PINT = ctypes.POINTER(_INT)
_PDOUBLE = ctypes.POINTER(ctypes.c_double)


class Pardiso:
    """One PARDISO handle for a symmetric matrix (mtype 2 or -2): `Factor(A)`, `Solve(B)`,
    `ForwardSolve(B)`; the symbolic analysis is kept while A's sparsity pattern is unchanged.

    Args:
        mtype: `POSITIVE_DEFINITE` (2, Cholesky; `Factor` raises `NonPositivePivot` for a matrix
            that is not) or `INDEFINITE` (-2, Bunch-Kaufman LDLᵀ; `inertia` is set).
        ordering: None (PARDISO's METIS), "natural", a permutation, or a function of the matrix
            returning one (`_Permutation`).
        schur_columns: a sparse n x k matrix W, fixed for the handle's life (mtype 2 only, with
            PARDISO's own ordering). `Factor(A)` then factorises the bordered matrix
            [[A, W], [Wᵀ, 0]] with its last k rows as PARDISO's Schur block (iparm[35] = 1): the
            Cholesky factor of A and, in the same pass, `schur_complement` = Wᵀ A⁻¹ W (k x k).
            `Solve` and `ForwardSolve` stay solves with A (n rows), and
            `ForwardSolveWithColumns(B)` gives L⁻¹ P B together with Wᵀ A⁻¹ B. Why: the
            frame-by-frame QPCC's compliance needs Wᵀ A⁻¹ W for its 3P patch columns, fixed for
            a whole walk; a forward half-solve of those columns costs about 4 ms each through
            the whole factor, while the factorisation reaches only the part of the elimination
            tree above their few rows (Findings 15 in docs/reproductions/skinned.md).
    """

    def __init__(self, mtype: int = POSITIVE_DEFINITE, ordering=None, schur_columns=None):
        self._lib = Library()
        if self._lib is None:
            raise PardisoError("MKL PARDISO is not available (pip install mkl)")
        if mtype not in (POSITIVE_DEFINITE, INDEFINITE):
            raise ValueError(f"mtype must be 2 or -2 (got {mtype})")
        self.mtype = int(mtype)
        self._pt = np.zeros(64, dtype=np.int64)  # PARDISO's opaque handle
        iparm = np.zeros(64, dtype=np.int32)
        iparm[0] = 1  # these settings, not the defaults
        iparm[1] = 2  # METIS nested dissection
        iparm[7] = 0  # iterative refinement: none here (the caller checks and refines)
        iparm[9] = 8  # pivot perturbation 1e-8 (mtype -2 only)
        iparm[10] = 0  # no scaling, no weighted matching: symmetric pivots only
        iparm[12] = 0
        iparm[17] = -1  # report the factor's non-zeros
        iparm[18] = -1  # report the factorisation's floating-point operations (10^6)
        iparm[20] = 1  # Bunch-Kaufman 1x1 and 2x2 pivots (mtype -2)
        iparm[34] = 1  # zero-based indices
        iparm[55] = 1 if mtype == POSITIVE_DEFINITE else 0  # keep the pivots for pardiso_getdiag
        self._iparm = iparm
        self._pattern = None
        self._analysed = False
        self._n = 0
        self._keys = None  # the analysed upper-triangle pattern, row * n + column, sorted
        self._scatter = None
        self.analyses = 0  # symbolic analyses (phase 11) this handle has run
        self.factor_nonzeros = 0  # entries of the factor, from the last analysis
        # Floating-point operations of one numeric factorisation, as PARDISO's analysis counts
        # them (iparm[18], in 10^6): with a factorisation's seconds, the rate it runs at. On
        # the monster walk's QPCC matrix (128k rows) 9.6e9, at about 14 GFlop/s on this 2-core
        # machine where MKL's dgemm runs at 63 (Findings 16 in docs/reproductions/skinned.md).
        self.factor_flops = 0.0
        self.inertia = None  # (positive, negative) pivots after an INDEFINITE factorisation
        self.perturbed_pivots = 0
        self.ordering = ordering
        self._perm_arg = None  # the permutation handed to PARDISO (iparm[4] = 1), int32
        self._user_perm = None  # (n, permutation) made by a callable `ordering`, kept
        self._columns = None  # the Schur block's columns W (n x k, COO), or None
        self._lead = 0  # rows of A (the PARDISO matrix has _lead + k)
        self.schur_complement = None  # Wᵀ A⁻¹ W after `Factor` (schur_columns only)
        if schur_columns is not None and schur_columns.shape[1] > 0:
            if mtype != POSITIVE_DEFINITE:
                raise ValueError("PARDISO's Schur block is bound here for mtype 2 only")
            if ordering is not None:
                raise ValueError(
                    "PARDISO computes a Schur complement in its own ordering (perm marks the "
                    "Schur rows): give no ordering with schur_columns"
                )
            W = sp.csc_matrix(schur_columns)
            W.sum_duplicates()
            self._columns = W.tocoo()
            iparm[35] = 1  # the Schur complement of the last k rows, in the numeric phase
            version = Version()
            if version is not None and version >= _AGGRESSIVENESS_FROM:
                iparm[1] = 10 * SCHUR_ORDERING_AGGRESSIVENESS + 2  # (METIS; see the setting)

    def _Permutation(self, A) -> np.ndarray | None:
        """The fill-reducing order the analysis takes: None (PARDISO's METIS), the identity
        for "natural", or the caller's permutation (an array, or a callable's result made once
        and kept while the size stays: a pattern that grows by a few entries, a self-collision
        pair meeting, is then analysed in the same order, symbolically only)."""
        n = A.shape[0]
        ordering = self.ordering
        if ordering is None:
            return None
        if isinstance(ordering, str):
            if ordering != "natural":
                raise ValueError(f"unknown ordering '{ordering}' (natural, a permutation, None)")
            perm = np.arange(n)
        elif callable(ordering):
            if self._user_perm is None or self._user_perm[0] != n:
                made = ordering(A)
                self._user_perm = (n, None if made is None else np.asarray(made))
            perm = self._user_perm[1]
        else:
            perm = np.asarray(ordering)
        if perm is None or len(perm) != n:
            return None  # (an ordering of another matrix: PARDISO's own)
        return np.ascontiguousarray(perm, dtype=np.int32)

    def __del__(self):
        try:
            self._Release()
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass

    def _Release(self):
        if self._analysed and self._lib is not None:
            self._Call(-1)
            self._analysed = False

    def _Call(self, phase: int, b=None, x=None, nrhs: int = 1) -> None:
        error = _INT(0)
        perm = self._perm_arg
        perm_ptr = perm.ctypes.data_as(_PINT) if (perm is not None and phase >= 0) else _PINT()
        ints = [_INT(v) for v in (1, 1, self.mtype, phase, self._n, nrhs, 0)]
        maxfct, mnum, mtype, phase_, n, nrhs_, msglvl = (ctypes.byref(v) for v in ints)
        null = _PDOUBLE()
        self._lib.pardiso(
            self._pt.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
            maxfct,
            mnum,
            mtype,
            phase_,
            n,
            self._data.ctypes.data_as(_PDOUBLE) if phase >= 0 else null,
            self._indptr.ctypes.data_as(_PINT) if phase >= 0 else _PINT(),
            self._indices.ctypes.data_as(_PINT) if phase >= 0 else _PINT(),
            perm_ptr,
            nrhs_,
            self._iparm.ctypes.data_as(_PINT),
            msglvl,
            null if b is None else b.ctypes.data_as(_PDOUBLE),
            null if x is None else x.ctypes.data_as(_PDOUBLE),
            ctypes.byref(error),
        )
        code = error.value
        if code == -4 and self.mtype == POSITIVE_DEFINITE and phase in (12, 22):
            raise NonPositivePivot(
                f"PARDISO: the {self._n}x{self._n} matrix is not positive definite "
                "(a zero or negative pivot)"
            )
        if code != 0:
            raise PardisoError(
                f"PARDISO phase {phase} on a {self._n}x{self._n} matrix: error {code} "
                f"({_ERRORS.get(code, 'unknown')})"
            )

    def Factor(self, A) -> "Pardiso":
        """Factorise the symmetric matrix A (its upper triangle is read); with `schur_columns`,
        the bordered matrix [[A, W], [Wᵀ, 0]] and its Schur complement (class docstring)."""
        A = sp.csc_matrix(A)
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"PARDISO takes a square matrix (got {A.shape})")
        if A.nnz >= 2**31 - 1:
            raise ValueError(f"PARDISO (LP64) takes under 2^31 non-zeros (got {A.nnz})")
        if not A.has_sorted_indices:
            A = A.sorted_indices()
        n = A.shape[0]
        W = self._columns
        if W is not None and W.shape[0] != n:
            raise ValueError(f"schur_columns have {W.shape[0]} rows, the matrix {n}")
        k = 0 if W is None else W.shape[1]
        N = n + k  # PARDISO's matrix: A, bordered by W's k columns where given
        pattern = (A.shape, A.indptr.tobytes(), A.indices.tobytes())
        if pattern != self._pattern:
            # A symmetric matrix's CSC arrays are the CSR arrays of Aᵀ = A: row r's entries are
            # column r's. PARDISO reads the upper triangle (column index >= row) of that CSR.
            rows = np.repeat(np.arange(n), np.diff(A.indptr))
            upper = A.indices >= rows
            stored = np.zeros(n, dtype=bool)
            stored[rows[A.indices == rows]] = True
            missing = np.flatnonzero(~stored)
            if len(missing):
                # PARDISO needs every diagonal entry stored, even a zero one.
                raise ValueError(
                    f"PARDISO needs the full diagonal stored ({len(missing)} diagonal entries "
                    "missing from the sparsity pattern)"
                )
            own = rows[upper].astype(np.int64) * N + A.indices[upper]  # sorted (CSR order)
            self._upper = np.flatnonzero(upper)
            keys, analyse = own, True
            if self._analysed and N == self._n:
                # A pattern inside the analysed one (entries that are zero now: a penalty pair
                # that separated, a skin vertex that left a skeleton box) puts its values into
                # the analysed pattern, whose analysis is kept; one with a new entry is analysed
                # as the union of both, so that the pattern settles over a run.
                at = np.minimum(np.searchsorted(self._keys, own), len(self._keys) - 1)
                if np.array_equal(self._keys[at], own):
                    keys, analyse = self._keys, False
                else:
                    # The union, by inserting A's new keys into the sorted analysed ones: the
                    # coupled simulator grows its Newton matrix's pattern about once a frame on
                    # the monster's walk (a skin vertex pushed into a skeleton box for the first
                    # time) in each factorisation of its pool, and sorting the concatenated
                    # 2.2M + 2.2M keys took 0.25 s of the 0.3-0.7 s such a factorisation spent
                    # outside PARDISO, where the insertion takes 0.02 s (issue 52, measured).
                    new = np.unique(own[self._keys[at] != own])
                    keys = np.insert(self._keys, np.searchsorted(self._keys, new), new)
            elif k:
                # The border: W's entries in rows < n (columns n + j) and the Schur block's
                # diagonal (zeros, stored as PARDISO needs).
                # A's keys are sorted and W's lie in columns >= n, apart from A's: inserted,
                # not sorted with them (np.unique of the 2.2M keys took 1.8 s of a 3.2 s first
                # factorisation of the monster's bordered matrix, issue 69).
                corner = (n + np.arange(k, dtype=np.int64)) * (N + 1)
                border = np.unique(self._BorderKeys(n))
                keys = np.insert(own, np.searchsorted(own, border), border)
                keys = np.concatenate([keys, corner])  # the rows >= n come after all of A's
            # Where each of A's upper entries goes in the analysed pattern (None: in place).
            self._scatter = None if len(keys) == len(own) else np.searchsorted(keys, own)
            self._pattern = pattern
            if analyse:
                self._Release()
                self._keys = keys
                counts = np.bincount(keys // N, minlength=N)
                self._indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
                self._indices = (keys % N).astype(np.int32)
                self._n, self._lead = N, n
                if k:
                    # Where W's values go in the analysed pattern (it may have grown).
                    self._border = np.searchsorted(keys, self._BorderKeys(n))
                    marks = np.zeros(N, dtype=np.int32)
                    marks[n:] = 1  # iparm[35]: perm marks the Schur block's rows
                    self._perm_arg, self._iparm[4] = marks, 0
                else:
                    self._perm_arg = self._Permutation(A)
                    self._iparm[4] = 0 if self._perm_arg is None else 1
                self._SetData(A)
                self._iparm[18] = -1  # (the last analysis wrote its count here)
                self._Call(11)
                self._analysed = True
                self.analyses += 1
                self.factor_nonzeros = int(self._iparm[17])
                self.factor_flops = 1e6 * float(self._iparm[18])
            else:
                self._SetData(A)
        else:
            self._SetData(A)
        if k:
            S = np.empty((k, k))
            self._Call(22, None, S)
            # PARDISO returns the Schur complement of the bordered matrix, 0 - Wᵀ A⁻¹ W.
            self.schur_complement = -0.5 * (S + S.T)
        else:
            self._Call(22)
        self.perturbed_pivots = int(self._iparm[13])
        if self.mtype == INDEFINITE:
            self.inertia = (int(self._iparm[21]), int(self._iparm[22]))
        else:
            pivots, diagonal = self.Pivots()
            # (with a Schur block its rows come last in the elimination and are not pivots)
            ratio = pivots[:n] / diagonal[:n]
            worst = int(np.argmin(ratio)) if len(ratio) else 0
            if len(ratio) and not ratio[worst] > SINGULAR_PIVOT_RATIO:
                raise NonPositivePivot(
                    f"PARDISO: the {n}x{n} matrix is singular to working precision "
                    f"(a pivot {ratio[worst]:.1e} of its diagonal entry)"
                )
        return self

    def _BorderKeys(self, n: int) -> np.ndarray:
        """The keys (row * N + column, N = n + k) of W's entries in the bordered upper
        triangle, in W's COO order."""
        W = self._columns
        return W.row.astype(np.int64) * (n + W.shape[1]) + n + W.col

    def _SetData(self, A):
        """The values PARDISO reads: A's upper triangle, in the analysed pattern."""
        values = A.data[self._upper]
        if self._scatter is None:
            self._data = np.ascontiguousarray(values, dtype=np.float64)
        else:
            self._data = np.zeros(len(self._keys))
            self._data[self._scatter] = values
            if self._columns is not None:
                self._data[self._border] = self._columns.data

    def Pivots(self) -> tuple[np.ndarray, np.ndarray]:
        """The Cholesky pivots (L_ii², in PARDISO's elimination order) and the matrix's diagonal
        entries in the same order (mtype 2)."""
        pivots = np.zeros(self._n)
        diagonal = np.zeros(self._n)
        error = _INT(0)
        self._lib.pardiso_getdiag(
            self._pt.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
            pivots.ctypes.data_as(_PDOUBLE),
            diagonal.ctypes.data_as(_PDOUBLE),
            ctypes.byref(_INT(1)),
            ctypes.byref(error),
        )
        if error.value != 0:
            raise PardisoError(f"PARDISO getdiag: error {error.value}")
        return pivots, diagonal

    def _Rhs(self, B):
        B = np.asarray(B, dtype=np.float64)
        n = self._lead
        if B.shape[0] != n:
            raise ValueError(f"right-hand side has {B.shape[0]} rows, the matrix {n}")
        if self._n == n:
            return np.asfortranarray(B.reshape(n, -1)), B.shape
        rhs = np.zeros((self._n, B.size // max(n, 1)), order="F")  # the Schur rows' part zero
        rhs[:n] = B.reshape(n, -1)
        return rhs, B.shape

    def _Phase(self, phase: int, B) -> np.ndarray:
        rhs, shape = self._Rhs(B)
        x = np.empty_like(rhs, order="F")  # every entry written (a zeroed one cost 23 ms)
        self._Call(phase, rhs, x, nrhs=rhs.shape[1])
        return x

    def Solve(self, B) -> np.ndarray:
        """A⁻¹ B (B: (n,) or (n, k))."""
        if self._n == self._lead:
            return self._Phase(33, B).reshape(np.shape(B))
        # With a Schur block PARDISO's phase 33 solves the bordered system, which needs its
        # Schur complement factorised; A⁻¹ B is the forward substitution with the Schur rows'
        # unknowns set to zero, then the backward one (phase 332, the diagonal, is the identity
        # for a Cholesky factor).
        return self.BackwardBordered(self.ForwardBordered(B)).reshape(np.shape(B))

    @property
    def schur_columns(self):
        """The Schur block's columns W (n x k, sparse COO), or None."""
        return self._columns

    def ForwardBordered(self, B) -> np.ndarray:
        """The forward substitution of [B; 0] through the factor bordered by `schur_columns` W
        ((n + k,) or (n + k, nrhs)): L⁻¹ P B in the first n rows, -Wᵀ A⁻¹ B in the last k.
        `BackwardBordered` finishes the solve, with forces on W's columns added if wanted."""
        if self._n == self._lead:
            raise ValueError("a bordered half-solve needs schur_columns")
        y = self._Phase(331, B)
        return y[:, 0] if np.ndim(B) == 1 else y

    def BackwardBordered(self, y, g=None) -> np.ndarray:
        """A⁻¹ (B + W g) from y = ForwardBordered(B), g (k,) or (k, nrhs) (None: zero); y is
        overwritten. Why it holds: the bordered matrix factorises as L D Lᵀ with
        L = [[L_A, 0], [Wᵀ L_A⁻ᵀ, I]], D = diag(I, -Wᵀ A⁻¹ W); the backward substitution
        Lᵀ x = [L_A⁻¹ B; z] gives x = [A⁻¹ B - A⁻¹ W z; z], so z = -g. One forward and one
        backward substitution give the free solve and the response to forces on the block's
        columns (drakebots.skinned.convex_contact's one solve a Newton iteration), where two
        solves did."""
        y = np.asarray(y, dtype=np.float64)
        vector = y.ndim == 1
        y = np.asfortranarray(y.reshape(self._n, -1))
        y[self._lead :] = (
            0.0 if g is None else -np.asarray(g, float).reshape(self._n - self._lead, -1)
        )
        x = np.empty_like(y, order="F")
        self._Call(333, y, x, nrhs=y.shape[1])
        x = x[: self._lead]
        return x[:, 0] if vector else x

    def ForwardSolve(self, B) -> np.ndarray:
        """L⁻¹ P B of the Cholesky factor P A Pᵀ = L Lᵀ (mtype 2 only), so Bᵀ A⁻¹ B = Yᵀ Y."""
        return self.ForwardSolveWithColumns(B)[0]

    def ForwardSolveWithColumns(self, B) -> tuple[np.ndarray, np.ndarray | None]:
        """(L⁻¹ P B, Wᵀ A⁻¹ B): the forward half-solve and, with `schur_columns` W, its border's
        rows, which the bordered factor's forward substitution gives at once (for [B; 0] they
        are 0 - Wᵀ A⁻¹ B); without W the second is None."""
        if self.mtype != POSITIVE_DEFINITE:
            raise ValueError("a forward half-solve needs the positive-definite factorisation")
        y = self._Phase(331, B)
        n, shape = self._lead, np.shape(B)
        Y = y[:n].reshape(shape)
        if self._n == n:
            return Y, None
        return Y, -y[n:].reshape((self._n - n,) + shape[1:])
