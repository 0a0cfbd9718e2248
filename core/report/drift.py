"""What a drift report becomes for a person and for CI: the terminal's text, the files of `--out`, JUnit XML, the
several-candidate table, and the exit code (``fasteval drift``). ``check_outputs`` refuses, before a model is
loaded, what ``write_outputs`` could not write."""
from __future__ import annotations

from pathlib import Path

from ..errors import cut
from ..results.drift import DriftReport, drifted
from ..results.drift_findings import PLACES, Collisions, Diagnosis, Identity, Invariance, PhysScore, shown_text


def drift_text(report: DriftReport) -> str:
    """The report as the terminal shows it: the verdict and its reasons, what each finding says under them, the
    identity, the means, per group mean / worst / share below, the worst texts by name, and each finding's
    details (collisions, tokenization, invariance, behaviours, the PhysScore side)."""
    fmt = (lambda v: "  n/a" if v is None else f"{v:.4f}")
    placed = {place: [ln for f in report.shown() for ln in f.lines(report).get(place, [])] for place in PLACES}
    reasons = report.reasons
    n = len(reasons)
    lines = [f"fasteval drift: {report.verdict}" + (f", {n} reason{'s' * (n != 1)}" if n else "")
             + f" (exit {to_exit_code(report)})",
             f"  {report.candidate} against {report.reference} on {report.texts} texts, threshold {report.threshold}"]
    lines += [f"  reason: {r}" for r in reasons]
    lines += placed["verdict"]
    lines += [f"  accepted (--accept, shown, not gated): {a}" for a in report.accepted_drift]
    lines += placed["hints"] + placed["identity"]
    lines += [f"  mean cosine {report.mean_cosine:.5f}, worst {report.worst_cosine:.5f}; neighbourhood agreement "
              f"(10 nearest) {report.neighbourhood_agreement:.3f}; collisions {report.get(Collisions).collided}"]
    lines += placed["summary"]
    lines += ["", f"  {'group':<16} {'texts':>5} {'mean':>8} {'worst':>8} {'below':>6}  worst text / probes"]
    for g in report.groups.values():
        below = ("n/a" if g.share_below is None else "<1%" if 0 < g.share_below < 0.005 else
                 ">99%" if 0.995 <= g.share_below < 1 else f"{g.share_below:.0%}")  # a drifted text is never 0%
        what = (f"failed ({g.failed})" if g.failed else repr(cut(g.worst_text or "", 86))
                if drifted(g.worst, report.threshold) else g.probes)
        lines.append(f"  {g.name:<16} {g.n:>5} {fmt(g.mean):>8} {fmt(g.worst):>8} {below:>6}  {cut(what, 90)}")
    drifted_texts = [w for w in report.worst if drifted(w.cosine, report.threshold)]
    if drifted_texts:
        lines += ["", "  worst texts:"] + [f"    {w.group}: {shown_text(w.text)}: {w.cosine:.4f}"
                                            for w in drifted_texts]
    return "\n".join(lines + placed["details"])


def drift_files(report: DriftReport) -> dict[str, str]:
    """drift.json, drift_groups.csv and drift_worst.csv of a result folder."""
    from ..io import csv_text, dumps

    data = report.to_json()
    drifted_groups = report.drifted_groups  # failed: why a group could not be embedded; drifted: whether it drifts
    groups = [{"group": k, **v, "drifted": k in drifted_groups} for k, v in data["groups"].items()]
    return {"drift.json": dumps(data),
            "drift_groups.csv": csv_text(groups, ["group", "n", "mean", "worst", "share_below", "drifted",
                                                  "worst_text", "failed", "probes"]),
            "drift_worst.csv": csv_text(data["worst"], ["group", "text", "cosine"])}


def to_exit_code(report: DriftReport) -> int:
    """0 conforms, 1 drifts (at the default gates or those asked for): a gate is never passed by leaving out an
    option."""
    return 1 if report.verdict == "drifts" else 0


def drift_junit(reports: list[DriftReport]) -> str:
    """The reports as JUnit XML for a CI system, one test suite per candidate (under <testsuites> when there are
    several): one test case per group (failing when a text in it drifted or it could not be embedded, with the
    worst text), per invariance condition, one for the collisions, one for the identity; each behaviour a skipped
    case that says what it is."""
    from xml.etree import ElementTree as ET

    suites = [_junit_suite(r) for r in reports]
    root = suites[0] if len(suites) == 1 else ET.Element("testsuites", name="fasteval drift")
    if len(suites) > 1:
        root.extend(suites)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


JUNIT_MESSAGE_CHARS = 300  # a failure message a CI viewer shows in one piece; the whole text stays in --json


