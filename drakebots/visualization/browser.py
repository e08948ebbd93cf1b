"""Rendering a local HTML page (a Meshcat replay) to PNG with headless Chromium.

Used by the browser test and by scripts/render_pictures.py. Chromium draws WebGL in software
(SwiftShader), so no GPU or display is needed; the flags keep it off the network.
"""

import shutil
import subprocess
import tempfile
from pathlib import Path


def FindChromium() -> str | None:
    """The Chromium executable, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def ScreenshotHtml(html_path, png_path, *, size=(900, 650), budget_ms: int = 10000) -> Path:
    """Renders `html_path` headless and writes a PNG screenshot; returns its path.

    Raises:
        FileNotFoundError: when Chromium is not installed.
        RuntimeError: when Chromium wrote no image.
    """
    chromium = FindChromium()
    if chromium is None:
        raise FileNotFoundError("headless Chromium not found (apt-get install chromium)")
    png_path = Path(png_path)
    with tempfile.TemporaryDirectory(prefix="drakebots-chromium-") as profile:
        command = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--use-angle=swiftshader",
            "--enable-unsafe-swiftshader",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--screenshot={png_path}",
            f"--window-size={size[0]},{size[1]}",
            f"--virtual-time-budget={budget_ms}",
            f"file://{Path(html_path).resolve()}",
        ]
        subprocess.run(command, capture_output=True, timeout=180, check=False)
    if not png_path.is_file():
        raise RuntimeError(f"Chromium wrote no screenshot of {html_path}")
    return png_path
