"""The guide builds (Sphinx, warnings as errors) and its pages open in headless Chromium with
their headings in the DOM (issue 48)."""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from drakebots.visualization.browser import FindChromium

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def built_guide():
    """docs/ built once into a temporary folder with the command the guide names."""
    for module in ("sphinx", "myst_parser", "sphinx_gallery", "furo"):
        pytest.importorskip(module, reason=f"{module} not installed (pip install -e '.[docs]')")
    with tempfile.TemporaryDirectory(prefix="drakebots-docs-") as tmp:
        out = Path(tmp) / "html"
        command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
        command += ["-d", str(Path(tmp) / "doctrees"), str(ROOT / "docs"), str(out)]
        build = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
        yield out


def DumpDom(page: Path) -> str:
    """The DOM of a local page after Chromium ran it, as Chromium serialises it."""
    with tempfile.TemporaryDirectory(prefix="drakebots-chromium-") as profile:
        command = [
            FindChromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--dump-dom",
            f"file://{page.resolve()}",
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_index_and_an_api_page_show_their_headings(built_guide):
    index = DumpDom(built_guide / "index.html")
    assert re.search(r"<h1[^>]*>drakebots\b", index)
    assert "Getting started" in index and "API reference" in index

    api_page = built_guide / "_autosummary" / "drakebots.robots.html"
    assert api_page.is_file(), sorted(p.name for p in (built_guide / "_autosummary").iterdir())
    dom = DumpDom(api_page)
    assert re.search(r"<h1[^>]*>drakebots\.robots\b", dom)
    # The page documents the registry's functions from their docstrings (autodoc).
    assert 'id="drakebots.robots.GetRobot"' in dom
    assert "LoadRobot" in dom
