"""cli/coercion.py: the plain reading of CLI values against typer's own (pydantic) coercion, on every parameter of
every command, and a real command line that parses without importing pydantic."""
from __future__ import annotations

import math
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
import typer

from fakes import run_cli

if tuple(int(p) for p in typer.__version__.split(".")[:2]) < (0, 29):
    pytest.skip("typer before 0.29 coerces with click, without pydantic", allow_module_level=True)
pytest.importorskip("typer._coercion", reason="a typer without 0.29's coercion: cli/coercion.py leaves it alone")

from typer._click import Context  # noqa: E402
from typer._click.exceptions import BadParameter  # noqa: E402
from typer._coercion import build_runtime_param  # noqa: E402

from fasteval.cli.coercion import plain_coercion  # noqa: E402
from fasteval.cli.main import app  # noqa: E402


def _samples(annotation: Any, info: Any, tmp: Path) -> list[Any]:
    """Values a command line, a default or an environment variable gives a parameter of this type: plain ones,
    unusual spellings typer reads its own way, bad ones, and the range's edges."""
    if get_origin(annotation) is list:
        leaf = _samples(get_args(annotation)[0], info, tmp)
        return [leaf[:2], leaf[-2:], [], tuple(leaf[:1]), "one"]
    if annotation is str:
        return ["x", "", "-5 degC", "ünïcode", "--x", 5]
    if annotation is bool:
        return [True, False, "true", "0", ""]
    if annotation in (int, float):
        edges = [info.min, info.max]
        numbers = [e + d for e in edges if e is not None for d in (-1, -0.001, 0, 0.001, 1)]
        return (["5", "+5", "007", "-3", " 5", "5 ", "1_000", "5.0", "0.5", "1e-3", ".5", "5.", "1E5", "inf", "nan",
                 "-0", "x", "", "٣", "0x10", 5, 0, 2.5, True]
                + [annotation(n) for n in numbers] + [str(annotation(n)) for n in numbers])
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        members = list(annotation)
        return [m.value for m in members] + [members[0], members[0].value.upper(), "bogus", ""]
    if isinstance(annotation, type) and issubclass(annotation, Path):
        (tmp / "a-file").write_text("x")
        return ["a", "", "-", "~/x", str(tmp / "a-file"), str(tmp), str(tmp / "missing"), "a\x00b", tmp / "a-file"]
    raise AssertionError(f"no samples for {annotation!r}")


def _outcome(runtime: Any, value: Any, param: Any, ctx: Context) -> tuple[str, Any]:
    try:
        return "value", runtime.coerce(value, param=param, ctx=ctx)
    except BadParameter as err:
        return "error", err.format_message()


def _same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    if a[0] != b[0] or type(a[1]) is not type(b[1]):
        return False
    if isinstance(a[1], float) and math.isnan(a[1]):
        return math.isnan(b[1])
    return a == b


def _parameters():
    group = typer.main.get_command(app)
    yield "fasteval", group
    yield from sorted(group.commands.items())


@pytest.mark.parametrize("name,command", list(_parameters()), ids=[n for n, _ in _parameters()])
def test_the_plain_reading_equals_typers_on_every_parameter(name, command, tmp_path):
    """Every parameter the plain reading takes (its help option included) returns what typer's coercion returns,
    type and value, or refuses with typer's message, on plain values, unusual spellings, bad values and the
    edges of its range."""
    ctx = Context(command, info_name=name)
    plain_coercion(command, ctx)
    taken = 0
    for param in command.get_params(ctx):
        if type(param._runtime_param).__name__ != "PlainValues":
            continue
        taken += 1
        descriptor = param.type_descriptor
        for value in _samples(descriptor.annotation, descriptor.parameter_info, tmp_path):
            ours = _outcome(param._runtime_param, value, param, ctx)
            typers = _outcome(build_runtime_param(descriptor), value, param, ctx)
            assert _same(ours, typers), (param.name, value, ours, typers)
    assert taken == len(command.get_params(ctx)), "a parameter of a type the plain reading does not know"


def test_a_command_line_parses_without_pydantic(tmp_path):
    """A dry-run sweep given a value of every kind (a list, a path, an enum, an int, a float, a string) parses,
    plans and exits 0 with pydantic never imported; a value out of range still gets typer's message."""
    code = ("import sys; from fasteval.cli.main import main\n"
            "sys.argv = ['fasteval'] + sys.argv[1:]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
            "print('pydantic' in sys.modules, code)")
    args = ["sweep", "--dry-run", "--model", "all-MiniLM-L6-v2", "--model", "all-mpnet-base-v2", "--out",
            str(tmp_path / "out"), "--provider", "cpu", "--batch-size", "16", "--request-timeout", "2.5",
            "--similarity", "cos", "-q"]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert proc.stdout.splitlines()[-1] == "False 0", proc.stdout + proc.stderr
    bad = run_cli(["sweep", "--dry-run", "--out", str(tmp_path / "out"), "--batch-size", "0"])
    assert bad.returncode == 2
    assert "Invalid value for '--batch-size'" in bad.stderr and "greater than or equal to 1" in bad.stderr
