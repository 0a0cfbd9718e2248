"""Plain values parsed without pydantic. typer 0.29 coerces every CLI value through a pydantic TypeAdapter that
it builds at the value's first use: importing pydantic and building the adapters took 0.08-0.11 s of a finished
rerun's 0.3 s and of `check`'s 0.6 s (2-core EPYC), for values that are already what they should be: a string, a
path, an enum's value, a number written in digits within its range.

``plain_coercion(command, ctx)`` gives each such parameter of a command (its help option included) a coercion
that takes a plain value as typer's would, and hands every other value (a bad one, an unusual spelling such as
"1_000" or " 5") to typer's own coercion, so typer's rules and messages stay in charge of everything but the
obvious. A flag's value is passed through (typer builds an adapter even for a flag left unset). Parameters of any
other type (a dict, a parser, a file) keep typer's. It uses typer's private parts (``typer._coercion.RuntimeParam``,
a parameter's ``_runtime_param``); a typer without them (before 0.29, which never imported pydantic, or a later
one that changed them) is left as it is. tests/cli/test_coercion.py holds the two coercions equal on every
parameter of every command, and a command line to importing no pydantic.
"""
from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any, get_args, get_origin

# Numbers as a command line writes them in digits; anything else goes to typer (pydantic also reads "1_000", " 5").
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


class _NotPlain(Exception):
    """A value the plain reading does not take: typer's own coercion reads it (and raises its own message)."""


def _leaf(annotation: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
    """``value`` as typer's adapter for ``annotation`` returns it, for a plain value; _NotPlain otherwise."""
    from typer._param_types import coerce_cli_choice, coerce_cli_path

    if annotation is str:
        if isinstance(value, str):
            return value
    elif annotation is bool:
        if type(value) is bool:
            return value
    elif annotation in (int, float) and not info.clamp:
        if type(value) is annotation:
            number = value
        elif isinstance(value, str) and (_INT if annotation is int else _FLOAT).fullmatch(value):
            number = annotation(value)
        else:
            raise _NotPlain
        if (info.min is None or number >= info.min) and (info.max is None or number <= info.max):
            return number
    elif isinstance(annotation, type) and issubclass(annotation, Enum):
        return coerce_cli_choice(value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx)
    elif isinstance(annotation, type) and issubclass(annotation, Path):
        path_type = info.path_type or annotation
        if isinstance(value, str) and value and isinstance(path_type, type) and issubclass(path_type, Path):
            value = path_type(value)  # as pydantic reads a string into a Path
        return coerce_cli_path(value, info, path_type=path_type, param=param, ctx=ctx)
    raise _NotPlain


def _covered(annotation: Any) -> bool:
    """Whether the plain reading knows the annotation (a list of one such type included)."""
    if get_origin(annotation) is list:
        args = get_args(annotation)
        return len(args) == 1 and _covered(args[0])
    return annotation in (str, bool, int, float) or (isinstance(annotation, type)
                                                     and issubclass(annotation, (Enum, Path)))


@lru_cache(maxsize=1)
def _plain_param() -> Any:
    """The RuntimeParam subclass that reads plain values, or None where this typer has no such class."""
    try:
        from dataclasses import dataclass

        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:
        return None

    @dataclass(frozen=True)
    class PlainValues(RuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                if get_origin(self.annotation) is list:
                    if not isinstance(value, (list, tuple)):
                        raise _NotPlain
                    item = get_args(self.annotation)[0]
                    return [_leaf(item, self.parameter_info, v, param, ctx) for v in value]
                return _leaf(self.annotation, self.parameter_info, value, param, ctx)
            except Exception:  # noqa: BLE001 - _NotPlain, or a path typer refuses: typer's own reading decides
                return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)

    return PlainValues


def plain_coercion(command: Any, ctx: Any) -> None:
    """Give ``command``'s parameters (its help option included) whose type the plain reading knows that reading
    (once; idempotent)."""
    plain = _plain_param()
    if plain is None:
        return
    try:
        for param in command.get_params(ctx):
            descriptor = getattr(param, "type_descriptor", None)
            if (descriptor is None or getattr(param, "_runtime_param", False) is not None
                    or descriptor.file_annotation is not None or descriptor.parameter_info.parser is not None
                    or not _covered(descriptor.annotation)):
                continue
            param._runtime_param = plain(annotation=descriptor.annotation, parameter_info=descriptor.parameter_info)
    except (TypeError, AttributeError):  # a typer made otherwise than 0.29's: its own reading for what is left
        return
