"""scripts/reproduce_hamr.py's choice of cases to track and its per-frequency summary (no solve:
the table is built from rows as its runs' summary.json files give them)."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reproduce_hamr.py"


@pytest.fixture(scope="module")
def reproduce():
    spec = importlib.util.spec_from_file_location("reproduce_hamr", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_track_picks_the_cardstock_targets_or_every_gait(reproduce):
    cases = reproduce.Cases("all")
    assert [c for c in cases if reproduce.Tracked("cardstock", c)] == [
        "gait:2@cardstock",
        "gait:10@cardstock",
    ]
    assert [c for c in cases if reproduce.Tracked("all", c)] == [c for c in cases if c != "jump"]
    assert not any(reproduce.Tracked(None, c) for c in cases)


def test_tracked_means_per_frequency_beside_the_papers(reproduce):
    rows = [
        {"case": "gait:2@teflon", "mm_per_cycle": 9.0, "tracked_mm_per_cycle": 8.0},
        {"case": "gait:2@cardstock", "mm_per_cycle": 10.0, "tracked_mm_per_cycle": 10.0},
        {"case": "gait:10@cardstock", "mm_per_cycle": 10.0},  # planned, not tracked
        {"case": "jump", "apex_height_mm": 12.0},
    ]
    text = reproduce.TrackedMeans(rows)
    lines = [line for line in text.splitlines() if line]
    # Only 2 Hz was tracked: (8 + 10) / 2 = 9.00 of (9 + 10) / 2 = 9.50, ratio 0.95; the
    # paper's closed-loop mean at 2 Hz is 9.77 mm/cycle (Sec. V-A).
    assert lines == [
        "- 2 Hz: tracked 9.00 mm/cycle over 2 surface(s) (planned 9.50, ratio 0.95); the paper's "
        "closed-loop experiments 9.77"
    ]
    assert reproduce.TrackedMeans(rows[2:]) == ""
