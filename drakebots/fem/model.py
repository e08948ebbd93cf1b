"""The elastic model of a tetrahedral mesh: energy, forces, sparse stiffness, mass and damping.

`FemModel(mesh, material)` precomputes, per element, the rest-shape matrix inverse Dm^{-1}, the
rest volume, the 9x12 map from the element's vertex positions to its deformation gradient
(F = Ds Dm^{-1}, linear tetrahedra), and the CSR pattern of the global 3n x 3n stiffness matrix
with the position of every element entry in it; assembling K is then one `np.bincount`.

Positions are flat vectors x of length 3n (vertex-major: x[3 i + k] is coordinate k of vertex i),
in metres. Energies are J, forces N, stiffness N/m, mass kg.

Conventions (skinned-quad-robots.txt section 4.1 and Eq. (2)): the skin's elastic energy E(x) is
the sum over elements of V_e psi(F_e); the elastic force is -dE/dx; the stiffness K = d^2E/dx^2,
symmetric; with `project=True` each element's 9x9 dP/dF is projected onto the positive
semi-definite cone first, which keeps K positive semi-definite for Newton's method. The
projection (`projection=`): "analytic" clamps the closed-form eigenvalues of the neo-Hookean
dP/dF (Smith, de Goes and Kim, ACM TOG 2019; materials.ProjectNeoHookeanHessian), "eigh"
decomposes every element's 9x9 matrix (materials.ProjectToPsd, the reference); "auto" (the
default) is "analytic" for the neo-Hookean material and "eigh" for the others.
"""

import os

import numpy as np
import scipy.sparse as sp

from drakebots.fem import kernels, materials
from drakebots.fem.mesh import TetMesh
from drakebots.runtime import SingleThreadedBlas

# FemModel(kernel=...): the element loop that computes energy, gradient and stiffness.
KERNELS = ("auto", "compiled", "numpy")
_POOLS = {}


def _KernelPool(threads: int):
    """A thread pool for the compiled element loop's chunks (made once per size)."""
    if threads not in _POOLS:
        from concurrent.futures import ThreadPoolExecutor

        _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="drakebots-fem")
    return _POOLS[threads]


def KernelThreads(default: int = 1, *, requested: int | None = None) -> int:
    """Threads of the compiled element loop: `requested` where the caller was given a count,
    else DRAKEBOTS_FEM_THREADS where set, else `default`; at most the machine's cores.

    One by default for a FemModel: measured on the monster's folded skin (132k tets, best of 5,
    an idle 2-core machine), two threads take 0.26 s against 0.34 s wall for a projected pass
    but 0.44 against 0.34 CPU seconds (0.11 against 0.13 s wall for an exact one), and on a
    machine the user shares, as CI's and this project's are, the second thread's time is taken
    from the other work. The frame-by-frame QPCC asks for two
    (`drakebots.skinned.qpcc_coupled.CoupledFrameConfig.element_threads`): there PARDISO's
    OpenMP threads take the second core between the element loops anyway, and two threads
    took 0.91 of the wall time at the same CPU time (measured). The chunks of elements are
    summed in order, so the result does not depend on timing (the thread count moves it by
    round-off only)."""
    if requested is None:
        from drakebots.runtime import EnvironmentInt

        requested = EnvironmentInt("DRAKEBOTS_FEM_THREADS", default, minimum=1)
    return max(1, min(int(requested), os.cpu_count() or 1))


class ElementInversion(RuntimeError):
    """An element's volume became zero or negative (J <= 0)."""

    def __init__(self, element: int, time: float | None = None, message: str = ""):
        self.element = int(element)
        self.time = time
        when = f" at t = {time:.6g} s" if time is not None else ""
        super().__init__(message or f"element {element} inverted{when}")


