"""What the commands print: the notebook's printouts of each exam, the Table 1 row, the sweep summary.

Only formatting: every number comes from the exams' typed results.
"""
from __future__ import annotations

from math import isnan

import typer

echo = typer.echo


def variants_text(summary: dict) -> str:
    """A protocol's variants (languages, templates, formats): tau, PACC, AVG and the alignment, x100."""
    rows = summary.get("by_variant")
    if not rows:
        return ""
    def num(value, width: int, digits: int = 2) -> str:  # a variant whose cells have no tau shows n/a
        return f"{'n/a':>{width}}" if value is None else f"{value:>{width}.{digits}f}"

    lines = [f"  {'variant':<14} {'tau':>6} {'PACC':>6} {'AVG':>6}   aligned: recall@1  mean sim"]
    for label, r in rows.items():
        aligned = (f"{num(r['alignment_recall_at_1'], 17, 1)} {num(r['alignment_mean_sim'], 9, 1)}"
                   if "alignment_recall_at_1" in r else f"{'(reference)':>17}")
        lines.append(f"  {label:<14} {num(r['tau_display'], 6)} {num(r['pacc_display'], 6)} "
                     f"{num(r['avg_display'], 6)}   {aligned}")
    return "\n".join(lines)


def print_result(result, baselines=()) -> None:
    """Each exam's printout (the notebook's), in registry order, then the Table 1 row."""
    echo("\n\n".join(f"{title}\n{body}" for title, body in result.printouts()))
    print_table1_row(result, baselines)


def print_table1_row(result, baselines=()) -> None:
    """The Table 1 row (x100) with its intervals and variants (nothing without Exam 1), and the surface-form
    baselines' rows below it (what string similarity alone scores)."""
    if "exam1" not in result.exams:
        return
    s = result.exams["exam1"].summary()
    fmt = (lambda v: "  n/a" if v is None else f"{v:5.2f}")
    name = result.display_name
    width = max(22, len(name))
    echo(f"\n{'Table 1 row (x100)':<{width}}  tau    PACC    AVG")
    echo(f"{name:<{width}} {fmt(s['tau_display'])}  {fmt(s['pacc_display'])}  {fmt(s['avg_display'])}")
    echo(caveats_text(s))
    echo(published_text(result))
    if baselines:
        echo("  surface form (string similarity alone; a model's tau is read beside these): " + "; ".join(
            f"{b['model'].removeprefix('surface: ')} tau {fmt(b['tau']).strip()} PACC {fmt(b['pacc']).strip()} "
            f"AVG {fmt(b['avg']).strip()}" for b in baselines))
    if s.get("by_variant"):
        echo(f"\nBy variant of the {result.protocol} protocol (x100)")
        echo(variants_text(s))


def published_text(result) -> str:
    """The run beside the authors' published numbers: the reproduction line of one of the paper's 24 (or why it has
    none to meet), and where its Table 1 tau sits among the 24 (empty when neither applies)."""
    return "\n".join(f"  {line}" for line in result.beside_published().lines())


def caveats_text(s: dict) -> str:
    """The intervals and the variants beside the Table 1 row (extensions; empty when absent)."""
    lines = []
    if s.get("tau_ci_low") is not None:
        lines.append("  95% bootstrap interval: " + "  ".join(
            f"{name} [{s[f'{name}_ci_low']:.2f}, {s[f'{name}_ci_high']:.2f}]" for name in ("tau", "pacc", "avg")))
    if s.get("strict_tau") is not None:
        lines.append(f"  variants (x100; random = exact expectation): tau {s['tau']:.2f} (random "
                     f"{s['random_tau']:.2f}), strict tau "
                     f"{s['strict_tau']:.2f} (random {s['random_strict_tau']:.2f}), all-anchors tau "
                     f"{s['all_anchors_tau']:.2f} (random {s['random_all_anchors_tau']:.2f})")
    return "\n".join(lines)


def print_summary(outcomes) -> None:
    """One Table 1 row per model of the sweep (computed here, or read back from its folder)."""
    echo(f"\n{'model':<40} {'status':<8}   tau    PACC    AVG   folder")
    for o in outcomes:
        result = o.read()
        s = result.exams["exam1"].summary() if result is not None and "exam1" in result.exams else {}
        fmt = (lambda v: "  n/a" if v is None else f"{v:5.2f}")
        echo(f"{o.model:<40} {o.status:<8} {fmt(s.get('tau_display'))}  {fmt(s.get('pacc_display'))}  "
             f"{fmt(s.get('avg_display'))}   {o.path or o.message}")


