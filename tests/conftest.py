"""Shared test setup: a non-interactive matplotlib backend and quiet Drake logging."""

import logging
import os

import pytest

from drakebots.visualization.browser import FindChromium

os.environ.setdefault("MPLBACKEND", "Agg")
logging.getLogger("drake").setLevel(logging.WARNING)
CHROMIUM = FindChromium()


def pytest_collection_modifyitems(config, items):
    """Browser tests need Chromium: skip them where it is not installed (CI installs it). With
    DRAKEBOTS_REQUIRE_CHOLMOD set (.ci/run's CHOLMOD phase) a missing CHOLMOD is an error, not a
    skip of the tests that compare it with SuperLU."""
    if os.environ.get("DRAKEBOTS_REQUIRE_CHOLMOD"):
        from drakebots.fem.solvers import CholmodAvailable

        if not CholmodAvailable():
            raise pytest.UsageError(
                "DRAKEBOTS_REQUIRE_CHOLMOD is set but scikit-sparse (CHOLMOD) does not import"
            )
    if CHROMIUM:
        return
    skip = pytest.mark.skip(reason="headless Chromium not installed (apt-get install chromium)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def beetle_skin_coarse():
    """The beetle's whole-body skin on 16 mm voxels at 0.67 MPa (issue 5's calibrated modulus;
    6040 vertices, ~2.5 s to make), shared read-only by the tests that need a real skin."""
    from drakebots.skinned.skeleton import LoadSkeletonParams
    from drakebots.skinned.skin import MakeSkin, SkinOptions

    return MakeSkin(LoadSkeletonParams("beetle"), SkinOptions(youngs_modulus=6.7e5, voxel=0.016))


@pytest.fixture(scope="session")
def beetle_skin_pieces_coarse():
    """The beetle's skin in pieces (section 6.2: one per limb, the torso's apart), cut 5 mm clear
    of each other over the hips' range (the default), 0.67 MPa, on 12 mm voxels (13.8k
    vertices, ~12 s; on 16 mm a piece's sheets cross and every piece is remade finer),
    read-only."""
    from drakebots.skinned.skeleton import LoadSkeletonParams
    from drakebots.skinned.skin import MakeSkin, SkinOptions

    return MakeSkin(
        LoadSkeletonParams("beetle"), SkinOptions(youngs_modulus=6.7e5, voxel=0.012, pieces=True)
    )


@pytest.fixture(scope="session")
def beetle_skin_pieces_overlapping():
    """The beetle's skin in pieces as shaped, not cut clear of each other (piece_clearance 0):
    the legs pass through the torso's piece, so turning a hip makes the collision penalties act
    (13.5k vertices, ~6 s), read-only."""
    from drakebots.skinned.skeleton import LoadSkeletonParams
    from drakebots.skinned.skin import MakeSkin, SkinOptions

    return MakeSkin(
        LoadSkeletonParams("beetle"),
        SkinOptions(youngs_modulus=6.7e5, voxel=0.012, pieces=True, piece_clearance=0.0),
    )
