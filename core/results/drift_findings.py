"""What each drift check found, typed: one class per check (``FINDINGS``, in the order a report shows them). A
finding knows its reasons (why it makes the candidate drift), its terminal lines (by place: under the verdict, the
hints, the identity line, beside the means, the details below the groups), its drift.json keys and its JUnit cases;
``DriftReport`` (``drift.py``) holds findings and loops over them. Which check makes each finding, and when, is the
runs' registry (``core/runs/drift/checks``).

Adding a check: its finding here (a dataclass with ``key``, ``to_json``/``from_json`` and what it shows) with one line
in ``FINDINGS``, and its check in ``core/runs/drift/checks`` with one line in ``CHECKS`` (docs/house.md).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar

F = TypeVar("F", bound="Finding")


class DriftReport(Protocol):
    """What a finding reads of the report holding it (``drift.DriftReport``: the report imports the findings, so
    they name it by what they read)."""
    accepted: list[str]

    @property
    def drifted_groups(self) -> dict[str, str]: ...

    @property
    def verdict(self) -> str: ...

    def get(self, kind: type[F]) -> F: ...

# a text's cosine in another batch to itself alone below this: the candidate depends on the batch
INVARIANCE_MIN = 0.999
# Where the reference's vectors are not unit vectors (its pipeline has no Normalize), each text's norm on the
# candidate may differ from the reference's by this share at most (embed-parity's 5%): dot-product and Euclidean
# users see a norm that cosine users do not.
NORM_TOLERANCE = 0.05
# The PhysScore side's keys (``PhysScore``), written at the top level of drift.json.
PHYSSCORE_KEYS = ("reference_tau", "candidate_tau", "reference_pacc", "candidate_pacc", "delta_tau", "cells_changed",
                  "delta_tau_ci_low", "delta_tau_ci_high")
# Where a finding's terminal lines go (``Finding.lines``), in the order the terminal shows the places
PLACES = ("verdict", "hints", "identity", "summary", "details")
SIDES = ("reference", "candidate")


class Case(NamedTuple):
    """One JUnit test case: failing (``failure``), skipped (``skipped``) or passing, with what it printed."""
    name: str
    failure: str | None = None
    skipped: str | None = None
    out: str = ""


class Finding:
    """What one drift check found. ``key``: its name (the registry's, the timings'); ``explains``: its reasons only
    explain a drift that other reasons make (never a drift of their own)."""
    key: ClassVar[str]
    explains: ClassVar[bool] = False

    def to_json(self) -> dict[str, Any]:
        """Its keys of drift.json (at the top level, as drift.json has always had them)."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding | None:
        """The finding a drift.json holds, None where it holds none (the check did not run)."""
        raise NotImplementedError

    def reasons(self, report: DriftReport) -> list[str]:
        return []

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        return {}

    def cases(self, report: DriftReport) -> list[Case]:
        return []


def _dict(value: Any) -> dict:
    """``value`` where it is a dict, else an empty one (what a server says is not always the shape expected)."""
    return value if isinstance(value, dict) else {}