def print_ladder(rows: list[dict], baselines=(), matched=None) -> None:
    """One model's vector ladder: a rung a line, τ with its interval, PACC, AVG, Δτ against the float vectors with
    its paired interval, and the bytes a store keeps a vector."""
    def interval(low, high) -> str:
        return "" if low is None or high is None else f"[{low:.2f}, {high:.2f}]"

    width = max(11, *(len(r["rung"]) + 1 for r in rows))
    echo(f"\nVector ladder of {rows[0]['model']} (x100; Δτ: the rung less the float vectors, paired bootstrap)")
    echo(f"  {'rung':<{width}} {'bytes':>6} {'tau':>6} {'95% interval':>16} {'PACC':>6} {'AVG':>6} {'Δτ':>6} "
         f"{'95% interval':>16}")
    for r in rows:
        delta = "" if r["rung"] == "full" else f"{r['delta_tau']:>6.2f}"
        echo(f"  {r['rung']:<{width}} {r['bytes_per_vector']:>6} {r['tau']:>6.2f} "
             f"{interval(r['tau_ci_low'], r['tau_ci_high']):>16} {r['pacc']:>6.2f} {r['avg']:>6.2f} {delta:>6} "
             f"{interval(r['delta_tau_ci_low'], r['delta_tau_ci_high']):>16}")
    for b in baselines:  # what string similarity alone scores, beside the rungs
        echo(f"  {b['model']}: tau {b['tau']:.2f}, PACC {b['pacc']:.2f}, AVG {b['avg']:.2f}")
    for budget, same in (matched or {}).items():  # at equal bytes (the library's view): fewer dimensions or bits?
        echo(f"  at {budget} bytes a vector: " + "; ".join(
            f"{r['rung']} {r['tau']:.2f} ({r['delta_tau']:+.2f})" for r in same))


