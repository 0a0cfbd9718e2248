"""What a drift report becomes for a person and for CI: the terminal's text, the files of `--out`, JUnit XML, the
several-candidate table, and the exit code (``fasteval drift``). ``check_outputs`` refuses, before a model is
loaded, what ``write_outputs`` could not write."""
from __future__ import annotations

from pathlib import Path

from ..errors import cut
from ..results.drift import INVARIANCE_MIN, DriftReport


def drift_text(report: DriftReport) -> str:
    """The report as the terminal shows it: the verdict, per group mean / worst / share below, the worst texts by
    name, the collisions, and the PhysScore side."""
    fmt = (lambda v: "  n/a" if v is None else f"{v:.4f}")
    who = {side: report.identity.get(side, {}) for side in ("reference", "candidate")}
    reasons = report.reasons
    n = len(reasons)
    lines = [f"fasteval drift: {report.verdict}" + (f", {n} reason{'s' * (n != 1)}" if n else "")
             + f" (exit {to_exit_code(report)})",
             f"  {report.candidate} against {report.reference} on {report.texts} texts, threshold {report.threshold}"]
    lines += [f"  reason: {r}" for r in reasons]
    if report.diagnosis is not None:
        from ..runs.drift.diagnosis import diagnosis_line, fix_lines

        lines.append(f"  {diagnosis_line(report.diagnosis)}")
        lines += [f"  {line}" for line in fix_lines(report.diagnosis)]
    lines += [f"  accepted (--accept, shown, not gated): {a}" for a in report.accepted_drift]
    lines += hint_lines(report)
    lines += [
             "  identity: " + "; ".join(f"{side} {w.get('model')!r} ({w.get('kind', '?')}"
                                        + (f", {report.precision[side]}" if report.precision.get(side) else "")
                                        + (f", {w['parameters'] / 1e6:.1f}M parameters" if w.get("parameters") else "")
                                        + (f", {w['max_tokens']} tokens" if w.get("max_tokens") else "")
                                        + (f", onnx {str(w['onnx_sha256'])[:12]}" if w.get("onnx_sha256") else "")
                                        + (f", as a store keeps it: {store_words(w['vectors'])}" if w.get("vectors")
                                           else "")
                                        + ")" for side, w in who.items() if w)
             + (f" -- {report.identity_mismatch}" if report.identity_mismatch else "")
             + (f" -- the expected model, named {report.identity_match}"
                if report.identity_match and report.identity_match != "exactly" else "")
             + (f" -- {report.precision_mismatch}" if report.precision_mismatch else ""),
             f"  mean cosine {report.mean_cosine:.5f}, worst {report.worst_cosine:.5f}; neighbourhood agreement "
             f"(10 nearest) {report.neighbourhood_agreement:.3f}; collisions {report.collided}", "",
             f"  {'group':<16} {'texts':>5} {'mean':>8} {'worst':>8} {'below':>6}  worst text / probes"]
    for g in report.groups.values():
        below = ("n/a" if g.share_below is None else "<1%" if 0 < g.share_below < 0.005 else
                 ">99%" if 0.995 <= g.share_below < 1 else f"{g.share_below:.0%}")  # a drifted text is never 0%
        what = f"failed ({g.failed})" if g.failed else repr(cut(g.worst_text or "", 86)) if g.worst is not None \
            and g.worst < report.threshold else g.probes
        lines.append(f"  {g.name:<16} {g.n:>5} {fmt(g.mean):>8} {fmt(g.worst):>8} {below:>6}  {cut(what, 90)}")
    norms = report.norms
    if norms and not norms.get("reference_unit"):  # the reference's norms carry meaning: how the candidate's compare
        lines.insert(next(k for k, ln in enumerate(lines) if ln.startswith("  mean cosine")) + 1,
                     f"  norms (raw vectors, {norms['compared']} texts): the candidate's over the reference's, worst "
                     f"{norms['worst_ratio']:.4f} for {norms['text']!r}"
                     + ("; the candidate returns unit vectors" if norms.get("candidate_unit") else ""))
    counts = report.token_counts
    if counts.get("differ") and report.verdict == "drifts":  # a clue to a drift; beside a conforming run, noise
        characters = all(e["candidate_tokens"] == len(e["text"]) for e in counts["examples"])
        lines.insert(next(k for k, ln in enumerate(lines) if ln.startswith("  mean cosine")) + 1,
                     f"  token counts: the server counts {counts['differ']} of {counts['compared']} texts otherwise "
                     "than the reference's tokenizer (special tokens added or not, another tokenizer): " + "; ".join(
                         f"{e['text']!r}: the server {e['candidate_tokens']}, the reference's tokenizer "
                         f"{e['reference_tokens']}" for e in counts["examples"])
                     + ("; the server's counts are the texts' characters, not tokens (as infinity's are)"
                        if characters else ""))
    drifted = [w for w in report.worst if w["cosine"] < report.threshold]
    if drifted:
        lines += ["", "  worst texts:"] + [f"    {w['group']}: {shown_text(w['text'])}: {w['cosine']:.4f}"
                                            for w in drifted]
    if report.collisions:
        lines += ["", f"  collisions (apart under the reference, one under the candidate): {report.collided}"]
        lines += [f"    {pair_text(c['text_a'], c['text_b'])}: {c['reference_cosine']:.3f} -> "
                  f"{c['candidate_cosine']:.4f}" for c in report.collisions[:10]]
        if report.collided > 10:
            listed = ("all of them" if report.collided == len(report.collisions) else
                      f"the first {len(report.collisions):,}")
            lines.append(f"    ... and {report.collided - 10:,} more ({listed} in --json)")
    t = report.tokenization
    if t.get("differ") or t.get("truncated"):
        lines += ["", f"  tokenizer: of the {t['compared']} worst drifted texts the candidate tokenizes {t['differ']} "
                      f"into other ids and cuts {t['truncated']} at another length than the reference"]
        lines += [f"    {e['text']!r}: {e['reference_tokens']} tokens {e['reference_ids'][:8]} against "
                  f"{e['candidate_tokens']} {e['candidate_ids'][:8]}" for e in t["examples"]]
    if report.invariance:
        bitwise = report.invariance_tier == "bitwise"
        lines += ["", f"  invariance of the candidate (cosine to each text embedded alone; below {INVARIANCE_MIN}: "
                      "it depends on the batch" + ("; the bitwise tier: any difference drifts" if bitwise else "")
                      + "; max |diff| of a number):"]
        lines += [f"    {r['condition']:<26} " + (f"skipped ({r['skipped']})" if "skipped" in r else
                                                   f"{r['worst']:.6f}  max |diff| {r.get('max_abs', 0.0):.1e}  "
                                                   f"{r['text']!r}") for r in report.invariance]
    for b in report.behaviours:
        other = "the candidate" if b["side"] == "reference" else "the reference"
        limits = ((f"; it takes at most {b['max_tokens']} tokens" if b.get("max_tokens") else "")
                  + (f", {other} truncates at {b['other_truncates_at']}" if b.get("other_truncates_at") else ""))
        lines += ["", f"  behaviour: {b['model']} refuses {b['texts']} input(s) of the {b['group']} group that "
                      f"{other} embeds (the shortest {b['shortest_chars']} characters{limits}: {b['message'][:100]}); "
                      "they are left out of the cosines, the rest of the group is scored"]
    p = report.physscore
    if p:
        ci = ("" if p.get("delta_tau_ci_low") is None
              else f" [{p['delta_tau_ci_low']:.2f}, {p['delta_tau_ci_high']:.2f}]")
        lines += ["", f"  PhysScore: Table 1 tau {p['reference_tau']:.2f} -> {p['candidate_tau']:.2f} "
                      f"(delta {p['delta_tau']:+.2f}{ci}), "
                      f"PACC {p['reference_pacc']:.2f} -> {p['candidate_pacc']:.2f}; "
                      f"{len(p['cells_changed'])} of 20 cells changed"]
    return "\n".join(lines)