# --- identity: who each side says it is, the precision it serves, what its kind of server is known to move --------
@dataclass
class Identity(Finding):
    key: ClassVar[str] = "identity"
    sides: dict[str, Any] = field(default_factory=dict)  # side -> what it says it is (``checks.identity``)
    match: str | None = None  # --expect-model: how the candidate's id names it ("exactly", a path's end)
    mismatch: str | None = None  # --expect-model: why the candidate is not the model expected
    precision: dict[str, str | None] = field(default_factory=dict)  # side -> the weights' precision it states
    precision_mismatch: str | None = None
    # the candidate's kind of server and the groups it is known to move: {"server": "llama.cpp", "groups": {...}}
    known_differences: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"identity": self.sides, "identity_mismatch": self.mismatch, "identity_match": self.match,
                "precision": self.precision, "precision_mismatch": self.precision_mismatch,
                **({"known_differences": self.known_differences} if self.known_differences else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Identity | None:
        return cls(_dict(data.get("identity")), data.get("identity_match"), data.get("identity_mismatch"),
                   _dict(data.get("precision")), data.get("precision_mismatch"),
                   _dict(data.get("known_differences")))

    def reasons(self, report: DriftReport) -> list[str]:
        return (([f"identity: {self.mismatch}"] if self.mismatch else [])
                + ([f"precision: {self.precision_mismatch}"] if self.precision_mismatch else []))

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        who = {side: self.sides.get(side, {}) for side in SIDES}
        line = ("  identity: " + "; ".join(f"{side} {w.get('model')!r} ({w.get('kind', '?')}"
                                           + (f", {self.precision[side]}" if self.precision.get(side) else "")
                                           + (f", on {w['provider']}" if w.get("provider") else "")
                                           + (f", {w['parameters'] / 1e6:.1f}M parameters" if w.get("parameters")
                                              else "")
                                           + (f", {w['max_tokens']} tokens" if w.get("max_tokens") else "")
                                           + (f", onnx {str(w['onnx_sha256'])[:12]}" if w.get("onnx_sha256") else "")
                                           + (f", as a store keeps it: {store_words(w['vectors'])}"
                                              if w.get("vectors") else "")
                                           + ")" for side, w in who.items() if w)
                + (f" -- {self.mismatch}" if self.mismatch else "")
                + (f" -- the expected model, named {self.match}" if self.match and self.match != "exactly" else "")
                + (f" -- {self.precision_mismatch}" if self.precision_mismatch else ""))
        return {"hints": self.hint_lines(report), "identity": [line]}

    def hint_lines(self, report: DriftReport) -> list[str]:
        """For a candidate of a kind of server known to move some groups (llama.cpp: scripts, length), the --accept
        that gates the rest, when those groups drifted and are not accepted yet."""
        known = _dict(self.known_differences.get("groups"))
        pending = {g: known[g] for g in report.drifted_groups if g not in report.accepted and g in known}
        if not pending:
            return []
        why = "; ".join(f"{g}: {reason}" for g, reason in pending.items())
        flags = " ".join(f"--accept {g}" for g in pending)
        return [f"  hint: {self.known_differences.get('server')} is known to differ here ({why}); if that is "
                f"accepted, add {flags} to gate the rest"]

    def cases(self, report: DriftReport) -> list[Case]:
        return [Case("identity", failure=self.mismatch, out=str(self.sides.get("candidate", {}))),
                Case("precision", failure=self.precision_mismatch, out=str(self.precision))]


def store_words(vectors: dict) -> str:
    """What a side's store keeps, in words: "the first 256 dimensions, binary"."""
    words = [f"the first {vectors['dimensions']} dimensions"] if vectors.get("dimensions") else []
    if vectors.get("vector_quantization"):
        words.append(f"{vectors['vector_quantization']}"
                     + (f" (calibrated on {vectors['calibration']})" if vectors.get("calibration") else ""))
    return ", ".join(words)


# --- base64 against float: the same texts asked both ways of a served candidate -----------------------------------
@dataclass
class Base64(Finding):
    key: ClassVar[str] = "base64"
    # compared, max_abs, endianness ("little", "big", None), finding | skipped | base64 ("ignored ...")
    said: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"base64": self.said} if self.said else {}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Base64 | None:
        return cls(data["base64"]) if isinstance(data.get("base64"), dict) else None

    def reasons(self, report: DriftReport) -> list[str]:
        return [f"base64: {self.said['finding']}"] if self.said.get("finding") else []

    def cases(self, report: DriftReport) -> list[Case]:
        if not self.said:
            return []
        if self.said.get("skipped"):
            return [Case("base64", skipped=str(self.said["skipped"]))]
        return [Case("base64", failure=self.said.get("finding"), out=f"{self.said.get('compared')} text(s); "
                                                                      f"endianness {self.said.get('endianness')}")]


# --- the diagnosis: the usual misconfiguration of the reference the candidate embeds like -------------------------
# The settings a variant of the reference changes (``fasteval.models.onnx.variants``), and the names' grammar: one
# change, or two joined by '+', each setting=value (pooling=cls, max_tokens=128, dense=off+lowercase=off). A receipt
# naming anything else (a newline and a CI runner's '::error' command, say) is refused: names reach terminals, logs
# and JUnit files.
VARIANT_SETTINGS = ("pooling", "dense", "normalize", "max_tokens", "prompt", "lowercase", "special_tokens",
                    "precision")
