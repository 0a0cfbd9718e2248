"""drift's room as the house keeps it (issue 57): its checks a registry of typed findings, encoders asked and never
named, no module writing another object's private field, functions a reader can hold, and no backslash
continuation a static call walker stops at."""
from __future__ import annotations

import ast

import pytest

from fakes import ROOT

DRIFT = ROOT / "core" / "runs" / "drift"
ENCODER_CLASSES = ("OnnxEncoder", "ServedEncoder", "ReceiptEncoder")


def _python(*folders):
    return sorted(p for d in folders for p in (ROOT / d).rglob("*.py"))


def test_every_check_is_one_registered_module_with_a_typed_finding():
    """Each check declares when it runs, its step, whether it applies and what it finds; each finding kind is
    registered once, with its own drift.json keys (no two findings write one key)."""
    from fasteval.core.results.drift_findings import FINDINGS
    from fasteval.core.runs.drift.checks import CHECKS, STAGES, run_checks

    modules = {p.stem for p in (DRIFT / "checks").glob("*.py") if p.stem != "__init__"}
    assert modules == {c.__name__.rsplit(".", 1)[1] for c in CHECKS}, "a check module outside the registry"
    for check in CHECKS:
        assert check.STAGE in STAGES and len(check.STEP) == 2, check.__name__
        assert callable(check.applies) and callable(check.check), check.__name__
    with pytest.raises(ValueError, match="no stage 'scord'"):  # a misspelt stage runs nothing silently no more
        run_checks(None, "scord")  # type: ignore[arg-type]
    keys = [kind.key for kind in FINDINGS]
    assert len(keys) == len(set(keys))
    written = [set(kind().to_json()) for kind in FINDINGS]
    assert all(not (a & b) for i, a in enumerate(written) for b in written[i + 1:]), written


def test_a_report_with_every_finding_reads_back_as_it_was_written():
    """drift.json written with every kind of finding and read back gives the same JSON, reasons and verdict."""
    from fasteval.core.results.drift import DriftReport, GroupDrift
    from fasteval.core.results.drift_findings import (Base64, Behaviour, Behaviours, Collision, Collisions,
                                                      Condition, CountedText, Diagnosis, Identity, Invariance,
                                                      KnownDifferences, Norms, PhysScore, SideIdentity, TokenCounts,
                                                      Tokenization)

    report = DriftReport("ref", "cand", 0.99, 3, 0.98, 0.5, {"protocol": GroupDrift("protocol", "p", 3, 0.98, 0.5,
                                                                                      0.3, "5 m")}, [], 0.9)
    for finding in (Identity({"candidate": SideIdentity(model="m", max_tokens=256),
                              "reference": SideIdentity(max_tokens=512)},
                             "the candidate says it is 'm', expected 'x'", None, {"candidate": "q8_0"},
                             "the candidate serves q8_0 weights, the reference f32",
                             KnownDifferences("llama.cpp", {"protocol": "why"})),
                    Base64(1, max_abs=1.0, endianness="big", finding="big-endian"),
                    Diagnosis("pooling=cls", 0.999, reference=0.5, tried=[]),
                    TokenCounts(1, 1, [CountedText("a", 3, 1)]),
                    Norms(2, False, True, 2.0, "a", finding="it normalises"),
                    Collisions([Collision("a", "b", 0.5, 1.0)], 7, gated=False),
                    Tokenization(1, 0, 1, []),
                    Invariance([Condition("in a batch of 2", 0.5, "a", 0.1)], "bitwise"),
                    Behaviours([Behaviour("candidate", "m", "length", "refuses", 1, 9, "too long")]),
                    PhysScore(36.97, 36.5, 60.0, 59.0, -0.47, ["length/1"], -1.0, 0.1)):
        report.add(finding)
    data = report.to_json()
    back = DriftReport.from_json(data)
    assert back.to_json() == data and back.reasons == report.reasons and back.verdict == "drifts"
    assert report.reasons == ["protocol 0.5000", "identity: the candidate says it is 'm', expected 'x'",
                              "precision: the candidate serves q8_0 weights, the reference f32", "base64: big-endian",
                              "norms: it normalises", "batch: in a batch of 2 0.5000",
                              "truncation: 1 drifted text(s) cut at another length (the reference takes 512 tokens, "
                              "the candidate 256)"]
    assert data["collision_count"] == 7 and data["invariance_tier"] == "bitwise" and data["delta_tau"] == -0.47
    # every reason is a failing JUnit case (the norm gate's and the base64 parity's had none), read back too
    from xml.etree import ElementTree as ET

    from fasteval.core.report.drift import drift_junit

    failed = {c.get("name") for c in ET.fromstring(drift_junit([back]).split("?>", 1)[1])
              if c.find("failure") is not None}
    assert failed == {"group protocol", "identity", "precision", "base64", "norms", "invariance in a batch of 2",
                      "diagnosis"}  # a drifting candidate's diagnosis and Fix: a failing case (issue 66, item 12)


