"""What a drift asks, decided once (``plan_drift``), as a sweep's is by ``plan_sweep``: the options, the texts (the
protocol's encode calls in the paper's grouping, the conformance set, a user's file), what each side is scored as,
and int8's calibration texts that no call holds. Everything drift can refuse of its request is refused here, before
a model is loaded or a text sent; `fasteval drift` makes one ``DriftPlan`` and hands it to every candidate (a texts
file read once, each side's scoring made once)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...choices import DRIFT_RESAMPLES, INVARIANCE_TIERS, check_choice
from ...errors import InputError
from ...plan import Scoring, scoring
from ...protocol.conformance import TextGroup, conformance_groups, user_groups
from ...results.drift import DEFAULT_THRESHOLD
from .score import MAX_TEXTS

PROTOCOL_GROUP = "protocol"


@dataclass(frozen=True)
class DriftOptions:
    """What a drift was asked besides its texts (checked by ``plan_drift``)."""
    threshold: float
    resamples: int
    fail_on_collisions: bool = False
    expect_model: str | None = None
    expect_precision: str | None = None
    invariance: bool = True
    invariance_tier: str = "cosine"
    diagnose: bool = True
    accept: tuple[str, ...] = ()


@dataclass(frozen=True)
class DriftPlan:
    """One drift's request, validated: ``options``; ``groups``, drift's groups of texts (the protocol's first);
    ``protocol_calls``, the protocol's encode calls (the paper's grouping, so the PhysScore side is each encoder's
    Table 1); ``calibration``, int8's own calibration texts that no call holds (embedded by both sides, in one more
    call); ``scorings``, what each side (reference, candidate) is planned for."""
    options: DriftOptions
    groups: tuple[TextGroup, ...]
    protocol_calls: tuple[tuple[str, ...], ...]
    calibration: tuple[str, ...]
    scorings: tuple[Scoring, Scoring]

    @property
    def calls(self) -> list[list[str]]:
        """Every encode call of both sides' protocol texts: the protocol's, then the calibration texts' (if any)."""
        return [list(c) for c in self.protocol_calls] + ([list(self.calibration)] if self.calibration else [])

    @property
    def texts(self) -> list[str]:
        """Every text of drift's groups, once each, in group order."""
        return all_texts(self.groups)


def plan_drift(*, texts: str | Path | None = None, conformance: bool = True, threshold: float = DEFAULT_THRESHOLD,
               fail_on_collisions: bool = False, resamples: int = DRIFT_RESAMPLES, expect_model: str | None = None,
               expect_precision: str | None = None, invariance: bool = True, invariance_tier: str = "cosine",
               diagnose: bool = True, accept: list[str] | tuple[str, ...] = (),
               reference_vectors: dict[str, Any] | None = None,
               candidate_vectors: dict[str, Any] | None = None) -> DriftPlan:
    """A drift's request, validated once (InputError naming the fix; nothing loaded, nothing sent). The texts: the
    paper's Exam 1 texts, the conformance set (``conformance``) and a user's file (``texts``, one a line).
    ``threshold``: the cosine below which a text has drifted, in (0, 1]; ``resamples``: the paired bootstrap of
    Δτ (0: none); ``fail_on_collisions``: a collision drifts; ``expect_model``: the model id the candidate must say
    it is (a served model's id, else its name); ``expect_precision``: the weights' precision it must say it serves
    (``q8_0``, say; default: the reference's, where both say theirs); ``invariance``: also embed a few texts with
    the candidate alone, in batches of several sizes and with several requests in flight; ``invariance_tier``:
    "cosine" (a condition below 0.999 drifts) or "bitwise" (any difference drifts); ``diagnose``: name the usual
    misconfiguration of the reference a drifting candidate embeds like; ``accept``: groups whose drift is known and
    accepted (measured and shown, never a reason to drift); ``reference_vectors``, ``candidate_vectors``: what a
    vector store keeps of that side (``dimensions``, ``vector_quantization``, ``calibration``, as
    ``fasteval.evaluate`` takes them)."""
    check_limits(threshold, resamples)
    check_choice(invariance_tier, INVARIANCE_TIERS, "invariance tier", "--invariance")
    base = drift_scoring()
    scorings = (drift_scoring(**reference_vectors) if reference_vectors else base,
                drift_scoring(**candidate_vectors) if candidate_vectors else base)
    calls = base.groups()
    groups = _groups(calls, conformance, texts)
    options = DriftOptions(threshold, resamples, fail_on_collisions, expect_model, expect_precision, invariance,
                           invariance_tier, diagnose, tuple(accepted_groups(accept, groups)))
    seen = {t for call in calls for t in call}
    calibration = tuple(t for t in dict.fromkeys(t for s in scorings for t in s.calibration_texts()) if t not in seen)
    return DriftPlan(options, tuple(groups), tuple(map(tuple, calls)), calibration, scorings)


def drift_scoring(**vectors: Any) -> Scoring:
    """What each side is planned for: the paper's Exam 1 on the paper's protocol (the PhysScore side), with no
    bootstrap of its own (drift's is the paired one of Δτ); ``vectors``: what a store keeps of that side."""
    return scoring(exams=(1,), bootstrap=0, **vectors)


def check_limits(threshold: float, resamples: int) -> None:
    """InputError unless ``threshold`` is a cosine in (0, 1] and ``resamples`` a count >= 0 (what the CLI's
    --fail-below and --bootstrap pass)."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise InputError(f"The threshold (--fail-below) must be a cosine in (0, 1], got {threshold!r}.",
                         "pass a cosine such as 0.99.")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise InputError(f"resamples (--bootstrap) must be a whole number >= 0, got {resamples!r}.",
                         "pass 0 (no interval) or a number of resamples.")


def accepted_groups(accept: list[str] | tuple[str, ...], groups: list[TextGroup]) -> list[str]:
    """``accept`` (group names) as a list without repeats; InputError naming drift's groups for one it has not."""
    names = [g.name for g in groups]
    unknown = [a for a in accept if a not in names]
    if unknown:
        raise InputError(f"drift has no group {', '.join(map(repr, unknown))} to accept.",
                         f"name one of {', '.join(names)}.")
    return list(dict.fromkeys(accept))


def _groups(calls: list[list[str]], conformance: bool, texts: str | Path | None) -> list[TextGroup]:
    """Drift's groups of texts: the protocol's (``calls``), the conformance set's, a user's file; InputError past
    MAX_TEXTS (before a text is sent: a paid API is not sent 21,000 texts for nothing)."""
    groups = [TextGroup(PROTOCOL_GROUP, "the paper's Exam 1 texts (the PhysScore side)",
                        list(dict.fromkeys(t for c in calls for t in c)))]
    groups += conformance_groups() if conformance else []
    groups += user_groups(Path(texts)) if texts else []
    total = len(all_texts(groups))
    if total > MAX_TEXTS:
        raise InputError(f"{total} texts are more than drift compares ({MAX_TEXTS}).", "pass fewer texts.")
    return groups


def all_texts(groups: list[TextGroup] | tuple[TextGroup, ...]) -> list[str]:
    return list(dict.fromkeys(t for g in groups for t in g.texts))
