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
import threading
from dataclasses import dataclass
from functools import lru_cache

from .errors import InputError

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
# The longest quantity text read (``parse_quantity``): a unit name is a few words, and pint's parser is not
# meant for pages of text (a 200 KB junk "unit" made it quadratic).
MAX_QUANTITY_CHARS = 200
# Two distances from one anchor are the same distance when they differ by less than this share of the inputs'
# magnitudes: unit conversion leaves float noise (0.7 m and 70 cm lie 0.30000000000000004 and
# 0.29999999999999993 m from 1 m), which must not rank physically equal distances.
DISTANCE_TIE_RTOL = 1e-9
# The version of the canonical form (``canonical_text``): it is what a result key records for
# --normalize-quantities, so a change of the canonical form never reuses results made with the old one.
CANONICAL_VERSION = "canonical-1"
# The canonical unit of each dimension that the paper's quantities have (one unit per dimension).
CANONICAL_UNITS = {"[length]": "meter", "[mass]": "kilogram", "[length] ** 3": "liter", "[time]": "second"}


_REGISTRY_LOCK = threading.Lock()


def registry():
    """The program's one pint UnitRegistry (its definitions parsed once and cached on disk by pint), built once
    even when a thread of ``load_registry_in_background`` builds it meanwhile."""
    with _REGISTRY_LOCK:
        return _registry()


def load_registry_in_background() -> threading.Thread:
    """Build the registry (~0.25 s: pint's import and definitions) in a daemon thread, beside work that leaves the
    GIL free (onnxruntime opening a session); ``registry()`` waits for it."""
    thread = threading.Thread(target=registry, name="fasteval-pint", daemon=True)
    thread.start()
    return thread


@lru_cache(maxsize=1)
def _registry():
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
    significant: int = 1  # the significant digits of the number as written ("2000" 4, "0.7" 1)

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


def _spellings(unit_text: str) -> list[str]:
    """The unit text, then the forms pint may know it by: plural words made singular ("meters" -> "meter",
    "degrees Celsius" -> "degree Celsius") and spaces as underscores ("light year" -> "light_year")."""
    from itertools import product

    words = unit_text.split()
    if len(words) > 4:  # a unit name is a few words
        return [unit_text]
    forms = [unit_text]
    for choice in product(*[dict.fromkeys([w, w[:-1] if len(w) > 3 and w.endswith("s") else w]) for w in words]):
        forms += [" ".join(choice), "_".join(choice)]
    return list(dict.fromkeys(f for f in forms if f))


def _read_unit(unit_text: str):
    """pint's Unit for the first spelling it knows; None when it knows none. Written in capitals ("5 Meter" at a
    sentence's start or in a heading, "2 METERS") when pint knows no spelling as written: its lower-case form
    (only then: "Mm" is a megameter, "mm" a millimeter)."""
    ureg = registry()
    initial = unit_text[:1].lower() + unit_text[1:]  # a sentence's first word: "Degrees Celsius" -> "degrees Celsius"
    for spelling in dict.fromkeys(_spellings(unit_text) + _spellings(initial) + _spellings(unit_text.lower())):
        try:
            return ureg.Unit(spelling)
        except Exception:  # noqa: BLE001 - pint raises UndefinedUnitError, DefinitionSyntaxError, ...
            continue
    return None


def parse_quantity(text: str) -> ParsedQuantity:
    """Read "<number> <unit>" (digits or number words; any unit pint knows). InputError naming the text."""
    fix = "write a number and a unit, e.g. '2 kilometers', '5000 g', '3.5 h' or 'five meters'."
    if len(text) > MAX_QUANTITY_CHARS:
        raise InputError(f"{text[:40]!r}... is {len(text)} characters long; a quantity is at most "
                         f"{MAX_QUANTITY_CHARS}.", fix)
    split = _split_number(text)
    if split is None:
        raise InputError(f"Cannot read a number in {text!r}.", fix)
    value, rest = split
    if not rest:
        raise InputError(f"{text!r} has no unit.", fix)
    unit_text, notes = _unit_word(rest)
    unit = _read_unit(unit_text)
    if unit is None:
        raise InputError(f"pint does not know the unit {rest!r} in {text!r}.", fix)
    if not math.isfinite(value):
        raise InputError(f"{text!r} is not a finite number.", fix)
    return ParsedQuantity(text=text, value=value, unit=str(unit), notes=notes,
                          significant=_significant_digits(text))


