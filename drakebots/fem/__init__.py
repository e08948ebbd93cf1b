"""Tetrahedral finite elements (NumPy/SciPy only, no Drake systems), made for the skinned
quad-robots' soft skin but knowing no robot family.

Paper: Xu et al., *Computational Design of Skinned Quad-Robots* (shared/papers/
skinned-quad-robots.txt), section 4 (two-way coupled multibody-elastic dynamics, Eqs. 1-2),
section 6.1 (skin and folding regions), 6.2 (glue vertices), section 7 (E = 0.09 GPa, nu = 0.46).

Units: SI (m, kg, s, N, Pa). Positions are flat vectors of length 3n, vertex-major
(x[3 i + k] = coordinate k of vertex i).

API (what the motion optimizer of the next issue builds on)
-----------------------------------------------------------

Meshes (`drakebots.fem.mesh`)
    TetMesh(vertices (n,3), tets (m,4)); SignedVolumes, OrientPositively, BoundaryFaces,
    CheckClosedManifold(vertices, faces); ReadVtk/WriteVtk (legacy VTK, Drake's
    DeformableModel input), WriteVtu/WritePvd (ParaView time series).

Materials (`drakebots.fem.materials`)
    Material(youngs_modulus Pa, poissons_ratio, mass_density kg/m^3, model, mass_damping 1/s,
    stiffness_damping s) with model in {"neohookean", "corotated", "linear",
    "stable_neohookean" (Drake's kNeoHookean)}; LameParameters;
    vectorised psi(F), P(F), dP/dF(F) over (m,3,3) deformation gradients (scalar or per-element
    moduli); ProjectToPsd (9x9 eigh per element, the reference) and ProjectNeoHookeanHessian
    (the same projection from the analytic eigensystem, Smith, de Goes and Kim 2019).

Elastic model (`drakebots.fem.model.FemModel(mesh, material, projection="auto")`)
    Energy(x) -> float J                      E(x) = sum_e V_e psi(F_e)
    Gradient(x) -> (3n,) N                    dE/dx (= minus the elastic forces)
    ElasticForces(x) -> (3n,) N
    Hessian(x, project=False) -> CSR (3n,3n)  the stiffness K = d2E/dx2 (symmetric); project=True
                                              projects every element to PSD (for Newton):
                                              "analytic" (neo-Hookean) or "eigh" (all models)
    EnergyGradientHessian(x, project=True)    all three in one pass
    MassDiagonal() (3n,) kg, MassMatrix() CSR, TotalMass(), vertex_masses (n,)
    DampingMatrix() CSR                       Rayleigh D = alpha M + beta K_rest
    GravityForces(g) (3n,) N, Jacobians(x) det F per element, DeformationGradients(x)
    Assemble(element_matrices (m,12,12)) -> CSR with the precomputed pattern

Time stepping (`drakebots.fem.integrator`)
    BackwardEuler(model, gravity, fixed_vertices, options).Step(x, v, h, ...) -> (x+, v+):
    Newton on the incremental potential (exact Hessian, PSD-projected after a non-descent
    direction; modified Newton reuses the factor while it contracts, and a step starts from the
    last step's factor: NewtonOptions.reuse_across_steps), Armijo line search that
    rejects inverted elements, step cutting; raises ElementInversion(element, time) or
    NewtonFailure. NewtonOptions(scheme="midpoint") gives implicit midpoint (exact momentum).
    StaticEquilibrium(model, ...) for static sag.

Linear solvers (`drakebots.fem.solvers`)
    Factorize(A, method) with method in {"auto" (default: "pardiso" where MKL loads, else
    "splu_nd"), "pardiso" (MKL PARDISO, `drakebots.fem.pardiso`), "splu_nd" (SuperLU on a METIS
    nested-dissection ordering), "splu", "splu_colamd", "spsolve", "cg"} -> object with
    solve(b). SpdFactor(backend) / FactorSymmetric(A, backend, indefinite="raise"|"lu"): one
    interface over PARDISO, CHOLMOD, SuperLU and dense LAPACK. A positive-definite
    factorisation of a matrix that is not raises NotPositiveDefinite on every backend; every
    solve is checked by its backward error (InaccurateSolve). NestedDissection(A) is the METIS
    dof order.

Coupling to the skeleton (`drakebots.fem.coupling`), Eqs. (1)-(2)
    GlueConstraint(vertices (k,), bodies (k,) link indices, p_BoG (k,3) link-frame points):
        Residual(p_WG (k,3) from the skeleton, x) -> (3k,)  C(q,u) = R(q) r + t - x_c
        JacobianU() -> CSR (3k, 3n)                           dC/du = -S_c
        JacobianQ(J_WG (3k, nv)) -> the skeleton block        dC/dq (velocity Jacobian)
    AssembleKkt(A_r, A_d, G_q, G_u, A_dr=None) -> CSR         the matrix of Eq. (2)
    SolveKkt(A_r, A_d, G_q, glue, b_r, b_d, c) -> (dq, du, lam)   Eq. (2) solved through the
        Schur complement on the skeleton unknowns (exact, exploits G_u = -S_c)
    CondensedResponse(...)                                    Eq. (10): du, dq as linear maps of
                                                              b_r, b_d (for the QPCC)
    ReducedKkt(A_r, A_d, G_q, pinned).Solve(b_r, b_d, c)      the factorised null-space solve
    PinnedCorrection(ReducedKkt of the glue rows).Solve(b_r, b_d, c, extra, c_extra, coupling)
        -> (dq, du, lam, lam_extra): more pinned skin coordinates (ground contacts) through the
        Schur complement on them, reusing the glue-only factorisation (cached columns); the
        optional coupling adds a multiplier to other rows (Coulomb friction of a sliding vertex).
        The coupled simulator's default for contact-label changes (CouplingConfig.contact_solver
        = "schur"; "refactor" factorises each new contact set, the reference). With
        exact=False a set too large for the columns is pinned in place in the glue-only pattern
        (factorised through a FactorPool that keeps PARDISO's analysis, or solved by GMRES with
        the last such factor); CouplingConfig.factor_reuse selects it ("pool") or not ("fresh").
    FactorPool(): factorisations that no live ReducedKkt holds, lent for their analysis.

Skin generation (in the skinned wing, `drakebots.skinned.skin`)
    MakeSkin(params, SkinOptions) -> Skin (mesh, glue vertices + link names + link-frame points,
    skinning weights (n, L) over skin_links, per-vertex thickness, outer-sheet and fold masks,
    mass_density); WriteSkin/LoadSkin(directory) (skin.vtk, skin.npz, skin.json).
    SkinOptions(surface=LoadSurface("body.obj")) hollows a user's own closed surface;
    SkinOptions(links=(...)) makes a skin piece; MakeShellMesh(field, lo, hi, thickness, voxel)
    hollows any implicit shape; GridSignedDistance(vertices, faces, axes).
    SkinOptions(soft_regions=("belly", "tail"), soft_scale=0.15): softer regions (the monster's
    default, section 7); Skin.ElementYoungsScale() (m,) per-element factor on E, saved in
    skin.npz and passed to FemModel(youngs_scale=...) by the coupled simulator.

The coupled simulator built on these (drakebots.skinned.skin_coupling.CoupledSkinSkeleton) shows
how the blocks of Eq. (2) are formed from a MultibodyPlant: A_r = M(q) + h D (+ servo terms),
G_q = h J_WG(q+) (translational Jacobians of the glue points), A_d = M_s/h^2 + D_s/h + K(y).
"""