class FemModel:
    """Energy, forces, stiffness, mass and Rayleigh damping of a linear tet mesh.

    Args:
        mesh: the rest mesh (every tet positively oriented, non-degenerate).
        material: the material (drakebots.fem.materials.Material).
        densities: optional (m,) per-element mass density, kg/m^3 (default: the material's).
        youngs_scale: optional (m,) per-element factor on Young's modulus (e.g. 0.15 for the
            monster's soft belly, paper section 7).
        projection: the PSD projection of `project=True`, one of materials.PSD_PROJECTIONS;
            "analytic" is refused (ValueError) for a material other than neo-Hookean.
    """

    def __init__(
        self,
        mesh: TetMesh,
        material: materials.Material,
        *,
        densities: np.ndarray | None = None,
        youngs_scale: np.ndarray | None = None,
        projection: str = "auto",
        kernel: str = "auto",
    ):
        materials.Validate(material)
        self.projection = materials.ResolveProjection(projection, material.model)
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got '{kernel}'")
        applies = material.model == "neohookean" and self.projection == "analytic"
        if kernel == "compiled" and not (applies and kernels.AVAILABLE):
            raise ValueError(
                "kernel='compiled' computes the neo-Hookean material with the analytic "
                f"projection only (material '{material.model}', projection "
                f"'{self.projection}'{'' if kernels.AVAILABLE else ', and numba does not import'}"
                "): use kernel='numpy' or 'auto'"
            )
        # Threads of the compiled loop (chunks of elements, summed): KernelThreads().
        self.kernel_threads = KernelThreads()
        # The element loop actually run: "compiled" or "numpy".
        self.kernel = "compiled" if kernel != "numpy" and applies and kernels.AVAILABLE else "numpy"
        # Every assembly allocates and frees element arrays of tens of MB (38.5k tets x 12 x 12
        # doubles on the beetle's skin); a process that calls drakebots.runtime.KeepFreedMemory()
        # first (the command line does) keeps them instead of faulting them in again each time
        # (FEM assembly 0.42 -> 0.17 s there). A library call leaves the allocator alone.
        self.mesh = mesh
        self.material = material
        x0 = mesh.vertices
        T = mesh.tets
        Dm = np.stack([x0[T[:, k]] - x0[T[:, 0]] for k in (1, 2, 3)], axis=2)  # columns
        vol = np.linalg.det(Dm) / 6.0
        if np.any(vol <= 0.0):
            bad = int(np.argmin(vol))
            raise ValueError(
                f"element {bad} has non-positive rest volume {vol[bad]:.3g} m^3 "
                "(tets must be positively oriented and non-degenerate)"
            )
        self.rest_volumes = vol
        self.Dm_inv = np.linalg.inv(Dm)
        # Shape-function gradients g (m, 4, 3): F = sum_a x_a g_a^T.
        g = np.empty((len(T), 4, 3))
        g[:, 1:, :] = self.Dm_inv
        g[:, 0, :] = -self.Dm_inv.sum(axis=1)
        self._g = g
        # B (m, 9, 12): dF_flat / dx_element_flat, F index 3i+j, x index 3a+i.
        B = np.zeros((len(T), 9, 12))
        for i in range(3):
            for a in range(4):
                B[:, 3 * i : 3 * i + 3, 3 * a + i] = g[:, a, :]
        self._B = B
        mu, lam = material.lame
        scale = np.ones(len(T)) if youngs_scale is None else np.asarray(youngs_scale, float)
        self._mu = mu * scale
        self._lam = lam * scale
        rho = (
            np.full(len(T), material.mass_density)
            if densities is None
            else np.asarray(densities, float)
        )
        self.vertex_masses = mesh.LumpedMasses(rho)
        self._dofs = (3 * T[:, :, None] + np.arange(3)[None, None, :]).reshape(-1, 12)
        self._tets = np.ascontiguousarray(T, dtype=np.int64)
        self._BuildPattern()
        self._K_rest = None

    # ---- sizes ---------------------------------------------------------------------------------
    @property
    def num_vertices(self) -> int:
        return self.mesh.num_vertices

    @property
    def num_dofs(self) -> int:
        return 3 * self.mesh.num_vertices

    def RestPositions(self) -> np.ndarray:
        """x0, (3n,), m."""
        return self.mesh.vertices.ravel().copy()

    # ---- sparse pattern ------------------------------------------------------------------------
    def _BuildPattern(self):
        dofs = self._dofs
        rows = np.repeat(dofs, 12, axis=1).ravel()
        cols = np.tile(dofs, (1, 12)).ravel()
        n = self.num_dofs
        key = rows * n + cols
        unique, inverse = np.unique(key, return_inverse=True)
        self._entry_to_nnz = inverse.ravel()
        r = unique // n
        c = unique % n
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(indptr, r + 1, 1)
        self._indptr = np.cumsum(indptr)
        self._indices = c.astype(np.int32)
        self._nnz = len(unique)
        diag = np.flatnonzero(r == c)
        self._diag_nnz = diag  # positions of diagonal entries, in dof order
        self._row_of_nnz = r
        self._keys = None  # row * n + column of each entry, ascending (PatternData)
        self._extra_keys = None  # entries outside the pattern met so far (PatternMatrix)
        self._merged = None  # (keys, indices, indptr, base positions) of the grown pattern

    def Assemble(self, element_matrices: np.ndarray) -> sp.csr_matrix:
        """Assembles (m, 12, 12) element matrices into the global CSR matrix (fixed pattern)."""
        data = np.bincount(
            self._entry_to_nnz, weights=element_matrices.ravel(), minlength=self._nnz
        )
        return sp.csr_matrix(
            (data, self._indices, self._indptr), shape=(self.num_dofs, self.num_dofs)
        )

    def EmptyPatternMatrix(self) -> sp.csr_matrix:
        """A zero matrix with the stiffness pattern (for adding diagonal terms in place)."""
        return sp.csr_matrix(
            (np.zeros(self._nnz), self._indices.copy(), self._indptr.copy()),
            shape=(self.num_dofs, self.num_dofs),
        )

    def PatternData(self, M: sp.spmatrix, *, outside: bool = False):
        """M's entries as a data array of the stiffness's fixed CSR pattern (zeros elsewhere),
        so that K + M is `K.data + PatternData(M)` in K's own pattern: a sum without scipy's
        pattern merge (tens of ms for each 4.3M-entry sum on the monster's skin).

        With `outside`, returns (data, rest): rest the sparse matrix of M's non-zero entries
        outside the pattern (None when there are none: the self-collision pairs of two far
        apart skin vertices are such entries); without it, such an entry raises ValueError."""
        M = sp.coo_matrix(M)
        n = self.num_dofs
        if M.shape != (n, n):
            raise ValueError(f"PatternData: M is {M.shape}, the stiffness {(n, n)}")
        if self._keys is None:
            self._keys = self._row_of_nnz.astype(np.int64) * n + self._indices
        keys = self._keys
        own = M.row.astype(np.int64) * n + M.col
        at = np.minimum(np.searchsorted(keys, own), len(keys) - 1)
        off = (keys[at] != own) & (M.data != 0.0)
        inside = keys[at] == own
        data = np.zeros(self._nnz)
        np.add.at(data, at[inside], M.data[inside])
        rest = None
        if off.any():
            if not outside:
                raise ValueError("PatternData: M has entries outside the stiffness's pattern")
            rest = sp.csr_matrix((M.data[off], (M.row[off], M.col[off])), shape=M.shape)
        return (data, rest) if outside else data

    def PatternMatrix(self, data: np.ndarray, outside: sp.spmatrix | None = None) -> sp.csr_matrix:
        """The CSR matrix of the fixed pattern with values `data`, plus `outside` (entries
        outside the pattern, as PatternData(..., outside=True) returns them).

        Entries outside the pattern that were met once are kept in the pattern of every later
        matrix (zeros when absent), so the pattern grows only when a new one appears: a
        self-collision pair that separates and meets again, frame after frame, would otherwise
        change the pattern each time, and with it the factorisation's symbolic analysis and
        every index map built on the pattern."""
        n = self.num_dofs
        if outside is not None:
            outside = sp.coo_matrix(outside)
            own = outside.row.astype(np.int64) * n + outside.col
            known = self._extra_keys
            if known is None or not np.isin(own, known).all():
                self._GrowPattern(own)
        if self._extra_keys is None:
            return sp.csr_matrix((data, self._indices, self._indptr), shape=(n, n))
        keys, indices, indptr, base = self._merged
        merged = np.zeros(len(keys))
        merged[base] = data
        if outside is not None:
            np.add.at(merged, np.searchsorted(keys, own), outside.data)
        return sp.csr_matrix((merged, indices, indptr), shape=(n, n))

    def _GrowPattern(self, own: np.ndarray) -> None:
        n = self.num_dofs
        if self._keys is None:
            self._keys = self._row_of_nnz.astype(np.int64) * n + self._indices
        extra = own if self._extra_keys is None else np.concatenate([self._extra_keys, own])
        self._extra_keys = np.unique(extra)  # (a few hundred keys at most)
        # Both sorted: a merge by insertion (np.union1d of the 4.3M keys took 4.6 s).
        keys = np.insert(
            self._keys, np.searchsorted(self._keys, self._extra_keys), self._extra_keys
        )
        indptr = np.zeros(n + 1, dtype=self._indptr.dtype)
        np.cumsum(np.bincount(keys // n, minlength=n), out=indptr[1:])
        indices = (keys % n).astype(self._indices.dtype)
        self._merged = (keys, indices, indptr, np.searchsorted(keys, self._keys))

    @property
    def diagonal_positions(self) -> np.ndarray:
        """Indices into CSR `data` of the diagonal entries, dof order."""
        return self._diag_nnz

    # ---- kinematics ----------------------------------------------------------------------------
    def DeformationGradients(self, x: np.ndarray) -> np.ndarray:
        """(m, 3, 3) F of every element at positions x (3n,)."""
        X = np.asarray(x, float).reshape(-1, 3)
        xe = X[self.mesh.tets]  # (m, 4, 3)
        # F = xe^T g as a batched matmul: 0.011 s against einsum's 0.031 s on the monster's
        # 132k elements (the same rounding: both sum the four vertex terms).
        return np.transpose(xe, (0, 2, 1)) @ self._g

    def Jacobians(self, x: np.ndarray) -> np.ndarray:
        """(m,) det F."""
        if self.kernel == "compiled":
            X = np.ascontiguousarray(np.asarray(x, float).reshape(-1, 3))
            out = np.empty(len(self._tets))
            kernels.Jacobians(X, self._tets, self._g, out)
            return out
        return materials.Determinant(self.DeformationGradients(x))

    # ---- energy, force, stiffness --------------------------------------------------------------
    def _Moduli(self):
        """(mu, lambda): scalars where uniform, else the (m,) per-element values."""
        if np.ptp(self._mu) == 0.0 and np.ptp(self._lam) == 0.0:
            return self._mu[0], self._lam[0]
        return self._mu, self._lam

    def _Material(self, F, hessian):
        return materials.Evaluate(self.material.model, F, *self._Moduli(), hessian=hessian)

    def ElementEnergies(self, x: np.ndarray) -> np.ndarray:
        """(m,) V_e psi(F_e), J (inf for an inverted neo-Hookean element)."""
        psi = materials.Energy(self.material.model, self.DeformationGradients(x), *self._Moduli())
        return self.rest_volumes * psi

    def Energy(self, x: np.ndarray) -> float:
        """Elastic energy E(x), J."""
        return float(np.sum(self.ElementEnergies(x)))

    def Gradient(self, x: np.ndarray) -> np.ndarray:
        """dE/dx (3n,), N: the negative of the elastic forces."""
        if self.kernel == "compiled":  # (mode 2: energy and gradient, no stiffness)
            X = np.ascontiguousarray(np.asarray(x, float).reshape(-1, 3))
            grad = np.empty(self.num_dofs)
            kernels.NeoHookeanAssemble(
                X, self._tets, self._g, self.rest_volumes, self._mu, self._lam, 2, 0.0,
                self._entry_to_nnz, np.empty(0), grad,
            )  # fmt: skip
            return grad
        _, P, _ = self._Material(self.DeformationGradients(x), hessian=False)
        return self._AssembleVector(P)

    def ElasticForces(self, x: np.ndarray) -> np.ndarray:
        """-dE/dx (3n,), N."""
        return -self.Gradient(x)

    def _AssembleVector(self, P):
        # grad_a = V P g_a  -> (m, 4, 3)
        # A batched matmul: 0.015 s against einsum's 0.031 s on the monster's 132k elements.
        ge = (self._g @ np.transpose(P, (0, 2, 1))) * self.rest_volumes[:, None, None]
        return np.bincount(self._dofs.ravel(), weights=ge.ravel(), minlength=self.num_dofs).astype(
            float
        )

    def EnergyGradientHessian(self, x: np.ndarray, *, project: bool = True):
        """(E J, dE/dx (3n,) N, K = d^2E/dx^2 CSR N/m) in one pass over the elements.

        Args:
            x: positions (3n,), m.
            project: project each element's dP/dF to positive semi-definite (for Newton).
        """
        if self.kernel == "compiled" and (not project or self.projection == "analytic"):
            # (`projection` read here: a caller may switch it to the "eigh" reference.)
            return self._CompiledEnergyGradientHessian(x, 1 if project else 0)
        F = self.DeformationGradients(x)
        psi, P, dPdF = self._Material(F, hessian=True)
        energy = float(np.sum(self.rest_volumes * psi))
        grad = self._AssembleVector(P)
        if project:
            if self.projection == "analytic":
                dPdF = materials.ProjectNeoHookeanHessian(
                    F, self._mu, self._lam, dPdF, overwrite=True
                )
            else:
                dPdF = materials.ProjectToPsd(dPdF)
        B = self._B
        # Batched 12x9 products: a second BLAS thread only spins (drakebots.runtime).
        with SingleThreadedBlas():
            He = np.transpose(B, (0, 2, 1)) @ dPdF @ B
        He *= self.rest_volumes[:, None, None]
        return energy, grad, self.Assemble(He)

    def _CompiledEnergyGradientHessian(self, x, mode):
        """EnergyGradientHessian by drakebots.fem.kernels.NeoHookeanAssemble (mode 0 exact, 1
        projected)."""
        X = np.ascontiguousarray(np.asarray(x, float).reshape(-1, 3))
        m = len(self._tets)
        threads = max(1, min(getattr(self, "kernel_threads", 1), m // 1000 + 1))
        bounds = np.linspace(0, m, threads + 1).astype(np.int64)

        def Chunk(k):
            lo, hi = bounds[k], bounds[k + 1]
            data, grad = np.empty(self._nnz), np.empty(self.num_dofs)
            energy, projected = kernels.NeoHookeanAssemble(
                X, self._tets[lo:hi], self._g[lo:hi], self.rest_volumes[lo:hi],
                self._mu[lo:hi], self._lam[lo:hi], mode, 0.0,
                self._entry_to_nnz[144 * lo : 144 * hi], data, grad,
            )  # fmt: skip
            return energy, projected, data, grad

        if threads == 1:
            parts = [Chunk(0)]
        else:  # the kernel releases the GIL: one chunk of elements a thread
            parts = list(_KernelPool(threads).map(Chunk, range(threads)))
        energy, self.last_projected, data, grad = parts[0]
        for e, p, d, g in parts[1:]:
            energy += e
            self.last_projected += p
            data += d
            grad += g
        K = sp.csr_matrix((data, self._indices, self._indptr), shape=(self.num_dofs,) * 2)
        return float(energy), grad, K

    def Hessian(self, x: np.ndarray, *, project: bool = False) -> sp.csr_matrix:
        """Stiffness K = d^2E/dx^2 (CSR, N/m); `project` makes it positive semi-definite."""
        return self.EnergyGradientHessian(x, project=project)[2]

    def RestStiffness(self) -> sp.csr_matrix:
        """K at the rest positions (cached; used by Rayleigh damping)."""
        if self._K_rest is None:
            self._K_rest = self.Hessian(self.RestPositions(), project=True)
        return self._K_rest

    # ---- mass and damping ----------------------------------------------------------------------
    def MassDiagonal(self) -> np.ndarray:
        """Diagonal of the lumped mass matrix (3n,), kg."""
        return np.repeat(self.vertex_masses, 3)

    def MassMatrix(self) -> sp.csr_matrix:
        """Lumped mass matrix M (3n x 3n diagonal CSR), kg."""
        return sp.diags(self.MassDiagonal()).tocsr()

    def TotalMass(self) -> float:
        return float(self.vertex_masses.sum())

    def DampingMatrix(self) -> sp.csr_matrix:
        """Rayleigh damping D = alpha M + beta K_rest, N s/m."""
        m = self.material
        D = self.RestStiffness() * m.stiffness_damping
        D = D + sp.diags(m.mass_damping * self.MassDiagonal())
        return D.tocsr()

    def GravityForces(self, gravity=(0.0, 0.0, -9.81)) -> np.ndarray:
        """Lumped gravity forces (3n,), N, for gravity (m/s^2)."""
        return (self.vertex_masses[:, None] * np.asarray(gravity, float)[None, :]).ravel()

    def FirstInverted(self, x: np.ndarray, threshold: float = 0.0) -> int | None:
        """Index of the element with the smallest det F if it is <= threshold, else None."""
        J = self.Jacobians(x)
        k = int(np.argmin(J))
        return k if J[k] <= threshold else None