def _significant_digits(text: str) -> int:
    """The significant digits of the number written in ``text`` ("2000" 4, "0.30" 2, "1.5e3" 2; words 1)."""
    match = _NUMBER.match(text)
    if not match:
        return 1
    mantissa = re.split(r"[eE]", match.group(1))[0].lstrip("+-−").replace(",", "").replace("_", "")
    return max(len(mantissa.replace(".", "").lstrip("0")), 1)


def delta_unit(unit: str) -> str:
    """The unit in which a difference of ``unit`` quantities is measured: pint's delta unit for an offset
    unit ("degree_Celsius" -> "delta_degree_Celsius": a 35 K gap is 63 delta_degF, not 95 degF), else the unit."""
    ureg = registry()
    try:
        return str(ureg.Unit(f"delta_{unit}"))
    except Exception:  # noqa: BLE001 - not an offset unit: it has no delta unit
        return unit


def distances(anchor: ParsedQuantity, quantities: list[ParsedQuantity]) -> list[float]:
    """|q - anchor| of each quantity, in the anchor's (delta) unit, with physically equal distances equal.

    Conversion leaves float noise; distances closer than ``DISTANCE_TIE_RTOL`` times the largest magnitude of
    the inputs (in the anchor's unit, and in pint's root unit for offset units, where 0 degC is 273.15 K) are
    one distance: each run of them takes its smallest member's value, and one within that tolerance of 0 is 0.
    """
    ureg = registry()
    raw = [abs(q.to(anchor.unit) - anchor.value) for q in quantities]
    magnitudes = [abs(q.to(anchor.unit)) for q in (anchor, *quantities)]
    root = anchor.quantity.to_root_units()
    per_root = ureg.Quantity(1, delta_unit(str(root.units))).to(delta_unit(anchor.unit)).magnitude
    magnitudes += [abs(q.quantity.to_root_units().magnitude) * per_root for q in (anchor, *quantities)]
    tolerance = DISTANCE_TIE_RTOL * max(magnitudes)
    out = list(raw)
    run_value, previous = 0.0, 0.0  # a run starts at 0: a distance within the tolerance of 0 is 0
    for k in sorted(range(len(raw)), key=raw.__getitem__):
        if raw[k] - previous > tolerance:
            run_value = raw[k]
        out[k] = run_value
        previous = raw[k]
    return out


def format_gap(value: float, unit: str, significant: int) -> str:
    """``value`` ``unit`` with ``significant`` digits (at least 3): plain digits between 1e-4 and 1e15, else
    scientific ("1998 m", "0.3 m", "9.46e+25 Å"); pint's short unit symbol."""
    q = registry().Quantity(float(f"{value:.{max(3, min(significant, 15))}g}"), unit)
    magnitude = q.magnitude
    text = (format_number(magnitude) if magnitude == 0 or 1e-4 <= abs(magnitude) < 1e15
            else f"{magnitude:.{max(3, min(significant, 15)) - 1}e}")
    return f"{text} {q.units:~P}"


def convert(value: float, unit_from: str, unit_to: str) -> float:
    """``value`` in ``unit_from`` expressed in ``unit_to`` (unit words as in ``parse_quantity``: "ton" is the
    metric tonne)."""
    ureg = registry()
    source, target = _unit_word(unit_from)[0], _unit_word(unit_to)[0]
    return float(ureg.Quantity(value, source).to(target).magnitude)


def plural_unit(value: float, unit: str) -> str:
    """An English unit word for ``value``: singular iff |value| == 1 exactly (PROTOCOL.md 1.2)."""
    return unit if abs(value) == 1 else unit + "s"


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
    try:
        parsed = parse_quantity(text)
    except InputError:
        return text
    unit = CANONICAL_UNITS.get(parsed.dimensionality)
    if unit is None:
        return text
    value = parsed.to(unit)
    return f"{format_number(value)} {plural_unit(float(format_number(value)), unit)}"