_CHANGE = rf"(?:{'|'.join(VARIANT_SETTINGS)})=[A-Za-z0-9_.-]{{1,64}}"
VARIANT_NAME = re.compile(rf"{_CHANGE}(?:\+{_CHANGE})?")
# What to do about each misconfiguration a diagnosis names, by setting (each of VARIANT_SETTINGS): the change on the
# server, with the flag of the servers drift is measured against (llama.cpp's llama-server, infinity, TEI, vLLM).
FIXES: dict[str, str] = {
    "pooling": ("set the server's pooling to the reference's ({value} is what it does now): llama.cpp --pooling mean "
                "(or cls / last), infinity --pooling-method mean, TEI --pooling mean, vLLM --override-pooler-config "
                "'{{\"pooling_type\": \"MEAN\"}}'"),
    "dense": ("serve the model with its Dense layers (modules.json's 2_Dense...): infinity and TEI load them from a "
              "sentence-transformers folder; llama.cpp's converter drops them, so serve that model elsewhere"),
    "normalize": ("normalise on the server, or on the client: llama.cpp --embd-normalize 2, TEI's normalize: true "
                  "(its default), vLLM's pooler normalize: true"),
    "max_tokens": ("give the server the reference's maximum input length (it cuts at {value} tokens): llama.cpp "
                   "--ctx-size and --ubatch-size, TEI --max-input-length, vLLM --max-model-len"),
    "prompt": ("send the texts with the reference's prompt ({value} is what the server does): the client's prompt, "
               "or the server's default prompt name (TEI --default-prompt-name)"),
    "lowercase": ("serve the reference's own tokenizer (tokenizer.json and tokenizer_config.json, whose normalizer "
                  "{what}): a re-exported or re-converted tokenizer lost it"),
    "special_tokens": ("have the server add the tokenizer's special tokens (CLS/SEP, BOS/EOS): llama.cpp reads "
                       "add_bos_token/add_eos_token from the GGUF, so convert it again from the reference folder"),
    "precision": ("serve the reference's precision ({value} is what the server does): an f32 or f16 GGUF for "
                  "llama.cpp instead of a quantized one, TEI --dtype float32, vLLM --dtype float32"),
}


@dataclass
class Diagnosis(Finding):
    key: ClassVar[str] = "diagnosis"
    # variant (the best conforming one, or None), worst, closest, reference, texts, tried | unavailable
    said: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        # the Fix lines beside what was found: a CI that reads drift.json needs them as much as a person
        return {"diagnosis": {**self.said, "line": self.line(), "fix": self.fixes()}} if self.said else {}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diagnosis | None:
        said = data.get("diagnosis")
        if not isinstance(said, dict):
            return None
        return cls({k: v for k, v in said.items() if k not in ("line", "fix")})  # both are made from the rest

    @property
    def variant(self) -> str | None:
        return self.said.get("variant")

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        return {"verdict": [f"  {line}" for line in [self.line(), *self.fixes()]]} if self.said else {}

    def cases(self, report: DriftReport) -> list[Case]:
        """A failing case where the candidate drifts (the diagnosis and its Fix are what a CI viewer must show;
        viewers fold passing cases), else a passing one."""
        if not self.said:
            return []
        text = "\n".join([self.line(), *self.fixes()])
        if report.verdict == "drifts":
            return [Case("diagnosis", failure=text)]
        return [Case("diagnosis", out=text)]

    def fixes(self) -> list[str]:
        """'Fix (change): ...' for each change of the variant it named (two for a pair); none where it named none."""
        lines = []
        for change in str(self.variant or "").split("+") if self.variant else []:
            setting, _, value = change.partition("=")
            text = FIXES.get(setting)
            if text is not None:
                what = "lowercases" if value == "off" else "keeps case"
                lines.append(f"Fix ({change}): " + text.format(value=value, what=what))
        return lines

    def line(self) -> str:
        """The terminal's line under the verdict."""
        d = self.said
        if d.get("unavailable"):
            return f"diagnosis: not available: {d['unavailable']}"
        if d.get("variant"):
            return (f"diagnosis: the candidate embeds like the reference with {d['variant']} (worst cosine "
                    f"{d['worst']:.5f}); with the reference's own settings {d['reference']:.4f}")
        if d.get("closest"):
            return (f"diagnosis: no usual misconfiguration explains it; closest {d['closest']} "
                    f"({d['worst']:.4f}; the reference's own {d['reference']:.4f})")
        if any(t.get("worst") is not None for t in d.get("tried", ())):
            return (f"diagnosis: no usual misconfiguration explains it, and none comes closer than the reference's "
                    f"own settings ({d['reference']:.4f})")
        return "diagnosis: no usual misconfiguration could be tried"


