"""Support polygons and centres of pressure on flat ground (NumPy only).

The paper's COP constraint (skinned-quad-robots.txt, Eq. 5, and Eq. 12) keeps the centre of
pressure inside "the convex hull of the vertices that represent the sole meshes of the
end-effectors in contact". `SupportPolygon` is that hull in the ground plane, with its edges as
half-spaces A p <= b (the rows of the paper's P), and the signed margin of a point (positive
inside, in m).
"""

from __future__ import annotations

import numpy as np


def _ConvexHull2d(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise hull vertices of 2-D points (Andrew's monotone chain)."""
    pts = np.unique(np.round(np.asarray(points, float), 12), axis=0)
    if len(pts) <= 2:
        return pts
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 1e-15:
            lower.pop()
        lower.append(p)
    for p in pts[::-1]:
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 1e-15:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


class SupportPolygon:
    """The convex hull of ground contact points (x, y), m.

    Args:
        points: (n, 2) or (n, 3) contact points; z is ignored.
    """

    def __init__(self, points):
        points = np.asarray(points, float)
        self.vertices = _ConvexHull2d(points[:, :2])

    def HalfSpaces(self, margin: float = 0.0):
        """(A, b) with A p <= b - margin inside; rows are unit outward edge normals."""
        V = self.vertices
        if len(V) < 3:
            raise ValueError("a support polygon needs at least three non-collinear points")
        edges = np.roll(V, -1, axis=0) - V
        normals = np.column_stack([edges[:, 1], -edges[:, 0]])
        normals /= np.linalg.norm(normals, axis=1, keepdims=True)
        b = np.einsum("ij,ij->i", normals, V)
        return normals, b - margin

    def Margin(self, point) -> float:
        """Signed distance from a point (x, y) to the polygon's boundary: > 0 inside, m."""
        A, b = self.HalfSpaces()
        return float(np.min(b - A @ np.asarray(point, float)[:2]))


def CenterOfPressure(points, forces) -> np.ndarray | None:
    """COP (x, y) of ground forces at points on z = 0: Σ p_k F_z,k / Σ F_z,k (None if no load)."""
    points = np.asarray(points, float).reshape(-1, 3)
    forces = np.asarray(forces, float).reshape(-1, 3)
    fz = forces[:, 2].sum()
    if fz <= 1e-9:
        return None
    return (points[:, :2] * forces[:, 2:3]).sum(axis=0) / fz


def CopFromWrench(moment_about_origin, force) -> np.ndarray | None:
    """COP (x, y) on z = 0 of a ground wrench given about the world origin (None if F_z <= 0)."""
    M, F = np.asarray(moment_about_origin, float), np.asarray(force, float)
    if F[2] <= 1e-9:
        return None
    return np.array([-M[1] / F[2], M[0] / F[2]])
