"""A run planned once, and carried out: every entry point that scores an encoder goes through here.

``scoring(...)`` turns what a caller asked for (protocol, exams, similarity, --normalize-quantities, bootstrap)
into a frozen ``Scoring``, doing all the validation; it needs no encoder, so a sweep refuses a bad protocol file
before it loads a model. ``plan(encoder, scoring)`` adds the encoder: it goes through the one door
(``fasteval.core.encoders.as_encoder``), says once what it is (``describe``: its name, ``info``, tokenizer), and
the plan holds every decision that follows from that: the settings a result records, its result key and its
embedding key, the batching, the encode calls. ``run(plan)`` embeds and scores; ``score(plan, table)`` runs the
plan's exams on an embedding table that is already filled (the MTEB tasks' rows, drift's sides).

``evaluate(encoder, ...)`` is the two in one call: the library's public entry point (``fasteval.evaluate``).
The sweep (``core/runs/job.py``), drift (a plan a side), the MTEB tasks and the training evaluator build a plan
and call it; nothing else decides a setting, a key or an exam list.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from . import protocol as P
from . import choices
from .choices import BATCHINGS, DEFAULT_RESAMPLES, check_choice
from .embeddings import EmbeddingTable, EncoderView, describe, embed_groups
from .errors import InputError
from .protocol.spec import Protocol
from .results.model import ModelResult
from .vectors import VectorForm, vector_form

# Settings that change an embedding (the embedding cache key) ...
EMBEDDING_SETTINGS = ("source_sha256", "onnx_sha256", "provider", "dtype", "batch_size", "batch_order",
                      "prompt", "pooling", "include_prompt", "normalize", "max_seq_length", "dense",
                      "normalize_quantities", "batching", "batch_tokens", "packing", "deployment")
# ... and those that change a number only downstream of the embeddings (a served model's local tokenizer
# changes Exam 2's token Levenshtein).
SCORING_SETTINGS = ("similarity", "exams", "protocol", "bootstrap", "tokenizer", "pacc_value_ties", "dimensions",
                    "vector_quantization", "calibration", "turbovec")
# What never enters a key: names and paths (a model is keyed by its content hashes, wherever it lies and whatever it
# is called), a prompt's name (its text is keyed), a protocol file's description (its content is in "protocol"), and
# a finished result's own key. Every other setting does: those named above, and any other an encoder's ``info``
# holds (a user's encoder with ``{"revision": "v2"}`` is keyed apart from "v1"), when it holds it.
NEVER_KEYED = ("model", "source", "name", "prompt_name", "protocol_file", "key")
# Settings that enter a key only when set (options at their default leave it as it was before they existed:
# a finished paper sweep is never redone for an option it does not use).
KEYED_WHEN_SET = ("normalize_quantities", "bootstrap", "batching", "batch_tokens", "packing", "deployment",
                  "tokenizer", "pacc_value_ties", "dimensions", "vector_quantization", "calibration", "turbovec")


def _digest(obj: Any, length: int = 16) -> str:
    text = json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]


_LISTED = frozenset(EMBEDDING_SETTINGS + SCORING_SETTINGS + NEVER_KEYED)


def _keyed(settings: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The named settings (each of KEYED_WHEN_SET only when set), and every setting no list names (an encoder's
    own, such as a revision): those enter a key where they are, and leave it as it was where they are not."""
    keyed = {k: settings.get(k) for k in names if k not in KEYED_WHEN_SET or settings.get(k)}
    return {**keyed, **{k: v for k, v in settings.items() if k not in _LISTED}}


def embedding_key(settings: Mapping[str, Any]) -> str:
    """The key of an encoder's embeddings in the cache: a hash of the settings that change an embedding."""
    return _digest(_keyed(settings, EMBEDDING_SETTINGS))


def result_key(settings: Mapping[str, Any]) -> str:
    """The key of a result folder: a hash of every setting that changes a number."""
    return _digest(_keyed(settings, EMBEDDING_SETTINGS + SCORING_SETTINGS))


