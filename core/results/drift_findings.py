"""What each drift check found, typed: one class per check (``FINDINGS``, in the order a report shows them), each
with its real fields and the records they hold (a collision, an invariance condition, a variant tried, ...). A
finding knows its reasons (why it makes the candidate drift), its terminal lines (by place: under the verdict, the
hints, the identity line, beside the means, the details below the groups), its drift.json keys and its JUnit cases;
``DriftReport`` (``drift.py``) holds findings and loops over them. Which check makes each finding, and when, is the
runs' registry (``core/runs/drift/checks``).

drift.json is written and read by one helper over the records' fields (``record_json``, ``from_record``): each field
under its name (or the key drift.json has always used, ``json_key``), a field marked ``omitted`` left out where it
is None (as it always was), read back by its annotated type; a drift.json written before the findings were typed
reads the same (``tests/data/drift-before-typed-findings.json``). Only what a server says of itself stays a plain
mapping (``SideIdentity.server``, ``SideIdentity.info``: its JSON, as it said it).

Adding a check: its finding here (a dataclass with ``key``, ``to_json``/``from_json`` and what it shows) with one line
in ``FINDINGS``, and its check in ``core/runs/drift/checks`` with one line in ``CHECKS`` (docs/house.md).
"""
from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass, field, fields, is_dataclass
from functools import lru_cache
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar, Union

F = TypeVar("F", bound="Finding")
R = TypeVar("R")


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
# Where a finding's terminal lines go (``Finding.lines``), in the order the terminal shows the places
PLACES = ("verdict", "hints", "identity", "summary", "details")
SIDES = ("reference", "candidate")


# --- drift.json: one helper over the records' fields -----------------------------------------------------------------
def omitted(key: str | None = None) -> Any:
    """A field left out of drift.json where it is None (``key``: its name there, where not the field's)."""
    return field(default=None, metadata={"omit": True, **({"key": key} if key else {})})


def json_key(key: str, factory: Any = None) -> Any:
    """A field written under another key than its name (the one drift.json has always used); None by default, or
    what ``factory`` makes."""
    if factory is not None:
        return field(default_factory=factory, metadata={"key": key})
    return field(default=None, metadata={"key": key})


def record_json(record: Any) -> dict[str, Any]:
    """A record (a finding, or a record it holds) as drift.json writes it: each field under its key, nested records
    and lists of them as theirs, an ``omitted`` field left out where it is None."""
    out = {}
    for f in fields(record):
        value = getattr(record, f.name)
        if value is None and f.metadata.get("omit"):
            continue
        out[f.metadata.get("key", f.name)] = _json(value)
    return out


