"""Protocols as data: a TOML file says what to ask a model (quantities, value ranges, number rendering,
templates, languages), and this module turns it into the cells the exams score.

A protocol file (read with the standard ``tomllib``) has these tables; every key is checked, and a bad file
gives one line naming the file, the key and the fix:

``[protocol]``      ``name``, ``version``, ``description``, ``measures``, ``exams`` (which exams it supports:
                    1, 2, 3, "conversion"; only the paper's protocol has the rules of 2, 3 and conversion).
``[languages.XX]``  per language: ``template`` ("{number} {unit}", or "{number}{unit}" for Japanese and
                    Chinese), ``plural`` ("one": singular exactly when |v| = 1; "below-two": singular when
                    |v| < 2, French; "none": one form), ``decimal`` ("." or ",").
``[[quantities]]``  ``name``; ``unit`` (the pint unit, checked with pint; default: the name); ``forms.XX`` =
                    [singular, plural] per language.
``[[ranges]]``      ``name`` and one generator: ``values = [...]``, ``step = {start, stop, step}`` (numpy
                    arange, stop excluded), ``linspace = {start, stop, num}`` or ``logspace = {start, stop,
                    num}`` (exponents); then optionally ``round = k``, ``unique = true``, ``integer = true``;
                    ``format`` ("g", "plain", "fixed:N", "scientific", "scientific:N", "thousands", "words");
                    ``plural`` (a rule for every language, e.g. "never": the unit always singular; or a table
                    of rules by language, ``plural = { en = "never" }``, the others following their own);
                    ``quantities = [...]`` (the quantities the range is asked of, each in its own unit's
                    range; default: every one). At least three values.
``[digits_words]``  ``digits = [...]``, ``words.XX = [...]`` (same length), ``words_for.XX.QUANTITY`` (a
                    quantity whose words differ, e.g. German "eine Sekunde"), ``plural`` (a rule, or
                    "language": each language's own).
``[[variants]]``    the ways the same values are asked, each scored on its own: ``label``, ``kind``
                    ("language", "template", "format"), ``language``, ``template`` or ``templates.QUANTITY``,
                    ``format``; ``reference = true`` on the one the others are aligned with ("does '5 미터'
                    sit where '5 meters' sits?").
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .rendering import Language, format_value, unit_form  # noqa: F401 (Language: a protocol's part)

BUILTIN_DIR = Path(__file__).parent / "builtin"


@lru_cache(maxsize=1)
def paper_sha256() -> str:
    """The content hash of the built-in paper.toml (a protocol is the paper's when its content is this)."""
    return hashlib.sha256((BUILTIN_DIR / "paper.toml").read_bytes()).hexdigest()



class ProtocolError(InputError):
    """A protocol file that cannot be used: the message names the file and the key."""


@dataclass(frozen=True)
class Quantity:
    name: str
    unit: str  # the pint unit it measures in
    forms: dict[str, tuple[str, str]]  # language -> (singular, plural)


@dataclass(frozen=True)
class Range:
    name: str
    values: tuple[float, ...]
    number_format: str = "g"
    plural: str | None = None  # "never": the unit is always singular
    plural_by_language: dict[str, str] = field(default_factory=dict)  # a rule for some languages only
    quantities: tuple[str, ...] = ()  # the quantities asked over this range; () = every one

    def plural_rule(self, language: Language) -> str:
        return self.plural_by_language.get(language.code) or self.plural or language.plural

    def applies_to(self, quantity: str) -> bool:
        return not self.quantities or quantity in self.quantities


@dataclass(frozen=True)
class Variant:
    label: str | None  # None: the protocol has one way of asking (the paper)
    kind: str = ""
    language: str = "en"
    templates: dict[str, str] = field(default_factory=dict)  # quantity -> template; "" -> every quantity
    number_format: str | None = None
    reference: bool = False

    def template(self, quantity: str, language: Language) -> str:
        return self.templates.get(quantity) or self.templates.get("") or language.template


@dataclass(frozen=True)
class ProtocolCell:
    """One (quantity, range, variant): the values and the exact strings embedded for them (one encode call)."""
    quantity: str
    range_name: str
    values: np.ndarray
    texts: list[str]
    variant: str | None = None

    @property
    def key(self) -> str:
        """"meter/local_0_10", or "meter/local_0_10/ko" in a protocol with variants."""
        base = f"{self.quantity}/{self.range_name}"
        return base if self.variant is None else f"{base}/{self.variant}"


@dataclass(frozen=True)
class Protocol:
    name: str
    version: str
    description: str
    measures: str
    exams: tuple[int | str, ...]
    languages: dict[str, Language]
    quantities: tuple[Quantity, ...]
    ranges: tuple[Range, ...]
    variants: tuple[Variant, ...]
    digits: tuple[str, ...] = ()
    words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    words_for: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    digits_words_plural: str = "never"
    source: str = ""  # the file it was read from
    content_sha256: str = ""

    @property
    def is_paper(self) -> bool:
        """The paper's own protocol: named paper *and* the built-in paper.toml's content (an edited copy that
        keeps the name is another protocol, with its own key)."""

        return self.name == "paper" and self.content_sha256 == paper_sha256()

    @property
    def key(self) -> str:
        """What a result key records: the paper's version alone (so paper results keep their keys), else the
        name, version and the file's content hash."""
        return self.version if self.is_paper else f"{self.name}-{self.version}-{self.content_sha256[:12]}"

    def range(self, name: str) -> Range:
        return next(r for r in self.ranges if r.name == name)

    def quantity(self, name: str) -> Quantity:
        return next(q for q in self.quantities if q.name == name)

    def render(self, value: float, quantity: str, range_name: str, variant: Variant) -> str:
        """The text of one value: the number in its format, the unit in its form, in the template."""
        language = self.languages[variant.language]
        rng = self.range(range_name)
        number = format_value(value, variant.number_format or rng.number_format, language)
        rule = rng.plural_rule(language)
        unit = unit_form(self.quantity(quantity).forms[variant.language], value, rule)
        return variant.template(quantity, language).replace("{number}", number).replace("{unit}", unit)

    def cells(self) -> list[ProtocolCell]:
        """Every cell, quantity-major, then range, then variant (the paper's order when there are none)."""
        out = []
        for q in self.quantities:
            for r in (r for r in self.ranges if r.applies_to(q.name)):
                for v in self.variants:
                    values = np.asarray(r.values, dtype=np.float64)
                    values.setflags(write=False)
                    out.append(ProtocolCell(q.name, r.name, values, [self.render(float(x), q.name, r.name, v)
                                                                     for x in values], v.label))
        return out

    def digits_words_texts(self, quantity: str, variant: Variant) -> tuple[list[str], list[str]]:
        """(digit texts, word texts) of one quantity in a variant's language."""
        language = self.languages[variant.language]
        words = self.words_for.get(variant.language, {}).get(quantity) or self.words.get(variant.language)
        if not self.digits or not words:
            return [], []
        forms = self.quantity(quantity).forms[variant.language]
        template = variant.template(quantity, language)
        digit_texts, word_texts = [], []
        rule = language.plural if self.digits_words_plural == "language" else self.digits_words_plural
        for digit, word in zip(self.digits, words):
            unit = unit_form(forms, float(digit), rule)
            digit_texts.append(template.replace("{number}", digit).replace("{unit}", unit))
            word_texts.append(template.replace("{number}", word).replace("{unit}", unit))
        return digit_texts, word_texts

    def reference_variant(self) -> Variant | None:
        return next((v for v in self.variants if v.reference), None)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "description": self.description,
                "measures": self.measures, "exams": list(self.exams), "source": self.source,
                "content_sha256": self.content_sha256, "variants": [v.label for v in self.variants]}