def print_needs(needs) -> None:
    """``fasteval sweep --dry-run``: one line per model (``models.sources.needs.Needs``), then the ones this machine
    cannot export and the ways out."""
    def gb(n):
        return "?" if n is None else f"{n / 1024 ** 3:.1f}"

    def params(n):
        return "?" if n is None else (f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M")

    def export(n):
        if n.export_seconds is None:
            return "-" if n.exported or n.static or n.source == "served" else "?"
        seconds = n.export_seconds
        return f"~{seconds:.0f} s" if seconds < 90 else f"~{seconds / 60:.0f} min"

    echo(f"{'model':<39} {'source':<7} {'params':>6} {'weights GB':>10} {'peak GB':>8} {'export':>7} {'cached':<13} "
         f"{'this machine':<24} notes")
    for n in needs:
        if n.source == "served":  # nothing is fetched or cached for it, and a dry run does not call it
            cached, here = "-", "not called"
        else:
            cached = "exported" if n.exported and not n.static else ("yes" if n.cached else "no")
            fits = {True: "fits", False: "needs more mem", None: "?"}[n.fits]
            here = (f"offline, {fits}" if fits != "fits" else "offline") if n.offline else fits
        notes = "; ".join(x for x in ("static: model2vec embeds it, nothing to export" if n.static else "",
                                      "gated" if n.gated else "", "remote code" if n.remote_code else "",
                                      f"prompts: {n.prompts} (none used, as in the paper; --prompt or "
                                      "--prompt-name picks one)" if n.prompts else "") if x)
        echo(f"{n.model[:39]:<39} {n.source:<7} {params(n.params):>6} {gb(n.weights_bytes):>10} "
             f"{gb(n.peak_bytes):>8} {export(n):>7} {cached:<13} {here:<24} {notes}")
    memory = next((n.memory for n in needs if n.memory), None)
    echo(f"\nPeak: the memory an export takes (about 3x the {needs[0].dtype if needs else 'fp32'} weights), or the "
         f"weights' when the export is cached; this machine has {gb(memory)} GB. 'needs more mem': more memory "
         "than this machine has.")
    if any(n.export_seconds is not None for n in needs):
        echo("Export: about how long each export takes on a 2-core machine (measured from 23M to 560M parameters; "
             "within about 2x, less with more cores), once: the export is cached for every later run.")
    if any(n.source == "served" for n in needs):
        echo("A served model: nothing is fetched or cached here for it; whether it answers is not checked by a "
             "dry run.")
    refused = [n for n in needs if n.refusal]
    for n in refused:
        echo(f"left out: {n.refusal}")
    for ways in dict.fromkeys(n.ways_out for n in refused):
        echo(f"  ways out: {ways}")


def terminal_safe(text: str) -> str:
    """``text`` with every character a terminal would act on (backspace, bell, escape, ...) written as its
    escape (\\x08), so an input is shown as it is and never rewrites the screen."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def print_check(result) -> None:
    """The check as a table (by similarity), the distance ranking, tau, PACC and the discordant pairs."""
    def num(value):
        return "n/a" if value is None or isnan(value) else f"{value:.3f}"

    width = max(len(terminal_safe(c.text)) for c in result.candidates) + 2
    echo(f"fasteval check: {result.model}, {result.similarity} similarity to {result.anchor!r}"
         + (f" (quantities normalized: embedded as {result.anchor_encoded_as!r})" if result.normalized else ""))
    ratios = any(c.log_ratio is not None for c in result.candidates)  # none for temperatures (see the note)
    ratio_head = f"  {'log10 ratio':>11}" if ratios else ""
    ranks_head = "  rank: sim  dist" if len(result.candidates) > 1 else ""
    echo(f"  {'candidate':<{width}} {'similarity':>10}  {'distance':>14}{ratio_head}{ranks_head}")
    def row(c, ranks: str = "") -> str:
        distance = f"{c.distance:g} {c.unit_symbol}"
        encoded = f"   (embedded as {c.encoded_as!r})" if c.encoded_as != c.text else ""
        ratio = f"  {num(c.log_ratio):>11}" if ratios else ""
        return f"  {terminal_safe(c.text):<{width}} {c.similarity:>10.3f}  {distance:>14}{ratio}{ranks}{encoded}"

    if len(result.candidates) == 1:  # "how similar are these two?": similarity and distance, no ranking
        echo(row(result.candidates[0]))
        echo("  one candidate: no ranking (pass two or more candidates to see whether similarity follows distance)")
    else:
        _print_ranking(result, row, num)
    for note in result.notes:
        echo(f"  note: {terminal_safe(note)}")


def _print_ranking(result, row, num) -> None:
    """The candidates by similarity with both ranks, tau, PACC and the discordant pairs."""
    sim_rank, dist_rank = result.ranks()
    for c in result.by_similarity():
        echo(row(c, f"  {sim_rank[c.text]:>9} {dist_rank[c.text]:>5}"))
    distinct = len({c.distance for c in result.candidates})
    verdict = ("nothing to rank: every candidate is as far from the anchor" if distinct < 2 else
               "the physical order" if not result.discordant_count else "not the physical order")
    echo(f"  Kendall tau-b = {num(result.tau)}   pairwise accuracy = {num(result.pacc)}   ({verdict})")
    for line in result.discordant_lines():
        echo(f"  discordant: {terminal_safe(line)}")
    unlisted = result.discordant_count - len(result.discordant_pairs)
    if unlisted > 0:
        echo(f"  ... and {unlisted} more discordant pairs ({result.discordant_count} in all; the largest gaps are "
             "listed first; --all-discordant lists every one)")


def fmt_p(p: float) -> str:
    """A p-value to 4 decimals; one that would show as 0.0000 is "<0.0001" (a bootstrap never proves p = 0)."""
    return "<0.0001" if 0 < p < 0.00005 else f"{p:.4f}"


def print_comparison(comparison) -> None:
    """One line per pair of models: delta tau x100, its 95% interval, p and Holm's p, significant or not; then
    each other run of a model against its model, apart."""
    width = max(len(m) for m in [*comparison.models, *(p.model_a for p in comparison.runs)]) + 2

    def row(p) -> str:
        mark = "" if p.significant else "  n.s."
        return (f"{p.model_a:<{width}} {p.model_b:<{width}} {p.delta_tau:>9.2f} "
                f"{f'[{p.ci_low:.2f}, {p.ci_high:.2f}]':>17} {fmt_p(p.p_value):>7} {fmt_p(p.p_holm):>9}{mark}")

    echo(f"Paired bootstrap of delta tau x100 ({comparison.resamples} resamples; {comparison.group})")
    echo(f"{'model A':<{width}} {'model B':<{width}} {'delta tau':>9} {'95% interval':>17} {'p':>7} "
         f"{'p (Holm)':>9}")
    for p in sorted(comparison.pairs, key=lambda p: p.p_holm):
        echo(row(p))
    if comparison.runs:
        echo("\nOther runs of a model against their own model (not other models; Holm within these):")
        for p in comparison.runs:
            echo(row(p))
    for line in comparison.skipped:
        echo(f"skipped: {line}")