def store_words(vectors: dict) -> str:
    """What a side's store keeps, in words: "the first 256 dimensions, binary"."""
    words = [f"the first {vectors['dimensions']} dimensions"] if vectors.get("dimensions") else []
    if vectors.get("vector_quantization"):
        words.append(f"{vectors['vector_quantization']}"
                     + (f" (calibrated on {vectors['calibration']})" if vectors.get("calibration") else ""))
    return ", ".join(words)


def shown_text(text: str) -> str:
    """A text as the terminal shows it: its repr, or, where it is not in NFC (é as e and a combining accent), its
    escapes and its form, so that two texts that differ only there do not look alike."""
    import unicodedata

    if unicodedata.is_normalized("NFC", text):
        return repr(text)
    return f"{ascii(text)} ({'NFD' if unicodedata.is_normalized('NFD', text) else 'not NFC'})"


def pair_text(a: str, b: str) -> str:
    """Two texts of a collision as the terminal shows them: where they look alike but differ only in their
    Unicode form (é as one character, NFC, or as e and a combining accent, NFD), written with escapes, so the
    difference shows."""
    import unicodedata

    if a != b and unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b):
        form = {x: "NFC" if unicodedata.is_normalized("NFC", x) else "NFD" if unicodedata.is_normalized("NFD", x)
                else "mixed" for x in (a, b)}
        return f"{ascii(a)} ({form[a]}) ~ {ascii(b)} ({form[b]}), one text in two Unicode forms"
    return f"{a!r} ~ {b!r}"


