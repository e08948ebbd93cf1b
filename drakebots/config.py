"""Typed configuration: dataclass schemas loaded with Drake's `yaml_load_typed`.

`LoadTypedYaml` wraps `pydrake.common.yaml.yaml_load_typed` so that every mistake in a user's
file (an unknown key, a value of the wrong type) becomes an `InputError` whose message names the
key path and the file, which the command line turns into exit status 2.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from pydrake.common.yaml import yaml_dump_typed, yaml_load_typed

from drakebots.errors import InputError

T = TypeVar("T")


def _Unwrap(field_type):
    """(kind, inner) of a field type: ("dataclass", cls), ("dict", value_type),
    ("list", element_type) or ("leaf", None). Optional[X] is unwrapped to X."""
    if dataclasses.is_dataclass(field_type):
        return "dataclass", field_type
    origin = typing.get_origin(field_type)
    args = typing.get_args(field_type)
    if origin in (dict, typing.Dict) and len(args) == 2:  # noqa: UP006
        return "dict", args[1]
    if origin in (list, tuple, typing.List) and args:  # noqa: UP006
        return "list", args[0]
    if origin is typing.Union or origin is types.UnionType:
        others = [a for a in args if a is not type(None)]
        if len(others) == 1:
            return _Unwrap(others[0])
    return "leaf", None


def _Children(field_type, value, path):
    """(child_type, child_value, child_path) for the dataclasses nested in a field's value."""
    kind, inner = _Unwrap(field_type)
    if kind == "dataclass" and isinstance(value, dict):
        yield inner, value, path
    elif kind == "dict" and isinstance(value, dict):
        for key, item in value.items():
            yield from _Children(inner, item, f"{path}.{key}")
    elif kind == "list" and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _Children(inner, item, f"{path}[{index}]")


def _check_keys(schema: type, data: Any, where: str, source: str) -> None:
    """Raises InputError for keys that `schema` does not have, recursing into nested dataclasses
    (also inside dicts and lists of dataclasses)."""
    if not isinstance(data, dict):
        raise InputError(f"{source}: {where or 'the top level'} must be a mapping, got {data!r}")
    hints = typing.get_type_hints(schema)
    names = {f.name for f in dataclasses.fields(schema)}
    for key, value in data.items():
        path = f"{where}.{key}" if where else str(key)
        if key not in names:
            raise InputError(
                f"{source}: unknown key '{path}' (known keys here: {', '.join(sorted(names))})"
            )
        for child_schema, child_value, child_path in _Children(hints[key], value, path):
            _check_keys(child_schema, child_value, child_path, source)


def _find_bad_value(schema: type, data: dict, where: str, source: str) -> str:
    """Locates the key whose value does not convert, by loading the fields one at a time."""
    hints = typing.get_type_hints(schema)
    for key, value in data.items():
        path = f"{where}.{key}" if where else str(key)
        children = list(_Children(hints[key], value, path))
        for child_schema, child_value, child_path in children:
            inner = _find_bad_value(child_schema, child_value, child_path, source)
            if inner:
                return inner
        try:
            yaml_load_typed(schema=schema, data=yaml_dump_typed_dict({key: value}), defaults=None)
        except Exception as e:  # noqa: BLE001 - any conversion failure is the user's value.
            return f"{source}: key '{path}' has a bad value {value!r} ({e})"
    return ""


def yaml_dump_typed_dict(data: dict) -> str:
    """A YAML text for a plain dict (used to re-check single keys)."""
    import yaml

    return yaml.safe_dump(data)


def _ResolveAnnotations(schema: type, seen: set | None = None) -> None:
    """Replaces string annotations (modules with `from __future__ import annotations`) by the
    types they name, in `schema` and the dataclasses nested in it: yaml_load_typed reads
    `field.type` as it stands and would take the string "float" for a nested schema."""
    seen = set() if seen is None else seen
    if not dataclasses.is_dataclass(schema) or schema in seen:
        return
    seen.add(schema)
    hints = typing.get_type_hints(schema)
    for field in dataclasses.fields(schema):
        if isinstance(field.type, str):
            field.type = hints[field.name]
        stack = [field.type]
        while stack:
            kind, inner = _Unwrap(stack.pop())
            if kind == "dataclass":
                _ResolveAnnotations(inner, seen)
            elif kind in ("dict", "list"):
                stack.append(inner)


