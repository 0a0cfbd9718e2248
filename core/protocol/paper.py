"""The paper protocol as data: quantities, value grids, phrase templates, seeds and splits (PROTOCOL.md 1-3).

Everything is generated from the rules written down in PROTOCOL.md beside this file, never typed in, and
this module is the one source of truth for every constant: exams and tests import from here. Importing it
costs only numpy.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .grids import logspace
from ..quantities import convert, plural_unit

PROTOCOL_VERSION = "paper-1"

# --- Exam 1 (PROTOCOL.md 1.1, 1.2, 1.7): read from builtin/paper.toml, the paper's protocol file ------------
def paper_protocol():
    """The paper's protocol file, parsed (cached)."""
    from .loading import builtin_protocol

    return builtin_protocol("paper")


_PAPER = paper_protocol()
QUANTITIES: tuple[str, ...] = tuple(q.name for q in _PAPER.quantities)
RANGE_NAMES: tuple[str, ...] = tuple(r.name for r in _PAPER.ranges)
_VARIANT = _PAPER.variants[0]


@lru_cache(maxsize=None)
def range_values(name: str) -> np.ndarray:
    """The raw values of one range (float64, ascending, read-only)."""
    try:
        values = np.array(_PAPER.range(name).values, dtype=np.float64)
    except StopIteration:
        raise KeyError(name) from None
    values.setflags(write=False)
    return values


def format_quantity(value: float, unit: str) -> str:
    """`"{:g} <unit(s)>"`: the non-scientific template of PROTOCOL.md 1.2 (also used by the conversion pairs)."""
    return f"{value:g} {plural_unit(value, unit)}"


@lru_cache(maxsize=1)
def _exam1_cells() -> tuple:
    return tuple(_PAPER.cells())


def exam1_cells() -> list:
    """The 20 cells (``spec.ProtocolCell``: quantity, range, values, texts), quantity-major in protocol order
    (meter x 5 ranges, then kilogram, ...): the paper protocol file's own cells."""
    return list(_exam1_cells())


DIGITS: tuple[str, ...] = _PAPER.digits
WORDS: tuple[str, ...] = _PAPER.words["en"]


def digits_words_texts(quantity: str) -> tuple[list[str], list[str]]:
    """(digit texts, word texts), unit always singular: `5 meter`, `five meter`."""
    return _PAPER.digits_words_texts(quantity, _VARIANT)


# --- Exam 1, unit-conversion curves (PROTOCOL.md 1.8) --------------------------------------------------------------
CONVERSION_SIGMA = 0.8


@dataclass(frozen=True)
class ConversionPair:
    panel: str
    unit_a: str
    unit_b: str
    factor: float  # B value = A value * factor (liter->gallon multiplies by 3.785 as the paper does, sic)

    @property
    def label(self) -> str:
        return f"{self.unit_a} ↔ {self.unit_b}"


CONVERSION_PAIRS: tuple[ConversionPair, ...] = (
    ConversionPair("Length", "meter", "centimeter", 100.0),
    ConversionPair("Length", "meter", "millimeter", 1000.0),
    ConversionPair("Length", "meter", "kilometer", 1 / 1000),
    ConversionPair("Mass", "kilogram", "gram", 1000.0),
    ConversionPair("Mass", "gram", "milligram", 1000.0),
    ConversionPair("Mass", "kilogram", "ton", 1 / 1000),
    ConversionPair("Volume", "liter", "milliliter", 1000.0),
    ConversionPair("Volume", "liter", "gallon", 3.785),
    ConversionPair("Time", "second", "millisecond", 1000.0),
    ConversionPair("Time", "minute", "second", 60.0),
    ConversionPair("Time", "hour", "minute", 60.0),
)


def conversion_values() -> np.ndarray:
    """40 log-spaced A values from 1e-2 to 1e3."""
    return logspace(-2, 3, 40)


def _convert(value: float, factor: float) -> float:
    # The paper writes `v / 1000` for the down-conversions; `v * (1/1000)` rounds differently.
    return value / round(1 / factor) if factor < 1 else value * factor


def conversion_texts(pair: ConversionPair) -> tuple[list[str], list[str]]:
    """(A texts, B texts) of one conversion pair, both with the non-scientific template."""
    a_values = conversion_values()
    return ([format_quantity(float(v), pair.unit_a) for v in a_values],
            [format_quantity(_convert(float(v), pair.factor), pair.unit_b) for v in a_values])


def conversion_exam_texts(pair: ConversionPair) -> tuple[list[str], list[str], list[str]]:
    """The conversion exam's texts of one pair (an extension, not the paper's): the A texts; the equivalent B
    texts, converted by pint (so liter -> gallon divides by 3.785411784, unlike the paper's curve); and the
    lexical traps, the A number with the B unit ("1 meter" -> "1 centimeter")."""
    a_values = [float(v) for v in conversion_values()]
    return ([format_quantity(v, pair.unit_a) for v in a_values],
            [format_quantity(convert(v, pair.unit_a, pair.unit_b), pair.unit_b) for v in a_values],
            [format_quantity(v, pair.unit_b) for v in a_values])


# --- Exam 2 (PROTOCOL.md 2.1) --------------------------------------------------------------------------------------
EXAM2_SEED = 12345
EXAM2_N_FLOATS = 50
EXAM2_N_INTS = 50


@dataclass(frozen=True)
class BareNumber:
    text: str
    value: float
    kind: str  # "float" | "int"

    @property
    def sign(self) -> str:
        return "positive" if self.value >= 0 else "negative"


@lru_cache(maxsize=1)
def exam2_items() -> tuple[BareNumber, ...]:
    """The 100 bare numbers: 50 floats then 50 ints from one `random.Random(12345)` stream."""
    rng = random.Random(EXAM2_SEED)
    floats = [round(rng.uniform(-1000, 1000), 5) for _ in range(EXAM2_N_FLOATS)]
    ints = [rng.randint(-1000, 1000) for _ in range(EXAM2_N_INTS)]
    return tuple([BareNumber(f"{v:.5f}", float(v), "float") for v in floats]
                 + [BareNumber(str(v), float(v), "int") for v in ints])


# --- Exam 3 (PROTOCOL.md 3.1, 3.3) ---------------------------------------------------------------------------------
PROBE_TEST_FRACTION = 0.35
PROBE_MIN_TEST = 4
PROBE_N_SPLITS = 5
PROBE_SEED = 12345
PROBE_ALPHAS: tuple[float, ...] = tuple(float(a) for a in logspace(-2, 4, 13))


def probe_split(n: int, split: int) -> tuple[np.ndarray, np.ndarray]:
    """(test, train) sorted index arrays of item-level split `split` for a range of n items (PROTOCOL.md 3.3)."""
    perm = np.random.default_rng(PROBE_SEED + split).permutation(n)
    n_test = min(max(PROBE_MIN_TEST, int(round(PROBE_TEST_FRACTION * n))), n - 3)
    return np.sort(perm[:n_test]), np.sort(perm[n_test:])


def display_name(name: str) -> str:
    """A model's name as a person reads it: the part after the last '/' ("all-MiniLM-L6-v2")."""
    return name.rstrip("/").rsplit("/", 1)[-1]


def model_id(name: str) -> str:
    """The paper's file-name id: the display name with every '-' replaced by '_' (PROTOCOL.md 0.2); folder and
    file names only, never what a person reads."""
    return display_name(name).replace("-", "_")
