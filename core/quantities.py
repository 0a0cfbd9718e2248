"""Physical quantities in text, on pint: parse "2 kilometers", "5000 g", "0.005 tonnes", "3.5 h", "five meters";
compare their dimensions; convert them; rewrite them in one canonical form.

One ``pint.UnitRegistry`` for the whole program (``registry()``), loaded on first use. pint does the unit
arithmetic; this module only reads the number in front (digits, or English number words, which pint does not
read) and settles the one unit word on which the paper and pint disagree:

* **ton** - the paper's "ton" is the metric tonne (kilogram -> ton is v / 1000); pint's default ``ton`` is
  the short ton (907.18474 kg). fasteval reads "ton"/"tons" as the metric tonne and says so in a note
  (``TON_NOTE``); write "short ton" for pint's.
* **gallon** - pint's ``gallon`` is the US liquid gallon (3.785411784 L), which is what the paper's factor
  3.785 rounds.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from fasteval.core.errors import InputError

TON_NOTE = ("'ton' is read as the metric tonne (1000 kg), as the paper uses it; pint's default 'ton' is the "
            "short ton (907.18474 kg): write 'short ton' for that one")
# Number words (PROTOCOL.md 1.7 uses zero..ten and "one-hundred"); larger numbers are composed from these.
_UNITS_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                "sixteen seventeen eighteen nineteen").split()
_TENS_WORDS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
               "ninety": 90}
_SCALE_WORDS = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_SMALL_WORDS = {w: i for i, w in enumerate(_UNITS_WORDS)} | _TENS_WORDS
_NUMBER = re.compile(r"^\s*([+\-−]?(?:\d[\d,_]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(.*)$")
# The version of the canonical form (``canonical_text``): it is what a result key records for
# --normalize-quantities, so a change of the canonical form never reuses results made with the old one.
CANONICAL_VERSION = "canonical-1"
# The canonical unit of each dimension that the paper's quantities have (one unit per dimension).
CANONICAL_UNITS = {"[length]": "meter", "[mass]": "kilogram", "[length] ** 3": "liter", "[time]": "second"}


@lru_cache(maxsize=1)
def registry():
    """The program's one pint UnitRegistry (its definitions parsed once and cached on disk by pint)."""
    try:
        import pint
    except ImportError:  # pint is a dependency; this only guards a broken install
        raise InputError("Reading quantities needs pint.", "pip install pint") from None
    try:
        return pint.UnitRegistry(cache_folder=":auto:")
    except Exception:  # noqa: BLE001 - an unwritable cache folder: parse the definitions every time
        return pint.UnitRegistry()


@dataclass(frozen=True)
class ParsedQuantity:
    """A quantity read from a text: its number as written, its unit as pint names it, and notes."""
    text: str
    value: float
    unit: str  # pint's canonical unit name, e.g. "kilometer", "metric_ton"
    notes: tuple[str, ...] = ()

    @property
    def quantity(self):
        return registry().Quantity(self.value, self.unit)

    @property
    def dimensionality(self) -> str:
        return str(self.quantity.dimensionality)

    def to(self, unit: str) -> float:
        """The magnitude in ``unit``."""
        return float(self.quantity.to(unit).magnitude)


def parse_number_words(words: str) -> float | None:
    """English number words -> their value ("five" 5, "one-hundred" 100, "two thousand and five" 2005,
    "minus three" -3); None when ``words`` is not a number."""
    tokens = [t for t in re.split(r"[\s-]+", words.strip().lower()) if t and t != "and"]
    if not tokens:
        return None
    sign = 1
    if tokens[0] in ("minus", "negative"):
        sign, tokens = -1, tokens[1:]
    total = current = 0
    seen = False
    for token in tokens:
        if token in _SMALL_WORDS:
            current += _SMALL_WORDS[token]
        elif token in _SCALE_WORDS and seen:
            scale = _SCALE_WORDS[token]
            if scale == 100:
                current *= 100
            else:
                total += current * scale
                current = 0
        elif token in ("a", "an") and not seen:
            current = 1
        else:
            return None
        seen = True
    return float(sign * (total + current)) if seen else None


