"""Every Python snippet in README.md runs as written (issue 48), from the repository's root (the
snippets name files relative to it), each in a fresh interpreter."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_the_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    assert len(SNIPPETS) >= 4
    text = "\n".join(lines)
    assert 'pip install -e ".[test]" && python -m pytest -q' in text
    assert "pip install -e . && drakebots demo" in text


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_a_readme_snippet_runs_as_written(index, tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", SNIPPETS[index]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip(), "a snippet prints what it computed"
