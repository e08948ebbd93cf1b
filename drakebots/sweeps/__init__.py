"""Sweeps: many runs of one workflow over a grid or list of cases (`drakebots sweep`).

- spec.py: the sweep file (typed YAML) and its expansion into cases, each a command line checked
  by the verb's own parser;
- executor.py: running the cases on Dask distributed, resumably, into a sweep folder;
- zygote.py: the warm fork server a worker starts its cases from;
- table.py, plots.py: the results table (csv, parquet) and its figures.

This folder also holds the shipped sweep files (`*.yaml`, listed by `drakebots sweep --list`). It
sits above the family wings and below cli/: a case is a `drakebots` command line, and the command
line that parses and runs it is named here as a string (`COMMAND_MODULE`), imported when a case is
checked or run, as the robot registry names a family's module (so this layer imports no module above
it, and a script can point a sweep at another command module with the same three names).
"""

import importlib

# The module whose MakeParser(), VerbModules() and main(argv) check and run a case's command line.
COMMAND_MODULE = "drakebots.cli"


def Commands():
    """The command-line module that parses and runs the cases (COMMAND_MODULE, imported now)."""
    return importlib.import_module(COMMAND_MODULE)
