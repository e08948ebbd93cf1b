"""Shared test setup: a non-interactive matplotlib backend and quiet Drake logging."""

import logging
import os

import pytest

from drakebots.visualization.browser import FindChromium

os.environ.setdefault("MPLBACKEND", "Agg")
logging.getLogger("drake").setLevel(logging.WARNING)
CHROMIUM = FindChromium()


def pytest_collection_modifyitems(config, items):
    """Browser tests need Chromium: skip them where it is not installed (CI installs it)."""
    if CHROMIUM:
        return
    skip = pytest.mark.skip(reason="headless Chromium not installed (apt-get install chromium)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)