# Limits on a YAML file the package reads (issue 50: a 1 KB file of nested aliases grew a process
# to 2.8 GB), its size and its values once every alias is expanded, are drakebots.limits' bounds
# "yaml_bytes" and "yaml_values".


def _SafeLoader():
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader (no Python tags) that refuses duplicate keys."""

        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:
                    duplicate = False
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key) if not isinstance(key, (list, dict)) else None
            return super().construct_mapping(node, deep=deep)

    return Loader


def _ExpandedSize(node, memo: dict, most: float) -> int:
    """How many nodes the document has once every alias is expanded (aliases share node objects,
    so this counts a shared subtree each time it is used, without expanding it), counting stops
    above `most`."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a recursive alias counts once (and is refused by the constructor)
    if isinstance(node.value, list):
        total = 1
        for item in node.value:
            if isinstance(item, tuple):
                total += _ExpandedSize(item[0], memo, most) + _ExpandedSize(item[1], memo, most)
            else:
                total += _ExpandedSize(item, memo, most)
            if total > most:
                break
        memo[key] = total
    return memo[key]


def ReadYaml(filename: str | Path | None = None, *, data: str | None = None, source=None):
    """The one way the package reads a YAML file: PyYAML's safe loader (no Python tags), no
    duplicate keys, within drakebots.limits' "yaml_bytes" and "yaml_values" (aliases expanded).
    Every mistake is an InputError naming the file (or `source`).

    Returns:
        the document's data (None for an empty document).
    """
    import yaml

    from drakebots.limits import Limit

    source = str(source or filename or "<yaml text>")
    most_bytes, most_values = Limit("yaml_bytes"), Limit("yaml_values")
    too_big = (
        f"{source}: larger than {most_bytes:.0f} bytes, not read (set DRAKEBOTS_MAX_YAML_BYTES "
        "to allow more)"
    )
    if filename is not None:
        path = Path(filename)
        if not path.is_file():
            raise InputError(f"{source}: file not found")
        if path.stat().st_size > most_bytes:
            raise InputError(too_big)
        try:
            data = path.read_text()
        except UnicodeDecodeError:
            raise InputError(f"{source}: not a text file") from None
        except OSError as e:
            raise InputError(f"{source}: cannot be read ({e.strerror})") from None
    elif data is not None and len(data) > most_bytes:
        raise InputError(too_big)
    Loader = _SafeLoader()
    try:
        loader = Loader(data or "")
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if _ExpandedSize(node, {}, most_values) > most_values:
                raise InputError(
                    f"{source}: more than {most_values:.0f} values once its aliases are expanded "
                    "(set DRAKEBOTS_MAX_YAML_VALUES to allow more)"
                )
            document = loader.construct_document(node)
            _CheckNumbers(document, "", source, limits=False)
            return document
        finally:
            loader.dispose()
    except InputError:
        raise
    except yaml.YAMLError as e:
        raise InputError(f"{source}: not valid YAML ({' '.join(str(e).split())})") from None
    except ValueError as e:
        # An integer of more than 4300 digits (Python's int-from-text limit) raised out of the
        # YAML constructor as a traceback.
        raise InputError(f"{source}: a value it cannot read ({' '.join(str(e).split())})") from None
    except RecursionError:
        raise InputError(f"{source}: nested too deeply") from None


def LoadTypedYaml(
    schema: type[T],
    *,
    filename: str | Path | None = None,
    data: str | None = None,
    child_name: str | None = None,
    defaults: T | None = None,
    source: str | None = None,
) -> T:
    """Loads a typed config, raising InputError that names the key and the file on any mistake.

    Args:
        schema: the dataclass type.
        filename: a YAML file (exactly one of filename and data).
        data: YAML text.
        child_name: load only this top-level key (one file may hold several named scenarios).
        defaults: a default instance; keys absent from the YAML keep these values.
        source: the name messages give the input (default: the file's name).
    """
    source = str(source or (filename if filename is not None else "<yaml text>"))
    raw = ReadYaml(filename, data=data, source=source)
    if raw is None:
        raw = {}
    if child_name is not None:
        if not isinstance(raw, dict) or child_name not in raw:
            known = ", ".join(sorted(map(str, raw))) if isinstance(raw, dict) else "none"
            raise InputError(f"{source}: no entry named '{child_name}' (entries: {known})")
        raw = raw[child_name]
        if raw is None:
            raw = {}
    _check_keys(schema, raw, "", source)
    _ResolveAnnotations(schema)
    text = yaml_dump_typed_dict(raw)
    try:
        config = yaml_load_typed(
            schema=schema, data=text, defaults=defaults if defaults is not None else schema()
        )
    except Exception as e:  # noqa: BLE001
        message = _find_bad_value(schema, raw, "", source)
        raise InputError(message or f"{source}: {e}") from None
    # The values as loaded, not as written: YAML 1.1 reads `1e9` (no dot) as a string, which the
    # typed loader then converts to the float field's 1e9 (issue 68).
    _CheckNumbers(_AsLoaded(raw, config), "", source)
    return config


