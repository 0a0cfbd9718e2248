"""The quantity layer: pint reads the units, we read the numbers (digits and words), the paper's ton, the
canonical form used by --normalize-quantities."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fasteval.core.errors import InputError
from fasteval.core.quantities import (
    TON_NOTE, canonical_text, convert, format_number, parse_number_words, parse_quantity, registry,
)


@pytest.mark.parametrize("text, value, unit, in_base", [
    ("2 kilometers", 2.0, "kilometer", ("meter", 2000.0)),
    ("5000 g", 5000.0, "gram", ("kilogram", 5.0)),
    ("0.005 tonnes", 0.005, "metric_ton", ("kilogram", 5.0)),
    ("3.5 h", 3.5, "hour", ("second", 12600.0)),
    ("five meters", 5.0, "meter", ("meter", 5.0)),
    ("one-hundred kilogram", 100.0, "kilogram", ("gram", 100_000.0)),
    ("-100 meters", -100.0, "meter", ("centimeter", -10_000.0)),
    ("3e-06 meter", 3e-06, "meter", ("micrometer", 3.0)),
    ("1,000 meters", 1000.0, "meter", ("kilometer", 1.0)),
    ("2 gallons", 2.0, "gallon", ("liter", 2 * 3.785411784)),
])
def test_parse_reads_numbers_and_pint_units(text, value, unit, in_base):
    q = parse_quantity(text)
    assert (q.value, q.unit) == (value, unit)
    assert q.to(in_base[0]) == pytest.approx(in_base[1], rel=1e-12)


def test_ton_is_the_papers_metric_tonne_and_says_so():
    q = parse_quantity("3 tons")
    assert q.to("kilogram") == 3000.0 and TON_NOTE in q.notes
    assert convert(1.0, "kilogram", "ton") == 0.001
    short = parse_quantity("3 short_ton")
    assert short.to("kilogram") == pytest.approx(3 * 907.18474) and not short.notes


def test_dimensions_come_from_pint():
    assert parse_quantity("2 km").dimensionality == parse_quantity("7 inches").dimensionality == "[length]"
    assert parse_quantity("2 liters").dimensionality == "[length] ** 3"
    assert parse_quantity("2 kilograms").dimensionality != parse_quantity("2 seconds").dimensionality


@pytest.mark.parametrize("words, value", [
    ("zero", 0), ("ten", 10), ("one-hundred", 100), ("twenty one", 21), ("two thousand and five", 2005),
    ("a hundred", 100), ("minus three", -3), ("three hundred forty-two", 342), ("one million two", 1_000_002),
])
def test_number_words(words, value):
    assert parse_number_words(words) == value


@pytest.mark.parametrize("words", ["", "meter", "five apples", "hundred", "and"])
def test_not_number_words(words):
    assert parse_number_words(words) is None


@pytest.mark.parametrize("text, fragment", [
    ("meters", "Cannot read a number"), ("5", "has no unit"), ("five", "has no unit"),
    ("3 blorps", "does not know the unit"), ("abc kg", "Cannot read a number"),
])
def test_unreadable_quantities_name_the_text(text, fragment):
    with pytest.raises(InputError, match=fragment) as info:
        parse_quantity(text)
    assert repr(text) in str(info.value) and "Fix:" in str(info.value)


@pytest.mark.parametrize("text, canonical", [
    ("2 kilometers", "2000 meters"), ("five meter", "5 meters"), ("1 meter", "1 meter"),
    ("1e-06 meter", "0.000001 meters"), ("3e+05 meter", "300000 meters"), ("100 centimeters", "1 meter"),
    ("5000 g", "5 kilograms"), ("3 tons", "3000 kilograms"), ("500 milliliters", "0.5 liters"),
    ("2 minutes", "120 seconds"), ("-100 meters", "-100 meters"), ("0 meters", "0 meters"),
    ("-166.76025", "-166.76025"), ("The parcel weighs 5 kg.", "The parcel weighs 5 kg."),
    ("37 kelvin", "37 kelvin"),  # a dimension outside the paper's four stays as written
])
def test_canonical_text(text, canonical):
    assert canonical_text(text) == canonical


@given(st.floats(min_value=-1e15, max_value=1e15, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-12))
def test_format_number_is_plain_and_exact_to_12_digits(value):
    text = format_number(value)
    assert "e" not in text.lower() and not text.endswith(".") and text != "-0"
    assert float(text) == float(f"{value:.12g}")


def test_convert_is_pints():
    ureg = registry()
    for a, b in (("liter", "gallon"), ("hour", "minute"), ("gram", "milligram"), ("meter", "kilometer")):
        expected = ureg.Quantity(7.25, a).to(b).magnitude
        assert convert(7.25, a, b) == expected
    assert math.isclose(convert(3.785411784, "liter", "gallon"), 1.0)
