"""Run the drakebots showcase end to end and print where its results are.

Each step is an ordinary drakebots command writing its own results folder under the demo folder;
index.html links every step's replay and plots. Nothing needs a network.

Examples:
  drakebots demo                      # writes runs/demo-<time>/
  drakebots demo --out runs/demo --force
  drakebots demo --list               # the steps, without running them
"""

import contextlib
import html
import json
import sys
import time
from pathlib import Path

from drakebots.cli import AddOutputArguments, AddVerb

# (folder, title, command arguments without --out). Later issues add their best showcase here.
STEPS = [
    (
        "beetle_stand",
        "Beetle skeleton holding its home pose (PD servos, SAP contact)",
        ["simulate", "beetle", "--duration", "2"],
    ),
    ("cow_stand", "Cow skeleton (DS3218 servos) standing", ["simulate", "cow", "--duration", "2"]),
    ("monster_stand", "Monster skeleton standing", ["simulate", "monster", "--duration", "2"]),
    (
        "voxel_walk",
        "Voxel tripod robot walking its POM-designed tripod gait in Drake (~3 mm per cycle)",
        ["simulate", "voxel_tripod", "--gait", "tripod", "--cycles", "2"],
    ),
    (
        "lizard_stand",
        "Lizard skeleton (spine, neck, tail) standing",
        ["simulate", "lizard", "--duration", "2"],
    ),
    (
        "beetle_skinned",
        "Beetle in its neo-Hookean FEM skin (13k vertices, 156 glue vertices), skeleton and skin "
        "coupled by Lagrange multipliers (Xu et al. Eq. 2), landing on its skin",
        ["simulate", "beetle", "--skin", "generate", "--duration", "0.05"],
    ),
    (
        "gecko_course",
        "Gecko soft walker: the gait pattern generator walks the Drake model (suction welds, "
        "pneumatic cascade) to two targets of the paper's course",
        ["gecko", "navigate", "--targets", "0.4,0.1; 0.6,-0.3", "--no-progress"],
    ),
    (
        "hamr_trot",
        "HAMR-VI microrobot: open-loop 10 Hz piezo trot on cardstock, 24 loops closed in SAP",
        ["simulate", "hamr_vi", "--gait", "trot", "--frequency", "10", "--duration", "0.3"],
    ),
    (
        "hamr_jump_plan",
        "HAMR-VI: a vertical jump planned by variational contact-implicit optimization "
        "(coarse 11-knot transcription, IPOPT): crouch, push, fly",
        [
            "optimize",
            "hamr-jump",
            "--height",
            "12",
            "--knots",
            "11",
            "--solver",
            "ipopt",
            "--iterations",
            "300",
            "--quiet",
        ],
    ),
    (
        "beetle_lift_design",
        "Beetle single-foot lift designed by the alternating space-time optimization and "
        "per-frame QPCC (Xu et al. Fig. 2, Fig. 10a): every motor within 1.96 N·m, COP inside",
        ["design", "beetle", "--motion", "single-foot-lift", "--no-progress"],
    ),
]