def _AsLoaded(raw, loaded):
    """`raw`'s keys (what the file set) with the values of `loaded` (the typed config, or a
    part of it) where they can be followed."""
    if isinstance(raw, dict):
        out = {}
        for key, value in raw.items():
            if dataclasses.is_dataclass(loaded) and hasattr(loaded, str(key)):
                out[key] = _AsLoaded(value, getattr(loaded, str(key)))
            elif isinstance(loaded, dict) and key in loaded:
                out[key] = _AsLoaded(value, loaded[key])
            else:
                out[key] = value
        return out
    if isinstance(raw, list) and isinstance(loaded, (list, tuple)) and len(raw) == len(loaded):
        return [_AsLoaded(r, item) for r, item in zip(raw, loaded, strict=True)]
    if isinstance(loaded, (int, float)) and not isinstance(loaded, bool):
        return loaded
    return raw


# Keys of a step or a sampling period whose positive value may not be below this: the command
# line's floors (drakebots.cli.WORK_FLOORS), here in the key's own unit, s or (HAMR-VI's
# simulation and tracking) ms, where it is the stricter of the two.
YAML_WORK_FLOORS = {
    "time_step": 1e-6,
    "log_period": 1e-6,
}


def _CheckNumbers(data, where: str, source: str, *, limits: bool = True) -> None:
    """InputError naming the key and the file for a NaN or infinite number anywhere in a file's
    values (YAML's .nan, .inf: ReadYaml refuses them in every file the package reads), or, with
    `limits` (a typed config), a count above its bound (drakebots.limits.KEY_BOUNDS) or a positive
    step below
    YAML_WORK_FLOORS."""
    if isinstance(data, dict):
        for key, value in data.items():
            path = f"{where}.{key}" if where else str(key)
            _CheckNumbers(value, path, source, limits=limits)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _CheckNumbers(value, f"{where}[{index}]", source, limits=limits)
    elif isinstance(data, float) and not math.isfinite(data):
        raise InputError(
            f"{source}: key '{where or '(the document)'}' is {data}: must be a finite number"
        )
    elif isinstance(data, float) and 0.0 < abs(data) < sys.float_info.min:
        raise InputError(
            f"{source}: key '{where or '(the document)'}' is {data}: below "
            f"{sys.float_info.min:.3g} in magnitude (subnormal): give 0 or a normal number"
        )
    elif limits and isinstance(data, (int, float)) and not isinstance(data, bool):
        from drakebots.limits import BOUNDS, KEY_BOUNDS, Limit

        name = where.rsplit(".", 1)[-1]
        bound = KEY_BOUNDS.get(name)
        if bound is not None and data > Limit(bound):
            raise InputError(
                f"{source}: key '{where}' {data} is above the bound of {Limit(bound):g} "
                f"{BOUNDS[bound].unit} (set DRAKEBOTS_MAX_{bound.upper()} to allow more)"
            )
        floor = YAML_WORK_FLOORS.get(name)
        if floor is not None and 0 < data < floor:
            raise InputError(
                f"{source}: key '{where}' {data} is below {floor:g}, the finest step one run may "
                "take"
            )


def DumpTypedYaml(config: Any) -> str:
    """The YAML text of a config dataclass (what summary.json's inputs mirror)."""
    return yaml_dump_typed(config)


def AsDict(config: Any) -> dict:
    """A JSON-ready dict of a config dataclass."""
    return dataclasses.asdict(config)


def _TypeName(field_type) -> str:
    if isinstance(field_type, type):
        return field_type.__name__
    return str(field_type).replace("typing.", "")


