"""Finding the project's robot models: `package://drakebots/...` for Drake's parser.

Every model ships inside the project (models/ at the top level of the repository, installed as the
data package `drakebots._models` in a wheel), so nothing is downloaded at run time.

Example:
    >>> from pydrake.multibody.parsing import Parser
    >>> from pydrake.multibody.plant import MultibodyPlant
    >>> plant = MultibodyPlant(time_step=0.001)
    >>> parser = Parser(plant)
    >>> ConfigureParser(parser)
    >>> parser.AddModels(url="package://drakebots/beetle/beetle.sdf")
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

PACKAGE_NAME = "drakebots"
PACKAGE_PREFIX = f"package://{PACKAGE_NAME}/"


@functools.cache
def ModelsDirectory() -> Path:
    """Returns the folder that holds models/package.xml.

    A built wheel carries the models as the data package `drakebots._models`; a source checkout or
    an editable install finds them in the repository's top-level models/ folder.
    """
    spec = importlib.util.find_spec("drakebots._models")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            if (Path(location) / "package.xml").is_file():
                return Path(location)
    checkout = Path(__file__).resolve().parents[1] / "models"
    if (checkout / "package.xml").is_file():
        return checkout
    raise FileNotFoundError(
        "drakebots models not found: neither the installed data package drakebots._models nor "
        f"{checkout}/package.xml exists; reinstall drakebots"
    )


def ConfigureParser(parser) -> None:
    """Registers the `drakebots` package with a Drake Parser's package map.

    Args:
        parser: a pydrake.multibody.parsing.Parser.
    """
    package_map = parser.package_map()
    if not package_map.Contains(PACKAGE_NAME):
        package_map.Add(PACKAGE_NAME, str(ModelsDirectory()))


def FindModel(url: str) -> Path:
    """Resolves a `package://drakebots/...` URL (or a path relative to models/) to a file path.

    Raises:
        FileNotFoundError: when the file does not exist.
    """
    relative = url[len(PACKAGE_PREFIX) :] if url.startswith(PACKAGE_PREFIX) else url
    path = ModelsDirectory() / relative
    if not path.exists():
        raise FileNotFoundError(f"model file not found: {url} (looked for {path})")
    return path