def test_a_drift_json_written_before_the_findings_were_typed_reads_as_before():
    """tests/data/drift-before-typed-findings.json, written by the code before the findings had fields of their own
    (every finding, each in the shapes its check writes: a served and a local side, a diagnosis with its variants,
    invariance rows compared and skipped, a behaviour, the PhysScore side): read back typed, it writes the same
    drift.json, byte for byte, and its values are the findings' fields."""
    import json

    from fasteval.core.io import dumps
    from fasteval.core.report.drift import drift_files
    from fasteval.core.results.drift import DriftReport
    from fasteval.core.results.drift_findings import Collisions, Diagnosis, Identity, Invariance, PhysScore

    from fakes import ROOT

    path = ROOT / "tests" / "data" / "drift-before-typed-findings.json"
    data = json.loads(path.read_text())
    report = DriftReport.from_json(data)
    assert drift_files(report)["drift.json"] == dumps(data), "the same keys, values and order"
    candidate = report.get(Identity).side("candidate")
    assert candidate.kind == "served" and candidate.max_tokens == 512 and candidate.server is not None
    kept = report.get(Identity).side("reference").vectors
    assert kept is not None and kept.vector_quantization == "int8" and kept.dimensions == 256
    diagnosis = report.get(Diagnosis)
    assert diagnosis.closest == "pooling=cls" and [t.variant for t in diagnosis.tried or []][:1] == ["pooling=cls"]
    assert diagnosis.tried and diagnosis.tried[1].same_as_reference and diagnosis.tried[2].skipped == "no GPU"
    assert [r.skipped for r in report.get(Invariance).rows] == [None, "refused: too long"]
    assert report.get(Collisions).listed[0].groups == ["accents"] and report.get(PhysScore).delta_tau == -0.47
    assert report.worst[0].text == "한국어 텍스트" and report.worst[0].cosine == 0.7796


def test_the_findings_hold_no_untyped_mapping_but_what_a_server_says():
    """Every field of a finding, of the records it holds and of the drift report is typed: a mapping of Any only
    where a server's own JSON is kept as it said it (/models' entry, TEI's /info)."""
    import dataclasses
    import typing

    from fasteval.core.results import drift, drift_findings

    records = [c for m in (drift, drift_findings) for c in vars(m).values()
               if dataclasses.is_dataclass(c) and c.__module__ == m.__name__]
    untyped = [f"{c.__name__}.{f.name}" for c in records for f in dataclasses.fields(c)
               if "dict[str, Any]" in str(typing.get_type_hints(c)[f.name]).replace("typing.", "")]
    assert sorted(untyped) == ["SideIdentity.info", "SideIdentity.server"], untyped


