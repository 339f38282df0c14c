"""An option is declared once, as a field: its name, type, bounds, default and help; pytest's option is generated."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from harness.options import add_options, read
from harness.run_options import RunOptions, RunSwitches
from harness_kernel.errors import ConfigError


class Sweep(BaseModel):
    steps: int = Field(3, ge=1, le=10, json_schema_extra={"metavar": "N"}, description="steps of the sweep, 95 % of them")
    mode: Literal["fast", "slow"] = Field("fast", description="how it sweeps")
    quiet: bool = Field(False, description="say less")
    limit_ms: float | None = Field(None, gt=0, description="judge against this (default: not judged)")


def test_a_field_becomes_an_option_with_its_type_default_choices_and_help() -> None:
    parser = pytest.Parser(_ispytest=True)
    add_options(parser.getgroup("test"), Sweep)
    declared = {o.names()[0]: o for o in parser.getgroup("test").options}
    assert set(declared) == {"--steps", "--mode", "--quiet", "--limit-ms"}
    assert declared["--steps"].attrs()["default"] == 3 and declared["--steps"].attrs()["type"] is int
    assert declared["--steps"].attrs()["metavar"] == "N"
    assert declared["--steps"].attrs()["help"] == "steps of the sweep, 95 %% of them", "argparse reads % as a format"
    assert declared["--mode"].attrs()["choices"] == ("fast", "slow")
    assert (vars(parser.parse(["--quiet"]))["quiet"], vars(parser.parse([]))["quiet"]) == (True, False), "a switch"
    assert declared["--limit-ms"].attrs()["type"] is float and declared["--limit-ms"].attrs()["default"] is None


def test_what_pytest_parsed_is_read_through_the_same_model_and_a_bad_value_names_its_option() -> None:
    parser = pytest.Parser(_ispytest=True)
    add_options(parser.getgroup("test"), Sweep)
    given = vars(parser.parse(["--steps", "7", "--mode", "slow", "--quiet"]))
    assert read(Sweep, lambda name: given[name.removeprefix("--").replace("-", "_")]) == Sweep(steps=7, mode="slow",
                                                                                              quiet=True)
    too_many = vars(parser.parse(["--steps", "70"]))
    with pytest.raises(ConfigError, match=r"^--steps: Input should be less than or equal to 10$"):
        read(Sweep, lambda name: too_many[name.removeprefix("--").replace("-", "_")])


def test_an_option_without_its_help_is_refused_where_it_is_declared() -> None:
    class Undocumented(BaseModel):
        steps: int = 3

    with pytest.raises(TypeError, match="an option needs its help"):
        add_options(pytest.Parser(_ispytest=True).getgroup("test"), Undocumented)


def test_the_cores_options_left_unset_are_the_models_defaults() -> None:
    assert read(RunOptions, lambda name: None) == RunOptions()
    assert read(RunSwitches, lambda name: None) == RunSwitches()