def junit_name(text: str) -> str:
    """A name CI viewers show as one: a class name of letters, digits, '_' and '-' only (a URL's dots and
    slashes would be split into a package tree)."""
    import re

    return re.sub(r"[^0-9A-Za-z_-]+", "_", text).strip("_") or "candidate"


def _junit_suite(report: DriftReport):
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name=f"fasteval drift: {report.candidate}", tests="0", failures="0",
                       skipped="0")
    counts = {"tests": 0, "failures": 0, "skipped": 0}

    def case(name: str, failure: str | None = None, skipped: str | None = None, out: str = "") -> None:
        element = ET.SubElement(suite, "testcase", classname=f"fasteval_drift_{junit_name(report.candidate)}",
                                name=name)
        counts["tests"] += 1
        if failure is not None:
            ET.SubElement(element, "failure", message=cut(failure, JUNIT_MESSAGE_CHARS)).text = failure
            counts["failures"] += 1
        elif skipped is not None:
            ET.SubElement(element, "skipped", message=cut(skipped, JUNIT_MESSAGE_CHARS))
            counts["skipped"] += 1
        if out:
            ET.SubElement(element, "system-out").text = out

    drifted_groups = report.drifted_groups
    for g in report.groups.values():
        if g.name in report.accepted and g.name in drifted_groups:
            case(f"group {g.name}", skipped=f"accepted (--accept): worst {fmt_or_na(g.worst)} for {g.worst_text!r}"
                                            if not g.failed else f"accepted (--accept): {g.failed}")
        elif g.failed:
            case(f"group {g.name}", failure=f"could not be embedded: {g.failed}")
        elif g.name in drifted_groups:
            case(f"group {g.name}", failure=f"worst cosine {g.worst:.6f} < {report.threshold} for {g.worst_text!r}",
                 out=f"mean {g.mean:.6f}; share below {g.share_below:.3f}; probes: {g.probes}")
        else:
            case(f"group {g.name}", out=f"n {g.n}; mean {fmt_or_na(g.mean)}; worst {fmt_or_na(g.worst)}")
    for finding in report.shown():
        for c in finding.cases(report):
            case(c.name, failure=c.failure, skipped=c.skipped, out=c.out)
    for k, v in counts.items():
        suite.set(k, str(v))
    return suite


# The several-candidate table (ladder.csv, the file's name since it first shipped; the vector ladder is
# core/runs/ladder.py's)
CANDIDATE_COLUMNS = ["candidate", "verdict", "precision", "worst", "mean", "groups_below", "delta_tau",
                     "delta_tau_ci_low", "delta_tau_ci_high", "cells_changed", "batch_worst", "diagnosis", "reasons"]


def candidate_rows(reports: list[DriftReport]) -> list[dict]:
    """One row per candidate of a several-candidate drift (a quantization ladder, say): its verdict, worst and
    mean cosine, how many groups drifted or failed, Δτ with its interval, the cells whose τ changed, and the worst
    invariance cosine."""
    rows = []
    for r in reports:
        p = r.get(PhysScore)
        rows.append({"candidate": r.candidate, "verdict": r.verdict,
                     "precision": r.get(Identity).precision.get("candidate"),
                     "worst": r.worst_cosine, "mean": r.mean_cosine,
                     "groups_below": len(r.drifted_groups),
                     "delta_tau": p.delta_tau, "delta_tau_ci_low": p.delta_tau_ci_low,
                     "delta_tau_ci_high": p.delta_tau_ci_high, "cells_changed": len(p.cells_changed),
                     "batch_worst": r.get(Invariance).worst, "diagnosis": r.get(Diagnosis).variant,
                     "reasons": "; ".join(r.reasons + [f"accepted: {a}" for a in r.accepted_drift])})
    return rows


def candidates_text(rows: list[dict], reference: str) -> str:
    """The several-candidate table as the terminal shows it."""
    def num(v, f="{:.5f}"):
        return "n/a" if v is None else f.format(v)

    width = max(len("candidate"), *(len(r["candidate"]) for r in rows))
    lines = [f"fasteval drift: {len(rows)} candidates against {reference}", "",
             f"  {'candidate':<{width}} {'verdict':<8} {'weights':<8} {'worst':>8} {'mean':>8} {'groups':>6} "
             f"{'delta tau [95%]':>22} {'cells':>5} {'batch':>8}  why"]
    for r in rows:
        ci = "" if r["delta_tau_ci_low"] is None else f" [{r['delta_tau_ci_low']:.2f}, {r['delta_tau_ci_high']:.2f}]"
        lines.append(f"  {r['candidate']:<{width}} {r['verdict']:<8} {r['precision'] or '?':<8} {num(r['worst']):>8} "
                     f"{num(r['mean']):>8} {r['groups_below']:>6} {num(r['delta_tau'], '{:+.2f}') + ci:>22} "
                     f"{r['cells_changed']:>5} {num(r['batch_worst'], '{:.4f}'):>8}  "
                     + (f"embeds like {r['diagnosis']}; " if r.get("diagnosis") else "") + r["reasons"])  # whole
    return "\n".join(lines)