def register(subparsers):
    parser = AddVerb(subparsers, "demo", __doc__)
    parser.add_argument("--list", action="store_true", help="print the steps and exit")
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def Run(args) -> int:
    from drakebots.cli import main
    from drakebots.results import DefaultOutput, ResultsFolder, ToJson

    if args.list:
        for folder, title, command in STEPS:
            print(f"{folder:<16} drakebots {' '.join(command)}\n{'':<16} {title}")
        return 0
    out = Path(args.out) if args.out else DefaultOutput("demo")
    rows = []
    with ResultsFolder(out, force=args.force) as results:
        for index, (folder, title, command) in enumerate(STEPS, start=1):
            print(
                f"[{index}/{len(STEPS)}] {title}\n      drakebots {' '.join(command)}\n"
                f"      -> {results.final / folder}",
                flush=True,
            )
            start = time.perf_counter()
            # A step prints its results folder, which is inside the demo's temporary folder
            # until the demo ends: its output shows the final path instead.
            with _ShowFinalPaths(results.directory, results.final):
                code = main(command + ["--out", str(results.directory / folder)])
            if code == 130:  # the step was interrupted: so is the demo (its folder removed)
                raise KeyboardInterrupt
            rows.append(
                {
                    "step": folder,
                    "title": title,
                    "command": "drakebots " + " ".join(command),
                    "exit_code": code,
                    "seconds": round(time.perf_counter() - start, 2),
                }
            )
        results.WriteText("index.html", _IndexHtml(rows, results.directory))
        results.WriteJson(
            "summary.json",
            {"verb": "demo", "steps": rows, "success": all(r["exit_code"] == 0 for r in rows)},
        )
        results.Commit()
    print(f"\ndemo results: {results.final.resolve()}")
    print(f"open {results.final.resolve() / 'index.html'} in a browser")
    for row in rows:
        status = "ok" if row["exit_code"] == 0 else f"exit {row['exit_code']}"
        print(
            f"  {row['step']:<16} {status:<8} {row['seconds']:>7.1f} s  "
            f"{results.final / row['step']}"
        )
    _ = ToJson  # summary written above
    return 0 if all(r["exit_code"] == 0 for r in rows) else 1


class _Rewriting:
    """A text stream that writes to `stream` with one path replaced by another."""

    def __init__(self, stream, replacements):
        self._stream = stream
        self._replacements = replacements

    def write(self, text):
        for old, new in self._replacements:
            text = text.replace(old, new)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def _ShowFinalPaths(temporary: Path, final: Path):
    """stdout and stderr with `temporary` (as given and resolved) shown as `final`."""
    replacements = [(str(temporary.resolve()), str(final.resolve())), (str(temporary), str(final))]
    with (
        contextlib.redirect_stdout(_Rewriting(sys.stdout, replacements)),
        contextlib.redirect_stderr(_Rewriting(sys.stderr, replacements)),
    ):
        yield


def _IndexHtml(rows, directory: Path) -> str:
    """A plain page linking every step's replay, plots and summary."""
    parts = [
        "<!doctype html><meta charset='utf-8'><title>drakebots demo</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "img{max-width:540px;border:1px solid #ccc;margin:4px}"
        "td,th{padding:2px 8px;white-space:nowrap}td:first-child{white-space:normal}</style>",
        "<h1>drakebots demo</h1>",
        "<table><tr><th align=left>step</th><th>result</th><th align=right>time</th><th></th></tr>",
    ]
    for row in rows:
        step = row["step"]
        status = "ok" if row["exit_code"] == 0 else f"exit {row['exit_code']}"
        parts.append(
            f"<tr><td><a href='#{step}'>{html.escape(row['title'])}</a></td>"
            f"<td align=center>{status}</td><td align=right>{row['seconds']:.1f} s</td>"
            f"<td><a href='{step}/replay.html'>replay</a></td></tr>"
        )
    parts.append("</table>")
    for row in rows:
        step = row["step"]
        parts.append(f"<h2 id='{step}'>{html.escape(row['title'])}</h2>")
        parts.append(
            f"<p><code>{html.escape(row['command'])}</code> &mdash; exit "
            f"{row['exit_code']}, {row['seconds']} s &mdash; "
            f"<a href='{step}/replay.html'>replay</a> &middot; "
            f"<a href='{step}/summary.json'>summary.json</a></p>"
        )
        for image in sorted((directory / step).glob("*.png")):
            parts.append(f"<img src='{step}/{image.name}' alt='{image.stem}'>")
        summary_path = directory / step / "summary.json"
        if summary_path.is_file():
            figures = json.loads(summary_path.read_text()).get("figures", {})
            keys = [k for k, v in figures.items() if isinstance(v, (int, float))][:12]
            parts.append(
                "<table>"
                + "".join(
                    f"<tr><td>{html.escape(k)}</td><td>{figures[k]:.6g}</td></tr>"
                    if not isinstance(figures[k], bool)
                    else f"<tr><td>{html.escape(k)}</td><td>{figures[k]}</td></tr>"
                    for k in keys
                )
                + "</table>"
            )
    return "\n".join(parts)
