"""The package's house (issue 46, ../shared/DESIGN.md), read from the source with `ast`.

Generic foundations know no robot family; each family's wing imports foundations and never
another wing; sweeps/ sits above the wings and cli/ on top. Every import statement counts,
wherever it stands (module level, inside a function, under TYPE_CHECKING), and so does an
`importlib.import_module("drakebots....")` call with a literal name. The robot registry's table
of module names (robots/__init__.py) is data, imported only when a robot is asked for.
"""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "drakebots"

# The foundations issue 46 names, then the shared workflow plumbing (workflow.py: config, result,
# progress), the results folder it writes through (results.py) and drakebots' cache folder for
# files generated outside a results folder (cache.py), generic as well.
NAMED_FOUNDATIONS = {
    "errors",
    "config",
    "models",
    "runtime",
    "robots",
    "fem",
    "frame",
    "optimization",
    "systems",
    "analysis",
    "visualization",
}
# limits.py: the work bounds every workflow's check calls (issue 68).
FOUNDATIONS = NAMED_FOUNDATIONS | {"workflow", "results", "cache", "files", "limits"}
WINGS = {"hamr", "skinned", "gecko", "voxel"}
SWEEPS = {"sweeps"}
CLI = {"cli", "__main__"}
ROOT = {"__init__"}  # drakebots/__init__.py: the version only.

# Functions in cli/ that only declare arguments may be long; everything else is at most this.
CLI_FUNCTION_LINES = 80
ARGUMENT_DECLARATIONS = re.compile(r"^(register|_?Add\w*Arguments)$")


def ModuleName(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def IsModule(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def ImportedModules(source: str, module: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, dotted name) of every drakebots module the source imports, anywhere in it.

    `from drakebots.hamr import model` yields drakebots.hamr.model (the module it imports),
    `from drakebots.hamr.model import LEGS` drakebots.hamr.model; relative imports are resolved
    against `module` (a package's own __init__ when is_package)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:  # from drakebots import hamr; from . import plots
                submodule = f"{target}.{alias.name}"
                found.append((node.lineno, submodule if IsModule(submodule) else target))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return [(line, name) for line, name in found if name.split(".")[0] == "drakebots"]


def Layer(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def Modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def Edges():
    """(importer module, line, imported module) over the whole package."""
    for path in Modules():
        module = ModuleName(path)
        source = path.read_text()
        for line, imported in ImportedModules(
            source, module, is_package=path.name == "__init__.py"
        ):
            yield module, f"{path.relative_to(PACKAGE.parent)}:{line}", imported


def test_the_scanner_sees_every_kind_of_import():
    source = """
import drakebots.errors
from drakebots import hamr, voxel
from drakebots.fem.mesh import TetMesh
from . import plots
from ..robots import base

def Later():
    import importlib
    from drakebots.gecko.model import AddGecko
    return importlib.import_module("drakebots.skinned.skin")

if TYPE_CHECKING:
    from drakebots.optimization.tree_lagrangian import TreeLagrangian
"""
    names = [name for _, name in ImportedModules(source, "drakebots.voxel.tripod")]
    assert sorted(names) == sorted(
        [
            "drakebots.errors",
            "drakebots.hamr",
            "drakebots.voxel",
            "drakebots.fem.mesh",
            "drakebots.voxel.plots",  # from . import plots, inside drakebots.voxel
            "drakebots.robots.base",  # from ..robots import base
            "drakebots.gecko.model",
            "drakebots.skinned.skin",
            "drakebots.optimization.tree_lagrangian",
        ]
    )


def test_every_module_lives_in_a_known_layer():
    known = FOUNDATIONS | WINGS | SWEEPS | CLI | ROOT
    unknown = sorted(
        {str(p.relative_to(PACKAGE.parent)) for p in Modules() if Layer(ModuleName(p)) not in known}
    )
    assert not unknown, f"place these in the house (tests/test_layout.py): {unknown}"
    # Each wing is a package of its own, and every foundation named above exists.
    for name in WINGS | SWEEPS:
        assert (PACKAGE / name / "__init__.py").is_file(), name
    for name in NAMED_FOUNDATIONS:
        assert (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file(), name


def test_wings_import_only_foundations_and_foundations_no_wing():
    violations = []
    for module, where, imported in Edges():
        source, target = Layer(module), Layer(imported)
        if source == target:
            continue
        if source in WINGS and target in WINGS:
            violations.append(f"{where}: wing {module} imports another wing's {imported}")
        elif source in WINGS and target in SWEEPS | CLI:
            violations.append(f"{where}: wing {module} imports {imported} (a layer above it)")
        elif source in FOUNDATIONS | ROOT and target in WINGS | SWEEPS | CLI:
            violations.append(f"{where}: foundation {module} imports {imported}")
        elif source in SWEEPS and target in CLI:
            violations.append(f"{where}: {module} imports {imported} (cli/ is above sweeps/)")
    assert not violations, "\n".join(violations)


def test_no_import_cycles():
    """The module graph (every import, also those inside functions) has no circle: the two of
    issue 46 (fem.coupling <-> fem.solvers, space_time <-> space_time_nlp) stay open."""
    modules = {ModuleName(path) for path in Modules()}
    graph = {module: set() for module in modules}
    for module, _, imported in Edges():
        while imported not in modules and "." in imported:  # a name inside a module
            imported = imported.rsplit(".", 1)[0]
        if imported in modules and imported != module:
            graph[module].add(imported)
    # Depth-first search; a grey node met again closes a circle.
    state, path, circles = {}, [], []

    def Visit(module):
        state[module] = "grey"
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == "grey":
                circles.append(" -> ".join(path[path.index(imported) :] + [imported]))
            elif imported not in state:
                Visit(imported)
        path.pop()
        state[module] = "black"

    for module in sorted(modules):
        if module not in state:
            Visit(module)
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_scan_covers_the_wings():
    """Guards the test above against passing vacuously: the wings are found importing
    foundations, and cli/ is found importing the wings (also from inside functions)."""
    pairs = {(Layer(module), Layer(imported)) for module, _, imported in Edges()}
    for wing in WINGS:
        assert any(s == wing and t in FOUNDATIONS for s, t in pairs), wing
        assert ("cli", wing) in pairs, wing


def LongCliFunctions() -> list[str]:
    long = []
    for path in sorted((PACKAGE / "cli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if ARGUMENT_DECLARATIONS.match(node.name):
                continue
            lines = node.end_lineno - node.lineno + 1
            if lines > CLI_FUNCTION_LINES:
                long.append(
                    f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}: {lines}"
                )
    return long


def test_cli_functions_are_short():
    long = LongCliFunctions()
    assert not long, f"cli/ functions over {CLI_FUNCTION_LINES} lines:\n" + "\n".join(long)


def test_the_cli_is_thin():
    """Issue 46: the command line only parses, calls the workflow, saves and prints: at most
    4,000 lines in all (8.4k when the workflows lived there)."""
    lines = sum(len(p.read_text().splitlines()) for p in (PACKAGE / "cli").rglob("*.py"))
    assert lines <= 4000, lines