def _Matches(field_type, value, path: str) -> str | None:
    """None when `value` is of `field_type`, else the message naming `path` (recursing into
    dataclasses, lists, tuples and dicts)."""
    if field_type is Any or field_type is typing.Any:
        return None
    origin = typing.get_origin(field_type)
    args = typing.get_args(field_type)
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        messages = [_Matches(a, value, path) for a in args if a is not type(None)]
        if any(m is None for m in messages):
            return None
        return messages[0] if len(messages) == 1 else _Wrong(field_type, value, path)
    if origin is typing.Literal:
        return None if value in args else _Wrong(field_type, value, path)
    if dataclasses.is_dataclass(field_type):
        if not isinstance(value, field_type):
            return _Wrong(field_type, value, path)
        return _FieldsMessage(value, path)
    if origin in (list, typing.List):  # noqa: UP006
        if not isinstance(value, list):
            return _Wrong(field_type, value, path)
        for index, item in enumerate(value):
            if args and (message := _Matches(args[0], item, f"{path}[{index}]")):
                return message
        return None
    if origin in (tuple, typing.Tuple):  # noqa: UP006
        if not isinstance(value, (tuple, list)):
            return _Wrong(field_type, value, path)
        if len(args) == 2 and args[1] is Ellipsis:
            items = [(args[0], item) for item in value]
        elif args:
            if len(args) != len(value):
                return f"{path}: expected {len(args)} values, got {len(value)}"
            items = list(zip(args, value, strict=True))
        else:
            items = []
        for index, (item_type, item) in enumerate(items):
            if message := _Matches(item_type, item, f"{path}[{index}]"):
                return message
        return None
    if origin in (dict, typing.Dict):  # noqa: UP006
        if not isinstance(value, dict):
            return _Wrong(field_type, value, path)
        for key, item in value.items():
            if args and (message := _Matches(args[0], key, f"{path} key {key!r}")):
                return message
            if args and (message := _Matches(args[1], item, f"{path}[{key!r}]")):
                return message
        return None
    if field_type is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and not math.isfinite(value):
            return f"{path} is {value}: must be a finite number"
        if ok and 0.0 < abs(value) < sys.float_info.min:
            return f"{path} is {value}: subnormal, give 0 or a normal number"
        return None if ok else _Wrong(field_type, value, path)
    if field_type is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else _Wrong(field_type, value, path)
    if field_type is bool:
        return None if isinstance(value, bool) else _Wrong(field_type, value, path)
    if isinstance(field_type, type):
        return None if isinstance(value, field_type) else _Wrong(field_type, value, path)
    return None  # A type this walker does not know (a TypeVar, a callable): not judged.


def _Wrong(field_type, value, path: str) -> str:
    return f"{path}: expected {_TypeName(field_type)}, got {type(value).__name__} {value!r:.60}"


def _FieldsMessage(config, where: str) -> str | None:
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        path = f"{where}.{field.name}" if where else field.name
        message = _Matches(hints.get(field.name, Any), getattr(config, field.name), path)
        if message:
            return message
    return None


def CheckTypes(config: Any, *, where: str = "") -> None:
    """InputError naming the dotted field, the expected and the given type, for the first field
    of a dataclass config (recursing into nested dataclasses, lists, tuples, dicts, Optional)
    whose value is not of its declared type (issue 68: `JumpConfig(solver="ipopt")` failed deep
    inside with AttributeError). An int is a float; a bool is neither; NaN and infinity are not
    floats a config may hold. Every workflow config's Check() calls this first.

    Args:
        config: a dataclass instance.
        where: a prefix for the paths (the config's name inside a larger one).
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise InputError(
            f"{where or 'config'}: expected a config dataclass, got {type(config).__name__}"
        )
    message = _FieldsMessage(config, where)
    if message:
        raise InputError(message)
    _CheckBounds(config, where)


def _CheckBounds(value, path: str) -> None:
    """The work bounds of a Python config's fields by name (drakebots.limits.KEY_BOUNDS: the
    bound a config file's key and a flag meet too), in nested dataclasses and lists of them."""
    from drakebots.limits import KEY_BOUNDS, CheckWork

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            where = f"{path}.{field.name}" if path else field.name
            bound = KEY_BOUNDS.get(field.name)
            if bound is not None and isinstance(item, (int, float)) and not isinstance(item, bool):
                CheckWork(bound, item, where)
            _CheckBounds(item, where)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            if dataclasses.is_dataclass(item):
                _CheckBounds(item, f"{path}[{index}]")