@dataclass(frozen=True)
class Scoring:
    """What is asked of any encoder, validated (``scoring``): the protocol, the exams on it, the similarity,
    whether the encoder is given canonical quantities, and the bootstrap's resamples for Exam 1; ``keyed``, what
    of these a result records (beside the encoder's own settings)."""
    protocol: Protocol
    exams: tuple[int | str, ...]
    similarity: str = "cos"
    normalize_quantities: bool = False
    bootstrap: int = DEFAULT_RESAMPLES
    keyed: dict[str, Any] = field(default_factory=dict, repr=False)  # a plain dict: a Job travels to Ray
    vectors: VectorForm | None = None  # what a vector store keeps, scored instead of the float vectors

    def settings(self, info: Mapping[str, Any]) -> dict[str, Any]:
        """Everything that changes a number: the encoder's settings (``info``: hashes, provider, dtype, prompt,
        ...) and these. The one place a result's settings are built; its key hashes part of them."""
        return {**info, **self.keyed}

    @property
    def resamples(self) -> int:
        """The bootstrap's resamples this scoring runs (Exam 1's; 0 where Exam 1 is not among the exams)."""
        return self.bootstrap if 1 in self.exams else 0

    @property
    def rewrite(self) -> Callable[[str], str] | None:
        """What the encoder is given instead of each protocol text (None: the text itself)."""
        if not self.normalize_quantities:
            return None
        from .quantities import canonical_text

        return canonical_text

    def groups(self) -> list[list[str]]:
        """The encode calls of these exams on this protocol, in order (``exams.protocol_groups``), and last the
        texts int8 vectors are calibrated on that no exam embeds."""
        from .exams import protocol_groups

        groups = protocol_groups(self.exams, self.protocol)
        seen = {t for g in groups for t in g}
        extra = [t for t in self.calibration_texts() if t not in seen]
        return groups + ([extra] if extra else [])

    def calibration_set(self) -> list[str]:
        """What a calibrated vector form is calibrated on, as it weighs them (Table 1's texts, one a cell it is in,
        or a file's); none for other vectors."""
        return self.vectors.calibration_of(self.table1_texts()) if self.vectors else []

    def calibration_texts(self) -> list[str]:
        """The calibration set's texts once each (what is embedded for it)."""
        return list(dict.fromkeys(self.calibration_set()))

    def table1_texts(self) -> list[str]:
        """The texts of Table 1's cells of this protocol (int8's calibration set unless a file is given)."""
        return [t for c in P.protocol_cells(self.protocol) for t in c.texts]


def scoring(*, exams: Iterable[int | str] | str | None = None, similarity: str = "cos",
            protocol: str | Protocol | None = None, normalize_quantities: bool = False,
            bootstrap: int = DEFAULT_RESAMPLES, dimensions: int | None = None,
            vector_quantization: str | None = None, calibration: Any = None) -> Scoring:
    """What a caller asked for, validated once: ``protocol`` a built-in's name, a protocol file or a Protocol
    (None: the paper's); ``exams`` a selection (None: the paper's exams the protocol supports); ``similarity`` cos,
    dot or l2 (aliases accepted); ``bootstrap`` >= 0; the vectors scored (``core.vectors``): ``dimensions`` kept,
    ``vector_quantization`` one of ``core.vectors.FORMS`` (the one-bit ones scored with Hamming similarity), a
    calibrated form's ``calibration`` texts or file.
    InputError (or ProtocolError) naming the fix."""
    from .exams import for_protocol
    from .exams.statistics import bootstrap_settings
    from .protocol.loading import resolve_protocol
    from .quantities import CANONICAL_VERSION

    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int):
        raise InputError(f"bootstrap must be a whole number of resamples, not {bootstrap!r}.",
                         "pass 0 (off) or a number of resamples.")
    resolved = resolve_protocol(protocol)
    chosen = for_protocol(resolved, exams)
    similarity = choices.similarity(similarity)
    vectors = vector_form(dimensions, vector_quantization, calibration)
    if vectors is not None and (vectors.bits == 1 or vectors.asymmetric):
        if similarity != "cos":
            how = ("as the store scores a float query against them" if vectors.asymmetric else
                   "with Hamming similarity")
            raise InputError(f"{vectors.quantization} vectors are scored {how}, not with {similarity}.",
                             f"leave --similarity out with --vector-quantization {vectors.quantization}.")
        similarity = vectors.similarity(similarity)
    resampled = bootstrap_settings(bootstrap)  # refuses a negative count
    keyed: dict[str, Any] = {"similarity": similarity, "exams": list(chosen), "protocol": resolved.key}
    if normalize_quantities:
        keyed["normalize_quantities"] = CANONICAL_VERSION
    if 1 in chosen and resampled:
        keyed["bootstrap"] = resampled
    if not resolved.is_paper:
        keyed["protocol_file"] = resolved.describe()
        # a protocol file may repeat a value: its equal-value pairs are left out of PACC (they were once counted
        # as wrong), so its results are keyed apart from those made before (the paper's never repeat one)
        keyed["pacc_value_ties"] = "skip"
    if vectors is not None:
        keyed.update(vectors.keyed())
    return Scoring(resolved, chosen, similarity, bool(normalize_quantities), int(bootstrap), keyed, vectors)


