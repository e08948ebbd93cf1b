"""The fast path of the contact-implicit transcription: the whole program as one vectorised
evaluation with its sparse Jacobian and the Hessian of its Lagrangian, for an NLP solver that
takes them directly (hamr-contact-implicit.txt, Eq. 15; drakebots.optimization.ipopt).

The MathematicalProgram of a `ContactImplicitProblem` stays the description of the problem: its
variables, bounds, costs and constraints (with their names) are read from it at every solve, so
a stage that updates a bound, adds a cost or removes one (SolveProximalFeasibility,
FixedContactModes) is solved as it stands. What changes is how it is evaluated:

- Drake's solver interfaces evaluate each Python binding with AutoDiff inputs seeded with the
  identity of its variables (a cost that grows with the square of the binding's size) and hand
  IPOPT no Hessian. Here the bindings the transcription's builders made (`dynamics[k]`,
  `loop[k]`, `contact[k]`, `clearance[0]`, `sliding[k]`, `foot_scuff[k]`, `guard[k]`) are
  recognised by name
  and variables and evaluated for all knots at once (drakebots.optimization.batch_dynamics);
  Drake's own linear and quadratic constraints and costs are read as sparse matrices. Anything
  else is refused by name (`FastPathUnsupported`), and Drake's SNOPT/IPOPT remain the reference.
- The Jacobian is returned as values on a fixed (rows, cols) pattern, found once per problem
  from the dense blocks at random points (`ContactImplicitNlp.jacobian_structure`).
- The Hessian of the Lagrangian sigma f + y^T g is exact in every term but one kind: the
  curvature of the discrete Euler-Lagrange (DEL) rows needs third derivatives of the multibody
  dynamics contracted with the multipliers y. Each of those terms is the gradient of a scalar
  (L_d for the momenta, lambda^T c for the loop forces, f^T p for the contact forces, T for the
  Legendre transform), so its Hessian along y is the derivative of the exact (analytic) second
  derivatives along y: one central difference per knot of quantities tree_lagrangian.py
  already computes, in one direction, accurate to ~1e-9 relative. `hessian="gauss-newton"`
  leaves the DEL curvature out (the other constraints' curvature and the costs' Hessians stay).

Derivation of the DEL curvature (per interval j with multipliers a = y_j on -p+_j and b on p-_j,
b = y_j+1, or y_0 for the last interval of a periodic gait):

    (b.p- - a.p+) / (h s) = D_(a,b) l(q0, q1, h) / s + ((a + b)/2) . F(q_mid, v, u) / s,
    l = L_d / h = L(q_mid, (q1 - q0)/h),  F = -damping v + tau(q_mid, u),

so its Hessian in (q0, q1, h) is d/de Hess l(q0 + e a, q1 + e b, h) / s (Hess l from the
conservative momentum Jacobians, and d2 l/dh2 = 3 v^T M v / h^2), plus the damping's h terms and
the actuation's second derivatives.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
import weakref

import numpy as np
import scipy.sparse as sp

from drakebots.optimization.batch_dynamics import BatchActuation, BatchIntervals, BatchTree
from drakebots.optimization.tree_lagrangian import RelativePositionConstraints

HESSIANS = ("exact", "gauss-newton")
# Step of the one-sided differences of the DEL curvature along the multipliers (|e y|_inf, in
# the plant's position units). Measured against central differences of the exact gradient of the
# Lagrangian (tests/optimization/test_contact_implicit_fast.py): largest error relative to the
# Hessian's largest entry 3e-7 on a random tree in SI units with a 11 ms step (the d2/dh2 entry;
# 3.6e-6 at a step of 1e-7, 1.6e-6 at 1e-9 where rounding takes over), 8e-10 on HAMR-VI.
DIRECTIONAL_STEP = 1e-8

_TREES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NAME = re.compile(r"^(dynamics|loop|contact|clearance|sliding|foot_scuff|guard)\[(\d+)\]$")


class FastPathUnsupported(ValueError):
    """The program holds something the fast path has no vectorised evaluator for."""


def _Tree(dynamics) -> BatchTree:
    tree = _TREES.get(dynamics)
    if tree is None:
        loops = dynamics.position_constraints
        tree = BatchTree(dynamics.lagrangian, loops)
        _TREES[dynamics] = tree
    return tree


def _T(a):
    return np.swapaxes(a, -1, -2)


@dataclasses.dataclass
class _Point:
    """Everything evaluated at one decision vector, shared by values, Jacobian and Hessian."""

    x: np.ndarray
    q: np.ndarray
    u: np.ndarray
    lam: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    psi: np.ndarray
    eta: np.ndarray
    slack: np.ndarray
    h: float
    kin: object = None
    kin_mid: object = None
    pts: np.ndarray = None
    J: np.ndarray = None  # (N, nc, n, 3)
    c: np.ndarray = None
    C: np.ndarray = None
    intervals: object = None
    force: np.ndarray = None  # (N-1, nc, 3) contact forces (scaled)
    p_in: np.ndarray = None
    force_derivatives: tuple = None
    legendre: object = None
    del_residual: np.ndarray = None
    guard_pts: np.ndarray = None  # (N, guards, 3) the guard points (AddGuardHeightConstraints)
    guard_jac: np.ndarray = None  # (N, guards, n, 3)


class ContactImplicitNlp:
    """The program of a ContactImplicitProblem as vectorised functions of its decision vector
    (the order of `prog.decision_variables()`).

    Rows of g follow `prog.GetAllConstraints()` without the bounding boxes, which become the
    variable bounds; `row_names[i]` names the binding of row i. Refresh() re-reads bounds (a
    stage may have moved them); the structure of the program must not change meanwhile (build a
    new ContactImplicitNlp after adding or removing a binding).

    Args:
        problem: the ContactImplicitProblem (MakeContactImplicitProblem, costs added).
        hessian: "exact" or "gauss-newton" (see the module docstring).

    Raises:
        FastPathUnsupported: naming the first binding or model part without an evaluator.
    """

    def __init__(self, problem, *, hessian: str = "exact"):
        if hessian not in HESSIANS:
            raise ValueError(f"hessian {hessian!r}: one of {', '.join(HESSIANS)}")
        self.problem = problem
        self.hessian = hessian
        self.prog = prog = problem.prog
        self.dyn = dyn = problem.dynamics
        if dyn.position_constraints is not None and not isinstance(
            dyn.position_constraints, RelativePositionConstraints
        ):
            raise FastPathUnsupported(
                f"position constraints {type(dyn.position_constraints).__name__} (the fast path "
                "knows RelativePositionConstraints)"
            )
        self.tree = _Tree(dyn)
        self.act = BatchActuation(dyn.actuation, dyn.num_positions)
        if not self.act.supported:
            raise FastPathUnsupported(self.act.reason)
        self.num_vars = prog.num_vars()
        self._ParseVariables()
        self._ParseConstraints()
        self._ParseCosts()
        self.Refresh()
        self._point = None
        self._jac = None
        self._hess = None
        self.evaluations = {"point": 0, "values": 0, "jacobian": 0, "hessian": 0}

    # ------------------------------------------------------------------ parsing
    def _Indices(self, variables) -> np.ndarray:
        v = np.asarray(variables)
        if v.size == 0:
            return np.zeros(v.shape, dtype=int)
        return np.asarray(self.prog.FindDecisionVariableIndices(v.ravel()), int).reshape(v.shape)

    def _ParseVariables(self) -> None:
        vars, dyn = self.problem.vars, self.dyn
        self.N = N = vars.num_knots
        self.n, self.m = dyn.num_positions, dyn.num_inputs
        self.nl, self.nc, self.nd = (
            dyn.num_position_constraints,
            dyn.num_contacts,
            dyn.num_directions,
        )
        self.iq = self._Indices(vars.q)
        self.iu = self._Indices(vars.u).reshape(N - 1, self.m)
        self.ilam = self._Indices(vars.lam).reshape(N - 1, self.nl)
        self.igamma = self._Indices(vars.gamma).reshape(N - 1, self.nc)
        self.ibeta = self._Indices(vars.beta).reshape(N - 1, self.nc * self.nd)
        self.ipsi = self._Indices(vars.psi).reshape(N - 1, self.nc)
        self.ieta = self._Indices(vars.eta).reshape(N - 1, self.nc * self.nd)
        self.islack = self._Indices(vars.slack).reshape(N - 1)
        self.ih = None if vars.h is None else int(self._Indices(vars.h).ravel()[0])
        self.hv = 0 if self.ih is None else 1
        self.periodic = self.problem.initial[0] == "periodic"
        self.initial = self.problem.initial

    def _ExpectedVariables(self, kind: str, k: int) -> np.ndarray:
        N = self.N
        h = [] if self.ih is None else [np.array([self.ih])]
        if kind == "dynamics":
            forces = [self.ilam[k], self.igamma[k], self.ibeta[k]]
            if k > 0:
                parts = [self.iq[k - 1], self.iq[k], self.iq[k + 1], self.iu[k - 1], self.iu[k]]
            elif self.periodic:
                parts = [self.iq[N - 2], self.iq[N - 1], self.iq[0], self.iq[1]]
                parts += [self.iu[N - 2], self.iu[0]]
            else:
                parts = [self.iq[0], self.iq[1], self.iu[0]]
            return np.concatenate(parts + forces + h)
        if kind in ("loop", "guard"):
            return self.iq[k]
        if kind == "contact":
            return np.concatenate([self.iq[k + 1], self.igamma[k], [self.islack[k]]])
        if kind == "clearance":
            return self.iq[0]
        if kind == "sliding":
            return np.concatenate([self.iq[k], self.iq[k + 1], self.ipsi[k], self.ieta[k]] + h)
        if kind == "foot_scuff":
            return np.concatenate([self.iq[k], self.iq[k + 1]])
        raise AssertionError(kind)

    def _Functions(self) -> dict:
        from drakebots.optimization import contact_implicit_constraints as constraints

        functions = dict(self.problem.functions)
        functions.update(constraints._REGISTRY.get(id(self.prog), {}))
        return functions

    def _Recognise(self, binding, functions, allowed) -> tuple[str, int] | None:
        name = binding.evaluator().get_description()
        match = _NAME.match(name)
        if not match or name not in functions or match.group(1) not in allowed:
            return None
        kind, k = match.group(1), int(match.group(2))
        limit = {"loop": self.N, "guard": self.N, "clearance": 1}.get(kind, self.N - 1)
        if k >= limit:
            return None
        expected = self._ExpectedVariables(kind, k)
        got = self._Indices(binding.variables())
        if got.shape != expected.shape or not np.array_equal(got, expected):
            return None
        if kind == "dynamics" and k == 0 and self.initial[0] not in ("periodic",):
            if self.initial[0] not in ("velocity", "momentum"):
                return None
        return kind, k

    def _ParseConstraints(self) -> None:
        from pydrake.solvers import (
            BoundingBoxConstraint,
            LinearConstraint,
            QuadraticConstraint,
        )

        functions = self._Functions()
        allowed = ("dynamics", "loop", "contact", "clearance", "sliding", "guard")
        rows = 0
        self._bbox, self._linear, self._quadratic, self._blocks = [], [], [], {}
        self._guard_functions = set()
        self.row_names = []
        self._row_bindings = []
        for binding in self.prog.GetAllConstraints():
            ev = binding.evaluator()
            name = ev.get_description() or type(ev).__name__
            if isinstance(ev, BoundingBoxConstraint):
                self._bbox.append((binding, self._Indices(binding.variables())))
                continue
            count = ev.num_constraints()
            start = rows
            rows += count
            self.row_names += [name] * count
            self._row_bindings.append((binding, start, count))
            if isinstance(ev, QuadraticConstraint):
                self._quadratic.append((start, self._Indices(binding.variables()), ev))
            elif isinstance(ev, LinearConstraint):
                self._linear.append((start, self._Indices(binding.variables()), ev))
            else:
                recognised = self._Recognise(binding, functions, allowed)
                if recognised is None:
                    raise FastPathUnsupported(
                        f"constraint '{name}' ({type(ev).__name__}) has no vectorised "
                        "evaluator in the fast path (solve with snopt or ipopt)"
                    )
                kind, k = recognised
                self._blocks.setdefault(kind, {})[k] = np.arange(start, start + count)
                if kind == "guard":
                    self._guard_functions.add(functions[name])
        self.num_rows = rows
        N, n, nc = self.N, self.n, self.nc
        blocks = self._blocks
        # Vectorised kinds: complete where the builders make them complete.
        dyn_rows = blocks.get("dynamics", {})
        if len(dyn_rows) not in (0, N - 1):
            raise FastPathUnsupported(
                f"{len(dyn_rows)} of the {N - 1} dynamics[k] constraints (the fast path needs all)"
            )
        self.del_rows = (
            np.array([dyn_rows[k] for k in range(N - 1)]) if dyn_rows else np.zeros((0, n), int)
        )
        loops = blocks.get("loop", {})
        self.loop_knots = np.array(sorted(loops), int)
        self.loop_rows = (
            np.array([loops[k] for k in self.loop_knots]) if len(loops) else np.zeros((0, 0), int)
        )
        contact = blocks.get("contact", {})
        if len(contact) not in (0, N - 1):
            raise FastPathUnsupported("some contact[k] constraints are missing")
        self.contact_rows = (
            np.array([contact[k] for k in range(N - 1)]) if contact else np.zeros((0, nc + 1), int)
        )
        self.clearance_rows = blocks.get("clearance", {}).get(0)
        sliding = blocks.get("sliding", {})
        if len(sliding) not in (0, N - 1):
            raise FastPathUnsupported("some sliding[k] constraints are missing")
        self.sliding_rows = (
            np.array([sliding[k] for k in range(N - 1)])
            if sliding
            else np.zeros((0, nc * self.nd), int)
        )
        self.has_del = bool(dyn_rows)
        guards = blocks.get("guard", {})
        if len({fn.guard for fn in self._guard_functions}) > 1:
            raise FastPathUnsupported(
                "guard[k] constraints on different points (the fast path needs one set)"
            )
        self.guard_knots = np.array(sorted(guards), int)
        self.guard_rows = np.array([guards[k] for k in self.guard_knots]) if guards else None
        if guards:
            fn = next(iter(self._guard_functions))
            self.guard_bodies, self.guard_p_BG = fn.guard_bodies, fn.guard_points
        # Linear rows: one sparse matrix.
        r, c, v = [], [], []
        for start, idx, ev in self._linear:
            A = sp.coo_matrix(ev.get_sparse_A())
            r.append(start + A.row)
            c.append(idx[A.col])
            v.append(A.data)
        self._lin_rows = np.concatenate(r) if r else np.zeros(0, int)
        self._lin_cols = np.concatenate(c) if c else np.zeros(0, int)
        self._lin_vals = np.concatenate(v) if v else np.zeros(0)
        # Quadratic rows: 1/2 x^T Q x + b^T x, as COO triplets (Q symmetrised).
        qr, qa, qb, qv, br, bc, bv = [], [], [], [], [], [], []
        for start, idx, ev in self._quadratic:
            Q = np.asarray(ev.Q(), float)
            Q = 0.5 * (Q + Q.T)
            a, b = np.nonzero(Q)
            qr.append(np.full(len(a), start))
            qa.append(idx[a])
            qb.append(idx[b])
            qv.append(Q[a, b])
            bvec = np.asarray(ev.b(), float)
            nz = np.nonzero(bvec)[0]
            br.append(np.full(len(nz), start))
            bc.append(idx[nz])
            bv.append(bvec[nz])
        cat = np.concatenate
        self._qc = (
            (cat(qr), cat(qa), cat(qb), cat(qv), cat(br), cat(bc), cat(bv))
            if qr
            else tuple(np.zeros(0, int) for _ in range(7))
        )

    def _ParseCosts(self) -> None:
        from pydrake.solvers import LinearCost, QuadraticCost

        functions = self._Functions()
        nv = self.num_vars
        gradient = np.zeros(nv)
        constant = 0.0
        Qr, Qc, Qv = [], [], []
        scuff = {}
        for binding in self.prog.GetAllCosts():
            ev = binding.evaluator()
            name = ev.get_description() or type(ev).__name__
            idx = self._Indices(binding.variables())
            if isinstance(ev, QuadraticCost):
                Q = np.asarray(ev.Q(), float)
                Q = 0.5 * (Q + Q.T)
                a, b = np.nonzero(Q)
                Qr.append(idx[a])
                Qc.append(idx[b])
                Qv.append(Q[a, b])
                np.add.at(gradient, idx, np.asarray(ev.b(), float))
                constant += float(ev.c())
            elif isinstance(ev, LinearCost):
                np.add.at(gradient, idx, np.asarray(ev.a(), float))
                constant += float(ev.b())
            else:
                recognised = self._Recognise(binding, functions, ("foot_scuff",))
                fn = functions.get(name)
                params = getattr(fn, "foot_scuff", None)
                if recognised is None or params is None:
                    raise FastPathUnsupported(
                        f"cost '{name}' ({type(ev).__name__}) has no vectorised evaluator in the "
                        "fast path (solve with snopt or ipopt)"
                    )
                scuff[recognised[1]] = params
        if scuff:
            if len(scuff) != self.N - 1 or len(set(scuff.values())) != 1:
                raise FastPathUnsupported(
                    "foot_scuff[k] costs on only some intervals, or with different weights"
                )
            self.scuff = next(iter(scuff.values()))  # (weight, height_scale)
        else:
            self.scuff = None
        cat = np.concatenate
        if Qr:
            Q = sp.coo_matrix((cat(Qv), (cat(Qr), cat(Qc))), shape=(nv, nv)).tocsr()
        else:
            Q = sp.csr_matrix((nv, nv))
        self._cost_Q = Q
        self._cost_b = gradient
        self._cost_c = constant
        lower = sp.tril(Q).tocoo()
        self._cost_hess = (lower.row, lower.col, lower.data)

    def Refresh(self) -> None:
        """Re-reads the variable and constraint bounds from the program."""
        nv = self.num_vars
        lo = np.full(nv, -np.inf)
        hi = np.full(nv, np.inf)
        for binding, idx in self._bbox:
            ev = binding.evaluator()
            np.maximum.at(lo, idx, ev.lower_bound())
            np.minimum.at(hi, idx, ev.upper_bound())
        self.x_lower, self.x_upper = lo, hi
        gl = np.zeros(self.num_rows)
        gu = np.zeros(self.num_rows)
        for binding, start, count in self._row_bindings:
            ev = binding.evaluator()
            gl[start : start + count] = ev.lower_bound()
            gu[start : start + count] = ev.upper_bound()
        self.g_lower, self.g_upper = gl, gu
        self._momentum = (
            np.asarray(self.initial[1], float) if self.initial[0] == "momentum" else None
        )

    # ------------------------------------------------------------------ evaluation
    def _Evaluate(self, x: np.ndarray) -> _Point:
        x = np.asarray(x, float)
        if self._point is not None and np.array_equal(self._point.x, x):
            return self._point
        self.evaluations["point"] += 1
        dyn, tree = self.dyn, self.tree
        # As VariationalDynamics counts them (progress displays, summary.json).
        dyn.evaluation_counts["interval"] += self.N - 1
        N = self.N
        P = _Point(
            x=x.copy(),
            q=x[self.iq],
            u=x[self.iu],
            lam=x[self.ilam],
            gamma=x[self.igamma],
            beta=x[self.ibeta],
            psi=x[self.ipsi],
            eta=x[self.ieta],
            slack=x[self.islack],
            h=self.problem.vars.time_step if self.ih is None else float(x[self.ih]),
        )
        # One forward kinematics pass for the knots and the intervals' midpoints.
        kin_all = tree.Kinematics(np.concatenate([P.q, 0.5 * (P.q[:-1] + P.q[1:])]))
        P.kin = kin_all.Slice(0, N)
        P.kin_mid = kin_all.Slice(N, 2 * N - 1)
        if self.nc:
            P.pts = tree.PointsPosition(P.kin, dyn._contact_bodies, dyn._contact_p_BC)
            P.J = tree.PointsJacobian(P.kin, dyn._contact_bodies, P.pts)
            P.force = P.gamma[:, :, None] * dyn.normal + (
                P.beta.reshape(N - 1, self.nc, self.nd) @ dyn.directions
            )
        if self.nl:
            P.c = tree.LoopResidual(P.kin)
            P.C = tree.LoopJacobian(P.kin)
        if self.guard_rows is not None:
            P.guard_pts = tree.PointsPosition(P.kin, self.guard_bodies, self.guard_p_BG)
            P.guard_jac = tree.PointsJacobian(P.kin, self.guard_bodies, P.guard_pts)
        if self.has_del:
            P.intervals = BatchIntervals(
                tree, self.act, dyn.lagrangian.damping, P.q[:-1], P.q[1:], P.u, P.h, kin=P.kin_mid
            )
            it = P.intervals
            p_in = np.empty((N - 1, self.n))
            p_in[1:] = it.p_minus[:-1]
            kind = self.initial[0]
            if kind == "periodic":
                p_in[0] = it.p_minus[-1]
            elif kind == "velocity":
                v0 = np.asarray(self.initial[1], float)
                kin0 = P.kin.Slice(0, 1)
                P.legendre = (kin0, tree.Terms(kin0, v0[None]))
                p_in[0] = P.legendre[1].Mv[0]
            else:
                p_in[0] = self._momentum
            P.p_in = p_in
            s = dyn.force_scale
            R = (p_in - it.p_plus) / (P.h * s)
            if self.nl:
                R += np.einsum("kln,kl->kn", P.C[:-1], P.lam)
            if self.nc:
                R += np.einsum("kcni,kci->kn", P.J[1:], P.force)
            P.del_residual = R
        self._point = P
        return P

    def Objective(self, x: np.ndarray) -> float:
        x = np.asarray(x, float)
        value = 0.5 * float(x @ (self._cost_Q @ x)) + float(self._cost_b @ x) + self._cost_c
        if self.scuff is not None:
            value += self._ScuffValue(self._Evaluate(x))
        return value

    def Gradient(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float)
        grad = self._cost_Q @ x + self._cost_b
        if self.scuff is not None:
            P = self._Evaluate(x)
            g0, g1 = self._ScuffGradient(P)
            np.add.at(grad, self.iq[:-1], g0)
            np.add.at(grad, self.iq[1:], g1)
        return grad

    def Constraints(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float)
        self.evaluations["values"] += 1
        P = self._Evaluate(x)
        g = np.zeros(self.num_rows)
        dyn = self.dyn
        if self.has_del:
            g[self.del_rows] = P.del_residual
        if len(self.loop_knots):
            g[self.loop_rows] = P.c[self.loop_knots]
        if self.guard_rows is not None:
            g[self.guard_rows] = P.guard_pts[self.guard_knots, :, 2] - dyn.ground_height
        if self.nc:
            phi = P.pts[..., 2] - dyn.ground_height  # (N, nc)
            if len(self.contact_rows):
                comp = np.einsum("kc,kc->k", P.gamma, phi[1:]) - P.slack
                g[self.contact_rows] = np.column_stack([phi[1:], comp])
            if self.clearance_rows is not None:
                g[self.clearance_rows] = phi[0]
            if len(self.sliding_rows):
                tangential = ((P.pts[1:] - P.pts[:-1]) @ dyn.directions.T) / P.h
                r = tangential + P.psi[:, :, None] - P.eta.reshape(self.N - 1, self.nc, self.nd)
                g[self.sliding_rows] = r.reshape(self.N - 1, -1)
        if len(self._lin_rows):
            g += np.bincount(
                self._lin_rows, weights=self._lin_vals * x[self._lin_cols], minlength=self.num_rows
            )
        qr, qa, qb, qv, br, bc, bv = self._qc
        if len(qr) or len(br):
            g += np.bincount(qr, weights=0.5 * qv * x[qa] * x[qb], minlength=self.num_rows)
            g += np.bincount(br, weights=bv * x[bc], minlength=self.num_rows)
        return g

    # ------------------------------------------------------------------ foot scuff cost
    def _ScuffTerms(self, P: _Point):
        dyn = self.dyn
        weight, delta = self.scuff
        nvec = dyn.normal
        Pn = np.eye(3) - np.outer(nvec, nvec)
        p0, p1 = P.pts[:-1], P.pts[1:]
        phi = 0.5 * ((p0 + p1) @ nvec) - dyn.ground_height
        w = np.exp(-phi / delta)
        d = (p1 - p0) @ Pn
        s2 = np.einsum("kci,kci->kc", d, d)
        return weight, delta, nvec, Pn, w, d, s2

    def _ScuffValue(self, P: _Point) -> float:
        weight, _, _, _, w, _, s2 = self._ScuffTerms(P)
        return 0.5 * weight * float(np.sum(w * s2))

    def _ScuffPointGradients(self, P: _Point):
        """d value / d p0, d p1 (N-1, nc, 3), with the weight."""
        weight, delta, nvec, _, w, d, s2 = self._ScuffTerms(P)
        a = w[..., None] * d
        b = (-0.25 / delta) * (w * s2)[..., None] * nvec
        return weight * (-a + b), weight * (a + b)

    def _ScuffGradient(self, P: _Point):
        f0, f1 = self._ScuffPointGradients(P)
        g0 = np.einsum("kcni,kci->kn", P.J[:-1], f0)
        g1 = np.einsum("kcni,kci->kn", P.J[1:], f1)
        return g0, g1

    def _ScuffPointHessian(self, P: _Point):
        """(N-1, nc, 6, 6) Hessian of the cost in (p0, p1) per contact, with the weight."""
        weight, delta, nvec, Pn, w, d, s2 = self._ScuffTerms(P)
        wv = w[..., None, None]
        nn = np.outer(nvec, nvec)
        dn = d[..., :, None] * nvec[None, None, None, :]  # d n^T
        nd = _T(dn)
        c2 = (w * s2)[..., None, None] / (8 * delta**2) * nn
        H11 = wv * Pn - wv / (2 * delta) * (dn + nd) + c2
        H00 = wv * Pn + wv / (2 * delta) * (dn + nd) + c2
        H10 = -wv * Pn - wv / (2 * delta) * dn + wv / (2 * delta) * nd + c2
        H = np.zeros(w.shape + (6, 6))
        H[..., :3, :3] = H00
        H[..., 3:, 3:] = H11
        H[..., 3:, :3] = H10
        H[..., :3, 3:] = _T(H10)
        return weight * H

    def _ForceDerivatives(self, P: _Point):
        """d(C(q_k)^T lam_k)/dq_k and d(sum_c J_c(q_k+1)^T f_kc)/dq_k+1, (N-1, n, n) each
        (kept with the point: the Hessian's differences along y start from them)."""
        if P.force_derivatives is None:
            N, n, nl, nc = self.N, self.n, self.nl, self.nc
            dyn, tree = self.dyn, self.tree
            loop = np.zeros((N - 1, n, n))
            contact = np.zeros((N - 1, n, n))
            if nl:
                loop = tree.LoopHessianTimes(P.kin.Slice(0, N - 1), P.lam)
            if nc:
                contact = tree.PointsHessianTimes(
                    P.kin.Slice(1, N), dyn._contact_bodies, P.pts[1:], P.force, J=P.J[1:]
                )
            P.force_derivatives = (loop, contact)
        return P.force_derivatives

    # ------------------------------------------------------------------ Jacobian
    def _JacobianBlocks(self, P: _Point) -> list:
        """[(name, rows (K, r), [(group, cols (K, c), values (K, r, c))])] dense blocks."""
        dyn = self.dyn
        N, n, nl, nc, nd = self.N, self.n, self.nl, self.nc, self.nd
        h, s = P.h, dyn.force_scale
        hs = h * s
        out = []
        hcols = None if self.ih is None else np.full((1, 1), self.ih)

        def Hcols(K):
            return np.broadcast_to(hcols, (K, 1))

        if self.has_del:
            it = P.intervals
            K = N - 1
            # Loop force and contact force derivatives at every knot (zero-padded).
            qk_extra, qk1_extra = self._ForceDerivatives(P)
            lam_block = _T(P.C[:-1]) if nl else np.zeros((K, n, 0))
            if nc:
                gamma_block = np.einsum("kcni,i->knc", P.J[1:], dyn.normal)
                beta_block = np.einsum("kcni,ji->kncj", P.J[1:], dyn.directions).reshape(
                    K, n, nc * nd
                )
            else:
                gamma_block = beta_block = np.zeros((K, n, 0))
            dh = -it.d_plus[3] / hs - (P.p_in - it.p_plus) / (h * hs)
            dh[1:] += it.d_minus[3][:-1] / hs
            qk = -it.d_plus[0] / hs + qk_extra
            qk[1:] += it.d_minus[1][:-1] / hs
            groups = {
                "qk": qk,
                "qk1": -it.d_plus[1] / hs + qk1_extra,
                "uk": -it.d_plus[2] / hs,
                "lam": lam_block,
                "gamma": gamma_block,
                "beta": beta_block,
            }
            cols = {
                "qk": self.iq[:-1],
                "qk1": self.iq[1:],
                "uk": self.iu,
                "lam": self.ilam,
                "gamma": self.igamma,
                "beta": self.ibeta,
            }
            if self.initial[0] == "velocity":
                groups["qk"][0] += P.legendre[1].P[0] / hs
            entries = [(g, cols[g], groups[g]) for g in groups]
            if self.ih is not None:
                entries.append(("h", Hcols(K), dh[:, :, None]))
            out.append(("dynamics", self.del_rows, entries))
            # The incoming interval's blocks (knots 1..N-2, and knot 0 when periodic).
            if N > 2:
                inc = [
                    ("qa", self.iq[: N - 2], it.d_minus[0][:-1] / hs),
                    ("ua", self.iu[: N - 2], it.d_minus[2][:-1] / hs),
                ]
                out.append(("dynamics_incoming", self.del_rows[1:], inc))
            if self.periodic:
                inc0 = [
                    ("qa", self.iq[N - 2 : N - 1], it.d_minus[0][-1:] / hs),
                    ("qb", self.iq[N - 1 : N], it.d_minus[1][-1:] / hs),
                    ("ua", self.iu[N - 2 : N - 1], it.d_minus[2][-1:] / hs),
                ]
                if self.ih is not None:
                    inc0.append(("h", Hcols(1), (it.d_minus[3][-1:] / hs)[:, :, None]))
                out.append(("dynamics_periodic", self.del_rows[:1], inc0))
        if len(self.loop_knots):
            out.append(
                ("loop", self.loop_rows, [("q", self.iq[self.loop_knots], P.C[self.loop_knots])])
            )
        if self.guard_rows is not None:
            Jg = P.guard_jac[self.guard_knots, :, :, 2]  # (K, guards, n)
            out.append(("guard", self.guard_rows, [("q", self.iq[self.guard_knots], Jg)]))
        if nc:
            Jz = P.J[..., 2]  # (N, nc, n)
            phi = P.pts[..., 2] - dyn.ground_height
            K = N - 1
            if len(self.contact_rows):
                qb = np.concatenate([Jz[1:], np.einsum("kc,kcn->kn", P.gamma, Jz[1:])[:, None]], 1)
                gb = np.concatenate(
                    [np.broadcast_to(np.zeros((nc, nc)), (K, nc, nc)), phi[1:, None]], 1
                )
                sb = np.zeros((K, nc + 1, 1))
                sb[:, -1, 0] = -1.0
                out.append(
                    (
                        "contact",
                        self.contact_rows,
                        [
                            ("q", self.iq[1:], qb),
                            ("gamma", self.igamma, gb),
                            ("slack", self.islack[:, None], sb),
                        ],
                    )
                )
            if self.clearance_rows is not None:
                out.append(("clearance", self.clearance_rows[None], [("q", self.iq[:1], Jz[:1])]))
            if len(self.sliding_rows):
                D = dyn.directions
                JD = np.einsum("ji,kcni->kcjn", D, P.J).reshape(N, nc * nd, n)
                psi_b = np.broadcast_to(np.kron(np.eye(nc), np.ones((nd, 1))), (K, nc * nd, nc))
                eta_b = np.broadcast_to(-np.eye(nc * nd), (K, nc * nd, nc * nd))
                entries = [
                    ("q0", self.iq[:-1], -JD[:-1] / h),
                    ("q1", self.iq[1:], JD[1:] / h),
                    ("psi", self.ipsi, psi_b),
                    ("eta", self.ieta, eta_b),
                ]
                if self.ih is not None:
                    dx = ((P.pts[1:] - P.pts[:-1]) @ D.T).reshape(K, -1)
                    entries.append(("h", Hcols(K), (-dx / (h * h))[:, :, None]))
                out.append(("sliding", self.sliding_rows, entries))
        return out

    def _QuadraticJacobian(self, x):
        """COO (rows, cols, values) of the quadratic constraints' Jacobian at x."""
        qr, qa, qb, qv, br, bc, bv = self._qc
        return (
            np.concatenate([qr, br]),
            np.concatenate([qa, bc]),
            np.concatenate([qv * x[qb], bv]),
        )

    def _BuildJacobianStructure(self, P: _Point, masks: dict) -> None:
        """The Jacobian's (rows, cols) from the blocks' masks, duplicates merged."""
        raw_r, raw_c, self._jac_masks = [], [], {}
        for name, rows, entries in self._JacobianBlocks(P):
            for group, cols, _values in entries:
                mask = masks[(name, group)]
                self._jac_masks[(name, group)] = mask
                K = rows.shape[0]
                R = np.broadcast_to(np.asarray(rows)[:, :, None], (K,) + mask.shape)
                Cc = np.broadcast_to(np.asarray(cols)[:, None, :], (K,) + mask.shape)
                raw_r.append(R[:, mask].ravel())
                raw_c.append(Cc[:, mask].ravel())
        raw_r.append(self._lin_rows)
        raw_c.append(self._lin_cols)
        qrow, qcol, _ = self._QuadraticJacobian(np.zeros(self.num_vars))
        raw_r.append(qrow)
        raw_c.append(qcol)
        raw_r = np.concatenate(raw_r).astype(np.int64)
        raw_c = np.concatenate(raw_c).astype(np.int64)
        keys = raw_r * self.num_vars + raw_c
        unique, inverse = np.unique(keys, return_inverse=True)
        self._jac = (unique // self.num_vars, unique % self.num_vars, inverse)

    def _Samples(self, x0: np.ndarray, count: int = 3) -> list:
        rng = np.random.default_rng(12345)
        samples = []
        for _ in range(count):
            x = np.array(x0, float)
            x = x + rng.uniform(0.2, 1.0, x.size) * (0.01 + 0.01 * np.abs(x))
            if self.ih is not None:
                x[self.ih] = abs(x0[self.ih]) if x0[self.ih] != 0 else self.problem.vars.time_step
            self._point = None
            samples.append(self._Evaluate(x))
        self._point = None
        return samples

    def _LayoutKey(self) -> tuple:
        """What the vectorised blocks' sparsity depends on (not on Drake's own bindings)."""
        return (
            self.hessian,
            self.N,
            self.n,
            self.m,
            self.nl,
            self.nc,
            self.nd,
            self.hv,
            self.initial[0],
            self.has_del,
            tuple(self.loop_knots),
            bool(len(self.contact_rows)),
            self.clearance_rows is not None,
            bool(len(self.sliding_rows)),
            self.scuff is not None,
            None if self.guard_rows is None else (tuple(self.guard_knots), self.guard_rows.shape),
        )

    def _SampleMasks(self, x0: np.ndarray) -> tuple[dict, dict]:
        """Each block's structural nonzeros: the union over random points near x0 (and random
        multipliers) of its dense values' nonzeros."""
        jac = {}
        for P in self._Samples(x0, 3):
            for name, _rows, entries in self._JacobianBlocks(P):
                for group, _cols, values in entries:
                    nz = np.any(np.asarray(values) != 0.0, axis=0)
                    key = (name, group)
                    jac[key] = nz if key not in jac else jac[key] | nz
        rng = np.random.default_rng(54321)
        hess = {}
        for P in self._Samples(x0, 2):
            y = rng.uniform(-1, 1, self.num_rows)
            for name, _cols, values in self._HessianBlocks(P, 1.0, y):
                nz = np.any(np.asarray(values) != 0.0, axis=0)
                hess[name] = nz if name not in hess else hess[name] | nz
        self._point = None
        return jac, hess

    def _EnsureStructure(self, x0: np.ndarray) -> None:
        if self._jac is not None and self._hess is not None:
            return
        # The masks are kept with the problem: a later stage's program (bounds moved, costs
        # added) has the same vectorised blocks.
        store = self.problem.cache.setdefault("fast_masks", {})
        key = self._LayoutKey()
        if key not in store:
            store[key] = self._SampleMasks(x0)
        jac_masks, hess_masks = store[key]
        P = self._Samples(x0, 1)[0]
        self._BuildJacobianStructure(P, jac_masks)
        self._BuildHessianStructure(P, hess_masks)
        self._point = None

    @property
    def jacobian_structure(self) -> tuple[np.ndarray, np.ndarray]:
        return self._jac[0], self._jac[1]

    def JacobianValues(self, x: np.ndarray) -> np.ndarray:
        """The Jacobian's values on `jacobian_structure`."""
        x = np.asarray(x, float)
        self._EnsureStructure(x)
        self.evaluations["jacobian"] += 1
        P = self._Evaluate(x)
        raw = []
        for name, rows, entries in self._JacobianBlocks(P):
            for group, _cols, values in entries:
                mask = self._jac_masks[(name, group)]
                raw.append(np.broadcast_to(values, (rows.shape[0],) + mask.shape)[:, mask].ravel())
        raw.append(self._lin_vals)
        raw.append(self._QuadraticJacobian(x)[2])
        raw = np.concatenate(raw)
        return np.bincount(self._jac[2], weights=raw, minlength=len(self._jac[0]))

    def Jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        values = self.JacobianValues(x)
        rows, cols = self.jacobian_structure
        return sp.csr_matrix((values, (rows, cols)), shape=(self.num_rows, self.num_vars))

    # ------------------------------------------------------------------ Hessian
    def _Multipliers(self, y: np.ndarray) -> dict:
        N, nl, nc, nd = self.N, self.nl, self.nc, self.nd
        out = {}
        out["del"] = y[self.del_rows] if self.has_del else None
        loop = np.zeros((N, nl))
        if len(self.loop_knots):
            loop[self.loop_knots] = y[self.loop_rows]
        out["loop"] = loop
        out["contact"] = y[self.contact_rows] if len(self.contact_rows) else None
        out["clearance"] = y[self.clearance_rows] if self.clearance_rows is not None else None
        if self.guard_rows is not None:
            guard = np.zeros((N, self.guard_rows.shape[1]))
            guard[self.guard_knots] = y[self.guard_rows]
            out["guard"] = guard
        out["sliding"] = (
            y[self.sliding_rows].reshape(N - 1, nc, nd) if len(self.sliding_rows) else None
        )
        return out

    def _EllHessian(self, kin, v, h, it=None):
        """Hess l in (q0, q1, h), l = L_d / h, (K, 2n+1, 2n+1), from the conservative momenta
        (kin: kinematics at the midpoints, v = (q1 - q0) / h; or `it`, the intervals' terms)."""
        if it is None:
            q_mid = kin.q
            it = BatchIntervals(
                self.tree,
                None,
                None,
                q_mid - 0.5 * h * v,
                q_mid + 0.5 * h * v,
                None,
                h,
                forcing=False,
                kin=kin,
            )
        K, n = v.shape
        E = np.zeros((K, 2 * n + 1, 2 * n + 1))
        E[:, :n, :n] = -it.cd_plus[0] / h
        E[:, :n, n : 2 * n] = -it.cd_plus[1] / h
        E[:, n : 2 * n, :n] = it.cd_minus[0] / h
        E[:, n : 2 * n, n : 2 * n] = it.cd_minus[1] / h
        col_h0 = -it.cd_plus[2] / h + it.cp_plus / (h * h)
        col_h1 = it.cd_minus[2] / h - it.cp_minus / (h * h)
        E[:, :n, -1] = col_h0
        E[:, n : 2 * n, -1] = col_h1
        E[:, -1, :n] = col_h0
        E[:, -1, n : 2 * n] = col_h1
        E[:, -1, -1] = 3.0 * it.vMv / (h * h)
        return E

    @staticmethod
    def _Steps(directions: np.ndarray) -> np.ndarray:
        """Per-row step e with |e d|_inf = DIRECTIONAL_STEP (0 where d = 0)."""
        size = np.max(np.abs(directions.reshape(directions.shape[0], -1)), axis=1)
        return np.where(size > 0, DIRECTIONAL_STEP / np.where(size > 0, size, 1.0), 0.0)

    def _HessianBlocks(self, P: _Point, sigma: float, y: np.ndarray) -> list:
        """[(name, vars (K, d), values (K, d, d) symmetric)] dense blocks of the Hessian."""
        dyn, tree = self.dyn, self.tree
        N, n, m, nl, nc, nd = self.N, self.n, self.m, self.nl, self.nc, self.nd
        h, s = P.h, dyn.force_scale
        exact = self.hessian == "exact"
        Y = self._Multipliers(y)
        hv = self.hv
        out = []
        # ---- intervals: [q_j, q_j+1, u_j, h]
        K = N - 1
        d = 2 * n + m + hv
        Hi = np.zeros((K, d, d))
        qs = slice(0, 2 * n)
        # Gauss-Newton leaves the DEL rows' curvature out altogether.
        del_curvature = self.has_del and exact
        if del_curvature:
            ydel = Y["del"]
            a = ydel
            b = np.zeros_like(a)
            b[:-1] = ydel[1:]
            if self.periodic:
                b[-1] = ydel[0]
            # One-sided differences from the point's own second derivatives, all moved
            # configurations in one forward kinematics pass: the midpoints along
            # (a + b)/2, the knots q_k (loop forces) and q_k+1 (contact forces) along y_k.
            e = self._Steps(np.concatenate([a, b], axis=1))
            ee = e[:, None]
            e_del = self._Steps(ydel)
            ed = e_del[:, None]
            q_mid = 0.5 * (P.q[:-1] + P.q[1:])
            v = (P.q[1:] - P.q[:-1]) / h
            configs = [q_mid + ee * 0.5 * (a + b)]
            if nl:
                configs.append(P.q[:-1] + ed * ydel)
            if nc:
                configs.append(P.q[1:] + ed * ydel)
            kin_fd = self.tree.Kinematics(np.concatenate(configs))
            E1 = self._EllHessian(kin_fd.Slice(0, K), v + ee * (b - a) / h, h)
            E0 = self._EllHessian(None, v, h, it=P.intervals)
            safe = np.where(e > 0, e, 1.0)[:, None, None]
            Hc = np.where(e[:, None, None] > 0, (E1 - E0) / (safe * s), 0.0)
            Hi[:, qs, qs] += Hc[:, : 2 * n, : 2 * n]
            if hv:
                Hi[:, qs, -1] += Hc[:, : 2 * n, -1]
                Hi[:, -1, qs] += Hc[:, -1, : 2 * n]
                Hi[:, -1, -1] += Hc[:, -1, -1]
            c = 0.5 * (a + b)
            damping = dyn.lagrangian.damping
            if hv:
                cd = c * damping / (h * h * s)
                Hi[:, :n, -1] -= cd
                Hi[:, n : 2 * n, -1] += cd
                Hi[:, -1, :n] -= cd
                Hi[:, -1, n : 2 * n] += cd
                dq = P.q[1:] - P.q[:-1]
                Hi[:, -1, -1] += -2.0 * np.einsum("ki,ki->k", c, damping * dq) / (h**3 * s)
            if m and self.act.kind == "joint":
                q_mid = 0.5 * (P.q[:-1] + P.q[1:])
                F_uu, F_ux, F_xx = self.act.SecondDerivatives(q_mid, P.u)
                idx = self.act.idx
                w = c[:, idx] / s  # (K, m)
                ar = np.arange(m)
                for r0 in (0, n):
                    for c0 in (0, n):
                        Hi[:, r0 + idx, c0 + idx] += 0.25 * w * F_xx
                    Hi[:, 2 * n + ar, r0 + idx] += 0.5 * w * F_ux
                    Hi[:, r0 + idx, 2 * n + ar] += 0.5 * w * F_ux
                Hi[:, 2 * n + ar, 2 * n + ar] += w * F_uu
        if self.scuff is not None:
            Hp = self._ScuffPointHessian(P)  # (K, nc, 6, 6)

            def Flat(a):  # (K, nc, n, 3) -> (K, n, 3 nc)
                return a.transpose(0, 2, 1, 3).reshape(K, n, 3 * nc)

            J0, J1 = P.J[:-1], P.J[1:]  # (K, nc, n, 3)
            F0, F1 = Flat(J0), Flat(J1)
            H00 = Flat(J0 @ Hp[..., :3, :3]) @ _T(F0)  # sum_c J0_c H00_c J0_c^T
            H11 = Flat(J1 @ Hp[..., 3:, 3:]) @ _T(F1)
            H10 = Flat(J1 @ Hp[..., 3:, :3]) @ _T(F0)
            Hi[:, :n, :n] += sigma * H00
            Hi[:, n : 2 * n, n : 2 * n] += sigma * H11
            Hi[:, n : 2 * n, :n] += sigma * H10
            Hi[:, :n, n : 2 * n] += sigma * _T(H10)
        cols = [self.iq[:-1], self.iq[1:], self.iu]
        if hv:
            cols.append(np.full((K, 1), self.ih))
        out.append(("interval", np.concatenate(cols, axis=1), Hi))
        # ---- knots: [q_k, h]
        Hk = np.zeros((N, n + hv, n + hv))
        f_total = np.zeros((N, nc, 3)) if nc else None
        qh = np.zeros((N, n))
        hh = 0.0
        if nc:
            ez = dyn.normal
            if Y["contact"] is not None:
                yc = Y["contact"]
                f_total[1:] += (yc[:, :nc] + yc[:, nc:] * P.gamma)[:, :, None] * ez
            if Y["clearance"] is not None:
                f_total[0] += Y["clearance"][:, None] * ez
            if Y["sliding"] is not None:
                ft = Y["sliding"] @ dyn.directions  # (K, nc, 3): sum_j w_cj d_j
                f_total[1:] += ft / h
                f_total[:-1] -= ft / h
                if hv:
                    J_ft1 = np.einsum("kcni,kci->kn", P.J[1:], ft)
                    J_ft0 = np.einsum("kcni,kci->kn", P.J[:-1], ft)
                    qh[1:] -= J_ft1 / (h * h)
                    qh[:-1] += J_ft0 / (h * h)
                    hh += 2.0 * float(np.sum(ft * (P.pts[1:] - P.pts[:-1]))) / h**3
            if self.scuff is not None:
                f0, f1 = self._ScuffPointGradients(P)
                f_total[:-1] += sigma * f0
                f_total[1:] += sigma * f1
            Hk[:, :n, :n] += tree.PointsHessianTimes(
                P.kin, dyn._contact_bodies, P.pts, f_total, J=P.J
            )
        if nl and len(self.loop_knots):
            Hk[:, :n, :n] += tree.LoopHessianTimes(P.kin, Y["loop"])
        if self.guard_rows is not None:
            f_guard = Y["guard"][:, :, None] * dyn.normal  # (N, guards, 3)
            Hk[:, :n, :n] += tree.PointsHessianTimes(
                P.kin, self.guard_bodies, P.guard_pts, f_guard, J=P.guard_jac
            )
        if del_curvature and self.initial[0] in ("velocity", "momentum"):
            y0 = Y["del"][0]
            if self.initial[0] == "velocity":
                kin0, t0 = P.legendre
                v0 = np.asarray(self.initial[1], float)
                # T_qq is quadratic in the velocity: the central difference is exact (a unit
                # step, no rounding to speak of).
                e = self._Steps(y0[None])[0] / DIRECTIONAL_STEP
                if e > 0:
                    tp = tree.Terms(kin0, (v0 + e * y0)[None])
                    tm = tree.Terms(kin0, (v0 - e * y0)[None])
                    Hk[0, :n, :n] += (tp.T_qq[0] - tm.T_qq[0]) / (2 * e * h * s)
                if hv:
                    qh[0] -= (t0.P[0].T @ y0) / (h * h * s)
                    hh += 2.0 * float(y0 @ t0.Mv[0]) / (h**3 * s)
            elif hv:
                hh += 2.0 * float(y0 @ self._momentum) / (h**3 * s)
        if hv:
            Hk[:, :n, -1] += qh
            Hk[:, -1, :n] += qh
            Hk[0, -1, -1] += hh
            cols = np.concatenate([self.iq, np.full((N, 1), self.ih)], axis=1)
        else:
            cols = self.iq
        out.append(("knot", cols, Hk))
        # ---- DEL force curvature: [q_k, lam_k] and [q_k+1, gamma_k, beta_k]
        if del_curvature and (nl or nc):
            safe = np.where(e_del > 0, e_del, 1.0)[:, None, None]
            loop0, contact0 = self._ForceDerivatives(P)
            offset = K
            if nl:
                kin = kin_fd.Slice(offset, offset + K)
                offset += K
                Hqq = (tree.LoopHessianTimes(kin, P.lam) - loop0) / safe
                Hlq = (tree.LoopJacobian(kin) - P.C[:-1]) / safe  # (K, nl, n)
                B = np.zeros((K, n + nl, n + nl))
                B[:, :n, :n] = Hqq
                B[:, n:, :n] = Hlq
                B[:, :n, n:] = _T(Hlq)
                out.append(("del_loop", np.concatenate([self.iq[:-1], self.ilam], 1), B))
            if nc:
                kin = kin_fd.Slice(offset, offset + K)
                pts = tree.PointsPosition(kin, dyn._contact_bodies, dyn._contact_p_BC)
                J = tree.PointsJacobian(kin, dyn._contact_bodies, pts)
                Hp = tree.PointsHessianTimes(kin, dyn._contact_bodies, pts, P.force, J=J)
                Hqq = (Hp - contact0) / safe
                dJ = (J - P.J[1:]) / safe[..., None]  # (K, nc, n, 3)
                Hgq = np.einsum("kcni,i->kcn", dJ, dyn.normal)
                Hbq = np.einsum("kcni,ji->kcjn", dJ, dyn.directions).reshape(K, nc * nd, n)
                dd = n + nc + nc * nd
                B = np.zeros((K, dd, dd))
                B[:, :n, :n] = Hqq
                B[:, n : n + nc, :n] = Hgq
                B[:, n + nc :, :n] = Hbq
                B[:, :n, n:] = _T(B[:, n:, :n])
                out.append(
                    ("del_contact", np.concatenate([self.iq[1:], self.igamma, self.ibeta], 1), B)
                )
        # ---- contact rows' mixed q-gamma curvature: y_comp J_z
        if nc and Y["contact"] is not None:
            ycomp = Y["contact"][:, nc]
            Jz = P.J[1:, :, :, 2]  # (K, nc, n)
            B = np.zeros((K, n + nc, n + nc))
            B[:, n:, :n] = ycomp[:, None, None] * Jz
            B[:, :n, n:] = _T(B[:, n:, :n])
            out.append(("contact", np.concatenate([self.iq[1:], self.igamma], 1), B))
        return out

    def _QuadraticHessian(self, sigma, y):
        """COO lower-triangle (rows, cols, values) of the quadratic constraints and costs."""
        qr, qa, qb, qv, *_ = self._qc
        lower = qa >= qb
        cr, cc, cv = self._cost_hess
        return (
            np.concatenate([qa[lower], cr]),
            np.concatenate([qb[lower], cc]),
            np.concatenate([(y[qr] * qv)[lower], sigma * cv]),
        )

    def _BuildHessianStructure(self, P: _Point, masks: dict) -> None:
        """The lower triangle's (rows, cols) from the blocks' masks, duplicates merged."""
        raw_r, raw_c = [], []
        self._hess_masks = {}
        for name, cols, values in self._HessianBlocks(P, 1.0, np.ones(self.num_rows)):
            d = values.shape[-1]
            mask = masks[name] & np.tril(np.ones((d, d), bool))
            self._hess_masks[name] = mask
            K = cols.shape[0]
            R = np.broadcast_to(cols[:, :, None], (K, d, d))[:, mask].ravel()
            Cc = np.broadcast_to(cols[:, None, :], (K, d, d))[:, mask].ravel()
            raw_r.append(np.maximum(R, Cc))
            raw_c.append(np.minimum(R, Cc))
        qr, qc, _ = self._QuadraticHessian(1.0, np.zeros(self.num_rows))
        raw_r.append(np.maximum(qr, qc))
        raw_c.append(np.minimum(qr, qc))
        raw_r = np.concatenate(raw_r).astype(np.int64)
        raw_c = np.concatenate(raw_c).astype(np.int64)
        keys = raw_r * self.num_vars + raw_c
        unique, inverse = np.unique(keys, return_inverse=True)
        self._hess = (unique // self.num_vars, unique % self.num_vars, inverse)

    @property
    def hessian_structure(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cols) of the lower triangle."""
        return self._hess[0], self._hess[1]

    def HessianValues(self, x: np.ndarray, sigma: float, y: np.ndarray) -> np.ndarray:
        """Values of the lower triangle of Hess (sigma f + y^T g) on `hessian_structure`."""
        x = np.asarray(x, float)
        y = np.asarray(y, float)
        self._EnsureStructure(x)
        self.evaluations["hessian"] += 1
        P = self._Evaluate(x)
        raw = []
        for name, _cols, values in self._HessianBlocks(P, float(sigma), y):
            raw.append(values[:, self._hess_masks[name]].ravel())
        raw.append(self._QuadraticHessian(float(sigma), y)[2])
        return np.bincount(self._hess[2], weights=np.concatenate(raw), minlength=len(self._hess[0]))

    def Hessian(self, x, sigma, y) -> sp.csr_matrix:
        """The full symmetric Hessian (for tests and diagnostics)."""
        values = self.HessianValues(x, sigma, y)
        r, c = self.hessian_structure
        L = sp.coo_matrix((values, (r, c)), shape=(self.num_vars, self.num_vars))
        return (L + L.T - sp.diags(L.diagonal())).tocsr()

    def Prepare(self, x0: np.ndarray) -> None:
        """Builds the Jacobian and Hessian patterns (random points near x0)."""
        self._EnsureStructure(np.asarray(x0, float))


# ---------------------------------------------------------------------------- solve
# Hessians SolveFast offers: ContactImplicitNlp's two, or IPOPT's limited-memory quasi-Newton on
# the same vectorised first derivatives (for comparison).
SOLVE_HESSIANS = HESSIANS + ("limited-memory",)
# IPOPT's options on the fast path (SolverConfig's tolerances and ipopt_options on top).
FAST_IPOPT_OPTIONS = {
    "mu_strategy": "adaptive",
    "linear_solver": "mumps",
    "print_timing_statistics": "yes",
}


def _Signature(prog) -> tuple:
    """What the fast NLP's structure depends on: every binding's name, type and size."""
    constraints = tuple(
        (b.evaluator().get_description(), type(b.evaluator()).__name__, b.variables().size)
        for b in prog.GetAllConstraints()
    )
    costs = tuple(
        (b.evaluator().get_description(), type(b.evaluator()).__name__, b.variables().size)
        for b in prog.GetAllCosts()
    )
    return (prog.num_vars(), constraints, costs)


@contextlib.contextmanager
def _OneThread():
    """BLAS and OpenMP limited to one thread (the KKT factorizations are small and sparse)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - declared dependency
        yield
        return
    with threadpool_limits(1):
        yield


def IpoptProfile(timing: dict, timing_cpu: dict | None = None) -> dict:
    """The split of an IPOPT solve's time from its timing statistics (print_timing_statistics):
    function evaluations (the NLP's callbacks), linear algebra (PDSystemSolverTotal: the KKT
    factorizations, including inertia corrections, and solves) and the rest (IPOPT's own
    bookkeeping), in wall and CPU seconds; empty without the statistics."""
    out = {}
    for suffix, t in (("s", timing), ("cpu_s", timing_cpu or {})):
        if "OverallAlgorithm" not in t:
            continue
        total = t["OverallAlgorithm"]
        evaluation = t.get("Function Evaluations", 0.0)
        linear = t.get("PDSystemSolverTotal", 0.0)
        out[f"ipopt_{suffix}"] = total
        out[f"evaluation_{suffix}"] = evaluation
        out[f"linear_algebra_{suffix}"] = linear
        out[f"solver_other_{suffix}"] = max(total - evaluation - linear, 0.0)
    return out


def FastNlp(problem, hessian: str = "exact") -> ContactImplicitNlp:
    """The problem's ContactImplicitNlp, kept in problem.cache while the program's bindings are
    the same (bounds re-read by Refresh)."""
    cache = problem.cache.setdefault("fast_nlp", {})
    signature = (hessian, _Signature(problem.prog))
    nlp = cache.get(signature)
    if nlp is None:
        nlp = ContactImplicitNlp(problem, hessian=hessian)
        cache.clear()
        cache[signature] = nlp
    nlp.Refresh()
    return nlp


def FastPathSupport(problem, hessian: str = "exact") -> tuple[bool, str]:
    """(supported, reason): whether the fast path can evaluate every binding of the problem
    (the evaluators built with `hessian` are kept in problem.cache for the solve; pass the
    config's, "limited-memory" reading as "gauss-newton" as SolveFast does)."""
    from drakebots.optimization.ipopt import IpoptAvailable

    ok, reason = IpoptAvailable()
    if not ok:
        return False, reason
    try:
        FastNlp(problem, "gauss-newton" if hessian == "limited-memory" else hessian)
    except FastPathUnsupported as error:
        return False, str(error)
    return True, ""


class FastResult:
    """The fast path's answer, read as a MathematicalProgramResult is (get_x_val, is_success,
    GetSolution, get_optimal_cost, EvalBinding, GetInfeasibleConstraintNames): pydrake does not
    let Python code build a MathematicalProgramResult that maps the program's variables."""

    def __init__(self, prog, x, success: bool, status: str, objective: float):
        self._prog = prog
        self._x = np.array(x, float)
        self._success = bool(success)
        self.status = status
        self._objective = float(objective)

    def get_x_val(self) -> np.ndarray:
        return self._x.copy()

    def is_success(self) -> bool:
        return self._success

    def get_solution_result(self):
        from pydrake.solvers import SolutionResult

        if self._success:
            return SolutionResult.kSolutionFound
        if self.status == "Maximum_Iterations_Exceeded":
            return SolutionResult.kIterationLimit
        return SolutionResult.kSolverSpecificError

    def get_optimal_cost(self) -> float:
        return self._objective

    def GetSolution(self, variables=None):
        if variables is None:
            return self.get_x_val()
        v = np.asarray(variables)
        if v.ndim == 0:
            return float(self._x[self._prog.FindDecisionVariableIndex(v.item())])
        flat = self._prog.FindDecisionVariableIndices(v.ravel())
        return self._x[flat].reshape(v.shape)

    def EvalBinding(self, binding) -> np.ndarray:
        idx = self._prog.FindDecisionVariableIndices(binding.variables())
        return np.asarray(binding.evaluator().Eval(self._x[idx]), float)

    def GetInfeasibleConstraintNames(self, prog=None, tol: float = 1e-6) -> list[str]:
        from drakebots.optimization.contact_implicit_constraints import BindingViolation

        prog = prog if prog is not None else self._prog
        return [
            b.evaluator().get_description()
            for b in prog.GetAllConstraints()
            if BindingViolation(b, self._x, prog) > tol
        ]


def SolveFast(problem, config, *, outcome_type, bound_push: float, options: dict | None = None):
    """Solves the problem's program with IPOPT on the vectorised evaluators and the Hessian of
    `config.hessian`; returns an `outcome_type` (SolveContactImplicit passes its SolveOutcome,
    and its warm-start `bound_push`: handed in, so this module does not import its caller) whose
    result holds the final point, with `outcome.profile` the time split (evaluation, linear
    algebra, the rest) and evaluation counts.

    Raises:
        FastPathUnsupported: a binding without a vectorised evaluator (named).
        RuntimeError: no IPOPT library.
    """
    from drakebots.optimization.ipopt import IpoptAvailable, SolveIpopt

    SolveOutcome, WARM_START_BOUND_PUSH = outcome_type, bound_push

    start = time.perf_counter()
    cpu_start = time.process_time()
    hessian = getattr(config, "hessian", "gauss-newton")
    if hessian not in SOLVE_HESSIANS:
        raise ValueError(f"hessian {hessian!r}: one of {', '.join(SOLVE_HESSIANS)}")
    nlp = FastNlp(problem, "gauss-newton" if hessian == "limited-memory" else hessian)
    prog = problem.prog
    x0 = np.array(prog.initial_guess(), float)
    x0[np.isnan(x0)] = 0.0
    nlp.Prepare(x0)
    setup = time.perf_counter() - start
    opts = dict(FAST_IPOPT_OPTIONS)
    opts.update(
        max_iter=int(config.major_iterations),
        tol=float(config.optimality_tolerance),
        constr_viol_tol=float(config.feasibility_tolerance),
        # As SolveContactImplicit: a point that is feasible, complementary and no longer
        # improving for 10 iterations is an answer (the dual infeasibility of these
        # complementarity problems stays high long after that).
        acceptable_tol=1e10,
        acceptable_iter=10,
        acceptable_constr_viol_tol=float(config.feasibility_tolerance),
        acceptable_dual_inf_tol=1e10,
        acceptable_compl_inf_tol=1e-3,
        acceptable_obj_change_tol=1e-4,
        # As SolveContactImplicit: warm starts sit on their bounds where complementarity holds.
        bound_push=WARM_START_BOUND_PUSH,
        bound_frac=WARM_START_BOUND_PUSH,
        slack_bound_push=WARM_START_BOUND_PUSH,
        slack_bound_frac=WARM_START_BOUND_PUSH,
    )
    if config.time_limit > 0:
        opts["max_wall_time"] = float(config.time_limit)
    opts.update(options or {})
    opts.update(config.ipopt_options)
    progress = getattr(problem.dynamics, "progress", None)

    on_iteration = getattr(problem, "on_iteration", None)

    def Intermediate(iteration, objective, inf_pr, *_):
        if progress is not None:
            progress(problem.dynamics.evaluation_counts["interval"])
        if on_iteration is not None:
            on_iteration(int(iteration), float(objective), float(inf_pr))
        return True

    with _OneThread():
        res = SolveIpopt(
            x0=x0,
            x_bounds=(nlp.x_lower, nlp.x_upper),
            g_bounds=(nlp.g_lower, nlp.g_upper),
            objective=nlp.Objective,
            gradient=nlp.Gradient,
            constraints=nlp.Constraints,
            jacobian_structure=nlp.jacobian_structure,
            jacobian=nlp.JacobianValues,
            hessian_structure=None if hessian == "limited-memory" else nlp.hessian_structure,
            hessian=nlp.HessianValues,
            options=opts,
            intermediate=Intermediate,
        )
    result = FastResult(prog, res.x, res.success, res.status_name, res.objective)
    elapsed = time.perf_counter() - start
    outcome = SolveOutcome(
        result=result,
        solver="fast",
        status=f"IPOPT {res.status_name} ({IpoptAvailable()[1].split(' (')[0]}, {hessian} Hessian)",
        success=bool(res.success),
        solve_time_s=elapsed,
        iterations=int(res.iterations),
        num_variables=prog.num_vars(),
        num_constraints=len(prog.GetAllConstraints()),
        num_constraint_rows=int(
            sum(b.evaluator().num_constraints() for b in prog.GetAllConstraints())
        ),
        log=res.log,
        cpu_time_s=time.process_time() - cpu_start,
    )
    outcome.profile = IpoptProfile(res.timing, res.timing_cpu)
    outcome.profile.update(
        setup_s=setup,
        evaluation_by_kind_s=dict(res.evaluation_s),
        evaluation_counts=dict(res.evaluation_counts),
        jacobian_nonzeros=int(len(nlp.jacobian_structure[0])),
        hessian_nonzeros=int(len(nlp.hessian_structure[0])),
    )
    return outcome
