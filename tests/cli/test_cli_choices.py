"""The CLI spells some optimizer option names itself (registering the verbs does not import the
optimizers, which keeps `drakebots --help` fast: importing the QPCC alone takes ~1 s of pydrake):
they must stay the names the optimizers accept."""

import argparse

from drakebots.cli import MakeParser


def _Choices(parser: argparse.ArgumentParser, path: list[str], option: str):
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return tuple(next(a for a in parser._actions if option in a.option_strings).choices)


def test_cli_option_names_are_the_optimizers_names():
    from drakebots.hamr.trajopt import SECOND_STAGES
    from drakebots.skinned.qpcc import LOOKAHEAD_TARGETS

    parser = MakeParser()
    assert set(_Choices(parser, ["design"], "--lookahead")) == set(LOOKAHEAD_TARGETS)
    for problem in ("hamr-gait", "hamr-jump"):
        choices = _Choices(parser, ["optimize", problem], "--second-stage")
        assert set(choices) == set(SECOND_STAGES)