@dataclass(frozen=True)
class Plan:
    """One encoder's evaluation, decided (``plan``): what is asked (``scoring``), what the encoder says it is
    (``view``, read once), how its texts are batched, and what follows: the settings a result records, its key
    and its embeddings' key."""
    scoring: Scoring
    view: EncoderView
    batching: str
    settings: Mapping[str, Any] = field(repr=False)
    key: str
    embedding_key: str

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def encoder(self) -> Any:
        return self.view.encoder

    @property
    def served(self) -> bool:
        """Whether the model is a deployment a server answers for (its identity is what the server says): the one
        place this is decided."""
        return bool(self.settings.get("deployment"))

    def groups(self) -> list[list[str]]:
        """The encode calls: the protocol's groups, or every distinct text in one call when packed."""
        groups = self.scoring.groups()
        if self.batching == "packed":  # one call; the encoder sorts and cuts it (fasteval's by a token budget)
            groups = [list(dict.fromkeys(t for group in groups for t in group))]
        return groups

    def settle(self) -> Plan:
        """The plan as the encoder will run it, before anything is looked up under a key: an encoder whose settings
        may still change is started (``settle()``: its session opened, where a GPU may fall back to the CPU), and
        the settings, keys and folder follow what it says; else itself."""
        if self.view.settle is not None:
            self.view.settle()
        return self.settled()

    def settled(self) -> Plan:
        """The plan as the encoder ran it: where a setting settled only when it ran (the GPU it was offered fell
        back to the CPU; the encoder's ``settled()``), the settings, keys and so the folder follow; else itself."""
        changed = self.view.settled() if self.view.settled is not None else None
        if not changed or all(self.view.info.get(k) == v for k, v in changed.items()):
            return self
        return _planned(self.scoring, replace(self.view, info={**self.view.info, **changed}), self.batching)


def _planned(chosen: Scoring, view: EncoderView, batching: str) -> Plan:
    settings = chosen.settings(view.info)
    return Plan(chosen, view, batching, MappingProxyType(settings), result_key(settings), embedding_key(settings))


def plan(encoder: Any, chosen: Scoring | None = None, *, name: str | None = None, batching: str | None = None,
         **load_options: Any) -> Plan:
    """``encoder`` (anything the one door takes: a name, folder, URL, receipt, or an object with ``encode``;
    ``load_options`` are ``load_model``'s) planned for ``chosen`` (default: the paper's protocol and exams).
    ``name`` overrides the encoder's; ``batching`` "paper" or "packed" (default: the encoder's own setting,
    else the paper's)."""
    from .encoders import as_encoder

    chosen = chosen if chosen is not None else scoring()
    if batching is not None:  # asked for; an encoder's own setting is its own (fasteval's checks it when made)
        check_choice(batching, BATCHINGS, "batching", "--batching")
    view = describe(as_encoder(encoder, **load_options), name)
    return _planned(chosen, view, batching or view.info.get("batching") or BATCHINGS[0])


def score(planned: Plan, table: EmbeddingTable, on_step: Callable[[str], None] | None = None,
          timings: dict[str, float] | None = None) -> dict[str, Any]:
    """The plan's exams on ``table`` (every text of their groups embedded): exam key -> result. The one loop
    that runs exams; each step's seconds go to ``timings`` when given."""
    from .exams import ExamInputs, selected

    chosen = planned.scoring
    timed = step_timer(on_step, timings if timings is not None else {})
    if chosen.vectors is not None:  # what a vector store keeps, made from the float table (cached as it is)
        calibration = chosen.calibration_set()
        with timed("vectors"):
            table = chosen.vectors.apply(table, calibration)
    inputs = ExamInputs(table, chosen.similarity, chosen.protocol, chosen.resamples,
                        planned.view.token_ids, chosen.rewrite)
    exams = selected(chosen.exams)
    if any(e.uses_cell_similarities for e in exams):
        with timed("similarity"):
            inputs.similarities()
    results = {}
    for e in exams:
        with timed(e.key):
            results[e.key] = e.run(inputs)
    return results


