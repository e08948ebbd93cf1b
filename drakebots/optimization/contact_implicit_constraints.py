"""Constraints of the variational contact-implicit transcription, one small builder each
(hamr-contact-implicit.txt, Eqs. 9-15).

Every binding is named with `set_description` (`dynamics[3]`, `contact[7]`, `loop[0]`, ...), so
`result.GetInfeasibleConstraintNames(prog)` and `ConstraintViolations` below read as the paper's
equations. Nonlinear multibody terms are Python constraints whose Jacobians are exact and analytic
(drakebots.optimization.variational); each declares its gradient sparsity pattern. Linear and
bilinear structure stays in Drake's own constraint types.
"""

from __future__ import annotations

import numpy as np
from pydrake.autodiffutils import ExtractGradient, ExtractValue, InitializeAutoDiff
from pydrake.solvers import Binding, MathematicalProgram

from drakebots.optimization.contact_implicit_variables import ContactImplicitVariables

INF = np.inf


class BlockConstraintFunction:
    """Adapts f(values, jacobian) -> (r, {block: dr/dblock}) to a MathematicalProgram function.

    The binding's variables are the concatenation of named blocks; blocks missing from the
    returned dict have zero derivative. With AutoDiff input (what SNOPT and IPOPT pass) the
    Jacobian is assembled from the blocks and chained with the input's gradient.

    Args:
        function: f(values: dict[name, np.ndarray], jacobian: bool) -> (r, blocks | None).
        layout: [(name, size)] in the binding's variable order.
        constants: extra entries of `values` that are not decision variables (a fixed h).
        merge: {name: other} adds the block `name` into `other` (a variable used twice).
    """

    def __init__(self, function, layout, constants=None, merge=None):
        self.function = function
        self.layout = [(name, int(size)) for name, size in layout]
        self.constants = dict(constants or {})
        self.merge = dict(merge or {})
        self.offsets = {}
        start = 0
        for name, size in self.layout:
            self.offsets[name] = (start, start + size)
            start += size
        self.num_vars = start
        self._eye = None

    def Values(self, x: np.ndarray) -> dict:
        values = {name: x[a:b] for name, (a, b) in self.offsets.items()}
        values.update(self.constants)
        for name, other in self.merge.items():
            values[name] = values[other]
        return values

    def Jacobian(self, blocks: dict, num_rows: int) -> np.ndarray:
        J = np.zeros((num_rows, self.num_vars))
        for name, block in blocks.items():
            target = self.merge.get(name, name)
            if target not in self.offsets:
                continue  # a derivative with respect to a constant
            a, b = self.offsets[target]
            J[:, a:b] += np.asarray(block).reshape(num_rows, b - a)
        return J

    def __call__(self, x):
        x = np.asarray(x)
        if x.dtype != object:
            r, _ = self.function(self.Values(x.astype(float)), False)
            return r
        xv = ExtractValue(x).ravel()
        r, blocks = self.function(self.Values(xv), True)
        J = self.Jacobian(blocks, len(r))
        G = ExtractGradient(x)
        if G.shape != (self.num_vars, self.num_vars) or not _IsIdentity(G):
            J = J @ G
        return InitializeAutoDiff(r, J)


def _IsIdentity(G: np.ndarray) -> bool:
    n = G.shape[0]
    return bool(np.count_nonzero(G) == n and np.all(np.diagonal(G) == 1.0))


def _SparsityFromSamples(fn: BlockConstraintFunction, samples) -> list[tuple[int, int]]:
    """Structural nonzeros of the Jacobian: union over sample points with generic values."""
    mask = None
    for x in samples:
        r, blocks = fn.function(fn.Values(x), True)
        nonzero = fn.Jacobian(blocks, len(r)) != 0.0
        mask = nonzero if mask is None else (mask | nonzero)
    rows, cols = np.nonzero(mask)
    return list(zip(rows.tolist(), cols.tolist()))


# description -> BlockConstraintFunction of the Python constraints built by this module, per
# program (pydrake evaluators cannot carry Python attributes). Used by tests and diagnostics.
def BlockFunctions(prog: MathematicalProgram) -> dict:
    """description -> BlockConstraintFunction of the Python constraints of `prog`."""
    return _REGISTRY.setdefault(id(prog), {})


_REGISTRY: dict = {}