# --- token-count parity: a served candidate's usage.prompt_tokens against the reference tokenizer's count ----------
@dataclass
class TokenCounts(Finding):
    key: ClassVar[str] = "token_counts"
    said: dict[str, Any] = field(default_factory=dict)  # compared, differ, examples; never gated

    def to_json(self) -> dict[str, Any]:
        return {"token_counts": self.said} if self.said else {}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TokenCounts | None:
        return cls(data["token_counts"]) if isinstance(data.get("token_counts"), dict) else None

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        counts = self.said
        if not counts.get("differ") or report.verdict != "drifts":  # a clue to a drift; beside a conforming run, noise
            return {}
        characters = all(e["candidate_tokens"] == len(e["text"]) for e in counts["examples"])
        return {"summary": [
            f"  token counts: the server counts {counts['differ']} of {counts['compared']} texts otherwise than the "
            "reference's tokenizer (special tokens added or not, another tokenizer): " + "; ".join(
                f"{e['text']!r}: the server {e['candidate_tokens']}, the reference's tokenizer "
                f"{e['reference_tokens']}" for e in counts["examples"])
            + ("; the server's counts are the texts' characters, not tokens (as infinity's are)"
               if characters else "")]}


# --- the norm gate: raw norms against the reference's ----------------------------------------------------------------
@dataclass
class Norms(Finding):
    key: ClassVar[str] = "norms"
    # compared, reference_unit, candidate_unit, worst_ratio, text, finding, normalize_off_ratio, variant
    said: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"norms": self.said} if self.said else {}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Norms | None:
        return cls(data["norms"]) if isinstance(data.get("norms"), dict) else None

    def reasons(self, report: DriftReport) -> list[str]:
        return [f"norms: {self.said['finding']}"] if self.said.get("finding") else []

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        n = self.said
        if not n or n.get("reference_unit"):  # the reference's norms carry meaning: how the candidate's compare
            return {}
        return {"summary": [f"  norms (raw vectors, {n['compared']} texts): the candidate's over the reference's, "
                            f"worst {n['worst_ratio']:.4f} for {n['text']!r}"
                            + ("; the candidate returns unit vectors" if n.get("candidate_unit") else "")]}

    def cases(self, report: DriftReport) -> list[Case]:
        if not self.said:
            return []
        return [Case("norms", failure=self.said.get("finding"),
                     out=f"worst ratio {self.said.get('worst_ratio')} over {self.said.get('compared')} texts")]


# --- collisions: distinct texts the reference keeps apart that the candidate makes one ----------------------------
@dataclass
class Collisions(Finding):
    key: ClassVar[str] = "collisions"
    listed: list[dict[str, Any]] = field(default_factory=list)  # text_a, text_b, reference_cosine, candidate_cosine
    count: int | None = None  # how many there are (``listed`` holds the first); None: as many as listed
    gated: bool = False  # --fail-on-collisions: a collision drifts

    @property
    def collided(self) -> int:
        return len(self.listed) if self.count is None else self.count

    def to_json(self) -> dict[str, Any]:
        return {"collisions": self.listed, "collision_count": self.collided}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Collisions | None:
        return cls(list(data.get("collisions") or []), data.get("collision_count"))

    def reasons(self, report: DriftReport) -> list[str]:
        return [f"{self.collided} collision(s)"] if self.gated and self.listed else []

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        if not self.listed:
            return {}
        lines = ["", f"  collisions (apart under the reference, one under the candidate): {self.collided}"]
        shown = 0
        for cluster in collision_clusters(self.listed)[:10]:  # a collapse of k texts once, not k(k-1)/2 times
            if len(cluster) == 1:
                c = cluster[0]
                lines.append(f"    {pair_text(c['text_a'], c['text_b'])}: {c['reference_cosine']:.3f} -> "
                             f"{c['candidate_cosine']:.4f}")
            else:
                texts = list(dict.fromkeys(t for c in cluster for t in (c["text_a"], c["text_b"])))
                lowest = min(c["reference_cosine"] for c in cluster)
                lines.append(f"    {len(texts)} texts collapse onto one vector ({len(cluster)} pairs; reference "
                             f"cosines from {lowest:.3f}): " + ", ".join(shown_text(t) for t in texts[:6])
                             + (f" and {len(texts) - 6} more" if len(texts) > 6 else ""))
            shown += len(cluster)
        if self.collided > shown:
            listed = "all of them" if self.collided == len(self.listed) else f"the first {len(self.listed):,}"
            lines.append(f"    ... and {self.collided - shown:,} more pairs ({listed} in --json)")
        return {"details": lines}

    def cases(self, report: DriftReport) -> list[Case]:
        collided = f"{self.collided} collision(s)" if self.listed else None
        return [Case("collisions", failure=collided if self.gated else None, out=collided or "none")]


