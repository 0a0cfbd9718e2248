"""The authors' published numbers for the paper's 24 models, as data, and what a run is beside them.

``core/protocol/builtin/authors-notebook.json`` is a transcription of what the authors' notebook printed
(``SOURCE`` names the repository, the notebook and the commit; the file's own ``source`` and ``not_printed`` fields
say how it was checked and what is derived). It holds, for all 24 models, every Exam 1 cell as its k (concordant
less discordant pairs) over its pairs and the Exam 2 associations (6 decimals as printed), and for the 8 baseline
models the Exam 3 probe rows (3 decimals as printed). Table 1 and its per-quantity and per-range breakdown (Table 2)
are derived here from the cells with the protocol's formula (PROTOCOL.md 1.5), never typed in.

``published()`` reads them (once); ``published_model(name)`` finds one of the 24 by registry name, Hugging Face
id or model id; ``reproduction(result)`` says how a run of one of the 24 compares (PROTOCOL.md 5: one flipped
near-tie is a runtime's, more is not); ``place(tau)`` where a Table 1 τ sits among the 24.

Reading them imports nothing heavy (json only).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).resolve().parent / "protocol" / "builtin" / "authors-notebook.json"
# The sha256 of the file as it was transcribed from the notebook's printed outputs (SOURCE) and checked (its own
# ``source`` field says how): a test holds the shipped copy to it, so an edit of a number shows as a failing test
DATA_SHA256 = "f23e316e1e65aa9ee3ea8e610f1225690a799a631058e0a1e9c750638e51d722"
SOURCE = {"repository": "https://github.com/flipz357/embed-and-measure",
          "notebook": "measurements_full_experimentation_output.ipynb",
          "commit": "1b41c0f5a93c691f88b4a405f07fd3b1e02e8200",
          "paper": "Embedding Models Measure in Peculiar Ways (Opitz & Michail, arXiv 2609.20821)"}
# A cell whose k differs by this much is one pair flipped (a near-tie another runtime may order the other way)
FLIPPED_PAIR_K = 2
# Exam 2 is printed to 6 decimals, Exam 3 to 3: a difference within half the last printed digit is the printing's
PRINTED_HALF_DIGIT = {"exam2": 0.5e-6, "exam3": 0.5e-3}
# Exam 3's printed columns -> the result's Exam3Row fields
_EXAM3_FIELDS = {"probe_tau": "kendall", "probe_pacc": "pairwise", "cosine_tau": "kendall_cosine",
                 "cosine_pacc": "pairwise_cosine", "probe_tau_sd": "kendall_sd_splits",
                 "cosine_tau_sd": "kendall_cosine_sd_splits"}


@dataclass(frozen=True)
class PublishedModel:
    """One of the paper's 24 as the authors' notebook printed it."""
    model_id: str  # the notebook's file-name id (all_MiniLM_L6_v2)
    hf_id: str
    group: str  # baseline, PT1, PT2, PT3 (the paper's groups)
    cells: dict[str, tuple[int, int]]  # "meter|local_0_10" -> (k, pairs)
    exam2: dict[str, dict[str, float]] = field(default_factory=dict)  # "all" -> {char_lev, token_lev, num_dist}
    exam3: dict[str, Any] | None = None  # rows_3_decimals, summary (the 8 baselines only)

    @property
    def name(self) -> str:
        """The model's name as a person reads it (the Hugging Face id's last part)."""
        return self.hf_id.rsplit("/", 1)[-1]

    def table1(self, exact: bool = False) -> dict[str, Any]:
        """Table 1's row x100, derived from the 20 cells (PROTOCOL.md 1.5: unweighted means; PACC = (1 + tau) / 2;
        AVG = (tau + PACC) / 2); ``exact``: as Fractions (what a table rounds half up), else floats."""
        return _row([self._exact_tau(c) for c in self.cells], exact)

    def breakdown(self, exact: bool = False) -> dict[str, dict[str, Any]]:
        """Table 2: the Table 1 row of each quantity and of each range (x100), derived from their cells."""
        out: dict[str, dict[str, Any]] = {}
        for part in (0, 1):
            for key in dict.fromkeys(c.split("|")[part] for c in self.cells):
                out[key] = _row([self._exact_tau(c) for c in self.cells if c.split("|")[part] == key], exact)
        return out

    def _exact_tau(self, cell: str) -> Fraction:
        k, pairs = self.cells[cell]
        return Fraction(k, pairs)


def _row(taus: list[Fraction], exact: bool) -> dict[str, Any]:
    tau = sum(taus, Fraction(0)) / len(taus)
    pacc = sum(((1 + t) / 2 for t in taus), Fraction(0)) / len(taus)
    row = {"tau": 100 * tau, "pacc": 100 * pacc, "avg": 100 * (tau + pacc) / 2}
    return row if exact else {k: float(v) for k, v in row.items()}


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return json.loads(DATA_FILE.read_text(encoding="utf-8"))


def published() -> dict[str, PublishedModel]:
    """The 24 models the authors published, by the notebook's model id, in the notebook's order."""
    return {model_id: PublishedModel(model_id, m["hf_id"], m["group"],
                                     {cell: (int(v["k"]), int(v["pairs"])) for cell, v in m["exam1"].items()},
                                     m.get("exam2") or {}, m.get("exam3"))
            for model_id, m in _data()["models"].items()}


def published_model(name: str) -> PublishedModel | None:
    """One of the 24 by a name a user passes: a registry name, a Hugging Face id, the notebook's model id, or a
    folder or served id that ends in one of them (``models/all-MiniLM-L6-v2``); None for any other model."""
    tail = name.strip().rstrip("/").rsplit("/", 1)[-1]
    for model in published().values():
        if name.strip() == model.hf_id or model.model_id in (tail, tail.replace("-", "_")) or tail == model.name:
            return model
    return None


def place(tau: float, exclude: str | None = None) -> str:
    """Where a Table 1 τ (x100) sits among the published 24 (``exclude``: a model id left out, the run's own)."""
    ranked = sorted(((m.table1()["tau"], m.name) for m in published().values() if m.model_id != exclude),
                    reverse=True)
    above = [n for t, n in ranked if t > tau]
    below = [n for t, n in ranked if t <= tau]
    rank = len(above) + 1
    if not above:
        return f"first of the paper's {len(ranked)}, above {below[0]}"
    if not below:
        return f"below all of the paper's {len(ranked)}, under {above[-1]}"
    return f"{rank} of {len(ranked) + 1}, between {above[-1]} and {below[0]}"


@dataclass
class Reproduction:
    """A run of one of the 24 against the authors' printed numbers."""
    model: str  # the published model's name
    label: str  # "" for the float vectors, else the form the run was scored in ("int8", "256 dims")
    cells_equal: int
    cells: int
    differing: list[dict[str, Any]]  # cell, published k, run's k, pairs apart
    flipped_near_tie: str | None  # the one cell one pair apart, where that is all that differs
    exam2_max_diff: float | None = None
    exam3_max_diff: float | None = None

    @property
    def reproduced(self) -> bool:
        """Every cell equal, or all but one near-tie one pair apart (PROTOCOL.md 5)."""
        return not self.differing or (len(self.differing) == 1 and self.flipped_near_tie is not None)

    def line(self) -> str:
        """The reproduction line the terminal prints after the Table 1 row."""
        what = f"against the authors' {self.model}" + (f", scored as {self.label} (what the form moves)"
                                                        if self.label else "")
        text = f"reproduction {what}: {self.cells_equal} of {self.cells} Exam 1 cells equal"
        if self.flipped_near_tie and len(self.differing) == 1:
            text += f" ({self.flipped_near_tie}: one near-tie pair flipped, allowed by PROTOCOL.md 5)"
        elif self.differing:
            shown = ", ".join(f"{d['cell']} ({d['pairs_apart']} pair{'s' * (d['pairs_apart'] != 1)})"
                              for d in self.differing)
            text += f"; differ: {shown}"
        for exam, diff in (("Exam 2", self.exam2_max_diff), ("Exam 3", self.exam3_max_diff)):
            if diff is not None:
                text += f"; {exam} largest difference {diff:.2g}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "label": self.label, "cells_equal": self.cells_equal, "cells": self.cells,
                "differing": self.differing, "flipped_near_tie": self.flipped_near_tie,
                "exam2_max_diff": self.exam2_max_diff, "exam3_max_diff": self.exam3_max_diff,
                "reproduced": self.reproduced, "source": SOURCE}