def _json(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return record_json(value)
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value


def from_record(kind: type[R], data: Any) -> R:
    """``kind`` read back from what ``record_json`` wrote (``data``): each field by its key and annotated type; a key
    that is missing, or holds another shape than its type (what a server said is not always the shape expected),
    gives the field's default; other keys are left alone."""
    given = data if isinstance(data, dict) else {}
    hints = _hints(kind)  # type: ignore[arg-type]
    values = {}
    for f in fields(kind):  # type: ignore[arg-type]
        key = f.metadata.get("key", f.name)
        if key in given and f.init:
            read = _read(hints[f.name], given[key])
            if read is not _WRONG:
                values[f.name] = read
    return kind(**values)


_WRONG = object()  # a value of another shape than its field's type


def read_records(kind: type[R], value: Any) -> list[R]:
    """A JSON list of records (what ``record_json`` wrote of each) read back as ``kind``; an item of another shape
    left out, and [] for a value that is not a list."""
    return [from_record(kind, v) for v in value if isinstance(v, dict)] if isinstance(value, list) else []


@lru_cache(maxsize=None)
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _read(tp: Any, value: Any) -> Any:
    """``value`` as type ``tp`` (a record, a list or dict of them, an optional one, a plain value), or _WRONG."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            read = _read(arg, value)
            if read is not _WRONG:
                return read
        return _WRONG
    if is_dataclass(tp):
        return from_record(tp, value) if isinstance(value, dict) else _WRONG  # type: ignore[arg-type]
    if origin is list:  # an item of another shape is left out
        return [r for r in (_read(args[0], v) for v in value) if r is not _WRONG] if isinstance(value, list) else _WRONG
    if origin is dict:
        return ({k: r for k, v in value.items() if (r := _read(args[1], v)) is not _WRONG}
                if isinstance(value, dict) else _WRONG)
    if tp is Any:
        return value
    if tp is float:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else _WRONG
    if tp in (int, str, bool):
        return value if isinstance(value, tp) and (tp is bool or not isinstance(value, bool)) else _WRONG
    return value


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


class Nested(Finding):
    """A finding written under its own key of drift.json (``key``), as one object, where its check ran (``ran``)."""

    @property
    def ran(self) -> bool:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {self.key: record_json(self)} if self.ran else {}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding | None:
        return from_record(cls, data[cls.key]) if isinstance(data.get(cls.key), dict) else None


# --- identity: who each side says it is, the precision it serves, what its kind of server is known to move --------
@dataclass
class VectorsKept:
    """What a vector store keeps of a side (``core.vectors.VectorForm.keyed``), where not its floats."""
    dimensions: int | None = omitted()
    vector_quantization: str | None = omitted()
    calibration: str | None = omitted()
    turbovec: str | None = omitted()

    def words(self) -> str:
        """In words: "the first 256 dimensions, binary"."""
        said = [f"the first {self.dimensions} dimensions"] if self.dimensions else []
        if self.vector_quantization:
            said.append(self.vector_quantization + (f" (calibrated on {self.calibration})" if self.calibration
                                                    else ""))
        return ", ".join(said)


@dataclass
class SideIdentity:
    """What one side says it is (``checks.identity.identity_of``): its kind ("served", "local", "object"), the model
    it names; a served one its URL, what /models (``server``) and TEI's /info (``info``) say, as they said it; a
    local one its dtype, the provider it ran on and its content hashes; the longest input it takes (``max_tokens``)
    and its parameters where it says; a receipt its file and the fasteval that wrote it; what a store keeps of it."""
    kind: str | None = None
    model: str | None = None
    url: str | None = omitted()
    server: dict[str, Any] | None = omitted()  # the server's own JSON (/models' entry)
    info: dict[str, Any] | None = omitted()  # the server's own JSON (TEI's /info)
    dtype: str | None = omitted()
    provider: str | None = omitted()
    source_sha256: str | None = omitted()
    onnx_sha256: str | None = omitted()
    max_tokens: int | None = omitted()
    parameters: int | None = omitted()
    receipt: str | None = omitted()
    receipt_fasteval_version: str | None = omitted()
    vectors: VectorsKept | None = omitted()

    def words(self, precision: str | None) -> str:
        """As the identity line shows it: "'all-MiniLM-L6-v2' (local, f32, on cpu, 256 tokens, onnx 0123456789ab)"."""
        said = [self.kind or "?"]
        said += [precision] if precision else []
        said += [f"on {self.provider}"] if self.provider else []
        said += [f"{self.parameters / 1e6:.1f}M parameters"] if self.parameters else []
        said += [f"{self.max_tokens} tokens"] if self.max_tokens else []
        said += [f"onnx {self.onnx_sha256[:12]}"] if self.onnx_sha256 else []
        said += [f"as a store keeps it: {self.vectors.words()}"] if self.vectors else []
        return f"{self.model!r} ({', '.join(said)})"


@dataclass
class KnownDifferences:
    """What the candidate's kind of server is known to move: its kind, and the groups with why."""
    server: str | None = None
    groups: dict[str, str] = field(default_factory=dict)


@dataclass
class Identity(Finding):
    key: ClassVar[str] = "identity"
    sides: dict[str, SideIdentity] = json_key("identity", dict)
    mismatch: str | None = json_key("identity_mismatch")  # --expect-model: why the candidate is not the model expected
    match: str | None = json_key("identity_match")  # --expect-model: how the candidate's id names it ("exactly", ...)
    precision: dict[str, str | None] = field(default_factory=dict)  # side -> the weights' precision it states
    precision_mismatch: str | None = None
    # the candidate's kind of server and the groups it is known to move (the --accept hint)
    known_differences: KnownDifferences | None = omitted()

    def to_json(self) -> dict[str, Any]:
        return record_json(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Identity | None:
        return from_record(cls, data)

    def side(self, name: str) -> SideIdentity:
        """What ``name`` ("reference", "candidate") says it is; an empty identity where it said nothing."""
        return self.sides.get(name) or SideIdentity()

    def reasons(self, report: DriftReport) -> list[str]:
        return (([f"identity: {self.mismatch}"] if self.mismatch else [])
                + ([f"precision: {self.precision_mismatch}"] if self.precision_mismatch else []))

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        line = ("  identity: " + "; ".join(f"{side} {self.sides[side].words(self.precision.get(side))}"
                                           for side in SIDES if side in self.sides)
                + (f" -- {self.mismatch}" if self.mismatch else "")
                + (f" -- the expected model, named {self.match}" if self.match and self.match != "exactly" else "")
                + (f" -- {self.precision_mismatch}" if self.precision_mismatch else ""))
        return {"hints": self.hint_lines(report), "identity": [line]}

    def hint_lines(self, report: DriftReport) -> list[str]:
        """For a candidate of a kind of server known to move some groups (llama.cpp: scripts, length), the --accept
        that gates the rest, when those groups drifted and are not accepted yet."""
        known = self.known_differences.groups if self.known_differences else {}
        pending = {g: known[g] for g in report.drifted_groups if g not in report.accepted and g in known}
        if not pending or self.known_differences is None:
            return []
        why = "; ".join(f"{g}: {reason}" for g, reason in pending.items())
        flags = " ".join(f"--accept {g}" for g in pending)
        return [f"  hint: {self.known_differences.server} is known to differ here ({why}); if that is "
                f"accepted, add {flags} to gate the rest"]

    def cases(self, report: DriftReport) -> list[Case]:
        candidate = record_json(self.sides["candidate"]) if "candidate" in self.sides else {}
        return [Case("identity", failure=self.mismatch, out=str(candidate)),
                Case("precision", failure=self.precision_mismatch, out=str(self.precision))]


# --- base64 against float: the same texts asked both ways of a served candidate -----------------------------------
@dataclass
class Base64(Nested):
    """How a served candidate's base64 answers compare with its float ones: on how many texts (``compared``; None:
    not asked), the largest difference read as OpenAI's little-endian float32, which byte order matches (None:
    neither), the ``finding`` where little-endian does not; ``skipped`` (why it could not be asked) or ``base64``
    ("ignored ...": a server that answers base64 with floats)."""
    key: ClassVar[str] = "base64"
    compared: int | None = None
    max_abs: float | None = omitted()
    endianness: str | None = omitted()
    finding: str | None = omitted()
    skipped: str | None = omitted()
    base64: str | None = omitted()

    @property
    def ran(self) -> bool:
        return self.compared is not None

    def reasons(self, report: DriftReport) -> list[str]:
        return [f"base64: {self.finding}"] if self.finding else []

    def cases(self, report: DriftReport) -> list[Case]:
        if not self.ran:
            return []
        if self.skipped:
            return [Case("base64", skipped=self.skipped)]
        return [Case("base64", failure=self.finding,
                     out=f"{self.compared} text(s); endianness {self.endianness}")]


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
class Tried:
    """One variant of the reference a diagnosis embedded: its worst and mean cosine to the candidate on the texts it
    was compared on (``texts``), or why it was skipped; ``same_as_reference``: it left these texts' vectors as they
    were (it explains nothing here)."""
    variant: str
    worst: float | None = None
    mean: float | None = None
    texts: int | None = omitted()
    skipped: str | None = omitted()
    same_as_reference: bool | None = omitted()


@dataclass
class Diagnosis(Nested):
    """The usual misconfiguration of the reference the candidate embeds like: the best conforming ``variant`` (or
    None) with its ``worst`` cosine, else the ``closest`` one where it comes closer than the reference's own
    settings (``reference``: their worst cosine), on how many ``texts``; every variant ``tried``, the closest
    first (None: no diagnosis ran); ``unavailable``: why none could be made."""
    key: ClassVar[str] = "diagnosis"
    variant: str | None = None
    worst: float | None = None
    closest: str | None = None
    reference: float | None = omitted()
    texts: int | None = omitted()
    tried: list[Tried] | None = None
    unavailable: str | None = omitted()

    @property
    def ran(self) -> bool:
        return self.tried is not None

    def to_json(self) -> dict[str, Any]:
        # the Fix lines beside what was found: a CI that reads drift.json needs them as much as a person (both are
        # made from the rest, so they are not read back)
        return {self.key: {**record_json(self), "line": self.line(), "fix": self.fixes()}} if self.ran else {}

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        return {"verdict": [f"  {line}" for line in [self.line(), *self.fixes()]]} if self.ran else {}

    def cases(self, report: DriftReport) -> list[Case]:
        """A failing case where the candidate drifts (the diagnosis and its Fix are what a CI viewer must show;
        viewers fold passing cases), else a passing one."""
        if not self.ran:
            return []
        text = "\n".join([self.line(), *self.fixes()])
        if report.verdict == "drifts":
            return [Case("diagnosis", failure=text)]
        return [Case("diagnosis", out=text)]

    def fixes(self) -> list[str]:
        """'Fix (change): ...' for each change of the variant it named (two for a pair); none where it named none."""
        lines = []
        for change in self.variant.split("+") if self.variant else []:
            setting, _, value = change.partition("=")
            text = FIXES.get(setting)
            if text is not None:
                what = "lowercases" if value == "off" else "keeps case"
                lines.append(f"Fix ({change}): " + text.format(value=value, what=what))
        return lines

    def line(self) -> str:
        """The terminal's line under the verdict."""
        if self.unavailable:
            return f"diagnosis: not available: {self.unavailable}"
        if self.variant:
            return (f"diagnosis: the candidate embeds like the reference with {self.variant} (worst cosine "
                    f"{self.worst:.5f}); with the reference's own settings {self.reference:.4f}")
        if self.closest:
            return (f"diagnosis: no usual misconfiguration explains it; closest {self.closest} "
                    f"({self.worst:.4f}; the reference's own {self.reference:.4f})")
        if any(t.worst is not None for t in self.tried or ()):
            return (f"diagnosis: no usual misconfiguration explains it, and none comes closer than the reference's "
                    f"own settings ({self.reference:.4f})")
        return "diagnosis: no usual misconfiguration could be tried"


# --- token-count parity: a served candidate's usage.prompt_tokens against the reference tokenizer's count ----------
@dataclass
class CountedText:
    """A text sent alone: the reference's tokenizer's count of it and the server's."""
    text: str
    reference_tokens: int
    candidate_tokens: int


@dataclass
class TokenCounts(Nested):
    """How a served candidate counts the texts it is sent (``usage``) against the reference's tokenizer: on how
    many (``compared``; None: not asked, or the server reports no counts), how many differ, those that differ most.
    Never gated: a clue to a drift."""
    key: ClassVar[str] = "token_counts"
    compared: int | None = None
    differ: int = 0
    examples: list[CountedText] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        return self.compared is not None

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        if not self.differ or report.verdict != "drifts":  # a clue to a drift; beside a conforming run, noise
            return {}
        characters = all(e.candidate_tokens == len(e.text) for e in self.examples)
        return {"summary": [
            f"  token counts: the server counts {self.differ} of {self.compared} texts otherwise than the "
            "reference's tokenizer (special tokens added or not, another tokenizer): " + "; ".join(
                f"{e.text!r}: the server {e.candidate_tokens}, the reference's tokenizer {e.reference_tokens}"
                for e in self.examples)
            + ("; the server's counts are the texts' characters, not tokens (as infinity's are)"
               if characters else "")]}


# --- the norm gate: raw norms against the reference's ----------------------------------------------------------------
@dataclass
class Norms(Nested):
    """The raw (unnormalised) norms of a few texts on both sides: on how many (``compared``; None: not compared),
    whether each side returns unit vectors, the candidate's worst ratio to the reference's and its text, the
    ``finding`` where they differ; where the reference can drop its normalisation, the worst ratio against that and
    ``variant`` ("normalize=off") where it is within NORM_TOLERANCE."""
    key: ClassVar[str] = "norms"
    compared: int | None = None
    reference_unit: bool = False
    candidate_unit: bool = False
    worst_ratio: float | None = None
    text: str | None = None
    finding: str | None = omitted()
    normalize_off_ratio: float | None = omitted()
    variant: str | None = omitted()

    @property
    def ran(self) -> bool:
        return self.compared is not None

    def reasons(self, report: DriftReport) -> list[str]:
        return [f"norms: {self.finding}"] if self.finding else []

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        if not self.ran or self.reference_unit:  # the reference's norms carry meaning: how the candidate's compare
            return {}
        return {"summary": [f"  norms (raw vectors, {self.compared} texts): the candidate's over the reference's, "
                            f"worst {self.worst_ratio:.4f} for {self.text!r}"
                            + ("; the candidate returns unit vectors" if self.candidate_unit else "")]}

    def cases(self, report: DriftReport) -> list[Case]:
        if not self.ran:
            return []
        return [Case("norms", failure=self.finding, out=f"worst ratio {self.worst_ratio} over {self.compared} texts")]


# --- collisions: distinct texts the reference keeps apart that the candidate makes one ----------------------------
@dataclass
class Collision:
    """Two texts the reference keeps apart that the candidate makes one: both cosines, the groups they are of."""
    text_a: str
    text_b: str
    reference_cosine: float
    candidate_cosine: float
    groups: list[str] = field(default_factory=list)


@dataclass
class Collisions(Finding):
    key: ClassVar[str] = "collisions"
    listed: list[Collision] = field(default_factory=list)  # the first (``COLLISIONS_LISTED``), in text order
    count: int | None = None  # how many there are (``listed`` holds the first); None: as many as listed
    gated: bool = False  # --fail-on-collisions: a collision drifts

    @property
    def collided(self) -> int:
        return len(self.listed) if self.count is None else self.count

    def to_json(self) -> dict[str, Any]:
        return {"collisions": _json(self.listed), "collision_count": self.collided}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Collisions | None:
        count = data.get("collision_count")
        return cls(read_records(Collision, data.get("collisions")), count if isinstance(count, int) else None)

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
                lines.append(f"    {pair_text(c.text_a, c.text_b)}: {c.reference_cosine:.3f} -> "
                             f"{c.candidate_cosine:.4f}")
            else:
                texts = list(dict.fromkeys(t for c in cluster for t in (c.text_a, c.text_b)))
                lowest = min(c.reference_cosine for c in cluster)
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
class TokenizedText:
    """A drifted text both sides tokenize into other ids: its first ids on each side and their counts."""
    text: str
    reference_ids: list[int]
    candidate_ids: list[int]
    reference_tokens: int
    candidate_tokens: int


@dataclass
class Tokenization(Nested):
    """How both sides tokenize the drifted texts: how many were compared (None: not compared), how many the
    candidate tokenizes into other ids (``differ``), how many into the same ids cut at another length
    (``truncated``), and the first few that differ."""
    key: ClassVar[str] = "tokenization"
    explains: ClassVar[bool] = True
    compared: int | None = None
    differ: int = 0
    truncated: int = 0
    examples: list[TokenizedText] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        return self.compared is not None

    def to_json(self) -> dict[str, Any]:
        return {self.key: record_json(self) if self.ran else {}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tokenization | None:
        return from_record(cls, data.get(cls.key))

    def reasons(self, report: DriftReport) -> list[str]:
        out = []
        if self.differ:
            out.append(f"tokenizer: {self.differ} of {self.compared} drifted texts tokenized differently")
        if self.truncated:
            identity = report.get(Identity)
            limits = [identity.side(side).max_tokens for side in SIDES]
            out.append(f"truncation: {self.truncated} drifted text(s) cut at another length" +
                       (f" (the reference takes {limits[0]} tokens, the candidate {limits[1]})" if all(limits) else ""))
        return out

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        if not self.differ and not self.truncated:
            return {}
        lines = ["", f"  tokenizer: of the {self.compared} worst drifted texts the candidate tokenizes {self.differ} "
                     f"into other ids and cuts {self.truncated} at another length than the reference"]
        lines += [f"    {e.text!r}: {e.reference_tokens} tokens {e.reference_ids[:8]} against "
                  f"{e.candidate_tokens} {e.candidate_ids[:8]}" for e in self.examples]
        return {"details": lines}

    def cases(self, report: DriftReport) -> list[Case]:
        if not self.ran:
            return []
        return [Case("tokenizer", out=f"{self.differ} of {self.compared} drifted texts tokenized into other ids, "
                                      f"{self.truncated} cut at another length; examples: "
                                      f"{_json(self.examples)}")]


# --- invariance: the candidate's vectors in other batches, orders and states ---------------------------------------
@dataclass
class Condition:
    """One condition the candidate's probes were embedded in: the lowest cosine of a probe to its embedding alone,
    that probe, the largest difference of a number (0.0: bit-exact); or why it was skipped."""
    condition: str
    worst: float | None = omitted()
    text: str | None = omitted()
    max_abs: float | None = omitted()
    skipped: str | None = omitted()


@dataclass
class Invariance(Finding):
    key: ClassVar[str] = "invariance"
    rows: list[Condition] = field(default_factory=list)
    tier: str = "cosine"  # choices.INVARIANCE_TIERS: "bitwise" drifts at any difference of a number

    def to_json(self) -> dict[str, Any]:
        return {"invariance": _json(self.rows), **({"invariance_tier": self.tier} if self.tier != "cosine" else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Invariance | None:
        tier = data.get("invariance_tier")
        return cls(read_records(Condition, data.get("invariance")), tier if isinstance(tier, str) else "cosine")

    @property
    def worst(self) -> float | None:
        batch = [r.worst for r in self.rows if r.worst is not None]
        return min(batch) if batch else None

    def reasons(self, report: DriftReport) -> list[str]:
        out = [f"batch: {r.condition} {r.worst:.4f}" for r in self.rows
               if r.worst is not None and not r.worst >= INVARIANCE_MIN]
        if self.tier == "bitwise":
            out += [f"bitwise: {r.condition} differs by {r.max_abs:.1e}" for r in self.rows
                    if r.worst is not None and r.worst >= INVARIANCE_MIN and r.max_abs]
        return out

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        if not self.rows:
            return {}
        lines = ["", f"  invariance of the candidate (cosine to each text embedded alone; below {INVARIANCE_MIN}: "
                     "it depends on the batch" + ("; the bitwise tier: any difference drifts"
                                                  if self.tier == "bitwise" else "") + "; max |diff| of a number):"]
        lines += [f"    {r.condition:<26} " + (f"skipped ({r.skipped})" if r.skipped is not None else
                                               f"{r.worst:.6f}  max |diff| {r.max_abs or 0.0:.1e}  {r.text!r}")
                  for r in self.rows]
        return {"details": lines}

    def cases(self, report: DriftReport) -> list[Case]:
        out = []
        for r in self.rows:
            if r.skipped is not None or r.worst is None:
                out.append(Case(f"invariance {r.condition}", skipped=r.skipped or "not measured"))
                continue
            bit_exact = self.tier != "bitwise" or not r.max_abs
            out.append(Case(f"invariance {r.condition}", out=f"worst {r.worst:.6f} for {r.text!r}",
                            failure=(f"cosine {r.worst:.6f} < {INVARIANCE_MIN} to {r.text!r} embedded alone"
                                     if r.worst < INVARIANCE_MIN else None if bit_exact else
                                     f"a number differs by {r.max_abs:.1e} from {r.text!r} embedded alone "
                                     "(bitwise)")))
        return out


# --- behaviours: inputs a side refuses as too long where the other embeds them -------------------------------------
@dataclass
class Behaviour:
    """Inputs of one group one side refuses as too long where the other embeds them: how many, the shortest, what
    the side said, the longest input it takes and where the other truncates, where they say."""
    side: str
    model: str
    group: str
    behaviour: str
    texts: int
    shortest_chars: int | None
    message: str
    max_tokens: int | None = None
    other_truncates_at: int | None = None


@dataclass
class Behaviours(Finding):
    key: ClassVar[str] = "behaviours"
    found: list[Behaviour] = field(default_factory=list)  # one per side and group

    def to_json(self) -> dict[str, Any]:
        return {"behaviours": _json(self.found)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Behaviours | None:
        return cls(read_records(Behaviour, data.get("behaviours")))

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        lines = []
        for b in self.found:
            other = "the candidate" if b.side == "reference" else "the reference"
            limits = ((f"; it takes at most {b.max_tokens} tokens" if b.max_tokens else "")
                      + (f", {other} truncates at {b.other_truncates_at}" if b.other_truncates_at else ""))
            lines += ["", f"  behaviour: {b.model} refuses {b.texts} input(s) of the {b.group} group that "
                          f"{other} embeds (the shortest {b.shortest_chars} characters{limits}: "
                          f"{b.message[:100]}); they are left out of the cosines, the rest of the group is scored"]
        return {"details": lines} if lines else {}

    def cases(self, report: DriftReport) -> list[Case]:
        return [Case(f"behaviour {b.side} {b.group}", skipped=f"{b.behaviour}: {b.texts} input(s): {b.message[:160]}")
                for b in self.found]


# --- the PhysScore side: Table 1 of both sides and the paired bootstrap Δτ ------------------------------------------
@dataclass
class PhysScore(Finding):
    """Table 1 τ and PACC of both sides (None: not scored), Δτ (candidate − reference) with its 95% interval (None:
    no bootstrap), the cells whose τ changed; written at the top level of drift.json."""
    key: ClassVar[str] = "physscore"
    reference_tau: float | None = None
    candidate_tau: float | None = None
    reference_pacc: float | None = None
    candidate_pacc: float | None = None
    delta_tau: float | None = None
    cells_changed: list[str] = field(default_factory=list)
    delta_tau_ci_low: float | None = None
    delta_tau_ci_high: float | None = None

    @property
    def ran(self) -> bool:
        return self.reference_tau is not None

    def to_json(self) -> dict[str, Any]:
        return record_json(self) if self.ran else {}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PhysScore | None:
        found = from_record(cls, data)
        return found if found.ran else None

    def lines(self, report: DriftReport) -> dict[str, list[str]]:
        if not self.ran:
            return {}
        ci = "" if self.delta_tau_ci_low is None else f" [{self.delta_tau_ci_low:.2f}, {self.delta_tau_ci_high:.2f}]"
        return {"details": ["", f"  PhysScore: Table 1 tau {self.reference_tau:.2f} -> {self.candidate_tau:.2f} "
                                f"(delta {self.delta_tau:+.2f}{ci}), "
                                f"PACC {self.reference_pacc:.2f} -> {self.candidate_pacc:.2f}; "
                                f"{len(self.cells_changed)} of 20 cells changed"]}


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


def collision_clusters(listed: list[Collision]) -> list[list[Collision]]:
    """The collisions grouped by the texts they join (the pairs of one collapse together: k texts on one vector are
    one cluster of k(k-1)/2 pairs), in the order of each cluster's first pair."""
    parent: dict[str, str] = {}

    def root(t: str) -> str:
        while parent.setdefault(t, t) != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for c in listed:
        parent[root(c.text_a)] = root(c.text_b)
    clusters: dict[str, list[Collision]] = {}
    for c in listed:
        clusters.setdefault(root(c.text_a), []).append(c)
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