# --- tokenization: how each side tokenizes the drifted texts -------------------------------------------------------
@dataclass
class Tokenization(Finding):
    key: ClassVar[str] = "tokenization"
    explains: ClassVar[bool] = True
    said: dict[str, Any] = field(default_factory=dict)  # compared, differ, truncated, examples

    def to_json(self) -> dict[str, Any]:
        return {"tokenization": self.said}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tokenization | None:
        return cls(_dict(data.get("tokenization")))

    def reasons(self, report: DriftReport) -> list[str]:
        t, out = self.said, []
        if t.get("differ"):
            out.append(f"tokenizer: {t['differ']} of {t['compared']} drifted texts tokenized differently")
        if t.get("truncated"):
            sides = report.get(Identity).sides
            limits = [sides.get(side, {}).get("max_tokens") for side in SIDES]
            out.append(f"truncation: {t['truncated']} drifted text(s) cut at another length" +
                       (f" (the reference takes {limits[0]} tokens, the candidate {limits[1]})" if all(limits) else ""))
        return out

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        t = self.said
        if not t.get("differ") and not t.get("truncated"):
            return {}
        lines = ["", f"  tokenizer: of the {t['compared']} worst drifted texts the candidate tokenizes {t['differ']} "
                     f"into other ids and cuts {t['truncated']} at another length than the reference"]
        lines += [f"    {e['text']!r}: {e['reference_tokens']} tokens {e['reference_ids'][:8]} against "
                  f"{e['candidate_tokens']} {e['candidate_ids'][:8]}" for e in t["examples"]]
        return {"details": lines}

    def cases(self, report: DriftReport) -> list[Case]:
        t = self.said
        if not t:
            return []
        return [Case("tokenizer", out=f"{t['differ']} of {t['compared']} drifted texts tokenized into other ids, "
                                      f"{t['truncated']} cut at another length; examples: {t['examples']}")]


