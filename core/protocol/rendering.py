"""Numbers and unit words as a protocol renders them: formats (``g``, ``plain``, ``fixed:N``, ``scientific[:N]``,
``thousands``, ``words``), a language's decimal mark, English number words, and the plural rules."""
from __future__ import annotations

from dataclasses import dataclass

PLURAL_RULES = ("one", "below-two", "none", "never")
NUMBER_FORMATS = ("g", "plain", "fixed", "scientific", "thousands", "words")


@dataclass(frozen=True)
class Language:
    """How a protocol's language renders a quantity: its template, plural rule and decimal mark."""
    code: str
    template: str = "{number} {unit}"
    plural: str = "one"
    decimal: str = "."

_EN_SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
             "sixteen seventeen eighteen nineteen").split()
_EN_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def english_words(value: float) -> str:
    """English number words: 1334 -> "one thousand three hundred thirty-four", -90 -> "minus ninety",
    7.5 -> "seven point five" (the decimals as written by ``{:g}``)."""
    if value < 0:
        return "minus " + english_words(-value)
    text = f"{value:g}"
    if "e" in text:
        raise ValueError(f"{value!r} has no plain decimal form for words")
    whole, _, decimals = text.partition(".")
    out = _english_integer(int(whole))
    if decimals:
        out += " point " + " ".join(_EN_SMALL[int(d)] for d in decimals)
    return out


def _english_integer(n: int) -> str:
    if n < 20:
        return _EN_SMALL[n]
    if n < 100:
        return _EN_TENS[n // 10] + ("" if n % 10 == 0 else "-" + _EN_SMALL[n % 10])
    for size, word in ((1_000_000_000, "billion"), (1_000_000, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            head, rest = divmod(n, size)
            return _english_integer(head) + " " + word + ("" if rest == 0 else " " + _english_integer(rest))
    raise AssertionError(n)  # pragma: no cover


def format_value(value: float, number_format: str, language: Language) -> str:
    """A number in one of NUMBER_FORMATS ("g" is Python's {:g}, the paper's), with the language's decimal mark."""
    name, _, arg = number_format.partition(":")
    if name == "g":
        text = f"{value:g}"
    elif name == "plain":
        from ..quantities import format_number

        text = format_number(value)
    elif name == "fixed":
        text = f"{value:.{int(arg)}f}"
    elif name == "scientific":
        if arg:
            return f"{value:.{int(arg)}e}"  # exponent notation is the same in every language here
        mantissa, _, exponent = f"{value:.6e}".partition("e")
        return (mantissa.rstrip("0").rstrip(".") or "0") + "e" + exponent
    elif name == "thousands":
        from decimal import Decimal

        text = format(Decimal(repr(float(f"{value:.12g}"))), ",f")
        text = text.rstrip("0").rstrip(".") if "." in text else text
        if language.decimal == ",":
            return text.replace(",", " ").replace(".", ",")  # 1 000,5 (a thin space would be typeset)
        return text
    elif name == "words":
        if language.code != "en":
            raise ValueError("number words are written for English only")
        return english_words(value)
    else:  # validated on load
        raise ValueError(number_format)
    return text.replace(".", ",") if language.decimal == "," else text


def unit_form(forms: tuple[str, str], value: float, rule: str) -> str:
    """The unit's singular or plural form for ``value`` under a plural rule."""
    singular, plural = forms
    if rule == "never" or rule == "none":
        return singular
    if rule == "one":
        return singular if abs(value) == 1 else plural
    if rule == "below-two":
        return singular if abs(value) < 2 else plural
    raise ValueError(rule)  # validated on load