def test_a_check_that_did_not_run_shows_nothing():
    """A report whose checks did not run (a reference that cannot run as its variants: no diagnosis; no served
    candidate: no base64 or token counts) shows no line and no JUnit case of them."""
    from fasteval.core.report.drift import drift_junit, drift_text
    from fasteval.core.results.drift import DriftReport, GroupDrift

    report = DriftReport("ref", "cand", 0.99, 1, 0.5, 0.5, {"protocol": GroupDrift("protocol", "p", 1, 0.5, 0.5, 1.0,
                                                                                    "5 m")}, [], 1.0)
    text, junit = drift_text(report), drift_junit([report])
    assert not any(word in text for word in ("diagnosis", "norms", "token counts", "tokenizer", "invariance",
                                             "behaviour", "PhysScore", "collisions (apart"))
    assert 'name="diagnosis"' not in junit and 'name="norms"' not in junit and 'name="base64"' not in junit


def test_drift_asks_encoders_and_names_none():
    """No module of drift names an encoder class (it asks what an encoder can do: the protocols of core.embeddings,
    which fasteval's own encoders meet), and no module of the package writes another object's private field."""
    from fasteval.core.embeddings import Encodings, FixedTexts, OpensAhead, ServerTokens, Variants
    from fasteval.models.adapters.receipt import ReceiptEncoder
    from fasteval.models.onnx.encoder import OnnxEncoder
    from fasteval.models.served import ServedEncoder

    for kind, protocol in ((OnnxEncoder, Variants), (OnnxEncoder, OpensAhead), (ReceiptEncoder, FixedTexts),
                           (ServedEncoder, Encodings), (ServedEncoder, ServerTokens)):
        methods = [n for n, v in vars(protocol).items() if not n.startswith("_") and (callable(v) or
                                                                                   isinstance(v, property))]
        assert methods and all(callable(getattr(kind, n, None)) or isinstance(getattr(kind, n, None), property)
                               for n in methods), (kind, protocol, methods)
    named = [f"{p.relative_to(ROOT)}:{n.lineno}" for p in _python("core/runs/drift") for n in
             ast.walk(ast.parse(p.read_text())) if isinstance(n, (ast.Name, ast.alias))
             and getattr(n, "id", getattr(n, "name", None)) in ENCODER_CLASSES]
    assert not named, named
    written = []
    for p in _python("core", "cli", "models"):
        for n in ast.walk(ast.parse(p.read_text())):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
            written += [f"{p.relative_to(ROOT)}:{n.lineno} {ast.unparse(t)}" for t in targets
                        if isinstance(t, ast.Attribute) and t.attr.startswith("_") and not t.attr.startswith("__")
                        and not (isinstance(t.value, ast.Name) and t.value.id in ("self", "cls"))]
    # the one private field written, where its owner offers no public way: typer's coercion of a parameter
    # (cli/coercion.py says why; tests/cli/test_coercion.py holds it to typer's own)
    assert [w for w in written if not w.startswith("cli/coercion.py:") or not w.endswith(" param._runtime_param")] \
        == [], written


@pytest.mark.parametrize("folder", ["core", "cli", "models", "benchmarks"])
def test_no_backslash_continues_a_line(folder):
    """Parentheses, never a backslash, continue a line (PEP 8; a static call walker stops at a backslash)."""
    found = []
    for p in _python(folder):
        text = p.read_text()
        inside = set()  # the lines a string goes on past (a backslash there is the string's)
        for n in ast.walk(ast.parse(text)):
            if isinstance(n, ast.JoinedStr) or (isinstance(n, ast.Constant) and isinstance(n.value, str)):
                inside.update(range(n.lineno, n.end_lineno or n.lineno))
        found += [f"{p.relative_to(ROOT)}:{k}" for k, line in enumerate(text.splitlines(), start=1)
                  if line.endswith(chr(92)) and k not in inside and not line.lstrip().startswith("#")]
    assert not found, found


def test_every_function_of_drift_fits_on_a_screen():
    """drift() and every function of its room fit in 70 lines (docstrings included)."""
    long = [f"{p.relative_to(ROOT)}:{n.name} {n.end_lineno - n.lineno + 1}" for p in _python("core/runs/drift")
            for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.FunctionDef)
            and n.end_lineno - n.lineno + 1 > 70]
    assert not long, long