def _AddBlockConstraint(
    prog: MathematicalProgram,
    name: str,
    fn: BlockConstraintFunction,
    variables: list,
    lb,
    ub,
    sparsity,
) -> Binding:
    flat = np.concatenate([np.asarray(v).ravel() for v in variables])
    binding = prog.AddConstraint(fn, np.asarray(lb, float), np.asarray(ub, float), flat)
    binding.evaluator().set_description(name)
    if sparsity is not None:
        binding.evaluator().SetGradientSparsityPattern(sparsity)
    BlockFunctions(prog)[name] = fn
    return binding


class _SparsityCache:
    """Computes one sparsity pattern per constraint kind from generic random samples."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.patterns = {}

    def Get(self, kind, fn: BlockConstraintFunction, sample_scale: dict):
        if kind not in self.patterns:
            samples = []
            for _ in range(2):
                x = np.concatenate(
                    [
                        sample_scale.get(name, 0.0)
                        + self.rng.uniform(0.2, 1.0, size) * (1 if name != "q" else 0.1)
                        for name, size in fn.layout
                    ]
                )
                samples.append(x)
            self.patterns[kind] = _SparsityFromSamples(fn, samples)
        return self.patterns[kind]


def _HBlock(vars: ContactImplicitVariables):
    """Layout entry and constants for the time step."""
    if vars.h is None:
        return [], {"h": vars.time_step}, []
    return [("h", 1)], {}, [vars.h]


def AddDiscreteEulerLagrangeConstraints(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    dynamics,
    *,
    initial: tuple,
    sample_configuration: np.ndarray | None = None,
) -> list[Binding]:
    """The discrete Euler-Lagrange equations at knots 0 .. N-2 (Eqs. 9 and 14), `dynamics[k]`.

    Args:
        initial: how knot 0 gets its incoming momentum:
            ("velocity", qdot0): the Legendre transform p = M(q_0) qdot0 of an initial velocity;
            ("momentum", p0): a fixed momentum;
            ("periodic",): the momentum arriving at the last knot (periodic discrete momentum,
            together with AddPeriodicityConstraints on the positions).
        sample_configuration: a typical q (for the sparsity pattern's random samples).
    """
    N, n, m = vars.num_knots, dynamics.num_positions, dynamics.num_inputs
    nl = dynamics.num_position_constraints
    nc, nd = dynamics.num_contacts, dynamics.num_directions
    h_layout, h_const, h_vars = _HBlock(vars)
    q_sample = np.zeros(n) if sample_configuration is None else sample_configuration
    cache = _SparsityCache()
    bindings = []

    def Function(incoming_kind, incoming_extra=None):
        def f(values, jacobian):
            if incoming_kind == "interval":
                incoming = ("interval", values["q_a"], values["q_b"], values["u_a"])
            elif incoming_kind == "legendre":
                incoming = ("legendre", incoming_extra)
            else:
                incoming = ("momentum", incoming_extra)
            return dynamics.DelResidual(
                incoming,
                values["q_k"],
                values["q_k1"],
                values["u_k"],
                values["lam"],
                values["gamma"],
                values["beta"],
                values["h"],
                jacobian=jacobian,
            )

        return f

    common = [("q_k", n), ("q_k1", n), ("u_k", m), ("lam", nl), ("gamma", nc), ("beta", nc * nd)]
    for k in range(N - 1):
        forces = [vars.lam[k], vars.gamma[k], vars.beta[k]]
        if k > 0:
            layout = [("q_a", n)] + common[:2] + [("u_a", m)] + common[2:] + h_layout
            fn = BlockConstraintFunction(
                Function("interval"), layout, h_const, merge={"q_b": "q_k"}
            )
            variables = [vars.q[k - 1], vars.q[k], vars.q[k + 1], vars.u[k - 1], vars.u[k]]
            kind = "interior"
        elif initial[0] == "periodic":
            layout = [("q_a", n), ("q_b", n)] + common[:2] + [("u_a", m)] + common[2:] + h_layout
            fn = BlockConstraintFunction(Function("interval"), layout, h_const)
            variables = [vars.q[N - 2], vars.q[N - 1], vars.q[0], vars.q[1], vars.u[N - 2]]
            variables.append(vars.u[0])
            kind = "periodic"
        elif initial[0] in ("velocity", "momentum"):
            extra = np.asarray(initial[1], float)
            layout = common + h_layout
            fn = BlockConstraintFunction(
                Function("legendre" if initial[0] == "velocity" else "momentum", extra),
                layout,
                h_const,
            )
            variables = [vars.q[0], vars.q[1], vars.u[0]]
            kind = initial[0]
        else:
            raise ValueError(f"unknown initial condition {initial!r}")
        variables += forces + h_vars
        scale = {"q_a": q_sample, "q_b": q_sample, "q_k": q_sample, "q_k1": q_sample}
        sparsity = cache.Get(kind, fn, scale)
        bindings.append(
            _AddBlockConstraint(
                prog, f"dynamics[{k}]", fn, variables, np.zeros(n), np.zeros(n), sparsity
            )
        )
    return bindings


def AddPositionConstraints(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    dynamics,
    *,
    knots=None,
    sample_configuration=None,
) -> list[Binding]:
    """c(q_k) = 0 at each knot (the kinematic loops, Eqs. 2 and 10), `loop[k]`."""
    if not dynamics.num_position_constraints:
        return []
    n, nl = dynamics.num_positions, dynamics.num_position_constraints
    fn = BlockConstraintFunction(
        lambda values, jacobian: dynamics.PositionConstraintResidual(
            values["q"], jacobian=jacobian
        ),
        [("q", n)],
    )
    q_sample = np.zeros(n) if sample_configuration is None else sample_configuration
    sparsity = _SparsityCache().Get("loop", fn, {"q": q_sample})
    knots = range(vars.num_knots) if knots is None else knots
    return [
        _AddBlockConstraint(
            prog, f"loop[{k}]", fn, [vars.q[k]], np.zeros(nl), np.zeros(nl), sparsity
        )
        for k in knots
    ]


def AddNormalContactConstraints(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    dynamics,
    *,
    sample_configuration=None,
    initial_clearance: bool = True,
) -> list[Binding]:
    """Non-penetration and relaxed normal complementarity (Eqs. 11, 12, 15), `contact[k]`:
    phi(q_k+1) >= 0 and sum_c gamma_k,c phi_c(q_k+1) <= slack_k; and `clearance[0]`:
    phi(q_0) >= 0.
    """
    nc, n = dynamics.num_contacts, dynamics.num_positions
    if not nc:
        return []
    q_sample = np.zeros(n) if sample_configuration is None else sample_configuration
    fn = BlockConstraintFunction(
        lambda values, jacobian: dynamics.NormalResidual(
            values["q"], values["gamma"], values["slack"][0], jacobian=jacobian
        ),
        [("q", n), ("gamma", nc), ("slack", 1)],
    )
    sparsity = _SparsityCache().Get("contact", fn, {"q": q_sample})
    lb = np.concatenate([np.zeros(nc), [-INF]])
    ub = np.concatenate([np.full(nc, INF), [0.0]])
    bindings = []
    if initial_clearance:

        def Clearance(values, jacobian):
            r, blocks = dynamics.NormalResidual(values["q"], np.zeros(nc), 0.0, jacobian=jacobian)
            return r[:nc], (None if blocks is None else {"q": blocks["q"][:nc]})

        clearance = BlockConstraintFunction(Clearance, [("q", n)])
        bindings.append(
            _AddBlockConstraint(
                prog,
                "clearance[0]",
                clearance,
                [vars.q[0]],
                np.zeros(nc),
                np.full(nc, INF),
                _SparsityCache().Get("clearance", clearance, {"q": q_sample}),
            )
        )
    for k in range(vars.num_intervals):
        bindings.append(
            _AddBlockConstraint(
                prog,
                f"contact[{k}]",
                fn,
                [vars.q[k + 1], vars.gamma[k], [vars.slack[k]]],
                lb,
                ub,
                sparsity,
            )
        )
    return bindings


def AddFrictionConstraints(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    dynamics,
    *,
    sample_configuration=None,
) -> list[Binding]:
    """Coulomb friction by the maximum-dissipation KKT conditions on a 4-sided pyramid (Eq. 13):

    `sliding[k]`:  d_j . v_c + psi_c - eta_cj = 0              (stationarity, g1)
    `friction_cone[k]`: mu gamma_c - sum_j beta_cj >= 0        (g2)
    `friction_complementarity[k]`: sum_c psi_c g2_c <= slack_k (relaxed 0 <= psi _|_ g2 >= 0)
    `pyramid_complementarity[k]`: sum beta . eta <= slack_k    (relaxed 0 <= beta _|_ eta >= 0)
    """
    nc, nd, n = dynamics.num_contacts, dynamics.num_directions, dynamics.num_positions
    if not nc:
        return []
    mu = dynamics.friction
    h_layout, h_const, h_vars = _HBlock(vars)
    q_sample = np.zeros(n) if sample_configuration is None else sample_configuration
    fn = BlockConstraintFunction(
        lambda values, jacobian: dynamics.SlidingResidual(
            values["q_k"],
            values["q_k1"],
            values["psi"],
            values["eta"],
            values["h"],
            jacobian=jacobian,
        ),
        [("q_k", n), ("q_k1", n), ("psi", nc), ("eta", nc * nd)] + h_layout,
        h_const,
    )
    sparsity = _SparsityCache().Get("sliding", fn, {"q_k": q_sample, "q_k1": q_sample})
    # g2 = A_cone [gamma; beta]
    A_cone = np.hstack([mu * np.eye(nc), -np.kron(np.eye(nc), np.ones((1, nd)))])
    # sum_c psi_c (mu gamma_c - sum_j beta_cj) - s: x = [psi, gamma, beta, s].
    size = nc + nc + nc * nd + 1
    Q_psi = np.zeros((size, size))
    for c in range(nc):
        Q_psi[c, nc + c] = mu
        for j in range(nd):
            Q_psi[c, 2 * nc + c * nd + j] = -1.0
    Q_psi = Q_psi + Q_psi.T  # 0.5 x^T Q x = sum of the products
    b_psi = np.zeros(size)
    b_psi[-1] = -1.0
    size_b = 2 * nc * nd + 1
    Q_beta = np.zeros((size_b, size_b))
    Q_beta[: nc * nd, nc * nd : 2 * nc * nd] = np.eye(nc * nd)
    Q_beta = Q_beta + Q_beta.T
    b_beta = np.zeros(size_b)
    b_beta[-1] = -1.0
    from pydrake.solvers import QuadraticConstraint

    indefinite = QuadraticConstraint.HessianType.kIndefinite
    bindings = []
    for k in range(vars.num_intervals):
        bindings.append(
            _AddBlockConstraint(
                prog,
                f"sliding[{k}]",
                fn,
                [vars.q[k], vars.q[k + 1], vars.psi[k], vars.eta[k]] + h_vars,
                np.zeros(nc * nd),
                np.zeros(nc * nd),
                sparsity,
            )
        )
        cone = prog.AddLinearConstraint(
            A_cone, np.zeros(nc), np.full(nc, INF), np.concatenate([vars.gamma[k], vars.beta[k]])
        )
        cone.evaluator().set_description(f"friction_cone[{k}]")
        bindings.append(cone)
        x_psi = np.concatenate([vars.psi[k], vars.gamma[k], vars.beta[k], [vars.slack[k]]])
        b = prog.AddQuadraticConstraint(Q_psi, b_psi, -INF, 0.0, x_psi, indefinite)
        b.evaluator().set_description(f"friction_complementarity[{k}]")
        bindings.append(b)
        x_beta = np.concatenate([vars.beta[k], vars.eta[k], [vars.slack[k]]])
        b = prog.AddQuadraticConstraint(Q_beta, b_beta, -INF, 0.0, x_beta, indefinite)
        b.evaluator().set_description(f"pyramid_complementarity[{k}]")
        bindings.append(b)
    return bindings


def AddContactVariableBounds(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    *,
    slack_bounds: tuple[float, float] = (1e-6, 1.0),
) -> list[Binding]:
    """gamma, beta, psi, eta >= 0 and the slack within `slack_bounds` (the paper: [1e-6, 1])."""
    bindings = []
    for name, group in (
        ("gamma", vars.gamma),
        ("beta", vars.beta),
        ("psi", vars.psi),
        ("eta", vars.eta),
    ):
        flat = np.asarray(group).ravel()
        if flat.size:
            b = prog.AddBoundingBoxConstraint(0.0, INF, flat)
            b.evaluator().set_description(f"{name}_nonnegative")
            bindings.append(b)
    b = prog.AddBoundingBoxConstraint(slack_bounds[0], slack_bounds[1], vars.slack)
    b.evaluator().set_description("slack_bounds")
    bindings.append(b)
    return bindings


def AddPeriodicityConstraints(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    *,
    free_indices=(),
) -> Binding:
    """q_N-1 = q_0 on every position except `free_indices` (the body x), `periodic_positions`."""
    n = vars.q.shape[1]
    keep = [i for i in range(n) if i not in set(free_indices)]
    A = np.hstack([np.eye(len(keep)), -np.eye(len(keep))])
    b = prog.AddLinearEqualityConstraint(
        A, np.zeros(len(keep)), np.concatenate([vars.q[-1, keep], vars.q[0, keep]])
    )
    b.evaluator().set_description("periodic_positions")
    return b


def AddPositionBounds(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    lower: np.ndarray,
    upper: np.ndarray,
) -> list[Binding]:
    """Joint limits on every knot (the flexure bounds of Eq. 15), `position_bounds`."""
    lower = np.asarray(lower, float)
    upper = np.asarray(upper, float)
    rows = np.isfinite(lower) | np.isfinite(upper)
    if not np.any(rows):
        return []
    N = vars.num_knots
    b = prog.AddBoundingBoxConstraint(
        np.tile(lower[rows], N), np.tile(upper[rows], N), vars.q[:, rows].ravel()
    )
    b.evaluator().set_description("position_bounds")
    return [b]


def AddInputBounds(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    lower: np.ndarray,
    upper: np.ndarray,
) -> list[Binding]:
    """u_min <= u_k <= u_max on every interval (Eq. 15), `input_bounds`."""
    if vars.u.size == 0:
        return []
    N1 = vars.num_intervals
    b = prog.AddBoundingBoxConstraint(
        np.tile(np.asarray(lower, float), N1), np.tile(np.asarray(upper, float), N1), vars.u.ravel()
    )
    b.evaluator().set_description("input_bounds")
    return [b]


def AddFixedPositions(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    knot: int,
    q_fixed: np.ndarray,
    indices=None,
) -> Binding:
    """q_knot[indices] = q_fixed[indices], `fixed_positions[knot]`."""
    n = vars.q.shape[1]
    indices = list(range(n)) if indices is None else list(indices)
    q_fixed = np.asarray(q_fixed, float)
    b = prog.AddBoundingBoxConstraint(q_fixed[indices], q_fixed[indices], vars.q[knot, indices])
    b.evaluator().set_description(f"fixed_positions[{knot}]")
    return b


def BindingViolation(binding, x_all: np.ndarray, prog: MathematicalProgram) -> float:
    """max(lb - g, g - ub, 0) of one constraint binding at the full decision vector x_all."""
    values = np.asarray(
        binding.evaluator().Eval(x_all[prog.FindDecisionVariableIndices(binding.variables())]),
        float,
    ).ravel()
    lb = binding.evaluator().lower_bound()
    ub = binding.evaluator().upper_bound()
    violation = np.maximum(np.maximum(lb - values, values - ub), 0.0)
    return float(np.max(violation)) if violation.size else 0.0


def AddGuardHeightConstraints(
    prog: MathematicalProgram,
    vars: ContactImplicitVariables,
    dynamics,
    bodies,
    points: np.ndarray,
    *,
    knots=None,
    min_height: float = 0.0,
) -> list[Binding]:
    """`guard[k]`: the heights of points fixed on bodies (not contacts: no force acts there)
    above the ground at knot k, >= min_height: the parts of a robot that must not pass
    through the ground (a knee, the body). One binding per knot (every knot by default).

    The BlockConstraintFunction carries `guard = (bodies, points, min_height)` so the fast path
    (contact_implicit_fast) evaluates every knot at once.
    """
    bodies = np.asarray(bodies, int)
    points = np.asarray(points, float).reshape(-1, 3)
    count, n = len(bodies), dynamics.num_positions
    if not count:
        return []
    lagrangian = dynamics.lagrangian

    def Heights(values, jacobian):
        kin = dynamics.Kinematics(values["q"])
        x = lagrangian.PointsPosition(kin, bodies, points)
        r = x[:, 2] - dynamics.ground_height
        if not jacobian:
            return r, None
        J = lagrangian.PointsJacobian(kin, bodies, x)  # (C, n, 3)
        return r, {"q": J[:, :, 2]}

    fn = BlockConstraintFunction(Heights, [("q", n)])
    fn.guard = (tuple(bodies.tolist()), points.tobytes(), float(min_height))
    fn.guard_bodies, fn.guard_points = bodies, points
    q_sample = np.zeros(n)
    sparsity = _SparsityCache().Get("guard", fn, {"q": q_sample})
    knots = range(vars.num_knots) if knots is None else knots
    return [
        _AddBlockConstraint(
            prog,
            f"guard[{k}]",
            fn,
            [vars.q[k]],
            np.full(count, float(min_height)),
            np.full(count, INF),
            sparsity,
        )
        for k in knots
    ]
