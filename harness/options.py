"""Options declared once: a typed model whose fields are the options, and pytest's options generated from it.

A field is an option (`rtt_steps` is `--rtt-steps`): its type, bounds, default and help (the
field's description) are written once, in the model. `add_options` declares them to pytest;
`read` validates what pytest parsed against the same model, and a bad value is one line naming
the option (`--users: Input should be greater than or equal to 1`), before anything runs. The
core's options are declared in `harness.run_options`; a suite's own, in its folder of
`harness_suites` (its `options.py`), registered by the suites, not the core plugin.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from harness_kernel.errors import ConfigError

Declared = TypeVar("Declared", bound=BaseModel)


class Declaration(BaseModel):
    """The base of a group of options: unknown names, NaN and infinity refused; read once, never changed."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def option_of(field: str) -> str:
    """`rtt_steps` -> `--rtt-steps`."""
    return "--" + field.replace("_", "-")


def _plain(annotation: Any) -> Any:
    """The type an option parses into: Annotated and `| None` taken off."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType) and type(None) in get_args(annotation):
            rest = [a for a in get_args(annotation) if a is not type(None)]
            if len(rest) != 1:
                return annotation
            annotation = rest[0]
        else:
            return annotation


def _declaration(field: FieldInfo) -> dict[str, Any]:
    """pytest's `addoption` keywords for a field (argparse reads `%` in a help as a format: it is doubled)."""
    if not field.description:
        raise TypeError("an option needs its help: the field's description")
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    kwargs: dict[str, Any] = {"default": None if field.is_required() else field.default,
                              "help": field.description.replace("%", "%%")}
    plain = _plain(field.annotation)
    if plain is bool:
        kwargs["action"] = "store_true"
    elif get_origin(plain) is Literal:
        kwargs["choices"] = get_args(plain)
    elif plain in (int, float):
        kwargs["type"] = plain
    if "metavar" in extra:
        kwargs["metavar"] = extra["metavar"]
    return kwargs


def add_options(group: pytest.OptionGroup, model: type[BaseModel]) -> None:
    """Declare each field of `model` to pytest as its option, with its default, type and help."""
    for name, field in model.model_fields.items():
        group.addoption(option_of(name), **_declaration(field))


def read(model: type[Declared], getoption: Callable[[str], Any]) -> Declared:
    """The options as `model` types and bounds them (an option left unset takes the model's default); a bad one is
    a `ConfigError` naming it."""
    raw = {name: getoption(option_of(name)) for name in model.model_fields}
    try:
        return model.model_validate({k: v for k, v in raw.items() if v is not None})
    except ValidationError as exc:
        error = exc.errors()[0]
        option = option_of(str(error["loc"][0])) if error["loc"] else "an option"
        message = str(error["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{option}: {message}") from None


def render(options: BaseModel) -> list[str]:
    """Each option as the run will use it (`--users=8`), for the dry-run's options line."""
    return [f"{option_of(k)}={v}" for k, v in options.model_dump(exclude_none=True).items()]
