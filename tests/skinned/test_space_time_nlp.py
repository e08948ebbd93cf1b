"""The vectorised space-time NLP's own derivatives (issue 6, section 5.1).

References: finite differences of the constraint Jacobians that `SpaceTimeNlp.Evaluate` returns
(themselves checked against the MathematicalProgram's bindings and finite differences of the
values in test_design.py), and Drake's per-point kinematics (`SkeletonModel`).
"""

import numpy as np
import pytest

from drakebots.skinned import motions
from drakebots.skinned.motion import SampleMotion
from drakebots.skinned.skeleton_model import SkeletonModel
from drakebots.skinned.space_time import InitialGuess, MakeSpaceTimeProgram, SpaceTimeConfig
from drakebots.skinned.space_time_nlp import SpaceTimeNlp

# The rows whose q-q curvature `Curvature` adds (kinematic in q; forces held).
_KINEMATIC = (
    "contact_height[",
    "contact_still[",
    "clearance[",
    "sole_moment[",
    "sole_law[",
    "cop[",
)


@pytest.fixture(scope="module", params=["dynamic", "kinematic"])
def walk(request):
    """A beetle walk's NLP near its initial guess: the dynamic program (soft soles, forces) and
    the kinematic one (COP from the COM: the curvature's centre-of-mass term)."""
    beetle = SkeletonModel("beetle")
    motion = SampleMotion(motions.Walk(beetle, speed=0.04, period=2.0))
    config = SpaceTimeConfig(knot_frames=40, dynamics=request.param == "dynamic")
    problem = MakeSpaceTimeProgram(beetle, motion, config)
    nlp = SpaceTimeNlp(problem)
    rng = np.random.default_rng(1)
    x = InitialGuess(beetle, problem) + rng.normal(scale=0.01, size=nlp.num_vars)
    return beetle, nlp, x, rng


def _Multipliers(nlp, names, size, rng):
    lam = np.zeros(size)
    for name, a, b in names:
        if name.startswith(_KINEMATIC):
            lam[a:b] = rng.normal(size=b - a)
    return lam


def test_curvature_is_the_lagrangian_hessian_of_the_kinematic_rows(walk):
    """Each knot's block of `Curvature` is the PSD part of ∂²(Σ λ c)/∂q_k² over the contact,
    clearance, sole and COP rows, here by central differences of Evaluate's exact Jacobians."""
    beetle, nlp, x, rng = walk
    ev = nlp.Evaluate(x, True)
    lam_eq = _Multipliers(nlp, nlp.eq_names, len(ev.c_eq), rng)
    lam_in = np.abs(_Multipliers(nlp, nlp.in_names, len(ev.c_in), rng))
    assert np.count_nonzero(lam_eq) > 50 and np.count_nonzero(lam_in) > 20
    C = nlp.Curvature(x, lam_eq, lam_in).toarray()

    def gradient(xx, k):
        e = nlp.Evaluate(xx, True)
        return (e.A_eq.T @ lam_eq + e.A_in.T @ lam_in)[nlp.iq[k]]

    checked = 0
    for k in (0, nlp.K // 2, nlp.K - 1):
        idx = nlp.iq[k]
        H = np.zeros((len(idx), len(idx)))
        for i, col in enumerate(idx):
            d = np.zeros_like(x)
            d[col] = 1e-5
            H[:, i] = (gradient(x + d, k) - gradient(x - d, k)) / 2e-5
        H = 0.5 * (H + H.T)
        w, V = np.linalg.eigh(H)
        expected = (V * np.maximum(w, 0.0)) @ V.T
        block = C[np.ix_(idx, idx)]
        assert np.abs(expected).max() > 1e-3  # the rows are curved here
        # Curvature takes forward differences (step 1e-6): agreement to 1e-3 of the block's scale.
        np.testing.assert_allclose(block, expected, atol=1e-3 * np.abs(expected).max())
        checked += 1
    assert checked == 3
    # Nothing outside the q blocks of the knots.
    mask = np.zeros_like(C, dtype=bool)
    for k in range(nlp.K):
        mask[np.ix_(nlp.iq[k], nlp.iq[k])] = True
    assert not np.any(C[~mask])


def test_batched_knot_kinematics_equal_drakes_per_point_kinematics(walk):
    """`_Kinematics` (one Drake call per foot over its five sole points) against SkeletonModel's
    per-quantity functions, and its smooth lowest corner against SkeletonModel.SoleLowest."""
    from drakebots.skinned.space_time_nlp import _SoleLowest

    beetle, nlp, x, _ = walk
    q = x[nlp.iq[1]]
    com, Jc, p, Jp, n, Jn, pts, J = nlp._Kinematics(q, True)
    ref = beetle.Kinematics(q)
    for ours, theirs in zip((com, Jc, p, Jp, n, Jn), ref):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    for j in range(4):
        corners, Jcorners = beetle.FootPoints(q, j, beetle.sole_corners[j])
        np.testing.assert_allclose(pts[j, :4], corners, atol=1e-12)
        np.testing.assert_allclose(J[j, :4], Jcorners, atol=1e-12)
        h, dh = _SoleLowest(pts[j, :4, 2], J[j, :4, 2])
        h_ref, dh_ref = beetle.SoleLowest(q, j)
        assert h == pytest.approx(h_ref, abs=1e-14)
        np.testing.assert_allclose(dh, dh_ref, atol=1e-12)
    # Without Jacobians: the same values.
    values = nlp._Kinematics(q, False)
    np.testing.assert_allclose(values[0], com, atol=1e-14)
    np.testing.assert_allclose(values[6], pts, atol=1e-14)
    np.testing.assert_allclose(values[4], n, atol=1e-14)


def test_jacobians_built_on_the_cached_sparsity_equal_a_fresh_build(walk):
    """The second and later Jacobian evaluations reuse the first one's CSR structure; they must
    equal a build from the triplets (a fresh NLP) exactly, duplicates summed."""
    beetle, nlp, x, rng = walk
    nlp.Evaluate(x, True)
    assert all(p is not None for p in nlp._patterns)
    y = x + rng.normal(scale=0.01, size=len(x))
    cached = nlp.Evaluate(y, True)
    fresh = SpaceTimeNlp(nlp.problem).Evaluate(y, True)
    for a, b in ((cached.J_r, fresh.J_r), (cached.A_eq, fresh.A_eq), (cached.A_in, fresh.A_in)):
        assert a.shape == b.shape
        assert abs(a - b).max() <= 1e-14 * max(1.0, abs(b).max())
    # A changed block structure falls back to a full build.
    nlp._patterns = tuple(
        None if p is None else type(p)(np.zeros(1, int), np.zeros(1, int), 1, 1)
        for p in nlp._patterns
    )
    again = nlp.Evaluate(y, True)
    assert abs(again.A_eq - fresh.A_eq).max() <= 1e-14 * max(1.0, abs(fresh.A_eq).max())