# --- invariance: the candidate's vectors in other batches, orders and states ---------------------------------------
@dataclass
class Invariance(Finding):
    key: ClassVar[str] = "invariance"
    rows: list[dict[str, Any]] = field(default_factory=list)  # condition, worst, text, max_abs | skipped
    tier: str = "cosine"  # choices.INVARIANCE_TIERS: "bitwise" drifts at any difference of a number

    def to_json(self) -> dict[str, Any]:
        return {"invariance": self.rows, **({"invariance_tier": self.tier} if self.tier != "cosine" else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Invariance | None:
        return cls(list(data.get("invariance") or []), data.get("invariance_tier") or "cosine")

    @property
    def worst(self) -> float | None:
        batch = [r["worst"] for r in self.rows if r.get("worst") is not None]
        return min(batch) if batch else None

    def reasons(self, report: DriftReport) -> list[str]:
        out = [f"batch: {r['condition']} {r['worst']:.4f}" for r in self.rows
               if r.get("worst") is not None and not r["worst"] >= INVARIANCE_MIN]
        if self.tier == "bitwise":
            out += [f"bitwise: {r['condition']} differs by {r['max_abs']:.1e}" for r in self.rows
                    if r.get("worst") is not None and r["worst"] >= INVARIANCE_MIN and r.get("max_abs")]
        return out

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        if not self.rows:
            return {}
        lines = ["", f"  invariance of the candidate (cosine to each text embedded alone; below {INVARIANCE_MIN}: "
                     "it depends on the batch" + ("; the bitwise tier: any difference drifts"
                                                  if self.tier == "bitwise" else "") + "; max |diff| of a number):"]
        lines += [f"    {r['condition']:<26} " + (f"skipped ({r['skipped']})" if "skipped" in r else
                                                   f"{r['worst']:.6f}  max |diff| {r.get('max_abs', 0.0):.1e}  "
                                                   f"{r['text']!r}") for r in self.rows]
        return {"details": lines}

    def cases(self, report: DriftReport) -> list[Case]:
        out = []
        for r in self.rows:
            if "skipped" in r:
                out.append(Case(f"invariance {r['condition']}", skipped=r["skipped"]))
                continue
            bit_exact = self.tier != "bitwise" or not r.get("max_abs")
            out.append(Case(f"invariance {r['condition']}", out=f"worst {r['worst']:.6f} for {r['text']!r}",
                            failure=(f"cosine {r['worst']:.6f} < {INVARIANCE_MIN} to {r['text']!r} embedded alone"
                                     if r["worst"] < INVARIANCE_MIN else None if bit_exact else
                                     f"a number differs by {r['max_abs']:.1e} from {r['text']!r} embedded alone "
                                     "(bitwise)")))
        return out


# --- behaviours: inputs a side refuses as too long where the other embeds them -------------------------------------
@dataclass
class Behaviours(Finding):
    key: ClassVar[str] = "behaviours"
    # one per side and group: side, model, group, behaviour, texts, shortest_chars, message, max_tokens,
    # other_truncates_at
    found: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"behaviours": self.found}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Behaviours | None:
        return cls(list(data.get("behaviours") or []))

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        lines = []
        for b in self.found:
            other = "the candidate" if b["side"] == "reference" else "the reference"
            limits = ((f"; it takes at most {b['max_tokens']} tokens" if b.get("max_tokens") else "")
                      + (f", {other} truncates at {b['other_truncates_at']}" if b.get("other_truncates_at") else ""))
            lines += ["", f"  behaviour: {b['model']} refuses {b['texts']} input(s) of the {b['group']} group that "
                          f"{other} embeds (the shortest {b['shortest_chars']} characters{limits}: "
                          f"{b['message'][:100]}); they are left out of the cosines, the rest of the group is scored"]
        return {"details": lines} if lines else {}

    def cases(self, report: DriftReport) -> list[Case]:
        return [Case(f"behaviour {b['side']} {b['group']}",
                     skipped=f"{b['behaviour']}: {b['texts']} input(s): {b['message'][:160]}") for b in self.found]


# --- the PhysScore side: Table 1 of both sides and the paired bootstrap Δτ ------------------------------------------
@dataclass
class PhysScore(Finding):
    key: ClassVar[str] = "physscore"
    said: dict[str, Any] = field(default_factory=dict)  # PHYSSCORE_KEYS

    def to_json(self) -> dict[str, Any]:
        return dict(self.said)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PhysScore | None:
        said = {k: data[k] for k in PHYSSCORE_KEYS if k in data}
        return cls(said) if said else None

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        p = self.said
        if not p:
            return {}
        ci = ("" if p.get("delta_tau_ci_low") is None
              else f" [{p['delta_tau_ci_low']:.2f}, {p['delta_tau_ci_high']:.2f}]")
        return {"details": ["", f"  PhysScore: Table 1 tau {p['reference_tau']:.2f} -> {p['candidate_tau']:.2f} "
                                f"(delta {p['delta_tau']:+.2f}{ci}), "
                                f"PACC {p['reference_pacc']:.2f} -> {p['candidate_pacc']:.2f}; "
                                f"{len(p['cells_changed'])} of 20 cells changed"]}


# Every finding a report may hold, in the order it shows them (its terminal places, its JUnit cases, its reasons;
# an ``explains`` finding's reasons come last, and only beside others).
FINDINGS: tuple[type[Finding], ...] = (Identity, Base64, Diagnosis, TokenCounts, Norms, Collisions, Tokenization,
                                       Invariance, Behaviours, PhysScore)


def shown_text(text: str) -> str:
    """A text as the terminal shows it: its repr, or, where it is not in NFC (é as e and a combining accent), its
    escapes and its form, so that two texts that differ only there do not look alike."""
    import unicodedata

    if unicodedata.is_normalized("NFC", text):
        return repr(text)
    return f"{ascii(text)} ({'NFD' if unicodedata.is_normalized('NFD', text) else 'not NFC'})"


def collision_clusters(listed: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The collisions grouped by the texts they join (the pairs of one collapse together: k texts on one vector are
    one cluster of k(k-1)/2 pairs), in the order of each cluster's first pair."""
    parent: dict[str, str] = {}

    def root(t: str) -> str:
        while parent.setdefault(t, t) != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for c in listed:
        parent[root(c["text_a"])] = root(c["text_b"])
    clusters: dict[str, list[dict[str, Any]]] = {}
    for c in listed:
        clusters.setdefault(root(c["text_a"]), []).append(c)
    return list(clusters.values())


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
