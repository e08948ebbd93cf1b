"""Property-based fuzz of the loaders (issue 68): every generated input either loads or raises
InputError, never another exception (a traceback at the command line).

- The typed config loader, `LoadTypedYaml`, with each workflow's config: documents built from the
  schema's own keys (nested where a field is a dataclass), unknown keys, and values of every YAML
  kind (numbers as strings, NaN and infinities, huge numbers, lists, mappings, nulls, booleans),
  plus raw text that is barely YAML.
- The robot-file loader, `drakebots.robots.LoadRobot`, on generated robot files: the schema's keys
  with values of every kind, around a real model (the example hopper) so that generated contacts,
  bases and home poses reach Drake's parser.

2,000 inputs in all (1,500 config documents over 15 schemas, 300 raw texts, 200 robot files),
derandomized (the same inputs every run), no deadline.
"""

from __future__ import annotations

import dataclasses
import importlib
import shutil
import typing
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drakebots.config import LoadTypedYaml
from drakebots.errors import InputError

REPO = Path(__file__).resolve().parents[1]
HOPPER = REPO / "scripts" / "examples" / "hopper"

SCHEMAS = [
    ("drakebots.optimization.legged", "GaitConfig"),
    ("drakebots.optimization.legged", "JumpConfig"),
    ("drakebots.hamr", "GaitConfig"),
    ("drakebots.hamr", "JumpConfig"),
    ("drakebots.hamr", "TrackConfig"),
    ("drakebots.hamr", "ModesConfig"),
    ("drakebots.voxel", "FemConfig"),
    ("drakebots.voxel", "PomConfig"),
    ("drakebots.gecko", "NavigateConfig"),
    ("drakebots.gecko", "VelocitySpaceConfig"),
    ("drakebots.systems.simulate", "SimulateConfig"),
    ("drakebots.skinned", "DesignConfig"),
    ("drakebots.skinned", "MakeSkinConfig"),
    ("drakebots.skinned", "BendConfig"),
    ("drakebots.sweeps.spec", "SweepFile"),
]
PER_SCHEMA = 100
RAW_TEXTS = 300
ROBOT_FILES = 200

FUZZ = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Values of every YAML kind, with the numbers that break code: NaN, infinities, huge and tiny,
# negative, zero, numbers written as strings (YAML 1.1 reads 1e9 as one).
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1e300, -1e300, 1e-300, 1e9, 2**63, "1e9", "1e-9", "nan", "-inf"]),
    st.text(max_size=12),
    st.sampled_from(["auto", "ipopt", "snopt", "beetle", "hamr_vi", "walk", "trot", "2x2x1"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


def _Document(schema, depth: int = 0):
    """A strategy of mappings over `schema`'s keys (its nested dataclasses followed a level or
    two), now and then with an unknown key."""
    hints = typing.get_type_hints(schema)
    fields = {}
    for field in dataclasses.fields(schema):
        kind = hints[field.name]
        if dataclasses.is_dataclass(kind) and depth < 2:
            fields[field.name] = st.one_of(_Document(kind, depth + 1), VALUES)
        else:
            fields[field.name] = VALUES
    keys = st.sampled_from(sorted(fields)) if fields else st.nothing()
    chosen = st.lists(keys, unique=True, max_size=min(5, len(fields)))
    unknown = st.dictionaries(st.text(min_size=1, max_size=6), VALUES, max_size=1)
    return st.tuples(chosen, unknown).flatmap(
        lambda pair: st.fixed_dictionaries({k: fields[k] for k in pair[0]}).map(
            lambda d, extra=pair[1]: {**d, **extra} if extra and len(d) % 3 == 0 else d
        )
    )


def _Load(schema, text: str) -> None:
    try:
        LoadTypedYaml(schema, data=text, source="fuzz.yaml")
    except InputError:
        pass


def _Dump(document) -> str:
    return yaml.safe_dump(document, allow_unicode=True)


@pytest.mark.parametrize("module, name", SCHEMAS, ids=[f"{m}.{n}" for m, n in SCHEMAS])
def test_typed_config_loader_loads_or_raises_input_error(module, name):
    schema = getattr(importlib.import_module(module), name)

    @settings(FUZZ, max_examples=PER_SCHEMA)
    @given(_Document(schema))
    def Fuzz(document):
        _Load(schema, _Dump(document))

    Fuzz()


@settings(FUZZ, max_examples=RAW_TEXTS)
@given(
    st.one_of(
        st.text(max_size=80),
        st.text(alphabet=":-[]{}&*!|>'\"%@`#,? \n\tab1.e", max_size=60),
        st.sampled_from(
            ["a: &x [*x]", "!!python/object:os.system x", "{a: 1, a: 2}", "--- 1\n--- 2"]
        ),
    ),
    st.sampled_from(SCHEMAS),
)
def test_raw_text_loads_or_raises_input_error(text, schema):
    _Load(getattr(importlib.import_module(schema[0]), schema[1]), text)


def _RobotFile():
    contact = st.one_of(
        st.fixed_dictionaries(
            {"body": st.sampled_from(["foot", "torso", "", "no_such"]), "point": VALUES}
        ),
        st.fixed_dictionaries(
            {
                "body": st.sampled_from(["foot", "thigh"]),
                "point": st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3),
            }
        ),
        VALUES,
    )
    fields = {
        "name": st.one_of(st.just("hopper"), VALUES),
        "kind": st.one_of(st.sampled_from(["model", "skinned_quadruped"]), VALUES),
        "model": st.one_of(st.sampled_from(["hopper.urdf", "none.urdf", "../x.urdf"]), VALUES),
        "skeleton": st.one_of(st.just("beetle.yaml"), VALUES),
        "units": st.one_of(st.sampled_from(["SI", "mm-ms-g"]), VALUES),
        "base": st.one_of(st.sampled_from(["planar_xz", "floating_rpy", "fixed"]), VALUES),
        "base_body": st.one_of(st.sampled_from(["torso", "foot", ""]), VALUES),
        "contacts": st.one_of(st.lists(contact, max_size=3), VALUES),
        "home": st.one_of(
            st.dictionaries(st.sampled_from(["hip", "knee", "base_x", "no_joint"]), VALUES),
            VALUES,
        ),
    }
    base = {
        "model": "hopper.urdf",
        "contacts": [{"body": "foot", "point": [0.06, 0, -0.02]}],
        "home": {"hip": 0.3, "knee": -0.6},
    }
    changed = st.lists(st.sampled_from(sorted(fields)), unique=True, min_size=1, max_size=3)
    return changed.flatmap(
        lambda keys: st.fixed_dictionaries({k: fields[k] for k in keys}).map(
            lambda d: {**base, **d}
        )
    )


@pytest.fixture(scope="module")
def robot_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("robot")
    shutil.copy(HOPPER / "hopper.urdf", folder / "hopper.urdf")
    return folder


def test_robot_file_loader_loads_or_raises_input_error(robot_folder):
    from drakebots.robots import LoadRobot

    path = robot_folder / "robot.yaml"

    @settings(FUZZ, max_examples=ROBOT_FILES)
    @given(_RobotFile())
    def Fuzz(document):
        path.write_text(_Dump(document))
        try:
            LoadRobot(path)
        except InputError:
            pass

    Fuzz()


def test_the_fuzz_adds_up_to_2000_inputs():
    assert len(SCHEMAS) * PER_SCHEMA + RAW_TEXTS + ROBOT_FILES == 2000