def fmt_or_na(value) -> str:
    return "n/a" if value is None else f"{value:.6f}"


def outputs(reports: list[DriftReport], reference: str) -> tuple[dict, dict[str, str], str]:
    """What a drift of one or several candidates shows: (its JSON, its `--out` files, its text). One candidate:
    its report as it is; several: each report, and the table of them all (``ladder``, ``ladder.csv``, one folder
    per candidate)."""
    from ..io import csv_text, dumps

    if len(reports) == 1:
        return reports[0].to_json(), drift_files(reports[0]), drift_text(reports[0])
    rows = candidate_rows(reports)
    files = {f"{candidate_folder(k, r.candidate)}/{name}": text for k, r in enumerate(reports)
             for name, text in drift_files(r).items()}
    files["ladder.json"] = dumps({"reference": reference, "ladder": rows})
    files["ladder.csv"] = csv_text(rows, CANDIDATE_COLUMNS)
    text = "\n\n".join(drift_text(r) for r in reports) + "\n\n" + candidates_text(rows, reference)
    return {"reference": reference, "candidates": [r.to_json() for r in reports], "ladder": rows}, files, text


def candidate_folder(k: int, candidate: str) -> str:
    """The `--out` folder of the ``k``-th candidate (from 0) of several: its place and its name, as a folder name
    ("2-http_127_0_0_1_8081_v1", "3-m-q4_0")."""
    name = candidate if "://" in candidate else candidate.rstrip("/").rsplit("/", 1)[-1]
    return f"{k + 1}-{junit_name(name)[:80]}"


def output_marker(candidates: int) -> str:
    """The file an earlier drift output of this kind holds (what lets ``--out`` replace it): one candidate's
    drift.json, several candidates' ladder.csv."""
    return "drift.json" if candidates <= 1 else "ladder.csv"


def _inside(junit: str | Path, out: str | Path | None) -> str | None:
    """The JUnit file's name inside the ``--out`` folder when it goes there (``--out O --junit O/junit.xml``, the
    usual CI layout), else None."""
    if out is None:
        return None
    junit_path, out_path = Path(junit).expanduser().resolve(), Path(out).expanduser().resolve()
    return junit_path.name if junit_path.parent == out_path else None


def check_outputs(candidates: int, out: str | Path | None = None, junit: str | Path | None = None) -> None:
    """Where a drift of ``candidates`` candidates writes, checked before any work is done: ``out`` a folder that is
    new, empty or an earlier drift output; ``junit`` a file in a writable folder, or a file of the ``out`` folder
    itself (written with it). OutputError or InputError."""
    from ..errors import InputError
    from ..io import check_output_folder, check_writable

    if out is not None:
        check_output_folder(Path(out), "the drift report", output_marker(candidates))
    if junit is not None:
        if Path(junit).expanduser().is_dir():
            raise InputError(f"--junit {junit} is a folder; it takes the file to write.",
                             f"pass a file name, such as --junit {Path(junit) / 'drift.xml'}.")
        name = _inside(junit, out)
        if name in ("drift.json", "drift_groups.csv", "drift_worst.csv", "ladder.json", "ladder.csv"):
            raise InputError(f"--junit {junit} is a file the drift report writes in --out {out}.",
                             f"pass another name, such as --junit {Path(out or '.') / 'junit.xml'}.")
        if name is None:
            check_writable(Path(junit).expanduser().parent, "the folder of --junit",
                           "pass --junit FILE in a folder you can write.")


def write_outputs(reports: list[DriftReport], reference: str, out: str | Path | None = None,
                  junit: str | Path | None = None) -> tuple[dict, str]:
    """``outputs`` of ``reports``, with the `--out` folder and the JUnit file written (atomically) where asked:
    (the JSON, the text)."""
    from ..io import atomic_write, write_output_folder

    data, files, text = outputs(reports, reference)
    name = None if junit is None else _inside(junit, out)
    if name is not None:  # the JUnit file is one of the folder's files: written with it, never replaced after it
        files = {**files, name: drift_junit(reports)}
    if out is not None:
        write_output_folder(Path(out), files, what="the drift report", marker=output_marker(len(reports)))
    if junit is not None and name is None:
        atomic_write(Path(junit), drift_junit(reports))
    return data, text
