"""The public edge, both ways: what users import is pinned (``fasteval.__all__``, ``fasteval.mteb.__all__``), every
name there resolves, no example in the README or the docs reaches into the internals, and fasteval uses no
private name of MTEB's beyond the two abstract methods its ``AbsTask`` contract asks a new task to implement."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from fakes import TESTS

ROOT = TESTS.parent
PUBLIC = ["evaluate", "check", "drift", "save_receipt", "load_model", "model_folder", "result_files", "load_result",
          "Encoder", "PhysScoreEvaluator", "ByteCounts", "CharTrigrams", "surface_baselines", "published",
          "published_model", "place", "reproduction", "ModelResult",
          "CheckResult", "DriftReport", "EmbeddingTable", "Protocol",
          "FastevalError", "InputError", "ModelError", "SourceError", "OutputError", "ProtocolError", "mteb",
          "__version__"]
PUBLIC_MTEB = ["tasks", "task_results", "MtebEncoder", "metadata_of", "write_datasets"]
INTERNAL = re.compile(r"\bfasteval\.(core|models|cli)\b")


def test_the_public_names_are_pinned_and_each_resolves():
    code = ("import fasteval, sys; print(fasteval.__all__); print('numpy' in sys.modules); "
            "print([n for n in fasteval.__all__ if n != 'PhysScoreEvaluator' and getattr(fasteval, n) is None])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert eval(out[0]) == PUBLIC, "a public name was added or removed: pin it here and in docs/library.md"
    assert out[1] == "False", "import fasteval stays cheap"
    assert out[2] == "[]"
    import fasteval

    assert set(PUBLIC) <= set(dir(fasteval))


def test_the_mteb_edge_is_pinned_and_each_resolves():
    pytest.importorskip("mteb")
    import fasteval.mteb

    assert fasteval.mteb.__all__ == PUBLIC_MTEB
    assert all(callable(getattr(fasteval.mteb, n)) for n in PUBLIC_MTEB)


def test_no_example_reaches_into_the_internals():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = []
    for page in pages:
        for block in re.findall(r"```[a-z]*\n(.*?)```", page.read_text(), flags=re.S):
            found += [f"{page.name}: {line.strip()}" for line in block.splitlines() if INTERNAL.search(line)]
    assert not found, found


def test_no_private_mteb_name_is_used():
    """Every ``mteb._x`` import or attribute, and every private method fasteval overrides on an MTEB class: only
    AbsTask's two abstract methods, which its contract asks a new kind of task to implement (held to the installed
    MTEB's abstract methods, so a release that changes the contract fails here, not at a user's)."""
    mteb = pytest.importorskip("mteb")
    from mteb.abstasks import AbsTask

    sources = [p for p in ROOT.rglob("*.py") if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
               and "tests" not in p.relative_to(ROOT).parts]
    private_imports = [f"{p.relative_to(ROOT)}: {m}" for p in sources
                       for m in re.findall(r"\bmteb\._\w+", p.read_text())]
    assert not private_imports, private_imports
    task_source = (ROOT / "core" / "mteb" / "task.py").read_text()
    overridden = set(re.findall(r"^\s+def (_\w+)\(", task_source, flags=re.M))
    assert overridden == set(AbsTask.__abstractmethods__), (overridden, AbsTask.__abstractmethods__, mteb.__version__)


def test_the_types_a_user_holds_are_the_ones_returned_and_raised_and_typed():
    """What evaluate, check, drift and load_result return and what fasteval raises are public types: a harness
    catches fasteval.FastevalError (every child of it) and annotates with fasteval.ModelResult; py.typed ships,
    so a type checker reads the package's own annotations."""
    import fasteval
    from fasteval.core.errors import InputError

    from fakes import CountingEncoder

    result = fasteval.evaluate(CountingEncoder("org/typed"), exams=(2,))
    assert isinstance(result, fasteval.ModelResult)
    for child in ("InputError", "ModelError", "SourceError", "OutputError", "ProtocolError"):
        assert issubclass(getattr(fasteval, child), fasteval.FastevalError), child
    assert fasteval.InputError is InputError and issubclass(fasteval.ProtocolError, fasteval.InputError)
    with pytest.raises(fasteval.FastevalError):
        fasteval.evaluate(CountingEncoder("org/typed"), exams=(9,))
    assert (ROOT / "py.typed").is_file()
    from importlib import resources

    assert resources.files("fasteval").joinpath("py.typed").is_file(), "py.typed is installed with the package"
    assert 'fasteval = ["py.typed"]' in (ROOT / "pyproject.toml").read_text(), "package data: a wheel ships it"