def run(planned: Plan, table: EmbeddingTable | None = None,
        on_step: Callable[[str], None] | None = None,
        checkpoint: Callable[[EmbeddingTable], None] | None = None) -> ModelResult:
    """Carry out ``planned``: embed every distinct text once, in the plan's encode calls (``table`` may hold
    embeddings from an earlier run and is filled in place), then score. ``on_step(name)`` is told each step;
    ``checkpoint(table)`` after each encode call (a sweep saves what was embedded now and then)."""
    from .. import __version__

    result = ModelResult(model=planned.name, model_id=P.model_id(planned.name), settings=dict(planned.settings),
                         protocol=planned.scoring.protocol.key, fasteval_version=__version__,
                         hf_id=hf_id_of(planned.name))
    timed = step_timer(on_step, result.timings)
    with timed("embed"):
        table = embed_groups(planned.encoder, planned.groups(), table, rewrite=planned.scoring.rewrite,
                             concurrency=planned.view.concurrency, name=planned.name, on_added=checkpoint)
    result.exams = score(planned, table, on_step, result.timings)
    if planned.view.usage is not None:  # a served model: what it sent and got
        result.usage = planned.view.usage.as_dict()
    ran = planned.settled()  # the GPU it was offered may have fallen back to the CPU: the result records what ran
    result.settings, result.machine = dict(ran.settings), machine_of(ran)
    return result


def hf_id_of(name: str) -> str | None:
    """A model's Hugging Face id where fasteval's registry knows it (by name, id or the paper's model id), written
    into its result when it is made: the records a report writes of it name it so on any later version."""
    from ..models.sources.registry import find_spec

    spec = find_spec(name)
    return spec.hf_id if spec is not None else None


def machine_of(planned: Plan) -> dict[str, Any]:
    """The machine block of a result (``models.machine.provenance``): this machine, and the provider that ran; a
    served model's numbers came from its server (the client's machine is recorded, no provider)."""
    from ..models.machine import provenance

    return provenance(None if planned.served else planned.settings.get("provider"))


def evaluate(encoder: Any, *, exams: Iterable[int | str] | None = None, similarity: str = "cos",
             name: str | None = None, table: EmbeddingTable | None = None,
             on_step: Callable[[str], None] | None = None, normalize_quantities: bool = False,
             bootstrap: int = DEFAULT_RESAMPLES, protocol: str | Protocol | None = None,
             batching: str | None = None, dimensions: int | None = None, vector_quantization: str | None = None,
             calibration: Any = None) -> ModelResult:
    """Run the chosen exams (default: the paper's exams the protocol supports; 1, 2, 3) on ``encoder``.

    ``encoder``: anything with ``encode(list[str]) -> array`` (a fasteval model, a sentence-transformers
    model, an MTEB model), or a name, folder or URL that ``fasteval.load_model`` takes. Every distinct text is
    embedded once, in the protocol's fixed group order (Exams 1 and 3 share their texts; ``table`` may hold
    embeddings from an earlier run), and the cell similarity matrices are computed once for the exams that share
    them. ``normalize_quantities``: the encoder is given each text's canonical form ("2 kilometers" -> "2000
    meters", "five meter" -> "5 meters"; bare numbers unchanged) while the exams score the protocol's own values.
    ``protocol``: a built-in protocol's name (``fasteval protocols``), a protocol file, or a loaded Protocol; the
    paper's by default. ``bootstrap``: resamples for Exam 1's 95% intervals (0: none). ``batching``: "paper" (one
    encode call per protocol group) or "packed" (every distinct text in one call); default: the encoder's own
    setting (``info["batching"]``), else the paper's. ``dimensions``, ``vector_quantization`` ("int8", "binary")
    and ``calibration``: the vectors a store keeps are scored instead of the float ones (``core.vectors``; the
    embeddings are the same). ``on_step(name)`` is called before each step (for progress bars); the library itself
    prints nothing.
    """
    chosen = scoring(exams=exams, similarity=similarity, protocol=protocol, normalize_quantities=normalize_quantities,
                     bootstrap=bootstrap, dimensions=dimensions, vector_quantization=vector_quantization,
                     calibration=calibration)
    return run(plan(encoder, chosen, name=name, batching=batching), table, on_step)


def step_timer(on_step: Callable[[str], None] | None, timings: dict[str, float]):
    """``with timed(name, shown=None):`` tells ``on_step`` (shown or name) a step begins, and adds the seconds
    of its block to ``timings[name]`` (a run's record of where its time went)."""
    @contextmanager
    def timed(name: str, shown: str | None = None):
        if on_step is not None:
            on_step(shown or name)
        start = time.perf_counter()
        yield
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - start

    return timed