def reproduction(result: Any) -> Reproduction | str | None:
    """How ``result`` (a ModelResult) of one of the 24 compares with the authors' numbers; a sentence where it
    cannot (another protocol: no published numbers to meet); None for a model that is not one of the 24."""
    model = published_model(result.model)
    if model is None:
        return None
    if not result.on_paper_protocol:
        return (f"the authors published {model.name} under the paper's protocol only; a run of the "
                f"{result.protocol} protocol has no published numbers to meet")
    exam1 = result.exams.get("exam1")
    differing: list[dict[str, Any]] = []
    equal = 0
    if exam1 is not None:
        for cell in exam1.cells:
            key = f"{cell.quantity}|{cell.range_name}"
            if key not in model.cells or cell.variant is not None:
                continue
            k, pairs = model.cells[key]
            mine = cell.tau_numerator if cell.tau_numerator is not None else round(cell.tau * pairs)
            if mine == k:
                equal += 1
            else:
                differing.append({"cell": key, "published_k": k, "k": mine, "pairs": pairs,
                                  "pairs_apart": abs(mine - k) // FLIPPED_PAIR_K or 1})
    flipped = (differing[0]["cell"] if len(differing) == 1 and abs(differing[0]["k"] - differing[0]["published_k"])
               == FLIPPED_PAIR_K else None)
    exam2, exam3 = _exam2_diff(result, model), _exam3_diff(result, model)
    return Reproduction(model.name, _changed(result.settings), equal, len(model.cells) if exam1 is not None else 0,
                        differing, flipped, exam2, exam3)


def _changed(settings: dict[str, Any]) -> str:
    """What a run changed of the paper's setting, in words ("" for none): the count of equal cells then measures
    what that moves."""
    from .vectors import vector_words

    dtype = settings.get("dtype")
    return ", ".join(w for w in (f"{dtype} weights" if dtype not in (None, "fp32") else "", vector_words(settings),
                                 "normalized quantities" if settings.get("normalize_quantities") else "") if w)


def _exam2_diff(result: Any, model: PublishedModel) -> float | None:
    exam2 = result.exams.get("exam2")
    if exam2 is None or not model.exam2:
        return None
    diffs = []
    for row in exam2.rows:
        group = f"same_sign={row.group}" if row.group_type == "same_sign" else row.group
        printed = model.exam2.get(group, {}).get(row.reference)
        if printed is not None and row.tau == row.tau:  # a row left out (no tokenizer) is NaN
            diffs.append(abs(row.tau - printed))
    return max(diffs) if diffs else None


def _exam3_diff(result: Any, model: PublishedModel) -> float | None:
    exam3 = result.exams.get("exam3")
    rows = (model.exam3 or {}).get("rows_3_decimals") or {}
    if exam3 is None or not rows:
        return None
    diffs = []
    for row in exam3.rows:
        printed = rows.get(f"{row.unit}|{row.range}", {})
        diffs += [abs(getattr(row, ours) - printed[theirs]) for theirs, ours in _EXAM3_FIELDS.items()
                  if theirs in printed]
    return max(diffs) if diffs else None


@dataclass
class Beside:
    """A run beside the published 24: its reproduction where it is one of them (or why it has none to meet), and
    the place of its Table 1 tau among them (a run of Exam 1 under the paper's protocol)."""
    reproduction: Reproduction | None = None
    none: str | None = None
    place: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.reproduction is not None:
            out["reproduction"] = self.reproduction.to_json()
        elif self.none:
            out["reproduction"] = {"none": self.none}
        if self.place:
            out["place"] = self.place
        return out

    def lines(self) -> list[str]:
        """What the terminal prints after the Table 1 row."""
        out = [self.reproduction.line()] if self.reproduction is not None else [self.none] if self.none else []
        return out + ([f"among the paper's 24 (the authors' Table 1): {self.place}"] if self.place else [])


def beside(result: Any) -> Beside:
    """``result`` (a ModelResult) beside the published 24: its place among them, its reproduction of its own."""
    exam1 = result.exams.get("exam1")
    among = None
    if exam1 is not None and result.on_paper_protocol and exam1.cells:
        own = published_model(result.model)
        among = place(exam1.summary()["tau"], exclude=own.model_id if own else None)
    found = reproduction(result)
    return Beside(reproduction=found if isinstance(found, Reproduction) else None,
                  none=found if isinstance(found, str) else None, place=among)


LEADERBOARD_BEGIN, LEADERBOARD_END = "<!-- leaderboard: generated from core.published -->", "<!-- /leaderboard -->"


def leaderboard_markdown() -> str:
    """The 24 as the docs' leaderboard shows them (docs/published.md, between its markers; a test holds the page
    to this): Table 1 sorted by τ, with each quantity's τ (x100, two decimals, rounded half up on the exact
    values)."""
    from decimal import ROUND_HALF_UP, Decimal

    def shown(value: Fraction) -> str:
        exact = Decimal(value.numerator) / Decimal(value.denominator)
        return str(exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))

    models = sorted(published().values(), key=lambda m: -m.table1(exact=True)["tau"])
    quantities = list(dict.fromkeys(c.split("|")[0] for c in models[0].cells))
    lines = ["| # | model | group | τ | PACC | AVG | " + " | ".join(quantities) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(quantities)]
    for rank, m in enumerate(models, 1):
        row, parts = m.table1(exact=True), m.breakdown(exact=True)
        lines.append(f"| {rank} | [{m.name}](https://huggingface.co/{m.hf_id}) | {m.group} | "
                     + " | ".join(shown(row[k]) for k in ("tau", "pacc", "avg")) + " | "
                     + " | ".join(shown(parts[q]["tau"]) for q in quantities) + " |")
    return "\n".join(lines) + "\n"
