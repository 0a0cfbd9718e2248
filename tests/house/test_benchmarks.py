"""benchmarks/ as a room: one entry (`python -m benchmarks`), one module a section with its `bench_<name>`, and
nothing of tests/ put on sys.path (the real servers of tests/servers.py are loaded by their path, alone)."""
from __future__ import annotations

import ast
import subprocess
import sys

from fakes import ROOT

BENCHMARKS = ROOT / "benchmarks"


def _sections() -> tuple[str, ...]:
    tree = ast.parse((BENCHMARKS / "sections" / "__init__.py").read_text())
    found = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "SECTIONS" for t in n.targets)]
    return tuple(ast.literal_eval(found[0]))


def test_every_section_is_a_module_with_its_bench_function():
    sections = _sections()
    assert "e2e" in sections and "gpu" in sections and len(sections) == len(set(sections))
    for name in sections:
        tree = ast.parse((BENCHMARKS / "sections" / f"{name}.py").read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == f"bench_{name}" for n in tree.body), name
    modules = {p.stem for p in (BENCHMARKS / "sections").glob("*.py")} - {"__init__"}
    assert modules == set(sections), modules ^ set(sections)


def test_nothing_goes_on_sys_path():
    """No module of the benchmarks edits sys.path (they reached into tests/ that way); the one helper of tests/
    they use is loaded by its path (harness.real_servers)."""
    edits = []
    for path in sorted(BENCHMARKS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in ("insert", "append", "extend") and \
                    isinstance(node.value, ast.Attribute) and node.value.attr == "path" and \
                    isinstance(node.value.value, ast.Name) and node.value.value.id == "sys":
                edits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not edits, edits


def test_the_one_entry_refuses_an_unknown_section_by_name():
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--only", "e2e,nosuch"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "unknown section(s) ['nosuch']" in proc.stderr and "e2e, encode, gpu" in proc.stderr, proc.stderr