def _split_number(text: str) -> tuple[float, str] | None:
    """(number, rest) for a text that starts with digits or number words; None otherwise."""
    match = _NUMBER.match(text)
    if match:
        number = match.group(1).replace(",", "").replace("_", "").replace("−", "-")
        return float(number), match.group(2).strip()
    words = text.strip().split()
    for k in range(len(words), 0, -1):  # the longest run of leading words that reads as a number
        value = parse_number_words(" ".join(words[:k]))
        if value is not None:
            return value, " ".join(words[k:])
    return None


def _unit_word(rest: str) -> tuple[str, tuple[str, ...]]:
    """The unit text as pint should read it, and the notes its reading needs."""
    lowered = rest.strip().lower()
    if lowered in ("ton", "tons"):
        return "metric_ton", (TON_NOTE,)
    return rest.strip(), ()


def parse_quantity(text: str) -> ParsedQuantity:
    """Read "<number> <unit>" (digits or number words; any unit pint knows). InputError naming the text."""
    fix = "write a number and a unit, e.g. '2 kilometers', '5000 g', '3.5 h' or 'five meters'."
    split = _split_number(text)
    if split is None:
        raise InputError(f"Cannot read a number in {text!r}.", fix)
    value, rest = split
    if not rest:
        raise InputError(f"{text!r} has no unit.", fix)
    unit_text, notes = _unit_word(rest)
    ureg = registry()
    try:
        unit = ureg.Unit(unit_text)
    except Exception:  # noqa: BLE001 - pint raises UndefinedUnitError, DefinitionSyntaxError, ...
        try:  # plural forms pint does not know ("liters" it knows; "metres"? it does): last resort, strip "s"
            unit = ureg.Unit(unit_text[:-1]) if unit_text.endswith("s") else None
        except Exception:  # noqa: BLE001
            unit = None
        if unit is None:
            raise InputError(f"pint does not know the unit {rest!r} in {text!r}.", fix) from None
    if not math.isfinite(value):
        raise InputError(f"{text!r} is not a finite number.", fix)
    return ParsedQuantity(text=text, value=value, unit=str(unit), notes=notes)


def convert(value: float, unit_from: str, unit_to: str) -> float:
    """``value`` in ``unit_from`` expressed in ``unit_to`` (unit words as in ``parse_quantity``: "ton" is the
    metric tonne)."""
    ureg = registry()
    source, target = _unit_word(unit_from)[0], _unit_word(unit_to)[0]
    return float(ureg.Quantity(value, source).to(target).magnitude)


def format_number(value: float) -> str:
    """Plain decimal digits, no exponent, at most 12 significant digits: 2000, 0.5, 0.000001, -100."""
    from decimal import Decimal

    value = float(f"{value:.12g}")
    if value == 0:
        return "0"
    text = format(Decimal(repr(value)), "f")  # repr is the shortest exact form; "f" spells out its exponent
    return text.rstrip("0").rstrip(".") if "." in text else text


@lru_cache(maxsize=None)
def canonical_text(text: str) -> str:
    """The canonical form of a quantity text: the dimension's one unit (meter, kilogram, liter, second),
    plain decimal digits, number words as digits, plural unless |value| = 1: "2 kilometers" -> "2000 meters",
    "five meter" -> "5 meters", "1e-06 meter" -> "0.000001 meters". A text that is not a quantity of one of
    those dimensions (a bare number, a sentence) is returned as it is."""
    from fasteval.core.protocol.paper import plural_unit

    try:
        parsed = parse_quantity(text)
    except InputError:
        return text
    unit = CANONICAL_UNITS.get(parsed.dimensionality)
    if unit is None:
        return text
    value = parsed.to(unit)
    return f"{format_number(value)} {plural_unit(float(format_number(value)), unit)}"
