"""The texts of each exam, grouped into encode calls exactly as the paper's notebook grouped them.

Batch composition changes the last bits of an embedding, so the grouping is part of the protocol
(PROTOCOL.md 0.2): one call per (quantity, range) cell, per digits or words list, per side of a conversion
pair, and one for the 100 bare numbers. A text that an earlier group already embedded is taken from there.
"""
from __future__ import annotations

from . import paper as P


def exam1_groups() -> list[list[str]]:
    """Exam 1's encode calls in notebook order: 20 cells, digits/words per quantity, conversion sides."""
    groups = exam3_groups()
    for quantity in P.QUANTITIES:
        groups.extend(P.digits_words_texts(quantity))
    for pair in P.CONVERSION_PAIRS:
        groups.extend(P.conversion_texts(pair))
    return groups


def exam2_groups() -> list[list[str]]:
    """Exam 2's one encode call: the 100 bare numbers in item order."""
    return [[item.text for item in P.exam2_items()]]


def exam3_groups() -> list[list[str]]:
    """Exam 3's encode calls: the 20 cells of Exam 1 (the probe reuses their embeddings)."""
    return [cell.texts for cell in P.exam1_cells()]


def conversion_groups() -> list[list[str]]:
    """The conversion exam's calls after Exam 1's (whose A and most B texts it reuses): per pair, its
    pint-converted B texts, then its lexical traps; only texts not embedded before are encoded."""
    groups = []
    for pair in P.CONVERSION_PAIRS:
        _, equivalents, traps = P.conversion_exam_texts(pair)
        groups += [equivalents, traps]
    return groups


def protocol_cells(protocol=None) -> list:
    """The Exam 1 cells of a protocol (``fasteval.core.protocol.spec.Protocol``; None or the paper: the
    paper's 20)."""
    if protocol is None or protocol.is_paper:
        return P.exam1_cells()
    return protocol.cells()


def file_protocol_groups(protocol) -> list[list[str]]:
    """A protocol file's encode calls: one per cell, then per (variant, quantity) its digits and its words."""
    groups = [cell.texts for cell in protocol.cells()]
    for variant in protocol.variants:
        for quantity in protocol.quantities:
            groups += [g for g in protocol.digits_words_texts(quantity.name, variant) if g]
    return groups
