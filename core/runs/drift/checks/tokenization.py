"""Tokenization: where both sides can tokenize (a server by its /tokenize, never a local stand-in; a local model by
its tokenizer), the drifted texts' token ids compared: a candidate that tokenizes them into other ids, or cuts them
at another length, is named as the explanation of its drift."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ....embeddings import ServerTokens
from ....errors import FastevalError, first_line
from ....results.drift import drifted
from ....results.drift_findings import TokenizedText, Tokenization
from ..score import short

if TYPE_CHECKING:
    from . import DriftRun

log = logging.getLogger(__name__)

STAGE = "scored"
STEP = ("tokenization", "compare the drifted texts' tokens")
MAX_TOKENIZED = 50  # drifted texts (the worst first) whose token ids are compared


def applies(run: DriftRun) -> bool:
    return bool(drifted_texts(run))


def drifted_texts(run: DriftRun) -> list[str]:
    """The drifted texts, NaN first, then the worst, at most MAX_TOKENIZED."""
    worst = sorted(((c, t) for t, c in run.scored.cosines.items() if drifted(c, run.options.threshold)),
                   key=lambda ct: (ct[0] == ct[0], ct[0]))
    return [t for _c, t in worst[:MAX_TOKENIZED]]


def check(run: DriftRun) -> Tokenization:
    texts = drifted_texts(run)
    ids = []
    for view in (p.view for p in run.plans):
        ask = view.encoder.server_token_ids if isinstance(view.encoder, ServerTokens) else view.token_ids
        try:
            got = ask(list(texts)) if ask is not None else None
        except FastevalError as err:
            log.info("%s could not tokenize the drifted texts: %s", view.name, first_line(err, 160))
            got = None
        if got is None or len(got) != len(texts):
            return Tokenization()
        ids.append(got)
    return compare_tokenizations(texts, ids[0], ids[1])


def compare_tokenizations(texts: list[str], reference: list[list[int]], candidate: list[list[int]],
                          examples: int = 3) -> Tokenization:
    """How two tokenizers' ids of the same ``texts`` compare: how many were compared, how many the candidate
    tokenizes into other ids (``differ``), how many into the same ids cut at another length (``truncated``), and
    the first few differing ones (text, both sides' first ids and their counts)."""
    differ, truncated = 0, 0
    shown: list[TokenizedText] = []
    for text, a, b in zip(texts, reference, candidate):
        if list(a) == list(b):
            continue
        n = min(len(a), len(b))
        if list(a[:n]) == list(b[:n]):
            truncated += 1
            continue
        differ += 1
        if len(shown) < examples:
            shown.append(TokenizedText(short(text), list(a[:12]), list(b[:12]), len(a), len(b)))
    return Tokenization(len(texts), differ, truncated, shown)