def hint_lines(report: DriftReport) -> list[str]:
    """For a candidate of a kind of server known to differ on some groups (llama.cpp: scripts, length), the
    --accept that gates the rest, when those groups drifted and are not accepted yet."""
    from ..runs.drift.identity import known_differences

    pending = [g for g in report.drifted_groups if g not in report.accepted]
    kind, known = known_differences(report.identity.get("candidate", {}), pending)
    if not known:
        return []
    why = "; ".join(f"{g}: {reason}" for g, reason in known.items())
    flags = " ".join(f"--accept {g}" for g in known)
    return [f"  hint: {kind} is known to differ here ({why}); if that is accepted, add {flags} to gate the rest"]


def drift_files(report: DriftReport) -> dict[str, str]:
    """drift.json, drift_groups.csv and drift_worst.csv of a result folder."""
    from ..io import csv_text, dumps

    data = report.to_json()
    drifted = report.drifted_groups  # failed: why a group could not be embedded; drifted: whether it drifts
    groups = [{"group": k, **v, "drifted": k in drifted} for k, v in data["groups"].items()]
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

    drifted = report.drifted_groups
    for g in report.groups.values():
        if g.name in report.accepted and g.name in drifted:
            case(f"group {g.name}", skipped=f"accepted (--accept): worst {fmt_or_na(g.worst)} for {g.worst_text!r}"
                                            if not g.failed else f"accepted (--accept): {g.failed}")
        elif g.failed:
            case(f"group {g.name}", failure=f"could not be embedded: {g.failed}")
        elif g.name in drifted:
            case(f"group {g.name}", failure=f"worst cosine {g.worst:.6f} < {report.threshold} for {g.worst_text!r}",
                 out=f"mean {g.mean:.6f}; share below {g.share_below:.3f}; probes: {g.probes}")
        else:
            case(f"group {g.name}", out=f"n {g.n}; mean {fmt_or_na(g.mean)}; worst {fmt_or_na(g.worst)}")
    collided = f"{report.collided} collision(s)" if report.collisions else None
    case("collisions", failure=collided if report.fail_on_collisions else None,
         out=collided or "none")
    if report.diagnosis is not None:  # what the candidate embeds like, and what to do: beside the failures
        from ..runs.drift.diagnosis import diagnosis_line, fix_lines

        case("diagnosis", out="\n".join([diagnosis_line(report.diagnosis), *fix_lines(report.diagnosis)]))
    case("identity", failure=report.identity_mismatch, out=str(report.identity.get("candidate", {})))
    case("precision", failure=report.precision_mismatch, out=str(report.precision))
    t = report.tokenization
    if t:
        case("tokenizer", out=f"{t['differ']} of {t['compared']} drifted texts tokenized into other ids, "
                              f"{t['truncated']} cut at another length; examples: {t['examples']}")
    for r in report.invariance:
        if "skipped" in r:
            case(f"invariance {r['condition']}", skipped=r["skipped"])
        else:
            bit_exact = report.invariance_tier != "bitwise" or not r.get("max_abs")
            case(f"invariance {r['condition']}", out=f"worst {r['worst']:.6f} for {r['text']!r}",
                 failure=(f"cosine {r['worst']:.6f} < {INVARIANCE_MIN} to {r['text']!r} embedded alone"
                          if r["worst"] < INVARIANCE_MIN else None if bit_exact else
                          f"a number differs by {r['max_abs']:.1e} from {r['text']!r} embedded alone (bitwise)"))
    for b in report.behaviours:
        case(f"behaviour {b['side']} {b['group']}", skipped=f"{b['behaviour']}: {b['texts']} input(s): "
                                                         f"{b['message'][:160]}")
    for k, v in counts.items():
        suite.set(k, str(v))
    return suite


