"""The house as every static tool sees it: imports inside the package are relative (so an import graph of the
checkout resolves them all), the flow between rooms is one way (the import-linter contract in .importlinter),
and nothing hooks the import system."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys

from fakes import ROOT

PACKAGE_DIRS = ("core", "cli", "models")


def package_files():
    return [ROOT / "__init__.py", *sorted(p for d in PACKAGE_DIRS for p in (ROOT / d).rglob("*.py"))]


def lint_imports(root, env=None):
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                           "lint_imports_command()", "--config", str(ROOT / ".importlinter"), "--no-cache"],
                          cwd=root, capture_output=True, text=True, env=env)


def test_every_import_inside_the_package_is_relative_and_resolves_to_a_file():
    """No `from fasteval...` inside the package (a checkout's folder is not named fasteval, so static tools
    cannot resolve those), and every relative import names a module or package that exists."""
    absolute, unresolved = [], []
    for path in package_files():
        here = path.parent
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "fasteval":
                absolute.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "fasteval" for a in node.names):
                absolute.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom) and node.level:
                base = here
                for _ in range(node.level - 1):
                    base = base.parent
                target = base.joinpath(*(node.module or "").split(".")) if node.module else base
                names = [target] if node.module else [base / a.name for a in node.names]
                for t in names:
                    if not (t.with_suffix(".py").is_file() or (t / "__init__.py").is_file()) and node.module:
                        unresolved.append(f"{path.relative_to(ROOT)}:{node.lineno} {'.' * node.level}{node.module}")
                if base != ROOT and not str(base).startswith(str(ROOT)):
                    unresolved.append(f"{path.relative_to(ROOT)}:{node.lineno} beyond the package")
    assert not absolute, absolute
    assert not unresolved, unresolved


def cli_imports() -> dict[str, set[str]]:
    """The library modules the CLI imports (a package's module where it imports a module of it by name, ``from
    ..core.runs.drift import gate``), each with the CLI files that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level < 2:  # level 1: the CLI's own modules
                continue
            base = ROOT.joinpath(*(node.module or "").split("."))
            for alias in node.names:
                module = base / alias.name
                target = module if (module.with_suffix(".py").is_file() or (module / "__init__.py").is_file()) \
                    else base
                found.setdefault(".".join(target.relative_to(ROOT).parts) or "fasteval", set()).add(path.name)
    return found


def test_the_cli_is_thin():
    """The CLI parses, calls the library and prints: each command calls an entry of the library (docs/house.md,
    "The CLI parses"), so the CLI imports few of its modules (27 in 14 rooms before the library took what the CLI
    decided). A new import of the library into the CLI is a decision the library should own; this test says so."""
    found = cli_imports()
    assert "core.choices" in found and "core.runs.sweep" in found, found  # the count below counts what it should
    assert len(found) <= 15, sorted(found)
    assert not any(m.startswith(("core.kernels", "core.exams", "core.results", "core.plan", "core.cache"))
                   for m in found), sorted(found)


def test_the_flow_between_rooms_is_one_way():
    proc = lint_imports(ROOT)
    assert proc.returncode == 0 and "3 kept, 0 broken" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "one-way flow KEPT" in proc.stdout and "model rooms apart KEPT" in proc.stdout
    assert "the report reads results only KEPT" in proc.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    """The contract can fail: a copy of the package where an exam imports the runs is refused, by name."""
    copy = tmp_path / "fasteval"
    copy.mkdir()
    shutil.copy(ROOT / "__init__.py", copy)
    for d in PACKAGE_DIRS:
        shutil.copytree(ROOT / d, copy / d, ignore=shutil.ignore_patterns("__pycache__"))
    geometry = copy / "core" / "exams" / "geometry.py"
    geometry.write_text(geometry.read_text() + "\n\ndef _upward():\n    from ..runs import evaluate  # noqa\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = lint_imports(tmp_path, env)
    # the one-way flow is broken by name, and the report, which reads an exam's tables, now reaches the runs too
    said = proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.returncode != 0 and "1 kept, 2 broken" in proc.stdout, said
    assert "one-way flow BROKEN" in proc.stdout and "the report reads results only BROKEN" in proc.stdout, said
    assert "fasteval.core.exams.geometry -> fasteval.core.runs" in proc.stdout, said
    assert "one-way flow BROKEN" in proc.stdout
    assert "fasteval.core.exams.geometry -> fasteval.core.runs" in proc.stdout


def test_no_import_hook_and_fasteval_mteb_runs_on_first_use():
    """`import fasteval.mteb` works as users write it, with no finder added to sys.meta_path, and nothing of the
    MTEB module runs (numpy stays unloaded) until it is used."""
    code = ("import sys; n = len(sys.meta_path); import fasteval.mteb; "
            "lazy = type(sys.modules['fasteval.mteb']).__name__; "
            "print(len(sys.meta_path) - n, 'numpy' in sys.modules, lazy, fasteval.mteb.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "False", "_LazyModule", "fasteval.core.mteb"]


def test_the_vector_forms_are_one_table():
    """The seven forms are rows of one table (``choices.QUANTIZATIONS``: family, bits, calibration, scoring, what
    each needs): the code that makes, scores and climbs them asks a form's row, never its name (no string of a
    form's name, or of a family's prefix, in vectors.py or the ladder), and the names, the calibrated ones and the
    help are read from it."""


    from fasteval.core import choices

    names = set(choices.VECTOR_QUANTIZATIONS) | {"turboquant", "binary"}
    for path in (ROOT / "core" / "vectors.py", ROOT / "core" / "runs" / "ladder.py"):
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                      and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        said = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                and id(n) not in docstrings and n.value in names]
        assert not said, f"{path.name} names forms {said}: ask choices.FORMS[name] instead"
    assert choices.VECTOR_QUANTIZATIONS == tuple(q.name for q in choices.QUANTIZATIONS)
    assert choices.CALIBRATED_FORMS == ("int8", "int4", "binary-centred")
    assert {q.family for q in choices.QUANTIZATIONS} == {"integer", "sign", "turbo"}
    assert all(f"{q.name} ({q.said})" in choices.vector_forms_help() for q in choices.QUANTIZATIONS)
