"""The protocol: which strings are embedded, with which values, grouped into which encode calls.

``fasteval.core.protocol`` exposes the paper protocol's constants and generators (``paper.py``) and the text
groups of each exam (``groups.py``). PROTOCOL.md beside this file is the protocol in words.
"""
from .paper import (  # noqa: F401
    BareNumber, CONVERSION_PAIRS, CONVERSION_SIGMA, ConversionPair, DIGITS, EXAM2_N_FLOATS, EXAM2_N_INTS,
    EXAM2_SEED, PROBE_ALPHAS, PROBE_MIN_TEST, PROBE_N_SPLITS, PROBE_SEED, PROBE_TEST_FRACTION, PROTOCOL_VERSION,
    QUANTITIES, RANGE_NAMES, WORDS, conversion_exam_texts, conversion_texts, conversion_values,
    digits_words_texts, display_name, exam1_cells, exam2_items, format_quantity, model_id,
    plural_unit, probe_split, range_values,
)
from .groups import (  # noqa: F401
    conversion_groups, exam1_groups, exam2_groups, exam3_groups, protocol_cells,
)  # noqa: F401
