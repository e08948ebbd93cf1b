"""scripts/reproduce.py cannot rot: every row of the four reproduction reports maps to a row of
the script and back, every command it or the reports quote parses, the reports name every
numbered figure and table of their papers, and the voxel paper's fast table runs from fresh runs.
Also the HAMR-VI --full table's choice of cases to track and its per-frequency summary (no solve:
the table is built from rows as its runs' summary.json files give them)."""

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "reproduce.py"
PAPERS_DIR = ROOT.parent / "shared" / "papers"
PAPER_TEXT = {
    "hamr": ["hamr-contact-implicit.txt"],
    "skinned": ["skinned-quad-robots.txt", "skinned-quad-robots-print.txt"],
    "gecko": ["gecko-gait-pattern-generator.txt"],
    "voxel": ["voxel-planes-of-motion.txt"],
}

# The numbered figures and tables each paper has (read from its text in ../shared/papers, which a
# clone does not carry: the test below re-reads them when the text is there, and CI checks the
# reports against these).
PAPER_ITEMS = {
    "hamr": {"Fig.": range(1, 10), "Table": ()},
    "skinned": {"Fig.": range(1, 21), "Table": (1,)},
    "gecko": {"Fig.": range(1, 13), "Table": (1, 2, 3)},
    "voxel": {"Fig.": range(1, 8), "Table": ()},
}


@pytest.fixture(scope="module")
def reproduce():
    spec = importlib.util.spec_from_file_location("reproduce", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["reproduce"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("paper", ["hamr", "skinned", "gecko", "voxel"])
def test_every_report_row_maps_and_every_command_parses(reproduce, paper):
    assert reproduce.Check(paper) == []
    rows = reproduce.ReportRows(paper)
    assert sorted(rows) == list(range(1, len(rows) + 1))  # numbered 1..N without a gap
    assert all(r["paper"] and r["ours"] and r["comparison"] for r in rows.values())


def test_a_wrong_command_or_a_missing_row_is_caught(reproduce, monkeypatch):
    assert reproduce.CheckCommand("drakebots voxel fem --lattice 2x2x1") is None
    assert "does not parse" in reproduce.CheckCommand("drakebots voxel fem --no-such-flag")
    assert "no such script" in reproduce.CheckCommand("python scripts/no_such.py")
    assert "no such test" in reproduce.CheckCommand("tests/cli/test_reproduce.py::test_nothing")
    monkeypatch.setitem(reproduce.ROWS, "voxel", reproduce.ROWS["voxel"][:-1])
    assert reproduce.Check("voxel") == ["voxel report row 8 has no row in scripts/reproduce.py"]


@pytest.mark.parametrize("paper", ["hamr", "skinned", "gecko", "voxel"])
def test_each_report_names_every_numbered_figure_and_table_of_its_paper(reproduce, paper):
    named = {(kind, n) for kind, numbers in PAPER_ITEMS[paper].items() for n in numbers}
    texts = [PAPERS_DIR / name for name in PAPER_TEXT[paper]]
    if all(t.is_file() for t in texts):  # beside the papers: the list above is theirs
        found = set()
        for text in texts:
            for kind, number in re.findall(
                r"\b(fig|figure|table)\.? ?(\d+)", text.read_text(), re.I
            ):
                found.add(("Table" if kind.lower() == "table" else "Fig.", int(number)))
        assert found == named
    report = (ROOT / "docs" / "reproductions" / f"{paper}.md").read_text()
    listed = set()
    numbered = r"(Figs?\.|Table)\s*((?:\d+[a-z]?(?:/[A-Z])?(?:,? and |, | )?)+)"
    for kind, numbers in re.findall(numbered, report):
        for number in re.findall(r"\d+", numbers):
            listed.add(("Table" if kind == "Table" else "Fig.", int(number)))
    assert named - listed == set()


def test_voxel_fast_table_comes_from_fresh_runs(reproduce, tmp_path):
    """The voxel paper's fast setting end to end but for row 7 (the Drake walk, 40 s more): every
    row fresh, the table and the JSON written, and the numbers are the workflows' (Fig. 1's 2x2x1
    loss is below the paper's 4.9 %, the 8x8x1 loss above it)."""
    rows = [1, 2, 3, 4, 5, 6, 8]
    argv = ["--paper", "voxel", "--rows", ",".join(map(str, rows)), "--out", str(tmp_path)]
    assert reproduce.main(argv) == 0
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [r["row"] for r in saved["rows"]] == rows
    assert all(r["source"] == "fresh (fast)" for r in saved["rows"])
    losses = dict(re.findall(r"(\d+x\d+x\d+) ([\d.]+) %", saved["rows"][1]["ours"]))
    assert float(losses["2x2x1"]) < 4.9 < float(losses["8x8x1"])
    assert "| 8 |" in (tmp_path / "results.md").read_text()
    assert not any(name.startswith("Simulate") for name in saved["run_seconds"])


def test_report_rows_print_the_reports_value_labelled(reproduce, tmp_path):
    """A row with nothing to run (HAMR-VI row 14, a hardware experiment) prints the report's
    value, labelled as the report's, without running anything."""
    runs = reproduce.Runs(tmp_path)
    (record,) = reproduce.Measure("hamr", runs, full=False, only={14})
    assert record["source"] == "report" and record["ours"].startswith("No executed jump")
    assert runs.seconds == {}


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
