"""Token-count parity: a served candidate's ``usage.prompt_tokens`` for a few texts sent one a request, against the
reference tokenizer's count with its special tokens. A server that adds no BOS/EOS, or tokenizes otherwise, counts
otherwise: reported beside a drift as a clue, never gated (servers count by their own conventions)."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ....errors import FastevalError, first_line
from ....protocol.conformance import TextGroup
from ....results.drift_findings import CountedText, TokenCounts

if TYPE_CHECKING:
    from . import DriftRun

log = logging.getLogger(__name__)

STAGE = "scored"
STEP = ("token counts", "compare the server's token counts")
TOKEN_TEXTS = 12  # texts whose token counts a served candidate is asked, one a request


def applies(run: DriftRun) -> bool:
    """A candidate that counts what it is sent (``usage``) and a reference with a tokenizer to count with."""
    tokenizer = getattr(run.reference, "tokenizer", None)
    return (not run.receipt and not run.protocol_failed and run.plans[1].view.usage is not None
            and callable(getattr(tokenizer, "encode", None)))


def check(run: DriftRun) -> TokenCounts:
    return token_counts(run.reference.tokenizer, run.candidate, run.plans[1].view.usage, probe_texts(run.groups))


def probe_texts(groups: Sequence[TextGroup]) -> list[str]:
    """A few texts of every kind drift has (the protocol's first, then one of each other group), short of the long
    ones (a server may refuse them)."""
    picked = list(groups[0].texts[:4])
    for g in groups[1:]:
        picked += [t for t in g.texts if t and len(t) < 500][:1]
    return list(dict.fromkeys(picked))[:TOKEN_TEXTS]


def token_counts(tokenizer: Any, candidate: Any, usage: Any, texts: list[str]) -> TokenCounts:
    """Each text sent alone, the server's count for it against ``tokenizer``'s: ``compared``, ``differ`` (how many
    differ) and ``examples`` (those that differ most); none compared where the server reports no counts."""
    rows = []
    for text in texts:
        before = usage.prompt_tokens
        try:
            candidate.encode([text])
        except FastevalError as err:
            log.info("token counts: %r not embedded: %s", text, first_line(err, 120))
            continue
        said = usage.prompt_tokens - before
        if said <= 0:  # the server reports no counts
            return TokenCounts()
        rows.append(CountedText(text, len(tokenizer.encode(text).ids), said))
    if not rows:
        return TokenCounts()
    differ = sorted((r for r in rows if r.reference_tokens != r.candidate_tokens),
                    key=lambda r: -abs(r.reference_tokens - r.candidate_tokens))
    return TokenCounts(len(rows), len(differ), differ[:3])
