"""LoadTypedYaml: every mistake names the key path and the file, also inside nested containers."""

import dataclasses

import pytest

from drakebots.config import LoadTypedYaml
from drakebots.errors import InputError


@dataclasses.dataclass
class Leaf:
    k: float = 1.0


@dataclasses.dataclass
class Schema:
    x: float = 1.0
    leaf: Leaf = dataclasses.field(default_factory=Leaf)
    by_name: dict[str, Leaf] = dataclasses.field(default_factory=dict)
    items: list[Leaf] = dataclasses.field(default_factory=list)
    optional: Leaf | None = None


@pytest.mark.parametrize(
    "text, message",
    [
        ("z: 3", "unknown key 'z'"),
        ("x: abc", "key 'x' has a bad value"),
        ("leaf: {q: 1}", "unknown key 'leaf.q'"),
        ("leaf: {k: foo}", "key 'leaf.k' has a bad value"),
        ("by_name: {a: {q: 2}}", "unknown key 'by_name.a.q'"),
        ("by_name: {a: {k: bad}}", "key 'by_name.a.k' has a bad value"),
        ("items: [{k: 1}, {z: 2}]", "unknown key 'items[1].z'"),
        ("items: [{k: 1}, {k: x}]", "key 'items[1].k' has a bad value"),
        ("optional: {w: 3}", "unknown key 'optional.w'"),
    ],
)
def test_errors_name_the_key(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text + "\n")
    with pytest.raises(InputError) as error:
        LoadTypedYaml(Schema, filename=path)
    assert message in str(error.value)
    assert str(path) in str(error.value)


def test_valid_file_loads_with_defaults(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("x: 2\nby_name: {a: {k: 3}}\nitems: [{k: 4}]\noptional: {k: 5}\n")
    config = LoadTypedYaml(Schema, filename=path)
    assert config == Schema(x=2.0, by_name={"a": Leaf(3.0)}, items=[Leaf(4.0)], optional=Leaf(5.0))


def test_missing_file_and_missing_entry(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        LoadTypedYaml(Schema, filename=tmp_path / "nope.yaml")
    path = tmp_path / "named.yaml"
    path.write_text("first: {x: 1}\n")
    with pytest.raises(InputError, match="no entry named 'second'"):
        LoadTypedYaml(Schema, filename=path, child_name="second")
    assert LoadTypedYaml(Schema, filename=path, child_name="first").x == 1.0


@dataclasses.dataclass
class _Deferred:
    """Fields annotated with strings, as `from __future__ import annotations` leaves them."""

    weight: "float" = 1.0
    count: "int" = 2
    leaf: "Leaf | None" = None


def test_string_annotations_load(tmp_path):
    """A schema whose annotations are strings (a module with `from __future__ import
    annotations`, like drakebots' own settings) loads and converts its values."""
    config = LoadTypedYaml(_Deferred, data="weight: 0.25\ncount: 3\nleaf: {k: 7.0}\n")
    assert config == _Deferred(weight=0.25, count=3, leaf=Leaf(7.0))
    with pytest.raises(InputError, match="count"):
        LoadTypedYaml(_Deferred, data="count: many\n")


# ---- The one YAML reading path (issue 50): limits, duplicate keys, the file named. ----------


def _Yaml(tmp_path, text, name="bad.yaml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        # A billion laughs: 9 levels of 9 aliases, 387 million values once expanded.
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
                for i in range(8)
            ),
            "aliases are expanded",
        ),
        ("robot: beetle\nrobot: cow\n", "duplicate key 'robot'"),
        ("robot: !!python/object/apply:os.system ['true']\n", "not valid YAML"),
        ("robot: [beetle\n", "not valid YAML"),
        (b"\xff\xfe\x00binary\x00", "not a text file"),
    ],
    ids=["alias-bomb", "duplicate-key", "python-tag", "syntax", "binary"],
)
def test_a_bad_yaml_file_is_an_input_error_naming_the_file(tmp_path, text, message):
    from drakebots.config import ReadYaml

    path = _Yaml(tmp_path, text)
    with pytest.raises(InputError, match=message) as info:
        ReadYaml(path)
    assert str(path) in str(info.value)


def test_a_typed_config_that_is_not_a_mapping_names_the_file(tmp_path):
    @dataclasses.dataclass
    class Config:
        robot: str = "beetle"

    for text in ("3\n", "- beetle\n"):
        path = _Yaml(tmp_path, text, "scalar.yaml")
        with pytest.raises(InputError, match="must be a mapping") as info:
            LoadTypedYaml(Config, filename=path)
        assert str(path) in str(info.value)
    with pytest.raises(InputError, match="my-config.yaml"):
        LoadTypedYaml(Config, data="robot: [1\n", source="my-config.yaml")


@pytest.mark.parametrize("text", ["a: .nan\n", "a: [1, -.inf]\n", "a: {b: .Inf}\n", ".nan\n"])
def test_read_yaml_refuses_non_finite_numbers_naming_the_key_and_file(tmp_path, text):
    from drakebots.config import ReadYaml

    path = tmp_path / "f.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=r"f\.yaml: key '.*' is .*: must be a finite number"):
        ReadYaml(path)


def test_a_typed_file_may_not_ask_for_more_work_than_the_limit(tmp_path):
    @dataclasses.dataclass
    class Schema:
        knots: int = 11

    path = tmp_path / "f.yaml"
    path.write_text("knots: 100000000\n")
    with pytest.raises(InputError, match=r"yaml: key 'knots' 100000000 is above the bound of 2000"):
        LoadTypedYaml(Schema, filename=path)