LADDER_COLUMNS = ["candidate", "verdict", "precision", "worst", "mean", "groups_below", "delta_tau",
                  "delta_tau_ci_low", "delta_tau_ci_high", "cells_changed", "batch_worst", "diagnosis", "reasons"]


def ladder_rows(reports: list[DriftReport]) -> list[dict]:
    """One row per candidate of a several-candidate drift (a quantization ladder, say): its verdict, worst and
    mean cosine, how many groups drifted or failed, Δτ with its interval, the cells whose τ changed, and the worst
    invariance cosine."""
    rows = []
    for r in reports:
        p = r.physscore or {}
        batch = [x["worst"] for x in r.invariance if x.get("worst") is not None]
        rows.append({"candidate": r.candidate, "verdict": r.verdict, "precision": r.precision.get("candidate"),
                     "worst": r.worst_cosine, "mean": r.mean_cosine,
                     "groups_below": len(r.drifted_groups),
                     "delta_tau": p.get("delta_tau"), "delta_tau_ci_low": p.get("delta_tau_ci_low"),
                     "delta_tau_ci_high": p.get("delta_tau_ci_high"), "cells_changed": len(p.get("cells_changed", [])),
                     "batch_worst": min(batch) if batch else None,
                     "diagnosis": (r.diagnosis or {}).get("variant"),
                     "reasons": "; ".join(r.reasons + [f"accepted: {a}" for a in r.accepted_drift])})
    return rows


def ladder_text(rows: list[dict], reference: str) -> str:
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
                     + cut((f"embeds like {r['diagnosis']}; " if r.get("diagnosis") else "") + r["reasons"], 160))
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
    rows = ladder_rows(reports)
    files = {f"{k + 1}/{name}": text for k, r in enumerate(reports) for name, text in drift_files(r).items()}
    files["ladder.json"] = dumps({"reference": reference, "ladder": rows})
    files["ladder.csv"] = csv_text(rows, LADDER_COLUMNS)
    text = "\n\n".join(drift_text(r) for r in reports) + "\n\n" + ladder_text(rows, reference)
    return {"reference": reference, "candidates": [r.to_json() for r in reports], "ladder": rows}, files, text


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
